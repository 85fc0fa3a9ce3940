/* test-topology.c - `simpar topology`: every preset writes a platform SimGrid loads, with one
 * host per GPU carrying the GPU's figures and routes whose latency and bandwidth are the
 * datasheet figures (tests/ keeps its own copy of them: an oracle independent of
 * topologies/topology.c); the shipped topologies/ files are its output byte for byte; bad input
 * gets exit 2 and one line.
 *
 * The binary's path comes from SIMPAR_BIN; the working directory is the source root. SimGrid
 * loads one platform per process, so each platform is checked in a forked child.
 */
#include "cli-run.h"
#include "simpar-test.h"
#include "topology.h"
#include <glib/gstdio.h>
#include <math.h>
#include <simgrid/actor.h>
#include <simgrid/engine.h>
#include <simgrid/host.h>
#include <simgrid/link.h>
#include <sys/wait.h>
#include <unistd.h>
#include <xbt/config.h>
#include <xbt/dynar.h>
#include <xbt/log.h>

/* A route to check: its latency (s) and bottleneck (B/s), and one link it must take. */
typedef struct {
    const char *src, *dst;
    double latency, bandwidth;
    const char *via;
} TopoPair;

typedef struct {
    const char *preset, *model, *shipped; /* shipped: topologies/ file of shipped_nodes nodes */
    guint gpus, shipped_nodes;
    double bf16, mem_bytes; /* two of the GPU's props */
    TopoPair pairs[3]; /* same node, other node (same rail), node 4 (other rail): needs 5 nodes */
    gboolean unfitted; /* a GPU with bf16 but no GEMM figures fitted to a measured table */
} TopoExpect;

/* Achievable rates from public sources (topologies/presets.ini names them): NCCL's per-link
 * NVLink figures (20.0 GB/s per NVLink 2 or 3 link, 20.6 per NVLink 4 link; src/graph/topo.h),
 * InfiniBand at 96% of the line rate (nccl-tests: 24 and 48 GB/s over 200 and 400 Gb/s; NCCL's
 * 12 per 100 Gb/s), plus the documented latencies: NVLink 1 us GPU to GPU (0.5 us each side of
 * an NVSwitch), PCIe and X-bus 0.5 us, IB port 1 us, rail to rail 0.5 us. */
static const TopoExpect expects[] = {
    {"v100-ac922",
     "V100-SXM2-16GB",
     "topologies/v100x64.xml",
     4,
     16,
     0, /* V100: no bf16 */
     16.0 * (1 << 30),
     {{"node0-gpu0", "node0-gpu1", 1e-6, 60e9, "node0-nvlink01"}, /* 3 sibling NVLink 2 links */
      {"node0-gpu2", "node1-gpu2", 4e-6, 12e9, "node1-ib1"},      /* socket 1's own port, EDR */
      {"node0-gpu1", "node4-gpu0", 4e-6, 12e9, "node4-ib0"}},
     FALSE},
    {"dgx-a100",
     "A100-SXM4-80GB",
     "topologies/dgx-a100x64.xml",
     8,
     8,
     312e12,
     80.0 * (1 << 30),
     {{"node0-gpu0", "node0-gpu7", 1e-6, 240e9, "node0-nvlink7"}, /* 12 NVLink 3 links */
      {"node0-gpu3", "node1-gpu3", 3e-6, 24e9, "node1-ib3"},      /* own rail: HDR */
      {"node0-gpu1", "node4-gpu6", 3.5e-6, 24e9, "spine-1-6"}},
     FALSE},
    {"dgx-h100",
     "H100-SXM5-80GB",
     "topologies/dgx-h100x64.xml",
     8,
     8,
     989e12,
     80.0 * (1 << 30),
     {{"node0-gpu2", "node0-gpu5", 0.82e-6, 370.8e9, "node0-nvlink5"}, /* 18 NVLink 4 links */
      {"node0-gpu7", "node1-gpu7", 3e-6, 48e9, "node0-ib7"},           /* NDR */
      {"node0-gpu0", "node4-gpu3", 3.5e-6, 48e9, "spine-0-3"}},
     FALSE},
    {"dgx-2",
     "V100-SXM3-32GB",
     "topologies/dgx2x64.xml",
     16,
     4,
     0,
     32.0 * (1 << 30),
     {{"node0-gpu0", "node0-gpu15", 1e-6, 120e9, "node0-nvlink15"}, /* 6 NVLink 2 links */
      {"node0-gpu5", "node1-gpu4", 3e-6, 12e9, "node1-ib2"},        /* GPUs 4, 5 share NIC 2 */
      {"node0-gpu5", "node4-gpu14", 3.5e-6, 12e9, "spine-2-7"}},
     FALSE},
    /* Clos (none shipped): two nodes per rack, so node 4 is in rack 2 of pod 0; a GPU's own PCIe
     * link and 400 Gb/s port, one uplink hop of 0.25 us each way between racks */
    {"clos-h100",
     "H100-SXM5-80GB",
     NULL,
     8,
     0,
     989e12,
     80.0 * (1 << 30),
     {{"node0-gpu2", "node0-gpu5", 0.82e-6, 370.8e9, "node0-nvlink5"},
      {"node0-gpu7", "node1-gpu7", 3e-6, 48e9, "node1-ib7"},
      {"node0-gpu0", "node4-gpu3", 3.5e-6, 48e9, "rack2-up"}},
     FALSE},
    {"clos-h200",
     "H200-SXM-141GB",
     NULL,
     8,
     0,
     989e12,
     141e9,
     {{"node0-gpu2", "node0-gpu5", 0.82e-6, 370.8e9, "node0-nvlink5"},
      {"node0-gpu7", "node1-gpu7", 3e-6, 48e9, "node0-ib7"},
      {"node0-gpu0", "node4-gpu3", 3.5e-6, 48e9, "rack0-up"}},
     FALSE},
    /* Blackwell: 18 NVLink 5 links x NCCL's 40.1 GB/s; a 400 Gb/s ConnectX-7 per GPU */
    {"dgx-b200",
     "B200-SXM-180GB",
     NULL,
     8,
     0,
     2250e12,
     180e9,
     {{"node0-gpu2", "node0-gpu5", 1e-6, 721.8e9, "node0-nvlink5"},
      {"node0-gpu7", "node1-gpu7", 3e-6, 48e9, "node1-ib7"},
      {"node0-gpu0", "node4-gpu3", 3.5e-6, 48e9, "spine-0-3"}},
     TRUE},
    /* a rack of 72 GPUs is one node; GPU g's NIC on rail g mod 4 (its place in the compute
     * tray): GPUs 7 and 3 share rail 3, GPUs 0 and 5 cross from rail 0 to rail 1 */
    {"gb200-nvl72",
     "GB200-B200-186GB",
     NULL,
     72,
     0,
     2500e12,
     186e9,
     {{"node0-gpu2", "node0-gpu65", 1e-6, 721.8e9, "node0-nvlink65"},
      {"node0-gpu7", "node1-gpu3", 3e-6, 48e9, "node1-ib3"},
      {"node0-gpu0", "node4-gpu5", 3.5e-6, 48e9, "spine-0-1"}},
     TRUE},
};

static const char *const gpu_props[] = {"gpu_model",       "peak_fp16_flops", "peak_bf16_flops",
                                        "peak_fp32_flops", "peak_fp64_flops", "mem_bandwidth_Bps",
                                        "mem_bytes"};

/* ---------------------------------------------------------------- running simpar */

/* Generates preset x nodes into dir with the further options `more` ("" for none); returns the
 * file's path. */
static char *
topo_generate_with(const char *dir, const char *preset, guint nodes, const char *more)
{
    char *path = g_strdup_printf("%s/%s-%u.xml", dir, preset, nodes);
    const char *count = g_str_equal(preset, "gb200-nvl72") ? "--racks" : "--nodes";
    g_autofree char *args =
        g_strdup_printf("topology --preset %s %s %u -o %s%s", preset, count, nodes, path, more);
    SimparCliRun r = simpar_cli_run(args);
    if (r.status != 0)
        printf("\n    simpar %s -> status %d: %s", args, r.status, r.err);
    CU_ASSERT_EQUAL(r.status, 0);
    simpar_cli_run_clear(&r);
    return path;
}

static char *
topo_generate(const char *dir, const char *preset, guint nodes)
{
    return topo_generate_with(dir, preset, nodes, "");
}

/* ---------------------------------------------------------------- hosts and props */

typedef struct {
    GHashTable *hosts; /* host id -> GHashTable of its prop ids -> values */
    GHashTable *props; /* of the open <host>, or NULL */
} TopoHosts;

static void
topo_start(GMarkupParseContext *ctx, const char *element, const char **names, const char **values,
           gpointer data, GError **error)
{
    (void) ctx, (void) error;
    TopoHosts *h = data;
    const char *id = NULL, *value = NULL;
    for (guint i = 0; names[i] != NULL; i++) {
        if (g_str_equal(names[i], "id"))
            id = values[i];
        if (g_str_equal(names[i], "value"))
            value = values[i];
    }
    if (g_str_equal(element, "host")) {
        h->props = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
        g_hash_table_insert(h->hosts, g_strdup(id), h->props);
    } else if (g_str_equal(element, "prop") && h->props != NULL) {
        g_hash_table_insert(h->props, g_strdup(id), g_strdup(value));
    }
}

static void
topo_end(GMarkupParseContext *ctx, const char *element, gpointer data, GError **error)
{
    (void) ctx, (void) error;
    if (g_str_equal(element, "host"))
        ((TopoHosts *) data)->props = NULL;
}

/* The <host>s of a platform file, each with its props (transfer full). */
static GHashTable *
topo_hosts(const char *path)
{
    g_autofree char *text = NULL;
    g_assert(g_file_get_contents(path, &text, NULL, NULL));
    TopoHosts h = {
        g_hash_table_new_full(g_str_hash, g_str_equal, g_free, (GDestroyNotify) g_hash_table_unref),
        NULL};
    GMarkupParser parser = {topo_start, topo_end, NULL, NULL, NULL};
    g_autoptr(GMarkupParseContext) ctx = g_markup_parse_context_new(&parser, 0, &h, NULL);
    g_autoptr(GError) error = NULL;
    gboolean ok = g_markup_parse_context_parse(ctx, text, -1, &error) &&
                  g_markup_parse_context_end_parse(ctx, &error);
    if (!ok)
        printf("\n    %s: %s", path, error->message);
    CU_ASSERT_TRUE(ok);
    return h.hosts;
}

/* nodes x gpus hosts named node<N>-gpu<G>, each with every GPU prop. */
static void
topo_check_hosts(const char *path, const TopoExpect *e, guint nodes)
{
    g_autoptr(GHashTable) hosts = topo_hosts(path);
    CU_ASSERT_EQUAL(g_hash_table_size(hosts), nodes * e->gpus);
    for (guint n = 0; n < nodes; n++) {
        for (guint g = 0; g < e->gpus; g++) {
            g_autofree char *id = g_strdup_printf("node%u-gpu%u", n, g);
            GHashTable *props = g_hash_table_lookup(hosts, id);
            CU_ASSERT_PTR_NOT_NULL_FATAL(props);
            for (guint i = 0; i < G_N_ELEMENTS(gpu_props); i++)
                CU_ASSERT_TRUE(g_hash_table_contains(props, gpu_props[i]));
            CU_ASSERT_STRING_EQUAL(g_hash_table_lookup(props, "gpu_model"), e->model);
            CU_ASSERT_EQUAL(g_ascii_strtod(g_hash_table_lookup(props, "peak_bf16_flops"), NULL),
                            e->bf16);
            CU_ASSERT_EQUAL(g_ascii_strtod(g_hash_table_lookup(props, "mem_bytes"), NULL),
                            e->mem_bytes);
            /* H100, H200 and A100 (the GPUs with bf16): the compute model's figures fitted to
             * XLA's measured GEMM table (H100's, held against A100's best shapes); the V100s:
             * none, the defaults */
            const char *eff = g_hash_table_lookup(props, "gemm_eff_max");
            gboolean measured = e->bf16 > 0 && !e->unfitted;
            CU_ASSERT_STRING_EQUAL(eff != NULL ? eff : "-", measured ? "0.8956" : "-");
        }
    }
}

/* ---------------------------------------------------------------- routes on SimGrid */

typedef struct {
    double latency, bandwidth;
    gboolean via_found;
} TopoRoute;

/* The child's state: the pairs to query, and what the actor found. */
static const TopoPair *topo_pairs;
static guint topo_n_pairs;
static TopoRoute topo_routes[3];

/* SimGrid names the directions of a SPLITDUPLEX link <id>_UP and <id>_DOWN. */
static gboolean
topo_route_has(sg_host_t src, sg_host_t dst, const char *link)
{
    xbt_dynar_t links = xbt_dynar_new(sizeof(sg_link_t), NULL);
    sg_host_get_route(src, dst, links);
    gboolean found = FALSE;
    gsize len = strlen(link);
    for (unsigned long i = 0; i < xbt_dynar_length(links); i++) {
        const char *name = sg_link_get_name(xbt_dynar_get_as(links, i, sg_link_t));
        found |= strncmp(name, link, len) == 0 && (name[len] == '\0' || name[len] == '_');
    }
    xbt_dynar_free(&links);
    return found;
}

/* Route queries must wait for the run: Dijkstra zones are sealed when it starts. */
static void
topo_actor(int argc, char **argv)
{
    (void) argc, (void) argv;
    for (guint i = 0; i < topo_n_pairs; i++) {
        sg_host_t src = sg_host_by_name(topo_pairs[i].src);
        sg_host_t dst = sg_host_by_name(topo_pairs[i].dst);
        topo_routes[i].latency = sg_host_get_route_latency(src, dst);
        topo_routes[i].bandwidth = sg_host_get_route_bandwidth(src, dst);
        topo_routes[i].via_found = topo_route_has(src, dst, topo_pairs[i].via);
    }
}

static void
topo_child(const char *path, int out)
{
    int argc = 1;
    char *argv[] = {(char *) "test-topology", NULL};
    xbt_log_control_set("xbt_cfg.thres:warning");
    simgrid_init(&argc, argv);
    sg_cfg_set_string("network/model", "CM02");
    sg_cfg_set_boolean("network/crosstraffic", "no");
    simgrid_load_platform(path);
    sg_actor_create("routes", sg_host_by_name("node0-gpu0"), topo_actor, 0, NULL);
    simgrid_run();
    gsize size = topo_n_pairs * sizeof(TopoRoute);
    _exit(write(out, topo_routes, size) == (ssize_t) size ? 0 : 1);
}

/* Loads the platform in a child and checks the pairs that exist with `nodes` nodes. */
static void
topo_check_routes(const char *path, const TopoExpect *e, guint nodes)
{
    topo_pairs = e->pairs;
    topo_n_pairs = nodes >= 5 ? 3 : nodes >= 2 ? 2 : 1;
    int fds[2];
    g_assert(pipe(fds) == 0);
    fflush(NULL);
    pid_t pid = fork();
    g_assert(pid >= 0);
    if (pid == 0)
        topo_child(path, fds[1]);
    close(fds[1]);
    TopoRoute got[3];
    gsize size = topo_n_pairs * sizeof(TopoRoute);
    gboolean read_all = read(fds[0], got, size) == (ssize_t) size;
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    CU_ASSERT_TRUE_FATAL(read_all && WIFEXITED(status) && WEXITSTATUS(status) == 0);
    for (guint i = 0; i < topo_n_pairs; i++) {
        const TopoPair *want = &e->pairs[i];
        gboolean ok = fabs(got[i].latency - want->latency) <= 1e-9 * want->latency &&
                      fabs(got[i].bandwidth - want->bandwidth) <= 1e-9 * want->bandwidth &&
                      got[i].via_found;
        if (!ok)
            printf("\n    %s %s -> %s: %g s, %g B/s, via %s %s", e->preset, want->src, want->dst,
                   got[i].latency, got[i].bandwidth, want->via, got[i].via_found ? "yes" : "no");
        CU_ASSERT_TRUE(ok);
    }
}

/* ---------------------------------------------------------------- the tests */

static char *topo_dir; /* a fresh temporary directory per test */

static void
topo_setup(void)
{
    topo_dir = g_dir_make_tmp("simpar-topology-XXXXXX", NULL);
    g_assert(topo_dir != NULL);
}

static void
topo_teardown(void)
{
    g_autoptr(GDir) dir = g_dir_open(topo_dir, 0, NULL);
    for (const char *f; dir != NULL && (f = g_dir_read_name(dir)) != NULL;) {
        g_autofree char *path = g_build_filename(topo_dir, f, NULL);
        g_remove(path);
    }
    g_rmdir(topo_dir);
    g_clear_pointer(&topo_dir, g_free);
}

static void
test_hosts(void)
{
    static const guint sizes[] = {1, 2, 5};
    topo_setup();
    for (guint i = 0; i < G_N_ELEMENTS(expects); i++) {
        for (guint s = 0; s < G_N_ELEMENTS(sizes); s++) {
            g_autofree char *path = topo_generate(topo_dir, expects[i].preset, sizes[s]);
            topo_check_hosts(path, &expects[i], sizes[s]);
        }
    }
    topo_teardown();
}

static void
test_routes(void)
{
    static const guint sizes[] = {1, 2, 5};
    topo_setup();
    for (guint i = 0; i < G_N_ELEMENTS(expects); i++) {
        for (guint s = 0; s < G_N_ELEMENTS(sizes); s++) {
            g_autofree char *path = topo_generate(topo_dir, expects[i].preset, sizes[s]);
            topo_check_routes(path, &expects[i], sizes[s]);
        }
    }
    topo_teardown();
}

static gboolean
topo_same_bytes(const char *a, const char *b)
{
    g_autofree char *ta = NULL, *tb = NULL;
    gsize la = 0, lb = 0;
    gboolean ok = g_file_get_contents(a, &ta, &la, NULL) &&
                  g_file_get_contents(b, &tb, &lb, NULL) && la == lb && memcmp(ta, tb, la) == 0;
    if (!ok)
        printf("\n    %s and %s differ", a, b);
    return ok;
}

static void
test_shipped(void)
{
    topo_setup();
    for (guint i = 0; i < G_N_ELEMENTS(expects); i++) {
        const TopoExpect *e = &expects[i];
        if (e->shipped == NULL)
            continue;
        g_autofree char *path = topo_generate(topo_dir, e->preset, e->shipped_nodes);
        CU_ASSERT_TRUE(topo_same_bytes(path, e->shipped));
        topo_check_routes(e->shipped, e, e->shipped_nodes);
    }
    topo_teardown();
}

/* The Clos options reshape the tiers: one node per rack, pods of two racks (nodes 0-1, 2-3, 4),
 * 200 Gb/s ports (24 GB/s: NCCL's 12 per 100 Gb/s), the aggregation tier 4:1. A rack's uplink
 * carries its 8 ports, 192 GB/s; a pod's its 16 ports over 4, 96 GB/s; between pods a route
 * climbs four uplinks. */
static void
test_fabric_options(void)
{
    static const TopoExpect reshaped = {
        "clos-h100",
        "H100-SXM5-80GB",
        NULL,
        8,
        0,
        989e12,
        80.0 * (1 << 30),
        {{"node0-gpu1", "node0-gpu6", 0.82e-6, 370.8e9, "node0-nvlink1"},
         {"node0-gpu7", "node1-gpu7", 3.5e-6, 24e9, "rack1-up"},
         {"node1-gpu0", "node4-gpu3", 4e-6, 24e9, "pod2-up"}},
        FALSE};
    topo_setup();
    g_autofree char *path =
        topo_generate_with(topo_dir, "clos-h100", 5,
                           " --rack-nodes 1 --pod-gpus 16 --oversubscription 4 --nic-gbps 200");
    topo_check_hosts(path, &reshaped, 5);
    topo_check_routes(path, &reshaped, 5);
    g_autofree char *xml = NULL;
    g_assert(g_file_get_contents(path, &xml, NULL, NULL));
    CU_ASSERT_PTR_NOT_NULL(strstr(xml, "<link id=\"rack4-up\" bandwidth=\"192GBps\""));
    CU_ASSERT_PTR_NOT_NULL(strstr(xml, "<link id=\"pod2-up\" bandwidth=\"96GBps\""));
    CU_ASSERT_PTR_NULL(strstr(xml, "pod3-up"));
    /* the header says the preset's description is not this file's shape (words wrap) */
    g_autoptr(GRegex) space = g_regex_new("\\s+", 0, 0, NULL);
    g_autofree char *flat = g_regex_replace_literal(space, xml, -1, 0, " ", 0, NULL);
    CU_ASSERT_PTR_NOT_NULL(
        strstr(flat, "oversubscribed 7:1; this file's shape: the options below"));
    CU_ASSERT_PTR_NOT_NULL(
        strstr(flat, "rack-nodes 1, pod-gpus 16, oversubscription 4, nic-gbps 200"));
    topo_teardown();
}

static void
test_repeatable(void)
{
    topo_setup();
    for (guint i = 0; i < G_N_ELEMENTS(expects); i++) {
        g_autofree char *first = topo_generate(topo_dir, expects[i].preset, 3);
        g_autofree char *second = g_strconcat(first, ".again", NULL);
        g_assert(g_rename(first, second) == 0);
        g_autofree char *third = topo_generate(topo_dir, expects[i].preset, 3);
        CU_ASSERT_TRUE(topo_same_bytes(second, third));
    }
    topo_teardown();
}

/* Exit 2, nothing on stdout, one stderr line containing `want`. */
static void
topo_refuses(const char *args, const char *want)
{
    SimparCliRun r = simpar_cli_run(args);
    gboolean ok = r.status == 2 && strstr(r.err, want) != NULL && r.out[0] == '\0' &&
                  strchr(r.err, '\n') == r.err + strlen(r.err) - 1;
    if (!ok)
        printf("\n    simpar %s -> status %d, stderr: %s", args, r.status, r.err);
    CU_ASSERT_TRUE(ok);
    simpar_cli_run_clear(&r);
}

static void
test_bad_input(void)
{
    const char *valid = "(valid: v100-ac922, dgx-a100, dgx-h100, h100-sxm, h200-sxm, dgx-2";
    g_autofree char *unknown = g_strdup_printf("--preset dgx-x100: unknown preset %s", valid);
    g_autofree char *missing = g_strdup_printf("--preset NAME is required %s", valid);
    topo_refuses("topology --preset dgx-x100 --nodes 2 -o /tmp/x.xml", unknown);
    /* rack-scale presets count racks, and no file holds more than 262,144 GPUs */
    topo_refuses("topology -p gb200-nvl72 --racks 0 -o /tmp/x.xml",
                 "--racks 0 is out of range (1 to 3640): racks of 72 GPUs, at most 262144 GPUs");
    topo_refuses("topology -p gb200-nvl72 --racks 3641 -o /tmp/x.xml",
                 "--racks 3641 is out of range (1 to 3640)");
    topo_refuses("topology -p gb200-nvl72 --racks 99999999999 -o /tmp/x.xml",
                 "--racks 99999999999 is out of range (1 to 3640)");
    topo_refuses("topology -p gb200-nvl72 -o /tmp/x.xml", "--racks N is required (1 to 3640)");
    topo_refuses("topology -p gb200-nvl72 --nodes 2 -o /tmp/x.xml",
                 "--preset gb200-nvl72 counts racks: give --racks N, not --nodes");
    topo_refuses("topology -p dgx-b200 --racks 2 -o /tmp/x.xml",
                 "--preset dgx-b200 counts nodes: give --nodes N, not --racks");
    topo_refuses("topology -p dgx-b200 --nodes 16385 -o /tmp/x.xml",
                 "--nodes 16385 is out of range (1 to 16384)");
    topo_refuses("topology --nodes 2 -o /tmp/x.xml", missing);
    topo_refuses("topology -p dgx-a100 --nodes 0 -o /tmp/x.xml", "--nodes 0 is out of range (1 to "
                                                                 "16384)");
    topo_refuses("topology -p dgx-a100 --nodes -1 -o /tmp/x.xml", "--nodes -1 is out of range (1 "
                                                                  "to 16384)");
    /* 65,536 nodes: a file SimGrid's parser did not load in 400 s */
    topo_refuses("topology -p dgx-h100 --nodes 65536 -o /tmp/x.xml",
                 "--nodes 65536 is out of range (1 to 16384)");
    topo_refuses("topology -p dgx-a100 --nodes 10000000 -o /tmp/x.xml",
                 "--nodes 10000000 is out of range (1 to 16384)");
    topo_refuses("topology -p dgx-a100 -o /tmp/x.xml", "--nodes N is required (1 to 16384)");
    topo_refuses("topology -p dgx-a100 --nodes many -o /tmp/x.xml", "Cannot parse integer value");
    topo_refuses("topology -p dgx-a100 --nodes 2", "-o FILE is required");
    topo_refuses("topology -p dgx-a100 --nodes 2 -o /nonexistent/dir/x.xml",
                 "-o '/nonexistent/dir/x.xml': its folder does not exist");
    topo_refuses("topology -p dgx-a100 --nodes 2 -o /tmp/x.xml extra", "unexpected argument");
    topo_refuses("topology -p clos-h100 -n 4 -o /tmp/x.xml --rack-nodes 0",
                 "--rack-nodes 0 is out of range (1 to 1024 servers per rack)");
    topo_refuses("topology -p clos-h100 -n 4 -o /tmp/x.xml --rack-nodes -3",
                 "--rack-nodes -3 is out of range (a positive count)");
    topo_refuses("topology -p clos-h100 -n 4 -o /tmp/x.xml --pod-gpus 100",
                 "--pod-gpus 100 must be a whole number of racks of 16 GPUs (2 nodes of 8)");
    topo_refuses("topology -p clos-h100 -n 4 -o /tmp/x.xml --oversubscription 0.5",
                 "--oversubscription 0.5 is out of range (1 to 64:");
    topo_refuses("topology -p clos-h100 -n 4 -o /tmp/x.xml --pod-gpus 16 --oversubscription 20",
                 "--oversubscription 20 is out of range (1 to 16:");
    topo_refuses("topology -p clos-h100 -n 4 -o /tmp/x.xml --oversubscription nan",
                 "--oversubscription nan is not a number");
    topo_refuses("topology -p clos-h100 -n 4 -o /tmp/x.xml --nic-gbps 0",
                 "--nic-gbps 0 is out of range (1 to 3200 Gb/s per NIC port)");
    topo_refuses("topology -p clos-h100 -n 4 -o /tmp/x.xml --nic-gbps 4x",
                 "--nic-gbps 4x is not a number");
    topo_refuses("topology -p dgx-h100 -n 4 -o /tmp/x.xml --rack-nodes 2",
                 "preset dgx-h100 is not a Clos fabric");
    topo_refuses(
        "topologyy",
        "(valid: schedule, predict, collective, topology, sweep, validate, calibrate, plot;");
}

/* Any number of racks: hosts of every rack, and the file loads and routes (2 and 37 racks). */
static void
test_rack_sizes(void)
{
    const TopoExpect *e = &expects[G_N_ELEMENTS(expects) - 1];
    CU_ASSERT_STRING_EQUAL_FATAL(e->preset, "gb200-nvl72");
    static const guint sizes[] = {3, 8, 37};
    topo_setup();
    for (guint s = 0; s < G_N_ELEMENTS(sizes); s++) {
        g_autofree char *path = topo_generate(topo_dir, e->preset, sizes[s]);
        topo_check_hosts(path, e, sizes[s]);
        if (sizes[s] >= 5) /* the pairs name node 4 */
            topo_check_routes(path, e, sizes[s]);
    }
    topo_teardown();
}

/* busbw_GBps of `simpar collective --op OP` on `gpus` GPUs of `path`, `bytes` each; *algo
 * (unless NULL) the algorithm it ran (transfer full). */
static double
topo_collective(const char *path, const char *op, guint gpus, const char *bytes, const char *how,
                char **algo)
{
    g_autofree char *args = g_strdup_printf("collective --topology %s --op %s --gpus %u "
                                            "--bytes %s %s --json",
                                            path, op, gpus, bytes, how);
    SimparCliRun r = simpar_cli_run(args);
    CU_ASSERT_EQUAL(r.status, 0);
    const char *at = strstr(r.out, "\"busbw_GBps\" : ");
    double busbw = at != NULL ? g_ascii_strtod(at + strlen("\"busbw_GBps\" : "), NULL) : 0;
    const char *name = strstr(r.out, "\"algo\" : \"");
    if (algo != NULL)
        *algo = name != NULL ? g_strndup(name + strlen("\"algo\" : \""),
                                         strcspn(name + strlen("\"algo\" : \""), "\""))
                             : g_strdup("");
    simpar_cli_run_clear(&r);
    return busbw;
}

static double
topo_busbw_run(const char *path, const char *op, guint gpus, const char *bytes, const char *how)
{
    return topo_collective(path, op, gpus, bytes, how, NULL);
}

static double
topo_busbw_op(const char *path, const char *op, guint gpus, const char *bytes)
{
    return topo_busbw_run(path, op, gpus, bytes, "--backend analytic");
}

static double
topo_busbw(const char *path, guint gpus, const char *bytes)
{
    return topo_busbw_op(path, "allreduce", gpus, bytes);
}

/* GB200 NVL72 racks of 64 GPUs (--rack-gpus 64: 16 of the 18 compute trays), as training jobs
 * use them: 2 racks hold node0-gpu0..63 and node1-gpu0..63, every GPU's figures, NVLink, NIC
 * and rail the full rack's; the file is recognised as generated (its header read back: the
 * preset's 72-GPU racks would not regenerate it) and the C API writes the same bytes. An
 * all-reduce of 64 GPUs inside a rack has the same busbw on racks of 64 and of 72; of 128 GPUs,
 * two racks of 64 run NVLink SHARP in each and NVLS-tree over InfiniBand between them, where
 * 72 + 56 GPUs of two full racks fall back to the ring over the 48 GB/s NICs. */
static void
test_rack_gpus(void)
{
    const TopoExpect *full = &expects[G_N_ELEMENTS(expects) - 1];
    CU_ASSERT_STRING_EQUAL_FATAL(full->preset, "gb200-nvl72");
    TopoExpect e = *full;
    e.gpus = 64;
    e.pairs[0] = (TopoPair){"node0-gpu2", "node0-gpu63", 1e-6, 721.8e9, "node0-nvlink63"};
    topo_setup();
    g_autofree char *r72 = g_strdup_printf("%s/full.xml", topo_dir);
    g_autofree char *r72_from = topo_generate(topo_dir, e.preset, 2);
    g_assert(g_rename(r72_from, r72) == 0);
    g_autofree char *path = topo_generate_with(topo_dir, e.preset, 2, " --rack-gpus 64");
    topo_check_hosts(path, &e, 2); /* 128 hosts, node0-gpu0..63 and node1-gpu0..63 */
    topo_check_routes(path, &e, 2);
    g_autofree char *xml = NULL;
    gsize len = 0;
    g_assert(g_file_get_contents(path, &xml, &len, NULL));
    CU_ASSERT_PTR_NOT_NULL(strstr(xml, "<!-- Preset gb200-nvl72, 2 nodes, 128 GPUs:"));
    CU_ASSERT_PTR_NULL(strstr(xml, "node0-gpu64"));
    CU_ASSERT_PTR_NOT_NULL(strstr(xml, "<link id=\"node1-ib63\""));
    CU_ASSERT_PTR_NULL(strstr(xml, "node1-ib64"));
    guint nodes = 0;
    SimparFabricSpec fabric;
    const SimparTopologyPreset *p = simpar_topology_lookup("gb200-nvl72");
    CU_ASSERT_PTR_EQUAL(simpar_topology_recognise(xml, len, &nodes, &fabric), p);
    CU_ASSERT_EQUAL(nodes, 2);
    CU_ASSERT_EQUAL(fabric.rack_gpus, 64);
    CU_ASSERT_EQUAL(simpar_topology_node_gpus(p, &fabric), 64);
    g_autofree char *api = simpar_topology_generate_racks(p, 2, 64);
    CU_ASSERT_TRUE(strlen(api) == len && memcmp(api, xml, len) == 0);
    /* 72: the preset's file byte for byte, recognised with its racks of 72 */
    g_autofree char *api72 = simpar_topology_generate_racks(p, 2, 72), *xml72 = NULL;
    g_assert(g_file_get_contents(r72, &xml72, &len, NULL));
    CU_ASSERT_TRUE(strlen(api72) == len && memcmp(api72, xml72, len) == 0);
    CU_ASSERT_PTR_EQUAL(simpar_topology_recognise(xml72, len, &nodes, &fabric), p);
    CU_ASSERT_EQUAL(fabric.rack_gpus, 72);
    /* the same per-GPU NVLink figures inside a rack, on both backends */
    const char *backends[] = {"--backend analytic", "--backend simgrid"};
    for (guint b = 0; b < G_N_ELEMENTS(backends); b++) {
        double on64 = topo_busbw_run(path, "allreduce", 64, "1073741824", backends[b]);
        double on72 = topo_busbw_run(r72, "allreduce", 64, "1073741824", backends[b]);
        if (!(on64 > 600 && fabs(on64 / on72 - 1) <= 1e-12))
            printf("\n    64 GPUs %s: %.6f GB/s on racks of 64, %.6f on racks of 72", backends[b],
                   on64, on72);
        CU_ASSERT_TRUE(on64 > 600 && fabs(on64 / on72 - 1) <= 1e-12);
    }
    /* 128 GPUs: two whole racks of 64 (NVLS-tree), or 72 + 56 of two full racks (the ring) */
    g_autofree char *algo64 = NULL, *algo72 = NULL;
    double tree = topo_collective(path, "allreduce", 128, "1073741824", "", &algo64);
    double ring = topo_collective(r72, "allreduce", 128, "1073741824", "", &algo72);
    printf("\n    128 GPUs: %s %.1f GB/s on 2 racks of 64, %s %.1f on 2 of 72", algo64, tree,
           algo72, ring);
    CU_ASSERT_STRING_EQUAL(algo64, "nvlstree");
    CU_ASSERT_STRING_EQUAL(algo72, "ring");
    CU_ASSERT_TRUE(ring < 48 && tree > 10 * ring);
    topo_teardown();
}

/* The Blackwell rows of bench/fidelity/nccl-tests.csv (each with its public source there):
 * busbw within 10%: NVLS in one NVL72 rack, NVLS-tree between two DGX B200 nodes. */
static void
test_blackwell_nccl_tests(void)
{
    g_autofree char *csv = NULL;
    CU_ASSERT_TRUE_FATAL(g_file_get_contents("bench/fidelity/nccl-tests.csv", &csv, NULL, NULL));
    topo_setup();
    g_auto(GStrv) lines = g_strsplit(csv, "\n", -1);
    guint checked = 0;
    for (guint i = 0; lines[i] != NULL; i++) {
        g_auto(GStrv) f = g_strsplit(lines[i], ",", -1);
        if (g_strv_length(f) != 10 || lines[i][0] == '#' ||
            (!g_str_equal(f[1], "gb200-nvl72") && !g_str_equal(f[1], "dgx-b200")))
            continue;
        g_autofree char *path = topo_generate(topo_dir, f[1], (guint) atoi(f[2]));
        double want = g_ascii_strtod(f[6], NULL);
        double got = topo_busbw(path, (guint) atoi(f[3]), f[5]);
        if (fabs(got / want - 1) > 0.10)
            printf("\n    %s %s GPUs, %s B: simpar %.1f GB/s, nccl-tests %.1f", f[1], f[3], f[5],
                   got, want);
        CU_ASSERT_TRUE(fabs(got / want - 1) <= 0.10);
        checked++;
    }
    CU_ASSERT_EQUAL(checked, 6); /* one NVL72 rack, 512 MiB to 8 GiB; two DGX B200, 8 GiB */
    topo_teardown();
}

/* The all-to-all rows of bench/fidelity/nccl-tests.csv (each with its public source there):
 * every row from 1 MiB within 10% busbw, on one node (4 H100 of an HGX node at 500 MiB, 8 A100
 * of an NDm A100 v4 at 1 GiB) and across two (two NDm A100 v4 nodes at 1 and 4 GiB; two A100
 * nodes of 4 x 200 Gb/s NICs on a stand-in platform, topology_options: clos-h100 at 8 x 100
 * Gb/s). Across nodes a block moves in NCCL's 128 KiB send/recv steps, 1.12 times its bytes on
 * the wire (sim/collectives/pairwise.c): without that the cross-node rows are +13.5% to +19.0%.
 * Before all rounds of the pairwise exchange shared the wire at once, the stand-in row was -39%:
 * each round waited for its cross-node pairs. Fused SimGrid runs give the analytic figure. */
static void
test_alltoall_nccl_tests(void)
{
    g_autofree char *csv = NULL;
    CU_ASSERT_TRUE_FATAL(g_file_get_contents("bench/fidelity/nccl-tests.csv", &csv, NULL, NULL));
    topo_setup();
    g_auto(GStrv) lines = g_strsplit(csv, "\n", -1);
    guint one_node = 0, across = 0, stand_in = 0;
    for (guint i = 0; lines[i] != NULL; i++) {
        g_auto(GStrv) f = g_strsplit(lines[i], ",", -1);
        if (g_strv_length(f) != 10 || lines[i][0] == '#' || !g_str_equal(f[4], "alltoall") ||
            g_ascii_strtod(f[5], NULL) < 1 << 20)
            continue;
        g_autofree char *more = *f[9] != '\0' ? g_strconcat(" ", f[9], NULL) : g_strdup("");
        g_autofree char *path = topo_generate_with(topo_dir, f[1], (guint) atoi(f[2]), more);
        double want = g_ascii_strtod(f[6], NULL);
        double got = topo_busbw_op(path, "alltoall", (guint) atoi(f[3]), f[5]),
               err = got / want - 1;
        /* SimGrid's fused transfers share the links as the closed form does (once, not twice) */
        double fused = topo_busbw_run(path, "alltoall", (guint) atoi(f[3]), f[5],
                                      "--backend simgrid --collectives fused");
        if (fabs(fused / got - 1) > 1e-3)
            printf("\n    %s fused %.2f GB/s, analytic %.2f", f[0], fused, got);
        CU_ASSERT_TRUE(fabs(fused / got - 1) <= 1e-3);
        if (fabs(err) > 0.10)
            printf("\n    %s %s, %s GPUs, %s B: simpar %+.1f%% of nccl-tests' %.2f GB/s", f[0],
                   f[1], f[3], f[5], 100 * err, want);
        CU_ASSERT_TRUE(fabs(err) <= 0.10);
        if (*f[9] != '\0')
            stand_in++;
        else if (atoi(f[2]) > 1)
            across++;
        else
            one_node++;
    }
    CU_ASSERT_EQUAL(one_node, 2); /* 4 H100 of an HGX node; 8 A100 of an NDm A100 v4 */
    CU_ASSERT_EQUAL(across, 2);   /* two NDm A100 v4 nodes, 1 and 4 GiB */
    CU_ASSERT_EQUAL(stand_in, 1); /* two A100 nodes of 4 NICs */
    topo_teardown();
}

/* The names the writers print are the names sim/ reads back (topology.h's one grammar): every
 * kind round-trips, and names that only look like a GPU's are told apart. */
static void
test_names(void)
{
    guint node = 0, gpu = 0, index = 0;
    const char *rest = NULL;
    g_autofree char *g = g_strdup_printf(SIMPAR_NAME_GPU, 12u, 7u);
    CU_ASSERT_EQUAL(simpar_topology_gpu_name(g, &node, &gpu), 1);
    CU_ASSERT_TRUE(node == 12 && gpu == 7);
    const char *fake[] = {"node00-gpu0", "node-1-gpu0", "node0-gpu0 ", "node2147483648-gpu0",
                          "node1-gpu+2"};
    for (guint i = 0; i < G_N_ELEMENTS(fake); i++)
        CU_ASSERT_EQUAL(simpar_topology_gpu_name(fake[i], &node, &gpu), -1);
    CU_ASSERT_EQUAL(simpar_topology_gpu_name("rack3-tor", &node, &gpu), 0);
    g_autofree char *n = g_strdup_printf(SIMPAR_NAME_NODE, 40u, "nvlink3");
    CU_ASSERT_EQUAL(simpar_topology_link_kind(n, &index, &rest), SIMPAR_LINK_NODE);
    CU_ASSERT_TRUE(index == 40 && g_str_equal(rest, "nvlink3"));
    g_autofree char *s = g_strdup_printf(SIMPAR_NAME_SPINE, 1u, 5u);
    CU_ASSERT_EQUAL(simpar_topology_link_kind(s, &index, &rest), SIMPAR_LINK_SPINE);
    g_autofree char *r = g_strdup_printf(SIMPAR_NAME_RACK_UP, 9u);
    CU_ASSERT_EQUAL(simpar_topology_link_kind(r, &index, &rest), SIMPAR_LINK_RACK_UP);
    CU_ASSERT_EQUAL(index, 9);
    g_autofree char *p = g_strdup_printf(SIMPAR_NAME_POD_UP, 2u);
    CU_ASSERT_EQUAL(simpar_topology_link_kind(p, &index, &rest), SIMPAR_LINK_POD_UP);
    CU_ASSERT_EQUAL(index, 2);
    const char *other[] = {"rack9-up2", "pod02-up", "node3-", "ibswitch", "rack9-tor"};
    for (guint i = 0; i < G_N_ELEMENTS(other); i++)
        CU_ASSERT_EQUAL(simpar_topology_link_kind(other[i], &index, &rest), SIMPAR_LINK_OTHER);
}

static void
test_list(void)
{
    SimparCliRun r = simpar_cli_run("topology --list");
    CU_ASSERT_EQUAL(r.status, 0);
    for (guint i = 0; i < G_N_ELEMENTS(expects); i++)
        CU_ASSERT_PTR_NOT_NULL(strstr(r.out, expects[i].preset));
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "non-blocking fat tree"));
    simpar_cli_run_clear(&r);
}

static CU_TestInfo topology_tests[] = {
    {"every preset at 1, 2 and 5 nodes has one host per GPU with every GPU property", test_hosts},
    {"SimGrid routes in a node, on a rail and across rails carry the datasheet figures",
     test_routes},
    {"the shipped topologies are the generator's output byte for byte", test_shipped},
    {"the same arguments give the same bytes", test_repeatable},
    {"the Clos options reshape racks, pods, ports and the aggregation tier", test_fabric_options},
    {"bad presets, node counts and output paths get exit 2 naming the flag and valid values",
     test_bad_input},
    {"--list prints every preset with its description", test_list},
    {"the GPU and link names written are the names read back", test_names},
    {"GB200 NVL72 files of 3, 8 and 37 racks have every rack's GPUs and route as one rack",
     test_rack_sizes},
    {"GB200 NVL72 racks of 64 GPUs (--rack-gpus 64) have 64 hosts each, are recognised, and "
     "keep the per-GPU NVLink figures",
     test_rack_gpus},
    {"all-reduce on Blackwell presets is within 10% busbw of the public nccl-tests figures",
     test_blackwell_nccl_tests},
    {"all-to-all is within 10% busbw of the public nccl-tests figures from 1 MiB, in a node and "
     "across nodes",
     test_alltoall_nccl_tests},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"simpar topology", NULL, NULL, NULL, NULL, topology_tests},
    CU_SUITE_INFO_NULL,
};

int
main(void)
{
    return simpar_test_main(suites);
}
