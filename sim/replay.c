/* replay.c - instance order, collective table and p2p pairs shared by the backends. */
#include "replay.h"
#include <string.h>

/* Appends the instances of `rank` for one layer and phase (SIMPAR_N_PHASES: every op) to its
 * streams, in program order. */
static void
replay_add_phase(SimparReplay *r, guint rank, guint layer, SimparPhase phase, guint *calls)
{
    const SimparSchedule *s = r->run->sched;
    guint n;
    const guint *ops = simpar_schedule_rank_ops(s, rank, &n);
    for (guint i = 0; i < n; i++) {
        const SimparOp *op = simpar_schedule_op(s, ops[i]);
        if (phase != SIMPAR_N_PHASES && op->phase != phase)
            continue;
        guint inst = layer * r->n_ops + ops[i];
        g_array_append_val(r->seq[rank * r->n_streams + op->stream], inst);
        if (op->kind == SIMPAR_OP_COLLECTIVE)
            r->coll_k[inst] = calls[op->u.coll.group]++;
    }
}

static void
replay_order(SimparReplay *r)
{
    guint n_groups = simpar_schedule_n_groups(r->run->sched);
    g_autofree guint *calls = g_new(guint, n_groups + 1); /* never NULL, even without groups */
    for (guint rank = 0; rank < r->n_ranks; rank++) {
        if (n_groups > 0) /* g_new(guint, 0) is NULL */
            memset(calls, 0, n_groups * sizeof *calls);
        if (r->run->n_layers == 1) { /* e.g. a whole step, whose phases interleave */
            replay_add_phase(r, rank, 0, SIMPAR_N_PHASES, calls);
        } else {
            for (guint l = 0; l < r->run->n_layers; l++)
                replay_add_phase(r, rank, l, SIMPAR_PHASE_FORWARD, calls);
            for (guint l = r->run->n_layers; l-- > 0;)
                replay_add_phase(r, rank, l, SIMPAR_PHASE_BACKWARD, calls);
        }
        for (guint g = 0; g < n_groups; g++)
            r->group_calls[g] = MAX(r->group_calls[g], calls[g]);
    }
}

/* What members of one collective share: its table entry. */
typedef struct {
    guint group, root;
    SimparCollKind kind;
    gsize count;
} ReplayCollKey;

static guint
replay_coll_hash(gconstpointer p)
{
    const ReplayCollKey *k = p;
    return ((k->group * 1000003u ^ k->root) * 1000003u ^ (guint) k->kind) * 1000003u ^
           (guint) (k->count ^ k->count >> 32);
}

static gboolean
replay_coll_equal(gconstpointer a, gconstpointer b)
{
    const ReplayCollKey *x = a, *y = b;
    return x->group == y->group && x->root == y->root && x->kind == y->kind && x->count == y->count;
}

/* The algorithm a run uses for a collective: the run's where it implements the kind (what it
 * runs as on the group), else the NCCL-like choice. */
static const SimparCollAlgo *
replay_coll_algo(const SimparRun *run, const SimparCollGroup *g, SimparCollKind kind, double bytes)
{
    gboolean forced = run->algo != NULL && (run->algo->kinds & (1u << kind)) != 0;
    return forced ? simpar_coll_runs_as(run->algo, g)
                  : simpar_coll_choose(kind, g, bytes, &run->coll);
}

const SimparCollAlgo *
simpar_run_coll_algo(const SimparRun *run, const SimparOp *op, SimparProto *proto)
{
    const SimparSchedule *s = run->sched;
    const SimparGroup *grp = simpar_schedule_group(s, op->u.coll.group);
    const guint *ranks = simpar_schedule_group_ranks(s, op->u.coll.group);
    g_autofree guint *gpus = g_new(guint, grp->size);
    for (guint i = 0; i < grp->size; i++)
        gpus[i] = run->gpus[ranks[i]];
    SimparCollGroup g = {grp->size, gpus, run->net};
    double bytes =
        (double) simpar_op_coll_elems(s, op) * simpar_dtype_size(simpar_schedule_dtype(s));
    const SimparCollAlgo *algo = replay_coll_algo(run, &g, op->u.coll.kind, bytes);
    if (proto != NULL)
        *proto = simpar_coll_proto(algo, op->u.coll.kind, &g, bytes, op->u.coll.root, &run->coll);
    return algo; /* (transfer none) */
}

/* Members of one collective share its table entry: same group, kind, count and root. */
static guint
replay_coll_key(SimparReplay *r, GHashTable *seen, const SimparOp *op)
{
    const SimparSchedule *s = r->run->sched;
    const SimparColl *c = &op->u.coll;
    ReplayCollKey key = {c->group, c->root, c->kind, c->count};
    gpointer found;
    if (g_hash_table_lookup_extended(seen, &key, NULL, &found))
        return GPOINTER_TO_UINT(found);

    const SimparGroup *g = simpar_schedule_group(s, c->group);
    const guint *ranks = simpar_schedule_group_ranks(s, c->group);
    guint *gpus = g_new(guint, g->size);
    for (guint i = 0; i < g->size; i++)
        gpus[i] = r->run->gpus[ranks[i]];
    SimparReplayColl rc = {
        .group = {g->size, gpus, r->run->net},
        .sched_group = c->group,
        .kind = c->kind,
        .bytes = (double) simpar_op_coll_elems(s, op) * simpar_dtype_size(simpar_schedule_dtype(s)),
        .root = c->root,
        .idle = g->idle,
    };
    rc.algo = replay_coll_algo(r->run, &rc.group, rc.kind, rc.bytes);
    rc.time_s = g->size < 2
                    ? 0
                    : rc.algo->closed_form(rc.kind, &rc.group, rc.bytes, rc.root, &r->run->coll);
    g_array_append_val(r->colls, rc);
    guint idx = r->colls->len - 1;
    g_hash_table_insert(seen, g_memdup2(&key, sizeof key), GUINT_TO_POINTER(idx));
    return idx;
}

static void
replay_colls(SimparReplay *r)
{
    g_autoptr(GHashTable) seen =
        g_hash_table_new_full(replay_coll_hash, replay_coll_equal, g_free, NULL);
    for (guint i = 0; i < r->n_ops; i++) {
        const SimparOp *op = simpar_schedule_op(r->run->sched, i);
        r->coll_of_op[i] =
            op->kind == SIMPAR_OP_COLLECTIVE ? replay_coll_key(r, seen, op) : G_MAXUINT;
    }
}

/* ------------------------------------------------------------------------- point-to-point */

typedef struct {
    guint src, dst, tag, op;
} ReplayEnd;

static int
replay_cmp(guint a, guint b)
{
    return a < b ? -1 : a > b;
}

/* By (sender, receiver, tag), then issue order: equal keys pair up in order. */
static int
replay_end_cmp(gconstpointer pa, gconstpointer pb)
{
    const ReplayEnd *a = pa, *b = pb;
    int c = replay_cmp(a->src, b->src);
    c = c != 0 ? c : replay_cmp(a->dst, b->dst);
    c = c != 0 ? c : replay_cmp(a->tag, b->tag);
    return c != 0 ? c : replay_cmp(a->op, b->op);
}

/* Every send to its recv, FIFO per (sender, receiver, tag) as the schedule check pairs them. */
static void
replay_pair(SimparReplay *r, GArray *sends)
{
    g_autoptr(GArray) recvs = g_array_new(FALSE, FALSE, sizeof(ReplayEnd));
    for (guint i = 0; i < r->n_ops; i++) {
        const SimparOp *op = simpar_schedule_op(r->run->sched, i);
        r->p2p_peer[i] = r->p2p_chan[i] = G_MAXUINT;
        ReplayEnd e = {op->rank, op->u.p2p.peer, op->u.p2p.tag, i};
        if (op->kind == SIMPAR_OP_SEND)
            g_array_append_val(sends, e);
        if (op->kind == SIMPAR_OP_RECV)
            e.src = op->u.p2p.peer, e.dst = op->rank, g_array_append_val(recvs, e);
    }
    g_array_sort(sends, replay_end_cmp);
    g_array_sort(recvs, replay_end_cmp);
    g_assert(sends->len == recvs->len); /* the schedule check matched them */
    for (guint k = 0; k < sends->len; k++) {
        const ReplayEnd *s = &g_array_index(sends, ReplayEnd, k);
        const ReplayEnd *v = &g_array_index(recvs, ReplayEnd, k);
        g_assert(s->src == v->src && s->dst == v->dst && s->tag == v->tag);
        r->p2p_peer[s->op] = v->op, r->p2p_peer[v->op] = s->op;
    }
}

/* Channel keys: src = sender stream, dst = receiver stream, op = the send. */
static void
replay_channels(SimparReplay *r, GArray *sends)
{
    for (guint k = 0; k < sends->len; k++) {
        ReplayEnd *e = &g_array_index(sends, ReplayEnd, k);
        guint recv = r->p2p_peer[e->op];
        e->src = simpar_replay_stream(r, e->op), e->dst = simpar_replay_stream(r, recv);
        e->tag = 0;
    }
    g_array_sort(sends, replay_end_cmp);
    for (guint k = 0; k < sends->len; k++) {
        const ReplayEnd *e = &g_array_index(sends, ReplayEnd, k);
        const ReplayEnd *prev = k > 0 ? e - 1 : NULL;
        if (prev == NULL || prev->src != e->src || prev->dst != e->dst)
            r->n_chans++;
        r->p2p_chan[e->op] = r->p2p_chan[r->p2p_peer[e->op]] = r->n_chans - 1;
    }
}

/* Both ends of every channel issue its messages in the same order, so a FIFO mailbox per
 * channel pairs them as the schedule does. */
static void
replay_check_channels(const SimparReplay *r)
{
    g_autofree guint *next = g_new0(guint, 2 * (gsize) r->n_chans);
    g_autofree guint *k = g_new(guint, r->n_instances);
    for (guint s = 0; s < r->n_ranks * r->n_streams; s++) {
        for (guint i = 0; i < r->seq[s]->len; i++) {
            guint inst = g_array_index(r->seq[s], guint, i), op = inst % r->n_ops;
            if (r->p2p_chan[op] != G_MAXUINT)
                k[inst] = next[2 * r->p2p_chan[op] +
                               (simpar_replay_op(r, inst)->kind == SIMPAR_OP_RECV)]++;
        }
    }
    for (guint inst = 0; inst < r->n_instances; inst++) {
        guint op = inst % r->n_ops;
        if (r->p2p_chan[op] != G_MAXUINT && k[inst] != k[inst - op + r->p2p_peer[op]])
            g_error("send/recv '%s' of rank %u: its two ends issue channel %u in different "
                    "orders (this layer order cannot run)",
                    simpar_replay_op(r, inst)->name, simpar_replay_op(r, inst)->rank,
                    r->p2p_chan[op]);
    }
}

static void
replay_p2p(SimparReplay *r)
{
    g_autoptr(GArray) sends = g_array_new(FALSE, FALSE, sizeof(ReplayEnd));
    replay_pair(r, sends);
    replay_channels(r, sends);
    if (r->n_chans > 0)
        replay_check_channels(r);
}

/* --------------------------------------------------------------------------------- the replay */

SimparReplay *
simpar_replay_new(const SimparRun *run)
{
    g_return_val_if_fail(run->n_layers >= 1, NULL);
    SimparReplay *r = g_new0(SimparReplay, 1);
    r->run = run;
    r->n_ops = simpar_schedule_n_ops(run->sched);
    r->n_streams = simpar_schedule_n_streams(run->sched);
    r->n_ranks = simpar_schedule_n_ranks(run->sched);
    r->n_instances = r->n_ops * run->n_layers;
    r->seq = g_new(GArray *, r->n_ranks * r->n_streams);
    for (guint i = 0; i < r->n_ranks * r->n_streams; i++)
        r->seq[i] = g_array_new(FALSE, FALSE, sizeof(guint));
    r->coll_k = g_new0(guint, r->n_instances);
    r->coll_of_op = g_new(guint, r->n_ops);
    r->colls = g_array_new(FALSE, FALSE, sizeof(SimparReplayColl));
    r->group_calls = g_new0(guint, simpar_schedule_n_groups(run->sched));
    r->p2p_peer = g_new(guint, r->n_ops);
    r->p2p_chan = g_new(guint, r->n_ops);
    replay_order(r);
    replay_colls(r);
    replay_p2p(r);
    return r; /* (transfer full) */
}

void
simpar_replay_free(SimparReplay *r)
{
    if (r == NULL)
        return;
    for (guint i = 0; i < r->n_ranks * r->n_streams; i++)
        g_array_free(r->seq[i], TRUE);
    for (guint i = 0; i < r->colls->len; i++) {
        SimparReplayColl *c = &g_array_index(r->colls, SimparReplayColl, i);
        g_free((guint *) c->group.gpus);
        g_clear_pointer(&c->exp, simpar_expansion_free);
    }
    g_array_free(r->colls, TRUE);
    g_free(r->seq);
    g_free(r->coll_k);
    g_free(r->coll_of_op);
    g_free(r->group_calls);
    g_free(r->p2p_peer);
    g_free(r->p2p_chan);
    g_free(r);
}

const SimparOp *
simpar_replay_op(const SimparReplay *r, guint instance)
{
    return simpar_schedule_op(r->run->sched, instance % r->n_ops); /* (transfer none) */
}

const SimparExpansion *
simpar_replay_expansion(SimparReplay *r, guint coll)
{
    SimparReplayColl *c = &g_array_index(r->colls, SimparReplayColl, coll);
    if (c->exp == NULL) {
        c->exp = simpar_expansion_new(c->group.n);
        c->algo->expand(c->kind, &c->group, c->bytes, c->root, &r->run->coll, c->exp);
    }
    return c->exp; /* (transfer none) */
}

GArray *
simpar_replay_member_xfers(SimparReplay *r, guint coll, guint m)
{
    const SimparReplayColl *c = &g_array_index(r->colls, SimparReplayColl, coll);
    GArray *out = g_array_new(FALSE, FALSE, sizeof(SimparXfer));
    if (c->algo->fuse != NULL)
        c->algo->fuse(c->kind, &c->group, c->bytes, &r->run->coll, m, out);
    else
        simpar_expansion_fuse(simpar_replay_expansion(r, coll), m, out);
    return out; /* (transfer full) */
}

guint
simpar_replay_stream(const SimparReplay *r, guint instance)
{
    const SimparOp *op = simpar_replay_op(r, instance);
    return op->rank * r->n_streams + op->stream;
}

double
simpar_replay_p2p_bytes(const SimparReplay *r, const SimparOp *op)
{
    return (double) op->u.p2p.count * simpar_dtype_size(simpar_schedule_dtype(r->run->sched));
}
