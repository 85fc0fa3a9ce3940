/* train.c - the training plan: validation, rank placement and model FLOPs (see train.h). */
#include "train.h"
#include "generators.h"
#include "moe.h"
#include "pipeline.h"

static const char *const train_schedule_names[SIMPAR_N_PIPE_SCHEDULES] = {"gpipe", "1f1b",
                                                                          "interleaved", "local"};
static const char *const train_axis_names[SIMPAR_N_TRAIN_AXES] = {"tp", "dp", "pp", "cp", "ep"};

/* Larger splits are refused before anything is allocated. */
#define TRAIN_MAX_SPLIT (G_GINT64_CONSTANT(1) << 20)

void
simpar_train_init(SimparTrain *train)
{
    *train = (SimparTrain){
        .pp = 1,
        .dp = 1,
        .virtual_stages = 1,
        .global_batch = 0,
        .schedule = SIMPAR_PIPE_1F1B,
        .order = {SIMPAR_AXIS_TP, SIMPAR_AXIS_CP, SIMPAR_AXIS_EP, SIMPAR_AXIS_DP, SIMPAR_AXIS_PP},
        .adam = {1e-4, 0.9, 0.95, 1e-8, 0.0},
    };
    simpar_plan_init(&train->tp);
}

/* Layers of device p. */
static guint
train_device_layers(const SimparTrain *t, guint p)
{
    guint P = (guint) t->pp, L = (guint) t->layers;
    gboolean ends = t->first_stage_layers > 0 || t->last_stage_layers > 0;
    if (ends && P > 1) {
        guint first = t->first_stage_layers > 0 ? (guint) t->first_stage_layers : 0;
        guint last = t->last_stage_layers > 0 ? (guint) t->last_stage_layers : 0;
        guint given = (first > 0) + (last > 0), rest = P - given;
        guint left = L - first - last, base = rest > 0 ? left / rest : 0;
        if (p == 0 && first > 0)
            return first;
        if (p == P - 1 && last > 0)
            return last;
        /* the middle devices, in order, the earlier ones taking the extra layers */
        guint k = p - (first > 0);
        return base + (k < left % MAX(rest, 1) ? 1 : 0);
    }
    guint base = L / P, extra = L % P, shorter = extra > 0 ? P - extra : 0;
    guint head = (shorter + 1) / 2, tail = shorter / 2; /* short devices at both ends */
    return base + (extra > 0 && p >= head && p < P - tail ? 1 : 0);
}

guint
simpar_train_stage_layers(const SimparTrain *t, guint vs)
{
    guint P = (guint) t->pp, v = (guint) t->virtual_stages, p = vs % P, c = vs / P;
    if (t->split != NULL)
        return t->split->layers[vs];
    if (t->account_embedding || t->account_loss) { /* transformer_block.py's slots */
        guint e = t->account_embedding, l = t->account_loss;
        guint slots = ((guint) t->layers + e + l) / (P * v);
        return slots - (vs == 0 ? e : 0) - (vs == P * v - 1 ? l : 0);
    }
    guint n = train_device_layers(t, p);
    return n / v + (c < n % v ? 1 : 0);
}

guint
simpar_train_stage_first_layer(const SimparTrain *t, guint vs)
{
    if (t->split != NULL)
        return t->split->first_layer[vs];
    guint first = 0;
    for (guint k = 0; k < vs; k++)
        first += simpar_train_stage_layers(t, k);
    return first;
}

gboolean
simpar_train_reduce_each_micro(const SimparTrain *t)
{
    return t->zero == 2 || (t->zero == 3 && t->pp == 1);
}

guint
simpar_train_group(const SimparTrain *t)
{
    return (guint) t->tp.tp * simpar_plan_cp(&t->tp);
}

guint
simpar_train_replicas(const SimparTrain *t)
{
    return (guint) t->dp * simpar_plan_cp(&t->tp);
}

guint
simpar_train_shard_group(const SimparTrain *t)
{
    return t->shard_group > 0 ? (guint) t->shard_group : simpar_train_replicas(t);
}

guint
simpar_train_grad_bytes(const SimparTrain *t, SimparDtype dtype)
{
    return simpar_dtype_size(t->grad_dtype_set ? t->grad_dtype : dtype);
}

guint
simpar_train_grad_buffer_bytes(const SimparTrain *t, SimparDtype dtype)
{
    if (t->grad_dtype_set)
        return simpar_dtype_size(t->grad_dtype);
    return simpar_dtype_size(dtype == SIMPAR_DTYPE_BF16 ? SIMPAR_DTYPE_FP32 : dtype);
}

guint
simpar_train_vp_group(const SimparTrain *t)
{
    return (guint) (t->vp_group > 0 ? t->vp_group : t->pp);
}

guint64
simpar_train_dropout_seed(guint64 base, guint layer, guint64 micro)
{
    return base + 1000003u * (guint64) layer + 7919u * micro;
}

gboolean
simpar_pipe_schedule_parse(const char *name, SimparPipeSchedule *out, GError **error)
{
    for (guint i = 0; i < SIMPAR_N_PIPE_SCHEDULES; i++)
        if (g_strcmp0(name, train_schedule_names[i]) == 0) {
            *out = (SimparPipeSchedule) i;
            return TRUE;
        }
    g_set_error(error, SIMPAR_PLAN_ERROR, SIMPAR_PLAN_ERROR_INVALID,
                "--schedule %s: unknown (valid: gpipe, 1f1b, interleaved; local parallelism is "
                "--local-chunks K)",
                name);
    return FALSE;
}

const char *
simpar_pipe_schedule_name(SimparPipeSchedule s)
{
    g_return_val_if_fail(s < SIMPAR_N_PIPE_SCHEDULES, "?");
    return train_schedule_names[s];
}

const char *
simpar_train_axis_name(SimparTrainAxis a)
{
    g_return_val_if_fail(a < SIMPAR_N_TRAIN_AXES, "?");
    return train_axis_names[a];
}

/* The order with the unplaced axes in: cp right after tp, ep right after cp. */
static guint
train_order_fill(const SimparTrainAxis *given, guint n, guint seen, SimparTrainAxis *out)
{
    guint k = 0;
    for (guint i = 0; i < n; i++) {
        out[k++] = given[i];
        gboolean cp_here = given[i] == SIMPAR_AXIS_TP && !(seen & 1u << SIMPAR_AXIS_CP);
        if (cp_here)
            out[k++] = SIMPAR_AXIS_CP;
        if ((cp_here || given[i] == SIMPAR_AXIS_CP) && !(seen & 1u << SIMPAR_AXIS_EP))
            out[k++] = SIMPAR_AXIS_EP;
    }
    return k;
}

gboolean
simpar_train_order_parse(const char *text, SimparTrainAxis *order, GError **error)
{
    g_auto(GStrv) parts = g_strsplit(text, ",", -1);
    guint seen = 0, n = g_strv_length(parts), k = 0;
    const guint needed = 1u << SIMPAR_AXIS_TP | 1u << SIMPAR_AXIS_DP | 1u << SIMPAR_AXIS_PP;
    SimparTrainAxis given[SIMPAR_N_TRAIN_AXES], got[SIMPAR_N_TRAIN_AXES];
    gboolean ok = n >= 3 && n <= SIMPAR_N_TRAIN_AXES;
    for (guint i = 0; ok && i < n; i++) {
        guint a = 0;
        while (a < SIMPAR_N_TRAIN_AXES && !g_str_equal(g_strstrip(parts[i]), train_axis_names[a]))
            a++;
        ok = a < SIMPAR_N_TRAIN_AXES && !(seen & 1u << a);
        if (ok)
            given[k++] = (SimparTrainAxis) a, seen |= 1u << a;
    }
    if (!ok || (seen & needed) != needed ||
        train_order_fill(given, k, seen, got) != SIMPAR_N_TRAIN_AXES) {
        g_set_error(error, SIMPAR_PLAN_ERROR, SIMPAR_PLAN_ERROR_INVALID,
                    "--order %s: give tp, dp and pp once each, and cp and ep if you place them "
                    "(else cp sits right after tp and ep right after cp), innermost first "
                    "(default tp,cp,ep,dp,pp)",
                    text);
        return FALSE;
    }
    memcpy(order, got, sizeof got);
    return TRUE;
}

char *
simpar_train_order_name(const SimparTrain *train)
{
    GString *out = g_string_new(NULL);
    for (guint i = 0; i < SIMPAR_N_TRAIN_AXES; i++) { /* cp and ep only where they are used */
        SimparTrainAxis a = train->order[i];
        if ((a != SIMPAR_AXIS_CP || simpar_plan_cp(&train->tp) > 1) &&
            (a != SIMPAR_AXIS_EP || train->ep > 1))
            g_string_append_printf(out, "%s%s", out->len ? "," : "", train_axis_names[a]);
    }
    return g_string_free(out, FALSE); /* (transfer full) */
}

static gboolean train_fail(GError **error, const char *fmt, ...) G_GNUC_PRINTF(2, 3);

static gboolean
train_fail(GError **error, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    g_autofree char *msg = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    g_set_error_literal(error, SIMPAR_PLAN_ERROR, SIMPAR_PLAN_ERROR_INVALID, msg);
    return FALSE;
}

/* Megatron-Core's accounted split (transformer_config.py, transformer_block.py): L + e + l
 * divisible by the P v chunks; the first or last chunk may hold the embedding or the loss
 * alone (Llama 3.1 405B's 126 + 2 over PP 16 x v 8). */
static gboolean
train_check_accounted(const SimparTrain *t, gint64 L, gint64 F, gint64 E, gint64 chunks,
                      GError **error)
{
    const char *both = "--account-for-embedding-in-pipeline-split and "
                       "--account-for-loss-in-pipeline-split";
    const char *flags = t->account_embedding && t->account_loss ? both
                        : t->account_embedding ? "--account-for-embedding-in-pipeline-split"
                                               : "--account-for-loss-in-pipeline-split";
    gint64 e = t->account_embedding, l = t->account_loss, total = L + e + l;
    if (F > 0 || E > 0)
        return train_fail(error,
                          "%s: not combinable with --first-stage-layers and --last-stage-layers "
                          "(Megatron-Core refuses the mix too): use one or the other",
                          flags);
    if (t->schedule == SIMPAR_PIPE_LOCAL || t->pp < 2)
        return train_fail(
            error,
            "%s: valid only with a pipeline schedule and --pp 2 or more (got %s %" G_GINT64_FORMAT
            ")",
            flags, t->schedule == SIMPAR_PIPE_LOCAL ? "--local-chunks" : "--pp", t->pp);
    if (total % chunks != 0)
        return train_fail(error,
                          "%s: --layers %" G_GINT64_FORMAT " + %" G_GINT64_FORMAT
                          " = %" G_GINT64_FORMAT " is not divisible by --pp %" G_GINT64_FORMAT
                          " x --virtual-stages %" G_GINT64_FORMAT " = %" G_GINT64_FORMAT
                          " chunks (Megatron-Core asserts it): choose a split that divides it",
                          flags, L, e + l, total, t->pp, t->virtual_stages, chunks);
    return TRUE;
}

/* Megatron-Core's layout (pipeline_parallel_layer_layout.py's validate_layer_layout and the
 * stage count against PP x VP), alone: it replaces the other split flags. */
static gboolean
train_check_layout(SimparTrain *t, const SimparModel *model, gint64 chunks, GError **error)
{
    const char *flag = "--pipeline-model-parallel-layout";
    const SimparLayout *lay = simpar_layout_parse(t->layout, error);
    if (lay == NULL)
        return FALSE;
    if (t->first_stage_layers > 0 || t->last_stage_layers > 0 || t->account_embedding ||
        t->account_loss)
        return train_fail(error,
                          "%s: not combinable with --first-stage-layers, --last-stage-layers, "
                          "--account-for-embedding-in-pipeline-split or "
                          "--account-for-loss-in-pipeline-split (the layout gives every stage's "
                          "layers): use one or the other",
                          flag);
    if (t->schedule == SIMPAR_PIPE_LOCAL)
        return train_fail(error,
                          "%s: valid only with a pipeline schedule, not with "
                          "--local-chunks",
                          flag);
    g_autofree char *v = lay->chunks % (guint) t->pp == 0
                             ? g_strdup_printf("%u", lay->chunks / (guint) t->pp)
                             : g_strdup("that divides it by --pp");
    if ((gint64) lay->chunks != chunks)
        return train_fail(error,
                          "%s \"%s\": %u virtual stages ('|'-separated), but --pp %" G_GINT64_FORMAT
                          " x --virtual-stages %" G_GINT64_FORMAT " = %" G_GINT64_FORMAT
                          " chunks (valid: a layout of that many stages, or --virtual-stages %s)",
                          flag, t->layout, lay->chunks, t->pp, t->virtual_stages, chunks, v);
    if ((gint64) lay->total != model->layers)
        return train_fail(error,
                          "%s \"%s\": %u decoder layers (t), but --layers %" G_GINT64_FORMAT
                          " (valid: a layout with that many t)",
                          flag, t->layout, lay->total, model->layers);
    if ((gint64) lay->mtp != model->mtp_layers)
        return train_fail(
            error,
            "%s \"%s\": %u MTP layers (m), but the model has --mtp-layers %" G_GINT64_FORMAT
            " (valid: as many m as MTP layers, as Megatron-Core requires)",
            flag, t->layout, lay->mtp, model->mtp_layers);
    t->split = lay;
    return TRUE;
}

/* The layer split: every chunk at least one layer; local parallelism's chunks equal. */
static gboolean
train_check_layers(SimparTrain *t, const SimparModel *model, gint64 chunks, const char *pp_flag,
                   GError **error)
{
    gint64 L = model->layers, F = t->first_stage_layers, E = t->last_stage_layers;
    gint64 v = t->virtual_stages, given = (F > 0) + (E > 0);
    if (t->layout != NULL)
        return train_check_layout(t, model, chunks, error);
    if (t->account_embedding || t->account_loss) /* its chunks may hold no decoder layer */
        return train_check_accounted(t, L, F, E, chunks, error);
    if (t->schedule == SIMPAR_PIPE_LOCAL && (L % chunks != 0 || given > 0))
        return train_fail(error,
                          "--layers %" G_GINT64_FORMAT " cannot be split into %s %" G_GINT64_FORMAT
                          " equal chunks (local parallelism's chunks are equal): use a layer "
                          "count divisible by it",
                          L, pp_flag, chunks);
    if (F < 0 || E < 0 || (given > 0 && t->pp < 2))
        return train_fail(error, "--first-stage-layers and --last-stage-layers need --pp 2 or "
                                 "more and a positive count");
    gint64 middle = (t->pp - given) * v; /* chunks of the other devices: one layer each */
    if (given > 0 && ((F > 0 && F < v) || (E > 0 && E < v) || F + E + middle > L ||
                      (given == t->pp && F + E != L)))
        return train_fail(error,
                          "--first-stage-layers %" G_GINT64_FORMAT
                          " and --last-stage-layers %" G_GINT64_FORMAT
                          " leave no valid split of --layers %" G_GINT64_FORMAT
                          ": each of the %" G_GINT64_FORMAT " x %" G_GINT64_FORMAT
                          " chunks needs a layer (the two stages at least --virtual-stages each, "
                          "the other stages at least %" G_GINT64_FORMAT " between them)",
                          F, E, L, t->pp, v, middle);
    if (L < chunks)
        return train_fail(error,
                          "--layers %" G_GINT64_FORMAT " cannot be split into %s %" G_GINT64_FORMAT
                          " x --virtual-stages %" G_GINT64_FORMAT
                          " chunks: every chunk needs a layer (use at most %" G_GINT64_FORMAT
                          " chunks)",
                          L, pp_flag, t->pp, v, L);
    return TRUE;
}

/* Rank strides of the axes of sizes `size`, in the split's order (the first varies fastest). */
static void
train_strides_of(const SimparTrain *t, const gint64 *size, gint64 *stride)
{
    gint64 at = 1;
    for (guint i = 0; i < SIMPAR_N_TRAIN_AXES; i++) {
        stride[t->order[i]] = at;
        at *= size[t->order[i]];
    }
}

/* The layers' strides, and the experts' (Megatron-Core's expert rank generator: the same order
 * with tp of size ETP, ep of size EP, dp of size expert-DP, cp of size 1). */
static void
train_strides(SimparTrain *t)
{
    const gint64 size[SIMPAR_N_TRAIN_AXES] = {t->tp.tp, t->dp, t->pp, simpar_plan_cp(&t->tp), 1};
    const gint64 expert[SIMPAR_N_TRAIN_AXES] = {MAX(t->etp, 1), simpar_train_expert_replicas(t),
                                                t->pp, 1, MAX(t->ep, 1)};
    train_strides_of(t, size, t->stride);
    train_strides_of(t, expert, t->expert_stride);
}

guint
simpar_train_expert_replicas(const SimparTrain *t)
{
    guint64 ranks = (guint64) t->tp.tp * simpar_plan_cp(&t->tp) * (guint64) t->dp;
    return (guint) (ranks / (guint64) (MAX(t->ep, 1) * MAX(t->etp, 1)));
}

guint
simpar_train_expert_rank(const SimparTrain *t, guint etp, guint ep, guint edp, guint p)
{
    const gint64 *s = t->expert_stride;
    return (guint) (etp * s[SIMPAR_AXIS_TP] + ep * s[SIMPAR_AXIS_EP] + edp * s[SIMPAR_AXIS_DP] +
                    p * s[SIMPAR_AXIS_PP]);
}

/* Megatron-Core asserts that the experts' pipeline groups are the layers' (parallel_state.py):
 * every rank sits on the same stage in both numberings. */
static gboolean
train_check_expert_stages(const SimparTrain *t, GError **error)
{
    guint64 n = (guint64) t->tp.tp * simpar_plan_cp(&t->tp) * (guint64) (t->dp * t->pp);
    for (guint64 r = 0; r < n; r++)
        if ((r / (guint64) t->stride[SIMPAR_AXIS_PP]) % (guint64) t->pp !=
            (r / (guint64) t->expert_stride[SIMPAR_AXIS_PP]) % (guint64) t->pp) {
            g_autofree char *order = simpar_train_order_name(t);
            return train_fail(error,
                              "--order %s: with --ep %" G_GINT64_FORMAT " x --etp %" G_GINT64_FORMAT
                              " GPU %" G_GUINT64_FORMAT " would hold another stage's experts "
                              "than its layers (the experts number the stage's GPUs ETP x EP x "
                              "expert-DP, the layers TP x CP x DP; valid: pp outermost, or the "
                              "axes inside pp of the same size in both)",
                              order, MAX(t->ep, 1), MAX(t->etp, 1), r);
        }
    return TRUE;
}

gboolean
simpar_train_validate_batches(const SimparTrain *t, const SimparModel *model, GError **error)
{
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    if (t->pp < 1 || t->pp > TRAIN_MAX_SPLIT || t->dp < 1 || t->dp > TRAIN_MAX_SPLIT ||
        t->virtual_stages < 1 || t->virtual_stages > 1024)
        return TRUE; /* simpar_train_validate names the flag */
    gint64 per_step = model->micro_batch * t->dp;
    gint64 batch = t->global_batch != 0 ? t->global_batch : per_step;
    if (batch < 1 || batch > SIMPAR_MODEL_MAX_DIM || batch % per_step != 0)
        return train_fail(error,
                          "--global-batch %" G_GINT64_FORMAT
                          ": must be a positive multiple of --micro-batch %" G_GINT64_FORMAT
                          " x --dp %" G_GINT64_FORMAT " = %" G_GINT64_FORMAT,
                          batch, model->micro_batch, t->dp, per_step);
    gint64 m = batch / per_step;
    if (m > SIMPAR_TRAIN_MAX_MICRO_BATCHES)
        return train_fail(error,
                          "--global-batch %" G_GINT64_FORMAT " / (--micro-batch %" G_GINT64_FORMAT
                          " x --dp %" G_GINT64_FORMAT ") = %" G_GINT64_FORMAT
                          " micro-batches per replica: at most %d are simulated (a larger "
                          "--micro-batch or --dp, or a smaller --global-batch)",
                          batch, model->micro_batch, t->dp, m, SIMPAR_TRAIN_MAX_MICRO_BATCHES);
    if (t->vp_group != 0 && t->schedule != SIMPAR_PIPE_INTERLEAVED)
        return train_fail(error,
                          "--vp-group applies to --schedule interleaved only (valid: leave it out, "
                          "or --schedule interleaved)");
    if (t->vp_group < 0 || t->vp_group > TRAIN_MAX_SPLIT)
        return train_fail(
            error, "--vp-group %" G_GINT64_FORMAT ": must be between 1 and %" G_GINT64_FORMAT,
            t->vp_group, TRAIN_MAX_SPLIT);
    if (!simpar_pipeline_validate_grouped(t->schedule, (guint) t->pp, (guint) t->virtual_stages,
                                          (guint) m, simpar_train_vp_group(t), error))
        return FALSE;
    return TRUE;
}

/* Expert parallelism as Megatron-Core folds it: the T x C x D ranks of a stage are also ETP x
 * EP x expert-DP ranks, and each of the EP ranks holds E / EP whole experts. */
static gboolean
train_check_experts(const SimparTrain *t, const SimparModel *model, GError **error)
{
    gint64 ep = MAX(t->ep, 1), etp = MAX(t->etp, 1);
    gint64 ranks = t->tp.tp * simpar_plan_cp(&t->tp) * t->dp;
    if (t->moe_dispatcher == SIMPAR_MOE_DEEPEP && (!simpar_model_is_moe(model) || ep < 2))
        return train_fail(error, "--moe-dispatcher deepep: DeepEP moves tokens between the GPUs "
                                 "of an expert-parallel group, and there is none (valid: a "
                                 "model with experts and --ep 2 or more, or --moe-dispatcher "
                                 "alltoall)");
    /* transformer_config.py: moe_shared_expert_overlap "only works with alltoall or flex token
     * dispatcher" */
    if (t->moe_dispatcher == SIMPAR_MOE_ALLGATHER && simpar_model_is_moe(model) &&
        model->moe.shared_overlap)
        return train_fail(error, "--moe-shared-expert-overlap with --moe-dispatcher allgather: "
                                 "Megatron-Core overlaps the shared experts with the all-to-all "
                                 "and flex dispatchers only (valid: leave out "
                                 "--moe-shared-expert-overlap, or --moe-dispatcher alltoall)");
    if (!simpar_model_is_moe(model)) {
        if (ep > 1 || etp > 1)
            return train_fail(error,
                              "--ep %" G_GINT64_FORMAT " --etp %" G_GINT64_FORMAT
                              ": expert parallelism needs a model with experts (--experts, or "
                              "an MoE preset such as mixtral-8x7b)",
                              ep, etp);
        return TRUE;
    }
    if (model->moe.experts % ep != 0)
        return train_fail(error,
                          "--experts %" G_GINT64_FORMAT
                          " is not divisible by --ep %" G_GINT64_FORMAT
                          ": every GPU of the expert-parallel group holds E/EP whole experts "
                          "(valid: a divisor of %" G_GINT64_FORMAT ")",
                          model->moe.experts, ep, model->moe.experts);
    if (ranks % (ep * etp) != 0)
        return train_fail(
            error,
            "--ep %" G_GINT64_FORMAT " x --etp %" G_GINT64_FORMAT " = %" G_GINT64_FORMAT
            " does not divide --tp x --cp x --dp = %" G_GINT64_FORMAT
            ": the experts' ETP x EP x expert-DP ranks are the same GPUs as the "
            "attention's TP x CP x DP (valid: EP x ETP a divisor of %" G_GINT64_FORMAT ")",
            ep, etp, ep * etp, ranks, ranks);
    if (model->moe.moe_ffn % etp != 0)
        return train_fail(error,
                          "--etp %" G_GINT64_FORMAT " does not divide --moe-ffn %" G_GINT64_FORMAT
                          ": each expert's FFN splits into ETP equal column slices (valid: a "
                          "divisor of %" G_GINT64_FORMAT ")",
                          etp, model->moe.moe_ffn, model->moe.moe_ffn);
    /* 2-D, 2.5-D and 3-D hand the MoE block each GPU's B/T own tokens by an all-to-all over
     * the ranks sharing a block of rows (tp-moe.c): the rows split evenly over them */
    const SimparGenerator *gen = t->tp.gen;
    gint64 rows = model->micro_batch * model->seq / simpar_plan_cp(&t->tp);
    if (t->tp.tp > 1 && simpar_generator_has(gen, SIMPAR_GEN_GRID) && rows % t->tp.tp != 0)
        return train_fail(error,
                          "--tp %" G_GINT64_FORMAT " with a mixture of experts in --tp-mode %s: "
                          "the MoE block takes each GPU's own --micro-batch x --seq%s / TP "
                          "tokens, but %" G_GINT64_FORMAT " is not a multiple of %" G_GINT64_FORMAT
                          " (valid: --micro-batch and --seq making it one)",
                          t->tp.tp, gen->name, simpar_plan_cp(&t->tp) > 1 ? " / --cp" : "", rows,
                          t->tp.tp);
    if (t->tp.tp > 1 && !t->tp.sequence_parallel && simpar_generator_has(gen, SIMPAR_GEN_LINE))
        return train_fail(error,
                          "--ep %" G_GINT64_FORMAT " with --tp %" G_GINT64_FORMAT
                          " needs --sp: the experts take each GPU's own tokens, as Megatron-LM "
                          "requires sequence parallelism with tensor and expert parallelism",
                          ep, t->tp.tp);
    return TRUE;
}

/* --overlap-moe-expert-parallel-comm: what Megatron-Core refuses with it
 * (megatron/core/transformer/transformer_config.py, __post_init__: PP > 1 only with a virtual
 * pipeline, EP > 1, the alltoall or flex dispatcher, no full recomputation and no moe among the
 * recomputed modules, bf16 or fp16, not with moe_shared_expert_overlap), and what simpar does not
 * model with it (local parallelism, ZeRO 2 and 3's per-micro-batch and per-layer collectives). */
static gboolean
train_check_ep_overlap(const SimparTrain *t, const SimparModel *model, GError **error)
{
    const char *flag = "--overlap-moe-expert-parallel-comm";
    if (!t->ep_overlap)
        return TRUE;
    if (!simpar_model_is_moe(model) || MAX(t->ep, 1) < 2)
        return train_fail(error,
                          "%s hides the expert-parallel all-to-alls, and there are none (valid: "
                          "a model with experts and --ep 2 or more, as Megatron-Core requires)",
                          flag);
    /* transformer_config.py: "overlap_moe_expert_parallel_comm is supported with alltoall/flex
     * token dispatcher" */
    if (t->moe_dispatcher == SIMPAR_MOE_ALLGATHER)
        return train_fail(error,
                          "%s with --moe-dispatcher allgather: Megatron-Core merges the layers "
                          "around the all-to-all and flex dispatchers only (valid: "
                          "--moe-dispatcher alltoall or deepep, or leave out %s)",
                          flag, flag);
    if (t->schedule == SIMPAR_PIPE_LOCAL || t->schedule == SIMPAR_PIPE_GPIPE ||
        (t->pp > 1 && t->schedule != SIMPAR_PIPE_INTERLEAVED))
        return train_fail(error,
                          "%s with --pp %" G_GINT64_FORMAT " and --schedule %s: Megatron-Core "
                          "merges a forward with a backward in its interleaved schedule only "
                          "(with --pp above 1 it requires a virtual pipeline) or without "
                          "pipelining (valid: --pp 1, or --schedule interleaved with "
                          "--virtual-stages)",
                          flag, t->pp, simpar_pipe_schedule_name(t->schedule));
    if (t->tp.recompute == SIMPAR_RECOMPUTE_FULL)
        return train_fail(error,
                          "%s with --recompute full: Megatron-Core refuses full recomputation "
                          "with it (valid: --recompute none or selective)",
                          flag);
    if (model->mtp_layers > 1)
        return train_fail(error,
                          "%s with --mtp-layers %" G_GINT64_FORMAT
                          ": Megatron-Core supports at most one multi-token prediction module "
                          "with it (transformer_config.py; valid: --mtp-layers 0 or 1)",
                          flag, model->mtp_layers);
    if (model->dtype != SIMPAR_DTYPE_BF16 && model->dtype != SIMPAR_DTYPE_FP16)
        return train_fail(error,
                          "%s with --dtype %s: Megatron-Core runs it with bf16 or fp16 models "
                          "only (valid: --dtype bf16, fp16 or fp8)",
                          flag, simpar_dtype_name(model->dtype));
    if (model->moe.shared_overlap)
        return train_fail(error,
                          "%s with --moe-shared-expert-overlap: Megatron-Core refuses the two "
                          "together (valid: one of them)",
                          flag);
    if (t->tp.recompute == SIMPAR_RECOMPUTE_SELECTIVE &&
        (t->tp.recompute_modules & SIMPAR_RECOMPUTE_MOE)) {
        g_autofree char *names = simpar_recompute_modules_name(t->tp.recompute_modules);
        return train_fail(error,
                          "%s with --recompute-modules %s: Megatron-Core refuses moe with it "
                          "(valid: the others: core_attn, moe_act, layernorm, mla_up_proj, mlp, "
                          "shared_experts)",
                          flag, names);
    }
    if (t->zero >= 2)
        return train_fail(error,
                          "%s with --zero %d: ZeRO 2's per-micro-batch and ZeRO 3's per-layer "
                          "collectives are not modelled inside a merged forward and backward "
                          "(valid: --zero 0 or 1)",
                          flag, t->zero);
    return TRUE;
}

gboolean
simpar_train_validate(SimparTrain *t, const SimparModel *model, guint64 gpus, GError **error)
{
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    t->split = NULL;
    gboolean local = t->schedule == SIMPAR_PIPE_LOCAL;
    const char *pp_flag = local ? "--local-chunks" : "--pp";
    if (t->pp < 1 || t->pp > TRAIN_MAX_SPLIT)
        return train_fail(error, "%s %" G_GINT64_FORMAT ": must be between 1 and %" G_GINT64_FORMAT,
                          pp_flag, t->pp, TRAIN_MAX_SPLIT);
    if (t->dp < 1 || t->dp > TRAIN_MAX_SPLIT)
        return train_fail(error,
                          "--dp %" G_GINT64_FORMAT ": must be between 1 and %" G_GINT64_FORMAT,
                          t->dp, TRAIN_MAX_SPLIT);
    if (t->tp.tp < 1 || t->tp.tp > TRAIN_MAX_SPLIT)
        return train_fail(error,
                          "--tp %" G_GINT64_FORMAT ": must be between 1 and %" G_GINT64_FORMAT,
                          t->tp.tp, TRAIN_MAX_SPLIT);
    gint64 C = simpar_plan_cp(&t->tp);
    if ((guint64) (t->tp.tp * C * t->pp * t->dp) != gpus) {
        g_autofree char *cp =
            C > 1 ? g_strdup_printf(" x --cp %" G_GINT64_FORMAT, C) : g_strdup("");
        return train_fail(error,
                          "--tp %" G_GINT64_FORMAT "%s x %s %" G_GINT64_FORMAT
                          " x --dp %" G_GINT64_FORMAT " = %" G_GINT64_FORMAT
                          " GPUs, but %" G_GUINT64_FORMAT
                          " are used (--gpus or the platform): the product must equal them",
                          t->tp.tp, cp, pp_flag, t->pp, t->dp, t->tp.tp * C * t->pp * t->dp, gpus);
    }
    if (!train_check_experts(t, model, error) || !train_check_ep_overlap(t, model, error))
        return FALSE;
    t->tp.ep = simpar_model_is_moe(model) ? MAX(t->ep, 1) : 0;
    t->tp.etp = simpar_model_is_moe(model) ? MAX(t->etp, 1) : 0;
    t->tp.moe_gather = simpar_model_is_moe(model) && t->moe_dispatcher == SIMPAR_MOE_ALLGATHER;
    if (t->virtual_stages < 1 || t->virtual_stages > 1024)
        return train_fail(error,
                          "--virtual-stages %" G_GINT64_FORMAT ": must be between 1 and 1024",
                          t->virtual_stages);
    gint64 chunks = t->pp * t->virtual_stages;
    if (!train_check_layers(t, model, chunks, pp_flag, error))
        return FALSE;
    gint64 per_step = model->micro_batch * t->dp;
    if (t->global_batch == 0)
        t->global_batch = per_step;
    if (!simpar_train_validate_batches(t, model, error))
        return FALSE;
    t->micro_batches = t->global_batch / per_step;
    if (t->zero < 0 || t->zero > 3)
        return train_fail(error, "--zero %d: valid stages are 0 (DDP), 1, 2 and 3", t->zero);
    if (t->zero == 2 && t->pp > 1)
        return train_fail(error,
                          "--zero 2 with %s %" G_GINT64_FORMAT
                          ": ZeRO stage 2 partitions gradients per micro-batch and does not "
                          "combine with pipelining (DeepSpeed refuses it); use --zero 1, or 3 "
                          "(FSDP with pipelining)",
                          pp_flag, t->pp);
    if (t->shard_group != 0 && t->zero < 1)
        return train_fail(error, "--shard-group applies to --zero 1, 2 or 3 (hybrid sharding: "
                                 "the ZeRO shards span groups of N replicas, replicated across "
                                 "them)");
    if (t->shard_group < 0 ||
        (t->shard_group > 0 && simpar_train_replicas(t) % t->shard_group != 0))
        return train_fail(error,
                          "--shard-group %" G_GINT64_FORMAT ": must divide --dp %" G_GINT64_FORMAT
                          "%s (valid: a divisor of the %u ranks that hold the same parameters)",
                          t->shard_group, t->dp, C > 1 ? " x --cp" : "", simpar_train_replicas(t));
    if (t->grad_dtype_set && t->grad_dtype != model->dtype &&
        !(t->grad_dtype == SIMPAR_DTYPE_FP32 && simpar_dtype_size(model->dtype) == 2))
        return train_fail(error,
                          "--grad-reduce-dtype %s with --dtype %s: valid are %s and, for 16-bit "
                          "training, fp32",
                          simpar_dtype_name(t->grad_dtype), simpar_dtype_name(model->dtype),
                          simpar_dtype_name(model->dtype));
    if (t->fp8_param_gather && (model->fp8 == SIMPAR_FP8_NONE || t->zero < 1))
        return train_fail(error, "--fp8-param-gather needs --dtype fp8 and --zero 1, 2 or 3 (the "
                                 "linears' parameters are all-gathered in FP8 by the distributed "
                                 "optimizer or FSDP)");
    if (t->overlap_param_gather && t->zero != 1 && t->zero != 2)
        return train_fail(error,
                          "--overlap-param-gather with --zero %d: valid with --zero 1 or 2 (ZeRO 0 "
                          "gathers no parameters; ZeRO 3 gathers each layer's before its use)",
                          t->zero);
    if (t->no_reshard && t->zero != 3)
        return train_fail(error, "--no-reshard applies to --zero 3 (it keeps the parameters the "
                                 "forward gathered for the backward)");
    if (t->local_async && !local)
        return train_fail(error, "--local-async applies to local parallelism (--local-chunks K)");
    if (t->aux_head_width == 0)
        t->aux_head_width = model->vocab;
    if (t->aux_head_width < 1 || t->aux_head_width > SIMPAR_MODEL_MAX_DIM)
        return train_fail(
            error, "--aux-head-width %" G_GINT64_FORMAT ": must be between 1 and %" G_GINT64_FORMAT,
            t->aux_head_width, SIMPAR_MODEL_MAX_DIM);
    if (t->bucket_params < 0 || t->bucket_params > G_GINT64_CONSTANT(1) << 40)
        return train_fail(error, "--bucket-params %" G_GINT64_FORMAT ": must be positive",
                          t->bucket_params);
    if (t->bucket_params == 0)
        t->bucket_params = MAX(G_GINT64_CONSTANT(40000000), G_GINT64_CONSTANT(1000000) * t->dp);
    if (t->scatter_gather && C > 1)
        return train_fail(error, "--scatter-gather does not combine with --cp: each "
                                 "context-parallel rank sends its own share of the sequence");
    if (t->schedule == SIMPAR_PIPE_LOCAL && C > 1)
        return train_fail(error, "--cp does not combine with local parallelism (--local-chunks)");
    if (t->scatter_gather && t->tp.tp > 1 && !simpar_plan_whole_rows(&t->tp))
        return train_fail(error, "--scatter-gather applies to 1-D tensor parallelism without --sp, "
                                 "where every tensor-parallel rank holds the whole activation; "
                                 "here each rank already sends only its own block");
    if (t->tied_embeddings && local)
        return train_fail(error, "tied embeddings do not combine with local parallelism: each "
                                 "chunk's head would need the embedding's gradient every step");
    if (model->mtp_layers > 0 && local)
        return train_fail(error,
                          "--mtp-layers %" G_GINT64_FORMAT
                          " does not combine with local parallelism (--local-chunks): the "
                          "multi-token prediction modules follow the whole model's last layer "
                          "and loss (valid: --mtp-layers 0, or a pipeline schedule)",
                          model->mtp_layers);
    t->layers = model->layers;
    t->layers_per_chunk = model->layers % chunks == 0 && t->first_stage_layers == 0 &&
                                  t->last_stage_layers == 0 && !t->account_embedding &&
                                  !t->account_loss
                              ? model->layers / chunks
                              : 0;
    for (guint vs = 0; t->split != NULL && vs < (guint) chunks; vs++) /* a layout: as even? */
        if (t->split->layers[vs] != (guint) t->layers_per_chunk)
            t->layers_per_chunk = 0;
    train_strides(t);
    return !simpar_model_is_moe(model) || train_check_expert_stages(t, error);
}

void
simpar_train_tp_slice(const SimparTrain *train, SimparTrain *slice)
{
    *slice = *train;
    slice->tp.tp = 1;
    train_strides(slice);
}

guint
simpar_train_rank(const SimparTrain *train, guint t, guint d, guint p)
{
    guint T = (guint) train->tp.tp;
    return (guint) ((t % T) * train->stride[SIMPAR_AXIS_TP] +
                    (t / T) * train->stride[SIMPAR_AXIS_CP] + d * train->stride[SIMPAR_AXIS_DP] +
                    p * train->stride[SIMPAR_AXIS_PP]);
}

double
simpar_train_model_flops(const SimparModel *m, const SimparTrain *train)
{
    double h = (double) m->hidden, s = (double) m->seq, dense = simpar_model_layer_weights(m);
    double weights = dense;
    if (simpar_model_is_moe(m)) /* the MLP a token passes: its experts, the shared ones */
        weights +=
            simpar_moe_active_params(m) - ((double) simpar_model_fc1_cols(m) + (double) m->ffn) * h;
    /* an MoE model's dense layers (--dense-layers, --moe-every) pass the dense MLP */
    double moe = (double) simpar_model_moe_layers(m, 0, m->layers);
    double others = simpar_model_is_moe(m) ? (double) m->layers - moe : (double) m->layers;
    /* attention's QK^T and PV: 2 s a (qk + v) a token forward, 12 s h with h/a heads */
    double a = (double) m->heads;
    double attn =
        simpar_model_is_mla(m) || m->head_dim != 0
            ? 6 * s * a * (double) (simpar_model_qk_head_dim(m) + simpar_model_v_head_dim(m))
            : 12 * s * h;
    double per_token = simpar_model_is_moe(m)
                           ? moe * (6 * weights + attn) + others * (6 * dense + attn)
                           : others * (6 * weights + attn);
    per_token += 6 * h * (double) m->vocab;
    /* multi-token prediction (model.h), as Megatron-LM's num_floating_point_operations counts
     * it (megatron/training/training.py): each module a layer of the last layer's kind, its
     * norms and eh_proj (3h + 2h^2 a token) and one more output layer */
    double D = (double) m->mtp_layers;
    gboolean mtp_moe = simpar_model_layer_is_moe(m, m->layers - 1);
    per_token += D * (mtp_moe && simpar_model_is_moe(m) ? 6 * weights + attn : 6 * dense + attn) +
                 D * 6 * (3 * h + 2 * h * h + h * (double) m->vocab);
    return per_token * (double) train->global_batch * s;
}
