/* collectives.h - collective algorithms: each one a p2p expansion and a closed form.
 *
 * One file per algorithm (ring.c, tree.c, chain.c, hierarchical.c, pairwise.c, nvls.c) gives a
 * SimparCollAlgo; collectives.c holds the table, the expansion container, the idle-network
 * evaluator of an expansion and the NCCL-like default choice.
 *
 * Sizes follow nccl-tests (`doc/PERFORMANCE.md`): `bytes` is S, the size of the operation:
 *   all-reduce, broadcast, reduce   S = count * dtype size (the buffer every rank holds)
 *   all-gather, reduce-scatter      S = count * dtype size * n (the gathered / unreduced buffer)
 *   all-to-all                      S = the whole send buffer of one rank (n blocks)
 *
 * Expansion: for every member of the group, an ordered list of rounds. In a round the member
 * first waits `delay_s` (protocol latency the network model does not see), then posts all of
 * the round's transfers at once (sends and receives, to and from other members) and waits for
 * all of them. A transfer starts when both its sender and its receiver have posted it
 * (rendezvous), and on an idle network takes lat + bytes / bw of its route. Transfers between the
 * same ordered pair of members are matched in FIFO order. This is what the SimGrid backend
 * replays with mailboxes ("exact" mode), and what simpar_expansion_eval_idle() computes.
 *
 *   ring all-reduce, n = 4, member 1:
 *     round 0: send S/4 -> 2, recv S/4 <- 0
 *     round 1: send S/4 -> 2, recv S/4 <- 0   ... 2(n-1) rounds
 *
 * Closed form: the time from a common start of all members to the end of the last one, on an
 * idle network, from the routes between members (SimparNet). Where hops differ, a round takes
 * as long as its slowest transfer. Tests hold each closed form against the evaluated expansion
 * and against SimGrid.
 *
 * Ownership: the algorithm table is static; a SimparExpansion is caller-owned
 * (simpar_expansion_new / simpar_expansion_free).
 */
#ifndef SIMPAR_COLLECTIVES_H
#define SIMPAR_COLLECTIVES_H
#include "net.h"
#include "schedule.h"
G_BEGIN_DECLS

#define SIMPAR_COLL_ERROR (simpar_coll_error_quark())
GQuark simpar_coll_error_quark(void);

typedef enum {
    SIMPAR_COLL_ERROR_INVALID, /* unknown algorithm, or one that cannot run this collective */
} SimparCollError;

/* The NCCL protocol a collective runs with, as NCCL's tuner models it (NVIDIA/nccl
 * src/graph/tuning.cc at 5067397c): baseLat once, then per step hwLat of the step's link type,
 * where it exceeds the latency of the step's routes (hwLat is NCCL's whole per-step latency);
 * a ring across K nodes pays the network's hwLat on 2(K-1) of its all-reduce steps (K-1 for
 * all-gather and reduce-scatter) and on the others its in-node one, at least NCCL's network
 * overhead (1 us, 3 us for Simple). Each protocol moves its data at a fraction of the link rate:
 * the transfers carry bytes / efficiency (ring: LL 1/2, LL128 0.92, Simple 1; tree: LL 1/3.8,
 * LL128 7/9 on one node and 120/128 across nodes, Simple 0.92). NONE adds nothing (the network
 * alone). AUTO runs each collective with the protocol of smallest closed form for its algorithm,
 * as NCCL's tuner keeps the cheapest (algorithm, protocol). */
typedef enum {
    SIMPAR_PROTO_NONE,
    SIMPAR_PROTO_LL,
    SIMPAR_PROTO_LL128,
    SIMPAR_PROTO_SIMPLE,
    SIMPAR_N_PROTOS,
    SIMPAR_PROTO_AUTO = SIMPAR_N_PROTOS, /* not a protocol: choose one */
} SimparProto;

/* The members of one collective: global GPU ids, in group order. */
typedef struct {
    guint n;
    const guint *gpus; /* n GPU ids */
    const SimparNet *net;
} SimparCollGroup;

typedef struct {
    SimparProto proto;
    double chunk_bytes; /* pipelining chunk of chain and tree algorithms (default 512 KiB) */
    guint max_chunks;   /* at most this many chunks per pipelined collective (default 64) */
} SimparCollParams;

void simpar_coll_params_init(SimparCollParams *p);

typedef struct {
    guint peer; /* member index */
    gboolean send;
    double bytes;
    double idle_s; /* its time on an idle network where the algorithm knows it better than the
                    * route (links its round shares); 0: lat + bytes / bw of the route */
} SimparXfer;

typedef struct {
    double delay_s;
    guint first, n; /* into the expansion's transfers */
} SimparRound;

typedef struct {
    guint n_members;
    GArray *rounds;      /* SimparRound, member 0's rounds, then member 1's, ... */
    GArray *xfers;       /* SimparXfer */
    guint *member_first; /* n_members + 1 offsets into rounds */
} SimparExpansion;

SimparExpansion *simpar_expansion_new(guint n_members); /* (transfer full) */
void simpar_expansion_free(SimparExpansion *e);
/* Member m's transfers summed per (peer, direction), in first-use order, appended to `out`. */
void simpar_expansion_fuse(const SimparExpansion *e, guint m, GArray *out);
/* Builders used by the algorithms: rounds are appended to `member`, which must be the member
 * being built (members are built in order 0..n-1). */
void simpar_expansion_begin_member(SimparExpansion *e, guint member);
void simpar_expansion_round(SimparExpansion *e, double delay_s);
void simpar_expansion_xfer(SimparExpansion *e, guint peer, gboolean send, double bytes);
/* The same with the transfer's idle time given (SimparXfer.idle_s). */
void simpar_expansion_xfer_timed(SimparExpansion *e, guint peer, gboolean send, double bytes,
                                 double idle_s);
void simpar_expansion_end(SimparExpansion *e);

/* Whether an algorithm's closed form prices the links its own transfers share: then its fused
 * transfers share them too on an idle network, and their idle time counts that. */
typedef enum {
    SIMPAR_SHARES_NONE,     /* each transfer priced on its own route */
    SIMPAR_SHARES_ALWAYS,   /* a round's transfers all at once (hierarchical, pairwise) */
    SIMPAR_SHARES_CHANNELS, /* the ring's channels, where it runs more than one */
} SimparCollShares;

typedef struct {
    const char *name; /* "ring", "tree", "chain", "hierarchical", "pairwise", "nvls" */
    const char *description;
    guint kinds; /* bit (1u << SimparCollKind) for each kind it implements */
    SimparCollShares shares;
    void (*expand)(SimparCollKind kind, const SimparCollGroup *g, double bytes, guint root,
                   const SimparCollParams *p, SimparExpansion *out);
    double (*closed_form)(SimparCollKind kind, const SimparCollGroup *g, double bytes, guint root,
                          const SimparCollParams *p);
    /* Optional: what simpar_expansion_eval_idle() gives for its expansion, bit for bit, without
     * building it (the ring's expansion holds 4n(n-1) transfers); NULL: evaluate the expansion. */
    void (*eval_idle)(SimparCollKind kind, const SimparCollGroup *g, double bytes,
                      const SimparCollParams *p, const double *start, double *end);
    /* Optional: member m's transfers of the expansion summed per (peer, direction), in
     * first-use order, appended to `out` (SimparXfer) without building the expansion, bit for
     * bit what simpar_expansion_fuse() gives; NULL: fuse the expansion. */
    void (*fuse)(SimparCollKind kind, const SimparCollGroup *g, double bytes,
                 const SimparCollParams *p, guint member, GArray *out);
} SimparCollAlgo;

/* The table's functions resolve the protocol (simpar_coll_proto) and give the transfers their
 * protocol's wire bytes before the algorithm runs. */

/* One transfer of a round whose transfers all run at once (members src -> dst). */
typedef struct {
    guint src, dst;
    double bytes;
} SimparHop;

/* The times of `n` transfers that run at once, sharing links: each takes its route's latency
 * plus, over the links of its route, the longest time that link needs for all the bytes of the
 * round that cross it (its load / its bandwidth). Where no link carries two transfers, or the
 * net does not give links, that is lat + bytes / bw of the route, bit for bit. */
void simpar_coll_hops_time(const SimparCollGroup *g, const SimparHop *hops, guint n, double *out);

/* The hops of one round of the ring algorithm on `g` for `bytes` (ring.c: one ring over the
 * group order, or channels rotated through the nodes), appended to `hops` (SimparHop) with
 * their idle times, links shared, to `hop_s` (double); returns the number of channels. */
guint simpar_coll_ring_hops(const SimparCollGroup *g, double bytes, GArray *hops, GArray *hop_s);
/* The number of channels alone (known answers kept: cheap to ask again). */
guint simpar_coll_ring_channels(const SimparCollGroup *g, double bytes);
/* A net's memo (net.h): the ring plans and protocol choices kept for it, at most a bounded
 * number (each table is emptied when full). Thread-safe. */
SimparNetMemo *simpar_net_memo_new(void); /* (transfer full) */
void simpar_net_memo_free(SimparNetMemo *memo);
/* Forgets what was kept: the net's routes or link figures changed. NULL: nothing. */
void simpar_net_memo_clear(SimparNetMemo *memo);

/* TRUE when "nvls" runs as NVLink SHARP on `g` (every member on one node that has it, at
 * least two members; nvls.c), with the smallest efficiency and largest latency of its GPUs
 * (either pointer may be NULL); FALSE when it would run the ring. */
gboolean simpar_coll_nvls_usable(const SimparCollGroup *g, double *eff, double *lat_s);
/* TRUE when "nvlstree" runs as NCCL's NVLS-tree on `g` (at least two NVLink domains of equal
 * member counts >= 2, every member with NVLS and the platform's NVLS-tree; nvls-tree.c). */
gboolean simpar_coll_nvls_tree_usable(const SimparCollGroup *g);
/* The algorithm that runs when `algo` is asked for on `g`: "nvls" is the ring where it is not
 * usable; every other algorithm is itself. */
const SimparCollAlgo *simpar_coll_runs_as(const SimparCollAlgo *algo, const SimparCollGroup *g);
/* At most how many transfers (sends and receives) `algo`'s expansion of this collective holds,
 * known without building it: what playing it costs in memory and on SimGrid (collective
 * --collectives played on 4,096 GPUs asked for 8 GiB). */
double simpar_coll_xfers_bound(const SimparCollAlgo *algo, SimparCollKind kind,
                               const SimparCollGroup *g, double bytes, const SimparCollParams *p);
const SimparCollAlgo *simpar_coll_algos(guint *n); /* (transfer none) */
/* The ring's row: the algorithm whose rounds the backends count, check for contention and
 * evaluate without building them (simpar_coll_ring_hops, _channels) (transfer none). */
const SimparCollAlgo *simpar_coll_ring(void);
/* "ring, tree, ...": the algorithms' names, for help texts and errors (interned). */
const char *simpar_coll_algo_names(void);
/* "auto" returns NULL with no error: the caller then uses simpar_coll_choose(). */
gboolean simpar_coll_algo_lookup(const char *name, const SimparCollAlgo **out, GError **error);
/* The NCCL-like default: the algorithm of smallest closed-form time among those NCCL would
 * consider for this kind (all-reduce: ring, tree, and nvls where it is usable; all-gather /
 * reduce-scatter: ring; broadcast / reduce: chain; all-to-all: pairwise). Never NULL. */
const SimparCollAlgo *simpar_coll_choose(SimparCollKind kind, const SimparCollGroup *g,
                                         double bytes, const SimparCollParams *p);
/* The protocol `p` resolves to for this collective and algorithm (AUTO: the one of smallest
 * closed form; others: themselves). */
SimparProto simpar_coll_proto(const SimparCollAlgo *algo, SimparCollKind kind,
                              const SimparCollGroup *g, double bytes, guint root,
                              const SimparCollParams *p);

/* Idle-network evaluation of an expansion: member m starts at start[m]; end[m] receives the time
 * its last round finishes. Deadlock (a transfer never matched) is a programming error. */
void simpar_expansion_eval_idle(const SimparExpansion *e, const SimparCollGroup *g,
                                const double *start, double *end);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(SimparExpansion, simpar_expansion_free)
G_END_DECLS
#endif /* SIMPAR_COLLECTIVES_H */
