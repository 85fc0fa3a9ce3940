/* exec-inputs.c - how long simpar-exec takes to generate a run's input values on the host
 * (bench/exec-inputs.sh): the whole schedule of a job, buffer by buffer.
 *
 *   new   simpar_inputs_fill() as simpar-exec --run does it: every core, each buffer in the
 *         element type the CUDA executor holds it in (the job's dtype; token ids and targets
 *         fp32, its statistics type)
 *   old   (--old) the generator before: the reference formula one double at a time on one
 *         thread (the same function simpar_inputs_fill() runs for fp64, on one thread), shard
 *         by shard
 *   check (--old) every new value against the old one rounded to the new element type
 *
 * Prints one line per path: elements, seconds, nanoseconds per element, threads. The generation
 * alone: the arrays are touched once before (that time printed apart), since a fresh page of
 * memory can cost more than the values written into it.
 */
#include "inputs.h"
#include "job.h"
#include <stdio.h>
#include <string.h>

typedef struct {
    guint n;
    GPtrArray **shards; /* per buffer: its input shards, or NULL */
} Bufs;

static void
bufs_init(Bufs *bf, const SimparSchedule *sched, guint64 *elements)
{
    bf->n = simpar_schedule_n_buffers(sched);
    bf->shards = g_new0(GPtrArray *, bf->n);
    guint n;
    const SimparShard *sh = simpar_schedule_shards(sched, &n);
    for (guint i = 0; i < n; i++) {
        if (sh[i].role != SIMPAR_SHARD_INPUT)
            continue;
        guint b = sh[i].view.buf;
        if (bf->shards[b] == NULL)
            bf->shards[b] = g_ptr_array_new();
        g_ptr_array_add(bf->shards[b], (gpointer) &sh[i]);
        *elements += sh[i].rows * sh[i].cols;
    }
}

static SimparDtype
bufs_type(const Bufs *bf, guint b, SimparDtype dtype)
{
    const SimparShard *sh = g_ptr_array_index(bf->shards[b], 0);
    gboolean ids = g_str_equal(sh->tensor, "tokens") || g_str_equal(sh->tensor, "targets");
    return ids && dtype != SIMPAR_DTYPE_FP64 ? SIMPAR_DTYPE_FP32 : dtype;
}

/* Buffer b generated in `type` on every core into `values` as simpar-exec does (the shards'
 * gaps zeroed); the seconds it took. */
static double
bufs_fill(const Bufs *bf, guint b, gsize elems, SimparDtype type, guint64 vocab, void *values)
{
    gint64 t0 = g_get_monotonic_time();
    const SimparShard *const *shards = (const SimparShard *const *) bf->shards[b]->pdata;
    simpar_inputs_zero_gaps(shards, bf->shards[b]->len, elems, type, values);
    simpar_inputs_fill(shards, bf->shards[b]->len, 1, vocab, type, values, 0);
    return (double) (g_get_monotonic_time() - t0) * 1e-6;
}

/* The old generator on shard `sh`: the reference formula one double at a time on one thread,
 * into `doubles` (the shard's rows x cols); the seconds it took. The old generator filled a
 * zeroed array of doubles as large as the whole buffer; this one reuses an array of the shard's
 * size, which spares it the page faults of the whole buffer (3.6e9 parameters in doubles would
 * not fit this machine's memory). */
static double
bufs_old(const SimparShard *sh, guint64 vocab, double *doubles)
{
    gint64 t0 = g_get_monotonic_time();
    SimparShard at0 = *sh;
    at0.view.off = 0;
    const SimparShard *list[] = {&at0};
    simpar_inputs_fill(list, 1, 1, vocab, SIMPAR_DTYPE_FP64, doubles, 1);
    return (double) (g_get_monotonic_time() - t0) * 1e-6;
}

/* The new values of shard `sh` (in `fresh`, of `type`) against the old doubles rounded to
 * `type`: how many differ. */
static guint64
bufs_compare(const SimparShard *sh, const void *fresh, const double *old, SimparDtype type)
{
    gsize size = simpar_dtype_size(type), n = sh->rows * sh->cols;
    const guint8 *got = (const guint8 *) fresh + sh->view.off * size;
    guint8 want[8];
    guint64 bad = 0;
    for (gsize i = 0; i < n; i++) {
        simpar_inputs_store(type, want, 0, old[i]);
        bad += memcmp(want, got + i * size, size) != 0;
    }
    return bad;
}

/* Every shard of buffer b, old generator against the new values. */
static guint64
bufs_old_all(const Bufs *bf, guint b, const void *fresh, SimparDtype type, guint64 vocab,
             double *doubles, double *t_old)
{
    guint64 bad = 0;
    for (guint i = 0; i < bf->shards[b]->len; i++) {
        const SimparShard *sh = g_ptr_array_index(bf->shards[b], i);
        *t_old += bufs_old(sh, vocab, doubles);
        bad += bufs_compare(sh, fresh, doubles, type);
    }
    return bad;
}

int
main(int argc, char **argv)
{
    gboolean old = FALSE;
    SimparJobArgs job;
    simpar_job_args_init(&job);
    GOptionEntry entries[] = {
        {"old", 0, 0, G_OPTION_ARG_NONE, &old, "Also time the old generator and compare", NULL},
        G_OPTION_ENTRY_NULL,
    };
    g_autoptr(GOptionContext) ctx = g_option_context_new("- time a run's input generation");
    g_option_context_add_main_entries(ctx, entries, NULL);
    simpar_job_add_options(ctx, &job, SIMPAR_JOB_OPTIONS_ALL);
    g_autoptr(GError) error = NULL;
    SimparModel model;
    SimparTrain train;
    g_autoptr(SimparSchedule) sched = NULL;
    if (g_option_context_parse(ctx, &argc, &argv, &error))
        sched = simpar_job_schedule(&job, SIMPAR_JOB_RUN_STEP, "tiny", &model, &train, &error);
    if (sched == NULL) {
        fprintf(stderr, "bench-exec-inputs: %s\n", error->message);
        return 2;
    }
    Bufs bf;
    guint64 elements = 0, bad = 0;
    bufs_init(&bf, sched, &elements);
    gsize most = 0, shard_most = 0;
    for (guint b = 0; b < bf.n; b++) {
        if (bf.shards[b] == NULL)
            continue;
        most = MAX(most, simpar_schedule_buffer(sched, b)->elems *
                             simpar_dtype_size(bufs_type(&bf, b, model.dtype)));
        for (guint i = 0; i < bf.shards[b]->len; i++) {
            const SimparShard *sh = g_ptr_array_index(bf.shards[b], i);
            shard_most = MAX(shard_most, sh->rows * sh->cols);
        }
    }
    /* the scratch arrays touched first, apart: a fresh page costs more than its values here */
    gint64 t0 = g_get_monotonic_time();
    void *fresh = simpar_inputs_alloc(most); /* simpar-exec's scratch, reused buffer by buffer */
    double *doubles = old ? simpar_inputs_alloc(shard_most * sizeof(double)) : NULL;
    if (fresh == NULL || (old && doubles == NULL))
        g_error("bench-exec-inputs: no memory for the %zu-byte scratch arrays", most);
    memset(fresh, 0, most);
    double t_touch = (double) (g_get_monotonic_time() - t0) * 1e-6;
    if (old)
        memset(doubles, 0, shard_most * sizeof(double));
    double t_new = 0, t_old = 0;
    for (guint b = 0; b < bf.n; b++) {
        if (bf.shards[b] == NULL)
            continue;
        gsize elems = simpar_schedule_buffer(sched, b)->elems;
        SimparDtype type = bufs_type(&bf, b, model.dtype);
        t_new += bufs_fill(&bf, b, elems, type, (guint64) model.vocab, fresh);
        if (old)
            bad += bufs_old_all(&bf, b, fresh, type, (guint64) model.vocab, doubles, &t_old);
    }
    simpar_inputs_free(fresh, most);
    simpar_inputs_free(doubles, old ? shard_most * sizeof(double) : 0);
    printf("job: %s, %s, %.4g input elements in %u buffers\n", model.name,
           simpar_dtype_name(model.dtype), (double) elements, bf.n);
    printf("new: %.3f s, %.3g ns per element, %u threads; first touch of its %.3g GB scratch "
           "%.3f s more\n",
           t_new, t_new / elements * 1e9, g_get_num_processors(), most / 1e9, t_touch);
    if (old)
        printf("old: %.3f s, %.3g ns per element, 1 thread (its %.3g GB of doubles for the whole "
               "buffers not counted); %.1fx; %" G_GUINT64_FORMAT " of %.4g values differ\n",
               t_old, t_old / elements * 1e9, (double) elements * 8 / 1e9, t_old / t_new, bad,
               (double) elements);
    for (guint b = 0; b < bf.n; b++)
        if (bf.shards[b] != NULL)
            g_ptr_array_unref(bf.shards[b]);
    g_free(bf.shards);
    simpar_job_args_clear(&job);
    return bad == 0 ? 0 : 1;
}
