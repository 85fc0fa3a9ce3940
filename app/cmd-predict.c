/* cmd-predict.c - `simpar [predict] --topology FILE`: the main job.
 *
 * Parses and checks the options in the parent, then runs every requested tensor-parallel mode
 * in one SimGrid child process (platform.c): for each mode the plan on the used GPUs, its
 * layer schedule, the memory check, compute times, the backend run over L layers and the
 * report row. Modes the GPU count or the model cannot use, and configurations that do not fit
 * in GPU memory, are reported as not simulated; asked for explicitly, they are errors.
 */
#include "cli-values.h"
#include "cli.h"
#include "generators.h"
#include "megatron.h"
#include "pipeline.h"
#include "plot.h"
#include "predict-config.h"
#include <errno.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

typedef struct {
    SimparJobArgs job;
    const SimparGenerator *only; /* --tp-mode's row; NULL: every mode (all, the default) */
    gboolean json;
    char *topology, *trace, *trace_ranks_arg, *report_dir;
    const char *command;      /* the command line, quoted (borrowed) */
    char *megatron_arg;       /* --megatron-args FILE */
    SimparMegatron *megatron; /* that file, read; or NULL */
    GArray *trace_ranks;      /* --trace-ranks (guint, ascending), or NULL: one rank per role */
    SimparPredictArgs opts;
    gint64 gpus, jobs_arg;
    guint jobs; /* worker processes (modes simulated in parallel) */
    SimparModel model;
    SimparPredictContext base; /* backend, collective settings; the rest is filled per mode */
    gint64 steps_to_target;
    SimparTrain train; /* everything but the tensor-parallel plan, checked without a platform */
    int warn_fd; /* the command's stderr, kept for the workers (theirs goes to SimGrid's log) */
} Predict;

static void
predict_clear(Predict *p)
{
    simpar_job_args_clear(&p->job);
    g_free(p->topology), g_free(p->trace), g_free(p->trace_ranks_arg), g_free(p->report_dir);
    g_free(p->megatron_arg);
    g_clear_pointer(&p->megatron, simpar_megatron_free);
    if (p->trace_ranks != NULL)
        g_array_free(p->trace_ranks, TRUE);
    simpar_predict_args_clear(&p->opts);
}

#define PREDICT_MAX_STEPS (G_GINT64_CONSTANT(1) << 53)

/* The step-level options into p->train (the split is checked against the GPUs later). */
static gboolean
predict_resolve_train(Predict *p, GError **error)
{
    /* the counts print as doubles: past 2^53 they are no longer whole (nor, cast back, even
     * positive) */
    if (p->steps_to_target != SIMPAR_JOB_UNSET &&
        (p->steps_to_target < 1 || p->steps_to_target > PREDICT_MAX_STEPS)) {
        g_set_error(error, SIMPAR_CLI_ERROR, SIMPAR_CLI_ERROR_USAGE,
                    "--steps-to-target %" G_GINT64_FORMAT ": must be at least 1 and at most "
                    "2^53 = %" G_GINT64_FORMAT " (the largest count a double holds exactly)",
                    p->steps_to_target, PREDICT_MAX_STEPS);
        return FALSE;
    }
    return simpar_job_train(&p->job, &p->train, error);
}

/* At most this many ranks in a --trace-ranks list. */
#define PREDICT_TRACE_RANKS_MAX (1u << 20)

static gint
predict_guint_cmp(gconstpointer a, gconstpointer b)
{
    guint x = *(const guint *) a, y = *(const guint *) b;
    return x < y ? -1 : x > y;
}

/* --trace-ranks: all, or ranks and ranges A-B separated by commas, into p->trace_ranks
 * (ascending, once each) or p->base.trace_all. */
static gboolean
predict_trace_ranks(Predict *p, GError **error)
{
    const char *arg = p->trace_ranks_arg;
    if (arg == NULL)
        return TRUE;
    if (p->trace == NULL && p->report_dir == NULL) {
        g_set_error(error, SIMPAR_CLI_ERROR, SIMPAR_CLI_ERROR_USAGE,
                    "--trace-ranks %s: there is no trace (give --trace FILE or --report DIR)", arg);
        return FALSE;
    }
    if (g_str_equal(arg, "all")) {
        p->base.trace_all = TRUE;
        return TRUE;
    }
    g_autoptr(GArray) given = g_array_new(FALSE, FALSE, sizeof(gint64));
    g_autoptr(GError) local = NULL;
    if (!simpar_cli_parse_list("--trace-ranks", arg, 0, G_MAXINT32, PREDICT_TRACE_RANKS_MAX,
                               SIMPAR_CLI_LIST_REPEATS_OK, given, &local)) {
        g_set_error(error, SIMPAR_CLI_ERROR, SIMPAR_CLI_ERROR_USAGE,
                    "%s; or all (every rank); such as 0,8-15", local->message);
        return FALSE;
    }
    g_autoptr(GArray) ranks = g_array_sized_new(FALSE, FALSE, sizeof(guint), given->len);
    for (guint i = 0; i < given->len; i++) {
        guint v = (guint) g_array_index(given, gint64, i);
        g_array_append_val(ranks, v);
    }
    g_array_sort(ranks, predict_guint_cmp);
    guint n = 0;
    for (guint i = 0; i < ranks->len; i++)
        if (n == 0 || g_array_index(ranks, guint, i) != g_array_index(ranks, guint, n - 1))
            g_array_index(ranks, guint, n++) = g_array_index(ranks, guint, i);
    g_array_set_size(ranks, n);
    p->trace_ranks = g_steal_pointer(&ranks);
    return TRUE;
}

/* Checks every option that needs no platform. */
static gboolean
predict_resolve(Predict *p, GError **error)
{
    if (p->topology == NULL) {
        g_autofree char *commands = simpar_cli_command_names();
        g_set_error(error, SIMPAR_CLI_ERROR, SIMPAR_CLI_ERROR_USAGE,
                    "simpar: --topology FILE is required (e.g. topologies/v100x64.xml), or a "
                    "command: %s (simpar --help lists them)",
                    commands);
        return FALSE;
    }
    if (p->gpus != G_MININT64 && (p->gpus < 1 || p->gpus > 1 << 20)) {
        g_set_error(error, SIMPAR_CLI_ERROR, SIMPAR_CLI_ERROR_USAGE,
                    "--gpus %" G_GINT64_FORMAT ": must be between 1 and the platform's GPUs",
                    p->gpus);
        return FALSE;
    }
    p->jobs = p->jobs_arg == G_MININT64 ? g_get_num_processors() : (guint) p->jobs_arg;
    if (p->jobs_arg != G_MININT64 && (p->jobs_arg < 1 || p->jobs_arg > 1024)) {
        g_set_error(error, SIMPAR_CLI_ERROR, SIMPAR_CLI_ERROR_USAGE,
                    "--jobs %" G_GINT64_FORMAT ": from 1 to 1024 worker processes", p->jobs_arg);
        return FALSE;
    }
    if (p->job.tp_mode != NULL && !g_str_equal(p->job.tp_mode, "all") &&
        (p->only = simpar_generator_lookup(p->job.tp_mode, error)) == NULL)
        return FALSE;
    if (!predict_trace_ranks(p, error) ||
        (p->trace != NULL && !simpar_output_check("--trace", p->trace, "a Chrome trace", error)))
        return FALSE;
    p->base.over_capacity = TRUE; /* users bring configurations that ran: predicted, the
                                     shortfall named */
    return simpar_predict_args_resolve(&p->opts, "simgrid", &p->base, error) &&
           predict_resolve_train(p, error) &&
           simpar_job_model(&p->job, SIMPAR_PREDICT_DEFAULT_MODEL, &p->model, error) &&
           simpar_attention_check_fp8(p->job.fp8_attention, p->base.attention, error);
}

/* 2.5-D without --depth: q = d when the GPU count allows it (64: q=4 d=4), else the smallest
 * depth >= 2 the model accepts. */
static void
predict_depth(const Predict *p, const SimparGenerator *gen, SimparPlan *plan)
{
    gint64 best = 0;
    for (gint64 d = 2; d <= plan->tp; d++) {
        SimparPlan trial = *plan;
        trial.depth = d;
        if (!gen->validate(&p->model, &trial, NULL))
            continue;
        if (best == 0 || (gint64) trial.q == d)
            best = d;
        if ((gint64) trial.q == d)
            break;
    }
    plan->depth = best != 0 ? best : 2; /* 2: validation then says what is wrong */
}

/* The plan of mode `gen` on `gpus` GPUs; FALSE with the reason when the options do not fit the
 * mode. */
static gboolean
predict_plan(const Predict *p, const SimparGenerator *gen, guint gpus, SimparPlan *plan,
             GError **error)
{
    if (!simpar_job_plan(&p->job, &p->model, gen, plan, error))
        return FALSE;
    if (plan->tp == G_MININT64)
        plan->tp = gpus;
    if (gen->grid == SIMPAR_GRID_LAYERS && plan->depth == 0)
        predict_depth(p, gen, plan);
    return TRUE; /* validated by simpar_predict_config */
}

/* What the workers would refuse that needs no platform, before it loads (a 32,768-GPU platform
 * takes a minute): with one mode and --tp, the plan's checks (3-D splits the micro-batch over
 * q^2 GPUs); with --dp, the global batch and the pipeline schedule's micro-batches. In the
 * workers' order and with their messages. */
static gboolean
predict_precheck(const Predict *p, GError **error)
{
    if (p->only != NULL && p->job.tp >= 1 && p->job.tp <= 1 << 20) {
        SimparTrain train = p->train;
        if (!predict_plan(p, p->only, (guint) p->job.tp, &train.tp, error) ||
            !p->only->validate(&p->model, &train.tp, error))
            return FALSE;
    }
    return p->job.dp == SIMPAR_JOB_UNSET ||
           simpar_train_validate_batches(&p->train, &p->model, error);
}

typedef struct {
    Predict *p;
    const SimparPlatform *platform;
    SimparGpu gpu;
    guint gpus;
    SimparReport *report;
    SimparTrace *trace;
    gboolean explicit_mode;
} PredictJob;

/* A warning from the prediction (a large trace), on the command's stderr at once: a worker's
 * own stderr is SimGrid's log. */
static void
predict_warn(const char *message, gpointer data)
{
    const Predict *p = data;
    g_autofree char *line = g_strdup_printf("simpar: warning: %s\n", message);
    if (p->warn_fd >= 0 && write(p->warn_fd, line, strlen(line)) < 0)
        return; /* nowhere left to say it */
}

/* A mode that cannot run: an error when it was asked for, a row saying why otherwise. */
static gboolean
predict_skip(PredictJob *pj, const SimparGenerator *gen, const char *grid, const SimparMemory *mem,
             GError **why, GError **error)
{
    if (pj->explicit_mode) {
        g_propagate_error(error, g_steal_pointer(why));
        return FALSE;
    }
    simpar_report_skip(pj->report, gen, grid, pj->gpus, mem, pj->gpu.mem_bytes, (*why)->message);
    g_clear_error(why);
    return TRUE;
}

/* --tp without --dp: data parallelism is the GPUs over T x C x P, as Megatron-LM derives it
 * (without --tp, T is the GPUs over C x P x D, D default 1). */
static gboolean
predict_derive_dp(const Predict *p, guint gpus, SimparTrain *train, GError **error)
{
    if (p->job.dp != SIMPAR_JOB_UNSET || p->job.tp == SIMPAR_JOB_UNSET)
        return TRUE;
    gint64 cp = MAX(p->job.cp, 1), model = p->job.tp * cp * train->pp;
    if (model > gpus || gpus % model != 0) {
        g_autofree char *c =
            cp > 1 ? g_strdup_printf(" x --cp %" G_GINT64_FORMAT, cp) : g_strdup("");
        g_set_error(error, SIMPAR_CLI_ERROR, SIMPAR_CLI_ERROR_USAGE,
                    "--tp %" G_GINT64_FORMAT "%s x %s %" G_GINT64_FORMAT " = %" G_GINT64_FORMAT
                    " GPUs does not divide the %u used (--gpus or the platform): without --dp, "
                    "data parallelism is the GPUs over that product; give --gpus a multiple of "
                    "it, or --dp",
                    p->job.tp, c, train->schedule == SIMPAR_PIPE_LOCAL ? "--local-chunks" : "--pp",
                    train->pp, model, gpus);
        return FALSE;
    }
    train->dp = gpus / model;
    return TRUE;
}

static gboolean
predict_mode(PredictJob *pj, guint index, const SimparGenerator *gen, GError **error)
{
    Predict *p = pj->p;
    g_autoptr(GError) why = NULL;
    SimparTrain train = p->train;
    if (!predict_derive_dp(p, pj->gpus, &train, error))
        return FALSE;
    gint64 outer = train.pp * train.dp * MAX(p->job.cp, 1);
    gint64 tp = p->job.tp != G_MININT64 ? p->job.tp : (gint64) pj->gpus / MAX(outer, 1);
    if (tp < 1) { /* the default --tp: no GPU left for a tensor-parallel group */
        g_set_error(error, SIMPAR_CLI_ERROR, SIMPAR_CLI_ERROR_USAGE,
                    "%s %" G_GINT64_FORMAT " x --dp %" G_GINT64_FORMAT " x --cp %" G_GINT64_FORMAT
                    " = %" G_GINT64_FORMAT " GPUs, more than the %u used (--gpus or the "
                    "platform): the product must divide them",
                    train.schedule == SIMPAR_PIPE_LOCAL ? "--local-chunks" : "--pp", train.pp,
                    train.dp, MAX(p->job.cp, 1), outer, pj->gpus);
        return FALSE;
    }
    if (!predict_plan(p, gen, (guint) tp, &train.tp, &why))
        return predict_skip(pj, gen, "-", NULL, &why, error);
    SimparPredictContext ctx = p->base;
    ctx.platform = pj->platform, ctx.gpu = &pj->gpu, ctx.gpus = pj->gpus;
    ctx.steps_to_target = p->steps_to_target, ctx.trace = pj->trace, ctx.trace_index = index;
    ctx.trace_ranks = p->trace_ranks;
    ctx.warn = predict_warn, ctx.warn_data = p;
    SimparReportRow row;
    if (!simpar_predict_config(&ctx, &p->model, &train, &row, &why, error))
        return FALSE;
    if (why == NULL) {
        simpar_report_append(pj->report, &row);
        return TRUE;
    }
    gboolean ok = predict_skip(pj, gen, row.grid, &row.memory, &why, error);
    simpar_predict_row_clear(&row);
    return ok;
}

/* The modes of this worker: `gen`, or every mode the user asked for. */
static gboolean
predict_modes(PredictJob *pj, const SimparGenerator *gen, GError **error)
{
    const SimparGenerator *only = pj->p->only;
    pj->explicit_mode = only != NULL;
    guint n_gen;
    const SimparGenerator *gens = simpar_generators(&n_gen);
    for (guint i = 0; i < n_gen; i++) {
        gboolean wanted = gen != NULL ? &gens[i] == gen : only == NULL || &gens[i] == only;
        if (wanted && !predict_mode(pj, i, &gens[i], error))
            return FALSE;
    }
    return TRUE;
}

static SimparReport *
predict_report_new(const Predict *p)
{
    g_autofree char *coll =
        g_strdup_printf("%s collectives, algorithm %s",
                        p->base.run.mode == SIMPAR_COLL_MODE_EXACT ? "exact" : "fused",
                        p->opts.algo != NULL ? p->opts.algo : "auto");
    return simpar_report_new(&p->model, p->topology, p->base.backend->name, coll,
                             simpar_attention_name(p->base.attention)); /* (transfer full) */
}

static gboolean
predict_gpus(const Predict *p, PredictJob *pj, GError **error)
{
    if (p->gpus != G_MININT64 && p->gpus > pj->gpus) {
        g_set_error(error, SIMPAR_CLI_ERROR, SIMPAR_CLI_ERROR_USAGE,
                    "--gpus %" G_GINT64_FORMAT ": %s has only %u GPUs", p->gpus, p->topology,
                    pj->gpus);
        return FALSE;
    }
    if (p->gpus != G_MININT64)
        pj->gpus = (guint) p->gpus;
    if (!simpar_predict_gpu(pj->platform, pj->gpus, &p->opts, &pj->gpu, error))
        return FALSE;
    if (!simpar_gpu_check_fp8(&pj->gpu, (SimparFp8Recipe) p->model.fp8, p->job.fp8_attention,
                              error) ||
        !simpar_gpu_validate(&pj->gpu, p->model.dtype, error)) {
        g_prefix_error(error, "--topology %s: ", simpar_platform_path(pj->platform));
        return FALSE;
    }
    return TRUE;
}

/* One worker process: its modes' report rows as JSON. */
typedef struct {
    Predict *p;
    const SimparGenerator *gen; /* NULL: every mode asked for */
} PredictWork;

static gboolean
predict_job(const SimparPlatform *platform, gpointer data, GString *out, GError **error)
{
    PredictWork *w = data;
    Predict *p = w->p;
    PredictJob pj = {p, platform, .gpus = simpar_platform_n_gpus(platform)};
    if (!predict_gpus(p, &pj, error))
        return FALSE;
    g_autoptr(SimparReport) report = predict_report_new(p);
    pj.report = report;
    if (p->trace != NULL && p->trace_ranks != NULL) {
        guint last = g_array_index(p->trace_ranks, guint, p->trace_ranks->len - 1);
        if (last >= pj.gpus) {
            g_set_error(error, SIMPAR_CLI_ERROR, SIMPAR_CLI_ERROR_USAGE,
                        "--trace-ranks %s: rank %u is not one of the job's %u GPUs (valid: 0 to "
                        "%u, or all)",
                        p->trace_ranks_arg, last, pj.gpus, pj.gpus - 1);
            return FALSE;
        }
    }
    g_autoptr(SimparTrace) trace = NULL;
    if (p->trace != NULL && (trace = simpar_trace_new(p->trace, error)) == NULL)
        return FALSE;
    pj.trace = trace;
    if (trace != NULL) { /* the run's metadata: what made the trace */
        simpar_trace_set_meta(trace, "simpar_version", SIMPAR_VERSION);
        simpar_trace_set_meta(trace, "command", p->command);
        simpar_trace_set_meta(trace, "platform", p->topology);
        simpar_trace_set_meta(trace, "model", p->model.name);
        simpar_trace_set_meta(trace, "backend", p->base.backend->name);
    }
    if (!predict_modes(&pj, w->gen, error) || (trace != NULL && !simpar_trace_close(trace, error)))
        return FALSE;
    g_autofree char *json = simpar_report_to_json(report);
    g_string_append(out, json);
    return TRUE;
}

/* Every mode in its own worker, `jobs` at a time (one worker for a trace: one file). Workers
 * start longest first, so that the last to start is a short one and no core idles long at the
 * end: 1-D, with the fewest collectives per layer, is the quickest mode, so it starts last. */
static gboolean
predict_workers(Predict *p, SimparReport *report, GError **error)
{
    guint n_gen, n = 0, k = 0;
    const SimparGenerator *gens = simpar_generators(&n_gen);
    gboolean all = p->only == NULL;
    g_autofree PredictWork *work = g_new(PredictWork, n_gen);
    if (all && p->trace == NULL)
        for (guint i = 0; i < n_gen; i++)
            work[n++] = (PredictWork){p, &gens[i]};
    else
        work[n++] = (PredictWork){p, NULL};
    g_autofree guint *order = g_new(guint, n);
    for (guint last = 0; last < 2; last++)
        for (guint i = 0; i < n; i++)
            if ((guint) (work[i].gen == simpar_generator_baseline()) == last)
                order[k++] = i;
    g_autofree gpointer *data = g_new(gpointer, n);
    g_autofree GString **outs = g_new(GString *, n);
    for (guint i = 0; i < n; i++)
        data[i] = &work[i], outs[i] = g_string_new(NULL);
    p->warn_fd = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, STDERR_FILENO + 1);
    gboolean ok =
        simpar_platform_run_many(p->topology, n, p->jobs, predict_job, data, order, outs, error);
    if (p->warn_fd >= 0)
        close(p->warn_fd);
    p->warn_fd = -1;
    for (guint i = 0; i < n; i++) {
        if (ok)
            simpar_report_merge_json(report, outs[i]->str);
        g_string_free(outs[i], TRUE);
    }
    return ok;
}

static gboolean
predict_print(const Predict *p, const SimparReport *report, GError **error)
{
    if (simpar_report_n_simulated(report) == 0) {
        g_autofree char *why = simpar_report_reasons(report);
        g_set_error(error, SIMPAR_CLI_ERROR, SIMPAR_CLI_ERROR_USAGE,
                    "no tensor-parallel mode can run model %s on %s: %s", p->model.name,
                    p->topology, why);
        return FALSE;
    }
    g_autofree char *text = p->json ? simpar_report_to_json(report) : simpar_report_to_text(report);
    g_autofree char *meg = p->megatron != NULL ? simpar_megatron_describe(p->megatron) : NULL;
    if (meg != NULL && !p->json)
        printf("%s\n", meg);
    else if (meg != NULL) /* the JSON stays one document */
        fprintf(stderr, "%s", meg);
    printf("%s\n", text);
    return TRUE;
}

/* ------------------------------------------------------------------------ --report DIR */

#define REPORT_README_HEAD "# simpar prediction report\n"

/* The names of every file a report may write (transfer full). */
static GPtrArray *
predict_report_names(void)
{
    GPtrArray *names = g_ptr_array_new_with_free_func(g_free);
    const char *fixed[] = {"README.md", "prediction.txt", "prediction.json", "trace.json",
                           "breakdown.png"};
    for (guint i = 0; i < G_N_ELEMENTS(fixed); i++)
        g_ptr_array_add(names, g_strdup(fixed[i]));
    guint n;
    const SimparGenerator *gens = simpar_generators(&n);
    for (guint i = 0; i < n; i++)
        g_ptr_array_add(names, g_strdup_printf("timeline-%s.png", gens[i].name));
    return names;
}

/* Every file the report would write into `dir` is one simpar may write (output.h): no link, no
 * device, even in an earlier report's folder. */
static gboolean
predict_report_check(const char *dir, GError **error)
{
    g_autoptr(GPtrArray) names = predict_report_names();
    for (guint i = 0; i < names->len; i++) {
        g_autofree char *path = g_build_filename(dir, names->pdata[i], NULL);
        if (!simpar_output_check("--report", path, "a report folder", error))
            return FALSE;
    }
    return TRUE;
}

/* Whether the report's files may be written into `dir`: none of their names is taken, or the
 * folder holds a report simpar wrote (its README.md says so); else the first name taken. */
static char *
predict_report_taken(const char *dir)
{
    g_autofree char *readme = g_build_filename(dir, "README.md", NULL);
    g_autofree char *head = NULL;
    gsize len;
    if (simpar_file_read(readme, 1 << 20, &head, &len, NULL) &&
        g_str_has_prefix(head, REPORT_README_HEAD))
        return NULL; /* an earlier report: its files are simpar's */
    g_autoptr(GPtrArray) names = predict_report_names();
    for (guint i = 0; i < names->len; i++) {
        g_autofree char *path = g_build_filename(dir, names->pdata[i], NULL);
        if (g_file_test(path, G_FILE_TEST_EXISTS))
            return g_strdup(names->pdata[i]);
    }
    return NULL;
}

/* Before the prediction: the folder exists, holds nothing simpar did not write that the report
 * would replace, gnuplot is there, the trace goes into it. */
static gboolean
predict_report_prepare(Predict *p, GError **error)
{
    if (p->report_dir == NULL)
        return TRUE;
    if (p->trace != NULL) {
        g_set_error(error, SIMPAR_CLI_ERROR, SIMPAR_CLI_ERROR_USAGE,
                    "--report %s writes its own trace (%s/trace.json): drop --trace %s",
                    p->report_dir, p->report_dir, p->trace);
        return FALSE;
    }
    if (g_mkdir_with_parents(p->report_dir, 0777) != 0) {
        int e = errno;
        g_set_error(error, G_FILE_ERROR, g_file_error_from_errno(e),
                    "--report %s: cannot create the folder: %s", p->report_dir, g_strerror(e));
        return FALSE;
    }
    if (!predict_report_check(p->report_dir, error))
        return FALSE;
    g_autofree char *taken = predict_report_taken(p->report_dir);
    if (taken != NULL) {
        g_set_error(error, SIMPAR_CLI_ERROR, SIMPAR_CLI_ERROR_USAGE,
                    "--report %s: %s is there and the folder is not a report simpar wrote (its "
                    "README.md would begin \"# simpar prediction report\"); give a new or empty "
                    "folder, or an earlier report's",
                    p->report_dir, taken);
        return FALSE;
    }
    g_autofree char *probe = g_build_filename(p->report_dir, "breakdown.png", NULL);
    if (!simpar_plot_check_output(probe, error)) {
        g_prefix_error(error, "--report %s: ", p->report_dir);
        return FALSE;
    }
    p->trace = g_build_filename(p->report_dir, "trace.json", NULL);
    return TRUE;
}

/* The trace, and every file of --report, is none of the files the prediction reads (the
 * platform, the calibration, a model file: --model m.json --trace m.json wrote the trace over
 * the model). */
static gboolean
predict_distinct(const Predict *p, GError **error)
{
    const char *model =
        p->job.model != NULL && g_str_has_suffix(p->job.model, ".json") ? p->job.model : NULL;
    g_autoptr(GArray) names = g_array_new(FALSE, FALSE, sizeof(SimparOutputName));
    const SimparOutputName fixed[] = {
        {"--topology", p->topology, FALSE},
        {"--calibration", p->opts.calibration, FALSE},
        {"--model", model, FALSE},
        {"--megatron-args", p->megatron_arg, FALSE},
        {"--trace", p->report_dir == NULL ? p->trace : NULL, TRUE}, /* else the report's */
    };
    g_array_append_vals(names, fixed, G_N_ELEMENTS(fixed));
    g_autoptr(GPtrArray) files = g_ptr_array_new_with_free_func(g_free);
    g_autoptr(GPtrArray) report = p->report_dir != NULL ? predict_report_names() : NULL;
    for (guint i = 0; report != NULL && i < report->len; i++) {
        g_ptr_array_add(files, g_build_filename(p->report_dir, report->pdata[i], NULL));
        SimparOutputName out = {"--report", files->pdata[files->len - 1], TRUE};
        g_array_append_val(names, out);
    }
    return simpar_output_distinct((const SimparOutputName *) names->data, names->len, error);
}

static gboolean
predict_report_file(const char *dir, const char *name, const char *text, GError **error)
{
    g_autofree char *path = g_build_filename(dir, name, NULL);
    if (!simpar_output_write("--report", path, text, strlen(text), error)) {
        g_prefix_error(error, "--report %s: ", dir);
        return FALSE;
    }
    return TRUE;
}

/* One timeline per simulated mode (the trace holds them all, read once for all of them);
 * `lines` lists the files. */
static gboolean
predict_report_timelines(const Predict *p, const char *json, GString *lines, GError **error)
{
    g_autoptr(JsonParser) parser = json_parser_new();
    if (!json_parser_load_from_data(parser, json, -1, error))
        return FALSE;
    JsonArray *rows = json_node_get_array(json_parser_get_root(parser));
    g_autofree char *trace = g_build_filename(p->report_dir, "trace.json", NULL);
    g_autoptr(GPtrArray) modes = g_ptr_array_new();
    g_autoptr(GPtrArray) outs = g_ptr_array_new_with_free_func(g_free);
    for (guint i = 0; i < json_array_get_length(rows); i++) {
        JsonObject *row = json_array_get_object_element(rows, i);
        if (!json_object_get_boolean_member_with_default(row, "simulated", FALSE))
            continue;
        const char *mode = json_object_get_string_member(row, "mode");
        g_autofree char *name = g_strdup_printf("timeline-%s.png", mode);
        g_ptr_array_add(modes, (gpointer) mode);
        g_ptr_array_add(outs, g_build_filename(p->report_dir, name, NULL));
        g_string_append_printf(lines,
                               "- `%s`: %s, one step on the first 16 GPUs (a row per GPU "
                               "stream, time in ms): simpar plot timeline trace.json --mode %s\n",
                               name, mode, mode);
    }
    return simpar_plot_timelines(trace, (const char *const *) modes->pdata,
                                 (const char *const *) outs->pdata, modes->len, error);
}

/* After it: the table, the JSON, the plots and a README saying what each file is. */
static gboolean
predict_report_write(const Predict *p, const SimparReport *report, const char *command,
                     GError **error)
{
    const char *dir = p->report_dir;
    g_autofree char *text = simpar_report_to_text(report);
    g_autofree char *json = simpar_report_to_json(report);
    g_autofree char *json_path = g_build_filename(dir, "prediction.json", NULL);
    g_autofree char *breakdown = g_build_filename(dir, "breakdown.png", NULL);
    g_autoptr(GString) timelines = g_string_new(NULL);
    if (!predict_report_file(dir, "prediction.txt", text, error) ||
        !predict_report_file(dir, "prediction.json", json, error) ||
        !simpar_plot_render("breakdown", json_path, breakdown, NULL, error) ||
        !predict_report_timelines(p, json, timelines, error))
        return FALSE;
    g_autofree char *readme = g_strdup_printf(
        REPORT_README_HEAD
        "\n"
        "Written by:\n\n    %s\n\n"
        "- `prediction.txt`: the table simpar prints: per tensor-parallel mode the step time, "
        "compute, exposed communication per group axis, memory per GPU, TFLOP/s per GPU (modes "
        "that could not run say why).\n"
        "- `prediction.json`: the same rows as JSON (simpar --json; keys in simpar's "
        "docs/usage.md).\n"
        "- `trace.json`: Chrome trace of every simulated mode, one track per GPU stream; open "
        "it in https://ui.perfetto.dev or chrome://tracing.\n"
        "- `breakdown.png`: where each mode's step goes (compute, exposed tensor-parallel "
        "communication intra-/inter-node, pipeline bubble and transfers, data-parallel "
        "reduction, optimizer): simpar plot breakdown prediction.json\n"
        "%s\nRe-render any plot as SVG with `simpar plot KIND INPUT -o FILE.svg`.\n",
        command, timelines->str);
    return predict_report_file(dir, "README.md", readme, error);
}

/* --megatron-args FILE, read before the options are parsed: its flags go into the vector first,
 * so that the command line's own flags, parsed after them, win. *argv becomes `keep`'s vector
 * (the strings stay borrowed). */
static gboolean
predict_megatron(Predict *p, int *argc, char ***argv, GPtrArray *keep, GError **error)
{
    const char *path = NULL;
    int end = *argc; /* `--`: pretrain_gpt.py's arguments follow, as a launch line gives them */
    for (int i = 1; i < *argc && end == *argc; i++) {
        if (g_str_equal((*argv)[i], "--"))
            end = i;
        else if (g_str_has_prefix((*argv)[i], "--megatron-args="))
            path = (*argv)[i] + strlen("--megatron-args=");
        else if (g_str_equal((*argv)[i], "--megatron-args") && i + 1 < *argc)
            path = (*argv)[++i];
    }
    if (path != NULL && end < *argc)
        return simpar_cli_usage(error,
                                "--megatron-args %s and arguments after --: give the "
                                "Megatron arguments one way",
                                path);
    if (path == NULL && end == *argc)
        return TRUE;
    if (path != NULL) {
        p->megatron = simpar_megatron_read(path, error);
    } else { /* each argument one word, as the shell gave it */
        g_autoptr(GString) line = g_string_new(NULL);
        for (int i = end + 1; i < *argc; i++) {
            g_autofree char *q = g_shell_quote((*argv)[i]);
            g_string_append_printf(line, "%s ", q);
        }
        p->megatron = simpar_megatron_parse(line->str, "the arguments after --", error);
    }
    if (p->megatron == NULL)
        return FALSE;
    g_ptr_array_add(keep, (*argv)[0]);
    for (const char *const *a = simpar_megatron_argv(p->megatron); *a != NULL; a++)
        g_ptr_array_add(keep, (gpointer) *a);
    for (int i = 1; i < end; i++)
        g_ptr_array_add(keep, (*argv)[i]);
    *argc = (int) keep->len;
    g_ptr_array_add(keep, NULL);
    *argv = (char **) keep->pdata;
    return TRUE;
}

static const char predict_summary[] =
    "Predicts the time of one whole optimizer step (embedding, every layer forward and\n"
    "backward over every micro-batch, loss, pipeline, data-parallel reductions, Adam) of each\n"
    "tensor-parallel mode on a SimGrid platform, with compute, exposed communication per group\n"
    "axis (intra-/inter-node), memory per GPU and achieved TFLOP/s per GPU. Without\n"
    "--tp-mode it compares every mode the GPU count allows (64 GPUs: 1-D, 2-D q=8, 2.5-D\n"
    "q=4 d=4, 3-D q=4).\n\n";

gboolean
simpar_cmd_predict(int argc, char **argv, GError **error)
{
    Predict p = {
        .gpus = G_MININT64, .jobs_arg = G_MININT64, .steps_to_target = G_MININT64, .warn_fd = -1};
    simpar_job_args_init(&p.job);
    const GOptionEntry entries[] = {
        {"topology", 't', 0, G_OPTION_ARG_FILENAME, &p.topology,
         "SimGrid platform file (hosts node<N>-gpu<G>), e.g. topologies/v100x64.xml", "FILE"},
        {"gpus", 0, 0, G_OPTION_ARG_INT64, &p.gpus, "GPUs of the platform to use (default all)",
         "N"},
        {"steps-to-target", 0, 0, G_OPTION_ARG_INT64, &p.steps_to_target,
         "Steps to the target loss: report time and GPU-hours to target", "N"},
        {"jobs", 'j', 0, G_OPTION_ARG_INT64, &p.jobs_arg,
         "Modes simulated in parallel processes (default: the number of cores)", "N"},
        {"json", 0, 0, G_OPTION_ARG_NONE, &p.json, "Print JSON: one object per mode", NULL},
        {"trace", 0, 0, G_OPTION_ARG_FILENAME, &p.trace,
         "Write a Chrome trace (Perfetto): every op of every layer and each collective with its "
         "axis and bytes, one track per GPU stream, for the ranks of --trace-ranks",
         "FILE"},
        {"trace-ranks", 0, 0, G_OPTION_ARG_STRING, &p.trace_ranks_arg,
         "Ranks the trace shows: all, or a list such as 0,8-15 (default: one rank per role: "
         "replica 0 of each stage, each layer rank whose ops differ)",
         "LIST"},
        {"report", 0, 0, G_OPTION_ARG_FILENAME, &p.report_dir,
         "Write the table, the JSON, the Chrome trace, the plots and a README into DIR", "DIR"},
        {"megatron-args", 0, 0, G_OPTION_ARG_FILENAME, &p.megatron_arg,
         "Predict the job of a Megatron-LM launch line or script (pretrain_gpt.py's arguments; "
         "read, never run), with Megatron's defaults; the command line's flags win",
         "FILE"},
        G_OPTION_ENTRY_NULL,
    };
    g_autoptr(GOptionContext) ctx = g_option_context_new("- plan transformer training");
    g_autofree char *commands = simpar_cli_commands_help();
    g_autofree char *summary = g_strconcat(predict_summary, commands, NULL);
    g_option_context_set_summary(ctx, summary);
    g_option_context_add_main_entries(ctx, entries, NULL);
    g_autofree GOptionEntry *opts = simpar_predict_option_entries(
        &p.opts, "simgrid (default; contention), analytic (closed forms, no contention) or formula "
                 "(analytic figures without a step replay)");
    g_option_context_add_main_entries(ctx, opts, NULL);
    simpar_job_add_options(ctx, &p.job, SIMPAR_JOB_OPTIONS_ALL);
    g_option_context_add_group(ctx, simpar_megatron_aliases(&p.job));
    g_autoptr(GString) command = g_string_new("simpar"); /* for the report's README */
    for (int i = 1; i < argc; i++) {
        gboolean plain = argv[i][0] != '\0';
        for (const char *c = argv[i]; *c != '\0' && plain; c++)
            plain = g_ascii_isalnum(*c) || strchr("_./=:,+-", *c) != NULL;
        g_autofree char *quoted = plain ? g_strdup(argv[i]) : g_shell_quote(argv[i]);
        g_string_append_printf(command, " %s", quoted);
    }
    p.command = command->str;
    g_autoptr(GPtrArray) meg_argv = g_ptr_array_new();
    gboolean ok = predict_megatron(&p, &argc, &argv, meg_argv, error) &&
                  simpar_cli_parse(ctx, "simpar", &argc, &argv, error) &&
                  predict_resolve(&p, error) && predict_precheck(&p, error) &&
                  predict_report_prepare(&p, error) && predict_distinct(&p, error);
    g_autoptr(SimparReport) report = ok ? predict_report_new(&p) : NULL;
    ok = ok && predict_workers(&p, report, error) && predict_print(&p, report, error) &&
         (p.report_dir == NULL || predict_report_write(&p, report, command->str, error));
    predict_clear(&p);
    return ok;
}
