/* layout.c - Megatron-Core's pipeline layout string (--pipeline-model-parallel-layout, see
 * train.h): its expansion and its checks that need no model.
 *
 * The syntax is megatron/core/transformer/pipeline_parallel_layer_layout.py's
 * (parse_str_to_list): commas are dropped, "(group)*N" and "x*N" are repeated, '|' ends a
 * virtual stage, and the symbols are E (embedding), t (decoder layer), m (multi-token
 * prediction layer) and L (output layer and loss). Megatron-Core's regular expressions do not
 * expand nested parentheses; they are refused here. */
#include "train.h"
#include <string.h>

#define LAYOUT_FLAG "--pipeline-model-parallel-layout"
/* The most symbols an expansion may have (the split's largest: 2^20 chunks). */
#define LAYOUT_MAX_SYMBOLS (1u << 22)

static gboolean layout_fail(GError **error, const char *text, guint at, const char *fmt, ...)
    G_GNUC_PRINTF(4, 5);

static gboolean
layout_fail(GError **error, const char *text, guint at, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    g_autofree char *why = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    /* at: a 0-based position in text, or G_MAXUINT for the whole string */
    g_autofree char *pos =
        at == G_MAXUINT ? g_strdup("") : g_strdup_printf("at position %u, ", at + 1);
    g_set_error(error, SIMPAR_PLAN_ERROR, SIMPAR_PLAN_ERROR_INVALID,
                "%s \"%s\": %s%s (valid: E embedding, t decoder layer, m "
                "multi-token prediction layer, L loss, '|' between virtual stages, x*N or "
                "(group)*N to repeat, commas ignored; e.g. \"Et*4|(t*4|)*14tmL\")",
                LAYOUT_FLAG, text, pos, why);
    return FALSE;
}

static gboolean
layout_symbol(char c)
{
    return c == 'E' || c == 't' || c == 'm' || c == 'L' || c == '|';
}

/* The count N after a '*' at s[*i] (1-based positions in `text` through `at`), past it. */
static gboolean
layout_count(const char *s, const guint *at, guint *i, const char *text, guint64 *n, GError **error)
{
    if (s[*i] != '*')
        return TRUE; /* no repetition: once */
    if (!g_ascii_isdigit(s[*i + 1]))
        return layout_fail(error, text, at[*i], "'*' needs a count after it");
    guint64 v = 0;
    for (*i += 1; g_ascii_isdigit(s[*i]); *i += 1) {
        v = v * 10 + (guint64) (s[*i] - '0');
        if (v > LAYOUT_MAX_SYMBOLS)
            return layout_fail(error, text, at[*i], "the count exceeds %u", LAYOUT_MAX_SYMBOLS);
    }
    *n = v;
    return TRUE;
}

/* Appends `piece` (len bytes) n times to out, within the symbol limit. */
static gboolean
layout_repeat(GString *out, const char *piece, gsize len, guint64 n, const char *text, guint at,
              GError **error)
{
    if ((guint64) out->len + (guint64) len * n > LAYOUT_MAX_SYMBOLS)
        return layout_fail(error, text, at, "the expansion exceeds %u symbols", LAYOUT_MAX_SYMBOLS);
    for (guint64 k = 0; k < n; k++)
        g_string_append_len(out, piece, (gssize) len);
    return TRUE;
}

/* The expansion of s[from, to) (commas dropped, `at` their positions in `text`) appended to
 * out: its symbols and '|', every repetition unrolled; a group's content is expanded first, then
 * repeated, as Megatron-Core's two substitutions do. */
static gboolean
layout_expand(const char *s, const guint *at, guint from, guint to, gboolean in_group,
              const char *text, GString *out, GError **error)
{
    for (guint i = from; i < to;) {
        char c = s[i];
        guint64 times = 1;
        if (c == '(') {
            if (in_group)
                return layout_fail(error, text, at[i], "'(' inside a group: groups do not nest");
            guint j = i + 1;
            while (j < to && s[j] != ')' && s[j] != '(')
                j++;
            if (j < to && s[j] == '(')
                return layout_fail(error, text, at[j], "'(' inside a group: groups do not nest");
            if (j == to)
                return layout_fail(error, text, at[i], "'(' has no closing ')'");
            if (j == i + 1)
                return layout_fail(error, text, at[i], "the group is empty");
            guint after = j + 1;
            if (s[after] != '*')
                return layout_fail(error, text, at[j],
                                   "a group needs a repetition count (*N) after its ')'");
            g_autoptr(GString) group = g_string_new(NULL);
            if (!layout_expand(s, at, i + 1, j, TRUE, text, group, error) ||
                !layout_count(s, at, &after, text, &times, error) ||
                !layout_repeat(out, group->str, group->len, times, text, at[i], error))
                return FALSE;
            i = after;
        } else if (layout_symbol(c)) {
            guint after = i + 1;
            if (!layout_count(s, at, &after, text, &times, error) ||
                !layout_repeat(out, &s[i], 1, times, text, at[i], error))
                return FALSE;
            i = after;
        } else if (c == ')') {
            return layout_fail(error, text, at[i], "')' has no opening '('");
        } else if (c == '*') {
            return layout_fail(error, text, at[i], "'*' needs a symbol or a group before it");
        } else {
            return layout_fail(error, text, at[i], "'%c' is not a layer symbol", c);
        }
    }
    return TRUE;
}

/* Drops the commas (cosmetic) and expands the rest. */
static gboolean
layout_expand_text(const char *text, GString *out, GError **error)
{
    gsize len = strlen(text);
    g_autofree char *s = g_malloc(len + 2);
    g_autofree guint *at = g_new(guint, len + 2);
    guint n = 0;
    for (guint k = 0; k < len; k++)
        if (text[k] != ',')
            s[n] = text[k], at[n++] = k;
    s[n] = s[n + 1] = '\0', at[n] = at[n + 1] = (guint) len;
    return layout_expand(s, at, 0, n, FALSE, text, out, error);
}

G_LOCK_DEFINE_STATIC(layout_cache);
static GHashTable *layout_cache; /* interned text -> SimparLayout, kept as interned strings are */

/* The checks of pipeline_parallel_layer_layout.py's validate_layer_layout that need no model:
 * E first and once, L last and once, no decoder layer after an MTP layer; simpar also keeps the
 * MTP layers with the loss (models/step.c runs them after the output layer of the last virtual
 * stage), where Megatron-Core may give them a virtual stage of their own. */
static gboolean
layout_build(const char *text, SimparLayout *lay, GError **error)
{
    g_autoptr(GString) x = g_string_new(NULL);
    if (!layout_expand_text(text, x, error))
        return FALSE;
    guint chunks = 1;
    for (gsize k = 0; k < x->len; k++)
        chunks += x->str[k] == '|';
    guint *layers = g_new0(guint, chunks);
    guint vs = 0, n_embed = 0, n_loss = 0, mtp_stage = G_MAXUINT, embed_stage = 0, loss_stage = 0;
    gboolean after_mtp = FALSE;
    const char *first = NULL, *last = NULL;
    for (gsize k = 0; k < x->len; k++) {
        char c = x->str[k];
        if (c == '|') {
            vs++;
            continue;
        }
        first = first != NULL ? first : &x->str[k];
        last = &x->str[k];
        layers[vs] += c == 't';
        n_embed += c == 'E', n_loss += c == 'L';
        embed_stage = c == 'E' ? vs : embed_stage, loss_stage = c == 'L' ? vs : loss_stage;
        if (c == 'm')
            lay->mtp++, mtp_stage = vs, after_mtp = TRUE;
        if (c == 't' && after_mtp) {
            g_free(layers);
            return layout_fail(error, text, G_MAXUINT,
                               "a decoder layer (t) follows an MTP layer (m): the decoder layers "
                               "come first, as Megatron-Core requires");
        }
    }
    const char *why = NULL;
    if (n_embed != 1 || first == NULL || *first != 'E')
        why = "the embedding (E) must be the first symbol and appear once";
    else if (n_loss != 1 || *last != 'L')
        why = "the loss (L) must be the last symbol and appear once";
    else if (embed_stage != 0 || loss_stage != chunks - 1)
        why = "the embedding (E) must sit in the first virtual stage and the loss (L) in the last "
              "(an empty stage before E or after L is not modelled)";
    else if (lay->mtp > 0 && mtp_stage != chunks - 1)
        why = "the MTP layers (m) must sit in the last virtual stage, with the loss: simpar runs "
              "them after the output layer (a virtual stage of their own is not modelled)";
    if (why != NULL) {
        g_free(layers);
        return layout_fail(error, text, G_MAXUINT, "%s", why);
    }
    lay->text = g_intern_string(text);
    lay->chunks = chunks;
    lay->layers = layers;
    lay->first_layer = g_new0(guint, chunks + 1);
    for (guint k = 0; k < chunks; k++)
        lay->first_layer[k + 1] = lay->first_layer[k] + layers[k];
    lay->total = lay->first_layer[chunks];
    return TRUE;
}

const SimparLayout *
simpar_layout_parse(const char *text, GError **error)
{
    g_return_val_if_fail(text != NULL, NULL);
    const char *key = g_intern_string(text);
    G_LOCK(layout_cache);
    if (layout_cache == NULL)
        layout_cache = g_hash_table_new(g_direct_hash, g_direct_equal);
    SimparLayout *lay = g_hash_table_lookup(layout_cache, key);
    G_UNLOCK(layout_cache);
    if (lay != NULL)
        return lay;
    SimparLayout built = {0};
    if (!layout_build(key, &built, error))
        return NULL;
    G_LOCK(layout_cache);
    lay = g_hash_table_lookup(layout_cache, key);
    if (lay == NULL) {
        lay = g_memdup2(&built, sizeof built);
        g_hash_table_insert(layout_cache, (gpointer) key, lay);
    } else {
        g_free(built.layers), g_free(built.first_layer);
    }
    G_UNLOCK(layout_cache);
    return lay;
}
