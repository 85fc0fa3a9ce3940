/* hierarchical.c - two-level all-reduce: rings inside the nodes, rings across them.
 *
 * The members are grouped by node (net->node of their GPU), nodes in order of first appearance
 * in the group, members of a node in group order; L members per node, K nodes, n = K L.
 *
 *   1. reduce-scatter inside each node: ring over the node's members, L-1 rounds of S/L;
 *      member with local index l now holds the node's sum of block l
 *   2. all-reduce across nodes among the members with the same local index: ring over the K
 *      nodes, 2(K-1) rounds of S/(L K) = S/n
 *   3. all-gather inside each node: ring, L-1 rounds of S/L
 *
 *   node 0: m0 m1 | node 1: m2 m3        phase 2 rings: m0 <-> m2, m1 <-> m3
 *
 * All members work in every round, so each round lasts as long as its slowest hop. Closed form:
 * baseLat + 2(L-1) (hwLat + slowest in-node hop) + 2(K-1) (hwLat + slowest cross-node hop).
 *
 * The phases need the same number of members on every node. When the group has uneven nodes
 * the algorithm falls back to the flat ring all-reduce over the group order (expansion and
 * closed form both), so "hierarchical" can be asked for on any group; a K = 1 or L = 1 group
 * gives the flat ring anyway.
 */
#include "collectives-private.h"

typedef struct {
    guint k, l;      /* nodes, members per node */
    guint *node_of;  /* member -> node index, 0..k-1 */
    guint *local_of; /* member -> index among its node's members */
    guint *at;       /* node * l + local -> member */
} HierLayout;

static void
hier_layout_clear(HierLayout *lay)
{
    g_clear_pointer(&lay->node_of, g_free);
    g_clear_pointer(&lay->local_of, g_free);
    g_clear_pointer(&lay->at, g_free);
}

/* FALSE (and nothing to clear) when the nodes hold different numbers of members. */
static gboolean
hier_layout(const SimparCollGroup *g, HierLayout *lay)
{
    *lay = (HierLayout){0};
    lay->at = simpar_coll_node_layout(g, &lay->k, &lay->l);
    if (lay->at == NULL)
        return FALSE;
    lay->node_of = g_new(guint, g->n), lay->local_of = g_new(guint, g->n);
    for (guint i = 0; i < g->n; i++)
        lay->node_of[lay->at[i]] = i / lay->l, lay->local_of[lay->at[i]] = i % lay->l;
    return TRUE;
}

static guint
hier_rounds(const HierLayout *lay)
{
    return 2 * (lay->l - 1) + 2 * (lay->k - 1);
}

/* Round t: phase 2 (across nodes) or 1 / 3 (inside); next and prev members of m's ring. */
static gboolean
hier_peers(const HierLayout *lay, guint m, guint t, guint *next, guint *prev)
{
    guint node = lay->node_of[m], local = lay->local_of[m], k = lay->k, l = lay->l;
    gboolean across = t >= l - 1 && t < l - 1 + 2 * (k - 1);
    if (across) {
        *next = lay->at[(node + 1) % k * l + local];
        *prev = lay->at[(node + k - 1) % k * l + local];
    } else {
        *next = lay->at[node * l + (local + 1) % l];
        *prev = lay->at[node * l + (local + l - 1) % l];
    }
    return across;
}

/* The hops of an in-node round (phase 1 or 3: `t` = 0) or of a cross-node one (phase 2: `t` =
 * l - 1), all members at once; their times with the links they share (all rings of a phase run
 * together: the L cross-node rings of a node leave it through the NICs their GPUs reach, one
 * NIC for all of them on a node with one) into `hop_s`, by sending member. */
static void
hier_phase(const HierLayout *lay, const SimparCollGroup *g, double bytes, guint t,
           SimparRoundCost *rc, double *hop_s)
{
    g_autofree SimparHop *hops = g_new(SimparHop, g->n);
    guint next, prev;
    for (guint m = 0; m < g->n; m++) {
        gboolean across = hier_peers(lay, m, t, &next, &prev);
        hops[m] = (SimparHop){m, next, across ? bytes / g->n : bytes / lay->l};
    }
    simpar_coll_hops_time(g, hops, g->n, hop_s);
    for (guint m = 0; m < g->n; m++) {
        SimparRoute r;
        simpar_net_route(g->net, g->gpus[m], g->gpus[hops[m].dst], &r);
        simpar_coll_round_note(rc, g, m, hops[m].dst, hop_s[m], r.lat_s);
    }
}

/* Costs of all rounds (transfer full): the in-node rounds share one summary, the cross-node
 * rounds another; with `inside_s` and `across_s`, each member's hop times of the two phases. */
static SimparRoundCost *
hier_costs(const HierLayout *lay, const SimparCollGroup *g, double bytes, double *inside_s,
           double *across_s)
{
    SimparRoundCost inside = {0}, across = {0};
    guint rounds = hier_rounds(lay), next, prev;
    g_autofree double *scratch = g_new(double, g->n);
    if (lay->l > 1)
        hier_phase(lay, g, bytes, 0, &inside, inside_s != NULL ? inside_s : scratch);
    if (lay->k > 1)
        hier_phase(lay, g, bytes, lay->l - 1, &across, across_s != NULL ? across_s : scratch);
    SimparRoundCost *rc = g_new0(SimparRoundCost, MAX(rounds, 1));
    for (guint t = 0; t < rounds; t++)
        rc[t] = hier_peers(lay, 0, t, &next, &prev) ? across : inside;
    return rc;
}

double
simpar_coll_hierarchical_closed_form(SimparCollKind kind, const SimparCollGroup *g, double bytes,
                                     guint root, const SimparCollParams *p)
{
    g_return_val_if_fail(kind == SIMPAR_COLL_ALL_REDUCE, 0.0);
    g_return_val_if_fail(simpar_coll_group_ok(g) && p != NULL, 0.0);

    HierLayout lay;
    if (!hier_layout(g, &lay))
        return simpar_coll_ring_closed_form(kind, g, bytes, root, p);
    g_autofree SimparRoundCost *rc = hier_costs(&lay, g, bytes, NULL, NULL);
    double t = simpar_coll_rounds_total(rc, hier_rounds(&lay), SIMPAR_LAT_RING, p);
    hier_layout_clear(&lay);
    return t;
}

void
simpar_coll_hierarchical_expand(SimparCollKind kind, const SimparCollGroup *g, double bytes,
                                guint root, const SimparCollParams *p, SimparExpansion *out)
{
    g_return_if_fail(kind == SIMPAR_COLL_ALL_REDUCE);
    g_return_if_fail(simpar_coll_group_ok(g) && p != NULL);
    g_return_if_fail(out != NULL && out->n_members == g->n && out->rounds->len == 0);

    HierLayout lay;
    if (!hier_layout(g, &lay)) {
        simpar_coll_ring_expand(kind, g, bytes, root, p, out);
        return;
    }
    g_autofree double *inside_s = g_new0(double, g->n), *across_s = g_new0(double, g->n);
    g_autofree SimparRoundCost *rc = hier_costs(&lay, g, bytes, inside_s, across_s);
    for (guint m = 0; m < g->n; m++) {
        simpar_expansion_begin_member(out, m);
        for (guint t = 0, next, prev; t < hier_rounds(&lay); t++) {
            gboolean across = hier_peers(&lay, m, t, &next, &prev);
            double b = across ? bytes / g->n : bytes / lay.l;
            const double *hop_s = across ? across_s : inside_s;
            simpar_expansion_round(out,
                                   simpar_coll_round_delay(&rc[t], SIMPAR_LAT_RING, p, t == 0));
            simpar_expansion_xfer_timed(out, next, TRUE, b, hop_s[m]);
            simpar_expansion_xfer_timed(out, prev, FALSE, b, hop_s[prev]);
        }
    }
    simpar_expansion_end(out);
    hier_layout_clear(&lay);
}
