/* step-private.h - the step builder's state, shared by its timed-block and executable modes
 * (step.c, step-ops.c, step-overlap.c; private to models/).
 *
 * step.c walks every rank's pipeline order and emits receives, sends, data-parallel buckets
 * and the optimizer; what a chunk of layers or an end computes is a timed block there, and in
 * the executable mode (step-ops.c) the ops of the layer and ends schedules, copied onto the
 * rank with their buffers, groups and dependencies mapped:
 *
 *   layer schedule, tp rank t --copy--> step rank (t, d, p), one instance per (layer, micro)
 *     parameters   -> the rank's flat "params" buffer (where Adam updates them)
 *     gradients    -> the instance's scratch, added into the flat "grads" after its backward
 *     x, y, dx, dy -> the residual stream of (layer, micro) and its gradient, shared with the
 *                     neighbouring layers, the ends and the pipeline's send/recv
 *     the rest     -> fresh buffers of the instance
 */
#ifndef SIMPAR_STEP_PRIVATE_H
#define SIMPAR_STEP_PRIVATE_H
#include "pipeline.h"
#include "step.h"
G_BEGIN_DECLS

enum {
    STEP_COMPUTE,
    STEP_COMM,
    STEP_SEND_FWD,
    STEP_SEND_BWD,
    STEP_DP,
    STEP_GATHER,
    STEP_N_STREAMS
};

/* Local parallelism without a flush: this many steps are generated back to back and the
 * report measures the last one (the first fills the pipeline). */
#define STEP_ASYNC_STEPS 3

/* The two kinds of gradients, each with its buckets: every parameter but the routed experts'
 * (reduced over the data-parallel group), and the routed experts' (over the
 * expert-data-parallel group, train.h: Megatron-Core's separate expert gradient buffers). */
enum {
    STEP_DENSE,
    STEP_EXPERT,
    STEP_N_KINDS
};

typedef struct {
    gsize off, count; /* a range of the rank's gradient buffer */
    guint ready;      /* the op after which its gradients are final */
    guint kind;       /* STEP_DENSE or STEP_EXPERT */
} StepBucket;

/* --overlap-param-gather: one bucket of parameters all-gathered at the step's start */
typedef struct {
    gsize off, count; /* a range of the rank's parameters (a gradient bucket's) */
    gsize ends;       /* of count, the ends' (gathered in the model's dtype under FP8) */
    guint kind;       /* STEP_DENSE or STEP_EXPERT */
    guint chunk;      /* the model chunk it belongs to */
    guint gather;     /* its all-gather, or G_MAXUINT before it is issued */
    gboolean waited;  /* a forward has waited for it */
} StepParamBucket;

typedef struct {
    SimparSchedule *s;
    const SimparModel *model;
    const SimparTrain *tr;
    const SimparSchedule *layer;
    guint T, P, D, v, m, n_vs; /* n_vs: virtual stages (layers of each: train.h) */
    guint Ttp, C, DR;          /* T = Ttp x C layer ranks; DR = D x C hold the same params */
    guint slice;               /* the tensor-parallel index built, or G_MAXUINT: all of them */
    SimparTrain numbering;     /* ranks: tr itself, or the slice's split with T = 1 */
    gboolean local;
    guint *dp_group, *tp_group, *embed_group;
    guint *stats_group, *loss_group; /* the scalar all-reduces' groups (step.c, step_scalars) */
    guint n_scalars;                 /* the optimizer's scalar all-reduces per step */
    guint scalar_buf;                /* the rank's buffer for them */
    guint S, R;                      /* ZeRO shard groups of S replicas, R = D / S of them */
    guint *shard_group, *rep_group;  /* per (t, p, d / S) and (t, p, d % S); NULL if S = D */
    guint gf;                        /* gradient elements per dtype element (fp32 reduction) */
    guint DE;               /* the expert-data-parallel group's ranks (1: no expert gradients) */
    guint *edp_group;       /* per (p, expert-parallel rank x ETP + expert-tensor rank) */
    guint e_group, e_index; /* the rank's expert-DP group and its place in it */
    /* --fp8-param-gather: the parameter all-gathers' bytes per bf16 byte of a layer's
     * parameters (its linears' weights in FP8, the rest in bf16); 1 without */
    double pg8;
    /* the rank being emitted */
    guint rank, t, d, p;
    SimparRankFacts facts;
    gsize ends; /* embedding / output / aux-head parameters of one end on this rank */
    guint grads, params, opt_m, opt_v, act_in, act_out, grad_in, grad_out;
    gsize layer_off[1024];   /* per chunk (v <= 1024): offset of its layers in the gradients */
    gsize expert_off[1024];  /* per chunk: offset of its layers' experts (after the rest) */
    guint layer_first[1024]; /* per chunk: the model's index of its first layer */
    gsize lp, le;            /* per layer: the parameters but the experts', the experts' */
    /* an MoE model's dense layers (simpar_model_has_dense_layers): their schedule's facts per
     * tensor-parallel rank (else NULL) and the rank's parameters of one of them (no experts) */
    SimparRankFacts *dense_facts;
    gsize lpd;
    gsize embed_off, head_off, aux_off, n_grads, n_expert; /* n_expert: of n_grads, experts */
    /* multi-token prediction (model.h) on the last stage: its modules' parameters but the
     * experts' at mtp_off (mtp_lp a module: its layer's, eh_proj's share and its norms), their
     * experts' at mtp_eoff (mtp_le a module), and the embedding's copy at last_embed_off (the
     * output layer's region when tied; G_MAXSIZE: none); mtp_n the modules on this rank */
    gsize mtp_off, mtp_eoff, mtp_lp, mtp_le, last_embed_off;
    guint mtp_n;
    GArray *buckets;                /* StepBucket */
    gsize open_off[STEP_N_KINDS];   /* start of the bucket being filled, per kind */
    gsize open_count[STEP_N_KINDS]; /* its parameters so far */
    guint last_compute;
    guint join;     /* the next compute block waits for this op (G_MAXUINT: none) */
    GArray *dp_ops; /* reduction ops of this rank in this step */
    GArray *pg;     /* --overlap-param-gather: the rank's StepParamBucket, gradient-bucket order */
    GArray *pg_fwd; /* the forwards (SimparPipeItem) of the rank's pipeline order */
    guint pg_forwards;    /* the forwards of this step emitted so far */
    guint prefetch[2];    /* ZeRO-3: the last two layer blocks (a gather waits for the older) */
    struct _StepOps *ops; /* the executable mode's state, or NULL for timed blocks */
} Step;

/* ----- shared by step.c and step-overlap.c ----- */

/* A timed block of `count` x `key` on `stream`; on the compute stream it becomes the last
 * compute op and waits for st->join. */
guint step_node(Step *st, const char *key, guint count, guint stream, SimparPhase phase);
gboolean step_reduces(const Step *st);
void step_grads_ready(Step *st, guint kind, gsize off, gsize count, guint ready);
guint step_lc(const Step *st, guint chunk);
gboolean step_dense(const Step *st, guint chunk, guint l);
void step_layer_place(const Step *st, guint chunk, guint l, gsize *off, gsize *lp, gsize *eoff,
                      gsize *le);
const char *step_layer_key(gboolean dense, gboolean backward);
/* --overlap-moe-expert-parallel-comm: the layers of forward `f` and backward `b` merged
 * (step-overlap.c); *f_last and *b_last: the last op of each so far, updated. */
void step_overlap_layers(Step *st, const SimparPipeItem *f, guint *f_last, const SimparPipeItem *b,
                         guint *b_last);

/* ----- the executable mode (step-ops.c) ----- */

gboolean step_ops_supported(const SimparModel *model, const SimparTrain *tr,
                            const SimparSchedule *layer, GError **error);
void step_ops_init(Step *st);
void step_ops_free(Step *st);
/* After step_rank_layout: the rank's residual buffers and the shards of its parameters,
 * gradients, tokens, targets and loss. */
void step_ops_rank(Step *st);
/* A layer (`k` of the chunk) or an end ("embed", "head"), forward or backward, micro `j`. */
void step_ops_layer(Step *st, guint chunk, guint k, guint j, gboolean backward);
/* Executable ZeRO-3: whether parameters live sharded; the rank's shard of the parameter region
 * [off, off + count) (each layer, each end) is [*lo, *hi). Otherwise the whole region. */
gboolean step_sharded_params(const Step *st);
void step_owned(const Step *st, gsize off, gsize count, gsize *lo, gsize *hi);
void step_ops_end(Step *st, const char *end, guint j, gboolean backward);
/* The buffer of the residual stream into global layer `level` (L: the output layer's input)
 * of micro-batch j, or of its gradient. */
guint step_ops_res(Step *st, guint level, guint j, gboolean grad);
/* `send` reads `buf`: a later op writing it (a full recomputation rewrites its layer's output
 * in place) waits for it. */
void step_ops_sent(Step *st, guint buf, guint send);
/* Op `to` waits for the sends that read what it writes (a receive into the buffer an earlier
 * send of the rank reads: a chunk of no layers sends what it received, at the level the rank's
 * other chunk receives at). */
void step_ops_after_sends(Step *st, guint to);

G_END_DECLS
#endif /* SIMPAR_STEP_PRIVATE_H */
