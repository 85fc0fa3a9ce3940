/* predict-config.c - one configuration predicted on a loaded platform (predict and sweep). */
#include "predict-config.h"
#include "generators.h"
#include "pipeline.h"
#include "replay.h"
#include "step-formula.h"
#include "step-slice.h"
#include <math.h>
#include <string.h>
#include <unistd.h>

G_DEFINE_QUARK(simpar_predict_error_quark, simpar_predict_error)

/* formula: a predictor mode over the analytic backend, not a backend of its own */
static const SimparBackend predict_formula = {
    "formula",
    "analytic, with the training step from closed forms per pipeline stage (sweeps)",
    simpar_backend_analytic_run,
    FALSE,
    0,
    0,
    0};

gboolean
simpar_predict_backend_lookup(const char *name, const SimparBackend **out, GError **error)
{
    if (g_strcmp0(name, predict_formula.name) == 0) {
        *out = &predict_formula;
        return TRUE;
    }
    g_autoptr(GError) local = NULL;
    if (simpar_backend_lookup(name, out, &local))
        return TRUE;
    g_set_error(error, SIMPAR_BACKEND_ERROR, SIMPAR_BACKEND_ERROR_OPTION,
                "--backend %s: unknown (valid: %s, %s)", name, simpar_backend_names(),
                predict_formula.name);
    return FALSE;
}

gboolean
simpar_predict_backend_is_formula(const SimparBackend *backend)
{
    return backend == &predict_formula;
}

void
simpar_predict_args_clear(SimparPredictArgs *a)
{
    char **strs[] = {&a->backend,     &a->coll_mode,   &a->algo,      &a->proto,
                     &a->attention,   &a->calibration, &a->tp_slices, &a->block_backend,
                     &a->time_budget, &a->kernels};
    for (guint i = 0; i < G_N_ELEMENTS(strs); i++)
        g_clear_pointer(strs[i], g_free);
}

GOptionEntry *
simpar_predict_option_entries(SimparPredictArgs *a, const char *backend_help)
{
    g_autofree char *algo = g_strdup_printf(
        "Collective algorithm: auto (default; NCCL-like choice), %s (for the kinds it implements; "
        "nvls where a node has NVLink SHARP, else the ring)",
        simpar_coll_algo_names());
    const char *algo_help = g_intern_string(algo); /* the option context keeps no copy */
    const GOptionEntry entries[] = {
        {"attention", 0, 0, G_OPTION_ARG_STRING, &a->attention,
         "unfused (default; s x s scores in memory) or flash (one fused kernel)", "IMPL"},
        {"backend", 0, 0, G_OPTION_ARG_STRING, &a->backend, backend_help, "B"},
        {"kernels", 0, 0, G_OPTION_ARG_STRING, &a->kernels,
         "The framework's kernels: megatron (default; Megatron-Core's fused bias-GeLU, "
         "bias-dropout-add, layer norm and Adam), pytorch (plain PyTorch: layer norm fused, every "
         "other op its own kernel) or unfused (every op its own kernel, as simpar-exec runs them)",
         "SET"},
        {"collectives", 0, 0, G_OPTION_ARG_STRING, &a->coll_mode,
         "SimGrid: fused (default; one transfer per peer) or exact (every round)", "MODE"},
        {"algo", 0, 0, G_OPTION_ARG_STRING, &a->algo, algo_help, "ALGO"},
        {"nccl-proto", 0, 0, G_OPTION_ARG_STRING, &a->proto,
         "NCCL protocol: auto (default; each collective's fastest, as NCCL's tuner picks), ll, "
         "ll128, simple (its latencies and wire efficiency), none (the network alone)",
         "P"},
        {"calibration", 0, 0, G_OPTION_ARG_FILENAME, &a->calibration,
         "JSON file overriding the compute model's GPU figures and the links (simpar calibrate)",
         "FILE"},
        {"block-backend", 0, 0, G_OPTION_ARG_STRING, &a->block_backend,
         "Backend that times the layer and end blocks on the first tensor-parallel group "
         "(default: --backend's); analytic with SimGrid: the blocks on an idle network, seconds "
         "instead of a minute for a group of thousands of GPUs, without the contention inside "
         "the group (docs/speed.md: its measured error)",
         "B"},
        {"tp-slices", 0, 0, G_OPTION_ARG_STRING, &a->tp_slices,
         "one (default): simulate the step of one tensor-parallel slice (the ranks of one index "
         "t) when the others provably run alike (no tensor-parallel op between stages, alike "
         "routes on links no two slices share), and the blocks of fused collectives on the "
         "ranks that provably stand for the others (a quotient of alike nodes of a generated "
         "platform), else every rank; all: every rank",
         "one|all"},
        {"time-budget", 0, 0, G_OPTION_ARG_STRING, &a->time_budget,
         "Refuse a configuration whose SimGrid simulation is estimated to take longer than this "
         "(default 60), naming the faster mode that would do",
         "MINUTES"},
        G_OPTION_ENTRY_NULL,
    };
    return g_memdup2(entries, sizeof entries); /* (transfer container) */
}

gboolean
simpar_predict_budget_parse(const char *text, double default_min, double *seconds, GError **error)
{
    *seconds = default_min * 60;
    if (text == NULL)
        return TRUE;
    char *end = NULL;
    double min = g_ascii_strtod(text, &end);
    if (end == text || *end != '\0' || !(min > 0) || min > SIMPAR_PREDICT_BUDGET_MAX_MIN) {
        g_set_error(error, SIMPAR_PREDICT_ERROR, SIMPAR_PREDICT_ERROR_REFUSED,
                    "--time-budget %s: not a number of minutes in (0, %d]", text,
                    SIMPAR_PREDICT_BUDGET_MAX_MIN);
        return FALSE;
    }
    *seconds = min * 60;
    return TRUE;
}

double
simpar_predict_memory_cap(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    double phys = pages > 0 && page > 0 ? (double) pages * (double) page * 0.75 : 0;
    return phys > 0 ? MIN(phys, SIMPAR_PREDICT_MAX_MEMORY_B) : SIMPAR_PREDICT_MAX_MEMORY_B;
}

gboolean
simpar_predict_args_resolve(const SimparPredictArgs *a, const char *backend,
                            SimparPredictContext *ctx, GError **error)
{
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    simpar_coll_params_init(&ctx->run.coll);
    ctx->block_backend = NULL; /* formula's blocks are analytic's: not a block backend */
    if (a->block_backend != NULL &&
        !simpar_backend_lookup(a->block_backend, &ctx->block_backend, NULL)) {
        g_set_error(error, SIMPAR_PREDICT_ERROR, SIMPAR_PREDICT_ERROR_REFUSED,
                    "--block-backend %s: unknown (valid: %s)", a->block_backend,
                    simpar_backend_names());
        return FALSE;
    }
    const char *slices = a->tp_slices != NULL ? a->tp_slices : "one";
    if (!g_str_equal(slices, "one") && !g_str_equal(slices, "all")) {
        g_set_error(error, SIMPAR_PREDICT_ERROR, SIMPAR_PREDICT_ERROR_REFUSED,
                    "--tp-slices %s: unknown (valid: one, all)", slices);
        return FALSE;
    }
    ctx->all_slices = g_str_equal(slices, "all");
    ctx->run.every_rank = ctx->all_slices;
    if (!simpar_predict_budget_parse(a->time_budget, SIMPAR_PREDICT_BUDGET_MIN, &ctx->budget_s,
                                     error))
        return FALSE;
    SimparKernelSet kernels;
    return simpar_predict_backend_lookup(a->backend != NULL ? a->backend : backend, &ctx->backend,
                                         error) &&
           simpar_kernel_set_parse(a->kernels != NULL ? a->kernels : "megatron", &kernels, error) &&
           simpar_coll_mode_parse(a->coll_mode != NULL ? a->coll_mode : "fused", &ctx->run.mode,
                                  error) &&
           simpar_coll_algo_lookup(a->algo != NULL ? a->algo : "auto", &ctx->run.algo, error) &&
           simpar_nccl_proto_parse(a->proto != NULL ? a->proto : "auto", &ctx->run.coll.proto,
                                   error) &&
           simpar_attention_parse(a->attention != NULL ? a->attention : "unfused", &ctx->attention,
                                  error);
}

gboolean
simpar_predict_gpu(const SimparPlatform *platform, guint gpus, const SimparPredictArgs *args,
                   SimparGpu *gpu, GError **error)
{
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    const char *calibration = args != NULL ? args->calibration : NULL;
    SimparKernelSet kernels = SIMPAR_KERNELS_MEGATRON;
    if (args != NULL && args->kernels != NULL &&
        !simpar_kernel_set_parse(args->kernels, &kernels, error))
        return FALSE;
    if (!simpar_platform_gpu(platform, 0, gpu, error))
        return FALSE;
    for (guint i = 1; i < gpus; i++) {
        SimparGpu other;
        if (!simpar_platform_gpu(platform, i, &other, error))
            return FALSE;
        if (memcmp(other.peak_flops, gpu->peak_flops, sizeof other.peak_flops) != 0 ||
            other.mem_bw_Bps != gpu->mem_bw_Bps || other.mem_bytes != gpu->mem_bytes) {
            g_set_error(error, SIMPAR_PREDICT_ERROR, SIMPAR_PREDICT_ERROR_REFUSED,
                        "--topology %s: GPU %u (%s) and GPU 0 (%s) differ; simpar needs the "
                        "used GPUs to be identical",
                        simpar_platform_path(platform), i, other.model, gpu->model);
            return FALSE;
        }
    }
    gpu->kernel_set = kernels;
    return calibration == NULL || (simpar_gpu_load_calibration(gpu, calibration, error) &&
                                   simpar_platform_calibrate_links(platform, calibration, error));
}

char *
simpar_predict_grid(const SimparPlan *plan)
{
    return simpar_plan_grid_label(plan, FALSE);
}

void
simpar_predict_row_clear(SimparReportRow *row)
{
    g_clear_pointer(&row->grid, g_free);
    g_clear_pointer(&row->skipped, g_free);
    g_clear_pointer(&row->step.split, g_free);
    g_clear_pointer(&row->step.placement, g_free);
    g_clear_pointer(&row->step.compute, g_free);
    if (row->axes != NULL)
        g_array_free(g_steal_pointer(&row->axes), TRUE);
}

static char *
predict_split(const SimparTrain *t)
{
    GString *out = g_string_new(NULL);
    g_autofree char *cp_label =
        simpar_plan_cp(&t->tp) > 1 ? g_strdup_printf(" C=%u", simpar_plan_cp(&t->tp)) : NULL;
    g_string_append_printf(
        out, "T=%" G_GINT64_FORMAT "%s %s=%" G_GINT64_FORMAT " D=%" G_GINT64_FORMAT " %s", t->tp.tp,
        cp_label != NULL ? cp_label : "", t->schedule == SIMPAR_PIPE_LOCAL ? "K" : "P", t->pp,
        t->dp, simpar_pipe_schedule_name(t->schedule));
    if (t->schedule == SIMPAR_PIPE_LOCAL)
        g_string_append_printf(out, "%s W=%" G_GINT64_FORMAT, t->local_async ? " async" : " sync",
                               t->aux_head_width);
    if (t->virtual_stages > 1)
        g_string_append_printf(out, " v=%" G_GINT64_FORMAT, t->virtual_stages);
    if (t->vp_group > 0)
        g_string_append_printf(out, " N=%" G_GINT64_FORMAT, t->vp_group);
    if (t->ep_overlap) /* --overlap-moe-expert-parallel-comm */
        g_string_append(out, " merged-1F1B");
    if (t->layout != NULL) /* --pipeline-model-parallel-layout */
        g_string_append_printf(out, " layout=%s", t->layout);
    if (t->first_stage_layers > 0)
        g_string_append_printf(out, " first-stage=%" G_GINT64_FORMAT, t->first_stage_layers);
    if (t->last_stage_layers > 0)
        g_string_append_printf(out, " last-stage=%" G_GINT64_FORMAT, t->last_stage_layers);
    if (t->account_embedding || t->account_loss) /* --account-for-*-in-pipeline-split */
        g_string_append_printf(out, " accounted=%s",
                               t->account_embedding && t->account_loss ? "embedding+loss"
                               : t->account_embedding                  ? "embedding"
                                                                       : "loss");
    g_string_append_printf(
        out, " m=%" G_GINT64_FORMAT " B=%" G_GINT64_FORMAT " ZeRO-%d%s%s recompute %s",
        t->micro_batches, t->global_batch, t->zero, t->overlap_grad_reduce ? " overlap" : "",
        t->overlap_param_gather ? " gather-overlap" : "", simpar_recompute_name(t->tp.recompute));
    if (t->tp.recompute_modules != 0) { /* selective's modules, when not core_attn alone */
        g_autofree char *mods = simpar_recompute_modules_name(t->tp.recompute_modules);
        g_string_append_printf(out, " (%s)", mods);
    }
    return g_string_free(out, FALSE); /* (transfer full) */
}

/* What simulating `sched` (`n_layers` stacked) on `gpus` with timer `tm` is expected to cost,
 * in seconds (0 on closed forms), adding its activities to *n; with `bound`, at most that, from
 * the ops alone: with fused collectives a member sends to at most its n - 1 peers. */
static double
predict_run_cost(const SimparStepTimer *tm, const SimparSchedule *sched, guint n_layers,
                 const guint *gpus, gboolean bound, double *n)
{
    const SimparBackend *b = tm->backend;
    double factor = tm->base.mode == SIMPAR_COLL_MODE_EXACT ? b->activity_exact_factor : 1;
    guint ranks = simpar_schedule_n_ranks(sched);
    if (b->activity_base_s + b->activity_per_gpu_s <= 0)
        return 0;
    double k = 0;
    if (bound) {
        for (guint i = 0; i < simpar_schedule_n_ops(sched); i++) {
            const SimparOp *op = simpar_schedule_op(sched, i);
            k += op->kind == SIMPAR_OP_COLLECTIVE
                     ? simpar_schedule_group(sched, op->u.coll.group)->size - 1.0
                     : 1;
        }
        k *= n_layers;
    } else {
        SimparRun run = tm->base;
        run.sched = sched, run.n_layers = n_layers, run.gpus = gpus;
        g_autoptr(SimparReplay) r = simpar_replay_new(&run);
        k = simpar_replay_activities(r, &ranks); /* a quotient simulates fewer ranks */
    }
    double per = (b->activity_base_s + b->activity_per_gpu_s * ranks) * factor;
    *n += k;
    return k * per;
}

/* FALSE with *why set when simulating the blocks (two stacked layers and the ends, counted as
 * one more layer) and the step (NULL: not replayed) would take longer than the time budget. */
static gboolean
predict_affordable(const SimparPredictContext *ctx, const char *what, const SimparStepTimer *blocks,
                   const SimparTrain *train, const SimparSchedule *layer, const SimparStepTimer *tm,
                   const SimparStepPlan *plan, GError **why)
{
    if (ctx->budget_s <= 0)
        return TRUE;
    g_autofree guint *gpus = simpar_block_gpus(train);
    double n = 0, in_blocks = 0, in_step = 0;
    for (guint pass = ctx->run.mode == SIMPAR_COLL_MODE_FUSED ? 0 : 1; pass < 2; pass++) {
        n = 0; /* pass 0: a bound from the ops (cheap); pass 1: the replays' count */
        in_blocks = predict_run_cost(blocks, layer, 3, gpus, pass == 0, &n);
        in_step =
            plan->step != NULL ? predict_run_cost(tm, plan->step, 1, plan->gpus, pass == 0, &n) : 0;
        if (in_blocks + in_step <= ctx->budget_s)
            return TRUE;
    }
    double cost = in_blocks + in_step;
    const char *faster;
    if (ctx->run.mode == SIMPAR_COLL_MODE_EXACT)
        faster = "the default --collectives fused is fast (docs/speed.md: its error against "
                 "exact)";
    else if (ctx->all_slices)
        faster = "the default --tp-slices one is fast where it applies (one tensor-parallel "
                 "slice of the step, the layer on a few alike nodes)";
    else if (in_blocks > in_step)
        faster = "--block-backend analytic times the blocks in seconds (docs/speed.md: its "
                 "error)";
    else
        faster = "--backend analytic or formula (no contention) is fast";
    g_autofree char *how_long = cost >= 5400 ? g_strdup_printf("%.1f hours", cost / 3600)
                                : cost >= 90 ? g_strdup_printf("%.0f minutes", cost / 60)
                                             : g_strdup_printf("%.2g seconds", cost);
    g_set_error(why, SIMPAR_PREDICT_ERROR, SIMPAR_PREDICT_ERROR_REFUSED,
                "%s: simulating it on SimGrid would take about %s (%.3g transfers and kernels), "
                "more than --time-budget %g minutes: %s; or raise --time-budget",
                what, how_long, n, ctx->budget_s / 60, faster);
    return FALSE;
}

/* What building and replaying the step of `train` takes, in bytes, before it is built (models/
 * step.c's shape): on each simulated rank (a tensor-parallel slice's, or every rank) and step,
 * per micro-batch and model chunk a forward and a backward of at most 4 ops (receive, block,
 * send, an end's block), and where layers are blocks of their own (ZeRO-3, reductions per
 * micro-batch) 3 more per layer and direction (gather, block, reduction); each op with its
 * deps, spans and replay state, several times that on SimGrid (measured: 1.9 KB per rank,
 * micro-batch and chunk on the analytic backend, 7.3 KB on SimGrid). */
static double
predict_replay_bytes(const SimparPredictContext *ctx, const SimparTrain *train,
                     const SimparBackend *backend, gboolean slice, double *ranks)
{
    gboolean local = train->schedule == SIMPAR_PIPE_LOCAL;
    double n_job = (double) simpar_train_group(train) * train->pp * train->dp;
    /* an MoE step is not sliced: its experts' reductions cross the slices (step-slice.c) */
    *ranks = slice && train->tp.tp > 1 && train->tp.ep == 0 ? n_job / train->tp.tp : n_job;
    double steps = local && train->local_async ? 3 : 1, m = (double) train->micro_batches;
    double layers = ceil((double) train->layers / train->pp);
    gboolean per_layer = train->zero == 3 || simpar_train_reduce_each_micro(train);
    double ops = 2 * m * (4.0 * train->virtual_stages + (per_layer ? 3 * layers : 0)) + 16;
    double per_op = backend->activity_base_s + backend->activity_per_gpu_s > 0 ? 1300 : 330;
    (void) ctx;
    return *ranks * steps * ops * per_op;
}

/* FALSE with *why set when the step needs `bytes` (the formula's ops, or else the replay's),
 * more than the run may take: refused with the number before anything is allocated (an
 * interleaved step of PP 16, 1024 chunks and 4096 micro-batches asked for 32 GiB at once). */
static gboolean
predict_memory_fits(const SimparPredictContext *ctx, const char *what, const SimparTrain *train,
                    double bytes, double ranks, GError **why)
{
    double cap = simpar_predict_memory_cap();
    if (bytes <= cap)
        return TRUE;
    g_autofree char *where = ranks > 0
                                 ? g_strdup_printf("its step's ops on %.0f simulated ranks", ranks)
                                 : g_strdup("the formula's ops");
    g_set_error(why, SIMPAR_PREDICT_ERROR, SIMPAR_PREDICT_ERROR_REFUSED,
                "%s: %s (%" G_GINT64_FORMAT " micro-batches x %" G_GINT64_FORMAT
                " model chunks x %" G_GINT64_FORMAT " stages) would need about %.1f GiB of "
                "memory, more than the %.1f GiB simpar allows here (3/4 of this machine's "
                "memory, at most %.0f GiB): fewer micro-batches (--global-batch), virtual stages "
                "or pipeline stages%s",
                what, where, train->micro_batches, train->virtual_stages, train->pp,
                bytes / (1 << 30), cap / (1 << 30), SIMPAR_PREDICT_MAX_MEMORY_B / (1 << 30),
                ctx->all_slices ? ", or the default --tp-slices one" : "");
    return FALSE;
}

/* What one trace event takes (measured: 122 to 148 bytes in 1d traces) */
#define PREDICT_TRACE_EVENT_B 140
/* What the warning counts (measured on the main job's trace: its complete events 177 bytes,
 * its flow ends 121) */
#define PREDICT_TRACE_WRITTEN_B 180
#define PREDICT_TRACE_FLOW_B    121

static guint *predict_trace_layer_roles(const SimparSchedule *layer);

/* The ranks the trace shows of a job of `n_job` GPUs: those asked for, or one per role
 * (replica 0 of every stage, each layer rank whose ops differ); *joined, the share of them
 * whose collectives' partners the trace shows too (the flow arrows written). */
static guint
predict_trace_n_ranks(const SimparPredictContext *ctx, const SimparTrain *train,
                      const SimparSchedule *layer, guint n_job, double *joined)
{
    *joined = 1;
    if (ctx->trace_all)
        return n_job;
    guint ranks = 0;
    for (guint k = 0; ctx->trace_ranks != NULL && k < ctx->trace_ranks->len; k++)
        ranks += g_array_index(ctx->trace_ranks, guint, k) < n_job;
    if (ctx->trace_ranks != NULL)
        return ranks;
    g_autofree guint *role = predict_trace_layer_roles(layer);
    guint n_layer = simpar_schedule_n_ranks(layer), group = simpar_train_group(train);
    for (guint t = 0; t < group; t++)
        ranks += role[t % n_layer] == t % n_layer;
    *joined = ranks > 1 ? (double) ranks / group : 0;
    return ranks * (guint) train->pp;
}

/* Collectives per rank of a schedule. */
static double
predict_trace_colls(const SimparSchedule *s)
{
    guint n = 0;
    for (guint i = 0; i < simpar_schedule_n_ops(s); i++)
        n += simpar_schedule_op(s, i)->kind == SIMPAR_OP_COLLECTIVE;
    return (double) n / simpar_schedule_n_ranks(s);
}

/* Ops and collectives per rank of a layer in a trace: the layer schedule's and, for an MoE
 * model, its MoE block's. */
static void
predict_trace_layer_ops(const SimparModel *model, const SimparTrain *train,
                        const SimparSchedule *layer, double *ops, double *colls)
{
    *ops = (double) simpar_schedule_n_ops(layer) / simpar_schedule_n_ranks(layer);
    *colls = predict_trace_colls(layer);
    if (!simpar_model_is_moe(model))
        return;
    g_autofree guint *gpus = NULL;
    g_autoptr(SimparSchedule) moe = simpar_block_moe_build(model, train, &gpus);
    *ops += (double) simpar_schedule_n_ops(moe) / simpar_schedule_n_ranks(moe);
    *colls += predict_trace_colls(moe);
}

/* The trace's warning size in bytes: $SIMPAR_TRACE_WARN_MIB MiB when set, else
 * SIMPAR_PREDICT_WARN_TRACE_B. */
static double
predict_trace_warn_size(void)
{
    const char *env = g_getenv("SIMPAR_TRACE_WARN_MIB");
    char *end = NULL;
    double mib = env != NULL ? g_ascii_strtod(env, &end) : NAN;
    return env != NULL && end != env && *end == '\0' && mib >= 0 ? mib * (1 << 20)
                                                                 : SIMPAR_PREDICT_WARN_TRACE_B;
}

/* Once the trace's expected size passes the warning size: a warning naming it and how to
 * shrink it (ctx->warn). */
static void
predict_trace_warn(const SimparPredictContext *ctx, const char *what, double bytes, double events)
{
    double before = simpar_trace_expect(ctx->trace, 0), warn = predict_trace_warn_size();
    double total = simpar_trace_expect(ctx->trace, bytes);
    if (ctx->warn == NULL || before > warn || total <= warn)
        return;
    g_autofree char *msg = g_strdup_printf(
        "the trace will be large: about %.3g MiB%s by %s (about %.3g events of its own, "
        "estimated before it runs), past the %.3g MiB at which simpar warns "
        "($SIMPAR_TRACE_WARN_MIB): trace fewer ranks (--trace-ranks 0-15; without "
        "--trace-ranks one rank per role)%s",
        total / (1 << 20), simpar_trace_is_gzip(ctx->trace) ? " before gzip" : "", what, events,
        warn / (1 << 20),
        simpar_trace_is_gzip(ctx->trace)
            ? ""
            : " or write it gzip'ed (--trace FILE.json.gz: 10 to 20 times smaller)");
    ctx->warn(msg, ctx->warn_data);
}

/* FALSE with *why set when the Chrome trace of the ranks asked for would pass
 * SIMPAR_PREDICT_MAX_TRACE_B: events per rank from the step's ops (its slice rank's) with each
 * layer block expanded into its layer's ops, at the bytes an event takes (--trace-ranks all
 * on a 1024-GPU step wrote 8 GB). The default, one rank per role, is not refused; any trace
 * warns once its estimate passes the warning size. */
static gboolean
predict_trace_fits(const SimparPredictContext *ctx, const char *what, const SimparModel *model,
                   const SimparTrain *train, const SimparSchedule *layer,
                   const SimparStepPlan *plan, GError **why)
{
    if (ctx->trace == NULL)
        return TRUE;
    guint n_job = simpar_train_group(train) * (guint) (train->pp * train->dp);
    double joined;
    guint ranks = predict_trace_n_ranks(ctx, train, layer, n_job, &joined);
    double step_ops =
        (double) simpar_schedule_n_ops(plan->step) / simpar_schedule_n_ranks(plan->step);
    double layer_ops, layer_colls;
    predict_trace_layer_ops(model, train, layer, &layer_ops, &layer_colls);
    double layers = ceil((double) train->layers / train->pp); /* a layer: its forward and
                                                                  backward ops */
    double per_layers = train->micro_batches * layers;
    double events = ranks * (step_ops + per_layers * layer_ops);
    double bytes = events * PREDICT_TRACE_EVENT_B;
    if (bytes <= SIMPAR_PREDICT_MAX_TRACE_B || (!ctx->trace_all && ctx->trace_ranks == NULL)) {
        /* the warning: the bytes written, the flow arrows' two ends per collective too */
        double flows =
            2 * joined * ranks * (predict_trace_colls(plan->step) + per_layers * layer_colls);
        predict_trace_warn(ctx, what,
                           events * PREDICT_TRACE_WRITTEN_B + flows * PREDICT_TRACE_FLOW_B,
                           events + flows);
        return TRUE;
    }
    g_set_error(why, SIMPAR_PREDICT_ERROR, SIMPAR_PREDICT_ERROR_REFUSED,
                "%s: --trace-ranks %s: the trace of %u ranks would hold about %.3g events, about "
                "%.1f GiB, more than the %.0f GiB simpar writes: trace fewer ranks (such as "
                "--trace-ranks 0-%u) or leave --trace-ranks out (one rank per role)",
                what, ctx->trace_all ? "all" : "list", ranks, events, bytes / (1 << 30),
                SIMPAR_PREDICT_MAX_TRACE_B / (1 << 30), MIN(n_job, 64u) - 1);
    return FALSE;
}

/* Per layer rank of `layer`: the lowest layer rank whose ops are alike (kinds, names, streams,
 * phases, deps; collectives of one kind, axis, size and count, each rank its root or not;
 * transfers of one count): the one that shows the role in a trace (transfer full). */
static guint *
predict_trace_layer_roles(const SimparSchedule *layer)
{
    guint n_ranks = simpar_schedule_n_ranks(layer);
    guint *role = g_new(guint, n_ranks);
    g_autoptr(GHashTable) seen = g_hash_table_new_full(
        (GHashFunc) g_bytes_hash, (GEqualFunc) g_bytes_equal, (GDestroyNotify) g_bytes_unref, NULL);
    g_autoptr(GArray) key = g_array_new(FALSE, FALSE, sizeof(guint64));
    for (guint r = 0; r < n_ranks; r++) {
        guint n;
        const guint *ops = simpar_schedule_rank_ops(layer, r, &n);
        g_array_set_size(key, 0);
        for (guint i = 0; i < n; i++) {
            const SimparOp *op = simpar_schedule_op(layer, ops[i]);
            guint64 w[4] = {(guint64) op->kind << 32 | op->stream << 8 | op->phase,
                            (guint64) (guintptr) op->name, op->n_deps, 0};
            if (op->kind == SIMPAR_OP_COLLECTIVE) {
                const SimparGroup *g = simpar_schedule_group(layer, op->u.coll.group);
                gboolean rooted = op->u.coll.kind == SIMPAR_COLL_BROADCAST ||
                                  op->u.coll.kind == SIMPAR_COLL_REDUCE;
                gboolean root =
                    rooted && simpar_group_index(layer, op->u.coll.group, r) == op->u.coll.root;
                w[2] ^= (guint64) (guintptr) g->axis;
                w[3] = (guint64) g->size << 40 | (guint64) op->u.coll.kind << 32 |
                       (guint64) root << 31 | (guint64) (op->u.coll.count & 0x7fffffff);
            } else if (op->kind == SIMPAR_OP_SEND || op->kind == SIMPAR_OP_RECV) {
                w[3] = op->u.p2p.count;
            }
            g_array_append_vals(key, w, 4);
        }
        GBytes *k = g_bytes_new(key->data, key->len * sizeof(guint64));
        gpointer first = g_hash_table_lookup(seen, k);
        if (first == NULL) {
            g_hash_table_insert(seen, k, GUINT_TO_POINTER(r + 1));
            role[r] = r;
        } else {
            g_bytes_unref(k);
            role[r] = GPOINTER_TO_UINT(first) - 1;
        }
    }
    return role;
}

/* An MoE model's rank `x->job_rank`: its index in its expert-parallel group and the group's
 * first rank (train.h's expert numbering). */
static void
predict_trace_moe_rank(const SimparModel *model, const SimparTrain *train, SimparTraceRank *x)
{
    if (!simpar_model_is_moe(model))
        return;
    guint stride = (guint) train->expert_stride[SIMPAR_AXIS_EP];
    x->moe_rank = x->job_rank / stride % (guint) MAX(train->ep, 1);
    x->moe_base = x->job_rank - x->moe_rank * stride;
}

/* The step's trace events for the ranks asked for (or one per role: replica 0 of every stage,
 * the layer ranks whose ops differ), its layer blocks expanded into the ops of their layers.
 * Where one slice stands for the step, a rank's step ops are its slice rank's. */
static void
predict_trace(const SimparPredictContext *ctx, const SimparStepTimer *blocks,
              const SimparModel *model, const SimparTrain *train, const SimparSchedule *layer,
              const SimparStepPlan *plan, const SimparRun *run, const SimparSpan *spans,
              const char *mode)
{
    double act = simpar_memory_layer_activations(model, &train->tp, ctx->attention);
    SimparModel dense_model; /* an MoE model's dense layers' (0 without) */
    simpar_model_dense_layer(model, &dense_model);
    double dense_act =
        simpar_model_has_dense_layers(model)
            ? simpar_memory_layer_activations(&dense_model, &train->tp, ctx->attention)
            : 0;
    guint T = (guint) train->tp.tp, TC = simpar_train_group(train);
    guint n_job = TC * (guint) (train->pp * train->dp);
    SimparTrain num;
    simpar_train_tp_slice(train, &num);
    g_autofree guint *where = g_new(guint, 3 * (gsize) n_job); /* job rank -> (t', d, p) */
    g_autofree guint *run_job = plan->slices > 1 ? g_new(guint, n_job / T) : NULL;
    for (guint t = 0; t < TC; t++)
        for (guint d = 0; d < train->dp; d++)
            for (guint p = 0; p < train->pp; p++) {
                guint r = simpar_train_rank(train, t, d, p);
                where[3 * r] = t, where[3 * r + 1] = d, where[3 * r + 2] = p;
                if (run_job != NULL && t % T == 0)
                    run_job[simpar_train_rank(&num, t / T, d, p)] = r;
            }
    g_autofree guint *role = predict_trace_layer_roles(layer);
    g_autoptr(GArray) who = g_array_new(FALSE, FALSE, sizeof(SimparTraceRank));
    gboolean list = ctx->trace_ranks != NULL && !ctx->trace_all;
    for (guint k = 0; k < (list ? ctx->trace_ranks->len : n_job); k++) {
        guint r = list ? g_array_index(ctx->trace_ranks, guint, k) : k;
        if (r >= n_job)
            continue; /* of the platform's GPUs, not of this split's */
        guint t = where[3 * r], d = where[3 * r + 1], p = where[3 * r + 2];
        if (!list && !ctx->trace_all && (d != 0 || role[t] != t))
            continue;
        guint run_rank = plan->slices > 1 ? simpar_train_rank(&num, t / T, d, p) : r;
        SimparMemory mem; /* the stage's states, for the memory counter */
        simpar_memory_step(model, train, p, 0, ctx->attention, &mem);
        SimparTraceRank x = {
            .run_rank = run_rank,
            .job_rank = r,
            .gpu = plan->job_gpus[r],
            .layer_rank = t,
            .states_B = mem.states_B,
            .layer_activations_B = act,
            .dense_activations_B = dense_act,
            .layer_base = simpar_train_rank(train, 0, d, p),
        };
        predict_trace_moe_rank(model, train, &x);
        g_array_append_val(who, x);
    }
    SimparTraceLayer tl = {0};
    g_autofree guint *block_gpus = simpar_block_gpus(train);
    g_autofree SimparSpan *layer_spans = simpar_block_layer_spans(blocks, train, layer, tl.part_s);
    SimparRun layer_run = blocks->base, moe_run = blocks->base;
    layer_run.sched = layer, layer_run.n_layers = 1, layer_run.gpus = block_gpus;
    tl.run = &layer_run, tl.spans = layer_spans;
    g_autoptr(SimparSchedule) moe = NULL;
    g_autofree guint *moe_gpus = NULL;
    g_autofree SimparSpan *moe_spans =
        simpar_model_is_moe(model)
            ? simpar_block_moe_spans(blocks, model, train, &moe, &moe_gpus, tl.moe_part_s)
            : NULL;
    if (moe != NULL) {
        moe_run.sched = moe, moe_run.n_layers = 1, moe_run.gpus = moe_gpus;
        tl.moe_run = &moe_run, tl.moe_spans = moe_spans;
    }
    g_autoptr(SimparSchedule) dense = simpar_model_has_dense_layers(model)
                                          ? simpar_generate_dense_layer(model, &train->tp, NULL)
                                          : NULL; /* validated: predict_dense_valid */
    g_autofree SimparSpan *dense_spans =
        dense != NULL ? simpar_block_layer_spans(blocks, train, dense, NULL) : NULL;
    SimparRun dense_run = layer_run;
    if (dense != NULL) {
        dense_run.sched = dense;
        tl.dense_run = &dense_run, tl.dense_spans = dense_spans;
    }
    simpar_report_trace(ctx->trace, ctx->trace_index, mode, run, spans,
                        (const SimparTraceRank *) who->data, who->len, run_job, &tl);
}

/* Block times, the step run and its breakdown into `row` (or only the step time into `step_s`
 * when `row` is NULL); FALSE with *why set, naming `what`, when simulating it would exceed the
 * time budget. */
static gboolean
predict_step(const SimparPredictContext *ctx, const SimparModel *model, const SimparTrain *train,
             const SimparSchedule *layer, const char *what, SimparReportRow *row, double *step_s,
             GError **why)
{
    SimparStepTimer tm = {ctx->backend, ctx->run, ctx->gpu, ctx->attention};
    tm.base.net = simpar_platform_net(ctx->platform);
    SimparBlockTimes bt = {0};
    SimparStepTimer blocks = tm; /* the layer and end blocks, maybe on another backend */
    if (ctx->block_backend != NULL)
        blocks.backend = ctx->block_backend;
    if (row != NULL && blocks.backend != tm.backend)
        row->step.block_backend = blocks.backend->name;
    gboolean formula = simpar_predict_backend_is_formula(ctx->backend) && ctx->trace == NULL;
    SimparStepPlan plan = {0};
    double ranks, need = predict_replay_bytes(ctx, train, tm.backend, !ctx->all_slices, &ranks);
    if (!formula && !predict_memory_fits(ctx, what, train, need, ranks, why))
        return FALSE;
    if (!formula) /* the formula's fallback replays on the analytic backend: no cost */
        simpar_step_plan(&tm, model, train, layer, !ctx->all_slices, &plan);
    if (!(formula || predict_trace_fits(ctx, what, model, train, layer, &plan, why)) ||
        !predict_affordable(ctx, what, &blocks, train, layer, &tm, &plan, why)) {
        simpar_step_plan_clear(&plan);
        return FALSE;
    }
    simpar_predict_cache_blocks(ctx->cache, &blocks, model, train, layer, &bt);
    if (formula) {
        double ops = simpar_step_formula_bytes(&tm, &bt, model, train, layer, ctx->cache);
        if (!predict_memory_fits(ctx, what, train, ops > 0 ? ops : need, ops > 0 ? 0 : ranks,
                                 why)) {
            simpar_block_times_clear(&bt);
            return FALSE;
        }
        if (simpar_step_formula(&tm, &bt, model, train, layer, ctx->cache, row, step_s)) {
            simpar_block_times_clear(&bt); /* closed forms; else (step-formula.h) the replay */
            return TRUE;
        }
        simpar_step_plan(&tm, model, train, layer, !ctx->all_slices, &plan);
    }
    SimparRun run;
    g_autofree double *compute = NULL;
    guint simulated = simpar_schedule_n_ranks(plan.step);
    tm.base.n_simulated = &simulated; /* fewer under a quotient of alike ranks */
    simpar_step_plan_share(&plan, TRUE);
    g_autofree SimparSpan *spans = simpar_step_run(&tm, plan.step, &bt, plan.gpus, &run, &compute);
    simpar_step_plan_share(&plan, FALSE);
    double end = 0;
    for (guint i = 0; i < simpar_schedule_n_ops(plan.step); i++)
        end = MAX(end, spans[i].end);
    if (!(end <= SIMPAR_PREDICT_MAX_STEP_S)) { /* NaN too */
        g_set_error(why, SIMPAR_PREDICT_ERROR, SIMPAR_PREDICT_ERROR_REFUSED,
                    "%s: the step would take %g s, past the %g s any figure of a real cluster "
                    "gives: the platform's or the calibration's figures are out of scale",
                    what, end, SIMPAR_PREDICT_MAX_STEP_S);
        simpar_step_plan_clear(&plan);
        simpar_block_times_clear(&bt);
        return FALSE;
    }
    if (row != NULL) {
        simpar_step_breakdown(&run, spans, &bt, model, train, plan.job_gpus, row);
        row->step.slices = plan.slices;
        row->step.slice_ranks = simpar_schedule_n_ranks(plan.step);
        row->step.step_ranks = simulated;
        if (ctx->trace != NULL)
            predict_trace(ctx, &blocks, model, train, layer, &plan, &run, spans, row->gen->name);
    } else {
        SimparReportRow tmp = {0};
        simpar_step_breakdown(&run, spans, &bt, model, train, plan.job_gpus, &tmp);
        *step_s = tmp.step_s;
        g_array_free(tmp.axes, TRUE);
        g_free(tmp.step.placement);
    }
    simpar_step_plan_clear(&plan);
    simpar_block_times_clear(&bt);
    return TRUE;
}

/* simpar_compute_describe of the layer on the context's GPU, once per cache: a sweep's rows
 * share the layer, and the description walks its ops. */
static char *
predict_compute_text(const SimparPredictContext *ctx, const SimparSchedule *layer)
{
    struct {
        char tag[8];
        const SimparSchedule *layer;
        SimparGpu gpu;
    } key;

    memset(&key, 0, sizeof key);
    memcpy(key.tag, "compute", sizeof key.tag);
    key.layer = layer; /* the cache's own layer: it lives as long as this entry */
    memcpy(&key.gpu, ctx->gpu, sizeof key.gpu); /* as the block times' key holds it */
    const char *kept = simpar_predict_cache_text(ctx->cache, &key, sizeof key);
    if (kept != NULL)
        return g_strdup(kept);
    char *text = simpar_compute_describe(ctx->gpu, layer);
    simpar_predict_cache_put_text(ctx->cache, &key, sizeof key, text);
    return text; /* (transfer full) */
}

/* The step of a configuration that fits, with its derived figures; FALSE with *why set when
 * simulating it would exceed the time budget. */
static gboolean
predict_simulate(const SimparPredictContext *ctx, const SimparModel *model,
                 const SimparTrain *train, const SimparSchedule *layer, SimparReportRow *row,
                 GError **why)
{
    row->step.split = predict_split(train);
    simpar_report_config_init(&row->config, model, train);
    g_autofree char *what = g_strconcat(row->gen->name, " ", row->grid, NULL);
    if (!predict_step(ctx, model, train, layer, what, row, NULL, why))
        return FALSE;
    row->step.mfu = row->model_flops / row->step_s / ctx->gpus / ctx->gpu->peak_flops[model->dtype];
    row->step.compute = predict_compute_text(ctx, layer);
    if (train->schedule == SIMPAR_PIPE_LOCAL) { /* next to pipelining of the same split */
        SimparTrain pipe = *train;
        pipe.schedule = SIMPAR_PIPE_1F1B;
        pipe.local_async = FALSE;
        if (!predict_step(ctx, model, &pipe, layer, what, NULL, &row->step.pipeline_step_s, why))
            return FALSE;
    }
    if (ctx->steps_to_target != G_MININT64) {
        row->step.steps_to_target = (double) ctx->steps_to_target;
        row->step.time_to_target_s = row->step.steps_to_target * row->step_s;
        row->step.gpu_hours_to_target = row->step.time_to_target_s * ctx->gpus / 3600;
    }
    return TRUE;
}

/* DeepEP's hops (--moe-dispatcher deepep) run over Megatron-Core's TP x EP group (tp_ep: the
 * ep x etp ranks of the MoE block, rank e etp + t; MoEFlexTokenDispatcher), which must be
 * whole nodes of R consecutive group ranks (the rail peers are group ranks l, R + l, ...):
 * train->ep_node = R, else FALSE with *why set. */
static gboolean
predict_ep_nodes(const SimparNet *net, SimparTrain *train, GError **why)
{
    guint ep = (guint) MAX(train->ep, 1), etp = (guint) MAX(train->etp, 1), G = ep * etp;
    guint nodes = 0;
    g_autoptr(GHashTable) seen = g_hash_table_new(NULL, NULL);
    for (guint i = 0; i < G; i++) {
        guint node = simpar_net_node(net, simpar_train_expert_rank(train, i % etp, i / etp, 0, 0));
        if (g_hash_table_add(seen, GUINT_TO_POINTER(node + 1)))
            nodes++;
    }
    guint R = G / MAX(nodes, 1u);
    gboolean whole = G % MAX(nodes, 1u) == 0;
    for (guint i = 0; whole && i < G; i++) {
        guint j = i / R * R; /* the first group rank of i's node */
        guint node = simpar_net_node(net, simpar_train_expert_rank(train, i % etp, i / etp, 0, 0));
        whole =
            node == simpar_net_node(net, simpar_train_expert_rank(train, j % etp, j / etp, 0, 0));
    }
    if (whole) {
        train->ep_node = R;
        return TRUE;
    }
    g_autofree char *group =
        etp > 1 ? g_strdup_printf("TP x EP group (--ep %u x --etp %u = %u ranks)", ep, etp, G)
                : g_strdup_printf("expert-parallel group (--ep %u)", ep);
    g_set_error(why, SIMPAR_PREDICT_ERROR, SIMPAR_PREDICT_ERROR_REFUSED,
                "--moe-dispatcher deepep: the %s spans %u nodes unevenly; DeepEP's rail needs "
                "each node to hold the same number of consecutive %s ranks (valid: an %s that "
                "fills whole nodes, or --moe-dispatcher alltoall)",
                group, nodes, etp > 1 ? "group" : "EP", etp > 1 ? "--ep x --etp" : "--ep");
    return FALSE;
}

/* DeepEP's nodes (predict_ep_nodes): FALSE with *why set where its rail cannot run. Group-limited
 * routing (--expert-groups G, --group-limit M) selects M of G groups of experts per token, as
 * Megatron-Core's group_limited_topk does (megatron/core/transformer/moe/moe_utils.py), wherever
 * those experts live: a limit above the nodes the expert-parallel group spans (DeepSeek-V3's 4 of
 * 8 groups with EP 64 in one NVLink domain, or EP 8 on one node) limits no traffic, and the
 * traffic is what the routed experts' ranks make it. */
static gboolean
predict_node_limit(const SimparPredictContext *ctx, const SimparModel *model, SimparTrain *train,
                   GError **why)
{
    if (!simpar_model_is_moe(model) || train->moe_dispatcher != SIMPAR_MOE_DEEPEP)
        return TRUE;
    return predict_ep_nodes(simpar_platform_net(ctx->platform), train, why);
}

/* An MoE model's dense layers (--dense-layers, --moe-every) are timed as their own layer
 * (simpar_generate_dense_layer): FALSE with *why set where the mode cannot split it. */
static gboolean
predict_dense_valid(const SimparModel *model, const SimparPlan *plan, GError **why)
{
    if (!simpar_model_has_dense_layers(model))
        return TRUE;
    SimparModel dense;
    simpar_model_dense_layer(model, &dense);
    SimparPlan copy = *plan;
    copy.ep = 0;
    if (plan->gen->validate(&dense, &copy, why))
        return TRUE;
    g_prefix_error(why, "the dense layers (--dense-layers, --moe-every): ");
    return FALSE;
}

gboolean
simpar_predict_config(const SimparPredictContext *ctx, const SimparModel *model, SimparTrain *train,
                      SimparReportRow *row, GError **why, GError **error)
{
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    g_return_val_if_fail(why != NULL && *why == NULL, FALSE);
    const SimparGenerator *gen = train->tp.gen;
    *row = (SimparReportRow){.gen = gen, .gpus = ctx->gpus, .mem_capacity_B = ctx->gpu->mem_bytes};
    train->fp8_any_layout = ctx->gpu->fp8_any_layout != 0; /* the FP8 weight copies it holds */
    if (!gen->validate(model, &train->tp, why) ||
        !simpar_generator_validate_attention(model, &train->tp, why) ||
        !predict_dense_valid(model, &train->tp, why)) {
        row->grid = g_strdup("-");
        return TRUE;
    }
    row->grid = simpar_predict_grid(&train->tp);
    if (!simpar_train_validate(train, model, ctx->gpus, why) ||
        !predict_node_limit(ctx, model, train, why))
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
    if (mem.total_B > ctx->gpu->mem_bytes && !ctx->over_capacity) {
        g_set_error(why, SIMPAR_PREDICT_ERROR, SIMPAR_PREDICT_ERROR_REFUSED,
                    "%s %s: does not fit in GPU memory: needs %.2f GiB per GPU on pipeline "
                    "stage %u (states %.2f, activations %.2f, transient %.2f), the %s has %.2f GiB",
                    row->gen->name, row->grid, mem.total_B / (1 << 30), row->step.peak_stage,
                    mem.states_B / (1 << 30), mem.activations_B / (1 << 30),
                    mem.transient_B / (1 << 30), ctx->gpu->model, ctx->gpu->mem_bytes / (1 << 30));
        return TRUE;
    }
    (void) predict_simulate(&cached, model, train, layer, row, why); /* or *why */
    return TRUE;
}
