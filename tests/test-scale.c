/* test-scale.c - the shortcuts that make thousands of GPUs fast, against what they replace.
 *
 * The ring's idle evaluator against the evaluated expansion (bit for bit); routes of generated
 * platforms, looked up through two representative nodes, against SimGrid's own for every
 * pair (bit for bit, links included); a lone ring collective evaluated (exact mode) against
 * the same ring played round by round on SimGrid (relative 1e-9; measured 2e-12: the played
 * rounds accumulate SimGrid's own rounding).
 */
#include "backend.h"
#include "platform.h"
#include "simpar-test.h"
#include "topology.h"
#include <glib/gstdio.h>
#include <math.h>
#include <simgrid/host.h>
#include <simgrid/link.h>
#include <unistd.h>
#include <xbt/dynar.h>

/* ------------------------------------------------------------- the ring's idle evaluator */

typedef struct {
    guint per_node;
} TestNet;

static void
test_route(const SimparNet *net, guint src, guint dst, SimparRoute *out)
{
    const TestNet *t = net->data;
    gboolean same = src / t->per_node == dst / t->per_node;
    out->lat_s = same ? 1e-6 + 1e-8 * (src % 3) : 5e-6 + 1e-7 * (dst % 5);
    out->bw_Bps = same ? 3e11 - 1e9 * (src % 7) : 2.5e10 + 1e8 * ((src + dst) % 4);
}

static guint
test_node(const SimparNet *net, guint gpu)
{
    return gpu / ((const TestNet *) net->data)->per_node;
}

static void
test_ring_eval(void)
{
    const SimparCollAlgo *ring;
    CU_ASSERT_TRUE_FATAL(simpar_coll_algo_lookup("ring", &ring, NULL));
    CU_ASSERT_PTR_NOT_NULL_FATAL(ring->eval_idle);
    TestNet t = {4};
    SimparNet net = {test_route, test_node, &t};
    GRand *rand = g_rand_new_with_seed(7);
    const SimparCollKind kinds[] = {SIMPAR_COLL_ALL_REDUCE, SIMPAR_COLL_ALL_GATHER,
                                    SIMPAR_COLL_REDUCE_SCATTER};
    for (guint n = 2; n <= 40; n++) {
        g_autofree guint *gpus = g_new(guint, n);
        g_autofree double *start = g_new(double, n);
        g_autofree double *a = g_new(double, n), *b = g_new(double, n);
        for (guint m = 0; m < n; m++)
            gpus[m] = (m * 5 + 3) % (2 * n + 1), start[m] = g_rand_double_range(rand, 0, 1e-4);
        SimparCollGroup g = {n, gpus, &net};
        for (guint k = 0; k < G_N_ELEMENTS(kinds); k++)
            for (SimparProto proto = SIMPAR_PROTO_NONE; proto < SIMPAR_N_PROTOS; proto++) {
                SimparCollParams p;
                simpar_coll_params_init(&p);
                p.proto = proto;
                double bytes = 1e3 * n + 4e6 * k;
                g_autoptr(SimparExpansion) e = simpar_expansion_new(n);
                ring->expand(kinds[k], &g, bytes, 0, &p, e);
                simpar_expansion_eval_idle(e, &g, start, a);
                ring->eval_idle(kinds[k], &g, bytes, &p, start, b);
                CU_ASSERT_EQUAL(memcmp(a, b, n * sizeof *a), 0);
            }
    }
    g_rand_free(rand);
}

/* ------------------------------------------------------------------- generated platforms */

static char *
test_platform(const char *preset, guint nodes)
{
    g_autofree char *text = simpar_topology_generate(simpar_topology_lookup(preset), nodes);
    char *path = NULL;
    int fd = g_file_open_tmp("simpar-scale-XXXXXX.xml", &path, NULL);
    g_assert(fd >= 0);
    close(fd);
    g_assert(g_file_set_contents(path, text, -1, NULL));
    return path; /* (transfer full) */
}

/* Every pair: lat, bw and link names equal SimGrid's own route; out gets "pairs bad". */
static gboolean
test_routes_job(const SimparPlatform *p, gpointer data, GString *out, GError **error)
{
    (void) data, (void) error;
    const SimparNet *net = simpar_platform_net(p);
    const sg_host_t *hosts = net->data;
    guint n = simpar_platform_n_gpus(p), pairs = 0, bad = 0;
    g_autoptr(GPtrArray) links = g_ptr_array_new();
    for (guint a = 0; a < n; a++)
        for (guint b = 0; b < n; b++) {
            if (a == b)
                continue;
            SimparRoute r;
            simpar_net_route(net, a, b, &r);
            xbt_dynar_t own = xbt_dynar_new(sizeof(sg_link_t), NULL);
            sg_host_get_route(hosts[a], hosts[b], own);
            g_ptr_array_set_size(links, 0);
            gboolean same = simpar_platform_route_links(net, a, b, links) &&
                            links->len == xbt_dynar_length(own) &&
                            r.lat_s == sg_host_get_route_latency(hosts[a], hosts[b]) &&
                            r.bw_Bps == sg_host_get_route_bandwidth(hosts[a], hosts[b]);
            for (guint i = 0; same && i < links->len; i++)
                same = links->pdata[i] == xbt_dynar_get_as(own, i, sg_link_t);
            xbt_dynar_free(&own);
            pairs++, bad += !same;
        }
    g_string_printf(out, "%u %u", pairs, bad);
    return TRUE;
}

static void
test_generated_routes(void)
{
    const struct {
        const char *preset;
        guint nodes;
    } cases[] = {{"dgx-a100", 4}, {"dgx-h100", 3}, {"dgx-2", 3}, {"v100-ac922", 4}};

    for (guint c = 0; c < G_N_ELEMENTS(cases); c++) {
        g_autofree char *xml = test_platform(cases[c].preset, cases[c].nodes);
        g_autoptr(GString) out = g_string_new(NULL);
        CU_ASSERT_TRUE_FATAL(simpar_platform_run(xml, test_routes_job, NULL, out, NULL));
        guint pairs = 0, bad = 1;
        CU_ASSERT_EQUAL(sscanf(out->str, "%u %u", &pairs, &bad), 2);
        printf("\n    %s x %u: %u pairs, %u differ", cases[c].preset, cases[c].nodes, pairs, bad);
        CU_ASSERT_TRUE(pairs > 0 && bad == 0);
        g_unlink(xml);
    }
}

/* ----------------------------------------------------------- a lone ring, evaluated vs played */

typedef struct {
    SimparCollKind kind;
    double bytes;
} TestRing;

static double
test_ring_time(const SimparPlatform *p, const TestRing *t, guint n, gboolean play_all)
{
    g_autoptr(SimparSchedule) s = simpar_schedule_new(n, SIMPAR_DTYPE_FP32);
    g_autofree guint *ranks = g_new(guint, n);
    for (guint i = 0; i < n; i++)
        ranks[i] = i;
    guint g = simpar_schedule_add_group(s, "coll", ranks, n);
    gsize count = (gsize) (t->bytes / 4 / (t->kind == SIMPAR_COLL_ALL_REDUCE ? 1 : n));
    for (guint r = 0; r < n; r++) {
        SimparOp op = {.kind = SIMPAR_OP_COLLECTIVE, .rank = r, .name = "coll"};
        guint b = simpar_schedule_add_buffer(s, r, "buf", count * n);
        op.u.coll = (SimparColl){t->kind, g, count, 0, {b, 0}, {b, 0}, SIMPAR_RED_SUM};
        simpar_schedule_add_op(s, &op);
    }
    const SimparCollAlgo *ring;
    g_assert(simpar_coll_algo_lookup("ring", &ring, NULL));
    g_autofree double *compute = g_new0(double, n);
    g_autofree SimparSpan *spans = g_new(SimparSpan, n);
    SimparRun run = {.sched = s,
                     .n_layers = 1,
                     .gpus = ranks,
                     .net = simpar_platform_net(p),
                     .compute_s = compute,
                     .algo = ring,
                     .mode = SIMPAR_COLL_MODE_EXACT,
                     .play_all = play_all};
    simpar_coll_params_init(&run.coll);
    simpar_backend_simgrid_run(&run, spans);
    double end = 0;
    for (guint i = 0; i < n; i++)
        end = MAX(end, spans[i].end);
    return end;
}

static gboolean
test_lone_ring_job(const SimparPlatform *p, gpointer data, GString *out, GError **error)
{
    (void) data, (void) error;
    const TestRing cases[] = {{SIMPAR_COLL_ALL_REDUCE, 64.0 * (1 << 20)},
                              {SIMPAR_COLL_ALL_REDUCE, 4096},
                              {SIMPAR_COLL_ALL_GATHER, 16.0 * (1 << 20)}};
    guint n = simpar_platform_n_gpus(p);
    double worst = 0;
    for (guint c = 0; c < G_N_ELEMENTS(cases); c++) {
        for (guint m = 16; m <= n; m *= 2) {
            double evaluated = test_ring_time(p, &cases[c], m, FALSE);
            double played = test_ring_time(p, &cases[c], m, TRUE);
            worst = MAX(worst, fabs(evaluated - played) / played);
        }
    }
    g_string_printf(out, "%.3g", worst);
    return TRUE;
}

static void
test_lone_ring(void)
{
    g_autofree char *xml = test_platform("dgx-a100", 16); /* rings of 16 to 128 GPUs */
    g_autoptr(GString) out = g_string_new(NULL);
    CU_ASSERT_TRUE_FATAL(simpar_platform_run(xml, test_lone_ring_job, NULL, out, NULL));
    double worst = 1;
    CU_ASSERT_EQUAL(sscanf(out->str, "%lf", &worst), 1);
    printf("\n    evaluated against played rings of 16-128 GPUs: worst relative error %.3g", worst);
    CU_ASSERT_TRUE(worst < 1e-9);
    g_unlink(xml);
}

static CU_TestInfo scale_tests[] = {
    {"the ring's idle evaluator equals its evaluated expansion bit for bit", test_ring_eval},
    {"routes of generated platforms equal SimGrid's for every pair, links included",
     test_generated_routes},
    {"a lone ring evaluated equals the ring played round by round on SimGrid", test_lone_ring},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"scale", NULL, NULL, NULL, NULL, scale_tests},
    CU_SUITE_INFO_NULL,
};

int
main(void)
{
    return simpar_test_main(suites);
}
