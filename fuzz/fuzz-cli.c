/* fuzz-cli.c - the job command line, as words separated by NUL or newline bytes: the job and
 * prediction options of simpar predict (simpar_job_add_options, simpar_predict_option_entries)
 * parsed by simpar_cli_parse and checked by simpar_predict_args_resolve and simpar_job_check;
 * and the same words as a measured run's job_args (simpar_job_args_from_argv), whose
 * simpar_job_args_to_argv vector must parse back to itself; and the same words as the files of
 * a run, held apart by simpar_output_distinct. Help is disabled: --help would end
 * the process (GOption's exit), which is the command line's documented behaviour, not a bug. */
#include "cli.h"
#include "fuzz.h"
#include "output.h"
#include "predict-config.h"
#include <string.h>

static void
fuzz_predict_options(char **words)
{
    SimparJobArgs job;
    simpar_job_args_init(&job);
    SimparPredictArgs opts = {0};
    g_autoptr(GOptionContext) ctx = g_option_context_new(NULL);
    g_option_context_set_help_enabled(ctx, FALSE);
    g_autofree GOptionEntry *entries = simpar_predict_option_entries(&opts, "backend");
    g_option_context_add_main_entries(ctx, entries, NULL);
    simpar_job_add_options(ctx, &job, SIMPAR_JOB_OPTIONS_ALL);
    int argc = (int) g_strv_length(words);
    g_autofree char **argv = g_memdup2(words, sizeof(char *) * (argc + 1)); /* reordered */
    char **parse = argv;
    g_autoptr(GError) error = NULL;
    SimparPredictContext pc = {0};
    SimparModel model;
    SimparTrain train;
    if (simpar_cli_parse(ctx, "simpar", &argc, &parse, &error) &&
        simpar_predict_args_resolve(&opts, "simgrid", &pc, &error))
        simpar_job_check(&job, SIMPAR_JOB_RUN_STEP, SIMPAR_PREDICT_DEFAULT_MODEL, &model, &train,
                         &error);
    simpar_job_args_clear(&job);
    simpar_predict_args_clear(&opts);
}

static void
fuzz_job_round_trip(char **words)
{
    SimparJobArgs a, b;
    simpar_job_args_init(&a), simpar_job_args_init(&b);
    g_autoptr(GError) error = NULL;
    if (simpar_job_args_from_argv(&a, (const char *const *) words + 1, &error)) {
        g_auto(GStrv) first = simpar_job_args_to_argv(&a);
        g_assert(simpar_job_args_from_argv(&b, (const char *const *) first, NULL));
        g_auto(GStrv) second = simpar_job_args_to_argv(&b);
        g_assert(g_strv_equal((const char *const *) first, (const char *const *) second));
    }
    simpar_job_args_clear(&a), simpar_job_args_clear(&b);
}

/* The words after the first as the files of one run, outputs and inputs in turn (the first an
 * output): simpar_output_distinct must refuse any output that names the file of another name,
 * spelled alike once made canonical (sweep --summary X -o X, --model m.json --trace m.json). */
static void
fuzz_output_names(char **words)
{
    guint n = MIN(g_strv_length(words), 17u);
    if (n < 2)
        return;
    SimparOutputName names[16];
    g_autoptr(GPtrArray) canon = g_ptr_array_new_with_free_func(g_free);
    for (guint i = 1; i < n; i++) {
        names[i - 1] = (SimparOutputName){i % 2 ? "-o" : "--in", words[i], i % 2 == 1};
        /* against the working folder, as simpar resolves them: "../x" and "/x" are one file
         * only where the working folder is one level deep */
        g_ptr_array_add(canon, words[i][0] != '\0' ? g_canonicalize_filename(words[i], NULL)
                                                   : g_strdup(""));
    }
    g_autoptr(GError) error = NULL;
    if (!simpar_output_distinct(names, n - 1, &error)) {
        g_assert(error != NULL && strstr(error->message, "name the same file") != NULL);
        return;
    }
    for (guint i = 0; i + 1 < n; i++)
        for (guint j = i + 1; j + 1 < n; j++)
            g_assert(!(names[i].output || names[j].output) ||
                     ((const char *) canon->pdata[i])[0] == '\0' ||
                     !g_str_equal(canon->pdata[i], canon->pdata[j]));
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    g_auto(GStrv) words = fuzz_words(data, size);
    fuzz_predict_options(words);
    fuzz_job_round_trip(words);
    fuzz_output_names(words);
    return 0;
}
