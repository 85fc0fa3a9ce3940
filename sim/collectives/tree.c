/* tree.c - NCCL's double binary tree all-reduce.
 *
 * Trees as NCCL builds them (NVIDIA/nccl src/graph/trees.cc, ncclGetBtree / ncclGetDtree, and
 * src/graph/connect.cc, connectTrees, at 5067397c): between nodes a binary tree over the node
 * indices, and inside each node a chain through its GPUs. Tree 0 is the bit-pattern binary tree
 * rooted at node 0 (below, 14 nodes); tree 1 is its mirror x -> K-1-x when the node count K is
 * even and its shift x -> x+1 (mod K) when K is odd, so that a node that is a leaf in one tree
 * is mostly inner in the other.
 *
 *   0---------------8              inside every node, members in group order (tree 1:
 *            ______/ \______         reversed): head -> m1 -> m2 -> ... -> m(L-1)
 *           4               12      the head links up to its parent node's head and down to
 *         /   \            /  \     its chain's next member and its child nodes' heads
 *       2       6       10     \    (at most 3 children: NCCL_MAX_TREE_ARITY)
 *      / \     / \     /  \     \
 *     1   3   5   7   9   11    13
 *
 * Depth D = (L - 1) + the node tree's depth, NCCL's (nRanks/nNodes - 1) + log2(nNodes). On one
 * node both trees are the one chain, run both ways. A group whose nodes hold different numbers of
 * members gets the same trees over its members (one member per "node").
 *
 * Each tree reduces S/2 up to its root and broadcasts it back down (NCCL runTreeUpDown: the
 * reduce loop over all chunks, then the broadcast loop), pipelined in
 * C = min(max_chunks, ceil((S/2) / chunk_bytes)) chunks of S/(2C). The 2C chunks alternate
 * between the trees, chunk j in tree j mod 2, one chunk entering per round. Why alternate
 * rather than run both trees side by side in the same rounds: NCCL gives each tree half of the
 * channels, so the two trees share every GPU's link. Side by side at the full route bandwidth
 * they would move S through a GPU in the time of S/2 and beat the ring at every large size,
 * where NCCL's model (reference 5.4: tree algbw = busBw / 2) has the ring win.
 *
 * Rounds, with d(v) the depth of member v in the chunk's tree:
 *   reduce      v -> parent(v) carries chunk j in round (D - d(v)) + j
 *   broadcast   parent(v) -> v carries chunk j in round (D + 2C - 2) + (d(v) - 1) + j
 * A parent thus receives chunk j from its children the round before it sends it up, and each
 * root starts broadcasting the round after its own last chunk arrives: 2D + 4C - 3 rounds.
 * Closed form: baseLat (tree row) + sum over rounds of (hwLat + slowest transfer); with equal
 * hops, (2D + 4C - 3) (lat + S / (2C bw)) + protocol latencies. The expansion's rendezvous
 * evaluation finishes no later (tests hold them equal on equal hops).
 */
#include "collectives-private.h"

#define TREE_ARITY 3 /* a node's head: its chain's next member and two child nodes */

typedef struct {
    guint n, d;   /* members; depth of the deeper tree */
    guint trees;  /* 2, or 1 for at most 3 members: there the second tree would send on the
                   * first one's pairs in the same rounds, so all 2C chunks take tree 0 */
    gint *up;     /* [tree * n + m]: parent, -1 at the root */
    gint *down;   /* [(tree * n + m) * TREE_ARITY + i]: children, -1 where absent */
    guint *depth; /* [tree * n + m] */
} TreePair;

static void
tree_pair_clear(TreePair *tp)
{
    g_clear_pointer(&tp->up, g_free);
    g_clear_pointer(&tp->down, g_free);
    g_clear_pointer(&tp->depth, g_free);
}

/* ncclGetBtree: parent and children of rank r in the tree rooted at 0. */
static void
tree_btree(gint n, gint r, gint *u, gint *d0, gint *d1)
{
    gint bit;
    for (bit = 1; bit < n; bit <<= 1)
        if (bit & r)
            break;
    if (r == 0) {
        *u = -1, *d0 = -1, *d1 = n > 1 ? bit >> 1 : -1;
        return;
    }
    gint up = (r ^ bit) | (bit << 1);
    *u = up >= n ? r ^ bit : up;
    gint low = bit >> 1;
    *d0 = low == 0 ? -1 : r - low;
    while (low > 0 && r + low >= n) /* the second child may fall off the end */
        low >>= 1;
    *d1 = low == 0 ? -1 : r + low;
}

/* ncclGetDtree over k nodes: node x's parent and children in `tree` (1 maps x to k-1-x for
 * even k, x+1 mod k for odd k). */
static void
tree_node_links(gint k, guint tree, gint x, gint v[3])
{
    gint s = tree == 0 ? x : k % 2 ? (x + k - 1) % k : k - 1 - x;
    tree_btree(k, s, &v[0], &v[1], &v[2]);
    for (guint i = 0; i < 3 && tree == 1; i++)
        if (v[i] >= 0)
            v[i] = k % 2 ? (v[i] + 1) % k : k - 1 - v[i];
}

/* The member at chain position i of node x in `tree`: tree 0's chain runs through the node's
 * members in group order, tree 1's in reverse, so that the trees send their chunks the two ways
 * of each link and leave the node through different GPUs (on DGX nodes, different NICs), as
 * NCCL's channels do. */
static guint
tree_at(const guint *at, guint l, guint tree, guint x, guint i)
{
    return at[x * l + (tree == 0 ? i : l - 1 - i)];
}

/* The member at chain position i of node x in `tree`: its parent (the previous member of the
 * chain, or the parent node's head) and children (the next member, and the child nodes' heads
 * at the chain's head). */
static void
tree_member_links(TreePair *tp, guint tree, const guint *at, guint k, guint l, guint x, guint i)
{
    guint m = tree_at(at, l, tree, x, i), slot = 0;
    gint *down = &tp->down[(tree * tp->n + m) * TREE_ARITY];
    gint v[3];
    tree_node_links((gint) k, tree, (gint) x, v);
    tp->up[tree * tp->n + m] = i > 0       ? (gint) tree_at(at, l, tree, x, i - 1)
                               : v[0] >= 0 ? (gint) tree_at(at, l, tree, (guint) v[0], 0)
                                           : -1;
    if (i + 1 < l)
        down[slot++] = (gint) tree_at(at, l, tree, x, i + 1);
    for (guint c = 1; c < 3 && i == 0; c++)
        if (v[c] >= 0)
            down[slot++] = (gint) tree_at(at, l, tree, (guint) v[c], 0);
}

static void
tree_pair_init(TreePair *tp, const SimparCollGroup *g)
{
    guint n = g->n, k = 0, l = 0;
    g_autofree guint *at = simpar_coll_node_layout(g, &k, &l);
    if (at == NULL) { /* uneven nodes: a tree over the members, one per "node" */
        at = g_new(guint, n);
        for (guint m = 0; m < n; m++)
            at[m] = m;
        k = n, l = 1;
    }
    *tp = (TreePair){n,
                     0,
                     n <= 3 ? 1 : 2,
                     g_new(gint, 2 * n),
                     g_new(gint, 2 * n * TREE_ARITY),
                     g_new(guint, 2 * n)};
    for (guint i = 0; i < 2 * n * TREE_ARITY; i++)
        tp->down[i] = -1;
    for (guint t = 0; t < 2; t++)
        for (guint x = 0; x < k; x++)
            for (guint i = 0; i < l; i++)
                tree_member_links(tp, t, at, k, l, x, i);
    for (guint i = 0; i < 2 * n; i++) {
        guint dep = 0, t = i / n;
        for (gint v = (gint) (i % n); tp->up[t * n + v] >= 0; v = tp->up[t * n + v])
            dep++;
        tp->depth[i] = dep;
        tp->d = MAX(tp->d, dep);
    }
}

static guint
tree_rounds(const TreePair *tp, guint c)
{
    return 2 * tp->d + 4 * c - 3;
}

/* Costs of the 2D + 4C - 3 rounds (transfer full). */
static SimparRoundCost *
tree_costs(const TreePair *tp, const SimparCollGroup *g, double bytes, guint c)
{
    guint n = tp->n, d = tp->d, bcast = d + 2 * c - 2;
    SimparRoundCost *rc = g_new0(SimparRoundCost, tree_rounds(tp, c));
    for (guint k = 0; k < tp->trees; k++)
        for (guint v = 0; v < n; v++) {
            gint up = tp->up[k * n + v];
            guint dv = tp->depth[k * n + v];
            for (guint j = k; up >= 0 && j < 2 * c; j += tp->trees) {
                simpar_coll_round_add(&rc[d - dv + j], g, v, (guint) up, bytes / (2 * c));
                simpar_coll_round_add(&rc[bcast + dv - 1 + j], g, (guint) up, v, bytes / (2 * c));
            }
        }
    return rc;
}

double
simpar_coll_tree_closed_form(SimparCollKind kind, const SimparCollGroup *g, double bytes,
                             guint root, const SimparCollParams *p)
{
    g_return_val_if_fail(kind == SIMPAR_COLL_ALL_REDUCE, 0.0);
    g_return_val_if_fail(simpar_coll_group_ok(g) && p != NULL, 0.0);
    (void) root;

    TreePair tp;
    tree_pair_init(&tp, g);
    guint c = simpar_coll_chunks(bytes / 2, p);
    g_autofree SimparRoundCost *rc = tree_costs(&tp, g, bytes, c);
    double t = simpar_coll_rounds_total(rc, tree_rounds(&tp, c), SIMPAR_LAT_TREE, p);
    tree_pair_clear(&tp);
    return t;
}

/* Does round t carry a chunk of `tree` on a link whose first chunk goes in round `base`? */
static gboolean
tree_busy(guint t, guint base, guint tree, guint c, guint trees)
{
    return t >= base && t - base < 2 * c && (t - base) % trees == tree;
}

typedef struct {
    guint n;
    guint peer[16]; /* 2 trees x (parent + 3 children) x (reduce + broadcast) */
    gboolean send[16];
} TreeRound;

static void
tree_round_add(TreeRound *tr, gint peer, gboolean send)
{
    tr->peer[tr->n] = (guint) peer, tr->send[tr->n] = send;
    tr->n++;
}

/* Member m's transfers in round t, in both trees. */
static void
tree_member_round(const TreePair *tp, guint c, guint m, guint t, TreeRound *tr)
{
    guint n = tp->n, d = tp->d, bcast = d + 2 * c - 2;
    tr->n = 0;
    for (guint k = 0; k < tp->trees; k++) {
        gint up = tp->up[k * n + m];
        guint dm = tp->depth[k * n + m];
        if (up >= 0 && tree_busy(t, d - dm, k, c, tp->trees))
            tree_round_add(tr, up, TRUE);
        if (up >= 0 && tree_busy(t, bcast + dm - 1, k, c, tp->trees))
            tree_round_add(tr, up, FALSE);
        for (guint i = 0; i < TREE_ARITY; i++) {
            gint child = tp->down[(k * n + m) * TREE_ARITY + i];
            if (child >= 0 && tree_busy(t, d - (dm + 1), k, c, tp->trees))
                tree_round_add(tr, child, FALSE);
            if (child >= 0 && tree_busy(t, bcast + dm, k, c, tp->trees))
                tree_round_add(tr, child, TRUE);
        }
    }
}

void
simpar_coll_tree_expand(SimparCollKind kind, const SimparCollGroup *g, double bytes, guint root,
                        const SimparCollParams *p, SimparExpansion *out)
{
    g_return_if_fail(kind == SIMPAR_COLL_ALL_REDUCE);
    g_return_if_fail(simpar_coll_group_ok(g) && p != NULL);
    g_return_if_fail(out != NULL && out->n_members == g->n && out->rounds->len == 0);
    (void) root;

    TreePair tp;
    tree_pair_init(&tp, g);
    guint c = simpar_coll_chunks(bytes / 2, p);
    g_autofree SimparRoundCost *rc = tree_costs(&tp, g, bytes, c);
    for (guint m = 0; m < g->n; m++) {
        simpar_expansion_begin_member(out, m);
        gboolean first = TRUE;
        for (guint t = 0; t < tree_rounds(&tp, c); t++) {
            TreeRound tr;
            tree_member_round(&tp, c, m, t, &tr);
            if (tr.n == 0)
                continue;
            simpar_expansion_round(out, simpar_coll_round_delay(&rc[t], SIMPAR_LAT_TREE, p, first));
            first = FALSE;
            for (guint i = 0; i < tr.n; i++)
                simpar_expansion_xfer(out, tr.peer[i], tr.send[i], bytes / (2 * c));
        }
    }
    simpar_expansion_end(out);
    tree_pair_clear(&tp);
}
