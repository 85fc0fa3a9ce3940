/* host.h - runs any SimparSchedule on the CPU with real numbers: the project's correctness oracle.
 *
 * Every buffer of the schedule becomes a zero-filled array of doubles, whatever the schedule's
 * dtype (the dtype only sets byte counts elsewhere). simpar_host_run() starts one GThread per
 * rank; each executes its rank's ops in program order (simpar_schedule_rank_ops), which is a valid
 * serialisation of streams and deps. Collectives meet over shared memory with NCCL semantics and
 * reduce (sum or max) in group-index order, so every member gets bit-identical, deterministic
 * results; send/recv are eager and buffered (FIFO per source, destination and tag), which
 * completes every schedule the rendezvous model of simpar_schedule_check() accepts.
 *
 *   simpar_host_new(sched) --> buffers (zeros) <-- caller writes inputs via simpar_host_buffer()
 *   simpar_host_run()      --> rank 0: [op] -> [op] -> [all-reduce] -> ...   (one thread each)
 *                              rank 1: [op] -> [op] -> [all-reduce] -> ...
 *                          --> caller reads outputs via simpar_host_buffer()
 *
 * Before running anything, simpar_host_run() runs simpar_schedule_check(): a schedule it refuses
 * (a view outside its buffer, an unusable parameter, mismatched collectives, unmatched send/recv,
 * a deadlock) gives that SimparScheduleError and nothing runs. One case passes the check and can
 * still hang: ops on different streams of a rank that only complete if those streams run
 * concurrently (say a receive issued on one stream before the send, on another, that its peer
 * waits for), since each rank runs in program order. Generated schedules issue communication in
 * the same order on every rank and never depend on that.
 *
 * Ownership: the host owns its buffers; the schedule is borrowed, must outlive the host and must
 * not be changed while the host exists.
 */
#ifndef SIMPAR_HOST_H
#define SIMPAR_HOST_H
#include "schedule.h"
#include <glib.h>
G_BEGIN_DECLS

#define SIMPAR_HOST_ERROR (simpar_host_error_quark())
GQuark simpar_host_error_quark(void);

typedef enum {
    SIMPAR_HOST_ERROR_ABORTED, /* a rank's thread could not be started; the run was abandoned */
    SIMPAR_HOST_ERROR_MEMORY,  /* the buffers do not fit in this machine's memory */
} SimparHostError;

typedef struct _SimparHost SimparHost;

/* (transfer full): one zero-filled double array per buffer of `sched` (borrowed); NULL with
 * SIMPAR_HOST_ERROR_MEMORY, naming the bytes, when the memory cannot be had. */
SimparHost *simpar_host_try_new(const SimparSchedule *sched, GError **error);
/* The same for schedules known to fit (tests, small checks): no memory is a bug. */
SimparHost *simpar_host_new(const SimparSchedule *sched);
void simpar_host_free(SimparHost *host);
/* (transfer none): buffer `buf` of the schedule, simpar_schedule_buffer(sched, buf)->elems long;
 * NULL for an empty buffer. */
double *simpar_host_buffer(SimparHost *host, guint buf);
/* Runs every rank's ops once on the current buffer contents. */
gboolean simpar_host_run(SimparHost *host, GError **error);
/* The same, timed: when `spans` is not NULL (simpar_schedule_n_ops entries),
 * op i's start and end in seconds from the run's start (the monotonic clock, nanosecond
 * resolution), taken by its rank's thread around the op: a collective or a receive includes its
 * wait for the peers. Entries of ops that did not run (a failed run) are left alone. */
gboolean simpar_host_run_timed(SimparHost *host, SimparSpan *spans, GError **error);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(SimparHost, simpar_host_free)
G_END_DECLS
#endif /* SIMPAR_HOST_H */
