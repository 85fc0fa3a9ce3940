/* topology.c - the node presets and the SimGrid platform writers of their two node styles.
 *
 * ac922: one DijkstraCache zone of physical edges (GPU-GPU, GPU-CPU, CPU-CPU, CPU-NIC,
 * NIC-switch), a NIC per socket: a zoneRoute has one gateway per zone, so per-node zones could
 * not send each socket's GPUs through their own port.
 *
 * nvswitch: a DGX has a NIC per GPU (or per GPU pair), and a zoneRoute has one gateway per zone,
 * so per-node zones cannot send each GPU through its own NIC. Instead one DijkstraCache zone holds
 * every host, router and link, and its <route>s are the physical edges only:
 *
 *   node<N>-gpu<G> -> node<N>-nvswitch   [node<N>-nvlink<G>]                1 link
 *   node<N>-gpu<G> -> rail<R>            [node<N>-pcie<G>, node<N>-ib<R>]   2 links (R: its NIC)
 *   rail<A>        -> rail<B>            [spine-<A>-<B>]                    1 link
 *
 * SimGrid's Dijkstra weighs a path by its number of links: same node 2 (over the NVSwitch; any
 * path through a NIC is >= 4), other node on the same rail 4, other node on another rail 5 (own
 * NIC, then the trunk between the two rails; the detour over the NVSwitch to the GPU on the
 * destination's rail is 6). Every path is thus the unique shortest one, and a GPU always leaves
 * its node through its own NIC. The fat tree is non-blocking: a rail switch is a router (no
 * capacity), and the trunk between two rails carries nodes x the port rate, more than all ports
 * of a rail can send. A trunk per pair of rails rather than a spine router: through a router the
 * own-NIC path would be 6 links and tie with the NVSwitch detour.
 */
#include "topology.h"
#include "simpar-topology-res.h"
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define GIB (G_GUINT64_CONSTANT(1) << 30)

/* ---------------------------------------------------------------- writing XML */

/* Appends `depth` levels of indentation, then fmt with every argument XML-escaped. */

/* A canonical decimal number at *s (no sign, no leading zero, below 2^31); moves *s past it. */
static gboolean
topology_number(const char **s, guint *out)
{
    const char *p = *s;
    guint64 v = 0;
    if (!g_ascii_isdigit(*p) || (p[0] == '0' && g_ascii_isdigit(p[1])))
        return FALSE;
    while (g_ascii_isdigit(*p) && v <= G_MAXINT32)
        v = v * 10 + (guint64) (*p++ - '0');
    if (v > G_MAXINT32 || g_ascii_isdigit(*p))
        return FALSE;
    *out = (guint) v, *s = p;
    return TRUE;
}

int
simpar_topology_gpu_name(const char *name, guint *node, guint *gpu)
{
    if (!g_str_has_prefix(name, "node") || strstr(name, "-gpu") == NULL)
        return 0;
    const char *p = name + strlen("node");
    return topology_number(&p, node) && g_str_has_prefix(p, "-gpu") &&
                   (p += strlen("-gpu"), topology_number(&p, gpu)) && *p == '\0'
               ? 1
               : -1;
}

/* "<prefix><number><suffix>" whole, the number into *index. */
static gboolean
topology_numbered(const char *name, const char *prefix, const char *suffix, guint *index,
                  const char **rest)
{
    const char *p = name + strlen(prefix);
    if (!g_str_has_prefix(name, prefix) || !topology_number(&p, index) ||
        !g_str_has_prefix(p, suffix))
        return FALSE;
    *rest = p + strlen(suffix);
    return TRUE;
}

SimparLinkKind
simpar_topology_link_kind(const char *name, guint *index, const char **rest)
{
    const char *end = NULL;
    if (g_str_has_prefix(name, "spine-"))
        return SIMPAR_LINK_SPINE;
    if (topology_numbered(name, "node", "-", index, rest) && **rest != '\0')
        return SIMPAR_LINK_NODE;
    if (topology_numbered(name, "rack", "-up", index, &end) && *end == '\0')
        return SIMPAR_LINK_RACK_UP;
    if (topology_numbered(name, "pod", "-up", index, &end) && *end == '\0')
        return SIMPAR_LINK_POD_UP;
    return SIMPAR_LINK_OTHER;
}

static void topology_append(GString *xml, guint depth, const char *fmt, ...) G_GNUC_PRINTF(3, 4);

static void
topology_append(GString *xml, guint depth, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    g_autofree char *text = g_markup_vprintf_escaped(fmt, ap);
    va_end(ap);
    for (guint i = 0; i < depth; i++)
        g_string_append(xml, "  ");
    g_string_append(xml, text);
}

/* v / unit, shortest exact form, whatever the locale: (125e12, 1e12) -> "125". */
static const char *
topology_num(char buf[G_ASCII_DTOSTR_BUF_SIZE], double v, double unit)
{
    return g_ascii_formatd(buf, G_ASCII_DTOSTR_BUF_SIZE, "%.15g", v / unit);
}

/* A property value in engineering notation: 125e12, 15.7e12, 900e9, 0. */
static char *
topology_eng(double v)
{
    static const double units[] = {1e18, 1e15, 1e12, 1e9, 1e6, 1e3};
    char buf[G_ASCII_DTOSTR_BUF_SIZE];
    for (guint i = 0; i < G_N_ELEMENTS(units); i++)
        if (v >= units[i])
            return g_strdup_printf("%se%d", topology_num(buf, v, units[i]), 18 - 3 * (int) i);
    return g_strdup(topology_num(buf, v, 1));
}

/* The <prop>s every GPU host carries, written once per file. */
static char *
topology_gpu_props(const SimparGpuSpec *gpu, guint depth)
{
    const struct {
        const char *id;
        double value;
    } props[] = {{"peak_fp16_flops", gpu->fp16},
                 {"peak_bf16_flops", gpu->bf16},
                 {"peak_fp32_flops", gpu->fp32},
                 {"peak_fp64_flops", gpu->fp64},
                 {"mem_bandwidth_Bps", gpu->mem_bandwidth}};

    const struct {
        const char *id;
        double value;
    } measured[] = {{"gemm_eff_max", gpu->gemm_eff_max},
                    {"gemm_half_dim", gpu->gemm_half_dim},
                    {"launch_s", gpu->launch_s},
                    {"nvls_efficiency", gpu->nvls_efficiency},
                    {"nvls_latency_s", gpu->nvls_latency_s},
                    {"nvls_tree_latency_s", gpu->nvls_tree_latency_s}};

    GString *xml = g_string_new(NULL);
    topology_append(xml, depth, "<prop id=\"gpu_model\" value=\"%s\"/>\n", gpu->model);
    for (guint i = 0; i < G_N_ELEMENTS(props); i++) {
        g_autofree char *v = topology_eng(props[i].value);
        topology_append(xml, depth, "<prop id=\"%s\" value=\"%s\"/>\n", props[i].id, v);
    }
    if (gpu->fp8 > 0) { /* after the other peaks, so that files without FP8 stay as they were */
        g_autofree char *v = topology_eng(gpu->fp8);
        topology_append(xml, depth, "<prop id=\"peak_fp8_flops\" value=\"%s\"/>\n", v);
    }
    topology_append(xml, depth, "<prop id=\"mem_bytes\" value=\"%" G_GUINT64_FORMAT "\"/>\n",
                    gpu->mem_bytes);
    for (guint i = 0; i < G_N_ELEMENTS(measured); i++) {
        char v[G_ASCII_DTOSTR_BUF_SIZE];
        if (measured[i].value > 0)
            topology_append(xml, depth, "<prop id=\"%s\" value=\"%s\"/>\n", measured[i].id,
                            topology_num(v, measured[i].value, 1));
    }
    return g_string_free(xml, FALSE);
}

/* <host id="node<N>-gpu<G>"> with the GPU's props; speed is the 16-bit tensor peak. */
static void
topology_host(GString *xml, guint depth, const SimparTopologyPreset *p, const char *props,
              guint node, guint gpu)
{
    char buf[G_ASCII_DTOSTR_BUF_SIZE];
    topology_append(xml, depth, "<host id=\"" SIMPAR_NAME_GPU "\" speed=\"%sTf\" core=\"1\">\n",
                    node, gpu, topology_num(buf, p->gpu.fp16, 1e12));
    g_string_append(xml, props);
    topology_append(xml, depth, "</host>\n");
}

static void
topology_link(GString *xml, guint depth, const char *id, double bandwidth, double latency)
{
    char bw[G_ASCII_DTOSTR_BUF_SIZE], lat[G_ASCII_DTOSTR_BUF_SIZE];
    topology_append(xml, depth,
                    "<link id=\"%s\" bandwidth=\"%sGBps\" latency=\"%sus\" "
                    "sharing_policy=\"SPLITDUPLEX\"/>\n",
                    id, topology_num(bw, bandwidth, 1e9), topology_num(lat, latency, 1e-6));
}

/* A link's figures in words, for the header comment: "75 GB/s, 1 us". */
static char *
topology_words(const SimparLinkSpec *s)
{
    char bw[G_ASCII_DTOSTR_BUF_SIZE], lat[G_ASCII_DTOSTR_BUF_SIZE];
    return g_strdup_printf("%s GB/s, %s us", topology_num(bw, s->bandwidth, 1e9),
                           topology_num(lat, s->latency, 1e-6));
}

/* Appends words, wrapped before column 100 on lines that start with 5 spaces. */
static void
topology_wrap(GString *xml, const char *text)
{
    g_auto(GStrv) words = g_strsplit(text, " ", -1);
    gsize column = 4; /* after "<!--" */
    for (guint i = 0; words[i] != NULL; i++) {
        gsize len = strlen(words[i]);
        if (column + 1 + len > 99) {
            g_string_append(xml, "\n    ");
            column = 4;
        }
        g_string_append_printf(xml, " %s", words[i]);
        column += 1 + len;
    }
}

/* The prolog and the header comment; `style` says how a node is built, with its figures;
 * `options` are the command's options beyond preset and nodes, in words ("" or " with the
 * options x 1, y 2": no "--" in an XML comment); `own_shape`: the options change the shape the
 * preset's description gives. */
static void
topology_open(GString *xml, const SimparTopologyPreset *p, guint nodes, const char *style,
              const char *options, gboolean own_shape)
{
    g_autofree char *what =
        own_shape ? g_strdup_printf("the preset is %s; this file's shape: the options below",
                                    p->description)
                  : g_strdup(p->description);
    g_autofree char *text = g_strdup_printf(
        "Preset %s, %u nodes, %u GPUs: %s. %s Hosts node<N>-gpu<G>, GPU figures as host "
        "<prop>s; links SPLITDUPLEX, bandwidth per direction. Figures and their sources: "
        "topologies/presets.ini; structure: topologies/topology.c. Generated by: simpar topology "
        "-p %s -%c %u -o FILE%s (regenerate, do not edit).",
        p->name, nodes, nodes * p->gpus_per_node, what, style, p->name, p->racks ? 'r' : 'n', nodes,
        options);
    g_assert(strstr(text, "--") == NULL); /* "--" would end the XML comment */
    g_string_append(xml, "<?xml version='1.0'?>\n"
                         "<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n<!--");
    topology_wrap(xml, text);
    g_string_append(xml, " -->\n<platform version=\"4.1\">\n");
}

static void
topology_close(GString *xml)
{
    g_string_append(xml, "  </zone>\n</platform>\n");
}

/* <route src dst> through hops {id, direction}, ids prefixed "node<N>-". */
typedef struct {
    const char *id, *dir;
} TopologyHop;

static void
topology_route(GString *xml, guint depth, guint node, const char *src, const char *dst,
               const TopologyHop *hops, guint n_hops)
{
    topology_append(xml, depth, "<route src=\"node%u-%s\" dst=\"node%u-%s\">", node, src, node,
                    dst);
    for (guint i = 0; i < n_hops && hops[i].id != NULL; i++)
        topology_append(xml, 0, "<link_ctn id=\"node%u-%s\" direction=\"%s\"/>", node, hops[i].id,
                        hops[i].dir);
    g_string_append(xml, "</route>\n");
}

/* ---------------------------------------------------------------- ac922: one flat zone */

/* The links of an AC922 node, by which figure they carry: the sibling NVLink bricks, each GPU's
 * bricks to its CPU, the X-bus, and per socket PCIe to its NIC and the NIC's EDR port. */
static const struct {
    const char *id;
    gsize figure; /* offset in SimparLinkFigures */
} ac922_links[] = {
    {"nvlink01", G_STRUCT_OFFSET(SimparLinkFigures, nvlink)},
    {"nvlink23", G_STRUCT_OFFSET(SimparLinkFigures, nvlink)},
    {"nvcpu0", G_STRUCT_OFFSET(SimparLinkFigures, nvcpu)},
    {"nvcpu1", G_STRUCT_OFFSET(SimparLinkFigures, nvcpu)},
    {"nvcpu2", G_STRUCT_OFFSET(SimparLinkFigures, nvcpu)},
    {"nvcpu3", G_STRUCT_OFFSET(SimparLinkFigures, nvcpu)},
    {"xbus", G_STRUCT_OFFSET(SimparLinkFigures, xbus)},
    {"pcie0", G_STRUCT_OFFSET(SimparLinkFigures, pcie)},
    {"pcie1", G_STRUCT_OFFSET(SimparLinkFigures, pcie)},
    {"ib0", G_STRUCT_OFFSET(SimparLinkFigures, ib)},
    {"ib1", G_STRUCT_OFFSET(SimparLinkFigures, ib)},
};

/* The physical edges of a node; SimGrid's Dijkstra finds the paths. Sibling GPUs (0-1 on
 * socket 0, 2-3 on socket 1) share NVLink bricks (1 link); the others go GPU -> CPU -> X-bus ->
 * CPU -> GPU (3); a GPU leaves the node through its own socket's NIC (GPU -> CPU -> NIC ->
 * switch: 3, where the other socket's NIC is 4 away), so every path is the unique shortest. */
static const struct {
    const char *src, *dst, *link;
} ac922_edges[] = {
    {"gpu0", "gpu1", "nvlink01"}, {"gpu2", "gpu3", "nvlink23"}, {"gpu0", "cpu0", "nvcpu0"},
    {"gpu1", "cpu0", "nvcpu1"},   {"gpu2", "cpu1", "nvcpu2"},   {"gpu3", "cpu1", "nvcpu3"},
    {"cpu0", "cpu1", "xbus"},     {"cpu0", "nic0", "pcie0"},    {"cpu1", "nic1", "pcie1"},
};

static void
ac922_node(GString *xml, const SimparTopologyPreset *p, const char *props, guint node)
{
    for (guint g = 0; g < p->gpus_per_node; g++)
        topology_host(xml, 2, p, props, node, g);
    const char *routers[] = {"cpu0", "cpu1", "nic0", "nic1"};
    for (guint i = 0; i < G_N_ELEMENTS(routers); i++)
        topology_append(xml, 2, "<router id=\"node%u-%s\"/>\n", node, routers[i]);
    for (guint i = 0; i < G_N_ELEMENTS(ac922_links); i++) {
        const SimparLinkSpec *s = G_STRUCT_MEMBER_P(&p->links, ac922_links[i].figure);
        g_autofree char *id = g_strdup_printf("node%u-%s", node, ac922_links[i].id);
        topology_link(xml, 2, id, s->bandwidth, s->latency);
    }
}

static void
ac922_node_routes(GString *xml, guint node)
{
    for (guint i = 0; i < G_N_ELEMENTS(ac922_edges); i++) {
        TopologyHop hop = {ac922_edges[i].link, "UP"};
        topology_route(xml, 2, node, ac922_edges[i].src, ac922_edges[i].dst, &hop, 1);
    }
    for (guint s = 0; s < 2; s++) /* each socket's NIC port into the one switch */
        topology_append(xml, 2,
                        "<route src=\"node%u-nic%u\" dst=\"ibswitch\"><link_ctn id=\"node%u-ib%u\" "
                        "direction=\"UP\"/></route>\n",
                        node, s, node, s);
}

static void
ac922_write(GString *xml, const SimparTopologyPreset *p, guint nodes,
            const SimparFabricSpec *fabric)
{
    (void) fabric;
    g_assert(p->gpus_per_node == 4 && p->nics_per_node == 2);
    const SimparLinkFigures *l = &p->links;
    g_autofree char *nv = topology_words(&l->nvlink), *cpu = topology_words(&l->nvcpu);
    g_autofree char *xbus = topology_words(&l->xbus), *pcie = topology_words(&l->pcie);
    g_autofree char *ib = topology_words(&l->ib);
    g_autofree char *style = g_strdup_printf(
        "In each node GPU pairs 0-1 and 2-3 share a socket and NVLink bricks (%s); each GPU has "
        "NVLink to its CPU (%s); the sockets share the X-bus (%s); each socket reaches its own "
        "NIC over PCIe (%s); one IB port per NIC (%s) into one switch.",
        nv, cpu, xbus, pcie, ib);
    topology_open(xml, p, nodes, style, "", FALSE);
    topology_append(xml, 1, "<zone id=\"world\" routing=\"DijkstraCache\">\n");
    g_autofree char *props = topology_gpu_props(&p->gpu, 3);
    for (guint n = 0; n < nodes; n++)
        ac922_node(xml, p, props, n);
    topology_append(xml, 2, "<router id=\"ibswitch\"/>\n");
    for (guint n = 0; n < nodes; n++) /* the DTD wants routes after all of a zone's resources */
        ac922_node_routes(xml, n);
    topology_close(xml);
}

/* ---------------------------------------------------------------- nvswitch: one flat zone */

/* The NIC of GPU g: GPUs are spread evenly over the NICs, in order. */
static guint
nvswitch_nic(const SimparTopologyPreset *p, guint g)
{
    return g / (p->gpus_per_node / p->nics_per_node);
}

/* The rail of GPU g: its NIC's, NIC r on rail r mod rails. */
static guint
nvswitch_rail(const SimparTopologyPreset *p, guint g)
{
    return nvswitch_nic(p, g) % p->rails;
}

/* The hosts and the NVSwitch of one node, at indentation `depth`. */
static void
nvswitch_node_hosts(GString *xml, guint depth, const SimparTopologyPreset *p, const char *props,
                    guint node)
{
    for (guint g = 0; g < p->gpus_per_node; g++)
        topology_host(xml, depth, p, props, node, g);
    topology_append(xml, depth, "<router id=\"node%u-nvswitch\"/>\n", node);
}

/* The links of one node: GPU to NVSwitch, GPU to NIC, NIC port (of `port_Bps` per direction). */
static void
nvswitch_node_links(GString *xml, guint depth, const SimparTopologyPreset *p, guint node,
                    double port_Bps)
{
    const SimparLinkFigures *l = &p->links;
    for (guint g = 0; g < p->gpus_per_node; g++) {
        g_autofree char *nv = g_strdup_printf("node%u-nvlink%u", node, g);
        g_autofree char *pcie = g_strdup_printf("node%u-pcie%u", node, g);
        topology_link(xml, depth, nv, l->nvlink.bandwidth, l->nvlink.latency);
        topology_link(xml, depth, pcie, l->pcie.bandwidth, l->pcie.latency);
    }
    for (guint r = 0; r < p->nics_per_node; r++) {
        g_autofree char *ib = g_strdup_printf("node%u-ib%u", node, r);
        topology_link(xml, depth, ib, port_Bps, l->ib.latency);
    }
}

/* Each GPU of `node` to its NVSwitch, and over its PCIe and its NIC's port to the switch of
 * its rail ("rail<r>", tor < 0) or to the node's top-of-rack switch "rack<tor>-tor". */
static void
nvswitch_gpu_routes(GString *xml, guint depth, const SimparTopologyPreset *p, guint node, int tor)
{
    for (guint g = 0; g < p->gpus_per_node; g++) {
        g_autofree char *nic_switch = tor < 0 ? g_strdup_printf("rail%u", nvswitch_rail(p, g))
                                              : g_strdup_printf("rack%d-tor", tor);
        topology_append(xml, depth,
                        "<route src=\"" SIMPAR_NAME_GPU "\" dst=\"node%u-nvswitch\"><link_ctn "
                        "id=\"node%u-nvlink%u\" direction=\"UP\"/></route>\n",
                        node, g, node, node, g);
        topology_append(
            xml, depth,
            "<route src=\"" SIMPAR_NAME_GPU "\" dst=\"%s\"><link_ctn id=\"node%u-pcie%u\" "
            "direction=\"UP\"/><link_ctn id=\"node%u-ib%u\" direction=\"UP\"/></route>\n",
            node, g, nic_switch, node, g, node, nvswitch_nic(p, g));
    }
}

/* One switch router per rail; one trunk per pair of rails that no traffic can fill (the ports
 * of every node's NICs on a rail). */
static void
nvswitch_rails(GString *xml, const SimparTopologyPreset *p, guint nodes)
{
    double ports = (double) nodes * (p->nics_per_node / p->rails);
    for (guint r = 0; r < p->rails; r++)
        topology_append(xml, 2, "<router id=\"rail%u\"/>\n", r);
    for (guint a = 0; a < p->rails; a++) {
        for (guint b = a + 1; b < p->rails; b++) {
            g_autofree char *id = g_strdup_printf(SIMPAR_NAME_SPINE, a, b);
            topology_link(xml, 2, id, ports * p->links.ib.bandwidth, p->links.spine.latency);
        }
    }
}

static void
nvswitch_rail_routes(GString *xml, const SimparTopologyPreset *p)
{
    for (guint a = 0; a < p->rails; a++)
        for (guint b = a + 1; b < p->rails; b++)
            topology_append(xml, 2,
                            "<route src=\"rail%u\" dst=\"rail%u\"><link_ctn id=\"" SIMPAR_NAME_SPINE
                            "\" "
                            "direction=\"UP\"/></route>\n",
                            a, b, a, b);
}

/* A rack-scale preset's rack of `rack_gpus` GPUs (whole trays, checked): the preset with that
 * many GPUs and their NICs, every figure and rail as in the full rack. */
static SimparTopologyPreset
nvswitch_rack(const SimparTopologyPreset *p, guint rack_gpus)
{
    SimparTopologyPreset rack = *p;
    rack.gpus_per_node = rack_gpus;
    rack.nics_per_node = rack_gpus / (p->gpus_per_node / p->nics_per_node);
    g_assert(rack.nics_per_node % rack.rails == 0);
    return rack;
}

static void
nvswitch_write(GString *xml, const SimparTopologyPreset *preset, guint nodes,
               const SimparFabricSpec *fabric)
{
    /* racks of fewer GPUs than the preset's: its options say how many, and the header that
     * the preset's description (a full rack) is not this file's shape */
    guint rack_gpus = simpar_topology_node_gpus(preset, fabric);
    gboolean own = rack_gpus != preset->gpus_per_node;
    SimparTopologyPreset rack = nvswitch_rack(preset, rack_gpus);
    const SimparTopologyPreset *p = &rack;
    g_autofree char *options =
        own ? g_strdup_printf(" with the options rack-gpus %u", rack_gpus) : g_strdup("");
    g_autofree char *trays =
        own ? g_strdup_printf("Each rack holds %u GPUs, %u of its %u compute trays of %u (the "
                              "others spares). ",
                              rack_gpus, rack_gpus / p->tray_gpus,
                              preset->gpus_per_node / p->tray_gpus, p->tray_gpus)
            : g_strdup("");
    const SimparLinkFigures *l = &p->links;
    g_assert(p->nics_per_node > 0 && p->gpus_per_node % p->nics_per_node == 0);
    g_autofree char *nv = topology_words(&l->nvlink), *pcie = topology_words(&l->pcie);
    g_autofree char *ib = topology_words(&l->ib);
    char spine[G_ASCII_DTOSTR_BUF_SIZE];
    g_autofree char *rails =
        p->rails == p->nics_per_node
            ? g_strdup("rail r")
            : g_strdup_printf("rail r mod %u (a rail-optimised fabric of %u rails)", p->rails,
                              p->rails);
    g_autofree char *style = g_strdup_printf(
        "%sEach GPU links to its node's NVSwitch (%s) and over PCIe to its NIC (%s); %u NICs per "
        "node, NIC r's port (%s) into the switch of %s; one trunk per pair of rails (%s us, "
        "nodes x port rate: a non-blocking fat tree).",
        trays, nv, pcie, p->nics_per_node, ib, rails, topology_num(spine, l->spine.latency, 1e-6));
    topology_open(xml, p, nodes, style, options, own);
    topology_append(xml, 1, "<zone id=\"world\" routing=\"DijkstraCache\">\n");
    g_autofree char *props = topology_gpu_props(&p->gpu, 3);
    for (guint n = 0; n < nodes; n++) {
        nvswitch_node_hosts(xml, 2, p, props, n);
        nvswitch_node_links(xml, 2, p, n, l->ib.bandwidth);
    }
    nvswitch_rails(xml, p, nodes);
    for (guint n = 0; n < nodes; n++) /* the DTD wants routes after all of a zone's resources */
        nvswitch_gpu_routes(xml, 2, p, n, -1);
    nvswitch_rail_routes(xml, p);
    topology_close(xml);
}

/* ---------------------------------------------------------------- clos: hierarchical zones */

/* A three-tier Clos of NVSwitch servers, each tier its own zone so that SimGrid finds a route
 * inside a rack, a pod or the top zone and never searches the whole graph:
 *
 *   rack<j>  (DijkstraCache): the nodes' hosts, NVSwitches and links as in the nvswitch style,
 *            every NIC port into the top-of-rack router rack<j>-tor, the rack's gateway; same
 *            node: 2 links over the NVSwitch, another node: 4 over the ToR, a GPU to the ToR: 2
 *            through its own NIC (the detour over the NVSwitch is 4), each the unique shortest;
 *   pod<i>   (DijkstraCache): its racks and a one-router zone pod<i>-spine (router
 *            pod<i>-spine-sw: the pod's cluster switches as one router), zoneRoutes rack<j> ->
 * pod<i>-spine over rack<j>-up, which carries the rack's GPU ports (full bisection inside the pod);
 *   world    (DijkstraCache): the pods and a one-router zone agg (router agg-sw: the
 *            aggregation switches),
 *            zoneRoutes pod<i> -> agg over pod<i>-up, which carries pod_gpus ports' worth over
 *            the oversubscription (the same for a last, partial pod: one design).
 *
 * A SimGrid zone holds either zones or hosts and routers, hence the one-router zones. */

/* " with the options rack-nodes 2, pod-gpus 3072, oversubscription 7, nic-gbps 400" (what
 * simpar_topology_recognise reads back to regenerate the file) */
static char *
clos_options(const SimparFabricSpec *f)
{
    char over[G_ASCII_DTOSTR_BUF_SIZE], nic[G_ASCII_DTOSTR_BUF_SIZE];
    return g_strdup_printf(" with the options rack-nodes %u, pod-gpus %u, oversubscription %s, "
                           "nic-gbps %s",
                           f->rack_nodes, f->pod_gpus, topology_num(over, f->oversubscription, 1),
                           topology_num(nic, f->nic_gbps, 1));
}

static void
clos_rack(GString *xml, const SimparTopologyPreset *p, const char *props, guint rack, guint first,
          guint last)
{
    topology_append(xml, 3, "<zone id=\"rack%u\" routing=\"DijkstraCache\">\n", rack);
    for (guint n = first; n < last; n++)
        nvswitch_node_hosts(xml, 4, p, props, n);
    topology_append(xml, 4, "<router id=\"rack%u-tor\"/>\n", rack);
    for (guint n = first; n < last; n++)
        nvswitch_gpu_routes(xml, 4, p, n, (int) rack);
    topology_append(xml, 3, "</zone>\n");
}

/* A one-router zone "<id>" holding router "<id>-sw": a switch tier seen as one router (a zone's
 * name and a router's may not be the same). */
static void
clos_switch_zone(GString *xml, guint depth, const char *id)
{
    topology_append(xml, depth, "<zone id=\"%s\" routing=\"Full\"><router id=\"%s-sw\"/></zone>\n",
                    id, id);
}

static void
clos_zone_route(GString *xml, guint depth, const char *src, const char *dst, const char *gw_src,
                const char *gw_dst, const char *link)
{
    topology_append(xml, depth,
                    "<zoneRoute src=\"%s\" dst=\"%s\" gw_src=\"%s\" gw_dst=\"%s\"><link_ctn "
                    "id=\"%s\" direction=\"UP\"/></zoneRoute>\n",
                    src, dst, gw_src, gw_dst, link);
}

static void
clos_pod(GString *xml, const SimparTopologyPreset *p, const SimparFabricSpec *f, const char *props,
         guint pod, guint nodes)
{
    guint pod_nodes = f->pod_gpus / p->gpus_per_node;
    guint first = pod * pod_nodes, last = MIN(nodes, first + pod_nodes);
    guint first_rack = first / f->rack_nodes,
          last_rack = (last + f->rack_nodes - 1) / f->rack_nodes;
    g_autofree char *spine = g_strdup_printf("pod%u-spine", pod);
    g_autofree char *spine_sw = g_strdup_printf("pod%u-spine-sw", pod);
    topology_append(xml, 2, "<zone id=\"pod%u\" routing=\"DijkstraCache\">\n", pod);
    for (guint r = first_rack; r < last_rack; r++)
        clos_rack(xml, p, props, r, r * f->rack_nodes, MIN(last, (r + 1) * f->rack_nodes));
    clos_switch_zone(xml, 3, spine);
    for (guint r = first_rack; r < last_rack; r++) {
        g_autofree char *zone = g_strdup_printf("rack%u", r),
                        *tor = g_strdup_printf("rack%u-tor", r);
        g_autofree char *link = g_strdup_printf(SIMPAR_NAME_RACK_UP, r);
        clos_zone_route(xml, 3, zone, spine, tor, spine_sw, link);
    }
    topology_append(xml, 2, "</zone>\n");
}

static void
clos_write(GString *xml, const SimparTopologyPreset *p, guint nodes, const SimparFabricSpec *f)
{
    const SimparLinkFigures *l = &p->links;
    g_assert(p->nics_per_node > 0 && p->gpus_per_node % p->nics_per_node == 0);
    guint pod_nodes = f->pod_gpus / p->gpus_per_node, pods = (nodes + pod_nodes - 1) / pod_nodes;
    double port = f->nic_gbps * SIMPAR_TOPOLOGY_NIC_BPS_PER_GBPS;
    SimparLinkSpec ib = {port, l->ib.latency};
    g_autofree char *nv = topology_words(&l->nvlink), *pcie = topology_words(&l->pcie);
    g_autofree char *ibw = topology_words(&ib);
    char up[G_ASCII_DTOSTR_BUF_SIZE], over[G_ASCII_DTOSTR_BUF_SIZE], nic[G_ASCII_DTOSTR_BUF_SIZE];
    g_autofree char *style = g_strdup_printf(
        "Each GPU links to its node's NVSwitch (%s) and over PCIe to its NIC (%s); %u NICs per "
        "node of %s Gb/s, each port (%s) into the rack's top-of-rack switch; %u nodes per rack, "
        "each rack's uplink into its pod's switches carries the rack's ports (full bisection); "
        "pods of %u GPUs, each pod's uplink into the aggregation switches carries its ports over "
        "%s (oversubscription); %s us per uplink.",
        nv, pcie, p->nics_per_node, topology_num(nic, f->nic_gbps, 1), ibw, f->rack_nodes,
        f->pod_gpus, topology_num(over, f->oversubscription, 1),
        topology_num(up, l->uplink.latency, 1e-6));
    g_autofree char *options = clos_options(f);
    gboolean own = f->rack_nodes != p->fabric.rack_nodes || f->pod_gpus != p->fabric.pod_gpus ||
                   f->oversubscription != p->fabric.oversubscription ||
                   f->nic_gbps != p->fabric.nic_gbps;
    topology_open(xml, p, nodes, style, options, own);
    topology_append(xml, 1, "<zone id=\"world\" routing=\"DijkstraCache\">\n");
    /* every link in the top zone's first zone, before the zones whose routes name them:
     * SimGrid looks a link up by name from the top zone down, zone by zone, so at thousands of
     * zones loading would be quadratic; a route may name a link of any zone, and the DTD wants
     * a zone's links after its zones */
    topology_append(xml, 2, "<zone id=\"links\" routing=\"Full\">\n");
    for (guint n = 0; n < nodes; n++)
        nvswitch_node_links(xml, 3, p, n, port);
    for (guint r = 0; r < (nodes + f->rack_nodes - 1) / f->rack_nodes; r++) {
        g_autofree char *id = g_strdup_printf(SIMPAR_NAME_RACK_UP, r);
        topology_link(xml, 3, id, f->rack_nodes * p->nics_per_node * port, l->uplink.latency);
    }
    for (guint i = 0; i < pods; i++) {
        g_autofree char *id = g_strdup_printf(SIMPAR_NAME_POD_UP, i);
        topology_link(xml, 3, id, f->pod_gpus * port / f->oversubscription, l->uplink.latency);
    }
    topology_append(xml, 2, "</zone>\n");
    g_autofree char *props = topology_gpu_props(&p->gpu, 5);
    for (guint i = 0; i < pods; i++)
        clos_pod(xml, p, f, props, i, nodes);
    clos_switch_zone(xml, 2, "agg");
    for (guint i = 0; i < pods; i++) {
        g_autofree char *zone = g_strdup_printf("pod%u", i);
        g_autofree char *spine_sw = g_strdup_printf("pod%u-spine-sw", i);
        g_autofree char *link = g_strdup_printf(SIMPAR_NAME_POD_UP, i);
        clos_zone_route(xml, 2, zone, "agg", spine_sw, "agg-sw", link);
    }
    topology_close(xml);
}

/* ---------------------------------------------------------------- the presets */

/* The presets are topologies/presets.ini, compiled in (topologies/meson.build): one group per
 * preset, every figure with its public source in the key of its name ending in "_source". The file
 * is part of the program, so a figure or source missing from it is a bug that stops simpar (and
 * tests/test-topology.c loads every preset). */
#define TOPOLOGY_PRESETS "/org/simpar/topologies/presets.ini"

static const struct {
    const char *name;
    gsize offset; /* in SimparLinkFigures */
} topology_link_names[] = {
    {"nvlink", G_STRUCT_OFFSET(SimparLinkFigures, nvlink)},
    {"nvcpu", G_STRUCT_OFFSET(SimparLinkFigures, nvcpu)},
    {"xbus", G_STRUCT_OFFSET(SimparLinkFigures, xbus)},
    {"pcie", G_STRUCT_OFFSET(SimparLinkFigures, pcie)},
    {"ib", G_STRUCT_OFFSET(SimparLinkFigures, ib)},
    {"spine", G_STRUCT_OFFSET(SimparLinkFigures, spine)},
    {"uplink", G_STRUCT_OFFSET(SimparLinkFigures, uplink)},
};

static G_NORETURN void
topology_bad(const char *group, const char *key, const GError *error)
{
    g_error("%s: [%s] %s: %s", TOPOLOGY_PRESETS, group, key,
            error != NULL ? error->message : "missing or out of range");
}

static double
topology_double(GKeyFile *kf, const char *group, const char *key, gboolean required)
{
    g_autoptr(GError) error = NULL;
    if (!required && !g_key_file_has_key(kf, group, key, NULL))
        return 0;
    double v = g_key_file_get_double(kf, group, key, &error);
    if (error != NULL || !isfinite(v) || v < 0)
        topology_bad(group, key, error);
    return v;
}

static char *
topology_string(GKeyFile *kf, const char *group, const char *key)
{
    g_autoptr(GError) error = NULL;
    char *v = g_key_file_get_string(kf, group, key, &error);
    if (v == NULL || v[0] == '\0')
        topology_bad(group, key, error);
    return v; /* (transfer full) */
}

/* A link's figures, when the group has them, and their source (required then). */
static void
topology_read_link(GKeyFile *kf, const char *group, const char *name, SimparLinkSpec *out)
{
    g_autofree char *bw = g_strdup_printf("%s_bandwidth_Bps", name);
    g_autofree char *lat = g_strdup_printf("%s_latency_s", name);
    g_autofree char *src = g_strdup_printf("%s_source", name);
    out->bandwidth = topology_double(kf, group, bw, FALSE);
    out->latency = topology_double(kf, group, lat, FALSE);
    if (g_key_file_has_key(kf, group, bw, NULL) || g_key_file_has_key(kf, group, lat, NULL))
        g_free(topology_string(kf, group, src));
}

static void
topology_read(GKeyFile *kf, const char *group, SimparTopologyPreset *p)
{
    g_autofree char *style = topology_string(kf, group, "style");
    g_autofree char *description = topology_string(kf, group, "description");
    p->name = g_intern_string(group);
    p->description = g_intern_string(description);
    p->write = g_str_equal(style, "ac922")  ? ac922_write
               : g_str_equal(style, "clos") ? clos_write
                                            : nvswitch_write;
    if (!g_str_equal(style, "ac922") && !g_str_equal(style, "nvswitch") &&
        !g_str_equal(style, "clos"))
        topology_bad(group, "style (ac922, nvswitch or clos)", NULL);
    p->gpus_per_node = (guint) topology_double(kf, group, "gpus_per_node", TRUE);
    p->nics_per_node = (guint) topology_double(kf, group, "nics_per_node", TRUE);
    if (p->gpus_per_node == 0 || p->nics_per_node == 0)
        topology_bad(group, "gpus_per_node, nics_per_node", NULL);
    p->rails = (guint) topology_double(kf, group, "rails", FALSE);
    if (p->rails == 0)
        p->rails = p->nics_per_node;
    else if (p->nics_per_node % p->rails != 0 || !g_str_equal(style, "nvswitch"))
        topology_bad(group, "rails (a divisor of nics_per_node, style nvswitch)", NULL);
    else
        g_free(topology_string(kf, group, "rails_source"));
    p->racks = g_key_file_get_boolean(kf, group, "racks", NULL);
    if (p->racks) { /* a rack of whole trays keeps every rail and the GPUs per NIC */
        p->tray_gpus = (guint) topology_double(kf, group, "tray_gpus", TRUE);
        guint per_nic = p->gpus_per_node / p->nics_per_node;
        if (!g_str_equal(style, "nvswitch") || p->tray_gpus == 0 ||
            p->gpus_per_node % p->tray_gpus != 0 || p->tray_gpus % per_nic != 0 ||
            (p->tray_gpus / per_nic) % p->rails != 0)
            topology_bad(group, "tray_gpus (whole NICs on every rail, a divisor of gpus_per_node)",
                         NULL);
        g_free(topology_string(kf, group, "tray_source"));
        p->fabric.rack_gpus = p->gpus_per_node;
    }
    g_autofree char *model = topology_string(kf, group, "gpu_model");
    p->gpu = (SimparGpuSpec){g_intern_string(model),
                             topology_double(kf, group, "peak_fp16_flops", TRUE),
                             topology_double(kf, group, "peak_bf16_flops", TRUE),
                             topology_double(kf, group, "peak_fp32_flops", TRUE),
                             topology_double(kf, group, "peak_fp64_flops", TRUE),
                             topology_double(kf, group, "mem_bandwidth_Bps", TRUE),
                             (guint64) topology_double(kf, group, "mem_bytes", TRUE),
                             0,
                             0,
                             0,
                             0,
                             0,
                             0,
                             0};
    g_free(topology_string(kf, group, "gpu_source"));
    p->gpu.fp8 = topology_double(kf, group, "peak_fp8_flops", FALSE);
    if (p->gpu.fp8 > 0)
        g_free(topology_string(kf, group, "fp8_source"));
    p->gpu.gemm_eff_max = topology_double(kf, group, "gemm_eff_max", FALSE);
    p->gpu.gemm_half_dim = topology_double(kf, group, "gemm_half_dim", FALSE);
    p->gpu.launch_s = topology_double(kf, group, "launch_s", FALSE);
    if (p->gpu.gemm_eff_max > 0 || p->gpu.gemm_half_dim > 0 || p->gpu.launch_s > 0)
        g_free(topology_string(kf, group, "compute_source"));
    p->gpu.nvls_efficiency = topology_double(kf, group, "nvls_efficiency", FALSE);
    p->gpu.nvls_latency_s = topology_double(kf, group, "nvls_latency_s", FALSE);
    if ((p->gpu.nvls_efficiency > 0) != (p->gpu.nvls_latency_s > 0) || p->gpu.nvls_efficiency > 1)
        topology_bad(group, "nvls_efficiency in (0, 1] with nvls_latency_s > 0", NULL);
    if (p->gpu.nvls_efficiency > 0)
        g_free(topology_string(kf, group, "nvls_source"));
    p->gpu.nvls_tree_latency_s = topology_double(kf, group, "nvls_tree_latency_s", FALSE);
    if (p->gpu.nvls_tree_latency_s > 0 && p->gpu.nvls_efficiency <= 0)
        topology_bad(group, "nvls_tree_latency_s (needs nvls_efficiency)", NULL);
    if (p->gpu.nvls_tree_latency_s > 0)
        g_free(topology_string(kf, group, "nvls_tree_source"));
    for (guint i = 0; i < G_N_ELEMENTS(topology_link_names); i++)
        topology_read_link(kf, group, topology_link_names[i].name,
                           G_STRUCT_MEMBER_P(&p->links, topology_link_names[i].offset));
    if (p->write == clos_write) {
        p->fabric = (SimparFabricSpec){
            (guint) topology_double(kf, group, "rack_nodes", TRUE),
            (guint) topology_double(kf, group, "pod_gpus", TRUE),
            topology_double(kf, group, "oversubscription", TRUE),
            p->links.ib.bandwidth / SIMPAR_TOPOLOGY_NIC_BPS_PER_GBPS,
            0,
        };
        g_free(topology_string(kf, group, "fabric_source"));
        g_autofree char *why = simpar_topology_fabric_invalid(p, &p->fabric);
        if (why != NULL)
            topology_bad(group, "rack_nodes, pod_gpus, oversubscription", NULL);
    }
}

static SimparTopologyPreset *topology_presets;
static guint topology_n_presets;

static gpointer
topology_load(gpointer data)
{
    (void) data;
    g_autoptr(GError) error = NULL;
    g_autoptr(GBytes) bytes =
        g_resource_lookup_data(simpar_topology_get_resource(), TOPOLOGY_PRESETS, 0, &error);
    g_autoptr(GKeyFile) kf = g_key_file_new();
    gsize len;
    if (bytes == NULL || !g_key_file_load_from_data(kf, g_bytes_get_data(bytes, &len),
                                                    g_bytes_get_size(bytes), 0, &error))
        g_error("%s: %s", TOPOLOGY_PRESETS, error->message);
    g_auto(GStrv) groups = g_key_file_get_groups(kf, &len);
    topology_presets = g_new0(SimparTopologyPreset, len);
    for (gsize i = 0; i < len; i++)
        topology_read(kf, groups[i], &topology_presets[i]);
    topology_n_presets = (guint) len;
    return NULL;
}

const SimparTopologyPreset *
simpar_topology_presets(guint *n_presets)
{
    g_return_val_if_fail(n_presets != NULL, NULL);
    static GOnce once = G_ONCE_INIT;
    g_once(&once, topology_load, NULL);
    *n_presets = topology_n_presets;
    return topology_presets;
}

#define TOPOLOGY_COMPUTE   "/org/simpar/topologies/compute.ini"
#define TOPOLOGY_PUBLISHED "/org/simpar/topologies/published.ini"

/* A key file compiled in (`path`, its resource name); a broken one is a bug that stops simpar. */
static gpointer
topology_keyfile_load(gpointer path)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(GBytes) bytes =
        g_resource_lookup_data(simpar_topology_get_resource(), path, 0, &error);
    GKeyFile *kf = g_key_file_new();
    if (bytes == NULL || !g_key_file_load_from_data(kf, g_bytes_get_data(bytes, NULL),
                                                    g_bytes_get_size(bytes), 0, &error))
        g_error("%s: %s", (const char *) path, error->message);
    return kf; /* kept for the process's life */
}

GKeyFile *
simpar_topology_compute_data(void)
{
    static GOnce once = G_ONCE_INIT;
    g_once(&once, topology_keyfile_load, (gpointer) TOPOLOGY_COMPUTE);
    return once.retval; /* (transfer none) */
}

GKeyFile *
simpar_topology_published_data(void)
{
    static GOnce once = G_ONCE_INIT;
    g_once(&once, topology_keyfile_load, (gpointer) TOPOLOGY_PUBLISHED);
    return once.retval; /* (transfer none) */
}

const SimparTopologyPreset *
simpar_topology_lookup(const char *name)
{
    g_return_val_if_fail(name != NULL, NULL);
    guint n;
    const SimparTopologyPreset *presets = simpar_topology_presets(&n);
    for (guint i = 0; i < n; i++)
        if (g_str_equal(presets[i].name, name))
            return &presets[i];
    return NULL;
}

char *
simpar_topology_generate(const SimparTopologyPreset *preset, guint nodes)
{
    return simpar_topology_generate_fabric(preset, nodes, NULL);
}

char *
simpar_topology_generate_fabric(const SimparTopologyPreset *preset, guint nodes,
                                const SimparFabricSpec *fabric)
{
    g_return_val_if_fail(preset != NULL, NULL);
    g_return_val_if_fail(fabric == NULL || simpar_topology_has_fabric(preset) || preset->racks,
                         NULL);
    const SimparFabricSpec *f = fabric != NULL ? fabric : &preset->fabric;
    guint node_gpus = simpar_topology_node_gpus(preset, f);
    g_return_val_if_fail(nodes >= 1 && nodes <= SIMPAR_TOPOLOGY_MAX_NODES, NULL);
    g_return_val_if_fail((guint64) nodes * node_gpus <= SIMPAR_TOPOLOGY_MAX_GPUS, NULL);
    if (preset->racks) {
        g_autofree char *why = simpar_topology_rack_gpus_invalid(preset, node_gpus);
        g_return_val_if_fail(why == NULL, NULL);
    }
    GString *xml = g_string_sized_new(1024 * (gsize) nodes * node_gpus);
    preset->write(xml, preset, nodes, f);
    return g_string_free(xml, FALSE);
}

char *
simpar_topology_generate_racks(const SimparTopologyPreset *preset, guint racks, guint rack_gpus)
{
    g_return_val_if_fail(preset != NULL && preset->racks, NULL);
    SimparFabricSpec f = preset->fabric;
    f.rack_gpus = rack_gpus;
    return simpar_topology_generate_fabric(preset, racks, &f);
}

guint
simpar_topology_node_gpus(const SimparTopologyPreset *preset, const SimparFabricSpec *fabric)
{
    const SimparFabricSpec *f = fabric != NULL ? fabric : &preset->fabric;
    return preset->racks && f->rack_gpus > 0 ? f->rack_gpus : preset->gpus_per_node;
}

char *
simpar_topology_rack_gpus_invalid(const SimparTopologyPreset *p, gint64 rack_gpus)
{
    if (!p->racks)
        return g_strdup_printf("--rack-gpus is for rack-scale presets such as gb200-nvl72 (a node "
                               "of preset %s holds its %u GPUs)",
                               p->name, p->gpus_per_node);
    guint tray = p->tray_gpus, most = p->gpus_per_node;
    if (rack_gpus < tray || rack_gpus > most || rack_gpus % tray != 0)
        return g_strdup_printf("--rack-gpus %" G_GINT64_FORMAT " is not a rack of preset %s: "
                               "give a multiple of its compute tray's %u GPUs from %u to %u (%u "
                               "trays per rack; 64 is 16 trays)",
                               rack_gpus, p->name, tray, tray, most, most / tray);
    return NULL;
}

gboolean
simpar_topology_has_fabric(const SimparTopologyPreset *preset)
{
    return preset->write == clos_write;
}

char *
simpar_topology_fabric_invalid(const SimparTopologyPreset *p, const SimparFabricSpec *f)
{
    guint rack_gpus = f->rack_nodes * p->gpus_per_node;
    char v[G_ASCII_DTOSTR_BUF_SIZE];
    if (!simpar_topology_has_fabric(p))
        return g_strdup_printf("preset %s is not a Clos fabric: its shape is fixed (the clos-... "
                               "presets take --rack-nodes, --pod-gpus, --oversubscription, "
                               "--nic-gbps)",
                               p->name);
    if (f->rack_nodes < 1 || f->rack_nodes > 1024)
        return g_strdup_printf("--rack-nodes %u is out of range (1 to 1024 servers per rack)",
                               f->rack_nodes);
    if (f->pod_gpus < rack_gpus || f->pod_gpus % rack_gpus != 0 || f->pod_gpus > (1u << 20))
        return g_strdup_printf("--pod-gpus %u must be a whole number of racks of %u GPUs (%u "
                               "nodes of %u), at most 1048576",
                               f->pod_gpus, rack_gpus, f->rack_nodes, p->gpus_per_node);
    if (!(f->nic_gbps >= 1 && f->nic_gbps <= 3200))
        return g_strdup_printf("--nic-gbps %s is out of range (1 to 3200 Gb/s per NIC port)",
                               topology_num(v, f->nic_gbps, 1));
    /* beyond the pod's GPU count a pod's uplink would be narrower than one NIC port */
    double most = MIN(64.0, (double) f->pod_gpus);
    if (!(f->oversubscription >= 1 && f->oversubscription <= most))
        return g_strdup_printf("--oversubscription %s is out of range (1 to %g: a pod's GPU ports "
                               "over its uplink into the aggregation tier)",
                               topology_num(v, f->oversubscription, 1), most);
    return NULL;
}

/* ----- reading a header back */

/* Where the header comment at `head` names option `name`, or NULL. */
static const char *
topology_header_option(const char *head, const char *name)
{
    const char *at = strstr(head, name);
    const char *end = strstr(head, "-->");
    return at != NULL && end != NULL && at < end ? at : NULL;
}

/* A Clos file's fabric, from the words its header ends with (clos_options). */
static gboolean
topology_read_fabric(const char *head, const SimparTopologyPreset *preset, SimparFabricSpec *out)
{
    /* the comment is wrapped at spaces, which sscanf's spaces match */
    const char *at = topology_header_option(head, "rack-nodes");
    if (at == NULL ||
        sscanf(at, "rack-nodes %u, pod-gpus %u, oversubscription %lf, nic-gbps %lf",
               &out->rack_nodes, &out->pod_gpus, &out->oversubscription, &out->nic_gbps) != 4)
        return FALSE;
    g_autofree char *why = simpar_topology_fabric_invalid(preset, out);
    return why == NULL;
}

/* A rack-scale file's GPUs per rack: the option its header ends with (nvswitch_write), else
 * the preset's. */
static gboolean
topology_read_rack_gpus(const char *head, const SimparTopologyPreset *preset, SimparFabricSpec *out)
{
    const char *at = topology_header_option(head, "rack-gpus");
    out->rack_gpus = preset->gpus_per_node;
    if (at != NULL && sscanf(at, "rack-gpus %u", &out->rack_gpus) != 1)
        return FALSE;
    g_autofree char *why = simpar_topology_rack_gpus_invalid(preset, out->rack_gpus);
    return why == NULL;
}

const SimparTopologyPreset *
simpar_topology_recognise(const char *text, gsize len, guint *nodes, SimparFabricSpec *fabric)
{
    char name[64];
    *fabric = (SimparFabricSpec){0, 0, 0, 0, 0};
    const char *head = strstr(text, "<!-- Preset "); /* topology_open's words */
    if (head == NULL || head - text > 512 ||
        sscanf(head, "<!-- Preset %63[a-z0-9-], %u nodes", name, nodes) != 2)
        return NULL;
    const SimparTopologyPreset *preset = simpar_topology_lookup(name);
    if (preset == NULL)
        return NULL;
    gboolean clos = simpar_topology_has_fabric(preset);
    if ((clos && !topology_read_fabric(head, preset, fabric)) ||
        (preset->racks && !topology_read_rack_gpus(head, preset, fabric)))
        return NULL;
    /* a generated file holds ~900 bytes per GPU: a header asking for more than the file can
     * hold names another file, and regenerating it could cost gigabytes */
    if (*nodes < 2 || *nodes > SIMPAR_TOPOLOGY_MAX_NODES ||
        (guint64) *nodes * simpar_topology_node_gpus(preset, fabric) * 256 > len)
        return NULL;
    g_autofree char *generated = clos || preset->racks
                                     ? simpar_topology_generate_fabric(preset, *nodes, fabric)
                                     : simpar_topology_generate(preset, *nodes);
    if (strlen(generated) != len || memcmp(generated, text, len) != 0)
        return NULL;
    return preset; /* (transfer none) */
}
