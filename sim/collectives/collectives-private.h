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

/* The algorithms, one file each; collectives.c puts them in its table. */
void simpar_coll_ring_expand(SimparCollKind kind, const SimparCollGroup *g, double bytes,
                             guint root, const SimparCollParams *p, SimparExpansion *out);
double simpar_coll_ring_closed_form(SimparCollKind kind, const SimparCollGroup *g, double bytes,
                                    guint root, const SimparCollParams *p);
void simpar_coll_ring_eval_idle(SimparCollKind kind, const SimparCollGroup *g, double bytes,
                                const SimparCollParams *p, const double *start, double *end);
void simpar_coll_ring_fuse(SimparCollKind kind, const SimparCollGroup *g, double bytes,
                           guint member, GArray *out);
void simpar_coll_tree_expand(SimparCollKind kind, const SimparCollGroup *g, double bytes,
                             guint root, const SimparCollParams *p, SimparExpansion *out);
double simpar_coll_tree_closed_form(SimparCollKind kind, const SimparCollGroup *g, double bytes,
                                    guint root, const SimparCollParams *p);
void simpar_coll_chain_expand(SimparCollKind kind, const SimparCollGroup *g, double bytes,
                              guint root, const SimparCollParams *p, SimparExpansion *out);
double simpar_coll_chain_closed_form(SimparCollKind kind, const SimparCollGroup *g, double bytes,
                                     guint root, const SimparCollParams *p);
void simpar_coll_hierarchical_expand(SimparCollKind kind, const SimparCollGroup *g, double bytes,
                                     guint root, const SimparCollParams *p, SimparExpansion *out);
double simpar_coll_hierarchical_closed_form(SimparCollKind kind, const SimparCollGroup *g,
                                            double bytes, guint root, const SimparCollParams *p);
void simpar_coll_pairwise_expand(SimparCollKind kind, const SimparCollGroup *g, double bytes,
                                 guint root, const SimparCollParams *p, SimparExpansion *out);
double simpar_coll_pairwise_closed_form(SimparCollKind kind, const SimparCollGroup *g, double bytes,
                                        guint root, const SimparCollParams *p);

void simpar_coll_nvls_expand(SimparCollKind kind, const SimparCollGroup *g, double bytes,
                             guint root, const SimparCollParams *p, SimparExpansion *out);
double simpar_coll_nvls_closed_form(SimparCollKind kind, const SimparCollGroup *g, double bytes,
                                    guint root, const SimparCollParams *p);
void simpar_coll_nvls_tree_expand(SimparCollKind kind, const SimparCollGroup *g, double bytes,
                                  guint root, const SimparCollParams *p, SimparExpansion *out);
double simpar_coll_nvls_tree_closed_form(SimparCollKind kind, const SimparCollGroup *g,
                                         double bytes, guint root, const SimparCollParams *p);
G_END_DECLS
#endif /* SIMPAR_COLLECTIVES_PRIVATE_H */
