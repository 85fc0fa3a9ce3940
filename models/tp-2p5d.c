/* tp-2p5d.c - 2.5-D tensor parallelism (Tesseract): d depth layers of a q x q SUMMA grid.
 *
 *   rank = i + q*j + q*q*k    "row" (vary i), "col" (vary j), "dep" (vary k), "xz" (vary j, k)
 *
 * Each depth layer k runs SUMMA (tp-summa.c) on its own 1/d of the batch with the same weight
 * blocks. The d copies of each weight gradient are partial sums over different tokens, so a
 * correct implementation must sum them: every weight gradient is all-reduced along "dep"
 * (k*n/q^2 elements over d ranks), and bias / layer-norm parameter gradients along "xz". The
 * first public implementation has no such depth all-reduce in its linear ops; without it the
 * d replicas of each weight drift apart, so simpar always emits it.
 */
#include "tp-layer.h"

gboolean
simpar_tp2p5d_validate(const SimparModel *m, SimparPlan *plan, GError **error)
{
    if (plan->depth < 1) {
        g_set_error(error, SIMPAR_PLAN_ERROR, SIMPAR_PLAN_ERROR_INVALID,
                    "--tp-mode 2.5d needs --depth d >= 1 (tp = q*q*d)");
        return FALSE;
    }
    guint q = plan->tp % plan->depth == 0 ? simpar_layer_int_root(plan->tp / plan->depth, 2) : 0;
    if (q == 0) {
        g_set_error(error, SIMPAR_PLAN_ERROR, SIMPAR_PLAN_ERROR_INVALID,
                    "--tp %" G_GINT64_FORMAT " is not q*q*d for --depth %" G_GINT64_FORMAT
                    ": 2.5-D needs q*q*%" G_GINT64_FORMAT " GPUs (%" G_GINT64_FORMAT
                    ", %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT ", ...)",
                    plan->tp, plan->depth, plan->depth, plan->depth, 4 * plan->depth,
                    9 * plan->depth);
        return FALSE;
    }
    plan->q = q;
    return simpar_summa_validate(m, plan, (guint) plan->depth, error);
}

const SimparTpScheme simpar_tp2p5d_scheme = {4, simpar_summa_axis, simpar_summa_setup,
                                             simpar_summa_linear_fwd, simpar_summa_linear_bwd};
