/* tp-2d.c - 2-D tensor parallelism (SUMMA / Optimus) on a q x q grid: tp = q*q.
 *
 *   rank = j*q + i    "row" group: same j (stride 1)    "col" group: same i (stride q)
 *
 * The schedule is the SUMMA core of tp-summa.c with one depth layer.
 */
#include "tp-layer.h"

gboolean
simpar_tp2d_validate(const SimparModel *m, SimparPlan *plan, GError **error)
{
    guint q = simpar_layer_int_root(plan->tp, 2);
    if (q == 0) {
        g_set_error(error, SIMPAR_PLAN_ERROR, SIMPAR_PLAN_ERROR_INVALID,
                    "--tp %" G_GINT64_FORMAT " is not a square: 2-D needs q*q GPUs (1, 4, 9, 16, "
                    "25, 36, 49, 64, ...)",
                    plan->tp);
        return FALSE;
    }
    plan->q = q;
    return simpar_summa_validate(m, plan, 1, error);
}

const SimparTpScheme simpar_tp2d_scheme = {2, simpar_summa_axis, simpar_summa_setup,
                                           simpar_summa_linear_fwd, simpar_summa_linear_bwd};
