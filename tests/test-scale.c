/* test-scale.c - the shortcuts that make thousands of GPUs fast, against what they replace.
 *
 * The ring's idle evaluator and fused transfers against its expansion's (bit for bit); routes of
 * generated platforms, looked up through two representative nodes, against SimGrid's own for every
 * pair (bit for bit, links included); a lone ring collective evaluated (exact mode) against
 * the same ring played round by round on SimGrid (relative 1e-9; measured 2e-12: the played
 * rounds accumulate SimGrid's own rounding); one tensor-parallel slice of a step against every
 * rank (`simpar predict --tp-slices one` against `all`: every figure within 1e-12 relative,
 * measured equal), and the slice refused where slices share links or an op joins them; the
 * layer folded onto a quotient of alike nodes against every rank (equal with ring collectives,
 * fabric links binding or not; within 1e-3 with the default algorithms' unfolded small trees;
 * --time-budget counting only the simulated ranks).
 */
#include "backend.h"
#include "cli-run.h"
#include "coll-check.h"
#include "platform-private.h" /* to see that a Clos file was recognised as generated */
#include "simpar-test.h"
#include "topology.h"
#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
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
    CU_ASSERT_PTR_NOT_NULL_FATAL(ring->fuse);
    TestNet t = {4};
    SimparNet net = {test_route, test_node, &t, NULL, NULL, NULL, NULL, NULL};
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
                /* fused transfers, without the expansion: bit for bit */
                CU_ASSERT_TRUE(simpar_test_fused_equal(ring, kinds[k], &g, bytes, &p, e, 0));
            }
    }
    g_rand_free(rand);
}

/* ------------------------------------------------------------------- generated platforms */

static char *
test_platform_fabric(const char *preset, guint nodes, const SimparFabricSpec *fabric)
{
    const SimparTopologyPreset *p = simpar_topology_lookup(preset);
    g_autofree char *text = fabric != NULL ? simpar_topology_generate_fabric(p, nodes, fabric)
                                           : simpar_topology_generate(p, nodes);
    char *path = NULL;
    int fd = g_file_open_tmp("simpar-scale-XXXXXX.xml", &path, NULL);
    g_assert(fd >= 0);
    close(fd);
    g_assert(g_file_set_contents(path, text, -1, NULL));
    return path; /* (transfer full) */
}

static char *
test_platform(const char *preset, guint nodes)
{
    return test_platform_fabric(preset, nodes, NULL);
}

/* Every pair: lat, bw and link names equal SimGrid's own route, and the route has a shape (none
 * on a Clos fabric); out gets "pairs bad rack_nodes pod_nodes gpus_per_node", the last three
 * what the platform read from the file's header (rack and pod nodes 0 0 but on a Clos fabric;
 * a rack-scale file's GPUs per rack). */
static gboolean
test_routes_job(const SimparPlatform *p, gpointer data, GString *out, GError **error)
{
    (void) data, (void) error;
    gboolean clos = p->rack_nodes > 0;
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
            /* every route has a shape: a quotient of alike nodes can look at it (not on Clos) */
            same = same && (simpar_platform_route_shape(net, a, b) >= 0) == !clos;
            xbt_dynar_free(&own);
            pairs++, bad += !same;
        }
    g_string_printf(out, "%u %u %u %u %u", pairs, bad, p->rack_nodes, p->pod_nodes,
                    p->gpus_per_node);
    return TRUE;
}

static void
test_generated_routes(void)
{
    /* a Clos of 9 nodes, 2 per rack, 4 per pod: pairs in one node, one rack, one pod, two pods,
     * and a last rack and pod of one node */
    const SimparFabricSpec clos = {2, 32, 7, 400, 0};
    /* 3 GB200 racks of 8 GPUs (2 of 18 compute trays): the representative routes of racks of 8 */
    const SimparFabricSpec trays2 = {0, 0, 0, 0, 8};

    const struct {
        const char *preset;
        guint nodes;
        const SimparFabricSpec *fabric;
        guint rack_nodes, pod_nodes, gpus_per_node;
    } cases[] = {{"dgx-a100", 4, NULL, 0, 0, 8},     {"dgx-h100", 3, NULL, 0, 0, 8},
                 {"dgx-2", 3, NULL, 0, 0, 16},       {"v100-ac922", 4, NULL, 0, 0, 4},
                 {"clos-h100", 9, &clos, 2, 4, 8},   {"dgx-b200", 3, NULL, 0, 0, 8},
                 {"gb200-nvl72", 2, NULL, 0, 0, 72}, {"gb200-nvl72", 3, &trays2, 0, 0, 8}};

    for (guint c = 0; c < G_N_ELEMENTS(cases); c++) {
        g_autofree char *xml =
            test_platform_fabric(cases[c].preset, cases[c].nodes, cases[c].fabric);
        g_autoptr(GString) out = g_string_new(NULL);
        CU_ASSERT_TRUE_FATAL(simpar_platform_run(xml, test_routes_job, NULL, out, NULL));
        guint pairs = 0, bad = 1, rack = 99, pod = 99, gpus = 0;
        CU_ASSERT_EQUAL(sscanf(out->str, "%u %u %u %u %u", &pairs, &bad, &rack, &pod, &gpus), 5);
        printf("\n    %s x %u: %u pairs, %u differ", cases[c].preset, cases[c].nodes, pairs, bad);
        CU_ASSERT_TRUE(pairs > 0 && bad == 0);
        CU_ASSERT_EQUAL(rack, cases[c].rack_nodes);
        CU_ASSERT_EQUAL(pod, cases[c].pod_nodes);
        CU_ASSERT_EQUAL(gpus, cases[c].gpus_per_node);
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

/* ------------------------------------------------- one tensor-parallel slice for the step */

/* The first row of `simpar predict ARGS --json`, as a parser holding it. */
static JsonParser *
test_predict_json(const char *args, JsonObject **row)
{
    g_autofree char *cmd = g_strdup_printf("predict %s --json", args);
    SimparCliRun r = simpar_cli_run(cmd);
    CU_ASSERT_EQUAL(r.status, 0);
    JsonParser *p = json_parser_new();
    if (r.status != 0 || !json_parser_load_from_data(p, r.out, -1, NULL)) {
        printf("\n    simpar %s: %s", cmd, r.err);
        simpar_cli_run_clear(&r);
        g_object_unref(p);
        return NULL;
    }
    *row = json_array_get_object_element(json_node_get_array(json_parser_get_root(p)), 0);
    simpar_cli_run_clear(&r);
    return p;
}

/* Two predictions' first rows, held by their parsers (the array's). */
static GPtrArray *
test_predict_pair(const char *first, const char *second, JsonObject **a, JsonObject **b)
{
    GPtrArray *pair = g_ptr_array_new_with_free_func(g_object_unref);
    JsonParser *pa = test_predict_json(first, a), *pb = test_predict_json(second, b);
    if (pa != NULL)
        g_ptr_array_add(pair, pa);
    if (pb != NULL)
        g_ptr_array_add(pair, pb);
    CU_ASSERT_FATAL(pa != NULL && pb != NULL);
    return pair; /* (transfer full) */
}

/* Every number of the two rows but wall time and step_slices within 1e-12 relative; the
 * largest difference. */
static double
test_rows_differ(JsonObject *a, JsonObject *b)
{
    double worst = 0;
    g_autoptr(GList) members = json_object_get_members(a);
    for (GList *m = members; m != NULL; m = m->next) {
        JsonNode *x = json_object_get_member(a, m->data), *y = json_object_get_member(b, m->data);
        CU_ASSERT_PTR_NOT_NULL_FATAL(y);
        if (g_str_equal(m->data, "wall_s") || g_str_equal(m->data, "step_slices") ||
            g_str_equal(m->data, "layer_ranks") || g_str_equal(m->data, "slice_ranks") ||
            g_str_equal(m->data, "step_ranks") || json_node_get_value_type(x) != G_TYPE_DOUBLE)
            continue;
        double u = json_node_get_double(x), v = json_node_get_double(y);
        worst = MAX(worst, fabs(u - v) / MAX(fabs(v), 1e-300));
    }
    return worst;
}

typedef struct {
    const char *preset;
    guint nodes;
    const char *args;
    double slices;                  /* expected step_slices of --tp-slices one */
    const SimparFabricSpec *fabric; /* of a Clos preset, or NULL */
    double step_ranks; /* expected ranks the step simulates (a quotient's), or 0: its schedule's */
} TestSlice;

static void
test_slices(void)
{
    const char *split = "--layers 4 --micro-batch 1 --global-batch 32";
    /* Clos fabrics whose rack and pod uplinks every slice crosses alike: 1/8 of a pod's uplink
     * is 64 (or 32) x 48 GB/s / 7 / 8 = 54.9 (27.4) GB/s, above (below) the NIC port's 48 */
    const SimparFabricSpec pods64 = {2, 64, 7, 400, 0}, pods32 = {2, 32, 7, 400, 0};
    /* the step on a quotient of alike ranks (replay-quotient.c's links mode): the data- and
     * context-parallel ranks of a stage (a pod of 16 nodes, 2 per rack) fold 2:1, or 4:1 where
     * the pod's uplinks are not oversubscribed; the pods' uplinks carry 2 (4) lifts of every
     * pipeline send and run at 1/2 (1/4) of their slice's share, 110 / 2 (384 / 4) GB/s, above
     * the NIC's 48. With pods of 8 nodes, 1/2 of the uplink share (27 GB/s) would narrow the
     * routes: no quotient (measured 0.2% off every rank with one). */
    const SimparFabricSpec pods128 = {2, 128, 7, 400, 0}, pods128flat = {2, 128, 1, 400, 0};
    const char *cp_split = "--tp-mode 1d --tp 8 --cp 2 --pp 2 --dp 8 --seq 4096 --zero 3";
    /* Llama 3 405B on 32,768 clos-h100 GPUs in small: a stage of 16 nodes (C 2 x D 8) and pods
     * of 24, as stages of 256 nodes and pods of 384 there: stage 1 straddles pods 0 and 1, and
     * no fold is exact. A ring folds only onto the ring of its first n / f members (member i
     * onto i mod (n / f)), and stage 1's ZeRO-3 ring over C x D crosses the pod boundary at
     * members 7 to 8 and 15 to 0, which f = 2 maps onto 7 to 0 inside pod 0, a route without
     * the pods' uplinks; the pipeline sends of replicas 4-7 cross pods where those of 0-3 do
     * not. The quotient is refused, and the step runs every rank of the slice. Flat pods, so
     * that the narrowest-link rule plays no part (pods of 16 nodes fold the same split 4:1). */
    const SimparFabricSpec pods192flat = {2, 192, 1, 400, 0};
    const TestSlice cases[] = {
        {"clos-h100", 32, cp_split, 8, &pods128, 16},
        {"clos-h100", 32, cp_split, 8, &pods128flat, 8},
        {"clos-h100", 32, cp_split, 8, &pods192flat, 0},
        {"clos-h100", 32, "--tp-mode 1d --tp 8 --cp 2 --pp 4 --dp 4 --seq 4096 --zero 3", 8,
         &pods64, 0},
        {"clos-h100", 16, "--tp-mode 1d --tp 8 --pp 2 --dp 8", 8, &pods64, 0},
        {"clos-h100", 16, "--tp-mode 1d --tp 8 --dp 16 --zero 3 --collectives exact", 8, &pods64,
         0},
        {"clos-h100", 16, "--tp-mode 1d --tp 8 --cp 4 --pp 2 --dp 2 --seq 4096", 8, &pods64, 0},
        {"clos-h100", 8, "--tp-mode 1d --tp 8 --pp 2 --dp 4", 1, &pods32, 0},
        {"dgx-a100", 4,
         "--tp-mode 1d --tp 4 --pp 2 --dp 4 --schedule interleaved "
         "--virtual-stages 2",
         4, NULL, 0},
        {"dgx-a100", 4, "--tp-mode 1d --tp 4 --pp 2 --dp 4 --collectives exact", 4, NULL, 0},
        {"dgx-a100", 4, "--tp-mode 1d --tp 8 --sp --pp 2 --dp 2 --zero 1 --overlap-grad-reduce", 8,
         NULL, 0},
        {"dgx-a100", 4, "--tp-mode 1d --tp 4 --pp 2 --dp 4 --order dp,tp,pp", 4, NULL, 0},
        {"dgx-a100", 4, "--tp-mode 1d --tp 4 --pp 2 --dp 4 --tied-embeddings --zero 1", 4, NULL, 0},
        {"dgx-a100", 4, "--tp-mode 1d --tp 4 --dp 8 --zero 3", 4, NULL, 4},
        {"dgx-a100", 4, "--tp-mode 1d --tp 4 --local-chunks 2 --dp 4 --local-async", 4, NULL, 0},
        {"dgx-a100", 4, "--tp-mode 2d --tp 4 --pp 2 --dp 4 --micro-batch 2 --backend analytic", 4,
         NULL, 0},
        {"dgx-a100", 4, "--tp-mode 1d --tp 4 --pp 4 --dp 2 --scatter-gather", 1, NULL, 0},
        /* one port per node: the slices' inter-node traffic shares it; the replicas fold 2:1
         * (a digit of the data-parallel coordinate, replay-quotient.c) */
        {"v100-ac922", 8, "--tp-mode 1d --tp 4 --pp 2 --dp 4", 1, NULL, 16},
        /* one NIC per pair of GPUs */
        {"dgx-2", 2, "--tp-mode 1d --tp 2 --pp 2 --dp 8", 1, NULL, 0},
    };
    double worst = 0;
    for (guint c = 0; c < G_N_ELEMENTS(cases); c++) {
        g_autofree char *xml =
            test_platform_fabric(cases[c].preset, cases[c].nodes, cases[c].fabric);
        g_autofree char *one = g_strdup_printf("--topology %s %s %s", xml, split, cases[c].args);
        g_autofree char *all = g_strdup_printf("%s --tp-slices all", one);
        JsonObject *a = NULL, *b = NULL;
        g_autoptr(GPtrArray) pair = test_predict_pair(one, all, &a, &b);
        CU_ASSERT_EQUAL(json_object_get_double_member(a, "step_slices"), cases[c].slices);
        CU_ASSERT_EQUAL(json_object_get_double_member(b, "step_slices"), 1);
        double ranks = json_object_get_double_member(a, "step_ranks");
        if (ranks != (cases[c].step_ranks > 0 ? cases[c].step_ranks
                                              : json_object_get_double_member(a, "slice_ranks")))
            printf("\n    %s x%u %s: the step simulated %g ranks", cases[c].preset, cases[c].nodes,
                   cases[c].args, ranks);
        CU_ASSERT_EQUAL(ranks, cases[c].step_ranks > 0
                                   ? cases[c].step_ranks
                                   : json_object_get_double_member(a, "slice_ranks"));
        CU_ASSERT_EQUAL(json_object_get_double_member(b, "step_ranks"),
                        json_object_get_double_member(b, "slice_ranks"));
        double d = test_rows_differ(a, b);
        if (d > 1e-12)
            printf("\n    %s x%u %s: one slice against every rank: %.3g", cases[c].preset,
                   cases[c].nodes, cases[c].args, d);
        CU_ASSERT_TRUE(d <= 1e-12);
        worst = MAX(worst, d);
        g_unlink(xml);
    }
    printf("\n    one slice against every rank, %zu splits: largest relative difference %.3g",
           G_N_ELEMENTS(cases), worst);
}

/* --block-backend analytic (the blocks on an idle network) against the exact mode (SimGrid,
 * every round, every rank) where the fabric has a port per GPU: 3-D q = 4 on 64 DGX A100 GPUs,
 * measured 0.16%. (Where GPUs share a port it ignores their contention: docs/speed.md.) */
static void
test_analytic_blocks(void)
{
    g_autofree char *xml = test_platform("dgx-a100", 8);
    g_autofree char *base = g_strdup_printf("--topology %s --tp-mode 3d --layers 4", xml);
    g_autofree char *fast = g_strdup_printf("%s --block-backend analytic", base);
    g_autofree char *exact = g_strdup_printf("%s --collectives exact --tp-slices all", base);
    JsonObject *a = NULL, *b = NULL;
    g_autoptr(GPtrArray) pair = test_predict_pair(fast, exact, &a, &b);
    CU_ASSERT_STRING_EQUAL(json_object_get_string_member(a, "block_backend"), "analytic");
    CU_ASSERT_FALSE(json_object_has_member(b, "block_backend"));
    double s = json_object_get_double_member(a, "step_time_s");
    double e = json_object_get_double_member(b, "step_time_s");
    printf("\n    3-D q=4, 64 GPUs: analytic blocks %.6f s, exact %.6f s: %.2g relative", s, e,
           fabs(s - e) / e);
    CU_ASSERT_TRUE(fabs(s - e) / e < 0.01);
    CU_ASSERT_TRUE(s != e); /* a different computation, not the same one */
    /* a sweep row of the same configuration takes the option too */
    g_autofree char *dir = g_dir_make_tmp("simpar-scale-XXXXXX", NULL);
    g_autofree char *csv = g_build_filename(dir, "rows.csv", NULL);
    g_autofree char *sweep =
        g_strdup_printf("sweep --topology %s --gpus 64 --tp-mode 3d --q 4 --pp 1 --dp 1 "
                        "--layers 4 --backend simgrid --block-backend analytic -q -o %s",
                        xml, csv);
    SimparCliRun r = simpar_cli_run(sweep);
    CU_ASSERT_EQUAL(r.status, 0);
    simpar_cli_run_clear(&r);
    g_autofree char *text = NULL;
    CU_ASSERT_TRUE_FATAL(g_file_get_contents(csv, &text, NULL, NULL));
    g_autofree char *want = g_strdup_printf(",%.9g,", s);
    CU_ASSERT_PTR_NOT_NULL(strstr(text, want));
    simpar_test_tmpdir_remove(g_steal_pointer(&dir));
    g_unlink(xml);
}

/* ------------------------------------------------------ the layer on a quotient of alike nodes */

/* step_time_s and layer_ranks of `simpar predict ARGS`. */
static void
test_quotient_run(const char *args, double *step, double *ranks)
{
    JsonObject *row = NULL;
    g_autoptr(JsonParser) p = test_predict_json(args, &row);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    *step = json_object_get_double_member(row, "step_time_s");
    *ranks = json_object_get_double_member(row, "layer_ranks");
}

/* The 3-D layer (q = 4) on 8 DGX A100 nodes folds onto 4 of them (32 of 64 ranks, k mod 2):
 * with ring collectives every figure equals every rank's (the fold is exact), also when a
 * calibration makes the fabric links the bottleneck (they are scaled by the fiber); with the
 * default algorithms, whose small tree all-reduces do not fold and are timed idle, the step
 * stays within 1e-3 of every rank's and 1% of the exact mode's (measured 1.3e-4 and 1.6e-3;
 * every rank's fused collectives are 1.7e-3 from exact). The 2-D layer on 16 AC922 nodes
 * does not fold (SUMMA's broadcasts are chains that are not latency-bound), nor does a
 * generated file edited by hand (its nodes are not known to be alike). */
static void
test_quotient(void)
{
    g_autofree char *a100 = test_platform("dgx-a100", 8);
    g_autofree char *ac922 = test_platform("v100-ac922", 16);
    g_autofree char *dir = g_dir_make_tmp("simpar-scale-XXXXXX", NULL);
    g_autofree char *cal = g_build_filename(dir, "cal.json", NULL);
    g_assert(g_file_set_contents(
        cal, "{\"inter_node_bandwidth_Bps\": 20e9, \"fabric_bandwidth_Bps\": 20e9}", -1, NULL));
    const char *calibrated[] = {"", "--calibration "};
    double ring_step[2] = {0, 0};
    for (guint c = 0; c < 2; c++) {
        g_autofree char *fold =
            g_strdup_printf("--topology %s --tp-mode 3d --layers 4 --algo ring %s%s", a100,
                            calibrated[c], c > 0 ? cal : "");
        g_autofree char *all = g_strdup_printf("%s --tp-slices all", fold);
        JsonObject *a = NULL, *b = NULL;
        g_autoptr(GPtrArray) pair = test_predict_pair(fold, all, &a, &b);
        CU_ASSERT_EQUAL(json_object_get_double_member(a, "layer_ranks"), 32);
        CU_ASSERT_EQUAL(json_object_get_double_member(b, "layer_ranks"), 64);
        double d = test_rows_differ(a, b);
        printf("\n    3-D q=4 on 64 GPUs, ring collectives%s: folded against every rank %.3g",
               c > 0 ? ", fabric calibrated to 20 GB/s" : "", d);
        CU_ASSERT_TRUE(d <= 1e-12);
        ring_step[c] = json_object_get_double_member(a, "step_time_s");
    }
    CU_ASSERT_TRUE(ring_step[1] > 2 * ring_step[0]); /* the fabric binds: its scaling counts */

    g_autofree char *base = g_strdup_printf("--topology %s --tp-mode 3d --layers 4", a100);
    g_autofree char *all = g_strdup_printf("%s --tp-slices all", base);
    g_autofree char *exact = g_strdup_printf("%s --collectives exact --tp-slices all", base);
    double fold, every, ex, ranks;
    test_quotient_run(base, &fold, &ranks);
    CU_ASSERT_EQUAL(ranks, 32);
    test_quotient_run(all, &every, &ranks);
    test_quotient_run(exact, &ex, &ranks);
    printf("\n    3-D q=4, default algorithms: folded %.9f s, every rank %.9f s (%.2g), exact "
           "%.9f s (folded %.2g, every rank %.2g)",
           fold, every, fabs(fold - every) / every, ex, fabs(fold - ex) / ex,
           fabs(every - ex) / ex);
    CU_ASSERT_TRUE(fabs(fold - every) / every < 1e-3);
    CU_ASSERT_TRUE(fabs(fold - ex) / ex < 0.01);

    /* --time-budget counts the simulated ranks only: 0.12 s is enough for the fold (estimated
     * 0.07 s), not for every rank (0.17 s) */
    g_autofree char *budget = g_strdup_printf("predict %s --time-budget 0.002", base);
    SimparCliRun ok = simpar_cli_run(budget);
    CU_ASSERT_EQUAL(ok.status, 0);
    simpar_cli_run_clear(&ok);
    g_autofree char *over = g_strdup_printf("%s --tp-slices all", budget);
    SimparCliRun refused = simpar_cli_run(over);
    CU_ASSERT_PTR_NOT_NULL(strstr(refused.err, "more than --time-budget 0.002 minutes"));
    simpar_cli_run_clear(&refused);

    g_autofree char *summa = g_strdup_printf("--topology %s --tp-mode 2d --layers 4", ac922);
    test_quotient_run(summa, &fold, &ranks);
    CU_ASSERT_EQUAL(ranks, 64);
    /* an edited file is not known to hold alike nodes: no fold */
    g_autofree char *text = NULL, *edited = g_build_filename(dir, "edited.xml", NULL);
    CU_ASSERT_TRUE_FATAL(g_file_get_contents(a100, &text, NULL, NULL));
    g_autofree char *more = g_strconcat(text, "<!-- edited -->\n", NULL);
    g_assert(g_file_set_contents(edited, more, -1, NULL));
    g_autofree char *plain = g_strdup_printf("--topology %s --tp-mode 3d --layers 4", edited);
    test_quotient_run(plain, &fold, &ranks);
    CU_ASSERT_EQUAL(ranks, 64);
    CU_ASSERT_DOUBLE_EQUAL(fold, every, every * 1e-12);
    simpar_test_tmpdir_remove(g_steal_pointer(&dir));
    g_unlink(a100);
    g_unlink(ac922);
}

/* GPT-3 175B's 3-D q = 8 layer on 64 DGX A100 nodes (512 GPUs): the layer of the 16,384-GPU
 * job of docs/speed.md ("3-D with data parallelism against e1fa230") in small, four layers of
 * it. With ring collectives it folds onto j mod 2 and k mod 2 (32 ranks) and equals every
 * rank's. With the default algorithms the layer norm's 16 KiB tree all-reduces over the 8 nodes
 * of k are 82% latency on the measured preset with NCCL's protocols, under the 90% that lets a
 * tree be timed idle, and a tree's members are not alike (every rank's k = 1 and k = 5 time them
 * 54.122 and 53.906 us, by their parts in the two trees), so no fold of k is exact and the fold
 * keeps k: 128 ranks, within 1e-3 of every rank (measured 6.1e-5). At e1fa230 those trees were
 * 90.15% latency (IB ports of 25 GB/s, no protocols) and were timed idle: 32 ranks, 2.7e-5 from
 * every rank. */
static void
test_quotient_3d_q8(void)
{
    g_autofree char *a100 = test_platform("dgx-a100", 64);
    g_autofree char *base = g_strdup_printf(
        "--topology %s --model gpt3-175b --tp-mode 3d --tp 512 --dp 1 --micro-batch 256 "
        "--global-batch 256 --attention flash --recompute full --layers 4",
        a100);
    g_autofree char *ring = g_strdup_printf("%s --algo ring", base);
    g_autofree char *ring_all = g_strdup_printf("%s --tp-slices all", ring);
    JsonObject *a = NULL, *b = NULL;
    g_autoptr(GPtrArray) pair = test_predict_pair(ring, ring_all, &a, &b);
    CU_ASSERT_EQUAL(json_object_get_double_member(a, "layer_ranks"), 32);
    CU_ASSERT_EQUAL(json_object_get_double_member(b, "layer_ranks"), 512);
    double d = test_rows_differ(a, b);
    printf(
        "\n    3-D q=8 on 512 GPUs, ring collectives: folded on 32 ranks against every rank %.3g",
        d);
    CU_ASSERT_TRUE(d <= 1e-12);

    g_autofree char *all = g_strdup_printf("%s --tp-slices all", base);
    double fold, every, fold_ranks, every_ranks;
    test_quotient_run(base, &fold, &fold_ranks);
    CU_ASSERT_EQUAL(fold_ranks, 128);
    test_quotient_run(all, &every, &every_ranks);
    CU_ASSERT_EQUAL(every_ranks, 512);
    printf("\n    3-D q=8, default algorithms: folded on %g ranks %.9f s, every rank %.9f s (%.2g)",
           fold_ranks, fold, every, fabs(fold - every) / every);
    CU_ASSERT_TRUE(fabs(fold - every) / every < 1e-3);
    g_unlink(a100);
}

/* ----------------------------------------------- hierarchical all-reduce over NICs and rails */

/* simpar collective ARGS --json on `xml`: the one size's time, busbw and algorithm (transfer
 * full); NULL when it failed. */
static char *
test_collective(const char *xml, const char *args, double *time_s, double *busbw)
{
    g_autofree char *cmd =
        g_strdup_printf("collective --topology %s --op allreduce --json %s", xml, args);
    SimparCliRun r = simpar_cli_run(cmd);
    g_autoptr(JsonParser) p = json_parser_new();
    char *algo = NULL;
    if (r.status == 0 && json_parser_load_from_data(p, r.out, -1, NULL)) {
        JsonObject *o =
            json_array_get_object_element(json_node_get_array(json_parser_get_root(p)), 0);
        *time_s = json_object_get_double_member(o, "time_s");
        *busbw = json_object_get_double_member(o, "busbw_GBps");
        algo = g_strdup(json_object_get_string_member(o, "algo"));
    } else {
        printf("\n    simpar %s: %s", cmd, r.err);
    }
    simpar_cli_run_clear(&r);
    return algo;
}

/* The hierarchical all-reduce's phases run their rings at once: on DGX A100 nodes each ring
 * leaves through its GPU's own NIC (a rail), on AC922 nodes the 4 rings of a node share its
 * one port. The analytic backend, which prices the links each round shares, equals SimGrid
 * playing every round (1e-9 on rails; within 1% where SimGrid shares a port among flows that
 * start at slightly different times). The default on two DGX A100 nodes, 1 GiB: the ring over
 * 8 channels, one per rail, at >= 150 GB/s busbw (one ring through one NIC: 25). */
static void
test_hierarchical_rails(void)
{
    g_autofree char *dgx = test_platform("dgx-a100", 2), *ac922 = test_platform("v100-ac922", 4);

    const struct {
        const char *xml;
        double tol;
    } cases[] = {{dgx, 1e-9}, {ac922, 1e-2}};

    for (guint c = 0; c < G_N_ELEMENTS(cases); c++) {
        double ta = 0, tp = 0, bw;
        g_autofree char *a = test_collective(
            cases[c].xml, "--gpus 16 --bytes 64M --algo hierarchical --backend analytic", &ta, &bw);
        g_autofree char *p =
            test_collective(cases[c].xml,
                            "--gpus 16 --bytes 64M --algo hierarchical --backend simgrid "
                            "--collectives played",
                            &tp, &bw);
        CU_ASSERT_TRUE_FATAL(a != NULL && p != NULL);
        printf("\n    hierarchical 64 MiB, 16 GPUs, %s: analytic %.6g s, played %.6g s",
               c == 0 ? "DGX A100 x2" : "AC922 x4", ta, tp);
        CU_ASSERT_TRUE(fabs(ta / tp - 1) < cases[c].tol);
    }
    double t, busbw;
    g_autofree char *algo = test_collective(dgx, "--gpus 16 --bytes 1G", &t, &busbw);
    CU_ASSERT_STRING_EQUAL(algo != NULL ? algo : "", "ring");
    printf("\n    auto, 1 GiB on two DGX A100 nodes: %s, busbw %.1f GB/s", algo, busbw);
    CU_ASSERT_TRUE(busbw >= 150);
    g_unlink(dgx);
    g_unlink(ac922);
}

/* On AC922 nodes with a port per socket, a ring's 4 channels leave each node two to a port:
 * the closed form prices that sharing, so the fused transfers' idle time must too. Fused, exact
 * and played SimGrid runs of a 64 MiB all-reduce over 4 nodes agree within 1e-9 (fused once
 * counted the sharing twice: 42% slower). */
static void
test_fused_shared_ports(void)
{
    g_autofree char *ac922 = test_platform("v100-ac922", 4);
    const char *modes[] = {"played", "exact", "fused"};
    double t[3] = {0}, bw;
    for (guint i = 0; i < G_N_ELEMENTS(modes); i++) {
        g_autofree char *args = g_strdup_printf("--gpus 16 --bytes 64M --collectives %s", modes[i]);
        g_autofree char *algo = test_collective(ac922, args, &t[i], &bw);
        CU_ASSERT_STRING_EQUAL(algo != NULL ? algo : "", "ring");
    }
    printf("\n    AC922 x4, 64 MiB ring over 4 channels: played %.9g s, exact %.9g, fused %.9g",
           t[0], t[1], t[2]);
    CU_ASSERT_TRUE(fabs(t[1] / t[0] - 1) < 1e-9 && fabs(t[2] / t[0] - 1) < 1e-9);
    g_unlink(ac922);
}

/* A 16-GPU ring all-reduce's closed form before and after a calibration that halves the
 * inter-node links (the file in `data`): "before after". */
static gboolean
test_recalibrate_job(const SimparPlatform *p, gpointer data, GString *out, GError **error)
{
    const SimparCollAlgo *ring = NULL;
    g_assert(simpar_coll_algo_lookup("ring", &ring, NULL));
    guint gpus[16];
    for (guint i = 0; i < 16; i++)
        gpus[i] = i;
    SimparCollGroup g = {16, gpus, simpar_platform_net(p)};
    SimparCollParams params;
    simpar_coll_params_init(&params);
    params.proto = SIMPAR_PROTO_AUTO;
    double before = ring->closed_form(SIMPAR_COLL_ALL_REDUCE, &g, 1 << 30, 0, &params);
    if (!simpar_platform_calibrate_links(p, data, error))
        return FALSE;
    double after = ring->closed_form(SIMPAR_COLL_ALL_REDUCE, &g, 1 << 30, 0, &params);
    g_string_printf(out, "%.17g %.17g", before, after);
    return TRUE;
}

/* A calibration forgets the ring plans and protocol choices kept for the platform: the
 * channels' NIC-bound all-reduce takes about twice as long once the NICs run at half rate. */
static void
test_recalibrate(void)
{
    g_autofree char *xml = test_platform("dgx-a100", 2);
    g_autofree char *cal = NULL;
    int fd = g_file_open_tmp("simpar-cal-XXXXXX.json", &cal, NULL);
    g_assert(fd >= 0);
    close(fd);
    g_assert(g_file_set_contents(cal, "{\"inter_node_bandwidth_Bps\": 12e9}", -1, NULL));
    g_autoptr(GString) out = g_string_new(NULL);
    CU_ASSERT_TRUE_FATAL(simpar_platform_run(xml, test_recalibrate_job, (gpointer) cal, out, NULL));
    double before = 0, after = 0;
    CU_ASSERT_EQUAL(sscanf(out->str, "%lf %lf", &before, &after), 2);
    printf("\n    1 GiB all-reduce on 2 DGX A100 nodes: %.6g s, %.6g s with half-rate NICs", before,
           after);
    CU_ASSERT_TRUE(after / before > 1.8 && after / before < 2.05);
    g_unlink(cal);
    g_unlink(xml);
}

/* GPU 0's compute model figures as the platform gives them: "gemm_eff_max gemm_half_dim
 * launch_s". */
static gboolean
test_gpu_job(const SimparPlatform *p, gpointer data, GString *out, GError **error)
{
    (void) data;
    SimparGpu gpu;
    if (!simpar_platform_gpu(p, 0, &gpu, error))
        return FALSE;
    g_string_printf(out, "%.17g %.17g %.17g", gpu.gemm_eff_max, gpu.gemm_half_dim, gpu.launch_s);
    return TRUE;
}

/* The measured compute figures a preset writes as host properties reach the compute model
 * (H100: fitted to XLA's GEMM table); a preset without them keeps the defaults. */
static void
test_measured_gpu(void)
{
    const struct {
        const char *preset;
        double eff, half, launch;
    } cases[] = {{"dgx-h100", 0.8956, 74, 6.08e-6}, {"dgx-2", 0.85, 128, 5e-6}};

    for (guint c = 0; c < G_N_ELEMENTS(cases); c++) {
        g_autofree char *xml = test_platform(cases[c].preset, 1);
        g_autoptr(GString) out = g_string_new(NULL);
        CU_ASSERT_TRUE_FATAL(simpar_platform_run(xml, test_gpu_job, NULL, out, NULL));
        double eff = 0, half = 0, launch = 0;
        CU_ASSERT_EQUAL(sscanf(out->str, "%lf %lf %lf", &eff, &half, &launch), 3);
        CU_ASSERT_TRUE(eff == cases[c].eff && half == cases[c].half && launch == cases[c].launch);
        g_unlink(xml);
    }
}

static CU_TestInfo scale_tests[] = {
    {"the ring's idle evaluator and fused transfers equal its expansion's bit for bit",
     test_ring_eval},
    {"routes of generated platforms equal SimGrid's for every pair, links included",
     test_generated_routes},
    {"a lone ring evaluated equals the ring played round by round on SimGrid", test_lone_ring},
    {"one tensor-parallel slice gives the step of every rank, and is refused where slices meet",
     test_slices},
    {"blocks timed on the analytic backend stay within 1% of the exact mode on a port per GPU",
     test_analytic_blocks},
    {"the layer on a quotient of alike nodes equals every rank's with rings, and is refused "
     "where a bandwidth-bound collective does not fold",
     test_quotient},
    {"3-D q = 8's layer folds exactly onto 32 ranks with rings, and keeps the axis of its "
     "layer-norm trees that are not latency-bound",
     test_quotient_3d_q8},
    {"hierarchical all-reduce prices the NICs its rings share; the ring's channels use the rails",
     test_hierarchical_rails},
    {"fused channel rings count the ports their members share once", test_fused_shared_ports},
    {"a preset's measured compute figures reach the compute model", test_measured_gpu},
    {"a calibration forgets the kept ring plans and protocol choices", test_recalibrate},
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
