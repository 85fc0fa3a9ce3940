/* reference-moe.c - the serial mixture-of-experts MLP (see reference-moe.h). */
#include "reference-moe.h"
#include <math.h>
#include <string.h>

static RefMoeTensor *
ref_moe_add(RefMoe *ref, const char *name, guint64 rows, guint64 cols)
{
    RefMoeTensor t = {g_intern_string(name), rows, cols, g_new0(double, rows *cols)};
    g_array_append_val(ref->tensors, t);
    return &g_array_index(ref->tensors, RefMoeTensor, ref->tensors->len - 1);
}

RefMoeTensor *
ref_moe_tensor(RefMoe *ref, const char *name)
{
    for (guint i = 0; i < ref->tensors->len; i++) {
        RefMoeTensor *t = &g_array_index(ref->tensors, RefMoeTensor, i);
        if (g_str_equal(t->name, name))
            return t;
    }
    return NULL;
}

static gboolean
ref_moe_swiglu(const RefMoe *ref)
{
    return ref->model.mlp == SIMPAR_MLP_SWIGLU;
}

RefMoe *
ref_moe_new(const SimparModel *model, const SimparMoe *route, guint64 seed)
{
    RefMoe *ref = g_new0(RefMoe, 1);
    ref->model = *model, ref->route = *route;
    ref->n = (guint64) route->tokens * route->ep * MAX(route->etp, 1u); /* each rank's own */
    ref->tensors = g_array_new(FALSE, FALSE, sizeof(RefMoeTensor));
    guint64 h = model->hidden, E = model->moe.experts, fe = model->moe.moe_ffn;
    guint64 fs = model->moe.shared_ffn, w = ref_moe_swiglu(ref) ? 2 : 1;

    const struct {
        const char *name;
        guint64 rows, cols;
        double scale;
    } in[] = {{"x", ref->n, h, 1.0},
              {"dy", ref->n, h, 1.0},
              {"router.weight", h, E, 1.0 / sqrt((double) h)},
              {"experts.fc1.weight", E * h, w * fe, 1.0 / sqrt((double) h)},
              {"experts.fc2.weight", E * fe, h, 1.0 / sqrt((double) fe)},
              {"shared.fc1.weight", h, w * fs, 1.0 / sqrt((double) h)},
              {"shared.fc2.weight", fs, h, 1.0 / sqrt((double) MAX(fs, 1))}};

    g_autoptr(GRand) rng = g_rand_new_with_seed((guint32) seed);
    for (guint i = 0; i < G_N_ELEMENTS(in); i++) {
        if (in[i].rows * in[i].cols == 0)
            continue;
        RefMoeTensor *t = ref_moe_add(ref, in[i].name, in[i].rows, in[i].cols);
        for (guint64 e = 0; e < t->rows * t->cols; e++)
            t->data[e] = (g_rand_double(rng) * 2 - 1) * in[i].scale;
        g_autofree char *grad = g_strconcat(in[i].name, i < 2 ? "" : ".grad", NULL);
        if (i >= 2)
            ref_moe_add(ref, grad, in[i].rows, in[i].cols);
    }
    ref_moe_add(ref, "y", ref->n, h);
    ref_moe_add(ref, "dx", ref->n, h);
    return ref;
}

void
ref_moe_free(RefMoe *ref)
{
    if (ref == NULL)
        return;
    for (guint i = 0; i < ref->tensors->len; i++)
        g_free(g_array_index(ref->tensors, RefMoeTensor, i).data);
    g_array_unref(ref->tensors);
    g_free(ref);
}

/* ----- one dense MLP on one token: z = x W1, a = act(z), o = a W2 ----- */

typedef struct {
    const double *w1, *w2; /* [h x w f], [f x h] */
    double *dw1, *dw2;
    guint64 h, f;
    gboolean swiglu;
} RefMlp;

static double
ref_silu(double g)
{
    return g / (1 + exp(-g));
}

static double
ref_silu_grad(double g)
{
    double s = 1 / (1 + exp(-g));
    return s * (1 + g * (1 - s));
}

static double
ref_gelu(double v)
{
    return 0.5 * v * (1 + tanh(sqrt(2 / G_PI) * (v + 0.044715 * v * v * v)));
}

static double
ref_gelu_grad(double v)
{
    double c = sqrt(2 / G_PI), t = tanh(c * (v + 0.044715 * v * v * v));
    return 0.5 * (1 + t) + 0.5 * v * (1 - t * t) * c * (1 + 3 * 0.044715 * v * v);
}

/* z [w f], a [f] from x [h]; o [h] += scale a W2. */
static void
ref_mlp_forward(const RefMlp *m, const double *x, double *z, double *a, double scale, double *o)
{
    guint64 w = m->swiglu ? 2 : 1;
    for (guint64 c = 0; c < w * m->f; c++) {
        z[c] = 0;
        for (guint64 i = 0; i < m->h; i++)
            z[c] += x[i] * m->w1[i * w * m->f + c];
    }
    for (guint64 c = 0; c < m->f; c++)
        a[c] = m->swiglu ? ref_silu(z[2 * c]) * z[2 * c + 1] : ref_gelu(z[c]);
    for (guint64 j = 0; j < m->h; j++) {
        double s = 0;
        for (guint64 c = 0; c < m->f; c++)
            s += a[c] * m->w2[c * m->h + j];
        o[j] += scale * s;
    }
}

/* From do [h]: the weights' gradients accumulated, dx [h] accumulated. */
static void
ref_mlp_backward(const RefMlp *m, const double *x, const double *z, const double *a,
                 const double *dout, double *dx)
{
    guint64 w = m->swiglu ? 2 : 1;
    g_autofree double *da = g_new0(double, m->f), *dz = g_new0(double, w * m->f);
    for (guint64 c = 0; c < m->f; c++)
        for (guint64 j = 0; j < m->h; j++) {
            da[c] += dout[j] * m->w2[c * m->h + j];
            m->dw2[c * m->h + j] += a[c] * dout[j];
        }
    for (guint64 c = 0; c < m->f; c++) {
        if (m->swiglu) {
            dz[2 * c] = da[c] * z[2 * c + 1] * ref_silu_grad(z[2 * c]);
            dz[2 * c + 1] = da[c] * ref_silu(z[2 * c]);
        } else {
            dz[c] = da[c] * ref_gelu_grad(z[c]);
        }
    }
    for (guint64 i = 0; i < m->h; i++)
        for (guint64 c = 0; c < w * m->f; c++) {
            m->dw1[i * w * m->f + c] += x[i] * dz[c];
            dx[i] += dz[c] * m->w1[i * w * m->f + c];
        }
}

/* ----- the router ----- */

/* The scores g[k] of the chosen experts and their Jacobian jac[k x k] (d g_j / d logit_i at
 * jac[j k + i]) with ds[k] = d(score before normalising) / d logit. */
static void
ref_router(const RefMoe *ref, const double *logit, const guint *chosen, double *g, double *jac)
{
    guint k = ref->route.top_k;
    gboolean sig = ref->route.router == SIMPAR_ROUTER_SIGMOID;
    double s[64], sum = 0;
    g_assert(k <= G_N_ELEMENTS(s));
    for (guint j = 0; j < k; j++) {
        double l = logit[chosen[j]];
        s[j] = sig ? 1 / (1 + exp(-l)) : exp(l);
        sum += s[j];
    }
    for (guint j = 0; j < k; j++)
        g[j] = s[j] / sum;
    for (guint j = 0; j < k; j++)
        for (guint i = 0; i < k; i++) {
            double dgds = ((i == j) - g[j]) / sum; /* d (s_j / S) / d s_i */
            double dsdl = sig ? s[i] * (1 - s[i]) : s[i];
            jac[j * k + i] = dgds * dsdl;
        }
}

/* ----- the whole block ----- */

typedef struct {
    RefMoe *ref;
    RefMlp expert, shared;
    double *x, *dy, *wr, *dwr, *y, *dx;
    guint64 h, E, fe, fs;
    guint *count; /* [rank][expert] choices so far */
} RefRun;

static void
ref_moe_token(RefRun *r, guint64 n)
{
    RefMoe *ref = r->ref;
    guint k = ref->route.top_k;
    const double *x = r->x + n * r->h, *dy = r->dy + n * r->h;
    double *y = r->y + n * r->h, *dx = r->dx + n * r->h;
    g_autofree double *logit = g_new0(double, r->E), *dlogit = g_new0(double, r->E);
    g_autofree double *g = g_new(double, k), *jac = g_new(double, k *k), *dg = g_new0(double, k);
    g_autofree double *z = g_new(double, 2 * MAX(r->fe, r->fs)),
                      *a = g_new(double, MAX(r->fe, r->fs));
    g_autofree double *o = g_new(double, r->h), *dout = g_new(double, r->h);
    g_autofree guint *chosen = g_new(guint, k);
    for (guint64 e = 0; e < r->E; e++)
        for (guint64 i = 0; i < r->h; i++)
            logit[e] += x[i] * r->wr[i * r->E + e];
    simpar_moe_choose(&ref->route, n, chosen);
    ref_router(ref, logit, chosen, g, jac);
    guint64 src = n / ref->route.tokens;
    for (guint j = 0; j < k; j++) {
        guint e = chosen[j];
        if (r->count[src * r->E + e]++ >= ref->route.capacity) {
            ref->dropped++;
            continue;
        }
        RefMlp m = r->expert;
        gsize w = ref_moe_swiglu(ref) ? 2 : 1;
        m.w1 += e * r->h * w * r->fe, m.dw1 += e * r->h * w * r->fe;
        m.w2 += e * r->fe * r->h, m.dw2 += e * r->fe * r->h;
        memset(o, 0, sizeof(double) * r->h);
        ref_mlp_forward(&m, x, z, a, 1.0, o);
        for (guint64 i = 0; i < r->h; i++) {
            y[i] += g[j] * o[i];
            dg[j] += dy[i] * o[i];
            dout[i] = g[j] * dy[i];
        }
        ref_mlp_backward(&m, x, z, a, dout, dx);
    }
    for (guint j = 0; j < k; j++)
        for (guint i = 0; i < k; i++)
            dlogit[chosen[i]] += dg[j] * jac[j * k + i];
    for (guint64 i = 0; i < r->h; i++)
        for (guint64 e = 0; e < r->E; e++) {
            r->dwr[i * r->E + e] += x[i] * dlogit[e];
            dx[i] += dlogit[e] * r->wr[i * r->E + e];
        }
    if (r->fs == 0)
        return;
    ref_mlp_forward(&r->shared, x, z, a, 1.0, y);
    ref_mlp_backward(&r->shared, x, z, a, dy, dx);
}

static double *
ref_moe_data(RefMoe *ref, const char *name)
{
    RefMoeTensor *t = ref_moe_tensor(ref, name);
    return t != NULL ? t->data : NULL;
}

void
ref_moe_run(RefMoe *ref)
{
    RefRun r = {.ref = ref,
                .x = ref_moe_data(ref, "x"),
                .dy = ref_moe_data(ref, "dy"),
                .wr = ref_moe_data(ref, "router.weight"),
                .dwr = ref_moe_data(ref, "router.weight.grad"),
                .y = ref_moe_data(ref, "y"),
                .dx = ref_moe_data(ref, "dx"),
                .h = ref->model.hidden,
                .E = ref->model.moe.experts,
                .fe = ref->model.moe.moe_ffn,
                .fs = ref->model.moe.shared_ffn};
    gboolean swiglu = ref_moe_swiglu(ref);
    r.expert = (RefMlp){ref_moe_data(ref, "experts.fc1.weight"),
                        ref_moe_data(ref, "experts.fc2.weight"),
                        ref_moe_data(ref, "experts.fc1.weight.grad"),
                        ref_moe_data(ref, "experts.fc2.weight.grad"),
                        r.h,
                        r.fe,
                        swiglu};
    r.shared = (RefMlp){ref_moe_data(ref, "shared.fc1.weight"),
                        ref_moe_data(ref, "shared.fc2.weight"),
                        ref_moe_data(ref, "shared.fc1.weight.grad"),
                        ref_moe_data(ref, "shared.fc2.weight.grad"),
                        r.h,
                        r.fs,
                        swiglu};
    g_autofree guint *count = g_new0(guint, (gsize) ref->route.ep * MAX(ref->route.etp, 1u) * r.E);
    r.count = count;
    ref->dropped = 0;
    for (guint64 n = 0; n < ref->n; n++)
        ref_moe_token(&r, n);
}

/* ----- the block as a layer's MLP ----- */

void
ref_moe_layer_run(RefMoe *ref, const RefShape *shape, double *t[REF_N_TENSORS],
                  double *t2[REF_N_TENSORS], double *u2)
{
    ref_layer_run(shape, t); /* fc2 zero: t[REF_Y] = r1, t[REF_DX] from dr1 = dy */
    gsize rows = (gsize) shape->b * shape->s, h = shape->h, n = rows * h;
    const double *r1 = t[REF_Y], *beta = shape->rms ? NULL : t[REF_LN2_B];
    g_autofree double *mu = g_new(double, rows), *rstd = g_new(double, rows);
    ref_ln_forward(r1, t[REF_LN2_G], beta, shape->eps, rows, h, u2, mu, rstd);
    RefMoeTensor *x = ref_moe_tensor(ref, "x"), *dy = ref_moe_tensor(ref, "dy");
    memcpy(x->data, u2, sizeof(double) * n);
    memcpy(dy->data, t[REF_DY], sizeof(double) * n);
    ref_moe_run(ref);
    const double *dx = ref_moe_tensor(ref, "dx")->data, *y = ref_moe_tensor(ref, "y")->data;
    g_autofree double *dr1 = g_new(double, n), *dgamma = g_new(double, h),
                      *dbeta = g_new(double, h);
    ref_ln_backward(r1, mu, rstd, t[REF_LN2_G], dx, rows, h, dr1, dgamma,
                    shape->rms ? NULL : dbeta);
    for (guint i = 0; i < REF_N_TENSORS; i++) {
        guint64 r, c;
        ref_tensor_shape(shape, (RefTensor) i, &r, &c);
        t2[i] = g_memdup2(t[i], sizeof(double) * r * c);
    }
    for (gsize e = 0; e < n; e++)
        t2[REF_DY][e] += dr1[e];
    ref_layer_run(shape, t2);
    for (gsize e = 0; e < n; e++)
        t2[REF_Y][e] = r1[e] + y[e];
    memcpy(t2[REF_LN2_G_GRAD], dgamma, sizeof(double) * h);
    if (!shape->rms)
        memcpy(t2[REF_LN2_B_GRAD], dbeta, sizeof(double) * h);
}
