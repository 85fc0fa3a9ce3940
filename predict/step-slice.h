/* step-slice.h - one tensor-parallel slice of a step in place of the whole (private to sim/).
 *
 * Between pipeline stages and across data-parallel replicas a rank only ever talks to ranks of
 * its own tensor-parallel index t (its "slice": P x D ranks); the tensor-parallel traffic is
 * inside the timed blocks. So the T slices of a step run the same ops, and when nothing joins
 * them they take the same times, and simulating slice 0 gives the step. Nothing joins them
 * when, checked here before any simulation:
 *   - there is no tensor-parallel op in the step (scatter/gather adds one between stages);
 *   - every tensor-parallel rank holds the same (simpar_step_rank_facts), so the ops agree;
 *   - for every pair of GPUs that communicate in slice 0 (each p2p send, and each transfer of
 *     the collectives' expansions under the run's algorithm), the pair of every other slice
 *     has a route of the same length whose links have the same bandwidth, latency and sharing,
 *     through a one-to-one map of slice 0's links onto that slice's (so the flows of a slice
 *     meet on its links exactly as slice 0's meet on theirs);
 *   - no shared link carries the traffic of two slices (a fat pipe may).
 * Then the slices are copies of one system that never meet, and each one's timeline is slice
 * 0's, on either backend. Otherwise (and with `all`) the whole step is simulated.
 *
 * Ownership: a SimparStepPlan owns its schedule and arrays.
 */
#ifndef SIMPAR_STEP_SLICE_H
#define SIMPAR_STEP_SLICE_H
#include "step-predict.h"
G_BEGIN_DECLS

typedef struct {
    SimparSchedule *step; /* what to simulate: slice 0's step, or the whole step */
    guint *gpus;          /* the GPU of each of its ranks */
    guint *job_gpus;      /* the GPU of each rank of the job */
    guint slices;         /* how many slices it stands for: T, or 1 for the whole step */
} SimparStepPlan;

/* The step of `train` (validated) on the platform's first T x P x D GPUs: one slice when
 * `slice` and the conditions above hold, else the whole step. Inside the platform's actor. */
void simpar_step_plan(const SimparStepTimer *tm, const SimparModel *model, const SimparTrain *train,
                      const SimparSchedule *layer, gboolean slice, SimparStepPlan *out);
void simpar_step_plan_clear(SimparStepPlan *plan);

G_END_DECLS
#endif /* SIMPAR_STEP_SLICE_H */
