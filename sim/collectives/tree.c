/* tree.c - NCCL's double binary tree all-reduce.
 *
 * Trees (NCCL src/graph/trees.cc, ncclGetBtree / ncclGetDtree): tree 0 is the bit-pattern
 * binary tree rooted at member 0 (below, n = 14); tree 1 is its mirror m -> n-1-m when n is
 * even and its shift m -> m+1 (mod n) when n is odd, so that a member that is a leaf in one
 * tree is mostly inner in the other. Both trees have depth D = ceil(log2 n).
 *
 *   0---------------8
 *            ______/ \______
 *           4               12
 *         /   \            /  \
 *       2       6       10     \
 *      / \     / \     /  \     \
 *     1   3   5   7   9   11    13
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
 * Some member is busy in every pair of consecutive rounds, so on equal hops the rendezvous
 * evaluation of the expansion meets the round-synchronous closed form exactly (checked for
 * n up to 300; a schedule with idle rounds on the critical path would finish early instead).
 * Closed form: baseLat (tree row) + sum over rounds of (hwLat + slowest transfer); with equal
 * hops, (2D + 4C - 3) (lat + S / (2C bw)) + protocol latencies.
 */
#include "collectives-private.h"

typedef struct {
    guint n, d;   /* members; depth of the deeper tree */
    guint trees;  /* 2, or 1 when n <= 3: there the mirror tree reuses the same directed pairs
                   * in the same rounds, so all 2C chunks take tree 0 (same rounds and cost) */
    gint *up;     /* [tree * n + m]: parent, -1 at the root */
    gint *down;   /* [(tree * n + m) * 2 + i]: children, -1 where absent */
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

/* ncclGetDtree: tree 1 maps rank x to n-1-x (even n) or x+1 mod n (odd n). */
static void
tree_links(TreePair *tp, guint tree, gint r)
{
    gint n = (gint) tp->n, u, d0, d1;
    gint s = tree == 0 ? r : n % 2 ? (r + n - 1) % n : n - 1 - r;
    tree_btree(n, s, &u, &d0, &d1);
    gint v[3] = {u, d0, d1};
    for (guint i = 0; i < 3 && tree == 1; i++)
        if (v[i] >= 0)
            v[i] = n % 2 ? (v[i] + 1) % n : n - 1 - v[i];
    tp->up[tree * tp->n + r] = v[0];
    tp->down[(tree * tp->n + r) * 2] = v[1];
    tp->down[(tree * tp->n + r) * 2 + 1] = v[2];
}

static void
tree_pair_init(TreePair *tp, guint n)
{
    *tp = (TreePair){
        n, 0, n <= 3 ? 1 : 2, g_new(gint, 2 * n), g_new(gint, 4 * n), g_new(guint, 2 * n)};
    for (guint k = 0; k < 2; k++)
        for (guint m = 0; m < n; m++)
            tree_links(tp, k, (gint) m);
    for (guint i = 0; i < 2 * n; i++) {
        guint dep = 0, k = i / n;
        for (gint v = (gint) (i % n); tp->up[k * n + v] >= 0; v = tp->up[k * n + v])
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
    tree_pair_init(&tp, g->n);
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
    guint peer[12]; /* 2 trees x (parent + 2 children) x (reduce + broadcast) */
    gboolean send[12];
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
        for (guint i = 0; i < 2; i++) {
            gint child = tp->down[(k * n + m) * 2 + i];
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
    tree_pair_init(&tp, g->n);
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
