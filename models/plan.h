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

/* A row of the generator table (generators.h): the mode and its facts. */
typedef struct _SimparGenerator SimparGenerator;

typedef struct {
    const SimparGenerator *gen; /* the mode: 1-D, 2-D, 2.5-D, 3-D (transfer none) */
    gint64 tp;                  /* GPUs in the tensor-parallel group */
    gint64 depth;               /* 2.5-D depth d; 0 when not given */
    gboolean sequence_parallel; /* 1-D only */
    gboolean paper_3d;          /* 3-D: the paper-era variant (backward re-gathers) */
    SimparRecompute recompute;  /* activation recomputation */
    gboolean causal;            /* causal attention mask */
    double p_hidden, p_attn;    /* dropout probabilities (0: no dropout kernels) */
    double eps;                 /* layer-norm epsilon */
    guint64 seed;               /* dropout seed */
    gint64 cp;                  /* context parallelism C: GPUs sharing each sequence (0, 1: none) */
    gboolean cp_ring;           /* ring attention instead of all-gathered keys and values */
    gint64 ep;                  /* MoE layers: expert parallelism (0, 1: none), from the split */
    gint64 etp;                 /* MoE layers: expert tensor parallelism (0, 1: none), likewise */
    gboolean fp8_attention;     /* an FP8 model's attention core in FP8 too (cuDNN's fused FP8
                                   attention under flash attention; Transformer Engine's fp8_dpa) */
    guint q;                    /* derived: grid side (1-D: P) */
} SimparPlan;

/* C of context parallelism (at least 1). */
guint simpar_plan_cp(const SimparPlan *plan);

gboolean simpar_recompute_parse(const char *name, SimparRecompute *out, GError **error);
const char *simpar_recompute_name(SimparRecompute r);

G_END_DECLS
#endif /* SIMPAR_PLAN_H */
