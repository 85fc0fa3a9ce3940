/* train.h - the whole training job: how a step splits over tensor, pipeline and data parallelism.
 *
 * A SimparTrain wraps the tensor-parallel plan of one stage (plan.h) with the step-level split:
 * P pipeline stages (or K local-parallelism chunks), D data-parallel replicas, the pipeline
 * schedule, micro-batches, ZeRO stage, gradient-reduction overlap and the placement of ranks.
 *
 *   GPUs = T x P x D           m = global_batch / (micro_batch * D) micro-batches per replica
 *   rank = t + T * (d + D * p)  default order "tp,dp,pp": tensor-parallel innermost (inside a
 *                               node), then data, then pipeline (Megatron-LM's order)
 *
 *   stage p holds layers [p*L/P, (p+1)*L/P); interleaved: device p holds v chunks, chunk c is
 *   virtual stage c*P + p with L/(P*v) layers (or as Megatron-Core's layout string or its
 *   accounted split gives them, a chunk possibly none); the embedding sits on the first
 *   (virtual) stage, the output layer and loss on the last.
 *
 * simpar_train_validate() derives m, the layer split and the rank strides, and refuses what no
 * implementation would run, naming the flag and what would be valid.
 *
 * Ownership: value types; strings are interned.
 */
#ifndef SIMPAR_TRAIN_H
#define SIMPAR_TRAIN_H
#include "model.h"
#include "plan.h"
G_BEGIN_DECLS

typedef enum {
    SIMPAR_PIPE_GPIPE,       /* fill-drain: all forwards, then all backwards */
    SIMPAR_PIPE_1F1B,        /* PipeDream-Flush: Megatron's non-interleaved schedule */
    SIMPAR_PIPE_INTERLEAVED, /* Megatron's interleaved 1F1B with v model chunks per device */
    SIMPAR_PIPE_LOCAL,       /* local parallelism: chunks trained by their own auxiliary heads */
    SIMPAR_N_PIPE_SCHEDULES,
} SimparPipeSchedule;

/* The axes of the rank placement. */
typedef enum {
    SIMPAR_AXIS_TP,
    SIMPAR_AXIS_DP,
    SIMPAR_AXIS_PP,
    SIMPAR_AXIS_CP, /* context parallelism: right after tp unless --order says otherwise */
    SIMPAR_AXIS_EP, /* expert parallelism (MoE layers only): right after cp unless placed */
    SIMPAR_N_TRAIN_AXES,
} SimparTrainAxis;

/* Mixed-precision AdamW (schedule.h, SimparAdam), the same for every parameter. */
typedef struct {
    double lr, beta1, beta2, eps, weight_decay;
} SimparAdamConfig;

/* How an MoE layer's tokens reach their experts (moe.h): Megatron-Core's all-to-all token
 * dispatcher (one flat all-to-all over the expert-parallel group, a copy per (token, expert)),
 * DeepEP's hierarchical dispatch (Megatron-Core's flex dispatcher with DeepEP,
 * github.com/deepseek-ai/DeepEP "normal" kernels; DeepSeek-V3, arXiv 2412.19437 section
 * 3.2.2): a copy per (token, target node) over the rail, then one per (token, target GPU) over
 * NVLink, or Megatron-Core's all-gather dispatcher, its default (MoEAllGatherTokenDispatcher in
 * megatron/core/transformer/moe/token_dispatcher.py): every token all-gathered over the ETP x
 * EP group, the experts' outputs reduce-scattered back. */
typedef enum {
    SIMPAR_MOE_ALLTOALL,
    SIMPAR_MOE_DEEPEP,
    SIMPAR_MOE_ALLGATHER,
} SimparMoeDispatcher;

/* The scalar all-reduces of the optimizer step and the loss that a framework runs (models/step.c
 * emits them; the predictor sets them from the kernel set, models/compute.h). */
typedef enum {
    SIMPAR_SCALARS_NONE,     /* none: simpar-exec's step, and the default */
    SIMPAR_SCALARS_MEGATRON, /* Megatron-Core: the gradient norm (and fp16's inf/nan flag) over
                                the optimizer's gradient-statistics group, the loss over the
                                data-parallel group of the last stage */
    SIMPAR_SCALARS_PYTORCH,  /* PyTorch: FSDP's clip_grad_norm_ (and fp16's sharded grad scaler)
                                over the shard group under ZeRO >= 1; nothing under DDP */
} SimparScalars;

typedef struct {
    SimparPlan tp;         /* tensor-parallel plan of one stage (mode, T, sp, recompute); its
                            * seed is the base of the dropout seeds (simpar_train_dropout_seed) */
    gint64 pp;             /* pipeline stages P (local parallelism: chunks K) */
    gint64 dp;             /* data-parallel replicas D */
    gint64 ep, etp;        /* MoE layers: expert parallelism EP and expert tensor parallelism
                            * ETP (0 or 1: none), folded onto the T x C x D ranks of a stage */
    gint64 moe_dispatcher; /* SimparMoeDispatcher */
    gint64 ep_node;        /* the expert-parallel ranks one node holds (the platform's fact,
                            * predict/; 0: unknown): DeepEP's hops (SIMPAR_MOE_DEEPEP) */
    gint64 virtual_stages; /* v (interleaved); 1 otherwise */
    gint64 vp_group;       /* interleaved: micro-batches per virtual-stage group N; 0: P */
    gint64 global_batch;   /* sequences per optimizer step, all replicas */
    SimparPipeSchedule schedule;
    gboolean local_async;      /* local parallelism without a flush at the end of the step */
    gint64 aux_head_width;     /* local parallelism: auxiliary head width W (default V) */
    gint zero;                 /* 0 (DDP) .. 3 */
    gint64 shard_group;        /* ZeRO >= 1: shard over groups of this many replicas, replicate
                                * across them (hybrid sharding); 0: all D */
    gboolean no_reshard;       /* ZeRO-3: keep the forward's gathered parameters for the backward */
    gboolean fp8_param_gather; /* FP8 model, ZeRO >= 1: the linears' parameters held in FP8 and
                                  all-gathered in FP8 (Megatron's --fp8-param-gather) */
    gboolean fp8_any_layout;   /* the GPU's FP8 GEMMs take every layout (SimparGpu's, set by the
                                  prediction): a per-tensor FP8 weight copy has no transpose */
    gboolean grad_dtype_set;   /* --grad-reduce-dtype given: gradients are accumulated and */
    SimparDtype grad_dtype;    /* reduced in this type (fp32 with 16-bit training) */
    gboolean overlap_grad_reduce;
    /* ZeRO 1/2: Megatron-Core's --overlap-param-gather. The parameter all-gathers after Adam are
     * issued bucket by bucket at the next step's forward, each bucket's first forward waiting
     * for its own (models/step.h); the step is that steady state. */
    gboolean overlap_param_gather;
    /* Megatron-Core's --overlap-moe-expert-parallel-comm (the combined 1F1B): in the steady
     * state each forward runs merged with a backward, layer by layer, the all-to-alls of one on
     * the communication stream under the other's compute (models/step.h, pipeline.h) */
    gboolean ep_overlap;
    gboolean scatter_gather;  /* pipeline p2p: send 1/T of the activation, all-gather after */
    gboolean tied_embeddings; /* output layer shares the embedding table */
    gint64 bucket_params;     /* DP bucket size in parameters; 0: Megatron's max(4e7, 1e6*D) */
    gint64 first_stage_layers, last_stage_layers; /* layers of stage 0 / P-1; 0: the spread */
    /* Megatron-Core's --account-for-embedding-in-pipeline-split and
     * --account-for-loss-in-pipeline-split: the first (last) virtual stage counts the embedding
     * (the output layer and loss) as one layer of the L + e + l split evenly over the P v chunks */
    gboolean account_embedding, account_loss;
    /* Megatron-Core's --pipeline-model-parallel-layout (interned; NULL: none): the layers of
     * every virtual stage, as simpar_layout_parse reads them */
    const char *layout;
    SimparTrainAxis order[SIMPAR_N_TRAIN_AXES]; /* placement, innermost first */
    SimparAdamConfig adam;
    gint64 scalars; /* SimparScalars */
    /* derived by simpar_train_validate */
    gint64 micro_batches;               /* m */
    gint64 layers_per_chunk;            /* L / (P * v), or 0 when the chunks differ */
    gint64 layers;                      /* L */
    const struct SimparLayout_ *split;  /* the parsed --pipeline-model-parallel-layout, or NULL */
    gint64 stride[SIMPAR_N_TRAIN_AXES]; /* rank = sum coord[a] * stride[a] */
    /* the experts' numbering of the same ranks: axis tp is ETP, dp expert-DP, cp 1 */
    gint64 expert_stride[SIMPAR_N_TRAIN_AXES];
} SimparTrain;

/* Megatron-Core's pipeline layout (megatron/core/transformer/pipeline_parallel_layer_layout.py):
 * one string listing the layers of every virtual stage in virtual-stage order (vs = c P + p),
 * stages separated by '|': E the embedding, t a decoder layer, m a multi-token prediction
 * layer, L the output layer and loss; "x*N" and "(group)*N" repeat, commas are ignored. A stage
 * may hold no decoder layer ("E|t*4|...|L", Megatron-Core's empty stages included). */
typedef struct SimparLayout_ {
    const char *text;   /* interned */
    guint chunks;       /* virtual stages */
    guint *layers;      /* decoder layers of each */
    guint *first_layer; /* chunks + 1 prefix sums */
    guint total;        /* decoder layers */
    guint mtp;          /* MTP layers, all in the last virtual stage with the loss */
} SimparLayout;

/* Parses `text` (E first, L last, each once, the MTP layers after every decoder layer and with
 * the loss), naming the flag, the position and what is valid. The result lives as long as the
 * process (interned, as its text). */
const SimparLayout *simpar_layout_parse(const char *text, GError **error);

/* Defaults: P = D = v = 1, 1F1B, global batch = micro-batch (m = 1), ZeRO 0, no overlap,
 * untied embeddings, order tp,dp,pp; Adam lr 1e-4, betas 0.9 / 0.95, eps 1e-8, no decay. */
void simpar_train_init(SimparTrain *train);
/* Checks the split against the model and `gpus`, validates the tensor-parallel plan (filling
 * train->tp.q) and fills the derived fields. */
/* The checks of simpar_train_validate that need neither the GPU count nor the tensor-parallel
 * plan (the global batch against --micro-batch x --dp, the micro-batches against the pipeline
 * schedule), with its messages: a command can run them before it loads a platform. Out-of-range
 * splits pass (simpar_train_validate names them). */
gboolean simpar_train_validate_batches(const SimparTrain *train, const SimparModel *model,
                                       GError **error);
gboolean simpar_train_validate(SimparTrain *train, const SimparModel *model, guint64 gpus,
                               GError **error);
/* The ranks of one layer schedule: T x C (tensor and context parallelism), rank t + T c,
 * innermost of the placement's first axis ("tp": context parallelism sits right after the
 * tensor-parallel group). */
guint simpar_train_group(const SimparTrain *t);
/* The ranks that hold the same parameters and reduce their gradients: D x C (Megatron's
 * data-parallel group with context parallelism). */
guint simpar_train_replicas(const SimparTrain *t);
/* Layers of virtual stage vs (chunk c of device p is vs = c P + p) and the global index of its
 * first layer. With a layout (--pipeline-model-parallel-layout) the stage's t count, possibly 0;
 * with the accounting flags the accounted split's slots, the first (last) possibly 0. Else device
 * p holds --first-stage-layers (p = 0), --last-stage-layers (p = P-1) or an
 * even share of the rest; without them L / P each, and when P does not divide L the devices
 * one layer short are the first and last ones (as Llama 3 405B's 126 layers on 16 stages). A
 * device's layers go to its v chunks as evenly as they can, the earlier chunks taking the
 * extra one. */
guint simpar_train_stage_layers(const SimparTrain *t, guint vs);
guint simpar_train_stage_first_layer(const SimparTrain *t, guint vs);
/* Whether gradients are reduce-scattered after every micro-batch's backward (ZeRO 2, ZeRO 3
 * without pipelining); else they accumulate whole and are reduced after the last one (ZeRO-3
 * with pipelining as FSDP runs it: gradient sync on the last micro-batch only). */
gboolean simpar_train_reduce_each_micro(const SimparTrain *t);
/* The ranks one ZeRO shard group spans: --shard-group, default D x C. */
guint simpar_train_shard_group(const SimparTrain *t);
/* Bytes per gradient element reduced and kept: 4 with --grad-reduce-dtype fp32, else the
 * model dtype's. */
guint simpar_train_grad_bytes(const SimparTrain *t, SimparDtype dtype);
/* Bytes per gradient of Megatron-Core's gradient buffer (what zero_grad_buffer writes): the
 * --grad-reduce-dtype's where given, else fp32 for bf16 (megatron/training/arguments.py
 * accumulates and reduces bf16 gradients in fp32 by default), else the model dtype's. */
guint simpar_train_grad_buffer_bytes(const SimparTrain *t, SimparDtype dtype);
/* The interleaved schedule's micro-batch group N (--vp-group, default P). */
guint simpar_train_vp_group(const SimparTrain *t);
gboolean simpar_pipe_schedule_parse(const char *name, SimparPipeSchedule *out, GError **error);
const char *simpar_pipe_schedule_name(SimparPipeSchedule s);
/* "tp,dp,pp" and its permutations, with cp and ep placed or not: an unplaced cp sits right
 * after tp, an unplaced ep right after cp (Megatron-Core's "tp-cp-ep-dp-pp"). */
gboolean simpar_train_order_parse(const char *text, SimparTrainAxis *order, GError **error);
char *simpar_train_order_name(const SimparTrain *train); /* (transfer full) */
const char *simpar_train_axis_name(SimparTrainAxis a);
/* The most micro-batches per pipeline replica a step may have: every one is simulated (4,096
 * of a 2-stage step take 1.6 s and 500 MB; 16.7 million took 24 GB before the worker died). */
#define SIMPAR_TRAIN_MAX_MICRO_BATCHES 4096

/* The global rank of layer rank t (tensor-parallel rank t mod T of context-parallel rank t / T)
 * of replica d on stage p. */
guint simpar_train_rank(const SimparTrain *train, guint t, guint d, guint p);
/* The numbering of one tensor-parallel slice (the ranks of one index t): the same split with
 * T = 1, so that simpar_train_rank(slice, 0, d, p) numbers the slice's P x D ranks in the
 * job's order. */
void simpar_train_tp_slice(const SimparTrain *train, SimparTrain *slice);

/* Expert parallelism as Megatron-Core's expert rank generator numbers it
 * (megatron/core/parallel_state.py, initialize_model_parallel): the same ranks and the same
 * order, with axis tp of size ETP, ep of size EP, dp of size expert-DP and cp of size 1, so
 * that a stage's T x C x D ranks are its ETP x EP x expert-DP ranks:
 *
 *   default order tp,cp,ep,dp,pp:  stage rank = etp + ETP (ep + EP edp)
 *
 * Expert weights' gradients are reduced over the expert-DP group (vary edp), the rest over the
 * data-parallel group. The expert-DP size: (T C D) / (ETP EP). */
guint simpar_train_expert_replicas(const SimparTrain *t);
/* The global rank of expert-tensor rank `etp` of expert-parallel rank `ep` of expert replica
 * `edp` on stage p. */
guint simpar_train_expert_rank(const SimparTrain *t, guint etp, guint ep, guint edp, guint p);

/* The dropout seed of layer `layer` (0-based over the whole model) for global micro-batch
 * `micro` (replica d's micro-batch j is d * m + j): base + 1000003 layer + 7919 micro, modulo
 * 2^64. Every dropout site of that layer instance, forward and backward, uses it, so the masks
 * do not depend on how the step is split. */
guint64 simpar_train_dropout_seed(guint64 base, guint layer, guint64 micro);

/* Model FLOPs of one optimizer step, counted as Narayanan et al. count them (backward = twice
 * the forward, no recomputation, causal attention counted in full): per token and layer
 * 24 h^2 + 12 h f + 12 s h, plus 6 h V for the logit layer, times B s tokens; for f = 4h this is
 * 72 B s L h^2 (1 + s / (6 h) + V / (12 L h)). */
double simpar_train_model_flops(const SimparModel *model, const SimparTrain *train);

G_END_DECLS
#endif /* SIMPAR_TRAIN_H */
