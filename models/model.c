/* model.c - transformer shape presets, the JSON model file and shape validation. */
#include "model.h"
#include "output.h"
#include <json-glib/json-glib.h>

G_DEFINE_QUARK(simpar_model_error_quark, simpar_model_error)

/* h, a, s, b, L, f, V, dtype, kv heads, MLP, norm. GPT-3 sizes from Brown et al. 2020 Table 2.1;
 * the paper-3d preset is the 64-GPU V100 setting of the Optimus harness (h=2048, a=32, s=512,
 * L=24); Llama 3 shapes from "The Llama 3 Herd of Models" (arXiv 2407.21783, Table 3: layers,
 * model dimension, FFN dimension, attention and key/value heads, vocabulary 128,000 + 256
 * special tokens as the released configs give it; pre-training sequence 8,192). */
/* The MoE part of a dense preset; the MLA part of a preset with multi-head attention. */
/* clang-format off */
#define MODEL_DENSE {0}
#define MODEL_NO_MLA {0}
/* clang-format on */

static const SimparModelPreset model_presets[] = {
    {"tiny",
     "h=64 a=4 s=32: for tests and quick looks",
     {"tiny", 64, 4, 32, 8, 2, 256, 1024, SIMPAR_DTYPE_FP32, 0, SIMPAR_MLP_GELU,
      SIMPAR_NORM_LAYERNORM, FALSE, FALSE, 0, MODEL_DENSE, MODEL_NO_MLA, 0, 0}},
    {"paper-3d",
     "h=2048 a=32 s=512 L=24, fp32: the Optimus / 3-D papers' V100 harness",
     {"paper-3d", 2048, 32, 512, 64, 24, 8192, 51200, SIMPAR_DTYPE_FP32, 0, SIMPAR_MLP_GELU,
      SIMPAR_NORM_LAYERNORM, FALSE, FALSE, 0, MODEL_DENSE, MODEL_NO_MLA, 0, 0}},
    {"default-4k",
     "h=4096 a=64 s=512 b=16 L=24 fp16: the default of simpar --topology; every mode splits it "
     "over 64 GPUs",
     {"default-4k", 4096, 64, 512, 16, 24, 16384, 51200, SIMPAR_DTYPE_FP16, 0, SIMPAR_MLP_GELU,
      SIMPAR_NORM_LAYERNORM, FALSE, FALSE, 0, MODEL_DENSE, MODEL_NO_MLA, 0, 0}},
    {"gpt3-1.3b",
     "GPT-3 XL: h=2048 a=16 s=2048 L=24",
     {"gpt3-1.3b", 2048, 16, 2048, 4, 24, 8192, 51200, SIMPAR_DTYPE_FP16, 0, SIMPAR_MLP_GELU,
      SIMPAR_NORM_LAYERNORM, FALSE, FALSE, 0, MODEL_DENSE, MODEL_NO_MLA, 0, 0}},
    {"gpt3-6.7b",
     "GPT-3 6.7B: h=4096 a=32 s=2048 L=32",
     {"gpt3-6.7b", 4096, 32, 2048, 4, 32, 16384, 51200, SIMPAR_DTYPE_FP16, 0, SIMPAR_MLP_GELU,
      SIMPAR_NORM_LAYERNORM, FALSE, FALSE, 0, MODEL_DENSE, MODEL_NO_MLA, 0, 0}},
    {"gpt3-13b",
     "GPT-3 13B: h=5120 a=40 s=2048 L=40",
     {"gpt3-13b", 5120, 40, 2048, 4, 40, 20480, 51200, SIMPAR_DTYPE_FP16, 0, SIMPAR_MLP_GELU,
      SIMPAR_NORM_LAYERNORM, FALSE, FALSE, 0, MODEL_DENSE, MODEL_NO_MLA, 0, 0}},
    {"gpt3-175b",
     "GPT-3 175B: h=12288 a=96 s=2048 L=96",
     {"gpt3-175b", 12288, 96, 2048, 1, 96, 49152, 51200, SIMPAR_DTYPE_FP16, 0, SIMPAR_MLP_GELU,
      SIMPAR_NORM_LAYERNORM, FALSE, FALSE, 0, MODEL_DENSE, MODEL_NO_MLA, 0, 0}},
    {"llama3-8b",
     "Llama 3 8B: h=4096 a=32 kv=8 s=8192 L=32 f=14336 V=128256, SwiGLU, RMSNorm, bf16",
     {"llama3-8b", 4096, 32, 8192, 1, 32, 14336, 128256, SIMPAR_DTYPE_BF16, 8, SIMPAR_MLP_SWIGLU,
      SIMPAR_NORM_RMSNORM, TRUE, TRUE, 0, MODEL_DENSE, MODEL_NO_MLA, 0, 0}},
    {"llama3-70b",
     "Llama 3 70B: h=8192 a=64 kv=8 s=8192 L=80 f=28672 V=128256, SwiGLU, RMSNorm, bf16",
     {"llama3-70b", 8192, 64, 8192, 1, 80, 28672, 128256, SIMPAR_DTYPE_BF16, 8, SIMPAR_MLP_SWIGLU,
      SIMPAR_NORM_RMSNORM, TRUE, TRUE, 0, MODEL_DENSE, MODEL_NO_MLA, 0, 0}},
    {"llama3-405b",
     "Llama 3 405B: h=16384 a=128 kv=8 s=8192 L=126 f=53248 V=128256, SwiGLU, RMSNorm, bf16",
     {"llama3-405b", 16384, 128, 8192, 1, 126, 53248, 128256, SIMPAR_DTYPE_BF16, 8,
      SIMPAR_MLP_SWIGLU, SIMPAR_NORM_RMSNORM, TRUE, TRUE, 0, MODEL_DENSE, MODEL_NO_MLA, 0, 0}},
    /* Mixtures of experts, as their released config.json files give them (sequence: the
     * pre-training length their reports give, 4K). Mixtral (Jiang et al., arXiv 2401.04088;
     * mistralai/Mixtral-8x7B-v0.1 and Mixtral-8x22B-v0.1 config.json): 8 experts, top-2,
     * softmax router. Qwen3-235B-A22B (arXiv 2505.09388; Qwen/Qwen3-235B-A22B config.json): 128
     * experts of width 1536, top-8; its attention has head_dim 128 (q 8192 wide over h = 4096),
     * here h/a = 64. DeepSeek-V3 (arXiv 2412.19437; deepseek-ai/DeepSeek-V3 config.json): 256
     * routed experts of width 2048 plus one shared, top-8 by sigmoid scores within 4 of 8 expert
     * groups, the first 3 of 61 layers dense (width 18432); multi-head latent attention with
     * q_lora_rank 1536, kv_lora_rank 512, qk_nope_head_dim 128, qk_rope_head_dim 64 and
     * v_head_dim 128 (the same config.json; docs/usage.md). It trained with one multi-token
     * prediction module (the paper's sections 2.2 and 4.2, depth D = 1; config.json's
     * num_nextn_predict_layers 1, whose layer 61 is that module; Megatron-LM's DeepSeek-V3
     * launch, examples/megatron_fsdp/sbatch_mfsdp_deepseek_v3.sh, --mtp-num-layers 1): the
     * preset has it, its 671B main-model parameters reported apart (--mtp-layers 0 for the main
     * model alone). */
    {"mixtral-8x7b",
     "Mixtral 8x7B: h=4096 a=32 kv=8 s=4096 L=32 V=32000, 8 experts f=14336 top-2",
     {"mixtral-8x7b",
      4096,
      32,
      4096,
      1,
      32,
      14336,
      32000,
      SIMPAR_DTYPE_BF16,
      8,
      SIMPAR_MLP_SWIGLU,
      SIMPAR_NORM_RMSNORM,
      TRUE,
      TRUE,
      0,
      {8, 2, 14336, 0, 0, 1, SIMPAR_ROUTER_SOFTMAX, 0, 0, 0, 1, 0, 0},
      MODEL_NO_MLA,
      0,
      0}},
    {"mixtral-8x22b",
     "Mixtral 8x22B: h=6144 a=48 kv=8 s=4096 L=56 V=32000, 8 experts f=16384 top-2",
     {"mixtral-8x22b",
      6144,
      48,
      4096,
      1,
      56,
      16384,
      32000,
      SIMPAR_DTYPE_BF16,
      8,
      SIMPAR_MLP_SWIGLU,
      SIMPAR_NORM_RMSNORM,
      TRUE,
      TRUE,
      0,
      {8, 2, 16384, 0, 0, 1, SIMPAR_ROUTER_SOFTMAX, 0, 0, 0, 1, 0, 0},
      MODEL_NO_MLA,
      0,
      0}},
    {"qwen3-235b-a22b",
     "Qwen3-235B-A22B: h=4096 a=64 kv=4 heads of 128 s=4096 L=94 V=151936, 128 experts f=1536 "
     "top-8 (Qwen/Qwen3-235B-A22B config.json)",
     {"qwen3-235b-a22b",
      4096,
      64,
      4096,
      1,
      94,
      12288,
      151936,
      SIMPAR_DTYPE_BF16,
      4,
      SIMPAR_MLP_SWIGLU,
      SIMPAR_NORM_RMSNORM,
      TRUE,
      TRUE,
      0,
      {128, 8, 1536, 0, 0, 1, SIMPAR_ROUTER_SOFTMAX, 0, 0, 0, 1, 0, 0},
      MODEL_NO_MLA,
      128,
      0}},
    {"deepseek-v3",
     "DeepSeek-V3: h=7168 a=128 s=4096 L=61 (3 dense, f=18432) V=129280, 256 experts f=2048 "
     "top-8 in 4 of 8 groups, 1 shared; MLA q 1536 kv 512, qk 128+64, v 128; 1 multi-token "
     "prediction module (arXiv 2412.19437, deepseek-ai/DeepSeek-V3 config.json)",
     {"deepseek-v3",
      7168,
      128,
      4096,
      1,
      61,
      18432,
      129280,
      SIMPAR_DTYPE_BF16,
      0,
      SIMPAR_MLP_SWIGLU,
      SIMPAR_NORM_RMSNORM,
      TRUE,
      TRUE,
      0,
      {256, 8, 2048, 2048, 3, 1, SIMPAR_ROUTER_SIGMOID, 8, 4, 0, 1, 0, 0},
      {1536, 512, 128, 64, 128},
      0,
      1}},
    /* Qwen3-30B-A3B (arXiv 2505.09388; Qwen/Qwen3-30B-A3B config.json): 48 layers of h = 2048,
     * 32 query and 4 key/value heads of 128, 128 experts of width 768, top-8, every layer MoE.
     * Kimi K2 (arXiv 2507.20534; moonshotai/Kimi-K2-Instruct config.json): DeepSeek-V3's
     * architecture with 384 routed experts and 64 heads, the first layer dense, no expert groups
     * and no multi-token prediction module; it was trained with the MuonClip optimizer, which
     * simpar prices as Adam. */
    {"qwen3-30b-a3b",
     "Qwen3-30B-A3B: h=2048 a=32 kv=4 heads of 128 s=4096 L=48 V=151936, 128 experts f=768 top-8 "
     "(Qwen/Qwen3-30B-A3B config.json)",
     {"qwen3-30b-a3b",
      2048,
      32,
      4096,
      1,
      48,
      6144,
      151936,
      SIMPAR_DTYPE_BF16,
      4,
      SIMPAR_MLP_SWIGLU,
      SIMPAR_NORM_RMSNORM,
      TRUE,
      TRUE,
      0,
      {128, 8, 768, 0, 0, 1, SIMPAR_ROUTER_SOFTMAX, 0, 0, 0, 1, 0, 0},
      MODEL_NO_MLA,
      128,
      0}},
    {"kimi-k2",
     "Kimi K2: h=7168 a=64 s=4096 L=61 (1 dense, f=18432) V=163840, 384 experts f=2048 top-8, 1 "
     "shared; MLA q 1536 kv 512, qk 128+64, v 128 (arXiv 2507.20534, moonshotai/Kimi-K2-Instruct "
     "config.json; trained with MuonClip, priced as Adam)",
     {"kimi-k2",
      7168,
      64,
      4096,
      1,
      61,
      18432,
      163840,
      SIMPAR_DTYPE_BF16,
      0,
      SIMPAR_MLP_SWIGLU,
      SIMPAR_NORM_RMSNORM,
      TRUE,
      TRUE,
      0,
      {384, 8, 2048, 2048, 1, 1, SIMPAR_ROUTER_SIGMOID, 0, 0, 0, 1, 0, 0},
      {1536, 512, 128, 64, 128},
      0,
      0}},
};

const SimparModelPreset *
simpar_model_presets(guint *n_presets)
{
    *n_presets = G_N_ELEMENTS(model_presets);
    return model_presets; /* (transfer none) */
}

gboolean
simpar_model_preset(const char *name, SimparModel *out, GError **error)
{
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    for (guint i = 0; i < G_N_ELEMENTS(model_presets); i++)
        if (g_strcmp0(model_presets[i].name, name) == 0) {
            *out = model_presets[i].model;
            out->name = g_intern_string(out->name);
            return TRUE;
        }
    g_autoptr(GString) valid = g_string_new(NULL); /* the names, for the error alone (a sweep
                                                      looks a preset up every row) */
    for (guint i = 0; i < G_N_ELEMENTS(model_presets); i++)
        g_string_append_printf(valid, "%s%s", i ? ", " : "", model_presets[i].name);
    g_set_error(error, SIMPAR_MODEL_ERROR, SIMPAR_MODEL_ERROR_UNKNOWN_PRESET,
                "--model %s: no such preset (valid: %s, or a .json file)", name, valid->str);
    return FALSE;
}

static const char *const dtype_names[] = {"fp16", "bf16", "fp32", "fp64", "fp8"};

guint
simpar_dtype_size(SimparDtype dtype)
{
    static const guint sizes[] = {2, 2, 4, 8, 1};
    g_return_val_if_fail(dtype <= SIMPAR_DTYPE_FP8, 0);
    return sizes[dtype];
}

const char *
simpar_dtype_name(SimparDtype dtype)
{
    g_return_val_if_fail(dtype <= SIMPAR_DTYPE_FP8, "?");
    return dtype_names[dtype];
}

static const char *const fp8_recipe_names[] = {"none", "delayed", "current", "mxfp8"};

const char *
simpar_fp8_recipe_name(SimparFp8Recipe recipe)
{
    g_return_val_if_fail(recipe <= SIMPAR_FP8_MXFP8, "?");
    return fp8_recipe_names[recipe];
}

gboolean
simpar_fp8_recipe_parse(const char *name, SimparFp8Recipe *out, GError **error)
{
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    for (guint i = SIMPAR_FP8_DELAYED; i < G_N_ELEMENTS(fp8_recipe_names); i++) {
        if (g_strcmp0(name, fp8_recipe_names[i]) == 0) {
            *out = (SimparFp8Recipe) i;
            return TRUE;
        }
    }
    if (g_strcmp0(name, "tensorwise") == 0) { /* Megatron-LM's name of current scaling */
        *out = SIMPAR_FP8_CURRENT;
        return TRUE;
    }
    g_set_error(error, SIMPAR_MODEL_ERROR, SIMPAR_MODEL_ERROR_INVALID,
                "FP8 recipe '%s' is not one of delayed (per-tensor scales from the amax history), "
                "current (per-tensor scales from each tensor's amax; Megatron's tensorwise), "
                "mxfp8 (1 x 32 block scales, Blackwell)",
                name);
    return FALSE;
}

const char *
simpar_model_precision(const SimparModel *model)
{
    g_return_val_if_fail(model != NULL, "?");
    if (model->fp8 == SIMPAR_FP8_NONE)
        return simpar_dtype_name(model->dtype);
    g_autofree char *s = g_strdup_printf("fp8 (%s)", simpar_fp8_recipe_name(model->fp8));
    return g_intern_string(s);
}

gboolean
simpar_dtype_parse(const char *name, SimparDtype *out, GError **error)
{
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    for (guint i = 0; i <= SIMPAR_DTYPE_FP64; i++) { /* a model's types: not fp8 */
        if (g_strcmp0(name, dtype_names[i]) == 0) {
            *out = (SimparDtype) i;
            return TRUE;
        }
    }
    g_set_error(error, SIMPAR_MODEL_ERROR, SIMPAR_MODEL_ERROR_INVALID,
                "dtype '%s' is not one of fp16, bf16, fp32, fp64", name);
    return FALSE;
}

static const char *const mlp_names[] = {"gelu", "swiglu"};
static const char *const norm_names[] = {"layernorm", "rmsnorm"};

/* The index of `name` in names[n] into *out; else an error naming `what` and the valid names. */
static gboolean
model_name_parse(const char *const *names, guint n, const char *what, const char *name, int *out,
                 GError **error)
{
    for (guint i = 0; i < n; i++)
        if (g_strcmp0(name, names[i]) == 0) {
            *out = (int) i;
            return TRUE;
        }
    g_set_error(error, SIMPAR_MODEL_ERROR, SIMPAR_MODEL_ERROR_INVALID, "%s '%s' is not one of %s",
                what, name, simpar_intern_names(names, n, sizeof names[0]));
    return FALSE;
}

const char *
simpar_mlp_name(SimparMlp mlp)
{
    g_return_val_if_fail(mlp <= SIMPAR_MLP_SWIGLU, "?");
    return mlp_names[mlp];
}

gboolean
simpar_mlp_parse(const char *name, SimparMlp *out, GError **error)
{
    int i;
    if (!model_name_parse(mlp_names, G_N_ELEMENTS(mlp_names), "mlp", name, &i, error))
        return FALSE;
    *out = (SimparMlp) i;
    return TRUE;
}

const char *
simpar_norm_name(SimparNorm norm)
{
    g_return_val_if_fail(norm <= SIMPAR_NORM_RMSNORM, "?");
    return norm_names[norm];
}

gboolean
simpar_norm_parse(const char *name, SimparNorm *out, GError **error)
{
    int i;
    if (!model_name_parse(norm_names, G_N_ELEMENTS(norm_names), "norm", name, &i, error))
        return FALSE;
    *out = (SimparNorm) i;
    return TRUE;
}

static const char *const router_names[] = {"softmax", "sigmoid"};

const char *
simpar_router_name(SimparRouterScore score)
{
    g_return_val_if_fail(score <= SIMPAR_ROUTER_SIGMOID, "?");
    return router_names[score];
}

gboolean
simpar_router_parse(const char *name, SimparRouterScore *out, GError **error)
{
    int i;
    if (!model_name_parse(router_names, G_N_ELEMENTS(router_names), "router", name, &i, error))
        return FALSE;
    *out = (SimparRouterScore) i;
    return TRUE;
}

gboolean
simpar_model_is_moe(const SimparModel *m)
{
    return m->moe.experts > 0;
}

gboolean
simpar_model_layer_is_moe(const SimparModel *m, gint64 layer)
{
    gint64 every = MAX(m->moe.moe_every, 1);
    return simpar_model_is_moe(m) && layer >= m->moe.dense_layers &&
           (layer - m->moe.dense_layers) % every == 0;
}

gboolean
simpar_model_mtp_is_moe(const SimparModel *m)
{
    return simpar_model_layer_is_moe(m, m->layers - 1);
}

/* The MoE layers among [0, n): from layer K on, one in every N, the first at K. */
static gint64
model_moe_layers_below(const SimparModel *m, gint64 n)
{
    gint64 every = MAX(m->moe.moe_every, 1), after = n - m->moe.dense_layers;
    return !simpar_model_is_moe(m) || after <= 0 ? 0 : (after + every - 1) / every;
}

gint64
simpar_model_moe_layers(const SimparModel *m, gint64 from, gint64 to)
{
    g_return_val_if_fail(from <= to, 0);
    return model_moe_layers_below(m, to) - model_moe_layers_below(m, from);
}

gboolean
simpar_model_has_dense_layers(const SimparModel *m)
{
    return simpar_model_is_moe(m) && simpar_model_moe_layers(m, 0, m->layers) < m->layers;
}

void
simpar_model_dense_layer(const SimparModel *m, SimparModel *out)
{
    *out = *m;
    out->moe = (SimparMoeConfig){0};
}

const char *
simpar_model_flavour(const SimparModel *m)
{
    g_autoptr(GString) s = g_string_new(NULL);
    if (simpar_model_kv_heads(m) != m->heads)
        g_string_append_printf(s, " kv=%" G_GINT64_FORMAT, simpar_model_kv_heads(m));
    if (m->head_dim != 0)
        g_string_append_printf(s, " dh=%" G_GINT64_FORMAT, m->head_dim);
    if (m->mlp != SIMPAR_MLP_GELU)
        g_string_append_printf(s, " %s", simpar_mlp_name(m->mlp));
    if (m->norm != SIMPAR_NORM_LAYERNORM)
        g_string_append_printf(s, " %s", simpar_norm_name(m->norm));
    if (m->no_bias)
        g_string_append(s, " no-bias");
    if (m->no_dropout)
        g_string_append(s, " no-dropout");
    if (simpar_model_is_moe(m))
        g_string_append_printf(
            s, " moe=%" G_GINT64_FORMAT "x%" G_GINT64_FORMAT " top-%" G_GINT64_FORMAT,
            m->moe.experts, m->moe.moe_ffn, m->moe.top_k);
    if (simpar_model_is_mla(m))
        g_string_append_printf(s, " mla=%" G_GINT64_FORMAT "/%" G_GINT64_FORMAT, m->mla.q_lora_rank,
                               m->mla.kv_lora_rank);
    if (m->mtp_layers > 0)
        g_string_append_printf(s, " mtp=%" G_GINT64_FORMAT, m->mtp_layers);
    return g_intern_string(s->str);
}

gboolean
simpar_model_is_mla(const SimparModel *m)
{
    return m->mla.kv_lora_rank > 0;
}

gint64
simpar_model_qk_head_dim(const SimparModel *m)
{
    return simpar_model_is_mla(m) ? m->mla.qk_head_dim + m->mla.qk_pos_emb_head_dim
                                  : simpar_model_head_dim(m);
}

gint64
simpar_model_v_head_dim(const SimparModel *m)
{
    return simpar_model_is_mla(m) ? m->mla.v_head_dim : simpar_model_head_dim(m);
}

gint64
simpar_model_head_dim(const SimparModel *m)
{
    return m->head_dim != 0 ? m->head_dim : m->hidden / m->heads;
}

void
simpar_model_normalise_head_dim(SimparModel *m)
{
    if (m->heads > 0 && m->hidden % m->heads == 0 && m->head_dim == m->hidden / m->heads)
        m->head_dim = 0;
}

/* MLA: q_down [h x q_lora], q_up [q_lora x a (qk + rope)], kv_down [h x (kv_lora + rope)],
 * kv_up [kv_lora x a (qk + v)], proj [a v x h]. */
double
simpar_model_attention_weights(const SimparModel *m)
{
    double h = (double) m->hidden, a = (double) m->heads;
    if (!simpar_model_is_mla(m)) /* qkv [h x (a + 2 kv) dh], proj [a dh x h] */
        return h * ((double) simpar_model_qkv_cols(m) + a * (double) simpar_model_head_dim(m));
    const SimparMlaConfig *l = &m->mla;
    double q = (double) l->q_lora_rank, kv = (double) l->kv_lora_rank;
    double qk = (double) simpar_model_qk_head_dim(m), v = (double) l->v_head_dim;
    return h * q + q * a * qk + h * (kv + (double) l->qk_pos_emb_head_dim) +
           kv * a * ((double) l->qk_head_dim + v) + a * v * h;
}

gint64
simpar_model_kv_heads(const SimparModel *m)
{
    return m->kv_heads != 0 ? m->kv_heads : m->heads;
}

gint64
simpar_model_qkv_cols(const SimparModel *m)
{
    return (m->heads + 2 * simpar_model_kv_heads(m)) * simpar_model_head_dim(m);
}

gint64
simpar_model_fc1_cols(const SimparModel *m)
{
    return m->mlp == SIMPAR_MLP_SWIGLU ? 2 * m->ffn : m->ffn;
}

double
simpar_model_layer_weights(const SimparModel *m)
{
    double h = (double) m->hidden, f = (double) m->ffn;
    return simpar_model_attention_weights(m) + ((double) simpar_model_fc1_cols(m) + f) * h;
}

double
simpar_model_layer_small_params(const SimparModel *m)
{
    double h = (double) m->hidden, per_col = m->norm == SIMPAR_NORM_RMSNORM ? 1 : 2;
    double qkv = simpar_model_is_mla(m) ? 0 : (double) simpar_model_qkv_cols(m);
    double biases = m->no_bias ? 0 : qkv + h + (double) simpar_model_fc1_cols(m) + h;
    double latents =
        simpar_model_is_mla(m) ? (double) (m->mla.q_lora_rank + m->mla.kv_lora_rank) : 0;
    return biases + per_col * (2 * h + latents);
}

/* ----- JSON model file ----- */

typedef struct {
    const char *key;
    gsize offset;
} ModelField;

static const ModelField model_fields[] = {
    {"hidden", G_STRUCT_OFFSET(SimparModel, hidden)},
    {"heads", G_STRUCT_OFFSET(SimparModel, heads)},
    {"seq", G_STRUCT_OFFSET(SimparModel, seq)},
    {"micro_batch", G_STRUCT_OFFSET(SimparModel, micro_batch)},
    {"layers", G_STRUCT_OFFSET(SimparModel, layers)},
    {"ffn", G_STRUCT_OFFSET(SimparModel, ffn)},
    {"vocab", G_STRUCT_OFFSET(SimparModel, vocab)},
    {"kv_heads", G_STRUCT_OFFSET(SimparModel, kv_heads)},
    {"experts", G_STRUCT_OFFSET(SimparModel, moe.experts)},
    {"top_k", G_STRUCT_OFFSET(SimparModel, moe.top_k)},
    {"moe_ffn", G_STRUCT_OFFSET(SimparModel, moe.moe_ffn)},
    {"shared_ffn", G_STRUCT_OFFSET(SimparModel, moe.shared_ffn)},
    {"dense_layers", G_STRUCT_OFFSET(SimparModel, moe.dense_layers)},
    {"moe_every", G_STRUCT_OFFSET(SimparModel, moe.moe_every)},
    {"expert_groups", G_STRUCT_OFFSET(SimparModel, moe.groups)},
    {"group_limit", G_STRUCT_OFFSET(SimparModel, moe.group_limit)},
    {"q_lora_rank", G_STRUCT_OFFSET(SimparModel, mla.q_lora_rank)},
    {"kv_lora_rank", G_STRUCT_OFFSET(SimparModel, mla.kv_lora_rank)},
    {"qk_head_dim", G_STRUCT_OFFSET(SimparModel, mla.qk_head_dim)},
    {"qk_pos_emb_head_dim", G_STRUCT_OFFSET(SimparModel, mla.qk_pos_emb_head_dim)},
    {"v_head_dim", G_STRUCT_OFFSET(SimparModel, mla.v_head_dim)},
    {"head_dim", G_STRUCT_OFFSET(SimparModel, head_dim)},
    {"mtp_layers", G_STRUCT_OFFSET(SimparModel, mtp_layers)},
};

typedef struct {
    const char *key;
    gsize offset;
} ModelReal;

static const ModelReal model_reals[] = {
    {"capacity_factor", G_STRUCT_OFFSET(SimparModel, moe.capacity)},
    {"imbalance", G_STRUCT_OFFSET(SimparModel, moe.imbalance)},
};

static gboolean
model_read_int(JsonObject *obj, const char *path, const char *key, gint64 *out, GError **error)
{
    JsonNode *node = json_object_get_member(obj, key);
    if (node == NULL)
        return TRUE; /* optional: keeps the default */
    if (!JSON_NODE_HOLDS_VALUE(node) || json_node_get_value_type(node) != G_TYPE_INT64) {
        g_set_error(error, SIMPAR_MODEL_ERROR, SIMPAR_MODEL_ERROR_PARSE,
                    "%s: \"%s\" must be an integer", path, key);
        return FALSE;
    }
    *out = json_node_get_int(node);
    return TRUE;
}

static gboolean
model_read_real(JsonObject *obj, const char *path, const char *key, double *out, GError **error)
{
    JsonNode *node = json_object_get_member(obj, key);
    if (node == NULL)
        return TRUE;
    GType t = JSON_NODE_HOLDS_VALUE(node) ? json_node_get_value_type(node) : G_TYPE_INVALID;
    if (t != G_TYPE_INT64 && t != G_TYPE_DOUBLE) {
        g_set_error(error, SIMPAR_MODEL_ERROR, SIMPAR_MODEL_ERROR_PARSE,
                    "%s: \"%s\" must be a number", path, key);
        return FALSE;
    }
    *out = json_node_get_double(node);
    return TRUE;
}

/* A string member, or `fallback` when absent; anything but a string is an error. */
static gboolean
model_read_string(JsonObject *obj, const char *path, const char *key, const char *fallback,
                  const char **out, GError **error)
{
    JsonNode *node = json_object_get_member(obj, key);
    *out = fallback;
    if (node == NULL)
        return TRUE;
    if (!JSON_NODE_HOLDS_VALUE(node) || json_node_get_value_type(node) != G_TYPE_STRING) {
        g_set_error(error, SIMPAR_MODEL_ERROR, SIMPAR_MODEL_ERROR_PARSE,
                    "%s: \"%s\" must be a string", path, key);
        return FALSE;
    }
    *out = json_node_get_string(node);
    return TRUE;
}

/* An optional boolean `key` (true: the model has it); `*absent` set to its negation. */
static gboolean
model_read_switch(JsonObject *obj, const char *path, const char *key, gboolean *absent,
                  GError **error)
{
    JsonNode *node = json_object_get_member(obj, key);
    if (node == NULL)
        return TRUE;
    if (!JSON_NODE_HOLDS_VALUE(node) || json_node_get_value_type(node) != G_TYPE_BOOLEAN) {
        g_set_error(error, SIMPAR_MODEL_ERROR, SIMPAR_MODEL_ERROR_PARSE,
                    "%s: \"%s\" must be true or false", path, key);
        return FALSE;
    }
    *absent = !json_node_get_boolean(node);
    return TRUE;
}

static gboolean
model_check_keys(JsonObject *obj, const char *path, GError **error)
{
    g_autoptr(GList) members = json_object_get_members(obj);
    for (GList *l = members; l != NULL; l = l->next) {
        const char *key = l->data;
        gboolean known = g_str_equal(key, "name") || g_str_equal(key, "dtype") ||
                         g_str_equal(key, "base") || g_str_equal(key, "mlp") ||
                         g_str_equal(key, "norm") || g_str_equal(key, "bias") ||
                         g_str_equal(key, "dropout") || g_str_equal(key, "router");
        for (guint i = 0; i < G_N_ELEMENTS(model_fields); i++)
            known = known || g_str_equal(key, model_fields[i].key);
        for (guint i = 0; i < G_N_ELEMENTS(model_reals); i++)
            known = known || g_str_equal(key, model_reals[i].key);
        if (!known) {
            g_set_error(error, SIMPAR_MODEL_ERROR, SIMPAR_MODEL_ERROR_PARSE,
                        "%s: unknown key \"%s\" (valid: name, base, hidden, heads, kv_heads, "
                        "seq, micro_batch, layers, ffn, vocab, dtype, mlp, norm, bias, dropout, "
                        "experts, top_k, moe_ffn, shared_ffn, dense_layers, moe_every, router, "
                        "expert_groups, group_limit, capacity_factor, imbalance, q_lora_rank, "
                        "kv_lora_rank, qk_head_dim, qk_pos_emb_head_dim, v_head_dim, head_dim, "
                        "mtp_layers)",
                        path, key);
            return FALSE;
        }
    }
    return TRUE;
}

static gboolean
model_read_object(JsonObject *obj, const char *path, SimparModel *m, GError **error)
{
    if (!model_check_keys(obj, path, error))
        return FALSE;
    const char *base, *name, *dtype, *mlp, *norm, *router;
    if (!model_read_string(obj, path, "base", "tiny", &base, error) ||
        !model_read_string(obj, path, "name", path, &name, error) ||
        !model_read_string(obj, path, "dtype", NULL, &dtype, error) ||
        !model_read_string(obj, path, "mlp", NULL, &mlp, error) ||
        !model_read_string(obj, path, "norm", NULL, &norm, error) ||
        !model_read_string(obj, path, "router", NULL, &router, error))
        return FALSE;
    if (!simpar_model_preset(base, m, error)) {
        g_prefix_error(error, "%s: \"base\": ", path);
        return FALSE;
    }
    m->name = g_intern_string(name);
    for (guint i = 0; i < G_N_ELEMENTS(model_fields); i++) {
        gint64 *field = G_STRUCT_MEMBER_P(m, model_fields[i].offset);
        if (!model_read_int(obj, path, model_fields[i].key, field, error))
            return FALSE;
    }
    for (guint i = 0; i < G_N_ELEMENTS(model_reals); i++) {
        double *field = G_STRUCT_MEMBER_P(m, model_reals[i].offset);
        if (!model_read_real(obj, path, model_reals[i].key, field, error))
            return FALSE;
    }
    SimparRouterScore score;
    if (router != NULL && !simpar_router_parse(router, &score, error)) {
        g_prefix_error(error, "%s: \"router\": ", path);
        return FALSE;
    }
    if (router != NULL)
        m->moe.router = score;
    if (!model_read_switch(obj, path, "bias", &m->no_bias, error) ||
        !model_read_switch(obj, path, "dropout", &m->no_dropout, error))
        return FALSE;
    if (json_object_has_member(obj, "kv_heads") && m->kv_heads == 0) {
        g_set_error(error, SIMPAR_MODEL_ERROR, SIMPAR_MODEL_ERROR_INVALID,
                    "%s: \"kv_heads\" 0 is out of range: it must be between 1 and \"heads\"", path);
        return FALSE;
    }
    if (dtype != NULL && !simpar_dtype_parse(dtype, &m->dtype, error)) {
        g_prefix_error(error, "%s: \"dtype\": ", path);
        return FALSE;
    }
    if (mlp != NULL && !simpar_mlp_parse(mlp, &m->mlp, error)) {
        g_prefix_error(error, "%s: \"mlp\": ", path);
        return FALSE;
    }
    if (norm != NULL && !simpar_norm_parse(norm, &m->norm, error)) {
        g_prefix_error(error, "%s: \"norm\": ", path);
        return FALSE;
    }
    return TRUE;
}

/* The sizes checked, named as flags (the command line) or as keys (a model file). */
enum {
    DIM_HIDDEN,
    DIM_HEADS,
    DIM_SEQ,
    DIM_MICRO_BATCH,
    DIM_LAYERS,
    DIM_FFN,
    DIM_VOCAB,
    DIM_KV_HEADS,
    N_DIMS
};

static const char *const dim_flags[N_DIMS] = {"--hidden", "--heads", "--seq",   "--micro-batch",
                                              "--layers", "--ffn",   "--vocab", "--kv-heads"};
static const char *const dim_keys[N_DIMS] = {"\"hidden\"",      "\"heads\"",   "\"seq\"",
                                             "\"micro_batch\"", "\"layers\"",  "\"ffn\"",
                                             "\"vocab\"",       "\"kv_heads\""};

/* The MoE fields, named as flags or as model-file keys. */
enum {
    MOE_EXPERTS,
    MOE_TOP_K,
    MOE_FFN,
    MOE_SHARED,
    MOE_DENSE,
    MOE_EVERY,
    MOE_GROUPS,
    MOE_LIMIT,
    MOE_CAPACITY,
    MOE_IMBALANCE,
    N_MOE
};

static const char *const moe_flags[N_MOE] = {
    "--experts",   "--topk",          "--moe-ffn",     "--shared-ffn",      "--dense-layers",
    "--moe-every", "--expert-groups", "--group-limit", "--capacity-factor", "--imbalance"};
static const char *const moe_keys[N_MOE] = {
    "\"experts\"",         "\"top_k\"",     "\"moe_ffn\"",       "\"shared_ffn\"",
    "\"dense_layers\"",    "\"moe_every\"", "\"expert_groups\"", "\"group_limit\"",
    "\"capacity_factor\"", "\"imbalance\""};

static gboolean
model_moe_range(const char *name, gint64 value, gint64 lo, gint64 hi, const char *why,
                GError **error)
{
    if (value >= lo && value <= hi)
        return TRUE;
    g_set_error(error, SIMPAR_MODEL_ERROR, SIMPAR_MODEL_ERROR_INVALID,
                "%s %" G_GINT64_FORMAT " is out of range: it must be between %" G_GINT64_FORMAT
                " and %" G_GINT64_FORMAT " (%s)",
                name, value, lo, hi, why);
    return FALSE;
}

static gboolean
model_validate_moe(const SimparModel *m, gboolean flags, GError **error)
{
    const char *const *n = flags ? moe_flags : moe_keys;
    const SimparMoeConfig *e = &m->moe;
    if (e->experts == 0) { /* dense: the other MoE fields must be unset */
        const gint64 given[] = {e->top_k, e->moe_ffn, e->shared_ffn, e->groups, e->group_limit};
        const guint which[] = {MOE_TOP_K, MOE_FFN, MOE_SHARED, MOE_GROUPS, MOE_LIMIT};
        for (guint i = 0; i < G_N_ELEMENTS(given); i++)
            if (given[i] != 0) {
                g_set_error(error, SIMPAR_MODEL_ERROR, SIMPAR_MODEL_ERROR_INVALID,
                            "%s %" G_GINT64_FORMAT " needs %s: the model is dense (no experts)",
                            n[which[i]], given[i], n[MOE_EXPERTS]);
                return FALSE;
            }
        return TRUE;
    }
    gint64 per_group = e->groups > 0 ? e->experts / e->groups : e->experts;
    if (!model_moe_range(n[MOE_EXPERTS], e->experts, 1, 65536, "routed experts", error) ||
        !model_moe_range(n[MOE_TOP_K], e->top_k, 1, e->experts, "each token's experts, at most E",
                         error) ||
        !model_moe_range(n[MOE_FFN], e->moe_ffn, 1, SIMPAR_MODEL_MAX_DIM, "an expert's FFN width",
                         error) ||
        !model_moe_range(n[MOE_SHARED], e->shared_ffn, 0, SIMPAR_MODEL_MAX_DIM,
                         "the shared experts' FFN width, 0 for none", error) ||
        !model_moe_range(n[MOE_DENSE], e->dense_layers, 0, m->layers - 1,
                         "dense layers before the first MoE layer", error) ||
        !model_moe_range(n[MOE_EVERY], e->moe_every, 0, m->layers, "an MoE layer every N layers",
                         error) ||
        !model_moe_range(n[MOE_GROUPS], e->groups, 0, e->experts,
                         "expert groups of node-limited routing, 0 for none", error) ||
        !model_moe_range(n[MOE_LIMIT], e->group_limit, e->groups > 0 ? 1 : 0, e->groups,
                         "the groups (nodes) a token may reach: 1 to --expert-groups", error))
        return FALSE;
    if (e->groups > 0 && (e->experts % e->groups != 0 || e->top_k > e->group_limit * per_group)) {
        g_set_error(error, SIMPAR_MODEL_ERROR, SIMPAR_MODEL_ERROR_INVALID,
                    "%s %" G_GINT64_FORMAT " must divide %s %" G_GINT64_FORMAT
                    " and %s %" G_GINT64_FORMAT " groups must hold %s %" G_GINT64_FORMAT " experts",
                    n[MOE_GROUPS], e->groups, n[MOE_EXPERTS], e->experts, n[MOE_LIMIT],
                    e->group_limit, n[MOE_TOP_K], e->top_k);
        return FALSE;
    }
    if (!(e->capacity >= 0 && e->capacity <= 1e6) ||
        !(e->imbalance == 0 || (e->imbalance >= 1 && e->imbalance <= 1e6))) {
        g_set_error(error, SIMPAR_MODEL_ERROR, SIMPAR_MODEL_ERROR_INVALID,
                    "%s %g must be positive (0: dropless) and %s %g at least 1 (the busiest "
                    "expert's tokens over the mean)",
                    n[MOE_CAPACITY], e->capacity, n[MOE_IMBALANCE], e->imbalance);
        return FALSE;
    }
    return TRUE;
}

/* The MLA fields, named as flags or as model-file keys. */
enum {
    MLA_Q,
    MLA_KV,
    MLA_QK,
    MLA_ROPE,
    MLA_V,
    N_MLA
};

static const char *const mla_flags[N_MLA] = {"--q-lora-rank", "--kv-lora-rank", "--qk-head-dim",
                                             "--qk-pos-emb-head-dim", "--v-head-dim"};
static const char *const mla_keys[N_MLA] = {"\"q_lora_rank\"", "\"kv_lora_rank\"",
                                            "\"qk_head_dim\"", "\"qk_pos_emb_head_dim\"",
                                            "\"v_head_dim\""};

static gboolean
model_validate_mla(const SimparModel *m, gboolean flags, GError **error)
{
    const char *const *n = flags ? mla_flags : mla_keys;
    const SimparMlaConfig *l = &m->mla;
    const gint64 value[N_MLA] = {l->q_lora_rank, l->kv_lora_rank, l->qk_head_dim,
                                 l->qk_pos_emb_head_dim, l->v_head_dim};
    if (l->kv_lora_rank == 0) { /* no MLA: the other fields must be unset */
        for (guint i = 0; i < N_MLA; i++)
            if (value[i] != 0) {
                g_set_error(error, SIMPAR_MODEL_ERROR, SIMPAR_MODEL_ERROR_INVALID,
                            "%s %" G_GINT64_FORMAT " needs %s between 1 and %" G_GINT64_FORMAT
                            ": without a key/value latent the attention is not MLA",
                            n[i], value[i], n[MLA_KV], SIMPAR_MODEL_MAX_DIM);
                return FALSE;
            }
        return TRUE;
    }
    const char *why[N_MLA] = {"the query latent's width; simpar models the compressed query",
                              "the key/value latent's width, 0 for no MLA",
                              "a head's query/key columns without position embedding",
                              "the shared rotary key columns, 0 for none",
                              "a head's value columns"};
    const guint order[N_MLA] = {MLA_KV, MLA_Q, MLA_QK, MLA_ROPE, MLA_V};
    for (guint j = 0; j < N_MLA; j++) {
        guint i = order[j];
        if (!model_moe_range(n[i], value[i], i == MLA_ROPE ? 0 : 1, SIMPAR_MODEL_MAX_DIM, why[i],
                             error))
            return FALSE;
    }
    if (simpar_model_kv_heads(m) != m->heads) {
        g_set_error(error, SIMPAR_MODEL_ERROR, SIMPAR_MODEL_ERROR_INVALID,
                    "%s %" G_GINT64_FORMAT " with %s %" G_GINT64_FORMAT
                    ": multi-head latent attention gives every head its own key and value (kv "
                    "heads must equal heads)",
                    n[MLA_KV], l->kv_lora_rank, flags ? "--kv-heads" : "\"kv_heads\"",
                    simpar_model_kv_heads(m));
        return FALSE;
    }
    return TRUE;
}

static gboolean
model_validate(const SimparModel *m, const char *const name[N_DIMS], GError **error)
{
    const gint64 value[N_DIMS] = {m->hidden, m->heads, m->seq,   m->micro_batch,
                                  m->layers, m->ffn,   m->vocab, simpar_model_kv_heads(m)};
    /* kv_heads 0 stands for "a" in a SimparModel; a model file or flag that gives 0 is refused
     * where it is read */
    for (guint i = 0; i < N_DIMS; i++) {
        if (value[i] < 1 || value[i] > SIMPAR_MODEL_MAX_DIM) {
            g_set_error(error, SIMPAR_MODEL_ERROR, SIMPAR_MODEL_ERROR_INVALID,
                        "%s %" G_GINT64_FORMAT " is out of range: it must be between 1 and "
                        "%" G_GINT64_FORMAT,
                        name[i], value[i], SIMPAR_MODEL_MAX_DIM);
            return FALSE;
        }
    }
    if (m->head_dim != 0 &&
        (m->head_dim < 1 || m->head_dim > SIMPAR_MODEL_MAX_DIM || simpar_model_is_mla(m))) {
        g_set_error(error, SIMPAR_MODEL_ERROR, SIMPAR_MODEL_ERROR_INVALID,
                    "%s %" G_GINT64_FORMAT ": valid is a head's columns from 1 to %" G_GINT64_FORMAT
                    " (0: h/a)%s",
                    name == dim_flags ? "--head-dim" : "\"head_dim\"", m->head_dim,
                    SIMPAR_MODEL_MAX_DIM,
                    simpar_model_is_mla(m) ? ", without multi-head latent attention (MLA's heads "
                                             "are qk_head_dim + qk_pos_emb_head_dim and "
                                             "v_head_dim wide)"
                                           : "");
        return FALSE;
    }
    if (m->hidden % m->heads != 0 && m->head_dim == 0) {
        g_set_error(error, SIMPAR_MODEL_ERROR, SIMPAR_MODEL_ERROR_INVALID,
                    "%s %" G_GINT64_FORMAT " is not divisible by %s %" G_GINT64_FORMAT
                    ": every head needs h/a columns (or give the heads' width, --head-dim)",
                    name[DIM_HIDDEN], m->hidden, name[DIM_HEADS], m->heads);
        return FALSE;
    }
    if (m->heads % simpar_model_kv_heads(m) != 0) {
        g_set_error(error, SIMPAR_MODEL_ERROR, SIMPAR_MODEL_ERROR_INVALID,
                    "%s %" G_GINT64_FORMAT " is not divisible by %s %" G_GINT64_FORMAT
                    ": every key/value head serves the same number of query heads (1 <= kv "
                    "heads <= heads)",
                    name[DIM_HEADS], m->heads, name[DIM_KV_HEADS], simpar_model_kv_heads(m));
        return FALSE;
    }
    if (m->fp8 != SIMPAR_FP8_NONE && (m->fp8 > SIMPAR_FP8_MXFP8 || m->dtype != SIMPAR_DTYPE_BF16)) {
        g_set_error(error, SIMPAR_MODEL_ERROR, SIMPAR_MODEL_ERROR_INVALID,
                    "FP8 training keeps bf16 outside the linears' GEMMs: the dtype must be bf16 "
                    "(--dtype fp8 sets it)");
        return FALSE;
    }
    if (m->mtp_layers < 0 || m->mtp_layers > SIMPAR_MODEL_MAX_MTP) {
        g_set_error(error, SIMPAR_MODEL_ERROR, SIMPAR_MODEL_ERROR_INVALID,
                    "%s %" G_GINT64_FORMAT ": valid is 0 (no multi-token prediction) to %d "
                    "modules, each predicting one token further",
                    name == dim_flags ? "--mtp-layers" : "\"mtp_layers\"", m->mtp_layers,
                    SIMPAR_MODEL_MAX_MTP);
        return FALSE;
    }
    if (!model_validate_moe(m, name == dim_flags, error) ||
        !model_validate_mla(m, name == dim_flags, error))
        return FALSE;
    if (m->micro_batch * m->seq > SIMPAR_MODEL_MAX_DIM * 16) {
        g_set_error(error, SIMPAR_MODEL_ERROR, SIMPAR_MODEL_ERROR_INVALID,
                    "%s %" G_GINT64_FORMAT " x %s %" G_GINT64_FORMAT
                    " tokens is absurd: at most %" G_GINT64_FORMAT " tokens per micro-batch",
                    name[DIM_MICRO_BATCH], m->micro_batch, name[DIM_SEQ], m->seq,
                    SIMPAR_MODEL_MAX_DIM * 16);
        return FALSE;
    }
    return TRUE;
}

const char *
simpar_intern_names(gconstpointer rows, guint n, gsize row_size)
{
    g_autoptr(GString) s = g_string_new(NULL);
    for (guint i = 0; i < n; i++)
        g_string_append_printf(s, "%s%s", i ? ", " : "",
                               *(const char *const *) ((const char *) rows + i * row_size));
    return g_intern_string(s->str);
}

gboolean
simpar_json_write_file(JsonBuilder *b, const char *flag, const char *path, GError **error)
{
    gsize len;
    g_autofree char *text = simpar_json_builder_text(b, &len);
    return simpar_output_write(flag, path, text, len, error);
}

/* The file is one JSON object: {"name": "...", "base": "<preset>", "hidden": 4096, ...}; keys
 * not given keep the base preset's values (default base: "tiny"). */
gboolean
simpar_model_load_json(const char *path, SimparModel *out, GError **error)
{
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    g_autoptr(JsonParser) parser = json_parser_new();
    JsonObject *o = simpar_json_load_object(parser, path, SIMPAR_JSON_SMALL_MAX, error);
    SimparModel m;
    if (o == NULL || !model_read_object(o, path, &m, error))
        return FALSE;
    if (!model_validate(&m, dim_keys, error)) {
        g_prefix_error(error, "%s: ", path);
        return FALSE;
    }
    simpar_model_normalise_head_dim(&m);
    *out = m;
    return TRUE;
}

gboolean
simpar_model_validate(const SimparModel *m, GError **error)
{
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    return model_validate(m, dim_flags, error);
}
