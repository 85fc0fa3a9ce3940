/* platform.h - a SimGrid platform file as simpar sees it, and the child process that uses it.
 *
 * SimGrid ends the whole process on input it cannot use and loads one platform per process, so
 * every use of a platform runs in a forked child: the file is first checked for well-formed XML
 * (GMarkup, with line numbers), then the child loads it (network/model CM02, crosstraffic off,
 * TCP-gamma 0: the alpha-beta reference), finds the GPUs and runs a job inside a driver actor.
 * The job's text output or GError comes back through a file; a SimGrid abort becomes a GError
 * carrying SimGrid's complaint. Several jobs can run in parallel children (one per mode). A
 * child dies with its parent (PR_SET_PDEATHSIG).
 *
 *   parent: check XML (and whether `simpar topology` wrote it) -> fork (up to `parallel`
 *           children, in the order asked) -> wait -> reply file -> text | GError
 *   child:  simgrid_init -> load -> GPUs node<N>-gpu<G> sorted by (N, G) -> driver actor: job()
 *
 * GPU i is the i-th host in (node, gpu) order; its figures are host properties (peak_fp16_flops,
 * peak_bf16_flops, peak_fp32_flops, peak_fp64_flops, mem_bandwidth_Bps, mem_bytes, gpu_model).
 *
 * Ownership: a SimparPlatform exists only inside the child, for the job's duration (borrowed).
 */
#ifndef SIMPAR_PLATFORM_H
#define SIMPAR_PLATFORM_H
#include "compute.h"
#include "net.h"
G_BEGIN_DECLS

#define SIMPAR_PLATFORM_ERROR (simpar_platform_error_quark())
/* The range of a link's figures: below 1 MB/s a step's transfers outlast any simulated step,
 * past 10 PB/s or 1 s of latency a figure is a unit slip. */
#define SIMPAR_PLATFORM_MIN_BW_BPS 1e6
#define SIMPAR_PLATFORM_MAX_BW_BPS 1e16
#define SIMPAR_PLATFORM_MAX_LAT_S  1.0
/* The largest platform file simpar reads (a 16,384-GPU one `simpar topology` writes is 20 MB). */
#define SIMPAR_PLATFORM_MAX_BYTES ((gsize) 1 << 30)
GQuark simpar_platform_error_quark(void);

typedef enum {
    SIMPAR_PLATFORM_ERROR_INVALID, /* not a SimGrid platform simpar can use */
    SIMPAR_PLATFORM_ERROR_JOB,     /* the job failed; the message says why */
} SimparPlatformError;

typedef struct _SimparPlatform SimparPlatform;

typedef gboolean (*SimparPlatformJob)(const SimparPlatform *platform, gpointer data, GString *out,
                                      GError **error);

/* The parent's check alone: well-formed XML with a <platform> root (what stops SimGrid's parser
 * from ending the process on a broken file). */
gboolean simpar_platform_check(const char *path, GError **error);
/* Runs `job` in a child process with the platform loaded; its output is appended to `out`. */
gboolean simpar_platform_run(const char *path, SimparPlatformJob job, gpointer data, GString *out,
                             GError **error);

/* Runs job(data[i]) for i < n, each in its own child, at most `parallel` at a time, starting
 * job order[k] k-th (order NULL: 0, 1, ...); outs[i] receives job i's output. On failure, the
 * error of the first failing job in job order (by i, whatever the start order). */
gboolean simpar_platform_run_many(const char *path, guint n, guint parallel, SimparPlatformJob job,
                                  gpointer *data, const guint *order, GString **outs,
                                  GError **error);

/* A child running one job, for callers that schedule their own children (simpar sweep). The
 * file is not checked first: give one simpar_platform_run() has loaded, or a generated one. */
typedef struct _SimparPlatformChild SimparPlatformChild;
SimparPlatformChild *simpar_platform_spawn(const char *path, SimparPlatformJob job, gpointer data,
                                           GError **error); /* (transfer full) */
/* Whether the child has ended; with `wait`, waits until it has. */
gboolean simpar_platform_child_ended(SimparPlatformChild *child, gboolean wait);
/* Waits for the child and frees it: its output appended to `out`, or its error. */
gboolean simpar_platform_child_finish(SimparPlatformChild *child, GString *out, GError **error);

const char *simpar_platform_path(const SimparPlatform *p);
guint simpar_platform_n_gpus(const SimparPlatform *p);
/* Routes between GPUs; its `data` is the sg_host_t array by GPU id, which the SimGrid backend
 * uses to place its actors. */
const SimparNet *simpar_platform_net(const SimparPlatform *p); /* (transfer none) */
/* The figures of GPU `gpu` from its host properties (defaults for the model parameters). */
gboolean simpar_platform_gpu(const SimparPlatform *p, guint gpu, SimparGpu *out, GError **error);
/* Appends the SimGrid links (sg_link_t, one per direction) of the route src -> dst of a net
 * from simpar_platform_net(); FALSE, appending nothing, for any other net. */
gboolean simpar_platform_route_links(const SimparNet *net, guint src, guint dst, GPtrArray *out);
/* Of a file `simpar topology` wrote, unchanged: an id of the shape of the route src -> dst of a
 * net from simpar_platform_net(). Two routes of one shape cross the same links, in order, up to
 * which node's copy of a node link ("node<k>-...") they take: their source's node links for the
 * one's source's, their destination's for the one's destination's; the shared fabric links
 * ("spine-...") are the same. -1 for other files and nets, a Clos fabric (whose uplinks are
 * shared by the nodes below them only) and a route of other links. */
gint simpar_platform_route_shape(const SimparNet *net, guint src, guint dst);
/* Whether two SimGrid links (sg_link_t) have the same bandwidth, latency and sharing. */
gboolean simpar_platform_links_alike(gconstpointer a, gconstpointer b);
/* Whether flows that cross a SimGrid link (sg_link_t) share its bandwidth (not a fat pipe). */
gboolean simpar_platform_link_shared(gconstpointer link);
/* A SimGrid link's bandwidth (sg_link_t), bytes per second. */
double simpar_platform_link_bw(gconstpointer link);
/* Sets the bandwidth of links[i] (sg_link_t of the platform of `net`) to bw[i] / divisor, and
 * clears the net's memo (the collectives' plans kept from the links' other bandwidth). In the
 * platform's actor. */
void simpar_platform_links_set_bw(const SimparNet *net, const GPtrArray *links, const double *bw,
                                  double divisor);
/* Links (pointers to sg_link_t) by name: an order that does not depend on addresses; for
 * g_ptr_array_sort. */
gint simpar_platform_link_cmp(gconstpointer a, gconstpointer b);
/* Scales the bandwidth of every fabric link ("spine-...") by `factor`; a factor of 1 restores
 * what the last other factor scaled. In the child, between runs; FALSE for other nets. */
gboolean simpar_platform_scale_fabric(const SimparNet *net, double factor);

/* Whether `v` is a value a calibration file may give link figure `key` (TRUE for a key that is
 * not a link figure); else *range (transfer full) says what is. */
gboolean simpar_platform_link_figure_valid(const char *key, double v, char **range);

/* The network figures of a calibration file (0: the platform's own stays). */
typedef struct {
    double intra_bw_Bps, intra_lat_s; /* intra_node_bandwidth_Bps, intra_node_latency_s */
    double inter_bw_Bps, inter_lat_s; /* inter_node_bandwidth_Bps, inter_node_latency_s */
    double fabric_bw_Bps;             /* fabric_bandwidth_Bps */
    double nvls_lat_s;                /* nvls_latency_s: of every GPU that has NVLink SHARP */
} SimparNetFigures;

/* Applies the link keys of a calibration file (docs/validate.md): every link on a route
 * between two GPUs of one node (both directions) gets intra_node_bandwidth_Bps and every other
 * link inter_node_bandwidth_Bps, but for the trunks of a generated fabric ("spine-...", and a
 * Clos fabric's uplinks "rack<j>-up", "pod<i>-up"), which keep their share (scaled as the route
 * between nodes 0 and 1) unless fabric_bandwidth_Bps gives theirs; the route latencies
 * intra_node_latency_s (between a node's first two GPUs) and inter_node_latency_s (the inter-node
 * links between the first GPUs of nodes 0 and 1) are split evenly over those routes' links;
 * nvls_latency_s is the NVLink SHARP latency of every GPU that has it. Keys not given leave the
 * links as they are. Both backends see the result: SimGrid's links and the routes of
 * simpar_platform_net(); the collectives' kept plans are forgotten. */
gboolean simpar_platform_calibrate_links(const SimparPlatform *p, const char *path, GError **error);
/* The same from figures in memory (in the child, between runs). */
void simpar_platform_set_net_figures(const SimparPlatform *p, const SimparNetFigures *f);
/* The platform's figures as they stand: the route between GPUs 0 and 1 when they share a node
 * (intra); the inter-node links of the route from GPU 0 to the first GPU of the next node
 * (inter: their smallest bandwidth, their summed latency); GPU 0's NVLS latency; 0 where there
 * is none. fabric_bw_Bps is left 0. */
void simpar_platform_net_figures(const SimparPlatform *p, SimparNetFigures *out);

G_END_DECLS
#endif /* SIMPAR_PLATFORM_H */
