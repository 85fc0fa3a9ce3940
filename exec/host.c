/* host.c - the host executor: one thread per rank, collectives and send/recv over shared memory.
 *
 * A collective is a rendezvous of its group's threads (host_coll_run):
 *   1. each member publishes its op and its send/recv pointers in the group's slot table, and
 *      waits for all (barrier);
 *   2. each member checks that all members agree on kind/count/root/reduction, then computes its
 *      own result into a private temporary from the others' send buffers, reducing (sum or
 *      max) in group-index order;
 *   3. barrier again, so nobody overwrites an input that another member still reads;
 *   4. each member copies its temporary into its recv view (in-place use is therefore safe).
 * Send/recv are eager and buffered: a send copies into a message queued in the destination's
 * inbox; a recv takes the first message of its (source, tag) from its own inbox, waiting if none.
 *
 * When an op fails, its thread records the error (the first one wins), raises `failed` and wakes
 * every waiter; threads then give up at their next wait or op.
 */
#include "exec-private.h"
#include <string.h>
#include <time.h>

G_DEFINE_QUARK(simpar_host_error_quark, simpar_host_error)

typedef struct {
    const SimparOp *op; /* the member's collective */
    const double *send;
    double *recv;
} HostSlot;

typedef struct {
    GMutex lock;
    GCond cond;
    guint size;
    guint arrived; /* members at the current barrier */
    guint64 gen;   /* barriers completed */
    HostSlot *slots;
} HostGroup;

typedef struct {
    GMutex lock;
    GCond cond;
    GQueue msgs; /* HostMsg, oldest first */
} HostInbox;

typedef struct {
    guint src, tag;
    gsize count;
    double data[];
} HostMsg;

struct _SimparHost {
    const SimparSchedule *sched; /* borrowed */
    guint n_ranks, n_buffers, n_groups;
    double **bufs;      /* per buffer, owned */
    HostGroup *groups;  /* per group */
    HostInbox *inboxes; /* per rank */
    gint failed;        /* atomic: an op failed, every wait gives up */
    GMutex error_lock;
    GError *error; /* the run's first failure */
};

typedef struct {
    SimparHost *host;
    guint rank;
    gint64 t0_ns;      /* the run's start */
    SimparSpan *spans; /* by op index, or NULL: no timing */
} HostWorker;

/* ---- lifetime ----------------------------------------------------------------------------- */

SimparHost *
simpar_host_try_new(const SimparSchedule *sched, GError **error)
{
    g_return_val_if_fail(sched != NULL, NULL);
    g_return_val_if_fail(error == NULL || *error == NULL, NULL);
    SimparHost *host = g_new0(SimparHost, 1);
    host->sched = sched;
    host->n_ranks = simpar_schedule_n_ranks(sched);
    host->n_buffers = simpar_schedule_n_buffers(sched);
    host->n_groups = simpar_schedule_n_groups(sched);
    host->bufs = g_new0(double *, host->n_buffers);
    double total = 0;
    for (guint b = 0; b < host->n_buffers; b++)
        total += (double) simpar_schedule_buffer(sched, b)->elems * sizeof(double);
    for (guint b = 0; b < host->n_buffers; b++) {
        gsize elems = simpar_schedule_buffer(sched, b)->elems;
        host->bufs[b] = elems > 0 ? g_try_malloc0_n(elems, sizeof(double)) : NULL;
        if (elems > 0 && host->bufs[b] == NULL) {
            g_set_error(error, SIMPAR_HOST_ERROR, SIMPAR_HOST_ERROR_MEMORY,
                        "the host executor's buffers need %.3g GiB in all (%.3g GiB for buffer "
                        "\"%s\" of rank %u) and this machine could not give them: run a smaller "
                        "job (fewer ranks, layers, tokens) or on a machine with more memory",
                        total / (1 << 30), (double) elems * sizeof(double) / (1 << 30),
                        simpar_schedule_buffer(sched, b)->name,
                        simpar_schedule_buffer(sched, b)->rank);
            for (guint k = 0; k < b; k++)
                g_free(host->bufs[k]);
            g_free(host->bufs);
            g_free(host);
            return NULL;
        }
    }
    host->groups = g_new0(HostGroup, host->n_groups);
    for (guint g = 0; g < host->n_groups; g++) {
        HostGroup *grp = &host->groups[g];
        g_mutex_init(&grp->lock);
        g_cond_init(&grp->cond);
        grp->size = simpar_schedule_group(sched, g)->size;
        grp->slots = g_new0(HostSlot, grp->size);
    }
    host->inboxes = g_new0(HostInbox, host->n_ranks);
    for (guint r = 0; r < host->n_ranks; r++) {
        g_mutex_init(&host->inboxes[r].lock);
        g_cond_init(&host->inboxes[r].cond);
        g_queue_init(&host->inboxes[r].msgs);
    }
    g_mutex_init(&host->error_lock);
    return host; /* (transfer full) */
}

SimparHost *
simpar_host_new(const SimparSchedule *sched)
{
    g_autoptr(GError) error = NULL;
    SimparHost *host = simpar_host_try_new(sched, &error);
    if (host == NULL)
        g_error("%s", error->message); /* a schedule the caller knew would fit */
    return host;                       /* (transfer full) */
}

static void
host_inbox_drop(HostInbox *inbox)
{
    g_queue_clear_full(&inbox->msgs, g_free);
}

void
simpar_host_free(SimparHost *host)
{
    if (host == NULL)
        return;
    for (guint b = 0; b < host->n_buffers; b++)
        g_free(host->bufs[b]);
    g_free(host->bufs);
    for (guint g = 0; g < host->n_groups; g++) {
        g_mutex_clear(&host->groups[g].lock);
        g_cond_clear(&host->groups[g].cond);
        g_free(host->groups[g].slots);
    }
    g_free(host->groups);
    for (guint r = 0; r < host->n_ranks; r++) {
        host_inbox_drop(&host->inboxes[r]);
        g_mutex_clear(&host->inboxes[r].lock);
        g_cond_clear(&host->inboxes[r].cond);
    }
    g_free(host->inboxes);
    g_mutex_clear(&host->error_lock);
    g_clear_error(&host->error);
    g_free(host);
}

double *
simpar_host_buffer(SimparHost *host, guint buf)
{
    g_return_val_if_fail(host != NULL, NULL);
    g_return_val_if_fail(buf < host->n_buffers, NULL);
    return host->bufs[buf]; /* (transfer none) */
}

static double *
host_view(SimparHost *host, SimparView view)
{
    const SimparHostBufs b = {host->bufs, host->n_buffers};
    return simpar_host_bufs_view(&b, view); /* (transfer none) */
}

/* ---- failure ------------------------------------------------------------------------------ */

static gboolean
host_failed(SimparHost *host)
{
    return g_atomic_int_get(&host->failed) != 0;
}

/* Records `err` (taken) unless an earlier failure was recorded, then wakes every waiter. */
static void
host_fail(SimparHost *host, GError *err)
{
    g_mutex_lock(&host->error_lock);
    if (host->error == NULL)
        host->error = err;
    else
        g_error_free(err);
    g_mutex_unlock(&host->error_lock);
    g_atomic_int_set(&host->failed, 1);
    for (guint g = 0; g < host->n_groups; g++) {
        g_mutex_lock(&host->groups[g].lock);
        g_cond_broadcast(&host->groups[g].cond);
        g_mutex_unlock(&host->groups[g].lock);
    }
    for (guint r = 0; r < host->n_ranks; r++) {
        g_mutex_lock(&host->inboxes[r].lock);
        g_cond_broadcast(&host->inboxes[r].cond);
        g_mutex_unlock(&host->inboxes[r].lock);
    }
}

static gboolean
host_aborted(const SimparOp *op, GError **error)
{
    g_set_error(error, SIMPAR_HOST_ERROR, SIMPAR_HOST_ERROR_ABORTED,
                "op '%s' (rank %u): abandoned after another rank failed", op->name, op->rank);
    return FALSE;
}

/* ---- collectives -------------------------------------------------------------------------- */

/* Waits until every member of `grp` arrived; FALSE if the run failed meanwhile. */
static gboolean
host_barrier(SimparHost *host, HostGroup *grp)
{
    g_mutex_lock(&grp->lock);
    guint64 gen = grp->gen;
    if (++grp->arrived == grp->size) {
        grp->arrived = 0;
        grp->gen++;
        g_cond_broadcast(&grp->cond);
    }
    while (grp->gen == gen && !host_failed(host))
        g_cond_wait(&grp->cond, &grp->lock);
    gboolean passed = grp->gen != gen;
    g_mutex_unlock(&grp->lock);
    return passed;
}

/* simpar_schedule_check proved that every member calls the same collective. */
static void
host_coll_agree(const SimparOp *op, const HostGroup *grp)
{
    const SimparColl *c = &op->u.coll;
    for (guint m = 0; m < grp->size; m++) {
        const SimparColl *o = &grp->slots[m].op->u.coll;
        g_assert(o->kind == c->kind && o->count == c->count && o->root == c->root &&
                 o->red == c->red);
    }
}

/* out[e] = send_0[off + e] (+ or max) send_1[off + e] ... send_{size-1}[off + e], in that
 * order. */
static void
host_coll_reduce(const HostGroup *grp, SimparRedOp red, gsize off, gsize count, double *out)
{
    memcpy(out, grp->slots[0].send + off, count * sizeof(double));
    for (guint m = 1; m < grp->size; m++) {
        const double *send = grp->slots[m].send + off;
        if (red == SIMPAR_RED_MAX) {
            for (gsize e = 0; e < count; e++)
                out[e] = send[e] > out[e] ? send[e] : out[e];
        } else {
            for (gsize e = 0; e < count; e++)
                out[e] += send[e];
        }
    }
}

/* This member's result, from every member's send buffer, into `out` (recv-sized). */
static void
host_coll_compute(const HostGroup *grp, const SimparColl *c, guint index, double *out)
{
    gsize n = c->count, bytes = n * sizeof(double);
    switch (c->kind) {
    case SIMPAR_COLL_ALL_REDUCE:
        host_coll_reduce(grp, c->red, 0, n, out);
        break;
    case SIMPAR_COLL_REDUCE:
        if (index == c->root)
            host_coll_reduce(grp, c->red, 0, n, out);
        break;
    case SIMPAR_COLL_REDUCE_SCATTER:
        host_coll_reduce(grp, c->red, index * n, n, out);
        break;
    case SIMPAR_COLL_ALL_GATHER:
        for (guint m = 0; m < grp->size; m++)
            memcpy(out + m * n, grp->slots[m].send, bytes);
        break;
    case SIMPAR_COLL_BROADCAST:
        memcpy(out, grp->slots[c->root].send, bytes);
        break;
    case SIMPAR_COLL_ALL_TO_ALL:
        for (guint m = 0; m < grp->size; m++)
            memcpy(out + m * n, grp->slots[m].send + index * n, bytes);
        break;
    default:
        g_assert_not_reached();
    }
}

static gboolean
host_coll_run(SimparHost *host, const SimparOp *op, GError **error)
{
    const SimparColl *c = &op->u.coll;
    HostGroup *grp = &host->groups[c->group];
    guint index = simpar_group_index(host->sched, c->group, op->rank);
    gsize send_n, recv_n;
    simpar_op_coll_counts(host->sched, op, &send_n, &recv_n);
    g_autofree double *tmp = recv_n > 0 ? g_new(double, recv_n) : NULL;
    g_mutex_lock(&grp->lock);
    grp->slots[index] = (HostSlot){op, host_view(host, c->send), host_view(host, c->recv)};
    g_mutex_unlock(&grp->lock);
    if (!host_barrier(host, grp))
        return host_aborted(op, error);
    host_coll_agree(op, grp);
    if (c->count > 0)
        host_coll_compute(grp, c, index, tmp);
    if (!host_barrier(host, grp))
        return host_aborted(op, error);
    if (recv_n > 0)
        memcpy(grp->slots[index].recv, tmp, recv_n * sizeof(double));
    return TRUE;
}

/* ---- send / recv -------------------------------------------------------------------------- */

static void
host_send(SimparHost *host, const SimparOp *op)
{
    const SimparP2p *p = &op->u.p2p;
    HostMsg *msg = g_malloc(sizeof(HostMsg) + p->count * sizeof(double));
    msg->src = op->rank;
    msg->tag = p->tag;
    msg->count = p->count;
    if (p->count > 0)
        memcpy(msg->data, host_view(host, p->buf), p->count * sizeof(double));
    HostInbox *inbox = &host->inboxes[p->peer];
    g_mutex_lock(&inbox->lock);
    g_queue_push_tail(&inbox->msgs, msg);
    g_cond_broadcast(&inbox->cond);
    g_mutex_unlock(&inbox->lock);
}

/* The oldest message from `src` with `tag`, unlinked; NULL if the run failed first. */
static HostMsg *
host_inbox_take(SimparHost *host, HostInbox *inbox, guint src, guint tag)
{
    HostMsg *found = NULL;
    g_mutex_lock(&inbox->lock);
    while (found == NULL && !host_failed(host)) {
        for (GList *l = inbox->msgs.head; l != NULL; l = l->next) {
            HostMsg *msg = l->data;
            if (msg->src == src && msg->tag == tag) {
                found = msg;
                g_queue_delete_link(&inbox->msgs, l);
                break;
            }
        }
        if (found == NULL && !host_failed(host))
            g_cond_wait(&inbox->cond, &inbox->lock);
    }
    g_mutex_unlock(&inbox->lock);
    return found;
}

static gboolean
host_recv(SimparHost *host, const SimparOp *op, GError **error)
{
    const SimparP2p *p = &op->u.p2p;
    g_autofree HostMsg *msg = host_inbox_take(host, &host->inboxes[op->rank], p->peer, p->tag);
    if (msg == NULL)
        return host_aborted(op, error);
    g_assert(msg->count == p->count); /* simpar_schedule_check matched them */
    if (p->count > 0)
        memcpy(host_view(host, p->buf), msg->data, p->count * sizeof(double));
    return TRUE;
}

/* ---- the run ------------------------------------------------------------------------------ */

static gboolean
host_exec_op(SimparHost *host, const SimparOp *op, GError **error)
{
    switch (op->kind) {
    case SIMPAR_OP_COLLECTIVE:
        return host_coll_run(host, op, error);
    case SIMPAR_OP_SEND:
        host_send(host, op);
        return TRUE;
    case SIMPAR_OP_RECV:
        return host_recv(host, op, error);
    default: {
        const SimparHostBufs bufs = {host->bufs, host->n_buffers};
        simpar_kern_run(&bufs, op);
        return TRUE;
    }
    }
}

/* The monotonic clock in nanoseconds (g_get_monotonic_time has only microseconds). */
static gint64
host_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (gint64) ts.tv_sec * G_GINT64_CONSTANT(1000000000) + ts.tv_nsec;
}

static double
host_since(const HostWorker *w)
{
    return (double) (host_now_ns() - w->t0_ns) * 1e-9;
}

static gpointer
host_worker(gpointer data)
{
    HostWorker *w = data;
    guint n;
    const guint *ops = simpar_schedule_rank_ops(w->host->sched, w->rank, &n);
    for (guint i = 0; i < n && !host_failed(w->host); i++) {
        GError *err = NULL;
        if (w->spans != NULL)
            w->spans[ops[i]].start = host_since(w);
        if (!host_exec_op(w->host, simpar_schedule_op(w->host->sched, ops[i]), &err)) {
            host_fail(w->host, err);
            break;
        }
        if (w->spans != NULL)
            w->spans[ops[i]].end = host_since(w);
    }
    return NULL;
}

/* Forgets what a failed earlier run left behind: messages, half-met barriers, the error. */
static void
host_reset(SimparHost *host)
{
    for (guint g = 0; g < host->n_groups; g++)
        host->groups[g].arrived = 0;
    for (guint r = 0; r < host->n_ranks; r++)
        host_inbox_drop(&host->inboxes[r]);
    g_clear_error(&host->error);
    g_atomic_int_set(&host->failed, 0);
}

gboolean
simpar_host_run(SimparHost *host, GError **error)
{
    return simpar_host_run_timed(host, NULL, error);
}

gboolean
simpar_host_run_timed(SimparHost *host, SimparSpan *spans, GError **error)
{
    g_return_val_if_fail(host != NULL, FALSE);
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    if (!simpar_schedule_check(host->sched, error))
        return FALSE;
    host_reset(host);
    g_autofree HostWorker *workers = g_new0(HostWorker, host->n_ranks);
    g_autofree GThread **threads = g_new0(GThread *, host->n_ranks);
    gint64 t0 = host_now_ns();
    for (guint r = 0; r < host->n_ranks && !host_failed(host); r++) {
        g_autofree char *name = g_strdup_printf("simpar-rank-%u", r);
        GError *err = NULL;
        workers[r] = (HostWorker){host, r, t0, spans};
        threads[r] = g_thread_try_new(name, host_worker, &workers[r], &err);
        if (threads[r] == NULL) {
            g_prefix_error(&err, "starting the thread of rank %u: ", r);
            host_fail(host, err);
        }
    }
    for (guint r = 0; r < host->n_ranks; r++)
        if (threads[r] != NULL)
            g_thread_join(threads[r]);
    if (host->error != NULL) {
        g_propagate_error(error, g_steal_pointer(&host->error));
        return FALSE;
    }
    return TRUE;
}
