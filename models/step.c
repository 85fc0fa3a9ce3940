/* step.c - the schedule of one optimizer step built from timed blocks (see step.h). */
#include "generators.h"
#include "memory.h"
#include "pipeline.h"
#include "step-private.h"
#include <math.h>
#include <string.h>

/* Parameters of one end (embedding table, output layer) on a tensor-parallel rank: the
 * vocabulary is split over the whole group, as Megatron-LM's vocabulary-parallel layers do. */
static gsize
step_end_params(const SimparModel *model, gint64 width, guint T)
{
    return (gsize) ((width + T - 1) / T * model->hidden);
}

/* ----- emission ----- */

static guint
step_add(Step *st, SimparOp *op, guint stream, SimparPhase phase, const char *name)
{
    op->rank = st->rank;
    op->stream = stream;
    op->phase = phase;
    op->name = g_intern_string(name);
    return simpar_schedule_add_op(st->s, op);
}

guint
step_node(Step *st, const char *key, guint count, guint stream, SimparPhase phase)
{
    SimparOp op = {.kind = SIMPAR_OP_BLOCK, .u.block = {g_intern_string(key), count, 0}};
    guint i = step_add(st, &op, stream, phase, key);
    if (stream == STEP_COMPUTE) {
        if (st->join != G_MAXUINT)
            simpar_schedule_add_dep(st->s, i, st->join);
        st->join = G_MAXUINT;
        st->last_compute = i;
    }
    return i;
}

static guint
step_block(Step *st, const char *key, guint count, SimparPhase phase)
{
    return step_node(st, key, count, STEP_COMPUTE, phase);
}

static guint
step_coll(Step *st, guint stream, SimparCollKind kind, guint group, gsize count, SimparView send,
          SimparView recv, const char *name)
{
    SimparOp op = {.kind = SIMPAR_OP_COLLECTIVE,
                   .u.coll = {kind, group, count, 0, send, recv, SIMPAR_RED_SUM}};
    return step_add(st, &op, stream, SIMPAR_PHASE_BACKWARD, name);
}

/* Messages are told apart by step, micro-batch, the boundary between virtual stages
 * `boundary` and `boundary + 1` they cross, and direction. */
static guint
step_tag(const Step *st, guint step, guint micro, guint boundary, guint dir)
{
    return ((step * st->m + micro) * st->n_vs + boundary) * 2 + dir;
}

/* The schedule rank of (t, d, p): the job's rank, or in a slice its rank among the slice's. */
static guint
step_rank(const Step *st, guint t, guint d, guint p)
{
    return simpar_train_rank(&st->numbering, st->slice == G_MAXUINT ? t : t / st->Ttp, d, p);
}

/* The device holding virtual stage vs, and the rank of (t, d) there. */
static guint
step_peer(const Step *st, guint vs)
{
    return step_rank(st, st->t, st->d, vs % st->P);
}

static void
step_recv(Step *st, guint from, guint tag, guint buf, SimparPhase phase, const char *name)
{
    gboolean sg = st->tr->scatter_gather && st->T > 1;
    gsize count = sg ? st->facts.act_elems / st->T : st->facts.act_elems;
    SimparView own = {buf, sg ? st->t * count : 0}; /* this rank's part */
    SimparOp op = {.kind = SIMPAR_OP_RECV, .u.p2p = {from, tag, count, own}};
    st->last_compute = step_add(st, &op, STEP_COMPUTE, phase, name);
    if (st->ops != NULL)
        step_ops_after_sends(st, st->last_compute);
    if (sg) { /* Narayanan et al.: 1/T per rank across nodes, all-gather inside the node */
        SimparOp ag = {.kind = SIMPAR_OP_COLLECTIVE,
                       .u.coll = {SIMPAR_COLL_ALL_GATHER,
                                  st->tp_group[st->d * st->P + st->p],
                                  count,
                                  0,
                                  own,
                                  {buf, 0},
                                  SIMPAR_RED_SUM}};
        st->last_compute = step_add(st, &ag, STEP_COMPUTE, phase, "p2p.all-gather");
        if (st->ops != NULL)
            step_ops_after_sends(st, st->last_compute);
    }
}

static void
step_send(Step *st, guint to, guint tag, guint buf, guint stream, SimparPhase phase,
          const char *name)
{
    gboolean sg = st->tr->scatter_gather && st->T > 1;
    gsize count = sg ? st->facts.act_elems / st->T : st->facts.act_elems;
    SimparOp op = {.kind = SIMPAR_OP_SEND,
                   .u.p2p = {to, tag, count, {buf, sg ? st->t * count : 0}}};
    guint i = step_add(st, &op, stream, phase, name);
    simpar_schedule_add_dep(st->s, i, st->last_compute);
    if (st->ops != NULL)
        step_ops_sent(st, buf, i);
}

/* The ranks that reduce gradients of `kind` together. */
static guint
step_reducers(const Step *st, guint kind)
{
    return kind == STEP_EXPERT ? st->DE : st->DR;
}

/* Whether the rank reduces any gradients. */
gboolean
step_reduces(const Step *st)
{
    return st->DR > 1 || (st->n_expert > 0 && st->DE > 1);
}

/* Gradients [off, off + count) of `kind` of the rank are final after `ready`: they join the
 * kind's open bucket, which closes when it reaches the bucket size. */
void
step_grads_ready(Step *st, guint kind, gsize off, gsize count, guint ready)
{
    if (step_reducers(st, kind) == 1 || count == 0) /* nothing to reduce, whatever ZeRO */
        return;
    if (st->open_count[kind] == 0)
        st->open_off[kind] = off;
    /* the layout follows the ready order */
    g_assert(off == st->open_off[kind] + st->open_count[kind]);
    st->open_count[kind] += count;
    if ((gint64) st->open_count[kind] >= st->tr->bucket_params) {
        StepBucket b = {st->open_off[kind], st->open_count[kind], ready, kind};
        g_array_append_val(st->buckets, b);
        st->open_count[kind] = 0;
    }
}

static void
step_flush_bucket(Step *st, guint ready)
{
    for (guint kind = 0; kind < STEP_N_KINDS; kind++)
        if (st->open_count[kind] > 0) {
            StepBucket b = {st->open_off[kind], st->open_count[kind], ready, kind};
            g_array_append_val(st->buckets, b);
            st->open_count[kind] = 0;
        }
}

/* This rank's data-parallel group (with context parallelism its D x C ranks) and its place in
 * it: d C + c. */
static guint
step_dp_group(const Step *st)
{
    return st->dp_group[(st->t % st->Ttp) * st->P + st->p];
}

static guint
step_dp_index(const Step *st)
{
    return st->d * st->C + st->t / st->Ttp;
}

/* This rank's place in its ZeRO shard group. */
static guint
step_shard_index(const Step *st)
{
    return step_dp_index(st) % st->S;
}

/* The group ZeRO shards over: the data-parallel group, or with --shard-group this rank's group
 * of S replicas. */
static guint
step_shard_group(const Step *st)
{
    if (st->shard_group == NULL)
        return step_dp_group(st);
    return st->shard_group[((st->t % st->Ttp) * st->P + st->p) * st->R + step_dp_index(st) / st->S];
}

/* Gradients [off, off + count) as the reductions see them: gf elements each (fp32 reduction of
 * 16-bit training moves twice the bytes; the buffer is gf times as long). */
static SimparView
step_grad_view(const Step *st, gsize off)
{
    return (SimparView){st->grads, off * st->gf};
}

/* The reduction of one bucket of the experts' gradients over the expert-data-parallel group:
 * an all-reduce (ZeRO 0) or a reduce-scatter (ZeRO >= 1 shards the experts' optimizer over
 * that group, as Megatron-Core's distributed optimizer does with its expert buffers). */
static void
step_reduce_experts(Step *st, const StepBucket *b, guint dep)
{
    SimparView v = step_grad_view(st, b->off);
    SimparView shard = step_grad_view(st, b->off + st->e_index * (b->count / st->DE));
    guint i = st->tr->zero == 0
                  ? step_coll(st, STEP_DP, SIMPAR_COLL_ALL_REDUCE, st->e_group, b->count * st->gf,
                              v, v, "edp.all-reduce")
                  : step_coll(st, STEP_DP, SIMPAR_COLL_REDUCE_SCATTER, st->e_group,
                              b->count / st->DE * st->gf, v, shard, "edp.reduce-scatter");
    simpar_schedule_add_dep(st->s, i, dep);
    g_array_append_val(st->dp_ops, i);
}

/* The reduction of one bucket over the data-parallel group: an all-reduce (ZeRO 0), or a
 * reduce-scatter over the shard group and, with hybrid sharding, an all-reduce of the shard
 * over the R replicas of it; the experts' buckets over their group. */
static void
step_reduce_bucket(Step *st, const StepBucket *b, guint dep)
{
    if (step_reducers(st, b->kind) == 1 || b->count == 0)
        return;
    if (b->kind == STEP_EXPERT) {
        step_reduce_experts(st, b, dep);
        return;
    }
    SimparView v = step_grad_view(st, b->off);
    /* NCCL's in-place reduce-scatter: member k's shard is the k-th piece of the bucket */
    SimparView shard = step_grad_view(st, b->off + step_shard_index(st) * (b->count / st->S));
    guint i;
    if (st->tr->zero == 0)
        i = step_coll(st, STEP_DP, SIMPAR_COLL_ALL_REDUCE, step_dp_group(st), b->count * st->gf, v,
                      v, "dp.all-reduce");
    else if (st->S > 1)
        i = step_coll(st, STEP_DP, SIMPAR_COLL_REDUCE_SCATTER, step_shard_group(st),
                      b->count / st->S * st->gf, v, shard, "dp.reduce-scatter");
    else
        i = G_MAXUINT; /* shard groups of one replica: nothing to scatter */
    if (i != G_MAXUINT) {
        simpar_schedule_add_dep(st->s, i, dep);
        g_array_append_val(st->dp_ops, i);
    }
    if (st->tr->zero == 0 || st->rep_group == NULL)
        return;
    guint g =
        st->rep_group[((st->t % st->Ttp) * st->P + st->p) * st->S + step_dp_index(st) % st->S];
    guint a = step_coll(st, STEP_DP, SIMPAR_COLL_ALL_REDUCE, g, b->count / st->S * st->gf, shard,
                        shard, "dp.all-reduce-replicas");
    simpar_schedule_add_dep(st->s, a, i != G_MAXUINT ? i : dep);
    g_array_append_val(st->dp_ops, a);
}

gboolean
step_sharded_params(const Step *st)
{
    return st->ops != NULL && st->tr->zero == 3 && st->S > 1;
}

void
step_owned(const Step *st, gsize off, gsize count, gsize *lo, gsize *hi)
{
    if (!step_sharded_params(st)) {
        *lo = off, *hi = off + count;
        return;
    }
    gsize piece = count / st->S; /* whole: step_ops_supported */
    *lo = off + step_shard_index(st) * piece, *hi = *lo + piece;
}

/* ZeRO-3: the parameters of one layer (or end) gathered before their use, in place as NCCL's
 * all-gather does it (member k's shard is the k-th piece). Executable: on the compute stream,
 * before the ops that read them. */
static guint
step_gather(Step *st, gsize off, gsize count, const char *name, gboolean layer)
{
    guint g = step_shard_group(st);
    SimparView own = {st->params, off + step_shard_index(st) * (count / st->S)};
    guint stream = st->ops != NULL ? STEP_COMPUTE : STEP_GATHER;
    gsize wire = layer ? (gsize) llround((double) (count / st->S) * st->pg8) : count / st->S;
    guint i = step_coll(st, stream, SIMPAR_COLL_ALL_GATHER, g, wire, own,
                        (SimparView){st->params, off}, name);
    if (st->ops != NULL)
        st->last_compute = i;
    else if (st->prefetch[0] != G_MAXUINT)
        simpar_schedule_add_dep(st->s, i, st->prefetch[0]);
    return i;
}

/* ZeRO-3 of an MoE layer: its experts' parameters gathered over the expert-data-parallel group
 * (timed mode only: an executable step has no MoE layers). */
static guint
step_gather_experts(Step *st, gsize off)
{
    SimparView own = {st->params, off + st->e_index * (st->le / st->DE)};
    gsize wire = (gsize) llround((double) (st->le / st->DE) * st->pg8);
    guint i = step_coll(st, STEP_GATHER, SIMPAR_COLL_ALL_GATHER, st->e_group, wire, own,
                        (SimparView){st->params, off}, "edp.all-gather-params");
    if (st->prefetch[0] != G_MAXUINT)
        simpar_schedule_add_dep(st->s, i, st->prefetch[0]);
    return i;
}

/* ----- --overlap-param-gather ----- */

/* A unit of parameters (a layer, an end, the multi-token prediction modules) joins the param
 * buckets of its kind as step_grads_ready joins gradients to buckets: in the order gradients
 * become final, a bucket closed when it reaches train->bucket_params, and at the end of each
 * chunk (buckets do not span chunks). Only where the kind's parameters are gathered. */
static void
step_pg_unit(Step *st, guint kind, guint chunk, gsize off, gsize count, gboolean end)
{
    guint n = kind == STEP_EXPERT ? st->DE : st->S;
    if (count == 0 || n <= 1)
        return;
    StepParamBucket *open = NULL;
    for (guint i = st->pg->len; i-- > 0;) { /* the kind's newest bucket, if still open */
        StepParamBucket *b = &g_array_index(st->pg, StepParamBucket, i);
        if (b->kind == kind) {
            if (b->chunk == chunk && (gint64) b->count < st->tr->bucket_params)
                open = b;
            break;
        }
    }
    if (open == NULL) {
        StepParamBucket b = {off, 0, 0, kind, chunk, G_MAXUINT, FALSE};
        g_array_append_val(st->pg, b);
        open = &g_array_index(st->pg, StepParamBucket, st->pg->len - 1);
    }
    g_assert(off == open->off + open->count); /* the layout follows the ready order */
    open->count += count;
    open->ends += end ? count : 0;
}

/* The rank's param buckets, in the gradient buckets' order (models/step.h). */
static void
step_pg_buckets(Step *st)
{
    g_array_set_size(st->pg, 0);
    gsize off, lp, eoff, le;
    for (guint c = st->v; c-- > 0;) {
        if (c + 1 == st->v && (st->p + 1 == st->P || st->local)) {
            gboolean real_head = st->p + 1 == st->P;
            if (!(real_head && st->tr->tied_embeddings && st->P == 1))
                step_pg_unit(st, STEP_DENSE, c, st->head_off, st->ends, TRUE);
            step_pg_unit(st, STEP_DENSE, c, st->mtp_off, st->mtp_n * st->mtp_lp, FALSE);
            if (st->mtp_n > 0 && st->P > 1 && !st->tr->tied_embeddings)
                step_pg_unit(st, STEP_DENSE, c, st->last_embed_off, st->ends, TRUE);
            step_pg_unit(st, STEP_EXPERT, c, st->mtp_eoff, st->mtp_n * st->mtp_le, FALSE);
        }
        for (guint l = step_lc(st, c); l-- > 0;) {
            step_layer_place(st, c, l, &off, &lp, &eoff, &le);
            step_pg_unit(st, STEP_DENSE, c, off, lp, FALSE);
            step_pg_unit(st, STEP_EXPERT, c, eoff, le, FALSE);
        }
        if (c == 0 && st->p == 0)
            step_pg_unit(st, STEP_DENSE, c, st->embed_off, st->ends, TRUE);
    }
}

/* The param bucket of `kind` holding parameter `off`, or NULL (not gathered). */
static StepParamBucket *
step_pg_find(Step *st, guint kind, gsize off)
{
    for (guint i = 0; st->pg != NULL && i < st->pg->len; i++) {
        StepParamBucket *b = &g_array_index(st->pg, StepParamBucket, i);
        if (b->kind == kind && off >= b->off && off < b->off + b->count)
            return b;
    }
    return NULL;
}

/* A bucket's all-gather on the gather stream: the layers' parameters in FP8 with
 * --fp8-param-gather, the ends' in the model's dtype, as the optimizer's gather (below).
 * PyTorch's NCCL process group makes its stream wait for the work the compute stream holds
 * when a collective is issued (ProcessGroupNCCL's syncStream): the gather waits for the last
 * compute op emitted. */
static void
step_pg_issue(Step *st, StepParamBucket *b)
{
    if (b == NULL || b->gather != G_MAXUINT)
        return;
    gboolean e = b->kind == STEP_EXPERT;
    guint n = e ? st->DE : st->S;
    gsize shard = b->count / n;
    gsize wire = (gsize) llround(((double) (b->count - b->ends) * st->pg8 + (double) b->ends) / n);
    SimparView own = {st->params, b->off + (e ? st->e_index : step_shard_index(st)) * shard};
    b->gather = step_coll(
        st, STEP_GATHER, SIMPAR_COLL_ALL_GATHER, e ? st->e_group : step_shard_group(st), wire, own,
        (SimparView){st->params, b->off}, e ? "edp.all-gather-params" : "dp.all-gather-params");
    if (st->last_compute != G_MAXUINT)
        simpar_schedule_add_dep(st->s, b->gather, st->last_compute);
}

/* Whether the step gathers parameters as --overlap-param-gather does (timed steps only). */
static gboolean
step_pg_on(const Step *st)
{
    return st->tr->overlap_param_gather && st->ops == NULL;
}

/* Whether the gathers are aligned across the pipeline (virtual stages): Megatron-LM sets
 * align_param_gather with the interleaved schedule (megatron/training/arguments.py). */
static gboolean
step_pg_aligned(const Step *st)
{
    return st->v > 1;
}

/* Every bucket of chunk c: the dense ones in the buffer's order, then the experts', as
 * DistributedDataParallel.start_param_sync loops over its bucket groups. */
static void
step_pg_issue_chunk(Step *st, guint c)
{
    for (guint kind = 0; kind < STEP_N_KINDS; kind++)
        for (guint i = 0; i < st->pg->len; i++) {
            StepParamBucket *b = &g_array_index(st->pg, StepParamBucket, i);
            if (b->chunk == c && b->kind == kind)
                step_pg_issue(st, b);
        }
}

/* The step's start (the steady state: the gathers of the parameters the previous step's Adam
 * updated, which Megatron-Core issues in the next iteration's forward). Aligned, the
 * interleaved schedule issues the first two chunks' buckets before its first forward
 * (schedules.py, param_sync_func); else the forward pre-hooks issue them (step_pg_wait). */
static void
step_pg_start(Step *st)
{
    step_pg_buckets(st);
    st->pg_forwards = 0;
    for (guint c = 0; c < MIN(st->v, 2) && step_pg_aligned(st); c++)
        step_pg_issue_chunk(st, c);
}

/* Aligned, before the rank's forward x (its x-th, in the pipeline order's forwards `fwd`): the
 * interleaved schedule issues chunk c + 1's buckets when its forward x + p is the first
 * micro-batch of chunk c, for 1 < c + 1 < v (schedules.py, forward_step_helper_preprocess:
 * the same virtual micro-batch across the stages). */
static void
step_pg_forward(Step *st, const GArray *fwd)
{
    if (!step_pg_on(st) || !step_pg_aligned(st))
        return;
    guint y = st->pg_forwards++ + st->p;
    if (y >= fwd->len)
        return;
    const SimparPipeItem *it = &g_array_index(fwd, SimparPipeItem, y);
    if (it->micro == 0 && it->chunk + 1 > 1 && it->chunk + 1 < st->v)
        step_pg_issue_chunk(st, it->chunk + 1);
}

/* A forward's first use of parameter `off` of `kind`, Megatron-Core's forward pre-hook
 * (DistributedDataParallel._make_forward_pre_hook, finish_param_sync in
 * param_and_grad_buffer.py): the bucket's gather, issued now if it was not, is what the
 * forward waits for (G_MAXUINT: none, or waited for before); not aligned, the hook then issues
 * the next bucket's (the one before in the buffer: next_param_gather_bucket_group, the
 * chunk's and kind's), which runs beside this bucket's layers. */
static guint
step_pg_wait(Step *st, guint kind, gsize off)
{
    StepParamBucket *b = step_pg_find(st, kind, off);
    if (b == NULL || b->waited)
        return G_MAXUINT;
    b->waited = TRUE;
    step_pg_issue(st, b);
    guint gather = b->gather;
    for (guint i = (guint) (b - (StepParamBucket *) st->pg->data);
         i-- > 0 && !step_pg_aligned(st);) {
        StepParamBucket *next = &g_array_index(st->pg, StepParamBucket, i);
        if (next->kind == b->kind && next->chunk == b->chunk) {
            step_pg_issue(st, next);
            break;
        }
    }
    return gather;
}

/* Layers of this rank's chunk `chunk` (virtual stage chunk P + p). */
guint
step_lc(const Step *st, guint chunk)
{
    return simpar_train_stage_layers(st->tr, chunk * st->P + st->p);
}

/* Whether layer l of chunk `chunk` (the model's layer layer_first[chunk] + l) is one of an MoE
 * model's dense layers: the dense layer's blocks, its parameters, no experts. Every layer of a
 * dense model is a "layer" one. */
gboolean
step_dense(const Step *st, guint chunk, guint l)
{
    return st->dense_facts != NULL &&
           !simpar_model_layer_is_moe(st->model, (gint64) st->layer_first[chunk] + l);
}

/* The dense layers among layers [from, to) of chunk `chunk`. */
static guint
step_n_dense(const Step *st, guint chunk, guint from, guint to)
{
    if (st->dense_facts == NULL)
        return 0;
    gint64 first = st->layer_first[chunk];
    return to - from - (guint) simpar_model_moe_layers(st->model, first + from, first + to);
}

/* Layer l of chunk `chunk` in the rank's gradients (the chunk's layers last first): its
 * parameters but the experts' at *off, *lp of them, and its experts' at *eoff, *le. */
void
step_layer_place(const Step *st, guint chunk, guint l, gsize *off, gsize *lp, gsize *eoff,
                 gsize *le)
{
    guint after = step_lc(st, chunk) - 1 - l;
    guint dense = step_n_dense(st, chunk, l + 1, after + l + 1);
    gboolean d = step_dense(st, chunk, l);
    *off = st->layer_off[chunk] + (after - dense) * st->lp + dense * st->lpd;
    *eoff = st->expert_off[chunk] + (after - dense) * st->le;
    *lp = d ? st->lpd : st->lp;
    *le = d ? 0 : st->le;
}

/* The block key of a layer of either kind, forward or backward (step.h). */
const char *
step_layer_key(gboolean dense, gboolean backward)
{
    if (dense)
        return backward ? "dense.bwd" : "dense.fwd";
    return backward ? "layer.bwd" : "layer.fwd";
}

/* FP8 models: `count` layers' weights cast to FP8 (one "fp8.cast" block) where `when` holds;
 * the block's index, or G_MAXUINT. Transformer Engine casts a weight at the step's first
 * micro-batch and keeps the FP8 copy for the others (compute.c), so a chunk's casts come
 * before its first forward (step_forward); under ZeRO-3 the gathered weights are freed after
 * each use and cast again at each forward (Transformer Engine keeps no cached copy under
 * FSDP2), one block per layer (step_layers). */
static guint
step_fp8_cast(Step *st, guint chunk, guint from, guint count, gboolean when)
{
    if (!when || st->model->fp8 == SIMPAR_FP8_NONE || st->ops != NULL)
        return G_MAXUINT;
    guint dense = step_n_dense(st, chunk, from, from + count), first = G_MAXUINT;
    if (count > dense) /* an MoE model's dense layers' weights are the dense layer's */
        first = step_block(st, "fp8.cast", count - dense, SIMPAR_PHASE_FORWARD);
    if (dense > 0) {
        guint b = step_block(st, "dense.fp8.cast", dense, SIMPAR_PHASE_FORWARD);
        first = MIN(first, b);
    }
    return first;
}

/* Op i (the last added) waits for the gathers that are not G_MAXUINT. */
static void
step_after_gathers(Step *st, guint i, guint gather, guint egather)
{
    if (gather != G_MAXUINT)
        simpar_schedule_add_dep(st->s, i, gather);
    if (egather != G_MAXUINT)
        simpar_schedule_add_dep(st->s, i, egather);
}

/* A layer's parameter gathers before its block (G_MAXUINT: none): ZeRO-3's before each use (not
 * the backward's under --no-reshard), or, `pg`, the --overlap-param-gather buckets its first
 * forward waits for (step_pg_wait). */
static void
step_layer_gathers(Step *st, gboolean backward, gboolean pg, gsize off, gsize lp, gsize eoff,
                   gsize le, guint *gather, guint *egather)
{
    gboolean gathers = st->tr->zero == 3 && !(backward && st->tr->no_reshard);
    *gather =
        gathers && st->S > 1 ? step_gather(st, off, lp, "dp.all-gather-params", TRUE) : G_MAXUINT;
    *egather = gathers && le > 0 && st->DE > 1 ? step_gather_experts(st, eoff) : G_MAXUINT;
    if (pg)
        *gather = step_pg_wait(st, STEP_DENSE, off), *egather = step_pg_wait(st, STEP_EXPERT, eoff);
}

/* A layer's block `key` after its weights' cast `first` (G_MAXUINT: none): the cast, else the
 * block, waits for the gathers (an op's deps are added right after it); the block is the
 * newest of the prefetch window. */
static guint
step_layer_block(Step *st, const char *key, SimparPhase ph, guint first, guint gather,
                 guint egather)
{
    if (first != G_MAXUINT)
        step_after_gathers(st, first, gather, egather);
    guint b = step_block(st, key, 1, ph);
    if (first == G_MAXUINT)
        step_after_gathers(st, b, gather, egather);
    st->prefetch[0] = st->prefetch[1];
    st->prefetch[1] = b;
    return b;
}

/* Layers of one chunk, forward or backward: a block per run of layers of one kind (one block
 * but for an MoE model's dense layers), or one per layer where data parallelism needs to know
 * when each layer's gradients are final (`final`), or ZeRO-3 gathers each layer's parameters. */
static void
step_layers(Step *st, guint chunk, guint micro, gboolean backward, gboolean final)
{
    guint lc = step_lc(st, chunk);
    SimparPhase ph = backward ? SIMPAR_PHASE_BACKWARD : SIMPAR_PHASE_FORWARD;
    gboolean pg = !backward && micro == 0 && step_pg_on(st); /* the chunk's first forward */
    gboolean per_layer = st->tr->zero == 3 || pg ||
                         (backward && simpar_train_reduce_each_micro(st->tr)) ||
                         (backward && final && step_reduces(st));
    gsize off, lp, eoff, le;
    if (st->ops != NULL) { /* ZeRO 0, 1 or 3, no MoE layers (step_ops_supported) */
        for (guint k = 0; k < lc; k++) {
            guint l = backward ? lc - 1 - k : k;
            step_layer_place(st, chunk, l, &off, &lp, &eoff, &le);
            if (step_sharded_params(st) && !(backward && st->tr->no_reshard))
                step_gather(st, off, lp, "dp.all-gather-params", TRUE);
            step_ops_layer(st, chunk, l, micro, backward);
            if (backward && final)
                step_grads_ready(st, STEP_DENSE, off, lp, st->last_compute);
        }
        return;
    }
    if (!per_layer) {
        for (guint k = 0, run; k < lc; k += run) { /* in the order the layers run */
            gboolean dense = step_dense(st, chunk, backward ? lc - 1 - k : k);
            for (run = 1; k + run < lc; run++)
                if (step_dense(st, chunk, backward ? lc - 1 - k - run : k + run) != dense)
                    break;
            step_block(st, step_layer_key(dense, backward), run, ph);
        }
        return;
    }
    for (guint k = 0; k < lc; k++) {
        guint l = backward ? lc - 1 - k : k;
        step_layer_place(st, chunk, l, &off, &lp, &eoff, &le);
        const char *key = step_layer_key(step_dense(st, chunk, l), backward);
        guint gather, egather;
        step_layer_gathers(st, backward, pg, off, lp, eoff, le, &gather, &egather);
        /* the gathered weights' cast (ZeRO-3 FP8; --overlap-param-gather's first forward casts
         * each layer's after its gather) */
        guint first = step_fp8_cast(st, chunk, l, 1, !backward && (st->tr->zero == 3 || pg));
        guint b = step_layer_block(st, key, ph, first, gather, egather);
        if (!backward)
            continue;
        if (simpar_train_reduce_each_micro(st->tr)) {
            StepBucket one = {off, lp, b, STEP_DENSE}, experts = {eoff, le, b, STEP_EXPERT};
            step_reduce_bucket(st, &one, b);
            step_reduce_bucket(st, &experts, b);
        } else if (final) {
            step_grads_ready(st, STEP_DENSE, off, lp, b);
            step_grads_ready(st, STEP_EXPERT, eoff, le, b);
        }
    }
}

/* An end's block (embedding, output layer, auxiliary head); ZeRO-3 gathers its parameters. */
static void
step_end_block(Step *st, const char *key, gsize off, guint micro, SimparPhase phase)
{
    if (st->ops != NULL) { /* "embed.fwd" -> the "embed" end */
        g_autofree char *end = g_strndup(key, strcspn(key, "."));
        if (step_sharded_params(st) && !(phase == SIMPAR_PHASE_BACKWARD && st->tr->no_reshard))
            step_gather(st, off, st->ends, "dp.all-gather-params", FALSE);
        step_ops_end(st, end, micro, phase == SIMPAR_PHASE_BACKWARD);
        return;
    }
    guint gather = G_MAXUINT;
    gboolean kept = phase == SIMPAR_PHASE_BACKWARD && st->tr->no_reshard;
    if (st->tr->zero == 3 && st->S > 1 && !kept)
        gather = step_gather(st, off, st->ends, "dp.all-gather-params", FALSE);
    if (phase == SIMPAR_PHASE_FORWARD && step_pg_on(st))
        gather = step_pg_wait(st, STEP_DENSE, off);
    guint b = step_block(st, key, 1, phase);
    if (gather != G_MAXUINT)
        simpar_schedule_add_dep(st->s, b, gather);
}

/* Gradients [off, off + count) of `kind` after the last compute op: reduced now (ZeRO-2), or
 * final with the last micro-batch. */
static void
step_region_grads(Step *st, guint kind, gsize off, gsize count, gboolean final)
{
    if (count == 0)
        return;
    if (simpar_train_reduce_each_micro(st->tr)) {
        StepBucket one = {off, count, st->last_compute, kind};
        step_reduce_bucket(st, &one, st->last_compute);
    } else if (final) {
        step_grads_ready(st, kind, off, count, st->last_compute);
    }
}

static void
step_end_grads(Step *st, gsize off, gsize count, gboolean final)
{
    step_region_grads(st, STEP_DENSE, off, count, final);
}

/* The embedding's table the multi-token prediction modules read: the first stage's own, or
 * the last stage's copy (the output layer's when tied). */
static gsize
step_mtp_embed_off(const Step *st)
{
    return st->P == 1 ? st->embed_off : st->last_embed_off;
}

/* One multi-token prediction module (model.h) of micro-batch `micro`, forward: the shifted
 * tokens' embedding, the two norms and eh_proj ("mtp.fwd"), its layer (the model's last
 * layer's kind and block), the output layer and loss; backward the same in reverse. ZeRO-3
 * gathers its layer's parameters (with the rest of the module's) before each use as it does a
 * layer's; FP8 casts its layer's weights once a step. */
static void
step_mtp_module(Step *st, guint k, guint micro, gboolean backward)
{
    SimparPhase ph = backward ? SIMPAR_PHASE_BACKWARD : SIMPAR_PHASE_FORWARD;
    /* an MoE model's dense layer's blocks where its last layer is dense */
    gboolean dense = st->dense_facts != NULL && !simpar_model_mtp_is_moe(st->model);
    gsize off = st->mtp_off + (st->mtp_n - 1 - k) * st->mtp_lp;
    gsize eoff = st->mtp_eoff + (st->mtp_n - 1 - k) * st->mtp_le;
    if (!backward) {
        step_end_block(st, "embed.fwd", step_mtp_embed_off(st), micro, ph);
        step_block(st, "mtp.fwd", 1, ph);
    } else {
        step_end_block(st, "head.bwd", st->head_off, micro, ph);
        /* full recomputation: Megatron-Core checkpoints the module's projection and layer, so
         * its backward runs the norms and eh_proj again (the layer's block holds its own) */
        if (st->tr->tp.recompute == SIMPAR_RECOMPUTE_FULL)
            step_block(st, "mtp.fwd", 1, ph);
    }
    guint gather, egather;
    step_layer_gathers(st, backward, !backward && step_pg_on(st), off, st->mtp_lp, eoff, st->mtp_le,
                       &gather, &egather);
    guint first = G_MAXUINT;
    if (!backward && st->model->fp8 != SIMPAR_FP8_NONE && (micro == 0 || st->tr->zero == 3))
        first = step_block(st, dense ? "dense.fp8.cast" : "fp8.cast", 1, ph);
    step_layer_block(st, step_layer_key(dense, backward), ph, first, gather, egather);
    if (!backward) {
        step_end_block(st, "head.fwd", st->head_off, micro, ph);
        return;
    }
    step_block(st, "mtp.bwd", 1, ph);
    step_end_block(st, "embed.bwd", step_mtp_embed_off(st), micro, ph);
}

/* The multi-token prediction modules' backward on the last stage after the output layer's,
 * then their gradients: the output layer's (final after the modules' heads), the modules',
 * the embedding's copy. */
static void
step_mtp_backward(Step *st, guint micro)
{
    gboolean final = micro + 1 == st->m;
    for (guint k = st->mtp_n; k-- > 0;)
        step_mtp_module(st, k, micro, TRUE);
    if (!(st->tr->tied_embeddings && st->P == 1))
        step_end_grads(st, st->head_off, st->ends, final);
    step_region_grads(st, STEP_DENSE, st->mtp_off, st->mtp_n * st->mtp_lp, final);
    step_region_grads(st, STEP_EXPERT, st->mtp_eoff, st->mtp_n * st->mtp_le, final);
    if (st->P > 1 && !st->tr->tied_embeddings)
        step_end_grads(st, st->last_embed_off, st->ends, final);
}

/* A forward's receive (or the embedding) and its FP8 casts, before its layers. */
static void
step_forward_pre(Step *st, guint step, const SimparPipeItem *it)
{
    guint vs = it->chunk * st->P + st->p;
    guint j = it->micro;
    step_pg_forward(st, st->pg_fwd);
    if (vs > 0)
        step_recv(st, step_peer(st, vs - 1), step_tag(st, step, j, vs - 1, 0),
                  st->ops ? step_ops_res(st, simpar_train_stage_first_layer(st->tr, vs), j, FALSE)
                          : st->act_in,
                  SIMPAR_PHASE_FORWARD, "p2p.recv-act");
    else
        step_end_block(st, "embed.fwd", st->embed_off, j, SIMPAR_PHASE_FORWARD);
    /* with --overlap-param-gather each layer's cast follows its gather (step_layers) */
    step_fp8_cast(st, it->chunk, 0, step_lc(st, it->chunk),
                  j == 0 && st->tr->zero < 3 && !step_pg_on(st));
}

/* A forward's send, after its layers (it waits for st->last_compute). */
static void
step_forward_send(Step *st, guint step, const SimparPipeItem *it)
{
    guint vs = it->chunk * st->P + st->p;
    guint j = it->micro;
    if (vs < st->n_vs - 1)
        step_send(st, step_peer(st, vs + 1), step_tag(st, step, j, vs, 0),
                  st->ops
                      ? step_ops_res(st, simpar_train_stage_first_layer(st->tr, vs + 1), j, FALSE)
                      : st->act_out,
                  STEP_SEND_FWD, SIMPAR_PHASE_FORWARD, "p2p.send-act");
}

/* The output layer and loss, or local parallelism's auxiliary head. */
static void
step_forward_head(Step *st, const SimparPipeItem *it)
{
    guint vs = it->chunk * st->P + st->p;
    if (vs == st->n_vs - 1) {
        for (guint k = 0; k < st->mtp_n; k++)
            step_mtp_module(st, k, it->micro, FALSE);
        step_end_block(st, "head.fwd", st->head_off, it->micro, SIMPAR_PHASE_FORWARD);
    } else if (st->local)
        step_end_block(st, "aux.fwd", st->aux_off, it->micro, SIMPAR_PHASE_FORWARD);
}

static void
step_forward(Step *st, guint step, const SimparPipeItem *it)
{
    step_forward_pre(st, step, it);
    step_layers(st, it->chunk, it->micro, FALSE, FALSE);
    step_forward_send(st, step, it);
    step_forward_head(st, it);
}

/* A backward's head (or its receive of the gradient), before its layers. */
static void
step_backward_pre(Step *st, guint step, const SimparPipeItem *it)
{
    guint vs = it->chunk * st->P + st->p;
    guint j = it->micro;
    gboolean final = j + 1 == st->m;
    if (vs == st->n_vs - 1) {
        step_end_block(st, "head.bwd", st->head_off, j, SIMPAR_PHASE_BACKWARD);
        if (st->mtp_n > 0)
            step_mtp_backward(st, j);
        else if (!(st->tr->tied_embeddings && st->P == 1)) /* else the embedding's, below */
            step_end_grads(st, st->head_off, st->ends, final);
    } else if (st->local) {
        step_end_block(st, "aux.bwd", st->aux_off, j, SIMPAR_PHASE_BACKWARD);
        step_end_grads(st, st->aux_off, st->ends, final);
    } else {
        /* the gradient comes from the next virtual stage */
        guint tag = step_tag(st, step, j, vs, 1);
        step_recv(st, step_peer(st, vs + 1), tag,
                  st->ops
                      ? step_ops_res(st, simpar_train_stage_first_layer(st->tr, vs + 1), j, TRUE)
                      : st->grad_in,
                  SIMPAR_PHASE_BACKWARD, "p2p.recv-grad");
    }
}

/* A backward's send of the gradient (not on the first virtual stage). */
static void
step_backward_send(Step *st, guint step, const SimparPipeItem *it)
{
    guint vs = it->chunk * st->P + st->p;
    guint j = it->micro;
    if (vs > 0 && !st->local)
        step_send(st, step_peer(st, vs - 1), step_tag(st, step, j, vs - 1, 1),
                  st->ops ? step_ops_res(st, simpar_train_stage_first_layer(st->tr, vs), j, TRUE)
                          : st->grad_out,
                  STEP_SEND_BWD, SIMPAR_PHASE_BACKWARD, "p2p.send-grad");
}

/* The embedding's backward on the first virtual stage; the last micro-batch's open buckets. */
static void
step_backward_end(Step *st, const SimparPipeItem *it)
{
    guint vs = it->chunk * st->P + st->p;
    gboolean final = it->micro + 1 == st->m;
    if (vs == 0) {
        step_end_block(st, "embed.bwd", st->embed_off, it->micro, SIMPAR_PHASE_BACKWARD);
        step_end_grads(st, st->embed_off, st->ends, final);
    }
    if (final && step_reduces(st) && !simpar_train_reduce_each_micro(st->tr))
        step_flush_bucket(st, st->last_compute); /* buckets do not span chunks */
}

static void
step_backward(Step *st, guint step, const SimparPipeItem *it)
{
    step_backward_pre(st, step, it);
    step_layers(st, it->chunk, it->micro, TRUE, it->micro + 1 == st->m);
    step_backward_send(st, step, it);
    step_backward_end(st, it);
}

/* --overlap-moe-expert-parallel-comm: forward `f` and backward `b` merged as Megatron-Core's
 * TransformerModelChunkSchedulePlan.run runs them (model_chunk_schedule_plan.py): f's receive
 * (or embedding), b's head (or receive), the layers in pairs (step-overlap.c), f's send on its
 * stream after f's last node, b's send, f's output layer, b's embedding. */
static void
step_pair(Step *st, guint step, const SimparPipeItem *f, const SimparPipeItem *b)
{
    step_forward_pre(st, step, f);
    guint f_last = st->last_compute;
    step_backward_pre(st, step, b);
    guint b_last = st->last_compute;
    step_overlap_layers(st, f, &f_last, b, &b_last);
    guint keep = st->last_compute;
    st->last_compute = f_last; /* the send and the head wait for f's combine */
    step_forward_send(st, step, f);
    st->last_compute = b_last, st->join = G_MAXUINT;
    step_backward_send(st, step, b);
    st->last_compute = keep, st->join = f_last;
    step_forward_head(st, f);
    st->join = G_MAXUINT;
    step_backward_end(st, b);
}

/* The rank's parameter regions in layout order, each one bucket: the head, the layers of every
 * chunk, the embedding (the executable step's units of ZeRO-3 sharding). */
static void
step_regions(const Step *st, guint ready, GArray *out)
{
    if (st->p + 1 == st->P) {
        StepBucket b = {st->head_off, st->ends, ready, STEP_DENSE};
        g_array_append_val(out, b);
    }
    gsize off, lp, eoff, le;
    for (guint c = st->v; c-- > 0;)
        for (guint k = step_lc(st, c); k-- > 0;) { /* the last layer first */
            step_layer_place(st, c, k, &off, &lp, &eoff, &le);
            StepBucket b = {off, lp, ready, STEP_DENSE};
            g_array_append_val(out, b);
        }
    if (st->p == 0) {
        StepBucket b = {st->embed_off, st->ends, ready, STEP_DENSE};
        g_array_append_val(out, b);
    }
}

/* The rank's gradient buffer zeroed before the step's first forward, on the compute stream
 * (Megatron-Core's zero_grad_buffer; compute.c prices it per kernel set), its gradients of
 * simpar_train_grad_buffer_bytes each. Timed steps only: executable ones start from buffers
 * allocated zeroed. */
static void
step_zero_grad(Step *st, guint step)
{
    double elem = simpar_train_grad_buffer_bytes(st->tr, st->model->dtype);
    g_autofree char *name = g_strdup_printf("optimizer.zero-grad%u", step);
    SimparOp op = {.kind = SIMPAR_OP_ZERO_GRAD, .u.zero = {st->n_grads, elem}};
    st->last_compute = step_add(st, &op, STEP_COMPUTE, SIMPAR_PHASE_FORWARD, name);
}

/* ----- the optimizer's scalar all-reduces ----- */

guint
simpar_step_n_scalars(const SimparTrain *tr, SimparDtype dt)
{
    guint fp16 = dt == SIMPAR_DTYPE_FP16;
    switch ((SimparScalars) tr->scalars) {
    case SIMPAR_SCALARS_MEGATRON: /* clip_grad defaults to 1.0: the norm every step */
        return 1 + fp16;
    case SIMPAR_SCALARS_PYTORCH: /* DDP's gradients are the same on every replica: local norm */
        return tr->zero >= 1 && simpar_train_shard_group(tr) > 1 ? 1 + fp16 : 0;
    default:
        return 0;
    }
}

gsize
simpar_step_scalar_count(SimparDtype dt, gsize bytes)
{
    return MAX(bytes / simpar_dtype_size(dt), (gsize) 1);
}

/* One scalar all-reduce of `count` elements over group g on the compute stream, after every
 * data-parallel reduction of the step (as Adam). */
static guint
step_scalar(Step *st, guint g, gsize count, SimparRedOp red, const char *what, guint step)
{
    g_autofree char *name = g_strdup_printf("optimizer.%s%u", what, step);
    SimparView v = {st->scalar_buf, 0};
    SimparOp op = {.kind = SIMPAR_OP_COLLECTIVE,
                   .u.coll = {SIMPAR_COLL_ALL_REDUCE, g, count, 0, v, v, red}};
    guint i = step_add(st, &op, STEP_COMPUTE, SIMPAR_PHASE_BACKWARD, name);
    for (guint k = 0; k < st->dp_ops->len; k++)
        simpar_schedule_add_dep(st->s, i, g_array_index(st->dp_ops, guint, k));
    return st->last_compute = i;
}

/* Before Adam, the gradient statistics' all-reduces of one fp32 each: fp16's inf/nan flag (MAX)
 * and the squared gradient norm (SUM). Megatron-Core (megatron/core/optimizer/optimizer.py,
 * MixedPrecisionOptimizer.step: _unscale_main_grads_and_check_for_nan, then clip_grad_norm's
 * get_grad_norm_fp32 in clip_grads.py) reduces both over get_grad_stats_parallel_group: the
 * model-parallel group (tensor x pipeline) without the distributed optimizer, the whole
 * distributed-optimizer instance (every rank; with --shard-group its shard group's) with it
 * (distrib_optimizer.py). simpar splits the group as NCCL's hierarchical algorithms do: its
 * tensor-parallel part a timed block ("optimizer.tp-stats", the first tensor-parallel group's
 * all-reduce: the ranks of a stage run alike), the rest a collective over the rank's other
 * members (its pipeline stages, and its replicas under ZeRO >= 1), which a tensor-parallel slice
 * holds whole. PyTorch's FSDP clip_grad_norm_ and ShardedGradScaler reduce over the shard group;
 * its DDP runs none (the norm is local: every replica holds the reduced gradients). */
static void
step_scalars(Step *st, guint step)
{
    guint g = G_MAXUINT;
    if (st->stats_group != NULL && st->tr->scalars == SIMPAR_SCALARS_MEGATRON)
        g = st->stats_group[st->tr->zero == 0
                                ? st->t * st->D + st->d
                                : (st->t % st->Ttp) * st->R + step_dp_index(st) / st->S];
    else if (st->stats_group != NULL)
        g = st->stats_group[((st->t % st->Ttp) * st->P + st->p) * st->R +
                            step_dp_index(st) / st->S];
    if (st->tr->scalars == SIMPAR_SCALARS_MEGATRON && st->Ttp > 1) {
        guint b = step_block(st, "optimizer.tp-stats", st->n_scalars, SIMPAR_PHASE_BACKWARD);
        for (guint k = 0; k < st->dp_ops->len; k++)
            simpar_schedule_add_dep(st->s, b, g_array_index(st->dp_ops, guint, k));
    }
    gsize count = simpar_step_scalar_count(simpar_schedule_dtype(st->s), 4);
    if (g != G_MAXUINT && st->n_scalars > 1) /* fp16 */
        step_scalar(st, g, count, SIMPAR_RED_MAX, "found-inf", step);
    if (g != G_MAXUINT)
        step_scalar(st, g, count, SIMPAR_RED_SUM, "grad-norm", step);
}

/* After Adam, on the last stage, Megatron-LM's train_step (megatron/training/training.py)
 * all-reduces the loss summed over the micro-batches and its token count (two fp32) over the
 * data-parallel group with context parallelism, for logging. */
static void
step_loss(Step *st, guint step)
{
    if (st->loss_group == NULL || st->p + 1 != st->P)
        return;
    gsize count = simpar_step_scalar_count(simpar_schedule_dtype(st->s), 8);
    g_autofree char *name = g_strdup_printf("optimizer.loss%u", step);
    SimparView v = {st->scalar_buf, 0};
    SimparOp op = {.kind = SIMPAR_OP_COLLECTIVE,
                   .u.coll = {SIMPAR_COLL_ALL_REDUCE, st->loss_group[st->t % st->Ttp], count, 0, v,
                              v, SIMPAR_RED_SUM}};
    st->last_compute = step_add(st, &op, STEP_COMPUTE, SIMPAR_PHASE_BACKWARD, name);
}

/* Adam on [at, at + count) of the parameters, its moments at `moment`; after every
 * data-parallel reduction. */
static guint
step_adam(Step *st, guint step, gsize at, gsize count, gsize moment)
{
    g_autofree char *name = g_strdup_printf("optimizer.step%u", step);
    const SimparAdamConfig *cfg = &st->tr->adam;
    SimparOp adam = {.kind = SIMPAR_OP_ADAM,
                     .u.adam = {count,
                                cfg->lr,
                                cfg->beta1,
                                cfg->beta2,
                                cfg->eps,
                                cfg->weight_decay,
                                step + 1,
                                {st->params, at},
                                step_grad_view(st, at),
                                {st->opt_m, moment},
                                {st->opt_v, moment}}};
    guint a = step_add(st, &adam, STEP_COMPUTE, SIMPAR_PHASE_BACKWARD, name);
    for (guint k = 0; k < st->dp_ops->len; k++)
        simpar_schedule_add_dep(st->s, a, g_array_index(st->dp_ops, guint, k));
    return st->last_compute = a;
}

/* ZeRO >= 1: Adam on the rank's shard of the experts' parameters (after the dense ones, at
 * `base`), its moments after the dense shard's `moment` ones. */
static guint
step_adam_experts(Step *st, guint step, gsize base, gsize moment)
{
    gsize shard = st->n_expert / st->DE;
    return step_adam(st, step, base + st->e_index * shard, shard, moment);
}

/* After the rank's last backward: the data-parallel reductions, tied embeddings, Adam and the
 * parameter all-gather of ZeRO 1/2. */
static void
step_optimizer(Step *st, guint step)
{
    guint end_bwd = st->last_compute;
    /* executable ZeRO-1: one bucket of whole shards, so that every rank's shard of every
     * parameter is the same flat range (the timed buckets' shards would interleave) */
    gboolean whole = st->ops != NULL && st->tr->zero >= 1 && st->DR > 1;
    gsize padded = (st->n_grads + st->S - 1) / st->S * st->S;
    if (step_sharded_params(st)) { /* executable ZeRO-3: each region its own shards */
        g_array_set_size(st->buckets, 0);
        step_regions(st, end_bwd, st->buckets);
    } else if (whole) {
        StepBucket all = {0, padded, end_bwd, STEP_DENSE};
        g_array_set_size(st->buckets, 0);
        g_array_append_val(st->buckets, all);
    }
    g_autoptr(GArray) regions = step_sharded_params(st) ? g_array_copy(st->buckets) : NULL;
    for (guint k = 0; k < st->buckets->len; k++) {
        const StepBucket *b = &g_array_index(st->buckets, StepBucket, k);
        step_reduce_bucket(st, b, st->tr->overlap_grad_reduce ? b->ready : end_bwd);
    }
    g_array_set_size(st->buckets, 0);
    if (st->embed_group != NULL && (st->p == 0 || st->p + 1 == st->P)) {
        gsize off = st->p == 0 ? st->embed_off : st->last_embed_off;
        step_coll(st, STEP_COMPUTE, SIMPAR_COLL_ALL_REDUCE, st->embed_group[st->t * st->D + st->d],
                  st->ends, (SimparView){st->grads, off}, (SimparView){st->grads, off},
                  "embed.all-reduce-tied");
    }
    if (st->n_scalars > 0)
        step_scalars(st, step);
    gboolean experts_apart = st->tr->zero >= 1 && st->n_expert > 0;
    gsize nd = experts_apart ? st->n_grads - st->n_expert : st->n_grads; /* ZeRO 0: all, whole */
    gsize count = st->tr->zero >= 1 ? nd / st->S : nd, at = 0;
    if (whole) /* the rank's shard of the one bucket */
        count = padded / st->S, at = step_shard_index(st) * count;
    guint a = G_MAXUINT;
    if (regions != NULL) { /* Adam on the rank's shard of each region; the moments packed */
        gsize moment = 0, lo, hi;
        for (guint k = 0; k < regions->len; k++) {
            const StepBucket *r = &g_array_index(regions, StepBucket, k);
            step_owned(st, r->off, r->count, &lo, &hi);
            a = step_adam(st, step, lo, hi - lo, moment);
            moment += hi - lo;
        }
    } else {
        a = step_adam(st, step, at, count, 0);
    }
    guint ae = experts_apart ? step_adam_experts(st, step, nd, count) : G_MAXUINT;
    step_loss(st, step);
    g_array_set_size(st->dp_ops, 0);
    gboolean gathers = (st->tr->zero == 1 || st->tr->zero == 2) && !step_pg_on(st);
    if (ae != G_MAXUINT && st->DE > 1 && gathers) {
        gsize shard = st->n_expert / st->DE;
        guint i = step_coll(st, STEP_DP, SIMPAR_COLL_ALL_GATHER, st->e_group,
                            (gsize) llround((double) shard * st->pg8),
                            (SimparView){st->params, nd + st->e_index * shard},
                            (SimparView){st->params, nd}, "edp.all-gather-params");
        simpar_schedule_add_dep(st->s, i, ae);
    }
    if (st->S > 1 && gathers) {
        guint g = step_shard_group(st);
        /* the layers' share of the rank's parameters gathered in FP8, the ends' in bf16 */
        gsize ends = (st->p == 0 ? st->ends : 0) + (st->p + 1 == st->P ? st->ends : 0);
        if (st->p + 1 == st->P && st->P > 1 && st->mtp_n > 0 && !st->tr->tied_embeddings)
            ends += st->ends; /* the embedding's copy */
        double layers = nd > ends ? (double) (nd - ends) / nd : 0;
        gsize wire = (gsize) llround((double) count * (1 - layers * (1 - st->pg8)));
        guint i =
            step_coll(st, STEP_DP, SIMPAR_COLL_ALL_GATHER, g, wire, (SimparView){st->params, at},
                      (SimparView){st->params, 0}, "dp.all-gather-params");
        simpar_schedule_add_dep(st->s, i, a);
    }
}

static void
step_rank_layout(Step *st)
{
    st->le = st->facts.expert_params, st->lp = st->facts.layer_params - st->le;
    st->lpd = st->dense_facts != NULL ? st->dense_facts[st->t].layer_params : 0;
    for (guint c = 0; c < st->v; c++)
        st->layer_first[c] = simpar_train_stage_first_layer(st->tr, c * st->P + st->p);
    gsize n = 0;
    gsize end = step_end_params(st->model, st->model->vocab, st->Ttp);
    st->embed_off = st->head_off = st->aux_off = 0;
    st->ends = 0;
    st->last_embed_off = G_MAXSIZE;
    st->mtp_n = st->p + 1 == st->P && !st->local ? (guint) st->model->mtp_layers : 0;
    /* the gradient buffer in the order gradients become final: the last virtual stage first */
    if (st->p + 1 == st->P || st->local) {
        gboolean real_head = st->p + 1 == st->P;
        st->ends = real_head ? end : step_end_params(st->model, st->tr->aux_head_width, st->Ttp);
        st->head_off = st->aux_off = n;
        if (!(st->tr->tied_embeddings && st->P == 1 && real_head))
            n += st->ends;
        if (real_head && st->tr->tied_embeddings)
            st->last_embed_off = st->head_off;
    }
    /* multi-token prediction: its modules, then the embedding's copy (P > 1, untied) */
    gboolean mtp_dense = !simpar_model_mtp_is_moe(st->model);
    st->mtp_le = mtp_dense ? 0 : st->le;
    st->mtp_lp = (mtp_dense && st->dense_facts != NULL ? st->lpd : st->lp) +
                 (gsize) simpar_memory_mtp_proj_params(st->model, st->Ttp);
    st->mtp_off = n;
    n += st->mtp_n * st->mtp_lp;
    if (st->mtp_n > 0 && st->P > 1 && !st->tr->tied_embeddings) {
        st->last_embed_off = n;
        n += end;
    }
    for (guint c = st->v; c-- > 0;) {
        guint lc = step_lc(st, c), dense = step_n_dense(st, c, 0, lc);
        st->layer_off[c] = n;
        n += (lc - dense) * st->lp + dense * st->lpd;
    }
    if (st->p == 0) {
        st->ends = MAX(st->ends, end);
        st->embed_off = n;
        n += end;
        if (st->tr->tied_embeddings && st->P == 1)
            st->head_off = st->embed_off;
    }
    gsize nd = n;
    st->mtp_eoff = n; /* the experts after the rest, in the same order */
    n += st->mtp_n * st->mtp_le;
    for (guint c = st->v; c-- > 0;) {
        guint lc = step_lc(st, c);
        st->expert_off[c] = n;
        n += (lc - step_n_dense(st, c, 0, lc)) * st->le;
    }
    /* room for reduce-scatters of every bucket: a whole number of D-sized pieces */
    st->n_grads = n, st->n_expert = n - nd;
    gsize padded = n + (gsize) st->DR * (gsize) st->DR;
    if (st->n_expert > 0)
        padded += (gsize) st->DE * (gsize) st->DE;
    st->grads = simpar_schedule_add_buffer(st->s, st->rank, "grads", padded * st->gf);
    st->params = simpar_schedule_add_buffer(st->s, st->rank, "params", padded);
    gsize opt = st->tr->zero >= 1 ? n / st->S + 1 : n;
    if (st->tr->zero >= 1 && st->n_expert > 0) /* the experts sharded over their own group */
        opt = nd / st->S + st->n_expert / st->DE + 2;
    st->opt_m = simpar_schedule_add_buffer(st->s, st->rank, "adam.m", opt);
    st->opt_v = simpar_schedule_add_buffer(st->s, st->rank, "adam.v", opt);
    if (st->n_scalars > 0 || st->loss_group != NULL)
        st->scalar_buf = simpar_schedule_add_buffer(st->s, st->rank, "optimizer.scalars", 4);
    gsize act = st->facts.act_elems;
    st->act_in = simpar_schedule_add_buffer(st->s, st->rank, "p2p.act-in", act);
    st->act_out = simpar_schedule_add_buffer(st->s, st->rank, "p2p.act-out", act);
    st->grad_in = simpar_schedule_add_buffer(st->s, st->rank, "p2p.grad-in", act);
    st->grad_out = simpar_schedule_add_buffer(st->s, st->rank, "p2p.grad-out", act);
}

/* Groups per (outer, inner); in a slice only those of its tensor-parallel index (`outer` is
 * the index t for every axis but "tp", which a slice never has). */
static guint *
step_groups(Step *st, const char *axis, guint n_outer, guint n_inner, guint size,
            guint (*member)(const Step *st, guint outer, guint inner, guint k))
{
    guint *groups = g_new(guint, n_outer * n_inner);
    g_autofree guint *ranks = g_new(guint, size);
    for (guint o = 0; o < n_outer; o++)
        for (guint i = 0; i < n_inner; i++) {
            if (st->slice != G_MAXUINT && o % st->Ttp != st->slice) {
                groups[o * n_inner + i] = G_MAXUINT;
                continue;
            }
            for (guint k = 0; k < size; k++)
                ranks[k] = member(st, o, i, k);
            groups[o * n_inner + i] = simpar_schedule_add_group(st->s, axis, ranks, size);
        }
    return groups;
}

/* The k-th of the D x C ranks of tensor-parallel index t: replica k / C, context rank k % C. */
static guint
step_dp_member(const Step *st, guint t, guint p, guint k)
{
    return step_rank(st, t + st->Ttp * (k % st->C), k / st->C, p);
}

/* Hybrid sharding: inner = p R + g, the g-th shard group of S consecutive replicas; inner =
 * p S + i, the replicas at place i of every shard group. */
static guint
step_shard_member(const Step *st, guint t, guint inner, guint k)
{
    return step_dp_member(st, t, inner / st->R, inner % st->R * st->S + k);
}

static guint
step_rep_member(const Step *st, guint t, guint inner, guint k)
{
    return step_dp_member(st, t, inner / st->S, k * st->S + inner % st->S);
}

static guint
step_tp_member(const Step *st, guint d, guint p, guint k)
{
    return step_rank(st, k, d, p);
}

static guint
step_embed_member(const Step *st, guint t, guint d, guint k)
{
    return step_rank(st, t, d, k == 0 ? 0 : st->P - 1);
}

/* The first n of `groups` (NULL: none) that this build holds carry latency-bound scalars. */
static void
step_groups_idle(Step *st, const guint *groups, guint n)
{
    for (guint i = 0; groups != NULL && i < n; i++)
        if (groups[i] != G_MAXUINT)
            simpar_schedule_set_group_idle(st->s, groups[i]);
}

/* Megatron's gradient-statistics group less its tensor-parallel part (step_scalars): without
 * the distributed optimizer the stages of (t, d); with it the S replicas of a shard group on
 * every stage (inner: the shard group), the axis of the smaller rank stride inside. */
static guint
step_stats_member(const Step *st, guint t, guint inner, guint k)
{
    if (st->tr->zero == 0)
        return step_rank(st, t, inner, k);
    if (st->tr->stride[SIMPAR_AXIS_PP] < st->tr->stride[SIMPAR_AXIS_DP])
        return step_shard_member(st, t, k % st->P * st->R + inner, k / st->P);
    return step_shard_member(st, t, k / st->S * st->R + inner, k % st->S);
}

/* The data-parallel group (D x C) of the last stage: the loss's. */
static guint
step_loss_member(const Step *st, guint t, guint inner, guint k)
{
    (void) inner;
    return step_dp_member(st, t, st->P - 1, k);
}

/* The k-th of the expert-data-parallel group of stage p and (expert-parallel rank x ETP +
 * expert-tensor rank) `inner` (train.h: Megatron-Core's expert numbering). */
static guint
step_edp_member(const Step *st, guint p, guint inner, guint k)
{
    guint etp = (guint) MAX(st->tr->etp, 1);
    return simpar_train_expert_rank(st->tr, inner % etp, inner / etp, k, p);
}

/* The rank's expert-data-parallel group and its place in it. */
static void
step_rank_experts(Step *st)
{
    if (st->edp_group == NULL)
        return;
    const gint64 *es = st->tr->expert_stride;
    guint etp = (guint) MAX(st->tr->etp, 1), ep = (guint) MAX(st->tr->ep, 1), r = st->rank;
    guint e_tp = r / (guint) es[SIMPAR_AXIS_TP] % etp, e_ep = r / (guint) es[SIMPAR_AXIS_EP] % ep;
    st->e_index = r / (guint) es[SIMPAR_AXIS_DP] % st->DE;
    st->e_group = st->edp_group[st->p * ep * etp + e_ep * etp + e_tp];
}

static SimparSchedule *
step_build(const SimparModel *model, const SimparTrain *tr, const SimparSchedule *layer,
           gboolean ops, guint slice)
{
    g_return_val_if_fail(tr->micro_batches > 0 && tr->layers > 0, NULL);
    Step st = {
        .model = model,
        .tr = tr,
        .layer = layer,
        .T = simpar_train_group(tr),
        .Ttp = (guint) tr->tp.tp,
        .C = simpar_plan_cp(&tr->tp),
        .DR = simpar_train_replicas(tr),
        .P = (guint) tr->pp,
        .D = (guint) tr->dp,
        .v = (guint) tr->virtual_stages,
        .m = (guint) tr->micro_batches,

        .local = tr->schedule == SIMPAR_PIPE_LOCAL,
        .slice = slice,
        .numbering = *tr,
    };
    if (slice != G_MAXUINT)
        simpar_train_tp_slice(tr, &st.numbering);
    g_return_val_if_fail(st.v <= G_N_ELEMENTS(st.layer_off), NULL);
    g_autofree SimparRankFacts *dense_facts = NULL;
    if (simpar_model_has_dense_layers(model)) { /* their parameters: the dense layer's shares */
        g_autoptr(SimparSchedule) dense = simpar_generate_dense_layer(model, &tr->tp, NULL);
        g_return_val_if_fail(dense != NULL, NULL); /* the caller validated it */
        st.dense_facts = dense_facts = simpar_schedule_rank_facts(dense);
    }
    st.n_vs = st.local ? st.P : st.P * st.v;
    guint n_ranks = (slice == G_MAXUINT ? st.T : st.C) * st.P * st.D;
    st.s = simpar_schedule_new(n_ranks, simpar_schedule_dtype(layer));
    const char *streams[STEP_N_STREAMS] = {"compute",      "comm", "p2p-send-fwd",
                                           "p2p-send-bwd", "dp",   "dp-gather"};
    for (guint i = 1; i < STEP_N_STREAMS; i++)
        simpar_schedule_add_stream(st.s, streams[i]);
    st.S = tr->zero >= 1 ? simpar_train_shard_group(tr) : st.DR;
    st.R = st.DR / st.S;
    st.gf = simpar_train_grad_bytes(tr, model->dtype) / simpar_dtype_size(model->dtype);
    st.pg8 = 1;
    if (tr->fp8_param_gather && !ops) { /* executable schedules gather bf16 buffers */
        double lin = simpar_model_layer_weights(model);
        double fp8 = model->fp8 == SIMPAR_FP8_MXFP8 ? 1 + 1.0 / 32 : 1; /* bytes per weight */
        st.pg8 = 1 - lin / (lin + simpar_model_layer_small_params(model)) *
                         (1 - fp8 / simpar_dtype_size(model->dtype));
    }
    if (st.DR > 1)
        st.dp_group = step_groups(&st, "dp", st.Ttp, st.P, st.DR, step_dp_member);
    if (st.S < st.DR && st.S > 1)
        st.shard_group = step_groups(&st, "dp-shard", st.Ttp, st.P * st.R, st.S, step_shard_member);
    if (st.S < st.DR)
        st.rep_group = step_groups(&st, "dp-replica", st.Ttp, st.P * st.S, st.R, step_rep_member);
    if (tr->scatter_gather && st.T > 1)
        st.tp_group = step_groups(&st, "tp", st.D, st.P, st.T, step_tp_member);
    if ((tr->tied_embeddings || model->mtp_layers > 0) && st.P > 1 && !st.local)
        st.embed_group = step_groups(&st, "embed", st.T, st.D, 2, step_embed_member);
    st.n_scalars = ops ? 0 : simpar_step_n_scalars(tr, simpar_schedule_dtype(layer));
    guint n_stats = 0; /* groups of the gradient statistics: (outer, inner) */
    /* local parallelism: each chunk trains on its own loss, its statistics its own (no group
     * across the chunks, which would join their asynchronous steps) */
    gboolean megatron = st.n_scalars > 0 && tr->scalars == SIMPAR_SCALARS_MEGATRON;
    if (megatron && !st.local) {
        if (tr->zero == 0 && st.P > 1) {
            st.stats_group = step_groups(&st, "grad-stats", st.T, st.D, st.P, step_stats_member);
            n_stats = st.T * st.D;
        } else if (tr->zero >= 1 && st.S * st.P > 1) {
            st.stats_group =
                step_groups(&st, "grad-stats", st.Ttp, st.R, st.S * st.P, step_stats_member);
            n_stats = st.Ttp * st.R;
        }
    } else if (st.n_scalars > 0 && tr->scalars == SIMPAR_SCALARS_PYTORCH) { /* FSDP's shards */
        st.stats_group =
            step_groups(&st, "grad-stats", st.Ttp, st.P * st.R, st.S, step_shard_member);
        n_stats = st.Ttp * st.P * st.R;
    }
    if (!ops && tr->scalars == SIMPAR_SCALARS_MEGATRON && st.DR > 1)
        st.loss_group = step_groups(&st, "loss", st.Ttp, 1, st.DR, step_loss_member);
    step_groups_idle(&st, st.stats_group, n_stats);
    step_groups_idle(&st, st.loss_group, st.Ttp);
    st.DE = simpar_model_is_moe(model) ? simpar_train_expert_replicas(tr) : 1;
    if (st.DE > 1) /* the experts' gradients (slices have none: simpar_step_build_slice) */
        st.edp_group = step_groups(&st, "edp", st.P, (guint) (MAX(tr->ep, 1) * MAX(tr->etp, 1)),
                                   st.DE, step_edp_member);
    st.buckets = g_array_new(FALSE, FALSE, sizeof(StepBucket));
    st.dp_ops = g_array_new(FALSE, FALSE, sizeof(guint));
    st.pg = g_array_new(FALSE, FALSE, sizeof(StepParamBucket));
    st.pg_fwd = g_array_new(FALSE, FALSE, sizeof(SimparPipeItem));
    if (ops)
        step_ops_init(&st);
    guint steps = st.local && tr->local_async ? STEP_ASYNC_STEPS : 1;
    g_autofree SimparRankFacts *facts = simpar_schedule_rank_facts(layer);
    for (guint p = 0; p < st.P; p++) {
        gboolean merged = tr->ep_overlap && !ops;
        g_autoptr(GArray) order =
            (merged ? simpar_pipeline_order_merged : simpar_pipeline_order_grouped)(
                tr->schedule, st.P, st.v, st.m, simpar_train_vp_group(tr), p);
        g_array_set_size(st.pg_fwd, 0);
        for (guint i = 0; i < order->len; i++)
            if (!g_array_index(order, SimparPipeItem, i).backward)
                g_array_append_val(st.pg_fwd, g_array_index(order, SimparPipeItem, i));
        for (guint d = 0; d < st.D; d++)
            for (guint t = 0; t < st.T; t++) {
                if (slice != G_MAXUINT && t % st.Ttp != slice)
                    continue;
                st.rank = step_rank(&st, t, d, p);
                st.t = t, st.d = d, st.p = p;
                st.facts = facts[t];
                step_rank_layout(&st);
                step_rank_experts(&st);
                st.last_compute = st.join = G_MAXUINT;
                if (ops)
                    step_ops_rank(&st);
                st.prefetch[0] = st.prefetch[1] = G_MAXUINT;
                st.open_count[STEP_DENSE] = st.open_count[STEP_EXPERT] = 0;
                for (guint k = 0; k < steps; k++) {
                    if (!ops)
                        step_zero_grad(&st, k);
                    if (step_pg_on(&st))
                        step_pg_start(&st);
                    for (guint i = 0; i < order->len; i++) {
                        const SimparPipeItem *it = &g_array_index(order, SimparPipeItem, i);
                        const SimparPipeItem *next =
                            i + 1 < order->len ? &g_array_index(order, SimparPipeItem, i + 1)
                                               : NULL;
                        /* a chunk's first forward waits for its gathers layer by layer: on
                         * its own (the merged order has it in the warm-up) */
                        gboolean first = step_pg_on(&st) && it->micro == 0;
                        if (merged && !it->backward && next != NULL && next->backward && !first)
                            step_pair(&st, k, it, next), i++; /* a steady-state pair */
                        else if (it->backward)
                            step_backward(&st, k, it);
                        else
                            step_forward(&st, k, it);
                    }
                    step_optimizer(&st, k);
                }
            }
    }
    g_array_unref(st.buckets);
    g_array_unref(st.dp_ops);
    g_array_unref(st.pg);
    g_array_unref(st.pg_fwd);
    if (ops)
        step_ops_free(&st);
    g_free(st.dp_group), g_free(st.tp_group), g_free(st.embed_group);
    g_free(st.shard_group), g_free(st.rep_group), g_free(st.edp_group);
    g_free(st.stats_group), g_free(st.loss_group);
    return st.s; /* (transfer full) */
}

SimparSchedule *
simpar_step_build(const SimparModel *model, const SimparTrain *tr, const SimparSchedule *layer)
{
    return step_build(model, tr, layer, FALSE, G_MAXUINT);
}

SimparSchedule *
simpar_step_build_slice(const SimparModel *model, const SimparTrain *tr,
                        const SimparSchedule *layer, guint t)
{
    g_return_val_if_fail(t < tr->tp.tp && !(tr->scatter_gather && tr->tp.tp > 1), NULL);
    g_return_val_if_fail(!simpar_model_is_moe(model), NULL); /* expert groups cross slices */
    /* slice t: the ranks t + T c of every context-parallel rank c, which reduce together */
    return step_build(model, tr, layer, FALSE, t);
}

SimparSchedule *
simpar_step_build_ops(const SimparModel *model, const SimparTrain *tr, const SimparSchedule *layer,
                      GError **error)
{
    if (!step_ops_supported(model, tr, layer, error))
        return NULL;
    return step_build(model, tr, layer, TRUE, G_MAXUINT);
}
