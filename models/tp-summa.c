/* tp-summa.c - SUMMA linears on a q x q grid, the core of 2-D (Optimus) and 2.5-D (Tesseract).
 *
 * rank = i + q*j + q*q*k: column i, row j, depth layer k (2-D: k = 0). Groups: "row" (vary i,
 * stride 1), "col" (vary j, stride q), and for 2.5-D "dep" (vary k, stride q*q) and "xz" (vary
 * j and k). Every depth layer k runs 2-D SUMMA on its own slice of the batch: rank (i,j,k)
 * holds rows block k*q+j of the tokens (B/(d*q) rows) and columns block i; weight block (j, i)
 * of every weight, the same in every depth layer.
 *
 *   forward, round t = 0..q-1:   broadcast X(j,t) along "row" from column t,
 *                                broadcast W(t,i) along "col" from row t,   Y += X(j,t) W(t,i)
 *   backward dX, round t:        broadcast W(t,i) along "col"; C = dY W(t,i)^T; reduce C along
 *                                "row" to column t (= dX(j,t))
 *   backward dW, round t:        broadcast X(j,t) along "row"; C = X(j,t)^T dY; reduce C along
 *                                "col" to row t (= dW(t,i) of this depth layer)
 *   2.5-D:                       all-reduce of dW along "dep" (the d layers' batch slices)
 *
 * The synchronous loops of the first public implementation are replayed (no prefetch of round
 * t+1). Layer-norm statistics are two all-reduces along "row" forward and two backward;
 * biases and gamma/beta are replicated down the columns and their gradients all-reduced along
 * "col" (2-D) or "xz" (2.5-D: columns and depth).
 */
#include "tp-layer.h"

enum {
    SUMMA_ROW,
    SUMMA_COL,
    SUMMA_DEP,
    SUMMA_XZ
};

static guint
summa_depth(const SimparPlan *plan)
{
    return plan->depth > 0 ? (guint) plan->depth : 1;
}

SimparAxis
simpar_summa_axis(const SimparPlan *plan, guint axis)
{
    guint q = plan->q, d = summa_depth(plan);
    const SimparAxis axes[] = {
        {"row", 1, {1, 0}, {q, 0}},
        {"col", 1, {q, 0}, {q, 0}},
        {"dep", 1, {q * q, 0}, {d, 0}},
        {"xz", 2, {q, q * q}, {q, d}},
    };
    g_assert(axis < G_N_ELEMENTS(axes));
    return axes[axis];
}

void
simpar_summa_setup(SimparLayerCtx *c)
{
    const SimparModel *m = c->model;
    guint64 q = c->plan->q, d = summa_depth(c->plan), B = m->micro_batch * m->seq;
    guint64 i = c->trank % q, j = (c->trank / q) % q, k = c->trank / (q * q), R = B / (d * q);
    SimparLayerGeom *g = &c->geom;
    c->coord[0] = i, c->coord[1] = j, c->coord[2] = k;
    g->res = (SimparBlock){(k * q + j) * R, R, i * m->hidden / q, m->hidden / q};
    g->nb = m->micro_batch / (d * q);
    g->batch0 = (k * q + j) * g->nb;
    g->nh = m->heads / q;
    g->nkv = simpar_model_kv_heads(m) / q;
    g->head0 = i * g->nh;
    g->ffn_cols = m->ffn / q;
    g->ln_group = c->group[SUMMA_ROW];
    g->ln_split = TRUE;
    g->ln_param_group = d > 1 ? c->group[SUMMA_XZ] : c->group[SUMMA_COL];
    for (guint w = 0; w < SIMPAR_N_LINEARS; w++) {
        guint64 K = simpar_layer_linear_in(m, w), N = simpar_layer_linear_out(m, w);
        g->weight[w] = (SimparBlock){j * K / q, K / q, i * N / q, N / q};
        g->bias[w] = (SimparBlock){0, 1, i * N / q, N / q};
        g->bias_group[w] = g->ln_param_group;
    }
}

/* Broadcast `count` elements from the member with coordinate t of `axis` into `recv`. */
static void
summa_bcast(SimparLayerCtx *c, guint which, const char *what, guint axis, guint t, SimparView mine,
            guint recv, gsize count)
{
    gboolean root = c->coord[axis == SUMMA_ROW ? 0 : 1] == t;
    SimparColl b = {SIMPAR_COLL_BROADCAST,        c->group[axis],       count,         t,
                    root ? mine : SIMPAR_NO_VIEW, simpar_view(recv, 0), SIMPAR_RED_SUM};
    simpar_layer_coll(c, which, what, &b, FALSE);
}

static void
summa_reduce(SimparLayerCtx *c, guint which, const char *what, guint axis, guint t, guint send,
             SimparView result, gsize count)
{
    gboolean root = c->coord[axis == SUMMA_ROW ? 0 : 1] == t;
    SimparColl r = {SIMPAR_COLL_REDUCE,
                    c->group[axis],
                    count,
                    t,
                    simpar_view(send, 0),
                    root ? result : SIMPAR_NO_VIEW,
                    SIMPAR_RED_SUM};
    simpar_layer_coll(c, which, what, &r, FALSE);
}

SimparView
simpar_summa_linear_fwd(SimparLayerCtx *c, guint which, SimparView x)
{
    guint64 q = c->plan->q, R = c->geom.res.rows;
    guint64 k = simpar_layer_linear_in(c->model, which) / q;
    guint64 n = simpar_layer_linear_out(c->model, which) / q;
    guint xt = simpar_layer_buffer(c, which, "summa-x", R * k);
    guint wt = simpar_layer_buffer(c, which, "summa-w", k * n);
    guint y = simpar_layer_buffer(c, which, "y", R * n);
    for (guint t = 0; t < q; t++) {
        summa_bcast(c, which, "broadcast-x", SUMMA_ROW, t, x, xt, R * k);
        summa_bcast(c, which, "broadcast-w", SUMMA_COL, t, simpar_view(c->lin[which].w, 0), wt,
                    k * n);
        SimparGemm g = {
            .m = R, .n = n, .k = k, .accumulate = t > 0, .a = {xt, 0}, .b = {wt, 0}, .c = {y, 0}};
        simpar_layer_gemm(c, which, "gemm", &g);
    }
    return simpar_view(y, 0);
}

SimparView
simpar_summa_linear_bwd(SimparLayerCtx *c, guint which, SimparView dy)
{
    guint64 q = c->plan->q, R = c->geom.res.rows;
    guint64 k = simpar_layer_linear_in(c->model, which) / q;
    guint64 n = simpar_layer_linear_out(c->model, which) / q;
    SimparLinearState *l = &c->lin[which];
    guint dx = simpar_layer_buffer(c, which, "dx", R * k);
    guint wt = simpar_layer_buffer(c, which, "summa-w-bwd", k * n);
    guint xt = simpar_layer_buffer(c, which, "summa-x-bwd", R * k);
    guint cx = simpar_layer_buffer(c, which, "summa-dx-part", R * k);
    guint cw = simpar_layer_buffer(c, which, "summa-dw-part", k * n);
    for (guint t = 0; t < q; t++) {
        summa_bcast(c, which, "broadcast-w", SUMMA_COL, t, simpar_view(l->w, 0), wt, k * n);
        SimparGemm g = {
            .m = R, .n = k, .k = n, .trans_b = TRUE, .a = dy, .b = {wt, 0}, .c = {cx, 0}};
        simpar_layer_gemm(c, which, "gemm-dx", &g);
        summa_reduce(c, which, "reduce-dx", SUMMA_ROW, t, cx, simpar_view(dx, 0), R * k);
    }
    for (guint t = 0; t < q; t++) {
        summa_bcast(c, which, "broadcast-x", SUMMA_ROW, t, l->in, xt, R * k);
        SimparGemm g = {
            .m = k, .n = n, .k = R, .trans_a = TRUE, .a = {xt, 0}, .b = dy, .c = {cw, 0}};
        simpar_layer_gemm(c, which, "gemm-dw", &g);
        summa_reduce(c, which, "reduce-dw", SUMMA_COL, t, cw, simpar_view(l->dw, 0), k * n);
    }
    if (summa_depth(c->plan) > 1) {
        SimparColl ar = {
            SIMPAR_COLL_ALL_REDUCE, c->group[SUMMA_DEP], k * n, 0, {l->dw, 0}, {l->dw, 0},
            SIMPAR_RED_SUM};
        simpar_layer_coll(c, which, "all-reduce-dw-depth", &ar, FALSE);
    }
    return simpar_view(dx, 0);
}

gboolean
simpar_summa_validate(const SimparModel *m, const SimparPlan *plan, guint d, GError **error)
{
    g_autofree char *grid = g_strdup_printf("the grid splits it over q = %u rows/columns", plan->q);
    g_autofree char *batch = g_strdup_printf("every GPU needs whole sequences: the batch is split "
                                             "over d*q = %u",
                                             d * plan->q);
    return simpar_layer_require_divisible("--hidden", m->hidden, plan->q, grid, error) &&
           simpar_layer_require_divisible("--heads", m->heads, plan->q, grid, error) &&
           simpar_layer_require_kv(m, plan->q, grid, error) &&
           simpar_layer_require_divisible("--ffn", m->ffn, plan->q, grid, error) &&
           simpar_layer_require_divisible("--micro-batch", m->micro_batch, (gint64) d * plan->q,
                                          batch, error);
}
