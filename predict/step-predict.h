/* step-predict.h - predicts one optimizer step of a training plan (private to predict/ and app/).
 *
 *   1. time the blocks of one stage: the tensor-parallel layer schedule of the first
 *      tensor-parallel group, simulated for two stacked layers (the second layer's forward and
 *      backward are the steady-state "layer.fwd" / "layer.bwd"), and the ends (embedding, output
 *      layer and loss, auxiliary heads) on the same GPUs;
 *   2. build the step schedule (models/step.h) for every GPU and give each block its time;
 *   3. run it on the backend (contention between pipeline, data-parallel and other traffic);
 *   4. break the step of the rank that ends last into compute, exposed tensor-parallel
 *      communication, pipeline bubble, pipeline transfers, exposed data-parallel reduction and
 *      optimizer.
 *
 * Blocks are timed once on an otherwise idle network: tensor-parallel traffic inside a block
 * does not see the step's pipeline and data-parallel traffic (they share no link when the
 * tensor-parallel group stays inside a node, Megatron's placement; docs/how-it-works.md).
 *
 * Ownership: the row's strings and axes are the row's.
 */
#ifndef SIMPAR_STEP_PREDICT_H
#define SIMPAR_STEP_PREDICT_H
#include "backend.h"
#include "compute.h"
#include "report.h"
#include "step.h"
G_BEGIN_DECLS

typedef struct {
    const SimparBackend *backend;
    SimparRun base; /* collective settings and the network; the rest is filled per run */
    const SimparGpu *gpu;
    SimparAttentionImpl attn;
} SimparStepTimer;

/* Block times (seconds per count) by key, and the share of each that is compute. */
typedef struct {
    GHashTable *time_s;      /* interned key -> double* */
    GHashTable *compute_s;   /* interned key -> double*: compute-stream compute per block */
    GArray *layer_axes;      /* SimparAxisTime: exposed communication of one layer fwd + bwd */
    double layer_comm_bytes; /* collective bytes (nccl-tests S) of one layer fwd + bwd */
    double layer_ranks;      /* ranks the layer blocks simulated (fewer under a quotient) */
    /* an MoE model's dense layers ("dense.fwd" / "dense.bwd"): as layer_axes and
     * layer_comm_bytes for one of them; NULL, 0 without */
    GArray *dense_axes;
    double dense_comm_bytes;
} SimparBlockTimes;

void simpar_block_times_clear(SimparBlockTimes *bt);
/* The GPUs the blocks are timed on: those of the first tensor-parallel group (transfer full). */
guint *simpar_block_gpus(const SimparTrain *train);
/* Times the blocks of `train` (validated) with `layer` its tensor-parallel layer schedule. */
void simpar_block_times_measure(const SimparStepTimer *tm, const SimparModel *model,
                                const SimparTrain *train, const SimparSchedule *layer,
                                SimparBlockTimes *bt);
double simpar_block_time(const SimparBlockTimes *bt, const char *key);
/* Per op of `layer`: its span within the block that stands for it in a step ("layer.fwd" for
 * a forward op, "layer.bwd" for a backward one), from the block's start, clipped to the block;
 * (-1, -1) for an op outside it. Simulates the two stacked layers as the block times do
 * (transfer full); part_s (or NULL) gets the layer schedule's forward and backward time. */
SimparSpan *simpar_block_layer_spans(const SimparStepTimer *tm, const SimparTrain *train,
                                     const SimparSchedule *layer, double part_s[2]);
/* An MoE model's MoE block (moe.h) for `train` (validated) on the GPUs *gpus of the first
 * expert-parallel group of the first stage, as Megatron-Core's expert numbering places them
 * (transfer full, both). */
SimparSchedule *simpar_block_moe_build(const SimparModel *model, const SimparTrain *train,
                                       guint **gpus);
/* simpar_block_layer_spans for an MoE model's MoE block, the part of "layer.fwd" and
 * "layer.bwd" the layer schedule leaves out: per op of *moe (simpar_block_moe_build's, on
 * *gpus; transfer full, all three) its span within its part of the block, as the block times
 * ran it; part_s its forward and backward time, the share of the blocks' times it adds. */
SimparSpan *simpar_block_moe_spans(const SimparStepTimer *tm, const SimparModel *model,
                                   const SimparTrain *train, SimparSchedule **moe, guint **gpus,
                                   double part_s[2]);

/* The step's spans (transfer full) with `run` filled; `step` is simpar_step_build's. */
/* The scalar all-reduces (models/train.h) of the framework of gpu's kernel set: Megatron-Core's
 * for megatron, PyTorch's for pytorch, none for unfused (simpar-exec runs none). */
SimparScalars simpar_step_scalars_of(const SimparGpu *gpu);
SimparSpan *simpar_step_run(const SimparStepTimer *tm, const SimparSchedule *step,
                            const SimparBlockTimes *bt, const guint *gpus, SimparRun *run,
                            double **compute);
/* Fills row->step_s and the breakdown of the step (row->step, compute_s, exposed, axes);
 * job_gpus: the GPU of every rank of the job when the step is one slice of it
 * (step-slice.h), NULL when it is the whole job. */
void simpar_step_breakdown(const SimparRun *run, const SimparSpan *spans,
                           const SimparBlockTimes *bt, const SimparModel *model,
                           const SimparTrain *train, const guint *job_gpus, SimparReportRow *row);
/* Its second half, once the walk of the rank that ends last filled row->step_s, compute,
 * bubble, p2p, dp, optimizer, other, comm bytes and row->axes (empty): the tensor-parallel
 * exposure (`tp_exposed` over `layer_blocks` layers, and an MoE model's dense layers'
 * `dense_exposed` over `dense_blocks` of them) by axis, placement, FLOPs. */
void simpar_step_breakdown_finish(const SimparRun *run, const guint *job_gpus,
                                  const SimparBlockTimes *bt, const SimparModel *model,
                                  const SimparTrain *train, double tp_exposed, double layer_blocks,
                                  double dense_exposed, double dense_blocks, SimparReportRow *row);

G_END_DECLS
#endif /* SIMPAR_STEP_PREDICT_H */
