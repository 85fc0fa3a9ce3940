/* test-train-host.c - whole training steps on the host executor against the serial reference.
 *
 * simpar_step_build_ops spells out one optimizer step (pipeline, data parallelism, tensor-
 * parallel layers, embedding, loss, gradient accumulation, Adam); the host executor runs it
 * on one thread per GPU; reference-step.c computes the same step serially in double precision.
 * Every parameter, gradient and the loss are filled and read through the schedule's shards and
 * compared element by element: the updated weights, the gradients summed over the global
 * batch and the loss must agree to 1e-9 (relative), and every element of every parameter must
 * be produced by some rank. Cases: the issue's 2 stages x 2 replicas x 2-way 1-D tensor
 * parallelism of a 2-layer model, then each pipeline schedule, sequence parallelism, dropout and
 * each recomputation mode; and the refusals of the mode.
 *
 * Usage: test-train-host [SEED]   (the seed of the random parameters and tokens)
 */
#include "generators.h"
#include "host.h"
#include "reference-step.h"
#include "simpar-test.h"
#include "step.h"
#include <CUnit/Basic.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static guint64 train_host_seed = 20261121;

/* TrainCase.llama: Llama layers with multi-head latent attention of these sizes. */
#define TH_MLA 2
static const SimparMlaConfig th_mla = {6, 4, 3, 2, 5};

enum {
    TH_H = 8,
    TH_A = 4,
    TH_S = 4,
    TH_F = 16,
    TH_V = 16
};

typedef struct {
    const char *mode;
    gint64 tp, depth, pp, dp, v, m, b, layers;
    SimparPipeSchedule schedule;
    gboolean sp, causal;
    double p; /* dropout */
    SimparRecompute recompute;
    gboolean scatter_gather;
    gint llama;         /* TRUE: 4 heads on 2 key/value heads, SwiGLU, RMSNorm; TH_MLA: SwiGLU,
                           RMSNorm and multi-head latent attention (th_mla) */
    gint zero;          /* ZeRO-1: only the updated weights are compared */
    gint64 shard;       /* --shard-group (0: D) */
    gint accounted;     /* 1: the embedding, 2: the loss, 3: both counted in the pipeline split */
    const char *layout; /* --pipeline-model-parallel-layout, or NULL */
} TrainCase;

typedef struct {
    RefStepParams *params;
    guint64 *tokens, *targets;
    guint replicas;
} TrainRef;

/* The reference parameter a shard belongs to; *grad: the shard is its gradient ("<name>.grad"). */
static RefParam *
train_host_param(TrainRef *ref, const char *tensor, gboolean *grad)
{
    *grad = g_str_has_suffix(tensor, ".grad");
    g_autofree char *name = *grad ? g_strndup(tensor, strlen(tensor) - 5) : g_strdup(tensor);
    for (guint i = 0; i < ref->params->n; i++)
        if (g_str_equal(ref->params->params[i].name, name))
            return &ref->params->params[i];
    g_error("shard of unknown tensor '%s'", tensor);
}

/* Inputs: parameters and ids through the input shards. */
static void
train_host_scatter(const SimparSchedule *sched, SimparHost *host, TrainRef *ref)
{
    guint n;
    const SimparShard *sh = simpar_schedule_shards(sched, &n);
    for (guint i = 0; i < n; i++) {
        if (sh[i].role != SIMPAR_SHARD_INPUT)
            continue;
        double *dst = simpar_host_buffer(host, sh[i].view.buf) + sh[i].view.off;
        gboolean ids = g_str_equal(sh[i].tensor, "tokens") || g_str_equal(sh[i].tensor, "targets");
        if (ids) {
            const guint64 *src = g_str_equal(sh[i].tensor, "tokens") ? ref->tokens : ref->targets;
            for (guint64 r = 0; r < sh[i].rows; r++)
                dst[r] = (double) src[sh[i].row0 + r];
            continue;
        }
        gboolean grad;
        const RefParam *p = train_host_param(ref, sh[i].tensor, &grad);
        for (guint64 r = 0; r < sh[i].rows; r++)
            for (guint64 c = 0; c < sh[i].cols; c++)
                dst[r * sh[i].cols + c] = p->value[(sh[i].row0 + r) * p->cols + sh[i].col0 + c];
    }
}

/* Largest relative error of the outputs (updated parameters, gradients) against the reference,
 * each error relative to the element or to 1e-3 of its tensor's largest element; every element
 * of every reference tensor must be produced. Sums the replicas' losses into *loss. */
static double
train_host_compare(const SimparSchedule *sched, SimparHost *host, TrainRef *ref, gboolean grads,
                   double *loss)
{
    guint n;
    const SimparShard *sh = simpar_schedule_shards(sched, &n);
    double worst = 0;
    g_autofree double *losses = g_new0(double, ref->replicas);
    g_autoptr(GHashTable) covered = g_hash_table_new_full(g_str_hash, g_str_equal, NULL, g_free);
    for (guint i = 0; i < n; i++) {
        if (sh[i].role != SIMPAR_SHARD_OUTPUT)
            continue;
        const double *got = simpar_host_buffer(host, sh[i].view.buf) + sh[i].view.off;
        if (g_str_equal(sh[i].tensor, "loss")) { /* replicated over the tensor-parallel group */
            losses[sh[i].row0] = got[0];
            continue;
        }
        gboolean grad;
        const RefParam *p = train_host_param(ref, sh[i].tensor, &grad);
        const double *want = grad ? p->grad : p->value;
        guint64 cols = p->cols, total = p->rows * p->cols;
        gboolean *seen = g_hash_table_lookup(covered, sh[i].tensor);
        if (seen == NULL) {
            seen = g_new0(gboolean, total);
            g_hash_table_insert(covered, (gpointer) sh[i].tensor, seen);
        }
        double scale = 0;
        for (guint64 e = 0; e < total; e++)
            scale = MAX(scale, fabs(want[e]));
        for (guint64 r = 0; r < sh[i].rows; r++)
            for (guint64 c = 0; c < sh[i].cols; c++) {
                guint64 e = (sh[i].row0 + r) * cols + sh[i].col0 + c;
                double err = fabs(got[r * sh[i].cols + c] - want[e]);
                double rel = err / MAX(fabs(want[e]), MAX(1e-3 * scale, 1e-12));
                if (rel > 1e-9 && worst <= 1e-9)
                    printf("\n    %s[%" G_GUINT64_FORMAT "]: got %.17g, want %.17g", sh[i].tensor,
                           e, got[r * sh[i].cols + c], want[e]);
                worst = MAX(worst, rel);
                seen[e] = TRUE;
            }
    }
    *loss = 0;
    for (guint d = 0; d < ref->replicas; d++)
        *loss += losses[d];
    /* every parameter and gradient, whole */
    for (guint k = 0; k < ref->params->n; k++) {
        const RefParam *p = &ref->params->params[k];
        for (guint g = 0; g < (grads ? 2 : 1); g++) {
            g_autofree char *name = g ? g_strconcat(p->name, ".grad", NULL) : g_strdup(p->name);
            const gboolean *seen = g_hash_table_lookup(covered, name);
            guint64 missing = 0;
            for (guint64 e = 0; e < p->rows * p->cols; e++)
                missing += seen == NULL || !seen[e];
            if (missing != 0)
                printf("\n    %s: %" G_GUINT64_FORMAT " elements produced by no rank", name,
                       missing);
            CU_ASSERT_EQUAL(missing, 0);
        }
    }
    return worst;
}

static void
train_host_setup(const TrainCase *c, SimparModel *model, SimparTrain *tr)
{
    *model = (SimparModel){"test",
                           TH_H,
                           TH_A,
                           TH_S,
                           c->b,
                           c->layers,
                           TH_F,
                           TH_V,
                           SIMPAR_DTYPE_FP64,
                           c->llama == TRUE ? 2 : 0,
                           c->llama ? SIMPAR_MLP_SWIGLU : SIMPAR_MLP_GELU,
                           c->llama ? SIMPAR_NORM_RMSNORM : SIMPAR_NORM_LAYERNORM,
                           c->llama,
                           FALSE,
                           0,
                           {0},
                           {0},
                           0,
                           0};
    if (c->llama == TH_MLA)
        model->mla = th_mla;
    simpar_train_init(tr);
    tr->tp.gen = simpar_generator_of(c->mode);
    tr->tp.tp = c->tp, tr->tp.depth = c->depth;
    tr->tp.sequence_parallel = c->sp, tr->tp.recompute = c->recompute;
    tr->tp.causal = c->causal, tr->tp.p_hidden = c->p, tr->tp.p_attn = c->p;
    tr->tp.seed = train_host_seed * 31 + 7;
    tr->pp = c->pp, tr->dp = c->dp, tr->virtual_stages = c->v, tr->schedule = c->schedule;
    tr->scatter_gather = c->scatter_gather;
    tr->zero = c->zero, tr->shard_group = c->shard;
    tr->account_embedding = (c->accounted & 1) != 0, tr->account_loss = (c->accounted & 2) != 0;
    tr->layout = c->layout != NULL ? g_intern_string(c->layout) : NULL;
    tr->global_batch = c->m * c->b * c->dp;
    /* eps well above rounding: a gradient that is zero in exact arithmetic (the key bias's)
     * comes out as +-1e-17 from either side, and Adam would turn that into +-lr */
    tr->adam = (SimparAdamConfig){1e-2, 0.9, 0.95, 1e-6, 0.01};
}

static void
train_host_case(const TrainCase *c)
{
    SimparModel model;
    SimparTrain tr;
    train_host_setup(c, &model, &tr);
    g_autoptr(GError) error = NULL;
    CU_ASSERT_TRUE_FATAL(
        simpar_train_validate(&tr, &model, (guint64) (c->tp * c->pp * c->dp), &error));
    g_autoptr(SimparSchedule) layer = simpar_generate_layer(&model, &tr.tp, &error);
    if (layer == NULL)
        printf("\n    %s", error->message);
    CU_ASSERT_PTR_NOT_NULL_FATAL(layer);
    g_autoptr(SimparSchedule) sched = simpar_step_build_ops(&model, &tr, layer, &error);
    if (sched == NULL)
        printf("\n    %s", error->message);
    CU_ASSERT_PTR_NOT_NULL_FATAL(sched);
    gboolean ordered = simpar_schedule_check_hazards(sched, &error);
    if (!ordered)
        printf("\n    %s", error->message);
    CU_ASSERT_TRUE(ordered);
    g_clear_error(&error);

    RefStepConfig cfg = {
        .layer = {(guint) c->b, TH_S, TH_H, TH_A, TH_F, c->causal, tr.tp.eps, c->p, c->p,
                  tr.tp.seed},
        .vocab = TH_V,
        .layers = (guint) c->layers,
        .replicas = (guint) c->dp,
        .micro_batches = (guint) c->m,
        .lr = tr.adam.lr,
        .beta1 = tr.adam.beta1,
        .beta2 = tr.adam.beta2,
        .eps = tr.adam.eps,
        .weight_decay = tr.adam.weight_decay,
        .step = 1,
    };
    cfg.layer.kv = c->llama == TRUE ? 2 : 0, cfg.layer.swiglu = cfg.layer.rms = c->llama != FALSE;
    cfg.layer.no_bias = c->llama != FALSE;
    if (c->llama == TH_MLA) {
        cfg.layer.q_lora = (guint) th_mla.q_lora_rank,
        cfg.layer.kv_lora = (guint) th_mla.kv_lora_rank;
        cfg.layer.dn = (guint) th_mla.qk_head_dim,
        cfg.layer.dpe = (guint) th_mla.qk_pos_emb_head_dim;
        cfg.layer.dv = (guint) th_mla.v_head_dim;
    }
    g_autoptr(GRand) rng = g_rand_new_with_seed((guint32) train_host_seed);
    TrainRef ref = {ref_step_params_new(&cfg), NULL, NULL, (guint) c->dp};
    ref_step_params_fill(ref.params, rng);
    gsize ids = (gsize) (c->dp * c->m * c->b * TH_S);
    ref.tokens = g_new(guint64, ids), ref.targets = g_new(guint64, ids);
    for (gsize i = 0; i < ids; i++) {
        ref.tokens[i] = (guint64) g_rand_int_range(rng, 0, TH_V);
        ref.targets[i] = (guint64) g_rand_int_range(rng, 0, TH_V);
    }
    g_autoptr(SimparHost) host = simpar_host_new(sched);
    train_host_scatter(sched, host, &ref);
    gboolean ran = simpar_host_run(host, &error);
    if (!ran)
        printf("\n    %s", error->message);
    CU_ASSERT_TRUE_FATAL(ran);
    double want_loss = ref_step_run(&cfg, ref.params, ref.tokens, ref.targets);
    double loss;
    double worst = train_host_compare(sched, host, &ref, c->zero == 0, &loss);
    printf("\n    %s T%" G_GINT64_FORMAT " P%" G_GINT64_FORMAT " D%" G_GINT64_FORMAT
           " %s v%" G_GINT64_FORMAT " m%" G_GINT64_FORMAT "%s%s%s p=%g recompute %s: %u ops, loss "
           "%.12f (reference %.12f), worst relative error %.3g ",
           c->mode, c->tp, c->pp, c->dp, simpar_pipe_schedule_name(c->schedule), c->v, c->m,
           c->sp ? " sp" : "", c->scatter_gather ? " scatter-gather" : "",
           c->causal ? " causal" : "", c->p, simpar_recompute_name(c->recompute),
           simpar_schedule_n_ops(sched), loss, want_loss, worst);
    CU_ASSERT_DOUBLE_EQUAL(loss, want_loss, 1e-10 * fabs(want_loss));
    CU_ASSERT(worst < 1e-9);
    ref_step_params_free(ref.params);
    g_free(ref.tokens), g_free(ref.targets);
}

#define TRAIN_TEST(fn, ...)                                                                        \
    static void fn(void)                                                                           \
    {                                                                                              \
        const TrainCase c = {__VA_ARGS__, .layout = NULL};                                         \
        train_host_case(&c);                                                                       \
    }
/* The same with Megatron-Core's layout string `layout` */
#define TRAIN_LAYOUT_TEST(fn, layout_, ...)                                                        \
    static void fn(void)                                                                           \
    {                                                                                              \
        const TrainCase c = {__VA_ARGS__, .layout = layout_};                                      \
        train_host_case(&c);                                                                       \
    }

/* mode, T, depth, P, D, v, m, b, L, schedule, sp, causal, p, recompute[, scatter-gather] */
TRAIN_TEST(test_issue_case, "1d", 2, 0, 2, 2, 1, 2, 1, 2, SIMPAR_PIPE_1F1B, FALSE, TRUE, 0.0,
           SIMPAR_RECOMPUTE_NONE, FALSE, FALSE, 0, 0, 0)
TRAIN_TEST(test_scatter_gather, "1d", 2, 0, 2, 2, 1, 2, 1, 2, SIMPAR_PIPE_1F1B, FALSE, TRUE, 0.0,
           SIMPAR_RECOMPUTE_NONE, TRUE, FALSE, 0, 0, 0)
TRAIN_TEST(test_gpipe_dropout, "1d", 2, 0, 2, 2, 1, 3, 1, 2, SIMPAR_PIPE_GPIPE, FALSE, FALSE, 0.1,
           SIMPAR_RECOMPUTE_NONE, FALSE, FALSE, 0, 0, 0)
TRAIN_TEST(test_1f1b_sp_full, "1d", 2, 0, 2, 1, 1, 4, 2, 4, SIMPAR_PIPE_1F1B, TRUE, FALSE, 0.1,
           SIMPAR_RECOMPUTE_FULL, FALSE, FALSE, 0, 0, 0)
TRAIN_TEST(test_interleaved, "1d", 2, 0, 2, 1, 2, 4, 1, 4, SIMPAR_PIPE_INTERLEAVED, FALSE, FALSE,
           0.1, SIMPAR_RECOMPUTE_SELECTIVE, FALSE, FALSE, 0, 0, 0)
TRAIN_TEST(test_t4_sp_interleaved_dp, "1d", 4, 0, 2, 2, 2, 4, 1, 4, SIMPAR_PIPE_INTERLEAVED, TRUE,
           TRUE, 0.1, SIMPAR_RECOMPUTE_FULL, FALSE, FALSE, 0, 0, 0)

/* Llama layers (GQA, SwiGLU, RMSNorm), 3 layers on 2 stages (2 + 1: the uneven spread) */
TRAIN_TEST(test_llama_uneven, "1d", 2, 0, 2, 2, 1, 3, 1, 3, SIMPAR_PIPE_1F1B, TRUE, TRUE, 0.1,
           SIMPAR_RECOMPUTE_SELECTIVE, FALSE, TRUE, 0, 0, 0)

/* Llama layers with multi-head latent attention: the duplicated down projections' gradients
 * summed over the tensor-parallel group with SP, then with the data-parallel replicas */
TRAIN_TEST(test_mla_sp_dp, "1d", 2, 0, 2, 2, 1, 3, 1, 3, SIMPAR_PIPE_1F1B, TRUE, TRUE, 0.1,
           SIMPAR_RECOMPUTE_SELECTIVE, FALSE, TH_MLA, 0, 0, 0)
TRAIN_TEST(test_mla_zero1, "1d", 2, 0, 1, 2, 1, 2, 1, 2, SIMPAR_PIPE_1F1B, FALSE, TRUE, 0.0,
           SIMPAR_RECOMPUTE_NONE, FALSE, TH_MLA, 1, 0, 0)

/* ZeRO-1 (the distributed optimizer): gradients reduce-scattered, Adam on each rank's shard,
 * parameters all-gathered; over all 4 replicas, and with hybrid sharding over groups of 2 (the
 * shard all-reduced across the 2 groups). The updated weights equal the serial step. */
TRAIN_TEST(test_zero1, "1d", 2, 0, 1, 4, 1, 2, 1, 3, SIMPAR_PIPE_1F1B, FALSE, TRUE, 0.0,
           SIMPAR_RECOMPUTE_NONE, FALSE, FALSE, 1, 0, 0)
TRAIN_TEST(test_zero1_hybrid, "1d", 2, 0, 2, 4, 1, 2, 1, 3, SIMPAR_PIPE_1F1B, TRUE, TRUE, 0.1,
           SIMPAR_RECOMPUTE_NONE, FALSE, TRUE, 1, 2, 0)

/* ZeRO-3 (FSDP): each rank holds only its piece of every layer's and end's parameters (the
 * inputs fill nothing else), gathers a layer's before each use, forward and backward, every
 * micro-batch; gradients reduce-scattered per layer after the last micro-batch, Adam on each
 * piece. The updated pieces equal the serial step: over 2 replicas; interleaved with full
 * recomputation; Llama layers over 4 replicas sharded in groups of 2 (hybrid). */
TRAIN_TEST(test_zero3, "1d", 2, 0, 2, 2, 1, 2, 1, 2, SIMPAR_PIPE_1F1B, FALSE, TRUE, 0.0,
           SIMPAR_RECOMPUTE_NONE, FALSE, FALSE, 3, 0, 0)
TRAIN_TEST(test_zero3_interleaved, "1d", 2, 0, 2, 2, 2, 4, 1, 4, SIMPAR_PIPE_INTERLEAVED, FALSE,
           FALSE, 0.1, SIMPAR_RECOMPUTE_FULL, FALSE, FALSE, 3, 0, 0)
TRAIN_TEST(test_zero3_hybrid, "1d", 2, 0, 2, 4, 1, 2, 1, 3, SIMPAR_PIPE_1F1B, TRUE, TRUE, 0.1,
           SIMPAR_RECOMPUTE_SELECTIVE, FALSE, TRUE, 3, 2, 0)

/* Megatron-Core's accounted split (--account-for-embedding-in-pipeline-split and
 * --account-for-loss-in-pipeline-split): 6 layers + the embedding + the loss over 2 stages x 2
 * chunks, 1, 2, 2, 1 layers, interleaved; 5 layers + the loss over 2 stages, 3 + 2, 1F1B. The
 * step equals the serial one. */
TRAIN_TEST(test_accounted_interleaved, "1d", 2, 0, 2, 2, 2, 4, 1, 6, SIMPAR_PIPE_INTERLEAVED, TRUE,
           TRUE, 0.1, SIMPAR_RECOMPUTE_SELECTIVE, FALSE, TRUE, 0, 0, 3)
TRAIN_TEST(test_accounted_loss, "1d", 2, 0, 2, 2, 1, 3, 1, 5, SIMPAR_PIPE_1F1B, FALSE, TRUE, 0.0,
           SIMPAR_RECOMPUTE_NONE, FALSE, FALSE, 0, 0, 2)

/* Chunks that hold no decoder layer: the accounted split of 2 layers + the embedding + the loss
 * over 2 x 2 chunks (the embedding alone, 1, 1, the loss alone); Megatron-Core's layouts with the
 * embedding alone on the first stage (1F1B), both ends alone (interleaved) and empty middle
 * chunks. The step equals the serial one. */
TRAIN_TEST(test_accounted_empty_ends, "1d", 2, 0, 2, 2, 2, 4, 1, 2, SIMPAR_PIPE_INTERLEAVED, TRUE,
           TRUE, 0.1, SIMPAR_RECOMPUTE_SELECTIVE, FALSE, TRUE, 0, 0, 3)
TRAIN_LAYOUT_TEST(test_layout_embedding_alone, "E|t*3L", "1d", 2, 0, 2, 2, 1, 3, 1, 3,
                  SIMPAR_PIPE_1F1B, FALSE, TRUE, 0.1, SIMPAR_RECOMPUTE_NONE, FALSE, FALSE, 0, 0, 0)
TRAIN_LAYOUT_TEST(test_layout_ends_alone, "E|(t*2|)*2L", "1d", 2, 0, 2, 2, 2, 4, 1, 4,
                  SIMPAR_PIPE_INTERLEAVED, TRUE, TRUE, 0.1, SIMPAR_RECOMPUTE_FULL, FALSE, TRUE, 0,
                  0, 0)
TRAIN_LAYOUT_TEST(test_layout_empty_middle, "Et||t|,|t|L", "1d", 2, 0, 2, 1, 3, 6, 1, 3,
                  SIMPAR_PIPE_INTERLEAVED, FALSE, TRUE, 0.0, SIMPAR_RECOMPUTE_NONE, FALSE, FALSE, 1,
                  0, 0)

/* Megatron-Core's layout strings (pipeline_parallel_layer_layout.py's parse_str_to_list):
 * repetition of a symbol and of a group, commas, empty stages, the recipes' own (DeepSeek-V3 on
 * GB200, Llama 3 70B on H100): each virtual stage's decoder layers and first layer. */
static void
test_layout_counts(void)
{
    static const struct {
        const char *text;
        guint chunks, total, mtp;
        const char *want; /* the decoder layers per virtual stage, "a,b,..." */
    } cases[] = {
        {"Et*3|t*2,L", 2, 5, 0, "3,2"},
        {"E|t*8|t*8|t*8,L", 4, 24, 0, "0,8,8,8"},
        {"E(tt|)*3L", 4, 6, 0, "2,2,2,0"},
        {"Et||t|,|t|L", 6, 3, 0, "1,0,1,0,1,0"},
        {"E(t*2|t|)*2t*10mL", 5, 16, 1, "2,1,2,1,10"},
        {"Et*4|(tttt|)*14tmL", 16, 61, 1, "4,4,4,4,4,4,4,4,4,4,4,4,4,4,4,1"},
        {"Et*2|(t*2|)*34,t*3|(t*2|)*3,tL", 40, 80, 0,
         "2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,3,2,2,2,1"},
        {"Et*0|t*2L", 2, 2, 0, "0,2"},
        {"E|*3t*2L", 4, 2, 0, "0,0,0,2"},
    };

    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autoptr(GError) error = NULL;
        const SimparLayout *lay = simpar_layout_parse(cases[i].text, &error);
        if (lay == NULL)
            printf("\n    %s", error->message);
        CU_ASSERT_PTR_NOT_NULL_FATAL(lay);
        g_autoptr(GString) got = g_string_new(NULL);
        guint sum = 0, wrong = 0;
        for (guint vs = 0; vs < lay->chunks; vs++) {
            g_string_append_printf(got, "%s%u", vs > 0 ? "," : "", lay->layers[vs]);
            wrong += lay->first_layer[vs] != sum;
            sum += lay->layers[vs];
        }
        if (!g_str_equal(got->str, cases[i].want) || lay->chunks != cases[i].chunks)
            printf("\n    %s: %u stages %s, want %u: %s", cases[i].text, lay->chunks, got->str,
                   cases[i].chunks, cases[i].want);
        CU_ASSERT_STRING_EQUAL(got->str, cases[i].want);
        CU_ASSERT_EQUAL(lay->chunks, cases[i].chunks);
        CU_ASSERT_EQUAL(lay->total, cases[i].total);
        CU_ASSERT_EQUAL(lay->mtp, cases[i].mtp);
        CU_ASSERT_EQUAL(wrong, 0);
        CU_ASSERT(simpar_layout_parse(cases[i].text, NULL) == lay); /* parsed once */
    }
    /* Megatron-Core's own example gives the MTP layer a stage of its own: refused */
    g_autoptr(GError) error = NULL;
    CU_ASSERT_PTR_NULL(simpar_layout_parse("Et*3|(tt|)*29,m|L", &error));
    CU_ASSERT(error != NULL && strstr(error->message, "must sit in the last virtual stage"));
}

/* The accounted split's layers per virtual stage, as Megatron-Core's get_num_layers_to_build
 * gives them: (L + e + l) / (P v) each, the first (last) one fewer with the embedding (loss). */
static void
test_accounted_counts(void)
{
    static const struct {
        gint64 layers, pp, v;
        gint accounted;
        guint first, middle, last; /* virtual stage 0's, the others', the last's */
    } cases[] = {
        {126, 8, 8, 3, 1, 2, 1},                            /* Llama 3.1 405B: 128 / 64 */
        {126, 16, 4, 3, 1, 2, 1},                           /* 128 / 64 */
        {126, 2, 1, 3, 63, 64, 63}, {23, 4, 2, 2, 3, 3, 2}, /* the loss alone: 24 / 8 */
        {31, 4, 1, 1, 7, 8, 8},                             /* the embedding alone: 32 / 4 */
    };

    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        gint64 P = cases[i].pp, v = cases[i].v;
        const TrainCase c = {"1d",
                             1,
                             0,
                             P,
                             1,
                             v,
                             P,
                             1,
                             cases[i].layers,
                             v > 1 ? SIMPAR_PIPE_INTERLEAVED : SIMPAR_PIPE_1F1B,
                             FALSE,
                             TRUE,
                             0.0,
                             SIMPAR_RECOMPUTE_NONE,
                             FALSE,
                             FALSE,
                             0,
                             0,
                             cases[i].accounted,
                             NULL};
        SimparModel model;
        SimparTrain tr;
        train_host_setup(&c, &model, &tr);
        g_autoptr(GError) error = NULL;
        gboolean ok = simpar_train_validate(&tr, &model, (guint64) P, &error);
        if (!ok)
            printf("\n    %s", error->message);
        CU_ASSERT_TRUE_FATAL(ok);
        guint n = (guint) (P * v), sum = 0, wrong = 0;
        for (guint vs = 0; vs < n; vs++) {
            guint want = vs == 0 ? cases[i].first : vs == n - 1 ? cases[i].last : cases[i].middle;
            guint got = simpar_train_stage_layers(&tr, vs);
            wrong += got != want || simpar_train_stage_first_layer(&tr, vs) != sum;
            sum += got;
        }
        if (wrong > 0 || sum != (guint) cases[i].layers)
            printf("\n    L=%" G_GINT64_FORMAT " P=%" G_GINT64_FORMAT " v=%" G_GINT64_FORMAT
                   ": %u virtual stages wrong, %u layers",
                   cases[i].layers, P, v, wrong, sum);
        CU_ASSERT_EQUAL(wrong, 0);
        CU_ASSERT_EQUAL(sum, (guint) cases[i].layers);
        CU_ASSERT_EQUAL(tr.layers_per_chunk, 0);
    }
}

/* What the executable mode cannot run is refused, naming the flag. */
static void
test_refusals(void)
{
    static const struct {
        const char *what, *needle;
    } cases[] = {
        {"zero", "--zero 2"},
        {"tied", "--tied-embeddings"},
        {"local", "--local-chunks"},
        {"zero3", "--zero 3 with --pp 1 reduce-scatters the gradients of every micro-batch"},
        {"vocab", "--vocab 15"},
        {"2d", "--tp-mode 2d"},
        {"size", "more than 1e+06"},
    };

    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        const TrainCase c = {"1d",  2,
                             0,     2,
                             2,     1,
                             2,     1,
                             2,     SIMPAR_PIPE_1F1B,
                             FALSE, TRUE,
                             0.0,   SIMPAR_RECOMPUTE_NONE,
                             FALSE, FALSE,
                             0,     0,
                             0,     NULL};
        SimparModel model;
        SimparTrain tr;
        train_host_setup(&c, &model, &tr);
        if (g_str_equal(cases[i].what, "zero"))
            tr.zero = 2, tr.pp = 1, tr.dp = 4;
        else if (g_str_equal(cases[i].what, "zero3"))
            tr.zero = 3, tr.pp = 1, tr.dp = 4, tr.global_batch = 8;
        else if (g_str_equal(cases[i].what, "tied"))
            tr.tied_embeddings = TRUE;
        else if (g_str_equal(cases[i].what, "local"))
            tr.schedule = SIMPAR_PIPE_LOCAL;
        else if (g_str_equal(cases[i].what, "size"))
            tr.global_batch = 4000 * model.micro_batch * tr.dp;
        else if (g_str_equal(cases[i].what, "2d"))
            tr.tp.gen = simpar_generator_of("2d"), tr.tp.tp = 4, tr.pp = 1, model.micro_batch = 2,
            tr.global_batch = 8;
        else
            model.vocab = 15;
        g_autoptr(GError) error = NULL;
        CU_ASSERT_TRUE_FATAL(simpar_train_validate(&tr, &model, 8, &error));
        g_autoptr(SimparSchedule) layer = simpar_generate_layer(&model, &tr.tp, &error);
        CU_ASSERT_PTR_NOT_NULL_FATAL(layer);
        g_autoptr(SimparSchedule) sched = simpar_step_build_ops(&model, &tr, layer, &error);
        CU_ASSERT_PTR_NULL(sched);
        CU_ASSERT_PTR_NOT_NULL_FATAL(error);
        printf("\n    %s: %s ", cases[i].what, error->message);
        CU_ASSERT_PTR_NOT_NULL(strstr(error->message, cases[i].needle));
    }
}

static CU_TestInfo train_host_tests[] = {
    {"2 stages x 2 replicas x 2-way 1-D, 2 layers (the issue's case)", test_issue_case},
    {"the same with --scatter-gather", test_scatter_gather},
    {"GPipe, dropout, 3 micro-batches", test_gpipe_dropout},
    {"1F1B, sequence parallelism, full recomputation, 4 layers", test_1f1b_sp_full},
    {"interleaved v=2, selective recomputation", test_interleaved},
    {"4-way 1-D + SP, interleaved, 2 replicas, dropout, full recomputation",
     test_t4_sp_interleaved_dp},
    {"Llama layers (GQA, SwiGLU, RMSNorm), 3 layers on 2 stages, SP, dropout", test_llama_uneven},
    {"MLA layers, T=2 with SP, 2 stages, 2 replicas, dropout: the step equals the serial one",
     test_mla_sp_dp},
    {"MLA layers, T=2, ZeRO-1 over 2 replicas: the updated weights equal the serial step",
     test_mla_zero1},
    {"ZeRO-1 over 4 replicas: updated weights equal the serial step", test_zero1},
    {"ZeRO-1 sharded over groups of 2 of 4 replicas, Llama layers: updated weights equal the "
     "serial step",
     test_zero1_hybrid},
    {"ZeRO-3 over 2 replicas, 2 stages: updated pieces equal the serial step", test_zero3},
    {"ZeRO-3, interleaved v=2, full recomputation, dropout", test_zero3_interleaved},
    {"ZeRO-3 sharded over groups of 2 of 4 replicas, Llama layers, SP", test_zero3_hybrid},
    {"accounted split: 6 layers + embedding + loss over 2 x 2 chunks, interleaved",
     test_accounted_interleaved},
    {"accounted split: 5 layers + loss over 2 stages, 1F1B", test_accounted_loss},
    {"accounted split: layers per virtual stage as Megatron-Core builds them",
     test_accounted_counts},
    {"layout strings: every virtual stage's decoder layers", test_layout_counts},
    {"accounted split of 2 layers over 2 x 2 chunks: the ends hold no decoder layer",
     test_accounted_empty_ends},
    {"layout E|t*3L over 2 stages: the first holds the embedding alone, 1F1B",
     test_layout_embedding_alone},
    {"layout E|(t*2|)*2L over 2 x 2 chunks: the ends alone, interleaved", test_layout_ends_alone},
    {"layout Et||t|,|t|L over 2 x 3 chunks: empty middle chunks, ZeRO-1", test_layout_empty_middle},
    {"refusals name the flag", test_refusals},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo train_host_suites[] = {
    {"whole steps on the host executor", NULL, NULL, NULL, NULL, train_host_tests},
    CU_SUITE_INFO_NULL,
};

int
main(int argc, char **argv)
{
    if (argc > 1)
        train_host_seed = g_ascii_strtoull(argv[1], NULL, 10);
    printf("test-train-host: seed %" G_GUINT64_FORMAT "\n", train_host_seed);
    return simpar_test_main(train_host_suites);
}
