/* test-host.c - the host executor against hand values, direct formulas and finite differences.
 *
 * Tiny schedules built by hand with the schedule.h API: GEMM in every transpose combination,
 * with and without accumulation, batched with padded strides; every collective kind on a
 * three-member group whose group order differs from rank order, in place and not; send/recv
 * matched by tag and FIFO; layer norm against the textbook formula; GELU_BWD and ATTENTION_BWD
 * against central finite differences of their forward ops; and runs that must fail cleanly.
 *
 * Usage: test-host [SEED]   (the seed of the random tensors; printed on every run)
 */
#include "host.h"
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

/* Element e of the sum over members of their initial send elements at `off`. */
static double
host_test_sum(double init[HOST_G][HOST_SPAN], gsize off)
{
    double sum = 0.0;
    for (guint m = 0; m < HOST_G; m++)
        sum += init[m][off];
    return sum;
}

/* What member m's recv element e must hold, from every member's initial buffer. */
static double
host_test_coll_want(SimparCollKind kind, gboolean in_place, double init[HOST_G][HOST_SPAN], guint m,
                    gsize e)
{
    gsize blk = e / HOST_COUNT, in = e % HOST_COUNT;
    switch (kind) {
    case SIMPAR_COLL_ALL_REDUCE:
    case SIMPAR_COLL_REDUCE:
        return host_test_sum(init, e);
    case SIMPAR_COLL_REDUCE_SCATTER:
        return host_test_sum(init, m * HOST_COUNT + e);
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
host_test_coll_check(SimparCollKind kind, gboolean in_place, double *data[HOST_G],
                     double init[HOST_G][HOST_SPAN])
{
    for (guint m = 0; m < HOST_G; m++) {
        HostCollViews v = host_test_coll_views(kind, in_place, m, 0);
        gsize n = host_test_recv_len(kind, m);
        for (gsize i = 0; i < HOST_SPAN; i++) {
            gboolean in_recv = i >= v.recv.off && i < v.recv.off + n;
            double want =
                in_recv ? host_test_coll_want(kind, in_place, init, m, i - v.recv.off) : init[m][i];
            if (data[m][i] != want)
                printf("\n    %s%s member %u [%" G_GSIZE_FORMAT "]: got %g, want %g",
                       simpar_coll_kind_name(kind), in_place ? " in place" : "", m, i, data[m][i],
                       want);
            CU_ASSERT_EQUAL(data[m][i], want);
        }
    }
}

static void
host_test_coll_case(SimparCollKind kind, gboolean in_place)
{
    g_autoptr(SimparSchedule) sched = simpar_schedule_new(4, SIMPAR_DTYPE_FP32);
    guint gi = simpar_schedule_add_group(sched, "tp", host_group, HOST_G);
    guint bufs[HOST_G];
    for (guint m = 0; m < HOST_G; m++) {
        bufs[m] = simpar_schedule_add_buffer(sched, host_group[m], "data", HOST_SPAN);
        HostCollViews v = host_test_coll_views(kind, in_place, m, bufs[m]);
        SimparOp op = host_test_op(SIMPAR_OP_COLLECTIVE, host_group[m], "coll");
        op.u.coll = (SimparColl){kind, gi, HOST_COUNT, HOST_ROOT, v.send, v.recv, SIMPAR_RED_SUM};
        simpar_schedule_add_op(sched, &op);
    }
    g_autoptr(SimparHost) host = simpar_host_new(sched);
    double init[HOST_G][HOST_SPAN], *data[HOST_G];
    for (guint m = 0; m < HOST_G; m++) {
        data[m] = simpar_host_buffer(host, bufs[m]);
        for (guint i = 0; i < HOST_SPAN; i++)
            data[m][i] = init[m][i] = 100.0 * (m + 1) + i;
    }
    host_test_exec(host);
    host_test_coll_check(kind, in_place, data, init);
}

static void
test_collectives(void)
{
    for (SimparCollKind kind = 0; kind < SIMPAR_N_COLL_KINDS; kind++)
        host_test_coll_case(kind, FALSE);
}

static void
test_collectives_in_place(void)
{
    host_test_coll_case(SIMPAR_COLL_ALL_REDUCE, TRUE);
    host_test_coll_case(SIMPAR_COLL_ALL_GATHER, TRUE);
    host_test_coll_case(SIMPAR_COLL_REDUCE_SCATTER, TRUE);
    host_test_coll_case(SIMPAR_COLL_BROADCAST, TRUE);
    host_test_coll_case(SIMPAR_COLL_REDUCE, TRUE);
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
