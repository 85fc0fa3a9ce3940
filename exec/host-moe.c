/* host-moe.c - the math of the mixture-of-experts ops (SimparMoe, models/schedule.h) in double
 * precision: router scores, the permutation into the all-to-all's expert-major blocks and back
 * (or the all-gather dispatcher's local permutation of the gathered tokens), the blocks'
 * reordering around the grouped GEMMs, and DeepEP's hops (rows gathered by the
 * routing, summed back). The routing comes from models/moe.c. */
#include "exec-private.h"
#include "moe.h"
#include <math.h>
#include <string.h>

/* The chosen experts' scores of one token: softmax over the chosen logits, or sigmoids
 * normalised over the chosen ones (their sum into *sum when not NULL). */
static void
moe_scores(const SimparMoe *m, const double *logit, const guint *chosen, double *g, double *sum)
{
    double most = -INFINITY, total = 0;
    for (guint j = 0; j < m->top_k; j++)
        most = MAX(most, logit[chosen[j]]);
    for (guint j = 0; j < m->top_k; j++) {
        double l = logit[chosen[j]];
        g[j] = m->router == SIMPAR_ROUTER_SIGMOID ? 1.0 / (1.0 + exp(-l)) : exp(l - most);
        total += g[j];
    }
    for (guint j = 0; j < m->top_k; j++)
        g[j] /= total;
    if (sum != NULL)
        *sum = total;
}

static void
moe_gate(const SimparHostBufs *host, const SimparOp *op)
{
    const SimparMoe *m = &op->u.moe;
    const double *logits = simpar_host_bufs_view(host, m->in[0]);
    double *scores = simpar_host_bufs_view(host, m->out[0]);
    g_autofree guint *chosen = g_new(guint, m->top_k);
    g_autofree double *g = g_new(double, m->top_k);
    if (m->gather > 0) /* Megatron-Core's dense probs: 0 off the chosen experts */
        memset(scores, 0, sizeof(double) * m->tokens * m->experts);
    for (guint t = 0; t < m->tokens; t++) {
        simpar_moe_choose(m, m->token0 + t, chosen);
        moe_scores(m, logits + (gsize) t * m->experts, chosen, g, NULL);
        for (guint j = 0; j < m->top_k; j++)
            scores[(gsize) t * (m->gather > 0 ? m->experts : m->top_k) +
                   (m->gather > 0 ? chosen[j] : j)] = g[j];
    }
}

/* softmax: dl_j = g_j (dg_j - sum_i g_i dg_i); sigmoid: g_j = s_j / S, so dl_j = s_j (1 - s_j)
 * (dg_j - sum_i g_i dg_i) / S. */
static void
moe_gate_bwd(const SimparHostBufs *host, const SimparOp *op)
{
    const SimparMoe *m = &op->u.moe;
    const double *logits = simpar_host_bufs_view(host, m->in[0]);
    const double *dscores = simpar_host_bufs_view(host, m->in[1]);
    double *dlogits = simpar_host_bufs_view(host, m->out[0]);
    g_autofree guint *chosen = g_new(guint, m->top_k);
    g_autofree double *g = g_new(double, m->top_k), *dg = g_new(double, m->top_k);
    memset(dlogits, 0, sizeof(double) * m->tokens * m->experts);
    for (guint t = 0; t < m->tokens; t++) {
        const double *l = logits + (gsize) t * m->experts;
        double sum, dot = 0;
        simpar_moe_choose(m, m->token0 + t, chosen);
        moe_scores(m, l, chosen, g, &sum);
        for (guint j = 0; j < m->top_k; j++) /* the chosen experts' (dense: their columns) */
            dg[j] = m->gather > 0 ? dscores[(gsize) t * m->experts + chosen[j]]
                                  : dscores[(gsize) t * m->top_k + j];
        for (guint j = 0; j < m->top_k; j++)
            dot += g[j] * dg[j];
        for (guint j = 0; j < m->top_k; j++) {
            double d = dg[j] - dot, e = l[chosen[j]];
            double s = 1.0 / (1.0 + exp(-e));
            dlogits[(gsize) t * m->experts + chosen[j]] =
                m->router == SIMPAR_ROUTER_SIGMOID ? s * (1 - s) * d / sum : g[j] * d;
        }
    }
}

/* The rows on the op's token side: the rank's tokens, or the all-gather dispatcher's gathered
 * ones (schedule.h). */
static gsize
moe_tokens(const SimparMoe *m)
{
    return (gsize) m->tokens * MAX(m->gather, 1u);
}

/* The elements of the expert rows' side: every expert's blocks [E x capacity x hidden], or the
 * all-gather dispatcher's local experts' [E/ep x gather x capacity x hidden]. */
static gsize
moe_blocks(const SimparMoe *m)
{
    gsize blocks = m->gather > 0 ? (gsize) m->experts / m->ep * m->gather : m->experts;
    return blocks * m->capacity * m->hidden;
}

/* Each choice's row on the expert side (-1: dropped, or another rank's expert), and where its
 * score lies: choice i, or the dense probs' (token, expert) (schedule.h). */
typedef struct {
    gint64 *rows;
    gsize *score;
} MoeRoute;

static void
moe_route(MoeRoute *r, const SimparMoe *m)
{
    gsize n = moe_tokens(m) * m->top_k;
    g_autofree guint *experts = g_new(guint, n);
    r->rows = g_new(gint64, n), r->score = g_new(gsize, n);
    if (m->gather > 0)
        simpar_moe_gathered_rows(m, r->rows, experts);
    else
        simpar_moe_rows(m, r->rows, experts);
    for (gsize i = 0; i < n; i++)
        r->score[i] = m->gather > 0 ? i / m->top_k * m->experts + experts[i] : i;
}

static void
moe_route_clear(MoeRoute *r)
{
    g_free(r->rows), g_free(r->score);
}

static void
moe_dispatch(const SimparHostBufs *host, const SimparOp *op)
{
    const SimparMoe *m = &op->u.moe;
    const double *x = simpar_host_bufs_view(host, m->in[0]);
    double *send = simpar_host_bufs_view(host, m->out[0]);
    MoeRoute r;
    moe_route(&r, m);
    memset(send, 0, sizeof(double) * moe_blocks(m));
    for (gsize i = 0; i < moe_tokens(m) * m->top_k; i++)
        if (r.rows[i] >= 0)
            memcpy(send + r.rows[i] * m->hidden, x + i / m->top_k * m->hidden,
                   sizeof(double) * m->hidden);
    moe_route_clear(&r);
}

static void
moe_dispatch_bwd(const SimparHostBufs *host, const SimparOp *op)
{
    const SimparMoe *m = &op->u.moe;
    const double *dsend = simpar_host_bufs_view(host, m->in[0]);
    double *dx = simpar_host_bufs_view(host, m->out[0]);
    MoeRoute r;
    moe_route(&r, m);
    memset(dx, 0, sizeof(double) * moe_tokens(m) * m->hidden);
    for (gsize i = 0; i < moe_tokens(m) * m->top_k; i++)
        if (r.rows[i] >= 0)
            for (guint c = 0; c < m->hidden; c++)
                dx[i / m->top_k * m->hidden + c] += dsend[r.rows[i] * m->hidden + c];
    moe_route_clear(&r);
}

static void
moe_combine(const SimparHostBufs *host, const SimparOp *op)
{
    const SimparMoe *m = &op->u.moe;
    const double *back = simpar_host_bufs_view(host, m->in[0]);
    const double *scores = simpar_host_bufs_view(host, m->in[1]);
    double *y = simpar_host_bufs_view(host, m->out[0]);
    MoeRoute r;
    moe_route(&r, m);
    memset(y, 0, sizeof(double) * moe_tokens(m) * m->hidden);
    for (gsize i = 0; i < moe_tokens(m) * m->top_k; i++)
        if (r.rows[i] >= 0)
            for (guint c = 0; c < m->hidden; c++)
                y[i / m->top_k * m->hidden + c] +=
                    scores[r.score[i]] * back[r.rows[i] * m->hidden + c];
    moe_route_clear(&r);
}

static void
moe_combine_bwd(const SimparHostBufs *host, const SimparOp *op)
{
    const SimparMoe *m = &op->u.moe;
    const double *dy = simpar_host_bufs_view(host, m->in[0]);
    const double *scores = simpar_host_bufs_view(host, m->in[1]);
    const double *back = simpar_host_bufs_view(host, m->in[2]);
    double *dback = simpar_host_bufs_view(host, m->out[0]);
    double *dscores = simpar_host_bufs_view(host, m->out[1]);
    MoeRoute r;
    moe_route(&r, m);
    memset(dback, 0, sizeof(double) * moe_blocks(m));
    if (m->gather > 0)
        memset(dscores, 0, sizeof(double) * moe_tokens(m) * m->experts);
    for (gsize i = 0; i < moe_tokens(m) * m->top_k; i++) {
        const double *d = dy + i / m->top_k * m->hidden;
        double dot = 0;
        if (r.rows[i] >= 0)
            for (guint c = 0; c < m->hidden; c++) {
                dback[r.rows[i] * m->hidden + c] = scores[r.score[i]] * d[c];
                dot += d[c] * back[r.rows[i] * m->hidden + c];
            }
        if (r.rows[i] >= 0 || m->gather == 0)
            dscores[r.score[i]] = dot;
    }
    moe_route_clear(&r);
}

/* SORT: [ep][E/ep] blocks of capacity x hidden -> [E/ep][ep]; UNSORT the reverse. */
static void
moe_sort(const SimparHostBufs *host, const SimparOp *op)
{
    const SimparMoe *m = &op->u.moe;
    const double *in = simpar_host_bufs_view(host, m->in[0]);
    double *out = simpar_host_bufs_view(host, m->out[0]);
    gsize local = m->experts / m->ep, block = (gsize) m->capacity * m->hidden;
    gsize sources = (gsize) m->ep * MAX(m->etp, 1u); /* etp x ep after an expert-TP gather */
    gboolean sort = op->kind == SIMPAR_OP_MOE_SORT;
    for (gsize p = 0; p < sources; p++)
        for (gsize e = 0; e < local; e++) {
            gsize by_rank = (p * local + e) * block, by_expert = (e * sources + p) * block;
            memcpy(out + (sort ? by_expert : by_rank), in + (sort ? by_rank : by_expert),
                   sizeof(double) * block);
        }
}

/* DeepEP's hops (schedule.h): each b row's a row (-1: padding) and, hop 2, its choice. */
typedef struct {
    gint64 *src;
    guint *choice;
    gsize rows, a_rows; /* b rows, a rows */
    gsize w;            /* the dispatch's rows: a token and its scores */
    gsize s;            /* of them, the scores: each choice's once per expert-TP rank */
} MoeHop;

static void
moe_hop_init(MoeHop *hp, const SimparMoe *m)
{
    gsize R = m->node_ranks, nodes = simpar_moe_hop_ranks(m) / R;
    gsize a_rows[3] = {m->tokens, nodes * m->cap_node, R * m->cap_gpu};
    hp->choice = g_new0(guint, (gsize) m->experts * m->capacity * MAX(m->etp, 1u));
    hp->src = simpar_moe_hop_map(m, hp->choice, &hp->rows);
    hp->a_rows = a_rows[m->hop];
    hp->s = simpar_moe_hop_scores(m);
    hp->w = (gsize) m->hidden + hp->s;
}

static void
moe_hop_clear(MoeHop *hp)
{
    g_free(hp->src), g_free(hp->choice);
}

/* The dispatch: b rows gathered from a rows; hop 0 joins a token and its scores, hop 2 keeps a
 * row's token and the score of its expert. */
static void
moe_hop(const SimparHostBufs *host, const SimparOp *op)
{
    const SimparMoe *m = &op->u.moe;
    MoeHop hp;
    moe_hop_init(&hp, m);
    gsize h = m->hidden, k = m->top_k, w = hp.w;
    const double *a = simpar_host_bufs_view(host, m->in[0]);
    double *b = simpar_host_bufs_view(host, m->out[0]);
    gsize width = m->hop == 2 ? h : w;
    memset(b, 0, sizeof(double) * hp.rows * width);
    if (m->hop == 2)
        memset(simpar_host_bufs_view(host, m->out[1]), 0, sizeof(double) * hp.rows);
    for (gsize i = 0; i < hp.rows; i++) {
        gint64 j = hp.src[i];
        if (j < 0)
            continue;
        if (m->hop == 0) {
            const double *scores = simpar_host_bufs_view(host, m->in[1]);
            memcpy(b + i * w, a + j * h, sizeof(double) * h);
            for (gsize c = 0; c < hp.s; c++) /* choice c / etp's score for its c % etp copy */
                b[i * w + h + c] = scores[j * k + c * k / hp.s];
        } else if (m->hop == 1) {
            memcpy(b + i * w, a + j * w, sizeof(double) * w);
        } else {
            double *sc = simpar_host_bufs_view(host, m->out[1]);
            memcpy(b + i * h, a + j * w, sizeof(double) * h);
            sc[i] = a[j * w + h + hp.choice[i]];
        }
    }
    moe_hop_clear(&hp);
}

/* Its backward: each b row's gradient added into its a row (a token's copies summed; a choice's
 * score gradient lies on its expert's row only). */
static void
moe_hop_bwd(const SimparHostBufs *host, const SimparOp *op)
{
    const SimparMoe *m = &op->u.moe;
    MoeHop hp;
    moe_hop_init(&hp, m);
    gsize h = m->hidden, k = m->top_k, w = hp.w;
    const double *db = simpar_host_bufs_view(host, m->in[0]);
    double *da = simpar_host_bufs_view(host, m->out[0]);
    double *dscores = m->hop == 0 ? simpar_host_bufs_view(host, m->out[1]) : NULL;
    memset(da, 0, sizeof(double) * hp.a_rows * (m->hop == 0 ? h : w));
    if (dscores != NULL)
        memset(dscores, 0, sizeof(double) * m->tokens * k);
    for (gsize i = 0; i < hp.rows; i++) {
        gint64 j = hp.src[i];
        if (j < 0)
            continue;
        if (m->hop == 0) {
            for (gsize c = 0; c < h; c++)
                da[j * h + c] += db[i * w + c];
            for (gsize c = 0; c < hp.s; c++)
                dscores[j * k + c * k / hp.s] += db[i * w + h + c];
        } else if (m->hop == 1) {
            for (gsize c = 0; c < w; c++)
                da[j * w + c] += db[i * w + c];
        } else {
            const double *dsc = simpar_host_bufs_view(host, m->in[1]);
            for (gsize c = 0; c < h; c++)
                da[j * w + c] += db[i * h + c];
            da[j * w + h + hp.choice[i]] += dsc[i];
        }
    }
    moe_hop_clear(&hp);
}

/* The combine: each a row the sum of its b rows, hop 2's weighted by their scores. */
static void
moe_hop_reduce(const SimparHostBufs *host, const SimparOp *op)
{
    const SimparMoe *m = &op->u.moe;
    MoeHop hp;
    moe_hop_init(&hp, m);
    gsize h = m->hidden;
    const double *b = simpar_host_bufs_view(host, m->in[0]);
    const double *sc = m->hop == 2 ? simpar_host_bufs_view(host, m->in[1]) : NULL;
    double *a = simpar_host_bufs_view(host, m->out[0]);
    memset(a, 0, sizeof(double) * hp.a_rows * h);
    for (gsize i = 0; i < hp.rows; i++)
        if (hp.src[i] >= 0)
            for (gsize c = 0; c < h; c++)
                a[hp.src[i] * h + c] += (sc != NULL ? sc[i] : 1) * b[i * h + c];
    moe_hop_clear(&hp);
}

/* Its backward: each b row gets its a row's gradient (hop 2: times its score, and the score's
 * gradient the dot product with the row). */
static void
moe_hop_reduce_bwd(const SimparHostBufs *host, const SimparOp *op)
{
    const SimparMoe *m = &op->u.moe;
    MoeHop hp;
    moe_hop_init(&hp, m);
    gsize h = m->hidden;
    const double *da = simpar_host_bufs_view(host, m->in[0]);
    const double *sc = m->hop == 2 ? simpar_host_bufs_view(host, m->in[1]) : NULL;
    const double *rows = m->hop == 2 ? simpar_host_bufs_view(host, m->in[2]) : NULL;
    double *db = simpar_host_bufs_view(host, m->out[0]);
    double *dsc = m->hop == 2 ? simpar_host_bufs_view(host, m->out[1]) : NULL;
    memset(db, 0, sizeof(double) * hp.rows * h);
    for (gsize i = 0; i < hp.rows; i++) {
        gint64 j = hp.src[i];
        double dot = 0;
        for (gsize c = 0; j >= 0 && c < h; c++) {
            db[i * h + c] = (sc != NULL ? sc[i] : 1) * da[j * h + c];
            dot += rows != NULL ? da[j * h + c] * rows[i * h + c] : 0;
        }
        if (dsc != NULL)
            dsc[i] = dot;
    }
    moe_hop_clear(&hp);
}

void
simpar_kern_moe(const SimparHostBufs *host, const SimparOp *op)
{
    switch (op->kind) {
    case SIMPAR_OP_MOE_HOP:
        moe_hop(host, op);
        break;
    case SIMPAR_OP_MOE_HOP_BWD:
        moe_hop_bwd(host, op);
        break;
    case SIMPAR_OP_MOE_HOP_REDUCE:
        moe_hop_reduce(host, op);
        break;
    case SIMPAR_OP_MOE_HOP_REDUCE_BWD:
        moe_hop_reduce_bwd(host, op);
        break;
    case SIMPAR_OP_MOE_GATE:
        moe_gate(host, op);
        break;
    case SIMPAR_OP_MOE_GATE_BWD:
        moe_gate_bwd(host, op);
        break;
    case SIMPAR_OP_MOE_DISPATCH:
        moe_dispatch(host, op);
        break;
    case SIMPAR_OP_MOE_DISPATCH_BWD:
        moe_dispatch_bwd(host, op);
        break;
    case SIMPAR_OP_MOE_COMBINE:
        moe_combine(host, op);
        break;
    case SIMPAR_OP_MOE_COMBINE_BWD:
        moe_combine_bwd(host, op);
        break;
    default:
        g_assert(op->kind == SIMPAR_OP_MOE_SORT || op->kind == SIMPAR_OP_MOE_UNSORT);
        moe_sort(host, op);
        break;
    }
}
