/* sweep-run.c - a sweep's worker processes, its journal, resume and the SimGrid refinement.
 *
 * The parent enumerates the configurations, skips those the journal already holds, groups the
 * others into chunks of one platform file and starts a worker per chunk (platform.c: one
 * platform per process, at most --jobs at a time); a worker's cache (predict-cache.h) serves
 * its rows. A worker appends its rows to the journal in batches of whole lines, one write()
 * each (O_APPEND; a batch closes after 512 rows or 50 ms), then their indices to a pipe, which
 * is how the parent counts progress. A worker that dies has its unfinished configurations run
 * again one per worker; one that fails alone becomes a "failed" row. SimGrid runs are one
 * configuration per worker: the simulated clock goes on between runs in a process, and a row
 * must not depend on which rows ran before it in the same worker.
 */
#include "cli.h"
#include "predict-config.h"
#include "sweep-rate.h"
#include "sweep.h"
#include <errno.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <math.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#define SWEEP_MAX_CHUNK         64     /* analytic: ~10 ms a row */
#define SWEEP_MAX_FORMULA_CHUNK 100000 /* formula: ~50 us a row, a platform load ~30 ms */

typedef struct {
    const SimparSweep *sw;
    const SimparBackend *backend;
    const char *platform; /* the configurations' platform file (the run's) */
    guint gpus;           /* the largest GPU count among them */
    GArray *configs;      /* SimparSweepConfig */
    int journal_fd, progress_fd;
    SimparPlatformChild *child;
} SweepChunk;

typedef struct {
    SimparSweep *sw;
    const SimparBackend *backend; /* of this pass: the sweep's, or simgrid when refining */
    char *journal;
    int journal_fd, pipe[2];
    char *tmpdir;          /* --preset: generated platforms */
    GHashTable *platforms; /* nodes -> path */
    guint8 *done;          /* bit per index: in the journal (this pass's backend) */
    GHashTable *only;      /* refinement: the indices to run, or NULL */
    guint64 pass_total, pass_done, run_done;
    SweepChunk *pending;
    GPtrArray *running, *retry; /* SweepChunk * */
    gboolean tty;
    gint64 start_us, shown_us;
    SimparSweepRate rate; /* the recent rate, for the ETA */
    guint shown_tenth;
    guint64 shown_done;
} SweepRun;

static void
sweep_chunk_free(SweepChunk *ch)
{
    g_array_free(ch->configs, TRUE);
    g_free(ch);
}

static gboolean
sweep_write_all(int fd, const void *buf, gsize len)
{
    const char *p = buf;
    while (len > 0) {
        ssize_t w = write(fd, p, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return FALSE;
        p += w, len -= (gsize) w;
    }
    return TRUE;
}

static gboolean
sweep_io_error(GError **error, const char *what, const char *path)
{
    int e = errno;
    g_set_error(error, SIMPAR_SWEEP_ERROR, SIMPAR_SWEEP_ERROR_IO, "%s %s: %s", what, path,
                g_strerror(e));
    return FALSE;
}

/* ------------------------------------------------------------------------- in the worker */

/* Rows go to the journal and their indices to the parent in batches: at most this many rows
 * (one pipe write stays atomic: PIPE_BUF >= 4096), or after this long. */
#define SWEEP_BATCH_ROWS 512
#define SWEEP_BATCH_US   50000

typedef struct {
    GString *lines;
    guint64 index[SWEEP_BATCH_ROWS];
    guint n;
    gint64 since_us; /* when the first row of the batch was added */
} SweepBatch;

static gboolean
sweep_batch_flush(const SweepChunk *ch, SweepBatch *b, GError **error)
{
    if (b->n == 0)
        return TRUE;
    if (!sweep_write_all(ch->journal_fd, b->lines->str, b->lines->len) ||
        !sweep_write_all(ch->progress_fd, b->index, b->n * sizeof b->index[0]))
        return sweep_io_error(error, "cannot write the journal", "");
    g_string_truncate(b->lines, 0);
    b->n = 0;
    return TRUE;
}

static gboolean
sweep_chunk_job(const SimparPlatform *platform, gpointer data, GString *out, GError **error)
{
    (void) out;
    SweepChunk *ch = data;
    SimparGpu gpu;
    if (!simpar_predict_gpu(platform, ch->gpus, &ch->sw->args.predict, &gpu, error))
        return FALSE;
    g_autoptr(GString) lines = g_string_new(NULL);
    SweepBatch b = {.lines = lines};
    g_autoptr(SimparPredictCache) cache = simpar_predict_cache_new();
    for (guint i = 0; i < ch->configs->len; i++) {
        const SimparSweepConfig *c = &g_array_index(ch->configs, SimparSweepConfig, i);
        simpar_sweep_row_predict(ch->sw, c, platform, &gpu, ch->backend, cache, lines);
        gint64 now = g_get_monotonic_time();
        b.since_us = b.n == 0 ? now : b.since_us;
        b.index[b.n++] = c->index;
        if ((b.n == SWEEP_BATCH_ROWS || now - b.since_us >= SWEEP_BATCH_US) &&
            !sweep_batch_flush(ch, &b, error))
            return FALSE;
    }
    return sweep_batch_flush(ch, &b, error);
}

/* ----------------------------------------------------------------------------- platforms */

typedef struct {
    const SimparSweep *sw;
    guint gpus; /* the GPUs to check (identical, calibration) */
} SweepProbe;

/* The platform's GPU count and the node of each GPU: "n node0 node1 ...". */
static gboolean
sweep_probe_job(const SimparPlatform *platform, gpointer data, GString *out, GError **error)
{
    SweepProbe *pr = data;
    guint n = simpar_platform_n_gpus(platform);
    SimparGpu gpu;
    if (n > 0 && !simpar_predict_gpu(platform, pr->gpus > 0 ? MIN(pr->gpus, n) : n,
                                     &pr->sw->args.predict, &gpu, error))
        return FALSE;
    g_string_append_printf(out, "%u", n);
    for (guint i = 0; i < n; i++)
        g_string_append_printf(out, " %u", simpar_net_node(simpar_platform_net(platform), i));
    return TRUE;
}

static const char *
sweep_platform(SweepRun *r, guint gpus, GError **error)
{
    const SimparTopologyPreset *preset = r->sw->preset;
    if (preset == NULL)
        return r->sw->args.topology;
    guint per = simpar_sweep_node_gpus(r->sw), nodes = (gpus + per - 1) / per;
    const char *path = g_hash_table_lookup(r->platforms, GUINT_TO_POINTER(nodes));
    if (path != NULL)
        return path;
    g_autofree char *name = g_strdup_printf("%s-%u.xml", preset->name, nodes);
    char *file = g_build_filename(r->tmpdir, name, NULL);
    g_autofree char *xml = r->sw->args.rack_gpus > 0
                               ? simpar_topology_generate_racks(preset, nodes, per)
                               : simpar_topology_generate(preset, nodes);
    g_hash_table_insert(r->platforms, GUINT_TO_POINTER(nodes), file);
    return g_file_set_contents(file, xml, -1, error) ? file : NULL;
}

static gint64
sweep_max_gpus(const SimparSweep *sw)
{
    gint64 max = 0;
    for (guint i = 0; i < sw->numbers[SIMPAR_SWEEP_GPUS]->len; i++)
        max = MAX(max, g_array_index(sw->numbers[SIMPAR_SWEEP_GPUS], gint64, i));
    return max;
}

/* Loads the platform once (the smallest of a preset, the file of --topology): its GPUs are
 * identical, the calibration applies; --topology: the GPU counts fit, default all. */
static gboolean
sweep_probe(SweepRun *r, GError **error)
{
    SimparSweep *sw = r->sw;
    GArray *gpus = sw->numbers[SIMPAR_SWEEP_GPUS];
    SweepProbe pr = {sw, sw->preset != NULL ? (guint) g_array_index(gpus, gint64, 0)
                                            : (guint) sweep_max_gpus(sw)};
    for (guint i = 0; sw->preset != NULL && i < gpus->len; i++)
        pr.gpus = MIN(pr.gpus, (guint) g_array_index(gpus, gint64, i));
    const char *path = sweep_platform(r, pr.gpus, error);
    g_autoptr(GString) out = g_string_new(NULL);
    if (path == NULL || !simpar_platform_run(path, sweep_probe_job, &pr, out, error))
        return FALSE;
    g_auto(GStrv) words = g_strsplit(out->str, " ", -1);
    sw->platform_gpus = (guint) g_ascii_strtoull(words[0], NULL, 10);
    for (guint i = 1; words[i] != NULL; i++) {
        guint node = (guint) g_ascii_strtoull(words[i], NULL, 10);
        g_array_append_val(sw->platform_nodes, node);
    }
    if (sw->preset != NULL)
        return TRUE;
    if (gpus->len == 0) {
        gint64 all = sw->platform_gpus;
        g_array_append_val(gpus, all);
    }
    if (sweep_max_gpus(sw) > sw->platform_gpus) {
        g_set_error(error, SIMPAR_CLI_ERROR, SIMPAR_CLI_ERROR_USAGE,
                    "--gpus %s: %s has only %u GPUs", sw->args.numbers[SIMPAR_SWEEP_GPUS],
                    sw->args.topology, sw->platform_gpus);
        return FALSE;
    }
    return TRUE;
}

/* ------------------------------------------------------------------------------ progress */

static void
sweep_progress(SweepRun *r, gboolean last)
{
    if (r->sw->args.quiet || r->pass_total == 0)
        return;
    gint64 now = g_get_monotonic_time();
    simpar_sweep_rate_update(&r->rate, (now - r->start_us) / 1e6, r->run_done);
    double rate = simpar_sweep_rate_get(&r->rate);
    /* the recent rate (sweep-rate.h), not the mean since the start */
    double eta = rate > 0 ? (r->pass_total - r->pass_done) / rate : 0;
    guint tenth = (guint) (10 * r->pass_done / r->pass_total);
    const char *what = r->only != NULL ? "refine" : "sweep";
    if (r->tty && (last || now - r->shown_us >= 100000)) {
        char bar[31];
        guint fill = (guint) (30 * r->pass_done / r->pass_total);
        for (guint i = 0; i < 30; i++)
            bar[i] = i < fill ? '#' : '.';
        bar[30] = '\0';
        fprintf(stderr,
                "\r\033[K%s [%s] %" G_GUINT64_FORMAT "/%" G_GUINT64_FORMAT " %.1f/s ETA %.0f s%s",
                what, bar, r->pass_done, r->pass_total, rate, eta, last ? "\n" : "");
        r->shown_us = now;
    } else if (!r->tty && r->pass_done != r->shown_done &&
               (last || tenth > r->shown_tenth || now - r->shown_us >= 10000000)) {
        fprintf(stderr,
                "%s: %" G_GUINT64_FORMAT "/%" G_GUINT64_FORMAT " (%u%%), %.1f/s, ETA %.0f s\n",
                what, r->pass_done, r->pass_total, (guint) (100 * r->pass_done / r->pass_total),
                rate, eta);
        r->shown_us = now, r->shown_tenth = tenth, r->shown_done = r->pass_done;
    }
}

static gboolean
sweep_is_done(const SweepRun *r, guint64 index)
{
    return (r->done[index / 8] >> (index % 8)) & 1;
}

/* Whether this pass runs configuration `index`: its shard's, or the refinement's. */
static gboolean
sweep_mine(const SweepRun *r, guint64 index)
{
    if (r->only != NULL)
        return g_hash_table_contains(r->only, &index);
    return r->sw->n_shards == 0 || index % r->sw->n_shards == r->sw->shard;
}

static void
sweep_mark_done(SweepRun *r, guint64 index, gboolean now)
{
    if (sweep_is_done(r, index))
        return;
    r->done[index / 8] |= (guint8) (1u << (index % 8));
    r->pass_done++;
    r->run_done += now;
}

static void
sweep_read_pipe(SweepRun *r)
{
    guint64 buf[512];
    ssize_t n;
    while ((n = read(r->pipe[0], buf, sizeof buf)) > 0)
        for (ssize_t i = 0; i < n / (ssize_t) sizeof buf[0]; i++)
            if (buf[i] < r->sw->total)
                sweep_mark_done(r, buf[i], TRUE);
}

/* ------------------------------------------------------------------------------- workers */

/* A worker that failed: its configurations not in the journal again one per worker, or, when
 * it ran one alone, a "failed" row. */
static gboolean
sweep_chunk_failed(SweepRun *r, SweepChunk *ch, const GError *why, GError **error)
{
    sweep_read_pipe(r);
    for (guint i = 0; i < ch->configs->len; i++) {
        const SimparSweepConfig *c = &g_array_index(ch->configs, SimparSweepConfig, i);
        if (sweep_is_done(r, c->index))
            continue;
        if (ch->configs->len > 1) {
            SweepChunk *one = g_memdup2(ch, sizeof *ch);
            one->configs = g_array_new(FALSE, FALSE, sizeof(SimparSweepConfig));
            g_array_append_val(one->configs, *c);
            g_ptr_array_add(r->retry, one);
            continue;
        }
        g_autoptr(GString) line = g_string_new(NULL);
        simpar_sweep_row_failed(r->sw, c, ch->backend, why->message, line);
        if (!sweep_write_all(r->journal_fd, line->str, line->len))
            return sweep_io_error(error, "cannot write", r->journal);
        sweep_mark_done(r, c->index, TRUE);
    }
    return TRUE;
}

/* Collects the workers that ended. */
static gboolean
sweep_reap(SweepRun *r, GError **error)
{
    for (guint i = 0; i < r->running->len;) {
        SweepChunk *ch = g_ptr_array_index(r->running, i);
        if (!simpar_platform_child_ended(ch->child, FALSE)) {
            i++;
            continue;
        }
        g_ptr_array_remove_index(r->running, i);
        g_autoptr(GString) out = g_string_new(NULL);
        g_autoptr(GError) why = NULL;
        gboolean ok = simpar_platform_child_finish(g_steal_pointer(&ch->child), out, &why) ||
                      sweep_chunk_failed(r, ch, why, error);
        sweep_chunk_free(ch);
        if (!ok)
            return FALSE;
    }
    return TRUE;
}

/* Waits a little for progress or a worker's end. */
static gboolean
sweep_wait(SweepRun *r, GError **error)
{
    struct pollfd p = {r->pipe[0], POLLIN, 0};
    poll(&p, 1, 20);
    sweep_read_pipe(r);
    gboolean ok = sweep_reap(r, error);
    sweep_progress(r, FALSE);
    return ok;
}

static gboolean
sweep_spawn(SweepRun *r, SweepChunk *ch, GError **error)
{
    ch->child = simpar_platform_spawn(ch->platform, sweep_chunk_job, ch, error);
    if (ch->child == NULL) {
        sweep_chunk_free(ch);
        return FALSE;
    }
    g_ptr_array_add(r->running, ch);
    return TRUE;
}

/* Starts `ch` (or, with NULL, only the retries) once a worker slot is free. */
static gboolean
sweep_start(SweepRun *r, SweepChunk *ch, GError **error)
{
    guint jobs = r->sw->jobs;
    while (r->retry->len > 0 || ch != NULL) {
        while (r->running->len >= jobs)
            if (!sweep_wait(r, error))
                return FALSE;
        SweepChunk *next =
            r->retry->len > 0 ? g_ptr_array_steal_index(r->retry, 0) : g_steal_pointer(&ch);
        if (!sweep_spawn(r, next, error))
            return FALSE;
    }
    return TRUE;
}

/* Configurations per worker (the platform loads once per worker, and its cache serves its rows):
 * a backend with contention (SimGrid) one; analytic a share of the GPU count's; formula, whose
 * rows cost less than a load, the pass's share of each worker (two per worker with several, for
 * balance). */
static guint
sweep_chunk_size(const SweepRun *r, guint slot)
{
    if (r->backend->contention)
        return 1;
    if (simpar_predict_backend_is_formula(r->backend)) {
        guint64 chunks = r->sw->jobs > 1 ? 2 * (guint64) r->sw->jobs : 1;
        return (guint) CLAMP((r->pass_total + chunks - 1) / chunks, 1, SWEEP_MAX_FORMULA_CHUNK);
    }
    guint64 share = (r->sw->per_gpus[slot] + 2 * r->sw->jobs - 1) / (2 * r->sw->jobs);
    return (guint) CLAMP(share, 1, SWEEP_MAX_CHUNK);
}

static gboolean
sweep_visit(const SimparSweepConfig *c, gpointer data, GError **error)
{
    SweepRun *r = data;
    const SimparSweep *sw = r->sw;
    if (!sweep_mine(r, c->index) || sweep_is_done(r, c->index))
        return TRUE;
    const char *platform = sweep_platform(r, c->gpus, error);
    if (platform == NULL)
        return FALSE;
    SweepChunk *ch = r->pending;
    if (ch != NULL &&
        (ch->platform != platform || ch->configs->len >= sweep_chunk_size(r, c->gpus_slot)))
        if (!sweep_start(r, g_steal_pointer(&r->pending), error))
            return FALSE;
    if (r->pending == NULL) {
        r->pending = g_new0(SweepChunk, 1);
        *r->pending = (SweepChunk){sw,
                                   r->backend,
                                   platform,
                                   c->gpus,
                                   g_array_new(FALSE, FALSE, sizeof(SimparSweepConfig)),
                                   r->journal_fd,
                                   r->pipe[1],
                                   NULL};
    }
    r->pending->gpus = MAX(r->pending->gpus, c->gpus);
    g_array_append_val(r->pending->configs, *c);
    return TRUE;
}

/* Every configuration of the pass not yet in the journal. */
static gboolean
sweep_pass(SweepRun *r, GError **error)
{
    r->start_us = r->shown_us = g_get_monotonic_time();
    simpar_sweep_rate_init(&r->rate, SIMPAR_SWEEP_RATE_TAU_S, 0, 0);
    r->run_done = 0, r->shown_tenth = 0, r->shown_done = r->pass_done;
    gboolean ok = simpar_sweep_enumerate(r->sw, sweep_visit, r, error) &&
                  (r->pending == NULL || sweep_start(r, g_steal_pointer(&r->pending), error));
    while (ok && (r->running->len > 0 || r->retry->len > 0))
        ok = sweep_start(r, NULL, error) && (r->running->len == 0 || sweep_wait(r, error));
    if (ok)
        sweep_progress(r, TRUE);
    return ok;
}

/* -------------------------------------------------------------------------------- journal */

/* A journal row as this sweep would write it: the configuration of its index, and, where it
 * says "ok", figures that are numbers, finite and a step in range (a forged 1e-9 s or NaN row
 * would rank first). */
static gboolean
sweep_journal_row_ok(SweepRun *r, const SimparCsv *csv, guint i, char **want, GError **error)
{
    guint line = g_array_index(csv->lines, guint, i);
    if (!simpar_sweep_row_is(csv, i, want)) {
        g_set_error(error, SIMPAR_SWEEP_ERROR, SIMPAR_SWEEP_ERROR_JOURNAL,
                    "%s:%u: the row is not the configuration of its index in this sweep; "
                    "delete the journal",
                    r->journal, line);
        return FALSE;
    }
    return simpar_sweep_row_figures_ok(csv, i, r->journal, "delete the journal", error);
}

static gboolean
sweep_journal_rows(SweepRun *r, const SimparCsv *csv, GError **error)
{
    g_autoptr(GHashTable) want = simpar_sweep_expected(r->sw, r->backend, error);
    if (want == NULL)
        return FALSE;
    for (guint i = 0; i < simpar_csv_n_rows(csv); i++) {
        guint64 idx;
        guint line = g_array_index(csv->lines, guint, i);
        const char *s = simpar_csv_get(csv, i, SIMPAR_SWEEP_COL_INDEX);
        if (!g_ascii_string_to_unsigned(s, 10, 0, r->sw->total - 1, &idx, NULL)) {
            g_set_error(error, SIMPAR_SWEEP_ERROR, SIMPAR_SWEEP_ERROR_JOURNAL,
                        "%s:%u: index '%s' is not a configuration of this sweep; delete the "
                        "journal",
                        r->journal, line, s);
            return FALSE;
        }
        if (!sweep_journal_row_ok(r, csv, i,
                                  g_hash_table_lookup(want, GSIZE_TO_POINTER((gsize) idx)), error))
            return FALSE;
        if (sweep_mine(r, idx) &&
            g_str_equal(simpar_csv_get(csv, i, SIMPAR_SWEEP_COL_BACKEND), r->backend->name))
            sweep_mark_done(r, idx, FALSE);
    }
    return TRUE;
}

/* An existing journal: it must be this sweep's; a torn last line is cut off. */
static gboolean
sweep_journal_resume(SweepRun *r, const char *data, gsize len, GError **error)
{
    g_autoptr(SimparCsv) csv =
        simpar_csv_parse(data, len, r->journal, SIMPAR_CSV_DROP_TORN_TAIL, error);
    if (csv == NULL)
        return FALSE;
    g_autofree char *ours = simpar_sweep_comments(r->sw);
    g_autoptr(GString) theirs = g_string_new(NULL);
    for (guint i = 0; i < csv->comments->len; i++)
        g_string_append_printf(theirs, "#%s\n", (char *) g_ptr_array_index(csv->comments, i));
    if (!g_str_equal(ours, theirs->str)) {
        g_set_error(error, SIMPAR_SWEEP_ERROR, SIMPAR_SWEEP_ERROR_JOURNAL,
                    "%s is the journal of a different sweep (its first line: \"%s\"): delete it "
                    "or choose another -o",
                    r->journal,
                    csv->comments->len > 0 ? (char *) g_ptr_array_index(csv->comments, 0) : "");
        return FALSE;
    }
    const char *end = g_strrstr_len(data, (gssize) len, "\n");
    if (csv->torn_tail && ftruncate(r->journal_fd, end != NULL ? end - data + 1 : 0) != 0)
        return sweep_io_error(error, "cannot cut the torn last line of", r->journal);
    return sweep_journal_rows(r, csv, error);
}

/* OUT.part: locked for this sweep, created with its comments and header, or resumed. */
static gboolean
sweep_journal_open(SweepRun *r, GError **error)
{
    r->journal = g_strconcat(r->sw->args.output, ".part", NULL);
    /* never through a link (to another file), nor into a device or a pipe */
    r->journal_fd = open(r->journal, O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (r->journal_fd < 0)
        return sweep_io_error(error, "-o: cannot open the journal", r->journal);
    struct stat st;
    if (fstat(r->journal_fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        g_set_error(error, SIMPAR_SWEEP_ERROR, SIMPAR_SWEEP_ERROR_JOURNAL,
                    "%s: the journal is not a regular file (a device, pipe or socket); remove it "
                    "or choose another -o",
                    r->journal);
        return FALSE;
    }
    if (flock(r->journal_fd, LOCK_EX | LOCK_NB) != 0) {
        g_set_error(error, SIMPAR_SWEEP_ERROR, SIMPAR_SWEEP_ERROR_JOURNAL,
                    "%s: another simpar sweep is writing this journal; wait for it to end or "
                    "choose another -o",
                    r->journal);
        return FALSE;
    }
    g_autofree char *data = NULL;
    gsize len = 0;
    if (!simpar_file_read(r->journal, SIMPAR_JSON_LARGE_MAX, &data, &len, error))
        return FALSE;
    if (len > 0)
        return sweep_journal_resume(r, data, len, error);
    g_autofree char *comments = simpar_sweep_comments(r->sw);
    g_autoptr(GString) head = g_string_new(comments);
    simpar_csv_append_row(head, simpar_sweep_columns, SIMPAR_SWEEP_N_COLUMNS);
    if (!sweep_write_all(r->journal_fd, head->str, head->len))
        return sweep_io_error(error, "cannot write", r->journal);
    return TRUE;
}

/* ------------------------------------------------------------------------------ the sweep */

static void
sweep_run_clear(SweepRun *r)
{
    if (r->journal_fd >= 0)
        close(r->journal_fd);
    for (guint i = 0; i < 2; i++)
        if (r->pipe[i] >= 0)
            close(r->pipe[i]);
    if (r->platforms != NULL) {
        GHashTableIter it;
        gpointer path;
        g_hash_table_iter_init(&it, r->platforms);
        while (g_hash_table_iter_next(&it, NULL, &path))
            g_unlink(path);
        g_hash_table_unref(r->platforms);
    }
    if (r->tmpdir != NULL)
        g_rmdir(r->tmpdir);
    g_free(r->tmpdir);
    g_free(r->journal);
    g_free(r->done);
    g_clear_pointer(&r->only, g_hash_table_unref);
    g_clear_pointer(&r->running, g_ptr_array_unref);
    g_clear_pointer(&r->retry, g_ptr_array_unref);
}

/* Re-runs the K best analytic (or formula) rows on SimGrid; `refined` receives their indices. */
static gboolean
sweep_refine(SweepRun *r, GHashTable *refined, GError **error)
{
    g_autoptr(SimparCsv) csv = simpar_csv_read(r->journal, SIMPAR_CSV_DROP_TORN_TAIL, error);
    if (csv == NULL)
        return FALSE;
    g_autoptr(GArray) best =
        simpar_sweep_best(r->sw, csv, r->sw->backend->name, (guint) r->sw->args.refine);
    g_clear_pointer(&r->only, g_hash_table_unref);
    r->only = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, NULL);
    for (guint i = 0; i < best->len; i++) {
        g_hash_table_add(r->only, g_memdup2(&g_array_index(best, guint64, i), sizeof(guint64)));
        g_hash_table_add(refined, g_memdup2(&g_array_index(best, guint64, i), sizeof(guint64)));
    }
    if (!simpar_backend_lookup("simgrid", &r->backend, error))
        return FALSE;
    memset(r->done, 0, (r->sw->total + 7) / 8);
    r->pass_total = best->len, r->pass_done = 0;
    return sweep_journal_rows(r, csv, error) && sweep_pass(r, error);
}

static void
sweep_announce(const SweepRun *r)
{
    const SimparSweep *sw = r->sw;
    printf("simpar sweep %s: %" G_GUINT64_FORMAT " configurations", sw->id, sw->total);
    if (sw->n_shards > 0)
        printf(", %" G_GUINT64_FORMAT " in shard %u/%u", r->pass_total, sw->shard, sw->n_shards);
    if (r->pass_done > 0)
        printf(", %" G_GUINT64_FORMAT " already in %s", r->pass_done, r->journal);
    printf("; backend %s, worker processes: %u\n", sw->backend->name, sw->jobs);
    fflush(stdout);
}

/* The files the rows were computed from (platform, model files, calibration: their names and
 * contents in the sweep's identity) are still what they were when the sweep began: a file
 * replaced while the workers ran would mix rows of two inputs under one identity. */
static gboolean
sweep_inputs_unchanged(const SimparSweep *sw, GError **error)
{
    g_autofree char *now = simpar_sweep_spec_text(sw);
    if (g_strcmp0(now, sw->spec_text) == 0)
        return TRUE;
    g_set_error(error, SIMPAR_SWEEP_ERROR, SIMPAR_SWEEP_ERROR_INPUT,
                "simpar sweep: an input file (the topology, a model file or the calibration) "
                "changed while the sweep ran, so its rows mix two versions of it: nothing "
                "written; run the sweep again on files that stay put");
    return FALSE;
}

static gboolean
sweep_run_passes(SweepRun *r, char **summary, GError **error)
{
    SimparSweep *sw = r->sw;
    if (!sweep_probe(r, error) || !simpar_sweep_identify(sw, error))
        return FALSE;
    r->done = g_new0(guint8, (sw->total + 7) / 8);
    r->pass_total =
        sw->n_shards == 0 ? sw->total : (sw->total + sw->n_shards - 1 - sw->shard) / sw->n_shards;
    if (!sweep_journal_open(r, error))
        return FALSE;
    sweep_announce(r);
    g_autoptr(GHashTable) refined =
        g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, NULL);
    if (!sweep_pass(r, error) || (sw->args.refine > 0 && !sweep_refine(r, refined, error)) ||
        !sweep_inputs_unchanged(sw, error))
        return FALSE;
    g_autoptr(SimparCsv) csv = simpar_csv_read(r->journal, SIMPAR_CSV_DROP_TORN_TAIL, error);
    if (csv == NULL || !simpar_sweep_write_output(sw, csv, refined, summary, error))
        return FALSE;
    g_unlink(r->journal);
    return TRUE;
}

gboolean
simpar_sweep_run(SimparSweep *sw, char **summary, GError **error)
{
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    SweepRun r = {sw, sw->backend, .journal_fd = -1, .pipe = {-1, -1}};
    r.running = g_ptr_array_new();
    r.retry = g_ptr_array_new_with_free_func((GDestroyNotify) sweep_chunk_free);
    r.tty = isatty(STDERR_FILENO);
    r.platforms = g_hash_table_new_full(NULL, NULL, NULL, g_free);
    gboolean ok = TRUE;
    if (sw->preset != NULL && (r.tmpdir = g_dir_make_tmp("simpar-sweep-XXXXXX", error)) == NULL)
        ok = FALSE;
    if (ok &&
        (pipe(r.pipe) != 0 || fcntl(r.pipe[0], F_SETFD, FD_CLOEXEC) != 0 ||
         fcntl(r.pipe[1], F_SETFD, FD_CLOEXEC) != 0 || fcntl(r.pipe[0], F_SETFL, O_NONBLOCK) != 0))
        ok = sweep_io_error(error, "cannot make a pipe", "");
    ok = ok && sweep_run_passes(&r, summary, error);
    while (r.running != NULL && r.running->len > 0) { /* after an error: end the workers */
        SweepChunk *ch = g_ptr_array_steal_index(r.running, 0);
        g_autoptr(GString) out = g_string_new(NULL);
        simpar_platform_child_finish(ch->child, out, NULL);
        sweep_chunk_free(ch);
    }
    if (r.pending != NULL)
        sweep_chunk_free(r.pending);
    sweep_run_clear(&r);
    return ok;
}
