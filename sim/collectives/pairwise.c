/* pairwise.c - pairwise-exchange all-to-all.
 *
 * S is the whole send buffer of one member: n blocks of S/n, block k for member k. Block m
 * stays home; the others follow NCCL's p2p schedule of n-1 rounds: in round r (1 <= r < n)
 * member m sends its block for m+r and receives the block that m-r holds for it (mod n), as
 * NCCL's all-to-all grouped send/recv and MPI's pairwise algorithm do:
 *
 *   n = 4   round 1: 0->1 1->2 2->3 3->0   round 2: 0->2 1->3 2->0 3->1   round 3: 0->3 ...
 *
 * NCCL does not wait for one round before the next: every round of the schedule gets its own
 * channels (channel.h, ncclP2pChannelBaseForRound) and each channel runs up to 8 send/recv
 * operations at once (enqueue.cc, NCCL_MAX_DEV_WORK_P2P_PER_BATCH), so all n-1 rounds' transfers
 * are on the wire together, sharing links: a member's NVLink and its NIC carry its in-node and
 * its cross-node blocks at the same time. Closed form: baseLat + every round's hwLat (ring row)
 * + the slowest of the n(n-1) transfers run at once (simpar_coll_hops_time). A net that gives no
 * links has each member's port carry its transfers one after another (its route latency once).
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

/* What every member waits before its transfers: baseLat once and each round's hwLat. */
static double
pairwise_delay(const SimparRoundCost *rc, guint n, const SimparCollParams *p)
{
    double d = 0.0;
    for (guint r = 1; r < n; r++)
        d += simpar_coll_round_delay(&rc[r - 1], SIMPAR_LAT_RING, p, r == 1);
    return d;
}

/* The time of each transfer m -> m+r, all at once, at hop_s[m * (n-1) + r-1]. */
static void
pairwise_hops(const SimparCollGroup *g, double bytes, double *hop_s)
{
    guint n = g->n, k = n - 1;
    if (g->net->links != NULL && g->net->link_bw != NULL) {
        g_autofree SimparHop *hops = g_new(SimparHop, n * k);
        for (guint m = 0; m < n; m++)
            for (guint r = 1; r < n; r++)
                hops[m * k + r - 1] = (SimparHop){m, (m + r) % n, bytes / n};
        simpar_coll_hops_time(g, hops, n * k, hop_s);
        return;
    }
    /* no links: a member's sends, and its receives, one after another on its port */
    g_autofree double *out = g_new0(double, n), *in = g_new0(double, n);
    g_autofree double *lat = g_new0(double, n);
    for (guint m = 0; m < n; m++)
        for (guint r = 1; r < n; r++) {
            guint d = (m + r) % n;
            SimparRoute rt;
            simpar_net_route(g->net, g->gpus[m], g->gpus[d], &rt);
            g_assert(rt.bw_Bps > 0.0);
            out[m] += bytes / n / rt.bw_Bps, in[d] += bytes / n / rt.bw_Bps;
            lat[m] = MAX(lat[m], rt.lat_s), lat[d] = MAX(lat[d], rt.lat_s);
        }
    for (guint m = 0; m < n; m++)
        for (guint r = 1; r < n; r++) {
            guint d = (m + r) % n;
            hop_s[m * k + r - 1] =
                MAX(lat[m], lat[d]) + MAX(MAX(out[m], in[m]), MAX(out[d], in[d]));
        }
}

double
simpar_coll_pairwise_closed_form(SimparCollKind kind, const SimparCollGroup *g, double bytes,
                                 guint root, const SimparCollParams *p)
{
    g_return_val_if_fail(kind == SIMPAR_COLL_ALL_TO_ALL, 0.0);
    g_return_val_if_fail(simpar_coll_group_ok(g) && p != NULL, 0.0);
    (void) root;

    guint n = g->n;
    if (n < 2)
        return 0.0;
    g_autofree SimparRoundCost *rc = pairwise_costs(g, bytes);
    g_autofree double *hop_s = g_new(double, n *(n - 1));
    pairwise_hops(g, bytes, hop_s);
    double slowest = 0.0;
    for (guint i = 0; i < n * (n - 1); i++)
        slowest = MAX(slowest, hop_s[i]);
    return pairwise_delay(rc, n, p) + slowest;
}

void
simpar_coll_pairwise_expand(SimparCollKind kind, const SimparCollGroup *g, double bytes, guint root,
                            const SimparCollParams *p, SimparExpansion *out)
{
    g_return_if_fail(kind == SIMPAR_COLL_ALL_TO_ALL);
    g_return_if_fail(simpar_coll_group_ok(g) && p != NULL);
    g_return_if_fail(out != NULL && out->n_members == g->n && out->rounds->len == 0);
    (void) root;

    guint n = g->n, k = n - 1;
    g_autofree SimparRoundCost *rc = pairwise_costs(g, bytes);
    g_autofree double *hop_s = g_new(double, MAX(n * k, 1));
    if (n > 1)
        pairwise_hops(g, bytes, hop_s);
    double delay = pairwise_delay(rc, n, p);
    for (guint m = 0; m < n; m++) {
        simpar_expansion_begin_member(out, m);
        if (n < 2)
            continue;
        simpar_expansion_round(out, delay); /* every round's transfers at once */
        for (guint r = 1; r < n; r++) {
            simpar_expansion_xfer_timed(out, (m + r) % n, TRUE, bytes / n, hop_s[m * k + r - 1]);
            guint from = (m + n - r) % n;
            simpar_expansion_xfer_timed(out, from, FALSE, bytes / n, hop_s[from * k + r - 1]);
        }
    }
    simpar_expansion_end(out);
}
