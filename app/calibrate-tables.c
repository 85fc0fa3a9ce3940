/* calibrate-tables.c - a GPU's microbenchmarks (simpar-exec --bench on CUDA) into the compute
 * model's measured tables (models/compute-data.c), for `simpar calibrate --measured`.
 *
 *   GEMMs    every row becomes a row of "gemm_table", less the bench's timing overhead: the
 *            smallest GEMM's time less the launch floor, when that GEMM took more than three
 *            launch floors (its own compute is a fraction of a microsecond). With
 *            --topology, a row faster than the datasheet peak is held at the peak. Rows the
 *            bench ran on zero-filled buffers (a bench without "inputs": "random" filled at
 *            most 2^27 elements) are left out: Hopper GEMMs run several percent faster on
 *            zeros.
 *   kernels  each class (models/compute.h: stream, activation, dropout, norm, softmax,
 *            optimizer) fitted as t = floor + bytes / bandwidth over its rows, least squares of
 *            the relative error: "kernel_bw_<class>_Bps", never above the datasheet bandwidth
 *            (with --topology). The floor holds the bench's timer as well as the launch: it is
 *            reported, not written (the platform's launch_s stays).
 *
 * Nothing here goes past physics: no peak is fitted, no efficiency can exceed 1; a class the
 * bench did not measure keeps the platform's figure (said in the summary).
 */
#include "calibrate-private.h"
#include "cli.h"
#include <math.h>
#include <string.h>

/* The class of a bench kernel row ("ln_apply", "gelu_bwd": the op kind, '-' as '_'). */
static SimparKernelClass
tables_kernel_class(const char *kind)
{
    for (guint k = 0; k < SIMPAR_N_OP_KINDS; k++) {
        g_autofree char *name = g_strdup(simpar_op_kind_name((SimparOpKind) k));
        g_strdelimit(name, "-", '_');
        if (g_str_equal(name, kind))
            return simpar_kernel_class_of((SimparOpKind) k);
    }
    return SIMPAR_KCLASS_N; /* attention and others: not a streaming kernel */
}

/* min over (floor, 1/bw) >= 0 of sum ((floor + bytes/bw - t) / t)^2: a 2 x 2 normal system,
 * with each parameter held at 0 when its free value would be negative. */
static gboolean
tables_fit_class(const SimparBench *b, SimparKernelClass kc, TablesClassFit *out)
{
    double s11 = 0, s12 = 0, s22 = 0, r1 = 0, r2 = 0;
    guint n = 0;
    for (guint i = 0; i < b->kernels->len; i++) {
        const SimparBenchKernel *k = &g_array_index(b->kernels, SimparBenchKernel, i);
        if (tables_kernel_class(k->kind) != kc)
            continue;
        double a1 = 1 / k->time_s, a2 = k->bytes / k->time_s; /* y = 1 */
        s11 += a1 * a1, s12 += a1 * a2, s22 += a2 * a2, r1 += a1, r2 += a2;
        n++;
    }
    out->points = n;
    if (n < 2)
        return FALSE;
    double det = s11 * s22 - s12 * s12, floor = 0, inv_bw = 0;
    if (det > 0) {
        floor = (r1 * s22 - r2 * s12) / det, inv_bw = (s11 * r2 - s12 * r1) / det;
    }
    if (!(det > 0) || floor < 0 || inv_bw < 0) /* one parameter alone */
        floor = 0, inv_bw = r2 / s22;
    if (!(inv_bw > 0))
        return FALSE;
    out->floor_s = floor, out->bw_Bps = 1 / inv_bw;
    double sum = 0;
    for (guint i = 0; i < b->kernels->len; i++) {
        const SimparBenchKernel *k = &g_array_index(b->kernels, SimparBenchKernel, i);
        if (tables_kernel_class(k->kind) == kc) {
            double e = (floor + k->bytes * inv_bw) / k->time_s - 1;
            sum += e * e;
        }
    }
    out->rms = sqrt(sum / n);
    return TRUE;
}

/* The GEMM rows less the bench's timing overhead, held at the datasheet peak where known. */
static void
tables_gemm(const SimparBench *b, const SimparGpu *platform, double launch_s, Tables *t)
{
    double least = INFINITY;
    for (guint i = 0; i < b->gemm->len; i++)
        least = MIN(least, g_array_index(b->gemm, SimparBenchGemm, i).time_s);
    /* a smallest GEMM taking more than three launch floors measures the bench's timer (no GPU
     * takes that long for the few megaflops of the smallest shapes); below that, nothing is
     * taken off */
    t->gemm_overhead_s = b->gemm->len > 0 && least > 3 * launch_s ? least - launch_s : 0;
    t->gemm = g_array_new(FALSE, FALSE, sizeof(SimparBenchGemm));
    for (guint i = 0; i < b->gemm->len; i++) {
        SimparBenchGemm g = g_array_index(b->gemm, SimparBenchGemm, i);
        if (b->zero_above_elems > 0 &&
            MAX(MAX(g.m * g.k, g.k * g.n), g.m * g.n) * g.batch > b->zero_above_elems) {
            t->gemm_zero++; /* ran on zeros: faster than on data */
            continue;
        }
        g.time_s = MAX(g.time_s - t->gemm_overhead_s, launch_s);
        double peak = platform != NULL ? platform->peak_flops[g.dtype] : 0;
        double ideal = peak > 0 ? 2 * g.m * g.n * g.k * g.batch / peak : 0;
        if (g.time_s < ideal)
            g.time_s = ideal, t->gemm_held++;
        g_array_append_val(t->gemm, g);
    }
}

void
simpar_calibrate_tables(const SimparBench *b, const SimparGpu *platform, Tables *t)
{
    SimparGpu defaults;
    simpar_gpu_init(&defaults);
    memset(t, 0, sizeof *t);
    t->launch_s =
        platform != NULL && platform->launch_s > 0 ? platform->launch_s : defaults.launch_s;
    tables_gemm(b, platform, t->launch_s, t);
    for (guint c = 0; c < SIMPAR_KCLASS_N; c++) {
        TablesClassFit *f = &t->classes[c];
        f->fitted = tables_fit_class(b, (SimparKernelClass) c, f);
        if (f->fitted && platform != NULL && platform->mem_bw_Bps > 0 &&
            f->bw_Bps > platform->mem_bw_Bps)
            f->bw_Bps = platform->mem_bw_Bps, f->held = TRUE;
    }
}

void
simpar_calibrate_tables_clear(Tables *t)
{
    if (t->gemm != NULL)
        g_array_free(t->gemm, TRUE);
    t->gemm = NULL;
}

static void
tables_json_gemm(JsonBuilder *jb, const SimparBenchGemm *g)
{
    json_builder_begin_object(jb);
    json_builder_set_member_name(jb, "dtype");
    json_builder_add_string_value(jb, simpar_dtype_name(g->dtype));
    const char *keys[] = {"m", "n", "k", "batch"};
    const double v[] = {g->m, g->n, g->k, g->batch};
    for (guint i = 0; i < G_N_ELEMENTS(keys); i++) {
        json_builder_set_member_name(jb, keys[i]);
        json_builder_add_int_value(jb, (gint64) v[i]);
    }
    json_builder_set_member_name(jb, "trans_a");
    json_builder_add_boolean_value(jb, g->trans_a);
    json_builder_set_member_name(jb, "trans_b");
    json_builder_add_boolean_value(jb, g->trans_b);
    json_builder_set_member_name(jb, "time_s");
    json_builder_add_double_value(jb, g->time_s);
    json_builder_end_object(jb);
}

void
simpar_calibrate_tables_json(const Tables *t, JsonBuilder *jb)
{
    for (guint c = 0; c < SIMPAR_KCLASS_N; c++) {
        if (!t->classes[c].fitted)
            continue;
        g_autofree char *key =
            g_strdup_printf("kernel_bw_%s_Bps", simpar_kernel_class_name((SimparKernelClass) c));
        json_builder_set_member_name(jb, key);
        json_builder_add_double_value(jb, t->classes[c].bw_Bps);
    }
    if (t->gemm->len == 0)
        return;
    json_builder_set_member_name(jb, "gemm_table");
    json_builder_begin_array(jb);
    for (guint i = 0; i < t->gemm->len; i++)
        tables_json_gemm(jb, &g_array_index(t->gemm, SimparBenchGemm, i));
    json_builder_end_array(jb);
}

void
simpar_calibrate_tables_print(const Tables *t, GString *out)
{
    if (t->gemm->len > 0)
        g_string_append_printf(out,
                               "gemm_table: %u GEMMs, each less the bench's timing overhead of "
                               "%.1f us (its smallest GEMM's time less the %.2f us launch "
                               "floor)%s\n",
                               t->gemm->len, 1e6 * t->gemm_overhead_s, 1e6 * t->launch_s,
                               t->gemm_held > 0 ? "; some held at the datasheet peak" : "");
    if (t->gemm_zero > 0)
        g_string_append_printf(out,
                               "gemm_table: %u GEMMs left out: the bench ran them on zero-filled "
                               "buffers (above 2^27 elements; GEMMs run faster on zeros), their "
                               "shapes are interpolated from the others\n",
                               t->gemm_zero);
    g_string_append_printf(out, "\n%-11s %6s %14s %11s %14s\n", "kernels", "points", "bandwidth",
                           "floor", "rms rel. error");
    for (guint c = 0; c < SIMPAR_KCLASS_N; c++) {
        const TablesClassFit *f = &t->classes[c];
        const char *name = simpar_kernel_class_name((SimparKernelClass) c);
        if (f->fitted)
            g_string_append_printf(out, "%-11s %6u %9.1f GB/s %8.1f us %13.2f%%%s\n", name,
                                   f->points, f->bw_Bps / 1e9, 1e6 * f->floor_s, 100 * f->rms,
                                   f->held ? " (held at the datasheet bandwidth)" : "");
        else
            g_string_append_printf(out, "%-11s %6u   not measured: the platform's figure stays\n",
                                   name, f->points);
    }
    g_string_append(out, "kernel floors include the bench's timer: reported, not written (the "
                         "platform's launch_s stays)\n");
}

gboolean
simpar_calibrate_tables_check(const Tables *t, GError **error)
{
    for (guint c = 0; c < SIMPAR_KCLASS_N; c++) {
        g_autofree char *key =
            g_strdup_printf("kernel_bw_%s_Bps", simpar_kernel_class_name((SimparKernelClass) c));
        if (t->classes[c].fitted &&
            !simpar_calibration_figure_check(key, t->classes[c].bw_Bps, error))
            return FALSE;
    }
    for (guint i = 0; i < t->gemm->len; i++) {
        const SimparBenchGemm *g = &g_array_index(t->gemm, SimparBenchGemm, i);
        if (!(g->time_s <= 1e3)) {
            g_set_error(error, SIMPAR_CLI_ERROR, SIMPAR_CLI_ERROR_USAGE,
                        "the bench's GEMM %g x %g x %g takes %g s: a calibration file holds GEMMs "
                        "of at most 1000 s; nothing written",
                        g->m, g->n, g->k, g->time_s);
            return FALSE;
        }
    }
    return TRUE;
}
