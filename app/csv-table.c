/* csv-table.c - CSV tables through libcsv (strict mode). See csv-table.h. */
#include "csv-table.h"
#include <csv.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

G_DEFINE_QUARK(simpar_csv_error_quark, simpar_csv_error)

/* Parser state shared with libcsv's callbacks. */
typedef struct {
    SimparCsv *csv;
    GPtrArray *row; /* the row being read */
    guint line;     /* the physical line being fed */
    GError *error;  /* the first row of the wrong length */
} CsvRead;

static void
csv_field(void *s, size_t len, void *data)
{
    CsvRead *r = data;
    g_ptr_array_add(r->row, g_string_chunk_insert_len(r->csv->strings, s != NULL ? s : "",
                                                      s != NULL ? (gssize) len : 0));
}

static void
csv_row(int c, void *data)
{
    (void) c;
    CsvRead *r = data;
    GPtrArray *row = g_steal_pointer(&r->row);
    r->row = g_ptr_array_sized_new(row->len);
    if (r->csv->header == NULL) {
        r->csv->header = row;
        return;
    }
    if (row->len != r->csv->header->len && r->error == NULL)
        g_set_error(&r->error, SIMPAR_CSV_ERROR, SIMPAR_CSV_ERROR_PARSE,
                    "%s:%u: %u fields, the header has %u", r->csv->name, r->line, row->len,
                    r->csv->header->len);
    if (r->error != NULL) {
        g_ptr_array_free(row, TRUE);
        return;
    }
    g_ptr_array_add(r->csv->rows, row);
    g_array_append_val(r->csv->lines, r->line);
}

void
simpar_csv_free(SimparCsv *csv)
{
    if (csv == NULL)
        return;
    g_free(csv->name);
    g_ptr_array_free(csv->comments, TRUE);
    if (csv->header != NULL)
        g_ptr_array_free(csv->header, TRUE);
    g_ptr_array_free(csv->rows, TRUE);
    g_array_free(csv->lines, TRUE);
    g_string_chunk_free(csv->strings);
    g_free(csv);
}

/* The leading '#' lines into csv->comments; returns where the table starts. */
static gsize
csv_comments(SimparCsv *csv, const char *data, gsize len, guint *line)
{
    gsize pos = 0;
    while (pos < len && data[pos] == '#') {
        const char *nl = memchr(data + pos, '\n', len - pos);
        gsize end = nl != NULL ? (gsize) (nl - data) : len;
        g_ptr_array_add(csv->comments, g_strndup(data + pos + 1, end - pos - 1));
        pos = nl != NULL ? end + 1 : len;
        (*line)++;
    }
    return pos;
}

/* Feeds the table one physical line at a time, so that rows know their line. */
static gboolean
csv_feed(CsvRead *r, struct csv_parser *p, const char *data, gsize len)
{
    gsize pos = 0;
    while (pos < len && r->error == NULL) {
        const char *nl = memchr(data + pos, '\n', len - pos);
        gsize end = nl != NULL ? (gsize) (nl - data) + 1 : len;
        if (csv_parse(p, data + pos, end - pos, csv_field, csv_row, r) != end - pos) {
            if (r->error == NULL) /* else a row of the wrong length came first on this line */
                g_set_error(&r->error, SIMPAR_CSV_ERROR, SIMPAR_CSV_ERROR_PARSE, "%s:%u: %s",
                            r->csv->name, r->line, csv_strerror(csv_error(p)));
            return FALSE;
        }
        pos = end;
        r->line++;
    }
    if (r->error == NULL && csv_fini(p, csv_field, csv_row, r) != 0 && r->error == NULL)
        g_set_error(&r->error, SIMPAR_CSV_ERROR, SIMPAR_CSV_ERROR_PARSE,
                    "%s:%u: %s (an unterminated quoted field?)", r->csv->name, r->line,
                    csv_strerror(csv_error(p)));
    return r->error == NULL;
}

SimparCsv *
simpar_csv_parse(const char *data, gsize len, const char *name, SimparCsvFlags flags,
                 GError **error)
{
    g_return_val_if_fail(data != NULL || len == 0, NULL);
    SimparCsv *csv = g_new0(SimparCsv, 1);
    csv->name = g_strdup(name);
    csv->comments = g_ptr_array_new_with_free_func(g_free);
    csv->rows = g_ptr_array_new_with_free_func((GDestroyNotify) g_ptr_array_unref);
    csv->lines = g_array_new(FALSE, FALSE, sizeof(guint));
    csv->strings = g_string_chunk_new(MAX(len, 64));
    CsvRead r = {csv, g_ptr_array_new(), 1, NULL};
    gsize start = csv_comments(csv, data, len, &r.line);
    if ((flags & SIMPAR_CSV_DROP_TORN_TAIL) && len > start && data[len - 1] != '\n') {
        const char *last = g_strrstr_len(data + start, (gssize) (len - start), "\n");
        len = last != NULL ? (gsize) (last - data) + 1 : start;
        csv->torn_tail = TRUE;
    }
    struct csv_parser p;
    if (csv_init(&p, CSV_STRICT | CSV_STRICT_FINI | CSV_APPEND_NULL) != 0)
        g_error("csv_init failed"); /* only on a NULL parser */
    gboolean ok = csv_feed(&r, &p, data + start, len - start);
    csv_free(&p);
    g_ptr_array_free(r.row, TRUE);
    if (ok && csv->header == NULL)
        g_set_error(&r.error, SIMPAR_CSV_ERROR, SIMPAR_CSV_ERROR_PARSE,
                    "%s: no header row (an empty file?)", name);
    if (r.error != NULL) {
        g_propagate_error(error, r.error);
        simpar_csv_free(csv);
        return NULL;
    }
    return csv; /* (transfer full) */
}

SimparCsv *
simpar_csv_read(const char *path, SimparCsvFlags flags, GError **error)
{
    /* mapped, not read: a file of known size (a device or a pipe, /dev/zero, has none to read
     * to the end of), and at most SIMPAR_CSV_MAX_BYTES of it */
    g_autoptr(GMappedFile) map = g_mapped_file_new(path, FALSE, error);
    if (map == NULL)
        return NULL;
    gsize len = g_mapped_file_get_length(map);
    if (len > SIMPAR_CSV_MAX_BYTES) {
        g_set_error(error, SIMPAR_CSV_ERROR, SIMPAR_CSV_ERROR_PARSE,
                    "%s: larger than %u MiB, the most simpar reads of a CSV table", path,
                    (guint) (SIMPAR_CSV_MAX_BYTES >> 20));
        return NULL;
    }
    return simpar_csv_parse(len > 0 ? g_mapped_file_get_contents(map) : "", len, path, flags,
                            error); /* (transfer full) */
}

guint
simpar_csv_n_rows(const SimparCsv *csv)
{
    return csv->rows->len;
}

int
simpar_csv_column(const SimparCsv *csv, const char *name)
{
    for (guint i = 0; i < csv->header->len; i++)
        if (g_str_equal(g_ptr_array_index(csv->header, i), name))
            return (int) i;
    return -1;
}

gboolean
simpar_csv_require(const SimparCsv *csv, const char *name, int *column, GError **error)
{
    *column = simpar_csv_column(csv, name);
    if (*column < 0) {
        g_set_error(error, SIMPAR_CSV_ERROR, SIMPAR_CSV_ERROR_PARSE,
                    "%s: no column \"%s\" in the header", csv->name, name);
        return FALSE;
    }
    return TRUE;
}

const char *
simpar_csv_get(const SimparCsv *csv, guint row, int column)
{
    g_return_val_if_fail(row < csv->rows->len, NULL);
    g_return_val_if_fail(column >= 0 && (guint) column < csv->header->len, NULL);
    GPtrArray *r = g_ptr_array_index(csv->rows, row);
    return g_ptr_array_index(r, column); /* (transfer none) */
}

gboolean
simpar_csv_get_double(const SimparCsv *csv, guint row, int column, double *out, GError **error)
{
    const char *s = simpar_csv_get(csv, row, column);
    char *end = NULL;
    errno = 0;
    double v = s[0] != '\0' ? g_ascii_strtod(s, &end) : NAN;
    if (s[0] == '\0' || *end != '\0' || errno != 0 || !isfinite(v)) {
        g_set_error(error, SIMPAR_CSV_ERROR, SIMPAR_CSV_ERROR_VALUE,
                    "%s:%u: column %s: \"%s\" is not a finite number", csv->name,
                    g_array_index(csv->lines, guint, row),
                    (const char *) g_ptr_array_index(csv->header, column), s);
        return FALSE;
    }
    *out = v;
    return TRUE;
}

void
simpar_csv_append_row(GString *out, const char *const *fields, guint n_fields)
{
    /* the fields' lengths as written (negative: quoted), then the row in one piece */
    gssize small[64], *len = n_fields <= G_N_ELEMENTS(small) ? small : g_new(gssize, n_fields);
    gsize total = MAX(n_fields, 1); /* the commas and the '\n' */
    for (guint i = 0; i < n_fields; i++) {
        const char *f = fields[i] != NULL ? fields[i] : "";
        gboolean special = FALSE; /* a separator, a quote or a line break */
        const char *end = f;
        for (; *end != '\0'; end++)
            special = special || *end == ',' || *end == '"' || *end == '\r' || *end == '\n';
        gsize n = (gsize) (end - f);
        /* quoted: separators, quotes, line breaks, spaces at either end (libcsv trims them
         * off unquoted fields), "" alone (an empty line is no row) and a leading '#' (a
         * comment line at the top) */
        gboolean padded =
            n > 0 && (f[0] == ' ' || f[0] == '\t' || end[-1] == ' ' || end[-1] == '\t');
        if (!special && !padded && (n > 0 || n_fields > 1) && (i > 0 || f[0] != '#'))
            len[i] = (gssize) n;
        else
            len[i] = -(gssize) csv_write(NULL, 0, f, n); /* quoted, inner quotes doubled */
        total += (gsize) ABS(len[i]);
    }
    gsize at = out->len;
    g_string_set_size(out, at + total);
    char *p = out->str + at;
    for (guint i = 0; i < n_fields; i++) {
        const char *f = fields[i] != NULL ? fields[i] : "";
        if (i > 0)
            *p++ = ',';
        if (len[i] >= 0)
            memcpy(p, f, (gsize) len[i]);
        else
            csv_write(p, (gsize) -len[i], f, strlen(f));
        p += ABS(len[i]);
    }
    *p = '\n';
    if (len != small)
        g_free(len);
}
