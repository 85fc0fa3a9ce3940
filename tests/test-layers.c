/* test-layers.c - every generated schedule, run by the host executor, computes the same layer
 * (output, input gradient, every weight, bias and layer-norm gradient) as the serial reference.
 *
 * Global inputs are drawn at random (seed printed; argv[1] overrides), scattered to the ranks
 * through the schedule's shards, and every output shard of every rank is compared element by
 * element with the reference; the shards of each output must cover the whole tensor.
 * Every case runs without recomputation, with selective and with full recomputation: the two
 * recomputing schedules must give every output bit for bit as the one without.
 */
#include "exec/host.h"
#include "generators.h"
#include "reference-layer.h"
#include "simpar-test.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

static guint32 layers_seed = 20261121;

typedef struct {
    const char *mode;
    gint64 tp, depth;
    gboolean sp, paper;
    gint64 b;       /* micro-batch: whole sequences per GPU */
    gint64 kv;      /* key/value heads, 0 = a */
    gboolean llama; /* SwiGLU and RMSNorm */
    gint64 cp;      /* context parallelism (0: none): C x s tokens per sequence */
    gboolean ring;  /* --cp-mode ring */
    gboolean mla;   /* multi-head latent attention (layers_mla) */
    gint64 dh;      /* a head's columns (--head-dim), 0 = h/a = 3 */
} LayerCase;

/* h = 36, a = 12, f = 72, s = 4: divisible by every grid below. */
static const gint64 layers_h = 36, layers_a = 12, layers_f = 72, layers_s = 4;
/* MLA's latents, head columns (4 + 2 for query and key, 5 for values: every width differs from
 * h/a = 3 and from the others) */
static const SimparMlaConfig layers_mla = {10, 6, 4, 2, 5};
/* --tp-comm-overlap for the cases run while it is set (test_1d_tp_comm_overlap) */
static gboolean layers_tp_overlap;

static RefTensor
layers_tensor(const char *name)
{
    for (guint t = 0; t < REF_N_TENSORS; t++)
        if (g_str_equal(ref_tensor_name((RefTensor) t), name))
            return (RefTensor) t;
    g_error("shard of unknown tensor '%s'", name);
}

static void
layers_scatter(const SimparSchedule *sched, SimparHost *host, const RefShape *shape,
               double *const t[REF_N_TENSORS])
{
    guint n;
    const SimparShard *sh = simpar_schedule_shards(sched, &n);
    for (guint i = 0; i < n; i++) {
        if (sh[i].role != SIMPAR_SHARD_INPUT || g_str_has_prefix(sh[i].tensor, "moe."))
            continue; /* an MoE layer's experts: the MoE block's (test-moe.c) */
        RefTensor id = layers_tensor(sh[i].tensor);
        guint64 rows, cols;
        ref_tensor_shape(shape, id, &rows, &cols);
        CU_ASSERT_FATAL(sh[i].row0 + sh[i].rows <= rows && sh[i].col0 + sh[i].cols <= cols);
        double *dst = simpar_host_buffer(host, sh[i].view.buf) + sh[i].view.off;
        for (guint64 r = 0; r < sh[i].rows; r++)
            for (guint64 c = 0; c < sh[i].cols; c++)
                dst[r * sh[i].cols + c] = t[id][(sh[i].row0 + r) * cols + sh[i].col0 + c];
    }
}

/* Every output shard's values, in shard order (the same in every recompute mode). */
static GArray *
layers_outputs(const SimparSchedule *sched, SimparHost *host)
{
    guint n;
    const SimparShard *sh = simpar_schedule_shards(sched, &n);
    GArray *out = g_array_new(FALSE, FALSE, sizeof(double));
    for (guint i = 0; i < n; i++)
        if (sh[i].role == SIMPAR_SHARD_OUTPUT)
            g_array_append_vals(out, simpar_host_buffer(host, sh[i].view.buf) + sh[i].view.off,
                                sh[i].rows * sh[i].cols);
    return out; /* (transfer full) */
}

/* The worst relative error of `got` against the reference tensor over its covered elements
 * (against a reference of zeros, an MoE layer's second norm's gradients: the absolute error). */
static double
layers_worst(const double *got, const double *want, const gboolean *covered, guint64 n)
{
    double scale = 0, worst = 0;
    for (guint64 e = 0; e < n; e++)
        scale = MAX(scale, fabs(want[e]));
    double least = scale > 0 ? 1e-3 * scale : 1;
    for (guint64 e = 0; e < n; e++)
        if (covered[e])
            worst = MAX(worst, fabs(got[e] - want[e]) / MAX(fabs(want[e]), least));
    return worst;
}

/* A global tensor being assembled from shards: values added, elements covered. */
typedef struct {
    RefTensor id;
    double *sum;
    gboolean *covered;
} LayersSum;

static void
layers_sum_free(gpointer p)
{
    LayersSum *s = p;
    g_free(s->sum), g_free(s->covered), g_free(s);
}

static LayersSum *
layers_sum_new(RefTensor id, guint64 n)
{
    LayersSum *s = g_new(LayersSum, 1);
    *s = (LayersSum){id, g_new0(double, n), g_new0(gboolean, n)};
    return s;
}

/* Adds shard sh's values into s. */
static void
layers_take(const SimparShard *sh, SimparHost *host, guint64 cols, LayersSum *s)
{
    const double *got = simpar_host_buffer(host, sh->view.buf) + sh->view.off;
    for (guint64 r = 0; r < sh->rows; r++)
        for (guint64 c = 0; c < sh->cols; c++) {
            guint64 e = (sh->row0 + r) * cols + sh->col0 + c;
            s->sum[e] += got[r * sh->cols + c];
            s->covered[e] = TRUE;
        }
}

/* Whether an MoE layer's schedule (its attention part and second norm) leaves `id` to the MoE
 * block. */
static gboolean
layers_moe_part(RefTensor id)
{
    return id >= REF_FC1_W_GRAD && id <= REF_FC2_B_GRAD;
}

/* Largest relative error over all output shards, each PARTIAL one summed over its group; every
 * output element must be covered (with `moe`, the attention part's). */
static double
layers_compare(const SimparSchedule *sched, SimparHost *host, const RefShape *shape,
               double *const t[REF_N_TENSORS], gboolean moe)
{
    guint n;
    const SimparShard *sh = simpar_schedule_shards(sched, &n);
    double worst = 0;
    gboolean *covered[REF_N_TENSORS] = {0};
    g_autoptr(GHashTable) sums =
        g_hash_table_new_full(g_str_hash, g_str_equal, g_free, layers_sum_free);
    for (guint i = 0; i < n; i++) {
        if (sh[i].role == SIMPAR_SHARD_INPUT || g_str_has_prefix(sh[i].tensor, "moe."))
            continue; /* the MoE block's input in its tokens' layout: test-moe.c */
        RefTensor id = layers_tensor(sh[i].tensor);
        guint64 rows, cols;
        ref_tensor_shape(shape, id, &rows, &cols);
        if (covered[id] == NULL)
            covered[id] = g_new0(gboolean, rows * cols);
        /* an output on its own; PARTIAL ones summed per (tensor, group) */
        char *key = sh[i].role == SIMPAR_SHARD_PARTIAL
                        ? g_strdup_printf("%s %u", sh[i].tensor, sh[i].sum_group)
                        : g_strdup_printf("%s rank %u shard %u", sh[i].tensor, sh[i].rank, i);
        LayersSum *s = g_hash_table_lookup(sums, key);
        if (s == NULL)
            g_hash_table_insert(sums, g_strdup(key), s = layers_sum_new(id, rows * cols));
        g_free(key);
        layers_take(&sh[i], host, cols, s);
        for (guint64 e = 0; e < rows * cols; e++)
            covered[id][e] = covered[id][e] || s->covered[e];
    }
    GHashTableIter it;
    gpointer key, value;
    g_hash_table_iter_init(&it, sums);
    while (g_hash_table_iter_next(&it, &key, &value)) {
        const LayersSum *s = value;
        guint64 rows, cols;
        ref_tensor_shape(shape, s->id, &rows, &cols);
        worst = MAX(worst, layers_worst(s->sum, t[s->id], s->covered, rows * cols));
    }
    for (guint id = REF_N_INPUTS; id < REF_N_TENSORS; id++) {
        guint64 rows, cols, missing = 0;
        ref_tensor_shape(shape, (RefTensor) id, &rows, &cols);
        if (rows * cols == 0 || (moe && layers_moe_part((RefTensor) id))) /* RMSNorm's betas */
            continue;
        for (guint64 e = 0; covered[id] != NULL && e < rows * cols; e++)
            missing += !covered[id][e];
        if (covered[id] == NULL || missing != 0)
            printf("\n    %s: %" G_GUINT64_FORMAT " elements not produced by any rank",
                   ref_tensor_name((RefTensor) id), covered[id] ? missing : rows * cols);
        CU_ASSERT(covered[id] != NULL && missing == 0);
    }
    for (guint id = 0; id < REF_N_TENSORS; id++)
        g_free(covered[id]);
    return worst;
}

/* Runs one case against the reference; returns its output values (transfer full). With `moe`,
 * the model has experts: its layer schedule is the attention part and the second norm, held against
 * the serial layer with fc2's weights and bias zero (its MLP adds nothing, and passes dy through).
 */
/* The case's model: fp64, C x s tokens per sequence, MLA's latents where the case has them. */
static SimparModel
layers_model(const LayerCase *lc)
{
    SimparModel m = {"test",
                     layers_h,
                     layers_a,
                     layers_s * MAX(lc->cp, 1),
                     lc->b,
                     1,
                     layers_f,
                     64,
                     SIMPAR_DTYPE_FP64,
                     lc->kv,
                     lc->llama ? SIMPAR_MLP_SWIGLU : SIMPAR_MLP_GELU,
                     lc->llama ? SIMPAR_NORM_RMSNORM : SIMPAR_NORM_LAYERNORM,
                     lc->llama, /* Llama layers have no biases */
                     FALSE,
                     0,
                     {0},
                     {0},
                     lc->dh,
                     0};
    if (lc->mla)
        m.mla = layers_mla;
    return m;
}

static GArray *
layers_run_model(const LayerCase *lc, gboolean causal, double p, SimparRecompute recompute,
                 guint modules, gboolean moe)
{
    gint64 cp = MAX(lc->cp, 1);
    SimparModel m = layers_model(lc);
    if (moe)
        m.moe = (SimparMoeConfig){.experts = 4, .top_k = 2, .moe_ffn = 8, .moe_every = 1};
    SimparPlan plan;
    simpar_plan_init(&plan);
    plan.ep = moe ? 2 : 0;
    plan.gen = simpar_generator_of(lc->mode), plan.tp = lc->tp, plan.depth = lc->depth;
    plan.sequence_parallel = lc->sp, plan.paper_3d = lc->paper;
    plan.causal = causal, plan.p_hidden = p, plan.p_attn = p, plan.seed = layers_seed;
    plan.recompute = recompute, plan.cp = cp, plan.cp_ring = lc->ring;
    plan.recompute_modules = modules;
    plan.tp_comm_overlap = layers_tp_overlap;
    g_autoptr(GError) error = NULL;
    g_autoptr(SimparSchedule) sched = simpar_generate_layer(&m, &plan, &error);
    CU_ASSERT_PTR_NOT_NULL_FATAL(sched);
    CU_ASSERT_TRUE(simpar_schedule_check_hazards(sched, &error));
    if (moe) { /* no dense MLP, the experts' parameters in its place */
        CU_ASSERT_PTR_NULL(simpar_schedule_find_shard(sched, 0, "fc1.weight"));
        CU_ASSERT_PTR_NOT_NULL(simpar_schedule_find_shard(sched, 0, "ln2.gamma"));
        const SimparShard *dense = simpar_schedule_find_shard(sched, 0, "moe.params");
        const SimparShard *experts = simpar_schedule_find_shard(sched, 0, "moe.experts");
        CU_ASSERT_PTR_NOT_NULL_FATAL(dense);
        CU_ASSERT_PTR_NOT_NULL_FATAL(experts);
        /* the router [h x 4] here; the E/EP = 2 experts' fc1 (2 f wide with SwiGLU) and fc2 */
        guint64 w = m.mlp == SIMPAR_MLP_SWIGLU ? 3 : 2;
        CU_ASSERT_EQUAL(dense->cols, (guint64) m.hidden * 4);
        CU_ASSERT_EQUAL(experts->cols, 2 * w * (guint64) m.hidden * 8);
        g_autofree SimparRankFacts *f = simpar_schedule_rank_facts(sched);
        CU_ASSERT_EQUAL(f[0].expert_params, (gsize) (2 * w * (guint64) m.hidden * 8));
    }
    if (error != NULL)
        printf("\n    %s", error->message);

    RefShape shape = {lc->b,
                      (guint) (layers_s * cp),
                      layers_h,
                      layers_a,
                      layers_f,
                      causal,
                      plan.eps,
                      p,
                      p,
                      layers_seed,
                      (guint) lc->kv,
                      lc->llama,
                      lc->llama,
                      (guint) cp,
                      lc->llama,
                      0,
                      0,
                      0,
                      0,
                      0,
                      (guint) lc->dh};
    if (lc->mla) {
        const SimparMlaConfig *l = &layers_mla;
        shape.q_lora = (guint) l->q_lora_rank, shape.kv_lora = (guint) l->kv_lora_rank;
        shape.dn = (guint) l->qk_head_dim, shape.dpe = (guint) l->qk_pos_emb_head_dim;
        shape.dv = (guint) l->v_head_dim;
    }
    g_autoptr(GRand) rng = g_rand_new_with_seed(layers_seed);
    double *t[REF_N_TENSORS];
    for (guint i = 0; i < REF_N_TENSORS; i++) {
        guint64 rows, cols;
        ref_tensor_shape(&shape, (RefTensor) i, &rows, &cols);
        t[i] = g_new0(double, rows *cols);
        if (i < REF_N_INPUTS)
            ref_fill_random(t[i], rows * cols, rng);
        if (moe && (i == REF_FC2_W || i == REF_FC2_B) && rows * cols > 0) /* no bias: NULL */
            memset(t[i], 0, sizeof(double) * rows * cols);
    }
    ref_layer_run(&shape, t);
    g_autoptr(SimparHost) host = simpar_host_new(sched);
    layers_scatter(sched, host, &shape, t);
    CU_ASSERT_TRUE_FATAL(simpar_host_run(host, &error));
    double worst = layers_compare(sched, host, &shape, t, moe);
    if (modules != 0) {
        g_autofree char *names = simpar_recompute_modules_name(modules);
        printf("\n    modules %s:", names);
    }
    printf("\n    %s%s%s tp=%" G_GINT64_FORMAT " cp=%" G_GINT64_FORMAT "%s kv=%" G_GINT64_FORMAT
           "%s%s recompute %s: worst relative error %.3g ",
           moe ? "moe attention part " : "", lc->mla ? "mla " : "", lc->mode, lc->tp, cp,
           lc->ring ? " ring" : "", simpar_model_kv_heads(&m), lc->llama ? " swiglu rmsnorm" : "",
           causal ? " causal" : " dropout", simpar_recompute_name(recompute), worst);
    CU_ASSERT(worst < 1e-9);
    for (guint i = 0; i < REF_N_TENSORS; i++)
        g_free(t[i]);
    return layers_outputs(sched, host);
}

static GArray *
layers_run(const LayerCase *lc, gboolean causal, double p, SimparRecompute recompute)
{
    return layers_run_model(lc, causal, p, recompute, 0, FALSE);
}

/* An MoE model's layer schedule, every mode and recomputation: the attention part and the second
 * norm (its gradients zero: the MoE block gives none here). */
static void
test_moe_attention_part(void)
{
    const LayerCase cases[] = {
        {"1d", 1, 0, FALSE, TRUE, 2, 0, FALSE, 0, FALSE, FALSE, 0},
        {"1d", 2, 0, TRUE, TRUE, 2, 6, TRUE, 0, FALSE, FALSE, 0},
        {"2d", 4, 0, FALSE, TRUE, 4, 2, TRUE, 0, FALSE, FALSE, 0},
        {"3d", 8, 0, FALSE, FALSE, 4, 0, FALSE, 0, FALSE, FALSE, 0},
        {"1d", 2, 0, TRUE, TRUE, 2, 6, TRUE, 2, FALSE, FALSE, 0},
        {"2.5d", 8, 2, FALSE, TRUE, 4, 0, TRUE, 0, FALSE, FALSE, 0},
    };
    for (guint i = 0; i < G_N_ELEMENTS(cases); i++)
        for (SimparRecompute r = SIMPAR_RECOMPUTE_NONE; r <= SIMPAR_RECOMPUTE_FULL; r++) {
            g_autoptr(GArray) out =
                layers_run_model(&cases[i], i % 2 == 0, 0.1 * (i % 2), r, 0, TRUE);
            CU_ASSERT(out->len > 0);
        }
    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) { /* the second norm before the MoE block */
        g_autoptr(GArray) out = layers_run_model(&cases[i], TRUE, 0.0, SIMPAR_RECOMPUTE_SELECTIVE,
                                                 SIMPAR_RECOMPUTE_LAYERNORM, TRUE);
        CU_ASSERT(out->len > 0);
    }
}

/* Without recomputation, then selective and full: the same values, bit for bit. */
static void
layers_case_recompute(const LayerCase *lc, gboolean causal, double p)
{
    g_autoptr(GArray) none = layers_run(lc, causal, p, SIMPAR_RECOMPUTE_NONE);
    for (SimparRecompute r = SIMPAR_RECOMPUTE_SELECTIVE; r <= SIMPAR_RECOMPUTE_FULL; r++) {
        g_autoptr(GArray) got = layers_run(lc, causal, p, r);
        CU_ASSERT_EQUAL_FATAL(got->len, none->len);
        guint differ = 0;
        for (guint i = 0; i < got->len; i++)
            differ += memcmp(&g_array_index(got, double, i), &g_array_index(none, double, i),
                             sizeof(double)) != 0;
        printf("\n    recompute %s: %u of %u output values differ from none ",
               simpar_recompute_name(r), differ, got->len);
        CU_ASSERT_EQUAL(differ, 0);
    }
}

static void
layers_case(const LayerCase *lc)
{
    layers_case_recompute(lc, TRUE, 0.0);
    layers_case_recompute(lc, FALSE, 0.1);
}

/* The ops a module's recomputation issues: "bwd.recompute." and one of `prefixes` (NULL-ended). */
static guint
layers_count_recomputed(const SimparSchedule *sched, const char *const *prefixes)
{
    guint n = 0;
    for (guint i = 0; i < simpar_schedule_n_ops(sched); i++) {
        const char *name = simpar_schedule_op(sched, i)->name;
        if (!g_str_has_prefix(name, "bwd.recompute."))
            continue;
        for (guint k = 0; prefixes[k] != NULL; k++)
            n += g_str_has_prefix(name + strlen("bwd.recompute."), prefixes[k]);
    }
    return n;
}

/* Selective's modules (plan.h) one at a time and together: the schedule recomputes what the
 * module holds (and only that) and still equals the serial layer (layers_run_model), every
 * output and gradient the same bits as without recomputation. */
static void
test_recompute_modules(void)
{
    const LayerCase cases[] = {
        {"1d", 1, 0, FALSE, TRUE, 2, 0, FALSE, 0, FALSE, FALSE, 0},
        {"1d", 2, 0, TRUE, TRUE, 2, 6, TRUE, 0, FALSE, FALSE, 0},
        {"1d", 4, 0, FALSE, TRUE, 2, 0, FALSE, 0, FALSE, TRUE, 0},
        {"1d", 2, 0, TRUE, TRUE, 2, 0, TRUE, 0, FALSE, TRUE, 0},
        {"1d", 2, 0, TRUE, TRUE, 2, 6, TRUE, 2, TRUE, FALSE, 0},
        {"2d", 4, 0, FALSE, TRUE, 4, 2, TRUE, 0, FALSE, FALSE, 0},
        {"2.5d", 8, 2, FALSE, TRUE, 4, 0, FALSE, 0, FALSE, FALSE, 0},
        {"3d", 8, 0, FALSE, FALSE, 4, 2, TRUE, 0, FALSE, FALSE, 0},
    };
    const guint all = SIMPAR_RECOMPUTE_CORE_ATTN | SIMPAR_RECOMPUTE_LAYERNORM |
                      SIMPAR_RECOMPUTE_MLP | SIMPAR_RECOMPUTE_MLA_UP_PROJ;
    const guint modules[] = {SIMPAR_RECOMPUTE_LAYERNORM, SIMPAR_RECOMPUTE_MLP,
                             SIMPAR_RECOMPUTE_MLA_UP_PROJ, all};
    static const char *const ln[] = {"ln.", NULL}, *const mlp[] = {"fc1.", "fc2.", "gelu", "swiglu",
                                                                   NULL};
    static const char *const up[] = {"q_up.", "kv_up.", NULL};
    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        const LayerCase *lc = &cases[i];
        g_autoptr(GArray) none = layers_run_model(lc, TRUE, 0.0, SIMPAR_RECOMPUTE_NONE, 0, FALSE);
        for (guint k = 0; k < G_N_ELEMENTS(modules); k++) {
            guint mods = modules[k] & (lc->mla ? all : ~(guint) SIMPAR_RECOMPUTE_MLA_UP_PROJ);
            if (mods != modules[k] && k != G_N_ELEMENTS(modules) - 1)
                continue; /* mla_up_proj needs MLA */
            g_autoptr(GArray) got =
                layers_run_model(lc, TRUE, 0.0, SIMPAR_RECOMPUTE_SELECTIVE, mods, FALSE);
            CU_ASSERT_EQUAL_FATAL(got->len, none->len);
            CU_ASSERT_EQUAL(memcmp(got->data, none->data, sizeof(double) * got->len), 0);
            /* the recomputed ops of each module, on rank 0's schedule */
            SimparModel m = layers_model(lc);
            SimparPlan plan;
            simpar_plan_init(&plan);
            plan.gen = simpar_generator_of(lc->mode), plan.tp = lc->tp, plan.depth = lc->depth;
            plan.sequence_parallel = lc->sp, plan.cp = MAX(lc->cp, 1), plan.cp_ring = lc->ring;
            plan.recompute = SIMPAR_RECOMPUTE_SELECTIVE, plan.recompute_modules = mods;
            g_autoptr(SimparSchedule) sched = simpar_generate_layer(&m, &plan, NULL);
            CU_ASSERT_PTR_NOT_NULL_FATAL(sched);
            guint n_ranks = simpar_schedule_n_ranks(sched);
            /* layernorm: ln1 and ln2 (stats and apply each; MLA's latents' norms are mla_up_proj's)
             */
            guint n_ln = layers_count_recomputed(sched, ln);
            guint want_ln = (mods & SIMPAR_RECOMPUTE_LAYERNORM ? 2 : 0) +
                            (mods & SIMPAR_RECOMPUTE_MLA_UP_PROJ ? 2 : 0);
            CU_ASSERT(n_ln >= 2 * want_ln * n_ranks && (want_ln > 0 || n_ln == 0));
            guint n_mlp = layers_count_recomputed(sched, mlp);
            CU_ASSERT((mods & SIMPAR_RECOMPUTE_MLP) ? n_mlp >= 3 * n_ranks : n_mlp == 0);
            guint n_up = layers_count_recomputed(sched, up);
            CU_ASSERT((mods & SIMPAR_RECOMPUTE_MLA_UP_PROJ) ? n_up >= 2 * n_ranks : n_up == 0);
        }
    }
}

#define LAYER_TEST(fn, ...)                                                                        \
    static void fn(void)                                                                           \
    {                                                                                              \
        const LayerCase lc = {__VA_ARGS__};                                                        \
        layers_case(&lc);                                                                          \
    }

LAYER_TEST(test_1d_p2, "1d", 2, 0, FALSE, TRUE, 2, 0, FALSE, 0, FALSE, FALSE, 0)
LAYER_TEST(test_1d_p4, "1d", 4, 0, FALSE, TRUE, 2, 0, FALSE, 0, FALSE, FALSE, 0)
LAYER_TEST(test_1d_p4_sp, "1d", 4, 0, TRUE, TRUE, 2, 0, FALSE, 0, FALSE, FALSE, 0)
LAYER_TEST(test_1d_p2_sp, "1d", 2, 0, TRUE, TRUE, 3, 0, FALSE, 0, FALSE, FALSE, 0)
LAYER_TEST(test_2d_q2, "2d", 4, 0, FALSE, TRUE, 4, 0, FALSE, 0, FALSE, FALSE, 0)
LAYER_TEST(test_2d_q3, "2d", 9, 0, FALSE, TRUE, 3, 0, FALSE, 0, FALSE, FALSE, 0)
LAYER_TEST(test_2p5d_q2_d2, "2.5d", 8, 2, FALSE, TRUE, 4, 0, FALSE, 0, FALSE, FALSE, 0)
LAYER_TEST(test_3d_q2_paper, "3d", 8, 0, FALSE, TRUE, 4, 0, FALSE, 0, FALSE, FALSE, 0)
LAYER_TEST(test_3d_q2_later, "3d", 8, 0, FALSE, FALSE, 4, 0, FALSE, 0, FALSE, FALSE, 0)
LAYER_TEST(test_3d_q3_paper, "3d", 27, 0, FALSE, TRUE, 9, 0, FALSE, 0, FALSE, FALSE, 0)
LAYER_TEST(test_3d_q3_later, "3d", 27, 0, FALSE, FALSE, 9, 0, FALSE, 0, FALSE, FALSE, 0)
LAYER_TEST(test_1d_p1, "1d", 1, 0, FALSE, TRUE, 2, 0, FALSE, 0, FALSE, FALSE, 0)
/* grouped-query attention (12 heads on 6, 3 or 2 key/value heads, 1 = multi-query), SwiGLU and
 * RMSNorm in every mode */
LAYER_TEST(test_llama_1d_p1_mqa, "1d", 1, 0, FALSE, TRUE, 2, 1, TRUE, 0, FALSE, FALSE, 0)
LAYER_TEST(test_llama_1d_p2, "1d", 2, 0, FALSE, TRUE, 2, 2, TRUE, 0, FALSE, FALSE, 0)
LAYER_TEST(test_llama_1d_p2_sp, "1d", 2, 0, TRUE, TRUE, 2, 6, TRUE, 0, FALSE, FALSE, 0)
LAYER_TEST(test_gqa_1d_p2, "1d", 2, 0, FALSE, TRUE, 2, 2, FALSE, 0, FALSE, FALSE, 0)
LAYER_TEST(test_llama_2d_q2, "2d", 4, 0, FALSE, TRUE, 4, 2, TRUE, 0, FALSE, FALSE, 0)
LAYER_TEST(test_llama_2p5d_q2_d2, "2.5d", 8, 2, FALSE, TRUE, 4, 6, TRUE, 0, FALSE, FALSE, 0)
LAYER_TEST(test_llama_3d_q2_later, "3d", 8, 0, FALSE, FALSE, 4, 2, TRUE, 0, FALSE, FALSE, 0)
LAYER_TEST(test_llama_3d_q3_paper, "3d", 27, 0, FALSE, TRUE, 9, 3, TRUE, 0, FALSE, FALSE, 0)
/* context parallelism (all-gathered keys and values), with every tensor-parallel mode */
LAYER_TEST(test_cp2_1d_p1, "1d", 1, 0, FALSE, TRUE, 2, 0, FALSE, 2, FALSE, FALSE, 0)
LAYER_TEST(test_cp4_1d_p1_llama, "1d", 1, 0, FALSE, TRUE, 1, 3, TRUE, 4, FALSE, FALSE, 0)
LAYER_TEST(test_cp2_1d_p2_sp_llama, "1d", 2, 0, TRUE, TRUE, 2, 6, TRUE, 2, FALSE, FALSE, 0)
LAYER_TEST(test_cp2_1d_p2, "1d", 2, 0, FALSE, TRUE, 2, 0, FALSE, 2, FALSE, FALSE, 0)
LAYER_TEST(test_cp2_2d_q2_llama, "2d", 4, 0, FALSE, TRUE, 4, 2, TRUE, 2, FALSE, FALSE, 0)
LAYER_TEST(test_cp2_2p5d_q2_d2, "2.5d", 8, 2, FALSE, TRUE, 4, 0, FALSE, 2, FALSE, FALSE, 0)
LAYER_TEST(test_cp3_3d_q2_later_llama, "3d", 8, 0, FALSE, FALSE, 4, 2, TRUE, 3, FALSE, FALSE, 0)
/* multi-head latent attention (Megatron-Core's placement: duplicated down projections,
 * column-parallel up projections), GPT and Llama layers, with and without SP */
LAYER_TEST(test_mla_1d_p1, "1d", 1, 0, FALSE, TRUE, 2, 0, FALSE, 0, FALSE, TRUE, 0)
LAYER_TEST(test_mla_1d_p2, "1d", 2, 0, FALSE, TRUE, 2, 0, TRUE, 0, FALSE, TRUE, 0)
LAYER_TEST(test_mla_1d_p2_sp, "1d", 2, 0, TRUE, TRUE, 2, 0, FALSE, 0, FALSE, TRUE, 0)
LAYER_TEST(test_mla_1d_p4, "1d", 4, 0, FALSE, TRUE, 2, 0, FALSE, 0, FALSE, TRUE, 0)
LAYER_TEST(test_mla_1d_p4_sp, "1d", 4, 0, TRUE, TRUE, 1, 0, TRUE, 0, FALSE, TRUE, 0)
/* ring attention: key blocks passed around the context-parallel ring */
LAYER_TEST(test_ring2_1d_p1, "1d", 1, 0, FALSE, TRUE, 2, 0, FALSE, 2, TRUE, FALSE, 0)
LAYER_TEST(test_ring4_1d_p2_sp_llama, "1d", 2, 0, TRUE, TRUE, 2, 6, TRUE, 4, TRUE, FALSE, 0)
LAYER_TEST(test_ring3_2d_q2, "2d", 4, 0, FALSE, TRUE, 4, 0, FALSE, 3, TRUE, FALSE, 0)
LAYER_TEST(test_ring2_3d_q2_llama, "3d", 8, 0, FALSE, FALSE, 4, 2, TRUE, 2, TRUE, FALSE, 0)
/* heads of 5 columns where h/a = 3 (--head-dim, Qwen3's 128 at h/a = 64): qkv [h x (a + 2 kv)
 * 5], proj [5 a x h], in every mode, with GQA, SP and both context-parallel modes */
LAYER_TEST(test_dh5_1d_p1, "1d", 1, 0, FALSE, TRUE, 2, 0, FALSE, 0, FALSE, FALSE, 5)
LAYER_TEST(test_dh5_1d_p2_sp_llama, "1d", 2, 0, TRUE, TRUE, 2, 6, TRUE, 0, FALSE, FALSE, 5)
LAYER_TEST(test_dh5_1d_p4_gqa, "1d", 4, 0, FALSE, TRUE, 2, 4, TRUE, 0, FALSE, FALSE, 5)
LAYER_TEST(test_dh5_2d_q2_llama, "2d", 4, 0, FALSE, TRUE, 4, 2, TRUE, 0, FALSE, FALSE, 5)
LAYER_TEST(test_dh5_2p5d_q2_d2, "2.5d", 8, 2, FALSE, TRUE, 4, 0, FALSE, 0, FALSE, FALSE, 5)
LAYER_TEST(test_dh5_3d_q2_later, "3d", 8, 0, FALSE, FALSE, 4, 2, TRUE, 0, FALSE, FALSE, 5)
LAYER_TEST(test_dh5_cp2_1d_p2_llama, "1d", 2, 0, TRUE, TRUE, 2, 6, TRUE, 2, FALSE, FALSE, 5)
LAYER_TEST(test_dh5_ring2_1d_p2, "1d", 2, 0, FALSE, TRUE, 2, 0, FALSE, 2, TRUE, FALSE, 5)

/* The ops of rank 0 named `suffix` after the linear's name, e.g. "fwd.qkv." "ring-send". */
static guint
layers_count_ops(const SimparSchedule *sched, const char *prefix, const char *suffix)
{
    guint n = 0, n_ops;
    const guint *ops = simpar_schedule_rank_ops(sched, 0, &n_ops);
    for (guint i = 0; i < n_ops; i++) {
        const char *name = simpar_schedule_op(sched, ops[i])->name;
        n += g_str_has_prefix(name, prefix) && g_str_has_suffix(name, suffix);
    }
    return n;
}

/* --tp-comm-overlap (Transformer Engine's userbuffers, tp-1d.c): the ring exchanges, the
 * pipelined reduce-scatters and the bulk overlaps compute the serial layer's outputs and
 * gradients (layers_run_model: 1e-9 in fp64), with recomputation (full, selective, and
 * selective's layernorm, mlp and mla_up_proj modules: the same bits), context parallelism (both
 * modes) and MLA; the schedule is the chunked one: P - 1 ring steps of one block each, one GEMM
 * per block, 4 pipelined chunks where a rank's rows divide by 4. */
static void
test_1d_tp_comm_overlap(void)
{
    const LayerCase cases[] = {
        {"1d", 2, 0, TRUE, TRUE, 2, 0, FALSE, 0, FALSE, FALSE, 0},
        {"1d", 4, 0, TRUE, TRUE, 4, 4, TRUE, 0, FALSE, FALSE, 0},
        {"1d", 4, 0, TRUE, TRUE, 2, 0, FALSE, 0, FALSE, FALSE, 5},
        {"1d", 2, 0, TRUE, TRUE, 2, 6, TRUE, 2, FALSE, FALSE, 0},
        {"1d", 2, 0, TRUE, TRUE, 2, 6, TRUE, 4, TRUE, FALSE, 0},
        {"1d", 2, 0, TRUE, TRUE, 2, 0, FALSE, 0, FALSE, TRUE, 0},
    };
    layers_tp_overlap = TRUE;
    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        const LayerCase *lc = &cases[i];
        layers_case(lc);
        /* selective's modules replay the ring exchanges and the pipeline: the same bits */
        guint mods = SIMPAR_RECOMPUTE_LAYERNORM | SIMPAR_RECOMPUTE_MLP |
                     (lc->mla ? SIMPAR_RECOMPUTE_MLA_UP_PROJ : 0);
        g_autoptr(GArray) none = layers_run_model(lc, TRUE, 0.0, SIMPAR_RECOMPUTE_NONE, 0, FALSE);
        g_autoptr(GArray) got =
            layers_run_model(lc, TRUE, 0.0, SIMPAR_RECOMPUTE_SELECTIVE, mods, FALSE);
        CU_ASSERT_EQUAL_FATAL(got->len, none->len);
        CU_ASSERT_EQUAL(memcmp(got->data, none->data, sizeof(double) * got->len), 0);
        SimparModel m = layers_model(lc);
        SimparPlan plan;
        simpar_plan_init(&plan);
        plan.gen = simpar_generator_of(lc->mode), plan.tp = lc->tp, plan.sequence_parallel = TRUE;
        plan.cp = MAX(lc->cp, 1), plan.cp_ring = lc->ring, plan.tp_comm_overlap = TRUE;
        g_autoptr(SimparSchedule) sched = simpar_generate_layer(&m, &plan, NULL);
        CU_ASSERT_PTR_NOT_NULL_FATAL(sched);
        guint P = (guint) lc->tp, rows = (guint) (lc->b * layers_s / P);
        guint S = rows % 4 == 0 ? 4 : rows % 2 == 0 ? 2 : 1; /* the pipeline's chunks */
        const char *col = lc->mla ? "fwd.q_up." : "fwd.qkv.";
        CU_ASSERT_EQUAL(layers_count_ops(sched, col, "ring-send"), P - 1);
        CU_ASSERT_EQUAL(layers_count_ops(sched, col, "ring-recv"), P - 1);
        CU_ASSERT_EQUAL(layers_count_ops(sched, col, "gemm"), P);
        CU_ASSERT_EQUAL(layers_count_ops(sched, "fwd.fc1.", "gemm"), P);
        CU_ASSERT_EQUAL(layers_count_ops(sched, "bwd.fc2.", "ring-send"), P - 1);
        CU_ASSERT_EQUAL(layers_count_ops(sched, "bwd.fc2.", "gemm-dx"), 0);
        CU_ASSERT_EQUAL(layers_count_ops(sched, "bwd.fc2.", "gemm"), P);
        CU_ASSERT_EQUAL(layers_count_ops(sched, "fwd.proj.", "reduce-scatter-y"), S);
        CU_ASSERT_EQUAL(layers_count_ops(sched, "fwd.fc2.", "gemm"), S);
        CU_ASSERT_EQUAL(layers_count_ops(sched, "fwd.proj.", "all-gather-x"), 0);
    }
    layers_tp_overlap = FALSE;
}

/* The table's lists, as the help texts and refusals print them; a plan starts at the baseline. */
static void
test_generator_lists(void)
{
    const struct {
        SimparGenFact fact;
        SimparGenWords words;
        const char *conjunction, *want;
    } cases[] = {
        {SIMPAR_GEN_ANY, SIMPAR_GEN_SIZED, NULL, "P (1d), q*q (2d), q*q*d (2.5d), q*q*q (3d)"},
        {SIMPAR_GEN_ANY, SIMPAR_GEN_SIZE, "or", "P, q*q, q*q*d or q*q*q"},
        {SIMPAR_GEN_GRID, SIMPAR_GEN_POWERS, "and", "2d (T = q^2), 2.5d (q^2 d) and 3d (q^3)"},
        {SIMPAR_GEN_GRID, SIMPAR_GEN_LABEL, "and", "2-D, 2.5-D and 3-D"},
        {SIMPAR_GEN_GRID, SIMPAR_GEN_BATCH, NULL, "q for 2-D, q d for 2.5-D, q^2 for 3-D"},
        {SIMPAR_GEN_GRID, SIMPAR_GEN_NAME, "or", "2d, 2.5d or 3d"},
        {SIMPAR_GEN_LINE, SIMPAR_GEN_LABEL, "or", "1-D"},
        {SIMPAR_GEN_SP, SIMPAR_GEN_NAME, "or", "1d"},
        {SIMPAR_GEN_LAYERS, SIMPAR_GEN_NAME, "or", "2.5d"},
        {SIMPAR_GEN_VARIANTS, SIMPAR_GEN_NAME, "or", "3d"},
    };

    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autofree char *got =
            simpar_generator_list(cases[i].fact, cases[i].words, cases[i].conjunction);
        CU_ASSERT_STRING_EQUAL(got, cases[i].want);
    }
    SimparPlan plan;
    simpar_plan_init(&plan);
    CU_ASSERT_PTR_EQUAL(plan.gen, simpar_generator_baseline());
    CU_ASSERT_PTR_EQUAL(simpar_generator_of("1d"), simpar_generator_baseline());
    CU_ASSERT_PTR_NULL(simpar_generator_of("all"));
}

static CU_TestInfo layers_tests[] = {
    {"selective's modules (layernorm, mlp, mla_up_proj, all with core_attn) recompute their ops "
     "and equal the serial layer, every bit as without recomputation: 1-D (SP, MLA, ring CP), "
     "2-D, 2.5-D, 3-D",
     test_recompute_modules},
    {"the generator table's lists of modes are the help texts' and refusals' words",
     test_generator_lists},
    {"an MoE model's layer (its attention part) equals the serial layer without its MLP, 1-D "
     "(with SP, CP), 2-D, 2.5-D and 3-D (their all-to-alls to the MoE block and back), every "
     "recomputation (and selective's layernorm module)",
     test_moe_attention_part},
    {"one GPU (1-D T=1) equals the serial layer; recomputation changes no bit", test_1d_p1},
    {"1-D T=2 equals the serial layer; recomputation changes no bit", test_1d_p2},
    {"Llama layer (multi-query, SwiGLU, RMSNorm) on one GPU equals the serial layer",
     test_llama_1d_p1_mqa},
    {"Llama layer (GQA kv=2, SwiGLU, RMSNorm), 1-D T=2, equals the serial layer", test_llama_1d_p2},
    {"Llama layer (GQA kv=6), 1-D T=2 with SP, equals the serial layer", test_llama_1d_p2_sp},
    {"GPT layer with GQA kv=2, 1-D T=2, equals the serial layer", test_gqa_1d_p2},
    {"Llama layer (GQA kv=2), 2-D q=2, equals the serial layer", test_llama_2d_q2},
    {"Llama layer (GQA kv=6), 2.5-D q=2 d=2, equals the serial layer", test_llama_2p5d_q2_d2},
    {"Llama layer (GQA kv=2), 3-D q=2 later, equals the serial layer", test_llama_3d_q2_later},
    {"Llama layer (GQA kv=3), 3-D q=3 paper, equals the serial layer", test_llama_3d_q3_paper},
    {"context parallelism C=2 on one GPU each equals the serial layer", test_cp2_1d_p1},
    {"context parallelism C=4, Llama layer, equals the serial layer", test_cp4_1d_p1_llama},
    {"context parallelism C=2 x 1-D T=2 with SP, Llama layer, equals the serial layer",
     test_cp2_1d_p2_sp_llama},
    {"context parallelism C=2 x 1-D T=2 equals the serial layer", test_cp2_1d_p2},
    {"context parallelism C=2 x 2-D q=2, Llama layer, equals the serial layer",
     test_cp2_2d_q2_llama},
    {"context parallelism C=2 x 2.5-D q=2 d=2 equals the serial layer", test_cp2_2p5d_q2_d2},
    {"context parallelism C=3 x 3-D q=2 later, Llama layer, equals the serial layer",
     test_cp3_3d_q2_later_llama},
    {"MLA layer on one GPU (1-D T=1) equals the serial MLA layer", test_mla_1d_p1},
    {"MLA layer (SwiGLU, RMSNorm), 1-D T=2, equals the serial MLA layer", test_mla_1d_p2},
    {"MLA layer, 1-D T=2 with SP, equals the serial MLA layer", test_mla_1d_p2_sp},
    {"MLA layer, 1-D T=4, equals the serial MLA layer", test_mla_1d_p4},
    {"MLA layer (SwiGLU, RMSNorm), 1-D T=4 with SP, equals the serial MLA layer",
     test_mla_1d_p4_sp},
    {"ring attention C=2 equals the serial layer", test_ring2_1d_p1},
    {"ring attention C=4 x 1-D T=2 with SP, Llama layer, equals the serial layer",
     test_ring4_1d_p2_sp_llama},
    {"ring attention C=3 x 2-D q=2 equals the serial layer", test_ring3_2d_q2},
    {"ring attention C=2 x 3-D q=2 later, Llama layer, equals the serial layer",
     test_ring2_3d_q2_llama},
    {"heads of 5 columns (h/a = 3), 1-D T=1, equal the serial layer", test_dh5_1d_p1},
    {"heads of 5 columns, 1-D T=2 SP Llama, equal the serial layer", test_dh5_1d_p2_sp_llama},
    {"heads of 5 columns, 1-D T=4 GQA, equal the serial layer", test_dh5_1d_p4_gqa},
    {"heads of 5 columns, 2-D q=2 Llama, equal the serial layer", test_dh5_2d_q2_llama},
    {"heads of 5 columns, 2.5-D q=2 d=2, equal the serial layer", test_dh5_2p5d_q2_d2},
    {"heads of 5 columns, 3-D q=2 later, equal the serial layer", test_dh5_3d_q2_later},
    {"heads of 5 columns, C=2 x 1-D T=2 SP Llama, equal the serial layer",
     test_dh5_cp2_1d_p2_llama},
    {"heads of 5 columns, ring C=2 x 1-D T=2, equal the serial layer", test_dh5_ring2_1d_p2},
    {"1-D T=4 equals the serial layer; recomputation changes no bit", test_1d_p4},
    {"1-D T=2 with sequence parallelism equals the serial layer; recomputation changes no bit",
     test_1d_p2_sp},
    {"1-D T=4 with sequence parallelism equals the serial layer; recomputation changes no bit",
     test_1d_p4_sp},
    {"1-D --tp-comm-overlap: ring exchanges, pipelined reduce-scatters, bulk overlaps",
     test_1d_tp_comm_overlap},
    {"2-D q=2 equals the serial layer; recomputation changes no bit", test_2d_q2},
    {"2-D q=3 equals the serial layer; recomputation changes no bit", test_2d_q3},
    {"2.5-D q=2 d=2 equals the serial layer; recomputation changes no bit", test_2p5d_q2_d2},
    {"3-D q=2 paper variant equals the serial layer; recomputation changes no bit",
     test_3d_q2_paper},
    {"3-D q=2 later variant equals the serial layer; recomputation changes no bit",
     test_3d_q2_later},
    {"3-D q=3 paper variant equals the serial layer; recomputation changes no bit",
     test_3d_q3_paper},
    {"3-D q=3 later variant equals the serial layer; recomputation changes no bit",
     test_3d_q3_later},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"distributed layer = serial layer", NULL, NULL, NULL, NULL, layers_tests},
    CU_SUITE_INFO_NULL,
};

int
main(int argc, char **argv)
{
    if (argc > 1)
        layers_seed = (guint32) strtoul(argv[1], NULL, 10);
    printf("seed %u (pass another as the first argument)\n", layers_seed);
    return simpar_test_main(suites);
}
