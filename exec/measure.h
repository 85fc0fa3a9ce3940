/* measure.h - what simpar-exec's files share: the executor interface, the process world (threads
 * or MPI), measured runs (RUN.json) and microbenchmarks (BENCH.json). Private to exec/.
 *
 *   exec-main.c  options, dispatch, the only printer
 *        |  run                              |  bench
 *   measure.c  inputs from --seed, warm-up,  bench.c  one-op schedules (GEMM, kernels,
 *              repeats, --check, verified             collectives), BENCH.json
 *              outputs (verify.h), RUN.json
 *        \___________________  __________________/
 *                            \/
 *   executor.c  SimparExecutor: {host, cuda} behind {new, write, read, run, free};
 *               SimparExecWorld: this process runs every rank (threads) or one (mpirun)
 *
 * Both runs and benches drive an executor the same way: write the inputs (in the element type
 * the executor asks for: doubles on the host, each buffer's own type on a GPU), keep a copy
 * where they live (save) and put it back before every repeat (restore: a device-side copy on a
 * GPU), run with per-op start/end times, read the outputs (doubles). Benches fill their
 * buffers with random values where they live (randomize: a kernel on a GPU). Times are seconds
 * from the run's origin (host: the run's start; cuda: each rank's start event after a
 * barrier).
 *
 * Ownership: a SimparExecutor borrows its schedule, which must outlive it; results own their
 * arrays.
 */
#ifndef SIMPAR_MEASURE_H
#define SIMPAR_MEASURE_H
#include "compute.h"
#include "job.h"
#include "schedule.h"
#include <glib.h>
#include <json-glib/json-glib.h>
G_BEGIN_DECLS

#define SIMPAR_EXEC_ERROR (simpar_exec_error_quark())
GQuark simpar_exec_error_quark(void);

typedef enum {
    SIMPAR_EXEC_ERROR_USAGE,  /* a flag or value simpar-exec cannot use (exit status 2) */
    SIMPAR_EXEC_ERROR_FAILED, /* a run that did not do what it should (failed --check, MPI) */
} SimparExecError;

/* ---- the process world -------------------------------------------------------------------- */

/* mpi: started by mpirun (OMPI_COMM_WORLD_SIZE set) in a build with MPI: this process runs
 * world rank `rank` on GPU `local_rank`. Otherwise rank 0 of a world of 1 runs every rank. */
typedef struct {
    gboolean mpi;
    int rank, size, local_rank;
} SimparExecWorld;

gboolean simpar_exec_world_init(SimparExecWorld *world, int *argc, char ***argv, GError **error);
void simpar_exec_world_finish(const SimparExecWorld *world, int status);
/* Element-wise maximum (sum) of `x` over the processes, in place; nothing without MPI. */
void simpar_exec_world_max(const SimparExecWorld *world, double *x, guint n);
void simpar_exec_world_sum(const SimparExecWorld *world, double *x, guint n);

/* ---- executors ---------------------------------------------------------------------------- */

typedef struct {
    const int *devices; /* --devices, n_devices of them, or NULL for 0, 1, ... */
    guint n_devices;
    gboolean tf32;
    double nccl_timeout_s; /* cuda: any wait on NCCL without progress; 0: the default */
} SimparExecConfig;

typedef struct _SimparExecutor SimparExecutor;

typedef struct {
    const char *name;
    const char *description;
    /* The backend's own object over `sched`'s ranks local to `world`; its device in *device. */
    gpointer (*new)(const SimparSchedule *sched, const SimparExecWorld *world,
                    const SimparExecConfig *cfg, char **device, GError **error);
    SimparDtype (*input_type)(gpointer impl, guint buf); /* the element type write() takes */
    gboolean (*write)(gpointer impl, guint buf, const void *src, GError **error);
    gboolean (*save)(gpointer impl, guint buf, GError **error);
    gboolean (*restore)(gpointer impl, GError **error);
    gboolean (*randomize)(gpointer impl, guint buf, guint64 seed, guint64 ids, GError **error);
    gboolean (*read)(gpointer impl, guint buf, double *dst, GError **error);
    gboolean (*run)(gpointer impl, SimparSpan *spans, GError **error);
    void (*free)(gpointer impl);
    /* Ranks a collective bench spans by default: 4 threads (host), every visible GPU (cuda). */
    gboolean (*default_gpus)(guint *n, GError **error);
} SimparExecutorClass;

/* (transfer none): the table's entry, or a usage error listing the valid names; "cuda" in a
 * build without CUDA is an error that says so. */
const SimparExecutorClass *simpar_executor_lookup(const char *name, GError **error);
const char *simpar_executor_default(void); /* cuda when built with it, else host */
char *simpar_executor_help(void);          /* (transfer full): for --executor's help */

SimparExecutor *simpar_executor_new(const SimparExecutorClass *klass, const SimparSchedule *sched,
                                    const SimparExecWorld *world, const SimparExecConfig *cfg,
                                    GError **error); /* (transfer full) */
void simpar_executor_free(SimparExecutor *ex);
const char *simpar_executor_device(const SimparExecutor *ex); /* (transfer none) */
gboolean simpar_executor_is_local(const SimparExecutor *ex, guint rank);
/* Buffers of local ranks only. write: simpar_schedule_buffer(sched, buf)->elems elements of
 * simpar_executor_input_type() (host: fp64; cuda: the buffer's own type, fp16 and bf16 as their
 * bits); read: as many doubles. */
SimparDtype simpar_executor_input_type(const SimparExecutor *ex, guint buf);
gboolean simpar_executor_write(SimparExecutor *ex, guint buf, const void *src, GError **error);
gboolean simpar_executor_read(SimparExecutor *ex, guint buf, double *dst, GError **error);
/* save: a copy of the buffer's current contents where it lives (a GPU's memory, or host memory
 * when the GPU has no room); restore: every saved buffer back, before a repeat. */
gboolean simpar_executor_save(SimparExecutor *ex, guint buf, GError **error);
gboolean simpar_executor_restore(SimparExecutor *ex, GError **error);
/* Random values where the buffer lives, a pure function of (seed, element): uniform in
 * [0.5, 1.5) (layer-norm variances stay positive), or whole numbers in [0, ids) when ids > 0
 * (token ids, targets). */
gboolean simpar_executor_randomize(SimparExecutor *ex, guint buf, guint64 seed, guint64 ids,
                                   GError **error);
/* Runs once; `spans` (n_ops, or NULL) gets the times of local ranks' ops and -1 elsewhere. */
gboolean simpar_executor_run(SimparExecutor *ex, SimparSpan *spans, GError **error);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(SimparExecutor, simpar_executor_free)

/* ---- runs (measure.c) and benches (bench.c) ----------------------------------------------- */

typedef struct {
    SimparJobArgs job;
    SimparJobRun run;
    const SimparExecutorClass *executor;
    SimparExecConfig cfg;
    SimparAttentionImpl attention; /* recorded only */
    guint warmup, repeats;
    gboolean check;
    guint64 seed;
} SimparRunOptions;

/* Zero (G_MAXUINT for warmup) means the default, which depends on the executor and --quick:
 *   warmup 2, repeats 10 (quick: 1, 3); gpus: executor's default_gpus; min_bytes 8;
 *   max_bytes cuda 1 GiB (quick 64 MiB), host 16 MiB (quick 64 KiB). */
typedef struct {
    gboolean gemm, kernels, collectives; /* the sections to measure */
    SimparJobArgs job; /* the GEMM and kernel shapes: model (host: tiny; cuda: gpt3-13b in bf16) */
    const SimparExecutorClass *executor;
    SimparExecConfig cfg;
    guint warmup, repeats, gpus;
    guint64 min_bytes, max_bytes;
    gboolean quick;
    void (*progress)(const char *line); /* one line per group measured, or NULL */
} SimparBenchOptions;

/* (transfer full): a RUN.json document (simpar-run, version 1), or NULL with the error;
 * *summary gets the human summary and *check the --check table (NULL without --check). */
JsonNode *simpar_measure_run(const SimparRunOptions *opts, const SimparExecWorld *world,
                             char **summary, char **check, GError **error);
/* (transfer full): a BENCH.json document (simpar-bench, version 1); *text a human table. */
JsonNode *simpar_bench_run(const SimparBenchOptions *opts, const SimparExecWorld *world,
                           char **text, GError **error);
/* Pretty-printed JSON into `path`. */
gboolean simpar_measure_write_json(JsonNode *root, const char *path, GError **error);

G_END_DECLS
#endif /* SIMPAR_MEASURE_H */
