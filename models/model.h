/* model.h - the shapes of the transformer being trained.
 *
 * A SimparModel is plain data: hidden size h, heads a, sequence length s, micro-batch b, layers L,
 * FFN width f, vocabulary V, the element type, and the layer's flavour: key/value heads (GQA),
 * the MLP (GeLU or SwiGLU), the norm (LayerNorm or RMSNorm), experts (mixture of experts) and
 * multi-head latent attention (DeepSeek-V3's). It comes from a named preset
 * (simpar_model_preset) or from a JSON file (simpar_model_load_json), and command-line flags
 * override single fields. simpar_model_validate() refuses shapes no split could use (zero or
 * negative sizes, h not divisible by a, absurd sizes that would overflow byte counts).
 *
 *   preset "gpt3-175b" --> SimparModel { h=12288 a=96 s=2048 b=1 L=96 f=49152 V=51200 fp16 }
 *   model.json --------/
 *
 * Ownership: SimparModel is a value type; the name string is owned by the GLib string pool
 * (g_intern_string) and never freed.
 */
#ifndef SIMPAR_MODEL_H
#define SIMPAR_MODEL_H
#include <glib.h>
#include <json-glib/json-glib.h>
G_BEGIN_DECLS

#define SIMPAR_MODEL_ERROR (simpar_model_error_quark())
GQuark simpar_model_error_quark(void);

typedef enum {
    SIMPAR_MODEL_ERROR_UNKNOWN_PRESET, /* no preset of that name */
    SIMPAR_MODEL_ERROR_PARSE,          /* the model file is not the documented JSON */
    SIMPAR_MODEL_ERROR_INVALID,        /* a size is zero, negative, absurd or inconsistent */
} SimparModelError;

typedef enum {
    SIMPAR_DTYPE_FP16,
    SIMPAR_DTYPE_BF16,
    SIMPAR_DTYPE_FP32,
    SIMPAR_DTYPE_FP64,
    /* the inputs of an FP8 recipe's GEMMs (GPU peaks, GEMM tables); never a model's element
     * type: `--dtype fp8` trains in bf16 with SimparModel.fp8 set */
    SIMPAR_DTYPE_FP8,
} SimparDtype;

/* FP8 training as Transformer Engine runs it under Megatron-Core: the linears' GEMMs take FP8
 * inputs (E4M3 forward, E5M2 gradients where the recipe says so) with bf16 outputs; attention
 * core, norms, softmax, the loss and the optimizer stay in bf16 and fp32. The recipes, named
 * after Transformer Engine's (recipe.DelayedScaling, Float8CurrentScaling, MXFP8BlockScaling;
 * Megatron-LM's --fp8-recipe calls current scaling "tensorwise", accepted too):
 *   delayed  one scale per tensor from the amax history of earlier steps: the cast kernel takes
 *            the amax as it casts, one scale update per step;
 *   current  one scale per tensor from this tensor's amax: an amax pass before each cast;
 *   mxfp8    one E8M0 scale per 1 x 32 block (OCP microscaling), rowwise and columnwise copies
 *            (Blackwell tensor cores only). */
typedef enum {
    SIMPAR_FP8_NONE,
    SIMPAR_FP8_DELAYED,
    SIMPAR_FP8_CURRENT,
    SIMPAR_FP8_MXFP8,
} SimparFp8Recipe;

/* The MLP of a layer: GeLU (fc1 [h x f], gelu, fc2 [f x h]) or SwiGLU (Shazeer, arXiv
 * 2002.05202, as Llama trains it: gate and up fused into one fc1 [h x 2f], silu(gate) * up,
 * fc2 [f x h]). */
typedef enum {
    SIMPAR_MLP_GELU,
    SIMPAR_MLP_SWIGLU,
} SimparMlp;

/* The normalisation before attention and before the MLP: LayerNorm (gamma, beta) or RMSNorm
 * (Zhang and Sennrich, arXiv 1910.07467: x / rms(x) * gamma, no mean, no beta). */
typedef enum {
    SIMPAR_NORM_LAYERNORM,
    SIMPAR_NORM_RMSNORM,
} SimparNorm;

/* How a mixture-of-experts router turns its logits into scores (moe.h): softmax (Mixtral,
 * Qwen3) or sigmoid (DeepSeek-V3); either way the chosen experts' scores are normalised to sum to
 * one over the token's top-k. */
typedef enum {
    SIMPAR_ROUTER_SOFTMAX,
    SIMPAR_ROUTER_SIGMOID,
} SimparRouterScore;

/* The mixture-of-experts part of a model (all zero: a dense model). An MoE layer replaces the
 * MLP by a router [h x E], E routed experts of width moe_ffn (the model's MLP kind, no biases)
 * of which each token uses top_k, and shared experts (one dense MLP of width shared_ffn that
 * every token passes, 0: none). The first dense_layers layers keep the dense MLP of width ffn,
 * then every moe_every-th layer is an MoE layer (0 or 1: all of them). */
typedef struct {
    gint64 experts;      /* E routed experts; 0: a dense model */
    gint64 top_k;        /* experts per token */
    gint64 moe_ffn;      /* f_e: one routed expert's FFN width */
    gint64 shared_ffn;   /* all shared experts' FFN width together (S x their width) */
    gint64 dense_layers; /* the first K layers are dense */
    gint64 moe_every;    /* an MoE layer every N layers after them; 0 = 1 */
    gint64 router;       /* SimparRouterScore */
    gint64 groups;       /* node-limited routing: the experts fall into this many groups (0:
                            none), a token reaches at most group_limit of them (DeepSeek-V3's
                            n_group, topk_group) */
    gint64 group_limit;
    double capacity;       /* capacity factor: rows per (source rank, expert) over T k / E; 0 =
                              dropless */
    double imbalance;      /* the busiest expert's tokens over the mean, >= 1 (0 reads 1) */
    gint64 shared_overlap; /* 1: the shared experts run beside the dispatch and combine
                              all-to-alls (--moe-shared-expert-overlap; not a model file key) */
    gint64 hybridep;       /* 1: DeepEP's hops as Hybrid-EP runs them, each forward dispatch's
                              routing maps all-gathered over the group first (--moe-flex-backend
                              hybridep; not a model file key) */
} SimparMoeConfig;

/* Multi-head latent attention (DeepSeek-V2/V3, arXiv 2405.04434 and 2412.19437; all zero:
 * none), named as Megatron-Core's MLATransformerConfig names them. The layer's input is
 * compressed to a query latent of q_lora_rank and a key/value latent of kv_lora_rank (plus one
 * shared rotary key of qk_pos_emb_head_dim), each normalised; up projections give every head a
 * query and a key of qk_head_dim + qk_pos_emb_head_dim (the shared key part is the same for
 * every head) and a value of v_head_dim; the output projection takes a v_head_dim columns. */
typedef struct {
    gint64 q_lora_rank;         /* the query latent's width */
    gint64 kv_lora_rank;        /* the key/value latent's width; 0: no MLA */
    gint64 qk_head_dim;         /* a head's query/key columns without position embedding */
    gint64 qk_pos_emb_head_dim; /* the rotary part of query and key, one key for all heads */
    gint64 v_head_dim;          /* a head's value columns */
} SimparMlaConfig;

/* Multi-token prediction (DeepSeek-V3, arXiv 2412.19437 section 2.2; Megatron-Core's
 * megatron/core/transformer/multi_token_prediction.py): after the main model's layers, on the
 * last pipeline stage, each of mtp_layers modules k = 1..D takes the previous depth's hidden
 * state h (the main model's last one for k = 1) and the embedding e of the tokens k further,
 *
 *   [RMSNorm(e) | RMSNorm(h)] [rows x 2h] -> eh_proj M [2h x h] -> one transformer layer
 *   -> final norm -> the shared output head -> cross-entropy (weighted by lambda)
 *
 * Its layer is of the kind of the model's last layer (Megatron-Core builds it from the last
 * decoder layer's spec: DeepSeek-V3's an MoE layer with MLA); the embedding and the output head
 * are the main model's. Its own parameters: a layer, M and three norms. */
#define SIMPAR_MODEL_MAX_MTP 64

/* The largest value any size field may take; bigger ones are refused as absurd. */
#define SIMPAR_MODEL_MAX_DIM (G_GINT64_CONSTANT(1) << 24)

typedef struct {
    const char *name;   /* interned */
    gint64 hidden;      /* h */
    gint64 heads;       /* a */
    gint64 seq;         /* s */
    gint64 micro_batch; /* b */
    gint64 layers;      /* L */
    gint64 ffn;         /* f, usually 4h */
    gint64 vocab;       /* V */
    SimparDtype dtype;
    gint64 kv_heads; /* key/value heads (grouped-query attention); 0 = a (multi-head) */
    SimparMlp mlp;
    SimparNorm norm;
    gboolean no_bias;    /* linears without biases (Llama) */
    gboolean no_dropout; /* trained without dropout (Llama): no masks kept for the backward */
    gint64 fp8;          /* SimparFp8Recipe of the linears' GEMMs (dtype bf16); 0: none */
    SimparMoeConfig moe; /* mixture of experts; all zero: dense */
    SimparMlaConfig mla; /* multi-head latent attention; all zero: none */
    gint64 head_dim;     /* a head's query, key and value columns without MLA (Megatron's
                            kv_channels; Qwen3's 128 at h/a = 64); 0 = h/a */
    gint64 mtp_layers;   /* multi-token prediction's modules (DeepSeek-V3's depth D, Megatron's
                            --mtp-num-layers), below; 0: none */
} SimparModel;

typedef struct {
    const char *name;
    const char *description;
    SimparModel model;
} SimparModelPreset;

const SimparModelPreset *simpar_model_presets(guint *n_presets); /* (transfer none) */
gboolean simpar_model_preset(const char *name, SimparModel *out, GError **error);
gboolean simpar_model_load_json(const char *path, SimparModel *out, GError **error);
/* JSON files a user gives (json-file.c): at most this many bytes (model and calibration
 * files; measured runs, traces and plot inputs), at most this deep. */
#define SIMPAR_JSON_SMALL_MAX ((gsize) 16 << 20)
#define SIMPAR_JSON_LARGE_MAX ((gsize) 512 << 20)
#define SIMPAR_JSON_MAX_DEPTH 128
/* A file a user gives into *text (transfer full, NUL-terminated), refused past max_bytes (read
 * no further: /dev/zero has no end), or when it is a folder; errors name the file. For every
 * input file, JSON or not. */
gboolean simpar_file_read(const char *path, gsize max_bytes, char **text, gsize *len,
                          GError **error);
/* The builder's document as pretty JSON text (transfer full), its length in *len (may be NULL):
 * every JSON output simpar writes. */
char *simpar_json_builder_text(JsonBuilder *b, gsize *len);
/* The first members of every JSON file or row simpar writes, in the open object: "format"
 * `format` and "version" `version` (docs/schemas/). */
void simpar_json_head(JsonBuilder *b, const char *format, gint64 version);
/* The file, read, guarded (nesting deeper than SIMPAR_JSON_MAX_DEPTH, a member name twice in
 * one object, anything after the top value: what JSON-GLib would let through) and parsed; every
 * error names it. */
gboolean simpar_json_load_file(JsonParser *parser, const char *path, gsize max_bytes,
                               GError **error);
/* The same for `len` bytes of text already read from the file `path` (a trace gunzipped). */
gboolean simpar_json_parse(JsonParser *parser, const char *text, gsize len, const char *path,
                           GError **error);
/* The file's top object (transfer none: the parser's), read as simpar_json_load_file reads it;
 * NULL when it holds anything else, an error naming the file. The JSON files a user gives as
 * one object: models, calibrations, measured runs and benches. */
JsonObject *simpar_json_load_object(JsonParser *parser, const char *path, gsize max_bytes,
                                    GError **error);
/* "a, b, c": the names of a table's n rows of `row_size` bytes whose first member is their
 * `const char *` name, for help texts and errors (interned: lives as long as the process). */
const char *simpar_intern_names(gconstpointer rows, guint n, gsize row_size);
/* The builder's root (pretty-printed) into `path`; an error prefixed with "`flag` path: ". */
gboolean simpar_json_write_file(JsonBuilder *b, const char *flag, const char *path, GError **error);
gboolean simpar_model_validate(const SimparModel *model, GError **error);
/* Whether the model has routed experts; whether layer `layer` (0-based) is an MoE layer. */
gboolean simpar_model_is_moe(const SimparModel *model);
gboolean simpar_model_layer_is_moe(const SimparModel *model, gint64 layer);
/* Whether the multi-token prediction modules' layer is an MoE one: the kind of the last layer. */
gboolean simpar_model_mtp_is_moe(const SimparModel *model);
/* The MoE layers among layers [from, to) (0 for a dense model). */
gint64 simpar_model_moe_layers(const SimparModel *model, gint64 from, gint64 to);
/* Whether an MoE model has dense layers (--dense-layers, --moe-every): layers whose MLP is the
 * dense one of width ffn, with no router, dispatch, experts or all-to-alls. */
gboolean simpar_model_has_dense_layers(const SimparModel *model);
/* The model of an MoE model's dense layers: the same model without experts (*out, a copy). */
void simpar_model_dense_layer(const SimparModel *model, SimparModel *out);
const char *simpar_router_name(SimparRouterScore score);
gboolean simpar_router_parse(const char *name, SimparRouterScore *out, GError **error);

/* Whether the attention is multi-head latent attention (mla.kv_lora_rank > 0). */
gboolean simpar_model_is_mla(const SimparModel *model);
/* A head's query/key columns (MLA: qk_head_dim + qk_pos_emb_head_dim) and value columns (MLA:
 * v_head_dim); h/a each without MLA. */
gint64 simpar_model_qk_head_dim(const SimparModel *model);
gint64 simpar_model_v_head_dim(const SimparModel *model);
/* A head's columns without MLA: head_dim, or h/a when it is 0. */
gint64 simpar_model_head_dim(const SimparModel *model);
/* head_dim back to 0 where it is h/a (one model, one description). */
void simpar_model_normalise_head_dim(SimparModel *model);
/* Weights of one layer's attention: h (qkv + a dh), or MLA's five projections. */
double simpar_model_attention_weights(const SimparModel *model);
/* The key/value heads: kv_heads, or a when it is 0. */
gint64 simpar_model_kv_heads(const SimparModel *model);
/* Columns of the fused qkv projection: (a + 2 kv) h/a, 3h without grouped-query attention. */
gint64 simpar_model_qkv_cols(const SimparModel *model);
/* Columns of fc1: 2f for SwiGLU (gate and up), f for GeLU. */
gint64 simpar_model_fc1_cols(const SimparModel *model);
/* Weights of one layer's linears: the attention's + (fc1 + f) h. */
double simpar_model_layer_weights(const SimparModel *model);
/* Parameters of one layer's biases and norms: the biases' qkv + h + fc1 + h columns (none
 * without biases; MLA's projections have none but proj's), 2h per LayerNorm or h per RMSNorm,
 * and with MLA the two latent norms (q_lora_rank and kv_lora_rank wide). */
double simpar_model_layer_small_params(const SimparModel *model);
/* " kv=8 swiglu rmsnorm": what differs from a GPT layer (multi-head, GeLU, LayerNorm), for
 * the one-line model descriptions; "" for a GPT layer (interned). */
const char *simpar_model_flavour(const SimparModel *model);
const char *simpar_mlp_name(SimparMlp mlp);
gboolean simpar_mlp_parse(const char *name, SimparMlp *out, GError **error);
const char *simpar_norm_name(SimparNorm norm);
gboolean simpar_norm_parse(const char *name, SimparNorm *out, GError **error);

guint simpar_dtype_size(SimparDtype dtype);
const char *simpar_fp8_recipe_name(SimparFp8Recipe recipe);
gboolean simpar_fp8_recipe_parse(const char *name, SimparFp8Recipe *out, GError **error);
/* "bf16", or "fp8 (delayed)" for a model trained in FP8: the precision in words. */
const char *simpar_model_precision(const SimparModel *model);
const char *simpar_dtype_name(SimparDtype dtype);
gboolean simpar_dtype_parse(const char *name, SimparDtype *out, GError **error);

G_END_DECLS
#endif /* SIMPAR_MODEL_H */
