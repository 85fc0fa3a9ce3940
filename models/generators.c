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

const SimparGenerator *
simpar_generator_baseline(void)
{
    return &generators[0]; /* (transfer none) */
}

void
simpar_plan_init(SimparPlan *plan)
{
    *plan = (SimparPlan){
        .gen = simpar_generator_baseline(),
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

gboolean
simpar_generator_has(const SimparGenerator *gen, SimparGenFact fact)
{
    switch (fact) {
    case SIMPAR_GEN_LINE:
        return gen->grid == SIMPAR_GRID_LINE;
    case SIMPAR_GEN_GRID:
        return gen->grid != SIMPAR_GRID_LINE;
    case SIMPAR_GEN_LAYERS:
        return gen->grid == SIMPAR_GRID_LAYERS;
    case SIMPAR_GEN_SP:
        return gen->sequence_parallel;
    case SIMPAR_GEN_VARIANTS:
        return gen->variants;
    case SIMPAR_GEN_ANY:
    default:
        return TRUE;
    }
}

/* The grid's figures in words: T as products ("q*q*d") or as powers ("q^2 d"), and the micro-batch
 * divisor (simpar_generator_batch_divisor: "q d"). */
typedef enum {
    GENERATORS_PRODUCTS,
    GENERATORS_POWERS,
    GENERATORS_DIVISOR,
} GeneratorsFigure;

static const char *
generators_figure(const SimparGenerator *gen, GeneratorsFigure figure)
{
    static const char *const figures[][3] = {
        [SIMPAR_GRID_LINE] = {"P", "P", "1"},
        [SIMPAR_GRID_SQUARE] = {"q*q", "q^2", "q"},
        [SIMPAR_GRID_LAYERS] = {"q*q*d", "q^2 d", "q d"},
        [SIMPAR_GRID_CUBE] = {"q*q*q", "q^3", "q^2"},
    };
    return figures[gen->grid][figure];
}

static void
generators_words(GString *out, const SimparGenerator *gen, SimparGenWords words, gboolean first)
{
    switch (words) {
    case SIMPAR_GEN_LABEL:
        g_string_append(out, gen->label);
        return;
    case SIMPAR_GEN_SIZE:
        g_string_append(out, generators_figure(gen, GENERATORS_PRODUCTS));
        return;
    case SIMPAR_GEN_SIZED:
        g_string_append_printf(out, "%s (%s)", generators_figure(gen, GENERATORS_PRODUCTS),
                               gen->name);
        return;
    case SIMPAR_GEN_POWERS:
        g_string_append_printf(out, "%s (%s%s)", gen->name, first ? "T = " : "",
                               generators_figure(gen, GENERATORS_POWERS));
        return;
    case SIMPAR_GEN_BATCH:
        g_string_append_printf(out, "%s for %s", generators_figure(gen, GENERATORS_DIVISOR),
                               gen->label);
        return;
    case SIMPAR_GEN_NAME:
    default:
        g_string_append(out, gen->name);
    }
}

char *
simpar_generator_list(SimparGenFact fact, SimparGenWords words, const char *conjunction)
{
    GString *out = g_string_new(NULL);
    guint n = 0, left = 0;
    for (guint i = 0; i < G_N_ELEMENTS(generators); i++)
        left += simpar_generator_has(&generators[i], fact);
    for (guint i = 0; i < G_N_ELEMENTS(generators); i++) {
        if (!simpar_generator_has(&generators[i], fact))
            continue;
        if (n > 0 && conjunction != NULL && n + 1 == left)
            g_string_append_printf(out, " %s ", conjunction);
        else if (n > 0)
            g_string_append(out, ", ");
        generators_words(out, &generators[i], words, n++ == 0);
    }
    return g_string_free(out, FALSE); /* (transfer full) */
}

const char *
simpar_generator_help(const char *before, SimparGenFact fact, SimparGenWords words,
                      const char *conjunction, const char *after)
{
    g_autofree char *list = simpar_generator_list(fact, words, conjunction);
    g_autofree char *help = g_strconcat(before, list, after, NULL);
    return g_intern_string(help);
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
    const SimparGenerator *gen = plan->gen;
    double q = plan->q;
    return gen->grid == SIMPAR_GRID_LINE   ? (double) plan->tp
           : gen->grid == SIMPAR_GRID_CUBE ? q * q * q
                                           : q * q;
}

gboolean
simpar_plan_whole_rows(const SimparPlan *plan)
{
    return plan->gen->grid == SIMPAR_GRID_LINE && !plan->sequence_parallel;
}

static char *
plan_grid_label(const SimparPlan *plan, gboolean verbose)
{
    const SimparGenerator *gen = plan->gen;
    if (gen->grid == SIMPAR_GRID_LINE)
        return g_strdup_printf("T=%" G_GINT64_FORMAT "%s", plan->tp,
                               !plan->sequence_parallel ? ""
                               : verbose                ? " +SP"
                                                        : "+SP");
    if (gen->grid == SIMPAR_GRID_LAYERS)
        return g_strdup_printf("q=%u d=%" G_GINT64_FORMAT, plan->q, plan->depth);
    const char *variant = !gen->variants   ? ""
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

/* A flag (`given`) that only the modes with `fact` take: refused for another mode. */
static gboolean
generators_flag_applies(const SimparGenerator *gen, gboolean given, SimparGenFact fact,
                        const char *flag, GError **error)
{
    if (!given || simpar_generator_has(gen, fact))
        return TRUE;
    g_autofree char *modes = simpar_generator_list(fact, SIMPAR_GEN_NAME, "or");
    g_set_error(error, SIMPAR_PLAN_ERROR, SIMPAR_PLAN_ERROR_INVALID,
                "%s applies to --tp-mode %s only, not %s", flag, modes, gen->name);
    return FALSE;
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
    if (!generators_flag_applies(gen, plan->depth != 0, SIMPAR_GEN_LAYERS, "--depth", error) ||
        !generators_flag_applies(gen, plan->sequence_parallel, SIMPAR_GEN_SP,
                                 "--sp (sequence parallelism)", error))
        return FALSE;
    if (plan->tp_comm_overlap && !plan->sequence_parallel) { /* --sp: SP's modes only */
        g_autofree char *modes = simpar_generator_list(SIMPAR_GEN_SP, SIMPAR_GEN_NAME, "or");
        g_set_error(error, SIMPAR_PLAN_ERROR, SIMPAR_PLAN_ERROR_INVALID,
                    "--tp-comm-overlap applies to --tp-mode %s with --sp only (Transformer "
                    "Engine's userbuffers overlap the sequence-parallel all-gathers and "
                    "reduce-scatters with the GEMMs), not --tp-mode %s%s",
                    modes, gen->name,
                    simpar_generator_has(gen, SIMPAR_GEN_SP) ? " without --sp" : "");
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
    if (!simpar_generator_has(gen, SIMPAR_GEN_LINE)) {
        g_autofree char *line = simpar_generator_list(SIMPAR_GEN_LINE, SIMPAR_GEN_NAME, "or");
        g_set_error(error, SIMPAR_PLAN_ERROR, SIMPAR_PLAN_ERROR_INVALID,
                    "--tp-mode %s: multi-head latent attention (--kv-lora-rank %" G_GINT64_FORMAT
                    ") runs in --tp-mode %s only (valid: %s; --kv-lora-rank 0 for multi-head "
                    "attention)",
                    gen->name, model->mla.kv_lora_rank, line, line);
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

gboolean
simpar_generator_validate_attention(const SimparModel *model, const SimparPlan *plan,
                                    GError **error)
{
    g_return_val_if_fail(model != NULL && plan != NULL && plan->gen != NULL, FALSE);
    return generators_validate_mla(plan->gen, model, plan, error);
}

SimparSchedule *
simpar_generate_layer(const SimparModel *model, SimparPlan *plan, GError **error)
{
    g_return_val_if_fail(error == NULL || *error == NULL, NULL);
    g_return_val_if_fail(plan->gen != NULL && plan->recompute <= SIMPAR_RECOMPUTE_FULL, NULL);
    const SimparGenerator *gen = plan->gen;
    if (!simpar_model_validate(model, error) || !generators_validate_common(gen, plan, error) ||
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
    g_autoptr(SimparSchedule) sched = simpar_layer_build(model, plan, gen->scheme);
    g_autoptr(GError) local = NULL;
    /* a generated schedule that fails its own check is a bug in the generator */
    if (!simpar_schedule_check(sched, &local))
        g_error("generator %s built an invalid schedule: %s", gen->name, local->message);
    return g_steal_pointer(&sched); /* (transfer full) */
}

SimparSchedule *
simpar_generate_dense_layer(const SimparModel *model, const SimparPlan *plan, GError **error)
{
    g_return_val_if_fail(simpar_model_has_dense_layers(model), NULL);
    SimparModel dense;
    simpar_model_dense_layer(model, &dense);
    SimparPlan copy = *plan;
    copy.ep = 0; /* as simpar_train_validate sets it for a model without experts */
    return simpar_generate_layer(&dense, &copy, error); /* (transfer full) */
}
