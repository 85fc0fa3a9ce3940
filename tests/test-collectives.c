/* test-collectives.c - every collective algorithm against its closed form and alpha-beta costs.
 *
 * Oracles: the idle-network evaluation of each expansion (a rendezvous dataflow, member by
 * member) against the algorithm's closed form (round by round); the closed form against an
 * alpha-beta formula written here from the algorithm's description; byte balances; NCCL's
 * protocol latencies and wire efficiencies copied here from NVIDIA/nccl src/graph/tuning.cc at
 * 5067397c (not from collectives.c); a network with one slow hop; the NCCL-like chooser;
 * shared links (NICs, rails) and ring channels; name lookup.
 *
 * The uniform net: every route 2 us and 25 GB/s, nodes of 4 GPUs (GPU g on node g / 4).
 */
#include "coll-check.h"
#include "collectives-private.h"
#include "simpar-test.h"
#include <math.h>

#define A  2e-6 /* uniform latency, s */
#define BW 25e9 /* uniform bandwidth, B/s */

#define AR  SIMPAR_COLL_ALL_REDUCE
#define AG  SIMPAR_COLL_ALL_GATHER
#define RS  SIMPAR_COLL_REDUCE_SCATTER
#define BC  SIMPAR_COLL_BROADCAST
#define RD  SIMPAR_COLL_REDUCE
#define A2A SIMPAR_COLL_ALL_TO_ALL

/* ---- networks ----------------------------------------------------------------------------- */

typedef struct {
    double lat, bw;
    guint per_node;
    guint slow_src, slow_dst; /* one slower route (GPU ids), G_MAXUINT for none */
    double slow_lat, slow_bw;
} TestNet;

static void
test_route(const SimparNet *net, guint src, guint dst, SimparRoute *out)
{
    const TestNet *t = net->data;
    gboolean slow = src == t->slow_src && dst == t->slow_dst;
    out->lat_s = slow ? t->slow_lat : t->lat;
    out->bw_Bps = slow ? t->slow_bw : t->bw;
}

static guint
test_node(const SimparNet *net, guint gpu)
{
    const TestNet *t = net->data;
    return gpu / t->per_node;
}

static TestNet uniform = {A, BW, 4, G_MAXUINT, G_MAXUINT, 0.0, 0.0};
static const SimparNet uniform_net = {test_route, test_node, &uniform, NULL,
                                      NULL,       NULL,      NULL,     NULL};
static TestNet slow = {A, BW, 4, 2, 3, 5e-6, 5e9}; /* GPU 2 -> 3 is slow */
static const SimparNet slow_net = {test_route, test_node, &slow, NULL, NULL, NULL, NULL, NULL};

/* ---- cases: every algorithm x kind x n = 2..16 x size x root ------------------------------ */

static const double sizes[] = {1024.0, 1024.0 * 1024, 64.0 * 1024 * 1024};

typedef struct {
    const SimparCollAlgo *algo;
    SimparCollKind kind;
    guint gpus[16];
    guint stride; /* member i is GPU i * stride */
    SimparCollGroup g;
    double bytes;
    guint root;
    SimparCollParams p;
} Case;

typedef void (*CaseFn)(Case *c, gpointer data);

static gboolean
is_rooted(SimparCollKind kind)
{
    return kind == SIMPAR_COLL_BROADCAST || kind == SIMPAR_COLL_REDUCE;
}

static void
cases_for_kind(Case *c, const SimparNet *net, CaseFn fn, gpointer data)
{
    for (guint n = 2; n <= 16; n++) {
        for (guint i = 0; i < n; i++)
            c->gpus[i] = i * c->stride;
        c->g = (SimparCollGroup){n, c->gpus, net};
        guint roots[3] = {0, n / 2, n - 1};
        for (guint s = 0; s < G_N_ELEMENTS(sizes); s++)
            for (guint r = 0; r < (is_rooted(c->kind) ? 3u : 1u); r++) {
                if (r > 0 && roots[r] == roots[r - 1])
                    continue;
                c->bytes = sizes[s], c->root = roots[r];
                fn(c, data);
            }
    }
}

static void
for_each_case(const SimparNet *net, guint stride, SimparProto proto, CaseFn fn, gpointer data)
{
    guint n_algos;
    const SimparCollAlgo *algos = simpar_coll_algos(&n_algos);
    Case c = {.stride = stride};
    simpar_coll_params_init(&c.p);
    c.p.proto = proto;
    for (guint a = 0; a < n_algos; a++)
        for (guint k = 0; k < SIMPAR_N_COLL_KINDS; k++) {
            if (!(algos[a].kinds & (1u << k)))
                continue;
            c.algo = &algos[a], c.kind = (SimparCollKind) k;
            cases_for_kind(&c, net, fn, data);
        }
}

static gboolean
close_to(double got, double want, double rel)
{
    return fabs(got - want) <= rel * fabs(want);
}

static void
report(const Case *c, const char *what, double got, double want)
{
    printf("\n    %s %s n=%u stride=%u S=%.0f root=%u proto=%d: %s %.12g, want %.12g",
           c->algo->name, simpar_coll_kind_name(c->kind), c->g.n, c->stride, c->bytes, c->root,
           (int) c->p.proto, what, got, want);
}

static SimparExpansion *
expand(const Case *c)
{
    SimparExpansion *e = simpar_expansion_new(c->g.n);
    c->algo->expand(c->kind, &c->g, c->bytes, c->root, &c->p, e);
    return e; /* (transfer full) */
}

static double
closed_form(const Case *c)
{
    return c->algo->closed_form(c->kind, &c->g, c->bytes, c->root, &c->p);
}

/* Latest end over all members when they all start at `start`. */
static double
eval_max(const SimparExpansion *e, const SimparCollGroup *g, double start)
{
    g_autofree double *s = g_new(double, g->n);
    g_autofree double *end = g_new(double, g->n);
    double last = start;
    for (guint m = 0; m < g->n; m++)
        s[m] = start;
    simpar_expansion_eval_idle(e, g, s, end);
    for (guint m = 0; m < g->n; m++)
        last = MAX(last, end[m]);
    return last;
}

/* ---- (1) expansion == closed form --------------------------------------------------------- */

static void
check_eval(Case *c, gpointer data)
{
    g_autoptr(SimparExpansion) e = expand(c);
    double got = eval_max(e, &c->g, 0.0), want = closed_form(c);
    gboolean ok = close_to(got, want, 1e-9) && want > 0.0;
    if (!ok)
        report(c, "evaluated", got, want);
    CU_ASSERT_TRUE(ok);
    (*(guint *) data)++;
}

static void
check_xfers_bound(Case *c, gpointer data)
{
    g_autoptr(SimparExpansion) e = expand(c);
    double bound = simpar_coll_xfers_bound(c->algo, c->kind, &c->g, c->bytes, &c->p);
    gboolean ok = e->xfers->len <= bound;
    if (!ok)
        report(c, "transfers", e->xfers->len, bound);
    CU_ASSERT_TRUE(ok);
    (*(guint *) data)++;
}

/* The bound `simpar collective` refuses by holds every expansion. */
static void
test_xfers_bound(void)
{
    guint n_cases = 0;
    for (guint stride = 1; stride <= 4; stride += 3)
        for_each_case(&uniform_net, stride, SIMPAR_PROTO_SIMPLE, check_xfers_bound, &n_cases);
    CU_ASSERT_TRUE(n_cases > 500);
}

static void
test_eval_closed_form(void)
{
    guint n_cases = 0;
    for (guint proto = 0; proto < SIMPAR_N_PROTOS; proto++)
        for (guint stride = 1; stride <= 4; stride += 3)
            for_each_case(&uniform_net, stride, (SimparProto) proto, check_eval, &n_cases);
    CU_ASSERT_TRUE(n_cases > 1000);
}

static void
test_eval_start(void)
{
    guint gpus[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    SimparCollGroup g = {8, gpus, &uniform_net};
    SimparCollParams p;
    simpar_coll_params_init(&p);
    const SimparCollAlgo *ring = NULL;
    CU_ASSERT_TRUE_FATAL(simpar_coll_algo_lookup("ring", &ring, NULL));
    g_autoptr(SimparExpansion) e = simpar_expansion_new(8);
    ring->expand(AR, &g, 1 << 20, 0, &p, e);
    double cf = ring->closed_form(AR, &g, 1 << 20, 0, &p);
    double start[8] = {0}, end[8];
    start[5] = 1e-3; /* one member late: its lateness reaches every member within n/2 rounds */
    simpar_expansion_eval_idle(e, &g, start, end);
    for (guint m = 0; m < 8; m++)
        CU_ASSERT_TRUE(close_to(end[m], 1e-3 + cf, 1e-12));
    CU_ASSERT_TRUE(close_to(eval_max(e, &g, 0.25), 0.25 + cf, 1e-12));
}

/* ---- (2) closed form == alpha-beta -------------------------------------------------------- */

static guint
ceil_log2(guint n)
{
    guint d = 0;
    while ((1u << d) < n)
        d++;
    return d;
}

/* Members per node of a group of n GPUs i * stride on nodes of 4; 0 if nodes are uneven. */
static guint
per_node(guint n, guint stride)
{
    guint l = stride >= 4 ? 1 : MIN(n, 4 / stride);
    return n % l == 0 && (stride == 1 || l == 1) ? l : 0;
}

/* NCCL's send/recv step between nodes (P2P_NET_CHUNKSIZE, 128 KiB) is a quarter of a
 * collective's (4 MiB / 8 steps), and a NIC's figure is 96% of its line (NET_BW): a Simple block
 * between nodes is 4 - 3 x 0.96 times its bytes on the wire (pairwise.c); an LL block is one
 * message, its bytes. */
#define P2P_NET_WIRE (4 - 3 * 0.96)

/* All-to-all: the wire bytes of member m's blocks (or of those it receives: the same), in units
 * of S/n; each GPU's node is gpu / 4, as uniform_net's. */
static double
a2a_blocks(const Case *c, guint m)
{
    double w = 0, net = c->p.proto == SIMPAR_PROTO_LL ? 1.0 : P2P_NET_WIRE;
    for (guint d = 0; d < c->g.n; d++)
        if (d != m)
            w += c->gpus[m] / 4 != c->gpus[d] / 4 ? net : 1.0;
    return w;
}

/* The busiest member's port (no links: a member's blocks one after another). */
static double
a2a_port_blocks(const Case *c)
{
    double w = 0;
    for (guint m = 0; m < c->g.n; m++)
        w = MAX(w, a2a_blocks(c, m));
    return w;
}

/* NCCL's tree depth: a chain through the l members of a node, a binary tree over the nodes
 * (over the members when the nodes are uneven). */
static guint
tree_depth(const Case *c)
{
    guint l = per_node(c->g.n, c->stride);
    return l == 0 ? ceil_log2(c->g.n) : (l - 1) + ceil_log2(c->g.n / l);
}

static guint
n_chunks(double bytes)
{
    return (guint) CLAMP(ceil(bytes / (512.0 * 1024)), 1.0, 64.0);
}

/* Rounds of the algorithm on one link type: [0] in-node, [1] across nodes; the sum is all. */
static double
alpha_beta(const Case *c)
{
    double n = c->g.n, s = c->bytes;
    const char *name = c->algo->name;
    guint l = per_node(c->g.n, c->stride);
    if (g_str_equal(name, "hierarchical") && l > 0) {
        double k = n / l;
        return 2 * (l - 1) * (A + s / (l * BW)) + 2 * (k - 1) * (A + s / (n * BW));
    }
    if (g_str_equal(name, "ring") || g_str_equal(name, "hierarchical") ||
        g_str_equal(name, "nvls") || g_str_equal(name, "nvlstree")) /* the ring: no NVLS here */
        return (c->kind == AR ? 2 : 1) * (n - 1) * (A + s / (n * BW));
    if (g_str_equal(name, "pairwise")) /* every round on the wire at once, a member's port busy */
        return A + a2a_port_blocks(c) * s / (n * BW);
    if (g_str_equal(name, "chain")) {
        double k = n_chunks(s);
        return (n - 1 + k - 1) * (A + s / (k * BW));
    }
    g_assert(g_str_equal(name, "tree"));
    double d = tree_depth(c), k = n_chunks(s / 2);
    return (2 * d + 4 * k - 3) * (A + s / (2 * k * BW));
}

static void
check_alpha_beta(Case *c, gpointer data)
{
    double got = closed_form(c), want = alpha_beta(c);
    gboolean ok = close_to(got, want, 1e-12);
    if (!ok)
        report(c, "closed form", got, want);
    CU_ASSERT_TRUE(ok);
    (void) data;
}

static void
test_alpha_beta(void)
{
    for (guint stride = 1; stride <= 4; stride += 3)
        for_each_case(&uniform_net, stride, SIMPAR_PROTO_NONE, check_alpha_beta, NULL);
}

/* ---- (3) bytes ---------------------------------------------------------------------------- */

/* What each member must send, as a fraction of S; < 0 where members differ. */
static double
sent_per_member(const Case *c)
{
    double n = c->g.n;
    if (c->kind == AR && !g_str_equal(c->algo->name, "tree"))
        return 2 * (n - 1) / n; /* ring and hierarchical alike */
    if (c->kind == AG || c->kind == RS || c->kind == A2A)
        return (n - 1) / n;
    return -1.0;
}

static void
check_bytes(Case *c, gpointer data)
{
    g_autoptr(SimparExpansion) e = expand(c);
    double total[2] = {0, 0}, want = sent_per_member(c);
    for (guint m = 0; m < e->n_members; m++) {
        double sent = 0;
        for (guint r = e->member_first[m]; r < e->member_first[m + 1]; r++) {
            const SimparRound *rd = &g_array_index(e->rounds, SimparRound, r);
            for (guint i = rd->first; i < rd->first + rd->n; i++) {
                const SimparXfer *x = &g_array_index(e->xfers, SimparXfer, i);
                total[x->send] += x->bytes;
                sent += x->send ? x->bytes : 0.0;
            }
        }
        if (c->kind == A2A) /* its wire bytes */
            want = a2a_blocks(c, m) / c->g.n;
        if (want >= 0 && !close_to(sent, want * c->bytes, 1e-12))
            report(c, "member sent", sent, want * c->bytes);
        CU_ASSERT_TRUE(want < 0 || close_to(sent, want * c->bytes, 1e-12));
    }
    CU_ASSERT_TRUE(close_to(total[0], total[1], 1e-12));
    /* chain: n-1 hops carry S; tree: 2 trees x (n-1) edges x up and down carry S/2 */
    double n = c->g.n;
    if (g_str_equal(c->algo->name, "chain"))
        CU_ASSERT_TRUE(close_to(total[1], (n - 1) * c->bytes, 1e-12));
    if (g_str_equal(c->algo->name, "tree"))
        CU_ASSERT_TRUE(close_to(total[1], 2 * (n - 1) * c->bytes, 1e-12));
    (void) data;
}

static void
test_bytes(void)
{
    for_each_case(&uniform_net, 1, SIMPAR_PROTO_NONE, check_bytes, NULL);
    for_each_case(&uniform_net, 3, SIMPAR_PROTO_NONE, check_bytes, NULL);
}

/* ---- (4) NCCL protocol latencies ---------------------------------------------------------- */

/* reference 5.4 in microseconds, [ring, tree][LL, LL128, Simple] */
static const double base_us[2][3] = {{6.6, 14.0, 8.4}, {6.8, 14.0, 8.4}};
static const double nvlink_us[2][3] = {{0.6, 1.9, 3.4}, {0.6, 1.25, 4.0}};
static const double net_us[2][3] = {{2.7, 4.0, 14.0}, {5.0, 8.5, 14.0}};

/* Steps of the algorithm: all of them on one link type, as the groups below ensure. */
static guint
steps(const Case *c)
{
    guint n = c->g.n, l = per_node(n, c->stride);
    const char *name = c->algo->name;
    if (g_str_equal(name, "hierarchical") && l > 0)
        return 2 * (l - 1) + 2 * (n / l - 1);
    if (g_str_equal(name, "ring") || g_str_equal(name, "hierarchical") ||
        g_str_equal(name, "nvls") || g_str_equal(name, "nvlstree")) /* the ring: no NVLS here */
        return (c->kind == AR ? 2 : 1) * (n - 1);
    if (g_str_equal(name, "pairwise")) /* every round in flight at once: one hwLat */
        return 1;
    if (g_str_equal(name, "chain"))
        return n - 1 + n_chunks(c->bytes) - 1;
    return 2 * tree_depth(c) + 4 * n_chunks(c->bytes / 2) - 3;
}

/* The protocol a collective runs: all-to-all's send/recv has no LL128 and runs it as Simple
 * (NCCL enqueue.cc, addP2pToPlan), an index into the tables above. */
static guint
proto_ran(const Case *c)
{
    gboolean p2p = g_str_equal(c->algo->name, "pairwise");
    return (p2p && c->p.proto == SIMPAR_PROTO_LL128 ? SIMPAR_PROTO_SIMPLE : c->p.proto) -
           SIMPAR_PROTO_LL;
}

/* Wire bytes per byte of the protocol (NCCL tuning.cc: ring LL 1/2, LL128 0.92; tree LL
 * 1/3.8, LL128 7/9 on one node else 120/128, Simple 0.92; all-to-all's send/recv LL 1/2, Simple
 * at the link rate). */
static double
wire_factor(const Case *c, gboolean one_node)
{
    guint pr = proto_ran(c);
    if (g_str_equal(c->algo->name, "pairwise"))
        return pr == 0 ? 2 : 1;
    if (g_str_equal(c->algo->name, "tree"))
        return (const double[]){3.8, one_node ? 9.0 / 7 : 128.0 / 120, 1 / 0.92}[pr];
    return (const double[]){2, 1 / 0.92, 1}[pr];
}

/* NCCL's per-step latency beyond the route's (A): hwLat - A where larger, in microseconds. */
static double
step_us(double hw)
{
    return MAX(0.0, hw - A * 1e6);
}

static void
check_proto(Case *c, gpointer data)
{
    /* stride 1 and n <= 4: one node, NVLink only; stride 4: one GPU per node, NET only */
    if (c->stride == 1 && c->g.n > 4)
        return;
    guint row = g_str_equal(c->algo->name, "tree"), pr = proto_ran(c);
    double hw = (c->stride == 1 ? nvlink_us : net_us)[row][pr];
    Case wire = *c;
    wire.bytes = c->bytes * wire_factor(c, c->stride == 1);
    double want = alpha_beta(&wire) + (base_us[row][pr] + steps(&wire) * step_us(hw)) * 1e-6;
    double got = closed_form(c);
    if (!close_to(got, want, 1e-12))
        report(c, "closed form", got, want);
    CU_ASSERT_TRUE(close_to(got, want, 1e-12));
    (*(guint *) data)++;
}

static void
test_proto(void)
{
    guint n_cases = 0;
    for (guint proto = SIMPAR_PROTO_LL; proto < SIMPAR_N_PROTOS; proto++)
        for (guint stride = 1; stride <= 4; stride += 3)
            for_each_case(&uniform_net, stride, (SimparProto) proto, check_proto, &n_cases);
    CU_ASSERT_TRUE(n_cases > 500);
}

/* Groups that mix link types: member i is GPU i, so hops 3 -> 4, 7 -> 8, ... cross nodes. A
 * ring across K nodes pays the network's hwLat on 2(K-1) all-reduce steps and the node's, at
 * least NCCL's network overhead (1 us; Simple 3 us), on the others. */
typedef struct {
    const char *algo;
    SimparCollKind kind;
    guint n, root;
    double bytes;
    guint nvlink_steps, net_steps;
} MixedCase;

static const MixedCase mixed[] = {
    {"ring", AR, 8, 0, 1024, 12, 2},        /* 2 nodes: 2 network steps */
    {"hierarchical", AR, 8, 0, 1024, 6, 2}, /* 3 + 3 rounds in node, 2 across */
    {"hierarchical", AR, 16, 0, 1024, 6, 6},
    {"chain", BC, 8, 0, 1024, 6, 1},     /* C = 1: only hop 3 -> 4 crosses */
    {"chain", BC, 8, 0, 1 << 20, 6, 2},  /* C = 2: hop 3 -> 4 busy in rounds 3 and 4 */
    {"chain", BC, 8, 2, 1024, 5, 2},     /* 2 3|4 5 6 7|0 1 */
    {"chain", RD, 8, 2, 1024, 5, 2},     /* the same hops, towards the root */
    {"pairwise", A2A, 8, 0, 1024, 0, 1}, /* every round at once; some cross: the net's hwLat */
};

static void
test_proto_mixed(void)
{
    for (guint i = 0; i < G_N_ELEMENTS(mixed); i++)
        for (guint proto = SIMPAR_PROTO_LL; proto < SIMPAR_N_PROTOS; proto++) {
            const MixedCase *mc = &mixed[i];
            Case c = {.kind = mc->kind, .stride = 1, .bytes = mc->bytes, .root = mc->root};
            CU_ASSERT_TRUE_FATAL(simpar_coll_algo_lookup(mc->algo, &c.algo, NULL));
            for (guint m = 0; m < mc->n; m++)
                c.gpus[m] = m;
            c.g = (SimparCollGroup){mc->n, c.gpus, &uniform_net};
            simpar_coll_params_init(&c.p);
            c.p.proto = (SimparProto) proto;
            guint pr = proto_ran(&c);
            double node = nvlink_us[0][pr];
            if (g_str_equal(mc->algo, "ring")) /* NCCL's network overhead on the node's steps */
                node = MAX(node, proto == SIMPAR_PROTO_SIMPLE ? 3.0 : 1.0);
            Case wire = c;
            wire.bytes = c.bytes * wire_factor(&c, FALSE);
            guint nvl = mc->nvlink_steps, net = mc->net_steps;
            if (g_str_equal(mc->algo, "chain") && mc->root == 0) /* hop 3 -> 4 busy C rounds */
                nvl = mc->n - 2, net = n_chunks(wire.bytes);
            double want =
                alpha_beta(&wire) +
                (base_us[0][pr] + nvl * step_us(node) + net * step_us(net_us[0][pr])) * 1e-6;
            if (!close_to(closed_form(&c), want, 1e-12))
                report(&c, "closed form", closed_form(&c), want);
            CU_ASSERT_TRUE(close_to(closed_form(&c), want, 1e-12));
        }
}

/* ---- (5) a slow hop ----------------------------------------------------------------------- */

static void
check_slow(Case *c, gpointer data)
{
    g_autoptr(SimparExpansion) e = expand(c);
    double got = eval_max(e, &c->g, 0.0), cf = closed_form(c);
    /* rounds are synchronous in the closed form, so it bounds the evaluation from above */
    CU_ASSERT_TRUE(got <= cf * (1 + 1e-12));
    if (!g_str_equal(c->algo->name, "ring") || c->g.n < 4)
        return;
    /* the ring uses hop 2 -> 3 in every round: every round takes the slow hop's time */
    double n = c->g.n, rounds = (c->kind == AR ? 2 : 1) * (n - 1);
    double want = rounds * (slow.slow_lat + c->bytes / (n * slow.slow_bw));
    if (!close_to(cf, want, 1e-12) || !close_to(got, cf, 1e-9))
        report(c, "closed form / evaluated", cf, want);
    CU_ASSERT_TRUE(close_to(cf, want, 1e-12));
    CU_ASSERT_TRUE(close_to(got, cf, 1e-9));
    (*(guint *) data)++;
}

static void
test_slow_hop(void)
{
    guint n_ring = 0;
    for_each_case(&slow_net, 1, SIMPAR_PROTO_NONE, check_slow, &n_ring);
    CU_ASSERT_EQUAL(n_ring, 3 * 13 * G_N_ELEMENTS(sizes)); /* AR, AG, RS x n = 4..16 x sizes */
}

/* ---- (6) the chooser ---------------------------------------------------------------------- */

static void
test_choose(void)
{
    TestNet t = {5e-6, 12.5e9, 1, G_MAXUINT, G_MAXUINT, 0.0, 0.0}; /* 16 nodes of one GPU */
    SimparNet net = {test_route, test_node, &t, NULL, NULL, NULL, NULL, NULL};
    guint gpus[16];
    for (guint i = 0; i < 16; i++)
        gpus[i] = i;
    SimparCollGroup g = {16, gpus, &net};
    SimparCollParams p;
    simpar_coll_params_init(&p);
    CU_ASSERT_STRING_EQUAL(simpar_coll_choose(AR, &g, 8192, &p)->name, "tree");
    CU_ASSERT_STRING_EQUAL(simpar_coll_choose(AR, &g, 256.0 * 1024 * 1024, &p)->name, "ring");
    p.proto = SIMPAR_PROTO_SIMPLE;
    CU_ASSERT_STRING_EQUAL(simpar_coll_choose(AR, &g, 8192, &p)->name, "tree");
    CU_ASSERT_STRING_EQUAL(simpar_coll_choose(AR, &g, 256.0 * 1024 * 1024, &p)->name, "ring");
    CU_ASSERT_STRING_EQUAL(simpar_coll_choose(AG, &g, 8192, &p)->name, "ring");
    CU_ASSERT_STRING_EQUAL(simpar_coll_choose(RS, &g, 8192, &p)->name, "ring");
    CU_ASSERT_STRING_EQUAL(simpar_coll_choose(BC, &g, 8192, &p)->name, "chain");
    CU_ASSERT_STRING_EQUAL(simpar_coll_choose(RD, &g, 8192, &p)->name, "chain");
    CU_ASSERT_STRING_EQUAL(simpar_coll_choose(A2A, &g, 8192, &p)->name, "pairwise");
}

/* ---- (6a) NVLink SHARP ----------------------------------------------------------------------- */

#define NVLS_EFF 0.85
#define NVLS_LAT 20e-6

/* Node 0 (GPUs 0..3 of `uniform`'s layout) has NVLS; node 1 has not. */
static gboolean
nvls_node0(const SimparNet *net, guint gpu, double *eff, double *lat_s)
{
    if (test_node(net, gpu) != 0)
        return FALSE;
    *eff = NVLS_EFF, *lat_s = NVLS_LAT;
    return TRUE;
}

static void
test_nvls(void)
{
    SimparNet net = {test_route, test_node, &uniform, NULL, NULL, nvls_node0, NULL, NULL};
    const SimparCollAlgo *nvls = NULL;
    CU_ASSERT_TRUE_FATAL(simpar_coll_algo_lookup("nvls", &nvls, NULL));
    guint gpus[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    SimparCollParams p;
    simpar_coll_params_init(&p);
    p.proto = SIMPAR_PROTO_AUTO;
    for (guint n = 2; n <= 4; n++) {
        SimparCollGroup g = {n, gpus, &net};
        CU_ASSERT_TRUE(simpar_coll_nvls_usable(&g, NULL, NULL));
        CU_ASSERT_PTR_EQUAL(simpar_coll_runs_as(nvls, &g), nvls);
        CU_ASSERT_EQUAL(simpar_coll_proto(nvls, AR, &g, 1 << 20, 0, &p), SIMPAR_PROTO_SIMPLE);
        for (guint i = 0; i < G_N_ELEMENTS(sizes); i++) {
            double s = sizes[i];
            /* S (n + 1) / n each way at eff of the link rate, after the latency */
            double want = (NVLS_LAT - A) + A + s * (n + 1) / n / (NVLS_EFF * BW);
            double got = nvls->closed_form(AR, &g, s, 0, &p);
            CU_ASSERT_TRUE(close_to(got, want, 1e-12));
            g_autoptr(SimparExpansion) e = simpar_expansion_new(n);
            nvls->expand(AR, &g, s, 0, &p, e);
            CU_ASSERT_TRUE(close_to(eval_max(e, &g, 0.0), got, 1e-12));
            for (guint m = 0; m < n; m++) { /* every member sends and receives as much */
                double out = 0, in = 0;
                for (guint x = 0; x < e->xfers->len; x++) {
                    const SimparXfer *xf = &g_array_index(e->xfers, SimparXfer, x);
                    if (x >= g_array_index(e->rounds, SimparRound, e->member_first[m]).first &&
                        x < g_array_index(e->rounds, SimparRound, e->member_first[m]).first +
                                g_array_index(e->rounds, SimparRound, e->member_first[m]).n)
                        *(xf->send ? &out : &in) += xf->bytes;
                }
                CU_ASSERT_TRUE(close_to(out, s * (n + 1) / n / NVLS_EFF, 1e-12));
                CU_ASSERT_TRUE(close_to(in, out, 0));
            }
            /* protocol NONE: the network alone */
            SimparCollParams none = p;
            none.proto = SIMPAR_PROTO_NONE;
            CU_ASSERT_TRUE(
                close_to(nvls->closed_form(AR, &g, s, 0, &none), A + s * (n + 1) / n / BW, 1e-12));
        }
    }
    /* the default picks NVLS for 1 GiB in the node, ring or tree when small or across nodes */
    SimparCollGroup node = {4, gpus, &net}, both = {8, gpus, &net}, other = {4, gpus + 4, &net};
    CU_ASSERT_STRING_EQUAL(simpar_coll_choose(AR, &node, 1 << 30, &p)->name, "nvls");
    CU_ASSERT_STRING_NOT_EQUAL(simpar_coll_choose(AR, &node, 4096, &p)->name, "nvls");
    CU_ASSERT_STRING_NOT_EQUAL(simpar_coll_choose(AG, &node, 1 << 30, &p)->name, "nvls");
    CU_ASSERT_FALSE(simpar_coll_nvls_usable(&both, NULL, NULL));
    CU_ASSERT_FALSE(simpar_coll_nvls_usable(&other, NULL, NULL));
    CU_ASSERT_STRING_EQUAL(simpar_coll_choose(AR, &both, 1 << 30, &p)->name, "ring");
    CU_ASSERT_STRING_EQUAL(simpar_coll_choose(AR, &other, 1 << 30, &p)->name, "ring");
    /* asked for where it cannot run, "nvls" is the ring, bit for bit */
    const SimparCollAlgo *ring = NULL;
    CU_ASSERT_TRUE_FATAL(simpar_coll_algo_lookup("ring", &ring, NULL));
    CU_ASSERT_PTR_EQUAL(simpar_coll_runs_as(nvls, &both), ring);
    CU_ASSERT_EQUAL(nvls->closed_form(AR, &both, 1 << 30, 0, &p),
                    ring->closed_form(AR, &both, 1 << 30, 0, &p));
    CU_ASSERT_EQUAL(simpar_coll_proto(nvls, AR, &both, 1 << 30, 0, &p),
                    simpar_coll_proto(ring, AR, &both, 1 << 30, 0, &p));
    /* one GPU alone has nothing to reduce */
    SimparCollGroup one = {1, gpus, &net};
    CU_ASSERT_FALSE(simpar_coll_nvls_usable(&one, NULL, NULL));
}

/* ---- (6b) NVLS-tree ------------------------------------------------------------------------ */

#define TREE_LAT 21e-6

static gboolean
nvls_all(const SimparNet *net, guint gpu, double *eff, double *lat_s)
{
    (void) net, (void) gpu;
    *eff = NVLS_EFF, *lat_s = NVLS_LAT;
    return TRUE;
}

static gboolean
nvls_tree_all(const SimparNet *net, guint gpu, double *lat_s)
{
    (void) net, (void) gpu;
    *lat_s = TREE_LAT;
    return TRUE;
}

/* NVLS-tree by hand on N nodes of k = 4 GPUs (every route A, BW): one round whose slowest
 * transfer is the larger of NVLS's S (k + 1) / (k eff) over NVLink and the NIC's ring share
 * 2 (N - 1) / N x S / k, after NVLS_LAT + 2 ceil(log2 N) TREE_LAT less the route's A; the
 * expansion evaluates to it; groups of unequal domains, one domain, or a net without NVLS-tree
 * run the ring; the default picks it across domains for 1 GiB where the net has it. */
static void
test_nvls_tree(void)
{
    SimparNet net = {test_route, test_node, &uniform, NULL, NULL, nvls_all, nvls_tree_all, NULL};
    const SimparCollAlgo *nt = NULL, *ring = NULL;
    CU_ASSERT_TRUE_FATAL(simpar_coll_algo_lookup("nvlstree", &nt, NULL));
    CU_ASSERT_TRUE_FATAL(simpar_coll_algo_lookup("ring", &ring, NULL));
    guint gpus[16];
    for (guint i = 0; i < 16; i++)
        gpus[i] = i;
    SimparCollParams p;
    simpar_coll_params_init(&p);
    p.proto = SIMPAR_PROTO_AUTO;
    for (guint N = 2; N <= 4; N++) {
        SimparCollGroup g = {4 * N, gpus, &net};
        CU_ASSERT_TRUE(simpar_coll_nvls_tree_usable(&g));
        CU_ASSERT_PTR_EQUAL(simpar_coll_runs_as(nt, &g), nt);
        CU_ASSERT_EQUAL(simpar_coll_proto(nt, AR, &g, 1 << 20, 0, &p), SIMPAR_PROTO_SIMPLE);
        double levels = N == 2 ? 1 : 2; /* ceil(log2 N) */
        for (guint i = 0; i < G_N_ELEMENTS(sizes); i++) {
            double s = sizes[i];
            double intra = s * 5 / 4 / NVLS_EFF, inter = 2.0 * (N - 1) / N * s / 4;
            double want = (NVLS_LAT + 2 * levels * TREE_LAT - A) + A + MAX(intra, inter) / BW;
            double got = nt->closed_form(AR, &g, s, 0, &p);
            CU_ASSERT_TRUE(close_to(got, want, 1e-12));
            g_autoptr(SimparExpansion) e = simpar_expansion_new(g.n);
            nt->expand(AR, &g, s, 0, &p, e);
            CU_ASSERT_TRUE(close_to(eval_max(e, &g, 0.0), got, 1e-12));
            double sent = 0; /* every member sends its NVLink and its NIC bytes */
            for (guint x = 0; x < e->xfers->len; x++) {
                const SimparXfer *xf = &g_array_index(e->xfers, SimparXfer, x);
                sent += xf->send ? xf->bytes : 0;
            }
            CU_ASSERT_TRUE(close_to(sent, g.n * (intra + inter), 1e-12));
            SimparCollParams none = p;
            none.proto = SIMPAR_PROTO_NONE;
            CU_ASSERT_TRUE(close_to(nt->closed_form(AR, &g, s, 0, &none),
                                    A + MAX(s * 5 / 4, inter) / BW, 1e-12));
        }
    }
    SimparCollGroup two = {8, gpus, &net}, uneven = {6, gpus + 2, &net}, one = {4, gpus, &net};
    CU_ASSERT_STRING_EQUAL(simpar_coll_choose(AR, &two, 1 << 30, &p)->name, "nvlstree");
    CU_ASSERT_FALSE(simpar_coll_nvls_tree_usable(&uneven));
    CU_ASSERT_FALSE(simpar_coll_nvls_tree_usable(&one));
    CU_ASSERT_PTR_EQUAL(simpar_coll_runs_as(nt, &uneven), ring);
    SimparNet plain = net;
    plain.nvls_tree = NULL; /* NVLS in every node, but no NVLS-tree: as before it existed */
    SimparCollGroup hopper = {8, gpus, &plain};
    CU_ASSERT_FALSE(simpar_coll_nvls_tree_usable(&hopper));
    CU_ASSERT_STRING_NOT_EQUAL(simpar_coll_choose(AR, &hopper, 1 << 30, &p)->name, "nvlstree");
    CU_ASSERT_TRUE(close_to(nt->closed_form(AR, &hopper, 1 << 20, 0, &p),
                            ring->closed_form(AR, &hopper, 1 << 20, 0, &p), 0));
}

/* ---- (6b) links shared within a round: NICs ---------------------------------------------- */

/* Nodes of 4 GPUs. Inside a node a GPU reaches another over its own link (NVL_BW); between
 * nodes it goes out through a NIC link of its node and in through one of the other node's
 * (NIC_BW each): one NIC per node (rails FALSE) or one per GPU (rails TRUE). Link ids: 1 + 8
 * gpu + slot, slot 0 its NVLink out, 1 its NVLink in, 2 NIC out, 3 NIC in (NIC of GPU 0 of its
 * node without rails). */
#define NVL_BW 100e9
#define NIC_BW 10e9

typedef struct {
    gboolean rails;
} NicNet;

static guint
nic_of(const NicNet *t, guint gpu)
{
    return t->rails ? gpu : gpu / 4 * 4;
}

static void
nic_route(const SimparNet *net, guint src, guint dst, SimparRoute *out)
{
    (void) net;
    out->lat_s = src / 4 == dst / 4 ? A : 2 * A;
    out->bw_Bps = src / 4 == dst / 4 ? NVL_BW : NIC_BW;
}

static guint
nic_node(const SimparNet *net, guint gpu)
{
    (void) net;
    return gpu / 4;
}

static gboolean
nic_links(const SimparNet *net, guint src, guint dst, GPtrArray *out)
{
    const NicNet *t = net->data;
    gboolean same = src / 4 == dst / 4;
    g_ptr_array_add(out, GUINT_TO_POINTER(1 + 8 * (same ? src : nic_of(t, src)) + (same ? 0 : 2)));
    g_ptr_array_add(out, GUINT_TO_POINTER(1 + 8 * (same ? dst : nic_of(t, dst)) + (same ? 1 : 3)));
    return TRUE;
}

static double
nic_link_bw(const SimparNet *net, gconstpointer link)
{
    (void) net;
    return (GPOINTER_TO_UINT(link) - 1) % 8 < 2 ? NVL_BW : NIC_BW;
}

static const NicNet one_nic = {FALSE}, nic_rails = {TRUE};
static const SimparNet one_net = {
    nic_route, nic_node, (gpointer) &one_nic, nic_links, nic_link_bw, NULL, NULL, NULL};
static const SimparNet rail_net = {
    nic_route, nic_node, (gpointer) &nic_rails, nic_links, nic_link_bw, NULL, NULL, NULL};

/* Two transfers out of one node take twice as long through one NIC as through two; a transfer
 * alone on its links takes lat + bytes / bw of its route, bit for bit. */
static void
test_hops_shared(void)
{
    guint gpus[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    SimparHop hops[2] = {{0, 4, 1e6}, {1, 5, 1e6}};
    double t[2];
    SimparCollGroup g = {8, gpus, &one_net};
    simpar_coll_hops_time(&g, hops, 2, t);
    CU_ASSERT_DOUBLE_EQUAL(t[0], 2 * A + 2e6 / NIC_BW, 1e-15);
    CU_ASSERT_DOUBLE_EQUAL(t[1], t[0], 0.0);
    g.net = &rail_net;
    simpar_coll_hops_time(&g, hops, 2, t);
    CU_ASSERT_EQUAL(t[0], 2 * A + 1e6 / NIC_BW);
    CU_ASSERT_EQUAL(t[0], simpar_coll_xfer_time(&g, 0, 4, 1e6));
}

/* Hierarchical all-reduce over 2 nodes of 4: the 4 cross-node rings leave a node through one
 * NIC (4x the bytes on it) or through 4; the expansion evaluated on an idle net equals the
 * closed form. */
static void
test_hierarchical_nics(void)
{
    guint gpus[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    SimparCollParams p;
    simpar_coll_params_init(&p);
    const SimparCollAlgo *hier = NULL;
    CU_ASSERT_TRUE_FATAL(simpar_coll_algo_lookup("hierarchical", &hier, NULL));
    const double s = 64e6;
    const SimparNet *nets[2] = {&one_net, &rail_net};
    for (guint k = 0; k < 2; k++) {
        SimparCollGroup g = {8, gpus, nets[k]};
        /* 2 x 3 in-node rounds of S/4 on own NVLinks, 2 cross-node rounds of S/8, 4 of them
         * on one NIC or each on its own */
        double cross = (k == 0 ? 4 : 1) * (s / 8) / NIC_BW;
        double want = 6 * (A + s / 4 / NVL_BW) + 2 * (2 * A + cross);
        double got = hier->closed_form(AR, &g, s, 0, &p);
        CU_ASSERT_DOUBLE_EQUAL(got / want, 1, 1e-12);
        g_autoptr(SimparExpansion) e = simpar_expansion_new(8);
        hier->expand(AR, &g, s, 0, &p, e);
        CU_ASSERT_DOUBLE_EQUAL(eval_max(e, &g, 0.0) / got, 1, 1e-12);
        /* through one NIC, hierarchical moves S through it where the ring moves 7/4 S; on
         * rails the ring's 4 channels move 7/16 S through each NIC (ring.c) */
        double ring = simpar_coll_ring_closed_form(AR, &g, s, 0, &p);
        double ring_want = 14 * (2 * A + s / (k == 0 ? 8 : 32) / NIC_BW);
        CU_ASSERT_DOUBLE_EQUAL(ring / ring_want, 1, 1e-12);
        /* NCCL runs no hierarchical all-reduce: the default is its ring or tree */
        const char *best = simpar_coll_tree_closed_form(AR, &g, s, 0, &p) < ring ? "tree" : "ring";
        CU_ASSERT_STRING_EQUAL(simpar_coll_choose(AR, &g, s, &p)->name, best);
    }
}

/* A net's memo keeps what it was told (each group's rings and protocol) until it is cleared:
 * the net's links changed under one address (one NIC per node, then one per GPU) give the old
 * figures while the memo keeps them, and a memo-less net's new ones once it is cleared. */
static void
test_net_memo(void)
{
    const SimparCollAlgo *ring = NULL;
    CU_ASSERT_TRUE_FATAL(simpar_coll_algo_lookup("ring", &ring, NULL));
    guint gpus[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    NicNet nic = {FALSE};
    SimparNet net = one_net;
    net.data = &nic;
    net.memo = simpar_net_memo_new();
    SimparCollGroup g = {8, gpus, &net}, g1 = {8, gpus, &one_net}, g4 = {8, gpus, &rail_net};
    SimparCollParams p;
    simpar_coll_params_init(&p);
    p.proto = SIMPAR_PROTO_AUTO;
    const double s = 48e6;
    double one = ring->closed_form(AR, &g1, s, 0, &p), four = ring->closed_form(AR, &g4, s, 0, &p);
    CU_ASSERT_TRUE(four < one / 2); /* four rails: a test that can tell the two apart */
    CU_ASSERT_EQUAL(ring->closed_form(AR, &g, s, 0, &p), one);
    CU_ASSERT_EQUAL(simpar_coll_ring_channels(&g, s), 1);
    nic.rails = TRUE; /* the links change; the memo still holds the one NIC's rings */
    CU_ASSERT_EQUAL(ring->closed_form(AR, &g, s, 0, &p), one);
    CU_ASSERT_EQUAL(simpar_coll_ring_channels(&g, s), 1);
    simpar_net_memo_clear(net.memo);
    CU_ASSERT_EQUAL(ring->closed_form(AR, &g, s, 0, &p), four);
    CU_ASSERT_EQUAL(simpar_coll_ring_channels(&g, s), 4);
    simpar_net_memo_free(net.memo);
}

/* Ring channels over 2 and 3 nodes of 4 on rails: 4 channels, each leaving a node through
 * another GPU's NIC; behind one NIC, one ring (channels gain nothing there). The ring's idle
 * evaluator equals its expansion's bit for bit, from uneven starts (on the rails every slowest
 * hop is alike, so once the starts have spread the evaluator sums the rounds in step), and the
 * lockstep evaluation equals the closed form; fused transfers sum the expansion's (within
 * rounding: one product per peer). */
static void
test_ring_channels(void)
{
    const SimparCollAlgo *ring = NULL;
    CU_ASSERT_TRUE_FATAL(simpar_coll_algo_lookup("ring", &ring, NULL));
    guint gpus[12] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
    const SimparCollKind kinds[] = {AR, AG, RS};
    for (guint net = 0; net < 2; net++)
        for (guint n = 8; n <= 12; n += 4)
            for (guint k = 0; k < G_N_ELEMENTS(kinds); k++) {
                SimparCollGroup g = {n, gpus, net == 0 ? &one_net : &rail_net};
                SimparCollParams p;
                simpar_coll_params_init(&p);
                p.proto = SIMPAR_PROTO_LL128;
                double s = 48e6;
                CU_ASSERT_EQUAL(simpar_coll_ring_channels(&g, s), net == 0 ? 1 : 4);
                g_autoptr(SimparExpansion) e = simpar_expansion_new(n);
                ring->expand(kinds[k], &g, s, 0, &p, e);
                double start[12], a[12], b[12];
                for (guint m = 0; m < n; m++)
                    start[m] = 1e-6 * ((m * 7) % 5);
                simpar_expansion_eval_idle(e, &g, start, a);
                ring->eval_idle(kinds[k], &g, s, &p, start, b);
                CU_ASSERT_EQUAL(memcmp(a, b, n * sizeof *a), 0);
                CU_ASSERT_DOUBLE_EQUAL(
                    eval_max(e, &g, 0) / ring->closed_form(kinds[k], &g, s, 0, &p), 1, 1e-12);
                CU_ASSERT_TRUE(simpar_test_fused_equal(ring, kinds[k], &g, s, &p, e, 1e-12));
            }
}

/* AUTO runs each collective with the protocol of smallest closed form (NCCL's tuner): on one
 * node of the uniform net, LL for 64 KiB (its 6.6 us launch and half-rate wire win), Simple
 * for 256 MiB (full rate); the closed form is that protocol's. */
static void
test_proto_auto(void)
{
    guint gpus[4] = {0, 1, 2, 3};
    SimparCollGroup g = {4, gpus, &uniform_net};
    const SimparCollAlgo *ring = NULL;
    CU_ASSERT_TRUE_FATAL(simpar_coll_algo_lookup("ring", &ring, NULL));

    const struct {
        double bytes;
        SimparProto want;
    } cases[] = {{64 * 1024, SIMPAR_PROTO_LL}, {256.0 * 1024 * 1024, SIMPAR_PROTO_SIMPLE}};

    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        SimparCollParams p, q;
        simpar_coll_params_init(&p);
        p.proto = SIMPAR_PROTO_AUTO;
        CU_ASSERT_EQUAL(simpar_coll_proto(ring, AR, &g, cases[i].bytes, 0, &p), cases[i].want);
        q = p;
        double best = G_MAXDOUBLE;
        for (q.proto = SIMPAR_PROTO_LL; q.proto < SIMPAR_N_PROTOS; q.proto++)
            best = MIN(best, ring->closed_form(AR, &g, cases[i].bytes, 0, &q));
        CU_ASSERT_EQUAL(ring->closed_form(AR, &g, cases[i].bytes, 0, &p), best);
    }
}

/* All-to-all runs as NCCL's send/recv, whose protocol its tuner does not choose (enqueue.cc,
 * addP2pToPlan): LL while a peer's block is at most 16 KiB (P2P_LL_THRESHOLD), Simple above, never
 * LL128, which runs as Simple when asked for; in a node and across nodes alike. */
static void
test_proto_p2p(void)
{
    guint gpus[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    const SimparCollAlgo *pairwise = NULL;
    CU_ASSERT_TRUE_FATAL(simpar_coll_algo_lookup("pairwise", &pairwise, NULL));
    for (guint n = 4; n <= 8; n += 4) {
        SimparCollGroup g = {n, gpus, &uniform_net};

        const struct {
            double block;
            SimparProto asked, want;
        } cases[] = {
            {1024, SIMPAR_PROTO_AUTO, SIMPAR_PROTO_LL},
            {16384, SIMPAR_PROTO_AUTO, SIMPAR_PROTO_LL},
            {16385, SIMPAR_PROTO_AUTO, SIMPAR_PROTO_SIMPLE},
            {128.0 * 1024 * 1024, SIMPAR_PROTO_AUTO, SIMPAR_PROTO_SIMPLE},
            {1024, SIMPAR_PROTO_LL128, SIMPAR_PROTO_SIMPLE},
            {128.0 * 1024 * 1024, SIMPAR_PROTO_LL, SIMPAR_PROTO_LL},
        };

        for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
            SimparCollParams p, q;
            simpar_coll_params_init(&p);
            p.proto = cases[i].asked;
            double s = cases[i].block * n;
            CU_ASSERT_EQUAL(simpar_coll_proto(pairwise, A2A, &g, s, 0, &p), cases[i].want);
            q = p;
            q.proto = cases[i].want;
            CU_ASSERT_EQUAL(pairwise->closed_form(A2A, &g, s, 0, &p),
                            pairwise->closed_form(A2A, &g, s, 0, &q));
        }
    }
}

/* ---- (7) lookup, table, defaults ---------------------------------------------------------- */

static void
test_lookup(void)
{
    const SimparCollAlgo *algo = &(SimparCollAlgo){0};
    g_autoptr(GError) error = NULL;
    CU_ASSERT_FALSE(simpar_coll_algo_lookup("rign", &algo, &error));
    CU_ASSERT_PTR_NULL(algo);
    CU_ASSERT_PTR_NOT_NULL_FATAL(error);
    CU_ASSERT_TRUE(g_error_matches(error, SIMPAR_COLL_ERROR, SIMPAR_COLL_ERROR_INVALID));
    CU_ASSERT_PTR_NOT_NULL(strstr(error->message, "'rign'"));
    const char *names[] = {"auto",         "ring",     "tree", "chain",
                           "hierarchical", "pairwise", "nvls", "nvlstree"};
    for (guint i = 0; i < G_N_ELEMENTS(names); i++)
        CU_ASSERT_PTR_NOT_NULL(strstr(error->message, names[i]));

    CU_ASSERT_TRUE(simpar_coll_algo_lookup("auto", &algo, NULL));
    CU_ASSERT_PTR_NULL(algo);
    guint n;
    const SimparCollAlgo *all = simpar_coll_algos(&n);
    CU_ASSERT_EQUAL(n, 7);
    for (guint i = 0; i < n; i++) {
        CU_ASSERT_TRUE(simpar_coll_algo_lookup(all[i].name, &algo, NULL));
        CU_ASSERT_PTR_EQUAL(algo, &all[i]);
        CU_ASSERT_TRUE(all[i].kinds != 0 && all[i].description != NULL);
    }
}

static void
test_defaults(void)
{
    SimparCollParams p;
    simpar_coll_params_init(&p);
    CU_ASSERT_EQUAL(p.proto, SIMPAR_PROTO_NONE);
    CU_ASSERT_DOUBLE_EQUAL(p.chunk_bytes, 524288.0, 0.0);
    CU_ASSERT_EQUAL(p.max_chunks, 64);
    CU_ASSERT_DOUBLE_EQUAL(simpar_coll_busbw_factor(AR, 8), 14.0 / 8, 1e-15);
    CU_ASSERT_DOUBLE_EQUAL(simpar_coll_busbw_factor(AG, 8), 7.0 / 8, 1e-15);
    CU_ASSERT_DOUBLE_EQUAL(simpar_coll_busbw_factor(RS, 8), 7.0 / 8, 1e-15);
    CU_ASSERT_DOUBLE_EQUAL(simpar_coll_busbw_factor(A2A, 8), 7.0 / 8, 1e-15);
    CU_ASSERT_DOUBLE_EQUAL(simpar_coll_busbw_factor(BC, 8), 1.0, 0.0);
    CU_ASSERT_DOUBLE_EQUAL(simpar_coll_busbw_factor(RD, 8), 1.0, 0.0);
}

static void
test_single_member(void)
{
    guint n, gpu = 3;
    const SimparCollAlgo *all = simpar_coll_algos(&n);
    SimparCollGroup g = {1, &gpu, &uniform_net};
    SimparCollParams p;
    simpar_coll_params_init(&p);
    p.proto = SIMPAR_PROTO_LL;
    for (guint i = 0; i < n; i++)
        for (guint k = 0; k < SIMPAR_N_COLL_KINDS; k++) {
            if (!(all[i].kinds & (1u << k)))
                continue;
            g_autoptr(SimparExpansion) e = simpar_expansion_new(1);
            all[i].expand((SimparCollKind) k, &g, 1 << 20, 0, &p, e);
            CU_ASSERT_EQUAL(e->rounds->len, 0);
            CU_ASSERT_DOUBLE_EQUAL(all[i].closed_form((SimparCollKind) k, &g, 1 << 20, 0, &p), 0.0,
                                   0.0);
            CU_ASSERT_DOUBLE_EQUAL(eval_max(e, &g, 0.5), 0.5, 0.0);
        }
}

static CU_TestInfo eval_tests[] = {
    {"the idle evaluation of every expansion equals its closed form", test_eval_closed_form},
    {"one late member delays a ring all-reduce by exactly its lateness", test_eval_start},
    {"a group of one moves nothing and takes no time", test_single_member},
    CU_TEST_INFO_NULL,
};

static CU_TestInfo cost_tests[] = {
    {"every closed form equals its alpha-beta formula on a uniform net", test_alpha_beta},
    {"every byte sent is received, and each ring member sends 2(n-1)/n S", test_bytes},
    {"LL, LL128 and Simple add baseLat once and hwLat per step", test_proto},
    {"a step pays NET hwLat when one of its hops crosses nodes", test_proto_mixed},
    {"auto: LL for 64 KiB, Simple for 256 MiB, the smallest closed form", test_proto_auto},
    {"all-to-all's send/recv: LL up to 16 KiB a peer, Simple above, never LL128", test_proto_p2p},
    {"one slow hop paces every ring round and bounds the other algorithms", test_slow_hop},
    CU_TEST_INFO_NULL,
};

static CU_TestInfo table_tests[] = {
    {"tree wins 8 KiB and ring wins 256 MiB across 16 nodes", test_choose},
    {"nvls: S(n+1)/n each way at its efficiency; chosen for 1 GiB in a node; else the ring",
     test_nvls},
    {"nvlstree: NVLS in each domain and the NIC share across them, pipelined (closed form); "
     "only where the platform has it",
     test_nvls_tree},
    {"transfers of a round sharing a NIC take its load; alone, their route's time",
     test_hops_shared},
    {"hierarchical: rings sharing one NIC, or rails; the default stays NCCL's ring or tree",
     test_hierarchical_nics},
    {"ring channels on rails: evaluator, fused transfers and closed form equal the expansion",
     test_ring_channels},
    {"an unknown name is an error naming it and the valid names", test_lookup},
    {"parameters default to no protocol, 512 KiB chunks, 64 chunks", test_defaults},
    {"every expansion holds at most simpar_coll_xfers_bound transfers", test_xfers_bound},
    {"a net's memo keeps rings and protocols until it is cleared", test_net_memo},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"expansions = closed forms", NULL, NULL, NULL, NULL, eval_tests},
    {"closed forms = alpha-beta costs", NULL, NULL, NULL, NULL, cost_tests},
    {"algorithm table", NULL, NULL, NULL, NULL, table_tests},
    CU_SUITE_INFO_NULL,
};

int
main(void)
{
    return simpar_test_main(suites);
}
