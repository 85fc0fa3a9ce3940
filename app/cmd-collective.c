/* cmd-collective.c - `simpar collective`: one collective over a range of sizes, as nccl-tests
 * reports it (time, algbw = S / t, busbw = algbw * the kind's factor), so the network model can
 * be held against a user's own nccl-tests output.
 *
 * Each size is a one-op schedule per GPU (the first N GPUs of the platform in one group) run by
 * the chosen backend, so this exercises exactly the code a prediction uses.
 */
#include "cli-values.h"
#include "cli.h"
#include "platform.h"
#include "predict-config.h"
#include "report.h"
#include <math.h>
#include <stdio.h>
#include <string.h>

typedef struct {
    char *topology, *op_name, *algo_name, *backend_name, *coll_mode_name, *proto_name;
    char *calibration;
    char *bytes, *min_bytes, *max_bytes, *format, *time_budget;
    double budget_s; /* of SimGrid time the sizes may take (estimate) */
    gint64 gpus;
    gboolean json, nccl_tests; /* --json or --format json; --format nccl-tests */
    SimparCollKind kind;
    double lo, hi;
    const SimparBackend *backend;
    SimparRun run;
} Collective;

static const char *const collective_ops[] = {"allreduce", "allgather", "reducescatter",
                                             "broadcast", "reduce",    "alltoall"};

/* nccl-tests' binary, reduction and root for each kind (NVIDIA/nccl-tests src/: the *_perf
 * tests print "sum" for the reducing kinds, "none" otherwise, root 0 where one is used) */
static const struct {
    const char *test, *redop;
    int root;
} collective_nccl[] = {
    {"all_reduce_perf", "sum", -1},     {"all_gather_perf", "none", -1},
    {"reduce_scatter_perf", "sum", -1}, {"broadcast_perf", "none", 0},
    {"reduce_perf", "sum", 0},          {"alltoall_perf", "none", -1},
};

/* "8", "64K", "1M", "1G" (powers of 1024, as nccl-tests reads -b / -e): a SIZE of
 * cli-values.h, from 1 byte to 64G. */
static gboolean
collective_size(const char *flag, const char *text, double *out, GError **error)
{
    guint64 v;
    if (!simpar_cli_parse_size(flag, text, 1, 64ull << 30, &v, error))
        return FALSE;
    *out = (double) v;
    return TRUE;
}

/* A size of whole fp32 elements for each of `per` GPUs; else an error naming the nearest. */
static gboolean
collective_whole(const char *flag, const char *text, double bytes, guint per, GError **error)
{
    guint64 unit = 4ull * per, v = (guint64) bytes;
    if (v % unit == 0)
        return TRUE;
    guint64 below = v / unit * unit;
    g_set_error(error, SIMPAR_CLI_ERROR, SIMPAR_CLI_ERROR_USAGE,
                "%s %s: %" G_GUINT64_FORMAT " bytes is not a whole number of fp32 elements%s "
                "(multiples of %" G_GUINT64_FORMAT " bytes; the nearest: %" G_GUINT64_FORMAT
                " or %" G_GUINT64_FORMAT ")",
                flag, text, v, per > 1 ? " per GPU" : "", unit, below > 0 ? below : unit,
                below > 0 ? below + unit : 2 * unit);
    return FALSE;
}

static gboolean
collective_kind(const char *name, SimparCollKind *out, GError **error)
{
    for (guint i = 0; i < G_N_ELEMENTS(collective_ops); i++) {
        if (g_strcmp0(name, collective_ops[i]) == 0) {
            *out = (SimparCollKind) i;
            return TRUE;
        }
    }
    g_set_error(error, SIMPAR_CLI_ERROR, SIMPAR_CLI_ERROR_USAGE,
                "--op %s: unknown (valid: allreduce, allgather, reducescatter, broadcast, reduce, "
                "alltoall)",
                name != NULL ? name : "(missing)");
    return FALSE;
}

/* exact, fused, or played: exact without the proven shortcut for lone rings (backend.h) */
static gboolean
collective_mode(Collective *c, GError **error)
{
    c->run.play_all = g_strcmp0(c->coll_mode_name, "played") == 0;
    if (c->run.play_all) {
        c->run.mode = SIMPAR_COLL_MODE_EXACT;
        return TRUE;
    }
    return simpar_coll_mode_parse(c->coll_mode_name != NULL ? c->coll_mode_name : "exact",
                                  &c->run.mode, error);
}

/* --time-budget's default: one collective is seconds, played over thousands of GPUs hours */
#define COLLECTIVE_BUDGET_MIN 10
/* What a transfer of a played expansion holds (measured: about 100 bytes with SimGrid's
 * activity, all-to-all over 512 GPUs) */
#define COLLECTIVE_XFER_B 128

static gboolean
collective_resolve(Collective *c, GError **error)
{
    simpar_coll_params_init(&c->run.coll);
    if (c->topology == NULL || c->op_name == NULL || c->gpus == G_MININT64) {
        g_set_error(error, SIMPAR_CLI_ERROR, SIMPAR_CLI_ERROR_USAGE,
                    "simpar collective: --topology FILE, --op OP and --gpus N are required "
                    "(see simpar collective --help)");
        return FALSE;
    }
    if (c->gpus < 2 || c->gpus > 1 << 20) {
        g_set_error(error, SIMPAR_CLI_ERROR, SIMPAR_CLI_ERROR_USAGE,
                    "--gpus %" G_GINT64_FORMAT ": a collective needs 2 to the platform's GPUs",
                    c->gpus);
        return FALSE;
    }
    if (c->format != NULL) {
        gboolean json = g_str_equal(c->format, "json");
        c->nccl_tests = g_str_equal(c->format, "nccl-tests");
        if (!json && !c->nccl_tests && !g_str_equal(c->format, "table")) {
            g_set_error(error, SIMPAR_CLI_ERROR, SIMPAR_CLI_ERROR_USAGE,
                        "--format %s: valid are table (default), json, nccl-tests", c->format);
            return FALSE;
        }
        if (c->json && !json) {
            g_set_error(error, SIMPAR_CLI_ERROR, SIMPAR_CLI_ERROR_USAGE,
                        "--json and --format %s contradict each other; give one", c->format);
            return FALSE;
        }
        c->json = json;
    }
    if (c->bytes != NULL && (c->min_bytes != NULL || c->max_bytes != NULL)) {
        g_set_error(error, SIMPAR_CLI_ERROR, SIMPAR_CLI_ERROR_USAGE,
                    "--bytes cannot be combined with --min-bytes / --max-bytes");
        return FALSE;
    }
    const char *lo = c->bytes != NULL ? c->bytes : c->min_bytes != NULL ? c->min_bytes : "8";
    const char *hi = c->bytes != NULL ? c->bytes : c->max_bytes != NULL ? c->max_bytes : "1G";
    if (!simpar_predict_budget_parse(c->time_budget, COLLECTIVE_BUDGET_MIN, &c->budget_s, error) ||
        !collective_kind(c->op_name, &c->kind, error) ||
        !collective_size(c->bytes != NULL ? "--bytes" : "--min-bytes", lo, &c->lo, error) ||
        !collective_size(c->bytes != NULL ? "--bytes" : "--max-bytes", hi, &c->hi, error) ||
        !simpar_backend_lookup(c->backend_name != NULL ? c->backend_name : "simgrid", &c->backend,
                               error) ||
        !collective_mode(c, error) ||
        !simpar_coll_algo_lookup(c->algo_name != NULL ? c->algo_name : "auto", &c->run.algo,
                                 error) ||
        !simpar_nccl_proto_parse(c->proto_name != NULL ? c->proto_name : "auto", &c->run.coll.proto,
                                 error))
        return FALSE;
    /* whole fp32 elements; --bytes of a kind that splits S over the members: whole elements
     * per member (as nccl-tests counts them; a range's sizes are rounded so, and printed) */
    gboolean per_member = c->kind == SIMPAR_COLL_ALL_GATHER ||
                          c->kind == SIMPAR_COLL_REDUCE_SCATTER ||
                          c->kind == SIMPAR_COLL_ALL_TO_ALL;
    if (c->bytes != NULL)
        return collective_whole("--bytes", lo, c->lo, per_member ? (guint) c->gpus : 1, error);
    if (!collective_whole("--min-bytes", lo, c->lo, 1, error) ||
        !collective_whole("--max-bytes", hi, c->hi, 1, error))
        return FALSE;
    if (c->lo > c->hi) {
        g_set_error(error, SIMPAR_CLI_ERROR, SIMPAR_CLI_ERROR_USAGE,
                    "--min-bytes %s is larger than --max-bytes %s", lo, hi);
        return FALSE;
    }
    if (c->run.algo != NULL && (c->run.algo->kinds & (1u << c->kind)) == 0) {
        g_set_error(error, SIMPAR_CLI_ERROR, SIMPAR_CLI_ERROR_USAGE,
                    "--algo %s does not implement %s (see simpar collective --help)",
                    c->run.algo->name, c->op_name);
        return FALSE;
    }
    return TRUE;
}

/* One collective per GPU, in one group of n, as a schedule; *actual gets the size S it moves
 * (bytes rounded to whole fp32 elements per member). */
static SimparSchedule *
collective_schedule(SimparCollKind kind, guint n, double bytes, double *actual)
{
    gboolean per_member = kind == SIMPAR_COLL_ALL_GATHER || kind == SIMPAR_COLL_REDUCE_SCATTER ||
                          kind == SIMPAR_COLL_ALL_TO_ALL;
    gsize count = MAX(1, (gsize) (bytes / 4 / (per_member ? n : 1)));
    *actual = (double) count * 4 * (per_member ? n : 1);
    SimparSchedule *s = simpar_schedule_new(n, SIMPAR_DTYPE_FP32);
    g_autofree guint *ranks = g_new(guint, n);
    for (guint i = 0; i < n; i++)
        ranks[i] = i;
    guint g = simpar_schedule_add_group(s, "coll", ranks, n);
    for (guint r = 0; r < n; r++) {
        gsize elems = count * (per_member ? n : 1);
        SimparOp op = {.kind = SIMPAR_OP_COLLECTIVE, .rank = r, .name = collective_ops[kind]};
        op.u.coll = (SimparColl){kind,
                                 g,
                                 count,
                                 0,
                                 {simpar_schedule_add_buffer(s, r, "send", elems), 0},
                                 {simpar_schedule_add_buffer(s, r, "recv", elems), 0},
                                 SIMPAR_RED_SUM};
        simpar_schedule_add_op(s, &op);
    }
    return s; /* (transfer full) */
}

typedef struct {
    double bytes, count, time_s, algbw, busbw;
    const char *algo, *proto;
} CollectiveRow;

double
simpar_collective_time(const SimparPlatform *platform, const SimparBackend *backend,
                       const SimparRun *base, SimparCollKind kind, guint n, double size,
                       SimparCollResult *out)
{
    g_autoptr(SimparSchedule) s = collective_schedule(kind, n, size, &out->bytes);
    const SimparOp *op = simpar_schedule_op(s, 0);
    out->count = (double) op->u.coll.count;
    g_autofree guint *gpus = g_new(guint, n);
    for (guint i = 0; i < n; i++)
        gpus[i] = i;
    g_autofree double *compute = g_new0(double, simpar_schedule_n_ops(s));
    SimparRun run = *base;
    run.sched = s, run.n_layers = 1, run.gpus = gpus;
    run.net = simpar_platform_net(platform), run.compute_s = compute;
    g_autofree SimparSpan *spans = g_new(SimparSpan, simpar_schedule_n_ops(s));
    backend->run(&run, spans);
    double time_s = 0;
    for (guint i = 0; i < n; i++)
        time_s = MAX(time_s, spans[i].end);
    SimparCollGroup group = {n, gpus, run.net};
    const SimparCollAlgo *algo = run.algo != NULL
                                     ? simpar_coll_runs_as(run.algo, &group)
                                     : simpar_coll_choose(kind, &group, out->bytes, &run.coll);
    out->algo = algo->name;
    out->proto =
        simpar_nccl_proto_name(simpar_coll_proto(algo, kind, &group, out->bytes, 0, &run.coll));
    return time_s;
}

/* FALSE with an error when the sizes' expansions, where they are built and played (played, or
 * exact with an algorithm whose row has no idle evaluator: exact evaluates a lone ring with its
 * own), would need more memory than a run may take, or SimGrid longer than --time-budget: the
 * number, before any is built (a played all-reduce on 4,096 GPUs asked for 8 GiB, an all-to-all
 * ran for hours). */
static gboolean
collective_affordable(const Collective *c, const SimparPlatform *platform, GError **error)
{
    g_autofree guint *gpus = g_new(guint, c->gpus);
    for (guint i = 0; i < (guint) c->gpus; i++)
        gpus[i] = i;
    SimparCollGroup g = {(guint) c->gpus, gpus, simpar_platform_net(platform)};
    double most = 0, sends = 0, n = (double) c->gpus;
    for (double size = c->lo; size <= c->hi; size *= 2) {
        double bytes = size; /* as collective_schedule rounds it */
        const SimparCollAlgo *algo = c->run.algo != NULL
                                         ? simpar_coll_runs_as(c->run.algo, &g)
                                         : simpar_coll_choose(c->kind, &g, bytes, &c->run.coll);
        gboolean played =
            c->run.play_all || (c->run.mode == SIMPAR_COLL_MODE_EXACT && algo->eval_idle == NULL);
        if (!played)
            continue;
        double x = simpar_coll_xfers_bound(algo, c->kind, &g, bytes, &c->run.coll);
        most = MAX(most, x), sends += x / 2;
    }
    const SimparBackend *b = c->backend;
    double need = most * COLLECTIVE_XFER_B, cap = simpar_predict_memory_cap();
    double cost =
        sends * (b->activity_base_s + b->activity_per_gpu_s * n) * b->activity_exact_factor;
    if (need > cap) {
        g_set_error(error, SIMPAR_CLI_ERROR, SIMPAR_CLI_ERROR_USAGE,
                    "--op %s on --gpus %" G_GINT64_FORMAT ": its played expansion holds up to "
                    "%.3g transfers, about %.1f GiB of memory, more than the %.1f GiB simpar "
                    "allows here (3/4 of this machine's memory, at most %.0f GiB): "
                    "--collectives fused (one transfer per peer) or --backend analytic, or "
                    "fewer GPUs",
                    c->op_name, c->gpus, most, need / (1 << 30), cap / (1 << 30),
                    SIMPAR_PREDICT_MAX_MEMORY_B / (1 << 30));
        return FALSE;
    }
    if (cost > c->budget_s) {
        g_set_error(error, SIMPAR_CLI_ERROR, SIMPAR_CLI_ERROR_USAGE,
                    "--op %s on --gpus %" G_GINT64_FORMAT ": playing its %.3g transfers on "
                    "SimGrid would take about %.0f minutes, more than --time-budget %g minutes: "
                    "--collectives fused (one transfer per peer) or --backend analytic is fast; "
                    "or raise --time-budget",
                    c->op_name, c->gpus, sends, cost / 60, c->budget_s / 60);
        return FALSE;
    }
    return TRUE;
}

static void
collective_run_size(const Collective *c, const SimparPlatform *platform, guint n, double size,
                    CollectiveRow *row)
{
    SimparCollResult r;
    row->time_s = simpar_collective_time(platform, c->backend, &c->run, c->kind, n, size, &r);
    row->bytes = r.bytes, row->count = r.count, row->algo = r.algo, row->proto = r.proto;
    row->algbw = row->bytes / row->time_s / 1e9;
    row->busbw = row->algbw * simpar_coll_busbw_factor(c->kind, n);
}

/* Every JSON row says "format": "simpar-collective" and this "version" (docs/schemas/). */
#define COLLECTIVE_JSON_VERSION 1

/* A row's format, version and what ran: the operation on how many GPUs, its bytes and elements
 * (integers). */
static void
collective_json_head(JsonBuilder *b, const Collective *c, const CollectiveRow *row)
{
    simpar_json_head(b, "simpar-collective", COLLECTIVE_JSON_VERSION);
    json_builder_set_member_name(b, "op");
    json_builder_add_string_value(b, c->op_name);
    json_builder_set_member_name(b, "gpus");
    json_builder_add_int_value(b, c->gpus);
    json_builder_set_member_name(b, "bytes");
    json_builder_add_int_value(b, (gint64) llround(row->bytes));
    json_builder_set_member_name(b, "count");
    json_builder_add_int_value(b, (gint64) llround(row->count));
}

static void
collective_json(GString *out, const Collective *c, const CollectiveRow *rows, guint n)
{
    g_autoptr(JsonBuilder) b = json_builder_new();
    json_builder_begin_array(b);
    for (guint i = 0; i < n; i++) {
        json_builder_begin_object(b);
        collective_json_head(b, c, &rows[i]);

        const struct {
            const char *key;
            double v;
        } f[] = {{"time_s", rows[i].time_s},
                 {"algbw_GBps", rows[i].algbw},
                 {"busbw_GBps", rows[i].busbw}};

        for (guint k = 0; k < G_N_ELEMENTS(f); k++) {
            json_builder_set_member_name(b, f[k].key);
            json_builder_add_double_value(b, f[k].v);
        }
        json_builder_set_member_name(b, "algo");
        json_builder_add_string_value(b, rows[i].algo);
        json_builder_set_member_name(b, "proto");
        json_builder_add_string_value(b, rows[i].proto);
        json_builder_end_object(b);
    }
    json_builder_end_array(b);
    g_autofree char *text = simpar_json_builder_text(b, NULL);
    g_string_append_printf(out, "%s\n", text);
}

/* The rows as nccl-tests prints them, so that a log and a prediction can be diffed, plotted by
 * the same scripts and read by `simpar calibrate --nccl-tests`: the test's banner, one rank line
 * per GPU (host node<N> of the platform), the table with the in-place columns equal to the
 * out-of-place ones (a simulation has no in-place difference) and #wrong N/A (nothing checked),
 * and the average bus bandwidth. */
static gboolean
collective_nccl_tests(const Collective *c, const SimparPlatform *platform, GArray *rows,
                      GString *out, GError **error)
{
    const SimparNet *net = simpar_platform_net(platform);
    g_string_append_printf(out,
                           "# Collective test starting: %s\n# nThread 1 nGpus 1 minBytes %.0f "
                           "maxBytes %.0f step: 2(factor) warmup iters: 0 iters: 1 agg iters: 1 "
                           "validation: 0 graph: 0\n#\n# simpar %s: %s, backend %s, not measured\n"
                           "#\n# Using devices\n",
                           collective_nccl[c->kind].test, c->lo, c->hi, SIMPAR_VERSION, c->topology,
                           c->backend->name);
    for (guint r = 0; r < (guint) c->gpus; r++) {
        SimparGpu gpu;
        if (!simpar_platform_gpu(platform, r, &gpu, error))
            return FALSE;
        g_string_append_printf(out, "#  Rank %2u Group  0 Pid %6u on node%u device %2u [0x00] %s\n",
                               r, 0u, simpar_net_node(net, r), r, gpu.model);
    }
    g_string_append_printf(out,
                           "#\n#%76s%33s\n#%11s %13s %9s %7s %7s %8s %7s %7s %7s %8s %7s %7s %7s\n"
                           "#%11s %13s %34s %7s %7s %16s %7s %7s\n",
                           "out-of-place", "in-place", "size", "count", "type", "redop", "root",
                           "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong",
                           "(B)", "(elements)", "(us)", "(GB/s)", "(GB/s)", "(us)", "(GB/s)",
                           "(GB/s)");
    double sum = 0;
    for (guint i = 0; i < rows->len; i++) {
        const CollectiveRow *r = &g_array_index(rows, CollectiveRow, i);
        double us = r->time_s * 1e6;
        char t[32]; /* 2 decimals below 100 us, 1 below 10 ms, none above, as nccl-tests */
        g_snprintf(t, sizeof t, us < 100 ? "%.2f" : us < 10000 ? "%.1f" : "%.0f", us);
        g_string_append_printf(out,
                               "%12.0f  %12.0f  %8s  %6s  %6d  %7s  %6.2f  %6.2f  %6s  %7s  "
                               "%6.2f  %6.2f  %6s\n",
                               r->bytes, r->count, "float", collective_nccl[c->kind].redop,
                               collective_nccl[c->kind].root, t, r->algbw, r->busbw, "N/A", t,
                               r->algbw, r->busbw, "N/A");
        sum += r->busbw;
    }
    g_string_append_printf(out,
                           "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : %g \n#\n"
                           "# Collective test concluded: %s\n",
                           rows->len > 0 ? sum / rows->len : 0.0, collective_nccl[c->kind].test);
    return TRUE;
}

static gboolean
collective_job(const SimparPlatform *platform, gpointer data, GString *out, GError **error)
{
    Collective *c = data;
    guint have = simpar_platform_n_gpus(platform);
    if (c->gpus > have) {
        g_set_error(error, SIMPAR_CLI_ERROR, SIMPAR_CLI_ERROR_USAGE,
                    "--gpus %" G_GINT64_FORMAT ": %s has only %u GPUs", c->gpus, c->topology, have);
        return FALSE;
    }
    SimparGpu keys; /* the file's keys checked as simpar predict checks them */
    simpar_gpu_init(&keys);
    if (c->calibration != NULL &&
        (!simpar_gpu_load_calibration(&keys, c->calibration, error) ||
         !simpar_platform_calibrate_links(platform, c->calibration, error)))
        return FALSE;
    if (!collective_affordable(c, platform, error))
        return FALSE;
    g_autoptr(GArray) rows = g_array_new(FALSE, FALSE, sizeof(CollectiveRow));
    for (double size = c->lo; size <= c->hi; size *= 2) {
        CollectiveRow row;
        collective_run_size(c, platform, (guint) c->gpus, size, &row);
        g_array_append_val(rows, row);
    }
    if (c->json) {
        collective_json(out, c, (const CollectiveRow *) rows->data, rows->len);
        return TRUE;
    }
    if (c->nccl_tests)
        return collective_nccl_tests(c, platform, rows, out, error);
    g_string_append_printf(out,
                           "# %s on %" G_GINT64_FORMAT " GPUs of %s, backend %s (%s), "
                           "nccl-tests definitions\n#%13s %12s %12s %12s %12s  %s\n",
                           c->op_name, c->gpus, c->topology, c->backend->name,
                           c->run.play_all                         ? "played"
                           : c->run.mode == SIMPAR_COLL_MODE_EXACT ? "exact"
                                                                   : "fused",
                           "size (B)", "count", "time (us)", "algbw (GB/s)", "busbw (GB/s)",
                           "algorithm/protocol");
    for (guint i = 0; i < rows->len; i++) {
        const CollectiveRow *r = &g_array_index(rows, CollectiveRow, i);
        g_string_append_printf(out, "%14.0f %12.0f %12.2f %12.3f %12.3f  %s/%s\n", r->bytes,
                               r->count, r->time_s * 1e6, r->algbw, r->busbw, r->algo, r->proto);
    }
    return TRUE;
}

gboolean
simpar_cmd_collective(int argc, char **argv, GError **error)
{
    Collective c = {.gpus = G_MININT64};
    g_autofree char *algo = g_strdup_printf(
        "auto (default; NCCL-like), %s (nvls: NVLink SHARP where the node has it, else the ring)",
        simpar_coll_algo_names());
    const char *algo_help = g_intern_string(algo); /* the option context keeps no copy */
    const GOptionEntry entries[] = {
        {"topology", 't', 0, G_OPTION_ARG_FILENAME, &c.topology, "SimGrid platform file", "FILE"},
        {"op", 0, 0, G_OPTION_ARG_STRING, &c.op_name,
         "allreduce, allgather, reducescatter, broadcast, reduce or alltoall", "OP"},
        {"gpus", 0, 0, G_OPTION_ARG_INT64, &c.gpus, "Group size: the first N GPUs", "N"},
        {"algo", 0, 0, G_OPTION_ARG_STRING, &c.algo_name, algo_help, "ALGO"},
        {"bytes", 0, 0, G_OPTION_ARG_STRING, &c.bytes, "One size S (nccl-tests), e.g. 64M", "SIZE"},
        {"min-bytes", 0, 0, G_OPTION_ARG_STRING, &c.min_bytes, "Smallest size (default 8)", "A"},
        {"max-bytes", 0, 0, G_OPTION_ARG_STRING, &c.max_bytes,
         "Largest size (default 1G); sizes double from A", "B"},
        {"backend", 0, 0, G_OPTION_ARG_STRING, &c.backend_name, "simgrid (default) or analytic",
         "B"},
        {"collectives", 0, 0, G_OPTION_ARG_STRING, &c.coll_mode_name,
         "exact (default; a lone ring on links it cannot saturate is evaluated, not played), "
         "played (exact, every round on SimGrid) or fused",
         "MODE"},
        {"nccl-proto", 0, 0, G_OPTION_ARG_STRING, &c.proto_name,
         "NCCL protocol: auto (default; the fastest per size, as NCCL's tuner picks), ll, "
         "ll128, simple (its latencies and wire efficiency), none (the network alone)",
         "P"},
        {"calibration", 0, 0, G_OPTION_ARG_FILENAME, &c.calibration,
         "Calibration file whose link figures replace the platform's (simpar calibrate)",
         "CALIB.json"},
        {"time-budget", 0, 0, G_OPTION_ARG_STRING, &c.time_budget,
         "Refuse collectives whose played rounds SimGrid is estimated to take longer than this "
         "(default 10)",
         "MINUTES"},
        {"json", 0, 0, G_OPTION_ARG_NONE, &c.json,
         "Print a JSON list: bytes, count, time_s, algbw_GBps, busbw_GBps, algo, proto", NULL},
        {"format", 0, 0, G_OPTION_ARG_STRING, &c.format,
         "table (default), json (as --json) or nccl-tests (the layout of nccl-tests' *_perf "
         "output, which simpar calibrate --nccl-tests reads)",
         "F"},
        G_OPTION_ENTRY_NULL,
    };
    g_autoptr(GOptionContext) ctx = g_option_context_new("- one collective's time and bandwidth");
    g_option_context_set_summary(ctx, "time, algbw = S/t and busbw = algbw * factor (all-reduce "
                                      "2(n-1)/n; all-gather, reduce-scatter, all-to-all (n-1)/n; "
                                      "broadcast, reduce 1) per size, as nccl-tests reports them.");
    g_option_context_add_main_entries(ctx, entries, NULL);
    g_autoptr(GString) out = g_string_new(NULL);
    gboolean ok = simpar_cli_parse(ctx, "simpar collective", &argc, &argv, error) &&
                  collective_resolve(&c, error) &&
                  simpar_platform_run(c.topology, collective_job, &c, out, error);
    if (ok)
        fputs(out->str, stdout);
    g_free(c.topology), g_free(c.op_name), g_free(c.algo_name), g_free(c.backend_name);
    g_free(c.coll_mode_name), g_free(c.proto_name), g_free(c.bytes), g_free(c.min_bytes);
    g_free(c.max_bytes), g_free(c.calibration), g_free(c.format), g_free(c.time_budget);
    return ok;
}
