/* ring.c - ring all-reduce, all-gather and reduce-scatter, over one ring or over channels.
 *
 * Member m sends S/n to m+1 and receives S/n from m-1 (mod n) in every round:
 *
 *   reduce-scatter   n-1 rounds     (NCCL runRing: send, n-2 x recv-reduce-send, recv-reduce)
 *   all-gather       n-1 rounds
 *   all-reduce       2(n-1) rounds  = reduce-scatter, then all-gather (reference 5.1)
 *
 *   n = 4:   0 -> 1 -> 2 -> 3 -> 0      every hop busy in every round
 *
 * Channels. NCCL splits the buffer over channels, each a ring of its own through every member
 * (src/graph/search.cc builds them, src/graph/connect.cc links them; the ring all-reduce kernel
 * runs one per channel). Across nodes its rings do not leave every node through the same GPU:
 * on a DGX, with a NIC per GPU, each channel enters and leaves a node on rails of its own, so C
 * channels drive C NICs at once. Here, for a group of K >= 2 nodes holding L >= 2 members each:
 * the members grouped by node (nodes in order of first appearance, members in group order), and
 * channel c visits every node's members rotated by c,
 *
 *   K = 2, L = 4, channel 1:  a1 a2 a3 a0 | b1 b2 b3 b0 | (a1)
 *
 * so that channel c leaves each node from its member c - 1 and enters the next at its member c:
 * L channels leave a node through L different GPUs (and their NICs, where they have their
 * own), while inside a node every channel passes the same hops. Each channel carries S/L: in
 * every round, S/(L n) per hop and channel. Transfers of a round that cross one link share it: a
 * hop gets the smallest of its route's bandwidth and, over its links, a link's bandwidth divided
 * by the hops on it (simpar_coll_hops_share), which is what SimGrid gives the L flows of a GPU's
 * NVLink and the flows of several GPUs behind one NIC. The ring runs with L channels where they
 * move more bytes per second than one ring over the group order (as NCCL's search keeps the
 * graph of most bandwidth), else as one ring: behind a single port per node, channels gain
 * nothing.
 *
 * Every hop works in every round, so each round lasts as long as its slowest hop; the closed
 * form is rounds * (hwLat + slowest hop) + baseLat. The expansion keeps one transfer per hop,
 * channel and round (NCCL's chunks only divide these bytes further).
 */
#include "collectives-private.h"
#include <string.h>

static gboolean
ring_kind_ok(SimparCollKind kind)
{
    return kind == SIMPAR_COLL_ALL_REDUCE || kind == SIMPAR_COLL_ALL_GATHER ||
           kind == SIMPAR_COLL_REDUCE_SCATTER;
}

static guint
ring_rounds(SimparCollKind kind, guint n)
{
    return kind == SIMPAR_COLL_ALL_REDUCE ? 2 * (n - 1) : n - 1;
}

/* The rings of one group, whatever the size: channel c's next and previous member of m, and
 * its hop m -> next as a route latency and the bandwidth the hop gets. */
typedef struct {
    guint n, channels, nodes;
    guint *next, *prev; /* [c * n + m] */
    double *lat_s, *bw; /* [c * n + m] */
    double max_lat;     /* the largest route latency of a hop */
    gboolean net;       /* some hop goes between two nodes */
} RingPlan;

static void
ring_plan_clear(RingPlan *rp)
{
    g_clear_pointer(&rp->next, g_free);
    g_clear_pointer(&rp->prev, g_free);
    g_clear_pointer(&rp->lat_s, g_free);
    g_clear_pointer(&rp->bw, g_free);
}

static void
ring_plan_alloc(RingPlan *rp, guint n, guint channels)
{
    *rp = (RingPlan){.n = n,
                     .channels = channels,
                     .next = g_new(guint, n * channels),
                     .prev = g_new(guint, n * channels),
                     .lat_s = g_new(double, n *channels),
                     .bw = g_new(double, n *channels)};
}

/* The bytes each hop of a round carries for a collective of `bytes`. */
static double
ring_hop_bytes(const RingPlan *rp, double bytes)
{
    return rp->channels == 1 ? bytes / rp->n : bytes / ((double) rp->channels * rp->n);
}

/* Hop i's time for a collective of `bytes`: one ring, lat + bytes / bw of its route, as
 * simpar_coll_xfer_time gives it. */
static double
ring_hop_s(const RingPlan *rp, guint i, double bytes)
{
    return rp->lat_s[i] + ring_hop_bytes(rp, bytes) / rp->bw[i];
}

static void
ring_plan_note(RingPlan *rp, const SimparCollGroup *g, guint i, guint m)
{
    rp->max_lat = i == 0 ? rp->lat_s[i] : MAX(rp->max_lat, rp->lat_s[i]);
    rp->net = rp->net ||
              simpar_net_node(g->net, g->gpus[m]) != simpar_net_node(g->net, g->gpus[rp->next[i]]);
}

/* One ring over the group order; each hop at its route's figures. */
static void
ring_plan_flat(const SimparCollGroup *g, RingPlan *rp)
{
    ring_plan_alloc(rp, g->n, 1);
    rp->nodes = simpar_coll_group_nodes(g);
    for (guint m = 0; m < g->n; m++) {
        rp->next[m] = (m + 1) % g->n, rp->prev[m] = (m + g->n - 1) % g->n;
        SimparRoute r;
        simpar_net_route(g->net, g->gpus[m], g->gpus[rp->next[m]], &r);
        g_assert(r.bw_Bps > 0.0);
        rp->lat_s[m] = r.lat_s, rp->bw[m] = r.bw_Bps;
        ring_plan_note(rp, g, m, m);
    }
}

/* The members by node, `at`[node * l + local] (transfer full): FALSE when the group is on one
 * node, has one member per node, or nodes of different sizes, or the net gives no links. */
static gboolean
ring_layout(const SimparCollGroup *g, guint **at, guint *k, guint *l)
{
    if (g->net->links == NULL || g->net->link_bw == NULL || g->n < 4)
        return FALSE;
    *at = simpar_coll_node_layout(g, k, l);
    if (*at != NULL && *k >= 2 && *l >= 2)
        return TRUE;
    g_clear_pointer(at, g_free);
    return FALSE;
}

/* L channels, channel c through every node's members rotated by c; each hop at its share of
 * the links the round's hops cross. */
static void
ring_plan_channels(const SimparCollGroup *g, const guint *at, guint k, guint l, RingPlan *rp)
{
    guint n = g->n;
    ring_plan_alloc(rp, n, l);
    rp->nodes = k;
    g_autofree SimparHop *hops = g_new(SimparHop, n * l);
    for (guint c = 0; c < l; c++)
        for (guint i = 0; i < n; i++) { /* position i: node i / l, local (c + i) mod l */
            guint j = (i + 1) % n;
            guint m = at[i / l * l + (c + i) % l], next = at[j / l * l + (c + j) % l];
            rp->next[c * n + m] = next, rp->prev[c * n + next] = m;
            hops[c * n + m] = (SimparHop){m, next, 1};
        }
    simpar_coll_hops_share(g, hops, n * l, rp->lat_s, rp->bw);
    for (guint i = 0; i < n * l; i++)
        ring_plan_note(rp, g, i, i % n);
}

/* The slowest hop's bandwidth: what a byte of the collective costs, per round, is 1 / (hop
 * share of the collective x this). */
static double
ring_plan_min_bw(const RingPlan *rp)
{
    double bw = rp->bw[0];
    for (guint i = 1; i < rp->n * rp->channels; i++)
        bw = MIN(bw, rp->bw[i]);
    return bw * rp->channels;
}

/* The plans of groups, kept per GPUs in the net's memo (net.h): closed forms, evaluations,
 * fusing (once per member) and counting activities (once per op) ask again and again. Whoever
 * changes the net's link figures clears the memo (calibration, a slice's shared links). At most
 * RING_MEMO_MAX plans, RING_MEMO_HOPS hops in all, are kept. Keyed by the group's array; a hit
 * also compares the GPUs (an array freed and reused). */
#define RING_MEMO_MAX  4096
#define RING_MEMO_HOPS ((gsize) 1 << 22)

typedef struct {
    guint n;
    const guint *gpus_at; /* the group's array: the key */
    guint *gpus;          /* a copy, compared on a hit */
} RingKey;

static guint
ring_key_hash(gconstpointer p)
{
    const RingKey *k = p;
    return g_direct_hash(k->gpus_at) ^ k->n;
}

static gboolean
ring_key_equal(gconstpointer a, gconstpointer b)
{
    const RingKey *x = a, *y = b;
    return x->n == y->n && x->gpus_at == y->gpus_at;
}

static void
ring_key_free(gpointer p)
{
    g_free(((RingKey *) p)->gpus);
    g_free(p);
}

static void
ring_plan_unref(RingPlan *rp)
{
    g_rc_box_release_full(rp, (GDestroyNotify) ring_plan_clear);
}

/* A new reference to the kept plan of this group, or NULL. */
static RingPlan *
ring_memo_get(const SimparCollGroup *g)
{
    SimparNetMemo *memo = g->net->memo;
    RingKey key = {g->n, g->gpus, NULL};
    g_mutex_lock(&memo->lock);
    RingKey *found = NULL;
    RingPlan *rp = NULL;
    if (memo->ring != NULL &&
        g_hash_table_lookup_extended(memo->ring, &key, (gpointer *) &found, (gpointer *) &rp) &&
        memcmp(found->gpus, g->gpus, g->n * sizeof *g->gpus) == 0)
        g_rc_box_acquire(rp);
    else
        rp = NULL;
    g_mutex_unlock(&memo->lock);
    return rp;
}

static void
ring_memo_set(const SimparCollGroup *g, RingPlan *rp)
{
    RingKey *key = g_new(RingKey, 1);
    *key = (RingKey){g->n, g->gpus, g_memdup2(g->gpus, g->n * sizeof *g->gpus)};
    SimparNetMemo *memo = g->net->memo;
    g_mutex_lock(&memo->lock);
    if (memo->ring == NULL)
        memo->ring = g_hash_table_new_full(ring_key_hash, ring_key_equal, ring_key_free,
                                           (GDestroyNotify) ring_plan_unref);
    if (g_hash_table_size(memo->ring) >= RING_MEMO_MAX || memo->ring_hops > RING_MEMO_HOPS) {
        g_hash_table_remove_all(memo->ring);
        memo->ring_hops = 0;
    }
    memo->ring_hops += (gsize) rp->n * rp->channels;
    g_hash_table_replace(memo->ring, key, g_rc_box_acquire(rp));
    g_mutex_unlock(&memo->lock);
}

/* The rings the group runs on (a reference): channels where they move more bytes per second
 * than the flat ring, kept in the net's memo when it has one. */
static RingPlan *
ring_plan(const SimparCollGroup *g)
{
    gboolean keep = g->net->memo != NULL;
    RingPlan *rp = keep ? ring_memo_get(g) : NULL;
    if (rp != NULL)
        return rp;
    rp = g_rc_box_new0(RingPlan);
    ring_plan_flat(g, rp);
    g_autofree guint *at = NULL;
    guint k, l;
    if (ring_layout(g, &at, &k, &l)) {
        RingPlan ch;
        ring_plan_channels(g, at, k, l, &ch);
        if (ring_plan_min_bw(&ch) > ring_plan_min_bw(rp)) {
            ring_plan_clear(rp);
            *rp = ch;
        } else {
            ring_plan_clear(&ch);
        }
    }
    if (keep)
        ring_memo_set(g, rp);
    return rp;
}

/* A round of the collective of `bytes`: its slowest hop, largest latency, network or not. */
static SimparRoundCost
ring_cost(const RingPlan *rp, double bytes)
{
    SimparRoundCost rc = {0, rp->n > 1, rp->net, rp->max_lat};
    for (guint i = 0; i < rp->n * rp->channels; i++)
        rc.max_s = MAX(rc.max_s, ring_hop_s(rp, i, bytes));
    return rc;
}

/* Round t's delay (NCCL's latency of a ring step, tuning.cc): of the rounds of a ring across K
 * nodes, the first 2(K-1) (all-reduce; K-1 otherwise) pay the network's hwLat, the others the
 * in-node one, at least NCCL's network overhead when K > 1 (1 us, 3 us for Simple), each less
 * what the route latency already takes; round 0 adds baseLat. */
static double
ring_delay(const RingPlan *rp, SimparCollKind kind, guint t, const SimparCollParams *p)
{
    if (rp->n < 2 || p->proto == SIMPAR_PROTO_NONE)
        return 0.0;
    guint inter = (kind == SIMPAR_COLL_ALL_REDUCE ? 2 : 1) * (rp->nodes - 1);
    double hw = simpar_coll_hw_lat(SIMPAR_LAT_RING, p->proto, t < inter);
    if (t >= inter && rp->nodes > 1)
        hw = MAX(hw, (p->proto == SIMPAR_PROTO_SIMPLE ? 3 : 1) * 1e-6);
    return simpar_coll_step_delay(hw, rp->max_lat) +
           (t == 0 ? simpar_coll_base_lat(SIMPAR_LAT_RING, p->proto) : 0.0);
}

static double
ring_plan_time(const RingPlan *rp, SimparCollKind kind, double bytes, const SimparCollParams *p)
{
    guint rounds = ring_rounds(kind, rp->n);
    if (rounds == 0)
        return 0.0;
    double max_s = ring_cost(rp, bytes).max_s;
    /* round 0, then the network's, then the node's: the sums the expansion's rounds add */
    guint inter = MIN((kind == SIMPAR_COLL_ALL_REDUCE ? 2 : 1) * (rp->nodes - 1), rounds);
    double first = ring_delay(rp, kind, 0, p) + max_s;
    double net = inter > 1 ? (inter - 1) * (ring_delay(rp, kind, 1, p) + max_s) : 0.0;
    guint rest = rounds - MAX(inter, 1);
    double node = rest > 0 ? rest * (ring_delay(rp, kind, rounds - 1, p) + max_s) : 0.0;
    return first + net + node;
}

guint
simpar_coll_ring_channels(const SimparCollGroup *g, double bytes)
{
    g_return_val_if_fail(simpar_coll_group_ok(g), 1);
    (void) bytes;
    RingPlan *rp = ring_plan(g);
    guint channels = rp->channels;
    ring_plan_unref(rp);
    return channels;
}

guint
simpar_coll_ring_hops(const SimparCollGroup *g, double bytes, GArray *hops, GArray *hop_s)
{
    g_return_val_if_fail(simpar_coll_group_ok(g) && hops != NULL && hop_s != NULL, 0);
    RingPlan *rp = ring_plan(g);
    for (guint i = 0; i < rp->n * rp->channels; i++) {
        SimparHop h = {i % rp->n, rp->next[i], ring_hop_bytes(rp, bytes)};
        double t = ring_hop_s(rp, i, bytes);
        g_array_append_val(hops, h);
        g_array_append_val(hop_s, t);
    }
    guint channels = rp->channels;
    ring_plan_unref(rp);
    return channels;
}

double
simpar_coll_ring_closed_form(SimparCollKind kind, const SimparCollGroup *g, double bytes,
                             guint root, const SimparCollParams *p)
{
    g_return_val_if_fail(ring_kind_ok(kind) && simpar_coll_group_ok(g) && p != NULL, 0.0);
    (void) root;
    if (g->n < 2)
        return 0.0;
    RingPlan *rp = ring_plan(g);
    double t = ring_plan_time(rp, kind, bytes, p);
    ring_plan_unref(rp);
    return t;
}

void
simpar_coll_ring_expand(SimparCollKind kind, const SimparCollGroup *g, double bytes, guint root,
                        const SimparCollParams *p, SimparExpansion *out)
{
    g_return_if_fail(ring_kind_ok(kind) && simpar_coll_group_ok(g) && p != NULL);
    g_return_if_fail(out != NULL && out->n_members == g->n && out->rounds->len == 0);
    (void) root;

    guint n = g->n, rounds = ring_rounds(kind, n);
    RingPlan *rp = ring_plan(g);
    double b = ring_hop_bytes(rp, bytes);
    for (guint m = 0; m < n; m++) {
        simpar_expansion_begin_member(out, m);
        for (guint t = 0; t < rounds; t++) {
            simpar_expansion_round(out, ring_delay(rp, kind, t, p));
            if (rp->channels == 1) { /* at their routes' times */
                simpar_expansion_xfer(out, rp->next[m], TRUE, b);
                simpar_expansion_xfer(out, rp->prev[m], FALSE, b);
                continue;
            }
            for (guint c = 0; c < rp->channels; c++) {
                guint next = rp->next[c * n + m], prev = rp->prev[c * n + m];
                simpar_expansion_xfer_timed(out, next, TRUE, b, ring_hop_s(rp, c * n + m, bytes));
                simpar_expansion_xfer_timed(out, prev, FALSE, b,
                                            ring_hop_s(rp, c * n + prev, bytes));
            }
        }
    }
    simpar_expansion_end(out);
    ring_plan_unref(rp);
}

/* The expansion evaluated on an idle network (simpar_expansion_eval_idle) without building it:
 * in round t member m's send on channel c pairs with next_c(m)'s receive of round t and its
 * receive with prev_c(m)'s send, so round t ends at the latest of begin_m and, over the
 * channels, max(begin_m, begin_next) + hop m and max(begin_prev, begin_m) + hop prev; round t+1
 * begins that much later plus its delay. The same sums and maxima as the generic evaluator, in
 * O(C n) memory instead of O(C n^2) transfers.
 *
 * Where the links prove the rounds alike (every member's slowest hop, H, is the same) and the
 * members are in step (their rounds end at one time e, as when they all start together, or
 * once the latest start has spread round the ring), every later round is one sum: it begins at
 * e + delay and ends at (e + delay) + H for every member, since rounding is monotone, so
 * max_j((e + delay) + hop_j) is (e + delay) + max_j hop_j, bit for bit the generic result. The
 * n x 2(n-1) member-rounds of an all-reduce become 2(n-1) additions. */
void
simpar_coll_ring_eval_idle(SimparCollKind kind, const SimparCollGroup *g, double bytes,
                           const SimparCollParams *p, const double *start, double *end)
{
    g_return_if_fail(ring_kind_ok(kind) && simpar_coll_group_ok(g) && p != NULL);
    guint n = g->n, rounds = ring_rounds(kind, n);
    for (guint m = 0; m < n; m++)
        end[m] = start[m];
    if (rounds == 0)
        return;
    RingPlan *rp = ring_plan(g);
    /* member m's peers in a round, each with its slowest hop to or from m (a maximum of the
     * same terms: the channels that share a peer collapse without changing a bit) */
    guint c = rp->channels, *deg = g_new0(guint, n), *peer = g_new(guint, 2 * c * n);
    double *hop = g_new(double, 2 * c * n);
    for (guint m = 0; m < n; m++)
        for (guint i = 0; i < 2 * c; i++) {
            guint ch = i / 2, q = (i % 2 == 0 ? rp->next : rp->prev)[ch * n + m];
            double h = ring_hop_s(rp, ch * n + (i % 2 == 0 ? m : q), bytes);
            guint j = 0;
            while (j < deg[m] && peer[2 * c * m + j] != q)
                j++;
            if (j == deg[m])
                peer[2 * c * m + deg[m]++] = q, hop[2 * c * m + j] = h;
            else
                hop[2 * c * m + j] = MAX(hop[2 * c * m + j], h);
        }
    /* the rounds are alike when every member's slowest hop is the same */
    double slowest = -1;
    gboolean alike = TRUE;
    for (guint m = 0; m < n && alike; m++) {
        double h = 0;
        for (guint j = 0; j < deg[m]; j++)
            h = MAX(h, hop[2 * c * m + j]);
        alike = m == 0 || h == slowest;
        slowest = h;
    }
    g_autofree double *begin = g_new(double, n);
    for (guint t = 0; t < rounds; t++) {
        double delay = ring_delay(rp, kind, t, p);
        gboolean in_step = alike;
        for (guint m = 1; m < n && in_step; m++)
            in_step = end[m] == end[0];
        if (in_step) { /* this round and the rest: one sum each */
            double e = end[0];
            for (guint u = t; u < rounds; u++)
                e = (e + ring_delay(rp, kind, u, p)) + slowest;
            for (guint m = 0; m < n; m++)
                end[m] = e;
            break;
        }
        for (guint m = 0; m < n; m++)
            begin[m] = end[m] + delay;
        for (guint m = 0; m < n; m++) {
            double e = begin[m];
            for (guint j = 0; j < deg[m]; j++)
                e = MAX(e, MAX(begin[m], begin[peer[2 * c * m + j]]) + hop[2 * c * m + j]);
            end[m] = e;
        }
    }
    g_free(deg);
    g_free(peer);
    g_free(hop);
    ring_plan_unref(rp);
}

/* Member m's rounds fused: per channel S/(C n) to its next and from its previous member in
 * every round, summed per peer and direction in first-use order. One ring: added round by round
 * as simpar_expansion_fuse() adds the expansion's, bit for bit (n = 2: the same peer both ways);
 * channels: each sum as one product, count x S/(C n), equal to the expansion's sum within its
 * rounding (O(C) per member, where the rounds' sums would cost O(C n)). */
void
simpar_coll_ring_fuse(SimparCollKind kind, const SimparCollGroup *g, double bytes, guint member,
                      GArray *out)
{
    g_return_if_fail(ring_kind_ok(kind) && simpar_coll_group_ok(g) && member < g->n);
    guint n = g->n, rounds = ring_rounds(kind, n);
    if (rounds == 0)
        return;
    RingPlan *rp = ring_plan(g);
    guint first = out->len, c2 = 2 * rp->channels;
    g_autofree guint *count = g_new0(guint, c2); /* transfers of each sum per round */
    for (guint i = 0; i < c2; i++) {
        guint peer = (i % 2 == 0 ? rp->next : rp->prev)[i / 2 * n + member];
        guint f = first;
        while (f < out->len && (g_array_index(out, SimparXfer, f).peer != peer ||
                                g_array_index(out, SimparXfer, f).send != (i % 2 == 0)))
            f++;
        if (f == out->len) {
            SimparXfer x = {peer, i % 2 == 0, 0, 0};
            g_array_append_val(out, x);
        }
        count[f - first]++;
    }
    double b = ring_hop_bytes(rp, bytes);
    if (rp->channels == 1) {
        for (guint t = 0; t < rounds; t++) /* 0 + b is b: the first add is the first transfer */
            for (guint f = first; f < out->len; f++)
                for (guint k = 0; k < count[f - first]; k++)
                    g_array_index(out, SimparXfer, f).bytes += b;
    } else {
        for (guint f = first; f < out->len; f++)
            g_array_index(out, SimparXfer, f).bytes = (double) count[f - first] * rounds * b;
    }
    ring_plan_unref(rp);
}
