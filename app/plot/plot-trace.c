/* plot-trace.c - a Chrome trace read as a stream of events (yajl), for the timeline plot.
 *
 *   file (or .gz) --read 64 KiB--> [inflate] --> yajl --callbacks--> one SimparTraceEvent at a
 *   time, its fields copied into the reader's buffers, handed to the caller, then forgotten
 *
 * The memory taken is the reader's few buffers and a container stack, whatever the trace's size:
 * a caller keeps what it draws. The rules of the whole-file reader (json-file.c) hold: at most
 * SIMPAR_JSON_MAX_DEPTH levels, a member name once per object, one value per file; errors name
 * the file and the line.
 */
#include "model.h"
#include "plot-private.h"
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yajl/yajl_parse.h>

/* The fields of an event kept: top-level ones, and those of its "args" object. */
enum {
    FIELD_PH,
    FIELD_NAME,
    FIELD_CAT,
    FIELD_PID,
    FIELD_TID,
    FIELD_TS,
    FIELD_DUR,
    FIELD_ARG_NAME,
    FIELD_ARG_AXIS,
    N_FIELDS,
    FIELD_ARGS = N_FIELDS, /* an event's "args" */
    FIELD_EVENTS,          /* the top-level object's "traceEvents" */
    FIELD_NONE,
};

/* Objects up to this many members find a name given twice by a scan; larger ones by a table. */
#define TRACE_KEYS_SCAN 32

/* One open container: an object keeps its member names to find one given twice. */
typedef struct {
    gboolean object, args; /* args: an event's "args" object */
    GString *keys;         /* the names, end to end */
    GArray *key_ends;      /* gsize: where each name ends in `keys` */
    GHashTable *table;     /* GBytes set, past TRACE_KEYS_SCAN names */
} TraceLevel;

typedef struct {
    const char *path;
    yajl_handle yajl;
    GArray *stack;           /* TraceLevel; its length is the depth */
    guint events_depth;      /* the events array's depth once open; G_MAXUINT once closed */
    gboolean done;           /* the top value is complete */
    guint field;             /* the member whose value comes next (FIELD_*) */
    GString *text[N_FIELDS]; /* string fields of the event being read */
    gboolean has[N_FIELDS];
    double num[N_FIELDS];
    SimparTraceEvent event;
    SimparTraceEventFunc func;
    gpointer data;
    guint line;        /* lines before the current chunk */
    const char *chunk; /* being parsed */
    GError *error;     /* a callback's */
} TraceReader;

static void
trace_level_clear(gpointer p)
{
    TraceLevel *l = p;
    if (l->keys != NULL)
        g_string_free(l->keys, TRUE);
    g_clear_pointer(&l->key_ends, g_array_unref);
    g_clear_pointer(&l->table, g_hash_table_unref);
}

/* The line the parser is on: the lines before the chunk, and the chunk's up to the parser. */
static guint
trace_line(const TraceReader *r)
{
    guint line = r->line;
    gsize at = r->chunk != NULL ? yajl_get_bytes_consumed(r->yajl) : 0;
    for (gsize i = 0; i < at; i++)
        line += r->chunk[i] == '\n';
    return line;
}

static int
trace_fail(TraceReader *r, const char *what)
{
    if (r->error == NULL)
        g_set_error(&r->error, SIMPAR_PLOT_ERROR, SIMPAR_PLOT_ERROR_INPUT, "%s:%u: %s", r->path,
                    trace_line(r), what);
    return 0;
}

/* Whether the parser is right inside the events array (its elements come next). */
static gboolean
trace_in_events(const TraceReader *r)
{
    return r->events_depth != 0 && r->stack->len == r->events_depth;
}

/* The element that ended, handed to the caller (`object`: FALSE for a number, a string, ...);
 * its fields forgotten for the next one. */
static int
trace_emit(TraceReader *r, gboolean object)
{
    SimparTraceEvent *e = &r->event;
    const char **strings[] = {&e->ph, &e->name, &e->cat};
    for (guint i = 0; i < G_N_ELEMENTS(strings); i++)
        *strings[i] = r->has[FIELD_PH + i] ? r->text[FIELD_PH + i]->str : NULL;
    e->arg_name = r->has[FIELD_ARG_NAME] ? r->text[FIELD_ARG_NAME]->str : NULL;
    e->arg_axis = r->has[FIELD_ARG_AXIS] ? r->text[FIELD_ARG_AXIS]->str : NULL;
    double *numbers[] = {&e->pid, &e->tid, &e->ts, &e->dur};
    for (guint i = 0; i < G_N_ELEMENTS(numbers); i++)
        *numbers[i] = r->has[FIELD_PID + i] ? r->num[FIELD_PID + i] : NAN;
    e->object = object;
    gboolean ok = r->func(e, r->data, &r->error);
    e->index++;
    memset(r->has, 0, sizeof r->has);
    return ok ? 1 : 0;
}

/* A JSON number's value. The common form, [-]digits[.digits] of at most 15 digits, directly:
 * its digits as an integer (exact below 2^53) over a power of ten (exact up to 10^22), one
 * correctly rounded division, the value strtod gives (Clinger's fast path); the rest by
 * g_ascii_strtod. */
static double
trace_number_value(const char *s, gsize len)
{
    static const double tens[] = {1e0, 1e1, 1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                  1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15};
    gsize i = s[0] == '-';
    guint64 m = 0;
    guint digits = 0, frac = 0;
    gboolean dot = FALSE;
    for (; i < len; i++) {
        if (s[i] == '.' && !dot) {
            dot = TRUE;
            continue;
        }
        if (!g_ascii_isdigit(s[i]) || ++digits > 15)
            break;
        m = m * 10 + (guint64) (s[i] - '0'), frac += dot;
    }
    if (i == len && digits > 0) {
        double v = (double) m / tens[frac];
        return s[0] == '-' ? -v : v;
    }
    char buf[64];
    if (len >= sizeof buf)
        return NAN; /* no number of 64 characters is an id or a time simpar reads */
    memcpy(buf, s, len);
    buf[len] = '\0';
    return g_ascii_strtod(buf, NULL);
}

/* A string (s != NULL, is_string), a number (s != NULL) or true, false, null (s == NULL). */
static int
trace_scalar(TraceReader *r, gboolean is_string, const char *s, gsize len)
{
    guint f = r->field;
    r->field = FIELD_NONE;
    if (r->stack->len == 0)
        return trace_fail(r, "expected a JSON object or array");
    if (trace_in_events(r))
        return trace_emit(r, FALSE);
    if (f >= N_FIELDS || s == NULL)
        return 1;
    gboolean want_string = f == FIELD_PH || f == FIELD_NAME || f == FIELD_CAT ||
                           f == FIELD_ARG_NAME || f == FIELD_ARG_AXIS;
    if (is_string != want_string)
        return 1; /* absent for its type: NULL or NaN */
    if (is_string) {
        if (r->text[f] == NULL)
            r->text[f] = g_string_sized_new(32);
        g_string_truncate(r->text[f], 0);
        g_string_append_len(r->text[f], s, (gssize) len);
    } else {
        r->num[f] = trace_number_value(s, len);
    }
    r->has[f] = TRUE;
    return 1;
}

static int
trace_null(void *ctx)
{
    return trace_scalar(ctx, FALSE, NULL, 0);
}

static int
trace_boolean(void *ctx, int v)
{
    (void) v;
    return trace_scalar(ctx, FALSE, NULL, 0);
}

static int
trace_number(void *ctx, const char *s, size_t len)
{
    return trace_scalar(ctx, FALSE, s, len);
}

static int
trace_string(void *ctx, const unsigned char *s, size_t len)
{
    return trace_scalar(ctx, TRUE, (const char *) s, len);
}

static int
trace_open(TraceReader *r, gboolean object)
{
    guint f = r->field;
    r->field = FIELD_NONE;
    if (r->stack->len >= SIMPAR_JSON_MAX_DEPTH) {
        g_autofree char *msg = g_strdup_printf("nested deeper than %d levels (objects and arrays)",
                                               SIMPAR_JSON_MAX_DEPTH);
        return trace_fail(r, msg);
    }
    TraceLevel l = {object, object && f == FIELD_ARGS, NULL, NULL, NULL};
    g_array_append_val(r->stack, l);
    /* the events: the top-level array, or the top-level object's traceEvents */
    if (!object && r->events_depth == 0 && (r->stack->len == 1 || f == FIELD_EVENTS))
        r->events_depth = r->stack->len;
    return 1;
}

static int
trace_start_map(void *ctx)
{
    return trace_open(ctx, TRUE);
}

static int
trace_start_array(void *ctx)
{
    return trace_open(ctx, FALSE);
}

static int
trace_end(void *ctx)
{
    TraceReader *r = ctx;
    gboolean object = g_array_index(r->stack, TraceLevel, r->stack->len - 1).object;
    g_array_set_size(r->stack, r->stack->len - 1);
    r->field = FIELD_NONE;
    if (r->stack->len == 0)
        r->done = TRUE;
    if (r->events_depth != 0 && r->events_depth != G_MAXUINT && r->stack->len < r->events_depth)
        r->events_depth = G_MAXUINT; /* the events array ended: no other is read */
    else if (trace_in_events(r))     /* one of its elements ended */
        return trace_emit(r, object);
    return 1;
}

/* FALSE for a member name given twice in the open object. */
static gboolean
trace_key_new(TraceLevel *l, const char *key, gsize len)
{
    if (l->keys == NULL) {
        l->keys = g_string_new(NULL);
        l->key_ends = g_array_new(FALSE, FALSE, sizeof(gsize));
    }
    if (l->table != NULL) {
        GBytes *b = g_bytes_new(key, len);
        if (g_hash_table_contains(l->table, b)) {
            g_bytes_unref(b);
            return FALSE;
        }
        g_hash_table_add(l->table, b);
        return TRUE;
    }
    gsize start = 0;
    for (guint i = 0; i < l->key_ends->len; i++) {
        gsize end = g_array_index(l->key_ends, gsize, i);
        if (end - start == len && memcmp(l->keys->str + start, key, len) == 0)
            return FALSE;
        start = end;
    }
    g_string_append_len(l->keys, key, (gssize) len);
    g_array_append_val(l->key_ends, l->keys->len);
    if (l->key_ends->len > TRACE_KEYS_SCAN) {
        l->table = g_hash_table_new_full(g_bytes_hash, g_bytes_equal,
                                         (GDestroyNotify) g_bytes_unref, NULL);
        start = 0;
        for (guint i = 0; i < l->key_ends->len; i++) {
            gsize end = g_array_index(l->key_ends, gsize, i);
            g_hash_table_add(l->table, g_bytes_new(l->keys->str + start, end - start));
            start = end;
        }
    }
    return TRUE;
}

static gboolean
trace_key_is(const char *key, gsize len, const char *want)
{
    return strlen(want) == len && memcmp(key, want, len) == 0;
}

/* The field a member fills: an event's (one level inside the events array), its args' (two
 * levels, in "args"), or the top-level object's traceEvents. */
static guint
trace_field(const TraceReader *r, const TraceLevel *l, const char *key, gsize len)
{
    static const char *const top[] = {"ph", "name", "cat", "pid", "tid", "ts", "dur"};
    if (r->events_depth == 0 && r->stack->len == 1)
        return trace_key_is(key, len, "traceEvents") ? FIELD_EVENTS : FIELD_NONE;
    if (r->events_depth == 0 || r->events_depth == G_MAXUINT)
        return FIELD_NONE;
    if (r->stack->len == r->events_depth + 1) {
        for (guint i = 0; i < G_N_ELEMENTS(top); i++)
            if (trace_key_is(key, len, top[i]))
                return FIELD_PH + i;
        return trace_key_is(key, len, "args") ? FIELD_ARGS : FIELD_NONE;
    }
    if (r->stack->len == r->events_depth + 2 && l->args)
        return trace_key_is(key, len, "name")   ? FIELD_ARG_NAME
               : trace_key_is(key, len, "axis") ? FIELD_ARG_AXIS
                                                : FIELD_NONE;
    return FIELD_NONE;
}

static int
trace_map_key(void *ctx, const unsigned char *s, size_t len)
{
    TraceReader *r = ctx;
    TraceLevel *l = &g_array_index(r->stack, TraceLevel, r->stack->len - 1);
    const char *key = (const char *) s;
    if (!trace_key_new(l, key, len)) {
        g_autofree char *name = g_strndup(key, len);
        g_autofree char *msg =
            g_strdup_printf("member \"%s\" is given twice in one object (each name once)", name);
        return trace_fail(r, msg);
    }
    r->field = trace_field(r, l, key, len);
    return 1;
}

static const yajl_callbacks trace_callbacks = {
    trace_null,   trace_boolean,   NULL,          NULL,      trace_number,
    trace_string, trace_start_map, trace_map_key, trace_end, trace_start_array,
    trace_end,
};

/* ------------------------------------------------------------------------------ the input */

/* yajl's complaint as one line: "parse error: ..." or "lexical error: ...", without the
 * excerpt it draws under the text. */
static gboolean
trace_syntax(TraceReader *r, const guchar *chunk, gsize len, GError **error)
{
    if (r->error != NULL) {
        g_propagate_error(error, g_steal_pointer(&r->error));
        return FALSE;
    }
    if (r->done) {
        g_set_error(error, SIMPAR_PLOT_ERROR, SIMPAR_PLOT_ERROR_INPUT,
                    "%s:%u: more after the top value (a file holds one JSON value)", r->path,
                    trace_line(r));
        return FALSE;
    }
    guchar *text = yajl_get_error(r->yajl, 0, chunk, len);
    g_autofree char *msg = g_strdup((const char *) text);
    yajl_free_error(r->yajl, text);
    char *nl = strchr(msg, '\n');
    if (nl != NULL)
        *nl = '\0';
    g_strstrip(msg);
    g_set_error(error, SIMPAR_PLOT_ERROR, SIMPAR_PLOT_ERROR_INPUT, "%s:%u: %s", r->path,
                trace_line(r), msg);
    return FALSE;
}

/* Parses one chunk of the (inflated) text. */
static gboolean
trace_parse(TraceReader *r, const guchar *chunk, gsize len, GError **error)
{
    r->chunk = (const char *) chunk;
    if (yajl_parse(r->yajl, chunk, len) != yajl_status_ok)
        return trace_syntax(r, chunk, len, error);
    for (const guchar *at = chunk, *end = chunk + len;
         (at = memchr(at, '\n', (gsize) (end - at))) != NULL; at++)
        r->line++;
    r->chunk = NULL;
    return TRUE;
}

/* Inflates a gzip'ed chunk (`--trace T.json.gz`) and parses what comes out. */
static gboolean
trace_inflate(TraceReader *r, GConverter *z, const guchar *in, gsize len, gboolean end,
              GError **error)
{
    guchar out[1 << 16];
    GConverterResult res = G_CONVERTER_CONVERTED;
    do {
        gsize read = 0, written = 0;
        g_autoptr(GError) local = NULL;
        res = g_converter_convert(z, in, len, out, sizeof out,
                                  end ? G_CONVERTER_INPUT_AT_END : G_CONVERTER_NO_FLAGS, &read,
                                  &written, &local);
        if (res == G_CONVERTER_ERROR &&
            g_error_matches(local, G_IO_ERROR, G_IO_ERROR_PARTIAL_INPUT) && !end)
            return TRUE; /* more input needed */
        if (res == G_CONVERTER_ERROR) {
            g_set_error(error, SIMPAR_PLOT_ERROR, SIMPAR_PLOT_ERROR_INPUT,
                        "%s: not a whole gzip stream: %s", r->path, local->message);
            return FALSE;
        }
        if (written > 0 && !trace_parse(r, out, written, error))
            return FALSE;
        in += read, len -= read;
    } while (res != G_CONVERTER_FINISHED && (len > 0 || end));
    return TRUE;
}

static gboolean
trace_open_file(const char *path, int *fd, GError **error)
{
    *fd = open(path, O_RDONLY | O_CLOEXEC);
    if (*fd < 0) {
        int e = errno;
        g_set_error(error, G_FILE_ERROR, g_file_error_from_errno(e), "%s: %s", path, g_strerror(e));
        return FALSE;
    }
    struct stat st;
    if (fstat(*fd, &st) == 0 && S_ISDIR(st.st_mode)) {
        close(*fd);
        g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_ISDIR, "%s: is a directory, not a file",
                    path);
        return FALSE;
    }
    return TRUE;
}

/* Reads the file chunk by chunk into the parser, through the inflater when it is gzip. */
static gboolean
trace_feed(TraceReader *r, int fd, GError **error)
{
    g_autoptr(GConverter) z = NULL;
    g_autofree guchar *buf = g_malloc(1 << 16);
    gboolean first = TRUE;
    for (;;) {
        ssize_t n = read(fd, buf, 1 << 16);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            int e = errno;
            g_set_error(error, G_FILE_ERROR, g_file_error_from_errno(e), "%s: %s", r->path,
                        g_strerror(e));
            return FALSE;
        }
        if (first && n >= 2 && buf[0] == 0x1f && buf[1] == 0x8b) /* gzip's magic */
            z = G_CONVERTER(g_zlib_decompressor_new(G_ZLIB_COMPRESSOR_FORMAT_GZIP));
        first = FALSE;
        gboolean ok = z != NULL ? trace_inflate(r, z, buf, (gsize) n, n == 0, error)
                                : trace_parse(r, buf, (gsize) n, error);
        if (!ok)
            return FALSE;
        if (n == 0)
            break;
    }
    r->chunk = NULL;
    if (yajl_complete_parse(r->yajl) != yajl_status_ok)
        return trace_syntax(r, NULL, 0, error);
    if (r->events_depth == 0) {
        g_set_error(error, SIMPAR_PLOT_ERROR, SIMPAR_PLOT_ERROR_INPUT,
                    "%s: not a Chrome trace (no \"traceEvents\" array)", r->path);
        return FALSE;
    }
    return TRUE;
}

gboolean
simpar_plot_trace_read(const char *path, SimparTraceEventFunc func, gpointer data, GError **error)
{
    g_return_val_if_fail(path != NULL && func != NULL, FALSE);
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    int fd;
    if (!trace_open_file(path, &fd, error))
        return FALSE;
    TraceReader r = {.path = path, .func = func, .data = data, .line = 1, .field = FIELD_NONE};
    r.stack = g_array_new(FALSE, TRUE, sizeof(TraceLevel));
    g_array_set_clear_func(r.stack, trace_level_clear);
    r.yajl = yajl_alloc(&trace_callbacks, NULL, &r);
    gboolean ok = trace_feed(&r, fd, error);
    close(fd);
    yajl_free(r.yajl);
    g_array_unref(r.stack);
    for (guint i = 0; i < N_FIELDS; i++)
        if (r.text[i] != NULL)
            g_string_free(r.text[i], TRUE);
    g_clear_error(&r.error);
    return ok;
}
