/* generators.c - the table of tensor-parallel generators and the layer entry point. */
#include "generators.h"
#include "tp-layer.h"

static const SimparGenerator generators[] = {
    {"1d", "1-D",
     "Megatron-LM: column/row-parallel linears, all-reduces (--sp: all-gather and "
     "reduce-scatter); tp = P",
     simpar_tp1d_validate, &simpar_tp1d_scheme, SIMPAR_GRID_LINE, TRUE, FALSE},
    {"2d", "2-D", "SUMMA / Optimus: q x q grid, row/column broadcasts and reduces; tp = q*q",
     simpar_tp2d_validate, &simpar_tp2d_scheme, SIMPAR_GRID_SQUARE, FALSE, FALSE},
    {"2.5d", "2.5-D",
     "Tesseract: d layers of a q x q SUMMA grid plus depth all-reduces; tp = q*q*d",
     simpar_tp2p5d_validate, &simpar_tp2p5d_scheme, SIMPAR_GRID_LAYERS, FALSE, FALSE},
    {"3d", "3-D", "Bian et al. 2021: q x q x q cube, all-gathers and reduce-scatters; tp = q*q*q",
     simpar_tp3d_validate, &simpar_tp3d_scheme, SIMPAR_GRID_CUBE, FALSE, TRUE},
};

/* Larger groups are refused before anything is allocated. */
#define GENERATORS_MAX_TP 65536

const SimparGenerator *
simpar_generators(guint *n)
{
    *n = G_N_ELEMENTS(generators);
    return generators; /* (transfer none) */
}

const SimparGenerator *
simpar_generator_lookup(const char *name, GError **error)
{
    const SimparGenerator *gen = simpar_generator_of(name);
    if (gen == NULL)
        g_set_error(error, SIMPAR_PLAN_ERROR, SIMPAR_PLAN_ERROR_INVALID,
                    "--tp-mode %s: unknown tensor-parallel mode (valid: %s)", name,
                    simpar_generator_names());
    return gen;
}

const char *
simpar_generator_names(void)
{
    return simpar_intern_names(generators, G_N_ELEMENTS(generators), sizeof generators[0]);
}

const SimparGenerator *
simpar_generator_of(const char *name)
{
    for (guint i = 0; name != NULL && i < G_N_ELEMENTS(generators); i++)
        if (g_str_equal(generators[i].name, name))
            return &generators[i];
    return NULL;
}

gboolean
simpar_generator_is_baseline(const char *name)
{
    return simpar_generator_of(name) == &generators[0];
}

gint64
simpar_generator_grid_tp(const SimparGenerator *gen, gint64 q, gint64 depth)
{
    switch (gen->grid) {
    case SIMPAR_GRID_SQUARE:
        return q * q;
    case SIMPAR_GRID_LAYERS:
        return q * q * depth;
    case SIMPAR_GRID_CUBE:
        return q * q * q;
    case SIMPAR_GRID_LINE:
    default:
        return 0;
    }
}

gint64
simpar_generator_batch_divisor(const SimparGenerator *gen, gint64 q, gint64 depth)
{
    switch (gen->grid) {
    case SIMPAR_GRID_SQUARE:
        return q;
    case SIMPAR_GRID_LAYERS:
        return q * depth;
    case SIMPAR_GRID_CUBE:
        return q * q;
    case SIMPAR_GRID_LINE:
    default:
        return 1;
    }
}

double
simpar_plan_weight_split(const SimparPlan *plan)
{
    const SimparGenerator *gen = simpar_generator_of(plan->mode);
    double q = plan->q;
    if (gen == NULL)
        return 0;
    return gen->grid == SIMPAR_GRID_LINE   ? (double) plan->tp
           : gen->grid == SIMPAR_GRID_CUBE ? q * q * q
                                           : q * q;
}

gboolean
simpar_plan_whole_rows(const SimparPlan *plan)
{
    const SimparGenerator *gen = simpar_generator_of(plan->mode);
    return gen != NULL && gen->grid == SIMPAR_GRID_LINE && !plan->sequence_parallel;
}

static char *
plan_grid_label(const SimparPlan *plan, gboolean verbose)
{
    const SimparGenerator *gen = simpar_generator_of(plan->mode);
    if (gen != NULL && gen->grid == SIMPAR_GRID_LINE)
        return g_strdup_printf("T=%" G_GINT64_FORMAT "%s", plan->tp,
                               !plan->sequence_parallel ? ""
                               : verbose                ? " +SP"
                                                        : "+SP");
    if (gen != NULL && gen->grid == SIMPAR_GRID_LAYERS)
        return g_strdup_printf("q=%u d=%" G_GINT64_FORMAT, plan->q, plan->depth);
    const char *variant = gen == NULL || !gen->variants ? ""
                          : verbose        ? (plan->paper_3d ? " variant=paper" : " variant=later")
                          : plan->paper_3d ? ""
                                           : " later";
    return g_strdup_printf("q=%u%s", plan->q, variant); /* (transfer full) */
}

char *
simpar_plan_grid_label(const SimparPlan *plan, gboolean verbose)
{
    char *label = plan_grid_label(plan, verbose);
    if (simpar_plan_cp(plan) == 1)
        return label;
    char *with =
        g_strdup_printf("%s C=%u%s", label, simpar_plan_cp(plan), plan->cp_ring ? " ring" : "");
    g_free(label);
    return with; /* (transfer full) */
}

static gboolean
generators_validate_common(const SimparGenerator *gen, const SimparPlan *plan, GError **error)
{
    if (plan->tp < 1 || plan->tp > GENERATORS_MAX_TP) {
        g_set_error(error, SIMPAR_PLAN_ERROR, SIMPAR_PLAN_ERROR_INVALID,
                    "--tp %" G_GINT64_FORMAT " is out of range: the tensor-parallel group must "
                    "have between 1 and %d GPUs",
                    plan->tp, GENERATORS_MAX_TP);
        return FALSE;
    }
    if (plan->depth != 0 && gen->grid != SIMPAR_GRID_LAYERS) {
        g_set_error(error, SIMPAR_PLAN_ERROR, SIMPAR_PLAN_ERROR_INVALID,
                    "--depth applies to --tp-mode 2.5d only, not %s", gen->name);
        return FALSE;
    }
    if (plan->sequence_parallel && !gen->sequence_parallel) {
        g_set_error(error, SIMPAR_PLAN_ERROR, SIMPAR_PLAN_ERROR_INVALID,
                    "--sp (sequence parallelism) applies to --tp-mode 1d only, not %s", gen->name);
        return FALSE;
    }
    if (plan->cp < 0 || plan->cp > GENERATORS_MAX_TP || plan->cp * plan->tp > GENERATORS_MAX_TP) {
        g_set_error(error, SIMPAR_PLAN_ERROR, SIMPAR_PLAN_ERROR_INVALID,
                    "--cp %" G_GINT64_FORMAT " is out of range: --tp x --cp must be between 1 and "
                    "%d GPUs",
                    plan->cp, GENERATORS_MAX_TP);
        return FALSE;
    }
    if (plan->p_hidden < 0 || plan->p_hidden >= 1 || plan->p_attn < 0 || plan->p_attn >= 1) {
        g_set_error(error, SIMPAR_PLAN_ERROR, SIMPAR_PLAN_ERROR_INVALID,
                    "dropout probabilities must be in [0, 1)");
        return FALSE;
    }
    return TRUE;
}

/* Multi-head latent attention runs in 1-D tensor parallelism without context parallelism. */
static gboolean
generators_validate_mla(const SimparGenerator *gen, const SimparModel *model,
                        const SimparPlan *plan, GError **error)
{
    if (!simpar_model_is_mla(model))
        return TRUE;
    if (gen->grid != SIMPAR_GRID_LINE) {
        g_set_error(error, SIMPAR_PLAN_ERROR, SIMPAR_PLAN_ERROR_INVALID,
                    "--tp-mode %s: multi-head latent attention (--kv-lora-rank %" G_GINT64_FORMAT
                    ") runs in --tp-mode 1d only (valid: 1d; --kv-lora-rank 0 for multi-head "
                    "attention)",
                    gen->name, model->mla.kv_lora_rank);
        return FALSE;
    }
    if (simpar_plan_cp(plan) > 1) {
        g_set_error(error, SIMPAR_PLAN_ERROR, SIMPAR_PLAN_ERROR_INVALID,
                    "--cp %u: multi-head latent attention (--kv-lora-rank %" G_GINT64_FORMAT
                    ") runs without context parallelism (valid: --cp 1)",
                    simpar_plan_cp(plan), model->mla.kv_lora_rank);
        return FALSE;
    }
    return TRUE;
}

SimparSchedule *
simpar_generate_layer(const SimparModel *model, SimparPlan *plan, GError **error)
{
    g_return_val_if_fail(error == NULL || *error == NULL, NULL);
    g_return_val_if_fail(plan->recompute <= SIMPAR_RECOMPUTE_FULL, NULL);
    const SimparGenerator *gen = simpar_generator_lookup(plan->mode, error);
    if (gen == NULL || !simpar_model_validate(model, error) ||
        !generators_validate_common(gen, plan, error) ||
        !generators_validate_mla(gen, model, plan, error))
        return NULL;
    guint C = simpar_plan_cp(plan);
    if (C > 1 && model->seq % (2 * C) != 0) {
        g_set_error(error, SIMPAR_PLAN_ERROR, SIMPAR_PLAN_ERROR_INVALID,
                    "--seq %" G_GINT64_FORMAT " is not divisible by 2 x --cp %u: context "
                    "parallelism cuts every sequence into 2C equal chunks (use a multiple of %u)",
                    model->seq, C, 2 * C);
        return NULL;
    }
    SimparModel share = *model; /* what each context-parallel group of T splits */
    share.seq = model->seq / C;
    if (!gen->validate(&share, plan, error))
        return NULL;
    plan->mode = g_intern_string(gen->name);
    g_autoptr(SimparSchedule) sched = simpar_layer_build(model, plan, gen->scheme);
    g_autoptr(GError) local = NULL;
    /* a generated schedule that fails its own check is a bug in the generator */
    if (!simpar_schedule_check(sched, &local))
        g_error("generator %s built an invalid schedule: %s", gen->name, local->message);
    return g_steal_pointer(&sched); /* (transfer full) */
}
