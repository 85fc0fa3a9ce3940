/* nvls-tree.c - NCCL's NVLS-tree all-reduce: NVLink SHARP inside each NVLink domain, the
 * domains joined over their NICs, both stages pipelined.
 *
 * NCCL's NVLS_TREE (NVIDIA/nccl src/device/all_reduce.h at 5067397c, RunWorkColl<...,
 * NCCL_ALGO_NVLS_TREE>; tuning.cc for its cost) reduces each domain's data through the NVSwitch
 * as NVLS does, so that each of the domain's k GPUs holds the domain's sum of 1/k of the
 * buffer, exchanges that share with the GPUs of the same share in the other domains over its
 * NIC (a tree between the domains), and multicasts the total back through the switch. The
 * stages work on chunks one after another, so the slower one sets the pace. Per GPU:
 *
 *   NVLink, each way: S (k + 1) / k, as NVLS (nvls.c), at `eff` of the link rate;
 *   NIC, each way:    its share S/k reduced and broadcast across the N domains: modelled as a
 *                     ring all-reduce of S/k over the N GPUs of its share, 2 (N - 1) / N x S/k
 *                     (S/k with two domains, where NCCL's tuner doubles the tree's rate, and
 *                     twice that for many, where it does not: tuning.cc, "2 node case").
 *
 * Closed form: delay + the slower of the two transfers of every member, one round; delay =
 * the NVLS latency of the domains (the platform's nvls_latency_s) + 2 ceil(log2 N) x the
 * platform's per-level latency of the tree between domains (NCCL: hwLat NET NVLSTree Simple,
 * 20.9 us), less what the routes take. Expansion: that one round, each member sending its
 * NVLink bytes to the next member of its domain and its NIC bytes to the member of the same
 * place in the next domain (they use different links, so on an idle network the round is the
 * slower of the two). With protocol NONE neither the efficiency nor the latencies are added.
 *
 * Usable where the group spans at least two NVLink domains, each with the same number k >= 2
 * of members, all with NVLS and the platform's NVLS-tree latency (SimparNet.nvls_tree);
 * elsewhere "nvlstree" runs the ring (collectives.c).
 */
#include "collectives-private.h"
#include <math.h>

/* The layout (at[d * k + i] = member, N domains of k) and the figures; NULL when not usable. */
static guint *
nvls_tree_layout(const SimparCollGroup *g, guint *N, guint *k, double *eff, double *lat_s)
{
    double t0;
    if (g->n < 4 || g->net->nvls == NULL || g->net->nvls_tree == NULL ||
        !g->net->nvls_tree(g->net, g->gpus[0], &t0)) /* most platforms: before any layout */
        return NULL;
    g_autofree guint *at = simpar_coll_node_layout(g, N, k);
    if (at == NULL || *N < 2 || *k < 2)
        return NULL;
    double e_min = 1.0, l_nvls = 0.0, l_tree = 0.0;
    for (guint m = 0; m < g->n; m++) {
        double e, l, t;
        if (!g->net->nvls(g->net, g->gpus[m], &e, &l) || !g->net->nvls_tree(g->net, g->gpus[m], &t))
            return NULL;
        e_min = MIN(e_min, e), l_nvls = MAX(l_nvls, l), l_tree = MAX(l_tree, t);
    }
    *eff = e_min;
    *lat_s = l_nvls + 2 * ceil(log2((double) *N)) * l_tree;
    return g_steal_pointer(&at);
}

gboolean
simpar_coll_nvls_tree_usable(const SimparCollGroup *g)
{
    g_return_val_if_fail(simpar_coll_group_ok(g), FALSE);
    guint N, k;
    double eff, lat;
    g_autofree guint *at = nvls_tree_layout(g, &N, &k, &eff, &lat);
    return at != NULL;
}

/* The one round's transfers (from member at[d k + i] to its domain's next member and to the
 * next domain's member of the same place) and its delay. */
static void
nvls_tree_plan(const SimparCollGroup *g, double bytes, const SimparCollParams *p, double *intra,
               double *inter, double *delay_s, SimparRoundCost *rc, guint **layout, guint *N,
               guint *k)
{
    double eff, lat;
    *layout = nvls_tree_layout(g, N, k, &eff, &lat);
    g_assert(*layout != NULL);
    if (p->proto == SIMPAR_PROTO_NONE)
        eff = 1.0, lat = 0.0;
    guint n = *N, l = *k;
    *intra = bytes * (l + 1) / l / eff;
    *inter = 2.0 * (n - 1) / n * bytes / l;
    *rc = (SimparRoundCost){0};
    for (guint d = 0; d < n; d++)
        for (guint i = 0; i < l; i++) {
            guint m = (*layout)[d * l + i];
            simpar_coll_round_add(rc, g, m, (*layout)[d * l + (i + 1) % l], *intra);
            simpar_coll_round_add(rc, g, m, (*layout)[((d + 1) % n) * l + i], *inter);
        }
    *delay_s = simpar_coll_step_delay(lat, rc->lat_s);
}

double
simpar_coll_nvls_tree_closed_form(SimparCollKind kind, const SimparCollGroup *g, double bytes,
                                  guint root, const SimparCollParams *p)
{
    g_return_val_if_fail(kind == SIMPAR_COLL_ALL_REDUCE, 0.0);
    g_return_val_if_fail(simpar_coll_group_ok(g) && p != NULL, 0.0);
    (void) root;

    double intra, inter, delay;
    SimparRoundCost rc;
    g_autofree guint *at = NULL;
    guint N, k;
    nvls_tree_plan(g, bytes, p, &intra, &inter, &delay, &rc, &at, &N, &k);
    return delay + rc.max_s;
}

void
simpar_coll_nvls_tree_expand(SimparCollKind kind, const SimparCollGroup *g, double bytes,
                             guint root, const SimparCollParams *p, SimparExpansion *out)
{
    g_return_if_fail(kind == SIMPAR_COLL_ALL_REDUCE);
    g_return_if_fail(simpar_coll_group_ok(g) && p != NULL);
    g_return_if_fail(out != NULL && out->n_members == g->n && out->rounds->len == 0);
    (void) root;

    double intra, inter, delay;
    SimparRoundCost rc;
    g_autofree guint *at = NULL;
    guint N, k;
    nvls_tree_plan(g, bytes, p, &intra, &inter, &delay, &rc, &at, &N, &k);
    g_autofree guint *domain = g_new(guint, g->n), *place = g_new(guint, g->n);
    for (guint j = 0; j < g->n; j++)
        domain[at[j]] = j / k, place[at[j]] = j % k;
    for (guint m = 0; m < g->n; m++) {
        guint d = domain[m], i = place[m];
        simpar_expansion_begin_member(out, m);
        simpar_expansion_round(out, delay);
        simpar_expansion_xfer(out, at[d * k + (i + 1) % k], TRUE, intra);
        simpar_expansion_xfer(out, at[d * k + (i + k - 1) % k], FALSE, intra);
        simpar_expansion_xfer(out, at[((d + 1) % N) * k + i], TRUE, inter);
        simpar_expansion_xfer(out, at[((d + N - 1) % N) * k + i], FALSE, inter);
    }
    simpar_expansion_end(out);
}
