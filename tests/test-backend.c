/* test-backend.c - the two backends against closed forms and against each other.
 *
 * Platforms are written by the test: a crossbar (a private link per GPU pair, so nothing is
 * shared: SimGrid must equal the closed forms) and two nodes joined by one InfiniBand link
 * (two rings crossing it take twice as long per byte). Each SimGrid run is a forked child
 * (one platform per process, platform.c), which returns a text verdict: "ok" or what differed.
 */
#include "backend.h"
#include "generators.h"
#include "platform.h"
#include "simpar-test.h"
#include <glib/gstdio.h>
#include <math.h>
#include <stdio.h>
#include <unistd.h>

#define XBAR_LAT 2e-6
#define XBAR_BW  25e9

/* n GPUs, `per_node` per node, one link per pair (and per direction). */
static char *
test_crossbar(guint n, guint per_node)
{
    GString *x = g_string_new("<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM "
                              "\"https://simgrid.org/simgrid.dtd\">\n<platform version=\"4.1\">\n"
                              "<zone id=\"world\" routing=\"Full\">\n");
    for (guint i = 0; i < n; i++)
        g_string_append_printf(x, "<host id=\"node%u-gpu%u\" speed=\"1Gf\"/>\n", i / per_node,
                               i % per_node);
    for (guint i = 0; i < n; i++) /* the DTD wants every link before the first route */
        for (guint j = i + 1; j < n; j++)
            g_string_append_printf(x,
                                   "<link id=\"l%u-%u\" bandwidth=\"%gBps\" latency=\"%gs\" "
                                   "sharing_policy=\"SPLITDUPLEX\"/>\n",
                                   i, j, XBAR_BW, XBAR_LAT);
    for (guint i = 0; i < n; i++)
        for (guint j = i + 1; j < n; j++)
            g_string_append_printf(x,
                                   "<route src=\"node%u-gpu%u\" dst=\"node%u-gpu%u\"><link_ctn "
                                   "id=\"l%u-%u\" direction=\"UP\"/></route>\n",
                                   i / per_node, i % per_node, j / per_node, j % per_node, i, j);
    g_string_append(x, "</zone>\n</platform>\n");
    g_autofree char *path = NULL;
    int fd = g_file_open_tmp("simpar-xbar-XXXXXX.xml", &path, NULL);
    g_assert(fd >= 0);
    close(fd);
    g_assert(g_file_set_contents(path, x->str, -1, NULL));
    g_string_free(x, TRUE);
    return g_steal_pointer(&path);
}

/* One collective per member of one group of the first n GPUs. */
static SimparSchedule *
test_coll_schedule(SimparCollKind kind, guint n, gsize count, guint root)
{
    SimparSchedule *s = simpar_schedule_new(n, SIMPAR_DTYPE_FP32);
    guint ranks[64];
    for (guint i = 0; i < n; i++)
        ranks[i] = i;
    guint g = simpar_schedule_add_group(s, "coll", ranks, n);
    for (guint r = 0; r < n; r++) {
        SimparOp op = {.kind = SIMPAR_OP_COLLECTIVE, .rank = r, .name = "coll"};
        guint b = simpar_schedule_add_buffer(s, r, "buf", count * n);
        op.u.coll = (SimparColl){kind, g, count, root, {b, 0}, {b, 0}, SIMPAR_RED_SUM};
        simpar_schedule_add_op(s, &op);
    }
    return s;
}

static double
test_run_time(const SimparRun *run, void (*fn)(const SimparRun *, SimparSpan *))
{
    guint n = simpar_schedule_n_ops(run->sched) * run->n_layers;
    g_autofree SimparSpan *spans = g_new(SimparSpan, n);
    fn(run, spans);
    double t = 0;
    for (guint i = 0; i < n; i++)
        t = MAX(t, spans[i].end);
    return t;
}

static gboolean
test_close(double a, double b, double rel)
{
    return fabs(a - b) <= rel * MAX(fabs(a), fabs(b)) + 1e-15;
}

/* Every algorithm, every kind it implements, group sizes 2..16: exact and fused SimGrid runs and
 * the analytic backend equal the closed form. */
static void
test_algo_sizes(const SimparPlatform *p, const SimparCollAlgo *algo, SimparCollKind kind,
                GString *out)
{
    /* fp32 elements of S: 0.7 MB (latency matters) and 11.5 MB (22 chunks); multiples of
     * lcm(2..16) = 720720 bytes, so every per-rank, per-chunk share is a whole number of bytes
     * (SimGrid counts whole bytes) */
    static const gsize counts[] = {180180, 2882880};
    guint gpus[16];
    for (guint i = 0; i < 16; i++)
        gpus[i] = i;
    for (guint n = 2; n <= 16; n++) {
        for (guint c = 0; c < G_N_ELEMENTS(counts); c++) {
            guint root = (n - 1) * (c % 2);
            gboolean per_member = kind == SIMPAR_COLL_ALL_GATHER ||
                                  kind == SIMPAR_COLL_REDUCE_SCATTER ||
                                  kind == SIMPAR_COLL_ALL_TO_ALL;
            g_autoptr(SimparSchedule) s =
                test_coll_schedule(kind, n, per_member ? counts[c] / n : counts[c], root);
            double zero[16] = {0};
            SimparRun run = {.sched = s,
                             .n_layers = 1,
                             .gpus = gpus,
                             .net = simpar_platform_net(p),
                             .compute_s = zero,
                             .algo = algo};
            simpar_coll_params_init(&run.coll);
            SimparCollGroup g = {n, gpus, run.net};
            double bytes = (double) simpar_op_coll_elems(s, simpar_schedule_op(s, 0)) * 4;
            double want = algo->closed_form(kind, &g, bytes, root, &run.coll);
            double exact = test_run_time(&run, simpar_backend_simgrid_run);
            run.mode = SIMPAR_COLL_MODE_FUSED;
            double fused = test_run_time(&run, simpar_backend_simgrid_run);
            double analytic = test_run_time(&run, simpar_backend_analytic_run);
            if (!test_close(exact, want, 1e-6) || !test_close(fused, want, 1e-6) ||
                !test_close(analytic, want, 1e-12))
                g_string_append_printf(out,
                                       "%s %s n=%u S=%.0f: closed %.9g exact %.9g fused "
                                       "%.9g analytic %.9g\n",
                                       algo->name, simpar_coll_kind_name(kind), n, bytes, want,
                                       exact, fused, analytic);
        }
    }
}

static gboolean
test_closed_forms_job(const SimparPlatform *p, gpointer data, GString *out, GError **error)
{
    (void) data, (void) error;
    guint n_algos, checked = 0;
    const SimparCollAlgo *algos = simpar_coll_algos(&n_algos);
    for (guint a = 0; a < n_algos; a++)
        for (guint k = 0; k < SIMPAR_N_COLL_KINDS; k++)
            if (algos[a].kinds & (1u << k))
                test_algo_sizes(p, &algos[a], (SimparCollKind) k, out), checked++;
    if (out->len == 0)
        g_string_printf(out, "ok %u", checked);
    return TRUE;
}

static void
test_closed_forms(void)
{
    g_autofree char *xml = test_crossbar(16, 4);
    g_autoptr(GString) out = g_string_new(NULL);
    g_autoptr(GError) error = NULL;
    gboolean ok = simpar_platform_run(xml, test_closed_forms_job, NULL, out, &error);
    if (!ok)
        printf("\n    %s", error->message);
    CU_ASSERT_TRUE_FATAL(ok);
    printf("\n    %s", out->str);
    CU_ASSERT_TRUE(g_str_has_prefix(out->str, "ok ") && atoi(out->str + 3) >= 8);
    g_unlink(xml);
}

/* ------------------------------------------------------------------------------- contention */

static char *
test_two_nodes(void)
{
    static const char xml[] =
        "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
        "<platform version=\"4.1\"><zone id=\"world\" routing=\"Full\">\n"
        "<host id=\"node0-gpu0\" speed=\"1Gf\"/><host id=\"node0-gpu1\" speed=\"1Gf\"/>\n"
        "<host id=\"node1-gpu0\" speed=\"1Gf\"/><host id=\"node1-gpu1\" speed=\"1Gf\"/>\n"
        "<link id=\"h0\" bandwidth=\"1TBps\" latency=\"0.5us\" sharing_policy=\"SPLITDUPLEX\"/>\n"
        "<link id=\"h1\" bandwidth=\"1TBps\" latency=\"0.5us\" sharing_policy=\"SPLITDUPLEX\"/>\n"
        "<link id=\"h2\" bandwidth=\"1TBps\" latency=\"0.5us\" sharing_policy=\"SPLITDUPLEX\"/>\n"
        "<link id=\"h3\" bandwidth=\"1TBps\" latency=\"0.5us\" sharing_policy=\"SPLITDUPLEX\"/>\n"
        "<link id=\"ib\" bandwidth=\"10GBps\" latency=\"1us\" sharing_policy=\"SPLITDUPLEX\"/>\n"
        "<route src=\"node0-gpu0\" dst=\"node0-gpu1\"><link_ctn id=\"h0\" direction=\"UP\"/>"
        "<link_ctn id=\"h1\" direction=\"DOWN\"/></route>\n"
        "<route src=\"node1-gpu0\" dst=\"node1-gpu1\"><link_ctn id=\"h2\" direction=\"UP\"/>"
        "<link_ctn id=\"h3\" direction=\"DOWN\"/></route>\n"
        "<route src=\"node0-gpu0\" dst=\"node1-gpu0\"><link_ctn id=\"h0\" direction=\"UP\"/>"
        "<link_ctn id=\"ib\" direction=\"UP\"/><link_ctn id=\"h2\" direction=\"DOWN\"/></route>\n"
        "<route src=\"node0-gpu0\" dst=\"node1-gpu1\"><link_ctn id=\"h0\" direction=\"UP\"/>"
        "<link_ctn id=\"ib\" direction=\"UP\"/><link_ctn id=\"h3\" direction=\"DOWN\"/></route>\n"
        "<route src=\"node0-gpu1\" dst=\"node1-gpu0\"><link_ctn id=\"h1\" direction=\"UP\"/>"
        "<link_ctn id=\"ib\" direction=\"UP\"/><link_ctn id=\"h2\" direction=\"DOWN\"/></route>\n"
        "<route src=\"node0-gpu1\" dst=\"node1-gpu1\"><link_ctn id=\"h1\" direction=\"UP\"/>"
        "<link_ctn id=\"ib\" direction=\"UP\"/><link_ctn id=\"h3\" direction=\"DOWN\"/></route>\n"
        "</zone></platform>\n";
    g_autofree char *path = NULL;
    int fd = g_file_open_tmp("simpar-2nodes-XXXXXX.xml", &path, NULL);
    g_assert(fd >= 0);
    close(fd);
    g_assert(g_file_set_contents(path, xml, -1, NULL));
    return g_steal_pointer(&path);
}

/* Ranks 0..3 are GPUs 0..3 (node0-gpu0, node0-gpu1, node1-gpu0, node1-gpu1): groups {0, 2}
 * and {1, 3} both cross the one IB link, in both directions at once. */
static gboolean
test_contention_job(const SimparPlatform *p, gpointer data, GString *out, GError **error)
{
    (void) data, (void) error;
    const gsize count = 16 << 20; /* 64 MiB of fp32 */
    g_autoptr(SimparSchedule) s = simpar_schedule_new(4, SIMPAR_DTYPE_FP32);
    guint a[] = {0, 2}, b[] = {1, 3}, gpus[] = {0, 1, 2, 3};
    guint ga = simpar_schedule_add_group(s, "a", a, 2),
          gb = simpar_schedule_add_group(s, "b", b, 2);
    for (guint r = 0; r < 4; r++) {
        SimparOp op = {.kind = SIMPAR_OP_COLLECTIVE, .rank = r, .name = "ar"};
        guint buf = simpar_schedule_add_buffer(s, r, "buf", count);
        op.u.coll = (SimparColl){
            SIMPAR_COLL_ALL_REDUCE, r % 2 ? gb : ga, count, 0, {buf, 0}, {buf, 0}, SIMPAR_RED_SUM};
        simpar_schedule_add_op(s, &op);
    }
    const SimparCollAlgo *ring;
    g_assert(simpar_coll_algo_lookup("ring", &ring, NULL));
    double zero[4] = {0}, S = count * 4.0, alpha = 2e-6, B = 10e9;
    SimparRun run = {.sched = s,
                     .n_layers = 1,
                     .gpus = gpus,
                     .net = simpar_platform_net(p),
                     .compute_s = zero,
                     .algo = ring};
    simpar_coll_params_init(&run.coll);
    double exact = test_run_time(&run, simpar_backend_simgrid_run);
    run.mode = SIMPAR_COLL_MODE_FUSED;
    double fused = test_run_time(&run, simpar_backend_simgrid_run);
    double analytic = test_run_time(&run, simpar_backend_analytic_run);
    g_string_printf(out, "%.12g %.12g %.12g %.12g %.12g", exact, fused, analytic,
                    2 * (alpha + S / 2 / (B / 2)), 2 * (alpha + S / 2 / B));
    return TRUE;
}

static void
test_contention(void)
{
    g_autofree char *xml = test_two_nodes();
    g_autoptr(GString) out = g_string_new(NULL);
    g_autoptr(GError) error = NULL;
    CU_ASSERT_TRUE_FATAL(simpar_platform_run(xml, test_contention_job, NULL, out, &error));
    double exact, fused, analytic, contended, idle;
    CU_ASSERT_EQUAL_FATAL(
        sscanf(out->str, "%lf %lf %lf %lf %lf", &exact, &fused, &analytic, &contended, &idle), 5);
    printf("\n    two rings on one IB link: exact %.6g s, fused %.6g s, contended formula %.6g s; "
           "analytic %.6g s = idle formula %.6g s",
           exact, fused, contended, analytic, idle);
    CU_ASSERT_TRUE(test_close(exact, contended, 1e-6));
    CU_ASSERT_TRUE(test_close(fused, contended, 1e-6));
    CU_ASSERT_TRUE(test_close(analytic, idle, 1e-12));
    g_unlink(xml);
}

/* ------------------------------------------------------------- whole layers, idle network */

typedef struct {
    const char *mode;
    gint64 tp, depth;
    gboolean paper;
} TestPlan;

static const TestPlan test_plans[] = {
    {"1d", 8, 0, TRUE}, {"2d", 4, 0, TRUE},  {"2.5d", 8, 2, TRUE},
    {"3d", 8, 0, TRUE}, {"3d", 8, 0, FALSE},
};

/* Largest difference between two span arrays, relative to the step time. */
static double
test_span_diff(const SimparSpan *a, const SimparSpan *b, guint n, double *step)
{
    double worst = 0;
    *step = 0;
    for (guint i = 0; i < n; i++)
        *step = MAX(*step, a[i].end);
    for (guint i = 0; i < n; i++)
        worst = MAX(worst, MAX(fabs(a[i].start - b[i].start), fabs(a[i].end - b[i].end)));
    return worst / *step;
}

static void
test_layer_plan(const SimparPlatform *p, const TestPlan *tp, GString *out)
{
    SimparModel model;
    g_assert(simpar_model_preset("tiny", &model, NULL));
    model.hidden = 256, model.heads = 8, model.ffn = 1024, model.seq = 64, model.micro_batch = 8;
    SimparPlan plan;
    simpar_plan_init(&plan);
    plan.mode = g_intern_string(tp->mode), plan.tp = tp->tp, plan.depth = tp->depth;
    plan.paper_3d = tp->paper;
    g_autoptr(SimparSchedule) s = simpar_generate_layer(&model, &plan, NULL);
    g_assert(s != NULL);
    SimparGpu gpu;
    simpar_gpu_init(&gpu);
    gpu.peak_flops[SIMPAR_DTYPE_FP32] = 15.7e12, gpu.mem_bw_Bps = 900e9, gpu.mem_bytes = 16e9;
    guint n_ops = simpar_schedule_n_ops(s), n = n_ops * 2;
    g_autofree double *compute = g_new(double, n_ops);
    simpar_compute_times(&gpu, s, SIMPAR_ATTENTION_UNFUSED, compute);
    guint gpus[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    SimparRun run = {.sched = s,
                     .n_layers = 2,
                     .gpus = gpus,
                     .net = simpar_platform_net(p),
                     .compute_s = compute,
                     .algo = NULL};
    simpar_coll_params_init(&run.coll);
    g_autofree SimparSpan *an = g_new(SimparSpan, n), *ex = g_new(SimparSpan, n),
                          *af = g_new(SimparSpan, n), *fu = g_new(SimparSpan, n);
    run.mode = SIMPAR_COLL_MODE_EXACT;
    simpar_backend_analytic_run(&run, an);
    simpar_backend_simgrid_run(&run, ex);
    run.mode = SIMPAR_COLL_MODE_FUSED;
    simpar_backend_analytic_run(&run, af);
    simpar_backend_simgrid_run(&run, fu);
    double step, dx = test_span_diff(an, ex, n, &step), df = test_span_diff(af, fu, n, &step);
    if (g_getenv("SIMPAR_TEST_DEBUG") != NULL) {
        double first = 1e9;
        guint fi = 0;
        for (guint i = 0; i < n; i++)
            if (fabs(an[i].end - ex[i].end) > 1e-12 && an[i].end < first)
                first = an[i].end, fi = i;
        const SimparOp *op = simpar_schedule_op(s, fi % n_ops);
        printf("first diff %s rank %u stream %u layer %u: analytic %.9g..%.9g exact %.9g..%.9g\n",
               op->name, op->rank, op->stream, fi / n_ops, an[fi].start, an[fi].end, ex[fi].start,
               ex[fi].end);
    }
    g_string_append_printf(out, "%s tp=%" G_GINT64_FORMAT "%s step %.6g s: exact %.2g fused %.2g\n",
                           tp->mode, tp->tp, tp->paper ? "" : " later", step, dx, df);
}

static gboolean
test_layers_job(const SimparPlatform *p, gpointer data, GString *out, GError **error)
{
    (void) data, (void) error;
    for (guint i = 0; i < G_N_ELEMENTS(test_plans); i++)
        test_layer_plan(p, &test_plans[i], out);
    return TRUE;
}

/* Every span of a 2-layer step: SimGrid exact equals analytic exact; fused modes within 0.1% (a
 * fused SimGrid transfer starts when both ends have arrived, the closed form when all have). */
static void
test_layers_idle(void)
{
    g_autofree char *xml = test_crossbar(8, 4);
    g_autoptr(GString) out = g_string_new(NULL);
    g_autoptr(GError) error = NULL;
    gboolean ok = simpar_platform_run(xml, test_layers_job, NULL, out, &error);
    if (!ok)
        printf("\n    %s", error->message);
    CU_ASSERT_TRUE_FATAL(ok);
    printf("\n%s", out->str);
    g_auto(GStrv) lines = g_strsplit(out->str, "\n", -1);
    guint checked = 0;
    for (guint i = 0; lines[i] != NULL && lines[i][0] != '\0'; i++, checked++) {
        double ex = 1, fu = 1;
        const char *at = strstr(lines[i], "exact ");
        CU_ASSERT_FATAL(at != NULL && sscanf(at, "exact %lf fused %lf", &ex, &fu) == 2);
        /* exact: the same model, so the same numbers; except that the later 3-D variant's
         * asynchronous reduce-scatters share pairs with the compute stream's collectives, which
         * SimGrid sees as contention and the analytic backend does not */
        CU_ASSERT_TRUE(ex < (strstr(lines[i], "later") != NULL ? 1e-3 : 1e-9));
        CU_ASSERT_TRUE(fu < 1e-3); /* fused: members start a collective at their own time */
    }
    CU_ASSERT_EQUAL(checked, G_N_ELEMENTS(test_plans));
    g_unlink(xml);
}

static CU_TestInfo backend_tests[] = {
    {"every algorithm equals its closed form on a crossbar, in both backends", test_closed_forms},
    {"two rings sharing one link take the contended time", test_contention},
    {"simgrid equals analytic span by span on whole layers of every mode", test_layers_idle},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"backend", NULL, NULL, NULL, NULL, backend_tests},
    CU_SUITE_INFO_NULL,
};

int
main(void)
{
    return simpar_test_main(suites);
}
