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
    const char *name; /* in the timeline's string chunk */
    gint32 pid, tid;
    guint rank;
} TimelineBox;

/* The trace is read once, as a stream (plot-trace.c), keeping only the boxes that may be
 * drawn. The process names say which those are; they precede their events in simpar's traces,
 * and when a trace holds one after its events (or renames a process) the boxes kept may be the
 * wrong ones: then it is read a second time, knowing every name. */
typedef struct {
    const char *input;
    const SimparPlotOptions *opt;
    GHashTable *procs;     /* pid -> TimelineProc */
    GHashTable *threads;   /* timeline_key(pid, tid) -> thread name (owned) */
    GArray *pids;          /* gint32: every pid in order of first appearance */
    GHashTable *seen;      /* the pids of `pids` */
    GHashTable *deferred;  /* pids met in an event before their process name */
    GPtrArray *modes;      /* const char * (the first process's), in order of first appearance */
    GArray *tracks;        /* TimelineTrack */
    GArray *boxes;         /* TimelineBox */
    GStringChunk *names;   /* the boxes' names */
    const char *mode;      /* the mode drawn, as known so far (NULL: not yet known) */
    char *mode_copy;       /* `mode` when it is a process's name, copied */
    GHashTable *chosen;    /* without --ranks: the ranks drawn (rank + 1), as known so far */
    gboolean chosen_stale; /* a process of the mode was named since `chosen` was made */
    gboolean final;        /* the second reading: every name is known */
    gboolean again;        /* a second reading is needed */
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
    g_clear_pointer(&t->pids, g_array_unref);
    g_clear_pointer(&t->seen, g_hash_table_unref);
    g_clear_pointer(&t->deferred, g_hash_table_unref);
    g_clear_pointer(&t->modes, g_ptr_array_unref);
    g_clear_pointer(&t->tracks, g_array_unref);
    g_clear_pointer(&t->boxes, g_array_unref);
    g_clear_pointer(&t->names, g_string_chunk_free);
    g_clear_pointer(&t->chosen, g_hash_table_unref);
    g_clear_pointer(&t->mode_copy, g_free);
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
timeline_id(double v, gint32 *out)
{
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

/* A process's name: its mode and rank ("3d rank 5 (GPU 5)"). A process renamed after its
 * events were met makes the boxes kept unsure. */
static void
timeline_proc_name(Timeline *t, gint32 pid, const char *name)
{
    TimelineProc *p = g_new0(TimelineProc, 1);
    const char *r = g_str_has_prefix(name, "rank ") ? name : strstr(name, " rank ");
    p->mode = r != NULL ? g_strndup(name, (gsize) (r - name)) : g_strdup(name);
    guint64 rank =
        r != NULL ? g_ascii_strtoull(strstr(r, "rank ") + 5, NULL, 10) : (guint64) MAX(pid, 0);
    p->rank = (guint) MIN(rank, G_MAXUINT);
    const TimelineProc *old = g_hash_table_lookup(t->procs, GINT_TO_POINTER(pid));
    if (old != NULL && (old->rank != p->rank || !g_str_equal(old->mode, p->mode)))
        t->again = TRUE;
    if (t->mode != NULL && g_str_equal(p->mode, t->mode))
        t->chosen_stale = TRUE;
    g_hash_table_replace(t->procs, GINT_TO_POINTER(pid), p);
}

/* A metadata event: the process's mode and rank, or a thread's name. */
static void
timeline_meta(Timeline *t, const SimparTraceEvent *e, gint32 pid, gint32 tid)
{
    if (e->name == NULL || e->arg_name == NULL)
        return;
    if (g_str_equal(e->name, "thread_name")) {
        gint64 *key = g_new(gint64, 1);
        *key = timeline_key(pid, tid);
        g_hash_table_replace(t->threads, key, g_strdup(e->arg_name));
    } else if (g_str_equal(e->name, "process_name")) {
        timeline_proc_name(t, pid, e->arg_name);
    }
}

static gint
timeline_uint_cmp(gconstpointer a, gconstpointer b)
{
    guint x = *(const guint *) a, y = *(const guint *) b;
    return x < y ? -1 : x > y;
}

/* Without --ranks: the first 16 ranks of `mode` among the processes named, as a set. */
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

/* The mode drawn, as known so far: --mode, else that of the first process met that is named
 * (those met before it, unnamed yet, are deferred: named later, they make it unsure). */
static const char *
timeline_mode_so_far(Timeline *t)
{
    if (t->mode != NULL)
        return t->mode;
    if (t->opt->mode != NULL)
        return t->mode = t->opt->mode;
    for (guint i = 0; i < t->pids->len; i++) {
        gint32 pid = g_array_index(t->pids, gint32, i);
        const TimelineProc *p = g_hash_table_lookup(t->procs, GINT_TO_POINTER(pid));
        if (p != NULL) /* a copy: a process renamed later frees its name */
            return t->mode = t->mode_copy = g_strdup(p->mode);
        g_hash_table_add(t->deferred, GINT_TO_POINTER(pid));
    }
    return NULL;
}

/* Whether --ranks names `rank`. */
static gboolean
timeline_rank_given(const SimparPlotOptions *opt, guint rank)
{
    if (rank < opt->rank_first || rank > opt->rank_last)
        return FALSE;
    if (opt->ranks == NULL)
        return TRUE;
    guint lo = 0, hi = opt->ranks->len; /* binary search of the ascending list */
    while (lo < hi) {
        guint mid = lo + (hi - lo) / 2, v = g_array_index(opt->ranks, guint, mid);
        if (v == rank)
            return TRUE;
        if (v < rank)
            lo = mid + 1;
        else
            hi = mid;
    }
    return FALSE;
}

/* Whether process `p`'s events may be drawn: of the mode, on the ranks chosen. In the first
 * reading, the default ranks are the first 16 of the processes named so far: a superset of
 * the ranks drawn in the end (which are among the first 16 of fewer). */
static gboolean
timeline_wanted(Timeline *t, const TimelineProc *p)
{
    const char *mode = timeline_mode_so_far(t);
    if (mode == NULL || !g_str_equal(p->mode, mode))
        return FALSE;
    if (t->opt->ranks_given)
        return timeline_rank_given(t->opt, p->rank);
    if (t->chosen == NULL || t->chosen_stale) {
        g_clear_pointer(&t->chosen, g_hash_table_unref);
        t->chosen = timeline_default_ranks(t, mode);
        t->chosen_stale = FALSE;
    }
    return g_hash_table_contains(t->chosen, GUINT_TO_POINTER(p->rank + 1));
}

/* A complete event: checked, and kept as a box when it may be drawn. */
static gboolean
timeline_complete(Timeline *t, const SimparTraceEvent *e, GError **error)
{
    gint32 pid, tid;
    if (!timeline_id(e->pid, &pid) || !timeline_id(e->tid, &tid) ||
        !(fabs(e->ts) <= TIMELINE_MAX_US) || !(fabs(e->dur) <= TIMELINE_MAX_US))
        return timeline_bad(t, e->index,
                            "a complete event (\"ph\": \"X\") needs pid and tid (integers "
                            "of 32 bits), ts and dur (microseconds, at most 1e15 in size)",
                            error);
    const TimelineProc *p = g_hash_table_lookup(t->procs, GINT_TO_POINTER(pid));
    if (p == NULL && !t->final)
        g_hash_table_add(t->deferred, GINT_TO_POINTER(pid));
    if (p == NULL || e->dur <= 0 || !timeline_wanted(t, p))
        return TRUE;
    const char *name = e->name != NULL ? e->name : "";
    TimelineBox b = {0,
                     timeline_class(e->cat != NULL ? e->cat : "", name, e->arg_axis),
                     e->ts,
                     e->ts + e->dur,
                     g_string_chunk_insert_const(t->names, name),
                     pid,
                     tid,
                     p->rank};
    g_array_append_val(t->boxes, b);
    return TRUE;
}

static gboolean
timeline_event(const SimparTraceEvent *e, gpointer data, GError **error)
{
    Timeline *t = data;
    if (!e->object)
        return timeline_bad(t, e->index, "expected an object", error);
    gint32 pid, tid;
    gboolean has_pid = timeline_id(e->pid, &pid);
    if (!t->final && has_pid && !g_hash_table_contains(t->seen, GINT_TO_POINTER(pid))) {
        g_hash_table_add(t->seen, GINT_TO_POINTER(pid));
        g_array_append_val(t->pids, pid);
    }
    if (e->ph == NULL)
        return TRUE;
    if (!t->final && g_str_equal(e->ph, "M") && has_pid && timeline_id(e->tid, &tid))
        timeline_meta(t, e, pid, tid);
    return g_str_equal(e->ph, "X") ? timeline_complete(t, e, error) : TRUE;
}

/* After the first reading: whether its boxes are sure (no process it deferred was named
 * later, none renamed). */
static gboolean
timeline_sure(const Timeline *t)
{
    if (t->again)
        return FALSE;
    GHashTableIter it;
    gpointer pid;
    g_hash_table_iter_init(&it, t->deferred);
    while (g_hash_table_iter_next(&it, &pid, NULL))
        if (g_hash_table_contains(t->procs, pid))
            return FALSE;
    return TRUE;
}

/* The modes in order of their processes' first appearance. */
static void
timeline_modes_found(Timeline *t)
{
    for (guint i = 0; i < t->pids->len; i++) {
        gint32 pid = g_array_index(t->pids, gint32, i);
        TimelineProc *p = g_hash_table_lookup(t->procs, GINT_TO_POINTER(pid));
        if (p != NULL && !g_ptr_array_find_with_equal_func(t->modes, p->mode, g_str_equal, NULL))
            g_ptr_array_add(t->modes, (gpointer) p->mode);
    }
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
timeline_track(Timeline *t, GHashTable *index, guint rank, gint32 pid, gint32 tid)
{
    gint64 key = timeline_key(pid, tid);
    gpointer at;
    if (g_hash_table_lookup_extended(index, &key, NULL, &at))
        return GPOINTER_TO_UINT(at);
    const char *stream = g_hash_table_lookup(t->threads, &key);
    TimelineTrack k = {rank, pid, tid, NULL};
    k.label = stream != NULL ? g_strdup_printf("rank %u %s", rank, stream)
                             : g_strdup_printf("rank %u stream %d", rank, tid);
    g_array_append_val(t->tracks, k);
    gint64 *owned = g_new(gint64, 1);
    *owned = key;
    g_hash_table_insert(index, owned, GUINT_TO_POINTER(t->tracks->len - 1));
    return t->tracks->len - 1;
}

/* The boxes of `mode` on the ranks drawn, in the order read, each on its track (a track per
 * process and thread, in order of first box). */
static void
timeline_keep(Timeline *t, const char *mode)
{
    g_autoptr(GHashTable) chosen = t->opt->ranks_given ? NULL : timeline_default_ranks(t, mode);
    g_autoptr(GHashTable) index = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, NULL);
    guint n = 0;
    for (guint i = 0; i < t->boxes->len; i++) {
        TimelineBox b = g_array_index(t->boxes, TimelineBox, i);
        const TimelineProc *p = g_hash_table_lookup(t->procs, GINT_TO_POINTER(b.pid));
        if (p == NULL || !g_str_equal(p->mode, mode) ||
            (chosen != NULL && !g_hash_table_contains(chosen, GUINT_TO_POINTER(p->rank + 1))))
            continue;
        b.track = timeline_track(t, index, p->rank, b.pid, b.tid);
        g_array_index(t->boxes, TimelineBox, n++) = b;
    }
    g_array_set_size(t->boxes, n);
}

/* After the first reading: the mode picked, the trace read again when the boxes kept are
 * unsure, the boxes of the mode kept. */
static gboolean
timeline_settle(Timeline *t, const char **mode, GError **error)
{
    timeline_modes_found(t);
    if ((*mode = timeline_pick_mode(t, t->opt, error)) == NULL)
        return FALSE;
    if (!timeline_sure(t)) {
        g_array_set_size(t->boxes, 0);
        g_clear_pointer(&t->chosen, g_hash_table_unref);
        t->final = TRUE, t->mode = *mode;
        if (!simpar_plot_trace_read(t->input, timeline_event, t, error))
            return FALSE;
    }
    timeline_keep(t, *mode);
    return TRUE;
}

/* Several timelines of one trace (one per mode) in one reading: each event to each. */
typedef struct {
    Timeline *t;
    guint n;
} TimelineMany;

static gboolean
timeline_event_many(const SimparTraceEvent *e, gpointer data, GError **error)
{
    const TimelineMany *m = data;
    for (guint i = 0; i < m->n; i++)
        if (!timeline_event(e, &m->t[i], error))
            return FALSE;
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

/* Whether the timeline has boxes; else an error saying none was found. */
static gboolean
timeline_nonempty(const Timeline *t, const SimparPlotOptions *opt, const char **mode,
                  GError **error)
{
    if (t->boxes->len == 0) {
        if (opt->ranks_given && opt->ranks_text != NULL)
            g_set_error(error, SIMPAR_PLOT_ERROR, SIMPAR_PLOT_ERROR_EMPTY,
                        "%s: nothing to plot: no event of mode %s on ranks %s", t->input, *mode,
                        opt->ranks_text);
        else if (opt->ranks_given)
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

static void
timeline_init(Timeline *t, const char *input, const SimparPlotOptions *opt)
{
    *t = (Timeline){
        .input = input,
        .opt = opt,
        .procs = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, timeline_proc_free),
        .threads = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, g_free),
        .pids = g_array_new(FALSE, FALSE, sizeof(gint32)),
        .seen = g_hash_table_new(NULL, NULL),
        .deferred = g_hash_table_new(NULL, NULL),
        .modes = g_ptr_array_new(),
        .tracks = g_array_new(FALSE, FALSE, sizeof(TimelineTrack)),
        .boxes = g_array_new(FALSE, FALSE, sizeof(TimelineBox)),
        .names = g_string_chunk_new(4096),
    };
    g_array_set_clear_func(t->tracks, timeline_track_clear);
}

/* After the reading: the mode, its boxes, the .dat text and title into `out`. */
static gboolean
timeline_finish(Timeline *t, SimparPlotOut *out, GError **error)
{
    const char *mode = NULL;
    if (!timeline_settle(t, &mode, error) || !timeline_nonempty(t, t->opt, &mode, error))
        return FALSE;
    timeline_write(t, out);
    out->title = timeline_title(t, mode);
    return TRUE;
}

static gboolean
timeline_check_ranks(const SimparPlotOptions *opt, GError **error)
{
    if (opt->rank_first > opt->rank_last) {
        g_set_error(error, SIMPAR_CLI_ERROR, SIMPAR_CLI_ERROR_USAGE,
                    "--ranks %u..%u: the first rank is after the last", opt->rank_first,
                    opt->rank_last);
        return FALSE;
    }
    return TRUE;
}

gboolean
simpar_plot_timeline_data(const char *input, const SimparPlotOptions *opt, SimparPlotOut *out,
                          GError **error)
{
    if (!timeline_check_ranks(opt, error))
        return FALSE;
    Timeline t;
    timeline_init(&t, input, opt);
    gboolean ok =
        simpar_plot_trace_read(input, timeline_event, &t, error) && timeline_finish(&t, out, error);
    timeline_clear(&t);
    return ok;
}

gboolean
simpar_plot_timelines(const char *input, const char *const *modes, const char *const *outputs,
                      guint n, GError **error)
{
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    for (guint i = 0; i < n; i++)
        if (!simpar_plot_check_output(outputs[i], error))
            return FALSE;
    g_autofree SimparPlotOptions *opts = g_new(SimparPlotOptions, MAX(n, 1));
    g_autofree Timeline *ts = g_new(Timeline, MAX(n, 1));
    for (guint i = 0; i < n; i++) {
        simpar_plot_options_init(&opts[i]);
        opts[i].mode = modes[i];
        timeline_init(&ts[i], input, &opts[i]);
    }
    TimelineMany many = {ts, n};
    gboolean ok = simpar_plot_trace_read(input, timeline_event_many, &many, error);
    for (guint i = 0; ok && i < n; i++) {
        SimparPlotOut out = {g_string_new(NULL), g_string_new(NULL), NULL};
        ok = timeline_finish(&ts[i], &out, error) &&
             simpar_plot_out_render("timeline.gp", &out, &opts[i], outputs[i], error);
        simpar_plot_out_clear(&out);
        timeline_clear(&ts[i]);
    }
    for (guint i = 0; i < n; i++)
        timeline_clear(&ts[i]);
    return ok;
}
