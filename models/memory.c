/* memory.c - bytes per GPU: model states, stored activations, one layer's buffers (memory.h).
 *
 * Symbols as in shared/reference/training-schedules.md section 6: s sequence, b micro-batch,
 * h hidden, f FFN width, a heads, t (= plan->tp) GPUs of the tensor-parallel group, ds bytes per
 * value of the model's dtype.
 */
#include "memory.h"

/* Weights 4h^2 (qkv, proj) + 2hf (fc1, fc2), biases 3h + h + f + h, two layer norms 4h. */
static double
memory_layer_params(const SimparModel *m)
{
    double h = m->hidden, f = m->ffn;
    return 4 * h * h + 2 * h * f + (3 * h + h + f + h) + 4 * h;
}

/* How many GPUs share one copy of the parameters (section 6.4). 1-D replicates the layer-norm
 * parameters and the row-parallel biases, 6h per layer; they are counted as split too, an
 * undercount below 6h/(4h^2 + 2hf) (0.05% at h = 1024, f = 4h). 2.5-D keeps one copy per depth
 * layer. Returns 0 for a mode it does not know. */
static double
memory_param_split(const SimparPlan *plan)
{
    double q = plan->q;
    if (g_str_equal(plan->mode, "1d"))
        return (double) plan->tp;
    if (g_str_equal(plan->mode, "2d") || g_str_equal(plan->mode, "2.5d"))
        return q * q;
    if (g_str_equal(plan->mode, "3d"))
        return q * q * q;
    return 0;
}

/* Bytes of weights, gradients and optimizer states per parameter: 16-bit weights and gradients
 * with fp32 master weights, momentum and variance (2 + 2 + 12), or fp32 training (4 + 4 + 8);
 * fp64 doubles the fp32 case. */
static double
memory_state_bytes(SimparDtype dtype)
{
    return dtype == SIMPAR_DTYPE_FP64 ? 32 : 16;
}

/* One layer's stored activations per GPU, from Korthikanti et al.'s breakdown (section 6.2) with
 * ds bytes per value and 1 byte per dropout-mask element; at ds = 2 and f = 4h it is their
 * sbh(34 + 5as/h), and sbh(10 + 24/t + 5as/(ht)) for 1-D without sequence parallelism. */
static double
memory_layer_activations(const SimparModel *m, const SimparPlan *plan, SimparAttentionImpl attn)
{
    double s = m->seq, b = m->micro_batch, h = m->hidden, f = m->ffn, a = m->heads;
    double ds = simpar_dtype_size(m->dtype), sbh = s * b * h, t = plan->tp;
    /* the two layer-norm inputs, the qkv and fc1 inputs, two dropout masks: 1-D replicates
     * them (the "10sbh") */
    double replicated = sbh * (4 * ds + 2);
    /* Q, K, V, the proj input, the GeLU and fc2 inputs (the "24sbh" at f = 4h) */
    double split = (4 * sbh + 2 * s * b * f) * ds;
    /* softmax output, its dropout mask and output; flash attention stores none of them */
    double scores = attn == SIMPAR_ATTENTION_FLASH ? 0 : a * s * s * b * (2 * ds + 1);
    if (g_str_equal(plan->mode, "1d") && !plan->sequence_parallel)
        return replicated + (split + scores) / t;
    /* SP splits the rest by tokens; 2-D, 2.5-D (d q^2) and 3-D split every tensor over t */
    return (replicated + split + scores) / t;
}

/* The largest sum of one rank's buffers in the layer schedule: parameters, gradients, saved
 * and gathered blocks all live together while the layer runs. */
static double
memory_transient(const SimparSchedule *layer)
{
    guint n_ranks = simpar_schedule_n_ranks(layer);
    g_autofree double *elems = g_new0(double, n_ranks);
    double peak = 0;
    for (guint i = 0; i < simpar_schedule_n_buffers(layer); i++) {
        const SimparBuffer *buf = simpar_schedule_buffer(layer, i);
        elems[buf->rank] += (double) buf->elems;
        peak = MAX(peak, elems[buf->rank]);
    }
    return peak * simpar_dtype_size(simpar_schedule_dtype(layer));
}

void
simpar_memory_estimate(const SimparModel *model, const SimparPlan *plan,
                       const SimparSchedule *layer, SimparAttentionImpl attn, SimparMemory *out)
{
    g_return_if_fail(model != NULL && plan != NULL && layer != NULL && out != NULL);
    g_return_if_fail(plan->mode != NULL && plan->tp > 0 && plan->q > 0);
    double split = memory_param_split(plan);
    g_return_if_fail(split > 0); /* an unknown mode: the plan was not validated */
    double layers = model->layers;
    out->params = layers * memory_layer_params(model) / split;
    out->states_B = out->params * memory_state_bytes(model->dtype);
    out->activations_B = layers * memory_layer_activations(model, plan, attn);
    out->transient_B = memory_transient(layer);
    out->total_B = out->states_B + out->activations_B + out->transient_B;
}
