/* cuda-private.h - what the CUDA executor's files share inside exec/ (built with -Dcuda).
 *
 *   cuda.c           devices, buffers, streams and events, NCCL communicators (non-blocking,
 *                    created and finalized under the watchdog), the checks of every call
 *   cuda-run.c       a run: one thread per rank issues its ops, the watchdog polls them
 *                    --- simpar_cu_compute() -->
 *   cuda-compute.c   one compute op: cuBLAS for GEMMs and attention's batched products, the
 *                    kernels of cuda-kernels.cu for the rest       <-- launches -------------
 *   cuda-kernels.cu  CUDA kernels (one per compute op kind, templated on the element type)
 *                    behind extern "C" launchers declared in cuda-kernels.h
 *
 * Element types: every buffer holds the schedule's dtype, except the buffers that hold
 * statistics, token ids or optimizer moments (simpar_cu_buffer_types), which hold fp32 (fp64 in
 * an fp64 schedule) so that sums, ids up to 2^24 and Adam's moments stay exact enough. Kernels
 * accumulate in fp32 (fp64 for fp64). The math of every kind is exec/host-kernels.c's, which is
 * the reference the correctness mode compares against.
 *
 * Ownership: SimparCuBuf and SimparCuCtx borrow device memory, streams and handles from cuda.c;
 * the SimparCuda owns its SimparCuRanks, whose threads exist only during simpar_cuda_run().
 */
#ifndef SIMPAR_CUDA_PRIVATE_H
#define SIMPAR_CUDA_PRIVATE_H
#include "cuda.h"
#include "schedule.h"
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <glib.h>
#include <nccl.h>
G_BEGIN_DECLS

typedef enum {
    SIMPAR_CU_F16,
    SIMPAR_CU_BF16,
    SIMPAR_CU_F32,
    SIMPAR_CU_F64,
    SIMPAR_CU_N_TYPES,
} SimparCuType;

/* One device buffer of a rank. */
typedef struct {
    void *ptr; /* device memory; NULL for an empty buffer */
    SimparCuType type;
    gsize elems;
} SimparCuBuf;

/* Where and how a compute op runs. */
typedef struct {
    cudaStream_t stream;
    cublasHandle_t cublas; /* of the op's device; simpar_cu_compute binds it to `stream` */
    gboolean tf32;
    void *work; /* device scratch of at least simpar_cu_workspace() bytes, used only by the op */
    gsize work_bytes;
} SimparCuCtx;

SimparCuType simpar_cu_type_of_dtype(SimparDtype dtype);
gsize simpar_cu_type_size(SimparCuType type);
const char *simpar_cu_type_name(SimparCuType type); /* "bf16" ... */
ncclDataType_t simpar_cu_nccl_type(SimparCuType type);
/* types[b] for every buffer b of the schedule (see the header comment). */
void simpar_cu_buffer_types(const SimparSchedule *sched, SimparCuType *types);
/* Device scratch bytes a compute op needs: attention its s x s dropped probabilities and
 * gradients, the column sums (bias gradient, layer-norm backward statistics) their partial sums
 * per 256 rows; 0 for the other kinds. */
gsize simpar_cu_workspace(const SimparSchedule *sched, const SimparOp *op);

/* Launches one compute op (any kind but collectives, send, recv and blocks, which do nothing)
 * on ctx->stream; `bufs` are all buffers of the schedule, indexed like it (only the op's rank's
 * are used). Asynchronous: errors of the launch itself only. */
gboolean simpar_cu_compute(const SimparCuCtx *ctx, const SimparSchedule *sched, const SimparOp *op,
                           const SimparCuBuf *bufs, GError **error);

/* Conversions for simpar_cuda_write/read: `n` doubles at `src64` (device memory) into buf from
 * element `off`, and back. Asynchronous on `stream`. */
gboolean simpar_cu_from_f64(SimparCuBuf buf, gsize off, const double *src64, gsize n,
                            cudaStream_t stream, GError **error);
gboolean simpar_cu_to_f64(SimparCuBuf buf, gsize off, double *dst64, gsize n, cudaStream_t stream,
                          GError **error);

/* Each returns TRUE for success; otherwise sets a SIMPAR_CUDA_ERROR_CALL naming `call` and the
 * library's own message ("cudaMalloc(&p, bytes): out of memory"). */
gboolean simpar_cu_check(cudaError_t e, const char *call, GError **error);
gboolean simpar_cu_check_blas(cublasStatus_t s, const char *call, GError **error);
gboolean simpar_cu_check_nccl(ncclResult_t r, const char *call, GError **error);

#define SIMPAR_CU_TRY(error, call)     simpar_cu_check((call), #call, (error))
#define SIMPAR_CUBLAS_TRY(error, call) simpar_cu_check_blas((call), #call, (error))
#define SIMPAR_NCCL_TRY(error, call)   simpar_cu_check_nccl((call), #call, (error))

/* ---- what cuda.c (setup, communicators, buffers) and cuda-run.c (runs) share -------------- */

/* The end of the message of a wait on NCCL that timed out. */
#define SIMPAR_CU_ADVICE                                                                           \
    "every NCCL communicator of this process was aborted. Check that every rank runs the same "    \
    "schedule (the same simpar-exec options on every process, none of them stopped or dead), "     \
    "or raise --nccl-timeout"

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
    guint *stream_start;            /* per stream s: its ops are stream_slots[stream_start[s] ..] */
    guint *stream_slots;            /* positions in `ops`, up to stream_start[s + 1] */
    guint *done;                    /* per stream: how many of its ops completed (this run) */
    float *barrier;                 /* the device float the start barrier all-reduces */
    ncclComm_t world;
    ncclComm_t *comms; /* per group of the schedule; NULL where the rank is not a member */
    gint progress;     /* atomic: 0, 1 once origin is recorded, i + 2 once op i's end is */
    gint completed;    /* atomic: ops seen completed in this run */
    GThread *thread;
} SimparCuRank;

struct _SimparCuda {
    const SimparSchedule *sched; /* borrowed */
    guint n_ranks, n_streams, n_groups, n_buffers, n_local;
    gboolean tf32;
    double timeout_s;     /* of every wait on NCCL: the longest time without progress */
    SimparCuRank *local;  /* n_local */
    guint *local_of;      /* per global rank: index into `local`, or G_MAXUINT */
    SimparCuBuf *bufs;    /* per buffer of the schedule; memory only for local ranks */
    void **saved;         /* per buffer: its saved contents on its GPU (simpar_cuda_save), */
    void **saved_host;    /* or in host memory when the GPU had no room; NULL: not saved */
    guint *slot;          /* per op: its position in its rank's program order */
    gboolean abort_comms; /* setup did not finish: free aborts rather than destroys */
    char *unusable;       /* why only simpar_cuda_free() is left, or NULL */
    /* the current run */
    SimparSpan *spans;
    gint failed; /* atomic: a rank failed or the deadline passed; every thread gives up */
    GMutex error_lock;
    GError *error;   /* the run's first failure */
    GMutex run_lock; /* guards n_finished, n_started; run_cond signals them and failures */
    GCond run_cond;
    guint n_finished, n_started;
    gint64 moved;     /* the sum of the threads' progress and completed at the last watchdog poll */
    GMutex comm_lock; /* NCCL calls of the threads against the aborts */
};

/* Only simpar_cuda_free() is left after a failed run: FALSE with the reason, naming that run. */
gboolean simpar_cu_usable(const SimparCuda *cu, GError **error);
gboolean simpar_cu_has_view(SimparView v); /* FALSE for SIMPAR_NO_VIEW */
/* (transfer none): the communicator slot i of `lr`: group i < n_groups, else the world. */
ncclComm_t *simpar_cu_comm_slot(SimparCuda *cu, SimparCuRank *lr, guint i);
/* *state: ncclSuccess (ready), ncclInProgress (a non-blocking call not finished) or its error. */
gboolean simpar_cu_comm_state(ncclComm_t comm, ncclResult_t *state, GError **error);
/* ncclCommAbort (or ncclCommDestroy) of every communicator of the local ranks, in one group. */
void simpar_cu_comms_release(SimparCuda *cu, gboolean abort);

G_END_DECLS
#endif /* SIMPAR_CUDA_PRIVATE_H */
