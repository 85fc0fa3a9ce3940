/* memory.c - bytes per GPU: model states, stored activations, one layer's buffers (memory.h).
 *
 * Symbols as in Korthikanti et al. (arXiv 2205.05198): s sequence, b micro-batch,
 * h hidden, f FFN width, a heads, V vocabulary, t (= plan->tp) GPUs of the tensor-parallel
 * group, ds bytes per value of the model's dtype; P pipeline stages, D data-parallel replicas,
 * v chunks per device, m micro-batches.
 */
#include "memory.h"
#include "generators.h"
#include "moe.h"
#include "schedule-private.h"

/* ------------------------------------------------------------------------- one layer */

/* Weights 4h^2 (qkv, proj) + 2hf (fc1, fc2), biases 3h + h + f + h, two layer norms 4h; with
 * grouped-query attention, SwiGLU or RMSNorm the shapes of model.h (simpar_model_layer_*). */
static double
memory_layer_params(const SimparModel *m)
{
    return simpar_model_layer_weights(m) + simpar_model_layer_small_params(m);
}

/* `layers` layers' parameters on one GPU: the layer's over the `split` GPUs that share them; an MoE
 * layer's attention part so, and its router and shared experts whole and 1/ETP of its E/EP
 * routed experts on each GPU of the expert-parallel group (moe.h; an MoE model's dense layers are
 * those of simpar_model_dense_layer's model, memory_stage_dense). */
static double
memory_layers_params(const SimparModel *m, const SimparPlan *plan, double split, double layers)
{
    if (!simpar_model_is_moe(m))
        return layers * memory_layer_params(m) / split;
    double h = (double) m->hidden, mlp = ((double) simpar_model_fc1_cols(m) + m->ffn) * h;
    double mlp_small = m->no_bias ? 0 : (double) simpar_model_fc1_cols(m) + h;
    return layers * ((memory_layer_params(m) - mlp - mlp_small) / split +
                     simpar_moe_rank_params(m, plan->ep, plan->etp));
}

/* Layer l's parameters, whole (an MoE layer: its router, shared and routed experts). */
static double
memory_model_layer(const SimparModel *m, gint64 l)
{
    double h = (double) m->hidden, mlp = ((double) simpar_model_fc1_cols(m) + m->ffn) * h;
    double mlp_small = m->no_bias ? 0 : (double) simpar_model_fc1_cols(m) + h;
    double attention = memory_layer_params(m) - mlp - mlp_small;
    return attention +
           (simpar_model_layer_is_moe(m, l) ? simpar_moe_rank_params(m, 1, 1) : mlp + mlp_small);
}

/* One norm's parameters: h (RMSNorm) or 2h (LayerNorm). */
static double
memory_norm_params(const SimparModel *m)
{
    return m->norm == SIMPAR_NORM_RMSNORM ? (double) m->hidden : 2 * (double) m->hidden;
}

double
simpar_memory_model_params(const SimparModel *m)
{
    double layers = 0;
    for (gint64 l = 0; l < m->layers; l++)
        layers += memory_model_layer(m, l);
    return 2 * (double) m->vocab * (double) m->hidden + layers + memory_norm_params(m);
}

double
simpar_memory_mtp_proj_params(const SimparModel *m, double T)
{
    double h = (double) m->hidden;
    return m->mtp_layers > 0 ? 2 * h * h / T + 3 * memory_norm_params(m) : 0;
}

double
simpar_memory_mtp_params(const SimparModel *m)
{
    return (double) m->mtp_layers *
           (memory_model_layer(m, m->layers - 1) + simpar_memory_mtp_proj_params(m, 1));
}

/* Bytes of one value of an FP8 tensor Transformer Engine holds in one usage (rowwise or
 * columnwise) under the model's recipe: 1 with per-tensor scales (delayed, current: one fp32
 * scale per tensor, not counted), 1 + 1/32 with mxfp8 (one E8M0 scale byte per 1 x 32 block;
 * the scales' padding to [128 x 4] tiles not counted). */
static double
memory_fp8_value_B(const SimparModel *model)
{
    return model->fp8 == SIMPAR_FP8_MXFP8 ? 1 + 1.0 / 32 : 1;
}

/* The tokens one GPU's MoE block takes per micro-batch (1-D's sequence-parallel rows, a grid's
 * after tp-moe.c's all-to-all; all of them without sequence parallelism). */
static double
memory_moe_tokens(const SimparModel *m, const SimparPlan *plan)
{
    gboolean whole = simpar_plan_whole_rows(plan);
    return (double) m->seq / simpar_plan_cp(plan) * (double) m->micro_batch /
           (whole ? 1 : (double) plan->tp);
}

/* An MoE layer's MLP part's stored activations per GPU and micro-batch (moe.h): the router's
 * fp32 logits, and for the rows the busiest GPU's experts get (T k x imbalance over its T
 * tokens; ETP times them with expert tensor parallelism) their input, fc1's output, the
 * activation's output and their output (the combine's backward reads it for the scores'
 * gradient); the shared experts' fc1 and activation outputs. FP8 (memory.h): the experts' fc1
 * and fc2 keep their inputs (the rows' input, the activation's output) as one FP8 copy
 * (Transformer Engine's module/grouped_linear.py: columnwise usage only), and so does the shared
 * experts' fc2; the shared experts' fc1 keeps the router's bf16 input (Megatron-Core's
 * moe/shared_experts.py: set_save_original_input(self.linear_fc1)), but under the delayed recipe,
 * which keeps its FP8 copy beside.
 * The block's input (the second norm's output) is among the layer's kept inputs. Recomputed
 * (plan.h's `mods`): moe keeps none of them, moe_act none of the activations' outputs,
 * shared_experts none of the shared experts'. */
static double
memory_moe_activations(const SimparModel *m, const SimparPlan *plan, guint mods)
{
    const SimparMoeConfig *e = &m->moe;
    double ds = simpar_dtype_size(m->dtype), h = (double) m->hidden;
    double w = m->mlp == SIMPAR_MLP_SWIGLU ? 2 : 1, fe = (double) e->moe_ffn;
    double fs = (double) e->shared_ffn;
    gboolean grid = !simpar_plan_whole_rows(plan) && !plan->sequence_parallel;
    double tokens = memory_moe_tokens(m, plan);
    double routed = tokens * (double) e->top_k * MAX(e->imbalance, 1.0);
    /* 2-D, 2.5-D and 3-D: the block's input all-to-all'd into its tokens' rows (tp-moe.c), a
     * second copy of the layer's [tokens x h] beside the grid's block of it */
    double moved = grid && plan->tp > 1 ? tokens * h * ds : 0;
    /* expert tensor parallelism: the expert-TP group's rows all-gathered (the all-to-all
     * dispatcher) or each token sent to every expert-TP rank of its experts (DeepEP's), ETP
     * times the input and output rows either way, each with its 1/ETP of fc1's and the
     * activation's columns */
    double etp = (double) MAX(plan->etp, 1);
    if (mods & SIMPAR_RECOMPUTE_MOE)
        return moved; /* the block's input in its tokens' rows: the checkpoint's */
    double in_B = m->fp8 != SIMPAR_FP8_NONE ? memory_fp8_value_B(m) : ds; /* fc1's, fc2's */
    double act = mods & SIMPAR_RECOMPUTE_MOE_ACT ? 0 : fe; /* the activation's output */
    /* the delayed recipe's shared fc1 keeps its FP8 copy of the block's input too */
    double shared_in = m->fp8 == SIMPAR_FP8_DELAYED && fs > 0 ? h * in_B : 0;
    double shared =
        mods & SIMPAR_RECOMPUTE_SHARED_EXPERTS ? 0 : tokens * (w * fs * ds + fs * in_B + shared_in);
    return tokens * (double) e->experts * 4 +
           routed * etp * (h * (in_B + ds) + (w * fe * ds + act * in_B) / etp) + shared + moved;
}

/* How many GPUs share one copy of the parameters: simpar_plan_weight_split. 1-D replicates the
 * layer-norm parameters and the row-parallel biases, 6h per layer; they are counted as split
 * too, an undercount below 6h/(4h^2 + 2hf) (0.05% at h = 1024, f = 4h). 2.5-D keeps one copy
 * per depth layer. */

/* Bytes per parameter of weights, gradients and optimizer states (section 6.1): 16-bit weights
 * and gradients with fp32 master weights, momentum and variance (2 + 2 + 12); fp32 training
 * 4 + 4 + 8 (momentum, variance), fp64 8 + 8 + 16; gradients kept in fp32 (--grad-reduce-dtype)
 * take 4. ZeRO (section 4.1) partitions the optimizer states over the `shards` replicas of a
 * shard group (all D, or --shard-group's; an MoE layer's routed experts: the expert-data-parallel
 * group's, train.h) from stage 1, the gradients from 2, the weights from 3; with --no-reshard
 * the weights gathered in the forward stay whole until the backward. */
static void
memory_state_bytes_over(SimparDtype dtype, const SimparTrain *train, double shards, double bytes[3])
{
    double ds = simpar_dtype_size(dtype);
    bytes[0] = ds;
    bytes[1] = simpar_train_grad_bytes(train, dtype);
    bytes[2] = ds == 2 ? 12 : 2 * ds;
    for (gint i = 0; i < MIN(train->zero, 3); i++)
        if (!(i == 1 && !simpar_train_reduce_each_micro(train))) /* accumulated whole */
            bytes[2 - i] /= shards;
    if (train->no_reshard) /* the whole weights, beside the shard */
        bytes[0] += ds;
}

static void
memory_state_bytes(SimparDtype dtype, const SimparTrain *train, double bytes[3])
{
    memory_state_bytes_over(dtype, train, simpar_train_shard_group(train), bytes);
}

/* The FP8 terms (memory.h) of `lin` linear weight elements held on the GPU, `held_B` bytes of
 * each in weights_B: *fp8_B the copies added, the return value what weights_B loses. */
static double
memory_fp8(const SimparModel *model, const SimparTrain *train, double lin, double held_B,
           double *fp8_B)
{
    *fp8_B = 0;
    if (model->fp8 == SIMPAR_FP8_NONE)
        return 0;
    double ds = simpar_dtype_size(model->dtype), held = held_B / ds; /* copies of each element */
    double copy = memory_fp8_value_B(model);                         /* bytes per element */
    /* ZeRO-3 holds 1/S of the weights between uses: so many of their copies */
    double kept = MIN(held, 1.0);
    if (!train->fp8_param_gather) { /* the weight's FP8 copy and, on Hopper, its transpose
                                       (compute.c, compute_fp8_copies) */
        double copies = train->fp8_any_layout && model->fp8 != SIMPAR_FP8_MXFP8 ? 1 : 2;
        *fp8_B = lin * kept * copies * copy;
        return 0;
    }
    *fp8_B = lin * kept * copy;
    return lin * held * (ds - copy);
}

/* Multi-head latent attention's columns a token keeps where the residual stream's rows are (whole
 * without sequence parallelism, split with it): the query latent before and after its norm,
 * the key/value down projection's output and its latent's normalised part (0 without MLA). */
static double
memory_latent_cols(const SimparModel *m)
{
    const SimparMlaConfig *l = &m->mla;
    if (!simpar_model_is_mla(m))
        return 0;
    return (double) (2 * l->q_lora_rank + 2 * l->kv_lora_rank + l->qk_pos_emb_head_dim);
}

/* Bytes per value of what one layer keeps of its linears' inputs for their weight gradients:
 * the qkv and fc1 inputs (the norms' outputs), fc2's (the activation's output) and the
 * attention's output O with every copy of it (proj's input). ds each without FP8. Under FP8
 * (memory.h), as Transformer Engine and Megatron-Core keep them (Transformer Engine d0067d0d,
 * Megatron-LM d98e8a64):
 *   - LayerNormLinear (the qkv and fc1 linears of Megatron-Core's TE layer spec,
 *     megatron/core/models/gpt/gpt_layer_specs.py) quantizes its norm's output and saves only
 *     the FP8 copy, columnwise (or rowwise to all-gather it again under sequence parallelism,
 *     per-tensor scaling), one usage: memory_fp8_value_B bytes
 *     (transformer_engine/pytorch/module/layernorm_linear.py: ln_out.update_usage, then
 *     prepare_for_saving(inputmat, ..., ln_out_to_save, mu, rsigma)); the norm's input stays
 *     bf16 (counted as for bf16) and mu, rsigma are fp32 per token (not counted, as for bf16).
 *     Multi-head latent attention's projections read a separate norm's output and an MoE
 *     block's input is kept in bf16 by its router: those stay ds.
 *   - Linear (fc2, proj: module/linear.py, "Discard row-wise data since it is not needed in
 *     backward pass") saves its quantized input columnwise: fc2's input, the activation's
 *     output, is held in FP8 only (the fused SwiGLU and GeLU keep their bf16 input, fc1's
 *     output, megatron/core/fusions/fused_bias_swiglu.py).
 *   - proj: under current scaling and mxfp8 Megatron-Core sets save_original_input on it
 *     (megatron/core/transformer/attention.py: set_save_original_input(self.linear_proj)), so
 *     it keeps the bf16 O flash attention keeps anyway: O once, ds. Under the delayed recipe
 *     (refused by save_original_input) proj keeps its FP8 copy beside the bf16 O flash attention
 *     (not recomputed) keeps; with FP8 attention the delayed recipe's attention keeps O in FP8
 *     instead (FusedAttnFunc in transformer_engine/pytorch/attention/dot_product_attention/
 *     backends.py), so the bf16 O is freed; the unfused core keeps no O. */
typedef struct {
    double qkv, fc1, fc2, o;
} MemoryLinearInputs;

static MemoryLinearInputs
memory_linear_inputs(const SimparModel *m, const SimparPlan *plan, gboolean attn_keeps_o)
{
    double ds = simpar_dtype_size(m->dtype);
    MemoryLinearInputs in = {ds, ds, ds, ds};
    if (m->fp8 == SIMPAR_FP8_NONE)
        return in;
    double q = memory_fp8_value_B(m);
    gboolean delayed = m->fp8 == SIMPAR_FP8_DELAYED;
    gboolean fp8_o = attn_keeps_o && delayed && plan->fp8_attention;
    in.qkv = simpar_model_is_mla(m) ? ds : q;
    in.fc1 = simpar_model_is_moe(m) ? ds : q;
    in.fc2 = q;
    in.o = ((attn_keeps_o && !fp8_o) || !delayed ? ds : 0) + (fp8_o ? q : 0) + (delayed ? q : 0);
    return in;
}

/* One layer's stored activations per GPU and micro-batch, from Korthikanti et al.'s breakdown
 * (section 6.2) with ds bytes per value and 1 byte per dropout-mask element; at ds = 2 and
 * f = 4h it is their sbh(34 + 5as/h), and sbh(10 + 24/t + 5as/(ht)) for 1-D without sequence
 * parallelism. Full recomputation keeps the layer input only; selective's modules `mods`
 * (plan.h) drop theirs: core_attn the s^2 term (flash attention: its log-sum-exp), layernorm
 * the two norms' outputs (2sbh), mla_up_proj the latents' normalised parts and q, k, v, mlp
 * fc1's and the activation's outputs (the dense MLP's), moe, moe_act and shared_experts the MoE
 * block's (memory_moe_activations). What a module keeps as its checkpoint input is counted
 * already: the norms' inputs, the MLP's (the second norm's output), the latents. Under FP8 the
 * linears' inputs take memory_linear_inputs' bytes. */
static double
memory_layer_activations(const SimparModel *m, const SimparPlan *plan, SimparAttentionImpl attn,
                         SimparRecompute recompute, guint mods)
{
    /* context parallelism: each rank keeps s / C tokens of every sequence, and its scores span
     * all s keys */
    double C = simpar_plan_cp(plan), S = m->seq, s = S / C, b = m->micro_batch, h = m->hidden;
    gboolean moe = simpar_model_is_moe(m); /* the MLP's terms are the MoE block's */
    double f = moe ? 0 : m->ffn, a = m->heads;
    double qkv = (double) simpar_model_qkv_cols(m), fc1 = moe ? 0 : simpar_model_fc1_cols(m);
    double ds = simpar_dtype_size(m->dtype), sbh = s * b * h, t = plan->tp;
    /* 1-D without SP keeps the layer's input (and what replicates with it) whole on every GPU;
     * SP splits it by tokens; 2-D, 2.5-D (d q^2) and 3-D split every tensor over t */
    gboolean whole = simpar_plan_whole_rows(plan);
    if (recompute == SIMPAR_RECOMPUTE_FULL)
        return ds * sbh / (whole ? 1 : t);
    /* softmax output, its dropout mask and output; flash attention stores none of them but
     * the log-sum-exp of every query row, in fp32 (as do ring attention's blocks), and its
     * output O unless the core is recomputed */
    gboolean ring = C > 1 && plan->cp_ring;
    gboolean flash = attn == SIMPAR_ATTENTION_FLASH || ring;
    gboolean core = (mods & SIMPAR_RECOMPUTE_CORE_ATTN) != 0;
    MemoryLinearInputs in = memory_linear_inputs(m, plan, flash && !core);
    /* the two layer-norm inputs, the qkv and fc1 inputs (an MoE layer: the MoE block's, the
     * second norm's output, tp-layer.c), two dropout masks: the "10sbh";
     * a model trained without dropout keeps no masks (PyTorch's dropout at p = 0 returns its
     * input) */
    double mask = m->no_dropout ? 0 : 1;
    double replicated =
        sbh * (2 * ds + in.qkv + in.fc1 + 2 * mask) + s * b * memory_latent_cols(m) * ds;
    if (mods & SIMPAR_RECOMPUTE_LAYERNORM) /* the qkv and fc1 inputs */
        replicated -= sbh * (in.qkv + in.fc1);
    if (mods & SIMPAR_RECOMPUTE_MLA_UP_PROJ) /* the latents after their norms */
        replicated -= s * b * (double) (m->mla.q_lora_rank + m->mla.kv_lora_rank) * ds;
    /* Q, K, V, the proj input, the GeLU and fc2 inputs (the "24sbh" at f = 4h); with GQA, K and
     * V are kv/a of Q, with SwiGLU the activation's input is fc1's 2f columns; with MLA every
     * head's q and k of qk + rope columns and v of v_head_dim, the proj input a v_head_dim; FP8
     * attention keeps Q, K, V in FP8 (memory.h) */
    gboolean mla = simpar_model_is_mla(m);
    double qkv_cols =
        mla ? a * (2 * (double) simpar_model_qk_head_dim(m) + (double) simpar_model_v_head_dim(m))
            : qkv;
    double o_cols = mla || m->head_dim != 0 ? a * (double) simpar_model_v_head_dim(m) : h;
    double qkv_B =
        flash && plan->fp8_attention && m->fp8 != SIMPAR_FP8_NONE ? memory_fp8_value_B(m) : ds;
    double up = mods & SIMPAR_RECOMPUTE_MLA_UP_PROJ ? 0 : qkv_cols * qkv_B;
    double mlp = mods & SIMPAR_RECOMPUTE_MLP ? 0 : fc1 * ds + f * in.fc2;
    double split = s * b * (up + o_cols * in.o) + s * b * mlp;
    gboolean no_scores = flash || core;
    double scores = no_scores ? 0 : a * s * S * b * (ds + mask * (ds + 1));
    if (flash && !core)
        scores = a * s * b * 4;
    double experts = moe ? memory_moe_activations(m, plan, mods) : 0;
    if (whole)
        return replicated + (split + scores) / t + experts;
    return (replicated + split + scores) / t + experts;
}

/* What the plan keeps of one layer's activations. */
static double
memory_layer_kept(const SimparModel *m, const SimparPlan *plan, SimparAttentionImpl attn)
{
    return memory_layer_activations(m, plan, attn, plan->recompute,
                                    simpar_plan_recompute_set(plan));
}

/* What recomputation re-creates for one layer's backward, on top of what is stored: the
 * activations without recomputation less those kept. Selective's modules re-create theirs in
 * one of the backward's two parts, the MLP part's (the second norm, mlp, moe, moe_act,
 * shared_experts) freed before the attention part's (the first norm, mla_up_proj, core_attn)
 * is re-created: the larger part. */
static double
memory_recompute_peak(const SimparModel *m, const SimparPlan *plan, SimparAttentionImpl attn)
{
    double none = memory_layer_activations(m, plan, attn, SIMPAR_RECOMPUTE_NONE, 0);
    guint mods = simpar_plan_recompute_set(plan);
    if (plan->recompute != SIMPAR_RECOMPUTE_SELECTIVE || mods == SIMPAR_RECOMPUTE_CORE_ATTN)
        return none - memory_layer_kept(m, plan, attn);
    const guint attn_part = SIMPAR_RECOMPUTE_CORE_ATTN | SIMPAR_RECOMPUTE_MLA_UP_PROJ;
    const guint mlp_part = SIMPAR_RECOMPUTE_MLP | SIMPAR_RECOMPUTE_MOE | SIMPAR_RECOMPUTE_MOE_ACT |
                           SIMPAR_RECOMPUTE_SHARED_EXPERTS;
    double norm = 0; /* one norm's output: half of what layernorm drops */
    if (mods & SIMPAR_RECOMPUTE_LAYERNORM)
        norm = (none - memory_layer_activations(m, plan, attn, SIMPAR_RECOMPUTE_SELECTIVE,
                                                SIMPAR_RECOMPUTE_LAYERNORM)) /
               2;
    double a = none - memory_layer_activations(m, plan, attn, plan->recompute, mods & attn_part);
    double b = none - memory_layer_activations(m, plan, attn, plan->recompute, mods & mlp_part);
    return MAX(a, b) + norm;
}

double
simpar_memory_mtp_activations(const SimparModel *m, const SimparPlan *plan,
                              SimparAttentionImpl attn)
{
    double rows = (double) m->seq / simpar_plan_cp(plan) * (double) m->micro_batch;
    double split = simpar_plan_whole_rows(plan) ? 1 : (double) plan->tp;
    double token = (double) m->hidden * simpar_dtype_size(m->dtype) / split;
    if (m->mtp_layers == 0)
        return 0;
    if (plan->recompute == SIMPAR_RECOMPUTE_FULL) /* the checkpoint's two inputs */
        return 2 * rows * token;
    SimparModel kind;
    simpar_model_dense_layer(m, &kind);
    const SimparModel *layer = simpar_model_mtp_is_moe(m) ? m : &kind;
    return memory_layer_kept(layer, plan, attn) + 5 * rows * token;
}

/* The largest sum of one rank's working buffers while the layer runs. A buffer lives from the
 * first op of its rank that reads or writes it to the last. Buffers both phases use are the
 * weights and what the forward keeps for the backward (model states and activations, counted
 * apart), as are the weight gradients and the layer's input; what is left is created and
 * dropped within one phase: gathered inputs, partial sums, the backward's gradients (the
 * attention probabilities of the unfused kernel are kept for the backward: activations). */
static double
memory_transient(const SimparSchedule *layer)
{
    guint n_bufs = simpar_schedule_n_buffers(layer), n_ops = simpar_schedule_n_ops(layer);
    guint n_shards;
    const SimparShard *shards = simpar_schedule_shards(layer, &n_shards);
    g_autofree guint *first = g_new(guint, n_bufs), *last = g_new0(guint, n_bufs);
    g_autofree guint8 *touched = g_new0(guint8, n_bufs); /* a bit per phase */
    /* the blocks the other terms count: a parameter's gradient (model states), a layer input
     * the forward reads (the layer's own input, kept as an activation; its weights); the
     * backward's input, the gradient from the layer above, is working memory */
    g_autofree guint8 *grad = g_new0(guint8, n_bufs), *input = g_new0(guint8, n_bufs);
    for (guint i = 0; i < n_shards; i++) {
        grad[shards[i].view.buf] |= g_str_has_suffix(shards[i].tensor, ".grad");
        input[shards[i].view.buf] |= shards[i].role == SIMPAR_SHARD_INPUT;
    }
    for (guint b = 0; b < n_bufs; b++)
        first[b] = G_MAXUINT;
    for (guint i = 0; i < n_ops; i++) {
        const SimparOp *op = simpar_schedule_op(layer, i);
        SimparAccess acc[SIMPAR_MAX_ACCESSES];
        guint n = simpar_op_accesses(layer, op, acc);
        for (guint k = 0; k < n; k++) {
            guint b = acc[k].buf;
            first[b] = MIN(first[b], i), last[b] = i;
            touched[b] |= (guint8) (1u << op->phase);
        }
    }
    /* elements each op brings to life and lets go of, on its rank */
    g_autofree double *born = g_new0(double, n_ops), *freed = g_new0(double, n_ops);
    const guint8 both = (1u << SIMPAR_PHASE_FORWARD) | (1u << SIMPAR_PHASE_BACKWARD);
    for (guint b = 0; b < n_bufs; b++) {
        const SimparBuffer *buf = simpar_schedule_buffer(layer, b);
        if (first[b] == G_MAXUINT || (touched[b] & both) == both || grad[b] ||
            (input[b] && (touched[b] & (1u << SIMPAR_PHASE_FORWARD))))
            continue;
        born[first[b]] += (double) buf->elems;
        freed[last[b]] += (double) buf->elems;
    }
    g_autofree double *live = g_new0(double, simpar_schedule_n_ranks(layer));
    double peak = 0;
    for (guint i = 0; i < n_ops; i++) {
        guint r = simpar_schedule_op(layer, i)->rank;
        live[r] += born[i];
        peak = MAX(peak, live[r]);
        live[r] -= freed[i];
    }
    return peak * simpar_dtype_size(simpar_schedule_dtype(layer));
}

/* The all-gather dispatcher's working set per GPU (moe.h; plan->moe_gather): while an MoE layer
 * runs, the G = ETP x EP ranks' gathered tokens [G T x h] (token_dispatcher.py gathers them into
 * the global memory buffer) beside their un-permuted expert rows [G T x h] before the
 * reduce-scatter, and the gathered probs [G T x E]; the backward's gathered dy and the gathered
 * tokens' gradients likewise. Nothing of it is kept for the backward (the permutations keep
 * their indices; the experts' rows, counted in memory_moe_activations, are the all-to-all's);
 * added to the layer's transient buffers, an upper bound. 0 when the group is one GPU. */
static double
memory_moe_gather(const SimparModel *m, const SimparPlan *plan)
{
    double G = (double) MAX(plan->ep, 1) * (double) MAX(plan->etp, 1);
    if (!plan->moe_gather || !simpar_model_is_moe(m) || G < 2)
        return 0;
    return G * memory_moe_tokens(m, plan) * (2 * (double) m->hidden + (double) m->moe.experts) *
           simpar_dtype_size(m->dtype);
}

void
simpar_memory_estimate(const SimparModel *model, const SimparPlan *plan,
                       const SimparSchedule *layer, SimparAttentionImpl attn, SimparMemory *out)
{
    g_return_if_fail(model != NULL && plan != NULL && layer != NULL && out != NULL);
    g_return_if_fail(plan->gen != NULL && plan->tp > 0 && plan->q > 0);
    double split = simpar_plan_weight_split(plan), bytes[3];
    g_return_if_fail(split > 0); /* an unknown mode: the plan was not validated */
    double layers = model->layers, dense = 0;
    SimparModel dense_model; /* an MoE model's dense layers: the model without experts */
    simpar_model_dense_layer(model, &dense_model);
    if (simpar_model_has_dense_layers(model))
        dense = layers - (double) simpar_model_moe_layers(model, 0, model->layers);
    SimparTrain unsplit;
    simpar_train_init(&unsplit);
    memory_state_bytes(model->dtype, &unsplit, bytes);
    *out = (SimparMemory){
        .params = memory_layers_params(model, plan, split, layers - dense) +
                  (dense > 0 ? memory_layers_params(&dense_model, plan, split, dense) : 0)};
    out->weights_B = out->params * bytes[0];
    out->grads_B = out->params * bytes[1];
    out->optimizer_B = out->params * bytes[2];
    double lin = layers * simpar_model_layer_weights(model) / split;
    out->weights_B -= memory_fp8(model, &unsplit, lin, bytes[0], &out->fp8_B);
    out->states_B = out->weights_B + out->grads_B + out->optimizer_B + out->fp8_B;
    out->activations_B = (layers - dense) * memory_layer_kept(model, plan, attn);
    out->recompute_B = layers > dense ? memory_recompute_peak(model, plan, attn) : 0;
    if (dense > 0) {
        out->activations_B += dense * memory_layer_kept(&dense_model, plan, attn);
        out->recompute_B = MAX(out->recompute_B, memory_recompute_peak(&dense_model, plan, attn));
    }
    out->in_flight = 1;
    out->transient_B = memory_transient(layer) + memory_moe_gather(model, plan);
    out->total_B = out->states_B + out->activations_B + out->recompute_B + out->transient_B;
}

/* ------------------------------------------------------------------------- a training step */

/* The shape of the step as this module needs it (from a SimparTrain, validated or not). */
typedef struct {
    double P, v, m;       /* stages, chunks per device, micro-batches per replica */
    double chunk_layers;  /* layers per chunk */
    gboolean first, last; /* the device holds the first / last (virtual) stage */
} SimparMemoryStage;

static gboolean
memory_stage(const SimparModel *model, const SimparTrain *train, guint stage, SimparMemoryStage *st)
{
    g_return_val_if_fail(train->pp > 0 && train->dp > 0 && stage < train->pp, FALSE);
    gint64 v = train->schedule == SIMPAR_PIPE_INTERLEAVED ? MAX(train->virtual_stages, 1) : 1;
    gint64 m = train->micro_batches;
    if (m == 0) /* not validated: m = global_batch / (b D) */
        m = MAX(train->global_batch / (model->micro_batch * train->dp), 1);
    double chunk_layers = (double) train->layers_per_chunk;
    if (chunk_layers == 0 && train->layers > 0) { /* uneven chunks: this device's mean */
        double layers = 0;
        for (gint64 c = 0; c < v; c++)
            layers += simpar_train_stage_layers(train, (guint) (c * train->pp) + stage);
        chunk_layers = layers / (double) v;
    } else if (chunk_layers == 0) {
        g_return_val_if_fail(model->layers % (train->pp * v) == 0, FALSE);
        chunk_layers = (double) (model->layers / (train->pp * v));
    }
    *st = (SimparMemoryStage){(double) train->pp, (double) v, (double) m,
                              chunk_layers,       stage == 0, stage == train->pp - 1};
    return TRUE;
}

/* An MoE model's dense layers (--dense-layers, --moe-every) among the layers of device `stage`'s
 * chunks, by their indices as the pipeline lays layers out (the even split's where the train is
 * not validated); 0 for a model without them. */
static double
memory_stage_dense(const SimparModel *m, const SimparTrain *train, const SimparMemoryStage *st,
                   guint stage)
{
    if (!simpar_model_has_dense_layers(m))
        return 0;
    gint64 dense = 0;
    for (guint c = 0; c < (guint) st->v; c++) {
        guint vs = c * (guint) train->pp + stage;
        gint64 lc = (gint64) st->chunk_layers, first = (gint64) vs * lc;
        if (train->layers > 0) /* validated: uneven first and last stages too */
            lc = simpar_train_stage_layers(train, vs),
            first = simpar_train_stage_first_layer(train, vs);
        dense += lc - simpar_model_moe_layers(m, first, first + lc);
    }
    return (double) dense;
}

/* Chunk-micro-batches whose activations device `p` holds at its peak (section 3): the forwards
 * it runs before its first backward, plus the first steady-state forward. */
static double
memory_chunks_in_flight(SimparPipeSchedule schedule, const SimparMemoryStage *st, double p)
{
    switch (schedule) {
    case SIMPAR_PIPE_GPIPE:
        return st->m;
    case SIMPAR_PIPE_1F1B:
        return MIN(st->P - p, st->m);
    case SIMPAR_PIPE_INTERLEAVED: /* warm-up 2(P - p - 1) + (v - 1) N, N = P (pipeline.h) */
        return MIN(st->m * st->v, 2 * (st->P - p - 1) + (st->v - 1) * st->P + 1);
    case SIMPAR_PIPE_LOCAL: /* each micro-batch's backward follows its forward */
        return 1;
    default:
        g_return_val_if_reached(0);
    }
}

/* Parameters of the embedding (first stage), the output layer (last stage; the embedding
 * itself when tied and P = 1) and, under local parallelism, the auxiliary head of width W of
 * every chunk but the last, whose head is the output layer. Vocabulary-parallel: / T. */
static double
memory_head_params(const SimparModel *model, const SimparTrain *train, const SimparMemoryStage *st)
{
    double h = model->hidden, V = model->vocab, T = train->tp.tp;
    double W = train->aux_head_width > 0 ? (double) train->aux_head_width : V, n = 0;
    if (st->first)
        n += h * V / T;
    if (st->last && !(train->tied_embeddings && st->first))
        n += h * V / T;
    if (st->last && !st->first && model->mtp_layers > 0 && !train->tied_embeddings &&
        train->schedule != SIMPAR_PIPE_LOCAL) /* multi-token prediction's copy */
        n += h * V / T;
    if (train->schedule == SIMPAR_PIPE_LOCAL && !st->last)
        n += h * W / T;
    return n;
}

/* The multi-token prediction modules on the device: the last stage's (model.h). */
static gint64
memory_mtp_modules(const SimparModel *model, const SimparTrain *train, const SimparMemoryStage *st)
{
    return st->last && train->schedule != SIMPAR_PIPE_LOCAL ? model->mtp_layers : 0;
}

/* Logits kept for the loss: b s V/T on the last stage (local parallelism: b s W/T on the
 * others) in fp32, as Megatron's vocabulary-parallel cross entropy casts them to float and
 * keeps the softmax for its backward; GPipe keeps all m micro-batches' until the backward
 * phase, the other schedules run a micro-batch's loss backward right after its forward. */
static double
memory_logits(const SimparModel *model, const SimparTrain *train, const SimparMemoryStage *st)
{
    double sb = (double) model->seq / simpar_plan_cp(&train->tp) * (double) model->micro_batch;
    double T = train->tp.tp;
    double ds = MAX(4, simpar_dtype_size(model->dtype)), V = model->vocab;
    double W = train->aux_head_width > 0 ? (double) train->aux_head_width : V;
    if (st->last) /* the output layer's and each multi-token prediction module's */
        return sb * V / T * ds * (train->schedule == SIMPAR_PIPE_GPIPE ? st->m : 1) *
               (double) (1 + memory_mtp_modules(model, train, st));
    return train->schedule == SIMPAR_PIPE_LOCAL ? sb * W / T * ds : 0;
}

double
simpar_memory_layer_activations(const SimparModel *model, const SimparPlan *plan,
                                SimparAttentionImpl attn)
{
    return memory_layer_kept(model, plan, attn);
}

void
simpar_memory_step(const SimparModel *model, const SimparTrain *train, guint stage,
                   double transient_B, SimparAttentionImpl attn, SimparMemory *out)
{
    g_return_if_fail(model != NULL && train != NULL && out != NULL);
    const SimparPlan *plan = &train->tp;
    g_return_if_fail(plan->gen != NULL && plan->tp > 0 && plan->q > 0);
    double split = simpar_plan_weight_split(plan), bytes[3];
    SimparMemoryStage st;
    g_return_if_fail(split > 0); /* an unknown mode: the plan was not validated */
    if (!memory_stage(model, train, stage, &st))
        return;
    memory_state_bytes(model->dtype, train, bytes);
    double layers = st.chunk_layers * st.v;
    /* an MoE model's dense layers: the parameters and activations of the model without experts */
    double dense = memory_stage_dense(model, train, &st, stage);
    SimparModel dense_model;
    simpar_model_dense_layer(model, &dense_model);
    double layer_params = memory_layers_params(model, plan, split, layers - dense);
    if (dense > 0)
        layer_params += memory_layers_params(&dense_model, plan, split, dense);
    /* multi-token prediction on the last stage: its layers (the last layer's kind), eh_proj and
     * norms with the layers' states; their activations for as many micro-batches as its last
     * chunk holds (GPipe all m, the others one: a micro-batch's loss backward follows its
     * forward) */
    double mtp = (double) memory_mtp_modules(model, train, &st);
    gboolean mtp_moe = simpar_model_mtp_is_moe(model);
    const SimparModel *mtp_model = mtp_moe ? model : &dense_model;
    layer_params += mtp * (memory_layers_params(mtp_model, plan, split, 1) +
                           simpar_memory_mtp_proj_params(model, (double) plan->tp));
    double head_params = memory_head_params(model, train, &st);
    double chunks = memory_chunks_in_flight(train->schedule, &st, stage);
    /* The merged 1F1B (pipeline.h) runs one more warm-up forward, but its steady-state forward
     * runs layer by layer beside a backward that frees a layer as the forward keeps one
     * (Megatron-Core's model_chunk_schedule_plan.py, TransformerModelChunkSchedulePlan.run:
     * forward layer i with backward layer n - 1 - i): the same chunks as the schedule's own, and
     * one layer more, where a steady state follows the warm-up. */
    double merged_layer = train->ep_overlap && chunks < st.m * st.v ? 1 : 0;
    /* the routed experts' states: ZeRO shards them over the expert-data-parallel group */
    double experts = simpar_model_is_moe(model)
                         ? (layers - dense + (mtp_moe ? mtp : 0)) *
                               simpar_moe_expert_params(model, plan->ep, plan->etp)
                         : 0,
           eb[3];
    memory_state_bytes_over(model->dtype, train, simpar_train_expert_replicas(train), eb);
    *out = (SimparMemory){.params = layer_params + head_params};
    out->weights_B = (layer_params - experts) * bytes[0] + experts * eb[0];
    out->grads_B = (layer_params - experts) * bytes[1] + experts * eb[1];
    out->optimizer_B = (layer_params - experts) * bytes[2] + experts * eb[2];
    out->embedding_B = head_params * (bytes[0] + bytes[1] + bytes[2]);
    out->embedding_weights_B = head_params * bytes[0];
    out->embedding_grads_B = head_params * bytes[1];
    double lin = (layers + mtp) * simpar_model_layer_weights(model) / split;
    out->weights_B -= memory_fp8(model, train, lin, bytes[0], &out->fp8_B);
    out->states_B =
        out->weights_B + out->grads_B + out->optimizer_B + out->embedding_B + out->fp8_B;
    double act = memory_layer_kept(model, plan, attn);
    /* the larger recomputation of the stage's kinds of layer (a stage of dense layers only: the
     * dense layer's) */
    double recompute = layers > dense ? memory_recompute_peak(model, plan, attn) : 0;
    if (dense > 0) { /* a layer's mean over the stage's */
        act =
            ((layers - dense) * act + dense * memory_layer_kept(&dense_model, plan, attn)) / layers;
        recompute = MAX(recompute, memory_recompute_peak(&dense_model, plan, attn));
    }
    out->activations_B = act * (st.chunk_layers * chunks + merged_layer);
    if (mtp > 0)
        out->activations_B += mtp * (train->schedule == SIMPAR_PIPE_GPIPE ? st.m : 1) *
                              simpar_memory_mtp_activations(model, plan, attn);
    out->in_flight = (chunks + merged_layer / MAX(st.chunk_layers, 1)) / st.v;
    out->head_B = memory_logits(model, train, &st);
    out->recompute_B = layers > 0 ? recompute : 0;
    out->transient_B = transient_B;
    out->total_B =
        out->states_B + out->activations_B + out->head_B + out->recompute_B + out->transient_B;
}

void
simpar_memory_step_peak(const SimparModel *model, const SimparTrain *train, double transient_B,
                        SimparAttentionImpl attn, SimparMemory *out, guint *stage)
{
    g_return_if_fail(model != NULL && train != NULL && out != NULL && train->pp > 0);
    for (guint p = 0; p < (guint) train->pp; p++) {
        SimparMemory mem;
        simpar_memory_step(model, train, p, transient_B, attn, &mem);
        if (p == 0 || mem.total_B > out->total_B) {
            *out = mem;
            if (stage != NULL)
                *stage = p;
        }
    }
}
