/* generators.h - the table of tensor-parallel layer generators.
 *
 * Each generator is one file (tp-1d.c, tp-2d.c, tp-2p5d.c, tp-3d.c) exporting a validator and
 * a scheme for the shared layer driver (tp-layer.c), and a row of the table (generators.c) that
 * carries the mode's facts: its grid, the options it takes, its label. Adding a mode is a file
 * and a row; a plan holds its row (SimparPlan.gen), and the rest of simpar asks the row (the
 * functions below), never the mode's name: the name is looked up once, where a user gives it.
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

struct _SimparGenerator {
    const char *name;  /* "1d", ... as --tp-mode takes it */
    const char *label; /* "1-D", ... as text says it */
    const char *description;
    gboolean (*validate)(const SimparModel *model, SimparPlan *plan, GError **error);
    const SimparTpScheme *scheme;
    SimparGridShape grid;
    gboolean sequence_parallel; /* --sp applies */
    gboolean variants;          /* --variant paper|later applies */
};

/* A fact a row may have, for the lists of the rows that have it (help texts, refusals). */
typedef enum {
    SIMPAR_GEN_ANY,      /* every row */
    SIMPAR_GEN_LINE,     /* no grid: T = P (1d) */
    SIMPAR_GEN_GRID,     /* a grid of side q: --q applies (2d, 2.5d, 3d) */
    SIMPAR_GEN_LAYERS,   /* layers of a grid: --depth applies (2.5d) */
    SIMPAR_GEN_SP,       /* --sp applies (1d) */
    SIMPAR_GEN_VARIANTS, /* --variant applies (3d) */
} SimparGenFact;

/* What a list says of each row. */
typedef enum {
    SIMPAR_GEN_NAME,   /* "2d" */
    SIMPAR_GEN_LABEL,  /* "2-D" */
    SIMPAR_GEN_SIZE,   /* T in the grid's terms: "q*q" */
    SIMPAR_GEN_SIZED,  /* "q*q (2d)" */
    SIMPAR_GEN_POWERS, /* "2d (q^2)", the first "2d (T = q^2)" */
    SIMPAR_GEN_BATCH,  /* "q for 2-D": what a micro-batch's sequences are a multiple of */
} SimparGenWords;

/* The table, in the papers' order; the first row is the baseline that others compare to. */
const SimparGenerator *simpar_generators(guint *n); /* (transfer none) */
const SimparGenerator *simpar_generator_lookup(const char *name, GError **error);
/* "1d, 2d, 2.5d, 3d": the names, for help texts and errors (interned). */
const char *simpar_generator_names(void);
/* The row of `name`, or NULL for a name no row has (no error: a CSV's mode, say). */
const SimparGenerator *simpar_generator_of(const char *name);
/* The baseline mode (the table's first row: 1-D), the default of every plan (transfer none). */
const SimparGenerator *simpar_generator_baseline(void);
/* A plan of the baseline mode with the default options (T = 1, causal, seed 1234, ...). */
void simpar_plan_init(SimparPlan *plan);
gboolean simpar_generator_has(const SimparGenerator *gen, SimparGenFact fact);
/* The rows that have `fact` in the table's order, as words: "2d, 2.5d or 3d" with conjunction
 * "or", "1d" for one row, every pair ", "-separated for NULL (transfer full). */
char *simpar_generator_list(SimparGenFact fact, SimparGenWords words, const char *conjunction);
/* An option's help text: `before`, that list, `after` (interned: lives as long as the process,
 * as GOption's help texts must). */
const char *simpar_generator_help(const char *before, SimparGenFact fact, SimparGenWords words,
                                  const char *conjunction, const char *after);
/* The group size of a grid of side q (and depth d for LAYERS); LINE has no grid: 0. */
gint64 simpar_generator_grid_tp(const SimparGenerator *gen, gint64 q, gint64 depth);
/* What a micro-batch's sequence count must be a multiple of on a grid of side q (and depth d):
 * 1 (LINE), q (SQUARE), q d (LAYERS), q^2 (CUBE): each GPU of the grid needs whole sequences. */
gint64 simpar_generator_batch_divisor(const SimparGenerator *gen, gint64 q, gint64 depth);
/* The GPUs each weight matrix is split over: P (LINE), q^2 (SQUARE and LAYERS, a copy per depth
 * layer), q^3 (CUBE). */
double simpar_plan_weight_split(const SimparPlan *plan);
/* Whether each GPU holds the layer's activations whole (LINE without sequence parallelism). */
gboolean simpar_plan_whole_rows(const SimparPlan *plan);
/* The split in words: "T=64", "T=8+SP", "q=8", "q=4 d=4", "q=4 later" (verbose: "T=8 +SP",
 * "q=4 variant=paper") (transfer full). */
char *simpar_plan_grid_label(const SimparPlan *plan, gboolean verbose);
/* Whether the plan's mode and context parallelism can run the model's attention (multi-head
 * latent attention: 1-D without context parallelism); one error naming what is valid. */
gboolean simpar_generator_validate_attention(const SimparModel *model, const SimparPlan *plan,
                                             GError **error);
/* Validates the plan (filling plan->q) and builds one layer, forward and backward. */
SimparSchedule *simpar_generate_layer(const SimparModel *model, SimparPlan *plan,
                                      GError **error); /* (transfer full) */
/* An MoE model's dense layer (simpar_model_has_dense_layers): the layer of
 * simpar_model_dense_layer's model on the same plan (`plan` validated; its expert parallelism,
 * which a dense layer has no use for, left out). */
SimparSchedule *simpar_generate_dense_layer(const SimparModel *model, const SimparPlan *plan,
                                            GError **error); /* (transfer full) */

G_END_DECLS
#endif /* SIMPAR_GENERATORS_H */
