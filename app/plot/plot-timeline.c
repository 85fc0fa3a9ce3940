/* plot-timeline.c - one step as a Gantt chart, from a Chrome trace (simpar --trace, simpar
 * validate --trace).
 *
 *   trace: process "3d rank 5 (GPU 5)" (pid), its threads "compute", "comm", ... (tid), and
 *          complete events ("ph": "X") with ts and dur in microseconds, cat = the op kind
 *   mode:  the process name before " rank " ("3d", "predicted"); --mode picks one (default the
 *          first in the file), --ranks A..B the ranks (default the first 16 ranks the trace
 *          holds of the mode: a trace of one rank per role holds ranks 0, 128, ...)
 *   .dat:  one block per op class: "y start end" in ms (us for a step under 1 ms) from the first
 *          event drawn, y = the track (rank, stream) counted from the top; one block of track
 *          names, "y name"; then, when some box is wide enough to hold its name, one block of
 *          labels, "x y name". Names from the trace reach gnuplot only as these data.
 */
#include "cli.h"
#include "plot-private.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The legend, in this order; the colours are plots/timeline.gp's. */
enum {
    CLASS_FWD,
    CLASS_BWD,
    CLASS_GEMM,
    CLASS_ATTENTION,
    CLASS_KERNELS,
    CLASS_EMBED,
    CLASS_OPTIMIZER,
    CLASS_TP,
    CLASS_CP,
    CLASS_DP,
    CLASS_P2P,
    CLASS_WAIT,
    CLASS_OTHER,
    N_CLASSES
};

static const char *const timeline_classes[N_CLASSES] = {
    "forward (layer blocks)",
    "backward (layer blocks)",
    "GEMM",
    "attention",
    "other kernels",
    "embedding + loss",
    "optimizer",
    "TP collective",
    "CP collective",
    "DP collective",
    "pipeline p2p",
    "waiting",
    "other",
};

typedef struct {
    char *mode;
    guint rank;
} TimelineProc;

/* The largest ts or dur taken, in microseconds (31 years): sums and differences stay exact
 * enough and finite. */
#define TIMELINE_MAX_US 1e15

typedef struct {
    guint rank;
    gint32 pid, tid;
    char *label; /* "rank 3 compute" */
} TimelineTrack;

typedef struct {
    guint track, klass;
    double start_us, end_us;
    const char *name; /* borrowed from the trace */
} TimelineBox;

typedef struct {
    const char *input;
    JsonArray *events;
    GHashTable *procs;   /* pid -> TimelineProc */
    GHashTable *threads; /* timeline_key(pid, tid) -> thread name (borrowed) */
    GPtrArray *modes;    /* const char * (the first process's), in order of first appearance */
    GArray *tracks;      /* TimelineTrack */
    GArray *boxes;       /* TimelineBox */
} Timeline;

static void
timeline_proc_free(gpointer p)
{
    g_free(((TimelineProc *) p)->mode);
    g_free(p);
}

static void
timeline_track_clear(gpointer p)
{
    g_free(((TimelineTrack *) p)->label);
}

static void
timeline_clear(Timeline *t)
{
    g_clear_pointer(&t->procs, g_hash_table_unref);
    g_clear_pointer(&t->threads, g_hash_table_unref);
    g_clear_pointer(&t->modes, g_ptr_array_unref);
    g_clear_pointer(&t->tracks, g_array_unref);
    g_clear_pointer(&t->boxes, g_array_unref);
}

/* The class of an event of kind `cat` named `name`, a collective's group axis `axis` (or
 * NULL: then by its name). */
static guint
timeline_class(const char *cat, const char *name, const char *axis)
{
    static const struct {
        const char *prefix;
        guint klass;
    } kinds[] = {
        {"gemm", CLASS_GEMM},    {"attention", CLASS_ATTENTION}, {"embed", CLASS_EMBED},
        {"xent", CLASS_EMBED},   {"adam", CLASS_OPTIMIZER},      {"send", CLASS_P2P},
        {"recv", CLASS_P2P},     {"ln-", CLASS_KERNELS},         {"bias-", CLASS_KERNELS},
        {"gelu", CLASS_KERNELS}, {"dropout", CLASS_KERNELS},     {"add", CLASS_KERNELS},
    };

    if (g_str_equal(cat, "wait"))
        return CLASS_WAIT;
    if (g_str_equal(cat, "block"))
        return strstr(name, "bwd") != NULL ? CLASS_BWD : CLASS_FWD;
    if (g_str_equal(cat, "collective")) {
        const char *by = axis != NULL ? axis : name;
        return g_str_has_prefix(by, "dp")   ? CLASS_DP
               : g_str_has_prefix(by, "cp") ? CLASS_CP
                                            : CLASS_TP;
    }
    for (guint i = 0; i < G_N_ELEMENTS(kinds); i++)
        if (g_str_has_prefix(cat, kinds[i].prefix))
            return kinds[i].klass;
    return CLASS_OTHER;
}

/* ------------------------------------------------------------------------------ reading */

static gboolean
timeline_bad(const Timeline *t, guint i, const char *what, GError **error)
{
    g_set_error(error, SIMPAR_PLOT_ERROR, SIMPAR_PLOT_ERROR_INPUT, "%s: traceEvents[%u]: %s",
                t->input, i, what);
    return FALSE;
}

/* An event's pid or tid: an integer of 32 bits, as simpar and Chrome write them. */
static gboolean
timeline_id(JsonObject *e, const char *key, gint32 *out)
{
    double v = simpar_plot_json_number(e, key);
    if (!(v >= G_MININT32 && v <= G_MAXINT32) || v != floor(v))
        return FALSE;
    *out = (gint32) v;
    return TRUE;
}

static gint64
timeline_key(gint32 pid, gint32 tid)
{
    return (gint64) ((guint64) (guint32) pid << 32 | (guint32) tid);
}

/* A metadata event: the process's mode and rank ("3d rank 5 (GPU 5)"), or a thread's name. */
static void
timeline_meta(Timeline *t, JsonObject *e, gint32 pid, gint32 tid)
{
    const char *what = simpar_plot_json_string(e, "name");
    JsonNode *args = json_object_get_member(e, "args");
    const char *name = args != NULL && JSON_NODE_HOLDS_OBJECT(args)
                           ? simpar_plot_json_string(json_node_get_object(args), "name")
                           : NULL;
    if (what == NULL || name == NULL)
        return;
    if (g_str_equal(what, "thread_name")) {
        gint64 *key = g_new(gint64, 1);
        *key = timeline_key(pid, tid);
        g_hash_table_replace(t->threads, key, (gpointer) name);
    } else if (g_str_equal(what, "process_name")) {
        TimelineProc *p = g_new0(TimelineProc, 1);
        const char *r = g_str_has_prefix(name, "rank ") ? name : strstr(name, " rank ");
        g_autofree char *mode = r != NULL ? g_strndup(name, (gsize) (r - name)) : g_strdup(name);
        p->mode = g_steal_pointer(&mode);
        guint64 rank =
            r != NULL ? g_ascii_strtoull(strstr(r, "rank ") + 5, NULL, 10) : (guint64) MAX(pid, 0);
        p->rank = (guint) MIN(rank, G_MAXUINT);
        g_hash_table_replace(t->procs, GINT_TO_POINTER(pid), p);
    }
}

/* The metadata of every process and thread, then the modes in order. */
static gboolean
timeline_read_meta(Timeline *t, GError **error)
{
    for (guint i = 0; i < json_array_get_length(t->events); i++) {
        JsonNode *n = json_array_get_element(t->events, i);
        if (!JSON_NODE_HOLDS_OBJECT(n))
            return timeline_bad(t, i, "expected an object", error);
        JsonObject *e = json_node_get_object(n);
        const char *ph = simpar_plot_json_string(e, "ph");
        gint32 pid, tid;
        if (ph != NULL && g_str_equal(ph, "M") && timeline_id(e, "pid", &pid) &&
            timeline_id(e, "tid", &tid))
            timeline_meta(t, e, pid, tid);
    }
    for (guint i = 0; i < json_array_get_length(t->events); i++) {
        gint32 pid;
        TimelineProc *p = timeline_id(json_array_get_object_element(t->events, i), "pid", &pid)
                              ? g_hash_table_lookup(t->procs, GINT_TO_POINTER(pid))
                              : NULL;
        if (p != NULL && !g_ptr_array_find_with_equal_func(t->modes, p->mode, g_str_equal, NULL))
            g_ptr_array_add(t->modes, (gpointer) p->mode);
    }
    return TRUE;
}

/* "1d, 2d, 2.5d, 3d" */
static char *
timeline_modes(const Timeline *t)
{
    GString *out = g_string_new(NULL);
    for (guint i = 0; i < t->modes->len; i++)
        g_string_append_printf(out, "%s%s", i > 0 ? ", " : "",
                               (const char *) g_ptr_array_index(t->modes, i));
    return g_string_free(out, FALSE); /* (transfer full) */
}

static const char *
timeline_pick_mode(const Timeline *t, const SimparPlotOptions *opt, GError **error)
{
    if (t->modes->len == 0) {
        g_set_error(error, SIMPAR_PLOT_ERROR, SIMPAR_PLOT_ERROR_INPUT,
                    "%s: no process names (\"ph\": \"M\", \"process_name\") in traceEvents: not a "
                    "simpar --trace file?",
                    t->input);
        return NULL;
    }
    if (opt->mode == NULL)
        return g_ptr_array_index(t->modes, 0);
    guint i;
    if (g_ptr_array_find_with_equal_func(t->modes, opt->mode, g_str_equal, &i))
        return g_ptr_array_index(t->modes, i);
    g_autofree char *valid = timeline_modes(t);
    g_set_error(error, SIMPAR_CLI_ERROR, SIMPAR_CLI_ERROR_USAGE, "--mode %s: not in %s (modes: %s)",
                opt->mode, t->input, valid);
    return NULL;
}

static guint
timeline_track(Timeline *t, guint rank, gint32 pid, gint32 tid)
{
    for (guint i = 0; i < t->tracks->len; i++) {
        const TimelineTrack *k = &g_array_index(t->tracks, TimelineTrack, i);
        if (k->pid == pid && k->tid == tid)
            return i;
    }
    gint64 key = timeline_key(pid, tid);
    const char *stream = g_hash_table_lookup(t->threads, &key);
    TimelineTrack k = {rank, pid, tid, NULL};
    k.label = stream != NULL ? g_strdup_printf("rank %u %s", rank, stream)
                             : g_strdup_printf("rank %u stream %d", rank, tid);
    g_array_append_val(t->tracks, k);
    return t->tracks->len - 1;
}

static gint
timeline_uint_cmp(gconstpointer a, gconstpointer b)
{
    guint x = *(const guint *) a, y = *(const guint *) b;
    return x < y ? -1 : x > y;
}

/* Without --ranks: the first 16 ranks of `mode` in the trace, as a set. */
static GHashTable *
timeline_default_ranks(const Timeline *t, const char *mode)
{
    g_autoptr(GArray) ranks = g_array_new(FALSE, FALSE, sizeof(guint));
    GHashTableIter it;
    gpointer pid, value;
    g_hash_table_iter_init(&it, t->procs);
    while (g_hash_table_iter_next(&it, &pid, &value)) {
        const TimelineProc *p = value;
        if (g_str_equal(p->mode, mode))
            g_array_append_val(ranks, p->rank);
    }
    g_array_sort(ranks, timeline_uint_cmp);
    GHashTable *set = g_hash_table_new(NULL, NULL);
    for (guint i = 0; i < ranks->len && g_hash_table_size(set) < 16; i++)
        g_hash_table_add(set, GUINT_TO_POINTER(g_array_index(ranks, guint, i) + 1));
    return set; /* (transfer full) */
}

/* The complete events of `mode` on the chosen ranks, as boxes. */
static gboolean
timeline_read_boxes(Timeline *t, const char *mode, const SimparPlotOptions *opt, GError **error)
{
    g_autoptr(GHashTable) chosen = opt->ranks_given ? NULL : timeline_default_ranks(t, mode);
    for (guint i = 0; i < json_array_get_length(t->events); i++) {
        JsonObject *e = json_array_get_object_element(t->events, i);
        const char *ph = simpar_plot_json_string(e, "ph");
        if (ph == NULL || !g_str_equal(ph, "X"))
            continue;
        gint32 pid, tid;
        double ts = simpar_plot_json_number(e, "ts"), dur = simpar_plot_json_number(e, "dur");
        if (!timeline_id(e, "pid", &pid) || !timeline_id(e, "tid", &tid) ||
            !(fabs(ts) <= TIMELINE_MAX_US) || !(fabs(dur) <= TIMELINE_MAX_US))
            return timeline_bad(t, i,
                                "a complete event (\"ph\": \"X\") needs pid and tid (integers "
                                "of 32 bits), ts and dur (microseconds, at most 1e15 in size)",
                                error);
        TimelineProc *p = g_hash_table_lookup(t->procs, GINT_TO_POINTER(pid));
        if (p == NULL || !g_str_equal(p->mode, mode) || dur <= 0 ||
            (chosen != NULL ? !g_hash_table_contains(chosen, GUINT_TO_POINTER(p->rank + 1))
                            : p->rank < opt->rank_first || p->rank > opt->rank_last))
            continue;
        const char *cat = simpar_plot_json_string(e, "cat"), *name, *axis = NULL;
        name = simpar_plot_json_string(e, "name");
        JsonNode *args = json_object_get_member(e, "args");
        if (args != NULL && JSON_NODE_HOLDS_OBJECT(args))
            axis = simpar_plot_json_string(json_node_get_object(args), "axis");
        TimelineBox b = {timeline_track(t, p->rank, pid, tid),
                         timeline_class(cat != NULL ? cat : "", name != NULL ? name : "", axis), ts,
                         ts + dur, name != NULL ? name : ""};
        g_array_append_val(t->boxes, b);
    }
    return TRUE;
}

/* ------------------------------------------------------------------------------ writing */

static int
timeline_track_cmp(gconstpointer a, gconstpointer b, gpointer data)
{
    const TimelineTrack *tracks = data;
    const TimelineTrack *x = &tracks[*(const guint *) a], *y = &tracks[*(const guint *) b];
    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    return (x->tid > y->tid) - (x->tid < y->tid);
}

/* Each track's row from the top (rank, then stream), and the rows between two ranks
 * (rank_bounds, "2.5 5.5"). */
static guint *
timeline_rows(const Timeline *t, SimparPlotOut *out)
{
    guint n = t->tracks->len;
    g_autofree guint *order = g_new(guint, n);
    guint *row = g_new(guint, n);
    for (guint i = 0; i < n; i++)
        order[i] = i;
    g_qsort_with_data(order, (gint) n, sizeof(guint), timeline_track_cmp, t->tracks->data);
    g_autoptr(GString) bounds = g_string_new(NULL);
    for (guint i = 0; i < n; i++) {
        const TimelineTrack *k = &g_array_index(t->tracks, TimelineTrack, order[i]);
        row[order[i]] = i;
        if (i > 0 && k->rank != g_array_index(t->tracks, TimelineTrack, order[i - 1]).rank)
            g_string_append_printf(bounds, "%s%u.5", bounds->len > 0 ? " " : "", i - 1);
    }
    simpar_plot_var_string(out, "rank_bounds", bounds->str);
    simpar_plot_var_number(out, "n_tracks", n);
    return row; /* (transfer full) */
}

/* The tracks' names, which the script reads as y tic labels: "y name", from the top. */
static void
timeline_track_names(const Timeline *t, const guint *row, SimparPlotOut *out)
{
    guint n = t->tracks->len;
    g_autofree guint *at = g_new(guint, n);
    for (guint i = 0; i < n; i++)
        at[row[i]] = i;
    g_string_append(out->data, "\n\n# tracks: y name\n");
    for (guint y = 0; y < n; y++) {
        g_string_append_printf(out->data, "%u ", y);
        simpar_plot_append_label(out->data, g_array_index(t->tracks, TimelineTrack, at[y]).label,
                                 SIMPAR_PLOT_TRACK_MAX);
        g_string_append_c(out->data, '\n');
    }
}

/* The boxes wide enough to hold their names, as labels: "x y name" (no block when none is). */
static void
timeline_labels(const Timeline *t, const guint *row, double t0, double scale, double span,
                SimparPlotOut *out)
{
    guint n = 0;
    for (guint i = 0; i < t->boxes->len && n < 200; i++) {
        const TimelineBox *b = &g_array_index(t->boxes, TimelineBox, i);
        double w = (b->end_us - b->start_us) * scale;
        if (b->name[0] == '\0' || w < (strlen(b->name) + 2) * span / 140)
            continue;
        if (n == 0)
            g_string_append(out->data, "\n\n# labels: x y name\n");
        g_string_append_printf(out->data, "%.9g %u ", ((b->start_us + b->end_us) / 2 - t0) * scale,
                               row[b->track]);
        simpar_plot_append_label(out->data, b->name, SIMPAR_PLOT_LABEL_MAX);
        g_string_append_c(out->data, '\n');
        n++;
    }
    simpar_plot_var_number(out, "n_labels", n);
}

static void
timeline_write(const Timeline *t, SimparPlotOut *out)
{
    g_autofree guint *row = timeline_rows(t, out);
    double t0 = INFINITY, t1 = -INFINITY;
    for (guint i = 0; i < t->boxes->len; i++) {
        const TimelineBox *b = &g_array_index(t->boxes, TimelineBox, i);
        t0 = MIN(t0, b->start_us), t1 = MAX(t1, b->end_us);
    }
    gboolean us = t1 - t0 < 1000;
    double scale = us ? 1 : 1e-3;
    const char *names[N_CLASSES];
    guint n = 0;
    g_string_append_printf(out->data, "# track start_%s end_%s, one block per op class\n",
                           us ? "us" : "ms", us ? "us" : "ms");
    for (guint k = 0; k < N_CLASSES; k++) {
        gboolean first = TRUE;
        for (guint i = 0; i < t->boxes->len; i++) {
            const TimelineBox *b = &g_array_index(t->boxes, TimelineBox, i);
            if (b->klass != k)
                continue;
            if (first)
                g_string_append_printf(out->data, "%s# %s\n", n > 0 ? "\n\n" : "",
                                       timeline_classes[k]);
            first = FALSE;
            g_string_append_printf(out->data, "%u %.9g %.9g\n", row[b->track],
                                   (b->start_us - t0) * scale, (b->end_us - t0) * scale);
        }
        if (!first)
            names[n++] = timeline_classes[k];
    }
    timeline_track_names(t, row, out);
    timeline_labels(t, row, t0, scale, (t1 - t0) * scale, out);
    simpar_plot_var_series(out, names, n);
    simpar_plot_var_string(out, "time_unit", us ? "us" : "ms");
    simpar_plot_var_number(out, "height", CLAMP(160 + 24 * t->tracks->len, 600, 2400));
}

/* ------------------------------------------------------------------------------ the kind */

static JsonArray *
timeline_events(JsonNode *root, const char *input, GError **error)
{
    JsonNode *n = root;
    if (JSON_NODE_HOLDS_OBJECT(root))
        n = json_object_get_member(json_node_get_object(root), "traceEvents");
    if (n == NULL || !JSON_NODE_HOLDS_ARRAY(n)) {
        g_set_error(error, SIMPAR_PLOT_ERROR, SIMPAR_PLOT_ERROR_INPUT,
                    "%s: not a Chrome trace (no \"traceEvents\" array)", input);
        return NULL;
    }
    return json_node_get_array(n); /* (transfer none) */
}

static gboolean
timeline_read(Timeline *t, const SimparPlotOptions *opt, const char **mode, GError **error)
{
    if (!timeline_read_meta(t, error) || (*mode = timeline_pick_mode(t, opt, error)) == NULL ||
        !timeline_read_boxes(t, *mode, opt, error))
        return FALSE;
    if (t->boxes->len == 0) {
        if (opt->ranks_given)
            g_set_error(error, SIMPAR_PLOT_ERROR, SIMPAR_PLOT_ERROR_EMPTY,
                        "%s: nothing to plot: no event of mode %s on ranks %u..%u", t->input, *mode,
                        opt->rank_first, opt->rank_last);
        else
            g_set_error(error, SIMPAR_PLOT_ERROR, SIMPAR_PLOT_ERROR_EMPTY,
                        "%s: nothing to plot: no event of mode %s", t->input, *mode);
        return FALSE;
    }
    return TRUE;
}

/* "Timeline of T.json: 3d, ranks 0..15 (the trace holds 1d, 2d, 2.5d, 3d)" */
static char *
timeline_title(const Timeline *t, const char *mode)
{
    g_autofree char *base = g_path_get_basename(t->input), *modes = timeline_modes(t);
    guint first = G_MAXUINT, last = 0;
    for (guint i = 0; i < t->tracks->len; i++) {
        guint r = g_array_index(t->tracks, TimelineTrack, i).rank;
        first = MIN(first, r), last = MAX(last, r);
    }
    GString *title = g_string_new(NULL);
    g_autoptr(GHashTable) ranks = g_hash_table_new(NULL, NULL);
    for (guint i = 0; i < t->tracks->len; i++)
        g_hash_table_add(ranks,
                         GUINT_TO_POINTER(g_array_index(t->tracks, TimelineTrack, i).rank + 1));
    guint n = g_hash_table_size(ranks);
    g_string_append_printf(title, "Timeline of %s: %s, ", base, mode);
    if (n == last - first + 1)
        g_string_append_printf(title, "ranks %u..%u", first, last);
    else
        g_string_append_printf(title, "%u ranks of %u..%u", n, first, last);
    if (t->modes->len > 1)
        g_string_append_printf(title, " (the trace holds %s)", modes);
    return g_string_free(title, FALSE); /* (transfer full) */
}

gboolean
simpar_plot_timeline_data(const char *input, const SimparPlotOptions *opt, SimparPlotOut *out,
                          GError **error)
{
    if (opt->rank_first > opt->rank_last) {
        g_set_error(error, SIMPAR_CLI_ERROR, SIMPAR_CLI_ERROR_USAGE,
                    "--ranks %u..%u: the first rank is after the last", opt->rank_first,
                    opt->rank_last);
        return FALSE;
    }
    g_autoptr(JsonNode) root = simpar_plot_load_json(input, error);
    JsonArray *events = root != NULL ? timeline_events(root, input, error) : NULL;
    if (events == NULL)
        return FALSE;
    Timeline t = {
        .input = input,
        .events = events,
        .procs = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, timeline_proc_free),
        .threads = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, NULL),
        .modes = g_ptr_array_new(),
        .tracks = g_array_new(FALSE, FALSE, sizeof(TimelineTrack)),
        .boxes = g_array_new(FALSE, FALSE, sizeof(TimelineBox)),
    };
    g_array_set_clear_func(t.tracks, timeline_track_clear);
    const char *mode = NULL;
    gboolean ok = timeline_read(&t, opt, &mode, error);
    if (ok) {
        timeline_write(&t, out);
        out->title = timeline_title(&t, mode);
    }
    timeline_clear(&t);
    return ok;
}
