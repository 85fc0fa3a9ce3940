/* exec-private.h - what host.c and host-kernels.c share inside exec/; not installed, not used
 * outside this folder.
 *
 *   host.c          threads, bounds checks, collectives, send/recv  --- simpar_host_view() -->
 *   host-kernels.c  the math of every compute op kind, plain loops   <-- simpar_kern_run() ---
 *
 * The kernels never see buffers directly: they turn views into pointers with simpar_host_view()
 * and trust simpar_schedule_check(), which host.c runs first, for every bound.
 */
#ifndef SIMPAR_EXEC_PRIVATE_H
#define SIMPAR_EXEC_PRIVATE_H
#include "host.h"
#include "schedule.h"
#include <glib.h>
G_BEGIN_DECLS

/* (transfer none): the first element of `view`; NULL for SIMPAR_NO_VIEW or a missing buffer. */
double *simpar_host_view(SimparHost *host, SimparView view);

/* Compute ops only: every kind but collectives, send and recv (a block does nothing). */
void simpar_kern_run(SimparHost *host, const SimparOp *op);

G_END_DECLS
#endif /* SIMPAR_EXEC_PRIVATE_H */
