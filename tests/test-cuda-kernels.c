/* test-cuda-kernels.c - every compute op kind on the GPU (simpar_cu_compute) against the host
 * executor, in fp64, fp32, bf16 and fp16.
 *
 * Each case is a one-op, one-rank schedule built with the schedule.h API. Its buffers are filled
 * with seeded random values (ids, variances and sums of exponentials where the op needs them),
 * sent through the GPU's element types and back (simpar_cu_from_f64 / to_f64), so both
 * executors start from exactly the same numbers; then the host executor and simpar_cu_compute
 * run the op, and every element of every buffer (inputs, padding and outputs) must agree to the
 * tolerance of its buffer's GPU type, relative to the buffer's largest magnitude: fp64 1e-12,
 * fp32 1e-5 (TF32 off), bf16 2e-2, fp16 5e-3. Non-finite values (-inf maxima of empty slices)
 * must match exactly. Shapes are not multiples of 32, and some rows are wide, so block
 * reductions span several warps and loops; column sums span several chunks.
 *
 * Then the element-type rule of simpar_cu_buffer_types, the conversions at an offset, and ops
 * simpar_cu_compute refuses (views of one role in buffers of different types, too little
 * scratch). Without a usable GPU the program says why and exits 77 (meson: SKIP).
 *
 * Usage: test-cuda-kernels [SEED]   (the seed of the random inputs; printed on every run)
 */
#include "cuda-private.h"
#include "host.h"
#include "schedule.h"
#include "simpar-test.h"
#include <CUnit/Basic.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

static guint64 kt_seed = 20261121;
static guint32 kt_case_no; /* a distinct random stream per case */
static cudaStream_t kt_stream;
static cublasHandle_t kt_blas;

static const SimparDtype kt_dtypes[] = {SIMPAR_DTYPE_FP64, SIMPAR_DTYPE_FP32, SIMPAR_DTYPE_BF16,
                                        SIMPAR_DTYPE_FP16};

/* ---------------------------------------------------------------- cases */

typedef enum {
    KT_SIGNED,   /* uniform in [-1, 1] */
    KT_WIDE,     /* uniform in [-4, 4]: GELU's tails */
    KT_UNIT,     /* uniform in [0, 1]: probabilities */
    KT_POSITIVE, /* uniform in [0.5, 2]: rstd, variances */
    KT_IDS,      /* whole numbers in [0, id_range), and some that match no row: -1, vocab0 + 2.5 */
    KT_LN_STATS, /* [sum | sum of squares] of rows of `hidden` values, variance about 1 */
    KT_XENT,     /* [sum of exponentials (positive) | target logit (signed)] */
} KtFill;

typedef struct {
    SimparSchedule *sched;
    GArray *fills;           /* KtFill per buffer */
    double id_range, vocab0; /* KT_IDS */
    double hidden;           /* KT_LN_STATS */
    char *what;              /* "GEMM bf16 ..." in messages */
} KtCase;

static KtCase *kt_case_new(SimparDtype dtype, const char *fmt, ...) G_GNUC_PRINTF(2, 3);

static KtCase *
kt_case_new(SimparDtype dtype, const char *fmt, ...)
{
    KtCase *c = g_new0(KtCase, 1);
    va_list ap;
    va_start(ap, fmt);
    g_autofree char *what = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    c->what = g_strdup_printf("%s %s", what, simpar_dtype_name(dtype));
    c->sched = simpar_schedule_new(1, dtype);
    c->fills = g_array_new(FALSE, FALSE, sizeof(KtFill));
    return c;
}

static void
kt_case_free(KtCase *c)
{
    simpar_schedule_free(c->sched);
    g_array_unref(c->fills);
    g_free(c->what);
    g_free(c);
}

G_DEFINE_AUTOPTR_CLEANUP_FUNC(KtCase, kt_case_free)

static guint
kt_buf(KtCase *c, const char *name, gsize elems, KtFill fill)
{
    g_array_append_val(c->fills, fill);
    return simpar_schedule_add_buffer(c->sched, 0, name, elems);
}

static SimparOp
kt_op(SimparOpKind kind)
{
    SimparOp op;
    memset(&op, 0, sizeof(op)); /* unused views are {0, 0}: a real buffer, never touched */
    op.kind = kind;
    op.name = simpar_op_kind_name(kind);
    return op;
}

static SimparView
kt_view(guint buf, gsize off)
{
    return (SimparView){buf, off};
}

static void
kt_fill(const KtCase *c, KtFill fill, double *a, gsize n, GRand *rng)
{
    for (gsize i = 0; i < n; i++) {
        double u = g_rand_double(rng);
        switch (fill) {
        case KT_SIGNED:
            a[i] = 2.0 * u - 1.0;
            break;
        case KT_WIDE:
            a[i] = 8.0 * u - 4.0;
            break;
        case KT_UNIT:
            a[i] = u;
            break;
        case KT_POSITIVE:
            a[i] = 0.5 + 1.5 * u;
            break;
        case KT_IDS:
            a[i] = i % 7 == 3 ? -1.0 : i % 11 == 5 ? c->vocab0 + 2.5 : floor(u * c->id_range);
            break;
        case KT_LN_STATS:
            a[i] = c->hidden * (i < n / 2 ? 0.4 * u - 0.2 : 0.8 + 0.4 * u);
            break;
        default: /* KT_XENT */
            a[i] = i < n / 2 ? 0.5 + 10.0 * u : 2.0 * u - 1.0;
            break;
        }
    }
}

/* ---------------------------------------------------------------- device helpers */

static gboolean
kt_cuda_ok(cudaError_t e, const char *call)
{
    if (e != cudaSuccess)
        printf("\n    %s: %s", call, cudaGetErrorString(e));
    CU_ASSERT_EQUAL(e, cudaSuccess);
    return e == cudaSuccess;
}

#define KT_CUDA(call) kt_cuda_ok((call), #call)

/* `error` is read only here, after the call that sets it has returned. */
static gboolean
kt_ok(gboolean ok, GError **error)
{
    if (!ok)
        printf("\n    %s", *error != NULL ? (*error)->message : "failed without an error");
    CU_ASSERT_TRUE(ok);
    return ok;
}

/* host <-> buf through n doubles of device scratch `d64`. */
static gboolean
kt_upload(SimparCuBuf buf, const double *host, double *d64)
{
    g_autoptr(GError) error = NULL;
    return KT_CUDA(cudaMemcpy(d64, host, buf.elems * sizeof(double), cudaMemcpyHostToDevice)) &&
           kt_ok(simpar_cu_from_f64(buf, 0, d64, buf.elems, kt_stream, &error), &error);
}

static gboolean
kt_download(SimparCuBuf buf, double *host, double *d64)
{
    g_autoptr(GError) error = NULL;
    return kt_ok(simpar_cu_to_f64(buf, 0, d64, buf.elems, kt_stream, &error), &error) &&
           KT_CUDA(cudaStreamSynchronize(kt_stream)) &&
           KT_CUDA(cudaMemcpy(host, d64, buf.elems * sizeof(double), cudaMemcpyDeviceToHost));
}

static double
kt_tol(SimparCuType type)
{
    static const double tol[SIMPAR_CU_N_TYPES] = {5e-3, 2e-2, 1e-5, 1e-12};
    return tol[type];
}

/* Every element of one buffer: GPU `got` against host `want`. */
static void
kt_compare(const KtCase *c, guint b, SimparCuType type, const double *got, const double *want)
{
    gsize n = simpar_schedule_buffer(c->sched, b)->elems;
    double scale = 0.0;
    for (gsize i = 0; i < n; i++)
        if (isfinite(want[i]))
            scale = MAX(scale, fabs(want[i]));
    double tol = kt_tol(type) * (scale > 0.0 ? scale : 1.0);
    guint bad = 0;
    for (gsize i = 0; i < n; i++) {
        gboolean ok = isfinite(want[i]) ? fabs(got[i] - want[i]) <= tol : got[i] == want[i];
        if (!ok && bad++ < 5)
            printf("\n    %s: buffer '%s' (%s) [%" G_GSIZE_FORMAT "]: got %.10g, want %.10g "
                   "(tolerance %.3g)",
                   c->what, simpar_schedule_buffer(c->sched, b)->name, simpar_cu_type_name(type), i,
                   got[i], want[i], tol);
    }
    CU_ASSERT_EQUAL(bad, 0);
}

/* ---------------------------------------------------------------- running a case */

typedef struct {
    SimparCuBuf *bufs;
    double **d64; /* per buffer: device doubles for the conversions */
    guint n;
    void *work;
} KtDevice;

static void
kt_device_free(KtDevice *d)
{
    for (guint b = 0; b < d->n; b++) {
        cudaFree(d->bufs[b].ptr);
        cudaFree(d->d64[b]);
    }
    cudaFree(d->work);
    g_free(d->bufs);
    g_free(d->d64);
}

/* Device buffers holding the host's values in their GPU types; the host's values are replaced
 * by what those types hold, so both executors start from the same numbers. */
static gboolean
kt_device_init(KtDevice *d, const KtCase *c, SimparHost *host)
{
    d->n = simpar_schedule_n_buffers(c->sched);
    d->bufs = g_new0(SimparCuBuf, d->n);
    d->d64 = g_new0(double *, d->n);
    g_autofree SimparCuType *types = g_new(SimparCuType, d->n);
    simpar_cu_buffer_types(c->sched, types);
    for (guint b = 0; b < d->n; b++) {
        SimparCuBuf *buf = &d->bufs[b];
        *buf = (SimparCuBuf){NULL, types[b], simpar_schedule_buffer(c->sched, b)->elems};
        if (buf->elems == 0)
            continue;
        double *h = simpar_host_buffer(host, b);
        if (!KT_CUDA(cudaMalloc(&buf->ptr, buf->elems * simpar_cu_type_size(buf->type))) ||
            !KT_CUDA(cudaMalloc((void **) &d->d64[b], buf->elems * sizeof(double))) ||
            !kt_upload(*buf, h, d->d64[b]) || !kt_download(*buf, h, d->d64[b]))
            return FALSE;
    }
    return TRUE;
}

/* Runs every op of the schedule with simpar_cu_compute and waits. */
static gboolean
kt_device_run(KtDevice *d, const KtCase *c)
{
    gsize work = 0;
    for (guint i = 0; i < simpar_schedule_n_ops(c->sched); i++)
        work = MAX(work, simpar_cu_workspace(c->sched, simpar_schedule_op(c->sched, i)));
    if (work > 0 && !KT_CUDA(cudaMalloc(&d->work, work)))
        return FALSE;
    SimparCuCtx ctx = {kt_stream, kt_blas, FALSE, d->work, work};
    for (guint i = 0; i < simpar_schedule_n_ops(c->sched); i++) {
        g_autoptr(GError) error = NULL;
        const SimparOp *op = simpar_schedule_op(c->sched, i);
        if (!kt_ok(simpar_cu_compute(&ctx, c->sched, op, d->bufs, &error), &error))
            return FALSE;
    }
    return KT_CUDA(cudaStreamSynchronize(kt_stream));
}

static void
kt_case_run(KtCase *c)
{
    guint32 seed[3] = {(guint32) kt_seed, (guint32) (kt_seed >> 32), kt_case_no++};
    g_autoptr(GRand) rng = g_rand_new_with_seed_array(seed, 3);
    g_autoptr(SimparHost) host = simpar_host_new(c->sched);
    guint n = simpar_schedule_n_buffers(c->sched);
    for (guint b = 0; b < n; b++)
        kt_fill(c, g_array_index(c->fills, KtFill, b), simpar_host_buffer(host, b),
                simpar_schedule_buffer(c->sched, b)->elems, rng);
    KtDevice d = {0};
    g_autoptr(GError) error = NULL;
    if (kt_device_init(&d, c, host) && kt_ok(simpar_host_run(host, &error), &error) &&
        kt_device_run(&d, c)) {
        for (guint b = 0; b < n; b++) {
            g_autofree double *got = g_new(double, MAX(d.bufs[b].elems, 1));
            if (d.bufs[b].elems > 0 && kt_download(d.bufs[b], got, d.d64[b]))
                kt_compare(c, b, d.bufs[b].type, got, simpar_host_buffer(host, b));
        }
    }
    kt_device_free(&d);
}

/* ---------------------------------------------------------------- GEMM */

#define KT_M 35
#define KT_N 20
#define KT_K 67

static void
kt_gemm_case(SimparDtype dtype, gboolean ta, gboolean tb, gboolean acc)
{
    g_autoptr(KtCase) c = kt_case_new(dtype, "GEMM ta=%d tb=%d acc=%d", ta, tb, acc);
    gsize sa = KT_M * KT_K + 5, sb = KT_K * KT_N + 3, sc = KT_M * KT_N + 7;
    SimparOp op = kt_op(SIMPAR_OP_GEMM);
    op.u.gemm = (SimparGemm){KT_M,
                             KT_N,
                             KT_K,
                             3,
                             ta,
                             tb,
                             acc,
                             sa,
                             sb,
                             sc,
                             kt_view(kt_buf(c, "a", 3 * sa, KT_SIGNED), 0),
                             kt_view(kt_buf(c, "b", 3 * sb, KT_SIGNED), 0),
                             kt_view(kt_buf(c, "c", 3 * sc, KT_SIGNED), 0),
                             0,
                             0,
                             0};
    simpar_schedule_add_op(c->sched, &op);
    kt_case_run(c);
}

/* k = 0: c = 0 (or unchanged with accumulate) in every entry, with strides past, inside or
 * equal to one entry. */
static void
kt_gemm_empty_case(SimparDtype dtype, gboolean acc, gsize stride_c, guint batch)
{
    g_autoptr(KtCase) c =
        kt_case_new(dtype, "GEMM k=0 acc=%d stride_c=%" G_GSIZE_FORMAT, acc, stride_c);
    SimparOp op = kt_op(SIMPAR_OP_GEMM);
    guint bc = kt_buf(c, "c", 2 + (batch - 1) * stride_c + KT_M * KT_N + 3, KT_SIGNED);
    op.u.gemm = (SimparGemm){.m = KT_M,
                             .n = KT_N,
                             .k = 0,
                             .batch = batch,
                             .accumulate = acc,
                             .stride_c = stride_c,
                             .a = SIMPAR_NO_VIEW,
                             .b = SIMPAR_NO_VIEW,
                             .c = kt_view(bc, 2)};
    simpar_schedule_add_op(c->sched, &op);
    kt_case_run(c);
}

static void
test_gemm(void)
{
    for (guint d = 0; d < G_N_ELEMENTS(kt_dtypes); d++)
        for (guint mask = 0; mask < 8; mask++)
            kt_gemm_case(kt_dtypes[d], mask & 1, (mask >> 1) & 1, (mask >> 2) & 1);
}

static void
test_gemm_empty(void)
{
    for (guint d = 0; d < G_N_ELEMENTS(kt_dtypes); d++) {
        for (guint acc = 0; acc < 2; acc++) {
            kt_gemm_empty_case(kt_dtypes[d], acc, KT_M * KT_N + 9, 3);
            kt_gemm_empty_case(kt_dtypes[d], acc, KT_M * KT_N / 2, 3);
            kt_gemm_empty_case(kt_dtypes[d], acc, 0, 1);
        }
    }
}

/* ---------------------------------------------------------------- layer norm */

#define KT_ROWS 37
#define KT_COLS 70

static void
kt_ln_stats_case(SimparDtype dtype, guint rows, guint cols)
{
    g_autoptr(KtCase) c = kt_case_new(dtype, "LN_STATS %ux%u", rows, cols);
    SimparOp op = kt_op(SIMPAR_OP_LN_STATS);
    op.u.kern.rows = rows, op.u.kern.cols = cols;
    op.u.kern.in[0] = kt_view(kt_buf(c, "x", (gsize) rows * cols, KT_SIGNED), 0);
    op.u.kern.out[0] = kt_view(kt_buf(c, "stats", 2 * rows + 3, KT_SIGNED), 3);
    simpar_schedule_add_op(c->sched, &op);
    kt_case_run(c);
}

static void
kt_ln_apply_case(SimparDtype dtype)
{
    g_autoptr(KtCase) c = kt_case_new(dtype, "LN_APPLY");
    gsize rc = KT_ROWS * KT_COLS;
    c->hidden = 2 * KT_COLS; /* the local block is half of each row */
    SimparOp op = kt_op(SIMPAR_OP_LN_APPLY);
    SimparKernel *k = &op.u.kern;
    k->rows = KT_ROWS, k->cols = KT_COLS, k->hidden = 2 * KT_COLS, k->eps = 1e-5;
    guint params = kt_buf(c, "params", 2 * KT_COLS, KT_SIGNED);
    k->in[0] = kt_view(kt_buf(c, "x", rc, KT_SIGNED), 0);
    k->in[1] = kt_view(kt_buf(c, "stats", 2 * KT_ROWS, KT_LN_STATS), 0);
    k->in[2] = kt_view(params, 0), k->in[3] = kt_view(params, KT_COLS);
    k->out[0] = kt_view(kt_buf(c, "y", rc, KT_SIGNED), 0);
    k->out[1] = kt_view(kt_buf(c, "xhat", rc, KT_SIGNED), 0);
    k->out[2] = kt_view(kt_buf(c, "rstd", KT_ROWS, KT_SIGNED), 0);
    simpar_schedule_add_op(c->sched, &op);
    kt_case_run(c);
}

/* rows = 0: only dgamma and dbeta, zeroed. */
static void
kt_ln_bwd_stats_case(SimparDtype dtype, guint rows)
{
    g_autoptr(KtCase) c = kt_case_new(dtype, "LN_BWD_STATS rows=%u", rows);
    gsize rc = (gsize) rows * KT_COLS;
    SimparOp op = kt_op(SIMPAR_OP_LN_BWD_STATS);
    SimparKernel *k = &op.u.kern;
    k->rows = rows, k->cols = KT_COLS;
    guint grads = kt_buf(c, "grads", 2 * KT_COLS, KT_SIGNED);
    k->in[0] = rows > 0 ? kt_view(kt_buf(c, "dy", rc, KT_SIGNED), 0) : SIMPAR_NO_VIEW;
    k->in[1] = rows > 0 ? kt_view(kt_buf(c, "xhat", rc, KT_SIGNED), 0) : SIMPAR_NO_VIEW;
    k->in[2] = kt_view(kt_buf(c, "gamma", KT_COLS, KT_SIGNED), 0);
    k->out[0] = rows > 0 ? kt_view(kt_buf(c, "stats", 2 * rows, KT_SIGNED), 0) : SIMPAR_NO_VIEW;
    k->out[1] = kt_view(grads, 0), k->out[2] = kt_view(grads, KT_COLS);
    simpar_schedule_add_op(c->sched, &op);
    kt_case_run(c);
}

static void
kt_ln_bwd_apply_case(SimparDtype dtype)
{
    g_autoptr(KtCase) c = kt_case_new(dtype, "LN_BWD_APPLY");
    gsize rc = KT_ROWS * KT_COLS;
    SimparOp op = kt_op(SIMPAR_OP_LN_BWD_APPLY);
    SimparKernel *k = &op.u.kern;
    k->rows = KT_ROWS, k->cols = KT_COLS, k->hidden = 2 * KT_COLS;
    k->in[0] = kt_view(kt_buf(c, "dy", rc, KT_SIGNED), 0);
    k->in[1] = kt_view(kt_buf(c, "xhat", rc, KT_SIGNED), 0);
    k->in[2] = kt_view(kt_buf(c, "gamma", KT_COLS, KT_SIGNED), 0);
    k->in[3] = kt_view(kt_buf(c, "rstd", KT_ROWS, KT_POSITIVE), 0);
    k->in[4] = kt_view(kt_buf(c, "stats", 2 * KT_ROWS, KT_SIGNED), 0);
    k->out[0] = kt_view(kt_buf(c, "dx", rc, KT_SIGNED), 0);
    simpar_schedule_add_op(c->sched, &op);
    kt_case_run(c);
}

static void
test_layer_norm(void)
{
    for (guint d = 0; d < G_N_ELEMENTS(kt_dtypes); d++) {
        kt_ln_stats_case(kt_dtypes[d], KT_ROWS, KT_COLS);
        kt_ln_stats_case(kt_dtypes[d], 3, 1500); /* 512 threads, three columns each */
        kt_ln_stats_case(kt_dtypes[d], 4, 0);    /* sums of nothing: 0 */
        kt_ln_apply_case(kt_dtypes[d]);
        kt_ln_bwd_stats_case(kt_dtypes[d], KT_ROWS);
        kt_ln_bwd_stats_case(kt_dtypes[d], 600); /* three column chunks */
        kt_ln_bwd_stats_case(kt_dtypes[d], 0);
        kt_ln_bwd_apply_case(kt_dtypes[d]);
    }
}

/* ---------------------------------------------------------------- elementwise */

/* A one-input (or two-input) kernel over rows x cols: in0 [, in1] -> out0, all of size rc
 * except BIAS_ADD's bias (cols) and BIAS_GRAD's db (cols). */
static void
kt_eltwise_case(SimparDtype dtype, SimparOpKind kind, guint rows, guint cols, KtFill fill)
{
    g_autoptr(KtCase) c = kt_case_new(dtype, "%s %ux%u", simpar_op_kind_name(kind), rows, cols);
    gsize rc = (gsize) rows * cols;
    SimparOp op = kt_op(kind);
    SimparKernel *k = &op.u.kern;
    k->rows = rows, k->cols = cols;
    k->in[0] = kt_view(kt_buf(c, "in0", kind == SIMPAR_OP_BIAS_ADD ? cols : rc, fill), 0);
    if (kind == SIMPAR_OP_GELU_BWD || kind == SIMPAR_OP_ADD)
        k->in[1] = kt_view(kt_buf(c, "in1", rc, fill), 0);
    k->out[0] = kt_view(kt_buf(c, "out0", kind == SIMPAR_OP_BIAS_GRAD ? cols : rc, KT_SIGNED), 0);
    simpar_schedule_add_op(c->sched, &op);
    kt_case_run(c);
}

static void
kt_dropout_case(SimparDtype dtype, SimparOpKind kind, double p)
{
    g_autoptr(KtCase) c = kt_case_new(dtype, "%s p=%g", simpar_op_kind_name(kind), p);
    gsize rc = KT_ROWS * KT_COLS;
    SimparOp op = kt_op(kind);
    op.u.kern = (SimparKernel){.rows = KT_ROWS,
                               .cols = KT_COLS,
                               .p = p,
                               .seed = 0x5eed1234abcdULL,
                               .site = SIMPAR_DROPOUT_PROJ,
                               .row0 = 5,
                               .col0 = 2 * KT_COLS,
                               .global_cols = 3 * KT_COLS};
    op.u.kern.in[0] = kt_view(kt_buf(c, "x", rc, KT_SIGNED), 0);
    op.u.kern.out[0] = kt_view(kt_buf(c, "y", rc, KT_SIGNED), 0);
    simpar_schedule_add_op(c->sched, &op);
    kt_case_run(c);
}

/* ADD with c = a: in place. */
static void
kt_add_in_place_case(SimparDtype dtype)
{
    g_autoptr(KtCase) c = kt_case_new(dtype, "ADD in place");
    gsize rc = KT_ROWS * KT_COLS;
    SimparOp op = kt_op(SIMPAR_OP_ADD);
    op.u.kern.rows = KT_ROWS, op.u.kern.cols = KT_COLS;
    op.u.kern.in[0] = op.u.kern.out[0] = kt_view(kt_buf(c, "a", rc, KT_SIGNED), 0);
    op.u.kern.in[1] = kt_view(kt_buf(c, "b", rc, KT_SIGNED), 0);
    simpar_schedule_add_op(c->sched, &op);
    kt_case_run(c);
}

static void
test_elementwise(void)
{
    for (guint d = 0; d < G_N_ELEMENTS(kt_dtypes); d++) {
        SimparDtype dt = kt_dtypes[d];
        kt_eltwise_case(dt, SIMPAR_OP_BIAS_ADD, KT_ROWS, KT_COLS, KT_SIGNED);
        kt_eltwise_case(dt, SIMPAR_OP_BIAS_GRAD, KT_ROWS, KT_COLS, KT_SIGNED);
        kt_eltwise_case(dt, SIMPAR_OP_BIAS_GRAD, 600, 40, KT_SIGNED); /* three chunks */
        kt_eltwise_case(dt, SIMPAR_OP_GELU, KT_ROWS, KT_COLS, KT_WIDE);
        kt_eltwise_case(dt, SIMPAR_OP_GELU_BWD, KT_ROWS, KT_COLS, KT_WIDE);
        kt_eltwise_case(dt, SIMPAR_OP_ADD, KT_ROWS, KT_COLS, KT_SIGNED);
        kt_add_in_place_case(dt);
    }
}

static void
test_dropout(void)
{
    for (guint d = 0; d < G_N_ELEMENTS(kt_dtypes); d++) {
        kt_dropout_case(kt_dtypes[d], SIMPAR_OP_DROPOUT, 0.1);
        kt_dropout_case(kt_dtypes[d], SIMPAR_OP_DROPOUT, 0.0);
        kt_dropout_case(kt_dtypes[d], SIMPAR_OP_DROPOUT_BWD, 0.5);
    }
}

/* ---------------------------------------------------------------- attention */

#define KT_NB 2
#define KT_NH 3
#define KT_S  33
#define KT_DH 16

static void
kt_attention_case(SimparDtype dtype, gboolean bwd, gboolean causal, double p)
{
    g_autoptr(KtCase) c =
        kt_case_new(dtype, "ATTENTION%s causal=%d p=%g", bwd ? "_BWD" : "", causal, p);
    gsize ctx = (gsize) KT_NB * KT_S * KT_NH * KT_DH, probs = (gsize) KT_NB * KT_NH * KT_S * KT_S;
    SimparOp op = kt_op(bwd ? SIMPAR_OP_ATTENTION_BWD : SIMPAR_OP_ATTENTION);
    SimparAttention *at = &op.u.attn;
    *at = (SimparAttention){.nb = KT_NB,
                            .nh = KT_NH,
                            .s = KT_S,
                            .dh = KT_DH,
                            .causal = causal,
                            .p = p,
                            .seed = 0xa77e5eedULL,
                            .batch0 = 3,
                            .head0 = 1,
                            .heads = 5};
    at->in[0] = kt_view(kt_buf(c, "qkv", 3 * ctx, KT_SIGNED), 0);
    if (bwd) {
        at->in[1] = kt_view(kt_buf(c, "probs", probs, KT_UNIT), 0);
        at->in[2] = kt_view(kt_buf(c, "dctx", ctx, KT_SIGNED), 0);
        at->out[0] = kt_view(kt_buf(c, "dqkv", 3 * ctx, KT_SIGNED), 0);
    } else {
        at->out[0] = kt_view(kt_buf(c, "ctx", ctx, KT_SIGNED), 0);
        at->out[1] = kt_view(kt_buf(c, "probs", probs, KT_SIGNED), 0);
    }
    simpar_schedule_add_op(c->sched, &op);
    kt_case_run(c);
}

static void
test_attention(void)
{
    for (guint d = 0; d < G_N_ELEMENTS(kt_dtypes); d++)
        for (guint mask = 0; mask < 4; mask++)
            kt_attention_case(kt_dtypes[d], FALSE, mask & 1, mask & 2 ? 0.1 : 0.0);
}

static void
test_attention_bwd(void)
{
    for (guint d = 0; d < G_N_ELEMENTS(kt_dtypes); d++)
        for (guint mask = 0; mask < 4; mask++)
            kt_attention_case(kt_dtypes[d], TRUE, mask & 1, mask & 2 ? 0.1 : 0.0);
}

/* ---------------------------------------------------------------- embedding, cross-entropy */

#define KT_VOCAB0 40
#define KT_VOCAB  75

static void
kt_embed_case(SimparDtype dtype, gboolean bwd, guint rows)
{
    g_autoptr(KtCase) c = kt_case_new(dtype, "EMBED%s rows=%u", bwd ? "_BWD" : "", rows);
    const guint cols = 24, vocab = 13;
    c->id_range = 25, c->vocab0 = 5; /* the slice holds ids [5, 18) */
    SimparOp op = kt_op(bwd ? SIMPAR_OP_EMBED_BWD : SIMPAR_OP_EMBED);
    op.u.vocab = (SimparVocab){.rows = rows, .cols = cols, .vocab0 = 5, .vocab = vocab};
    op.u.vocab.in[0] = kt_view(kt_buf(c, "tokens", rows, KT_IDS), 0);
    guint table = kt_buf(c, bwd ? "dtable" : "table", vocab * cols, KT_SIGNED);
    guint act = kt_buf(c, bwd ? "dy" : "y", (gsize) rows * cols, KT_SIGNED);
    op.u.vocab.in[1] = kt_view(bwd ? act : table, 0);
    op.u.vocab.out[0] = kt_view(bwd ? table : act, 0);
    simpar_schedule_add_op(c->sched, &op);
    kt_case_run(c);
}

/* A vocabulary op over rows x vocab logits; `in_place`: XENT_BWD writes over its logits. */
static void
kt_xent_case(SimparDtype dtype, SimparOpKind kind, guint rows, guint vocab, gboolean in_place)
{
    g_autoptr(KtCase) c = kt_case_new(dtype, "%s %ux%u%s", simpar_op_kind_name(kind), rows, vocab,
                                      in_place ? " in place" : "");
    SimparOp op = kt_op(kind);
    SimparVocab *v = &op.u.vocab;
    *v = (SimparVocab){.rows = rows, .vocab0 = KT_VOCAB0, .vocab = vocab, .scale = 1.0 / rows};
    c->id_range = KT_VOCAB0 + vocab + 20, c->vocab0 = KT_VOCAB0;
    guint logits = vocab > 0 ? kt_buf(c, "logits", (gsize) rows * vocab, KT_SIGNED) : G_MAXUINT;
    guint max = kt_buf(c, "max", rows, KT_SIGNED), targets = kt_buf(c, "targets", rows, KT_IDS);
    guint stats = kt_buf(c, "stats", 2 * rows, KT_XENT);
    SimparView lv = kt_view(logits, 0);
    switch (kind) {
    case SIMPAR_OP_XENT_MAX:
        v->in[0] = lv, v->out[0] = kt_view(max, 0);
        break;
    case SIMPAR_OP_XENT_FWD:
        v->in[0] = lv, v->in[1] = kt_view(max, 0), v->in[2] = kt_view(targets, 0);
        v->out[0] = kt_view(stats, 0);
        break;
    case SIMPAR_OP_XENT_LOSS:
        v->in[0] = kt_view(max, 0), v->in[1] = kt_view(stats, 0);
        v->out[0] = kt_view(kt_buf(c, "loss", 2, KT_SIGNED), 1);
        break;
    default: /* XENT_BWD */
        v->in[0] = lv, v->in[1] = kt_view(max, 0), v->in[2] = kt_view(targets, 0);
        v->in[3] = kt_view(stats, 0);
        v->out[0] = in_place ? lv : kt_view(kt_buf(c, "dlogits", rows * vocab, KT_SIGNED), 0);
        break;
    }
    simpar_schedule_add_op(c->sched, &op);
    kt_case_run(c);
}

static void
test_embedding(void)
{
    for (guint d = 0; d < G_N_ELEMENTS(kt_dtypes); d++) {
        kt_embed_case(kt_dtypes[d], FALSE, 45);
        kt_embed_case(kt_dtypes[d], TRUE, 60); /* repeated ids meet in atomics */
    }
}

static void
test_cross_entropy(void)
{
    for (guint d = 0; d < G_N_ELEMENTS(kt_dtypes); d++) {
        SimparDtype dt = kt_dtypes[d];
        kt_xent_case(dt, SIMPAR_OP_XENT_MAX, 19, KT_VOCAB, FALSE);
        kt_xent_case(dt, SIMPAR_OP_XENT_MAX, 5, 2000, FALSE);
        kt_xent_case(dt, SIMPAR_OP_XENT_MAX, 19, 0, FALSE); /* an empty slice: -inf */
        kt_xent_case(dt, SIMPAR_OP_XENT_FWD, 19, KT_VOCAB, FALSE);
        kt_xent_case(dt, SIMPAR_OP_XENT_FWD, 5, 2000, FALSE);
        kt_xent_case(dt, SIMPAR_OP_XENT_LOSS, 19, KT_VOCAB, FALSE);
        kt_xent_case(dt, SIMPAR_OP_XENT_LOSS, 700, KT_VOCAB, FALSE); /* more rows than threads */
        kt_xent_case(dt, SIMPAR_OP_XENT_BWD, 19, KT_VOCAB, FALSE);
        kt_xent_case(dt, SIMPAR_OP_XENT_BWD, 19, KT_VOCAB, TRUE);
    }
}

/* ---------------------------------------------------------------- Adam */

static void
kt_adam_case(SimparDtype dtype)
{
    g_autoptr(KtCase) c = kt_case_new(dtype, "ADAM");
    const gsize n = 1000;
    SimparOp op = kt_op(SIMPAR_OP_ADAM);
    op.u.adam = (SimparAdam){.count = n,
                             .lr = 0.1, /* large enough to show in bf16 */
                             .beta1 = 0.9,
                             .beta2 = 0.999,
                             .eps = 1e-8,
                             .weight_decay = 0.01,
                             .step = 3};
    op.u.adam.param = kt_view(kt_buf(c, "param", n, KT_SIGNED), 0);
    op.u.adam.grad = kt_view(kt_buf(c, "grad", n, KT_SIGNED), 0);
    op.u.adam.m = kt_view(kt_buf(c, "m", n, KT_SIGNED), 0);
    op.u.adam.v = kt_view(kt_buf(c, "v", n, KT_POSITIVE), 0);
    simpar_schedule_add_op(c->sched, &op);
    kt_case_run(c);
}

static void
test_adam(void)
{
    for (guint d = 0; d < G_N_ELEMENTS(kt_dtypes); d++)
        kt_adam_case(kt_dtypes[d]);
}

/* ---------------------------------------------------------------- types, conversions, refusals */

/* LN statistics and rstd, token ids, Adam moments and a buffer shared by two statistics roles
 * are fp32 (fp64 in fp64); the rest, and views of length 0, keep the dtype. */
static void
kt_types_case(SimparDtype dtype)
{
    g_autoptr(KtCase) c = kt_case_new(dtype, "types");
    guint x = kt_buf(c, "x", 40, KT_SIGNED), shared = kt_buf(c, "shared", 12, KT_SIGNED);
    guint rstd = kt_buf(c, "rstd", 4, KT_SIGNED), ids = kt_buf(c, "ids", 4, KT_SIGNED);
    guint mv = kt_buf(c, "moments", 8, KT_SIGNED), unused = kt_buf(c, "unused", 4, KT_SIGNED);
    SimparOp op = kt_op(SIMPAR_OP_LN_APPLY);
    op.u.kern = (SimparKernel){.rows = 4, .cols = 10, .hidden = 10};
    op.u.kern.in[0] = op.u.kern.in[2] = op.u.kern.in[3] = op.u.kern.out[0] = op.u.kern.out[1] =
        kt_view(x, 0);
    op.u.kern.in[1] = kt_view(shared, 0), op.u.kern.out[2] = kt_view(rstd, 0);
    simpar_schedule_add_op(c->sched, &op);
    op = kt_op(SIMPAR_OP_XENT_MAX); /* a second statistics role in `shared` */
    op.u.vocab = (SimparVocab){.rows = 4, .vocab = 0, .in = {SIMPAR_NO_VIEW}};
    op.u.vocab.out[0] = kt_view(shared, 8);
    simpar_schedule_add_op(c->sched, &op);
    op = kt_op(SIMPAR_OP_LN_STATS); /* no rows: its empty stats view does not count */
    op.u.kern = (SimparKernel){.rows = 0, .cols = 10, .in = {SIMPAR_NO_VIEW}};
    op.u.kern.out[0] = kt_view(unused, 0);
    simpar_schedule_add_op(c->sched, &op);
    op = kt_op(SIMPAR_OP_EMBED);
    op.u.vocab = (SimparVocab){.rows = 4, .cols = 10, .vocab = 4};
    op.u.vocab.in[0] = kt_view(ids, 0), op.u.vocab.in[1] = op.u.vocab.out[0] = kt_view(x, 0);
    simpar_schedule_add_op(c->sched, &op);
    op = kt_op(SIMPAR_OP_ADAM);
    op.u.adam = (SimparAdam){.count = 4, .param = kt_view(x, 0), .grad = kt_view(x, 4)};
    op.u.adam.m = kt_view(mv, 0), op.u.adam.v = kt_view(mv, 4);
    simpar_schedule_add_op(c->sched, &op);
    SimparCuType types[6];
    simpar_cu_buffer_types(c->sched, types);
    SimparCuType t = simpar_cu_type_of_dtype(dtype);
    SimparCuType s = dtype == SIMPAR_DTYPE_FP64 ? SIMPAR_CU_F64 : SIMPAR_CU_F32;
    const SimparCuType want[6] = {t, s, s, s, s, t}; /* x shared rstd ids moments unused */
    for (guint b = 0; b < 6; b++) {
        if (types[b] != want[b])
            printf("\n    %s: buffer %u is %s, want %s", c->what, b, simpar_cu_type_name(types[b]),
                   simpar_cu_type_name(want[b]));
        CU_ASSERT_EQUAL(types[b], want[b]);
    }
}

static void
test_buffer_types(void)
{
    for (guint d = 0; d < G_N_ELEMENTS(kt_dtypes); d++)
        kt_types_case(kt_dtypes[d]);
    CU_ASSERT_EQUAL(simpar_cu_type_size(SIMPAR_CU_BF16), 2);
    CU_ASSERT_EQUAL(simpar_cu_type_size(SIMPAR_CU_F64), 8);
    CU_ASSERT_STRING_EQUAL(simpar_cu_type_name(SIMPAR_CU_F16), "fp16");
    CU_ASSERT_EQUAL(simpar_cu_nccl_type(SIMPAR_CU_BF16), ncclBfloat16);
}

/* Four values written at element 3 of a zeroed buffer of 10, read back from element 0. */
static void
kt_convert_case(SimparCuType type)
{
    const double in[4] = {0.5, -3.0, 1.25, 1.0 / 3.0};
    const double eps[SIMPAR_CU_N_TYPES] = {0x1p-11, 0x1p-8, 0x1p-24, 0x1p-53};
    SimparCuBuf buf = {NULL, type, 10};
    double *d64 = NULL, out[10];
    g_autoptr(GError) error = NULL;
    if (KT_CUDA(cudaMalloc(&buf.ptr, 10 * simpar_cu_type_size(type))) &&
        KT_CUDA(cudaMalloc((void **) &d64, 10 * sizeof(double))) &&
        KT_CUDA(cudaMemset(buf.ptr, 0, 10 * simpar_cu_type_size(type))) &&
        KT_CUDA(cudaMemcpy(d64, in, sizeof(in), cudaMemcpyHostToDevice)) &&
        kt_ok(simpar_cu_from_f64(buf, 3, d64, 4, kt_stream, &error), &error) &&
        kt_download(buf, out, d64)) {
        for (guint i = 0; i < 10; i++) {
            double want = i >= 3 && i < 7 ? in[i - 3] : 0.0;
            double tol = i == 6 ? eps[type] * want : 0.0; /* 1/3 is rounded; the rest exact */
            CU_ASSERT_DOUBLE_EQUAL(out[i], want, tol);
        }
    }
    cudaFree(buf.ptr);
    cudaFree(d64);
}

static void
test_conversions(void)
{
    for (SimparCuType t = 0; t < SIMPAR_CU_N_TYPES; t++)
        kt_convert_case(t);
}

/* An LN_APPLY whose x is fp32 while gamma is bf16, and an attention backward without scratch:
 * both refused before anything runs. */
static void
test_refusals(void)
{
    g_autoptr(KtCase) c = kt_case_new(SIMPAR_DTYPE_BF16, "refusals");
    guint x = kt_buf(c, "x", 40, KT_SIGNED), p = kt_buf(c, "params", 20, KT_SIGNED);
    guint st = kt_buf(c, "stats", 12, KT_SIGNED), qkv = kt_buf(c, "qkv", 3 * 64, KT_SIGNED);
    SimparOp op = kt_op(SIMPAR_OP_LN_APPLY);
    op.u.kern = (SimparKernel){.rows = 4, .cols = 10, .hidden = 10};
    op.u.kern.in[0] = op.u.kern.out[0] = op.u.kern.out[1] = kt_view(x, 0);
    op.u.kern.in[2] = kt_view(p, 0), op.u.kern.in[3] = kt_view(p, 10);
    op.u.kern.in[1] = kt_view(st, 0), op.u.kern.out[2] = kt_view(st, 8);
    guint ln = simpar_schedule_add_op(c->sched, &op);
    op = kt_op(SIMPAR_OP_ATTENTION_BWD);
    op.u.attn = (SimparAttention){.nb = 1, .nh = 2, .s = 4, .dh = 2, .heads = 2};
    op.u.attn.in[0] = op.u.attn.in[1] = op.u.attn.in[2] = op.u.attn.out[0] = kt_view(qkv, 0);
    guint attn = simpar_schedule_add_op(c->sched, &op);
    static char fake[1024]; /* never dereferenced: the refusals come first */
    SimparCuBuf bufs[4] = {{fake, SIMPAR_CU_F32, 40},
                           {fake, SIMPAR_CU_BF16, 20},
                           {fake, SIMPAR_CU_F32, 12},
                           {fake, SIMPAR_CU_BF16, 192}};
    SimparCuCtx ctx = {kt_stream, kt_blas, FALSE, NULL, 0};
    g_autoptr(GError) e1 = NULL, e2 = NULL;
    CU_ASSERT_FALSE(simpar_cu_compute(&ctx, c->sched, simpar_schedule_op(c->sched, ln), bufs, &e1));
    CU_ASSERT_TRUE(g_error_matches(e1, SIMPAR_CUDA_ERROR, SIMPAR_CUDA_ERROR_INVALID));
    CU_ASSERT_TRUE(simpar_cu_workspace(c->sched, simpar_schedule_op(c->sched, attn)) ==
                   2 * 2 * 4 * 4 * sizeof(guint16));
    CU_ASSERT_FALSE(
        simpar_cu_compute(&ctx, c->sched, simpar_schedule_op(c->sched, attn), bufs, &e2));
    CU_ASSERT_TRUE(g_error_matches(e2, SIMPAR_CUDA_ERROR, SIMPAR_CUDA_ERROR_INVALID));
    if (e1 != NULL && e2 != NULL)
        printf("\n    %s\n    %s", e1->message, e2->message);
}

/* ---------------------------------------------------------------- registry */

static CU_TestInfo kt_tests[] = {
    {"GEMM matches the host for every transpose, batched with padding, with and without "
     "accumulate",
     test_gemm},
    {"GEMM with k = 0 zeroes every batch entry, or leaves it with accumulate", test_gemm_empty},
    {"Layer norm statistics, apply and both backward kernels match the host", test_layer_norm},
    {"Bias add, bias gradient, GELU, its backward and add (in place too) match the host",
     test_elementwise},
    {"Dropout and its backward keep exactly the host's mask", test_dropout},
    {"Attention matches the host, causal or not, with dropout 0 and 0.1", test_attention},
    {"Attention backward matches the host, causal or not, with dropout 0 and 0.1",
     test_attention_bwd},
    {"Embedding gathers and its backward accumulates repeated ids like the host", test_embedding},
    {"Cross-entropy max, statistics, loss and backward match the host, empty slice included",
     test_cross_entropy},
    {"Adam matches the host's update of parameters and moments", test_adam},
    {"Statistics, ids and moments get fp32 buffers (fp64 in fp64), the rest the dtype",
     test_buffer_types},
    {"Conversions from and to doubles at an offset round once and touch nothing else",
     test_conversions},
    {"Mixed view types and missing scratch are refused with SIMPAR_CUDA_ERROR_INVALID",
     test_refusals},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo kt_suites[] = {
    {"cuda kernels", NULL, NULL, NULL, NULL, kt_tests},
    CU_SUITE_INFO_NULL,
};

int
main(int argc, char **argv)
{
    int n = 0;
    g_autoptr(GError) error = NULL;
    if (!simpar_cuda_devices(&n, &error)) {
        printf("test-cuda-kernels: skipped, %s\n", error->message);
        return 77;
    }
    if (argc > 1)
        kt_seed = g_ascii_strtoull(argv[1], NULL, 10);
    printf("test-cuda-kernels: seed %" G_GUINT64_FORMAT "\n", kt_seed);
    if (cudaSetDevice(0) != cudaSuccess || cudaStreamCreate(&kt_stream) != cudaSuccess ||
        cublasCreate(&kt_blas) != CUBLAS_STATUS_SUCCESS) {
        printf("test-cuda-kernels: cannot set up device 0\n");
        return 99;
    }
    int rc = simpar_test_main(kt_suites);
    cublasDestroy(kt_blas);
    cudaStreamDestroy(kt_stream);
    return rc;
}
