/* memory.h - bytes one GPU needs to train: one tensor-parallel layer stack, or a whole step.
 *
 *   total = model states + stored activations + the transient peak of one layer
 *         (+ for a step: embedding and heads with their states, the loss logits, the layer
 *            re-created by recomputation)
 *
 * Model states: 16 bytes per parameter held by the GPU (16-bit weights and gradients plus fp32
 * Adam master weights, momentum and variance; fp32 training: 4+4+8; fp64: 8+8+16), parameters of
 * the layers divided as the mode divides them (1-D P, 2-D q^2, 2.5-D q^2 (replicated over
 * depth), 3-D q^3); ZeRO stage 1 divides the optimizer states by D, 2 also the gradients, 3 also
 * the weights. Activations per layer follow Korthikanti et al. (arXiv 2205.05198, sections
 * 4.1-4.2 and Table 2) with the dtype's size for values (FP8 models: the linears' inputs as
 * Transformer Engine keeps them, below) and one byte per dropout-mask element;
 * flash attention and selective recomputation drop the s x s term, full recomputation keeps the
 * layer input (ds s b h, / T when it is split). The transient peak is one layer's buffers.
 *
 * A step (simpar_memory_step) multiplies the layer term by the layers on the device and the
 * micro-batches it holds at its peak, device (stage) p of P, m micro-batches:
 *
 *   GPipe m | 1F1B min(P - p, m) | local parallelism 1 | interleaved, v chunks of L/(P v) layers:
 *   min(m v, 2 (P - p - 1) + (v - 1) P + 1) chunk-micro-batches (Megatron's warm-up plus the
 *   first steady forward; on device 0: P (1 + (P - 1)/(P v)) micro-batches of L/P layers)
 *
 * Ownership: value types.
 */
#ifndef SIMPAR_MEMORY_H
#define SIMPAR_MEMORY_H
#include "compute.h"
#include "plan.h"
#include "train.h"
G_BEGIN_DECLS

typedef struct {
    double params;        /* parameters of the GPU's share of the model (elements; tensor and
                             pipeline splits, before ZeRO partitions them) */
    double states_B;      /* weights, gradients, optimizer states (step: embedding_B included) */
    double activations_B; /* stored for backward: all layers, all micro-batches held */
    double transient_B;   /* one layer's working buffers */
    double total_B;       /* states + activations + head + recompute + transient */
    /* the parts (simpar_memory_estimate leaves embedding_B and head_B 0, in_flight 1) */
    double weights_B;   /* layer weights, after ZeRO-3 */
    double grads_B;     /* layer gradients, after ZeRO-2 */
    double optimizer_B; /* layer optimizer states, after ZeRO-1 */
    double embedding_B; /* embedding, output layer, auxiliary heads: weights, grads, optimizer */
    double embedding_weights_B, embedding_grads_B; /* of embedding_B (the rest: optimizer) */
    double head_B;                                 /* logits kept for the loss (fp32) */
    double recompute_B; /* one layer's activations re-created in its backward (recompute) */
    double in_flight;   /* micro-batches of the device's layers whose activations it holds */
    double fp8_B;       /* FP8 models: Transformer Engine's FP8 copies of the layer weights held
                           (in states_B; with --fp8-param-gather weights_B holds them in FP8) */
} SimparMemory;

/* FP8 (model->fp8): Transformer Engine keeps, for every linear weight element held, an FP8 copy and
 * its transpose cache (Hopper's FP8 GEMMs take TN operands only), 2 bytes (mxfp8: a rowwise and a
 * columnwise copy with one scale byte per 32 values, 2 (1 + 1/32)); on a GPU whose FP8 GEMMs take
 * every layout (train->fp8_any_layout, Blackwell) a per-tensor recipe's copy alone, 1 byte
 * (quantizer.cpp writes no transpose where nvte_is_non_tn_fp8_gemm_supported); with
 * --fp8-param-gather the parameter itself is FP8 (1 byte, mxfp8 1 + 1/32, in place of the model's
 * 2) and only the transposed copy is added. Activations: Transformer Engine's linears keep their
 * inputs for the weight gradient as one FP8 copy (one usage, rowwise or columnwise: 1 byte, mxfp8 1
 * + 1/32 with its block scales), not in bf16: the qkv and fc1 inputs (the norms' outputs; their
 * bf16 inputs stay) and fc2's (the activation's output; its bf16 input, fc1's output, stays);
 * proj's input O is held in bf16 once under current scaling and mxfp8 (Megatron-Core's
 * save_original_input: proj keeps the bf16 O flash attention keeps), and under the delayed recipe
 * as proj's FP8 copy beside the bf16 O flash attention keeps (the unfused core keeps none); an MoE
 * block's experts keep their fc1 and fc2 inputs in FP8, its shared experts fc2's (fc1 reads the
 * router's bf16 input; the delayed recipe adds its FP8 copy). Multi-head latent attention's
 * projections are counted as for bf16. FP8 attention (plan->fp8_attention, flash attention):
 * Transformer Engine's FusedAttnFunc saves Q, K and V for the backward in FP8 (1 byte, mxfp8 1 +
 * 1/32) in place of bf16, and under the delayed recipe O in FP8 in place of the bf16 O (current
 * scaling and mxfp8 keep O in bf16). Sources and details: memory.c, memory_linear_inputs.
 *
 * `plan` must be validated (plan->q set); `layer` is the plan's one-layer schedule. All L layers
 * and one micro-batch; honours plan->recompute. */
void simpar_memory_estimate(const SimparModel *model, const SimparPlan *plan,
                            const SimparSchedule *layer, SimparAttentionImpl attn,
                            SimparMemory *out);
/* One GPU of pipeline stage (device) `stage`, 0 <= stage < P, at its peak in a training step.
 * `train->tp` must be validated (q set); m is train->micro_batches (when 0:
 * global_batch / (b D)), the layers per chunk train->layers_per_chunk (when 0: L / (P v), which
 * must divide). `transient_B` is one layer's working buffers (the caller's schedule). */
void simpar_memory_step(const SimparModel *model, const SimparTrain *train, guint stage,
                        double transient_B, SimparAttentionImpl attn, SimparMemory *out);
/* One layer's stored activations per GPU and micro-batch under plan->recompute (selective: its
 * recompute_modules, plan.h): what a layer's forward keeps for its backward (a step's
 * activations_B is this times the layers and micro-batches held). */
double simpar_memory_layer_activations(const SimparModel *model, const SimparPlan *plan,
                                       SimparAttentionImpl attn);
/* The whole model's parameters: the embedding and the output layer (untied, V h each), every
 * layer (a dense layer's MLP, an MoE layer's router, shared and routed experts), the final
 * norm. */
double simpar_memory_model_params(const SimparModel *model);
/* Multi-token prediction (model.h): one module's eh_proj share and norms on a GPU of a
 * T-wide tensor-parallel group (eh_proj [2h x h] column-parallel over the group as Megatron-Core
 * splits it, its three norms whole); the whole model's modules' own parameters (their layers,
 * eh_proj and norms, every layer as simpar_memory_model_params counts it); and the activations
 * one module keeps per GPU and micro-batch: its layer's and its own, the embedding and hidden
 * state the two norms read, their concatenation (eh_proj's input) and the final norm's input,
 * 5 h values a token, split over T where the residual stream is; under full recomputation
 * (Megatron-Core checkpoints the module's projection and layer whole) only those two inputs,
 * 2 h a token. */
double simpar_memory_mtp_proj_params(const SimparModel *model, double T);
double simpar_memory_mtp_params(const SimparModel *model);
double simpar_memory_mtp_activations(const SimparModel *model, const SimparPlan *plan,
                                     SimparAttentionImpl attn);
/* The stage with the largest total (the first of equals) and its figures. */
void simpar_memory_step_peak(const SimparModel *model, const SimparTrain *train, double transient_B,
                             SimparAttentionImpl attn, SimparMemory *out, guint *stage);

G_END_DECLS
#endif /* SIMPAR_MEMORY_H */
