/* cmd-predict.c - `simpar [predict] --topology FILE`: the main job.
 *
 * Parses and checks the options in the parent, then runs every requested tensor-parallel mode
 * in one SimGrid child process (platform.c): for each mode the plan on the used GPUs, its
 * layer schedule, the memory check, compute times, the backend run over L layers and the
 * report row. Modes the GPU count or the model cannot use, and configurations that do not fit
 * in GPU memory, are reported as not simulated; asked for explicitly, they are errors.
 */
#include "cli.h"
#include "pipeline.h"
#include "predict-config.h"
#include <stdio.h>

typedef struct {
    SimparJobArgs job;
    gboolean json;
    char *topology, *trace;
    SimparPredictArgs opts;
    gint64 gpus, jobs_arg;
    guint jobs; /* worker processes (modes simulated in parallel) */
    SimparModel model;
    SimparPredictContext base; /* backend, collective settings; the rest is filled per mode */
    gint64 steps_to_target;
    SimparTrain train; /* everything but the tensor-parallel plan, checked without a platform */
} Predict;

static void
predict_clear(Predict *p)
{
    simpar_job_args_clear(&p->job);
    g_free(p->topology), g_free(p->trace);
    simpar_predict_args_clear(&p->opts);
}

/* The step-level options into p->train (the split is checked against the GPUs later). */
static gboolean
predict_resolve_train(Predict *p, GError **error)
{
    if (p->steps_to_target != SIMPAR_JOB_UNSET && p->steps_to_target < 1) {
        g_set_error(error, SIMPAR_CLI_ERROR, SIMPAR_CLI_ERROR_USAGE,
                    "--steps-to-target %" G_GINT64_FORMAT ": must be at least 1",
                    p->steps_to_target);
        return FALSE;
    }
    return simpar_job_train(&p->job, &p->train, error);
}

/* Checks every option that needs no platform. */
static gboolean
predict_resolve(Predict *p, GError **error)
{
    if (p->topology == NULL) {
        g_set_error(error, SIMPAR_CLI_ERROR, SIMPAR_CLI_ERROR_USAGE,
                    "simpar: --topology FILE is required (e.g. topologies/v100x64.xml), or a "
                    "command: schedule, collective, topology");
        return FALSE;
    }
    if (p->gpus != G_MININT64 && (p->gpus < 1 || p->gpus > 1 << 20)) {
        g_set_error(error, SIMPAR_CLI_ERROR, SIMPAR_CLI_ERROR_USAGE,
                    "--gpus %" G_GINT64_FORMAT ": must be between 1 and the platform's GPUs",
                    p->gpus);
        return FALSE;
    }
    p->jobs = p->jobs_arg == G_MININT64 ? g_get_num_processors() : (guint) p->jobs_arg;
    if (p->jobs_arg != G_MININT64 && (p->jobs_arg < 1 || p->jobs_arg > 1024)) {
        g_set_error(error, SIMPAR_CLI_ERROR, SIMPAR_CLI_ERROR_USAGE,
                    "--jobs %" G_GINT64_FORMAT ": from 1 to 1024 worker processes", p->jobs_arg);
        return FALSE;
    }
    if (p->job.tp_mode != NULL && !g_str_equal(p->job.tp_mode, "all") &&
        simpar_generator_lookup(p->job.tp_mode, error) == NULL)
        return FALSE;
    return simpar_predict_args_resolve(&p->opts, "simgrid", &p->base, error) &&
           predict_resolve_train(p, error) &&
           simpar_job_model(&p->job, SIMPAR_PREDICT_DEFAULT_MODEL, &p->model, error);
}

/* 2.5-D without --depth: q = d when the GPU count allows it (64: q=4 d=4), else the smallest
 * depth >= 2 the model accepts. */
static void
predict_depth(const Predict *p, const SimparGenerator *gen, SimparPlan *plan)
{
    gint64 best = 0;
    for (gint64 d = 2; d <= plan->tp; d++) {
        SimparPlan trial = *plan;
        trial.depth = d;
        if (!gen->validate(&p->model, &trial, NULL))
            continue;
        if (best == 0 || (gint64) trial.q == d)
            best = d;
        if ((gint64) trial.q == d)
            break;
    }
    plan->depth = best != 0 ? best : 2; /* 2: validation then says what is wrong */
}

/* The plan of `mode` on `gpus` GPUs; FALSE with the reason when the options do not fit the mode. */
static gboolean
predict_plan(const Predict *p, const char *mode, guint gpus, SimparPlan *plan, GError **error)
{
    const SimparGenerator *gen = simpar_generator_lookup(mode, error);
    if (gen == NULL || !simpar_job_plan(&p->job, mode, plan, error))
        return FALSE;
    if (plan->tp == G_MININT64)
        plan->tp = gpus;
    if (g_str_equal(gen->name, "2.5d") && plan->depth == 0)
        predict_depth(p, gen, plan);
    return TRUE; /* validated by simpar_predict_config */
}

typedef struct {
    Predict *p;
    const SimparPlatform *platform;
    SimparGpu gpu;
    guint gpus;
    SimparReport *report;
    JsonBuilder *trace;
    gboolean explicit_mode;
} PredictJob;

/* A mode that cannot run: an error when it was asked for, a row saying why otherwise. */
static gboolean
predict_skip(PredictJob *pj, const char *mode, const char *grid, const SimparMemory *mem,
             GError **why, GError **error)
{
    if (pj->explicit_mode) {
        g_propagate_error(error, g_steal_pointer(why));
        return FALSE;
    }
    simpar_report_skip(pj->report, mode, grid, pj->gpus, mem, pj->gpu.mem_bytes, (*why)->message);
    g_clear_error(why);
    return TRUE;
}

static gboolean
predict_mode(PredictJob *pj, guint index, const char *mode, GError **error)
{
    Predict *p = pj->p;
    g_autoptr(GError) why = NULL;
    SimparTrain train = p->train;
    gint64 outer = train.pp * train.dp;
    gint64 tp = p->job.tp != G_MININT64 ? p->job.tp : (gint64) pj->gpus / MAX(outer, 1);
    if (!predict_plan(p, mode, (guint) tp, &train.tp, &why))
        return predict_skip(pj, mode, "-", NULL, &why, error);
    SimparPredictContext ctx = p->base;
    ctx.platform = pj->platform, ctx.gpu = &pj->gpu, ctx.gpus = pj->gpus;
    ctx.steps_to_target = p->steps_to_target, ctx.trace = pj->trace, ctx.trace_index = index;
    SimparReportRow row;
    if (!simpar_predict_config(&ctx, &p->model, &train, &row, &why, error))
        return FALSE;
    if (why == NULL) {
        simpar_report_append(pj->report, &row);
        return TRUE;
    }
    gboolean ok = predict_skip(pj, mode, row.grid, &row.memory, &why, error);
    simpar_predict_row_clear(&row);
    return ok;
}

gboolean
simpar_cli_write_trace(JsonBuilder *b, const char *path, GError **error)
{
    json_builder_end_array(b);
    json_builder_set_member_name(b, "displayTimeUnit");
    json_builder_add_string_value(b, "ms");
    json_builder_end_object(b);
    g_autoptr(JsonGenerator) gen = json_generator_new();
    g_autoptr(JsonNode) root = json_builder_get_root(b);
    json_generator_set_root(gen, root);
    if (!json_generator_to_file(gen, path, error)) {
        g_prefix_error(error, "--trace %s: ", path);
        return FALSE;
    }
    return TRUE;
}

/* The modes of this worker: `mode`, or every mode the user asked for. */
static gboolean
predict_modes(PredictJob *pj, const char *mode, GError **error)
{
    const char *only = pj->p->job.tp_mode;
    pj->explicit_mode = only != NULL && !g_str_equal(only, "all");
    guint n_gen;
    const SimparGenerator *gens = simpar_generators(&n_gen);
    for (guint i = 0; i < n_gen; i++) {
        gboolean wanted = mode != NULL ? g_str_equal(gens[i].name, mode)
                                       : !pj->explicit_mode || g_str_equal(gens[i].name, only);
        if (wanted && !predict_mode(pj, i, gens[i].name, error))
            return FALSE;
    }
    return TRUE;
}

static SimparReport *
predict_report_new(const Predict *p)
{
    g_autofree char *coll =
        g_strdup_printf("%s collectives, algorithm %s",
                        p->base.run.mode == SIMPAR_COLL_MODE_EXACT ? "exact" : "fused",
                        p->opts.algo != NULL ? p->opts.algo : "auto");
    return simpar_report_new(&p->model, p->topology, p->base.backend->name, coll,
                             simpar_attention_name(p->base.attention)); /* (transfer full) */
}

static gboolean
predict_gpus(const Predict *p, PredictJob *pj, GError **error)
{
    if (p->gpus != G_MININT64 && p->gpus > pj->gpus) {
        g_set_error(error, SIMPAR_CLI_ERROR, SIMPAR_CLI_ERROR_USAGE,
                    "--gpus %" G_GINT64_FORMAT ": %s has only %u GPUs", p->gpus, p->topology,
                    pj->gpus);
        return FALSE;
    }
    if (p->gpus != G_MININT64)
        pj->gpus = (guint) p->gpus;
    if (!simpar_predict_gpu(pj->platform, pj->gpus, p->opts.calibration, &pj->gpu, error))
        return FALSE;
    if (!simpar_gpu_validate(&pj->gpu, p->model.dtype, error)) {
        g_prefix_error(error, "--topology %s: ", simpar_platform_path(pj->platform));
        return FALSE;
    }
    return TRUE;
}

/* One worker process: its modes' report rows as JSON. */
typedef struct {
    Predict *p;
    const char *mode; /* NULL: every mode asked for */
} PredictWork;

static gboolean
predict_job(const SimparPlatform *platform, gpointer data, GString *out, GError **error)
{
    PredictWork *w = data;
    Predict *p = w->p;
    PredictJob pj = {p, platform, .gpus = simpar_platform_n_gpus(platform)};
    if (!predict_gpus(p, &pj, error))
        return FALSE;
    g_autoptr(SimparReport) report = predict_report_new(p);
    pj.report = report;
    g_autoptr(JsonBuilder) trace = p->trace != NULL ? json_builder_new() : NULL;
    if (trace != NULL) {
        json_builder_begin_object(trace);
        json_builder_set_member_name(trace, "traceEvents");
        json_builder_begin_array(trace);
    }
    pj.trace = trace;
    if (!predict_modes(&pj, w->mode, error) ||
        (trace != NULL && !simpar_cli_write_trace(trace, p->trace, error)))
        return FALSE;
    g_autofree char *json = simpar_report_to_json(report);
    g_string_append(out, json);
    return TRUE;
}

/* Every mode in its own worker, `jobs` at a time (one worker for a trace: one file). */
static gboolean
predict_workers(Predict *p, SimparReport *report, GError **error)
{
    guint n_gen, n = 0;
    const SimparGenerator *gens = simpar_generators(&n_gen);
    gboolean all = p->job.tp_mode == NULL || g_str_equal(p->job.tp_mode, "all");
    g_autofree PredictWork *work = g_new(PredictWork, n_gen);
    if (all && p->trace == NULL)
        for (guint i = 0; i < n_gen; i++)
            work[n++] = (PredictWork){p, gens[i].name};
    else
        work[n++] = (PredictWork){p, NULL};
    g_autofree gpointer *data = g_new(gpointer, n);
    g_autofree GString **outs = g_new(GString *, n);
    for (guint i = 0; i < n; i++)
        data[i] = &work[i], outs[i] = g_string_new(NULL);
    gboolean ok = simpar_platform_run_many(p->topology, n, p->jobs, predict_job, data, outs, error);
    for (guint i = 0; i < n; i++) {
        if (ok)
            simpar_report_merge_json(report, outs[i]->str);
        g_string_free(outs[i], TRUE);
    }
    return ok;
}

static gboolean
predict_print(const Predict *p, const SimparReport *report, GError **error)
{
    if (simpar_report_n_simulated(report) == 0) {
        g_autofree char *why = simpar_report_reasons(report);
        g_set_error(error, SIMPAR_CLI_ERROR, SIMPAR_CLI_ERROR_USAGE,
                    "no tensor-parallel mode can run model %s on %s: %s", p->model.name,
                    p->topology, why);
        return FALSE;
    }
    g_autofree char *text = p->json ? simpar_report_to_json(report) : simpar_report_to_text(report);
    printf("%s\n", text);
    return TRUE;
}

static const char predict_summary[] =
    "Predicts the step time (L layers, forward and backward) of each tensor-parallel mode on a\n"
    "SimGrid platform, with compute, exposed communication per group axis (intra-/inter-node),\n"
    "memory per GPU and achieved TFLOP/s per GPU. Without --tp-mode it compares every mode the\n"
    "GPU count allows (64 GPUs: 1-D, 2-D q=8, 2.5-D q=4 d=4, 3-D q=4).\n\n"
    "Commands:\n"
    "  (none)      this prediction (also: simpar predict ...)\n"
    "  schedule    one layer's schedule summary (simpar schedule --help)\n"
    "  collective  one collective's time, algbw and busbw (simpar collective --help)\n"
    "  topology    write a platform of any size (simpar topology --help)\n"
    "  validate    a run measured by simpar-exec against its prediction (simpar validate --help)\n"
    "  sweep       capacity planning: many configurations into a CSV (simpar sweep --help)\n"
    "  calibrate   fit the compute and link figures to simpar-exec's microbenchmarks\n"
    "  plot        draw a sweep, prediction, validation or trace with gnuplot (simpar plot --help)";

gboolean
simpar_cmd_predict(int argc, char **argv, GError **error)
{
    Predict p = {.gpus = G_MININT64, .jobs_arg = G_MININT64, .steps_to_target = G_MININT64};
    simpar_job_args_init(&p.job);
    const GOptionEntry entries[] = {
        {"topology", 't', 0, G_OPTION_ARG_FILENAME, &p.topology,
         "SimGrid platform file (hosts node<N>-gpu<G>), e.g. topologies/v100x64.xml", "FILE"},
        {"gpus", 0, 0, G_OPTION_ARG_INT64, &p.gpus, "GPUs of the platform to use (default all)",
         "N"},
        {"steps-to-target", 0, 0, G_OPTION_ARG_INT64, &p.steps_to_target,
         "Steps to the target loss: report time and GPU-hours to target", "N"},
        {"jobs", 'j', 0, G_OPTION_ARG_INT64, &p.jobs_arg,
         "Modes simulated in parallel processes (default: the number of cores)", "N"},
        {"json", 0, 0, G_OPTION_ARG_NONE, &p.json, "Print JSON: one object per mode", NULL},
        {"trace", 0, 0, G_OPTION_ARG_FILENAME, &p.trace,
         "Write a Chrome trace (Perfetto): one track per GPU stream", "FILE"},
        G_OPTION_ENTRY_NULL,
    };
    g_autoptr(GOptionContext) ctx = g_option_context_new("[predict] - plan transformer training");
    g_option_context_set_summary(ctx, predict_summary);
    g_option_context_add_main_entries(ctx, entries, NULL);
    g_autofree GOptionEntry *opts = simpar_predict_option_entries(
        &p.opts, "simgrid (default; contention) or analytic (closed forms, no contention)");
    g_option_context_add_main_entries(ctx, opts, NULL);
    simpar_job_add_options(ctx, &p.job, SIMPAR_JOB_OPTIONS_ALL);
    gboolean ok =
        simpar_cli_parse(ctx, "simpar", &argc, &argv, error) && predict_resolve(&p, error);
    g_autoptr(SimparReport) report = ok ? predict_report_new(&p) : NULL;
    ok = ok && predict_workers(&p, report, error) && predict_print(&p, report, error);
    predict_clear(&p);
    return ok;
}
