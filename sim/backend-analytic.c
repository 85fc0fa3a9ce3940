/* backend-analytic.c - the schedule on an idle network, without SimGrid.
 *
 * A worklist of streams, first in first out: a stream advances as far as its ops' inputs
 * allow, then parks until the one thing it waits for has happened: a dep's end (it is woken
 * when that instance ends), the other members of its collective or the peer of its send/recv
 * (woken when the last of them arrives and completes it). Every stream is therefore visited
 * once per event it waits for, which keeps long cross-rank chains (pipelines) linear.
 *
 * An op arrives when its stream predecessor and its deps have ended. A compute op (BLOCK
 * included) lasts its compute_s. A collective instance waits for all of its members; then, in
 * fused mode (the default), it starts when the last member arrived and ends for all of them a
 * closed form later; in exact mode its expansion is evaluated from each member's own arrival
 * (simpar_expansion_eval_idle), which is what the SimGrid backend's exact mode computes on an
 * idle network. A send and its recv are one rendezvous transfer: it starts when both have
 * arrived and lasts route latency + bytes / route bandwidth; both spans end with it.
 *
 * Deterministic: every span is a function of its inputs alone (maxima and sums), whatever the
 * order the worklist visits streams in.
 */
#include "replay.h"

typedef struct {
    guint arrived; /* members that reached it */
    guint *inst;   /* by position in the group: the member's instance */
    double *ready; /* by position in the group: when the member reached it */
} AnalyticColl;

typedef struct {
    SimparReplay *r;
    SimparSpan *spans;      /* start >= 0: arrived; end >= 0: ended */
    guint *pos;             /* per (rank, stream): next position in its sequence */
    double *free_at;        /* per (rank, stream): when its previous op ended */
    AnalyticColl **pending; /* per group: the collective instances, by sequence number */
    guint *waiters;         /* per instance: first stream parked until it ends, or G_MAXUINT */
    guint *next_waiter;     /* per stream: next stream parked on the same instance */
    guint *queue;           /* ring of streams to advance */
    guint head, len;
    gboolean *queued;   /* per stream: in the ring */
    SimparRoute *route; /* per p2p channel, looked up on first use (bw_Bps 0 before) */
} Analytic;

static void
analytic_push(Analytic *a, guint s)
{
    guint n = a->r->n_ranks * a->r->n_streams;
    if (a->queued[s])
        return;
    a->queued[s] = TRUE;
    a->queue[(a->head + a->len++) % n] = s;
}

/* `inst` has its end: wakes the streams parked on it, and its own stream unless that is `self`
 * (the stream being advanced). */
static void
analytic_ended(Analytic *a, guint inst, guint self)
{
    for (guint w = a->waiters[inst], next; w != G_MAXUINT; w = next) {
        next = a->next_waiter[w];
        analytic_push(a, w);
    }
    a->waiters[inst] = G_MAXUINT;
    guint own = simpar_replay_stream(a->r, inst);
    if (own != self)
        analytic_push(a, own);
}

/* The first dep of `inst` that has not ended, or G_MAXUINT when all have; then *t is the
 * latest of their ends and its own value. */
static guint
analytic_blocker(const Analytic *a, guint inst, double *t)
{
    const SimparReplay *r = a->r;
    const SimparOp *op = simpar_replay_op(r, inst);
    const guint *deps = simpar_schedule_deps(r->run->sched, op);
    guint base = inst - inst % r->n_ops;
    for (guint d = 0; d < op->n_deps; d++) {
        double end = a->spans[base + deps[d]].end;
        if (end < 0)
            return base + deps[d];
        *t = MAX(*t, end);
    }
    return G_MAXUINT;
}

/* Gives every member of a complete collective instance its span. */
static void
analytic_finish(Analytic *a, guint coll, AnalyticColl *c, guint self)
{
    const SimparReplayColl *rc = &g_array_index(a->r->colls, SimparReplayColl, coll);
    guint n = rc->group.n;
    if (a->r->run->mode == SIMPAR_COLL_MODE_EXACT && n > 1 && !rc->idle) {
        g_autofree double *end = g_new(double, n);
        if (rc->algo->eval_idle != NULL) /* the same result without the expansion's memory */
            rc->algo->eval_idle(rc->kind, &rc->group, rc->bytes, &a->r->run->coll, c->ready, end);
        else
            simpar_expansion_eval_idle(simpar_replay_expansion(a->r, coll), &rc->group, c->ready,
                                       end);
        for (guint m = 0; m < n; m++)
            a->spans[c->inst[m]] = (SimparSpan){c->ready[m], end[m]};
    } else {
        double start = 0;
        for (guint m = 0; m < n; m++)
            start = MAX(start, c->ready[m]);
        for (guint m = 0; m < n; m++)
            a->spans[c->inst[m]] = (SimparSpan){c->ready[m], start + rc->time_s};
    }
    for (guint m = 0; m < n; m++)
        analytic_ended(a, c->inst[m], self);
}

/* Registers one member at a collective; the last one to arrive completes it. */
static void
analytic_arrive(Analytic *a, guint inst, double ready, guint self)
{
    const SimparReplay *r = a->r;
    const SimparOp *op = simpar_replay_op(r, inst);
    guint coll = r->coll_of_op[inst % r->n_ops], g = op->u.coll.group;
    guint n = simpar_schedule_group(r->run->sched, g)->size;
    AnalyticColl *c = &a->pending[g][r->coll_k[inst]];
    if (c->inst == NULL)
        c->inst = g_new(guint, n), c->ready = g_new(double, n);
    guint pos = simpar_group_index(r->run->sched, g, op->rank);
    c->inst[pos] = inst, c->ready[pos] = ready;
    a->spans[inst].start = ready;
    if (++c->arrived < n)
        return;
    analytic_finish(a, coll, c, self);
    g_clear_pointer(&c->inst, g_free);
    g_clear_pointer(&c->ready, g_free);
}

/* A send or recv arrives; with its peer already there, the transfer ends both. */
static void
analytic_p2p(Analytic *a, guint inst, double ready, guint self)
{
    const SimparReplay *r = a->r;
    const SimparOp *op = simpar_replay_op(r, inst);
    guint op_index = inst % r->n_ops, peer = inst - op_index + r->p2p_peer[op_index];
    a->spans[inst].start = ready;
    if (a->spans[peer].start < 0)
        return; /* the peer's arrival completes the transfer */
    const SimparOp *send = op->kind == SIMPAR_OP_SEND ? op : simpar_replay_op(r, peer);
    SimparRoute *route = &a->route[r->p2p_chan[op_index]];
    if (route->bw_Bps == 0)
        simpar_net_route(r->run->net, r->run->gpus[send->rank], r->run->gpus[send->u.p2p.peer],
                         route);
    double start = MAX(ready, a->spans[peer].start);
    double end = start + route->lat_s + simpar_replay_p2p_bytes(r, op) / route->bw_Bps;
    a->spans[inst].end = a->spans[peer].end = end;
    analytic_ended(a, inst, self);
    analytic_ended(a, peer, self);
}

/* `inst` of stream `s` has arrived at `ready`: gives it its span, or registers it. */
static void
analytic_start(Analytic *a, guint inst, double ready, guint s)
{
    const SimparOp *op = simpar_replay_op(a->r, inst);
    switch (op->kind) {
    case SIMPAR_OP_COLLECTIVE:
        analytic_arrive(a, inst, ready, s);
        break;
    case SIMPAR_OP_SEND:
    case SIMPAR_OP_RECV:
        analytic_p2p(a, inst, ready, s);
        break;
    default: /* compute: kernels, timed blocks */
        a->spans[inst] = (SimparSpan){ready, ready + a->r->run->compute_s[inst % a->r->n_ops]};
        analytic_ended(a, inst, s);
        break;
    }
}

/* Advances one stream until it ends or parks. */
static void
analytic_advance(Analytic *a, guint s)
{
    GArray *seq = a->r->seq[s];
    while (a->pos[s] < seq->len) {
        guint inst = g_array_index(seq, guint, a->pos[s]);
        const SimparSpan *sp = &a->spans[inst];
        if (sp->start < 0) {
            double ready = a->free_at[s];
            guint dep = analytic_blocker(a, inst, &ready);
            if (dep != G_MAXUINT) { /* parked on the dep: its end wakes this stream */
                a->next_waiter[s] = a->waiters[dep];
                a->waiters[dep] = s;
                return;
            }
            analytic_start(a, inst, ready, s);
        }
        if (sp->end < 0)
            return; /* its collective's members or its peer are missing: they wake it */
        a->free_at[s] = sp->end;
        a->pos[s]++;
    }
}

static void
analytic_init(Analytic *a, SimparReplay *r, SimparSpan *spans)
{
    guint n_streams = r->n_ranks * r->n_streams;
    guint n_groups = simpar_schedule_n_groups(r->run->sched);
    *a = (Analytic){.r = r,
                    .spans = spans,
                    .pos = g_new0(guint, n_streams),
                    .free_at = g_new0(double, n_streams),
                    .pending = g_new(AnalyticColl *, n_groups),
                    .waiters = g_new(guint, r->n_instances),
                    .next_waiter = g_new(guint, n_streams),
                    .queue = g_new(guint, n_streams),
                    .queued = g_new0(gboolean, n_streams),
                    .route = g_new0(SimparRoute, r->n_chans)};
    for (guint g = 0; g < n_groups; g++)
        a->pending[g] = g_new0(AnalyticColl, r->group_calls[g]);
    for (guint i = 0; i < r->n_instances; i++) {
        spans[i] = (SimparSpan){-1, -1};
        a->waiters[i] = G_MAXUINT;
    }
}

static void
analytic_clear(Analytic *a)
{
    guint n_groups = simpar_schedule_n_groups(a->r->run->sched);
    for (guint g = 0; g < n_groups; g++)
        g_free(a->pending[g]);
    g_free(a->pending);
    g_free(a->pos);
    g_free(a->free_at);
    g_free(a->waiters);
    g_free(a->next_waiter);
    g_free(a->queue);
    g_free(a->queued);
    g_free(a->route);
}

/* The schedule check proved that every stream runs to its end: a stream left behind is a bug. */
static void
analytic_check_done(const Analytic *a)
{
    const SimparReplay *r = a->r;
    for (guint s = 0; s < r->n_ranks * r->n_streams; s++) {
        if (a->pos[s] == r->seq[s]->len)
            continue;
        const SimparOp *op = simpar_replay_op(r, g_array_index(r->seq[s], guint, a->pos[s]));
        g_error("analytic backend: rank %u, stream '%s' never gets past op '%s' (%s)", op->rank,
                simpar_schedule_stream_name(r->run->sched, op->stream), op->name,
                simpar_op_kind_name(op->kind));
    }
}

void
simpar_backend_analytic_run(const SimparRun *run, SimparSpan *spans)
{
    g_autoptr(SimparReplay) r = simpar_replay_new(run);
    Analytic a;
    analytic_init(&a, r, spans);
    guint n_streams = r->n_ranks * r->n_streams;
    for (guint s = 0; s < n_streams; s++)
        analytic_push(&a, s);
    while (a.len > 0) {
        guint s = a.queue[a.head];
        a.head = (a.head + 1) % n_streams, a.len--;
        a.queued[s] = FALSE;
        analytic_advance(&a, s);
    }
    analytic_check_done(&a);
    analytic_clear(&a);
}
