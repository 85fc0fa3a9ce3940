/* cmd-schedule.c - `simpar schedule`: one transformer layer's collectives per GPU. */
#include "cli.h"
#include "generators.h"
#include <stdio.h>

/* The model (paper-3d unless given) and the plan of the layer. */
static gboolean
schedule_plan(const SimparJobArgs *job, SimparModel *model, SimparPlan *plan, GError **error)
{
    if (job->tp == SIMPAR_JOB_UNSET) {
        g_autofree char *sizes = simpar_generator_list(SIMPAR_GEN_ANY, SIMPAR_GEN_SIZE, "or");
        g_set_error(error, SIMPAR_CLI_ERROR, SIMPAR_CLI_ERROR_USAGE,
                    "simpar schedule: --tp N is required (the tensor-parallel group size: %s)",
                    sizes);
        return FALSE;
    }
    /* an unknown --tp-mode is reported after the model's and the plan's errors (where the
     * layer's generation finds it): until then, an unknown mode's plan is the baseline's */
    const SimparGenerator *gen = simpar_generator_of(job->tp_mode);
    return simpar_job_model(job, "paper-3d", model, error) &&
           simpar_job_plan(job, model, gen != NULL ? gen : simpar_generator_baseline(), plan,
                           error) &&
           (plan->gen = simpar_job_generator(job, error)) != NULL;
}

gboolean
simpar_cmd_schedule(int argc, char **argv, GError **error)
{
    SimparJobArgs job;
    simpar_job_args_init(&job);
    gboolean json = FALSE;
    const GOptionEntry entries[] = {
        {"json", 0, 0, G_OPTION_ARG_NONE, &json, "Print JSON instead of a table", NULL},
        G_OPTION_ENTRY_NULL,
    };
    g_autoptr(GOptionContext) ctx = g_option_context_new("- one layer's schedule summary");
    g_option_context_set_summary(ctx, "For each process-group axis and collective kind: calls, "
                                      "elements and bytes per GPU per layer, forward and "
                                      "backward.");
    simpar_job_add_options(ctx, &job, SIMPAR_JOB_OPTIONS_MODEL | SIMPAR_JOB_OPTIONS_PLAN);
    g_option_context_add_main_entries(ctx, entries, NULL);
    SimparModel model;
    SimparPlan plan;
    g_autofree char *text = NULL;
    gboolean ok = simpar_cli_parse(ctx, "simpar schedule", &argc, &argv, error) &&
                  schedule_plan(&job, &model, &plan, error) &&
                  (text = simpar_cli_summary(&model, &plan, json, error)) != NULL;
    if (ok)
        fputs(text, stdout);
    if (ok && json)
        fputc('\n', stdout);
    simpar_job_args_clear(&job);
    return ok;
}
