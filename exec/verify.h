/* verify.h - a run's outputs are checked before its timings are reported: every value of every
 * output shard finite, and the shards of one replicated block (the same rows and columns of a
 * tensor, held by several ranks) equal to a tolerance. No executor here: measure.c feeds it the
 * buffers of its local ranks, the unit tests feed it arrays.
 *
 *   simpar_verify_buffer(vf, b, values)   per local buffer holding output shards: finite?
 *                                         largest |value|, the replicas' sampled elements
 *   element-wise MAX of the state         over the processes (MPI); nothing in one process
 *   simpar_verify_check(vf)               the first bad block, named, and how many more
 *
 * Replicas are compared element by element on up to SIMPAR_VERIFY_SAMPLES evenly spaced
 * elements of the block (every element of a smaller block), so that the state crosses the
 * processes in one all-reduce whatever the size of the outputs; differences are relative to
 * the block's largest |value| over its replicas.
 *
 * Ownership: a SimparVerify borrows its schedule, which must outlive it.
 */
#ifndef SIMPAR_VERIFY_H
#define SIMPAR_VERIFY_H
#include "schedule.h"
#include <glib.h>
G_BEGIN_DECLS

#define SIMPAR_VERIFY_ERROR (simpar_verify_error_quark())
GQuark simpar_verify_error_quark(void);

typedef enum {
    SIMPAR_VERIFY_ERROR_NON_FINITE, /* an output holds a NaN or an infinity */
    SIMPAR_VERIFY_ERROR_MISMATCH,   /* the replicas of a block differ beyond the tolerance */
} SimparVerifyError;

#define SIMPAR_VERIFY_SAMPLES 1024

typedef struct _SimparVerify SimparVerify;

SimparVerify *simpar_verify_new(const SimparSchedule *sched,
                                double tolerance); /* (transfer full) */
void simpar_verify_free(SimparVerify *vf);
/* TRUE when buffer `buf` holds an output shard. */
gboolean simpar_verify_needs(const SimparVerify *vf, guint buf);
/* Every output shard of buffer `buf`, whose simpar_schedule_buffer(sched, buf)->elems values are
 * `values` (borrowed for the call). Each buffer once. */
void simpar_verify_buffer(SimparVerify *vf, guint buf, const double *values);
/* (transfer none): the state, *n doubles, to be replaced by its element-wise maximum over the
 * processes before simpar_verify_check(). */
double *simpar_verify_state(SimparVerify *vf, guint *n);
gboolean simpar_verify_check(const SimparVerify *vf, GError **error);
/* How many output blocks there are, and how many of them several ranks hold. */
void simpar_verify_count(const SimparVerify *vf, guint *blocks, guint *replicated);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(SimparVerify, simpar_verify_free)
G_END_DECLS
#endif /* SIMPAR_VERIFY_H */
