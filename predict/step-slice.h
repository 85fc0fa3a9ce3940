/* step-slice.h - one tensor-parallel slice of a step in place of the whole (private to predict/).
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
 *   - on a backend with contention (SimGrid), every shared link (a fat pipe may carry
 *     anything) carries the traffic of one slice only, or is a link that every slice's map
 *     sends to itself (a Clos fabric's rack and pod uplinks, which every slice crosses alike):
 *     such a link carries T copies of slice 0's flows, so while slice 0 runs alone it gets 1/T
 *     of its bandwidth (simpar_step_plan_share): the constraint sum(rates) <= B over T alike
 *     copies is sum <= B / T over one, and max-min sharing's one solution is the same (the
 *     argument of replay-quotient.c); that 1/T must not undercut the narrowest link of any
 *     route through it, whose cached figures then stay right. On the analytic backend every
 *     collective and send is timed on an idle network, so slices that share links never meet.
 * Then the slices are copies of one system that never meet but on those links, and each one's
 * timeline is slice 0's, on either backend. Otherwise (and with `all`) the whole step is simulated.
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
    GPtrArray *shared;    /* the links every slice crosses alike (sg_link_t), or NULL */
    GArray *shared_bw;    /* their own bandwidths (double) */
    const SimparNet *net; /* the platform's net they belong to (with shared) */
} SimparStepPlan;

/* The step of `train` (validated) on the platform's first T x P x D GPUs: one slice when
 * `slice` and the conditions above hold, else the whole step. Inside the platform's actor. */
void simpar_step_plan(const SimparStepTimer *tm, const SimparModel *model, const SimparTrain *train,
                      const SimparSchedule *layer, gboolean slice, SimparStepPlan *out);
void simpar_step_plan_clear(SimparStepPlan *plan);
/* With `on`, gives each link every slice crosses alike 1/slices of its bandwidth (while slice 0
 * runs alone, around simpar_step_run); without, gives it back. In the platform's actor. */
void simpar_step_plan_share(const SimparStepPlan *plan, gboolean on);

G_END_DECLS
#endif /* SIMPAR_STEP_SLICE_H */
