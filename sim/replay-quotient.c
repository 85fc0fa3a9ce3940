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
 * Point-to-point sends and recvs (a step's pipeline) map as collectives do: the same count, the
 * peer of a rank's op the image of the peer of its own (rep[peer]), the route of a send and
 * its image of one shape.
 *
 * Where the platform has no route shapes (a Clos fabric, whose rack and pod uplinks are shared
 * by the nodes below them only, or any other SimGrid file), check 3 is made on the links
 * themselves ("links mode"). Each transfer a simulated rank sends stands for its lifts: the
 * transfers of the `fiber` ranks it stands for, in its place. Every lift's route and its image's
 * pair position by position into links of one bandwidth, latency and sharing, a real link L
 * always pairing with the same simulated link phi(L). Then, where every simulated transfer
 * crossing phi(L) has the same number k_L >= 1 of lifts crossing L (the same k for every L of
 * one phi(L)), the constraint sum(rates) <= B on L is k times the quotient's sum over phi(L):
 * the quotient runs with phi(L) at B / k, and max-min sharing lifts as above. As with the
 * slice reduction (predict/step-slice.c), that share must not fall below the narrowest link of
 * a route through it: measured, a quotient whose pod uplinks narrowed the routes was 0.2% off
 * every rank, one that did not is equal to it. A rack's uplink
 * carries one lift of each flow of its image (k = 1); a pod's uplink, which every simulated node
 * of the pod stands in for, `fiber` of them. The links keep their bandwidths where k = 1.
 *
 * So a fold needs the pod crossings to repeat in every fiber. A ring folds only onto the ring of
 * its first n / f members (member i onto i mod (n / f)): where a pipeline stage straddles two
 * pods (Llama 3 405B's 256-node stages on clos-h100's 384-node pods, past 16,384 GPUs), its
 * ZeRO-3 ring crosses the pod boundary at two edges that any such fold maps onto one inside a
 * pod, a route without the pods' uplinks, and no fold exists (test-scale holds one in small).
 *
 * Not exact: a tree's or a chain's members play different parts (root, inner, leaf), so their
 * transfers do not map. Such a collective is timed at its closed form on an idle network, with
 * no transfers (idle[]), when at least 9/10 of that closed form is latency or the run times the
 * ends blocks (run->ends); any other, and any ring that does not map, rejects the candidate.
 * Its error against every rank and the exact mode is measured (test-scale, docs/speed.md).
 * So is an MoE step's reduction of the experts' gradients (group axis "edp", models/step.c)
 * whose members the candidate merges: expert-data-parallel pairs EP apart, which the fold of
 * the data-parallel ring joins (no fold keeps both that ring and such a pair). Measured against
 * every rank: DeepSeek-V3 on 2,048 H100 (EP 64, pairs 64 apart, 256 ranks simulated) within
 * 2e-16 of the step, the job of tests/test-moe-predict.c within 1e-9.
 *
 * The candidates: the ranks as mixed-radix coordinates from the groups that step evenly through
 * them (3-D: i, j, k of stride 1, q, q^2; a group's span past a finer stride's), each split into
 * its prime factors, each digit folded (taken modulo 1) where that checks, outermost first.
 * Checking is linear in ops and transfers.
 */
#include "platform.h"
#include "replay.h"
#include <simgrid/link.h>
#include <stdlib.h>
#include <string.h>

/* At most this many coordinates. */
#define QUOTIENT_MAX_COORDS 32

/* A transfer that a collective member or a send makes: (collective entry, member, transfer) or,
 * for a send, (G_MAXUINT, sender rank, receiver rank). */
typedef struct {
    guint e, m, i;
} QuotientFlow;

/* Links mode: a simulated transfer and what its lifts cross. */
typedef struct {
    guint src, dst;   /* its GPUs */
    GArray *lifts;    /* guint64 (src << 32 | dst): the GPUs of each lift */
    GHashTable *seen; /* the lifts' QuotientFlow (owned keys): each counted once */
} QuotientImage;

/* A candidate map and what checking it needs. */
typedef struct {
    SimparReplay *r;
    const guint *rep; /* the candidate */
    const guint *pos; /* per op: its place in its rank's ops */
    gboolean *idle;   /* per collective entry: timed idle (out) */
    GArray ***xfers;  /* per collective entry, per member: its transfers, built on first use */
    guint fiber;      /* the candidate's (check 1) */
    /* links mode (no route shapes): the simulated transfers by QuotientFlow (owned keys and
     * values), phi (real link -> simulated link) and the route scratch */
    gboolean by_links;
    GHashTable *images, *phi;
    GPtrArray *route_a, *route_b;
} Quotient;

/* The coordinates' strides and sizes, innermost first; how many. Each stride is a group's that
 * steps evenly from a multiple of stride * size; the last takes what is left of n_ranks. */
static guint
quotient_coords(const SimparSchedule *s, guint n_ranks, guint *stride, guint *size)
{
    GArray *spans = g_array_new(FALSE, FALSE, sizeof(guint) * 2); /* (step, size) */
    for (guint g = 0; g < simpar_schedule_n_groups(s); g++) {
        const SimparGroup *grp = simpar_schedule_group(s, g);
        const guint *ranks = simpar_schedule_group_ranks(s, g);
        if (grp->size < 2 || ranks[1] <= ranks[0])
            continue;
        guint step = ranks[1] - ranks[0], i = 2;
        while (i < grp->size && ranks[i] == ranks[i - 1] + step)
            i++;
        guint span[2] = {step, grp->size};
        if (i == grp->size)
            g_array_append_val(spans, span);
    }
    guint n = 0, at = 1;
    while (at < n_ranks && n < QUOTIENT_MAX_COORDS) {
        /* the finest: a group of stride `at`, or one of a finer stride whose span ends on a
         * multiple of `at` (ZeRO-3 over CP x DP of stride 1 gives DP's coordinate past CP's) */
        guint sz = 0;
        for (guint k = 0; k < spans->len; k++) {
            const guint *sp = &g_array_index(spans, guint, 2 * k);
            guint64 end = (guint64) sp[0] * sp[1];
            guint64 c = sp[0] == at ? sp[1] : sp[0] < at && end % at == 0 ? end / at : 0;
            if (c >= 2 && n_ranks % (at * c) == 0 && (sz == 0 || c < sz))
                sz = (guint) c;
        }
        if (sz == 0)
            sz = n_ranks / at; /* the rest */
        /* one coordinate per prime factor, lowest first: a fold may keep a coordinate's high
         * digits and fold its low ones (the replicas of one pod apart from another's, the
         * context-parallel ranks within each) */
        for (guint f = 2, left = sz; left > 1; f++)
            while (left % f == 0 && at < n_ranks) {
                /* the last coordinate takes the rest */
                guint part = n == QUOTIENT_MAX_COORDS - 1 ? n_ranks / at : f;
                stride[n] = at, size[n++] = part;
                at *= part, left = part == f ? left / f : 1;
            }
    }
    g_array_unref(spans);
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

static guint
quotient_flow_hash(gconstpointer p)
{
    const QuotientFlow *f = p;
    return (f->e * 1000003u ^ f->m) * 1000003u ^ f->i;
}

static gboolean
quotient_flow_equal(gconstpointer a, gconstpointer b)
{
    const QuotientFlow *x = a, *y = b;
    return x->e == y->e && x->m == y->m && x->i == y->i;
}

static void
quotient_image_free(gpointer p)
{
    QuotientImage *im = p;
    g_array_free(im->lifts, TRUE);
    g_hash_table_unref(im->seen);
    g_free(im);
}

/* Links mode: the transfer `lift` (GPUs a -> b), one of those the simulated `image` (GPUs
 * ha -> hb) stands for: recorded once, its route paired with the image's link by link (phi). FALSE
 * when the routes do not pair or the image has more lifts than the fiber. */
static gboolean
quotient_lift(Quotient *q, const QuotientFlow *lift, guint a, guint b, const QuotientFlow *image,
              guint ha, guint hb)
{
    QuotientImage *im = g_hash_table_lookup(q->images, image);
    if (im == NULL) {
        im = g_new(QuotientImage, 1);
        *im = (QuotientImage){
            ha, hb, g_array_new(FALSE, FALSE, sizeof(guint64)),
            g_hash_table_new_full(quotient_flow_hash, quotient_flow_equal, g_free, NULL)};
        g_hash_table_insert(q->images, g_memdup2(image, sizeof *image), im);
    }
    if (im->src != ha || im->dst != hb)
        return FALSE;
    if (g_hash_table_contains(im->seen, lift))
        return TRUE;
    if (g_hash_table_size(im->seen) == q->fiber)
        return FALSE; /* its lifts differ from one call to the next */
    g_hash_table_add(im->seen, g_memdup2(lift, sizeof *lift));
    guint64 pair = (guint64) a << 32 | b;
    g_array_append_val(im->lifts, pair);
    const SimparNet *net = q->r->run->net;
    g_ptr_array_set_size(q->route_a, 0);
    g_ptr_array_set_size(q->route_b, 0);
    if (!simpar_platform_route_links(net, a, b, q->route_a) ||
        !simpar_platform_route_links(net, ha, hb, q->route_b) || q->route_a->len != q->route_b->len)
        return FALSE;
    for (guint i = 0; i < q->route_a->len; i++) {
        sg_link_t l = q->route_a->pdata[i], img = q->route_b->pdata[i];
        gpointer was = g_hash_table_lookup(q->phi, l);
        if ((was != NULL && was != img) || !simpar_platform_links_alike(l, img))
            return FALSE;
        g_hash_table_insert(q->phi, l, img);
    }
    return TRUE;
}

/* Check 3 for a transfer rank -> peer (`send`) or peer -> rank that `flow` names, whose image
 * `image` the representative makes: route shapes, or in links mode its lift recorded (each
 * transfer once, from its sender). */
static gboolean
quotient_flow(Quotient *q, guint rank, guint peer, gboolean send, const QuotientFlow *flow,
              const QuotientFlow *image)
{
    const guint *rep = q->rep, *gpus = q->r->run->gpus;
    if (!q->by_links)
        return send ? quotient_route(q->r, rep, rank, peer) : quotient_route(q->r, rep, peer, rank);
    return !send ||
           quotient_lift(q, flow, gpus[rank], gpus[peer], image, gpus[rep[rank]], gpus[rep[peer]]);
}

/* Links mode, once every rank checked: every simulated transfer has `fiber` lifts, and each
 * real link L carries the same number k_L >= 1 of lifts of every simulated transfer crossing
 * phi(L), k_L the same for every L of one phi(L). The simulated links with k > 1 go to `scaled`
 * with their bandwidth / k (in `scaled_bw`). */
static gboolean
quotient_links_check(Quotient *q, GPtrArray *scaled, GArray *scaled_bw)
{
    const SimparNet *net = q->r->run->net;
    g_autoptr(GHashTable) k_of = g_hash_table_new(NULL, NULL);     /* L -> k_L */
    g_autoptr(GHashTable) through = g_hash_table_new(NULL, NULL);  /* L -> images with lifts */
    g_autoptr(GHashTable) crossing = g_hash_table_new(NULL, NULL); /* l -> images crossing */
    g_autoptr(GHashTable) count = g_hash_table_new(NULL, NULL);
    g_autoptr(GHashTable) narrowest = g_hash_table_new_full(NULL, NULL, NULL, g_free);
    g_autoptr(GPtrArray) route = g_ptr_array_new();
    GHashTableIter it;
    gpointer key, value;
    g_hash_table_iter_init(&it, q->images);
    while (g_hash_table_iter_next(&it, &key, &value)) {
        const QuotientImage *im = value;
        if (im->lifts->len != q->fiber)
            return FALSE;
        g_ptr_array_set_size(route, 0);
        (void) simpar_platform_route_links(net, im->src, im->dst, route);
        double lo = G_MAXDOUBLE; /* the route's narrowest link */
        for (guint i = 0; i < route->len; i++)
            lo = MIN(lo, sg_link_get_bandwidth(route->pdata[i]));
        for (guint i = 0; i < route->len; i++) {
            g_hash_table_insert(
                crossing, route->pdata[i],
                GUINT_TO_POINTER(GPOINTER_TO_UINT(g_hash_table_lookup(crossing, route->pdata[i])) +
                                 1));
            double *was = g_hash_table_lookup(narrowest, route->pdata[i]);
            if (was == NULL)
                g_hash_table_insert(narrowest, route->pdata[i], was = g_new(double, 1)), *was = lo;
            *was = MIN(*was, lo);
        }
        g_hash_table_remove_all(count);
        for (guint j = 0; j < im->lifts->len; j++) {
            guint64 pair = g_array_index(im->lifts, guint64, j);
            g_ptr_array_set_size(route, 0);
            (void) simpar_platform_route_links(net, (guint) (pair >> 32), (guint) pair, route);
            for (guint i = 0; i < route->len; i++)
                g_hash_table_insert(
                    count, route->pdata[i],
                    GUINT_TO_POINTER(GPOINTER_TO_UINT(g_hash_table_lookup(count, route->pdata[i])) +
                                     1));
        }
        GHashTableIter ci;
        gpointer link, n;
        g_hash_table_iter_init(&ci, count);
        while (g_hash_table_iter_next(&ci, &link, &n)) {
            gpointer k = g_hash_table_lookup(k_of, link);
            if (k != NULL && k != n && sg_link_is_shared(link))
                return FALSE; /* L carries more lifts of one image than of another */
            g_hash_table_insert(k_of, link, n);
            g_hash_table_insert(
                through, link,
                GUINT_TO_POINTER(GPOINTER_TO_UINT(g_hash_table_lookup(through, link)) + 1));
        }
    }
    /* every L carries lifts of every image crossing phi(L); one k per phi(L) */
    g_autoptr(GHashTable) k_img = g_hash_table_new(NULL, NULL); /* l -> k */
    g_hash_table_iter_init(&it, k_of);
    while (g_hash_table_iter_next(&it, &key, &value)) {
        if (!sg_link_is_shared(key))
            continue; /* a fat pipe: every flow has all of it */
        gpointer img = g_hash_table_lookup(q->phi, key), k = g_hash_table_lookup(k_img, img);
        if (g_hash_table_lookup(through, key) != g_hash_table_lookup(crossing, img) ||
            (k != NULL && k != value))
            return FALSE;
        g_hash_table_insert(k_img, img, value);
    }
    g_autoptr(GPtrArray) links = g_ptr_array_new();
    g_hash_table_iter_init(&it, k_img);
    while (g_hash_table_iter_next(&it, &key, NULL))
        g_ptr_array_add(links, key);
    g_ptr_array_sort(links, simpar_platform_link_cmp); /* a hash table's order: not reproducible */
    for (guint i = 0; i < links->len; i++) {
        guint k = GPOINTER_TO_UINT(g_hash_table_lookup(k_img, links->pdata[i]));
        if (k < 2)
            continue;
        double bw = sg_link_get_bandwidth(links->pdata[i]) / k;
        if (bw < *(double *) g_hash_table_lookup(narrowest, links->pdata[i]))
            return FALSE; /* its share would narrow a route through it */
        g_ptr_array_add(scaled, links->pdata[i]);
        g_array_append_val(scaled_bw, bw);
    }
    return TRUE;
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
        QuotientFlow flow = {r->coll_of_op[a], simpar_group_index(s, ga, rank), i};
        QuotientFlow image = {r->coll_of_op[b], simpar_group_index(s, gb, rep[rank]), i};
        if (p->send != q->send || p->bytes != q->bytes || rep[peer] != rep[rb[q->peer]] ||
            simpar_group_index(s, gb, rep[peer]) == G_MAXUINT ||
            !quotient_flow(qt, rank, peer, p->send, &flow, &image))
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

/* Whether collective op `a` reduces experts' gradients (group axis "edp", models/step.c) over
 * members the candidate merges: two of them with one representative. */
static gboolean
quotient_merged_experts(const Quotient *q, guint a)
{
    const SimparSchedule *s = q->r->run->sched;
    guint g = simpar_schedule_op(s, a)->u.coll.group, n = simpar_schedule_group(s, g)->size;
    if (!g_str_equal(simpar_schedule_group(s, g)->axis, "edp"))
        return FALSE;
    const guint *ranks = simpar_schedule_group_ranks(s, g);
    g_autofree guint64 *reps = g_new(guint64, n);
    for (guint i = 0; i < n; i++)
        reps[i] = q->rep[ranks[i]];
    qsort(reps, n, sizeof *reps, quotient_cmp);
    for (guint i = 1; i < n; i++)
        if (reps[i] == reps[i - 1])
            return TRUE;
    return FALSE;
}

/* Check 2 for collective op `a` of `rank` and op `b` in its place on rep[rank]. Where the
 * transfers do not map (members of a tree or chain play different parts), a collective other
 * than a ring is timed at its closed form on an idle network (idle[b's entry]) when it is
 * latency-bound or the run times the ends (once per micro-batch, against a stage's layers),
 * and so is an experts' reduction whose members the candidate merges; any other fails the
 * check. */
static gboolean
quotient_coll(Quotient *q, guint rank, guint a, guint b)
{
    const SimparReplay *r = q->r;
    gboolean *idle = q->idle;
    const SimparReplayColl *ca = &g_array_index(r->colls, SimparReplayColl, r->coll_of_op[a]);
    const SimparReplayColl *cb = &g_array_index(r->colls, SimparReplayColl, r->coll_of_op[b]);
    if (ca->algo != cb->algo || ca->kind != cb->kind || ca->bytes != cb->bytes ||
        ca->root != cb->root || ca->group.n != cb->group.n || ca->time_s != cb->time_s ||
        ca->idle != cb->idle)
        return FALSE;
    if (cb->idle) /* timed idle in every run (SimparColl.idle) */
        return idle[r->coll_of_op[b]] = TRUE;
    if (ca->group.n < 2 || idle[r->coll_of_op[b]] || quotient_xfers(q, rank, a, b))
        return TRUE;
    if (!quotient_merged_experts(q, a) &&
        (cb->algo == simpar_coll_ring() || (!r->run->ends && !quotient_latency_bound(r, cb))))
        return FALSE;
    idle[r->coll_of_op[b]] = TRUE;
    return TRUE;
}

/* Check 2 for a send or recv of `rank` (`x`) and its place on rep[rank] (`y`): the same count,
 * to the image of the peer; 3 for a send's route. */
static gboolean
quotient_p2p(Quotient *q, guint rank, const SimparP2p *x, const SimparP2p *y, gboolean send)
{
    if (x->count != y->count || y->peer != q->rep[x->peer])
        return FALSE;
    QuotientFlow flow = {G_MAXUINT, rank, x->peer}, image = {G_MAXUINT, q->rep[rank], y->peer};
    return quotient_flow(q, rank, x->peer, send, &flow, &image);
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
        if ((x->kind == SIMPAR_OP_SEND || x->kind == SIMPAR_OP_RECV) &&
            !quotient_p2p(q, rank, &x->u.p2p, &y->u.p2p, x->kind == SIMPAR_OP_SEND))
            return FALSE;
    }
    return TRUE;
}

/* The fiber size of the candidate, or 0 when a check fails; in links mode the links the
 * quotient scales, with their bandwidths, appended to `scaled` and `scaled_bw`. */
static guint
quotient_check(Quotient *q, GPtrArray *scaled, GArray *scaled_bw)
{
    guint k = q->fiber = quotient_nodes(q->r, q->rep);
    memset(q->idle, 0, q->r->colls->len * sizeof *q->idle);
    if (q->by_links) {
        g_hash_table_remove_all(q->images);
        g_hash_table_remove_all(q->phi);
    }
    for (guint rank = 0; k > 1 && rank < q->r->n_ranks; rank++)
        if (!quotient_rank(q, rank))
            return 0;
    if (k > 1 && q->by_links && !quotient_links_check(q, scaled, scaled_bw))
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
    *out = (SimparQuotient){NULL, NULL, n, 1, NULL, NULL};
    if (run->mode != SIMPAR_COLL_MODE_FUSED || run->every_rank || n < 2)
        return FALSE;
    g_autoptr(GPtrArray) probe = g_ptr_array_new();
    gboolean by_links = simpar_platform_route_shape(run->net, run->gpus[0], run->gpus[1]) < 0;
    if (by_links && !simpar_platform_route_links(run->net, run->gpus[0], run->gpus[1], probe))
        return FALSE; /* neither shapes nor links */
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
    Quotient q = {r,    rep,  pos,  idle, g_new0(GArray **, r->colls->len + 1), 0, by_links,
                  NULL, NULL, NULL, NULL};
    if (by_links) {
        q.images = g_hash_table_new_full(quotient_flow_hash, quotient_flow_equal, g_free,
                                         quotient_image_free);
        q.phi = g_hash_table_new(NULL, NULL);
        q.route_a = g_ptr_array_new();
        q.route_b = g_ptr_array_new();
    }
    GPtrArray *scaled = g_ptr_array_new(), *scaled_found = NULL;
    GArray *scaled_bw = g_array_new(FALSE, FALSE, sizeof(double)), *scaled_bw_found = NULL;
    for (guint c = 0; c < n_coords; c++)
        mod[c] = size[c];
    for (guint c = n_coords; c-- > 0;) {
        for (guint d = 1; d < size[c]; d++) {
            if (size[c] % d != 0)
                continue;
            mod[c] = d;
            quotient_map(n, n_coords, stride, size, mod, rep);
            g_ptr_array_set_size(scaled, 0);
            g_array_set_size(scaled_bw, 0);
            guint k = quotient_check(&q, scaled, scaled_bw);
            if (k > 0) {
                fiber = k;
                g_free(found);
                found = g_memdup2(idle, (r->colls->len + 1) * sizeof *idle);
                g_clear_pointer(&scaled_found, g_ptr_array_unref);
                g_clear_pointer(&scaled_bw_found, g_array_unref);
                scaled_found = g_ptr_array_copy(scaled, NULL, NULL);
                scaled_bw_found = g_array_copy(scaled_bw);
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
    if (by_links) {
        g_hash_table_unref(q.images);
        g_hash_table_unref(q.phi);
        g_ptr_array_unref(q.route_a);
        g_ptr_array_unref(q.route_b);
    }
    g_ptr_array_unref(scaled);
    g_array_unref(scaled_bw);
    if (fiber == 1) {
        g_free(rep);
        return FALSE;
    }
    quotient_map(n, n_coords, stride, size, mod, rep);
    *out = (SimparQuotient){rep, found, n / fiber, fiber, NULL, NULL};
    if (by_links) {
        out->scaled = scaled_found, out->scaled_bw = scaled_bw_found;
    }
    return TRUE;
}

void
simpar_quotient_clear(SimparQuotient *q)
{
    g_clear_pointer(&q->rep, g_free);
    g_clear_pointer(&q->idle, g_free);
    g_clear_pointer(&q->scaled, g_ptr_array_unref);
    g_clear_pointer(&q->scaled_bw, g_array_unref);
}

/* ---------------------------------------------------- what the SimGrid backend simulates */

/* Sends member m makes in one call of the collective: exact, every round's; fused, one per peer
 * it sends to. */
static double
replay_member_sends(SimparReplay *r, guint coll, guint m)
{
    const SimparReplayColl *c = &g_array_index(r->colls, SimparReplayColl, coll);
    double n = c->group.n;
    if (r->run->mode == SIMPAR_COLL_MODE_EXACT && c->algo == simpar_coll_ring())
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
            if ((quotient && q.idle[coll]) || g_array_index(r->colls, SimparReplayColl, coll).idle)
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
