/* test-csv.c - CSV tables (sim/csv.h): quoting round trip, comments, line numbers in errors,
 * torn last lines, numbers. */
#include "csv-table.h"
#include "simpar-test.h"
#include <string.h>

static SimparCsv *
csv_parse_str(const char *s, SimparCsvFlags flags, GError **error)
{
    return simpar_csv_parse(s, strlen(s), "t.csv", flags, error);
}

static void
test_round_trip(void)
{
    const char *fields[] = {"plain", "a,b", "say \"hi\"", "two\nlines", "", "1.5e-3"};
    g_autoptr(GString) out = g_string_new("# sweep v1\n# second comment\n");
    const char *header[] = {"c0", "c1", "c2", "c3", "c4", "c5"};
    simpar_csv_append_row(out, header, 6);
    simpar_csv_append_row(out, fields, 6);
    simpar_csv_append_row(out, fields, 6);
    CU_ASSERT_TRUE(strstr(out->str, "plain,\"a,b\",\"say \"\"hi\"\"\",\"two\nlines\",,1.5e-3\n") !=
                   NULL);
    g_autoptr(GError) error = NULL;
    g_autoptr(SimparCsv) csv = csv_parse_str(out->str, SIMPAR_CSV_NONE, &error);
    CU_ASSERT_PTR_NOT_NULL_FATAL(csv);
    CU_ASSERT_EQUAL(csv->comments->len, 2);
    CU_ASSERT_STRING_EQUAL(g_ptr_array_index(csv->comments, 0), " sweep v1");
    CU_ASSERT_EQUAL(simpar_csv_n_rows(csv), 2);
    for (guint r = 0; r < 2; r++)
        for (int c = 0; c < 6; c++)
            CU_ASSERT_STRING_EQUAL(simpar_csv_get(csv, r, c), fields[c]);
    CU_ASSERT_EQUAL(g_array_index(csv->lines, guint, 0), 5); /* the row ends on line 5 */
    CU_ASSERT_EQUAL(simpar_csv_column(csv, "c3"), 3);
    CU_ASSERT_EQUAL(simpar_csv_column(csv, "nope"), -1);
    double v = 0;
    CU_ASSERT_TRUE(simpar_csv_get_double(csv, 0, 5, &v, NULL));
    CU_ASSERT_DOUBLE_EQUAL(v, 1.5e-3, 0);
    CU_ASSERT_FALSE(simpar_csv_get_double(csv, 0, 4, &v, &error));
    CU_ASSERT_TRUE(error != NULL && strstr(error->message, "t.csv:") != NULL &&
                   strstr(error->message, "c4") != NULL);
    g_clear_error(&error);
    CU_ASSERT_FALSE(simpar_csv_get_double(csv, 0, 0, &v, &error));
    CU_ASSERT_TRUE(error != NULL && strstr(error->message, "\"plain\"") != NULL);
    g_clear_error(&error);
    int col = 0;
    CU_ASSERT_FALSE(simpar_csv_require(csv, "step_s", &col, &error));
    CU_ASSERT_TRUE(error != NULL && strstr(error->message, "\"step_s\"") != NULL);
}

static void
test_errors(void)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(SimparCsv) short_row = csv_parse_str("a,b,c\n1,2,3\n4,5\n", 0, &error);
    CU_ASSERT_PTR_NULL(short_row);
    CU_ASSERT_TRUE(error != NULL && strstr(error->message, "t.csv:3: 2 fields, the header has 3"));
    g_clear_error(&error);
    g_autoptr(SimparCsv) empty = csv_parse_str("# only a comment\n", 0, &error);
    CU_ASSERT_PTR_NULL(empty);
    CU_ASSERT_TRUE(error != NULL && strstr(error->message, "no header") != NULL);
    g_clear_error(&error);
    g_autoptr(SimparCsv) quote = csv_parse_str("a,b\n1,\"open\n", 0, &error);
    CU_ASSERT_PTR_NULL(quote);
    CU_ASSERT_TRUE(error != NULL && strstr(error->message, "t.csv:") != NULL);
    g_clear_error(&error);
    g_autoptr(SimparCsv) stray = csv_parse_str("a,b\n1,x\"y\n", 0, &error);
    CU_ASSERT_PTR_NULL(stray);
    CU_ASSERT_TRUE(error != NULL && strstr(error->message, "t.csv:2") != NULL);
    g_clear_error(&error);
    g_autoptr(SimparCsv) missing = simpar_csv_read("/nonexistent/x.csv", 0, &error);
    CU_ASSERT_PTR_NULL(missing);
    CU_ASSERT_TRUE(error != NULL && strstr(error->message, "/nonexistent/x.csv") != NULL);
}

static void
test_torn_tail(void)
{
    const char *torn = "# j\na,b\n1,2\n3,\"4";
    g_autoptr(GError) error = NULL;
    g_autoptr(SimparCsv) strict = csv_parse_str(torn, 0, &error);
    CU_ASSERT_PTR_NULL(strict);
    g_clear_error(&error);
    g_autoptr(SimparCsv) csv = csv_parse_str(torn, SIMPAR_CSV_DROP_TORN_TAIL, &error);
    CU_ASSERT_PTR_NOT_NULL_FATAL(csv);
    CU_ASSERT_TRUE(csv->torn_tail);
    CU_ASSERT_EQUAL(simpar_csv_n_rows(csv), 1);
    CU_ASSERT_STRING_EQUAL(simpar_csv_get(csv, 0, 1), "2");
    g_autoptr(SimparCsv) whole = csv_parse_str("a,b\n1,2\n", SIMPAR_CSV_DROP_TORN_TAIL, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(whole);
    CU_ASSERT_FALSE(whole->torn_tail);
    CU_ASSERT_EQUAL(simpar_csv_n_rows(whole), 1);
    g_autoptr(SimparCsv) header_only = csv_parse_str("a,b\n3", SIMPAR_CSV_DROP_TORN_TAIL, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(header_only);
    CU_ASSERT_EQUAL(simpar_csv_n_rows(header_only), 0);
}

static CU_TestInfo csv_tests[] = {
    {"fields with commas, quotes and line breaks round-trip; comments kept", test_round_trip},
    {"short rows, open quotes, stray quotes and missing files name the file and line", test_errors},
    {"an unfinished last line is dropped only when asked", test_torn_tail},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"CSV through libcsv", NULL, NULL, NULL, NULL, csv_tests},
    CU_SUITE_INFO_NULL,
};

int
main(void)
{
    return simpar_test_main(suites);
}
