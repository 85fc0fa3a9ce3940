/* test-schedule.c - the schedule IR checks itself: hand-built schedules that deadlock, mismatch
 * collectives, leave messages unmatched, overrun buffers or race across streams are refused
 * with the right error code and a message naming the op and the rank; a well-formed one passes.
 * The training-step ops (embedding, cross-entropy, Adam, blocks) and reduction ops too. Also the
 * collective element counts and the dropout mask.
 */
#include "generators.h"
#include "schedule.h"
#include "simpar-test.h"
#include <math.h>
#include <stdarg.h>
#include <string.h>

/* ----- building blocks ----- */

static SimparView
at(guint buf, gsize off)
{
    return (SimparView){buf, off};
}

static guint
add_coll(SimparSchedule *s, guint rank, guint stream, const char *name, SimparCollKind kind,
         guint group, gsize count, guint root, SimparView send, SimparView recv)
{
    SimparOp op = {.kind = SIMPAR_OP_COLLECTIVE, .rank = rank, .stream = stream, .name = name};
    op.u.coll = (SimparColl){kind, group, count, root, send, recv, SIMPAR_RED_SUM};
    return simpar_schedule_add_op(s, &op);
}

/* With SIMPAR_NO_VIEW, the all-reduce gets a scratch buffer of its own. */
static guint
add_all_reduce(SimparSchedule *s, guint rank, guint stream, const char *name, guint group,
               gsize count, SimparView buf)
{
    if (buf.buf == G_MAXUINT)
        buf = at(simpar_schedule_add_buffer(s, rank, "scratch", count), 0);
    return add_coll(s, rank, stream, name, SIMPAR_COLL_ALL_REDUCE, group, count, 0, buf, buf);
}

static guint
add_p2p(SimparSchedule *s, SimparOpKind kind, guint rank, guint stream, const char *name,
        guint peer, guint tag, gsize count, SimparView buf)
{
    SimparOp op = {.kind = kind, .rank = rank, .stream = stream, .name = name};
    op.u.p2p = (SimparP2p){peer, tag, count, buf};
    return simpar_schedule_add_op(s, &op);
}

/* c[m x n] = a[m x k] . b[k x n], one batch. */
static guint
add_gemm(SimparSchedule *s, guint rank, guint stream, const char *name, guint m, guint n, guint k,
         SimparView a, SimparView b, SimparView c)
{
    SimparOp op = {.kind = SIMPAR_OP_GEMM, .rank = rank, .stream = stream, .name = name};
    op.u.gemm = (SimparGemm){.m = m, .n = n, .k = k, .batch = 1, .a = a, .b = b, .c = c};
    return simpar_schedule_add_op(s, &op);
}

/* An elementwise kernel on rows x cols elements: in[0], in[1] -> out[0]. */
static guint
add_kernel(SimparSchedule *s, SimparOpKind kind, guint rank, guint stream, const char *name,
           guint rows, guint cols, SimparView in0, SimparView in1, SimparView out0)
{
    SimparOp op = {.kind = kind, .rank = rank, .stream = stream, .name = name};
    op.u.kern.rows = rows, op.u.kern.cols = cols;
    for (guint i = 0; i < 5; i++)
        op.u.kern.in[i] = SIMPAR_NO_VIEW;
    for (guint i = 0; i < 3; i++)
        op.u.kern.out[i] = SIMPAR_NO_VIEW;
    op.u.kern.in[0] = in0, op.u.kern.in[1] = in1, op.u.kern.out[0] = out0;
    return simpar_schedule_add_op(s, &op);
}

/* ----- expectations ----- */

/* Runs simpar_schedule_check (and, with `hazards`, then simpar_schedule_check_hazards, after
 * asserting that the structural check passes) and expects a failure with `code` whose message
 * contains every string of the NULL-terminated list. */
static void G_GNUC_NULL_TERMINATED
expect_failure(const SimparSchedule *s, gboolean hazards, gint code, ...)
{
    g_autoptr(GError) error = NULL;
    gboolean ok;
    if (hazards) {
        CU_ASSERT_TRUE(simpar_schedule_check(s, &error));
        if (error != NULL)
            printf("\n    unexpected: %s", error->message);
        g_clear_error(&error);
        ok = simpar_schedule_check_hazards(s, &error);
    } else {
        ok = simpar_schedule_check(s, &error);
    }
    CU_ASSERT_FALSE(ok);
    CU_ASSERT_PTR_NOT_NULL_FATAL(error);
    printf("\n    %s ", error->message);
    CU_ASSERT_TRUE(g_error_matches(error, SIMPAR_SCHEDULE_ERROR, code));
    va_list ap;
    va_start(ap, code);
    for (const char *needle = va_arg(ap, const char *); needle != NULL;
         needle = va_arg(ap, const char *)) {
        if (strstr(error->message, needle) == NULL)
            printf("\n    missing from the message: %s", needle);
        CU_ASSERT_PTR_NOT_NULL(strstr(error->message, needle));
    }
    va_end(ap);
}

static void
expect_valid(const SimparSchedule *s)
{
    g_autoptr(GError) error = NULL;
    CU_ASSERT_TRUE(simpar_schedule_check(s, &error));
    if (error == NULL)
        CU_ASSERT_TRUE(simpar_schedule_check_hazards(s, &error));
    if (error != NULL)
        printf("\n    unexpected: %s", error->message);
    CU_ASSERT_PTR_NULL(error);
}

/* Two ranks, one group {0, 1} with axis "tp", a buffer "g" of 64 elements on each rank. */
static SimparSchedule *
pair_new(guint *group)
{
    SimparSchedule *s = simpar_schedule_new(2, SIMPAR_DTYPE_FP32);
    const guint pair[] = {0, 1};
    *group = simpar_schedule_add_group(s, "tp", pair, 2);
    for (guint r = 0; r < 2; r++)
        CU_ASSERT_EQUAL(simpar_schedule_add_buffer(s, r, "g", 64), r);
    return s; /* (transfer full) */
}

/* ----- ops on their own ----- */

static void
test_a_missing_view_is_refused(void)
{
    guint g;
    g_autoptr(SimparSchedule) s = pair_new(&g);
    add_kernel(s, SIMPAR_OP_ADD, 0, 0, "fwd.add", 2, 4, at(0, 0), SIMPAR_NO_VIEW, at(0, 8));
    expect_failure(s, FALSE, SIMPAR_SCHEDULE_ERROR_BOUNDS, "'fwd.add'", "rank 0",
                   "no buffer for 8 elements", NULL);
}

static void
test_root_only_buffers_are_optional(void)
{
    guint g;
    g_autoptr(SimparSchedule) s = pair_new(&g);
    add_coll(s, 0, 0, "bcast", SIMPAR_COLL_BROADCAST, g, 8, 0, at(0, 0), at(0, 8));
    add_coll(s, 1, 0, "bcast", SIMPAR_COLL_BROADCAST, g, 8, 0, SIMPAR_NO_VIEW, at(1, 8));
    add_coll(s, 0, 0, "reduce", SIMPAR_COLL_REDUCE, g, 8, 1, at(0, 16), SIMPAR_NO_VIEW);
    add_coll(s, 1, 0, "reduce", SIMPAR_COLL_REDUCE, g, 8, 1, at(1, 16), at(1, 24));
    expect_valid(s);
    gsize send, recv;
    simpar_op_coll_counts(s, simpar_schedule_op(s, 1), &send, &recv);
    CU_ASSERT(send == 0 && recv == 8);
    simpar_op_coll_counts(s, simpar_schedule_op(s, 2), &send, &recv);
    CU_ASSERT(send == 8 && recv == 0);
    g_autoptr(SimparSchedule) t = pair_new(&g); /* the root itself needs both */
    add_coll(t, 0, 0, "bcast", SIMPAR_COLL_BROADCAST, g, 8, 0, SIMPAR_NO_VIEW, at(0, 8));
    add_coll(t, 1, 0, "bcast", SIMPAR_COLL_BROADCAST, g, 8, 0, SIMPAR_NO_VIEW, at(1, 8));
    expect_failure(t, FALSE, SIMPAR_SCHEDULE_ERROR_BOUNDS, "'bcast'", "rank 0", "no buffer", NULL);
}

static void
test_overflowing_sizes_are_out_of_bounds(void)
{
    guint g;
    g_autoptr(SimparSchedule) s = pair_new(&g);
    guint huge = 1u << 31;
    add_kernel(s, SIMPAR_OP_GELU, 0, 0, "fwd.gelu", huge, huge, at(0, 0), SIMPAR_NO_VIEW, at(0, 0));
    add_gemm(s, 1, 0, "fwd.gemm", huge, huge, huge, at(1, 0), at(1, 0), at(1, 0));
    expect_failure(s, FALSE, SIMPAR_SCHEDULE_ERROR_BOUNDS, "'fwd.gelu'", "holds 64", NULL);
}

static void
test_unusable_parameters_are_refused(void)
{
    const struct {
        SimparOpKind kind;
        const char *name, *want;
    } cases[] = {{SIMPAR_OP_DROPOUT, "fwd.dropout", "probability 1"},
                 {SIMPAR_OP_LN_APPLY, "fwd.ln", "hidden = 0"},
                 {SIMPAR_OP_ATTENTION, "fwd.attn", "head size 0"},
                 {SIMPAR_N_OP_KINDS, "fwd.what", "unknown kind"}};

    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        guint g;
        g_autoptr(SimparSchedule) s = pair_new(&g);
        SimparOp op = {.kind = cases[i].kind, .name = cases[i].name};
        op.u.kern = (SimparKernel){.rows = 2, .cols = 4, .p = 1.0, .hidden = 0};
        if (cases[i].kind == SIMPAR_OP_ATTENTION)
            op.u.attn = (SimparAttention){.nb = 1, .nh = 1, .s = 2, .dh = 0};
        simpar_schedule_add_op(s, &op);
        expect_failure(s, FALSE, SIMPAR_SCHEDULE_ERROR_INVALID, cases[i].name, cases[i].want, NULL);
    }
}

/* ----- training-step ops: embedding, cross-entropy, Adam, blocks, reductions ----- */

/* rows = 4 tokens, cols = 5, slice [10, 16) of the vocabulary. */
#define STEP_ROWS 4
#define STEP_COLS 5
#define STEP_V    6

/* Views each kind uses (inputs, then the output) and their lengths (schedule.h). */
typedef struct {
    SimparOpKind kind;
    guint n_in;
    gsize len[5];
} StepKind;

static const StepKind step_kinds[] = {
    {SIMPAR_OP_EMBED, 2, {STEP_ROWS, STEP_V *STEP_COLS, STEP_ROWS *STEP_COLS}},
    {SIMPAR_OP_EMBED_BWD, 2, {STEP_ROWS, STEP_ROWS *STEP_COLS, STEP_V *STEP_COLS}},
    {SIMPAR_OP_XENT_MAX, 1, {STEP_ROWS * STEP_V, STEP_ROWS}},
    {SIMPAR_OP_XENT_FWD, 3, {STEP_ROWS * STEP_V, STEP_ROWS, STEP_ROWS, 2 * STEP_ROWS}},
    {SIMPAR_OP_XENT_LOSS, 2, {STEP_ROWS, 2 * STEP_ROWS, 1}},
    {SIMPAR_OP_XENT_BWD,
     4,
     {STEP_ROWS * STEP_V, STEP_ROWS, STEP_ROWS, 2 * STEP_ROWS, STEP_ROWS *STEP_V}},
};

/* One op of `k` on rank 0: every view at the start of buffer `big`, except view `bad`, which
 * starts at the end of buffer `small`; bad = G_MAXUINT leaves every view in bounds. */
static SimparOp
vocab_op(const StepKind *k, guint big, guint small, guint bad)
{
    SimparOp op = {.kind = k->kind, .name = simpar_op_kind_name(k->kind)};
    op.u.vocab = (SimparVocab){.rows = STEP_ROWS, .cols = STEP_COLS, .vocab0 = 10, .vocab = STEP_V};
    for (guint i = 0; i < 4; i++)
        op.u.vocab.in[i] = i < k->n_in ? at(big, 0) : SIMPAR_NO_VIEW;
    op.u.vocab.out[0] = at(big, 0);
    if (bad < k->n_in)
        op.u.vocab.in[bad] = at(small, 3);
    else if (bad == k->n_in)
        op.u.vocab.out[0] = at(small, 3);
    return op;
}

static void
test_every_view_of_the_vocabulary_ops_is_bounds_checked(void)
{
    for (guint i = 0; i < G_N_ELEMENTS(step_kinds); i++) {
        const StepKind *k = &step_kinds[i];
        for (guint bad = 0; bad <= k->n_in; bad++) {
            g_autoptr(SimparSchedule) s = simpar_schedule_new(1, SIMPAR_DTYPE_FP16);
            guint big = simpar_schedule_add_buffer(s, 0, "big", 64);
            guint small = simpar_schedule_add_buffer(s, 0, "small", 3);
            SimparOp op = vocab_op(k, big, small, bad);
            simpar_schedule_add_op(s, &op);
            g_autofree char *range = g_strdup_printf("[3, %zu)", 3 + k->len[bad]);
            g_autofree char *name = g_strdup_printf("'%s'", simpar_op_kind_name(k->kind));
            expect_failure(s, FALSE, SIMPAR_SCHEDULE_ERROR_BOUNDS, name, range, "'small'", NULL);
        }
        g_autoptr(SimparSchedule) s = simpar_schedule_new(1, SIMPAR_DTYPE_FP16);
        guint big = simpar_schedule_add_buffer(s, 0, "big", 64);
        SimparOp op = vocab_op(k, big, big, G_MAXUINT);
        simpar_schedule_add_op(s, &op);
        g_autoptr(GError) error = NULL;
        CU_ASSERT_TRUE(simpar_schedule_check(s, &error));
    }
}

static SimparOp
adam_op(const char *name, gsize count, SimparView p, SimparView g, SimparView m, SimparView v)
{
    SimparOp op = {.kind = SIMPAR_OP_ADAM, .name = name};
    op.u.adam = (SimparAdam){count, 1e-3, 0.9, 0.95, 1e-8, 0.1, 1, p, g, m, v};
    return op;
}

static void
test_every_view_of_adam_is_bounds_checked(void)
{
    for (guint bad = 0; bad < 4; bad++) {
        g_autoptr(SimparSchedule) s = simpar_schedule_new(1, SIMPAR_DTYPE_BF16);
        SimparView v[4];
        for (guint i = 0; i < 4; i++)
            v[i] = at(simpar_schedule_add_buffer(s, 0, i == bad ? "short" : "state", 16), 0);
        v[bad].off = 1;
        SimparOp op = adam_op("adam.qkv", 16, v[0], v[1], v[2], v[3]);
        simpar_schedule_add_op(s, &op);
        expect_failure(s, FALSE, SIMPAR_SCHEDULE_ERROR_BOUNDS, "'adam.qkv'", "[1, 17)", "'short'",
                       NULL);
    }
}

/* A block needs no buffer at all; an EMBED_BWD accumulating into the table gradient races with
 * an all-reduce of that gradient on another stream unless a dep orders them. */
static void
test_a_block_touches_nothing_and_table_gradients_are_hazard_checked(void)
{
    g_autoptr(SimparSchedule) s = simpar_schedule_new(1, SIMPAR_DTYPE_FP16);
    SimparOp block = {.kind = SIMPAR_OP_BLOCK, .name = "layers.fwd"};
    block.u.block = (SimparBlockOp){"layer.fwd", 3, 1e9};
    simpar_schedule_add_op(s, &block);
    expect_valid(s);
    for (gboolean dep = FALSE; dep <= TRUE; dep++) {
        g_autoptr(SimparSchedule) t = simpar_schedule_new(1, SIMPAR_DTYPE_FP16);
        guint comm = simpar_schedule_add_stream(t, "comm");
        const guint self[] = {0};
        guint g = simpar_schedule_add_group(t, "dp", self, 1);
        guint big = simpar_schedule_add_buffer(t, 0, "big", 64);
        guint dtable = simpar_schedule_add_buffer(t, 0, "dtable", STEP_V * STEP_COLS);
        SimparOp op = {.kind = SIMPAR_OP_EMBED_BWD, .name = "embed.bwd"};
        op.u.vocab =
            (SimparVocab){.rows = STEP_ROWS, .cols = STEP_COLS, .vocab0 = 10, .vocab = STEP_V};
        op.u.vocab.in[0] = op.u.vocab.in[1] = at(big, 0);
        op.u.vocab.out[0] = at(dtable, 0);
        guint bwd = simpar_schedule_add_op(t, &op);
        guint ar = add_all_reduce(t, 0, comm, "ar.dtable", g, STEP_V * STEP_COLS, at(dtable, 0));
        if (dep)
            simpar_schedule_add_dep(t, ar, bwd);
        if (dep)
            expect_valid(t);
        else
            expect_failure(t, TRUE, SIMPAR_SCHEDULE_ERROR_HAZARD, "'embed.bwd'", "'ar.dtable'",
                           NULL);
    }
}

static void
test_unusable_training_parameters_are_refused(void)
{
    const struct {
        double beta1, eps, lr;
        guint step;
        const char *want;
    } adam[] = {{1.0, 1e-8, 1e-3, 1, "betas (1, 0.95)"},
                {0.9, 0.0, 1e-3, 1, "epsilon 0"},
                {0.9, 1e-8, -1.0, 1, "learning rate -1"},
                {0.9, 1e-8, 1e-3, 0, "step 0"}};

    for (guint i = 0; i < G_N_ELEMENTS(adam); i++) {
        g_autoptr(SimparSchedule) s = simpar_schedule_new(1, SIMPAR_DTYPE_BF16);
        SimparView v = at(simpar_schedule_add_buffer(s, 0, "x", 64), 0);
        SimparOp op = adam_op("adam.bad", 16, v, v, v, v);
        op.u.adam.beta1 = adam[i].beta1, op.u.adam.eps = adam[i].eps;
        op.u.adam.lr = adam[i].lr, op.u.adam.step = adam[i].step;
        simpar_schedule_add_op(s, &op);
        expect_failure(s, FALSE, SIMPAR_SCHEDULE_ERROR_INVALID, "'adam.bad'", adam[i].want, NULL);
    }
    g_autoptr(SimparSchedule) s = simpar_schedule_new(1, SIMPAR_DTYPE_BF16);
    SimparOp block = {.kind = SIMPAR_OP_BLOCK, .name = "block.nokey"};
    simpar_schedule_add_op(s, &block);
    expect_failure(s, FALSE, SIMPAR_SCHEDULE_ERROR_INVALID, "'block.nokey'", "without a key", NULL);
    g_autoptr(SimparSchedule) t = simpar_schedule_new(1, SIMPAR_DTYPE_BF16);
    guint big = simpar_schedule_add_buffer(t, 0, "big", 64);
    SimparOp xent = vocab_op(&step_kinds[5], big, big, G_MAXUINT); /* XENT_BWD */
    xent.u.vocab.scale = NAN;
    simpar_schedule_add_op(t, &xent);
    expect_failure(t, FALSE, SIMPAR_SCHEDULE_ERROR_INVALID, "'xent-bwd'", "loss scale nan", NULL);
}

/* A collective of `kind` with reduction `red` on every view at(rank, 0) -> at(rank, 16). */
static void
add_coll_red(SimparSchedule *s, guint rank, const char *name, SimparCollKind kind, guint group,
             SimparRedOp red)
{
    SimparOp op = {.kind = SIMPAR_OP_COLLECTIVE, .rank = rank, .name = name};
    op.u.coll = (SimparColl){kind, group, 4, 0, at(rank, 0), at(rank, 16), red};
    simpar_schedule_add_op(s, &op);
}

static void
test_members_reducing_with_different_ops_are_a_mismatch(void)
{
    guint g;
    g_autoptr(SimparSchedule) s = pair_new(&g);
    add_coll_red(s, 0, "ar.max.sum", SIMPAR_COLL_ALL_REDUCE, g, SIMPAR_RED_SUM);
    add_coll_red(s, 1, "ar.max", SIMPAR_COLL_ALL_REDUCE, g, SIMPAR_RED_MAX);
    expect_failure(s, FALSE, SIMPAR_SCHEDULE_ERROR_MISMATCH, "'ar.max.sum'", "all-reduce sum",
                   "rank 1", "'ar.max'", "all-reduce max", NULL);
}

/* Max reduces in all-reduce, reduce and reduce-scatter only. */
static void
test_a_max_that_does_not_reduce_is_refused(void)
{
    const SimparCollKind kinds[] = {SIMPAR_COLL_ALL_REDUCE,     SIMPAR_COLL_REDUCE,
                                    SIMPAR_COLL_REDUCE_SCATTER, SIMPAR_COLL_ALL_GATHER,
                                    SIMPAR_COLL_BROADCAST,      SIMPAR_COLL_ALL_TO_ALL};
    for (guint i = 0; i < G_N_ELEMENTS(kinds); i++) {
        guint g;
        g_autoptr(SimparSchedule) s = pair_new(&g);
        for (guint r = 0; r < 2; r++)
            add_coll_red(s, r, "coll.max", kinds[i], g, SIMPAR_RED_MAX);
        if (i < 3)
            expect_valid(s);
        else
            expect_failure(s, FALSE, SIMPAR_SCHEDULE_ERROR_INVALID, "'coll.max'",
                           simpar_coll_kind_name(kinds[i]), "reduction max", NULL);
    }
}

/* A member's index: by division in a group that steps evenly, by search in any other; every
 * rank outside the group has none. */
static void
test_group_index_by_step_and_by_search(void)
{
    g_autoptr(SimparSchedule) s = simpar_schedule_new(16, SIMPAR_DTYPE_FP32);
    const guint even[] = {3, 7, 11, 15}, uneven[] = {3, 7, 12, 15}, down[] = {9, 5, 1};
    const guint *ranks[] = {even, uneven, down};
    guint sizes[] = {4, 4, 3};
    for (guint k = 0; k < G_N_ELEMENTS(ranks); k++) {
        guint g = simpar_schedule_add_group(s, "dp", ranks[k], sizes[k]);
        CU_ASSERT_EQUAL(simpar_schedule_group(s, g)->step, k == 0 ? 4 : 0);
        for (guint rank = 0; rank < 16; rank++) {
            guint want = G_MAXUINT;
            for (guint i = 0; i < sizes[k]; i++)
                if (ranks[k][i] == rank)
                    want = i;
            CU_ASSERT_EQUAL(simpar_group_index(s, g, rank), want);
        }
    }
}

/* ----- deadlocks ----- */

static void
test_a_group_that_does_not_exist_is_refused(void)
{
    guint g;
    g_autoptr(SimparSchedule) s = pair_new(&g);
    add_all_reduce(s, 0, 0, "ar.nowhere", g + 5, 8, SIMPAR_NO_VIEW);
    expect_failure(s, FALSE, SIMPAR_SCHEDULE_ERROR_MISMATCH, "rank 0", "'ar.nowhere'",
                   "does not exist", NULL);
}

static void
test_crossed_group_order_deadlocks(void)
{
    g_autoptr(SimparSchedule) s = simpar_schedule_new(2, SIMPAR_DTYPE_FP32);
    const guint pair[] = {0, 1};
    guint a = simpar_schedule_add_group(s, "row", pair, 2);
    guint b = simpar_schedule_add_group(s, "col", pair, 2);
    add_all_reduce(s, 0, 0, "ar.row", a, 8, SIMPAR_NO_VIEW);
    add_all_reduce(s, 0, 0, "ar.col", b, 8, SIMPAR_NO_VIEW);
    add_all_reduce(s, 1, 0, "ar.col", b, 8, SIMPAR_NO_VIEW);
    add_all_reduce(s, 1, 0, "ar.row", a, 8, SIMPAR_NO_VIEW);
    /* Each group sees one call of the same kind and size from both members: matching passes,
     * but rank 0 waits in "row" for rank 1, which waits in "col" for rank 0. */
    expect_failure(s, FALSE, SIMPAR_SCHEDULE_ERROR_CYCLE, "rank 0", "'compute'", "'ar.row'", NULL);
}

static void
test_crossed_group_order_on_two_streams_completes(void)
{
    g_autoptr(SimparSchedule) s = simpar_schedule_new(2, SIMPAR_DTYPE_FP32);
    guint comm = simpar_schedule_add_stream(s, "comm");
    const guint pair[] = {0, 1};
    guint a = simpar_schedule_add_group(s, "row", pair, 2);
    guint b = simpar_schedule_add_group(s, "col", pair, 2);
    add_all_reduce(s, 0, 0, "ar.row", a, 8, SIMPAR_NO_VIEW);
    add_all_reduce(s, 0, 0, "ar.col", b, 8, SIMPAR_NO_VIEW);
    add_all_reduce(s, 1, 0, "ar.col", b, 8, SIMPAR_NO_VIEW);
    add_all_reduce(s, 1, comm, "ar.row", a, 8, SIMPAR_NO_VIEW);
    expect_valid(s);
}

static void
test_both_ranks_receiving_first_deadlock(void)
{
    guint g;
    g_autoptr(SimparSchedule) s = pair_new(&g);
    add_p2p(s, SIMPAR_OP_RECV, 0, 0, "recv.from1", 1, 0, 8, at(0, 0));
    add_p2p(s, SIMPAR_OP_SEND, 0, 0, "send.to1", 1, 0, 8, at(0, 8));
    add_p2p(s, SIMPAR_OP_RECV, 1, 0, "recv.from0", 0, 0, 8, at(1, 0));
    add_p2p(s, SIMPAR_OP_SEND, 1, 0, "send.to0", 0, 0, 8, at(1, 8));
    expect_failure(s, FALSE, SIMPAR_SCHEDULE_ERROR_CYCLE, "rank 0", "'recv.from1'", NULL);
}

static void
test_both_ranks_sending_first_deadlock_because_sends_synchronise(void)
{
    guint g;
    g_autoptr(SimparSchedule) s = pair_new(&g);
    add_p2p(s, SIMPAR_OP_SEND, 0, 0, "send.to1", 1, 0, 8, at(0, 8));
    add_p2p(s, SIMPAR_OP_RECV, 0, 0, "recv.from1", 1, 0, 8, at(0, 0));
    add_p2p(s, SIMPAR_OP_SEND, 1, 0, "send.to0", 0, 0, 8, at(1, 8));
    add_p2p(s, SIMPAR_OP_RECV, 1, 0, "recv.from0", 0, 0, 8, at(1, 0));
    expect_failure(s, FALSE, SIMPAR_SCHEDULE_ERROR_CYCLE, "rank 0", "'send.to1'", NULL);
}

static void
test_a_dep_on_a_stalled_stream_deadlocks(void)
{
    /* Rank 0's comm all-reduce waits for its compute all-reduce on another group, which rank 1
     * calls only after its own comm all-reduce: the dep closes the loop. */
    g_autoptr(SimparSchedule) s = simpar_schedule_new(2, SIMPAR_DTYPE_FP32);
    guint comm = simpar_schedule_add_stream(s, "comm");
    const guint pair[] = {0, 1};
    guint a = simpar_schedule_add_group(s, "row", pair, 2);
    guint b = simpar_schedule_add_group(s, "col", pair, 2);
    guint first = add_all_reduce(s, 0, 0, "ar.row", a, 8, SIMPAR_NO_VIEW);
    guint second = add_all_reduce(s, 0, comm, "ar.col", b, 8, SIMPAR_NO_VIEW);
    simpar_schedule_add_dep(s, second, first);
    add_all_reduce(s, 1, 0, "ar.col", b, 8, SIMPAR_NO_VIEW);
    add_all_reduce(s, 1, 0, "ar.row", a, 8, SIMPAR_NO_VIEW);
    expect_failure(s, FALSE, SIMPAR_SCHEDULE_ERROR_CYCLE, "rank 0", "'ar.row'", NULL);
}

/* ----- collective matching ----- */

static void
test_a_different_collective_size_is_a_mismatch(void)
{
    guint g;
    g_autoptr(SimparSchedule) s = pair_new(&g);
    add_all_reduce(s, 0, 0, "ar.grad", g, 16, at(0, 0));
    add_all_reduce(s, 1, 0, "ar.grad.big", g, 32, at(1, 0));
    expect_failure(s, FALSE, SIMPAR_SCHEDULE_ERROR_MISMATCH, "rank 0", "'ar.grad'", "rank 1",
                   "'ar.grad.big'", "32 elements", NULL);
}

static void
test_a_different_collective_kind_is_a_mismatch(void)
{
    guint g;
    g_autoptr(SimparSchedule) s = pair_new(&g);
    add_all_reduce(s, 0, 0, "sync", g, 16, at(0, 0));
    add_coll(s, 1, 0, "gather", SIMPAR_COLL_ALL_GATHER, g, 16, 0, at(1, 0), at(1, 16));
    expect_failure(s, FALSE, SIMPAR_SCHEDULE_ERROR_MISMATCH, "rank 1", "'gather'", "all-gather",
                   NULL);
}

static void
test_a_different_root_is_a_mismatch(void)
{
    guint g;
    g_autoptr(SimparSchedule) s = pair_new(&g);
    add_coll(s, 0, 0, "bcast", SIMPAR_COLL_BROADCAST, g, 16, 0, at(0, 0), at(0, 0));
    add_coll(s, 1, 0, "bcast", SIMPAR_COLL_BROADCAST, g, 16, 1, at(1, 0), at(1, 0));
    expect_failure(s, FALSE, SIMPAR_SCHEDULE_ERROR_MISMATCH, "rank 1", "'bcast'", "root 1", NULL);
}

static void
test_a_member_making_fewer_calls_is_a_mismatch(void)
{
    guint g;
    g_autoptr(SimparSchedule) s = pair_new(&g);
    add_all_reduce(s, 0, 0, "ar.first", g, 16, at(0, 0));
    add_all_reduce(s, 0, 0, "ar.second", g, 16, at(0, 16));
    add_all_reduce(s, 1, 0, "ar.first", g, 16, at(1, 0));
    expect_failure(s, FALSE, SIMPAR_SCHEDULE_ERROR_MISMATCH, "rank 0 makes 2", "rank 1 makes 1",
                   NULL);
}

static void
test_a_call_from_outside_the_group_is_a_mismatch(void)
{
    g_autoptr(SimparSchedule) s = simpar_schedule_new(3, SIMPAR_DTYPE_FP32);
    const guint pair[] = {0, 1};
    guint g = simpar_schedule_add_group(s, "tp", pair, 2);
    for (guint r = 0; r < 3; r++)
        add_all_reduce(s, r, 0, "ar", g, 8, SIMPAR_NO_VIEW);
    expect_failure(s, FALSE, SIMPAR_SCHEDULE_ERROR_MISMATCH, "'ar'", "rank 2", NULL);
}

static void
test_a_root_outside_the_group_is_a_mismatch(void)
{
    guint g;
    g_autoptr(SimparSchedule) s = pair_new(&g);
    for (guint r = 0; r < 2; r++)
        add_coll(s, r, 0, "reduce", SIMPAR_COLL_REDUCE, g, 8, 2, at(r, 0), at(r, 8));
    expect_failure(s, FALSE, SIMPAR_SCHEDULE_ERROR_MISMATCH, "'reduce'", "rank 0", "root 2", NULL);
}

/* ----- send/recv matching ----- */

static void
test_a_send_without_a_recv_is_unmatched(void)
{
    guint g;
    g_autoptr(SimparSchedule) s = pair_new(&g);
    add_p2p(s, SIMPAR_OP_SEND, 0, 0, "act.send", 1, 7, 8, at(0, 0));
    expect_failure(s, FALSE, SIMPAR_SCHEDULE_ERROR_UNMATCHED, "rank 0", "rank 1", "tag 7",
                   "'act.send'", NULL);
}

static void
test_a_recv_without_a_send_is_unmatched(void)
{
    guint g;
    g_autoptr(SimparSchedule) s = pair_new(&g);
    add_p2p(s, SIMPAR_OP_RECV, 1, 0, "act.recv", 0, 7, 8, at(1, 0));
    expect_failure(s, FALSE, SIMPAR_SCHEDULE_ERROR_UNMATCHED, "rank 1", "rank 0", "tag 7",
                   "'act.recv'", NULL);
}

static void
test_a_send_and_recv_with_different_counts_are_unmatched(void)
{
    guint g;
    g_autoptr(SimparSchedule) s = pair_new(&g);
    add_p2p(s, SIMPAR_OP_SEND, 0, 0, "act.send", 1, 0, 16, at(0, 0));
    add_p2p(s, SIMPAR_OP_RECV, 1, 0, "act.recv", 0, 0, 8, at(1, 0));
    expect_failure(s, FALSE, SIMPAR_SCHEDULE_ERROR_UNMATCHED, "'act.send'", "'act.recv'", NULL);
}

static void
test_a_send_and_recv_with_different_tags_are_unmatched(void)
{
    guint g;
    g_autoptr(SimparSchedule) s = pair_new(&g);
    add_p2p(s, SIMPAR_OP_SEND, 0, 0, "act.send", 1, 1, 8, at(0, 0));
    add_p2p(s, SIMPAR_OP_RECV, 1, 0, "act.recv", 0, 2, 8, at(1, 0));
    expect_failure(s, FALSE, SIMPAR_SCHEDULE_ERROR_UNMATCHED, "tag 1", "'act.send'", NULL);
}

static void
test_two_sends_for_one_recv_are_unmatched(void)
{
    guint g;
    g_autoptr(SimparSchedule) s = pair_new(&g);
    add_p2p(s, SIMPAR_OP_SEND, 0, 0, "act.send", 1, 0, 8, at(0, 0));
    add_p2p(s, SIMPAR_OP_SEND, 0, 0, "act.send.again", 1, 0, 8, at(0, 8));
    add_p2p(s, SIMPAR_OP_RECV, 1, 0, "act.recv", 0, 0, 8, at(1, 0));
    expect_failure(s, FALSE, SIMPAR_SCHEDULE_ERROR_UNMATCHED, "rank 0 sends 2", "1 are received",
                   NULL);
}

/* ----- buffer bounds ----- */

static void
test_a_gemm_output_past_the_end_is_out_of_bounds(void)
{
    g_autoptr(SimparSchedule) s = simpar_schedule_new(1, SIMPAR_DTYPE_FP32);
    guint a = simpar_schedule_add_buffer(s, 0, "a", 12);
    guint b = simpar_schedule_add_buffer(s, 0, "b", 12);
    guint c = simpar_schedule_add_buffer(s, 0, "c", 15); /* needs 4 x 4 = 16 */
    add_gemm(s, 0, 0, "fwd.gemm", 4, 4, 3, at(a, 0), at(b, 0), at(c, 0));
    expect_failure(s, FALSE, SIMPAR_SCHEDULE_ERROR_BOUNDS, "'fwd.gemm'", "rank 0", "[0, 16)", "'c'",
                   "holds 15", NULL);
}

static void
test_a_view_offset_past_the_end_is_out_of_bounds(void)
{
    g_autoptr(SimparSchedule) s = simpar_schedule_new(1, SIMPAR_DTYPE_FP32);
    guint x = simpar_schedule_add_buffer(s, 0, "x", 10);
    guint y = simpar_schedule_add_buffer(s, 0, "y", 8);
    add_kernel(s, SIMPAR_OP_GELU, 0, 0, "fwd.gelu", 2, 4, at(x, 3), SIMPAR_NO_VIEW, at(y, 0));
    expect_failure(s, FALSE, SIMPAR_SCHEDULE_ERROR_BOUNDS, "'fwd.gelu'", "[3, 11)", "'x'",
                   "holds 10", NULL);
}

static void
test_a_view_ending_exactly_at_the_end_is_in_bounds(void)
{
    g_autoptr(SimparSchedule) s = simpar_schedule_new(1, SIMPAR_DTYPE_FP32);
    guint x = simpar_schedule_add_buffer(s, 0, "x", 10);
    guint y = simpar_schedule_add_buffer(s, 0, "y", 8);
    add_kernel(s, SIMPAR_OP_GELU, 0, 0, "fwd.gelu", 2, 4, at(x, 2), SIMPAR_NO_VIEW, at(y, 0));
    expect_valid(s);
}

static void
test_a_buffer_of_another_rank_is_out_of_bounds(void)
{
    guint g;
    g_autoptr(SimparSchedule) s = pair_new(&g); /* buffer 1 belongs to rank 1 */
    add_kernel(s, SIMPAR_OP_GELU, 0, 0, "fwd.gelu", 2, 4, at(0, 0), SIMPAR_NO_VIEW, at(1, 0));
    expect_failure(s, FALSE, SIMPAR_SCHEDULE_ERROR_BOUNDS, "'fwd.gelu'", "on rank 0", "of rank 1",
                   NULL);
}

static void
test_a_buffer_that_does_not_exist_is_out_of_bounds(void)
{
    g_autoptr(SimparSchedule) s = simpar_schedule_new(1, SIMPAR_DTYPE_FP32);
    guint x = simpar_schedule_add_buffer(s, 0, "x", 8);
    add_kernel(s, SIMPAR_OP_GELU, 0, 0, "fwd.gelu", 2, 4, at(x, 0), SIMPAR_NO_VIEW, at(7, 0));
    expect_failure(s, FALSE, SIMPAR_SCHEDULE_ERROR_BOUNDS, "'fwd.gelu'", "buffer 7", NULL);
}

static void
test_an_all_gather_output_sized_for_one_member_is_out_of_bounds(void)
{
    /* all-gather on 4 ranks: sends count = 4, receives 4 * 4 = 16 */
    g_autoptr(SimparSchedule) s = simpar_schedule_new(4, SIMPAR_DTYPE_FP32);
    const guint all[] = {0, 1, 2, 3};
    guint g = simpar_schedule_add_group(s, "tp", all, 4);
    for (guint r = 0; r < 4; r++) {
        guint in = simpar_schedule_add_buffer(s, r, "in", 4);
        guint out = simpar_schedule_add_buffer(s, r, "out", r == 0 ? 8 : 16);
        add_coll(s, r, 0, "ag", SIMPAR_COLL_ALL_GATHER, g, 4, 0, at(in, 0), at(out, 0));
    }
    expect_failure(s, FALSE, SIMPAR_SCHEDULE_ERROR_BOUNDS, "'ag'", "rank 0", "[0, 16)", "holds 8",
                   NULL);
}

/* ----- hazards across streams ----- */

/* Two ranks; each: GEMM on "compute" writes c[16], then an in-place all-reduce of c on "comm",
 * with or without a dep on the GEMM. */
static SimparSchedule *
hazard_gemm_then_all_reduce(gboolean dep)
{
    SimparSchedule *s = simpar_schedule_new(2, SIMPAR_DTYPE_FP32);
    guint comm = simpar_schedule_add_stream(s, "comm");
    const guint pair[] = {0, 1};
    guint g = simpar_schedule_add_group(s, "tp", pair, 2);
    for (guint r = 0; r < 2; r++) {
        guint a = simpar_schedule_add_buffer(s, r, "a", 12);
        guint b = simpar_schedule_add_buffer(s, r, "b", 12);
        guint c = simpar_schedule_add_buffer(s, r, "c", 16);
        guint gemm = add_gemm(s, r, 0, "fwd.gemm", 4, 4, 3, at(a, 0), at(b, 0), at(c, 0));
        guint ar = add_all_reduce(s, r, comm, "ar.c", g, 16, at(c, 0));
        if (dep)
            simpar_schedule_add_dep(s, ar, gemm);
    }
    return s; /* (transfer full) */
}

static void
test_a_read_after_write_on_another_stream_without_a_dep_is_a_hazard(void)
{
    g_autoptr(SimparSchedule) s = hazard_gemm_then_all_reduce(FALSE);
    expect_failure(s, TRUE, SIMPAR_SCHEDULE_ERROR_HAZARD, "rank 0", "'fwd.gemm'", "'compute'",
                   "'ar.c'", "'comm'", NULL);
}

static void
test_a_dep_on_the_writer_removes_the_read_after_write_hazard(void)
{
    g_autoptr(SimparSchedule) s = hazard_gemm_then_all_reduce(TRUE);
    expect_valid(s);
}

/* One rank; an all-reduce on "comm" reads x (into y), then a GEMM on "compute" overwrites x. */
static SimparSchedule *
hazard_all_reduce_then_gemm(gboolean dep)
{
    SimparSchedule *s = simpar_schedule_new(1, SIMPAR_DTYPE_FP32);
    guint comm = simpar_schedule_add_stream(s, "comm");
    const guint self[] = {0};
    guint g = simpar_schedule_add_group(s, "dp", self, 1);
    guint a = simpar_schedule_add_buffer(s, 0, "a", 12);
    guint b = simpar_schedule_add_buffer(s, 0, "b", 12);
    guint x = simpar_schedule_add_buffer(s, 0, "x", 16);
    guint y = simpar_schedule_add_buffer(s, 0, "y", 16);
    guint ar = add_coll(s, 0, comm, "ar.x", SIMPAR_COLL_ALL_REDUCE, g, 16, 0, at(x, 0), at(y, 0));
    guint gemm = add_gemm(s, 0, 0, "next.gemm", 4, 4, 3, at(a, 0), at(b, 0), at(x, 0));
    if (dep)
        simpar_schedule_add_dep(s, gemm, ar);
    return s; /* (transfer full) */
}

static void
test_a_write_after_read_on_another_stream_without_a_dep_is_a_hazard(void)
{
    g_autoptr(SimparSchedule) s = hazard_all_reduce_then_gemm(FALSE);
    expect_failure(s, TRUE, SIMPAR_SCHEDULE_ERROR_HAZARD, "rank 0", "'ar.x'", "'comm'",
                   "'next.gemm'", "'compute'", NULL);
}

static void
test_a_dep_on_the_reader_removes_the_write_after_read_hazard(void)
{
    g_autoptr(SimparSchedule) s = hazard_all_reduce_then_gemm(TRUE);
    expect_valid(s);
}

static void
test_ops_on_one_stream_need_no_dep(void)
{
    g_autoptr(SimparSchedule) s = simpar_schedule_new(1, SIMPAR_DTYPE_FP32);
    guint x = simpar_schedule_add_buffer(s, 0, "x", 16);
    guint y = simpar_schedule_add_buffer(s, 0, "y", 16);
    add_kernel(s, SIMPAR_OP_GELU, 0, 0, "gelu", 4, 4, at(x, 0), SIMPAR_NO_VIEW, at(y, 0));
    add_kernel(s, SIMPAR_OP_GELU, 0, 0, "gelu.back", 4, 4, at(y, 0), SIMPAR_NO_VIEW, at(x, 0));
    expect_valid(s);
}

static void
test_two_readers_on_different_streams_are_no_hazard(void)
{
    g_autoptr(SimparSchedule) s = simpar_schedule_new(1, SIMPAR_DTYPE_FP32);
    guint comm = simpar_schedule_add_stream(s, "comm");
    guint x = simpar_schedule_add_buffer(s, 0, "x", 16);
    guint y = simpar_schedule_add_buffer(s, 0, "y", 16);
    guint z = simpar_schedule_add_buffer(s, 0, "z", 16);
    add_kernel(s, SIMPAR_OP_GELU, 0, 0, "gelu", 4, 4, at(x, 0), SIMPAR_NO_VIEW, at(y, 0));
    add_kernel(s, SIMPAR_OP_GELU, 0, comm, "gelu.copy", 4, 4, at(x, 0), SIMPAR_NO_VIEW, at(z, 0));
    expect_valid(s);
}

/* One rank: "compute" writes x[0, 8); "comm" writes x[off, off + 8). */
static SimparSchedule *
hazard_two_writers(gsize off)
{
    SimparSchedule *s = simpar_schedule_new(1, SIMPAR_DTYPE_FP32);
    guint comm = simpar_schedule_add_stream(s, "comm");
    guint in = simpar_schedule_add_buffer(s, 0, "in", 8);
    guint x = simpar_schedule_add_buffer(s, 0, "x", 16);
    add_kernel(s, SIMPAR_OP_GELU, 0, 0, "low", 2, 4, at(in, 0), SIMPAR_NO_VIEW, at(x, 0));
    add_kernel(s, SIMPAR_OP_GELU, 0, comm, "high", 2, 4, at(in, 0), SIMPAR_NO_VIEW, at(x, off));
    return s; /* (transfer full) */
}

static void
test_adjacent_ranges_of_one_buffer_are_no_hazard(void)
{
    g_autoptr(SimparSchedule) s = hazard_two_writers(8);
    expect_valid(s);
}

static void
test_ranges_sharing_one_element_are_a_hazard(void)
{
    g_autoptr(SimparSchedule) s = hazard_two_writers(7);
    expect_failure(s, TRUE, SIMPAR_SCHEDULE_ERROR_HAZARD, "rank 0", "'low'", "'high'", NULL);
}

static void
test_a_dep_orders_everything_before_its_target_on_that_stream(void)
{
    /* gemm -> gelu on "compute"; the all-reduce on "comm" waits for gelu, hence for gemm. */
    g_autoptr(SimparSchedule) s = simpar_schedule_new(1, SIMPAR_DTYPE_FP32);
    guint comm = simpar_schedule_add_stream(s, "comm");
    const guint self[] = {0};
    guint g = simpar_schedule_add_group(s, "dp", self, 1);
    guint a = simpar_schedule_add_buffer(s, 0, "a", 12);
    guint b = simpar_schedule_add_buffer(s, 0, "b", 12);
    guint c = simpar_schedule_add_buffer(s, 0, "c", 16);
    guint y = simpar_schedule_add_buffer(s, 0, "y", 12);
    add_gemm(s, 0, 0, "gemm", 4, 4, 3, at(a, 0), at(b, 0), at(c, 0));
    guint gelu =
        add_kernel(s, SIMPAR_OP_GELU, 0, 0, "gelu", 3, 4, at(a, 0), SIMPAR_NO_VIEW, at(y, 0));
    guint ar = add_all_reduce(s, 0, comm, "ar.c", g, 16, at(c, 0));
    simpar_schedule_add_dep(s, ar, gelu);
    expect_valid(s);
}

/* ----- a well-formed schedule ----- */

/* 2 x 2 grid: rows {0,1} {2,3}, columns {0,2} {1,3}. Every rank: gelu x -> z, all-reduce z over
 * its row, all-gather z over its column into y (compute stream); then on the comm stream, after
 * the all-gather, it swaps messages with its neighbour r^1 in both directions (the lower rank
 * sends first); finally z + x -> w on compute, after the swap. */
static void
test_a_well_formed_grid_schedule_passes_both_checks(void)
{
    g_autoptr(SimparSchedule) s = simpar_schedule_new(4, SIMPAR_DTYPE_FP32);
    guint comm = simpar_schedule_add_stream(s, "comm");
    const guint rows[2][2] = {{0, 1}, {2, 3}}, cols[2][2] = {{0, 2}, {1, 3}};
    guint row[2], col[2];
    for (guint i = 0; i < 2; i++) {
        row[i] = simpar_schedule_add_group(s, "row", rows[i], 2);
        col[i] = simpar_schedule_add_group(s, "col", cols[i], 2);
    }
    for (guint r = 0; r < 4; r++) {
        guint x = simpar_schedule_add_buffer(s, r, "x", 16);
        guint z = simpar_schedule_add_buffer(s, r, "z", 16);
        guint y = simpar_schedule_add_buffer(s, r, "y", 32);
        guint w = simpar_schedule_add_buffer(s, r, "w", 16);
        guint peer = r ^ 1;
        add_kernel(s, SIMPAR_OP_GELU, r, 0, "gelu", 4, 4, at(x, 0), SIMPAR_NO_VIEW, at(z, 0));
        add_all_reduce(s, r, 0, "ar.row", row[r / 2], 16, at(z, 0));
        guint ag = add_coll(s, r, 0, "ag.col", SIMPAR_COLL_ALL_GATHER, col[r % 2], 16, 0, at(z, 0),
                            at(y, 0));
        guint first, last;
        if (r < peer) {
            first = add_p2p(s, SIMPAR_OP_SEND, r, comm, "send.x", peer, 0, 16, at(x, 0));
            simpar_schedule_add_dep(s, first, ag);
            last = add_p2p(s, SIMPAR_OP_RECV, r, comm, "recv.z", peer, 1, 16, at(z, 0));
        } else {
            first = add_p2p(s, SIMPAR_OP_RECV, r, comm, "recv.z", peer, 0, 16, at(z, 0));
            simpar_schedule_add_dep(s, first, ag);
            last = add_p2p(s, SIMPAR_OP_SEND, r, comm, "send.x", peer, 1, 16, at(x, 0));
        }
        guint add = add_kernel(s, SIMPAR_OP_ADD, r, 0, "add", 4, 4, at(z, 0), at(x, 0), at(w, 0));
        simpar_schedule_add_dep(s, add, last);
    }
    CU_ASSERT_EQUAL(simpar_schedule_n_ops(s), 4 * 6);
    CU_ASSERT_EQUAL(simpar_schedule_n_groups(s), 4);
    expect_valid(s);
}

static void
test_an_empty_schedule_passes_both_checks(void)
{
    g_autoptr(SimparSchedule) s = simpar_schedule_new(3, SIMPAR_DTYPE_BF16);
    expect_valid(s);
}

/* ----- collective sizes ----- */

static void
test_full_buffer_elements_of_each_collective_kind_on_four_ranks(void)
{
    g_autoptr(SimparSchedule) s = simpar_schedule_new(4, SIMPAR_DTYPE_FP32);
    const guint all[] = {0, 1, 2, 3};
    guint g = simpar_schedule_add_group(s, "tp", all, 4);
    const gsize count = 5;
    const gsize want[SIMPAR_N_COLL_KINDS] = {
        [SIMPAR_COLL_ALL_REDUCE] = 5,      [SIMPAR_COLL_ALL_GATHER] = 20,
        [SIMPAR_COLL_REDUCE_SCATTER] = 20, [SIMPAR_COLL_BROADCAST] = 5,
        [SIMPAR_COLL_REDUCE] = 5,          [SIMPAR_COLL_ALL_TO_ALL] = 20,
    };
    for (guint k = 0; k < SIMPAR_N_COLL_KINDS; k++) {
        SimparOp op = {.kind = SIMPAR_OP_COLLECTIVE, .rank = 0, .name = "c"};
        op.u.coll = (SimparColl){(SimparCollKind) k, g, count, 0, SIMPAR_NO_VIEW, SIMPAR_NO_VIEW,
                                 SIMPAR_RED_SUM};
        guint i = simpar_schedule_add_op(s, &op);
        gsize got = simpar_op_coll_elems(s, simpar_schedule_op(s, i));
        if (got != want[k])
            printf("\n    %s: %zu elements, want %zu", simpar_coll_kind_name(k), got, want[k]);
        CU_ASSERT_EQUAL(got, want[k]);
    }
}

static void
test_group_index_finds_members_and_refuses_others(void)
{
    g_autoptr(SimparSchedule) s = simpar_schedule_new(4, SIMPAR_DTYPE_FP32);
    const guint odd[] = {3, 1};
    guint g = simpar_schedule_add_group(s, "col", odd, 2);
    CU_ASSERT_EQUAL(simpar_group_index(s, g, 3), 0);
    CU_ASSERT_EQUAL(simpar_group_index(s, g, 1), 1);
    CU_ASSERT_EQUAL(simpar_group_index(s, g, 0), G_MAXUINT);
    CU_ASSERT_EQUAL(simpar_group_index(s, g, 2), G_MAXUINT);
}

/* ----- dropout mask ----- */

static const guint64 dropout_seed = 1234;

static void
test_dropout_with_p_zero_keeps_every_element(void)
{
    guint kept = 0;
    for (guint64 i = 0; i < 100000; i++)
        kept += simpar_dropout_keep(dropout_seed, SIMPAR_DROPOUT_ATTN, i, 0.0);
    CU_ASSERT_EQUAL(kept, 100000);
}

static void
test_dropout_with_p_one_keeps_nothing(void)
{
    guint kept = 0;
    for (guint64 i = 0; i < 100000; i++)
        kept += simpar_dropout_keep(dropout_seed, SIMPAR_DROPOUT_ATTN, i, 1.0);
    CU_ASSERT_EQUAL(kept, 0);
}

static void
test_dropout_with_p_a_quarter_keeps_three_quarters(void)
{
    const guint n = 200000;
    for (guint site = SIMPAR_DROPOUT_ATTN; site <= SIMPAR_DROPOUT_FC2; site++) {
        guint kept = 0;
        for (guint64 i = 0; i < n; i++)
            kept += simpar_dropout_keep(dropout_seed, site, i, 0.25);
        double frac = (double) kept / n;
        printf("\n    site %u: kept %.4f ", site, frac);
        CU_ASSERT_DOUBLE_EQUAL(frac, 0.75, 0.005);
    }
}

static void
test_dropout_is_a_pure_function_of_seed_site_and_index(void)
{
    guint differ = 0;
    for (guint64 i = 0; i < 20000; i++) {
        guint64 index = i * G_GUINT64_CONSTANT(2654435761); /* spread over 64 bits */
        gboolean first = simpar_dropout_keep(dropout_seed, SIMPAR_DROPOUT_PROJ, index, 0.5);
        gboolean again = simpar_dropout_keep(dropout_seed, SIMPAR_DROPOUT_PROJ, index, 0.5);
        differ += first != again;
    }
    CU_ASSERT_EQUAL(differ, 0);
}

/* Masks drawn with p = 1/2 disagree on about half of the elements when they are independent. */
static double
dropout_disagreement(guint64 seed_a, guint site_a, guint64 seed_b, guint site_b)
{
    const guint n = 20000;
    guint differ = 0;
    for (guint64 i = 0; i < n; i++)
        differ += simpar_dropout_keep(seed_a, site_a, i, 0.5) !=
                  simpar_dropout_keep(seed_b, site_b, i, 0.5);
    return (double) differ / n;
}

static void
test_dropout_sites_draw_independent_masks(void)
{
    const guint sites[] = {SIMPAR_DROPOUT_ATTN, SIMPAR_DROPOUT_PROJ, SIMPAR_DROPOUT_FC2};
    for (guint i = 0; i < 3; i++) {
        for (guint j = i + 1; j < 3; j++) {
            double d = dropout_disagreement(dropout_seed, sites[i], dropout_seed, sites[j]);
            printf("\n    sites %u and %u disagree on %.4f ", sites[i], sites[j], d);
            CU_ASSERT_DOUBLE_EQUAL(d, 0.5, 0.03); /* sd 0.0035 */
        }
    }
}

static void
test_dropout_seeds_draw_independent_masks(void)
{
    double d = dropout_disagreement(dropout_seed, SIMPAR_DROPOUT_ATTN, dropout_seed + 1,
                                    SIMPAR_DROPOUT_ATTN);
    printf("\n    seeds %" G_GUINT64_FORMAT " and %" G_GUINT64_FORMAT " disagree on %.4f ",
           dropout_seed, dropout_seed + 1, d);
    CU_ASSERT_DOUBLE_EQUAL(d, 0.5, 0.03);
}

/* ----- activation recomputation in the generated layer schedules ----- */

typedef struct {
    const char *label, *mode;
    gint64 tp, depth, b;
    gboolean sp, paper;
} RecomputeCase;

/* Every tensor-parallel mode on h = 36, a = 12, f = 72, s = 4. */
static const RecomputeCase recompute_cases[] = {
    {"1-D T=4", "1d", 4, 0, 2, FALSE, TRUE},       {"1-D T=4 +SP", "1d", 4, 0, 2, TRUE, TRUE},
    {"2-D q=2", "2d", 4, 0, 4, FALSE, TRUE},       {"2.5-D q=2 d=2", "2.5d", 8, 2, 4, FALSE, TRUE},
    {"3-D q=2 paper", "3d", 8, 0, 4, FALSE, TRUE}, {"3-D q=2 later", "3d", 8, 0, 4, FALSE, FALSE},
};

enum {
    RC_1D,
    RC_1D_SP,
    RC_2D,
    RC_2P5D,
    RC_3D_PAPER,
    RC_3D_LATER
};

static SimparSchedule *
recompute_schedule(const RecomputeCase *rc, SimparRecompute recompute)
{
    SimparModel m = {.name = "test",
                     .hidden = 36,
                     .heads = 12,
                     .seq = 4,
                     .micro_batch = rc->b,
                     .layers = 1,
                     .ffn = 72,
                     .vocab = 64,
                     .dtype = SIMPAR_DTYPE_FP32};
    SimparPlan plan;
    simpar_plan_init(&plan);
    plan.gen = simpar_generator_of(rc->mode), plan.tp = rc->tp, plan.depth = rc->depth;
    plan.sequence_parallel = rc->sp, plan.paper_3d = rc->paper, plan.recompute = recompute;
    g_autoptr(GError) error = NULL;
    SimparSchedule *s = simpar_generate_layer(&m, &plan, &error);
    if (s == NULL)
        printf("\n    %s: %s", rc->label, error->message);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    return s; /* (transfer full) */
}

/* One rank's collectives per (group, kind): forward, recomputed ("bwd.recompute."), the rest
 * of the backward; and its attention forwards. */
typedef struct {
    guint n_groups;
    guint *fwd, *rec, *bwd; /* [group * SIMPAR_N_COLL_KINDS + kind] */
    guint attention, attention_recomputed;
} RecomputeCounts;

static gboolean
recompute_op_is_recomputed(const SimparOp *op)
{
    return g_str_has_prefix(op->name, "bwd.recompute.");
}

static void
recompute_count(const SimparSchedule *s, guint rank, RecomputeCounts *c)
{
    c->n_groups = simpar_schedule_n_groups(s);
    gsize n_cells = (gsize) c->n_groups * SIMPAR_N_COLL_KINDS;
    c->fwd = g_new0(guint, n_cells), c->rec = g_new0(guint, n_cells);
    c->bwd = g_new0(guint, n_cells);
    c->attention = c->attention_recomputed = 0;
    guint n;
    const guint *ops = simpar_schedule_rank_ops(s, rank, &n);
    for (guint i = 0; i < n; i++) {
        const SimparOp *op = simpar_schedule_op(s, ops[i]);
        gboolean rec = recompute_op_is_recomputed(op);
        if (op->kind == SIMPAR_OP_ATTENTION) {
            c->attention++;
            c->attention_recomputed += rec;
        }
        if (op->kind != SIMPAR_OP_COLLECTIVE)
            continue;
        guint cell = op->u.coll.group * SIMPAR_N_COLL_KINDS + op->u.coll.kind;
        guint *table = op->phase == SIMPAR_PHASE_FORWARD ? c->fwd : rec ? c->rec : c->bwd;
        table[cell]++;
    }
}

static void
recompute_counts_clear(RecomputeCounts *c)
{
    g_free(c->fwd), g_free(c->rec), g_free(c->bwd);
}

/* Calls of `kind` over all groups of one table. */
static guint
recompute_kind_total(const RecomputeCounts *c, const guint *table, SimparCollKind kind)
{
    guint total = 0;
    for (guint g = 0; g < c->n_groups; g++)
        total += table[g * SIMPAR_N_COLL_KINDS + kind];
    return total;
}

static gboolean
recompute_tables_equal(const RecomputeCounts *c, const guint *a, const guint *b)
{
    return memcmp(a, b, (gsize) c->n_groups * SIMPAR_N_COLL_KINDS * sizeof(guint)) == 0;
}

static void
test_full_recompute_in_1d_issues_six_all_reduces_per_layer(void)
{
    g_autoptr(SimparSchedule) none =
        recompute_schedule(&recompute_cases[RC_1D], SIMPAR_RECOMPUTE_NONE);
    g_autoptr(SimparSchedule) full =
        recompute_schedule(&recompute_cases[RC_1D], SIMPAR_RECOMPUTE_FULL);
    for (guint r = 0; r < simpar_schedule_n_ranks(full); r++) {
        RecomputeCounts n, f;
        recompute_count(none, r, &n);
        recompute_count(full, r, &f);
        guint fwd = recompute_kind_total(&f, f.fwd, SIMPAR_COLL_ALL_REDUCE);
        guint rec = recompute_kind_total(&f, f.rec, SIMPAR_COLL_ALL_REDUCE);
        guint bwd = recompute_kind_total(&f, f.bwd, SIMPAR_COLL_ALL_REDUCE);
        guint before = recompute_kind_total(&n, n.fwd, SIMPAR_COLL_ALL_REDUCE) +
                       recompute_kind_total(&n, n.bwd, SIMPAR_COLL_ALL_REDUCE);
        if (r == 0)
            printf("\n    rank 0: %u + %u recomputed + %u all-reduces (none: %u) ", fwd, rec, bwd,
                   before);
        CU_ASSERT_EQUAL(before, 4);
        CU_ASSERT_EQUAL(fwd + rec + bwd, 6);
        CU_ASSERT_EQUAL(fwd, 2);
        CU_ASSERT_EQUAL(rec, 2);
        recompute_counts_clear(&n), recompute_counts_clear(&f);
    }
}

static void
test_full_recompute_in_1d_sp_gathers_and_scatters_the_forward_twice(void)
{
    g_autoptr(SimparSchedule) none =
        recompute_schedule(&recompute_cases[RC_1D_SP], SIMPAR_RECOMPUTE_NONE);
    g_autoptr(SimparSchedule) full =
        recompute_schedule(&recompute_cases[RC_1D_SP], SIMPAR_RECOMPUTE_FULL);
    const SimparCollKind kinds[] = {SIMPAR_COLL_ALL_GATHER, SIMPAR_COLL_REDUCE_SCATTER};
    for (guint r = 0; r < simpar_schedule_n_ranks(full); r++) {
        RecomputeCounts n, f;
        recompute_count(none, r, &n);
        recompute_count(full, r, &f);
        for (guint i = 0; i < G_N_ELEMENTS(kinds); i++) {
            guint fwd = recompute_kind_total(&f, f.fwd, kinds[i]);
            guint rec = recompute_kind_total(&f, f.rec, kinds[i]);
            guint bwd = recompute_kind_total(&f, f.bwd, kinds[i]);
            if (r == 0)
                printf("\n    rank 0 %s: forward %u, recomputed %u, backward %u (none: %u) ",
                       simpar_coll_kind_name(kinds[i]), fwd, rec, bwd,
                       recompute_kind_total(&n, n.bwd, kinds[i]));
            CU_ASSERT_EQUAL(fwd, 2);
            CU_ASSERT_EQUAL(rec, 2);
            CU_ASSERT_EQUAL(bwd, recompute_kind_total(&n, n.bwd, kinds[i]));
        }
        CU_ASSERT_EQUAL(recompute_kind_total(&f, f.fwd, SIMPAR_COLL_ALL_GATHER) +
                            recompute_kind_total(&f, f.rec, SIMPAR_COLL_ALL_GATHER) +
                            recompute_kind_total(&f, f.bwd, SIMPAR_COLL_ALL_GATHER),
                        2 + 2 + 4); /* + dY of proj and fc2, re-gathered qkv and fc1 inputs */
        recompute_counts_clear(&n), recompute_counts_clear(&f);
    }
}

static void
test_full_recompute_in_3d_issues_the_forward_collectives_twice(void)
{
    for (guint v = RC_3D_PAPER; v <= RC_3D_LATER; v++) {
        const RecomputeCase *rc = &recompute_cases[v];
        g_autoptr(SimparSchedule) none = recompute_schedule(rc, SIMPAR_RECOMPUTE_NONE);
        g_autoptr(SimparSchedule) full = recompute_schedule(rc, SIMPAR_RECOMPUTE_FULL);
        for (guint r = 0; r < simpar_schedule_n_ranks(full); r++) {
            RecomputeCounts n, f;
            recompute_count(none, r, &n);
            recompute_count(full, r, &f);
            guint calls = 0;
            for (guint k = 0; k < SIMPAR_N_COLL_KINDS; k++)
                calls += recompute_kind_total(&f, f.rec, k);
            if (r == 0)
                printf("\n    %s rank 0: %u collectives recomputed ", rc->label, calls);
            CU_ASSERT(calls > 0);
            CU_ASSERT_TRUE(recompute_tables_equal(&f, f.rec, f.fwd)); /* per group and kind */
            CU_ASSERT_TRUE(recompute_tables_equal(&f, f.fwd, n.fwd));
            CU_ASSERT_TRUE(recompute_tables_equal(&f, f.bwd, n.bwd));
            recompute_counts_clear(&n), recompute_counts_clear(&f);
        }
    }
}

/* Selective: one more attention forward, right before the attention backward; no collective. */
static void
test_selective_recompute_runs_the_attention_forward_twice_and_no_collective(void)
{
    for (guint i = 0; i < G_N_ELEMENTS(recompute_cases); i++) {
        const RecomputeCase *rc = &recompute_cases[i];
        g_autoptr(SimparSchedule) none = recompute_schedule(rc, SIMPAR_RECOMPUTE_NONE);
        g_autoptr(SimparSchedule) sel = recompute_schedule(rc, SIMPAR_RECOMPUTE_SELECTIVE);
        CU_ASSERT_EQUAL(simpar_schedule_n_ops(sel),
                        simpar_schedule_n_ops(none) + simpar_schedule_n_ranks(sel));
        for (guint r = 0; r < simpar_schedule_n_ranks(sel); r++) {
            RecomputeCounts n, s;
            recompute_count(none, r, &n);
            recompute_count(sel, r, &s);
            CU_ASSERT_EQUAL(n.attention, 1);
            CU_ASSERT_EQUAL(s.attention, 2);
            CU_ASSERT_EQUAL(s.attention_recomputed, 1);
            CU_ASSERT_TRUE(recompute_tables_equal(&s, s.fwd, n.fwd));
            CU_ASSERT_TRUE(recompute_tables_equal(&s, s.bwd, n.bwd));
            for (guint k = 0; k < SIMPAR_N_COLL_KINDS; k++)
                CU_ASSERT_EQUAL(recompute_kind_total(&s, s.rec, k), 0);
            guint n_ops;
            const guint *ops = simpar_schedule_rank_ops(sel, r, &n_ops);
            for (guint k = 0; k + 1 < n_ops; k++) {
                const SimparOp *op = simpar_schedule_op(sel, ops[k]);
                if (!recompute_op_is_recomputed(op))
                    continue;
                const SimparOp *next = simpar_schedule_op(sel, ops[k + 1]);
                CU_ASSERT_STRING_EQUAL(op->name, "bwd.recompute.attention");
                CU_ASSERT_EQUAL(op->phase, SIMPAR_PHASE_BACKWARD);
                CU_ASSERT_EQUAL(next->kind, SIMPAR_OP_ATTENTION_BWD);
            }
            recompute_counts_clear(&n), recompute_counts_clear(&s);
        }
    }
}

/* Full: the backward of every rank opens with the recomputed forward, op for op. */
static void
test_full_recompute_opens_the_backward_with_the_whole_forward(void)
{
    for (guint i = 0; i < G_N_ELEMENTS(recompute_cases); i++) {
        const RecomputeCase *rc = &recompute_cases[i];
        g_autoptr(SimparSchedule) full = recompute_schedule(rc, SIMPAR_RECOMPUTE_FULL);
        guint bad = 0;
        for (guint r = 0; r < simpar_schedule_n_ranks(full); r++) {
            guint n, n_fwd = 0, first_bwd = G_MAXUINT;
            const guint *ops = simpar_schedule_rank_ops(full, r, &n);
            for (guint k = 0; k < n; k++) {
                const SimparOp *op = simpar_schedule_op(full, ops[k]);
                n_fwd += op->phase == SIMPAR_PHASE_FORWARD;
                if (op->phase == SIMPAR_PHASE_BACKWARD && first_bwd == G_MAXUINT)
                    first_bwd = k;
            }
            CU_ASSERT_FATAL(first_bwd == n_fwd && 2 * n_fwd <= n);
            for (guint k = 0; k < n_fwd; k++) {
                const SimparOp *f = simpar_schedule_op(full, ops[k]);
                const SimparOp *b = simpar_schedule_op(full, ops[n_fwd + k]);
                g_autofree char *want = g_strdup_printf("bwd.recompute.%s", f->name + 4);
                bad += b->phase != SIMPAR_PHASE_BACKWARD || f->kind != b->kind ||
                       !g_str_equal(b->name, want);
            }
            for (guint k = 2 * n_fwd; k < n; k++)
                bad += recompute_op_is_recomputed(simpar_schedule_op(full, ops[k]));
        }
        printf("\n    %s: %u ops out of place ", rc->label, bad);
        CU_ASSERT_EQUAL(bad, 0);
    }
}

static void
test_every_mode_and_recompute_mode_passes_both_schedule_checks(void)
{
    for (guint i = 0; i < G_N_ELEMENTS(recompute_cases); i++) {
        for (SimparRecompute r = SIMPAR_RECOMPUTE_NONE; r <= SIMPAR_RECOMPUTE_FULL; r++) {
            g_autoptr(SimparSchedule) s = recompute_schedule(&recompute_cases[i], r);
            g_autoptr(GError) error = NULL;
            gboolean ok =
                simpar_schedule_check(s, &error) && simpar_schedule_check_hazards(s, &error);
            if (!ok)
                printf("\n    %s recompute %s: %s", recompute_cases[i].label,
                       simpar_recompute_name(r), error->message);
            CU_ASSERT_TRUE(ok);
        }
    }
}

static CU_TestInfo recompute_tests[] = {
    {"1-D full recompute issues exactly 6 all-reduces per layer (4 without)",
     test_full_recompute_in_1d_issues_six_all_reduces_per_layer},
    {"1-D+SP full recompute issues the forward's all-gathers and reduce-scatters twice",
     test_full_recompute_in_1d_sp_gathers_and_scatters_the_forward_twice},
    {"3-D full recompute issues the forward's collectives twice, per group and kind (both "
     "variants)",
     test_full_recompute_in_3d_issues_the_forward_collectives_twice},
    {"selective recompute runs exactly 2 attention forwards and recomputes no collective",
     test_selective_recompute_runs_the_attention_forward_twice_and_no_collective},
    {"full recompute opens every rank's backward with its whole forward, op for op",
     test_full_recompute_opens_the_backward_with_the_whole_forward},
    {"every mode with every recompute mode passes both schedule checks",
     test_every_mode_and_recompute_mode_passes_both_schedule_checks},
    CU_TEST_INFO_NULL,
};

static CU_TestInfo deadlock_tests[] = {
    {"all-reduces on two groups in crossed order deadlock (CYCLE)",
     test_crossed_group_order_deadlocks},
    {"the crossed order completes when one rank issues the calls on two streams",
     test_crossed_group_order_on_two_streams_completes},
    {"two ranks that both receive before sending deadlock",
     test_both_ranks_receiving_first_deadlock},
    {"two ranks that both send before receiving deadlock: sends synchronise",
     test_both_ranks_sending_first_deadlock_because_sends_synchronise},
    {"a cross-stream dep on a collective the peer reaches too late deadlocks",
     test_a_dep_on_a_stalled_stream_deadlocks},
    CU_TEST_INFO_NULL,
};

static CU_TestInfo matching_tests[] = {
    {"a different collective size in a group is a mismatch",
     test_a_different_collective_size_is_a_mismatch},
    {"a different collective kind in a group is a mismatch",
     test_a_different_collective_kind_is_a_mismatch},
    {"a different root in a group is a mismatch", test_a_different_root_is_a_mismatch},
    {"a member making fewer calls is a mismatch", test_a_member_making_fewer_calls_is_a_mismatch},
    {"a call from a rank outside the group is a mismatch",
     test_a_call_from_outside_the_group_is_a_mismatch},
    {"a root index outside the group is a mismatch", test_a_root_outside_the_group_is_a_mismatch},
    {"a send without a recv is unmatched", test_a_send_without_a_recv_is_unmatched},
    {"a recv without a send is unmatched", test_a_recv_without_a_send_is_unmatched},
    {"a send and recv with different counts are unmatched",
     test_a_send_and_recv_with_different_counts_are_unmatched},
    {"a send and recv with different tags are unmatched",
     test_a_send_and_recv_with_different_tags_are_unmatched},
    {"two sends for one recv are unmatched", test_two_sends_for_one_recv_are_unmatched},
    CU_TEST_INFO_NULL,
};

static CU_TestInfo bounds_tests[] = {
    {"a view an op needs but leaves unset is refused", test_a_missing_view_is_refused},
    {"a broadcast needs no send buffer on non-roots, a reduce no recv buffer",
     test_root_only_buffers_are_optional},
    {"sizes that overflow are out of bounds, not wrapped",
     test_overflowing_sizes_are_out_of_bounds},
    {"unusable kernel parameters are refused", test_unusable_parameters_are_refused},
    {"a collective on a group that does not exist is refused",
     test_a_group_that_does_not_exist_is_refused},
    {"a member's index in a group, stepping evenly or not", test_group_index_by_step_and_by_search},
    {"a GEMM output one element too small is out of bounds",
     test_a_gemm_output_past_the_end_is_out_of_bounds},
    {"a view whose offset runs past the end is out of bounds",
     test_a_view_offset_past_the_end_is_out_of_bounds},
    {"a view ending exactly at the end is in bounds",
     test_a_view_ending_exactly_at_the_end_is_in_bounds},
    {"a buffer of another rank is out of bounds", test_a_buffer_of_another_rank_is_out_of_bounds},
    {"a buffer index that does not exist is out of bounds",
     test_a_buffer_that_does_not_exist_is_out_of_bounds},
    {"an all-gather output sized for one member is out of bounds",
     test_an_all_gather_output_sized_for_one_member_is_out_of_bounds},
    CU_TEST_INFO_NULL,
};

static CU_TestInfo step_tests[] = {
    {"every view of the embedding and cross-entropy ops is bounds-checked",
     test_every_view_of_the_vocabulary_ops_is_bounds_checked},
    {"every view of Adam is bounds-checked", test_every_view_of_adam_is_bounds_checked},
    {"a block touches nothing; a table gradient's accumulation is hazard-checked",
     test_a_block_touches_nothing_and_table_gradients_are_hazard_checked},
    {"unusable Adam, block and loss-scale parameters are refused",
     test_unusable_training_parameters_are_refused},
    {"members reducing with different ops are a mismatch",
     test_members_reducing_with_different_ops_are_a_mismatch},
    {"max reduces in all-reduce, reduce and reduce-scatter only",
     test_a_max_that_does_not_reduce_is_refused},
    CU_TEST_INFO_NULL,
};

static CU_TestInfo hazard_tests[] = {
    {"a read after write on another stream without a dep is a hazard",
     test_a_read_after_write_on_another_stream_without_a_dep_is_a_hazard},
    {"a dep on the writer removes the read-after-write hazard",
     test_a_dep_on_the_writer_removes_the_read_after_write_hazard},
    {"a write after read on another stream without a dep is a hazard",
     test_a_write_after_read_on_another_stream_without_a_dep_is_a_hazard},
    {"a dep on the reader removes the write-after-read hazard",
     test_a_dep_on_the_reader_removes_the_write_after_read_hazard},
    {"ops on one stream need no dep", test_ops_on_one_stream_need_no_dep},
    {"two readers on different streams are no hazard",
     test_two_readers_on_different_streams_are_no_hazard},
    {"writers of adjacent ranges of one buffer are no hazard",
     test_adjacent_ranges_of_one_buffer_are_no_hazard},
    {"writers of ranges sharing one element are a hazard",
     test_ranges_sharing_one_element_are_a_hazard},
    {"a dep orders everything before its target on that stream",
     test_a_dep_orders_everything_before_its_target_on_that_stream},
    CU_TEST_INFO_NULL,
};

static CU_TestInfo valid_tests[] = {
    {"a 2x2 grid with p2p both ways and two group axes passes both checks",
     test_a_well_formed_grid_schedule_passes_both_checks},
    {"an empty schedule passes both checks", test_an_empty_schedule_passes_both_checks},
    {"full-buffer elements: 4*count for all-gather, reduce-scatter, all-to-all, else count",
     test_full_buffer_elements_of_each_collective_kind_on_four_ranks},
    {"group index finds members in group order and refuses others",
     test_group_index_finds_members_and_refuses_others},
    CU_TEST_INFO_NULL,
};

static CU_TestInfo dropout_tests[] = {
    {"p = 0 keeps every element", test_dropout_with_p_zero_keeps_every_element},
    {"p = 1 keeps nothing", test_dropout_with_p_one_keeps_nothing},
    {"p = 0.25 keeps 0.75 +- 0.005 of 200000 elements at every site",
     test_dropout_with_p_a_quarter_keeps_three_quarters},
    {"the same seed, site and index always give the same answer",
     test_dropout_is_a_pure_function_of_seed_site_and_index},
    {"different sites draw independent masks", test_dropout_sites_draw_independent_masks},
    {"different seeds draw independent masks", test_dropout_seeds_draw_independent_masks},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"schedules that cannot run to completion", NULL, NULL, NULL, NULL, deadlock_tests},
    {"collective and send/recv matching", NULL, NULL, NULL, NULL, matching_tests},
    {"buffer bounds", NULL, NULL, NULL, NULL, bounds_tests},
    {"training-step ops and reductions", NULL, NULL, NULL, NULL, step_tests},
    {"hazards across streams", NULL, NULL, NULL, NULL, hazard_tests},
    {"well-formed schedules and collective sizes", NULL, NULL, NULL, NULL, valid_tests},
    {"dropout mask", NULL, NULL, NULL, NULL, dropout_tests},
    {"activation recomputation in the layer schedules", NULL, NULL, NULL, NULL, recompute_tests},
    CU_SUITE_INFO_NULL,
};

int
main(void)
{
    return simpar_test_main(suites);
}
