/* pairwise.c - pairwise-exchange all-to-all.
 *
 * S is the whole send buffer of one member: n blocks of S/n, block k for member k. Block m
 * stays home; the others go in n-1 rounds. In round r (1 <= r < n) member m sends its block for
 * m+r and receives the block that m-r holds for it (mod n), as NCCL's all-to-all grouped
 * send/recv and MPI's pairwise algorithm do:
 *
 *   n = 4   round 1: 0->1 1->2 2->3 3->0   round 2: 0->2 1->3 2->0 3->1   round 3: 0->3 ...
 *
 * Every member sends and receives once per round, so each round lasts as long as its slowest
 * pair; unlike the ring, each round uses different pairs. Closed form: baseLat (ring row) +
 * sum over rounds r of (hwLat + max over m of (lat + S / (n bw)) from m to m+r).
 */
#include "collectives-private.h"

/* Round r-1 holds the transfers m -> m+r (transfer full). */
static SimparRoundCost *
pairwise_costs(const SimparCollGroup *g, double bytes)
{
    guint n = g->n;
    SimparRoundCost *rc = g_new0(SimparRoundCost, n);
    for (guint r = 1; r < n; r++)
        for (guint m = 0; m < n; m++)
            simpar_coll_round_add(&rc[r - 1], g, m, (m + r) % n, bytes / n);
    return rc;
}

double
simpar_coll_pairwise_closed_form(SimparCollKind kind, const SimparCollGroup *g, double bytes,
                                 guint root, const SimparCollParams *p)
{
    g_return_val_if_fail(kind == SIMPAR_COLL_ALL_TO_ALL, 0.0);
    g_return_val_if_fail(simpar_coll_group_ok(g) && p != NULL, 0.0);
    (void) root;

    g_autofree SimparRoundCost *rc = pairwise_costs(g, bytes);
    return simpar_coll_rounds_total(rc, g->n - 1, SIMPAR_LAT_RING, p);
}

void
simpar_coll_pairwise_expand(SimparCollKind kind, const SimparCollGroup *g, double bytes, guint root,
                            const SimparCollParams *p, SimparExpansion *out)
{
    g_return_if_fail(kind == SIMPAR_COLL_ALL_TO_ALL);
    g_return_if_fail(simpar_coll_group_ok(g) && p != NULL);
    g_return_if_fail(out != NULL && out->n_members == g->n && out->rounds->len == 0);
    (void) root;

    guint n = g->n;
    g_autofree SimparRoundCost *rc = pairwise_costs(g, bytes);
    for (guint m = 0; m < n; m++) {
        simpar_expansion_begin_member(out, m);
        for (guint r = 1; r < n; r++) {
            simpar_expansion_round(out,
                                   simpar_coll_round_delay(&rc[r - 1], SIMPAR_LAT_RING, p, r == 1));
            simpar_expansion_xfer(out, (m + r) % n, TRUE, bytes / n);
            simpar_expansion_xfer(out, (m + n - r) % n, FALSE, bytes / n);
        }
    }
    simpar_expansion_end(out);
}
