/* generators.h - the table of tensor-parallel layer generators.
 *
 * Each generator is one file (tp-1d.c, tp-2d.c, tp-2p5d.c, tp-3d.c) exporting a validator and
 * a scheme for the shared layer driver (tp-layer.c). Adding a mode is a file and a row here.
 *
 *   simpar_generate_layer(model, plan) --validate--> grid --tp-layer.c--> SimparSchedule
 *
 * Ownership: the table is static; simpar_generate_layer returns a new schedule (transfer full).
 */
#ifndef SIMPAR_GENERATORS_H
#define SIMPAR_GENERATORS_H
#include "model.h"
#include "plan.h"
#include "schedule.h"
G_BEGIN_DECLS

typedef struct _SimparTpScheme SimparTpScheme;

typedef struct {
    const char *name;
    const char *description;
    gboolean (*validate)(const SimparModel *model, SimparPlan *plan, GError **error);
    const SimparTpScheme *scheme;
} SimparGenerator;

const SimparGenerator *simpar_generators(guint *n); /* (transfer none) */
const SimparGenerator *simpar_generator_lookup(const char *name, GError **error);
/* Validates the plan (filling plan->q) and builds one layer, forward and backward. */
SimparSchedule *simpar_generate_layer(const SimparModel *model, SimparPlan *plan,
                                      GError **error); /* (transfer full) */

G_END_DECLS
#endif /* SIMPAR_GENERATORS_H */
