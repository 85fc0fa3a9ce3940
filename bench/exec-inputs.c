/* exec-inputs.c - how long simpar-exec takes to generate a run's input values on the host
 * (bench/exec-inputs.sh): the whole schedule of a job, buffer by buffer.
 *
 *   new   simpar_inputs_fill() as simpar-exec --run does it: every core, each buffer in the
 *         element type the CUDA executor holds it in (the job's dtype; token ids and targets
 *         fp32, its statistics type)
 *   old   (--old) the generator before: the reference formula one double at a time on one
 *         thread (the same function simpar_inputs_fill() runs for fp64, on one thread), into a
 *         zeroed array of doubles per buffer
 *   check (--old) every new value against the old one rounded to the new element type
 *
 * Prints one line per path: elements, seconds, nanoseconds per element, threads.
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

/* Buffer b generated in `type` on every core into `values` as simpar-exec does (zeroed first
 * where the shards leave gaps); the seconds it took. */
static double
bufs_fill(const Bufs *bf, guint b, gsize elems, SimparDtype type, guint64 vocab, void *values)
{
    gint64 t0 = g_get_monotonic_time();
    const SimparShard *const *shards = (const SimparShard *const *) bf->shards[b]->pdata;
    if (!simpar_inputs_covers(shards, bf->shards[b]->len, elems))
        memset(values, 0, elems * simpar_dtype_size(type));
    simpar_inputs_fill(shards, bf->shards[b]->len, 1, vocab, type, values, 0);
    return (double) (g_get_monotonic_time() - t0) * 1e-6;
}

/* The old generator: a zeroed array of doubles (g_new0), one thread; the seconds it took. */
static double
bufs_old(const Bufs *bf, guint b, gsize elems, guint64 vocab, double **out)
{
    gint64 t0 = g_get_monotonic_time();
    *out = g_new0(double, MAX(elems, 1));
    simpar_inputs_fill((const SimparShard *const *) bf->shards[b]->pdata, bf->shards[b]->len, 1,
                       vocab, SIMPAR_DTYPE_FP64, *out, 1);
    return (double) (g_get_monotonic_time() - t0) * 1e-6;
}

/* New values of `type` against the old doubles rounded to it: how many differ. */
static guint64
bufs_compare(const void *fresh, const double *old, gsize elems, SimparDtype type)
{
    gsize size = simpar_dtype_size(type);
    guint8 want[8];
    guint64 bad = 0;
    for (gsize i = 0; i < elems; i++) {
        simpar_inputs_store(type, want, 0, old[i]);
        bad += memcmp(want, (const guint8 *) fresh + i * size, size) != 0;
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
    gsize most = 0;
    for (guint b = 0; b < bf.n; b++)
        if (bf.shards[b] != NULL)
            most = MAX(most, simpar_schedule_buffer(sched, b)->elems *
                                 simpar_dtype_size(bufs_type(&bf, b, model.dtype)));
    gint64 t0 = g_get_monotonic_time();
    void *fresh = simpar_inputs_alloc(most); /* simpar-exec's scratch, reused buffer by buffer */
    double t_new = (double) (g_get_monotonic_time() - t0) * 1e-6, t_old = 0;
    for (guint b = 0; b < bf.n; b++) {
        if (bf.shards[b] == NULL)
            continue;
        gsize elems = simpar_schedule_buffer(sched, b)->elems;
        SimparDtype type = bufs_type(&bf, b, model.dtype);
        t_new += bufs_fill(&bf, b, elems, type, (guint64) model.vocab, fresh);
        if (old) {
            double *doubles = NULL;
            t_old += bufs_old(&bf, b, elems, (guint64) model.vocab, &doubles);
            bad += bufs_compare(fresh, doubles, elems, type);
            g_free(doubles);
        }
    }
    simpar_inputs_free(fresh, most);
    printf("job: %s, %s, %.4g input elements in %u buffers\n", model.name,
           simpar_dtype_name(model.dtype), (double) elements, bf.n);
    printf("new: %.3f s, %.3g ns per element, %u threads\n", t_new, t_new / elements * 1e9,
           g_get_num_processors());
    if (old)
        printf("old: %.3f s, %.3g ns per element, 1 thread; %.1fx; %" G_GUINT64_FORMAT
               " of %.4g values differ\n",
               t_old, t_old / elements * 1e9, t_old / t_new, bad, (double) elements);
    for (guint b = 0; b < bf.n; b++)
        if (bf.shards[b] != NULL)
            g_ptr_array_unref(bf.shards[b]);
    g_free(bf.shards);
    simpar_job_args_clear(&job);
    return bad == 0 ? 0 : 1;
}
