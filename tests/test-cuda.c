/* test-cuda.c - the CUDA executor against the host executor, on the GPUs of this machine.
 *
 * Every one-layer tensor-parallel schedule that fits the GPUs (1-D T = 1, 2 with sequence
 * parallelism and full recomputation, 4, 8; 2-D q = 1, 2; 2.5-D q = 1 d = 1, q = 1 d = 2,
 * q = 2 d = 2; 3-D q = 1, 2), causal with dropout, and whole training steps (test-train-host.c's
 * smallest case, 2 stages x 2-way 1-D, and the same model on 1 and 2 GPUs) run on simpar_cuda_*
 * and on simpar_host_* from the same inputs (random global tensors scattered through the input
 * shards, as in test-layers.c and test-train-host.c). Every element of every output shard must
 * agree to 1e-9 in fp64 schedules and 1e-4 in fp32 ones (TF32 off), relative to the element or
 * to 1e-3 of the largest element of its tensor. Then op timings; NCCL waits that time out (a
 * rank that never arrives at setup, a peer that never runs, a mismatched schedule: each peer in
 * a thread of its own, as a process would be) with a clear error instead of a hang; and
 * configurations simpar_cuda_new refuses.
 *
 * Without a usable GPU the program prints why and exits 77 (meson: SKIP).
 *
 * Usage: test-cuda [SEED]   (the seed of the random inputs; printed on every run)
 */
#include "cuda.h"
#include "generators.h"
#include "host.h"
#include "reference-step.h"
#include "simpar-test.h"
#include "step.h"
#include "watchdog.h"
#include <CUnit/Basic.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

static guint64 cuda_test_seed = 20261121;
static int cuda_test_gpus; /* usable CUDA devices */

/* Errors are relative to the element, or to a floor, a fraction of its tensor's largest element:
 * a value that is zero in exact arithmetic (the key bias's gradient: softmax ignores a shift of
 * the keys) comes out as the rounding noise of its summands, about 1e-7 of them in fp32. */
#define CUDA_TOL_FP64   1e-9
#define CUDA_TOL_FP32   1e-4
#define CUDA_FLOOR_FP64 1e-3
#define CUDA_FLOOR_FP32 1e-2

/* ---------------------------------------------------------------- running both executors */

/* (transfer full): all ranks of `sched` in this process, rank r on device r. */
static SimparCuda *
cuda_test_new(const SimparSchedule *sched, double timeout_s, GError **error)
{
    guint n = simpar_schedule_n_ranks(sched);
    g_autofree guint *ranks = g_new(guint, n);
    g_autofree int *devices = g_new(int, n);
    for (guint r = 0; r < n; r++)
        ranks[r] = r, devices[r] = (int) r;
    guint8 id[SIMPAR_CUDA_ID_BYTES];
    if (!simpar_cuda_unique_id(id, error))
        return NULL;
    SimparCudaConfig cfg = {n, ranks, devices, id, FALSE, timeout_s};
    return simpar_cuda_new(sched, &cfg, error);
}

static gboolean
cuda_test_fits(const SimparSchedule *sched, const char *what)
{
    guint n = simpar_schedule_n_ranks(sched);
    if (n <= (guint) cuda_test_gpus)
        return TRUE;
    printf("\n    %s: skipped, needs %u GPUs", what, n);
    return FALSE;
}

/* The largest magnitude of each output tensor over all of its shards (host values). */
static GHashTable *
cuda_test_scales(const SimparSchedule *sched, SimparHost *host)
{
    GHashTable *scales = g_hash_table_new_full(g_str_hash, g_str_equal, NULL, g_free);
    guint n;
    const SimparShard *sh = simpar_schedule_shards(sched, &n);
    for (guint i = 0; i < n; i++) {
        if (sh[i].role != SIMPAR_SHARD_OUTPUT)
            continue;
        double *scale = g_hash_table_lookup(scales, sh[i].tensor);
        if (scale == NULL) {
            scale = g_new0(double, 1);
            g_hash_table_insert(scales, (gpointer) sh[i].tensor, scale);
        }
        const double *v = simpar_host_buffer(host, sh[i].view.buf) + sh[i].view.off;
        for (guint64 e = 0; e < sh[i].rows * sh[i].cols; e++)
            *scale = MAX(*scale, fabs(v[e]));
    }
    return scales; /* (transfer full) */
}

/* Largest relative error of the GPUs' output shards against the host's. */
static double
cuda_test_compare(const SimparSchedule *sched, SimparHost *host, SimparCuda *cu, double tol)
{
    gboolean fp64 = simpar_schedule_dtype(sched) == SIMPAR_DTYPE_FP64;
    g_autoptr(GHashTable) scales = cuda_test_scales(sched, host);
    g_autoptr(GHashTable) read = g_hash_table_new_full(NULL, NULL, NULL, g_free);
    guint n;
    const SimparShard *sh = simpar_schedule_shards(sched, &n);
    double worst = 0;
    for (guint i = 0; i < n; i++) {
        if (sh[i].role != SIMPAR_SHARD_OUTPUT)
            continue;
        guint b = sh[i].view.buf;
        double *gpu = g_hash_table_lookup(read, GUINT_TO_POINTER(b + 1));
        if (gpu == NULL) {
            g_autoptr(GError) error = NULL;
            gpu = g_new0(double, MAX(simpar_schedule_buffer(sched, b)->elems, 1));
            g_hash_table_insert(read, GUINT_TO_POINTER(b + 1), gpu);
            CU_ASSERT_TRUE_FATAL(simpar_cuda_read(cu, b, gpu, &error));
        }
        const double *got = gpu + sh[i].view.off;
        const double *want = simpar_host_buffer(host, b) + sh[i].view.off;
        double scale = *(double *) g_hash_table_lookup(scales, sh[i].tensor);
        double floor = MAX((fp64 ? CUDA_FLOOR_FP64 : CUDA_FLOOR_FP32) * scale, 1e-12);
        for (guint64 e = 0; e < sh[i].rows * sh[i].cols; e++) {
            double rel = fabs(got[e] - want[e]) / MAX(fabs(want[e]), floor);
            if (rel > tol && worst <= tol) /* the first element out of tolerance */
                printf("\n    %s (rank %u) [%" G_GUINT64_FORMAT "]: gpu %.17g, host %.17g",
                       sh[i].tensor, sh[i].rank, e, got[e], want[e]);
            worst = MAX(worst, rel);
        }
    }
    return worst;
}

/* Copies the host's buffers (its inputs filled) to the GPUs, runs both, compares. */
static void
cuda_test_against_host(const SimparSchedule *sched, SimparHost *host, const char *what)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(SimparCuda) cu = cuda_test_new(sched, 0, &error);
    if (cu == NULL)
        printf("\n    %s: %s", what, error->message);
    CU_ASSERT_PTR_NOT_NULL_FATAL(cu);
    for (guint b = 0; b < simpar_schedule_n_buffers(sched); b++)
        CU_ASSERT_TRUE_FATAL(simpar_cuda_write(cu, b, simpar_host_buffer(host, b), &error));
    CU_ASSERT_TRUE_FATAL(simpar_host_run(host, &error));
    gboolean ran = simpar_cuda_run(cu, NULL, &error);
    if (!ran)
        printf("\n    %s: %s", what, error->message);
    CU_ASSERT_TRUE_FATAL(ran);
    double tol = simpar_schedule_dtype(sched) == SIMPAR_DTYPE_FP64 ? CUDA_TOL_FP64 : CUDA_TOL_FP32;
    double worst = cuda_test_compare(sched, host, cu, tol);
    printf("\n    %s: %u ops on %u GPUs, worst relative error %.3g (tolerance %g)", what,
           simpar_schedule_n_ops(sched), simpar_schedule_n_ranks(sched), worst, tol);
    CU_ASSERT(worst <= tol);
}

/* ---------------------------------------------------------------- one layer */

typedef struct {
    const char *mode;
    gint64 tp, depth, b;
    gboolean sp;
    SimparRecompute recompute;
    gint64 kv;      /* key/value heads, 0 = a */
    gboolean llama; /* SwiGLU and RMSNorm */
} CudaLayerCase;

/* h = 48, a = 24, f = 96, s = 4: divisible by every grid below. */
static const CudaLayerCase cuda_layer_cases[] = {
    {"1d", 1, 0, 2, FALSE, SIMPAR_RECOMPUTE_NONE, 0, FALSE},
    {"1d", 2, 0, 2, FALSE, SIMPAR_RECOMPUTE_NONE, 0, FALSE},
    {"1d", 2, 0, 2, TRUE, SIMPAR_RECOMPUTE_FULL, 0, FALSE},
    {"1d", 4, 0, 2, FALSE, SIMPAR_RECOMPUTE_NONE, 0, FALSE},
    {"1d", 8, 0, 2, FALSE, SIMPAR_RECOMPUTE_NONE, 0, FALSE},
    {"2d", 1, 0, 2, FALSE, SIMPAR_RECOMPUTE_NONE, 0, FALSE},
    {"2d", 4, 0, 4, FALSE, SIMPAR_RECOMPUTE_NONE, 0, FALSE},
    {"2.5d", 1, 1, 2, FALSE, SIMPAR_RECOMPUTE_NONE, 0, FALSE},
    {"2.5d", 2, 2, 4, FALSE, SIMPAR_RECOMPUTE_NONE, 0, FALSE},
    {"2.5d", 8, 2, 4, FALSE, SIMPAR_RECOMPUTE_NONE, 0, FALSE},
    {"3d", 1, 0, 2, FALSE, SIMPAR_RECOMPUTE_NONE, 0, FALSE},
    {"3d", 8, 0, 4, FALSE, SIMPAR_RECOMPUTE_NONE, 0, FALSE},
    /* grouped-query (24 heads on 6 or 2) and multi-query attention, SwiGLU, RMSNorm */
    {"1d", 1, 0, 2, FALSE, SIMPAR_RECOMPUTE_NONE, 1, TRUE},
    {"1d", 2, 0, 2, TRUE, SIMPAR_RECOMPUTE_FULL, 6, TRUE},
    {"2d", 4, 0, 4, FALSE, SIMPAR_RECOMPUTE_NONE, 2, TRUE},
    {"3d", 8, 0, 4, FALSE, SIMPAR_RECOMPUTE_NONE, 2, TRUE},
};

static RefTensor
cuda_test_tensor(const char *name)
{
    for (guint t = 0; t < REF_N_TENSORS; t++)
        if (g_str_equal(ref_tensor_name((RefTensor) t), name))
            return (RefTensor) t;
    g_error("shard of unknown tensor '%s'", name);
}

/* (transfer full): the layer of `lc` with `dtype`, causal, dropout 0.1; *shape its sizes. */
static SimparSchedule *
cuda_test_layer(const CudaLayerCase *lc, SimparDtype dtype, RefShape *shape)
{
    SimparModel m = {"test",
                     48,
                     24,
                     4,
                     lc->b,
                     1,
                     96,
                     64,
                     dtype,
                     lc->kv,
                     lc->llama ? SIMPAR_MLP_SWIGLU : SIMPAR_MLP_GELU,
                     lc->llama ? SIMPAR_NORM_RMSNORM : SIMPAR_NORM_LAYERNORM,
                     lc->llama,
                     FALSE,
                     0,
                     {0},
                     {0},
                     0,
                     0};
    SimparPlan plan;
    simpar_plan_init(&plan);
    plan.gen = simpar_generator_of(lc->mode), plan.tp = lc->tp, plan.depth = lc->depth;
    plan.sequence_parallel = lc->sp, plan.recompute = lc->recompute;
    plan.causal = TRUE, plan.p_hidden = plan.p_attn = 0.1, plan.seed = cuda_test_seed;
    *shape = (RefShape){.b = (guint) lc->b,
                        .s = 4,
                        .h = 48,
                        .a = 24,
                        .f = 96,
                        .causal = TRUE,
                        .eps = plan.eps,
                        .p_hidden = 0.1,
                        .p_attn = 0.1,
                        .seed = cuda_test_seed,
                        .kv = (guint) lc->kv,
                        .swiglu = lc->llama,
                        .rms = lc->llama,
                        .no_bias = lc->llama};
    g_autoptr(GError) error = NULL;
    SimparSchedule *sched = simpar_generate_layer(&m, &plan, &error);
    if (sched == NULL)
        printf("\n    %s tp=%" G_GINT64_FORMAT ": %s", lc->mode, lc->tp, error->message);
    return sched;
}

/* Random global inputs, scattered into the host's buffers through the input shards. */
static void
cuda_test_layer_inputs(const SimparSchedule *sched, SimparHost *host, const RefShape *shape)
{
    g_autoptr(GRand) rng = g_rand_new_with_seed((guint32) cuda_test_seed);
    double *t[REF_N_INPUTS];
    for (guint i = 0; i < REF_N_INPUTS; i++) {
        guint64 rows, cols;
        ref_tensor_shape(shape, (RefTensor) i, &rows, &cols);
        t[i] = g_new(double, rows *cols);
        ref_fill_random(t[i], rows * cols, rng);
    }
    guint n;
    const SimparShard *sh = simpar_schedule_shards(sched, &n);
    for (guint i = 0; i < n; i++) {
        if (sh[i].role != SIMPAR_SHARD_INPUT)
            continue;
        RefTensor id = cuda_test_tensor(sh[i].tensor);
        guint64 rows, cols;
        ref_tensor_shape(shape, id, &rows, &cols);
        double *dst = simpar_host_buffer(host, sh[i].view.buf) + sh[i].view.off;
        for (guint64 r = 0; r < sh[i].rows; r++)
            for (guint64 c = 0; c < sh[i].cols; c++)
                dst[r * sh[i].cols + c] = t[id][(sh[i].row0 + r) * cols + sh[i].col0 + c];
    }
    for (guint i = 0; i < REF_N_INPUTS; i++)
        g_free(t[i]);
}

static void
cuda_test_layers(SimparDtype dtype)
{
    for (guint i = 0; i < G_N_ELEMENTS(cuda_layer_cases); i++) {
        const CudaLayerCase *lc = &cuda_layer_cases[i];
        g_autofree char *what = g_strdup_printf(
            "%s tp=%" G_GINT64_FORMAT "%s%s%s%s", lc->mode, lc->tp, lc->sp ? " sp" : "",
            lc->recompute != SIMPAR_RECOMPUTE_NONE ? " recompute " : "",
            lc->recompute != SIMPAR_RECOMPUTE_NONE ? simpar_recompute_name(lc->recompute) : "",
            lc->llama ? " gqa swiglu rmsnorm" : "");
        RefShape shape;
        g_autoptr(SimparSchedule) sched = cuda_test_layer(lc, dtype, &shape);
        CU_ASSERT_PTR_NOT_NULL_FATAL(sched);
        if (!cuda_test_fits(sched, what))
            continue;
        g_autoptr(SimparHost) host = simpar_host_new(sched);
        cuda_test_layer_inputs(sched, host, &shape);
        cuda_test_against_host(sched, host, what);
    }
}

static void
test_layers_fp64(void)
{
    cuda_test_layers(SIMPAR_DTYPE_FP64);
}

static void
test_layers_fp32(void)
{
    cuda_test_layers(SIMPAR_DTYPE_FP32);
}

/* ---------------------------------------------------------------- training steps */

typedef struct {
    gint64 tp, pp, m, b, layers;
    gboolean sp;
} CudaStepCase;

/* The last is test-train-host.c's smallest case (1F1B, sequence parallelism, full
 * recomputation, dropout 0.1, not causal); the others the same model on fewer GPUs. */
static const CudaStepCase cuda_step_cases[] = {
    {1, 1, 4, 2, 4, FALSE},
    {2, 1, 4, 2, 4, TRUE},
    {2, 2, 4, 2, 4, TRUE},
};

enum {
    CUDA_STEP_H = 8,
    CUDA_STEP_A = 4,
    CUDA_STEP_S = 4,
    CUDA_STEP_F = 16,
    CUDA_STEP_V = 16
};

/* (transfer full): the step of `c` with `dtype`; *cfg the matching reference configuration
 * (for the parameters' names and shapes). */
static SimparSchedule *
cuda_test_step(const CudaStepCase *c, SimparDtype dtype, RefStepConfig *cfg)
{
    SimparModel model = {"test",
                         CUDA_STEP_H,
                         CUDA_STEP_A,
                         CUDA_STEP_S,
                         c->b,
                         c->layers,
                         CUDA_STEP_F,
                         CUDA_STEP_V,
                         dtype,
                         0,
                         SIMPAR_MLP_GELU,
                         SIMPAR_NORM_LAYERNORM,
                         FALSE,
                         FALSE,
                         0,
                         {0},
                         {0},
                         0,
                         0};
    SimparTrain tr;
    simpar_train_init(&tr);
    tr.tp.gen = simpar_generator_of("1d");
    tr.tp.tp = c->tp, tr.tp.sequence_parallel = c->sp, tr.tp.recompute = SIMPAR_RECOMPUTE_FULL;
    tr.tp.p_hidden = tr.tp.p_attn = 0.1, tr.tp.seed = cuda_test_seed * 31 + 7;
    tr.pp = c->pp, tr.dp = 1, tr.virtual_stages = 1, tr.schedule = SIMPAR_PIPE_1F1B;
    tr.global_batch = c->m * c->b;
    /* Adam's eps well above the noise of a gradient that is zero in exact arithmetic (about
     * 1e-17 in fp64, 1e-8 in fp32), which Adam would otherwise turn into +-lr */
    double eps = dtype == SIMPAR_DTYPE_FP64 ? 1e-6 : 1e-2;
    tr.adam = (SimparAdamConfig){1e-2, 0.9, 0.95, eps, 0.01};
    *cfg = (RefStepConfig){.layer = {(guint) c->b, CUDA_STEP_S, CUDA_STEP_H, CUDA_STEP_A,
                                     CUDA_STEP_F, FALSE, tr.tp.eps, 0.1, 0.1, tr.tp.seed},
                           .vocab = CUDA_STEP_V,
                           .layers = (guint) c->layers,
                           .replicas = 1,
                           .micro_batches = (guint) c->m,
                           .step = 1};
    g_autoptr(GError) error = NULL;
    g_autoptr(SimparSchedule) layer = NULL;
    SimparSchedule *sched = NULL;
    if (simpar_train_validate(&tr, &model, (guint64) (c->tp * c->pp), &error) &&
        (layer = simpar_generate_layer(&model, &tr.tp, &error)) != NULL)
        sched = simpar_step_build_ops(&model, &tr, layer, &error);
    if (sched == NULL)
        printf("\n    T%" G_GINT64_FORMAT " P%" G_GINT64_FORMAT ": %s", c->tp, c->pp,
               error->message);
    return sched;
}

/* The value of input shard `sh` at (r, c): a parameter, or a token id or target. */
static double
cuda_test_step_value(RefStepParams *params, const guint64 *ids[2], const SimparShard *sh, guint64 r,
                     guint64 c)
{
    if (g_str_equal(sh->tensor, "tokens") || g_str_equal(sh->tensor, "targets"))
        return (double) ids[g_str_equal(sh->tensor, "targets")][sh->row0 + r];
    for (guint i = 0; i < params->n; i++) {
        const RefParam *p = &params->params[i];
        if (g_str_equal(p->name, sh->tensor))
            return p->value[(sh->row0 + r) * p->cols + sh->col0 + c];
    }
    g_error("input shard of unknown tensor '%s'", sh->tensor);
}

/* Random parameters, tokens and targets, scattered into the host's buffers. */
static void
cuda_test_step_inputs(const SimparSchedule *sched, SimparHost *host, const RefStepConfig *cfg)
{
    g_autoptr(GRand) rng = g_rand_new_with_seed((guint32) cuda_test_seed);
    g_autoptr(RefStepParams) params = ref_step_params_new(cfg);
    ref_step_params_fill(params, rng);
    gsize n_ids = (gsize) cfg->micro_batches * cfg->layer.b * cfg->layer.s;
    g_autofree guint64 *tokens = g_new(guint64, n_ids), *targets = g_new(guint64, n_ids);
    for (gsize i = 0; i < n_ids; i++) {
        tokens[i] = (guint64) g_rand_int_range(rng, 0, CUDA_STEP_V);
        targets[i] = (guint64) g_rand_int_range(rng, 0, CUDA_STEP_V);
    }
    const guint64 *ids[2] = {tokens, targets};
    guint n;
    const SimparShard *sh = simpar_schedule_shards(sched, &n);
    for (guint i = 0; i < n; i++) {
        if (sh[i].role != SIMPAR_SHARD_INPUT)
            continue;
        double *dst = simpar_host_buffer(host, sh[i].view.buf) + sh[i].view.off;
        for (guint64 r = 0; r < sh[i].rows; r++)
            for (guint64 c = 0; c < sh[i].cols; c++)
                dst[r * sh[i].cols + c] = cuda_test_step_value(params, ids, &sh[i], r, c);
    }
}

static void
cuda_test_steps(SimparDtype dtype)
{
    for (guint i = 0; i < G_N_ELEMENTS(cuda_step_cases); i++) {
        const CudaStepCase *c = &cuda_step_cases[i];
        g_autofree char *what = g_strdup_printf("step T%" G_GINT64_FORMAT " P%" G_GINT64_FORMAT
                                                " m%" G_GINT64_FORMAT " L%" G_GINT64_FORMAT "%s",
                                                c->tp, c->pp, c->m, c->layers, c->sp ? " sp" : "");
        RefStepConfig cfg;
        g_autoptr(SimparSchedule) sched = cuda_test_step(c, dtype, &cfg);
        CU_ASSERT_PTR_NOT_NULL_FATAL(sched);
        if (!cuda_test_fits(sched, what))
            continue;
        g_autoptr(SimparHost) host = simpar_host_new(sched);
        cuda_test_step_inputs(sched, host, &cfg);
        cuda_test_against_host(sched, host, what);
    }
}

static void
test_steps_fp64(void)
{
    cuda_test_steps(SIMPAR_DTYPE_FP64);
}

static void
test_steps_fp32(void)
{
    cuda_test_steps(SIMPAR_DTYPE_FP32);
}

/* ---------------------------------------------------------------- timing and timeouts */

/* The 1-D layer on as many GPUs as there are, up to 4. */
static SimparSchedule *
cuda_test_timed_layer(void)
{
    guint i = cuda_test_gpus >= 4 ? 3 : cuda_test_gpus >= 2 ? 1 : 0;
    RefShape shape;
    return cuda_test_layer(&cuda_layer_cases[i], SIMPAR_DTYPE_FP32, &shape);
}

/* Two runs in a row: every op gets end >= start >= 0 (seconds from the rank's origin), and the
 * step, the latest end, is positive. */
static void
test_timing(void)
{
    g_autoptr(SimparSchedule) sched = cuda_test_timed_layer();
    CU_ASSERT_PTR_NOT_NULL_FATAL(sched);
    g_autoptr(GError) error = NULL;
    g_autoptr(SimparCuda) cu = cuda_test_new(sched, 0, &error);
    CU_ASSERT_PTR_NOT_NULL_FATAL(cu);
    guint n = simpar_schedule_n_ops(sched);
    g_autofree SimparSpan *spans = g_new(SimparSpan, n);
    for (guint run = 0; run < 2; run++) {
        for (guint i = 0; i < n; i++)
            spans[i] = (SimparSpan){-1.0, -1.0};
        gboolean ran = simpar_cuda_run(cu, spans, &error);
        if (!ran)
            printf("\n    %s", error->message);
        CU_ASSERT_TRUE_FATAL(ran);
        double step = 0;
        guint bad = 0;
        for (guint i = 0; i < n; i++) {
            bad += !(spans[i].start >= 0 && spans[i].end >= spans[i].start);
            step = MAX(step, spans[i].end);
        }
        printf("\n    run %u: %u ops on %u GPUs, step %.3f ms, %u ops with bad times", run + 1, n,
               simpar_schedule_n_ranks(sched), 1e3 * step, bad);
        CU_ASSERT_EQUAL(bad, 0);
        CU_ASSERT(step > 0);
    }
}

/* Two ranks, one group of both: `n_ar` all-reduces "ar.0", "ar.1", ... of 4 floats each. */
static SimparSchedule *
cuda_test_pair(guint n_ar)
{
    SimparSchedule *s = simpar_schedule_new(2, SIMPAR_DTYPE_FP32);
    const guint both[2] = {0, 1};
    guint g = simpar_schedule_add_group(s, "tp", both, 2);
    for (guint r = 0; r < 2; r++) {
        SimparView v = {simpar_schedule_add_buffer(s, r, "x", 4), 0};
        for (guint i = 0; i < n_ar; i++) {
            g_autofree char *name = g_strdup_printf("ar.%u", i);
            SimparOp op = {.kind = SIMPAR_OP_COLLECTIVE, .rank = r, .name = name};
            op.u.coll = (SimparColl){SIMPAR_COLL_ALL_REDUCE, g, 4, 0, v, v, SIMPAR_RED_SUM};
            simpar_schedule_add_op(s, &op);
        }
    }
    return s; /* (transfer full) */
}

/* One rank of a two-rank run in a thread of its own, as a process of its own would run it:
 * simpar_cuda_new, then (if `run`) one run. */
typedef struct {
    const SimparSchedule *sched;
    guint rank;
    const guint8 *id;
    gboolean run;
    SimparCuda *cu;
    gboolean ran;
    GError *error;
    double seconds; /* how long it took */
} CudaPeer;

static gpointer
cuda_test_peer_main(gpointer data)
{
    CudaPeer *p = data;
    int device = (int) p->rank;
    SimparCudaConfig cfg = {1, &p->rank, &device, p->id, FALSE, 1.0};
    gint64 t0 = g_get_monotonic_time();
    p->cu = simpar_cuda_new(p->sched, &cfg, &p->error);
    if (p->cu != NULL && p->run)
        p->ran = simpar_cuda_run(p->cu, NULL, &p->error);
    p->seconds = (double) (g_get_monotonic_time() - t0) / G_USEC_PER_SEC;
    return NULL;
}

/* Rank 0 runs s0 and rank 1 s1 (if `run1`) on GPUs 0 and 1, each in its own thread, both
 * joined; FALSE (skipped) with fewer than 2 GPUs. */
static gboolean
cuda_test_peers(CudaPeer peers[2], const SimparSchedule *s0, const SimparSchedule *s1,
                gboolean run1)
{
    if (cuda_test_gpus < 2) {
        printf("\n    skipped, needs 2 GPUs");
        return FALSE;
    }
    guint8 id[SIMPAR_CUDA_ID_BYTES];
    g_autoptr(GError) error = NULL;
    CU_ASSERT_TRUE_FATAL(simpar_cuda_unique_id(id, &error));
    peers[0] = (CudaPeer){.sched = s0, .rank = 0, .id = id, .run = TRUE};
    peers[1] = (CudaPeer){.sched = s1, .rank = 1, .id = id, .run = run1};
    GThread *t[2];
    for (guint r = 0; r < 2; r++)
        t[r] = g_thread_new("cuda-test-peer", cuda_test_peer_main, &peers[r]);
    for (guint r = 0; r < 2; r++)
        g_thread_join(t[r]);
    return TRUE;
}

static void
cuda_test_peers_clear(CudaPeer peers[2])
{
    for (guint r = 0; r < 2; r++) {
        g_clear_pointer(&peers[r].cu, simpar_cuda_free);
        g_clear_error(&peers[r].error);
    }
}

/* `error` is a timeout after about `timeout_s` (not a hang) whose message holds every `want`. */
static void
cuda_test_timed_out(const GError *error, double seconds, const char *const *want)
{
    CU_ASSERT(g_error_matches(error, SIMPAR_WATCH_ERROR, SIMPAR_WATCH_ERROR_TIMEOUT));
    CU_ASSERT(seconds < 30);
    if (error == NULL)
        return;
    printf("\n    after %.1f s: %s", seconds, error->message);
    for (guint i = 0; want[i] != NULL; i++)
        CU_ASSERT_PTR_NOT_NULL(strstr(error->message, want[i]));
}

/* A peer that never arrives: this process runs rank 0 of a two-rank schedule and nobody runs
 * rank 1, so ncclCommInitRankConfig never completes; after the 1 s timeout simpar_cuda_new
 * fails, names the step and the waiting rank, and says what to do. */
static void
test_setup_timeout(void)
{
    g_autoptr(SimparSchedule) sched = cuda_test_pair(1);
    guint8 id[SIMPAR_CUDA_ID_BYTES];
    g_autoptr(GError) error = NULL;
    CU_ASSERT_TRUE_FATAL(simpar_cuda_unique_id(id, &error));
    const guint rank = 0;
    const int device = 0;
    SimparCudaConfig cfg = {1, &rank, &device, id, FALSE, 1.0};
    gint64 t0 = g_get_monotonic_time();
    g_autoptr(SimparCuda) cu = simpar_cuda_new(sched, &cfg, &error);
    double seconds = (double) (g_get_monotonic_time() - t0) / G_USEC_PER_SEC;
    CU_ASSERT_PTR_NULL(cu);
    const char *want[] = {"creating the NCCL communicator of all 2 ranks",
                          "no progress for 1 s",
                          "rank 0",
                          "aborted",
                          "same schedule",
                          "--nccl-timeout",
                          NULL};
    cuda_test_timed_out(error, seconds, want);
}

/* Rank 1 sets up but never runs: rank 0's run hangs in its start barrier until the timeout,
 * then fails, aborts its communicators and leaves its SimparCuda unusable but freeable. */
static void
test_run_timeout(void)
{
    g_autoptr(SimparSchedule) sched = cuda_test_pair(1);
    g_autoptr(GError) error = NULL;
    CudaPeer peers[2];
    if (!cuda_test_peers(peers, sched, sched, FALSE))
        return;
    CU_ASSERT_PTR_NOT_NULL(peers[0].cu);
    CU_ASSERT_PTR_NOT_NULL(peers[1].cu);
    CU_ASSERT_FALSE(peers[0].ran);
    const char *want[] = {"running the schedule", "rank 0 in the start barrier", "aborted", NULL};
    cuda_test_timed_out(peers[0].error, peers[0].seconds, want);
    if (peers[0].cu != NULL) {
        CU_ASSERT_FALSE(simpar_cuda_run(peers[0].cu, NULL, &error));
        CU_ASSERT(g_error_matches(error, SIMPAR_CUDA_ERROR, SIMPAR_CUDA_ERROR_INVALID));
        g_clear_error(&error);
        double x[4];
        CU_ASSERT_FALSE(simpar_cuda_read(peers[0].cu, 0, x, &error));
        CU_ASSERT(g_error_matches(error, SIMPAR_CUDA_ERROR, SIMPAR_CUDA_ERROR_INVALID));
    }
    cuda_test_peers_clear(peers);
}

/* A mismatched schedule: rank 0 runs two all-reduces, rank 1 (another schedule, as another
 * process with other options would) one. Rank 1 finishes; rank 0 times out naming its second
 * all-reduce and its group. */
static void
test_mismatch_timeout(void)
{
    g_autoptr(SimparSchedule) two = cuda_test_pair(2);
    g_autoptr(SimparSchedule) one = cuda_test_pair(1);
    CudaPeer peers[2];
    if (!cuda_test_peers(peers, two, one, TRUE))
        return;
    CU_ASSERT_TRUE(peers[1].ran);
    CU_ASSERT_FALSE(peers[0].ran);
    const char *want[] = {"'ar.1'", "2 of 2 on rank 0", "all-reduce on group 0 'tp' of 2 ranks",
                          "unfinished", NULL};
    cuda_test_timed_out(peers[0].error, peers[0].seconds, want);
    cuda_test_peers_clear(peers);
}

/* ---------------------------------------------------------------- refusals */

/* simpar_cuda_new(sched) with these ranks and devices fails with `code` of `domain`. */
static void
cuda_test_refused(const SimparSchedule *sched, guint n_local, const guint *ranks,
                  const int *devices, GQuark domain, gint code)
{
    guint8 id[SIMPAR_CUDA_ID_BYTES] = {0}; /* never used: every refusal comes first */
    SimparCudaConfig cfg = {n_local, ranks, devices, id, FALSE, 0};
    g_autoptr(GError) error = NULL;
    g_autoptr(SimparCuda) cu = simpar_cuda_new(sched, &cfg, &error);
    CU_ASSERT_PTR_NULL(cu);
    CU_ASSERT(g_error_matches(error, domain, code));
    if (error != NULL)
        printf("\n    %s", error->message);
}

static void
test_refusals(void)
{
    g_autoptr(SimparSchedule) two = simpar_schedule_new(2, SIMPAR_DTYPE_FP32);
    const guint ranks01[2] = {0, 1}, rank2[1] = {2}, ranks00[2] = {0, 0};
    const int dev0[2] = {0, 0}, dev01[2] = {0, 1}, dev_n[1] = {cuda_test_gpus};
    cuda_test_refused(two, 0, ranks01, dev01, SIMPAR_CUDA_ERROR, SIMPAR_CUDA_ERROR_INVALID);
    cuda_test_refused(two, 1, rank2, dev01, SIMPAR_CUDA_ERROR, SIMPAR_CUDA_ERROR_INVALID);
    cuda_test_refused(two, 2, ranks00, dev01, SIMPAR_CUDA_ERROR, SIMPAR_CUDA_ERROR_INVALID);
    cuda_test_refused(two, 1, ranks01, dev_n, SIMPAR_CUDA_ERROR, SIMPAR_CUDA_ERROR_NO_DEVICE);
    cuda_test_refused(two, 2, ranks01, dev0, SIMPAR_CUDA_ERROR, SIMPAR_CUDA_ERROR_INVALID);

    /* members that disagree on a count: simpar_schedule_check's refusal */
    const guint group[2] = {0, 1};
    guint g = simpar_schedule_add_group(two, "tp", group, 2);
    for (guint r = 0; r < 2; r++) {
        SimparOp op = {.kind = SIMPAR_OP_COLLECTIVE, .rank = r, .name = "ar"};
        SimparView v = {simpar_schedule_add_buffer(two, r, "x", 4), 0};
        op.u.coll = (SimparColl){SIMPAR_COLL_ALL_REDUCE, g, 2 + r, 0, v, v, SIMPAR_RED_SUM};
        simpar_schedule_add_op(two, &op);
    }
    cuda_test_refused(two, 2, ranks01, dev01, SIMPAR_SCHEDULE_ERROR,
                      SIMPAR_SCHEDULE_ERROR_MISMATCH);

    /* an all-gather whose send overlaps its recv other than in place */
    g_autoptr(SimparSchedule) one = simpar_schedule_new(1, SIMPAR_DTYPE_FP32);
    guint solo = simpar_schedule_add_group(one, "tp", group, 1);
    guint b = simpar_schedule_add_buffer(one, 0, "x", 4);
    SimparOp ag = {.kind = SIMPAR_OP_COLLECTIVE, .name = "fwd.overlapping.all-gather"};
    ag.u.coll = (SimparColl){SIMPAR_COLL_ALL_GATHER, solo, 2, 0, {b, 1}, {b, 0}, SIMPAR_RED_SUM};
    simpar_schedule_add_op(one, &ag);
    cuda_test_refused(one, 1, ranks01, dev01, SIMPAR_CUDA_ERROR, SIMPAR_CUDA_ERROR_INVALID);
}

/* ---------------------------------------------------------------- registry */

static CU_TestInfo cuda_tests[] = {
    {"fp64 layers of every mode that fits equal the host executor's to 1e-9", test_layers_fp64},
    {"fp32 layers of every mode that fits equal the host executor's to 1e-4", test_layers_fp32},
    {"fp64 training steps that fit equal the host executor's to 1e-9", test_steps_fp64},
    {"fp32 training steps that fit equal the host executor's to 1e-4", test_steps_fp32},
    {"Two runs in a row time every op with end >= start >= 0 and a positive step", test_timing},
    {"A rank that never arrives times out in ncclCommInitRankConfig instead of hanging",
     test_setup_timeout},
    {"A peer that never runs times out the start barrier; the executor is then unusable",
     test_run_timeout},
    {"A mismatched schedule times out naming the unfinished all-reduce and its group",
     test_mismatch_timeout},
    {"Bad ranks, devices, collectives and overlaps are refused with the right error",
     test_refusals},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo cuda_suites[] = {
    {"CUDA executor = host executor", NULL, NULL, NULL, NULL, cuda_tests},
    CU_SUITE_INFO_NULL,
};

int
main(int argc, char **argv)
{
    g_autoptr(GError) error = NULL;
    if (!simpar_cuda_devices(&cuda_test_gpus, &error)) {
        printf("test-cuda: skipped: %s\n", error->message);
        return 77;
    }
    if (argc > 1)
        cuda_test_seed = g_ascii_strtoull(argv[1], NULL, 10);
    printf("test-cuda: seed %" G_GUINT64_FORMAT ", %d GPUs\n", cuda_test_seed, cuda_test_gpus);
    for (int d = 0; d < cuda_test_gpus; d++) {
        g_autofree char *name = simpar_cuda_device_name(d);
        printf("  device %d: %s\n", d, name);
    }
    return simpar_test_main(cuda_suites);
}
