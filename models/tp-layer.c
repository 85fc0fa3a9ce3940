/* tp-layer.c - the layer driver shared by every tensor-parallel generator (see tp-layer.h);
 * multi-head latent attention's part of it is tp-mla.c. */
#include "tp-layer.h"
#include "moe.h"
#include "schedule-private.h"

static const char *const layer_linear_names[SIMPAR_N_LINEARS] = {
    "qkv", "proj", "fc1", "fc2", "q_down", "q_up", "kv_down", "kv_up"};

const char *
simpar_layer_linear_name(guint which)
{
    g_return_val_if_fail(which < SIMPAR_N_LINEARS, "?");
    return layer_linear_names[which];
}

/* The MLA linears of a model without MLA are [0 x 0]. */
guint64
simpar_layer_linear_in(const SimparModel *model, guint which)
{
    const SimparMlaConfig *l = &model->mla;
    guint64 h = model->hidden, mla = simpar_model_is_mla(model) ? 1 : 0;
    const guint64 in[SIMPAR_N_LINEARS] = {h,       model->heads * simpar_model_v_head_dim(model),
                                          h,       model->ffn,
                                          mla * h, l->q_lora_rank,
                                          mla * h, l->kv_lora_rank};
    return in[which];
}

guint64
simpar_layer_linear_out(const SimparModel *model, guint which)
{
    const SimparMlaConfig *l = &model->mla;
    guint64 a = model->heads, mla = simpar_model_is_mla(model) ? 1 : 0;
    const guint64 out[SIMPAR_N_LINEARS] = {simpar_model_qkv_cols(model),
                                           model->hidden,
                                           simpar_model_fc1_cols(model),
                                           model->hidden,
                                           l->q_lora_rank,
                                           mla * a * simpar_model_qk_head_dim(model),
                                           l->kv_lora_rank + l->qk_pos_emb_head_dim,
                                           a * (l->qk_head_dim + l->v_head_dim)};
    return out[which];
}

/* Whether the linear has a bias: MLA's projections have none (Megatron-Core's). */
static gboolean
layer_has_bias(const SimparLayerCtx *c, guint which)
{
    return !c->model->no_bias && which < SIMPAR_LIN_Q_DOWN;
}

SimparView
simpar_view(guint buf, gsize off)
{
    return (SimparView){buf, off};
}

/* "fwd.qkv.gemm-dx": phase (and "recompute."), linear (G_MAXUINT for none) and what. Names
 * are joined with g_strconcat, not printf: every op has one, and printf is slow in a process
 * that loads libquadmath (SimGrid does), which registers a printf modifier. */
static const char *
layer_op_name(const SimparLayerCtx *c, guint which, const char *what)
{
    gboolean lin = which < SIMPAR_N_LINEARS;
    g_autofree char *s = g_strconcat(
        c->phase == SIMPAR_PHASE_FORWARD ? "fwd." : "bwd.", c->recomputing ? "recompute." : "",
        lin ? layer_linear_names[which] : "", lin ? "." : "", what, NULL);
    return g_intern_string(s);
}

/* A new buffer; in a full recompute, the forward's buffer made by the same request. */
guint
simpar_layer_buffer(SimparLayerCtx *c, guint which, const char *what, gsize elems)
{
    gboolean lin = which < SIMPAR_N_LINEARS;
    g_autofree char *s =
        g_strconcat(lin ? layer_linear_names[which] : "", lin ? "." : "", what, NULL);
    return simpar_schedule_replay_buffer(c->sched, c->rank, s, elems, c->fwd_bufs,
                                         c->phase == SIMPAR_PHASE_FORWARD, c->recomputing,
                                         &c->n_replayed);
}

guint
simpar_layer_mark(const SimparLayerCtx *c)
{
    return c->fwd_bufs != NULL ? c->fwd_bufs->len : 0;
}

void
simpar_layer_replay_begin(SimparLayerCtx *c, guint from)
{
    g_assert(c->fwd_bufs != NULL && from <= c->fwd_bufs->len && !c->recomputing);
    c->recomputing = TRUE;
    c->n_replayed = from;
}

void
simpar_layer_replay_end(SimparLayerCtx *c, guint to)
{
    g_assert(c->recomputing && c->n_replayed == to); /* the module's buffers, all of them */
    c->recomputing = FALSE;
}

SimparView
simpar_layer_output(SimparLayerCtx *c, guint which, const char *what, gsize elems)
{
    if (c->lin[which].dest.buf != G_MAXUINT)
        return c->lin[which].dest;
    return simpar_view(simpar_layer_buffer(c, which, what, elems), 0);
}

/* ----- op emission with derived cross-stream dependencies ----- */

static void
layer_derive_deps(SimparLayerCtx *c, guint idx)
{
    SimparSchedule *s = c->sched;
    const SimparOp *op = simpar_schedule_op(s, idx);
    SimparAccess a[SIMPAR_MAX_ACCESSES], b[SIMPAR_MAX_ACCESSES];
    guint na = simpar_op_accesses(s, op, a), n;
    const guint *ops = simpar_schedule_rank_ops(s, c->rank, &n);
    if (op->stream == 0) { /* wait for async ops touching our elements; then they are joined */
        for (guint i = 0; i < c->async->len;) {
            guint o = g_array_index(c->async, guint, i);
            if (simpar_accesses_conflict(a, na, b,
                                         simpar_op_accesses(s, simpar_schedule_op(s, o), b))) {
                simpar_schedule_add_dep(s, idx, o);
                g_array_remove_index(c->async, i);
            } else {
                i++;
            }
        }
        return;
    }
    for (guint i = 0; i + 1 < n;
         i++) { /* an async op waits for the compute ops it conflicts with */
        const SimparOp *other = simpar_schedule_op(s, ops[i]);
        if (other->stream != op->stream &&
            simpar_accesses_conflict(a, na, b, simpar_op_accesses(s, other, b)))
            simpar_schedule_add_dep(s, idx, ops[i]);
    }
    g_array_append_val(c->async, idx);
}

static guint
layer_add(SimparLayerCtx *c, SimparOp *op, guint which, const char *what)
{
    op->rank = c->rank;
    op->phase = c->phase;
    op->name = layer_op_name(c, which, what);
    guint idx = simpar_schedule_add_op(c->sched, op);
    layer_derive_deps(c, idx);
    return idx;
}

void
simpar_layer_gemm(SimparLayerCtx *c, guint which, const char *what, const SimparGemm *g)
{
    SimparOp op = {.kind = SIMPAR_OP_GEMM, .stream = 0, .u.gemm = *g};
    if (op.u.gemm.batch == 0)
        op.u.gemm.batch = 1;
    layer_add(c, &op, which, what);
}

void
simpar_layer_coll(SimparLayerCtx *c, guint which, const char *what, const SimparColl *coll,
                  gboolean async)
{
    SimparOp op = {.kind = SIMPAR_OP_COLLECTIVE, .stream = async ? c->comm : 0, .u.coll = *coll};
    layer_add(c, &op, which, what);
}

/* Views a kind does not use are left zero: every reader goes by the kind (schedule.h). */
void
simpar_layer_kernel(SimparLayerCtx *c, SimparOpKind kind, guint which, const char *what,
                    SimparKernel k)
{
    SimparOp op = {.kind = kind, .stream = 0, .u.kern = k};
    layer_add(c, &op, which, what);
}

void
simpar_layer_allreduce(SimparLayerCtx *c, guint which, const char *what, guint group, SimparView v,
                       gsize count)
{
    if (group == SIMPAR_NO_GROUP)
        return;
    SimparColl coll = {SIMPAR_COLL_ALL_REDUCE, group, count, 0, v, v, SIMPAR_RED_SUM};
    simpar_layer_coll(c, which, what, &coll, FALSE);
}

static void
layer_shard(SimparLayerCtx *c, const char *tensor, SimparShardRole role, SimparView v,
            const SimparBlock *blk)
{
    SimparShard s = {tensor,    role,      c->rank,   v,          blk->row0,
                     blk->rows, blk->col0, blk->cols, c->cp_group};
    simpar_schedule_add_shard(c->sched, &s);
}

/* A parameter's gradient: each context-parallel rank holds its tokens' share of it. */
static SimparShardRole
layer_grad_role(const SimparLayerCtx *c)
{
    return c->cp_group != SIMPAR_NO_GROUP ? SIMPAR_SHARD_PARTIAL : SIMPAR_SHARD_OUTPUT;
}

/* ----- parameters ----- */

void
simpar_layer_linear_params(SimparLayerCtx *c, guint w)
{
    const SimparBlock *wb = &c->geom.weight[w], *bb = &c->geom.bias[w];
    SimparLinearState *l = &c->lin[w];
    const char *n = layer_linear_names[w];
    l->w = simpar_layer_buffer(c, w, "weight", wb->rows * wb->cols);
    l->dw = simpar_layer_buffer(c, w, "weight.grad", wb->rows * wb->cols);
    g_autofree char *tw = g_strconcat(n, ".weight", NULL);
    g_autofree char *gw = g_strconcat(n, ".weight.grad", NULL);
    layer_shard(c, tw, SIMPAR_SHARD_INPUT, simpar_view(l->w, 0), wb);
    layer_shard(c, gw, layer_grad_role(c), simpar_view(l->dw, 0), wb);
    if (!layer_has_bias(c, w))
        return;
    l->b = simpar_layer_buffer(c, w, "bias", bb->cols);
    l->db = simpar_layer_buffer(c, w, "bias.grad", bb->cols);
    g_autofree char *tb = g_strconcat(n, ".bias", NULL);
    g_autofree char *gb = g_strconcat(n, ".bias.grad", NULL);
    layer_shard(c, tb, SIMPAR_SHARD_INPUT, simpar_view(l->b, 0), bb);
    layer_shard(c, gb, layer_grad_role(c), simpar_view(l->db, 0), bb);
}

static gboolean
layer_rms(const SimparLayerCtx *c)
{
    return c->model->norm == SIMPAR_NORM_RMSNORM;
}

/* A norm's parameters, over the block and group ln holds. */
void
simpar_layer_norm_params(SimparLayerCtx *c, SimparLayerNorm *ln, const char *name)
{
    SimparBlock blk = {0, 1, ln->col0, ln->cols};
    guint n_parts = layer_rms(c) ? 1 : 2;
    g_autofree char *p = g_strconcat(name, ".params", NULL), *g = g_strconcat(name, ".grads", NULL);
    ln->params = simpar_layer_buffer(c, G_MAXUINT, p, n_parts * ln->cols);
    ln->grads = simpar_layer_buffer(c, G_MAXUINT, g, n_parts * ln->cols);
    const char *parts[] = {"gamma", "beta"};
    for (guint i = 0; i < n_parts; i++) {
        g_autofree char *t = g_strconcat(name, ".", parts[i], NULL);
        g_autofree char *tg = g_strconcat(name, ".", parts[i], ".grad", NULL);
        layer_shard(c, t, SIMPAR_SHARD_INPUT, simpar_view(ln->params, i * ln->cols), &blk);
        layer_shard(c, tg, layer_grad_role(c), simpar_view(ln->grads, i * ln->cols), &blk);
    }
}

/* A norm of the residual stream (ln1, ln2). */
static void
layer_params_ln(SimparLayerCtx *c, SimparLayerNorm *ln, const char *name)
{
    const SimparBlock *res = &c->geom.res;
    ln->rows = res->rows, ln->col0 = res->col0, ln->cols = res->cols;
    ln->width = c->model->hidden, ln->group = c->geom.ln_group;
    simpar_layer_norm_params(c, ln, name);
}

/* ----- layer norm, distributed over the columns of geom.ln_group ----- */

/* RMSNorm sums only the squares (the second half of the statistics). */
static void
layer_ln_stats_allreduce(SimparLayerCtx *c, const SimparLayerNorm *ln, guint stats)
{
    guint64 rows = ln->rows;
    if (layer_rms(c)) {
        simpar_layer_allreduce(c, G_MAXUINT, "ln.all-reduce-sumsq", ln->group,
                               simpar_view(stats, rows), rows);
    } else if (c->geom.ln_split) {
        simpar_layer_allreduce(c, G_MAXUINT, "ln.all-reduce-sum", ln->group, simpar_view(stats, 0),
                               rows);
        simpar_layer_allreduce(c, G_MAXUINT, "ln.all-reduce-sumsq", ln->group,
                               simpar_view(stats, rows), rows);
    } else {
        simpar_layer_allreduce(c, G_MAXUINT, "ln.all-reduce-stats", ln->group,
                               simpar_view(stats, 0), 2 * rows);
    }
}

SimparView
simpar_layer_norm_fwd(SimparLayerCtx *c, SimparLayerNorm *ln, SimparView x)
{
    guint stats = simpar_layer_buffer(c, G_MAXUINT, "ln.stats", 2 * ln->rows);
    guint out = simpar_layer_buffer(c, G_MAXUINT, "ln.out", ln->rows * ln->cols);
    ln->xhat = simpar_layer_buffer(c, G_MAXUINT, "ln.xhat", ln->rows * ln->cols);
    ln->rstd = simpar_layer_buffer(c, G_MAXUINT, "ln.rstd", ln->rows);
    gboolean rms = layer_rms(c);
    SimparKernel k = {
        .rows = ln->rows, .cols = ln->cols, .in = {x}, .out = {{stats, 0}}, .rms = rms};
    simpar_layer_kernel(c, SIMPAR_OP_LN_STATS, G_MAXUINT, "ln.stats", k);
    layer_ln_stats_allreduce(c, ln, stats);
    SimparView beta = rms ? SIMPAR_NO_VIEW : simpar_view(ln->params, ln->cols);
    k = (SimparKernel){.rows = ln->rows,
                       .cols = ln->cols,
                       .in = {x, {stats, 0}, {ln->params, 0}, beta},
                       .out = {{out, 0}, {ln->xhat, 0}, {ln->rstd, 0}},
                       .hidden = ln->width,
                       .eps = c->plan->eps,
                       .rms = rms};
    simpar_layer_kernel(c, SIMPAR_OP_LN_APPLY, G_MAXUINT, "ln.apply", k);
    return simpar_view(out, 0);
}

SimparView
simpar_layer_norm_bwd(SimparLayerCtx *c, SimparLayerNorm *ln, SimparView dy)
{
    guint stats = simpar_layer_buffer(c, G_MAXUINT, "ln.bwd-stats", 2 * ln->rows);
    guint dx = simpar_layer_buffer(c, G_MAXUINT, "ln.dx", ln->rows * ln->cols);
    SimparView gamma = simpar_view(ln->params, 0);
    gboolean rms = layer_rms(c);
    SimparView dbeta = rms ? SIMPAR_NO_VIEW : simpar_view(ln->grads, ln->cols);
    SimparKernel k = {.rows = ln->rows,
                      .cols = ln->cols,
                      .in = {dy, {ln->xhat, 0}, gamma},
                      .out = {{stats, 0}, {ln->grads, 0}, dbeta},
                      .rms = rms};
    simpar_layer_kernel(c, SIMPAR_OP_LN_BWD_STATS, G_MAXUINT, "ln.bwd-stats", k);
    layer_ln_stats_allreduce(c, ln, stats);
    k = (SimparKernel){.rows = ln->rows,
                       .cols = ln->cols,
                       .in = {dy, {ln->xhat, 0}, gamma, {ln->rstd, 0}, {stats, 0}},
                       .out = {{dx, 0}},
                       .hidden = ln->width,
                       .rms = rms};
    simpar_layer_kernel(c, SIMPAR_OP_LN_BWD_APPLY, G_MAXUINT, "ln.bwd-apply", k);
    simpar_layer_allreduce(c, G_MAXUINT, "ln.all-reduce-param-grads", c->geom.ln_param_group,
                           simpar_view(ln->grads, 0), (rms ? 1 : 2) * ln->cols);
    return simpar_view(dx, 0);
}

/* ----- elementwise pieces ----- */

SimparView
simpar_layer_elementwise(SimparLayerCtx *c, SimparOpKind kind, const char *what, guint64 rows,
                         guint64 cols, SimparView a, SimparView b)
{
    guint out = simpar_layer_buffer(c, G_MAXUINT, what, rows * cols);
    SimparKernel k = {.rows = rows, .cols = cols, .in = {a, b}, .out = {{out, 0}}};
    simpar_layer_kernel(c, kind, G_MAXUINT, what, k);
    return simpar_view(out, 0);
}

/* The MLP's activation on fc1's output z1 [inner x fc1 cols]: GeLU, or SwiGLU over its
 * (gate, up) pairs into [inner x ffn_cols]. */
static SimparView
layer_activation_fwd(SimparLayerCtx *c, guint64 inner, SimparView z1)
{
    if (c->model->mlp == SIMPAR_MLP_SWIGLU)
        return simpar_layer_elementwise(c, SIMPAR_OP_SWIGLU, "swiglu", inner, c->geom.ffn_cols, z1,
                                        SIMPAR_NO_VIEW);
    return simpar_layer_elementwise(c, SIMPAR_OP_GELU, "gelu", inner, c->geom.ffn_cols, z1,
                                    SIMPAR_NO_VIEW);
}

static SimparView
layer_activation_bwd(SimparLayerCtx *c, guint64 inner, SimparView dg1, SimparView z1)
{
    if (c->model->mlp != SIMPAR_MLP_SWIGLU)
        return simpar_layer_elementwise(c, SIMPAR_OP_GELU_BWD, "gelu-bwd", inner, c->geom.ffn_cols,
                                        dg1, z1);
    guint out = simpar_layer_buffer(c, G_MAXUINT, "swiglu-bwd", inner * 2 * c->geom.ffn_cols);
    SimparKernel k = {.rows = inner, .cols = c->geom.ffn_cols, .in = {dg1, z1}, .out = {{out, 0}}};
    simpar_layer_kernel(c, SIMPAR_OP_SWIGLU_BWD, G_MAXUINT, "swiglu-bwd", k);
    return simpar_view(out, 0);
}

/* Dropout on the residual-stream block; `bwd` selects the backward kernel. */
static SimparView
layer_dropout(SimparLayerCtx *c, guint site, const char *what, SimparView x, gboolean bwd)
{
    const SimparBlock *res = &c->geom.res;
    guint out = simpar_layer_buffer(c, G_MAXUINT, what, res->rows * res->cols);
    SimparKernel k = {.rows = res->rows,
                      .cols = res->cols,
                      .in = {x},
                      .out = {{out, 0}},
                      .p = c->plan->p_hidden,
                      .seed = c->plan->seed,
                      .site = site,
                      .row0 = res->row0,
                      .col0 = res->col0,
                      .global_cols = c->model->hidden};
    simpar_layer_kernel(c, bwd ? SIMPAR_OP_DROPOUT_BWD : SIMPAR_OP_DROPOUT, G_MAXUINT, what, k);
    return simpar_view(out, 0);
}

static guint64
layer_out_rows(const SimparLayerCtx *c, guint which)
{
    gboolean to_res = which == SIMPAR_LIN_PROJ || which == SIMPAR_LIN_FC2;
    return to_res ? c->geom.res.rows : (guint64) c->geom.nb * c->model->seq;
}

SimparView
simpar_layer_linear_fwd(SimparLayerCtx *c, guint which, SimparView x, guint64 in_rows)
{
    c->lin[which].in = x;
    c->lin[which].in_rows = in_rows;
    SimparView y = c->scheme->linear_fwd(c, which, x);
    if (!layer_has_bias(c, which))
        return y;
    SimparKernel k = {.rows = layer_out_rows(c, which),
                      .cols = c->geom.bias[which].cols,
                      .in = {simpar_view(c->lin[which].b, 0)},
                      .out = {y}};
    simpar_layer_kernel(c, SIMPAR_OP_BIAS_ADD, which, "bias-add", k);
    return y;
}

/* dY -> dX through one linear; the bias gradient is summed over local rows, then over the
 * ranks that hold the same columns (geom.bias_group). */
SimparView
simpar_layer_linear_bwd(SimparLayerCtx *c, guint which, SimparView dy)
{
    SimparView dx = c->scheme->linear_bwd(c, which, dy);
    if (!layer_has_bias(c, which))
        return dx;
    SimparKernel k = {.rows = layer_out_rows(c, which),
                      .cols = c->geom.bias[which].cols,
                      .in = {dy},
                      .out = {simpar_view(c->lin[which].db, 0)}};
    simpar_layer_kernel(c, SIMPAR_OP_BIAS_GRAD, which, "bias-grad", k);
    simpar_layer_allreduce(c, which, "all-reduce-bias-grad", c->geom.bias_group[which],
                           simpar_view(c->lin[which].db, 0), c->geom.bias[which].cols);
    return dx;
}

static SimparOp
layer_attention_op(const SimparLayerCtx *c, SimparOpKind kind)
{
    const SimparLayerGeom *g = &c->geom;
    gboolean mla = simpar_model_is_mla(c->model);
    return (SimparOp){.kind = kind,
                      .u.attn = {.nb = g->nb,
                                 .nh = g->nh,
                                 .s = c->model->seq,
                                 .dh = (guint) simpar_model_qk_head_dim(c->model),
                                 .dv = mla ? (guint) c->model->mla.v_head_dim : 0,
                                 .dpe = mla ? (guint) c->model->mla.qk_pos_emb_head_dim : 0,
                                 .nkv = g->nkv,
                                 .cp = simpar_plan_cp(c->plan),
                                 .cp_rank = c->cp_rank,
                                 .causal = c->plan->causal,
                                 .p = c->plan->p_attn,
                                 .seed = c->plan->seed,
                                 .batch0 = g->batch0,
                                 .head0 = g->head0,
                                 .heads = c->model->heads}};
}

/* The k | v columns of every local key/value group of the rank's qkv rows, packed (dkv: written
 * back), as context parallelism exchanges them. */
static SimparKernel
layer_kv_cols(const SimparLayerCtx *c)
{
    const SimparLayerGeom *g = &c->geom;
    guint dh = (guint) simpar_model_head_dim(c->model), r = g->nh / g->nkv;
    return (SimparKernel){.rows = (guint) (g->nb * c->model->seq),
                          .cols = g->nkv * 2 * dh,
                          .ld = (g->nh + 2 * g->nkv) * dh,
                          .groups = g->nkv,
                          .width = 2 * dh,
                          .stride = (r + 2) * dh,
                          .offset = r * dh};
}

/* The attention input's elements, qkv [tokens x (nh + 2 nkv) dh] or MLA's latent layout
 * (schedule.h); at[1], at[2] get where its kv and pe regions start (at may be NULL). */
gsize
simpar_layer_qkv_elems(const SimparLayerCtx *c, gsize at[3])
{
    const SimparLayerGeom *g = &c->geom;
    const SimparModel *m = c->model;
    gsize tokens = (gsize) g->nb * m->seq, dh = (gsize) simpar_model_qk_head_dim(m);
    if (!simpar_model_is_mla(m))
        return tokens * (g->nh + 2 * g->nkv) * dh;
    gsize kv0 = tokens * g->nh * dh;
    gsize pe0 = kv0 + tokens * g->nh * (gsize) (m->mla.qk_head_dim + m->mla.v_head_dim);
    if (at != NULL)
        at[0] = 0, at[1] = kv0, at[2] = pe0;
    return pe0 + tokens * (gsize) m->mla.qk_pos_emb_head_dim;
}

/* This rank's keys and values, packed [tokens x 2 nkv dh]. */
static SimparView
layer_kv_pack(SimparLayerCtx *c, SimparView qkv)
{
    SimparKernel k = layer_kv_cols(c);
    guint mine = simpar_layer_buffer(c, G_MAXUINT, "attn.kv", (gsize) k.rows * k.cols);
    k.in[0] = qkv, k.out[0] = simpar_view(mine, 0);
    simpar_layer_kernel(c, SIMPAR_OP_PACK_COLS, G_MAXUINT, "attn.pack-kv", k);
    return simpar_view(mine, 0);
}

/* Context parallelism: every rank's keys and values, [C x tokens x 2 nkv dh]. */
static SimparView
layer_kv_gather(SimparLayerCtx *c, SimparView qkv)
{
    SimparKernel k = layer_kv_cols(c);
    guint mine = layer_kv_pack(c, qkv).buf;
    gsize count = (gsize) k.rows * k.cols;
    guint all = simpar_layer_buffer(c, G_MAXUINT, "attn.kv-all", count * simpar_plan_cp(c->plan));
    SimparColl ag = {SIMPAR_COLL_ALL_GATHER, c->cp_group,         count,         0,
                     simpar_view(mine, 0),   simpar_view(all, 0), SIMPAR_RED_SUM};
    simpar_layer_coll(c, G_MAXUINT, "attn.cp.all-gather-kv", &ag, FALSE);
    return simpar_view(all, 0);
}

/* ----- ring attention (--cp-mode ring): key blocks passed around the context-parallel ring -----
 */

static gboolean
layer_ring(const SimparLayerCtx *c)
{
    return c->cp_group != SIMPAR_NO_GROUP && c->plan->cp_ring;
}

/* The schedule rank of this tensor-parallel rank on the context-parallel rank `step` places
 * after this one (C - 1: the one before). */
static guint
layer_cp_peer(const SimparLayerCtx *c, guint step)
{
    guint C = simpar_plan_cp(c->plan);
    return c->trank + (guint) c->plan->tp * ((c->cp_rank + step) % C);
}

/* Messages are told apart by phase, recomputation, what travels (kind 0: keys in the forward,
 * 1: keys in the backward, 2: their gradients) and the ring step. */
static guint
layer_ring_tag(const SimparLayerCtx *c, guint kind, guint step)
{
    guint base = ((guint) c->phase * 2 + (c->recomputing ? 1 : 0)) * 3 + kind;
    return base * (simpar_plan_cp(c->plan) + 1) + step;
}

void
simpar_layer_p2p(SimparLayerCtx *c, SimparOpKind kind, guint stream, guint which, const char *what,
                 guint peer, guint tag, SimparView v, gsize count)
{
    SimparOp op = {.kind = kind, .stream = stream, .u.p2p = {peer, tag, count, v}};
    layer_add(c, &op, which, what);
}

static void
layer_p2p(SimparLayerCtx *c, SimparOpKind kind, guint stream, guint peer, guint tag, guint buf,
          gsize count, const char *what)
{
    simpar_layer_p2p(c, kind, stream, G_MAXUINT, what, peer, tag, simpar_view(buf, 0), count);
}

/* Send `buf` to the next rank of the ring and receive the previous rank's into `into`, on two
 * streams (every rank sends first: a send and its ring neighbour's receive must not wait in one
 * queue). */
static void
layer_ring_shift(SimparLayerCtx *c, guint kind, guint step, guint buf, guint into, gsize count)
{
    guint tag = layer_ring_tag(c, kind, step), C = simpar_plan_cp(c->plan);
    layer_p2p(c, SIMPAR_OP_SEND, c->cp_send, layer_cp_peer(c, 1), tag, buf, count,
              kind == 2 ? "attn.cp.send-dkv" : "attn.cp.send-kv");
    layer_p2p(c, SIMPAR_OP_RECV, c->comm, layer_cp_peer(c, C - 1), tag, into, count,
              kind == 2 ? "attn.cp.recv-dkv" : "attn.cp.recv-kv");
}

static SimparOp
layer_ring_op(const SimparLayerCtx *c, SimparOpKind kind, guint step)
{
    SimparOp op = {.kind = kind};
    op.u.attn = (SimparAttention){.nb = c->geom.nb,
                                  .nh = c->geom.nh,
                                  .s = (guint) c->model->seq,
                                  .dh = (guint) simpar_model_head_dim(c->model),
                                  .nkv = c->geom.nkv,
                                  .cp = simpar_plan_cp(c->plan),
                                  .cp_rank = c->cp_rank,
                                  .kv_rank = (c->cp_rank + simpar_plan_cp(c->plan) - step) %
                                             simpar_plan_cp(c->plan),
                                  .causal = c->plan->causal,
                                  .p = c->plan->p_attn,
                                  .seed = c->plan->seed,
                                  .batch0 = c->geom.batch0,
                                  .head0 = c->geom.head0,
                                  .heads = (guint64) c->model->heads};
    return op;
}

/* Forward: C steps; step i attends to rank (c - i)'s keys while the next block travels; the
 * first block writes o and lse, the others are merged in. `kv` is this rank's packed block. */
static void
layer_ring_fwd(SimparLayerCtx *c, SimparView qkv, SimparView kv, SimparView ctx, guint lse)
{
    SimparKernel k = layer_kv_cols(c);
    gsize count = (gsize) k.rows * k.cols, C = simpar_plan_cp(c->plan);
    gsize rows = (gsize) c->geom.nb * c->geom.nh * c->model->seq;
    guint ring[2] = {simpar_layer_buffer(c, G_MAXUINT, "attn.kv-ring0", count),
                     simpar_layer_buffer(c, G_MAXUINT, "attn.kv-ring1", count)};
    guint ob = simpar_layer_buffer(c, G_MAXUINT, "attn.o-block",
                                   (gsize) k.rows * c->geom.nh * simpar_model_head_dim(c->model));
    guint lb = simpar_layer_buffer(c, G_MAXUINT, "attn.lse-block", rows);
    SimparView cur = kv;
    for (guint i = 0; i < C; i++) {
        if (i + 1 < C)
            layer_ring_shift(c, 0, i, cur.buf, ring[i % 2], count);
        SimparOp op = layer_ring_op(c, SIMPAR_OP_ATTN_BLOCK, i);
        op.u.attn.in[0] = qkv, op.u.attn.in[3] = cur;
        op.u.attn.out[0] = i == 0 ? ctx : simpar_view(ob, 0);
        op.u.attn.out[1] = simpar_view(i == 0 ? lse : lb, 0);
        layer_add(c, &op, G_MAXUINT, "attn.ring-block");
        if (i > 0) {
            SimparOp m = layer_ring_op(c, SIMPAR_OP_ATTN_MERGE, i);
            m.u.attn.in[0] = simpar_view(ob, 0), m.u.attn.in[1] = simpar_view(lb, 0);
            m.u.attn.out[0] = ctx, m.u.attn.out[1] = simpar_view(lse, 0);
            layer_add(c, &m, G_MAXUINT, "attn.ring-merge");
        }
        cur = simpar_view(ring[i % 2], 0);
    }
}

/* Backward: the key blocks travel again, each with its gradient: step i adds this rank's part
 * of block (c - i)'s dK, dV to the partial sum that came with it and passes both on; after C
 * steps each block's sum goes one more hop, home, and is written into dqkv's k | v columns. */
static SimparView
layer_ring_bwd(SimparLayerCtx *c, SimparView qkv, SimparView kv, SimparView ctx, guint lse,
               SimparView dctx)
{
    SimparKernel k = layer_kv_cols(c);
    gsize count = (gsize) k.rows * k.cols, C = simpar_plan_cp(c->plan);
    guint dqkv = simpar_layer_buffer(c, G_MAXUINT, "attn.dqkv", (gsize) k.rows * k.ld);
    guint ring[2] = {simpar_layer_buffer(c, G_MAXUINT, "attn.kv-ring-bwd0", count),
                     simpar_layer_buffer(c, G_MAXUINT, "attn.kv-ring-bwd1", count)};
    guint dring[3] = {simpar_layer_buffer(c, G_MAXUINT, "attn.dkv-ring0", count),
                      simpar_layer_buffer(c, G_MAXUINT, "attn.dkv-ring1", count),
                      simpar_layer_buffer(c, G_MAXUINT, "attn.dkv", count)};
    SimparView cur = kv;
    guint dcur = dring[0];
    for (guint i = 0; i < C; i++) {
        if (i + 1 < C)
            layer_ring_shift(c, 1, i, cur.buf, ring[i % 2], count);
        SimparOp op = layer_ring_op(c, SIMPAR_OP_ATTN_BLOCK_BWD, i);
        op.u.attn.in[0] = qkv, op.u.attn.in[1] = ctx, op.u.attn.in[2] = dctx;
        op.u.attn.in[3] = cur, op.u.attn.in[4] = simpar_view(lse, 0);
        op.u.attn.out[0] = simpar_view(dqkv, 0), op.u.attn.out[1] = simpar_view(dcur, 0);
        op.u.attn.accumulate = i > 0;
        layer_add(c, &op, G_MAXUINT, "attn.ring-block-bwd");
        /* the block's partial gradient onwards; the last one goes home */
        guint next = i + 1 < C ? dring[(i + 1) % 2] : dring[2];
        layer_ring_shift(c, 2, i, dcur, next, count);
        cur = simpar_view(ring[i % 2], 0), dcur = next;
    }
    k.in[0] = simpar_view(dcur, 0), k.out[0] = simpar_view(dqkv, 0);
    simpar_layer_kernel(c, SIMPAR_OP_UNPACK_COLS, G_MAXUINT, "attn.unpack-dkv", k);
    return simpar_view(dqkv, 0);
}

/* qkv (and, with context parallelism, the gathered kv) -> ctx, writing the probabilities the
 * backward reads. */
static void
layer_attention_fwd(SimparLayerCtx *c, SimparView qkv, SimparView kv, SimparView ctx, guint probs)
{
    SimparOp op = layer_attention_op(c, SIMPAR_OP_ATTENTION);
    op.u.attn.in[0] = qkv;
    op.u.attn.in[3] = kv;
    op.u.attn.out[0] = ctx;
    op.u.attn.out[1] = simpar_view(probs, 0);
    layer_add(c, &op, G_MAXUINT, "attention");
}

/* dqkv; with context parallelism the gradients of every rank's keys and values are
 * reduce-scattered back to their owners and written into dqkv's k | v columns. */
static SimparView
layer_attention_bwd(SimparLayerCtx *c, SimparView qkv, SimparView kv, guint probs, SimparView dctx)
{
    guint out = simpar_layer_buffer(c, G_MAXUINT, "attn.dqkv", simpar_layer_qkv_elems(c, NULL));
    SimparOp op = layer_attention_op(c, SIMPAR_OP_ATTENTION_BWD);
    op.u.attn.in[0] = qkv;
    op.u.attn.in[1] = simpar_view(probs, 0);
    op.u.attn.in[2] = dctx;
    op.u.attn.in[3] = kv;
    op.u.attn.out[0] = simpar_view(out, 0);
    SimparKernel k = layer_kv_cols(c);
    gsize count = (gsize) k.rows * k.cols;
    guint dkv_all = G_MAXUINT;
    if (c->cp_group != SIMPAR_NO_GROUP) {
        dkv_all =
            simpar_layer_buffer(c, G_MAXUINT, "attn.dkv-all", count * simpar_plan_cp(c->plan));
        op.u.attn.out[1] = simpar_view(dkv_all, 0);
    }
    layer_add(c, &op, G_MAXUINT, "attention-bwd");
    if (dkv_all == G_MAXUINT)
        return simpar_view(out, 0);
    guint mine = simpar_layer_buffer(c, G_MAXUINT, "attn.dkv", count);
    SimparColl rs = {SIMPAR_COLL_REDUCE_SCATTER, c->cp_group,          count,         0,
                     simpar_view(dkv_all, 0),    simpar_view(mine, 0), SIMPAR_RED_SUM};
    simpar_layer_coll(c, G_MAXUINT, "attn.cp.reduce-scatter-dkv", &rs, FALSE);
    k.in[0] = simpar_view(mine, 0), k.out[0] = simpar_view(out, 0);
    simpar_layer_kernel(c, SIMPAR_OP_UNPACK_COLS, G_MAXUINT, "attn.unpack-dkv", k);
    return simpar_view(out, 0);
}

/* ----- the attention's input: the QKV linear, or multi-head latent attention (tp-mla.c) ----- */

static void
layer_qkv_params(SimparLayerCtx *c, SimparLayerNorm latent[2])
{
    (void) latent;
    simpar_layer_linear_params(c, SIMPAR_LIN_QKV);
}

static SimparView
layer_qkv_fwd(SimparLayerCtx *c, SimparLayerNorm latent[2], SimparView u)
{
    (void) latent;
    return simpar_layer_linear_fwd(c, SIMPAR_LIN_QKV, u, c->geom.res.rows);
}

static SimparView
layer_qkv_bwd(SimparLayerCtx *c, SimparLayerNorm latent[2], SimparView dqkv)
{
    (void) latent;
    return simpar_layer_linear_bwd(c, SIMPAR_LIN_QKV, dqkv);
}

static const SimparAttnInput layer_qkv_input = {layer_qkv_params, layer_qkv_fwd, layer_qkv_bwd,
                                                NULL};

static const SimparAttnInput *
layer_attn_input(const SimparLayerCtx *c)
{
    return simpar_model_is_mla(c->model) ? &simpar_mla_input : &layer_qkv_input;
}

/* ----- the layer ----- */

/* Whether the layer has its dense MLP: an MoE model's layers leave their MLP part after the
 * second norm to the MoE block (moe.h), timed and placed on the expert-parallel group; the norm
 * (Megatron-Core's pre_mlp_layernorm) and the residual add stay here, as the dense layer's. */
static gboolean
layer_has_mlp(const SimparLayerCtx *c)
{
    return !simpar_model_is_moe(c->model);
}

/* Selective recomputation's modules in the layer (plan.h): the first norm, the second, the
 * dense MLP; each a [start, end) of the forward's buffers (simpar_layer_mark). */
enum {
    LAYER_MARK_LN1,
    LAYER_MARK_LN2,
    LAYER_MARK_MLP,
    LAYER_N_MARKS
};

typedef struct {
    SimparLayerNorm ln[2], latent[2];       /* latent: MLA's query and key/value latents' norms */
    SimparView x, dy, qkv, kv, ctx, r1, z1; /* kv: context parallelism's gathered k | v */
    SimparView u2;                          /* the second norm's output: the MLP's input */
    guint probs;
    guint mark[LAYER_N_MARKS][2];
} LayerActs;

/* Whether the plan recomputes `module` (plan.h). */
static gboolean
layer_recomputes(const SimparLayerCtx *c, guint module)
{
    return simpar_plan_recomputes(c->plan, module);
}

/* The dense MLP forward: u2 -> fc2's output (before its dropout). */
static SimparView
layer_mlp_fwd(SimparLayerCtx *c, LayerActs *a)
{
    guint64 inner = (guint64) c->geom.nb * c->model->seq;
    a->z1 = simpar_layer_linear_fwd(c, SIMPAR_LIN_FC1, a->u2, c->geom.res.rows);
    SimparView g1 = layer_activation_fwd(c, inner, a->z1);
    return simpar_layer_linear_fwd(c, SIMPAR_LIN_FC2, g1, inner);
}

static void
layer_forward(SimparLayerCtx *c, LayerActs *a)
{
    const SimparBlock *res = &c->geom.res;
    guint64 inner = (guint64) c->geom.nb * c->model->seq, s = c->model->seq;
    guint64 dv = simpar_model_v_head_dim(c->model), nh = c->geom.nh;
    a->mark[LAYER_MARK_LN1][0] = simpar_layer_mark(c);
    SimparView u1 = simpar_layer_norm_fwd(c, &a->ln[0], a->x);
    a->mark[LAYER_MARK_LN1][1] = simpar_layer_mark(c);
    a->qkv = layer_attn_input(c)->fwd(c, a->latent, u1);
    a->ctx = simpar_view(simpar_layer_buffer(c, G_MAXUINT, "attn.ctx", inner * nh * dv), 0);
    if (layer_ring(c)) { /* flash-like blocks: the row's log-sum-exp, no probabilities */
        a->kv = layer_kv_pack(c, a->qkv);
        a->probs = simpar_layer_buffer(c, G_MAXUINT, "attn.lse", c->geom.nb * nh * s);
        layer_ring_fwd(c, a->qkv, a->kv, a->ctx, a->probs);
    } else {
        a->kv = c->cp_group != SIMPAR_NO_GROUP ? layer_kv_gather(c, a->qkv) : SIMPAR_NO_VIEW;
        a->probs = simpar_layer_buffer(c, G_MAXUINT, "attn.probs",
                                       c->geom.nb * nh * s * s * simpar_plan_cp(c->plan));
        layer_attention_fwd(c, a->qkv, a->kv, a->ctx, a->probs);
    }
    SimparView o = simpar_layer_linear_fwd(c, SIMPAR_LIN_PROJ, a->ctx, inner);
    o = layer_dropout(c, SIMPAR_DROPOUT_PROJ, "proj.dropout", o, FALSE);
    a->r1 = simpar_layer_elementwise(c, SIMPAR_OP_ADD, "residual1", res->rows, res->cols, a->x, o);
    a->mark[LAYER_MARK_LN2][0] = simpar_layer_mark(c);
    a->u2 = simpar_layer_norm_fwd(c, &a->ln[1], a->r1);
    a->mark[LAYER_MARK_LN2][1] = a->mark[LAYER_MARK_MLP][0] = simpar_layer_mark(c);
    if (!layer_has_mlp(c)) { /* an MoE layer: its MLP part is moe.c's block (tp-moe.c) */
        if (!c->recomputing)
            layer_shard(c, "y", SIMPAR_SHARD_OUTPUT, simpar_moe_part.fwd(c, a->u2, a->r1), res);
        return;
    }
    SimparView z2 = layer_mlp_fwd(c, a);
    a->mark[LAYER_MARK_MLP][1] = simpar_layer_mark(c);
    z2 = layer_dropout(c, SIMPAR_DROPOUT_FC2, "fc2.dropout", z2, FALSE);
    guint y = simpar_layer_buffer(c, G_MAXUINT, "y", res->rows * res->cols);
    SimparKernel k = {.rows = res->rows, .cols = res->cols, .in = {a->r1, z2}, .out = {{y, 0}}};
    simpar_layer_kernel(c, SIMPAR_OP_ADD, G_MAXUINT, "residual2", k);
    if (!c->recomputing)
        layer_shard(c, "y", SIMPAR_SHARD_OUTPUT, simpar_view(y, 0), res);
}

/* Full recompute: the forward again from the stored layer input, into the forward's buffers. */
static void
layer_recompute_forward(SimparLayerCtx *c, LayerActs *a)
{
    c->recomputing = TRUE;
    c->n_replayed = 0;
    layer_forward(c, a);
    g_assert(c->n_replayed == c->fwd_bufs->len);
    c->recomputing = FALSE;
}

/* Selective recompute: the attention core again (its s x s probabilities are not stored). */
static void
layer_recompute_attention(SimparLayerCtx *c, LayerActs *a)
{
    c->recomputing = TRUE;
    layer_attention_fwd(c, a->qkv, a->kv, a->ctx, a->probs);
    c->recomputing = FALSE;
}

/* A module of the layer again, from its mark (plan.h's layernorm and mlp). */
static void
layer_recompute_module(SimparLayerCtx *c, LayerActs *a, guint which)
{
    simpar_layer_replay_begin(c, a->mark[which][0]);
    if (which == LAYER_MARK_MLP)
        layer_mlp_fwd(c, a);
    else if (which == LAYER_MARK_LN1)
        simpar_layer_norm_fwd(c, &a->ln[0], a->x);
    else
        simpar_layer_norm_fwd(c, &a->ln[1], a->r1);
    simpar_layer_replay_end(c, a->mark[which][1]);
}

/* Before the MLP part's backward: the second norm's output (layernorm), the dense MLP (mlp). */
static void
layer_recompute_mlp_part(SimparLayerCtx *c, LayerActs *a)
{
    if (layer_recomputes(c, SIMPAR_RECOMPUTE_LAYERNORM))
        layer_recompute_module(c, a, LAYER_MARK_LN2);
    if (layer_has_mlp(c) && layer_recomputes(c, SIMPAR_RECOMPUTE_MLP))
        layer_recompute_module(c, a, LAYER_MARK_MLP);
}

static void
layer_backward(SimparLayerCtx *c, LayerActs *a)
{
    const SimparBlock *res = &c->geom.res;
    guint64 inner = (guint64) c->geom.nb * c->model->seq;
    c->phase = SIMPAR_PHASE_BACKWARD;
    if (c->plan->recompute == SIMPAR_RECOMPUTE_FULL)
        layer_recompute_forward(c, a);
    SimparView du2;
    if (layer_has_mlp(c)) {
        SimparView dz2 = layer_dropout(c, SIMPAR_DROPOUT_FC2, "fc2.dropout-bwd", a->dy, TRUE);
        layer_recompute_mlp_part(c, a);
        SimparView dg1 = simpar_layer_linear_bwd(c, SIMPAR_LIN_FC2, dz2);
        SimparView dz1 = layer_activation_bwd(c, inner, dg1, a->z1);
        du2 = simpar_layer_linear_bwd(c, SIMPAR_LIN_FC1, dz1);
    } else {
        layer_recompute_mlp_part(c, a);
        du2 = simpar_moe_part.bwd(c, a->dy); /* the MoE block's input gradient */
    }
    SimparView dr1 = simpar_layer_norm_bwd(c, &a->ln[1], du2);
    dr1 = simpar_layer_elementwise(c, SIMPAR_OP_ADD, "residual1-bwd", res->rows, res->cols, dr1,
                                   a->dy);
    SimparView d_o = layer_dropout(c, SIMPAR_DROPOUT_PROJ, "proj.dropout-bwd", dr1, TRUE);
    if (layer_recomputes(c, SIMPAR_RECOMPUTE_LAYERNORM))
        layer_recompute_module(c, a, LAYER_MARK_LN1);
    SimparView dctx = simpar_layer_linear_bwd(c, SIMPAR_LIN_PROJ, d_o);
    if (layer_recomputes(c, SIMPAR_RECOMPUTE_MLA_UP_PROJ) && layer_attn_input(c)->recompute != NULL)
        layer_attn_input(c)->recompute(c, a->latent);
    SimparView dqkv;
    if (layer_ring(c)) { /* recomputes its probabilities from the lse anyway */
        dqkv = layer_ring_bwd(c, a->qkv, a->kv, a->ctx, a->probs, dctx);
    } else {
        if (layer_recomputes(c, SIMPAR_RECOMPUTE_CORE_ATTN))
            layer_recompute_attention(c, a);
        dqkv = layer_attention_bwd(c, a->qkv, a->kv, a->probs, dctx);
    }
    SimparView du1 = layer_attn_input(c)->bwd(c, a->latent, dqkv);
    SimparView dx1 = simpar_layer_norm_bwd(c, &a->ln[0], du1);
    guint dx = simpar_layer_buffer(c, G_MAXUINT, "dx", res->rows * res->cols);
    SimparKernel k = {.rows = res->rows, .cols = res->cols, .in = {dx1, dr1}, .out = {{dx, 0}}};
    simpar_layer_kernel(c, SIMPAR_OP_ADD, G_MAXUINT, "residual-bwd", k);
    layer_shard(c, "dx", SIMPAR_SHARD_OUTPUT, simpar_view(dx, 0), res);
}

static void
layer_inputs(SimparLayerCtx *c, LayerActs *a)
{
    const SimparBlock *res = &c->geom.res;
    a->x = simpar_view(simpar_layer_buffer(c, G_MAXUINT, "x", res->rows * res->cols), 0);
    a->dy = simpar_view(simpar_layer_buffer(c, G_MAXUINT, "dy", res->rows * res->cols), 0);
    layer_shard(c, "x", SIMPAR_SHARD_INPUT, a->x, res);
    layer_shard(c, "dy", SIMPAR_SHARD_INPUT, a->dy, res);
    layer_params_ln(c, &a->ln[0], "ln1");
    layer_attn_input(c)->params(c, a->latent);
    simpar_layer_linear_params(c, SIMPAR_LIN_PROJ);
    if (layer_has_mlp(c)) {
        simpar_layer_linear_params(c, SIMPAR_LIN_FC1);
        simpar_layer_linear_params(c, SIMPAR_LIN_FC2);
        layer_params_ln(c, &a->ln[1], "ln2");
        return;
    }
    layer_params_ln(c, &a->ln[1], "ln2"); /* the pre-MLP norm, whose output the MoE block takes */
    /* the MoE block's parameters on this rank (moe.h), for the step's gradient reductions:
     * the router's and shared experts' over the data-parallel group, the routed experts' over
     * the expert-data-parallel group */
    gsize e = (gsize) simpar_moe_expert_params(c->model, c->plan->ep, c->plan->etp);
    gsize n[2] = {(gsize) simpar_moe_rank_params(c->model, c->plan->ep, c->plan->etp) - e, e};
    const char *names[2] = {"moe.params", "moe.experts"};
    for (guint i = 0; i < 2; i++) {
        guint buf = simpar_layer_buffer(c, G_MAXUINT, names[i], n[i]);
        SimparBlock blk = {0, 1, 0, n[i]};
        layer_shard(c, names[i], SIMPAR_SHARD_INPUT, simpar_view(buf, 0), &blk);
    }
}

/* One group per set of ranks that differ only in the axis's varying coordinates. */
static void
layer_make_axis(SimparSchedule *sched, const SimparAxis *ax, guint *table)
{
    guint n_ranks = simpar_schedule_n_ranks(sched);
    guint size1 = ax->n_dims > 1 ? ax->size[1] : 1, stride1 = ax->n_dims > 1 ? ax->stride[1] : 0;
    g_autofree guint *members = g_new(guint, (gsize) ax->size[0] * size1);
    for (guint r = 0; r < n_ranks; r++) {
        guint base = r - ((r / ax->stride[0]) % ax->size[0]) * ax->stride[0];
        if (ax->n_dims > 1)
            base -= ((r / stride1) % size1) * stride1;
        if (base != r)
            continue;
        guint n = 0;
        for (guint t1 = 0; t1 < size1; t1++)
            for (guint t0 = 0; t0 < ax->size[0]; t0++)
                members[n++] = base + t0 * ax->stride[0] + t1 * stride1;
        guint gid = simpar_schedule_add_group(sched, ax->name, members, n);
        for (guint i = 0; i < n; i++)
            table[members[i]] = gid;
    }
}

SimparSchedule *
simpar_layer_build(const SimparModel *model, const SimparPlan *plan, const SimparTpScheme *scheme)
{
    guint T = (guint) plan->tp, C = simpar_plan_cp(plan), n = T * C;
    SimparModel share = *model; /* each context-parallel rank's tokens of every sequence */
    share.seq = model->seq / C;
    g_autoptr(SimparSchedule) sched = simpar_schedule_new(n, model->dtype);
    guint comm = simpar_schedule_add_stream(sched, "comm");
    guint cp_send = C > 1 && plan->cp_ring ? simpar_schedule_add_stream(sched, "cp-send") : comm;
    guint tp_send = plan->tp_comm_overlap ? simpar_schedule_add_stream(sched, "tp-send") : comm;
    guint tp_recv = plan->tp_comm_overlap ? simpar_schedule_add_stream(sched, "tp-recv") : comm;
    guint n_axes = scheme->n_axes + (C > 1);
    g_autofree guint *table = g_new(guint, (gsize) SIMPAR_MAX_AXES * n);
    g_assert(n_axes <= SIMPAR_MAX_AXES);
    for (guint a = 0; a < n_axes; a++) {
        SimparAxis ax =
            a < scheme->n_axes ? scheme->axis(plan, a) : (SimparAxis){"cp", 1, {T, 0}, {C, 0}};
        layer_make_axis(sched, &ax, table + (gsize) a * n);
    }
    for (guint r = 0; r < n; r++) {
        SimparLayerCtx c = {.sched = sched,
                            .model = &share,
                            .plan = plan,
                            .scheme = scheme,
                            .rank = r,
                            .trank = r % T,
                            .cp_rank = r / T,
                            .cp_group =
                                C > 1 ? table[(gsize) scheme->n_axes * n + r] : SIMPAR_NO_GROUP,
                            .comm = comm,
                            .cp_send = cp_send,
                            .tp_send = tp_send,
                            .tp_recv = tp_recv};
        c.async = g_array_new(FALSE, FALSE, sizeof(guint));
        for (guint w = 0; w < SIMPAR_N_LINEARS; w++)
            c.lin[w].dest = SIMPAR_NO_VIEW;
        for (guint a = 0; a < scheme->n_axes; a++)
            c.group[a] = table[(gsize) a * n + r];
        scheme->setup(&c);
        /* the group's rows follow those of the groups before it (schedule.h) */
        c.geom.res.row0 += (guint64) c.cp_rank * share.micro_batch * share.seq;
        LayerActs acts = {0};
        layer_inputs(&c, &acts);
        guint replayed = SIMPAR_RECOMPUTE_LAYERNORM | SIMPAR_RECOMPUTE_MLP |
                         SIMPAR_RECOMPUTE_MLA_UP_PROJ; /* the modules with buffers */
        if (plan->recompute == SIMPAR_RECOMPUTE_FULL || simpar_plan_recomputes(plan, replayed))
            c.fwd_bufs = g_array_new(FALSE, FALSE, sizeof(guint));
        c.phase = SIMPAR_PHASE_FORWARD;
        layer_forward(&c, &acts);
        layer_backward(&c, &acts);
        g_array_unref(c.async);
        g_clear_pointer(&c.fwd_bufs, g_array_unref);
    }
    if (model->fp8 != SIMPAR_FP8_NONE) /* the layer's GEMMs are its linears' */
        simpar_schedule_set_fp8(sched, (guint) model->fp8, plan->fp8_attention);
    return g_steal_pointer(&sched);
}

/* ----- validation helpers for the generators ----- */

gboolean
simpar_layer_require_divisible(const char *flag, gint64 value, gint64 by, const char *why,
                               GError **error)
{
    if (value % by == 0)
        return TRUE;
    g_set_error(error, SIMPAR_PLAN_ERROR, SIMPAR_PLAN_ERROR_INVALID,
                "%s %" G_GINT64_FORMAT " is not divisible by %" G_GINT64_FORMAT " (%s)", flag,
                value, by, why);
    return FALSE;
}

gboolean
simpar_layer_require_kv(const SimparModel *m, gint64 by, const char *why, GError **error)
{
    gint64 kv = simpar_model_kv_heads(m);
    if (kv % by == 0)
        return TRUE;
    g_set_error(error, SIMPAR_PLAN_ERROR, SIMPAR_PLAN_ERROR_INVALID,
                "--kv-heads %" G_GINT64_FORMAT " is not divisible by %" G_GINT64_FORMAT
                " (%s; every GPU needs whole key/value heads: use --kv-heads a multiple of "
                "%" G_GINT64_FORMAT ")",
                kv, by, why, by);
    return FALSE;
}

/* The integer q with q^power == n, or 0 if there is none. */
guint
simpar_layer_int_root(gint64 n, guint power)
{
    for (gint64 q = 1;; q++) {
        gint64 p = 1;
        for (guint i = 0; i < power; i++)
            p *= q;
        if (p == n)
            return (guint) q;
        if (p > n)
            return 0;
    }
}
