/* platform-private.h - what the parts of the platform share (sim/platform*.c): the loaded
 * platform, and the helpers one part gives the others. Not used outside sim/.
 *
 *   platform.c            the file's check in the parent, the child that loads it, the jobs
 *   platform-net.c        in the child: the GPUs, their properties, routes, links, shapes
 *   platform-calibrate.c  in the child: a calibration file's network figures on the links
 *   platform-graph.c      in the parent: the file's zones and routes, bounded and checked
 */
#ifndef SIMPAR_PLATFORM_PRIVATE_H
#define SIMPAR_PLATFORM_PRIVATE_H
#include "platform.h"
#include <simgrid/host.h>
#include <simgrid/link.h>
G_BEGIN_DECLS

/* What a platform file says it is, when `simpar topology` wrote it byte for byte: the preset's
 * GPUs per node and the node count (0, 0 for any other file); of a Clos fabric, the nodes per
 * rack and per pod (0, 0 for the other styles, whose nodes the fabric treats alike). */
typedef struct {
    guint gpus_per_node, nodes;
    guint rack_nodes, pod_nodes;
} PlatformGenerated;

/* A route looked up lately: platform_route's direct-mapped memo (a collective's closed form
 * asks for the same few routes again and again: over a million lookups in a formula sweep of
 * 16,128 configurations, of 184 pairs). tag: the key + 1 (0: empty). */
#define PLATFORM_ROUTE_MEMO 1024

typedef struct {
    guint64 tag;
    SimparRoute route;
} PlatformRouteSlot;

struct _SimparPlatform {
    const char *path;
    guint n_gpus, n_nodes;
    sg_host_t *hosts; /* by GPU id */
    guint *nodes;     /* node index (0-based, dense) by GPU id */
    SimparNet net;
    GHashTable *routes;                 /* (src << 32 | dst) -> SimparRoute */
    PlatformRouteSlot *route_memo;      /* PLATFORM_ROUTE_MEMO of them, in front of routes */
    GHashTable *route_links;            /* (src << 32 | dst) -> GPtrArray of sg_link_t */
    guint gpus_per_node;                /* of a file `simpar topology` wrote, unchanged; else 0 */
    guint rack_nodes, pod_nodes;        /* of such a Clos file; else 0 */
    const PlatformGenerated *generated; /* the file as the parent found it, or NULL */
    gint *shapes;                       /* per representative pair: its route shape, or -1 */
    GHashTable *shape_ids;              /* route shape key -> id + 1 */
    GPtrArray *fabric;                  /* the fabric links (sg_link_t), found on first use */
    double *fabric_bw;                  /* their bandwidths before any scaling */
    double *nvls;                       /* by GPU id: NVLS efficiency, latency; NULL: none */
    double *nvls_tree; /* by GPU id: NVLS-tree latency per level between domains; NULL: none */
    GHashTable *links_by_name; /* link name -> sg_link_t, built on first use */
    SimparPlatformJob job;
    gpointer data;
    GString *out;
    GError *error;
    int reply_fd; /* the child's reply file: platform_fatal() answers through it */
};

/* platform.c: ends the child with `error` (transfer full) as its reply, as if the job had
 * returned it: for input faults found deep in a run (no route between two GPUs) that must
 * not reach an assertion. */
G_NORETURN void platform_fatal(SimparPlatform *p, GError *error);

/* platform.c: what `simpar topology` preset wrote `text` byte for byte ({0, 0} for another) */
void platform_generated(const char *text, gsize len, PlatformGenerated *out);

/* platform-net.c; the GPUs' and links' names are topology.h's (simpar_topology_gpu_name,
 * simpar_topology_link_kind) */
void platform_find_gpus(SimparPlatform *p);
void platform_find_generated(SimparPlatform *p);
guint platform_route_hash(gconstpointer key);
void platform_route(const SimparNet *net, guint src, guint dst, SimparRoute *out);
double platform_link_bw(const SimparNet *net, gconstpointer link);
guint platform_node(const SimparNet *net, guint gpu);
gboolean platform_nvls(const SimparNet *net, guint gpu, double *eff, double *lat_s);
gboolean platform_nvls_tree(const SimparNet *net, guint gpu, double *lat_s);
gboolean platform_read_nvls(SimparPlatform *p, GError **error);
void platform_route_links(const SimparPlatform *p, guint a, guint b, GPtrArray *out);
GHashTable *platform_intra_links(const SimparPlatform *p);
guint platform_count_links(const SimparPlatform *p, guint a, guint b, GHashTable *intra,
                           gboolean want_intra);
/* 0 with the node of a node link "node<k>-...", -1 for a fabric link */
int platform_node_link(const char *name, guint *node);
/* TRUE for a generated fabric's links: "spine-...", "rack<j>-up", "pod<i>-up" */
gboolean platform_fabric_link(const char *name);

/* platform-graph.c: a platform file's zones and routes as the parent reads it, before SimGrid
 * does (what it checks: the file's head comment). Each call gives NULL, or why the file is
 * refused (transfer full); the end of a zone and the finish give the line it is about. */
typedef struct _PlatformGraph PlatformGraph;
PlatformGraph *platform_graph_new(void);
void platform_graph_free(PlatformGraph *g);
char *platform_graph_start(PlatformGraph *g, const char *element, const char **names,
                           const char **values, int line);
char *platform_graph_end(PlatformGraph *g, const char *element, int *line);
char *platform_graph_finish(PlatformGraph *g, int *line);

G_END_DECLS
#endif /* SIMPAR_PLATFORM_PRIVATE_H */
