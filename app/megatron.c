/* megatron.c - Megatron-LM arguments as simpar's flags (megatron.h). Names and defaults from
 * NVIDIA/Megatron-LM megatron/training/arguments.py at tag core_v0.12.0 (the padded vocabulary:
 * megatron/training/tokenizer/tokenizer.py, _vocab_size_with_padding). */
#include "megatron.h"
#include "generators.h"
#include "megatron-private.h"
#include "model.h"
#include <math.h>
#include <stdio.h>
#include <string.h>

G_DEFINE_QUARK(simpar_megatron_error_quark, simpar_megatron_error)

typedef struct {
    char *name;  /* without the leading dashes */
    char *value; /* NULL: a switch; a list's values joined by blanks */
    guint line;
    gboolean resolved, used;
    char *other; /* a second, different value given (NULL: none), at other_line */
    guint other_line;
} MegFlag;

struct _SimparMegatron {
    char *file;
    GPtrArray *flags;  /* MegFlag, in order of first appearance */
    GHashTable *index; /* name -> MegFlag (borrowed) */
    GPtrArray *argv;   /* simpar's flags, NULL-terminated */
    GPtrArray *used;   /* pairs: Megatron's words, simpar's */
    GPtrArray *notes;  /* pairs: flag, why it was ignored */
};

static void
meg_flag_free(gpointer p)
{
    MegFlag *f = p;
    g_free(f->name), g_free(f->value), g_free(f->other);
    g_free(f);
}

void
simpar_megatron_free(SimparMegatron *meg)
{
    if (meg == NULL)
        return;
    g_free(meg->file);
    g_ptr_array_unref(meg->flags);
    g_hash_table_unref(meg->index);
    g_ptr_array_unref(meg->argv);
    g_ptr_array_unref(meg->used);
    g_ptr_array_unref(meg->notes);
    g_free(meg);
}

/* ---- flags from words --------------------------------------------------------------------- */

/* Megatron switches (store_true) simpar reads: they take no value. */
static const char *const meg_switches[] = {"bf16",
                                           "fp16",
                                           "swiglu",
                                           "sequence-parallel",
                                           "group-query-attention",
                                           "multi-latent-attention",
                                           "untie-embeddings-and-output-weights",
                                           "use-distributed-optimizer",
                                           "overlap-grad-reduce",
                                           "overlap-param-gather",
                                           "account-for-embedding-in-pipeline-split",
                                           "account-for-loss-in-pipeline-split",
                                           "disable-bias-linear",
                                           "add-bias-linear",
                                           "use-flash-attn",
                                           "recompute-activations",
                                           "accumulate-allreduce-grads-in-fp32",
                                           "grad-reduce-in-bf16",
                                           "use-torch-fsdp2",
                                           "use-custom-fsdp",
                                           "use-megatron-fsdp",
                                           "moe-enable-deepep",
                                           "moe-shared-expert-overlap",
                                           "overlap-moe-expert-parallel-comm",
                                           "moe-grouped-gemm",
                                           "moe-layer-recompute",
                                           "tp-comm-overlap",
                                           "use-mcore-models",
                                           "use-legacy-models",
                                           "mock-data",
                                           NULL};

/* Flags that take several values (nargs='+'). */
static const char *const meg_lists[] = {"cp-comm-type", "recompute-modules", NULL};

static gboolean
meg_is_flag(const MegWord *w)
{
    return g_str_has_prefix(w->text, "--") && g_ascii_isalpha(w->text[2]);
}

/* A word that can be a flag's value: not a flag (a negative number is a value). */
static gboolean
meg_is_value(const MegWord *w)
{
    return w->text[0] != '-' || g_ascii_isdigit(w->text[1]) || w->text[1] == '.';
}

static void
meg_add_flag(SimparMegatron *meg, const char *name, const char *value, guint line,
             gboolean resolved)
{
    MegFlag *f = g_hash_table_lookup(meg->index, name);
    if (f == NULL) {
        f = g_new0(MegFlag, 1);
        f->name = g_strdup(name), f->value = g_strdup(value);
        f->line = line, f->resolved = resolved;
        g_ptr_array_add(meg->flags, f);
        g_hash_table_insert(meg->index, f->name, f);
    } else if (f->other == NULL && g_strcmp0(f->value, value) != 0) {
        f->other = g_strdup(value != NULL ? value : "(no value)");
        f->other_line = line;
    }
}

static void
meg_collect(SimparMegatron *meg, GArray *words)
{
    for (guint i = 0; i < words->len; i++) {
        const MegWord *w = &g_array_index(words, MegWord, i);
        if (!meg_is_flag(w))
            continue;
        const char *eq = strchr(w->text, '=');
        g_autofree char *name =
            g_strndup(w->text + 2, eq != NULL ? (gsize) (eq - w->text - 2) : strlen(w->text + 2));
        if (eq != NULL) {
            meg_add_flag(meg, name, eq + 1, w->line, w->resolved);
            continue;
        }
        if (g_strv_contains(meg_switches, name)) {
            meg_add_flag(meg, name, NULL, w->line, TRUE);
            continue;
        }
        g_autoptr(GString) value = NULL;
        gboolean resolved = TRUE;
        gboolean list = g_strv_contains(meg_lists, name);
        while (i + 1 < words->len && meg_is_value(&g_array_index(words, MegWord, i + 1))) {
            const MegWord *v = &g_array_index(words, MegWord, ++i);
            if (value == NULL)
                value = g_string_new(v->text);
            else
                g_string_append_printf(value, " %s", v->text);
            resolved &= v->resolved;
            if (!list)
                break;
        }
        meg_add_flag(meg, name, value != NULL ? value->str : NULL, w->line, resolved);
    }
}

/* ---- reading the flags simpar models ------------------------------------------------------ */

static gboolean meg_fail(SimparMegatron *meg, GError **error, const char *format, ...)
    G_GNUC_PRINTF(3, 4);

static gboolean
meg_fail(SimparMegatron *meg, GError **error, const char *format, ...)
{
    va_list ap;
    va_start(ap, format);
    g_autofree char *msg = g_strdup_vprintf(format, ap);
    va_end(ap);
    g_set_error(error, SIMPAR_MEGATRON_ERROR, SIMPAR_MEGATRON_ERROR_INVALID, "%s: %s", meg->file,
                msg);
    return FALSE;
}

/* The flag `name` when the file gives it (marked used), else NULL; FALSE when it is given
 * twice with different values or its value cannot be read. */
static gboolean
meg_get(SimparMegatron *meg, const char *name, gboolean want_value, MegFlag **out, GError **error)
{
    MegFlag *f = g_hash_table_lookup(meg->index, name);
    *out = f;
    if (f == NULL)
        return TRUE;
    f->used = TRUE;
    if (f->other != NULL)
        return meg_fail(meg, error,
                        "--%s is given twice, as %s (line %u) and %s (line %u); simpar reads "
                        "the script without running it, so it cannot tell which applies: keep one",
                        name, f->value != NULL ? f->value : "(no value)", f->line, f->other,
                        f->other_line);
    if (want_value && f->value == NULL)
        return meg_fail(meg, error, "line %u: --%s has no value", f->line, name);
    if (want_value && !f->resolved)
        return meg_fail(meg, error,
                        "line %u: --%s %s: simpar reads variables the file sets to plain values "
                        "(NAME=8 or NAME=${NAME:-8}) and nothing else; write the value there",
                        f->line, name, f->value);
    return TRUE;
}

/* An integer flag: *v (kept when the file does not give it); *given says whether it did. */
static gboolean
meg_int(SimparMegatron *meg, const char *name, gint64 min, gint64 *v, gboolean *given,
        GError **error)
{
    MegFlag *f;
    if (!meg_get(meg, name, TRUE, &f, error))
        return FALSE;
    if (given != NULL)
        *given = f != NULL;
    if (f == NULL)
        return TRUE;
    gint64 x;
    if (!g_ascii_string_to_signed(f->value, 10, min, SIMPAR_MODEL_MAX_DIM, &x, NULL))
        return meg_fail(meg, error,
                        "line %u: --%s %s: valid is a whole number from %" G_GINT64_FORMAT
                        " to %" G_GINT64_FORMAT,
                        f->line, name, f->value, min, (gint64) SIMPAR_MODEL_MAX_DIM);
    *v = x;
    return TRUE;
}

static gboolean
meg_double(SimparMegatron *meg, const char *name, double *v, GError **error)
{
    MegFlag *f;
    if (!meg_get(meg, name, TRUE, &f, error))
        return FALSE;
    if (f == NULL)
        return TRUE;
    char *end;
    double x = g_ascii_strtod(f->value, &end);
    if (*end != '\0' || !isfinite(x) || x < 0 || x > 1)
        return meg_fail(meg, error, "line %u: --%s %s: valid is a probability from 0 to 1", f->line,
                        name, f->value);
    *v = x;
    return TRUE;
}

/* Whether switch `name` is given (marked used). */
static gboolean
meg_switch(SimparMegatron *meg, const char *name)
{
    MegFlag *f = g_hash_table_lookup(meg->index, name);
    if (f != NULL)
        f->used = TRUE;
    return f != NULL;
}

/* A string flag's value (borrowed) or `fallback`. */
static gboolean
meg_string(SimparMegatron *meg, const char *name, const char *fallback, const char **v,
           GError **error)
{
    MegFlag *f;
    if (!meg_get(meg, name, TRUE, &f, error))
        return FALSE;
    *v = f != NULL ? f->value : fallback;
    return TRUE;
}

static void meg_arg(SimparMegatron *meg, const char *format, ...) G_GNUC_PRINTF(2, 3);

static void
meg_arg(SimparMegatron *meg, const char *format, ...)
{
    va_list ap;
    va_start(ap, format);
    g_ptr_array_add(meg->argv, g_strdup_vprintf(format, ap));
    va_end(ap);
}

/* Records that Megatron's `from` became simpar's `to`. */
static void meg_use(SimparMegatron *meg, const char *from, const char *format, ...)
    G_GNUC_PRINTF(3, 4);

static void
meg_use(SimparMegatron *meg, const char *from, const char *format, ...)
{
    va_list ap;
    va_start(ap, format);
    g_ptr_array_add(meg->used, g_strdup(from));
    g_ptr_array_add(meg->used, g_strdup_vprintf(format, ap));
    va_end(ap);
}

/* ---- the model ---------------------------------------------------------------------------- */

/* The vocabulary as Megatron pads it: a multiple of --make-vocab-size-divisible-by x TP. */
static gboolean
meg_vocab(SimparMegatron *meg, gint64 tp, gint64 *vocab, GError **error)
{
    gint64 v = 0, div = 128;
    gboolean given;
    const char *tok;
    if (!meg_int(meg, "make-vocab-size-divisible-by", 1, &div, NULL, error) ||
        !meg_int(meg, "vocab-size", 1, &v, &given, error) ||
        (!given && !meg_string(meg, "tokenizer-type", NULL, &tok, error)))
        return FALSE;
    const char *from = "--vocab-size";
    if (!given) {
        gboolean files = g_hash_table_contains(meg->index, "vocab-file") &&
                         g_hash_table_contains(meg->index, "merge-file");
        if (!(g_strcmp0(tok, "GPT2BPETokenizer") == 0 || (tok == NULL && files))) {
            *vocab = 0; /* the preset's */
            meg_use(meg, "(no --vocab-size, and no GPT-2 --vocab-file/--merge-file)",
                    "the base preset's vocabulary");
            return TRUE;
        }
        meg_switch(meg, "vocab-file"), meg_switch(meg, "merge-file");
        v = 50257; /* GPT-2's BPE vocabulary (gpt2-vocab.json), as the GPT-3 examples use */
        from = "--vocab-file/--merge-file (GPT-2 BPE, 50257 tokens)";
    }
    gint64 multiple = div * tp;
    *vocab = (v + multiple - 1) / multiple * multiple;
    g_autofree char *what = g_strdup_printf("%s %" G_GINT64_FORMAT, from, v);
    meg_use(meg, given ? what : from,
            "--vocab %" G_GINT64_FORMAT " (padded to a multiple of %" G_GINT64_FORMAT
            " = --make-vocab-size-divisible-by %" G_GINT64_FORMAT " x TP %" G_GINT64_FORMAT
            ", as Megatron pads it)",
            *vocab, multiple, div, tp);
    return TRUE;
}

/* The preset whose h, a, L and MLP the file gives, and of those the first whose experts (none,
 * or their count and top-k) match too (its name names the model), else default-4k. */
static const char *
meg_base(const SimparModel *want)
{
    guint n;
    const SimparModelPreset *p = simpar_model_presets(&n);
    const char *shape = NULL;
    for (guint i = 0; i < n; i++) {
        const SimparModel *m = &p[i].model;
        if (m->hidden != want->hidden || m->heads != want->heads || m->layers != want->layers ||
            m->mlp != want->mlp)
            continue;
        if (m->moe.experts == want->moe.experts && m->moe.top_k == want->moe.top_k)
            return p[i].name;
        shape = shape != NULL ? shape : p[i].name;
    }
    return shape != NULL ? shape : "default-4k";
}

/* The flags of the model's figures that differ from the base preset's. */
static void
meg_model_args(SimparMegatron *meg, const SimparModel *w)
{
    const char *name = meg_base(w);
    SimparModel b;
    g_assert(simpar_model_preset(name, &b, NULL));
    meg_arg(meg, "--model=%s", name);
    const SimparMoeConfig *e = &w->moe;
    gboolean moe = e->experts > 0;

    const struct {
        const char *flag;
        gint64 want, base;
    } ints[] = {
        {"hidden", w->hidden, b.hidden},
        {"heads", w->heads, b.heads},
        /* multi-head attention stays so when the heads change */
        {"kv-heads", simpar_model_kv_heads(w) == w->heads ? w->heads : simpar_model_kv_heads(w),
         simpar_model_kv_heads(&b) == b.heads ? w->heads : simpar_model_kv_heads(&b)},
        /* the heads' width the base preset gets with the file's h and a */
        {"head-dim", simpar_model_head_dim(w), b.head_dim != 0 ? b.head_dim : w->hidden / w->heads},
        {"ffn", w->ffn, b.ffn},
        {"layers", w->layers, b.layers},
        {"seq", w->seq, b.seq},
        {"micro-batch", w->micro_batch, b.micro_batch},
        {"vocab", w->vocab != 0 ? w->vocab : b.vocab, b.vocab},
        {"q-lora-rank", w->mla.q_lora_rank, b.mla.q_lora_rank},
        {"kv-lora-rank", w->mla.kv_lora_rank, b.mla.kv_lora_rank},
        {"qk-head-dim", w->mla.qk_head_dim, b.mla.qk_head_dim},
        {"qk-pos-emb-head-dim", w->mla.qk_pos_emb_head_dim, b.mla.qk_pos_emb_head_dim},
        {"v-head-dim", w->mla.v_head_dim, b.mla.v_head_dim},
        /* the experts: the file's whole MoE (--experts 0 makes an MoE preset dense) */
        {"experts", e->experts, b.moe.experts},
        {"topk", e->top_k, moe ? b.moe.top_k : 0},
        {"moe-ffn", moe ? (e->moe_ffn > 0 ? e->moe_ffn : w->ffn) : 0, moe ? b.moe.moe_ffn : 0},
        {"shared-ffn", e->shared_ffn, moe ? b.moe.shared_ffn : 0},
        {"dense-layers", e->dense_layers, moe ? b.moe.dense_layers : 0},
        {"moe-every", moe ? MAX(e->moe_every, 1) : 0, moe ? MAX(b.moe.moe_every, 1) : 0},
        {"expert-groups", e->groups, moe ? b.moe.groups : 0},
        {"group-limit", e->group_limit, moe ? b.moe.group_limit : 0},
        {"mtp-layers", w->mtp_layers, b.mtp_layers},
    };

    for (guint i = 0; i < G_N_ELEMENTS(ints); i++)
        if (ints[i].want != ints[i].base)
            meg_arg(meg, "--%s=%" G_GINT64_FORMAT, ints[i].flag, ints[i].want);
    if (w->dtype != b.dtype)
        meg_arg(meg, "--dtype=%s", simpar_dtype_name(w->dtype));
    if (w->mlp != b.mlp)
        meg_arg(meg, "--mlp=%s", simpar_mlp_name(w->mlp));
    if (w->norm != b.norm)
        meg_arg(meg, "--norm=%s", simpar_norm_name(w->norm));
    if (w->no_bias != b.no_bias)
        meg_arg(meg, "--bias=%s", w->no_bias ? "off" : "on");
    if (w->no_dropout != b.no_dropout)
        meg_arg(meg, "--dropout=%s", w->no_dropout ? "off" : "on");
    if (moe && e->router != (b.moe.experts > 0 ? b.moe.router : SIMPAR_ROUTER_SOFTMAX))
        meg_arg(meg, "--router=%s", simpar_router_name((SimparRouterScore) e->router));
}

/* Shapes the file must give: Megatron needs them too. */
static gboolean
meg_shapes(SimparMegatron *meg, SimparModel *w, GError **error)
{
    const struct {
        const char *name, *simpar;
        gint64 *v;
    } need[] = {{"num-layers", "--layers", &w->layers},
                {"hidden-size", "--hidden", &w->hidden},
                {"num-attention-heads", "--heads", &w->heads},
                {"seq-length", "--seq", &w->seq},
                {"micro-batch-size", "--micro-batch", &w->micro_batch}};

    for (guint i = 0; i < G_N_ELEMENTS(need); i++) {
        gboolean given;
        if (!meg_int(meg, need[i].name, 1, need[i].v, &given, error))
            return FALSE;
        if (!given)
            return meg_fail(meg, error,
                            "no --%s: Megatron needs it, and simpar reads the model's shape and "
                            "batch from it (simpar's %s)",
                            need[i].name, need[i].simpar);
        g_autofree char *from = g_strdup_printf("--%s %" G_GINT64_FORMAT, need[i].name, *need[i].v);
        meg_use(meg, from, "%s %" G_GINT64_FORMAT, need[i].simpar, *need[i].v);
    }
    return TRUE;
}

/* --multi-latent-attention and its five sizes (Megatron-LM's MLA flags carry simpar's names):
 * every size must be given, simpar takes none of Megatron's defaults for them. */
static gboolean
meg_mla(SimparMegatron *meg, SimparModel *w, GError **error)
{
    const char *const names[] = {"q-lora-rank", "kv-lora-rank", "qk-head-dim",
                                 "qk-pos-emb-head-dim", "v-head-dim"};
    SimparMlaConfig *l = &w->mla;
    gint64 *fields[] = {&l->q_lora_rank, &l->kv_lora_rank, &l->qk_head_dim, &l->qk_pos_emb_head_dim,
                        &l->v_head_dim};
    if (!meg_switch(meg, "multi-latent-attention"))
        return TRUE;
    for (guint i = 0; i < G_N_ELEMENTS(names); i++) {
        gboolean given;
        if (!meg_int(meg, names[i], i == 3 ? 0 : 1, fields[i], &given, error))
            return FALSE;
        if (!given)
            return meg_fail(meg, error,
                            "--multi-latent-attention without --%s: give every latent size "
                            "(--q-lora-rank, --kv-lora-rank, --qk-head-dim, --qk-pos-emb-head-dim, "
                            "--v-head-dim)",
                            names[i]);
    }
    meg_use(meg, "--multi-latent-attention and its sizes",
            "--q-lora-rank %" G_GINT64_FORMAT " --kv-lora-rank %" G_GINT64_FORMAT
            " --qk-head-dim %" G_GINT64_FORMAT " --qk-pos-emb-head-dim %" G_GINT64_FORMAT
            " --v-head-dim %" G_GINT64_FORMAT,
            l->q_lora_rank, l->kv_lora_rank, l->qk_head_dim, l->qk_pos_emb_head_dim, l->v_head_dim);
    return TRUE;
}

/* A weight of the loss: a finite number from 0 (the MTP loss's lambda; Megatron's default 0.1,
 * DeepSeek-V3's 0.3 then 0.1). */
static gboolean
meg_loss_weight(const char *value)
{
    char *end;
    double x = g_ascii_strtod(value, &end);
    return *value != '\0' && *end == '\0' && isfinite(x) && x >= 0;
}

/* Multi-token prediction (--mtp-num-layers: its modules on the last stage, model.h); the loss's
 * weight is accepted and costs nothing (it scales a scalar). */
static gboolean
meg_mtp(SimparMegatron *meg, SimparModel *w, GError **error)
{
    gboolean given;
    const char *scale;
    if (!meg_int(meg, "mtp-num-layers", 0, &w->mtp_layers, &given, error) ||
        !meg_string(meg, "mtp-loss-scaling-factor", NULL, &scale, error))
        return FALSE;
    if (w->mtp_layers > SIMPAR_MODEL_MAX_MTP)
        return meg_fail(meg, error, "--mtp-num-layers %" G_GINT64_FORMAT ": valid is 0 to %d",
                        w->mtp_layers, SIMPAR_MODEL_MAX_MTP);
    /* megatron/training/arguments.py asserts rope or none for MTP, before it reads the
     * deprecated --use-rotary-position-embeddings: the type itself (default learned_absolute)
     * must say so; the flag stays listed as not priced */
    const MegFlag *pos = g_hash_table_lookup(meg->index, "position-embedding-type");
    const char *type = pos != NULL ? pos->value : "learned_absolute";
    if (w->mtp_layers > 0 && (pos == NULL || pos->resolved) && type != NULL &&
        !g_str_equal(type, "rope") && !g_str_equal(type, "none"))
        return meg_fail(meg, error,
                        "--mtp-num-layers %" G_GINT64_FORMAT
                        " with --position-embedding-type %s%s: "
                        "Megatron supports multi-token prediction with rope or none only (valid: "
                        "--position-embedding-type rope)",
                        w->mtp_layers, type, pos == NULL ? " (Megatron's default)" : "");
    if (scale != NULL && !meg_loss_weight(scale))
        return meg_fail(meg, error,
                        "--mtp-loss-scaling-factor %s: valid is a number from 0 (the weight of "
                        "the multi-token prediction loss)",
                        scale);
    if (given) {
        g_autofree char *from =
            g_strdup_printf("--mtp-num-layers %" G_GINT64_FORMAT, w->mtp_layers);
        meg_use(meg, from, "--mtp-layers %" G_GINT64_FORMAT, w->mtp_layers);
    }
    if (scale != NULL) {
        g_autofree char *from = g_strdup_printf("--mtp-loss-scaling-factor %s", scale);
        meg_use(meg, from, "accepted: the loss's weight, no cost");
    }
    return TRUE;
}

/* The layer's flavour: MLP, attention groups, norm, biases, dropout, precision. */
static gboolean
meg_flavour(SimparMegatron *meg, SimparModel *w, GError **error)
{
    gboolean swiglu = meg_switch(meg, "swiglu"), given;
    w->mlp = swiglu ? SIMPAR_MLP_SWIGLU : SIMPAR_MLP_GELU;
    if (!meg_int(meg, "ffn-hidden-size", 1, &w->ffn, &given, error))
        return FALSE;
    if (!given) /* Megatron's default: 4h, or 2/3 of it in multiples of 64 with SwiGLU */
        w->ffn = swiglu ? (gint64) ((double) (8 * w->hidden) / 3 / 64) * 64 : 4 * w->hidden;
    meg_use(meg, swiglu ? "--swiglu" : "(no --swiglu)", "--mlp %s", swiglu ? "swiglu" : "gelu");
    meg_use(meg, given ? "--ffn-hidden-size" : "(no --ffn-hidden-size: Megatron's default)",
            "--ffn %" G_GINT64_FORMAT, w->ffn);
    gint64 groups = 1, kvc = 0;
    if (meg_switch(meg, "group-query-attention")) {
        if (!meg_int(meg, "num-query-groups", 1, &groups, NULL, error))
            return FALSE;
        w->kv_heads = groups;
        meg_use(meg, "--group-query-attention --num-query-groups", "--kv-heads %" G_GINT64_FORMAT,
                groups);
    }
    if (!meg_mla(meg, w, error))
        return FALSE;
    if (!meg_int(meg, "kv-channels", 1, &kvc, &given, error))
        return FALSE;
    if (given && w->mla.kv_lora_rank > 0) {
        meg_use(meg, "--kv-channels with --multi-latent-attention",
                "none: MLA's heads are --qk-head-dim + --qk-pos-emb-head-dim wide (queries, "
                "keys) and --v-head-dim (values)");
    } else if (given) {
        w->head_dim = kvc;
        meg_use(meg, "--kv-channels", "--head-dim %" G_GINT64_FORMAT, kvc);
    } else if (w->hidden % w->heads != 0) {
        return meg_fail(meg, error,
                        "--hidden-size %" G_GINT64_FORMAT " is not divisible by "
                        "--num-attention-heads %" G_GINT64_FORMAT
                        ": give the heads' width, --kv-channels (Megatron's default is the "
                        "quotient)",
                        w->hidden, w->heads);
    }
    gboolean bf16 = meg_switch(meg, "bf16"), fp16 = meg_switch(meg, "fp16");
    if (bf16 && fp16)
        return meg_fail(meg, error, "--bf16 and --fp16 together: Megatron refuses them; keep one");
    w->dtype = bf16 ? SIMPAR_DTYPE_BF16 : fp16 ? SIMPAR_DTYPE_FP16 : SIMPAR_DTYPE_FP32;
    meg_use(meg,
            bf16   ? "--bf16"
            : fp16 ? "--fp16"
                   : "(neither --bf16 nor --fp16: fp32)",
            "--dtype %s", simpar_dtype_name(w->dtype));
    const char *norm;
    if (!meg_string(meg, "normalization", "LayerNorm", &norm, error))
        return FALSE;
    if (!g_str_equal(norm, "LayerNorm") && !g_str_equal(norm, "RMSNorm"))
        return meg_fail(meg, error, "--normalization %s: valid are LayerNorm and RMSNorm", norm);
    w->norm = g_str_equal(norm, "RMSNorm") ? SIMPAR_NORM_RMSNORM : SIMPAR_NORM_LAYERNORM;
    g_autofree char *from = g_strdup_printf(
        "--normalization %s%s", norm,
        g_hash_table_contains(meg->index, "normalization") ? "" : " (Megatron's default)");
    meg_use(meg, from, "--norm %s", simpar_norm_name(w->norm));
    w->no_bias = meg_switch(meg, "disable-bias-linear");
    meg_use(meg, w->no_bias ? "--disable-bias-linear" : "(biases: Megatron's default)", "--bias %s",
            w->no_bias ? "off" : "on");
    double hd = 0.1, ad = 0.1; /* Megatron's defaults */
    if (!meg_double(meg, "hidden-dropout", &hd, error) ||
        !meg_double(meg, "attention-dropout", &ad, error))
        return FALSE;
    w->no_dropout = hd == 0 && ad == 0;
    meg_use(meg, "--hidden-dropout --attention-dropout (default 0.1)", "--dropout %s",
            w->no_dropout ? "off (both 0)" : "on");
    return TRUE;
}

/* ---- the split ---------------------------------------------------------------------------- */

/* Megatron's --moe-layer-freq list expression (arguments.py moe_freq_type, evaluated by Python):
 * sums of lists "[a,b,...]", each factor repeated by "*N", parentheses grouping. Parsed into
 * `out` (0 dense, 1 MoE), never longer than `cap`; FALSE on anything else. */
typedef struct {
    const char *at;
    guint cap;   /* the most entries a list may hold: the layers */
    guint depth; /* parentheses open, at most MEG_PATTERN_DEPTH */
} MegPattern;

#define MEG_PATTERN_DEPTH 32

static gboolean meg_pattern_sum(MegPattern *p, GByteArray *out);

static gboolean
meg_pattern_factor(MegPattern *p, GByteArray *out)
{
    GByteArray *atom = g_byte_array_new();
    gboolean ok = TRUE;
    if (*p->at == '(' && p->depth < MEG_PATTERN_DEPTH) {
        p->at++, p->depth++;
        ok = meg_pattern_sum(p, atom) && *p->at == ')';
        p->at += ok, p->depth--;
    } else if (*p->at == '[') {
        do {
            p->at++;
            ok = (*p->at == '0' || *p->at == '1') && atom->len < p->cap;
            if (ok) {
                guint8 bit = (guint8) (*p->at++ - '0');
                g_byte_array_append(atom, &bit, 1);
            }
        } while (ok && *p->at == ',');
        ok = ok && *p->at == ']';
        p->at += ok;
    } else
        ok = FALSE;
    while (ok && *p->at == '*') {
        char *end;
        p->at++;
        if (!g_ascii_isdigit(*p->at))
            ok = FALSE;
        else {
            guint64 n = g_ascii_strtoull(p->at, &end, 10);
            p->at = end;
            ok = n <= p->cap && (atom->len == 0 || n <= p->cap / atom->len);
            g_autoptr(GBytes) unit = g_bytes_new(atom->data, atom->len);
            gsize len;
            const guint8 *bytes = g_bytes_get_data(unit, &len);
            g_byte_array_set_size(atom, 0);
            for (guint64 i = 0; ok && i < n; i++)
                g_byte_array_append(atom, bytes, (guint) len);
        }
    }
    ok = ok && out->len + atom->len <= p->cap;
    if (ok)
        g_byte_array_append(out, atom->data, atom->len);
    g_byte_array_unref(atom);
    return ok;
}

static gboolean
meg_pattern_sum(MegPattern *p, GByteArray *out)
{
    if (!meg_pattern_factor(p, out))
        return FALSE;
    while (*p->at == '+') {
        p->at++;
        if (!meg_pattern_factor(p, out))
            return FALSE;
    }
    return TRUE;
}

/* --moe-layer-freq: an integer N (an MoE layer every N: layers 0, N, 2N, ...), or a list
 * expression of `layers` entries that simpar's model holds: K dense layers, then an MoE layer
 * every N (*every and *dense). */
static gboolean
meg_moe_freq(const char *text, gint64 layers, gint64 *every, gint64 *dense)
{
    if (g_ascii_string_to_signed(text, 10, 1, SIMPAR_MODEL_MAX_DIM, every, NULL)) {
        *dense = 0;
        return TRUE;
    }
    g_autoptr(GString) t = g_string_new(NULL);
    for (const char *c = text; *c != '\0'; c++)
        if (!g_ascii_isspace(*c) && *c != '\'' && *c != '"')
            g_string_append_c(t, *c);
    g_autoptr(GByteArray) bits = g_byte_array_new();
    MegPattern p = {t->str, (guint) layers, 0};
    if (!meg_pattern_sum(&p, bits) || *p.at != '\0' || bits->len != (guint) layers)
        return FALSE;
    guint k = 0, n = 0;
    while (k < bits->len && bits->data[k] == 0)
        k++;
    for (guint i = k + 1; i < bits->len && n == 0; i++)
        n = bits->data[i] ? i - k : 0;
    if (k == bits->len) /* no MoE layer */
        return FALSE;
    n = n == 0 ? bits->len - k : n;
    for (guint i = k; i < bits->len; i++)
        if (bits->data[i] != ((i - k) % n == 0))
            return FALSE;
    *every = n, *dense = k;
    return TRUE;
}

/* --moe-token-dispatcher-type (transformer_config.py: allgather, its default; alltoall; flex):
 * allgather and alltoall are simpar's dispatchers of those names (alltoall simpar's default, no
 * argument). The flex dispatcher runs the backend of --moe-flex-dispatcher-backend
 * (transformer_config.py: default "deepep"; --moe-enable-deepep is its deprecated spelling).
 * DeepEP is simpar's DeepEP hops; HybridEP (DeepEP's hybrid-ep branch) routes tokens the same
 * way, each token once per destination node over RDMA and then over NVLink, and is priced as
 * DeepEP's hops after its all-gather of the routing maps (--moe-flex-backend hybridep); NCCL's
 * EP backend is not modelled. */
static gboolean
meg_dispatcher(SimparMegatron *meg, GError **error)
{
    const char *type;
    if (!meg_string(meg, "moe-token-dispatcher-type", NULL, &type, error))
        return FALSE;
    if (type == NULL || g_str_equal(type, "allgather")) {
        meg_arg(meg, "--moe-dispatcher=allgather");
        meg_use(meg,
                type == NULL ? "(no --moe-token-dispatcher-type: Megatron's default allgather)"
                             : "--moe-token-dispatcher-type allgather",
                "--moe-dispatcher allgather");
        return TRUE;
    }
    if (g_str_equal(type, "alltoall")) {
        meg_use(meg, "--moe-token-dispatcher-type alltoall", "--moe-dispatcher alltoall");
        return TRUE;
    }
    if (!g_str_equal(type, "flex"))
        return meg_fail(meg, error,
                        "--moe-token-dispatcher-type %s: valid are allgather (Megatron's "
                        "default), alltoall and flex",
                        type);
    MegFlag *flag = g_hash_table_lookup(meg->index, "moe-token-dispatcher-type");
    const char *backend;
    if (!meg_string(meg, "moe-flex-dispatcher-backend", "deepep", &backend, error))
        return FALSE;
    gboolean deprecated = meg_switch(meg, "moe-enable-deepep");
    if (deprecated && !g_str_equal(backend, "deepep"))
        return meg_fail(meg, error,
                        "line %u: --moe-enable-deepep with --moe-flex-dispatcher-backend %s: "
                        "Megatron refuses two backends; keep one",
                        flag->line, backend);
    if (!g_str_equal(backend, "deepep") && !g_str_equal(backend, "hybridep"))
        return meg_fail(meg, error,
                        "--moe-flex-dispatcher-backend %s: simpar models deepep and hybridep "
                        "(DeepEP's hops); valid: one of them, or --moe-token-dispatcher-type "
                        "alltoall",
                        backend);
    meg_arg(meg, "--moe-dispatcher=deepep");
    if (g_str_equal(backend, "hybridep"))
        meg_arg(meg, "--moe-flex-backend=hybridep");
    meg_use(meg,
            g_str_equal(backend, "hybridep")
                ? "--moe-token-dispatcher-type flex --moe-flex-dispatcher-backend hybridep"
            : deprecated ? "--moe-token-dispatcher-type flex --moe-enable-deepep"
                         : "--moe-token-dispatcher-type flex (backend deepep, Megatron's default)",
            g_str_equal(backend, "hybridep")
                ? "--moe-dispatcher deepep --moe-flex-backend hybridep (HybridEP priced as "
                  "DeepEP's hops, each token once per node over RDMA, then NVLink, after the "
                  "routing maps' all-gather; its preprocessing kernel is not modelled)"
                : "--moe-dispatcher deepep");
    return TRUE;
}

/* Megatron-Core's MoE flags (megatron/training/arguments.py): --moe-router-topk (default 2),
 * --moe-ffn-hidden-size (default --ffn-hidden-size), the shared experts' width, the layer
 * pattern, the score function (softmax), node-limited groups, a capacity factor (default
 * dropless), --expert-tensor-parallel-size (default the tensor-parallel size). */
static gboolean
meg_moe(SimparMegatron *meg, SimparMoeConfig *moe, gint64 experts, gint64 ep, gint64 tp,
        GError **error)
{
    gint64 topk = 2, ffn = 0, shared = 0, groups = 0, limit = 0, etp = tp, every = 1, dense = 0;
    gint64 layers = 1;
    gboolean has_ffn, has_etp;
    const char *score, *cf, *freq;
    if (!meg_int(meg, "num-layers", 1, &layers, NULL, error) ||
        !meg_int(meg, "moe-router-topk", 1, &topk, NULL, error) ||
        !meg_int(meg, "moe-ffn-hidden-size", 1, &ffn, &has_ffn, error) ||
        !meg_int(meg, "moe-shared-expert-intermediate-size", 1, &shared, NULL, error) ||
        !meg_int(meg, "moe-router-num-groups", 1, &groups, NULL, error) ||
        !meg_int(meg, "moe-router-group-topk", 1, &limit, NULL, error) ||
        !meg_int(meg, "expert-tensor-parallel-size", 1, &etp, &has_etp, error) ||
        !meg_string(meg, "moe-router-score-function", "softmax", &score, error) ||
        !meg_string(meg, "moe-expert-capacity-factor", NULL, &cf, error) ||
        !meg_string(meg, "moe-layer-freq", "1", &freq, error))
        return FALSE;
    if (!meg_moe_freq(freq, layers, &every, &dense))
        return meg_fail(meg, error,
                        "--moe-layer-freq %s: valid are an integer N and a list of --num-layers "
                        "(%" G_GINT64_FORMAT
                        ") entries of 0 and 1 (e.g. ([0]*3+[1]*%" G_GINT64_FORMAT
                        ")) whose MoE layers simpar's model holds: K dense layers, then an MoE "
                        "layer every N",
                        freq, layers, MAX(layers - 3, 1));
    SimparRouterScore router;
    if (!simpar_router_parse(score, &router, NULL))
        return meg_fail(meg, error,
                        "--moe-router-score-function %s: simpar models softmax and sigmoid", score);
    *moe = (SimparMoeConfig){.experts = experts,
                             .top_k = topk,
                             .moe_ffn = has_ffn ? ffn : 0, /* 0: --ffn-hidden-size's */
                             .shared_ffn = shared,
                             .dense_layers = dense,
                             .moe_every = every,
                             .router = router,
                             .groups = groups,
                             .group_limit = limit};
    meg_use(meg, "--num-experts --moe-router-topk (default 2) --moe-router-score-function",
            "--experts %" G_GINT64_FORMAT " --topk %" G_GINT64_FORMAT " --router %s", experts, topk,
            score);
    if (has_ffn)
        meg_use(meg, "--moe-ffn-hidden-size", "--moe-ffn %" G_GINT64_FORMAT, ffn);
    else
        meg_use(meg, "--moe-ffn-hidden-size (default --ffn-hidden-size)", "--moe-ffn: --ffn's");
    if (cf != NULL)
        meg_arg(meg, "--capacity-factor=%s", cf);
    meg_arg(meg, "--ep=%" G_GINT64_FORMAT, ep);
    if (etp > 1)
        meg_arg(meg, "--etp=%" G_GINT64_FORMAT, etp);
    meg_use(meg, "--expert-model-parallel-size --expert-tensor-parallel-size (default TP)",
            "--ep %" G_GINT64_FORMAT " --etp %" G_GINT64_FORMAT, ep, etp);
    /* transformer_config.py: "Only effective when moe-shared-expert-intermediate-size is set" */
    if (shared > 0 && meg_switch(meg, "moe-shared-expert-overlap")) {
        meg_arg(meg, "--moe-shared-expert-overlap");
        meg_use(meg, "--moe-shared-expert-overlap", "--moe-shared-expert-overlap");
    }
    /* passed on as it stands: simpar refuses what transformer_config.py refuses with it */
    if (meg_switch(meg, "overlap-moe-expert-parallel-comm")) {
        meg_arg(meg, "--overlap-moe-expert-parallel-comm");
        meg_use(meg, "--overlap-moe-expert-parallel-comm", "--overlap-moe-expert-parallel-comm");
    }
    return meg_dispatcher(meg, error);
}

static gboolean
meg_parallel(SimparMegatron *meg, SimparMoeConfig *moe, gint64 *tp, gint64 *pp, GError **error)
{
    gint64 cp = 1, ep = 1, experts = 0;
    gboolean has_moe;
    if (!meg_int(meg, "tensor-model-parallel-size", 1, tp, NULL, error) ||
        !meg_int(meg, "pipeline-model-parallel-size", 1, pp, NULL, error) ||
        !meg_int(meg, "context-parallel-size", 1, &cp, NULL, error) ||
        !meg_int(meg, "expert-model-parallel-size", 1, &ep, NULL, error) ||
        !meg_int(meg, "num-experts", 1, &experts, &has_moe, error))
        return FALSE;
    if (!has_moe && ep > 1)
        return meg_fail(meg, error,
                        "--expert-model-parallel-size %" G_GINT64_FORMAT
                        " without --num-experts: the model is dense",
                        ep);
    if (has_moe && !meg_moe(meg, moe, experts, ep, *tp, error))
        return FALSE;
    /* Megatron's tensor parallelism is the baseline row's (1-D) */
    const char *line = simpar_generator_baseline()->name;
    meg_arg(meg, "--tp-mode=%s", line), meg_arg(meg, "--tp=%" G_GINT64_FORMAT, *tp);
    meg_use(meg, "--tensor-model-parallel-size (default 1)", "--tp-mode %s --tp %" G_GINT64_FORMAT,
            line, *tp);
    if (*pp > 1)
        meg_arg(meg, "--pp=%" G_GINT64_FORMAT, *pp);
    meg_use(meg, "--pipeline-model-parallel-size (default 1)", "--pp %" G_GINT64_FORMAT, *pp);
    const char *comm;
    if (!meg_string(meg, "cp-comm-type", "p2p", &comm, error))
        return FALSE;
    g_auto(GStrv) types = g_strsplit(comm, " ", -1);
    if (types[0] == NULL)
        return meg_fail(meg, error,
                        "--cp-comm-type is empty: give p2p (simpar's --cp-mode ring) or allgather");
    for (guint i = 0; types[i] != NULL; i++)
        if (!g_str_equal(types[i], types[0]) ||
            (!g_str_equal(types[i], "p2p") && !g_str_equal(types[i], "allgather")))
            return meg_fail(meg, error,
                            "--cp-comm-type %s: simpar models p2p (its --cp-mode ring) and "
                            "allgather, one for every layer; a2a and a2a+p2p are not modelled",
                            comm);
    const char *mode = simpar_job_cp_mode_name(g_str_equal(types[0], "p2p"));
    if (cp > 1)
        meg_arg(meg, "--cp=%" G_GINT64_FORMAT, cp), meg_arg(meg, "--cp-mode=%s", mode);
    meg_use(meg, "--context-parallel-size (default 1)", "--cp %" G_GINT64_FORMAT, cp);
    meg_use(meg, "--cp-comm-type (default p2p)", "--cp-mode %s%s", mode,
            cp > 1 ? "" : " (no context parallelism: unused)");
    gboolean sp = meg_switch(meg, "sequence-parallel");
    if (sp) {
        if (*tp > 1)
            meg_arg(meg, "--sp");
        meg_use(meg, "--sequence-parallel",
                *tp > 1 ? "--sp" : "none: Megatron disables it without tensor parallelism");
    }
    if (meg_switch(meg, "tp-comm-overlap")) { /* Megatron asserts it (training/arguments.py) */
        if (!sp || *tp < 2)
            return meg_fail(meg, error,
                            "--tp-comm-overlap needs --sequence-parallel with "
                            "--tensor-model-parallel-size 2 or more (Megatron: tensor parallel "
                            "communication/GEMM overlap can happen only when sequence "
                            "parallelism is enabled)");
        meg_arg(meg, "--tp-comm-overlap");
        meg_use(meg, "--tp-comm-overlap",
                "--tp-comm-overlap (Transformer Engine's default userbuffers methods: ring "
                "exchange, pipeline, bulk)");
    }
    return TRUE;
}

/* Interleaving and uneven stages. */
/* --pipeline-model-parallel-layout: Megatron's virtual stages are its stages over PP
 * (megatron/training/arguments.py, which refuses it beside
 * --num-layers-per-virtual-pipeline-stage and --num-virtual-stages-per-pipeline-rank); passed on
 * under the same name. */
static gboolean
meg_layout(SimparMegatron *meg, const char *layout, gint64 pp, gboolean other_vp, gint64 *v,
           GError **error)
{
    const char *flag = "--pipeline-model-parallel-layout";
    if (other_vp)
        return meg_fail(meg, error,
                        "%s with --num-layers-per-virtual-pipeline-stage or "
                        "--num-virtual-stages-per-pipeline-rank: Megatron refuses more than one "
                        "of them (valid: the layout alone; its stages give the virtual stages)",
                        flag);
    g_autoptr(GError) local = NULL;
    const SimparLayout *lay = simpar_layout_parse(layout, &local);
    if (lay == NULL)
        return meg_fail(meg, error, "%s", local->message);
    if (lay->chunks % (guint) pp != 0)
        return meg_fail(meg, error,
                        "%s \"%s\": %u stages are not divisible by "
                        "--pipeline-model-parallel-size %" G_GINT64_FORMAT
                        " (Megatron asserts it; valid: a multiple of it)",
                        flag, layout, lay->chunks, pp);
    *v = (gint64) lay->chunks / pp;
    meg_arg(meg, "%s=%s", flag, layout);
    meg_use(meg, flag, "%s %s", flag, layout);
    return TRUE;
}

static gboolean
meg_pipeline(SimparMegatron *meg, gint64 layers, gint64 pp, GError **error)
{
    gint64 per = 0, v = 0, vold = 0, group = 0, first = 0, last = 0;
    gboolean has_per, has_v, has_vold, has_group, has_first, has_last;
    if (!meg_int(meg, "num-layers-per-virtual-pipeline-stage", 1, &per, &has_per, error) ||
        !meg_int(meg, "num-virtual-stages-per-pipeline-rank", 1, &v, &has_v, error) ||
        !meg_int(meg, "virtual-pipeline-model-parallel-size", 1, &vold, &has_vold, error) ||
        !meg_int(meg, "microbatch-group-size-per-virtual-pipeline-stage", 1, &group, &has_group,
                 error) ||
        !meg_int(meg, "decoder-first-pipeline-num-layers", 1, &first, &has_first, error) ||
        !meg_int(meg, "decoder-last-pipeline-num-layers", 1, &last, &has_last, error))
        return FALSE;
    const char *layout = NULL;
    if (!meg_string(meg, "pipeline-model-parallel-layout", NULL, &layout, error))
        return FALSE;
    if (layout != NULL && !meg_layout(meg, layout, pp, has_per || has_v, &v, error))
        return FALSE;
    if (layout != NULL) /* Megatron's VP is the layout's (arguments.py) */
        has_v = TRUE, has_vold = has_per = FALSE;
    if (has_vold && !has_v)
        v = vold, has_v = TRUE;
    if (has_per && !has_v) {
        if (layers % pp != 0 || (layers / pp) % per != 0)
            return meg_fail(meg, error,
                            "--num-layers-per-virtual-pipeline-stage %" G_GINT64_FORMAT
                            ": --num-layers %" G_GINT64_FORMAT " / --pipeline-model-parallel-"
                            "size %" G_GINT64_FORMAT " must be a multiple of it, as Megatron "
                            "requires",
                            per, layers, pp);
        v = layers / pp / per, has_v = TRUE;
    }
    if (has_v && v > 1) {
        meg_arg(meg, "--schedule=interleaved"),
            meg_arg(meg, "--virtual-stages=%" G_GINT64_FORMAT, v);
        meg_use(meg, has_per ? "--num-layers-per-virtual-pipeline-stage" : "virtual stages",
                "--schedule interleaved --virtual-stages %" G_GINT64_FORMAT, v);
    }
    if (has_group)
        meg_arg(meg, "--vp-group=%" G_GINT64_FORMAT, group);
    if (has_first)
        meg_arg(meg, "--first-stage-layers=%" G_GINT64_FORMAT, first);
    if (has_last)
        meg_arg(meg, "--last-stage-layers=%" G_GINT64_FORMAT, last);
    /* the embedding and the loss as layers of the split (transformer_block.py), same names; with
     * one stage Megatron builds the L layers either way, and simpar refuses the flags there */
    const char *const accounted[] = {"--account-for-embedding-in-pipeline-split",
                                     "--account-for-loss-in-pipeline-split"};
    for (guint i = 0; i < G_N_ELEMENTS(accounted); i++) {
        if (!meg_switch(meg, accounted[i] + 2))
            continue;
        if (pp < 2) { /* one stage builds every layer either way */
            meg_use(meg, accounted[i], "nothing (one pipeline stage holds every layer)");
            continue;
        }
        meg_arg(meg, "%s", accounted[i]);
        meg_use(meg, accounted[i], "%s", accounted[i]);
    }
    return TRUE;
}

/* Selective's --recompute-modules (Megatron's default ["core_attn"]; --moe-layer-recompute adds
 * moe) as simpar's, which refuses the modules simpar does not model and, as Megatron does,
 * mla_up_proj without MLA (simpar_job_plan); moe_act needs --moe-grouped-gemm. */
static gboolean
meg_recompute_modules(SimparMegatron *meg, gboolean moe_layer, GError **error)
{
    const char *mods;
    if (!meg_string(meg, "recompute-modules", "core_attn", &mods, error))
        return FALSE;
    g_autofree char *list = g_strdup(mods);
    guint bits;
    g_autoptr(GError) local = NULL;
    if (!simpar_recompute_modules_parse(list, &bits, &local))
        return meg_fail(meg, error, "%s", local->message);
    if (bits == 0)
        bits = SIMPAR_RECOMPUTE_CORE_ATTN; /* what 0 means (plan.h) */
    if (moe_layer)                         /* as Megatron appends it */
        bits |= SIMPAR_RECOMPUTE_MOE;
    if ((bits & SIMPAR_RECOMPUTE_MOE_ACT) && !meg_switch(meg, "moe-grouped-gemm"))
        return meg_fail(meg, error,
                        "--recompute-modules %s: moe_act in recompute_modules is only supported "
                        "with moe_grouped_gemm (Megatron refuses it; add --moe-grouped-gemm)",
                        mods);
    if (bits == SIMPAR_RECOMPUTE_CORE_ATTN) /* selective as it was */
        return TRUE;
    g_autofree char *names = simpar_recompute_modules_name(bits);
    meg_arg(meg, "--recompute-modules=%s", names);
    meg_use(meg, moe_layer ? "--recompute-modules/--moe-layer-recompute" : "--recompute-modules",
            "--recompute-modules %s", names);
    return TRUE;
}

/* --recompute-*: simpar recomputes every layer's attention core or the modules of
 * --recompute-modules (selective) or every layer's whole forward (full), or nothing. */
static gboolean
meg_recompute(SimparMegatron *meg, gint64 layers, gint64 pp, GError **error)
{
    const char *gran, *method;
    gint64 n = 1;
    gboolean has_n;
    if (!meg_string(meg, "recompute-granularity", NULL, &gran, error) ||
        !meg_string(meg, "recompute-method", NULL, &method, error) ||
        !meg_int(meg, "recompute-num-layers", 1, &n, &has_n, error))
        return FALSE;
    if (meg_switch(meg, "recompute-activations"))
        gran = "selective"; /* as Megatron sets it */
    gboolean moe_layer = meg_switch(meg, "moe-layer-recompute");
    if (moe_layer && g_strcmp0(gran, "full") == 0)
        return meg_fail(meg, error,
                        "--moe-layer-recompute with --recompute-granularity full: Megatron "
                        "refuses it (use --recompute-granularity selective --recompute-modules "
                        "moe)");
    if (moe_layer)
        gran = "selective"; /* as Megatron sets it */
    if (gran == NULL)
        return TRUE;
    if (!g_str_equal(gran, "selective") && !g_str_equal(gran, "full"))
        return meg_fail(meg, error, "--recompute-granularity %s: valid are full and selective",
                        gran);
    if (g_str_equal(gran, "full")) {
        if (method == NULL || (!g_str_equal(method, "uniform") && !g_str_equal(method, "block")))
            return meg_fail(meg, error,
                            "--recompute-granularity full needs --recompute-method uniform or "
                            "block, as Megatron requires (got %s)",
                            method != NULL ? method : "none");
        if (g_str_equal(method, "block") && n < layers / pp)
            return meg_fail(meg, error,
                            "--recompute-method block --recompute-num-layers %" G_GINT64_FORMAT
                            ": simpar recomputes every layer of a stage or none, and a stage "
                            "has %" G_GINT64_FORMAT " layers",
                            n, layers / pp);
    }
    meg_arg(meg, "--recompute=%s", gran);
    meg_use(meg, "--recompute-granularity/--recompute-method/--recompute-num-layers",
            "--recompute %s%s", gran,
            g_str_equal(gran, "full") && g_str_equal(method, "uniform") && n > 1
                ? " (every layer's forward again; the memory keeps one input per layer, where "
                  "uniform with more layers per unit keeps fewer)"
                : "");
    return !g_str_equal(gran, "selective") || meg_recompute_modules(meg, moe_layer, error);
}

/* ZeRO from the distributed optimizer or an FSDP, gradients, buckets, embeddings, batch. */
static gboolean
meg_data(SimparMegatron *meg, SimparDtype dtype, GError **error)
{
    const char *strategy;
    gint64 zero = 0, bucket = 0, gbs = 0;
    gboolean has_bucket, has_gbs;
    if (!meg_string(meg, "data-parallel-sharding-strategy", "no_shard", &strategy, error) ||
        !meg_int(meg, "ddp-bucket-size", 1, &bucket, &has_bucket, error) ||
        !meg_int(meg, "global-batch-size", 1, &gbs, &has_gbs, error))
        return FALSE;
    if (meg_switch(meg, "use-custom-fsdp") || meg_switch(meg, "use-megatron-fsdp")) {
        const char *names[] = {"no_shard", "optim", "optim_grads", "optim_grads_params"};
        zero = -1;
        for (guint i = 0; i < G_N_ELEMENTS(names); i++)
            if (g_str_equal(strategy, names[i]))
                zero = i;
        if (zero < 0)
            return meg_fail(meg, error,
                            "--data-parallel-sharding-strategy %s: valid are no_shard, optim, "
                            "optim_grads and optim_grads_params",
                            strategy);
        meg_use(meg, "Megatron FSDP --data-parallel-sharding-strategy", "--zero %" G_GINT64_FORMAT,
                zero);
    } else if (meg_switch(meg, "use-torch-fsdp2")) {
        zero = 3;
        meg_use(meg, "--use-torch-fsdp2", "--zero 3");
    } else if (meg_switch(meg, "use-distributed-optimizer")) {
        zero = 1;
        meg_use(meg, "--use-distributed-optimizer", "--zero 1");
    }
    if (zero > 0)
        meg_arg(meg, "--zero=%" G_GINT64_FORMAT, zero);
    if (meg_switch(meg, "overlap-grad-reduce")) {
        meg_arg(meg, "--overlap-grad-reduce");
        meg_use(meg, "--overlap-grad-reduce", "--overlap-grad-reduce");
    }
    /* the distributed optimizer's gathers under the next forward (FSDP's are ZeRO-3's own) */
    if (zero == 1 && meg_switch(meg, "overlap-param-gather")) {
        meg_arg(meg, "--overlap-param-gather");
        meg_use(meg, "--overlap-param-gather", "--overlap-param-gather");
    }
    /* bf16 accumulates and reduces gradients in fp32 unless --grad-reduce-in-bf16 */
    gboolean in_bf16 = meg_switch(meg, "grad-reduce-in-bf16");
    gboolean fp32 = meg_switch(meg, "accumulate-allreduce-grads-in-fp32") ||
                    (dtype == SIMPAR_DTYPE_BF16 && !in_bf16);
    if (fp32 && dtype != SIMPAR_DTYPE_FP32) {
        meg_arg(meg, "--grad-reduce-dtype=fp32");
        meg_use(meg,
                dtype == SIMPAR_DTYPE_BF16 ? "--bf16 without --grad-reduce-in-bf16"
                                           : "--accumulate-allreduce-grads-in-fp32",
                "--grad-reduce-dtype fp32");
    }
    if (!meg_switch(meg, "untie-embeddings-and-output-weights")) {
        meg_arg(meg, "--tied-embeddings");
        meg_use(meg, "(no --untie-embeddings-and-output-weights: Megatron ties them)",
                "--tied-embeddings");
    } else {
        meg_use(meg, "--untie-embeddings-and-output-weights", "untied (simpar's default)");
    }
    if (has_bucket)
        meg_arg(meg, "--bucket-params=%" G_GINT64_FORMAT, bucket);
    if (has_gbs)
        meg_arg(meg, "--global-batch=%" G_GINT64_FORMAT, gbs);
    meg_use(meg, "--global-batch-size",
            has_gbs ? "--global-batch" : "(absent: --micro-batch-size x data parallelism)");
    return TRUE;
}

/* Megatron-Core runs Transformer Engine's fused (flash) attention unless told otherwise. */
static gboolean
meg_attention(SimparMegatron *meg, GError **error)
{
    const char *backend, *impl;
    if (!meg_string(meg, "attention-backend", "auto", &backend, error) ||
        !meg_string(meg, "transformer-impl", "transformer_engine", &impl, error))
        return FALSE;
    const char *valid[] = {"auto", "flash", "fused", "unfused", "local", NULL};
    if (!g_strv_contains(valid, backend))
        return meg_fail(meg, error,
                        "--attention-backend %s: valid are auto, flash, fused, unfused and local",
                        backend);
    gboolean flash = meg_switch(meg, "use-flash-attn") || g_str_equal(backend, "flash") ||
                     g_str_equal(backend, "fused") ||
                     (g_str_equal(backend, "auto") && g_str_equal(impl, "transformer_engine"));
    meg_arg(meg, "--attention=%s", flash ? "flash" : "unfused");
    meg_use(meg, "--attention-backend (default auto) --transformer-impl --use-flash-attn",
            "--attention %s", flash ? "flash" : "unfused");
    return TRUE;
}

/* FP8 training as Transformer Engine runs it (Megatron-LM's --fp8-format e4m3|hybrid with
 * --fp8-recipe): simpar's --dtype fp8 (bf16 with FP8 GEMMs) and its recipe, FP8 parameter
 * gathers and FP8 attention. e4m3 and hybrid (E5M2 gradients) cost alike: one byte an operand. */
static gboolean
meg_fp8(SimparMegatron *meg, SimparDtype dtype, GError **error)
{
    static const char *const recipes[][2] = {
        {"delayed", "delayed"}, {"tensorwise", "current"}, {"mxfp8", "mxfp8"}};
    const char *format, *recipe;
    if (!meg_string(meg, "fp8-format", NULL, &format, error))
        return FALSE;
    if (format == NULL)
        return TRUE; /* the other fp8 flags, if any, are listed as ignored */
    if (!g_str_equal(format, "e4m3") && !g_str_equal(format, "hybrid"))
        return meg_fail(meg, error, "--fp8-format %s: valid are e4m3 and hybrid", format);
    if (dtype != SIMPAR_DTYPE_BF16)
        return meg_fail(meg, error,
                        "--fp8-format %s without --bf16: simpar's FP8 training keeps everything "
                        "but the linears' GEMMs in bf16; add --bf16",
                        format);
    if (!meg_string(meg, "fp8-recipe", "delayed", &recipe, error))
        return FALSE;
    const char *ours = NULL;
    for (guint i = 0; i < G_N_ELEMENTS(recipes); i++)
        if (g_str_equal(recipe, recipes[i][0]))
            ours = recipes[i][1];
    if (ours == NULL)
        return meg_fail(meg, error,
                        "--fp8-recipe %s: valid are delayed, tensorwise and mxfp8 (simpar does "
                        "not model blockwise scaling)",
                        recipe);
    meg_arg(meg, "--dtype=fp8");
    meg_arg(meg, "--fp8-recipe=%s", ours);
    meg_use(meg, "--fp8-format --fp8-recipe (default delayed)", "--dtype fp8 --fp8-recipe %s",
            ours);
    const char *const passed[] = {"fp8-param-gather", "fp8-dot-product-attention"};
    for (guint i = 0; i < G_N_ELEMENTS(passed); i++)
        if (meg_switch(meg, passed[i])) {
            meg_arg(meg, "--%s", passed[i]);
            g_autofree char *from = g_strdup_printf("--%s", passed[i]);
            meg_use(meg, from, "--%s", passed[i]);
        }
    return TRUE;
}

/* ---- what is ignored, and why ------------------------------------------------------------- */

/* Flag names (a trailing '*' matches any ending) and why simpar ignores them. */
static const struct {
    const char *const *names;
    const char *why;
} meg_reasons[] = {
    {(const char *const[]){"nproc_per_node", "nproc-per-node", "nnodes", "node_rank", "node-rank",
                           "master_addr", "master-addr", "master_port", "master-port", "rdzv*",
                           "standalone", NULL},
     "the launcher's (torchrun): simpar uses --gpus or the platform's GPUs, and data parallelism "
     "is the GPUs over TP x CP x PP"},
    {(const char *const[]){"lr*", "min-lr", "weight-decay*", "adam-*", "clip-grad", "init-method-*",
                           "seed", "train-iters", "train-samples", "loss-scale*",
                           "initial-loss-scale", "sgd-momentum", "decoupled-*", "start-weight-*",
                           "end-weight-*", NULL},
     "a training hyper-parameter: it changes what is learned, not how long a step takes"},
    {(const char *const[]){"moe-router-load-balancing-type", "moe-aux-loss-coeff",
                           "moe-z-loss-coeff", "moe-input-jitter-eps",
                           "moe-router-bias-update-rate", "moe-router-enable-expert-bias",
                           "moe-router-topk-scaling-factor", "moe-router-pre-softmax", NULL},
     "the router's balancing and scaling: a few small kernels simpar does not price; --imbalance "
     "gives the load the balancing leaves"},
    {(const char *const[]){"moe-grouped-gemm", "moe-permute-fusion", NULL},
     "how Megatron runs the MoE block's kernels: simpar prices grouped GEMMs and fused "
     "permutations whatever these say"},
    {(const char *const[]){"rampup-batch-size", "step-batch-size-schedule", NULL},
     "a batch-size ramp: simpar predicts the step at the full --global-batch-size"},
    {(const char *const[]){"save*", "load", "ckpt-*", "no-save-*", "no-load-*", "async-save",
                           "use-dist-ckpt", "auto-detect-ckpt-format", "non-persistent-*", "exit-*",
                           "finetune", "pretrained-checkpoint", NULL},
     "checkpointing and exit: outside the training step"},
    {(const char *const[]){"log-*", "tensorboard-*", "wandb-*", "eval-*", "profile*",
                           "timing-log-*", "record-memory-history", "logging-level",
                           "memory-snapshot-path", NULL},
     "logging, evaluation and profiling: outside the training step"},
    {(const char *const[]){"data-*", "split", "vocab-file", "merge-file", "tokenizer-*",
                           "mock-data", "num-workers", "tiktoken-*", "no-mmap-bin-files",
                           "no-create-attention-mask-in-dataloader", "dataloader-type", "reset-*",
                           "eod-mask-loss", "train-data-path", "valid-data-path", "test-data-path",
                           NULL},
     "data loading and tokenizer: simpar models the GPUs' step, not the input pipeline"},
    {(const char *const[]){"max-position-embeddings", "position-embedding-type", "rotary-*",
                           "use-rotary-position-embeddings", "rope-*", "use-rope-scaling",
                           "no-position-embedding", NULL},
     "positions: simpar's embedding is the vocabulary table; a learned position table "
     "(max-position-embeddings x hidden) and rotary embeddings are not priced"},
    {(const char *const[]){"norm-epsilon", "apply-layernorm-1p", "attention-softmax-in-fp32",
                           "apply-query-key-layer-scaling", "no-masked-softmax-fusion",
                           "no-bias-gelu-fusion", "no-bias-swiglu-fusion", "no-bias-dropout-fusion",
                           "no-persist-layer-norm", "no-gradient-accumulation-fusion",
                           "cross-entropy-loss-fusion", "cross-entropy-fusion-impl",
                           "calculate-per-token-loss", "use-mcore-models", "use-legacy-models",
                           "spec", NULL},
     "numerics or kernel fusion of the same layer: simpar's --kernels megatron prices "
     "Megatron-Core's fused kernels for these shapes"},
    {(const char *const[]){"mtp-*", NULL},
     "a detail of multi-token prediction simpar does not price: its modules come from "
     "--mtp-num-layers (simpar's --mtp-layers), each as DeepSeek-V3's (arXiv 2412.19437)"},
    {(const char *const[]){"qk-layernorm", NULL},
     "the queries' and keys' own norms are not priced (two small per-head kernels a layer)"},
    {(const char *const[]){"fp8*", NULL},
     "FP8 without --fp8-format (not turned on), or a detail of its scaling (margin, amax "
     "history and algorithm, interval): simpar prices the recipe's kernels, not these"},
    {(const char *const[]){"first-last-layers-bf16", "num-layers-at-*", NULL},
     "the first and last layers' GEMMs are priced in FP8 as the others'"},
    {(const char *const[]){"tp-comm-overlap-*", "disable-tp-comm-*", NULL},
     "simpar prices Transformer Engine's default userbuffers configuration (--tp-comm-overlap): "
     "a configuration file, another bootstrap or a method turned off is predicted with the "
     "defaults"},
    {(const char *const[]){"overlap-param-gather", NULL},
     "without the distributed optimizer: FSDP's parameter gathers are simpar's ZeRO-3 "
     "prefetched gathers, overlapped with or without it"},
    {(const char *const[]){"overlap-param-gather-with-optimizer-step", NULL},
     "simpar's Adam is one update of the rank's shard after the step's last reduction, not "
     "one per model chunk: the overlap of a chunk's gather with the next chunk's update has "
     "no place in it (--overlap-param-gather gathers under the next forward)"},
    {(const char *const[]){"no-align-param-gather", NULL},
     "--overlap-param-gather's gathers with virtual stages are priced in align_param_gather's "
     "order (Megatron's default), not issued by each bucket's forward pre-hook"},
    {(const char *const[]){"num-query-groups", NULL},
     "applies with --group-query-attention only, as Megatron reads it"},
    {(const char *const[]){"no-overlap-p2p-communication", "overlap-p2p-communication*",
                           "defer-embedding-wgrad-compute", "wgrad-deferral-limit",
                           "align-grad-reduce", "no-align-grad-reduce", "ddp-average-in-collective",
                           "ddp-num-buckets", "ddp-pad-buckets-for-high-nccl-busbw",
                           "use-cpu-initialization", "manual-gc*", "empty-unused-memory-level",
                           "check-for-*", "distributed-timeout-minutes", "distributed-backend",
                           "local-rank", NULL},
     "not modelled: simpar's step runs as its own pipeline and data-parallel schedule"},
};

static gboolean
meg_name_matches(const char *pattern, const char *name)
{
    gsize n = strlen(pattern);
    return pattern[n - 1] == '*' ? strncmp(pattern, name, n - 1) == 0 : g_str_equal(pattern, name);
}

static const char *
meg_reason(const char *name)
{
    for (guint i = 0; i < G_N_ELEMENTS(meg_reasons); i++)
        for (guint k = 0; meg_reasons[i].names[k] != NULL; k++)
            if (meg_name_matches(meg_reasons[i].names[k], name))
                return meg_reasons[i].why;
    return "not a flag simpar models (it reads the model's shapes, the split, batch, precision, "
           "recomputation and optimizer sharding): if it changes a step's work, the prediction "
           "leaves that out";
}

/* ---- the whole file ----------------------------------------------------------------------- */

static gboolean
meg_translate(SimparMegatron *meg, GError **error)
{
    SimparModel w = {0};
    gint64 tp = 1, pp = 1, vocab;
    if (!meg_shapes(meg, &w, error) || !meg_flavour(meg, &w, error) || !meg_mtp(meg, &w, error) ||
        !meg_parallel(meg, &w.moe, &tp, &pp, error) || !meg_vocab(meg, tp, &vocab, error))
        return FALSE;
    w.vocab = vocab;
    g_autoptr(GPtrArray) split = g_steal_pointer(&meg->argv); /* the model's flags go first */
    meg->argv = g_ptr_array_new_with_free_func(g_free);
    meg_model_args(meg, &w);
    for (guint i = 0; i < split->len; i++)
        g_ptr_array_add(meg->argv, g_strdup(split->pdata[i]));
    if (!meg_pipeline(meg, w.layers, pp, error) || !meg_recompute(meg, w.layers, pp, error) ||
        !meg_data(meg, w.dtype, error) || !meg_attention(meg, error) ||
        !meg_fp8(meg, w.dtype, error))
        return FALSE;
    for (guint i = 0; i < meg->flags->len; i++) {
        const MegFlag *f = meg->flags->pdata[i];
        if (f->used)
            continue;
        g_ptr_array_add(meg->notes, g_strdup_printf("--%s", f->name));
        g_ptr_array_add(meg->notes, g_strdup(meg_reason(f->name)));
    }
    g_ptr_array_add(meg->argv, NULL);
    return TRUE;
}

SimparMegatron *
simpar_megatron_parse(const char *text, const char *name, GError **error)
{
    g_return_val_if_fail(error == NULL || *error == NULL, NULL);
    g_autoptr(SimparMegatron) meg = g_new0(SimparMegatron, 1);
    meg->file = g_strdup(name);
    meg->flags = g_ptr_array_new_with_free_func(meg_flag_free);
    meg->index = g_hash_table_new(g_str_hash, g_str_equal);
    meg->argv = g_ptr_array_new_with_free_func(g_free);
    meg->used = g_ptr_array_new_with_free_func(g_free);
    meg->notes = g_ptr_array_new_with_free_func(g_free);
    GArray *words = meg_words(text);
    meg_collect(meg, words);
    meg_words_free(words);
    if (meg->flags->len == 0) {
        meg_fail(meg, error,
                 "no --flag in it: give a Megatron-LM launch line or script (the "
                 "arguments of pretrain_gpt.py)");
        return NULL;
    }
    if (!meg_translate(meg, error))
        return NULL;
    return g_steal_pointer(&meg); /* (transfer full) */
}

SimparMegatron *
simpar_megatron_read(const char *path, GError **error)
{
    g_return_val_if_fail(path != NULL, NULL);
    g_return_val_if_fail(error == NULL || *error == NULL, NULL);
    g_autofree char *text = NULL;
    gsize len;
    if (!simpar_file_read(path, SIMPAR_MEGATRON_MAX_BYTES, &text, &len, error)) {
        g_prefix_error(error, "--megatron-args: ");
        return NULL;
    }
    if (memchr(text, '\0', len) != NULL) {
        g_set_error(error, SIMPAR_MEGATRON_ERROR, SIMPAR_MEGATRON_ERROR_INVALID,
                    "--megatron-args %s: a NUL byte: not a launch line or shell script", path);
        return NULL;
    }
    g_autofree char *name = g_strdup_printf("--megatron-args %s", path);
    return simpar_megatron_parse(text, name, error); /* (transfer full) */
}

const char *const *
simpar_megatron_argv(const SimparMegatron *meg)
{
    return (const char *const *) meg->argv->pdata; /* (transfer none) */
}

char *
simpar_megatron_describe(const SimparMegatron *meg)
{
    GString *s = g_string_new(NULL);
    g_string_append_printf(s, "Megatron arguments (%s), as simpar's flags:\n   ", meg->file);
    for (guint i = 0; meg->argv->pdata[i] != NULL; i++)
        g_string_append_printf(s, " %s", (const char *) meg->argv->pdata[i]);
    g_string_append(s, "\n  used:\n");
    for (guint i = 0; i + 1 < meg->used->len; i += 2)
        g_string_append_printf(s, "    %s -> %s\n", (const char *) meg->used->pdata[i],
                               (const char *) meg->used->pdata[i + 1]);
    g_string_append_printf(s, "  ignored (%u):%s\n", meg->notes->len / 2,
                           meg->notes->len == 0 ? " none" : "");
    for (guint i = 0; i + 1 < meg->notes->len; i += 2)
        g_string_append_printf(s, "    %s: %s\n", (const char *) meg->notes->pdata[i],
                               (const char *) meg->notes->pdata[i + 1]);
    return g_string_free(s, FALSE); /* (transfer full) */
}

static void
meg_json_pairs(JsonBuilder *b, const char *member, const GPtrArray *pairs, const char *k1,
               const char *k2)
{
    json_builder_set_member_name(b, member);
    json_builder_begin_array(b);
    for (guint i = 0; i + 1 < pairs->len; i += 2) {
        json_builder_begin_object(b);
        json_builder_set_member_name(b, k1);
        json_builder_add_string_value(b, pairs->pdata[i]);
        json_builder_set_member_name(b, k2);
        json_builder_add_string_value(b, pairs->pdata[i + 1]);
        json_builder_end_object(b);
    }
    json_builder_end_array(b);
}

void
simpar_megatron_to_json(const SimparMegatron *meg, JsonBuilder *b)
{
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "source");
    json_builder_add_string_value(b, meg->file);
    json_builder_set_member_name(b, "simpar_args");
    json_builder_begin_array(b);
    for (guint i = 0; meg->argv->pdata[i] != NULL; i++)
        json_builder_add_string_value(b, meg->argv->pdata[i]);
    json_builder_end_array(b);
    meg_json_pairs(b, "used", meg->used, "megatron", "simpar");
    meg_json_pairs(b, "ignored", meg->notes, "flag", "why");
    json_builder_end_object(b);
}

/* ---- Megatron's names on simpar's command line -------------------------------------------- */

static void
meg_set(char **field, const char *value)
{
    g_free(*field);
    *field = g_strdup(value);
}

/* The switches and values whose simpar spelling differs: --bf16, --swiglu, ... */
static gboolean
meg_alias_cb(const char *option, const char *value, gpointer data, GError **error)
{
    SimparJobArgs *a = data;
    const char *name = option + 2;
    if (g_str_equal(name, "bf16") || g_str_equal(name, "fp16"))
        meg_set(&a->dtype, name);
    else if (g_str_equal(name, "swiglu"))
        meg_set(&a->mlp, "swiglu");
    else if (g_str_equal(name, "disable-bias-linear"))
        meg_set(&a->bias, "off");
    else if (g_str_equal(name, "use-distributed-optimizer"))
        a->zero = 1;
    else if (g_str_equal(name, "accumulate-allreduce-grads-in-fp32"))
        meg_set(&a->grad_reduce_dtype, "fp32");
    else if (g_str_equal(name, "normalization") &&
             (g_str_equal(value, "LayerNorm") || g_str_equal(value, "RMSNorm")))
        meg_set(&a->norm, g_str_equal(value, "RMSNorm") ? "rmsnorm" : "layernorm");
    else if (g_str_equal(name, "cp-comm-type") &&
             (g_str_equal(value, "p2p") || g_str_equal(value, "allgather")))
        meg_set(&a->cp_mode, simpar_job_cp_mode_name(g_str_equal(value, "p2p")));
    else if (g_str_equal(name, "mtp-loss-scaling-factor") && !meg_loss_weight(value)) {
        g_set_error(error, SIMPAR_JOB_ERROR, SIMPAR_JOB_ERROR_USAGE,
                    "%s %s: valid is a number from 0 (the multi-token prediction loss's weight)",
                    option, value);
        return FALSE;
    } else if (!g_str_equal(name, "untie-embeddings-and-output-weights") &&
               !g_str_equal(name, "mtp-loss-scaling-factor") &&
               !g_str_equal(name, "group-query-attention") &&
               !g_str_equal(name, "moe-router-load-balancing-type")) {
        g_set_error(error, SIMPAR_JOB_ERROR, SIMPAR_JOB_ERROR_USAGE, "%s %s: valid are %s", option,
                    value,
                    g_str_equal(name, "normalization") ? "LayerNorm and RMSNorm"
                                                       : "p2p and allgather (a2a is not modelled)");
        return FALSE;
    }
    return TRUE;
}

GOptionGroup *
simpar_megatron_aliases(SimparJobArgs *a)
{
    /* a callback entry's arg_data is the function: copied, as ISO C casts no function pointer
     * to an object pointer */
    GOptionArgFunc fn = meg_alias_cb;
    gpointer cb;
    G_STATIC_ASSERT(sizeof(cb) == sizeof(fn));
    memcpy(&cb, &fn, sizeof(cb));
    const GOptionEntry entries[] = {
        {"tensor-model-parallel-size", 0, 0, G_OPTION_ARG_INT64, &a->tp, "--tp", "T"},
        {"pipeline-model-parallel-size", 0, 0, G_OPTION_ARG_INT64, &a->pp, "--pp", "P"},
        {"context-parallel-size", 0, 0, G_OPTION_ARG_INT64, &a->cp, "--cp", "C"},
        {"cp-comm-type", 0, 0, G_OPTION_ARG_CALLBACK, cb,
         "--cp-mode: p2p is ring, allgather allgather", "p2p|allgather"},
        {"sequence-parallel", 0, 0, G_OPTION_ARG_NONE, &a->sp, "--sp", NULL},
        {"num-layers", 0, 0, G_OPTION_ARG_INT64, &a->layers, "--layers", "L"},
        {"hidden-size", 0, 0, G_OPTION_ARG_INT64, &a->hidden, "--hidden", "H"},
        {"ffn-hidden-size", 0, 0, G_OPTION_ARG_INT64, &a->ffn, "--ffn", "F"},
        {"num-attention-heads", 0, 0, G_OPTION_ARG_INT64, &a->heads, "--heads", "A"},
        {"group-query-attention", 0, G_OPTION_FLAG_NO_ARG, G_OPTION_ARG_CALLBACK, cb,
         "accepted; --num-query-groups gives the groups", NULL},
        {"num-query-groups", 0, 0, G_OPTION_ARG_INT64, &a->kv_heads, "--kv-heads", "G"},
        {"seq-length", 0, 0, G_OPTION_ARG_INT64, &a->seq, "--seq", "S"},
        {"micro-batch-size", 0, 0, G_OPTION_ARG_INT64, &a->micro_batch, "--micro-batch", "B"},
        {"global-batch-size", 0, 0, G_OPTION_ARG_INT64, &a->global_batch, "--global-batch", "B"},
        {"recompute-granularity", 0, 0, G_OPTION_ARG_STRING, &a->recompute,
         "--recompute: selective or full (every layer)", "R"},
        {"microbatch-group-size-per-virtual-pipeline-stage", 0, 0, G_OPTION_ARG_INT64, &a->vp_group,
         "--vp-group", "N"},
        {"decoder-first-pipeline-num-layers", 0, 0, G_OPTION_ARG_INT64, &a->first_stage_layers,
         "--first-stage-layers", "N"},
        {"decoder-last-pipeline-num-layers", 0, 0, G_OPTION_ARG_INT64, &a->last_stage_layers,
         "--last-stage-layers", "N"},
        {"ddp-bucket-size", 0, 0, G_OPTION_ARG_INT64, &a->bucket_params, "--bucket-params", "N"},
        {"num-experts", 0, 0, G_OPTION_ARG_INT64, &a->experts, "--experts", "E"},
        {"moe-router-topk", 0, 0, G_OPTION_ARG_INT64, &a->top_k, "--topk", "K"},
        {"expert-model-parallel-size", 0, 0, G_OPTION_ARG_INT64, &a->ep, "--ep", "EP"},
        {"expert-tensor-parallel-size", 0, 0, G_OPTION_ARG_INT64, &a->etp, "--etp", "ETP"},
        {"moe-ffn-hidden-size", 0, 0, G_OPTION_ARG_INT64, &a->moe_ffn, "--moe-ffn", "F"},
        {"moe-shared-expert-intermediate-size", 0, 0, G_OPTION_ARG_INT64, &a->shared_ffn,
         "--shared-ffn", "F"},
        {"moe-layer-freq", 0, 0, G_OPTION_ARG_INT64, &a->moe_every,
         "--moe-every (an integer; Megatron's list patterns are not read)", "N"},
        {"moe-router-score-function", 0, 0, G_OPTION_ARG_STRING, &a->router, "--router",
         "softmax|sigmoid"},
        {"moe-router-num-groups", 0, 0, G_OPTION_ARG_INT64, &a->expert_groups, "--expert-groups",
         "G"},
        {"moe-router-group-topk", 0, 0, G_OPTION_ARG_INT64, &a->group_limit, "--group-limit", "M"},
        {"moe-expert-capacity-factor", 0, 0, G_OPTION_ARG_STRING, &a->capacity_factor,
         "--capacity-factor", "CF"},
        {"moe-router-load-balancing-type", 0, 0, G_OPTION_ARG_CALLBACK, cb,
         "accepted and ignored: the balancing loss costs a few kernels simpar does not model; "
         "--imbalance gives the load it leaves",
         "T"},
        {"bf16", 0, G_OPTION_FLAG_NO_ARG, G_OPTION_ARG_CALLBACK, cb, "--dtype bf16", NULL},
        {"fp16", 0, G_OPTION_FLAG_NO_ARG, G_OPTION_ARG_CALLBACK, cb, "--dtype fp16", NULL},
        {"swiglu", 0, G_OPTION_FLAG_NO_ARG, G_OPTION_ARG_CALLBACK, cb, "--mlp swiglu", NULL},
        {"normalization", 0, 0, G_OPTION_ARG_CALLBACK, cb, "--norm", "LayerNorm|RMSNorm"},
        {"disable-bias-linear", 0, G_OPTION_FLAG_NO_ARG, G_OPTION_ARG_CALLBACK, cb, "--bias off",
         NULL},
        {"untie-embeddings-and-output-weights", 0, G_OPTION_FLAG_NO_ARG, G_OPTION_ARG_CALLBACK, cb,
         "accepted: simpar's default (--tied-embeddings ties them)", NULL},
        {"use-distributed-optimizer", 0, G_OPTION_FLAG_NO_ARG, G_OPTION_ARG_CALLBACK, cb,
         "--zero 1", NULL},
        {"accumulate-allreduce-grads-in-fp32", 0, G_OPTION_FLAG_NO_ARG, G_OPTION_ARG_CALLBACK, cb,
         "--grad-reduce-dtype fp32", NULL},
        {"mtp-num-layers", 0, 0, G_OPTION_ARG_INT64, &a->mtp_layers, "--mtp-layers", "N"},
        {"mtp-loss-scaling-factor", 0, 0, G_OPTION_ARG_CALLBACK, cb,
         "accepted: the multi-token prediction loss's weight (no cost)", "F"},
        G_OPTION_ENTRY_NULL,
    };
    GOptionGroup *g = g_option_group_new(
        "megatron",
        "Megatron-LM's names for simpar's flags (a spelling: simpar's defaults hold; "
        "--megatron-args FILE reads a whole launch script with Megatron's defaults):",
        "Show the Megatron-LM names simpar accepts", a, NULL);
    g_option_group_add_entries(g, entries);
    return g; /* (transfer full) */
}
