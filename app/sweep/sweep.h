/* sweep.h - `simpar sweep`: many configurations, one CSV row each (private to app/).
 *
 * A sweep is the product of axis lists (GPU counts, models and their shapes, modes, grids,
 * pipeline and data-parallel sizes, batches, schedules, recomputation), with the split axes
 * the user leaves out enumerated per GPU count. Configurations are numbered in enumeration
 * order and streamed to worker processes, one platform per worker; each row is appended to a
 * journal as soon as it is known, and the output is the journal sorted, ranked and written at
 * once:
 *
 *   options --sweep-spec.c--> SimparSweep --enumerate--> config i --sweep-row.c--> CSV line
 *                                               |                 (a worker, predict-config.c)
 *   sweep-run.c: chunks of one GPU count -> workers -> OUT.part (journal) -> sweep.c: OUT
 *
 *   OUT.part  # simpar-sweep ID: N configurations    the sweep's identity (options that
 *             # spec gpus=...;model=...              define the configurations)
 *             index,model,...,rank                   header, then rows in completion order
 *   OUT       the same comments, the header, rows in index order with ranks
 *
 * Ownership: a SimparSweep owns its lists and strings; configurations borrow from it.
 */
#ifndef SIMPAR_SWEEP_H
#define SIMPAR_SWEEP_H
#include "backend.h"
#include "csv-table.h"
#include "job.h"
#include "predict-config.h"
#include "topology.h"
G_BEGIN_DECLS

#define SIMPAR_SWEEP_ERROR (simpar_sweep_error_quark())
GQuark simpar_sweep_error_quark(void);

typedef enum {
    SIMPAR_SWEEP_ERROR_JOURNAL, /* a journal of another sweep, or one in use */
    SIMPAR_SWEEP_ERROR_MERGE,   /* shard files that do not make one sweep */
    SIMPAR_SWEEP_ERROR_IO,      /* a file that cannot be written or read */
    SIMPAR_SWEEP_ERROR_SPLIT,   /* a row's T x P x D cannot be its GPU count */
    SIMPAR_SWEEP_ERROR_INPUT,   /* an input file changed while the sweep ran */
} SimparSweepError;

typedef enum {
    SIMPAR_SWEEP_RANK_TIME,       /* step time, lowest first */
    SIMPAR_SWEEP_RANK_THROUGHPUT, /* tokens per second, highest first */
    SIMPAR_SWEEP_RANK_COST,       /* GPU-hours per billion tokens, lowest first */
} SimparSweepRankBy;

/* The CSV columns, in order (simpar plot reads them by name). */
/* clang-format off */
#define SIMPAR_SWEEP_COLUMNS(X)                                                                    \
    X(INDEX, "index") X(MODEL, "model") X(HIDDEN, "hidden") X(HEADS, "heads")                      \
    X(KV_HEADS, "kv_heads") X(LAYERS, "layers") X(SEQ, "seq") X(DTYPE, "dtype") X(PRESET, "preset") X(NODES, "nodes")      \
    X(GPUS, "gpus") X(MODE, "mode") X(GRID, "grid") X(TP, "tp") X(CP, "cp") X(CP_MODE, "cp_mode") X(EP, "ep") X(Q, "q")            \
    X(DEPTH, "depth")                                                                              \
    X(PP, "pp") X(DP, "dp") X(SCHEDULE, "schedule") X(VIRTUAL_STAGES, "virtual_stages")            \
    X(MICRO_BATCH, "micro_batch") X(GLOBAL_BATCH, "global_batch") X(RECOMPUTE, "recompute")        \
    X(ZERO, "zero") X(SHARD_GROUP, "shard_group") X(BACKEND, "backend") X(STATUS, "status") X(REASON, "reason")                  \
    X(STEP, "step_time_s") X(TOKENS, "tokens_per_s") X(GPU_HOURS, "gpu_hours_per_btok")            \
    X(TFLOPS, "tflops_per_gpu") X(MFU, "mfu") X(COMPUTE, "compute_s")                              \
    X(TP_EXPOSED, "tp_exposed_s") X(TP_INTRA, "tp_exposed_intra_s")                                \
    X(TP_INTER, "tp_exposed_inter_s") X(BUBBLE, "bubble_s") X(PP_P2P, "pp_p2p_s")                  \
    X(DP_EXPOSED, "dp_exposed_s") X(OPTIMIZER, "optimizer_s") X(MEM, "mem_GiB")                    \
    X(MEM_CAPACITY, "mem_capacity_GiB") X(STATES, "states_GiB")                                    \
    X(ACTIVATIONS, "activations_GiB") X(TRANSIENT, "transient_GiB")                                \
    X(ANALYTIC_STEP, "analytic_step_time_s") X(RANK, "rank")

/* clang-format on */

typedef enum {
#define SIMPAR_SWEEP_COLUMN_ID(id, name) SIMPAR_SWEEP_COL_##id,
    SIMPAR_SWEEP_COLUMNS(SIMPAR_SWEEP_COLUMN_ID)
#undef SIMPAR_SWEEP_COLUMN_ID
    SIMPAR_SWEEP_N_COLUMNS
} SimparSweepColumn;

/* The list axes, in the order of their flags. */
typedef enum {
    SIMPAR_SWEEP_GPUS,
    SIMPAR_SWEEP_TP,
    SIMPAR_SWEEP_Q,
    SIMPAR_SWEEP_DEPTH,
    SIMPAR_SWEEP_PP,
    SIMPAR_SWEEP_DP,
    SIMPAR_SWEEP_MICRO_BATCH,
    SIMPAR_SWEEP_GLOBAL_BATCH,
    SIMPAR_SWEEP_HIDDEN,
    SIMPAR_SWEEP_LAYERS,
    SIMPAR_SWEEP_SEQ,
    SIMPAR_SWEEP_KV_HEADS,
    SIMPAR_SWEEP_SHARD_GROUP,
    SIMPAR_SWEEP_CP,
    SIMPAR_SWEEP_EP,
    SIMPAR_SWEEP_N_NUMBERS,
} SimparSweepAxis;

typedef enum {
    SIMPAR_SWEEP_MODES,
    SIMPAR_SWEEP_MODELS,
    SIMPAR_SWEEP_RECOMPUTE,
    SIMPAR_SWEEP_SCHEDULE,
    SIMPAR_SWEEP_CP_MODE,
    SIMPAR_SWEEP_PRECISION, /* bf16, fp8, fp8-current, fp8-mxfp8, ...: --dtype and --fp8-recipe */
    SIMPAR_SWEEP_N_NAMES,
} SimparSweepNames;

/* The command line as given (strings owned; integers SIMPAR_JOB_UNSET when not given). */
typedef struct {
    char *numbers[SIMPAR_SWEEP_N_NUMBERS]; /* list flags, e.g. "64..4096" */
    char *names[SIMPAR_SWEEP_N_NAMES]; /* --tp-mode, --model, --recompute, --schedule, --cp-mode,
                                          --precision */
    char *preset, *topology;
    SimparJobArgs job; /* the single-valued job options: --heads, --ffn, --zero, --sp, ... */
    SimparPredictArgs predict; /* --backend, --collectives, ..., --calibration */
    char *output, *rank_by, *shard, *spec, *plot;
    char *summary;        /* --summary FILE.json, or NULL */
    GPtrArray *spec_keys; /* the flags (without "--") whose values came from --spec, or NULL */
    gint64 jobs, refine;
    gint64 rack_gpus; /* --rack-gpus: a rack-scale preset's racks of this many GPUs; 0: its own */
    gboolean merge, quiet;
} SimparSweepArgs;

/* One configuration; strings borrowed from the SimparSweep (interned or its lists). */
typedef struct {
    guint64 index;
    guint gpus, gpus_slot; /* the GPU count and its position in the --gpus list */
    guint model;           /* position in the --model list */
    gint64 hidden, heads, kv_heads, ffn, layers, seq, micro_batch;
    gint64 global_batch;        /* SIMPAR_JOB_UNSET: micro-batch x D */
    gint64 shard_group;         /* SIMPAR_JOB_UNSET: D */
    gint64 cp;                  /* context parallelism C (1: none); T x C x P x D = GPUs */
    gint64 ep;                  /* expert parallelism EP; SIMPAR_JOB_UNSET: none given */
    const SimparGenerator *gen; /* the mode (transfer none) */
    gint64 tp, q, depth; /* q, depth 0 where the mode has none; depth 0 in 2.5-D: none fits */
    gint64 pp, dp;       /* 0: no integer value makes T x P x D the GPU count */
    const char *schedule, *recompute; /* NULL: the default */
    const char *cp_mode;              /* NULL: the default (allgather) */
    const char *precision;            /* NULL: --dtype and --fp8-recipe (or the model's) */
} SimparSweepConfig;

typedef struct {
    SimparSweepArgs args;
    GArray *numbers[SIMPAR_SWEEP_N_NUMBERS]; /* gint64; empty: not given */
    GPtrArray *names[SIMPAR_SWEEP_N_NAMES];  /* char *; modes always filled */
    GArray *models;                          /* SimparModel per --model entry */
    const SimparTopologyPreset *preset;      /* or NULL with args.topology */
    guint platform_gpus;                     /* --topology: its GPUs */
    GArray *platform_nodes;                  /* --topology: node of each GPU (guint) */
    const SimparBackend *backend;
    SimparRun run; /* collective settings */
    SimparAttentionImpl attention;
    gboolean all_slices;                /* --tp-slices all */
    double budget_s;                    /* --time-budget, in seconds */
    const SimparBackend *block_backend; /* --block-backend, or NULL: --backend's */
    SimparSweepRankBy rank_by;
    guint jobs, shard, n_shards; /* n_shards 0: not sharded */
    char *id, *spec_text;        /* the sweep's identity */
    guint64 total;               /* configurations */
    guint64 *per_gpus;           /* configurations per --gpus entry */
} SimparSweep;

typedef gboolean (*SimparSweepVisit)(const SimparSweepConfig *config, gpointer data,
                                     GError **error);

/* cmd-sweep.c: the command line and its --spec file into sw->args (sw zeroed by the caller,
 * simpar_sweep_clear'ed after, even on failure); *parts the arguments left (--merge's shards).
 * Parsing only: nothing is resolved, read (but the spec) or run. */
gboolean simpar_sweep_parse_args(SimparSweep *sw, int argc, char **argv, GStrv *parts,
                                 GError **error);

/* sweep-spec.c: parsing and enumeration */
gboolean simpar_sweep_parse_rank_by(const char *name, SimparSweepRankBy *out, GError **error);
gboolean simpar_sweep_parse_list(const char *flag, const char *text, gboolean doubling, gint64 min,
                                 gint64 max, GArray *out, GError **error);
/* Checks every option and expands the lists; the platform facts are filled later. */
gboolean simpar_sweep_resolve(SimparSweep *sw, GError **error);
/* The GPUs of one node of a --preset sweep's platforms: the preset's, or --rack-gpus. */
guint simpar_sweep_node_gpus(const SimparSweep *sw);
/* Calls visit() for every configuration in index order; stops at the first FALSE. */
gboolean simpar_sweep_enumerate(const SimparSweep *sw, SimparSweepVisit visit, gpointer data,
                                GError **error);
/* The identity (id, spec_text) and counts (total, per_gpus) of the resolved sweep. */
gboolean simpar_sweep_identify(SimparSweep *sw, GError **error);
/* Every option that changes a row, in a fixed order, lists expanded, and each input file's
 * name and content hash: the text the identity hashes (transfer full). */
char *simpar_sweep_spec_text(const SimparSweep *sw);
void simpar_sweep_clear(SimparSweep *sw);

/* sweep-row.c: one row */
extern const char *const simpar_sweep_columns[SIMPAR_SWEEP_N_COLUMNS];
/* The configuration's CSV line predicted on `platform` (in a worker), with `backend`; `cache`
 * (or NULL) holds what the worker's earlier rows computed. */
void simpar_sweep_row_predict(const SimparSweep *sw, const SimparSweepConfig *c,
                              const SimparPlatform *platform, const SimparGpu *gpu,
                              const SimparBackend *backend, SimparPredictCache *cache,
                              GString *line);
/* v as printf's "%.9g" writes it, the rows' number format, into out[SIMPAR_SWEEP_NUMBER_LEN]
 * (faster than printf in a worker). */
#define SIMPAR_SWEEP_NUMBER_LEN 32
void simpar_sweep_format_number(double v, char *out);
/* A row of status "failed" with `reason`, from the configuration alone. */
void simpar_sweep_row_failed(const SimparSweep *sw, const SimparSweepConfig *c,
                             const SimparBackend *backend, const char *reason, GString *line);

/* sweep-run.c: the whole sweep into args.output; *summary as simpar_sweep_write_output's. */
gboolean simpar_sweep_run(SimparSweep *sw, char **summary, GError **error);

/* sweep.c: the output */
/* FALSE naming `name` and the line when row i says "ok" but holds a figure simpar does not
 * write (not a finite number >= 0, or a step outside 1e-7 s to a year: a forged row would rank
 * first); `fix` ends the message. For journals on resume and shards on merge. */
gboolean simpar_sweep_row_figures_ok(const SimparCsv *csv, guint i, const char *name,
                                     const char *fix, GError **error);
/* The comment lines of the journal and output (each ending in '\n'). */
char *simpar_sweep_comments(const SimparSweep *sw); /* (transfer full) */
/* The output from the journal's rows: every configuration of the shard once; `refined` (may be
 * NULL) lists the indices whose SimGrid row replaces the analytic one. *summary (transfer full)
 * says what the output holds: counts, the best configuration per GPU count, the top 10. */
gboolean simpar_sweep_write_output(const SimparSweep *sw, SimparCsv *journal, GHashTable *refined,
                                   char **summary, GError **error);
/* The K best ok rows of `journal` with `backend` (indices, best first). */
GArray *simpar_sweep_best(const SimparSweep *sw, SimparCsv *journal, const char *backend,
                          guint k); /* (transfer full) */
/* --merge: the shard files in `parts` into args.output (sw: args only; filled here). */
/* The configuration columns (index to backend) each index's row must hold, by index (char **
 * of the row's fields), as `backend` writes them (transfer full). */
GHashTable *simpar_sweep_expected(const SimparSweep *sw, const SimparBackend *backend,
                                  GError **error);
/* Row i holds `want` (virtual stages and backend aside: the backend's own row; the nodes where
 * `want` has none, its platform not read). */
gboolean simpar_sweep_row_is(const SimparCsv *csv, guint i, char **want);
/* The rows (simpar_sweep_expected) of the sweep whose spec is `spec_text`, rebuilt from it. */
typedef GHashTable *(*SimparSweepRebuild)(const char *spec_text, GError **error);
gboolean simpar_sweep_merge(SimparSweep *sw, char **parts, SimparSweepRebuild rebuild,
                            char **summary, GError **error);

G_END_DECLS
#endif /* SIMPAR_SWEEP_H */
