/* test-model.c - model shapes: the presets, the JSON model file and its error messages, the
 * validation limits and the dtype table.
 *
 * Model files are written into a temporary directory made when the JSON suite starts and
 * removed, with everything in it, when it ends.
 */
#include "model.h"
#include "simpar-test.h"
#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <stdarg.h>
#include <string.h>

/* ----- presets ----- */

static void
test_every_preset_validates_and_splits_hidden_evenly_over_heads(void)
{
    guint n = 0;
    const SimparModelPreset *presets = simpar_model_presets(&n);
    CU_ASSERT_FATAL(n > 0);
    for (guint i = 0; i < n; i++) {
        const SimparModel *m = &presets[i].model;
        g_autoptr(GError) error = NULL;
        CU_ASSERT_TRUE(simpar_model_validate(m, &error));
        if (error != NULL)
            printf("\n    %s: %s", presets[i].name, error->message);
        CU_ASSERT_EQUAL(m->hidden % m->heads, 0);
        CU_ASSERT_STRING_EQUAL(m->name, presets[i].name);
        CU_ASSERT_PTR_NOT_NULL(presets[i].description);
    }
}

static void
test_every_preset_is_found_by_its_name(void)
{
    guint n = 0;
    const SimparModelPreset *presets = simpar_model_presets(&n);
    for (guint i = 0; i < n; i++) {
        SimparModel m = {0};
        g_autoptr(GError) error = NULL;
        CU_ASSERT_TRUE(simpar_model_preset(presets[i].name, &m, &error));
        CU_ASSERT_PTR_NULL(error);
        CU_ASSERT_PTR_EQUAL(m.name, g_intern_string(presets[i].name));
        CU_ASSERT_EQUAL(m.hidden, presets[i].model.hidden);
        CU_ASSERT_EQUAL(m.heads, presets[i].model.heads);
        CU_ASSERT_EQUAL(m.layers, presets[i].model.layers);
        CU_ASSERT_EQUAL(m.dtype, presets[i].model.dtype);
    }
}

static void
test_gpt3_175b_has_the_papers_shape(void)
{
    SimparModel m = {0};
    g_autoptr(GError) error = NULL;
    CU_ASSERT_TRUE_FATAL(simpar_model_preset("gpt3-175b", &m, &error));
    CU_ASSERT_STRING_EQUAL(m.name, "gpt3-175b");
    CU_ASSERT_EQUAL(m.hidden, 12288);
    CU_ASSERT_EQUAL(m.heads, 96);
    CU_ASSERT_EQUAL(m.layers, 96);
    CU_ASSERT_EQUAL(m.seq, 2048);
    CU_ASSERT_EQUAL(m.micro_batch, 1);
    CU_ASSERT_EQUAL(m.ffn, 4 * 12288);
    CU_ASSERT_EQUAL(m.vocab, 51200);
    CU_ASSERT_EQUAL(m.dtype, SIMPAR_DTYPE_FP16);
}

static void
test_an_unknown_preset_is_refused_with_the_valid_names(void)
{
    SimparModel m = {0};
    g_autoptr(GError) error = NULL;
    CU_ASSERT_FALSE(simpar_model_preset("gpt3-999b", &m, &error));
    CU_ASSERT_PTR_NOT_NULL_FATAL(error);
    printf("\n    %s ", error->message);
    CU_ASSERT_TRUE(g_error_matches(error, SIMPAR_MODEL_ERROR, SIMPAR_MODEL_ERROR_UNKNOWN_PRESET));
    CU_ASSERT_PTR_NOT_NULL(strstr(error->message, "gpt3-999b"));
    guint n = 0;
    const SimparModelPreset *presets = simpar_model_presets(&n);
    for (guint i = 0; i < n; i++)
        CU_ASSERT_PTR_NOT_NULL(strstr(error->message, presets[i].name));
}

/* ----- the JSON model file ----- */

static char *model_dir; /* made by model_json_init, removed by model_json_clean */

static int
model_json_init(void)
{
    model_dir = g_dir_make_tmp("simpar-test-model-XXXXXX", NULL);
    return model_dir == NULL;
}

static int
model_json_clean(void)
{
    g_autoptr(GDir) dir = g_dir_open(model_dir, 0, NULL);
    int failed = dir == NULL;
    for (const char *name; dir != NULL && (name = g_dir_read_name(dir)) != NULL;) {
        g_autofree char *path = g_build_filename(model_dir, name, NULL);
        failed |= g_remove(path) != 0;
    }
    failed |= g_rmdir(model_dir) != 0;
    g_clear_pointer(&model_dir, g_free);
    return failed;
}

/* Writes `contents` to `file` in the temporary directory; returns its path. */
static char *
model_write(const char *file, const char *contents)
{
    char *path = g_build_filename(model_dir, file, NULL);
    CU_ASSERT_TRUE_FATAL(g_file_set_contents(path, contents, -1, NULL));
    return path; /* (transfer full) */
}

/* Loading `path` fails with (domain, code); the message names the file and contains every
 * string of the NULL-terminated list. */
static void G_GNUC_NULL_TERMINATED
model_expect_failure(const char *path, GQuark domain, gint code, ...)
{
    SimparModel m = {0};
    g_autoptr(GError) error = NULL;
    CU_ASSERT_FALSE(simpar_model_load_json(path, &m, &error));
    CU_ASSERT_PTR_NOT_NULL_FATAL(error);
    printf("\n    %s ", error->message);
    CU_ASSERT_TRUE(g_error_matches(error, domain, code));
    CU_ASSERT_PTR_NOT_NULL(strstr(error->message, path));
    va_list ap;
    va_start(ap, code);
    for (const char *needle = va_arg(ap, const char *); needle != NULL;
         needle = va_arg(ap, const char *)) {
        if (strstr(error->message, needle) == NULL)
            printf("\n    missing from the message: %s", needle);
        CU_ASSERT_PTR_NOT_NULL(strstr(error->message, needle));
    }
    va_end(ap);
}

static void
test_a_file_overrides_its_base_preset(void)
{
    g_autofree char *path = model_write(
        "xl.json",
        "{\"base\": \"gpt3-1.3b\", \"hidden\": 4096, \"heads\": 32, \"dtype\": \"bf16\"}");
    SimparModel m = {0};
    g_autoptr(GError) error = NULL;
    CU_ASSERT_TRUE_FATAL(simpar_model_load_json(path, &m, &error));
    CU_ASSERT_EQUAL(m.hidden, 4096);
    CU_ASSERT_EQUAL(m.heads, 32);
    CU_ASSERT_EQUAL(m.dtype, SIMPAR_DTYPE_BF16);
    /* the rest is gpt3-1.3b's */
    CU_ASSERT_EQUAL(m.seq, 2048);
    CU_ASSERT_EQUAL(m.micro_batch, 4);
    CU_ASSERT_EQUAL(m.layers, 24);
    CU_ASSERT_EQUAL(m.ffn, 8192);
    CU_ASSERT_EQUAL(m.vocab, 51200);
    CU_ASSERT_STRING_EQUAL(m.name, path); /* no "name": the file names the model */
}

static void
test_a_file_without_base_starts_from_tiny_and_may_name_the_model(void)
{
    g_autofree char *path = model_write("named.json", "{\"name\": \"mine\", \"layers\": 3}");
    SimparModel m = {0}, tiny = {0};
    g_autoptr(GError) error = NULL;
    CU_ASSERT_TRUE_FATAL(simpar_model_preset("tiny", &tiny, NULL));
    CU_ASSERT_TRUE_FATAL(simpar_model_load_json(path, &m, &error));
    CU_ASSERT_STRING_EQUAL(m.name, "mine");
    CU_ASSERT_EQUAL(m.layers, 3);
    CU_ASSERT_EQUAL(m.hidden, tiny.hidden);
    CU_ASSERT_EQUAL(m.heads, tiny.heads);
    CU_ASSERT_EQUAL(m.seq, tiny.seq);
    CU_ASSERT_EQUAL(m.dtype, tiny.dtype);
}

static void
test_a_missing_file_is_refused(void)
{
    g_autofree char *path = g_build_filename(model_dir, "absent.json", NULL);
    model_expect_failure(path, G_FILE_ERROR, G_FILE_ERROR_NOENT, NULL);
}

static void
test_an_empty_file_is_refused(void)
{
    g_autofree char *path = model_write("empty.json", "");
    model_expect_failure(path, SIMPAR_MODEL_ERROR, SIMPAR_MODEL_ERROR_PARSE, "one JSON object",
                         NULL);
}

static void
test_invalid_json_is_refused(void)
{
    g_autofree char *path = model_write("broken.json", "{\"hidden\": 64,");
    SimparModel m = {0};
    g_autoptr(GError) error = NULL;
    CU_ASSERT_FALSE(simpar_model_load_json(path, &m, &error));
    CU_ASSERT_PTR_NOT_NULL_FATAL(error);
    printf("\n    %s ", error->message);
    CU_ASSERT_EQUAL(error->domain, JSON_PARSER_ERROR);
    CU_ASSERT_PTR_NOT_NULL(strstr(error->message, path));
}

static void
test_a_json_array_is_refused(void)
{
    g_autofree char *path = model_write("array.json", "[{\"hidden\": 64}]");
    model_expect_failure(path, SIMPAR_MODEL_ERROR, SIMPAR_MODEL_ERROR_PARSE, "one JSON object",
                         NULL);
}

static void
test_an_unknown_key_is_refused(void)
{
    g_autofree char *path = model_write("key.json", "{\"hidden\": 64, \"colour\": 3}");
    model_expect_failure(path, SIMPAR_MODEL_ERROR, SIMPAR_MODEL_ERROR_PARSE, "\"colour\"", NULL);
}

static void
test_a_string_hidden_is_refused(void)
{
    g_autofree char *path = model_write("string.json", "{\"hidden\": \"big\"}");
    model_expect_failure(path, SIMPAR_MODEL_ERROR, SIMPAR_MODEL_ERROR_PARSE, "\"hidden\"",
                         "integer", NULL);
}

static void
test_a_fractional_hidden_is_refused(void)
{
    g_autofree char *path = model_write("fraction.json", "{\"hidden\": 1.5}");
    model_expect_failure(path, SIMPAR_MODEL_ERROR, SIMPAR_MODEL_ERROR_PARSE, "\"hidden\"",
                         "integer", NULL);
}

static void
test_a_zero_hidden_is_refused(void)
{
    g_autofree char *path = model_write("zero.json", "{\"hidden\": 0}");
    model_expect_failure(path, SIMPAR_MODEL_ERROR, SIMPAR_MODEL_ERROR_INVALID, "\"hidden\" 0",
                         NULL);
}

static void
test_a_negative_hidden_is_refused(void)
{
    g_autofree char *path = model_write("negative.json", "{\"hidden\": -5}");
    model_expect_failure(path, SIMPAR_MODEL_ERROR, SIMPAR_MODEL_ERROR_INVALID, "\"hidden\" -5",
                         NULL);
}

static void
test_a_hidden_not_divisible_by_heads_is_refused(void)
{
    g_autofree char *path = model_write("odd.json", "{\"hidden\": 100, \"heads\": 3}");
    model_expect_failure(path, SIMPAR_MODEL_ERROR, SIMPAR_MODEL_ERROR_INVALID, "\"hidden\" 100",
                         "\"heads\" 3", NULL);
}

static void
test_an_unknown_dtype_is_refused(void)
{
    g_autofree char *path = model_write("dtype.json", "{\"dtype\": \"fp8\"}");
    model_expect_failure(path, SIMPAR_MODEL_ERROR, SIMPAR_MODEL_ERROR_INVALID, "\"dtype\"", "fp8",
                         NULL);
}

static void
test_an_unknown_base_preset_is_refused(void)
{
    g_autofree char *path = model_write("base.json", "{\"base\": \"gpt5\"}");
    model_expect_failure(path, SIMPAR_MODEL_ERROR, SIMPAR_MODEL_ERROR_UNKNOWN_PRESET, "\"base\"",
                         "gpt5", "gpt3-175b", NULL);
}

static void
test_non_string_names_are_refused(void)
{
    const char *cases[][2] = {{"d.json", "{\"dtype\": 5}"},
                              {"n.json", "{\"name\": 5}"},
                              {"b.json", "{\"base\": 5}"},
                              {"o.json", "{\"base\": {}}"}};
    const char *keys[] = {"\"dtype\"", "\"name\"", "\"base\"", "\"base\""};
    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autofree char *path = model_write(cases[i][0], cases[i][1]);
        model_expect_failure(path, SIMPAR_MODEL_ERROR, SIMPAR_MODEL_ERROR_PARSE, keys[i],
                             "must be a string", NULL);
    }
}

/* ----- validation limits ----- */

typedef struct {
    const char *flag;
    gsize offset;
} ModelDim;

static const ModelDim model_dims[] = {
    {"--hidden", G_STRUCT_OFFSET(SimparModel, hidden)},
    {"--heads", G_STRUCT_OFFSET(SimparModel, heads)},
    {"--seq", G_STRUCT_OFFSET(SimparModel, seq)},
    {"--micro-batch", G_STRUCT_OFFSET(SimparModel, micro_batch)},
    {"--layers", G_STRUCT_OFFSET(SimparModel, layers)},
    {"--ffn", G_STRUCT_OFFSET(SimparModel, ffn)},
    {"--vocab", G_STRUCT_OFFSET(SimparModel, vocab)},
};

/* The tiny preset with one field set to `value`; validation fails naming the flag and value. */
static void
model_expect_invalid(const ModelDim *dim, gint64 value)
{
    SimparModel m;
    CU_ASSERT_TRUE_FATAL(simpar_model_preset("tiny", &m, NULL));
    G_STRUCT_MEMBER(gint64, &m, dim->offset) = value;
    g_autoptr(GError) error = NULL;
    CU_ASSERT_FALSE(simpar_model_validate(&m, &error));
    CU_ASSERT_PTR_NOT_NULL_FATAL(error);
    CU_ASSERT_TRUE(g_error_matches(error, SIMPAR_MODEL_ERROR, SIMPAR_MODEL_ERROR_INVALID));
    g_autofree char *want = g_strdup_printf("%s %" G_GINT64_FORMAT, dim->flag, value);
    if (strstr(error->message, want) == NULL)
        printf("\n    '%s' does not contain '%s'", error->message, want);
    CU_ASSERT_PTR_NOT_NULL(strstr(error->message, want));
}

static void
test_every_size_above_the_maximum_is_refused(void)
{
    for (guint i = 0; i < G_N_ELEMENTS(model_dims); i++)
        model_expect_invalid(&model_dims[i], SIMPAR_MODEL_MAX_DIM + 1);
}

static void
test_every_size_below_one_is_refused(void)
{
    for (guint i = 0; i < G_N_ELEMENTS(model_dims); i++) {
        model_expect_invalid(&model_dims[i], 0);
        model_expect_invalid(&model_dims[i], -1);
    }
}

static void
test_sizes_at_the_maximum_are_accepted(void)
{
    SimparModel m;
    CU_ASSERT_TRUE_FATAL(simpar_model_preset("tiny", &m, NULL));
    m.hidden = m.ffn = m.vocab = m.layers = SIMPAR_MODEL_MAX_DIM; /* 2^24: divisible by 4 heads */
    g_autoptr(GError) error = NULL;
    CU_ASSERT_TRUE(simpar_model_validate(&m, &error));
    CU_ASSERT_PTR_NULL(error);
}

static void
test_more_than_sixteen_times_the_maximum_tokens_is_refused(void)
{
    SimparModel m;
    CU_ASSERT_TRUE_FATAL(simpar_model_preset("tiny", &m, NULL));
    m.seq = SIMPAR_MODEL_MAX_DIM, m.micro_batch = 16; /* exactly 16 * max: accepted */
    g_autoptr(GError) error = NULL;
    CU_ASSERT_TRUE(simpar_model_validate(&m, &error));
    g_clear_error(&error);
    m.micro_batch = 17;
    CU_ASSERT_FALSE(simpar_model_validate(&m, &error));
    CU_ASSERT_TRUE(g_error_matches(error, SIMPAR_MODEL_ERROR, SIMPAR_MODEL_ERROR_INVALID));
    CU_ASSERT_PTR_NOT_NULL(error != NULL ? strstr(error->message, "--micro-batch 17") : NULL);
}

/* ----- dtypes ----- */

static void
test_dtype_sizes_names_and_parsing_round_trip(void)
{
    static const struct {
        SimparDtype dtype;
        const char *name;
        guint size;
    } table[] = {
        {SIMPAR_DTYPE_FP16, "fp16", 2},
        {SIMPAR_DTYPE_BF16, "bf16", 2},
        {SIMPAR_DTYPE_FP32, "fp32", 4},
        {SIMPAR_DTYPE_FP64, "fp64", 8},
    };

    for (guint i = 0; i < G_N_ELEMENTS(table); i++) {
        CU_ASSERT_EQUAL(simpar_dtype_size(table[i].dtype), table[i].size);
        CU_ASSERT_STRING_EQUAL(simpar_dtype_name(table[i].dtype), table[i].name);
        SimparDtype parsed = (SimparDtype) 99;
        g_autoptr(GError) error = NULL;
        CU_ASSERT_TRUE(simpar_dtype_parse(simpar_dtype_name(table[i].dtype), &parsed, &error));
        CU_ASSERT_EQUAL(parsed, table[i].dtype);
        CU_ASSERT_PTR_NULL(error);
    }
}

static void
test_an_unknown_dtype_name_is_refused(void)
{
    SimparDtype parsed = SIMPAR_DTYPE_FP64;
    g_autoptr(GError) error = NULL;
    CU_ASSERT_FALSE(simpar_dtype_parse("int8", &parsed, &error));
    CU_ASSERT_TRUE(g_error_matches(error, SIMPAR_MODEL_ERROR, SIMPAR_MODEL_ERROR_INVALID));
    CU_ASSERT_PTR_NOT_NULL(error != NULL ? strstr(error->message, "int8") : NULL);
    CU_ASSERT_EQUAL(parsed, SIMPAR_DTYPE_FP64);
}

/* A model file gives multi-head latent attention by its five keys; one without the key/value
 * latent, or grouped-query heads with it, is refused naming the keys. */
static void
test_a_file_gives_mla_by_its_keys(void)
{
    g_autofree char *ok = model_write(
        "mla.json", "{\"base\": \"tiny\", \"q_lora_rank\": 16, \"kv_lora_rank\": 8, "
                    "\"qk_head_dim\": 8, \"qk_pos_emb_head_dim\": 4, \"v_head_dim\": 12}");
    SimparModel m;
    g_autoptr(GError) error = NULL;
    CU_ASSERT_TRUE_FATAL(simpar_model_load_json(ok, &m, &error));
    CU_ASSERT_TRUE(simpar_model_is_mla(&m));
    CU_ASSERT_EQUAL(simpar_model_qk_head_dim(&m), 12);
    CU_ASSERT_EQUAL(simpar_model_v_head_dim(&m), 12);
    CU_ASSERT_STRING_EQUAL(simpar_model_flavour(&m), " mla=16/8");
    g_autofree char *no_kv = model_write("mla-no-kv.json", "{\"q_lora_rank\": 16}");
    model_expect_failure(no_kv, SIMPAR_MODEL_ERROR, SIMPAR_MODEL_ERROR_INVALID,
                         "\"q_lora_rank\" 16 needs \"kv_lora_rank\"", NULL);
    g_autofree char *gqa =
        model_write("mla-gqa.json", "{\"kv_heads\": 2, \"q_lora_rank\": 16, \"kv_lora_rank\": 8, "
                                    "\"qk_head_dim\": 8, \"v_head_dim\": 8}");
    model_expect_failure(gqa, SIMPAR_MODEL_ERROR, SIMPAR_MODEL_ERROR_INVALID,
                         "\"kv_lora_rank\" 8 with \"kv_heads\" 2", NULL);
    SimparModel v3;
    CU_ASSERT_TRUE_FATAL(simpar_model_preset("deepseek-v3", &v3, NULL));
    CU_ASSERT_EQUAL(simpar_model_qk_head_dim(&v3), 192);
    CU_ASSERT_EQUAL(simpar_model_v_head_dim(&v3), 128);
}

static CU_TestInfo preset_tests[] = {
    {"every preset validates and splits hidden evenly over heads",
     test_every_preset_validates_and_splits_hidden_evenly_over_heads},
    {"every preset is found by its name", test_every_preset_is_found_by_its_name},
    {"gpt3-175b has h=12288 a=96 L=96 s=2048 f=4h", test_gpt3_175b_has_the_papers_shape},
    {"an unknown preset is refused with the valid names",
     test_an_unknown_preset_is_refused_with_the_valid_names},
    CU_TEST_INFO_NULL,
};

static CU_TestInfo json_tests[] = {
    {"a file overrides its base preset and keeps the base's other fields",
     test_a_file_overrides_its_base_preset},
    {"a file without base starts from tiny and may name the model",
     test_a_file_without_base_starts_from_tiny_and_may_name_the_model},
    {"a missing file is refused", test_a_missing_file_is_refused},
    {"an empty file is refused", test_an_empty_file_is_refused},
    {"invalid JSON is refused", test_invalid_json_is_refused},
    {"a JSON array is refused", test_a_json_array_is_refused},
    {"an unknown key is refused", test_an_unknown_key_is_refused},
    {"a file gives multi-head latent attention by its keys; without kv_lora_rank it is refused",
     test_a_file_gives_mla_by_its_keys},
    {"a string hidden is refused", test_a_string_hidden_is_refused},
    {"a fractional hidden is refused", test_a_fractional_hidden_is_refused},
    {"a zero hidden is refused", test_a_zero_hidden_is_refused},
    {"a negative hidden is refused", test_a_negative_hidden_is_refused},
    {"a hidden not divisible by heads is refused", test_a_hidden_not_divisible_by_heads_is_refused},
    {"an unknown dtype is refused", test_an_unknown_dtype_is_refused},
    {"an unknown base preset is refused", test_an_unknown_base_preset_is_refused},
    {"dtype, name and base that are not strings are refused", test_non_string_names_are_refused},
    CU_TEST_INFO_NULL,
};

static CU_TestInfo validate_tests[] = {
    {"every size above SIMPAR_MODEL_MAX_DIM is refused",
     test_every_size_above_the_maximum_is_refused},
    {"every size below one is refused", test_every_size_below_one_is_refused},
    {"sizes equal to SIMPAR_MODEL_MAX_DIM are accepted", test_sizes_at_the_maximum_are_accepted},
    {"more than 16 * SIMPAR_MODEL_MAX_DIM tokens per micro-batch is refused",
     test_more_than_sixteen_times_the_maximum_tokens_is_refused},
    {"dtype sizes, names and parsing round trip", test_dtype_sizes_names_and_parsing_round_trip},
    {"an unknown dtype name is refused", test_an_unknown_dtype_name_is_refused},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"presets", NULL, NULL, NULL, NULL, preset_tests},
    {"JSON model file", model_json_init, model_json_clean, NULL, NULL, json_tests},
    {"validation and dtypes", NULL, NULL, NULL, NULL, validate_tests},
    CU_SUITE_INFO_NULL,
};

int
main(void)
{
    return simpar_test_main(suites);
}
