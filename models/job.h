/* job.h - the job as a command line gives it: model shapes, the tensor-parallel plan and the
 * training split.
 *
 * simpar (predict, schedule, validate) and simpar-exec take the same job options, parsed into a
 * SimparJobArgs and turned into a SimparModel, SimparPlan and SimparTrain here, so a job means
 * the same thing to the predictor and to the executor. A measured run stores its job as the
 * argument vector simpar_job_args_to_argv() gives, and `simpar validate` parses that vector
 * back, so it predicts exactly the job that ran:
 *
 *   simpar-exec --model tiny --tp 2 ...  ->  SimparJobArgs  ->  ["--model=tiny", "--tp=2", ...]
 *        (RUN.json "job_args")           ->  SimparJobArgs  ->  model, plan, train  -> schedule
 *
 * Ownership: a SimparJobArgs owns its strings (simpar_job_args_clear frees them).
 */
#ifndef SIMPAR_JOB_H
#define SIMPAR_JOB_H
#include "plan.h"
#include "schedule.h"
#include "train.h"
#include <glib.h>
G_BEGIN_DECLS

#define SIMPAR_JOB_ERROR (simpar_job_error_quark())
GQuark simpar_job_error_quark(void);

typedef enum {
    SIMPAR_JOB_ERROR_USAGE, /* a job option out of range or inconsistent with another */
} SimparJobError;

#define SIMPAR_JOB_UNSET G_MININT64

/* Option storage; integers are SIMPAR_JOB_UNSET and strings NULL when not given. */
typedef struct {
    /* model (--model and its overrides) */
    char *model;
    gint64 hidden, heads, seq, micro_batch, ffn, layers, vocab, kv_heads, head_dim;
    char *dtype, *mlp, *norm, *bias, *dropout;
    char *fp8_recipe;         /* --dtype fp8: delayed (default), current, mxfp8 */
    gboolean fp8_attention;   /* --fp8-dot-product-attention: the attention core in FP8 */
    gboolean fp8_output_proj; /* --fp8-output-proj: the output layer's GEMMs in MXFP8 */
    /* mixture of experts (model.h, SimparMoeConfig) */
    gint64 experts, top_k, moe_ffn, shared_ffn, dense_layers, moe_every, expert_groups, group_limit;
    /* multi-head latent attention (model.h, SimparMlaConfig) */
    gint64 q_lora_rank, kv_lora_rank, qk_head_dim, qk_pos_emb_head_dim, v_head_dim;
    gint64 mtp_layers; /* multi-token prediction modules */
    char *router, *capacity_factor, *imbalance, *moe_dispatcher, *moe_flex_backend;
    gboolean moe_shared_overlap; /* --moe-shared-expert-overlap */
    gboolean ep_overlap;         /* --overlap-moe-expert-parallel-comm */
    /* tensor-parallel plan */
    char *tp_mode;
    gint64 tp, depth, cp;
    gboolean sp;
    gboolean tp_comm_overlap;
    char *variant;           /* 3-D: paper, later */
    char *cp_mode;           /* allgather, ring */
    char *recompute;         /* none, selective, full */
    char *recompute_modules; /* selective: Megatron's module names (plan.h) */
    /* training split */
    gint64 pp, dp, global_batch, virtual_stages, zero, local_chunks, aux_head_width, bucket_params;
    gint64 vp_group;    /* interleaved: micro-batches per virtual-stage group N */
    gint64 shard_group; /* ZeRO: hybrid sharding over groups of N replicas */
    gint64 first_stage_layers, last_stage_layers;
    char *schedule, *order, *grad_reduce_dtype;
    char *layout;   /* --pipeline-model-parallel-layout */
    gint64 ep, etp; /* expert parallelism, expert tensor parallelism */
    gboolean overlap_grad_reduce, overlap_param_gather, local_async, tied_embeddings,
        scatter_gather, no_reshard, account_embedding, account_loss;
    gboolean fp8_param_gather; /* ZeRO/FSDP: FP8 parameters, gathered in FP8 */
} SimparJobArgs;

typedef enum {
    SIMPAR_JOB_OPTIONS_MODEL = 1 << 0, /* a "model" group: --model, --hidden, ... --dtype */
    SIMPAR_JOB_OPTIONS_PLAN = 1 << 1,  /* main entries: --tp-mode, --tp, --depth, --sp, ... */
    SIMPAR_JOB_OPTIONS_TRAIN = 1 << 2, /* main entries: --pp, --dp, --schedule, ... */
    SIMPAR_JOB_OPTIONS_ALL = 7,
} SimparJobOptions;

void simpar_job_args_init(SimparJobArgs *args);
void simpar_job_args_clear(SimparJobArgs *args);
/* Adds the chosen option sets, storing into `args` (which must outlive the context). */
void simpar_job_add_options(GOptionContext *ctx, SimparJobArgs *args, SimparJobOptions which);
/* The entries of the job options named in `names` (long names, NULL-terminated), storing into
 * `args`, in table order, NULL-terminated (transfer container): for a command that takes some
 * job options as they are and others its own way (simpar sweep takes lists). */
GOptionEntry *simpar_job_option_entries(SimparJobArgs *args, const char *const *names);
/* (transfer full): "--name=value" for every option that was given, in a fixed order;
 * NULL-terminated. Parsing it with simpar_job_add_options(ALL) gives back equal args. */
char **simpar_job_args_to_argv(const SimparJobArgs *args);
/* Parses such a vector (and nothing else) into `args` (initialised by the caller). */
gboolean simpar_job_args_from_argv(SimparJobArgs *args, const char *const *argv, GError **error);

/* The model: the preset or JSON file of --model (`fallback` when not given), the overrides,
 * validated. */
gboolean simpar_job_model(const SimparJobArgs *args, const char *fallback, SimparModel *model,
                          GError **error);
/* Every integer flag of the plan and the split within its range (the model's are
 * simpar_model_validate's), or a usage error naming the flag, the value and the range;
 * simpar_job_plan and simpar_job_train check it first. */
gboolean simpar_job_check_ranges(const SimparJobArgs *args, GError **error);
/* The row of --tp-mode (the baseline, 1-D, without it), or an error naming the valid modes
 * (transfer none). */
const SimparGenerator *simpar_job_generator(const SimparJobArgs *args, GError **error);
/* The plan of mode `gen` from --tp, --depth, --sp, --variant and --recompute (not validated),
 * its dropout probabilities from `model` (SIMPAR_PLAN_DROPOUT_P, or 0 for a model trained
 * without dropout). */
gboolean simpar_job_plan(const SimparJobArgs *args, const SimparModel *model,
                         const SimparGenerator *gen, SimparPlan *plan, GError **error);
/* The step-level split into `train` (simpar_train_init'ed here; the tensor-parallel plan and
 * the check against the GPUs are left to simpar_train_validate). */
gboolean simpar_job_train(const SimparJobArgs *args, SimparTrain *train, GError **error);

/* What a measured run executes. */
typedef enum {
    SIMPAR_JOB_RUN_LAYER, /* one tensor-parallel layer, forward and backward */
    SIMPAR_JOB_RUN_STEP,  /* the executable training step (simpar_step_build_ops) */
} SimparJobRun;

gboolean simpar_job_run_parse(const char *name, SimparJobRun *out, GError **error);
const char *simpar_job_run_name(SimparJobRun run);
/* --cp-mode: "allgather" (FALSE) or "ring" (TRUE, ring attention) into *ring; the name of one
 * (transfer none). */
gboolean simpar_job_cp_mode_parse(const char *name, gboolean *ring, GError **error);
const char *simpar_job_cp_mode_name(gboolean ring);

/* (transfer full): the schedule of `run` for the job, with `model` (`fallback` model when
 * --model is not given) and `train` (validated; train->tp is the layer's plan) filled:
 *   layer  the layer schedule of --tp-mode (default 1d) on T = --tp (default 1) ranks;
 *   step   simpar_step_build_ops on T x P x D ranks (T default 1).
 * NULL with the error of whichever check refused the job. */
/* Every check of simpar_job_schedule, without building the schedule: parsing and validation
 * only, `model` and `train` filled as it fills them. */
gboolean simpar_job_check(const SimparJobArgs *args, SimparJobRun run, const char *fallback,
                          SimparModel *model, SimparTrain *train, GError **error);
SimparSchedule *simpar_job_schedule(const SimparJobArgs *args, SimparJobRun run,
                                    const char *fallback, SimparModel *model, SimparTrain *train,
                                    GError **error);

G_END_DECLS
#endif /* SIMPAR_JOB_H */
