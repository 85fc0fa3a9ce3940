/* memory.h - bytes one GPU needs to train a stack of layers with a tensor-parallel plan.
 *
 *   total = model states + stored activations (all layers) + the transient peak of one layer
 *
 * Model states: 16 bytes per parameter held by the GPU (16-bit weights and gradients plus fp32
 * Adam master weights, momentum and variance; fp32 training: 4+4+8), parameters of the L layers
 * divided as the mode divides them (1-D P, 2-D q^2, 2.5-D q^2 (replicated over depth), 3-D q^3).
 * Activations per layer follow Korthikanti et al. (shared/reference/training-schedules.md 6.2,
 * 6.4) with the dtype's size for values and one byte per dropout-mask element; flash attention
 * drops the s x s term. The transient peak is the largest sum of one layer's schedule buffers
 * on any rank (gathered blocks included).
 *
 * Ownership: value types.
 */
#ifndef SIMPAR_MEMORY_H
#define SIMPAR_MEMORY_H
#include "compute.h"
#include "plan.h"
G_BEGIN_DECLS

typedef struct {
    double params;        /* parameters held per GPU (elements) */
    double states_B;      /* weights, gradients, optimizer states */
    double activations_B; /* stored for backward, all layers */
    double transient_B;   /* one layer's working buffers */
    double total_B;
} SimparMemory;

/* `plan` must be validated (plan->q set); `layer` is the plan's one-layer schedule. */
void simpar_memory_estimate(const SimparModel *model, const SimparPlan *plan,
                            const SimparSchedule *layer, SimparAttentionImpl attn,
                            SimparMemory *out);

G_END_DECLS
#endif /* SIMPAR_MEMORY_H */
