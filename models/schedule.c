/* schedule.c - storage of the schedule IR: flat arrays of ops, deps, buffers and groups. */
#include "schedule.h"

G_DEFINE_QUARK(simpar_schedule_error_quark, simpar_schedule_error)

struct _SimparSchedule {
    guint n_ranks;
    SimparDtype dtype;
    GArray *ops;        /* SimparOp */
    GArray *deps;       /* guint, op indices; each op owns a contiguous run */
    GArray *buffers;    /* SimparBuffer */
    GArray *groups;     /* SimparGroup */
    GArray *members;    /* guint, global ranks of every group, concatenated */
    GPtrArray *streams; /* interned names */
    GArray **rank_ops;  /* per rank: guint op indices in program order */
    GArray *shards;     /* SimparShard */
};

SimparSchedule *
simpar_schedule_new(guint n_ranks, SimparDtype dtype)
{
    g_return_val_if_fail(n_ranks > 0, NULL);
    SimparSchedule *sched = g_new0(SimparSchedule, 1);
    sched->n_ranks = n_ranks;
    sched->dtype = dtype;
    sched->ops = g_array_new(FALSE, FALSE, sizeof(SimparOp));
    sched->deps = g_array_new(FALSE, FALSE, sizeof(guint));
    sched->buffers = g_array_new(FALSE, FALSE, sizeof(SimparBuffer));
    sched->groups = g_array_new(FALSE, FALSE, sizeof(SimparGroup));
    sched->members = g_array_new(FALSE, FALSE, sizeof(guint));
    sched->streams = g_ptr_array_new();
    sched->shards = g_array_new(FALSE, FALSE, sizeof(SimparShard));
    sched->rank_ops = g_new0(GArray *, n_ranks);
    for (guint r = 0; r < n_ranks; r++)
        sched->rank_ops[r] = g_array_new(FALSE, FALSE, sizeof(guint));
    simpar_schedule_add_stream(sched, "compute");
    return sched; /* (transfer full) */
}

void
simpar_schedule_free(SimparSchedule *sched)
{
    if (sched == NULL)
        return;
    for (guint r = 0; r < sched->n_ranks; r++)
        g_array_unref(sched->rank_ops[r]);
    g_free(sched->rank_ops);
    g_array_unref(sched->ops);
    g_array_unref(sched->deps);
    g_array_unref(sched->buffers);
    g_array_unref(sched->groups);
    g_array_unref(sched->members);
    g_ptr_array_unref(sched->streams);
    g_array_unref(sched->shards);
    g_free(sched);
}

guint
simpar_schedule_n_ranks(const SimparSchedule *sched)
{
    return sched->n_ranks;
}

SimparDtype
simpar_schedule_dtype(const SimparSchedule *sched)
{
    return sched->dtype;
}

void
simpar_schedule_set_fp8(SimparSchedule *sched, guint recipe, gboolean attention)
{
    g_return_if_fail(sched != NULL && recipe <= SIMPAR_FP8_MXFP8);
    for (guint i = 0; i < sched->ops->len; i++) {
        SimparOp *op = &g_array_index(sched->ops, SimparOp, i);
        if (op->kind == SIMPAR_OP_GEMM)
            op->u.gemm.fp8 = recipe;
        else if (attention && op->kind != SIMPAR_OP_ATTN_MERGE && simpar_op_is_attention(op->kind))
            op->u.attn.fp8 = recipe;
    }
}

/* Streams are shared by all ranks; adding an existing name returns its index. */
guint
simpar_schedule_add_stream(SimparSchedule *sched, const char *name)
{
    const char *interned = g_intern_string(name);
    for (guint i = 0; i < sched->streams->len; i++)
        if (g_ptr_array_index(sched->streams, i) == interned)
            return i;
    g_ptr_array_add(sched->streams, (gpointer) interned);
    return sched->streams->len - 1;
}

guint
simpar_schedule_add_buffer(SimparSchedule *sched, guint rank, const char *name, gsize elems)
{
    g_return_val_if_fail(rank < sched->n_ranks, G_MAXUINT);
    SimparBuffer b = {g_intern_string(name), rank, elems};
    g_array_append_val(sched->buffers, b);
    return sched->buffers->len - 1;
}

guint
simpar_schedule_replay_buffer(SimparSchedule *sched, guint rank, const char *name, gsize elems,
                              GArray *kept, gboolean forward, gboolean replay, guint *next)
{
    if (kept != NULL && replay) {
        g_assert(*next < kept->len);
        guint buf = g_array_index(kept, guint, (*next)++);
        const SimparBuffer *b = simpar_schedule_buffer(sched, buf);
        g_assert(g_str_equal(b->name, name) && b->elems == elems); /* the forward is replayed */
        return buf;
    }
    guint buf = simpar_schedule_add_buffer(sched, rank, name, elems);
    if (kept != NULL && forward)
        g_array_append_val(kept, buf);
    return buf;
}

guint
simpar_schedule_add_group(SimparSchedule *sched, const char *axis, const guint *ranks, guint size)
{
    g_return_val_if_fail(size > 0, G_MAXUINT);
    for (guint i = 0; i < size; i++)
        g_return_val_if_fail(ranks[i] < sched->n_ranks, G_MAXUINT);
    /* an evenly stepping group finds a member's index by division (simpar_group_index): the
     * quotient's checks ask it per transfer, over groups of hundreds of ranks */
    guint step = size > 1 && ranks[1] > ranks[0] ? ranks[1] - ranks[0] : 0;
    for (guint i = 2; step > 0 && i < size; i++)
        if (ranks[i] != ranks[i - 1] + step)
            step = 0;
    SimparGroup g = {g_intern_string(axis), size, sched->members->len, step, FALSE};
    g_array_append_vals(sched->members, ranks, size);
    g_array_append_val(sched->groups, g);
    return sched->groups->len - 1;
}

void
simpar_schedule_set_group_idle(SimparSchedule *sched, guint group)
{
    g_return_if_fail(group < sched->groups->len);
    g_array_index(sched->groups, SimparGroup, group).idle = TRUE;
}

guint
simpar_schedule_add_op(SimparSchedule *sched, const SimparOp *op)
{
    g_return_val_if_fail(op->rank < sched->n_ranks, G_MAXUINT);
    g_return_val_if_fail(op->stream < sched->streams->len, G_MAXUINT);
    SimparOp copy = *op;
    copy.name = g_intern_string(op->name != NULL ? op->name : simpar_op_kind_name(op->kind));
    copy.dep_first = sched->deps->len;
    copy.n_deps = 0;
    guint index = sched->ops->len;
    g_array_append_val(sched->ops, copy);
    g_array_append_val(sched->rank_ops[op->rank], index);
    return index;
}

/* Deps of an op must be added right after the op, before the next op is added: each op's deps
 * are one contiguous run of the dep array. */
void
simpar_schedule_add_dep(SimparSchedule *sched, guint op, guint first)
{
    g_return_if_fail(op == sched->ops->len - 1);
    g_return_if_fail(first < op);
    SimparOp *o = &g_array_index(sched->ops, SimparOp, op);
    g_return_if_fail(g_array_index(sched->ops, SimparOp, first).rank == o->rank);
    for (guint i = 0; i < o->n_deps; i++)
        if (g_array_index(sched->deps, guint, o->dep_first + i) == first)
            return;
    g_array_append_val(sched->deps, first);
    o->n_deps++;
}

void
simpar_schedule_add_shard(SimparSchedule *sched, const SimparShard *shard)
{
    g_return_if_fail(shard->rank < sched->n_ranks);
    SimparShard copy = *shard;
    copy.tensor = g_intern_string(shard->tensor);
    g_array_append_val(sched->shards, copy);
}

const SimparShard *
simpar_schedule_find_shard(const SimparSchedule *sched, guint rank, const char *tensor)
{
    guint n;
    const SimparShard *sh = simpar_schedule_shards(sched, &n);
    for (guint i = 0; i < n; i++)
        if (sh[i].rank == rank && g_str_equal(sh[i].tensor, tensor))
            return &sh[i];
    return NULL;
}

const SimparShard *
simpar_schedule_shards(const SimparSchedule *sched, guint *n)
{
    *n = sched->shards->len;
    return (const SimparShard *) sched->shards->data; /* (transfer none) */
}

SimparRankFacts *
simpar_schedule_rank_facts(const SimparSchedule *sched)
{
    SimparRankFacts *out = g_new0(SimparRankFacts, simpar_schedule_n_ranks(sched));
    guint n;
    const SimparShard *sh = simpar_schedule_shards(sched, &n);
    const char *x = g_intern_static_string("x"), *dy = g_intern_static_string("dy");
    const char *experts = g_intern_static_string("moe.experts");
    /* an MoE layer's inputs from its MoE block (tp-moe.c): activations, not parameters */
    const char *moe_y = g_intern_static_string("moe.y"), *moe_dx = g_intern_static_string("moe.dx");
    for (guint i = 0; i < n; i++) {
        if (sh[i].role != SIMPAR_SHARD_INPUT || sh[i].tensor == moe_y || sh[i].tensor == moe_dx)
            continue;
        if (sh[i].tensor == x)
            out[sh[i].rank].act_elems = sh[i].rows * sh[i].cols;
        else if (sh[i].tensor != dy)
            out[sh[i].rank].layer_params += sh[i].rows * sh[i].cols;
        if (sh[i].tensor == experts)
            out[sh[i].rank].expert_params += sh[i].rows * sh[i].cols;
    }
    return out; /* (transfer full) */
}

guint
simpar_schedule_n_ops(const SimparSchedule *sched)
{
    return sched->ops->len;
}

const SimparOp *
simpar_schedule_op(const SimparSchedule *sched, guint i)
{
    g_return_val_if_fail(i < sched->ops->len, NULL);
    return &g_array_index(sched->ops, SimparOp, i); /* (transfer none) */
}

const guint *
simpar_schedule_deps(const SimparSchedule *sched, const SimparOp *op)
{
    return &g_array_index(sched->deps, guint, op->dep_first); /* (transfer none) */
}

const guint *
simpar_schedule_rank_ops(const SimparSchedule *sched, guint rank, guint *n)
{
    g_return_val_if_fail(rank < sched->n_ranks, NULL);
    *n = sched->rank_ops[rank]->len;
    return (const guint *) sched->rank_ops[rank]->data; /* (transfer none) */
}

guint
simpar_schedule_n_buffers(const SimparSchedule *sched)
{
    return sched->buffers->len;
}

const SimparBuffer *
simpar_schedule_buffer(const SimparSchedule *sched, guint i)
{
    g_return_val_if_fail(i < sched->buffers->len, NULL);
    return &g_array_index(sched->buffers, SimparBuffer, i); /* (transfer none) */
}

guint
simpar_schedule_n_groups(const SimparSchedule *sched)
{
    return sched->groups->len;
}

const SimparGroup *
simpar_schedule_group(const SimparSchedule *sched, guint i)
{
    g_return_val_if_fail(i < sched->groups->len, NULL);
    return &g_array_index(sched->groups, SimparGroup, i); /* (transfer none) */
}

const guint *
simpar_schedule_group_ranks(const SimparSchedule *sched, guint group)
{
    const SimparGroup *g = simpar_schedule_group(sched, group);
    return &g_array_index(sched->members, guint, g->first); /* (transfer none) */
}

guint
simpar_schedule_group_of_pair(const SimparSchedule *sched, guint a, guint b)
{
    for (guint g = 0; g < simpar_schedule_n_groups(sched); g++) {
        const guint *ranks = simpar_schedule_group_ranks(sched, g);
        gboolean has_a = FALSE, has_b = FALSE;
        for (guint i = 0; i < simpar_schedule_group(sched, g)->size; i++)
            has_a |= ranks[i] == a, has_b |= ranks[i] == b;
        if (has_a && has_b)
            return g;
    }
    return G_MAXUINT;
}

guint
simpar_schedule_n_streams(const SimparSchedule *sched)
{
    return sched->streams->len;
}

const char *
simpar_schedule_stream_name(const SimparSchedule *sched, guint stream)
{
    g_return_val_if_fail(stream < sched->streams->len, NULL);
    return g_ptr_array_index(sched->streams, stream);
}

guint
simpar_group_index(const SimparSchedule *sched, guint group, guint rank)
{
    const SimparGroup *g = simpar_schedule_group(sched, group);
    const guint *ranks = simpar_schedule_group_ranks(sched, group);
    if (g->step > 0) {
        guint i = rank >= ranks[0] && (rank - ranks[0]) % g->step == 0 ? (rank - ranks[0]) / g->step
                                                                       : G_MAXUINT;
        return i < g->size ? i : G_MAXUINT;
    }
    for (guint i = 0; i < g->size; i++)
        if (ranks[i] == rank)
            return i;
    return G_MAXUINT;
}

gsize
simpar_op_coll_elems(const SimparSchedule *sched, const SimparOp *op)
{
    g_return_val_if_fail(op->kind == SIMPAR_OP_COLLECTIVE, 0);
    g_return_val_if_fail(op->u.coll.group < simpar_schedule_n_groups(sched), 0);
    const SimparColl *c = &op->u.coll;
    guint size = simpar_schedule_group(sched, c->group)->size;
    switch (c->kind) {
    case SIMPAR_COLL_ALL_GATHER:
    case SIMPAR_COLL_REDUCE_SCATTER:
    case SIMPAR_COLL_ALL_TO_ALL:
        return c->count * size;
    default:
        return c->count;
    }
}

double
simpar_coll_busbw_factor(SimparCollKind kind, guint n)
{
    g_return_val_if_fail(n > 0, 0.0);
    switch (kind) {
    case SIMPAR_COLL_ALL_REDUCE:
        return 2.0 * (n - 1) / n;
    case SIMPAR_COLL_BROADCAST:
    case SIMPAR_COLL_REDUCE:
        return 1.0;
    case SIMPAR_COLL_ALL_GATHER:
    case SIMPAR_COLL_REDUCE_SCATTER:
    case SIMPAR_COLL_ALL_TO_ALL:
    default:
        return (double) (n - 1) / n;
    }
}

const char *
simpar_coll_kind_name(SimparCollKind kind)
{
    static const char *const names[SIMPAR_N_COLL_KINDS] = {
        "all-reduce", "all-gather", "reduce-scatter", "broadcast", "reduce", "all-to-all",
    };
    g_return_val_if_fail(kind < SIMPAR_N_COLL_KINDS, "?");
    return names[kind];
}

/* The op kinds: each one's name (the trace's category, the measured files' "kind"), class and
 * kernel class (the bandwidth it streams its bytes at; SIMPAR_KCLASS_N: not such a kernel). */
static const struct {
    const char *name;
    SimparOpClass klass;
    SimparKernelClass kclass;
} op_kinds[SIMPAR_N_OP_KINDS] = {
    [SIMPAR_OP_GEMM] = {"gemm", SIMPAR_OP_CLASS_GEMM, SIMPAR_KCLASS_N},
    [SIMPAR_OP_LN_STATS] = {"ln-stats", SIMPAR_OP_CLASS_KERNELS, SIMPAR_KCLASS_NORM},
    [SIMPAR_OP_LN_APPLY] = {"ln-apply", SIMPAR_OP_CLASS_KERNELS, SIMPAR_KCLASS_NORM},
    [SIMPAR_OP_LN_BWD_STATS] = {"ln-bwd-stats", SIMPAR_OP_CLASS_KERNELS, SIMPAR_KCLASS_NORM},
    [SIMPAR_OP_LN_BWD_APPLY] = {"ln-bwd-apply", SIMPAR_OP_CLASS_KERNELS, SIMPAR_KCLASS_NORM},
    [SIMPAR_OP_BIAS_ADD] = {"bias-add", SIMPAR_OP_CLASS_KERNELS, SIMPAR_KCLASS_STREAM},
    [SIMPAR_OP_BIAS_GRAD] = {"bias-grad", SIMPAR_OP_CLASS_KERNELS, SIMPAR_KCLASS_NORM},
    [SIMPAR_OP_GELU] = {"gelu", SIMPAR_OP_CLASS_KERNELS, SIMPAR_KCLASS_ACTIVATION},
    [SIMPAR_OP_GELU_BWD] = {"gelu-bwd", SIMPAR_OP_CLASS_KERNELS, SIMPAR_KCLASS_ACTIVATION},
    [SIMPAR_OP_SWIGLU] = {"swiglu", SIMPAR_OP_CLASS_KERNELS, SIMPAR_KCLASS_ACTIVATION},
    [SIMPAR_OP_SWIGLU_BWD] = {"swiglu-bwd", SIMPAR_OP_CLASS_KERNELS, SIMPAR_KCLASS_ACTIVATION},
    [SIMPAR_OP_PACK_COLS] = {"pack-cols", SIMPAR_OP_CLASS_KERNELS, SIMPAR_KCLASS_STREAM},
    [SIMPAR_OP_UNPACK_COLS] = {"unpack-cols", SIMPAR_OP_CLASS_KERNELS, SIMPAR_KCLASS_STREAM},
    [SIMPAR_OP_DROPOUT] = {"dropout", SIMPAR_OP_CLASS_KERNELS, SIMPAR_KCLASS_DROPOUT},
    [SIMPAR_OP_DROPOUT_BWD] = {"dropout-bwd", SIMPAR_OP_CLASS_KERNELS, SIMPAR_KCLASS_DROPOUT},
    [SIMPAR_OP_ADD] = {"add", SIMPAR_OP_CLASS_KERNELS, SIMPAR_KCLASS_STREAM},
    [SIMPAR_OP_ATTENTION] = {"attention", SIMPAR_OP_CLASS_ATTENTION, SIMPAR_KCLASS_N},
    [SIMPAR_OP_ATTENTION_BWD] = {"attention-bwd", SIMPAR_OP_CLASS_ATTENTION, SIMPAR_KCLASS_N},
    [SIMPAR_OP_ATTN_BLOCK] = {"attn-block", SIMPAR_OP_CLASS_ATTENTION, SIMPAR_KCLASS_N},
    [SIMPAR_OP_ATTN_MERGE] = {"attn-merge", SIMPAR_OP_CLASS_ATTENTION, SIMPAR_KCLASS_STREAM},
    [SIMPAR_OP_ATTN_BLOCK_BWD] = {"attn-block-bwd", SIMPAR_OP_CLASS_ATTENTION, SIMPAR_KCLASS_N},
    [SIMPAR_OP_COLLECTIVE] = {"collective", SIMPAR_OP_CLASS_COLLECTIVE, SIMPAR_KCLASS_N},
    [SIMPAR_OP_SEND] = {"send", SIMPAR_OP_CLASS_P2P, SIMPAR_KCLASS_N},
    [SIMPAR_OP_RECV] = {"recv", SIMPAR_OP_CLASS_P2P, SIMPAR_KCLASS_N},
    [SIMPAR_OP_EMBED] = {"embed", SIMPAR_OP_CLASS_EMBED_LOSS, SIMPAR_KCLASS_STREAM},
    [SIMPAR_OP_EMBED_BWD] = {"embed-bwd", SIMPAR_OP_CLASS_EMBED_LOSS, SIMPAR_KCLASS_STREAM},
    [SIMPAR_OP_XENT_MAX] = {"xent-max", SIMPAR_OP_CLASS_EMBED_LOSS, SIMPAR_KCLASS_SOFTMAX},
    [SIMPAR_OP_XENT_FWD] = {"xent-fwd", SIMPAR_OP_CLASS_EMBED_LOSS, SIMPAR_KCLASS_SOFTMAX},
    [SIMPAR_OP_XENT_LOSS] = {"xent-loss", SIMPAR_OP_CLASS_EMBED_LOSS, SIMPAR_KCLASS_SOFTMAX},
    [SIMPAR_OP_XENT_BWD] = {"xent-bwd", SIMPAR_OP_CLASS_EMBED_LOSS, SIMPAR_KCLASS_SOFTMAX},
    [SIMPAR_OP_ADAM] = {"adam", SIMPAR_OP_CLASS_OPTIMIZER, SIMPAR_KCLASS_OPTIMIZER},
    [SIMPAR_OP_BLOCK] = {"block", SIMPAR_OP_CLASS_BLOCK, SIMPAR_KCLASS_N},
    [SIMPAR_OP_MOE_GATE] = {"moe-gate", SIMPAR_OP_CLASS_KERNELS, SIMPAR_KCLASS_SOFTMAX},
    [SIMPAR_OP_MOE_GATE_BWD] = {"moe-gate-bwd", SIMPAR_OP_CLASS_KERNELS, SIMPAR_KCLASS_SOFTMAX},
    [SIMPAR_OP_MOE_DISPATCH] = {"moe-dispatch", SIMPAR_OP_CLASS_KERNELS, SIMPAR_KCLASS_STREAM},
    [SIMPAR_OP_MOE_DISPATCH_BWD] = {"moe-dispatch-bwd", SIMPAR_OP_CLASS_KERNELS,
                                    SIMPAR_KCLASS_STREAM},
    [SIMPAR_OP_MOE_COMBINE] = {"moe-combine", SIMPAR_OP_CLASS_KERNELS, SIMPAR_KCLASS_STREAM},
    [SIMPAR_OP_MOE_COMBINE_BWD] = {"moe-combine-bwd", SIMPAR_OP_CLASS_KERNELS,
                                   SIMPAR_KCLASS_STREAM},
    [SIMPAR_OP_MOE_SORT] = {"moe-sort", SIMPAR_OP_CLASS_KERNELS, SIMPAR_KCLASS_STREAM},
    [SIMPAR_OP_MOE_UNSORT] = {"moe-unsort", SIMPAR_OP_CLASS_KERNELS, SIMPAR_KCLASS_STREAM},
    [SIMPAR_OP_MOE_HOP] = {"moe-hop", SIMPAR_OP_CLASS_KERNELS, SIMPAR_KCLASS_STREAM},
    [SIMPAR_OP_MOE_HOP_BWD] = {"moe-hop-bwd", SIMPAR_OP_CLASS_KERNELS, SIMPAR_KCLASS_STREAM},
    [SIMPAR_OP_MOE_HOP_REDUCE] = {"moe-hop-reduce", SIMPAR_OP_CLASS_KERNELS, SIMPAR_KCLASS_STREAM},
    [SIMPAR_OP_MOE_HOP_REDUCE_BWD] = {"moe-hop-reduce-bwd", SIMPAR_OP_CLASS_KERNELS,
                                      SIMPAR_KCLASS_STREAM},
    /* a write-only pass over the gradient buffer: the streaming kernels' bandwidth */
    [SIMPAR_OP_ZERO_GRAD] = {"zero-grad", SIMPAR_OP_CLASS_OPTIMIZER, SIMPAR_KCLASS_STREAM},
};

const char *
simpar_op_kind_name(SimparOpKind kind)
{
    g_return_val_if_fail(kind < SIMPAR_N_OP_KINDS, "?");
    return op_kinds[kind].name;
}

SimparOpClass
simpar_op_class(SimparOpKind kind)
{
    g_return_val_if_fail(kind < SIMPAR_N_OP_KINDS, SIMPAR_OP_CLASS_KERNELS);
    return op_kinds[kind].klass;
}

SimparKernelClass
simpar_kernel_class_of(SimparOpKind kind)
{
    return kind < SIMPAR_N_OP_KINDS ? op_kinds[kind].kclass : SIMPAR_KCLASS_N;
}

const char *
simpar_op_class_name(SimparOpClass klass)
{
    static const char *const names[SIMPAR_N_OP_CLASSES] = {
        "gemm",      "attention",    "other kernels", "embedding + loss",
        "optimizer", "timed blocks", "collective",    "p2p",
    };
    g_return_val_if_fail(klass < SIMPAR_N_OP_CLASSES, "?");
    return names[klass];
}

gboolean
simpar_op_is_attention(SimparOpKind kind)
{
    return kind < SIMPAR_N_OP_KINDS && op_kinds[kind].klass == SIMPAR_OP_CLASS_ATTENTION;
}

gboolean
simpar_op_is_moe(SimparOpKind kind)
{
    return kind >= SIMPAR_OP_MOE_GATE && kind <= SIMPAR_OP_MOE_HOP_REDUCE_BWD;
}

guint64
simpar_cp_position(guint cp, guint rank, guint64 chunk, guint64 i)
{
    if (cp <= 1)
        return i;
    return i < chunk ? rank * chunk + i : (2 * (guint64) cp - 1 - rank) * chunk + (i - chunk);
}

/* splitmix64: a well-mixed 64-bit hash, so the mask of an element depends only on its global
 * coordinates and never on how the tensor is split across ranks. */
static guint64
schedule_mix64(guint64 z)
{
    z += G_GUINT64_CONSTANT(0x9e3779b97f4a7c15);
    z = (z ^ (z >> 30)) * G_GUINT64_CONSTANT(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * G_GUINT64_CONSTANT(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

gboolean
simpar_dropout_keep(guint64 seed, guint site, guint64 index, double p)
{
    if (p <= 0.0)
        return TRUE;
    guint64 h = schedule_mix64(schedule_mix64(seed ^ ((guint64) site << 56)) ^ index);
    double u = (double) (h >> 11) * (1.0 / 9007199254740992.0); /* 53 bits in [0, 1) */
    return u >= p;
}
