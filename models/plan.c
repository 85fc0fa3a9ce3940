/* plan.c - plan defaults. Per-mode validation lives with each generator (tp-*.c). */
#include "plan.h"

G_DEFINE_QUARK(simpar_plan_error_quark, simpar_plan_error)

void
simpar_plan_init(SimparPlan *plan)
{
    *plan = (SimparPlan){
        .mode = g_intern_static_string("1d"),
        .tp = 1,
        .depth = 0,
        .causal = TRUE,
        .p_hidden = 0.0,
        .p_attn = 0.0,
        .eps = 1e-5,
        .seed = 1234,
        .paper_3d = TRUE,
        .q = 1,
    };
}
