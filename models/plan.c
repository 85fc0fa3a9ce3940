/* plan.c - the plan's context-parallel size and recomputation names (and modules). The defaults,
 * which name the generator table's first row, live in generators.c; per-mode validation with each
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

/* Megatron-Core's names, in the order of its help text (bit i is name i). */
static const char *const plan_module_names[] = {
    "core_attn", "moe_act", "layernorm", "mla_up_proj", "mlp", "moe", "shared_experts"};

/* Megatron's modules of models simpar does not have. */
static const char *const plan_module_foreign[] = {"gdn_norm_out", "gdp_in_proj", "gdp_qkv", "mhc"};

static gboolean
plan_module_fail(GError **error, const char *word, const char *why)
{
    g_set_error(error, SIMPAR_PLAN_ERROR, SIMPAR_PLAN_ERROR_INVALID,
                "--recompute-modules %s: %s (valid: core_attn, moe_act, layernorm, mla_up_proj, "
                "mlp, moe, shared_experts; comma- or blank-separated)",
                word, why);
    return FALSE;
}

gboolean
simpar_recompute_modules_parse(const char *list, guint *out, GError **error)
{
    g_return_val_if_fail(list != NULL && out != NULL, FALSE);
    g_auto(GStrv) words = g_strsplit_set(list, ", \t", -1);
    guint bits = 0;
    for (guint w = 0; words[w] != NULL; w++) {
        const char *word = words[w];
        if (*word == '\0')
            continue;
        guint i = 0;
        while (i < G_N_ELEMENTS(plan_module_names) && !g_str_equal(word, plan_module_names[i]))
            i++;
        if (i < G_N_ELEMENTS(plan_module_names)) {
            bits |= 1u << i;
            continue;
        }
        for (guint f = 0; f < G_N_ELEMENTS(plan_module_foreign); f++)
            if (g_str_equal(word, plan_module_foreign[f]))
                return plan_module_fail(error, word,
                                        "a module of Megatron's GatedDeltaNet, GatedDeltaProduct "
                                        "or hyper-connection layers, which simpar does not model");
        return plan_module_fail(error, word, "unknown");
    }
    if (bits == 0)
        return plan_module_fail(error, "''",
                                "no module (for no recomputation use --recompute none)");
    *out = bits == SIMPAR_RECOMPUTE_CORE_ATTN ? 0 : bits;
    return TRUE;
}

char *
simpar_recompute_modules_name(guint modules)
{
    if (modules == 0)
        modules = SIMPAR_RECOMPUTE_CORE_ATTN;
    GString *s = g_string_new(NULL);
    for (guint i = 0; i < G_N_ELEMENTS(plan_module_names); i++)
        if (modules & (1u << i))
            g_string_append_printf(s, "%s%s", s->len > 0 ? "," : "", plan_module_names[i]);
    return g_string_free(s, FALSE); /* (transfer full) */
}

guint
simpar_plan_recompute_set(const SimparPlan *plan)
{
    if (plan->recompute != SIMPAR_RECOMPUTE_SELECTIVE)
        return 0;
    return plan->recompute_modules != 0 ? plan->recompute_modules : SIMPAR_RECOMPUTE_CORE_ATTN;
}

gboolean
simpar_plan_recomputes(const SimparPlan *plan, guint module)
{
    return (simpar_plan_recompute_set(plan) & module) != 0;
}
