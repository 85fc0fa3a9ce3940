/* cli.c - options shared by the simpar commands: model shapes and the tensor-parallel plan. */
#include "cli.h"
#include "summary.h"

G_DEFINE_QUARK(simpar_cli_error_quark, simpar_cli_error)

#define CLI_UNSET G_MININT64

void
simpar_cli_job_init(SimparCliJob *job)
{
    *job = (SimparCliJob){.hidden = CLI_UNSET,
                          .heads = CLI_UNSET,
                          .seq = CLI_UNSET,
                          .micro_batch = CLI_UNSET,
                          .ffn = CLI_UNSET,
                          .layers = CLI_UNSET,
                          .vocab = CLI_UNSET,
                          .tp = CLI_UNSET,
                          .depth = 0};
}

void
simpar_cli_job_clear(SimparCliJob *job)
{
    g_clear_pointer(&job->model, g_free);
    g_clear_pointer(&job->dtype, g_free);
    g_clear_pointer(&job->tp_mode, g_free);
    g_clear_pointer(&job->variant, g_free);
    g_clear_pointer(&job->recompute, g_free);
}

GOptionGroup *
simpar_cli_model_group(SimparCliJob *job)
{
    const GOptionEntry entries[] = {
        {"model", 'm', 0, G_OPTION_ARG_STRING, &job->model,
         "Preset name (tiny, paper-3d, default-4k, gpt3-1.3b, gpt3-6.7b, gpt3-13b, gpt3-175b) or "
         "a JSON model file; default default-4k (predict) or paper-3d (schedule)",
         "NAME|FILE"},
        {"hidden", 0, 0, G_OPTION_ARG_INT64, &job->hidden, "Hidden size h", "H"},
        {"heads", 0, 0, G_OPTION_ARG_INT64, &job->heads, "Attention heads a (h % a == 0)", "A"},
        {"seq", 0, 0, G_OPTION_ARG_INT64, &job->seq, "Sequence length s", "S"},
        {"micro-batch", 0, 0, G_OPTION_ARG_INT64, &job->micro_batch,
         "Sequences per micro-batch b (per tensor-parallel group)", "B"},
        {"ffn", 0, 0, G_OPTION_ARG_INT64, &job->ffn, "FFN width f (usually 4h)", "F"},
        {"layers", 0, 0, G_OPTION_ARG_INT64, &job->layers, "Transformer layers L", "L"},
        {"vocab", 0, 0, G_OPTION_ARG_INT64, &job->vocab, "Vocabulary size V", "V"},
        {"dtype", 0, 0, G_OPTION_ARG_STRING, &job->dtype, "Element type: fp16, bf16, fp32, fp64",
         "T"},
        G_OPTION_ENTRY_NULL,
    };
    GOptionGroup *g = g_option_group_new(
        "model", "Model shapes (override the preset or file):", "Show model options", NULL, NULL);
    g_option_group_add_entries(g, entries);
    return g; /* (transfer full) */
}

gboolean
simpar_cli_model(const SimparCliJob *job, SimparModel *m, GError **error)
{
    const char *name = job->model != NULL ? job->model : "paper-3d";
    gboolean ok = g_str_has_suffix(name, ".json") ? simpar_model_load_json(name, m, error)
                                                  : simpar_model_preset(name, m, error);
    if (!ok)
        return FALSE;

    const struct {
        gint64 given;
        gint64 *field;
    } over[] = {{job->hidden, &m->hidden}, {job->heads, &m->heads},
                {job->seq, &m->seq},       {job->micro_batch, &m->micro_batch},
                {job->ffn, &m->ffn},       {job->layers, &m->layers},
                {job->vocab, &m->vocab}};

    for (guint i = 0; i < G_N_ELEMENTS(over); i++)
        if (over[i].given != CLI_UNSET)
            *over[i].field = over[i].given;
    if (job->dtype != NULL && !simpar_dtype_parse(job->dtype, &m->dtype, error)) {
        g_prefix_error(error, "--dtype: ");
        return FALSE;
    }
    return simpar_model_validate(m, error);
}

gboolean
simpar_cli_plan(const SimparCliJob *job, const char *mode, SimparPlan *plan, GError **error)
{
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    simpar_plan_init(plan);
    plan->mode = g_intern_string(mode);
    plan->tp = job->tp;
    plan->depth = job->depth;
    plan->sequence_parallel = job->sp;
    if (job->variant != NULL) {
        if (!g_str_equal(mode, "3d") ||
            (!g_str_equal(job->variant, "paper") && !g_str_equal(job->variant, "later"))) {
            g_set_error(error, SIMPAR_CLI_ERROR, SIMPAR_CLI_ERROR_USAGE,
                        "--variant %s: valid only with --tp-mode 3d, as 'paper' (backward "
                        "re-gathers) or 'later' (saved gathers, async reduce-scatters)",
                        job->variant);
            return FALSE;
        }
        plan->paper_3d = g_str_equal(job->variant, "paper");
    }
    return job->recompute == NULL ||
           simpar_recompute_parse(job->recompute, &plan->recompute, error);
}

gboolean
simpar_cli_parse(GOptionContext *ctx, const char *command, int *argc, char ***argv, GError **error)
{
    if (!g_option_context_parse(ctx, argc, argv, error)) {
        g_prefix_error(error, "%s: ", command);
        return FALSE;
    }
    if (*argc > 1) {
        g_set_error(error, SIMPAR_CLI_ERROR, SIMPAR_CLI_ERROR_USAGE,
                    "%s: unexpected argument '%s' (see %s --help)", command, (*argv)[1], command);
        return FALSE;
    }
    return TRUE;
}

char *
simpar_cli_summary(const SimparModel *model, SimparPlan *plan, gboolean json, GError **error)
{
    g_autoptr(SimparSchedule) sched = simpar_generate_layer(model, plan, error);
    if (sched == NULL)
        return NULL;
    g_autoptr(SimparSummary) s = simpar_summary_new(sched, 0);
    return json ? simpar_summary_to_json(s, model, plan) : simpar_summary_to_text(s, model, plan);
}
