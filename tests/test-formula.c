/* test-formula.c - the formula backend (predict/step-formula.h) against the analytic backend's
 * replay and against closed forms:
 *
 *   grid       on topologies/dgx-a100x64.xml and v100x64.xml, a 24-layer tiny model: GPipe,
 *              1F1B, interleaved (v = 2, 3) x P x D x m (up to 96: the probes' extrapolation
 *              included), with ZeRO 0-2, overlap, tied embeddings, scatter/gather, small
 *              buckets, rank orders and 1-D (+SP) / 2-D / 2.5-D / 3-D plans dealt out over it:
 *              the step and every breakdown term agree with the analytic backend's within
 *              FORMULA_TOL of the step, every case in closed forms, and the analytic figures
 *              do not depend on the cache
 *   uneven     22, 25 and 31 layers over 3, 5, 7 and 16 stages (and Megatron-Core's first and
 *              last stage counts, and its split with the embedding and the loss accounted over
 *              4 and 7 stages), GPipe, 1F1B and interleaved, m from 1 to 300 (m < P
 *              included): the row (GPipe's and 1F1B's from their items' times, interleaved's
 *              from periodic probes) is the evaluation at m and the analytic replay's within
 *              FORMULA_TOL; so are Megatron-Core's layouts (--pipeline-model-parallel-layout)
 *              and accounted splits whose chunks hold no decoder layer (the embedding alone,
 *              the loss alone, an empty middle chunk) over P x v
 *   oracles    on a network that costs nothing: 1F1B and GPipe take (m + P - 1)(tF + tB) with a
 *              bubble fraction (P - 1) / (m + P - 1), interleaved m (tF + tB) + (P - 1)(tF + tB)
 *              / v, up to m = 4096 (extrapolated); data-parallel reductions after the backward
 *              add the same tail to every m; ranks on unlike routes against the replay
 *   moe        a tiny MoE model over EP, ETP, top-k, capacity, imbalance, shared experts, dense
 *              first layers, --moe-every, the all-to-all, DeepEP and all-gather dispatchers, P x D,
 * ZeRO 0-2, recomputation and the schedules, on dgx-h100x64 and v100x64 (fp16): every row the
 * analytic replay's within FORMULA_TOL, the merged 1F1B
 *              (--overlap-moe-expert-parallel-comm) alone replayed
 *   fallbacks  local parallelism, ZeRO-3, exact collectives and MoE dispatchers the closed forms
 *              do not list are left to the replay
 *   cli        simpar predict and simpar sweep --backend formula print the analytic numbers
 */
#include "app/csv-table.h"
#include "app/sweep/sweep.h"
#include "cli-run.h"
#include "generators.h"
#include "predict/predict-config.h"
#include "predict/step-formula.h"
#include "simpar-test.h"
#include <json-glib/json-glib.h>
#include <math.h>

/* The closed forms reproduce the replay's sums in its order, but extrapolated figures differ
 * from the replay's sums of m terms by rounding: relative to the step. */
#define FORMULA_TOL 1e-9

/* ----- the grid, in a platform's child process ----- */

/* The tensor-parallel plans dealt out: mode, T, and the 2.5-D depth or "sp". */
static const char *const grid_plans[] = {"1d 2", "1d 4 sp", "2d 4", "3d 8", "1d 1", "2.5d 8 2"};

/* Configuration i of the grid: schedule x P x D x m in full, the rest dealt out by i. */
typedef struct {
    SimparPipeSchedule schedule;
    guint v, P, D, m, zero;
    gboolean overlap, tied, sg, small_buckets, order, fp8;
    gboolean llama;   /* 8 heads on 4 key/value heads, SwiGLU, RMSNorm */
    guint uneven;     /* 1: 22 layers (ends one short), 2: a first stage one layer short */
    gboolean big;     /* GPT-3 1.3B (24 layers) with selective recomputation, not tiny */
    const char *mode; /* interned */
    gint64 tp, depth;
    gboolean sp;
    guint layers, first, last; /* > 0: the model's layers, the first and last stages' */
    guint accounted;    /* 1: the embedding, 2: the loss, 3: both counted in the pipeline split */
    const char *layout; /* --pipeline-model-parallel-layout, or NULL */
} GridCase;

static const guint grid_ps[] = {1, 2, 4}, grid_ds[] = {1, 2, 4}, grid_ms[] = {1, 3, 8, 40, 96};
#define GRID_KINDS 4 /* gpipe, 1f1b, interleaved v = 2, interleaved v = 3 */
#define GRID_N     (GRID_KINDS * 3 * 3 * 5)

/* Past the grid: long pipelines of uneven stages, where the steady state comes late (24 layers
 * over 16 stages: 1 or 2 each; 22 over 8 and over 8 x 2 chunks). GPT-3 1.3B with selective
 * recomputation over 16 stages leaves the line through m = 32, 33, 64, 65 by 0.37% at 256: the
 * figures come from probes that formula_periodic finds periodic (m = 600 and 1000: past their
 * first probes twice; with replicas, ZeRO-1 and tied embeddings, whose reductions end the step). */
#define GRID_LONG 7

static void
grid_case_long(guint i, GridCase *c)
{
    static const SimparPipeSchedule sched[GRID_LONG] = {
        SIMPAR_PIPE_1F1B, SIMPAR_PIPE_GPIPE, SIMPAR_PIPE_1F1B,       SIMPAR_PIPE_INTERLEAVED,
        SIMPAR_PIPE_1F1B, SIMPAR_PIPE_GPIPE, SIMPAR_PIPE_INTERLEAVED};
    static const guint ms[GRID_LONG] = {256, 256, 256, 256, 1000, 600, 512};
    *c = (GridCase){.schedule = sched[i],
                    .v = sched[i] == SIMPAR_PIPE_INTERLEAVED ? 2 : 1,
                    .P = i < 2 || i == 4 ? 16 : 8,
                    .D = i < 4 ? 1 : 2,
                    .m = ms[i],
                    .zero = i < 4 ? 0 : 1,
                    .tied = i >= 4,
                    .uneven = i < 2 || i == 4 ? 0 : 1,
                    .big = i == 0 || i == 4,
                    .mode = g_intern_static_string("1d"),
                    .tp = i == 2 || i == 5 ? 2 : 1};
}

static void
grid_case(guint i, GridCase *c)
{
    if (i >= GRID_N) {
        grid_case_long(i - GRID_N, c);
        return;
    }
    guint k = i / 45, rest = i % 45, P = grid_ps[rest / 15], D = grid_ds[rest / 5 % 3];
    guint m = grid_ms[rest % 5];
    if (k >= 2) /* interleaved: P >= 2, m a multiple of P */
        P = MAX(P, 2), m = (m + P - 1) / P * P;
    *c = (GridCase){.schedule = k == 0   ? SIMPAR_PIPE_GPIPE
                                : k == 1 ? SIMPAR_PIPE_1F1B
                                         : SIMPAR_PIPE_INTERLEAVED,
                    .v = k < 2 ? 1 : k,
                    .P = P,
                    .D = D,
                    .m = m,
                    /* no ZeRO without replicas (models/step.c asserts), ZeRO-2 without stages */
                    .zero = D == 1 ? 0 : i % (P > 1 ? 2 : 3),
                    .overlap = i / 3 % 2,
                    .tied = i / 6 % 2 && P > 1, /* P = 1: models/step.c asserts */
                    .sg = i % 5 == 1,
                    .small_buckets = i % 4 == 0,
                    .order = i % 7 == 3,
                    .llama = i % 3 == 1,
                    .uneven = i % 8 == 5   ? 1
                              : i % 8 == 6 ? 2
                                           : 0,
                    .sp = strstr(grid_plans[i % G_N_ELEMENTS(grid_plans)], "sp") != NULL};
    char mode[8];
    guint n = sscanf(grid_plans[i % G_N_ELEMENTS(grid_plans)],
                     "%7s %" G_GINT64_FORMAT " %" G_GINT64_FORMAT, mode, &c->tp, &c->depth);
    g_assert(n >= 2);
    c->mode = g_intern_string(mode);
}

/* The model and split of a case; FALSE when the split cannot be (T P D > 64, P v > layers). */
static gboolean
grid_setup(const GridCase *c, SimparModel *model, SimparTrain *tr)
{
    g_assert(simpar_model_preset(c->big ? "gpt3-1.3b" : "tiny", model, NULL));
    model->layers = 24;
    if (c->llama)
        model->heads = 8, model->kv_heads = 4, model->mlp = SIMPAR_MLP_SWIGLU,
        model->norm = SIMPAR_NORM_RMSNORM, model->no_bias = TRUE;
    simpar_train_init(tr);
    tr->tp.gen = simpar_generator_of(c->mode), tr->tp.tp = c->tp, tr->tp.depth = c->depth;
    tr->tp.sequence_parallel = c->sp;
    if (c->big)
        tr->tp.recompute = SIMPAR_RECOMPUTE_SELECTIVE, model->micro_batch = 1;
    tr->schedule = c->schedule, tr->virtual_stages = c->v;
    tr->pp = c->P, tr->dp = c->D, tr->global_batch = (gint64) c->m * model->micro_batch * c->D;
    tr->zero = (gint) c->zero, tr->overlap_grad_reduce = c->overlap;
    tr->tied_embeddings = c->tied, tr->scatter_gather = c->sg;
    tr->bucket_params = c->small_buckets ? 20000 : 0;
    if (c->order) /* pipeline innermost: stages side by side in a node */
        g_assert(simpar_train_order_parse("pp,tp,dp", tr->order, NULL));
    if (c->uneven == 1) /* layers not divisible by the stages: the ends one layer short */
        model->layers = 22;
    else if (c->uneven == 2 && c->P > 1) /* Megatron-Core's shorter first stage */
        tr->first_stage_layers = model->layers / c->P - 1;
    if (c->layers > 0)
        model->layers = c->layers;
    tr->first_stage_layers = c->first > 0 ? c->first : tr->first_stage_layers;
    tr->last_stage_layers = c->last;
    tr->account_embedding = (c->accounted & 1) != 0, tr->account_loss = (c->accounted & 2) != 0;
    tr->layout = c->layout != NULL ? g_intern_string(c->layout) : NULL;
    return c->tp * c->P * c->D <= 64 &&
           (c->P * c->v <= (guint) model->layers || c->layout != NULL || c->accounted > 0);
}

typedef struct {
    guint n, used, fell_back;
    double max_step, max_term;
    guint worst;
    GString *bad; /* one line per disagreement */
} GridResult;

/* |a - b| relative to `scale`, noted when it is the worst so far. */
static double
grid_rel(double a, double b, double scale)
{
    return scale > 0 ? fabs(a - b) / scale : fabs(a - b);
}

/* The largest difference between two rows' breakdowns, relative to the step. */
static double
grid_terms(const SimparReportRow *a, const SimparReportRow *b)
{
    double s = a->step_s, worst = 0;
    const double pairs[][2] = {
        {a->forward_s, b->forward_s},
        {a->backward_s, b->backward_s},
        {a->compute_s, b->compute_s},
        {a->other_s, b->other_s},
        {a->exposed_s, b->exposed_s},
        {a->exposed_intra_s, b->exposed_intra_s},
        {a->exposed_inter_s, b->exposed_inter_s},
        {a->step.tp_exposed_s, b->step.tp_exposed_s},
        {a->step.bubble_s, b->step.bubble_s},
        {a->step.pp_p2p_s, b->step.pp_p2p_s},
        {a->step.dp_exposed_s, b->step.dp_exposed_s},
        {a->step.optimizer_s, b->step.optimizer_s},
        {a->step.mfu * s, b->step.mfu * s},
    };
    for (guint i = 0; i < G_N_ELEMENTS(pairs); i++)
        worst = MAX(worst, grid_rel(pairs[i][0], pairs[i][1], s));
    worst =
        MAX(worst, grid_rel(a->comm_bytes_per_gpu, b->comm_bytes_per_gpu, a->comm_bytes_per_gpu) *
                       FORMULA_TOL / 1e-12); /* bytes: integers, 1e-12 of themselves */
    if (a->axes->len != b->axes->len || g_strcmp0(a->step.placement, b->step.placement) != 0)
        return INFINITY;
    for (guint i = 0; i < a->axes->len; i++) {
        const SimparAxisTime *x = &g_array_index(a->axes, SimparAxisTime, i);
        const SimparAxisTime *y = &g_array_index(b->axes, SimparAxisTime, i);
        if (x->axis != y->axis || x->inter != y->inter)
            return INFINITY;
        worst = MAX(worst, grid_rel(x->exposed_s, y->exposed_s, s));
    }
    return worst;
}

static gboolean
grid_same(const SimparReportRow *a, const SimparReportRow *b)
{
    return a->step_s == b->step_s && grid_terms(a, b) == 0;
}

/* Whether the formula's closed forms serve the case (TRUE) or leave it to the replay. */
static gboolean
grid_used(const SimparPredictContext *ctx, SimparPredictCache *cache, const SimparModel *model,
          const SimparTrain *train)
{
    SimparStepTimer tm = {ctx->backend, ctx->run, ctx->gpu, ctx->attention};
    tm.base.net = simpar_platform_net(ctx->platform);
    SimparMemory mem;
    const SimparSchedule *layer =
        simpar_predict_cache_layer(cache, model, &train->tp, ctx->attention, &mem, NULL);
    SimparBlockTimes bt = {0};
    simpar_predict_cache_blocks(cache, &tm, model, train, layer, &bt);
    double step;
    gboolean used = simpar_step_formula(&tm, &bt, model, train, layer, cache, NULL, &step);
    simpar_block_times_clear(&bt);
    return used;
}

/* Notes how the formula's row f and the analytic rows a (no cache) and c (cache) of case i
 * (`what`: its split in words) compare. */
static void
grid_note(GridResult *res, guint i, const char *what, const SimparReportRow *a,
          const SimparReportRow *c, const SimparReportRow *f, gboolean used)
{
    double d_step = grid_rel(f->step_s, a->step_s, a->step_s), d_term = grid_terms(a, f);
    res->n++, res->used += used, res->fell_back += !used;
    if (d_step > res->max_step || d_term > res->max_term)
        res->worst = i;
    res->max_step = MAX(res->max_step, d_step), res->max_term = MAX(res->max_term, d_term);
    if (grid_same(a, c) && d_step <= FORMULA_TOL && d_term <= FORMULA_TOL)
        return;
    g_string_append_printf(res->bad, "case %u (%s): step %.12g vs %.12g, terms %.3g%s\n", i, what,
                           f->step_s, a->step_s, d_term,
                           grid_same(a, c) ? "" : "; the cache changed analytic");
}

static char *
grid_what(const GridCase *k)
{
    return g_strdup_printf("%s T=%" G_GINT64_FORMAT " %s v=%u P=%u D=%u m=%u ZeRO-%u%s%s%s%s%s",
                           k->mode, k->tp, simpar_pipe_schedule_name(k->schedule), k->v, k->P, k->D,
                           k->m, k->zero, k->overlap ? " overlap" : "", k->tied ? " tied" : "",
                           k->sg ? " sg" : "", k->llama ? " llama" : "",
                           k->uneven == 1   ? " 22 layers"
                           : k->uneven == 2 ? " short first stage"
                                            : ""); /* (transfer full) */
}

/* Case i (`what`) on the platform: the analytic row without and with a cache, the formula's,
 * noted (nothing when the split is refused). */
static void
grid_compare(const SimparPlatform *platform, const SimparGpu *gpu, SimparPredictCache *cache,
             guint i, const char *what, const SimparModel *model, const SimparTrain *train,
             GridResult *res)
{
    SimparPredictContext ctx = {.attention = SIMPAR_ATTENTION_UNFUSED,
                                .platform = platform,
                                .gpu = gpu,
                                .gpus = (guint) (train->tp.tp * train->pp * train->dp),
                                .steps_to_target = G_MININT64};
    simpar_coll_params_init(&ctx.run.coll);
    ctx.run.mode = SIMPAR_COLL_MODE_FUSED;
    SimparReportRow row[3];
    const char *backends[] = {"analytic", "analytic", "formula"};
    guint done = 0;
    for (; done < 3; done++) {
        g_autoptr(GError) why = NULL, error = NULL;
        g_assert(simpar_predict_backend_lookup(backends[done], &ctx.backend, NULL));
        ctx.cache = done == 0 ? NULL : cache;
        SimparTrain t = *train;
        SimparModel mo = *model;
        gboolean ran = simpar_predict_config(&ctx, &mo, &t, &row[done], &why, &error);
        if (!ran)
            printf("\n    case %u (%s): %s", i, what, error->message);
        g_assert(ran);
        if (why != NULL) { /* refused (e.g. ZeRO-2 with pipeline stages) */
            simpar_predict_row_clear(&row[done]);
            break;
        }
        if (done == 2)
            grid_note(res, i, what, &row[0], &row[1], &row[2], grid_used(&ctx, cache, &mo, &t));
    }
    for (guint k = 0; k < done; k++)
        simpar_predict_row_clear(&row[k]);
}

static void
grid_one(const SimparPlatform *platform, const SimparGpu *gpu, SimparPredictCache *cache, guint i,
         GridResult *res)
{
    GridCase c;
    grid_case(i, &c);
    SimparModel model;
    SimparTrain train;
    if (!grid_setup(&c, &model, &train))
        return;
    g_autofree char *what = grid_what(&c);
    grid_compare(platform, gpu, cache, i, what, &model, &train, res);
}

static gboolean
grid_job(const SimparPlatform *platform, gpointer data, GString *out, GError **error)
{
    (void) data;
    SimparGpu gpu;
    if (!simpar_predict_gpu(platform, 64, NULL, &gpu, error))
        return FALSE;
    g_autoptr(SimparPredictCache) cache = simpar_predict_cache_new();
    GridResult res = {.bad = out};
    for (guint i = 0; i < GRID_N + GRID_LONG; i++)
        grid_one(platform, &gpu, cache, i, &res);
    g_string_append_printf(out, "n=%u used=%u fell_back=%u max_step=%.3g max_term=%.3g worst=%u\n",
                           res.n, res.used, res.fell_back, res.max_step, res.max_term, res.worst);
    return TRUE;
}

/* Runs `job` on `topology` into `out` and returns its "n=..." summary line (a failed run or a
 * text without one fails the test). */
static const char *
job_summary(const char *topology, SimparPlatformJob job, gpointer data, GString *out)
{
    g_autoptr(GError) error = NULL;
    gboolean ran = simpar_platform_run(topology, job, data, out, &error);
    if (!ran)
        printf("\n    %s", error->message);
    CU_ASSERT_TRUE_FATAL(ran);
    const char *summary = strstr(out->str, "n=");
    CU_ASSERT_PTR_NOT_NULL_FATAL(summary);
    return summary;
}

/* The grid on `topology`; at least `min_used` of its cases in closed forms. */
static void
grid_on(const char *topology, double min_used)
{
    g_autoptr(GString) out = g_string_new(NULL);
    const char *summary = job_summary(topology, grid_job, NULL, out);
    guint n = 0, used = 0, fell_back = 0;
    double max_step = 1, max_term = 1;
    CU_ASSERT_EQUAL(sscanf(summary, "n=%u used=%u fell_back=%u max_step=%lg max_term=%lg", &n,
                           &used, &fell_back, &max_step, &max_term),
                    5);
    printf("\n    %s: %s", topology, summary);
    if (summary != out->str)
        printf("    %.*s", (int) (summary - out->str), out->str);
    CU_ASSERT(summary == out->str);  /* no case disagreed */
    CU_ASSERT(n == 152 + GRID_LONG); /* the grid's valid cases */
    CU_ASSERT(used >= min_used * n);
    CU_ASSERT(max_step <= FORMULA_TOL);
    CU_ASSERT(max_term <= FORMULA_TOL);
}

/* Nodes of 8 GPUs on NVSwitch, a NIC per GPU. */
static void
test_grid_dgx(void)
{
    grid_on("topologies/dgx-a100x64.xml", 1.0);
}

/* GPUs 2 and 3 of a node reach the NIC over the X-bus, 0 and 1 do not: splits whose stages or
 * replicas span nodes see unlike routes, and get a chain per (t, d). */
static void
test_grid_v100(void)
{
    grid_on("topologies/v100x64.xml", 1.0);
}

/* ----- mixtures of experts: the experts' step against the replay ----- */

/* A tiny MoE model (8 layers, 8 experts) over expert parallelism, expert tensor parallelism,
 * top-k, capacity, imbalance, shared experts (overlapped or not), dense first layers and
 * --moe-every, the all-to-all, DeepEP and all-gather dispatchers, P x D, ZeRO 0-2, recomputation
 * and the schedules, dealt out by i; --overlap-moe-expert-parallel-comm (the merged 1F1B) is left
 * to the replay. */
#define MOE_N      96
#define MOE_MERGED 4 /* past the grid: the merged 1F1B's splits (P = 1 or interleaved, EP >= 2) */
/* then stages of as many layers but other dense ones (16 layers, dense 2 then every second
 * over 4 stages): uneven stages, 1F1B and GPipe from their stages' items (test_cli_moe_kinds
 * holds a split whose probes lay on a line the step leaves) */
#define MOE_KINDS 3

typedef struct {
    SimparPipeSchedule schedule;
    guint v, P, D, m, zero, ep, etp, tp, top_k, dense, every, recompute;
    double capacity, imbalance;
    gboolean shared, shared_overlap, deepep, allgather, overlap, merged, small_buckets, fp8, bf16;
    guint layers; /* 0: 8 */
} MoeCase;

static void
moe_case(guint i, MoeCase *c)
{
    if (i >= MOE_N + MOE_MERGED) {
        guint k = i - MOE_N - MOE_MERGED;
        *c = (MoeCase){.schedule = k == 0   ? SIMPAR_PIPE_1F1B
                                   : k == 1 ? SIMPAR_PIPE_GPIPE
                                            : SIMPAR_PIPE_INTERLEAVED,
                       .v = k == 2 ? 2 : 1,
                       .P = 4,
                       .D = 2,
                       .m = k == 0 ? 32 : 96,
                       .ep = 2,
                       .etp = 1,
                       .tp = 2,
                       .top_k = 2,
                       .dense = 2,
                       .every = 2,
                       .shared = TRUE,
                       .layers = 16};
        return;
    }
    if (i >= MOE_N) { /* bf16, no shared-expert overlap, no full recomputation (train.c) */
        guint k = i - MOE_N;
        *c = (MoeCase){.schedule = k < 2 ? SIMPAR_PIPE_1F1B : SIMPAR_PIPE_INTERLEAVED,
                       .v = k < 2 ? 1 : 2,
                       .P = k < 2 ? 1 : 2,
                       .D = k % 2 ? 8 : 4,
                       .m = k < 2 ? 8 : 6,
                       .zero = k % 2,
                       .ep = k % 2 ? 8 : 2,
                       .etp = 1,
                       .tp = 1,
                       .top_k = 2,
                       .dense = k == 1,
                       .recompute = k == 2 ? 1 : 0,
                       .shared = k >= 2,
                       .overlap = k == 3,
                       .merged = TRUE,
                       .bf16 = TRUE};
        return;
    }
    static const guint ps[] = {1, 2, 4}, ds[] = {8, 2, 4, 1}, ms[] = {1, 3, 8, 40};
    static const guint eps[] = {1, 2, 4, 8};
    guint k = i % 4, P = ps[i / 4 % 3], D = ds[i / 12 % 4], m = ms[i / 3 % 4];
    guint tp = i % 5 == 2 ? 2 : 1, ep = MIN(eps[i / 2 % 4], tp * D);
    if (k >= 2) /* interleaved: P >= 2, m a multiple of P */
        P = MAX(P, 2), m = (m + P - 1) / P * P;
    *c = (MoeCase){.schedule = k == 0   ? SIMPAR_PIPE_GPIPE
                               : k == 1 ? SIMPAR_PIPE_1F1B
                                        : (k == 2 ? SIMPAR_PIPE_INTERLEAVED : SIMPAR_PIPE_1F1B),
                   .v = k == 2 ? 2 : 1,
                   .P = P,
                   .D = D,
                   .m = m,
                   .zero = D == 1 ? 0 : (i / 12 + i) % (P > 1 ? 2 : 3), /* ZeRO-2: no stages */
                   .ep = ep,
                   .etp = tp == 2 && i % 3 == 0 ? 2 : 1,
                   .tp = tp,
                   .top_k = i % 3 == 2 ? 1 : 2,
                   .dense = i % 6 == 1 ? 1 : (i % 6 == 4 ? 3 : 0),
                   .every = i % 5 == 3 ? 2 : 0,
                   .recompute = i % 7,
                   .capacity = i % 4 == 1 ? 1.25 : 0,
                   .imbalance = i % 3 == 1 ? 1.5 : 0,
                   .shared = i % 2 == 1,
                   .shared_overlap = i % 4 == 3,
                   .deepep = ep == 8 && i % 2 == 0,
                   /* Megatron-Core runs neither overlap with the all-gather dispatcher */
                   .allgather = ep > 1 && !(ep == 8 && i % 2 == 0) && i % 3 != 2 &&
                                !(k == 3 && i % 8 == 7) && i % 4 != 3,
                   .overlap = i / 3 % 2,
                   .merged = k == 3 && i % 8 == 7,
                   .small_buckets = i % 4 == 0,
                   .fp8 = i % 11 == 5,
                   .bf16 = i % 3 == 0};
}

/* The case's model and split; `volta`: fp16 for bf16, no FP8 (V100s have neither). */
static gboolean
moe_setup(const MoeCase *c, gboolean volta, SimparModel *model, SimparTrain *tr)
{
    g_assert(simpar_model_preset("tiny", model, NULL));
    model->layers = c->layers > 0 ? c->layers : 8;
    model->moe.experts = 8, model->moe.top_k = c->top_k;
    model->moe.moe_ffn = c->layers > 0 ? 2048 : 128; /* the long cases' MoE layers the slower */
    model->moe.shared_ffn = c->shared ? 128 : 0, model->moe.shared_overlap = c->shared_overlap;
    model->moe.dense_layers = c->dense, model->moe.moe_every = c->every;
    model->moe.capacity = c->capacity, model->moe.imbalance = c->imbalance;
    if (c->fp8 || c->bf16) /* else tiny's fp32 */
        model->dtype = volta ? SIMPAR_DTYPE_FP16 : SIMPAR_DTYPE_BF16,
        model->fp8 = c->fp8 && !volta ? SIMPAR_FP8_DELAYED : SIMPAR_FP8_NONE;
    simpar_train_init(tr);
    tr->tp.gen = simpar_generator_of("1d"), tr->tp.tp = c->tp;
    tr->tp.sequence_parallel = c->tp > 1; /* Megatron-LM's, with tensor and expert parallelism */
    tr->tp.recompute = c->recompute % 3 == 1   ? SIMPAR_RECOMPUTE_SELECTIVE
                       : c->recompute % 3 == 2 ? SIMPAR_RECOMPUTE_FULL
                                               : SIMPAR_RECOMPUTE_NONE;
    if (c->recompute == 4) /* the MoE block's routed experts' activation, the shared experts */
        tr->tp.recompute_modules = SIMPAR_RECOMPUTE_MOE_ACT | SIMPAR_RECOMPUTE_SHARED_EXPERTS;
    tr->ep = c->ep, tr->etp = c->etp;
    tr->moe_dispatcher = c->deepep      ? SIMPAR_MOE_DEEPEP
                         : c->allgather ? SIMPAR_MOE_ALLGATHER
                                        : SIMPAR_MOE_ALLTOALL;
    tr->ep_overlap = c->merged;
    tr->schedule = c->schedule, tr->virtual_stages = c->v;
    tr->pp = c->P, tr->dp = c->D, tr->global_batch = (gint64) c->m * model->micro_batch * c->D;
    tr->zero = (gint) c->zero, tr->overlap_grad_reduce = c->overlap;
    tr->bucket_params = c->small_buckets ? 20000 : 0;
    return c->tp * c->P * c->D <= 64 && c->P * c->v <= (guint) model->layers;
}

static char *
moe_what(const MoeCase *k)
{
    return g_strdup_printf(
        "T=%u %s v=%u P=%u D=%u m=%u ZeRO-%u EP=%u ETP=%u top-%u dense %u every %u recompute "
        "%u capacity %g imbalance %g%s%s%s%s%s%s%s%s%s",
        k->tp, simpar_pipe_schedule_name(k->schedule), k->v, k->P, k->D, k->m, k->zero, k->ep,
        k->etp, k->top_k, k->dense, k->every, k->recompute, k->capacity, k->imbalance,
        k->shared ? " shared" : "", k->shared_overlap ? " shared-overlap" : "",
        k->deepep ? " deepep" : "", k->allgather ? " allgather" : "", k->overlap ? " overlap" : "",
        k->merged ? " merged" : "", k->small_buckets ? " small-buckets" : "", k->fp8 ? " fp8" : "",
        k->bf16 && !k->fp8 ? " bf16" : ""); /* (transfer full) */
}

static gboolean
moe_job(const SimparPlatform *platform, gpointer data, GString *out, GError **error)
{
    gboolean volta = data != NULL;
    SimparGpu gpu;
    if (!simpar_predict_gpu(platform, 64, NULL, &gpu, error))
        return FALSE;
    g_autoptr(SimparPredictCache) cache = simpar_predict_cache_new();
    GridResult res = {.bad = out};
    guint merged = 0, allgather = 0;
    for (guint i = 0; i < MOE_N + MOE_MERGED + MOE_KINDS; i++) {
        MoeCase c;
        moe_case(i, &c);
        SimparModel model;
        SimparTrain train;
        if (!moe_setup(&c, volta, &model, &train))
            continue;
        g_autofree char *what = moe_what(&c);
        guint n = res.n;
        grid_compare(platform, &gpu, cache, i, what, &model, &train, &res);
        merged += c.merged && res.n > n;
        allgather += c.allgather && res.n > n;
    }

    g_string_append_printf(out,
                           "n=%u used=%u fell_back=%u max_step=%.3g max_term=%.3g worst=%u "
                           "merged=%u allgather=%u\n",
                           res.n, res.used, res.fell_back, res.max_step, res.max_term, res.worst,
                           merged, allgather);
    return TRUE;
}

/* Every MoE case but the merged 1F1B's in closed forms on `topology`, each the analytic
 * replay's. */
static void
moe_on(const char *topology, gboolean volta)
{
    g_autoptr(GString) out = g_string_new(NULL);
    const char *summary = job_summary(topology, moe_job, volta ? GINT_TO_POINTER(1) : NULL, out);
    guint n = 0, used = 0, fell_back = 0, merged = 0, worst = 0, allgather = 0;
    double max_step = 1, max_term = 1;
    CU_ASSERT_EQUAL(sscanf(summary,
                           "n=%u used=%u fell_back=%u max_step=%lg max_term=%lg worst=%u merged=%u "
                           "allgather=%u",
                           &n, &used, &fell_back, &max_step, &max_term, &worst, &merged,
                           &allgather),
                    8);
    printf("\n    %s", out->str);
    CU_ASSERT(summary == out->str); /* no case disagreed */
    CU_ASSERT(n >= 60 && merged == MOE_MERGED && allgather >= 10);
    CU_ASSERT(fell_back == merged); /* the merged 1F1B's, and no other */
    CU_ASSERT(max_step <= FORMULA_TOL && max_term <= FORMULA_TOL);
}

static void
test_moe(void)
{
    moe_on("topologies/dgx-h100x64.xml", FALSE);
}

/* The V100 platform: fp16 for bf16, no FP8 (test_unlike_routes holds a chain per (t, d), the
 * experts' groups across them). */
static void
test_moe_v100(void)
{
    moe_on("topologies/v100x64.xml", TRUE);
}

/* ----- uneven stages: the closed forms in m against the evaluation at m and the replay ----- */

/* Layers over stages that do not divide them, or with Megatron-Core's first and last stage
 * counts, GPipe, 1F1B and interleaved (v = 2 where P v <= layers), m from 1 to past the probes
 * (m < P included): the formula's row (closed forms in m: GPipe's flow shops, 1F1B's and
 * interleaved's periodic probes) against its evaluation at m and the analytic replay. */
static const guint uneven_layers[] = {22, 25, 31}, uneven_ps[] = {3, 5, 7, 16};
static const guint uneven_ms[] = {1, 2, 3, 4, 6, 15, 16, 19, 49, 97, 300};
/* Megatron-Core's accounted splits (--account-for-embedding-in-pipeline-split, --account-for-
 * loss-in-pipeline-split): 24 - e - l layers over 4 stages, 28 - e - l over 7, 1F1B and
 * interleaved (v = 2), the embedding, the loss or both counted (the FP8 cases refused, as the
 * grid's: the tiny model is fp16) */
static const guint accounted_ps[] = {4, 7}, accounted_ms[] = {1, 3, 6, 16, 49, 300};
#define UNEVEN_N                                                                                   \
    (G_N_ELEMENTS(uneven_ms) * 3 * G_N_ELEMENTS(uneven_ps) * G_N_ELEMENTS(uneven_layers))
#define ACCOUNTED_N (G_N_ELEMENTS(accounted_ms) * 2 * 3 * G_N_ELEMENTS(accounted_ps))

/* Megatron-Core's layouts (--pipeline-model-parallel-layout), chunks that hold no decoder layer
 * among them: the embedding alone, the loss alone, an empty middle chunk, both ends, over
 * P x v; and accounted splits that leave the ends no decoder layer (2 + 2 over 4 chunks, 6 + 2
 * over 4 x 2). Each with GPipe (v = 1), 1F1B (v = 1) or interleaved (v = 2). */
static const struct {
    guint P, v, layers, accounted;
    const char *layout;
} layout_cases[] = {
    {4, 1, 24, 0, "E|t*8|t*8|t*8,L"},
    {4, 1, 24, 0, "Et*8|t*8|t*8|L"},
    {7, 1, 24, 0, "E|(t*4|)*5t*4L"},
    {3, 1, 24, 0, "Et*10|t*10|t*4L"},
    {4, 2, 18, 0, "E|(t*3|)*6,L"},
    {4, 2, 20, 0, "Et*2|t*4|t*3||t*5|t*3|t*2|tL"},
    {2, 2, 24, 0, "E|t*12|t*12|L"},
    {4, 2, 24, 0, "Et*4|(t*2|)*5t*5|t*5L"},
    {4, 1, 2, 3, NULL},
    {4, 2, 6, 3, NULL},
};

static const guint layout_ms[] = {1, 3, 6, 16, 49, 300};
#define LAYOUT_N (G_N_ELEMENTS(layout_ms) * 2 * G_N_ELEMENTS(layout_cases))

typedef struct {
    guint n, flow;   /* cases, and those GPipe or 1F1B with m >= 3 (step-formula-flow.c's) */
    guint accounted; /* cases of an accounted split */
    guint layouts;   /* cases with a chunk of no decoder layer (a layout or an accounted split) */
    double max_full, max_replay;
} UnevenResult;

/* Case j of the accounted splits, after the uneven ones. */
/* What an uneven case i mixes in besides its split: data parallelism, ZeRO, overlap, tied
 * embeddings, bucket sizes, FP8 and tensor parallelism, each on its own period. */
static void
uneven_mix(guint i, GridCase *c)
{
    c->D = i % 3 == 1 ? 2 : 1;
    c->zero = i % 6 == 1;
    c->overlap = i % 4 == 1;
    c->tied = i % 5 == 2;
    c->small_buckets = i % 2 == 0;
    c->fp8 = i % 5 == 4;
    c->mode = g_intern_static_string("1d");
    c->tp = i % 7 == 3 ? 2 : 1;
}

static void
accounted_case(guint j, GridCase *c)
{
    guint n_m = G_N_ELEMENTS(accounted_ms);
    guint m = accounted_ms[j % n_m], k = j / n_m % 2, a = 1 + j / n_m / 2 % 3;
    guint P = accounted_ps[j / n_m / 6 % G_N_ELEMENTS(accounted_ps)];
    if (k == 1) /* interleaved: m a multiple of P */
        m = (m + P - 1) / P * P;
    *c = (GridCase){.schedule = k == 0 ? SIMPAR_PIPE_1F1B : SIMPAR_PIPE_INTERLEAVED,
                    .v = k == 1 ? 2 : 1,
                    .P = P,
                    .m = m,
                    .layers = (P == 4 ? 24 : 28) - (a & 1) - (a >> 1),
                    .accounted = a};
    uneven_mix(j, c);
}

/* Case j of the layouts, after the accounted splits. */
static void
layout_case(guint j, GridCase *c)
{
    guint n_m = G_N_ELEMENTS(layout_ms), k = j / n_m % 2;
    guint idx = (guint) (j / n_m / 2 % G_N_ELEMENTS(layout_cases)), m = layout_ms[j % n_m];
    guint P = layout_cases[idx].P, v = layout_cases[idx].v;
    if (v > 1) /* interleaved: m a multiple of P */
        m = (m + P - 1) / P * P;
    *c = (GridCase){.schedule = v > 1    ? SIMPAR_PIPE_INTERLEAVED
                                : k == 0 ? SIMPAR_PIPE_GPIPE
                                         : SIMPAR_PIPE_1F1B,
                    .v = v,
                    .P = P,
                    .m = m,
                    .layers = layout_cases[idx].layers,
                    .accounted = layout_cases[idx].accounted,
                    .layout = layout_cases[idx].layout};
    uneven_mix(j, c);
}

static void
uneven_case(guint i, GridCase *c)
{
    if (i >= UNEVEN_N + ACCOUNTED_N) {
        layout_case(i - (guint) (UNEVEN_N + ACCOUNTED_N), c);
        return;
    }
    if (i >= UNEVEN_N) {
        accounted_case(i - (guint) UNEVEN_N, c);
        return;
    }
    guint n_m = G_N_ELEMENTS(uneven_ms), n_p = G_N_ELEMENTS(uneven_ps);
    guint m = uneven_ms[i % n_m], k = i / n_m % 3, P = uneven_ps[i / n_m / 3 % n_p];
    guint L = uneven_layers[i / n_m / 3 / n_p % G_N_ELEMENTS(uneven_layers)];
    if (k == 2) /* interleaved: m a multiple of P */
        m = (m + P - 1) / P * P;
    *c = (GridCase){.schedule = k == 0   ? SIMPAR_PIPE_GPIPE
                                : k == 1 ? SIMPAR_PIPE_1F1B
                                         : SIMPAR_PIPE_INTERLEAVED,
                    .v = k == 2 ? 2 : 1,
                    .P = P,
                    .m = m,
                    .sg = i % 7 == 3,
                    .layers = L,
                    .first = i % 4 == 2 ? L / P + 2 : 0,
                    .last = i % 4 == 3 ? MAX(L / P, 2) - 1 : 0};
    uneven_mix(i, c);
}

/* The formula's row of case i: closed forms (with the cache) or evaluated at m (without). */
static gboolean
uneven_row(SimparPredictContext *ctx, const char *backend, SimparPredictCache *cache, gboolean all,
           const SimparModel *model, const SimparTrain *train, SimparReportRow *row)
{
    g_autoptr(GError) why = NULL, error = NULL;
    g_assert(simpar_predict_backend_lookup(backend, &ctx->backend, NULL));
    ctx->cache = cache;
    SimparTrain t = *train;
    SimparModel mo = *model;
    simpar_step_formula_evaluate_all(all);
    gboolean ok = simpar_predict_config(ctx, &mo, &t, row, &why, &error);
    simpar_step_formula_evaluate_all(FALSE);
    if (ok && why != NULL)
        simpar_predict_row_clear(row);
    return ok && why == NULL; /* else refused (a split the stages cannot take) */
}

static gboolean
uneven_job(const SimparPlatform *platform, gpointer data, GString *out, GError **error)
{
    (void) data;
    SimparGpu gpu;
    if (!simpar_predict_gpu(platform, 64, NULL, &gpu, error))
        return FALSE;
    g_autoptr(SimparPredictCache) cache = simpar_predict_cache_new();
    UnevenResult res = {0};
    guint n = (guint) (UNEVEN_N + ACCOUNTED_N + LAYOUT_N);
    for (guint i = 0; i < n; i++) {
        GridCase c;
        uneven_case(i, &c);
        SimparModel model;
        SimparTrain train;
        if (!grid_setup(&c, &model, &train))
            continue;
        if (c.fp8)
            model.fp8 = SIMPAR_FP8_DELAYED;
        SimparPredictContext ctx = {.attention = SIMPAR_ATTENTION_UNFUSED,
                                    .platform = platform,
                                    .gpu = &gpu,
                                    .gpus = (guint) (c.tp * c.P * c.D),
                                    .steps_to_target = G_MININT64};
        simpar_coll_params_init(&ctx.run.coll);
        ctx.run.mode = SIMPAR_COLL_MODE_FUSED;
        SimparReportRow f, e, a;
        if (!uneven_row(&ctx, "formula", cache, FALSE, &model, &train, &f))
            continue; /* refused (a split the stages cannot take) */
        g_assert(uneven_row(&ctx, "formula", NULL, TRUE, &model, &train, &e));
        g_assert(uneven_row(&ctx, "analytic", NULL, FALSE, &model, &train, &a));
        double full = MAX(grid_rel(f.step_s, e.step_s, e.step_s), grid_terms(&e, &f));
        double replay = MAX(grid_rel(f.step_s, a.step_s, a.step_s), grid_terms(&a, &f));
        res.n++, res.flow += c.schedule != SIMPAR_PIPE_INTERLEAVED && c.m >= 3;
        res.accounted += c.accounted > 0 && i < UNEVEN_N + ACCOUNTED_N;
        res.layouts += i >= UNEVEN_N + ACCOUNTED_N;
        res.max_full = MAX(res.max_full, full), res.max_replay = MAX(res.max_replay, replay);
        if (full > FORMULA_TOL || replay > FORMULA_TOL)
            g_string_append_printf(out,
                                   "case %u (%s P=%u D=%u m=%u, %u layers, first %u last %u, "
                                   "accounted %u, layout %s): "
                                   "step %.12g, evaluated %.12g (terms %.3g), replay %.12g "
                                   "(terms %.3g)\n",
                                   i, simpar_pipe_schedule_name(c.schedule), c.P, c.D, c.m,
                                   c.layers, c.first, c.last, c.accounted,
                                   c.layout != NULL ? c.layout : "none", f.step_s, e.step_s,
                                   grid_terms(&e, &f), a.step_s, grid_terms(&a, &f));
        simpar_predict_row_clear(&f), simpar_predict_row_clear(&e), simpar_predict_row_clear(&a);
    }
    g_string_append_printf(
        out, "n=%u flow=%u accounted=%u layouts=%u max_full=%.3g max_replay=%.3g\n", res.n,
        res.flow, res.accounted, res.layouts, res.max_full, res.max_replay);
    return TRUE;
}

static void
test_uneven(void)
{
    g_autoptr(GString) out = g_string_new(NULL);
    const char *summary = job_summary("topologies/dgx-a100x64.xml", uneven_job, NULL, out);
    guint n = 0, flow = 0, accounted = 0, layouts = 0;
    double full = 1, replay = 1;
    CU_ASSERT_EQUAL(sscanf(summary,
                           "n=%u flow=%u accounted=%u layouts=%u max_full=%lg max_replay=%lg", &n,
                           &flow, &accounted, &layouts, &full, &replay),
                    6);
    printf("\n    %s", out->str);
    CU_ASSERT(summary == out->str); /* no case disagreed */
    /* 290 and 173 without the accounted, 348 and 197 without the layouts */
    CU_ASSERT(n == 444 && flow == 237 && accounted == 58 && layouts == 96);
    CU_ASSERT(full <= FORMULA_TOL && replay <= FORMULA_TOL);
}

/* ----- a layout that describes another split gives the same step ----- */

/* The layout string of a validated split: "E", each virtual stage's t*n, "L". */
static char *
same_layout_of(const SimparTrain *tr)
{
    GString *out = g_string_new("E");
    guint n = (guint) (tr->pp * tr->virtual_stages);
    for (guint vs = 0; vs < n; vs++)
        g_string_append_printf(out, "%st*%u", vs > 0 ? "|" : "", simpar_train_stage_layers(tr, vs));
    g_string_append_c(out, 'L');
    return g_string_free(out, FALSE);
}

/* The even split, the uneven spread, --first-stage-layers / --last-stage-layers and the
 * accounted splits, each against the layout that lists its layers: the analytic replay's and
 * the formula's steps, every term and the memory per GPU bit for bit. */
static gboolean
same_job(const SimparPlatform *platform, gpointer data, GString *out, GError **error)
{
    (void) data;
    SimparGpu gpu;
    if (!simpar_predict_gpu(platform, 64, NULL, &gpu, error))
        return FALSE;

    static const struct {
        guint P, v, layers, first, last, accounted, m;
    } cases[] = {
        {4, 1, 24, 0, 0, 0, 8}, {4, 2, 24, 0, 0, 0, 8},  {4, 1, 22, 0, 0, 0, 5},
        {4, 1, 24, 3, 0, 0, 8}, {4, 2, 24, 0, 5, 0, 12}, {4, 2, 24, 5, 4, 0, 8},
        {4, 2, 22, 0, 0, 3, 8}, {7, 1, 27, 0, 0, 1, 9},  {3, 1, 25, 0, 0, 0, 2},
    };

    guint n = 0, differ = 0;
    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        GridCase c = {.schedule = cases[i].v > 1 ? SIMPAR_PIPE_INTERLEAVED : SIMPAR_PIPE_1F1B,
                      .v = cases[i].v,
                      .P = cases[i].P,
                      .m = cases[i].m,
                      .layers = cases[i].layers,
                      .first = cases[i].first,
                      .last = cases[i].last,
                      .accounted = cases[i].accounted};
        uneven_mix(i, &c);
        c.fp8 = FALSE;
        SimparModel model;
        SimparTrain train, check;
        g_assert(grid_setup(&c, &model, &train));
        check = train;
        g_assert(simpar_train_validate(&check, &model, (guint64) (c.tp * c.P * c.D), NULL));
        g_autofree char *layout = same_layout_of(&check);
        SimparTrain as_layout = train;
        as_layout.first_stage_layers = as_layout.last_stage_layers = 0;
        as_layout.account_embedding = as_layout.account_loss = FALSE;
        as_layout.layout = g_intern_string(layout);
        SimparPredictContext ctx = {.attention = SIMPAR_ATTENTION_UNFUSED,
                                    .platform = platform,
                                    .gpu = &gpu,
                                    .gpus = (guint) (c.tp * c.P * c.D),
                                    .steps_to_target = G_MININT64};
        simpar_coll_params_init(&ctx.run.coll);
        ctx.run.mode = SIMPAR_COLL_MODE_FUSED;
        const char *const backends[] = {"analytic", "formula"};
        for (guint b = 0; b < G_N_ELEMENTS(backends); b++) {
            SimparReportRow x, y;
            g_assert(uneven_row(&ctx, backends[b], NULL, FALSE, &model, &train, &x));
            g_assert(uneven_row(&ctx, backends[b], NULL, FALSE, &model, &as_layout, &y));
            gboolean same = x.step_s == y.step_s && grid_terms(&x, &y) == 0 &&
                            x.memory.total_B == y.memory.total_B &&
                            x.memory.activations_B == y.memory.activations_B &&
                            x.step.peak_stage == y.step.peak_stage;
            n++, differ += !same;
            if (!same)
                g_string_append_printf(out,
                                       "%s: %u layers P=%u v=%u first %u last %u accounted %u "
                                       "as %s: step %.17g vs %.17g, memory %.17g vs %.17g\n",
                                       backends[b], c.layers, c.P, c.v, c.first, c.last,
                                       c.accounted, layout, x.step_s, y.step_s, x.memory.total_B,
                                       y.memory.total_B);
            simpar_predict_row_clear(&x), simpar_predict_row_clear(&y);
        }
    }
    g_string_append_printf(out, "n=%u differ=%u\n", n, differ);
    return TRUE;
}

static void
test_layout_same(void)
{
    g_autoptr(GString) out = g_string_new(NULL);
    const char *summary = job_summary("topologies/dgx-a100x64.xml", same_job, NULL, out);
    printf("\n    %s", out->str);
    guint n = 0, differ = 1;
    CU_ASSERT_EQUAL(sscanf(summary, "n=%u differ=%u", &n, &differ), 2);
    CU_ASSERT(n == 18 && differ == 0);
}

/* ----- closed forms, on a network that costs nothing (or whose replicas differ) ----- */

typedef struct {
    double lat, bw;
    guint slow; /* > 0: routes from or to GPUs g with g / slow odd have half the bandwidth */
} OracleNet;

static void
oracle_route(const SimparNet *net, guint src, guint dst, SimparRoute *out)
{
    const OracleNet *o = net->data;
    gboolean slow = o->slow > 0 && (src / o->slow % 2 || dst / o->slow % 2);
    *out = (SimparRoute){o->lat, slow ? o->bw / 2 : o->bw};
}

static guint
oracle_node(const SimparNet *net, guint gpu)
{
    (void) net;
    return gpu / 8;
}

typedef struct {
    SimparModel model;
    SimparTrain train;
    SimparSchedule *layer;
    SimparBlockTimes bt;
    OracleNet onet;
    SimparNet net;
    SimparGpu gpu;
    SimparStepTimer tm;
    SimparReportRow row;
} Oracle;

/* A pipeline of P stages x D replicas, blocks per chunk tF = tf, tB = tb, free ends and Adam. */
static void
oracle_init(Oracle *o, guint P, guint D, SimparPipeSchedule kind, guint v, guint m)
{
    *o = (Oracle){0};
    g_assert(simpar_model_preset("tiny", &o->model, NULL));
    o->model.layers = 48;
    simpar_train_init(&o->train);
    o->train.pp = P, o->train.dp = D, o->train.schedule = kind, o->train.virtual_stages = v;
    o->train.global_batch = (gint64) m * o->model.micro_batch * D;
    o->onet = (OracleNet){0, 1e30, 0};
    o->net = (SimparNet){oracle_route, oracle_node, &o->onet, NULL, NULL, NULL, NULL, NULL};
    simpar_gpu_init(&o->gpu);
    o->gpu.peak_flops[o->model.dtype] = o->gpu.peak_flops[SIMPAR_DTYPE_FP32] = 1e30;
    o->gpu.mem_bw_Bps = o->gpu.mem_bytes = 1e30, o->gpu.launch_s = 0;
}

/* The formula's step (FALSE: left to the replay) with per-chunk block times tf, tb. */
static gboolean
oracle_run(Oracle *o, double tf, double tb, SimparPredictCache *cache)
{
    g_autoptr(GError) err = NULL;
    guint gpus = (guint) (o->train.pp * o->train.dp * o->train.tp.tp);
    if (!simpar_train_validate(&o->train, &o->model, gpus, &err))
        printf("\n    %s", err->message);
    CU_ASSERT_PTR_NULL_FATAL(err);
    o->layer = simpar_generate_layer(&o->model, &o->train.tp, &err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(o->layer);
    o->bt.time_s = g_hash_table_new_full(NULL, NULL, NULL, g_free);
    o->bt.compute_s = g_hash_table_new_full(NULL, NULL, NULL, g_free);
    o->bt.layer_axes = g_array_new(FALSE, FALSE, sizeof(SimparAxisTime));
    const char *keys[] = {"layer.fwd", "layer.bwd"};
    const double t[] = {tf / o->train.layers_per_chunk, tb / o->train.layers_per_chunk};
    for (guint i = 0; i < 2; i++) {
        g_hash_table_insert(o->bt.time_s, (gpointer) g_intern_string(keys[i]),
                            g_memdup2(&t[i], sizeof t[i]));
        g_hash_table_insert(o->bt.compute_s, (gpointer) g_intern_string(keys[i]),
                            g_memdup2(&t[i], sizeof t[i]));
    }
    const SimparBackend *be;
    g_assert(simpar_predict_backend_lookup("formula", &be, NULL));
    o->tm = (SimparStepTimer){
        be, {.net = &o->net, .mode = SIMPAR_COLL_MODE_FUSED}, &o->gpu, SIMPAR_ATTENTION_UNFUSED};
    simpar_coll_params_init(&o->tm.base.coll);
    return simpar_step_formula(&o->tm, &o->bt, &o->model, &o->train, o->layer, cache, &o->row,
                               NULL);
}

static void
oracle_clear(Oracle *o)
{
    simpar_schedule_free(o->layer);
    simpar_block_times_clear(&o->bt);
    simpar_predict_row_clear(&o->row);
}

#define REL(a, b) (fabs((a) - (b)) / fabs(b))

/* 1F1B and GPipe: (m + P - 1)(tF + tB), bubble (P - 1) / (m + P - 1) of it, compute m (tF + tB);
 * m up to 4096 (extrapolated from the probes). */
static void
test_oracle_1f1b_gpipe(void)
{
    const SimparPipeSchedule kinds[] = {SIMPAR_PIPE_GPIPE, SIMPAR_PIPE_1F1B};
    const guint ps[] = {1, 2, 4, 8}, ms[] = {1, 4, 7, 64, 4096};
    g_autoptr(SimparPredictCache) cache = simpar_predict_cache_new();
    for (guint k = 0; k < G_N_ELEMENTS(kinds); k++)
        for (guint a = 0; a < G_N_ELEMENTS(ps); a++)
            for (guint b = 0; b < G_N_ELEMENTS(ms); b++) {
                guint P = ps[a], m = ms[b];
                Oracle o;
                oracle_init(&o, P, 1, kinds[k], 1, m);
                CU_ASSERT_TRUE_FATAL(oracle_run(&o, 1.0, 2.0, cache));
                CU_ASSERT(REL(o.row.step_s, (m + P - 1) * 3.0) <= FORMULA_TOL);
                CU_ASSERT(fabs(o.row.step.bubble_s / o.row.step_s - (P - 1.0) / (m + P - 1)) <=
                          FORMULA_TOL);
                CU_ASSERT(REL(o.row.compute_s, m * 3.0) <= FORMULA_TOL);
                oracle_clear(&o);
            }
}

/* Interleaved: m (tF + tB) + (P - 1)(tF + tB) / v, bubble fraction (P - 1) / (v m). */
static void
test_oracle_interleaved(void)
{
    const guint cases[][3] = {{2, 2, 4}, {4, 2, 8},    {4, 4, 8},
                              {2, 3, 6}, {4, 2, 2048}, {8, 3, 960}};
    g_autoptr(SimparPredictCache) cache = simpar_predict_cache_new();
    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        guint P = cases[i][0], v = cases[i][1], m = cases[i][2];
        Oracle o;
        oracle_init(&o, P, 1, SIMPAR_PIPE_INTERLEAVED, v, m);
        CU_ASSERT_TRUE_FATAL(oracle_run(&o, 1.0 / v, 2.0 / v, cache));
        CU_ASSERT(REL(o.row.step_s, m * 3.0 + (P - 1) * 3.0 / v) <= FORMULA_TOL);
        CU_ASSERT(fabs(o.row.step.bubble_s / (m * 3.0) - (P - 1.0) / (v * m)) <= FORMULA_TOL);
        oracle_clear(&o);
    }
}

/* Data parallelism after the backward (no overlap) on a network that costs something: the
 * reductions add the same tail to every m, so steps differ by the pipeline's (m - m')(tF + tB),
 * and the breakdown sums to the step. */
static void
test_oracle_dp_tail(void)
{
    const guint ms[] = {8, 9, 1000};
    double step[G_N_ELEMENTS(ms)];
    for (guint i = 0; i < G_N_ELEMENTS(ms); i++) {
        Oracle o;
        oracle_init(&o, 2, 4, SIMPAR_PIPE_1F1B, 1, ms[i]);
        o.onet = (OracleNet){1e-5, 1e9, 0};
        o.train.bucket_params = 20000;
        CU_ASSERT_TRUE_FATAL(oracle_run(&o, 1.0, 2.0, NULL));
        const SimparReportRow *r = &o.row;
        step[i] = r->step_s;
        CU_ASSERT(r->step.dp_exposed_s > 1e-5 && r->step.pp_p2p_s > 0);
        CU_ASSERT(REL(r->step_s, r->compute_s + r->step.tp_exposed_s + r->step.bubble_s +
                                     r->step.pp_p2p_s + r->step.dp_exposed_s + r->step.optimizer_s +
                                     r->other_s) <= FORMULA_TOL);
        oracle_clear(&o);
    }
    CU_ASSERT(REL(step[1] - step[0], 3.0 + 2 * (1e-5 + 0.0)) <= 1e-3); /* one more F, B pair */
    CU_ASSERT(REL(step[2] - step[1], (1000.0 - 9.0) * (step[1] - step[0])) <= FORMULA_TOL);
}

/* What the closed forms leave to the replay: local parallelism, ZeRO-3, exact collectives, an
 * MoE model's tokens dispatched by a dispatcher the closed forms do not list, and
 * --overlap-param-gather. */
static void
test_fallbacks(void)
{
    for (guint c = 0; c < 5; c++) {
        Oracle o;
        oracle_init(&o, c == 1 ? 1 : 2, 2, SIMPAR_PIPE_1F1B, 1, 8); /* ZeRO-3: no pipeline */
        if (c == 0) /* local parallelism: K = 2 chunks */
            o.train.schedule = SIMPAR_PIPE_LOCAL, o.train.aux_head_width = 64;
        else if (c == 1)
            o.train.zero = 3;
        else if (c == 3) /* a dispatcher past the all-gather (one being added) */
            o.model.moe.experts = 8, o.model.moe.top_k = 2, o.model.moe.moe_ffn = 128,
            o.train.ep = 2, o.train.moe_dispatcher = SIMPAR_MOE_ALLGATHER + 1;
        else if (c == 4)
            o.train.zero = 1, o.train.overlap_param_gather = TRUE;
        gboolean used = oracle_run(&o, 1.0, 2.0, NULL);
        if (c == 2) { /* exact collectives: the step again, in that mode */
            o.tm.base.mode = SIMPAR_COLL_MODE_EXACT;
            used = simpar_step_formula(&o.tm, &o.bt, &o.model, &o.train, o.layer, NULL, NULL,
                                       &o.row.step_s);
        }
        CU_ASSERT_FALSE(used);
        oracle_clear(&o);
    }
}

/* Replicas on unlike routes (T = 2, D = 2: replica 1's GPUs, g / 2 odd, have slower links, and
 * every group of replicas has a fast and a slow member): every (t, d) gets its own chain, and
 * the step and its breakdown are the analytic replay's; with an MoE model (EP 2) the experts'
 * reductions join ranks of two chains (fails when their rings are keyed by another group). */
static void
test_unlike_routes(void)
{
    const SimparPipeSchedule kinds[] = {SIMPAR_PIPE_1F1B, SIMPAR_PIPE_GPIPE,
                                        SIMPAR_PIPE_INTERLEAVED};
    for (guint i = 0; i < 2 * G_N_ELEMENTS(kinds); i++) {
        guint k = i % G_N_ELEMENTS(kinds);
        Oracle o;
        oracle_init(&o, 2, 2, kinds[k], k == 2 ? 2 : 1, 40);
        o.train.tp.tp = 2, o.train.overlap_grad_reduce = k == 0, o.train.zero = k == 1;
        o.train.tied_embeddings = TRUE, o.train.bucket_params = 20000;
        if (i >= G_N_ELEMENTS(kinds)) /* MoE: the experts' groups of 2 across the chains */
            o.model.moe.experts = 8, o.model.moe.top_k = 2, o.model.moe.moe_ffn = 128,
            o.model.moe.moe_every = k == 1 ? 2 : 0, o.train.ep = 2,
            o.train.tp.sequence_parallel = TRUE;
        o.onet = (OracleNet){2e-6, 1e9, 2};
        CU_ASSERT_TRUE_FATAL(oracle_run(&o, 1e-3, 2e-3, NULL));
        o.train.scalars = simpar_step_scalars_of(o.tm.gpu); /* as simpar_step_plan builds it */
        g_autoptr(SimparSchedule) step = simpar_step_build(&o.model, &o.train, o.layer);
        guint ranks = simpar_schedule_n_ranks(step);
        g_autofree guint *gpus = g_new(guint, ranks);
        for (guint r = 0; r < ranks; r++)
            gpus[r] = r;
        SimparStepTimer tm = o.tm;
        g_assert(simpar_backend_lookup("analytic", &tm.backend, NULL));
        SimparRun run;
        g_autofree double *compute = NULL;
        g_autofree SimparSpan *spans = simpar_step_run(&tm, step, &o.bt, gpus, &run, &compute);
        SimparReportRow replay = {0};
        simpar_step_breakdown(&run, spans, &o.bt, &o.model, &o.train, NULL, &replay);
        CU_ASSERT(REL(o.row.step_s, replay.step_s) <= FORMULA_TOL);
        CU_ASSERT(grid_terms(&replay, &o.row) <= FORMULA_TOL);
        CU_ASSERT(replay.step.pp_p2p_s > 0 && replay.step.dp_exposed_s > 0);
        simpar_predict_row_clear(&replay);
        oracle_clear(&o);
    }
}

/* ----- through the binary ----- */

#define CLI_TOPO "--topology topologies/v100x64.xml --model default-4k --layers 8"

/* The members of two `simpar predict --json` objects agree within FORMULA_TOL of the step
 * (times) or of themselves (other numbers), but the backend's name and the wall time. */
static void
cli_json_agree(JsonObject *a, JsonObject *f)
{
    CU_ASSERT_EQUAL(json_object_has_member(a, "step_time_s"),
                    json_object_has_member(f, "step_time_s"));
    if (!json_object_has_member(a, "step_time_s"))
        return; /* a mode not simulated in both: its reason compared nowhere, no figures */
    double step = json_object_get_double_member(a, "step_time_s");
    g_autoptr(GList) members = json_object_get_members(a);
    for (GList *l = members; l != NULL; l = l->next) {
        const char *name = l->data;
        JsonNode *x = json_object_get_member(a, name), *y = json_object_get_member(f, name);
        if (g_str_equal(name, "wall_s") || g_str_equal(name, "step_slices") ||
            JSON_NODE_TYPE(x) != JSON_NODE_VALUE || json_node_get_value_type(x) != G_TYPE_DOUBLE)
            continue;
        CU_ASSERT_PTR_NOT_NULL_FATAL(y);
        double u = json_node_get_double(x), w = json_node_get_double(y);
        double scale = g_str_has_suffix(name, "_s") ? step : fabs(u);
        if (fabs(u - w) > FORMULA_TOL * scale)
            printf("\n    %s: analytic %.12g, formula %.12g", name, u, w);
        CU_ASSERT(fabs(u - w) <= FORMULA_TOL * scale);
    }
}

/* simpar predict: every mode's figures, for a pipelined, replicated, ZeRO-1 split; FP8 training
 * whose ZeRO-1 parameter all-gather moves the layers' weights in FP8 (the formula backend gave it
 * bf16's bytes: 0.4% off the step, 30% off the data-parallel exposed time). */
static void
test_cli_predict(void)
{
    const char *splits[] = {CLI_TOPO " --pp 2 --dp 4 --micro-batch 4 --global-batch 256 --zero 1 "
                                     "--overlap-grad-reduce",
                            CLI_TOPO " --pp 4 --schedule interleaved --virtual-stages 2 "
                                     "--micro-batch 2 --global-batch 64 --tied-embeddings",
                            CLI_TOPO " --pp 2 --dp 2 --schedule gpipe --micro-batch 1 "
                                     "--global-batch 64 --bucket-params 20000000",
                            /* Megatron-Core's groups of N = 5: m = 9 is no multiple of P */
                            CLI_TOPO " --pp 4 --dp 2 --schedule interleaved --virtual-stages 2 "
                                     "--vp-group 5 --micro-batch 2 --global-batch 36",
                            CLI_TOPO " --pp 4 --dp 2 --schedule interleaved --virtual-stages 2 "
                                     "--vp-group 5 --micro-batch 2 --global-batch 200",
                            "--topology topologies/dgx-h100x64.xml --model default-4k --layers 8 "
                            "--dtype fp8 --fp8-recipe delayed --fp8-param-gather --zero 1 "
                            "--tp-mode 1d --tp 4 --pp 2 --dp 4 --micro-batch 1 --global-batch 64",
                            /* FP8 weight casts before each chunk's first forward, FP8 attention */
                            "--topology topologies/dgx-h100x64.xml --model default-4k --layers 8 "
                            "--dtype fp8 --fp8-recipe current --fp8-dot-product-attention "
                            "--attention flash --tp-mode 1d --tp 4 --pp 2 --dp 4 --schedule "
                            "interleaved --virtual-stages 2 --micro-batch 1 --global-batch 32"};
    for (guint i = 0; i < G_N_ELEMENTS(splits); i++) {
        JsonArray *rows[2];
        g_autoptr(JsonParser) analytic = json_parser_new(), formula = json_parser_new();
        JsonParser *parser[2] = {analytic, formula};
        const char *backends[] = {"analytic", "formula"};
        for (guint b = 0; b < 2; b++) {
            g_autofree char *args = g_strdup_printf("predict --gpus 32 --jobs 1 "
                                                    "--json --backend %s %s",
                                                    backends[b], splits[i]);
            SimparCliRun r = simpar_cli_run(args);
            CU_ASSERT_EQUAL_FATAL(r.status, 0);
            CU_ASSERT_TRUE_FATAL(json_parser_load_from_data(parser[b], r.out, -1, NULL));
            rows[b] = json_node_get_array(json_parser_get_root(parser[b]));
            simpar_cli_run_clear(&r);
        }
        CU_ASSERT_EQUAL_FATAL(json_array_get_length(rows[0]), json_array_get_length(rows[1]));
        for (guint k = 0; k < json_array_get_length(rows[0]); k++)
            cli_json_agree(json_array_get_object_element(rows[0], k),
                           json_array_get_object_element(rows[1], k));
    }
}

/* Member `key` of the first row `simpar <args> --json` prints (0 when absent). */
static double
cli_first_row_double(const char *args, const char *key)
{
    SimparCliRun r = simpar_cli_run(args);
    CU_ASSERT_EQUAL_FATAL(r.status, 0);
    g_autoptr(JsonParser) parser = json_parser_new();
    CU_ASSERT_TRUE_FATAL(json_parser_load_from_data(parser, r.out, -1, NULL));
    JsonObject *row =
        json_array_get_object_element(json_node_get_array(json_parser_get_root(parser)), 0);
    double v = json_object_get_double_member_with_default(row, key, 0);
    simpar_cli_run_clear(&r);
    return v;
}

/* The step of a 1-D job on 16 H100s (PP 2, DP 2) with the platform's figures or a calibration
 * that gives some kinds a kernel floor, on `backend`. */
static double
floors_step(const char *backend, const char *calib)
{
    g_autofree char *args = g_strdup_printf(
        "predict --topology topologies/dgx-h100x64.xml --model gpt3-1.3b --layers 8 --tp-mode 1d "
        "--tp 4 --pp 2 --dp 2 --micro-batch 1 --global-batch 8 --gpus 16 --json --backend %s%s%s",
        backend, calib != NULL ? " --calibration " : "", calib != NULL ? calib : "");
    return cli_first_row_double(args, "step_time_s");
}

/* A calibration's kernel floors (Adam's among them, which the formula times on its own) reach
 * the formula as they reach the replay, and lengthen the step. */
static void
test_cli_kernel_floors(void)
{
    g_autofree char *dir = g_dir_make_tmp("simpar-floors-XXXXXX", NULL);
    g_autofree char *calib = g_build_filename(dir, "calib.json", NULL);
    g_assert(g_file_set_contents(calib,
                                 "{\"kernel_floor_s\": {\"adam\": 2e-5, \"add\": 3e-6, "
                                 "\"ln-stats\": 4e-6, \"bias-grad\": 1e-5, \"gelu\": 2e-6}}",
                                 -1, NULL));
    double plain = floors_step("analytic", NULL);
    double analytic = floors_step("analytic", calib), formula = floors_step("formula", calib);
    if (fabs(formula - analytic) > 1e-12 * analytic)
        printf("\n    formula %.12g s, analytic %.12g s", formula, analytic);
    CU_ASSERT(fabs(formula - analytic) <= 1e-12 * analytic);
    CU_ASSERT(analytic > plain + 1e-4); /* 20 us of Adam alone, the floors of every layer */
    g_unlink(calib);
    g_rmdir(dir);
}

/* FP8 weights are cast once per step (Transformer Engine caches them across micro-batches): the
 * step's weight casts on the rank that ends last are its L/P = 4 layers' 4 linears, each a
 * launch (5 us, pinned) and its h(3h + h) + 2hf / T weights (default-4k: h = 4096, f = 16384,
 * T = 4: 50331648) cast with their transposes, 4 bytes a weight (delayed) at the pinned 2 TB/s,
 * at m = 4 and m = 8 micro-batches alike, on both backends. Charged per micro-batch (the
 * forward GEMM's cast), they grew with m. */
static void
test_cli_fp8_weight_casts(void)
{
    g_autofree char *dir = g_dir_make_tmp("simpar-fp8-XXXXXX", NULL);
    g_autofree char *calib = g_build_filename(dir, "calib.json", NULL);
    g_assert(g_file_set_contents(calib, "{\"launch_s\": 5e-6, \"kernel_bw_stream_Bps\": 2e12}", -1,
                                 NULL));
    SimparModel m;
    g_assert(simpar_model_preset("default-4k", &m, NULL));
    double per_rank = simpar_model_layer_weights(&m) / 4;
    CU_ASSERT_EQUAL(per_rank, 50331648);
    double want = 4 * (4 * 5e-6 + per_rank * 4 / 2e12);
    const char *backends[] = {"analytic", "formula"};
    for (guint b = 0; b < 2; b++)
        for (guint batch = 4; batch <= 8; batch *= 2) {
            g_autofree char *args = g_strdup_printf(
                "predict --topology topologies/dgx-h100x64.xml --model default-4k --layers 8 "
                "--dtype fp8 --tp-mode 1d --tp 4 --pp 2 --micro-batch 1 --global-batch %u "
                "--gpus 8 --jobs 1 --json --backend %s --calibration %s",
                batch, backends[b], calib);
            double got = cli_first_row_double(args, "fp8_weight_cast_s");
            if (fabs(got - want) > 1e-12 * want)
                printf("\n    %s m=%u: %.12g s, want %.12g", backends[b], batch, got, want);
            CU_ASSERT(fabs(got - want) <= 1e-12 * want);
        }
    g_unlink(calib);
    g_rmdir(dir);
}

/* Mixtral 8x7B with 16 layers, the first 2 dense and every second after them, over 4 stages of
 * 4 layers: stage 0 holds 3 dense layers, the others 2, so the stages take other times though
 * their layers are as many. Taken as even, the step came from probes at m = 8, 9, 16, 17 that
 * lay on a line the step leaves by m = 32 (2.4850 s against the replay's 2.4904 s, 0.2%);
 * taken as uneven stages, from their items, it is the replay's within 1e-9. */
static void
test_cli_moe_kinds(void)
{
    double step[2];
    const char *backends[] = {"analytic", "formula"};
    for (guint b = 0; b < 2; b++) {
        g_autofree char *args = g_strdup_printf(
            "predict --topology topologies/dgx-h100x64.xml --gpus 64 --model mixtral-8x7b "
            "--layers 16 --dense-layers 2 --moe-every 2 --shared-ffn 4096 --tp-mode 2.5d --tp 16 "
            "--depth 4 --pp 4 --dp 1 --micro-batch 8 --global-batch 256 --zero 1 "
            "--overlap-grad-reduce --jobs 1 --json --backend %s",
            backends[b]);
        step[b] = cli_first_row_double(args, "step_time_s");
    }
    if (fabs(step[1] - step[0]) > FORMULA_TOL * step[0])
        printf("\n    formula %.12g s, analytic %.12g s", step[1], step[0]);
    CU_ASSERT(step[0] > 2 && fabs(step[1] - step[0]) <= FORMULA_TOL * step[0]);
}

/* simpar sweep: every row's status and figures. */
static void
test_cli_sweep(void)
{
    g_autofree char *dir = g_dir_make_tmp("simpar-formula-XXXXXX", NULL);
    SimparCsv *csv[2] = {NULL, NULL};
    const char *backends[] = {"analytic", "formula"};
    for (guint b = 0; b < 2; b++) {
        g_autofree char *out = g_strdup_printf("%s/%s.csv", dir, backends[b]);
        g_autofree char *args = g_strdup_printf(
            "sweep " CLI_TOPO " --gpus 16,32 --micro-batch 2,8 --global-batch 64,1024 "
            "--schedule 1f1b,gpipe --overlap-grad-reduce -q --jobs 1 --backend %s -o %s",
            backends[b], out);
        SimparCliRun r = simpar_cli_run(args);
        CU_ASSERT_EQUAL_FATAL(r.status, 0);
        simpar_cli_run_clear(&r);
        csv[b] = simpar_csv_read(out, SIMPAR_CSV_NONE, NULL);
        CU_ASSERT_PTR_NOT_NULL_FATAL(csv[b]);
        g_remove(out);
    }
    g_rmdir(dir);
    guint n = simpar_csv_n_rows(csv[0]), ok = 0;
    CU_ASSERT_EQUAL_FATAL(n, simpar_csv_n_rows(csv[1]));
    const SimparSweepColumn cols[] = {SIMPAR_SWEEP_COL_STEP,       SIMPAR_SWEEP_COL_COMPUTE,
                                      SIMPAR_SWEEP_COL_TP_EXPOSED, SIMPAR_SWEEP_COL_BUBBLE,
                                      SIMPAR_SWEEP_COL_PP_P2P,     SIMPAR_SWEEP_COL_DP_EXPOSED,
                                      SIMPAR_SWEEP_COL_OPTIMIZER};
    for (guint i = 0; i < n; i++) {
        const char *status = simpar_csv_get(csv[0], i, SIMPAR_SWEEP_COL_STATUS);
        CU_ASSERT_STRING_EQUAL(status, simpar_csv_get(csv[1], i, SIMPAR_SWEEP_COL_STATUS));
        CU_ASSERT_STRING_EQUAL(simpar_csv_get(csv[1], i, SIMPAR_SWEEP_COL_BACKEND), "formula");
        if (!g_str_equal(status, "ok"))
            continue;
        ok++;
        double step = g_ascii_strtod(simpar_csv_get(csv[0], i, SIMPAR_SWEEP_COL_STEP), NULL);
        for (guint c = 0; c < G_N_ELEMENTS(cols); c++) {
            double a = g_ascii_strtod(simpar_csv_get(csv[0], i, cols[c]), NULL);
            double f = g_ascii_strtod(simpar_csv_get(csv[1], i, cols[c]), NULL);
            CU_ASSERT(fabs(a - f) <= 1e-8 * step); /* printed with 9 digits */
        }
    }
    CU_ASSERT(ok >= 20);
    simpar_csv_free(csv[0]), simpar_csv_free(csv[1]);
}

/* The rows' numbers are printf's "%.9g" (simpar_sweep_format_number prints them without
 * printf): random magnitudes and signs, numbers on and next to rounding ties, the style
 * boundaries (1e-5, 1e-4, 1e8, 1e9), zeros, infinities, NaN, denormals. Seeded; the seed is
 * printed and SIMPAR_TEST_SEED replays one. */
static void
test_number_format(void)
{
    const char *given = g_getenv("SIMPAR_TEST_SEED");
    guint32 seed = given != NULL ? (guint32) g_ascii_strtoull(given, NULL, 10) : g_random_int();
    printf("\n    seed %u", seed);
    g_autoptr(GRand) rand = g_rand_new_with_seed(seed);
    const double fixed[] = {0.0,        -0.0,          1.0,         -1.0,
                            1e-5,       9.99999999e-6, 1e-4,        0.000123456789,
                            123456789,  999999999,     999999999.5, 999999999.4,
                            1234567890, 1e9,           1e-9,        0.5,
                            2.5e-7,     9.9999999995,  99999.99995, 1e300,
                            1e-300,     4.9e-324,      1e35,        1e-19,
                            1e-20,      1e36,          INFINITY,    -INFINITY,
                            NAN,        65536.0 / 3};
    guint mismatches = 0;
    for (guint i = 0; i < G_N_ELEMENTS(fixed) + 2000000; i++) {
        double v;
        if (i < G_N_ELEMENTS(fixed)) {
            v = fixed[i];
        } else if (i % 2 == 0) { /* anywhere in 1e-25 .. 1e40 */
            v = g_rand_double_range(rand, 1, 10) * pow(10, g_rand_int_range(rand, -25, 40));
        } else { /* on or next to a tie of the ninth digit */
            double q = g_rand_int_range(rand, 100000000, 1000000000) + 0.5;
            v = (q + g_rand_int_range(rand, -2, 3) * 1e-9) *
                pow(10, g_rand_int_range(rand, -12, 6));
        }
        if (g_rand_boolean(rand))
            v = -v;
        char want[64], got[SIMPAR_SWEEP_NUMBER_LEN];
        snprintf(want, sizeof want, "%.9g", v);
        simpar_sweep_format_number(v, got);
        if (!g_str_equal(want, got) && mismatches++ < 5)
            printf("\n    %.17g: printf %s, simpar %s", v, want, got);
    }
    CU_ASSERT_EQUAL(mismatches, 0);
}

static CU_TestInfo grid_tests[] = {
    {"on the DGX A100 platform, the step and its breakdown are the analytic backend's",
     test_grid_dgx},
    {"on the V100 platform, the step and its breakdown are the analytic backend's", test_grid_v100},
    {"uneven stages: the closed forms in m are the evaluation at m and the analytic replay",
     test_uneven},
    {"a layout that lists another split's layers gives its step and memory, bit for bit",
     test_layout_same},
    {"mixtures of experts: the experts' gradients, dense layers and dispatchers as the replay",
     test_moe},
    {"mixtures of experts on the V100 platform (fp16) as the replay", test_moe_v100},
    CU_TEST_INFO_NULL,
};

static CU_TestInfo oracle_tests[] = {
    {"1F1B and GPipe take (m + P - 1)(tF + tB), bubble (P - 1) / (m + P - 1)",
     test_oracle_1f1b_gpipe},
    {"interleaved takes m (tF + tB) + (P - 1)(tF + tB) / v", test_oracle_interleaved},
    {"data-parallel reductions after the backward add the same tail to every m",
     test_oracle_dp_tail},
    {"local parallelism, ZeRO-3, exact collectives and unlisted MoE dispatchers are replayed",
     test_fallbacks},
    {"ranks on unlike routes each get a chain (an MoE model's experts' groups across them): the "
     "analytic replay's step",
     test_unlike_routes},
    CU_TEST_INFO_NULL,
};

static CU_TestInfo cli_tests[] = {
    {"simpar predict --backend formula prints the analytic figures", test_cli_predict},
    {"simpar sweep --backend formula writes the analytic rows", test_cli_sweep},
    {"an MoE model's stages of as many layers but other dense ones are uneven stages",
     test_cli_moe_kinds},
    {"FP8 weights are cast once per step: a closed form at any micro-batch count, both backends",
     test_cli_fp8_weight_casts},
    {"a calibration's kernel floors reach the formula as the replay", test_cli_kernel_floors},
    {"the rows' numbers are printf's %.9g", test_number_format},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"formula: against the analytic replay", NULL, NULL, NULL, NULL, grid_tests},
    {"formula: closed forms", NULL, NULL, NULL, NULL, oracle_tests},
    {"formula: through the binary", NULL, NULL, NULL, NULL, cli_tests},
    CU_SUITE_INFO_NULL,
};

int
main(void)
{
    return simpar_test_main(suites);
}
