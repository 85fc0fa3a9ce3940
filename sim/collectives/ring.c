/* ring.c - ring all-reduce, all-gather and reduce-scatter over the group order.
 *
 * Member m sends S/n to m+1 and receives S/n from m-1 (mod n) in every round:
 *
 *   reduce-scatter   n-1 rounds     (NCCL runRing: send, n-2 x recv-reduce-send, recv-reduce)
 *   all-gather       n-1 rounds
 *   all-reduce       2(n-1) rounds  = reduce-scatter, then all-gather (reference 5.1)
 *
 *   n = 4:   0 -> 1 -> 2 -> 3 -> 0      every hop busy in every round
 *
 * NCCL splits the buffer over channels and pipelines each in chunks; on an idle network with
 * the route model that only divides the same bytes into more transfers of the same rounds, so
 * the expansion keeps one transfer of S/n per hop and round. Since every hop works in every
 * round, each round lasts as long as the slowest hop, and the closed form is
 *   rounds * (hwLat + max over hops of (lat + S / (n bw))) + baseLat.
 */
#include "collectives-private.h"

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

/* Every round uses every hop m -> m+1 once, so one SimparRoundCost describes all of them. */
static SimparRoundCost
ring_hops(const SimparCollGroup *g, double bytes)
{
    SimparRoundCost rc = {0};
    for (guint m = 0; g->n > 1 && m < g->n; m++)
        simpar_coll_round_add(&rc, g, m, (m + 1) % g->n, bytes / g->n);
    return rc;
}

double
simpar_coll_ring_closed_form(SimparCollKind kind, const SimparCollGroup *g, double bytes,
                             guint root, const SimparCollParams *p)
{
    g_return_val_if_fail(ring_kind_ok(kind) && simpar_coll_group_ok(g) && p != NULL, 0.0);
    (void) root;

    guint rounds = ring_rounds(kind, g->n);
    if (rounds == 0)
        return 0.0;
    SimparRoundCost hop = ring_hops(g, bytes);
    /* the first round carries baseLat, exactly as in the expansion */
    return simpar_coll_round_delay(&hop, SIMPAR_LAT_RING, p, TRUE) + hop.max_s +
           (rounds - 1) * (simpar_coll_round_delay(&hop, SIMPAR_LAT_RING, p, FALSE) + hop.max_s);
}

void
simpar_coll_ring_expand(SimparCollKind kind, const SimparCollGroup *g, double bytes, guint root,
                        const SimparCollParams *p, SimparExpansion *out)
{
    g_return_if_fail(ring_kind_ok(kind) && simpar_coll_group_ok(g) && p != NULL);
    g_return_if_fail(out != NULL && out->n_members == g->n && out->rounds->len == 0);
    (void) root;

    guint n = g->n, rounds = ring_rounds(kind, n);
    SimparRoundCost hop = ring_hops(g, bytes);
    for (guint m = 0; m < n; m++) {
        simpar_expansion_begin_member(out, m);
        for (guint t = 0; t < rounds; t++) {
            simpar_expansion_round(out, simpar_coll_round_delay(&hop, SIMPAR_LAT_RING, p, t == 0));
            simpar_expansion_xfer(out, (m + 1) % n, TRUE, bytes / n);
            simpar_expansion_xfer(out, (m + n - 1) % n, FALSE, bytes / n);
        }
    }
    simpar_expansion_end(out);
}

/* The expansion evaluated on an idle network (simpar_expansion_eval_idle) without building it:
 * in round t member m's send pairs with m+1's receive of round t and its receive with m-1's
 * send, so round t ends at max(begin_m, max(begin_m, begin_m+1) + hop m, max(begin_m-1,
 * begin_m) + hop m-1), and round t+1 begins that much later plus its delay. The same sums and
 * maxima as the generic evaluator, in O(n) memory instead of O(n^2) transfers. */
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
    SimparRoundCost cost = ring_hops(g, bytes);
    g_autofree double *hop = g_new(double, n);
    g_autofree double *begin = g_new(double, n);
    for (guint m = 0; m < n; m++)
        hop[m] = simpar_coll_xfer_time(g, m, (m + 1) % n, bytes / n);
    for (guint t = 0; t < rounds; t++) {
        double delay = simpar_coll_round_delay(&cost, SIMPAR_LAT_RING, p, t == 0);
        for (guint m = 0; m < n; m++)
            begin[m] = end[m] + delay;
        for (guint m = 0; m < n; m++) {
            guint next = (m + 1) % n, prev = (m + n - 1) % n;
            double e = begin[m];
            e = MAX(e, MAX(begin[m], begin[next]) + hop[m]);
            end[m] = MAX(e, MAX(begin[prev], begin[m]) + hop[prev]);
        }
    }
}

/* Member m's rounds fused: S/n to m+1 and S/n from m-1 in every round, added up round by
 * round as simpar_expansion_fuse() adds the expansion's (n = 2: the same peer both ways). */
void
simpar_coll_ring_fuse(SimparCollKind kind, const SimparCollGroup *g, double bytes, guint member,
                      GArray *out)
{
    g_return_if_fail(ring_kind_ok(kind) && simpar_coll_group_ok(g) && member < g->n);
    guint n = g->n, rounds = ring_rounds(kind, n);
    if (rounds == 0)
        return;
    SimparXfer x[2] = {{(member + 1) % n, TRUE, bytes / n, 0},
                       {(member + n - 1) % n, FALSE, bytes / n, 0}};
    for (guint t = 1; t < rounds; t++)
        x[0].bytes += bytes / n, x[1].bytes += bytes / n;
    g_array_append_vals(out, x, 2);
}
