/* tp-moe.c - an MoE layer's MLP part seen from a grid mode's layout: the all-to-alls that
 * hand the MoE block (moe.h) its tokens and take its output back (see tp-layer.h).
 *
 * The MoE block takes each GPU's own whole tokens: rank p of the tensor-parallel group holds
 * B/T contiguous token rows with all h columns (1-D with sequence parallelism: its own rows
 * already). 2-D and 2.5-D (SUMMA) and 3-D leave rank (row block, column block j) of the group
 * of g = h/cols ranks sharing the same R token rows (the layer-norm group, its members in
 * column-block order) with the block [R x h/g]. One all-to-all in that group gives member j
 * the rows [j R/g, (j+1) R/g) of the block with every column: send block k of the rank's
 * block is rows [k R/g, (k+1) R/g), contiguous in row-major order, so the send needs no
 * packing; the g received [R/g x h/g] blocks are unpacked side by side into [R/g x h]. An
 * all-gather over the row then a local slice would move g times the bytes; this moves each
 * element once, as the 1-D block's own tokens need.
 *
 *   u2 = norm(r1) [R x h/g] --all-to-all row--> g x [R/g x h/g] --unpack--> moe.x [R/g x h]
 *   moe.y [R/g x h] --pack--> g x [R/g x h/g] --all-to-all row--> [R x h/g] + r1 = y
 *   dy likewise into moe.dy; moe.dx back = du2, the norm's backward's input (tp-layer.c adds
 *   its output to dy: the attention part's dr1)
 *
 * 1-D has the block's rows already: moe.x is u2 itself, moe.dy is dy, and moe.y and moe.dx are
 * INPUT shards of the residual stream's rows (all of them without sequence parallelism).
 *
 * moe.x and moe.dy are OUTPUT shards, moe.y and moe.dx INPUT shards in the tokens' layout
 * (rows R0 + j R/g): the MoE block's x, dy, y and dx. The block itself is timed on the
 * expert-parallel GPUs (predict/); the host executor joins the two through these shards
 * (tests/test-moe.c). Buffers are the schedule's own, outside a full recompute's replay: the
 * recomputed forward stops at the second norm's output, the block keeps its own input.
 */
#include "tp-layer.h"

/* Whether the rank's residual block lacks columns: the MoE block's tokens must move. */
static gboolean
moe_grid(const SimparLayerCtx *c)
{
    return c->geom.res.cols < (guint64) c->model->hidden;
}

typedef struct {
    guint g, j;          /* members of the row group, this rank's index in it */
    guint64 R, w, tr, h; /* block rows and columns, token rows per member, hidden */
} MoeRows;

static MoeRows
moe_rows(const SimparLayerCtx *c)
{
    const SimparBlock *res = &c->geom.res;
    guint group = c->geom.ln_group;
    g_assert(group != SIMPAR_NO_GROUP);
    MoeRows r = {simpar_schedule_group(c->sched, group)->size,
                 simpar_group_index(c->sched, group, c->rank),
                 res->rows,
                 res->cols,
                 0,
                 (guint64) c->model->hidden};
    g_assert(r.g * r.w == r.h && res->col0 == r.j * r.w); /* members in column-block order */
    g_assert(r.R % r.g == 0);                             /* checked by simpar_train_validate */
    r.tr = r.R / r.g;
    return r;
}

static guint
moe_buffer(SimparLayerCtx *c, const char *what, gsize elems)
{
    return simpar_schedule_add_buffer(c->sched, c->rank, what, elems);
}

static void
moe_shard(SimparLayerCtx *c, const char *tensor, SimparShardRole role, guint buf, const MoeRows *r)
{
    SimparShard s = {tensor, role, c->rank, simpar_view(buf, 0), c->geom.res.row0 + r->j * r->tr,
                     r->tr,  0,    r->h,    c->cp_group};
    simpar_schedule_add_shard(c->sched, &s);
}

static void
moe_all_to_all(SimparLayerCtx *c, const char *what, const MoeRows *r, guint send, guint recv)
{
    SimparColl a2a = {SIMPAR_COLL_ALL_TO_ALL, c->geom.ln_group,     r->tr * r->w,  0,
                      simpar_view(send, 0),   simpar_view(recv, 0), SIMPAR_RED_SUM};
    simpar_layer_coll(c, G_MAXUINT, what, &a2a, FALSE);
}

/* Column block k of the tokens' rows [tr x h] and the k-th packed block [tr x w]: PACK_COLS
 * (to_tokens FALSE) or UNPACK_COLS. */
static void
moe_cols(SimparLayerCtx *c, const char *what, const MoeRows *r, guint tokens, guint blocks,
         gboolean to_tokens)
{
    for (guint k = 0; k < r->g; k++) {
        SimparView packed = simpar_view(blocks, (gsize) k * r->tr * r->w);
        SimparKernel kern = {.rows = (guint) r->tr,
                             .cols = (guint) r->w,
                             .ld = (guint) r->h,
                             .groups = 1,
                             .width = (guint) r->w,
                             .stride = (guint) r->w,
                             .offset = (guint) (k * r->w)};
        kern.in[0] = to_tokens ? packed : simpar_view(tokens, 0);
        kern.out[0] = to_tokens ? simpar_view(tokens, 0) : packed;
        simpar_layer_kernel(c, to_tokens ? SIMPAR_OP_UNPACK_COLS : SIMPAR_OP_PACK_COLS, G_MAXUINT,
                            what, kern);
    }
}

/* The rank's block `v` [R x w] into its tokens' rows [tr x h], an OUTPUT shard `tensor`. */
static void
moe_to_tokens(SimparLayerCtx *c, const MoeRows *r, SimparView v, const char *tensor)
{
    g_autofree char *recv_name = g_strconcat(tensor, ".recv", NULL);
    guint recv = moe_buffer(c, recv_name, r->R * r->w),
          tokens = moe_buffer(c, tensor, r->tr * r->h);
    g_assert(v.off == 0);
    moe_all_to_all(c, "moe.redistribute-to-tokens", r, v.buf, recv);
    moe_cols(c, "moe.unpack-tokens", r, tokens, recv, TRUE);
    moe_shard(c, tensor, SIMPAR_SHARD_OUTPUT, tokens, r);
}

/* The INPUT shard `tensor` [tr x h] back into the rank's block, added to `v` (SIMPAR_NO_VIEW:
 * not added). */
static SimparView
moe_from_tokens(SimparLayerCtx *c, const MoeRows *r, SimparView v, const char *tensor)
{
    g_autofree char *send_name = g_strconcat(tensor, ".send", NULL);
    g_autofree char *back_name = g_strconcat(tensor, ".back", NULL);
    g_autofree char *sum_name = g_strconcat(tensor, ".sum", NULL);
    guint tokens = moe_buffer(c, tensor, r->tr * r->h),
          send = moe_buffer(c, send_name, r->R * r->w);
    guint back = moe_buffer(c, back_name, r->R * r->w);
    moe_shard(c, tensor, SIMPAR_SHARD_INPUT, tokens, r);
    moe_cols(c, "moe.pack-tokens", r, tokens, send, FALSE);
    moe_all_to_all(c, "moe.redistribute-from-tokens", r, send, back);
    if (v.buf == SIMPAR_NO_VIEW.buf)
        return simpar_view(back, 0);
    guint sum = moe_buffer(c, sum_name, r->R * r->w);
    SimparKernel add = {.rows = (guint) r->R, .cols = (guint) r->w, .in = {v, {back, 0}}};
    add.out[0] = simpar_view(sum, 0);
    g_assert(v.off == 0);
    simpar_layer_kernel(c, SIMPAR_OP_ADD, G_MAXUINT, "moe.residual", add);
    return simpar_view(sum, 0);
}

/* 1-D: the block's tensor `tensor` in the residual stream's own rows (all h columns). */
static void
moe_line_shard(SimparLayerCtx *c, const char *tensor, SimparShardRole role, SimparView v)
{
    const SimparBlock *res = &c->geom.res;
    SimparShard s = {tensor, role, c->rank, v, res->row0, res->rows, 0, res->cols, c->cp_group};
    simpar_schedule_add_shard(c->sched, &s);
}

static SimparView
moe_part_fwd(SimparLayerCtx *c, SimparView u2, SimparView r1)
{
    if (!moe_grid(c)) { /* the rows are the block's already: u2 is its input */
        const SimparBlock *res = &c->geom.res;
        guint y = moe_buffer(c, "moe.y", res->rows * res->cols),
              sum = moe_buffer(c, "moe.y.sum", res->rows * res->cols);
        moe_line_shard(c, "moe.x", SIMPAR_SHARD_OUTPUT, u2);
        moe_line_shard(c, "moe.y", SIMPAR_SHARD_INPUT, simpar_view(y, 0));
        SimparKernel add = {
            .rows = (guint) res->rows, .cols = (guint) res->cols, .in = {r1, {y, 0}}};
        add.out[0] = simpar_view(sum, 0);
        simpar_layer_kernel(c, SIMPAR_OP_ADD, G_MAXUINT, "moe.residual", add);
        return simpar_view(sum, 0);
    }
    MoeRows r = moe_rows(c);
    moe_to_tokens(c, &r, u2, "moe.x");
    return moe_from_tokens(c, &r, r1, "moe.y");
}

static SimparView
moe_part_bwd(SimparLayerCtx *c, SimparView dy)
{
    if (!moe_grid(c)) {
        const SimparBlock *res = &c->geom.res;
        guint dx = moe_buffer(c, "moe.dx", res->rows * res->cols);
        moe_line_shard(c, "moe.dy", SIMPAR_SHARD_OUTPUT, dy);
        moe_line_shard(c, "moe.dx", SIMPAR_SHARD_INPUT, simpar_view(dx, 0));
        return simpar_view(dx, 0);
    }
    MoeRows r = moe_rows(c);
    moe_to_tokens(c, &r, dy, "moe.dy");
    return moe_from_tokens(c, &r, SIMPAR_NO_VIEW, "moe.dx");
}

const SimparMoePart simpar_moe_part = {moe_part_fwd, moe_part_bwd};
