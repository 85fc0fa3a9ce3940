/* exec-private.h - what host.c and host-kernels.c share inside exec/; not installed, not used
 * outside this folder.
 *
 *   host.c          threads, bounds checks, collectives, send/recv
 *                     |  simpar_kern_run(the buffers, op)
 *                     v
 *   host-kernels.c  the math of every compute op kind, plain loops
 *   host-moe.c      the mixture-of-experts ops' (routing, permutations)
 *
 * The kernels get the run's buffers, not the executor (host.c calls them, never the reverse):
 * they turn views into pointers with simpar_host_bufs_view() and trust simpar_schedule_check(),
 * which host.c runs first, for every bound.
 */
#ifndef SIMPAR_EXEC_PRIVATE_H
#define SIMPAR_EXEC_PRIVATE_H
#include "host.h"
#include "schedule.h"
#include <glib.h>
G_BEGIN_DECLS

/* The buffers of a host run, by buffer index (borrowed from the executor). */
typedef struct {
    double *const *bufs;
    guint n_buffers;
} SimparHostBufs;

/* (transfer none): the first element of `view`; NULL for SIMPAR_NO_VIEW or a missing buffer. */
static inline double *
simpar_host_bufs_view(const SimparHostBufs *b, SimparView view)
{
    if (view.buf >= b->n_buffers || b->bufs[view.buf] == NULL)
        return NULL;
    return b->bufs[view.buf] + view.off;
}

/* Compute ops only: every kind but collectives, send and recv (a block does nothing). */
void simpar_kern_run(const SimparHostBufs *host, const SimparOp *op);
/* The mixture-of-experts ops (host-moe.c). */
void simpar_kern_moe(const SimparHostBufs *host, const SimparOp *op);

G_END_DECLS
#endif /* SIMPAR_EXEC_PRIVATE_H */
