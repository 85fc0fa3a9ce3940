/* nvls.c - NVLink SHARP (NVLS) all-reduce inside one NVSwitch node.
 *
 * On an NVSwitch that reduces and multicasts (third-generation NVSwitch, H100 and later), NCCL's
 * NVLS all-reduce has every GPU own 1/n of the buffer: the GPU asks the switch for the sum of
 * its part (the switch reads that part from all n GPUs and returns the sum), then stores the
 * sum once to the multicast address (the switch writes it to all n GPUs) (NVIDIA/nccl
 * src/device/all_reduce.h at 5067397c, RunWorkColl<ncclFuncAllReduce, ..., NCCL_ALGO_NVLS>:
 * scatter and gather are copies in the GPU's own memory, the reduce warps do the switch reads
 * and multicast stores). Per GPU and direction the NVLink ports carry
 *
 *   out: S (its data, read by the switch for every part) + S/n (its part's sum, stored once)
 *   in:  S/n (its part's sum)                            + S   (every part's sum, multicast)
 *
 * that is S (n + 1) / n each way, against 2 S (n - 1) / n for the ring. The switch's reduction
 * and multicast reach a fraction `eff` of the link rate (NCCL's nvlsEfficiency, 0.85 on
 * Hopper, tuning.cc) and the collective pays a latency of its own, which the platform gives
 * (SimparNet.nvls; presets.ini sources it).
 *
 * Expansion: the switch is not a member, so the traffic is laid on the members' own links: in
 * one round member m sends S (n + 1) / (n eff) bytes to member m + 1 and receives as many from
 * m - 1 (mod n). Over a node whose GPUs each have their own link to the switch this loads every
 * GPU's link exactly as NVLS does, each way. Closed form: max(0, latency - route latency) +
 * the slowest of those transfers. With protocol NONE (the network alone) neither the efficiency
 * nor the latency is added.
 *
 * The algorithm needs every member on one node that has NVLS and at least two members; on any
 * other group "nvls" runs the ring (collectives.c), so it can be asked for on any platform.
 */
#include "collectives-private.h"

gboolean
simpar_coll_nvls_usable(const SimparCollGroup *g, double *eff, double *lat_s)
{
    g_return_val_if_fail(simpar_coll_group_ok(g), FALSE);
    if (g->n < 2 || g->net->nvls == NULL)
        return FALSE;
    double e_min = 1.0, l_max = 0.0;
    guint node = simpar_net_node(g->net, g->gpus[0]);
    for (guint m = 0; m < g->n; m++) {
        double e, l;
        if (simpar_net_node(g->net, g->gpus[m]) != node ||
            !g->net->nvls(g->net, g->gpus[m], &e, &l))
            return FALSE;
        e_min = MIN(e_min, e), l_max = MAX(l_max, l);
    }
    if (eff != NULL)
        *eff = e_min;
    if (lat_s != NULL)
        *lat_s = l_max;
    return TRUE;
}

/* The bytes each member sends (and receives) and the delay of the one round. */
static double
nvls_plan(const SimparCollGroup *g, double bytes, const SimparCollParams *p, double *delay_s,
          SimparRoundCost *rc)
{
    double eff = 1.0, lat = 0.0;
    gboolean usable = simpar_coll_nvls_usable(g, &eff, &lat);
    g_assert(usable);
    if (p->proto == SIMPAR_PROTO_NONE)
        eff = 1.0, lat = 0.0;
    double wire = bytes * (g->n + 1) / g->n / eff;
    *rc = (SimparRoundCost){0};
    for (guint m = 0; m < g->n; m++)
        simpar_coll_round_add(rc, g, m, (m + 1) % g->n, wire);
    *delay_s = simpar_coll_step_delay(lat, rc->lat_s);
    return wire;
}

double
simpar_coll_nvls_closed_form(SimparCollKind kind, const SimparCollGroup *g, double bytes,
                             guint root, const SimparCollParams *p)
{
    g_return_val_if_fail(kind == SIMPAR_COLL_ALL_REDUCE, 0.0);
    g_return_val_if_fail(simpar_coll_group_ok(g) && p != NULL, 0.0);
    (void) root;

    double delay;
    SimparRoundCost rc;
    nvls_plan(g, bytes, p, &delay, &rc);
    return delay + rc.max_s;
}

void
simpar_coll_nvls_expand(SimparCollKind kind, const SimparCollGroup *g, double bytes, guint root,
                        const SimparCollParams *p, SimparExpansion *out)
{
    g_return_if_fail(kind == SIMPAR_COLL_ALL_REDUCE);
    g_return_if_fail(simpar_coll_group_ok(g) && p != NULL);
    g_return_if_fail(out != NULL && out->n_members == g->n && out->rounds->len == 0);
    (void) root;

    double delay;
    SimparRoundCost rc;
    double wire = nvls_plan(g, bytes, p, &delay, &rc);
    guint n = g->n;
    for (guint m = 0; m < n; m++) {
        simpar_expansion_begin_member(out, m);
        simpar_expansion_round(out, delay);
        simpar_expansion_xfer(out, (m + 1) % n, TRUE, wire);
        simpar_expansion_xfer(out, (m + n - 1) % n, FALSE, wire);
    }
    simpar_expansion_end(out);
}
