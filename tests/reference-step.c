/* reference-step.c - one training step of a small GPT-style model, in plain loops.
 *
 * The layers are reference-layer.c's: ref_layer_run() computes a layer's forward and backward
 * in one call, so the forward pass calls it with dy = 0 to get each layer's output, and the
 * backward pass calls it again on the saved input with the real dy (recomputing the forward,
 * which gives the same numbers). Only the embedding, the logits, the cross-entropy and Adam
 * are written here. See reference-step.h for the math.
 */
#include "reference-step.h"
#include <math.h>
#include <string.h>

/* ---------------------------------------------------------------- parameters */

static void
step_param_init(RefParam *p, char *name, guint64 rows, guint64 cols)
{
    gsize n = MAX(rows * cols, 1); /* storage even for an empty parameter (no bias): never NULL */
    *p = (RefParam){name,
                    rows,
                    cols,
                    g_new0(double, n),
                    g_new0(double, n),
                    g_new0(double, n),
                    g_new0(double, n)};
}

RefStepParams *
ref_step_params_new(const RefStepConfig *cfg)
{
    g_return_val_if_fail(cfg != NULL && cfg->vocab > 0, NULL);
    RefStepParams *p = g_new0(RefStepParams, 1);
    p->layers = cfg->layers;
    p->tied = cfg->tied;
    p->n = 1 + cfg->layers * REF_LAYER_PARAMS + (cfg->tied ? 0 : 1);
    p->params = g_new0(RefParam, p->n);
    guint64 h = cfg->layer.h;
    step_param_init(&p->params[0], g_strdup("embedding.weight"), cfg->vocab, h);
    for (guint l = 0; l < cfg->layers; l++) {
        for (guint i = 0; i < REF_LAYER_PARAMS; i++) {
            RefTensor t = REF_LN1_G + i;
            guint64 rows, cols;
            ref_tensor_shape(&cfg->layer, t, &rows, &cols);
            step_param_init(&p->params[1 + l * REF_LAYER_PARAMS + i],
                            g_strdup_printf("layers.%u.%s", l, ref_tensor_name(t)), rows, cols);
        }
    }
    if (!cfg->tied)
        step_param_init(&p->params[p->n - 1], g_strdup("output.weight"), h, cfg->vocab);
    return p; /* (transfer full) */
}

void
ref_step_params_free(RefStepParams *p)
{
    if (p == NULL)
        return;
    for (guint i = 0; i < p->n; i++) {
        RefParam *t = &p->params[i];
        g_free(t->name);
        g_free(t->value);
        g_free(t->grad);
        g_free(t->m);
        g_free(t->v);
    }
    g_free(p->params);
    g_free(p);
}

void
ref_step_params_fill(RefStepParams *p, GRand *rng)
{
    for (guint i = 0; i < p->n; i++) {
        RefParam *t = &p->params[i];
        gsize n = t->rows * t->cols;
        ref_fill_random(t->value, n, rng);
        memset(t->grad, 0, n * sizeof(double));
        memset(t->m, 0, n * sizeof(double));
        memset(t->v, 0, n * sizeof(double));
    }
}

RefParam *
ref_step_embedding(RefStepParams *p)
{
    return &p->params[0]; /* (transfer none) */
}

RefParam *
ref_step_output(RefStepParams *p)
{
    return p->tied ? NULL : &p->params[p->n - 1]; /* (transfer none) */
}

RefParam *
ref_step_layer_param(RefStepParams *p, guint layer, RefTensor t)
{
    g_return_val_if_fail(layer < p->layers && t >= REF_LN1_G && t < REF_N_INPUTS, NULL);
    return &p->params[1 + layer * REF_LAYER_PARAMS + (t - REF_LN1_G)]; /* (transfer none) */
}

guint64
ref_step_seed(guint64 base, guint layer, guint64 micro)
{
    return base + G_GUINT64_CONSTANT(1000003) * layer + G_GUINT64_CONSTANT(7919) * micro;
}

/* ---------------------------------------------------------------- workspace */

typedef struct {
    const RefStepConfig *cfg;
    RefStepParams *p;
    gsize rows, h;
    double *block;                        /* owns everything below */
    double **xs;                          /* x_0 .. x_L, [rows x h] each */
    double *dx, *dnext, *zeros, *scratch; /* [rows x h] */
    double *logits;                       /* [rows x V], then d logits */
    double *pgrad[REF_N_TENSORS];         /* one layer call's parameter gradients */
} StepWork;

static void
step_work_init(StepWork *w, const RefStepConfig *cfg, RefStepParams *p)
{
    w->cfg = cfg;
    w->p = p;
    w->rows = (gsize) cfg->layer.b * cfg->layer.s;
    w->h = cfg->layer.h;
    gsize rh = w->rows * w->h, pgrads = 0, sizes[REF_LAYER_PARAMS];
    for (guint i = 0; i < REF_LAYER_PARAMS; i++) {
        guint64 rows, cols;
        ref_tensor_shape(&cfg->layer, REF_LN1_G + i, &rows, &cols);
        sizes[i] = rows * cols;
        pgrads += sizes[i];
    }
    w->block = g_new0(double, (cfg->layers + 5) * rh + w->rows * cfg->vocab + pgrads);
    double *c = w->block;
    w->xs = g_new(double *, cfg->layers + 1);
    for (guint l = 0; l <= cfg->layers; l++, c += rh)
        w->xs[l] = c;
    double **hs[] = {&w->dx, &w->dnext, &w->zeros, &w->scratch};
    for (guint i = 0; i < G_N_ELEMENTS(hs); i++, c += rh)
        *hs[i] = c;
    w->logits = c;
    c += w->rows * cfg->vocab;
    for (guint i = 0; i < REF_LAYER_PARAMS; i++) {
        w->pgrad[REF_LN1_G_GRAD + i] = c;
        c += sizes[i];
    }
}

static void
step_work_clear(StepWork *w)
{
    g_free(w->xs);
    g_free(w->block);
}

/* ---------------------------------------------------------------- one micro-batch */

/* ref_layer_run on layer l of micro-batch g: x, dy in; y, dx out; gradients into w->pgrad. */
static void
step_layer(StepWork *w, guint l, guint64 g, double *x, double *dy, double *y, double *dx)
{
    RefShape sh = w->cfg->layer;
    sh.seed = ref_step_seed(w->cfg->layer.seed, l, g);
    double *t[REF_N_TENSORS] = {NULL};
    t[REF_X] = x, t[REF_DY] = dy, t[REF_Y] = y, t[REF_DX] = dx;
    for (guint i = 0; i < REF_LAYER_PARAMS; i++) {
        t[REF_LN1_G + i] = ref_step_layer_param(w->p, l, REF_LN1_G + i)->value;
        t[REF_LN1_G_GRAD + i] = w->pgrad[REF_LN1_G_GRAD + i];
    }
    ref_layer_run(&sh, t);
}

/* The output weight as [h x V] element (c, v): W_out, or E^T when tied. */
static double
step_out_weight(const StepWork *w, gsize c, gsize v)
{
    const RefParam *e = &w->p->params[0];
    return w->p->tied ? e->value[v * w->h + c]
                      : w->p->params[w->p->n - 1].value[c * w->cfg->vocab + v];
}

static double *
step_out_grad(const StepWork *w, gsize c, gsize v)
{
    RefParam *e = &w->p->params[0];
    return w->p->tied ? &e->grad[v * w->h + c]
                      : &w->p->params[w->p->n - 1].grad[c * w->cfg->vocab + v];
}

/* logits = x_L . W_out, then the loss of each row (scaled) and d logits in place. */
static double
step_loss(StepWork *w, const guint64 *targets, double scale)
{
    gsize V = w->cfg->vocab;
    const double *x = w->xs[w->cfg->layers];
    double loss = 0.0;
    for (gsize r = 0; r < w->rows; r++) {
        double *row = w->logits + r * V, max = -INFINITY, sum = 0.0;
        for (gsize v = 0; v < V; v++) {
            double acc = 0.0;
            for (gsize c = 0; c < w->h; c++)
                acc += x[r * w->h + c] * step_out_weight(w, c, v);
            row[v] = acc;
            max = MAX(max, acc);
        }
        for (gsize v = 0; v < V; v++)
            sum += exp(row[v] - max);
        loss += scale * (log(sum) + max - row[targets[r]]);
        for (gsize v = 0; v < V; v++)
            row[v] = scale * (exp(row[v] - max) / sum - (v == targets[r] ? 1.0 : 0.0));
    }
    return loss;
}

/* From d logits: the output weight's gradient (+=) and dx_L = d logits . W_out^T. */
static void
step_output_backward(StepWork *w)
{
    gsize V = w->cfg->vocab;
    const double *x = w->xs[w->cfg->layers];
    for (gsize c = 0; c < w->h; c++) {
        for (gsize v = 0; v < V; v++) {
            double acc = 0.0;
            for (gsize r = 0; r < w->rows; r++)
                acc += x[r * w->h + c] * w->logits[r * V + v];
            *step_out_grad(w, c, v) += acc;
        }
    }
    for (gsize r = 0; r < w->rows; r++) {
        for (gsize c = 0; c < w->h; c++) {
            double acc = 0.0;
            for (gsize v = 0; v < V; v++)
                acc += w->logits[r * V + v] * step_out_weight(w, c, v);
            w->dx[r * w->h + c] = acc;
        }
    }
}

static void
step_accumulate_layer_grads(StepWork *w, guint l)
{
    for (guint i = 0; i < REF_LAYER_PARAMS; i++) {
        RefParam *t = ref_step_layer_param(w->p, l, REF_LN1_G + i);
        for (gsize e = 0; e < t->rows * t->cols; e++)
            t->grad[e] += w->pgrad[REF_LN1_G_GRAD + i][e];
    }
}

static double
step_micro_batch(StepWork *w, guint64 g, const guint64 *tokens, const guint64 *targets,
                 double scale)
{
    const RefStepConfig *cfg = w->cfg;
    RefParam *emb = ref_step_embedding(w->p);
    for (gsize r = 0; r < w->rows; r++)
        memcpy(w->xs[0] + r * w->h, emb->value + tokens[r] * w->h, w->h * sizeof(double));
    for (guint l = 0; l < cfg->layers; l++) /* forward only: dy = 0, dx and grads unused */
        step_layer(w, l, g, w->xs[l], w->zeros, w->xs[l + 1], w->scratch);
    double loss = step_loss(w, targets, scale);
    step_output_backward(w);
    for (guint l = cfg->layers; l-- > 0;) {
        step_layer(w, l, g, w->xs[l], w->dx, w->scratch, w->dnext);
        step_accumulate_layer_grads(w, l);
        double *swap = w->dx;
        w->dx = w->dnext;
        w->dnext = swap;
    }
    for (gsize r = 0; r < w->rows; r++)
        for (gsize c = 0; c < w->h; c++)
            emb->grad[tokens[r] * w->h + c] += w->dx[r * w->h + c];
    return loss;
}

/* ---------------------------------------------------------------- the step */

static gboolean
step_ids_valid(const RefStepConfig *cfg, const guint64 *ids, gsize n)
{
    for (gsize i = 0; i < n; i++)
        if (ids[i] >= cfg->vocab)
            return FALSE;
    return TRUE;
}

double
ref_step_gradients(const RefStepConfig *cfg, RefStepParams *p, const guint64 *tokens,
                   const guint64 *targets)
{
    g_return_val_if_fail(cfg != NULL && p != NULL && tokens != NULL && targets != NULL, NAN);
    g_return_val_if_fail(p->layers == cfg->layers && p->tied == cfg->tied, NAN);
    gsize rows = (gsize) cfg->layer.b * cfg->layer.s;
    guint64 micros = (guint64) cfg->replicas * cfg->micro_batches;
    g_return_val_if_fail(micros > 0 && rows > 0, NAN);
    g_return_val_if_fail(step_ids_valid(cfg, tokens, micros * rows), NAN);
    g_return_val_if_fail(step_ids_valid(cfg, targets, micros * rows), NAN);
    for (guint i = 0; i < p->n; i++)
        memset(p->params[i].grad, 0, p->params[i].rows * p->params[i].cols * sizeof(double));
    StepWork w;
    step_work_init(&w, cfg, p);
    double scale = 1.0 / ((double) micros * rows), loss = 0.0;
    for (guint64 g = 0; g < micros; g++)
        loss += step_micro_batch(&w, g, tokens + g * rows, targets + g * rows, scale);
    step_work_clear(&w);
    return loss;
}

void
ref_step_adam(const RefStepConfig *cfg, RefStepParams *p)
{
    g_return_if_fail(cfg != NULL && p != NULL && cfg->step > 0);
    double c1 = 1.0 - pow(cfg->beta1, cfg->step), c2 = 1.0 - pow(cfg->beta2, cfg->step);
    for (guint i = 0; i < p->n; i++) {
        RefParam *t = &p->params[i];
        for (gsize e = 0; e < t->rows * t->cols; e++) {
            double g = t->grad[e];
            t->m[e] = cfg->beta1 * t->m[e] + (1.0 - cfg->beta1) * g;
            t->v[e] = cfg->beta2 * t->v[e] + (1.0 - cfg->beta2) * g * g;
            double mhat = t->m[e] / c1, vhat = t->v[e] / c2;
            t->value[e] -=
                cfg->lr * (mhat / (sqrt(vhat) + cfg->eps) + cfg->weight_decay * t->value[e]);
        }
    }
}

double
ref_step_run(const RefStepConfig *cfg, RefStepParams *p, const guint64 *tokens,
             const guint64 *targets)
{
    double loss = ref_step_gradients(cfg, p, tokens, targets);
    ref_step_adam(cfg, p);
    return loss;
}
