/* generators.h - the table of tensor-parallel layer generators.
 *
 * Each generator is one file (tp-1d.c, tp-2d.c, tp-2p5d.c, tp-3d.c) exporting a validator and
 * a scheme for the shared layer driver (tp-layer.c), and a row of the table (generators.c) that
 * carries the mode's facts: its grid, the options it takes, its label. Adding a mode is a file
 * and a row; the rest of simpar asks the row (the functions below), never the mode's name.
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

/* How a mode lays out its T GPUs. */
typedef enum {
    SIMPAR_GRID_LINE,   /* P GPUs in a row: T = P (1-D) */
    SIMPAR_GRID_SQUARE, /* a q x q grid: T = q^2 (2-D) */
    SIMPAR_GRID_LAYERS, /* d layers of a q x q grid: T = q^2 d (2.5-D) */
    SIMPAR_GRID_CUBE,   /* a q x q x q cube: T = q^3 (3-D) */
} SimparGridShape;

typedef struct {
    const char *name;  /* "1d", ... as --tp-mode takes it */
    const char *label; /* "1-D", ... as text says it */
    const char *description;
    gboolean (*validate)(const SimparModel *model, SimparPlan *plan, GError **error);
    const SimparTpScheme *scheme;
    SimparGridShape grid;
    gboolean sequence_parallel; /* --sp applies */
    gboolean variants;          /* --variant paper|later applies */
} SimparGenerator;

/* The table, in the papers' order; the first row is the baseline that others compare to. */
const SimparGenerator *simpar_generators(guint *n); /* (transfer none) */
const SimparGenerator *simpar_generator_lookup(const char *name, GError **error);
/* "1d, 2d, 2.5d, 3d": the names, for help texts and errors (interned). */
const char *simpar_generator_names(void);
/* The row of `name`, or NULL for a name no row has (no error: a CSV's mode, say). */
const SimparGenerator *simpar_generator_of(const char *name);
/* Whether `name` is the baseline mode (the table's first row). */
gboolean simpar_generator_is_baseline(const char *name);
/* The group size of a grid of side q (and depth d for LAYERS); LINE has no grid: 0. */
gint64 simpar_generator_grid_tp(const SimparGenerator *gen, gint64 q, gint64 depth);
/* What a micro-batch's sequence count must be a multiple of on a grid of side q (and depth d):
 * 1 (LINE), q (SQUARE), q d (LAYERS), q^2 (CUBE): each GPU of the grid needs whole sequences. */
gint64 simpar_generator_batch_divisor(const SimparGenerator *gen, gint64 q, gint64 depth);
/* The GPUs each weight matrix is split over: P (LINE), q^2 (SQUARE and LAYERS, a copy per depth
 * layer), q^3 (CUBE); 0 for a plan of an unknown mode. */
double simpar_plan_weight_split(const SimparPlan *plan);
/* Whether each GPU holds the layer's activations whole (LINE without sequence parallelism). */
gboolean simpar_plan_whole_rows(const SimparPlan *plan);
/* The split in words: "T=64", "T=8+SP", "q=8", "q=4 d=4", "q=4 later" (verbose: "T=8 +SP",
 * "q=4 variant=paper") (transfer full). */
char *simpar_plan_grid_label(const SimparPlan *plan, gboolean verbose);
/* Validates the plan (filling plan->q) and builds one layer, forward and backward. */
SimparSchedule *simpar_generate_layer(const SimparModel *model, SimparPlan *plan,
                                      GError **error); /* (transfer full) */

G_END_DECLS
#endif /* SIMPAR_GENERATORS_H */
