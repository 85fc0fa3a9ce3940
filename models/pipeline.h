/* pipeline.h - the order in which one pipeline device runs its forwards and backwards.
 *
 * Generated from the implementations' rules, not from bubble formulas (the formulas are the
 * tests): Megatron-LM's warm-up counts and its interleaved order table (NVIDIA/Megatron-LM
 * megatron/core/pipeline_parallel/schedules.py), local parallelism's per-micro-batch loop
 * (Laskin et al., arXiv 2012.03837).
 *
 *   GPipe        F0 F1 .. F(m-1)  B0 B1 .. B(m-1)  (GPipe's paper order m-1 .. 0 gives the same
 *                makespan; micro-batch order keeps every stage's backward order alike)
 *   1F1B         w = min(P - i - 1, m) forwards, then (F, B) pairs, then the remaining B
 *   interleaved  w = min(m v, 2 (P - i - 1) + (v - 1) N) forwards from the table, then pairs
 *                (next forward from the forward table, next backward from the backward table,
 *                chunk v-1-c), then the remaining backwards; N = P micro-batches per group
 *   local        F0 B0 F1 B1 ... (B = auxiliary head and chunk backward; no gradient leaves)
 *
 * Ownership: the returned arrays are the caller's.
 */
#ifndef SIMPAR_PIPELINE_H
#define SIMPAR_PIPELINE_H
#include "train.h"
G_BEGIN_DECLS

typedef struct {
    gboolean backward;
    guint micro; /* micro-batch, 0 .. m-1 */
    guint chunk; /* model chunk on this device, 0 .. v-1 (virtual stage chunk * P + device) */
} SimparPipeItem;

/* Checks P, v and m for the schedule (P, m >= 1; interleaved: P >= 2, v >= 2 and m a multiple
 * of P, as Megatron requires with N = P; others: v = 1), naming the flag and what would be
 * valid. Errors: SIMPAR_PLAN_ERROR_INVALID. */
gboolean simpar_pipeline_validate(SimparPipeSchedule kind, guint p, guint v, guint m,
                                  GError **error);
/* The interleaved schedule with Megatron-Core's micro-batch groups of N per virtual stage
 * (--microbatch-group-size-per-virtual-pipeline-stage; the functions above take N = P): the
 * forward table runs chunk 0 of a group's micro-batches, then chunk 1, ..., the last group
 * holding what is left; Megatron requires P <= N <= m and m mod N either 0 or at least P
 * (megatron/core/pipeline_parallel/schedules.py, get_schedule_table and the checks of
 * forward_backward_pipelining_with_interleaving). Other schedules ignore N. */
gboolean simpar_pipeline_validate_grouped(SimparPipeSchedule kind, guint p, guint v, guint m,
                                          guint n_group, GError **error);
guint simpar_pipeline_warmup_grouped(SimparPipeSchedule kind, guint p, guint v, guint m,
                                     guint n_group, guint stage);
GArray *simpar_pipeline_order_grouped(SimparPipeSchedule kind, guint p, guint v, guint m,
                                      guint n_group, guint stage);
/* Megatron-Core's combined 1F1B (--overlap-moe-expert-parallel-comm; interleaved, or 1F1B at
 * P = 1): one more warm-up forward than the schedule's own, so that the forward and the backward
 * of each steady-state pair are independent (megatron/core/pipeline_parallel/schedules.py,
 * get_pp_rank_microbatches; without pipelining combined_1f1b.py's
 * combined_1f1b_schedule_for_no_pipelining runs F0 alone, then (F j+1, B j), then B m-1). Each
 * (F, B) item pair after the warm-up is one merged step (models/step.h). */
guint simpar_pipeline_warmup_merged(SimparPipeSchedule kind, guint p, guint v, guint m,
                                    guint n_group, guint stage);
GArray *simpar_pipeline_order_merged(SimparPipeSchedule kind, guint p, guint v, guint m,
                                     guint n_group, guint stage); /* (transfer full) */
/* Megatron's warm-up count: the forwards device `stage` runs before its first (F, B) pair
 * (GPipe: m, no pairs; local: 0; 1F1B's last stage runs F0 B0 with warm-up 0). Interleaved
 * clamps to m v as today's Megatron does; older Megatron-LM releases made every forward warm-up
 * when m = P, which changes the later devices' orders but not the makespan (uniform chunks, no
 * communication time). */
guint simpar_pipeline_warmup(SimparPipeSchedule kind, guint p, guint v, guint m, guint stage);
/* The 2 m v items of device `stage` in execution order: a GArray of SimparPipeItem
 * (transfer full). The arguments must have passed simpar_pipeline_validate. */
GArray *simpar_pipeline_order(SimparPipeSchedule kind, guint p, guint v, guint m, guint stage);

G_END_DECLS
#endif /* SIMPAR_PIPELINE_H */
