/* net.h - the network as the collective algorithms and the analytic backend see it.
 *
 * GPUs are numbered 0..n-1 in platform order (node-major: node<N>-gpu<G> sorted by N, then G).
 * A route is what SimGrid reports for a GPU-to-GPU path on an idle network: the sum of the link
 * latencies and the smallest link bandwidth. The SimGrid backend fills a SimparNet from the
 * loaded platform; tests build uniform ones directly.
 *
 *   SimparNet { route(src, dst) -> {lat_s, bw_Bps},  node(gpu) -> node index,
 *               links(src, dst) -> the route's links (optional), link_bw(link) -> bytes/s,
 *               nvls(gpu) -> the node's NVLink SHARP figures (optional) }
 *
 * The links let an algorithm see transfers of one round that share a link (several GPUs behind
 * one NIC): a net without them (links NULL) gives every route links of its own.
 *
 * A net may own a memo (simpar_net_memo_new, collectives.h): what the collectives worked out
 * for it once (each group's rings, the protocol NCCL's tuning picks) and ask for again and
 * again. Whoever changes the net's routes or links clears it (simpar_net_memo_clear); a net
 * without one (memo NULL: tests and fits, which change their figures under one address) is
 * asked every time.
 *
 * Ownership: the caller owns the SimparNet, whatever `data` points to and the memo.
 */
#ifndef SIMPAR_NET_H
#define SIMPAR_NET_H
#include <glib.h>
G_BEGIN_DECLS

typedef struct {
    double lat_s;  /* sum of link latencies along the route, seconds */
    double bw_Bps; /* bottleneck bandwidth, bytes per second (per direction) */
} SimparRoute;

typedef struct _SimparNet SimparNet;
typedef struct _SimparNetMemo SimparNetMemo;

struct _SimparNet {
    void (*route)(const SimparNet *net, guint src, guint dst, SimparRoute *out);
    guint (*node)(const SimparNet *net, guint gpu);
    gpointer data;
    /* Optional: appends the route's links (opaque, one per direction) to `out`; FALSE, with
     * nothing appended, when they are not known. */
    gboolean (*links)(const SimparNet *net, guint src, guint dst, GPtrArray *out);
    double (*link_bw)(const SimparNet *net, gconstpointer link); /* bytes per second */
    /* Optional: TRUE when the GPU's node has NVLink SHARP (an NVSwitch that reduces and
     * multicasts, NCCL's NVLS algorithm), with the fraction of the GPU's NVLink rate it reaches
     * and its latency per collective; FALSE (or NULL) where it has none. */
    gboolean (*nvls)(const SimparNet *net, guint gpu, double *eff, double *lat_s);
    /* Optional: TRUE when NCCL runs NVLS-tree between the GPU's NVLink domain and others (the
     * platform says so), with the latency per level of its tree between domains; FALSE (or
     * NULL) elsewhere. */
    gboolean (*nvls_tree)(const SimparNet *net, guint gpu, double *lat_s);
    SimparNetMemo *memo; /* optional (see above) */
};

static inline void
simpar_net_route(const SimparNet *net, guint src, guint dst, SimparRoute *out)
{
    net->route(net, src, dst, out);
}

static inline guint
simpar_net_node(const SimparNet *net, guint gpu)
{
    return net->node(net, gpu);
}

G_END_DECLS
#endif /* SIMPAR_NET_H */
