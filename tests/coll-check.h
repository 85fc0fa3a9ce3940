/* coll-check.h - checks the collective suites share (test-collectives.c, test-scale.c). */
#ifndef SIMPAR_COLL_CHECK_H
#define SIMPAR_COLL_CHECK_H
#include "collectives.h"
#include <math.h>

/* Whether the ring's fused transfers of every member equal its expansion's summed per peer and
 * direction (simpar_expansion_fuse): the same peers and directions in order, bytes within `tol`
 * relative (0: bit for bit). */
static inline gboolean
simpar_test_fused_equal(const SimparCollAlgo *algo, SimparCollKind kind, const SimparCollGroup *g,
                        double bytes, const SimparCollParams *p, const SimparExpansion *e,
                        double tol)
{
    gboolean ok = TRUE;
    for (guint m = 0; m < g->n; m++) {
        g_autoptr(GArray) x = g_array_new(FALSE, FALSE, sizeof(SimparXfer));
        g_autoptr(GArray) y = g_array_new(FALSE, FALSE, sizeof(SimparXfer));
        simpar_expansion_fuse(e, m, x);
        algo->fuse(kind, g, bytes, p, m, y);
        ok = ok && x->len == y->len;
        for (guint i = 0; ok && i < x->len; i++) {
            const SimparXfer *u = &g_array_index(x, SimparXfer, i);
            const SimparXfer *v = &g_array_index(y, SimparXfer, i);
            ok = u->peer == v->peer && u->send == v->send &&
                 (tol == 0 ? u->bytes == v->bytes : fabs(u->bytes / v->bytes - 1) < tol);
        }
    }
    return ok;
}

#endif /* SIMPAR_COLL_CHECK_H */
