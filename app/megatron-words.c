/* megatron-words.c - a shell script cut into words without running it (megatron.h).
 *
 * Quotes ('...' literal, "..." with $ expansions and \ escapes), backslash continuations,
 * comments, the operators ; & | ( ) < > and assignments NAME=VALUE at the start of a command
 * (bash arrays NAME=( ... ) give their elements as words). $NAME, ${NAME} and ${NAME:-word}
 * take the values the file assigned before; anything else ($1, $(...), $((...)), `...`,
 * ${X[@]}, a variable the file does not set) leaves its word unresolved. A quoted word that
 * starts with "--" and holds blanks ("--fp8-format hybrid" in an array expanded unquoted) is
 * split at them, as the unquoted expansion would.
 */
#include "megatron-private.h"
#include <string.h>

typedef struct {
    const char *s;
    gsize i, n;
    guint line;
    GHashTable *vars; /* name -> value (owned), only plain values */
    GArray *words;    /* MegWord */
    gboolean command_start;
} MegLex;

static gboolean
meg_is_name_char(char c, gboolean first)
{
    return c == '_' || g_ascii_isalpha(c) || (!first && g_ascii_isdigit(c));
}

static gboolean
meg_is_operator(char c)
{
    return strchr(";&|()<>", c) != NULL;
}

/* Skips a balanced $( ... ) or ${ ... } from the opening bracket at lx->i. */
static void
meg_skip_balanced(MegLex *lx, char open, char close)
{
    guint depth = 0;
    for (; lx->i < lx->n; lx->i++) {
        char c = lx->s[lx->i];
        if (c == '\n')
            lx->line++;
        if (c == open)
            depth++;
        else if (c == close && --depth == 0) {
            lx->i++;
            return;
        }
    }
}

/* ${NAME}, ${NAME:-word}, ${NAME-word}, ${NAME:=word}: the value, or NULL (unresolved). */
static const char *
meg_brace(MegLex *lx, GString *scratch)
{
    gsize start = lx->i + 1; /* after '{' */
    meg_skip_balanced(lx, '{', '}');
    gsize end = lx->i - 1; /* at '}' */
    g_autofree char *inner = g_strndup(lx->s + start, end > start ? end - start : 0);
    gsize k = 0;
    while (inner[k] != '\0' && meg_is_name_char(inner[k], k == 0))
        k++;
    if (k == 0)
        return NULL;
    g_autofree char *name = g_strndup(inner, k);
    const char *value = g_hash_table_lookup(lx->vars, name);
    const char *rest = inner + k;
    if (*rest == '\0')
        return value;
    const char *word = g_str_has_prefix(rest, ":-") || g_str_has_prefix(rest, ":=") ? rest + 2
                       : *rest == '-' || *rest == '='                               ? rest + 1
                                                                                    : NULL;
    if (word == NULL)
        return NULL; /* ${X[@]}, ${X#...}, ... */
    if (value != NULL)
        return value;
    gsize len = strlen(word);
    if (len >= 2 && (word[0] == '"' || word[0] == '\'') && word[len - 1] == word[0])
        word++, len -= 2;
    if (memchr(word, '$', len) != NULL || memchr(word, '`', len) != NULL)
        return NULL;
    g_string_assign(scratch, "");
    g_string_append_len(scratch, word, (gssize) len);
    return scratch->str;
}

static gboolean meg_expand(MegLex *lx, GString *out);

/* A $ expansion at lx->i into `out`; unresolved, its text as written. */
static gboolean
meg_dollar(MegLex *lx, GString *out)
{
    gsize start = lx->i;
    if (meg_expand(lx, out))
        return TRUE;
    g_string_append_len(out, lx->s + start, (gssize) (lx->i - start));
    return FALSE;
}

static gboolean
meg_expand(MegLex *lx, GString *out)
{
    lx->i++; /* '$' */
    if (lx->i >= lx->n) {
        g_string_append_c(out, '$');
        return TRUE;
    }
    char c = lx->s[lx->i];
    if (c == '(') {
        meg_skip_balanced(lx, '(', ')');
        return FALSE;
    }
    if (c == '{') {
        g_autoptr(GString) scratch = g_string_new(NULL);
        const char *v = meg_brace(lx, scratch);
        if (v != NULL)
            g_string_append(out, v);
        return v != NULL;
    }
    if (!meg_is_name_char(c, TRUE)) {
        if (g_ascii_isdigit(c) || strchr("@*#?$!-", c) != NULL) {
            lx->i++;
            return FALSE; /* positional and special parameters */
        }
        g_string_append_c(out, '$');
        return TRUE;
    }
    gsize start = lx->i;
    while (lx->i < lx->n && meg_is_name_char(lx->s[lx->i], FALSE))
        lx->i++;
    g_autofree char *name = g_strndup(lx->s + start, lx->i - start);
    const char *v = g_hash_table_lookup(lx->vars, name);
    if (v != NULL)
        g_string_append(out, v);
    return v != NULL;
}

/* The inside of "...", from after the opening quote. */
static void
meg_double_quoted(MegLex *lx, GString *out, gboolean *resolved)
{
    while (lx->i < lx->n && lx->s[lx->i] != '"') {
        char c = lx->s[lx->i];
        if (c == '\\' && lx->i + 1 < lx->n && strchr("\"\\$`\n", lx->s[lx->i + 1]) != NULL) {
            if (lx->s[lx->i + 1] == '\n')
                lx->line++;
            else
                g_string_append_c(out, lx->s[lx->i + 1]);
            lx->i += 2;
        } else if (c == '$') {
            *resolved &= meg_dollar(lx, out);
        } else if (c == '`') {
            lx->i++;
            while (lx->i < lx->n && lx->s[lx->i] != '`')
                lx->i++;
            lx->i++;
            *resolved = FALSE;
        } else {
            if (c == '\n')
                lx->line++;
            g_string_append_c(out, c);
            lx->i++;
        }
    }
    lx->i++; /* the closing quote */
}

static void
meg_push(MegLex *lx, const char *text, guint line, gboolean resolved)
{
    MegWord w = {g_strdup(text), line, resolved};
    g_array_append_val(lx->words, w);
}

/* A finished word: an assignment at a command's start, or words. */
static void
meg_word_end(MegLex *lx, GString *w, gssize assign_at, gboolean resolved, gboolean quoted,
             guint line)
{
    if (assign_at >= 0 && lx->command_start) {
        g_autofree char *name = g_strndup(w->str, (gsize) assign_at);
        if (resolved)
            g_hash_table_insert(lx->vars, g_steal_pointer(&name), g_strdup(w->str + assign_at + 1));
        else
            g_hash_table_remove(lx->vars, name);
        return; /* the command starts after its assignments */
    }
    const char *keep[] = {"export", "local", "declare", "readonly", "then", "do",
                          "else",   "{",     "!",       "time",     NULL};
    gboolean keyword = !quoted && g_strv_contains(keep, w->str);
    lx->command_start = keyword;
    if (quoted && g_str_has_prefix(w->str, "--") && strpbrk(w->str, " \t\n") != NULL) {
        g_auto(GStrv) parts = g_strsplit_set(w->str, " \t\n", -1);
        for (guint i = 0; parts[i] != NULL; i++)
            if (parts[i][0] != '\0')
                meg_push(lx, parts[i], line, resolved);
        return;
    }
    if (!keyword)
        meg_push(lx, w->str, line, resolved);
}

/* One word from lx->i (not a blank, newline, comment or operator). */
static void
meg_word(MegLex *lx)
{
    g_autoptr(GString) w = g_string_new(NULL);
    gboolean resolved = TRUE, quoted = FALSE;
    gssize assign_at = -1;
    guint line = lx->line;
    gboolean name_so_far = TRUE; /* the word so far is a NAME: '=' makes an assignment */
    while (lx->i < lx->n) {
        char c = lx->s[lx->i];
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || meg_is_operator(c))
            break;
        if (c == '=' && name_so_far && assign_at < 0 && w->len > 0) {
            assign_at = (gssize) w->len;
            g_string_append_c(w, c);
            lx->i++;
            continue;
        }
        if (assign_at < 0 && !meg_is_name_char(c, w->len == 0))
            name_so_far = FALSE;
        if (c == '\\') {
            if (lx->i + 1 < lx->n && lx->s[lx->i + 1] == '\n')
                lx->line++;
            else if (lx->i + 1 < lx->n)
                g_string_append_c(w, lx->s[lx->i + 1]);
            lx->i += 2;
        } else if (c == '\'') {
            quoted = TRUE;
            for (lx->i++; lx->i < lx->n && lx->s[lx->i] != '\''; lx->i++) {
                lx->line += lx->s[lx->i] == '\n';
                g_string_append_c(w, lx->s[lx->i]);
            }
            lx->i++;
        } else if (c == '"') {
            quoted = TRUE;
            lx->i++;
            meg_double_quoted(lx, w, &resolved);
        } else if (c == '$') {
            resolved &= meg_dollar(lx, w);
        } else if (c == '`') {
            for (lx->i++; lx->i < lx->n && lx->s[lx->i] != '`'; lx->i++)
                lx->line += lx->s[lx->i] == '\n';
            lx->i++;
            resolved = FALSE;
        } else {
            g_string_append_c(w, c);
            lx->i++;
        }
    }
    meg_word_end(lx, w, assign_at, resolved, quoted, line);
}

GArray *
meg_words(const char *text)
{
    MegLex lx = {text,
                 0,
                 strlen(text),
                 1,
                 g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free),
                 g_array_new(FALSE, FALSE, sizeof(MegWord)),
                 TRUE};
    while (lx.i < lx.n) {
        char c = lx.s[lx.i];
        if (c == '\\' && lx.i + 1 < lx.n && lx.s[lx.i + 1] == '\n') {
            lx.i += 2, lx.line++; /* a continuation: the command goes on */
        } else if (c == '\n') {
            lx.i++, lx.line++, lx.command_start = TRUE;
        } else if (c == ' ' || c == '\t' || c == '\r') {
            lx.i++;
        } else if (c == '#') {
            while (lx.i < lx.n && lx.s[lx.i] != '\n')
                lx.i++;
        } else if (meg_is_operator(c)) {
            lx.i++;
            lx.command_start = c != '(' && c != '<' && c != '>'; /* an array's elements: words */
        } else {
            meg_word(&lx);
        }
    }
    g_hash_table_unref(lx.vars);
    return lx.words; /* (transfer full) */
}

void
meg_words_free(GArray *words)
{
    for (guint i = 0; i < words->len; i++)
        g_free(g_array_index(words, MegWord, i).text);
    g_array_free(words, TRUE);
}
