/* test-summary.c - per-GPU collective bytes of every generated layer against closed forms.
 *
 * The expected rows are written here from the papers' algorithms (Megatron-LM arXiv 1909.08053,
 * Optimus arXiv 2104.05343, Tesseract arXiv 2105.14500, 3-D arXiv 2105.14450, as Colossal-AI's
 * layers implement them; generalised to an FFN width f), not from the
 * generators: linears (K, N) = qkv (h, 3h), proj (h, h), fc1 (h, f), fc2 (f, h), so
 * sum K = 3h + f, sum K*N = 4h^2 + 2hf, sum N = 5h + f; B = b*s tokens. Elements are full
 * buffers (all-gather output, reduce-scatter input, message otherwise). Every rank must match.
 */
#include "generators.h"
#include "simpar-test.h"
#include "summary.h"

enum {
    F = SIMPAR_PHASE_FORWARD,
    BW = SIMPAR_PHASE_BACKWARD
};

enum {
    AR = SIMPAR_COLL_ALL_REDUCE,
    AG = SIMPAR_COLL_ALL_GATHER,
    RS = SIMPAR_COLL_REDUCE_SCATTER,
    BC = SIMPAR_COLL_BROADCAST,
    RD = SIMPAR_COLL_REDUCE,
    SEND = SIMPAR_N_COLL_KINDS, /* ring attention's point-to-point transfers */
};

typedef struct {
    const char *axis;
    int kind, phase;
    guint calls;
    guint64 elems;
} Expect;

/* h = 72, a = 12, s = 8, b = 36, f = 144 (not 4h, so f is checked on its own). */
static const guint64 H = 72, A = 12, S = 8, BATCH = 36, FF = 144, T = 36 * 8;

/* Context parallelism of the next summary_check: C (1: none), and the ring form. */
static gint64 summary_cp = 1;
static gboolean summary_ring;

static void
summary_check(const char *mode, gint64 tp, gint64 depth, gboolean sp, gboolean paper,
              const Expect *rows, guint n_rows)
{
    SimparModel m = {"closed-form",
                     H,
                     A,
                     S,
                     BATCH,
                     1,
                     FF,
                     64,
                     SIMPAR_DTYPE_FP16,
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
    SimparPlan plan;
    simpar_plan_init(&plan);
    plan.gen = simpar_generator_of(mode), plan.tp = tp, plan.depth = depth,
    plan.sequence_parallel = sp;
    plan.paper_3d = paper, plan.cp = summary_cp, plan.cp_ring = summary_ring;
    g_autoptr(GError) error = NULL;
    g_autoptr(SimparSchedule) sched = simpar_generate_layer(&m, &plan, &error);
    CU_ASSERT_PTR_NOT_NULL_FATAL(sched);
    for (guint r = 0; r < simpar_schedule_n_ranks(sched); r++) {
        g_autoptr(SimparSummary) s = simpar_summary_new(sched, r);
        CU_ASSERT_TRUE(s->uniform);
        CU_ASSERT_EQUAL(s->rows->len, n_rows);
        for (guint i = 0; i < n_rows; i++) {
            const SimparSummaryRow *got = simpar_summary_find(
                s, rows[i].axis, (SimparCollKind) rows[i].kind, (SimparPhase) rows[i].phase);
            if (got == NULL || got->calls != rows[i].calls || got->elems != rows[i].elems)
                printf("\n    rank %u %s %s %s: got %u calls / %" G_GUINT64_FORMAT
                       " elements, want %u / %" G_GUINT64_FORMAT,
                       r, rows[i].axis, simpar_coll_kind_name((SimparCollKind) rows[i].kind),
                       simpar_phase_name((SimparPhase) rows[i].phase), got ? got->calls : 0,
                       got ? got->elems : 0, rows[i].calls, rows[i].elems);
            CU_ASSERT_PTR_NOT_NULL(got);
            CU_ASSERT(got != NULL && got->calls == rows[i].calls);
            CU_ASSERT(got != NULL && got->elems == rows[i].elems);
            CU_ASSERT(got != NULL && got->elems * 2 == rows[i].elems * s->elem_size);
        }
    }
}

#define CHECK(mode, tp, depth, sp, paper, ...)                                                     \
    do {                                                                                           \
        const Expect rows[] = {__VA_ARGS__};                                                       \
        summary_check(mode, tp, depth, sp, paper, rows, G_N_ELEMENTS(rows));                       \
    } while (0)

/* 1-D: 2 all-reduces of B*h forward (proj, fc2), 2 backward (dX of fc1, qkv). */
static void
test_1d(void)
{
    for (gint64 P = 2; P <= 4; P += 2)
        CHECK("1d", P, 0, FALSE, TRUE, {"tp", AR, F, 2, 2 * T * H}, {"tp", AR, BW, 2, 2 * T * H});
}

/* 1-D + SP: forward AG, RS, AG, RS of B*h; backward AG dY, AG re-gather, RS dX per block pair;
 * the LN gamma/beta (2 x 2h) and row-parallel bias (2 x h) gradients all-reduced. */
static void
test_1d_sp(void)
{
    CHECK("1d", 4, 0, TRUE, TRUE, {"tp", AG, F, 2, 2 * T * H}, {"tp", RS, F, 2, 2 * T * H},
          {"tp", AG, BW, 4, 4 * T * H}, {"tp", RS, BW, 2, 2 * T * H}, {"tp", AR, BW, 4, 6 * H});
}

/* 2-D (d = 1) and 2.5-D: per linear q rounds; activation blocks (B/(dq)) x (K/q) on "row",
 * weight blocks (K/q) x (N/q) on "col". LN: 2 all-reduces of B/(dq) per LN and phase on "row".
 * Bias (sum N/q) and gamma/beta (2 x 2h/q) gradients all-reduced on "col" (2-D) or "xz". */
static void
summa_check(const char *mode, guint64 q, guint64 d)
{
    guint64 sk = 3 * H + FF, skn = 4 * H * H + 2 * H * FF, sn = 5 * H + FF;
    guint64 act = T * sk / (d * q), w = skn / q, ln = 4 * T / (d * q);
    const char *pg = d > 1 ? "xz" : "col";
    if (d == 1)
        CHECK(mode, q * q * d, d > 1 ? d : 0, FALSE, TRUE, {"row", BC, F, 4 * q, act},
              {"row", BC, BW, 4 * q, act}, {"row", RD, BW, 4 * q, act}, {"row", AR, F, 4, ln},
              {"row", AR, BW, 4, ln}, {"col", BC, F, 4 * q, w}, {"col", BC, BW, 4 * q, w},
              {"col", RD, BW, 4 * q, w}, {pg, AR, BW, 6, (sn + 4 * H) / q});
    else
        CHECK(mode, q * q * d, d, FALSE, TRUE, {"row", BC, F, 4 * q, act},
              {"row", BC, BW, 4 * q, act}, {"row", RD, BW, 4 * q, act}, {"row", AR, F, 4, ln},
              {"row", AR, BW, 4, ln}, {"col", BC, F, 4 * q, w}, {"col", BC, BW, 4 * q, w},
              {"col", RD, BW, 4 * q, w}, {pg, AR, BW, 6, (sn + 4 * H) / q},
              {"dep", AR, BW, 4, skn / (q * q)});
}

static void
test_2d(void)
{
    summa_check("2d", 2, 1);
    summa_check("2d", 3, 1);
}

static void
test_2p5d(void)
{
    summa_check("2.5d", 2, 2);
    summa_check("2.5d", 3, 2);
}

/* 3-D: per linear AG x (B*K/q^2) on its input group, AG w (K*N/q^2) on "weight", RS y
 * (B*N/q^2) on its output group; backward AG dy (output group), RS dx (input group), RS dw
 * ("weight"). qkv and fc1 use input = "input", output = "output"; proj and fc2 swap them.
 * The paper variant also re-gathers w ("weight"), x (input group) and dy (output group) in the
 * backward and all-reduces the LN statistics in two calls instead of one stacked call. */
static void
test_3d(void)
{
    for (guint64 q = 2; q <= 3; q++) {
        guint64 sq = q * q, skn = 4 * H * H + 2 * H * FF;
        guint64 in = 2 * T * H / sq;             /* "input": x of qkv, fc1 = y of proj, fc2 */
        guint64 out_big = T * (3 * H + FF) / sq; /* "output": y of qkv, fc1 */
        guint64 out_small = T * (H + FF) / sq;   /* "output": x of proj, fc2 */
        guint64 ln = 4 * T / sq, pg = 6 * H / q, bias = (3 * H + FF) / q;
        CHECK("3d", q * q * q, 0, FALSE, FALSE, {"input", AG, F, 2, in}, {"input", RS, F, 2, in},
              {"output", RS, F, 2, out_big}, {"output", AG, F, 2, out_small},
              {"weight", AG, F, 4, skn / sq}, {"input", AG, BW, 2, in}, {"input", RS, BW, 2, in},
              {"output", AG, BW, 2, out_big}, {"output", RS, BW, 2, out_small},
              {"weight", RS, BW, 4, skn / sq}, {"output", AR, F, 2, ln}, {"output", AR, BW, 2, ln},
              {"input-weight", AR, BW, 4, pg}, {"output-weight", AR, BW, 2, bias});
        CHECK("3d", q * q * q, 0, FALSE, TRUE, {"input", AG, F, 2, in}, {"input", RS, F, 2, in},
              {"output", RS, F, 2, out_big}, {"output", AG, F, 2, out_small},
              {"weight", AG, F, 4, skn / sq}, {"input", AG, BW, 6, 3 * in},
              {"input", RS, BW, 2, in}, {"output", AG, BW, 6, 2 * out_big + out_small},
              {"output", RS, BW, 2, out_small}, {"weight", AG, BW, 4, skn / sq},
              {"weight", RS, BW, 4, skn / sq}, {"output", AR, F, 4, ln}, {"output", AR, BW, 4, ln},
              {"input-weight", AR, BW, 4, pg}, {"output-weight", AR, BW, 2, bias});
    }
}

/* Section 4.3 as printed (f = 4h): 2-D forward moves 7Bh/q on rows and 12h^2/q on columns;
 * 3-D forward moves 16Bh/q^2 on the input/output groups and 12h^2/q^2 on "weight". */
static void
test_paper_table(void)
{
    SimparModel m = {"f=4h",
                     64,
                     8,
                     8,
                     16,
                     1,
                     256,
                     64,
                     SIMPAR_DTYPE_FP16,
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
    guint64 h = 64, B = 16 * 8;
    SimparPlan p2, p3;
    simpar_plan_init(&p2);
    simpar_plan_init(&p3);
    p2.gen = simpar_generator_of("2d"), p2.tp = 16, p3.gen = simpar_generator_of("3d"), p3.tp = 64;
    g_autoptr(SimparSchedule) s2 = simpar_generate_layer(&m, &p2, NULL);
    g_autoptr(SimparSchedule) s3 = simpar_generate_layer(&m, &p3, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s2);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s3);
    g_autoptr(SimparSummary) a = simpar_summary_new(s2, 5);
    g_autoptr(SimparSummary) b = simpar_summary_new(s3, 21);
    CU_ASSERT_EQUAL(
        simpar_summary_find(a, "row", SIMPAR_COLL_BROADCAST, SIMPAR_PHASE_FORWARD)->elems,
        7 * B * h / 4);
    CU_ASSERT_EQUAL(
        simpar_summary_find(a, "col", SIMPAR_COLL_BROADCAST, SIMPAR_PHASE_FORWARD)->elems,
        12 * h * h / 4);
    guint64 io = 0;
    for (guint i = 0; i < b->rows->len; i++) {
        const SimparSummaryRow *r = &g_array_index(b->rows, SimparSummaryRow, i);
        if (r->phase == SIMPAR_PHASE_FORWARD && r->kind != SIMPAR_COLL_ALL_REDUCE &&
            !g_str_equal(r->axis, "weight"))
            io += r->elems;
    }
    CU_ASSERT_EQUAL(io, 16 * B * h / 16);
    CU_ASSERT_EQUAL(
        simpar_summary_find(b, "weight", SIMPAR_COLL_ALL_GATHER, SIMPAR_PHASE_FORWARD)->elems,
        12 * h * h / 16);
}

/* Context parallelism C = 2 over 1-D P = 2: each rank holds B S / C = 144 tokens of every
 * sequence, its k | v block 144 x 2 (a / P) (h / a) = 144 x 72. All-gather form: one all-gather
 * of the C blocks forward, one reduce-scatter of their gradients backward; ring form: C - 1
 * sends of a block forward, C - 1 blocks plus C gradient sums backward. The tensor-parallel
 * all-reduces move the rank's tokens only. */
static void
test_cp(void)
{
    const guint64 tokens = BATCH * S / 2, block = tokens * 2 * (A / 2) * (H / A);
    summary_cp = 2;
    CHECK("1d", 2, 0, FALSE, TRUE, {"cp", AG, F, 1, 2 * block}, {"cp", RS, BW, 1, 2 * block},
          {"tp", AR, F, 2, 2 * tokens * H}, {"tp", AR, BW, 2, 2 * tokens * H});
    summary_ring = TRUE;
    CHECK("1d", 2, 0, FALSE, TRUE, {"cp", SEND, F, 1, block}, {"cp", SEND, BW, 3, 3 * block},
          {"tp", AR, F, 2, 2 * tokens * H}, {"tp", AR, BW, 2, 2 * tokens * H});
    summary_cp = 1, summary_ring = FALSE;
}

static CU_TestInfo summary_tests[] = {
    {"context parallelism: the all-gather's and the ring's volumes", test_cp},
    {"1-D moves two all-reduces of B*h each way", test_1d},
    {"1-D with sequence parallelism moves 2 AG + 2 RS forward, 4 AG + 2 RS backward", test_1d_sp},
    {"2-D SUMMA broadcasts and reduces match the closed forms for q = 2, 3", test_2d},
    {"2.5-D adds depth all-reduces of the weight gradients, q = 2, 3, d = 2", test_2p5d},
    {"3-D paper and later variants match the closed forms for q = 2, 3", test_3d},
    {"the paper table's 2-D and 3-D forward volumes hold for f = 4h", test_paper_table},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"schedule summary = closed forms", NULL, NULL, NULL, NULL, summary_tests},
    CU_SUITE_INFO_NULL,
};

int
main(void)
{
    return simpar_test_main(suites);
}
