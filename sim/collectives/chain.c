/* chain.c - pipelined chain broadcast and reduce rooted at `root`.
 *
 * The chain visits root, root+1, ..., root+n-1 (mod n): NCCL's ring broadcast and reduce, with
 * the ring opened at the root. The buffer goes in C = min(max_chunks, ceil(S / chunk_bytes))
 * chunks of S/C. Broadcast sends away from the root, reduce towards it. Counting hops from the
 * end where the data starts (the root for broadcast, the far end for reduce), round t carries
 * chunk t-i on hop i:
 *
 *   broadcast, n = 4, C = 3          hop 0 = root -> root+1, hop 2 = root+2 -> root+3
 *     round     0    1    2    3    4
 *     hop 0    c0   c1   c2
 *     hop 1         c0   c1   c2
 *     hop 2              c0   c1   c2
 *
 * n-1 + C-1 rounds. A member posts only the rounds in which it moves a chunk, so a member
 * far down the chain does not pay hwLat for rounds before its first chunk arrives.
 * Closed form: baseLat + sum over rounds of (hwLat + slowest hop busy in that round); with
 * equal hops, (n-1 + C-1) (lat + S / (C bw)) + protocol latencies.
 */
#include "collectives-private.h"

static gboolean
chain_kind_ok(SimparCollKind kind)
{
    return kind == SIMPAR_COLL_BROADCAST || kind == SIMPAR_COLL_REDUCE;
}

/* Position along the data flow: 0 where the data starts, n-1 where it ends. */
static guint
chain_pos(SimparCollKind kind, guint n, guint root, guint m)
{
    guint i = (m + n - root) % n;
    return kind == SIMPAR_COLL_BROADCAST ? i : n - 1 - i;
}

static guint
chain_member(SimparCollKind kind, guint n, guint root, guint pos)
{
    guint i = kind == SIMPAR_COLL_BROADCAST ? pos : n - 1 - pos;
    return (root + i) % n;
}

/* The n-1 + C-1 global rounds (transfer full). */
static SimparRoundCost *
chain_costs(SimparCollKind kind, const SimparCollGroup *g, double bytes, guint root, guint c)
{
    guint n = g->n;
    SimparRoundCost *rc = g_new0(SimparRoundCost, n + c - 1);
    for (guint h = 0; h + 1 < n; h++)
        for (guint j = 0; j < c; j++)
            simpar_coll_round_add(&rc[h + j], g, chain_member(kind, n, root, h),
                                  chain_member(kind, n, root, h + 1), bytes / c);
    return rc;
}

double
simpar_coll_chain_closed_form(SimparCollKind kind, const SimparCollGroup *g, double bytes,
                              guint root, const SimparCollParams *p)
{
    g_return_val_if_fail(chain_kind_ok(kind) && simpar_coll_group_ok(g) && p != NULL, 0.0);
    g_return_val_if_fail(root < g->n, 0.0);

    guint c = simpar_coll_chunks(bytes, p);
    g_autofree SimparRoundCost *rc = chain_costs(kind, g, bytes, root, c);
    return simpar_coll_rounds_total(rc, g->n + c - 2, SIMPAR_LAT_RING, p);
}

/* Member at position h receives chunk t-(h-1) from h-1 and sends chunk t-h to h+1. */
static void
chain_member_rounds(SimparCollKind kind, const SimparCollGroup *g, double bytes, guint root,
                    guint c, const SimparRoundCost *rc, const SimparCollParams *p,
                    SimparExpansion *out, guint m)
{
    guint n = g->n, h = chain_pos(kind, n, root, m);
    guint t0 = h > 0 ? h - 1 : 0;
    gboolean first = TRUE;
    for (guint t = t0; t < n + c - 2 && t <= h + c - 1; t++) {
        gboolean recv = h > 0 && t - (h - 1) < c;
        gboolean send = h + 1 < n && t >= h && t - h < c;
        if (!recv && !send)
            continue;
        simpar_expansion_round(out, simpar_coll_round_delay(&rc[t], SIMPAR_LAT_RING, p, first));
        first = FALSE;
        if (recv)
            simpar_expansion_xfer(out, chain_member(kind, n, root, h - 1), FALSE, bytes / c);
        if (send)
            simpar_expansion_xfer(out, chain_member(kind, n, root, h + 1), TRUE, bytes / c);
    }
}

void
simpar_coll_chain_expand(SimparCollKind kind, const SimparCollGroup *g, double bytes, guint root,
                         const SimparCollParams *p, SimparExpansion *out)
{
    g_return_if_fail(chain_kind_ok(kind) && simpar_coll_group_ok(g) && p != NULL);
    g_return_if_fail(root < g->n);
    g_return_if_fail(out != NULL && out->n_members == g->n && out->rounds->len == 0);

    guint c = simpar_coll_chunks(bytes, p);
    g_autofree SimparRoundCost *rc = chain_costs(kind, g, bytes, root, c);
    for (guint m = 0; m < g->n; m++) {
        simpar_expansion_begin_member(out, m);
        chain_member_rounds(kind, g, bytes, root, c, rc, p, out, m);
    }
    simpar_expansion_end(out);
}
