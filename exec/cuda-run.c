/* cuda-run.c - a run of the CUDA executor (simpar_cuda_run): one thread per local rank issues
 * its ops, then polls them; the calling thread is the watchdog. Setup, communicators and
 * buffers are cuda.c's.
 *
 *   caller ──┬── rank 0: barrier ─ origin ─ op ─ op ─ ... ─ poll events + async errors ──┐
 *            ├── rank 1: barrier ─ origin ─ op ─ op ─ ... ─ poll events + async errors ──┤
 *            └── watchdog: until every thread is done, one fails, or nothing was issued ──┴─ join
 *                or completed for the timeout; then ncclCommAbort on every communicator
 *
 *   stream 0  [barrier]─●origin─[s GEMM e]─[s LN e]──────────────────[wait]─[s GEMM e]
 *                       │               │                               ▲
 *   stream 1  ───────[wait]──────────[wait]─[s all-gather e]────────────┘
 *
 * Each op: cudaStreamWaitEvent on the end event of every dep on another stream, start event,
 * the op, end event; op times are cudaEventElapsedTime from `origin`, recorded after the
 * barrier. An NCCL call is made under `comm_lock`, never on a communicator being aborted, and
 * the communicators are non-blocking: a call that returns ncclInProgress is polled
 * (ncclCommGetAsyncError) until NCCL has enqueued its work, so no thread waits inside NCCL for
 * a peer. The end of the run is polled too: end events (cudaEventQuery, stream by stream in
 * order) and every communicator's asynchronous error. The watchdog is one simpar_watch_wait
 * (watchdog.h) whose progress is the ops issued and completed by all threads.
 *
 * A thread that fails records its error (the first one wins, as in host.c) and raises
 * `failed`; the others stop at their next op or poll. The watchdog then gives them a moment to
 * leave NCCL alone and aborts every communicator in one NCCL group (every abort flag is raised
 * before any communicator is reclaimed, so no reclaim waits on a kernel of a communicator that
 * is not aborted yet); that also releases a thread blocked inside a CUDA call, e.g. a launch
 * queue full behind a collective that never completes. After a failed run the SimparCuda can
 * only be freed.
 */
#include "cuda-private.h"
#include "watchdog.h"
#include <string.h>

#define CU_SPINS    64                   /* polls by a rank's thread before it sleeps */
#define CU_POLL_US  50                   /* then between its polls */
#define CU_GRACE_US (2 * G_USEC_PER_SEC) /* after a failure, before the aborts */

/* ---- failure ------------------------------------------------------------------------------ */

static gboolean
cu_failed(SimparCuda *cu)
{
    return g_atomic_int_get(&cu->failed) != 0;
}

/* Records `err` (taken) unless an earlier failure was recorded, raises `failed` and wakes the
 * watchdog's grace period. */
static void
cu_fail(SimparCuda *cu, GError *err)
{
    g_mutex_lock(&cu->error_lock);
    if (cu->error == NULL)
        cu->error = err;
    else
        g_error_free(err);
    g_mutex_unlock(&cu->error_lock);
    g_atomic_int_set(&cu->failed, 1);
    g_mutex_lock(&cu->run_lock);
    g_cond_broadcast(&cu->run_cond);
    g_mutex_unlock(&cu->run_lock);
}

/* *done: every work recorded before `ev` finished. cudaErrorNotReady is a state, not an error. */
static gboolean
cu_event_query(cudaEvent_t ev, gboolean *done, GError **error)
{
    cudaError_t e = cudaEventQuery(ev);
    *done = e == cudaSuccess;
    return e == cudaErrorNotReady || simpar_cu_check(e, "cudaEventQuery(ev)", error);
}

/* "op 12 'L0.fwd.all-reduce' (5 of 40 on rank 1, all-reduce on group 'tp' of 4 ranks)" */
static void
cu_op_describe(SimparCuda *cu, const SimparCuRank *lr, guint i, GString *out)
{
    const SimparOp *op = simpar_schedule_op(cu->sched, lr->ops[i]);
    g_string_append_printf(out, "op %u '%s' (%u of %u on rank %u", lr->ops[i],
                           op->name != NULL ? op->name : "", i + 1, lr->n_ops, lr->rank);
    if (op->kind == SIMPAR_OP_COLLECTIVE) {
        const SimparGroup *g = simpar_schedule_group(cu->sched, op->u.coll.group);
        g_string_append_printf(out, ", %s on group %u '%s' of %u ranks",
                               simpar_coll_kind_name(op->u.coll.kind), op->u.coll.group, g->axis,
                               g->size);
    } else if (op->kind == SIMPAR_OP_SEND || op->kind == SIMPAR_OP_RECV) {
        g_string_append_printf(out, ", %s rank %u",
                               op->kind == SIMPAR_OP_SEND ? "send to" : "recv from",
                               op->u.p2p.peer);
    }
    g_string_append_c(out, ')');
}

static gboolean
cu_is_comm(const SimparOp *op)
{
    return op->kind == SIMPAR_OP_COLLECTIVE || op->kind == SIMPAR_OP_SEND ||
           op->kind == SIMPAR_OP_RECV;
}

/* Where rank `lr` is stuck, appended to `out`; nothing if it finished. Of the issued ops that
 * did not complete, the first collective, send or recv (what waits for other ranks; a compute
 * op only waits behind one), else the first op. */
static void
cu_rank_stuck(SimparCuda *cu, SimparCuRank *lr, GString *out)
{
    gint progress = g_atomic_int_get(&lr->progress);
    gboolean done = FALSE;
    const char *sep = out->len > 0 ? "; " : "";
    (void) SIMPAR_CU_TRY(NULL, cudaSetDevice(lr->device));
    if (progress == 0 || (cu_event_query(lr->origin, &done, NULL) && !done)) {
        g_string_append_printf(out,
                               "%srank %u in the start barrier (an all-reduce of all %u ranks)",
                               sep, lr->rank, cu->n_ranks);
        return;
    }
    guint stuck = G_MAXUINT;
    for (guint i = 0; i < (guint) progress - 1; i++) {
        if (!cu_event_query(lr->ev_end[i], &done, NULL) || done)
            continue;
        if (stuck == G_MAXUINT)
            stuck = i;
        if (cu_is_comm(simpar_schedule_op(cu->sched, lr->ops[i]))) {
            stuck = i;
            break;
        }
    }
    if (stuck != G_MAXUINT) {
        g_string_append(out, sep);
        cu_op_describe(cu, lr, stuck, out);
        g_string_append(out, " unfinished");
        return;
    }
    guint next = (guint) progress - 1;
    if (next < lr->n_ops) {
        g_string_append(out, sep);
        cu_op_describe(cu, lr, next, out);
        g_string_append(out, " still being issued");
    }
}

/* ---- one op ------------------------------------------------------------------------------- */

/* (transfer none): the device address of `view`; NULL for SIMPAR_NO_VIEW. */
static char *
cu_view(SimparCuda *cu, SimparView view)
{
    if (!simpar_cu_has_view(view))
        return NULL;
    SimparCuBuf b = cu->bufs[view.buf];
    return (char *) b.ptr + view.off * simpar_cu_type_size(b.type);
}

/* Between two polls of a rank's thread: a few yields (an NCCL enqueue takes microseconds),
 * then short sleeps. */
static void
cu_backoff(guint round)
{
    if (round < CU_SPINS)
        g_thread_yield();
    else
        g_usleep(CU_POLL_US);
}

/* Takes comm_lock for an NCCL call of a rank's thread; FALSE (and no lock) once the run failed:
 * the communicators may be aborted already. */
static gboolean
cu_comm_lock(SimparCuda *cu)
{
    g_mutex_lock(&cu->comm_lock);
    if (!cu_failed(cu))
        return TRUE;
    g_mutex_unlock(&cu->comm_lock);
    return FALSE;
}

/* After NCCL call `call` on `comm` returned `r` (under comm_lock, released since): ncclSuccess,
 * or ncclInProgress polled until NCCL enqueued the work. FALSE without an error: the run
 * failed elsewhere. */
static gboolean
cu_nccl_enqueued(SimparCuda *cu, ncclComm_t comm, ncclResult_t r, const char *call, GError **error)
{
    if (r != ncclInProgress)
        return simpar_cu_check_nccl(r, call, error);
    for (guint round = 0;; round++) {
        ncclResult_t state;
        if (!cu_comm_lock(cu))
            return FALSE;
        gboolean ok = simpar_cu_comm_state(comm, &state, error);
        g_mutex_unlock(&cu->comm_lock);
        if (!ok || (state != ncclInProgress && !simpar_cu_check_nccl(state, call, error)))
            return FALSE;
        if (state == ncclSuccess)
            return TRUE;
        cu_backoff(round);
    }
}

/* The sends and receives of an all-to-all in one NCCL group; under comm_lock. */
static ncclResult_t
cu_all_to_all(SimparCuda *cu, const SimparColl *c, ncclComm_t comm, ncclDataType_t t,
              cudaStream_t s)
{
    guint size = simpar_schedule_group(cu->sched, c->group)->size;
    gsize block = c->count * simpar_cu_type_size(cu->bufs[c->send.buf].type);
    char *send = cu_view(cu, c->send), *recv = cu_view(cu, c->recv);
    ncclResult_t r = ncclGroupStart();
    if (r != ncclSuccess)
        return r;
    for (guint p = 0; p < size && r == ncclSuccess; p++) {
        r = ncclSend(send + p * block, c->count, t, (int) p, comm, s);
        r = r == ncclSuccess ? ncclRecv(recv + p * block, c->count, t, (int) p, comm, s) : r;
    }
    ncclResult_t end = ncclGroupEnd();
    return r != ncclSuccess ? r : end;
}

/* A collective's NCCL call, under comm_lock; *call names it. A broadcast's non-roots may have
 * no send view and a reduce's no recv view: NCCL reads neither, so the other buffer stands in. */
static ncclResult_t
cu_coll_call(SimparCuda *cu, const SimparColl *c, ncclComm_t comm, cudaStream_t s,
             const char **call)
{
    void *send = cu_view(cu, c->send), *recv = cu_view(cu, c->recv);
    SimparView typed = simpar_cu_has_view(c->send) ? c->send : c->recv;
    ncclDataType_t t = simpar_cu_nccl_type(cu->bufs[typed.buf].type);
    ncclRedOp_t red = c->red == SIMPAR_RED_MAX ? ncclMax : ncclSum;
    switch (c->kind) {
    case SIMPAR_COLL_ALL_REDUCE:
        *call = "ncclAllReduce(send, recv, count, type, op, comm, stream)";
        return ncclAllReduce(send, recv, c->count, t, red, comm, s);
    case SIMPAR_COLL_ALL_GATHER:
        *call = "ncclAllGather(send, recv, count, type, comm, stream)";
        return ncclAllGather(send, recv, c->count, t, comm, s);
    case SIMPAR_COLL_REDUCE_SCATTER:
        *call = "ncclReduceScatter(send, recv, count, type, op, comm, stream)";
        return ncclReduceScatter(send, recv, c->count, t, red, comm, s);
    case SIMPAR_COLL_BROADCAST:
        *call = "ncclBroadcast(send, recv, count, type, root, comm, stream)";
        return ncclBroadcast(send != NULL ? send : recv, recv, c->count, t, (int) c->root, comm, s);
    case SIMPAR_COLL_REDUCE:
        *call = "ncclReduce(send, recv, count, type, op, root, comm, stream)";
        return ncclReduce(send, recv != NULL ? recv : send, c->count, t, red, (int) c->root, comm,
                          s);
    case SIMPAR_COLL_ALL_TO_ALL:
        *call = "ncclGroupEnd() of an all-to-all's ncclSend/ncclRecv";
        return cu_all_to_all(cu, c, comm, t, s);
    default:
        g_assert_not_reached();
    }
}

/* A collective, a send or a recv: FALSE without an error once the run failed elsewhere. */
static gboolean
cu_comm_op(SimparCuda *cu, const SimparCuRank *lr, const SimparOp *op, cudaStream_t s,
           GError **error)
{
    gboolean coll = op->kind == SIMPAR_OP_COLLECTIVE;
    const SimparP2p *p = &op->u.p2p;
    if (coll ? op->u.coll.count == 0 : p->count == 0) /* the same on every member, or matched
                                                       * with an empty one (schedule check) */
        return TRUE;
    const char *call = NULL;
    ncclResult_t r;
    if (!cu_comm_lock(cu))
        return FALSE;
    ncclComm_t comm = coll ? lr->comms[op->u.coll.group] : lr->world;
    g_assert(comm != NULL); /* simpar_schedule_check: the rank is a member */
    if (coll) {
        r = cu_coll_call(cu, &op->u.coll, comm, s, &call);
    } else {
        ncclDataType_t t = simpar_cu_nccl_type(cu->bufs[p->buf.buf].type);
        void *buf = cu_view(cu, p->buf);
        gboolean send = op->kind == SIMPAR_OP_SEND;
        call = send ? "ncclSend(buf, count, type, peer, comm, stream)"
                    : "ncclRecv(buf, count, type, peer, comm, stream)";
        r = send ? ncclSend(buf, p->count, t, (int) p->peer, comm, s)
                 : ncclRecv(buf, p->count, t, (int) p->peer, comm, s);
    }
    g_mutex_unlock(&cu->comm_lock);
    return cu_nccl_enqueued(cu, comm, r, call, error);
}

static gboolean
cu_exec(SimparCuda *cu, const SimparCuRank *lr, const SimparOp *op, GError **error)
{
    cudaStream_t s = lr->streams[op->stream];
    switch (op->kind) {
    case SIMPAR_OP_COLLECTIVE:
    case SIMPAR_OP_SEND:
    case SIMPAR_OP_RECV:
        return cu_comm_op(cu, lr, op, s, error);
    case SIMPAR_OP_BLOCK: /* only its events */
        return TRUE;
    default: {
        SimparCuCtx ctx = {s, lr->blas[op->stream], cu->tf32, lr->work[op->stream],
                           lr->work_bytes[op->stream]};
        return simpar_cu_compute(&ctx, cu->sched, op, cu->bufs, error);
    }
    }
}

/* Op `i` of the rank waits for its deps on other streams; deps on its own stream are earlier
 * on that stream already. */
static gboolean
cu_wait_deps(SimparCuda *cu, SimparCuRank *lr, const SimparOp *op, guint i, GError **error)
{
    const guint *deps = simpar_schedule_deps(cu->sched, op);
    for (guint d = 0; d < op->n_deps; d++) {
        const SimparOp *dep = simpar_schedule_op(cu->sched, deps[d]);
        guint slot = cu->slot[deps[d]];
        g_assert(dep->rank == op->rank && slot < i); /* its end event is recorded */
        if (dep->stream != op->stream &&
            !SIMPAR_CU_TRY(error,
                           cudaStreamWaitEvent(lr->streams[op->stream], lr->ev_end[slot], 0)))
            return FALSE;
    }
    return TRUE;
}

/* FALSE without an error: the run failed elsewhere. */
static gboolean
cu_issue(SimparCuda *cu, SimparCuRank *lr, guint i, GError **error)
{
    const SimparOp *op = simpar_schedule_op(cu->sched, lr->ops[i]);
    cudaStream_t s = lr->streams[op->stream];
    gboolean ok = cu_wait_deps(cu, lr, op, i, error) &&
                  SIMPAR_CU_TRY(error, cudaEventRecord(lr->ev_start[i], s)) &&
                  cu_exec(cu, lr, op, error) &&
                  SIMPAR_CU_TRY(error, cudaEventRecord(lr->ev_end[i], s));
    if (!ok) {
        g_prefix_error(error, "op '%s' (rank %u): ", op->name, op->rank);
        return FALSE;
    }
    g_atomic_int_set(&lr->progress, (gint) i + 2);
    return TRUE;
}

/* ---- one rank's thread -------------------------------------------------------------------- */

/* The barrier over all ranks, then the time origin on stream 0, which every stream waits for.
 * FALSE without an error: the run failed elsewhere. */
static gboolean
cu_rank_begin(SimparCuda *cu, SimparCuRank *lr, GError **error)
{
    cudaStream_t s0 = lr->streams[0];
    if (!cu_comm_lock(cu))
        return FALSE;
    ncclComm_t world = lr->world;
    ncclResult_t r = ncclAllReduce(lr->barrier, lr->barrier, 1, ncclFloat, ncclSum, world, s0);
    g_mutex_unlock(&cu->comm_lock);
    if (!cu_nccl_enqueued(cu, world, r, "ncclAllReduce(barrier, 1 float, sum, world)", error) ||
        !SIMPAR_CU_TRY(error, cudaEventRecord(lr->origin, s0))) {
        g_prefix_error(error, "rank %u, start barrier: ", lr->rank);
        return FALSE;
    }
    for (guint s = 1; s < cu->n_streams; s++)
        if (!SIMPAR_CU_TRY(error, cudaStreamWaitEvent(lr->streams[s], lr->origin, 0)))
            return FALSE;
    g_atomic_int_set(&lr->progress, 1);
    return TRUE;
}

/* Moves each stream's count of completed ops past the end events that completed since (a
 * stream completes its ops in order); *done once the origin and every op completed. */
static gboolean
cu_rank_advance(SimparCuRank *lr, guint n_streams, gboolean *done, GError **error)
{
    if (!cu_event_query(lr->origin, done, error))
        return FALSE;
    for (guint s = 0; s < n_streams; s++) {
        const guint *slots = lr->stream_slots + lr->stream_start[s];
        guint n = lr->stream_start[s + 1] - lr->stream_start[s];
        gboolean finished = TRUE;
        while (lr->done[s] < n && finished) {
            if (!cu_event_query(lr->ev_end[slots[lr->done[s]]], &finished, error))
                return FALSE;
            if (finished) {
                lr->done[s]++;
                g_atomic_int_inc(&lr->completed);
            }
        }
        *done = *done && lr->done[s] == n;
    }
    return TRUE;
}

/* An asynchronous error of any of the rank's communicators fails the run. FALSE without an
 * error: the run failed elsewhere. */
static gboolean
cu_rank_async(SimparCuda *cu, SimparCuRank *lr, GError **error)
{
    if (!cu_comm_lock(cu))
        return FALSE;
    gboolean ok = TRUE;
    for (guint g = 0; g <= cu->n_groups && ok; g++) {
        ncclComm_t comm = *simpar_cu_comm_slot(cu, lr, g);
        ncclResult_t r = ncclSuccess;
        if (comm == NULL || !(ok = simpar_cu_comm_state(comm, &r, error)) || r == ncclSuccess ||
            r == ncclInProgress)
            continue;
        g_autofree char *what =
            g_strdup_printf("rank %u: asynchronous error of the communicator of %s%s%s", lr->rank,
                            g < cu->n_groups ? "group '" : "all ranks",
                            g < cu->n_groups ? simpar_schedule_group(cu->sched, g)->axis : "",
                            g < cu->n_groups ? "'" : "");
        ok = simpar_cu_check_nccl(r, what, error);
    }
    g_mutex_unlock(&cu->comm_lock);
    return ok;
}

/* Polls until every op of the rank completed. FALSE without an error: another rank failed. */
static gboolean
cu_rank_wait(SimparCuda *cu, SimparCuRank *lr, GError **error)
{
    for (guint round = 0;; round++) {
        gboolean done = FALSE;
        if (cu_failed(cu) || !cu_rank_advance(lr, cu->n_streams, &done, error) ||
            !cu_rank_async(cu, lr, error))
            return FALSE;
        if (done)
            return TRUE;
        cu_backoff(round);
    }
}

static gboolean
cu_rank_times(SimparCuda *cu, SimparCuRank *lr, GError **error)
{
    if (cu->spans == NULL)
        return TRUE;
    for (guint i = 0; i < lr->n_ops; i++) {
        float start_ms, end_ms;
        if (!SIMPAR_CU_TRY(error, cudaEventElapsedTime(&start_ms, lr->origin, lr->ev_start[i])) ||
            !SIMPAR_CU_TRY(error, cudaEventElapsedTime(&end_ms, lr->origin, lr->ev_end[i])))
            return FALSE;
        cu->spans[lr->ops[i]] = (SimparSpan){start_ms / 1000.0, end_ms / 1000.0};
    }
    return TRUE;
}

/* FALSE without an error: another rank failed first. */
static gboolean
cu_rank_run(SimparCuda *cu, SimparCuRank *lr, GError **error)
{
    if (!SIMPAR_CU_TRY(error, cudaSetDevice(lr->device)) || !cu_rank_begin(cu, lr, error))
        return FALSE;
    for (guint i = 0; i < lr->n_ops; i++)
        if (cu_failed(cu) || !cu_issue(cu, lr, i, error))
            return FALSE;
    return cu_rank_wait(cu, lr, error) && cu_rank_times(cu, lr, error);
}

static gpointer
cu_rank_main(gpointer data)
{
    SimparCuRank *lr = data;
    SimparCuda *cu = lr->cu;
    GError *err = NULL;
    if (!cu_rank_run(cu, lr, &err)) {
        if (err != NULL)
            cu_fail(cu, err);
        g_assert(cu_failed(cu));
    }
    g_mutex_lock(&cu->run_lock);
    cu->n_finished++;
    g_cond_broadcast(&cu->run_cond);
    g_mutex_unlock(&cu->run_lock);
    return NULL;
}

/* ---- the run ------------------------------------------------------------------------------ */

/* Starts every rank's thread (until one cannot be); n_started says how many run. */
static void
cu_run_start(SimparCuda *cu)
{
    for (guint l = 0; l < cu->n_local && !cu_failed(cu); l++) {
        SimparCuRank *lr = &cu->local[l];
        g_autofree char *name = g_strdup_printf("simpar-cuda-%u", lr->rank);
        GError *err = NULL;
        g_atomic_int_set(&lr->progress, 0);
        g_atomic_int_set(&lr->completed, 0);
        memset(lr->done, 0, cu->n_streams * sizeof(guint));
        g_mutex_lock(&cu->run_lock);
        lr->thread = g_thread_try_new(name, cu_rank_main, lr, &err);
        cu->n_started += lr->thread != NULL;
        g_mutex_unlock(&cu->run_lock);
        if (lr->thread == NULL) {
            g_prefix_error(&err, "starting the thread of rank %u: ", lr->rank);
            cu_fail(cu, err);
        }
    }
}

/* The watchdog's view of the run: a thread's error, every thread done, or progress (an op
 * issued or completed anywhere) since the last poll. */
static SimparWatchState
cu_run_poll(gpointer data, GError **error)
{
    SimparCuda *cu = data;
    g_mutex_lock(&cu->run_lock); /* first: a thread records its error before it finishes */
    gboolean all = cu->n_finished == cu->n_started;
    g_mutex_unlock(&cu->run_lock);
    g_mutex_lock(&cu->error_lock);
    GError *err = cu->error != NULL ? g_error_copy(cu->error) : NULL;
    g_mutex_unlock(&cu->error_lock);
    if (err != NULL) {
        g_propagate_error(error, err);
        return SIMPAR_WATCH_FAILED;
    }
    if (all)
        return SIMPAR_WATCH_DONE;
    gint64 moved = 0;
    for (guint l = 0; l < cu->n_local; l++)
        moved += g_atomic_int_get(&cu->local[l].progress) +
                 (gint64) g_atomic_int_get(&cu->local[l].completed);
    if (moved == cu->moved)
        return SIMPAR_WATCH_PENDING;
    cu->moved = moved;
    return SIMPAR_WATCH_PROGRESS;
}

static void
cu_run_stuck(gpointer data, GString *where)
{
    SimparCuda *cu = data;
    for (guint l = 0; l < cu->n_local; l++)
        cu_rank_stuck(cu, &cu->local[l], where);
}

/* After a failure or a timeout: stops the threads, lets them leave NCCL alone, then aborts every
 * communicator, which also frees a thread blocked in a CUDA call behind an NCCL kernel. */
static void
cu_run_abort(gpointer data)
{
    SimparCuda *cu = data;
    gint64 grace = g_get_monotonic_time() + CU_GRACE_US;
    g_atomic_int_set(&cu->failed, 1);
    g_mutex_lock(&cu->run_lock);
    while (cu->n_finished < cu->n_started && g_cond_wait_until(&cu->run_cond, &cu->run_lock, grace))
        ;
    g_mutex_unlock(&cu->run_lock);
    g_mutex_lock(&cu->comm_lock);
    simpar_cu_comms_release(cu, TRUE);
    g_mutex_unlock(&cu->comm_lock);
}

gboolean
simpar_cuda_run(SimparCuda *cu, SimparSpan *spans, GError **error)
{
    g_return_val_if_fail(cu != NULL, FALSE);
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    if (!simpar_cu_usable(cu, error))
        return FALSE;
    cu->spans = spans;
    cu->n_finished = cu->n_started = 0;
    cu->moved = -1;
    g_atomic_int_set(&cu->failed, 0);
    guint n_ops = simpar_schedule_n_ops(cu->sched);
    g_autofree char *what =
        cu->n_local == cu->n_ranks
            ? g_strdup_printf("running the schedule's %u ops on all %u ranks", n_ops, cu->n_ranks)
        : cu->n_local == 1 ? g_strdup_printf("running the schedule's %u ops on rank %u of %u",
                                             n_ops, cu->local[0].rank, cu->n_ranks)
                           : g_strdup_printf("running the schedule's %u ops on %u of the %u ranks",
                                             n_ops, cu->n_local, cu->n_ranks);
    SimparWatch w = {.what = what,
                     .advice = SIMPAR_CU_ADVICE,
                     .timeout_s = cu->timeout_s,
                     .data = cu,
                     .poll = cu_run_poll,
                     .abort = cu_run_abort,
                     .stuck = cu_run_stuck};
    g_autoptr(GError) failure = NULL;
    cu_run_start(cu);
    gboolean ok = simpar_watch_wait(&w, &failure);
    for (guint l = 0; l < cu->n_local; l++)
        if (cu->local[l].thread != NULL)
            g_thread_join(g_steal_pointer(&cu->local[l].thread));
    cu->spans = NULL;
    g_clear_error(&cu->error);
    if (ok)
        return TRUE;
    cu->unusable = g_strdup(failure->message);
    g_propagate_error(error, g_steal_pointer(&failure));
    return FALSE;
}
