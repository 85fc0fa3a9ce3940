/* cmd-predict.c - `simpar --topology FILE`: the main job.
 *
 * Reads the platform, counts its GPUs and, for every tensor-parallel mode, picks the largest
 * group the model can use on that many GPUs and prints that layer's per-GPU communication.
 * The step-time prediction on SimGrid builds on these schedules.
 */
#include "cli.h"
#include "platform.h"
#include <stdio.h>

/* The largest valid group of `mode` with at most n GPUs (2.5-D: the smallest depth >= 2). */
static gboolean
predict_best_plan(const SimparModel *model, const char *mode, guint n, SimparPlan *plan)
{
    const SimparGenerator *gen = simpar_generator_lookup(mode, NULL);
    gboolean depth = g_str_equal(mode, "2.5d");
    for (gint64 tp = n; tp >= 1; tp--) {
        for (gint64 d = depth ? 2 : 0; d <= (depth ? tp : 0); d++) {
            simpar_plan_init(plan);
            plan->mode = gen->name, plan->tp = tp, plan->depth = d;
            if (gen->validate(model, plan, NULL))
                return TRUE;
        }
    }
    return FALSE;
}

static gboolean
predict_print(const char *path, const SimparModel *model, guint n, gboolean json, GError **error)
{
    guint n_gen;
    const SimparGenerator *gens = simpar_generators(&n_gen);
    if (!json)
        printf("%s: %u GPUs\n\n", path, n);
    for (guint i = 0; i < n_gen; i++) {
        SimparPlan plan;
        if (!predict_best_plan(model, gens[i].name, n, &plan)) {
            if (!json)
                printf("%s: no group of at most %u GPUs fits model %s\n\n", gens[i].name, n,
                       model->name);
            continue;
        }
        g_autofree char *text = simpar_cli_summary(model, &plan, json, error);
        if (text == NULL)
            return FALSE;
        printf("%s\n", text);
    }
    return TRUE;
}

gboolean
simpar_cmd_predict(int argc, char **argv, GError **error)
{
    SimparCliJob job;
    simpar_cli_job_init(&job);
    g_autofree char *topology = NULL;
    const GOptionEntry entries[] = {
        {"topology", 't', 0, G_OPTION_ARG_FILENAME, &topology,
         "SimGrid platform file (hosts named node<N>-gpu<G>), e.g. topologies/v100x64.xml", "FILE"},
        {"json", 0, 0, G_OPTION_ARG_NONE, &job.json, "Print JSON, one object per mode", NULL},
        G_OPTION_ENTRY_NULL,
    };
    g_autoptr(GOptionContext) ctx = g_option_context_new("[COMMAND] - plan transformer training");
    g_option_context_set_summary(ctx, "Commands:\n"
                                      "  (none)     --topology FILE: every tensor-parallel mode on "
                                      "that cluster\n"
                                      "  schedule   one layer's schedule summary (simpar schedule "
                                      "--help)");
    g_option_context_add_main_entries(ctx, entries, NULL);
    g_option_context_add_group(ctx, simpar_cli_model_group(&job));
    SimparModel model;
    guint n = 0;
    gboolean ok = simpar_cli_parse(ctx, "simpar", &argc, &argv, error) &&
                  simpar_cli_model(&job, &model, error);
    if (ok && topology == NULL) {
        g_set_error(error, SIMPAR_CLI_ERROR, SIMPAR_CLI_ERROR_USAGE,
                    "simpar: --topology FILE is required (e.g. topologies/v100x64.xml), or a "
                    "command: schedule");
        ok = FALSE;
    }
    ok = ok && simpar_platform_count_gpus(topology, &n, error) &&
         predict_print(topology, &model, n, job.json, error);
    simpar_cli_job_clear(&job);
    return ok;
}
