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
    if (col && sp)
        x = tp1d_gather(c, which, "all-gather-x", x, K, FALSE);
    guint64 k = col ? K : K / P, n = col ? N / P : N;
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
    SimparGemm gx = {
        .m = B, .n = K, .k = n, .trans_b = TRUE, .a = dy, .b = {c->lin[which].w, 0}, .c = {dxp, 0}};
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
    SimparGemm gw = {
        .m = K, .n = n, .k = B, .trans_a = TRUE, .a = x, .b = dy, .c = {c->lin[which].dw, 0}};
    simpar_layer_gemm(c, which, "gemm-dw", &gw);
    return dx;
}

static SimparView
tp1d_row_bwd(SimparLayerCtx *c, guint which, SimparView dy)
{
    const SimparModel *m = c->model;
    guint64 B = m->micro_batch * m->seq, P = c->plan->tp;
    guint64 k = simpar_layer_linear_in(m, which) / P, N = simpar_layer_linear_out(m, which);
    if (c->plan->sequence_parallel)
        dy = tp1d_gather(c, which, "all-gather-dy", dy, N, FALSE);
    guint dx = simpar_layer_buffer(c, which, "dx", B * k);
    SimparGemm gx = {
        .m = B, .n = k, .k = N, .trans_b = TRUE, .a = dy, .b = {c->lin[which].w, 0}, .c = {dx, 0}};
    simpar_layer_gemm(c, which, "gemm-dx", &gx);
    SimparGemm gw = {.m = k,
                     .n = N,
                     .k = B,
                     .trans_a = TRUE,
                     .a = c->lin[which].in,
                     .b = dy,
                     .c = {c->lin[which].dw, 0}};
    simpar_layer_gemm(c, which, "gemm-dw", &gw);
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
