/* plan.c - plan defaults. Per-mode validation lives with each generator (tp-*.c). */
#include "plan.h"

G_DEFINE_QUARK(simpar_plan_error_quark, simpar_plan_error)

void
simpar_plan_init(SimparPlan *plan)
{
    *plan = (SimparPlan){
        .mode = g_intern_static_string("1d"), /* the generators table's first row */
        .tp = 1,
        .depth = 0,
        .causal = TRUE,
        .p_hidden = 0.0,
        .p_attn = 0.0,
        .eps = 1e-5,
        .seed = 1234,
        .paper_3d = TRUE,
        .cp = 1,
        .q = 1,
    };
}

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
