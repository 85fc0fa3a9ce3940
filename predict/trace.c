/* trace.c - a Chrome trace written as it is made (trace.h). */
#include "trace.h"
#include "output.h"
#include <gio/gio.h>
#include <math.h>

/* Buffered bytes are written out past this many. */
#define TRACE_FLUSH_BYTES (1u << 20)

struct _SimparTrace {
    SimparOutput *out; /* NULL once closed */
    GString *buf;
    GError *error; /* the first write that failed */
    guint64 n_events;
    double expected_B; /* simpar_trace_expect() */
    GPtrArray *meta;   /* pairs: key, value (owned) */
    GConverter *gzip;  /* a path ending in .gz: the bytes go through gzip; else NULL */
};

SimparTrace *
simpar_trace_new(const char *path, GError **error)
{
    SimparOutput *out = simpar_output_open("--trace", path, error);
    if (out == NULL)
        return NULL;
    SimparTrace *t = g_new0(SimparTrace, 1);
    t->out = out;
    t->buf = g_string_sized_new(TRACE_FLUSH_BYTES + 4096);
    t->meta = g_ptr_array_new_with_free_func(g_free);
    if (g_str_has_suffix(path, ".gz")) /* Perfetto and chrome://tracing read it as it is */
        t->gzip = G_CONVERTER(g_zlib_compressor_new(G_ZLIB_COMPRESSOR_FORMAT_GZIP, -1));
    g_string_append(t->buf, "{\"traceEvents\":[\n");
    return t; /* (transfer full) */
}

/* `len` bytes through gzip into the file; `end`: the last ones (the stream is finished). */
static void
trace_gzip(SimparTrace *t, const char *data, gsize len, gboolean end)
{
    g_autofree char *chunk = g_malloc(1 << 16);
    GConverterFlags flags = end ? G_CONVERTER_INPUT_AT_END : G_CONVERTER_NO_FLAGS;
    while (t->error == NULL && (len > 0 || end)) {
        gsize read = 0, written = 0;
        GConverterResult r = g_converter_convert(t->gzip, data, len, chunk, 1 << 16, flags, &read,
                                                 &written, &t->error);
        if (r == G_CONVERTER_ERROR ||
            (written > 0 && !simpar_output_append(t->out, chunk, written, &t->error)))
            return;
        data += read, len -= read;
        if (r == G_CONVERTER_FINISHED || (read == 0 && written == 0 && !end))
            return;
    }
}

static void
trace_flush_end(SimparTrace *t, gboolean end)
{
    if (t->error == NULL && t->gzip != NULL)
        trace_gzip(t, t->buf->str, t->buf->len, end);
    else if (t->error == NULL && t->buf->len > 0)
        (void) simpar_output_append(t->out, t->buf->str, t->buf->len, &t->error);
    g_string_truncate(t->buf, 0);
}

static void
trace_flush(SimparTrace *t)
{
    trace_flush_end(t, FALSE);
}

/* `s` as a JSON string: quotes, backslashes and control characters escaped. */
static void
trace_string(GString *b, const char *s)
{
    g_string_append_c(b, '"');
    for (const unsigned char *p = (const unsigned char *) s; *p != '\0'; p++) {
        if (*p == '"' || *p == '\\') {
            g_string_append_c(b, '\\');
            g_string_append_c(b, (char) *p);
        } else if (*p < 0x20) {
            static const char hex[] = "0123456789abcdef";
            g_string_append(b, "\\u00");
            g_string_append_c(b, hex[*p >> 4]);
            g_string_append_c(b, hex[*p & 15]);
        } else {
            g_string_append_c(b, (char) *p);
        }
    }
    g_string_append_c(b, '"');
}

static void
trace_int(GString *b, gint64 v)
{
    char digits[24];
    guint n = 0;
    guint64 u = v < 0 ? (guint64) - (v + 1) + 1 : (guint64) v;
    do
        digits[n++] = (char) ('0' + u % 10);
    while ((u /= 10) > 0);
    if (v < 0)
        g_string_append_c(b, '-');
    while (n > 0)
        g_string_append_c(b, digits[--n]);
}

/* Seconds as microseconds with three decimals (printf's "%.3f" of s * 1e6, without printf:
 * libquadmath's printf extensions make every printf slow in a process that loaded SimGrid). */
static void
trace_us(GString *b, double s)
{
    double ns = round(s * 1e9);
    if (!isfinite(ns) || fabs(ns) > 9e18) {
        g_string_append_c(b, '0'); /* no span is this long: finite, bounded figures */
        return;
    }
    gint64 v = (gint64) ns;
    if (v < 0) {
        g_string_append_c(b, '-');
        v = -v;
    }
    trace_int(b, v / 1000);
    g_string_append_c(b, '.');
    gint64 f = v % 1000;
    g_string_append_c(b, (char) ('0' + f / 100));
    g_string_append_c(b, (char) ('0' + f / 10 % 10));
    g_string_append_c(b, (char) ('0' + f % 10));
}

static void
trace_key(GString *b, const char *key)
{
    g_string_append_c(b, ',');
    g_string_append_c(b, '"');
    g_string_append(b, key);
    g_string_append(b, "\":");
}

static void
trace_head(SimparTrace *t, const char *ph, const char *name, gint64 pid, gint64 tid)
{
    GString *b = t->buf;
    if (t->n_events++ > 0)
        g_string_append(b, ",\n");
    g_string_append(b, "{\"ph\":\"");
    g_string_append(b, ph);
    g_string_append_c(b, '"');
    trace_key(b, "name");
    trace_string(b, name);
    trace_key(b, "pid");
    trace_int(b, pid);
    trace_key(b, "tid");
    trace_int(b, tid);
}

static void
trace_tail(SimparTrace *t)
{
    g_string_append_c(t->buf, '}');
    if (t->buf->len >= TRACE_FLUSH_BYTES)
        trace_flush(t);
}

void
simpar_trace_meta(SimparTrace *t, const char *what, gint64 pid, gint64 tid, const char *name)
{
    trace_head(t, "M", what, pid, tid);
    trace_key(t->buf, "args");
    g_string_append(t->buf, "{\"name\":");
    trace_string(t->buf, name);
    g_string_append_c(t->buf, '}');
    trace_tail(t);
}

void
simpar_trace_event(SimparTrace *t, const char *name, const char *cat, gint64 pid, gint64 tid,
                   double start_s, double end_s, const SimparTraceArgs *args)
{
    GString *b = t->buf;
    trace_head(t, "X", name, pid, tid);
    trace_key(b, "cat");
    trace_string(b, cat);
    trace_key(b, "ts");
    trace_us(b, start_s);
    trace_key(b, "dur");
    trace_us(b, MAX(end_s - start_s, 0));
    g_string_append(b, ",\"args\":{\"layer\":");
    trace_int(b, args->layer);
    if (args->kind != NULL) {
        trace_key(b, "kind");
        trace_string(b, args->kind);
    }
    if (args->axis != NULL) {
        trace_key(b, "axis");
        trace_string(b, args->axis);
    }
    if (args->bytes >= 0) {
        trace_key(b, "bytes");
        trace_int(b, (gint64) llround(MIN(args->bytes, 9e18)));
    }
    if (args->peer >= 0) {
        trace_key(b, "peer");
        trace_int(b, args->peer);
    }
    const char *keys[] = {"algo", "proto", "for"};
    const char *values[] = {args->algo, args->proto, args->wait_for};
    for (guint i = 0; i < G_N_ELEMENTS(keys); i++) {
        if (values[i] != NULL) {
            trace_key(b, keys[i]);
            trace_string(b, values[i]);
        }
    }
    g_string_append_c(b, '}');
    trace_tail(t);
}

void
simpar_trace_flow(SimparTrace *t, gboolean start, const char *cat, const char *id, gint64 pid,
                  gint64 tid, double at_s)
{
    GString *b = t->buf;
    trace_head(t, start ? "s" : "f", cat, pid, tid);
    trace_key(b, "cat");
    trace_string(b, cat);
    trace_key(b, "id");
    trace_string(b, id);
    trace_key(b, "ts");
    trace_us(b, at_s);
    if (!start)
        g_string_append(b, ",\"bp\":\"e\""); /* binds to the event that encloses it */
    trace_tail(t);
}

void
simpar_trace_counter(SimparTrace *t, const char *name, gint64 pid, double at_s, const char *key,
                     double value)
{
    GString *b = t->buf;
    trace_head(t, "C", name, pid, 0);
    trace_key(b, "ts");
    trace_us(b, at_s);
    g_string_append(b, ",\"args\":{");
    trace_string(b, key);
    g_string_append_c(b, ':');
    char num[G_ASCII_DTOSTR_BUF_SIZE];
    g_string_append(b, g_ascii_formatd(num, sizeof num, "%.9g", isfinite(value) ? value : 0));
    g_string_append_c(b, '}');
    trace_tail(t);
}

void
simpar_trace_set_meta(SimparTrace *t, const char *key, const char *value)
{
    for (guint i = 0; i < t->meta->len; i += 2)
        if (g_str_equal(t->meta->pdata[i], key))
            return;
    g_ptr_array_add(t->meta, g_strdup(key));
    g_ptr_array_add(t->meta, g_strdup(value != NULL ? value : ""));
}

guint64
simpar_trace_n_events(const SimparTrace *t)
{
    return t->n_events;
}

gboolean
simpar_trace_close(SimparTrace *t, GError **error)
{
    g_string_append(t->buf, "\n],\"displayTimeUnit\":\"ms\",\"otherData\":{");
    for (guint i = 0; i < t->meta->len; i += 2) {
        if (i > 0)
            g_string_append_c(t->buf, ',');
        trace_string(t->buf, t->meta->pdata[i]);
        g_string_append_c(t->buf, ':');
        trace_string(t->buf, t->meta->pdata[i + 1]);
    }
    g_string_append(t->buf, "}}\n");
    trace_flush_end(t, TRUE);
    if (t->error != NULL) {
        g_propagate_error(error, g_steal_pointer(&t->error));
        return FALSE;
    }
    return simpar_output_commit(g_steal_pointer(&t->out), error);
}

void
simpar_trace_free(SimparTrace *t)
{
    if (t == NULL)
        return;
    simpar_output_free(t->out); /* unclosed: PATH keeps what it held */
    g_string_free(t->buf, TRUE);
    g_ptr_array_unref(t->meta);
    g_clear_object(&t->gzip);
    g_clear_error(&t->error);
    g_free(t);
}

double
simpar_trace_expect(SimparTrace *t, double bytes)
{
    g_return_val_if_fail(t != NULL, 0);
    t->expected_B += MAX(bytes, 0);
    return t->expected_B;
}

gboolean
simpar_trace_is_gzip(const SimparTrace *t)
{
    return t->gzip != NULL;
}
