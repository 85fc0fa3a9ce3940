/* tp-layer.h - the shared driver of the tensor-parallel layer generators (private to models/).
 *
 * Every mode computes the same pre-LN layer
 *   x -> LN1 -> QKV -> attention -> proj -> dropout -> +x = r1 -> LN2 -> fc1 -> GeLU -> fc2
 *     -> dropout -> +r1 = y
 * or its modern flavours (model.h): grouped-query attention (QKV holds a + 2 kv head columns,
 * grouped as q of the group's heads | k | v, so a column split keeps groups whole), SwiGLU (fc1
 * holds interleaved (gate, up) column pairs, so a column split keeps pairs whole) and RMSNorm.
 * and its backward. The driver (tp-layer.c) emits everything but the linears: layer norms
 * (with their statistic all-reduces on geom.ln_group), attention, GeLU, dropout, residuals, bias
 * adds and bias-gradient all-reduces. A scheme (one per tp-*.c file) says where each rank's
 * blocks sit (setup) and emits the communication and GEMMs of one linear forward and backward.
 *
 *   scheme->setup(ctx)        coordinates, groups, blocks of this rank
 *   scheme->linear_fwd(ctx)   in -> out (without bias)   e.g. 3-D: AG x, AG w, GEMM, RS y
 *   scheme->linear_bwd(ctx)   dy -> dx, dW               e.g. 3-D: AG dy, GEMM, RS dx, GEMM, RS dW
 *
 * With multi-head latent attention (model.h) the QKV linear gives way to the four projections
 * below, joined by tp-mla.c.
 *
 * Cross-stream dependencies are derived: an op on the compute stream waits for every earlier
 * op of its rank on the communication stream that touches the same elements, and the reverse.
 *
 * Context parallelism (plan->cp = C) is the driver's too: the schedule has T x C ranks, rank
 * t + T c, and each group of T runs the scheme on its share of every sequence (chunks c and
 * 2C-1-c, the model's seq / C), its rows placed after the other groups' in the global tensors
 * (simpar_cp_position); attention packs the k and v columns, all-gathers them over "cp" and
 * reduce-scatters their gradients back; weight gradients are PARTIAL shards (summed over "cp").
 *
 * Recomputation (plan->recompute) is the driver's too, so every scheme has it:
 *   selective   backward: ... proj bwd -> [attention] -> attention-bwd -> ...
 *   full        backward: [the whole forward again, collectives included] -> fc2 bwd -> ...
 * and selective's modules (plan.h, --recompute-modules), each run again where Megatron-Core runs
 * it: layernorm's second norm and mlp's fc1 -> act -> fc2 before fc2's backward (an MoE layer:
 * the norm before the MoE block's), the first norm before proj's backward, mla_up_proj's latent
 * norms and up projections before the attention core's backward (and core_attn's attention).
 * Recomputed ops are named "bwd.recompute.*" (backward phase). A recompute replays the
 * forward's buffer requests: simpar_layer_buffer hands back the buffers the forward made, in
 * the same order (from a mark: simpar_layer_mark), so the recomputed ops rewrite the saved
 * activations in place.
 *
 * Ownership: the context borrows the schedule, model and plan; it owns its async list and its
 * list of forward buffers.
 */
#ifndef SIMPAR_TP_LAYER_H
#define SIMPAR_TP_LAYER_H
#include "generators.h"
G_BEGIN_DECLS

/* The linears; multi-head latent attention (model.h) has no QKV but the four projections
 * after FC2, without biases:
 *   u -> q_down [h x q] -> norm -> q_up [q x a dqk] ----------------> q  \
 *   u -> kv_down [h x (kv + pe)] -> kv | pe; kv -> norm -> kv_up [kv x a (dk + dv)] -> k, v
 *                                        pe (one key part for every head) --------------/
 * A scheme that runs MLA places the down projections whole on every rank of the tensor-parallel
 * group (Megatron-Core's duplicated linears) and the up projections as it places QKV. */
enum {
    SIMPAR_LIN_QKV,
    SIMPAR_LIN_PROJ,
    SIMPAR_LIN_FC1,
    SIMPAR_LIN_FC2,
    SIMPAR_LIN_Q_DOWN,
    SIMPAR_LIN_Q_UP,
    SIMPAR_LIN_KV_DOWN,
    SIMPAR_LIN_KV_UP,
    SIMPAR_N_LINEARS
};

#define SIMPAR_NO_GROUP G_MAXUINT
#define SIMPAR_MAX_AXES 6

typedef struct {
    guint64 row0, rows, col0, cols; /* a local block of a global matrix */
} SimparBlock;

typedef struct {
    SimparBlock res;       /* residual stream: x, r1, y and the layer-norm inputs */
    guint nb, nh, nkv;     /* attention: local sequences, heads and key/value heads */
    guint64 batch0, head0; /* global index of the first local sequence / head */
    guint ffn_cols;        /* local columns of the activation (fc2's input; fc1's output is
                            * twice as wide with SwiGLU) */
    guint ln_group;        /* sums layer-norm statistics over the row, or SIMPAR_NO_GROUP */
    gboolean ln_split;     /* two all-reduces (sums, sums of squares) instead of one */
    guint ln_param_group;  /* sums gamma/beta gradients, or SIMPAR_NO_GROUP */
    guint seq_group;       /* MLA: the group the layer's tokens are split over (sequence
                            * parallelism; gathers the shared key part), or SIMPAR_NO_GROUP */
    guint head_group;      /* MLA: the group the heads are split over (sums the shared key
                            * part's gradient), or SIMPAR_NO_GROUP */
    SimparBlock weight[SIMPAR_N_LINEARS]; /* local block of each weight [in x out] */
    SimparBlock bias[SIMPAR_N_LINEARS];   /* local block of each bias [1 x out] */
    guint bias_group[SIMPAR_N_LINEARS];   /* sums bias gradients, or SIMPAR_NO_GROUP */
} SimparLayerGeom;

typedef struct {
    guint w, b, dw, db; /* parameter and gradient buffers */
    SimparView in;      /* the input the forward got, saved for the backward */
    guint64 in_rows;    /* its rows */
    guint saved[2];     /* scheme-owned saved buffers (e.g. gathered input and weight) */
    SimparView dest;    /* where the forward's output goes (simpar_layer_output), or
                           SIMPAR_NO_VIEW: a buffer of its own */
} SimparLinearState;

typedef struct {
    SimparSchedule *sched;
    const SimparModel *model; /* with context parallelism: the rank's share, seq = s / C */
    const SimparPlan *plan;
    const SimparTpScheme *scheme;
    guint rank;     /* in the schedule: trank + T cp_rank */
    guint trank;    /* in the tensor-parallel group (what schemes place blocks by) */
    guint cp_rank;  /* in the context-parallel group */
    guint cp_group; /* that group, or SIMPAR_NO_GROUP without context parallelism */
    guint comm;     /* the asynchronous communication stream */
    guint cp_send;  /* ring attention: the stream of its sends (its receives are on comm) */
    guint tp_send;  /* --tp-comm-overlap: the streams of the ring exchange's sends and */
    guint tp_recv;  /* receives (Transformer Engine's _stream_send, _stream_recv) */
    SimparPhase phase;
    guint coord[3];               /* the scheme's coordinates of this rank */
    guint group[SIMPAR_MAX_AXES]; /* the scheme's groups of this rank, by axis */
    SimparLayerGeom geom;
    SimparLinearState lin[SIMPAR_N_LINEARS];
    GArray *async;        /* op indices of this rank on the comm stream */
    gboolean recomputing; /* emitting forward ops again in the backward */
    GArray *fwd_bufs;     /* full recompute or a module's: buffers the forward made, in order;
                             else NULL */
    guint n_replayed;     /* while recomputing: forward buffers handed out again */
    guint mla_mark[4];    /* mla_up_proj: where the query's and key/value's up parts' buffers
                             start and end among fwd_bufs */
    SimparView mla_in[2]; /* mla_up_proj: the query latent and the key/value latent (kept) */
} SimparLayerCtx;

typedef struct {
    const char *name; /* axis name in summaries */
    guint n_dims;     /* how many rank coordinates vary inside one group */
    guint stride[2], size[2];
} SimparAxis;

struct _SimparTpScheme {
    guint n_axes;
    SimparAxis (*axis)(const SimparPlan *plan, guint axis);
    void (*setup)(SimparLayerCtx *c);
    SimparView (*linear_fwd)(SimparLayerCtx *c, guint which, SimparView x);
    SimparView (*linear_bwd)(SimparLayerCtx *c, guint which, SimparView dy);
};

SimparSchedule *simpar_layer_build(const SimparModel *model, const SimparPlan *plan,
                                   const SimparTpScheme *scheme); /* (transfer full) */

/* Where the forward's next buffer falls among fwd_bufs (0 when none are kept); replaying from
 * such a mark recomputes (names "bwd.recompute.*") until the end, which asserts the replay
 * reached the `to` mark. */
guint simpar_layer_mark(const SimparLayerCtx *c);
void simpar_layer_replay_begin(SimparLayerCtx *c, guint from);
void simpar_layer_replay_end(SimparLayerCtx *c, guint to);

/* Helpers for schemes. Names get the phase prefix ("fwd."/"bwd."/"bwd.recompute.") and the
 * linear's name. */
const char *simpar_layer_linear_name(guint which);
guint64 simpar_layer_linear_in(const SimparModel *model, guint which);  /* K */
guint64 simpar_layer_linear_out(const SimparModel *model, guint which); /* N */
guint simpar_layer_buffer(SimparLayerCtx *c, guint which, const char *what, gsize elems);
/* A linear's forward output: lin[which].dest when the driver set one, else a new buffer. */
SimparView simpar_layer_output(SimparLayerCtx *c, guint which, const char *what, gsize elems);
void simpar_layer_gemm(SimparLayerCtx *c, guint which, const char *what, const SimparGemm *g);
void simpar_layer_coll(SimparLayerCtx *c, guint which, const char *what, const SimparColl *coll,
                       gboolean async);
/* A send or receive of `count` elements at `v` to or from global rank `peer`, on `stream`. */
void simpar_layer_p2p(SimparLayerCtx *c, SimparOpKind kind, guint stream, guint which,
                      const char *what, guint peer, guint tag, SimparView v, gsize count);
SimparView simpar_view(guint buf, gsize off);
gboolean simpar_layer_require_divisible(const char *flag, gint64 value, gint64 by, const char *why,
                                        GError **error);
/* --kv-heads divisible by the `by` column blocks of QKV: a block holds whole groups. */
gboolean simpar_layer_require_kv(const SimparModel *m, gint64 by, const char *why, GError **error);
guint simpar_layer_int_root(gint64 n, guint power);

/* The driver's pieces that tp-mla.c builds multi-head latent attention from. A norm over the
 * columns of a block of rows: the residual stream's (ln1, ln2) or an MLA latent's. */
typedef struct {
    guint params, grads; /* [gamma | beta] (RMSNorm: gamma) and their gradients */
    guint xhat, rstd;
    guint64 rows, col0, cols, width; /* the local block [rows x cols] at col0 of rows `width`
                                        wide: the residual stream's, or an MLA latent's */
    guint group;                     /* sums the statistics over the row, or SIMPAR_NO_GROUP */
} SimparLayerNorm;

void simpar_layer_norm_params(SimparLayerCtx *c, SimparLayerNorm *ln, const char *name);
SimparView simpar_layer_norm_fwd(SimparLayerCtx *c, SimparLayerNorm *ln, SimparView x);
SimparView simpar_layer_norm_bwd(SimparLayerCtx *c, SimparLayerNorm *ln, SimparView dy);
/* A linear through the scheme, its bias added (forward) or its gradient summed (backward). */
SimparView simpar_layer_linear_fwd(SimparLayerCtx *c, guint which, SimparView x, guint64 in_rows);
SimparView simpar_layer_linear_bwd(SimparLayerCtx *c, guint which, SimparView dy);
void simpar_layer_kernel(SimparLayerCtx *c, SimparOpKind kind, guint which, const char *what,
                         SimparKernel k);
SimparView simpar_layer_elementwise(SimparLayerCtx *c, SimparOpKind kind, const char *what,
                                    guint64 rows, guint64 cols, SimparView a, SimparView b);
/* An all-reduce (sum) over `group`; nothing for SIMPAR_NO_GROUP. */
void simpar_layer_allreduce(SimparLayerCtx *c, guint which, const char *what, guint group,
                            SimparView v, gsize count);
/* The attention input's elements (qkv, or the latent layout's three regions, whose starts go
 * to at[] when it is not NULL). */
gsize simpar_layer_qkv_elems(const SimparLayerCtx *c, gsize at[3]);

/* A linear's weight and bias (when it has one) and their gradients, with their shards. */
void simpar_layer_linear_params(SimparLayerCtx *c, guint which);

/* How the attention's input comes from the first norm's output u, with the parameters it
 * takes: the QKV linear (tp-layer.c), or multi-head latent attention's latents (tp-mla.c:
 * the attention input in the latent layout; `latent` holds the latents' norms). */
typedef struct {
    void (*params)(SimparLayerCtx *c, SimparLayerNorm latent[2]);
    SimparView (*fwd)(SimparLayerCtx *c, SimparLayerNorm latent[2], SimparView u);
    SimparView (*bwd)(SimparLayerCtx *c, SimparLayerNorm latent[2], SimparView dqkv);
    /* mla_up_proj: the up part of fwd again (NULL: the QKV linear has none) */
    void (*recompute)(SimparLayerCtx *c, SimparLayerNorm latent[2]);
} SimparAttnInput;

extern const SimparAttnInput simpar_mla_input;

/* An MoE layer's MLP part as the attention part meets it (tp-moe.c): fwd hands the second
 * norm's output u2 to the MoE block ("moe.x"; a grid mode all-to-alls it into the block's token
 * layout) and returns its output ("moe.y") added to r1: y; bwd hands dy to the block ("moe.dy")
 * and returns its input gradient ("moe.dx") in the layer's layout, for the norm's backward. */
typedef struct {
    SimparView (*fwd)(SimparLayerCtx *c, SimparView u2, SimparView r1);
    SimparView (*bwd)(SimparLayerCtx *c, SimparView dy);
} SimparMoePart;

extern const SimparMoePart simpar_moe_part;

/* The generators (one file each) and the SUMMA core shared by 2-D and 2.5-D (tp-summa.c). */
extern const SimparTpScheme simpar_tp1d_scheme, simpar_tp2d_scheme, simpar_tp2p5d_scheme,
    simpar_tp3d_scheme;
gboolean simpar_tp1d_validate(const SimparModel *model, SimparPlan *plan, GError **error);
gboolean simpar_tp2d_validate(const SimparModel *model, SimparPlan *plan, GError **error);
gboolean simpar_tp2p5d_validate(const SimparModel *model, SimparPlan *plan, GError **error);
gboolean simpar_tp3d_validate(const SimparModel *model, SimparPlan *plan, GError **error);
SimparAxis simpar_summa_axis(const SimparPlan *plan, guint axis);
void simpar_summa_setup(SimparLayerCtx *c);
SimparView simpar_summa_linear_fwd(SimparLayerCtx *c, guint which, SimparView x);
SimparView simpar_summa_linear_bwd(SimparLayerCtx *c, guint which, SimparView dy);
gboolean simpar_summa_validate(const SimparModel *m, const SimparPlan *plan, guint d,
                               GError **error);

G_END_DECLS
#endif /* SIMPAR_TP_LAYER_H */
