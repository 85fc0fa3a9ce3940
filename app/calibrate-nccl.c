/* calibrate-nccl.c - `simpar calibrate --nccl-tests LOG... --topology FILE -o CALIB.json`: the
 * platform's network figures fitted to the plain output of nccl-tests.
 *
 * A log is what all_reduce_perf, all_gather_perf, reduce_scatter_perf, alltoall_perf,
 * broadcast_perf, reduce_perf or sendrecv_perf print (NVIDIA/nccl-tests src/common.cu): the test
 * from "# Collective test starting: NAME" (or, for older versions, from the file's name), the
 * ranks and their hosts from the "#  Rank  R Group G Pid P on HOST device D ..." lines, and one
 * row per size whose out-of-place time is the eighth field from the end:
 *
 *   #       size   count  type  redop  root   time  algbw  busbw #wrong   time  algbw  busbw #wrong
 *       1048576  262144  float    sum    -1  15.64  67.04 117.32      0  15.32  68.45 119.79      0
 *
 * Lines that are none of these (MPI warnings, NCCL's banner) are skipped. The log's ranks are
 * the first R GPUs of the platform, which must put them on as many nodes as the log's hosts.
 *
 * The model of a row is what `simpar collective --backend analytic` prints: the closed form of
 * simpar's default algorithm and protocol for that size (sendrecv: each rank sends S to the
 * next, one transfer per rank, at its route's lat + S / bw). The fit sets the figures a
 * calibration file carries (simpar_platform_set_net_figures): intra_node bandwidth and latency
 * where some node holds two ranks, inter_node ones where a log spans nodes, and nvls_latency_s
 * where an all-reduce runs on one node with NVLink SHARP. It minimises the sum over rows of
 * 64 KiB and up of (measured time / model time - 1)^2, the relative error of busbw, on the
 * logarithms of the figures: Nelder-Mead (GSL's nmsimplex2), then coordinate descent: per
 * figure a scan over a factor of 16 either way (4 points per octave) and GSL's golden-section
 * search around the best point, sweeps
 * repeated (at most 8) until a sweep gains less than a millionth of the cost. Deterministic: same
 * logs, same figures.
 */
#include "calibrate-private.h"
#include "cli.h"
#include "measured.h"
#include "nccl-log.h"
#include "platform.h"
#include <math.h>
#include <stdio.h>
#include <string.h>

#define NCCL_MIN_BYTES   65536.0     /* rows below this are printed, not fitted */
#define NCCL_MAX_LOG     (64u << 20) /* bytes read of a log */
#define NCCL_FIT_SWEEPS  8
#define NCCL_FIT_OCTAVES 4 /* the scan: a factor 2^4 either way */
#define NCCL_FIT_STEPS   4 /* points per octave */

gboolean
simpar_calibration_figure_check(const char *key, double v, GError **error)
{
    g_autofree char *range = NULL;
    if (simpar_gpu_figure_valid(key, v, &range) &&
        simpar_platform_link_figure_valid(key, v, &range))
        return TRUE;
    g_set_error(error, SIMPAR_COMPUTE_ERROR, SIMPAR_COMPUTE_ERROR_INVALID,
                "simpar calibrate: the fit gives %s = %g, which no calibration file may hold "
                "(%s): the measurements do not fit simpar's model; nothing was written",
                key, v, range);
    return FALSE;
}

static const struct {
    const char *test;
    guint kind;
} nccl_tests[] = {
    {"all_reduce_perf", SIMPAR_COLL_ALL_REDUCE},
    {"all_gather_perf", SIMPAR_COLL_ALL_GATHER},
    {"reduce_scatter_perf", SIMPAR_COLL_REDUCE_SCATTER},
    {"alltoall_perf", SIMPAR_COLL_ALL_TO_ALL},
    {"broadcast_perf", SIMPAR_COLL_BROADCAST},
    {"reduce_perf", SIMPAR_COLL_REDUCE},
    {"sendrecv_perf", SIMPAR_NCCL_SENDRECV},
};

static const char nccl_valid_tests[] = "all_reduce_perf, all_gather_perf, reduce_scatter_perf, "
                                       "alltoall_perf, broadcast_perf, reduce_perf, sendrecv_perf";

void
simpar_nccl_log_clear(SimparNcclLog *log)
{
    g_free(log->path);
    if (log->rows != NULL)
        g_array_unref(log->rows);
}

/* The test named `name` exactly (or, with `in_name`, the longest one `name` contains). */
static gboolean
nccl_test_find(const char *name, gboolean in_name, SimparNcclLog *log)
{
    gsize best = 0;
    for (guint i = 0; i < G_N_ELEMENTS(nccl_tests); i++) {
        gsize len = strlen(nccl_tests[i].test);
        gboolean hit = in_name ? strstr(name, nccl_tests[i].test) != NULL
                               : g_str_equal(name, nccl_tests[i].test);
        if (hit && len > best)
            best = len, log->test = nccl_tests[i].test, log->kind = nccl_tests[i].kind;
    }
    return best > 0;
}

static gboolean
nccl_number(const char *text, double *out)
{
    char *end = NULL;
    *out = g_ascii_strtod(text, &end);
    return end != text && *end == '\0' && isfinite(*out);
}

static gboolean
nccl_count(const char *text, guint64 *out)
{
    char *end = NULL;
    if (!g_ascii_isdigit(*text))
        return FALSE;
    *out = g_ascii_strtoull(text, &end, 10);
    return *end == '\0';
}

/* A data row: size, count, a type name, ..., the out-of-place time, algbw, busbw and #wrong,
 * then the in-place four. FALSE for any other line; an error for a row that is not consistent. */
static gboolean
nccl_row(const SimparNcclLog *log, guint line, char **tok, guint n, SimparNcclRow *row,
         GError **error)
{
    guint64 size, count;
    if (n < 11 || !nccl_count(tok[0], &size) || !nccl_count(tok[1], &count) ||
        !g_ascii_isalpha(tok[2][0]))
        return FALSE;
    double time_us, algbw, busbw;
    if (!nccl_number(tok[n - 8], &time_us) || !nccl_number(tok[n - 7], &algbw) ||
        !nccl_number(tok[n - 6], &busbw) || !(time_us > 0) || size == 0 || size > (1ull << 40) ||
        (algbw >= 0.1 && fabs(size / time_us / 1e3 - algbw) > 0.02 * algbw + 0.01)) {
        g_set_error(error, SIMPAR_MEASURED_ERROR, SIMPAR_MEASURED_ERROR_PARSE,
                    "--nccl-tests %s: line %u is not a row of nccl-tests' table (size, count, "
                    "type, ..., then time in us, algbw and busbw in GB/s, #wrong, out of place "
                    "and in place; time and algbw must agree)",
                    log->path, line);
        return FALSE;
    }
    for (guint k = n - 5; k < n; k += 4) { /* #wrong, out of place and in place */
        guint64 wrong = 0;
        if (!g_str_equal(tok[k], "N/A") && (!nccl_count(tok[k], &wrong) || wrong > 0)) {
            g_set_error(error, SIMPAR_MEASURED_ERROR, SIMPAR_MEASURED_ERROR_PARSE,
                        "--nccl-tests %s: line %u reports #wrong %s: the collective gave wrong "
                        "results, so its times are no measurement of it (valid: 0, or N/A "
                        "without checks); rerun nccl-tests",
                        log->path, line, tok[k]);
            return FALSE;
        }
    }
    *row = (SimparNcclRow){(double) size, time_us * 1e-6, busbw};
    return TRUE;
}

/* "#  Rank  3 Group  0 Pid  1234 on host-a device  3 [0x1b] NVIDIA H100": the rank's host. */
static const char *
nccl_rank_host(char **tok, guint n)
{
    if (n < 3 || !g_str_equal(tok[0], "#") || !g_str_equal(tok[1], "Rank"))
        return NULL;
    for (guint i = 2; i + 1 < n; i++)
        if (g_str_equal(tok[i], "on"))
            return tok[i + 1];
    return NULL;
}

static gboolean
nccl_log_line(SimparNcclLog *log, guint line, const char *text, GHashTable *hosts,
              GHashTable *ranks, GError **error)
{
    const char *start = strstr(text, "Collective test starting:");
    if (text[0] == '#' && start != NULL) {
        g_autofree char *name = g_strstrip(g_strdup(start + strlen("Collective test starting:")));
        const char *had = log->test;
        if (!nccl_test_find(name, FALSE, log)) {
            g_set_error(error, SIMPAR_MEASURED_ERROR, SIMPAR_MEASURED_ERROR_PARSE,
                        "--nccl-tests %s: line %u names the test \"%.64s\" (valid: %s)", log->path,
                        line, name, nccl_valid_tests);
            return FALSE;
        }
        if (had != NULL && had != log->test) {
            g_set_error(error, SIMPAR_MEASURED_ERROR, SIMPAR_MEASURED_ERROR_PARSE,
                        "--nccl-tests %s: line %u starts %s after %s; give one test per file",
                        log->path, line, log->test, had);
            return FALSE;
        }
        return TRUE;
    }
    g_auto(GStrv) tok = g_strsplit_set(text, " \t\r", -1);
    guint n = 0;
    for (guint i = 0; tok[i] != NULL; i++) /* drop the empty fields */
        if (tok[i][0] != '\0')
            tok[n++] = tok[i];
        else
            g_free(tok[i]);
    tok[n] = NULL;
    const char *host = nccl_rank_host(tok, n);
    guint64 rank;
    if (host != NULL && nccl_count(tok[2], &rank)) { /* a rank listed twice counts once */
        g_hash_table_add(ranks, g_strdup_printf("%" G_GUINT64_FORMAT, rank));
        g_hash_table_add(hosts, g_strdup(host));
        return TRUE;
    }
    SimparNcclRow row;
    GError *bad = NULL;
    if (text[0] != '#' && nccl_row(log, line, tok, n, &row, &bad))
        g_array_append_val(log->rows, row);
    if (bad != NULL) {
        g_propagate_error(error, bad);
        return FALSE;
    }
    return TRUE;
}

gboolean
simpar_nccl_log_read(const char *path, SimparNcclLog *log, GError **error)
{
    *log = (SimparNcclLog){
        g_strdup(path), NULL, 0, 0, 0, g_array_new(FALSE, FALSE, sizeof(SimparNcclRow))};
    g_autofree char *text = NULL;
    gsize len = 0;
    if (!simpar_file_read(path, NCCL_MAX_LOG, &text, &len, error)) {
        g_prefix_error(error, "--nccl-tests ");
        return FALSE;
    }
    if (len > NCCL_MAX_LOG || memchr(text, '\0', len) != NULL) {
        g_set_error(error, SIMPAR_MEASURED_ERROR, SIMPAR_MEASURED_ERROR_PARSE,
                    "--nccl-tests %s: not the text output of nccl-tests (%s)", path,
                    len > NCCL_MAX_LOG ? "over 64 MiB" : "it holds NUL bytes");
        return FALSE;
    }
    g_autoptr(GHashTable) hosts = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    g_autoptr(GHashTable) ranks = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
    for (guint i = 0; lines[i] != NULL; i++)
        if (!nccl_log_line(log, i + 1, lines[i], hosts, ranks, error))
            return FALSE;
    log->ranks = g_hash_table_size(ranks);
    g_autofree char *base = g_path_get_basename(path);
    if (log->test == NULL && !nccl_test_find(base, TRUE, log)) {
        g_set_error(error, SIMPAR_MEASURED_ERROR, SIMPAR_MEASURED_ERROR_PARSE,
                    "--nccl-tests %s: no \"# Collective test starting: NAME\" line, and the file's "
                    "name holds no test name (valid: %s)",
                    path, nccl_valid_tests);
        return FALSE;
    }
    log->nodes = g_hash_table_size(hosts);
    const char *missing = log->ranks < 2        ? "two \"#  Rank R ... on HOST\" lines or more"
                          : log->rows->len == 0 ? "a table row (size, count, type, ..., time)"
                                                : NULL;
    if (missing != NULL) {
        g_set_error(error, SIMPAR_MEASURED_ERROR, SIMPAR_MEASURED_ERROR_PARSE,
                    "--nccl-tests %s: it lacks %s; give the whole output of a run on two GPUs or "
                    "more",
                    path, missing);
        return FALSE;
    }
    return TRUE;
}

/* ---------------------------------------------------------------------------------- the fit */

enum {
    F_INTRA_BW,
    F_INTRA_LAT,
    F_INTER_BW,
    F_INTER_LAT,
    F_NVLS_LAT,
    N_F
};

static const char *const nccl_figure_keys[N_F] = {
    "intra_node_bandwidth_Bps", "intra_node_latency_s", "inter_node_bandwidth_Bps",
    "inter_node_latency_s",     "nvls_latency_s",
};

typedef struct {
    char **paths;
    const char *topology, *output;
    SimparNcclLog *logs;
    guint n_logs;
    gboolean free[N_F];
    double base[N_F], fit[N_F];
    double rms_before, rms, max_err;
    guint points;
} NcclFit;

static void
nccl_apply(const SimparPlatform *p, const double *v)
{
    SimparNetFigures f = {v[F_INTRA_BW], v[F_INTRA_LAT], v[F_INTER_BW], v[F_INTER_LAT], 0,
                          v[F_NVLS_LAT]};
    simpar_platform_set_net_figures(p, &f);
}

/* The model's time of one row of `log`, and what ran: what simpar collective --backend
 * analytic prints (sendrecv: each rank's transfer to the next on its route). */
static double
nccl_model(const SimparPlatform *p, const SimparNcclLog *log, double bytes, const char **algo,
           const char **proto)
{
    const SimparNet *net = simpar_platform_net(p);
    if (log->kind == SIMPAR_NCCL_SENDRECV) {
        double t = 0;
        for (guint i = 0; i < log->ranks; i++) {
            SimparRoute r;
            simpar_net_route(net, i, (i + 1) % log->ranks, &r);
            t = MAX(t, r.lat_s + bytes / r.bw_Bps);
        }
        *algo = "p2p", *proto = "none";
        return t;
    }
    const SimparBackend *analytic = NULL;
    gboolean found = simpar_backend_lookup("analytic", &analytic, NULL);
    g_assert(found);
    SimparRun run = {0};
    simpar_coll_params_init(&run.coll);
    run.coll.proto = SIMPAR_PROTO_AUTO;
    run.mode = SIMPAR_COLL_MODE_EXACT;
    SimparCollResult r;
    double t = simpar_collective_time(p, analytic, &run, log->kind, log->ranks, bytes, &r);
    *algo = r.algo, *proto = r.proto;
    return t;
}

/* Sum of squared relative errors of the fitted rows at figures `v` (and the largest one). */
static double
nccl_cost(const SimparPlatform *p, NcclFit *f, const double *v, double *max_err)
{
    nccl_apply(p, v);
    double sum = 0, worst = 0;
    guint points = 0;
    for (guint l = 0; l < f->n_logs; l++)
        for (guint i = 0; i < f->logs[l].rows->len; i++) {
            const SimparNcclRow *r = &g_array_index(f->logs[l].rows, SimparNcclRow, i);
            if (r->bytes < NCCL_MIN_BYTES)
                continue;
            const char *algo, *proto;
            double e = r->time_s / nccl_model(p, &f->logs[l], r->bytes, &algo, &proto) - 1;
            sum += e * e, worst = MAX(worst, fabs(e)), points++;
        }
    if (max_err != NULL)
        *max_err = worst;
    f->points = points;
    return sum;
}

/* The cost with figure j at at x 2^(k / NCCL_FIT_STEPS) (for GSL's minimiser). */
typedef struct {
    const SimparPlatform *p;
    NcclFit *f;
    double *v, at;
    guint j;
} NcclFigure;

static double
nccl_figure_cost(double k, void *data)
{
    NcclFigure *fc = data;
    fc->v[fc->j] = fc->at * exp2(k / NCCL_FIT_STEPS);
    return nccl_cost(fc->p, fc->f, fc->v, NULL);
}

/* Figure j over log2 factors of its current value: the best of a scan, then GSL's
 * golden-section search within a scan step of it (to 1e-4 of a step). */
static double
nccl_fit_figure(const SimparPlatform *p, NcclFit *f, double *v, guint j, double cost)
{
    double at = v[j], best_k = 0;
    for (int k = -NCCL_FIT_STEPS * NCCL_FIT_OCTAVES; k <= NCCL_FIT_STEPS * NCCL_FIT_OCTAVES; k++) {
        v[j] = at * exp2(k / (double) NCCL_FIT_STEPS);
        double c = nccl_cost(p, f, v, NULL);
        if (c < cost)
            cost = c, best_k = k;
    }
    NcclFigure fc = {p, f, v, at, j};
    double lo = best_k - 1, hi = best_k + 1, k = best_k;
    if (simpar_calibrate_golden(nccl_figure_cost, &fc, &lo, &k, &hi, 1e-4, 100)) {
        double c = nccl_figure_cost(k, &fc);
        if (c < cost)
            cost = c, best_k = k;
    }
    v[j] = at * exp2(best_k / (double) NCCL_FIT_STEPS);
    return cost;
}

/* The cost with the free figures (`idx`, k of them) at base x 2^x. */
static double
nccl_cost_x(const SimparPlatform *p, NcclFit *f, const guint *idx, guint k, const double *x)
{
    double v[N_F];
    memcpy(v, f->base, sizeof v);
    for (guint i = 0; i < k; i++)
        v[idx[i]] = f->base[idx[i]] * exp2(x[i]);
    return nccl_cost(p, f, v, NULL);
}

typedef struct {
    const SimparPlatform *p;
    NcclFit *f;
    const guint *idx;
} NcclSimplex;

static double
nccl_simplex_cost(const double *x, guint k, void *data)
{
    const NcclSimplex *s = data;
    return nccl_cost_x(s->p, s->f, s->idx, k, x);
}

/* Nelder-Mead (GSL's nmsimplex2) on the log2 offsets x (k of them) from an octave-wide simplex:
 * the figures move together along the valleys where one makes up for another (an intra-node
 * bandwidth against an inter-node one); returns the cost. */
static double
nccl_nelder_mead(const SimparPlatform *p, NcclFit *f, const guint *idx, guint k, double *x)
{
    NcclSimplex s = {p, f, idx};
    return simpar_calibrate_simplex(nccl_simplex_cost, &s, k, x, 1, 1e-5, 200 * k);
}

static void
nccl_fit(const SimparPlatform *p, NcclFit *f)
{
    memcpy(f->fit, f->base, sizeof f->fit);
    double cost = nccl_cost(p, f, f->fit, NULL);
    f->rms_before = sqrt(cost / MAX(f->points, 1u));
    guint idx[N_F], k = 0;
    double x[N_F] = {0};
    for (guint j = 0; j < N_F; j++)
        if (f->free[j])
            idx[k++] = j;
    for (guint restart = 0; restart < NCCL_FIT_SWEEPS && k > 0; restart++) {
        double before = cost; /* Nelder-Mead again from where it stopped, until it stays */
        cost = MIN(cost, nccl_nelder_mead(p, f, idx, k, x));
        if (before - cost < 1e-6 * before)
            break;
    }
    for (guint i = 0; i < k; i++)
        f->fit[idx[i]] = f->base[idx[i]] * exp2(x[i]);
    cost = nccl_cost(p, f, f->fit, NULL);
    for (guint sweep = 0; sweep < NCCL_FIT_SWEEPS; sweep++) { /* then one figure at a time */
        double before = cost;
        for (guint j = 0; j < N_F; j++)
            if (f->free[j])
                cost = nccl_fit_figure(p, f, f->fit, j, cost);
        if (before - cost < 1e-6 * before)
            break;
    }
    cost = nccl_cost(p, f, f->fit, &f->max_err);
    f->rms = sqrt(cost / MAX(f->points, 1u));
}

/* The log's ranks are the platform's first GPUs: they must lie on as many nodes. */
static gboolean
nccl_check_log(const SimparPlatform *p, const NcclFit *f, const SimparNcclLog *log, GError **error)
{
    guint have = simpar_platform_n_gpus(p), nodes = 0;
    const SimparNet *net = simpar_platform_net(p);
    for (guint i = 0; i < log->ranks && i < have; i++)
        nodes += i == 0 || simpar_net_node(net, i) != simpar_net_node(net, i - 1);
    if (log->ranks > have || nodes != log->nodes) {
        g_set_error(error, SIMPAR_CLI_ERROR, SIMPAR_CLI_ERROR_USAGE,
                    "--nccl-tests %s: %u ranks on %u node%s, but the first %u GPUs of --topology "
                    "%s %s; give a platform with %u GPUs per node (simpar topology --preset NAME "
                    "--nodes %u)",
                    log->path, log->ranks, log->nodes, log->nodes == 1 ? "" : "s", log->ranks,
                    f->topology,
                    log->ranks > have ? "do not exist" : "lie on another number of nodes",
                    log->ranks / MAX(log->nodes, 1u), log->nodes);
        return FALSE;
    }
    return TRUE;
}

static void
nccl_print(const SimparPlatform *p, NcclFit *f, GString *out)
{
    g_string_append_printf(out, "%s -> %s\n\n%-26s %14s %14s\n", f->topology, f->output, "figure",
                           "platform", "fitted");
    for (guint j = 0; j < N_F; j++)
        if (f->free[j])
            g_string_append_printf(out, "%-26s %14.6g %14.6g\n", nccl_figure_keys[j], f->base[j],
                                   f->fit[j]);
    for (guint l = 0; l < f->n_logs; l++) {
        const SimparNcclLog *log = &f->logs[l];
        g_string_append_printf(out, "\n%s: %s, %u ranks on %u node%s\n%14s %12s %12s %9s  %s\n",
                               log->path, log->test, log->ranks, log->nodes,
                               log->nodes == 1 ? "" : "s", "size (B)", "busbw", "fitted", "error",
                               "algorithm/protocol");
        for (guint i = 0; i < log->rows->len; i++) {
            const SimparNcclRow *r = &g_array_index(log->rows, SimparNcclRow, i);
            const char *algo, *proto;
            double t = nccl_model(p, log, r->bytes, &algo, &proto);
            g_string_append_printf(out, "%14.0f %12.2f %12.2f %+8.1f%%  %s/%s%s\n", r->bytes,
                                   r->busbw, r->busbw * r->time_s / t, 100 * (r->time_s / t - 1),
                                   algo, proto, r->bytes < NCCL_MIN_BYTES ? " (not fitted)" : "");
        }
    }
    g_string_append_printf(out,
                           "\nbusbw error over %u rows of 64 KiB and up: rms %.2f%% (platform's "
                           "own figures %.2f%%), largest %.2f%%\n",
                           f->points, 100 * f->rms, 100 * f->rms_before, 100 * f->max_err);
}

void
simpar_calibration_json_head(JsonBuilder *b)
{
    simpar_json_head(b, "simpar-calibration", 1);
}

static gboolean
nccl_write(const NcclFit *f, GError **error)
{
    g_autoptr(JsonBuilder) b = json_builder_new();
    json_builder_begin_object(b);
    simpar_calibration_json_head(b);
    for (guint j = 0; j < N_F; j++)
        if (f->free[j]) {
            if (!simpar_calibration_figure_check(nccl_figure_keys[j], f->fit[j], error))
                return FALSE;
            json_builder_set_member_name(b, nccl_figure_keys[j]);
            json_builder_add_double_value(b, f->fit[j]);
        }
    json_builder_set_member_name(b, "source");
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "nccl_tests");
    json_builder_begin_array(b);
    for (guint l = 0; l < f->n_logs; l++)
        json_builder_add_string_value(b, f->logs[l].path);
    json_builder_end_array(b);
    json_builder_set_member_name(b, "topology");
    json_builder_add_string_value(b, f->topology);
    json_builder_end_object(b);
    json_builder_set_member_name(b, "fit");
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "nccl_tests");
    json_builder_begin_object(b);

    const struct {
        const char *key;
        double v;
    } m[] = {{"rms_rel_error", f->rms}, {"max_rel_error", f->max_err}};

    for (guint i = 0; i < G_N_ELEMENTS(m); i++) {
        json_builder_set_member_name(b, m[i].key);
        json_builder_add_double_value(b, m[i].v);
    }
    json_builder_set_member_name(b, "points");
    json_builder_add_int_value(b, f->points);
    json_builder_set_member_name(b, "method");
    json_builder_add_string_value(b,
                                  "least squares of the relative busbw error of simpar's default "
                                  "algorithm and protocol, rows of 64 KiB and up; Nelder-Mead, "
                                  "then one figure at a time, on the figures' logarithms");
    json_builder_end_object(b);
    json_builder_end_object(b);
    json_builder_end_object(b);
    return simpar_json_write_file(b, "-o", f->output, error);
}

static gboolean
nccl_job(const SimparPlatform *p, gpointer data, GString *out, GError **error)
{
    NcclFit *f = data;
    guint fitted = 0;
    for (guint l = 0; l < f->n_logs; l++) {
        if (!nccl_check_log(p, f, &f->logs[l], error))
            return FALSE;
        for (guint i = 0; i < f->logs[l].rows->len; i++)
            fitted += g_array_index(f->logs[l].rows, SimparNcclRow, i).bytes >= NCCL_MIN_BYTES;
    }
    if (fitted == 0) { /* a fit of no row would write the platform's figures as fitted ones */
        g_autofree char *names = g_strjoinv(", ", f->paths);
        g_set_error(error, SIMPAR_MEASURED_ERROR, SIMPAR_MEASURED_ERROR_PARSE,
                    "--nccl-tests %s: no row of %.0f bytes or more, so nothing to fit (smaller "
                    "sizes are latency alone); run nccl-tests up to 64 MiB or more (-e 64M)",
                    names, NCCL_MIN_BYTES);
        return FALSE;
    }
    SimparNetFigures base;
    simpar_platform_net_figures(p, &base);
    double v[N_F] = {base.intra_bw_Bps, base.intra_lat_s, base.inter_bw_Bps, base.inter_lat_s,
                     base.nvls_lat_s};
    for (guint j = 0; j < N_F; j++)
        f->base[j] = v[j];
    for (guint l = 0; l < f->n_logs; l++) {
        const SimparNcclLog *log = &f->logs[l];
        gboolean intra = log->ranks > log->nodes, inter = log->nodes > 1;
        f->free[F_INTRA_BW] |= intra, f->free[F_INTRA_LAT] |= intra;
        f->free[F_INTER_BW] |= inter, f->free[F_INTER_LAT] |= inter;
        f->free[F_NVLS_LAT] |= log->kind == SIMPAR_COLL_ALL_REDUCE && log->nodes == 1;
    }
    /* a tier the platform has; its latency starts at 1 ns at least (a log scale from 0) */
    f->free[F_INTRA_BW] &= v[F_INTRA_BW] > 0, f->free[F_INTRA_LAT] &= v[F_INTRA_BW] > 0;
    f->free[F_INTER_BW] &= v[F_INTER_BW] > 0, f->free[F_INTER_LAT] &= v[F_INTER_BW] > 0;
    f->free[F_NVLS_LAT] &= v[F_NVLS_LAT] > 0;
    f->base[F_INTRA_LAT] = MAX(f->base[F_INTRA_LAT], 1e-9);
    f->base[F_INTER_LAT] = MAX(f->base[F_INTER_LAT], 1e-9);
    nccl_fit(p, f);
    nccl_print(p, f, out);
    return nccl_write(f, error);
}

gboolean
simpar_calibrate_nccl_tests(char **logs, const char *topology, const char *output, GError **error)
{
    if (topology == NULL || output == NULL) {
        g_set_error(error, SIMPAR_CLI_ERROR, SIMPAR_CLI_ERROR_USAGE,
                    "simpar calibrate --nccl-tests LOG...: --topology FILE (the platform whose "
                    "figures are fitted) and -o CALIB.json are required");
        return FALSE;
    }
    NcclFit f = {.paths = logs, .topology = topology, .output = output};
    f.n_logs = g_strv_length(logs);
    f.logs = g_new0(SimparNcclLog, f.n_logs);
    gboolean ok = TRUE;
    for (guint l = 0; l < f.n_logs && ok; l++)
        ok = simpar_nccl_log_read(logs[l], &f.logs[l], error);
    g_autoptr(GString) out = g_string_new(NULL);
    ok = ok && simpar_platform_run(topology, nccl_job, &f, out, error);
    if (ok)
        fputs(out->str, stdout);
    for (guint l = 0; l < f.n_logs; l++)
        simpar_nccl_log_clear(&f.logs[l]);
    g_free(f.logs);
    return ok;
}
