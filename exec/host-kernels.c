/* host-kernels.c - the math of every compute op kind, in double precision with plain loops.
 *
 * Each kernel follows its comment in models/schedule.h literally; sums run in index order so
 * results are deterministic. simpar_host_run() runs simpar_schedule_check() first, which proves
 * every view inside its buffer and every parameter usable, so the kernels never check.
 */
#include "exec-private.h"
#include <math.h>

typedef void (*KernFn)(const SimparHostBufs *host, const SimparOp *op);

/* ---- GEMM --------------------------------------------------------------------------------- */

static double
kern_gemm_dot(const SimparGemm *g, const double *a, const double *b, gsize i, gsize j)
{
    double sum = 0.0;
    for (gsize p = 0; p < g->k; p++) {
        double av = g->trans_a ? a[p * g->m + i] : a[i * g->k + p];
        double bv = g->trans_b ? b[j * g->k + p] : b[p * g->n + j];
        sum += av * bv;
    }
    return sum;
}

static void
kern_gemm(const SimparHostBufs *host, const SimparOp *op)
{
    const SimparGemm *g = &op->u.gemm;
    const double *a = simpar_host_bufs_view(host, g->a);
    const double *b = simpar_host_bufs_view(host, g->b);
    double *c = simpar_host_bufs_view(host, g->c);
    if (g->m == 0 || g->n == 0)
        return;
    for (gsize bi = 0; bi < g->batch; bi++) {
        const double *ab = g->k > 0 ? a + bi * g->stride_a : NULL;
        const double *bb = g->k > 0 ? b + bi * g->stride_b : NULL;
        double *cb = c + bi * g->stride_c;
        for (gsize i = 0; i < g->m; i++) {
            for (gsize j = 0; j < g->n; j++) {
                double dot = kern_gemm_dot(g, ab, bb, i, j);
                cb[i * g->n + j] = g->accumulate ? cb[i * g->n + j] + dot : dot;
            }
        }
    }
}

/* ---- layer norm --------------------------------------------------------------------------- */

static void
kern_ln_stats(const SimparHostBufs *host, const SimparOp *op)
{
    const SimparKernel *k = &op->u.kern;
    const double *x = simpar_host_bufs_view(host, k->in[0]);
    double *stats = simpar_host_bufs_view(host, k->out[0]);
    for (gsize r = 0; r < k->rows; r++) {
        double s1 = 0.0, s2 = 0.0;
        for (gsize c = 0; c < k->cols; c++) {
            double v = x[r * k->cols + c];
            s1 += v;
            s2 += v * v;
        }
        stats[r] = s1;
        stats[k->rows + r] = s2;
    }
}

static void
kern_ln_apply(const SimparHostBufs *host, const SimparOp *op)
{
    const SimparKernel *k = &op->u.kern;
    const double *x = simpar_host_bufs_view(host, k->in[0]);
    const double *stats = simpar_host_bufs_view(host, k->in[1]);
    const double *gamma = simpar_host_bufs_view(host, k->in[2]);
    const double *beta = k->rms ? NULL : simpar_host_bufs_view(host, k->in[3]);
    double *y = simpar_host_bufs_view(host, k->out[0]);
    double *xhat = simpar_host_bufs_view(host, k->out[1]);
    double *rstd = simpar_host_bufs_view(host, k->out[2]);
    double hidden = (double) k->hidden;
    for (gsize r = 0; r < k->rows; r++) {
        double mean = k->rms ? 0.0 : stats[r] / hidden;
        double var = stats[k->rows + r] / hidden - mean * mean;
        double rs = 1.0 / sqrt(var + k->eps);
        for (gsize c = 0; c < k->cols; c++) {
            gsize e = r * k->cols + c;
            double xh = (x[e] - mean) * rs;
            xhat[e] = xh;
            y[e] = xh * gamma[c] + (beta != NULL ? beta[c] : 0.0);
        }
        rstd[r] = rs;
    }
}

static void
kern_ln_bwd_stats(const SimparHostBufs *host, const SimparOp *op)
{
    const SimparKernel *k = &op->u.kern;
    const double *dy = simpar_host_bufs_view(host, k->in[0]);
    const double *xhat = simpar_host_bufs_view(host, k->in[1]);
    const double *gamma = simpar_host_bufs_view(host, k->in[2]);
    double *stats = simpar_host_bufs_view(host, k->out[0]);
    double *dgamma = simpar_host_bufs_view(host, k->out[1]);
    double *dbeta = k->rms ? NULL : simpar_host_bufs_view(host, k->out[2]);
    for (gsize c = 0; c < k->cols; c++) {
        dgamma[c] = 0.0;
        if (dbeta != NULL)
            dbeta[c] = 0.0;
    }
    for (gsize r = 0; r < k->rows; r++) {
        double s1 = 0.0, s2 = 0.0;
        for (gsize c = 0; c < k->cols; c++) {
            gsize e = r * k->cols + c;
            double dyg = dy[e] * gamma[c];
            s1 += dyg;
            s2 += dyg * xhat[e];
            dgamma[c] += dy[e] * xhat[e];
            if (dbeta != NULL)
                dbeta[c] += dy[e];
        }
        stats[r] = k->rms ? 0.0 : s1;
        stats[k->rows + r] = s2;
    }
}

static void
kern_ln_bwd_apply(const SimparHostBufs *host, const SimparOp *op)
{
    const SimparKernel *k = &op->u.kern;
    const double *dy = simpar_host_bufs_view(host, k->in[0]);
    const double *xhat = simpar_host_bufs_view(host, k->in[1]);
    const double *gamma = simpar_host_bufs_view(host, k->in[2]);
    const double *rstd = simpar_host_bufs_view(host, k->in[3]);
    const double *stats = simpar_host_bufs_view(host, k->in[4]);
    double *dx = simpar_host_bufs_view(host, k->out[0]);
    double hidden = (double) k->hidden;
    for (gsize r = 0; r < k->rows; r++) {
        double m1 = k->rms ? 0.0 : stats[r] / hidden, m2 = stats[k->rows + r] / hidden;
        double rs = rstd[r];
        for (gsize c = 0; c < k->cols; c++) {
            gsize e = r * k->cols + c;
            dx[e] = rs * (dy[e] * gamma[c] - m1 - xhat[e] * m2);
        }
    }
}

/* ---- elementwise -------------------------------------------------------------------------- */

static void
kern_bias_add(const SimparHostBufs *host, const SimparOp *op)
{
    const SimparKernel *k = &op->u.kern;
    const double *bias = simpar_host_bufs_view(host, k->in[0]);
    double *y = simpar_host_bufs_view(host, k->out[0]);
    for (gsize r = 0; r < k->rows; r++)
        for (gsize c = 0; c < k->cols; c++)
            y[r * k->cols + c] += bias[c];
}

static void
kern_bias_grad(const SimparHostBufs *host, const SimparOp *op)
{
    const SimparKernel *k = &op->u.kern;
    const double *dy = simpar_host_bufs_view(host, k->in[0]);
    double *db = simpar_host_bufs_view(host, k->out[0]);
    for (gsize c = 0; c < k->cols; c++) {
        double sum = 0.0;
        for (gsize r = 0; r < k->rows; r++)
            sum += dy[r * k->cols + c];
        db[c] = sum;
    }
}

#define KERN_GELU_C 0.7978845608028654 /* sqrt(2/pi) */
#define KERN_GELU_A 0.044715

static void
kern_gelu(const SimparHostBufs *host, const SimparOp *op)
{
    const SimparKernel *k = &op->u.kern;
    const double *x = simpar_host_bufs_view(host, k->in[0]);
    double *y = simpar_host_bufs_view(host, k->out[0]);
    gsize n = (gsize) k->rows * k->cols;
    for (gsize e = 0; e < n; e++) {
        double v = x[e];
        y[e] = 0.5 * v * (1.0 + tanh(KERN_GELU_C * (v + KERN_GELU_A * v * v * v)));
    }
}

/* d/dx of 0.5 x (1 + tanh(u)), u = c (x + a x^3). */
static void
kern_gelu_bwd(const SimparHostBufs *host, const SimparOp *op)
{
    const SimparKernel *k = &op->u.kern;
    const double *dy = simpar_host_bufs_view(host, k->in[0]);
    const double *x = simpar_host_bufs_view(host, k->in[1]);
    double *dx = simpar_host_bufs_view(host, k->out[0]);
    gsize n = (gsize) k->rows * k->cols;
    for (gsize e = 0; e < n; e++) {
        double v = x[e];
        double t = tanh(KERN_GELU_C * (v + KERN_GELU_A * v * v * v));
        double du = KERN_GELU_C * (1.0 + 3.0 * KERN_GELU_A * v * v);
        dx[e] = dy[e] * (0.5 * (1.0 + t) + 0.5 * v * (1.0 - t * t) * du);
    }
}

static double
kern_sigmoid(double g)
{
    return 1.0 / (1.0 + exp(-g));
}

/* y = silu(g) u over the (g, u) column pairs of z. */
static void
kern_swiglu(const SimparHostBufs *host, const SimparOp *op)
{
    const SimparKernel *k = &op->u.kern;
    const double *z = simpar_host_bufs_view(host, k->in[0]);
    double *y = simpar_host_bufs_view(host, k->out[0]);
    gsize n = (gsize) k->rows * k->cols;
    for (gsize e = 0; e < n; e++) {
        double g = z[2 * e], u = z[2 * e + 1];
        y[e] = g * kern_sigmoid(g) * u;
    }
}

/* dg = dy u silu'(g), silu'(g) = sig(g) (1 + g (1 - sig(g))); du = dy silu(g). */
static void
kern_swiglu_bwd(const SimparHostBufs *host, const SimparOp *op)
{
    const SimparKernel *k = &op->u.kern;
    const double *dy = simpar_host_bufs_view(host, k->in[0]);
    const double *z = simpar_host_bufs_view(host, k->in[1]);
    double *dz = simpar_host_bufs_view(host, k->out[0]);
    gsize n = (gsize) k->rows * k->cols;
    for (gsize e = 0; e < n; e++) {
        double g = z[2 * e], u = z[2 * e + 1], sg = kern_sigmoid(g);
        dz[2 * e] = dy[e] * u * sg * (1.0 + g * (1.0 - sg));
        dz[2 * e + 1] = dy[e] * g * sg;
    }
}

/* DROPOUT and DROPOUT_BWD are the same map: multiply by keep / (1-p). */
static void
kern_dropout(const SimparHostBufs *host, const SimparOp *op)
{
    const SimparKernel *k = &op->u.kern;
    const double *x = simpar_host_bufs_view(host, k->in[0]);
    double *y = simpar_host_bufs_view(host, k->out[0]);
    double scale = 1.0 / (1.0 - k->p);
    for (gsize r = 0; r < k->rows; r++) {
        guint64 row = (k->row0 + r) * k->global_cols + k->col0;
        for (gsize c = 0; c < k->cols; c++) {
            gboolean keep = k->p == 0.0 || simpar_dropout_keep(k->seed, k->site, row + c, k->p);
            y[r * k->cols + c] = keep ? x[r * k->cols + c] * scale : 0.0;
        }
    }
}

static void
kern_add(const SimparHostBufs *host, const SimparOp *op)
{
    const SimparKernel *k = &op->u.kern;
    const double *a = simpar_host_bufs_view(host, k->in[0]);
    const double *b = simpar_host_bufs_view(host, k->in[1]);
    double *c = simpar_host_bufs_view(host, k->out[0]);
    gsize n = (gsize) k->rows * k->cols;
    for (gsize e = 0; e < n; e++)
        c[e] = a[e] + b[e];
}

/* ---- packed columns ----------------------------------------------------------------------- */

/* The element of column c of the packed block in a row of the strided one. */
static gsize
kern_pack_col(const SimparKernel *k, gsize c)
{
    return k->offset + (c / k->width) * k->stride + c % k->width;
}

static void
kern_pack_cols(const SimparHostBufs *host, const SimparOp *op)
{
    const SimparKernel *k = &op->u.kern;
    const double *w = simpar_host_bufs_view(host, k->in[0]);
    double *p = simpar_host_bufs_view(host, k->out[0]);
    for (gsize r = 0; r < k->rows; r++)
        for (gsize c = 0; c < k->cols; c++)
            p[r * k->cols + c] = w[r * k->ld + kern_pack_col(k, c)];
}

static void
kern_unpack_cols(const SimparHostBufs *host, const SimparOp *op)
{
    const SimparKernel *k = &op->u.kern;
    const double *p = simpar_host_bufs_view(host, k->in[0]);
    double *w = simpar_host_bufs_view(host, k->out[0]);
    for (gsize r = 0; r < k->rows; r++)
        for (gsize c = 0; c < k->cols; c++)
            w[r * k->ld + kern_pack_col(k, c)] = p[r * k->cols + c];
}

/* ---- attention ---------------------------------------------------------------------------- */

/* One (sequence, head) pair of an attention op, with its pointers resolved. Keys are numbered
 * kk = 0 .. n_keys-1: the sequence's own rows, or with context parallelism rank j's rows
 * kk = j s + i' of the gathered kv. */
typedef struct {
    const SimparAttention *at;
    const double *qkv;
    const double *kv; /* context parallelism: the gathered k | v, else NULL */
    gsize n, g;       /* local sequence and head */
    gsize r;          /* heads per key/value head */
    gsize cp;         /* context-parallel ranks (1: none) */
    gsize n_keys;     /* keys per sequence: s cp */
    gsize ld_qkv;     /* (nh + 2 nkv) dh; latent layout: nh dh, the q region's */
    gsize ld_kv;      /* 2 nkv dh; latent layout: nh (dk + dv), the kv region's */
    gsize ld_ctx;     /* nh * dv */
    gsize dk, dv;     /* a key's columns read at kern_attn_k (latent: without the shared pe) and
                         a value's */
    gsize kv0, pe0;   /* latent layout: where the kv and pe regions start (schedule.h) */
    double sqrt_dh;
    double scale; /* 1 / (1-p) */
} KernAttn;

static void
kern_attn_init(KernAttn *ka, const SimparAttention *at, const SimparHostBufs *host)
{
    gsize nkv = at->nkv != 0 ? at->nkv : at->nh, cp = MAX(at->cp, 1);
    gsize rows = (gsize) at->nb * at->s, dk = at->dv != 0 ? at->dh - at->dpe : at->dh;
    gsize dv = at->dv != 0 ? at->dv : at->dh;
    g_assert(at->dv == 0 || (cp == 1 && nkv == at->nh));
    *ka = (KernAttn){
        .at = at,
        .qkv = simpar_host_bufs_view(host, at->in[0]),
        .kv = cp > 1 ? simpar_host_bufs_view(host, at->in[3]) : NULL,
        .r = at->nh / nkv,
        .cp = cp,
        .n_keys = (gsize) at->s * cp,
        .ld_qkv = at->dv != 0 ? (gsize) at->nh * at->dh : (gsize) (at->nh + 2 * nkv) * at->dh,
        .ld_kv = at->dv != 0 ? at->nh * (dk + dv) : 2 * nkv * (gsize) at->dh,
        .ld_ctx = (gsize) at->nh * dv,
        .dk = dk,
        .dv = dv,
        .kv0 = rows * at->nh * at->dh,
        .pe0 = rows * at->nh * (at->dh + dk + dv),
        .sqrt_dh = sqrt((double) at->dh),
        .scale = 1.0 / (1.0 - at->p),
    };
}

/* The column of head g's q (part 0) or its group's k (1) or v (2): group g/r holds the q of
 * its r heads, then k, then v. */
static gsize
kern_attn_col(const KernAttn *ka, gsize g, guint part)
{
    gsize group = g / ka->r, slot = part == 0 ? g % ka->r : ka->r + part - 1;
    return (group * (ka->r + 2) + slot) * ka->at->dh;
}

/* Query row i of the current sequence and head, in qkv (or dqkv). */
static gsize
kern_attn_q(const KernAttn *ka, gsize i)
{
    gsize col = ka->at->dv != 0 ? ka->g * ka->at->dh : kern_attn_col(ka, ka->g, 0);
    return (ka->n * ka->at->s + i) * ka->ld_qkv + col;
}

/* Key kk's k (part 1) or v (2) of the current sequence and head, in qkv (or dqkv), or in the
 * gathered kv (or dkv) with context parallelism. */
static gsize
kern_attn_k(const KernAttn *ka, gsize kk, guint part)
{
    if (ka->at->dv != 0)
        return ka->kv0 + (ka->n * ka->at->s + kk) * ka->ld_kv + ka->g * (ka->dk + ka->dv) +
               (part - 1) * ka->dk;
    if (ka->cp == 1)
        return (ka->n * ka->at->s + kk) * ka->ld_qkv + kern_attn_col(ka, ka->g, part);
    gsize j = kk / ka->at->s, row = (j * ka->at->nb + ka->n) * ka->at->s + kk % ka->at->s;
    return row * ka->ld_kv + (ka->g / ka->r) * 2 * ka->at->dh + (part - 1) * ka->at->dh;
}

/* Latent layout: key kk's shared columns in the pe region. */
static gsize
kern_attn_pe(const KernAttn *ka, gsize kk)
{
    return ka->pe0 + (ka->n * ka->at->s + kk) * ka->at->dpe;
}

static guint64
kern_attn_qpos(const KernAttn *ka, gsize i)
{
    return simpar_cp_position((guint) ka->cp, ka->at->cp_rank, ka->at->s / 2, i);
}

static guint64
kern_attn_kpos(const KernAttn *ka, gsize kk)
{
    if (ka->cp == 1)
        return kk;
    return simpar_cp_position((guint) ka->cp, (guint) (kk / ka->at->s), ka->at->s / 2,
                              kk % ka->at->s);
}

/* Whether query row i sees the key at position kpos (causal: not past its own). */
static gboolean
kern_attn_sees_pos(const KernAttn *ka, gsize i, guint64 kpos)
{
    return !ka->at->causal || kpos <= kern_attn_qpos(ka, i);
}

static gboolean
kern_attn_sees(const KernAttn *ka, gsize i, gsize kk)
{
    return kern_attn_sees_pos(ka, i, kern_attn_kpos(ka, kk));
}

/* keep / (1-p) for probability (i, key at position kpos) of the current sequence and head,
 * indexed by the global positions. */
static double
kern_attn_keep_pos(const KernAttn *ka, gsize i, guint64 kpos)
{
    const SimparAttention *at = ka->at;
    if (at->p == 0.0)
        return 1.0;
    guint64 S = ka->n_keys;
    guint64 idx =
        (((at->batch0 + ka->n) * at->heads + at->head0 + ka->g) * S + kern_attn_qpos(ka, i)) * S +
        kpos;
    return simpar_dropout_keep(at->seed, SIMPAR_DROPOUT_ATTN, idx, at->p) ? ka->scale : 0.0;
}

static double
kern_attn_keep(const KernAttn *ka, gsize i, gsize kk)
{
    return kern_attn_keep_pos(ka, i, kern_attn_kpos(ka, kk));
}

static double
kern_dot(const double *x, const double *y, gsize n)
{
    double sum = 0.0;
    for (gsize d = 0; d < n; d++)
        sum += x[d] * y[d];
    return sum;
}

/* The buffer keys come from: qkv, or the gathered kv. */
static const double *
kern_attn_keys(const KernAttn *ka)
{
    return ka->cp > 1 ? ka->kv : ka->qkv;
}

/* q . k of key kk, unscaled; in the latent layout the key's last dpe columns are shared. */
static double
kern_attn_qk(const KernAttn *ka, const double *q, gsize kk)
{
    const double *keys = kern_attn_keys(ka);
    double dot = kern_dot(q, keys + kern_attn_k(ka, kk, 1), ka->dk);
    if (ka->at->dv != 0)
        dot += kern_dot(q + ka->dk, keys + kern_attn_pe(ka, kk), ka->at->dpe);
    return dot;
}

/* dq += ds k_kk and dk_kk += ds q, into dqkv (or dkv), whichever layout. */
static void
kern_attn_qk_bwd(const KernAttn *ka, const double *q, gsize kk, double ds, double *dq,
                 double *dkeys)
{
    const double *keys = kern_attn_keys(ka);
    const double *k = keys + kern_attn_k(ka, kk, 1);
    double *dk = dkeys + kern_attn_k(ka, kk, 1);
    for (gsize d = 0; d < ka->dk; d++) {
        dq[d] += ds * k[d];
        dk[d] += ds * q[d];
    }
    if (ka->at->dv == 0)
        return;
    const double *pe = keys + kern_attn_pe(ka, kk);
    double *dpe = dkeys + kern_attn_pe(ka, kk);
    for (gsize d = 0; d < ka->at->dpe; d++) {
        dq[ka->dk + d] += ds * pe[d];
        dpe[d] += ds * q[ka->dk + d];
    }
}

/* P row i into prow[0..n_keys): softmax of the scores, keys it does not see 0. */
static void
kern_attn_softmax(const KernAttn *ka, gsize i, double *prow)
{
    const double *q = ka->qkv + kern_attn_q(ka, i);
    double max = -INFINITY, sum = 0.0;
    for (gsize kk = 0; kk < ka->n_keys; kk++)
        if (kern_attn_sees(ka, i, kk)) {
            prow[kk] = kern_attn_qk(ka, q, kk) / ka->sqrt_dh;
            max = MAX(max, prow[kk]);
        }
    for (gsize kk = 0; kk < ka->n_keys; kk++) {
        prow[kk] = kern_attn_sees(ka, i, kk) ? exp(prow[kk] - max) : 0.0;
        sum += prow[kk];
    }
    for (gsize kk = 0; kk < ka->n_keys; kk++)
        prow[kk] /= sum;
}

/* Probability row i of the current sequence and head. */
static gsize
kern_attn_prow(const KernAttn *ka, gsize i)
{
    return ((ka->n * ka->at->nh + ka->g) * ka->at->s + i) * ka->n_keys;
}

static void
kern_attention(const SimparHostBufs *host, const SimparOp *op)
{
    const SimparAttention *at = &op->u.attn;
    double *ctx = simpar_host_bufs_view(host, at->out[0]);
    double *probs = simpar_host_bufs_view(host, at->out[1]);
    KernAttn ka;
    kern_attn_init(&ka, at, host);
    const double *keys = kern_attn_keys(&ka);
    for (ka.n = 0; ka.n < at->nb; ka.n++) {
        for (ka.g = 0; ka.g < at->nh; ka.g++) {
            for (gsize i = 0; i < at->s; i++) {
                double *prow = probs + kern_attn_prow(&ka, i);
                double *crow = ctx + (ka.n * at->s + i) * ka.ld_ctx + ka.g * ka.dv;
                kern_attn_softmax(&ka, i, prow);
                for (gsize d = 0; d < ka.dv; d++)
                    crow[d] = 0.0;
                for (gsize kk = 0; kk < ka.n_keys; kk++) {
                    if (!kern_attn_sees(&ka, i, kk))
                        continue;
                    double w = prow[kk] * kern_attn_keep(&ka, i, kk);
                    const double *v = keys + kern_attn_k(&ka, kk, 2);
                    for (gsize d = 0; d < ka.dv; d++)
                        crow[d] += w * v[d];
                }
            }
        }
    }
}

/* Accumulated through dqkv (and dkv): dv_k += Pd_ik dctx_i, dq_i += dS_ik k_k, dk_k += dS_ik
 * q_i; dq and dk are divided by sqrt(dh) once all rows are in (kern_attn_bwd_scale). dp is
 * scratch[n_keys]. */
static void
kern_attn_bwd_row(const KernAttn *ka, gsize i, const double *prow, const double *dctx, double *dqkv,
                  double *dkeys, double *dp)
{
    const double *q = ka->qkv + kern_attn_q(ka, i), *keys = kern_attn_keys(ka);
    double dot = 0.0;
    for (gsize kk = 0; kk < ka->n_keys; kk++) {
        if (!kern_attn_sees(ka, i, kk))
            continue;
        double keep = kern_attn_keep(ka, i, kk);
        double *dv = dkeys + kern_attn_k(ka, kk, 2);
        dp[kk] = kern_dot(dctx, keys + kern_attn_k(ka, kk, 2), ka->dv) * keep;
        for (gsize d = 0; d < ka->dv; d++)
            dv[d] += prow[kk] * keep * dctx[d];
        dot += prow[kk] * dp[kk];
    }
    double *dq = dqkv + kern_attn_q(ka, i);
    for (gsize kk = 0; kk < ka->n_keys; kk++)
        if (kern_attn_sees(ka, i, kk))
            kern_attn_qk_bwd(ka, q, kk, prow[kk] * (dp[kk] - dot), dq, dkeys);
}

/* Latent layout: the rows of the current sequence in every region cleared (zero) or their q,
 * k and pe columns divided by sqrt(dh) (the values' stay). */
static void
kern_attn_latent_rows(const KernAttn *ka, double *dqkv, gboolean zero)
{
    gsize s = ka->at->s, rows = ka->n * s, dpe = ka->at->dpe;
    double f = 1.0 / ka->sqrt_dh;
    for (gsize e = rows * ka->ld_qkv; e < (rows + s) * ka->ld_qkv; e++)
        dqkv[e] = zero ? 0.0 : dqkv[e] * f;
    for (gsize e = rows * ka->ld_kv; e < (rows + s) * ka->ld_kv; e++)
        if (zero || e % (ka->dk + ka->dv) < ka->dk)
            dqkv[ka->kv0 + e] = zero ? 0.0 : dqkv[ka->kv0 + e] * f;
    for (gsize e = rows * dpe; e < (rows + s) * dpe; e++)
        dqkv[ka->pe0 + e] = zero ? 0.0 : dqkv[ka->pe0 + e] * f;
}

/* Clears the rows of the current sequence (dk and dv collect every head of their group), and
 * with context parallelism its rows of every rank in dkv. */
static void
kern_attn_bwd_zero(const KernAttn *ka, double *dqkv, double *dkv)
{
    gsize s = ka->at->s;
    if (ka->at->dv != 0) {
        kern_attn_latent_rows(ka, dqkv, TRUE);
        return;
    }
    double *rows = dqkv + ka->n * s * ka->ld_qkv;
    for (gsize e = 0; e < s * ka->ld_qkv; e++)
        rows[e] = 0.0;
    for (gsize j = 0; dkv != NULL && j < ka->cp; j++) {
        double *kv = dkv + (j * ka->at->nb + ka->n) * s * ka->ld_kv;
        for (gsize e = 0; e < s * ka->ld_kv; e++)
            kv[e] = 0.0;
    }
}

/* Divides the accumulated dq and dk columns of the current sequence by sqrt(dh), once all its
 * heads are in; dv stays. With context parallelism dk is in dkv (dqkv's k columns stay 0). */
static void
kern_attn_bwd_scale(const KernAttn *ka, double *dqkv, double *dkv)
{
    gsize dh = ka->at->dh, width = (ka->r + 2) * dh, s = ka->at->s;
    if (ka->at->dv != 0) {
        kern_attn_latent_rows(ka, dqkv, FALSE);
        return;
    }
    for (gsize i = 0; i < s; i++) {
        double *row = dqkv + (ka->n * s + i) * ka->ld_qkv;
        for (gsize c = 0; c < ka->ld_qkv; c++)
            if (c % width < (ka->r + 1) * dh)
                row[c] /= ka->sqrt_dh;
    }
    for (gsize j = 0; dkv != NULL && j < ka->cp; j++)
        for (gsize i = 0; i < s; i++) {
            double *row = dkv + ((j * ka->at->nb + ka->n) * s + i) * ka->ld_kv;
            for (gsize c = 0; c < ka->ld_kv; c++)
                if (c % (2 * dh) < dh)
                    row[c] /= ka->sqrt_dh;
        }
}

static void
kern_attention_bwd(const SimparHostBufs *host, const SimparOp *op)
{
    const SimparAttention *at = &op->u.attn;
    const double *probs = simpar_host_bufs_view(host, at->in[1]);
    const double *dctx = simpar_host_bufs_view(host, at->in[2]);
    double *dqkv = simpar_host_bufs_view(host, at->out[0]);
    KernAttn ka;
    kern_attn_init(&ka, at, host);
    double *dkv = ka.cp > 1 ? simpar_host_bufs_view(host, at->out[1]) : NULL;
    double *dkeys = dkv != NULL ? dkv : dqkv;
    g_autofree double *dp = g_new(double, MAX(ka.n_keys, 1));
    for (ka.n = 0; ka.n < at->nb; ka.n++) {
        kern_attn_bwd_zero(&ka, dqkv, dkv);
        for (ka.g = 0; ka.g < at->nh; ka.g++) {
            for (gsize i = 0; i < at->s; i++) {
                const double *drow = dctx + (ka.n * at->s + i) * ka.ld_ctx + ka.g * ka.dv;
                kern_attn_bwd_row(&ka, i, probs + kern_attn_prow(&ka, i), drow, dqkv, dkeys, dp);
            }
        }
        kern_attn_bwd_scale(&ka, dqkv, dkv);
    }
}

/* ---- ring attention blocks (schedule.h) --------------------------------------------------- */

/* Key i' of the current sequence in the block of rank kv_rank, for part 1 (k) or 2 (v). */
static gsize
kern_ring_k(const KernAttn *ka, gsize i, guint part)
{
    return (ka->n * ka->at->s + i) * ka->ld_kv + (ka->g / ka->r) * 2 * ka->at->dh +
           (part - 1) * ka->at->dh;
}

static guint64
kern_ring_kpos(const KernAttn *ka, gsize i)
{
    return simpar_cp_position((guint) ka->cp, ka->at->kv_rank, ka->at->s / 2, i);
}

static gboolean
kern_ring_sees(const KernAttn *ka, gsize i, gsize k)
{
    return kern_attn_sees_pos(ka, i, kern_ring_kpos(ka, k));
}

static double
kern_ring_keep(const KernAttn *ka, gsize i, gsize k)
{
    return kern_attn_keep_pos(ka, i, kern_ring_kpos(ka, k));
}

/* The log-sum-exp of row i's scores against the block's keys it sees (-inf: none); scores[k]
 * gets each score. */
static double
kern_ring_lse(const KernAttn *ka, const double *kv, gsize i, double *scores)
{
    const double *q = ka->qkv + kern_attn_q(ka, i);
    double max = -INFINITY, sum = 0.0;
    for (gsize k = 0; k < ka->at->s; k++)
        if (kern_ring_sees(ka, i, k)) {
            scores[k] = kern_dot(q, kv + kern_ring_k(ka, k, 1), ka->at->dh) / ka->sqrt_dh;
            max = MAX(max, scores[k]);
        }
    if (max == -INFINITY)
        return -INFINITY;
    for (gsize k = 0; k < ka->at->s; k++)
        if (kern_ring_sees(ka, i, k))
            sum += exp(scores[k] - max);
    return max + log(sum);
}

/* The lse of (current sequence, head, row i) in an [nb x nh x s] array. */
static gsize
kern_ring_lse_at(const KernAttn *ka, gsize i)
{
    return (ka->n * ka->at->nh + ka->g) * ka->at->s + i;
}

static void
kern_attn_block(const SimparHostBufs *host, const SimparOp *op)
{
    const SimparAttention *at = &op->u.attn;
    const double *kv = simpar_host_bufs_view(host, at->in[3]);
    double *o = simpar_host_bufs_view(host, at->out[0]);
    double *lse = simpar_host_bufs_view(host, at->out[1]);
    KernAttn ka;
    kern_attn_init(&ka, at, host);
    ka.kv = kv;
    g_autofree double *scores = g_new(double, MAX(at->s, 1));
    for (ka.n = 0; ka.n < at->nb; ka.n++)
        for (ka.g = 0; ka.g < at->nh; ka.g++)
            for (gsize i = 0; i < at->s; i++) {
                double l = kern_ring_lse(&ka, kv, i, scores);
                double *orow = o + (ka.n * at->s + i) * ka.ld_ctx + ka.g * at->dh;
                lse[kern_ring_lse_at(&ka, i)] = l;
                for (gsize d = 0; d < at->dh; d++)
                    orow[d] = 0.0;
                for (gsize k = 0; l != -INFINITY && k < at->s; k++) {
                    if (!kern_ring_sees(&ka, i, k))
                        continue;
                    double w = exp(scores[k] - l) * kern_ring_keep(&ka, i, k);
                    const double *v = kv + kern_ring_k(&ka, k, 2);
                    for (gsize d = 0; d < at->dh; d++)
                        orow[d] += w * v[d];
                }
            }
}

/* o, lse <- the merge of (o, lse) and the block's (ob, lb): softmax weights rescaled to the
 * joint log-sum-exp. */
static void
kern_attn_merge(const SimparHostBufs *host, const SimparOp *op)
{
    const SimparAttention *at = &op->u.attn;
    const double *ob = simpar_host_bufs_view(host, at->in[0]);
    const double *lb = simpar_host_bufs_view(host, at->in[1]);
    double *o = simpar_host_bufs_view(host, at->out[0]);
    double *lse = simpar_host_bufs_view(host, at->out[1]);
    gsize ld = (gsize) at->nh * at->dh;
    for (gsize n = 0; n < at->nb; n++)
        for (gsize g = 0; g < at->nh; g++)
            for (gsize i = 0; i < at->s; i++) {
                gsize e = (n * at->nh + g) * at->s + i;
                double a = lse[e], b = lb[e];
                if (b == -INFINITY)
                    continue; /* the block adds nothing */
                double m = MAX(a, b), joint = m + log(exp(a - m) + exp(b - m));
                double wa = a == -INFINITY ? 0.0 : exp(a - joint), wb = exp(b - joint);
                double *orow = o + (n * at->s + i) * ld + g * at->dh;
                const double *brow = ob + (n * at->s + i) * ld + g * at->dh;
                for (gsize d = 0; d < at->dh; d++)
                    orow[d] = orow[d] * wa + brow[d] * wb;
                lse[e] = joint;
            }
}

/* The block's share of the gradients: P = e^(score - lse) with the final lse, D = dctx . o. */
static void
kern_attn_block_bwd(const SimparHostBufs *host, const SimparOp *op)
{
    const SimparAttention *at = &op->u.attn;
    const double *o = simpar_host_bufs_view(host, at->in[1]);
    const double *dctx = simpar_host_bufs_view(host, at->in[2]);
    const double *kv = simpar_host_bufs_view(host, at->in[3]);
    const double *lse = simpar_host_bufs_view(host, at->in[4]);
    double *dqkv = simpar_host_bufs_view(host, at->out[0]);
    double *dkv = simpar_host_bufs_view(host, at->out[1]);
    KernAttn ka;
    kern_attn_init(&ka, at, host);
    gsize dh = at->dh, rows = (gsize) at->nb * at->s;
    if (!at->accumulate) {
        for (gsize e = 0; e < rows * ka.ld_qkv; e++)
            dqkv[e] = 0.0;
        for (gsize e = 0; e < rows * ka.ld_kv; e++)
            dkv[e] = 0.0;
    }
    for (ka.n = 0; ka.n < at->nb; ka.n++)
        for (ka.g = 0; ka.g < at->nh; ka.g++)
            for (gsize i = 0; i < at->s; i++) {
                double l = lse[kern_ring_lse_at(&ka, i)];
                gsize row = (ka.n * at->s + i) * ka.ld_ctx + ka.g * dh;
                const double *q = ka.qkv + kern_attn_q(&ka, i), *dout = dctx + row;
                double D = kern_dot(dout, o + row, dh);
                double *dq = dqkv + kern_attn_q(&ka, i);
                for (gsize k = 0; l != -INFINITY && k < at->s; k++) {
                    if (!kern_ring_sees(&ka, i, k))
                        continue;
                    const double *kk = kv + kern_ring_k(&ka, k, 1),
                                 *v = kv + kern_ring_k(&ka, k, 2);
                    double p = exp(kern_dot(q, kk, dh) / ka.sqrt_dh - l);
                    double keep = kern_ring_keep(&ka, i, k), dp = kern_dot(dout, v, dh) * keep;
                    double ds = p * (dp - D) / ka.sqrt_dh;
                    double *dk = dkv + kern_ring_k(&ka, k, 1), *dv = dkv + kern_ring_k(&ka, k, 2);
                    for (gsize d = 0; d < dh; d++) {
                        dv[d] += p * keep * dout[d];
                        dq[d] += ds * kk[d];
                        dk[d] += ds * q[d];
                    }
                }
            }
}

/* ---- vocabulary-parallel embedding and cross-entropy --------------------------------------- */

/* The local row of token id `id` (an element value) in the slice [vocab0, vocab0 + vocab), or
 * G_MAXSIZE when the id lies outside the slice or is not a whole number. */
static gsize
kern_vocab_row(const SimparVocab *v, double id)
{
    if (!(id >= 0.0 && id < 0x1p64) || id != floor(id))
        return G_MAXSIZE;
    guint64 u = (guint64) id;
    return u >= v->vocab0 && u - v->vocab0 < v->vocab ? (gsize) (u - v->vocab0) : G_MAXSIZE;
}

static void
kern_embed(const SimparHostBufs *host, const SimparOp *op)
{
    const SimparVocab *v = &op->u.vocab;
    const double *tokens = simpar_host_bufs_view(host, v->in[0]);
    const double *table = simpar_host_bufs_view(host, v->in[1]);
    double *y = simpar_host_bufs_view(host, v->out[0]);
    for (gsize r = 0; r < v->rows; r++) {
        gsize row = kern_vocab_row(v, tokens[r]);
        for (gsize c = 0; c < v->cols; c++)
            y[r * v->cols + c] = row != G_MAXSIZE ? table[row * v->cols + c] : 0.0;
    }
}

/* Rows in token order, so repeated ids accumulate deterministically. */
static void
kern_embed_bwd(const SimparHostBufs *host, const SimparOp *op)
{
    const SimparVocab *v = &op->u.vocab;
    const double *tokens = simpar_host_bufs_view(host, v->in[0]);
    const double *dy = simpar_host_bufs_view(host, v->in[1]);
    double *dtable = simpar_host_bufs_view(host, v->out[0]);
    for (gsize r = 0; r < v->rows; r++) {
        gsize row = kern_vocab_row(v, tokens[r]);
        if (row == G_MAXSIZE)
            continue;
        for (gsize c = 0; c < v->cols; c++)
            dtable[row * v->cols + c] += dy[r * v->cols + c];
    }
}

/* An empty slice gives -inf, the identity of the max all-reduce that follows. */
static void
kern_xent_max(const SimparHostBufs *host, const SimparOp *op)
{
    const SimparVocab *v = &op->u.vocab;
    const double *logits = simpar_host_bufs_view(host, v->in[0]);
    double *max = simpar_host_bufs_view(host, v->out[0]);
    for (gsize r = 0; r < v->rows; r++) {
        double m = -INFINITY;
        for (gsize c = 0; c < v->vocab; c++)
            m = MAX(m, logits[r * v->vocab + c]);
        max[r] = m;
    }
}

static void
kern_xent_fwd(const SimparHostBufs *host, const SimparOp *op)
{
    const SimparVocab *v = &op->u.vocab;
    const double *logits = simpar_host_bufs_view(host, v->in[0]);
    const double *max = simpar_host_bufs_view(host, v->in[1]);
    const double *targets = simpar_host_bufs_view(host, v->in[2]);
    double *stats = simpar_host_bufs_view(host, v->out[0]);
    for (gsize r = 0; r < v->rows; r++) {
        const double *row = logits + r * v->vocab;
        double sum = 0.0;
        for (gsize c = 0; c < v->vocab; c++)
            sum += exp(row[c] - max[r]);
        gsize t = kern_vocab_row(v, targets[r]);
        stats[r] = sum;
        stats[v->rows + r] = t != G_MAXSIZE ? row[t] : 0.0;
    }
}

static void
kern_xent_loss(const SimparHostBufs *host, const SimparOp *op)
{
    const SimparVocab *v = &op->u.vocab;
    const double *max = simpar_host_bufs_view(host, v->in[0]);
    const double *stats = simpar_host_bufs_view(host, v->in[1]);
    double *loss = simpar_host_bufs_view(host, v->out[0]);
    double sum = 0.0;
    for (gsize r = 0; r < v->rows; r++)
        sum += log(stats[r]) + max[r] - stats[v->rows + r];
    if (v->rows > 0)
        loss[0] += v->scale * sum;
}

/* Element by element, so dlogits may alias logits (in place, as Megatron-LM does). */
static void
kern_xent_bwd(const SimparHostBufs *host, const SimparOp *op)
{
    const SimparVocab *v = &op->u.vocab;
    const double *logits = simpar_host_bufs_view(host, v->in[0]);
    const double *max = simpar_host_bufs_view(host, v->in[1]);
    const double *targets = simpar_host_bufs_view(host, v->in[2]);
    const double *stats = simpar_host_bufs_view(host, v->in[3]);
    double *dlogits = simpar_host_bufs_view(host, v->out[0]);
    for (gsize r = 0; r < v->rows; r++) {
        gsize t = kern_vocab_row(v, targets[r]);
        for (gsize c = 0; c < v->vocab; c++) {
            gsize e = r * v->vocab + c;
            double p = exp(logits[e] - max[r]) / stats[r];
            dlogits[e] = v->scale * (p - (c == t ? 1.0 : 0.0));
        }
    }
}

/* ---- optimizer and timed blocks ----------------------------------------------------------- */

/* AdamW: the decoupled decay uses the parameter before this step's update. */
static void
kern_adam(const SimparHostBufs *host, const SimparOp *op)
{
    const SimparAdam *a = &op->u.adam;
    double *p = simpar_host_bufs_view(host, a->param);
    const double *g = simpar_host_bufs_view(host, a->grad);
    double *m = simpar_host_bufs_view(host, a->m);
    double *v = simpar_host_bufs_view(host, a->v);
    double c1 = 1.0 - pow(a->beta1, a->step), c2 = 1.0 - pow(a->beta2, a->step);
    for (gsize i = 0; i < a->count; i++) {
        m[i] = a->beta1 * m[i] + (1.0 - a->beta1) * g[i];
        v[i] = a->beta2 * v[i] + (1.0 - a->beta2) * g[i] * g[i];
        double update = (m[i] / c1) / (sqrt(v[i] / c2) + a->eps);
        p[i] -= a->lr * (update + a->weight_decay * p[i]);
    }
}

/* A timed span carries no data: nothing to compute. */
static void
kern_block(const SimparHostBufs *host, const SimparOp *op)
{
    (void) host;
    (void) op;
}

/* ---- dispatch ----------------------------------------------------------------------------- */

static const KernFn kern_fns[SIMPAR_N_OP_KINDS] = {
    [SIMPAR_OP_GEMM] = kern_gemm,
    [SIMPAR_OP_LN_STATS] = kern_ln_stats,
    [SIMPAR_OP_LN_APPLY] = kern_ln_apply,
    [SIMPAR_OP_LN_BWD_STATS] = kern_ln_bwd_stats,
    [SIMPAR_OP_LN_BWD_APPLY] = kern_ln_bwd_apply,
    [SIMPAR_OP_BIAS_ADD] = kern_bias_add,
    [SIMPAR_OP_BIAS_GRAD] = kern_bias_grad,
    [SIMPAR_OP_GELU] = kern_gelu,
    [SIMPAR_OP_GELU_BWD] = kern_gelu_bwd,
    [SIMPAR_OP_SWIGLU] = kern_swiglu,
    [SIMPAR_OP_SWIGLU_BWD] = kern_swiglu_bwd,
    [SIMPAR_OP_PACK_COLS] = kern_pack_cols,
    [SIMPAR_OP_UNPACK_COLS] = kern_unpack_cols,
    [SIMPAR_OP_ATTN_BLOCK] = kern_attn_block,
    [SIMPAR_OP_ATTN_MERGE] = kern_attn_merge,
    [SIMPAR_OP_ATTN_BLOCK_BWD] = kern_attn_block_bwd,
    [SIMPAR_OP_DROPOUT] = kern_dropout,
    [SIMPAR_OP_DROPOUT_BWD] = kern_dropout,
    [SIMPAR_OP_ADD] = kern_add,
    [SIMPAR_OP_ATTENTION] = kern_attention,
    [SIMPAR_OP_ATTENTION_BWD] = kern_attention_bwd,
    [SIMPAR_OP_EMBED] = kern_embed,
    [SIMPAR_OP_EMBED_BWD] = kern_embed_bwd,
    [SIMPAR_OP_XENT_MAX] = kern_xent_max,
    [SIMPAR_OP_XENT_FWD] = kern_xent_fwd,
    [SIMPAR_OP_XENT_LOSS] = kern_xent_loss,
    [SIMPAR_OP_XENT_BWD] = kern_xent_bwd,
    [SIMPAR_OP_ADAM] = kern_adam,
    [SIMPAR_OP_BLOCK] = kern_block,
    [SIMPAR_OP_MOE_GATE] = simpar_kern_moe,
    [SIMPAR_OP_MOE_GATE_BWD] = simpar_kern_moe,
    [SIMPAR_OP_MOE_DISPATCH] = simpar_kern_moe,
    [SIMPAR_OP_MOE_DISPATCH_BWD] = simpar_kern_moe,
    [SIMPAR_OP_MOE_COMBINE] = simpar_kern_moe,
    [SIMPAR_OP_MOE_COMBINE_BWD] = simpar_kern_moe,
    [SIMPAR_OP_MOE_SORT] = simpar_kern_moe,
    [SIMPAR_OP_MOE_UNSORT] = simpar_kern_moe,
    [SIMPAR_OP_MOE_HOP] = simpar_kern_moe,
    [SIMPAR_OP_MOE_HOP_BWD] = simpar_kern_moe,
    [SIMPAR_OP_MOE_HOP_REDUCE] = simpar_kern_moe,
    [SIMPAR_OP_MOE_HOP_REDUCE_BWD] = simpar_kern_moe,
};

/* Runs one compute op whose accesses host.c has checked. */
void
simpar_kern_run(const SimparHostBufs *host, const SimparOp *op)
{
    g_return_if_fail(op->kind < SIMPAR_N_OP_KINDS);
    g_assert(kern_fns[op->kind] != NULL); /* collectives, send and recv are host.c's */
    kern_fns[op->kind](host, op);
}
