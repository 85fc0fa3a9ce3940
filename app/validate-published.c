/* validate-published.c - `simpar validate --published SET`: every case of a published table of
 * whole training steps (topologies/published.ini, each figure with its source) predicted as a
 * user would predict it, against the published time.
 *
 *   published.ini [korthikanti 175B full]: dgx-a100 x 8 nodes, args, measured_s 18.13
 *     -> a platform of 8 DGX A100 nodes (simpar topology; a rack-scale preset's racks of
 *        rack_gpus GPUs where the case gives it), in a private folder
 *     -> simpar --topology it --json --jobs 1 --backend B ARGS   (a process of its own)
 *     -> step_time_s, against 18.13: error = predicted / measured - 1
 *
 * A table that publishes throughput instead (tokens per second per GPU: tokens_per_gpu_s, with the
 * global batch and sequence length it ran, global_batch and seq) is held as the step time that
 * throughput means on the case's GPUs, B s / (tokens_per_gpu_s x GPUs), once the prediction
 * shows that its args ran that batch and sequence.
 *
 * No figure of simpar is fitted to these tables; they show how far its predictions are from
 * what was measured. */
#include "cli.h"
#include "predict-config.h"
#include "topology.h"
#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

typedef struct {
    char *name, *description, *args, *split;
    double measured_s, predicted_s;
    guint gpus;
    double tokens_per_gpu_s;         /* > 0: the published figure is a throughput */
    double memory_gib, capacity_gib; /* predicted memory per GPU (the most loaded), capacity */
    gint64 global_batch, seq;
} PublishedCase;

static void
published_case_clear(gpointer p)
{
    PublishedCase *c = p;
    g_free(c->name), g_free(c->description), g_free(c->args), g_free(c->split);
}

/* The sets the data file holds, "a, b" (transfer full). */
static char *
published_sets(GKeyFile *kf)
{
    g_auto(GStrv) groups = g_key_file_get_groups(kf, NULL);
    g_autoptr(GPtrArray) sets = g_ptr_array_new_with_free_func(g_free);
    for (guint i = 0; groups[i] != NULL; i++) {
        g_autofree char *set = g_key_file_get_string(kf, groups[i], "set", NULL);
        if (set != NULL && !g_ptr_array_find_with_equal_func(sets, set, g_str_equal, NULL))
            g_ptr_array_add(sets, g_steal_pointer(&set));
    }
    g_ptr_array_add(sets, NULL);
    return g_strjoinv(", ", (char **) sets->pdata);
}

/* Whether `o` has member `key` of a number (or, with `text`, a string) value. */
static gboolean
published_has(JsonObject *o, const char *key, gboolean text)
{
    JsonNode *n = o != NULL ? json_object_get_member(o, key) : NULL;
    return n != NULL && JSON_NODE_HOLDS_VALUE(n) &&
           (text ? json_node_get_value_type(n) == G_TYPE_STRING
                 : json_node_get_value_type(n) == G_TYPE_DOUBLE ||
                       json_node_get_value_type(n) == G_TYPE_INT64);
}

/* `key`'s object member of `o`, or NULL. */
static JsonObject *
published_object(JsonObject *o, const char *key)
{
    JsonNode *n = o != NULL ? json_object_get_member(o, key) : NULL;
    return n != NULL && JSON_NODE_HOLDS_OBJECT(n) ? json_node_get_object(n) : NULL;
}

JsonObject *
simpar_published_row(JsonParser *parser, const char *name, const char *out, const char *err,
                     GError **error)
{
    JsonNode *root = NULL;
    JsonObject *row = NULL;
    if (out != NULL && json_parser_load_from_data(parser, out, -1, NULL))
        root = json_parser_get_root(parser);
    if (root != NULL && JSON_NODE_HOLDS_ARRAY(root) &&
        json_array_get_length(json_node_get_array(root)) > 0) {
        JsonNode *first = json_array_get_element(json_node_get_array(root), 0);
        row = JSON_NODE_HOLDS_OBJECT(first) ? json_node_get_object(first) : NULL;
    }
    gboolean ok = published_has(row, "step_time_s", FALSE) &&
                  json_object_get_double_member(row, "step_time_s") > 0 &&
                  published_has(row, "split", TRUE) && published_has(row, "gpus", FALSE) &&
                  published_has(row, "memory_per_gpu_gib", FALSE) &&
                  published_has(published_object(row, "memory"), "capacity_gib", FALSE) &&
                  published_has(published_object(row, "config"), "global_batch", FALSE) &&
                  published_has(published_object(row, "model_dims"), "seq", FALSE);
    if (!ok) {
        g_autofree char *said = g_strstrip(g_strdup(err != NULL ? err : ""));
        g_set_error(error, SIMPAR_CLI_ERROR, SIMPAR_CLI_ERROR_USAGE,
                    "--published: case \"%s\" gave no prediction (its run printed no row of "
                    "simpar --json with a step time)%s%s",
                    name, *said != '\0' ? ": " : "", said);
        return NULL;
    }
    return row;
}

/* simpar's prediction of one case on `xml`: its step and split. */
static gboolean
published_predict(PublishedCase *c, const char *xml, const char *backend, GError **error)
{
    g_autofree char *exe = g_file_read_link("/proc/self/exe", NULL);
    g_auto(GStrv) args = NULL;
    g_assert(g_shell_parse_argv(c->args, NULL, &args, NULL)); /* our own data file's words */
    g_autoptr(GPtrArray) argv = g_ptr_array_new();
    const char *head[] = {exe, "--topology", xml, "--json", "--jobs", "1", "--backend", backend};
    for (guint i = 0; i < G_N_ELEMENTS(head); i++)
        g_ptr_array_add(argv, (gpointer) head[i]);
    for (guint i = 0; args[i] != NULL; i++)
        g_ptr_array_add(argv, args[i]);
    g_ptr_array_add(argv, NULL);
    g_autofree char *out = NULL, *err = NULL;
    int wait = 0;
    if (exe == NULL || !g_spawn_sync(NULL, (char **) argv->pdata, NULL, G_SPAWN_DEFAULT, NULL, NULL,
                                     &out, &err, &wait, error))
        return exe != NULL || simpar_cli_usage(error, "--published: cannot find simpar itself");
    g_autoptr(JsonParser) parser = json_parser_new();
    if (!g_spawn_check_wait_status(wait, NULL)) {
        g_set_error(error, SIMPAR_CLI_ERROR, SIMPAR_CLI_ERROR_USAGE,
                    "--published: case \"%s\" (simpar %s) failed: %s", c->name, c->args,
                    g_strstrip(err));
        return FALSE;
    }
    JsonObject *row = simpar_published_row(parser, c->name, out, err, error);
    if (row == NULL)
        return FALSE;
    c->predicted_s = json_object_get_double_member(row, "step_time_s");
    c->split = g_strdup(json_object_get_string_member(row, "split"));
    c->gpus = (guint) json_object_get_int_member(row, "gpus");
    c->memory_gib = json_object_get_double_member(row, "memory_per_gpu_gib");
    c->capacity_gib =
        json_object_get_double_member(json_object_get_object_member(row, "memory"), "capacity_gib");
    if (c->tokens_per_gpu_s > 0) {
        gint64 batch = json_object_get_int_member(json_object_get_object_member(row, "config"),
                                                  "global_batch");
        gint64 seq =
            json_object_get_int_member(json_object_get_object_member(row, "model_dims"), "seq");
        /* our own data file: its args must run what was published */
        g_assert(batch == c->global_batch && seq == c->seq);
        c->measured_s = (double) batch * (double) seq / (c->tokens_per_gpu_s * c->gpus);
    }
    return TRUE;
}

/* The cases of `set`, predicted, each on a platform written into `dir`. */
static gboolean
published_run(GKeyFile *kf, const char *set, const char *backend, const char *dir, GArray *cases,
              char **source, GError **error)
{
    g_auto(GStrv) groups = g_key_file_get_groups(kf, NULL);
    for (guint i = 0; groups[i] != NULL; i++) {
        g_autofree char *s = g_key_file_get_string(kf, groups[i], "set", NULL);
        if (g_strcmp0(s, set) != 0)
            continue;
        g_autofree char *preset_name = g_key_file_get_string(kf, groups[i], "preset", NULL);
        guint nodes = (guint) g_key_file_get_integer(kf, groups[i], "nodes", NULL);
        /* a rack-scale preset's racks of fewer GPUs than the preset's (whole compute trays) */
        guint rack_gpus = (guint) g_key_file_get_integer(kf, groups[i], "rack_gpus", NULL);
        const SimparTopologyPreset *preset = simpar_topology_lookup(preset_name);
        g_assert(preset != NULL && nodes > 0); /* the data file is part of the program */
        g_autofree char *rack_why =
            rack_gpus > 0 ? simpar_topology_rack_gpus_invalid(preset, rack_gpus) : NULL;
        g_assert(rack_why == NULL);
        if (*source == NULL)
            *source = g_key_file_get_string(kf, groups[i], "source", NULL);
        PublishedCase c = {
            .name = g_strdup(groups[i]),
            .description = g_key_file_get_string(kf, groups[i], "description", NULL),
            .args = g_key_file_get_string(kf, groups[i], "args", NULL),
            .measured_s = g_key_file_get_double(kf, groups[i], "measured_s", NULL),
            .tokens_per_gpu_s = g_key_file_get_double(kf, groups[i], "tokens_per_gpu_s", NULL),
            .global_batch = g_key_file_get_int64(kf, groups[i], "global_batch", NULL),
            .seq = g_key_file_get_int64(kf, groups[i], "seq", NULL)};
        g_assert(c.measured_s > 0 || (c.tokens_per_gpu_s > 0 && c.global_batch > 0 && c.seq > 0));
        g_array_append_val(cases, c);
        g_autofree char *name = g_strdup_printf("%s-%u-%u.xml", preset_name, nodes, rack_gpus);
        g_autofree char *xml = g_build_filename(dir, name, NULL);
        if (!g_file_test(xml, G_FILE_TEST_EXISTS)) {
            g_autofree char *text = rack_gpus > 0
                                        ? simpar_topology_generate_racks(preset, nodes, rack_gpus)
                                        : simpar_topology_generate(preset, nodes);
            if (!g_file_set_contents(xml, text, -1, error))
                return FALSE;
        }
        if (!published_predict(&g_array_index(cases, PublishedCase, cases->len - 1), xml, backend,
                               error))
            return FALSE;
    }
    return TRUE;
}

static void
published_text(GString *out, const char *set, const char *source, const char *backend,
               const GArray *cases)
{
    g_string_append_printf(out, "simpar against %s (backend %s)\nsource: %s\n\n", set, backend,
                           source);
    /* a table of throughputs also shows them: tokens/s/GPU published and predicted */
    gboolean tokens = FALSE;
    int width = 28; /* the case column: the longest name's */
    for (guint i = 0; i < cases->len; i++) {
        const PublishedCase *c = &g_array_index(cases, PublishedCase, i);
        tokens = tokens || c->tokens_per_gpu_s > 0;
        width = MAX(width, (int) strlen(c->name));
    }
    g_string_append_printf(out, "%-*s %5s %10s %11s %8s  %s%-22s  %s\n", width, "case", "GPUs",
                           "measured s", "predicted s", "error",
                           tokens ? "tokens/s/GPU (published, predicted)  " : "", "memory GiB of",
                           "split");
    double sum = 0, worst = 0;
    guint over = 0; /* cases that ran as published but do not fit as simpar counts memory */
    for (guint i = 0; i < cases->len; i++) {
        const PublishedCase *c = &g_array_index(cases, PublishedCase, i);
        double e = c->predicted_s / c->measured_s - 1;
        sum += fabs(e), worst = MAX(worst, fabs(e));
        /* the predicted throughput: the published one times measured over predicted time */
        g_autofree char *pair =
            c->tokens_per_gpu_s > 0
                ? g_strdup_printf("%.0f, %.0f", c->tokens_per_gpu_s,
                                  c->tokens_per_gpu_s * c->measured_s / c->predicted_s)
                : g_strdup("-");
        g_autofree char *rate = tokens ? g_strdup_printf("%-37s", pair) : g_strdup("");
        gboolean fits = c->memory_gib <= c->capacity_gib;
        over += !fits;
        g_autofree char *mem = g_strdup_printf("%.1f of %.1f%s", c->memory_gib, c->capacity_gib,
                                               fits ? "" : " (over)");
        g_string_append_printf(out, "%-*s %5u %10.2f %11.2f %+7.1f%%  %s%-22s  %s\n", width,
                               c->name, c->gpus, c->measured_s, c->predicted_s, 100 * e, rate, mem,
                               c->split);
    }
    g_string_append_printf(out,
                           "\nmean absolute error %.1f%%, largest %.1f%% (error = predicted / "
                           "measured - 1; negative: simpar is optimistic)\n",
                           100 * sum / cases->len, 100 * worst);
    /* every case ran as published: a case over capacity is simpar's memory model's miss */
    g_string_append_printf(out,
                           "memory: %u of %u cases over the GPU's capacity as simpar counts it "
                           "(each ran as published)\n",
                           over, cases->len);
}

static void
published_json(GString *out, const char *set, const char *source, const char *backend,
               const GArray *cases)
{
    g_autoptr(JsonBuilder) b = json_builder_new();
    json_builder_begin_object(b);
    simpar_json_head(b, "simpar-published-validation", 1);
    const char *head[][2] = {{"set", set}, {"source", source}, {"backend", backend}};
    for (guint i = 0; i < G_N_ELEMENTS(head); i++) {
        json_builder_set_member_name(b, head[i][0]);
        json_builder_add_string_value(b, head[i][1]);
    }
    json_builder_set_member_name(b, "cases");
    json_builder_begin_array(b);
    for (guint i = 0; i < cases->len; i++) {
        const PublishedCase *c = &g_array_index(cases, PublishedCase, i);
        json_builder_begin_object(b);
        const char *strs[][2] = {{"case", c->name},
                                 {"description", c->description},
                                 {"args", c->args},
                                 {"split", c->split}};
        for (guint k = 0; k < G_N_ELEMENTS(strs); k++) {
            json_builder_set_member_name(b, strs[k][0]);
            json_builder_add_string_value(b, strs[k][1]);
        }
        json_builder_set_member_name(b, "gpus");
        json_builder_add_int_value(b, c->gpus);
        if (c->tokens_per_gpu_s > 0) {
            json_builder_set_member_name(b, "tokens_per_gpu_s");
            json_builder_add_double_value(b, c->tokens_per_gpu_s);
        }

        const struct {
            const char *key;
            double v;
        } nums[] = {{"measured_s", c->measured_s},
                    {"predicted_s", c->predicted_s},
                    {"error", c->predicted_s / c->measured_s - 1},
                    {"memory_per_gpu_gib", c->memory_gib},
                    {"capacity_gib", c->capacity_gib}};

        for (guint k = 0; k < G_N_ELEMENTS(nums); k++) {
            json_builder_set_member_name(b, nums[k].key);
            json_builder_add_double_value(b, nums[k].v);
        }
        json_builder_end_object(b);
    }
    json_builder_end_array(b);
    json_builder_end_object(b);
    g_autofree char *text = simpar_json_builder_text(b, NULL);
    g_string_append_printf(out, "%s\n", text);
}

gboolean
simpar_validate_published(const char *set, const char *backend, gboolean json, GString *out,
                          GError **error)
{
    GKeyFile *kf = simpar_topology_published_data();
    g_autofree char *sets = published_sets(kf);
    g_auto(GStrv) valid = g_strsplit(sets, ", ", -1);
    if (!g_strv_contains((const char *const *) valid, set))
        return simpar_cli_usage(error, "--published %s: unknown (valid: %s)", set, sets);
    const SimparBackend *row; /* the predictor's backends, the child's --backend */
    if (!simpar_predict_backend_lookup(backend, &row, error))
        return FALSE;
    g_autofree char *dir = g_dir_make_tmp("simpar-published-XXXXXX", error);
    if (dir == NULL)
        return FALSE;
    g_autoptr(GArray) cases = g_array_new(FALSE, TRUE, sizeof(PublishedCase));
    g_array_set_clear_func(cases, published_case_clear);
    g_autofree char *source = NULL;
    gboolean ok = published_run(kf, set, backend, dir, cases, &source, error);
    g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
    for (const char *name; d != NULL && (name = g_dir_read_name(d)) != NULL;) {
        g_autofree char *path = g_build_filename(dir, name, NULL);
        g_remove(path);
    }
    g_rmdir(dir);
    if (!ok)
        return FALSE;
    (json ? published_json : published_text)(out, set, source, backend, cases);
    return TRUE;
}
