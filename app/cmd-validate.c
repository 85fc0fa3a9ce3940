/* cmd-validate.c - `simpar validate --measured RUN.json --topology FILE`: a run that simpar-exec
 * measured, against simpar's prediction of the very same schedule.
 *
 *   parent: RUN.json -> job args -> schedule (must match the run op by op)
 *   child:  platform GPU 0 (+ --calibration, links too) -> compute times -> backend, one pass
 *           (n_layers = 1) on GPUs 0..ranks-1 -> predicted spans
 *           measured spans (RUN.json) and predicted spans through the same code: the breakdown
 *           of report.c, busy time per op class, the step -> one JSON object
 *   parent: text table or that JSON; --plot draws it (plot-validate.c, plots/validate.gp)
 *
 * Busy time of a class: the mean over ranks of the summed durations of its ops (a collective's
 * span includes waiting for late peers, on both sides). Errors are (predicted - measured) /
 * measured; the MAPE averages the classes whose measured time is at least 1% of the measured
 * step (smaller ones are noise on a host and launch overhead on a GPU).
 */
#include "cli.h"
#include "measured.h"
#include "memory.h"
#include "platform.h"
#include "plot.h"
#include "report.h"
#include "step-predict.h"
#include <math.h>
#include <stdio.h>

#define VALIDATE_MAPE_SHARE 0.01 /* classes below 1% of the measured step are left out */

typedef struct {
    char *measured, *topology, *calibration, *backend_name, *plot, *trace, *kernels_name;
    char *published; /* --published SET, or NULL */
    gboolean json;
    SimparKernelSet kernels;
    const SimparBackend *backend;
    SimparMeasuredRun *run;
    SimparSchedule *sched;
    SimparModel model;
    SimparTrain train;
    SimparAttentionImpl attn;
} Validate;

static void
validate_clear(Validate *v)
{
    g_free(v->measured), g_free(v->topology), g_free(v->calibration), g_free(v->backend_name);
    g_free(v->plot), g_free(v->trace), g_free(v->kernels_name), g_free(v->published);
    g_clear_pointer(&v->run, simpar_measured_run_free);
    g_clear_pointer(&v->sched, simpar_schedule_free);
}

static gboolean
validate_plot_check(Validate *v, GError **error)
{
    if (!simpar_output_check("--plot", v->plot, "an image (.png or .svg)", error))
        return FALSE;
    if (simpar_plot_check_output(v->plot, error))
        return TRUE;
    g_prefix_error(error, "--plot ");
    return FALSE;
}

/* --published SET: nothing of a measured run applies. */
static gboolean
validate_published(const Validate *v, GString *out, GError **error)
{
    if (v->measured != NULL || v->topology != NULL || v->calibration != NULL ||
        v->kernels_name != NULL || v->plot != NULL || v->trace != NULL)
        return simpar_cli_usage(error,
                                "--published %s runs the published jobs on platforms of "
                                "their own: drop --measured, --topology, --calibration, "
                                "--kernels, --plot and --trace",
                                v->published);
    if (!simpar_validate_published(v->published,
                                   v->backend_name != NULL ? v->backend_name : "formula", v->json,
                                   out, error))
        return FALSE;
    fputs(out->str, stdout);
    return TRUE;
}

/* Options, then the run and its schedule: everything that needs no platform. */
static gboolean
validate_resolve(Validate *v, GError **error)
{
    if (v->measured == NULL || v->topology == NULL) {
        g_set_error(error, SIMPAR_CLI_ERROR, SIMPAR_CLI_ERROR_USAGE,
                    "simpar validate: --measured RUN.json and --topology FILE are required (see "
                    "simpar validate --help)");
        return FALSE;
    }
    if ((v->trace != NULL && !simpar_output_check("--trace", v->trace, "a Chrome trace", error)) ||
        !simpar_backend_lookup(v->backend_name != NULL ? v->backend_name : "simgrid", &v->backend,
                               error) ||
        !simpar_kernel_set_parse(v->kernels_name != NULL ? v->kernels_name : "unfused", &v->kernels,
                                 error) ||
        (v->plot != NULL && !validate_plot_check(v, error)))
        return FALSE;
    const SimparOutputName names[] = {
        {"--trace", v->trace, TRUE},
        {"--plot", v->plot, TRUE},
        {"--measured", v->measured, FALSE},
        {"--topology", v->topology, FALSE},
        {"--calibration", v->calibration, FALSE},
    };
    if (!simpar_output_distinct(names, G_N_ELEMENTS(names), error))
        return FALSE;
    v->run = simpar_measured_run_load(v->measured, error);
    if (v->run == NULL)
        return FALSE;
    v->sched = simpar_measured_run_schedule(v->run, &v->model, &v->train, error);
    if (v->sched == NULL)
        return FALSE;
    if (!simpar_attention_parse(v->run->attention, &v->attn, NULL)) {
        g_set_error(error, SIMPAR_MEASURED_ERROR, SIMPAR_MEASURED_ERROR_PARSE,
                    "%s: \"attention\" is \"%s\" (valid: unfused, flash)", v->measured,
                    v->run->attention);
        return FALSE;
    }
    return TRUE;
}

/* ------------------------------------------------------------------------ op classes, in child */

typedef struct {
    const char *name; /* interned */
    double predicted_s, measured_s;
} ValidateClass;

/* An op's class: its kind's (models/schedule.h), a collective's by its kind and group axis. */
static const char *
validate_class_name(const SimparSchedule *s, const SimparOp *op)
{
    if (op->kind == SIMPAR_OP_COLLECTIVE) {
        g_autofree char *name = g_strdup_printf("%s %s", simpar_coll_kind_name(op->u.coll.kind),
                                                simpar_schedule_group(s, op->u.coll.group)->axis);
        return g_intern_string(name);
    }
    return g_intern_static_string(simpar_op_class_name(simpar_op_class(op->kind)));
}

static guint
validate_class_index(GArray *classes, const char *name)
{
    for (guint i = 0; i < classes->len; i++)
        if (g_array_index(classes, ValidateClass, i).name == name)
            return i;
    ValidateClass c = {name, 0, 0};
    g_array_append_val(classes, c);
    return classes->len - 1;
}

/* The classes present in `s`: compute classes in a fixed order, collectives in order of first
 * appearance, p2p last. */
static GArray *
validate_classes_new(const SimparSchedule *s)
{
    GArray *classes = g_array_new(FALSE, FALSE, sizeof(ValidateClass));
    guint n = simpar_schedule_n_ops(s);
    for (SimparOpClass c = 0; c < SIMPAR_N_OP_CLASSES; c++) /* compute, collectives, p2p */
        for (guint i = 0; i < n; i++) {
            const SimparOp *op = simpar_schedule_op(s, i);
            if (simpar_op_class(op->kind) == c) {
                validate_class_index(classes, validate_class_name(s, op));
                if (c != SIMPAR_OP_CLASS_COLLECTIVE) /* one class, one row */
                    break;
            }
        }
    return classes; /* (transfer full) */
}

/* Busy time per class, mean over ranks, of both span sets. */
static GArray *
validate_classes(const SimparSchedule *s, const SimparSpan *predicted, const SimparSpan *measured)
{
    GArray *classes = validate_classes_new(s);
    guint ranks = simpar_schedule_n_ranks(s);
    for (guint i = 0; i < simpar_schedule_n_ops(s); i++) {
        ValidateClass *c = &g_array_index(
            classes, ValidateClass,
            validate_class_index(classes, validate_class_name(s, simpar_schedule_op(s, i))));
        c->predicted_s += (predicted[i].end - predicted[i].start) / ranks;
        c->measured_s += (measured[i].end - measured[i].start) / ranks;
    }
    return classes; /* (transfer full) */
}

/* ----------------------------------------------------------------------- report rows, in child */

typedef struct {
    Validate *v;
    SimparGpu gpu;
    SimparRun run;
    SimparMemory mem;
} ValidateJob;

/* The row of `spans` in the predict --json schema (report.c), as a JSON node. */
static JsonNode *
validate_row(const ValidateJob *vj, const SimparSpan *spans, const char *backend, const char *coll,
             SimparReportRow *row)
{
    const Validate *v = vj->v;
    guint gpus = simpar_schedule_n_ranks(v->sched);
    *row = (SimparReportRow){.gen = v->train.tp.gen,
                             .grid = g_strdup_printf("%s T=%" G_GINT64_FORMAT " P=%" G_GINT64_FORMAT
                                                     " D=%" G_GINT64_FORMAT,
                                                     simpar_job_run_name(v->run->run),
                                                     v->train.tp.tp, v->train.pp, v->train.dp),
                             .gpus = gpus,
                             .memory = vj->mem,
                             .mem_capacity_B = vj->gpu.mem_bytes};
    simpar_report_breakdown(&vj->run, spans, row);
    SimparModel flops_model = v->model; /* a layer run: one layer, no logits */
    if (v->run->run == SIMPAR_JOB_RUN_LAYER)
        flops_model.layers = 1, flops_model.vocab = 0;
    row->model_flops = simpar_train_model_flops(&flops_model, &v->train);
    row->tflops_per_gpu = row->model_flops / row->step_s / gpus / 1e12;
    row->step.mfu = row->model_flops / row->step_s / gpus / vj->gpu.peak_flops[v->model.dtype];
    g_autoptr(SimparReport) rep =
        simpar_report_new(&v->model, v->topology, backend, coll, simpar_attention_name(v->attn));
    SimparReportRow copy = *row; /* the report takes the strings and axes */
    row->grid = NULL, row->axes = NULL;
    simpar_report_append(rep, &copy);
    g_autofree char *json = simpar_report_to_json(rep);
    g_autoptr(JsonParser) parser = json_parser_new();
    g_assert(json_parser_load_from_data(parser, json, -1, NULL)); /* report.c wrote it */
    return json_array_dup_element(json_node_get_array(json_parser_get_root(parser)), 0);
}

static void
validate_memory(ValidateJob *vj)
{
    Validate *v = vj->v;
    g_autoptr(SimparSchedule) layer = simpar_generate_layer(&v->model, &v->train.tp, NULL);
    g_assert(layer != NULL); /* simpar_job_schedule built it once already */
    SimparMemory layer_mem;
    guint stage;
    simpar_memory_estimate(&v->model, &v->train.tp, layer, v->attn, &layer_mem);
    simpar_memory_step_peak(&v->model, &v->train, layer_mem.transient_B, v->attn, &vj->mem, &stage);
}

static void
validate_json_number(JsonBuilder *b, const char *key, double v)
{
    json_builder_set_member_name(b, key);
    if (isfinite(v))
        json_builder_add_double_value(b, v);
    else
        json_builder_add_null_value(b);
}

static void
validate_json_string(JsonBuilder *b, const char *key, const char *v)
{
    json_builder_set_member_name(b, key);
    json_builder_add_string_value(b, v);
}

/* The classes, with "exposed communication" last; returns the MAPE (NaN without classes). */
static double
validate_json_classes(JsonBuilder *b, GArray *classes, double measured_step, guint *n_mape)
{
    double sum = 0;
    *n_mape = 0;
    json_builder_set_member_name(b, "classes");
    json_builder_begin_array(b);
    for (guint i = 0; i < classes->len; i++) {
        const ValidateClass *c = &g_array_index(classes, ValidateClass, i);
        double err = c->measured_s > 0 ? (c->predicted_s - c->measured_s) / c->measured_s : NAN;
        gboolean in = c->measured_s >= VALIDATE_MAPE_SHARE * measured_step;
        json_builder_begin_object(b);
        validate_json_string(b, "class", c->name);
        validate_json_number(b, "predicted_s", c->predicted_s);
        validate_json_number(b, "measured_s", c->measured_s);
        validate_json_number(b, "error", err);
        json_builder_set_member_name(b, "in_mape");
        json_builder_add_boolean_value(b, in);
        json_builder_end_object(b);
        if (in)
            sum += fabs(err), (*n_mape)++;
    }
    json_builder_end_array(b);
    return *n_mape > 0 ? sum / *n_mape : NAN;
}

static void
validate_json_header(JsonBuilder *b, const ValidateJob *vj, const char *gpus)
{
    const Validate *v = vj->v;
    g_autofree char *compute = simpar_compute_describe(&vj->gpu, v->sched);
    g_autofree char *job = g_strjoinv(" ", v->run->job_args);
    validate_json_string(b, "measured_file", v->measured);
    validate_json_string(b, "executor", v->run->executor);
    validate_json_string(b, "device", v->run->device);
    validate_json_string(b, "run", simpar_job_run_name(v->run->run));
    validate_json_string(b, "job", job);
    validate_json_string(b, "topology", v->topology);
    validate_json_string(b, "gpus", gpus);
    validate_json_string(b, "backend", v->backend->name);
    validate_json_string(b, "calibration", v->calibration != NULL ? v->calibration : "");
    validate_json_string(b, "kernels", simpar_kernel_set_name(v->kernels));
    validate_json_string(b, "compute", compute);
}

/* The comparison as one JSON object (the --json output). */
static char *
validate_result(ValidateJob *vj, const SimparSpan *predicted)
{
    const Validate *v = vj->v;
    const SimparSpan *measured = v->run->spans;
    g_autoptr(JsonBuilder) b = json_builder_new();
    json_builder_begin_object(b);
    simpar_json_head(b, "simpar-validation", 1);
    g_autofree char *gpus = g_strdup_printf("0-%u", simpar_schedule_n_ranks(v->sched) - 1);
    validate_json_header(b, vj, gpus);
    SimparReportRow mrow, prow;
    g_autofree char *coll = g_strdup_printf("%s executor", v->run->executor);
    json_builder_set_member_name(b, "measured");
    json_builder_add_value(b, validate_row(vj, measured, v->run->executor, coll, &mrow));
    json_builder_set_member_name(b, "predicted");
    json_builder_add_value(b, validate_row(vj, predicted, v->backend->name,
                                           "fused collectives, algorithm auto", &prow));
    g_autoptr(GArray) classes = validate_classes(v->sched, predicted, measured);
    ValidateClass exposed = {g_intern_static_string("exposed communication"), prow.exposed_s,
                             mrow.exposed_s};
    g_array_append_val(classes, exposed);
    guint n_mape;
    double mape = validate_json_classes(b, classes, mrow.step_s, &n_mape);
    validate_json_number(b, "step_error", (prow.step_s - mrow.step_s) / mrow.step_s);
    validate_json_number(b, "mape", mape);
    json_builder_set_member_name(b, "mape_classes");
    json_builder_add_int_value(b, n_mape);
    validate_json_number(b, "mape_min_share", VALIDATE_MAPE_SHARE);
    json_builder_end_object(b);
    return simpar_json_builder_text(b, NULL); /* (transfer full) */
}

/* ------------------------------------------------------------------------------- the child */

static gboolean
validate_gpu(ValidateJob *vj, const SimparPlatform *platform, GError **error)
{
    const Validate *v = vj->v;
    guint ranks = simpar_schedule_n_ranks(v->sched);
    if (ranks > simpar_platform_n_gpus(platform)) {
        g_set_error(error, SIMPAR_CLI_ERROR, SIMPAR_CLI_ERROR_USAGE,
                    "--topology %s has %u GPUs; the run in %s used %u ranks", v->topology,
                    simpar_platform_n_gpus(platform), v->measured, ranks);
        return FALSE;
    }
    if (!simpar_platform_gpu(platform, 0, &vj->gpu, error) ||
        (v->calibration != NULL &&
         (!simpar_gpu_load_calibration(&vj->gpu, v->calibration, error) ||
          !simpar_platform_calibrate_links(platform, v->calibration, error))))
        return FALSE;
    vj->gpu.kernel_set = v->kernels;
    if (!simpar_gpu_check_fp8(&vj->gpu, (SimparFp8Recipe) v->model.fp8, FALSE, error) ||
        !simpar_gpu_validate(&vj->gpu, v->model.dtype, error)) {
        g_prefix_error(error, "--topology %s: ", v->topology);
        return FALSE;
    }
    return TRUE;
}

static gboolean
validate_trace(const ValidateJob *vj, const SimparSpan *predicted, GError **error)
{
    g_autoptr(SimparTrace) t = simpar_trace_new(vj->v->trace, error);
    if (t == NULL)
        return FALSE;
    guint n = simpar_schedule_n_ranks(vj->run.sched);
    g_autofree SimparTraceRank *ranks = g_new(SimparTraceRank, n);
    for (guint r = 0; r < n; r++)
        ranks[r] =
            (SimparTraceRank){r, r, vj->run.gpus[r], r, 0, 0, 0, 0, 0, 0}; /* no memory counter */
    simpar_report_trace(t, 0, "measured", &vj->run, vj->v->run->spans, ranks, n, NULL, NULL);
    simpar_report_trace(t, 1, "predicted", &vj->run, predicted, ranks, n, NULL, NULL);
    return simpar_trace_close(t, error);
}

static gboolean
validate_job(const SimparPlatform *platform, gpointer data, GString *out, GError **error)
{
    ValidateJob vj = {.v = data};
    Validate *v = vj.v;
    if (!validate_gpu(&vj, platform, error))
        return FALSE;
    guint ranks = simpar_schedule_n_ranks(v->sched);
    g_autofree guint *gpus = g_new(guint, ranks);
    for (guint r = 0; r < ranks; r++)
        gpus[r] = r;
    SimparStepTimer tm = {v->backend,
                          {.net = simpar_platform_net(platform), .mode = SIMPAR_COLL_MODE_FUSED},
                          &vj.gpu,
                          v->attn};
    simpar_coll_params_init(&tm.base.coll);
    SimparBlockTimes none = {0}; /* the run's schedules have no timed blocks */
    g_autofree double *compute = NULL;
    g_autofree SimparSpan *predicted =
        simpar_step_run(&tm, v->sched, &none, gpus, &vj.run, &compute);
    validate_memory(&vj);
    g_autofree char *json = validate_result(&vj, predicted);
    if (v->trace != NULL && !validate_trace(&vj, predicted, error))
        return FALSE;
    g_string_append(out, json);
    return TRUE;
}

/* ------------------------------------------------------------------ text and plot, in parent */

static double
validate_get(JsonObject *o, const char *key)
{
    JsonNode *n = json_object_get_member(o, key);
    return n != NULL && !JSON_NODE_HOLDS_NULL(n) ? json_node_get_double(n) : NAN;
}

static void
validate_text_row(GString *out, const char *name, double p, double m, double err, gboolean mark)
{
    g_string_append_printf(out, "%-28s %12.4e %12.4e ", name, p, m);
    if (isfinite(err))
        g_string_append_printf(out, "%+9.2f%s\n", 100 * err, mark ? " *" : "");
    else
        g_string_append(out, "        -\n");
}

static char *
validate_text(JsonObject *o)
{
    GString *out = g_string_new(NULL);
    const char *cal = json_object_get_string_member(o, "calibration");
    g_string_append_printf(
        out,
        "%s: %s run of %s, measured on %s (%s)\npredicted on %s GPUs %s, backend %s%s%s\n"
        "%s\n"
        "busy time per rank: mean over ranks of the summed op durations, seconds; error = "
        "(predicted - measured) / measured\n\n%-28s %12s %12s %9s\n",
        json_object_get_string_member(o, "measured_file"), json_object_get_string_member(o, "run"),
        json_object_get_string_member(o, "job"), json_object_get_string_member(o, "executor"),
        json_object_get_string_member(o, "device"), json_object_get_string_member(o, "topology"),
        json_object_get_string_member(o, "gpus"), json_object_get_string_member(o, "backend"),
        cal[0] != '\0' ? ", calibration " : "", cal, json_object_get_string_member(o, "compute"),
        "class", "predicted s", "measured s", "error %");
    JsonArray *classes = json_object_get_array_member(o, "classes");
    for (guint i = 0; i < json_array_get_length(classes); i++) {
        JsonObject *c = json_array_get_object_element(classes, i);
        validate_text_row(out, json_object_get_string_member(c, "class"),
                          validate_get(c, "predicted_s"), validate_get(c, "measured_s"),
                          validate_get(c, "error"), json_object_get_boolean_member(c, "in_mape"));
    }
    JsonObject *m = json_object_get_object_member(o, "measured");
    JsonObject *p = json_object_get_object_member(o, "predicted");
    double step_err = validate_get(o, "step_error"), mape = validate_get(o, "mape");
    validate_text_row(out, "step", validate_get(p, "step_time_s"), validate_get(m, "step_time_s"),
                      step_err, FALSE);
    g_string_append_printf(out,
                           "\n* in the MAPE: classes whose measured time is at least %.0f%% of "
                           "the measured step.\n",
                           100 * validate_get(o, "mape_min_share"));
    if (isfinite(mape))
        g_string_append_printf(out, "MAPE %.2f%% over %" G_GINT64_FORMAT " classes; ", 100 * mape,
                               json_object_get_int_member(o, "mape_classes"));
    else
        g_string_append(out, "MAPE -: no class reaches that share; ");
    g_string_append_printf(out, "step error %+.2f%%\n", 100 * step_err);
    return g_string_free(out, FALSE); /* (transfer full) */
}

static gboolean
validate_print(const Validate *v, const char *json, GError **error)
{
    g_autoptr(JsonParser) parser = json_parser_new();
    g_assert(json_parser_load_from_data(parser, json, -1, NULL)); /* the child wrote it */
    JsonObject *o = json_node_get_object(json_parser_get_root(parser));
    g_autofree char *text = v->json ? g_strdup(json) : validate_text(o);
    printf("%s\n", text);
    if (v->plot == NULL || simpar_plot_validate(o, NULL, v->plot, error))
        return TRUE;
    g_prefix_error(error, "--plot ");
    return FALSE;
}

static const char validate_summary[] =
    "Compares a run measured by simpar-exec (RUN.json) with simpar's prediction of the same\n"
    "schedule on the first `ranks` GPUs of the platform: busy time per op class (GEMM,\n"
    "attention, other kernels, embedding + loss, optimizer, each collective per group axis,\n"
    "p2p), exposed communication and the step, with the error of each, their mean absolute\n"
    "percentage error (classes of at least 1% of the measured step) and the step's error.";

gboolean
simpar_cmd_validate(int argc, char **argv, GError **error)
{
    Validate v = {0};
    const GOptionEntry entries[] = {
        {"measured", 0, 0, G_OPTION_ARG_FILENAME, &v.measured,
         "RUN.json written by simpar-exec --run ... -o FILE", "RUN.json"},
        {"topology", 't', 0, G_OPTION_ARG_FILENAME, &v.topology,
         "SimGrid platform file (e.g. topologies/host.xml for the host executor)", "FILE"},
        {"calibration", 0, 0, G_OPTION_ARG_FILENAME, &v.calibration,
         "JSON file overriding GPU and link figures (simpar calibrate -o)", "FILE"},
        {"backend", 0, 0, G_OPTION_ARG_STRING, &v.backend_name, "simgrid (default) or analytic",
         "B"},
        {"kernels", 0, 0, G_OPTION_ARG_STRING, &v.kernels_name,
         "The kernels the run ran: unfused (default: one kernel per op, as simpar-exec runs "
         "them), pytorch or megatron (simpar predict --help)",
         "SET"},
        {"json", 0, 0, G_OPTION_ARG_NONE, &v.json,
         "Print one JSON object: measured and predicted rows, classes, step_error, mape", NULL},
        {"plot", 0, 0, G_OPTION_ARG_FILENAME, &v.plot,
         "Plot predicted against measured per class with gnuplot (.png or .svg)", "FILE"},
        {"trace", 0, 0, G_OPTION_ARG_FILENAME, &v.trace,
         "Write a Chrome trace with the measured and the predicted spans", "FILE"},
        {"published", 0, 0, G_OPTION_ARG_STRING, &v.published,
         "Instead of a measured run: every case of a published table of whole steps "
         "(korthikanti: arXiv 2205.05198's step times on DGX A100; megatron-bridge: NeMo "
         "Megatron-Bridge's tokens/s/GPU on DGX H100, dense and MoE, FP8; megatron-bridge-gb200: "
         "the same on GB200 NVL72 racks, FP8 and MXFP8; megatron-bridge-gb300: on GB300 NVL72 "
         "racks, FP8 and MXFP8) predicted against its published time; "
         "--backend default formula",
         "SET"},
        G_OPTION_ENTRY_NULL,
    };
    g_autoptr(GOptionContext) ctx = g_option_context_new("- a measured run against its prediction");
    g_option_context_set_summary(ctx, validate_summary);
    g_option_context_add_main_entries(ctx, entries, NULL);
    g_autoptr(GString) out = g_string_new(NULL);
    gboolean ok = simpar_cli_parse(ctx, "simpar validate", &argc, &argv, error);
    if (ok && v.published != NULL) {
        ok = validate_published(&v, out, error);
        validate_clear(&v);
        return ok;
    }
    ok = ok && validate_resolve(&v, error) &&
         simpar_platform_run(v.topology, validate_job, &v, out, error) &&
         validate_print(&v, out->str, error);
    validate_clear(&v);
    return ok;
}
