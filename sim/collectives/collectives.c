/* collectives.c - the algorithm table, the protocols (NCCL's wire factors and choice), the
 * NCCL-like default choice of algorithm. The algorithm files (ring.c, ...) build on the helpers
 * of coll-helpers.c and the expansion of expansion.c, not on this file.
 */
#include "collectives-private.h"
#include <string.h>

G_DEFINE_QUARK(simpar_coll_error_quark, simpar_coll_error)

/* ---- the table --------------------------------------------------------------------------- */

enum {
#define COLL_ENUM(id, ...) COLL_##id,
    SIMPAR_COLL_ALGOS(COLL_ENUM) N_COLL_ALGOS,
};

/* The algorithm files' functions, which take a concrete protocol and wire bytes; the table's
 * entries wrap them (coll_wire). */
typedef struct {
    SimparLatRow row;
    SimparXferBound bound;
    double (*closed_form)(SimparCollKind, const SimparCollGroup *, double, guint,
                          const SimparCollParams *);
    void (*expand)(SimparCollKind, const SimparCollGroup *, double, guint, const SimparCollParams *,
                   SimparExpansion *);
} CollRaw;

static const CollRaw coll_raw[N_COLL_ALGOS] = {
#define COLL_RAW(id, name, file, kinds, row, bound, shortcuts, shares, description)                \
    [COLL_##id] = {row, bound, simpar_coll_##file##_closed_form, simpar_coll_##file##_expand},
    SIMPAR_COLL_ALGOS(COLL_RAW)};

/* The algorithm that runs as `a` on `g`: NVLS and NVLS-tree run the ring on a group that
 * cannot use them. */
static guint
coll_runs_as(guint a, const SimparCollGroup *g)
{
    if (a == COLL_NVLS_TREE && !simpar_coll_nvls_tree_usable(g))
        return COLL_RING;
    return a == COLL_NVLS && !simpar_coll_nvls_usable(g, NULL, NULL) ? COLL_RING : a;
}

/* How many wire bytes a protocol moves per byte of data: NCCL's tuner scales the bandwidth of
 * (algorithm, protocol) by these (tuning.cc at 5067397c, ncclTopoTuneModel): ring LL x 0.5,
 * LL128 x 0.92; tree LL x 1/3.8, LL128 x 7/9 on one node or 120/128 across nodes, Simple x
 * 0.92. All-to-all runs as point-to-point sends: Simple at the link rate, LL at half of it, as a
 * send/recv's LL lines carry half data (enqueue.cc at 5067397c, addP2pToPlan: line 947 halves
 * its chunk's data, line 1091 doubles its network bytes). */
static double
coll_wire_factor(guint a, SimparProto proto, gboolean one_node)
{
    if (a == COLL_PAIRWISE)
        return proto == SIMPAR_PROTO_LL ? 2.0 : 1.0;
    if (proto == SIMPAR_PROTO_NONE)
        return 1.0;
    if (coll_raw[a].row == SIMPAR_LAT_TREE)
        return proto == SIMPAR_PROTO_LL      ? 3.8
               : proto == SIMPAR_PROTO_LL128 ? (one_node ? 9.0 / 7.0 : 128.0 / 120.0)
                                             : 1.0 / 0.92;
    return proto == SIMPAR_PROTO_LL ? 2.0 : proto == SIMPAR_PROTO_LL128 ? 1.0 / 0.92 : 1.0;
}

/* The protocols AUTO resolved to, kept in the net's memo, as collectives are asked about again
 * and again (fused transfers member by member, blocks instance by instance, the same group of
 * GPUs in many arrays: every layer's block times, the formula mode's groups). Keyed by the
 * group's GPUs (their ids, wherever they lie) and figures: all the answer depends on on one net.
 * At most COLL_WIRE_MAX are kept. */
#define COLL_WIRE_MAX 65536

typedef struct {
    guint a, n, root, kind, max_chunks;
    const guint *gpus_at; /* the group's GPUs: the caller's, or gpus */
    double bytes, chunk_bytes;
    guint *gpus;       /* a copy (kept keys) */
    SimparProto proto; /* the answer */
    gboolean one_node;
} CollWireKey;

static guint
coll_wire_hash(gconstpointer p)
{
    const CollWireKey *k = p;
    guint h = k->a * 131 + k->kind * 31 + k->root * 7 + k->n;
    for (guint i = 0; i < k->n; i++)
        h = h * 16777619u ^ k->gpus_at[i];
    return h ^ g_double_hash(&k->bytes);
}

static gboolean
coll_wire_equal(gconstpointer p, gconstpointer q)
{
    const CollWireKey *x = p, *y = q;
    return x->a == y->a && x->n == y->n && x->root == y->root && x->kind == y->kind &&
           x->max_chunks == y->max_chunks && x->bytes == y->bytes &&
           x->chunk_bytes == y->chunk_bytes &&
           memcmp(x->gpus_at, y->gpus_at, x->n * sizeof *x->gpus_at) == 0;
}

static void
coll_wire_free(gpointer p)
{
    g_free(((CollWireKey *) p)->gpus);
    g_free(p);
}

static CollWireKey
coll_wire_key(guint a, SimparCollKind kind, const SimparCollGroup *g, double bytes, guint root,
              const SimparCollParams *p)
{
    return (CollWireKey){a,     g->n,           root, kind, p->max_chunks, g->gpus,
                         bytes, p->chunk_bytes, NULL, 0,    FALSE};
}

static gboolean
coll_wire_known(guint a, SimparCollKind kind, const SimparCollGroup *g, double bytes, guint root,
                const SimparCollParams *p, SimparProto *proto, gboolean *one_node)
{
    SimparNetMemo *memo = g->net->memo;
    CollWireKey key = coll_wire_key(a, kind, g, bytes, root, p);
    g_mutex_lock(&memo->lock);
    const CollWireKey *k = memo->wire != NULL ? g_hash_table_lookup(memo->wire, &key) : NULL;
    gboolean hit = k != NULL;
    if (hit)
        *proto = k->proto, *one_node = k->one_node;
    g_mutex_unlock(&memo->lock);
    return hit;
}

static void
coll_wire_keep(guint a, SimparCollKind kind, const SimparCollGroup *g, double bytes, guint root,
               const SimparCollParams *p, SimparProto proto, gboolean one_node)
{
    CollWireKey *k = g_new(CollWireKey, 1);
    *k = coll_wire_key(a, kind, g, bytes, root, p);
    k->gpus = g_memdup2(g->gpus, g->n * sizeof *g->gpus);
    k->gpus_at = k->gpus; /* the caller's array may be freed and reused */
    k->proto = proto, k->one_node = one_node;
    SimparNetMemo *memo = g->net->memo;
    g_mutex_lock(&memo->lock);
    if (memo->wire == NULL)
        memo->wire = g_hash_table_new_full(coll_wire_hash, coll_wire_equal, coll_wire_free, NULL);
    if (g_hash_table_size(memo->wire) >= COLL_WIRE_MAX)
        g_hash_table_remove_all(memo->wire);
    g_hash_table_add(memo->wire, k);
    g_mutex_unlock(&memo->lock);
}

SimparNetMemo *
simpar_net_memo_new(void)
{
    SimparNetMemo *memo = g_new0(SimparNetMemo, 1);
    g_mutex_init(&memo->lock);
    return memo; /* (transfer full) */
}

void
simpar_net_memo_clear(SimparNetMemo *memo)
{
    if (memo == NULL)
        return;
    g_mutex_lock(&memo->lock);
    g_clear_pointer(&memo->wire, g_hash_table_unref);
    g_clear_pointer(&memo->ring, g_hash_table_unref);
    memo->ring_hops = 0;
    g_mutex_unlock(&memo->lock);
}

void
simpar_net_memo_free(SimparNetMemo *memo)
{
    if (memo == NULL)
        return;
    simpar_net_memo_clear(memo);
    g_mutex_clear(&memo->lock);
    g_free(memo);
}

/* NCCL's send/recv protocol, which its tuner does not choose (enqueue.cc at 5067397c,
 * addP2pToPlan): LL while a peer's bytes are at most nChannels x NCCL_P2P_LL_THRESHOLD (16 KiB,
 * lines 859 and 932), Simple above, never LL128 (line 933). nChannels is 1 up to the smallest part
 * (line 919): an eighth of P2P_NVL_CHUNKSIZE (512 KiB) in a node, half of P2P_NET_CHUNKSIZE
 * (128 KiB) across nodes (init.cc, computeBuffSizes), 64 KiB both, so LL carries the blocks of
 * 16 KiB and less. A protocol asked for runs as given; LL128, which send/recv does not have, as
 * Simple. */
#define COLL_P2P_LL_THRESHOLD 16384.0

static SimparProto
coll_p2p_proto(SimparProto asked, double block_bytes)
{
    if (asked == SIMPAR_PROTO_AUTO)
        return block_bytes <= COLL_P2P_LL_THRESHOLD ? SIMPAR_PROTO_LL : SIMPAR_PROTO_SIMPLE;
    return asked == SIMPAR_PROTO_LL128 ? SIMPAR_PROTO_SIMPLE : asked;
}

/* The concrete protocol of this collective (`q`, from `p`) and the bytes its transfers carry. */
static double
coll_wire(guint a, SimparCollKind kind, const SimparCollGroup *g, double bytes, guint root,
          const SimparCollParams *p, SimparCollParams *q)
{
    *q = *p;
    if (p->proto == SIMPAR_PROTO_NONE)
        return bytes;
    if (a == COLL_PAIRWISE) { /* a block of S/n to each peer */
        q->proto = coll_p2p_proto(p->proto, bytes / g->n);
        return bytes * coll_wire_factor(a, q->proto, FALSE);
    }
    if (a == COLL_NVLS || a == COLL_NVLS_TREE) { /* Simple only (tuning.cc); own efficiency */
        q->proto = SIMPAR_PROTO_SIMPLE;
        return bytes;
    }
    gboolean keep = g->net->memo != NULL && p->proto == SIMPAR_PROTO_AUTO;
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

/* The shortcuts of an algorithm whose file gives them, wrapped the same way. */
#define COLL_SHORTCUTS_0(A, file)
#define COLL_SHORTCUTS_1(A, file)                                                                  \
    static void coll_##file##_eval_idle(SimparCollKind kind, const SimparCollGroup *g,             \
                                        double bytes, const SimparCollParams *p,                   \
                                        const double *start, double *end)                          \
    {                                                                                              \
        SimparCollParams q;                                                                        \
        double wire = coll_wire(A, kind, g, bytes, 0, p, &q);                                      \
        simpar_coll_##file##_eval_idle(kind, g, wire, &q, start, end);                             \
    }                                                                                              \
    static void coll_##file##_fuse(SimparCollKind kind, const SimparCollGroup *g, double bytes,    \
                                   const SimparCollParams *p, guint member, GArray *out)           \
    {                                                                                              \
        SimparCollParams q;                                                                        \
        simpar_coll_##file##_fuse(kind, g, coll_wire(A, kind, g, bytes, 0, p, &q), member, out);   \
    }
#define COLL_WRAP(id, name, file, kinds, row, bound, shortcuts, shares, description)               \
    COLL_ENTRIES(COLL_##id, coll_##file)                                                           \
    COLL_SHORTCUTS_##shortcuts(COLL_##id, file)
SIMPAR_COLL_ALGOS(COLL_WRAP)

/* The table simpar_coll_algo_lookup serves: a row per algorithm, with its shortcuts or NULL. */
#define COLL_ROW_SHORTCUTS_0(file) NULL, NULL
#define COLL_ROW_SHORTCUTS_1(file) coll_##file##_eval_idle, coll_##file##_fuse
#define COLL_ROW(id, name, file, kinds, row, bound, shortcuts, shares, description)                \
    [COLL_##id] = {name,                                                                           \
                   description,                                                                    \
                   kinds,                                                                          \
                   shares,                                                                         \
                   coll_##file##_expand,                                                           \
                   coll_##file##_closed_form,                                                      \
                   COLL_ROW_SHORTCUTS_##shortcuts(file)},
static const SimparCollAlgo coll_algos[] = {SIMPAR_COLL_ALGOS(COLL_ROW)};

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

double
simpar_coll_xfers_bound(const SimparCollAlgo *algo, SimparCollKind kind, const SimparCollGroup *g,
                        double bytes, const SimparCollParams *p)
{
    double n = g->n;
    switch (coll_raw[coll_runs_as((guint) (algo - coll_algos), g)].bound) {
    case SIMPAR_BOUND_PAIRS: /* a send and a receive per ordered pair */
        return 2 * n * (n - 1);
    case SIMPAR_BOUND_ROUNDS: /* per channel and round */
        return 2 * n * (kind == SIMPAR_COLL_ALL_REDUCE ? 2 : 1) * (n - 1) *
               simpar_coll_ring_channels(g, bytes);
    case SIMPAR_BOUND_CHUNKS:
    default: /* per chunk a member receives from and sends to at most 3 others, twice */
        return 12 * n * MAX(p->max_chunks, 1u);
    }
}

const SimparCollAlgo *
simpar_coll_ring(void)
{
    return &coll_algos[COLL_RING]; /* (transfer none) */
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
    return simpar_intern_names(coll_algos, G_N_ELEMENTS(coll_algos), sizeof coll_algos[0]);
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
        double best_s = MIN(ring, tree);
        if (simpar_coll_nvls_usable(g, NULL, NULL) &&
            coll_nvls_closed_form(kind, g, bytes, 0, p) < best_s)
            best = COLL_NVLS;
        else if (simpar_coll_nvls_tree_usable(g) &&
                 coll_nvls_tree_closed_form(kind, g, bytes, 0, p) < best_s)
            best = COLL_NVLS_TREE; /* only where the platform has it: Blackwell presets */
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
