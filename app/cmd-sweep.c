/* cmd-sweep.c - `simpar sweep`: capacity planning over lists of configurations (sweep.h). */
#include "cli.h"
#include "plot.h"
#include "sweep.h"
#include <malloc.h>
#include <stdio.h>
#include <string.h>

static const char sweep_summary_text[] =
    "Predicts every configuration of the lists given (one CSV row each: step time, throughput,\n"
    "cost, memory; configurations that do not fit are kept with the reason) and ranks them.\n"
    "Evaluation is `simpar predict` of that configuration (default --backend analytic;\n"
    "--backend formula gives the same figures at thousands of configurations per second).\n\n"
    "Lists: comma-separated items N, A..B, A..B:+S (step S) or A..B:*F (factor F). A..B doubles\n"
    "for sizes (--gpus --tp --pp --dp --hidden --layers --seq --micro-batch --global-batch) and\n"
    "steps by 1 for grid sides (--q --depth). Left out, the split axes are enumerated per GPU\n"
    "count G: 1-D T = powers of two dividing G; 2-D/3-D every q >= 2 whose T = q^2 / q^3 divides\n"
    "G; 2.5-D every q >= 2 and d >= 2 with q^2 d dividing G; P = powers of two dividing G / T up\n"
    "to the layers; D = G / (T P). A swept --hidden keeps the base model's head dimension and\n"
    "FFN ratio unless --heads / --ffn are given.\n\n"
    "  simpar sweep --preset dgx-a100 --gpus 64..4096 --model gpt3-175b --global-batch 1536 \\\n"
    "      -o sweep.csv\n"
    "  simpar sweep --merge -o ALL.csv PART0.csv PART1.csv ...      (shards of one sweep)";

static const char *const sweep_plot_kinds[] = {"scaling", "memory", "breakdown"};
#define SWEEP_N_PLOTS         G_N_ELEMENTS(sweep_plot_kinds)
#define SWEEP_HEAP_KEEP_BYTES (64 << 20) /* arrays below this stay in the heap */

/* The file of picture `i` of --plot FILE (FILE.png, FILE-memory.png, FILE-breakdown.png; the
 * name ends in .png or .svg); transfer full. */
static char *
sweep_plot_name(const char *plot, guint i)
{
    const char *dot = strrchr(plot, '.');
    g_assert(dot != NULL);
    return i == 0
               ? g_strdup(plot)
               : g_strdup_printf("%.*s-%s%s", (int) (dot - plot), plot, sweep_plot_kinds[i], dot);
}

/* The pictures of a finished sweep: scaling in FILE, memory and breakdown beside it. */
static gboolean
sweep_plot(const SimparSweepArgs *a, GError **error)
{
    const char *const *kinds = sweep_plot_kinds;
    for (guint i = 0; i < SWEEP_N_PLOTS; i++) {
        g_autofree char *out = sweep_plot_name(a->plot, i);
        g_autoptr(GError) local = NULL;
        if (!simpar_plot_render(kinds[i], a->output, out, NULL, &local)) {
            if (i > 0 && g_error_matches(local, SIMPAR_PLOT_ERROR, SIMPAR_PLOT_ERROR_EMPTY))
                continue; /* e.g. no row has memory figures */
            g_propagate_prefixed_error(error, g_steal_pointer(&local), "--plot %s: ", out);
            return FALSE;
        }
    }
    return TRUE;
}

/* --summary is checked before the sweep runs: a folder that exists, a whole sweep. */
static gboolean
sweep_check_summary(const SimparSweepArgs *a, GError **error)
{
    if (a->summary == NULL)
        return TRUE;
    if (a->shard != NULL)
        return simpar_cli_usage(error,
                                "--summary '%s': a shard holds part of a sweep; give --summary "
                                "to --merge",
                                a->summary);
    return simpar_output_check("--summary", a->summary, "a JSON file", error);
}

/* --plot is checked before the sweep runs; a shard is not a whole sweep to plot. */
static gboolean
sweep_check_plot(const SimparSweepArgs *a, GError **error)
{
    if (a->plot == NULL)
        return TRUE;
    if (a->shard != NULL) {
        g_set_error(error, SIMPAR_CLI_ERROR, SIMPAR_CLI_ERROR_USAGE,
                    "--plot %s: a shard holds part of a sweep; plot the merged CSV (simpar sweep "
                    "--merge ... --plot FILE, or simpar plot)",
                    a->plot);
        return FALSE;
    }
    if (!simpar_output_check("--plot", a->plot, "an image (.png or .svg)", error) ||
        !simpar_plot_check_output(a->plot, error))
        return FALSE;
    for (guint i = 1; i < SWEEP_N_PLOTS; i++) { /* the names derived from it, as checked */
        g_autofree char *out = sweep_plot_name(a->plot, i);
        if (!simpar_output_check("--plot", out, "an image (.png or .svg)", error))
            return FALSE;
    }
    return TRUE;
}

/* No output (-o, --summary, the --plot pictures) is another output or an input. */
static gboolean
sweep_check_distinct(const SimparSweepArgs *a, char **parts, GError **error)
{
    g_autoptr(GArray) names = g_array_new(FALSE, FALSE, sizeof(SimparOutputName));
    g_autoptr(GPtrArray) plots = g_ptr_array_new_with_free_func(g_free);
    const SimparOutputName fixed[] = {
        {"-o", a->output, TRUE},
        {"--summary", a->summary, TRUE},
        {"--topology", a->topology, FALSE},
        {"--calibration", a->predict.calibration, FALSE},
        {"--spec", a->spec, FALSE},
    };
    g_array_append_vals(names, fixed, G_N_ELEMENTS(fixed));
    for (guint i = 0; a->plot != NULL && i < SWEEP_N_PLOTS; i++) {
        g_ptr_array_add(plots, sweep_plot_name(a->plot, i));
        SimparOutputName plot = {"--plot", plots->pdata[i], TRUE};
        g_array_append_val(names, plot);
    }
    for (guint i = 0; parts != NULL && parts[i] != NULL; i++) {
        SimparOutputName shard = {"--merge", parts[i], FALSE};
        g_array_append_val(names, shard);
    }
    /* the model files of --model (sweep --model m.json -o m.json wrote the CSV over the model)
     * and the journal, which is written too */
    const char *models = a->names[SIMPAR_SWEEP_MODELS];
    g_auto(GStrv) items = models != NULL ? g_strsplit(models, ",", -1) : NULL;
    for (guint i = 0; items != NULL && items[i] != NULL; i++)
        if (g_str_has_suffix(g_strstrip(items[i]), ".json")) {
            SimparOutputName model = {"--model", items[i], FALSE};
            g_array_append_val(names, model);
        }
    g_autofree char *journal = a->output != NULL ? g_strconcat(a->output, ".part", NULL) : NULL;
    SimparOutputName part = {"the journal", journal, TRUE};
    g_array_append_val(names, part);
    return simpar_output_distinct((const SimparOutputName *) names->data, names->len, error);
}

/* A value ending in a lone backslash is refused before GLib unescapes it: GLib 2.74 sets its
 * error twice (a warning on stderr) when another bad escape comes first. */
static gboolean
sweep_spec_escapes(GKeyFile *kf, const char *key, GError **error)
{
    g_autofree char *raw = g_key_file_get_value(kf, "sweep", key, NULL);
    gsize len = raw != NULL ? strlen(raw) : 0, n = 0;
    while (n < len && raw[len - 1 - n] == '\\')
        n++;
    if (n % 2 == 0)
        return TRUE;
    g_set_error(error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                "%s: the value ends with a lone backslash", key);
    return FALSE;
}

/* Whether the command line left option `e` unset (the spec file then gives it). */
static gboolean
sweep_spec_unset(const GOptionEntry *e)
{
    switch (e->arg) {
    case G_OPTION_ARG_STRING:
    case G_OPTION_ARG_FILENAME:
        return *(char **) e->arg_data == NULL;
    case G_OPTION_ARG_INT64:
        return *(gint64 *) e->arg_data == SIMPAR_JOB_UNSET;
    default:
        return !*(gboolean *) e->arg_data;
    }
}

/* An option the command line left unset (sweep_spec_unset), from the spec file's `key`. */
static gboolean
sweep_spec_set(const GOptionEntry *e, GKeyFile *kf, const char *key, GError **error)
{
    switch (e->arg) {
    case G_OPTION_ARG_STRING:
    case G_OPTION_ARG_FILENAME:
        if (!sweep_spec_escapes(kf, key, error))
            return FALSE;
        *(char **) e->arg_data = g_key_file_get_string(kf, "sweep", key, error);
        break; /* "\d" gives a string and an error */
    case G_OPTION_ARG_INT64:
        *(gint64 *) e->arg_data = g_key_file_get_int64(kf, "sweep", key, error);
        break;
    case G_OPTION_ARG_NONE:
        *(gboolean *) e->arg_data = g_key_file_get_boolean(kf, "sweep", key, error);
        break;
    default:
        g_assert_not_reached();
    }
    return error == NULL || *error == NULL;
}

/* The most a --spec file may hold. */
#define SWEEP_SPEC_MAX_BYTES ((gsize) 1 << 20)

/* FALSE naming the line when a key comes twice in one group (GKeyFile keeps the last). */
static gboolean
sweep_spec_unique(const char *text, const char *path, GError **error)
{
    g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
    g_autoptr(GHashTable) seen = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    for (guint i = 0; lines[i] != NULL; i++) {
        char *l = g_strstrip(lines[i]);
        if (l[0] == '[') {
            g_hash_table_remove_all(seen); /* a new group */
            continue;
        }
        const char *eq = strchr(l, '=');
        if (l[0] == '#' || l[0] == '\0' || eq == NULL)
            continue;
        g_autofree char *key = g_strndup(l, (gsize) (eq - l));
        g_strstrip(key);
        if (g_hash_table_contains(seen, key)) {
            g_set_error(error, SIMPAR_CLI_ERROR, SIMPAR_CLI_ERROR_USAGE,
                        "--spec %s:%u: key %s is given twice in its group (each key once)", path,
                        i + 1, key);
            return FALSE;
        }
        g_hash_table_add(seen, g_steal_pointer(&key));
    }
    return TRUE;
}

/* --spec FILE: [sweep] keys named like the long flags; the command line wins. The keys it
 * gave go to `given`. */
static gboolean
sweep_load_spec(const char *path, const GOptionEntry *const *tables, GPtrArray *given,
                GError **error)
{
    g_autoptr(GKeyFile) kf = g_key_file_new();
    g_autoptr(GError) local = NULL;
    g_autofree char *text = NULL;
    gsize len = 0;
    if (!simpar_file_read(path, SWEEP_SPEC_MAX_BYTES, &text, &len, &local)) {
        g_set_error(error, SIMPAR_CLI_ERROR, SIMPAR_CLI_ERROR_USAGE, "--spec %s", local->message);
        return FALSE;
    }
    if (!sweep_spec_unique(text, path, error))
        return FALSE;
    if (!g_key_file_load_from_data(kf, text, len, G_KEY_FILE_NONE, &local) ||
        !g_key_file_has_group(kf, "sweep")) {
        g_set_error(error, SIMPAR_CLI_ERROR, SIMPAR_CLI_ERROR_USAGE,
                    "--spec %s: %s (a key file with a [sweep] group)", path,
                    local != NULL ? local->message : "no [sweep] group");
        return FALSE;
    }
    g_auto(GStrv) keys = g_key_file_get_keys(kf, "sweep", NULL, NULL);
    for (guint k = 0; keys[k] != NULL; k++) {
        const GOptionEntry *e = NULL;
        for (guint t = 0; tables[t] != NULL && e == NULL; t++)
            for (const GOptionEntry *x = tables[t]; x->long_name != NULL && e == NULL; x++)
                if (g_str_equal(x->long_name, keys[k]))
                    e = x;
        if (e == NULL || g_str_equal(keys[k], "spec") || g_str_equal(keys[k], "merge")) {
            g_set_error(error, SIMPAR_CLI_ERROR, SIMPAR_CLI_ERROR_USAGE,
                        "--spec %s: [sweep] %s is not a sweep option (keys are the long flag "
                        "names, e.g. gpus = 64..4096)",
                        path, keys[k]);
            return FALSE;
        }
        if (!sweep_spec_unset(e))
            continue; /* the command line wins */
        g_ptr_array_add(given, g_strdup(keys[k]));
        if (!sweep_spec_set(e, kf, keys[k], &local)) {
            g_set_error(error, SIMPAR_CLI_ERROR, SIMPAR_CLI_ERROR_USAGE, "--spec %s: %s", path,
                        local->message);
            return FALSE;
        }
    }
    return TRUE;
}

/* "path@sum" of a file named in a spec: the path (a name without '@': itself). */
static char *
sweep_untag(const char *item)
{
    const char *at = strrchr(item, '@');
    return at != NULL ? g_strndup(item, (gsize) (at - item)) : g_strdup(item);
}

/* The sweep of `spec_text` rebuilt from it (its keys are the long flags, its files "path@sum"),
 * its rows' configurations (simpar_sweep_expected); NULL with an error when it cannot be, or
 * rebuilds another spec (a file changed or lies elsewhere). */
static GHashTable *
sweep_rebuild(const char *spec_text, GError **error)
{
    g_autoptr(GPtrArray) argv = g_ptr_array_new_with_free_func(g_free);
    g_ptr_array_add(argv, g_strdup("simpar"));
    g_ptr_array_add(argv, g_strdup("--output=rebuilt.csv")); /* required, never written */
    g_auto(GStrv) keys = g_strsplit(spec_text, ";", -1);
    for (guint k = 0; keys[k] != NULL; k++) {
        char *eq = strchr(keys[k], '=');
        if (eq == NULL || eq[1] == '\0' || g_str_equal(keys[k], "micro-batch-default=per-grid"))
            continue;
        *eq = '\0';
        const char *key = keys[k], *value = eq + 1;
        if (g_str_equal(key, "job")) { /* the job flags, "--name=value" each */
            g_auto(GStrv) words = g_strsplit(value, " ", -1);
            for (guint w = 0; words[w] != NULL; w++)
                if (words[w][0] != '\0')
                    g_ptr_array_add(argv, g_strdup(words[w]));
            continue;
        }
        g_autoptr(GString) v = g_string_new(NULL);
        if (g_str_equal(key, "time-budget")) { /* in seconds there, minutes here */
            char buf[G_ASCII_DTOSTR_BUF_SIZE];
            g_string_append(v, g_ascii_dtostr(buf, sizeof buf, g_ascii_strtod(value, NULL) / 60));
        } else {
            g_auto(GStrv) items = g_strsplit(value, ",", -1);
            for (guint i = 0; items[i] != NULL; i++) {
                g_autofree char *item = sweep_untag(items[i]);
                g_string_append_printf(v, "%s%s", i > 0 ? "," : "", item);
            }
        }
        g_ptr_array_add(argv, g_strdup_printf("--%s=%s", key, v->str));
    }
    g_ptr_array_add(argv, NULL);
    SimparSweep re = {0};
    g_auto(GStrv) rest = NULL;
    g_autoptr(GError) local = NULL;
    GHashTable *want = NULL;
    /* parsing moves the vector's pointers: a copy of it, the strings freed with `argv` */
    g_autofree char **words = g_memdup2(argv->pdata, sizeof(char *) * argv->len);
    if (simpar_sweep_parse_args(&re, (int) argv->len - 1, words, &rest, &local) &&
        simpar_sweep_resolve(&re, &local) && simpar_sweep_identify(&re, &local) &&
        g_str_equal(re.spec_text, spec_text))
        want = simpar_sweep_expected(&re, re.backend, &local);
    if (want == NULL)
        g_set_error(error, SIMPAR_SWEEP_ERROR, SIMPAR_SWEEP_ERROR_MERGE,
                    "simpar sweep --merge: the shards' rows are checked against their sweep, "
                    "rebuilt from their spec, which %s: merge where the sweep ran, with its "
                    "platform, model and calibration files unchanged",
                    local != NULL ? local->message : "names files that changed since");
    simpar_sweep_clear(&re);
    return want; /* (transfer full) */
}

/* --merge takes the part files, -o and --rank-by only. */
static gboolean
sweep_merge(SimparSweep *sw, char **parts, char **summary, GError **error)
{
    const SimparSweepArgs *a = &sw->args;
    gboolean other = a->preset != NULL || a->topology != NULL || a->shard != NULL ||
                     a->refine != SIMPAR_JOB_UNSET;
    for (guint i = 0; i < SIMPAR_SWEEP_N_NUMBERS; i++)
        other = other || a->numbers[i] != NULL;
    for (guint i = 0; i < SIMPAR_SWEEP_N_NAMES; i++)
        other = other || a->names[i] != NULL;
    if (other) {
        g_set_error(
            error, SIMPAR_CLI_ERROR, SIMPAR_CLI_ERROR_USAGE,
            "simpar sweep --merge takes -o FILE, --rank-by, --plot and the shard files only (the "
            "sweep's options are in the shards)");
        return FALSE;
    }
    if (a->output == NULL) {
        g_set_error(error, SIMPAR_CLI_ERROR, SIMPAR_CLI_ERROR_USAGE,
                    "simpar sweep --merge: -o FILE is required (the merged CSV)");
        return FALSE;
    }
    return simpar_sweep_parse_rank_by(a->rank_by, &sw->rank_by, error) &&
           simpar_sweep_merge(sw, parts, sweep_rebuild, summary, error);
}

/* The options; *parts the arguments left (--merge's shard files). */
static gboolean
sweep_parse(GOptionContext *ctx, const SimparSweepArgs *a, int argc, char **argv, GStrv *parts,
            GError **error)
{
    if (!g_option_context_parse(ctx, &argc, &argv, error)) {
        g_prefix_error(error, "simpar sweep: ");
        return FALSE;
    }
    *parts = g_new0(char *, argc);
    for (int i = 1; i < argc; i++)
        (*parts)[i - 1] = g_strdup(argv[i]);
    if (argc > 1 && !a->merge) {
        g_set_error(error, SIMPAR_CLI_ERROR, SIMPAR_CLI_ERROR_USAGE,
                    "simpar sweep: unexpected argument '%s' (see simpar sweep --help)", argv[1]);
        return FALSE;
    }
    return TRUE;
}

gboolean
simpar_sweep_parse_args(SimparSweep *sw, int argc, char **argv, GStrv *parts, GError **error)
{
    SimparSweepArgs *a = &sw->args;
    simpar_job_args_init(&a->job);
    a->jobs = a->refine = SIMPAR_JOB_UNSET;
    char **n = a->numbers, **s = a->names;
    const GOptionEntry entries[] = {
        {"preset", 0, 0, G_OPTION_ARG_STRING, &a->preset,
         "Node design (simpar topology --list): a platform generated per GPU count", "NAME"},
        {"topology", 't', 0, G_OPTION_ARG_FILENAME, &a->topology,
         "A fixed platform file instead of --preset", "FILE"},
        {"rack-gpus", 0, 0, G_OPTION_ARG_INT64, &a->rack_gpus,
         "With a rack-scale --preset (gb200-nvl72): racks of G GPUs, whole compute trays "
         "(simpar topology --rack-gpus)",
         "G"},
        {"gpus", 0, 0, G_OPTION_ARG_STRING, &n[SIMPAR_SWEEP_GPUS],
         "GPU counts (--topology: default all its GPUs)", "LIST"},
        {"tp-mode", 0, 0, G_OPTION_ARG_STRING, &s[SIMPAR_SWEEP_MODES],
         simpar_generator_help("Tensor-parallel modes ", SIMPAR_GEN_ANY, SIMPAR_GEN_NAME, NULL,
                               ", or all (default)"),
         "LIST"},
        {"tp", 0, 0, G_OPTION_ARG_STRING, &n[SIMPAR_SWEEP_TP],
         simpar_generator_help("", SIMPAR_GEN_LINE, SIMPAR_GEN_LABEL, "or",
                               " tensor-parallel sizes T"),
         "LIST"},
        {"q", 0, 0, G_OPTION_ARG_STRING, &n[SIMPAR_SWEEP_Q],
         simpar_generator_help("Grid sides of ", SIMPAR_GEN_GRID, SIMPAR_GEN_POWERS, "and", ""),
         "LIST"},
        {"depth", 0, 0, G_OPTION_ARG_STRING, &n[SIMPAR_SWEEP_DEPTH],
         simpar_generator_help("", SIMPAR_GEN_LAYERS, SIMPAR_GEN_LABEL, "or", " depths d"), "LIST"},
        {"pp", 0, 0, G_OPTION_ARG_STRING, &n[SIMPAR_SWEEP_PP], "Pipeline stages P", "LIST"},
        {"dp", 0, 0, G_OPTION_ARG_STRING, &n[SIMPAR_SWEEP_DP], "Data-parallel replicas D", "LIST"},
        {"micro-batch", 0, 0, G_OPTION_ARG_STRING, &n[SIMPAR_SWEEP_MICRO_BATCH],
         simpar_generator_help("Sequences per micro-batch b (default the model's, rounded up per "
                               "grid to whole sequences per GPU: ",
                               SIMPAR_GEN_GRID, SIMPAR_GEN_BATCH, NULL, ")"),
         "LIST"},
        {"global-batch", 0, 0, G_OPTION_ARG_STRING, &n[SIMPAR_SWEEP_GLOBAL_BATCH],
         "Sequences per step B (default b x D: one micro-batch per replica; give it to compare "
         "modes and GPU counts at one batch)",
         "LIST"},
        {"recompute", 0, 0, G_OPTION_ARG_STRING, &s[SIMPAR_SWEEP_RECOMPUTE],
         "Recomputation: none (default), selective, full", "LIST"},
        {"schedule", 0, 0, G_OPTION_ARG_STRING, &s[SIMPAR_SWEEP_SCHEDULE],
         "Pipeline schedules: gpipe, 1f1b (default), interleaved", "LIST"},
        {"model", 'm', 0, G_OPTION_ARG_STRING, &s[SIMPAR_SWEEP_MODELS],
         "Model presets or JSON files (default default-4k)", "LIST"},
        {"hidden", 0, 0, G_OPTION_ARG_STRING, &n[SIMPAR_SWEEP_HIDDEN], "Hidden sizes h", "LIST"},
        {"layers", 0, 0, G_OPTION_ARG_STRING, &n[SIMPAR_SWEEP_LAYERS], "Layer counts L", "LIST"},
        {"seq", 0, 0, G_OPTION_ARG_STRING, &n[SIMPAR_SWEEP_SEQ], "Sequence lengths s", "LIST"},
        {"kv-heads", 0, 0, G_OPTION_ARG_STRING, &n[SIMPAR_SWEEP_KV_HEADS],
         "Key/value heads (grouped-query attention; default the model's)", "LIST"},
        {"cp", 0, 0, G_OPTION_ARG_STRING, &n[SIMPAR_SWEEP_CP],
         "Context parallelism C (T x C x P x D = GPUs; default 1)", "LIST"},
        {"ep", 0, 0, G_OPTION_ARG_STRING, &n[SIMPAR_SWEEP_EP],
         "Expert parallelism EP of an MoE model (EP x ETP must divide T x C x D and EP the "
         "experts; other rows are skipped; default 1)",
         "LIST"},
        {"cp-mode", 0, 0, G_OPTION_ARG_STRING, &s[SIMPAR_SWEEP_CP_MODE],
         "Context parallelism's forms: allgather, ring (default allgather)", "LIST"},
        {"precision", 0, 0, G_OPTION_ARG_STRING, &s[SIMPAR_SWEEP_PRECISION],
         "Precisions (replace --dtype and --fp8-recipe): fp16, bf16, fp32, fp64, fp8 (delayed), "
         "fp8-delayed, fp8-current, fp8-mxfp8",
         "LIST"},
        {"shard-group", 0, 0, G_OPTION_ARG_STRING, &n[SIMPAR_SWEEP_SHARD_GROUP],
         "ZeRO 1-3: replicas per shard group (hybrid sharding; default D)", "LIST"},
        {"output", 'o', 0, G_OPTION_ARG_FILENAME, &a->output,
         "The CSV to write (journal: FILE.part, resumed when rerun)", "FILE"},
        {"jobs", 'j', 0, G_OPTION_ARG_INT64, &a->jobs,
         "Worker processes (default: the number of cores)", "N"},
        {"refine", 0, 0, G_OPTION_ARG_INT64, &a->refine,
         "Re-simulate the K best configurations with SimGrid", "K"},
        {"rank-by", 0, 0, G_OPTION_ARG_STRING, &a->rank_by,
         "throughput (default: tokens/s), time (step time) or cost (GPU-hours per token)", "R"},
        {"shard", 0, 0, G_OPTION_ARG_STRING, &a->shard,
         "Evaluate the configurations with index % n == i only (a shard file)", "i/n"},
        {"merge", 0, 0, G_OPTION_ARG_NONE, &a->merge,
         "Merge shard files (arguments) into -o, as one unsharded run writes it", NULL},
        {"plot", 0, 0, G_OPTION_ARG_FILENAME, &a->plot,
         "Plot the result: FILE (.png or .svg) step time and throughput per mode and GPU count, "
         "FILE-memory and FILE-breakdown beside it",
         "FILE"},
        {"summary", 0, 0, G_OPTION_ARG_FILENAME, &a->summary,
         "Also write a JSON summary: the counts, the best configuration per GPU count and model, "
         "per GPU count and mode, and the top 10, each row with every CSV column",
         "FILE.json"},
        {"quiet", 'q', 0, G_OPTION_ARG_NONE, &a->quiet, "No progress on stderr", NULL},
        {"spec", 0, 0, G_OPTION_ARG_FILENAME, &a->spec,
         "Key file with a [sweep] group of these options (the command line wins)", "FILE"},
        G_OPTION_ENTRY_NULL,
    };
    /* the single-valued job and prediction options, as simpar predict takes them */
    static const char *const job_singles[] = {"heads",
                                              "mlp",
                                              "norm",
                                              "bias",
                                              "dropout",
                                              "ffn",
                                              "vocab",
                                              "dtype",
                                              "fp8-recipe",
                                              "fp8-param-gather",
                                              "fp8-dot-product-attention",
                                              "fp8-output-proj",
                                              "sp",
                                              "variant",
                                              "zero",
                                              "no-reshard",
                                              "grad-reduce-dtype",
                                              "virtual-stages",
                                              "vp-group",
                                              "overlap-grad-reduce",
                                              "overlap-param-gather",
                                              "bucket-params",
                                              "tied-embeddings",
                                              "scatter-gather",
                                              "order",
                                              "experts",
                                              "topk",
                                              "moe-ffn",
                                              "shared-ffn",
                                              "dense-layers",
                                              "moe-every",
                                              "router",
                                              "expert-groups",
                                              "group-limit",
                                              "capacity-factor",
                                              "imbalance",
                                              "moe-shared-expert-overlap",
                                              "overlap-moe-expert-parallel-comm",
                                              "etp",
                                              "moe-dispatcher",
                                              "moe-flex-backend",
                                              "tp-comm-overlap",
                                              "mtp-layers",
                                              "recompute-modules",
                                              "account-for-embedding-in-pipeline-split",
                                              "account-for-loss-in-pipeline-split",
                                              NULL};
    g_autofree GOptionEntry *job = simpar_job_option_entries(&a->job, job_singles);
    g_autofree GOptionEntry *predict = simpar_predict_option_entries(
        &a->predict, "analytic (default; closed forms), formula (the analytic figures, the step "
                     "from closed forms per pipeline stage: fastest) or simgrid (contention)");
    const GOptionEntry *tables[] = {entries, job, predict, NULL};
    g_autoptr(GOptionContext) ctx = g_option_context_new("- sweep configurations into a CSV");
    g_option_context_set_summary(ctx, sweep_summary_text);
    for (guint t = 0; tables[t] != NULL; t++)
        g_option_context_add_main_entries(ctx, tables[t], NULL);
    a->spec_keys = g_ptr_array_new_with_free_func(g_free);
    return sweep_parse(ctx, a, argc, argv, parts, error) &&
           (a->spec == NULL || sweep_load_spec(a->spec, tables, a->spec_keys, error));
}

/* An error about a flag whose value came from the spec file names the file and its key too. */
static void
sweep_spec_blame(const SimparSweepArgs *a, GError *error)
{
    for (guint k = 0; a->spec_keys != NULL && k < a->spec_keys->len; k++) {
        g_autofree char *flag = g_strdup_printf("--%s ", (char *) a->spec_keys->pdata[k]);
        if (g_str_has_prefix(error->message, flag)) {
            g_prefix_error(&error, "--spec %s: [sweep] %s: ", a->spec,
                           (char *) a->spec_keys->pdata[k]);
            return;
        }
    }
}

gboolean
simpar_cmd_sweep(int argc, char **argv, GError **error)
{
    /* A sweep's rows build and free arrays of like sizes again and again (layer schedules, the
     * formula's ops, the journal's rows): kept in the heap, neither mapped apart nor trimmed
     * back to the kernel at each free, their pages are not faulted in anew row after row (the
     * workers inherit the setting). */
    mallopt(M_MMAP_THRESHOLD, SWEEP_HEAP_KEEP_BYTES);
    mallopt(M_TRIM_THRESHOLD, SWEEP_HEAP_KEEP_BYTES);
    SimparSweep sw = {0};
    SimparSweepArgs *a = &sw.args;
    g_autofree char *summary = NULL;
    g_auto(GStrv) parts = NULL;
    gboolean ok = simpar_sweep_parse_args(&sw, argc, argv, &parts, error) &&
                  sweep_check_plot(a, error) && sweep_check_summary(a, error) &&
                  sweep_check_distinct(a, parts, error);
    if (ok && a->merge)
        ok = sweep_merge(&sw, parts, &summary, error);
    else if (ok)
        ok = simpar_sweep_resolve(&sw, error) && simpar_sweep_run(&sw, &summary, error);
    if (ok)
        printf("%s", summary);
    ok = ok && (a->plot == NULL || sweep_plot(a, error));
    if (!ok && error != NULL && *error != NULL)
        sweep_spec_blame(a, *error);
    simpar_sweep_clear(&sw);
    return ok;
}
