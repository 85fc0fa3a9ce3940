/* step-overlap.c - Megatron-Core's --overlap-moe-expert-parallel-comm in the step schedule: the
 * layers of a forward and a backward merged, one's all-to-alls under the other's compute.
 *
 * Megatron-Core splits each layer into nodes (megatron/core/models/gpt/
 * fine_grained_callables.py): pre-dispatch (attention, the second norm, router, permutation;
 * the shared experts), dispatch (the all-to-all), mlp (the experts), combine (the all-to-all,
 * the unpermutation, the residual add); the dispatch and combine run on a communication stream,
 * the rest on the compute stream. TransformerLayerSchedulePlan.run
 * (megatron/core/models/common/model_chunk_schedule_plan.py) issues forward layer i of one
 * micro-batch with backward layer L-1-i of another in this order:
 *
 *   comm:    [B combine]              [F dispatch] [B dispatch]            [F combine]
 *   compute:             [F pre] [B mlp]                       [F mlp]               [B pre]
 *
 * and every node waits for the node before it of its own micro-batch (the event each chunk's
 * nodes record and wait for, pipeline_parallel/utils.py ScheduleNode.stream_acquire_context).
 * Here each node is a timed block ("moe.fwd.pre", "moe.fwd.dispatch", "moe.fwd.mlp",
 * "moe.fwd.combine", "moe.bwd.combine", "moe.bwd.mlp", "moe.bwd.dispatch", "moe.bwd.pre": the
 * parts of "layer.fwd" and "layer.bwd", predict/step-predict.c); a dense layer has no
 * all-to-alls and is one block ("dense.fwd" at F pre's place, "dense.bwd" at B mlp's). Layers
 * one chunk has more of than the other run alone, in the same node order.
 */
#include "step-private.h"

/* One node of micro-batch chain *last: after the node before it when that is on another
 * stream (the same stream runs in order). */
static void
overlap_node(Step *st, const char *key, guint stream, SimparPhase phase, guint *last)
{
    guint i = step_node(st, key, 1, stream, phase);
    if (*last != G_MAXUINT && simpar_schedule_op(st->s, *last)->stream != stream)
        simpar_schedule_add_dep(st->s, i, *last);
    *last = i;
}

/* Forward layer fl of f's chunk with backward layer bl of b's (G_MAXUINT: none). */
static void
overlap_pair(Step *st, const SimparPipeItem *f, guint fl, guint *fc, const SimparPipeItem *b,
             guint bl, guint *bc)
{
    const SimparPhase F = SIMPAR_PHASE_FORWARD, B = SIMPAR_PHASE_BACKWARD;
    gboolean fwd = fl != G_MAXUINT, bwd = bl != G_MAXUINT;
    gboolean fmoe = fwd && !step_dense(st, f->chunk, fl);
    gboolean bmoe = bwd && !step_dense(st, b->chunk, bl);
    if (bmoe)
        overlap_node(st, "moe.bwd.combine", STEP_COMM, B, bc);
    if (fwd)
        overlap_node(st, fmoe ? "moe.fwd.pre" : step_layer_key(TRUE, FALSE), STEP_COMPUTE, F, fc);
    if (bwd)
        overlap_node(st, bmoe ? "moe.bwd.mlp" : step_layer_key(TRUE, TRUE), STEP_COMPUTE, B, bc);
    if (fmoe)
        overlap_node(st, "moe.fwd.dispatch", STEP_COMM, F, fc);
    if (bmoe)
        overlap_node(st, "moe.bwd.dispatch", STEP_COMM, B, bc);
    if (fmoe) {
        overlap_node(st, "moe.fwd.mlp", STEP_COMPUTE, F, fc);
        overlap_node(st, "moe.fwd.combine", STEP_COMM, F, fc);
    }
    if (bmoe)
        overlap_node(st, "moe.bwd.pre", STEP_COMPUTE, B, bc);
    if (bwd && b->micro + 1 == st->m && step_reduces(st)) { /* the layer's final gradients */
        gsize off, lp, eoff, le;
        step_layer_place(st, b->chunk, bl, &off, &lp, &eoff, &le);
        step_grads_ready(st, STEP_DENSE, off, lp, *bc);
        step_grads_ready(st, STEP_EXPERT, eoff, le, *bc);
    }
}

void
step_overlap_layers(Step *st, const SimparPipeItem *f, guint *f_last, const SimparPipeItem *b,
                    guint *b_last)
{
    guint lf = step_lc(st, f->chunk), lb = step_lc(st, b->chunk), n = MIN(lf, lb);
    for (guint i = 0; i < n; i++) /* model_chunk_schedule_plan.py's run: pairs, then the rest */
        overlap_pair(st, f, i, f_last, b, lb - 1 - i, b_last);
    for (guint i = n; i < lb; i++)
        overlap_pair(st, f, G_MAXUINT, f_last, b, lb - 1 - i, b_last);
    for (guint i = n; i < lf; i++)
        overlap_pair(st, f, i, f_last, b, G_MAXUINT, b_last);
}
