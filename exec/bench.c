/* bench.c - microbenchmarks (simpar-exec --bench): each measurement is a one-op schedule run
 * through the same executor interface as a measured run, with warm-up and repeats; BENCH.json
 * keeps the median, min and max of the repeats.
 *
 *   gemm         the job's linears (qkv, proj, fc1, fc2: forward, data and weight gradients)
 *                with b*s tokens at T = 1, 2, 4, 8 shards (quick: T = 1), then squares
 *                256..8192 (host: 32..128; quick: 32, 64)     flops = 2 m n k batch
 *   kernels      ln_stats ... adam at rows = b*s/64, b*s/8, b*s by h columns (quick: b*s/8);
 *                attention[_bwd] on b sequences of s with heads/8 and all heads (quick: heads/8);
 *                bytes = simpar_compute_op_cost(), the compute model's count
 *   collectives  every kind over --gpus ranks, nccl-tests sizes S doubling from --min-bytes to
 *                --max-bytes (count = S / size, / gpus for all-gather, reduce-scatter and
 *                all-to-all; sizes whose count would be 0 are skipped); algbw = S / t, busbw =
 *                algbw x 2(n-1)/n (all-reduce), (n-1)/n (all-gather, reduce-scatter, all-to-all)
 *
 * Shapes come from the job options: model tiny for the host executor, gpt3-13b (h=5120, s=2048,
 * b=4, f=20480) for cuda, whose default dtype is bf16. A repeat's time is its op's end - start;
 * for a collective, the last member's end - the last member's start (from when every member
 * has arrived). Inputs: uniform in [0.5, 1.5) (layer-norm variances stay positive), except
 * buffers of more than 2^27 elements; collectives move zeros.
 */
#include "measure.h"
#include <math.h>
#include <stdlib.h>

typedef struct {
    const SimparBenchOptions *opts;
    const SimparExecWorld *world;
    SimparExecConfig cfg;
    SimparModel model;
    guint warmup, repeats, gpus;
    guint64 min_bytes, max_bytes;
    char *device; /* the first executor's */
    JsonBuilder *b;
    GString *text;
} Bench;

typedef struct {
    double median, min, max;
} BenchTime;

/* ---- measuring one schedule --------------------------------------------------------------- */

#define BENCH_SEED G_GUINT64_CONSTANT(0x853c49e6748fea9b)

/* Every buffer random where it lives (a kernel on a GPU): uniform in [0.5, 1.5) (layer-norm
 * variances stay positive), token ids and targets whole numbers in [0, ids). */
static gboolean
bench_fill(SimparExecutor *ex, const SimparSchedule *sched, guint64 ids, GError **error)
{
    for (guint b = 0; b < simpar_schedule_n_buffers(sched); b++) {
        const char *name = simpar_schedule_buffer(sched, b)->name;
        gboolean id = g_str_equal(name, "tokens") || g_str_equal(name, "targets");
        if (!simpar_executor_randomize(ex, b, BENCH_SEED + b, id ? ids : 0, error))
            return FALSE;
    }
    return TRUE;
}

static int
bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *) a, y = *(const double *) b;
    return (x > y) - (x < y);
}

/* Last start to last end over the ops (one op: its duration). */
static double
bench_span(const SimparSpan *spans, guint n)
{
    double s = 0, e = 0;
    for (guint i = 0; i < n; i++)
        s = MAX(s, spans[i].start), e = MAX(e, spans[i].end);
    return e - s;
}

static gboolean
bench_time(Bench *bn, const SimparSchedule *sched, gboolean fill, BenchTime *t, GError **error)
{
    SimparExecConfig cfg = bn->cfg;
    cfg.n_devices = MIN(cfg.n_devices, simpar_schedule_n_ranks(sched));
    g_autoptr(SimparExecutor) ex =
        simpar_executor_new(bn->opts->executor, sched, bn->world, &cfg, error);
    if (ex == NULL || (fill && !bench_fill(ex, sched, (guint64) bn->model.vocab, error)))
        return FALSE;
    if (bn->device == NULL)
        bn->device = g_strdup(simpar_executor_device(ex));
    guint n = simpar_schedule_n_ops(sched);
    g_autofree SimparSpan *spans = g_new(SimparSpan, n);
    g_autofree double *times = g_new(double, bn->repeats);
    for (guint i = 0; i < bn->warmup + bn->repeats; i++) {
        if (!simpar_executor_run(ex, spans, error))
            return FALSE;
        if (i >= bn->warmup)
            times[i - bn->warmup] = bench_span(spans, n);
    }
    qsort(times, bn->repeats, sizeof(double), bench_cmp_double);
    *t = (BenchTime){times[(bn->repeats - 1) / 2], times[0], times[bn->repeats - 1]};
    return TRUE;
}

static void
bench_member_double(JsonBuilder *b, const char *key, double v)
{
    json_builder_set_member_name(b, key);
    json_builder_add_double_value(b, v);
}

static void
bench_member_int(JsonBuilder *b, const char *key, gint64 v)
{
    json_builder_set_member_name(b, key);
    json_builder_add_int_value(b, v);
}

static void
bench_member_str(JsonBuilder *b, const char *key, const char *v)
{
    json_builder_set_member_name(b, key);
    json_builder_add_string_value(b, v);
}

static void
bench_member_times(JsonBuilder *b, const BenchTime *t)
{
    bench_member_double(b, "time_s", t->median);
    bench_member_double(b, "min_s", t->min);
    bench_member_double(b, "max_s", t->max);
}

/* BENCH.json's names: "ln_apply", "attention_bwd" (kinds), "allreduce", "reducescatter",
 * "alltoall" (collectives, as nccl-tests names them). */
static char *
bench_name(const char *name, char hyphen)
{
    GString *s = g_string_new(NULL);
    for (const char *p = name; *p != '\0'; p++)
        if (*p != '-' || hyphen != '\0')
            g_string_append_c(s, *p == '-' ? hyphen : *p);
    return g_string_free(s, FALSE); /* (transfer full) */
}

static const char *
bench_dtype(const Bench *bn)
{
    return simpar_dtype_name(bn->model.dtype);
}

/* ---- GEMM --------------------------------------------------------------------------------- */

typedef struct {
    char name[32];
    guint m, n, k;
    gboolean ta, tb;
} BenchGemm;

static SimparSchedule *
bench_gemm_schedule(SimparDtype dtype, const BenchGemm *g)
{
    SimparSchedule *s = simpar_schedule_new(1, dtype);
    guint a = simpar_schedule_add_buffer(s, 0, "a", (gsize) g->m * g->k);
    guint b = simpar_schedule_add_buffer(s, 0, "b", (gsize) g->k * g->n);
    guint c = simpar_schedule_add_buffer(s, 0, "c", (gsize) g->m * g->n);
    SimparOp op = {.kind = SIMPAR_OP_GEMM, .name = "bench.gemm"};
    op.u.gemm =
        (SimparGemm){g->m, g->n, g->k, 1, g->ta, g->tb, FALSE, 0, 0, 0, {a, 0}, {b, 0}, {c, 0}};
    simpar_schedule_add_op(s, &op);
    return s; /* (transfer full) */
}

static gboolean
bench_gemm_one(Bench *bn, const BenchGemm *g, GError **error)
{
    g_autoptr(SimparSchedule) s = bench_gemm_schedule(bn->model.dtype, g);
    BenchTime t;
    if (!bench_time(bn, s, TRUE, &t, error))
        return FALSE;
    double flops = 2.0 * g->m * g->n * g->k * 1.0;
    JsonBuilder *b = bn->b;
    json_builder_begin_object(b);
    bench_member_str(b, "name", g->name);
    bench_member_int(b, "m", g->m);
    bench_member_int(b, "n", g->n);
    bench_member_int(b, "k", g->k);
    bench_member_int(b, "batch", 1);
    json_builder_set_member_name(b, "trans_a");
    json_builder_add_boolean_value(b, g->ta);
    json_builder_set_member_name(b, "trans_b");
    json_builder_add_boolean_value(b, g->tb);
    bench_member_str(b, "dtype", bench_dtype(bn));
    bench_member_double(b, "flops", flops);
    bench_member_times(b, &t);
    bench_member_double(b, "tflops", flops / t.median / 1e12);
    json_builder_end_object(b);
    g_string_append_printf(bn->text, "  %-16s %6u x %6u x %6u %s%s  %10.3g s  %8.3g TFLOP/s\n",
                           g->name, g->m, g->n, g->k, g->ta ? "T" : "N", g->tb ? "T" : "N",
                           t.median, flops / t.median / 1e12);
    return TRUE;
}

/* Appends `g` unless an equal shape is there already. */
static void
bench_gemm_add(GArray *list, BenchGemm g)
{
    for (guint i = 0; i < list->len; i++) {
        const BenchGemm *o = &g_array_index(list, BenchGemm, i);
        if (o->m == g.m && o->n == g.n && o->k == g.k && o->ta == g.ta && o->tb == g.tb)
            return;
    }
    g_array_append_val(list, g);
}

/* A linear x[bs x in] . W[in x out] split T ways on `out` (column-parallel) or `in` (row). */
static void
bench_gemm_linear(GArray *list, const char *name, guint bs, guint in, guint out, guint t,
                  gboolean split_out)
{
    guint i = split_out ? in : in / t, o = split_out ? out / t : out;

    const struct {
        const char *pass;
        guint m, n, k;
        gboolean ta, tb;
    } passes[] = {{"fwd", bs, o, i, FALSE, FALSE},   /* y = x W */
                  {"dgrad", bs, i, o, FALSE, TRUE},  /* dx = dy W^T */
                  {"wgrad", i, o, bs, TRUE, FALSE}}; /* dW = x^T dy */

    for (guint p = 0; p < G_N_ELEMENTS(passes); p++) {
        BenchGemm g = {"", passes[p].m, passes[p].n, passes[p].k, passes[p].ta, passes[p].tb};
        g_snprintf(g.name, sizeof g.name, "%s.%s/T%u", name, passes[p].pass, t);
        bench_gemm_add(list, g);
    }
}

static GArray *
bench_gemm_shapes(const Bench *bn)
{
    GArray *list = g_array_new(FALSE, FALSE, sizeof(BenchGemm));
    const SimparModel *m = &bn->model;
    guint bs = (guint) (m->micro_batch * m->seq), h = (guint) m->hidden, f = (guint) m->ffn;
    for (guint t = 1; t <= (bn->opts->quick ? 1 : 8); t *= 2) {
        if (h % t != 0 || f % t != 0)
            continue;
        bench_gemm_linear(list, "qkv", bs, h, 3 * h, t, TRUE);
        bench_gemm_linear(list, "proj", bs, h, h, t, FALSE);
        bench_gemm_linear(list, "fc1", bs, h, f, t, TRUE);
        bench_gemm_linear(list, "fc2", bs, f, h, t, FALSE);
    }
    gboolean host = !g_str_equal(bn->opts->executor->name, "cuda");
    guint lo = host ? 32 : 256, hi = host ? (bn->opts->quick ? 64 : 128) : 8192;
    for (guint n = lo; n <= hi; n *= 2) {
        BenchGemm g = {"square", n, n, n, FALSE, FALSE};
        bench_gemm_add(list, g);
    }
    return list; /* (transfer full) */
}

static gboolean
bench_gemm(Bench *bn, GError **error)
{
    g_autoptr(GArray) list = bench_gemm_shapes(bn);
    g_string_append_printf(bn->text, "gemm (%s): name, m x n x k, op(a) op(b), median time\n",
                           bench_dtype(bn));
    for (guint i = 0; i < list->len; i++)
        if (!bench_gemm_one(bn, &g_array_index(list, BenchGemm, i), error))
            return FALSE;
    return TRUE;
}

/* ---- kernels ------------------------------------------------------------------------------ */

enum {
    L_NONE,
    L_RC, /* rows x cols */
    L_R2, /* 2 x rows (statistics) */
    L_C,  /* cols (a parameter row) */
    L_R,  /* rows */
};

/* The views of each kind (schedule.h, SimparKernel): lengths of in[0..4] and out[0..2]. */
static const struct {
    SimparOpKind kind;
    guint8 in[5], out[3];
} bench_kernels[] = {
    {SIMPAR_OP_LN_STATS, {L_RC}, {L_R2}},
    {SIMPAR_OP_LN_APPLY, {L_RC, L_R2, L_C, L_C}, {L_RC, L_RC, L_R}},
    {SIMPAR_OP_LN_BWD_STATS, {L_RC, L_RC, L_C}, {L_R2, L_C, L_C}},
    {SIMPAR_OP_LN_BWD_APPLY, {L_RC, L_RC, L_C, L_R, L_R2}, {L_RC}},
    {SIMPAR_OP_BIAS_ADD, {L_C}, {L_RC}},
    {SIMPAR_OP_BIAS_GRAD, {L_RC}, {L_C}},
    {SIMPAR_OP_GELU, {L_RC}, {L_RC}},
    {SIMPAR_OP_GELU_BWD, {L_RC, L_RC}, {L_RC}},
    {SIMPAR_OP_DROPOUT, {L_RC}, {L_RC}},
    {SIMPAR_OP_ADD, {L_RC, L_RC}, {L_RC}},
};

static SimparView
bench_buffer(SimparSchedule *s, guint8 len, guint rows, guint cols)
{
    gsize n = len == L_RC   ? (gsize) rows * cols
              : len == L_R2 ? 2 * (gsize) rows
              : len == L_C  ? cols
                            : rows;
    return (SimparView){simpar_schedule_add_buffer(s, 0, "v", n), 0};
}

static SimparSchedule *
bench_kernel_schedule(SimparDtype dtype, guint which, guint rows, guint cols)
{
    SimparSchedule *s = simpar_schedule_new(1, dtype);
    SimparOp op = {.kind = bench_kernels[which].kind, .name = "bench.kernel"};
    SimparKernel *k = &op.u.kern;
    *k = (SimparKernel){.rows = rows,
                        .cols = cols,
                        .hidden = cols,
                        .eps = 1e-5,
                        .p = 0.1,
                        .seed = 1,
                        .global_cols = cols};
    for (guint i = 0; i < 5; i++)
        if (bench_kernels[which].in[i] != L_NONE)
            k->in[i] = bench_buffer(s, bench_kernels[which].in[i], rows, cols);
    for (guint i = 0; i < 3; i++)
        if (bench_kernels[which].out[i] != L_NONE)
            k->out[i] = bench_buffer(s, bench_kernels[which].out[i], rows, cols);
    simpar_schedule_add_op(s, &op);
    return s; /* (transfer full) */
}

static SimparSchedule *
bench_adam_schedule(SimparDtype dtype, gsize count)
{
    SimparSchedule *s = simpar_schedule_new(1, dtype);
    SimparOp op = {.kind = SIMPAR_OP_ADAM, .name = "bench.adam"};
    SimparView v[4];
    for (guint i = 0; i < 4; i++)
        v[i] = (SimparView){simpar_schedule_add_buffer(s, 0, "v", count), 0};
    op.u.adam = (SimparAdam){count, 1e-4, 0.9, 0.95, 1e-8, 0.1, 1, v[0], v[1], v[2], v[3]};
    simpar_schedule_add_op(s, &op);
    return s; /* (transfer full) */
}

static SimparSchedule *
bench_attention_schedule(SimparDtype dtype, gboolean bwd, guint nb, guint nh, guint seq, guint dh)
{
    SimparSchedule *s = simpar_schedule_new(1, dtype);
    SimparOp op = {.kind = bwd ? SIMPAR_OP_ATTENTION_BWD : SIMPAR_OP_ATTENTION,
                   .name = "bench.attention"};
    SimparAttention *a = &op.u.attn;
    *a = (SimparAttention){
        .nb = nb, .nh = nh, .s = seq, .dh = dh, .causal = TRUE, .p = 0.1, .seed = 1, .heads = nh};
    gsize ctx = (gsize) nb * seq * nh * dh, probs = (gsize) nb * nh * seq * seq;
    a->in[0] = (SimparView){simpar_schedule_add_buffer(s, 0, "qkv", 3 * ctx), 0};
    if (bwd) {
        a->in[1] = (SimparView){simpar_schedule_add_buffer(s, 0, "probs", probs), 0};
        a->in[2] = (SimparView){simpar_schedule_add_buffer(s, 0, "dctx", ctx), 0};
        a->out[0] = (SimparView){simpar_schedule_add_buffer(s, 0, "dqkv", 3 * ctx), 0};
    } else {
        a->out[0] = (SimparView){simpar_schedule_add_buffer(s, 0, "ctx", ctx), 0};
        a->out[1] = (SimparView){simpar_schedule_add_buffer(s, 0, "probs", probs), 0};
    }
    simpar_schedule_add_op(s, &op);
    return s; /* (transfer full) */
}

/* Measures the one-op schedule `s` and writes its entry (rows x cols as the caller names them). */
static gboolean
bench_kernel_one(Bench *bn, SimparSchedule *s, guint rows, guint cols, GError **error)
{
    const SimparOp *op = simpar_schedule_op(s, 0);
    double flops, bytes;
    simpar_compute_op_cost(s, op, SIMPAR_ATTENTION_UNFUSED, &flops, &bytes);
    BenchTime t;
    if (!bench_time(bn, s, TRUE, &t, error))
        return FALSE;
    JsonBuilder *b = bn->b;
    g_autofree char *kind = bench_name(simpar_op_kind_name(op->kind), '_');
    json_builder_begin_object(b);
    bench_member_str(b, "kind", kind);
    bench_member_int(b, "rows", rows);
    bench_member_int(b, "cols", cols);
    if (op->kind == SIMPAR_OP_ATTENTION || op->kind == SIMPAR_OP_ATTENTION_BWD) {
        bench_member_int(b, "batch", op->u.attn.nb);
        bench_member_int(b, "heads", op->u.attn.nh);
        bench_member_int(b, "seq", op->u.attn.s);
        bench_member_int(b, "head_dim", op->u.attn.dh);
        bench_member_double(b, "flops", flops);
    }
    bench_member_str(b, "dtype", bench_dtype(bn));
    bench_member_double(b, "bytes", bytes);
    bench_member_times(b, &t);
    bench_member_double(b, "GBps", bytes / t.median / 1e9);
    json_builder_end_object(b);
    g_string_append_printf(bn->text, "  %-14s %7u x %6u  %12.0f B  %10.3g s  %8.3g GB/s\n", kind,
                           rows, cols, bytes, t.median, bytes / t.median / 1e9);
    return TRUE;
}

/* Row counts b*s/64, b*s/8, b*s (quick: b*s/8), at least 1, without repeats. */
static guint
bench_kernel_rows(const Bench *bn, guint rows[3])
{
    guint bs = (guint) (bn->model.micro_batch * bn->model.seq), n = 0;
    guint divs[] = {64, 8, 1};
    for (guint i = 0; i < G_N_ELEMENTS(divs); i++) {
        guint r = MAX(bs / divs[i], 1);
        if ((bn->opts->quick && divs[i] != 8) || (n > 0 && rows[n - 1] == r))
            continue;
        rows[n++] = r;
    }
    return n;
}

static gboolean
bench_attention(Bench *bn, GError **error)
{
    const SimparModel *m = &bn->model;
    guint heads = (guint) m->heads, dh = (guint) (m->hidden / m->heads), seq = (guint) m->seq;
    guint nhs[] = {MAX(heads / 8, 1), heads};
    for (guint i = 0; i < (bn->opts->quick || nhs[0] == nhs[1] ? 1 : 2); i++)
        for (guint bwd = 0; bwd < 2; bwd++) {
            g_autoptr(SimparSchedule) s =
                bench_attention_schedule(m->dtype, bwd, (guint) m->micro_batch, nhs[i], seq, dh);
            if (!bench_kernel_one(bn, s, (guint) m->micro_batch * seq, nhs[i] * dh, error))
                return FALSE;
        }
    return TRUE;
}

static gboolean
bench_kernel_sizes(Bench *bn, GError **error)
{
    guint rows[3], cols = (guint) bn->model.hidden;
    guint n_rows = bench_kernel_rows(bn, rows);
    for (guint k = 0; k <= G_N_ELEMENTS(bench_kernels); k++)
        for (guint r = 0; r < n_rows; r++) {
            g_autoptr(SimparSchedule) s =
                k < G_N_ELEMENTS(bench_kernels)
                    ? bench_kernel_schedule(bn->model.dtype, k, rows[r], cols)
                    : bench_adam_schedule(bn->model.dtype, (gsize) rows[r] * cols);
            if (!bench_kernel_one(bn, s, rows[r], cols, error))
                return FALSE;
        }
    return TRUE;
}

static gboolean
bench_kernels_all(Bench *bn, GError **error)
{
    g_string_append_printf(bn->text, "kernels (%s): kind, rows x cols, model bytes, median\n",
                           bench_dtype(bn));
    return bench_kernel_sizes(bn, error) && bench_attention(bn, error);
}

/* ---- collectives -------------------------------------------------------------------------- */

static gboolean
bench_coll_scatters(SimparCollKind kind)
{
    return kind == SIMPAR_COLL_ALL_GATHER || kind == SIMPAR_COLL_REDUCE_SCATTER ||
           kind == SIMPAR_COLL_ALL_TO_ALL;
}

static SimparSchedule *
bench_coll_schedule(SimparDtype dtype, SimparCollKind kind, guint gpus, gsize count)
{
    SimparSchedule *s = simpar_schedule_new(gpus, dtype);
    g_autofree guint *ranks = g_new(guint, gpus);
    for (guint r = 0; r < gpus; r++)
        ranks[r] = r;
    guint group = simpar_schedule_add_group(s, "bench", ranks, gpus);
    gsize all = (gsize) gpus * count;
    gsize send = kind == SIMPAR_COLL_REDUCE_SCATTER || kind == SIMPAR_COLL_ALL_TO_ALL ? all : count;
    gsize recv = kind == SIMPAR_COLL_ALL_GATHER || kind == SIMPAR_COLL_ALL_TO_ALL ? all : count;
    for (guint r = 0; r < gpus; r++) {
        SimparOp op = {.kind = SIMPAR_OP_COLLECTIVE, .rank = r, .name = "bench.collective"};
        SimparView sv = {simpar_schedule_add_buffer(s, r, "send", send), 0};
        SimparView rv = {simpar_schedule_add_buffer(s, r, "recv", recv), 0};
        op.u.coll = (SimparColl){kind, group, count, 0, sv, rv, SIMPAR_RED_SUM};
        simpar_schedule_add_op(s, &op);
    }
    return s; /* (transfer full) */
}

static gboolean
bench_coll_one(Bench *bn, SimparCollKind kind, gsize count, GError **error)
{
    guint ds = simpar_dtype_size(bn->model.dtype), n = bn->gpus;
    g_autoptr(SimparSchedule) s = bench_coll_schedule(bn->model.dtype, kind, n, count);
    BenchTime t;
    if (!bench_time(bn, s, FALSE, &t, error))
        return FALSE;
    double bytes = (double) count * ds * (bench_coll_scatters(kind) ? n : 1);
    double algbw = bytes / t.median / 1e9, busbw = algbw * simpar_coll_busbw_factor(kind, n);
    JsonBuilder *b = bn->b;
    g_autofree char *name = bench_name(simpar_coll_kind_name(kind), '\0');
    json_builder_begin_object(b);
    bench_member_str(b, "op", name);
    bench_member_int(b, "gpus", n);
    bench_member_int(b, "bytes", (gint64) bytes);
    bench_member_int(b, "count", (gint64) count);
    bench_member_str(b, "dtype", bench_dtype(bn));
    bench_member_times(b, &t);
    bench_member_double(b, "algbw_GBps", algbw);
    bench_member_double(b, "busbw_GBps", busbw);
    json_builder_end_object(b);
    g_string_append_printf(bn->text,
                           "  %-14s %12.0f B  %10.3g s  algbw %8.3g GB/s  busbw %8.3g GB/s\n", name,
                           bytes, t.median, algbw, busbw);
    return TRUE;
}

static gboolean
bench_collectives(Bench *bn, GError **error)
{
    guint ds = simpar_dtype_size(bn->model.dtype);
    g_string_append_printf(bn->text, "collectives (%s, %u ranks): op, nccl-tests bytes, median\n",
                           bench_dtype(bn), bn->gpus);
    for (guint k = 0; k < SIMPAR_N_COLL_KINDS; k++) {
        guint per = ds * (bench_coll_scatters(k) ? bn->gpus : 1);
        for (guint64 size = bn->min_bytes; size <= bn->max_bytes; size *= 2)
            if (size / per > 0 && !bench_coll_one(bn, k, size / per, error))
                return FALSE;
    }
    return TRUE;
}

/* ---- the bench ---------------------------------------------------------------------------- */

static gboolean
bench_setup(Bench *bn, const SimparBenchOptions *o, GError **error)
{
    gboolean cuda = g_str_equal(o->executor->name, "cuda");
    if (!simpar_job_model(&o->job, cuda ? "gpt3-13b" : "tiny", &bn->model, error))
        return FALSE;
    if (cuda && o->job.dtype == NULL)
        bn->model.dtype = SIMPAR_DTYPE_BF16;
    bn->cfg = o->cfg;
    bn->warmup = o->warmup != G_MAXUINT ? o->warmup : o->quick ? 1 : 2;
    bn->repeats = o->repeats != 0 ? o->repeats : o->quick ? 3 : 10;
    bn->min_bytes = o->min_bytes != 0 ? o->min_bytes : 8;
    bn->max_bytes = o->max_bytes != 0 ? o->max_bytes
                    : cuda            ? (o->quick ? 64u << 20 : G_GUINT64_CONSTANT(1) << 30)
                                      : (o->quick ? 64u << 10 : 16u << 20);
    bn->gpus = o->gpus;
    if (o->collectives && bn->gpus == 0 && !o->executor->default_gpus(&bn->gpus, error))
        return FALSE;
    if (bn->min_bytes > bn->max_bytes) {
        g_set_error(error, SIMPAR_EXEC_ERROR, SIMPAR_EXEC_ERROR_USAGE,
                    "--min-bytes %" G_GUINT64_FORMAT " is above --max-bytes %" G_GUINT64_FORMAT,
                    bn->min_bytes, bn->max_bytes);
        return FALSE;
    }
    if (o->cfg.devices != NULL && o->collectives && o->cfg.n_devices < bn->gpus) {
        g_set_error(error, SIMPAR_EXEC_ERROR, SIMPAR_EXEC_ERROR_USAGE,
                    "--devices lists %u GPUs, fewer than --gpus %u", o->cfg.n_devices, bn->gpus);
        return FALSE;
    }
    return TRUE;
}

static void
bench_header(Bench *bn)
{
    JsonBuilder *b = bn->b;
    bench_member_str(b, "format", "simpar-bench");
    bench_member_int(b, "version", 1);
    bench_member_str(b, "executor", bn->opts->executor->name);
    bench_member_str(b, "device", bn->device != NULL ? bn->device : "(nothing measured)");
    bench_member_str(b, "model", bn->model.name);
    bench_member_str(b, "dtype", bench_dtype(bn));
    json_builder_set_member_name(b, "tf32");
    json_builder_add_boolean_value(b, bn->cfg.tf32);
    bench_member_int(b, "gpus", bn->gpus);
    bench_member_int(b, "warmup", bn->warmup);
    bench_member_int(b, "repeats", bn->repeats);
}

/* One section: an array, measured when `on`, else empty. */
static gboolean
bench_section(Bench *bn, const char *key, gboolean on, gboolean (*fn)(Bench *, GError **),
              GError **error)
{
    json_builder_set_member_name(bn->b, key);
    json_builder_begin_array(bn->b);
    gboolean ok = !on || fn(bn, error);
    json_builder_end_array(bn->b);
    return ok;
}

JsonNode *
simpar_bench_run(const SimparBenchOptions *opts, const SimparExecWorld *world, char **text,
                 GError **error)
{
    g_return_val_if_fail(error == NULL || *error == NULL, NULL);
    Bench bn = {.opts = opts, .world = world};
    if (!bench_setup(&bn, opts, error))
        return NULL;
    g_autoptr(JsonBuilder) sections = json_builder_new();
    g_autoptr(GString) body = g_string_new(NULL);
    bn.b = sections, bn.text = body;
    json_builder_begin_object(sections);
    if (!bench_section(&bn, "gemm", opts->gemm, bench_gemm, error) ||
        !bench_section(&bn, "kernels", opts->kernels, bench_kernels_all, error) ||
        !bench_section(&bn, "collectives", opts->collectives, bench_collectives, error)) {
        g_free(bn.device);
        return NULL;
    }
    json_builder_end_object(sections);
    /* the header names the device, known once an executor ran: build it, then add the sections */
    g_autoptr(JsonBuilder) b = json_builder_new();
    bn.b = b;
    json_builder_begin_object(b);
    bench_header(&bn);
    json_builder_end_object(b);
    JsonNode *root = json_builder_get_root(b);
    g_autoptr(JsonNode) parts = json_builder_get_root(sections);
    JsonObject *obj = json_node_get_object(parts);
    const char *keys[] = {"gemm", "kernels", "collectives"};
    for (guint i = 0; i < G_N_ELEMENTS(keys); i++)
        json_object_set_member(json_node_get_object(root), keys[i],
                               json_node_copy(json_object_get_member(obj, keys[i])));
    *text = g_strdup_printf("executor: %s on %s, model %s, %u warm-up, %u repeats\n%s",
                            opts->executor->name, bn.device != NULL ? bn.device : "-",
                            bn.model.name, bn.warmup, bn.repeats, body->str);
    g_free(bn.device);
    return root; /* (transfer full) */
}
