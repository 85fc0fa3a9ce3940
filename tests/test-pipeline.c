/* test-pipeline.c - pipeline orders against hand-derived sequences and the bubble closed forms.
 *
 * The exact sequences are written here from the rules of Megatron-LM's schedules
 * (megatron/core/pipeline_parallel/schedules.py) and local parallelism (arXiv 2012.03837), not
 * printed by the generator. The closed forms (GPipe's and Megatron's bubble fractions) are checked
 * by a tiny list scheduler: device i runs its items in order, an item starts when its device is
 * free and its dependencies have finished (no communication time):
 *
 *   forward of virtual stage s of micro-batch j   after forward of s-1 of j
 *   backward of s of j                            after forward of s of j and backward of s+1
 *                                                 of j (local parallelism: own forward only)
 *
 * Times are in ticks of one chunk forward: a chunk forward takes 1, a chunk backward 2, so the
 * per-device totals are tF = v, tB = 2 v (tF = 1, tB = 2 without interleaving).
 */
#include "pipeline.h"
#include "simpar-test.h"
#include <stdlib.h>
#include <string.h>

#define GPIPE  SIMPAR_PIPE_GPIPE
#define ONEF1B SIMPAR_PIPE_1F1B
#define INTER  SIMPAR_PIPE_INTERLEAVED
#define LOCAL  SIMPAR_PIPE_LOCAL

/* "F0 F1 B0 ..." (v = 1) or "F0.1 ..." (micro.chunk) for the order of one device. */
static char *
order_string(SimparPipeSchedule kind, guint p, guint v, guint m, guint stage)
{
    g_autoptr(GArray) order = simpar_pipeline_order(kind, p, v, m, stage);
    GString *s = g_string_new(NULL);
    for (guint k = 0; k < order->len; k++) {
        const SimparPipeItem *it = &g_array_index(order, SimparPipeItem, k);
        g_string_append_printf(s, "%s%c%u", k ? " " : "", it->backward ? 'B' : 'F', it->micro);
        if (v > 1)
            g_string_append_printf(s, ".%u", it->chunk);
    }
    return g_string_free(s, FALSE);
}

static void
expect_order(SimparPipeSchedule kind, guint p, guint v, guint m, guint stage, const char *want)
{
    g_autofree char *got = order_string(kind, p, v, m, stage);
    if (g_strcmp0(got, want) != 0)
        g_printerr("\n  kind %d P %u v %u m %u stage %u\n  got  %s\n  want %s\n", kind, p, v, m,
                   stage, got, want);
    CU_ASSERT_STRING_EQUAL(got, want);
}

/* ---------------------------------------------------------------- exact sequences */

static void
test_gpipe(void)
{
    for (guint i = 0; i < 3; i++) {
        expect_order(GPIPE, 3, 1, 4, i, "F0 F1 F2 F3 B0 B1 B2 B3");
        CU_ASSERT_EQUAL(simpar_pipeline_warmup(GPIPE, 3, 1, 4, i), 4);
    }
}

static void
test_1f1b(void)
{
    expect_order(ONEF1B, 4, 1, 8, 0, "F0 F1 F2 F3 B0 F4 B1 F5 B2 F6 B3 F7 B4 B5 B6 B7");
    expect_order(ONEF1B, 4, 1, 8, 1, "F0 F1 F2 B0 F3 B1 F4 B2 F5 B3 F6 B4 F7 B5 B6 B7");
    expect_order(ONEF1B, 4, 1, 8, 2, "F0 F1 B0 F2 B1 F3 B2 F4 B3 F5 B4 F6 B5 F7 B6 B7");
    expect_order(ONEF1B, 4, 1, 8, 3, "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5 F6 B6 F7 B7");
    for (guint i = 0; i < 4; i++)
        CU_ASSERT_EQUAL(simpar_pipeline_warmup(ONEF1B, 4, 1, 8, i), 3 - i);
    /* fewer micro-batches than stages: the warm-up is clamped to m */
    CU_ASSERT_EQUAL(simpar_pipeline_warmup(ONEF1B, 4, 1, 2, 0), 2);
    expect_order(ONEF1B, 4, 1, 2, 0, "F0 F1 B0 B1");
    expect_order(ONEF1B, 4, 1, 2, 1, "F0 F1 B0 B1");
    expect_order(ONEF1B, 4, 1, 2, 2, "F0 F1 B0 B1");
    expect_order(ONEF1B, 4, 1, 2, 3, "F0 B0 F1 B1");
    expect_order(ONEF1B, 1, 1, 3, 0, "F0 B0 F1 B1 F2 B2");
}

/* P = 2, v = 2, m = 4: forward table (0,0)(1,0)(0,1)(1,1)(2,0)(3,0)(2,1)(3,1), backward table
 * (0,1)(1,1)(0,0)(1,0)(2,1)(3,1)(2,0)(3,0); warm-up 2 (P-i-1) + (v-1) P = 4 and 2. */
static void
test_interleaved_p2(void)
{
    CU_ASSERT_EQUAL(simpar_pipeline_warmup(INTER, 2, 2, 4, 0), 4);
    CU_ASSERT_EQUAL(simpar_pipeline_warmup(INTER, 2, 2, 4, 1), 2);
    expect_order(INTER, 2, 2, 4, 0,
                 "F0.0 F1.0 F0.1 F1.1 F2.0 B0.1 F3.0 B1.1 F2.1 B0.0 F3.1 B1.0 B2.1 B3.1 B2.0 "
                 "B3.0");
    expect_order(INTER, 2, 2, 4, 1,
                 "F0.0 F1.0 F0.1 B0.1 F1.1 B1.1 F2.0 B0.0 F3.0 B1.0 F2.1 B2.1 F3.1 B3.1 B2.0 "
                 "B3.0");
    /* m = P: device 0's warm-up 2 + 2 = 4 = m v, all forwards first; device 1 has pairs */
    expect_order(INTER, 2, 2, 2, 0, "F0.0 F1.0 F0.1 F1.1 B0.1 B1.1 B0.0 B1.0");
    expect_order(INTER, 2, 2, 2, 1, "F0.0 F1.0 F0.1 B0.1 F1.1 B1.1 B0.0 B1.0");
}

/* P = 4, v = 2, m = 8: warm-up 2*3 + 4 = 10, 8, 6, 4 of 16. */
static void
test_interleaved_p4(void)
{
    static const guint warm[] = {10, 8, 6, 4};
    for (guint i = 0; i < 4; i++)
        CU_ASSERT_EQUAL(simpar_pipeline_warmup(INTER, 4, 2, 8, i), warm[i]);
    expect_order(INTER, 4, 2, 8, 0,
                 "F0.0 F1.0 F2.0 F3.0 F0.1 F1.1 F2.1 F3.1 F4.0 F5.0 "
                 "F6.0 B0.1 F7.0 B1.1 F4.1 B2.1 F5.1 B3.1 F6.1 B0.0 F7.1 B1.0 "
                 "B2.0 B3.0 B4.1 B5.1 B6.1 B7.1 B4.0 B5.0 B6.0 B7.0");
    expect_order(INTER, 4, 2, 8, 3,
                 "F0.0 F1.0 F2.0 F3.0 "
                 "F0.1 B0.1 F1.1 B1.1 F2.1 B2.1 F3.1 B3.1 F4.0 B0.0 F5.0 B1.0 F6.0 B2.0 F7.0 B3.0 "
                 "F4.1 B4.1 F5.1 B5.1 F6.1 B6.1 F7.1 B7.1 "
                 "B4.0 B5.0 B6.0 B7.0");
    /* v = 3, P = 2, m = 2: warm-up min(6, 2 + 4) = 6 on device 0, min(6, 4) = 4 on device 1 */
    CU_ASSERT_EQUAL(simpar_pipeline_warmup(INTER, 2, 3, 2, 0), 6);
    CU_ASSERT_EQUAL(simpar_pipeline_warmup(INTER, 2, 3, 2, 1), 4);
    expect_order(INTER, 2, 3, 2, 1, "F0.0 F1.0 F0.1 F1.1 F0.2 B0.2 F1.2 B1.2 B0.1 B1.1 B0.0 B1.0");
}

static void
test_local(void)
{
    for (guint i = 0; i < 3; i++) {
        expect_order(LOCAL, 3, 1, 3, i, "F0 B0 F1 B1 F2 B2");
        CU_ASSERT_EQUAL(simpar_pipeline_warmup(LOCAL, 3, 1, 3, i), 0);
    }
}

/* --overlap-moe-expert-parallel-comm: Megatron-Core's combined 1F1B warms up one forward more
 * (schedules.py, get_pp_rank_microbatches), so every (F, B) pair after it is independent; without
 * pipelining F0 runs alone, then (F j+1, B j), then B m-1 (combined_1f1b.py). */
static void
test_merged_1f1b_warms_up_one_forward_more(void)
{
    CU_ASSERT_EQUAL(simpar_pipeline_warmup_merged(ONEF1B, 1, 1, 4, 1, 0), 1);
    CU_ASSERT_EQUAL(simpar_pipeline_warmup_merged(INTER, 4, 2, 8, 4, 0), 11);
    CU_ASSERT_EQUAL(simpar_pipeline_warmup_merged(INTER, 4, 2, 8, 4, 3), 5);
    CU_ASSERT_EQUAL(simpar_pipeline_warmup_merged(INTER, 2, 3, 2, 2, 0), 6); /* clamped to m v */

    const struct {
        SimparPipeSchedule kind;
        guint p, v, m, stage;
        const char *want;
    } cases[] = {
        {ONEF1B, 1, 1, 4, 0, "F0 F1 B0 F2 B1 F3 B2 B3"},
        {INTER, 4, 2, 8, 3,
         "F0.0 F1.0 F2.0 F3.0 F0.1 F1.1 B0.1 F2.1 B1.1 F3.1 B2.1 F4.0 B3.1 F5.0 B0.0 F6.0 B1.0 "
         "F7.0 B2.0 F4.1 B3.0 F5.1 B4.1 F6.1 B5.1 F7.1 B6.1 B7.1 B4.0 B5.0 B6.0 B7.0"},
    };

    for (guint c = 0; c < G_N_ELEMENTS(cases); c++) {
        g_autoptr(GArray) order = simpar_pipeline_order_merged(
            cases[c].kind, cases[c].p, cases[c].v, cases[c].m, cases[c].p, cases[c].stage);
        GString *s = g_string_new(NULL);
        for (guint k = 0; k < order->len; k++) {
            const SimparPipeItem *it = &g_array_index(order, SimparPipeItem, k);
            g_string_append_printf(s, "%s%c%u", k ? " " : "", it->backward ? 'B' : 'F', it->micro);
            if (cases[c].v > 1)
                g_string_append_printf(s, ".%u", it->chunk);
        }
        if (g_strcmp0(s->str, cases[c].want) != 0)
            g_printerr("\n  got  %s\n  want %s\n", s->str, cases[c].want);
        CU_ASSERT_STRING_EQUAL(s->str, cases[c].want);
        g_string_free(s, TRUE);
    }
}

/* ---------------------------------------------------------------- invariants */

typedef struct {
    SimparPipeSchedule kind;
    guint p, v, m;
} Case;

static const Case cases[] = {
    {GPIPE, 1, 1, 1},  {GPIPE, 4, 1, 2},  {GPIPE, 4, 1, 8},  {GPIPE, 3, 1, 7},  {ONEF1B, 1, 1, 4},
    {ONEF1B, 4, 1, 1}, {ONEF1B, 4, 1, 3}, {ONEF1B, 4, 1, 8}, {ONEF1B, 8, 1, 5}, {ONEF1B, 3, 1, 9},
    {INTER, 2, 2, 2},  {INTER, 2, 2, 4},  {INTER, 2, 2, 6},  {INTER, 2, 3, 2},  {INTER, 3, 2, 3},
    {INTER, 3, 2, 6},  {INTER, 4, 2, 4},  {INTER, 4, 2, 8},  {INTER, 4, 2, 12}, {INTER, 4, 3, 8},
    {INTER, 4, 4, 16}, {INTER, 8, 2, 16}, {INTER, 8, 4, 32}, {LOCAL, 1, 1, 2},  {LOCAL, 3, 1, 3},
    {LOCAL, 4, 1, 8},
};

/* Each (micro, chunk) runs forward once and backward once, the backward after the forward. */
static void
test_complete(void)
{
    for (guint c = 0; c < G_N_ELEMENTS(cases); c++) {
        const Case *k = &cases[c];
        CU_ASSERT_TRUE(simpar_pipeline_validate(k->kind, k->p, k->v, k->m, NULL));
        for (guint i = 0; i < k->p; i++) {
            g_autoptr(GArray) order = simpar_pipeline_order(k->kind, k->p, k->v, k->m, i);
            CU_ASSERT_EQUAL(order->len, 2 * k->m * k->v);
            g_autofree gint *fwd_at = g_new(gint, k->m * k->v);
            g_autofree gint *bwd_at = g_new(gint, k->m * k->v);
            for (guint x = 0; x < k->m * k->v; x++)
                fwd_at[x] = bwd_at[x] = -1;
            for (guint x = 0; x < order->len; x++) {
                const SimparPipeItem *it = &g_array_index(order, SimparPipeItem, x);
                CU_ASSERT_TRUE_FATAL(it->micro < k->m && it->chunk < k->v);
                gint *at = it->backward ? bwd_at : fwd_at;
                CU_ASSERT_EQUAL(at[it->micro * k->v + it->chunk], -1);
                at[it->micro * k->v + it->chunk] = (gint) x;
            }
            for (guint x = 0; x < k->m * k->v; x++)
                CU_ASSERT_TRUE(fwd_at[x] >= 0 && bwd_at[x] > fwd_at[x]);
        }
    }
}

/* 1F1B holds at most min(P - i, m) micro-batches' activations on stage i (reference 3.2);
 * local parallelism holds 1, GPipe m. */
static guint
max_in_flight(SimparPipeSchedule kind, guint p, guint v, guint m, guint stage)
{
    g_autoptr(GArray) order = simpar_pipeline_order(kind, p, v, m, stage);
    guint now = 0, peak = 0;
    for (guint x = 0; x < order->len; x++) {
        if (g_array_index(order, SimparPipeItem, x).backward) {
            now--;
        } else {
            now++;
            peak = MAX(peak, now);
        }
    }
    return peak;
}

static void
test_in_flight(void)
{
    for (guint i = 0; i < 4; i++) {
        CU_ASSERT_EQUAL(max_in_flight(ONEF1B, 4, 1, 8, i), 4 - i);
        CU_ASSERT_EQUAL(max_in_flight(ONEF1B, 4, 1, 2, i), MIN(4 - i, 2));
        CU_ASSERT_EQUAL(max_in_flight(GPIPE, 4, 1, 8, i), 8);
        CU_ASSERT_EQUAL(max_in_flight(LOCAL, 4, 1, 8, i), 1);
    }
}

/* ---------------------------------------------------------------- simulation */

/* The makespan in ticks (chunk forward 1, chunk backward 2) of the per-device orders, or -1
 * when the devices deadlock. `local`: a backward waits for its own forward only. */
static gint64
simulate_orders(gboolean local, guint p, guint v, guint m, GPtrArray *orders)
{
    guint n_stages = p * v;
    g_autofree gint64 *fdone = g_new(gint64, n_stages * m);
    g_autofree gint64 *bdone = g_new(gint64, n_stages * m);
    g_autofree gint64 *free_at = g_new0(gint64, p);
    g_autofree guint *next = g_new0(guint, p);
    for (guint x = 0; x < n_stages * m; x++)
        fdone[x] = bdone[x] = -1;

    gboolean progress = TRUE;
    while (progress) {
        progress = FALSE;
        for (guint i = 0; i < p; i++) {
            GArray *order = g_ptr_array_index(orders, i);
            for (; next[i] < order->len; next[i]++) {
                const SimparPipeItem *it = &g_array_index(order, SimparPipeItem, next[i]);
                guint s = it->chunk * p + i, j = it->micro;
                gint64 ready = free_at[i];
                if (!it->backward && s > 0) {
                    if (fdone[(s - 1) * m + j] < 0)
                        break;
                    ready = MAX(ready, fdone[(s - 1) * m + j]);
                }
                if (it->backward) {
                    gboolean chained = !local && s + 1 < n_stages;
                    if (fdone[s * m + j] < 0 || (chained && bdone[(s + 1) * m + j] < 0))
                        break;
                    ready = MAX(ready, fdone[s * m + j]);
                    if (chained)
                        ready = MAX(ready, bdone[(s + 1) * m + j]);
                }
                free_at[i] = ready + (it->backward ? 2 : 1);
                (it->backward ? bdone : fdone)[s * m + j] = free_at[i];
                progress = TRUE;
            }
        }
    }
    gint64 makespan = 0;
    for (guint i = 0; i < p; i++) {
        if (next[i] < ((GArray *) g_ptr_array_index(orders, i))->len)
            return -1;
        makespan = MAX(makespan, free_at[i]);
    }
    return makespan;
}

static gint64
simulate(SimparPipeSchedule kind, guint p, guint v, guint m)
{
    g_autoptr(GPtrArray) orders = g_ptr_array_new_with_free_func((GDestroyNotify) g_array_unref);
    for (guint i = 0; i < p; i++)
        g_ptr_array_add(orders, simpar_pipeline_order(kind, p, v, m, i));
    return simulate_orders(kind == LOCAL, p, v, m, orders);
}

/* "F0 B0 F1 B1" (v = 1) as an order. */
static GArray *
order_parse(const char *text)
{
    g_auto(GStrv) words = g_strsplit(text, " ", -1);
    GArray *order = g_array_new(FALSE, FALSE, sizeof(SimparPipeItem));
    for (guint k = 0; words[k] != NULL; k++) {
        SimparPipeItem it = {words[k][0] == 'B', (guint) atoi(words[k] + 1), 0};
        g_array_append_val(order, it);
    }
    return order;
}

/* The scheduler is an oracle only if it can fail: a wrong order deadlocks or runs longer. */
static void
test_simulator(void)
{
    g_autoptr(GPtrArray) orders = g_ptr_array_new_with_free_func((GDestroyNotify) g_array_unref);
    g_ptr_array_add(orders, order_parse("F0 B0 F1 B1")); /* B0 needs stage 1's B0, after F1 */
    g_ptr_array_add(orders, order_parse("F0 F1 B0 B1"));
    CU_ASSERT_EQUAL(simulate_orders(FALSE, 2, 1, 2, orders), -1);
    CU_ASSERT_EQUAL(simulate_orders(TRUE, 2, 1, 2, orders), 9); /* F1 on 1 waits for 0 */
    g_ptr_array_set_size(orders, 0);
    g_ptr_array_add(orders, order_parse("F0 F1 B1 B0")); /* GPipe, backwards reversed: 3 (m+1) */
    g_ptr_array_add(orders, order_parse("F0 F1 B1 B0"));
    CU_ASSERT_EQUAL(simulate_orders(FALSE, 2, 1, 2, orders), 9);
    g_ptr_array_set_size(orders, 0);
    g_ptr_array_add(orders, order_parse("F0 F1 F2 B0 B1 B2")); /* mismatched backward orders */
    g_ptr_array_add(orders, order_parse("F0 F1 F2 B2 B1 B0"));
    CU_ASSERT_EQUAL(simulate_orders(FALSE, 2, 1, 3, orders), 16); /* not (3 + 1) 3 = 12 */
}

/* Reference 1.6 with per-device totals tF = v, tB = 2 v. */
static gint64
closed_form(SimparPipeSchedule kind, guint p, guint v, guint m)
{
    gint64 tf = v, tb = 2 * v;
    switch (kind) {
    case SIMPAR_PIPE_GPIPE:
    case SIMPAR_PIPE_1F1B:
        return (m + p - 1) * (tf + tb);
    case SIMPAR_PIPE_INTERLEAVED:
        return m * (tf + tb) + (p - 1) * (tf + tb) / v;
    case SIMPAR_PIPE_LOCAL:
        return (p - 1) * tf + m * (tf + tb);
    default:
        g_assert_not_reached();
    }
}

static void
test_makespan(void)
{
    for (guint c = 0; c < G_N_ELEMENTS(cases); c++) {
        const Case *k = &cases[c];
        gint64 got = simulate(k->kind, k->p, k->v, k->m);
        gint64 want = closed_form(k->kind, k->p, k->v, k->m);
        if (got != want)
            g_printerr("\n  kind %d P %u v %u m %u: makespan %" G_GINT64_FORMAT
                       ", closed form %" G_GINT64_FORMAT "\n",
                       k->kind, k->p, k->v, k->m, got, want);
        CU_ASSERT_TRUE(got >= 0); /* no deadlock */
        CU_ASSERT_EQUAL(got, want);
    }
    /* the reference's worked examples: P = 4, m = 8: 33; local k = 3, m = 3: 11 */
    CU_ASSERT_EQUAL(simulate(ONEF1B, 4, 1, 8), 33);
    CU_ASSERT_EQUAL(simulate(GPIPE, 4, 1, 8), 33);
    CU_ASSERT_EQUAL(simulate(LOCAL, 3, 1, 3), 11);
}

/* ---------------------------------------------------------------- validation */

static void
expect_invalid(SimparPipeSchedule kind, guint p, guint v, guint m, const char *const *words)
{
    g_autoptr(GError) error = NULL;
    CU_ASSERT_FALSE(simpar_pipeline_validate(kind, p, v, m, &error));
    CU_ASSERT_PTR_NOT_NULL_FATAL(error);
    CU_ASSERT_TRUE(g_error_matches(error, SIMPAR_PLAN_ERROR, SIMPAR_PLAN_ERROR_INVALID));
    for (; *words != NULL; words++) {
        if (strstr(error->message, *words) == NULL)
            g_printerr("\n  \"%s\" lacks \"%s\"\n", error->message, *words);
        CU_ASSERT_PTR_NOT_NULL(strstr(error->message, *words));
    }
}

static void
test_validate(void)
{
    expect_invalid(ONEF1B, 4, 2, 8,
                   (const char *[]){"--virtual-stages", "interleaved only", "got 2", NULL});
    expect_invalid(GPIPE, 4, 2, 8, (const char *[]){"--virtual-stages", NULL});
    expect_invalid(LOCAL, 4, 3, 8, (const char *[]){"--virtual-stages", NULL});
    expect_invalid(INTER, 4, 1, 8,
                   (const char *[]){"--virtual-stages", "at least 2", "got 1", NULL});
    expect_invalid(INTER, 1, 2, 8, (const char *[]){"--pp", "at least 2", NULL});
    expect_invalid(INTER, 4, 2, 6,
                   (const char *[]){"--global-batch", "--micro-batch", "multiple of --pp 4",
                                    "got 6", "valid: 4 or 8", NULL});
    expect_invalid(INTER, 4, 2, 3, (const char *[]){"got 3", "valid: 4 or 8", NULL});
    expect_invalid(ONEF1B, 4, 1, 0, (const char *[]){"--global-batch", "--micro-batch", NULL});
    expect_invalid(ONEF1B, 0, 1, 4, (const char *[]){"--pp", "got 0", NULL});
    CU_ASSERT_TRUE(simpar_pipeline_validate(ONEF1B, 4, 1, 3, NULL));
    CU_ASSERT_TRUE(simpar_pipeline_validate(GPIPE, 1, 1, 1, NULL));
    CU_ASSERT_TRUE(simpar_pipeline_validate(INTER, 4, 2, 12, NULL));
    CU_ASSERT_TRUE(simpar_pipeline_validate(LOCAL, 4, 1, 1, NULL));
}

/* Megatron-Core's micro-batch groups (--vp-group N): its own docstring's table for P = 2, N = 3,
 * m = 5, v = 2 (get_schedule_table: micro 0 1 2 0 1 2 3 4 3 4, chunk 0 0 0 1 1 1 0 0 1 1), its
 * warm-up 2 (P - i - 1) + (v - 1) N, every order complete and free of deadlock, and N = P the
 * schedule as before. */
static void
test_interleaved_groups(void)
{
    static const guint micro[] = {0, 1, 2, 0, 1, 2, 3, 4, 3, 4},
                       chunk[] = {0, 0, 0, 1, 1, 1, 0, 0, 1, 1};
    CU_ASSERT_EQUAL(simpar_pipeline_warmup_grouped(INTER, 2, 2, 5, 3, 0), 5);
    CU_ASSERT_EQUAL(simpar_pipeline_warmup_grouped(INTER, 2, 2, 5, 3, 1), 3);
    for (guint i = 0; i < 2; i++) {
        g_autoptr(GArray) order = simpar_pipeline_order_grouped(INTER, 2, 2, 5, 3, i);
        guint f = 0;
        for (guint x = 0; x < order->len; x++) {
            const SimparPipeItem *it = &g_array_index(order, SimparPipeItem, x);
            if (it->backward)
                continue;
            CU_ASSERT_TRUE(it->micro == micro[f] && it->chunk == chunk[f]);
            f++;
        }
        CU_ASSERT_EQUAL(f, 10);
    }
    static const guint cfg[][4] = {{2, 2, 5, 3},   {4, 2, 10, 5},  {4, 2, 9, 5}, {4, 3, 13, 8},
                                   {8, 2, 20, 10}, {8, 2, 19, 10}, {4, 2, 8, 4}};
    for (guint c = 0; c < G_N_ELEMENTS(cfg); c++) {
        guint p = cfg[c][0], v = cfg[c][1], m = cfg[c][2], n = cfg[c][3];
        CU_ASSERT_TRUE_FATAL(simpar_pipeline_validate_grouped(INTER, p, v, m, n, NULL));
        g_autoptr(GPtrArray) orders =
            g_ptr_array_new_with_free_func((GDestroyNotify) g_array_unref);
        for (guint i = 0; i < p; i++)
            g_ptr_array_add(orders, simpar_pipeline_order_grouped(INTER, p, v, m, n, i));
        gint64 span = simulate_orders(FALSE, p, v, m, orders);
        if (span < 0)
            printf("\n    P=%u v=%u m=%u N=%u deadlocks", p, v, m, n);
        CU_ASSERT_TRUE(span > 0);
        if (n == p) /* the default groups: the orders of simpar_pipeline_order */
            CU_ASSERT_EQUAL(span, simulate(INTER, p, v, m));
    }
    g_autoptr(GError) error = NULL;
    CU_ASSERT_FALSE_FATAL(simpar_pipeline_validate_grouped(INTER, 4, 2, 10, 3, &error)); /* N < P */
    CU_ASSERT_PTR_NOT_NULL(strstr(error->message, "at least --pp 4"));
    g_clear_error(&error);
    CU_ASSERT_FALSE_FATAL(simpar_pipeline_validate_grouped(INTER, 4, 2, 10, 7, &error));
    CU_ASSERT_PTR_NOT_NULL(strstr(error->message, "the last group would hold 3")); /* 10 mod 7 */
    g_clear_error(&error);
    CU_ASSERT_FALSE_FATAL(simpar_pipeline_validate_grouped(INTER, 4, 2, 11, 12, &error));
    CU_ASSERT_PTR_NOT_NULL(strstr(error->message, "at most the 11")); /* N > m */
    g_clear_error(&error);
    CU_ASSERT_TRUE(simpar_pipeline_validate_grouped(INTER, 4, 2, 10, 6, NULL)); /* 10 mod 6 = P */
}

static CU_TestInfo pipeline_tests[] = {
    {"GPipe runs every forward, then every backward in micro-batch order", test_gpipe},
    {"1F1B warms up min(P-i-1, m) forwards, then pairs, then cools down", test_1f1b},
    {"the merged 1F1B of --overlap-moe-expert-parallel-comm warms up one forward more",
     test_merged_1f1b_warms_up_one_forward_more},
    {"interleaved P = 2 follows Megatron's table and warm-up on both devices", test_interleaved_p2},
    {"interleaved P = 4, v = 2, m = 8 warms up 10, 8, 6, 4 forwards", test_interleaved_p4},
    {"interleaved with micro-batch groups of N: Megatron's table, warm-up, any m, no deadlock",
     test_interleaved_groups},
    {"local parallelism runs F0 B0 F1 B1 on every device", test_local},
    {"every order runs each (micro, chunk) forward and backward once, forward first",
     test_complete},
    {"1F1B keeps at most P - i micro-batches in flight, local 1, GPipe m", test_in_flight},
    {"the list scheduler finds deadlocks and local parallelism's free backwards", test_simulator},
    {"simulated makespans match the bubble closed forms without deadlock", test_makespan},
    {"invalid P, v, m name the flag and what would be valid", test_validate},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"pipeline orders = Megatron's rules and closed forms", NULL, NULL, NULL, NULL, pipeline_tests},
    CU_SUITE_INFO_NULL,
};

int
main(void)
{
    return simpar_test_main(suites);
}
