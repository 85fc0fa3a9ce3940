/* tp-mla.c - multi-head latent attention in the layer driver (tp-layer.h): its latents, their
 * norms and the attention input in the latent layout (schedule.h), forward and backward. The
 * scheme places the projections (tp-1d.c: duplicated down projections, column-parallel up
 * projections); this file joins them:
 *
 *   u -> q_down -> norm -> q_up ------------------------------> [ q | kv | pe ] -> attention
 *   u -> kv_down -> kv -> norm -> kv_up ----------------------------^       ^
 *                -> pe (all-gathered over the tokens' group with SP) --------'
 */
#include "tp-layer.h"

/* Columns [col0, col0 + cols) of the rows [rows x ld] at `from`, packed into `to` (unpack: the
 * reverse). */
static void
mla_cols(SimparLayerCtx *c, gboolean unpack, const char *what, guint64 rows, guint64 ld,
         guint64 col0, guint64 cols, SimparView from, SimparView to)
{
    SimparKernel k = {.rows = (guint) rows,
                      .cols = (guint) cols,
                      .in = {from},
                      .out = {to},
                      .ld = (guint) ld,
                      .groups = 1,
                      .width = (guint) cols,
                      .stride = (guint) cols,
                      .offset = (guint) col0};
    simpar_layer_kernel(c, unpack ? SIMPAR_OP_UNPACK_COLS : SIMPAR_OP_PACK_COLS, G_MAXUINT, what,
                        k);
}

/* A latent's norm: the local tokens' rows, whole latent columns; its parameter gradients summed
 * as the residual stream's norms' are. */
static void
mla_params_latent(SimparLayerCtx *c, SimparLayerNorm *ln, const char *name, guint64 width)
{
    *ln = (SimparLayerNorm){.rows = c->geom.res.rows, .cols = width, .width = width};
    ln->group = SIMPAR_NO_GROUP;
    simpar_layer_norm_params(c, ln, name);
}

/* Its four projections' parameters and its latents' norms'. */
static void
mla_params(SimparLayerCtx *c, SimparLayerNorm latent[2])
{
    const guint which[] = {SIMPAR_LIN_Q_DOWN, SIMPAR_LIN_Q_UP, SIMPAR_LIN_KV_DOWN,
                           SIMPAR_LIN_KV_UP};
    for (guint i = 0; i < G_N_ELEMENTS(which); i++)
        simpar_layer_linear_params(c, which[i]);
    mla_params_latent(c, &latent[0], "q_norm", c->model->mla.q_lora_rank);
    mla_params_latent(c, &latent[1], "kv_norm", c->model->mla.kv_lora_rank);
}

/* A latent's norm and its up projection, into the projection's destination. */
static void
mla_up(SimparLayerCtx *c, SimparLayerNorm *latent, guint which, SimparView x)
{
    SimparView n = simpar_layer_norm_fwd(c, latent, x);
    simpar_layer_linear_fwd(c, which, n, c->geom.res.rows);
}

/* u (the first norm's output) -> the attention input in the latent layout, in one buffer: the
 * up projections write their regions, the shared key part is packed (and, with sequence
 * parallelism, gathered) into its own. */
static SimparView
mla_fwd(SimparLayerCtx *c, SimparLayerNorm *latent, SimparView u)
{
    const SimparMlaConfig *l = &c->model->mla;
    guint64 rows = c->geom.res.rows, ld = l->kv_lora_rank + l->qk_pos_emb_head_dim;
    gsize at[3], pe = rows * l->qk_pos_emb_head_dim;
    SimparView qkv = simpar_view(
        simpar_layer_buffer(c, G_MAXUINT, "attn.qkv", simpar_layer_qkv_elems(c, at)), 0);
    SimparView qc = simpar_layer_linear_fwd(c, SIMPAR_LIN_Q_DOWN, u, rows);
    c->mla_in[0] = qc, c->mla_mark[0] = simpar_layer_mark(c);
    c->lin[SIMPAR_LIN_Q_UP].dest = qkv;
    mla_up(c, &latent[0], SIMPAR_LIN_Q_UP, qc);
    c->mla_mark[1] = simpar_layer_mark(c);
    SimparView kvc = simpar_layer_linear_fwd(c, SIMPAR_LIN_KV_DOWN, u, rows);
    guint kv = simpar_layer_buffer(c, G_MAXUINT, "mla.kv-latent", rows * l->kv_lora_rank);
    mla_cols(c, FALSE, "mla.pack-kv", rows, ld, 0, l->kv_lora_rank, kvc, simpar_view(kv, 0));
    SimparView pe_at = simpar_view(qkv.buf, at[2]);
    if (pe > 0 && c->geom.seq_group != SIMPAR_NO_GROUP) {
        SimparView mine = simpar_view(simpar_layer_buffer(c, G_MAXUINT, "mla.pe", pe), 0);
        mla_cols(c, FALSE, "mla.pack-pe", rows, ld, l->kv_lora_rank, l->qk_pos_emb_head_dim, kvc,
                 mine);
        SimparColl ag = {SIMPAR_COLL_ALL_GATHER, c->geom.seq_group, pe, 0, mine, pe_at,
                         SIMPAR_RED_SUM};
        simpar_layer_coll(c, G_MAXUINT, "mla.all-gather-pe", &ag, FALSE);
    } else if (pe > 0) {
        mla_cols(c, FALSE, "mla.pack-pe", rows, ld, l->kv_lora_rank, l->qk_pos_emb_head_dim, kvc,
                 pe_at);
    }
    c->mla_in[1] = simpar_view(kv, 0), c->mla_mark[2] = simpar_layer_mark(c);
    c->lin[SIMPAR_LIN_KV_UP].dest = simpar_view(qkv.buf, at[1]);
    mla_up(c, &latent[1], SIMPAR_LIN_KV_UP, c->mla_in[1]);
    c->mla_mark[3] = simpar_layer_mark(c);
    return qkv;
}

/* mla_up_proj (plan.h): both up parts again from the kept latents, into their regions of the
 * attention input, before the attention core's backward (Megatron-Core's qkv_up_checkpoint,
 * multi_latent_attention.py; its up projections carry the latents' norms, Transformer Engine's
 * fused norm-linears). */
static void
mla_recompute(SimparLayerCtx *c, SimparLayerNorm latent[2])
{
    const guint which[2] = {SIMPAR_LIN_Q_UP, SIMPAR_LIN_KV_UP};
    for (guint i = 0; i < 2; i++) {
        simpar_layer_replay_begin(c, c->mla_mark[2 * i]);
        mla_up(c, &latent[i], which[i], c->mla_in[i]);
        simpar_layer_replay_end(c, c->mla_mark[2 * i + 1]);
    }
}

/* The shared key part's gradient, summed over the heads of every rank (reduce-scattered to the
 * token owners with sequence parallelism), into d(kv_down output)'s last columns. */
static void
mla_pe_bwd(SimparLayerCtx *c, SimparView dpe, SimparView dkvc)
{
    const SimparMlaConfig *l = &c->model->mla;
    guint64 rows = c->geom.res.rows, ld = l->kv_lora_rank + l->qk_pos_emb_head_dim;
    gsize pe = rows * l->qk_pos_emb_head_dim;
    if (pe == 0)
        return;
    if (c->geom.seq_group != SIMPAR_NO_GROUP) {
        SimparView mine = simpar_view(simpar_layer_buffer(c, G_MAXUINT, "mla.dpe", pe), 0);
        SimparColl rs = {
            SIMPAR_COLL_REDUCE_SCATTER, c->geom.head_group, pe, 0, dpe, mine, SIMPAR_RED_SUM};
        simpar_layer_coll(c, G_MAXUINT, "mla.reduce-scatter-dpe", &rs, FALSE);
        dpe = mine;
    } else {
        simpar_layer_allreduce(c, G_MAXUINT, "mla.all-reduce-dpe", c->geom.head_group, dpe, pe);
    }
    mla_cols(c, TRUE, "mla.unpack-dpe", rows, ld, l->kv_lora_rank, l->qk_pos_emb_head_dim, dpe,
             dkvc);
}

/* dqkv (latent layout) -> du, through both paths. */
static SimparView
mla_bwd(SimparLayerCtx *c, SimparLayerNorm *latent, SimparView dqkv)
{
    const SimparMlaConfig *l = &c->model->mla;
    guint64 rows = c->geom.res.rows, ld = l->kv_lora_rank + l->qk_pos_emb_head_dim;
    gsize at[3];
    simpar_layer_qkv_elems(c, at);
    SimparView dq = simpar_layer_linear_bwd(c, SIMPAR_LIN_Q_UP, dqkv);
    dq = simpar_layer_norm_bwd(c, &latent[0], dq);
    SimparView du = simpar_layer_linear_bwd(c, SIMPAR_LIN_Q_DOWN, dq);
    SimparView dkv = simpar_layer_linear_bwd(c, SIMPAR_LIN_KV_UP, simpar_view(dqkv.buf, at[1]));
    dkv = simpar_layer_norm_bwd(c, &latent[1], dkv);
    SimparView dkvc = simpar_view(simpar_layer_buffer(c, G_MAXUINT, "mla.dkv-down", rows * ld), 0);
    mla_cols(c, TRUE, "mla.unpack-dkv", rows, ld, 0, l->kv_lora_rank, dkv, dkvc);
    mla_pe_bwd(c, simpar_view(dqkv.buf, at[2]), dkvc);
    SimparView du2 = simpar_layer_linear_bwd(c, SIMPAR_LIN_KV_DOWN, dkvc);
    return simpar_layer_elementwise(c, SIMPAR_OP_ADD, "mla.du", rows, c->model->hidden, du, du2);
}

const SimparAttnInput simpar_mla_input = {mla_params, mla_fwd, mla_bwd, mla_recompute};
