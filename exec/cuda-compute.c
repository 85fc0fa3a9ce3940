/* cuda-compute.c - one compute op on a GPU: element types, views, cuBLAS, and the kernels of
 * cuda-kernels.cu (see cuda-private.h for where this sits).
 *
 * Element types (simpar_cu_buffer_types). Every buffer holds the schedule's dtype (T), except a
 * buffer that some op uses, with a non-empty view, in one of these roles (S):
 *   LN_STATS out0 (stats)      LN_APPLY in1 (stats), out2 (rstd)   LN_BWD_STATS out0 (stats)
 *   LN_BWD_APPLY in3 (rstd), in4 (stats)      EMBED, EMBED_BWD in0 (token ids)
 *   XENT_MAX out0 (max)        XENT_FWD in1 (max), in2 (targets), out0 (stats)
 *   XENT_LOSS in0, in1, out0 (loss)           XENT_BWD in1, in2, in3      ADAM m, v
 * which holds fp32 (fp64 in an fp64 schedule). The rule is per buffer: one S role makes the
 * whole buffer S, and an op whose activation view lands in such a buffer (or whose views of one
 * role disagree) fails with SIMPAR_CUDA_ERROR_INVALID; generated schedules keep statistics in
 * buffers of their own. Collectives and send/recv copy bytes between buffers of one role (an
 * all-reduce of LN or cross-entropy statistics, of gradients, a pipeline's activations), so
 * their send and recv views have equal types; cuda.c moves them with simpar_cu_nccl_type().
 *
 * Views. One role table (cu_roles) says, per kind, which of an op's views are T and which S,
 * and when each is empty; it serves both the buffer types and cu_bind(), which turns the views
 * into device addresses (bufs[buf].ptr + off * element size) and finds the op's two types.
 *
 * GEMMs are row-major, given to column-major cuBLAS transposed: C^T = op(B)^T op(A)^T, so
 *   row-major A [m x k] (lda)  -->  cuBLAS sees A^T [k x m] with the same leading dimension
 *   cublasGemmStridedBatchedEx(opB, opA, n, m, k, B, ldb, A, lda, C, ldc = n)
 * fp16/bf16 in fp32 on tensor cores, fp32 exact (or TF32 when ctx->tf32), fp64 in fp64.
 *
 * Attention, per sequence of the block (the heads of one sequence are one strided batch):
 *
 *   qkv row (nh*3*dh): | q0 k0 v0 | q1 k1 v1 | ...   head stride 3*dh, row stride nh*3*dh
 *
 * With grouped-query attention (r = nh/nkv > 1 heads share a k and v) the batches are the r
 * heads of one group (q stride dh, k and v stride 0), one call per group; dK and dV sum over
 * the group's heads, one head at a time (beta = 1 after the first).
 *   forward   probs[n] <- Q K^T / sqrt(dh)                 (cuBLAS, into the saved probs)
 *             probs[n] <- softmax (causal: 0 past i),      work = P * keep / (1-p) if p > 0
 *             ctx[n]   <- (p > 0 ? work : P) V             (cuBLAS)
 *   backward  work[1]  <- dctx V^T                         (cuBLAS: dPd)
 *             work[1]  <- dS, work[0] <- P * keep / (1-p)  (softmax backward)
 *             dV <- work[0]^T dctx, dQ <- dS K / sqrt(dh), dK <- dS^T Q / sqrt(dh)
 * work[i] is [nh x s x s] of the activation type: the scratch of simpar_cu_workspace().
 */
#include "cuda-kernels.h"
#include "cuda-private.h"
#include <limits.h>
#include <math.h>
#include <stdarg.h>

G_STATIC_ASSERT((int) SIMPAR_CU_F16 == SIMPAR_CUK_F16);
G_STATIC_ASSERT((int) SIMPAR_CU_BF16 == SIMPAR_CUK_BF16);
G_STATIC_ASSERT((int) SIMPAR_CU_F32 == SIMPAR_CUK_F32);
G_STATIC_ASSERT((int) SIMPAR_CU_F64 == SIMPAR_CUK_F64);

/* ---- element types ------------------------------------------------------------------------ */

SimparCuType
simpar_cu_type_of_dtype(SimparDtype dtype)
{
    switch (dtype) {
    case SIMPAR_DTYPE_FP16:
        return SIMPAR_CU_F16;
    case SIMPAR_DTYPE_BF16:
        return SIMPAR_CU_BF16;
    case SIMPAR_DTYPE_FP32:
        return SIMPAR_CU_F32;
    default:
        g_return_val_if_fail(dtype == SIMPAR_DTYPE_FP64, SIMPAR_CU_F32);
        return SIMPAR_CU_F64;
    }
}

/* The type of statistics, ids and moments in a schedule of `dtype`. */
static SimparCuType
cu_stats_type(SimparDtype dtype)
{
    return dtype == SIMPAR_DTYPE_FP64 ? SIMPAR_CU_F64 : SIMPAR_CU_F32;
}

gsize
simpar_cu_type_size(SimparCuType type)
{
    static const gsize sizes[SIMPAR_CU_N_TYPES] = {2, 2, 4, 8};
    g_return_val_if_fail(type < SIMPAR_CU_N_TYPES, 0);
    return sizes[type];
}

const char *
simpar_cu_type_name(SimparCuType type)
{
    static const char *const names[SIMPAR_CU_N_TYPES] = {"fp16", "bf16", "fp32", "fp64"};
    g_return_val_if_fail(type < SIMPAR_CU_N_TYPES, "?");
    return names[type];
}

ncclDataType_t
simpar_cu_nccl_type(SimparCuType type)
{
    static const ncclDataType_t types[SIMPAR_CU_N_TYPES] = {ncclFloat16, ncclBfloat16, ncclFloat32,
                                                            ncclFloat64};
    g_return_val_if_fail(type < SIMPAR_CU_N_TYPES, ncclFloat32);
    return types[type];
}

static cudaDataType_t
cu_blas_type(SimparCuType type)
{
    static const cudaDataType_t types[SIMPAR_CU_N_TYPES] = {CUDA_R_16F, CUDA_R_16BF, CUDA_R_32F,
                                                            CUDA_R_64F};
    return types[type];
}

/* ---- errors ------------------------------------------------------------------------------- */

gboolean
simpar_cu_check(cudaError_t e, const char *call, GError **error)
{
    if (e == cudaSuccess)
        return TRUE;
    g_set_error(error, SIMPAR_CUDA_ERROR, SIMPAR_CUDA_ERROR_CALL, "%s: %s", call,
                cudaGetErrorString(e));
    return FALSE;
}

gboolean
simpar_cu_check_blas(cublasStatus_t s, const char *call, GError **error)
{
    if (s == CUBLAS_STATUS_SUCCESS)
        return TRUE;
    g_set_error(error, SIMPAR_CUDA_ERROR, SIMPAR_CUDA_ERROR_CALL, "%s: %s", call,
                cublasGetStatusString(s));
    return FALSE;
}

/* An op this executor cannot run as given (types, sizes, scratch). */
static gboolean cu_invalid(GError **error, const SimparOp *op, const char *fmt, ...)
    G_GNUC_PRINTF(3, 4);

static gboolean
cu_invalid(GError **error, const SimparOp *op, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    g_autofree char *what = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    g_set_error(error, SIMPAR_CUDA_ERROR, SIMPAR_CUDA_ERROR_INVALID, "op '%s' (%s) on rank %u: %s",
                op->name != NULL ? op->name : "?", simpar_op_kind_name(op->kind), op->rank, what);
    return FALSE;
}

/* ---- roles of views ----------------------------------------------------------------------- */

/* Slots of an op's views: in[0..4] then out[0..2] (SimparVocab: in[0..3], out[0] in slot 5;
 * GEMM: a, b in slots 0, 1 and c in slot 5; ADAM: param, grad, m, v in slots 0..3). */
#define CU_SLOTS 8

/* Per slot: NULL (unused) or two letters, the role and when the view is non-empty:
 *   role   T activation (the schedule's dtype), S statistics, ids or moments (fp32 / fp64)
 *   size   x rows*cols, r rows (or 2*rows), c cols, t vocab*cols, l rows*vocab, n count,
 *          k GEMM k, 1 always (once GEMM and attention have returned on empty shapes) */
typedef struct {
    const char *slot[CU_SLOTS];
} CuRoles;

static const CuRoles cu_roles[SIMPAR_N_OP_KINDS] = {
    /*                         in0   in1   in2   in3   in4   out0  out1  out2 */
    [SIMPAR_OP_GEMM] = {{"Tk", "Tk", NULL, NULL, NULL, "T1"}},
    [SIMPAR_OP_LN_STATS] = {{"Tx", NULL, NULL, NULL, NULL, "Sr"}},
    [SIMPAR_OP_LN_APPLY] = {{"Tx", "Sr", "Tc", "Tc", NULL, "Tx", "Tx", "Sr"}},
    [SIMPAR_OP_LN_BWD_STATS] = {{"Tx", "Tx", "Tc", NULL, NULL, "Sr", "Tc", "Tc"}},
    [SIMPAR_OP_LN_BWD_APPLY] = {{"Tx", "Tx", "Tc", "Sr", "Sr", "Tx"}},
    [SIMPAR_OP_BIAS_ADD] = {{"Tc", NULL, NULL, NULL, NULL, "Tx"}},
    [SIMPAR_OP_BIAS_GRAD] = {{"Tx", NULL, NULL, NULL, NULL, "Tc"}},
    [SIMPAR_OP_GELU] = {{"Tx", NULL, NULL, NULL, NULL, "Tx"}},
    [SIMPAR_OP_GELU_BWD] = {{"Tx", "Tx", NULL, NULL, NULL, "Tx"}},
    [SIMPAR_OP_SWIGLU] = {{"Tx", NULL, NULL, NULL, NULL, "Tx"}},
    [SIMPAR_OP_SWIGLU_BWD] = {{"Tx", "Tx", NULL, NULL, NULL, "Tx"}},
    [SIMPAR_OP_PACK_COLS] = {{"Tx", NULL, NULL, NULL, NULL, "Tx"}},
    [SIMPAR_OP_UNPACK_COLS] = {{"Tx", NULL, NULL, NULL, NULL, "Tx"}},
    [SIMPAR_OP_DROPOUT] = {{"Tx", NULL, NULL, NULL, NULL, "Tx"}},
    [SIMPAR_OP_DROPOUT_BWD] = {{"Tx", NULL, NULL, NULL, NULL, "Tx"}},
    [SIMPAR_OP_ADD] = {{"Tx", "Tx", NULL, NULL, NULL, "Tx"}},
    [SIMPAR_OP_ATTENTION] = {{"T1", NULL, NULL, NULL, NULL, "T1", "T1"}},
    [SIMPAR_OP_ATTENTION_BWD] = {{"T1", "T1", "T1", NULL, NULL, "T1"}},
    [SIMPAR_OP_EMBED] = {{"Sr", "Tt", NULL, NULL, NULL, "Tx"}},
    [SIMPAR_OP_EMBED_BWD] = {{"Sr", "Tx", NULL, NULL, NULL, "Tt"}},
    [SIMPAR_OP_XENT_MAX] = {{"Tl", NULL, NULL, NULL, NULL, "Sr"}},
    [SIMPAR_OP_XENT_FWD] = {{"Tl", "Sr", "Sr", NULL, NULL, "Sr"}},
    [SIMPAR_OP_XENT_LOSS] = {{"Sr", "Sr", NULL, NULL, NULL, "S1"}},
    [SIMPAR_OP_XENT_BWD] = {{"Tl", "Sr", "Sr", "Sr", NULL, "Tl"}},
    [SIMPAR_OP_ADAM] = {{"Tn", "Tn", "Sn", "Sn"}},
};

/* The view in `slot` of op (see CU_SLOTS). */
static SimparView
cu_slot(const SimparOp *op, guint slot)
{
    switch (op->kind) {
    case SIMPAR_OP_GEMM:
        return slot == 0   ? op->u.gemm.a
               : slot == 1 ? op->u.gemm.b
               : slot == 5 ? op->u.gemm.c
                           : SIMPAR_NO_VIEW;
    case SIMPAR_OP_ATTENTION:
    case SIMPAR_OP_ATTENTION_BWD:
        if (slot < 3)
            return op->u.attn.in[slot];
        return slot == 5 || slot == 6 ? op->u.attn.out[slot - 5] : SIMPAR_NO_VIEW;
    case SIMPAR_OP_EMBED:
    case SIMPAR_OP_EMBED_BWD:
    case SIMPAR_OP_XENT_MAX:
    case SIMPAR_OP_XENT_FWD:
    case SIMPAR_OP_XENT_LOSS:
    case SIMPAR_OP_XENT_BWD:
        return slot < 4 ? op->u.vocab.in[slot] : slot == 5 ? op->u.vocab.out[0] : SIMPAR_NO_VIEW;
    case SIMPAR_OP_ADAM: {
        const SimparView v[4] = {op->u.adam.param, op->u.adam.grad, op->u.adam.m, op->u.adam.v};
        return slot < 4 ? v[slot] : SIMPAR_NO_VIEW;
    }
    default:
        return slot < 5 ? op->u.kern.in[slot] : op->u.kern.out[slot - 5];
    }
}

/* How messages name a slot: "in[1]", "out[0]", GEMM's "a", Adam's "m". */
static const char *
cu_slot_name(const SimparOp *op, guint slot)
{
    static const char *const kern[CU_SLOTS] = {"in[0]", "in[1]",  "in[2]",  "in[3]",
                                               "in[4]", "out[0]", "out[1]", "out[2]"};
    static const char *const gemm[CU_SLOTS] = {"a", "b", "?", "?", "?", "c", "?", "?"};
    static const char *const adam[CU_SLOTS] = {"param", "grad", "m", "v", "?", "?", "?", "?"};
    if (op->kind == SIMPAR_OP_GEMM)
        return gemm[slot];
    return op->kind == SIMPAR_OP_ADAM ? adam[slot] : kern[slot];
}

/* Whether a view of size class `size` (see CuRoles) has elements. */
static gboolean
cu_slot_used(const SimparOp *op, char size)
{
    gboolean vocab = op->kind >= SIMPAR_OP_EMBED && op->kind <= SIMPAR_OP_XENT_BWD;
    guint64 rows = vocab ? op->u.vocab.rows : op->u.kern.rows;
    guint64 cols = vocab ? op->u.vocab.cols : op->u.kern.cols;
    switch (size) {
    case 'x':
        return rows > 0 && cols > 0;
    case 'r':
        return rows > 0;
    case 'c':
        return cols > 0;
    case 't':
        return op->u.vocab.vocab > 0 && cols > 0;
    case 'l':
        return rows > 0 && op->u.vocab.vocab > 0;
    case 'n':
        return op->u.adam.count > 0;
    case 'k':
        return op->u.gemm.k > 0;
    default:
        g_assert(size == '1');
        return TRUE;
    }
}

void
simpar_cu_buffer_types(const SimparSchedule *sched, SimparCuType *types)
{
    SimparDtype dtype = simpar_schedule_dtype(sched);
    guint n_bufs = simpar_schedule_n_buffers(sched);
    for (guint b = 0; b < n_bufs; b++)
        types[b] = simpar_cu_type_of_dtype(dtype);
    for (guint i = 0; i < simpar_schedule_n_ops(sched); i++) {
        const SimparOp *op = simpar_schedule_op(sched, i);
        if (op->kind >= SIMPAR_N_OP_KINDS)
            continue;
        for (guint s = 0; s < CU_SLOTS; s++) {
            const char *role = cu_roles[op->kind].slot[s];
            if (role == NULL || role[0] != 'S' || !cu_slot_used(op, role[1]))
                continue;
            SimparView v = cu_slot(op, s);
            if (v.buf < n_bufs)
                types[v.buf] = cu_stats_type(dtype);
        }
    }
}

/* ---- binding views to device memory ------------------------------------------------------- */

/* An op's views as device addresses (NULL where unused or empty), and its two element types:
 * those of its views of each role, or the schedule's defaults for a role without views. */
typedef struct {
    void *ptr[CU_SLOTS];
    SimparCuType t, s;
} CuBind;

static gboolean
cu_bind_slot(const SimparSchedule *sched, const SimparOp *op, const SimparCuBuf *bufs, guint slot,
             CuBind *b, gboolean seen[2], GError **error)
{
    const char *role = cu_roles[op->kind].slot[slot];
    SimparView v = cu_slot(op, slot);
    g_assert(v.buf < simpar_schedule_n_buffers(sched)); /* simpar_schedule_check() */
    const SimparCuBuf *buf = &bufs[v.buf];
    gboolean stats = role[0] == 'S';
    SimparCuType *want = stats ? &b->s : &b->t;
    if (seen[stats] && buf->type != *want)
        return cu_invalid(error, op, "%s is in buffer '%s' of %s, its other %s views are of %s",
                          cu_slot_name(op, slot), simpar_schedule_buffer(sched, v.buf)->name,
                          simpar_cu_type_name(buf->type), stats ? "statistics" : "activation",
                          simpar_cu_type_name(*want));
    *want = buf->type;
    seen[stats] = TRUE;
    b->ptr[slot] = (char *) buf->ptr + v.off * simpar_cu_type_size(buf->type);
    return TRUE;
}

static gboolean
cu_bind(const SimparSchedule *sched, const SimparOp *op, const SimparCuBuf *bufs, CuBind *b,
        GError **error)
{
    SimparDtype dtype = simpar_schedule_dtype(sched);
    gboolean seen[2] = {FALSE, FALSE};
    *b = (CuBind){.t = simpar_cu_type_of_dtype(dtype), .s = cu_stats_type(dtype)};
    for (guint s = 0; s < CU_SLOTS; s++) {
        const char *role = cu_roles[op->kind].slot[s];
        /* a view left out (RMSNorm's beta) stays NULL: simpar_schedule_check() proved that the
         * op needs no elements there */
        if (role != NULL && cu_slot_used(op, role[1]) && cu_slot(op, s).buf != G_MAXUINT &&
            !cu_bind_slot(sched, op, bufs, s, b, seen, error))
            return FALSE;
    }
    if (b->s != SIMPAR_CU_F32 && b->s != SIMPAR_CU_F64)
        return cu_invalid(error, op, "statistics are of %s; only fp32 and fp64 are supported",
                          simpar_cu_type_name(b->s));
    return TRUE;
}

/* ---- scratch ------------------------------------------------------------------------------ */

static gsize
cu_mul(gsize a, gsize b)
{
    gsize r;
    return g_size_checked_mul(&r, a, b) ? r : G_MAXSIZE;
}

/* One [nh x s x s] attention matrix of the activation type. */
static gsize
cu_attn_matrix(const SimparAttention *at, SimparCuType t)
{
    return cu_mul(cu_mul(at->nh, cu_mul(at->s, at->s)), simpar_cu_type_size(t));
}

static gsize
cu_work_bytes(const SimparOp *op, SimparCuType t, SimparCuType s)
{
    const SimparKernel *k = &op->u.kern;
    switch (op->kind) {
    case SIMPAR_OP_BIAS_GRAD:
        return simpar_cuk_colsum_work(k->rows, k->cols, 1, t, s);
    case SIMPAR_OP_LN_BWD_STATS:
        return simpar_cuk_colsum_work(k->rows, k->cols, 2, t, s);
    case SIMPAR_OP_ATTENTION:
        return op->u.attn.p > 0.0 ? cu_attn_matrix(&op->u.attn, t) : 0;
    case SIMPAR_OP_ATTENTION_BWD:
        return cu_mul(2, cu_attn_matrix(&op->u.attn, t));
    default:
        return 0;
    }
}

gsize
simpar_cu_workspace(const SimparSchedule *sched, const SimparOp *op)
{
    g_return_val_if_fail(sched != NULL && op != NULL, 0);
    SimparDtype dtype = simpar_schedule_dtype(sched);
    return cu_work_bytes(op, simpar_cu_type_of_dtype(dtype), cu_stats_type(dtype));
}

/* ---- GEMM --------------------------------------------------------------------------------- */

/* A row-major matrix (or a strided batch of them): elements, leading dimension, batch stride. */
typedef struct {
    void *p;
    gsize ld, stride;
} CuMat;

/* c = alpha op(a) op(b) + beta c for `batch` entries, row-major, all of type t. */
typedef struct {
    gboolean ta, tb;
    guint64 m, n, k, batch;
    CuMat a, b, c;
    double alpha, beta;
} CuGemm;

static gboolean
cu_gemm_fits(const CuGemm *g)
{
    return g->m <= INT_MAX && g->n <= INT_MAX && g->k <= INT_MAX && g->batch <= INT_MAX &&
           g->a.ld <= INT_MAX && g->b.ld <= INT_MAX && g->c.ld <= INT_MAX &&
           g->a.stride <= LLONG_MAX && g->b.stride <= LLONG_MAX && g->c.stride <= LLONG_MAX;
}

static cublasComputeType_t
cu_compute_type(const SimparCuCtx *ctx, SimparCuType t)
{
    switch (t) {
    case SIMPAR_CU_F32:
        return ctx->tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    case SIMPAR_CU_F64:
        return CUBLAS_COMPUTE_64F;
    default:
        return CUBLAS_COMPUTE_32F; /* fp16 and bf16 on tensor cores, fp32 accumulation */
    }
}

/* The row-major product as the transposed column-major one (see the header comment). Shapes
 * are the caller's, checked by cu_gemm_fits(). */
static gboolean
cu_gemm(const SimparCuCtx *ctx, SimparCuType t, const CuGemm *g, GError **error)
{
    cudaDataType_t dt = cu_blas_type(t);
    float alpha32 = (float) g->alpha, beta32 = (float) g->beta;
    gboolean f64 = t == SIMPAR_CU_F64;
    cublasStatus_t st = cublasGemmStridedBatchedEx(
        ctx->cublas, g->tb ? CUBLAS_OP_T : CUBLAS_OP_N, g->ta ? CUBLAS_OP_T : CUBLAS_OP_N,
        (int) g->n, (int) g->m, (int) g->k, f64 ? (const void *) &g->alpha : &alpha32, g->b.p, dt,
        (int) g->b.ld, (long long) g->b.stride, g->a.p, dt, (int) g->a.ld, (long long) g->a.stride,
        f64 ? (const void *) &g->beta : &beta32, g->c.p, dt, (int) g->c.ld, (long long) g->c.stride,
        (int) g->batch, cu_compute_type(ctx, t), CUBLAS_GEMM_DEFAULT);
    if (st == CUBLAS_STATUS_SUCCESS)
        return TRUE;
    g_autofree char *call = g_strdup_printf(
        "cublasGemmStridedBatchedEx(%s, %c%c, m=%" G_GUINT64_FORMAT ", n=%" G_GUINT64_FORMAT
        ", k=%" G_GUINT64_FORMAT ", batch=%" G_GUINT64_FORMAT ")",
        simpar_cu_type_name(t), g->ta ? 'T' : 'N', g->tb ? 'T' : 'N', g->m, g->n, g->k, g->batch);
    return simpar_cu_check_blas(st, call, error);
}

/* The handle runs on the op's stream, reads scalars from the host, and keeps fp32 exact unless
 * the compute type asks for TF32. cublasSetStream also returns the handle to cuBLAS's own
 * workspace pool for that stream. */
static gboolean
cu_blas_bind(const SimparCuCtx *ctx, GError **error)
{
    return SIMPAR_CUBLAS_TRY(error, cublasSetStream(ctx->cublas, ctx->stream)) &&
           SIMPAR_CUBLAS_TRY(error, cublasSetPointerMode(ctx->cublas, CUBLAS_POINTER_MODE_HOST)) &&
           SIMPAR_CUBLAS_TRY(error, cublasSetMathMode(ctx->cublas, CUBLAS_DEFAULT_MATH));
}

/* k == 0 without accumulation: c = 0 in every batch entry. The entries, m*n elements every
 * stride_c, form one span when the stride does not exceed m*n. */
static gboolean
cu_gemm_zero(const SimparCuCtx *ctx, SimparCuType t, const SimparGemm *g, void *c, GError **error)
{
    gsize es = simpar_cu_type_size(t), mn = (gsize) g->m * g->n;
    if (g->batch == 1 || g->stride_c <= mn)
        return SIMPAR_CU_TRY(
            error, cudaMemsetAsync(c, 0, ((g->batch - 1) * g->stride_c + mn) * es, ctx->stream));
    return SIMPAR_CU_TRY(error,
                         cudaMemset2DAsync(c, g->stride_c * es, 0, mn * es, g->batch, ctx->stream));
}

static gboolean
cu_gemm_op(const SimparCuCtx *ctx, const SimparOp *op, const CuBind *b, GError **error)
{
    const SimparGemm *g = &op->u.gemm;
    if (g->k == 0)
        return g->accumulate || cu_gemm_zero(ctx, b->t, g, b->ptr[5], error);
    CuGemm cg = {
        .ta = g->trans_a,
        .tb = g->trans_b,
        .m = g->m,
        .n = g->n,
        .k = g->k,
        .batch = g->batch,
        .a = {b->ptr[0], g->trans_a ? g->m : g->k, g->stride_a},
        .b = {b->ptr[1], g->trans_b ? g->k : g->n, g->stride_b},
        .c = {b->ptr[5], g->n, g->stride_c},
        .alpha = 1.0,
        .beta = g->accumulate ? 1.0 : 0.0,
    };
    if (!cu_gemm_fits(&cg))
        return cu_invalid(error, op, "a GEMM of %u x %u x %u, batch %u, exceeds cuBLAS's int sizes",
                          g->m, g->n, g->k, g->batch);
    return cu_blas_bind(ctx, error) && cu_gemm(ctx, b->t, &cg, error);
}

/* ---- attention ---------------------------------------------------------------------------- */

/* One sequence of an attention op: its q, k, v (and dq, dk, dv) as strided batches over heads,
 * `calls` batches of `batch` heads (every head at once, or one key/value group at a time). */
typedef struct {
    const SimparAttention *at;
    SimparCuType t;
    gsize es;      /* element size */
    gsize r;       /* heads per key/value head */
    gsize calls;   /* 1 without grouped-query attention, else nkv */
    gsize batch;   /* heads per call: nh, else r */
    gsize ld_qkv;  /* (nh + 2 nkv) dh */
    gsize ld_ctx;  /* nh * dh */
    gsize ss;      /* s * s */
    double rsqrt;  /* 1 / sqrt(dh) */
    void *work[2]; /* [nh x s x s] each */
} CuAttn;

/* Part 0 (q), 1 (k) or 2 (v) of sequence n's heads of call `call` in qkv (or dqkv) at `base`:
 * group `call` holds the q of its r heads, then k, then v (r = 1: q | k | v per head). */
static CuMat
cu_attn_qkv(const CuAttn *ca, void *base, guint64 n, gsize call, guint part)
{
    gsize dh = ca->at->dh,
          col = call * (ca->r + 2) * dh + (part == 0 ? 0 : (ca->r + part - 1) * dh);
    gsize stride = ca->r == 1 ? 3 * dh : part == 0 ? dh : 0;
    return (CuMat){(char *) base + (n * ca->at->s * ca->ld_qkv + col) * ca->es, ca->ld_qkv, stride};
}

/* Sequence n's heads of call `call` in ctx (or dctx). */
static CuMat
cu_attn_ctx(const CuAttn *ca, void *base, guint64 n, gsize call)
{
    gsize off = n * ca->at->s * ca->ld_ctx + call * ca->batch * ca->at->dh;
    return (CuMat){(char *) base + off * ca->es, ca->ld_ctx, ca->at->dh};
}

/* Sequence n's [nh x s x s] probabilities, from the first head of call `call`. */
static CuMat
cu_attn_probs(const CuAttn *ca, void *base, guint64 n, gsize call)
{
    gsize off = (n * ca->at->nh + call * ca->batch) * ca->ss;
    return (CuMat){(char *) base + off * ca->es, ca->at->s, ca->ss};
}

/* Head `i` of a batch `m` (its first element moved on by i strides). */
static CuMat
cu_attn_head(const CuAttn *ca, CuMat m, gsize i)
{
    return (CuMat){(char *) m.p + i * m.stride * ca->es, m.ld, m.stride};
}

/* c = alpha op(a) op(b) (+ beta c) per head of a batch: m x n x k is one of s x s x dh (scores,
 * dPd) or s x dh x s. */
static gboolean
cu_attn_gemm_batch(const SimparCuCtx *ctx, const CuAttn *ca, gboolean ta, gboolean tb,
                   gboolean scores, CuMat a, CuMat b, CuMat c, double alpha, double beta,
                   gsize batch, GError **error)
{
    const SimparAttention *at = ca->at;
    CuGemm g = {ta, tb,    at->s, scores ? at->s : at->dh, scores ? at->dh : at->s, batch, a, b,
                c,  alpha, beta};
    return cu_gemm(ctx, ca->t, &g, error);
}

static gboolean
cu_attn_gemm(const SimparCuCtx *ctx, const CuAttn *ca, gboolean ta, gboolean tb, gboolean scores,
             CuMat a, CuMat b, CuMat c, double alpha, GError **error)
{
    return cu_attn_gemm_batch(ctx, ca, ta, tb, scores, a, b, c, alpha, 0.0, ca->batch, error);
}

/* dK or dV of a group: op(a_i) b_i summed over its heads i (c is shared: stride 0). Without
 * grouped-query attention, one batch as any other. */
static gboolean
cu_attn_gemm_sum(const SimparCuCtx *ctx, const CuAttn *ca, CuMat a, CuMat b, CuMat c, double alpha,
                 GError **error)
{
    if (ca->r == 1)
        return cu_attn_gemm(ctx, ca, TRUE, FALSE, FALSE, a, b, c, alpha, error);
    for (gsize i = 0; i < ca->batch; i++)
        if (!cu_attn_gemm_batch(ctx, ca, TRUE, FALSE, FALSE, cu_attn_head(ca, a, i),
                                cu_attn_head(ca, b, i), c, alpha, i == 0 ? 0.0 : 1.0, 1, error))
            return FALSE;
    return TRUE;
}

static SimparCukSoftmax
cu_attn_softmax_args(const CuAttn *ca, guint64 n, void *probs)
{
    const SimparAttention *at = ca->at;
    return (SimparCukSoftmax){
        .probs = probs,
        .heads = at->nh,
        .s = at->s,
        .causal = at->causal,
        .p = at->p,
        .seed = at->seed,
        .site = SIMPAR_DROPOUT_ATTN,
        .head = (at->batch0 + n) * at->heads + at->head0,
    };
}

/* The work matrices' heads of call `call`. */
static CuMat
cu_attn_work(const CuAttn *ca, guint i, gsize call)
{
    return (CuMat){(char *) ca->work[i] + call * ca->batch * ca->ss * ca->es, ca->at->s, ca->ss};
}

/* Scores of every call, the softmax over all heads, then P V of every call. */
static gboolean
cu_attn_forward(const SimparCuCtx *ctx, const CuAttn *ca, const CuBind *b, guint64 n,
                GError **error)
{
    gboolean drop = ca->at->p > 0.0;
    for (gsize c = 0; c < ca->calls; c++)
        if (!cu_attn_gemm(ctx, ca, FALSE, TRUE, TRUE, cu_attn_qkv(ca, b->ptr[0], n, c, 0),
                          cu_attn_qkv(ca, b->ptr[0], n, c, 1), cu_attn_probs(ca, b->ptr[6], n, c),
                          ca->rsqrt, error))
            return FALSE;
    SimparCukSoftmax sm = cu_attn_softmax_args(ca, n, cu_attn_probs(ca, b->ptr[6], n, 0).p);
    sm.dropped = drop ? ca->work[0] : NULL;
    if (!SIMPAR_CU_TRY(error, simpar_cuk_softmax(ca->t, &sm, ctx->stream)))
        return FALSE;
    for (gsize c = 0; c < ca->calls; c++) {
        CuMat p = drop ? cu_attn_work(ca, 0, c) : cu_attn_probs(ca, b->ptr[6], n, c);
        if (!cu_attn_gemm(ctx, ca, FALSE, FALSE, FALSE, p, cu_attn_qkv(ca, b->ptr[0], n, c, 2),
                          cu_attn_ctx(ca, b->ptr[5], n, c), 1.0, error))
            return FALSE;
    }
    return TRUE;
}

/* dPd of every call, the softmax backward over all heads, then dV, dQ, dK of every call. */
static gboolean
cu_attn_backward(const SimparCuCtx *ctx, const CuAttn *ca, const CuBind *b, guint64 n,
                 GError **error)
{
    for (gsize c = 0; c < ca->calls; c++)
        if (!cu_attn_gemm(ctx, ca, FALSE, TRUE, TRUE, cu_attn_ctx(ca, b->ptr[2], n, c),
                          cu_attn_qkv(ca, b->ptr[0], n, c, 2), cu_attn_work(ca, 1, c), 1.0, error))
            return FALSE;
    SimparCukSoftmax sm = cu_attn_softmax_args(ca, n, cu_attn_probs(ca, b->ptr[1], n, 0).p);
    sm.dropped = ca->work[0];
    sm.grad = ca->work[1];
    if (!SIMPAR_CU_TRY(error, simpar_cuk_softmax_bwd(ca->t, &sm, ctx->stream)))
        return FALSE;
    for (gsize c = 0; c < ca->calls; c++) {
        CuMat dropped = cu_attn_work(ca, 0, c), ds = cu_attn_work(ca, 1, c);
        if (!cu_attn_gemm_sum(ctx, ca, dropped, cu_attn_ctx(ca, b->ptr[2], n, c),
                              cu_attn_qkv(ca, b->ptr[5], n, c, 2), 1.0, error) ||
            !cu_attn_gemm(ctx, ca, FALSE, FALSE, FALSE, ds, cu_attn_qkv(ca, b->ptr[0], n, c, 1),
                          cu_attn_qkv(ca, b->ptr[5], n, c, 0), ca->rsqrt, error) ||
            !cu_attn_gemm_sum(ctx, ca, ds, cu_attn_qkv(ca, b->ptr[0], n, c, 0),
                              cu_attn_qkv(ca, b->ptr[5], n, c, 1), ca->rsqrt, error))
            return FALSE;
    }
    return TRUE;
}

static gboolean
cu_attention_op(const SimparCuCtx *ctx, const SimparOp *op, const CuBind *b, GError **error)
{
    const SimparAttention *at = &op->u.attn;
    if (at->cp > 1)
        return cu_invalid(error, op,
                          "is context-parallel (rank %u of %u): the CUDA executor has no "
                          "attention over gathered keys; run it with --executor host",
                          at->cp_rank, at->cp);
    gsize nkv = at->nkv != 0 ? at->nkv : at->nh, r = at->nh / nkv;
    CuAttn ca = {
        .at = at,
        .t = b->t,
        .es = simpar_cu_type_size(b->t),
        .r = r,
        .calls = r == 1 ? 1 : nkv,
        .batch = r == 1 ? at->nh : r,
        .ld_qkv = (at->nh + 2 * nkv) * at->dh,
        .ld_ctx = (gsize) at->nh * at->dh,
        .ss = (gsize) at->s * at->s,
        .rsqrt = 1.0 / sqrt((double) at->dh),
    };
    if (ctx->work != NULL) /* checked against cu_work_bytes() by simpar_cu_compute */
        ca.work[0] = ctx->work, ca.work[1] = (char *) ctx->work + cu_attn_matrix(at, b->t);
    if (ca.ld_qkv > INT_MAX || at->s > INT_MAX || at->nh > INT_MAX)
        return cu_invalid(error, op, "attention of %u heads of %u x %u exceeds cuBLAS's int sizes",
                          at->nh, at->s, at->dh);
    if (!cu_blas_bind(ctx, error))
        return FALSE;
    for (guint64 n = 0; n < at->nb; n++) {
        gboolean ok = op->kind == SIMPAR_OP_ATTENTION ? cu_attn_forward(ctx, &ca, b, n, error)
                                                      : cu_attn_backward(ctx, &ca, b, n, error);
        if (!ok)
            return FALSE;
    }
    return TRUE;
}

/* ---- kernels ------------------------------------------------------------------------------ */

typedef struct {
    const char *name;
    SimparCukKernelFn fn;
} CuKernelFn;

typedef struct {
    const char *name;
    SimparCukVocabFn fn;
} CuVocabFn;

#define CU_FN(f)                                                                                   \
    {                                                                                              \
#f, f                                                                                      \
    }

static const CuKernelFn cu_kernel_fns[SIMPAR_N_OP_KINDS] = {
    [SIMPAR_OP_LN_STATS] = CU_FN(simpar_cuk_ln_stats),
    [SIMPAR_OP_LN_APPLY] = CU_FN(simpar_cuk_ln_apply),
    [SIMPAR_OP_LN_BWD_STATS] = CU_FN(simpar_cuk_ln_bwd_stats),
    [SIMPAR_OP_LN_BWD_APPLY] = CU_FN(simpar_cuk_ln_bwd_apply),
    [SIMPAR_OP_BIAS_ADD] = CU_FN(simpar_cuk_bias_add),
    [SIMPAR_OP_BIAS_GRAD] = CU_FN(simpar_cuk_bias_grad),
    [SIMPAR_OP_GELU] = CU_FN(simpar_cuk_gelu),
    [SIMPAR_OP_GELU_BWD] = CU_FN(simpar_cuk_gelu_bwd),
    [SIMPAR_OP_SWIGLU] = CU_FN(simpar_cuk_swiglu),
    [SIMPAR_OP_SWIGLU_BWD] = CU_FN(simpar_cuk_swiglu_bwd),
    [SIMPAR_OP_DROPOUT] = CU_FN(simpar_cuk_dropout),
    [SIMPAR_OP_DROPOUT_BWD] = CU_FN(simpar_cuk_dropout), /* the same map: dx = dy*keep/(1-p) */
    [SIMPAR_OP_ADD] = CU_FN(simpar_cuk_add),
};

static const CuVocabFn cu_vocab_fns[SIMPAR_N_OP_KINDS] = {
    [SIMPAR_OP_EMBED] = CU_FN(simpar_cuk_embed),
    [SIMPAR_OP_EMBED_BWD] = CU_FN(simpar_cuk_embed_bwd),
    [SIMPAR_OP_XENT_MAX] = CU_FN(simpar_cuk_xent_max),
    [SIMPAR_OP_XENT_FWD] = CU_FN(simpar_cuk_xent_fwd),
    [SIMPAR_OP_XENT_LOSS] = CU_FN(simpar_cuk_xent_loss),
    [SIMPAR_OP_XENT_BWD] = CU_FN(simpar_cuk_xent_bwd),
};

/* A launch's error, naming the launcher and its element types. */
static gboolean
cu_check_launch(cudaError_t e, const char *name, const CuBind *b, GError **error)
{
    if (e == cudaSuccess)
        return TRUE;
    g_autofree char *call =
        g_strdup_printf("%s(%s, %s)", name, simpar_cu_type_name(b->t), simpar_cu_type_name(b->s));
    return simpar_cu_check(e, call, error);
}

static gboolean
cu_kernel_op(const SimparCuCtx *ctx, const SimparOp *op, const CuBind *b, GError **error)
{
    const SimparKernel *k = &op->u.kern;
    SimparCukKernel a = {
        .rows = k->rows,
        .cols = k->cols,
        .hidden = (double) k->hidden,
        .eps = k->eps,
        .p = k->p,
        .seed = k->seed,
        .site = k->site,
        .row0 = k->row0,
        .col0 = k->col0,
        .global_cols = k->global_cols,
        .rms = k->rms,
    };
    for (guint i = 0; i < 5; i++)
        a.in[i] = b->ptr[i];
    for (guint i = 0; i < 3; i++)
        a.out[i] = b->ptr[5 + i];
    const CuKernelFn *f = &cu_kernel_fns[op->kind];
    return cu_check_launch(f->fn(b->t, b->s, &a, ctx->work, ctx->stream), f->name, b, error);
}

static gboolean
cu_vocab_op(const SimparCuCtx *ctx, const SimparOp *op, const CuBind *b, GError **error)
{
    const SimparVocab *v = &op->u.vocab;
    SimparCukVocab a = {
        .in = {b->ptr[0], b->ptr[1], b->ptr[2], b->ptr[3]},
        .out = b->ptr[5],
        .rows = v->rows,
        .cols = v->cols,
        .vocab0 = v->vocab0,
        .vocab = v->vocab,
        .scale = v->scale,
    };
    const CuVocabFn *f = &cu_vocab_fns[op->kind];
    return cu_check_launch(f->fn(b->t, b->s, &a, ctx->stream), f->name, b, error);
}

static gboolean
cu_adam_op(const SimparCuCtx *ctx, const SimparOp *op, const CuBind *b, GError **error)
{
    const SimparAdam *ad = &op->u.adam;
    SimparCukAdam a = {
        .param = b->ptr[0],
        .grad = b->ptr[1],
        .m = b->ptr[2],
        .v = b->ptr[3],
        .count = ad->count,
        .lr = ad->lr,
        .beta1 = ad->beta1,
        .beta2 = ad->beta2,
        .eps = ad->eps,
        .weight_decay = ad->weight_decay,
        .c1 = 1.0 - pow(ad->beta1, ad->step),
        .c2 = 1.0 - pow(ad->beta2, ad->step),
    };
    return cu_check_launch(simpar_cuk_adam(b->t, b->s, &a, ctx->stream), "simpar_cuk_adam", b,
                           error);
}

/* ---- packed columns ----------------------------------------------------------------------- */

/* PACK_COLS / UNPACK_COLS: one 2-D copy per group (width columns of every row). */
static gboolean
cu_cols_op(const SimparCuCtx *ctx, const SimparOp *op, const CuBind *b, GError **error)
{
    const SimparKernel *k = &op->u.kern;
    gsize es = simpar_cu_type_size(b->t);
    gboolean pack = op->kind == SIMPAR_OP_PACK_COLS;
    char *wide = pack ? b->ptr[0] : b->ptr[5], *packed = pack ? b->ptr[5] : b->ptr[0];
    for (guint g = 0; g < k->groups; g++) {
        char *w = wide + ((gsize) k->offset + (gsize) g * k->stride) * es;
        char *p = packed + (gsize) g * k->width * es;
        gsize wp = (gsize) k->ld * es, pp = (gsize) k->cols * es, bytes = (gsize) k->width * es;
        cudaError_t e = pack ? cudaMemcpy2DAsync(p, pp, w, wp, bytes, k->rows,
                                                 cudaMemcpyDeviceToDevice, ctx->stream)
                             : cudaMemcpy2DAsync(w, wp, p, pp, bytes, k->rows,
                                                 cudaMemcpyDeviceToDevice, ctx->stream);
        if (!SIMPAR_CU_TRY(error, e))
            return FALSE;
    }
    return TRUE;
}

/* Ring attention's blocks have no CUDA kernels: refused, not skipped. */
static gboolean
cu_ring_op(const SimparCuCtx *ctx, const SimparOp *op, const CuBind *b, GError **error)
{
    (void) ctx, (void) b;
    return cu_invalid(error, op,
                      "is ring attention (--cp-mode ring): the CUDA executor has no kernel for "
                      "it; run it with --executor host");
}

/* ---- dispatch ----------------------------------------------------------------------------- */

typedef gboolean (*CuOpFn)(const SimparCuCtx *ctx, const SimparOp *op, const CuBind *b,
                           GError **error);

static CuOpFn
cu_op_fn(SimparOpKind kind)
{
    if (kind == SIMPAR_OP_GEMM)
        return cu_gemm_op;
    if (kind == SIMPAR_OP_ATTENTION || kind == SIMPAR_OP_ATTENTION_BWD)
        return cu_attention_op;
    if (kind == SIMPAR_OP_ADAM)
        return cu_adam_op;
    if (kind == SIMPAR_OP_PACK_COLS || kind == SIMPAR_OP_UNPACK_COLS)
        return cu_cols_op;
    if (kind == SIMPAR_OP_ATTN_BLOCK || kind == SIMPAR_OP_ATTN_MERGE ||
        kind == SIMPAR_OP_ATTN_BLOCK_BWD)
        return cu_ring_op;
    if (cu_vocab_fns[kind].fn != NULL)
        return cu_vocab_op;
    if (cu_kernel_fns[kind].fn != NULL)
        return cu_kernel_op;
    return NULL; /* collectives, send, recv and blocks: nothing to compute */
}

/* GEMMs and attention with nothing to compute (the kernels' launchers skip empty shapes
 * themselves, since some of them still write zeros or -inf then). */
static gboolean
cu_op_empty(const SimparOp *op)
{
    const SimparGemm *g = &op->u.gemm;
    const SimparAttention *at = &op->u.attn;
    if (op->kind == SIMPAR_OP_GEMM)
        return g->m == 0 || g->n == 0 || g->batch == 0;
    if (op->kind == SIMPAR_OP_ATTENTION || op->kind == SIMPAR_OP_ATTENTION_BWD)
        return at->nb == 0 || at->nh == 0 || at->s == 0;
    return FALSE;
}

gboolean
simpar_cu_compute(const SimparCuCtx *ctx, const SimparSchedule *sched, const SimparOp *op,
                  const SimparCuBuf *bufs, GError **error)
{
    g_return_val_if_fail(ctx != NULL && sched != NULL && op != NULL && bufs != NULL, FALSE);
    g_return_val_if_fail(op->kind < SIMPAR_N_OP_KINDS, FALSE);
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    if (simpar_op_is_moe(op->kind)) /* no generated schedule holds them yet */
        return cu_invalid(error, op, "is a mixture-of-experts op, which runs on the host only");
    if (simpar_op_is_attention(op->kind) && op->u.attn.dv != 0)
        return cu_invalid(error, op,
                          "is multi-head latent attention (qk and v head sizes apart), which runs "
                          "on the host only");
    CuOpFn fn = cu_op_fn(op->kind);
    if (fn == NULL || cu_op_empty(op))
        return TRUE;
    CuBind b;
    if (!cu_bind(sched, op, bufs, &b, error))
        return FALSE;
    gsize need = cu_work_bytes(op, b.t, b.s);
    if (need > 0 && (ctx->work == NULL || ctx->work_bytes < need))
        return cu_invalid(error, op,
                          "needs %" G_GSIZE_FORMAT " bytes of scratch, has %" G_GSIZE_FORMAT, need,
                          ctx->work != NULL ? ctx->work_bytes : 0);
    return fn(ctx, op, &b, error);
}

/* ---- conversions -------------------------------------------------------------------------- */

/* `n` elements of `buf` from `off`, as a device address. */
static void *
cu_buf_at(SimparCuBuf buf, gsize off, gsize n)
{
    g_return_val_if_fail(off <= buf.elems && n <= buf.elems - off, NULL);
    return (char *) buf.ptr + off * simpar_cu_type_size(buf.type);
}

gboolean
simpar_cu_from_f64(SimparCuBuf buf, gsize off, const double *src64, gsize n, cudaStream_t stream,
                   GError **error)
{
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    if (n == 0)
        return TRUE;
    void *dst = cu_buf_at(buf, off, n);
    g_return_val_if_fail(dst != NULL && src64 != NULL, FALSE);
    return SIMPAR_CU_TRY(error, simpar_cuk_from_f64(buf.type, dst, src64, n, stream));
}

gboolean
simpar_cu_to_f64(SimparCuBuf buf, gsize off, double *dst64, gsize n, cudaStream_t stream,
                 GError **error)
{
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    if (n == 0)
        return TRUE;
    const void *src = cu_buf_at(buf, off, n);
    g_return_val_if_fail(src != NULL && dst64 != NULL, FALSE);
    return SIMPAR_CU_TRY(error, simpar_cuk_to_f64(buf.type, src, dst64, n, stream));
}
