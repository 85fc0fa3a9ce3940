/* reference-layer.c - one pre-LN transformer layer, forward and backward, in plain loops.
 *
 * Written for obviousness, not speed: every step is a separate loop over doubles, and every
 * intermediate the backward pass needs is kept in one workspace block (RefWork). See
 * reference-layer.h for the math and the layout.
 */
#include "reference-layer.h"
#include "schedule.h"
#include <math.h>
#include <string.h>

static const char *const ref_names[REF_N_TENSORS] = {
    "x",
    "dy",
    "ln1.gamma",
    "ln1.beta",
    "qkv.weight",
    "qkv.bias",
    "proj.weight",
    "proj.bias",
    "ln2.gamma",
    "ln2.beta",
    "fc1.weight",
    "fc1.bias",
    "fc2.weight",
    "fc2.bias",
    "q_down.weight",
    "q_norm.gamma",
    "q_norm.beta",
    "q_up.weight",
    "kv_down.weight",
    "kv_norm.gamma",
    "kv_norm.beta",
    "kv_up.weight",
    "y",
    "dx",
    "ln1.gamma.grad",
    "ln1.beta.grad",
    "qkv.weight.grad",
    "qkv.bias.grad",
    "proj.weight.grad",
    "proj.bias.grad",
    "ln2.gamma.grad",
    "ln2.beta.grad",
    "fc1.weight.grad",
    "fc1.bias.grad",
    "fc2.weight.grad",
    "fc2.bias.grad",
    "q_down.weight.grad",
    "q_norm.gamma.grad",
    "q_norm.beta.grad",
    "q_up.weight.grad",
    "kv_down.weight.grad",
    "kv_norm.gamma.grad",
    "kv_norm.beta.grad",
    "kv_up.weight.grad",
};

const char *
ref_tensor_name(RefTensor t)
{
    g_return_val_if_fail((guint) t < REF_N_TENSORS, NULL);
    return ref_names[t];
}

/* The input whose shape an output has: y and dx are shaped like x, a grad like its parameter. */
static RefTensor
ref_shape_source(RefTensor t)
{
    if (t == REF_Y || t == REF_DX)
        return REF_X;
    if (t >= REF_LN1_G_GRAD)
        return REF_LN1_G + (t - REF_LN1_G_GRAD);
    return t;
}

static guint
ref_kv(const RefShape *sh)
{
    return sh->kv != 0 ? sh->kv : sh->a;
}

static gboolean
ref_mla(const RefShape *sh)
{
    return sh->kv_lora > 0;
}

/* A head's query/key columns and value columns. */
static gsize
ref_dqk(const RefShape *sh)
{
    return ref_mla(sh) ? (gsize) sh->dn + sh->dpe : sh->dh != 0 ? sh->dh : sh->h / sh->a;
}

static gsize
ref_dv(const RefShape *sh)
{
    return ref_mla(sh) ? sh->dv : sh->dh != 0 ? sh->dh : sh->h / sh->a;
}

/* Columns of qkv: a query heads and kv key and value heads of dh; with MLA a heads' q | k | v
 * of dqk | dqk | dv. */
static gsize
ref_qkv_width(const RefShape *sh)
{
    if (ref_mla(sh))
        return (gsize) sh->a * (2 * ref_dqk(sh) + ref_dv(sh));
    return ((gsize) sh->a + 2 * (gsize) ref_kv(sh)) * ref_dqk(sh);
}

/* Columns of ctx (proj's rows). */
static gsize
ref_ctx_width(const RefShape *sh)
{
    return (gsize) sh->a * ref_dv(sh);
}

/* The [rows x cols] of an MLA tensor; [0 x 0] without MLA. */
static void
ref_mla_shape(const RefShape *sh, RefTensor t, guint64 *rows, guint64 *cols)
{
    guint64 h = sh->h, a = sh->a, q = sh->q_lora, kv = sh->kv_lora;
    const guint64 shapes[][2] = {{h, q},
                                 {1, q},
                                 {1, sh->rms ? 0 : q},
                                 {q, a * ref_dqk(sh)},
                                 {h, kv + sh->dpe},
                                 {1, kv},
                                 {1, sh->rms ? 0 : kv},
                                 {kv, a * ((guint64) sh->dn + sh->dv)}};
    guint i = t - REF_QD_W;
    *rows = ref_mla(sh) ? shapes[i][0] : 0;
    *cols = ref_mla(sh) ? shapes[i][1] : 0;
}

static gsize
ref_fc1_width(const RefShape *sh)
{
    return sh->swiglu ? 2 * (gsize) sh->f : sh->f;
}

void
ref_tensor_shape(const RefShape *shape, RefTensor t, guint64 *rows, guint64 *cols)
{
    g_return_if_fail(shape != NULL && (guint) t < REF_N_TENSORS);
    guint64 h = shape->h, f = shape->f;
    *rows = 1;
    *cols = h;
    if (ref_shape_source(t) >= REF_QD_W) {
        ref_mla_shape(shape, ref_shape_source(t), rows, cols);
        return;
    }
    switch (ref_shape_source(t)) {
    case REF_X:
    case REF_DY:
        *rows = (guint64) shape->b * shape->s;
        break;
    case REF_QKV_W:
        *rows = h;
        *cols = ref_mla(shape) ? 0 : ref_qkv_width(shape);
        break;
    case REF_QKV_B:
        *cols = shape->no_bias || ref_mla(shape) ? 0 : ref_qkv_width(shape);
        break;
    case REF_PROJ_B:
    case REF_FC2_B:
        *cols = shape->no_bias ? 0 : h;
        break;
    case REF_PROJ_W:
        *rows = ref_ctx_width(shape);
        break;
    case REF_FC1_W:
        *rows = h;
        *cols = ref_fc1_width(shape);
        break;
    case REF_FC1_B:
        *cols = shape->no_bias ? 0 : ref_fc1_width(shape);
        break;
    case REF_LN1_B:
    case REF_LN2_B:
        *cols = shape->rms ? 0 : h;
        break;
    case REF_FC2_W:
        *rows = f;
        break;
    default: /* gammas, betas, proj.bias, fc2.bias: [1 x h] */
        break;
    }
}

void
ref_fill_random(double *a, gsize n, GRand *rng)
{
    for (gsize i = 0; i < n; i++)
        a[i] = g_rand_double_range(rng, -1.0, 1.0);
}

/* A bias tensor, or NULL for a layer without biases (whose bias tensors are empty). */
#define REF_BIAS(sh, tensor) ((sh)->no_bias ? NULL : (tensor))

/* ---------------------------------------------------------------- workspace */

typedef struct {
    double *block;                        /* owns everything below */
    double *mu1, *rstd1, *u, *qkv, *prob; /* forward: LN1 stats, LN1 out, qkv, softmax P */
    double *ctx, *o, *r1, *mu2, *rstd2;   /* attention out, dropped proj out, residual, LN2 */
    double *wn, *z1, *g1;                 /* LN2 out, fc1 out, gelu out */
    double *dz2, *dg1, *dz1, *dwn, *dr1;  /* backward */
    double *dout, *dctx, *dqkv, *du, *dp; /* dp: one row of dL/dP */
    /* multi-head latent attention: the latents before and after their norms, the up
     * projections' outputs, the norms' statistics, and their gradients */
    double *qc, *qcn, *q, *kvc, *kvl, *kvn, *kvu, *mu_q, *rstd_q, *mu_kv, *rstd_kv;
    double *dqc, *dqcn, *dq, *dkvc, *dkvl, *dkvn, *dkvu, *du2;
} RefWork;

static double *
ref_carve(double **cursor, gsize n)
{
    double *p = *cursor;
    *cursor += n;
    return p;
}

/* The MLA arrays' widths (0 without MLA), in RefWork's order from qc. */
static void
ref_mla_widths(const RefShape *sh, gsize width[19])
{
    gsize m = ref_mla(sh), q = sh->q_lora, kv = sh->kv_lora, a = sh->a;
    gsize qu = a * ref_dqk(sh), kvd = kv + sh->dpe, kvu = a * ((gsize) sh->dn + sh->dv);
    const gsize all[19] = {q, q, qu, kvd, kv,  kv, kvu, 1,   1,    1,
                           1, q, q,  qu,  kvd, kv, kv,  kvu, sh->h};
    for (guint i = 0; i < 19; i++)
        width[i] = m * all[i];
}

static void
ref_work_init(RefWork *w, const RefShape *sh)
{
    gsize rows = (gsize) sh->b * sh->s, h = sh->h, f = sh->f, f1 = ref_fc1_width(sh);
    gsize n_prob = (gsize) sh->b * sh->a * sh->s * sh->s, qkv = ref_qkv_width(sh);
    gsize mla[19], n_mla = 0, ctx = ref_ctx_width(sh);
    ref_mla_widths(sh, mla);
    for (guint i = 0; i < G_N_ELEMENTS(mla); i++)
        n_mla += rows * mla[i];
    gsize total = 4 * rows + 9 * rows * h + 2 * rows * ctx + 2 * rows * (f + f1) + 2 * rows * qkv +
                  n_prob + sh->s + n_mla;
    w->block = g_new0(double, total);
    double *c = w->block;
    w->mu1 = ref_carve(&c, rows);
    w->rstd1 = ref_carve(&c, rows);
    w->mu2 = ref_carve(&c, rows);
    w->rstd2 = ref_carve(&c, rows);
    double **hs[] = {&w->u, &w->o, &w->r1, &w->wn, &w->dwn, &w->dr1, &w->dout, &w->du, &w->dz2};
    for (gsize i = 0; i < G_N_ELEMENTS(hs); i++)
        *hs[i] = ref_carve(&c, rows * h);
    w->ctx = ref_carve(&c, rows * ctx);
    w->dctx = ref_carve(&c, rows * ctx);
    double **ms[] = {&w->qc,   &w->qcn,    &w->q,     &w->kvc,     &w->kvl, &w->kvn,  &w->kvu,
                     &w->mu_q, &w->rstd_q, &w->mu_kv, &w->rstd_kv, &w->dqc, &w->dqcn, &w->dq,
                     &w->dkvc, &w->dkvl,   &w->dkvn,  &w->dkvu,    &w->du2};
    for (gsize i = 0; i < G_N_ELEMENTS(ms); i++)
        *ms[i] = ref_carve(&c, rows * mla[i]);
    w->g1 = ref_carve(&c, rows * f);
    w->dg1 = ref_carve(&c, rows * f);
    w->z1 = ref_carve(&c, rows * f1);
    w->dz1 = ref_carve(&c, rows * f1);
    w->qkv = ref_carve(&c, rows * qkv);
    w->dqkv = ref_carve(&c, rows * qkv);
    w->prob = ref_carve(&c, n_prob);
    w->dp = ref_carve(&c, sh->s);
    g_assert(c == w->block + total);
}

/* ---------------------------------------------------------------- building blocks */

/* y[rows x out] = x[rows x in] . wt[in x out] + bias[out] (bias NULL: none) */
static void
ref_linear(const double *x, const double *wt, const double *bias, gsize rows, gsize in, gsize out,
           double *y)
{
    for (gsize r = 0; r < rows; r++) {
        for (gsize o = 0; o < out; o++) {
            double acc = bias != NULL ? bias[o] : 0.0;
            for (gsize k = 0; k < in; k++)
                acc += x[r * in + k] * wt[k * out + o];
            y[r * out + o] = acc;
        }
    }
}

/* dx = dy . wt^T; dw = x^T . dy; db = column sums of dy (all overwritten; db NULL: none) */
static void
ref_linear_backward(const double *x, const double *wt, const double *dy, gsize rows, gsize in,
                    gsize out, double *dx, double *dw, double *db)
{
    for (gsize r = 0; r < rows; r++) {
        for (gsize k = 0; k < in; k++) {
            double acc = 0.0;
            for (gsize o = 0; o < out; o++)
                acc += dy[r * out + o] * wt[k * out + o];
            dx[r * in + k] = acc;
        }
    }
    for (gsize k = 0; k < in; k++) {
        for (gsize o = 0; o < out; o++) {
            double acc = 0.0;
            for (gsize r = 0; r < rows; r++)
                acc += x[r * in + k] * dy[r * out + o];
            dw[k * out + o] = acc;
        }
    }
    for (gsize o = 0; o < out && db != NULL; o++) {
        double acc = 0.0;
        for (gsize r = 0; r < rows; r++)
            acc += dy[r * out + o];
        db[o] = acc;
    }
}

/* out = (z - mean) / sqrt(var + eps) * gamma + beta, per row; keeps mean and 1/sqrt(var+eps).
 * RMSNorm (beta NULL): out = z / sqrt(mean(z^2) + eps) * gamma, mean 0. */
void
ref_ln_forward(const double *z, const double *gamma, const double *beta, double eps, gsize rows,
               gsize h, double *out, double *mu, double *rstd)
{
    for (gsize r = 0; r < rows; r++) {
        const double *zr = z + r * h;
        double mean = 0.0, var = 0.0;
        for (gsize c = 0; c < h && beta != NULL; c++)
            mean += zr[c];
        mean /= (double) h;
        for (gsize c = 0; c < h; c++)
            var += (zr[c] - mean) * (zr[c] - mean);
        var /= (double) h;
        mu[r] = mean;
        rstd[r] = 1.0 / sqrt(var + eps);
        for (gsize c = 0; c < h; c++)
            out[r * h + c] = (zr[c] - mean) * rstd[r] * gamma[c] + (beta != NULL ? beta[c] : 0.0);
    }
}

/* dz = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat)), dxhat = dout * gamma;
 * RMSNorm (dbeta NULL): the mean(dxhat) term is 0. */
void
ref_ln_backward(const double *z, const double *mu, const double *rstd, const double *gamma,
                const double *dout, gsize rows, gsize h, double *dz, double *dgamma, double *dbeta)
{
    memset(dgamma, 0, h * sizeof(double));
    if (dbeta != NULL)
        memset(dbeta, 0, h * sizeof(double));
    for (gsize r = 0; r < rows; r++) {
        double m1 = 0.0, m2 = 0.0;
        for (gsize c = 0; c < h; c++) {
            double xhat = (z[r * h + c] - mu[r]) * rstd[r];
            double dxhat = dout[r * h + c] * gamma[c];
            m1 += dxhat;
            m2 += dxhat * xhat;
            dgamma[c] += dout[r * h + c] * xhat;
            if (dbeta != NULL)
                dbeta[c] += dout[r * h + c];
        }
        if (dbeta == NULL)
            m1 = 0.0;
        m1 /= (double) h;
        m2 /= (double) h;
        for (gsize c = 0; c < h; c++) {
            double xhat = (z[r * h + c] - mu[r]) * rstd[r];
            double dxhat = dout[r * h + c] * gamma[c];
            dz[r * h + c] = rstd[r] * (dxhat - m1 - xhat * m2);
        }
    }
}

/* out[i] = in[i] * keep / (1 - p), element index i = r * h + c; in place allowed */
static void
ref_dropout(const RefShape *sh, guint site, double p, const double *in, gsize n, double *out)
{
    for (gsize i = 0; i < n; i++)
        out[i] = simpar_dropout_keep(sh->seed, site, i, p) ? in[i] / (1.0 - p) : 0.0;
}

static double
ref_gelu_inner(double z)
{
    return sqrt(2.0 / G_PI) * (z + 0.044715 * z * z * z);
}

static double
ref_gelu(double z)
{
    return 0.5 * z * (1.0 + tanh(ref_gelu_inner(z)));
}

static double
ref_gelu_grad(double z)
{
    double t = tanh(ref_gelu_inner(z));
    double inner_grad = sqrt(2.0 / G_PI) * (1.0 + 3.0 * 0.044715 * z * z);
    return 0.5 * (1.0 + t) + 0.5 * z * (1.0 - t * t) * inner_grad;
}

static double
ref_silu(double z)
{
    return z / (1.0 + exp(-z));
}

/* d silu / dz by the quotient rule on z / (1 + e^-z). */
static double
ref_silu_grad(double z)
{
    double e = exp(-z), d = 1.0 + e;
    return (d + z * e) / (d * d);
}

/* ---------------------------------------------------------------- attention */

/* The row of position p of sequence n: n s + p, or in context-parallel order (see the header)
 * the row of its chunk's owner. */
static gsize
ref_row(const RefShape *sh, guint n, guint p)
{
    if (sh->cp <= 1)
        return (gsize) n * sh->s + p;
    guint C = sh->cp, L = sh->s / (2 * C), chunk = p / L;
    guint owner = chunk < C ? chunk : 2 * C - 1 - chunk;
    guint local = (chunk < C ? 0 : L) + p % L;
    return (gsize) owner * sh->b * (2 * L) + (gsize) n * (2 * L) + local;
}

/* Start of head g's q (part 0), or of the k (1) or v (2) of its group, in token (n, i) of the
 * [b*s x (a + 2kv) dh] qkv array. */
static gsize
ref_qkv_at(const RefShape *sh, guint n, guint g, guint i, guint part)
{
    if (ref_mla(sh)) { /* per head q | k | v of dqk | dqk | dv */
        gsize dqk = ref_dqk(sh), col = g * (2 * dqk + ref_dv(sh)) + part * dqk;
        return ref_row(sh, n, i) * ref_qkv_width(sh) + col;
    }
    gsize dh = ref_dqk(sh), r = sh->a / ref_kv(sh), group = g / r;
    gsize col = group * (r + 2) * dh + (part == 0 ? (g % r) * dh : (r + part - 1) * dh);
    return ref_row(sh, n, i) * ref_qkv_width(sh) + col;
}

/* keep / (1 - p_attn) for P[n, g, i, j] */
static double
ref_attn_scale(const RefShape *sh, guint n, guint g, guint i, guint j)
{
    guint64 idx = (((guint64) n * sh->a + g) * sh->s + i) * sh->s + j;
    gboolean keep = simpar_dropout_keep(sh->seed, SIMPAR_DROPOUT_ATTN, idx, sh->p_attn);
    return keep ? 1.0 / (1.0 - sh->p_attn) : 0.0;
}

static double
ref_dot(const double *a, const double *b, gsize n)
{
    double acc = 0.0;
    for (gsize d = 0; d < n; d++)
        acc += a[d] * b[d];
    return acc;
}

/* Softmax row i of (n, g) into prob[0..s) and its share of ctx. */
static void
ref_attention_row(const RefShape *sh, const double *qkv, guint n, guint g, guint i, double *prob,
                  double *ctx)
{
    gsize dh = ref_dqk(sh), dv = ref_dv(sh);
    guint last = sh->causal ? i + 1 : sh->s;
    const double *q = qkv + ref_qkv_at(sh, n, g, i, 0);
    double mx = -INFINITY, sum = 0.0;
    for (guint j = 0; j < last; j++) {
        prob[j] = ref_dot(q, qkv + ref_qkv_at(sh, n, g, j, 1), dh) / sqrt((double) dh);
        mx = MAX(mx, prob[j]);
    }
    for (guint j = 0; j < sh->s; j++) {
        prob[j] = j < last ? exp(prob[j] - mx) : 0.0;
        sum += prob[j];
    }
    double *out = ctx + ref_row(sh, n, i) * ref_ctx_width(sh) + (gsize) g * dv;
    for (gsize d = 0; d < dv; d++)
        out[d] = 0.0;
    for (guint j = 0; j < last; j++) {
        prob[j] /= sum;
        double pd = prob[j] * ref_attn_scale(sh, n, g, i, j);
        const double *v = qkv + ref_qkv_at(sh, n, g, j, 2);
        for (gsize d = 0; d < dv; d++)
            out[d] += pd * v[d];
    }
}

static void
ref_attention_forward(const RefShape *sh, const double *qkv, double *prob, double *ctx)
{
    for (guint n = 0; n < sh->b; n++)
        for (guint g = 0; g < sh->a; g++)
            for (guint i = 0; i < sh->s; i++) {
                gsize at = (((gsize) n * sh->a + g) * sh->s + i) * sh->s;
                ref_attention_row(sh, qkv, n, g, i, prob + at, ctx);
            }
}

/* Row i of (n, g): adds its dv_j, dq_i and dk_j into dqkv; dp is scratch of s doubles. */
static void
ref_attention_row_backward(const RefShape *sh, const double *qkv, const double *prob,
                           const double *dctx, guint n, guint g, guint i, double *dp, double *dqkv)
{
    gsize dh = ref_dqk(sh), dv = ref_dv(sh);
    guint last = sh->causal ? i + 1 : sh->s;
    const double *dc = dctx + ref_row(sh, n, i) * ref_ctx_width(sh) + (gsize) g * dv;
    double weighted = 0.0;
    for (guint j = 0; j < last; j++) {
        double scale = ref_attn_scale(sh, n, g, i, j);
        gsize vj = ref_qkv_at(sh, n, g, j, 2);
        dp[j] = ref_dot(dc, qkv + vj, dv) * scale;
        for (gsize d = 0; d < dv; d++)
            dqkv[vj + d] += prob[j] * scale * dc[d];
        weighted += prob[j] * dp[j];
    }
    gsize qi = ref_qkv_at(sh, n, g, i, 0);
    for (guint j = 0; j < last; j++) {
        double ds = prob[j] * (dp[j] - weighted) / sqrt((double) dh);
        gsize kj = ref_qkv_at(sh, n, g, j, 1);
        for (gsize d = 0; d < dh; d++) {
            dqkv[qi + d] += ds * qkv[kj + d];
            dqkv[kj + d] += ds * qkv[qi + d];
        }
    }
}

static void
ref_attention_backward(const RefShape *sh, const RefWork *w)
{
    memset(w->dqkv, 0, (gsize) sh->b * sh->s * ref_qkv_width(sh) * sizeof(double));
    for (guint n = 0; n < sh->b; n++)
        for (guint g = 0; g < sh->a; g++)
            for (guint i = 0; i < sh->s; i++) {
                gsize at = (((gsize) n * sh->a + g) * sh->s + i) * sh->s;
                ref_attention_row_backward(sh, w->qkv, w->prob + at, w->dctx, n, g, i, w->dp,
                                           w->dqkv);
            }
}

/* ---------------------------------------------------------------- multi-head latent attention */

/* u -> w->qkv through the latents (see the header). */
static void
ref_mla_forward(const RefShape *sh, double *const t[REF_N_TENSORS], RefWork *w)
{
    gsize rows = (gsize) sh->b * sh->s, h = sh->h, q = sh->q_lora, kv = sh->kv_lora;
    gsize dn = sh->dn, dpe = sh->dpe, dv = sh->dv, dqk = ref_dqk(sh), kvd = kv + dpe;
    ref_linear(w->u, t[REF_QD_W], NULL, rows, h, q, w->qc);
    ref_ln_forward(w->qc, t[REF_QN_G], sh->rms ? NULL : t[REF_QN_B], sh->eps, rows, q, w->qcn,
                   w->mu_q, w->rstd_q);
    ref_linear(w->qcn, t[REF_QU_W], NULL, rows, q, sh->a * dqk, w->q);
    ref_linear(w->u, t[REF_KVD_W], NULL, rows, h, kvd, w->kvc);
    for (gsize r = 0; r < rows; r++)
        memcpy(w->kvl + r * kv, w->kvc + r * kvd, kv * sizeof(double));
    ref_ln_forward(w->kvl, t[REF_KVN_G], sh->rms ? NULL : t[REF_KVN_B], sh->eps, rows, kv, w->kvn,
                   w->mu_kv, w->rstd_kv);
    ref_linear(w->kvn, t[REF_KVU_W], NULL, rows, kv, sh->a * (dn + dv), w->kvu);
    for (gsize r = 0; r < rows; r++)
        for (gsize g = 0; g < sh->a; g++) {
            double *head = w->qkv + r * ref_qkv_width(sh) + g * (2 * dqk + dv);
            const double *kvu = w->kvu + r * sh->a * (dn + dv) + g * (dn + dv);
            memcpy(head, w->q + r * sh->a * dqk + g * dqk, dqk * sizeof(double));
            memcpy(head + dqk, kvu, dn * sizeof(double));
            memcpy(head + dqk + dn, w->kvc + r * kvd + kv, dpe * sizeof(double));
            memcpy(head + 2 * dqk, kvu + dn, dv * sizeof(double));
        }
}

/* w->dqkv -> w->du and the MLA parameters' gradients. */
static void
ref_mla_backward(const RefShape *sh, double *const t[REF_N_TENSORS], RefWork *w)
{
    gsize rows = (gsize) sh->b * sh->s, h = sh->h, q = sh->q_lora, kv = sh->kv_lora;
    gsize dn = sh->dn, dpe = sh->dpe, dv = sh->dv, dqk = ref_dqk(sh), kvd = kv + dpe;
    memset(w->dkvc, 0, rows * kvd * sizeof(double));
    for (gsize r = 0; r < rows; r++)
        for (gsize g = 0; g < sh->a; g++) {
            const double *head = w->dqkv + r * ref_qkv_width(sh) + g * (2 * dqk + dv);
            double *dkvu = w->dkvu + r * sh->a * (dn + dv) + g * (dn + dv);
            memcpy(w->dq + r * sh->a * dqk + g * dqk, head, dqk * sizeof(double));
            memcpy(dkvu, head + dqk, dn * sizeof(double));
            memcpy(dkvu + dn, head + 2 * dqk, dv * sizeof(double));
            for (gsize d = 0; d < dpe; d++) /* every head's share of the shared key part */
                w->dkvc[r * kvd + kv + d] += head[dqk + dn + d];
        }
    ref_linear_backward(w->kvn, t[REF_KVU_W], w->dkvu, rows, kv, sh->a * (dn + dv), w->dkvn,
                        t[REF_KVU_W_GRAD], NULL);
    ref_ln_backward(w->kvl, w->mu_kv, w->rstd_kv, t[REF_KVN_G], w->dkvn, rows, kv, w->dkvl,
                    t[REF_KVN_G_GRAD], sh->rms ? NULL : t[REF_KVN_B_GRAD]);
    for (gsize r = 0; r < rows; r++)
        memcpy(w->dkvc + r * kvd, w->dkvl + r * kv, kv * sizeof(double));
    ref_linear_backward(w->u, t[REF_KVD_W], w->dkvc, rows, h, kvd, w->du, t[REF_KVD_W_GRAD], NULL);
    ref_linear_backward(w->qcn, t[REF_QU_W], w->dq, rows, q, sh->a * dqk, w->dqcn, t[REF_QU_W_GRAD],
                        NULL);
    ref_ln_backward(w->qc, w->mu_q, w->rstd_q, t[REF_QN_G], w->dqcn, rows, q, w->dqc,
                    t[REF_QN_G_GRAD], sh->rms ? NULL : t[REF_QN_B_GRAD]);
    ref_linear_backward(w->u, t[REF_QD_W], w->dqc, rows, h, q, w->du2, t[REF_QD_W_GRAD], NULL);
    for (gsize i = 0; i < rows * h; i++)
        w->du[i] += w->du2[i];
}

/* ---------------------------------------------------------------- the layer */

static void
ref_forward(const RefShape *sh, double *const t[REF_N_TENSORS], RefWork *w)
{
    gsize rows = (gsize) sh->b * sh->s, h = sh->h, f = sh->f, f1 = ref_fc1_width(sh);
    ref_ln_forward(t[REF_X], t[REF_LN1_G], sh->rms ? NULL : t[REF_LN1_B], sh->eps, rows, h, w->u,
                   w->mu1, w->rstd1);
    if (ref_mla(sh))
        ref_mla_forward(sh, t, w);
    else
        ref_linear(w->u, t[REF_QKV_W], REF_BIAS(sh, t[REF_QKV_B]), rows, h, ref_qkv_width(sh),
                   w->qkv);
    ref_attention_forward(sh, w->qkv, w->prob, w->ctx);
    ref_linear(w->ctx, t[REF_PROJ_W], REF_BIAS(sh, t[REF_PROJ_B]), rows, ref_ctx_width(sh), h,
               w->o);
    ref_dropout(sh, SIMPAR_DROPOUT_PROJ, sh->p_hidden, w->o, rows * h, w->o);
    for (gsize i = 0; i < rows * h; i++)
        w->r1[i] = t[REF_X][i] + w->o[i];
    ref_ln_forward(w->r1, t[REF_LN2_G], sh->rms ? NULL : t[REF_LN2_B], sh->eps, rows, h, w->wn,
                   w->mu2, w->rstd2);
    ref_linear(w->wn, t[REF_FC1_W], REF_BIAS(sh, t[REF_FC1_B]), rows, h, f1, w->z1);
    for (gsize i = 0; i < rows * f; i++)
        w->g1[i] = sh->swiglu ? ref_silu(w->z1[2 * i]) * w->z1[2 * i + 1] : ref_gelu(w->z1[i]);
    double *y = t[REF_Y];
    ref_linear(w->g1, t[REF_FC2_W], REF_BIAS(sh, t[REF_FC2_B]), rows, f, h, y);
    ref_dropout(sh, SIMPAR_DROPOUT_FC2, sh->p_hidden, y, rows * h, y);
    for (gsize i = 0; i < rows * h; i++)
        y[i] += w->r1[i];
}

static void
ref_backward(const RefShape *sh, double *const t[REF_N_TENSORS], RefWork *w)
{
    gsize rows = (gsize) sh->b * sh->s, h = sh->h, f = sh->f, f1 = ref_fc1_width(sh);
    const double *dy = t[REF_DY];
    ref_dropout(sh, SIMPAR_DROPOUT_FC2, sh->p_hidden, dy, rows * h, w->dz2);
    ref_linear_backward(w->g1, t[REF_FC2_W], w->dz2, rows, f, h, w->dg1, t[REF_FC2_W_GRAD],
                        REF_BIAS(sh, t[REF_FC2_B_GRAD]));
    for (gsize i = 0; i < rows * f; i++) {
        if (!sh->swiglu) {
            w->dz1[i] = w->dg1[i] * ref_gelu_grad(w->z1[i]);
            continue;
        }
        double gate = w->z1[2 * i], up = w->z1[2 * i + 1];
        w->dz1[2 * i] = w->dg1[i] * up * ref_silu_grad(gate);
        w->dz1[2 * i + 1] = w->dg1[i] * ref_silu(gate);
    }
    ref_linear_backward(w->wn, t[REF_FC1_W], w->dz1, rows, h, f1, w->dwn, t[REF_FC1_W_GRAD],
                        REF_BIAS(sh, t[REF_FC1_B_GRAD]));
    ref_ln_backward(w->r1, w->mu2, w->rstd2, t[REF_LN2_G], w->dwn, rows, h, w->dr1,
                    t[REF_LN2_G_GRAD], sh->rms ? NULL : t[REF_LN2_B_GRAD]);
    for (gsize i = 0; i < rows * h; i++)
        w->dr1[i] += dy[i];
    ref_dropout(sh, SIMPAR_DROPOUT_PROJ, sh->p_hidden, w->dr1, rows * h, w->dout);
    ref_linear_backward(w->ctx, t[REF_PROJ_W], w->dout, rows, ref_ctx_width(sh), h, w->dctx,
                        t[REF_PROJ_W_GRAD], REF_BIAS(sh, t[REF_PROJ_B_GRAD]));
    ref_attention_backward(sh, w);
    if (ref_mla(sh))
        ref_mla_backward(sh, t, w);
    else
        ref_linear_backward(w->u, t[REF_QKV_W], w->dqkv, rows, h, ref_qkv_width(sh), w->du,
                            t[REF_QKV_W_GRAD], REF_BIAS(sh, t[REF_QKV_B_GRAD]));
    double *dx = t[REF_DX];
    ref_ln_backward(t[REF_X], w->mu1, w->rstd1, t[REF_LN1_G], w->du, rows, h, dx, t[REF_LN1_G_GRAD],
                    sh->rms ? NULL : t[REF_LN1_B_GRAD]);
    for (gsize i = 0; i < rows * h; i++)
        dx[i] += w->dr1[i];
}

void
ref_layer_run(const RefShape *shape, double *const t[REF_N_TENSORS])
{
    g_return_if_fail(shape != NULL && t != NULL);
    g_return_if_fail(shape->b > 0 && shape->s > 0 && shape->f > 0);
    g_return_if_fail(shape->a > 0 && shape->h > 0 && shape->h % shape->a == 0);
    g_return_if_fail(shape->a % ref_kv(shape) == 0);
    g_return_if_fail(!ref_mla(shape) || (shape->q_lora > 0 && shape->dv > 0 && shape->cp <= 1 &&
                                         ref_kv(shape) == shape->a));
    g_return_if_fail(shape->cp <= 1 || shape->s % (2 * shape->cp) == 0);
    g_return_if_fail(shape->p_hidden >= 0.0 && shape->p_hidden < 1.0);
    g_return_if_fail(shape->p_attn >= 0.0 && shape->p_attn < 1.0);
    RefWork w;
    ref_work_init(&w, shape);
    ref_forward(shape, t, &w);
    ref_backward(shape, t, &w);
    g_free(w.block);
}
