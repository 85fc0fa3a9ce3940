/* platform.c - check a platform file, load it with SimGrid in a child process, run a job. */
#include "platform.h"
#include "collectives.h"
#include "topology.h"
#include <errno.h>
#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <math.h>
#include <signal.h>
#include <simgrid/actor.h>
#include <simgrid/engine.h>
#include <simgrid/host.h>
#include <simgrid/link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>
#include <xbt/config.h>
#include <xbt/log.h>

G_DEFINE_QUARK(simpar_platform_error_quark, simpar_platform_error)

/* What a platform file says it is, when `simpar topology` wrote it byte for byte: the preset's
 * GPUs per node and the node count (0, 0 for any other file). */
typedef struct {
    guint gpus_per_node, nodes;
} PlatformGenerated;

struct _SimparPlatform {
    const char *path;
    guint n_gpus, n_nodes;
    sg_host_t *hosts; /* by GPU id */
    guint *nodes;     /* node index (0-based, dense) by GPU id */
    SimparNet net;
    GHashTable *routes;                 /* (src << 32 | dst) -> SimparRoute */
    GHashTable *route_links;            /* (src << 32 | dst) -> GPtrArray of sg_link_t */
    guint gpus_per_node;                /* of a file `simpar topology` wrote, unchanged; else 0 */
    const PlatformGenerated *generated; /* the file as the parent found it, or NULL */
    gint *shapes;                       /* per representative pair: its route shape, or -1 */
    GHashTable *shape_ids;              /* route shape key -> id + 1 */
    GPtrArray *fabric;                  /* the fabric links (sg_link_t), found on first use */
    double *fabric_bw;                  /* their bandwidths before any scaling */
    double *nvls;                       /* by GPU id: NVLS efficiency, latency; NULL: none */
    SimparPlatformJob job;
    gpointer data;
    GString *out;
    GError *error;
};

/* ------------------------------------------------------------------ well-formed XML, in parent */

static void
platform_start_element(GMarkupParseContext *ctx, const char *element, const char **names,
                       const char **values, gpointer data, GError **error)
{
    (void) names, (void) values, (void) error;
    gboolean *seen_root = data;
    if (g_markup_parse_context_get_element_stack(ctx)->next == NULL) /* the root element */
        *seen_root = g_str_equal(element, "platform");
}

/* Whether `simpar topology` wrote `text` (its header names the preset and node count, and the
 * preset regenerates it byte for byte). */
static void
platform_generated(const char *text, gsize len, PlatformGenerated *out)
{
    char name[64];
    guint nodes;
    *out = (PlatformGenerated){0, 0};
    const char *head = strstr(text, "<!-- Preset ");
    if (head == NULL || head - text > 512 ||
        sscanf(head, "<!-- Preset %63[a-z0-9-], %u nodes", name, &nodes) != 2)
        return;
    const SimparTopologyPreset *preset = simpar_topology_lookup(name);
    /* a generated file holds ~900 bytes per GPU: a header asking for more than the file can
     * hold names another file, and regenerating it could cost gigabytes */
    if (preset == NULL || nodes < 2 || nodes > SIMPAR_TOPOLOGY_MAX_NODES ||
        (guint64) nodes * preset->gpus_per_node * 256 > len)
        return;
    g_autofree char *generated = simpar_topology_generate(preset, nodes);
    if (strlen(generated) == len && memcmp(generated, text, len) == 0)
        *out = (PlatformGenerated){preset->gpus_per_node, nodes};
}

/* Checks the file and finds whether `simpar topology` wrote it, once for every child. */
static gboolean
platform_check_xml(const char *path, PlatformGenerated *generated, GError **error)
{
    g_autofree char *text = NULL;
    gsize len;
    if (!g_file_get_contents(path, &text, &len, error)) {
        g_prefix_error(error, "--topology: ");
        return FALSE;
    }
    gboolean root = FALSE;
    GMarkupParser parser = {platform_start_element, NULL, NULL, NULL, NULL};
    g_autoptr(GMarkupParseContext) ctx =
        g_markup_parse_context_new(&parser, G_MARKUP_IGNORE_QUALIFIED, &root, NULL);
    if (!g_markup_parse_context_parse(ctx, text, (gssize) len, error) ||
        !g_markup_parse_context_end_parse(ctx, error)) {
        g_prefix_error(error, "--topology %s: not well-formed XML: ", path);
        return FALSE;
    }
    if (!root) {
        g_set_error(error, SIMPAR_PLATFORM_ERROR, SIMPAR_PLATFORM_ERROR_INVALID,
                    "--topology %s: the root element must be <platform> (a SimGrid platform, "
                    "DTD 4.1)",
                    path);
        return FALSE;
    }
    platform_generated(text, len, generated);
    return TRUE;
}

gboolean
simpar_platform_check(const char *path, GError **error)
{
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    PlatformGenerated generated;
    return platform_check_xml(path, &generated, error);
}

/* ------------------------------------------------------------------------- GPUs, in the child */

typedef struct {
    unsigned node, gpu;
    sg_host_t host;
} PlatformHost;

static gint
platform_host_cmp(gconstpointer a, gconstpointer b)
{
    const PlatformHost *x = a, *y = b;
    if (x->node != y->node)
        return x->node < y->node ? -1 : 1;
    return x->gpu < y->gpu ? -1 : x->gpu > y->gpu;
}

/* GPUs are the hosts named node<N>-gpu<G>, sorted by (N, G); nodes renumbered densely. */
static void
platform_find_gpus(SimparPlatform *p)
{
    sg_host_t *all = sg_host_list();
    size_t n_hosts = sg_host_count(); /* builds and sorts the host list: call it once */
    g_autoptr(GArray) gpus = g_array_new(FALSE, FALSE, sizeof(PlatformHost));
    for (size_t i = 0; i < n_hosts; i++) {
        PlatformHost h = {0, 0, all[i]};
        char tail;
        if (sscanf(sg_host_get_name(all[i]), "node%u-gpu%u%c", &h.node, &h.gpu, &tail) == 2)
            g_array_append_val(gpus, h);
    }
    free(all);
    g_array_sort(gpus, platform_host_cmp);
    p->n_gpus = gpus->len;
    p->hosts = g_new(sg_host_t, MAX(1, gpus->len));
    p->nodes = g_new(guint, MAX(1, gpus->len));
    for (guint i = 0; i < gpus->len; i++) {
        const PlatformHost *h = &g_array_index(gpus, PlatformHost, i);
        p->hosts[i] = h->host;
        if (i > 0 && h->node != g_array_index(gpus, PlatformHost, i - 1).node)
            p->n_nodes++;
        p->nodes[i] = p->n_nodes;
    }
    p->n_nodes += gpus->len > 0;
}

/* A file `simpar topology` wrote, byte for byte: every node is wired as node 0 and the fabric
 * treats nodes alike, so a route between GPUs is the route between the same GPU indices inside
 * node 0, or from node 0 to node 1 (node 1 to node 0 when the source's node comes later):
 * SimGrid then runs Dijkstra from 2 nodes' GPUs, not from every source GPU (quadratic at
 * thousands of GPUs). test-scale holds this against SimGrid for every pair of every preset. */
static void
platform_find_generated(SimparPlatform *p)
{
    PlatformGenerated g = {0, 0};
    g_autofree char *text = NULL;
    gsize len;
    if (p->generated != NULL)
        g = *p->generated;
    else if (g_file_get_contents(p->path, &text, &len, NULL))
        platform_generated(text, len, &g);
    if (g.gpus_per_node > 0 && g.nodes == p->n_nodes && p->n_gpus == g.nodes * g.gpus_per_node)
        p->gpus_per_node = g.gpus_per_node;
}

/* The GPUs whose route equals src -> dst's (themselves on other platforms). */
static void
platform_representative(const SimparPlatform *p, guint *src, guint *dst)
{
    guint g = p->gpus_per_node;
    if (g == 0)
        return;
    guint a = p->nodes[*src], b = p->nodes[*dst];
    *src = (a > b) * g + *src % g;
    *dst = (a < b) * g + *dst % g;
}

/* Keys src << 32 | dst: g_int64_hash (src ^ dst) would put every pair and its reverse, and most
 * pairs of a few GPUs, on one hash value. */
static guint
platform_route_hash(gconstpointer key)
{
    return (guint) (*(const guint64 *) key * G_GUINT64_CONSTANT(0x9E3779B97F4A7C15) >> 32);
}

static void
platform_route(const SimparNet *net, guint src, guint dst, SimparRoute *out)
{
    SimparPlatform *p = (SimparPlatform *) ((char *) net - G_STRUCT_OFFSET(SimparPlatform, net));
    platform_representative(p, &src, &dst);
    guint64 key = (guint64) src << 32 | dst;
    SimparRoute *r = g_hash_table_lookup(p->routes, &key);
    if (r == NULL) {
        r = g_new(SimparRoute, 1);
        r->lat_s = sg_host_get_route_latency(p->hosts[src], p->hosts[dst]);
        r->bw_Bps = sg_host_get_route_bandwidth(p->hosts[src], p->hosts[dst]);
        g_hash_table_insert(p->routes, g_memdup2(&key, sizeof key), r);
    }
    *out = *r;
}

static double
platform_link_bw(const SimparNet *net, gconstpointer link)
{
    (void) net;
    return sg_link_get_bandwidth((sg_link_t) link);
}

static guint
platform_node(const SimparNet *net, guint gpu)
{
    const SimparPlatform *p =
        (const SimparPlatform *) ((const char *) net - G_STRUCT_OFFSET(SimparPlatform, net));
    return p->nodes[gpu];
}

static gboolean platform_prop(const SimparPlatform *p, guint gpu, const char *key,
                              gboolean required, double *out, GError **error);

/* What a host property's number counts, from its name. */
static const char *
platform_prop_unit(const char *key)
{
    return g_str_has_suffix(key, "flops")   ? "a number of FLOP/s"
           : g_str_has_suffix(key, "_Bps")  ? "a number of bytes per second"
           : g_str_has_suffix(key, "_s")    ? "a number of seconds"
           : g_str_has_suffix(key, "bytes") ? "a number of bytes"
                                            : "a number";
}

static gboolean
platform_nvls(const SimparNet *net, guint gpu, double *eff, double *lat_s)
{
    const SimparPlatform *p =
        (const SimparPlatform *) ((const char *) net - G_STRUCT_OFFSET(SimparPlatform, net));
    if (p->nvls == NULL || p->nvls[2 * gpu] <= 0)
        return FALSE;
    *eff = p->nvls[2 * gpu], *lat_s = p->nvls[2 * gpu + 1];
    return TRUE;
}

/* The GPUs' NVLink SHARP figures: the host properties nvls_efficiency (in (0, 1]) and
 * nvls_latency_s, both or neither. */
static gboolean
platform_read_nvls(SimparPlatform *p, GError **error)
{
    for (guint gpu = 0; gpu < p->n_gpus; gpu++) {
        double eff = 0, lat = 0;
        gboolean has = sg_host_get_property_value(p->hosts[gpu], "nvls_efficiency") != NULL ||
                       sg_host_get_property_value(p->hosts[gpu], "nvls_latency_s") != NULL;
        if (!has)
            continue;
        if (!platform_prop(p, gpu, "nvls_efficiency", TRUE, &eff, error) ||
            !platform_prop(p, gpu, "nvls_latency_s", TRUE, &lat, error))
            return FALSE;
        if (!(eff > 0 && eff <= 1)) {
            g_set_error(error, SIMPAR_PLATFORM_ERROR, SIMPAR_PLATFORM_ERROR_INVALID,
                        "--topology %s: host %s has nvls_efficiency %g; it must be in (0, 1] (the "
                        "fraction of the NVLink rate NVLink SHARP reaches; see docs/topologies.md)",
                        p->path, sg_host_get_name(p->hosts[gpu]), eff);
            return FALSE;
        }
        if (p->nvls == NULL)
            p->nvls = g_new0(double, 2 * p->n_gpus);
        p->nvls[2 * gpu] = eff, p->nvls[2 * gpu + 1] = lat;
    }
    return TRUE;
}

static gboolean
platform_prop(const SimparPlatform *p, guint gpu, const char *key, gboolean required, double *out,
              GError **error)
{
    const char *v = sg_host_get_property_value(p->hosts[gpu], key);
    char *end = NULL;
    if (v == NULL && !required)
        return TRUE;
    double d = v == NULL ? 0 : g_ascii_strtod(v, &end);
    if (v == NULL || end == v || *end != '\0' || !isfinite(d) || d < 0) {
        g_set_error(error, SIMPAR_PLATFORM_ERROR, SIMPAR_PLATFORM_ERROR_INVALID,
                    "--topology %s: host %s %s property %s (%s, e.g. <prop id=\"%s\" "
                    "value=\"125e12\"/>; see docs/topologies.md)",
                    p->path, sg_host_get_name(p->hosts[gpu]), v == NULL ? "lacks the" : "has a bad",
                    key, platform_prop_unit(key), key);
        return FALSE;
    }
    *out = d;
    return TRUE;
}

gboolean
simpar_platform_gpu(const SimparPlatform *p, guint gpu, SimparGpu *out, GError **error)
{
    g_return_val_if_fail(gpu < p->n_gpus, FALSE);
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    static const char *const peaks[] = {"peak_fp16_flops", "peak_bf16_flops", "peak_fp32_flops",
                                        "peak_fp64_flops"};
    simpar_gpu_init(out);
    const char *model = sg_host_get_property_value(p->hosts[gpu], "gpu_model");
    out->model = g_intern_string(model != NULL ? model : sg_host_get_name(p->hosts[gpu]));
    for (guint d = 0; d < G_N_ELEMENTS(peaks); d++)
        if (!platform_prop(p, gpu, peaks[d], FALSE, &out->peak_flops[d], error))
            return FALSE;
    /* the compute model's figures where the platform has measured ones (else the defaults) */
    return platform_prop(p, gpu, "mem_bandwidth_Bps", TRUE, &out->mem_bw_Bps, error) &&
           platform_prop(p, gpu, "mem_bytes", TRUE, &out->mem_bytes, error) &&
           platform_prop(p, gpu, "gemm_eff_max", FALSE, &out->gemm_eff_max, error) &&
           platform_prop(p, gpu, "gemm_half_dim", FALSE, &out->gemm_half_dim, error) &&
           platform_prop(p, gpu, "launch_s", FALSE, &out->launch_s, error);
}

const char *
simpar_platform_path(const SimparPlatform *p)
{
    return p->path;
}

guint
simpar_platform_n_gpus(const SimparPlatform *p)
{
    return p->n_gpus;
}

const SimparNet *
simpar_platform_net(const SimparPlatform *p)
{
    return &p->net; /* (transfer none) */
}

/* ------------------------------------------------------------ link calibration, in the child */

/* A link is intra-node when it lies on a route between two GPUs of the same node (NVLink,
 * NVSwitch, X-bus, host memory); every other link (NIC PCIe, InfiniBand, switches) is
 * inter-node. */
static void
platform_route_links(const SimparPlatform *p, guint a, guint b, GPtrArray *out)
{
    xbt_dynar_t links = xbt_dynar_new(sizeof(sg_link_t), NULL);
    sg_host_get_route(p->hosts[a], p->hosts[b], links);
    for (unsigned long i = 0; i < xbt_dynar_length(links); i++)
        g_ptr_array_add(out, xbt_dynar_get_as(links, i, sg_link_t));
    xbt_dynar_free(&links);
}

/* The links of routes between two GPUs of one node, both ways: a SPLITDUPLEX link's two
 * directions are two SimGrid links, and a -> b uses the one that b -> a does not. */
static GHashTable *
platform_intra_links(const SimparPlatform *p)
{
    GHashTable *intra = g_hash_table_new(NULL, NULL);
    g_autoptr(GPtrArray) route = g_ptr_array_new();
    for (guint a = 0; a < p->n_gpus; a++)
        for (guint b = a + 1; b < p->n_gpus && p->nodes[b] == p->nodes[a]; b++) {
            g_ptr_array_set_size(route, 0);
            platform_route_links(p, a, b, route);
            platform_route_links(p, b, a, route);
            for (guint i = 0; i < route->len; i++)
                g_hash_table_add(intra, route->pdata[i]);
        }
    return intra; /* (transfer full) */
}

/* Links of `intra` (or, with `want_intra` FALSE, of none) on the route a -> b. */
static guint
platform_count_links(const SimparPlatform *p, guint a, guint b, GHashTable *intra,
                     gboolean want_intra)
{
    g_autoptr(GPtrArray) route = g_ptr_array_new();
    platform_route_links(p, a, b, route);
    guint n = 0;
    for (guint i = 0; i < route->len; i++)
        n += g_hash_table_contains(intra, route->pdata[i]) == want_intra;
    return n;
}

/* A route figure `key` of the calibration file, or 0 when it is not given. */
static gboolean
platform_link_figure(JsonObject *o, const char *path, const char *key, double max, double *out,
                     GError **error)
{
    *out = 0;
    JsonNode *node = json_object_get_member(o, key);
    if (node == NULL)
        return TRUE;
    GType type = JSON_NODE_HOLDS_VALUE(node) ? json_node_get_value_type(node) : G_TYPE_INVALID;
    double v = type == G_TYPE_INT64 || type == G_TYPE_DOUBLE ? json_node_get_double(node) : -1;
    if (!(v > 0 && v <= max)) {
        g_set_error(error, SIMPAR_PLATFORM_ERROR, SIMPAR_PLATFORM_ERROR_INVALID,
                    "--calibration %s: \"%s\" must be a number > 0 and at most %g", path, key, max);
        return FALSE;
    }
    *out = v;
    return TRUE;
}

static int platform_node_link(const char *name, guint *node);

/* Sets bandwidth `bw` and latency `lat` / `hops` on the links `intra` holds (or lacks); with
 * `fabric_scale` > 0, a generated file's fabric links are scaled by it instead; < 0, only the
 * fabric links are set. */
static void
platform_set_links(GHashTable *intra, gboolean want_intra, double bw, double lat, guint hops,
                   double fabric_scale)
{
    sg_link_t *all = sg_link_list();
    size_t n_links = sg_link_count(); /* builds the link list: call it once */
    for (size_t i = 0; i < n_links; i++) {
        if (g_hash_table_contains(intra, all[i]) != want_intra)
            continue;
        guint node;
        gboolean fabric = platform_node_link(sg_link_get_name(all[i]), &node) == 0;
        if (fabric_scale < 0 && !fabric)
            continue; /* the fabric's links alone */
        if (bw > 0 && fabric_scale > 0 && fabric)
            sg_link_set_bandwidth(all[i], sg_link_get_bandwidth(all[i]) * fabric_scale);
        else if (bw > 0)
            sg_link_set_bandwidth(all[i], bw);
        if (lat > 0 && hops > 0)
            sg_link_set_latency(all[i], lat / hops);
    }
    free(all);
}

gboolean
simpar_platform_calibrate_links(const SimparPlatform *p, const char *path, GError **error)
{
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    g_autoptr(JsonParser) parser = json_parser_new();
    if (!simpar_json_load_file(parser, path, error))
        return FALSE;
    JsonNode *root = json_parser_get_root(parser);
    if (root == NULL || !JSON_NODE_HOLDS_OBJECT(root)) {
        g_set_error(error, SIMPAR_PLATFORM_ERROR, SIMPAR_PLATFORM_ERROR_INVALID,
                    "--calibration %s: a calibration file holds one JSON object", path);
        return FALSE;
    }
    JsonObject *o = json_node_get_object(root);
    SimparNetFigures f;
    if (!platform_link_figure(o, path, "intra_node_bandwidth_Bps", 1e14, &f.intra_bw_Bps, error) ||
        !platform_link_figure(o, path, "intra_node_latency_s", 1, &f.intra_lat_s, error) ||
        !platform_link_figure(o, path, "inter_node_bandwidth_Bps", 1e14, &f.inter_bw_Bps, error) ||
        !platform_link_figure(o, path, "inter_node_latency_s", 1, &f.inter_lat_s, error) ||
        !platform_link_figure(o, path, "fabric_bandwidth_Bps", 1e16, &f.fabric_bw_Bps, error) ||
        !platform_link_figure(o, path, "nvls_latency_s", 1, &f.nvls_lat_s, error))
        return FALSE;
    simpar_platform_set_net_figures(p, &f);
    return TRUE;
}

/* The first GPU on another node than GPU 0 (n_gpus when there is none). */
static guint
platform_second_node(const SimparPlatform *p)
{
    guint second = 0;
    while (second < p->n_gpus && p->nodes[second] == p->nodes[0])
        second++;
    return second;
}

void
simpar_platform_set_net_figures(const SimparPlatform *p, const SimparNetFigures *f)
{
    if (f->nvls_lat_s > 0 && p->nvls != NULL)
        for (guint gpu = 0; gpu < p->n_gpus; gpu++)
            if (p->nvls[2 * gpu] > 0)
                p->nvls[2 * gpu + 1] = f->nvls_lat_s;
    if (f->intra_bw_Bps == 0 && f->intra_lat_s == 0 && f->inter_bw_Bps == 0 &&
        f->inter_lat_s == 0 && f->fabric_bw_Bps == 0) {
        simpar_coll_forget();
        return;
    }
    g_autoptr(GHashTable) intra = platform_intra_links(p);
    /* route latencies: split evenly over the links of the route between a node's first two
     * GPUs (intra), and over the inter-node links between the first GPUs of nodes 0 and 1 */
    guint intra_hops = 0, inter_hops = 0, second_node = platform_second_node(p);
    if (p->n_gpus > 1 && p->nodes[1] == p->nodes[0])
        intra_hops = platform_count_links(p, 0, 1, intra, TRUE);
    /* a generated fabric's trunks ("spine-...") carry nodes x the port rate: they follow the
     * port's new rate in proportion, so that the fabric stays as non-blocking as it was */
    double fabric_scale = 0;
    if (second_node < p->n_gpus) {
        inter_hops = platform_count_links(p, 0, second_node, intra, FALSE);
        fabric_scale =
            f->inter_bw_Bps / sg_host_get_route_bandwidth(p->hosts[0], p->hosts[second_node]);
    }
    platform_set_links(intra, TRUE, f->intra_bw_Bps, f->intra_lat_s, intra_hops, 0);
    platform_set_links(intra, FALSE, f->inter_bw_Bps, f->inter_lat_s, inter_hops, fabric_scale);
    if (f->fabric_bw_Bps > 0) /* a generated fabric's trunks, given outright */
        platform_set_links(intra, FALSE, f->fabric_bw_Bps, 0, 0, -1);
    g_hash_table_remove_all(p->routes); /* routes seen before now are stale */
    simpar_coll_forget();               /* and so are the collectives' plans */
}

void
simpar_platform_net_figures(const SimparPlatform *p, SimparNetFigures *out)
{
    *out = (SimparNetFigures){0};
    guint second_node = platform_second_node(p);
    if (p->n_gpus > 1 && p->nodes[1] == p->nodes[0]) {
        out->intra_bw_Bps = sg_host_get_route_bandwidth(p->hosts[0], p->hosts[1]);
        out->intra_lat_s = sg_host_get_route_latency(p->hosts[0], p->hosts[1]);
    }
    if (second_node < p->n_gpus) { /* the inter-node links of the route, as calibration sets */
        g_autoptr(GHashTable) intra = platform_intra_links(p);
        g_autoptr(GPtrArray) route = g_ptr_array_new();
        platform_route_links(p, 0, second_node, route);
        out->inter_bw_Bps = G_MAXDOUBLE;
        for (guint i = 0; i < route->len; i++)
            if (!g_hash_table_contains(intra, route->pdata[i])) {
                out->inter_bw_Bps = MIN(out->inter_bw_Bps, sg_link_get_bandwidth(route->pdata[i]));
                out->inter_lat_s += sg_link_get_latency(route->pdata[i]);
            }
        if (out->inter_bw_Bps == G_MAXDOUBLE)
            out->inter_bw_Bps = 0;
    }
    if (p->nvls != NULL && p->nvls[0] > 0)
        out->nvls_lat_s = p->nvls[1];
}

/* ------------------------------------------------------------------------------ the child */

static void
platform_driver(int argc, char **argv)
{
    (void) argc, (void) argv;
    SimparPlatform *p = sg_actor_self_get_data();
    if (!p->job(p, p->data, p->out, &p->error) && p->error == NULL)
        g_set_error(&p->error, SIMPAR_PLATFORM_ERROR, SIMPAR_PLATFORM_ERROR_JOB, "failed");
}

static gboolean
platform_write_all(int fd, const char *buf, gsize len)
{
    while (len > 0) {
        ssize_t w = write(fd, buf, len);
        if (w <= 0 && errno != EINTR)
            return FALSE;
        if (w > 0)
            buf += w, len -= (gsize) w;
    }
    return TRUE;
}

/* Every link carries data and takes no negative time (SimGrid accepts "-5GBps"). */
static gboolean
platform_check_links(const SimparPlatform *p, GError **error)
{
    sg_link_t *links = sg_link_list();
    size_t n = sg_link_count();
    gboolean ok = TRUE;
    for (size_t i = 0; i < n && ok; i++) {
        double bw = sg_link_get_bandwidth(links[i]), lat = sg_link_get_latency(links[i]);
        ok = isfinite(bw) && bw > 0 && isfinite(lat) && lat >= 0;
        if (!ok)
            g_set_error(error, SIMPAR_PLATFORM_ERROR, SIMPAR_PLATFORM_ERROR_INVALID,
                        "--topology %s: link %s has bandwidth %g B/s and latency %g s; a link "
                        "needs a bandwidth > 0 and a latency >= 0",
                        p->path, sg_link_get_name(links[i]), bw, lat);
    }
    free(links);
    return ok;
}

static G_NORETURN void
platform_child(SimparPlatform *p, int out, int err)
{
    dup2(err, STDERR_FILENO);
    int argc = 1;
    char *argv[] = {(char *) "simpar", NULL};
    xbt_log_control_set("xbt_cfg.thres:warning");
    simgrid_init(&argc, argv);
    sg_cfg_set_string("network/model", "CM02");
    sg_cfg_set_boolean("network/crosstraffic", "no");
    sg_cfg_set_double("network/TCP-gamma", 0);
    simgrid_load_platform(p->path);
    platform_find_gpus(p);
    platform_find_generated(p);
    p->net = (SimparNet){platform_route,   platform_node, p->hosts, simpar_platform_route_links,
                         platform_link_bw, platform_nvls};
    p->routes = g_hash_table_new_full(platform_route_hash, g_int64_equal, g_free, g_free);
    p->route_links = g_hash_table_new_full(platform_route_hash, g_int64_equal, g_free,
                                           (GDestroyNotify) g_ptr_array_unref);
    if (p->n_gpus == 0) {
        g_set_error(&p->error, SIMPAR_PLATFORM_ERROR, SIMPAR_PLATFORM_ERROR_INVALID,
                    "--topology %s: no host is named node<N>-gpu<G>, so no GPU was found (see "
                    "docs/topologies.md)",
                    p->path);
    } else if (platform_check_links(p, &p->error) && platform_read_nvls(p, &p->error)) {
        sg_actor_t driver = sg_actor_init("simpar", p->hosts[0]);
        sg_actor_set_data(driver, p);
        sg_actor_start(driver, platform_driver, 0, NULL);
        simgrid_run();
    }
    const char *text = p->error != NULL ? p->error->message : p->out->str;
    char status = p->error != NULL ? 'E' : 'O';
    gboolean ok =
        platform_write_all(out, &status, 1) && platform_write_all(out, text, strlen(text));
    _exit(ok ? 0 : 1);
}

/* SimGrid's complaint, one line, from its log on stderr: "... [xbt_exception/ERROR] Parse error
 * ..." or "... [xbt_exception/CRITICAL] Uncaught exception simgrid::AssertionError by maestro/0:
 * Refusing to create a second host named 'x'." (then a backtrace, left out). */
static char *
platform_simgrid_message(const char *log)
{
    static const char *const tags[] = {"ERROR] ", "CRITICAL] "};
    g_auto(GStrv) lines = g_strsplit(log, "\n", -1);
    for (guint t = 0; t < G_N_ELEMENTS(tags); t++)
        for (guint i = 0; lines[i] != NULL; i++) {
            const char *m = strstr(lines[i], tags[t]);
            if (m == NULL)
                continue;
            m += strlen(tags[t]);
            if (strstr(m, "Exiting now") != NULL || g_str_has_suffix(m, "acktrace:"))
                continue;
            const char *by = strstr(m, "Uncaught exception ");
            if (by != NULL && (by = strstr(by, " by ")) != NULL && (by = strstr(by, ": ")) != NULL)
                m = by + 2;
            return g_strdup(m);
        }
    for (guint i = 0; lines[i] != NULL; i++)
        if (g_strstrip(lines[i])[0] != '\0')
            return g_strdup(lines[i]);
    return g_strdup("it ended without a message");
}

/* One child: its reply and SimGrid log files, and how it ended. */
struct _SimparPlatformChild {
    pid_t pid;
    int status;
    char *reply_path, *log_path;
    char *path; /* simpar_platform_spawn's children only */
};
typedef struct _SimparPlatformChild PlatformChild;

static gboolean
platform_spawn(const char *path, const PlatformGenerated *generated, SimparPlatformJob job,
               gpointer data, PlatformChild *c, GError **error)
{
    int reply_fd = g_file_open_tmp("simpar-reply-XXXXXX", &c->reply_path, error);
    if (reply_fd < 0)
        return FALSE;
    int log_fd = g_file_open_tmp("simpar-simgrid-XXXXXX.log", &c->log_path, error);
    if (log_fd < 0) {
        close(reply_fd);
        return FALSE;
    }
    fflush(NULL);
    pid_t parent = getpid();
    c->pid = fork();
    if (c->pid < 0)
        g_error("fork: %s", g_strerror(errno));
    if (c->pid == 0) {
        /* die with the parent: a killed sweep or prediction leaves no worker behind */
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)
            _exit(1);
        SimparPlatform p = {.path = path,
                            .generated = generated,
                            .job = job,
                            .data = data,
                            .out = g_string_new(NULL)};
        platform_child(&p, reply_fd, log_fd);
    }
    close(reply_fd);
    close(log_fd);
    return TRUE;
}

/* Waits for one running child and records how it ended. */
static void
platform_reap(PlatformChild *children, guint n)
{
    int status = 0;
    pid_t pid;
    while ((pid = waitpid(-1, &status, 0)) < 0 && errno == EINTR)
        ;
    for (guint i = 0; pid > 0 && i < n; i++)
        if (children[i].pid == pid)
            children[i].status = status, children[i].pid = 0;
}

/* The child's output, or its error: the job's own, or SimGrid's complaint when it died. */
static gboolean
platform_collect(const char *path, PlatformChild *c, GString *out, GError **error)
{
    g_autofree char *reply = NULL, *log = NULL;
    gsize len = 0;
    if (!g_file_get_contents(c->reply_path, &reply, &len, NULL))
        reply = g_strdup(""), len = 0;
    if (!g_file_get_contents(c->log_path, &log, NULL, NULL))
        log = g_strdup("");
    gboolean exited = WIFEXITED(c->status) && WEXITSTATUS(c->status) == 0 && len > 0;
    if (exited && reply[0] == 'O') {
        g_string_append(out, reply + 1);
        return TRUE;
    }
    if (exited) {
        g_set_error_literal(error, SIMPAR_PLATFORM_ERROR, SIMPAR_PLATFORM_ERROR_JOB, reply + 1);
        return FALSE;
    }
    g_autofree char *msg = platform_simgrid_message(log);
    g_set_error(error, SIMPAR_PLATFORM_ERROR, SIMPAR_PLATFORM_ERROR_INVALID,
                "--topology %s: SimGrid cannot use this platform: %s", path, g_strstrip(msg));
    return FALSE;
}

static void
platform_child_clear(PlatformChild *c)
{
    if (c->reply_path != NULL)
        g_unlink(c->reply_path);
    if (c->log_path != NULL)
        g_unlink(c->log_path);
    g_clear_pointer(&c->reply_path, g_free);
    g_clear_pointer(&c->log_path, g_free);
    g_clear_pointer(&c->path, g_free);
}

gboolean
simpar_platform_run_many(const char *path, guint n, guint parallel, SimparPlatformJob job,
                         gpointer *data, const guint *order, GString **outs, GError **error)
{
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    g_return_val_if_fail(n >= 1 && parallel >= 1, FALSE);
    PlatformGenerated generated;
    if (!platform_check_xml(path, &generated, error))
        return FALSE;
    g_autofree PlatformChild *children = g_new0(PlatformChild, n);
    gboolean ok = TRUE;
    guint running = 0;
    for (guint k = 0; k < n && ok; k++) {
        guint i = order != NULL ? order[k] : k;
        g_assert(i < n && children[i].reply_path == NULL);
        if (running == parallel)
            platform_reap(children, n), running--;
        ok = platform_spawn(path, &generated, job, data[i], &children[i], error);
        running += ok;
    }
    for (; running > 0; running--)
        platform_reap(children, n);
    for (guint i = 0; i < n; i++) {
        if (ok && children[i].reply_path != NULL)
            ok = platform_collect(path, &children[i], outs[i], error);
        platform_child_clear(&children[i]);
    }
    return ok;
}

gboolean
simpar_platform_run(const char *path, SimparPlatformJob job, gpointer data, GString *out,
                    GError **error)
{
    return simpar_platform_run_many(path, 1, 1, job, &data, NULL, &out, error);
}

/* ------------------------------------------------------------- children the caller schedules */

SimparPlatformChild *
simpar_platform_spawn(const char *path, SimparPlatformJob job, gpointer data, GError **error)
{
    g_return_val_if_fail(error == NULL || *error == NULL, NULL);
    PlatformChild *c = g_new0(PlatformChild, 1);
    if (!platform_spawn(path, NULL, job, data, c, error)) {
        g_free(c);
        return NULL;
    }
    c->path = g_strdup(path);
    return c; /* (transfer full) */
}

gboolean
simpar_platform_child_ended(SimparPlatformChild *c, gboolean wait)
{
    while (c->pid > 0) {
        pid_t pid = waitpid(c->pid, &c->status, wait ? 0 : WNOHANG);
        if (pid == c->pid)
            c->pid = 0;
        else if (pid == 0 || errno != EINTR)
            break;
    }
    return c->pid == 0;
}

gboolean
simpar_platform_child_finish(SimparPlatformChild *c, GString *out, GError **error)
{
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    simpar_platform_child_ended(c, TRUE);
    gboolean ok = platform_collect(c->path, c, out, error);
    platform_child_clear(c);
    g_free(c);
    return ok;
}

/* ------------------------------------------------------------- route links, for the backends */

/* A generated platform's link `name`: 0 for a fabric link everybody shares ("spine-..."); for a
 * node's own link "node<k>-...", *node = k and where the rest of the name starts; -1 else. */
static int
platform_node_link(const char *name, guint *node)
{
    int off = 0;
    if (g_str_has_prefix(name, "spine-"))
        return 0;
    return sscanf(name, "node%u-%n", node, &off) == 1 && off > 0 ? off : -1;
}

static void platform_real_route_links(const SimparPlatform *p, guint src, guint dst,
                                      GPtrArray *out);

/* Kept per pair: the representative's links are renamed to the real nodes' by name. */
gboolean
simpar_platform_route_links(const SimparNet *net, guint src, guint dst, GPtrArray *out)
{
    if (net->route != platform_route)
        return FALSE;
    const SimparPlatform *p =
        (const SimparPlatform *) ((const char *) net - G_STRUCT_OFFSET(SimparPlatform, net));
    guint64 key = (guint64) src << 32 | dst;
    GPtrArray *links = g_hash_table_lookup(p->route_links, &key);
    if (links == NULL) {
        links = g_ptr_array_new();
        platform_real_route_links(p, src, dst, links);
        g_hash_table_insert(p->route_links, g_memdup2(&key, sizeof key), links);
    }
    for (guint i = 0; i < links->len; i++)
        g_ptr_array_add(out, links->pdata[i]);
    return TRUE;
}

static void
platform_real_route_links(const SimparPlatform *p, guint src, guint dst, GPtrArray *out)
{
    guint rsrc = src, rdst = dst;
    platform_representative(p, &rsrc, &rdst);
    guint first = out->len;
    platform_route_links(p, rsrc, rdst, out);
    if (rsrc == src && rdst == dst)
        return;
    /* the representative's node links "node<k>-..." are the same links of the real nodes;
     * rail trunks "spine-..." are everybody's; any other link: ask SimGrid for the real route
     * (nested-zone presets, whose routes are cheap) */
    for (guint i = first; i < out->len; i++) {
        const char *name = sg_link_get_name(out->pdata[i]);
        guint k;
        int off = platform_node_link(name, &k);
        if (off == 0)
            continue; /* a fabric link */
        if (off < 0) {
            g_ptr_array_set_size(out, first);
            platform_route_links(p, src, dst, out);
            return;
        }
        guint real = k == p->nodes[rsrc] ? p->nodes[src] : p->nodes[dst];
        g_autofree char *real_name = g_strdup_printf("node%u-%s", real, name + off);
        out->pdata[i] = sg_link_by_name(real_name);
        g_assert(out->pdata[i] != NULL);
    }
    return;
}

/* ------------------------------------------------------- route shapes and fabric, for replays */

/* The shape of the route between representative GPUs a -> b: its links in order, a node link
 * as "s:" or "d:" (the source's or the destination's node) and its name after "node<k>-", a
 * fabric link as its name; NULL when a link is neither. */
static char *
platform_shape_key(const SimparPlatform *p, guint a, guint b)
{
    g_autoptr(GPtrArray) links = g_ptr_array_new();
    platform_route_links(p, a, b, links);
    GString *key = g_string_new(NULL);
    for (guint i = 0; i < links->len; i++) {
        const char *name = sg_link_get_name(links->pdata[i]);
        guint k;
        int off = platform_node_link(name, &k);
        if (off == 0) {
            g_string_append_printf(key, "%s;", name);
        } else if (off > 0 && (k == p->nodes[a] || k == p->nodes[b])) {
            g_string_append_printf(key, "%c:%s;", k == p->nodes[a] ? 's' : 'd', name + off);
        } else {
            g_string_free(key, TRUE);
            return NULL;
        }
    }
    return g_string_free(key, FALSE);
}

gint
simpar_platform_route_shape(const SimparNet *net, guint src, guint dst)
{
    if (net->route != platform_route)
        return -1;
    SimparPlatform *p = (SimparPlatform *) ((char *) net - G_STRUCT_OFFSET(SimparPlatform, net));
    guint g = p->gpus_per_node;
    if (g == 0)
        return -1;
    platform_representative(p, &src, &dst);
    if (p->shapes == NULL) {
        p->shapes = g_new(gint, 4 * g * g);
        for (guint i = 0; i < 4 * g * g; i++)
            p->shapes[i] = -2; /* not looked up yet */
        p->shape_ids = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    }
    gint *shape = &p->shapes[src * 2 * g + dst];
    if (*shape == -2) {
        char *key = platform_shape_key(p, src, dst);
        if (key == NULL) {
            *shape = -1;
        } else {
            gpointer id = g_hash_table_lookup(p->shape_ids, key);
            if (id == NULL) {
                id = GUINT_TO_POINTER(g_hash_table_size(p->shape_ids) + 1);
                g_hash_table_insert(p->shape_ids, key, id);
            } else {
                g_free(key);
            }
            *shape = (gint) GPOINTER_TO_UINT(id) - 1;
        }
    }
    return *shape;
}

gboolean
simpar_platform_scale_fabric(const SimparNet *net, double factor)
{
    if (net->route != platform_route)
        return FALSE;
    SimparPlatform *p = (SimparPlatform *) ((char *) net - G_STRUCT_OFFSET(SimparPlatform, net));
    if (p->fabric == NULL) {
        p->fabric = g_ptr_array_new();
        sg_link_t *all = sg_link_list();
        guint k;
        for (size_t i = 0; i < sg_link_count(); i++)
            if (platform_node_link(sg_link_get_name(all[i]), &k) == 0)
                g_ptr_array_add(p->fabric, all[i]);
        free(all); /* xbt_new, that is malloc */
        p->fabric_bw = g_new(double, p->fabric->len + 1);
        for (guint i = 0; i < p->fabric->len; i++)
            p->fabric_bw[i] = sg_link_get_bandwidth(p->fabric->pdata[i]);
    }
    for (guint i = 0; i < p->fabric->len; i++) {
        if (factor != 1) /* what calibration left, unscaled */
            p->fabric_bw[i] = sg_link_get_bandwidth(p->fabric->pdata[i]);
        sg_link_set_bandwidth(p->fabric->pdata[i], p->fabric_bw[i] * factor);
    }
    return TRUE;
}
