/* test-step.c - whole training steps against closed forms (pipeline schedules as GPipe, 1F1B
 * and Megatron-LM's interleaved 1F1B define them; data parallelism and ZeRO as DDP and
 * DeepSpeed run them): equal stages, blocks of given times, a network that costs nothing (or a
 * uniform one), the analytic backend. */
#include "ends.h"
#include "generators.h"
#include "pipeline.h"
#include "predict/step-predict.h"
#include "step.h"
#include "tests/simpar-test.h"
#include <math.h>
#include <string.h>

/* ----- a uniform network: every route `lat` seconds and `bw` bytes per second ----- */

typedef struct {
    double lat, bw;
    guint per_node;
} TestNet;

static void
test_route(const SimparNet *net, guint src, guint dst, SimparRoute *out)
{
    const TestNet *t = net->data;
    (void) src, (void) dst;
    *out = (SimparRoute){t->lat, t->bw};
}

static guint
test_node(const SimparNet *net, guint gpu)
{
    return gpu / ((const TestNet *) net->data)->per_node;
}

typedef struct {
    SimparModel model;
    SimparTrain train;
    SimparSchedule *layer, *step;
    SimparBlockTimes bt;
    SimparRun run;
    SimparSpan *spans;
    double *compute;
    guint *gpus;
    TestNet tnet;
    SimparNet net;
    SimparGpu gpu;
    SimparReportRow row;
    gboolean time_ops; /* the ops but blocks timed by simpar_compute_times on gpu, else free */
    double embed_f, embed_b, mtp_f, mtp_b; /* the embedding's and "mtp.*" blocks (0: free) */
} StepCase;

static void
step_case_init(StepCase *c, gint64 layers, gint64 pp, gint64 dp, SimparPipeSchedule kind, gint64 v,
               gint64 m)
{
    *c = (StepCase){0};
    g_assert(simpar_model_preset("tiny", &c->model, NULL));
    c->model.layers = layers;
    simpar_train_init(&c->train);
    c->train.pp = pp, c->train.dp = dp, c->train.schedule = kind, c->train.virtual_stages = v;
    c->train.global_batch = m * c->model.micro_batch * dp;
    c->tnet = (TestNet){0, 1e30, 8};
    c->net = (SimparNet){test_route, test_node, &c->tnet, NULL, NULL, NULL, NULL, NULL};
    simpar_gpu_init(&c->gpu);
    c->gpu.peak_flops[c->model.dtype] = 1e12;
    c->gpu.mem_bw_Bps = 1e12, c->gpu.mem_bytes = 1e12;
}

/* Builds and runs the step with block times per chunk: forward tf, backward tb (split over the
 * chunk's layers), ends and optimizer free unless set. */
static void
step_case_run(StepCase *c, double tf, double tb, double head_f, double head_b)
{
    g_autoptr(GError) err = NULL;
    guint64 gpus = (guint64) simpar_train_group(&c->train) * c->train.pp * c->train.dp;
    CU_ASSERT_TRUE_FATAL(simpar_train_validate(&c->train, &c->model, gpus, &err));
    c->layer = simpar_generate_layer(&c->model, &c->train.tp, &err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c->layer);
    c->step = simpar_step_build(&c->model, &c->train, c->layer);
    CU_ASSERT_TRUE_FATAL(simpar_schedule_check(c->step, NULL));
    c->bt.time_s = g_hash_table_new_full(NULL, NULL, NULL, g_free);
    c->bt.compute_s = g_hash_table_new_full(NULL, NULL, NULL, g_free);
    c->bt.layer_axes = g_array_new(FALSE, FALSE, sizeof(SimparAxisTime));

    const struct {
        const char *key;
        double t;
    } times[] = {{"layer.fwd", tf / c->train.layers_per_chunk},
                 {"layer.bwd", tb / c->train.layers_per_chunk},
                 {"aux.fwd", head_f},
                 {"aux.bwd", head_b},
                 {"head.fwd", head_f},
                 {"head.bwd", head_b},
                 {"embed.fwd", c->embed_f},
                 {"embed.bwd", c->embed_b},
                 {"mtp.fwd", c->mtp_f},
                 {"mtp.bwd", c->mtp_b}};

    for (guint i = 0; i < G_N_ELEMENTS(times); i++) {
        double *t = g_new(double, 1), *z = g_new(double, 1);
        *t = *z = times[i].t;
        g_hash_table_insert(c->bt.time_s, (gpointer) g_intern_string(times[i].key), t);
        g_hash_table_insert(c->bt.compute_s, (gpointer) g_intern_string(times[i].key), z);
    }
    guint n = simpar_schedule_n_ops(c->step), ranks = simpar_schedule_n_ranks(c->step);
    c->compute = g_new0(double, n);
    if (c->time_ops)
        simpar_compute_times(&c->gpu, c->step, SIMPAR_ATTENTION_UNFUSED, c->compute);
    for (guint i = 0; i < n; i++) {
        const SimparOp *op = simpar_schedule_op(c->step, i);
        if (op->kind == SIMPAR_OP_BLOCK)
            c->compute[i] = op->u.block.count * simpar_block_time(&c->bt, op->u.block.key);
    }
    c->gpus = g_new(guint, ranks);
    for (guint r = 0; r < ranks; r++)
        c->gpus[r] = r;
    const SimparBackend *be;
    CU_ASSERT_TRUE_FATAL(simpar_backend_lookup("analytic", &be, NULL));
    c->run = (SimparRun){.sched = c->step,
                         .n_layers = 1,
                         .gpus = c->gpus,
                         .net = &c->net,
                         .compute_s = c->compute,
                         .mode = SIMPAR_COLL_MODE_FUSED};
    simpar_coll_params_init(&c->run.coll);
    c->spans = g_new(SimparSpan, n);
    be->run(&c->run, c->spans);
    simpar_step_breakdown(&c->run, c->spans, &c->bt, &c->model, &c->train, NULL, &c->row);
}

static void
step_case_clear(StepCase *c)
{
    simpar_schedule_free(c->layer);
    simpar_schedule_free(c->step);
    simpar_block_times_clear(&c->bt);
    g_free(c->spans), g_free(c->compute), g_free(c->gpus);
    if (c->row.axes != NULL)
        g_array_free(c->row.axes, TRUE);
    g_free(c->row.step.placement);
}

#define EPS 1e-9

/* GPipe and 1F1B: (m + P - 1)(tF + tB); bubble per device (P - 1)(tF + tB) = (P-1)/m of ideal. */
static void
test_step_gpipe_1f1b(void)
{
    const SimparPipeSchedule kinds[] = {SIMPAR_PIPE_GPIPE, SIMPAR_PIPE_1F1B};
    const guint ps[] = {2, 4}, ms[] = {1, 4, 8};
    for (guint k = 0; k < 2; k++)
        for (guint a = 0; a < G_N_ELEMENTS(ps); a++)
            for (guint b = 0; b < G_N_ELEMENTS(ms); b++) {
                guint P = ps[a], m = ms[b];
                StepCase c;
                step_case_init(&c, 8, P, 1, kinds[k], 1, m);
                step_case_run(&c, 1.0, 2.0, 0, 0);
                CU_ASSERT_DOUBLE_EQUAL(c.row.step_s, (m + P - 1) * 3.0, EPS);
                CU_ASSERT_DOUBLE_EQUAL(c.row.step.bubble_s / (m * 3.0), (P - 1.0) / m, EPS);
                CU_ASSERT_DOUBLE_EQUAL(c.row.compute_s, m * 3.0, EPS);
                step_case_clear(&c);
            }
}

/* Interleaved: m (tF + tB) + (P - 1)(tF + tB) / v, bubble fraction (P - 1) / (v m). */
static void
test_step_interleaved(void)
{
    const guint cases[][3] = {{2, 2, 4}, {4, 2, 8}, {4, 4, 8}, {2, 3, 6}};
    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        guint P = cases[i][0], v = cases[i][1], m = cases[i][2];
        StepCase c;
        step_case_init(&c, 48, P, 1, SIMPAR_PIPE_INTERLEAVED, v, m);
        step_case_run(&c, 1.0 / v, 2.0 / v, 0, 0); /* per chunk: the device's tF, tB over v */
        CU_ASSERT_DOUBLE_EQUAL(c.row.step_s, m * 3.0 + (P - 1) * 3.0 / v, EPS);
        CU_ASSERT_DOUBLE_EQUAL(c.row.step.bubble_s / (m * 3.0), (P - 1.0) / (v * m), EPS);
        step_case_clear(&c);
    }
}

/* Local parallelism: synchronous (k-1) tF + m (tF + tH + tB); asynchronous, in steady state,
 * m max_i (tF + tH + tB); the same split pipelined by 1F1B is slower. */
static void
test_step_local(void)
{
    const guint ks[] = {2, 4}, ms[] = {1, 8};
    for (guint a = 0; a < G_N_ELEMENTS(ks); a++)
        for (guint b = 0; b < G_N_ELEMENTS(ms); b++) {
            guint K = ks[a], m = ms[b];
            StepCase c;
            step_case_init(&c, 8, K, 1, SIMPAR_PIPE_LOCAL, 1, m);
            step_case_run(&c, 1.0, 2.0, 0.1, 0.2);
            CU_ASSERT_DOUBLE_EQUAL(c.row.step_s, (K - 1) * 1.0 + m * 3.3, EPS);
            step_case_clear(&c);
            step_case_init(&c, 8, K, 1, SIMPAR_PIPE_LOCAL, 1, m);
            c.train.local_async = TRUE;
            step_case_run(&c, 1.0, 2.0, 0.1, 0.2);
            CU_ASSERT_DOUBLE_EQUAL(c.row.step_s, m * 3.3, EPS);
            step_case_clear(&c);
        }
    /* the worked example of the reference: k = p = 4, m = 8, heads free: 27 and 24 vs 33 */
    StepCase c;
    step_case_init(&c, 8, 4, 1, SIMPAR_PIPE_LOCAL, 1, 8);
    step_case_run(&c, 1.0, 2.0, 0, 0);
    CU_ASSERT_DOUBLE_EQUAL(c.row.step_s, 27.0, EPS);
    step_case_clear(&c);
}

/* Bytes one rank moves over data-parallel groups (nccl-tests bus bytes: ring traffic). */
static double
step_dp_traffic(const SimparSchedule *s, guint rank)
{
    guint n;
    const guint *ops = simpar_schedule_rank_ops(s, rank, &n);
    double bytes = 0;
    for (guint i = 0; i < n; i++) {
        const SimparOp *op = simpar_schedule_op(s, ops[i]);
        if (op->kind != SIMPAR_OP_COLLECTIVE)
            continue;
        const SimparGroup *g = simpar_schedule_group(s, op->u.coll.group);
        double full = (double) simpar_op_coll_elems(s, op), f = (g->size - 1.0) / g->size;
        bytes += full * (op->u.coll.kind == SIMPAR_COLL_ALL_REDUCE ? 2 * f : f);
    }
    return bytes;
}

/* ZeRO-3 moves 1.5x the data of DDP (one micro-batch); ZeRO-1 and 2 the same as DDP. */
static void
test_step_zero_volume(void)
{
    double ddp = 0;
    for (gint z = 0; z <= 3; z++) {
        StepCase c;
        step_case_init(&c, 4, 1, 4, SIMPAR_PIPE_1F1B, 1, 1);
        c.model.vocab = 1024; /* ends divisible by D */
        c.train.zero = z;
        c.train.bucket_params = 1000;
        step_case_run(&c, 1.0, 2.0, 0, 0);
        double v = step_dp_traffic(c.step, 0);
        if (z == 0)
            ddp = v;
        CU_ASSERT_TRUE(v > 0);
        CU_ASSERT_DOUBLE_EQUAL(v / ddp, z == 3 ? 1.5 : 1.0, 1e-3);
        step_case_clear(&c);
    }
}

/* Hybrid sharding, --no-reshard and fp32 gradient reductions over D = 8 replicas, against the
 * closed forms per rank in units of its parameters Psi (all-gather and reduce-scatter move
 * (n-1)/n of the whole, all-reduce twice that; DDP moves 2 Psi 7/8):
 *   ZeRO-3, S = 4 (R = 2):  gathers fwd + bwd 2 x 3/4, reduce-scatter 3/4, all-reduce of the
 *                           shard over R 2 (1/4)(1/2)                          = 2.5 Psi
 *   the same, --no-reshard: no backward gathers                               = 1.75 Psi
 *   the same, bf16 with fp32 gradients: reductions twice the elements        = 3.5 Psi
 *   ZeRO-1, S = 2 (R = 4):  reduce-scatter 1/2, all-reduce 2 (1/2)(3/4), gather 1/2 = 1.75
 *   ZeRO-3, S = 1:          no gathers, all-reduce over all 8                 = 1.75 Psi */
static void
test_step_hybrid_sharding(void)
{
    const struct {
        gint zero;
        gint64 S;
        gboolean no_reshard, fp32;
        double want;
    } cases[] = {{0, 0, FALSE, FALSE, 1.75},       {3, 4, FALSE, FALSE, 2.5},
                 {3, 4, TRUE, FALSE, 1.75},        {3, 4, FALSE, TRUE, 3.5},
                 {1, 2, FALSE, FALSE, 1.75},       {3, 1, FALSE, FALSE, 1.75},
                 {3, 8, FALSE, FALSE, 3 * 7.0 / 8}};

    double psi = 0;
    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        StepCase c;
        step_case_init(&c, 4, 1, 8, SIMPAR_PIPE_1F1B, 1, 1);
        c.model.vocab = 1024, c.model.dtype = SIMPAR_DTYPE_BF16;
        c.train.zero = cases[i].zero, c.train.shard_group = cases[i].S;
        c.train.no_reshard = cases[i].no_reshard;
        c.train.grad_dtype_set = cases[i].fp32, c.train.grad_dtype = SIMPAR_DTYPE_FP32;
        c.train.bucket_params = 1000;
        step_case_run(&c, 1.0, 2.0, 0, 0);
        double v = step_dp_traffic(c.step, 3);
        if (i == 0)
            psi = v / 1.75;
        printf("\n    ZeRO-%d S=%" G_GINT64_FORMAT "%s%s: %.4f Psi (want %.4f)", cases[i].zero,
               cases[i].S, cases[i].no_reshard ? " no-reshard" : "", cases[i].fp32 ? " fp32" : "",
               v / psi, cases[i].want);
        CU_ASSERT_DOUBLE_EQUAL(v / psi, cases[i].want, 2e-3);
        step_case_clear(&c);
    }
}

/* Context parallelism C = 2 with D = 2: the gradients of the ranks that hold the same
 * parameters (t, c, d) for every c and d reduce in one group of 4, context-parallel rank fastest
 * (Megatron's data-parallel group with context parallelism): the same volume as D = 4 without
 * it, 2 Psi 3/4, and ZeRO-1 shards the optimizer over the 4. */
static void
test_step_cp_reduction(void)
{
    double v[2], adam[2];
    for (guint k = 0; k < 2; k++) {
        StepCase c;
        step_case_init(&c, 4, 1, k == 0 ? 4 : 2, SIMPAR_PIPE_1F1B, 1, 1);
        c.model.vocab = 1024;
        c.train.tp.cp = k == 0 ? 1 : 2;
        c.train.zero = 1;
        c.train.bucket_params = 1000;
        step_case_run(&c, 1.0, 2.0, 0, 0);
        v[k] = step_dp_traffic(c.step, 0);
        guint n;
        const guint *ops = simpar_schedule_rank_ops(c.step, 0, &n);
        adam[k] = 0;
        for (guint i = 0; i < n; i++) {
            const SimparOp *op = simpar_schedule_op(c.step, ops[i]);
            if (op->kind == SIMPAR_OP_ADAM)
                adam[k] = (double) op->u.adam.count;
            if (op->kind != SIMPAR_OP_COLLECTIVE || k == 0)
                continue;
            const SimparGroup *g = simpar_schedule_group(c.step, op->u.coll.group);
            if (!g_str_equal(g->axis, "dp"))
                continue;
            /* ranks t + T c + T C d with T = 1, C = 2: 0, 1 (c) then 2, 3 (d) */
            CU_ASSERT_EQUAL(g->size, 4);
            for (guint m = 0; m < g->size && g->size == 4; m++)
                CU_ASSERT_EQUAL(simpar_schedule_group_ranks(c.step, op->u.coll.group)[m], m);
        }
        step_case_clear(&c);
    }
    printf("\n    dp traffic C=1 D=4 %.0f, C=2 D=2 %.0f; Adam over %.0f and %.0f", v[0], v[1],
           adam[0], adam[1]);
    CU_ASSERT_TRUE(v[0] > 0);
    CU_ASSERT_DOUBLE_EQUAL(v[1] / v[0], 1, 1e-9);
    CU_ASSERT_DOUBLE_EQUAL(adam[1], adam[0], 0);
}

/* ZeRO-3 with pipelining, as FSDP runs it: parameters gathered before every micro-batch's
 * forward and backward, gradients accumulated whole and reduce-scattered once. Against ZeRO-1
 * (reduce-scatter, all-gather after Adam: 2 Psi 3/4 over D = 4), per rank of stage 0:
 * m = 1: 2 gathers + 1 reduce-scatter = 1.5x; m = 2: 4 + 1 = 2.5x; m = 2 with --no-reshard:
 * 2 + 1 = 1.5x. */
static void
test_step_zero3_pipeline(void)
{
    const struct {
        gint zero;
        gint64 m;
        gboolean no_reshard;
        double ratio;
    } cases[] = {{1, 1, FALSE, 1},
                 {3, 1, FALSE, 1.5},
                 {1, 2, FALSE, 1},
                 {3, 2, FALSE, 2.5},
                 {3, 2, TRUE, 1.5}};

    double zero1[3] = {0, 0, 0};
    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        StepCase c;
        step_case_init(&c, 4, 2, 4, SIMPAR_PIPE_1F1B, 1, cases[i].m);
        c.model.vocab = 1024;
        c.train.zero = cases[i].zero, c.train.no_reshard = cases[i].no_reshard;
        c.train.bucket_params = 1000;
        step_case_run(&c, 1.0, 2.0, 0, 0);
        double v = step_dp_traffic(c.step, 0);
        if (cases[i].zero == 1)
            zero1[cases[i].m] = v;
        printf("\n    ZeRO-%d m=%" G_GINT64_FORMAT "%s: %.4f x ZeRO-1", cases[i].zero, cases[i].m,
               cases[i].no_reshard ? " no-reshard" : "", v / zero1[cases[i].m]);
        CU_ASSERT_DOUBLE_EQUAL(v / zero1[cases[i].m], cases[i].ratio, 2e-3);
        step_case_clear(&c);
    }
}

/* ZeRO-3 with FP8 weights: each layer's gathered weights are cast before its forward, and that
 * cast waits for the gather (it once lost the dependency: a dep added after the next op). */
static void
test_step_zero3_fp8_cast(void)
{
    StepCase c;
    step_case_init(&c, 4, 2, 4, SIMPAR_PIPE_1F1B, 1, 2);
    c.model.vocab = 1024, c.model.dtype = SIMPAR_DTYPE_BF16, c.model.fp8 = SIMPAR_FP8_DELAYED;
    c.train.zero = 3, c.train.bucket_params = 1000;
    step_case_run(&c, 1.0, 2.0, 0, 0);
    guint casts = 0, waiting = 0;
    for (guint i = 0; i < simpar_schedule_n_ops(c.step); i++) {
        const SimparOp *op = simpar_schedule_op(c.step, i);
        if (op->kind != SIMPAR_OP_BLOCK || !g_str_equal(op->u.block.key, "fp8.cast"))
            continue;
        casts++;
        const guint *deps = simpar_schedule_deps(c.step, op);
        for (guint k = 0; k < op->n_deps; k++)
            waiting +=
                g_str_equal(simpar_schedule_op(c.step, deps[k])->name, "dp.all-gather-params");
    }
    /* 8 ranks (P 2 x D 4), 2 layers per stage, 2 micro-batches: a cast per layer forward */
    CU_ASSERT_EQUAL(casts, 8 * 2 * 2);
    CU_ASSERT_EQUAL(waiting, casts);
    step_case_clear(&c);
}

/* ZeRO without data parallelism, and an embedding tied to the output layer on one stage,
 * build and run (they once failed an assertion, or dereferenced the missing DP group): no
 * reduction at all with D = 1, the same step as ZeRO-0; the tied table reduced once. */
static void
test_step_degenerate(void)
{
    double zero0 = 0;
    for (gint z = 0; z <= 3; z++) {
        StepCase c;
        step_case_init(&c, 4, 1, 1, SIMPAR_PIPE_1F1B, 1, 2);
        c.train.zero = z;
        c.train.bucket_params = 1 << 30; /* the ends alone never fill a bucket */
        step_case_run(&c, 1.0, 2.0, 0.1, 0.2);
        CU_ASSERT_EQUAL(step_dp_traffic(c.step, 0), 0);
        if (z == 0)
            zero0 = c.row.step_s;
        CU_ASSERT_DOUBLE_EQUAL(c.row.step_s, zero0, 1e-12);
        step_case_clear(&c);
    }
    for (gint z = 0; z <= 1; z++) {
        StepCase c;
        step_case_init(&c, 4, 1, 2, SIMPAR_PIPE_1F1B, 1, 2);
        c.train.tied_embeddings = TRUE;
        c.train.zero = z;
        c.train.bucket_params = 1 << 30;
        step_case_run(&c, 1.0, 2.0, 0.1, 0.2);
        CU_ASSERT_TRUE(step_dp_traffic(c.step, 0) > 0);
        step_case_clear(&c);
    }
}

/* DDP with overlap: exposed time = the last bucket's end minus the end of the backward, on a
 * network whose reductions take real time. */
static void
test_step_ddp_exposed(void)
{
    const gboolean overlap[] = {FALSE, TRUE};
    double exposed[2];
    for (guint o = 0; o < 2; o++) {
        StepCase c;
        step_case_init(&c, 4, 1, 4, SIMPAR_PIPE_1F1B, 1, 2);
        c.tnet = (TestNet){1e-6, 1e9, 1};
        c.train.overlap_grad_reduce = overlap[o];
        c.train.bucket_params = 20000;
        step_case_run(&c, 1e-3, 2e-3, 0, 0);
        /* on rank 0: the last backward block and the last data-parallel reduction */
        guint n;
        const guint *ops = simpar_schedule_rank_ops(c.step, 0, &n);
        double bwd_end = 0, bucket_end = 0;
        guint buckets = 0;
        for (guint i = 0; i < n; i++) {
            const SimparOp *op = simpar_schedule_op(c.step, ops[i]);
            if (op->kind == SIMPAR_OP_BLOCK)
                bwd_end = MAX(bwd_end, c.spans[ops[i]].end);
            if (op->kind == SIMPAR_OP_COLLECTIVE)
                bucket_end = MAX(bucket_end, c.spans[ops[i]].end), buckets++;
        }
        CU_ASSERT_TRUE(buckets >= 2);
        exposed[o] = bucket_end - bwd_end;
        CU_ASSERT_TRUE(exposed[o] > 0);
        CU_ASSERT_DOUBLE_EQUAL(c.row.step.dp_exposed_s, exposed[o], 1e-12);
        step_case_clear(&c);
    }
    CU_ASSERT_TRUE(exposed[1] < exposed[0]); /* overlap hides part of the reduction */
}

/* The last end of rank 0's ops named `name` (0: none), or the first one's, and how many there
 * are. */
static double
step_rank0_end(const StepCase *c, const char *name, gboolean first, guint *count)
{
    guint n, k = 0;
    const guint *ops = simpar_schedule_rank_ops(c->step, 0, &n);
    double end = 0;
    for (guint i = 0; i < n; i++)
        if (g_str_equal(simpar_schedule_op(c->step, ops[i])->name, name)) {
            double e = c->spans[ops[i]].end;
            end = k == 0 ? e : first ? MIN(end, e) : MAX(end, e);
            k++;
        }
    if (count != NULL)
        *count = k;
    return end;
}

/* --overlap-param-gather on an idle network (P = 1, D = 4, ZeRO-1, 4 layers, 2 micro-batches).
 * Without it the step ends with the parameters' all-gather after Adam, exposed whole (its end
 * minus Adam's; the report's data-parallel exposed time holds it). With it the buckets' gathers run
 * back to back from the step's start, the embedding's first: with buckets of one layer (or end)
 * each and every forward block at least as long as a layer's gather, only the embedding's gather is
 * exposed, and the step is shorter by exactly the gather it no longer waits for less the
 * embedding's. With one bucket there is nothing before the embedding's forward to hide it behind:
 * the same gather, exposed at the start instead of the end, and the same step. Fails with the
 * gathers issued at each forward (no overlap: each layer's gather then adds to its forward) or
 * waiting for nothing. */
static void
test_step_overlap_param_gather(void)
{
    const gint64 bucket[] = {1, 1 << 30};
    for (guint i = 0; i < G_N_ELEMENTS(bucket); i++) {
        double step[2] = {0, 0}, exposed[2] = {0, 0}, dp[2] = {0, 0};
        guint gathers[2] = {0, 0};
        for (guint o = 0; o < 2; o++) {
            StepCase c;
            step_case_init(&c, 4, 1, 4, SIMPAR_PIPE_1F1B, 1, 2);
            c.tnet = (TestNet){1e-6, 1e9, 1};
            c.model.vocab = 1024;
            c.embed_f = 1e-3, c.embed_b = 1e-3;
            c.train.zero = 1, c.train.bucket_params = bucket[i];
            c.train.overlap_param_gather = o;
            step_case_run(&c, 4e-3, 8e-3, 1e-3, 1e-3);
            step[o] = c.row.step_s;
            double gather = step_rank0_end(&c, "dp.all-gather-params", o == 1, &gathers[o]);
            if (o == 0) {
                exposed[o] = gather - step_rank0_end(&c, "optimizer.step0", FALSE, NULL);
            } else { /* the embedding's first forward waits for the first gather */
                exposed[o] = gather;
                CU_ASSERT_DOUBLE_EQUAL(step_rank0_end(&c, "embed.fwd", TRUE, NULL),
                                       gather + c.embed_f, 1e-12);
            }
            dp[o] = c.row.step.dp_exposed_s;
            step_case_clear(&c);
        }
        printf("\n    buckets of %" G_GINT64_FORMAT ": %u gathers, step %.6f -> %.6f s, exposed "
               "gather %.6f -> %.6f s",
               bucket[i], gathers[1], step[0], step[1], exposed[0], exposed[1]);
        CU_ASSERT_EQUAL(gathers[0], 1);
        CU_ASSERT_EQUAL(gathers[1], i == 0 ? 6 : 1); /* embedding, 4 layers, output layer */
        CU_ASSERT_TRUE(exposed[0] > 0);
        CU_ASSERT_DOUBLE_EQUAL(step[0] - step[1], exposed[0] - exposed[1], 1e-12);
        CU_ASSERT_DOUBLE_EQUAL(dp[0] - dp[1], exposed[0] - exposed[1], 1e-12);
        if (i == 0) {
            CU_ASSERT_TRUE(exposed[1] < exposed[0] / 2);
        } else {
            CU_ASSERT_DOUBLE_EQUAL(step[1], step[0], 1e-12);
        }
    }
}

/* --overlap-param-gather with experts: their buckets are gathered over the expert-data-parallel
 * group at the step's start, and every MoE layer's first forward waits for its experts' bucket
 * (one layer a bucket) and its other parameters' as ZeRO 0 and 3 are refused. */
static void
test_step_overlap_param_gather_experts(void)
{
    StepCase c;
    step_case_init(&c, 4, 1, 8, SIMPAR_PIPE_1F1B, 1, 2);
    c.model.vocab = 1024;
    c.model.moe = (SimparMoeConfig){.experts = 8, .top_k = 2, .moe_ffn = 32, .moe_every = 1};
    c.train.ep = 4, c.train.zero = 2, c.train.bucket_params = 1;
    c.train.overlap_param_gather = TRUE;
    step_case_run(&c, 1.0, 2.0, 0, 0);
    guint waits[2] = {0, 0}, n;
    const char *names[2] = {"dp.all-gather-params", "edp.all-gather-params"};
    const guint *ops = simpar_schedule_rank_ops(c.step, 0, &n);
    for (guint i = 0; i < n; i++) {
        const SimparOp *op = simpar_schedule_op(c.step, ops[i]);
        if (op->kind != SIMPAR_OP_BLOCK || !g_str_equal(op->u.block.key, "layer.fwd"))
            continue;
        const guint *deps = simpar_schedule_deps(c.step, op);
        for (guint k = 0; k < op->n_deps; k++)
            for (guint j = 0; j < 2; j++)
                waits[j] += g_str_equal(simpar_schedule_op(c.step, deps[k])->name, names[j]);
    }
    CU_ASSERT_EQUAL(waits[0], 4); /* the first micro-batch's 4 layers, each its two buckets */
    CU_ASSERT_EQUAL(waits[1], 4);
    step_case_clear(&c);
    for (gint z = 0; z <= 3; z += 3) {
        SimparTrain t;
        SimparModel m;
        g_assert(simpar_model_preset("tiny", &m, NULL));
        simpar_train_init(&t);
        t.dp = 2, t.zero = z, t.overlap_param_gather = TRUE;
        g_autoptr(GError) err = NULL;
        CU_ASSERT_FALSE(simpar_train_validate(&t, &m, 2, &err));
        CU_ASSERT_PTR_NOT_NULL(err != NULL ? strstr(err->message, "--overlap-param-gather") : NULL);
    }
}

/* --overlap-param-gather with virtual stages (align_param_gather): on stage 0 of P = 2 with
 * v = 3 chunks of 2 layers, a bucket each, the first two chunks' 5 gathers (the embedding's
 * too) come before any forward, and chunk 2's when the stage's forward x + p is chunk 1's first
 * micro-batch (x = 2: after chunk 0's two forwards, 4 layers). Fails with chunk 2 issued with
 * the first two, or by its layers' hooks. */
static void
test_step_overlap_param_gather_aligned(void)
{
    StepCase c;
    step_case_init(&c, 12, 2, 2, SIMPAR_PIPE_INTERLEAVED, 3, 4);
    c.model.vocab = 1024;
    c.train.zero = 1, c.train.bucket_params = 1, c.train.overlap_param_gather = TRUE;
    step_case_run(&c, 1.0, 2.0, 0, 0);
    guint n, gathers = 0, layers = 0, before[8] = {0};
    const guint *ops = simpar_schedule_rank_ops(c.step, 0, &n);
    for (guint i = 0; i < n; i++) {
        const SimparOp *op = simpar_schedule_op(c.step, ops[i]);
        if (op->kind == SIMPAR_OP_BLOCK && g_str_equal(op->u.block.key, "layer.fwd"))
            layers += op->u.block.count;
        else if (g_str_equal(op->name, "dp.all-gather-params") && gathers < G_N_ELEMENTS(before))
            before[gathers++] = layers;
    }
    CU_ASSERT_EQUAL(gathers, 7); /* the embedding's and 6 layers' */
    for (guint k = 0; k < 5; k++)
        CU_ASSERT_EQUAL(before[k], 0);
    CU_ASSERT_EQUAL(before[5], 4);
    CU_ASSERT_EQUAL(before[6], 4);
    step_case_clear(&c);
}

/* Megatron's placement: tensor-parallel innermost, then data, then pipeline; --order changes it. */
static void
test_step_placement(void)
{
    SimparTrain t;
    SimparModel m;
    g_assert(simpar_model_preset("tiny", &m, NULL));
    m.layers = 4;
    simpar_train_init(&t);
    t.tp.tp = 2, t.pp = 2, t.dp = 3;
    CU_ASSERT_TRUE(simpar_train_validate(&t, &m, 12, NULL));
    CU_ASSERT_EQUAL(simpar_train_rank(&t, 1, 0, 0), 1);
    CU_ASSERT_EQUAL(simpar_train_rank(&t, 0, 1, 0), 2);
    CU_ASSERT_EQUAL(simpar_train_rank(&t, 0, 0, 1), 6);
    CU_ASSERT_TRUE(simpar_train_order_parse("pp,tp,dp", t.order, NULL));
    CU_ASSERT_TRUE(simpar_train_validate(&t, &m, 12, NULL));
    CU_ASSERT_EQUAL(simpar_train_rank(&t, 0, 0, 1), 1);
    CU_ASSERT_EQUAL(simpar_train_rank(&t, 1, 0, 0), 2);
    CU_ASSERT_EQUAL(simpar_train_rank(&t, 0, 1, 0), 4);
    g_autoptr(GError) err = NULL;
    CU_ASSERT_FALSE(simpar_train_order_parse("tp,tp,pp", t.order, &err));
    CU_ASSERT_PTR_NOT_NULL(err != NULL ? strstr(err->message, "--order") : NULL);
    g_clear_error(&err);
    CU_ASSERT_FALSE(simpar_train_validate(&t, &m, 16, &err)); /* 2 x 2 x 3 != 16 */
    CU_ASSERT_PTR_NOT_NULL(err != NULL ? strstr(err->message, "= 12 GPUs") : NULL);
    g_clear_error(&err);
    /* context parallelism C = 2: layer rank t' = t + T c; by default right after tp (3 names
     * put it there too), anywhere with 4 names */
    simpar_train_init(&t);
    t.tp.tp = 2, t.tp.cp = 2, t.pp = 2, t.dp = 3;
    CU_ASSERT_TRUE(simpar_train_validate(&t, &m, 24, NULL));
    CU_ASSERT_EQUAL(simpar_train_rank(&t, 1, 0, 0), 1);
    CU_ASSERT_EQUAL(simpar_train_rank(&t, 2, 0, 0), 2); /* c = 1 */
    CU_ASSERT_EQUAL(simpar_train_rank(&t, 0, 1, 0), 4);
    CU_ASSERT_EQUAL(simpar_train_rank(&t, 0, 0, 1), 12);
    CU_ASSERT_TRUE(simpar_train_order_parse("pp,tp,dp", t.order, NULL));
    CU_ASSERT_TRUE(simpar_train_validate(&t, &m, 24, NULL));
    CU_ASSERT_EQUAL(simpar_train_rank(&t, 2, 0, 0), 4); /* pp, tp, cp, dp */
    CU_ASSERT_TRUE(simpar_train_order_parse("cp,tp,dp,pp", t.order, NULL));
    CU_ASSERT_TRUE(simpar_train_validate(&t, &m, 24, NULL));
    CU_ASSERT_EQUAL(simpar_train_rank(&t, 2, 0, 0), 1); /* c = 1 innermost */
    CU_ASSERT_EQUAL(simpar_train_rank(&t, 1, 0, 0), 2);
    g_autofree char *name = simpar_train_order_name(&t);
    CU_ASSERT_STRING_EQUAL(name, "cp,tp,dp,pp");
    CU_ASSERT_FALSE(simpar_train_order_parse("cp,tp,dp", t.order, &err));
    CU_ASSERT_PTR_NOT_NULL(err != NULL ? strstr(err->message, "give tp, dp and pp once") : NULL);
}

/* Sums over rank `rank`'s collectives on groups of `axis` (elements), with the first such
 * group's members into members[2]; and its Adam ops' counts into adam[2] (0 when absent). */
static double
step_axis_elems(const SimparSchedule *s, guint rank, const char *axis, guint *members, guint *size,
                double *adam)
{
    guint n;
    const guint *ops = simpar_schedule_rank_ops(s, rank, &n);
    double sum = 0;
    guint n_adam = 0;
    *size = 0;
    for (guint i = 0; i < n; i++) {
        const SimparOp *op = simpar_schedule_op(s, ops[i]);
        if (op->kind == SIMPAR_OP_ADAM && n_adam < 2)
            adam[n_adam++] = (double) op->u.adam.count;
        if (op->kind != SIMPAR_OP_COLLECTIVE)
            continue;
        const SimparGroup *g = simpar_schedule_group(s, op->u.coll.group);
        if (!g_str_equal(g->axis, axis))
            continue;
        sum += (double) op->u.coll.count;
        if (*size == 0) {
            *size = g->size;
            for (guint k = 0; k < MIN(g->size, 2u); k++)
                members[k] = simpar_schedule_group_ranks(s, op->u.coll.group)[k];
        }
    }
    return sum;
}

/* Expert data parallelism as Megatron-Core folds it: 8 replicas, EP = 4, so the routed
 * experts' gradients reduce over expert-DP groups of (T C D) / (ETP EP) = 2, the rest over the
 * 8 replicas. Default order tp,cp,ep,dp,pp: rank 0's expert-DP group {0, 4}; ep placed after
 * dp: {0, 1}. The elements each reduces are the layers' expert and dense parameters; ZeRO-1
 * runs Adam on 1/8 of the dense ones and 1/2 of the experts'. A pipeline inside the experts'
 * numbering that puts other GPUs on a stage is refused. */
static void
test_step_expert_groups(void)
{
    const struct {
        const char *order;
        gint zero;
        guint peer;
    } cases[] = {{NULL, 0, 4}, {"tp,dp,ep,pp", 0, 1}, {NULL, 1, 4}};

    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        StepCase c;
        step_case_init(&c, 4, 1, 8, SIMPAR_PIPE_1F1B, 1, 1);
        c.model.vocab = 1024;
        c.model.moe = (SimparMoeConfig){.experts = 8, .top_k = 2, .moe_ffn = 32, .moe_every = 1};
        c.train.ep = 4, c.train.zero = cases[i].zero, c.train.bucket_params = 1000;
        if (cases[i].order != NULL)
            CU_ASSERT_TRUE_FATAL(simpar_train_order_parse(cases[i].order, c.train.order, NULL));
        step_case_run(&c, 1.0, 2.0, 0, 0);
        CU_ASSERT_EQUAL(simpar_train_expert_replicas(&c.train), 2);
        g_autofree SimparRankFacts *f = simpar_schedule_rank_facts(c.layer);
        /* 8 / 4 experts of fc1 [64 x 32] and fc2 [32 x 64] per layer */
        CU_ASSERT_EQUAL(f[0].expert_params, (gsize) 2 * 2 * 64 * 32);
        double experts = 4.0 * (double) f[0].expert_params;
        double dense = 4.0 * (double) (f[0].layer_params - f[0].expert_params) + 2 * 1024 * 64;
        guint em[2] = {0}, dm[2] = {0}, es, ds;
        double adam[2] = {0, 0}, unused[2];
        double ev = step_axis_elems(c.step, 0, "edp", em, &es, adam);
        double dv = step_axis_elems(c.step, 0, "dp", dm, &ds, unused);
        printf("\n    order %s ZeRO-%d: edp group {%u, %u} of %u, %.0f elements; dp %u, %.0f; "
               "Adam %.0f + %.0f",
               cases[i].order ? cases[i].order : "default", cases[i].zero, em[0], em[1], es, ev, ds,
               dv, adam[0], adam[1]);
        CU_ASSERT_EQUAL(es, 2);
        CU_ASSERT_EQUAL(ds, 8);
        CU_ASSERT_EQUAL(em[0], 0);
        CU_ASSERT_EQUAL(em[1], cases[i].peer);
        if (cases[i].zero == 0) { /* all-reduces of every element; one Adam over all */
            CU_ASSERT_DOUBLE_EQUAL(ev, experts, 0.5);
            CU_ASSERT_DOUBLE_EQUAL(dv, dense, 0.5);
            CU_ASSERT_DOUBLE_EQUAL(adam[0], dense + experts, 0.5);
        } else { /* reduce-scatters of 1/2 and 1/8 (bucket remainders left), then gathers */
            CU_ASSERT_DOUBLE_EQUAL(adam[0], floor(dense / 8), 0.5);
            CU_ASSERT_DOUBLE_EQUAL(adam[1], experts / 2, 0.5);
            CU_ASSERT_DOUBLE_EQUAL(ev, experts / 2 + experts / 2, 8);
        }
        step_case_clear(&c);
    }
    SimparTrain t;
    SimparModel m;
    g_assert(simpar_model_preset("tiny", &m, NULL));
    m.layers = 4, m.moe = (SimparMoeConfig){.experts = 8, .top_k = 2, .moe_ffn = 32};
    simpar_train_init(&t);
    t.dp = 8, t.pp = 2, t.ep = 4;
    CU_ASSERT_TRUE_FATAL(simpar_train_order_parse("dp,pp,tp,ep", t.order, NULL));
    g_autoptr(GError) err = NULL;
    CU_ASSERT_FALSE(simpar_train_validate(&t, &m, 16, &err));
    CU_ASSERT_PTR_NOT_NULL(err != NULL ? strstr(err->message, "another stage's experts") : NULL);
}

/* An MoE model's dense layers (--dense-layers K, --moe-every N) in the step, against what the
 * model says of each layer: walking each stage's pipeline order, every forward chunk runs its
 * layers first to last and every backward one last to first, the model's layer index being the
 * layers of the virtual stages before (uneven first stages, interleaved chunks); the layer
 * blocks of the stage's first rank, expanded by their counts, must name each layer's kind
 * ("dense.*" where simpar_model_layer_is_moe says no), and the stage's parameters (one Adam over
 * all at ZeRO 0; the data-parallel and expert-data-parallel reductions) must be the ends' plus
 * each layer's own: a dense layer's (its schedule's share) or an MoE layer's with its experts.
 * Megatron-Core's layouts too, with virtual stages of no decoder layer (the embedding or the
 * loss alone). Fails with the blocks or the layout of every layer an MoE one's. */
static void
test_step_dense_layers(void)
{
    const struct {
        gint64 layers, pp, v, first, dense, every, dp, m, zero;
        gboolean overlap;
        const char *layout; /* --pipeline-model-parallel-layout, or NULL */
    } cases[] = {
        {6, 2, 1, 0, 1, 1, 1, 2, 0, FALSE, NULL}, /* DeepSeek-V3's shape: the first layers dense */
        {8, 2, 2, 0, 1, 2, 1, 4, 0, FALSE, NULL}, /* interleaved, alternating */
        {7, 2, 1, 2, 3, 2, 2, 2, 0, TRUE, NULL},  /* uneven stages, per-layer buckets */
        {6, 1, 1, 0, 2, 3, 2, 2, 0, TRUE, NULL},  /* one stage, every third layer MoE */
        {7, 3, 1, 3, 2, 2, 2, 2, 1, FALSE, NULL}, /* ZeRO-1 */
        {6, 1, 1, 0, 5, 1, 2, 2, 2, FALSE, NULL}, /* ZeRO-2: per layer and micro-batch; one MoE */
        {6, 2, 2, 0, 1, 2, 1, 4, 0, FALSE, "E|t*3|t*3|L"}, /* the ends alone, interleaved */
        {7, 3, 1, 0, 2, 2, 2, 2, 1, TRUE, "E|t*7|L"},      /* ZeRO-1, per-layer buckets */
    };

    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        StepCase c;
        SimparPipeSchedule kind = cases[i].v > 1 ? SIMPAR_PIPE_INTERLEAVED : SIMPAR_PIPE_1F1B;
        step_case_init(&c, cases[i].layers, cases[i].pp, cases[i].dp, kind, cases[i].v, cases[i].m);
        c.model.vocab = 1024;
        c.model.moe = (SimparMoeConfig){.experts = 4,
                                        .top_k = 2,
                                        .moe_ffn = 32,
                                        .dense_layers = cases[i].dense,
                                        .moe_every = cases[i].every};
        c.train.first_stage_layers = cases[i].first;
        c.train.layout = cases[i].layout != NULL ? g_intern_string(cases[i].layout) : NULL;
        c.train.zero = cases[i].zero, c.train.overlap_grad_reduce = cases[i].overlap;
        c.train.bucket_params = 1000;
        step_case_run(&c, 1.0, 2.0, 0, 0);
        CU_ASSERT_TRUE_FATAL(simpar_model_has_dense_layers(&c.model));
        g_autoptr(GError) err = NULL;
        g_autoptr(SimparSchedule) dl = simpar_generate_dense_layer(&c.model, &c.train.tp, &err);
        CU_ASSERT_PTR_NOT_NULL_FATAL(dl);
        g_autofree SimparRankFacts *f = simpar_schedule_rank_facts(c.layer);
        g_autofree SimparRankFacts *fd = simpar_schedule_rank_facts(dl);
        CU_ASSERT_EQUAL(fd[0].expert_params, 0);
        CU_ASSERT(fd[0].layer_params != f[0].layer_params - f[0].expert_params);
        guint P = (guint) c.train.pp, v = (guint) c.train.virtual_stages;
        guint m = (guint) c.train.micro_batches, wrong = 0, dense_seen = 0;
        for (guint p = 0; p < P; p++) {
            /* the expected kinds, layer by layer, in the order the stage runs them */
            g_autoptr(GArray) want = g_array_new(FALSE, FALSE, sizeof(gboolean));
            g_autoptr(GArray) order = simpar_pipeline_order_grouped(
                c.train.schedule, P, v, m, simpar_train_vp_group(&c.train), p);
            for (guint k = 0; k < order->len; k++) {
                const SimparPipeItem *it = &g_array_index(order, SimparPipeItem, k);
                guint vs = it->chunk * P + p, first = 0;
                for (guint j = 0; j < vs; j++)
                    first += simpar_train_stage_layers(&c.train, j);
                guint lc = simpar_train_stage_layers(&c.train, vs);
                for (guint l = 0; l < lc; l++) {
                    gboolean d = !simpar_model_layer_is_moe(
                        &c.model, first + (it->backward ? lc - 1 - l : l));
                    g_array_append_val(want, d);
                }
            }
            /* the expected parameters: the ends and each layer's own, once */
            double dense = p == 0 || p == P - 1 ? 1024.0 * 64 : 0, experts = 0;
            if (P == 1)
                dense *= 2; /* embedding and output layer, untied */
            guint first = 0, count = 0;
            for (guint vs = 0; vs < P * v; vs++) {
                guint lc = simpar_train_stage_layers(&c.train, vs);
                for (guint l = first; vs % P == p && l < first + lc; l++) {
                    gboolean moe = simpar_model_layer_is_moe(&c.model, l);
                    dense += (double) (moe ? f[0].layer_params - f[0].expert_params
                                           : fd[0].layer_params);
                    experts += moe ? (double) f[0].expert_params : 0;
                }
                first += lc;
            }
            guint rank = simpar_train_rank(&c.train, 0, 0, p), n;
            const guint *ops = simpar_schedule_rank_ops(c.step, rank, &n);
            for (guint k = 0; k < n; k++) {
                const SimparOp *op = simpar_schedule_op(c.step, ops[k]);
                if (op->kind != SIMPAR_OP_BLOCK)
                    continue;
                const char *key = op->u.block.key;
                gboolean d = g_str_has_prefix(key, "dense.");
                if (!g_str_has_suffix(key, ".fwd") && !g_str_has_suffix(key, ".bwd"))
                    continue;
                if (!d && !g_str_has_prefix(key, "layer."))
                    continue;
                for (guint j = 0; j < op->u.block.count; j++, count++) {
                    wrong += count >= want->len || g_array_index(want, gboolean, count) != d;
                    dense_seen += d;
                }
            }
            CU_ASSERT_EQUAL(count, want->len);
            guint members[2], size;
            double adam[2] = {0, 0}, unused[2];
            double dv = step_axis_elems(c.step, rank, "dp", members, &size, unused);
            double ev = step_axis_elems(c.step, rank, "edp", members, &size, adam);
            printf("\n    case %u stage %u: %u layer blocks; parameters %.0f + experts %.0f; "
                   "dp %.0f, edp %.0f, Adam %.0f + %.0f",
                   i, p, count, dense, experts, dv, ev, adam[0], adam[1]);
            if (cases[i].zero == 0) { /* all-reduces of every element, where D > 1 */
                CU_ASSERT_DOUBLE_EQUAL(adam[0], dense + experts, 0.5);
                CU_ASSERT_DOUBLE_EQUAL(dv, cases[i].dp > 1 ? dense : 0, 0.5);
                CU_ASSERT_DOUBLE_EQUAL(ev, cases[i].dp > 1 ? experts : 0, 0.5);
            } else if (cases[i].zero == 1) { /* Adam on 1/D of the rest, 1/2 of the experts */
                CU_ASSERT_DOUBLE_EQUAL(adam[0], floor(dense / 2), 0.5);
                CU_ASSERT_DOUBLE_EQUAL(adam[1], floor(experts / 2), 0.5);
            } else { /* reduce-scatters of half of every layer at every micro-batch, then
                      * the all-gathers of the halves */
                CU_ASSERT_DOUBLE_EQUAL(dv, (m + 1) * dense / 2, (m + 1) * 8.0);
                CU_ASSERT_DOUBLE_EQUAL(ev, (m + 1) * experts / 2, (m + 1) * 8.0);
            }
        }
        CU_ASSERT_EQUAL(wrong, 0);
        CU_ASSERT(dense_seen > 0);
        step_case_clear(&c);
    }
}

/* The step from timed blocks against the same step spelled out op by op (a second, independent
 * composition): 1-D layers, 2 stages x 2 replicas, a uniform network that costs something. The
 * op-by-op step adds the gradient-accumulation adds the blocks leave out and lets one layer's
 * communication overlap the next layer's compute; the two agree within 0.5%. */
static double
step_ops_vs_blocks_time(const SimparStepTimer *tm, const SimparSchedule *step,
                        const SimparBlockTimes *bt)
{
    guint ranks = simpar_schedule_n_ranks(step), n = simpar_schedule_n_ops(step);
    g_autofree guint *gpus = g_new(guint, ranks);
    for (guint r = 0; r < ranks; r++)
        gpus[r] = r;
    SimparRun run;
    double *compute;
    g_autofree SimparSpan *spans = simpar_step_run(tm, step, bt, gpus, &run, &compute);
    double end = 0;
    for (guint i = 0; i < n; i++)
        end = MAX(end, spans[i].end);
    g_free(compute);
    return end;
}

/* Megatron-Core's zero_grad_buffer: every rank zeroes its whole gradient buffer once per step,
 * the first op of its compute stream: its parameters (a tiny layer at T = 1 holds 12 h^2 + 13 h =
 * 49984, an end V h = 65536; 4 layers and one end per stage of P = 2), fp32 gradients of 4 bytes
 * for fp32 and bf16 (Megatron-LM accumulates bf16 gradients in fp32) and for fp16 with
 * --grad-reduce-dtype fp32, else the dtype's 2, the same whatever ZeRO shards (its shards are
 * views of the buffer). On one GPU with the op timed (megatron set: a launch and 4 bytes per
 * parameter at 0.8 of 1e12 B/s; Adam's three fp32 passes), the step is the blocks, the zeroing and
 * Adam, and the optimizer figure the zeroing and Adam. */
static void
test_step_zero_grad(void)
{
    const struct {
        SimparDtype dtype;
        gboolean fp32_grads;
        gint64 zero;
        double elem;
    } cases[] = {{SIMPAR_DTYPE_FP32, FALSE, 0, 4},
                 {SIMPAR_DTYPE_BF16, FALSE, 1, 4},
                 {SIMPAR_DTYPE_FP16, FALSE, 0, 2},
                 {SIMPAR_DTYPE_FP16, TRUE, 1, 4}};

    const double layer = 12 * 64 * 64 + 13 * 64, end = 1024 * 64;
    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        StepCase c;
        step_case_init(&c, 8, 2, 2, SIMPAR_PIPE_1F1B, 1, 4);
        c.model.dtype = cases[i].dtype, c.train.zero = cases[i].zero;
        c.train.grad_dtype_set = cases[i].fp32_grads, c.train.grad_dtype = SIMPAR_DTYPE_FP32;
        step_case_run(&c, 1.0, 2.0, 0, 0);
        for (guint r = 0; r < simpar_schedule_n_ranks(c.step); r++) {
            guint n, zeros = 0;
            const guint *ops = simpar_schedule_rank_ops(c.step, r, &n);
            for (guint k = 0; k < n; k++) {
                const SimparOp *op = simpar_schedule_op(c.step, ops[k]);
                if (op->kind != SIMPAR_OP_ZERO_GRAD)
                    continue;
                zeros++;
                CU_ASSERT_EQUAL(k, 0); /* before anything else of the rank */
                CU_ASSERT_EQUAL(op->stream, 0);
                CU_ASSERT_EQUAL(op->u.zero.count, (gsize) (4 * layer + end));
                CU_ASSERT_EQUAL(op->u.zero.elem_bytes, cases[i].elem);
            }
            CU_ASSERT_EQUAL(zeros, 1);
        }
        step_case_clear(&c);
    }
    StepCase c;
    step_case_init(&c, 8, 1, 1, SIMPAR_PIPE_1F1B, 1, 1);
    c.time_ops = TRUE;
    step_case_run(&c, 1.0, 2.0, 0, 0);
    double n = 8 * layer + 2 * end, bw = 1e12 * 0.8;
    double zero = 5e-6 + 4 * n / bw, adam = 3 * 5e-6 + fmax(15 * n / 1e12, 40 * n / bw);
    CU_ASSERT_DOUBLE_EQUAL(c.row.step_s, 3.0 + zero + adam, EPS);
    CU_ASSERT_DOUBLE_EQUAL(c.row.step.optimizer_s, zero + adam, EPS);
    step_case_clear(&c);
}

/* The optimizer step's scalar all-reduces on rank r of a step: the collectives over groups of
 * `axis` (their sizes in size[], reductions in red[]) and the "optimizer.tp-stats" blocks' count;
 * FALSE unless each scalar sits after the rank's data-parallel reductions and before Adam, the
 * loss after it. */
static gboolean
step_scalars_of(const SimparSchedule *step, guint r, const char *axis, guint *n, guint size[4],
                SimparRedOp red[4], gsize *count, guint *tp_blocks)
{
    guint n_ops;
    const guint *ops = simpar_schedule_rank_ops(step, r, &n_ops);
    gboolean adam = FALSE, ok = TRUE, loss = g_str_equal(axis, "loss");
    *n = 0, *tp_blocks = 0;
    for (guint k = 0; k < n_ops; k++) {
        const SimparOp *op = simpar_schedule_op(step, ops[k]);
        adam = adam || op->kind == SIMPAR_OP_ADAM;
        if (op->kind == SIMPAR_OP_BLOCK && g_str_equal(op->u.block.key, "optimizer.tp-stats")) {
            *tp_blocks += op->u.block.count;
            ok = ok && !adam && op->stream == 0;
        }
        if (op->kind != SIMPAR_OP_COLLECTIVE)
            continue;
        const SimparGroup *g = simpar_schedule_group(step, op->u.coll.group);
        if (!g_str_equal(g->axis, axis))
            continue;
        g_assert(*n < 4);
        size[*n] = g->size, red[*n] = op->u.coll.red, *count = op->u.coll.count;
        (*n)++;
        ok = ok && op->stream == 0 && adam == loss;
        const guint *deps = simpar_schedule_deps(step, op); /* every reduction of the rank */
        for (guint d = 0; d < op->n_deps; d++)
            ok = ok && simpar_schedule_op(step, deps[d])->stream == 4;
    }
    return ok;
}

/* The scalar all-reduces (models/step.c, step_scalars and step_loss) at T = 2, P = 2, D = 2:
 *   Megatron, ZeRO 0, bf16: the norm (one fp32: 2 bf16 elements) over the model-parallel group,
 *     its tensor-parallel part a block, the rest over the 2 stages; the loss and its token count
 *     (8 bytes: 4 elements) over the 2 replicas of the last stage after Adam;
 *   Megatron, ZeRO 1, fp16: the inf/nan flag (MAX) and the norm over the whole distributed-
 *     optimizer instance, tensor-parallel part 2 blocks, the rest all 4 (d, p) (also with the
 *     pipeline innermost: --order pp,tp,dp);
 *   PyTorch: none under DDP, the norm over the 2 replicas (the shard group) under ZeRO 1;
 *   none without a framework (simpar-exec's, the default). */
static void
test_step_scalars(void)
{
    const struct {
        SimparScalars scalars;
        SimparDtype dtype;
        gint zero;
        gboolean pp_inside;
        guint n, size, tp_blocks, loss;
        gsize count;
    } cases[] = {
        {SIMPAR_SCALARS_MEGATRON, SIMPAR_DTYPE_BF16, 0, FALSE, 1, 2, 1, 1, 2},
        {SIMPAR_SCALARS_MEGATRON, SIMPAR_DTYPE_FP16, 1, FALSE, 2, 4, 2, 1, 2},
        {SIMPAR_SCALARS_MEGATRON, SIMPAR_DTYPE_FP16, 1, TRUE, 2, 4, 2, 1, 2},
        {SIMPAR_SCALARS_PYTORCH, SIMPAR_DTYPE_BF16, 0, FALSE, 0, 0, 0, 0, 0},
        {SIMPAR_SCALARS_PYTORCH, SIMPAR_DTYPE_BF16, 1, FALSE, 1, 2, 0, 0, 2},
        {SIMPAR_SCALARS_NONE, SIMPAR_DTYPE_BF16, 1, FALSE, 0, 0, 0, 0, 0},
    };

    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        StepCase c;
        step_case_init(&c, 8, 2, 2, SIMPAR_PIPE_1F1B, 1, 4);
        c.model.dtype = cases[i].dtype, c.train.zero = cases[i].zero;
        c.train.tp.tp = 2, c.train.scalars = cases[i].scalars;
        if (cases[i].pp_inside)
            g_assert(simpar_train_order_parse("pp,tp,dp", c.train.order, NULL));
        step_case_run(&c, 1.0, 2.0, 0, 0);
        for (guint r = 0; r < 8; r++) {
            guint n, size[4], tp_blocks;
            SimparRedOp red[4];
            gsize count = 0;
            guint t = r / (guint) c.train.stride[SIMPAR_AXIS_TP] % 2; /* the rank's t */
            gboolean last = r == simpar_train_rank(&c.train, t, 0, 1) ||
                            r == simpar_train_rank(&c.train, t, 1, 1);
            CU_ASSERT_TRUE(
                step_scalars_of(c.step, r, "grad-stats", &n, size, red, &count, &tp_blocks));
            CU_ASSERT_EQUAL(n, cases[i].n);
            CU_ASSERT_EQUAL(tp_blocks, cases[i].tp_blocks);
            for (guint k = 0; k < n; k++) {
                CU_ASSERT_EQUAL(size[k], cases[i].size);
                CU_ASSERT_EQUAL(red[k], k + 1 < n ? SIMPAR_RED_MAX : SIMPAR_RED_SUM);
                CU_ASSERT_EQUAL(count, cases[i].count);
            }
            CU_ASSERT_TRUE(step_scalars_of(c.step, r, "loss", &n, size, red, &count, &tp_blocks));
            CU_ASSERT_EQUAL(n, last ? cases[i].loss : 0);
            if (n > 0)
                CU_ASSERT(size[0] == 2 && count == 4);
        }
        step_case_clear(&c);
    }
}

/* The norm's all-reduce joins the stages: GPipe over P = 2 at m = 1 (tF = 1, tB = 2, each stage's
 * activation and gradient one message of latency a on an idle uniform network) ends at 6 + 2 a
 * on stage 0 and 4 + a on stage 1; the all-reduce of one fp32 over the two stages starts when
 * stage 0 arrives, so the step is 6 + 2 a plus its closed form (two messages: 2 a), all of it in
 * the optimizer figure, with no data-parallel wait. */
static void
test_step_scalars_time(void)
{
    StepCase c;
    step_case_init(&c, 8, 2, 1, SIMPAR_PIPE_GPIPE, 1, 1);
    c.tnet = (TestNet){1e-5, 1e30, 8};
    c.train.scalars = SIMPAR_SCALARS_MEGATRON;
    step_case_run(&c, 1.0, 2.0, 0, 0);
    CU_ASSERT_DOUBLE_EQUAL(c.row.step_s, 6.0 + 2 * 1e-5 + 2 * 1e-5, EPS);
    CU_ASSERT_DOUBLE_EQUAL(c.row.step.optimizer_s, 2 * 1e-5, EPS);
    CU_ASSERT_DOUBLE_EQUAL(c.row.step.dp_exposed_s, 0, EPS);
    step_case_clear(&c);
}

static void
test_step_ops_vs_blocks(void)
{
    static const SimparPipeSchedule kinds[] = {SIMPAR_PIPE_GPIPE, SIMPAR_PIPE_1F1B,
                                               SIMPAR_PIPE_INTERLEAVED};
    for (guint k = 0; k < G_N_ELEMENTS(kinds); k++)
        for (guint sp = 0; sp < 2; sp++) {
            StepCase c;
            step_case_init(&c, 4, 2, 2, kinds[k], kinds[k] == SIMPAR_PIPE_INTERLEAVED ? 2 : 1, 4);
            c.train.tp.tp = 2, c.train.tp.sequence_parallel = sp;
            c.train.overlap_grad_reduce = TRUE, c.train.bucket_params = 20000;
            c.tnet = (TestNet){5e-6, 2e10, 2};
            c.gpu.peak_flops[c.model.dtype] = 1e11;
            c.gpu.mem_bw_Bps = 1e11;
            g_autoptr(GError) err = NULL;
            CU_ASSERT_TRUE_FATAL(simpar_train_validate(&c.train, &c.model, 8, &err));
            g_autoptr(SimparSchedule) layer = simpar_generate_layer(&c.model, &c.train.tp, &err);
            CU_ASSERT_PTR_NOT_NULL_FATAL(layer);
            g_autoptr(SimparSchedule) blocks = simpar_step_build(&c.model, &c.train, layer);
            g_autoptr(SimparSchedule) ops = simpar_step_build_ops(&c.model, &c.train, layer, &err);
            CU_ASSERT_PTR_NOT_NULL_FATAL(ops);
            CU_ASSERT_TRUE_FATAL(simpar_schedule_check(ops, NULL));
            const SimparBackend *be;
            CU_ASSERT_TRUE_FATAL(simpar_backend_lookup("analytic", &be, NULL));
            SimparStepTimer tm = {be,
                                  {.net = &c.net, .mode = SIMPAR_COLL_MODE_FUSED},
                                  &c.gpu,
                                  SIMPAR_ATTENTION_UNFUSED};
            simpar_coll_params_init(&tm.base.coll);
            simpar_block_times_measure(&tm, &c.model, &c.train, layer, &c.bt);
            double tb = step_ops_vs_blocks_time(&tm, blocks, &c.bt);
            double to = step_ops_vs_blocks_time(&tm, ops, &c.bt);
            printf("\n    %s%s: blocks %.6g s (%u ops), op by op %.6g s (%u ops), ratio %.4f ",
                   simpar_pipe_schedule_name(kinds[k]), sp ? " sp" : "", tb,
                   simpar_schedule_n_ops(blocks), to, simpar_schedule_n_ops(ops), to / tb);
            CU_ASSERT(fabs(to / tb - 1) < 0.005);
            simpar_block_times_clear(&c.bt);
        }
}

/* Model FLOPs: 72 B s L h^2 (1 + s/(6h) + V/(12 L h)) for f = 4h. */
static void
test_step_model_flops(void)
{
    SimparModel m;
    SimparTrain t;
    g_assert(simpar_model_preset("gpt3-175b", &m, NULL));
    simpar_train_init(&t);
    t.global_batch = 1536;
    double B = 1536, s = m.seq, L = m.layers, h = m.hidden, V = m.vocab;
    double want = 72 * B * s * L * h * h * (1 + s / (6 * h) + V / (12 * L * h));
    CU_ASSERT_DOUBLE_EQUAL(simpar_train_model_flops(&m, &t) / want, 1.0, 1e-12);
    /* DeepSeek-V3's first 3 of 61 layers pass the dense MLP: 3/61 of the model without experts
     * and 58/61 of the model with every layer an MoE one (fails with every layer an MoE one) */
    SimparModel ds, all_moe, dense;
    g_assert(simpar_model_preset("deepseek-v3", &ds, NULL));
    CU_ASSERT_EQUAL(ds.moe.dense_layers, 3);
    CU_ASSERT_EQUAL(ds.mtp_layers, 1); /* the main model's layers here; the module below */
    ds.mtp_layers = 0;
    all_moe = ds, all_moe.moe.dense_layers = 0;
    simpar_model_dense_layer(&ds, &dense);
    double mix = 3.0 / 61 * simpar_train_model_flops(&dense, &t) +
                 58.0 / 61 * simpar_train_model_flops(&all_moe, &t);
    CU_ASSERT_DOUBLE_EQUAL(simpar_train_model_flops(&ds, &t) / mix, 1.0, 1e-12);
    CU_ASSERT(simpar_train_model_flops(&ds, &t) < simpar_train_model_flops(&all_moe, &t));
    /* multi-token prediction, as Megatron-LM counts it: a GPT-3 layer (72 h^2 + 12 s h a
     * token), eh_proj and its norms (6 (2h^2 + 3h)) and an output layer (6 h V) per module */
    SimparModel mtp = m;
    mtp.mtp_layers = 2;
    double add = 2 * B * s * (72 * h * h + 12 * s * h + 6 * (2 * h * h + 3 * h) + 6 * h * V);
    CU_ASSERT_DOUBLE_EQUAL(
        (simpar_train_model_flops(&mtp, &t) - simpar_train_model_flops(&m, &t)) / add, 1.0, 1e-12);
    /* DeepSeek-V3's module is an MoE layer, its last layer's kind */
    SimparModel ds_mtp = ds, all_mtp = all_moe;
    ds_mtp.mtp_layers = all_mtp.mtp_layers = 1;
    CU_ASSERT_DOUBLE_EQUAL(
        simpar_train_model_flops(&ds_mtp, &t) - simpar_train_model_flops(&ds, &t),
        (simpar_train_model_flops(&all_mtp, &t) - simpar_train_model_flops(&all_moe, &t)), 1e3);
}

/* The blocks of `key` on rank r of a step. */
static guint
step_count_blocks(const SimparSchedule *s, guint r, const char *key)
{
    guint n = 0;
    for (guint i = 0; i < simpar_schedule_n_ops(s); i++) {
        const SimparOp *op = simpar_schedule_op(s, i);
        n += op->rank == r && op->kind == SIMPAR_OP_BLOCK && g_str_equal(op->u.block.key, key);
    }
    return n;
}

/* Multi-token prediction (model.h): D modules a micro-batch on the last stage, each the
 * embedding, "mtp.*", one layer and the output layer forward and backward, so that with blocks
 * of given times on a free network GPipe and 1F1B take (P - 1)(tF + tB) + m (tF + tB + tH + X),
 * X = D (embed + mtp + a layer + head, forward and backward), the last stage never waiting; with
 * P = 1 the embedding's own blocks add m (e.f + e.b). The modules' parameters are the last
 * stage's; with P > 1 the embedding's copy there is all-reduced with the first stage's. */
static void
test_step_mtp(void)
{
    const SimparPipeSchedule kinds[] = {SIMPAR_PIPE_GPIPE, SIMPAR_PIPE_1F1B};
    const guint ps[] = {1, 2, 4}, ms[] = {1, 4, 8}, ds[] = {0, 1, 2};
    const double tf = 1.0, tb = 2.0, hf = 0.25, hb = 0.5, ef = 0.0625, eb = 0.125, mf = 0.03125,
                 mb = 0.0078125;
    for (guint k = 0; k < G_N_ELEMENTS(kinds); k++)
        for (guint a = 0; a < G_N_ELEMENTS(ps); a++)
            for (guint b = 0; b < G_N_ELEMENTS(ms); b++)
                for (guint d = 0; d < G_N_ELEMENTS(ds); d++) {
                    guint P = ps[a], m = ms[b], D = ds[d];
                    StepCase c;
                    step_case_init(&c, 8, P, 1, kinds[k], 1, m);
                    c.model.mtp_layers = D;
                    /* the first stage's own embedding free but for P = 1 (a closed form of
                     * stages alike but the last) */
                    c.embed_f = ef, c.embed_b = eb, c.mtp_f = mf, c.mtp_b = mb;
                    step_case_run(&c, tf, tb, hf, hb);
                    double lpc = 8.0 / P; /* layers a chunk: a layer's block is tF / lpc */
                    double X = D * (ef + mf + tf / lpc + hf + hb + tb / lpc + mb + eb);
                    double first = P == 1 ? m * (ef + eb) : (P - 1) * (ef + eb);
                    double want = (P - 1) * (tf + tb) + m * (tf + tb + hf + hb + X) + first;
                    if (P > 1) /* the first stage's embedding delays the pipeline's fill once */
                        want = (P - 1) * (tf + tb) + ef + eb + m * (tf + tb + hf + hb + X);
                    if (fabs(c.row.step_s - want) > EPS)
                        printf("\n    %s P=%u m=%u D=%u: step %.9g, want %.9g",
                               simpar_pipe_schedule_name(kinds[k]), P, m, D, c.row.step_s, want);
                    CU_ASSERT_DOUBLE_EQUAL(c.row.step_s, want, EPS);
                    guint last = simpar_train_rank(&c.train, 0, 0, P - 1);
                    CU_ASSERT_EQUAL(step_count_blocks(c.step, last, "mtp.fwd"), m * D);
                    CU_ASSERT_EQUAL(step_count_blocks(c.step, last, "mtp.bwd"), m * D);
                    CU_ASSERT_EQUAL(step_count_blocks(c.step, last, "head.bwd"), m * (1 + D));
                    CU_ASSERT_EQUAL(step_count_blocks(c.step, last, "embed.fwd"),
                                    m * (D + (P == 1)));
                    /* the embedding's copy all-reduced between the first and the last stage */
                    guint tied = 0;
                    for (guint i = 0; i < simpar_schedule_n_ops(c.step); i++)
                        tied += g_str_equal(simpar_schedule_op(c.step, i)->name,
                                            "embed.all-reduce-tied");
                    CU_ASSERT_EQUAL(tied, P > 1 && D > 0 ? 2 : 0);
                    /* full recomputation runs each module's "mtp.fwd" again in its backward
                     * (the layer's blocks are given, recomputation and all) */
                    double plain = c.row.step_s;
                    step_case_clear(&c);
                    step_case_init(&c, 8, P, 1, kinds[k], 1, m);
                    c.model.mtp_layers = D, c.train.tp.recompute = SIMPAR_RECOMPUTE_FULL;
                    c.embed_f = ef, c.embed_b = eb, c.mtp_f = mf, c.mtp_b = mb;
                    step_case_run(&c, tf, tb, hf, hb);
                    CU_ASSERT_DOUBLE_EQUAL(c.row.step_s - plain, m * D * mf, EPS);
                    step_case_clear(&c);
                }
}

/* One module's own ops ("mtp.*", ends.c): eh_proj's GEMMs 2 rows 2h h/T forward and twice that
 * backward on each of T ranks, with 1-D's gathers (an all-gather of eh_proj's output; with SP
 * its input's too) and reductions (all-reduce of d input, reduce-scatter with SP). */
static void
test_step_mtp_ends(void)
{
    for (guint sp = 0; sp <= 1; sp++) {
        SimparModel m;
        g_assert(simpar_model_preset("tiny", &m, NULL));
        m.mtp_layers = 1;
        SimparPlan plan;
        simpar_plan_init(&plan);
        plan.gen = simpar_generator_of("1d"), plan.tp = 2, plan.sequence_parallel = sp;
        g_autoptr(GError) err = NULL;
        g_autoptr(SimparSchedule) layer = simpar_generate_layer(&m, &plan, &err);
        CU_ASSERT_PTR_NOT_NULL_FATAL(layer);
        g_autoptr(SimparSchedule) ends =
            simpar_ends_build(&m, &plan, layer, m.vocab, SIMPAR_ENDS_MTP);
        CU_ASSERT_TRUE(simpar_schedule_check(ends, NULL));
        double rows = (double) (m.micro_batch * m.seq), h = (double) m.hidden;
        double gemm[2] = {0}, colls[2] = {0};
        guint ag[2] = {0}, ar = 0, rs = 0;
        for (guint i = 0; i < simpar_schedule_n_ops(ends); i++) {
            const SimparOp *op = simpar_schedule_op(ends, i);
            gboolean bwd = g_str_has_prefix(op->name, "mtp.bwd.");
            CU_ASSERT_TRUE(bwd || g_str_has_prefix(op->name, "mtp.fwd."));
            if (op->rank != 0)
                continue;
            if (op->kind == SIMPAR_OP_GEMM)
                gemm[bwd] += 2.0 * op->u.gemm.m * op->u.gemm.n * op->u.gemm.k;
            if (op->kind != SIMPAR_OP_COLLECTIVE)
                continue;
            colls[bwd]++;
            ag[bwd] += op->u.coll.kind == SIMPAR_COLL_ALL_GATHER;
            ar += op->u.coll.kind == SIMPAR_COLL_ALL_REDUCE;
            rs += op->u.coll.kind == SIMPAR_COLL_REDUCE_SCATTER;
        }
        CU_ASSERT_DOUBLE_EQUAL(gemm[0], 2 * rows * 2 * h * h / 2, 1e-6);
        CU_ASSERT_DOUBLE_EQUAL(gemm[1], 2 * gemm[0], 1e-6);
        CU_ASSERT_EQUAL(ag[0], sp ? 2 : 1);
        CU_ASSERT_EQUAL(ag[1], sp ? 1 : 0);
        CU_ASSERT_EQUAL(ar, sp ? 0 : 1);
        CU_ASSERT_EQUAL(rs, sp ? 1 : 0);
    }
}

/* --fp8-output-proj (Megatron-Core's fp8_output_proj): the output layer's three GEMMs, and an
 * auxiliary head's, carry the MXFP8 recipe; without the flag, or under another recipe, none
 * does, and the head's other ops are the same. Fails with the flag left out of ends.c. */
static void
test_step_fp8_output_proj(void)
{
    const SimparFp8Recipe recipes[] = {SIMPAR_FP8_MXFP8, SIMPAR_FP8_CURRENT};
    for (guint r = 0; r < G_N_ELEMENTS(recipes); r++)
        for (guint on = 0; on <= 1; on++) {
            SimparModel m;
            g_assert(simpar_model_preset("tiny", &m, NULL));
            m.dtype = SIMPAR_DTYPE_BF16, m.fp8 = recipes[r];
            SimparPlan plan;
            simpar_plan_init(&plan);
            plan.gen = simpar_generator_of("1d"), plan.tp = 2, plan.fp8_output_proj = on;
            g_autoptr(GError) err = NULL;
            g_autoptr(SimparSchedule) layer = simpar_generate_layer(&m, &plan, &err);
            CU_ASSERT_PTR_NOT_NULL_FATAL(layer);
            guint parts[] = {SIMPAR_ENDS_HEAD, SIMPAR_ENDS_AUX};
            for (guint p = 0; p < G_N_ELEMENTS(parts); p++) {
                g_autoptr(SimparSchedule) ends = simpar_ends_build(&m, &plan, layer, 512, parts[p]);
                CU_ASSERT_TRUE(simpar_schedule_check(ends, NULL));
                guint gemms = 0, fp8 = 0;
                for (guint i = 0; i < simpar_schedule_n_ops(ends); i++) {
                    const SimparOp *op = simpar_schedule_op(ends, i);
                    if (op->kind != SIMPAR_OP_GEMM)
                        continue;
                    gemms++;
                    fp8 += op->u.gemm.fp8 == SIMPAR_FP8_MXFP8;
                    CU_ASSERT(op->u.gemm.fp8 == SIMPAR_FP8_NONE ||
                              op->u.gemm.fp8 == SIMPAR_FP8_MXFP8);
                }
                CU_ASSERT_EQUAL(gemms, 3 * 2); /* forward, dx, dw on each of 2 ranks */
                CU_ASSERT_EQUAL(fp8, on && recipes[r] == SIMPAR_FP8_MXFP8 ? gemms : 0);
            }
        }
}

static CU_TestInfo step_tests[] = {
    {"GPipe and 1F1B: (m+P-1)(tF+tB), bubble (P-1)/m", test_step_gpipe_1f1b},
    {"--fp8-output-proj: the output layer's GEMMs in MXFP8, under that recipe only",
     test_step_fp8_output_proj},
    {"interleaved: bubble (P-1)/(v m)", test_step_interleaved},
    {"local parallelism: synchronous and asynchronous", test_step_local},
    {"ZeRO-3 moves 1.5x DDP's data", test_step_zero_volume},
    {"hybrid sharding, --no-reshard and fp32 reductions move their closed forms",
     test_step_hybrid_sharding},
    {"context parallelism reduces gradients over D x C, context-parallel rank fastest",
     test_step_cp_reduction},
    {"ZeRO-3 with pipelining gathers per micro-batch and reduces once", test_step_zero3_pipeline},
    {"ZeRO-3 FP8: each gathered layer's weight cast waits for its gather",
     test_step_zero3_fp8_cast},
    {"DDP exposed = last bucket end - backward end", test_step_ddp_exposed},
    {"--overlap-param-gather: hidden gathers shorten the step by the exposed gather, an exposed "
     "one does not",
     test_step_overlap_param_gather},
    {"--overlap-param-gather: the experts' buckets over their group; ZeRO 0 and 3 refused",
     test_step_overlap_param_gather_experts},
    {"--overlap-param-gather with virtual stages: aligned, chunk by chunk",
     test_step_overlap_param_gather_aligned},
    {"ZeRO with D = 1 and a tied embedding on one stage build and run", test_step_degenerate},
    {"placement and split validation", test_step_placement},
    {"experts' gradients reduce over the expert-data-parallel group", test_step_expert_groups},
    {"an MoE model's dense layers run their own blocks and hold their own parameters",
     test_step_dense_layers},
    {"model FLOPs", test_step_model_flops},
    {"multi-token prediction: D modules on the last stage add m X to GPipe and 1F1B",
     test_step_mtp},
    {"multi-token prediction's own ops: eh_proj's GEMMs and 1-D's collectives", test_step_mtp_ends},
    {"timed blocks agree with the step op by op", test_step_ops_vs_blocks},
    {"the optimizer's scalar all-reduces per framework: Megatron's norm (and fp16's inf/nan flag) "
     "over the model-parallel group or the distributed optimizer's, the loss over the last "
     "stage's replicas, PyTorch's over FSDP's shard group",
     test_step_scalars},
    {"the norm's all-reduce joins the stages: the step is the pipeline's plus its closed form",
     test_step_scalars_time},
    {"every rank zeroes its whole gradient buffer once per step before its first forward, 4 bytes "
     "a parameter with fp32 gradients; one GPU's step adds its time",
     test_step_zero_grad},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"step", NULL, NULL, NULL, NULL, step_tests},
    CU_SUITE_INFO_NULL,
};

int
main(void)
{
    return simpar_test_main(suites);
}
