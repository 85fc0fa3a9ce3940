/* bench.c - microbenchmarks (simpar-exec --bench): each group of measurements is one schedule
 * of independent ops (one per shape or size, each on buffers of its own) run through the same
 * executor interface as a measured run, with warm-up and repeats; every repeat runs each op
 * once, and BENCH.json keeps the median, min and max of each op's times. One executor per
 * group, not per measurement: setting up a GPU's buffers, streams and communicators costs more
 * than most of the kernels it times.
 *
 *   gemm         the job's linears (qkv, proj, fc1, fc2: forward, data and weight gradients)
 *                with b*s tokens at T = 1, 2, 4, 8 shards (quick: T = 1), then squares
 *                256..8192 (host: 32..128; quick: 32, 64)     flops = 2 m n k batch
 *   kernels      every streaming kind of the compute model (layer norm, bias, GeLU, SwiGLU,
 *                dropout, add, embedding, cross-entropy, Adam), each at rows x h (x V for the
 *                cross-entropy) from launch-bound to bandwidth-bound: rows 64, 512, 4096, then
 *                x 8 up to four times the layer's largest tensor (host: 2^18 elements; quick:
 *                b*s/8 rows); Adam's largest covers the parameters of more than a layer;
 *                bytes = simpar_compute_op_cost(), the compute model's count
 *   attention    attention[_bwd] (unfused: GEMMs and the softmax kernels) on b sequences by
 *                sequence s/4, s/2, s, heads a/8 and a, and head dimension h/a and twice it
 *                (quick: s, a/8, h/a)
 *   collectives  with at least two ranks: every kind over --gpus ranks, nccl-tests sizes S
 *                doubling from --min-bytes to --max-bytes (count = S / size, / gpus for
 *                all-gather, reduce-scatter and all-to-all; sizes whose count would be 0 are
 *                skipped); algbw = S / t, busbw = algbw x 2(n-1)/n (all-reduce), (n-1)/n
 *                (all-gather, reduce-scatter, all-to-all). One GPU: none
 *
 * Shapes come from the job options: model tiny for the host executor, gpt3-13b (h=5120, s=2048,
 * b=4, f=20480) for cuda, whose default dtype is bf16. A repeat's time is its op's end - start;
 * for a collective, the last member's end - the last member's start (from when every member
 * has arrived). Inputs: every buffer random where it lives (simpar_executor_randomize: a kernel
 * on a GPU), uniform in [0.5, 1.5) (layer-norm variances stay positive), token ids and targets
 * whole numbers in [0, V); BENCH.json says "inputs": "random". A progress line per group goes
 * to opts->progress.
 */
#include "measure.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

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

/* Runs `sched` warm-up + repeats times on one executor. per_op (a group of independent ops on
 * one rank, buffers random): t[i] gets op i's own times; otherwise (a collective's members,
 * buffers zero) t[0] gets bench_span's over all ops. */
static gboolean
bench_time(Bench *bn, const SimparSchedule *sched, gboolean per_op, BenchTime *t, GError **error)
{
    SimparExecConfig cfg = bn->cfg;
    cfg.n_devices = MIN(cfg.n_devices, simpar_schedule_n_ranks(sched));
    g_autoptr(SimparExecutor) ex =
        simpar_executor_new(bn->opts->executor, sched, bn->world, &cfg, error);
    if (ex == NULL || (per_op && !bench_fill(ex, sched, (guint64) bn->model.vocab, error)))
        return FALSE;
    if (bn->device == NULL)
        bn->device = g_strdup(simpar_executor_device(ex));
    guint n = simpar_schedule_n_ops(sched), m = per_op ? n : 1, reps = bn->repeats;
    g_autofree SimparSpan *spans = g_new(SimparSpan, n);
    g_autofree double *times = g_new(double, (gsize) m *reps); /* [op][repeat] */
    for (guint i = 0; i < bn->warmup + reps; i++) {
        if (!simpar_executor_run(ex, spans, error))
            return FALSE;
        for (guint j = 0; j < m && i >= bn->warmup; j++)
            times[j * reps + i - bn->warmup] =
                per_op ? spans[j].end - spans[j].start : bench_span(spans, n);
    }
    for (guint j = 0; j < m; j++) {
        double *tj = times + (gsize) j * reps;
        qsort(tj, reps, sizeof(double), bench_cmp_double);
        t[j] = (BenchTime){tj[(reps - 1) / 2], tj[0], tj[reps - 1]};
    }
    return TRUE;
}

/* One line on the progress callback: what a group measured and how long it took. */
static void bench_progress(const Bench *bn, gint64 since, const char *format, ...)
    G_GNUC_PRINTF(3, 4);

static void
bench_progress(const Bench *bn, gint64 since, const char *format, ...)
{
    if (bn->opts->progress == NULL)
        return;
    va_list ap;
    va_start(ap, format);
    g_autofree char *what = g_strdup_vprintf(format, ap);
    va_end(ap);
    g_autofree char *line = g_strdup_printf("simpar-exec --bench: %s, %.2f s", what,
                                            (double) (g_get_monotonic_time() - since) * 1e-6);
    bn->opts->progress(line);
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
    guint group; /* T, or 0 for the squares: one schedule per group */
} BenchGemm;

static void
bench_gemm_add_op(SimparSchedule *s, const BenchGemm *g)
{
    guint a = simpar_schedule_add_buffer(s, 0, "a", (gsize) g->m * g->k);
    guint b = simpar_schedule_add_buffer(s, 0, "b", (gsize) g->k * g->n);
    guint c = simpar_schedule_add_buffer(s, 0, "c", (gsize) g->m * g->n);
    SimparOp op = {.kind = SIMPAR_OP_GEMM, .name = "bench.gemm"};
    op.u.gemm = (SimparGemm){g->m, g->n, g->k,   1,      g->ta,  g->tb, FALSE, 0,
                             0,    0,    {a, 0}, {b, 0}, {c, 0}, 0,     0,     0};
    simpar_schedule_add_op(s, &op);
}

static void
bench_gemm_entry(Bench *bn, const BenchGemm *g, const BenchTime *t)
{
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
    bench_member_times(b, t);
    bench_member_double(b, "tflops", flops / t->median / 1e12);
    json_builder_end_object(b);
    g_string_append_printf(bn->text, "  %-16s %6u x %6u x %6u %s%s  %10.3g s  %8.3g TFLOP/s\n",
                           g->name, g->m, g->n, g->k, g->ta ? "T" : "N", g->tb ? "T" : "N",
                           t->median, flops / t->median / 1e12);
}

/* The `n` shapes of one group in one schedule. */
static gboolean
bench_gemm_group(Bench *bn, const BenchGemm *g, guint n, GError **error)
{
    gint64 t0 = g_get_monotonic_time();
    g_autoptr(SimparSchedule) s = simpar_schedule_new(1, bn->model.dtype);
    for (guint i = 0; i < n; i++)
        bench_gemm_add_op(s, &g[i]);
    g_autofree BenchTime *t = g_new(BenchTime, n);
    if (!bench_time(bn, s, TRUE, t, error))
        return FALSE;
    for (guint i = 0; i < n; i++)
        bench_gemm_entry(bn, &g[i], &t[i]);
    if (g[0].group > 0)
        bench_progress(bn, t0, "gemm, the linears at T = %u: %u shapes", g[0].group, n);
    else
        bench_progress(bn, t0, "gemm, squares: %u shapes", n);
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
        BenchGemm g = {"", passes[p].m, passes[p].n, passes[p].k, passes[p].ta, passes[p].tb, t};
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
        BenchGemm g = {"square", n, n, n, FALSE, FALSE, 0};
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
    const BenchGemm *g = (const BenchGemm *) list->data;
    for (guint i = 0, j; i < list->len; i = j) {
        for (j = i + 1; j < list->len && g[j].group == g[i].group;)
            j++;
        if (!bench_gemm_group(bn, g + i, j - i, error))
            return FALSE;
    }
    return TRUE;
}

/* ---- kernels ------------------------------------------------------------------------------ */

#define BENCH_MAX_SIZES 8
#define BENCH_HOST_MOST ((guint64) 1 << 18) /* host: elements of a kernel's largest tensor */

enum {
    L_NONE,
    L_RC,  /* rows x cols */
    L_R2,  /* 2 x rows (statistics) */
    L_C,   /* cols (a parameter row) */
    L_R,   /* rows */
    L_RC2, /* rows x 2 cols (SwiGLU's gate and up pairs) */
    L_VC,  /* vocab x cols (the embedding table) */
    L_ONE, /* one element (the loss) */
    L_IDS, /* rows of token ids */
    L_TGT, /* rows of targets */
};

/* The views of each kind (schedule.h, SimparKernel and SimparVocab): lengths of in[0..4] and
 * out[0..2]; `vocab`: a SimparVocab, whose cols are h (embedding) or V (cross-entropy). */
static const struct {
    SimparOpKind kind;
    guint8 in[5], out[3];
    gboolean vocab;
} bench_kernels[] = {
    {SIMPAR_OP_LN_STATS, {L_RC}, {L_R2}, FALSE},
    {SIMPAR_OP_LN_APPLY, {L_RC, L_R2, L_C, L_C}, {L_RC, L_RC, L_R}, FALSE},
    {SIMPAR_OP_LN_BWD_STATS, {L_RC, L_RC, L_C}, {L_R2, L_C, L_C}, FALSE},
    {SIMPAR_OP_LN_BWD_APPLY, {L_RC, L_RC, L_C, L_R, L_R2}, {L_RC}, FALSE},
    {SIMPAR_OP_BIAS_ADD, {L_C}, {L_RC}, FALSE},
    {SIMPAR_OP_BIAS_GRAD, {L_RC}, {L_C}, FALSE},
    {SIMPAR_OP_GELU, {L_RC}, {L_RC}, FALSE},
    {SIMPAR_OP_GELU_BWD, {L_RC, L_RC}, {L_RC}, FALSE},
    {SIMPAR_OP_SWIGLU, {L_RC2}, {L_RC}, FALSE},
    {SIMPAR_OP_SWIGLU_BWD, {L_RC, L_RC2}, {L_RC2}, FALSE},
    {SIMPAR_OP_DROPOUT, {L_RC}, {L_RC}, FALSE},
    {SIMPAR_OP_DROPOUT_BWD, {L_RC}, {L_RC}, FALSE},
    {SIMPAR_OP_ADD, {L_RC, L_RC}, {L_RC}, FALSE},
    {SIMPAR_OP_EMBED, {L_IDS, L_VC}, {L_RC}, TRUE},
    {SIMPAR_OP_EMBED_BWD, {L_IDS, L_RC}, {L_VC}, TRUE},
    {SIMPAR_OP_XENT_MAX, {L_RC}, {L_R}, TRUE},
    {SIMPAR_OP_XENT_FWD, {L_RC, L_R, L_TGT}, {L_R2}, TRUE},
    {SIMPAR_OP_XENT_LOSS, {L_R, L_R2}, {L_ONE}, TRUE},
    {SIMPAR_OP_XENT_BWD, {L_RC, L_R, L_TGT, L_R2}, {L_RC}, TRUE},
};

/* The cross-entropy's rows are as long as the vocabulary; the others' as h. */
static gboolean
bench_kernel_over_vocab(SimparOpKind kind)
{
    return kind == SIMPAR_OP_XENT_MAX || kind == SIMPAR_OP_XENT_FWD ||
           kind == SIMPAR_OP_XENT_LOSS || kind == SIMPAR_OP_XENT_BWD;
}

static SimparView
bench_buffer(SimparSchedule *s, guint8 len, guint rows, guint cols, guint64 vocab)
{
    gsize n = len == L_RC    ? (gsize) rows * cols
              : len == L_R2  ? 2 * (gsize) rows
              : len == L_C   ? cols
              : len == L_RC2 ? 2 * (gsize) rows * cols
              : len == L_VC  ? (gsize) vocab * cols
              : len == L_ONE ? 1
                             : rows;
    const char *name = len == L_IDS ? "tokens" : len == L_TGT ? "targets" : "v";
    return (SimparView){simpar_schedule_add_buffer(s, 0, name, n), 0};
}

/* Kind `which` on rows x cols (cols: V for the cross-entropy), on buffers of its own. */
static void
bench_kernel_add(SimparSchedule *s, guint which, guint rows, guint cols, guint64 vocab)
{
    SimparOp op = {.kind = bench_kernels[which].kind, .name = "bench.kernel"};
    SimparView in[5] = {SIMPAR_NO_VIEW, SIMPAR_NO_VIEW, SIMPAR_NO_VIEW, SIMPAR_NO_VIEW,
                        SIMPAR_NO_VIEW};
    SimparView out[3] = {SIMPAR_NO_VIEW, SIMPAR_NO_VIEW, SIMPAR_NO_VIEW};
    for (guint i = 0; i < 5; i++)
        if (bench_kernels[which].in[i] != L_NONE)
            in[i] = bench_buffer(s, bench_kernels[which].in[i], rows, cols, vocab);
    for (guint i = 0; i < 3; i++)
        if (bench_kernels[which].out[i] != L_NONE)
            out[i] = bench_buffer(s, bench_kernels[which].out[i], rows, cols, vocab);
    if (bench_kernels[which].vocab) {
        gboolean logits = bench_kernel_over_vocab(op.kind);
        op.u.vocab = (SimparVocab){.rows = rows,
                                   .cols = logits ? 0 : cols,
                                   .vocab0 = 0,
                                   .vocab = logits ? cols : vocab,
                                   .scale = 1.0 / MAX(rows, 1)};
        memcpy(op.u.vocab.in, in, sizeof op.u.vocab.in);
        op.u.vocab.out[0] = out[0];
    } else {
        op.u.kern = (SimparKernel){.rows = rows,
                                   .cols = cols,
                                   .hidden = cols,
                                   .eps = 1e-5,
                                   .p = 0.1,
                                   .seed = 1,
                                   .global_cols = cols};
        memcpy(op.u.kern.in, in, sizeof in);
        memcpy(op.u.kern.out, out, sizeof out);
    }
    simpar_schedule_add_op(s, &op);
}

static void
bench_adam_add(SimparSchedule *s, gsize count)
{
    SimparOp op = {.kind = SIMPAR_OP_ADAM, .name = "bench.adam"};
    SimparView v[4];
    for (guint i = 0; i < 4; i++)
        v[i] = (SimparView){simpar_schedule_add_buffer(s, 0, "v", count), 0};
    op.u.adam = (SimparAdam){count, 1e-4, 0.9, 0.95, 1e-8, 0.1, 1, v[0], v[1], v[2], v[3]};
    simpar_schedule_add_op(s, &op);
}

static void
bench_attention_add(SimparSchedule *s, gboolean bwd, guint nb, guint nh, guint seq, guint dh)
{
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
}

/* Op i of `s` and its times as one entry (rows x cols as the caller names them). */
static void
bench_kernel_entry(Bench *bn, const SimparSchedule *s, guint i, guint rows, guint cols,
                   const BenchTime *t)
{
    const SimparOp *op = simpar_schedule_op(s, i);
    double flops, bytes;
    simpar_compute_op_cost(s, op, SIMPAR_ATTENTION_UNFUSED, &flops, &bytes);
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
        bench_member_double(b, "dropout_p", op->u.attn.p);
        bench_member_double(b, "flops", flops);
    }
    bench_member_str(b, "dtype", bench_dtype(bn));
    bench_member_double(b, "bytes", bytes);
    bench_member_times(b, t);
    bench_member_double(b, "GBps", bytes / t->median / 1e9);
    json_builder_end_object(b);
    g_string_append_printf(bn->text, "  %-14s %7u x %6u  %12.0f B  %10.3g s  %8.3g GB/s\n", kind,
                           rows, cols, bytes, t->median, bytes / t->median / 1e9);
}

/* Elements of the largest tensor a kernel bench goes up to: four times the layer's largest
 * (b*s or h rows, by f or 3h columns) on a GPU, BENCH_HOST_MOST on the host. */
static guint64
bench_most(const Bench *bn)
{
    const SimparModel *m = &bn->model;
    if (!g_str_equal(bn->opts->executor->name, "cuda"))
        return BENCH_HOST_MOST;
    guint64 rows = (guint64) MAX(m->micro_batch * m->seq, m->hidden);
    return 4 * rows * (guint64) MAX(m->ffn, 3 * m->hidden);
}

/* Row counts for rows of `width`: quick b*s/8; else 64, 512, 4096, ... (x 8) and the most
 * that fits bench_most(), from launch-bound to bandwidth-bound. */
static guint
bench_rows(const Bench *bn, guint width, guint rows[BENCH_MAX_SIZES])
{
    guint64 bs = (guint64) (bn->model.micro_batch * bn->model.seq), most = bench_most(bn);
    if (bn->opts->quick) {
        rows[0] = (guint) MAX(bs / 8, 1);
        return 1;
    }
    guint64 top = MAX(most / MAX(width, 1), 1);
    guint n = 0;
    for (guint64 r = 64; r <= top && n < BENCH_MAX_SIZES - 1; r *= 8)
        rows[n++] = (guint) r;
    if (n == 0 || rows[n - 1] < top)
        rows[n++] = (guint) MIN(top, G_MAXUINT);
    return n;
}

/* One group: kind `which` (or Adam, which = G_N_ELEMENTS(bench_kernels)) at every size. */
static gboolean
bench_kernel_group(Bench *bn, guint which, GError **error)
{
    gint64 t0 = g_get_monotonic_time();
    const SimparModel *m = &bn->model;
    gboolean adam = which == G_N_ELEMENTS(bench_kernels);
    SimparOpKind kind = adam ? SIMPAR_OP_ADAM : bench_kernels[which].kind;
    guint cols = (guint) (bench_kernel_over_vocab(kind) ? m->vocab : m->hidden);
    guint rows[BENCH_MAX_SIZES], n = bench_rows(bn, cols, rows);
    g_autoptr(SimparSchedule) s = simpar_schedule_new(1, m->dtype);
    for (guint i = 0; i < n; i++) {
        if (adam)
            bench_adam_add(s, (gsize) rows[i] * cols);
        else
            bench_kernel_add(s, which, rows[i], cols, (guint64) m->vocab);
    }
    BenchTime t[BENCH_MAX_SIZES];
    if (!bench_time(bn, s, TRUE, t, error))
        return FALSE;
    for (guint i = 0; i < n; i++)
        bench_kernel_entry(bn, s, i, rows[i], cols, &t[i]);
    bench_progress(bn, t0, "kernels, %s: %u sizes up to %u x %u", simpar_op_kind_name(kind), n,
                   rows[n - 1], cols);
    return TRUE;
}

/* Sequence, heads, head dimension dh (h/a, or --head-dim): quick (s, a/8, dh); else s/4, s/2, s by
 * a/8 and a at dh, and (s, a/8, 2 dh). */
static guint
bench_attention_shapes(const Bench *bn, guint shapes[][3])
{
    const SimparModel *m = &bn->model;
    guint a = (guint) m->heads, dh = (guint) simpar_model_head_dim(m), s = (guint) m->seq;
    guint heads[] = {MAX(a / 8, 1), a}, seqs[] = {s / 4, s / 2, s}, n = 0;
    for (guint i = bn->opts->quick ? 2 : 0; i < G_N_ELEMENTS(seqs); i++)
        for (guint j = 0; j < (bn->opts->quick || heads[0] == heads[1] ? 1 : 2); j++)
            if (seqs[i] > 0) {
                shapes[n][0] = seqs[i], shapes[n][1] = heads[j], shapes[n][2] = dh;
                n++;
            }
    if (!bn->opts->quick) {
        shapes[n][0] = s, shapes[n][1] = heads[0], shapes[n][2] = 2 * dh;
        n++;
    }
    return n;
}

static gboolean
bench_attention(Bench *bn, GError **error)
{
    guint shapes[8][3], n = bench_attention_shapes(bn, shapes), nb = (guint) bn->model.micro_batch;
    for (guint bwd = 0; bwd < 2; bwd++) {
        gint64 t0 = g_get_monotonic_time();
        g_autoptr(SimparSchedule) s = simpar_schedule_new(1, bn->model.dtype);
        for (guint i = 0; i < n; i++)
            bench_attention_add(s, bwd, nb, shapes[i][1], shapes[i][0], shapes[i][2]);
        BenchTime t[G_N_ELEMENTS(shapes)];
        if (!bench_time(bn, s, TRUE, t, error))
            return FALSE;
        for (guint i = 0; i < n; i++)
            bench_kernel_entry(bn, s, i, nb * shapes[i][0], shapes[i][1] * shapes[i][2], &t[i]);
        bench_progress(bn, t0, "attention%s (unfused): %u shapes", bwd ? " backward" : "", n);
    }
    return TRUE;
}

static gboolean
bench_kernels_all(Bench *bn, GError **error)
{
    g_string_append_printf(bn->text, "kernels (%s): kind, rows x cols, model bytes, median\n",
                           bench_dtype(bn));
    for (guint k = 0; k <= G_N_ELEMENTS(bench_kernels); k++)
        if (!bench_kernel_group(bn, k, error))
            return FALSE;
    return bench_attention(bn, error);
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
    if (bn->gpus < 2) {
        bench_progress(bn, g_get_monotonic_time(), "collectives: none on %u rank", bn->gpus);
        return TRUE;
    }
    g_string_append_printf(bn->text, "collectives (%s, %u ranks): op, nccl-tests bytes, median\n",
                           bench_dtype(bn), bn->gpus);
    for (guint k = 0; k < SIMPAR_N_COLL_KINDS; k++) {
        gint64 t0 = g_get_monotonic_time();
        guint per = ds * (bench_coll_scatters(k) ? bn->gpus : 1), n = 0;
        for (guint64 size = bn->min_bytes; size <= bn->max_bytes; size *= 2) {
            if (size / per == 0)
                continue;
            if (!bench_coll_one(bn, k, size / per, error))
                return FALSE;
            n++;
        }
        bench_progress(bn, t0, "collectives, %s on %u ranks: %u sizes", simpar_coll_kind_name(k),
                       bn->gpus, n);
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
    simpar_json_head(b, "simpar-bench", 1);
    bench_member_str(b, "executor", bn->opts->executor->name);
    bench_member_str(b, "device", bn->device != NULL ? bn->device : "(nothing measured)");
    bench_member_str(b, "model", bn->model.name);
    bench_member_str(b, "dtype", bench_dtype(bn));
    json_builder_set_member_name(b, "tf32");
    json_builder_add_boolean_value(b, bn->cfg.tf32);
    /* the ranks of the collectives; one GPU (or host thread) ran everything else */
    bench_member_int(b, "gpus", bn->opts->collectives && bn->gpus >= 2 ? bn->gpus : 1);
    bench_member_str(b, "inputs", "random");
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
