/* predict-config.h - one configuration predicted on a loaded platform (private to predict/ and
 * app/).
 *
 * A configuration is a model, a tensor-parallel plan and a training split on the first `gpus`
 * GPUs of a platform. `simpar predict` evaluates one per mode, `simpar sweep` one per row; both
 * call simpar_predict_config(), inside the child process that holds the platform (platform.h):
 *
 *   plan --validate--> grid --split validate--> layer schedule --memory--> fits --> step run
 *        \ refused          \ refused                                 \ refused     \ row
 *          (grid "-")         (no memory)                               (memory kept)
 *
 * A refusal is not a failure: the row then carries the reason as a GError (`why`) for the
 * caller to report or propagate, and the memory figures when they were computed. A failure
 * (`error`) is something no configuration should hit.
 *
 * Ownership: a context borrows everything; a row owns its strings and axes
 * (simpar_predict_row_clear frees them).
 */
#ifndef SIMPAR_PREDICT_CONFIG_H
#define SIMPAR_PREDICT_CONFIG_H
#include "platform.h"
#include "predict-cache.h"
#include "report.h"
#include "train.h"
G_BEGIN_DECLS

#define SIMPAR_PREDICT_ERROR (simpar_predict_error_quark())
GQuark simpar_predict_error_quark(void);

typedef enum {
    /* a bad prediction option, or a configuration the platform, memory or budget refuses */
    SIMPAR_PREDICT_ERROR_REFUSED,
} SimparPredictError;

/* How `simpar predict` and `simpar sweep` run a configuration (--backend): one of the backends
 * (sim/backend.h), or "formula", the analytic backend's figures for a whole training step from
 * closed forms per pipeline stage (step-formula.h) instead of its replay. Formula runs its
 * blocks, and what has no closed form, on the analytic backend. */
gboolean simpar_predict_backend_lookup(const char *name, const SimparBackend **out, GError **error);
gboolean simpar_predict_backend_is_formula(const SimparBackend *backend);

/* The model of `simpar predict` and `simpar sweep` without --model: every mode can split it
 * over 64 GPUs. */
#define SIMPAR_PREDICT_DEFAULT_MODEL "default-4k"

typedef struct {
    const SimparBackend *backend;
    SimparRun run; /* collective settings (algo, mode, params); the rest is filled per run */
    SimparAttentionImpl attention;
    const SimparPlatform *platform;
    const SimparGpu *gpu;   /* of simpar_predict_gpu() */
    guint gpus;             /* the platform's first `gpus` GPUs are used */
    gint64 steps_to_target; /* SIMPAR_JOB_UNSET (G_MININT64) when not asked for */
    gboolean all_slices;    /* simulate every rank of the step (step-slice.h) */
    double
        budget_s; /* refuse a configuration whose simulation would take longer (estimate); 0: any */
    const SimparBackend *block_backend; /* --block-backend, or NULL: `backend` */
    SimparTrace *trace;                 /* the step's Chrome trace, or NULL */
    guint trace_index;                  /* keeps the configurations' trace processes apart */
    /* the job ranks the trace shows (guint, ascending, each below the job's GPUs); NULL: one
     * rank per distinct role: replica 0 of every stage, each layer rank whose ops differ) */
    const GArray *trace_ranks;
    gboolean trace_all; /* the trace shows every rank */
    /* told a warning (the trace's expected size past SIMPAR_PREDICT_WARN_TRACE_B), or NULL */
    void (*warn)(const char *message, gpointer data);
    gpointer warn_data;
    SimparPredictCache *cache; /* layers and block times of earlier configurations, or NULL */
    gboolean over_capacity;    /* predict a configuration over the GPU's memory (the report
                                  names the shortfall); FALSE: skip it (sweeps) */
} SimparPredictContext;

/* The prediction options as given (NULL when not given): --backend, --collectives, --algo,
 * --nccl-proto, --attention, --calibration, --tp-slices, --block-backend, --time-budget,
 * --kernels. */
typedef struct {
    char *backend, *coll_mode, *algo, *proto, *attention, *calibration, *tp_slices, *block_backend,
        *time_budget, *kernels;
} SimparPredictArgs;

/* A step longer than this (a year) comes from figures out of scale: refused, never printed. */
#define SIMPAR_PREDICT_MAX_STEP_S 3.2e7

/* The most memory a configuration's step may take (3/4 of the machine's where that is less),
 * in bytes: refused with the number before it is built. */
#define SIMPAR_PREDICT_MAX_MEMORY_B (16.0 * (1 << 30))

/* The largest Chrome trace --trace writes, in bytes (estimated before the step runs). */
#define SIMPAR_PREDICT_MAX_TRACE_B (2.0 * (1 << 30))
/* The estimated size past which a trace is warned of (SIMPAR_TRACE_WARN_MIB in the environment
 * sets another, in MiB). */
#define SIMPAR_PREDICT_WARN_TRACE_B (256.0 * (1 << 20))

/* --time-budget's default and largest value, in minutes */
#define SIMPAR_PREDICT_BUDGET_MIN     60
#define SIMPAR_PREDICT_BUDGET_MAX_MIN (7 * 24 * 60)

/* --time-budget MINUTES (`default_min` when `text` is NULL) into seconds. */
gboolean simpar_predict_budget_parse(const char *text, double default_min, double *seconds,
                                     GError **error);
/* The memory a run may take, in bytes: 3/4 of this machine's, at most
 * SIMPAR_PREDICT_MAX_MEMORY_B. */
double simpar_predict_memory_cap(void);
void simpar_predict_args_clear(SimparPredictArgs *args);
/* Their entries, storing into `args`, NULL-terminated (transfer container); `backend_help`
 * describes --backend (whose default differs between commands). */
GOptionEntry *simpar_predict_option_entries(SimparPredictArgs *args, const char *backend_help);
/* Checks them into ctx->backend (`backend` when not given), ctx->run, ctx->attention,
 * ctx->all_slices, ctx->block_backend and ctx->budget_s. */
gboolean simpar_predict_args_resolve(const SimparPredictArgs *args, const char *backend,
                                     SimparPredictContext *ctx, GError **error);

/* The figures of GPU 0, after checking that the first `gpus` GPUs are identical, with args'
 * calibration file applied to them and to the platform's links, and args' kernel set (args
 * NULL: neither; the kernel set `megatron`). The dtype is not checked here
 * (simpar_gpu_validate). */
gboolean simpar_predict_gpu(const SimparPlatform *platform, guint gpus,
                            const SimparPredictArgs *args, SimparGpu *gpu, GError **error);

/* Predicts `train` of `model`; train->tp is the plan (mode, T, depth, ...), not yet validated,
 * and train is validated here. TRUE with either a simulated row, or *why set and row->gen,
 * row->grid, row->gpus (and row->memory when the configuration does not fit) filled. */
gboolean simpar_predict_config(const SimparPredictContext *ctx, const SimparModel *model,
                               SimparTrain *train, SimparReportRow *row, GError **why,
                               GError **error);
void simpar_predict_row_clear(SimparReportRow *row);

/* "T=8+SP", "q=4 d=4", "q=4 later" (transfer full); the plan must be validated. */
char *simpar_predict_grid(const SimparPlan *plan);

G_END_DECLS
#endif /* SIMPAR_PREDICT_CONFIG_H */
