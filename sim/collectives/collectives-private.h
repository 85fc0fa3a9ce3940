/* collectives-private.h - what the algorithm files share with collectives.c.
 *
 * Every algorithm describes its schedule twice. The expansion lists it member by member (what
 * each GPU posts, round by round); the closed form goes round by round over the whole group
 * (which transfers run in global round t). A SimparRoundCost summarises one global round: its
 * slowest transfer and whether any transfer crosses nodes. From it come both the closed form
 * (baseLat + sum over rounds of hwLat + slowest transfer) and the delay_s that the expansion
 * gives that round, so the two add exactly the same NCCL constants.
 *
 *   global round t:  [m0 -> m1] [m1 -> m2] ...   ->  SimparRoundCost {max_s, net}
 *   member m:        round t: delay_s = hwLat(net) (+ baseLat if it is m's first round)
 *
 * Members are indices into SimparCollGroup.gpus; routes and nodes come from the group's net.
 */
#ifndef SIMPAR_COLLECTIVES_PRIVATE_H
#define SIMPAR_COLLECTIVES_PRIVATE_H
#include "collectives.h"
G_BEGIN_DECLS

#define SIMPAR_COLL_BIT(kind) (1u << (kind))

/* Which row of NCCL's latency tables an algorithm uses (tuning.cc has no chain or pairwise). */
typedef enum {
    SIMPAR_LAT_RING,
    SIMPAR_LAT_TREE,
} SimparLatRow;

typedef struct {
    double max_s; /* slowest transfer of the round: lat + bytes / bw */
    gboolean used;
    gboolean net; /* some transfer of the round goes between two nodes */
    double lat_s; /* the largest route latency among its transfers */
} SimparRoundCost;

double simpar_coll_xfer_time(const SimparCollGroup *g, guint src, guint dst, double bytes);
guint simpar_coll_chunks(double bytes, const SimparCollParams *p);
gboolean simpar_coll_group_ok(const SimparCollGroup *g);

void simpar_coll_round_add(SimparRoundCost *rc, const SimparCollGroup *g, guint src, guint dst,
                           double bytes);
/* Adds to `rc` a transfer src -> dst that takes `time_s`, on a route of latency `lat_s`. */
void simpar_coll_round_note(SimparRoundCost *rc, const SimparCollGroup *g, guint src, guint dst,
                            double time_s, double lat_s);

/* For hops of a round that all carry the same bytes: each one's route latency and the bandwidth
 * it gets, the smallest of its route's and, over its links, a link's bandwidth divided by the
 * hops on it (the route's alone where the net gives no links). */
void simpar_coll_hops_share(const SimparCollGroup *g, const SimparHop *hops, guint n, double *lat_s,
                            double *bw);
double simpar_coll_round_delay(const SimparRoundCost *rc, SimparLatRow row,
                               const SimparCollParams *p, gboolean first);
/* NCCL's constants (µs in tuning.cc, seconds here) of a concrete protocol: baseLat, and hwLat
 * over NVLink and the network; 0 for NONE. */
double simpar_coll_base_lat(SimparLatRow row, SimparProto proto);
double simpar_coll_hw_lat(SimparLatRow row, SimparProto proto, gboolean net);
/* A step's delay beyond its transfers: hwLat less what the route latency already takes. */
double simpar_coll_step_delay(double hw_s, double route_lat_s);
/* The nodes among the group's members. */
guint simpar_coll_group_nodes(const SimparCollGroup *g);
/* The members by node, nodes in order of first appearance and members in group order:
 * at[node * l + local] = member, for k nodes of l members (transfer full); NULL when the nodes
 * hold different numbers of members. */
guint *simpar_coll_node_layout(const SimparCollGroup *g, guint *k, guint *l);
double simpar_coll_rounds_total(const SimparRoundCost *rc, guint n_rounds, SimparLatRow row,
                                const SimparCollParams *p);

/* A net's memo: one lock for both tables, each created when first needed. */
struct _SimparNetMemo {
    GMutex lock;
    GHashTable *wire; /* collectives.c: CollWireKey set */
    GHashTable *ring; /* ring.c: RingKey -> RingPlan (a reference) */
    gsize ring_hops;  /* the hops its plans hold */
};

/* How many transfers an algorithm's expansion may hold at most (simpar_coll_xfers_bound). */
typedef enum {
    SIMPAR_BOUND_PAIRS,  /* a send and a receive per ordered pair of members */
    SIMPAR_BOUND_ROUNDS, /* per channel and round, each member a send and a receive */
    SIMPAR_BOUND_CHUNKS, /* per chunk, each member to and from at most 3 others, twice */
} SimparXferBound;

#define SIMPAR_COLL_AR  (SIMPAR_COLL_BIT(SIMPAR_COLL_ALL_REDUCE))
#define SIMPAR_COLL_AG  (SIMPAR_COLL_BIT(SIMPAR_COLL_ALL_GATHER))
#define SIMPAR_COLL_RS  (SIMPAR_COLL_BIT(SIMPAR_COLL_REDUCE_SCATTER))
#define SIMPAR_COLL_BR  (SIMPAR_COLL_BIT(SIMPAR_COLL_BROADCAST))
#define SIMPAR_COLL_RD  (SIMPAR_COLL_BIT(SIMPAR_COLL_REDUCE))
#define SIMPAR_COLL_A2A (SIMPAR_COLL_BIT(SIMPAR_COLL_ALL_TO_ALL))

/* The algorithms, one row each, one file each (<file>.c defines simpar_coll_<file>_expand and
 * simpar_coll_<file>_closed_form, declared below from the row): the name simpar_coll_algo_lookup
 * knows it by, the kinds it implements, the row of NCCL's latency tables it takes, how many
 * transfers its expansion may hold, whether its file also gives the shortcuts
 * simpar_coll_<file>_eval_idle and _fuse (1; SimparCollAlgo.eval_idle and .fuse: without them
 * the expansion is built and evaluated), whether its closed form prices the links its own
 * transfers share (SimparCollShares: the SimGrid backend then counts that sharing in its fused
 * transfers' idle time), and what `simpar collective --list` says of it.
 * collectives.c builds its table from these rows (the protocol's wire bytes wrap every entry);
 * a new algorithm is a file (and its line in meson.build) and a row. NVLS and NVLS-tree run the
 * ring on a group that cannot use them (collectives.c, coll_runs_as). */
#define SIMPAR_COLL_ALGOS(X)                                                                       \
    X(RING, "ring", ring, SIMPAR_COLL_AR | SIMPAR_COLL_AG | SIMPAR_COLL_RS, SIMPAR_LAT_RING,       \
      SIMPAR_BOUND_ROUNDS, 1, SIMPAR_SHARES_CHANNELS,                                              \
      "ring over the group order: 2(n-1) steps of S/n for all-reduce")                             \
    X(TREE, "tree", tree, SIMPAR_COLL_AR, SIMPAR_LAT_TREE, SIMPAR_BOUND_CHUNKS, 0,                 \
      SIMPAR_SHARES_NONE,                                                                          \
      "NCCL double binary tree between nodes, chains inside them; reduce up, broadcast down, "     \
      "pipelined")                                                                                 \
    X(CHAIN, "chain", chain, SIMPAR_COLL_BR | SIMPAR_COLL_RD, SIMPAR_LAT_RING,                     \
      SIMPAR_BOUND_CHUNKS, 0, SIMPAR_SHARES_NONE,                                                  \
      "pipelined chain from (broadcast) or to (reduce) the root")                                  \
    X(HIERARCHICAL, "hierarchical", hierarchical, SIMPAR_COLL_AR, SIMPAR_LAT_RING,                 \
      SIMPAR_BOUND_ROUNDS, 0, SIMPAR_SHARES_ALWAYS,                                                \
      "reduce-scatter in node, all-reduce across nodes, all-gather in node")                       \
    X(PAIRWISE, "pairwise", pairwise, SIMPAR_COLL_A2A, SIMPAR_LAT_RING, SIMPAR_BOUND_PAIRS, 0,     \
      SIMPAR_SHARES_ALWAYS, "n-1 rounds at once, round r sends S/n to member m+r")                 \
    X(NVLS, "nvls", nvls, SIMPAR_COLL_AR, SIMPAR_LAT_RING, SIMPAR_BOUND_CHUNKS, 0,                 \
      SIMPAR_SHARES_NONE,                                                                          \
      "NVLink SHARP on one NVSwitch node that has it: S(n+1)/n each way per GPU (else the ring)")  \
    X(NVLS_TREE, "nvlstree", nvls_tree, SIMPAR_COLL_AR, SIMPAR_LAT_RING, SIMPAR_BOUND_CHUNKS, 0,   \
      SIMPAR_SHARES_NONE,                                                                          \
      "NCCL's NVLS-tree between NVLink domains that have it: NVLS inside each, each GPU's share "  \
      "across the domains, pipelined (else the ring)")

#define SIMPAR_COLL_SHORTCUTS_0(file)
#define SIMPAR_COLL_SHORTCUTS_1(file)                                                              \
    void simpar_coll_##file##_eval_idle(SimparCollKind kind, const SimparCollGroup *g,             \
                                        double bytes, const SimparCollParams *p,                   \
                                        const double *start, double *end);                         \
    void simpar_coll_##file##_fuse(SimparCollKind kind, const SimparCollGroup *g, double bytes,    \
                                   guint member, GArray *out);
#define SIMPAR_COLL_DECLARE(id, name, file, kinds, row, bound, shortcuts, shares, description)     \
    void simpar_coll_##file##_expand(SimparCollKind kind, const SimparCollGroup *g, double bytes,  \
                                     guint root, const SimparCollParams *p, SimparExpansion *out); \
    double simpar_coll_##file##_closed_form(SimparCollKind kind, const SimparCollGroup *g,         \
                                            double bytes, guint root, const SimparCollParams *p);  \
    SIMPAR_COLL_SHORTCUTS_##shortcuts(file)
SIMPAR_COLL_ALGOS(SIMPAR_COLL_DECLARE)
G_END_DECLS
#endif /* SIMPAR_COLLECTIVES_PRIVATE_H */
