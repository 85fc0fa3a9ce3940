/* collectives.c - the algorithm table, the expansion container, the idle-network evaluator of
 * an expansion, the NCCL-like default choice and the helpers the algorithm files share.
 */
#include "collectives-private.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

G_DEFINE_QUARK(simpar_coll_error_quark, simpar_coll_error)

/* ---- the table --------------------------------------------------------------------------- */

enum {
    COLL_RING,
    COLL_TREE,
    COLL_CHAIN,
    COLL_HIERARCHICAL,
    COLL_PAIRWISE,
    COLL_NVLS,
    N_COLL_ALGOS,
};

/* The algorithm files' functions, which take a concrete protocol and wire bytes; the table's
 * entries wrap them (coll_wire). */
typedef struct {
    SimparLatRow row;
    double (*closed_form)(SimparCollKind, const SimparCollGroup *, double, guint,
                          const SimparCollParams *);
    void (*expand)(SimparCollKind, const SimparCollGroup *, double, guint, const SimparCollParams *,
                   SimparExpansion *);
    void (*eval_idle)(SimparCollKind, const SimparCollGroup *, double, const SimparCollParams *,
                      const double *, double *);
} CollRaw;

static const CollRaw coll_raw[N_COLL_ALGOS] = {
    [COLL_RING] = {SIMPAR_LAT_RING, simpar_coll_ring_closed_form, simpar_coll_ring_expand,
                   simpar_coll_ring_eval_idle},
    [COLL_TREE] = {SIMPAR_LAT_TREE, simpar_coll_tree_closed_form, simpar_coll_tree_expand, NULL},
    [COLL_CHAIN] = {SIMPAR_LAT_RING, simpar_coll_chain_closed_form, simpar_coll_chain_expand, NULL},
    [COLL_HIERARCHICAL] = {SIMPAR_LAT_RING, simpar_coll_hierarchical_closed_form,
                           simpar_coll_hierarchical_expand, NULL},
    [COLL_PAIRWISE] = {SIMPAR_LAT_RING, simpar_coll_pairwise_closed_form,
                       simpar_coll_pairwise_expand, NULL},
    [COLL_NVLS] = {SIMPAR_LAT_RING, simpar_coll_nvls_closed_form, simpar_coll_nvls_expand, NULL},
};

/* The algorithm that runs as `a` on `g`: NVLS runs the ring on a group that cannot use it. */
static guint
coll_runs_as(guint a, const SimparCollGroup *g)
{
    return a == COLL_NVLS && !simpar_coll_nvls_usable(g, NULL, NULL) ? COLL_RING : a;
}

/* How many wire bytes a protocol moves per byte of data: NCCL's tuner scales the bandwidth of
 * (algorithm, protocol) by these (tuning.cc at 5067397c, ncclTopoTuneModel): ring LL x 0.5,
 * LL128 x 0.92; tree LL x 1/3.8, LL128 x 7/9 on one node or 120/128 across nodes, Simple x
 * 0.92. All-to-all runs as point-to-point sends, at the link rate. */
static double
coll_wire_factor(guint a, SimparProto proto, gboolean one_node)
{
    if (proto == SIMPAR_PROTO_NONE || a == COLL_PAIRWISE)
        return 1.0;
    if (coll_raw[a].row == SIMPAR_LAT_TREE)
        return proto == SIMPAR_PROTO_LL      ? 3.8
               : proto == SIMPAR_PROTO_LL128 ? (one_node ? 9.0 / 7.0 : 128.0 / 120.0)
                                             : 1.0 / 0.92;
    return proto == SIMPAR_PROTO_LL ? 2.0 : proto == SIMPAR_PROTO_LL128 ? 1.0 / 0.92 : 1.0;
}

/* The protocols AUTO resolved to, for a platform's net (one that gives its links: its routes
 * stay as they are while collectives are built), as collectives are asked about again and
 * again (fused transfers member by member, blocks instance by instance). Keyed by the group's
 * array and figures; a hit also compares the GPUs (an array freed and reused). At most
 * COLL_WIRE_MAX are kept. */
#define COLL_WIRE_MAX 65536

typedef struct {
    guint a, n, root, kind, max_chunks;
    const SimparNet *net;
    const guint *gpus_at;
    double bytes, chunk_bytes;
    guint *gpus;       /* a copy */
    SimparProto proto; /* the answer */
    gboolean one_node;
} CollWireKey;

static guint
coll_wire_hash(gconstpointer p)
{
    const CollWireKey *k = p;
    return g_direct_hash(k->gpus_at) ^ g_direct_hash(k->net) ^ g_double_hash(&k->bytes) ^
           (k->a * 131 + k->kind * 31 + k->root * 7 + k->n);
}

static gboolean
coll_wire_equal(gconstpointer p, gconstpointer q)
{
    const CollWireKey *x = p, *y = q;
    return x->a == y->a && x->n == y->n && x->root == y->root && x->kind == y->kind &&
           x->max_chunks == y->max_chunks && x->net == y->net && x->gpus_at == y->gpus_at &&
           x->bytes == y->bytes && x->chunk_bytes == y->chunk_bytes;
}

static void
coll_wire_free(gpointer p)
{
    g_free(((CollWireKey *) p)->gpus);
    g_free(p);
}

G_LOCK_DEFINE_STATIC(coll_wire_memo);
static GHashTable *coll_wire_memo; /* CollWireKey set */

static CollWireKey
coll_wire_key(guint a, SimparCollKind kind, const SimparCollGroup *g, double bytes, guint root,
              const SimparCollParams *p)
{
    return (CollWireKey){a,     g->n,           root, kind, p->max_chunks, g->net, g->gpus,
                         bytes, p->chunk_bytes, NULL, 0,    FALSE};
}

static gboolean
coll_wire_known(guint a, SimparCollKind kind, const SimparCollGroup *g, double bytes, guint root,
                const SimparCollParams *p, SimparProto *proto, gboolean *one_node)
{
    CollWireKey key = coll_wire_key(a, kind, g, bytes, root, p);
    G_LOCK(coll_wire_memo);
    const CollWireKey *k =
        coll_wire_memo != NULL ? g_hash_table_lookup(coll_wire_memo, &key) : NULL;
    gboolean hit = k != NULL && memcmp(k->gpus, g->gpus, g->n * sizeof *g->gpus) == 0;
    if (hit)
        *proto = k->proto, *one_node = k->one_node;
    G_UNLOCK(coll_wire_memo);
    return hit;
}

static void
coll_wire_keep(guint a, SimparCollKind kind, const SimparCollGroup *g, double bytes, guint root,
               const SimparCollParams *p, SimparProto proto, gboolean one_node)
{
    CollWireKey *k = g_new(CollWireKey, 1);
    *k = coll_wire_key(a, kind, g, bytes, root, p);
    k->gpus = g_memdup2(g->gpus, g->n * sizeof *g->gpus);
    k->proto = proto, k->one_node = one_node;
    G_LOCK(coll_wire_memo);
    if (coll_wire_memo == NULL)
        coll_wire_memo =
            g_hash_table_new_full(coll_wire_hash, coll_wire_equal, coll_wire_free, NULL);
    if (g_hash_table_size(coll_wire_memo) >= COLL_WIRE_MAX)
        g_hash_table_remove_all(coll_wire_memo);
    g_hash_table_add(coll_wire_memo, k);
    G_UNLOCK(coll_wire_memo);
}

void
simpar_coll_forget(void)
{
    G_LOCK(coll_wire_memo);
    g_clear_pointer(&coll_wire_memo, g_hash_table_unref);
    G_UNLOCK(coll_wire_memo);
    simpar_ring_forget();
}

/* The concrete protocol of this collective (`q`, from `p`) and the bytes its transfers carry. */
static double
coll_wire(guint a, SimparCollKind kind, const SimparCollGroup *g, double bytes, guint root,
          const SimparCollParams *p, SimparCollParams *q)
{
    *q = *p;
    if (p->proto == SIMPAR_PROTO_NONE)
        return bytes;
    if (a == COLL_NVLS) { /* NVLS runs Simple only (tuning.cc); its own efficiency (nvls.c) */
        q->proto = SIMPAR_PROTO_SIMPLE;
        return bytes;
    }
    gboolean keep = g->net->links != NULL && p->proto == SIMPAR_PROTO_AUTO;
    gboolean one_node = TRUE;
    if (keep && coll_wire_known(a, kind, g, bytes, root, p, &q->proto, &one_node))
        return bytes * coll_wire_factor(a, q->proto, one_node);
    if (coll_raw[a].row == SIMPAR_LAT_TREE || p->proto == SIMPAR_PROTO_AUTO)
        one_node = simpar_coll_group_nodes(g) < 2;
    if (p->proto == SIMPAR_PROTO_AUTO) {
        double best = G_MAXDOUBLE;
        for (SimparProto c = SIMPAR_PROTO_LL; c < SIMPAR_N_PROTOS; c++) {
            SimparCollParams t = *p;
            t.proto = c;
            double s = coll_raw[a].closed_form(kind, g, bytes * coll_wire_factor(a, c, one_node),
                                               root, &t);
            if (s < best) /* ties: the lower protocol, as NCCL's loop keeps the first minimum */
                best = s, q->proto = c;
        }
        if (keep)
            coll_wire_keep(a, kind, g, bytes, root, p, q->proto, one_node);
    }
    return bytes * coll_wire_factor(a, q->proto, one_node);
}

#define COLL_ENTRIES(A, prefix)                                                                    \
    static double prefix##_closed_form(SimparCollKind kind, const SimparCollGroup *g,              \
                                       double bytes, guint root, const SimparCollParams *p)        \
    {                                                                                              \
        SimparCollParams q;                                                                        \
        guint a = coll_runs_as(A, g);                                                              \
        double wire = coll_wire(a, kind, g, bytes, root, p, &q);                                   \
        return coll_raw[a].closed_form(kind, g, wire, root, &q);                                   \
    }                                                                                              \
    static void prefix##_expand(SimparCollKind kind, const SimparCollGroup *g, double bytes,       \
                                guint root, const SimparCollParams *p, SimparExpansion *out)       \
    {                                                                                              \
        SimparCollParams q;                                                                        \
        guint a = coll_runs_as(A, g);                                                              \
        double wire = coll_wire(a, kind, g, bytes, root, p, &q);                                   \
        coll_raw[a].expand(kind, g, wire, root, &q, out);                                          \
    }

COLL_ENTRIES(COLL_RING, coll_ring)
COLL_ENTRIES(COLL_TREE, coll_tree)
COLL_ENTRIES(COLL_CHAIN, coll_chain)
COLL_ENTRIES(COLL_HIERARCHICAL, coll_hier)
COLL_ENTRIES(COLL_PAIRWISE, coll_pairwise)
COLL_ENTRIES(COLL_NVLS, coll_nvls)

static void
coll_ring_eval_idle(SimparCollKind kind, const SimparCollGroup *g, double bytes,
                    const SimparCollParams *p, const double *start, double *end)
{
    SimparCollParams q;
    double wire = coll_wire(COLL_RING, kind, g, bytes, 0, p, &q);
    simpar_coll_ring_eval_idle(kind, g, wire, &q, start, end);
}

static void
coll_ring_fuse(SimparCollKind kind, const SimparCollGroup *g, double bytes,
               const SimparCollParams *p, guint member, GArray *out)
{
    SimparCollParams q;
    simpar_coll_ring_fuse(kind, g, coll_wire(COLL_RING, kind, g, bytes, 0, p, &q), member, out);
}

static const SimparCollAlgo coll_algos[] = {
    [COLL_RING] = {"ring", "ring over the group order: 2(n-1) steps of S/n for all-reduce",
                   SIMPAR_COLL_BIT(SIMPAR_COLL_ALL_REDUCE) |
                       SIMPAR_COLL_BIT(SIMPAR_COLL_ALL_GATHER) |
                       SIMPAR_COLL_BIT(SIMPAR_COLL_REDUCE_SCATTER),
                   coll_ring_expand, coll_ring_closed_form, coll_ring_eval_idle, coll_ring_fuse},
    [COLL_TREE] = {"tree",
                   "NCCL double binary tree between nodes, chains inside them; reduce up, "
                   "broadcast down, pipelined",
                   SIMPAR_COLL_BIT(SIMPAR_COLL_ALL_REDUCE), coll_tree_expand,
                   coll_tree_closed_form},
    [COLL_CHAIN] = {"chain", "pipelined chain from (broadcast) or to (reduce) the root",
                    SIMPAR_COLL_BIT(SIMPAR_COLL_BROADCAST) | SIMPAR_COLL_BIT(SIMPAR_COLL_REDUCE),
                    coll_chain_expand, coll_chain_closed_form},
    [COLL_HIERARCHICAL] = {"hierarchical",
                           "reduce-scatter in node, all-reduce across nodes, all-gather in node",
                           SIMPAR_COLL_BIT(SIMPAR_COLL_ALL_REDUCE), coll_hier_expand,
                           coll_hier_closed_form},
    [COLL_PAIRWISE] = {"pairwise", "n-1 rounds, round r sends S/n to member m+r",
                       SIMPAR_COLL_BIT(SIMPAR_COLL_ALL_TO_ALL), coll_pairwise_expand,
                       coll_pairwise_closed_form},
    [COLL_NVLS] = {"nvls",
                   "NVLink SHARP on one NVSwitch node that has it: S(n+1)/n each way per GPU "
                   "(else the ring)",
                   SIMPAR_COLL_BIT(SIMPAR_COLL_ALL_REDUCE), coll_nvls_expand,
                   coll_nvls_closed_form},
};

SimparProto
simpar_coll_proto(const SimparCollAlgo *algo, SimparCollKind kind, const SimparCollGroup *g,
                  double bytes, guint root, const SimparCollParams *p)
{
    g_return_val_if_fail(algo >= coll_algos && algo < coll_algos + N_COLL_ALGOS, SIMPAR_PROTO_NONE);
    SimparCollParams q;
    coll_wire(coll_runs_as((guint) (algo - coll_algos), g), kind, g, bytes, root, p, &q);
    return q.proto;
}

const SimparCollAlgo *
simpar_coll_runs_as(const SimparCollAlgo *algo, const SimparCollGroup *g)
{
    g_return_val_if_fail(algo >= coll_algos && algo < coll_algos + N_COLL_ALGOS, algo);
    return &coll_algos[coll_runs_as((guint) (algo - coll_algos), g)];
}

const SimparCollAlgo *
simpar_coll_algos(guint *n)
{
    g_return_val_if_fail(n != NULL, NULL);
    *n = G_N_ELEMENTS(coll_algos);
    return coll_algos; /* (transfer none) */
}

const char *
simpar_coll_algo_names(void)
{
    static const char *names;
    if (g_once_init_enter(&names)) {
        g_autoptr(GString) s = g_string_new(NULL);
        for (guint i = 0; i < G_N_ELEMENTS(coll_algos); i++)
            g_string_append_printf(s, "%s%s", i ? ", " : "", coll_algos[i].name);
        g_once_init_leave(&names, g_intern_string(s->str));
    }
    return names;
}

gboolean
simpar_coll_algo_lookup(const char *name, const SimparCollAlgo **out, GError **error)
{
    g_return_val_if_fail(name != NULL && out != NULL, FALSE);
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);

    *out = NULL;
    if (g_str_equal(name, "auto"))
        return TRUE;
    for (guint i = 0; i < G_N_ELEMENTS(coll_algos); i++)
        if (g_str_equal(name, coll_algos[i].name)) {
            *out = &coll_algos[i];
            return TRUE;
        }
    g_set_error(error, SIMPAR_COLL_ERROR, SIMPAR_COLL_ERROR_INVALID,
                "unknown collective algorithm '%s' (valid: auto, %s)", name,
                simpar_coll_algo_names());
    return FALSE;
}

const SimparCollAlgo *
simpar_coll_choose(SimparCollKind kind, const SimparCollGroup *g, double bytes,
                   const SimparCollParams *p)
{
    g_return_val_if_fail(simpar_coll_group_ok(g) && p != NULL, &coll_algos[COLL_RING]);

    switch (kind) {
    case SIMPAR_COLL_ALL_REDUCE: {
        /* NCCL's tuner keeps the cheapest (algo, proto): ring, tree, and NVLS where the group
         * can use it. Ties go to ring, NCCL's default, then tree. */
        double ring = coll_ring_closed_form(kind, g, bytes, 0, p);
        double tree = coll_tree_closed_form(kind, g, bytes, 0, p);
        guint best = tree < ring ? COLL_TREE : COLL_RING;
        if (simpar_coll_nvls_usable(g, NULL, NULL) &&
            coll_nvls_closed_form(kind, g, bytes, 0, p) < MIN(ring, tree))
            best = COLL_NVLS;
        return &coll_algos[best];
    }
    case SIMPAR_COLL_BROADCAST:
    case SIMPAR_COLL_REDUCE:
        return &coll_algos[COLL_CHAIN];
    case SIMPAR_COLL_ALL_TO_ALL:
        return &coll_algos[COLL_PAIRWISE];
    case SIMPAR_COLL_ALL_GATHER:
    case SIMPAR_COLL_REDUCE_SCATTER:
    default:
        return &coll_algos[COLL_RING];
    }
}

void
simpar_coll_params_init(SimparCollParams *p)
{
    g_return_if_fail(p != NULL);
    p->proto = SIMPAR_PROTO_NONE;
    p->chunk_bytes = 512.0 * 1024; /* NCCL Simple: 4 MiB buffer / NCCL_STEPS (8) */
    p->max_chunks = 64;
}

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

/* ---- the expansion container -------------------------------------------------------------- */

/* The public struct plus the builder's cursor, like GArray / GRealArray. */
typedef struct {
    SimparExpansion pub;
    guint next; /* members [0, next) have begun; the current one is next - 1 */
    gboolean ended;
} SimparRealExpansion;

SimparExpansion *
simpar_expansion_new(guint n_members)
{
    SimparRealExpansion *re = g_new0(SimparRealExpansion, 1);
    re->pub.n_members = n_members;
    re->pub.rounds = g_array_new(FALSE, FALSE, sizeof(SimparRound));
    re->pub.xfers = g_array_new(FALSE, FALSE, sizeof(SimparXfer));
    re->pub.member_first = g_new0(guint, n_members + 1);
    return &re->pub; /* (transfer full) */
}

void
simpar_expansion_free(SimparExpansion *e)
{
    if (e == NULL)
        return;
    g_array_unref(e->rounds);
    g_array_unref(e->xfers);
    g_free(e->member_first);
    g_free((SimparRealExpansion *) e);
}

void
simpar_expansion_begin_member(SimparExpansion *e, guint member)
{
    SimparRealExpansion *re = (SimparRealExpansion *) e;
    g_return_if_fail(e != NULL && !re->ended);
    g_return_if_fail(member >= re->next && member < e->n_members);
    /* members skipped over have no rounds */
    for (guint m = re->next; m <= member; m++)
        e->member_first[m] = e->rounds->len;
    re->next = member + 1;
}

void
simpar_expansion_round(SimparExpansion *e, double delay_s)
{
    SimparRealExpansion *re = (SimparRealExpansion *) e;
    g_return_if_fail(e != NULL && !re->ended && re->next > 0);
    g_return_if_fail(delay_s >= 0.0);
    SimparRound r = {delay_s, e->xfers->len, 0};
    g_array_append_val(e->rounds, r);
}

void
simpar_expansion_xfer(SimparExpansion *e, guint peer, gboolean send, double bytes)
{
    simpar_expansion_xfer_timed(e, peer, send, bytes, 0);
}

void
simpar_expansion_xfer_timed(SimparExpansion *e, guint peer, gboolean send, double bytes,
                            double idle_s)
{
    SimparRealExpansion *re = (SimparRealExpansion *) e;
    g_return_if_fail(e != NULL && !re->ended && re->next > 0);
    g_return_if_fail(e->rounds->len > e->member_first[re->next - 1]); /* no round begun */
    g_return_if_fail(peer < e->n_members && peer != re->next - 1);
    g_return_if_fail(bytes >= 0.0 && idle_s >= 0.0);
    SimparXfer x = {peer, send, bytes, idle_s};
    g_array_append_val(e->xfers, x);
    g_array_index(e->rounds, SimparRound, e->rounds->len - 1).n++;
}

void
simpar_expansion_end(SimparExpansion *e)
{
    SimparRealExpansion *re = (SimparRealExpansion *) e;
    g_return_if_fail(e != NULL && !re->ended);
    for (guint m = re->next; m <= e->n_members; m++)
        e->member_first[m] = e->rounds->len;
    re->next = e->n_members;
    re->ended = TRUE;
}

/* ---- idle-network evaluation ------------------------------------------------------------- */

typedef struct {
    const SimparExpansion *e;
    const SimparCollGroup *g;
    guint *owner;  /* transfer -> index of its round in e->rounds */
    guint *match;  /* transfer -> the peer's transfer it pairs with */
    guint *cur;    /* member -> its current round; member_first[m + 1] once done */
    double *begin; /* round -> begin time, valid once its member has reached it */
    double *last;  /* member -> end of its last finished round */
    guint *queue;  /* members to look at again, a ring of n slots */
    gboolean *queued;
    guint head, len;
} EvalState;

typedef struct {
    guint64 pair; /* sender * n + receiver */
    guint xfer;
} EvalKey;

static int
eval_key_cmp(const void *a, const void *b)
{
    const EvalKey *x = a, *y = b;
    if (x->pair != y->pair)
        return x->pair < y->pair ? -1 : 1;
    return x->xfer < y->xfer ? -1 : x->xfer > y->xfer;
}

/* Pairs the k-th send from a to b with the k-th receive on b from a: transfers are stored
 * member by member in program order, so sorting by (pair, index) gives the FIFO order. */
static void
eval_match(EvalState *st)
{
    const SimparExpansion *e = st->e;
    guint nx = e->xfers->len, ns = 0, nr = 0;
    g_autofree EvalKey *sends = g_new(EvalKey, nx);
    g_autofree EvalKey *recvs = g_new(EvalKey, nx);
    for (guint m = 0; m < e->n_members; m++)
        for (guint r = e->member_first[m]; r < e->member_first[m + 1]; r++) {
            const SimparRound *rd = &g_array_index(e->rounds, SimparRound, r);
            for (guint i = rd->first; i < rd->first + rd->n; i++) {
                const SimparXfer *x = &g_array_index(e->xfers, SimparXfer, i);
                st->owner[i] = r;
                if (x->send)
                    sends[ns++] = (EvalKey){(guint64) m * e->n_members + x->peer, i};
                else
                    recvs[nr++] = (EvalKey){(guint64) x->peer * e->n_members + m, i};
            }
        }
    g_assert_cmpuint(ns, ==, nr); /* a send without its receive, or the reverse */
    if (ns == 0)
        return; /* g_new(.., 0) gave NULL, which qsort must not see */
    qsort(sends, ns, sizeof(EvalKey), eval_key_cmp);
    qsort(recvs, nr, sizeof(EvalKey), eval_key_cmp);
    for (guint k = 0; k < ns; k++) {
        g_assert(sends[k].pair == recvs[k].pair);
        double bs = g_array_index(e->xfers, SimparXfer, sends[k].xfer).bytes;
        double br = g_array_index(e->xfers, SimparXfer, recvs[k].xfer).bytes;
        g_assert(fabs(bs - br) <= 1e-9 * MAX(bs, br));
        st->match[sends[k].xfer] = recvs[k].xfer;
        st->match[recvs[k].xfer] = sends[k].xfer;
    }
}

static void
eval_push(EvalState *st, guint m)
{
    if (st->queued[m])
        return;
    st->queued[m] = TRUE;
    st->queue[(st->head + st->len++) % st->e->n_members] = m;
}

/* Member m has just reached round r: its begin is known, so peers blocked on it may go on. */
static void
eval_reach(EvalState *st, guint m, guint r, double prev_end)
{
    const SimparRound *rd = &g_array_index(st->e->rounds, SimparRound, r);
    st->cur[m] = r;
    st->begin[r] = prev_end + rd->delay_s;
    for (guint i = rd->first; i < rd->first + rd->n; i++)
        eval_push(st, g_array_index(st->e->xfers, SimparXfer, i).peer);
}

/* Finishes member m's current round if every peer has posted its side; FALSE if blocked. */
static gboolean
eval_round(EvalState *st, guint m)
{
    const SimparExpansion *e = st->e;
    guint r = st->cur[m];
    if (r == e->member_first[m + 1])
        return FALSE;
    const SimparRound *rd = &g_array_index(e->rounds, SimparRound, r);
    double end = st->begin[r];
    for (guint i = rd->first; i < rd->first + rd->n; i++) {
        const SimparXfer *x = &g_array_index(e->xfers, SimparXfer, i);
        guint pr = st->owner[st->match[i]];
        if (pr > st->cur[x->peer])
            return FALSE; /* the peer has not reached the round that posts it */
        double start = MAX(st->begin[r], st->begin[pr]);
        guint src = x->send ? m : x->peer, dst = x->send ? x->peer : m;
        double t = x->idle_s > 0 ? x->idle_s : simpar_coll_xfer_time(st->g, src, dst, x->bytes);
        end = MAX(end, start + t);
    }
    st->last[m] = end;
    st->cur[m] = r + 1;
    if (r + 1 < e->member_first[m + 1])
        eval_reach(st, m, r + 1, end);
    return TRUE;
}

void
simpar_expansion_fuse(const SimparExpansion *e, guint m, GArray *out)
{
    guint first = out->len;
    for (guint i = e->member_first[m]; i < e->member_first[m + 1]; i++) {
        const SimparRound *rd = &g_array_index(e->rounds, SimparRound, i);
        for (guint j = rd->first; j < rd->first + rd->n; j++) {
            const SimparXfer *x = &g_array_index(e->xfers, SimparXfer, j);
            guint f = first;
            while (f < out->len && (g_array_index(out, SimparXfer, f).peer != x->peer ||
                                    g_array_index(out, SimparXfer, f).send != x->send))
                f++;
            if (f == out->len) {
                SimparXfer sum = {x->peer, x->send, x->bytes, 0}; /* a sum has no round time */
                g_array_append_val(out, sum);
            } else
                g_array_index(out, SimparXfer, f).bytes += x->bytes;
        }
    }
}

void
simpar_expansion_eval_idle(const SimparExpansion *e, const SimparCollGroup *g, const double *start,
                           double *end)
{
    g_return_if_fail(e != NULL && simpar_coll_group_ok(g) && start != NULL && end != NULL);
    g_return_if_fail(g->n == e->n_members && e->member_first[e->n_members] == e->rounds->len);

    guint n = e->n_members, nx = e->xfers->len, nr = e->rounds->len;
    g_autofree guint *owner = g_new(guint, nx);
    g_autofree guint *match = g_new(guint, nx);
    g_autofree guint *cur = g_new(guint, n);
    g_autofree guint *queue = g_new(guint, n);
    g_autofree double *begin = g_new(double, nr);
    g_autofree gboolean *queued = g_new0(gboolean, n);
    EvalState st = {e, g, owner, match, cur, begin, end, queue, queued, 0, 0};
    eval_match(&st);
    for (guint m = 0; m < n; m++) {
        end[m] = start[m];
        cur[m] = e->member_first[m];
        eval_push(&st, m);
    }
    for (guint m = 0; m < n; m++)
        if (cur[m] < e->member_first[m + 1])
            eval_reach(&st, m, cur[m], start[m]);
    /* a worklist rather than recursion: a member runs until blocked and is woken when a peer
     * reaches a round it shares with it */
    while (st.len > 0) {
        guint m = queue[st.head];
        st.head = (st.head + 1) % n, st.len--, queued[m] = FALSE;
        while (eval_round(&st, m))
            ;
    }
    for (guint m = 0; m < n; m++)
        g_assert_cmpuint(cur[m], ==, e->member_first[m + 1]); /* deadlock */
}
