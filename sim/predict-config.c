/* predict-config.c - one configuration predicted on a loaded platform (predict and sweep). */
#include "predict-config.h"
#include "cli.h"
#include "pipeline.h"
#include "step-formula.h"
#include "step-slice.h"
#include <string.h>

void
simpar_predict_args_clear(SimparPredictArgs *a)
{
    char **strs[] = {&a->backend,   &a->coll_mode,   &a->algo,      &a->proto,
                     &a->attention, &a->calibration, &a->tp_slices, &a->block_backend};
    for (guint i = 0; i < G_N_ELEMENTS(strs); i++)
        g_clear_pointer(strs[i], g_free);
}

GOptionEntry *
simpar_predict_option_entries(SimparPredictArgs *a, const char *backend_help)
{
    const GOptionEntry entries[] = {
        {"attention", 0, 0, G_OPTION_ARG_STRING, &a->attention,
         "unfused (default; s x s scores in memory) or flash (one fused kernel)", "IMPL"},
        {"backend", 0, 0, G_OPTION_ARG_STRING, &a->backend, backend_help, "B"},
        {"collectives", 0, 0, G_OPTION_ARG_STRING, &a->coll_mode,
         "SimGrid: fused (default; one transfer per peer) or exact (every round)", "MODE"},
        {"algo", 0, 0, G_OPTION_ARG_STRING, &a->algo,
         "Collective algorithm: auto (default; NCCL-like choice), ring, tree, chain, "
         "hierarchical, pairwise (for the kinds it implements)",
         "ALGO"},
        {"nccl-proto", 0, 0, G_OPTION_ARG_STRING, &a->proto,
         "Add NCCL's latency constants of a protocol: none (default), ll, ll128, simple", "P"},
        {"calibration", 0, 0, G_OPTION_ARG_FILENAME, &a->calibration,
         "JSON file overriding the compute model's GPU figures and the links (simpar calibrate)",
         "FILE"},
        {"block-backend", 0, 0, G_OPTION_ARG_STRING, &a->block_backend,
         "Backend that times the layer and end blocks on the first tensor-parallel group "
         "(default: --backend's); analytic with SimGrid: the blocks on an idle network, seconds "
         "instead of a minute for a group of thousands of GPUs, without the contention inside "
         "the group (README \"Speed\": its measured error)",
         "B"},
        {"tp-slices", 0, 0, G_OPTION_ARG_STRING, &a->tp_slices,
         "one (default): simulate the step of one tensor-parallel slice (the ranks of one index "
         "t) when the others provably run alike (no tensor-parallel op between stages, alike "
         "routes on links no two slices share), else every rank; all: every rank",
         "one|all"},
        G_OPTION_ENTRY_NULL,
    };
    return g_memdup2(entries, sizeof entries); /* (transfer container) */
}

gboolean
simpar_predict_args_resolve(const SimparPredictArgs *a, const char *backend,
                            SimparPredictContext *ctx, GError **error)
{
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    simpar_coll_params_init(&ctx->run.coll);
    ctx->block_backend = NULL; /* formula's blocks are analytic's: not a block backend */
    if (a->block_backend != NULL &&
        (!simpar_backend_lookup(a->block_backend, &ctx->block_backend, NULL) ||
         ctx->block_backend->formula)) {
        g_set_error(error, SIMPAR_CLI_ERROR, SIMPAR_CLI_ERROR_USAGE,
                    "--block-backend %s: unknown (valid: simgrid, analytic)", a->block_backend);
        return FALSE;
    }
    const char *slices = a->tp_slices != NULL ? a->tp_slices : "one";
    if (!g_str_equal(slices, "one") && !g_str_equal(slices, "all")) {
        g_set_error(error, SIMPAR_CLI_ERROR, SIMPAR_CLI_ERROR_USAGE,
                    "--tp-slices %s: unknown (valid: one, all)", slices);
        return FALSE;
    }
    ctx->all_slices = g_str_equal(slices, "all");
    return simpar_backend_lookup(a->backend != NULL ? a->backend : backend, &ctx->backend, error) &&
           simpar_coll_mode_parse(a->coll_mode != NULL ? a->coll_mode : "fused", &ctx->run.mode,
                                  error) &&
           simpar_coll_algo_lookup(a->algo != NULL ? a->algo : "auto", &ctx->run.algo, error) &&
           simpar_nccl_proto_parse(a->proto != NULL ? a->proto : "none", &ctx->run.coll.proto,
                                   error) &&
           simpar_attention_parse(a->attention != NULL ? a->attention : "unfused", &ctx->attention,
                                  error);
}

gboolean
simpar_predict_gpu(const SimparPlatform *platform, guint gpus, const char *calibration,
                   SimparGpu *gpu, GError **error)
{
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    if (!simpar_platform_gpu(platform, 0, gpu, error))
        return FALSE;
    for (guint i = 1; i < gpus; i++) {
        SimparGpu other;
        if (!simpar_platform_gpu(platform, i, &other, error))
            return FALSE;
        if (memcmp(other.peak_flops, gpu->peak_flops, sizeof other.peak_flops) != 0 ||
            other.mem_bw_Bps != gpu->mem_bw_Bps || other.mem_bytes != gpu->mem_bytes) {
            g_set_error(error, SIMPAR_CLI_ERROR, SIMPAR_CLI_ERROR_USAGE,
                        "--topology %s: GPU %u (%s) and GPU 0 (%s) differ; simpar needs the "
                        "used GPUs to be identical",
                        simpar_platform_path(platform), i, other.model, gpu->model);
            return FALSE;
        }
    }
    return calibration == NULL || (simpar_gpu_load_calibration(gpu, calibration, error) &&
                                   simpar_platform_calibrate_links(platform, calibration, error));
}

char *
simpar_predict_grid(const SimparPlan *plan)
{
    if (g_str_equal(plan->mode, "1d"))
        return g_strdup_printf("P=%" G_GINT64_FORMAT "%s", plan->tp,
                               plan->sequence_parallel ? "+SP" : "");
    if (g_str_equal(plan->mode, "2.5d"))
        return g_strdup_printf("q=%u d=%" G_GINT64_FORMAT, plan->q, plan->depth);
    return g_strdup_printf("q=%u%s", plan->q,
                           g_str_equal(plan->mode, "3d") && !plan->paper_3d ? " later" : "");
}

void
simpar_predict_row_clear(SimparReportRow *row)
{
    g_clear_pointer(&row->grid, g_free);
    g_clear_pointer(&row->skipped, g_free);
    g_clear_pointer(&row->step.split, g_free);
    g_clear_pointer(&row->step.placement, g_free);
    if (row->axes != NULL)
        g_array_free(g_steal_pointer(&row->axes), TRUE);
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

/* Block times, the step run and its breakdown into `row` (or only the step time into `step_s`
 * when `row` is NULL). */
static void
predict_step(const SimparPredictContext *ctx, const SimparModel *model, const SimparTrain *train,
             const SimparSchedule *layer, SimparReportRow *row, double *step_s)
{
    SimparStepTimer tm = {ctx->backend, ctx->run, ctx->gpu, ctx->attention};
    tm.base.net = simpar_platform_net(ctx->platform);
    SimparBlockTimes bt = {0};
    SimparStepTimer blocks = tm; /* the layer and end blocks, maybe on another backend */
    if (ctx->block_backend != NULL)
        blocks.backend = ctx->block_backend;
    if (row != NULL && blocks.backend != tm.backend)
        row->step.block_backend = blocks.backend->name;
    simpar_predict_cache_blocks(ctx->cache, &blocks, model, train, layer, &bt);
    if (ctx->backend->formula && ctx->trace == NULL &&
        simpar_step_formula(&tm, &bt, model, train, layer, ctx->cache, row, step_s)) {
        simpar_block_times_clear(&bt); /* closed forms; else (step-formula.h) the replay */
        return;
    }
    SimparStepPlan plan;
    simpar_step_plan(&tm, model, train, layer, !ctx->all_slices && ctx->trace == NULL, &plan);
    SimparRun run;
    g_autofree double *compute = NULL;
    g_autofree SimparSpan *spans = simpar_step_run(&tm, plan.step, &bt, plan.gpus, &run, &compute);
    if (row != NULL) {
        simpar_step_breakdown(&run, spans, &bt, model, train, plan.job_gpus, row);
        row->step.slices = plan.slices;
        if (ctx->trace != NULL)
            simpar_report_trace(ctx->trace, ctx->trace_index, row->mode, &run, spans);
    } else {
        SimparReportRow tmp = {0};
        simpar_step_breakdown(&run, spans, &bt, model, train, plan.job_gpus, &tmp);
        *step_s = tmp.step_s;
        g_array_free(tmp.axes, TRUE);
        g_free(tmp.step.placement);
    }
    simpar_step_plan_clear(&plan);
    simpar_block_times_clear(&bt);
}

/* The step of a configuration that fits, with its derived figures. */
static void
predict_simulate(const SimparPredictContext *ctx, const SimparModel *model,
                 const SimparTrain *train, const SimparSchedule *layer, SimparReportRow *row)
{
    row->step.split = predict_split(train);
    predict_step(ctx, model, train, layer, row, NULL);
    row->step.mfu = row->model_flops / row->step_s / ctx->gpus / ctx->gpu->peak_flops[model->dtype];
    if (train->schedule == SIMPAR_PIPE_LOCAL) { /* next to pipelining of the same split */
        SimparTrain pipe = *train;
        pipe.schedule = SIMPAR_PIPE_1F1B;
        pipe.local_async = FALSE;
        predict_step(ctx, model, &pipe, layer, NULL, &row->step.pipeline_step_s);
    }
    if (ctx->steps_to_target != G_MININT64) {
        row->step.steps_to_target = (double) ctx->steps_to_target;
        row->step.time_to_target_s = row->step.steps_to_target * row->step_s;
        row->step.gpu_hours_to_target = row->step.time_to_target_s * ctx->gpus / 3600;
    }
}

gboolean
simpar_predict_config(const SimparPredictContext *ctx, const SimparModel *model, SimparTrain *train,
                      SimparReportRow *row, GError **why, GError **error)
{
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    g_return_val_if_fail(why != NULL && *why == NULL, FALSE);
    gint64 t0 = g_get_monotonic_time();
    const SimparGenerator *gen = simpar_generator_lookup(train->tp.mode, error);
    if (gen == NULL)
        return FALSE;
    *row = (SimparReportRow){.mode = g_intern_string(train->tp.mode),
                             .gpus = ctx->gpus,
                             .mem_capacity_B = ctx->gpu->mem_bytes};
    if (!gen->validate(model, &train->tp, why)) {
        row->grid = g_strdup("-");
        return TRUE;
    }
    row->grid = simpar_predict_grid(&train->tp);
    if (!simpar_train_validate(train, model, ctx->gpus, why))
        return TRUE;
    g_autoptr(SimparPredictCache) own = ctx->cache == NULL ? simpar_predict_cache_new() : NULL;
    SimparPredictContext cached = *ctx; /* the layer and its block times: the process's */
    cached.cache = ctx->cache != NULL ? ctx->cache : own;
    SimparMemory layer_mem, mem;
    const SimparSchedule *layer = simpar_predict_cache_layer(cached.cache, model, &train->tp,
                                                             ctx->attention, &layer_mem, error);
    if (layer == NULL)
        return FALSE;
    simpar_memory_step_peak(model, train, layer_mem.transient_B, ctx->attention, &mem,
                            &row->step.peak_stage);
    row->memory = mem;
    if (mem.total_B > ctx->gpu->mem_bytes) {
        g_set_error(why, SIMPAR_CLI_ERROR, SIMPAR_CLI_ERROR_USAGE,
                    "%s %s: does not fit in GPU memory: needs %.2f GiB per GPU on pipeline "
                    "stage %u (states %.2f, activations %.2f, transient %.2f), the %s has %.2f GiB",
                    row->mode, row->grid, mem.total_B / (1 << 30), row->step.peak_stage,
                    mem.states_B / (1 << 30), mem.activations_B / (1 << 30),
                    mem.transient_B / (1 << 30), ctx->gpu->model, ctx->gpu->mem_bytes / (1 << 30));
        return TRUE;
    }
    predict_simulate(&cached, model, train, layer, row);
    row->wall_s = (g_get_monotonic_time() - t0) / 1e6;
    return TRUE;
}
