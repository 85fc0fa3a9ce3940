/* summary.h - what one GPU computes and communicates in a schedule, by group axis and kind.
 *
 *   axis    kind        phase     calls  elements  bytes
 *   tp      all-reduce  forward       2   2*B*h    2*B*h*e
 *
 * Elements are full-buffer sizes (all-gather output, reduce-scatter input, message otherwise).
 * simpar_summary_new() summarises one rank and records whether every rank has the same rows.
 *
 * Ownership: a SimparSummary owns its row array; axis strings are interned.
 */
#ifndef SIMPAR_SUMMARY_H
#define SIMPAR_SUMMARY_H
#include "plan.h"
#include "schedule.h"
G_BEGIN_DECLS

/* simpar_summary_to_json's "format" is "simpar-schedule", its "version" this (docs/schemas/). */
#define SIMPAR_SUMMARY_JSON_VERSION 1

typedef struct {
    const char *axis;
    SimparCollKind kind;
    SimparPhase phase;
    guint calls;
    guint64 elems;
} SimparSummaryRow;

typedef struct {
    guint rank;
    guint elem_size;
    GArray *rows;                  /* SimparSummaryRow, sorted by axis, kind, phase */
    double flops[SIMPAR_N_PHASES]; /* GEMM flops of the rank, plus the flops of its blocks */
    guint n_ops[SIMPAR_N_PHASES];  /* ops of the rank */
    gboolean uniform;              /* every rank has the same collective rows */
} SimparSummary;

SimparSummary *simpar_summary_new(const SimparSchedule *sched, guint rank); /* (transfer full) */
void simpar_summary_free(SimparSummary *summary);
/* The row for (axis, kind, phase), or NULL if the rank makes no such call. (transfer none) */
const SimparSummaryRow *simpar_summary_find(const SimparSummary *s, const char *axis,
                                            SimparCollKind kind, SimparPhase phase);
char *simpar_summary_to_text(const SimparSummary *s, const SimparModel *model,
                             const SimparPlan *plan); /* (transfer full) */
char *simpar_summary_to_json(const SimparSummary *s, const SimparModel *model,
                             const SimparPlan *plan); /* (transfer full) */
const char *simpar_phase_name(SimparPhase phase);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(SimparSummary, simpar_summary_free)
G_END_DECLS
#endif /* SIMPAR_SUMMARY_H */
