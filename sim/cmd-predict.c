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
#include "platform.h"
#include "report.h"
#include "step-predict.h"
#include <stdio.h>
#include <string.h>

/* The documented default model of the main job: every mode can split it over 64 GPUs. */
#define SIMPAR_PREDICT_MODEL "default-4k"

typedef struct {
    SimparJobArgs job;
    gboolean json;
    char *topology, *backend_name, *coll_mode_name, *algo_name, *proto_name, *attention_name;
    char *calibration, *trace;
    gint64 gpus, jobs_arg;
    guint jobs; /* worker processes (modes simulated in parallel) */
    SimparModel model;
    const SimparBackend *backend;
    SimparRun run; /* collective settings; the rest is filled per mode */
    SimparAttentionImpl attention;
    gint64 steps_to_target;
    SimparTrain train; /* everything but the tensor-parallel plan, checked without a platform */
} Predict;

static void
predict_clear(Predict *p)
{
    simpar_job_args_clear(&p->job);
    g_free(p->topology), g_free(p->backend_name), g_free(p->coll_mode_name);
    g_free(p->algo_name), g_free(p->proto_name), g_free(p->attention_name);
    g_free(p->calibration), g_free(p->trace);
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
    simpar_coll_params_init(&p->run.coll);
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
    if (!simpar_backend_lookup(p->backend_name != NULL ? p->backend_name : "simgrid", &p->backend,
                               error) ||
        !simpar_coll_mode_parse(p->coll_mode_name != NULL ? p->coll_mode_name : "fused",
                                &p->run.mode, error) ||
        !simpar_coll_algo_lookup(p->algo_name != NULL ? p->algo_name : "auto", &p->run.algo,
                                 error) ||
        !simpar_nccl_proto_parse(p->proto_name != NULL ? p->proto_name : "none", &p->run.coll.proto,
                                 error) ||
        !simpar_attention_parse(p->attention_name != NULL ? p->attention_name : "unfused",
                                &p->attention, error))
        return FALSE;
    if (p->algo_name != NULL && p->run.algo == NULL && !g_str_equal(p->algo_name, "auto"))
        return FALSE;
    return predict_resolve_train(p, error) &&
           simpar_job_model(&p->job, SIMPAR_PREDICT_MODEL, &p->model, error);
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

/* The plan of `mode` on `gpus` GPUs; FALSE with the reason when the mode cannot use them. */
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
    return gen->validate(&p->model, plan, error);
}

static char *
predict_grid(const SimparPlan *plan)
{
    if (g_str_equal(plan->mode, "1d"))
        return g_strdup_printf("P=%" G_GINT64_FORMAT "%s", plan->tp,
                               plan->sequence_parallel ? "+SP" : "");
    if (g_str_equal(plan->mode, "2.5d"))
        return g_strdup_printf("q=%u d=%" G_GINT64_FORMAT, plan->q, plan->depth);
    return g_strdup_printf("q=%u%s", plan->q,
                           g_str_equal(plan->mode, "3d") && !plan->paper_3d ? " later" : "");
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

static gboolean
predict_gpu(PredictJob *pj, GError **error)
{
    if (!simpar_platform_gpu(pj->platform, 0, &pj->gpu, error))
        return FALSE;
    for (guint i = 1; i < pj->gpus; i++) {
        SimparGpu other;
        if (!simpar_platform_gpu(pj->platform, i, &other, error))
            return FALSE;
        if (memcmp(other.peak_flops, pj->gpu.peak_flops, sizeof other.peak_flops) != 0 ||
            other.mem_bw_Bps != pj->gpu.mem_bw_Bps || other.mem_bytes != pj->gpu.mem_bytes) {
            g_set_error(error, SIMPAR_CLI_ERROR, SIMPAR_CLI_ERROR_USAGE,
                        "--topology %s: GPU %u (%s) and GPU 0 (%s) differ; simpar needs the "
                        "used GPUs to be identical",
                        simpar_platform_path(pj->platform), i, other.model, pj->gpu.model);
            return FALSE;
        }
    }
    if (pj->p->calibration != NULL &&
        (!simpar_gpu_load_calibration(&pj->gpu, pj->p->calibration, error) ||
         !simpar_platform_calibrate_links(pj->platform, pj->p->calibration, error)))
        return FALSE;
    if (!simpar_gpu_validate(&pj->gpu, pj->p->model.dtype, error)) {
        g_prefix_error(error, "--topology %s: ", simpar_platform_path(pj->platform));
        return FALSE;
    }
    return TRUE;
}

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

static char *
predict_split(const SimparTrain *t)
{
    GString *out = g_string_new(NULL);
    g_string_append_printf(
        out, "T=%" G_GINT64_FORMAT " %s=%" G_GINT64_FORMAT " D=%" G_GINT64_FORMAT " %s", t->tp.tp,
        t->schedule == SIMPAR_PIPE_LOCAL ? "K" : "P", t->pp, t->dp,
        simpar_pipe_schedule_name(t->schedule));
    if (t->schedule == SIMPAR_PIPE_LOCAL)
        g_string_append_printf(out, "%s W=%" G_GINT64_FORMAT, t->local_async ? " async" : " sync",
                               t->aux_head_width);
    if (t->virtual_stages > 1)
        g_string_append_printf(out, " v=%" G_GINT64_FORMAT, t->virtual_stages);
    g_string_append_printf(
        out, " m=%" G_GINT64_FORMAT " B=%" G_GINT64_FORMAT " ZeRO-%d%s recompute %s",
        t->micro_batches, t->global_batch, t->zero, t->overlap_grad_reduce ? " overlap" : "",
        simpar_recompute_name(t->tp.recompute));
    return g_string_free(out, FALSE); /* (transfer full) */
}

/* Block times, the step run and its breakdown into a report row. */
static void
predict_step(PredictJob *pj, guint index, const SimparTrain *train, const SimparSchedule *layer,
             SimparReportRow *row, double *step_s)
{
    Predict *p = pj->p;
    SimparStepTimer tm = {p->backend, p->run, &pj->gpu, p->attention};
    tm.base.net = simpar_platform_net(pj->platform);
    SimparBlockTimes bt = {0};
    simpar_block_times_measure(&tm, &p->model, train, layer, &bt);
    g_autoptr(SimparSchedule) step = simpar_step_build(&p->model, train, layer);
    g_autofree guint *gpus = g_new(guint, pj->gpus);
    for (guint i = 0; i < pj->gpus; i++)
        gpus[i] = i;
    SimparRun run;
    g_autofree double *compute = NULL;
    g_autofree SimparSpan *spans = simpar_step_run(&tm, step, &bt, gpus, &run, &compute);
    if (row != NULL) {
        simpar_step_breakdown(&run, spans, &bt, &p->model, train, row);
        if (pj->trace != NULL)
            simpar_report_trace(pj->trace, index, row->mode, &run, spans);
    } else {
        SimparReportRow tmp = {0};
        simpar_step_breakdown(&run, spans, &bt, &p->model, train, &tmp);
        *step_s = tmp.step_s;
        g_array_free(tmp.axes, TRUE);
        g_free(tmp.step.placement);
    }
    simpar_block_times_clear(&bt);
}

static gboolean
predict_mode(PredictJob *pj, guint index, const char *mode, GError **error)
{
    gint64 t0 = g_get_monotonic_time();
    Predict *p = pj->p;
    g_autoptr(GError) why = NULL;
    SimparTrain train = p->train;
    gint64 outer = train.pp * train.dp;
    gint64 tp = p->job.tp != G_MININT64 ? p->job.tp : (gint64) pj->gpus / MAX(outer, 1);
    SimparPlan plan;
    if (!predict_plan(p, mode, (guint) tp, &plan, &why))
        return predict_skip(pj, mode, "-", NULL, &why, error);
    train.tp = plan;
    g_autofree char *grid = predict_grid(&plan);
    if (!simpar_train_validate(&train, &p->model, pj->gpus, &why))
        return predict_skip(pj, mode, grid, NULL, &why, error);
    g_autoptr(SimparSchedule) layer = simpar_generate_layer(&p->model, &train.tp, error);
    if (layer == NULL)
        return FALSE;
    SimparMemory mem;
    guint peak_stage = 0;
    SimparMemory layer_mem;
    simpar_memory_estimate(&p->model, &train.tp, layer, p->attention, &layer_mem);
    simpar_memory_step_peak(&p->model, &train, layer_mem.transient_B, p->attention, &mem,
                            &peak_stage);
    if (mem.total_B > pj->gpu.mem_bytes) {
        g_set_error(&why, SIMPAR_CLI_ERROR, SIMPAR_CLI_ERROR_USAGE,
                    "%s %s: does not fit in GPU memory: needs %.2f GiB per GPU on pipeline "
                    "stage %u (states %.2f, activations %.2f, transient %.2f), the %s has %.2f GiB",
                    mode, grid, mem.total_B / (1 << 30), peak_stage, mem.states_B / (1 << 30),
                    mem.activations_B / (1 << 30), mem.transient_B / (1 << 30), pj->gpu.model,
                    pj->gpu.mem_bytes / (1 << 30));
        return predict_skip(pj, mode, grid, &mem, &why, error);
    }
    SimparReportRow row = {
        .mode = mode, .grid = g_strdup(grid), .memory = mem, .mem_capacity_B = pj->gpu.mem_bytes};
    row.step.split = predict_split(&train);
    row.step.peak_stage = peak_stage;
    predict_step(pj, index, &train, layer, &row, NULL);
    row.step.mfu = row.model_flops / row.step_s / pj->gpus / pj->gpu.peak_flops[p->model.dtype];
    if (train.schedule == SIMPAR_PIPE_LOCAL) { /* next to pipelining of the same split */
        SimparTrain pipe = train;
        pipe.schedule = SIMPAR_PIPE_1F1B;
        pipe.local_async = FALSE;
        predict_step(pj, index, &pipe, layer, NULL, &row.step.pipeline_step_s);
    }
    if (p->steps_to_target != G_MININT64) {
        row.step.steps_to_target = (double) p->steps_to_target;
        row.step.time_to_target_s = row.step.steps_to_target * row.step_s;
        row.step.gpu_hours_to_target = row.step.time_to_target_s * pj->gpus / 3600;
    }
    row.wall_s = (g_get_monotonic_time() - t0) / 1e6;
    simpar_report_append(pj->report, &row);
    return TRUE;
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
    g_autofree char *coll = g_strdup_printf(
        "%s collectives, algorithm %s", p->run.mode == SIMPAR_COLL_MODE_EXACT ? "exact" : "fused",
        p->algo_name != NULL ? p->algo_name : "auto");
    return simpar_report_new(&p->model, p->topology, p->backend->name, coll,
                             simpar_attention_name(p->attention)); /* (transfer full) */
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
    return predict_gpu(pj, error);
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
    "  calibrate   fit the compute and link figures to simpar-exec's microbenchmarks";

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
        {"attention", 0, 0, G_OPTION_ARG_STRING, &p.attention_name,
         "unfused (default; s x s scores in memory) or flash (one fused kernel)", "IMPL"},
        {"backend", 0, 0, G_OPTION_ARG_STRING, &p.backend_name,
         "simgrid (default; contention) or analytic (closed forms, no contention)", "B"},
        {"collectives", 0, 0, G_OPTION_ARG_STRING, &p.coll_mode_name,
         "SimGrid: fused (default; one transfer per peer) or exact (every round)", "MODE"},
        {"algo", 0, 0, G_OPTION_ARG_STRING, &p.algo_name,
         "Collective algorithm: auto (default; NCCL-like choice), ring, tree, chain, "
         "hierarchical, pairwise (for the kinds it implements)",
         "ALGO"},
        {"nccl-proto", 0, 0, G_OPTION_ARG_STRING, &p.proto_name,
         "Add NCCL's latency constants of a protocol: none (default), ll, ll128, simple", "P"},
        {"calibration", 0, 0, G_OPTION_ARG_FILENAME, &p.calibration,
         "JSON file overriding the compute model's GPU figures and the links (simpar calibrate)",
         "FILE"},
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
    simpar_job_add_options(ctx, &p.job, SIMPAR_JOB_OPTIONS_ALL);
    gboolean ok =
        simpar_cli_parse(ctx, "simpar", &argc, &argv, error) && predict_resolve(&p, error);
    g_autoptr(SimparReport) report = ok ? predict_report_new(&p) : NULL;
    ok = ok && predict_workers(&p, report, error) && predict_print(&p, report, error);
    predict_clear(&p);
    return ok;
}
