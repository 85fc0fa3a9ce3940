/* test-backend.c - the two backends against closed forms and against each other.
 *
 * Platforms are written by the test: a crossbar (a private link per GPU pair, so nothing is
 * shared: SimGrid must equal the closed forms) and two nodes joined by one InfiniBand link
 * (two rings or two messages crossing it take twice as long per byte); the scale test
 * generates DGX A100 nodes. Collectives, send/recv (rendezvous: a transfer starts when both
 * ends have started and lasts latency + bytes / bandwidth on an idle route), timed blocks and
 * several streams per rank. Each SimGrid run is a forked child
 * (one platform per process, platform.c), which returns a text verdict: "ok" or what differed.
 */
#include "backend.h"
#include "generators.h"
#include "platform.h"
#include "replay.h"
#include "simpar-test.h"
#include "topology.h"
#include <glib/gstdio.h>
#include <math.h>
#include <stdio.h>
#include <unistd.h>

#define XBAR_LAT 2e-6
#define XBAR_BW  25e9

/* n GPUs, `per_node` per node, one link per pair (and per direction); with `nvls` the GPUs of
 * node 0 have NVLink SHARP (efficiency 0.85, 20 us). */
static char *
test_crossbar(guint n, guint per_node, gboolean nvls)
{
    GString *x = g_string_new("<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM "
                              "\"https://simgrid.org/simgrid.dtd\">\n<platform version=\"4.1\">\n"
                              "<zone id=\"world\" routing=\"Full\">\n");
    for (guint i = 0; i < n; i++) /* with nvls, node 0 has NVLink SHARP */
        g_string_append_printf(
            x, "<host id=\"node%u-gpu%u\" speed=\"1Gf\"%s\n", i / per_node, i % per_node,
            nvls && i < per_node ? "><prop id=\"nvls_efficiency\" value=\"0.85\"/>"
                                   "<prop id=\"nvls_latency_s\" value=\"2e-5\"/></host>"
                                 : "/>");
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

/* The sends of the expansion's members: all of them, or one per (member, peer) (fused). */
static double
test_expansion_sends(const SimparExpansion *e, gboolean fused)
{
    double sends = 0;
    for (guint m = 0; m < e->n_members; m++) {
        g_autoptr(GArray) xfers = g_array_new(FALSE, FALSE, sizeof(SimparXfer));
        if (fused) {
            simpar_expansion_fuse(e, m, xfers);
        } else {
            for (guint k = e->member_first[m]; k < e->member_first[m + 1]; k++) {
                const SimparRound *rd = &g_array_index(e->rounds, SimparRound, k);
                g_array_append_vals(xfers, &g_array_index(e->xfers, SimparXfer, rd->first), rd->n);
            }
        }
        for (guint x = 0; x < xfers->len; x++)
            sends += g_array_index(xfers, SimparXfer, x).send;
    }
    return sends;
}

/* simpar_replay_activities of a one-collective run against its expansion's sends. */
static gboolean
test_activities(const SimparRun *run, const SimparCollAlgo *algo, const SimparCollGroup *g,
                SimparCollKind kind, double bytes, guint root)
{
    SimparExpansion *e = simpar_expansion_new(g->n);
    algo->expand(kind, g, bytes, root, &run->coll, e);
    gboolean ok = TRUE;
    for (guint fused = 0; fused < 2; fused++) {
        SimparRun r = *run;
        r.mode = fused ? SIMPAR_COLL_MODE_FUSED : SIMPAR_COLL_MODE_EXACT;
        r.every_rank = TRUE; /* the sends of every rank, not of a quotient's */
        g_autoptr(SimparReplay) replay = simpar_replay_new(&r);
        ok = ok && simpar_replay_activities(replay, NULL) == test_expansion_sends(e, fused);
    }
    simpar_expansion_free(e);
    return ok;
}

/* Every algorithm, every kind it implements, group sizes 2..16: exact and fused SimGrid runs and
 * the analytic backend equal the closed form, and the activities counted for --time-budget are
 * the expansion's sends. */
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
            if (!test_activities(&run, algo, &g, kind, bytes, root))
                g_string_append_printf(out, "%s %s n=%u: activities are not the sends\n",
                                       algo->name, simpar_coll_kind_name(kind), n);
            /* SimGrid moves whole bytes: an all-to-all block between nodes is 1.12 S/n wire
             * bytes (pairwise.c), a fraction of a byte off a whole number */
            double byte_s = kind == SIMPAR_COLL_ALL_TO_ALL ? 1.0 / XBAR_BW : 0.0;
            if (!(fabs(exact - want) <= byte_s || test_close(exact, want, 1e-6)) ||
                !(fabs(fused - want) <= byte_s || test_close(fused, want, 1e-6)) ||
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
    g_autofree char *xml = test_crossbar(16, 4, TRUE);
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
    gint64 cp; /* context parallelism: tp x |cp| ranks; negative: ring attention */
} TestPlan;

static const TestPlan test_plans[] = {
    {"1d", 8, 0, TRUE, 1},  {"2d", 4, 0, TRUE, 1},  {"2.5d", 8, 2, TRUE, 1}, {"3d", 8, 0, TRUE, 1},
    {"3d", 8, 0, FALSE, 1}, {"1d", 4, 0, TRUE, 2},  {"2d", 4, 0, TRUE, 2},   {"1d", 1, 0, TRUE, 8},
    {"1d", 2, 0, TRUE, -4}, {"1d", 1, 0, TRUE, -8},
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
    plan.gen = simpar_generator_of(tp->mode), plan.tp = tp->tp, plan.depth = tp->depth;
    plan.paper_3d = tp->paper, plan.cp = ABS(tp->cp), plan.cp_ring = tp->cp < 0;
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
    g_string_append_printf(out,
                           "%s tp=%" G_GINT64_FORMAT " cp=%" G_GINT64_FORMAT
                           "%s step %.6g s: exact %.2g fused %.2g\n",
                           tp->mode, tp->tp, tp->cp, tp->paper ? "" : " later", step, dx, df);
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
    g_autofree char *xml = test_crossbar(8, 4, FALSE);
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

/* ---------------------------------------------------------------------------- send / recv */

#define P2P_T(bytes) (XBAR_LAT + (bytes) / XBAR_BW) /* one transfer on the crossbar */

/* A schedule under construction and the compute time of each of its ops. */
typedef struct {
    SimparSchedule *s;
    GArray *compute; /* double seconds per op */
    SimparPhase phase;
} TestSched;

static void
test_sched_init(TestSched *t, guint n_ranks)
{
    t->s = simpar_schedule_new(n_ranks, SIMPAR_DTYPE_FP32);
    t->compute = g_array_new(FALSE, FALSE, sizeof(double));
    t->phase = SIMPAR_PHASE_FORWARD;
    for (guint r = 0; r < n_ranks; r++) /* buffer r: the messages of rank r */
        simpar_schedule_add_buffer(t->s, r, "msg", 1u << 24);
}

static void
test_sched_clear(TestSched *t)
{
    g_clear_pointer(&t->s, simpar_schedule_free);
    g_array_free(t->compute, TRUE);
}

/* Adds `op` on `stream` taking `seconds` of compute, after `dep` (G_MAXUINT: none). */
static guint
test_add(TestSched *t, SimparOp *op, const char *stream, double seconds, guint dep)
{
    op->stream = simpar_schedule_add_stream(t->s, stream);
    op->phase = t->phase;
    guint i = simpar_schedule_add_op(t->s, op);
    g_array_append_val(t->compute, seconds);
    if (dep != G_MAXUINT)
        simpar_schedule_add_dep(t->s, i, dep);
    return i;
}

static guint
test_block(TestSched *t, guint rank, const char *stream, double seconds, guint dep)
{
    SimparOp op = {.kind = SIMPAR_OP_BLOCK, .rank = rank, .name = "block"};
    op.u.block = (SimparBlockOp){"test", 1, seconds * 1e12};
    return test_add(t, &op, stream, seconds, dep);
}

static guint
test_p2p(TestSched *t, SimparOpKind kind, guint rank, const char *stream, guint peer, guint tag,
         gsize count, guint dep)
{
    SimparOp op = {.kind = kind, .rank = rank, .name = kind == SIMPAR_OP_SEND ? "send" : "recv"};
    op.u.p2p = (SimparP2p){peer, tag, count, {rank, 0}};
    return test_add(t, &op, stream, 0, dep);
}

static guint
test_allreduce(TestSched *t, guint rank, const char *stream, guint group, gsize count, guint dep)
{
    SimparOp op = {.kind = SIMPAR_OP_COLLECTIVE, .rank = rank, .name = "allreduce"};
    op.u.coll =
        (SimparColl){SIMPAR_COLL_ALL_REDUCE, group, count, 0, {rank, 0}, {rank, 0}, SIMPAR_RED_SUM};
    return test_add(t, &op, stream, 0, dep);
}

typedef struct {
    const SimparSchedule *s;
    const double *compute;
    SimparCollMode mode;
} TestSpansJob;

/* Both backends on one schedule, rank r on GPU r; one line per op: analytic start and end, then
 * SimGrid's. */
static gboolean
test_spans_job(const SimparPlatform *p, gpointer data, GString *out, GError **error)
{
    (void) error;
    const TestSpansJob *j = data;
    guint n = simpar_schedule_n_ops(j->s);
    g_autofree guint *gpus = g_new(guint, simpar_schedule_n_ranks(j->s));
    for (guint r = 0; r < simpar_schedule_n_ranks(j->s); r++)
        gpus[r] = r;
    SimparRun run = {.sched = j->s,
                     .n_layers = 1,
                     .gpus = gpus,
                     .net = simpar_platform_net(p),
                     .compute_s = j->compute,
                     .mode = j->mode};
    simpar_coll_params_init(&run.coll);
    g_autofree SimparSpan *an = g_new(SimparSpan, n), *sg = g_new(SimparSpan, n);
    simpar_backend_analytic_run(&run, an);
    simpar_backend_simgrid_run(&run, sg);
    for (guint i = 0; i < n; i++)
        g_string_append_printf(out, "%.17g %.17g %.17g %.17g\n", an[i].start, an[i].end,
                               sg[i].start, sg[i].end);
    return TRUE;
}

/* Runs the checked schedule on platform `xml` in both backends; an and sg get n_ops spans. */
static void
test_spans(const char *xml, const TestSched *t, SimparCollMode mode, SimparSpan *an, SimparSpan *sg)
{
    g_autoptr(GError) error = NULL;
    gboolean checked = simpar_schedule_check(t->s, &error);
    if (!checked)
        printf("\n    %s", error->message);
    CU_ASSERT_TRUE_FATAL(checked);
    TestSpansJob job = {t->s, (const double *) t->compute->data, mode};
    g_autoptr(GString) out = g_string_new(NULL);
    gboolean ok = simpar_platform_run(xml, test_spans_job, &job, out, &error);
    if (!ok)
        printf("\n    %s", error->message);
    CU_ASSERT_TRUE_FATAL(ok);
    g_auto(GStrv) lines = g_strsplit(out->str, "\n", -1);
    for (guint i = 0; i < simpar_schedule_n_ops(t->s); i++) {
        CU_ASSERT_FATAL(lines[i] != NULL);
        CU_ASSERT_EQUAL_FATAL(
            sscanf(lines[i], "%lf %lf %lf %lf", &an[i].start, &an[i].end, &sg[i].start, &sg[i].end),
            4);
    }
}

/* Op `i` spans [start, end] in both backends: analytic to rounding, SimGrid to 1e-9. */
static gboolean
test_span_is(const SimparSpan *an, const SimparSpan *sg, guint i, double start, double end)
{
    gboolean ok = test_close(an[i].start, start, 1e-12) && test_close(an[i].end, end, 1e-12) &&
                  test_close(sg[i].start, start, 1e-9) && test_close(sg[i].end, end, 1e-9);
    if (!ok)
        printf("\n    op %u: want [%.9g, %.9g], analytic [%.9g, %.9g], simgrid [%.9g, %.9g]", i,
               start, end, an[i].start, an[i].end, sg[i].start, sg[i].end);
    return ok;
}

/* A message of N bytes between two GPUs takes latency + N / bandwidth, N = 0 included. */
static void
test_p2p_sizes(void)
{
    static const gsize counts[] = {0, 1, 1000, 262144, 16777216}; /* fp32: up to 64 MiB */
    g_autofree char *xml = test_crossbar(2, 2, FALSE);
    for (guint c = 0; c < G_N_ELEMENTS(counts); c++) {
        TestSched t;
        test_sched_init(&t, 2);
        guint send = test_p2p(&t, SIMPAR_OP_SEND, 0, "compute", 1, 7, counts[c], G_MAXUINT);
        guint recv = test_p2p(&t, SIMPAR_OP_RECV, 1, "compute", 0, 7, counts[c], G_MAXUINT);
        SimparSpan an[2], sg[2];
        test_spans(xml, &t, SIMPAR_COLL_MODE_FUSED, an, sg);
        double want = P2P_T(counts[c] * 4.0);
        printf("\n    %zu bytes: analytic %.9g s, simgrid %.9g s, lat + N/bw %.9g s", counts[c] * 4,
               an[recv].end, sg[recv].end, want);
        CU_ASSERT_TRUE(test_span_is(an, sg, send, 0, want));
        CU_ASSERT_TRUE(test_span_is(an, sg, recv, 0, want));
        test_sched_clear(&t);
    }
    g_unlink(xml);
}

/* Ranks 0..3 in a chain: receive from the previous rank, compute c_r, send to the next. */
static void
test_p2p_chain(void)
{
    const gsize count = 262144; /* 1 MiB */
    const double t1 = P2P_T(count * 4.0);
    g_autofree char *xml = test_crossbar(4, 2, FALSE);
    TestSched t;
    test_sched_init(&t, 4);
    guint blocks[4], sends[3], recvs[4];
    for (guint r = 0; r < 4; r++) {
        if (r > 0)
            recvs[r] = test_p2p(&t, SIMPAR_OP_RECV, r, "compute", r - 1, 0, count, G_MAXUINT);
        blocks[r] = test_block(&t, r, "compute", (r + 1) * 1e-4, G_MAXUINT);
        if (r < 3)
            sends[r] = test_p2p(&t, SIMPAR_OP_SEND, r, "compute", r + 1, 0, count, G_MAXUINT);
    }
    SimparSpan an[16], sg[16];
    test_spans(xml, &t, SIMPAR_COLL_MODE_FUSED, an, sg);
    double at = 0; /* when rank r starts computing: sum of c_j + t over the ranks before it */
    for (guint r = 0; r < 4; r++) {
        double end = at + (r + 1) * 1e-4;
        CU_ASSERT_TRUE(test_span_is(an, sg, blocks[r], at, end));
        if (r > 0)
            CU_ASSERT_TRUE(test_span_is(an, sg, recvs[r], 0, at));
        if (r < 3)
            CU_ASSERT_TRUE(test_span_is(an, sg, sends[r], end, end + t1));
        at = end + t1;
    }
    double step = 10e-4 + 3 * t1; /* (1 + 2 + 3 + 4) x 1e-4 of compute, 3 transfers */
    printf("\n    end %.9g s (analytic) %.9g s (simgrid), closed form %.9g s", an[blocks[3]].end,
           sg[blocks[3]].end, step);
    CU_ASSERT_TRUE(test_span_is(an, sg, blocks[3], step - 4e-4, step));
    test_sched_clear(&t);
    g_unlink(xml);
}

/* The recv is posted late: the transfer starts when it is, and the send waits until then. */
static void
test_p2p_rendezvous(void)
{
    const gsize count = 1048576; /* 4 MiB */
    const double late = 5e-4, t1 = P2P_T(count * 4.0);
    g_autofree char *xml = test_crossbar(2, 2, FALSE);
    TestSched t;
    test_sched_init(&t, 2);
    guint send = test_p2p(&t, SIMPAR_OP_SEND, 0, "compute", 1, 0, count, G_MAXUINT);
    guint after = test_block(&t, 0, "compute", 1e-4, G_MAXUINT);
    guint before = test_block(&t, 1, "compute", late, G_MAXUINT);
    guint recv = test_p2p(&t, SIMPAR_OP_RECV, 1, "compute", 0, 0, count, G_MAXUINT);
    SimparSpan an[4], sg[4];
    test_spans(xml, &t, SIMPAR_COLL_MODE_FUSED, an, sg);
    CU_ASSERT_TRUE(test_span_is(an, sg, before, 0, late));
    CU_ASSERT_TRUE(test_span_is(an, sg, send, 0, late + t1));
    CU_ASSERT_TRUE(test_span_is(an, sg, recv, late, late + t1));
    CU_ASSERT_TRUE(test_span_is(an, sg, after, late + t1, late + t1 + 1e-4));
    test_sched_clear(&t);
    g_unlink(xml);
}

/* A send on its own stream overlaps the compute that follows the op it waits for. */
static void
test_p2p_async(void)
{
    const gsize count = 4194304; /* 16 MiB: 0.67 ms */
    const double a = 2e-4, b = 1e-3, c = 3e-4, t1 = P2P_T(count * 4.0);
    g_autofree char *xml = test_crossbar(2, 2, FALSE);
    TestSched t;
    test_sched_init(&t, 2);
    guint fa = test_block(&t, 0, "compute", a, G_MAXUINT);
    guint send = test_p2p(&t, SIMPAR_OP_SEND, 0, "p2p-send-fwd", 1, 0, count, fa);
    guint fb = test_block(&t, 0, "compute", b, G_MAXUINT);
    guint recv = test_p2p(&t, SIMPAR_OP_RECV, 1, "compute", 0, 0, count, G_MAXUINT);
    guint fc = test_block(&t, 1, "compute", c, G_MAXUINT);
    SimparSpan an[5], sg[5];
    test_spans(xml, &t, SIMPAR_COLL_MODE_FUSED, an, sg);
    CU_ASSERT_TRUE(test_span_is(an, sg, send, a, a + t1));
    CU_ASSERT_TRUE(test_span_is(an, sg, fb, a, a + b)); /* not after the send */
    CU_ASSERT_TRUE(test_span_is(an, sg, recv, 0, a + t1));
    CU_ASSERT_TRUE(test_span_is(an, sg, fc, a + t1, a + t1 + c));
    test_sched_clear(&t);
    g_unlink(xml);
}

/* Timed blocks last what compute_s says, in stream order and after their deps. */
static void
test_blocks(void)
{
    g_autofree char *xml = test_crossbar(2, 2, FALSE);
    TestSched t;
    test_sched_init(&t, 2);
    guint b0 = test_block(&t, 0, "compute", 1e-3, G_MAXUINT);
    guint b1 = test_block(&t, 0, "compute", 2e-3, G_MAXUINT);
    guint side = test_block(&t, 0, "dp", 4e-3, b0);
    guint b2 = test_block(&t, 0, "compute", 3e-3, G_MAXUINT);
    guint last = test_block(&t, 0, "compute", 5e-4, side);
    guint other = test_block(&t, 1, "compute", 7e-3, G_MAXUINT);
    SimparSpan an[6], sg[6];
    test_spans(xml, &t, SIMPAR_COLL_MODE_FUSED, an, sg);
    CU_ASSERT_TRUE(test_span_is(an, sg, b0, 0, 1e-3));
    CU_ASSERT_TRUE(test_span_is(an, sg, b1, 1e-3, 3e-3));
    CU_ASSERT_TRUE(test_span_is(an, sg, side, 1e-3, 5e-3));
    CU_ASSERT_TRUE(test_span_is(an, sg, b2, 3e-3, 6e-3));
    CU_ASSERT_TRUE(test_span_is(an, sg, last, 6e-3, 6.5e-3));
    CU_ASSERT_TRUE(test_span_is(an, sg, other, 0, 7e-3));
    test_sched_clear(&t);
    g_unlink(xml);
}

/* Stage s of a 1F1B pipeline of 2 stages x 2 ranks (rank = 2 s + i sends to rank + 2): the
 * forward of micro-batch j receives (stage 1) on the compute stream, computes and sends
 * (stage 0) on "p2p-send-fwd"; the backward receives (stage 0), computes and sends (stage 1) on
 * "p2p-send-bwd"; after the last backward the stage's two ranks all-reduce on "dp". */
static void
test_pipeline_rank(TestSched *t, guint rank, guint group, guint m)
{
    const gsize act = 1048576; /* 4 MiB */
    guint stage = rank / 2, peer = stage == 0 ? rank + 2 : rank - 2;
    guint warmup = stage == 0 ? 1 : 0, f = 0, b = 0, last = G_MAXUINT;
    while (b < m) {
        gboolean fwd = f < m && (f < warmup + b + 1);
        t->phase = fwd ? SIMPAR_PHASE_FORWARD : SIMPAR_PHASE_BACKWARD;
        guint mb = fwd ? f++ : b++;
        if ((fwd && stage == 1) || (!fwd && stage == 0))
            test_p2p(t, SIMPAR_OP_RECV, rank, "compute", peer, mb, act, G_MAXUINT);
        last = test_block(t, rank, "compute", fwd ? 3e-4 : 6e-4, G_MAXUINT);
        if (fwd && stage == 0)
            test_p2p(t, SIMPAR_OP_SEND, rank, "p2p-send-fwd", peer, mb, act, last);
        if (!fwd && stage == 1)
            test_p2p(t, SIMPAR_OP_SEND, rank, "p2p-send-bwd", peer, mb, act, last);
    }
    test_allreduce(t, rank, "dp", group, 4194304, last);
}

/* SimGrid equals analytic span by span on an idle network for a small pipeline. */
static void
test_pipeline_idle(void)
{
    g_autofree char *xml = test_crossbar(4, 2, FALSE);
    TestSched t;
    test_sched_init(&t, 4);
    guint g[2] = {simpar_schedule_add_group(t.s, "dp", (guint[]){0, 1}, 2),
                  simpar_schedule_add_group(t.s, "dp", (guint[]){2, 3}, 2)};
    for (guint r = 0; r < 4; r++)
        test_pipeline_rank(&t, r, g[r / 2], 4);
    guint n = simpar_schedule_n_ops(t.s);
    for (guint mode = 0; mode < 2; mode++) {
        g_autofree SimparSpan *an = g_new(SimparSpan, n), *sg = g_new(SimparSpan, n);
        test_spans(xml, &t, mode ? SIMPAR_COLL_MODE_FUSED : SIMPAR_COLL_MODE_EXACT, an, sg);
        double step, diff = test_span_diff(an, sg, n, &step);
        printf("\n    %s: %u ops, step %.9g s, largest span difference %.2g of the step",
               mode ? "fused" : "exact", n, step, diff);
        CU_ASSERT_TRUE(diff < 1e-9);
        /* 1F1B on 2 stages with f > t: stage 0's last backward ends m + 1 periods of f + b + t
         * after the start (one forward, one backward, one transfer each), then its ring
         * all-reduce of 16 MiB over 2 ranks */
        double want = 5 * (3e-4 + 6e-4 + P2P_T(4194304.0)) + 2 * P2P_T(8388608.0);
        printf(", closed form %.9g s", want);
        CU_ASSERT_TRUE(test_close(step, want, 1e-12));
    }
    test_sched_clear(&t);
    g_unlink(xml);
}

/* Two messages crossing the one IB link at once: SimGrid shares it, the analytic backend
 * gives each the idle time. */
static void
test_p2p_contention(void)
{
    const gsize count = 16 << 20; /* 64 MiB */
    const double S = count * 4.0, alpha = 2e-6, B = 10e9;
    g_autofree char *xml = test_two_nodes();
    TestSched t;
    test_sched_init(&t, 4);
    for (guint r = 0; r < 2; r++) {
        test_p2p(&t, SIMPAR_OP_SEND, r, "compute", r + 2, 0, count, G_MAXUINT);
        test_p2p(&t, SIMPAR_OP_RECV, r + 2, "compute", r, 0, count, G_MAXUINT);
    }
    SimparSpan an[4], sg[4];
    test_spans(xml, &t, SIMPAR_COLL_MODE_FUSED, an, sg);
    printf("\n    simgrid %.9g s = alpha + 2S/B %.9g s; analytic %.9g s = alpha + S/B %.9g s",
           sg[0].end, alpha + 2 * S / B, an[0].end, alpha + S / B);
    for (guint i = 0; i < 4; i++) {
        CU_ASSERT_TRUE(test_close(sg[i].end, alpha + 2 * S / B, 1e-9));
        CU_ASSERT_TRUE(test_close(an[i].end, alpha + S / B, 1e-12));
    }
    test_sched_clear(&t);
    g_unlink(xml);
}

typedef struct {
    const TestSched *t;
    gboolean analytic;
} TestDeadlock;

static gboolean
test_deadlock_job(const SimparPlatform *p, gpointer data, GString *out, GError **error)
{
    (void) out, (void) error;
    const TestDeadlock *d = data;
    guint gpus[] = {0, 1};
    SimparRun run = {.sched = d->t->s,
                     .n_layers = 1,
                     .gpus = gpus,
                     .net = simpar_platform_net(p),
                     .compute_s = (const double *) d->t->compute->data};
    simpar_coll_params_init(&run.coll);
    SimparSpan spans[4];
    if (d->analytic)
        simpar_backend_analytic_run(&run, spans);
    else
        simpar_backend_simgrid_run(&run, spans);
    return TRUE;
}

/* Both ranks receive before they send (the schedule check refuses this): each backend ends the
 * process with a message naming a rank and the op it is stuck at, instead of hanging. */
static void
test_deadlock(void)
{
    g_autofree char *xml = test_crossbar(2, 2, FALSE);
    TestSched t;
    test_sched_init(&t, 2);
    for (guint r = 0; r < 2; r++) {
        SimparOp op = {.kind = SIMPAR_OP_RECV, .rank = r, .name = "recv.first"};
        op.u.p2p = (SimparP2p){1 - r, 0, 16, {r, 0}};
        test_add(&t, &op, "compute", 0, G_MAXUINT);
        op.kind = SIMPAR_OP_SEND, op.name = "send.after";
        test_add(&t, &op, "compute", 0, G_MAXUINT);
    }
    CU_ASSERT_FALSE(simpar_schedule_check(t.s, NULL));
    for (guint analytic = 0; analytic < 2; analytic++) {
        TestDeadlock d = {&t, analytic};
        g_autoptr(GString) out = g_string_new(NULL);
        g_autoptr(GError) error = NULL;
        CU_ASSERT_FALSE(simpar_platform_run(xml, test_deadlock_job, &d, out, &error));
        CU_ASSERT_FATAL(error != NULL);
        const char *msg = strstr(error->message, analytic ? "analytic backend" : "simgrid backend");
        printf("\n    %s", msg != NULL ? msg : error->message);
        CU_ASSERT_PTR_NOT_NULL(msg);
        CU_ASSERT_PTR_NOT_NULL(strstr(error->message, "recv.first"));
        CU_ASSERT_PTR_NOT_NULL(strstr(error->message, "rank "));
    }
    test_sched_clear(&t);
    g_unlink(xml);
}

/* ------------------------------------------------------------------------------------- scale */

/* n ranks in stages of 64 (rank r sends to r + 64): GPipe over 8 micro-batches of 25 forward
 * and 25 backward blocks (400 blocks per rank), 16 MiB activations on the send streams, then
 * 4 gradient buckets all-reduced over the 8 ranks of each node on "dp". */
static void
test_scale_rank(TestSched *t, guint r, guint n, guint group)
{
    const gsize act = 4194304;
    guint stage = r / 64, stages = n / 64, last = G_MAXUINT;
    for (guint bwd = 0; bwd < 2; bwd++) {
        t->phase = bwd ? SIMPAR_PHASE_BACKWARD : SIMPAR_PHASE_FORWARD;
        gboolean from = bwd ? stage + 1 < stages : stage > 0,
                 to = bwd ? stage > 0 : stage + 1 < stages;
        for (guint mb = 0; mb < 8; mb++) {
            if (from)
                test_p2p(t, SIMPAR_OP_RECV, r, "compute", bwd ? r + 64 : r - 64, mb, act,
                         G_MAXUINT);
            for (guint k = 0; k < 25; k++)
                last = test_block(t, r, "compute", bwd ? 2e-4 : 1e-4, G_MAXUINT);
            if (to)
                test_p2p(t, SIMPAR_OP_SEND, r, bwd ? "p2p-send-bwd" : "p2p-send-fwd",
                         bwd ? r - 64 : r + 64, mb, act, last);
        }
    }
    for (guint k = 0; k < 4; k++)
        test_allreduce(t, r, "dp", group, 1 << 22, last);
}

static gboolean
test_scale_job(const SimparPlatform *p, gpointer data, GString *out, GError **error)
{
    (void) error;
    const TestSched *t = data;
    guint n = simpar_schedule_n_ranks(t->s), n_ops = simpar_schedule_n_ops(t->s);
    g_autofree guint *gpus = g_new(guint, n);
    for (guint r = 0; r < n; r++)
        gpus[r] = r;
    SimparRun run = {.sched = t->s,
                     .n_layers = 1,
                     .gpus = gpus,
                     .net = simpar_platform_net(p),
                     .compute_s = (const double *) t->compute->data,
                     .mode = SIMPAR_COLL_MODE_FUSED};
    simpar_coll_params_init(&run.coll);
    g_autofree SimparSpan *an = g_new(SimparSpan, n_ops), *sg = g_new(SimparSpan, n_ops),
                          *again = g_new(SimparSpan, n_ops);
    gint64 t0 = g_get_monotonic_time();
    simpar_backend_analytic_run(&run, an); /* the first routes come from SimGrid's Dijkstra */
    gint64 t1 = g_get_monotonic_time();
    simpar_backend_simgrid_run(&run, sg);
    gint64 t2 = g_get_monotonic_time();
    simpar_backend_analytic_run(&run, again);
    gint64 t3 = g_get_monotonic_time();
    double step;
    double diff = test_span_diff(an, sg, n_ops, &step);
    gboolean same = memcmp(an, again, n_ops * sizeof *an) == 0;
    g_string_printf(out, "%u %u %.6f %.6f %.6f %.17g %.3g %d", n, n_ops, (t1 - t0) / 1e6,
                    (t2 - t1) / 1e6, (t3 - t2) / 1e6, step, diff, same);
    return TRUE;
}

/* Wall time of both backends on DGX A100 nodes (SIMPAR_TEST_SCALE_NODES, default 16 = 128
 * ranks; 128 nodes = 1024 ranks is the measurement); the rails keep r -> r + 64 and the node's
 * all-reduces on links of their own, so the two backends agree. */
static void
test_scale(void)
{
    const char *env = g_getenv("SIMPAR_TEST_SCALE_NODES");
    guint nodes = env != NULL ? (guint) atoi(env) : 16, n = nodes * 8;
    CU_ASSERT_FATAL(n >= 128 && n % 64 == 0);
    g_autofree char *text = simpar_topology_generate(simpar_topology_lookup("dgx-a100"), nodes);
    g_autofree char *xml = NULL;
    int fd = g_file_open_tmp("simpar-scale-XXXXXX.xml", &xml, NULL);
    g_assert(fd >= 0);
    close(fd);
    g_assert(g_file_set_contents(xml, text, -1, NULL));
    TestSched t;
    test_sched_init(&t, n);
    for (guint node = 0; node < nodes; node++) {
        guint ranks[8];
        for (guint i = 0; i < 8; i++)
            ranks[i] = node * 8 + i;
        guint g = simpar_schedule_add_group(t.s, "dp", ranks, 8);
        for (guint i = 0; i < 8; i++)
            test_scale_rank(&t, ranks[i], n, g);
    }
    gint64 t0 = g_get_monotonic_time();
    CU_ASSERT_TRUE_FATAL(simpar_schedule_check(t.s, NULL));
    double check_s = (g_get_monotonic_time() - t0) / 1e6;
    g_autoptr(GString) out = g_string_new(NULL);
    g_autoptr(GError) error = NULL;
    t0 = g_get_monotonic_time();
    gboolean ok = simpar_platform_run(xml, test_scale_job, &t, out, &error);
    double total_s = (g_get_monotonic_time() - t0) / 1e6;
    if (!ok)
        printf("\n    %s", error->message);
    CU_ASSERT_TRUE_FATAL(ok);
    guint ranks, ops;
    int same = 0;
    double analytic_s, simgrid_s, cached_s, step, diff;
    CU_ASSERT_EQUAL_FATAL(sscanf(out->str, "%u %u %lf %lf %lf %lf %lf %d", &ranks, &ops,
                                 &analytic_s, &simgrid_s, &cached_s, &step, &diff, &same),
                          8);
    printf("\n    %u ranks, %u ops: analytic %.3f s (%.3f s with routes cached), simgrid %.3f s "
           "wall (schedule check %.3f s, child with platform load %.3f s); step %.6f s, "
           "difference %.2g",
           ranks, ops, analytic_s, cached_s, simgrid_s, check_s, total_s, step, diff);
    /* 8 micro-batches x 25 x (1e-4 + 2e-4) of compute, plus the pipeline fill and drain */
    CU_ASSERT_TRUE(step > 8 * 25 * 3e-4);
    CU_ASSERT_TRUE(diff < 1e-9);
    CU_ASSERT_TRUE(same); /* the analytic backend is deterministic, bit for bit */
    test_sched_clear(&t);
    g_unlink(xml);
}

static CU_TestInfo backend_tests[] = {
    {"every algorithm equals its closed form on a crossbar, in both backends", test_closed_forms},
    {"two rings sharing one link take the contended time", test_contention},
    {"simgrid equals analytic span by span on whole layers of every mode", test_layers_idle},
    {"a message of N bytes takes latency + N / bandwidth, N = 0 included", test_p2p_sizes},
    {"a chain of 4 ranks passing a message after a compute op ends at the closed form",
     test_p2p_chain},
    {"a transfer starts when its recv is posted late (rendezvous)", test_p2p_rendezvous},
    {"a send on its own stream overlaps compute", test_p2p_async},
    {"timed blocks take their compute time", test_blocks},
    {"simgrid equals analytic span by span on a 1F1B pipeline", test_pipeline_idle},
    {"two messages sharing one link take the contended time in simgrid only", test_p2p_contention},
    {"a deadlocked schedule ends with the rank and op, not a hang", test_deadlock},
    {"both backends at scale: DGX A100 ranks in a pipeline chain", test_scale},
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
