/* calibrate-tables.c - a GPU's microbenchmarks (simpar-exec --bench on CUDA) into the compute
 * model's measured tables (models/compute-data.c), for `simpar calibrate --measured`.
 *
 *   GEMMs    every row becomes a row of "gemm_table", less the bench's timing overhead: the
 *            fastest tiny GEMM's time (512^3 or less: under 3 us of compute on any GPU) less
 *            the launch floor, when it took more than three launch floors. With
 *            --topology, a row faster than the datasheet peak is held at the peak. Rows the
 *            bench ran on zero-filled buffers (a bench without "inputs": "random" filled at
 *            most 2^27 elements) are left out: Hopper GEMMs run several percent faster on
 *            zeros.
 *   kernels  each op kind, and each class pooled (models/compute.h: stream, activation,
 *            dropout, norm, softmax, optimizer), fitted as t = floor + bytes / bandwidth over
 *            its rows, least squares of the relative error: "kernel_bw_Bps" by kind and
 *            "kernel_bw_<class>_Bps" (for the class's kinds the bench did not time), never
 *            above the datasheet bandwidth (with --topology). The floor holds the bench's timer
 *            as well as the launch: predictions take the platform's launch_s instead. With
 *            --topology, the summary holds the platform's own figures against the same rows
 *            (less the timer), group by group, next to the calibration's. The floor comes
 *            from the fit; the bandwidth from each kind's largest row less the floor (the
 *            smaller rows are mostly floor, and a step's large tensors stream as the largest
 *            row does). The bench's timer is the least floor of any kind less the launch (the
 *            same events time every row); what a kind's floor holds beyond it is the kind's
 *            own fixed time, "kernel_floor_s", which predictions add to the launch.
 *   attention  with --topology, the bench's unfused attention rows (forward, backward) less
 *            their GEMMs (this calibration's table on --topology's curve) and the timer: the
 *            bandwidth of simpar-exec's one kernel over the scores, "kernel_bw_Bps" of
 *            "attention" and "attention-bwd" (at the rows' dropout_p: 0.1 in every bench so far).
 *   classes the bench did not time: with --topology, the platform's figure times the median
 *            ratio of the measured kinds' bandwidths to the platform's own (the bench's kernels
 *            run that much slower or faster than the platform's data says); without it, the
 *            platform's figure stays.
 *
 * Nothing here goes past physics: no peak is fitted, no efficiency can exceed 1; a class the
 * bench did not measure keeps the platform's figure (said in the summary).
 */
#include "calibrate-private.h"
#include "cli.h"
#include <math.h>
#include <string.h>

/* The op kind of a bench kernel row ("ln_apply", "gelu_bwd": the kind, '-' as '_'), if it is
 * a streaming kernel's; SIMPAR_N_OP_KINDS otherwise (attention). */
static SimparOpKind
tables_kernel_kind(const char *kind)
{
    for (guint k = 0; k < SIMPAR_N_OP_KINDS; k++) {
        g_autofree char *name = g_strdup(simpar_op_kind_name((SimparOpKind) k));
        g_strdelimit(name, "-", '_');
        if (g_str_equal(name, kind) && simpar_kernel_class_of((SimparOpKind) k) < SIMPAR_KCLASS_N)
            return (SimparOpKind) k;
    }
    return SIMPAR_N_OP_KINDS;
}

/* Whether row k is in the group `g`: a class (g < SIMPAR_KCLASS_N) or an op kind (g -
 * SIMPAR_KCLASS_N). */
static gboolean
tables_in(const TablesKernel *k, guint g)
{
    return g < SIMPAR_KCLASS_N ? simpar_kernel_class_of(k->kind) == g
                               : k->kind == g - SIMPAR_KCLASS_N;
}

/* A GEMM this small (512^3) takes under 3 us on any GPU simpar knows (V100: 2.1 us at its
 * 125 TFLOP/s): what a bench measures beyond that for it is the bench's own. */
#define TABLES_TINY_GEMM_FLOPS (2.0 * 512 * 512 * 512)
/* A GEMM row measured in less than twice the bench's timer is mostly timer: the timer's own
 * spread between rows (12 us of 90 on the H200's tiny squares) is then a large share of what
 * is left, and the row is left out of the table (its shape interpolated from the others). */
#define TABLES_TIMER_SHARE 2.0

/* The bench's kernel rows of the streaming kinds. */
static void
tables_kernels(const SimparBench *b, Tables *t)
{
    t->kernels = g_array_new(FALSE, FALSE, sizeof(TablesKernel));
    for (guint i = 0; i < b->kernels->len; i++) {
        const SimparBenchKernel *k = &g_array_index(b->kernels, SimparBenchKernel, i);
        TablesKernel row = {tables_kernel_kind(k->kind), k->bytes, k->time_s};
        if (row.kind < SIMPAR_N_OP_KINDS)
            g_array_append_val(t->kernels, row);
    }
}

/* The rms relative error of launch_s + bytes / bw on the rows of group g (tables_in), each
 * less the group's timer (its fitted floor less the launch floor). */
static double
tables_rms(const Tables *t, guint g, double timer, double bw)
{
    double sum = 0;
    guint n = 0;
    for (guint i = 0; i < t->kernels->len; i++) {
        const TablesKernel *k = &g_array_index(t->kernels, TablesKernel, i);
        if (tables_in(k, g)) {
            double e = (t->launch_s + k->bytes / bw) / (k->time_s - timer) - 1;
            sum += e * e, n++;
        }
    }
    return n > 0 ? sqrt(sum / n) : NAN;
}

/* The relative error in the summed time of group g's rows (each less the timer) of launch_s +
 * bytes / bw: what a step of the same kernels would be off by, the large rows weighing most. */
static double
tables_time_err(const Tables *t, guint g, double timer, double bw)
{
    double err = 0, sum = 0;
    for (guint i = 0; i < t->kernels->len; i++) {
        const TablesKernel *k = &g_array_index(t->kernels, TablesKernel, i);
        if (tables_in(k, g))
            err += fabs(t->launch_s + k->bytes / bw - (k->time_s - timer)),
                sum += k->time_s - timer;
    }
    return sum > 0 ? err / sum : NAN;
}

/* The bandwidth of group g's bandwidth-bound rows: each kind's largest row, their bytes over
 * their times less `floor` (0 when no row is above it). */
static double
tables_bw_largest(const Tables *t, guint g, double floor)
{
    double bytes = 0, time = 0;
    for (guint kind = 0; kind < SIMPAR_N_OP_KINDS; kind++) {
        const TablesKernel *largest = NULL;
        for (guint i = 0; i < t->kernels->len; i++) {
            const TablesKernel *k = &g_array_index(t->kernels, TablesKernel, i);
            if (k->kind == kind && tables_in(k, g) &&
                (largest == NULL || k->bytes > largest->bytes))
                largest = k;
        }
        if (largest != NULL && largest->time_s > floor)
            bytes += largest->bytes, time += largest->time_s - floor;
    }
    return time > 0 ? bytes / time : 0;
}

/* min over (floor, 1/bw) >= 0 of sum ((floor + bytes/bw - t) / t)^2: a 2 x 2 normal system,
 * with each parameter held at 0 when its free value would be negative. The slope is the
 * kernel's bandwidth; the floor holds the launch and the bench's timer, which predictions do
 * not have (they take the platform's launch_s). */
static gboolean
tables_fit(const Tables *t, guint g, TablesFit *out)
{
    double s11 = 0, s12 = 0, s22 = 0, r1 = 0, r2 = 0;
    guint n = 0;
    for (guint i = 0; i < t->kernels->len; i++) {
        const TablesKernel *k = &g_array_index(t->kernels, TablesKernel, i);
        if (!tables_in(k, g))
            continue;
        double a1 = 1 / k->time_s, a2 = k->bytes / k->time_s; /* y = 1 */
        s11 += a1 * a1, s12 += a1 * a2, s22 += a2 * a2, r1 += a1, r2 += a2;
        n++;
    }
    out->points = n;
    if (n < 2)
        return FALSE;
    double det = s11 * s22 - s12 * s12, floor = 0, inv_bw = 0;
    if (det > 0)
        floor = (r1 * s22 - r2 * s12) / det, inv_bw = (s11 * r2 - s12 * r1) / det;
    if (!(det > 0) || floor < 0 || inv_bw < 0) /* one parameter alone */
        floor = 0, inv_bw = r2 / s22;
    if (!(inv_bw > 0))
        return FALSE;
    out->timer_s = MAX(floor - t->launch_s, 0), out->bw_Bps = 1 / inv_bw;
    double bw = tables_bw_largest(t, g, out->timer_s + t->launch_s);
    if (bw > 0)
        out->bw_Bps = bw;
    out->rms = tables_rms(t, g, out->timer_s, out->bw_Bps);
    return TRUE;
}

/* The GEMM rows less the bench's timing overhead, held at the datasheet peak where known. */
static void
tables_gemm(const SimparBench *b, const SimparGpu *platform, Tables *t)
{
    /* the timer: the fastest tiny GEMM's time less the launch floor, when it took more than
     * three launch floors; a table without tiny GEMMs (or with fast ones) keeps its times */
    double least = INFINITY;
    for (guint i = 0; i < b->gemm->len; i++) {
        const SimparBenchGemm *g = &g_array_index(b->gemm, SimparBenchGemm, i);
        if (2 * g->m * g->n * g->k * g->batch <= TABLES_TINY_GEMM_FLOPS)
            least = MIN(least, g->time_s);
    }
    t->gemm_overhead_s = isfinite(least) && least > 3 * t->launch_s ? least - t->launch_s : 0;
    t->gemm = g_array_new(FALSE, FALSE, sizeof(SimparBenchGemm));
    for (guint i = 0; i < b->gemm->len; i++) {
        SimparBenchGemm g = g_array_index(b->gemm, SimparBenchGemm, i);
        if (b->zero_above_elems > 0 &&
            MAX(MAX(g.m * g.k, g.k * g.n), g.m * g.n) * g.batch > b->zero_above_elems) {
            t->gemm_zero++; /* ran on zeros: faster than on data */
            continue;
        }
        if (g.time_s < TABLES_TIMER_SHARE * t->gemm_overhead_s) {
            t->gemm_timed_out++; /* mostly the timer: its spread swamps the GEMM */
            continue;
        }
        g.time_s = MAX(g.time_s - t->gemm_overhead_s, t->launch_s);
        double peak = platform != NULL ? platform->peak_flops[g.dtype] : 0;
        double ideal = peak > 0 ? 2 * g.m * g.n * g.k * g.batch / peak : 0;
        if (g.time_s < ideal)
            g.time_s = ideal, t->gemm_held++;
        g_array_append_val(t->gemm, g);
    }
}

static int
tables_cmp_double(gconstpointer a, gconstpointer b)
{
    double x = *(const double *) a, y = *(const double *) b;
    return (x > y) - (x < y);
}

/* The GEMM rows but `skip` (G_MAXUINT: all) as a table, not interned. */
static SimparGemmTable *
tables_gemm_table(const Tables *t, guint skip)
{
    SimparGemmTable *table = simpar_gemm_table_new();
    for (guint i = 0; i < t->gemm->len; i++) {
        const SimparBenchGemm *g = &g_array_index(t->gemm, SimparBenchGemm, i);
        if (i != skip)
            simpar_gemm_table_add(table, g->dtype, g->m, g->n, g->k, g->batch, g->trans_a,
                                  g->trans_b, g->time_s);
    }
    return table; /* (transfer full) */
}

/* Relative errors of `gpu` on each row (a row's own table `loo`: the others), sorted; the rms,
 * median and largest. */
static void
tables_gemm_errors(const Tables *t, const SimparGpu *gpu, gboolean loo, double out[3])
{
    guint n = t->gemm->len;
    g_autofree double *e = g_new(double, n);
    double sum = 0;
    for (guint i = 0; i < n; i++) {
        const SimparBenchGemm *g = &g_array_index(t->gemm, SimparBenchGemm, i);
        SimparGpu own = *gpu;
        g_autoptr(SimparGemmTable) others = loo ? tables_gemm_table(t, i) : NULL;
        if (loo)
            own.gemm_table = others;
        double p = simpar_compute_gemm_time_ops(&own, g->dtype, g->m, g->n, g->k, g->batch,
                                                g->trans_a, g->trans_b);
        e[i] = fabs(p / g->time_s - 1);
        sum += e[i] * e[i];
    }
    qsort(e, n, sizeof(double), tables_cmp_double);
    out[0] = sqrt(sum / n);
    out[1] = n % 2 ? e[n / 2] : (e[n / 2 - 1] + e[n / 2]) / 2;
    out[2] = e[n - 1];
}

/* --topology's own GEMM figures (its curve and measured table) on the rows kept, and each row
 * predicted from the others on --topology's curve: how well the table interpolates. */
static void
tables_gemm_preset(Tables *t, const SimparGpu *platform)
{
    t->gemm_preset = t->gemm_preset_median = t->gemm_preset_max = NAN;
    t->gemm_loo_median = t->gemm_loo_max = NAN;
    if (platform == NULL || t->gemm->len == 0)
        return;
    double e[3];
    tables_gemm_errors(t, platform, FALSE, e);
    t->gemm_preset = e[0], t->gemm_preset_median = e[1], t->gemm_preset_max = e[2];
    if (t->gemm->len < 2)
        return;
    tables_gemm_errors(t, platform, TRUE, e);
    t->gemm_loo_median = e[1], t->gemm_loo_max = e[2];
}

/* The class whose figure a group's kind falls back to: its own, the softmax kernels' for the
 * attention's passes over its scores. */
static SimparKernelClass
tables_kind_class(SimparOpKind kind)
{
    return kind == SIMPAR_OP_ATTENTION || kind == SIMPAR_OP_ATTENTION_BWD
               ? SIMPAR_KCLASS_SOFTMAX
               : simpar_kernel_class_of(kind);
}

/* The bench's timer on kernels, the least timer_s of a fitted kind (0 when none), and each
 * fitted kind's floor beyond it. */
static void
tables_floors(Tables *t)
{
    double least = INFINITY;
    for (guint k = 0; k < SIMPAR_N_OP_KINDS; k++)
        if (t->fits[SIMPAR_KCLASS_N + k].fitted)
            least = MIN(least, t->fits[SIMPAR_KCLASS_N + k].timer_s);
    t->kernel_timer_s = isfinite(least) ? least : 0;
    for (guint k = 0; k < SIMPAR_N_OP_KINDS; k++) {
        TablesFit *f = &t->fits[SIMPAR_KCLASS_N + k];
        if (f->fitted)
            f->floor_s = f->timer_s - t->kernel_timer_s;
    }
}

/* The unfused attention rows of direction `bwd` (kind "attention" or "attention_bwd" with their
 * shape) into the bandwidth of the one kernel over the scores: their score bytes over their
 * times less the GEMMs (on `gpu`), the launch and the timer; the rms relative error of `gpu`'s
 * own prediction of the rows (bw 0: the platform's softmax bandwidth) in *rms. */
static double
tables_attention_bw(const SimparBench *b, const SimparGpu *gpu, const Tables *t, gboolean bwd,
                    double timer, double bw, guint *rows, double *rms)
{
    double bytes = 0, time = 0, sum = 0;
    *rows = 0;
    for (guint i = 0; i < b->kernels->len; i++) {
        const SimparBenchKernel *k = &g_array_index(b->kernels, SimparBenchKernel, i);
        if (!g_str_equal(k->kind, bwd ? "attention_bwd" : "attention") || k->heads < 1 ||
            k->seq < 1 || k->head_dim < 1 || k->batch < 1)
            continue;
        SimparAttention a = {.nb = k->batch,
                             .nh = k->heads,
                             .heads = k->heads,
                             .s = k->seq,
                             .dh = k->head_dim,
                             .causal = TRUE,
                             .p = k->dropout_p};
        double gemm, sb;
        simpar_compute_attention_parts(gpu, b->dtype, &a, bwd, &gemm, &sb);
        double left = k->time_s - timer - t->launch_s - gemm;
        if (!(left > 0))
            continue;
        double own = bw > 0 ? bw : simpar_compute_kernel_bandwidth(gpu, SIMPAR_KCLASS_SOFTMAX);
        double e = (gemm + t->launch_s + sb / own) / (k->time_s - timer) - 1;
        bytes += sb, time += left, sum += e * e, (*rows)++;
    }
    *rms = *rows > 0 ? sqrt(sum / *rows) : NAN;
    return time > 0 ? bytes / time : 0;
}

/* The attention's fits (with --topology: its curve prices the GEMMs, with this calibration's
 * GEMM table as predictions will use it). */
static void
tables_attention(const SimparBench *b, const SimparGpu *platform, Tables *t)
{
    if (platform == NULL || !(platform->peak_flops[b->dtype] > 0))
        return;
    SimparGpu gpu = *platform;
    g_autoptr(SimparGemmTable) table = t->gemm->len > 0 ? tables_gemm_table(t, G_MAXUINT) : NULL;
    if (table != NULL)
        gpu.gemm_table = table;
    double timer = t->kernel_timer_s;
    for (guint bwd = 0; bwd < 2; bwd++) {
        TablesFit *f =
            &t->fits[SIMPAR_KCLASS_N + (bwd ? SIMPAR_OP_ATTENTION_BWD : SIMPAR_OP_ATTENTION)];
        double preset;
        double bw = tables_attention_bw(b, &gpu, t, bwd, timer, 0, &f->points, &preset);
        if (!(bw > 0))
            continue;
        f->fitted = TRUE, f->timer_s = timer, f->bw_Bps = bw, f->preset = preset;
        f->time_err = f->preset_time_err = NAN;
        if (platform->mem_bw_Bps > 0 && bw > platform->mem_bw_Bps)
            f->bw_Bps = platform->mem_bw_Bps, f->held = TRUE;
        guint rows;
        tables_attention_bw(b, &gpu, t, bwd, timer, f->bw_Bps, &rows, &f->rms);
    }
}

/* Classes the bench did not time: --topology's figure times the median ratio of the fitted
 * streaming kinds' bandwidths to --topology's. */
static void
tables_scale_unmeasured(const SimparGpu *platform, Tables *t)
{
    double r[SIMPAR_N_OP_KINDS];
    guint n = 0;
    for (guint k = 0; k < SIMPAR_N_OP_KINDS; k++) {
        const TablesFit *f = &t->fits[SIMPAR_KCLASS_N + k];
        double own = simpar_compute_op_bandwidth(platform, (SimparOpKind) k);
        if (f->fitted && simpar_kernel_class_of((SimparOpKind) k) < SIMPAR_KCLASS_N && own > 0)
            r[n++] = f->bw_Bps / own;
    }
    if (n == 0)
        return;
    qsort(r, n, sizeof(double), tables_cmp_double);
    double ratio = n % 2 ? r[n / 2] : (r[n / 2 - 1] + r[n / 2]) / 2;
    for (guint c = 0; c < SIMPAR_KCLASS_N; c++) {
        TablesFit *f = &t->fits[c];
        if (f->fitted || f->points > 0)
            continue;
        f->fitted = TRUE, f->scaled = ratio, f->rms = f->preset = NAN;
        f->time_err = f->preset_time_err = NAN;
        f->bw_Bps = ratio * simpar_compute_kernel_bandwidth(platform, (SimparKernelClass) c);
        if (platform->mem_bw_Bps > 0 && f->bw_Bps > platform->mem_bw_Bps)
            f->bw_Bps = platform->mem_bw_Bps, f->held = TRUE;
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
    tables_gemm(b, platform, t);
    tables_kernels(b, t);
    tables_gemm_preset(t, platform);
    for (guint g = 0; g < TABLES_GROUPS; g++) {
        TablesFit *f = &t->fits[g];
        f->fitted = tables_fit(t, g, f);
        if (f->fitted && platform != NULL && platform->mem_bw_Bps > 0 &&
            f->bw_Bps > platform->mem_bw_Bps)
            f->bw_Bps = platform->mem_bw_Bps, f->held = TRUE;
        if (f->held)
            f->rms = tables_rms(t, g, f->timer_s, f->bw_Bps);
        f->time_err = f->fitted ? tables_time_err(t, g, f->timer_s, f->bw_Bps) : NAN;
        double preset = platform == NULL ? 0
                        : g < SIMPAR_KCLASS_N
                            ? simpar_compute_kernel_bandwidth(platform, (SimparKernelClass) g)
                            : simpar_compute_op_bandwidth(platform, g - SIMPAR_KCLASS_N);
        f->preset = preset > 0 && f->fitted ? tables_rms(t, g, f->timer_s, preset) : NAN;
        f->preset_time_err =
            preset > 0 && f->fitted ? tables_time_err(t, g, f->timer_s, preset) : NAN;
    }
    tables_floors(t);
    tables_attention(b, platform, t);
    if (platform != NULL)
        tables_scale_unmeasured(platform, t);
}

void
simpar_calibrate_tables_clear(Tables *t)
{
    if (t->gemm != NULL)
        g_array_free(t->gemm, TRUE);
    if (t->kernels != NULL)
        g_array_free(t->kernels, TRUE);
    t->gemm = t->kernels = NULL;
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

/* "kernel_bw_<class>_Bps" (transfer full). */
static char *
tables_class_key(guint c)
{
    return g_strdup_printf("kernel_bw_%s_Bps", simpar_kernel_class_name((SimparKernelClass) c));
}

void
simpar_calibrate_tables_json(const Tables *t, JsonBuilder *jb)
{
    for (guint c = 0; c < SIMPAR_KCLASS_N; c++) {
        if (!t->fits[c].fitted)
            continue;
        g_autofree char *key = tables_class_key(c);
        json_builder_set_member_name(jb, key);
        json_builder_add_double_value(jb, t->fits[c].bw_Bps);
    }
    json_builder_set_member_name(jb, "kernel_bw_Bps");
    json_builder_begin_object(jb);
    for (guint k = 0; k < SIMPAR_N_OP_KINDS; k++)
        if (t->fits[SIMPAR_KCLASS_N + k].fitted) {
            json_builder_set_member_name(jb, simpar_op_kind_name((SimparOpKind) k));
            json_builder_add_double_value(jb, t->fits[SIMPAR_KCLASS_N + k].bw_Bps);
        }
    json_builder_end_object(jb);
    json_builder_set_member_name(jb, "kernel_max_bytes"); /* each timed kind's largest row */
    json_builder_begin_object(jb);
    for (guint k = 0; k < SIMPAR_N_OP_KINDS; k++) {
        double most = 0;
        for (guint i = 0; i < t->kernels->len; i++) {
            const TablesKernel *r = &g_array_index(t->kernels, TablesKernel, i);
            if (r->kind == k)
                most = MAX(most, r->bytes);
        }
        if (t->fits[SIMPAR_KCLASS_N + k].fitted && most >= 1) {
            json_builder_set_member_name(jb, simpar_op_kind_name((SimparOpKind) k));
            json_builder_add_double_value(jb, most);
        }
    }
    json_builder_end_object(jb);
    json_builder_set_member_name(jb, "kernel_floor_s");
    json_builder_begin_object(jb);
    for (guint k = 0; k < SIMPAR_N_OP_KINDS; k++)
        if (t->fits[SIMPAR_KCLASS_N + k].fitted && t->fits[SIMPAR_KCLASS_N + k].floor_s > 0) {
            json_builder_set_member_name(jb, simpar_op_kind_name((SimparOpKind) k));
            json_builder_add_double_value(jb, t->fits[SIMPAR_KCLASS_N + k].floor_s);
        }
    json_builder_end_object(jb);
    if (t->gemm->len == 0)
        return;
    json_builder_set_member_name(jb, "gemm_table");
    json_builder_begin_array(jb);
    for (guint i = 0; i < t->gemm->len; i++)
        tables_json_gemm(jb, &g_array_index(t->gemm, SimparBenchGemm, i));
    json_builder_end_array(jb);
}

static void
tables_json_member(JsonBuilder *jb, const char *key, double v)
{
    json_builder_set_member_name(jb, key);
    if (isnan(v))
        json_builder_add_null_value(jb);
    else
        json_builder_add_double_value(jb, v);
}

/* preset: the preset's rms, median and largest relative error (the last two NAN: left out);
 * time: the summed time's relative error, the calibration's and the preset's (NAN: left out). */
static void
tables_json_group(JsonBuilder *jb, const char *name, guint points, double timer, double rms,
                  const double preset[3], const double time[2])
{
    json_builder_set_member_name(jb, name);
    json_builder_begin_object(jb);
    json_builder_set_member_name(jb, "points");
    json_builder_add_int_value(jb, points);
    tables_json_member(jb, "timer_s", timer);
    tables_json_member(jb, "rms_rel_error", rms);
    tables_json_member(jb, "preset_rms_rel_error", preset[0]);
    if (!isnan(preset[1]))
        tables_json_member(jb, "preset_median_rel_error", preset[1]);
    if (!isnan(preset[2]))
        tables_json_member(jb, "preset_max_rel_error", preset[2]);
    if (!isnan(time[0]))
        tables_json_member(jb, "time_rel_error", time[0]);
    if (!isnan(time[1]))
        tables_json_member(jb, "preset_time_rel_error", time[1]);
    json_builder_end_object(jb);
}

void
simpar_calibrate_tables_json_fit(const Tables *t, JsonBuilder *jb)
{
    if (t->gemm->len > 0) {
        const double preset[3] = {t->gemm_preset, t->gemm_preset_median, t->gemm_preset_max};
        const double none[2] = {NAN, NAN};
        tables_json_group(jb, "gemm", t->gemm->len, t->gemm_overhead_s, 0, preset, none);
    }
    if (!isnan(t->gemm_loo_median)) {
        json_builder_set_member_name(jb, "gemm_leave_one_out");
        json_builder_begin_object(jb);
        tables_json_member(jb, "median_rel_error", t->gemm_loo_median);
        tables_json_member(jb, "max_rel_error", t->gemm_loo_max);
        json_builder_end_object(jb);
    }
    for (guint kinds = 0; kinds < 2; kinds++) { /* classes, then op kinds */
        json_builder_set_member_name(jb, kinds ? "kernel_kinds" : "kernel_classes");
        json_builder_begin_object(jb);
        for (guint g = kinds ? SIMPAR_KCLASS_N : 0; g < (kinds ? TABLES_GROUPS : SIMPAR_KCLASS_N);
             g++) {
            const TablesFit *f = &t->fits[g];
            const double preset[3] = {f->preset, NAN, NAN};
            const double time[2] = {f->time_err, f->preset_time_err};
            if (f->fitted)
                tables_json_group(jb,
                                  kinds ? simpar_op_kind_name((SimparOpKind) (g - SIMPAR_KCLASS_N))
                                        : simpar_kernel_class_name((SimparKernelClass) g),
                                  f->points, f->timer_s, f->rms, preset, time);
        }
        json_builder_end_object(jb);
    }
}

/* "12.34%", or "-" for NAN (no --topology); (transfer none), a rotating static buffer. */
static const char *
tables_percent(double v)
{
    static char buf[4][16];
    static guint next;
    char *b = buf[next++ % 4];
    if (isnan(v))
        return "-";
    g_snprintf(b, 16, "%9.2f%%", 100 * v);
    return b;
}

static void
tables_print_fit(GString *out, const char *name, const TablesFit *f)
{
    if (f->fitted && f->scaled > 0)
        g_string_append_printf(out,
                               "%-16s %6u %9.1f GB/s   not measured: the platform's figure x "
                               "%.3f (the measured kinds' median ratio to the platform's)%s\n",
                               name, f->points, f->bw_Bps / 1e9, f->scaled,
                               f->held ? " (held at the datasheet bandwidth)" : "");
    else if (f->fitted)
        g_string_append_printf(out, "%-16s %6u %9.1f GB/s %6.1f us %9.2f%% %s%s\n", name, f->points,
                               f->bw_Bps / 1e9, 1e6 * f->timer_s, 100 * f->rms,
                               tables_percent(f->preset),
                               f->held ? " (held at the datasheet bandwidth)" : "");
    else if (f->points > 0)
        g_string_append_printf(out, "%-16s %6u   not fitted: fewer than 2 rows\n", name, f->points);
    else
        g_string_append_printf(out, "%-16s %6u   not measured: the platform's figure stays\n", name,
                               f->points);
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
    if (!isnan(t->gemm_loo_median))
        g_string_append_printf(out,
                               "gemm_table: each GEMM predicted from the others (leave one out): "
                               "median error %.1f%%, largest %.1f%%\n",
                               100 * t->gemm_loo_median, 100 * t->gemm_loo_max);
    if (t->gemm_timed_out > 0)
        g_string_append_printf(out,
                               "gemm_table: %u GEMMs left out: measured in less than %.0f times "
                               "the bench's timing overhead, mostly the timer; their shapes are "
                               "interpolated from the others\n",
                               t->gemm_timed_out, TABLES_TIMER_SHARE);
    if (t->gemm_zero > 0)
        g_string_append_printf(out,
                               "gemm_table: %u GEMMs left out: the bench ran them on zero-filled "
                               "buffers (above 2^27 elements; GEMMs run faster on zeros), their "
                               "shapes are interpolated from the others\n",
                               t->gemm_zero);
    g_string_append_printf(out, "\n%-16s %6s %14s %10s %10s\n", "class, kind", "rows", "bandwidth",
                           "fit rms", "preset rms");
    if (t->gemm->len > 0)
        g_string_append_printf(out, "%-16s %6u %14s %9.2f%% %s\n", "gemm", t->gemm->len, "table",
                               0.0, tables_percent(t->gemm_preset));
    for (guint c = 0; c < SIMPAR_KCLASS_N; c++) {
        tables_print_fit(out, simpar_kernel_class_name((SimparKernelClass) c), &t->fits[c]);
        for (guint k = 0; k < SIMPAR_N_OP_KINDS; k++) {
            g_autofree char *name = g_strdup_printf("  %s", simpar_op_kind_name(k));
            if (tables_kind_class(k) == c && t->fits[SIMPAR_KCLASS_N + k].points > 0)
                tables_print_fit(out, name, &t->fits[SIMPAR_KCLASS_N + k]);
        }
    }
    g_string_append_printf(out,
                           "kernel floors: the bench's timer is the least of the kinds' (%.1f "
                           "us); what a kind's holds beyond it is the kind's own fixed time, "
                           "which predictions add to the launch:",
                           1e6 * t->kernel_timer_s);
    for (guint k = 0; k < SIMPAR_N_OP_KINDS; k++)
        if (t->fits[SIMPAR_KCLASS_N + k].fitted && t->fits[SIMPAR_KCLASS_N + k].floor_s > 0)
            g_string_append_printf(out, " %s %.1f us", simpar_op_kind_name((SimparOpKind) k),
                                   1e6 * t->fits[SIMPAR_KCLASS_N + k].floor_s);
    g_string_append(out, "\n");
    g_string_append(out, "timer: what the bench adds to each measurement (GEMMs: its smallest "
                         "GEMM's time less the launch floor; kernels: the fitted floor of t = "
                         "floor + bytes / bandwidth less it), taken off; rms relative errors on "
                         "the rows less it: the calibration (GEMMs: the table itself; kernels: "
                         "launch_s + bytes / bandwidth, each kind its own, each class pooled for "
                         "the kinds the bench did not time), --topology's own figures (preset)\n");
}

gboolean
simpar_calibrate_tables_check(const Tables *t, GError **error)
{
    for (guint g = 0; g < TABLES_GROUPS; g++) {
        if (!t->fits[g].fitted)
            continue;
        /* a kind's bandwidth has its class's range */
        g_autofree char *key = tables_class_key(
            g < SIMPAR_KCLASS_N ? g : tables_kind_class((SimparOpKind) (g - SIMPAR_KCLASS_N)));
        if (!simpar_calibration_figure_check(key, t->fits[g].bw_Bps, error))
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
