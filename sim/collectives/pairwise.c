/* pairwise.c - pairwise-exchange all-to-all.
 *
 * S is the whole send buffer of one member: n blocks of S/n, block k for member k. Block m
 * stays home; the others follow NCCL's p2p schedule of n-1 rounds: in round r (1 <= r < n)
 * member m sends its block for m+r and receives the block that m-r holds for it (mod n), as
 * NCCL's all-to-all grouped send/recv and MPI's pairwise algorithm do:
 *
 *   n = 4   round 1: 0->1 1->2 2->3 3->0   round 2: 0->2 1->3 2->0 3->1   round 3: 0->3 ...
 *
 * NCCL does not wait for one round before the next. ncclGroupEnd puts the group's sends and
 * receives into one kernel plan, round by round in schedule order (NVIDIA/nccl at 5067397c,
 * src/enqueue.cc scheduleP2pTasksToPlan, lines 1151-1196); every round gets its own channels
 * (src/include/channel.h, ncclP2pChannelBaseForRound: across nodes 8 consecutive rounds share
 * one) and a channel runs up to NCCL_MAX_DEV_WORK_P2P_PER_BATCH = 8 send/recv operations at once
 * (src/include/device.h), p2pnChannels / nChannelsPerPeer x 8 peers in flight (enqueue.cc line
 * 1055). So all n-1 rounds' transfers are on the wire together, sharing links: a member's NVLink
 * and its NIC carry its in-node and its cross-node blocks at the same time, and their protocol
 * latencies overlap: one baseLat and one hwLat (ring row, the network's if any block crosses
 * nodes) for the whole exchange, not one hwLat per round. Closed form: that latency + the slowest
 * of the n(n-1) transfers run at once (simpar_coll_hops_time). A net that gives no links has each
 * member's port carry its transfers one after another (its route latency once). (Groups of more
 * peers than NCCL keeps in flight, beyond 8 x p2pnChannels, would wait for a channel's batches
 * one after another; simpar does not model that.)
 *
 * The protocol is NCCL's send/recv choice (collectives.c, coll_p2p_proto): LL for blocks of at
 * most 16 KiB (P2P_LL_THRESHOLD), each byte twice on the wire, else Simple; never LL128.
 *
 * Between nodes a block moves in smaller network messages than a collective's: NCCL's proxy
 * posts one message per step, a collective's Simple step is DEFAULT_BUFFSIZE / NCCL_STEPS =
 * 4 MiB / 8 = 512 KiB and a send/recv's, on a communicator of several nodes,
 * NCCL_P2P_NET_CHUNKSIZE = 128 KiB (NVIDIA/nccl at 5067397c: src/init.cc computeBuffSizes,
 * src/include/device.h). The presets' NIC figures are what rings of 512 KiB steps reach, NCCL's
 * NET_BW: 12.0 GB/s per 100 Gb/s of a 12.5 GB/s line (src/graph/topo.h), 96%. Taking the 4% as a
 * fixed cost per message, h = s_ring (1/B - 1/L), a message of s_p2p moves at
 * 1 / (1/L + h / s_p2p): with r = s_ring / s_p2p = 4, at B / (r - (r-1) B/L) = B / 1.12. So a
 * Simple block between two nodes is 1.12 times its bytes on the wire (its NIC, PCIe and switch
 * links); a block inside a node (NVLink, NCCL's P2P_NVL_CHUNKSIZE of 512 KiB) is its bytes. An LL
 * block (16 KiB at most, 32 KiB of lines) is one network message: LL's step is its 512 KiB buffer
 * over 8 steps, halved on the network for a small send (init.cc DEFAULT_LL_BUFFSIZE, enqueue.cc
 * line 943), 32 KiB; its wire bytes are the protocol's alone.
 */
#include "collectives-private.h"

/* NCCL's step sizes and NET_BW's fraction of the line rate (above). */
#define PAIRWISE_RING_STEP_BYTES    (4194304.0 / 8)
#define PAIRWISE_P2P_NET_STEP_BYTES 131072.0
#define PAIRWISE_NET_BW_OF_LINE     (12.0 / 12.5)

static double
pairwise_net_wire_factor(void)
{
    double r = PAIRWISE_RING_STEP_BYTES / PAIRWISE_P2P_NET_STEP_BYTES;
    return r - (r - 1) * PAIRWISE_NET_BW_OF_LINE;
}

/* The wire bytes of member m's block for member d, of S = bytes: S/n, times the factor above
 * between nodes unless the block moves in LL. */
static double
pairwise_block(const SimparCollGroup *g, guint m, guint d, double bytes, const SimparCollParams *p)
{
    gboolean net = simpar_net_node(g->net, g->gpus[m]) != simpar_net_node(g->net, g->gpus[d]);
    gboolean steps = net && p->proto != SIMPAR_PROTO_LL;
    return bytes / g->n * (steps ? pairwise_net_wire_factor() : 1.0);
}

/* What every member waits before its transfers: baseLat and one hwLat, that of the slowest link
 * type among all the rounds' transfers, as they are in flight together. */
static double
pairwise_delay(const SimparCollGroup *g, double bytes, const SimparCollParams *p)
{
    guint n = g->n;
    SimparRoundCost all = {0};
    for (guint r = 1; r < n; r++)
        for (guint m = 0; m < n; m++)
            simpar_coll_round_add(&all, g, m, (m + r) % n,
                                  pairwise_block(g, m, (m + r) % n, bytes, p));
    return simpar_coll_round_delay(&all, SIMPAR_LAT_RING, p, TRUE);
}

/* The time of each transfer m -> m+r, all at once, at hop_s[m * (n-1) + r-1]. */
static void
pairwise_hops(const SimparCollGroup *g, double bytes, const SimparCollParams *p, double *hop_s)
{
    guint n = g->n, k = n - 1;
    if (g->net->links != NULL && g->net->link_bw != NULL) {
        g_autofree SimparHop *hops = g_new(SimparHop, n * k);
        for (guint m = 0; m < n; m++)
            for (guint r = 1; r < n; r++)
                hops[m * k + r - 1] =
                    (SimparHop){m, (m + r) % n, pairwise_block(g, m, (m + r) % n, bytes, p)};
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
            double b = pairwise_block(g, m, d, bytes, p);
            out[m] += b / rt.bw_Bps, in[d] += b / rt.bw_Bps;
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
    g_autofree double *hop_s = g_new(double, n *(n - 1));
    pairwise_hops(g, bytes, p, hop_s);
    double slowest = 0.0;
    for (guint i = 0; i < n * (n - 1); i++)
        slowest = MAX(slowest, hop_s[i]);
    return pairwise_delay(g, bytes, p) + slowest;
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
    g_autofree double *hop_s = g_new(double, MAX(n * k, 1));
    if (n > 1)
        pairwise_hops(g, bytes, p, hop_s);
    double delay = pairwise_delay(g, bytes, p);
    for (guint m = 0; m < n; m++) {
        simpar_expansion_begin_member(out, m);
        if (n < 2)
            continue;
        simpar_expansion_round(out, delay); /* every round's transfers at once */
        for (guint r = 1; r < n; r++) {
            guint to = (m + r) % n, from = (m + n - r) % n;
            simpar_expansion_xfer_timed(out, to, TRUE, pairwise_block(g, m, to, bytes, p),
                                        hop_s[m * k + r - 1]);
            simpar_expansion_xfer_timed(out, from, FALSE, pairwise_block(g, from, m, bytes, p),
                                        hop_s[from * k + r - 1]);
        }
    }
    simpar_expansion_end(out);
}
