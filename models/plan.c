/* plan.c - the plan's context-parallel size and recomputation names. The defaults, which name
 * the generator table's first row, live in generators.c; per-mode validation with each
 * generator (tp-*.c). */
#include "plan.h"

G_DEFINE_QUARK(simpar_plan_error_quark, simpar_plan_error)

guint
simpar_plan_cp(const SimparPlan *plan)
{
    return plan->cp > 1 ? (guint) plan->cp : 1;
}

static const char *const plan_recompute_names[] = {"none", "selective", "full"};

gboolean
simpar_recompute_parse(const char *name, SimparRecompute *out, GError **error)
{
    for (guint i = 0; i < G_N_ELEMENTS(plan_recompute_names); i++)
        if (g_strcmp0(name, plan_recompute_names[i]) == 0) {
            *out = (SimparRecompute) i;
            return TRUE;
        }
    g_set_error(error, SIMPAR_PLAN_ERROR, SIMPAR_PLAN_ERROR_INVALID,
                "--recompute %s: unknown (valid: none, selective, full)", name);
    return FALSE;
}

const char *
simpar_recompute_name(SimparRecompute r)
{
    g_return_val_if_fail(r <= SIMPAR_RECOMPUTE_FULL, "?");
    return plan_recompute_names[r];
}
