/* test-verify.c - the check of a run's outputs before its timings are reported
 * (exec/verify.h), on hand-made schedules and values: equal replicas pass, a replica off by
 * more than the tolerance or a NaN anywhere is refused with the block and ranks named, the same
 * verdict when the replicas live in different processes (states combined by MAX, as MPI does),
 * and large blocks compared on their samples within a bounded state. No GPU needed.
 *
 * The schedule: 3 ranks, one 40-element output buffer each;
 *   'y'      rows 0-3, cols 0-7 at offset 0 on every rank (one replicated block, 32 elements)
 *   'w.grad' rows 2r-2r+1, cols 0-3 at offset 32 on rank r (a block of its own per rank)
 *   'x'      an input shard on rank 0 (not verified)
 */
#include "simpar-test.h"
#include "verify.h"
#include <math.h>
#include <string.h>

#define RANKS 3
#define ELEMS 40

static SimparSchedule *
verify_schedule(void)
{
    SimparSchedule *s = simpar_schedule_new(RANKS, SIMPAR_DTYPE_FP32);
    for (guint r = 0; r < RANKS; r++) {
        guint b = simpar_schedule_add_buffer(s, r, "out", ELEMS);
        SimparShard y = {"y", SIMPAR_SHARD_OUTPUT, r, {b, 0}, 0, 4, 0, 8, 0};
        SimparShard w = {"w.grad", SIMPAR_SHARD_OUTPUT, r, {b, 32}, 2 * r, 2, 0, 4, 0};
        y.tensor = g_intern_string("y"), w.tensor = g_intern_string("w.grad");
        simpar_schedule_add_shard(s, &y);
        simpar_schedule_add_shard(s, &w);
    }
    guint in = simpar_schedule_add_buffer(s, 0, "in", 4);
    SimparShard x = {g_intern_string("x"), SIMPAR_SHARD_INPUT, 0, {in, 0}, 0, 1, 0, 4, 0};
    simpar_schedule_add_shard(s, &x);
    return s; /* (transfer full) */
}

/* Rank r's buffer: 'y' the same on every rank, 'w.grad' its own. */
static void
verify_values(double v[RANKS][ELEMS])
{
    for (guint r = 0; r < RANKS; r++)
        for (guint i = 0; i < ELEMS; i++)
            v[r][i] = i < 32 ? sin(0.37 * i) * 10 : (double) (r * 100 + i);
}

/* Feeds every rank's buffer of `v`; NULL when the outputs pass, else the error. */
static GError *
verify_run(const SimparSchedule *s, double v[RANKS][ELEMS], double tolerance)
{
    g_autoptr(SimparVerify) vf = simpar_verify_new(s, tolerance);
    for (guint r = 0; r < RANKS; r++) {
        CU_ASSERT_TRUE(simpar_verify_needs(vf, r));
        simpar_verify_buffer(vf, r, v[r]);
    }
    GError *error = NULL;
    if (!simpar_verify_check(vf, &error))
        printf("\n    %s", error->message);
    return error;
}

static void
test_equal(void)
{
    g_autoptr(SimparSchedule) s = verify_schedule();
    double v[RANKS][ELEMS];
    verify_values(v);
    g_autoptr(GError) error = verify_run(s, v, 1e-4);
    CU_ASSERT_PTR_NULL(error);
    g_autoptr(SimparVerify) vf = simpar_verify_new(s, 1e-4);
    guint blocks, replicated;
    simpar_verify_count(vf, &blocks, &replicated);
    CU_ASSERT_EQUAL(blocks, 1 + RANKS);
    CU_ASSERT_EQUAL(replicated, 1);
    CU_ASSERT_FALSE(simpar_verify_needs(vf, RANKS)); /* the input buffer */
}

/* Rank 2's copy of element 17 of 'y' off by `delta`. */
static GError *
verify_off_by(double delta, double tolerance)
{
    g_autoptr(SimparSchedule) s = verify_schedule();
    double v[RANKS][ELEMS];
    verify_values(v);
    v[2][17] += delta;
    return verify_run(s, v, tolerance);
}

static void
test_mismatch(void)
{
    g_autoptr(GError) small = verify_off_by(1e-6, 1e-4); /* |y| <= 10: 1e-7 of it */
    CU_ASSERT_PTR_NULL(small);
    g_autoptr(GError) error = verify_off_by(0.01, 1e-4);
    CU_ASSERT_TRUE(g_error_matches(error, SIMPAR_VERIFY_ERROR, SIMPAR_VERIFY_ERROR_MISMATCH));
    if (error == NULL)
        return;
    const char *want[] = {"output 'y' rows 0-3, cols 0-7", "held by ranks 0, 1 and 2",
                          "must hold equal copies", "element 17", "above the tolerance 1e-04"};
    for (guint i = 0; i < G_N_ELEMENTS(want); i++)
        CU_ASSERT_PTR_NOT_NULL(strstr(error->message, want[i]));
    CU_ASSERT_PTR_NULL(strstr(error->message, "more output blocks"));
}

static void
test_non_finite(void)
{
    g_autoptr(SimparSchedule) s = verify_schedule();
    const double bad[] = {NAN, INFINITY, -INFINITY};
    for (guint k = 0; k < G_N_ELEMENTS(bad); k++) {
        double v[RANKS][ELEMS];
        verify_values(v);
        v[1][35] = bad[k];
        g_autoptr(GError) error = verify_run(s, v, 1e-4);
        CU_ASSERT_TRUE(g_error_matches(error, SIMPAR_VERIFY_ERROR, SIMPAR_VERIFY_ERROR_NON_FINITE));
        if (error != NULL)
            CU_ASSERT_PTR_NOT_NULL(strstr(error->message, "output 'w.grad' rows 2-3, cols 0-3 of "
                                                          "rank 1 holds a NaN or an infinity"));
    }
}

/* A NaN in a replica and a mismatch elsewhere: the first named, the other counted. */
static void
test_several(void)
{
    g_autoptr(SimparSchedule) s = verify_schedule();
    double v[RANKS][ELEMS];
    verify_values(v);
    v[0][3] = NAN;
    v[2][33] = 1e300; /* finite: w.grad of rank 2 is a block of its own, nothing to compare */
    g_autoptr(GError) one = verify_run(s, v, 1e-4);
    CU_ASSERT_TRUE(g_error_matches(one, SIMPAR_VERIFY_ERROR, SIMPAR_VERIFY_ERROR_NON_FINITE));
    v[1][38] = INFINITY;
    g_autoptr(GError) two = verify_run(s, v, 1e-4);
    CU_ASSERT_TRUE(g_error_matches(two, SIMPAR_VERIFY_ERROR, SIMPAR_VERIFY_ERROR_NON_FINITE));
    if (two != NULL) /* sorted by name: 'w.grad' before 'y' */
        CU_ASSERT_TRUE(g_str_has_prefix(two->message, "output 'w.grad' rows 2-3") &&
                       g_str_has_suffix(two->message, "(and 1 more output blocks fail)"));
}

/* Two processes, ranks {0, 1} and {2}: each feeds its own, the states meet by element-wise
 * MAX on both (MPI_Allreduce MAX), and both reach the single process's verdict. */
static void
test_processes(void)
{
    g_autoptr(SimparSchedule) s = verify_schedule();
    for (guint bad = 0; bad < 2; bad++) {
        double v[RANKS][ELEMS];
        verify_values(v);
        v[2][5] += bad ? 1.0 : 0.0;
        g_autoptr(SimparVerify) a = simpar_verify_new(s, 1e-4);
        g_autoptr(SimparVerify) b = simpar_verify_new(s, 1e-4);
        simpar_verify_buffer(a, 0, v[0]);
        simpar_verify_buffer(a, 1, v[1]);
        simpar_verify_buffer(b, 2, v[2]);
        guint na, nb;
        double *sa = simpar_verify_state(a, &na), *sb = simpar_verify_state(b, &nb);
        CU_ASSERT_EQUAL_FATAL(na, nb);
        for (guint i = 0; i < na; i++)
            sa[i] = sb[i] = MAX(sa[i], sb[i]);
        g_autoptr(GError) ea = NULL;
        g_autoptr(GError) eb = NULL;
        CU_ASSERT_EQUAL(simpar_verify_check(a, &ea), !bad);
        CU_ASSERT_EQUAL(simpar_verify_check(b, &eb), !bad);
        if (bad && ea != NULL && eb != NULL) {
            CU_ASSERT_STRING_EQUAL(ea->message, eb->message);
            CU_ASSERT_PTR_NOT_NULL(strstr(ea->message, "element 5"));
        }
    }
}

/* A replicated block of 100 x 100 on 2 ranks: the state holds SIMPAR_VERIFY_SAMPLES samples,
 * not 10000 elements; a difference at a sample is caught, and so is one that covers rows. */
static void
test_large_block(void)
{
    const guint n = 10000;
    g_autoptr(SimparSchedule) s = simpar_schedule_new(2, SIMPAR_DTYPE_FP32);
    for (guint r = 0; r < 2; r++) {
        guint b = simpar_schedule_add_buffer(s, r, "out", n);
        SimparShard sh = {g_intern_string("h"), SIMPAR_SHARD_OUTPUT, r, {b, 0}, 0, 100, 0, 100, 0};
        simpar_schedule_add_shard(s, &sh);
    }
    g_autofree double *a = g_new(double, n), *b = g_new(double, n);
    const guint64 hits[] = {0, (guint64) 600 * n / SIMPAR_VERIFY_SAMPLES, n - 10};
    for (guint k = 0; k < G_N_ELEMENTS(hits); k++) {
        for (guint i = 0; i < n; i++)
            a[i] = b[i] = cos(0.01 * i);
        if (k < 2) {
            b[hits[k]] += 1.0;
        } else {
            for (guint i = 4000; i < 4100; i++) /* one row */
                b[i] = -b[i];
        }
        g_autoptr(SimparVerify) vf = simpar_verify_new(s, 1e-4);
        guint state;
        simpar_verify_state(vf, &state);
        CU_ASSERT_EQUAL(state, 2 + 2 * SIMPAR_VERIFY_SAMPLES);
        simpar_verify_buffer(vf, 0, a);
        simpar_verify_buffer(vf, 1, b);
        g_autoptr(GError) error = NULL;
        CU_ASSERT_FALSE(simpar_verify_check(vf, &error));
        CU_ASSERT_TRUE(g_error_matches(error, SIMPAR_VERIFY_ERROR, SIMPAR_VERIFY_ERROR_MISMATCH));
    }
}

static CU_TestInfo verify_tests[] = {
    {"Equal replicas and finite values pass; blocks and replicated blocks are counted", test_equal},
    {"A replica off by more than the tolerance is refused, naming block, ranks and element",
     test_mismatch},
    {"A NaN or an infinity in any output is refused, naming block and rank", test_non_finite},
    {"Several bad blocks: the first by name, the others counted", test_several},
    {"Replicas in different processes: states combined by MAX give the same verdict on both",
     test_processes},
    {"A large block is compared on its samples in a bounded state", test_large_block},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"verify", NULL, NULL, NULL, NULL, verify_tests},
    CU_SUITE_INFO_NULL,
};

int
main(void)
{
    return simpar_test_main(suites);
}
