/* tp-1d.c - 1-D tensor parallelism (Megatron-LM), optionally with sequence parallelism.
 *
 * One group "tp" of P ranks. QKV and fc1 are column-parallel (weight [h x n/P], a/P heads per
 * rank), proj and fc2 row-parallel (weight [k/P x h]). Without SP the residual stream is
 * replicated: all-reduce after each row-parallel GEMM (forward) and of dX of each
 * column-parallel GEMM (backward, asynchronous, overlapping the weight-gradient GEMM).
 * With SP the residual stream is split into P blocks of tokens: all-gather before each
 * column-parallel GEMM, reduce-scatter after each row-parallel one; backward all-gathers dY,
 * re-gathers the column-parallel input for its weight gradient and reduce-scatters dX; the
 * layer-norm and row-parallel bias gradients are all-reduced over the group.
 *
 *   no SP:  [B x h] --qkv--> [B x 3h/P] --attn--> [B x h/P] --proj--> partial [B x h] --AR-->
 *   SP:     [B/P x h] --AG--> [B x h] --qkv--> ... --proj--> partial [B x h] --RS--> [B/P x h]
 *
 * Multi-head latent attention as Megatron-Core runs it (multi_latent_attention.py): the down
 * projections are duplicated, whole on every rank and applied to the rank's rows of the
 * residual stream (all of them without SP, its B/P with SP; their weight gradients then summed
 * over the group, asynchronously); their latents are normalised there; the up projections are
 * column-parallel (a/P heads each, the latents all-gathered with SP) and proj row-parallel over
 * a v_head_dim columns. The shared rotary key part is all-gathered with SP and its gradient,
 * summed over each rank's heads, reduce-scattered (all-reduced without SP).
 *
 *   SP:  [B/P x h] --q_down--> [B/P x q] --norm--AG--> [B x q] --q_up--> [B x a/P dqk]
 *                  --kv_down-> [B/P x kv | pe] --norm--AG--> [B x kv] --kv_up--> [B x a/P (dk+dv)]
 *                                          pe --AG--> [B x pe]
 *
 * --tp-comm-overlap (with SP): Transformer Engine's userbuffers as Megatron-Core turns them on
 * (megatron/core/extensions/transformer_engine.py: ub_overlap_ag, ub_overlap_rs, ub_bulk_dgrad,
 * ub_bulk_wgrad), with the methods of TE's defaults (transformer_engine/pytorch/module/base.py,
 * initialize_ub: `methods` and get_default_config):
 *   ring_exchange  qkv and fc1 forward, proj and fc2 data gradient: the gathered operand comes
 *                  one rank's block of B/P rows at a time around the ring (P - 1 point-to-point
 *                  steps on copy engines); the GEMM runs block by block, each block as soon as
 *                  it is there: [copy own | GEMM r | GEMM r-1 | ... | GEMM r+1] beside
 *                  [send r, recv r-1 | send r-1, recv r-2 | ...].
 *   pipeline       proj and fc2 forward: the GEMM in num_splits = 4 chunks, each chunk's
 *                  reduce-scatter beside the next chunk's GEMM (tp1d_pipeline_gemm_rs); the
 *                  GEMMs run on the SMs the communication kernels (num_sm = 16, set_sm_margin)
 *                  leave.
 *   bulk           qkv and fc1 backward: the input's all-gather beside the data-gradient GEMM,
 *                  the data gradient's reduce-scatter beside the weight-gradient GEMM (what the
 *                  schedule does without the flag too), each GEMM on the SMs the communication
 *                  kernels (num_sm = 16) leave.
 */
#include "tp-layer.h"

static SimparAxis
tp1d_axis(const SimparPlan *plan, guint axis)
{
    g_assert(axis == 0);
    return (SimparAxis){"tp", 1, {1, 0}, {plan->tp, 0}};
}

static gboolean
tp1d_column(guint which)
{
    return which == SIMPAR_LIN_QKV || which == SIMPAR_LIN_FC1 || which == SIMPAR_LIN_Q_UP ||
           which == SIMPAR_LIN_KV_UP;
}

/* MLA's down projections: whole on every rank. */
static gboolean
tp1d_duplicated(guint which)
{
    return which == SIMPAR_LIN_Q_DOWN || which == SIMPAR_LIN_KV_DOWN;
}

static void
tp1d_setup(SimparLayerCtx *c)
{
    const SimparModel *m = c->model;
    guint64 P = c->plan->tp, r = c->trank, B = m->micro_batch * m->seq;
    gboolean sp = c->plan->sequence_parallel;
    SimparLayerGeom *g = &c->geom;
    g->res = sp ? (SimparBlock){r * B / P, B / P, 0, m->hidden} : (SimparBlock){0, B, 0, m->hidden};
    g->nb = m->micro_batch;
    g->nh = m->heads / P;
    g->nkv = simpar_model_kv_heads(m) / P;
    g->batch0 = 0;
    g->head0 = r * g->nh;
    g->ffn_cols = m->ffn / P;
    g->ln_group = SIMPAR_NO_GROUP;
    g->ln_param_group = sp ? c->group[0] : SIMPAR_NO_GROUP;
    g->seq_group = sp ? c->group[0] : SIMPAR_NO_GROUP;
    g->head_group = c->group[0];
    for (guint w = 0; w < SIMPAR_N_LINEARS; w++) {
        guint64 K = simpar_layer_linear_in(m, w), N = simpar_layer_linear_out(m, w);
        if (tp1d_duplicated(w)) {
            g->weight[w] = (SimparBlock){0, K, 0, N};
            g->bias[w] = (SimparBlock){0, 1, 0, N};
            g->bias_group[w] = SIMPAR_NO_GROUP;
        } else if (tp1d_column(w)) {
            g->weight[w] = (SimparBlock){0, K, r * N / P, N / P};
            g->bias[w] = (SimparBlock){0, 1, r * N / P, N / P};
            g->bias_group[w] = SIMPAR_NO_GROUP;
        } else {
            g->weight[w] = (SimparBlock){r * K / P, K / P, 0, N};
            g->bias[w] = (SimparBlock){0, 1, 0, N};
            g->bias_group[w] = sp ? c->group[0] : SIMPAR_NO_GROUP;
        }
    }
}

/* Transformer Engine's default userbuffers configuration (base.py, get_default_config): the
 * pipeline's chunks and the SMs its and bulk's communication kernels take. */
#define TP1D_UB_SPLITS 4
#define TP1D_UB_SMS    16

/* A ring exchange's messages, told apart by phase, recomputation, linear and step (above the
 * ring attention's tags, tp-layer.c). */
static guint
tp1d_ring_tag(const SimparLayerCtx *c, guint which, guint step)
{
    guint base = ((guint) c->phase * 2 + (c->recomputing ? 1 : 0)) * SIMPAR_N_LINEARS + which;
    return (1u << 20) + base * (guint) c->plan->tp + step;
}

/* Ring exchange (--tp-comm-overlap): `g` (its a and c views the gathered operand's and the
 * output's starts, m the local block's rows) run block by block over the operand all-gathered
 * from the local [rows x cols] blocks; returns the gathered operand, every block in place. */
static SimparView
tp1d_ring_gemm(SimparLayerCtx *c, guint which, const char *what, SimparView local, guint64 cols,
               const SimparGemm *g)
{
    guint64 P = c->plan->tp, r = c->trank, rows = c->geom.res.rows, blk = rows * cols;
    guint full = simpar_layer_buffer(c, which, what, P * blk);
    guint cp = c->rank - c->trank; /* the schedule rank of this group's tensor-parallel rank 0 */
    SimparKernel copy = {.rows = (guint) rows,
                         .cols = (guint) cols,
                         .in = {local},
                         .out = {simpar_view(full, r * blk)},
                         .ld = (guint) cols,
                         .groups = 1,
                         .width = (guint) cols};
    simpar_layer_kernel(c, SIMPAR_OP_PACK_COLS, which, "ring-copy", copy);
    for (guint64 i = 0; i < P; i++) {
        guint64 j = (r + P - i) % P, next = (r + P - i - 1) % P;
        if (i + 1 < P) {
            guint tag = tp1d_ring_tag(c, which, (guint) i);
            simpar_layer_p2p(c, SIMPAR_OP_SEND, c->tp_send, which, "ring-send", cp + (r + 1) % P,
                             tag, simpar_view(full, j * blk), blk);
            simpar_layer_p2p(c, SIMPAR_OP_RECV, c->tp_recv, which, "ring-recv",
                             cp + (r + P - 1) % P, tag, simpar_view(full, next * blk), blk);
        }
        SimparGemm chunk = *g;
        chunk.chunk = (guint) i;
        chunk.a = simpar_view(full, g->a.off + j * blk);
        chunk.c.off = g->c.off + j * rows * g->n;
        simpar_layer_gemm(c, which, "gemm", &chunk);
    }
    return simpar_view(full, 0);
}

/* Pipeline (--tp-comm-overlap): the row-parallel GEMM [B x k] . [k x N] and the reduce-scatter
 * of its partial sums in S chunks, each chunk's reduce-scatter beside the next chunk's GEMM.
 * Chunk s holds rows s of every rank's block of B/P (a GEMM of P blocks of B/(P S) rows over the
 * one weight, timed as one GEMM of B/S rows: compute.c), its output chunk-major, so that its
 * reduce-scatter hands each rank rows s of its own [B/P x N] output. Transformer Engine
 * (CommOverlapBase::split_overlap_rs) splits the weight's N columns instead and reduce-scatters
 * each [B x N/S] chunk strided: the same flops and bytes per chunk; simpar's weights are
 * row-major [K x N] blocks without a leading dimension, so the chunks split the tokens. */
static SimparView
tp1d_pipeline_gemm_rs(SimparLayerCtx *c, guint which, SimparView x, guint64 k, guint64 N)
{
    guint64 P = c->plan->tp, rows = c->geom.res.rows, S = TP1D_UB_SPLITS;
    while (rows % S != 0)
        S--;
    guint64 sub = rows / S;
    guint partial = simpar_layer_buffer(c, which, "y-partial", P * rows * N);
    guint out = simpar_layer_buffer(c, which, "y", rows * N);
    for (guint64 s = 0; s < S; s++) {
        SimparGemm g = {.m = (guint) sub,
                        .n = (guint) N,
                        .k = (guint) k,
                        .batch = (guint) P,
                        .stride_a = rows * k,
                        .stride_c = sub * N,
                        .a = simpar_view(x.buf, x.off + s * sub * k),
                        .b = {c->lin[which].w, 0},
                        .c = simpar_view(partial, s * P * sub * N),
                        .comm_sms = TP1D_UB_SMS,
                        .chunk = (guint) s};
        simpar_layer_gemm(c, which, "gemm", &g);
        SimparColl rs = {SIMPAR_COLL_REDUCE_SCATTER,
                         c->group[0],
                         sub * N,
                         0,
                         simpar_view(partial, s * P * sub * N),
                         simpar_view(out, s * sub * N),
                         SIMPAR_RED_SUM};
        simpar_layer_coll(c, which, "reduce-scatter-y", &rs, TRUE);
    }
    return simpar_view(out, 0);
}

/* SP: the full [B x cols] from the local [B/P x cols] block. */
static SimparView
tp1d_gather(SimparLayerCtx *c, guint which, const char *what, SimparView local, guint64 cols,
            gboolean async)
{
    const SimparBlock *res = &c->geom.res;
    guint full = simpar_layer_buffer(c, which, what, res->rows * c->plan->tp * cols);
    SimparColl ag = {SIMPAR_COLL_ALL_GATHER, c->group[0],   res->rows * cols, 0, local,
                     simpar_view(full, 0),   SIMPAR_RED_SUM};
    simpar_layer_coll(c, which, what, &ag, async);
    return simpar_view(full, 0);
}

/* MLA's down projections: the rank's rows through the whole weight. */
static SimparView
tp1d_duplicated_fwd(SimparLayerCtx *c, guint which, SimparView x)
{
    guint64 rows = c->geom.res.rows, K = simpar_layer_linear_in(c->model, which);
    guint64 N = simpar_layer_linear_out(c->model, which);
    guint y = simpar_layer_buffer(c, which, "y", rows * N);
    SimparGemm g = {.m = rows, .n = N, .k = K, .a = x, .b = {c->lin[which].w, 0}, .c = {y, 0}};
    simpar_layer_gemm(c, which, "gemm", &g);
    return simpar_view(y, 0);
}

/* dX of the rank's rows; with SP the weight gradient holds only its tokens' share, summed over
 * the group asynchronously (Megatron-Core sums the duplicated weights' gradients with the
 * sequence-parallel norms'). */
static SimparView
tp1d_duplicated_bwd(SimparLayerCtx *c, guint which, SimparView dy)
{
    guint64 rows = c->geom.res.rows, K = simpar_layer_linear_in(c->model, which);
    guint64 N = simpar_layer_linear_out(c->model, which);
    guint dx = simpar_layer_buffer(c, which, "dx", rows * K);
    SimparGemm gx = {.m = rows,
                     .n = K,
                     .k = N,
                     .trans_b = TRUE,
                     .a = dy,
                     .b = {c->lin[which].w, 0},
                     .c = {dx, 0}};
    simpar_layer_gemm(c, which, "gemm-dx", &gx);
    SimparView dw = simpar_view(c->lin[which].dw, 0);
    SimparGemm gw = {
        .m = K, .n = N, .k = rows, .trans_a = TRUE, .a = c->lin[which].in, .b = dy, .c = dw};
    simpar_layer_gemm(c, which, "gemm-dw", &gw);
    if (c->plan->sequence_parallel) {
        SimparColl ar = {SIMPAR_COLL_ALL_REDUCE, c->group[0], K * N, 0, dw, dw, SIMPAR_RED_SUM};
        simpar_layer_coll(c, which, "all-reduce-dw", &ar, TRUE);
    }
    return simpar_view(dx, 0);
}

static SimparView
tp1d_linear_fwd(SimparLayerCtx *c, guint which, SimparView x)
{
    const SimparModel *m = c->model;
    guint64 B = m->micro_batch * m->seq, P = c->plan->tp;
    guint64 K = simpar_layer_linear_in(m, which), N = simpar_layer_linear_out(m, which);
    gboolean sp = c->plan->sequence_parallel, col = tp1d_column(which);
    if (tp1d_duplicated(which))
        return tp1d_duplicated_fwd(c, which, x);
    guint64 k = col ? K : K / P, n = col ? N / P : N;
    if (c->plan->tp_comm_overlap && !col)
        return tp1d_pipeline_gemm_rs(c, which, x, k, N);
    if (c->plan->tp_comm_overlap) {
        SimparView yv = simpar_layer_output(c, which, "y", B * n);
        SimparGemm g = {.m = B / P, .n = n, .k = k, .b = {c->lin[which].w, 0}, .c = yv};
        tp1d_ring_gemm(c, which, "all-gather-x", x, K, &g);
        return yv;
    }
    if (col && sp)
        x = tp1d_gather(c, which, "all-gather-x", x, K, FALSE);
    SimparView yv = col ? simpar_layer_output(c, which, "y", B * n)
                        : simpar_view(simpar_layer_buffer(c, which, "y-partial", B * n), 0);
    guint y = yv.buf;
    SimparGemm g = {.m = B, .n = n, .k = k, .a = x, .b = {c->lin[which].w, 0}, .c = yv};
    simpar_layer_gemm(c, which, "gemm", &g);
    if (col)
        return yv;
    if (!sp) {
        SimparColl ar = {SIMPAR_COLL_ALL_REDUCE, c->group[0], B * N, 0, {y, 0}, {y, 0},
                         SIMPAR_RED_SUM};
        simpar_layer_coll(c, which, "all-reduce-y", &ar, FALSE);
        return simpar_view(y, 0);
    }
    guint out = simpar_layer_buffer(c, which, "y", B / P * N);
    SimparColl rs = {
        SIMPAR_COLL_REDUCE_SCATTER, c->group[0], B / P * N, 0, {y, 0}, {out, 0}, SIMPAR_RED_SUM};
    simpar_layer_coll(c, which, "reduce-scatter-y", &rs, FALSE);
    return simpar_view(out, 0);
}

/* Column-parallel backward: dX partial sums are all-reduced (or reduce-scattered with SP)
 * asynchronously while the weight-gradient GEMM runs, as Megatron-LM does. */
static SimparView
tp1d_column_bwd(SimparLayerCtx *c, guint which, SimparView dy)
{
    const SimparModel *m = c->model;
    guint64 B = m->micro_batch * m->seq, P = c->plan->tp;
    guint64 K = simpar_layer_linear_in(m, which), n = simpar_layer_linear_out(m, which) / P;
    gboolean sp = c->plan->sequence_parallel;
    SimparView x = c->lin[which].in;
    if (sp)
        x = tp1d_gather(c, which, "all-gather-x-again", x, K, TRUE);
    guint dxp = simpar_layer_buffer(c, which, sp ? "dx-partial" : "dx", B * K);
    guint bulk = c->plan->tp_comm_overlap ? TP1D_UB_SMS : 0; /* SMs of the bulk overlaps */
    SimparGemm gx = {.m = B,
                     .n = K,
                     .k = n,
                     .trans_b = TRUE,
                     .a = dy,
                     .b = {c->lin[which].w, 0},
                     .c = {dxp, 0},
                     .comm_sms = bulk};
    simpar_layer_gemm(c, which, "gemm-dx", &gx);
    SimparView dx = simpar_view(dxp, 0);
    if (sp) {
        dx = simpar_view(simpar_layer_buffer(c, which, "dx", B / P * K), 0);
        SimparColl rs = {
            SIMPAR_COLL_REDUCE_SCATTER, c->group[0], B / P * K, 0, {dxp, 0}, dx, SIMPAR_RED_SUM};
        simpar_layer_coll(c, which, "reduce-scatter-dx", &rs, TRUE);
    } else {
        SimparColl ar = {SIMPAR_COLL_ALL_REDUCE, c->group[0], B * K, 0, dx, dx, SIMPAR_RED_SUM};
        simpar_layer_coll(c, which, "all-reduce-dx", &ar, TRUE);
    }
    SimparGemm gw = {.m = K,
                     .n = n,
                     .k = B,
                     .trans_a = TRUE,
                     .a = x,
                     .b = dy,
                     .c = {c->lin[which].dw, 0},
                     .comm_sms = bulk};
    simpar_layer_gemm(c, which, "gemm-dw", &gw);
    return dx;
}

static void
tp1d_row_wgrad(SimparLayerCtx *c, guint which, SimparView dy, guint64 k, guint64 N)
{
    const SimparModel *m = c->model;
    SimparGemm gw = {.m = k,
                     .n = N,
                     .k = m->micro_batch * m->seq,
                     .trans_a = TRUE,
                     .a = c->lin[which].in,
                     .b = dy,
                     .c = {c->lin[which].dw, 0}};
    simpar_layer_gemm(c, which, "gemm-dw", &gw);
}

static SimparView
tp1d_row_bwd(SimparLayerCtx *c, guint which, SimparView dy)
{
    const SimparModel *m = c->model;
    guint64 B = m->micro_batch * m->seq, P = c->plan->tp;
    guint64 k = simpar_layer_linear_in(m, which) / P, N = simpar_layer_linear_out(m, which);
    if (c->plan->tp_comm_overlap) {
        guint dx = simpar_layer_buffer(c, which, "dx", B * k);
        SimparGemm gx = {
            .m = B / P, .n = k, .k = N, .trans_b = TRUE, .b = {c->lin[which].w, 0}, .c = {dx, 0}};
        dy = tp1d_ring_gemm(c, which, "all-gather-dy", dy, N, &gx);
        tp1d_row_wgrad(c, which, dy, k, N);
        return simpar_view(dx, 0);
    }
    if (c->plan->sequence_parallel)
        dy = tp1d_gather(c, which, "all-gather-dy", dy, N, FALSE);
    guint dx = simpar_layer_buffer(c, which, "dx", B * k);
    SimparGemm gx = {
        .m = B, .n = k, .k = N, .trans_b = TRUE, .a = dy, .b = {c->lin[which].w, 0}, .c = {dx, 0}};
    simpar_layer_gemm(c, which, "gemm-dx", &gx);
    tp1d_row_wgrad(c, which, dy, k, N);
    return simpar_view(dx, 0);
}

static SimparView
tp1d_linear_bwd(SimparLayerCtx *c, guint which, SimparView dy)
{
    if (tp1d_duplicated(which))
        return tp1d_duplicated_bwd(c, which, dy);
    return tp1d_column(which) ? tp1d_column_bwd(c, which, dy) : tp1d_row_bwd(c, which, dy);
}

gboolean
simpar_tp1d_validate(const SimparModel *m, SimparPlan *plan, GError **error)
{
    const char *why = "1-D splits heads, hidden and FFN columns over the P GPUs of --tp";
    plan->q = plan->tp;
    return simpar_layer_require_divisible("--heads", m->heads, plan->tp, why, error) &&
           simpar_layer_require_kv(m, plan->tp, why, error) &&
           simpar_layer_require_divisible("--ffn", m->ffn, plan->tp, why, error) &&
           (!plan->sequence_parallel ||
            simpar_layer_require_divisible("--seq", m->seq, plan->tp,
                                           "sequence parallelism splits the sequence over --tp",
                                           error));
}

const SimparTpScheme simpar_tp1d_scheme = {1, tp1d_axis, tp1d_setup, tp1d_linear_fwd,
                                           tp1d_linear_bwd};
