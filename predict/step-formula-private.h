/* step-formula-private.h - the formula mode's state, shared by its two halves (private to
 * predict/step-formula*.c).
 *
 * step-formula.c sets a configuration up (closed forms of its collectives and Adam, the routes
 * between stages, whether one rank stands for each stage) and turns figures at m into a row;
 * step-formula-ops.c emits the ops of the chains of one evaluation (models/step.c's program
 * order, each op with its closed form), orders them and reads the figures off:
 *
 *   chain (t, d): stage 0 ops | stage 1 ops | ...        one chain (0, 0) when the ranks of a
 *   op: end = (max(start of its ring's members) + a) + b  stage run alike, else all T x D
 *   start = max(end of its stream predecessor, end of its dep)
 *
 * A ring links the members of one collective (the sender and receiver of a message, the ranks
 * of a group that the evaluation holds); an op alone is a ring of one.
 *
 * Ownership: a Formula's arrays are its own (step-formula.c frees them).
 */
#ifndef SIMPAR_STEP_FORMULA_PRIVATE_H
#define SIMPAR_STEP_FORMULA_PRIVATE_H
#include "step-formula.h"
G_BEGIN_DECLS

#define FORMULA_NONE G_MAXUINT

/* Differences from a line or a period up to this fraction of the step count as rounding. */
#define FORMULA_AFFINE_TOL 1e-12

typedef enum {
    FORMULA_BLOCK,
    FORMULA_RECV,
    FORMULA_SEND,
    FORMULA_COLL,
    FORMULA_ADAM,
    FORMULA_ZERO, /* the gradient buffer zeroed before the first forward (models/step.c) */
} FormulaKind;

enum {
    FORMULA_COMPUTE,
    FORMULA_SEND_FWD,
    FORMULA_SEND_BWD,
    FORMULA_DP,
    FORMULA_N_STREAMS
};

/* The block keys of step.h. */
typedef enum {
    FORMULA_LAYER_FWD,
    FORMULA_LAYER_BWD,
    FORMULA_EMBED_FWD,
    FORMULA_EMBED_BWD,
    FORMULA_HEAD_FWD,
    FORMULA_HEAD_BWD,
    FORMULA_FP8_CAST,
    FORMULA_TP_STATS,  /* "optimizer.tp-stats" */
    FORMULA_DENSE_FWD, /* an MoE model's dense layers (--dense-layers, --moe-every) */
    FORMULA_DENSE_BWD,
    FORMULA_DENSE_FP8_CAST,
    FORMULA_N_KEYS,
} FormulaKey;

/* The group axes of the step's collectives. */
typedef enum {
    FORMULA_AXIS_DP,     /* over d: gradient reductions, parameter all-gathers */
    FORMULA_AXIS_TP,     /* over t: scatter/gather's all-gather after a recv */
    FORMULA_AXIS_EMBED,  /* stages 0 and P-1: tied embeddings */
    FORMULA_AXIS_STATS,  /* Megatron's gradient statistics but their tensor-parallel part
                            (models/step.c, step_scalars): the stages of (t, d), or with ZeRO >= 1
                            every (d, p) of t */
    FORMULA_AXIS_OPT_DP, /* the optimizer's scalars over the ranks of d: PyTorch's FSDP norm,
                            Megatron's loss on the last stage */
    FORMULA_AXIS_EDP,    /* an MoE model's experts: their expert-data-parallel group (train.h,
                            Megatron-Core's expert numbering), the ranks of the stage that hold
                            the same experts */
    FORMULA_N_AXES,
} FormulaAxis;

/* What an evaluation gives: the breakdown's sums on the rank that ends last (its index into the
 * ends in FORMULA_CRIT), then the end of every (chain, stage), chain-major. */
typedef enum {
    FORMULA_STEP,
    FORMULA_FORWARD,
    FORMULA_BACKWARD,
    FORMULA_COMPUTE_S,
    FORMULA_OTHER,
    FORMULA_BUBBLE,
    FORMULA_P2P,
    FORMULA_DP_EXPOSED,
    FORMULA_OPTIMIZER,
    FORMULA_BYTES,
    FORMULA_TP_EXPOSED,
    FORMULA_LAYER_BLOCKS,
    FORMULA_FP8_CAST_S,    /* the "fp8.cast" blocks' time */
    FORMULA_DENSE_EXPOSED, /* an MoE model's dense layers' blocks: their exposure, their count */
    FORMULA_DENSE_BLOCKS,
    FORMULA_PERIODIC, /* 1: the evaluation reached its periodic regime (formula_run) */
    FORMULA_CRIT,
    FORMULA_N_FIGURES,
} FormulaFigure;

typedef struct {
    double a, b, bytes, start, end;
    guint dep;     /* the op it waits for besides its stream predecessor, or NONE */
    guint partner; /* the next member of its ring (itself when alone) */
    guint next;    /* the next op of its stream, or NONE */
    guint chain, stage, count;
    guint8 kind, stream, phase, key, axis;
} FormulaOp;

/* Everything an evaluation depends on but m (with m: the memo key of its figures). */
typedef struct {
    gint64 T, P, D, v, lc, zero, sg, overlap, tied, bucket_params, schedule, stride[3], wide;
    gint64 first_layers, last_layers; /* lc 0: the uneven split (with layers) */
    gint64 accounted;                 /* the embedding (1) and the loss (2) counted in the split */
    const void *split;                /* the pipeline layout (train.h's SimparLayout), or NULL */
    gint64 vp_group;                  /* interleaved: micro-batches per virtual-stage group */
    gint64 hidden, heads, seq, micro_batch, layers, ffn, vocab, dtype, recompute, sp, depth, q;
    gint64 kv_heads, mlp, norm, no_bias, fp8;
    gint64 paper, act, layer_params, ends, proto, max_chunks, mode, m;
    gint64 flow; /* 1: the figures of formula_flow (no FORMULA_PERIODIC), else formula_run's */
    double dsize, chunk_bytes, block_s[FORMULA_N_KEYS], block_c[FORMULA_N_KEYS], adam[6];
    double zgrad[5]; /* what the zero-grad op's time depends on but its count (compute.c) */
    gint64 scalars, n_scalars; /* the optimizer's scalar all-reduces (models/train.h, step.h) */
    double pg8; /* --fp8-param-gather: the layers' parameters' wire bytes over bf16's */
    const void *net, *algo, *tp_mode; /* tp_mode: the row of the generator table */
    /* an MoE model (models/step.c's two kinds of gradients): whether it has experts, its
     * expert-data-parallel ranks DE, the expert numbering's strides, a layer's experts' share
     * of layer_params, a dense layer's parameters (0: none), where its MoE layers lie */
    gint64 moe, DE, ep, etp, expert_stride[5], le, lpd, dense_layers, moe_every;
} FormulaConfig;

/* models/step.c's two kinds of gradients: the rest, reduced over the data-parallel group, and
 * the routed experts', over the expert-data-parallel group. */
enum {
    FORMULA_GRADS_DENSE,
    FORMULA_GRADS_EXPERT,
};

/* A group's members as rank distances from its first: k % n stride + k / n stride2, k < n n2. */
typedef struct {
    guint stride, n, stride2, n2;
} FormulaShape;

/* formula_run's arrays, kept by the cache between evaluations (simpar_predict_cache_scratch). */
typedef enum {
    FORMULA_BUF_OPS,
    FORMULA_BUF_LAST,
    FORMULA_BUF_PENDING,
    FORMULA_BUF_ITEMS,
    FORMULA_BUF_WAITING,
    FORMULA_BUF_DEPENDENTS,
    FORMULA_BUF_FIRST_DEP,
    FORMULA_BUF_FILL,
    FORMULA_BUF_READY,
    FORMULA_N_BUFS,
    FORMULA_BUF_FLOW = FORMULA_N_BUFS, /* step-formula-flow.c's ends (doubles) */
} FormulaBuf;

typedef struct {
    const SimparStepTimer *tm;
    const SimparTrain *tr;
    SimparPredictCache *cache;
    FormulaConfig c;
    guint T, P, D, v, lc; /* lc: layers per chunk, 0 when the chunks differ */
    guint n_chains;       /* 1: chain (0, 0) for all; else T x D, chain t + T d */
    const SimparModel *model;
    SimparRankFacts *facts;       /* per tensor-parallel rank */
    SimparRankFacts *dense_facts; /* an MoE model's dense layer's, or NULL */
    SimparRoute *fwd, *bwd;       /* per (chain, stage p): to stage (p + 1) % P, and back */
    guint *end_rank;              /* per (chain, stage): the lowest rank it stands for */
    /* one evaluation */
    guint m, n_vs;
    GArray *ops;      /* FormulaOp, chain by chain, stage by stage in program order */
    guint n_ops;      /* emitted so far (ops->len is the room until they are all emitted) */
    guint *last;      /* per (chain, stage, stream): its last op so far */
    guint *pending;   /* per (chain, message tag): the end emitted first, or NONE */
    GHashTable *ring; /* (axis, group, sequence) -> the ring's first op */
    guint seq[FORMULA_N_AXES];
    guint chain, t, d, p, last_compute, last_dp;
    gsize open[2];     /* gradients in the open bucket of each kind (FORMULA_GRADS_*) */
    GArray *buckets;   /* (count, ready, kind) */
    guint *item_first; /* uneven chunks: per (chain, stage), its items' first ops, 2 m v + 1 */
    GArray *buf[FORMULA_N_BUFS];
} Formula;

/* step-formula.c: a collective of the ranks of (t, d, p) on `axis` (`count` per rank, as the
 * op gives it), one group's time or, with one chain, the time every group takes. */
double formula_coll_time(Formula *f, SimparCollKind kind, gsize count, FormulaAxis axis);
double formula_adam_time(Formula *f, gsize count);
/* The ranks of a group of `axis`; whether Megatron's gradient statistics leave a group beside
 * their tensor-parallel part. */
guint formula_axis_size(const Formula *f, FormulaAxis axis);
gboolean formula_stats_group(const Formula *f);
/* step-formula-ops.c: whether layer l of virtual stage vs is one of an MoE model's dense layers
 * (models/step.c's step_dense), and the runs of layers of one kind of vs (its blocks a pass). */
gboolean formula_dense(const Formula *f, guint vs, guint l);
guint formula_layer_runs_of(const Formula *f, guint vs);
/* The expert-data-parallel group of `rank` on stage p: its index (p, expert-parallel rank,
 * expert-tensor rank) and its first member into *first. */
guint formula_edp_group(const Formula *f, guint rank, guint p, guint *first);
double formula_zero_time(Formula *f, gsize count);

/* The micro-batches of one period of the schedule's table (interleaved: its groups of N). */
guint formula_period(const Formula *f);

/* step-formula-ops.c: the figures with m micro-batches into fig (FORMULA_N_FIGURES + n_chains P,
 * zeroed); with uneven chunks (lc 0), FORMULA_PERIODIC says whether the step has reached its
 * periodic regime before its end (formula_periodic): from there one more period of micro-batches
 * adds the same time to every op that follows. */
void formula_run(Formula *f, guint m, double *fig);

/* formula_run's parts: the ops of a step of m micro-batches (items: with item_first), their
 * spans (an op's start, when set before, is the earliest it may start), the ends and the rank
 * that ends last into fig, the breakdown's walk of that rank's ops from op `from` on, its
 * compute stream free from t, and the arrays released. */
void formula_emit(Formula *f, guint m, gboolean items);
void formula_evaluate(Formula *f);
void formula_ends(const Formula *f, double *fig);
void formula_walk(const Formula *f, guint from, double t, double *fig);
void formula_done(Formula *f);
/* One compute-stream op of the walked rank, `gap` after the previous one, `busy` long. */
void formula_charge(const Formula *f, const FormulaOp *op, double gap, double busy, double *fig);

/* step-formula-flow.c: whether a GPipe or 1F1B step of m micro-batches has its stages' item
 * times (one chain of one chunk a stage, no reduction before the last backward, m >= 3), and its
 * figures as formula_run's from them. */
gboolean formula_flow_applies(const Formula *f, guint m);
void formula_flow(Formula *f, guint m, double *fig);

G_END_DECLS
#endif /* SIMPAR_STEP_FORMULA_PRIVATE_H */
