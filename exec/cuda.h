/* cuda.h - runs any SimparSchedule on NVIDIA GPUs: cuBLAS, CUDA kernels and NCCL (simpar-exec).
 *
 * The CUDA twin of host.h: the same schedule, the same buffers (filled and read as doubles,
 * converted to each buffer's element type on the GPU), the same results within the dtype's
 * precision. One process runs one or more ranks (one GPU each): all ranks of one node from one
 * process (a thread per rank), or one rank per process under MPI, the processes sharing one
 * NCCL unique id.
 *
 *   simpar_cuda_new()   every rank: cudaSetDevice, buffers (zeros), one CUDA stream per schedule
 *                       stream, ncclCommInitRankConfig on all ranks, then ncclCommSplit per
 *                       process group of the schedule (members only; others pass
 *                       NCCL_SPLIT_NOCOLOR); non-blocking communicators, polled
 *   simpar_cuda_write() caller's inputs, as doubles (write_typed: in the buffer's own type;
 *                       save/restore: a device copy of them put back before each repeat)
 *   simpar_cuda_run()   each rank's thread issues its ops in program order on their streams:
 *                       compute -> kernels / cuBLAS, collective -> NCCL on the group's
 *                       communicator, send/recv -> ncclSend/ncclRecv on the world communicator;
 *                       a dep on another stream is a cudaStreamWaitEvent on that op's end event;
 *                       every op is bracketed by two CUDA events that time it
 *   simpar_cuda_read()  outputs, as doubles
 *
 * Every CUDA, cuBLAS and NCCL call is checked; a failure is a SIMPAR_CUDA_ERROR_CALL naming the
 * call and the library's message. Every wait on NCCL (communicator creation, each split, each
 * NCCL call's enqueue, a run's completion, the finalize at free) is polled with the NCCL
 * timeout: one that makes no progress for that long aborts every communicator of the process
 * (ncclCommAbort) and fails with SIMPAR_WATCH_ERROR_TIMEOUT (watchdog.h), naming what hung and
 * where, instead of hanging; an asynchronous NCCL error aborts them too. After a failed run the
 * SimparCuda cannot be used, only freed.
 *
 * Ownership: the schedule is borrowed and must outlive the SimparCuda; device memory, streams,
 * events and communicators are the SimparCuda's.
 */
#ifndef SIMPAR_CUDA_H
#define SIMPAR_CUDA_H
#include "schedule.h"
#include <glib.h>
G_BEGIN_DECLS

#define SIMPAR_CUDA_ERROR (simpar_cuda_error_quark())
GQuark simpar_cuda_error_quark(void);

typedef enum {
    SIMPAR_CUDA_ERROR_NO_DEVICE, /* no driver, no GPU, or fewer GPUs than the ranks need */
    SIMPAR_CUDA_ERROR_CALL,      /* a CUDA, cuBLAS or NCCL call failed; the message names it */
    SIMPAR_CUDA_ERROR_INVALID,   /* a schedule or configuration this executor cannot run */
} SimparCudaError;

#define SIMPAR_CUDA_ID_BYTES 128 /* NCCL_UNIQUE_ID_BYTES */

typedef struct {
    guint n_local;         /* ranks this process runs (>= 1) */
    const guint *ranks;    /* their global ranks, n_local of them */
    const int *devices;    /* the CUDA device of each, n_local of them, all different */
    const guint8 *nccl_id; /* SIMPAR_CUDA_ID_BYTES from simpar_cuda_unique_id() on one process,
                            * the same on every process */
    gboolean tf32;         /* fp32 GEMMs on tensor cores (TF32); off: exact fp32 */
    double nccl_timeout_s; /* the longest any wait on NCCL may go without progress; 0: 300 */
} SimparCudaConfig;

/* The number of usable CUDA devices; FALSE with SIMPAR_CUDA_ERROR_NO_DEVICE (the message says
 * why: no driver, no device, the runtime's error) when there is none. */
gboolean simpar_cuda_devices(int *n, GError **error);
/* (transfer full): "NVIDIA H100 80GB HBM3 (sm_90, 79.1 GiB, 132 SMs)". */
char *simpar_cuda_device_name(int device);
/* A fresh NCCL unique id for one run (ncclGetUniqueId). */
gboolean simpar_cuda_unique_id(guint8 id[SIMPAR_CUDA_ID_BYTES], GError **error);

typedef struct _SimparCuda SimparCuda;

/* (transfer full): collective over all processes of the run (each calls it with the same
 * schedule and its own ranks); NULL with an error if any rank fails to set up. Runs
 * simpar_schedule_check() first. */
SimparCuda *simpar_cuda_new(const SimparSchedule *sched, const SimparCudaConfig *cfg,
                            GError **error);
void simpar_cuda_free(SimparCuda *cu);
/* Buffer `buf` (of a local rank) from / to simpar_schedule_buffer(sched, buf)->elems doubles. */
gboolean simpar_cuda_write(SimparCuda *cu, guint buf, const double *src, GError **error);
gboolean simpar_cuda_read(SimparCuda *cu, guint buf, double *dst, GError **error);
/* The element type of buffer `buf` on the GPU; write_typed copies that many elements of it
 * (fp16 and bf16 as their bits) from the host as they are, no conversion. */
SimparDtype simpar_cuda_buffer_type(SimparCuda *cu, guint buf);
gboolean simpar_cuda_write_typed(SimparCuda *cu, guint buf, const void *src, GError **error);
/* save: a copy of the buffer's contents in the GPU's memory (host memory when the GPU has no
 * room left); restore: every saved buffer back by device copies (host copies for those). */
gboolean simpar_cuda_save(SimparCuda *cu, guint buf, GError **error);
gboolean simpar_cuda_restore(SimparCuda *cu, GError **error);
/* Random values generated on the GPU: simpar_inputs_random()'s, element for element. */
gboolean simpar_cuda_randomize(SimparCuda *cu, guint buf, guint64 seed, guint64 ids,
                               GError **error);
/* Runs every local rank's ops once and waits for them. When `spans` is not NULL (n_ops of
 * them), fills those of the ops of local ranks: seconds from the rank's start event,
 * recorded after a barrier over all ranks, so ranks share a time origin to within the barrier's
 * skew. Other entries are left alone. */
gboolean simpar_cuda_run(SimparCuda *cu, SimparSpan *spans, GError **error);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(SimparCuda, simpar_cuda_free)
G_END_DECLS
#endif /* SIMPAR_CUDA_H */
