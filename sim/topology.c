/* topology.c - the node presets and the SimGrid platform writers of their two node styles.
 *
 * ac922: one Full-routing zone per node (its GPUs, CPUs and NIC) under a DijkstraCache world,
 * joined by one zoneRoute per node to a one-switch IB zone. One NIC per node, so the node zone's
 * single gateway (its NIC) is exact.
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
#include <stdarg.h>
#include <string.h>

#define GIB (G_GUINT64_CONSTANT(1) << 30)

/* ---------------------------------------------------------------- writing XML */

/* Appends `depth` levels of indentation, then fmt with every argument XML-escaped. */
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

    GString *xml = g_string_new(NULL);
    topology_append(xml, depth, "<prop id=\"gpu_model\" value=\"%s\"/>\n", gpu->model);
    for (guint i = 0; i < G_N_ELEMENTS(props); i++) {
        g_autofree char *v = topology_eng(props[i].value);
        topology_append(xml, depth, "<prop id=\"%s\" value=\"%s\"/>\n", props[i].id, v);
    }
    topology_append(xml, depth, "<prop id=\"mem_bytes\" value=\"%" G_GUINT64_FORMAT "\"/>\n",
                    gpu->mem_bytes);
    return g_string_free(xml, FALSE);
}

/* <host id="node<N>-gpu<G>"> with the GPU's props; speed is the 16-bit tensor peak. */
static void
topology_host(GString *xml, guint depth, const SimparTopologyPreset *p, const char *props,
              guint node, guint gpu)
{
    char buf[G_ASCII_DTOSTR_BUF_SIZE];
    topology_append(xml, depth, "<host id=\"node%u-gpu%u\" speed=\"%sTf\" core=\"1\">\n", node, gpu,
                    topology_num(buf, p->gpu.fp16, 1e12));
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

/* The prolog and the header comment; `style` says how a node is built, with its figures. */
static void
topology_open(GString *xml, const SimparTopologyPreset *p, guint nodes, const char *style)
{
    g_autofree char *text = g_strdup_printf(
        "Preset %s, %u nodes, %u GPUs: %s. %s Hosts node<N>-gpu<G>, GPU figures as host "
        "<prop>s; links SPLITDUPLEX, bandwidth per direction. Figures: "
        "shared/calibration/hardware.md; structure: sim/topology.c. Generated by: simpar topology "
        "-p %s -n %u -o FILE (regenerate, do not edit).",
        p->name, nodes, nodes * p->gpus_per_node, p->description, style, p->name, nodes);
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

/* ---------------------------------------------------------------- ac922: nested zones */

/* The links of an AC922 node, by which figure they carry. */
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
    {"pcie-nic", G_STRUCT_OFFSET(SimparLinkFigures, pcie)},
};

/* Sibling GPUs (0-1 on socket 0, 2-3 on socket 1) share NVLink bricks; the others go GPU -> CPU
 * -> X-bus -> CPU -> GPU; the NIC hangs off CPU0, so GPUs 2 and 3 reach it over the X-bus. */
static const struct {
    const char *src, *dst;
    TopologyHop hops[3];
} ac922_routes[] = {
    {"gpu0", "gpu1", {{"nvlink01", "UP"}}},
    {"gpu2", "gpu3", {{"nvlink23", "UP"}}},
    {"gpu0", "gpu2", {{"nvcpu0", "UP"}, {"xbus", "UP"}, {"nvcpu2", "DOWN"}}},
    {"gpu0", "gpu3", {{"nvcpu0", "UP"}, {"xbus", "UP"}, {"nvcpu3", "DOWN"}}},
    {"gpu1", "gpu2", {{"nvcpu1", "UP"}, {"xbus", "UP"}, {"nvcpu2", "DOWN"}}},
    {"gpu1", "gpu3", {{"nvcpu1", "UP"}, {"xbus", "UP"}, {"nvcpu3", "DOWN"}}},
    {"gpu0", "nic", {{"nvcpu0", "UP"}, {"pcie-nic", "UP"}}},
    {"gpu1", "nic", {{"nvcpu1", "UP"}, {"pcie-nic", "UP"}}},
    {"gpu2", "nic", {{"nvcpu2", "UP"}, {"xbus", "DOWN"}, {"pcie-nic", "UP"}}},
    {"gpu3", "nic", {{"nvcpu3", "UP"}, {"xbus", "DOWN"}, {"pcie-nic", "UP"}}},
};

static void
ac922_node(GString *xml, const SimparTopologyPreset *p, const char *props, guint node)
{
    g_assert(p->gpus_per_node == 4 && p->nics_per_node == 1);
    topology_append(xml, 2, "<zone id=\"node%u\" routing=\"Full\">\n", node);
    for (guint g = 0; g < p->gpus_per_node; g++)
        topology_host(xml, 3, p, props, node, g);
    const char *routers[] = {"cpu0", "cpu1", "nic"};
    for (guint i = 0; i < G_N_ELEMENTS(routers); i++)
        topology_append(xml, 3, "<router id=\"node%u-%s\"/>\n", node, routers[i]);
    for (guint i = 0; i < G_N_ELEMENTS(ac922_links); i++) {
        const SimparLinkSpec *s = G_STRUCT_MEMBER_P(&p->links, ac922_links[i].figure);
        g_autofree char *id = g_strdup_printf("node%u-%s", node, ac922_links[i].id);
        topology_link(xml, 3, id, s->bandwidth, s->latency);
    }
    for (guint i = 0; i < G_N_ELEMENTS(ac922_routes); i++)
        topology_route(xml, 3, node, ac922_routes[i].src, ac922_routes[i].dst, ac922_routes[i].hops,
                       G_N_ELEMENTS(ac922_routes[i].hops));
    topology_append(xml, 2, "</zone>\n");
}

/* One IB switch in its own zone (a zone holds either zones or hosts and routers), one port link
 * per node, one zoneRoute per node from its NIC. */
static void
ac922_fabric(GString *xml, const SimparTopologyPreset *p, guint nodes)
{
    topology_append(xml, 2, "<zone id=\"ibfabric\" routing=\"Full\">\n");
    topology_append(xml, 3, "<router id=\"ibswitch\"/>\n");
    topology_append(xml, 2, "</zone>\n");
    for (guint n = 0; n < nodes; n++) {
        g_autofree char *id = g_strdup_printf("node%u-ib", n);
        topology_link(xml, 2, id, p->links.ib.bandwidth, p->links.ib.latency);
    }
    for (guint n = 0; n < nodes; n++)
        topology_append(
            xml, 2,
            "<zoneRoute src=\"node%u\" dst=\"ibfabric\" gw_src=\"node%u-nic\" "
            "gw_dst=\"ibswitch\"><link_ctn id=\"node%u-ib\" direction=\"UP\"/></zoneRoute>\n",
            n, n, n);
}

static void
ac922_write(GString *xml, const SimparTopologyPreset *p, guint nodes)
{
    const SimparLinkFigures *l = &p->links;
    g_autofree char *nv = topology_words(&l->nvlink), *cpu = topology_words(&l->nvcpu);
    g_autofree char *xbus = topology_words(&l->xbus), *pcie = topology_words(&l->pcie);
    g_autofree char *ib = topology_words(&l->ib);
    g_autofree char *style = g_strdup_printf(
        "In each node GPU pairs 0-1 and 2-3 share a socket and NVLink bricks (%s); each GPU has "
        "NVLink to its CPU (%s); the sockets share the X-bus (%s); CPU0 reaches the NIC over PCIe "
        "(%s); one IB port per node (%s) into one switch.",
        nv, cpu, xbus, pcie, ib);
    topology_open(xml, p, nodes, style);
    topology_append(xml, 1, "<zone id=\"world\" routing=\"DijkstraCache\">\n");
    g_autofree char *props = topology_gpu_props(&p->gpu, 4);
    for (guint n = 0; n < nodes; n++)
        ac922_node(xml, p, props, n);
    ac922_fabric(xml, p, nodes);
    topology_close(xml);
}

/* ---------------------------------------------------------------- nvswitch: one flat zone */

/* The NIC (and so the rail) of GPU g: GPUs are spread evenly over the NICs, in order. */
static guint
nvswitch_rail(const SimparTopologyPreset *p, guint g)
{
    return g / (p->gpus_per_node / p->nics_per_node);
}

/* Hosts, the NVSwitch and the links of one node: GPU to NVSwitch, GPU to NIC, NIC port. */
static void
nvswitch_node(GString *xml, const SimparTopologyPreset *p, const char *props, guint node)
{
    const SimparLinkFigures *l = &p->links;
    for (guint g = 0; g < p->gpus_per_node; g++)
        topology_host(xml, 2, p, props, node, g);
    topology_append(xml, 2, "<router id=\"node%u-nvswitch\"/>\n", node);
    for (guint g = 0; g < p->gpus_per_node; g++) {
        g_autofree char *nv = g_strdup_printf("node%u-nvlink%u", node, g);
        g_autofree char *pcie = g_strdup_printf("node%u-pcie%u", node, g);
        topology_link(xml, 2, nv, l->nvlink.bandwidth, l->nvlink.latency);
        topology_link(xml, 2, pcie, l->pcie.bandwidth, l->pcie.latency);
    }
    for (guint r = 0; r < p->nics_per_node; r++) {
        g_autofree char *ib = g_strdup_printf("node%u-ib%u", node, r);
        topology_link(xml, 2, ib, l->ib.bandwidth, l->ib.latency);
    }
}

static void
nvswitch_node_routes(GString *xml, const SimparTopologyPreset *p, guint node)
{
    for (guint g = 0; g < p->gpus_per_node; g++) {
        topology_append(xml, 2,
                        "<route src=\"node%u-gpu%u\" dst=\"node%u-nvswitch\"><link_ctn "
                        "id=\"node%u-nvlink%u\" direction=\"UP\"/></route>\n",
                        node, g, node, node, g);
        guint r = nvswitch_rail(p, g);
        topology_append(
            xml, 2,
            "<route src=\"node%u-gpu%u\" dst=\"rail%u\"><link_ctn id=\"node%u-pcie%u\" "
            "direction=\"UP\"/><link_ctn id=\"node%u-ib%u\" direction=\"UP\"/></route>\n",
            node, g, r, node, g, node, r);
    }
}

/* One switch router per rail; one trunk per pair of rails that no traffic can fill. */
static void
nvswitch_rails(GString *xml, const SimparTopologyPreset *p, guint nodes)
{
    for (guint r = 0; r < p->nics_per_node; r++)
        topology_append(xml, 2, "<router id=\"rail%u\"/>\n", r);
    for (guint a = 0; a < p->nics_per_node; a++) {
        for (guint b = a + 1; b < p->nics_per_node; b++) {
            g_autofree char *id = g_strdup_printf("spine-%u-%u", a, b);
            topology_link(xml, 2, id, nodes * p->links.ib.bandwidth, p->links.spine.latency);
        }
    }
}

static void
nvswitch_rail_routes(GString *xml, const SimparTopologyPreset *p)
{
    for (guint a = 0; a < p->nics_per_node; a++)
        for (guint b = a + 1; b < p->nics_per_node; b++)
            topology_append(xml, 2,
                            "<route src=\"rail%u\" dst=\"rail%u\"><link_ctn id=\"spine-%u-%u\" "
                            "direction=\"UP\"/></route>\n",
                            a, b, a, b);
}

static void
nvswitch_write(GString *xml, const SimparTopologyPreset *p, guint nodes)
{
    const SimparLinkFigures *l = &p->links;
    g_assert(p->nics_per_node > 0 && p->gpus_per_node % p->nics_per_node == 0);
    g_autofree char *nv = topology_words(&l->nvlink), *pcie = topology_words(&l->pcie);
    g_autofree char *ib = topology_words(&l->ib);
    char spine[G_ASCII_DTOSTR_BUF_SIZE];
    g_autofree char *style = g_strdup_printf(
        "Each GPU links to its node's NVSwitch (%s) and over PCIe to its NIC (%s); %u NICs per "
        "node, NIC r's port (%s) into the switch of rail r; one trunk per pair of rails (%s us, "
        "nodes x port rate: a non-blocking fat tree).",
        nv, pcie, p->nics_per_node, ib, topology_num(spine, l->spine.latency, 1e-6));
    topology_open(xml, p, nodes, style);
    topology_append(xml, 1, "<zone id=\"world\" routing=\"DijkstraCache\">\n");
    g_autofree char *props = topology_gpu_props(&p->gpu, 3);
    for (guint n = 0; n < nodes; n++)
        nvswitch_node(xml, p, props, n);
    nvswitch_rails(xml, p, nodes);
    for (guint n = 0; n < nodes; n++) /* the DTD wants routes after all of a zone's resources */
        nvswitch_node_routes(xml, p, n);
    nvswitch_rail_routes(xml, p);
    topology_close(xml);
}

/* ---------------------------------------------------------------- the presets */

/* GPU figures: vendor datasheets, as in shared/calibration/hardware.md (16-bit: dense tensor
 * peak; V100 has no bf16). Link figures: hardware.md where it has them (NVLink per GPU per
 * direction, X-bus, IB port rates); PCIe is the x16 rate of the generation (Gen3 16, Gen4 32,
 * Gen5 64 GB/s); latencies are not on datasheets: NVLink 1 us GPU to GPU (0.5 us to and from an
 * NVSwitch), 0.5 us PCIe and X-bus hops, 1 us per IB port (NIC, cable and leaf switch), 0.5 us for
 * the two extra switch hops between rails. */
static const SimparTopologyPreset presets[] = {
    {"v100-ac922",
     "IBM AC922-like (TACC Longhorn class): 4 x V100 SXM2 16 GB, NVLink 2 pairs and X-bus, one "
     "EDR 100 Gb/s port per node",
     {"V100-SXM2-16GB", 125e12, 0, 15.7e12, 7.8e12, 900e9, 16 * GIB},
     4,
     1,
     {.nvlink = {75e9, 1e-6},  /* 3 NVLink 2 bricks x 25 GB/s to the sibling GPU */
      .nvcpu = {75e9, 0.5e-6}, /* 3 bricks to its POWER9 CPU */
      .xbus = {64e9, 0.5e-6},  /* socket to socket */
      .pcie = {32e9, 0.5e-6},  /* CPU0 to the NIC, PCIe Gen4 x16 */
      .ib = {12.5e9, 1e-6}},   /* EDR 100 Gb/s, one switch */
     ac922_write},
    {"dgx-a100",
     "NVIDIA DGX A100: 8 x A100 SXM4 80 GB on NVSwitch (NVLink 3), 8 x HDR 200 Gb/s rails, "
     "non-blocking fat tree",
     {"A100-SXM4-80GB", 312e12, 312e12, 19.5e12, 9.7e12, 2039e9, 80 * GIB},
     8,
     8,
     {.nvlink = {300e9, 0.5e-6}, /* NVLink 3: 12 x 25 GB/s per direction */
      .pcie = {32e9, 0.5e-6},    /* PCIe Gen4 x16 to the GPU's own HCA */
      .ib = {25e9, 1e-6},        /* HDR 200 Gb/s */
      .spine = {0, 0.5e-6}},
     nvswitch_write},
    {"dgx-h100",
     "NVIDIA DGX H100: 8 x H100 SXM5 80 GB on NVSwitch (NVLink 4), 8 x NDR 400 Gb/s rails, "
     "non-blocking fat tree",
     {"H100-SXM5-80GB", 989e12, 989e12, 67e12, 34e12, 3350e9, 80 * GIB},
     8,
     8,
     {.nvlink = {450e9, 0.5e-6}, /* NVLink 4: 18 x 25 GB/s per direction */
      .pcie = {64e9, 0.5e-6},    /* PCIe Gen5 x16 to the GPU's own ConnectX-7 */
      .ib = {50e9, 1e-6},        /* NDR 400 Gb/s */
      .spine = {0, 0.5e-6}},
     nvswitch_write},
    {"h100-sxm",
     "One H100 SXM5 80 GB per node (a single-GPU machine, or one GPU of an HGX board used "
     "alone), PCIe Gen5 to one NDR 400 Gb/s port",
     {"H100-SXM5-80GB", 989e12, 989e12, 67e12, 34e12, 3350e9, 80 * GIB},
     1,
     1,
     {.nvlink = {450e9, 0.5e-6}, .pcie = {64e9, 0.5e-6}, .ib = {50e9, 1e-6}, .spine = {0, 0.5e-6}},
     nvswitch_write},
    {"h200-sxm",
     "One H200 SXM 141 GB per node (HBM3e, 4.8 TB/s; H100's compute), PCIe Gen5 to one NDR "
     "400 Gb/s port",
     {"H200-SXM-141GB", 989e12, 989e12, 67e12, 34e12, 4800e9, 141000000000ull},
     1,
     1,
     {.nvlink = {450e9, 0.5e-6}, .pcie = {64e9, 0.5e-6}, .ib = {50e9, 1e-6}, .spine = {0, 0.5e-6}},
     nvswitch_write},
    {"dgx-2",
     "NVIDIA DGX-2: 16 x V100 SXM3 32 GB on NVSwitch (NVLink 2), 8 x EDR 100 Gb/s rails (one "
     "NIC per GPU pair), non-blocking fat tree",
     {"V100-SXM3-32GB", 125e12, 0, 15.7e12, 7.8e12, 900e9, 32 * GIB},
     16,
     8,
     {.nvlink = {150e9, 0.5e-6}, /* NVLink 2: 6 x 25 GB/s per direction into the NVSwitches */
      .pcie = {16e9, 0.5e-6},    /* PCIe Gen3 x16, each GPU to the NIC it shares */
      .ib = {12.5e9, 1e-6},      /* EDR 100 Gb/s */
      .spine = {0, 0.5e-6}},
     nvswitch_write},
};

const SimparTopologyPreset *
simpar_topology_presets(guint *n_presets)
{
    g_return_val_if_fail(n_presets != NULL, NULL);
    *n_presets = G_N_ELEMENTS(presets);
    return presets;
}

const SimparTopologyPreset *
simpar_topology_lookup(const char *name)
{
    g_return_val_if_fail(name != NULL, NULL);
    for (guint i = 0; i < G_N_ELEMENTS(presets); i++)
        if (g_str_equal(presets[i].name, name))
            return &presets[i];
    return NULL;
}

char *
simpar_topology_generate(const SimparTopologyPreset *preset, guint nodes)
{
    g_return_val_if_fail(preset != NULL, NULL);
    g_return_val_if_fail(nodes >= 1 && nodes <= SIMPAR_TOPOLOGY_MAX_NODES, NULL);
    GString *xml = g_string_sized_new(1024 * (gsize) nodes * preset->gpus_per_node);
    preset->write(xml, preset, nodes);
    return g_string_free(xml, FALSE);
}
