/* test-watchdog.c - simpar_watch_wait (exec/watchdog.h), the loop every wait on NCCL goes
 * through, against scripted polls under a fake clock (sleeping advances it): done before the
 * deadline, progress restarting the deadline, a poll's failure propagated after one abort, a
 * timeout exactly at the deadline with its whole message and one abort; then one short timeout
 * on the real clock. No GPU needed.
 */
#include "simpar-test.h"
#include "watchdog.h"
#include <string.h>

#define FAKE_ERROR (g_quark_from_static_string("fake-error"))

/* A poll scripted by times on the fake clock (microseconds; -1: never). */
typedef struct {
    gint64 done_at, fail_at;
    gint64 progress_every, stall_at; /* PROGRESS every so often, until stall_at */
    gint64 clock, last_progress, aborted_at;
    guint polls, aborts, polls_after_abort;
} Fake;

static SimparWatchState
fake_poll(gpointer data, GError **error)
{
    Fake *f = data;
    f->polls++;
    f->polls_after_abort += f->aborts > 0;
    if (f->fail_at >= 0 && f->clock >= f->fail_at) {
        g_set_error_literal(error, FAKE_ERROR, 7, "rank 3: asynchronous error of the world");
        return SIMPAR_WATCH_FAILED;
    }
    if (f->done_at >= 0 && f->clock >= f->done_at)
        return SIMPAR_WATCH_DONE;
    if (f->progress_every > 0 && f->clock < f->stall_at &&
        f->clock - f->last_progress >= f->progress_every) {
        f->last_progress = f->clock;
        return SIMPAR_WATCH_PROGRESS;
    }
    return SIMPAR_WATCH_PENDING;
}

static void
fake_abort(gpointer data)
{
    Fake *f = data;
    f->aborts++;
    f->aborted_at = f->clock;
}

static void
fake_stuck(gpointer data, GString *where)
{
    (void) data;
    g_string_append(where, "rank 3: op 12 'ar' unfinished");
}

static gint64
fake_now(gpointer data)
{
    return ((Fake *) data)->clock;
}

static void
fake_sleep(gpointer data, gulong us)
{
    ((Fake *) data)->clock += (gint64) us;
}

static Fake
fake_new(void)
{
    return (Fake){.done_at = -1, .fail_at = -1, .stall_at = G_MAXINT64, .aborted_at = -1};
}

static SimparWatch
fake_watch(Fake *f, double timeout_s)
{
    return (SimparWatch){.what = "creating the communicator",
                         .advice = "check the schedule",
                         .timeout_s = timeout_s,
                         .data = f,
                         .poll = fake_poll,
                         .abort = fake_abort,
                         .stuck = fake_stuck,
                         .now = fake_now,
                         .sleep = fake_sleep};
}

/* simpar_watch_wait of `f` with `timeout_s`. */
static gboolean
fake_wait(Fake *f, double timeout_s, GError **error)
{
    SimparWatch w = fake_watch(f, timeout_s);
    return simpar_watch_wait(&w, error);
}

static void
test_done(void)
{
    Fake f = fake_new();
    f.done_at = 3000;
    g_autoptr(GError) error = NULL;
    CU_ASSERT_TRUE(fake_wait(&f, 1.0, &error));
    CU_ASSERT_PTR_NULL(error);
    CU_ASSERT_EQUAL(f.aborts, 0);
    CU_ASSERT_TRUE(f.clock >= 3000 && f.clock < 3000 + 1000); /* naps of at most 1 ms */
    CU_ASSERT_TRUE(f.polls > 2);
}

/* Done at once: one poll, no sleep. */
static void
test_done_at_once(void)
{
    Fake f = fake_new();
    f.done_at = 0;
    CU_ASSERT_TRUE(fake_wait(&f, 1e-3, NULL));
    CU_ASSERT_EQUAL(f.polls, 1);
    CU_ASSERT_EQUAL(f.clock, 0);
}

/* 100 ms of work with progress every 8 ms never times out at 10 ms. */
static void
test_progress(void)
{
    Fake f = fake_new();
    f.done_at = 100000, f.progress_every = 8000;
    g_autoptr(GError) error = NULL;
    CU_ASSERT_TRUE(fake_wait(&f, 0.01, &error));
    CU_ASSERT_EQUAL(f.aborts, 0);
    CU_ASSERT_TRUE(f.clock >= 100000);
}

static void
test_failure(void)
{
    Fake f = fake_new();
    f.fail_at = 5000;
    g_autoptr(GError) error = NULL;
    CU_ASSERT_FALSE(fake_wait(&f, 1.0, &error));
    CU_ASSERT_TRUE(g_error_matches(error, FAKE_ERROR, 7));
    if (error != NULL)
        CU_ASSERT_STRING_EQUAL(error->message, "rank 3: asynchronous error of the world");
    CU_ASSERT_EQUAL(f.aborts, 1);
    CU_ASSERT_EQUAL(f.polls_after_abort, 0);
    CU_ASSERT_TRUE(f.aborted_at >= 5000 && f.aborted_at < 6000);
}

/* Nothing ever moves: the timeout fires exactly at the deadline (naps stop there), with the
 * whole message, after one abort and no further poll. */
static void
test_timeout(void)
{
    Fake f = fake_new();
    g_autoptr(GError) error = NULL;
    CU_ASSERT_FALSE(fake_wait(&f, 0.25, &error));
    CU_ASSERT_TRUE(g_error_matches(error, SIMPAR_WATCH_ERROR, SIMPAR_WATCH_ERROR_TIMEOUT));
    if (error != NULL)
        CU_ASSERT_STRING_EQUAL(error->message,
                               "creating the communicator: no progress for 0.25 s (rank 3: op 12 "
                               "'ar' unfinished); check the schedule");
    CU_ASSERT_EQUAL(f.aborts, 1);
    CU_ASSERT_EQUAL(f.aborted_at, 250000);
    CU_ASSERT_EQUAL(f.polls_after_abort, 0);
}

/* Progress, then a stall: the timeout counts from the last progress. */
static void
test_timeout_after_progress(void)
{
    Fake f = fake_new();
    f.progress_every = 3000, f.stall_at = 50000;
    g_autoptr(GError) error = NULL;
    CU_ASSERT_FALSE(fake_wait(&f, 0.02, &error));
    CU_ASSERT_TRUE(g_error_matches(error, SIMPAR_WATCH_ERROR, SIMPAR_WATCH_ERROR_TIMEOUT));
    CU_ASSERT_EQUAL(f.aborts, 1);
    CU_ASSERT_TRUE(f.last_progress > 40000 && f.last_progress < 50000);
    CU_ASSERT_EQUAL(f.aborted_at, f.last_progress + 20000);
}

/* Without `stuck` and `advice`, the message is the rest. */
static void
test_timeout_plain(void)
{
    Fake f = fake_new();
    SimparWatch w = fake_watch(&f, 0.001);
    w.stuck = NULL, w.advice = NULL;
    g_autoptr(GError) error = NULL;
    CU_ASSERT_FALSE(simpar_watch_wait(&w, &error));
    if (error != NULL)
        CU_ASSERT_STRING_EQUAL(error->message,
                               "creating the communicator: no progress for 0.001 s");
    CU_ASSERT_EQUAL(f.aborts, 1);
}

/* The real clock and g_usleep: 50 ms of nothing times out after 50 ms, not much later. */
static void
test_real_clock(void)
{
    Fake f = fake_new();
    SimparWatch w = fake_watch(&f, 0.05);
    w.now = NULL, w.sleep = NULL;
    g_autoptr(GError) error = NULL;
    gint64 t0 = g_get_monotonic_time();
    CU_ASSERT_FALSE(simpar_watch_wait(&w, &error));
    double s = (double) (g_get_monotonic_time() - t0) / G_USEC_PER_SEC;
    printf("\n    timed out after %.3f s, %u polls", s, f.polls);
    CU_ASSERT_TRUE(g_error_matches(error, SIMPAR_WATCH_ERROR, SIMPAR_WATCH_ERROR_TIMEOUT));
    CU_ASSERT_TRUE(s >= 0.05 && s < 5);
    CU_ASSERT_EQUAL(f.aborts, 1);
    CU_ASSERT_EQUAL(f.clock, 0);
}

static CU_TestInfo watchdog_tests[] = {
    {"Done before the deadline: TRUE, no abort", test_done},
    {"Done at the first poll: no sleep", test_done_at_once},
    {"Progress restarts the deadline: a long wait that keeps moving never times out",
     test_progress},
    {"A failed poll: its own error, after exactly one abort", test_failure},
    {"No progress: a timeout at the deadline, the whole message, exactly one abort", test_timeout},
    {"A stall after progress times out one timeout after the last progress",
     test_timeout_after_progress},
    {"Without stuck and advice the message is what and the timeout", test_timeout_plain},
    {"On the real clock a 50 ms timeout fires after 50 ms", test_real_clock},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"watchdog", NULL, NULL, NULL, NULL, watchdog_tests},
    CU_SUITE_INFO_NULL,
};

int
main(void)
{
    return simpar_test_main(suites);
}
