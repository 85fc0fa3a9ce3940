/* ends.h - the model's ends on one tensor-parallel group: embedding, output layer and loss.
 *
 * The vocabulary is split over the whole tensor-parallel group of T ranks, as Megatron-LM's
 * vocabulary-parallel layers split it, for every tensor-parallel mode:
 *
 *   embed.fwd  lookup in the rank's V/T rows; partial rows summed into the layer's layout
 *              (1-D: all-reduce; 1-D + SP, 2-D, 2.5-D, 3-D: reduce-scatter to 1/T of the rows)
 *   head.fwd   whole rows gathered (all-gather unless 1-D without SP); logits = x W[h x V/T];
 *              cross-entropy: row maxima all-reduced (MAX), exp sums and target logits
 *              all-reduced (SUM), the loss
 *   head.bwd   d logits; dx = d logits W^T summed back into the layer's layout; dW = x^T d logits
 *   embed.bwd  whole-row gradient gathered; scatter-add into the table's gradient
 *   aux.*      local parallelism's auxiliary head: the head with width W instead of V
 *   mtp.*      one multi-token prediction module's norms and eh_proj [2h x h], column-parallel
 *              over T (model.h); its embedding, layer and head are the blocks above and the
 *              layer's, which the step repeats for it
 *
 * Colossal-AI's 2-D/2.5-D/3-D classifiers split the vocabulary over the grid instead; simpar
 * keeps one vocabulary-parallel split for all modes (docs/how-it-works.md). In every mode the T
 * ranks' residual blocks tile the [b s x h] matrix, so the gathers and scatters move 1/T of it
 * each. They move contiguous row-major chunks, which are the layer's blocks for 1-D (whole
 * rows, or 1/T of them with SP) but not for the 2-D, 2.5-D and 3-D tiles: there the bytes and
 * times are right and the values are not, so the executable step (step.h) runs 1-D ends only.
 * Shards name the parameters ("embedding.weight", "output.weight" / "aux.weight", "<name>.grad"),
 * the ids ("tokens", "targets"), the loss and the residual blocks in and out ("embed.y",
 * "embed.dy", "head.x", "head.dx").
 * Op names carry the segment ("head.fwd.gemm"); the caller times each segment.
 *
 * Ownership: the schedule is the caller's.
 */
#ifndef SIMPAR_ENDS_H
#define SIMPAR_ENDS_H
#include "step.h"
G_BEGIN_DECLS

enum {
    SIMPAR_ENDS_EMBED = 1 << 0, /* embed.fwd first, embed.bwd last */
    SIMPAR_ENDS_HEAD = 1 << 1,  /* head.fwd, head.bwd */
    SIMPAR_ENDS_AUX = 1 << 2,   /* aux.fwd, aux.bwd (width `width`) */
    SIMPAR_ENDS_MTP = 1 << 3,   /* mtp.fwd after embed.fwd, mtp.bwd before embed.bwd: one
                                   multi-token prediction module's norms and eh_proj (ends.c) */
};

/* The ends of `parts` for the tensor-parallel group of `layer` (its one-layer schedule),
 * ranks 0..T-1 in one group, segments in the order embed.fwd, head/aux.fwd, head/aux.bwd,
 * embed.bwd. */
SimparSchedule *simpar_ends_build(const SimparModel *model, const SimparPlan *plan,
                                  const SimparSchedule *layer, gint64 width,
                                  guint parts); /* (transfer full) */

G_END_DECLS
#endif /* SIMPAR_ENDS_H */
