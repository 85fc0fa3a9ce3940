/* backend-simgrid.c - the schedule on SimGrid: one actor per GPU stream.
 *
 * Compute ops (kernels, timed blocks) sleep for their modelled time; a collective is its
 * algorithm's expansion played on a mailbox per transfer (group, sequence number, sender,
 * receiver), so concurrent collectives of one group never take each other's messages; the
 * mailboxes "coll:<i>" are lent to transfers in flight and reused, not named per transfer
 * (SimGrid never frees a mailbox, and making one is a simcall). Exact mode posts every round;
 * fused mode posts one transfer per peer carrying all the bytes of the member's rounds (so
 * shared links see the whole load) and then waits out the rest of the closed form, which on an
 * idle network makes it equal to the closed form. A send and its recv are one blocking mailbox
 * transfer on the channel's mailbox "p2p:<channel>" (replay.h): SimGrid starts it when both
 * ends have posted, as NCCL's rendezvous does, and shares the links with all other traffic. A
 * stream waiting for an op of another stream (a dep) parks on its own semaphore, which the
 * actor that ends that op releases: one simcall on each side. With fused collectives, where
 * replay-quotient.c finds ranks of a few alike nodes that stand for the rest, only those run:
 * each sends to the rank standing in for its peer, the fabric links carry 1/fiber of their
 * bandwidth meanwhile, and every other rank's spans are its representative's.
 *
 * Must run inside a SimGrid actor (platform.c's driver): it creates the stream actors and
 * blocks until they have all finished; if they stop making progress (a deadlock, which the
 * schedule check rules out) it ends the process with g_error naming a blocked rank and op,
 * rather than hang. Spans are relative to the clock at the call.
 */
#include "platform.h"
#include "replay.h"
#include <math.h>
#include <simgrid/actor.h>
#include <simgrid/comm.h>
#include <simgrid/engine.h>
#include <simgrid/host.h>
#include <simgrid/link.h>
#include <simgrid/mailbox.h>
#include <simgrid/semaphore.h>
#include <stdio.h>

/* Member m's transfers of a fused collective: one per (peer, direction), built on first use. */
typedef struct {
    SimparXfer *xfers;
    guint n;
    gboolean built, shared; /* shared: idle holds the time with the links they share */
    double idle;            /* the slowest of them on an idle network */
} SimgridFused;

typedef struct _SimgridStream SimgridStream;

/* The mailbox lent to a collective's transfer (group, sequence number, sender -> receiver) while
 * it holds posts of one side that the other side has not matched yet; emptied, it goes back to
 * the spares. Each transfer thus has a mailbox of its own, as if named after it. */
typedef struct {
    guint group, k, src, dst;
    sg_mailbox_t mb;
    int queued; /* sends (> 0) or recvs (< 0) posted and not matched yet */
} SimgridRendezvous;

typedef struct {
    SimparReplay *r;
    SimparSpan *spans;
    gboolean *awaited; /* per op: an op of another stream depends on it */
    double t0;
    SimgridStream **by_stream; /* per (rank, stream): its actor's state, or NULL */
    sg_sem_t finished;         /* released by every stream actor at its end */
    sg_mailbox_t *chans;       /* per p2p channel */
    SimgridFused **fused;      /* per collective table entry: per member, or NULL */
    GHashTable *rendezvous;    /* the SimgridRendezvous in use (owned) */
    GPtrArray *spare;          /* the empty ones (owned), mailbox and all */
    guint n_mailboxes;         /* rendezvous made */
    guint64 progress;          /* ops ended so far: the driver's deadlock watch */
    const SimparQuotient *q;   /* the ranks simulated, or NULL for every rank */
} Simgrid;

struct _SimgridStream {
    Simgrid *sg;
    guint rank, stream;
    guint pos;         /* position in its sequence (where it is blocked, if it ever is) */
    double pending;    /* compute time not slept yet: runs of compute ops become one sleep */
    guint waiting_for; /* the instance it is parked for, or G_MAXUINT */
    sg_sem_t wake;     /* released when that instance ends */
    GArray *comms;     /* sg_comm_t scratch for rounds of more than a few transfers, or NULL */
};

/* No op ends for this long (simulated seconds) only when every actor waits forever: the
 * slowest link a platform may have (1 MB/s) moves a petabyte in that time. */
#define SIMGRID_WATCH_S 1e9

/* Sleeps the compute time accumulated so far, before anything another actor can observe. */
static void
simgrid_flush(SimgridStream *st)
{
    if (st->pending > 0)
        sg_actor_sleep_for(st->pending);
    st->pending = 0;
}

static char simgrid_payload; /* mailboxes need a non-NULL payload; nothing reads it */

static guint
simgrid_rendezvous_hash(gconstpointer p)
{
    const SimgridRendezvous *r = p;
    return ((r->group * 1000003u ^ r->k) * 1000003u ^ r->src) * 1000003u ^ r->dst;
}

static gboolean
simgrid_rendezvous_equal(gconstpointer a, gconstpointer b)
{
    const SimgridRendezvous *x = a, *y = b;
    return x->group == y->group && x->k == y->k && x->src == y->src && x->dst == y->dst;
}

/* A spare rendezvous with a new mailbox "coll:<i>". Making a mailbox is a simcall: other actors
 * run meanwhile. */
static void
simgrid_rendezvous_make(Simgrid *sg)
{
    char name[32];
    snprintf(name, sizeof name, "coll:%u", sg->n_mailboxes++);
    SimgridRendezvous *r = g_new0(SimgridRendezvous, 1);
    r->mb = sg_mailbox_by_name(name);
    g_ptr_array_add(sg->spare, r);
}

/* The mailbox of transfer (group, k, src -> dst) for a post of one side (`send` or recv), made
 * right after this call (no simcall in between): SimGrid handles simcalls in the order the
 * actors ran, so `queued` follows the mailbox's queue, and a post matching the last one queued
 * empties it. */
static sg_mailbox_t
simgrid_mailbox(Simgrid *sg, guint group, guint k, guint src, guint dst, gboolean send)
{
    SimgridRendezvous key = {group, k, src, dst, NULL, 0};
    SimgridRendezvous *r = g_hash_table_lookup(sg->rendezvous, &key);
    if (r == NULL && sg->spare->len == 0) {
        simgrid_rendezvous_make(sg);
        r = g_hash_table_lookup(sg->rendezvous, &key); /* the other side may have come */
    }
    if (r == NULL) {
        r = g_ptr_array_steal_index_fast(sg->spare, sg->spare->len - 1);
        r->group = group, r->k = k, r->src = src, r->dst = dst, r->queued = 0;
        g_hash_table_add(sg->rendezvous, r);
    }
    r->queued += send ? 1 : -1;
    if (r->queued == 0) { /* this post matches the last one queued: the mailbox is empty now */
        g_hash_table_steal(sg->rendezvous, r);
        g_ptr_array_add(sg->spare, r);
    }
    return r->mb;
}

/* Posts the transfers x[0..n) of member `m` and waits for all of them. */
static void
simgrid_xfers(SimgridStream *st, const SimparXfer *x, guint n, guint group, guint k, guint m)
{
    sg_comm_t local[16], *comms = local;
    if (n > G_N_ELEMENTS(local)) {
        if (st->comms == NULL)
            st->comms = g_array_new(FALSE, FALSE, sizeof(sg_comm_t));
        g_array_set_size(st->comms, n);
        comms = (sg_comm_t *) st->comms->data;
    }
    for (guint i = 0; i < n; i++) {
        if (x[i].send) {
            comms[i] = sg_mailbox_put_async(simgrid_mailbox(st->sg, group, k, m, x[i].peer, TRUE),
                                            &simgrid_payload, x[i].bytes);
        } else {
            static void *data;
            comms[i] =
                sg_mailbox_get_async(simgrid_mailbox(st->sg, group, k, x[i].peer, m, FALSE), &data);
        }
    }
    sg_comm_wait_all(comms, n);
}

static void
simgrid_coll_exact(SimgridStream *st, const SimparExpansion *e, guint group, guint k, guint m)
{
    for (guint i = e->member_first[m]; i < e->member_first[m + 1]; i++) {
        const SimparRound *rd = &g_array_index(e->rounds, SimparRound, i);
        if (rd->delay_s > 0)
            sg_actor_sleep_for(rd->delay_s);
        simgrid_xfers(st, &g_array_index(e->xfers, SimparXfer, rd->first), rd->n, group, k, m);
    }
}

/* Whether the collective's closed form prices the links its own transfers share (ring channels,
 * the hierarchical all-reduce, the pairwise all-to-all's rounds all at once): its fused
 * transfers share them too on an idle network, and their idle time must count that, or waiting
 * out the rest of the closed form after them would count it twice. */
static gboolean
simgrid_coll_shares(const SimparReplayColl *rc)
{
    return rc->algo->shares == SIMPAR_SHARES_ALWAYS ||
           (rc->algo->shares == SIMPAR_SHARES_CHANNELS &&
            simpar_coll_ring_channels(&rc->group, rc->bytes) > 1);
}

/* Every member's idle time of its fused transfers when all members' run at once, sharing
 * links (simpar_coll_hops_time over every member's sends). */
static void
simgrid_fused_shared(Simgrid *sg, guint coll)
{
    const SimparReplayColl *rc = &g_array_index(sg->r->colls, SimparReplayColl, coll);
    g_autoptr(GArray) hops = g_array_new(FALSE, FALSE, sizeof(SimparHop));
    for (guint m = 0; m < rc->group.n; m++) {
        g_autoptr(GArray) xfers = simpar_replay_member_xfers(sg->r, coll, m);
        for (guint i = 0; i < xfers->len; i++) {
            const SimparXfer *x = &g_array_index(xfers, SimparXfer, i);
            SimparHop h = {m, x->peer, x->bytes};
            if (x->send)
                g_array_append_val(hops, h);
        }
    }
    g_autofree double *t = g_new(double, MAX(hops->len, 1));
    simpar_coll_hops_time(&rc->group, (const SimparHop *) hops->data, hops->len, t);
    SimgridFused *f = sg->fused[coll];
    for (guint i = 0; i < hops->len; i++) {
        const SimparHop *h = &g_array_index(hops, SimparHop, i);
        f[h->src].idle = MAX(f[h->src].idle, t[i]);
        f[h->dst].idle = MAX(f[h->dst].idle, t[i]);
    }
    for (guint m = 0; m < rc->group.n; m++)
        f[m].shared = TRUE;
}

/* Member m's fused transfers of collective table entry `coll`, built on first use. */
static const SimgridFused *
simgrid_fused(Simgrid *sg, guint coll, guint m)
{
    const SimparReplayColl *rc = &g_array_index(sg->r->colls, SimparReplayColl, coll);
    if (sg->fused[coll] == NULL) {
        sg->fused[coll] = g_new0(SimgridFused, rc->group.n);
        if (simgrid_coll_shares(rc))
            simgrid_fused_shared(sg, coll);
    }
    SimgridFused *f = &sg->fused[coll][m];
    if (f->built)
        return f;
    GArray *xfers = simpar_replay_member_xfers(sg->r, coll, m);
    const guint *ranks = simpar_schedule_group_ranks(sg->r->run->sched, rc->sched_group);
    for (guint i = 0; i < xfers->len; i++) {
        SimparXfer *x = &g_array_index(xfers, SimparXfer, i);
        if (sg->q != NULL) /* the peer's simulated rank, a member too (replay-quotient.c) */
            x->peer =
                simpar_group_index(sg->r->run->sched, rc->sched_group, sg->q->rep[ranks[x->peer]]);
        guint src = rc->group.gpus[x->send ? m : x->peer];
        guint dst = rc->group.gpus[x->send ? x->peer : m];
        SimparRoute route;
        simpar_net_route(rc->group.net, src, dst, &route);
        if (!f->shared)
            f->idle = MAX(f->idle, route.lat_s + x->bytes / route.bw_Bps);
    }
    f->n = xfers->len;
    f->xfers = (SimparXfer *) g_array_free(xfers, FALSE);
    f->built = TRUE;
    return f;
}

static void
simgrid_coll_fused(SimgridStream *st, guint coll, guint group, guint k, guint m)
{
    const SimparReplayColl *rc = &g_array_index(st->sg->r->colls, SimparReplayColl, coll);
    const SimgridFused *f = simgrid_fused(st->sg, coll, m);
    simgrid_xfers(st, f->xfers, f->n, group, k, m);
    double rest = rc->time_s - f->idle; /* contention only ever adds to the idle transfer time */
    if (rest > 0)
        sg_actor_sleep_for(rest);
}

static void
simgrid_collective(SimgridStream *st, guint inst, const SimparOp *op)
{
    SimparReplay *r = st->sg->r;
    guint coll = r->coll_of_op[inst % r->n_ops];
    const SimparReplayColl *rc = &g_array_index(r->colls, SimparReplayColl, coll);
    if (rc->group.n < 2)
        return;
    if ((st->sg->q != NULL && st->sg->q->idle[coll]) || rc->idle) {
        sg_actor_sleep_for(rc->time_s);
        return;
    }
    guint m = simpar_group_index(r->run->sched, op->u.coll.group, st->rank);
    if (r->run->mode == SIMPAR_COLL_MODE_EXACT)
        simgrid_coll_exact(st, simpar_replay_expansion(r, coll), op->u.coll.group, r->coll_k[inst],
                           m);
    else
        simgrid_coll_fused(st, coll, op->u.coll.group, r->coll_k[inst], m);
}

/* One blocking transfer on the channel's mailbox: it starts when both ends have posted. */
static void
simgrid_p2p(SimgridStream *st, guint inst, const SimparOp *op)
{
    SimparReplay *r = st->sg->r;
    sg_mailbox_t mb = st->sg->chans[r->p2p_chan[inst % r->n_ops]];
    long bytes = (long) op->u.p2p.count * simpar_dtype_size(simpar_schedule_dtype(r->run->sched));
    if (op->kind == SIMPAR_OP_SEND)
        sg_mailbox_put(mb, &simgrid_payload, bytes);
    else
        (void) sg_mailbox_get(mb);
}

static void
simgrid_wait_deps(SimgridStream *st, guint inst, const SimparOp *op)
{
    Simgrid *sg = st->sg;
    const guint *deps = simpar_schedule_deps(sg->r->run->sched, op);
    guint base = inst - inst % sg->r->n_ops;
    for (guint d = 0; d < op->n_deps; d++) {
        guint dep = base + deps[d];
        if (sg->spans[dep].end >= 0)
            continue;
        simgrid_flush(st); /* may let other actors run: look again */
        if (sg->spans[dep].end >= 0)
            continue;
        st->waiting_for = dep; /* actors run one at a time: nothing ends dep before the park */
        sg_sem_acquire(st->wake);
        g_assert(sg->spans[dep].end >= 0);
    }
}

/* Records the span; wakes the rank's streams parked for this op. */
static void
simgrid_done(SimgridStream *st, guint inst, double start, double end)
{
    Simgrid *sg = st->sg;
    sg->progress++;
    if (!sg->awaited[inst % sg->r->n_ops]) {
        sg->spans[inst] = (SimparSpan){start - sg->t0, end - sg->t0};
        return;
    }
    simgrid_flush(st); /* `end` is now in the past */
    sg->spans[inst] = (SimparSpan){start - sg->t0, end - sg->t0};
    SimgridStream **rank = &sg->by_stream[st->rank * sg->r->n_streams];
    for (guint s = 0; s < sg->r->n_streams; s++) {
        if (rank[s] != NULL && rank[s]->waiting_for == inst) {
            rank[s]->waiting_for = G_MAXUINT;
            sg_sem_release(rank[s]->wake);
        }
    }
}

static void
simgrid_stream_main(int argc, char **argv)
{
    (void) argc, (void) argv;
    SimgridStream *st = sg_actor_self_get_data();
    Simgrid *sg = st->sg;
    GArray *seq = sg->r->seq[st->rank * sg->r->n_streams + st->stream];
    for (st->pos = 0; st->pos < seq->len; st->pos++) {
        guint inst = g_array_index(seq, guint, st->pos);
        const SimparOp *op = simpar_replay_op(sg->r, inst);
        simgrid_wait_deps(st, inst, op);
        if (op->kind == SIMPAR_OP_COLLECTIVE || op->kind == SIMPAR_OP_SEND ||
            op->kind == SIMPAR_OP_RECV) {
            simgrid_flush(st);
            double start = simgrid_get_clock();
            if (op->kind == SIMPAR_OP_COLLECTIVE)
                simgrid_collective(st, inst, op);
            else
                simgrid_p2p(st, inst, op);
            simgrid_done(st, inst, start, simgrid_get_clock());
        } else { /* compute: kernels, timed blocks */
            double start = simgrid_get_clock() + st->pending;
            st->pending += sg->r->run->compute_s[inst % sg->r->n_ops];
            simgrid_done(st, inst, start, simgrid_get_clock() + st->pending);
        }
    }
    simgrid_flush(st);
    sg_sem_release(sg->finished);
}

/* Host of GPU `gpu`: node<N>-gpu<G> in platform order (net->data is the host array). */
static sg_host_t
simgrid_host(const SimparRun *run, guint rank)
{
    const sg_host_t *hosts = run->net->data;
    return hosts[run->gpus[rank]];
}

static void
simgrid_state_init(Simgrid *sg, SimparReplay *r, SimparSpan *spans)
{
    const SimparRun *run = r->run;
    *sg = (Simgrid){.r = r,
                    .spans = spans,
                    .awaited = g_new0(gboolean, r->n_ops),
                    .t0 = simgrid_get_clock(),
                    .by_stream = g_new0(SimgridStream *, r->n_ranks * r->n_streams),
                    .finished = sg_sem_init(0),
                    .chans = g_new(sg_mailbox_t, r->n_chans),
                    .fused = g_new0(SimgridFused *, r->colls->len),
                    .rendezvous = g_hash_table_new_full(simgrid_rendezvous_hash,
                                                        simgrid_rendezvous_equal, g_free, NULL),
                    .spare = g_ptr_array_new_with_free_func(g_free)};
    for (guint i = 0; i < r->n_ops; i++) {
        const SimparOp *op = simpar_schedule_op(run->sched, i);
        const guint *deps = simpar_schedule_deps(run->sched, op);
        for (guint d = 0; d < op->n_deps; d++)
            sg->awaited[deps[d]] |= simpar_schedule_op(run->sched, deps[d])->stream != op->stream;
    }
    for (guint i = 0; i < r->n_instances; i++)
        spans[i] = (SimparSpan){-1, -1};
    for (guint c = 0; c < r->n_chans; c++) {
        char name[32];
        snprintf(name, sizeof name, "p2p:%u", c);
        sg->chans[c] = sg_mailbox_by_name(name);
    }
}

static void
simgrid_state_clear(Simgrid *sg)
{
    for (guint s = 0; s < sg->r->n_ranks * sg->r->n_streams; s++) {
        if (sg->by_stream[s] != NULL) {
            sg_sem_destroy(sg->by_stream[s]->wake);
            if (sg->by_stream[s]->comms != NULL)
                g_array_free(sg->by_stream[s]->comms, TRUE);
        }
    }
    for (guint c = 0; c < sg->r->colls->len; c++) {
        guint n = g_array_index(sg->r->colls, SimparReplayColl, c).group.n;
        for (guint m = 0; sg->fused[c] != NULL && m < n; m++)
            g_free(sg->fused[c][m].xfers);
        g_free(sg->fused[c]);
    }
    sg_sem_destroy(sg->finished);
    g_assert(g_hash_table_size(sg->rendezvous) == 0); /* every post met its other side */
    g_hash_table_unref(sg->rendezvous);
    g_ptr_array_unref(sg->spare);
    g_free(sg->awaited);
    g_free(sg->by_stream);
    g_free(sg->chans);
    g_free(sg->fused);
}

/* One actor per (rank, stream) with ops; returns how many. */
static guint
simgrid_start_actors(Simgrid *sg, SimgridStream *streams)
{
    const SimparReplay *r = sg->r;
    guint n_actors = 0;
    for (guint rank = 0; rank < r->n_ranks; rank++) {
        if (sg->q != NULL && sg->q->rep[rank] != rank)
            continue; /* its representative runs in its place */
        for (guint s = 0; s < r->n_streams; s++) {
            if (r->seq[rank * r->n_streams + s]->len == 0)
                continue;
            SimgridStream *st = &streams[n_actors++];
            *st = (SimgridStream){sg, rank, s, 0, 0, G_MAXUINT, sg_sem_init(0), NULL};
            sg->by_stream[rank * r->n_streams + s] = st;
            char name[64];
            snprintf(name, sizeof name, "rank%u-%s", rank,
                     simpar_schedule_stream_name(r->run->sched, s));
            sg_actor_t a = sg_actor_init(name, simgrid_host(r->run, rank));
            sg_actor_set_data(a, st);
            sg_actor_start(a, simgrid_stream_main, 0, NULL);
        }
    }
    return n_actors;
}

/* Waits for every stream actor; SIMGRID_WATCH_S simulated seconds without an op ending means
 * they all wait forever (nothing else could let time pass): names the first one blocked. */
static void
simgrid_wait_actors(Simgrid *sg, const SimgridStream *streams, guint n_actors)
{
    guint finished = 0;
    while (finished < n_actors) {
        guint64 progress = sg->progress;
        if (!sg_sem_acquire_timeout(sg->finished, SIMGRID_WATCH_S)) {
            finished++;
            continue;
        }
        if (sg->progress != progress)
            continue;
        for (guint i = 0; i < n_actors; i++) {
            const SimgridStream *st = &streams[i];
            const GArray *seq = sg->r->seq[st->rank * sg->r->n_streams + st->stream];
            if (st->pos == seq->len)
                continue;
            const SimparOp *op = simpar_replay_op(sg->r, g_array_index(seq, guint, st->pos));
            g_error("simgrid backend: deadlock at t = %g s: rank %u, stream '%s' waits forever "
                    "at op '%s' (%s), and %u of %u stream actors have not finished",
                    simgrid_get_clock() - sg->t0, st->rank,
                    simpar_schedule_stream_name(sg->r->run->sched, st->stream), op->name,
                    simpar_op_kind_name(op->kind), n_actors - finished, n_actors);
        }
    }
}

/* ---------------------------------------------------------------- a lone ring, proven idle */

/* With channels (ring.c), the hops of a round share links by design (a GPU's NVLink carries
 * all channels but one). SimGrid gives every flow of a round the time the evaluator prices
 * (lat + the busiest link's load / its bandwidth) when, on every shared link, all flows have the
 * same latency and that same time: each flow's busiest link is then saturated by flows of its
 * own rate (max-min fair), and they all start and end together, so no flow's links are freed
 * while it runs. */
static gboolean
simgrid_channels_uncontended(const SimparCollGroup *g, GArray *hops, GArray *hop_s)
{
    g_autoptr(GHashTable) first = g_hash_table_new(NULL, NULL); /* link -> 1 + hop */
    g_autoptr(GPtrArray) links = g_ptr_array_new();
    for (guint i = 0; i < hops->len; i++) {
        const SimparHop *h = &g_array_index(hops, SimparHop, i);
        SimparRoute route, other;
        simpar_net_route(g->net, g->gpus[h->src], g->gpus[h->dst], &route);
        g_ptr_array_set_size(links, 0);
        if (!simpar_platform_route_links(g->net, g->gpus[h->src], g->gpus[h->dst], links))
            return FALSE;
        for (guint j = 0; j < links->len; j++) {
            guint k = GPOINTER_TO_UINT(g_hash_table_lookup(first, links->pdata[j]));
            if (k == 0) {
                g_hash_table_insert(first, links->pdata[j], GUINT_TO_POINTER(i + 1));
                continue;
            }
            if (!sg_link_is_shared(links->pdata[j]))
                continue;
            const SimparHop *o = &g_array_index(hops, SimparHop, k - 1);
            simpar_net_route(g->net, g->gpus[o->src], g->gpus[o->dst], &other);
            double a = g_array_index(hop_s, double, i), b = g_array_index(hop_s, double, k - 1);
            if (route.lat_s != other.lat_s || fabs(a - b) > 1e-12 * MAX(a, b))
                return FALSE;
        }
    }
    return TRUE;
}

/* Whether the ring's hops m -> m+1, all at their idle rates (route bottlenecks) at once, fit in
 * every link. They are the only flows a lone ring ever has, at most one per hop at a time, so
 * then every flow always runs at its idle rate (any subset of a feasible set is feasible, and
 * the max-min share of a flow never exceeds its bottleneck): SimGrid's rounds take exactly the
 * idle times the ring's evaluator computes, up to floating-point rounding. Channels: above. */
static gboolean
simgrid_ring_uncontended(const SimparCollGroup *g, double bytes)
{
    g_autoptr(GArray) hops = g_array_new(FALSE, FALSE, sizeof(SimparHop));
    g_autoptr(GArray) hop_s = g_array_new(FALSE, FALSE, sizeof(double));
    if (simpar_coll_ring_hops(g, bytes, hops, hop_s) > 1)
        return simgrid_channels_uncontended(g, hops, hop_s);
    g_autoptr(GHashTable) load = g_hash_table_new_full(NULL, NULL, NULL, g_free);
    g_autoptr(GPtrArray) links = g_ptr_array_new();
    for (guint m = 0; m < g->n; m++) {
        guint src = g->gpus[m], dst = g->gpus[(m + 1) % g->n];
        SimparRoute route;
        simpar_net_route(g->net, src, dst, &route);
        g_ptr_array_set_size(links, 0);
        if (!simpar_platform_route_links(g->net, src, dst, links))
            return FALSE;
        for (guint i = 0; i < links->len; i++) {
            double *l = g_hash_table_lookup(load, links->pdata[i]);
            if (l == NULL)
                g_hash_table_insert(load, links->pdata[i], l = g_new0(double, 1));
            *l += route.bw_Bps;
        }
    }
    GHashTableIter it;
    gpointer link, l;
    g_hash_table_iter_init(&it, load);
    while (g_hash_table_iter_next(&it, &link, &l))
        if (sg_link_is_shared(link) && *(double *) l > sg_link_get_bandwidth(link))
            return FALSE;
    return TRUE;
}

/* A schedule of one ring collective, one op per rank, on an otherwise idle platform (simpar
 * collective): when simgrid_ring_uncontended() proves every round runs at idle speed, the spans
 * come from the ring's idle evaluator, O(n) memory and no SimGrid transfer, instead of
 * 2n(n-1) transfers (33 M at 4096 GPUs). The clock advances as the played rounds would. */
static gboolean
simgrid_lone_ring(const SimparReplay *r, SimparSpan *spans)
{
    const SimparRun *run = r->run;
    if (run->mode != SIMPAR_COLL_MODE_EXACT || run->play_all || run->n_layers != 1 ||
        r->colls->len != 1 || r->n_ops != r->n_ranks)
        return FALSE;
    const SimparReplayColl *rc = &g_array_index(r->colls, SimparReplayColl, 0);
    if (rc->group.n != r->n_ranks || rc->group.n < 2 || rc->algo != simpar_coll_ring() ||
        rc->algo->eval_idle == NULL)
        return FALSE;
    for (guint i = 0; i < r->n_ops; i++)
        if (simpar_schedule_op(run->sched, i)->kind != SIMPAR_OP_COLLECTIVE)
            return FALSE;
    if (!simgrid_ring_uncontended(&rc->group, rc->bytes))
        return FALSE;
    guint n = rc->group.n;
    g_autofree double *start = g_new0(double, n);
    g_autofree double *end = g_new(double, n);
    rc->algo->eval_idle(rc->kind, &rc->group, rc->bytes, &run->coll, start, end);
    double last = 0;
    for (guint i = 0; i < r->n_ops; i++) {
        const SimparOp *op = simpar_schedule_op(run->sched, i);
        guint m = simpar_group_index(run->sched, op->u.coll.group, op->rank);
        spans[i] = (SimparSpan){0, end[m]};
        last = MAX(last, end[m]);
    }
    sg_actor_sleep_for(last);
    return TRUE;
}

/* Builds every fused transfer of the simulated ranks, while the routes are the platform's. */
static void
simgrid_quotient_fused(Simgrid *sg)
{
    const SimparReplay *r = sg->r;
    const SimparSchedule *s = r->run->sched;
    for (guint rank = 0; rank < r->n_ranks; rank++) {
        if (sg->q->rep[rank] != rank)
            continue;
        guint n;
        const guint *ops = simpar_schedule_rank_ops(s, rank, &n);
        for (guint i = 0; i < n; i++) {
            const SimparOp *op = simpar_schedule_op(s, ops[i]);
            guint coll = r->coll_of_op[ops[i]];
            if (op->kind == SIMPAR_OP_COLLECTIVE && !sg->q->idle[coll] &&
                g_array_index(r->colls, SimparReplayColl, coll).group.n > 1)
                (void) simgrid_fused(sg, coll, simpar_group_index(s, op->u.coll.group, rank));
        }
    }
}

/* Every rank's spans are its representative's, op for op. */
static void
simgrid_quotient_spans(const SimparReplay *r, const SimparQuotient *q, SimparSpan *spans)
{
    const SimparSchedule *s = r->run->sched;
    for (guint rank = 0; rank < r->n_ranks; rank++) {
        if (q->rep[rank] == rank)
            continue;
        guint n;
        const guint *ops = simpar_schedule_rank_ops(s, rank, &n);
        const guint *rops = simpar_schedule_rank_ops(s, q->rep[rank], &n);
        for (guint l = 0; l < r->run->n_layers; l++)
            for (guint i = 0; i < n; i++)
                spans[l * r->n_ops + ops[i]] = spans[l * r->n_ops + rops[i]];
    }
}

/* Links mode (replay-quotient.c): the links the quotient scales set to their bandwidths
 * (`on`, keeping the old ones in `kept`), or given back what they had. */
static void
simgrid_quotient_links(const SimparQuotient *q, GArray *kept, gboolean on)
{
    for (guint i = 0; q->scaled != NULL && i < q->scaled->len; i++) {
        sg_link_t link = q->scaled->pdata[i];
        if (on) {
            double bw = sg_link_get_bandwidth(link);
            g_array_append_val(kept, bw);
        }
        sg_link_set_bandwidth(link, on ? g_array_index(q->scaled_bw, double, i)
                                       : g_array_index(kept, double, i));
    }
}

void
simpar_backend_simgrid_run(const SimparRun *run, SimparSpan *spans)
{
    g_autoptr(SimparReplay) r = simpar_replay_new(run);
    if (simgrid_lone_ring(r, spans))
        return;
    Simgrid sg;
    simgrid_state_init(&sg, r, spans);
    SimparQuotient q;
    gboolean folded = simpar_replay_quotient(r, &q);
    if (run->n_simulated != NULL)
        *run->n_simulated = q.n_sim;
    g_autoptr(GArray) kept_bw = g_array_new(FALSE, FALSE, sizeof(double));
    if (folded) {
        sg.q = &q;
        simgrid_quotient_fused(&sg);
        simgrid_quotient_links(&q, kept_bw, TRUE);
        if (q.scaled == NULL)
            (void) simpar_platform_scale_fabric(run->net, 1.0 / q.fiber);
    }
    g_autofree SimgridStream *streams = g_new(SimgridStream, r->n_ranks * r->n_streams);
    guint n_actors = simgrid_start_actors(&sg, streams);
    simgrid_wait_actors(&sg, streams, n_actors);
    if (sg.q != NULL) {
        simgrid_quotient_links(&q, kept_bw, FALSE);
        if (q.scaled == NULL)
            (void) simpar_platform_scale_fabric(run->net, 1);
        simgrid_quotient_spans(r, &q, spans);
    }
    simgrid_state_clear(&sg);
    simpar_quotient_clear(&q);
}
