/* cuda.c - the CUDA executor: devices, buffers, streams, events, NCCL communicators, the run's
 * threads and its watchdog. The math of compute ops is cuda-compute.c's.
 *
 * Setup (simpar_cuda_new, in the calling thread, one local rank after the other): cudaSetDevice;
 * the rank's buffers (cudaMalloc + zeros); per schedule stream a non-blocking CUDA stream, a
 * cuBLAS handle (one per stream: a handle shared by concurrent streams would race on its
 * workspace) and a device workspace for the stream's compute ops; two timing events per op.
 * Communicators: ncclCommInitRank of every local rank between one ncclGroupStart/End, NCCL's
 * way for one thread to create several ranks (no threads at setup, every error comes back in
 * one place); then, group after group of the schedule in the same order on every rank,
 * ncclCommSplit of the world communicator (members: color 0 and their index in the group as
 * key, so communicator rank = group index; others NCCL_SPLIT_NOCOLOR), again grouped over the
 * local ranks. Send/recv use the world communicator and global ranks.
 *
 * A run: one thread per local rank issues everything asynchronously, then polls; the calling
 * thread is the watchdog.
 *
 *   caller ──┬── rank 0: barrier ─ origin ─ op ─ op ─ ... ─ poll events + async errors ──┐
 *            ├── rank 1: barrier ─ origin ─ op ─ op ─ ... ─ poll events + async errors ──┤
 *            └── watchdog: until every thread is done, one fails, or the deadline ───────┴─ join
 *                on failure or timeout: ncclCommAbort on every communicator, then join
 *
 *   stream 0  [barrier]─●origin─[s GEMM e]─[s LN e]──────────────────[wait]─[s GEMM e]
 *                       │               │                               ▲
 *   stream 1  ───────[wait]──────────[wait]─[s all-gather e]────────────┘
 *
 * Each op: cudaStreamWaitEvent on the end event of every dep on another stream, start event,
 * the op, end event; op times are cudaEventElapsedTime from `origin`, recorded after the
 * barrier. A thread that fails records its error (the first one wins, as in host.c) and raises
 * `failed`; the others stop at their next op or poll. The watchdog then gives them a moment to
 * leave NCCL alone and aborts every communicator in one NCCL group (every abort flag is raised
 * before any communicator is reclaimed, so no reclaim waits on a kernel of a communicator that
 * is not aborted yet); that also releases a thread blocked inside a CUDA or NCCL call, e.g. a
 * launch queue full behind a collective that never completes. After a failed run the
 * SimparCuda can only be freed.
 */
#include "cuda-private.h"
#include <string.h>

G_DEFINE_QUARK(simpar_cuda_error_quark, simpar_cuda_error)

#define CU_DEFAULT_TIMEOUT_S 600.0
#define CU_POLL_US           100                  /* between polls of a rank's events */
#define CU_GRACE_US          (2 * G_USEC_PER_SEC) /* after a failure, before the aborts */

typedef struct {
    SimparCuda *cu; /* back pointer for the rank's thread */
    guint rank;     /* global */
    int device;
    const guint *ops; /* the rank's ops in program order (the schedule's) */
    guint n_ops;
    cudaStream_t *streams; /* per schedule stream */
    cublasHandle_t *blas;  /* per schedule stream */
    void **work;           /* per stream: device scratch of the stream's compute ops, or NULL */
    gsize *work_bytes;
    cudaEvent_t *ev_start, *ev_end; /* per op of the rank, by position in `ops` */
    cudaEvent_t origin;             /* recorded on stream 0 after the start barrier */
    cudaEvent_t *last;              /* per stream: its last event of this run (borrowed) */
    float *barrier;                 /* the device float the start barrier all-reduces */
    ncclComm_t world;
    ncclComm_t *comms; /* per group of the schedule; NULL where the rank is not a member */
    gint progress;     /* atomic: 0, 1 once origin is recorded, i + 2 once op i's end is */
    GThread *thread;
} CuRank;

struct _SimparCuda {
    const SimparSchedule *sched; /* borrowed */
    guint n_ranks, n_streams, n_groups, n_buffers, n_local;
    gboolean tf32;
    double timeout_s;
    CuRank *local;        /* n_local */
    guint *local_of;      /* per global rank: index into `local`, or G_MAXUINT */
    SimparCuBuf *bufs;    /* per buffer of the schedule; memory only for local ranks */
    guint *slot;          /* per op: its position in its rank's program order */
    gboolean abort_comms; /* setup did not finish: free aborts rather than destroys */
    char *unusable;       /* why only simpar_cuda_free() is left, or NULL */
    /* the current run */
    double *op_start, *op_end;
    gint failed; /* atomic: a rank failed or the deadline passed; every thread gives up */
    GMutex error_lock;
    GError *error;   /* the run's first failure */
    GMutex run_lock; /* guards n_finished; run_cond signals it and failures */
    GCond run_cond;
    guint n_finished;
    GMutex comm_lock; /* polls of communicators against their abort */
};

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
                    "no usable CUDA device: %s", local->message);
        return FALSE;
    }
    if (count <= 0) {
        g_set_error_literal(error, SIMPAR_CUDA_ERROR, SIMPAR_CUDA_ERROR_NO_DEVICE,
                            "no usable CUDA device: cudaGetDeviceCount found none");
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

static gboolean
cu_has_view(SimparView v)
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
    if (!cu_has_view(c->send) || !cu_has_view(c->recv))
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
cu_rank_init(SimparCuda *cu, CuRank *lr, guint rank, int device)
{
    lr->cu = cu, lr->rank = rank, lr->device = device;
    lr->ops = simpar_schedule_rank_ops(cu->sched, rank, &lr->n_ops);
    lr->streams = g_new0(cudaStream_t, cu->n_streams);
    lr->blas = g_new0(cublasHandle_t, cu->n_streams);
    lr->work = g_new0(void *, cu->n_streams);
    lr->work_bytes = g_new0(gsize, cu->n_streams);
    lr->last = g_new0(cudaEvent_t, cu->n_streams);
    lr->ev_start = g_new0(cudaEvent_t, lr->n_ops);
    lr->ev_end = g_new0(cudaEvent_t, lr->n_ops);
    lr->comms = g_new0(ncclComm_t, cu->n_groups);
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
    cu->timeout_s = cfg->timeout_s > 0 ? cfg->timeout_s : CU_DEFAULT_TIMEOUT_S;
    cu->bufs = g_new0(SimparCuBuf, cu->n_buffers);
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
    cu->local = g_new0(CuRank, cu->n_local);
    for (guint l = 0; l < cu->n_local; l++) {
        cu_rank_init(cu, &cu->local[l], cfg->ranks[l], cfg->devices[l]);
        cu->local_of[cfg->ranks[l]] = l;
    }
    return cu; /* (transfer full) */
}

/* The rank's buffers, zero-filled, and the start barrier's float. */
static gboolean
cu_rank_buffers(SimparCuda *cu, CuRank *lr, GError **error)
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
cu_stream_workspace(SimparCuda *cu, const CuRank *lr, guint stream)
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
cu_rank_streams(SimparCuda *cu, CuRank *lr, GError **error)
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
cu_rank_events(CuRank *lr, GError **error)
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
cu_rank_setup(SimparCuda *cu, CuRank *lr, GError **error)
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

/* Closes an ncclGroupStart() even after a failure inside the group; the first error wins. */
static gboolean
cu_group_end(gboolean ok, GError **error)
{
    g_autoptr(GError) later = NULL;
    gboolean ended = SIMPAR_NCCL_TRY(ok ? error : &later, ncclGroupEnd());
    return ok && ended;
}

static gboolean
cu_comm_init(SimparCuda *cu, const guint8 *nccl_id, GError **error)
{
    ncclUniqueId id;
    memcpy(id.internal, nccl_id, SIMPAR_CUDA_ID_BYTES);
    if (!SIMPAR_NCCL_TRY(error, ncclGroupStart()))
        return FALSE;
    gboolean ok = TRUE;
    for (guint l = 0; l < cu->n_local && ok; l++) {
        CuRank *lr = &cu->local[l];
        ok = SIMPAR_CU_TRY(error, cudaSetDevice(lr->device)) &&
             SIMPAR_NCCL_TRY(error,
                             ncclCommInitRank(&lr->world, (int) cu->n_ranks, id, (int) lr->rank));
    }
    if (!cu_group_end(ok, error)) {
        g_prefix_error(error, "the world communicator (%u ranks): ", cu->n_ranks);
        return FALSE;
    }
    return TRUE;
}

/* The split must have made the member's communicator rank its index in the group. */
static gboolean
cu_comm_verify(SimparCuda *cu, const CuRank *lr, guint g, GError **error)
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
    if (!SIMPAR_NCCL_TRY(error, ncclGroupStart()))
        return FALSE;
    gboolean ok = TRUE;
    for (guint l = 0; l < cu->n_local && ok; l++) {
        CuRank *lr = &cu->local[l];
        guint index = simpar_group_index(cu->sched, g, lr->rank);
        int color = index == G_MAXUINT ? NCCL_SPLIT_NOCOLOR : 0;
        int key = index == G_MAXUINT ? 0 : (int) index;
        ok = SIMPAR_NCCL_TRY(error, ncclCommSplit(lr->world, color, key, &lr->comms[g], NULL));
    }
    ok = cu_group_end(ok, error);
    for (guint l = 0; l < cu->n_local && ok; l++)
        ok = cu_comm_verify(cu, &cu->local[l], g, error);
    if (!ok)
        g_prefix_error(error, "the communicator of group %u ('%s'): ", g,
                       simpar_schedule_group(cu->sched, g)->axis);
    return ok;
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

/* Every communicator of every local rank, in one NCCL group: aborting them one by one could
 * reclaim one whose kernels wait behind a kernel of a communicator not yet aborted. */
static void
cu_comms_release(SimparCuda *cu, gboolean abort)
{
    gboolean ok = SIMPAR_NCCL_TRY(NULL, ncclGroupStart());
    for (guint l = 0; l < cu->n_local; l++) {
        CuRank *lr = &cu->local[l];
        for (guint g = 0; g <= cu->n_groups; g++) {
            ncclComm_t *comm = g < cu->n_groups ? &lr->comms[g] : &lr->world; /* world last */
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

static void
cu_rank_free(SimparCuda *cu, CuRank *lr)
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
    for (guint b = 0; b < cu->n_buffers; b++)
        if (simpar_schedule_buffer(cu->sched, b)->rank == lr->rank)
            (void) SIMPAR_CU_TRY(NULL, cudaFree(cu->bufs[b].ptr));
    g_free(lr->streams), g_free(lr->blas), g_free(lr->work), g_free(lr->work_bytes);
    g_free(lr->last), g_free(lr->ev_start), g_free(lr->ev_end), g_free(lr->comms);
}

void
simpar_cuda_free(SimparCuda *cu)
{
    if (cu == NULL)
        return;
    cu_comms_release(cu, cu->abort_comms);
    for (guint l = 0; l < cu->n_local; l++)
        cu_rank_free(cu, &cu->local[l]);
    g_free(cu->local);
    g_free(cu->local_of);
    g_free(cu->bufs);
    g_free(cu->slot);
    g_free(cu->unusable);
    g_clear_error(&cu->error);
    g_mutex_clear(&cu->error_lock);
    g_mutex_clear(&cu->run_lock);
    g_cond_clear(&cu->run_cond);
    g_mutex_clear(&cu->comm_lock);
    g_free(cu);
}

static gboolean
cu_usable(const SimparCuda *cu, GError **error)
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
static CuRank *
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
    CuRank *lr = cu_usable(cu, error) ? cu_owner(cu, buf, error) : NULL;
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

/* ---- failure ------------------------------------------------------------------------------ */

static gboolean
cu_failed(SimparCuda *cu)
{
    return g_atomic_int_get(&cu->failed) != 0;
}

/* Records `err` (taken) unless an earlier failure was recorded, raises `failed` and wakes the
 * watchdog. */
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

/* Where rank `lr` is stuck, appended to `out`; nothing if it finished. */
static void
cu_rank_stuck(SimparCuda *cu, CuRank *lr, GString *out)
{
    gint progress = g_atomic_int_get(&lr->progress);
    gboolean done = FALSE;
    const char *sep = out->len > 0 ? "; " : "";
    (void) SIMPAR_CU_TRY(NULL, cudaSetDevice(lr->device));
    if (progress == 0 || (cu_event_query(lr->origin, &done, NULL) && !done)) {
        g_string_append_printf(out, "%srank %u in the start barrier (an all-reduce of all ranks)",
                               sep, lr->rank);
        return;
    }
    for (guint i = 0; i < (guint) progress - 1; i++) {
        if (cu_event_query(lr->ev_end[i], &done, NULL) && !done) {
            g_string_append_printf(out, "%srank %u: op '%s' (%u of %u) unfinished", sep, lr->rank,
                                   simpar_schedule_op(cu->sched, lr->ops[i])->name, i + 1,
                                   lr->n_ops);
            return;
        }
    }
    guint next = (guint) progress - 1;
    if (next < lr->n_ops)
        g_string_append_printf(out, "%srank %u: op '%s' (%u of %u) still being issued", sep,
                               lr->rank, simpar_schedule_op(cu->sched, lr->ops[next])->name,
                               next + 1, lr->n_ops);
}

static GError *
cu_timeout_error(SimparCuda *cu)
{
    g_autoptr(GString) where = g_string_new(NULL);
    for (guint l = 0; l < cu->n_local; l++)
        cu_rank_stuck(cu, &cu->local[l], where);
    return g_error_new(SIMPAR_CUDA_ERROR, SIMPAR_CUDA_ERROR_TIMEOUT,
                       "the run did not finish within %g s (%s); every NCCL communicator of this "
                       "process was aborted",
                       cu->timeout_s, where->len > 0 ? where->str : "every rank just finished");
}

/* ---- one op ------------------------------------------------------------------------------- */

/* (transfer none): the device address of `view`; NULL for SIMPAR_NO_VIEW. */
static char *
cu_view(SimparCuda *cu, SimparView view)
{
    if (!cu_has_view(view))
        return NULL;
    SimparCuBuf b = cu->bufs[view.buf];
    return (char *) b.ptr + view.off * simpar_cu_type_size(b.type);
}

static gboolean
cu_all_to_all(SimparCuda *cu, const SimparColl *c, ncclComm_t comm, ncclDataType_t t,
              cudaStream_t s, GError **error)
{
    guint size = simpar_schedule_group(cu->sched, c->group)->size;
    gsize block = c->count * simpar_cu_type_size(cu->bufs[c->send.buf].type);
    char *send = cu_view(cu, c->send), *recv = cu_view(cu, c->recv);
    if (!SIMPAR_NCCL_TRY(error, ncclGroupStart()))
        return FALSE;
    gboolean ok = TRUE;
    for (guint p = 0; p < size && ok; p++)
        ok = SIMPAR_NCCL_TRY(error, ncclSend(send + p * block, c->count, t, (int) p, comm, s)) &&
             SIMPAR_NCCL_TRY(error, ncclRecv(recv + p * block, c->count, t, (int) p, comm, s));
    return cu_group_end(ok, error);
}

/* A broadcast's non-roots may have no send view and a reduce's no recv view: NCCL reads
 * neither, so the other buffer stands in. */
static gboolean
cu_coll(SimparCuda *cu, const CuRank *lr, const SimparOp *op, cudaStream_t s, GError **error)
{
    const SimparColl *c = &op->u.coll;
    if (c->count == 0) /* the same on every member (simpar_schedule_check) */
        return TRUE;
    ncclComm_t comm = lr->comms[c->group];
    g_assert(comm != NULL); /* simpar_schedule_check: the rank is a member */
    void *send = cu_view(cu, c->send), *recv = cu_view(cu, c->recv);
    SimparView typed = cu_has_view(c->send) ? c->send : c->recv;
    ncclDataType_t t = simpar_cu_nccl_type(cu->bufs[typed.buf].type);
    ncclRedOp_t red = c->red == SIMPAR_RED_MAX ? ncclMax : ncclSum;
    switch (c->kind) {
    case SIMPAR_COLL_ALL_REDUCE:
        return SIMPAR_NCCL_TRY(error, ncclAllReduce(send, recv, c->count, t, red, comm, s));
    case SIMPAR_COLL_ALL_GATHER:
        return SIMPAR_NCCL_TRY(error, ncclAllGather(send, recv, c->count, t, comm, s));
    case SIMPAR_COLL_REDUCE_SCATTER:
        return SIMPAR_NCCL_TRY(error, ncclReduceScatter(send, recv, c->count, t, red, comm, s));
    case SIMPAR_COLL_BROADCAST:
        return SIMPAR_NCCL_TRY(error, ncclBroadcast(send != NULL ? send : recv, recv, c->count, t,
                                                    (int) c->root, comm, s));
    case SIMPAR_COLL_REDUCE:
        return SIMPAR_NCCL_TRY(error, ncclReduce(send, recv != NULL ? recv : send, c->count, t, red,
                                                 (int) c->root, comm, s));
    case SIMPAR_COLL_ALL_TO_ALL:
        return cu_all_to_all(cu, c, comm, t, s, error);
    default:
        g_assert_not_reached();
    }
}

static gboolean
cu_p2p(SimparCuda *cu, const CuRank *lr, const SimparOp *op, cudaStream_t s, GError **error)
{
    const SimparP2p *p = &op->u.p2p;
    if (p->count == 0) /* matched with an empty one (simpar_schedule_check) */
        return TRUE;
    ncclDataType_t t = simpar_cu_nccl_type(cu->bufs[p->buf.buf].type);
    void *buf = cu_view(cu, p->buf);
    if (op->kind == SIMPAR_OP_SEND)
        return SIMPAR_NCCL_TRY(error, ncclSend(buf, p->count, t, (int) p->peer, lr->world, s));
    return SIMPAR_NCCL_TRY(error, ncclRecv(buf, p->count, t, (int) p->peer, lr->world, s));
}

static gboolean
cu_exec(SimparCuda *cu, const CuRank *lr, const SimparOp *op, GError **error)
{
    cudaStream_t s = lr->streams[op->stream];
    switch (op->kind) {
    case SIMPAR_OP_COLLECTIVE:
        return cu_coll(cu, lr, op, s, error);
    case SIMPAR_OP_SEND:
    case SIMPAR_OP_RECV:
        return cu_p2p(cu, lr, op, s, error);
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
cu_wait_deps(SimparCuda *cu, CuRank *lr, const SimparOp *op, guint i, GError **error)
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

static gboolean
cu_issue(SimparCuda *cu, CuRank *lr, guint i, GError **error)
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
    lr->last[op->stream] = lr->ev_end[i];
    g_atomic_int_set(&lr->progress, (gint) i + 2);
    return TRUE;
}

/* ---- one rank's thread -------------------------------------------------------------------- */

/* The barrier over all ranks, then the time origin on stream 0, which every stream waits for. */
static gboolean
cu_rank_begin(SimparCuda *cu, CuRank *lr, GError **error)
{
    cudaStream_t s0 = lr->streams[0];
    if (!SIMPAR_NCCL_TRY(
            error, ncclAllReduce(lr->barrier, lr->barrier, 1, ncclFloat, ncclSum, lr->world, s0)) ||
        !SIMPAR_CU_TRY(error, cudaEventRecord(lr->origin, s0))) {
        g_prefix_error(error, "rank %u, start barrier: ", lr->rank);
        return FALSE;
    }
    for (guint s = 0; s < cu->n_streams; s++) {
        lr->last[s] = lr->origin;
        if (s > 0 && !SIMPAR_CU_TRY(error, cudaStreamWaitEvent(lr->streams[s], lr->origin, 0)))
            return FALSE;
    }
    g_atomic_int_set(&lr->progress, 1);
    return TRUE;
}

/* *done: every stream's last event completed. An asynchronous NCCL error fails the run. */
static gboolean
cu_rank_poll(SimparCuda *cu, CuRank *lr, gboolean *done, GError **error)
{
    *done = TRUE;
    for (guint s = 0; s < cu->n_streams; s++) {
        gboolean finished;
        if (!cu_event_query(lr->last[s], &finished, error))
            return FALSE;
        *done = *done && finished;
    }
    for (guint g = 0; g <= cu->n_groups; g++) {
        ncclComm_t comm = g < cu->n_groups ? lr->comms[g] : lr->world;
        ncclResult_t r = ncclSuccess;
        if (comm == NULL)
            continue;
        if (!SIMPAR_NCCL_TRY(error, ncclCommGetAsyncError(comm, &r)))
            return FALSE;
        if (r == ncclSuccess || r == ncclInProgress)
            continue;
        g_autofree char *what =
            g_strdup_printf("rank %u: asynchronous error of the communicator of %s%s%s", lr->rank,
                            g < cu->n_groups ? "group '" : "all ranks",
                            g < cu->n_groups ? simpar_schedule_group(cu->sched, g)->axis : "",
                            g < cu->n_groups ? "'" : "");
        return simpar_cu_check_nccl(r, what, error);
    }
    return TRUE;
}

/* FALSE without an error: another rank failed first. */
static gboolean
cu_rank_wait(SimparCuda *cu, CuRank *lr, GError **error)
{
    gboolean done = FALSE;
    while (!done) {
        if (cu_failed(cu))
            return FALSE;
        g_mutex_lock(&cu->comm_lock); /* the watchdog aborts communicators under it */
        gboolean ok = cu_rank_poll(cu, lr, &done, error);
        g_mutex_unlock(&cu->comm_lock);
        if (!ok)
            return FALSE;
        if (!done)
            g_usleep(CU_POLL_US);
    }
    return TRUE;
}

static gboolean
cu_rank_times(SimparCuda *cu, CuRank *lr, GError **error)
{
    if (cu->op_start == NULL)
        return TRUE;
    for (guint i = 0; i < lr->n_ops; i++) {
        float start_ms, end_ms;
        if (!SIMPAR_CU_TRY(error, cudaEventElapsedTime(&start_ms, lr->origin, lr->ev_start[i])) ||
            !SIMPAR_CU_TRY(error, cudaEventElapsedTime(&end_ms, lr->origin, lr->ev_end[i])))
            return FALSE;
        cu->op_start[lr->ops[i]] = start_ms / 1000.0;
        cu->op_end[lr->ops[i]] = end_ms / 1000.0;
    }
    return TRUE;
}

/* FALSE without an error: another rank failed first. */
static gboolean
cu_rank_run(SimparCuda *cu, CuRank *lr, GError **error)
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
    CuRank *lr = data;
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

/* Starts every rank's thread (until one cannot be); returns how many run. */
static guint
cu_run_start(SimparCuda *cu)
{
    guint started = 0;
    for (guint l = 0; l < cu->n_local && !cu_failed(cu); l++) {
        CuRank *lr = &cu->local[l];
        g_autofree char *name = g_strdup_printf("simpar-cuda-%u", lr->rank);
        GError *err = NULL;
        g_atomic_int_set(&lr->progress, 0);
        lr->thread = g_thread_try_new(name, cu_rank_main, lr, &err);
        if (lr->thread == NULL) {
            g_prefix_error(&err, "starting the thread of rank %u: ", lr->rank);
            cu_fail(cu, err);
        } else {
            started++;
        }
    }
    return started;
}

/* Waits until `started` threads finished, one failed, or the deadline passed (a timeout). */
static void
cu_run_watch(SimparCuda *cu, guint started, gint64 deadline)
{
    g_mutex_lock(&cu->run_lock);
    gboolean in_time = TRUE;
    while (cu->n_finished < started && !cu_failed(cu) && in_time)
        in_time = g_cond_wait_until(&cu->run_cond, &cu->run_lock, deadline);
    gboolean late = cu->n_finished < started && !cu_failed(cu);
    g_mutex_unlock(&cu->run_lock);
    if (late)
        cu_fail(cu, cu_timeout_error(cu));
}

/* After a failure: lets the threads notice it and stop using NCCL, then aborts every
 * communicator, which also frees a thread blocked in a CUDA or NCCL call. */
static void
cu_run_abort(SimparCuda *cu, guint started)
{
    gint64 grace = g_get_monotonic_time() + CU_GRACE_US;
    g_mutex_lock(&cu->run_lock);
    while (cu->n_finished < started && g_cond_wait_until(&cu->run_cond, &cu->run_lock, grace))
        ;
    g_mutex_unlock(&cu->run_lock);
    g_mutex_lock(&cu->comm_lock);
    cu_comms_release(cu, TRUE);
    g_mutex_unlock(&cu->comm_lock);
}

gboolean
simpar_cuda_run(SimparCuda *cu, double *op_start, double *op_end, GError **error)
{
    g_return_val_if_fail(cu != NULL, FALSE);
    g_return_val_if_fail((op_start == NULL) == (op_end == NULL), FALSE);
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    if (!cu_usable(cu, error))
        return FALSE;
    cu->op_start = op_start, cu->op_end = op_end;
    cu->n_finished = 0;
    g_atomic_int_set(&cu->failed, 0);
    gint64 deadline = g_get_monotonic_time() + (gint64) (cu->timeout_s * G_USEC_PER_SEC);
    guint started = cu_run_start(cu);
    cu_run_watch(cu, started, deadline);
    if (cu_failed(cu))
        cu_run_abort(cu, started);
    for (guint l = 0; l < cu->n_local; l++)
        if (cu->local[l].thread != NULL)
            g_thread_join(g_steal_pointer(&cu->local[l].thread));
    cu->op_start = cu->op_end = NULL;
    if (cu->error != NULL) {
        cu->unusable = g_strdup(cu->error->message);
        g_propagate_error(error, g_steal_pointer(&cu->error));
        return FALSE;
    }
    return TRUE;
}
