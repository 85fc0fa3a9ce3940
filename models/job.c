/* job.c - the job options shared by simpar and simpar-exec, and their round trip through an
 * argument vector. One table per option set; the vector is written by walking the same tables,
 * so an option added to a table is stored in measured runs without further code. */
#include "job.h"
#include "generators.h"
#include "model.h"
#include "step.h"
#include <math.h>

G_DEFINE_QUARK(simpar_job_error_quark, simpar_job_error)

void
simpar_job_args_init(SimparJobArgs *args)
{
    *args = (SimparJobArgs){0};
    gint64 *unset[] = {&args->hidden,
                       &args->heads,
                       &args->seq,
                       &args->micro_batch,
                       &args->ffn,
                       &args->layers,
                       &args->vocab,
                       &args->kv_heads,
                       &args->head_dim,
                       &args->tp,
                       &args->depth,
                       &args->cp,
                       &args->pp,
                       &args->dp,
                       &args->global_batch,
                       &args->virtual_stages,
                       &args->zero,
                       &args->local_chunks,
                       &args->aux_head_width,
                       &args->bucket_params,
                       &args->vp_group,
                       &args->shard_group,
                       &args->first_stage_layers,
                       &args->last_stage_layers,
                       &args->experts,
                       &args->top_k,
                       &args->moe_ffn,
                       &args->shared_ffn,
                       &args->dense_layers,
                       &args->moe_every,
                       &args->expert_groups,
                       &args->group_limit,
                       &args->q_lora_rank,
                       &args->kv_lora_rank,
                       &args->qk_head_dim,
                       &args->qk_pos_emb_head_dim,
                       &args->v_head_dim,
                       &args->mtp_layers,
                       &args->ep,
                       &args->etp};
    for (guint i = 0; i < G_N_ELEMENTS(unset); i++)
        *unset[i] = SIMPAR_JOB_UNSET;
}

void
simpar_job_args_clear(SimparJobArgs *args)
{
    char **strs[] = {&args->model,
                     &args->dtype,
                     &args->mlp,
                     &args->norm,
                     &args->bias,
                     &args->dropout,
                     &args->tp_mode,
                     &args->variant,
                     &args->recompute,
                     &args->schedule,
                     &args->order,
                     &args->grad_reduce_dtype,
                     &args->cp_mode,
                     &args->fp8_recipe,
                     &args->router,
                     &args->capacity_factor,
                     &args->imbalance,
                     &args->moe_dispatcher,
                     &args->moe_flex_backend,
                     &args->recompute_modules,
                     &args->layout};
    for (guint i = 0; i < G_N_ELEMENTS(strs); i++)
        g_clear_pointer(strs[i], g_free);
}

/* ---- option tables ------------------------------------------------------------------------ */

enum {
    JOB_MAX_ENTRIES = 40
};

/* The entries of one set, pointing into `a`, NULL-terminated; returns their number. */
static guint
job_entries(SimparJobArgs *a, SimparJobOptions set, GOptionEntry *out)
{
    guint n_presets;
    const SimparModelPreset *presets = simpar_model_presets(&n_presets);
    g_autofree char *model_help = g_strdup_printf(
        "Preset name (%s) or a JSON model file; default default-4k (predict), paper-3d "
        "(schedule), tiny (simpar-exec)",
        simpar_intern_names(presets, n_presets, sizeof(*presets)));
    const GOptionEntry model[] = {
        {"model", 'm', 0, G_OPTION_ARG_STRING, &a->model, g_intern_string(model_help), "NAME|FILE"},
        {"hidden", 0, 0, G_OPTION_ARG_INT64, &a->hidden, "Hidden size h", "H"},
        {"heads", 0, 0, G_OPTION_ARG_INT64, &a->heads,
         "Attention heads a (h % a == 0 unless --head-dim)", "A"},
        {"kv-heads", 0, 0, G_OPTION_ARG_INT64, &a->kv_heads,
         "Key/value heads (grouped-query attention; a % kv == 0; default a, 1 = multi-query)",
         "KV"},
        {"head-dim", 0, 0, G_OPTION_ARG_INT64, &a->head_dim,
         "A head's query, key and value columns (Megatron's --kv-channels; default h/a)", "D"},
        {"mlp", 0, 0, G_OPTION_ARG_STRING, &a->mlp,
         "MLP: gelu (fc1 [h x f]) or swiglu (gate and up fused, fc1 [h x 2f])", "gelu|swiglu"},
        {"norm", 0, 0, G_OPTION_ARG_STRING, &a->norm, "Normalisation: layernorm or rmsnorm",
         "layernorm|rmsnorm"},
        {"bias", 0, 0, G_OPTION_ARG_STRING, &a->bias,
         "Biases in the linears: on (GPT presets) or off (Llama presets)", "on|off"},
        {"dropout", 0, 0, G_OPTION_ARG_STRING, &a->dropout,
         "Dropout in training: on (GPT presets; its masks are kept for the backward) or off "
         "(Llama presets)",
         "on|off"},
        {"seq", 0, 0, G_OPTION_ARG_INT64, &a->seq, "Sequence length s", "S"},
        {"micro-batch", 0, 0, G_OPTION_ARG_INT64, &a->micro_batch,
         "Sequences per micro-batch b (per tensor-parallel group)", "B"},
        {"ffn", 0, 0, G_OPTION_ARG_INT64, &a->ffn, "FFN width f (usually 4h)", "F"},
        {"layers", 0, 0, G_OPTION_ARG_INT64, &a->layers, "Transformer layers L", "L"},
        {"vocab", 0, 0, G_OPTION_ARG_INT64, &a->vocab, "Vocabulary size V", "V"},
        {"dtype", 0, 0, G_OPTION_ARG_STRING, &a->dtype,
         "Element type: fp16, bf16, fp32, fp64, or fp8 (the linears' GEMMs in FP8 as Transformer "
         "Engine runs them, the rest bf16)",
         "T"},
        {"fp8-recipe", 0, 0, G_OPTION_ARG_STRING, &a->fp8_recipe,
         "With --dtype fp8: delayed (default), current (per-tensor current scaling; Megatron's "
         "tensorwise) or mxfp8 (1 x 32 block scales, Blackwell)",
         "R"},
        {"fp8-dot-product-attention", 0, 0, G_OPTION_ARG_NONE, &a->fp8_attention,
         "With --dtype fp8 and --attention flash: the attention core in FP8 as well (cuDNN's "
         "fused FP8 attention; Transformer Engine's fp8_dpa)",
         NULL},
        {"fp8-output-proj", 0, 0, G_OPTION_ARG_NONE, &a->fp8_output_proj,
         "With --dtype fp8 --fp8-recipe mxfp8: the output layer's GEMMs (the LM head, and a "
         "multi-token prediction module's) in MXFP8 as well (Megatron-Core's fp8_output_proj)",
         NULL},
        {"experts", 0, 0, G_OPTION_ARG_INT64, &a->experts,
         "Mixture of experts: routed experts E per MoE layer (0: dense)", "E"},
        {"topk", 0, 0, G_OPTION_ARG_INT64, &a->top_k, "Experts each token is routed to (<= E)",
         "K"},
        {"moe-ffn", 0, 0, G_OPTION_ARG_INT64, &a->moe_ffn,
         "FFN width of one routed expert (default --ffn)", "F"},
        {"shared-ffn", 0, 0, G_OPTION_ARG_INT64, &a->shared_ffn,
         "FFN width of the shared experts together (0: none)", "F"},
        {"dense-layers", 0, 0, G_OPTION_ARG_INT64, &a->dense_layers,
         "The first K layers keep the dense MLP", "K"},
        {"moe-every", 0, 0, G_OPTION_ARG_INT64, &a->moe_every,
         "An MoE layer every N layers after them (default 1)", "N"},
        {"router", 0, 0, G_OPTION_ARG_STRING, &a->router,
         "Router scores: softmax (Mixtral, Qwen3) or sigmoid (DeepSeek-V3), normalised over "
         "the top-k",
         "softmax|sigmoid"},
        {"expert-groups", 0, 0, G_OPTION_ARG_INT64, &a->expert_groups,
         "Node-limited routing: the experts fall into G groups (0: none)", "G"},
        {"group-limit", 0, 0, G_OPTION_ARG_INT64, &a->group_limit,
         "Node-limited routing: a token reaches at most M groups", "M"},
        {"capacity-factor", 0, 0, G_OPTION_ARG_STRING, &a->capacity_factor,
         "Rows per expert over the mean T k / E; choices past it are dropped (default: "
         "dropless)",
         "CF"},
        {"imbalance", 0, 0, G_OPTION_ARG_STRING, &a->imbalance,
         "The busiest expert's tokens over the mean (>= 1, default 1: balanced)", "X"},
        {"moe-dispatcher", 0, 0, G_OPTION_ARG_STRING, &a->moe_dispatcher,
         "How tokens reach their experts: alltoall (Megatron-Core's flat all-to-all, default), "
         "deepep (DeepEP: once per node over the rail, then over NVLink) or allgather "
         "(Megatron-Core's all-gather dispatcher: every token gathered over the ETP x EP group)",
         "alltoall|deepep|allgather"},
        {"moe-flex-backend", 0, 0, G_OPTION_ARG_STRING, &a->moe_flex_backend,
         "--moe-dispatcher deepep's library, Megatron-Core's --moe-flex-dispatcher-backend: "
         "deepep (default) or hybridep (Hybrid-EP: each forward dispatch first all-gathers the "
         "routing maps over the group)",
         "deepep|hybridep"},
        {"overlap-moe-expert-parallel-comm", 0, 0, G_OPTION_ARG_NONE, &a->ep_overlap,
         "In the pipeline's steady state, merge each forward with a backward layer by layer, "
         "one's all-to-alls under the other's compute (Megatron-Core's "
         "--overlap-moe-expert-parallel-comm)",
         NULL},
        {"moe-shared-expert-overlap", 0, 0, G_OPTION_ARG_NONE, &a->moe_shared_overlap,
         "The shared experts run beside the dispatch and combine all-to-alls (Megatron-Core's "
         "--moe-shared-expert-overlap)",
         NULL},
        {"kv-lora-rank", 0, 0, G_OPTION_ARG_INT64, &a->kv_lora_rank,
         simpar_generator_help("Multi-head latent attention: the key/value latent's width (0: "
                               "none; --tp-mode ",
                               SIMPAR_GEN_LINE, SIMPAR_GEN_NAME, "or", ")"),
         "R"},
        {"q-lora-rank", 0, 0, G_OPTION_ARG_INT64, &a->q_lora_rank,
         "Multi-head latent attention: the query latent's width", "R"},
        {"qk-head-dim", 0, 0, G_OPTION_ARG_INT64, &a->qk_head_dim,
         "Multi-head latent attention: a head's query/key columns without position embedding", "D"},
        {"qk-pos-emb-head-dim", 0, 0, G_OPTION_ARG_INT64, &a->qk_pos_emb_head_dim,
         "Multi-head latent attention: the rotary query/key columns, one key shared by the heads",
         "D"},
        {"v-head-dim", 0, 0, G_OPTION_ARG_INT64, &a->v_head_dim,
         "Multi-head latent attention: a head's value columns", "D"},
        {"mtp-layers", 0, 0, G_OPTION_ARG_INT64, &a->mtp_layers,
         "Multi-token prediction modules on the last stage (Megatron's --mtp-num-layers; 0: none)",
         "N"},
        G_OPTION_ENTRY_NULL,
    };
    const GOptionEntry plan[] = {
        {"tp-mode", 0, 0, G_OPTION_ARG_STRING, &a->tp_mode,
         simpar_generator_help("Tensor-parallel mode: ", SIMPAR_GEN_ANY, SIMPAR_GEN_NAME, NULL,
                               " (predict: also all, the default)"),
         "MODE"},
        {"tp", 0, 0, G_OPTION_ARG_INT64, &a->tp,
         simpar_generator_help("Tensor-parallel group size T: ", SIMPAR_GEN_ANY, SIMPAR_GEN_SIZED,
                               NULL, "; predict: default GPUs / (P x D)"),
         "T"},
        {"depth", 0, 0, G_OPTION_ARG_INT64, &a->depth, "2.5-D depth d (default q=d)", "D"},
        {"sp", 0, 0, G_OPTION_ARG_NONE, &a->sp, "1-D: sequence parallelism", NULL},
        {"tp-comm-overlap", 0, 0, G_OPTION_ARG_NONE, &a->tp_comm_overlap,
         "1-D with --sp: overlap the sequence-parallel all-gathers and reduce-scatters with the "
         "GEMMs in chunks, as Transformer Engine's userbuffers do (Megatron's --tp-comm-overlap)",
         NULL},
        {"cp", 0, 0, G_OPTION_ARG_INT64, &a->cp,
         "Context parallelism: C GPUs share each sequence (2C chunks; default 1), right after "
         "the tensor-parallel group unless --order places cp",
         "C"},
        {"cp-mode", 0, 0, G_OPTION_ARG_STRING, &a->cp_mode,
         "Context parallelism's attention: allgather (keys and values all-gathered, Llama 3; "
         "default) or ring (passed around the ring, overlapped with attention blocks)",
         "M"},
        {"variant", 0, 0, G_OPTION_ARG_STRING, &a->variant,
         "3-D: paper (backward re-gathers; default) or later (saved gathers, async "
         "reduce-scatters)",
         "V"},
        {"recompute", 0, 0, G_OPTION_ARG_STRING, &a->recompute,
         "Activation recomputation: none (default), selective (attention core) or full (the "
         "whole forward, collectives included)",
         "R"},
        {"recompute-modules", 0, 0, G_OPTION_ARG_STRING, &a->recompute_modules,
         "--recompute selective: the modules recomputed, Megatron-Core's names comma- or "
         "blank-separated: core_attn (default), moe_act, layernorm, mla_up_proj, mlp, moe, "
         "shared_experts",
         "LIST"},
        G_OPTION_ENTRY_NULL,
    };
    const GOptionEntry train[] = {
        {"pp", 0, 0, G_OPTION_ARG_INT64, &a->pp, "Pipeline stages P (default 1)", "P"},
        {"dp", 0, 0, G_OPTION_ARG_INT64, &a->dp, "Data-parallel replicas D (default 1)", "D"},
        {"schedule", 0, 0, G_OPTION_ARG_STRING, &a->schedule,
         "Pipeline schedule: gpipe, 1f1b (default), interleaved", "S"},
        {"virtual-stages", 0, 0, G_OPTION_ARG_INT64, &a->virtual_stages,
         "Interleaved: model chunks v per device (default 2)", "V"},
        {"vp-group", 0, 0, G_OPTION_ARG_INT64, &a->vp_group,
         "Interleaved: micro-batches per virtual-stage group N, Megatron-Core's "
         "--microbatch-group-size-per-virtual-pipeline-stage (default --pp); any micro-batch "
         "count m with N <= m and m mod N 0 or at least --pp",
         "N"},
        {"first-stage-layers", 0, 0, G_OPTION_ARG_INT64, &a->first_stage_layers,
         "Layers of the first pipeline stage (Megatron-Core's "
         "--decoder-first-pipeline-num-layers); the other stages share the rest",
         "N"},
        {"last-stage-layers", 0, 0, G_OPTION_ARG_INT64, &a->last_stage_layers,
         "Layers of the last pipeline stage (--decoder-last-pipeline-num-layers)", "N"},
        {"account-for-embedding-in-pipeline-split", 0, 0, G_OPTION_ARG_NONE, &a->account_embedding,
         "The first virtual stage counts the embedding as a layer of the split (Megatron-Core's "
         "flag; L + embedding + loss must divide over --pp x --virtual-stages)",
         NULL},
        {"account-for-loss-in-pipeline-split", 0, 0, G_OPTION_ARG_NONE, &a->account_loss,
         "The last virtual stage counts the output layer and loss as a layer of the split", NULL},
        {"pipeline-model-parallel-layout", 0, 0, G_OPTION_ARG_STRING, &a->layout,
         "Megatron-Core's layout: every virtual stage's layers in virtual-stage order, '|' "
         "between stages, E embedding, t decoder layer, m MTP layer, L loss, x*N and (..)*N "
         "repeat (e.g. \"Et*4|(t*4|)*14tmL\"); replaces the other split flags",
         "LAYOUT"},
        {"global-batch", 0, 0, G_OPTION_ARG_INT64, &a->global_batch,
         "Sequences per optimizer step over all replicas (default micro-batch x D: m = 1)", "B"},
        {"zero", 0, 0, G_OPTION_ARG_INT64, &a->zero,
         "ZeRO stage: 0 (DDP all-reduce, default), 1 (distributed optimizer), 2, 3", "Z"},
        {"shard-group", 0, 0, G_OPTION_ARG_INT64, &a->shard_group,
         "ZeRO 1-3: shard over groups of N of the D x C ranks that hold the same parameters, "
         "replicate across them (hybrid sharding; default all of them)",
         "N"},
        {"no-reshard", 0, 0, G_OPTION_ARG_NONE, &a->no_reshard,
         "ZeRO-3: keep the parameters the forward gathered for the backward (no re-gather)", NULL},
        {"fp8-param-gather", 0, 0, G_OPTION_ARG_NONE, &a->fp8_param_gather,
         "--dtype fp8 with ZeRO/FSDP: the linears' parameters held and all-gathered in FP8", NULL},
        {"grad-reduce-dtype", 0, 0, G_OPTION_ARG_STRING, &a->grad_reduce_dtype,
         "Gradient accumulation and reduction type: the model's dtype (default) or fp32", "T"},
        {"overlap-grad-reduce", 0, 0, G_OPTION_ARG_NONE, &a->overlap_grad_reduce,
         "Reduce gradient buckets during the last backward instead of after it", NULL},
        {"overlap-param-gather", 0, 0, G_OPTION_ARG_NONE, &a->overlap_param_gather,
         "ZeRO 1/2: all-gather the updated parameters bucket by bucket under the next step's "
         "forward instead of after the optimizer",
         NULL},
        {"bucket-params", 0, 0, G_OPTION_ARG_INT64, &a->bucket_params,
         "Data-parallel bucket size in parameters (default max(4e7, 1e6 x D))", "N"},
        {"tied-embeddings", 0, 0, G_OPTION_ARG_NONE, &a->tied_embeddings,
         "The output layer shares the embedding table", NULL},
        {"scatter-gather", 0, 0, G_OPTION_ARG_NONE, &a->scatter_gather,
         "Pipeline p2p: send 1/T of each activation, all-gather it inside the node", NULL},
        {"ep", 0, 0, G_OPTION_ARG_INT64, &a->ep,
         "Expert parallelism: each MoE layer's experts split over EP GPUs (default 1)", "EP"},
        {"etp", 0, 0, G_OPTION_ARG_INT64, &a->etp,
         "Expert tensor parallelism: each expert split over ETP GPUs (default 1)", "ETP"},
        {"order", 0, 0, G_OPTION_ARG_STRING, &a->order,
         "Rank placement, innermost first (default tp,cp,ep,dp,pp; unplaced, cp sits right "
         "after tp and ep right after cp; ep places an MoE model's expert-parallel groups)",
         "A,B,C[,D[,E]]"},
        {"local-chunks", 0, 0, G_OPTION_ARG_INT64, &a->local_chunks,
         "Local parallelism: K chunks with auxiliary heads (replaces --pp)", "K"},
        {"local-async", 0, 0, G_OPTION_ARG_NONE, &a->local_async,
         "Local parallelism without a flush per step (steady state)", NULL},
        {"aux-head-width", 0, 0, G_OPTION_ARG_INT64, &a->aux_head_width,
         "Local parallelism: auxiliary head width W (default the vocabulary)", "W"},
        G_OPTION_ENTRY_NULL,
    };
    const GOptionEntry *src = set == SIMPAR_JOB_OPTIONS_MODEL  ? model
                              : set == SIMPAR_JOB_OPTIONS_PLAN ? plan
                                                               : train;
    guint n = 0;
    while (src[n].long_name != NULL)
        n++;
    g_assert(n < JOB_MAX_ENTRIES);
    for (guint i = 0; i <= n; i++)
        out[i] = src[i];
    return n;
}

static const SimparJobOptions job_sets[] = {SIMPAR_JOB_OPTIONS_MODEL, SIMPAR_JOB_OPTIONS_PLAN,
                                            SIMPAR_JOB_OPTIONS_TRAIN};

void
simpar_job_add_options(GOptionContext *ctx, SimparJobArgs *args, SimparJobOptions which)
{
    for (guint s = 0; s < G_N_ELEMENTS(job_sets); s++) {
        if (!(which & job_sets[s]))
            continue;
        GOptionEntry entries[JOB_MAX_ENTRIES];
        job_entries(args, job_sets[s], entries);
        if (job_sets[s] != SIMPAR_JOB_OPTIONS_MODEL) {
            g_option_context_add_main_entries(ctx, entries, NULL);
            continue;
        }
        GOptionGroup *g = g_option_group_new("model", "Model shapes (override the preset or file):",
                                             "Show model options", NULL, NULL);
        g_option_group_add_entries(g, entries);
        g_option_context_add_group(ctx, g);
    }
}

GOptionEntry *
simpar_job_option_entries(SimparJobArgs *args, const char *const *names)
{
    GArray *out = g_array_new(TRUE, TRUE, sizeof(GOptionEntry)); /* zero-terminated */
    for (guint s = 0; s < G_N_ELEMENTS(job_sets); s++) {
        GOptionEntry entries[JOB_MAX_ENTRIES];
        guint n = job_entries(args, job_sets[s], entries);
        for (guint i = 0; i < n; i++)
            if (g_strv_contains(names, entries[i].long_name))
                g_array_append_val(out, entries[i]);
    }
    return (GOptionEntry *) g_array_free(out, FALSE); /* (transfer container) */
}

char **
simpar_job_args_to_argv(const SimparJobArgs *args)
{
    SimparJobArgs copy = *args; /* the tables want writable pointers; nothing is written */
    g_autoptr(GPtrArray) out = g_ptr_array_new();
    for (guint s = 0; s < G_N_ELEMENTS(job_sets); s++) {
        GOptionEntry entries[JOB_MAX_ENTRIES];
        guint n = job_entries(&copy, job_sets[s], entries);
        for (guint i = 0; i < n; i++) {
            const GOptionEntry *e = &entries[i];
            if (e->arg == G_OPTION_ARG_INT64 && *(gint64 *) e->arg_data != SIMPAR_JOB_UNSET)
                g_ptr_array_add(out, g_strdup_printf("--%s=%" G_GINT64_FORMAT, e->long_name,
                                                     *(gint64 *) e->arg_data));
            else if (e->arg == G_OPTION_ARG_STRING && *(char **) e->arg_data != NULL)
                g_ptr_array_add(out,
                                g_strdup_printf("--%s=%s", e->long_name, *(char **) e->arg_data));
            else if (e->arg == G_OPTION_ARG_NONE && *(gboolean *) e->arg_data)
                g_ptr_array_add(out, g_strdup_printf("--%s", e->long_name));
        }
    }
    g_ptr_array_add(out, NULL);
    return (char **) g_ptr_array_free(g_steal_pointer(&out), FALSE); /* (transfer full) */
}

gboolean
simpar_job_args_from_argv(SimparJobArgs *args, const char *const *argv, GError **error)
{
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    g_autoptr(GOptionContext) ctx = g_option_context_new(NULL);
    g_option_context_set_help_enabled(ctx, FALSE);
    simpar_job_add_options(ctx, args, SIMPAR_JOB_OPTIONS_ALL);
    g_autoptr(GPtrArray) v = g_ptr_array_new_with_free_func(g_free);
    g_ptr_array_add(v, g_strdup("job"));
    for (guint i = 0; argv[i] != NULL; i++)
        g_ptr_array_add(v, g_strdup(argv[i]));
    int argc = (int) v->len;
    g_ptr_array_add(v, NULL);
    char **pv = g_memdup2(v->pdata, sizeof(char *) * v->len); /* parsing reorders the vector */
    char **parse = pv;
    gboolean ok = g_option_context_parse(ctx, &argc, &parse, error);
    if (ok && argc > 1) {
        g_set_error(error, SIMPAR_JOB_ERROR, SIMPAR_JOB_ERROR_USAGE, "'%s' is not a job option",
                    parse[1]);
        ok = FALSE;
    }
    g_free(pv);
    return ok;
}

/* ---- model, plan, split ------------------------------------------------------------------- */

/* A flag's value that models/ refused: a usage error (exit 2), as the flags' own checks give. */
static gboolean
job_usage_from(GError **error, GError *local)
{
    g_set_error_literal(error, SIMPAR_JOB_ERROR, SIMPAR_JOB_ERROR_USAGE, local->message);
    g_error_free(local);
    return FALSE;
}

/* An on|off flag `value` (NULL: not given, `*off` kept). */
/* --dtype (fp8: bf16 with FP8 GEMMs) and --fp8-recipe. */
static gboolean
job_precision(const SimparJobArgs *args, SimparModel *m, GError **error)
{
    GError *local = NULL;
    if (g_strcmp0(args->dtype, "fp8") == 0) {
        m->dtype = SIMPAR_DTYPE_BF16;
        m->fp8 = SIMPAR_FP8_DELAYED; /* Transformer Engine's default recipe */
    } else if (args->dtype != NULL) {
        if (!simpar_dtype_parse(args->dtype, &m->dtype, &local)) {
            g_clear_error(&local);
            g_set_error(error, SIMPAR_JOB_ERROR, SIMPAR_JOB_ERROR_USAGE,
                        "--dtype: dtype '%s' is not one of fp16, bf16, fp32, fp64, fp8",
                        args->dtype);
            return FALSE;
        }
        m->fp8 = SIMPAR_FP8_NONE;
    }
    if (args->fp8_attention && m->fp8 == SIMPAR_FP8_NONE) {
        g_set_error(error, SIMPAR_JOB_ERROR, SIMPAR_JOB_ERROR_USAGE,
                    "--fp8-dot-product-attention needs --dtype fp8 (the attention core in FP8 "
                    "beside the linears' FP8 GEMMs; the model trains in %s)",
                    simpar_dtype_name(m->dtype));
        return FALSE;
    }
    if (args->fp8_recipe == NULL)
        return TRUE;
    if (m->fp8 == SIMPAR_FP8_NONE) {
        g_set_error(error, SIMPAR_JOB_ERROR, SIMPAR_JOB_ERROR_USAGE,
                    "--fp8-recipe %s needs --dtype fp8 (the recipe of the FP8 GEMMs; the model "
                    "trains in %s)",
                    args->fp8_recipe, simpar_dtype_name(m->dtype));
        return FALSE;
    }
    SimparFp8Recipe r;
    if (!simpar_fp8_recipe_parse(args->fp8_recipe, &r, &local)) {
        g_prefix_error(&local, "--fp8-recipe: ");
        return job_usage_from(error, local);
    }
    m->fp8 = r;
    return TRUE;
}

/* --fp8-output-proj: Megatron-Core's fp8_output_proj runs the LM head under MXFP8 only
 * (transformer_config.py refuses it without fp8 or with another recipe). */
static gboolean
job_check_fp8_output_proj(const SimparJobArgs *args, const SimparModel *m, GError **error)
{
    if (!args->fp8_output_proj || m->fp8 == SIMPAR_FP8_MXFP8)
        return TRUE;
    g_set_error(error, SIMPAR_JOB_ERROR, SIMPAR_JOB_ERROR_USAGE,
                "--fp8-output-proj needs --dtype fp8 --fp8-recipe mxfp8 (the output layer "
                "under MXFP8, as Megatron-Core's fp8_output_proj; the model trains in %s)",
                m->fp8 != SIMPAR_FP8_NONE ? simpar_model_precision(m)
                                          : simpar_dtype_name(m->dtype));
    return FALSE;
}

static gboolean
job_switch(const char *flag, const char *value, gboolean *off, GError **error)
{
    if (value == NULL)
        return TRUE;
    if (!g_str_equal(value, "on") && !g_str_equal(value, "off")) {
        g_set_error(error, SIMPAR_JOB_ERROR, SIMPAR_JOB_ERROR_USAGE, "%s %s: valid are on and off",
                    flag, value);
        return FALSE;
    }
    *off = g_str_equal(value, "off");
    return TRUE;
}

/* A real flag `value` (NULL: not given) above `min` (or at it when `inclusive`). */
static gboolean
job_real(const char *flag, const char *value, double min, gboolean inclusive, const char *why,
         double *out, GError **error)
{
    if (value == NULL)
        return TRUE;
    char *end = NULL;
    double v = g_ascii_strtod(value, &end);
    if (end == value || *end != '\0' || !isfinite(v) || v > 1e6 || v < min ||
        (!inclusive && v == min)) {
        g_set_error(error, SIMPAR_JOB_ERROR, SIMPAR_JOB_ERROR_USAGE,
                    "%s %s: must be a number %s %g and at most 1e6 (%s)", flag, value,
                    inclusive ? "at least" : "above", min, why);
        return FALSE;
    }
    *out = v;
    return TRUE;
}

/* --router, --capacity-factor, --imbalance, --moe-shared-expert-overlap (the integer MoE flags
 * are overrides). */
static gboolean
job_moe(const SimparJobArgs *args, SimparModel *m, GError **error)
{
    GError *local = NULL;
    SimparRouterScore score;
    if (args->router != NULL) {
        if (!simpar_router_parse(args->router, &score, &local)) {
            g_prefix_error(&local, "--router: ");
            return job_usage_from(error, local);
        }
        m->moe.router = score;
    }
    if (args->moe_shared_overlap) {
        if (m->moe.experts == 0 || m->moe.shared_ffn == 0) {
            g_set_error(error, SIMPAR_JOB_ERROR, SIMPAR_JOB_ERROR_USAGE,
                        "--moe-shared-expert-overlap runs a model's shared experts beside its "
                        "all-to-alls, and %s has none (valid: a model with experts and "
                        "--shared-ffn above 0, such as deepseek-v3)",
                        m->name);
            return FALSE;
        }
        m->moe.shared_overlap = 1;
    }
    if (args->moe_flex_backend != NULL) {
        gboolean hybridep = g_strcmp0(args->moe_flex_backend, "hybridep") == 0;
        if (!hybridep && g_strcmp0(args->moe_flex_backend, "deepep") != 0) {
            g_set_error(error, SIMPAR_JOB_ERROR, SIMPAR_JOB_ERROR_USAGE,
                        "--moe-flex-backend %s: valid are deepep and hybridep",
                        args->moe_flex_backend);
            return FALSE;
        }
        if (g_strcmp0(args->moe_dispatcher, "deepep") != 0) {
            g_set_error(error, SIMPAR_JOB_ERROR, SIMPAR_JOB_ERROR_USAGE,
                        "--moe-flex-backend %s picks the library of --moe-dispatcher deepep, and "
                        "the dispatcher is %s (valid: --moe-dispatcher deepep with it, or leave "
                        "--moe-flex-backend out)",
                        args->moe_flex_backend,
                        args->moe_dispatcher != NULL ? args->moe_dispatcher : "alltoall");
            return FALSE;
        }
        m->moe.hybridep = hybridep;
    }
    return job_real("--capacity-factor", args->capacity_factor, 0, FALSE,
                    "rows per expert over the mean; leave it out for dropless routing",
                    &m->moe.capacity, error) &&
           job_real("--imbalance", args->imbalance, 1, TRUE,
                    "the busiest expert's tokens over the mean", &m->moe.imbalance, error);
}

gboolean
simpar_job_model(const SimparJobArgs *args, const char *fallback, SimparModel *m, GError **error)
{
    const char *name = args->model != NULL ? args->model : fallback;
    GError *local = NULL;
    if (g_str_has_suffix(name, ".json")) {
        if (!simpar_model_load_json(name, m, error)) /* the file's fault: exit 1 */
            return FALSE;
    } else if (!simpar_model_preset(name, m, &local)) {
        return job_usage_from(error, local);
    }

    const struct {
        gint64 given;
        gint64 *field;
    } over[] = {{args->hidden, &m->hidden},
                {args->heads, &m->heads},
                {args->seq, &m->seq},
                {args->micro_batch, &m->micro_batch},
                {args->ffn, &m->ffn},
                {args->layers, &m->layers},
                {args->vocab, &m->vocab},
                {args->kv_heads, &m->kv_heads},
                {args->head_dim, &m->head_dim},
                {args->experts, &m->moe.experts},
                {args->top_k, &m->moe.top_k},
                {args->moe_ffn, &m->moe.moe_ffn},
                {args->shared_ffn, &m->moe.shared_ffn},
                {args->dense_layers, &m->moe.dense_layers},
                {args->moe_every, &m->moe.moe_every},
                {args->expert_groups, &m->moe.groups},
                {args->group_limit, &m->moe.group_limit},
                {args->q_lora_rank, &m->mla.q_lora_rank},
                {args->kv_lora_rank, &m->mla.kv_lora_rank},
                {args->qk_head_dim, &m->mla.qk_head_dim},
                {args->qk_pos_emb_head_dim, &m->mla.qk_pos_emb_head_dim},
                {args->v_head_dim, &m->mla.v_head_dim},
                {args->mtp_layers, &m->mtp_layers}};

    if (args->experts == 0) /* --experts 0: the model is dense, whatever experts it had */
        m->moe = (SimparMoeConfig){0};
    for (guint i = 0; i < G_N_ELEMENTS(over); i++)
        if (over[i].given != SIMPAR_JOB_UNSET)
            *over[i].field = over[i].given;
    if (m->moe.experts > 0 && m->moe.moe_ffn == 0) /* Megatron's default: the dense width */
        m->moe.moe_ffn = m->ffn;
    simpar_model_normalise_head_dim(m);
    if (args->kv_heads != SIMPAR_JOB_UNSET && args->kv_heads < 1) {
        g_set_error(error, SIMPAR_JOB_ERROR, SIMPAR_JOB_ERROR_USAGE,
                    "--kv-heads %" G_GINT64_FORMAT " is out of range: it must be between 1 and "
                    "--heads %" G_GINT64_FORMAT " and divide it",
                    args->kv_heads, m->heads);
        return FALSE;
    }
    if (!job_precision(args, m, error) || !job_check_fp8_output_proj(args, m, error))
        return FALSE;
    if (args->mlp != NULL && !simpar_mlp_parse(args->mlp, &m->mlp, &local)) {
        g_prefix_error(&local, "--mlp: ");
        return job_usage_from(error, local);
    }
    if (args->norm != NULL && !simpar_norm_parse(args->norm, &m->norm, &local)) {
        g_prefix_error(&local, "--norm: ");
        return job_usage_from(error, local);
    }
    if (!job_switch("--bias", args->bias, &m->no_bias, error) ||
        !job_switch("--dropout", args->dropout, &m->no_dropout, error) || !job_moe(args, m, error))
        return FALSE;
    /* a file's values were checked as it loaded: what fails now, the flags gave */
    return simpar_model_validate(m, &local) || job_usage_from(error, local);
}

/* --cp's range (checked with the other split flags, before any platform is read). */
static gboolean
job_cp_valid(const SimparJobArgs *args, GError **error)
{
    if (args->cp == SIMPAR_JOB_UNSET || (args->cp >= 1 && args->cp <= 65536))
        return TRUE;
    g_set_error(error, SIMPAR_JOB_ERROR, SIMPAR_JOB_ERROR_USAGE,
                "--cp %" G_GINT64_FORMAT ": must be between 1 and 65536 (GPUs sharing each "
                "sequence)",
                args->cp);
    return FALSE;
}

/* The largest tensor-parallel group and pipeline or data-parallel split a flag may ask for
 * (the generators' and simpar_train_validate's bounds). */
#define JOB_MAX_TP    65536
#define JOB_MAX_SPLIT (G_GINT64_CONSTANT(1) << 20)

/* The range of every integer job flag beyond the model's (simpar_model_validate checks those),
 * checked as the flags enter, before any loop or allocation is sized by them: --tp 2^40 made
 * predict search 2.5-D depths up to it, and --tp 2^32 wrapped to 0 GPUs. */
static const struct {
    const char *flag;
    glong offset;
    gint64 min, max;
    const char *what;
} job_ranges[] = {
    /* first: its message says "is out of range", as the generators' check of --tp does */
    {"--tp", G_STRUCT_OFFSET(SimparJobArgs, tp), 1, JOB_MAX_TP, "GPUs of a tensor-parallel group"},
    {"--depth", G_STRUCT_OFFSET(SimparJobArgs, depth), 1, JOB_MAX_TP, "2.5-D depth"},
    {"--ep", G_STRUCT_OFFSET(SimparJobArgs, ep), 1, JOB_MAX_TP, "GPUs of an expert-parallel group"},
    {"--etp", G_STRUCT_OFFSET(SimparJobArgs, etp), 1, JOB_MAX_TP, "GPUs sharing each expert"},
    {"--pp", G_STRUCT_OFFSET(SimparJobArgs, pp), 1, JOB_MAX_SPLIT, "pipeline stages"},
    {"--dp", G_STRUCT_OFFSET(SimparJobArgs, dp), 1, JOB_MAX_SPLIT, "data-parallel replicas"},
    {"--local-chunks", G_STRUCT_OFFSET(SimparJobArgs, local_chunks), 1, JOB_MAX_SPLIT,
     "local-parallel chunks"},
    {"--virtual-stages", G_STRUCT_OFFSET(SimparJobArgs, virtual_stages), 1, 1024,
     "model chunks per device"},
    {"--vp-group", G_STRUCT_OFFSET(SimparJobArgs, vp_group), 1, JOB_MAX_SPLIT,
     "micro-batches per virtual-stage group"},
    {"--global-batch", G_STRUCT_OFFSET(SimparJobArgs, global_batch), 1, SIMPAR_MODEL_MAX_DIM,
     "sequences per optimizer step"},
    {"--shard-group", G_STRUCT_OFFSET(SimparJobArgs, shard_group), 1, JOB_MAX_SPLIT,
     "replicas per shard group"},
    {"--aux-head-width", G_STRUCT_OFFSET(SimparJobArgs, aux_head_width), 1, SIMPAR_MODEL_MAX_DIM,
     "auxiliary head width"},
    {"--bucket-params", G_STRUCT_OFFSET(SimparJobArgs, bucket_params), 1,
     G_GINT64_CONSTANT(1) << 40, "parameters per bucket"},
    {"--first-stage-layers", G_STRUCT_OFFSET(SimparJobArgs, first_stage_layers), 1,
     SIMPAR_MODEL_MAX_DIM, "layers"},
    {"--last-stage-layers", G_STRUCT_OFFSET(SimparJobArgs, last_stage_layers), 1,
     SIMPAR_MODEL_MAX_DIM, "layers"},
};

gboolean
simpar_job_check_ranges(const SimparJobArgs *args, GError **error)
{
    for (guint i = 0; i < G_N_ELEMENTS(job_ranges); i++) {
        gint64 v = G_STRUCT_MEMBER(gint64, args, job_ranges[i].offset);
        if (v == SIMPAR_JOB_UNSET || (v >= job_ranges[i].min && v <= job_ranges[i].max))
            continue;
        g_set_error(error, SIMPAR_JOB_ERROR, SIMPAR_JOB_ERROR_USAGE,
                    "%s %" G_GINT64_FORMAT "%s must be between %" G_GINT64_FORMAT
                    " and %" G_GINT64_FORMAT " (%s)",
                    job_ranges[i].flag, v, i == 0 ? " is out of range:" : ":", job_ranges[i].min,
                    job_ranges[i].max, job_ranges[i].what); /* --tp: the generators' words */
        return FALSE;
    }
    return TRUE;
}

const SimparGenerator *
simpar_job_generator(const SimparJobArgs *args, GError **error)
{
    if (args->tp_mode == NULL)
        return simpar_generator_baseline();
    return simpar_generator_lookup(args->tp_mode, error); /* (transfer none) */
}

/* --recompute-modules: with --recompute selective only, and the combinations Megatron-Core
 * refuses (transformer_config.py) refused the same. */
static gboolean
job_recompute_modules(const SimparJobArgs *args, const SimparModel *m, SimparPlan *plan,
                      GError **error)
{
    if (args->recompute_modules == NULL)
        return TRUE;
    if (plan->recompute != SIMPAR_RECOMPUTE_SELECTIVE) {
        g_set_error(error, SIMPAR_JOB_ERROR, SIMPAR_JOB_ERROR_USAGE,
                    "--recompute-modules %s: valid only with --recompute selective (got "
                    "--recompute %s)",
                    args->recompute_modules, simpar_recompute_name(plan->recompute));
        return FALSE;
    }
    GError *local = NULL;
    if (!simpar_recompute_modules_parse(args->recompute_modules, &plan->recompute_modules, &local))
        return job_usage_from(error, local);
    guint mods = plan->recompute_modules;
    const char *why = NULL;
    if ((mods & SIMPAR_RECOMPUTE_MLA_UP_PROJ) && !simpar_model_is_mla(m))
        why = "mla_up_proj needs multi-head latent attention (--kv-lora-rank above 0, as "
              "deepseek-v3 has)";
    else if ((mods & SIMPAR_RECOMPUTE_SHARED_EXPERTS) && m->moe.shared_overlap)
        why = "shared_experts cannot be recomputed with --moe-shared-expert-overlap (Megatron-Core "
              "refuses it)";
    else if ((mods & (SIMPAR_RECOMPUTE_MOE_ACT | SIMPAR_RECOMPUTE_LAYERNORM)) &&
             m->fp8 == SIMPAR_FP8_DELAYED)
        why = "moe_act and layernorm recomputation does not work with FP8's delayed scaling "
              "(Megatron-Core refuses it; valid: --fp8-recipe current or mxfp8)";
    if (why == NULL)
        return TRUE;
    g_set_error(error, SIMPAR_JOB_ERROR, SIMPAR_JOB_ERROR_USAGE, "--recompute-modules %s: %s",
                args->recompute_modules, why);
    return FALSE;
}

gboolean
simpar_job_plan(const SimparJobArgs *args, const SimparModel *model, const SimparGenerator *gen,
                SimparPlan *plan, GError **error)
{
    g_return_val_if_fail(model != NULL && gen != NULL, FALSE);
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    simpar_plan_init(plan);
    plan->gen = gen;
    plan->p_hidden = plan->p_attn = model->no_dropout ? 0 : SIMPAR_PLAN_DROPOUT_P;
    plan->tp = args->tp;
    plan->depth = args->depth == SIMPAR_JOB_UNSET ? 0 : args->depth;
    plan->sequence_parallel = args->sp;
    plan->tp_comm_overlap = args->tp_comm_overlap;
    plan->fp8_attention = args->fp8_attention;     /* job_precision: only with --dtype fp8 */
    plan->fp8_output_proj = args->fp8_output_proj; /* only with --fp8-recipe mxfp8 */
    if (!job_cp_valid(args, error) || !simpar_job_check_ranges(args, error))
        return FALSE;
    plan->cp = args->cp != SIMPAR_JOB_UNSET ? args->cp : 1;
    if (args->cp_mode != NULL && !simpar_job_cp_mode_parse(args->cp_mode, &plan->cp_ring, error))
        return FALSE;
    if (args->variant != NULL) {
        if (!simpar_generator_has(gen, SIMPAR_GEN_VARIANTS) ||
            (!g_str_equal(args->variant, "paper") && !g_str_equal(args->variant, "later"))) {
            g_autofree char *modes =
                simpar_generator_list(SIMPAR_GEN_VARIANTS, SIMPAR_GEN_NAME, "or");
            g_set_error(error, SIMPAR_JOB_ERROR, SIMPAR_JOB_ERROR_USAGE,
                        "--variant %s: valid only with --tp-mode %s, as 'paper' (backward "
                        "re-gathers) or 'later' (saved gathers, async reduce-scatters)",
                        args->variant, modes);
            return FALSE;
        }
        plan->paper_3d = g_str_equal(args->variant, "paper");
    }
    if (args->recompute != NULL &&
        !simpar_recompute_parse(args->recompute, &plan->recompute, error))
        return FALSE;
    return job_recompute_modules(args, model, plan, error);
}

/* An integer option that must be at least `min` when given. */
static gboolean
job_at_least(gint64 value, gint64 min, const char *flag, GError **error)
{
    if (value == SIMPAR_JOB_UNSET || value >= min)
        return TRUE;
    g_set_error(error, SIMPAR_JOB_ERROR, SIMPAR_JOB_ERROR_USAGE,
                "%s %" G_GINT64_FORMAT ": must be at least %" G_GINT64_FORMAT, flag, value, min);
    return FALSE;
}

static gboolean
job_usage(GError **error, const char *message)
{
    g_set_error_literal(error, SIMPAR_JOB_ERROR, SIMPAR_JOB_ERROR_USAGE, message);
    return FALSE;
}

gboolean
simpar_job_train(const SimparJobArgs *a, SimparTrain *t, GError **error)
{
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    simpar_train_init(t);
    if (a->schedule != NULL && !simpar_pipe_schedule_parse(a->schedule, &t->schedule, error))
        return FALSE;
    if (a->schedule != NULL && t->schedule == SIMPAR_PIPE_LOCAL)
        return job_usage(error, "--schedule local: give --local-chunks K for local parallelism");
    if (a->local_chunks != SIMPAR_JOB_UNSET) {
        if (a->pp != SIMPAR_JOB_UNSET || a->schedule != NULL)
            return job_usage(error, "--local-chunks replaces --pp and --schedule: local "
                                    "parallelism splits the layers into K chunks trained by "
                                    "their own losses");
        t->schedule = SIMPAR_PIPE_LOCAL;
        t->pp = a->local_chunks;
    } else if (a->pp != SIMPAR_JOB_UNSET) {
        t->pp = a->pp;
    }
    if (a->dp != SIMPAR_JOB_UNSET)
        t->dp = a->dp;
    if (!job_at_least(a->ep, 1, "--ep", error) || !job_at_least(a->etp, 1, "--etp", error))
        return FALSE;
    if (a->ep != SIMPAR_JOB_UNSET)
        t->ep = a->ep;
    if (a->etp != SIMPAR_JOB_UNSET)
        t->etp = a->etp;
    if (a->moe_dispatcher != NULL) {
        static const char *const names[] = {[SIMPAR_MOE_ALLTOALL] = "alltoall",
                                            [SIMPAR_MOE_DEEPEP] = "deepep",
                                            [SIMPAR_MOE_ALLGATHER] = "allgather"};
        guint d = 0;
        while (d < G_N_ELEMENTS(names) && g_strcmp0(a->moe_dispatcher, names[d]) != 0)
            d++;
        if (d == G_N_ELEMENTS(names)) {
            g_set_error(error, SIMPAR_JOB_ERROR, SIMPAR_JOB_ERROR_USAGE,
                        "--moe-dispatcher %s: valid are alltoall, deepep and allgather",
                        a->moe_dispatcher);
            return FALSE;
        }
        t->moe_dispatcher = d;
    }
    if (a->vp_group != SIMPAR_JOB_UNSET)
        t->vp_group = a->vp_group;
    if (a->virtual_stages != SIMPAR_JOB_UNSET)
        t->virtual_stages = a->virtual_stages;
    else if (t->schedule == SIMPAR_PIPE_INTERLEAVED)
        t->virtual_stages = 2;
    if (!job_at_least(a->global_batch, 1, "--global-batch", error) ||
        !job_at_least(a->vp_group, 1, "--vp-group", error) ||
        !job_at_least(a->aux_head_width, 1, "--aux-head-width", error) ||
        !job_at_least(a->bucket_params, 1, "--bucket-params", error))
        return FALSE;
    if (a->global_batch != SIMPAR_JOB_UNSET)
        t->global_batch = a->global_batch;
    if (a->zero != SIMPAR_JOB_UNSET && (a->zero < 0 || a->zero > 3)) {
        g_set_error(error, SIMPAR_JOB_ERROR, SIMPAR_JOB_ERROR_USAGE,
                    "--zero %" G_GINT64_FORMAT ": valid stages are 0 (DDP), 1, 2 and 3", a->zero);
        return FALSE;
    }
    if (a->zero != SIMPAR_JOB_UNSET)
        t->zero = (gint) a->zero;
    if (a->aux_head_width != SIMPAR_JOB_UNSET)
        t->aux_head_width = a->aux_head_width;
    if ((a->aux_head_width != SIMPAR_JOB_UNSET || a->local_async) &&
        a->local_chunks == SIMPAR_JOB_UNSET)
        return job_usage(error, "--aux-head-width and --local-async apply to local parallelism "
                                "(--local-chunks K)");
    if (a->bucket_params != SIMPAR_JOB_UNSET)
        t->bucket_params = a->bucket_params;
    if (!job_at_least(a->shard_group, 1, "--shard-group", error) || !job_cp_valid(a, error) ||
        !job_at_least(a->first_stage_layers, 1, "--first-stage-layers", error) ||
        !job_at_least(a->last_stage_layers, 1, "--last-stage-layers", error) ||
        !simpar_job_check_ranges(a, error))
        return FALSE;
    if (a->first_stage_layers != SIMPAR_JOB_UNSET)
        t->first_stage_layers = a->first_stage_layers;
    if (a->last_stage_layers != SIMPAR_JOB_UNSET)
        t->last_stage_layers = a->last_stage_layers;
    if (a->shard_group != SIMPAR_JOB_UNSET)
        t->shard_group = a->shard_group;
    t->no_reshard = a->no_reshard;
    t->fp8_param_gather = a->fp8_param_gather;
    if (a->grad_reduce_dtype != NULL) {
        SimparDtype dt;
        if (!simpar_dtype_parse(a->grad_reduce_dtype, &dt, NULL)) {
            g_set_error(error, SIMPAR_JOB_ERROR, SIMPAR_JOB_ERROR_USAGE,
                        "--grad-reduce-dtype %s: valid are fp32 (accumulate and reduce "
                        "gradients in fp32) and the model's dtype",
                        a->grad_reduce_dtype);
            return FALSE;
        }
        t->grad_dtype = dt, t->grad_dtype_set = TRUE;
    }
    t->overlap_grad_reduce = a->overlap_grad_reduce;
    t->overlap_param_gather = a->overlap_param_gather;
    t->ep_overlap = a->ep_overlap;
    t->local_async = a->local_async;
    t->tied_embeddings = a->tied_embeddings;
    t->account_embedding = a->account_embedding, t->account_loss = a->account_loss;
    t->layout = a->layout != NULL ? g_intern_string(a->layout) : NULL;
    t->scatter_gather = a->scatter_gather;
    return a->order == NULL || simpar_train_order_parse(a->order, t->order, error);
}

/* ---- the schedule of a measured run ------------------------------------------------------- */

static const char *const job_run_names[] = {"layer", "step"};

gboolean
simpar_job_run_parse(const char *name, SimparJobRun *out, GError **error)
{
    for (guint i = 0; i < G_N_ELEMENTS(job_run_names); i++) {
        if (g_str_equal(name, job_run_names[i])) {
            *out = (SimparJobRun) i;
            return TRUE;
        }
    }
    g_set_error(error, SIMPAR_JOB_ERROR, SIMPAR_JOB_ERROR_USAGE,
                "--run %s: valid are layer (one tensor-parallel layer, forward and backward) and "
                "step (the whole training step)",
                name);
    return FALSE;
}

const char *
simpar_job_run_name(SimparJobRun run)
{
    g_return_val_if_fail(run < G_N_ELEMENTS(job_run_names), "?");
    return job_run_names[run];
}

/* --cp-mode's names, by the plan's cp_ring */
static const char *const job_cp_modes[] = {"allgather", "ring"};

gboolean
simpar_job_cp_mode_parse(const char *name, gboolean *ring, GError **error)
{
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    for (guint i = 0; i < G_N_ELEMENTS(job_cp_modes); i++)
        if (g_strcmp0(name, job_cp_modes[i]) == 0) {
            *ring = i == 1;
            return TRUE;
        }
    g_set_error(error, SIMPAR_JOB_ERROR, SIMPAR_JOB_ERROR_USAGE,
                "--cp-mode %s: valid are %s and %s", name, job_cp_modes[0], job_cp_modes[1]);
    return FALSE;
}

const char *
simpar_job_cp_mode_name(gboolean ring)
{
    return job_cp_modes[ring ? 1 : 0]; /* (transfer none) */
}

gboolean
simpar_job_check(const SimparJobArgs *args, SimparJobRun run, const char *fallback,
                 SimparModel *model, SimparTrain *train, GError **error)
{
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    const SimparGenerator *gen = NULL;
    if (!simpar_job_model(args, fallback, model, error) || !simpar_job_train(args, train, error) ||
        (gen = simpar_job_generator(args, error)) == NULL ||
        !simpar_job_plan(args, model, gen, &train->tp, error))
        return FALSE;
    if (train->tp.tp == SIMPAR_JOB_UNSET)
        train->tp.tp = 1;
    if (run == SIMPAR_JOB_RUN_LAYER && (train->pp != 1 || train->dp != 1)) {
        g_set_error(error, SIMPAR_JOB_ERROR, SIMPAR_JOB_ERROR_USAGE,
                    "--run layer runs one tensor-parallel group: --pp and --dp apply to --run "
                    "step");
        return FALSE;
    }
    if (train->tp.tp < 1 || train->tp.tp > 1 << 20 || train->pp < 1 || train->pp > 1 << 20 ||
        train->dp < 1 || train->dp > 1 << 20) {
        g_set_error(error, SIMPAR_JOB_ERROR, SIMPAR_JOB_ERROR_USAGE,
                    "--tp %" G_GINT64_FORMAT ", --pp %" G_GINT64_FORMAT ", --dp %" G_GINT64_FORMAT
                    ": each must be between 1 and 1048576",
                    train->tp.tp, train->pp, train->dp);
        return FALSE;
    }
    guint64 gpus = (guint64) simpar_train_group(train) * (guint64) train->pp * (guint64) train->dp;
    return simpar_train_validate(train, model, gpus, error);
}

SimparSchedule *
simpar_job_schedule(const SimparJobArgs *args, SimparJobRun run, const char *fallback,
                    SimparModel *model, SimparTrain *train, GError **error)
{
    g_return_val_if_fail(error == NULL || *error == NULL, NULL);
    if (!simpar_job_check(args, run, fallback, model, train, error))
        return NULL;
    if (simpar_model_is_moe(model)) {
        g_set_error(error, SIMPAR_JOB_ERROR, SIMPAR_JOB_ERROR_USAGE,
                    "--model %s has %" G_GINT64_FORMAT " routed experts: runs of MoE layers are "
                    "not built yet (the MoE block alone runs on the host executor: "
                    "tests/test-moe.c)",
                    model->name, model->moe.experts);
        return NULL;
    }
    g_autoptr(SimparSchedule) layer = simpar_generate_layer(model, &train->tp, error);
    if (layer == NULL || run == SIMPAR_JOB_RUN_LAYER)
        return g_steal_pointer(&layer);                       /* (transfer full) */
    return simpar_step_build_ops(model, train, layer, error); /* (transfer full) */
}
