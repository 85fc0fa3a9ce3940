/* fuzz-csv.c - the CSV table reader (simpar_csv_parse, as simpar sweep and simpar plot read
 * sweep CSVs and journals), with and without SIMPAR_CSV_DROP_TORN_TAIL. A table read back is
 * written with simpar_csv_append_row and read again: the same header and rows. */
#include "csv-table.h"
#include "fuzz.h"
#include <string.h>

/* The table's header and rows written as simpar writes CSV (transfer full). */
static GString *
fuzz_csv_write(const SimparCsv *csv)
{
    GString *out = g_string_new(NULL);
    simpar_csv_append_row(out, (const char *const *) csv->header->pdata, csv->header->len);
    for (guint r = 0; r < csv->rows->len; r++) {
        GPtrArray *row = g_ptr_array_index(csv->rows, r);
        simpar_csv_append_row(out, (const char *const *) row->pdata, row->len);
    }
    return out;
}

static gboolean
fuzz_csv_row_equal(GPtrArray *a, GPtrArray *b)
{
    if (a->len != b->len)
        return FALSE;
    for (guint i = 0; i < a->len; i++)
        if (strcmp(a->pdata[i], b->pdata[i]) != 0)
            return FALSE;
    return TRUE;
}

static void
fuzz_csv_round_trip(const SimparCsv *csv)
{
    g_autoptr(GString) text = fuzz_csv_write(csv);
    g_autoptr(GError) error = NULL;
    SimparCsv *again = simpar_csv_parse(text->str, text->len, "again", SIMPAR_CSV_NONE, &error);
    g_assert_no_error(error);
    g_assert(fuzz_csv_row_equal(csv->header, again->header));
    g_assert(again->rows->len == csv->rows->len);
    for (guint r = 0; r < csv->rows->len; r++)
        g_assert(fuzz_csv_row_equal(csv->rows->pdata[r], again->rows->pdata[r]));
    simpar_csv_free(again);
}

static void
fuzz_csv(const uint8_t *data, size_t size, SimparCsvFlags flags)
{
    g_autoptr(GError) error = NULL;
    SimparCsv *csv = simpar_csv_parse((const char *) data, size, "fuzz.csv", flags, &error);
    if (csv == NULL) {
        g_assert(error != NULL);
        return;
    }
    for (guint r = 0; r < simpar_csv_n_rows(csv); r++)
        for (guint c = 0; c < csv->header->len; c++) {
            g_autoptr(GError) not_number = NULL;
            double v;
            simpar_csv_get_double(csv, r, (int) c, &v, &not_number);
        }
    fuzz_csv_round_trip(csv);
    simpar_csv_free(csv);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_csv(data, size, SIMPAR_CSV_NONE);
    fuzz_csv(data, size, SIMPAR_CSV_DROP_TORN_TAIL);
    return 0;
}
