/* coll-helpers.c - what the algorithm files share: NCCL's latency constants, route and round
 * costs, links shared within a round, the members' node layout.
 */
#include "collectives-private.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- NCCL constants and shared helpers ---------------------------------------------------- */

/* NCCL's baseLat and hwLat (NVIDIA/nccl src/graph/tuning.cc at 5067397c, ncclTunerConstants
 * defaults), microseconds, indexed [row][proto - SIMPAR_PROTO_LL] with protos LL, LL128, Simple. */
static const double coll_base_lat_us[2][3] = {
    [SIMPAR_LAT_RING] = {6.6, 14.0, 8.4},
    [SIMPAR_LAT_TREE] = {6.8, 14.0, 8.4},
};
static const double coll_hw_nvlink_us[2][3] = {
    [SIMPAR_LAT_RING] = {0.6, 1.9, 3.4},
    [SIMPAR_LAT_TREE] = {0.6, 1.25, 4.0},
};
static const double coll_hw_net_us[2][3] = {
    [SIMPAR_LAT_RING] = {2.7, 4.0, 14.0},
    [SIMPAR_LAT_TREE] = {5.0, 8.5, 14.0},
};

static double
coll_lat_s(const double table[2][3], SimparLatRow row, SimparProto proto)
{
    g_return_val_if_fail(proto < SIMPAR_N_PROTOS, 0.0); /* AUTO is resolved before */
    if (proto == SIMPAR_PROTO_NONE)
        return 0.0;
    return table[row][proto - SIMPAR_PROTO_LL] * 1e-6;
}

double
simpar_coll_xfer_time(const SimparCollGroup *g, guint src, guint dst, double bytes)
{
    SimparRoute r;
    simpar_net_route(g->net, g->gpus[src], g->gpus[dst], &r);
    g_assert(r.bw_Bps > 0.0);
    return r.lat_s + bytes / r.bw_Bps;
}

guint
simpar_coll_chunks(double bytes, const SimparCollParams *p)
{
    g_return_val_if_fail(p != NULL && p->chunk_bytes > 0.0, 1);
    double c = ceil(bytes / p->chunk_bytes);
    return (guint) CLAMP(c, 1.0, (double) MAX(p->max_chunks, 1u));
}

static int
coll_uint_cmp(const void *a, const void *b)
{
    guint x = *(const guint *) a, y = *(const guint *) b;
    return (x > y) - (x < y);
}

guint
simpar_coll_group_nodes(const SimparCollGroup *g)
{
    guint first = g->n > 0 ? simpar_net_node(g->net, g->gpus[0]) : 0, m = 1;
    while (m < g->n && simpar_net_node(g->net, g->gpus[m]) == first)
        m++;
    if (m >= g->n) /* the common case of one node: no sort */
        return g->n > 0;
    g_autofree guint *nodes = g_new(guint, g->n);
    for (m = 0; m < g->n; m++)
        nodes[m] = simpar_net_node(g->net, g->gpus[m]);
    qsort(nodes, g->n, sizeof *nodes, coll_uint_cmp);
    guint k = 1;
    for (m = 1; m < g->n; m++)
        k += nodes[m] != nodes[m - 1];
    return k;
}

guint *
simpar_coll_node_layout(const SimparCollGroup *g, guint *k, guint *l)
{
    g_autoptr(GHashTable) index = g_hash_table_new(NULL, NULL);
    g_autofree guint *node_of = g_new(guint, g->n), *count = g_new0(guint, g->n);
    *k = 0;
    for (guint m = 0; m < g->n; m++) {
        gpointer key = GUINT_TO_POINTER(simpar_net_node(g->net, g->gpus[m])), idx;
        if (!g_hash_table_lookup_extended(index, key, NULL, &idx))
            g_hash_table_insert(index, key, idx = GUINT_TO_POINTER((*k)++));
        node_of[m] = GPOINTER_TO_UINT(idx);
        count[node_of[m]]++;
    }
    *l = count[0];
    for (guint i = 1; i < *k; i++)
        if (count[i] != *l)
            return NULL;
    guint *at = g_new(guint, g->n);
    memset(count, 0, g->n * sizeof *count);
    for (guint m = 0; m < g->n; m++)
        at[node_of[m] * *l + count[node_of[m]]++] = m;
    return at; /* (transfer full) */
}

gboolean
simpar_coll_group_ok(const SimparCollGroup *g)
{
    return g != NULL && g->n > 0 && g->gpus != NULL && g->net != NULL && g->net->route != NULL &&
           g->net->node != NULL;
}

void
simpar_coll_round_note(SimparRoundCost *rc, const SimparCollGroup *g, guint src, guint dst,
                       double time_s, double lat_s)
{
    rc->max_s = rc->used ? MAX(rc->max_s, time_s) : time_s;
    rc->lat_s = rc->used ? MAX(rc->lat_s, lat_s) : lat_s;
    rc->used = TRUE;
    if (simpar_net_node(g->net, g->gpus[src]) != simpar_net_node(g->net, g->gpus[dst]))
        rc->net = TRUE;
}

void
simpar_coll_round_add(SimparRoundCost *rc, const SimparCollGroup *g, guint src, guint dst,
                      double bytes)
{
    SimparRoute r; /* simpar_coll_xfer_time's figure, from one lookup */
    simpar_net_route(g->net, g->gpus[src], g->gpus[dst], &r);
    g_assert(r.bw_Bps > 0.0);
    simpar_coll_round_note(rc, g, src, dst, r.lat_s + bytes / r.bw_Bps, r.lat_s);
}

/* The links of every hop's route, hop i's at [first[i], first[i + 1]) (transfer full); NULL
 * when the net does not give them. */
static GPtrArray *
coll_hop_links(const SimparCollGroup *g, const SimparHop *hops, guint n, guint *first)
{
    const SimparNet *net = g->net;
    if (net->links == NULL || net->link_bw == NULL)
        return NULL;
    GPtrArray *links = g_ptr_array_new();
    for (guint i = 0; i < n; i++) {
        first[i] = links->len;
        if (!net->links(net, g->gpus[hops[i].src], g->gpus[hops[i].dst], links)) {
            g_ptr_array_unref(links);
            return NULL;
        }
    }
    first[n] = links->len;
    return links;
}

void
simpar_coll_hops_time(const SimparCollGroup *g, const SimparHop *hops, guint n, double *out)
{
    const SimparNet *net = g->net;
    g_autofree guint *first = g_new0(guint, n + 1);
    g_autoptr(GPtrArray) links = coll_hop_links(g, hops, n, first);
    gboolean known = links != NULL;
    g_autoptr(GHashTable) load = g_hash_table_new_full(NULL, NULL, NULL, g_free);
    gboolean shared = FALSE;
    for (guint i = 0; i < n && known; i++)
        for (guint j = first[i]; j < first[i + 1]; j++) {
            double *l = g_hash_table_lookup(load, links->pdata[j]);
            if (l == NULL)
                g_hash_table_insert(load, links->pdata[j], l = g_new0(double, 1));
            else
                shared = TRUE;
            *l += hops[i].bytes;
        }
    for (guint i = 0; i < n; i++) {
        SimparRoute r;
        simpar_net_route(net, g->gpus[hops[i].src], g->gpus[hops[i].dst], &r);
        g_assert(r.bw_Bps > 0.0);
        double wire = hops[i].bytes / r.bw_Bps;
        for (guint j = first[i]; shared && j < first[i + 1]; j++) {
            double bw = net->link_bw(net, links->pdata[j]);
            wire = MAX(wire, *(double *) g_hash_table_lookup(load, links->pdata[j]) / bw);
        }
        out[i] = r.lat_s + wire;
    }
}

void
simpar_coll_hops_share(const SimparCollGroup *g, const SimparHop *hops, guint n, double *lat_s,
                       double *bw)
{
    const SimparNet *net = g->net;
    g_autofree guint *first = g_new0(guint, n + 1);
    g_autoptr(GPtrArray) links = coll_hop_links(g, hops, n, first);
    gboolean known = links != NULL;
    g_autoptr(GHashTable) count = g_hash_table_new(NULL, NULL); /* link -> hops on it */
    for (guint i = 0; i < n && known; i++)
        for (guint j = first[i]; j < first[i + 1]; j++)
            g_hash_table_insert(
                count, links->pdata[j],
                GUINT_TO_POINTER(GPOINTER_TO_UINT(g_hash_table_lookup(count, links->pdata[j])) +
                                 1));
    for (guint i = 0; i < n; i++) {
        SimparRoute r;
        simpar_net_route(net, g->gpus[hops[i].src], g->gpus[hops[i].dst], &r);
        g_assert(r.bw_Bps > 0.0);
        lat_s[i] = r.lat_s, bw[i] = r.bw_Bps;
        for (guint j = first[i]; known && j < first[i + 1]; j++) {
            guint k = GPOINTER_TO_UINT(g_hash_table_lookup(count, links->pdata[j]));
            if (k > 1)
                bw[i] = MIN(bw[i], net->link_bw(net, links->pdata[j]) / k);
        }
    }
}

double
simpar_coll_base_lat(SimparLatRow row, SimparProto proto)
{
    return coll_lat_s(coll_base_lat_us, row, proto);
}

double
simpar_coll_hw_lat(SimparLatRow row, SimparProto proto, gboolean net)
{
    return coll_lat_s(net ? coll_hw_net_us : coll_hw_nvlink_us, row, proto);
}

double
simpar_coll_step_delay(double hw_s, double route_lat_s)
{
    return hw_s > route_lat_s ? hw_s - route_lat_s : 0.0;
}

/* The round's delay_s: hwLat of its slowest link type (NET above NVLink for every protocol and
 * row) beyond the latency its routes already take, plus baseLat when it is the member's first
 * round. Every member pays the launch once; the critical path starts with one of them, so the
 * closed form counts baseLat once. */
double
simpar_coll_round_delay(const SimparRoundCost *rc, SimparLatRow row, const SimparCollParams *p,
                        gboolean first)
{
    if (!rc->used)
        return 0.0;
    double hw = simpar_coll_step_delay(simpar_coll_hw_lat(row, p->proto, rc->net), rc->lat_s);
    return hw + (first ? simpar_coll_base_lat(row, p->proto) : 0.0);
}

double
simpar_coll_rounds_total(const SimparRoundCost *rc, guint n_rounds, SimparLatRow row,
                         const SimparCollParams *p)
{
    double total = 0.0;
    gboolean any = FALSE;
    for (guint t = 0; t < n_rounds; t++) {
        if (!rc[t].used)
            continue;
        total += simpar_coll_round_delay(&rc[t], row, p, FALSE) + rc[t].max_s;
        any = TRUE;
    }
    return any ? total + coll_lat_s(coll_base_lat_us, row, p->proto) : 0.0;
}
