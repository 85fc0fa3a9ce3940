/* cuda.c - the CUDA executor's devices, buffers, streams, events and NCCL communicators; a run
 * is cuda-run.c's, the math of compute ops cuda-compute.c's.
 *
 * Setup (simpar_cuda_new, in the calling thread, one local rank after the other): cudaSetDevice;
 * the rank's buffers (cudaMalloc + zeros); per schedule stream a non-blocking CUDA stream, a
 * cuBLAS handle (one per stream: a handle shared by concurrent streams would race on its
 * workspace) and a device workspace for the stream's compute ops; two timing events per op.
 *
 * Communicators, all in NCCL's non-blocking mode (config.blocking = 0: an NCCL call never waits
 * for the other ranks, it returns ncclInProgress and ncclCommGetAsyncError says when it is
 * done): ncclCommInitRankConfig of every local rank between one ncclGroupStart/End, NCCL's way
 * for one thread to create several ranks; then, group after group of the schedule in the same
 * order on every rank, ncclCommSplit of the world communicator (members: color 0 and their
 * index in the group as key, so communicator rank = group index; others NCCL_SPLIT_NOCOLOR),
 * again grouped over the local ranks. Send/recv use the world communicator and global ranks.
 *
 *   ncclGroupStart ─ InitRankConfig x local ranks ─ ncclGroupEnd ─ poll ─┐  each poll loop a
 *   ncclGroupStart ─ CommSplit x local ranks ─ ncclGroupEnd ─ poll ──────┤  simpar_watch_wait:
 *   ... one split per group ...                                          │  no progress for the
 *   teardown: ncclCommFinalize x all ─ poll ─ ncclCommDestroy x all ─────┘  timeout: abort all
 *
 * A rank that never arrives (a process that died or runs another schedule) is a timeout naming
 * the step and the local ranks still waiting, after ncclCommAbort of every communicator of the
 * process, not a hang. A failed setup or run, or a finalize that does not finish, ends with
 * ncclCommAbort instead of ncclCommDestroy.
 */
#include "cuda-kernels.h"
#include "cuda-private.h"
#include "watchdog.h"
#include <string.h>

G_DEFINE_QUARK(simpar_cuda_error_quark, simpar_cuda_error)

#define CU_DEFAULT_TIMEOUT_S 300.0

/* ---- errors and devices ------------------------------------------------------------------- */

gboolean
simpar_cu_check_nccl(ncclResult_t r, const char *call, GError **error)
{
    if (r == ncclSuccess)
        return TRUE;
    const char *last = ncclGetLastError(NULL);
    gboolean detail = last != NULL && last[0] != '\0';
    g_set_error(error, SIMPAR_CUDA_ERROR, SIMPAR_CUDA_ERROR_CALL, "%s: %s%s%s%s", call,
                ncclGetErrorString(r), detail ? " (NCCL's last message: " : "", detail ? last : "",
                detail ? ")" : "");
    return FALSE;
}

gboolean
simpar_cuda_devices(int *n, GError **error)
{
    g_return_val_if_fail(n != NULL, FALSE);
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    int count = 0;
    g_autoptr(GError) local = NULL;
    if (!SIMPAR_CU_TRY(&local, cudaGetDeviceCount(&count))) {
        g_set_error(error, SIMPAR_CUDA_ERROR, SIMPAR_CUDA_ERROR_NO_DEVICE,
                    "no usable CUDA device: %s; --executor host runs the same schedule on the CPU",
                    local->message);
        return FALSE;
    }
    if (count <= 0) {
        g_set_error_literal(error, SIMPAR_CUDA_ERROR, SIMPAR_CUDA_ERROR_NO_DEVICE,
                            "no usable CUDA device: cudaGetDeviceCount found none; --executor "
                            "host runs the same schedule on the CPU");
        return FALSE;
    }
    *n = count;
    return TRUE;
}

char *
simpar_cuda_device_name(int device)
{
    struct cudaDeviceProp p;
    g_autoptr(GError) error = NULL;
    if (!SIMPAR_CU_TRY(&error, cudaGetDeviceProperties(&p, device)))
        return g_strdup_printf("CUDA device %d (unknown: %s)", device, error->message);
    return g_strdup_printf("%s (sm_%d%d, %.1f GiB, %d SMs)", p.name, p.major, p.minor,
                           (double) p.totalGlobalMem / (1024.0 * 1024.0 * 1024.0),
                           p.multiProcessorCount); /* (transfer full) */
}

gboolean
simpar_cuda_unique_id(guint8 id[SIMPAR_CUDA_ID_BYTES], GError **error)
{
    g_return_val_if_fail(id != NULL, FALSE);
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    ncclUniqueId u;
    G_STATIC_ASSERT(sizeof(u.internal) == SIMPAR_CUDA_ID_BYTES);
    if (!SIMPAR_NCCL_TRY(error, ncclGetUniqueId(&u)))
        return FALSE;
    memcpy(id, u.internal, SIMPAR_CUDA_ID_BYTES);
    return TRUE;
}

/* ---- what this executor refuses before touching a GPU ------------------------------------- */

static gboolean
cu_check_ranks(const SimparSchedule *sched, const SimparCudaConfig *cfg, GError **error)
{
    guint n_ranks = simpar_schedule_n_ranks(sched);
    if (cfg->n_local == 0) {
        g_set_error_literal(error, SIMPAR_CUDA_ERROR, SIMPAR_CUDA_ERROR_INVALID,
                            "no ranks to run: n_local is 0");
        return FALSE;
    }
    for (guint l = 0; l < cfg->n_local; l++) {
        if (cfg->ranks[l] >= n_ranks) {
            g_set_error(error, SIMPAR_CUDA_ERROR, SIMPAR_CUDA_ERROR_INVALID,
                        "rank %u is not in the schedule, which has ranks 0 to %u", cfg->ranks[l],
                        n_ranks - 1);
            return FALSE;
        }
        for (guint k = 0; k < l; k++) {
            if (cfg->ranks[k] == cfg->ranks[l]) {
                g_set_error(error, SIMPAR_CUDA_ERROR, SIMPAR_CUDA_ERROR_INVALID,
                            "rank %u is given twice", cfg->ranks[l]);
                return FALSE;
            }
        }
    }
    return TRUE;
}

static gboolean
cu_check_devices(const SimparCudaConfig *cfg, GError **error)
{
    int n;
    if (!simpar_cuda_devices(&n, error))
        return FALSE;
    for (guint l = 0; l < cfg->n_local; l++) {
        if (cfg->devices[l] < 0 || cfg->devices[l] >= n) {
            g_set_error(error, SIMPAR_CUDA_ERROR, SIMPAR_CUDA_ERROR_NO_DEVICE,
                        "rank %u: there is no CUDA device %d (this machine has %d, 0 to %d)",
                        cfg->ranks[l], cfg->devices[l], n, n - 1);
            return FALSE;
        }
        for (guint k = 0; k < l; k++) {
            if (cfg->devices[k] == cfg->devices[l]) {
                g_set_error(error, SIMPAR_CUDA_ERROR, SIMPAR_CUDA_ERROR_INVALID,
                            "CUDA device %d is given to ranks %u and %u; every rank needs a GPU "
                            "of its own",
                            cfg->devices[l], cfg->ranks[k], cfg->ranks[l]);
                return FALSE;
            }
        }
    }
    return TRUE;
}

gboolean
simpar_cu_has_view(SimparView v)
{
    return v.buf != G_MAXUINT;
}

/* NCCL lets the send and recv of a collective overlap only in place. */
static gboolean
cu_coll_in_place(const SimparSchedule *sched, const SimparOp *op)
{
    const SimparColl *c = &op->u.coll;
    gsize index = simpar_group_index(sched, c->group, op->rank);
    switch (c->kind) {
    case SIMPAR_COLL_ALL_GATHER:
        return c->send.off == c->recv.off + index * c->count;
    case SIMPAR_COLL_REDUCE_SCATTER:
        return c->recv.off == c->send.off + index * c->count;
    case SIMPAR_COLL_ALL_TO_ALL:
        return FALSE;
    default:
        return c->send.off == c->recv.off;
    }
}

/* One element type for send and recv (NCCL has one datatype per call), and no overlap of the
 * two but NCCL's in-place layouts (the host executor accepts any; NCCL's result would not be
 * defined). Every process checks every rank's ops, so all of them refuse the same schedule
 * before any of them waits for the others in ncclCommInitRank. */
static gboolean
cu_check_coll(const SimparSchedule *sched, const SimparCuType *types, const SimparOp *op,
              GError **error)
{
    const SimparColl *c = &op->u.coll;
    if (!simpar_cu_has_view(c->send) || !simpar_cu_has_view(c->recv))
        return TRUE;
    const SimparBuffer *sb = simpar_schedule_buffer(sched, c->send.buf);
    const SimparBuffer *rb = simpar_schedule_buffer(sched, c->recv.buf);
    if (types[c->send.buf] != types[c->recv.buf]) {
        g_set_error(error, SIMPAR_CUDA_ERROR, SIMPAR_CUDA_ERROR_INVALID,
                    "op '%s' (rank %u): %s from a %s buffer ('%s') into a %s buffer ('%s'); "
                    "NCCL needs one element type",
                    op->name, op->rank, simpar_coll_kind_name(c->kind),
                    simpar_cu_type_name(types[c->send.buf]), sb->name,
                    simpar_cu_type_name(types[c->recv.buf]), rb->name);
        return FALSE;
    }
    gsize send_n, recv_n;
    simpar_op_coll_counts(sched, op, &send_n, &recv_n);
    gboolean overlap = c->send.buf == c->recv.buf && send_n > 0 && recv_n > 0 &&
                       c->send.off < c->recv.off + recv_n && c->recv.off < c->send.off + send_n;
    if (!overlap || cu_coll_in_place(sched, op))
        return TRUE;
    g_set_error(error, SIMPAR_CUDA_ERROR, SIMPAR_CUDA_ERROR_INVALID,
                "op '%s' (rank %u): the send and recv views of this %s overlap in '%s', which "
                "NCCL allows only in place (same offset; all-gather: send at recv + "
                "index*count; reduce-scatter: recv at send + index*count; all-to-all: never)",
                op->name, op->rank, simpar_coll_kind_name(c->kind), sb->name);
    return FALSE;
}

static gboolean
cu_check_ops(const SimparSchedule *sched, const SimparCuType *types, GError **error)
{
    for (guint i = 0; i < simpar_schedule_n_ops(sched); i++) {
        const SimparOp *op = simpar_schedule_op(sched, i);
        if (op->kind == SIMPAR_OP_COLLECTIVE && !cu_check_coll(sched, types, op, error))
            return FALSE;
    }
    return TRUE;
}

/* ---- setup -------------------------------------------------------------------------------- */

static gboolean
cu_is_compute(SimparOpKind kind)
{
    return kind != SIMPAR_OP_COLLECTIVE && kind != SIMPAR_OP_SEND && kind != SIMPAR_OP_RECV &&
           kind != SIMPAR_OP_BLOCK;
}

static void
cu_rank_init(SimparCuda *cu, SimparCuRank *lr, guint rank, int device)
{
    lr->cu = cu, lr->rank = rank, lr->device = device;
    lr->ops = simpar_schedule_rank_ops(cu->sched, rank, &lr->n_ops);
    lr->streams = g_new0(cudaStream_t, cu->n_streams);
    lr->blas = g_new0(cublasHandle_t, cu->n_streams);
    lr->work = g_new0(void *, cu->n_streams);
    lr->work_bytes = g_new0(gsize, cu->n_streams);
    lr->ev_start = g_new0(cudaEvent_t, lr->n_ops);
    lr->ev_end = g_new0(cudaEvent_t, lr->n_ops);
    lr->comms = g_new0(ncclComm_t, cu->n_groups);
    lr->done = g_new0(guint, cu->n_streams);
    lr->stream_start = g_new0(guint, cu->n_streams + 1);
    lr->stream_slots = g_new(guint, MAX(lr->n_ops, 1));
    for (guint i = 0; i < lr->n_ops; i++)
        lr->stream_start[simpar_schedule_op(cu->sched, lr->ops[i])->stream + 1]++;
    for (guint s = 0; s < cu->n_streams; s++)
        lr->stream_start[s + 1] += lr->stream_start[s];
    g_autofree guint *fill = g_memdup2(lr->stream_start, cu->n_streams * sizeof(guint));
    for (guint i = 0; i < lr->n_ops; i++)
        lr->stream_slots[fill[simpar_schedule_op(cu->sched, lr->ops[i])->stream]++] = i;
}

/* Host-side state only: nothing here can fail. */
static SimparCuda *
cu_alloc(const SimparSchedule *sched, const SimparCudaConfig *cfg, const SimparCuType *types)
{
    SimparCuda *cu = g_new0(SimparCuda, 1);
    g_mutex_init(&cu->error_lock);
    g_mutex_init(&cu->run_lock);
    g_cond_init(&cu->run_cond);
    g_mutex_init(&cu->comm_lock);
    cu->sched = sched;
    cu->n_ranks = simpar_schedule_n_ranks(sched);
    cu->n_streams = simpar_schedule_n_streams(sched);
    cu->n_groups = simpar_schedule_n_groups(sched);
    cu->n_buffers = simpar_schedule_n_buffers(sched);
    cu->n_local = cfg->n_local;
    cu->tf32 = cfg->tf32;
    cu->timeout_s = cfg->nccl_timeout_s > 0 ? cfg->nccl_timeout_s : CU_DEFAULT_TIMEOUT_S;
    cu->bufs = g_new0(SimparCuBuf, cu->n_buffers);
    cu->saved = g_new0(void *, cu->n_buffers);
    cu->saved_host = g_new0(void *, cu->n_buffers);
    for (guint b = 0; b < cu->n_buffers; b++)
        cu->bufs[b] = (SimparCuBuf){NULL, types[b], simpar_schedule_buffer(sched, b)->elems};
    cu->slot = g_new0(guint, simpar_schedule_n_ops(sched));
    for (guint r = 0; r < cu->n_ranks; r++) {
        guint n;
        const guint *ops = simpar_schedule_rank_ops(sched, r, &n);
        for (guint i = 0; i < n; i++)
            cu->slot[ops[i]] = i;
    }
    cu->local_of = g_new(guint, cu->n_ranks);
    memset(cu->local_of, 0xff, cu->n_ranks * sizeof(guint));
    cu->local = g_new0(SimparCuRank, cu->n_local);
    for (guint l = 0; l < cu->n_local; l++) {
        cu_rank_init(cu, &cu->local[l], cfg->ranks[l], cfg->devices[l]);
        cu->local_of[cfg->ranks[l]] = l;
    }
    return cu; /* (transfer full) */
}

/* The rank's buffers, zero-filled, and the start barrier's float. */
static gboolean
cu_rank_buffers(SimparCuda *cu, SimparCuRank *lr, GError **error)
{
    for (guint b = 0; b < cu->n_buffers; b++) {
        const SimparBuffer *buf = simpar_schedule_buffer(cu->sched, b);
        SimparCuBuf *cb = &cu->bufs[b];
        if (buf->rank != lr->rank || cb->elems == 0)
            continue;
        gsize bytes = cb->elems * simpar_cu_type_size(cb->type);
        if (!SIMPAR_CU_TRY(error, cudaMalloc(&cb->ptr, bytes)) ||
            !SIMPAR_CU_TRY(error, cudaMemset(cb->ptr, 0, bytes))) {
            g_prefix_error(error, "buffer '%s' (%" G_GSIZE_FORMAT " bytes of %s): ", buf->name,
                           bytes, simpar_cu_type_name(cb->type));
            return FALSE;
        }
    }
    return SIMPAR_CU_TRY(error, cudaMalloc((void **) &lr->barrier, sizeof(float))) &&
           SIMPAR_CU_TRY(error, cudaMemset(lr->barrier, 0, sizeof(float)));
}

/* The most scratch any compute op of the rank on `stream` needs. */
static gsize
cu_stream_workspace(SimparCuda *cu, const SimparCuRank *lr, guint stream)
{
    gsize most = 0;
    for (guint i = 0; i < lr->n_ops; i++) {
        const SimparOp *op = simpar_schedule_op(cu->sched, lr->ops[i]);
        if (op->stream == stream && cu_is_compute(op->kind))
            most = MAX(most, simpar_cu_workspace(cu->sched, op));
    }
    return most;
}

static gboolean
cu_rank_streams(SimparCuda *cu, SimparCuRank *lr, GError **error)
{
    for (guint s = 0; s < cu->n_streams; s++) {
        lr->work_bytes[s] = cu_stream_workspace(cu, lr, s);
        if (!SIMPAR_CU_TRY(error,
                           cudaStreamCreateWithFlags(&lr->streams[s], cudaStreamNonBlocking)) ||
            !SIMPAR_CUBLAS_TRY(error, cublasCreate(&lr->blas[s])) ||
            (lr->work_bytes[s] > 0 &&
             !SIMPAR_CU_TRY(error, cudaMalloc(&lr->work[s], lr->work_bytes[s])))) {
            g_prefix_error(error, "stream '%s': ", simpar_schedule_stream_name(cu->sched, s));
            return FALSE;
        }
    }
    return TRUE;
}

static gboolean
cu_rank_events(SimparCuRank *lr, GError **error)
{
    if (!SIMPAR_CU_TRY(error, cudaEventCreate(&lr->origin)))
        return FALSE;
    for (guint i = 0; i < lr->n_ops; i++)
        if (!SIMPAR_CU_TRY(error, cudaEventCreate(&lr->ev_start[i])) ||
            !SIMPAR_CU_TRY(error, cudaEventCreate(&lr->ev_end[i])))
            return FALSE;
    return TRUE;
}

static gboolean
cu_rank_setup(SimparCuda *cu, SimparCuRank *lr, GError **error)
{
    /* the zeros are written on the legacy default stream, which the rank's non-blocking
     * streams do not wait for: synchronize before anything runs on those */
    gboolean ok = SIMPAR_CU_TRY(error, cudaSetDevice(lr->device)) &&
                  cu_rank_buffers(cu, lr, error) && cu_rank_streams(cu, lr, error) &&
                  cu_rank_events(lr, error) && SIMPAR_CU_TRY(error, cudaDeviceSynchronize());
    if (!ok)
        g_prefix_error(error, "rank %u (CUDA device %d): ", lr->rank, lr->device);
    return ok;
}

/* ---- NCCL in non-blocking mode ------------------------------------------------------------ */

/* A call on a non-blocking communicator: ncclInProgress means it started; its end is polled. */
static gboolean
cu_nccl_started(ncclResult_t r, const char *call, GError **error)
{
    return r == ncclInProgress || simpar_cu_check_nccl(r, call, error);
}

#define CU_NCCL_START(error, call) cu_nccl_started((call), #call, (error))

/* Closes an ncclGroupStart() even after a failure inside the group; the first error wins. */
static gboolean
cu_group_end(gboolean ok, GError **error)
{
    g_autoptr(GError) later = NULL;
    gboolean ended = CU_NCCL_START(ok ? error : &later, ncclGroupEnd());
    return ok && ended;
}

/* *state: ncclSuccess (ready), ncclInProgress or the communicator's error. */
gboolean
simpar_cu_comm_state(ncclComm_t comm, ncclResult_t *state, GError **error)
{
    *state = ncclInProgress;
    return SIMPAR_NCCL_TRY(error, ncclCommGetAsyncError(comm, state));
}

static ncclConfig_t
cu_nccl_config(void)
{
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    return config;
}

/* (transfer none): comms[i] of `lr`, i <= n_groups (the last: the world). */
ncclComm_t *
simpar_cu_comm_slot(SimparCuda *cu, SimparCuRank *lr, guint i)
{
    return i < cu->n_groups ? &lr->comms[i] : &lr->world;
}

/* Every communicator of every local rank, in one NCCL group: aborting them one by one could
 * reclaim one whose kernels wait behind a kernel of a communicator not yet aborted. */
void
simpar_cu_comms_release(SimparCuda *cu, gboolean abort)
{
    gboolean ok = SIMPAR_NCCL_TRY(NULL, ncclGroupStart());
    for (guint l = 0; l < cu->n_local; l++) {
        for (guint g = 0; g <= cu->n_groups; g++) {
            ncclComm_t *comm = simpar_cu_comm_slot(cu, &cu->local[l], g); /* world last */
            if (*comm == NULL)
                continue;
            if (abort)
                (void) SIMPAR_NCCL_TRY(NULL, ncclCommAbort(*comm));
            else
                (void) SIMPAR_NCCL_TRY(NULL, ncclCommDestroy(*comm));
            *comm = NULL;
        }
    }
    if (ok)
        (void) SIMPAR_NCCL_TRY(NULL, ncclGroupEnd());
}

/* ---- communicators: creation and teardown, each a simpar_watch_wait ----------------------- */

#define CU_COMMS_WORLD G_MAXUINT       /* the world communicators only */
#define CU_COMMS_ALL   (G_MAXUINT - 1) /* every communicator */

/* What one of these waits polls: the world communicator of every local rank, then (a split)
 * their new communicator of `group`, or (a finalize) all of them. */
typedef struct {
    SimparCuda *cu;
    guint group; /* a group, CU_COMMS_WORLD or CU_COMMS_ALL */
    const char *what;
} CuWait;

/* One communicator of rank `lr`: DONE when ready, PENDING while in progress. */
static SimparWatchState
cu_wait_comm(const CuWait *wt, const SimparCuRank *lr, ncclComm_t comm, GError **error)
{
    ncclResult_t state;
    if (!simpar_cu_comm_state(comm, &state, error) ||
        (state != ncclSuccess && state != ncclInProgress &&
         !simpar_cu_check_nccl(state, "the communicator's asynchronous error", error))) {
        g_prefix_error(error, "%s: rank %u: ", wt->what, lr->rank);
        return SIMPAR_WATCH_FAILED;
    }
    return state == ncclSuccess ? SIMPAR_WATCH_DONE : SIMPAR_WATCH_PENDING;
}

/* A split: once its parent is ready, a member has its communicator (NCCL publishes it at the
 * end of the split), which must be ready too. */
static SimparWatchState
cu_wait_split(const CuWait *wt, SimparCuRank *lr, GError **error)
{
    if (simpar_group_index(wt->cu->sched, wt->group, lr->rank) == G_MAXUINT)
        return SIMPAR_WATCH_DONE;
    ncclComm_t comm = g_atomic_pointer_get(&lr->comms[wt->group]);
    if (comm != NULL)
        return cu_wait_comm(wt, lr, comm, error);
    g_set_error(error, SIMPAR_CUDA_ERROR, SIMPAR_CUDA_ERROR_CALL,
                "%s: rank %u: ncclCommSplit finished without a communicator for a member", wt->what,
                lr->rank);
    return SIMPAR_WATCH_FAILED;
}

static SimparWatchState
cu_wait_rank(const CuWait *wt, SimparCuRank *lr, GError **error)
{
    SimparCuda *cu = wt->cu;
    SimparWatchState all = SIMPAR_WATCH_DONE;
    for (guint i = wt->group == CU_COMMS_ALL ? 0 : cu->n_groups; i <= cu->n_groups; i++) {
        ncclComm_t comm = *simpar_cu_comm_slot(cu, lr, i);
        SimparWatchState s = comm != NULL ? cu_wait_comm(wt, lr, comm, error) : SIMPAR_WATCH_DONE;
        if (s == SIMPAR_WATCH_FAILED)
            return s;
        all = s == SIMPAR_WATCH_PENDING ? s : all;
    }
    if (all == SIMPAR_WATCH_DONE && wt->group < cu->n_groups)
        return cu_wait_split(wt, lr, error);
    return all;
}

static SimparWatchState
cu_wait_poll(gpointer data, GError **error)
{
    CuWait *wt = data;
    SimparWatchState all = SIMPAR_WATCH_DONE;
    for (guint l = 0; l < wt->cu->n_local; l++) {
        SimparWatchState s = cu_wait_rank(wt, &wt->cu->local[l], error);
        if (s == SIMPAR_WATCH_FAILED)
            return s;
        all = s == SIMPAR_WATCH_PENDING ? s : all;
    }
    return all;
}

/* "ranks 0, 1 not ready" */
static void
cu_wait_stuck(gpointer data, GString *where)
{
    CuWait *wt = data;
    guint n = 0;
    for (guint l = 0; l < wt->cu->n_local; l++) {
        SimparCuRank *lr = &wt->cu->local[l];
        if (cu_wait_rank(wt, lr, NULL) == SIMPAR_WATCH_PENDING)
            g_string_append_printf(where, "%s%u", n++ > 0 ? ", " : "", lr->rank);
    }
    if (n == 0)
        g_string_append(where, "every rank of this process ready");
    else
        g_string_prepend(where, n > 1 ? "ranks " : "rank ");
    if (n > 0)
        g_string_append(where, " of this process still waiting for the others");
}

/* After a failed or late setup: every communicator aborted, twice, for a split's new
 * communicator that NCCL publishes while its parent is being aborted. */
static void
cu_wait_abort(gpointer data)
{
    CuWait *wt = data;
    simpar_cu_comms_release(wt->cu, TRUE);
    simpar_cu_comms_release(wt->cu, TRUE);
}

static gboolean
cu_comms_wait(SimparCuda *cu, guint group, const char *what, GError **error)
{
    CuWait wt = {cu, group, what};
    SimparWatch w = {.what = what,
                     .advice = SIMPAR_CU_ADVICE,
                     .timeout_s = cu->timeout_s,
                     .data = &wt,
                     .poll = cu_wait_poll,
                     .abort = cu_wait_abort,
                     .stuck = cu_wait_stuck};
    return simpar_watch_wait(&w, error);
}

static gboolean
cu_comm_init(SimparCuda *cu, const guint8 *nccl_id, GError **error)
{
    ncclUniqueId id;
    ncclConfig_t config = cu_nccl_config();
    memcpy(id.internal, nccl_id, SIMPAR_CUDA_ID_BYTES);
    g_autofree char *what =
        g_strdup_printf("creating the NCCL communicator of all %u ranks", cu->n_ranks);
    if (!SIMPAR_NCCL_TRY(error, ncclGroupStart()))
        return FALSE;
    gboolean ok = TRUE;
    for (guint l = 0; l < cu->n_local && ok; l++) {
        SimparCuRank *lr = &cu->local[l];
        ok = SIMPAR_CU_TRY(error, cudaSetDevice(lr->device)) &&
             CU_NCCL_START(error, ncclCommInitRankConfig(&lr->world, (int) cu->n_ranks, id,
                                                         (int) lr->rank, &config));
    }
    if (!cu_group_end(ok, error)) {
        g_prefix_error(error, "%s: ", what);
        return FALSE;
    }
    return cu_comms_wait(cu, CU_COMMS_WORLD, what, error);
}

/* The split must have made the member's communicator rank its index in the group. */
static gboolean
cu_comm_verify(SimparCuda *cu, const SimparCuRank *lr, guint g, GError **error)
{
    guint index = simpar_group_index(cu->sched, g, lr->rank);
    if (index == G_MAXUINT)
        return TRUE;
    int rank = -1, count = -1;
    if (!SIMPAR_NCCL_TRY(error, ncclCommUserRank(lr->comms[g], &rank)) ||
        !SIMPAR_NCCL_TRY(error, ncclCommCount(lr->comms[g], &count)))
        return FALSE;
    if (rank == (int) index && count == (int) simpar_schedule_group(cu->sched, g)->size)
        return TRUE;
    g_set_error(error, SIMPAR_CUDA_ERROR, SIMPAR_CUDA_ERROR_CALL,
                "ncclCommSplit made rank %u member %d of %d, not %u of %u", lr->rank, rank, count,
                index, simpar_schedule_group(cu->sched, g)->size);
    return FALSE;
}

static gboolean
cu_comm_split(SimparCuda *cu, guint g, GError **error)
{
    const SimparGroup *group = simpar_schedule_group(cu->sched, g);
    g_autofree char *what = g_strdup_printf("splitting the NCCL communicator of group %u ('%s', "
                                            "%u ranks)",
                                            g, group->axis, group->size);
    ncclConfig_t config = cu_nccl_config();
    if (!SIMPAR_NCCL_TRY(error, ncclGroupStart()))
        return FALSE;
    gboolean ok = TRUE;
    for (guint l = 0; l < cu->n_local && ok; l++) {
        SimparCuRank *lr = &cu->local[l];
        guint index = simpar_group_index(cu->sched, g, lr->rank);
        int color = index == G_MAXUINT ? NCCL_SPLIT_NOCOLOR : 0;
        int key = index == G_MAXUINT ? 0 : (int) index;
        ok = CU_NCCL_START(error, ncclCommSplit(lr->world, color, key, &lr->comms[g], &config));
    }
    if (!cu_group_end(ok, error)) {
        g_prefix_error(error, "%s: ", what);
        return FALSE;
    }
    if (!cu_comms_wait(cu, g, what, error))
        return FALSE;
    for (guint l = 0; l < cu->n_local; l++) {
        if (!cu_comm_verify(cu, &cu->local[l], g, error)) {
            g_prefix_error(error, "%s: ", what);
            return FALSE;
        }
    }
    return TRUE;
}

SimparCuda *
simpar_cuda_new(const SimparSchedule *sched, const SimparCudaConfig *cfg, GError **error)
{
    g_return_val_if_fail(sched != NULL && cfg != NULL && cfg->nccl_id != NULL, NULL);
    g_return_val_if_fail(cfg->n_local == 0 || (cfg->ranks != NULL && cfg->devices != NULL), NULL);
    g_return_val_if_fail(error == NULL || *error == NULL, NULL);
    if (!cu_check_ranks(sched, cfg, error) || !simpar_schedule_check(sched, error))
        return NULL;
    g_autofree SimparCuType *types = g_new0(SimparCuType, simpar_schedule_n_buffers(sched));
    simpar_cu_buffer_types(sched, types);
    if (!cu_check_ops(sched, types, error) || !cu_check_devices(cfg, error))
        return NULL;
    g_autoptr(SimparCuda) cu = cu_alloc(sched, cfg, types);
    for (guint l = 0; l < cu->n_local; l++)
        if (!cu_rank_setup(cu, &cu->local[l], error))
            return NULL;
    cu->abort_comms = TRUE; /* until every communicator is ready */
    if (!cu_comm_init(cu, cfg->nccl_id, error))
        return NULL;
    for (guint g = 0; g < cu->n_groups; g++)
        if (!cu_comm_split(cu, g, error))
            return NULL;
    cu->abort_comms = FALSE;
    return g_steal_pointer(&cu); /* (transfer full) */
}

/* ---- teardown ----------------------------------------------------------------------------- */

/* ncclCommFinalize of every communicator in one group (non-blocking: polled, with the timeout),
 * so that the destroys that follow have nothing left to wait for. FALSE: abort them instead. */
static gboolean
cu_comms_finalize(SimparCuda *cu)
{
    if (!SIMPAR_NCCL_TRY(NULL, ncclGroupStart()))
        return FALSE;
    gboolean ok = TRUE;
    for (guint l = 0; l < cu->n_local; l++)
        for (guint g = 0; g <= cu->n_groups && ok; g++) {
            ncclComm_t comm = *simpar_cu_comm_slot(cu, &cu->local[l], g);
            ok = comm == NULL || CU_NCCL_START(NULL, ncclCommFinalize(comm));
        }
    return cu_group_end(ok, NULL) &&
           cu_comms_wait(cu, CU_COMMS_ALL, "finalizing the NCCL communicators", NULL);
}

static void
cu_rank_free(SimparCuda *cu, SimparCuRank *lr)
{
    (void) SIMPAR_CU_TRY(NULL, cudaSetDevice(lr->device));
    for (guint i = 0; i < lr->n_ops; i++) {
        if (lr->ev_start[i] != NULL)
            (void) SIMPAR_CU_TRY(NULL, cudaEventDestroy(lr->ev_start[i]));
        if (lr->ev_end[i] != NULL)
            (void) SIMPAR_CU_TRY(NULL, cudaEventDestroy(lr->ev_end[i]));
    }
    if (lr->origin != NULL)
        (void) SIMPAR_CU_TRY(NULL, cudaEventDestroy(lr->origin));
    for (guint s = 0; s < cu->n_streams; s++) {
        if (lr->blas[s] != NULL)
            (void) SIMPAR_CUBLAS_TRY(NULL, cublasDestroy(lr->blas[s]));
        if (lr->streams[s] != NULL)
            (void) SIMPAR_CU_TRY(NULL, cudaStreamDestroy(lr->streams[s]));
        (void) SIMPAR_CU_TRY(NULL, cudaFree(lr->work[s]));
    }
    (void) SIMPAR_CU_TRY(NULL, cudaFree(lr->barrier));
    for (guint b = 0; b < cu->n_buffers; b++) {
        if (simpar_schedule_buffer(cu->sched, b)->rank != lr->rank)
            continue;
        (void) SIMPAR_CU_TRY(NULL, cudaFree(cu->bufs[b].ptr));
        (void) SIMPAR_CU_TRY(NULL, cudaFree(cu->saved[b]));
        g_free(cu->saved_host[b]);
    }
    g_free(lr->streams), g_free(lr->blas), g_free(lr->work), g_free(lr->work_bytes);
    g_free(lr->ev_start), g_free(lr->ev_end), g_free(lr->comms);
    g_free(lr->done), g_free(lr->stream_start), g_free(lr->stream_slots);
}

void
simpar_cuda_free(SimparCuda *cu)
{
    if (cu == NULL)
        return;
    simpar_cu_comms_release(cu, cu->abort_comms || !cu_comms_finalize(cu));
    for (guint l = 0; l < cu->n_local; l++)
        cu_rank_free(cu, &cu->local[l]);
    g_free(cu->local);
    g_free(cu->local_of);
    g_free(cu->bufs);
    g_free(cu->saved);
    g_free(cu->saved_host);
    g_free(cu->slot);
    g_free(cu->unusable);
    g_clear_error(&cu->error);
    g_mutex_clear(&cu->error_lock);
    g_mutex_clear(&cu->run_lock);
    g_cond_clear(&cu->run_cond);
    g_mutex_clear(&cu->comm_lock);
    g_free(cu);
}

gboolean
simpar_cu_usable(const SimparCuda *cu, GError **error)
{
    if (cu->unusable == NULL)
        return TRUE;
    g_set_error(error, SIMPAR_CUDA_ERROR, SIMPAR_CUDA_ERROR_INVALID,
                "these GPUs cannot be used after a failed run, only freed (the run failed with: "
                "%s)",
                cu->unusable);
    return FALSE;
}

/* ---- buffers from and to the host --------------------------------------------------------- */

/* (transfer none): the local rank owning `buf`, or NULL with an error. */
static SimparCuRank *
cu_owner(SimparCuda *cu, guint buf, GError **error)
{
    const SimparBuffer *b = simpar_schedule_buffer(cu->sched, buf);
    if (cu->local_of[b->rank] != G_MAXUINT)
        return &cu->local[cu->local_of[b->rank]];
    g_set_error(error, SIMPAR_CUDA_ERROR, SIMPAR_CUDA_ERROR_INVALID,
                "buffer %u ('%s') belongs to rank %u, which this process does not run", buf,
                b->name, b->rank);
    return NULL;
}

/* Host doubles `src` into buffer `buf`, or the buffer into `dst`, through a temporary double
 * array on the device; stream 0 of the owner orders the copy and the conversion. */
static gboolean
cu_transfer(SimparCuda *cu, guint buf, const double *src, double *dst, GError **error)
{
    SimparCuRank *lr = simpar_cu_usable(cu, error) ? cu_owner(cu, buf, error) : NULL;
    if (lr == NULL)
        return FALSE;
    SimparCuBuf b = cu->bufs[buf];
    if (b.elems == 0)
        return TRUE;
    gsize bytes = b.elems * sizeof(double);
    cudaStream_t s = lr->streams[0];
    void *tmp = NULL;
    gboolean ok = SIMPAR_CU_TRY(error, cudaSetDevice(lr->device)) &&
                  SIMPAR_CU_TRY(error, cudaMalloc(&tmp, bytes));
    if (ok && src != NULL)
        ok = SIMPAR_CU_TRY(error, cudaMemcpyAsync(tmp, src, bytes, cudaMemcpyHostToDevice, s)) &&
             simpar_cu_from_f64(b, 0, tmp, b.elems, s, error);
    else if (ok)
        ok = simpar_cu_to_f64(b, 0, tmp, b.elems, s, error) &&
             SIMPAR_CU_TRY(error, cudaMemcpyAsync(dst, tmp, bytes, cudaMemcpyDeviceToHost, s));
    ok = ok && SIMPAR_CU_TRY(error, cudaStreamSynchronize(s));
    gboolean freed = SIMPAR_CU_TRY(ok ? error : NULL, cudaFree(tmp)); /* syncs on failure */
    if (!ok || !freed)
        g_prefix_error(error, "%s buffer '%s' of rank %u: ", src != NULL ? "writing" : "reading",
                       simpar_schedule_buffer(cu->sched, buf)->name, lr->rank);
    return ok && freed;
}

gboolean
simpar_cuda_write(SimparCuda *cu, guint buf, const double *src, GError **error)
{
    g_return_val_if_fail(cu != NULL && buf < cu->n_buffers, FALSE);
    g_return_val_if_fail(src != NULL || cu->bufs[buf].elems == 0, FALSE);
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    return cu_transfer(cu, buf, src, NULL, error);
}

gboolean
simpar_cuda_read(SimparCuda *cu, guint buf, double *dst, GError **error)
{
    g_return_val_if_fail(cu != NULL && buf < cu->n_buffers, FALSE);
    g_return_val_if_fail(dst != NULL || cu->bufs[buf].elems == 0, FALSE);
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    return cu_transfer(cu, buf, NULL, dst, error);
}

/* ---- inputs in the buffers' own types, saved and restored on the device ------------------- */

SimparDtype
simpar_cuda_buffer_type(SimparCuda *cu, guint buf)
{
    static const SimparDtype of[SIMPAR_CU_N_TYPES] = {SIMPAR_DTYPE_FP16, SIMPAR_DTYPE_BF16,
                                                      SIMPAR_DTYPE_FP32, SIMPAR_DTYPE_FP64};
    g_return_val_if_fail(cu != NULL && buf < cu->n_buffers, SIMPAR_DTYPE_FP64);
    return of[cu->bufs[buf].type];
}

static gsize
cu_buf_bytes(const SimparCuda *cu, guint buf)
{
    return cu->bufs[buf].elems * simpar_cu_type_size(cu->bufs[buf].type);
}

/* A copy of the whole of buffer `buf` (`dst` or `src` is its device memory) on stream 0 of its
 * rank, waited for: the rank's streams do not wait for the legacy default stream. */
static gboolean
cu_copy(SimparCuda *cu, guint buf, void *dst, const void *src, enum cudaMemcpyKind kind,
        const char *what, GError **error)
{
    SimparCuRank *lr = simpar_cu_usable(cu, error) ? cu_owner(cu, buf, error) : NULL;
    if (lr == NULL)
        return FALSE;
    gsize bytes = cu_buf_bytes(cu, buf);
    cudaStream_t s = lr->streams[0];
    if (bytes == 0 || (SIMPAR_CU_TRY(error, cudaSetDevice(lr->device)) &&
                       SIMPAR_CU_TRY(error, cudaMemcpyAsync(dst, src, bytes, kind, s)) &&
                       SIMPAR_CU_TRY(error, cudaStreamSynchronize(s))))
        return TRUE;
    g_prefix_error(error, "%s buffer '%s' of rank %u: ", what,
                   simpar_schedule_buffer(cu->sched, buf)->name, lr->rank);
    return FALSE;
}

gboolean
simpar_cuda_write_typed(SimparCuda *cu, guint buf, const void *src, GError **error)
{
    g_return_val_if_fail(cu != NULL && buf < cu->n_buffers, FALSE);
    g_return_val_if_fail(src != NULL || cu->bufs[buf].elems == 0, FALSE);
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    return cu_copy(cu, buf, cu->bufs[buf].ptr, src, cudaMemcpyHostToDevice, "writing", error);
}

/* Buffer `buf` into its saved copy (`save`) or back. */
static gboolean
cu_saved_copy(SimparCuda *cu, guint buf, gboolean save, GError **error)
{
    void *live = cu->bufs[buf].ptr, *kept = cu->saved[buf];
    enum cudaMemcpyKind kind = cudaMemcpyDeviceToDevice;
    if (kept == NULL)
        kept = cu->saved_host[buf], kind = save ? cudaMemcpyDeviceToHost : cudaMemcpyHostToDevice;
    return cu_copy(cu, buf, save ? kept : live, save ? live : kept, kind,
                   save ? "saving" : "restoring", error);
}

/* Room for the saved copy: on the GPU, or on the host when the GPU has none left. */
static gboolean
cu_saved_alloc(SimparCuda *cu, guint buf, GError **error)
{
    SimparCuRank *lr = simpar_cu_usable(cu, error) ? cu_owner(cu, buf, error) : NULL;
    if (lr == NULL || !SIMPAR_CU_TRY(error, cudaSetDevice(lr->device)))
        return FALSE;
    gsize bytes = cu_buf_bytes(cu, buf);
    cudaError_t e = cudaMalloc(&cu->saved[buf], bytes);
    if (e != cudaErrorMemoryAllocation)
        return simpar_cu_check(e, "cudaMalloc(&saved, bytes)", error);
    (void) cudaGetLastError(); /* not sticky: clear it */
    cu->saved[buf] = NULL;
    cu->saved_host[buf] = g_try_malloc(bytes);
    if (cu->saved_host[buf] != NULL)
        return TRUE;
    g_set_error(error, SIMPAR_CUDA_ERROR, SIMPAR_CUDA_ERROR_CALL,
                "saving buffer '%s' of rank %u: no room for %" G_GSIZE_FORMAT
                " bytes on the GPU or the host",
                simpar_schedule_buffer(cu->sched, buf)->name, lr->rank, bytes);
    return FALSE;
}

gboolean
simpar_cuda_save(SimparCuda *cu, guint buf, GError **error)
{
    g_return_val_if_fail(cu != NULL && buf < cu->n_buffers, FALSE);
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    if (cu_buf_bytes(cu, buf) == 0)
        return TRUE;
    if (cu->saved[buf] == NULL && cu->saved_host[buf] == NULL && !cu_saved_alloc(cu, buf, error))
        return FALSE;
    return cu_saved_copy(cu, buf, TRUE, error);
}

gboolean
simpar_cuda_restore(SimparCuda *cu, GError **error)
{
    g_return_val_if_fail(cu != NULL, FALSE);
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    for (guint b = 0; b < cu->n_buffers; b++)
        if ((cu->saved[b] != NULL || cu->saved_host[b] != NULL) &&
            !cu_saved_copy(cu, b, FALSE, error))
            return FALSE;
    return TRUE;
}

gboolean
simpar_cuda_randomize(SimparCuda *cu, guint buf, guint64 seed, guint64 ids, GError **error)
{
    g_return_val_if_fail(cu != NULL && buf < cu->n_buffers, FALSE);
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    SimparCuRank *lr = simpar_cu_usable(cu, error) ? cu_owner(cu, buf, error) : NULL;
    if (lr == NULL)
        return FALSE;
    SimparCuBuf b = cu->bufs[buf];
    cudaStream_t s = lr->streams[0];
    if (b.elems == 0 ||
        (SIMPAR_CU_TRY(error, cudaSetDevice(lr->device)) &&
         SIMPAR_CU_TRY(error, simpar_cuk_random((int) b.type, b.ptr, b.elems, seed, ids, s)) &&
         SIMPAR_CU_TRY(error, cudaStreamSynchronize(s))))
        return TRUE;
    g_prefix_error(error, "filling buffer '%s' of rank %u with random values: ",
                   simpar_schedule_buffer(cu->sched, buf)->name, lr->rank);
    return FALSE;
}
