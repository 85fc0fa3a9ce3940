/* backend-simgrid.c - the schedule on SimGrid: one actor per GPU stream.
 *
 * Compute ops sleep for their modelled time; a collective is its algorithm's expansion played on
 * mailboxes named (group, sequence number, sender, receiver), so concurrent collectives of one
 * group never take each other's messages. Exact mode posts every round; fused mode posts one
 * transfer per peer carrying all the bytes of the member's rounds (so shared links see the
 * whole load) and then waits out the rest of the closed form, which on an idle network makes
 * it equal to the closed form. Cross-stream deps wait on a per-rank condition variable.
 *
 * Must run inside a SimGrid actor (platform.c's driver): it creates the stream actors and
 * blocks until they have all finished. Spans are relative to the clock at the call.
 */
#include "replay.h"
#include <simgrid/actor.h>
#include <simgrid/comm.h>
#include <simgrid/cond.h>
#include <simgrid/engine.h>
#include <simgrid/host.h>
#include <simgrid/mailbox.h>
#include <simgrid/mutex.h>
#include <simgrid/semaphore.h>
#include <stdio.h>

typedef struct {
    SimparReplay *r;
    SimparSpan *spans;
    gboolean *awaited; /* per op: an op of another stream depends on it */
    double t0;
    sg_mutex_t *mutex; /* per rank */
    sg_cond_t *cond;   /* per rank: an op of this rank finished */
    sg_sem_t finished; /* released by every stream actor at its end */
} Simgrid;

typedef struct {
    Simgrid *sg;
    guint rank, stream;
    double pending; /* compute time not slept yet: runs of compute ops become one sleep */
} SimgridStream;

/* Sleeps the compute time accumulated so far, before anything another actor can observe. */
static void
simgrid_flush(SimgridStream *st)
{
    if (st->pending > 0)
        sg_actor_sleep_for(st->pending);
    st->pending = 0;
}

static char simgrid_payload; /* mailboxes need a non-NULL payload; nothing reads it */

static sg_mailbox_t
simgrid_mailbox(guint group, guint k, guint src, guint dst)
{
    char name[64];
    snprintf(name, sizeof name, "%u:%u:%u>%u", group, k, src, dst);
    return sg_mailbox_by_name(name);
}

/* Posts the transfers [first, first+n) of member `m` and waits for all of them. */
static void
simgrid_xfers(const SimparXfer *x, guint n, guint group, guint k, guint m)
{
    g_autofree sg_comm_t *comms = g_new(sg_comm_t, n);
    for (guint i = 0; i < n; i++) {
        if (x[i].send) {
            comms[i] = sg_mailbox_put_async(simgrid_mailbox(group, k, m, x[i].peer),
                                            &simgrid_payload, x[i].bytes);
        } else {
            static void *data;
            comms[i] = sg_mailbox_get_async(simgrid_mailbox(group, k, x[i].peer, m), &data);
        }
    }
    sg_comm_wait_all(comms, n);
}

static void
simgrid_coll_exact(const SimparExpansion *e, guint group, guint k, guint m)
{
    for (guint i = e->member_first[m]; i < e->member_first[m + 1]; i++) {
        const SimparRound *rd = &g_array_index(e->rounds, SimparRound, i);
        if (rd->delay_s > 0)
            sg_actor_sleep_for(rd->delay_s);
        simgrid_xfers(&g_array_index(e->xfers, SimparXfer, rd->first), rd->n, group, k, m);
    }
}

/* All of member m's bytes, one transfer per (peer, direction), in first-use order. */
static GArray *
simgrid_fuse(const SimparExpansion *e, guint m)
{
    GArray *out = g_array_new(FALSE, FALSE, sizeof(SimparXfer));
    for (guint i = e->member_first[m]; i < e->member_first[m + 1]; i++) {
        const SimparRound *rd = &g_array_index(e->rounds, SimparRound, i);
        for (guint j = rd->first; j < rd->first + rd->n; j++) {
            const SimparXfer *x = &g_array_index(e->xfers, SimparXfer, j);
            guint f = 0;
            while (f < out->len && (g_array_index(out, SimparXfer, f).peer != x->peer ||
                                    g_array_index(out, SimparXfer, f).send != x->send))
                f++;
            if (f == out->len)
                g_array_append_vals(out, x, 1);
            else
                g_array_index(out, SimparXfer, f).bytes += x->bytes;
        }
    }
    return out; /* (transfer full) */
}

static void
simgrid_coll_fused(const SimparReplayColl *rc, const SimparExpansion *e, guint group, guint k,
                   guint m)
{
    g_autoptr(GArray) fused = simgrid_fuse(e, m);
    double idle = 0;
    for (guint i = 0; i < fused->len; i++) {
        const SimparXfer *x = &g_array_index(fused, SimparXfer, i);
        guint src = rc->group.gpus[x->send ? m : x->peer];
        guint dst = rc->group.gpus[x->send ? x->peer : m];
        SimparRoute route;
        simpar_net_route(rc->group.net, src, dst, &route);
        idle = MAX(idle, route.lat_s + x->bytes / route.bw_Bps);
    }
    simgrid_xfers((const SimparXfer *) fused->data, fused->len, group, k, m);
    double rest = rc->time_s - idle; /* contention only ever adds to the idle transfer time */
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
    guint m = simpar_group_index(r->run->sched, op->u.coll.group, st->rank);
    const SimparExpansion *e = simpar_replay_expansion(r, coll);
    if (r->run->mode == SIMPAR_COLL_MODE_EXACT)
        simgrid_coll_exact(e, op->u.coll.group, r->coll_k[inst], m);
    else
        simgrid_coll_fused(rc, e, op->u.coll.group, r->coll_k[inst], m);
}

static void
simgrid_wait_deps(SimgridStream *st, guint inst, const SimparOp *op)
{
    Simgrid *sg = st->sg;
    const guint *deps = simpar_schedule_deps(sg->r->run->sched, op);
    guint base = inst - inst % sg->r->n_ops;
    for (guint d = 0; d < op->n_deps; d++) {
        if (sg->spans[base + deps[d]].end >= 0)
            continue;
        simgrid_flush(st);
        sg_mutex_lock(sg->mutex[st->rank]);
        while (sg->spans[base + deps[d]].end < 0)
            sg_cond_wait(sg->cond[st->rank], sg->mutex[st->rank]);
        sg_mutex_unlock(sg->mutex[st->rank]);
    }
}

/* Records the span; wakes the rank's other streams when one of them may wait for this op. */
static void
simgrid_done(SimgridStream *st, guint inst, double start, double end)
{
    Simgrid *sg = st->sg;
    if (!sg->awaited[inst % sg->r->n_ops]) {
        sg->spans[inst] = (SimparSpan){start - sg->t0, end - sg->t0};
        return;
    }
    simgrid_flush(st);
    sg->spans[inst] = (SimparSpan){start - sg->t0, end - sg->t0};
    sg_mutex_lock(sg->mutex[st->rank]);
    sg_cond_notify_all(sg->cond[st->rank]);
    sg_mutex_unlock(sg->mutex[st->rank]);
}

static void
simgrid_stream_main(int argc, char **argv)
{
    (void) argc, (void) argv;
    SimgridStream *st = sg_actor_self_get_data();
    Simgrid *sg = st->sg;
    GArray *seq = sg->r->seq[st->rank * sg->r->n_streams + st->stream];
    for (guint i = 0; i < seq->len; i++) {
        guint inst = g_array_index(seq, guint, i);
        const SimparOp *op = simpar_replay_op(sg->r, inst);
        g_assert(op->kind != SIMPAR_OP_SEND && op->kind != SIMPAR_OP_RECV);
        simgrid_wait_deps(st, inst, op);
        if (op->kind == SIMPAR_OP_COLLECTIVE) {
            simgrid_flush(st);
            double start = simgrid_get_clock();
            simgrid_collective(st, inst, op);
            simgrid_done(st, inst, start, simgrid_get_clock());
        } else {
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

void
simpar_backend_simgrid_run(const SimparRun *run, SimparSpan *spans)
{
    g_autoptr(SimparReplay) r = simpar_replay_new(run);
    Simgrid sg = {r,
                  spans,
                  g_new0(gboolean, r->n_ops),
                  simgrid_get_clock(),
                  g_new(sg_mutex_t, r->n_ranks),
                  g_new(sg_cond_t, r->n_ranks),
                  sg_sem_init(0)};
    for (guint i = 0; i < r->n_ops; i++) {
        const SimparOp *op = simpar_schedule_op(run->sched, i);
        const guint *deps = simpar_schedule_deps(run->sched, op);
        for (guint d = 0; d < op->n_deps; d++)
            sg.awaited[deps[d]] |= simpar_schedule_op(run->sched, deps[d])->stream != op->stream;
    }
    for (guint i = 0; i < r->n_instances; i++)
        spans[i] = (SimparSpan){-1, -1};
    g_autofree SimgridStream *streams = g_new(SimgridStream, r->n_ranks * r->n_streams);
    guint n_actors = 0;
    for (guint rank = 0; rank < r->n_ranks; rank++) {
        sg.mutex[rank] = sg_mutex_init();
        sg.cond[rank] = sg_cond_init();
        for (guint s = 0; s < r->n_streams; s++) {
            if (r->seq[rank * r->n_streams + s]->len == 0)
                continue;
            SimgridStream *st = &streams[n_actors++];
            *st = (SimgridStream){&sg, rank, s, 0};
            char name[48];
            snprintf(name, sizeof name, "rank%u-%s", rank,
                     simpar_schedule_stream_name(run->sched, s));
            sg_actor_t a = sg_actor_init(name, simgrid_host(run, rank));
            sg_actor_set_data(a, st);
            sg_actor_start(a, simgrid_stream_main, 0, NULL);
        }
    }
    for (guint i = 0; i < n_actors; i++)
        sg_sem_acquire(sg.finished);
    for (guint rank = 0; rank < r->n_ranks; rank++) {
        sg_cond_destroy(sg.cond[rank]);
        sg_mutex_destroy(sg.mutex[rank]);
    }
    sg_sem_destroy(sg.finished);
    g_free(sg.mutex);
    g_free(sg.awaited);
    g_free(sg.cond);
}
