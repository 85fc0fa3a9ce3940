/* tp-3d.c - 3-D tensor parallelism (Bian et al., arXiv 2105.14450) on a q x q x q cube.
 *
 * rank = i + q*j + q*q*k. Groups: "weight" (vary i, stride 1), "input" (vary j, stride q),
 * "output" (vary k, stride q*q), "input-weight" (vary i, j) and "output-weight" (vary i, k).
 * A linear Y = X W runs on the cube with contraction coordinate `cout` and output-column
 * coordinate `cin`; QKV and fc1 use (cin, cout) = (j, k), proj and fc2 swap them to (k, j), so
 * the input/output roles of the "input" and "output" groups swap at every linear and the
 * layout returns to the residual layout after each pair.
 *
 *   rank holds X rows block (i, cin) [B/q^2 x K/q] of column block cout,
 *              W rows (cout*K/q + i*K/q^2) [K/q^2 x N/q] of column block cin
 *   forward:   all-gather X along the cin group -> [B/q x K/q]
 *              all-gather W along "weight"      -> [K/q x N/q]
 *              GEMM, reduce-scatter Y along the cout group -> rows (i, cout) [B/q^2 x N/q]
 *   backward:  all-gather dY (cout group); dX = dY W^T, reduce-scatter along the cin group;
 *              dW = X^T dY, reduce-scatter along "weight".
 *
 * Variants: "paper" (the first public implementation, closest to the paper) re-gathers W, X and
 * dY in the backward (4 all-gathers + 2 reduce-scatters per linear, all synchronous); "later"
 * keeps the gathered X and W from the forward and issues the dX and dW reduce-scatters
 * asynchronously on the communication stream. Layer-norm statistics are all-reduced along
 * "output" (2 all-reduces each way in "paper", 1 stacked in "later"); gamma/beta gradients
 * along "input-weight"; bias gradients along the plane that replicates the bias.
 */
#include "tp-layer.h"

enum {
    CUBE_WEIGHT,
    CUBE_INPUT,
    CUBE_OUTPUT,
    CUBE_IW,
    CUBE_OW
};

static SimparAxis
tp3d_axis(const SimparPlan *plan, guint axis)
{
    guint q = plan->q;
    const SimparAxis axes[] = {
        {"weight", 1, {1, 0}, {q, 0}},
        {"input", 1, {q, 0}, {q, 0}},
        {"output", 1, {q * q, 0}, {q, 0}},
        {"input-weight", 2, {1, q}, {q, q}},
        {"output-weight", 2, {1, q * q}, {q, q}},
    };
    g_assert(axis < G_N_ELEMENTS(axes));
    return axes[axis];
}

static gboolean
tp3d_swapped(guint which)
{
    return which == SIMPAR_LIN_PROJ || which == SIMPAR_LIN_FC2;
}

static void
tp3d_setup(SimparLayerCtx *c)
{
    const SimparModel *m = c->model;
    guint64 q = c->plan->q, B = m->micro_batch * m->seq, R = B / (q * q);
    guint64 i = c->trank % q, j = (c->trank / q) % q, k = c->trank / (q * q);
    SimparLayerGeom *g = &c->geom;
    c->coord[0] = i, c->coord[1] = j, c->coord[2] = k;
    g->res = (SimparBlock){(i * q + j) * R, R, k * m->hidden / q, m->hidden / q};
    g->nb = m->micro_batch / (q * q);
    g->batch0 = (i * q + k) * g->nb;
    g->nh = m->heads / q;
    g->nkv = simpar_model_kv_heads(m) / q;
    g->head0 = j * g->nh;
    g->ffn_cols = m->ffn / q;
    g->ln_group = c->group[CUBE_OUTPUT];
    g->ln_split = c->plan->paper_3d;
    g->ln_param_group = c->group[CUBE_IW];
    for (guint w = 0; w < SIMPAR_N_LINEARS; w++) {
        guint64 K = simpar_layer_linear_in(m, w), N = simpar_layer_linear_out(m, w);
        guint64 cin = tp3d_swapped(w) ? k : j, cout = tp3d_swapped(w) ? j : k;
        g->weight[w] =
            (SimparBlock){cout * K / q + i * K / (q * q), K / (q * q), cin * N / q, N / q};
        g->bias[w] = (SimparBlock){0, 1, cin * N / q, N / q};
        g->bias_group[w] = tp3d_swapped(w) ? c->group[CUBE_IW] : c->group[CUBE_OW];
    }
}

static guint
tp3d_in_group(const SimparLayerCtx *c, guint which)
{
    return c->group[tp3d_swapped(which) ? CUBE_OUTPUT : CUBE_INPUT];
}

static guint
tp3d_out_group(const SimparLayerCtx *c, guint which)
{
    return c->group[tp3d_swapped(which) ? CUBE_INPUT : CUBE_OUTPUT];
}

/* All-gather `count` elements per member of `group` into a new buffer. */
static SimparView
tp3d_gather(SimparLayerCtx *c, guint which, const char *what, guint group, SimparView mine,
            gsize count)
{
    guint full = simpar_layer_buffer(c, which, what, count * c->plan->q);
    SimparColl ag = {SIMPAR_COLL_ALL_GATHER, group,         count, 0, mine,
                     simpar_view(full, 0),   SIMPAR_RED_SUM};
    simpar_layer_coll(c, which, what, &ag, FALSE);
    return simpar_view(full, 0);
}

static void
tp3d_scatter(SimparLayerCtx *c, guint which, const char *what, guint group, guint send,
             SimparView recv, gsize count, gboolean async)
{
    SimparColl rs = {SIMPAR_COLL_REDUCE_SCATTER, group, count,         0,
                     simpar_view(send, 0),       recv,  SIMPAR_RED_SUM};
    simpar_layer_coll(c, which, what, &rs, async);
}

static SimparView
tp3d_linear_fwd(SimparLayerCtx *c, guint which, SimparView x)
{
    guint64 q = c->plan->q, R = c->geom.res.rows;
    guint64 k = simpar_layer_linear_in(c->model, which) / q;
    guint64 n = simpar_layer_linear_out(c->model, which) / q;
    SimparLinearState *l = &c->lin[which];
    SimparView xg = tp3d_gather(c, which, "all-gather-x", tp3d_in_group(c, which), x, R * k);
    SimparView wg = tp3d_gather(c, which, "all-gather-w", c->group[CUBE_WEIGHT],
                                simpar_view(l->w, 0), k / q * n);
    l->saved[0] = xg.buf, l->saved[1] = wg.buf;
    guint yp = simpar_layer_buffer(c, which, "y-partial", q * R * n);
    SimparGemm g = {.m = q * R, .n = n, .k = k, .a = xg, .b = wg, .c = {yp, 0}};
    simpar_layer_gemm(c, which, "gemm", &g);
    guint y = simpar_layer_buffer(c, which, "y", R * n);
    tp3d_scatter(c, which, "reduce-scatter-y", tp3d_out_group(c, which), yp, simpar_view(y, 0),
                 R * n, FALSE);
    return simpar_view(y, 0);
}

static SimparView
tp3d_linear_bwd(SimparLayerCtx *c, guint which, SimparView dy)
{
    guint64 q = c->plan->q, R = c->geom.res.rows;
    guint64 k = simpar_layer_linear_in(c->model, which) / q;
    guint64 n = simpar_layer_linear_out(c->model, which) / q;
    gboolean paper = c->plan->paper_3d;
    SimparLinearState *l = &c->lin[which];
    guint in = tp3d_in_group(c, which), out = tp3d_out_group(c, which);
    SimparView dyg = tp3d_gather(c, which, "all-gather-dy", out, dy, R * n);
    SimparView wg = paper ? tp3d_gather(c, which, "all-gather-w", c->group[CUBE_WEIGHT],
                                        simpar_view(l->w, 0), k / q * n)
                          : simpar_view(l->saved[1], 0);
    guint dxp = simpar_layer_buffer(c, which, "dx-partial", q * R * k);
    SimparGemm gx = {.m = q * R, .n = k, .k = n, .trans_b = TRUE, .a = dyg, .b = wg, .c = {dxp, 0}};
    simpar_layer_gemm(c, which, "gemm-dx", &gx);
    guint dx = simpar_layer_buffer(c, which, "dx", R * k);
    tp3d_scatter(c, which, "reduce-scatter-dx", in, dxp, simpar_view(dx, 0), R * k, !paper);
    SimparView xg = paper ? tp3d_gather(c, which, "all-gather-x", in, l->in, R * k)
                          : simpar_view(l->saved[0], 0);
    if (paper)
        dyg = tp3d_gather(c, which, "all-gather-dy-again", out, dy, R * n);
    guint dwp = simpar_layer_buffer(c, which, "dw-partial", k * n);
    SimparGemm gw = {.m = k, .n = n, .k = q * R, .trans_a = TRUE, .a = xg, .b = dyg, .c = {dwp, 0}};
    simpar_layer_gemm(c, which, "gemm-dw", &gw);
    tp3d_scatter(c, which, "reduce-scatter-dw", c->group[CUBE_WEIGHT], dwp, simpar_view(l->dw, 0),
                 k / q * n, !paper);
    return simpar_view(dx, 0);
}

gboolean
simpar_tp3d_validate(const SimparModel *m, SimparPlan *plan, GError **error)
{
    guint q = simpar_layer_int_root(plan->tp, 3);
    if (q == 0) {
        g_set_error(error, SIMPAR_PLAN_ERROR, SIMPAR_PLAN_ERROR_INVALID,
                    "--tp %" G_GINT64_FORMAT " is not a cube: 3-D needs q*q*q GPUs (1, 8, 27, 64, "
                    "125, 216, 343, 512, ...)",
                    plan->tp);
        return FALSE;
    }
    plan->q = q;
    g_autofree char *w =
        g_strdup_printf("3-D weight shards are [k/q^2 x n/q] with q^2 = %u", q * q);
    g_autofree char *b = g_strdup_printf("3-D splits the batch over q^2 = %u GPUs, each needing "
                                         "whole sequences",
                                         q * q);
    g_autofree char *h = g_strdup_printf("3-D gives each GPU a/q heads, q = %u", q);
    return simpar_layer_require_divisible("--hidden", m->hidden, q * q, w, error) &&
           simpar_layer_require_divisible("--ffn", m->ffn, q * q, w, error) &&
           simpar_layer_require_divisible("--heads", m->heads, q, h, error) &&
           simpar_layer_require_kv(m, q, h, error) &&
           simpar_layer_require_divisible("--micro-batch", m->micro_batch, q * q, b, error);
}

const SimparTpScheme simpar_tp3d_scheme = {5, tp3d_axis, tp3d_setup, tp3d_linear_fwd,
                                           tp3d_linear_bwd};
