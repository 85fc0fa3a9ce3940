/* sweep.c - a sweep's output: rows in index order, ranks, the summary, and --merge. */
#include "sweep.h"
#include "cli.h"
#include <json-glib/json-glib.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#define SWEEP_TOP 10

char *
simpar_sweep_comments(const SimparSweep *sw)
{
    GString *s = g_string_new(NULL);
    g_string_append_printf(s, "# simpar-sweep %s: %" G_GUINT64_FORMAT " configurations\n", sw->id,
                           sw->total);
    g_string_append_printf(s, "# spec %s\n", sw->spec_text);
    if (sw->n_shards > 0)
        g_string_append_printf(s, "# shard %u/%u\n", sw->shard, sw->n_shards);
    return g_string_free(s, FALSE); /* (transfer full) */
}

static const char *
sweep_field(const GPtrArray *row, SimparSweepColumn col)
{
    return g_ptr_array_index(row, col);
}

/* The row's index, checked against the sweep's size. */
static gboolean
sweep_row_index(const SimparCsv *csv, guint i, guint64 total, guint64 *out, GError **error)
{
    const char *s = simpar_csv_get(csv, i, SIMPAR_SWEEP_COL_INDEX);
    if (total == 0 || !g_ascii_string_to_unsigned(s, 10, 0, total - 1, out, NULL)) {
        g_set_error(
            error, SIMPAR_SWEEP_ERROR, SIMPAR_SWEEP_ERROR_JOURNAL,
            "%s:%u: index '%s' is not a configuration of this sweep (0 to %" G_GUINT64_FORMAT ")",
            csv->name, g_array_index(csv->lines, guint, i), s, total - 1);
        return FALSE;
    }
    return TRUE;
}

/* Whether the header is simpar sweep's. */
static gboolean
sweep_check_header(const SimparCsv *csv, GError **error)
{
    gboolean same = csv->header->len == SIMPAR_SWEEP_N_COLUMNS;
    for (guint i = 0; same && i < SIMPAR_SWEEP_N_COLUMNS; i++)
        same = g_str_equal(g_ptr_array_index(csv->header, i), simpar_sweep_columns[i]);
    if (!same)
        g_set_error(error, SIMPAR_SWEEP_ERROR, SIMPAR_SWEEP_ERROR_JOURNAL,
                    "%s: not a simpar sweep table (its header differs)", csv->name);
    return same;
}

/* --------------------------------------------------------------------------------- ranking */

typedef struct {
    double key; /* lower is better */
    guint64 index;
} SweepRank;

static gint
sweep_rank_cmp(gconstpointer a, gconstpointer b)
{
    const SweepRank *x = a, *y = b;
    int by_key = (x->key > y->key) - (x->key < y->key);
    return by_key != 0 ? by_key : (x->index > y->index) - (x->index < y->index);
}

/* The ok rows of `rows` (by index, NULL skipped) best first. */
static GArray *
sweep_order(const SimparSweep *sw, GPtrArray *const *rows, guint64 n)
{
    static const SimparSweepColumn metric[] = {SIMPAR_SWEEP_COL_STEP, SIMPAR_SWEEP_COL_TOKENS,
                                               SIMPAR_SWEEP_COL_GPU_HOURS};
    GArray *order = g_array_new(FALSE, FALSE, sizeof(SweepRank));
    for (guint64 i = 0; i < n; i++) {
        if (rows[i] == NULL || !g_str_equal(sweep_field(rows[i], SIMPAR_SWEEP_COL_STATUS), "ok"))
            continue;
        double v = g_ascii_strtod(sweep_field(rows[i], metric[sw->rank_by]), NULL);
        SweepRank r = {sw->rank_by == SIMPAR_SWEEP_RANK_THROUGHPUT ? -v : v, i};
        g_array_append_val(order, r);
    }
    g_array_sort(order, sweep_rank_cmp);
    return order; /* (transfer full) */
}

GArray *
simpar_sweep_best(const SimparSweep *sw, SimparCsv *journal, const char *backend, guint k)
{
    g_autofree GPtrArray **rows = g_new0(GPtrArray *, sw->total);
    for (guint i = 0; i < simpar_csv_n_rows(journal); i++) {
        guint64 idx;
        if (sweep_row_index(journal, i, sw->total, &idx, NULL) && rows[idx] == NULL &&
            g_str_equal(simpar_csv_get(journal, i, SIMPAR_SWEEP_COL_BACKEND), backend))
            rows[idx] = g_ptr_array_index(journal->rows, i);
    }
    g_autoptr(GArray) order = sweep_order(sw, rows, sw->total);
    GArray *best = g_array_new(FALSE, FALSE, sizeof(guint64));
    for (guint i = 0; i < order->len && i < k; i++)
        g_array_append_val(best, g_array_index(order, SweepRank, i).index);
    return best; /* (transfer full) */
}

/* ---------------------------------------------------------------------------------- summary */

/* "does not fit in memory", "T x P x D is not the GPU count", or the validators'. */
static guint
sweep_reason_kind(const char *reason)
{
    if (strstr(reason, "does not fit in GPU memory") != NULL)
        return 0;
    if (strstr(reason, "must equal them") != NULL || strstr(reason, "divide the") != NULL)
        return 1;
    return 2;
}

static void
sweep_summary_counts(GString *s, GPtrArray *const *rows, guint64 n)
{
    static const char *const kinds[] = {"do not fit in GPU memory",
                                        "T x P x D cannot be the GPU count",
                                        "refused by the model, plan or split checks"};
    guint64 ok = 0, failed = 0, skipped[G_N_ELEMENTS(kinds)] = {0}, all = 0;
    for (guint64 i = 0; i < n; i++) {
        if (rows[i] == NULL)
            continue;
        const char *status = sweep_field(rows[i], SIMPAR_SWEEP_COL_STATUS);
        all++;
        if (g_str_equal(status, "ok"))
            ok++;
        else if (g_str_equal(status, "failed"))
            failed++;
        else
            skipped[sweep_reason_kind(sweep_field(rows[i], SIMPAR_SWEEP_COL_REASON))]++;
    }
    g_string_append_printf(s,
                           "%" G_GUINT64_FORMAT " configurations: %" G_GUINT64_FORMAT
                           " ok, %" G_GUINT64_FORMAT " skipped",
                           all, ok, skipped[0] + skipped[1] + skipped[2]);
    for (guint k = 0, first = 1; k < G_N_ELEMENTS(kinds); k++)
        if (skipped[k] > 0) {
            g_string_append_printf(s, "%s%" G_GUINT64_FORMAT " %s", first ? " (" : ", ", skipped[k],
                                   kinds[k]);
            first = 0;
        }
    if (skipped[0] + skipped[1] + skipped[2] > 0)
        g_string_append_c(s, ')');
    g_string_append_printf(s, ", %" G_GUINT64_FORMAT " failed\n", failed);
}

static void
sweep_summary_header(GString *s)
{
    g_string_append_printf(s,
                           "%5s %6s %-10s %5s %5s %5s %-4s %-9s %5s %4s %5s %-11s %4s %6s %-9s "
                           "%10s %11s %10s %8s\n",
                           "rank", "index", "model", "h", "gpus", "nodes", "mode", "grid", "T", "P",
                           "D", "schedule", "b", "B", "recompute", "step s", "tokens/s",
                           "GPU-h/Btok", "mem GiB");
}

static void
sweep_summary_row(GString *s, const GPtrArray *row, guint64 rank)
{
    const SimparSweepColumn text[] = {
        SIMPAR_SWEEP_COL_INDEX,        SIMPAR_SWEEP_COL_MODEL,    SIMPAR_SWEEP_COL_HIDDEN,
        SIMPAR_SWEEP_COL_GPUS,         SIMPAR_SWEEP_COL_NODES,    SIMPAR_SWEEP_COL_MODE,
        SIMPAR_SWEEP_COL_GRID,         SIMPAR_SWEEP_COL_TP,       SIMPAR_SWEEP_COL_PP,
        SIMPAR_SWEEP_COL_DP,           SIMPAR_SWEEP_COL_SCHEDULE, SIMPAR_SWEEP_COL_MICRO_BATCH,
        SIMPAR_SWEEP_COL_GLOBAL_BATCH, SIMPAR_SWEEP_COL_RECOMPUTE};
    const char *f[G_N_ELEMENTS(text)];
    for (guint i = 0; i < G_N_ELEMENTS(text); i++)
        f[i] = sweep_field(row, text[i]);
    g_string_append_printf(
        s,
        "%5" G_GUINT64_FORMAT " %6s %-10.10s %5s %5s %5s %-4s %-9s %5s %4s %5s %-11s %4s %6s %-9s "
        "%10.4f %11.0f %10.2f %8.2f\n",
        rank, f[0], f[1], f[2], f[3], f[4], f[5], f[6], f[7], f[8], f[9], f[10], f[11], f[12],
        f[13], g_ascii_strtod(sweep_field(row, SIMPAR_SWEEP_COL_STEP), NULL),
        g_ascii_strtod(sweep_field(row, SIMPAR_SWEEP_COL_TOKENS), NULL),
        g_ascii_strtod(sweep_field(row, SIMPAR_SWEEP_COL_GPU_HOURS), NULL),
        g_ascii_strtod(sweep_field(row, SIMPAR_SWEEP_COL_MEM), NULL));
}

/* The shape of a model the best-per-GPU-count tables tell apart, and the same per mode. */
static const SimparSweepColumn sweep_per_model[] = {SIMPAR_SWEEP_COL_GPUS, SIMPAR_SWEEP_COL_MODEL,
                                                    SIMPAR_SWEEP_COL_HIDDEN,
                                                    SIMPAR_SWEEP_COL_LAYERS, SIMPAR_SWEEP_COL_SEQ};
static const SimparSweepColumn sweep_per_mode[] = {SIMPAR_SWEEP_COL_GPUS,   SIMPAR_SWEEP_COL_MODEL,
                                                   SIMPAR_SWEEP_COL_HIDDEN, SIMPAR_SWEEP_COL_LAYERS,
                                                   SIMPAR_SWEEP_COL_SEQ,    SIMPAR_SWEEP_COL_MODE};

/* The first row in `order` of each value of the columns `cols`, by GPU count: (gpus, its
 * position in `order`) (transfer full). */
static GArray *
sweep_best(GPtrArray *const *rows, const GArray *order, const SimparSweepColumn *cols, guint n_cols)
{
    g_autoptr(GHashTable) seen = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    GArray *best = g_array_new(FALSE, FALSE, sizeof(SweepRank));
    for (guint i = 0; i < order->len; i++) {
        const GPtrArray *row = rows[g_array_index(order, SweepRank, i).index];
        GString *key = g_string_new(NULL);
        for (guint c = 0; c < n_cols; c++) { /* "field,"s, without printf: a row each */
            g_string_append(key, sweep_field(row, cols[c]));
            g_string_append_c(key, ',');
        }
        SweepRank r = {g_ascii_strtod(sweep_field(row, SIMPAR_SWEEP_COL_GPUS), NULL), i};
        if (g_hash_table_add(seen, g_string_free(key, FALSE)))
            g_array_append_val(best, r);
    }
    g_array_sort(best, sweep_rank_cmp);
    return best;
}

static char *
sweep_summary(const SimparSweep *sw, GPtrArray *const *rows, guint64 n, const GArray *order)
{
    static const char *const by[] = {"step time", "tokens per second",
                                     "GPU-hours per billion tokens"};
    GString *s = g_string_new(NULL);
    g_string_append_printf(s, "%s: ", sw->args.output);
    sweep_summary_counts(s, rows, n);
    if (order->len == 0)
        return g_string_free(s, FALSE);
    g_string_append_printf(s, "\nbest configuration per GPU count and model (by %s):\n",
                           by[sw->rank_by]);
    sweep_summary_header(s);
    g_autoptr(GArray) best =
        sweep_best(rows, order, sweep_per_model, G_N_ELEMENTS(sweep_per_model));
    for (guint b = 0; b < best->len; b++) {
        guint64 at = g_array_index(best, SweepRank, b).index;
        sweep_summary_row(s, rows[g_array_index(order, SweepRank, at).index], at + 1);
    }
    g_string_append_printf(s, "\ntop %d by %s:\n", SWEEP_TOP, by[sw->rank_by]);
    sweep_summary_header(s);
    for (guint i = 0; i < order->len && i < SWEEP_TOP; i++)
        sweep_summary_row(s, rows[g_array_index(order, SweepRank, i).index], i + 1);
    if (sw->rank_by == SIMPAR_SWEEP_RANK_TIME && strstr(sw->spec_text, ";global-batch=;") != NULL)
        g_string_append(s, "\nnote: without --global-batch a row's batch is b x D (one micro-batch "
                           "per replica): steps of\nrows with different D do different work; give "
                           "--global-batch or --rank-by throughput|cost.\n");
    return g_string_free(s, FALSE); /* (transfer full) */
}

/* ------------------------------------------------------------------------------ JSON summary */

/* One row as an object: every column, numbers as numbers (integers where whole), empty cells
 * left out. */
static void
sweep_json_row(JsonBuilder *b, const GPtrArray *row, guint64 rank)
{
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "rank");
    json_builder_add_int_value(b, (gint64) rank);
    for (guint c = 0; c < SIMPAR_SWEEP_N_COLUMNS; c++) {
        const char *v = sweep_field(row, c);
        if (c == SIMPAR_SWEEP_COL_RANK || v == NULL || v[0] == '\0')
            continue;
        json_builder_set_member_name(b, simpar_sweep_columns[c]);
        char *end = NULL;
        gint64 i = g_ascii_strtoll(v, &end, 10);
        if (*end == '\0') {
            json_builder_add_int_value(b, i);
            continue;
        }
        double d = g_ascii_strtod(v, &end);
        if (*end == '\0' && isfinite(d))
            json_builder_add_double_value(b, d);
        else
            json_builder_add_string_value(b, v);
    }
    json_builder_end_object(b);
}

/* The best row (first in `order`) per key of `cols`, in the order of their GPU counts. */
static void
sweep_json_best(JsonBuilder *b, const char *name, GPtrArray *const *rows, const GArray *order,
                const SimparSweepColumn *cols, guint n_cols)
{
    g_autoptr(GArray) best = sweep_best(rows, order, cols, n_cols);
    json_builder_set_member_name(b, name);
    json_builder_begin_array(b);
    for (guint i = 0; i < best->len; i++) {
        guint64 at = g_array_index(best, SweepRank, i).index;
        sweep_json_row(b, rows[g_array_index(order, SweepRank, at).index], at + 1);
    }
    json_builder_end_array(b);
}

/* --summary: what the text summary says, as JSON. */
static gboolean
sweep_json_summary(const SimparSweep *sw, GPtrArray *const *rows, const GArray *order,
                   GError **error)
{
    static const char *const by[] = {"time", "throughput", "cost"};
    g_autoptr(JsonBuilder) b = json_builder_new();
    json_builder_begin_object(b);
    simpar_json_head(b, "simpar-sweep-summary", 1);
    json_builder_set_member_name(b, "simpar_version");
    json_builder_add_string_value(b, SIMPAR_VERSION);
    json_builder_set_member_name(b, "output");
    json_builder_add_string_value(b, sw->args.output);
    json_builder_set_member_name(b, "sweep_id"); /* the SHA-256 prefix of the spec */
    json_builder_add_string_value(b, sw->id);
    json_builder_set_member_name(b, "spec");
    json_builder_add_string_value(b, sw->spec_text);
    json_builder_set_member_name(b, "rank_by");
    json_builder_add_string_value(b, by[sw->rank_by]);
    guint64 count[3] = {0}; /* ok, skipped, failed */
    for (guint64 i = 0; i < sw->total; i++) {
        const char *status = rows[i] != NULL ? sweep_field(rows[i], SIMPAR_SWEEP_COL_STATUS) : "";
        count[g_str_equal(status, "ok")       ? 0
              : g_str_equal(status, "failed") ? 2
                                              : 1] += rows[i] != NULL;
    }
    const char *names[] = {"ok", "skipped", "failed"};
    json_builder_set_member_name(b, "configurations");
    json_builder_add_int_value(b, (gint64) (count[0] + count[1] + count[2]));
    for (guint k = 0; k < 3; k++) {
        json_builder_set_member_name(b, names[k]);
        json_builder_add_int_value(b, (gint64) count[k]);
    }
    sweep_json_best(b, "best_per_gpu_count", rows, order, sweep_per_model,
                    G_N_ELEMENTS(sweep_per_model));
    sweep_json_best(b, "best_per_gpu_count_and_mode", rows, order, sweep_per_mode,
                    G_N_ELEMENTS(sweep_per_mode));
    json_builder_set_member_name(b, "top");
    json_builder_begin_array(b);
    for (guint i = 0; i < order->len && i < SWEEP_TOP; i++)
        sweep_json_row(b, rows[g_array_index(order, SweepRank, i).index], i + 1);
    json_builder_end_array(b);
    json_builder_end_object(b);
    return simpar_json_write_file(b, "--summary", sw->args.summary, error);
}

/* ----------------------------------------------------------------------------------- output */

/* Writes rows[0..total) (NULL: not in this shard; every other index must be there) with ranks
 * (not in a shard file) to args.output, atomically; *summary says what it holds. */
static gboolean
sweep_output(const SimparSweep *sw, GPtrArray *const *rows, char **summary, GError **error)
{
    g_autoptr(GArray) order = sweep_order(sw, rows, sw->total);
    g_autofree guint64 *rank = g_new0(guint64, sw->total);
    for (guint i = 0; i < order->len; i++)
        rank[g_array_index(order, SweepRank, i).index] = i + 1;
    /* a shard keeps the sweep's identity for --merge in its comment lines; the table itself
     * starts with its header (the identity is in the --summary JSON) */
    g_autofree char *comments = sw->n_shards > 0 ? simpar_sweep_comments(sw) : NULL;
    g_autoptr(GString) out = g_string_new(comments);
    simpar_csv_append_row(out, simpar_sweep_columns, SIMPAR_SWEEP_N_COLUMNS);
    for (guint64 i = 0; i < sw->total; i++) {
        if (rows[i] == NULL)
            continue;
        const char *f[SIMPAR_SWEEP_N_COLUMNS];
        memcpy(f, rows[i]->pdata, sizeof f);
        g_autofree char *r = rank[i] > 0 && sw->n_shards == 0
                                 ? g_strdup_printf("%" G_GUINT64_FORMAT, rank[i])
                                 : NULL;
        f[SIMPAR_SWEEP_COL_RANK] = r;
        simpar_csv_append_row(out, f, SIMPAR_SWEEP_N_COLUMNS);
    }
    if (!simpar_output_write("-o", sw->args.output, out->str, out->len, error))
        return FALSE;
    *summary = sweep_summary(sw, rows, sw->total, order);
    return sw->args.summary == NULL || sweep_json_summary(sw, rows, order, error);
}

/* A copy of the refined row `row` with the analytic step of `analytic`. */
static GPtrArray *
sweep_refined_row(const GPtrArray *row, const GPtrArray *analytic)
{
    GPtrArray *copy = g_ptr_array_new_full(SIMPAR_SWEEP_N_COLUMNS, g_free);
    for (guint i = 0; i < SIMPAR_SWEEP_N_COLUMNS; i++)
        g_ptr_array_add(copy, g_strdup(i == SIMPAR_SWEEP_COL_ANALYTIC_STEP
                                           ? sweep_field(analytic, SIMPAR_SWEEP_COL_STEP)
                                           : sweep_field(row, i)));
    return copy; /* (transfer full) */
}

gboolean
simpar_sweep_write_output(const SimparSweep *sw, SimparCsv *journal, GHashTable *refined,
                          char **summary, GError **error)
{
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    if (!sweep_check_header(journal, error))
        return FALSE;
    g_autofree GPtrArray **rows = g_new0(GPtrArray *, sw->total);
    g_autofree GPtrArray **better = g_new0(GPtrArray *, sw->total);
    for (guint i = 0; i < simpar_csv_n_rows(journal); i++) {
        guint64 idx;
        if (!sweep_row_index(journal, i, sw->total, &idx, error))
            return FALSE;
        GPtrArray *row = g_ptr_array_index(journal->rows, i);
        const char *backend = sweep_field(row, SIMPAR_SWEEP_COL_BACKEND);
        if (g_str_equal(backend, sw->backend->name) && rows[idx] == NULL)
            rows[idx] = row;
        else if (refined != NULL && g_hash_table_contains(refined, &idx) && better[idx] == NULL)
            better[idx] = row;
    }
    g_autoptr(GPtrArray) owned = g_ptr_array_new_with_free_func((GDestroyNotify) g_ptr_array_unref);
    for (guint64 i = 0; i < sw->total; i++) {
        if (sw->n_shards > 0 && i % sw->n_shards != sw->shard)
            continue;
        if (rows[i] == NULL) {
            g_set_error(error, SIMPAR_SWEEP_ERROR, SIMPAR_SWEEP_ERROR_JOURNAL,
                        "%s: configuration %" G_GUINT64_FORMAT " is missing", journal->name, i);
            return FALSE;
        }
        if (better[i] != NULL) {
            g_ptr_array_add(owned, sweep_refined_row(better[i], rows[i]));
            rows[i] = g_ptr_array_index(owned, owned->len - 1);
        }
    }
    return sweep_output(sw, rows, summary, error);
}

gboolean
simpar_sweep_row_figures_ok(const SimparCsv *csv, guint i, const char *name, const char *fix,
                            GError **error)
{
    if (!g_str_equal(simpar_csv_get(csv, i, SIMPAR_SWEEP_COL_STATUS), "ok"))
        return TRUE;
    for (guint k = SIMPAR_SWEEP_COL_STEP; k < SIMPAR_SWEEP_COL_RANK; k++) {
        const char *f = simpar_csv_get(csv, i, (int) k);
        char *end = NULL;
        double v = f[0] != '\0' ? g_ascii_strtod(f, &end) : 0;
        gboolean bad = f[0] != '\0' && (end == f || *end != '\0' || !isfinite(v) || v < 0);
        if (k == SIMPAR_SWEEP_COL_STEP)
            bad = bad || !(v > 1e-7 && v <= SIMPAR_PREDICT_MAX_STEP_S);
        if (bad) {
            g_set_error(error, SIMPAR_SWEEP_ERROR, SIMPAR_SWEEP_ERROR_JOURNAL,
                        "%s:%u: %s '%s' is not a figure simpar writes (a finite number >= 0; a "
                        "step from 1e-7 to %g s); %s",
                        name, g_array_index(csv->lines, guint, i), simpar_sweep_columns[k], f,
                        SIMPAR_PREDICT_MAX_STEP_S, fix);
            return FALSE;
        }
    }
    return TRUE;
}

/* ------------------------------------------------------------------------------------ merge */

/* The sweep a shard file belongs to: its id line, spec and shard. */
static gboolean
sweep_part_identity(const SimparCsv *csv, guint64 *total, guint *shard, guint *n, GError **error)
{
    const GPtrArray *c = csv->comments;
    guint64 i = 0, k = 0;
    const char *id = c->len == 3 ? strchr(g_ptr_array_index(c, 0), ':') : NULL;
    const char *sh = c->len == 3 ? g_ptr_array_index(c, 2) : NULL;
    if (id == NULL || !g_str_has_prefix(g_ptr_array_index(c, 0), " simpar-sweep ") ||
        !g_str_has_prefix(g_ptr_array_index(c, 1), " spec ") || !g_str_has_prefix(sh, " shard ") ||
        sscanf(id, ": %" G_GUINT64_FORMAT, total) != 1 ||
        sscanf(sh, " shard %" G_GUINT64_FORMAT "/%" G_GUINT64_FORMAT, &i, &k) != 2 || i >= k) {
        g_set_error(error, SIMPAR_SWEEP_ERROR, SIMPAR_SWEEP_ERROR_MERGE,
                    "%s: not a shard file of simpar sweep (written with --shard i/n)", csv->name);
        return FALSE;
    }
    *shard = (guint) i, *n = (guint) k;
    return sweep_check_header(csv, error);
}

/* The parts' sweep, which they must share, into sw (id, spec, total). */
static gboolean
sweep_merge_identity(SimparSweep *sw, SimparCsv **csv, guint n_parts, guint *n, GError **error)
{
    g_autofree char **owner = g_new0(char *, n_parts);
    for (guint p = 0; p < n_parts; p++) {
        guint shard, k;
        guint64 total;
        if (!sweep_part_identity(csv[p], &total, &shard, &k, error))
            return FALSE;
        const char *id0 = g_ptr_array_index(csv[0]->comments, 0);
        const char *spec0 = g_ptr_array_index(csv[0]->comments, 1);
        if (!g_str_equal(g_ptr_array_index(csv[p]->comments, 0), id0) ||
            !g_str_equal(g_ptr_array_index(csv[p]->comments, 1), spec0) || (p > 0 && k != *n)) {
            g_set_error(error, SIMPAR_SWEEP_ERROR, SIMPAR_SWEEP_ERROR_MERGE,
                        "%s and %s belong to different sweeps (or shardings): merge the shards "
                        "of one sweep",
                        csv[0]->name, csv[p]->name);
            return FALSE;
        }
        *n = k, sw->total = total;
        for (guint q = 0; q < p; q++)
            if (owner[q] != NULL && g_str_equal(owner[q], g_ptr_array_index(csv[p]->comments, 2))) {
                g_set_error(error, SIMPAR_SWEEP_ERROR, SIMPAR_SWEEP_ERROR_MERGE,
                            "%s and %s are both shard %u/%u: give each shard once", csv[q]->name,
                            csv[p]->name, shard, k);
                return FALSE;
            }
        owner[p] = g_ptr_array_index(csv[p]->comments, 2);
    }
    const char *id = g_ptr_array_index(csv[0]->comments, 0);
    sw->id = g_strndup(id + strlen(" simpar-sweep "),
                       (gsize) (strchr(id, ':') - id) - strlen(" simpar-sweep "));
    sw->spec_text =
        g_strdup((const char *) g_ptr_array_index(csv[0]->comments, 1) + strlen(" spec "));
    return TRUE;
}

gboolean
simpar_sweep_merge(SimparSweep *sw, char **parts, SimparSweepRebuild rebuild, char **summary,
                   GError **error)
{
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    guint n_parts = parts != NULL ? g_strv_length(parts) : 0, n = 0;
    if (n_parts == 0) {
        g_set_error(error, SIMPAR_CLI_ERROR, SIMPAR_CLI_ERROR_USAGE,
                    "simpar sweep --merge: give the shard files (simpar sweep --merge -o ALL.csv "
                    "PART...)");
        return FALSE;
    }
    g_autoptr(GPtrArray) tables = g_ptr_array_new_with_free_func((GDestroyNotify) simpar_csv_free);
    for (guint p = 0; p < n_parts; p++) {
        SimparCsv *csv = simpar_csv_read(parts[p], SIMPAR_CSV_NONE, error);
        if (csv == NULL)
            return FALSE;
        g_ptr_array_add(tables, csv);
    }
    SimparCsv **csv = (SimparCsv **) tables->pdata;
    if (!sweep_merge_identity(sw, csv, n_parts, &n, error))
        return FALSE;
    /* each row the configuration of its index, as resume holds a journal's: rebuilt from the
     * spec (a shard's row edited into another configuration was merged) */
    g_autoptr(GHashTable) want = rebuild(sw->spec_text, error);
    if (want == NULL)
        return FALSE;
    g_autofree GPtrArray **rows = g_new0(GPtrArray *, sw->total);
    g_autofree guint *from = g_new0(guint, sw->total);
    for (guint p = 0; p < n_parts; p++)
        for (guint i = 0; i < simpar_csv_n_rows(csv[p]); i++) {
            guint64 idx;
            if (!sweep_row_index(csv[p], i, sw->total, &idx, error))
                return FALSE;
            if (!simpar_sweep_row_is(csv[p], i,
                                     g_hash_table_lookup(want, GSIZE_TO_POINTER((gsize) idx)))) {
                g_set_error(
                    error, SIMPAR_SWEEP_ERROR, SIMPAR_SWEEP_ERROR_MERGE,
                    "%s:%u: the row is not the configuration of its index %" G_GUINT64_FORMAT
                    " in the shards' sweep; merge the shards simpar wrote",
                    csv[p]->name, g_array_index(csv[p]->lines, guint, i), idx);
                return FALSE;
            }
            if (!simpar_sweep_row_figures_ok(csv[p], i, csv[p]->name, "a shard simpar wrote",
                                             error))
                return FALSE;
            if (rows[idx] != NULL) {
                g_set_error(error, SIMPAR_SWEEP_ERROR, SIMPAR_SWEEP_ERROR_MERGE,
                            "configuration %" G_GUINT64_FORMAT " is in both %s and %s", idx,
                            csv[from[idx]]->name, csv[p]->name);
                return FALSE;
            }
            rows[idx] = g_ptr_array_index(csv[p]->rows, i), from[idx] = p;
        }
    for (guint64 i = 0; i < sw->total; i++)
        if (rows[i] == NULL) {
            g_set_error(error, SIMPAR_SWEEP_ERROR, SIMPAR_SWEEP_ERROR_MERGE,
                        "configuration %" G_GUINT64_FORMAT
                        " is in no part: shard %" G_GUINT64_FORMAT "/%u is missing or incomplete",
                        i, i % n, n);
            return FALSE;
        }
    return sweep_output(sw, rows, summary, error);
}
