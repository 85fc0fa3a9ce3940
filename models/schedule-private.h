/* schedule-private.h - element ranges an op reads and writes (private to models/).
 *
 * Used by the schedule checks (bounds, hazards) and by the layer driver to derive
 * cross-stream dependencies. A range is [off, off+len) of one rank's buffer.
 */
#ifndef SIMPAR_SCHEDULE_PRIVATE_H
#define SIMPAR_SCHEDULE_PRIVATE_H
#include "schedule.h"
G_BEGIN_DECLS

#define SIMPAR_MAX_ACCESSES 10

typedef struct {
    guint buf;
    gsize off, len;
    gboolean write;
} SimparAccess;

guint simpar_op_accesses(const SimparSchedule *sched, const SimparOp *op,
                         SimparAccess out[SIMPAR_MAX_ACCESSES]);
gboolean simpar_accesses_conflict(const SimparAccess *a, guint na, const SimparAccess *b, guint nb);

#define SIMPAR_MAX_VIEWS 8
/* Every view field of `op`'s payload, used or not (unused ones hold whatever the generator left
 * there: SIMPAR_NO_VIEW or zeros), for code that rewrites an op's buffers. */
guint simpar_op_view_fields(SimparOp *op, SimparView *out[SIMPAR_MAX_VIEWS]);

G_END_DECLS
#endif /* SIMPAR_SCHEDULE_PRIVATE_H */
