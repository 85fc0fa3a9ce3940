/* plan.h - how one transformer layer is split over the GPUs of a tensor-parallel group.
 *
 * A SimparPlan holds its tensor-parallel mode (the generator table's row) and its grid and
 * carries the layer options that change the schedule (sequence parallelism for 1-D, the 3-D
 * variant) or its numbers (dropout, causal mask, seed). Validation (simpar_generate_layer in
 * generators.h) derives the grid side q and refuses plans the mode cannot use, naming the flag
 * and what would be valid.
 *
 *   1-D  tp = P          one group of P ranks
 *   2-D  tp = q*q        rank = j*q + i           (row j, column i)
 *   2.5-D tp = q*q*d     rank = i + q*j + q*q*k   (column i, row j, depth k)
 *   3-D  tp = q*q*q      rank = i + q*j + q*q*k   (weight i, input j, output k)
 *
 * Ownership: a value type; `gen` points at a row of the generator table (static).
 */
#ifndef SIMPAR_PLAN_H
#define SIMPAR_PLAN_H
#include <glib.h>
G_BEGIN_DECLS

#define SIMPAR_PLAN_ERROR (simpar_plan_error_quark())

/* The dropout probability of a model trained with dropout, hidden and attention alike:
 * Megatron-LM's defaults (--hidden-dropout 0.1, --attention-dropout 0.1; GPT-3's). */
#define SIMPAR_PLAN_DROPOUT_P 0.1
GQuark simpar_plan_error_quark(void);

typedef enum {
    SIMPAR_PLAN_ERROR_INVALID, /* the split cannot be built for these GPUs and shapes */
} SimparPlanError;

typedef enum {
    SIMPAR_RECOMPUTE_NONE,      /* every activation the backward needs is stored */
    SIMPAR_RECOMPUTE_SELECTIVE, /* the attention core is recomputed in the backward */
    SIMPAR_RECOMPUTE_FULL,      /* only the layer input is stored; the whole forward (with its
                                   collectives) is re-run before the layer's backward */
} SimparRecompute;

/* The modules --recompute selective recomputes (--recompute-modules, Megatron-Core's
 * recompute_modules, megatron/core/transformer/transformer_config.py): a set of bits, 0 for
 * Megatron's default ["core_attn"]. Output-discarding ones (moe_act, layernorm, mla_up_proj) drop
 * the module's output once its consumer has used it and run the module again right before the
 * consumer's backward; the others (core_attn, mlp, moe, shared_experts) keep only the module's
 * input and run its whole forward, collectives included, right before its backward. */
typedef enum {
    SIMPAR_RECOMPUTE_CORE_ATTN = 1 << 0,      /* the attention core (its s x s scores) */
    SIMPAR_RECOMPUTE_MOE_ACT = 1 << 1,        /* the routed experts' activation */
    SIMPAR_RECOMPUTE_LAYERNORM = 1 << 2,      /* the two norms of the residual stream */
    SIMPAR_RECOMPUTE_MLA_UP_PROJ = 1 << 3,    /* MLA's up projections (q, k, v) */
    SIMPAR_RECOMPUTE_MLP = 1 << 4,            /* a dense layer's MLP: fc1, activation, fc2 */
    SIMPAR_RECOMPUTE_MOE = 1 << 5,            /* an MoE layer's whole MoE block */
    SIMPAR_RECOMPUTE_SHARED_EXPERTS = 1 << 6, /* an MoE block's shared experts */
} SimparRecomputeModule;

/* A row of the generator table (generators.h): the mode and its facts. */
typedef struct _SimparGenerator SimparGenerator;

typedef struct {
    const SimparGenerator *gen; /* the mode: 1-D, 2-D, 2.5-D, 3-D (transfer none) */
    gint64 tp;                  /* GPUs in the tensor-parallel group */
    gint64 depth;               /* 2.5-D depth d; 0 when not given */
    gboolean sequence_parallel; /* 1-D only */
    gboolean tp_comm_overlap;   /* 1-D with SP: Transformer Engine's userbuffers overlap of the
                                   sequence-parallel gathers and scatters with the GEMMs
                                   (--tp-comm-overlap; models/tp-1d.c) */
    gboolean paper_3d;          /* 3-D: the paper-era variant (backward re-gathers) */
    SimparRecompute recompute;  /* activation recomputation */
    guint recompute_modules;    /* selective: SimparRecomputeModule bits; 0: core_attn alone */
    gboolean causal;            /* causal attention mask */
    double p_hidden, p_attn;    /* dropout probabilities (0: no dropout kernels) */
    double eps;                 /* layer-norm epsilon */
    guint64 seed;               /* dropout seed */
    gint64 cp;                  /* context parallelism C: GPUs sharing each sequence (0, 1: none) */
    gboolean cp_ring;           /* ring attention instead of all-gathered keys and values */
    gint64 ep;                  /* MoE layers: expert parallelism (0, 1: none), from the split */
    gint64 etp;                 /* MoE layers: expert tensor parallelism (0, 1: none), likewise */
    gboolean moe_gather;        /* MoE layers: the all-gather dispatcher (train.h), likewise */
    gboolean fp8_attention;     /* an FP8 model's attention core in FP8 too (cuDNN's fused FP8
                                   attention under flash attention; Transformer Engine's fp8_dpa) */
    gboolean fp8_output_proj;   /* an MXFP8 model's output layer in MXFP8 too (Megatron-Core's
                                   fp8_output_proj: TELMHeadColumnParallelLinear) */
    guint q;                    /* derived: grid side (1-D: P) */
} SimparPlan;

/* C of context parallelism (at least 1). */
guint simpar_plan_cp(const SimparPlan *plan);

gboolean simpar_recompute_parse(const char *name, SimparRecompute *out, GError **error);
const char *simpar_recompute_name(SimparRecompute r);
/* A --recompute-modules list (Megatron's names, comma- or blank-separated) into bits; core_attn
 * alone gives 0 (the default). */
gboolean simpar_recompute_modules_parse(const char *list, guint *out, GError **error);
/* The names of `modules`, comma-separated, in Megatron's order ("core_attn" for 0) (transfer
 * full). */
char *simpar_recompute_modules_name(guint modules);
/* Whether the plan recomputes `module` (a SimparRecomputeModule bit): under selective only. */
gboolean simpar_plan_recomputes(const SimparPlan *plan, guint module);
/* The module bits a plan recomputes (0 without selective; core_attn for selective's default). */
guint simpar_plan_recompute_set(const SimparPlan *plan);

G_END_DECLS
#endif /* SIMPAR_PLAN_H */
