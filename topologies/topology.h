/* topology.h - SimGrid platform files (DTD 4.1) for GPU clusters, generated from presets.
 *
 * A preset is a node design: its GPU (figures written as host <prop>s), its links, and the
 * writer of its node style. `simpar topology` writes one for any number of nodes; the files in
 * topologies/ are its output. Hosts are named node<N>-gpu<G>; every link is SPLITDUPLEX.
 *
 *   ac922 (nested zones)                      nvswitch (one flat DijkstraCache zone)
 *
 *   world (DijkstraCache)                       gpu0 ---+              +--- rail0 ==+
 *    +- node<N> (Full)      ibfabric (Full)     gpu1 ---+- nvswitch    |   rail1    | one spine
 *    |  gpu0=gpu1  gpu2=gpu3                    ...     |  (per node)  |   ...      | trunk per
 *    |    |    |    |    |                      gpu7 ---+              +--- rail7 ==+ rail pair
 *    |   cpu0 ==xbus== cpu1                       \_ pcie _ nic port (ib) _/
 *    |    |                                     each GPU: NVLink to its node's NVSwitch, PCIe
 *    |   nic --- node<N>-ib - ibswitch           and its NIC's port to that NIC's rail switch
 *
 *   clos (hierarchical zones: routing stays inside a rack, a pod or the top zone)
 *
 *   world (DijkstraCache) ---- pod<i>-up (pod GPUs x port / oversubscription) ---- agg
 *    +- pod<i> (DijkstraCache) ---- rack<j>-up (rack GPUs x port: full bisection) ---- pod<i>-spine
 *        +- rack<j> (DijkstraCache): rack_nodes servers, each GPU to its node's NVSwitch and
 *           over PCIe and its NIC's port (node<N>-ib<r>) to the ToR rack<j>-tor, the gateway
 *
 * Ownership: the presets are static (transfer none); generated XML is the caller's.
 */
#ifndef SIMPAR_TOPOLOGY_H
#define SIMPAR_TOPOLOGY_H
#include <glib.h>
G_BEGIN_DECLS

/* The most nodes a file may have: what simpar loads in about 20 s and 1.1 GB (16,384 DGX H100
 * nodes, 131,072 GPUs, a 158 MB file; 8,192 take 8.4 s). SimGrid's parse of 65,536 nodes did
 * not end in 400 s, so the writer refuses what the loader cannot take. */
#define SIMPAR_TOPOLOGY_MAX_NODES 16384
/* The most GPUs a file may have: the largest the node limit allowed before rack-scale nodes
 * (16,384 DGX-2 nodes of 16 GPUs); 3,640 NVL72 racks. */
#define SIMPAR_TOPOLOGY_MAX_GPUS 262144

/* One link, per direction. */
typedef struct {
    double bandwidth; /* bytes/s */
    double latency;   /* s */
} SimparLinkSpec;

/* The GPU, as the host's <prop>s. */
typedef struct {
    const char *model;
    double fp16, bf16, fp32, fp64; /* peak flop/s (dense tensor cores for 16-bit) */
    double mem_bandwidth;          /* bytes/s */
    guint64 mem_bytes;
    /* The compute model's figures where measured (0: not given, simpar's defaults apply):
     * GEMM efficiency gemm_eff_max * g(m) g(n) g(k), g(x) = x / (x + gemm_half_dim), and the
     * launch overhead per kernel (models/compute.h). */
    double gemm_eff_max, gemm_half_dim, launch_s;
    /* NVLink SHARP of the node's NVSwitch (0: none): the fraction of the NVLink rate its
     * all-reduce reaches and its latency per collective (sim/collectives/nvls.c). */
    double nvls_efficiency, nvls_latency_s;
    double fp8; /* peak flop/s of FP8 dense tensor cores (0: none; written only when given) */
    /* NCCL's NVLS-tree between NVLink domains (0: not run): its latency per tree level
     * (sim/collectives/nvls-tree.c) */
    double nvls_tree_latency_s;
} SimparGpuSpec;

/* The links of a node style; a style uses the ones it names. */
typedef struct {
    SimparLinkSpec nvlink; /* ac922: sibling GPU pair; nvswitch: GPU to the NVSwitch */
    SimparLinkSpec nvcpu;  /* ac922: GPU to its CPU */
    SimparLinkSpec xbus;   /* ac922: CPU socket to socket */
    SimparLinkSpec pcie;   /* ac922: CPU0 to the NIC; nvswitch: GPU to its NIC */
    SimparLinkSpec ib;     /* one NIC port to its switch */
    SimparLinkSpec spine;  /* nvswitch: rail to rail; bandwidth unused (nodes x ib: no block) */
    SimparLinkSpec uplink; /* clos: one tier up (ToR to pod, pod to aggregation); latency only */
} SimparLinkFigures;

/* A file's shape beyond its node count: the preset's, or `simpar topology`'s options. A Clos
 * fabric's tiers (style clos; zeros for the other presets), and the GPUs of a rack-scale
 * preset's rack. */
typedef struct {
    guint rack_nodes;        /* servers behind one top-of-rack switch (--rack-nodes) */
    guint pod_gpus;          /* GPUs of a pod of full bisection, whole racks (--pod-gpus) */
    double oversubscription; /* of the aggregation tier: a pod's GPU ports over its uplink, >= 1 */
    double nic_gbps;         /* one NIC port's line rate, Gb/s (--nic-gbps) */
    /* rack-scale presets (racks): the GPUs each rack holds (--rack-gpus), whole compute trays
     * of tray_gpus, the others spares; each GPU with its NIC, its NVLink and its rail as in the
     * preset's full rack. The preset's gpus_per_node in its own fabric; 0 (the preset's) for
     * the other presets and in a fabric of one's own that leaves it unset. */
    guint rack_gpus;
} SimparFabricSpec;

/* Bytes/s GPUs reach per Gb/s of NIC line rate: NCCL's NET_BW, 12.0 GB/s per 100 Gb/s. */
#define SIMPAR_TOPOLOGY_NIC_BPS_PER_GBPS 1.2e8

typedef struct _SimparTopologyPreset SimparTopologyPreset;

/* Appends the whole <platform> element for `nodes` nodes (fabric: style clos only). */
typedef void (*SimparTopologyWriter)(GString *xml, const SimparTopologyPreset *preset, guint nodes,
                                     const SimparFabricSpec *fabric);

struct _SimparTopologyPreset {
    const char *name;
    const char *description; /* one line, for --list and the file's header */
    SimparGpuSpec gpu;
    guint gpus_per_node, nics_per_node;
    /* nvswitch style: the rails NIC r's port goes into, rail r mod rails (rails = NICs unless
     * the preset says: a GB200 NVL72 rack has 72 NICs on the 4 rails of a compute tray) */
    guint rails;
    /* a node is a rack-scale NVLink domain, counted by `simpar topology --racks` */
    gboolean racks;
    /* racks: the GPUs of one compute tray, the step of `simpar topology --rack-gpus` (its NICs
     * on rails 0 .. rails - 1, so a rack of whole trays keeps every rail); else 0 */
    guint tray_gpus;
    SimparLinkFigures links;
    SimparFabricSpec fabric; /* style clos: the preset's fabric; racks: rack_gpus; else zeros */
    SimparTopologyWriter write;
};

const SimparTopologyPreset *simpar_topology_presets(guint *n_presets); /* (transfer none) */
const SimparTopologyPreset *simpar_topology_lookup(const char *name);  /* (transfer none) */
/* The measured compute figures of each GPU model (topologies/compute.ini, compiled in): one
 * group per gpu_model, read by models/compute-data.c. (transfer none) */
GKeyFile *simpar_topology_compute_data(void);
/* Published end-to-end step times of whole jobs (topologies/published.ini, compiled in): one
 * group per case, read by `simpar validate --published`. (transfer none) */
GKeyFile *simpar_topology_published_data(void);
char *simpar_topology_generate(const SimparTopologyPreset *preset,
                               guint nodes); /* (transfer full) */
/* The same with a fabric of one's own (NULL: the preset's); style clos, or a rack-scale preset
 * (its rack_gpus). Check it first (simpar_topology_fabric_invalid,
 * simpar_topology_rack_gpus_invalid). */
char *simpar_topology_generate_fabric(const SimparTopologyPreset *preset, guint nodes,
                                      const SimparFabricSpec *fabric); /* (transfer full) */
/* `racks` racks of a rack-scale preset (gb200-nvl72), each of `rack_gpus` GPUs: whole compute
 * trays (64 of an NVL72 rack's 72 GPUs: 16 of its 18 trays, as training jobs use them so that
 * groups of 64 sit inside one NVLink domain), every per-GPU figure, NIC and rail the full
 * rack's; rack_gpus = the preset's gpus_per_node writes the preset's file byte for byte. Check
 * rack_gpus first (simpar_topology_rack_gpus_invalid). (transfer full) */
char *simpar_topology_generate_racks(const SimparTopologyPreset *preset, guint racks,
                                     guint rack_gpus);
/* NULL when the preset's racks can hold `rack_gpus` GPUs (racks, a multiple of tray_gpus up to
 * gpus_per_node); else why not, naming --rack-gpus, the value and what is valid (transfer
 * full). */
char *simpar_topology_rack_gpus_invalid(const SimparTopologyPreset *preset, gint64 rack_gpus);
/* The GPUs of one node of a file of `preset` with `fabric` (NULL: the preset's): its rack_gpus
 * for a rack-scale preset, else the preset's gpus_per_node. */
guint simpar_topology_node_gpus(const SimparTopologyPreset *preset, const SimparFabricSpec *fabric);
/* The preset that wrote `text` (transfer none), its nodes and its fabric (zeros but for a Clos
 * preset's tiers or a rack-scale preset's rack_gpus): the file's header names them as
 * topology.c writes it, and they regenerate the file byte for byte; NULL for any other file
 * (hand-written, edited, or a header naming more GPUs than the file could hold, whose
 * regeneration could cost gigabytes). */
const SimparTopologyPreset *simpar_topology_recognise(const char *text, gsize len, guint *nodes,
                                                      SimparFabricSpec *fabric);
/* The names of a generated platform's GPUs and links: what the writers print and sim/ reads
 * back (to find the GPUs, to map a representative route onto the real one, to tell the fabric
 * from the nodes). One grammar, here:
 *   node<N>-gpu<G>          a GPU (N, G canonical decimals below 2^31: no sign, no leading 0)
 *   node<N>-<rest>          node N's own copy of a link or router (NVLink, PCIe, NIC port)
 *   spine-<a>-<b>           a rail-optimised fabric's trunk between rails a and b: everybody's
 *   rack<R>-up, pod<P>-up   a Clos rack's or pod's uplinks */
#define SIMPAR_NAME_GPU     "node%u-gpu%u"
#define SIMPAR_NAME_NODE    "node%u-%s"
#define SIMPAR_NAME_SPINE   "spine-%u-%u"
#define SIMPAR_NAME_RACK_UP "rack%u-up"
#define SIMPAR_NAME_POD_UP  "pod%u-up"

typedef enum {
    SIMPAR_LINK_OTHER,   /* none of the names below */
    SIMPAR_LINK_NODE,    /* node<N>-<rest> */
    SIMPAR_LINK_SPINE,   /* spine-... */
    SIMPAR_LINK_RACK_UP, /* rack<R>-up */
    SIMPAR_LINK_POD_UP,  /* pod<P>-up */
} SimparLinkKind;

/* 1 for a GPU's name (*node, *gpu), -1 for one that looks like it but is not (node00-gpu0,
 * node-1-gpu0, a 33-bit number), 0 for another name. */
int simpar_topology_gpu_name(const char *name, guint *node, guint *gpu);
/* What link `name` is: for a node's, *index = N and *rest its name after "node<N>-"; for an
 * uplink, *index = R or P. */
SimparLinkKind simpar_topology_link_kind(const char *name, guint *index, const char **rest);

/* Whether a preset is a Clos fabric, whose shape the options set. */
gboolean simpar_topology_has_fabric(const SimparTopologyPreset *preset);
/* NULL when `fabric` is one the preset can build; else why not, naming the option and what
 * is valid (transfer full). */
char *simpar_topology_fabric_invalid(const SimparTopologyPreset *preset,
                                     const SimparFabricSpec *fabric);

G_END_DECLS
#endif /* SIMPAR_TOPOLOGY_H */
