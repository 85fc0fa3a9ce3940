/* fuzz-measured.c - measured runs as simpar validate reads them: RUN.json
 * (simpar_measured_run_load, then its job_args through simpar_job_args_from_argv and
 * simpar_job_check) and BENCH.json (simpar_bench_load); "format" picks which one accepts the
 * input. The schedule of the run's job is not built: that is work, not parsing. */
#include "fuzz.h"
#include "measured.h"
#include <math.h>

static void
fuzz_run_job(const SimparMeasuredRun *m)
{
    SimparJobArgs args;
    simpar_job_args_init(&args);
    g_autoptr(GError) error = NULL;
    SimparModel model;
    SimparTrain train;
    if (simpar_job_args_from_argv(&args, (const char *const *) m->job_args, &error))
        simpar_job_check(&args, m->run, "tiny", &model, &train, &error);
    simpar_job_args_clear(&args);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_file(data, size);
    g_autoptr(GError) run_error = NULL, bench_error = NULL;
    g_autoptr(SimparMeasuredRun) run = simpar_measured_run_load(path, &run_error);
    g_autoptr(SimparBench) bench = simpar_bench_load(path, &bench_error);
    g_assert((run == NULL) == (run_error != NULL) && (bench == NULL) == (bench_error != NULL));
    g_assert(run == NULL || bench == NULL); /* one "format" */
    if (run != NULL) {
        for (guint i = 0; i < run->n_ops; i++)
            g_assert(run->spans[i].start >= 0 && run->spans[i].end >= run->spans[i].start &&
                     isfinite(run->spans[i].end));
        fuzz_run_job(run);
    }
    return 0;
}
