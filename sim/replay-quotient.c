/* replay-quotient.c - a quotient of alike ranks for the SimGrid backend, and the count of the
 * activities that backend would simulate (simpar_replay_activities), which depends on it.
 *
 * A quotient maps every rank to a simulated rank rep[rank] (itself when simulated), each
 * simulated rank standing for `fiber` ranks. The simulated ranks run their own ops, but a
 * collective member sends to and receives from rep[peer] instead of its peer, and the fabric
 * links (shared by every node: "spine-...") carry 1/fiber of their bandwidth. What makes that
 * exact, on a file `simpar topology` wrote (its nodes alike, every route the shape of a route
 * between two representative nodes: simpar_platform_route_shape), is what is checked here:
 *
 *   1. nodes map to nodes: the ranks of a node map one to one onto the simulated ranks of one
 *      node, each keeping its GPU's place in the node;
 *   2. every rank runs its representative's ops: kinds, streams, names, compute times, deps
 *      (same rank, same place), collectives with the same algorithm, bytes, root, group size
 *      and closed form, and the same transfers per member in order (direction, bytes), the
 *      peers mapping to the same simulated ranks: rep[peer] = rep[peer of the representative],
 *      a member of the representative's group, one transfer per simulated peer and direction;
 *   3. every transfer and its image (rep[src] -> rep[dst]) have routes of one shape, between
 *      two GPUs of one node or of two nodes alike.
 *
 * Then, by induction over SimGrid's events, every rank is where its representative is: the flows
 * crossing a node's link are the lifts of the flows crossing its image, one each (1 and 3); a
 * fabric link carries `fiber` lifts of each of its simulated flows, so the constraint
 * sum(rates) <= bandwidth there is the quotient's sum <= bandwidth / fiber. SimGrid's max-min
 * sharing (CM02, no cross-traffic) has one solution, and the lift of the quotient's solution
 * meets every constraint of the whole with the same bottlenecks, so it is that solution; sleeps
 * and latencies are equal (2, 3). The lone ring and the exact mode are not reduced: exact mode is
 * the reference the fused mode is measured against.
 *
 * Not exact: a tree's or a chain's members play different parts (root, inner, leaf), so their
 * transfers do not map. Such a collective is timed at its closed form on an idle network, with
 * no transfers (idle[]), when at least 9/10 of that closed form is latency or the run times the
 * ends blocks (run->ends); any other, and any ring that does not map, rejects the candidate.
 * Its error against every rank and the exact mode is measured (test-scale, docs/speed.md).
 *
 * The candidates: the ranks as mixed-radix coordinates from the groups that step evenly through
 * them (3-D: i, j, k of stride 1, q, q^2), each coordinate taken modulo a divisor of its size,
 * the smallest that checks, outermost first. Checking is linear in ops and transfers.
 */
#include "platform.h"
#include "replay.h"
#include <stdlib.h>
#include <string.h>

/* At most this many coordinates. */
#define QUOTIENT_MAX_COORDS 16

/* A candidate map and what checking it needs. */
typedef struct {
    SimparReplay *r;
    const guint *rep; /* the candidate */
    const guint *pos; /* per op: its place in its rank's ops */
    gboolean *idle;   /* per collective entry: timed idle (out) */
    GArray ***xfers;  /* per collective entry, per member: its transfers, built on first use */
} Quotient;

/* The coordinates' strides and sizes, innermost first; how many. Each stride is a group's that
 * steps evenly from a multiple of stride * size; the last takes what is left of n_ranks. */
static guint
quotient_coords(const SimparSchedule *s, guint n_ranks, guint *stride, guint *size)
{
    g_autoptr(GHashTable) by_stride = g_hash_table_new(NULL, NULL); /* stride -> size */
    for (guint g = 0; g < simpar_schedule_n_groups(s); g++) {
        const SimparGroup *grp = simpar_schedule_group(s, g);
        const guint *ranks = simpar_schedule_group_ranks(s, g);
        if (grp->size < 2 || ranks[1] <= ranks[0])
            continue;
        guint step = ranks[1] - ranks[0], i = 2;
        while (i < grp->size && ranks[i] == ranks[i - 1] + step)
            i++;
        if (i == grp->size && !g_hash_table_contains(by_stride, GUINT_TO_POINTER(step)))
            g_hash_table_insert(by_stride, GUINT_TO_POINTER(step), GUINT_TO_POINTER(grp->size));
    }
    guint n = 0, at = 1;
    while (at < n_ranks && n < QUOTIENT_MAX_COORDS) {
        guint sz = GPOINTER_TO_UINT(g_hash_table_lookup(by_stride, GUINT_TO_POINTER(at)));
        if (sz < 2 || n_ranks % (at * sz) != 0 || n == QUOTIENT_MAX_COORDS - 1)
            sz = n_ranks / at; /* the rest */
        stride[n] = at, size[n++] = sz;
        at *= sz;
    }
    return at == n_ranks ? n : 0;
}

/* rep[] for coordinates reduced modulo mod[]. */
static void
quotient_map(guint n_ranks, guint n, const guint *stride, const guint *size, const guint *mod,
             guint *rep)
{
    for (guint rank = 0; rank < n_ranks; rank++) {
        guint to = 0;
        for (guint c = 0; c < n; c++)
            to += (rank / stride[c] % size[c] % mod[c]) * stride[c];
        rep[rank] = to;
    }
}

/* Checks 1: nodes to nodes, GPUs keeping their places; the fiber size, or 0. */
static guint
quotient_nodes(const SimparReplay *r, const guint *rep)
{
    const SimparRun *run = r->run;
    guint n = r->n_ranks, n_gpus = 0;
    for (guint i = 0; i < n; i++)
        n_gpus = MAX(n_gpus, run->gpus[i] + 1);
    g_autofree guint *node_to = g_new(guint, n_gpus);
    g_autofree gint64 *offset = g_new(gint64, n_gpus);
    g_autofree guint *ranks_at = g_new0(guint, n_gpus); /* per node */
    g_autofree guint *sim_at = g_new0(guint, n_gpus);   /* per node: simulated ranks there */
    g_autofree guint *fiber = g_new0(guint, n);
    for (guint i = 0; i < n_gpus; i++)
        node_to[i] = G_MAXUINT;
    for (guint i = 0; i < n; i++) {
        guint gpu = run->gpus[i], to = run->gpus[rep[i]];
        guint a = simpar_net_node(run->net, gpu), b = simpar_net_node(run->net, to);
        if (a >= n_gpus || b >= n_gpus || rep[rep[i]] != rep[i])
            return 0;
        if (node_to[a] == G_MAXUINT)
            node_to[a] = b, offset[a] = (gint64) to - gpu;
        if (node_to[a] != b || offset[a] != (gint64) to - gpu)
            return 0; /* the node's GPUs go to two nodes, or move within one */
        ranks_at[a]++;
        sim_at[b] += rep[i] == i;
        fiber[rep[i]]++;
    }
    for (guint a = 0; a < n_gpus; a++)
        if (node_to[a] != G_MAXUINT && ranks_at[a] != sim_at[node_to[a]])
            return 0; /* not onto the simulated ranks of its image */
    guint k = fiber[rep[0]];
    for (guint i = 0; i < n; i++)
        if (rep[i] == i && fiber[i] != k)
            return 0;
    return k;
}

/* Whether the transfer a -> b (ranks) and its image have routes of one shape. */
static gboolean
quotient_route(const SimparReplay *r, const guint *rep, guint a, guint b)
{
    const SimparRun *run = r->run;
    guint ga = run->gpus[a], gb = run->gpus[b], ha = run->gpus[rep[a]], hb = run->gpus[rep[b]];
    gint shape = simpar_platform_route_shape(run->net, ga, gb);
    return shape >= 0 && shape == simpar_platform_route_shape(run->net, ha, hb) &&
           (simpar_net_node(run->net, ga) == simpar_net_node(run->net, gb)) ==
               (simpar_net_node(run->net, ha) == simpar_net_node(run->net, hb));
}

static int
quotient_cmp(const void *a, const void *b)
{
    guint64 x = *(const guint64 *) a, y = *(const guint64 *) b;
    return x < y ? -1 : x > y;
}

/* The transfers of `rank` in collective op `op` (transfer none). */
static const GArray *
quotient_member_xfers(Quotient *q, guint rank, guint op)
{
    const SimparSchedule *s = q->r->run->sched;
    guint coll = q->r->coll_of_op[op], group = simpar_schedule_op(s, op)->u.coll.group;
    guint n = simpar_schedule_group(s, group)->size, m = simpar_group_index(s, group, rank);
    if (q->xfers[coll] == NULL)
        q->xfers[coll] = g_new0(GArray *, n);
    if (q->xfers[coll][m] == NULL)
        q->xfers[coll][m] = simpar_replay_member_xfers(q->r, coll, m);
    return q->xfers[coll][m];
}

/* Whether member `rank`'s transfers in collective op `a` map onto those of op `b` of rep[rank]
 * (check 2's transfers, and 3). */
static gboolean
quotient_xfers(Quotient *qt, guint rank, guint a, guint b)
{
    SimparReplay *r = qt->r;
    const guint *rep = qt->rep;
    const SimparSchedule *s = r->run->sched;
    guint ga = simpar_schedule_op(s, a)->u.coll.group, gb = simpar_schedule_op(s, b)->u.coll.group;
    const guint *ra = simpar_schedule_group_ranks(s, ga), *rb = simpar_schedule_group_ranks(s, gb);
    const GArray *xa = quotient_member_xfers(qt, rank, a);
    const GArray *xb = quotient_member_xfers(qt, rep[rank], b);
    if (xa->len != xb->len)
        return FALSE;
    g_autofree guint64 *to = g_new(guint64, xa->len + 1); /* (simulated peer, direction) */
    for (guint i = 0; i < xa->len; i++) {
        const SimparXfer *p = &g_array_index(xa, SimparXfer, i);
        const SimparXfer *q = &g_array_index(xb, SimparXfer, i);
        guint peer = ra[p->peer];
        if (p->send != q->send || p->bytes != q->bytes || rep[peer] != rep[rb[q->peer]] ||
            simpar_group_index(s, gb, rep[peer]) == G_MAXUINT ||
            !(p->send ? quotient_route(r, rep, rank, peer) : quotient_route(r, rep, peer, rank)))
            return FALSE;
        to[i] = (guint64) rep[peer] << 1 | (p->send != 0);
    }
    /* one transfer per simulated peer and direction: a mailbox of its own each */
    qsort(to, xa->len, sizeof *to, quotient_cmp);
    for (guint i = 1; i < xa->len; i++)
        if (to[i] == to[i - 1])
            return FALSE;
    return TRUE;
}

/* Whether at least 9/10 of the collective's closed form is latency (its time for 1 byte):
 * contention, which only slows transfers, can stretch only the rest. */
static gboolean
quotient_latency_bound(const SimparReplay *r, const SimparReplayColl *c)
{
    double lat = c->algo->closed_form(c->kind, &c->group, 1, c->root, &r->run->coll);
    return lat >= 0.9 * c->time_s;
}

/* Check 2 for collective op `a` of `rank` and op `b` in its place on rep[rank]. Where the
 * transfers do not map (members of a tree or chain play different parts), a collective other
 * than a ring is timed at its closed form on an idle network (idle[b's entry]) when it is
 * latency-bound or the run times the ends (once per micro-batch, against a stage's layers);
 * any other fails the check. */
static gboolean
quotient_coll(Quotient *q, guint rank, guint a, guint b)
{
    const SimparReplay *r = q->r;
    gboolean *idle = q->idle;
    const SimparReplayColl *ca = &g_array_index(r->colls, SimparReplayColl, r->coll_of_op[a]);
    const SimparReplayColl *cb = &g_array_index(r->colls, SimparReplayColl, r->coll_of_op[b]);
    if (ca->algo != cb->algo || ca->kind != cb->kind || ca->bytes != cb->bytes ||
        ca->root != cb->root || ca->group.n != cb->group.n || ca->time_s != cb->time_s)
        return FALSE;
    if (ca->group.n < 2 || idle[r->coll_of_op[b]] || quotient_xfers(q, rank, a, b))
        return TRUE;
    if (g_str_equal(cb->algo->name, "ring") || (!r->run->ends && !quotient_latency_bound(r, cb)))
        return FALSE;
    idle[r->coll_of_op[b]] = TRUE;
    return TRUE;
}

/* Checks 2 and 3 for `rank`. */
static gboolean
quotient_rank(Quotient *q, guint rank)
{
    const guint *rep = q->rep, *pos = q->pos;
    const SimparRun *run = q->r->run;
    const SimparSchedule *s = run->sched;
    guint n, m;
    const guint *ops = simpar_schedule_rank_ops(s, rank, &n);
    const guint *rops = simpar_schedule_rank_ops(s, rep[rank], &m);
    if (n != m)
        return FALSE;
    for (guint i = 0; i < n; i++) {
        const SimparOp *x = simpar_schedule_op(s, ops[i]), *y = simpar_schedule_op(s, rops[i]);
        if (x->kind != y->kind || x->stream != y->stream || x->phase != y->phase ||
            x->name != y->name ||
            (run->compute_s != NULL && run->compute_s[ops[i]] != run->compute_s[rops[i]]) ||
            x->n_deps != y->n_deps)
            return FALSE;
        const guint *da = simpar_schedule_deps(s, x), *db = simpar_schedule_deps(s, y);
        for (guint d = 0; d < x->n_deps; d++)
            if (simpar_schedule_op(s, da[d])->rank != rank ||
                simpar_schedule_op(s, db[d])->rank != rep[rank] || pos[da[d]] != pos[db[d]])
                return FALSE;
        if (x->kind == SIMPAR_OP_COLLECTIVE && !quotient_coll(q, rank, ops[i], rops[i]))
            return FALSE;
    }
    return TRUE;
}

/* The fiber size of the candidate, or 0 when a check fails. */
static guint
quotient_check(Quotient *q)
{
    guint k = quotient_nodes(q->r, q->rep);
    memset(q->idle, 0, q->r->colls->len * sizeof *q->idle);
    for (guint rank = 0; k > 1 && rank < q->r->n_ranks; rank++)
        if (!quotient_rank(q, rank))
            return 0;
    return k > 1 ? k : 0;
}

gboolean
simpar_replay_quotient(SimparReplay *r, SimparQuotient *out)
{
    const SimparRun *run = r->run;
    const SimparSchedule *s = run->sched;
    guint n = r->n_ranks, stride[QUOTIENT_MAX_COORDS], size[QUOTIENT_MAX_COORDS];
    guint mod[QUOTIENT_MAX_COORDS];
    *out = (SimparQuotient){NULL, NULL, n, 1};
    if (run->mode != SIMPAR_COLL_MODE_FUSED || run->every_rank || n < 2 || r->n_chans > 0 ||
        simpar_platform_route_shape(run->net, run->gpus[0], run->gpus[1]) < 0)
        return FALSE;
    guint n_coords = quotient_coords(s, n, stride, size);
    if (n_coords == 0)
        return FALSE;
    g_autofree guint *pos = g_new(guint, r->n_ops);
    for (guint rank = 0; rank < n; rank++) {
        guint len;
        const guint *ops = simpar_schedule_rank_ops(s, rank, &len);
        for (guint i = 0; i < len; i++)
            pos[ops[i]] = i;
    }
    guint *rep = g_new(guint, n), fiber = 1;
    gboolean *idle = g_new0(gboolean, r->colls->len + 1), *found = NULL;
    Quotient q = {r, rep, pos, idle, g_new0(GArray **, r->colls->len + 1)};
    for (guint c = 0; c < n_coords; c++)
        mod[c] = size[c];
    for (guint c = n_coords; c-- > 0;) {
        for (guint d = 1; d < size[c]; d++) {
            if (size[c] % d != 0)
                continue;
            mod[c] = d;
            quotient_map(n, n_coords, stride, size, mod, rep);
            guint k = quotient_check(&q);
            if (k > 0) {
                fiber = k;
                g_free(found);
                found = g_memdup2(idle, (r->colls->len + 1) * sizeof *idle);
                break;
            }
            mod[c] = size[c];
        }
    }
    for (guint c = 0; c < r->colls->len; c++) {
        guint members = g_array_index(r->colls, SimparReplayColl, c).group.n;
        for (guint m = 0; q.xfers[c] != NULL && m < members; m++)
            if (q.xfers[c][m] != NULL)
                g_array_free(q.xfers[c][m], TRUE);
        g_free(q.xfers[c]);
    }
    g_free(q.xfers);
    g_free(idle);
    if (fiber == 1) {
        g_free(rep);
        return FALSE;
    }
    quotient_map(n, n_coords, stride, size, mod, rep);
    *out = (SimparQuotient){rep, found, n / fiber, fiber};
    return TRUE;
}

void
simpar_quotient_clear(SimparQuotient *q)
{
    g_clear_pointer(&q->rep, g_free);
    g_clear_pointer(&q->idle, g_free);
}

/* ---------------------------------------------------- what the SimGrid backend simulates */

/* Sends member m makes in one call of the collective: exact, every round's; fused, one per peer
 * it sends to. */
static double
replay_member_sends(SimparReplay *r, guint coll, guint m)
{
    const SimparReplayColl *c = &g_array_index(r->colls, SimparReplayColl, coll);
    double n = c->group.n;
    if (r->run->mode == SIMPAR_COLL_MODE_EXACT && g_str_equal(c->algo->name, "ring"))
        return (c->kind == SIMPAR_COLL_ALL_REDUCE ? 2 : 1) * (n - 1) * /* without its 4n(n-1) */
               simpar_coll_ring_channels(&c->group, c->bytes);
    double sends = 0;
    if (r->run->mode == SIMPAR_COLL_MODE_EXACT) {
        const SimparExpansion *e = simpar_replay_expansion(r, coll);
        for (guint k = e->member_first[m]; k < e->member_first[m + 1]; k++) {
            const SimparRound *round = &g_array_index(e->rounds, SimparRound, k);
            for (guint x = round->first; x < round->first + round->n; x++)
                sends += g_array_index(e->xfers, SimparXfer, x).send;
        }
        return sends;
    }
    g_autoptr(GArray) xfers = simpar_replay_member_xfers(r, coll, m);
    for (guint x = 0; x < xfers->len; x++)
        sends += g_array_index(xfers, SimparXfer, x).send;
    return sends;
}

double
simpar_replay_activities(SimparReplay *r, guint *n_sim)
{
    const SimparSchedule *s = r->run->sched;
    SimparQuotient q;
    gboolean quotient = simpar_replay_quotient(r, &q);
    double sum = 0;
    for (guint i = 0; i < r->n_ops; i++) {
        const SimparOp *op = simpar_schedule_op(s, i);
        if (quotient && q.rep[op->rank] != op->rank)
            continue; /* not simulated */
        if (op->kind == SIMPAR_OP_COLLECTIVE) {
            guint coll = r->coll_of_op[i];
            if (quotient && q.idle[coll])
                sum += 1; /* a sleep */
            else if (g_array_index(r->colls, SimparReplayColl, coll).group.n > 1)
                sum +=
                    replay_member_sends(r, coll, simpar_group_index(s, op->u.coll.group, op->rank));
        } else if (op->kind != SIMPAR_OP_RECV) { /* a send counts its transfer */
            sum += 1;
        }
    }
    if (n_sim != NULL)
        *n_sim = q.n_sim;
    simpar_quotient_clear(&q);
    return sum * r->run->n_layers;
}
