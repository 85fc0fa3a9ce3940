/* plot-breakdown.c - where the step goes: one stacked bar per configuration.
 *
 *   input                                   bars
 *   sweep CSV                               the --top N rows with status ok, by rank
 *   simpar predict --json (an array)        one per simulated mode
 *   simpar validate --json (an object)      measured, predicted
 *
 *   .dat: "label" step_s compute_s tp_intra_s ... other_s    (a column per part present)
 *
 * Parts: compute, tensor-parallel exposed communication inside a node and across nodes, the
 * pipeline bubble, pipeline p2p, exposed data-parallel communication, the optimizer, and what
 * is left of the step ("other", when positive). From JSON the communication comes from
 * exposed_comm_by_axis: axis "pp" is pipeline p2p, "dp" data parallelism, any other axis the
 * tensor-parallel groups, split by scope.
 */
#include "generators.h"
#include "plot-private.h"
#include <math.h>
#include <string.h>

enum {
    PART_COMPUTE,
    PART_TP_INTRA,
    PART_TP_INTER,
    PART_BUBBLE,
    PART_PP_P2P,
    PART_DP,
    PART_OPTIMIZER,
    PART_OTHER,
    N_PARTS
};

static const struct {
    const char *title, *column; /* the legend entry; the sweep CSV's column */
} breakdown_parts[N_PARTS] = {
    {"compute", "compute_s"},
    {"TP comm. intra-node", "tp_exposed_intra_s"},
    {"TP comm. inter-node", "tp_exposed_inter_s"},
    {"pipeline bubble", "bubble_s"},
    {"pipeline p2p", "pp_p2p_s"},
    {"DP comm.", "dp_exposed_s"},
    {"optimizer", "optimizer_s"},
    {"other", NULL},
};

typedef struct {
    char *label;
    guint row; /* sweep CSV: the row */
    double rank, step_s, part[N_PARTS];
} BreakdownBar;

static void
breakdown_bar_clear(gpointer p)
{
    g_free(((BreakdownBar *) p)->label);
}

/* What the parts leave of the step, when positive. */
static void
breakdown_bar_other(BreakdownBar *b)
{
    double sum = 0;
    for (guint i = 0; i < PART_OTHER; i++)
        sum += b->part[i];
    b->part[PART_OTHER] = b->step_s - sum > 1e-9 * b->step_s ? b->step_s - sum : 0;
}

/* The bars' .dat, with a column for each part that some bar has. */
static void
breakdown_write(GArray *bars, SimparPlotOut *out)
{
    gboolean used[N_PARTS] = {FALSE};
    const char *names[N_PARTS];
    guint n = 0;
    for (guint i = 0; i < bars->len; i++)
        for (guint p = 0; p < N_PARTS; p++)
            used[p] = used[p] || g_array_index(bars, BreakdownBar, i).part[p] > 0;
    g_string_append(out->data, "# label step_s");
    for (guint p = 0; p < N_PARTS; p++)
        if (used[p]) {
            names[n++] = breakdown_parts[p].title;
            g_string_append_printf(out->data, " '%s'", breakdown_parts[p].title);
        }
    g_string_append_c(out->data, '\n');
    for (guint i = 0; i < bars->len; i++) {
        const BreakdownBar *b = &g_array_index(bars, BreakdownBar, i);
        simpar_plot_append_label(out->data, b->label, SIMPAR_PLOT_LABEL_MAX);
        g_string_append_printf(out->data, " %.9g", b->step_s);
        for (guint p = 0; p < N_PARTS; p++)
            if (used[p])
                g_string_append_printf(out->data, " %.9g", b->part[p]);
        g_string_append_c(out->data, '\n');
    }
    simpar_plot_var_series(out, names, n);
    simpar_plot_var_number(out, "n_bars", bars->len);
}

/* ------------------------------------------------------------------------------ sweep CSV */

enum {
    COL_STATUS,
    COL_MODE,
    COL_GPUS,
    COL_TP,
    COL_Q,
    COL_DEPTH,
    COL_PP,
    COL_DP,
    COL_STEP,
    COL_RANK,
    N_COLS
};

static const char *const breakdown_columns[N_COLS] = {
    "status", "mode", "gpus", "tp", "q", "depth", "pp", "dp", "step_time_s", "rank"};

/* "3d q=4 P=2 D=4 G=128" (1-D: T=8; 2.5-D: q=2 d=4). */
static char *
breakdown_csv_label(const SimparCsv *csv, guint r, const int *c)
{
    const char *mode = simpar_csv_get(csv, r, c[COL_MODE]);
    GString *s = g_string_new(mode);
    const SimparGenerator *gen = simpar_generator_of(mode);
    if (gen != NULL && gen->grid == SIMPAR_GRID_LINE)
        g_string_append_printf(s, " T=%s", simpar_csv_get(csv, r, c[COL_TP]));
    else
        g_string_append_printf(s, " q=%s", simpar_csv_get(csv, r, c[COL_Q]));
    if (gen != NULL && gen->grid == SIMPAR_GRID_LAYERS)
        g_string_append_printf(s, " d=%s", simpar_csv_get(csv, r, c[COL_DEPTH]));
    g_string_append_printf(s, " P=%s D=%s G=%s", simpar_csv_get(csv, r, c[COL_PP]),
                           simpar_csv_get(csv, r, c[COL_DP]), simpar_csv_get(csv, r, c[COL_GPUS]));
    return g_string_free(s, FALSE); /* (transfer full) */
}

/* What tells bar i apart from the bars with the same label: the fields among these in which
 * it differs from one of them ("gpipe m=4"), else its rank; NULL when no bar shares its label. */
static char *
breakdown_csv_suffix(GArray *bars, guint i, const SimparCsv *csv)
{
    static const char *const more[] = {"schedule",  "virtual_stages", "micro_batch", "global_batch",
                                       "recompute", "zero",           "backend"};
    static const char *const tag[] = {"", "v=", "m=", "B=", "recompute ", "ZeRO-", ""};
    const BreakdownBar *a = &g_array_index(bars, BreakdownBar, i);
    gboolean twin = FALSE;
    GString *s = g_string_new(NULL);
    for (guint k = 0; k < G_N_ELEMENTS(more); k++) {
        int c = simpar_csv_column(csv, more[k]);
        gboolean differs = FALSE;
        for (guint j = 0; j < bars->len; j++) {
            const BreakdownBar *b = &g_array_index(bars, BreakdownBar, j);
            if (j == i || !g_str_equal(a->label, b->label))
                continue;
            twin = TRUE;
            differs = differs || (c >= 0 && !g_str_equal(simpar_csv_get(csv, a->row, c),
                                                         simpar_csv_get(csv, b->row, c)));
        }
        if (differs)
            g_string_append_printf(s, " %s%s", tag[k], simpar_csv_get(csv, a->row, c));
    }
    if (twin && s->len == 0)
        g_string_append_printf(s, " #%g", a->rank);
    return g_string_free(s, !twin); /* (transfer full) */
}

static void
breakdown_csv_unique(GArray *bars, const SimparCsv *csv)
{
    g_autoptr(GPtrArray) suffix = g_ptr_array_new_with_free_func(g_free);
    for (guint i = 0; i < bars->len; i++)
        g_ptr_array_add(suffix, breakdown_csv_suffix(bars, i, csv));
    for (guint i = 0; i < bars->len; i++) {
        BreakdownBar *b = &g_array_index(bars, BreakdownBar, i);
        if (suffix->pdata[i] != NULL) {
            char *label = g_strconcat(b->label, suffix->pdata[i], NULL);
            g_free(b->label);
            b->label = label;
        }
    }
}

static int
breakdown_bar_cmp(gconstpointer a, gconstpointer b)
{
    const BreakdownBar *x = a, *y = b;
    int c = (x->rank > y->rank) - (x->rank < y->rank);
    return c != 0 ? c : (x->step_s > y->step_s) - (x->step_s < y->step_s);
}

static gboolean
breakdown_csv_bar(const SimparCsv *csv, guint r, const int *c, const int *parts, BreakdownBar *b,
                  GError **error)
{
    *b = (BreakdownBar){.row = r, .rank = INFINITY};
    const char *rank = simpar_csv_get(csv, r, c[COL_RANK]);
    if (!simpar_csv_get_double(csv, r, c[COL_STEP], &b->step_s, error) ||
        (rank[0] != '\0' && !simpar_csv_get_double(csv, r, c[COL_RANK], &b->rank, error)))
        return FALSE;
    for (guint p = 0; p < PART_OTHER; p++)
        if (!simpar_csv_get_double(csv, r, parts[p], &b->part[p], error))
            return FALSE;
    breakdown_bar_other(b);
    b->label = breakdown_csv_label(csv, r, c);
    return TRUE;
}

static gboolean
breakdown_csv(const SimparCsv *csv, const SimparPlotOptions *opt, GArray *bars, SimparPlotOut *out,
              GError **error)
{
    int c[N_COLS], parts[PART_OTHER];
    if (!simpar_plot_sweep_columns(csv, breakdown_columns, c, N_COLS, error))
        return FALSE;
    for (guint p = 0; p < PART_OTHER; p++)
        if (!simpar_csv_require(csv, breakdown_parts[p].column, &parts[p], error))
            return FALSE;
    g_autoptr(GArray) rows = simpar_plot_sweep_ok_rows(csv, c[COL_STATUS]);
    for (guint i = 0; i < rows->len; i++) {
        BreakdownBar b;
        if (!breakdown_csv_bar(csv, g_array_index(rows, guint, i), c, parts, &b, error))
            return FALSE;
        g_array_append_val(bars, b);
    }
    g_array_sort(bars, breakdown_bar_cmp);
    if (bars->len > opt->top)
        g_array_set_size(bars, opt->top);
    breakdown_csv_unique(bars, csv);
    simpar_plot_var_string(out, "ylabel_text",
                           "configuration (P = pipeline stages, D = data-parallel replicas, "
                           "G = GPUs)");
    g_autofree char *base = g_path_get_basename(csv->name);
    out->title = g_strdup_printf("Where the step goes: the %u best configurations (by rank) of %s",
                                 bars->len, base);
    return TRUE;
}

/* ------------------------------------------------------------------------------------ JSON */

/* The exposed communication of a row by axis: "pp", "dp", tensor-parallel axes by scope. */
static gboolean
breakdown_json_axes(JsonObject *o, BreakdownBar *b, const char *where, GError **error)
{
    JsonNode *n = json_object_get_member(o, "exposed_comm_by_axis");
    if (n == NULL)
        return TRUE;
    JsonArray *axes = JSON_NODE_HOLDS_ARRAY(n) ? json_node_get_array(n) : NULL;
    for (guint i = 0; axes != NULL && i < json_array_get_length(axes); i++) {
        JsonNode *an = json_array_get_element(axes, i);
        JsonObject *a = JSON_NODE_HOLDS_OBJECT(an) ? json_node_get_object(an) : NULL;
        const char *axis = a != NULL ? simpar_plot_json_string(a, "axis") : NULL;
        const char *scope = a != NULL ? simpar_plot_json_string(a, "scope") : NULL;
        double s = a != NULL ? simpar_plot_json_number(a, "exposed_s") : NAN;
        if (axis == NULL || scope == NULL || !isfinite(s)) {
            axes = NULL;
            break;
        }
        b->part[g_str_equal(axis, "pp")            ? PART_PP_P2P
                : g_str_equal(axis, "dp")          ? PART_DP
                : g_str_equal(scope, "inter-node") ? PART_TP_INTER
                                                   : PART_TP_INTRA] += s;
    }
    if (axes == NULL) {
        g_set_error(error, SIMPAR_PLOT_ERROR, SIMPAR_PLOT_ERROR_INPUT,
                    "%s.exposed_comm_by_axis: expected an array of objects with axis, scope and "
                    "exposed_s",
                    where);
        return FALSE;
    }
    return TRUE;
}

/* A row of the predict --json schema; *use = FALSE for a mode that was not simulated. */
static gboolean
breakdown_json_bar(JsonNode *n, const char *label, const char *where, BreakdownBar *b,
                   gboolean *use, GError **error)
{
    JsonObject *o = JSON_NODE_HOLDS_OBJECT(n) ? json_node_get_object(n) : NULL;
    *b = (BreakdownBar){.rank = INFINITY};
    JsonNode *sim = o != NULL ? json_object_get_member(o, "simulated") : NULL;
    *use = o != NULL &&
           (sim == NULL || !JSON_NODE_HOLDS_VALUE(sim) ||
            json_node_get_value_type(sim) != G_TYPE_BOOLEAN || json_node_get_boolean(sim));
    if (o != NULL && !*use)
        return TRUE;
    if (o == NULL || simpar_plot_json_string(o, "mode") == NULL ||
        !isfinite(b->step_s = simpar_plot_json_number(o, "step_time_s"))) {
        g_set_error(error, SIMPAR_PLOT_ERROR, SIMPAR_PLOT_ERROR_INPUT,
                    "%s: expected a row of simpar predict --json (mode, step_time_s)", where);
        return FALSE;
    }
    static const char *const keys[] = {
        [PART_COMPUTE] = "compute_s", [PART_BUBBLE] = "bubble_s", [PART_OPTIMIZER] = "optimizer_s"};
    for (guint p = 0; p < G_N_ELEMENTS(keys); p++) {
        double v = keys[p] != NULL ? simpar_plot_json_number(o, keys[p]) : NAN;
        b->part[p] = isfinite(v) ? v : 0;
    }
    if (!breakdown_json_axes(o, b, where, error))
        return FALSE;
    breakdown_bar_other(b);
    if (label != NULL) {
        b->label = g_strdup(label);
        return TRUE;
    }
    const char *grid = simpar_plot_json_string(o, "grid");
    b->label = g_strdup_printf("%s %s", simpar_plot_json_string(o, "mode"), grid ? grid : "");
    if (g_str_has_prefix(grid != NULL ? grid : "", "P=")) /* 1-D's size, as files before 0.1.0 */
        b->label[strlen(b->label) - strlen(grid)] = 'T';
    return TRUE;
}

/* simpar predict --json: one bar per simulated mode. */
static gboolean
breakdown_predict(JsonArray *rows, const char *input, GArray *bars, SimparPlotOut *out,
                  GError **error)
{
    const char *split = NULL;
    double gpus = NAN;
    g_autoptr(GString) skipped = g_string_new(NULL);
    for (guint i = 0; i < json_array_get_length(rows); i++) {
        g_autofree char *where = g_strdup_printf("%s: [%u]", input, i);
        BreakdownBar b;
        gboolean use;
        if (!breakdown_json_bar(json_array_get_element(rows, i), NULL, where, &b, &use, error))
            return FALSE;
        JsonObject *o = json_array_get_object_element(rows, i);
        const char *mode = simpar_plot_json_string(o, "mode");
        if (!use && mode != NULL)
            g_string_append_printf(skipped, "%s%s", skipped->len > 0 ? ", " : "", mode);
        if (!use)
            continue;
        g_array_append_val(bars, b);
        split = split != NULL ? split : simpar_plot_json_string(o, "split");
        gpus = simpar_plot_json_number(o, "gpus");
    }
    const char *rest = split != NULL && strchr(split, ' ') != NULL ? strchr(split, ' ') + 1 : "";
    out->title = g_strdup_printf(
        "Where the step goes, per tensor-parallel mode: %.0f GPUs %s%s%s%s", gpus, rest,
        skipped->len > 0 ? " (not simulated: " : "", skipped->str, skipped->len > 0 ? ")" : "");
    simpar_plot_var_string(out, "ylabel_text", "tensor-parallel mode and grid");
    return TRUE;
}

/* simpar validate --json: the measured row and the predicted row. */
static gboolean
breakdown_validate(JsonObject *o, const char *input, GArray *bars, SimparPlotOut *out,
                   GError **error)
{
    static const char *const sides[] = {"measured", "predicted"};
    for (guint i = 0; i < G_N_ELEMENTS(sides); i++) {
        JsonNode *n = json_object_get_member(o, sides[i]);
        g_autofree char *where = g_strdup_printf("%s: \"%s\"", input, sides[i]);
        const char *who = simpar_plot_json_string(o, i == 0 ? "executor" : "backend");
        g_autofree char *label = g_strdup_printf("%s (%s)", sides[i], who != NULL ? who : "?");
        BreakdownBar b;
        gboolean use;
        if (n == NULL || !breakdown_json_bar(n, label, where, &b, &use, error)) {
            if (n == NULL)
                g_set_error(error, SIMPAR_PLOT_ERROR, SIMPAR_PLOT_ERROR_INPUT,
                            "%s: no member \"%s\" (expected simpar predict or validate --json)",
                            input, sides[i]);
            return FALSE;
        }
        g_array_append_val(bars, b);
    }
    const char *job = simpar_plot_json_string(o, "job");
    out->title = g_strdup_printf("Where the step goes: measured against predicted, %s",
                                 job != NULL ? job : input);
    simpar_plot_var_string(out, "ylabel_text", "run");
    return TRUE;
}

/* ------------------------------------------------------------------------------ the kind */

gboolean
simpar_plot_breakdown_data(const char *input, const SimparPlotOptions *opt, SimparPlotOut *out,
                           GError **error)
{
    g_autofree char *text = NULL;
    gsize len;
    if (!simpar_file_read(input, SIMPAR_JSON_LARGE_MAX, &text, &len, error))
        return FALSE;
    g_autoptr(GArray) bars = g_array_new(FALSE, TRUE, sizeof(BreakdownBar));
    g_array_set_clear_func(bars, breakdown_bar_clear);
    const char *first = text + strspn(text, " \t\r\n");
    gboolean ok;
    if (*first == '[' || *first == '{') {
        g_autoptr(JsonNode) root = simpar_plot_parse_json(text, len, input, error);
        ok = root != NULL &&
             (JSON_NODE_HOLDS_ARRAY(root)
                  ? breakdown_predict(json_node_get_array(root), input, bars, out, error)
                  : breakdown_validate(json_node_get_object(root), input, bars, out, error));
    } else {
        g_autoptr(SimparCsv) csv =
            simpar_csv_parse(text, len, input, SIMPAR_CSV_DROP_TORN_TAIL, error);
        ok = csv != NULL && breakdown_csv(csv, opt, bars, out, error);
    }
    if (ok && bars->len == 0) {
        g_set_error(error, SIMPAR_PLOT_ERROR, SIMPAR_PLOT_ERROR_EMPTY,
                    "%s: nothing to plot: no simulated configuration (status ok)", input);
        return FALSE;
    }
    if (ok)
        breakdown_write(bars, out);
    return ok;
}
