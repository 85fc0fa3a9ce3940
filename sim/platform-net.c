/* platform-net.c - a loaded platform's GPUs and network, in the child: the GPUs found by host
 * name, their properties, the routes between them (cached, by representative pairs of a
 * generated file), their links, route shapes and the fabric.
 */
#include "collectives.h"
#include "platform-private.h"
#include "topology.h"
#include <math.h>
#include <stdio.h>
#include <string.h>

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
void
platform_find_gpus(SimparPlatform *p)
{
    sg_host_t *all = sg_host_list();
    size_t n_hosts = sg_host_count(); /* builds and sorts the host list: call it once */
    g_autoptr(GArray) gpus = g_array_new(FALSE, FALSE, sizeof(PlatformHost));
    for (size_t i = 0; i < n_hosts; i++) {
        PlatformHost h = {0, 0, all[i]};
        if (simpar_topology_gpu_name(sg_host_get_name(all[i]), &h.node, &h.gpu) > 0)
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
void
platform_find_generated(SimparPlatform *p)
{
    PlatformGenerated g = {0, 0, 0, 0};
    g_autofree char *text = NULL;
    gsize len;
    if (p->generated != NULL)
        g = *p->generated;
    else if (g_file_get_contents(p->path, &text, &len, NULL))
        platform_generated(text, len, &g);
    if (g.gpus_per_node > 0 && g.nodes == p->n_nodes && p->n_gpus == g.nodes * g.gpus_per_node) {
        p->gpus_per_node = g.gpus_per_node;
        p->rack_nodes = g.rack_nodes, p->pod_nodes = g.pod_nodes;
    }
}

/* The GPUs whose route equals src -> dst's (themselves on other platforms): the same GPU
 * indices in node 0 and node k, k = 1 (any two nodes of the nvswitch and ac922 styles, whose
 * fabric treats nodes alike; two nodes of one rack of a Clos), the rack's node count (two racks
 * of one pod) or the pod's (two pods): a Clos route climbs as far as the two nodes' lowest
 * common tier, through links alike at every rack and pod. */
static void
platform_representative(const SimparPlatform *p, guint *src, guint *dst)
{
    guint g = p->gpus_per_node;
    if (g == 0)
        return;
    guint a = p->nodes[*src], b = p->nodes[*dst], k = 1;
    if (p->rack_nodes > 0 && a / p->rack_nodes != b / p->rack_nodes)
        k = a / p->pod_nodes != b / p->pod_nodes ? p->pod_nodes : p->rack_nodes;
    *src = (a > b) * k * g + *src % g;
    *dst = (a < b) * k * g + *dst % g;
}

/* Keys src << 32 | dst: g_int64_hash (src ^ dst) would put every pair and its reverse, and most
 * pairs of a few GPUs, on one hash value. */
guint
platform_route_hash(gconstpointer key)
{
    return (guint) (*(const guint64 *) key * G_GUINT64_CONSTANT(0x9E3779B97F4A7C15) >> 32);
}

void
platform_route(const SimparNet *net, guint src, guint dst, SimparRoute *out)
{
    SimparPlatform *p = (SimparPlatform *) ((char *) net - G_STRUCT_OFFSET(SimparPlatform, net));
    platform_representative(p, &src, &dst);
    guint64 key = (guint64) src << 32 | dst;
    PlatformRouteSlot *slot = &p->route_memo[platform_route_hash(&key) % PLATFORM_ROUTE_MEMO];
    if (slot->tag == key + 1) {
        *out = slot->route;
        return;
    }
    SimparRoute *r = g_hash_table_lookup(p->routes, &key);
    if (r == NULL) {
        r = g_new(SimparRoute, 1);
        r->lat_s = sg_host_get_route_latency(p->hosts[src], p->hosts[dst]);
        r->bw_Bps = sg_host_get_route_bandwidth(p->hosts[src], p->hosts[dst]);
        if (src != dst && !(r->bw_Bps > 0 && isfinite(r->bw_Bps) && isfinite(r->lat_s))) {
            SimparPlatform *q = (SimparPlatform *) p;
            platform_fatal(q, g_error_new(SIMPAR_PLATFORM_ERROR, SIMPAR_PLATFORM_ERROR_INVALID,
                                          "--topology %s: there is no route from %s to %s (or "
                                          "one of no bandwidth): every pair of GPUs a job uses "
                                          "needs a route of links",
                                          p->path, sg_host_get_name(p->hosts[src]),
                                          sg_host_get_name(p->hosts[dst])));
        }
        g_hash_table_insert(p->routes, g_memdup2(&key, sizeof key), r);
    }
    *slot = (PlatformRouteSlot){key + 1, *r};
    *out = *r;
}

double
platform_link_bw(const SimparNet *net, gconstpointer link)
{
    (void) net;
    return sg_link_get_bandwidth((sg_link_t) link);
}

guint
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

gboolean
platform_nvls(const SimparNet *net, guint gpu, double *eff, double *lat_s)
{
    const SimparPlatform *p =
        (const SimparPlatform *) ((const char *) net - G_STRUCT_OFFSET(SimparPlatform, net));
    if (p->nvls == NULL || p->nvls[2 * gpu] <= 0)
        return FALSE;
    *eff = p->nvls[2 * gpu], *lat_s = p->nvls[2 * gpu + 1];
    return TRUE;
}

gboolean
platform_nvls_tree(const SimparNet *net, guint gpu, double *lat_s)
{
    const SimparPlatform *p =
        (const SimparPlatform *) ((const char *) net - G_STRUCT_OFFSET(SimparPlatform, net));
    if (p->nvls_tree == NULL || p->nvls_tree[gpu] <= 0)
        return FALSE;
    *lat_s = p->nvls_tree[gpu];
    return TRUE;
}

/* NVLS-tree's latency per level between domains (host property nvls_tree_latency_s, on GPUs
 * with NVLS only): NCCL runs NVLS-tree between this GPU's NVLink domain and others. */
static gboolean
platform_read_nvls_tree(SimparPlatform *p, guint gpu, GError **error)
{
    double lat = 0;
    if (sg_host_get_property_value(p->hosts[gpu], "nvls_tree_latency_s") == NULL)
        return TRUE;
    if (!platform_prop(p, gpu, "nvls_tree_latency_s", TRUE, &lat, error))
        return FALSE;
    if (!(lat > 0 && lat <= SIMPAR_PLATFORM_MAX_LAT_S)) {
        g_set_error(error, SIMPAR_PLATFORM_ERROR, SIMPAR_PLATFORM_ERROR_INVALID,
                    "--topology %s: host %s has nvls_tree_latency_s %g; it must be above 0 and "
                    "at most %g s (NVLS-tree's latency per level between NVLink domains; see "
                    "docs/topologies.md)",
                    p->path, sg_host_get_name(p->hosts[gpu]), lat, SIMPAR_PLATFORM_MAX_LAT_S);
        return FALSE;
    }
    if (p->nvls_tree == NULL)
        p->nvls_tree = g_new0(double, p->n_gpus);
    p->nvls_tree[gpu] = lat;
    return TRUE;
}

/* The least efficiency a figure may give (docs/usage.md: efficiencies from 1e-3). */
#define PLATFORM_MIN_EFF 1e-3

/* The GPUs' NVLink SHARP figures: the host properties nvls_efficiency (in (0, 1]) and
 * nvls_latency_s, both or neither. */
gboolean
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
        if (!(eff >= PLATFORM_MIN_EFF && eff <= 1)) {
            g_set_error(error, SIMPAR_PLATFORM_ERROR, SIMPAR_PLATFORM_ERROR_INVALID,
                        "--topology %s: host %s has nvls_efficiency %g; it must be in (0, 1], at "
                        "least %g (the fraction of the NVLink rate NVLink SHARP reaches; see "
                        "docs/topologies.md)",
                        p->path, sg_host_get_name(p->hosts[gpu]), eff, PLATFORM_MIN_EFF);
            return FALSE;
        }
        if (!(lat <= SIMPAR_PLATFORM_MAX_LAT_S)) { /* a link's latency bound */
            g_set_error(error, SIMPAR_PLATFORM_ERROR, SIMPAR_PLATFORM_ERROR_INVALID,
                        "--topology %s: host %s has nvls_latency_s %g; it must be from 0 to %g s "
                        "(NVLink SHARP's latency per collective; see docs/topologies.md)",
                        p->path, sg_host_get_name(p->hosts[gpu]), lat, SIMPAR_PLATFORM_MAX_LAT_S);
            return FALSE;
        }
        if (p->nvls == NULL)
            p->nvls = g_new0(double, 2 * p->n_gpus);
        p->nvls[2 * gpu] = eff, p->nvls[2 * gpu + 1] = lat;
        if (!platform_read_nvls_tree(p, gpu, error))
            return FALSE;
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
                                        "peak_fp64_flops", "peak_fp8_flops"};
    G_STATIC_ASSERT(G_N_ELEMENTS(peaks) == SIMPAR_DTYPE_FP8 + 1);
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
           platform_prop(p, gpu, "launch_s", FALSE, &out->launch_s, error) &&
           simpar_gpu_load_data(out, simpar_topology_compute_data(), error);
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

/* A link is intra-node when it lies on a route between two GPUs of the same node (NVLink,
 * NVSwitch, X-bus, host memory); every other link (NIC PCIe, InfiniBand, switches) is
 * inter-node. */
void
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
GHashTable *
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
guint
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

/* ------------------------------------------------------------- route links, for the backends */

/* A generated platform's link `name` (the names of topology.h): 0 for a fabric link everybody
 * shares ("spine-..."); for a node's own link "node<k>-...", *node = k and where the rest of the
 * name starts; -1 else. */
int
platform_node_link(const char *name, guint *node)
{
    const char *rest = NULL;
    SimparLinkKind kind = simpar_topology_link_kind(name, node, &rest);
    return kind == SIMPAR_LINK_SPINE ? 0 : kind == SIMPAR_LINK_NODE ? (int) (rest - name) : -1;
}

/* A Clos uplink's tier: "rack<j>-up" 1, "pod<i>-up" 2, with *index j or i; 0 for another link. */
static guint
platform_uplink(const char *name, guint *index)
{
    const char *rest = NULL;
    SimparLinkKind kind = simpar_topology_link_kind(name, index, &rest);
    return kind == SIMPAR_LINK_RACK_UP ? 1 : kind == SIMPAR_LINK_POD_UP ? 2 : 0;
}

/* Whether a link of a generated file is its fabric's: a rail trunk "spine-...", a Clos rack's or
 * pod's uplink "rack<j>-up", "pod<i>-up". */
gboolean
platform_fabric_link(const char *name)
{
    guint k;
    const char *rest = NULL;
    SimparLinkKind kind = simpar_topology_link_kind(name, &k, &rest);
    return kind == SIMPAR_LINK_SPINE || kind == SIMPAR_LINK_RACK_UP || kind == SIMPAR_LINK_POD_UP;
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

/* A link by name, from a table built on first use: SimGrid's own lookup searches zone by zone,
 * linear in the zones of a Clos fabric. */
static sg_link_t
platform_link_by_name(const SimparPlatform *p, const char *name)
{
    SimparPlatform *q = (SimparPlatform *) p;
    if (q->links_by_name == NULL) {
        q->links_by_name = g_hash_table_new(g_str_hash, g_str_equal);
        sg_link_t *all = sg_link_list();
        size_t n = sg_link_count();    /* walks every zone: call it once */
        for (size_t i = 0; i < n; i++) /* the names are SimGrid's, as long */
            g_hash_table_insert(q->links_by_name, (gpointer) sg_link_get_name(all[i]), all[i]);
        free(all);
    }
    return g_hash_table_lookup(q->links_by_name, name);
}

/* The real route's copy of a Clos uplink "rack<j>-up" or "pod<i>-up" of the representative
 * route rsrc -> rdst: the source's rack or pod for the representative source's, else the
 * destination's. NULL for another link. */
static char *
platform_real_uplink(const SimparPlatform *p, const char *name, guint rsrc, guint src, guint dst)
{
    guint k, tier = p->rack_nodes > 0 ? platform_uplink(name, &k) : 0;
    if (tier == 0)
        return NULL;
    guint per = tier == 1 ? p->rack_nodes : p->pod_nodes; /* nodes under one such uplink */
    guint real = (k == p->nodes[rsrc] / per ? p->nodes[src] : p->nodes[dst]) / per;
    return g_strdup_printf(tier == 1 ? SIMPAR_NAME_RACK_UP : SIMPAR_NAME_POD_UP, real);
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
    /* the representative's node links "node<k>-..." are the same links of the real nodes, its
     * Clos uplinks those of the real racks and pods; rail trunks "spine-..." are everybody's;
     * any other link: ask SimGrid for the real route */
    for (guint i = first; i < out->len; i++) {
        const char *name = sg_link_get_name(out->pdata[i]);
        guint k;
        int off = platform_node_link(name, &k);
        if (off == 0)
            continue; /* a fabric link */
        g_autofree char *real_name = NULL;
        if (off > 0)
            real_name = g_strdup_printf(
                SIMPAR_NAME_NODE, k == p->nodes[rsrc] ? p->nodes[src] : p->nodes[dst], name + off);
        else
            real_name = platform_real_uplink(p, name, rsrc, src, dst);
        if (real_name == NULL) {
            g_ptr_array_set_size(out, first);
            platform_route_links(p, src, dst, out);
            return;
        }
        out->pdata[i] = platform_link_by_name(p, real_name);
        g_assert(out->pdata[i] != NULL);
    }
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
    /* a Clos fabric's rack and pod uplinks are each shared by the nodes below them alone, not
     * by every node as the quotient's scaled fabric links are: no shapes there */
    if (g == 0 || p->rack_nodes > 0)
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
simpar_platform_links_alike(gconstpointer a, gconstpointer b)
{
    sg_link_t x = (sg_link_t) a, y = (sg_link_t) b;
    return sg_link_get_bandwidth(x) == sg_link_get_bandwidth(y) &&
           sg_link_get_latency(x) == sg_link_get_latency(y) &&
           sg_link_is_shared(x) == sg_link_is_shared(y);
}

gboolean
simpar_platform_link_shared(gconstpointer link)
{
    return sg_link_is_shared((sg_link_t) link);
}

double
simpar_platform_link_bw(gconstpointer link)
{
    return sg_link_get_bandwidth((sg_link_t) link);
}

void
simpar_platform_links_set_bw(const SimparNet *net, const GPtrArray *links, const double *bw,
                             double divisor)
{
    for (guint i = 0; i < links->len; i++)
        sg_link_set_bandwidth(links->pdata[i], bw[i] / divisor);
    simpar_net_memo_clear(net->memo);
}

gint
simpar_platform_link_cmp(gconstpointer a, gconstpointer b)
{
    return strcmp(sg_link_get_name(*(sg_link_t const *) a),
                  sg_link_get_name(*(sg_link_t const *) b));
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
        size_t n = sg_link_count(); /* walks every zone: call it once */
        guint k;
        for (size_t i = 0; i < n; i++)
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
