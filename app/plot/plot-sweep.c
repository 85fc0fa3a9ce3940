/* plot-sweep.c - the sweep CSV's plots: scaling and memory (and the reading breakdown shares).
 *
 *   sweep CSV rows (one per configuration)          .dat: one block per mode, x ascending
 *   mode gpus status step_time_s tokens_per_s  ->    # mode 3d
 *   3d   64   ok     1.20        1.1e5                64 1.2 1.1e5      <- min step, max tokens/s
 *   3d   64   ok     0.90        1.5e5                512 ...
 *
 * scaling: per (mode, GPUs), over the rows with status ok, the smallest step time and the
 * largest throughput. memory: per (mode, x), x = q for the grid modes and the tensor-parallel
 * size T for 1-D, the smallest memory per GPU over the rows that carry one (ok, and skipped
 * because they do not fit), and the device memory of the rows. A sweep over several model
 * shapes (model, hidden, layers, seq) gets a series per mode and shape ("3d h=8192").
 */
#include "generators.h"
#include "plot-private.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const char *mode; /* interned */
    double x, y, y2;  /* y: the smallest; y2: the largest */
} SweepPoint;

SimparCsv *
simpar_plot_sweep_load(const char *path, GError **error)
{
    return simpar_csv_read(path, SIMPAR_CSV_DROP_TORN_TAIL, error); /* a sweep may be running */
}

gboolean
simpar_plot_sweep_columns(const SimparCsv *csv, const char *const *names, int *cols, guint n,
                          GError **error)
{
    for (guint i = 0; i < n; i++)
        if (!simpar_csv_require(csv, names[i], &cols[i], error))
            return FALSE;
    return TRUE;
}

GArray *
simpar_plot_sweep_ok_rows(const SimparCsv *csv, int status_col)
{
    GArray *rows = g_array_new(FALSE, FALSE, sizeof(guint));
    for (guint r = 0; r < simpar_csv_n_rows(csv); r++)
        if (g_str_equal(simpar_csv_get(csv, r, status_col), "ok"))
            g_array_append_val(rows, r);
    return rows; /* (transfer full) */
}

/* "model gpt3-175b, preset dgx-a100, dtype bf16": the optional columns whose value every row
 * that has one shares. */
static char *
sweep_context(const SimparCsv *csv)
{
    static const char *const keys[] = {"model", "preset", "dtype"};
    GString *out = g_string_new(NULL);
    for (guint k = 0; k < G_N_ELEMENTS(keys); k++) {
        int c = simpar_csv_column(csv, keys[k]);
        const char *v = "";
        for (guint r = 0; c >= 0 && r < simpar_csv_n_rows(csv) && v != NULL; r++) {
            const char *f = simpar_csv_get(csv, r, c);
            v = v[0] == '\0' ? f : f[0] == '\0' || g_str_equal(v, f) ? v : NULL;
        }
        if (c >= 0 && v != NULL && v[0] != '\0')
            g_string_append_printf(out, "%s%s %s", out->len > 0 ? ", " : "", keys[k], v);
    }
    return g_string_free(out, FALSE); /* (transfer full) */
}

/* ------------------------------------------------------------------------------ points */

static void
sweep_point_add(GArray *points, const char *mode, double x, double y, double y2)
{
    const char *m = g_intern_string(mode);
    for (guint i = 0; i < points->len; i++) {
        SweepPoint *p = &g_array_index(points, SweepPoint, i);
        if (p->mode == m && p->x == x) {
            p->y = MIN(p->y, y), p->y2 = MAX(p->y2, y2);
            return;
        }
    }
    SweepPoint p = {m, x, y, y2};
    g_array_append_val(points, p);
}

/* The modes in the generators table's order (the papers': 1-D, 2-D, 2.5-D, 3-D), any other
 * after them. */
static int
sweep_mode_order(const char *series)
{
    guint n;
    const SimparGenerator *gens = simpar_generators(&n);
    gsize len = strcspn(series, " "); /* "3d" or "3d h=8192" */
    for (guint i = 0; i < n; i++)
        if (strlen(gens[i].name) == len && strncmp(series, gens[i].name, len) == 0)
            return (int) i;
    return (int) n;
}

/* The model shape columns; a sweep over several shapes gets one series per mode and shape. */
static const char *const sweep_shape_names[] = {"model", "hidden", "layers", "seq"};
static const char *const sweep_shape_keys[] = {"", "h=", "L=", "s="};

/* Which shape columns take more than one value over the rows (bit i: sweep_shape_names[i]). */
static guint
sweep_shape_varies(const SimparCsv *csv, int *cols)
{
    guint varies = 0;
    for (guint k = 0; k < G_N_ELEMENTS(sweep_shape_names); k++) {
        cols[k] = simpar_csv_column(csv, sweep_shape_names[k]);
        for (guint r = 1; cols[k] >= 0 && r < simpar_csv_n_rows(csv); r++)
            if (!g_str_equal(simpar_csv_get(csv, r, cols[k]), simpar_csv_get(csv, 0, cols[k])))
                varies |= 1u << k;
    }
    return varies;
}

/* "3d", or "3d h=8192" (one word after the mode: "gpt3-13b:h=5120:L=40") when shapes vary. */
static char *
sweep_series(const SimparCsv *csv, guint r, const char *mode, const int *cols, guint varies)
{
    GString *s = g_string_new(mode);
    for (guint k = 0; k < G_N_ELEMENTS(sweep_shape_names); k++)
        if (varies & (1u << k))
            g_string_append_printf(s, "%s%s%s", s->len > strlen(mode) ? ":" : " ",
                                   sweep_shape_keys[k], simpar_csv_get(csv, r, cols[k]));
    return g_string_free(s, FALSE); /* (transfer full) */
}

static int
sweep_point_cmp(gconstpointer a, gconstpointer b)
{
    const SweepPoint *p = a, *q = b;
    int c = sweep_mode_order(p->mode) - sweep_mode_order(q->mode);
    if (c == 0)
        c = strcmp(p->mode, q->mode);
    return c != 0 ? c : (p->x > q->x) - (p->x < q->x);
}

/* One block per mode ("# mode M" first), blocks apart by two blank lines; `modes` the names. */
static void
sweep_points_write(GArray *points, const char *columns, gboolean with_y2, SimparPlotOut *out)
{
    g_array_sort(points, sweep_point_cmp);
    g_autoptr(GPtrArray) modes = g_ptr_array_new();
    g_string_append_printf(out->data, "# %s\n", columns);
    for (guint i = 0; i < points->len; i++) {
        const SweepPoint *p = &g_array_index(points, SweepPoint, i);
        if (i == 0 || p->mode != g_array_index(points, SweepPoint, i - 1).mode) {
            g_string_append_printf(out->data, "%s# mode %s\n", i > 0 ? "\n\n" : "", p->mode);
            g_ptr_array_add(modes, (gpointer) p->mode);
        }
        g_string_append_printf(out->data, "%.9g %.9g", p->x, p->y);
        if (with_y2)
            g_string_append_printf(out->data, " %.9g", p->y2);
        g_string_append_c(out->data, '\n');
    }
    simpar_plot_var_series(out, (const char *const *) modes->pdata, modes->len);
}

static gboolean
sweep_no_rows(const SimparCsv *csv, const char *what, GError **error)
{
    g_set_error(error, SIMPAR_PLOT_ERROR, SIMPAR_PLOT_ERROR_EMPTY,
                "%s: nothing to plot: no row %s (%u rows)", csv->name, what,
                simpar_csv_n_rows(csv));
    return FALSE;
}

/* ----------------------------------------------------------------------------- scaling */

enum {
    SCALING_STATUS,
    SCALING_MODE,
    SCALING_GPUS,
    SCALING_STEP,
    SCALING_TOKENS,
    SCALING_N
};

gboolean
simpar_plot_scaling_data(const char *input, const SimparPlotOptions *opt, SimparPlotOut *out,
                         GError **error)
{
    static const char *const names[SCALING_N] = {"status", "mode", "gpus", "step_time_s",
                                                 "tokens_per_s"};
    (void) opt;
    int c[SCALING_N];
    g_autoptr(SimparCsv) csv = simpar_plot_sweep_load(input, error);
    if (csv == NULL || !simpar_plot_sweep_columns(csv, names, c, SCALING_N, error))
        return FALSE;
    g_autoptr(GArray) rows = simpar_plot_sweep_ok_rows(csv, c[SCALING_STATUS]);
    g_autoptr(GArray) points = g_array_new(FALSE, FALSE, sizeof(SweepPoint));
    int shape[G_N_ELEMENTS(sweep_shape_names)];
    guint varies = sweep_shape_varies(csv, shape);
    for (guint i = 0; i < rows->len; i++) {
        guint r = g_array_index(rows, guint, i);
        double gpus, step, tokens;
        if (!simpar_csv_get_double(csv, r, c[SCALING_GPUS], &gpus, error) ||
            !simpar_csv_get_double(csv, r, c[SCALING_STEP], &step, error) ||
            !simpar_csv_get_double(csv, r, c[SCALING_TOKENS], &tokens, error))
            return FALSE;
        g_autofree char *series =
            sweep_series(csv, r, simpar_csv_get(csv, r, c[SCALING_MODE]), shape, varies);
        sweep_point_add(points, series, gpus, step, tokens);
    }
    if (points->len == 0)
        return sweep_no_rows(csv, "with status ok", error);
    sweep_points_write(points, "gpus best_step_time_s best_tokens_per_s (status ok rows)", TRUE,
                       out);
    const SweepPoint *ideal = &g_array_index(points, SweepPoint, 0);
    for (guint i = 1; i < points->len; i++) { /* the best throughput at the fewest GPUs */
        const SweepPoint *p = &g_array_index(points, SweepPoint, i);
        if (p->x < ideal->x || (p->x == ideal->x && p->y2 > ideal->y2))
            ideal = p;
    }
    simpar_plot_var_number(out, "ideal_gpus", ideal->x);
    simpar_plot_var_number(out, "ideal_tokens_per_s", ideal->y2);
    g_autofree char *ctx = sweep_context(csv);
    out->title = g_strdup_printf("Scaling%s%s: the best configuration of each mode per GPU count",
                                 ctx[0] != '\0' ? " of " : "", ctx);
    return TRUE;
}

/* ------------------------------------------------------------------------------ memory */

enum {
    MEMORY_STATUS,
    MEMORY_MODE,
    MEMORY_TP,
    MEMORY_Q,
    MEMORY_MEM,
    MEMORY_CAP,
    MEMORY_N
};

/* Adds row r's point when it carries a memory figure; FALSE on a malformed field. */
static gboolean
memory_point(const SimparCsv *csv, guint r, const int *c, const int *shape, guint varies,
             GArray *points, GArray *caps, GError **error)
{
    const char *status = simpar_csv_get(csv, r, c[MEMORY_STATUS]);
    const char *mem_s = simpar_csv_get(csv, r, c[MEMORY_MEM]);
    if ((!g_str_equal(status, "ok") && !g_str_equal(status, "skipped")) || mem_s[0] == '\0')
        return TRUE;
    const char *mode = simpar_csv_get(csv, r, c[MEMORY_MODE]);
    double mem, x, cap;
    if (!simpar_csv_get_double(csv, r, c[MEMORY_MEM], &mem, error))
        return FALSE;
    if (mem <= 0) /* skipped before its memory was known */
        return TRUE;
    const SimparGenerator *gen = simpar_generator_of(mode);
    gboolean line = gen != NULL && gen->grid == SIMPAR_GRID_LINE;
    if (!simpar_csv_get_double(csv, r, c[line ? MEMORY_TP : MEMORY_Q], &x, error) ||
        !simpar_csv_get_double(csv, r, c[MEMORY_CAP], &cap, error))
        return FALSE;
    g_autofree char *series = sweep_series(csv, r, mode, shape, varies);
    sweep_point_add(points, series, x, mem, mem);
    guint i = 0;
    while (i < caps->len && fabs(g_array_index(caps, double, i) - cap) > 1e-6 * cap)
        i++;
    if (i == caps->len)
        g_array_append_val(caps, cap);
    return TRUE;
}

gboolean
simpar_plot_memory_data(const char *input, const SimparPlotOptions *opt, SimparPlotOut *out,
                        GError **error)
{
    static const char *const names[MEMORY_N] = {"status", "mode",    "tp",
                                                "q",      "mem_GiB", "mem_capacity_GiB"};
    (void) opt;
    int c[MEMORY_N];
    g_autoptr(SimparCsv) csv = simpar_plot_sweep_load(input, error);
    if (csv == NULL || !simpar_plot_sweep_columns(csv, names, c, MEMORY_N, error))
        return FALSE;
    g_autoptr(GArray) points = g_array_new(FALSE, FALSE, sizeof(SweepPoint));
    g_autoptr(GArray) caps = g_array_new(FALSE, FALSE, sizeof(double));
    int shape[G_N_ELEMENTS(sweep_shape_names)];
    guint varies = sweep_shape_varies(csv, shape);
    for (guint r = 0; r < simpar_csv_n_rows(csv); r++)
        if (!memory_point(csv, r, c, shape, varies, points, caps, error))
            return FALSE;
    if (points->len == 0)
        return sweep_no_rows(csv, "with a memory figure (mem_GiB, status ok or skipped)", error);
    sweep_points_write(points, "x min_mem_GiB (x = q; 1-D: T)", FALSE, out);
    g_autoptr(GString) cs = g_string_new(NULL);
    for (guint i = 0; i < caps->len; i++)
        g_string_append_printf(cs, "%s%.6g", i > 0 ? " " : "", g_array_index(caps, double, i));
    simpar_plot_var_string(out, "capacities", cs->str);
    g_autofree char *ctx = sweep_context(csv);
    out->title = g_strdup_printf("Memory per GPU%s%s: the smallest of each mode per size",
                                 ctx[0] != '\0' ? " of " : "", ctx);
    return TRUE;
}
