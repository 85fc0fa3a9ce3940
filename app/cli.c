/* cli.c - what the simpar commands share: option parsing, exit statuses, the schedule summary
 * (the job options themselves are models/job.c's). */
#include "cli.h"
#include "predict-config.h"
#include "summary.h"

G_DEFINE_QUARK(simpar_cli_error_quark, simpar_cli_error)

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

gboolean
simpar_cli_usage(GError **error, const char *format, ...)
{
    va_list ap;
    va_start(ap, format);
    g_autofree char *msg = g_strdup_vprintf(format, ap);
    va_end(ap);
    g_set_error_literal(error, SIMPAR_CLI_ERROR, SIMPAR_CLI_ERROR_USAGE, msg);
    return FALSE;
}

static const SimparCommand commands[] = {
    {"schedule", "one layer's schedule summary", simpar_cmd_schedule},
    {"predict", "this prediction, the default command (simpar --help)", simpar_cmd_predict},
    {"collective", "one collective's time, algbw and busbw, as nccl-tests prints them",
     simpar_cmd_collective},
    {"topology", "write a platform of any size from a preset", simpar_cmd_topology},
    {"sweep", "capacity planning: many configurations into a ranked CSV", simpar_cmd_sweep},
    {"validate", "a run measured by simpar-exec against its prediction", simpar_cmd_validate},
    {"calibrate", "fit the compute and link figures to microbenchmarks or nccl-tests output",
     simpar_cmd_calibrate},
    {"plot", "draw a sweep, prediction, validation or trace with gnuplot", simpar_cmd_plot},
};

const SimparCommand *
simpar_commands(guint *n)
{
    *n = G_N_ELEMENTS(commands);
    return commands; /* (transfer none) */
}

char *
simpar_cli_command_names(void)
{
    GString *s = g_string_new(NULL);
    for (guint i = 0; i < G_N_ELEMENTS(commands); i++)
        g_string_append_printf(s, "%s%s", i > 0 ? ", " : "", commands[i].name);
    return g_string_free(s, FALSE); /* (transfer full) */
}

char *
simpar_cli_commands_help(void)
{
    GString *s = g_string_new("Commands (simpar COMMAND --help for each):\n");
    for (guint i = 0; i < G_N_ELEMENTS(commands); i++)
        g_string_append_printf(s, "  %-11s %s\n", commands[i].name, commands[i].description);
    g_string_append(s, "simpar --version prints simpar's version and its libraries'.");
    return g_string_free(s, FALSE); /* (transfer full) */
}

int
simpar_cli_exit_status(const GError *error)
{
    if (error->domain == SIMPAR_COMPUTE_ERROR && error->code == SIMPAR_COMPUTE_ERROR_OPTION)
        return 2; /* --attention, --kernels */
    return error->domain == SIMPAR_CLI_ERROR || error->domain == SIMPAR_JOB_ERROR ||
                   error->domain == G_OPTION_ERROR || error->domain == SIMPAR_BACKEND_ERROR ||
                   error->domain == SIMPAR_PREDICT_ERROR || error->domain == SIMPAR_PLAN_ERROR ||
                   error->domain == SIMPAR_OUTPUT_ERROR
               ? 2
               : 1;
}

char *
simpar_cli_summary(const SimparModel *model, SimparPlan *plan, gboolean json, GError **error)
{
    if (simpar_model_is_moe(model)) { /* its layer schedule holds the attention part only */
        g_set_error(error, SIMPAR_PLAN_ERROR, SIMPAR_PLAN_ERROR_INVALID,
                    "--model %s has %" G_GINT64_FORMAT " routed experts: simpar schedule "
                    "summarises dense layers; an MoE layer is its attention part and the MoE "
                    "block on the expert-parallel group (simpar predict breaks it down)",
                    model->name, model->moe.experts);
        return NULL;
    }
    g_autoptr(SimparSchedule) sched = simpar_generate_layer(model, plan, error);
    if (sched == NULL)
        return NULL;
    g_autoptr(SimparSummary) s = simpar_summary_new(sched, 0);
    return json ? simpar_summary_to_json(s, model, plan) : simpar_summary_to_text(s, model, plan);
}
