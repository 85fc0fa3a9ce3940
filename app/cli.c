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

int
simpar_cli_exit_status(const GError *error)
{
    return error->domain == SIMPAR_CLI_ERROR || error->domain == SIMPAR_JOB_ERROR ||
                   error->domain == G_OPTION_ERROR || error->domain == SIMPAR_BACKEND_ERROR ||
                   error->domain == SIMPAR_PREDICT_ERROR
               ? 2
               : 1;
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
