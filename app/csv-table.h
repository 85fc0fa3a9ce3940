/* csv-table.h - CSV tables (RFC 4180) read with libcsv and written with its quoting rules.
 *
 * simpar sweep writes its results as CSV and reads them back (resume, --merge); simpar plot
 * reads them. A table is a header row and rows of strings, each row as long as the header:
 *
 *   # comment lines at the top (kept in `comments`, without the '#')
 *   index,mode,step_time_s        <- header
 *   0,1d,1.23                     <- row 0 (line 3)
 *   1,"2d, q=8",2.57              <- fields with ',', '"' or a line break are quoted
 *
 * A row whose field count differs from the header is an error naming the file and line, except
 * an unfinished last line (no line break at the end of the file: a writer killed mid-row) when
 * SIMPAR_CSV_DROP_TORN_TAIL is given; that line is then dropped.
 *
 * Ownership: a SimparCsv owns its strings; simpar_csv_get() borrows.
 */
#ifndef SIMPAR_CSV_TABLE_H
#define SIMPAR_CSV_TABLE_H
#include <glib.h>
G_BEGIN_DECLS

#define SIMPAR_CSV_ERROR (simpar_csv_error_quark())
/* The largest CSV file simpar_csv_read() takes. */
#define SIMPAR_CSV_MAX_BYTES ((gsize) 512 << 20)
GQuark simpar_csv_error_quark(void);

typedef enum {
    SIMPAR_CSV_ERROR_PARSE, /* malformed CSV, a row of the wrong length, no header */
    SIMPAR_CSV_ERROR_VALUE, /* a field that should be a number is not */
} SimparCsvError;

typedef enum {
    SIMPAR_CSV_NONE = 0,
    SIMPAR_CSV_DROP_TORN_TAIL = 1 << 0, /* drop an unfinished last line instead of failing */
} SimparCsvFlags;

typedef struct {
    char *name;            /* the file's path, for messages */
    GPtrArray *comments;   /* char *: the leading '#' lines, '#' and line break removed */
    GPtrArray *header;     /* char * */
    GPtrArray *rows;       /* GPtrArray * of char *, each header->len long */
    GArray *lines;         /* guint: the 1-based line of each row, for messages */
    gboolean torn_tail;    /* an unfinished last line was dropped */
    GStringChunk *strings; /* every field of the header and the rows */
} SimparCsv;

SimparCsv *simpar_csv_read(const char *path, SimparCsvFlags flags,
                           GError **error); /* (transfer full) */
/* `name` is the file name used in messages. */
SimparCsv *simpar_csv_parse(const char *data, gsize len, const char *name, SimparCsvFlags flags,
                            GError **error); /* (transfer full) */
void simpar_csv_free(SimparCsv *csv);
guint simpar_csv_n_rows(const SimparCsv *csv);
/* The index of column `name`, or -1. */
int simpar_csv_column(const SimparCsv *csv, const char *name);
/* Like simpar_csv_column(), with an error naming the file and the column when it is missing. */
gboolean simpar_csv_require(const SimparCsv *csv, const char *name, int *column, GError **error);
const char *simpar_csv_get(const SimparCsv *csv, guint row, int column); /* (transfer none) */
/* The field as a finite number; FALSE with an error naming file, line, column and value when it
 * is empty or not a number. */
gboolean simpar_csv_get_double(const SimparCsv *csv, guint row, int column, double *out,
                               GError **error);
/* Appends one row (fields quoted where needed) and a line break. */
void simpar_csv_append_row(GString *out, const char *const *fields, guint n_fields);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(SimparCsv, simpar_csv_free)
G_END_DECLS
#endif /* SIMPAR_CSV_TABLE_H */
