/* cmd-calibrate.c - `simpar calibrate --measured BENCH.json -o CALIB.json`: the compute model's
 * figures (models/compute.c) and the intra-node links fitted to simpar-exec's microbenchmarks.
 *
 *   a GPU's bench  its measurements become the compute model's tables (calibrate-tables.c):
 *               the GEMMs as measured, a bandwidth per kernel class; no peak, no efficiency
 *               curve (a fit of those left physics on a real GPU: 1.8 PFLOP/s on an H200).
 *   the host's     (its "GPU" is a CPU core, whose peak and bandwidth only the bench can give)
 *               GEMM  t = launch_s + max(flops / (peak * g(m) g(n) g(k)), bytes / mem_bw),
 *                     g(x) = x / (x + half_dim); kernel t = launch_s + bytes / mem_bw;
 *               one fit of launch_s, 1 / mem_bw and 1 / peak for each half_dim, the GEMMs'
 *               roofline side re-chosen until it settles; half_dim on a log2 grid (1 .. 65536,
 *               8 points per octave), then golden section around the best point. The flops
 *               and bytes of a GEMM are compute.c's own (simpar_compute_gemm_time with unit
 *               figures), a kernel's are the bench's "bytes" (compute.c's count).
 *   links       t = c1 a + c2 / B, the closed form of the algorithm simpar would pick for the
 *               collective (sim/collectives, NCCL-like choice) on n GPUs joined by routes of
 *               latency a and bandwidth B, re-chosen until the choices settle. The bench's group
 *               stays inside one node: the fit gives the intra-node route (docs/validate.md).
 *
 * Every fit minimises the squared relative error, sum ((model_i - t_i) / t_i)^2, and is
 * deterministic: linear least squares with non-negative parameters (every subset of the free
 * parameters solved by GSL's SVD, the best feasible kept) inside a scan over what is not linear
 * (GSL's golden-section search; calibrate-gsl.c). Attention
 * kernels are left out: compute.c prices them as GEMMs plus memory passes, not as one
 * memory-bound kernel.
 */
#include "calibrate-private.h"
#include "cli.h"
#include "measured.h"
#include "platform.h"
#include "topology.h"
#include <gsl/gsl_errno.h>
#include <gsl/gsl_multifit.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#define FIT_K 3 /* at most three linear parameters */

/* --------------------------------------------------------------- least squares, x >= 0 */

/* The least-squares solution of the columns in `mask` (scaled to unit norm), by GSL's SVD
 * (gsl_multifit_linear); FALSE when they are not independent (numerical rank below their
 * count, relative tolerance 1e-13). */
static gboolean
fit_solve(const double *a, const double *y, guint n, guint mask, double *x)
{
    guint cols[FIT_K], k = 0;
    double scale[FIT_K];
    for (guint j = 0; j < FIT_K; j++)
        if (mask & (1u << j))
            cols[k++] = j;
    if (n < k)
        return FALSE;
    for (guint c = 0; c < k; c++) {
        double s = 0;
        for (guint i = 0; i < n; i++)
            s += a[i * FIT_K + cols[c]] * a[i * FIT_K + cols[c]];
        if (!(s > 0))
            return FALSE;
        scale[c] = 1 / sqrt(s);
    }
    gsl_matrix *m = gsl_matrix_alloc(n, k), *cov = gsl_matrix_alloc(k, k);
    gsl_vector *v = gsl_vector_alloc(n), *c = gsl_vector_alloc(k);
    gsl_multifit_linear_workspace *w = gsl_multifit_linear_alloc(n, k);
    for (guint i = 0; i < n; i++) {
        gsl_vector_set(v, i, y[i]);
        for (guint j = 0; j < k; j++)
            gsl_matrix_set(m, i, j, a[i * FIT_K + cols[j]] * scale[j]);
    }
    double chisq;
    gboolean ok = gsl_multifit_linear(m, v, c, cov, &chisq, w) == GSL_SUCCESS &&
                  gsl_multifit_linear_rank(1e-13, w) == k;
    for (guint j = 0; j < FIT_K; j++)
        x[j] = 0;
    for (guint j = 0; ok && j < k; j++)
        x[cols[j]] = gsl_vector_get(c, j) * scale[j];
    gsl_multifit_linear_free(w);
    gsl_vector_free(c), gsl_vector_free(v);
    gsl_matrix_free(cov), gsl_matrix_free(m);
    return ok;
}

/* min |A x - y|^2 over x >= 0 with x_j = 0 outside `free_mask`; A is n x FIT_K. */
static void
fit_nnls(const double *a, const double *y, guint n, guint free_mask, double *x)
{
    double best = INFINITY, cand[FIT_K];
    for (guint j = 0; j < FIT_K; j++)
        x[j] = 0;
    for (guint mask = 1; mask < (1u << FIT_K); mask++) {
        if ((mask & ~free_mask) != 0 || !fit_solve(a, y, n, mask, cand))
            continue;
        gboolean feasible = TRUE;
        for (guint j = 0; j < FIT_K; j++)
            feasible = feasible && cand[j] >= 0;
        double r = 0;
        for (guint i = 0; i < n && feasible; i++) {
            double e = -y[i];
            for (guint j = 0; j < FIT_K; j++)
                e += a[i * FIT_K + j] * cand[j];
            r += e * e;
        }
        if (feasible && r < best)
            best = r, memcpy(x, cand, sizeof cand);
    }
}

/* -------------------------------------------------------------------------- the compute fit */

/* The host executor's "GPU" is a CPU core: its peak and bandwidth are fitted. */
enum {
    P_LAUNCH, /* launch_s */
    P_MEM,    /* seconds per byte: 1 / mem_bandwidth_Bps */
    P_FLOP,   /* seconds per flop: 1 / peak */
};

typedef struct {
    const SimparBench *b;
    GArray *kernels; /* SimparBenchKernel: the bench's, attention left out */
} ComputeFit;

typedef struct {
    double half_dim, p[FIT_K];
    double rms_gemm, rms_kernels, rms;
} ComputeParams;

/* The GEMM's time with unit figures: its flops / g(m)g(n)g(k), or its bytes. */
static double
fit_gemm_unit(const SimparBenchGemm *g, double half_dim, gboolean flops)
{
    SimparGpu gpu;
    simpar_gpu_init(&gpu);
    gpu.launch_s = 0, gpu.gemm_eff_max = 1, gpu.mem_eff = 1, gpu.gemm_half_dim = half_dim;
    gpu.peak_flops[g->dtype] = flops ? 1 : 1e300;
    gpu.mem_bw_Bps = flops ? 1e300 : 1;
    return simpar_compute_gemm_time(&gpu, g->dtype, g->m, g->n, g->k, g->batch);
}

/* Coefficients of point i (GEMMs first, then kernels) for P_MEM and P_FLOP. */
static void
fit_compute_coefs(const ComputeFit *f, double half_dim, double *mem, double *flop, double *t)
{
    guint ng = f->b->gemm->len;
    for (guint i = 0; i < ng; i++) {
        const SimparBenchGemm *g = &g_array_index(f->b->gemm, SimparBenchGemm, i);
        mem[i] = fit_gemm_unit(g, half_dim, FALSE);
        flop[i] = fit_gemm_unit(g, half_dim, TRUE);
        t[i] = g->time_s;
    }
    for (guint i = 0; i < f->kernels->len; i++) {
        const SimparBenchKernel *k = &g_array_index(f->kernels, SimparBenchKernel, i);
        mem[ng + i] = k->bytes;
        flop[ng + i] = 0;
        t[ng + i] = k->time_s;
    }
}

/* The fitted model's relative errors: rms over GEMMs, kernels and all. */
static void
fit_compute_rms(const ComputeFit *f, const double *mem, const double *flop, const double *t,
                ComputeParams *out)
{
    guint ng = f->b->gemm->len, n = ng + f->kernels->len;
    double sum[2] = {0, 0};
    for (guint i = 0; i < n; i++) {
        double model = out->p[P_LAUNCH] + MAX(out->p[P_MEM] * mem[i], out->p[P_FLOP] * flop[i]);
        double e = (model - t[i]) / t[i];
        sum[i >= ng] += e * e;
    }
    out->rms_gemm = ng > 0 ? sqrt(sum[0] / ng) : 0;
    out->rms_kernels = f->kernels->len > 0 ? sqrt(sum[1] / f->kernels->len) : 0;
    out->rms = sqrt((sum[0] + sum[1]) / MAX(n, 1));
}

/* The linear parameters for one half_dim; GEMMs start compute bound. */
static void
fit_compute_at(const ComputeFit *f, double half_dim, ComputeParams *out)
{
    guint ng = f->b->gemm->len, n = ng + f->kernels->len;
    g_autofree double *mem = g_new(double, n), *flop = g_new(double, n), *t = g_new(double, n);
    g_autofree double *a = g_new0(double, n *FIT_K), *y = g_new(double, n);
    g_autofree gboolean *bound = g_new(gboolean, n); /* GEMM i on its flops side */
    fit_compute_coefs(f, half_dim, mem, flop, t);
    guint free_mask =
        1u << P_LAUNCH | (f->kernels->len > 0 ? 1u << P_MEM : 0) | (ng > 0 ? 1u << P_FLOP : 0);
    for (guint i = 0; i < n; i++)
        bound[i] = i < ng;
    out->half_dim = half_dim;
    for (guint iter = 0; iter < 32; iter++) {
        for (guint i = 0; i < n; i++) {
            /* without kernels the memory side is not known: ignored */
            gboolean ignored = !bound[i] && f->kernels->len == 0;
            a[i * FIT_K + P_LAUNCH] = 1 / t[i];
            a[i * FIT_K + P_MEM] = bound[i] || ignored ? 0 : mem[i] / t[i];
            a[i * FIT_K + P_FLOP] = bound[i] ? flop[i] / t[i] : 0;
            y[i] = 1;
        }
        fit_nnls(a, y, n, free_mask, out->p);
        gboolean changed = FALSE;
        for (guint i = 0; i < ng; i++) {
            gboolean b = out->p[P_FLOP] * flop[i] >= out->p[P_MEM] * mem[i];
            changed = changed || b != bound[i];
            bound[i] = b;
        }
        if (!changed)
            break;
    }
    fit_compute_rms(f, mem, flop, t, out);
}

/* The fit's rms at half_dim 2^x (for GSL's minimiser). */
static double
fit_compute_rms_at(double x, void *data)
{
    ComputeParams c;
    fit_compute_at(data, exp2(x), &c);
    return c.rms;
}

/* half_dim: the best of a log2 grid, then GSL's golden-section search within one grid step of
 * it (to 1e-12 in log2 half_dim). */
static void
fit_compute(const ComputeFit *f, ComputeParams *best)
{
    fit_compute_at(f, 128, best);
    if (f->b->gemm->len == 0)
        return;
    double step = 1.0 / 8, x_best = 7;
    for (double x = 0; x <= 16; x += step) {
        ComputeParams c;
        fit_compute_at(f, exp2(x), &c);
        if (c.rms < best->rms)
            *best = c, x_best = x;
    }
    double lo = MAX(0, x_best - step), hi = MIN(16, x_best + step), x = x_best;
    if (simpar_calibrate_golden(fit_compute_rms_at, (gpointer) f, &lo, &x, &hi, 1e-12, 100)) {
        ComputeParams g;
        fit_compute_at(f, exp2(x), &g);
        if (g.rms <= best->rms)
            *best = g;
    }
}

/* ------------------------------------------------------------------------ the link fit */

typedef struct {
    double lat, bw;
} FitRoute;

static void
fit_route(const SimparNet *net, guint src, guint dst, SimparRoute *out)
{
    const FitRoute *r = net->data;
    (void) src, (void) dst;
    *out = (SimparRoute){r->lat, r->bw};
}

static guint
fit_node(const SimparNet *net, guint gpu)
{
    (void) net, (void) gpu;
    return 0; /* the bench's group stays in one node */
}

/* The closed form of `algo` (or simpar's choice, when *algo is NULL: set) for the collective on
 * routes (lat, bw). */
static double
fit_coll_time(const SimparBenchColl *c, const SimparCollAlgo **algo, double lat, double bw)
{
    FitRoute r = {lat, bw};
    SimparNet net = {fit_route, fit_node, &r, NULL, NULL, NULL, NULL, NULL};
    g_autofree guint *gpus = g_new(guint, c->gpus);
    for (guint i = 0; i < c->gpus; i++)
        gpus[i] = i;
    SimparCollGroup g = {c->gpus, gpus, &net};
    SimparCollParams p;
    simpar_coll_params_init(&p);
    if (*algo == NULL)
        *algo = simpar_coll_choose(c->kind, &g, c->bytes, &p);
    return (*algo)->closed_form(c->kind, &g, c->bytes, 0, &p);
}

typedef struct {
    double lat, bw, rms;
    gboolean fitted;
} LinkParams;

/* `colls`: SimparBenchColl of two GPUs or more. */
static void
fit_links(GArray *colls, LinkParams *out)
{
    guint n = colls->len;
    *out = (LinkParams){1e-6, 1e10, 0, FALSE}; /* where the algorithm choice starts */
    g_autofree double *a = g_new0(double, n *FIT_K), *y = g_new(double, n);
    g_autofree const SimparCollAlgo **algos = g_new0(const SimparCollAlgo *, n);
    for (guint iter = 0; iter < 32 && n >= 2; iter++) {
        gboolean changed = FALSE;
        for (guint i = 0; i < n; i++) { /* t = c1 lat + c2 / bw for the chosen algorithm */
            const SimparBenchColl *c = &g_array_index(colls, SimparBenchColl, i);
            const SimparCollAlgo *chosen = NULL;
            fit_coll_time(c, &chosen, out->lat, out->bw);
            changed = changed || chosen != algos[i];
            algos[i] = chosen;
            a[i * FIT_K + 0] = fit_coll_time(c, &chosen, 1, 1e300) / c->time_s;
            a[i * FIT_K + 1] = fit_coll_time(c, &chosen, 0, 1) / c->time_s;
            y[i] = 1;
        }
        if (!changed && out->fitted)
            break;
        double x[FIT_K];
        fit_nnls(a, y, n, 3, x);
        if (!(x[1] > 0))
            break; /* no bandwidth term: nothing to fit a bandwidth to */
        *out = (LinkParams){x[0], 1 / x[1], 0, TRUE};
    }
    for (guint i = 0; i < n && out->fitted; i++) {
        const SimparBenchColl *c = &g_array_index(colls, SimparBenchColl, i);
        const SimparCollAlgo *chosen = NULL;
        double e = (fit_coll_time(c, &chosen, out->lat, out->bw) - c->time_s) / c->time_s;
        out->rms += e * e / n;
    }
    out->rms = sqrt(out->rms);
}

/* -------------------------------------------------------------------------- the command */

typedef struct {
    char *measured, *output, *topology;
    char **nccl_tests;
    SimparBench *bench;
    ComputeFit fit;
    ComputeParams compute;
    GArray *colls; /* SimparBenchColl: the bench's of two GPUs or more */
    LinkParams links;
    SimparGpu own;        /* --topology's GPU 0 as it stands (its compute figures too) */
    gboolean tables_mode; /* a GPU's bench: measured tables (calibrate-tables.c), no curve */
    Tables tables;
} Calibrate;

static void
calibrate_clear(Calibrate *c)
{
    g_free(c->measured), g_free(c->output), g_free(c->topology);
    g_strfreev(c->nccl_tests);
    g_clear_pointer(&c->bench, simpar_bench_free);
    simpar_calibrate_tables_clear(&c->tables);
    if (c->fit.kernels != NULL)
        g_array_free(c->fit.kernels, TRUE);
    if (c->colls != NULL)
        g_array_free(c->colls, TRUE);
}

/* In the platform's child: GPU 0's figures, as text "peak0 peak1 peak2 peak3 mem_bw
 * gemm_eff_max gemm_half_dim launch_s" (the compute model's defaults where it gives none),
 * then its gpu_model on a line of its own (its measured data: topologies/compute.ini). */
static gboolean
calibrate_platform_job(const SimparPlatform *platform, gpointer data, GString *out, GError **error)
{
    (void) data;
    SimparGpu gpu;
    if (!simpar_platform_gpu(platform, 0, &gpu, error))
        return FALSE;
    SimparGpu defaults;
    simpar_gpu_init(&defaults);
    for (guint d = 0; d <= SIMPAR_DTYPE_FP64; d++)
        g_string_append_printf(out, "%.17g ", gpu.peak_flops[d]);
    g_string_append_printf(out, "%.17g %.17g %.17g %.17g", gpu.mem_bw_Bps,
                           gpu.gemm_eff_max > 0 ? gpu.gemm_eff_max : defaults.gemm_eff_max,
                           gpu.gemm_half_dim > 0 ? gpu.gemm_half_dim : defaults.gemm_half_dim,
                           gpu.launch_s > 0 ? gpu.launch_s : defaults.launch_s);
    g_string_append_printf(out, "\n%s", gpu.model);
    return TRUE;
}

static gboolean
calibrate_platform(Calibrate *c, GError **error)
{
    g_autoptr(GString) out = g_string_new(NULL);
    if (!simpar_platform_run(c->topology, calibrate_platform_job, NULL, out, error))
        return FALSE;
    g_auto(GStrv) lines = g_strsplit(out->str, "\n", 2);
    g_assert(g_strv_length(lines) == 2); /* written just above */
    g_auto(GStrv) v = g_strsplit(lines[0], " ", -1);
    g_assert(g_strv_length(v) == SIMPAR_DTYPE_FP64 + 5);
    simpar_gpu_init(&c->own);
    for (guint d = 0; d <= SIMPAR_DTYPE_FP64; d++)
        c->own.peak_flops[d] = g_ascii_strtod(v[d], NULL);
    c->own.mem_bw_Bps = g_ascii_strtod(v[SIMPAR_DTYPE_FP64 + 1], NULL);
    c->own.gemm_eff_max = g_ascii_strtod(v[SIMPAR_DTYPE_FP64 + 2], NULL);
    c->own.gemm_half_dim = g_ascii_strtod(v[SIMPAR_DTYPE_FP64 + 3], NULL);
    c->own.launch_s = g_ascii_strtod(v[SIMPAR_DTYPE_FP64 + 4], NULL);
    c->own.model = g_intern_string(lines[1]);
    c->own.kernel_set = SIMPAR_KERNELS_UNFUSED; /* a bench times one op at a time */
    if (!simpar_gpu_load_data(&c->own, simpar_topology_compute_data(), error))
        return FALSE;
    for (guint i = 0; i < c->bench->gemm->len; i++) {
        SimparDtype dt = g_array_index(c->bench->gemm, SimparBenchGemm, i).dtype;
        if (c->own.peak_flops[dt] <= 0) {
            g_set_error(error, SIMPAR_CLI_ERROR, SIMPAR_CLI_ERROR_USAGE,
                        "--topology %s: GPU 0 has no peak_%s_flops, which the GEMMs of %s need",
                        c->topology, simpar_dtype_name(dt), c->measured);
            return FALSE;
        }
    }
    return TRUE;
}

/* -o is none of the files calibrate reads. */
static gboolean
calibrate_distinct(const Calibrate *c, GError **error)
{
    g_autoptr(GArray) names = g_array_new(FALSE, FALSE, sizeof(SimparOutputName));
    const SimparOutputName fixed[] = {
        {"-o", c->output, TRUE},
        {"--measured", c->measured, FALSE},
        {"--topology", c->topology, FALSE},
    };
    g_array_append_vals(names, fixed, G_N_ELEMENTS(fixed));
    for (guint i = 0; c->nccl_tests != NULL && c->nccl_tests[i] != NULL; i++) {
        SimparOutputName log = {"--nccl-tests", c->nccl_tests[i], FALSE};
        g_array_append_val(names, log);
    }
    return simpar_output_distinct((const SimparOutputName *) names->data, names->len, error);
}

static gboolean
calibrate_resolve(Calibrate *c, GError **error)
{
    if ((c->measured == NULL) == (c->nccl_tests == NULL) || c->output == NULL) {
        g_set_error(error, SIMPAR_CLI_ERROR, SIMPAR_CLI_ERROR_USAGE,
                    "simpar calibrate: --measured BENCH.json or --nccl-tests LOG (one of them) and "
                    "-o CALIB.json are required (see simpar calibrate --help)");
        return FALSE;
    }
    if (!simpar_output_check("-o", c->output, "a calibration JSON file", error) ||
        !calibrate_distinct(c, error))
        return FALSE;
    if (c->nccl_tests != NULL)
        return TRUE;
    c->bench = simpar_bench_load(c->measured, error);
    if (c->bench == NULL)
        return FALSE;
    const SimparBench *b = c->bench;
    gboolean checked = c->topology != NULL && b->gemm->len > 0; /* the platform's GEMMs */
    if (b->gemm->len < 3 && b->kernels->len < 2 && b->colls->len < 2 && !checked) {
        g_set_error(error, SIMPAR_MEASURED_ERROR, SIMPAR_MEASURED_ERROR_PARSE,
                    "%s: nothing to fit: it needs at least 3 gemm rows, 2 kernels rows or 2 "
                    "collectives rows (simpar-exec --bench all), or a gemm row and --topology "
                    "(the platform's own figures held against it)",
                    c->measured);
        return FALSE;
    }
    c->fit.b = b;
    /* a GPU's bench fills the measured tables and fits no peak; the host's "GPU" is a CPU
     * core, whose peak and bandwidth only the bench can give */
    c->tables_mode = !g_str_equal(b->executor, "host");
    c->fit.kernels = g_array_new(FALSE, FALSE, sizeof(SimparBenchKernel));
    for (guint i = 0; i < b->kernels->len; i++) {
        const SimparBenchKernel *k = &g_array_index(b->kernels, SimparBenchKernel, i);
        if (!g_str_has_prefix(k->kind, "attention"))
            g_array_append_val(c->fit.kernels, *k);
    }
    c->colls = g_array_new(FALSE, FALSE, sizeof(SimparBenchColl));
    for (guint i = 0; i < b->colls->len; i++) /* one GPU: no link to fit */
        if (g_array_index(b->colls, SimparBenchColl, i).gpus >= 2)
            g_array_append_val(c->colls, g_array_index(b->colls, SimparBenchColl, i));
    if (c->topology == NULL || !c->tables_mode) /* the host's figures are its bench's */
        return TRUE;
    return calibrate_platform(c, error);
}

/* ----- CALIB.json ----- */

static void
calibrate_member(JsonBuilder *b, const char *key, double v)
{
    json_builder_set_member_name(b, key);
    json_builder_add_double_value(b, v);
}

/* A figure of CALIB.json (key, value, where it comes from), for the file and the summary. */
typedef struct {
    char key[32];
    double value;
    const char *from;
} CalibrateFigure;

static void
calibrate_figure(CalibrateFigure *f, guint *n, const char *key, double value, const char *from)
{
    if (!(value > 0 && isfinite(value)))
        return; /* a parameter the data left at zero: keep the model's own figure */
    g_strlcpy(f[*n].key, key, sizeof f[*n].key);
    f[*n].value = value, f[*n].from = from;
    (*n)++;
}

/* GEMM figures of the host: its fitted peak serves every dtype (it computes in doubles). */
static void
calibrate_gemm_figures(const Calibrate *c, CalibrateFigure *f, guint *n)
{
    const ComputeParams *p = &c->compute;
    calibrate_figure(f, n, "gemm_eff_max", 1, "1: the fitted peak holds it");
    calibrate_figure(f, n, "gemm_half_dim", p->half_dim, "GEMMs");
    for (guint d = 0; d <= SIMPAR_DTYPE_FP64; d++) {
        g_autofree char *key = g_strdup_printf("peak_%s_flops", simpar_dtype_name(d));
        calibrate_figure(f, n, key, 1 / p->p[P_FLOP],
                         "GEMMs (the host computes every dtype in doubles)");
    }
}

/* The host executor's fitted figures (a GPU's bench writes tables instead). */
static void
calibrate_compute_figures(const Calibrate *c, CalibrateFigure *f, guint *n)
{
    const ComputeParams *p = &c->compute;
    if (c->bench->gemm->len >= 3 || c->fit.kernels->len >= 2)
        calibrate_figure(f, n, "launch_s", MAX(p->p[P_LAUNCH], 1e-9),
                         "GEMMs and kernels (at least 1 ns)");
    if (c->bench->gemm->len >= 3)
        calibrate_gemm_figures(c, f, n);
    if (c->fit.kernels->len >= 2) {
        calibrate_figure(f, n, "mem_eff", 1, "1: the fitted bandwidth holds it");
        calibrate_figure(f, n, "mem_bandwidth_Bps", 1 / p->p[P_MEM], "kernels");
    }
}

/* FALSE with an error when a compute fit the file would record found no figure: a GEMM peak
 * (or kernel bandwidth) the data left at zero was dropped from the file while its fit was
 * recorded, so the calibration claimed a fit that failed. */
static gboolean
calibrate_fitted(const Calibrate *c, GError **error)
{
    const ComputeParams *p = &c->compute;

    const struct {
        gboolean recorded, found;
        const char *what, *figure;
        guint points;
        double rms;
    } fits[] = {
        {c->bench->gemm->len >= 3, p->p[P_FLOP] > 0 && isfinite(1 / p->p[P_FLOP]), "GEMM",
         "peak (FLOP/s)", c->bench->gemm->len, p->rms_gemm},
        {c->fit.kernels->len >= 2, p->p[P_MEM] > 0 && isfinite(1 / p->p[P_MEM]), "kernel",
         "memory bandwidth", c->fit.kernels->len, p->rms_kernels},
    };

    for (guint i = 0; i < G_N_ELEMENTS(fits) && !c->tables_mode; i++)
        if (fits[i].recorded && !fits[i].found) {
            g_set_error(error, SIMPAR_MEASURED_ERROR, SIMPAR_MEASURED_ERROR_PARSE,
                        "--measured %s: the %s fit failed: no positive %s fits its %u %s times "
                        "(they do not grow with the work; rms error %.0f%%), so no calibration "
                        "is written; measure again",
                        c->measured, fits[i].what, fits[i].figure, fits[i].points, fits[i].what,
                        100 * fits[i].rms);
            return FALSE;
        }
    return TRUE;
}

/* The figures in CALIB.json order; returns how many. */
static guint
calibrate_figures(const Calibrate *c, CalibrateFigure *f)
{
    guint n = 0;
    if (!c->tables_mode)
        calibrate_compute_figures(c, f, &n);
    if (c->links.fitted) {
        calibrate_figure(f, &n, "intra_node_bandwidth_Bps", c->links.bw, "collectives");
        calibrate_figure(f, &n, "intra_node_latency_s", MAX(c->links.lat, 1e-12),
                         "collectives (at least 1 ps)");
    }
    return n;
}

static void
calibrate_json_fit(JsonBuilder *b, const char *name, double rms, guint points, const char *method)
{
    json_builder_set_member_name(b, name);
    json_builder_begin_object(b);
    calibrate_member(b, "rms_rel_error", rms);
    json_builder_set_member_name(b, "points");
    json_builder_add_int_value(b, points);
    json_builder_set_member_name(b, "method");
    json_builder_add_string_value(b, method);
    json_builder_end_object(b);
}

static void
calibrate_json_source(JsonBuilder *b, const Calibrate *c)
{
    const struct {
        const char *key, *value;
    } src[] = {{"bench", c->measured},
               {"executor", c->bench->executor},
               {"device", c->bench->device},
               {"dtype", simpar_dtype_name(c->bench->dtype)},
               {"topology", c->topology != NULL ? c->topology : ""}};

    json_builder_set_member_name(b, "source");
    json_builder_begin_object(b);
    for (guint i = 0; i < G_N_ELEMENTS(src); i++) {
        json_builder_set_member_name(b, src[i].key);
        json_builder_add_string_value(b, src[i].value);
    }
    json_builder_end_object(b);
}

static gboolean
calibrate_write(const Calibrate *c, const CalibrateFigure *f, guint n, GError **error)
{
    for (guint i = 0; i < n; i++)
        if (!simpar_calibration_figure_check(f[i].key, f[i].value, error))
            return FALSE;
    if (c->tables_mode && !simpar_calibrate_tables_check(&c->tables, error))
        return FALSE;
    g_autoptr(JsonBuilder) b = json_builder_new();
    json_builder_begin_object(b);
    simpar_calibration_json_head(b);
    for (guint i = 0; i < n; i++)
        calibrate_member(b, f[i].key, f[i].value);
    if (c->tables_mode)
        simpar_calibrate_tables_json(&c->tables, b);
    calibrate_json_source(b, c);
    json_builder_set_member_name(b, "fit");
    json_builder_begin_object(b);
    if (c->bench->gemm->len >= 3 && !c->tables_mode)
        calibrate_json_fit(b, "gemm", c->compute.rms_gemm, c->bench->gemm->len,
                           "least squares of the relative error; half_dim by log2 grid and golden "
                           "section, the rest linear (non-negative)");
    if (c->fit.kernels->len >= 2 && !c->tables_mode)
        calibrate_json_fit(b, "kernels", c->compute.rms_kernels, c->fit.kernels->len,
                           "least squares of the relative error, jointly with the GEMMs (one "
                           "launch_s); attention kernels left out");
    if (c->tables_mode)
        simpar_calibrate_tables_json_fit(&c->tables, b);
    if (c->links.fitted)
        calibrate_json_fit(b, "collectives", c->links.rms, c->colls->len,
                           "least squares of the relative error of simpar's closed form (the "
                           "algorithm it would pick) on routes of latency a and bandwidth B");
    json_builder_end_object(b);
    json_builder_end_object(b);
    return simpar_json_write_file(b, "-o", c->output, error);
}

static void
calibrate_print_fit(GString *out, const char *name, guint points, guint min, double rms)
{
    if (points >= min)
        g_string_append_printf(out, "%-12s %6u %13.2f%%\n", name, points, 100 * rms);
    else
        g_string_append_printf(out, "%-12s %6u   not fitted (fewer than %u points)\n", name, points,
                               min);
}

static void
calibrate_print(const Calibrate *c, const CalibrateFigure *f, guint n)
{
    const SimparBench *b = c->bench;
    g_autoptr(GString) out = g_string_new(NULL);
    g_string_append_printf(out, "%s: %s executor, %s, %s -> %s\n\n%-26s %14s  %s\n", c->measured,
                           b->executor, b->device, simpar_dtype_name(b->dtype), c->output, "figure",
                           "value", "fitted from");
    for (guint i = 0; i < n; i++)
        g_string_append_printf(out, "%-26s %14.6g  %s\n", f[i].key, f[i].value, f[i].from);
    if (c->tables_mode)
        simpar_calibrate_tables_print(&c->tables, out);
    g_string_append_printf(out, "\n%-12s %6s %14s\n", "fit", "points", "rms rel. error");
    if (!c->tables_mode)
        calibrate_print_fit(out, "GEMM", b->gemm->len, 3, c->compute.rms_gemm);
    if (!c->tables_mode)
        calibrate_print_fit(out, "kernels", c->fit.kernels->len, 2, c->compute.rms_kernels);
    calibrate_print_fit(out, "collectives", c->colls->len, 2, c->links.rms);
    if (c->colls->len < b->colls->len)
        g_string_append_printf(out, "collectives: %u rows on one GPU left out (no link)\n",
                               b->colls->len - c->colls->len);
    if (c->colls->len >= 2 && !c->links.fitted)
        g_string_append(out, "collectives: no bandwidth term fits these times; links not fitted\n");
    g_string_append(out,
                    "inter-node links: not fitted (the bench's collectives run inside one node)\n");
    if (c->topology != NULL && !c->tables_mode)
        g_string_append_printf(out,
                               "--topology %s: not used (the host executor's peak and "
                               "bandwidth are fitted)\n",
                               c->topology);
    printf("%s", out->str);
}

static const char calibrate_summary[] =
    "Makes simpar-exec's microbenchmarks a calibration file for simpar predict and simpar\n"
    "validate (--calibration). A GPU's bench becomes the compute model's measured tables: its\n"
    "GEMMs (less the bench's timing overhead) and a bandwidth per kernel class, never above the\n"
    "datasheet of --topology's GPU; no peak is fitted. The host executor's bench fits its peak,\n"
    "bandwidth and launch time. Collectives give the intra-node links (bandwidth and latency of\n"
    "a GPU-to-GPU route), by least squares of the relative error.\n"
    "With --nccl-tests, fits the platform's network figures (intra- and inter-node bandwidth\n"
    "and latency, NVLink SHARP latency) to nccl-tests output instead, so that simpar collective\n"
    "--calibration reproduces it.";

gboolean
simpar_cmd_calibrate(int argc, char **argv, GError **error)
{
    Calibrate c = {0};
    const GOptionEntry entries[] = {
        {"measured", 0, 0, G_OPTION_ARG_FILENAME, &c.measured,
         "BENCH.json written by simpar-exec --bench ... -o FILE", "BENCH.json"},
        {"output", 'o', 0, G_OPTION_ARG_FILENAME, &c.output, "Calibration file to write",
         "CALIB.json"},
        {"nccl-tests", 0, 0, G_OPTION_ARG_FILENAME_ARRAY, &c.nccl_tests,
         "Output of an nccl-tests run (all_reduce_perf, all_gather_perf, reduce_scatter_perf, "
         "alltoall_perf, broadcast_perf, reduce_perf, sendrecv_perf); repeat for several: fits "
         "the --topology platform's link figures",
         "LOG"},
        {"topology", 't', 0, G_OPTION_ARG_FILENAME, &c.topology,
         "Platform whose GPU 0 gives the peaks and memory bandwidth (not for the host executor); "
         "with --nccl-tests, the platform whose links are fitted",
         "FILE"},
        G_OPTION_ENTRY_NULL,
    };
    g_autoptr(GOptionContext) ctx =
        g_option_context_new("- fit compute and link figures to microbenchmarks");
    g_option_context_set_summary(ctx, calibrate_summary);
    g_option_context_add_main_entries(ctx, entries, NULL);
    gboolean ok = simpar_cli_parse(ctx, "simpar calibrate", &argc, &argv, error) &&
                  calibrate_resolve(&c, error);
    if (ok && c.nccl_tests != NULL) {
        ok = simpar_calibrate_nccl_tests(c.nccl_tests, c.topology, c.output, error);
    } else if (ok) {
        if (c.tables_mode)
            simpar_calibrate_tables(c.bench, c.topology != NULL ? &c.own : NULL, &c.tables);
        else if (c.bench->gemm->len + c.fit.kernels->len > 0)
            fit_compute(&c.fit, &c.compute);
        fit_links(c.colls, &c.links);
        CalibrateFigure figures[16];
        guint n = calibrate_figures(&c, figures);
        ok = calibrate_fitted(&c, error) && calibrate_write(&c, figures, n, error);
        if (ok)
            calibrate_print(&c, figures, n);
    }
    calibrate_clear(&c);
    return ok;
}
