/* reference-step.h - a serial, double-precision oracle for one whole training step of a small
 * GPT-style model; the distributed steps the host executor runs are checked against it.
 *
 * D data-parallel replicas each run m micro-batches of b sequences of s tokens; the global
 * micro-batch g = d * m + j is micro-batch j of replica d, and its rows are tokens in
 * (sequence, position) order, as in reference-layer.h. For every g:
 *
 *   x_0      = E[tokens]                  embedding table E [V x h]; no position embedding
 *   x_(l+1)  = layer_l(x_l), l < L        reference-layer.c, dropout seed ref_step_seed(l, g)
 *   logits   = x_L . W_out                W_out [h x V]; tied: x_L . E^T; no final layer norm
 *   loss    += sum over rows of (logsumexp(logits_r) - logits_r[target_r]) / (D m b s)
 *
 * so the loss is the mean cross-entropy over every token of the global batch, and each
 * parameter's gradient is d loss / d parameter: the sum over all micro-batches of all replicas
 * (what a data-parallel all-reduce of per-replica sums gives). Then one AdamW step (step
 * cfg->step, moments from RefParam.m and .v, zero before the first step) updates every
 * parameter: the embedding, every layer's weights, biases and layer-norm gammas and betas (all
 * with the same weight decay), and the output weight:
 *   m = b1 m + (1-b1) g;  v = b2 v + (1-b2) g^2;
 *   p -= lr ((m / (1-b1^t)) / (sqrt(v / (1-b2^t)) + eps) + weight_decay p)
 *
 * Dropout seed rule: layer l (0-based, over the whole model) of global micro-batch g uses
 *   seed = base + 1000003 l + 7919 g   (mod 2^64, base = cfg->layer.seed)
 * as RefShape.seed (every site of the layer; masks indexed inside the micro-batch as in
 * reference-layer.c), i.e. a distributed generator sets SimparPlan.seed to that value for the
 * layer's ops of that micro-batch. The backward of a layer uses the same seed as its forward.
 *
 * Ownership: RefStepParams owns its tensors (values, gradients, moments, names); token and
 * target arrays are the caller's: D * m * b * s ids each, laid out [d][j][row].
 */
#ifndef SIMPAR_REFERENCE_STEP_H
#define SIMPAR_REFERENCE_STEP_H
#include "reference-layer.h"
#include <glib.h>
G_BEGIN_DECLS

typedef struct {
    RefShape layer;      /* b, s, h, a, f, causal, eps, dropout; layer.seed is the base seed */
    guint64 vocab;       /* V */
    guint layers;        /* L */
    gboolean tied;       /* the output layer is E^T: no W_out */
    guint replicas;      /* D */
    guint micro_batches; /* m, per replica */
    double lr, beta1, beta2, eps, weight_decay;
    guint step; /* Adam step t, from 1 */
} RefStepConfig;

/* One parameter tensor [rows x cols], row-major, with its gradient and Adam moments. */
typedef struct {
    char *name; /* "embedding.weight", "layers.0.qkv.weight", "output.weight" */
    guint64 rows, cols;
    double *value, *grad, *m, *v;
} RefParam;

/* params[0] the embedding; then for each layer l its 12 parameters in RefTensor order
 * (REF_LN1_G .. REF_FC2_B, shapes from ref_tensor_shape); last the output weight (untied). */
typedef struct {
    guint layers;
    gboolean tied;
    guint n;
    RefParam *params;
} RefStepParams;

#define REF_LAYER_PARAMS (REF_N_INPUTS - REF_LN1_G) /* 20, 8 of them MLA's */

/* (transfer full): every tensor of `cfg`'s model, all zeros. */
RefStepParams *ref_step_params_new(const RefStepConfig *cfg);
void ref_step_params_free(RefStepParams *p);
/* Values uniform in [-1, 1) (ref_fill_random, tensor by tensor in params order); gradients and
 * moments zero. */
void ref_step_params_fill(RefStepParams *p, GRand *rng);
/* (transfer none) */
RefParam *ref_step_embedding(RefStepParams *p);
RefParam *ref_step_output(RefStepParams *p); /* NULL when tied */
RefParam *ref_step_layer_param(RefStepParams *p, guint layer, RefTensor t);

guint64 ref_step_seed(guint64 base, guint layer, guint64 micro);
/* Forward and backward of every micro-batch: returns the loss and overwrites every gradient. */
double ref_step_gradients(const RefStepConfig *cfg, RefStepParams *p, const guint64 *tokens,
                          const guint64 *targets);
/* One Adam step of every parameter from its gradient. */
void ref_step_adam(const RefStepConfig *cfg, RefStepParams *p);
/* Both: the loss before the update. */
double ref_step_run(const RefStepConfig *cfg, RefStepParams *p, const guint64 *tokens,
                    const guint64 *targets);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(RefStepParams, ref_step_params_free)
G_END_DECLS
#endif /* SIMPAR_REFERENCE_STEP_H */
