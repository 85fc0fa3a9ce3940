/* test-host.c - the host executor against hand values, direct formulas and finite differences.
 *
 * Tiny schedules built by hand with the schedule.h API: GEMM in every transpose combination,
 * with and without accumulation, batched with padded strides; every collective kind on a
 * three-member group whose group order differs from rank order, in place and not; send/recv
 * matched by tag and FIFO; layer norm against the textbook formula; GELU_BWD and ATTENTION_BWD
 * against central finite differences of their forward ops; embedding and cross-entropy against
 * hand values and formulas, and a 2-rank vocabulary-parallel loss against 1 rank; Adam against a
 * hand-computed step; the serial reference training step (reference-step.c) against a
 * written-out loss, finite differences and the Adam formula; and runs that must fail cleanly.
 *
 * Usage: test-host [SEED]   (the seed of the random tensors; printed on every run)
 */
#include "host.h"
#include "reference-step.h"
#include "schedule.h"
#include "simpar-test.h"
#include <CUnit/Basic.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#define HOST_TEST_STEP  1e-5 /* finite-difference step */
#define HOST_TEST_TOL   1e-6 /* largest accepted relative error */
#define HOST_TEST_FLOOR 1e-2 /* gradients smaller than this are compared absolutely */

static guint64 host_test_seed = 20240611;

/* ---------------------------------------------------------------- helpers */

static SimparOp
host_test_op(SimparOpKind kind, guint rank, const char *name)
{
    SimparOp op;
    memset(&op, 0, sizeof(op));
    op.kind = kind;
    op.rank = rank;
    op.name = name;
    return op;
}

static SimparView
host_test_view(guint buf, gsize off)
{
    return (SimparView){buf, off};
}

/* Runs the schedule and asserts success. */
static void
host_test_exec(SimparHost *host)
{
    g_autoptr(GError) error = NULL;
    gboolean ran = simpar_host_run(host, &error);
    if (!ran)
        printf("\n    run: %s", error->message);
    CU_ASSERT_TRUE(ran);
}

static void
host_test_fill(double *a, gsize n, GRand *rng)
{
    for (gsize i = 0; i < n; i++)
        a[i] = g_rand_double_range(rng, -1.0, 1.0);
}

static void
host_test_close(const char *what, gsize i, double got, double want, double tol)
{
    if (fabs(got - want) > tol * MAX(1.0, fabs(want)))
        printf("\n    %s[%" G_GSIZE_FORMAT "]: got %.17g, want %.17g", what, i, got, want);
    CU_ASSERT_DOUBLE_EQUAL(got, want, tol * MAX(1.0, fabs(want)));
}

/* Relative error of an analytic gradient against a finite difference. */
static double
host_test_rel_err(double analytic, double numeric)
{
    return fabs(analytic - numeric) / MAX(fabs(numeric), HOST_TEST_FLOOR);
}

/* ---------------------------------------------------------------- GEMM */

/* Two batch entries of op(a) [2x3] . op(b) [3x2], logically (before any transpose): */
static const double host_gemm_a[2][2][3] = {{{1, 2, 3}, {4, 5, 6}}, {{1, 0, -1}, {2, 1, 0}}};
static const double host_gemm_b[2][3][2] = {{{7, 8}, {9, 10}, {11, 12}}, {{1, 2}, {0, 1}, {3, -1}}};
/* worked out by hand: [1 2 3; 4 5 6] . [7 8; 9 10; 11 12] and the second pair */
static const double host_gemm_c[2][2][2] = {{{58, 64}, {139, 154}}, {{-2, 3}, {2, 5}}};

#define HOST_GEMM_SA  7 /* strides with padding between batch entries */
#define HOST_GEMM_SB  8
#define HOST_GEMM_SC  5
#define HOST_GEMM_PAD -99.0

static void
host_test_gemm_store(double *a, double *b, gboolean ta, gboolean tb)
{
    for (guint e = 0; e < 2; e++) {
        for (guint i = 0; i < 2; i++) {
            for (guint p = 0; p < 3; p++) {
                a[e * HOST_GEMM_SA + (ta ? p * 2 + i : i * 3 + p)] = host_gemm_a[e][i][p];
                b[e * HOST_GEMM_SB + (tb ? i * 3 + p : p * 2 + i)] = host_gemm_b[e][p][i];
            }
        }
    }
}

static void
host_test_gemm_case(gboolean ta, gboolean tb, gboolean acc)
{
    g_autoptr(SimparSchedule) sched = simpar_schedule_new(1, SIMPAR_DTYPE_FP32);
    guint ba = simpar_schedule_add_buffer(sched, 0, "a", 2 * HOST_GEMM_SA);
    guint bb = simpar_schedule_add_buffer(sched, 0, "b", 2 * HOST_GEMM_SB);
    guint bc = simpar_schedule_add_buffer(sched, 0, "c", 2 * HOST_GEMM_SC);
    SimparOp op = host_test_op(SIMPAR_OP_GEMM, 0, "gemm");
    op.u.gemm = (SimparGemm){.m = 2,
                             .n = 2,
                             .k = 3,
                             .batch = 2,
                             .trans_a = ta,
                             .trans_b = tb,
                             .accumulate = acc,
                             .stride_a = HOST_GEMM_SA,
                             .stride_b = HOST_GEMM_SB,
                             .stride_c = HOST_GEMM_SC,
                             .a = host_test_view(ba, 0),
                             .b = host_test_view(bb, 0),
                             .c = host_test_view(bc, 0)};
    simpar_schedule_add_op(sched, &op);
    g_autoptr(SimparHost) host = simpar_host_new(sched);
    double *c = simpar_host_buffer(host, bc);
    host_test_gemm_store(simpar_host_buffer(host, ba), simpar_host_buffer(host, bb), ta, tb);
    for (guint i = 0; i < 2 * HOST_GEMM_SC; i++)
        c[i] = i % HOST_GEMM_SC < 4 ? 1.0 : HOST_GEMM_PAD;
    host_test_exec(host);
    for (guint i = 0; i < 2 * HOST_GEMM_SC; i++) {
        guint e = i / HOST_GEMM_SC, j = i % HOST_GEMM_SC;
        double want = j < 4 ? host_gemm_c[e][j / 2][j % 2] + (acc ? 1.0 : 0.0) : HOST_GEMM_PAD;
        CU_ASSERT_EQUAL(c[i], want);
    }
}

static void
test_gemm(void)
{
    for (guint mask = 0; mask < 8; mask++)
        host_test_gemm_case(mask & 1, (mask >> 1) & 1, (mask >> 2) & 1);
}

/* ---------------------------------------------------------------- collectives */

#define HOST_G     3 /* group size */
#define HOST_COUNT 2
#define HOST_ROOT  1                         /* a group index: rank 0 */
#define HOST_SPAN  (2 * HOST_G * HOST_COUNT) /* per-rank buffer: send area | recv area */

static const guint host_group[HOST_G] = {3, 0, 2}; /* rank 1 stays idle */

typedef struct {
    SimparView send, recv;
} HostCollViews;

/* Where member m sends from and receives into, inside its buffer `buf`. */
static HostCollViews
host_test_coll_views(SimparCollKind kind, gboolean in_place, guint m, guint buf)
{
    SimparView area = host_test_view(buf, 0), upper = host_test_view(buf, HOST_G * HOST_COUNT);
    HostCollViews v = {area, in_place ? area : upper};
    if (in_place && kind == SIMPAR_COLL_ALL_GATHER)
        v.send = host_test_view(buf, m * HOST_COUNT);
    if (in_place && kind == SIMPAR_COLL_REDUCE_SCATTER)
        v.recv = host_test_view(buf, m * HOST_COUNT);
    if (kind == SIMPAR_COLL_REDUCE && m != HOST_ROOT)
        v.recv = SIMPAR_NO_VIEW;
    if (in_place && kind == SIMPAR_COLL_BROADCAST && m != HOST_ROOT)
        v.send = SIMPAR_NO_VIEW;
    return v;
}

/* The sum (or max) over members of their initial send elements at `off`. */
static double
host_test_reduce(double init[HOST_G][HOST_SPAN], gsize off, SimparRedOp red)
{
    double acc = red == SIMPAR_RED_MAX ? -INFINITY : 0.0;
    for (guint m = 0; m < HOST_G; m++)
        acc = red == SIMPAR_RED_MAX ? MAX(acc, init[m][off]) : acc + init[m][off];
    return acc;
}

/* What member m's recv element e must hold, from every member's initial buffer. */
static double
host_test_coll_want(SimparCollKind kind, SimparRedOp red, gboolean in_place,
                    double init[HOST_G][HOST_SPAN], guint m, gsize e)
{
    gsize blk = e / HOST_COUNT, in = e % HOST_COUNT;
    switch (kind) {
    case SIMPAR_COLL_ALL_REDUCE:
    case SIMPAR_COLL_REDUCE:
        return host_test_reduce(init, e, red);
    case SIMPAR_COLL_REDUCE_SCATTER:
        return host_test_reduce(init, m * HOST_COUNT + e, red);
    case SIMPAR_COLL_ALL_GATHER: /* in place, member blk sends its own block */
        return init[blk][(in_place ? blk * HOST_COUNT : 0) + in];
    case SIMPAR_COLL_BROADCAST:
        return init[HOST_ROOT][e];
    default: /* all-to-all: block blk of mine is block m of member blk's send */
        return init[blk][m * HOST_COUNT + in];
    }
}

/* How many elements member m receives (NCCL counts; 0 for a reduce's non-root). */
static gsize
host_test_recv_len(SimparCollKind kind, guint m)
{
    if (kind == SIMPAR_COLL_ALL_GATHER || kind == SIMPAR_COLL_ALL_TO_ALL)
        return HOST_G * HOST_COUNT;
    return kind == SIMPAR_COLL_REDUCE && m != HOST_ROOT ? 0 : HOST_COUNT;
}

/* Every element of every member's buffer: the recv view holds the result, the rest is as it
 * was (for in-place ops, the recv view covers the send area). */
static void
host_test_coll_check(SimparCollKind kind, SimparRedOp red, gboolean in_place, double *data[HOST_G],
                     double init[HOST_G][HOST_SPAN])
{
    for (guint m = 0; m < HOST_G; m++) {
        HostCollViews v = host_test_coll_views(kind, in_place, m, 0);
        gsize n = host_test_recv_len(kind, m);
        for (gsize i = 0; i < HOST_SPAN; i++) {
            gboolean in_recv = i >= v.recv.off && i < v.recv.off + n;
            double want = in_recv
                              ? host_test_coll_want(kind, red, in_place, init, m, i - v.recv.off)
                              : init[m][i];
            if (data[m][i] != want)
                printf("\n    %s%s%s member %u [%" G_GSIZE_FORMAT "]: got %g, want %g",
                       simpar_coll_kind_name(kind), red == SIMPAR_RED_MAX ? " max" : "",
                       in_place ? " in place" : "", m, i, data[m][i], want);
            CU_ASSERT_EQUAL(data[m][i], want);
        }
    }
}

/* Initial values: distinct everywhere, and the largest of an element is a different member's
 * from one element to the next, so a max that always picked one member would fail. */
static void
host_test_coll_case(SimparCollKind kind, SimparRedOp red, gboolean in_place)
{
    g_autoptr(SimparSchedule) sched = simpar_schedule_new(4, SIMPAR_DTYPE_FP32);
    guint gi = simpar_schedule_add_group(sched, "tp", host_group, HOST_G);
    guint bufs[HOST_G];
    for (guint m = 0; m < HOST_G; m++) {
        bufs[m] = simpar_schedule_add_buffer(sched, host_group[m], "data", HOST_SPAN);
        HostCollViews v = host_test_coll_views(kind, in_place, m, bufs[m]);
        SimparOp op = host_test_op(SIMPAR_OP_COLLECTIVE, host_group[m], "coll");
        op.u.coll = (SimparColl){kind, gi, HOST_COUNT, HOST_ROOT, v.send, v.recv, red};
        simpar_schedule_add_op(sched, &op);
    }
    g_autoptr(SimparHost) host = simpar_host_new(sched);
    double init[HOST_G][HOST_SPAN], *data[HOST_G];
    for (guint m = 0; m < HOST_G; m++) {
        data[m] = simpar_host_buffer(host, bufs[m]);
        for (guint i = 0; i < HOST_SPAN; i++)
            data[m][i] = init[m][i] = 100.0 * ((m + i) % HOST_G + 1) + i;
    }
    host_test_exec(host);
    host_test_coll_check(kind, red, in_place, data, init);
}

static void
test_collectives(void)
{
    for (SimparCollKind kind = 0; kind < SIMPAR_N_COLL_KINDS; kind++)
        host_test_coll_case(kind, SIMPAR_RED_SUM, FALSE);
}

static void
test_collectives_in_place(void)
{
    host_test_coll_case(SIMPAR_COLL_ALL_REDUCE, SIMPAR_RED_SUM, TRUE);
    host_test_coll_case(SIMPAR_COLL_ALL_GATHER, SIMPAR_RED_SUM, TRUE);
    host_test_coll_case(SIMPAR_COLL_REDUCE_SCATTER, SIMPAR_RED_SUM, TRUE);
    host_test_coll_case(SIMPAR_COLL_BROADCAST, SIMPAR_RED_SUM, TRUE);
    host_test_coll_case(SIMPAR_COLL_REDUCE, SIMPAR_RED_SUM, TRUE);
}

static void
test_collectives_max(void)
{
    const SimparCollKind kinds[] = {SIMPAR_COLL_ALL_REDUCE, SIMPAR_COLL_REDUCE,
                                    SIMPAR_COLL_REDUCE_SCATTER};
    for (guint i = 0; i < G_N_ELEMENTS(kinds); i++) {
        host_test_coll_case(kinds[i], SIMPAR_RED_MAX, FALSE);
        host_test_coll_case(kinds[i], SIMPAR_RED_MAX, TRUE);
    }
}

/* Ten in-place all-reduces in a row, run twice: each multiplies the common sum by 3. */
static void
test_repeated_all_reduce(void)
{
    g_autoptr(SimparSchedule) sched = simpar_schedule_new(4, SIMPAR_DTYPE_FP32);
    guint gi = simpar_schedule_add_group(sched, "tp", host_group, HOST_G);
    guint bufs[HOST_G];
    for (guint m = 0; m < HOST_G; m++)
        bufs[m] = simpar_schedule_add_buffer(sched, host_group[m], "x", 1);
    for (guint step = 0; step < 10; step++) {
        for (guint m = 0; m < HOST_G; m++) {
            SimparOp op = host_test_op(SIMPAR_OP_COLLECTIVE, host_group[m], "ar");
            SimparView v = host_test_view(bufs[m], 0);
            op.u.coll = (SimparColl){SIMPAR_COLL_ALL_REDUCE, gi, 1, 0, v, v, SIMPAR_RED_SUM};
            simpar_schedule_add_op(sched, &op);
        }
    }
    g_autoptr(SimparHost) host = simpar_host_new(sched);
    for (guint m = 0; m < HOST_G; m++)
        simpar_host_buffer(host, bufs[m])[0] = m + 1; /* sum 6 */
    host_test_exec(host);
    for (guint m = 0; m < HOST_G; m++)
        CU_ASSERT_EQUAL(simpar_host_buffer(host, bufs[m])[0], 6.0 * 19683.0); /* 6 * 3^9 */
    host_test_exec(host);
    for (guint m = 0; m < HOST_G; m++)
        CU_ASSERT_EQUAL(simpar_host_buffer(host, bufs[m])[0], 6.0 * 19683.0 * 59049.0);
}

/* ---------------------------------------------------------------- send / recv */

static void
host_test_p2p(SimparSchedule *sched, SimparOpKind kind, guint rank, guint peer, guint tag,
              guint buf, gsize off, guint stream)
{
    SimparOp op = host_test_op(kind, rank, kind == SIMPAR_OP_SEND ? "send" : "recv");
    op.stream = stream;
    op.u.p2p = (SimparP2p){peer, tag, 2, host_test_view(buf, off)};
    simpar_schedule_add_op(sched, &op);
}

/* Rank 0 sends tag 7, tag 8, tag 7; rank 1 issues its tag-8 receive first (on a second stream,
 * so the schedule is valid with rendezvous sends), then both tag-7 receives, and answers on
 * tag 7. The executor runs rank 1's ops in program order, so the tag-8 receive must pick the
 * second message out of the inbox and the tag-7 ones must keep their order. */
static void
test_send_recv(void)
{
    g_autoptr(SimparSchedule) sched = simpar_schedule_new(2, SIMPAR_DTYPE_FP32);
    guint comm = simpar_schedule_add_stream(sched, "comm");
    guint b0 = simpar_schedule_add_buffer(sched, 0, "out", 8);
    guint b1 = simpar_schedule_add_buffer(sched, 1, "in", 6);
    host_test_p2p(sched, SIMPAR_OP_SEND, 0, 1, 7, b0, 0, 0);
    host_test_p2p(sched, SIMPAR_OP_SEND, 0, 1, 8, b0, 2, 0);
    host_test_p2p(sched, SIMPAR_OP_SEND, 0, 1, 7, b0, 4, 0);
    host_test_p2p(sched, SIMPAR_OP_RECV, 0, 1, 7, b0, 6, 0);
    host_test_p2p(sched, SIMPAR_OP_RECV, 1, 0, 8, b1, 0, comm);
    host_test_p2p(sched, SIMPAR_OP_RECV, 1, 0, 7, b1, 2, 0);
    host_test_p2p(sched, SIMPAR_OP_RECV, 1, 0, 7, b1, 4, 0);
    host_test_p2p(sched, SIMPAR_OP_SEND, 1, 0, 7, b1, 1, 0);
    g_autoptr(SimparHost) host = simpar_host_new(sched);
    double *out = simpar_host_buffer(host, b0), *in = simpar_host_buffer(host, b1);
    for (guint i = 0; i < 6; i++)
        out[i] = 10 + i;
    host_test_exec(host);
    const double want_in[6] = {12, 13, 10, 11, 14, 15};
    for (guint i = 0; i < 6; i++)
        CU_ASSERT_EQUAL(in[i], want_in[i]);
    CU_ASSERT_EQUAL(out[6], 13.0); /* in[1..3) after rank 1's receives */
    CU_ASSERT_EQUAL(out[7], 10.0);
}

/* ---------------------------------------------------------------- layer norm, GELU, dropout */

static SimparOp
host_test_kernel(SimparOpKind kind, guint rows, guint cols)
{
    SimparOp op = host_test_op(kind, 0, simpar_op_kind_name(kind));
    op.u.kern.rows = rows;
    op.u.kern.cols = cols;
    op.u.kern.hidden = cols;
    op.u.kern.global_cols = cols;
    return op;
}

enum {
    LN_X,
    LN_STATS,
    LN_G,
    LN_B,
    LN_Y,
    LN_XHAT,
    LN_RSTD,
    LN_N
};

/* The textbook layer norm of each row of x: mean, variance over the row, then scale and shift. */
static void
host_test_ln_check(double *t[LN_N], guint rows, guint cols)
{
    for (guint r = 0; r < rows; r++) {
        const double *x = t[LN_X] + r * cols;
        double mean = 0.0, var = 0.0;
        for (guint c = 0; c < cols; c++)
            mean += x[c] / cols;
        for (guint c = 0; c < cols; c++)
            var += (x[c] - mean) * (x[c] - mean) / cols;
        double rstd = 1.0 / sqrt(var + 1e-5);
        host_test_close("rstd", r, t[LN_RSTD][r], rstd, 1e-12);
        for (guint c = 0; c < cols; c++) {
            double xhat = (x[c] - mean) * rstd;
            host_test_close("xhat", r * cols + c, t[LN_XHAT][r * cols + c], xhat, 1e-12);
            host_test_close("y", r * cols + c, t[LN_Y][r * cols + c],
                            xhat * t[LN_G][c] + t[LN_B][c], 1e-12);
        }
    }
}

static void
test_layer_norm(void)
{
    const guint rows = 3, cols = 5;
    const gsize sizes[LN_N] = {rows * cols, 2 * rows, cols, cols, rows * cols, rows * cols, rows};
    g_autoptr(SimparSchedule) sched = simpar_schedule_new(1, SIMPAR_DTYPE_FP32);
    guint b[LN_N];
    for (guint i = 0; i < LN_N; i++)
        b[i] = simpar_schedule_add_buffer(sched, 0, "t", sizes[i]);
    SimparOp stats = host_test_kernel(SIMPAR_OP_LN_STATS, rows, cols);
    stats.u.kern.in[0] = host_test_view(b[LN_X], 0);
    stats.u.kern.out[0] = host_test_view(b[LN_STATS], 0);
    simpar_schedule_add_op(sched, &stats);
    SimparOp apply = host_test_kernel(SIMPAR_OP_LN_APPLY, rows, cols);
    apply.u.kern.eps = 1e-5;
    for (guint i = 0; i < 4; i++)
        apply.u.kern.in[i] = host_test_view(b[LN_X + i], 0);
    for (guint i = 0; i < 3; i++)
        apply.u.kern.out[i] = host_test_view(b[LN_Y + i], 0);
    simpar_schedule_add_op(sched, &apply);
    g_autoptr(SimparHost) host = simpar_host_new(sched);
    g_autoptr(GRand) rng = g_rand_new_with_seed((guint32) host_test_seed);
    for (guint i = 0; i < LN_N; i++)
        host_test_fill(simpar_host_buffer(host, b[i]), sizes[i], rng);
    double *t[LN_N];
    for (guint i = 0; i < LN_N; i++)
        t[i] = simpar_host_buffer(host, b[i]);
    host_test_exec(host);
    host_test_ln_check(t, rows, cols);
}

/* GELU at x + h and x - h, and GELU_BWD at x: dx must be dy times the central difference. */
static void
test_gelu_bwd(void)
{
    const guint n = 41;
    g_autoptr(SimparSchedule) sched = simpar_schedule_new(1, SIMPAR_DTYPE_FP32);
    guint xp = simpar_schedule_add_buffer(sched, 0, "x+h", 2 * n);
    guint xm = simpar_schedule_add_buffer(sched, 0, "x-h", 2 * n);
    guint x = simpar_schedule_add_buffer(sched, 0, "x", 3 * n); /* x | dy | dx */
    guint bufs[2] = {xp, xm};
    for (guint i = 0; i < 2; i++) {
        SimparOp op = host_test_kernel(SIMPAR_OP_GELU, 1, n);
        op.u.kern.in[0] = host_test_view(bufs[i], 0);
        op.u.kern.out[0] = host_test_view(bufs[i], n);
        simpar_schedule_add_op(sched, &op);
    }
    SimparOp bwd = host_test_kernel(SIMPAR_OP_GELU_BWD, 1, n);
    bwd.u.kern.in[0] = host_test_view(x, n);
    bwd.u.kern.in[1] = host_test_view(x, 0);
    bwd.u.kern.out[0] = host_test_view(x, 2 * n);
    simpar_schedule_add_op(sched, &bwd);
    g_autoptr(SimparHost) host = simpar_host_new(sched);
    double *p = simpar_host_buffer(host, xp), *m = simpar_host_buffer(host, xm);
    double *t = simpar_host_buffer(host, x);
    for (guint i = 0; i < n; i++) {
        t[i] = -4.0 + 0.2 * i;
        t[n + i] = 1.0 + 0.05 * i;
        p[i] = t[i] + HOST_TEST_STEP;
        m[i] = t[i] - HOST_TEST_STEP;
    }
    host_test_exec(host);
    double worst = 0.0;
    for (guint i = 0; i < n; i++) {
        double fd = t[n + i] * (p[n + i] - m[n + i]) / (2 * HOST_TEST_STEP);
        worst = MAX(worst, host_test_rel_err(t[2 * n + i], fd));
    }
    printf("\n    worst relative error %.3g", worst);
    CU_ASSERT(worst < HOST_TEST_TOL);
}

/* DROPOUT scales kept entries by 1/(1-p) at their global index; p = 0 keeps everything. */
static void
test_dropout(void)
{
    const guint rows = 4, cols = 6;
    for (guint pass = 0; pass < 2; pass++) {
        double p = pass == 0 ? 0.5 : 0.0;
        g_autoptr(SimparSchedule) sched = simpar_schedule_new(1, SIMPAR_DTYPE_FP32);
        guint b = simpar_schedule_add_buffer(sched, 0, "x", 2 * rows * cols);
        SimparOp op = host_test_kernel(SIMPAR_OP_DROPOUT, rows, cols);
        op.u.kern = (SimparKernel){.rows = rows,
                                   .cols = cols,
                                   .p = p,
                                   .seed = 9,
                                   .site = 2,
                                   .row0 = 8,
                                   .col0 = 12,
                                   .global_cols = 24};
        op.u.kern.in[0] = host_test_view(b, 0);
        op.u.kern.out[0] = host_test_view(b, rows * cols);
        simpar_schedule_add_op(sched, &op);
        g_autoptr(SimparHost) host = simpar_host_new(sched);
        double *t = simpar_host_buffer(host, b);
        for (guint i = 0; i < rows * cols; i++)
            t[i] = i + 1;
        host_test_exec(host);
        guint dropped = 0;
        for (guint i = 0; i < rows * cols; i++) {
            guint64 idx = (8 + i / cols) * 24 + 12 + i % cols;
            gboolean keep = simpar_dropout_keep(9, 2, idx, p);
            dropped += !keep;
            CU_ASSERT_EQUAL(t[rows * cols + i], keep ? t[i] / (1.0 - p) : 0.0);
        }
        CU_ASSERT(p == 0.0 ? dropped == 0 : dropped > 0 && dropped < rows * cols);
    }
}

/* ---------------------------------------------------------------- attention */

enum {
    AT_QKV,
    AT_CTX,
    AT_PROBS,
    AT_DCTX,
    AT_DQKV,
    AT_N
};

typedef struct {
    SimparSchedule *sched;
    SimparHost *host;
    double *t[AT_N];
    gsize size[AT_N];
} HostAttn;

/* One rank: ATTENTION (qkv -> ctx, probs), then ATTENTION_BWD (qkv, probs, dctx -> dqkv). */
static void
host_test_attn_build(HostAttn *ha, const SimparAttention *shape)
{
    gsize rows = (gsize) shape->nb * shape->s, hd = (gsize) shape->nh * shape->dh;
    const gsize size[AT_N] = {rows * 3 * hd, rows * hd,
                              (gsize) shape->nb * shape->nh * shape->s * shape->s, rows * hd,
                              rows * 3 * hd};
    ha->sched = simpar_schedule_new(1, SIMPAR_DTYPE_FP32);
    guint b[AT_N];
    for (guint i = 0; i < AT_N; i++) {
        ha->size[i] = size[i];
        b[i] = simpar_schedule_add_buffer(ha->sched, 0, "t", size[i]);
    }
    SimparOp fwd = host_test_op(SIMPAR_OP_ATTENTION, 0, "attn");
    fwd.u.attn = *shape;
    fwd.u.attn.in[0] = host_test_view(b[AT_QKV], 0);
    fwd.u.attn.out[0] = host_test_view(b[AT_CTX], 0);
    fwd.u.attn.out[1] = host_test_view(b[AT_PROBS], 0);
    simpar_schedule_add_op(ha->sched, &fwd);
    SimparOp bwd = host_test_op(SIMPAR_OP_ATTENTION_BWD, 0, "attn.bwd");
    bwd.u.attn = *shape;
    for (guint i = 0; i < 3; i++)
        bwd.u.attn.in[i] = host_test_view(b[i == 0 ? AT_QKV : AT_PROBS + i - 1], 0);
    bwd.u.attn.out[0] = host_test_view(b[AT_DQKV], 0);
    simpar_schedule_add_op(ha->sched, &bwd);
    ha->host = simpar_host_new(ha->sched);
    for (guint i = 0; i < AT_N; i++)
        ha->t[i] = simpar_host_buffer(ha->host, b[i]);
}

static void
host_test_attn_clear(HostAttn *ha)
{
    g_clear_pointer(&ha->host, simpar_host_free);
    g_clear_pointer(&ha->sched, simpar_schedule_free);
}

/* loss = sum(ctx .* dctx) after a fresh run. */
static double
host_test_attn_loss(HostAttn *ha)
{
    host_test_exec(ha->host);
    double loss = 0.0;
    for (gsize i = 0; i < ha->size[AT_CTX]; i++)
        loss += ha->t[AT_CTX][i] * ha->t[AT_DCTX][i];
    return loss;
}

static void
host_test_attn_gradients(gboolean causal, double p)
{
    SimparAttention shape = {.nb = 2,
                             .nh = 2,
                             .s = 4,
                             .dh = 3,
                             .causal = causal,
                             .p = p,
                             .seed = 77,
                             .batch0 = 1,
                             .head0 = 1,
                             .heads = 4};
    HostAttn ha;
    host_test_attn_build(&ha, &shape);
    g_autoptr(GRand) rng = g_rand_new_with_seed((guint32) host_test_seed);
    host_test_fill(ha.t[AT_QKV], ha.size[AT_QKV], rng);
    host_test_fill(ha.t[AT_DCTX], ha.size[AT_DCTX], rng);
    host_test_attn_loss(&ha);
    g_autofree double *grad = g_new(double, ha.size[AT_DQKV]);
    memcpy(grad, ha.t[AT_DQKV], ha.size[AT_DQKV] * sizeof(double));
    double worst = 0.0, largest = 0.0;
    for (gsize i = 0; i < ha.size[AT_QKV]; i++) {
        double x = ha.t[AT_QKV][i];
        ha.t[AT_QKV][i] = x + HOST_TEST_STEP;
        double up = host_test_attn_loss(&ha);
        ha.t[AT_QKV][i] = x - HOST_TEST_STEP;
        double down = host_test_attn_loss(&ha);
        ha.t[AT_QKV][i] = x;
        worst = MAX(worst, host_test_rel_err(grad[i], (up - down) / (2 * HOST_TEST_STEP)));
        largest = MAX(largest, fabs(grad[i]));
    }
    printf("\n    causal %d p %.1f: worst relative error %.3g, largest gradient %.3g", causal, p,
           worst, largest);
    CU_ASSERT(worst < HOST_TEST_TOL);
    CU_ASSERT(largest > 0.1);
    host_test_attn_clear(&ha);
}

static void
test_attention_bwd(void)
{
    host_test_attn_gradients(FALSE, 0.0);
    host_test_attn_gradients(TRUE, 0.0);
    host_test_attn_gradients(FALSE, 0.1);
    host_test_attn_gradients(TRUE, 0.1);
}

/* One head, dh = 1, two tokens: (q, k, v) = (1, 2, 3) and (1, 0, 5). Token 0 sees scores (2, 0)
 * (or only itself when causal), token 1 sees (2, 0): P = (e^2, 1) / (e^2 + 1). */
static void
test_attention_forward(void)
{
    for (gboolean causal = FALSE; causal <= TRUE; causal++) {
        SimparAttention shape = {.nb = 1, .nh = 1, .s = 2, .dh = 1, .causal = causal};
        HostAttn ha;
        host_test_attn_build(&ha, &shape);
        const double qkv[6] = {1, 2, 3, 1, 0, 5};
        memcpy(ha.t[AT_QKV], qkv, sizeof(qkv));
        host_test_exec(ha.host);
        double p0 = exp(2.0) / (exp(2.0) + 1.0), p1 = 1.0 / (exp(2.0) + 1.0);
        double want_probs[4] = {causal ? 1.0 : p0, causal ? 0.0 : p1, p0, p1};
        for (guint i = 0; i < 4; i++)
            host_test_close("probs", i, ha.t[AT_PROBS][i], want_probs[i], 1e-15);
        host_test_close("ctx", 0, ha.t[AT_CTX][0], causal ? 3.0 : 3 * p0 + 5 * p1, 1e-15);
        host_test_close("ctx", 1, ha.t[AT_CTX][1], 3 * p0 + 5 * p1, 1e-15);
        host_test_attn_clear(&ha);
    }
}

/* The same two tokens, not causal, as sequence 3 / head 2 of 4 with p = 0.5: each weight is
 * P_ij * keep_ij * 2 with keep at the documented global index. */
static void
test_attention_dropout_index(void)
{
    SimparAttention shape = {.nb = 1,
                             .nh = 1,
                             .s = 2,
                             .dh = 1,
                             .p = 0.5,
                             .seed = 5,
                             .batch0 = 3,
                             .head0 = 2,
                             .heads = 4};
    HostAttn ha;
    host_test_attn_build(&ha, &shape);
    const double qkv[6] = {1, 2, 3, 1, 0, 5}, v[2] = {3, 5};
    memcpy(ha.t[AT_QKV], qkv, sizeof(qkv));
    host_test_exec(ha.host);
    double p[2] = {exp(2.0) / (exp(2.0) + 1.0), 1.0 / (exp(2.0) + 1.0)};
    guint kept = 0;
    for (guint i = 0; i < 2; i++) {
        double want = 0.0;
        for (guint j = 0; j < 2; j++) {
            guint64 idx = (((3 + 0) * 4 + 2 + 0) * 2 + i) * 2 + j;
            gboolean keep = simpar_dropout_keep(5, SIMPAR_DROPOUT_ATTN, idx, 0.5);
            kept += keep;
            want += keep ? p[j] * 2.0 * v[j] : 0.0;
            host_test_close("probs", i * 2 + j, ha.t[AT_PROBS][i * 2 + j], p[j], 1e-15);
        }
        host_test_close("ctx", i, ha.t[AT_CTX][i], want, 1e-15);
    }
    CU_ASSERT(kept > 0 && kept < 4); /* the seed was chosen so that the mask matters */
    host_test_attn_clear(&ha);
}

/* ---------------------------------------------------------------- embedding, cross-entropy */

static SimparOp
host_test_vocab(SimparOpKind kind, guint rank, guint rows, guint cols, guint64 vocab0,
                guint64 vocab)
{
    SimparOp op = host_test_op(kind, rank, simpar_op_kind_name(kind));
    op.u.vocab.rows = rows;
    op.u.vocab.cols = cols;
    op.u.vocab.vocab0 = vocab0;
    op.u.vocab.vocab = vocab;
    for (guint i = 0; i < 4; i++)
        op.u.vocab.in[i] = SIMPAR_NO_VIEW;
    op.u.vocab.out[0] = SIMPAR_NO_VIEW;
    return op;
}

/* Slice [2, 5) of a 2-column table. Ids 3, 4, 2 are rows 1, 2, 0 of the slice; 0 and 7 lie
 * outside it and 2.5 is no id: zero rows, and nothing accumulated into the table gradient. */
static void
test_embed(void)
{
    const double tokens[6] = {3, 0, 4, 2, 7, 2.5};
    const double table[6] = {1, 2, 3, 4, 5, 6};
    const double dy[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
    const double want_y[12] = {3, 4, 0, 0, 5, 6, 1, 2, 0, 0, 0, 0};
    const double want_dtable[6] = {1 + 7, 1 + 8, 1 + 1, 1 + 2, 1 + 5, 1 + 6}; /* from ones */
    g_autoptr(SimparSchedule) sched = simpar_schedule_new(1, SIMPAR_DTYPE_FP32);
    guint b = simpar_schedule_add_buffer(sched, 0, "t", 6 + 6 + 12 + 12 + 6);
    SimparOp fwd = host_test_vocab(SIMPAR_OP_EMBED, 0, 6, 2, 2, 3);
    fwd.u.vocab.in[0] = host_test_view(b, 0);
    fwd.u.vocab.in[1] = host_test_view(b, 6);
    fwd.u.vocab.out[0] = host_test_view(b, 12);
    simpar_schedule_add_op(sched, &fwd);
    SimparOp bwd = host_test_vocab(SIMPAR_OP_EMBED_BWD, 0, 6, 2, 2, 3);
    bwd.u.vocab.in[0] = host_test_view(b, 0);
    bwd.u.vocab.in[1] = host_test_view(b, 24);
    bwd.u.vocab.out[0] = host_test_view(b, 36);
    simpar_schedule_add_op(sched, &bwd);
    g_autoptr(SimparHost) host = simpar_host_new(sched);
    double *t = simpar_host_buffer(host, b);
    memcpy(t, tokens, sizeof(tokens));
    memcpy(t + 6, table, sizeof(table));
    memcpy(t + 24, dy, sizeof(dy));
    for (guint i = 0; i < 6; i++)
        t[36 + i] = 1.0;
    host_test_exec(host);
    for (guint i = 0; i < 12; i++)
        CU_ASSERT_EQUAL(t[12 + i], want_y[i]);
    for (guint i = 0; i < 6; i++)
        CU_ASSERT_EQUAL(t[36 + i], want_dtable[i]);
}

/* A vocabulary-parallel step on P ranks of one group, vocabulary V split into slices:
 *   EMBED -> all-reduce y -> GEMM logits = y . W -> XENT_MAX -> all-reduce max (MAX) ->
 *   XENT_FWD -> all-reduce stats -> XENT_LOSS -> XENT_BWD -> GEMM dW = y^T dlogits ->
 *   GEMM dy = dlogits W^T -> all-reduce dy -> EMBED_BWD.
 * Each rank holds rows [vocab0, vocab0 + vocab) of E and those columns of W. */
#define VP_ROWS 5
#define VP_H    3
#define VP_V    7

enum {
    VP_TOKENS,
    VP_TARGETS,
    VP_TABLE,
    VP_W,
    VP_Y,
    VP_LOGITS,
    VP_MAX,
    VP_STATS,
    VP_LOSS,
    VP_DLOGITS,
    VP_DW,
    VP_DY,
    VP_DTABLE,
    VP_N
};

typedef struct {
    SimparSchedule *sched;
    SimparHost *host;
    guint p;
    guint64 vocab0[2], vocab[2];
    guint buf[2][VP_N];
} HostVp;

static const double vp_tokens[VP_ROWS] = {6, 0, 3, 3, 5};
static const double vp_targets[VP_ROWS] = {1, 6, 2, 4, 0};

static gsize
vp_size(guint which, guint64 vocab)
{
    const gsize sizes[VP_N] = {VP_ROWS,         VP_ROWS,        vocab * VP_H,
                               VP_H * vocab,    VP_ROWS * VP_H, VP_ROWS * vocab,
                               VP_ROWS,         2 * VP_ROWS,    1,
                               VP_ROWS * vocab, VP_H * vocab,   VP_ROWS * VP_H,
                               vocab * VP_H};
    return sizes[which];
}

static void
vp_all_reduce(HostVp *vp, guint rank, guint group, guint which, gsize count, SimparRedOp red)
{
    SimparOp op = host_test_op(SIMPAR_OP_COLLECTIVE, rank, "all-reduce");
    SimparView v = host_test_view(vp->buf[rank][which], 0);
    op.u.coll = (SimparColl){SIMPAR_COLL_ALL_REDUCE, group, count, 0, v, v, red};
    simpar_schedule_add_op(vp->sched, &op);
}

static void
vp_gemm(HostVp *vp, guint rank, SimparGemm g, guint a, guint b, guint c)
{
    SimparOp op = host_test_op(SIMPAR_OP_GEMM, rank, "gemm");
    g.batch = 1;
    g.a = host_test_view(vp->buf[rank][a], 0);
    g.b = host_test_view(vp->buf[rank][b], 0);
    g.c = host_test_view(vp->buf[rank][c], 0);
    op.u.gemm = g;
    simpar_schedule_add_op(vp->sched, &op);
}

/* A vocabulary op of rank `r` with inputs `ins` (VP_N ends the list) and output `out`. */
static void
vp_vocab(HostVp *vp, guint r, SimparOpKind kind, const guint *ins, guint out)
{
    SimparOp op = host_test_vocab(kind, r, VP_ROWS, VP_H, vp->vocab0[r], vp->vocab[r]);
    op.u.vocab.scale = 1.0 / VP_ROWS;
    for (guint i = 0; ins[i] != VP_N; i++)
        op.u.vocab.in[i] = host_test_view(vp->buf[r][ins[i]], 0);
    op.u.vocab.out[0] = host_test_view(vp->buf[r][out], 0);
    simpar_schedule_add_op(vp->sched, &op);
}

static void
vp_rank(HostVp *vp, guint r, guint group)
{
    guint vl = (guint) vp->vocab[r];
    vp_vocab(vp, r, SIMPAR_OP_EMBED, (const guint[]){VP_TOKENS, VP_TABLE, VP_N}, VP_Y);
    vp_all_reduce(vp, r, group, VP_Y, VP_ROWS * VP_H, SIMPAR_RED_SUM);
    vp_gemm(vp, r, (SimparGemm){.m = VP_ROWS, .n = vl, .k = VP_H}, VP_Y, VP_W, VP_LOGITS);
    vp_vocab(vp, r, SIMPAR_OP_XENT_MAX, (const guint[]){VP_LOGITS, VP_N}, VP_MAX);
    vp_all_reduce(vp, r, group, VP_MAX, VP_ROWS, SIMPAR_RED_MAX);
    vp_vocab(vp, r, SIMPAR_OP_XENT_FWD, (const guint[]){VP_LOGITS, VP_MAX, VP_TARGETS, VP_N},
             VP_STATS);
    vp_all_reduce(vp, r, group, VP_STATS, 2 * VP_ROWS, SIMPAR_RED_SUM);
    vp_vocab(vp, r, SIMPAR_OP_XENT_LOSS, (const guint[]){VP_MAX, VP_STATS, VP_N}, VP_LOSS);
    vp_vocab(vp, r, SIMPAR_OP_XENT_BWD,
             (const guint[]){VP_LOGITS, VP_MAX, VP_TARGETS, VP_STATS, VP_N}, VP_DLOGITS);
    vp_gemm(vp, r, (SimparGemm){.m = VP_H, .n = vl, .k = VP_ROWS, .trans_a = TRUE}, VP_Y,
            VP_DLOGITS, VP_DW);
    vp_gemm(vp, r, (SimparGemm){.m = VP_ROWS, .n = VP_H, .k = vl, .trans_b = TRUE}, VP_DLOGITS,
            VP_W, VP_DY);
    vp_all_reduce(vp, r, group, VP_DY, VP_ROWS * VP_H, SIMPAR_RED_SUM);
    vp_vocab(vp, r, SIMPAR_OP_EMBED_BWD, (const guint[]){VP_TOKENS, VP_DY, VP_N}, VP_DTABLE);
}

/* Builds the step on p = 1 or 2 ranks (slices [0, 4) and [4, 7)) and runs it on the global
 * table e [V x h] and weight w [h x V]. */
static void
vp_run(HostVp *vp, guint p, const double *e, const double *w)
{
    *vp = (HostVp){.sched = simpar_schedule_new(p, SIMPAR_DTYPE_FP32), .p = p};
    const guint ranks[2] = {0, 1};
    guint group = simpar_schedule_add_group(vp->sched, "tp", ranks, p);
    for (guint r = 0; r < p; r++) {
        vp->vocab0[r] = r == 0 ? 0 : 4;
        vp->vocab[r] = p == 1 ? VP_V : r == 0 ? 4 : VP_V - 4;
        for (guint i = 0; i < VP_N; i++)
            vp->buf[r][i] =
                simpar_schedule_add_buffer(vp->sched, r, "vp", vp_size(i, vp->vocab[r]));
    }
    for (guint r = 0; r < p; r++)
        vp_rank(vp, r, group);
    vp->host = simpar_host_new(vp->sched);
    for (guint r = 0; r < p; r++) {
        double *t[VP_N];
        for (guint i = 0; i < VP_N; i++)
            t[i] = simpar_host_buffer(vp->host, vp->buf[r][i]);
        memcpy(t[VP_TOKENS], vp_tokens, sizeof(vp_tokens));
        memcpy(t[VP_TARGETS], vp_targets, sizeof(vp_targets));
        memcpy(t[VP_TABLE], e + vp->vocab0[r] * VP_H, vp->vocab[r] * VP_H * sizeof(double));
        for (guint c = 0; c < VP_H; c++)
            for (guint v = 0; v < vp->vocab[r]; v++)
                t[VP_W][c * vp->vocab[r] + v] = w[c * VP_V + vp->vocab0[r] + v];
    }
    host_test_exec(vp->host);
}

static void
vp_clear(HostVp *vp)
{
    g_clear_pointer(&vp->host, simpar_host_free);
    g_clear_pointer(&vp->sched, simpar_schedule_free);
}

/* Element (row, global column) of a [rows x vocab] tensor split by vocabulary columns (`cols`
 * TRUE, e.g. logits) or [vocab x cols] split by rows (the table). */
static double
vp_get(HostVp *vp, guint which, guint row, guint col, gboolean split_cols)
{
    guint v = split_cols ? col : row, r = vp->p == 1 || v < 4 ? 0 : 1;
    const double *t = simpar_host_buffer(vp->host, vp->buf[r][which]);
    guint64 local = v - vp->vocab0[r];
    return split_cols ? t[row * vp->vocab[r] + local] : t[local * VP_H + col];
}

/* One rank against the formulas: y = E[tokens], loss = mean(logsumexp - target logit),
 * dlogits = (softmax - onehot) / rows, dW = y^T dlogits, dE[id] = sum of (dlogits W^T) rows. */
static void
vp_check_formulas(HostVp *vp, const double *e, const double *w)
{
    double loss = 0.0, dy[VP_ROWS][VP_H] = {{0}}, dtable[VP_V][VP_H] = {{0}};
    for (guint r = 0; r < VP_ROWS; r++) {
        const double *y = e + (guint) vp_tokens[r] * VP_H;
        double logit[VP_V], sum = 0.0;
        for (guint v = 0; v < VP_V; v++) {
            logit[v] = y[0] * w[v] + y[1] * w[VP_V + v] + y[2] * w[2 * VP_V + v];
            sum += exp(logit[v]);
        }
        loss += (log(sum) - logit[(guint) vp_targets[r]]) / VP_ROWS;
        for (guint v = 0; v < VP_V; v++) {
            double d = (exp(logit[v]) / sum - (v == vp_targets[r])) / VP_ROWS;
            host_test_close("dlogits", r * VP_V + v, vp_get(vp, VP_DLOGITS, r, v, TRUE), d, 1e-13);
            for (guint c = 0; c < VP_H; c++)
                dy[r][c] += d * w[c * VP_V + v];
        }
        for (guint c = 0; c < VP_H; c++)
            dtable[(guint) vp_tokens[r]][c] += dy[r][c];
    }
    host_test_close("loss", 0, simpar_host_buffer(vp->host, vp->buf[0][VP_LOSS])[0], loss, 1e-13);
    for (guint v = 0; v < VP_V; v++)
        for (guint c = 0; c < VP_H; c++)
            host_test_close("dtable", v * VP_H + c, vp_get(vp, VP_DTABLE, v, c, FALSE),
                            dtable[v][c], 1e-13);
}

static void
test_vocab_parallel(void)
{
    double e[VP_V * VP_H], w[VP_H * VP_V];
    g_autoptr(GRand) rng = g_rand_new_with_seed((guint32) host_test_seed);
    host_test_fill(e, G_N_ELEMENTS(e), rng);
    host_test_fill(w, G_N_ELEMENTS(w), rng);
    for (guint i = 0; i < G_N_ELEMENTS(w); i++)
        w[i] *= 4.0; /* logits of a few units, so the max matters */
    HostVp one, two;
    vp_run(&one, 1, e, w);
    vp_check_formulas(&one, e, w);
    vp_run(&two, 2, e, w);
    for (guint r = 0; r < 2; r++)
        host_test_close("loss", r, simpar_host_buffer(two.host, two.buf[r][VP_LOSS])[0],
                        simpar_host_buffer(one.host, one.buf[0][VP_LOSS])[0], 1e-14);
    for (guint r = 0; r < VP_ROWS; r++)
        for (guint v = 0; v < VP_V; v++) {
            host_test_close("dlogits", r * VP_V + v, vp_get(&two, VP_DLOGITS, r, v, TRUE),
                            vp_get(&one, VP_DLOGITS, r, v, TRUE), 1e-14);
            for (guint c = 0; c < VP_H; c++)
                host_test_close("dW", c * VP_V + v, vp_get(&two, VP_DW, c, v, TRUE),
                                vp_get(&one, VP_DW, c, v, TRUE), 1e-14);
        }
    for (guint v = 0; v < VP_V; v++)
        for (guint c = 0; c < VP_H; c++)
            host_test_close("dtable", v * VP_H + c, vp_get(&two, VP_DTABLE, v, c, FALSE),
                            vp_get(&one, VP_DTABLE, v, c, FALSE), 1e-14);
    vp_clear(&one);
    vp_clear(&two);
}

/* ---------------------------------------------------------------- Adam, blocks */

#define ADAM_N 4

/* ADAM ops at steps 1..n_steps on one parameter block, gradient grads[t] at step t + 1. */
static SimparHost *
host_test_adam_run(SimparSchedule **sched, const SimparAdam *hyper, guint n_steps, const double *p0,
                   double grads[][ADAM_N], guint *buf)
{
    *sched = simpar_schedule_new(1, SIMPAR_DTYPE_BF16);
    *buf = simpar_schedule_add_buffer(*sched, 0, "adam", (3 + n_steps) * ADAM_N);
    for (guint t = 0; t < n_steps; t++) {
        SimparOp op = host_test_op(SIMPAR_OP_ADAM, 0, "adam");
        op.u.adam = *hyper;
        op.u.adam.count = ADAM_N;
        op.u.adam.step = t + 1;
        op.u.adam.param = host_test_view(*buf, 0);
        op.u.adam.m = host_test_view(*buf, ADAM_N);
        op.u.adam.v = host_test_view(*buf, 2 * ADAM_N);
        op.u.adam.grad = host_test_view(*buf, (3 + t) * ADAM_N);
        simpar_schedule_add_op(*sched, &op);
    }
    SimparHost *host = simpar_host_new(*sched);
    double *t = simpar_host_buffer(host, *buf);
    memcpy(t, p0, ADAM_N * sizeof(double));
    for (guint s = 0; s < n_steps; s++)
        memcpy(t + (3 + s) * ADAM_N, grads[s], ADAM_N * sizeof(double));
    host_test_exec(host);
    return host; /* (transfer full) */
}

/* Step 1 from m = v = 0 by hand: p = 1, g = 0.5, lr 0.1, wd 0.01, eps 1e-8: m = 0.05,
 * v = 0.00025, m / (1 - 0.9) = 0.5, v / (1 - 0.999) = 0.25, so
 * p = 1 - 0.1 (0.5 / (0.5 + 1e-8) + 0.01) = 0.899000002 (to 1e-17); then three steps against
 * the formula of schedule.h, written out here. */
static void
test_adam(void)
{
    const SimparAdam hyper = {
        .lr = 0.1, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .weight_decay = 0.01};
    const double p0[ADAM_N] = {1.0, -0.5, 0.25, 2.0};
    double grads[3][ADAM_N] = {{0.5, 0.1, -0.3, 0.0}, {-0.2, 0.4, 0.3, 1.0}, {0.7, -0.6, 0.0, 2.0}};
    SimparSchedule *sched;
    guint buf;
    SimparHost *host = host_test_adam_run(&sched, &hyper, 1, p0, grads, &buf);
    host_test_close("p", 0, simpar_host_buffer(host, buf)[0], 0.899000002, 1e-15);
    host_test_close("m", 0, simpar_host_buffer(host, buf)[ADAM_N], 0.05, 1e-15);
    host_test_close("v", 0, simpar_host_buffer(host, buf)[2 * ADAM_N], 0.00025, 1e-15);
    simpar_host_free(host);
    simpar_schedule_free(sched);
    host = host_test_adam_run(&sched, &hyper, 3, p0, grads, &buf);
    const double *t = simpar_host_buffer(host, buf);
    for (guint i = 0; i < ADAM_N; i++) {
        double p = p0[i], m = 0.0, v = 0.0;
        for (guint s = 1; s <= 3; s++) {
            double g = grads[s - 1][i];
            m = 0.9 * m + 0.1 * g;
            v = 0.999 * v + 0.001 * g * g;
            double mhat = m / (1 - pow(0.9, s)), vhat = v / (1 - pow(0.999, s));
            p = p - 0.1 * mhat / (sqrt(vhat) + 1e-8) - 0.1 * 0.01 * p;
        }
        host_test_close("p", i, t[i], p, 1e-14);
        host_test_close("m", i, t[ADAM_N + i], m, 1e-14);
        host_test_close("v", i, t[2 * ADAM_N + i], v, 1e-14);
    }
    simpar_host_free(host);
    simpar_schedule_free(sched);
}

/* A block is a timed span without data: it runs, and leaves every buffer as it was. */
static void
test_block(void)
{
    g_autoptr(SimparSchedule) sched = simpar_schedule_new(1, SIMPAR_DTYPE_FP16);
    guint b = simpar_schedule_add_buffer(sched, 0, "x", 3);
    SimparOp op = host_test_op(SIMPAR_OP_BLOCK, 0, "layers.fwd");
    op.u.block = (SimparBlockOp){g_intern_static_string("layer.fwd"), 4, 1e12};
    simpar_schedule_add_op(sched, &op);
    g_autoptr(SimparHost) host = simpar_host_new(sched);
    double *x = simpar_host_buffer(host, b);
    for (guint i = 0; i < 3; i++)
        x[i] = i + 0.5;
    host_test_exec(host);
    for (guint i = 0; i < 3; i++)
        CU_ASSERT_EQUAL(x[i], i + 0.5);
}

/* ---------------------------------------------------------------- reference training step */

/* b = 2, s = 3, h = 4, a = 2, f = 8, causal, dropout 0.1; V = 7; 2 replicas x 2 micro-batches. */
static RefStepConfig
host_test_step_config(guint layers, gboolean tied)
{
    RefStepConfig cfg = {.layer = {2, 3, 4, 2, 8, TRUE, 1e-5, 0.1, 0.1, 4242},
                         .vocab = 7,
                         .layers = layers,
                         .tied = tied,
                         .replicas = 2,
                         .micro_batches = 2,
                         .lr = 1e-2,
                         .beta1 = 0.9,
                         .beta2 = 0.999,
                         .eps = 1e-8,
                         .weight_decay = 0.1,
                         .step = 1};
    return cfg;
}

#define STEP_IDS (2 * 2 * 2 * 3) /* replicas x micro-batches x b x s */

static RefStepParams *
host_test_step_setup(const RefStepConfig *cfg, guint64 *tokens, guint64 *targets)
{
    g_autoptr(GRand) rng = g_rand_new_with_seed((guint32) host_test_seed);
    RefStepParams *p = ref_step_params_new(cfg);
    ref_step_params_fill(p, rng);
    for (guint i = 0; i < STEP_IDS; i++) {
        tokens[i] = (guint64) g_rand_int_range(rng, 0, (gint32) cfg->vocab);
        targets[i] = (guint64) g_rand_int_range(rng, 0, (gint32) cfg->vocab);
    }
    return p; /* (transfer full) */
}

/* The summed cross-entropy of micro-batch g, written out: x = E[tokens], layer l the reference
 * layer with seed 4242 + 1000003 l + 7919 g, logits = x_L . W_out. */
static double
host_test_step_direct_loss(const RefStepConfig *cfg, RefStepParams *p, guint g,
                           const guint64 *tokens, const guint64 *targets)
{
    enum {
        ROWS = 6,
        H = 4,
        V = 7
    };

    double x[ROWS * H], y[ROWS * H], zeros[ROWS * H] = {0}, scratch[ROWS * H];
    double grads[REF_LAYER_PARAMS][3 * H * H];
    for (guint r = 0; r < ROWS; r++)
        memcpy(x + r * H, ref_step_embedding(p)->value + tokens[r] * H, H * sizeof(double));
    for (guint l = 0; l < cfg->layers; l++) {
        RefShape sh = cfg->layer;
        sh.seed = 4242 + 1000003 * (guint64) l + 7919 * (guint64) g;
        double *t[REF_N_TENSORS] = {x, zeros};
        for (guint i = 0; i < REF_LAYER_PARAMS; i++) {
            t[REF_LN1_G + i] = ref_step_layer_param(p, l, REF_LN1_G + i)->value;
            t[REF_LN1_G_GRAD + i] = grads[i];
        }
        t[REF_Y] = y, t[REF_DX] = scratch;
        ref_layer_run(&sh, t);
        memcpy(x, y, sizeof(x));
    }
    const double *w = ref_step_output(p)->value;
    double loss = 0.0;
    for (guint r = 0; r < ROWS; r++) {
        double logit[V], sum = 0.0;
        for (guint v = 0; v < V; v++) {
            logit[v] = 0.0;
            for (guint c = 0; c < H; c++)
                logit[v] += x[r * H + c] * w[c * V + v];
            sum += exp(logit[v]);
        }
        loss += log(sum) - logit[targets[r]];
    }
    return loss;
}

/* (a) lr = 0 leaves every parameter as it was; the loss is the mean of the written-out one
 * over the 4 micro-batches of 6 tokens (1 and 2 layers). */
static void
host_test_step_loss_case(guint layers)
{
    RefStepConfig cfg = host_test_step_config(layers, FALSE);
    cfg.lr = 0.0;
    guint64 tokens[STEP_IDS], targets[STEP_IDS];
    g_autoptr(RefStepParams) p = host_test_step_setup(&cfg, tokens, targets);
    g_autoptr(GPtrArray) before = g_ptr_array_new_with_free_func(g_free);
    for (guint i = 0; i < p->n; i++)
        g_ptr_array_add(before, g_memdup2(p->params[i].value,
                                          p->params[i].rows * p->params[i].cols * sizeof(double)));
    double want = 0.0;
    for (guint g = 0; g < 4; g++)
        want += host_test_step_direct_loss(&cfg, p, g, tokens + 6 * g, targets + 6 * g) / 24.0;
    double loss = ref_step_run(&cfg, p, tokens, targets);
    printf("\n    %u layers: loss %.6f", layers, loss);
    host_test_close("loss", 0, loss, want, 1e-13);
    for (guint i = 0; i < p->n; i++) { /* an empty tensor (a model without MLA) has no data */
        gsize size = p->params[i].rows * p->params[i].cols * sizeof(double);
        CU_ASSERT(size == 0 || memcmp(before->pdata[i], p->params[i].value, size) == 0);
    }
}

static void
test_reference_step_loss(void)
{
    host_test_step_loss_case(1);
    host_test_step_loss_case(2);
}

/* d loss / d value[e] of tensor `t` by central differences; the gradients are those of the
 * unperturbed parameters again on return. */
static double
host_test_step_fd(const RefStepConfig *cfg, RefStepParams *p, RefParam *t, gsize e,
                  const guint64 *tokens, const guint64 *targets)
{
    double x = t->value[e];
    t->value[e] = x + HOST_TEST_STEP;
    double up = ref_step_gradients(cfg, p, tokens, targets);
    t->value[e] = x - HOST_TEST_STEP;
    double down = ref_step_gradients(cfg, p, tokens, targets);
    t->value[e] = x;
    ref_step_gradients(cfg, p, tokens, targets);
    return (up - down) / (2 * HOST_TEST_STEP);
}

/* Two entries each of the embedding (rows of tokens that occur) and of the output weight. */
static double
host_test_step_grad_case(gboolean tied)
{
    RefStepConfig cfg = host_test_step_config(2, tied);
    guint64 tokens[STEP_IDS], targets[STEP_IDS];
    g_autoptr(RefStepParams) p = host_test_step_setup(&cfg, tokens, targets);
    g_autoptr(GRand) rng = g_rand_new_with_seed((guint32) host_test_seed + 1);
    ref_step_gradients(&cfg, p, tokens, targets);
    RefParam *which[2] = {ref_step_embedding(p), tied ? ref_step_embedding(p) : ref_step_output(p)};
    double worst = 0.0;
    for (guint k = 0; k < 4; k++) {
        RefParam *t = which[k / 2];
        gsize e = k / 2 == 0 ? tokens[g_rand_int_range(rng, 0, STEP_IDS)] * t->cols +
                                   (gsize) g_rand_int_range(rng, 0, (gint32) t->cols)
                             : (gsize) g_rand_int_range(rng, 0, (gint32) (t->rows * t->cols));
        double analytic = t->grad[e];
        double numeric = host_test_step_fd(&cfg, p, t, e, tokens, targets);
        double err = fabs(analytic - numeric) / MAX(fabs(numeric), 1e-4);
        printf("\n    %s%s[%" G_GSIZE_FORMAT "]: %.9g vs %.9g", t->name, tied ? " (tied)" : "", e,
               analytic, numeric);
        worst = MAX(worst, err);
    }
    return worst;
}

/* (b) The embedding and output gradients match finite differences of the loss. */
static void
test_reference_step_gradients(void)
{
    double untied = host_test_step_grad_case(FALSE), tied = host_test_step_grad_case(TRUE);
    double worst = MAX(untied, tied);
    printf("\n    worst relative error %.3g", worst);
    CU_ASSERT(worst < 1e-5);
}

/* (c) Adam at step 2 from given moments: one entry of a layer weight against the formula. */
static void
test_reference_step_adam(void)
{
    RefStepConfig cfg = host_test_step_config(2, FALSE);
    cfg.step = 2;
    guint64 tokens[STEP_IDS], targets[STEP_IDS];
    g_autoptr(RefStepParams) p = host_test_step_setup(&cfg, tokens, targets);
    ref_step_gradients(&cfg, p, tokens, targets);
    RefParam *t = ref_step_layer_param(p, 1, REF_QKV_W);
    const gsize e = 5;
    t->m[e] = 0.02, t->v[e] = 3e-4;
    double p0 = t->value[e], g = t->grad[e];
    ref_step_adam(&cfg, p);
    double m = 0.9 * 0.02 + 0.1 * g, v = 0.999 * 3e-4 + 0.001 * g * g;
    double want = p0 - 1e-2 * ((m / 0.19) / (sqrt(v / 0.001999) + 1e-8) + 0.1 * p0);
    host_test_close("m", e, t->m[e], m, 1e-15);
    host_test_close("v", e, t->v[e], v, 1e-15);
    host_test_close("value", e, t->value[e], want, 1e-14);
    CU_ASSERT(fabs(t->value[e] - p0) > 1e-4); /* the step moved it */
}

/* ---------------------------------------------------------------- failures */

/* A GEMM writing past its buffer on rank 1 stops the run before rank 0's ADD changes anything. */
static void
test_bounds_error(void)
{
    g_autoptr(SimparSchedule) sched = simpar_schedule_new(2, SIMPAR_DTYPE_FP32);
    guint x = simpar_schedule_add_buffer(sched, 0, "x", 4);
    guint small = simpar_schedule_add_buffer(sched, 1, "small", 5);
    SimparOp add = host_test_kernel(SIMPAR_OP_ADD, 1, 4);
    add.u.kern.in[0] = add.u.kern.in[1] = add.u.kern.out[0] = host_test_view(x, 0);
    simpar_schedule_add_op(sched, &add);
    SimparOp op = host_test_op(SIMPAR_OP_GEMM, 1, "fwd.too.big");
    op.u.gemm = (SimparGemm){.m = 2,
                             .n = 2,
                             .k = 1,
                             .batch = 1,
                             .a = host_test_view(small, 0),
                             .b = host_test_view(small, 0),
                             .c = host_test_view(small, 2)};
    simpar_schedule_add_op(sched, &op);
    g_autoptr(SimparHost) host = simpar_host_new(sched);
    simpar_host_buffer(host, x)[0] = 1.0;
    g_autoptr(GError) error = NULL;
    CU_ASSERT_FALSE(simpar_host_run(host, &error));
    CU_ASSERT(g_error_matches(error, SIMPAR_SCHEDULE_ERROR, SIMPAR_SCHEDULE_ERROR_BOUNDS));
    if (error != NULL) {
        printf("\n    %s", error->message);
        CU_ASSERT(strstr(error->message, "fwd.too.big") != NULL);
        CU_ASSERT(strstr(error->message, "rank 1") != NULL);
        CU_ASSERT(strstr(error->message, "'small'") != NULL);
    }
    CU_ASSERT_EQUAL(simpar_host_buffer(host, x)[0], 1.0);
}

/* Runs `op` alone in a two-rank schedule with buffer 0 "theirs" on rank 1 and group 0 = {1}. */
static void
host_test_expect_error(const SimparOp *op, SimparScheduleError code)
{
    g_autoptr(SimparSchedule) sched = simpar_schedule_new(2, SIMPAR_DTYPE_FP32);
    const guint ranks[1] = {1};
    simpar_schedule_add_buffer(sched, 1, "theirs", 4);
    simpar_schedule_add_group(sched, "solo", ranks, 1);
    simpar_schedule_add_op(sched, op);
    g_autoptr(SimparHost) host = simpar_host_new(sched);
    g_autoptr(GError) error = NULL;
    CU_ASSERT_FALSE(simpar_host_run(host, &error));
    CU_ASSERT(g_error_matches(error, SIMPAR_SCHEDULE_ERROR, (gint) code));
    if (error != NULL)
        printf("\n    %s", error->message);
}

/* Views into another rank's buffer, a group the rank is not in, no buffer at all, p = 1. */
static void
test_invalid_ops(void)
{
    SimparView theirs = host_test_view(0, 0);
    SimparOp gelu = host_test_kernel(SIMPAR_OP_GELU, 1, 4);
    gelu.u.kern.in[0] = gelu.u.kern.out[0] = theirs;
    host_test_expect_error(&gelu, SIMPAR_SCHEDULE_ERROR_BOUNDS);
    SimparOp ar = host_test_op(SIMPAR_OP_COLLECTIVE, 0, "ar");
    ar.u.coll = (SimparColl){SIMPAR_COLL_ALL_REDUCE, 0, 1, 0, theirs, theirs, SIMPAR_RED_SUM};
    host_test_expect_error(&ar, SIMPAR_SCHEDULE_ERROR_MISMATCH);
    gelu.rank = 1;
    gelu.u.kern.in[0] = SIMPAR_NO_VIEW;
    host_test_expect_error(&gelu, SIMPAR_SCHEDULE_ERROR_BOUNDS);
    SimparOp drop = host_test_kernel(SIMPAR_OP_DROPOUT, 1, 4);
    drop.rank = 1;
    drop.u.kern.p = 1.0;
    drop.u.kern.in[0] = drop.u.kern.out[0] = theirs;
    host_test_expect_error(&drop, SIMPAR_SCHEDULE_ERROR_INVALID);
}

/* Members disagreeing on a count are refused before anything runs, so no rank waits forever:
 * rank 2's receive, which would wait on a failed rank 0, never starts either. */
static void
test_mismatch_error(void)
{
    g_autoptr(SimparSchedule) sched = simpar_schedule_new(3, SIMPAR_DTYPE_FP32);
    const guint ranks[2] = {0, 1};
    guint gi = simpar_schedule_add_group(sched, "tp", ranks, 2);
    guint b[3];
    for (guint r = 0; r < 3; r++)
        b[r] = simpar_schedule_add_buffer(sched, r, "x", 4);
    for (guint r = 0; r < 2; r++) {
        SimparOp op = host_test_op(SIMPAR_OP_COLLECTIVE, r, "ar");
        SimparView v = host_test_view(b[r], 0);
        op.u.coll = (SimparColl){SIMPAR_COLL_ALL_REDUCE, gi, 2 + r, 0, v, v, SIMPAR_RED_SUM};
        simpar_schedule_add_op(sched, &op);
    }
    host_test_p2p(sched, SIMPAR_OP_SEND, 0, 2, 0, b[0], 0, 0);
    host_test_p2p(sched, SIMPAR_OP_RECV, 2, 0, 0, b[2], 0, 0);
    g_autoptr(SimparHost) host = simpar_host_new(sched);
    g_autoptr(GError) error = NULL;
    CU_ASSERT_FALSE(simpar_host_run(host, &error));
    CU_ASSERT(g_error_matches(error, SIMPAR_SCHEDULE_ERROR, SIMPAR_SCHEDULE_ERROR_MISMATCH));
    if (error != NULL)
        printf("\n    %s", error->message);
}

/* ---------------------------------------------------------------- registry */

static CU_TestInfo host_tests[] = {
    {"GEMM matches hand values for every transpose, with and without accumulate, batched",
     test_gemm},
    {"Every collective kind on a three-member group gives the NCCL result", test_collectives},
    {"In-place all-reduce, all-gather, reduce-scatter, broadcast and reduce work",
     test_collectives_in_place},
    {"All-reduce, reduce and reduce-scatter with reduction max take the elementwise maximum",
     test_collectives_max},
    {"Back-to-back all-reduces on one group and a second run reuse the rendezvous",
     test_repeated_all_reduce},
    {"Receives match by source and tag and keep each tag's order", test_send_recv},
    {"LN_STATS then LN_APPLY equal the textbook layer norm", test_layer_norm},
    {"GELU_BWD matches central differences of GELU", test_gelu_bwd},
    {"DROPOUT keeps by global index and scales by 1/(1-p)", test_dropout},
    {"Two-token attention gives the hand-computed softmax, causal and not", test_attention_forward},
    {"Attention dropout keeps probabilities by their global (sequence, head, i, j) index",
     test_attention_dropout_index},
    {"ATTENTION_BWD matches central differences of ATTENTION, causal and with dropout",
     test_attention_bwd},
    {"EMBED gathers the slice's rows (zero outside it); EMBED_BWD accumulates into them",
     test_embed},
    {"Vocabulary-parallel embedding and cross-entropy on 2 ranks equal 1 rank and the formulas",
     test_vocab_parallel},
    {"ADAM matches a hand-computed first step and the formula over three steps", test_adam},
    {"A BLOCK runs and changes nothing", test_block},
    {"Reference step: lr = 0 keeps the parameters; the loss is the written-out mean",
     test_reference_step_loss},
    {"Reference step: embedding and output gradients match finite differences, tied or not",
     test_reference_step_gradients},
    {"Reference step: the Adam update of a parameter equals the formula", test_reference_step_adam},
    {"A view past its buffer fails the run before any op runs", test_bounds_error},
    {"Views into other ranks' buffers, foreign groups and missing views are refused",
     test_invalid_ops},
    {"Members that disagree on a collective are refused before anything runs", test_mismatch_error},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo host_suites[] = {
    {"host executor", NULL, NULL, NULL, NULL, host_tests},
    CU_SUITE_INFO_NULL,
};

int
main(int argc, char **argv)
{
    if (argc > 1)
        host_test_seed = g_ascii_strtoull(argv[1], NULL, 10);
    printf("test-host: seed %" G_GUINT64_FORMAT "\n", host_test_seed);
    return simpar_test_main(host_suites);
}
