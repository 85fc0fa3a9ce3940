/* exec-private.h - what host.c and host-kernels.c share inside exec/; not installed, not used
 * outside this folder.
 *
 *   host.c          threads, bounds checks, collectives, send/recv  --- simpar_host_view() -->
 *   host-kernels.c  the math of every compute op kind, plain loops   <-- simpar_kern_run() ---
 *
 * The kernels never see buffers directly: they turn views into pointers with simpar_host_view()
 * and trust host.c to have checked every access they report through simpar_kern_accesses().
 */
#ifndef SIMPAR_EXEC_PRIVATE_H
#define SIMPAR_EXEC_PRIVATE_H
#include "host.h"
#include "schedule.h"
#include <glib.h>
G_BEGIN_DECLS

/* One range an op reads or writes: `elems` elements of a rank's buffer from view.off on. */
typedef struct {
    SimparView view;
    gsize elems;      /* 0: not touched; G_MAXSIZE: so large the size overflowed */
    const char *what; /* the view's role for error messages: "a", "in[1] (stats)", "send", ... */
} SimparHostAccess;

#define SIMPAR_HOST_MAX_ACCESS 8

/* Size arithmetic that saturates at G_MAXSIZE, so an absurd shape fails the bounds check. */
static inline gsize
exec_mul(gsize a, gsize b)
{
    gsize r;
    return g_size_checked_mul(&r, a, b) ? r : G_MAXSIZE;
}

static inline gsize
exec_add(gsize a, gsize b)
{
    gsize r;
    return g_size_checked_add(&r, a, b) ? r : G_MAXSIZE;
}

/* (transfer none): the first element of `view`; NULL for SIMPAR_NO_VIEW or a missing buffer. */
double *simpar_host_view(SimparHost *host, SimparView view);

/* Compute ops (kind < SIMPAR_OP_COLLECTIVE) only. */
guint simpar_kern_accesses(const SimparOp *op, SimparHostAccess acc[SIMPAR_HOST_MAX_ACCESS]);
gboolean simpar_kern_check(const SimparOp *op, GError **error);
void simpar_kern_run(SimparHost *host, const SimparOp *op);

G_END_DECLS
#endif /* SIMPAR_EXEC_PRIVATE_H */
