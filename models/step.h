/* step.h - the schedule of one whole optimizer step: pipeline, data parallelism, ZeRO, ends.
 *
 * Built from the training plan (train.h), the pipeline order of every device (pipeline.h) and
 * the tensor-parallel layer schedule of one stage (generators.h). Every GPU of the job is a
 * rank; each runs, in its device's pipeline order, the forwards and backwards of its model
 * chunks, with the embedding on the first virtual stage and the output layer and loss on the
 * last; activations and gradients travel by send/recv between neighbouring stages; gradients
 * are reduced over the data-parallel group in buckets; the optimizer updates what the rank holds.
 *
 *   rank (t, d, p)  compute:  [recv act] [layers fwd j] .. [recv grad] [layers bwd j] .. [adam]
 *                   p2p-fwd:              [send act j] ..
 *                   p2p-bwd:                                   [send grad j] ..
 *                   dp:                                           [bucket 0] [bucket 1] ..
 *
 * The compute of a chunk is a timed block (SIMPAR_OP_BLOCK, keys below), whose time the caller
 * measures by simulating the tensor-parallel schedules of one stage on the platform: the
 * step schedule then has a few hundred ops per rank at any model size. Blocks:
 *   "layer.fwd" / "layer.bwd"  one layer, forward / backward (recomputation included), x count
 *   "dense.fwd" / "dense.bwd"  an MoE model's dense layers (--dense-layers, --moe-every): one
 *                              dense layer, x count; each layer of a chunk runs its kind's
 *                              block (simpar_model_layer_is_moe of the model's layer index as
 *                              the pipeline lays layers out), a run of alike layers one block,
 *                              and holds its kind's parameters (a dense one no experts)
 *   "embed.fwd" / "embed.bwd"  vocabulary-parallel embedding over the tensor-parallel group
 *   "head.fwd" / "head.bwd"    output layer and cross-entropy (forward with the loss)
 *   "aux.fwd" / "aux.bwd"      local parallelism: a chunk's auxiliary head and local loss
 *   "mtp.fwd" / "mtp.bwd"      a multi-token prediction module's norms and eh_proj (model.h);
 *                              on the last virtual stage each module also runs "embed.*", one
 *                              layer's block (the last layer's kind) and "head.*", its
 *                              parameters after the output layer's, and with P > 1 the
 *                              embedding's copy there is all-reduced with the first stage's
 *   "optimizer"                Adam over the rank's parameters (x count / 1e6: per million)
 *   "fp8.cast"                 FP8 models: one layer's weights cast to FP8, x count; once per
 *                              step before a chunk's first forward (Transformer Engine caches
 *                              them for the other micro-batches), under ZeRO-3 before every
 *                              layer's forward (the executable steps below have none: their
 *                              FP8 GEMMs are timed without the weights' casts)
 *   "dense.fp8.cast"           the same for an MoE model's dense layers' weights
 *   "optimizer.tp-stats"       the tensor-parallel part of an optimizer scalar all-reduce (one
 *                              fp32 over the first tensor-parallel group), x count
 *
 * --overlap-moe-expert-parallel-comm (train.h, Megatron-Core's combined 1F1B): the pipeline
 * order has one more warm-up forward (pipeline.h, simpar_pipeline_order_merged) and each (F, B)
 * pair after it is one merged step, its layers' nodes interleaved on the compute and "comm"
 * streams (step-overlap.c): "moe.fwd.pre", "moe.fwd.dispatch", "moe.fwd.mlp", "moe.fwd.combine"
 * and "moe.bwd.combine", "moe.bwd.mlp", "moe.bwd.dispatch", "moe.bwd.pre" (an MoE layer's
 * parts; a dense layer stays one block). Timed blocks only.
 *
 * Data parallelism (reference 4): buckets of train->bucket_params parameters over the
 * gradient buffer in reverse layer order; with --overlap-grad-reduce bucket k starts when the
 * last backward of the layers it holds ends (only the last micro-batch of each chunk produces
 * final gradients), else after the whole backward. ZeRO 0: all-reduce; 1: reduce-scatter, Adam
 * on 1/D, all-gather of the parameters; 2: reduce-scatter after every micro-batch's backward;
 * 3: also all-gathers of every layer's parameters before its forward and its backward.
 * --overlap-param-gather (ZeRO 1/2): no all-gather after Adam; the step is the steady state in
 * which each bucket's is issued under the forward, as Megatron-Core's forward pre-hooks and
 * interleaved schedule issue them, and each layer's first forward waits for its buckets'
 * (docs/how-it-works.md, step 10).
 *
 * Ownership: the schedule is the caller's.
 */
#ifndef SIMPAR_STEP_H
#define SIMPAR_STEP_H
#include "schedule.h"
#include "train.h"
G_BEGIN_DECLS

/* The step schedule with timed blocks; `layer` is the one-layer schedule of train->tp (as
 * simpar_generate_layer built it), `train` validated. */
SimparSchedule *simpar_step_build(const SimparModel *model, const SimparTrain *train,
                                  const SimparSchedule *layer); /* (transfer full) */
/* The ranks of tensor-parallel index t only (P x D of them, numbered as
 * simpar_train_tp_slice's split numbers them), with the groups among them; every op is the one
 * simpar_step_build gives rank (t, d, p). Not with scatter/gather (a tensor-parallel group
 * between stages would join the slices). */
SimparSchedule *simpar_step_build_slice(const SimparModel *model, const SimparTrain *train,
                                        const SimparSchedule *layer, guint t); /* (transfer full) */

/* The same step with every op spelled out, for the host executor and other interpreters that
 * run real numbers: each layer of each micro-batch is the ops of `layer` (any tensor-parallel
 * mode the ends support, below; recomputation included) on the rank's GPUs, the ends are
 * simpar_ends_build's, the pipeline, data-parallel all-reduce buckets and Adam are as above.
 * Gradients of every micro- batch are added into the rank's "grads" buffer; the loss is the mean
 * cross-entropy over every token of the global batch (each XENT op scaled by 1 / (D m b s));
 * dropout masks follow simpar_train_dropout_seed with train->tp.seed as the base.
 *
 * Shards (schedule.h) name what the caller fills and reads: "embedding.weight" [V x h],
 * "output.weight" [h x V], "layers.<l>.<tensor>" (the layer schedule's names, l over the whole
 * model), each an input and, updated by Adam, an output; "<name>.grad" outputs, the gradients
 * summed over the global batch; "tokens" and "targets" [D m b s x 1] inputs, the rows of
 * replica d's micro-batch j at (d m + j) b s; "loss" [D x 1], replica d's part of the loss, on
 * its last stage.
 *
 * Refused (SIMPAR_PLAN_ERROR_INVALID, naming the flag): tensor-parallel modes other than 1-D
 * (the ends would need their row-major results rearranged into 2-D/2.5-D/3-D blocks, which the
 * IR has no op for), local parallelism, MoE models, ZeRO stage 2, tied embeddings, a vocabulary not
 * divisible by T, and steps whose schedule would exceed 1e6 ops (this mode is for small models). */
SimparSchedule *simpar_step_build_ops(const SimparModel *model, const SimparTrain *train,
                                      const SimparSchedule *layer,
                                      GError **error); /* (transfer full) */

/* The optimizer step's scalar all-reduces (train->scalars, train.h): how many a step runs
 * before Adam (the gradient norm, and the inf/nan flag with fp16), and the elements of `dt`
 * that carry `bytes` (one fp32: 4; the loss and its token count: 8), at least one. */
guint simpar_step_n_scalars(const SimparTrain *train, SimparDtype dt);
gsize simpar_step_scalar_count(SimparDtype dt, gsize bytes);

G_END_DECLS
#endif /* SIMPAR_STEP_H */
