/* cmd-schedule.c - `simpar schedule`: one transformer layer's collectives per GPU. */
#include "cli.h"
#include <stdio.h>

static gboolean
schedule_plan(const SimparCliJob *job, SimparPlan *plan, GError **error)
{
    if (job->tp == G_MININT64) {
        g_set_error(error, SIMPAR_CLI_ERROR, SIMPAR_CLI_ERROR_USAGE,
                    "simpar schedule: --tp N is required (the tensor-parallel group size: P, q*q, "
                    "q*q*d or q*q*q)");
        return FALSE;
    }
    return simpar_cli_plan(job, job->tp_mode != NULL ? job->tp_mode : "1d", plan, error);
}

gboolean
simpar_cmd_schedule(int argc, char **argv, GError **error)
{
    SimparCliJob job;
    simpar_cli_job_init(&job);
    const GOptionEntry entries[] = {
        {"tp-mode", 0, 0, G_OPTION_ARG_STRING, &job.tp_mode,
         "Tensor-parallel mode: 1d, 2d, 2.5d, 3d (default 1d)", "MODE"},
        {"tp", 0, 0, G_OPTION_ARG_INT64, &job.tp,
         "GPUs in the tensor-parallel group: P (1d), q*q (2d), q*q*d (2.5d), q*q*q (3d)", "N"},
        {"depth", 0, 0, G_OPTION_ARG_INT64, &job.depth, "2.5-D depth d", "D"},
        {"sp", 0, 0, G_OPTION_ARG_NONE, &job.sp, "1-D: sequence parallelism", NULL},
        {"variant", 0, 0, G_OPTION_ARG_STRING, &job.variant,
         "3-D: paper (backward re-gathers; default) or later (saved gathers, async "
         "reduce-scatters)",
         "V"},
        {"recompute", 0, 0, G_OPTION_ARG_STRING, &job.recompute,
         "Activation recomputation: none (default), selective (attention core) or full (the "
         "whole forward, collectives included)",
         "R"},
        {"json", 0, 0, G_OPTION_ARG_NONE, &job.json, "Print JSON instead of a table", NULL},
        G_OPTION_ENTRY_NULL,
    };
    g_autoptr(GOptionContext) ctx = g_option_context_new("- one layer's schedule summary");
    g_option_context_set_summary(ctx, "For each process-group axis and collective kind: calls, "
                                      "elements and bytes per GPU per layer, forward and "
                                      "backward.");
    g_option_context_add_main_entries(ctx, entries, NULL);
    g_option_context_add_group(ctx, simpar_cli_model_group(&job));
    SimparModel model;
    SimparPlan plan;
    g_autofree char *text = NULL;
    gboolean ok = simpar_cli_parse(ctx, "simpar schedule", &argc, &argv, error) &&
                  schedule_plan(&job, &plan, error) && simpar_cli_model(&job, &model, error) &&
                  (text = simpar_cli_summary(&model, &plan, job.json, error)) != NULL;
    if (ok)
        fputs(text, stdout);
    if (ok && job.json)
        fputc('\n', stdout);
    simpar_cli_job_clear(&job);
    return ok;
}
