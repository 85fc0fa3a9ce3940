/* measured.h - what simpar-exec measured, read back: a run (RUN.json) and microbenchmarks
 * (BENCH.json), in the formats simpar-exec writes (docs/validate.md) (private to app/).
 *
 *   RUN.json   "job_args" --> simpar_job_args_from_argv --> simpar_job_schedule --> schedule
 *              "ops"[i] {start_s, end_s} ------------------------------------------> spans[i]
 *   BENCH.json "gemm", "kernels", "collectives" rows ------------------------------> arrays
 *
 * A run's spans are shifted so that its first op starts at 0, as predicted spans do, and are
 * checked against the rebuilt schedule op by op (count, rank, kind): a run that does not match
 * this simpar's schedule is an error, never a silent comparison of different work. Every
 * missing or malformed member is an error naming the file and the key (ops[12].end_s).
 *
 * Ownership: a SimparMeasuredRun or SimparBench owns its strings and arrays.
 */
#ifndef SIMPAR_MEASURED_H
#define SIMPAR_MEASURED_H
#include "job.h"
#include "schedule.h"
G_BEGIN_DECLS

#define SIMPAR_MEASURED_ERROR (simpar_measured_error_quark())
GQuark simpar_measured_error_quark(void);

typedef enum {
    SIMPAR_MEASURED_ERROR_PARSE,    /* not the documented JSON: a member missing or malformed */
    SIMPAR_MEASURED_ERROR_MISMATCH, /* the run is not the schedule this simpar builds */
} SimparMeasuredError;

typedef struct {
    char *path, *executor, *device, *attention;
    SimparJobRun run;
    char **job_args; /* NULL-terminated */
    guint ranks;
    double step_median_s; /* "step_s"."median" over the repeats */
    double dropout_p;     /* "dropout_p"; 0 in files written before it (every dropout ran at 0) */
    guint n_ops;
    SimparSpan *spans;   /* by op, the first start at 0 */
    guint *ranks_by_op;  /* "rank" of each op */
    char **kinds_by_op;  /* "kind" of each op */
    char **names_by_op;  /* "name" of each op ("" when the file has none) */
    double *bytes_by_op; /* "bytes" of each collective or transfer, -1 when not given */
} SimparMeasuredRun;

SimparMeasuredRun *simpar_measured_run_load(const char *path, GError **error); /* (transfer full) */
void simpar_measured_run_free(SimparMeasuredRun *m);
/* (transfer full): the schedule the run executed, with `model` and `train` filled; NULL when
 * its job is refused or the schedule does not match the run's ops. */
SimparSchedule *simpar_measured_run_schedule(const SimparMeasuredRun *m, SimparModel *model,
                                             SimparTrain *train, GError **error);

typedef struct {
    double m, n, k, batch;
    SimparDtype dtype;
    gboolean trans_a, trans_b; /* "trans_a", "trans_b" (false when not given) */
    double time_s;
} SimparBenchGemm;

typedef struct {
    const char *kind; /* interned, e.g. "ln_apply" */
    double bytes, time_s;
    /* attention rows: "batch", "heads", "seq", "head_dim" (0 when not given) and "dropout_p"
     * (0.1 when not given: the benches before it ran their attention so) */
    guint batch, heads, seq, head_dim;
    double dropout_p;
} SimparBenchKernel;

typedef struct {
    SimparCollKind kind;
    guint gpus;
    double bytes, time_s; /* bytes: nccl-tests S */
} SimparBenchColl;

typedef struct {
    char *path, *executor, *device;
    SimparDtype dtype;
    guint gpus; /* 0 (a one-GPU bench: no collectives) or more */
    /* buffers above this many elements held zeros (simpar-exec's bench before it wrote
     * "inputs": "random" filled at most 2^27); 0: every input was random */
    double zero_above_elems;
    GArray *gemm, *kernels, *colls; /* SimparBenchGemm, SimparBenchKernel, SimparBenchColl */
} SimparBench;

SimparBench *simpar_bench_load(const char *path, GError **error); /* (transfer full) */
void simpar_bench_free(SimparBench *b);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(SimparMeasuredRun, simpar_measured_run_free)
G_DEFINE_AUTOPTR_CLEANUP_FUNC(SimparBench, simpar_bench_free)
G_END_DECLS
#endif /* SIMPAR_MEASURED_H */
