/* host-moe.c - the math of the mixture-of-experts ops (SimparMoe, models/schedule.h) in double
 * precision: router scores, the permutation into the all-to-all's expert-major blocks and back,
 * and the blocks' reordering around the grouped GEMMs. The routing comes from models/moe.c. */
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
    for (guint t = 0; t < m->tokens; t++) {
        simpar_moe_choose(m, m->token0 + t, chosen);
        moe_scores(m, logits + (gsize) t * m->experts, chosen, scores + (gsize) t * m->top_k, NULL);
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
    g_autofree double *g = g_new(double, m->top_k);
    memset(dlogits, 0, sizeof(double) * m->tokens * m->experts);
    for (guint t = 0; t < m->tokens; t++) {
        const double *l = logits + (gsize) t * m->experts, *dg = dscores + (gsize) t * m->top_k;
        double sum, dot = 0;
        simpar_moe_choose(m, m->token0 + t, chosen);
        moe_scores(m, l, chosen, g, &sum);
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

static gsize
moe_blocks(const SimparMoe *m)
{
    return (gsize) m->experts * m->capacity * m->hidden;
}

static gint64 *
moe_rows(const SimparMoe *m)
{
    gint64 *rows = g_new(gint64, (gsize) m->tokens * m->top_k);
    simpar_moe_rows(m, rows, NULL);
    return rows; /* (transfer full) */
}

static void
moe_dispatch(const SimparHostBufs *host, const SimparOp *op)
{
    const SimparMoe *m = &op->u.moe;
    const double *x = simpar_host_bufs_view(host, m->in[0]);
    double *send = simpar_host_bufs_view(host, m->out[0]);
    g_autofree gint64 *rows = moe_rows(m);
    memset(send, 0, sizeof(double) * moe_blocks(m));
    for (gsize i = 0; i < (gsize) m->tokens * m->top_k; i++)
        if (rows[i] >= 0)
            memcpy(send + rows[i] * m->hidden, x + i / m->top_k * m->hidden,
                   sizeof(double) * m->hidden);
}

static void
moe_dispatch_bwd(const SimparHostBufs *host, const SimparOp *op)
{
    const SimparMoe *m = &op->u.moe;
    const double *dsend = simpar_host_bufs_view(host, m->in[0]);
    double *dx = simpar_host_bufs_view(host, m->out[0]);
    g_autofree gint64 *rows = moe_rows(m);
    memset(dx, 0, sizeof(double) * m->tokens * m->hidden);
    for (gsize i = 0; i < (gsize) m->tokens * m->top_k; i++)
        if (rows[i] >= 0)
            for (guint c = 0; c < m->hidden; c++)
                dx[i / m->top_k * m->hidden + c] += dsend[rows[i] * m->hidden + c];
}

static void
moe_combine(const SimparHostBufs *host, const SimparOp *op)
{
    const SimparMoe *m = &op->u.moe;
    const double *back = simpar_host_bufs_view(host, m->in[0]);
    const double *scores = simpar_host_bufs_view(host, m->in[1]);
    double *y = simpar_host_bufs_view(host, m->out[0]);
    g_autofree gint64 *rows = moe_rows(m);
    memset(y, 0, sizeof(double) * m->tokens * m->hidden);
    for (gsize i = 0; i < (gsize) m->tokens * m->top_k; i++)
        if (rows[i] >= 0)
            for (guint c = 0; c < m->hidden; c++)
                y[i / m->top_k * m->hidden + c] += scores[i] * back[rows[i] * m->hidden + c];
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
    g_autofree gint64 *rows = moe_rows(m);
    memset(dback, 0, sizeof(double) * moe_blocks(m));
    for (gsize i = 0; i < (gsize) m->tokens * m->top_k; i++) {
        const double *d = dy + i / m->top_k * m->hidden;
        double dot = 0;
        if (rows[i] >= 0)
            for (guint c = 0; c < m->hidden; c++) {
                dback[rows[i] * m->hidden + c] = scores[i] * d[c];
                dot += d[c] * back[rows[i] * m->hidden + c];
            }
        dscores[i] = dot;
    }
}

/* SORT: [ep][E/ep] blocks of capacity x hidden -> [E/ep][ep]; UNSORT the reverse. */
static void
moe_sort(const SimparHostBufs *host, const SimparOp *op)
{
    const SimparMoe *m = &op->u.moe;
    const double *in = simpar_host_bufs_view(host, m->in[0]);
    double *out = simpar_host_bufs_view(host, m->out[0]);
    gsize local = m->experts / m->ep, block = (gsize) m->capacity * m->hidden;
    gboolean sort = op->kind == SIMPAR_OP_MOE_SORT;
    for (gsize p = 0; p < m->ep; p++)
        for (gsize e = 0; e < local; e++) {
            gsize by_rank = (p * local + e) * block, by_expert = (e * m->ep + p) * block;
            memcpy(out + (sort ? by_expert : by_rank), in + (sort ? by_rank : by_expert),
                   sizeof(double) * block);
        }
}

void
simpar_kern_moe(const SimparHostBufs *host, const SimparOp *op)
{
    switch (op->kind) {
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
