/* exec-main.c - the simpar-exec command line: options, dispatch, and the only place that prints.
 *
 *   simpar-exec [--executor host|cuda] [--run layer|step] [job options] [--check] ... [-o RUN.json]
 *   simpar-exec --bench gemm|kernels|collectives|all [--gpus N] [--quick] ... [-o BENCH.json]
 *
 * Exit status: 0; 2 for usage errors (options, job options, values simpar-exec cannot use);
 * 1 for everything else (an impossible split, no GPU, a CUDA failure, a failed --check).
 */
#include "measure.h"
#include "output.h"
#include <errno.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>

#define EXEC_UNSET            G_MININT64
#define EXEC_NCCL_TIMEOUT_MAX 86400.0 /* seconds: one day */

typedef struct {
    char *executor, *run, *bench, *attention, *devices, *output, *min_bytes, *max_bytes;
    char *nccl_timeout;
    gint64 warmup, repeats, gpus, seed;
    gboolean check, tf32, quick, version;
    GArray *device_list; /* int, parsed from --devices */
} ExecArgs;

static void
exec_args_clear(ExecArgs *a)
{
    char **strs[] = {&a->executor, &a->run,       &a->bench,     &a->attention,   &a->devices,
                     &a->output,   &a->min_bytes, &a->max_bytes, &a->nccl_timeout};
    for (guint i = 0; i < G_N_ELEMENTS(strs); i++)
        g_clear_pointer(strs[i], g_free);
    g_clear_pointer(&a->device_list, g_array_unref);
}

static gboolean exec_usage(GError **error, const char *format, ...) G_GNUC_PRINTF(2, 3);

static gboolean
exec_usage(GError **error, const char *format, ...)
{
    va_list ap;
    va_start(ap, format);
    g_autofree char *msg = g_strdup_vprintf(format, ap);
    va_end(ap);
    g_set_error_literal(error, SIMPAR_EXEC_ERROR, SIMPAR_EXEC_ERROR_USAGE, msg);
    return FALSE;
}

/* ---- parsing ------------------------------------------------------------------------------ */

static gboolean
exec_parse(ExecArgs *a, SimparJobArgs *job, int *argc, char ***argv, GError **error)
{
    g_autofree char *names = simpar_executor_help();
    g_autofree char *executor_help =
        g_strdup_printf("Executor: %s (default %s)", names, simpar_executor_default());
    const GOptionEntry entries[] = {
        {"executor", 'e', 0, G_OPTION_ARG_STRING, &a->executor, executor_help, "NAME"},
        {"run", 0, 0, G_OPTION_ARG_STRING, &a->run,
         "What to run: layer (one tensor-parallel layer, default) or step", "WHAT"},
        {"bench", 0, 0, G_OPTION_ARG_STRING, &a->bench,
         "Microbenchmarks instead of a run: gemm, kernels, collectives or all", "WHAT"},
        {"attention", 0, 0, G_OPTION_ARG_STRING, &a->attention,
         "Attention implementation recorded in RUN.json: unfused (default) or flash", "IMPL"},
        {"warmup", 0, 0, G_OPTION_ARG_INT64, &a->warmup, "Untimed runs first (default 2)", "N"},
        {"repeats", 0, 0, G_OPTION_ARG_INT64, &a->repeats, "Timed runs (default 10)", "N"},
        {"check", 0, 0, G_OPTION_ARG_NONE, &a->check,
         "Compare every output with the host executor's first (small jobs)", NULL},
        {"tf32", 0, 0, G_OPTION_ARG_NONE, &a->tf32, "cuda: fp32 GEMMs on tensor cores", NULL},
        {"devices", 0, 0, G_OPTION_ARG_STRING, &a->devices,
         "cuda: the GPU of each rank (default 0,1,...)", "0,1,..."},
        {"nccl-timeout", 0, 0, G_OPTION_ARG_STRING, &a->nccl_timeout,
         "cuda: seconds any wait on NCCL (communicator setup, a collective, the end of a run) may "
         "go without progress before every communicator is aborted (default 300)",
         "SECONDS"},
        {"seed", 0, 0, G_OPTION_ARG_INT64, &a->seed, "Seed of the input values (default 1)", "N"},
        {"output", 'o', 0, G_OPTION_ARG_FILENAME, &a->output,
         "Write RUN.json / BENCH.json here instead of a summary on stdout", "FILE"},
        {"gpus", 0, 0, G_OPTION_ARG_INT64, &a->gpus,
         "Bench: ranks of the collectives (default host 4, cuda every visible GPU)", "N"},
        {"min-bytes", 0, 0, G_OPTION_ARG_STRING, &a->min_bytes,
         "Bench: smallest collective size (default 8; K, M, G suffixes)", "BYTES"},
        {"max-bytes", 0, 0, G_OPTION_ARG_STRING, &a->max_bytes,
         "Bench: largest collective size (default cuda 1G, host 16M)", "BYTES"},
        {"quick", 0, 0, G_OPTION_ARG_NONE, &a->quick, "Bench: fewer shapes, sizes and repeats (CI)",
         NULL},
        {"version", 0, 0, G_OPTION_ARG_NONE, &a->version,
         "Print simpar-exec's version and the executors it was built with, then exit", NULL},
        G_OPTION_ENTRY_NULL,
    };
    g_autoptr(GOptionContext) ctx =
        g_option_context_new("- run a job's schedule on the host or GPUs and time it");
    g_option_context_add_main_entries(ctx, entries, NULL);
    simpar_job_add_options(ctx, job, SIMPAR_JOB_OPTIONS_ALL);
    if (!g_option_context_parse(ctx, argc, argv, error)) {
        g_prefix_error(error, "simpar-exec: ");
        return FALSE;
    }
    if (*argc > 1)
        return exec_usage(error, "simpar-exec: unexpected argument '%s' (see simpar-exec --help)",
                          (*argv)[1]);
    return TRUE;
}

/* `v` (EXEC_UNSET: `fallback`) within [min, max]. */
static gboolean
exec_count(gint64 v, gint64 fallback, gint64 min, gint64 max, const char *flag, guint *out,
           GError **error)
{
    v = v == EXEC_UNSET ? fallback : v;
    if (v < min || v > max)
        return exec_usage(error,
                          "%s %" G_GINT64_FORMAT ": must be between %" G_GINT64_FORMAT
                          " and %" G_GINT64_FORMAT,
                          flag, v, min, max);
    *out = (guint) v;
    return TRUE;
}

/* "0,1,2,3": distinct GPU indices. */
static gboolean
exec_devices(ExecArgs *a, GError **error)
{
    g_auto(GStrv) parts = g_strsplit(a->devices, ",", -1);
    a->device_list = g_array_new(FALSE, FALSE, sizeof(int));
    for (guint i = 0; parts[i] != NULL; i++) {
        guint64 d;
        if (!g_ascii_string_to_unsigned(g_strstrip(parts[i]), 10, 0, 1023, &d, NULL))
            return exec_usage(error,
                              "--devices %s: '%s' is not a GPU index (give "
                              "comma-separated numbers, e.g. 0,1,2,3)",
                              a->devices, parts[i]);
        for (guint j = 0; j < a->device_list->len; j++)
            if (g_array_index(a->device_list, int, j) == (int) d)
                return exec_usage(error, "--devices %s: GPU %d is listed twice (one rank per GPU)",
                                  a->devices, (int) d);
        int v = (int) d;
        g_array_append_val(a->device_list, v);
    }
    return TRUE;
}

/* "4096", "64K", "16M", "1G" (powers of 1024), between 1 and 1 TiB. */
static gboolean
exec_bytes(const char *flag, const char *text, guint64 *out, GError **error)
{
    *out = 0;
    if (text == NULL)
        return TRUE;
    char *end = NULL;
    guint64 v = g_ascii_strtoull(text, &end, 10), unit = 1;
    if (end != text && *end != '\0' && end[1] == '\0') {
        const char *units = "KMGT", *u = strchr(units, g_ascii_toupper(*end));
        for (const char *p = units; u != NULL && p <= u; p++)
            unit *= 1024;
        end += u != NULL ? 1 : 0;
    }
    if (end == text || *end != '\0' || v == 0 || v > (G_GUINT64_CONSTANT(1) << 40) / unit)
        return exec_usage(error,
                          "%s %s: give a size in bytes between 1 and 1T, optionally with a "
                          "K, M, G or T suffix (e.g. 8, 64K, 1G)",
                          flag, text);
    *out = v * unit;
    return TRUE;
}

/* --nccl-timeout: seconds, more than 0 and at most a day; 0 (the executor's default) if unset. */
static gboolean
exec_nccl_timeout(const char *text, double *out, GError **error)
{
    char *end = NULL;
    *out = text != NULL ? g_ascii_strtod(text, &end) : 0;
    if (text == NULL || (end != text && *end == '\0' && *out > 0 && *out <= EXEC_NCCL_TIMEOUT_MAX))
        return TRUE;
    return exec_usage(error,
                      "--nccl-timeout %s: give seconds, more than 0 and at most %.0f (a day), "
                      "e.g. 300",
                      text, EXEC_NCCL_TIMEOUT_MAX);
}

/* Options common to runs and benches: the executor and its configuration. */
static gboolean
exec_config(ExecArgs *a, const SimparExecutorClass **klass, SimparExecConfig *cfg, GError **error)
{
    *klass = simpar_executor_lookup(a->executor != NULL ? a->executor : simpar_executor_default(),
                                    error);
    double nccl_timeout;
    if (*klass == NULL || (a->devices != NULL && !exec_devices(a, error)) ||
        !exec_nccl_timeout(a->nccl_timeout, &nccl_timeout, error))
        return FALSE;
    *cfg = (SimparExecConfig){
        .devices = a->device_list != NULL ? (const int *) a->device_list->data : NULL,
        .n_devices = a->device_list != NULL ? a->device_list->len : 0,
        .tf32 = a->tf32,
        .nccl_timeout_s = nccl_timeout,
    };
    return TRUE;
}

/* ---- a run -------------------------------------------------------------------------------- */

static gboolean
exec_run_options(ExecArgs *a, SimparRunOptions *o, GError **error)
{
    if (a->gpus != EXEC_UNSET || a->min_bytes != NULL || a->max_bytes != NULL || a->quick)
        return exec_usage(error, "--gpus, --min-bytes, --max-bytes and --quick apply to --bench");
    if (a->run != NULL && !simpar_job_run_parse(a->run, &o->run, error))
        return FALSE;
    if (g_strcmp0(o->job.dtype, "fp8") == 0)
        return exec_usage(error,
                          "--dtype fp8: simpar-exec has no FP8 GEMMs (its schedules would run in "
                          "bf16 and time a bf16 step); valid are fp16, bf16, fp32 and fp64: run "
                          "--dtype bf16 and validate against a bf16 prediction");
    if (a->attention != NULL && !simpar_attention_parse(a->attention, &o->attention, NULL))
        return exec_usage(error, "--attention %s: valid are unfused and flash", a->attention);
    if (a->seed != EXEC_UNSET && a->seed < 0)
        return exec_usage(error, "--seed %" G_GINT64_FORMAT ": must be at least 0", a->seed);
    o->seed = a->seed != EXEC_UNSET ? (guint64) a->seed : 1;
    o->check = a->check;
    return exec_config(a, &o->executor, &o->cfg, error) &&
           exec_count(a->warmup, 2, 0, 1000000, "--warmup", &o->warmup, error) &&
           exec_count(a->repeats, 10, 1, 1000000, "--repeats", &o->repeats, error);
}

static gboolean
exec_run(ExecArgs *a, SimparJobArgs *job, const SimparExecWorld *world, char **out, GError **error)
{
    SimparRunOptions o = {.job = *job}; /* borrows the job's strings */
    if (!exec_run_options(a, &o, error))
        return FALSE;
    g_autofree char *summary = NULL, *check = NULL;
    g_autoptr(JsonNode) root = simpar_measure_run(&o, world, &summary, &check, error);
    if (root == NULL)
        return FALSE;
    if (world->rank != 0)
        return TRUE;
    if (a->output != NULL && !simpar_measure_write_json(root, a->output, error))
        return FALSE;
    *out = g_strconcat(check != NULL ? check : "", a->output == NULL ? summary : "", NULL);
    return TRUE;
}

/* ---- a bench ------------------------------------------------------------------------------ */

static gboolean
exec_bench_what(const char *what, SimparBenchOptions *o, GError **error)
{
    gboolean all = g_str_equal(what, "all");
    o->gemm = all || g_str_equal(what, "gemm");
    o->kernels = all || g_str_equal(what, "kernels");
    o->collectives = all || g_str_equal(what, "collectives");
    if (o->gemm || o->kernels || o->collectives)
        return TRUE;
    return exec_usage(error, "--bench %s: valid are gemm, kernels, collectives and all", what);
}

/* The bench's progress, on stderr as it goes (a --bench all on a GPU takes a minute or two). */
static void
exec_bench_progress(const char *line)
{
    fprintf(stderr, "%s\n", line);
    fflush(stderr);
}

static gboolean
exec_bench(ExecArgs *a, SimparJobArgs *job, const SimparExecWorld *world, char **out,
           GError **error)
{
    SimparBenchOptions o = {.job = *job}; /* borrows the job's strings */
    if (a->run != NULL || a->check || a->attention != NULL)
        return exec_usage(error, "--run, --check and --attention apply to runs, not --bench");
    if (world->mpi)
        return exec_usage(error, "--bench runs every rank in one process: run it without mpirun");
    if (!exec_bench_what(a->bench, &o, error) || !exec_config(a, &o.executor, &o.cfg, error) ||
        !exec_count(a->warmup, 0, 0, 1000000, "--warmup", &o.warmup, error) ||
        !exec_count(a->repeats, 1, 1, 1000000, "--repeats", &o.repeats, error) ||
        !exec_count(a->gpus, 1, 1, 4096, "--gpus", &o.gpus, error) ||
        !exec_bytes("--min-bytes", a->min_bytes, &o.min_bytes, error) ||
        !exec_bytes("--max-bytes", a->max_bytes, &o.max_bytes, error))
        return FALSE;
    o.warmup = a->warmup == EXEC_UNSET ? G_MAXUINT : o.warmup; /* bench_setup's default */
    o.repeats = a->repeats == EXEC_UNSET ? 0 : o.repeats;
    o.gpus = a->gpus == EXEC_UNSET ? 0 : o.gpus;
    gboolean host = g_str_equal(o.executor->name, "host");
    if (host && o.max_bytes > (G_GUINT64_CONSTANT(256) << 20))
        return exec_usage(error,
                          "--max-bytes %s: the host executor holds every element as a "
                          "double; give at most 256M",
                          a->max_bytes);
    o.quick = a->quick;
    o.progress = exec_bench_progress;
    g_autofree char *text = NULL;
    g_autoptr(JsonNode) root = simpar_bench_run(&o, world, &text, error);
    if (root == NULL)
        return FALSE;
    if (a->output != NULL)
        return simpar_measure_write_json(root, a->output, error);
    *out = g_steal_pointer(&text);
    return TRUE;
}

/* ---- main --------------------------------------------------------------------------------- */

static gboolean
exec_main(const SimparExecWorld *world, int argc, char **argv, char **out, GError **error)
{
    ExecArgs a = {
        .warmup = EXEC_UNSET, .repeats = EXEC_UNSET, .gpus = EXEC_UNSET, .seed = EXEC_UNSET};
    SimparJobArgs job;
    simpar_job_args_init(&job);
    gboolean ok = exec_parse(&a, &job, &argc, &argv, error) &&
                  (a.output == NULL || simpar_output_check("-o", a.output, "a JSON file", error));
    if (ok && a.version) {
        g_autofree char *names = simpar_executor_help();
        *out = g_strdup_printf("simpar-exec %s (executors: %s; GLib %u.%u.%u)\n", SIMPAR_VERSION,
                               names, glib_major_version, glib_minor_version, glib_micro_version);
    } else if (ok && a.bench != NULL)
        ok = exec_bench(&a, &job, world, out, error);
    else if (ok)
        ok = exec_run(&a, &job, world, out, error);
    exec_args_clear(&a);
    simpar_job_args_clear(&job);
    return ok;
}

static int
exec_status(const GError *error)
{
    /* as simpar's: 2 when the command line is at fault (options, job, plan), 1 otherwise */
    gboolean usage = error->domain == G_OPTION_ERROR || error->domain == SIMPAR_JOB_ERROR ||
                     error->domain == SIMPAR_PLAN_ERROR || error->domain == SIMPAR_OUTPUT_ERROR ||
                     (error->domain == SIMPAR_EXEC_ERROR && error->code == SIMPAR_EXEC_ERROR_USAGE);
    return usage ? 2 : 1;
}

int
main(int argc, char **argv)
{
    setlocale(LC_ALL, "C");
    g_autoptr(GError) error = NULL;
    g_autofree char *out = NULL;
    SimparExecWorld world;
    int status = 0;
    if (!simpar_exec_world_init(&world, &argc, &argv, &error) ||
        !exec_main(&world, argc, argv, &out, &error)) {
        if (world.mpi)
            fprintf(stderr, "rank %d: %s\n", world.rank, error->message);
        else
            fprintf(stderr, "%s\n", error->message);
        status = exec_status(error);
    } else if (out != NULL && (fputs(out, stdout) < 0 || fflush(stdout) != 0)) {
        int e = errno; /* a full disk or a closed pipe: the output is lost */
        fprintf(stderr, "simpar-exec: cannot write the output to stdout: %s\n", g_strerror(e));
        status = 1;
    }
    simpar_exec_world_finish(&world, status);
    return status;
}
