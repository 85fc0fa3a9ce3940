/* report.h - where the time of a predicted step goes, and how it is printed.
 *
 * From the spans of a run: the step time (last end on any rank), forward and backward (the
 * last forward op's end splits them), compute (mean over ranks of the time the compute stream
 * spends in compute ops) and exposed communication: the time the compute stream spends in a
 * collective or waiting for one (an asynchronous one on the communication stream, or late
 * peers), per process-group axis and split by whether the group stays inside a node. Anything
 * else the compute stream waits for is "other".
 *
 *   rank r compute stream: [gemm][ar row][gemm]....[wait for rs in]....[ln] | step end
 *                           compute  exposed       compute   exposed      compute  tail
 *
 * That breakdown times one layer schedule (simpar_report_breakdown); a predicted step's row is
 * filled by step-predict.c from the step's own walk and appended (simpar_report_append).
 * Text and JSON (json-glib) rows; a Chrome trace (one track per rank and stream).
 *
 * Ownership: a SimparReport owns its rows; it borrows nothing once a row is appended.
 */
#ifndef SIMPAR_REPORT_H
#define SIMPAR_REPORT_H
#include "backend.h"
#include "memory.h"
#include "trace.h"
#include "train.h"
#include <json-glib/json-glib.h>
G_BEGIN_DECLS

typedef struct {
    const char *axis; /* interned group axis, e.g. "row" */
    gboolean inter;   /* the group spans nodes */
    double exposed_s;
} SimparAxisTime;

/* The step-level figures (pipeline, data parallelism, optimizer) of a prediction. */
typedef struct {
    char *split;     /* "T=8 P=8 D=16 interleaved v=2 m=96 ZeRO-0" */
    char *placement; /* "tp intra-node, dp inter-node, pp inter-node" */
    char *compute;   /* where the compute figures come from (simpar_compute_describe) */
    double tp_exposed_s, bubble_s, pp_p2p_s, dp_exposed_s, optimizer_s, mfu;
    double steps_to_target, time_to_target_s, gpu_hours_to_target;
    double pipeline_step_s; /* local parallelism: the same split as a 1F1B pipeline */
    /* MoE models: one MoE layer's forward and backward on a GPU of the expert-parallel group,
     * its time in the dispatch and combine all-to-alls and in the experts' grouped GEMMs (0 for
     * a dense model) */
    double moe_dispatch_s, moe_combine_s, moe_experts_s;
    double moe_expert_tp_s; /* --etp > 1: the expert-TP all-gathers and reduce-scatters */
    /* 2-D, 2.5-D and 3-D: one MoE layer's all-to-alls between the mode's blocks and the
     * block's tokens (models/tp-moe.c), mean over the tensor-parallel GPUs; 0 otherwise */
    double moe_redistribute_s;
    /* FP8 models: the time the critical rank's compute spends casting its layers' weights to
     * FP8, once per step (the "fp8.cast" blocks: models/step.h); 0 otherwise */
    double fp8_cast_s;
    double slices; /* the step ran one tensor-parallel slice for this many (step-slice.h), or 1 */
    /* the layer blocks simulated this many of the tensor-parallel group's tp_ranks ranks (fewer
     * under a quotient of alike nodes: replay-quotient.c) */
    double layer_ranks, tp_ranks;
    /* the step simulated this many of the slice_ranks ranks of its schedule (one slice's, or
     * every GPU's; fewer under a quotient of alike ranks) */
    double step_ranks, slice_ranks;
    const char *block_backend; /* interned: the backend that timed the blocks when it is not
                                * the run's, else NULL */
    guint peak_stage;          /* the pipeline stage with the largest memory */
} SimparReportStep;

/* The configuration a row predicted, as fields (JSON "config"); `set` FALSE for a mode that was
 * not simulated. Strings interned. */
typedef struct {
    gboolean set;
    gint64 tp, q, depth, cp, pp, vp, vp_group, dp, micro_batch, micro_batches, global_batch, zero,
        shard_group;
    gint64 ep;          /* an MoE model's expert parallelism; 0 for a dense model */
    gboolean deepep;    /* an MoE model's tokens dispatched as DeepEP does (--moe-dispatcher) */
    gboolean hybridep;  /* deepep's hops as Hybrid-EP runs them (JSON only when on:
                           --moe-flex-backend hybridep) */
    gboolean allgather; /* or as Megatron-Core's all-gather dispatcher does */
    gboolean moe_shared_overlap; /* its shared experts beside the all-to-alls
                                    (--moe-shared-expert-overlap) */
    gboolean ep_overlap;         /* forwards and backwards merged (JSON only when on:
                                    --overlap-moe-expert-parallel-comm) */
    const char *schedule, *recompute, *cp_mode, *dtype, *grad_reduce_dtype;
    gboolean sp, tied_embeddings, overlap_grad_reduce;
    gboolean fp8_attention;        /* the attention core in FP8 (SimparPlan.fp8_attention) */
    gboolean fp8_output_proj;      /* the output layer in MXFP8 (SimparPlan.fp8_output_proj) */
    gboolean tp_comm_overlap;      /* --tp-comm-overlap (SimparPlan.tp_comm_overlap) */
    const char *recompute_modules; /* selective's modules (--recompute-modules), NULL for
                                      core_attn alone (the default) */
    const char *pipeline_layout;   /* --pipeline-model-parallel-layout as given, or NULL */
} SimparReportConfig;

/* The fields of `train` (validated) and `model` that a row reports. */
void simpar_report_config_init(SimparReportConfig *c, const SimparModel *model,
                               const SimparTrain *train);

typedef struct {
    const SimparGenerator *gen; /* the mode (transfer none) */
    char *grid;                 /* "q=4 d=4" */
    guint gpus;
    char *skipped; /* why the mode was not simulated (does not fit, GPU count); or NULL */
    double step_s, forward_s, backward_s, compute_s, exposed_s, exposed_intra_s, exposed_inter_s,
        other_s;
    GArray *axes; /* SimparAxisTime */
    double model_flops, tflops_per_gpu, comm_bytes_per_gpu;
    SimparMemory memory;
    double mem_capacity_B;
    SimparReportStep step;
    SimparReportConfig config;
} SimparReportRow;

typedef struct _SimparReport SimparReport;

/* Every JSON row says "format": "simpar-prediction" and this "version" (docs/schemas/). */
#define SIMPAR_REPORT_JSON_VERSION 1

SimparReport *simpar_report_new(const SimparModel *model, const char *topology, const char *backend,
                                const char *coll_mode, const char *attention); /* (transfer full) */
void simpar_report_free(SimparReport *rep);
/* Fills row->step_s, forward/backward, compute, exposed and axes from one run (the breakdown
 * the step's layer timing uses), without adding the row. */
void simpar_report_breakdown(const SimparRun *run, const SimparSpan *spans, SimparReportRow *row);
/* Appends a filled row; the report takes its strings and axes. */
void simpar_report_append(SimparReport *rep, SimparReportRow *row);
/* A mode that was not simulated, with the reason. */
void simpar_report_skip(SimparReport *rep, const SimparGenerator *gen, const char *grid, guint gpus,
                        const SimparMemory *mem, double mem_capacity_B, const char *why);
guint simpar_report_n_simulated(const SimparReport *rep);
/* "1d: why; 2d: why" for the modes that were not simulated. */
char *simpar_report_reasons(const SimparReport *rep); /* (transfer full) */
char *simpar_report_to_text(const SimparReport *rep); /* (transfer full) */
/* Appends the rows of simpar_report_to_json() output (a worker process's report). */
void simpar_report_merge_json(SimparReport *rep, const char *json);
char *simpar_report_to_json(const SimparReport *rep); /* (transfer full) */

/* What a step's layer blocks stand for in a trace: the layer schedule and its ops' spans within
 * their blocks (simpar_block_layer_spans). */
typedef struct {
    const SimparRun *run; /* the layer schedule on the GPUs the blocks were timed on */
    const SimparSpan *spans;
    /* an MoE model's MoE block on the expert-parallel GPUs it was timed on, its ops' spans
     * within its part of the blocks (simpar_block_moe_spans), and the parts' times: each
     * layer's forward is the layer schedule's (part_s[0]) and then the MoE block's, its
     * backward the MoE block's (moe_part_s[1]) and then the layer schedule's; NULL moe_run for
     * a dense model */
    const SimparRun *moe_run;
    const SimparSpan *moe_spans;
    double part_s[2], moe_part_s[2];
    /* an MoE model's dense layers ("dense.fwd" / "dense.bwd" blocks): the dense layer on the
     * layer's GPUs and its ops' spans within its blocks; NULL dense_run without */
    const SimparRun *dense_run;
    const SimparSpan *dense_spans;
} SimparTraceLayer;

/* A rank a trace shows: job rank `job_rank` on GPU `gpu`, whose step ops are those of rank
 * `run_rank` of the run (its slice's rank where one slice stands for all), and whose layer
 * blocks are the ops of rank `layer_rank` of the layer. */
typedef struct {
    guint run_rank, job_rank, gpu, layer_rank;
    /* the memory counter: the rank's weights, gradients and optimizer states, and one layer's
     * stored activations per micro-batch (each forward layer block adds them, each backward
     * one frees them; an MoE model's dense layers' blocks dense_activations_B); 0, 0: no
     * counter */
    double states_B, layer_activations_B, dense_activations_B;
    /* the job rank of the layer's rank 0 beside it (the same replica and stage): the layer's
     * collectives join the ranks of one base */
    guint layer_base;
    /* an MoE model's: the rank's index in its expert-parallel group (the MoE block's rank its
     * layers show) and the job rank of index 0 of that group */
    guint moe_rank, moe_base;
} SimparTraceRank;

/* Chrome trace events of one run for `ranks`; mode_index keeps the modes' process ids apart
 * (pid = mode_index * 100000 + job rank). Every op with its kind ("cat"), the layer index and,
 * for collectives, the collective's kind, group axis, bytes (nccl-tests S: the whole buffer, as
 * `simpar schedule` counts them), algorithm and protocol; for point-to-point transfers the
 * axis, bytes and the peer (its job rank: run_job gives the job rank of slice 0 for every run
 * rank, or NULL when run ranks are job ranks). Where a compute stream (the step's or the
 * layer's stream 0) idles before an op, a "wait" event (cat "wait") with args.for, the dep that
 * ended last (or the op itself: it waited for its peers). With `layers` (or NULL), every
 * "layer.fwd" / "layer.bwd" block of count c also as the ops of its c layers, on the layer's
 * streams (thread ids from 100, "layer <stream>"), args.layer the layer's index in the block;
 * an MoE model's layers also as the ops of their MoE block, after the layer schedule's forward
 * and before its backward, on the streams of the same names; an MoE model's "dense.fwd" /
 * "dense.bwd" blocks as the ops of the dense layer.
 * A counter track "memory" per rank (args.GiB) where the rank gives its states: its weights,
 * gradients and optimizer states plus the layer activations it holds, rising at each forward
 * layer block's end and falling at each backward one's.
 * Inside the platform's actor (the algorithms' closed forms read the routes). */
void simpar_report_trace(SimparTrace *t, guint mode_index, const char *mode, const SimparRun *run,
                         const SimparSpan *spans, const SimparTraceRank *ranks, guint n_ranks,
                         const guint *run_job, const SimparTraceLayer *layers);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(SimparReport, simpar_report_free)
G_END_DECLS
#endif /* SIMPAR_REPORT_H */
