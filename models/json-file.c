/* json-file.c - reading the JSON files a user gives (models, calibrations, measured runs,
 * traces, plot inputs): bounded in size, checked before JSON-GLib parses them.
 *
 * JSON-GLib parses recursively (a file nested 100,000 deep overflows the stack), keeps the last
 * of two members of one name without a word, and accepts a second value after the first. So
 * before it parses, one pass over the text (strings skipped, escapes and all) refuses nesting
 * deeper than SIMPAR_JSON_MAX_DEPTH, a member name given twice in one object, and anything but
 * blanks after the top value; each with the line it is on. JSON-GLib then parses what passed
 * and reports its own errors.
 */
#include "model.h"
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* One open container of the scan: an object keeps its member names (the raw bytes between
 * the quotes) to find one given twice. */
typedef struct {
    gboolean object;
    GHashTable *names; /* objects only: owned strings */
} JsonLevel;

static void
json_level_clear(gpointer p)
{
    JsonLevel *l = p;
    g_clear_pointer(&l->names, g_hash_table_unref);
}

static gboolean
json_guard_fail(const char *path, guint line, GError **error, const char *what)
{
    g_set_error(error, SIMPAR_MODEL_ERROR, SIMPAR_MODEL_ERROR_INVALID, "%s:%u: %s", path, line,
                what);
    return FALSE;
}

/* What JSON-GLib would let through: nesting deeper than SIMPAR_JSON_MAX_DEPTH (its recursive
 * parser overflows the stack) or a member name twice in one object (it keeps the last): FALSE
 * naming `path` and the line. *trailing gets the line of anything after the top value (0:
 * none) and *parse_len the bytes before it (JSON-GLib leaks the first of two values: parse
 * only those), for json_trailing() once JSON-GLib has parsed them without an error of its own
 * (for text that is not JSON its error says more). */
static gboolean
json_guard(const char *text, gsize len, const char *path, guint *trailing, gsize *parse_len,
           GError **error)
{
    *trailing = 0, *parse_len = len;
    g_autoptr(GArray) stack = g_array_new(FALSE, FALSE, sizeof(JsonLevel));
    g_array_set_clear_func(stack, json_level_clear);
    guint line = 1;
    gboolean done = FALSE; /* the top value is complete */
    const char *key = NULL;
    gsize key_len = 0;
    for (gsize i = 0; i < len; i++) {
        char c = text[i];
        if (c == '\n') {
            line++;
            continue;
        }
        if (c == ' ' || c == '\t' || c == '\r')
            continue;
        if (done) {                           /* a complaint once JSON-GLib has found no other */
            *trailing = line, *parse_len = i; /* JSON-GLib leaks the first of two values */
            return TRUE;
        }
        if (c == '"') {
            gsize start = ++i;
            while (i < len && text[i] != '"') {
                if (text[i] == '\\')
                    i++;
                else if (text[i] == '\n')
                    line++;
                i++;
            }
            if (i >= len)
                return TRUE; /* unterminated: JSON-GLib says where */
            key = text + start, key_len = i - start;
            done = stack->len == 0;
            continue;
        }
        if (c == ':' && key != NULL && stack->len > 0) {
            JsonLevel *top = &g_array_index(stack, JsonLevel, stack->len - 1);
            if (top->object) {
                char *name = g_strndup(key, key_len);
                if (g_hash_table_contains(top->names, name)) {
                    g_autofree char *msg = g_strdup_printf(
                        "member \"%s\" is given twice in one object (each name once)", name);
                    g_free(name);
                    return json_guard_fail(path, line, error, msg);
                }
                g_hash_table_add(top->names, name);
            }
        }
        key = NULL;
        if (c == '{' || c == '[') {
            if (stack->len >= SIMPAR_JSON_MAX_DEPTH) {
                g_autofree char *msg = g_strdup_printf(
                    "nested deeper than %d levels (objects and arrays)", SIMPAR_JSON_MAX_DEPTH);
                return json_guard_fail(path, line, error, msg);
            }
            JsonLevel l = {c == '{',
                           c == '{' ? g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL)
                                    : NULL};
            g_array_append_val(stack, l);
        } else if (c == '}' || c == ']') {
            if (stack->len == 0)
                return TRUE; /* JSON-GLib says where */
            g_array_set_size(stack, stack->len - 1);
            done = stack->len == 0;
        } else if (stack->len == 0 && c != ',' && c != ':') {
            /* a bare top value (a number, true, ...): it ends at the next blank */
            while (i + 1 < len && strchr(" \t\r\n", text[i + 1]) == NULL)
                i++;
            done = TRUE;
        }
    }
    return TRUE;
}

static gboolean
json_trailing(const char *path, guint trailing, GError **error)
{
    return trailing == 0 ||
           json_guard_fail(path, trailing, error,
                           "more after the top value (a file holds one JSON value)");
}

gboolean
simpar_file_read(const char *path, gsize max_bytes, char **text, gsize *len, GError **error)
{
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        g_set_error(error, G_FILE_ERROR, g_file_error_from_errno(e), "%s: %s", path, g_strerror(e));
        return FALSE;
    }
    struct stat st;
    if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
        close(fd);
        g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_ISDIR, "%s: is a directory, not a file",
                    path);
        return FALSE;
    }
    /* read up to one byte past the cap: a device or a pipe (/dev/zero) has no size to ask */
    GString *buf = g_string_sized_new(4096);
    char chunk[65536];
    for (;;) {
        ssize_t n = read(fd, chunk, sizeof chunk);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            int e = errno;
            close(fd);
            g_string_free(buf, TRUE);
            g_set_error(error, G_FILE_ERROR, g_file_error_from_errno(e), "%s: %s", path,
                        g_strerror(e));
            return FALSE;
        }
        if (n == 0)
            break;
        g_string_append_len(buf, chunk, n);
        if (buf->len > max_bytes) {
            close(fd);
            g_string_free(buf, TRUE);
            g_set_error(error, SIMPAR_MODEL_ERROR, SIMPAR_MODEL_ERROR_INVALID,
                        "%s: larger than %" G_GSIZE_FORMAT " MiB, the most simpar reads of such "
                        "a file",
                        path, max_bytes >> 20);
            return FALSE;
        }
    }
    close(fd);
    *len = buf->len;
    *text = g_string_free(buf, FALSE);
    return TRUE;
}

gboolean
simpar_json_load_file(JsonParser *parser, const char *path, gsize max_bytes, GError **error)
{
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    g_autofree char *text = NULL;
    gsize len = 0;
    return simpar_file_read(path, max_bytes, &text, &len, error) &&
           simpar_json_parse(parser, text, len, path, error);
}

gboolean
simpar_json_parse(JsonParser *parser, const char *text, gsize len, const char *path, GError **error)
{
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    guint trailing;
    gsize parse_len;
    if (!json_guard(text, len, path, &trailing, &parse_len, error))
        return FALSE;
    GError *local = NULL;
    if (json_parser_load_from_data(parser, text, (gssize) parse_len, &local))
        return json_trailing(path, trailing, error);
    /* "<data>:2:0: Parse error: ..." names no file */
    const char *msg = local->message;
    if (g_str_has_prefix(msg, "<data>"))
        msg += strlen("<data>");
    g_set_error(error, local->domain, local->code, "%s%s%s", path, msg[0] == ':' ? "" : ": ", msg);
    g_error_free(local);
    return FALSE;
}

JsonObject *
simpar_json_load_object(JsonParser *parser, const char *path, gsize max_bytes, GError **error)
{
    g_return_val_if_fail(error == NULL || *error == NULL, NULL);
    if (!simpar_json_load_file(parser, path, max_bytes, error))
        return NULL;
    JsonNode *root = json_parser_get_root(parser);
    if (root == NULL || !JSON_NODE_HOLDS_OBJECT(root)) {
        g_set_error(error, SIMPAR_MODEL_ERROR, SIMPAR_MODEL_ERROR_PARSE,
                    "%s: the file must hold one JSON object", path);
        return NULL;
    }
    return json_node_get_object(root); /* (transfer none) */
}

char *
simpar_json_builder_text(JsonBuilder *b, gsize *len)
{
    g_autoptr(JsonGenerator) gen = json_generator_new();
    g_autoptr(JsonNode) root = json_builder_get_root(b);
    json_generator_set_root(gen, root);
    json_generator_set_pretty(gen, TRUE);
    return json_generator_to_data(gen, len); /* (transfer full) */
}

void
simpar_json_head(JsonBuilder *b, const char *format, gint64 version)
{
    json_builder_set_member_name(b, "format");
    json_builder_add_string_value(b, format);
    json_builder_set_member_name(b, "version");
    json_builder_add_int_value(b, version);
}
