/* compute.c - the roofline time of compute ops, kernel fusion, and the GPU figures (compute.h).
 *
 * Plausibility of the defaults (gemm_eff_max 0.85, gemm_half_dim 128, launch_s 5e-6, mem_eff
 * 0.8) against XLA's measured sm_90 bf16 GEMM table (openxla/xla
 * xla/service/gpu/model/matmul_interpolator_data.h; bench/fidelity/gemm-h100-xla.csv), with
 * the H100 SXM datasheet figures (989e12 bf16, 3350e9 B/s), as flops / modelled time:
 *
 *   m x n x k            XLA TFLOP/s   model    m x n x k            XLA TFLOP/s   model
 *   4096 x 4096 x 4096   783           746 -5%  1024 x 1024 x 2048   350           362 +3%
 *   2048 x 2048 x 2048   632           582 -8%  4096 x 512 x 512     239           236 -1%
 *   2048 x 1024 x 2048   523           478 -9%  1024 x 256 x 1024    68            86 +26%
 *   256 x 512 x 256      11.5          12.8 +12% (memory and launch bound)
 *   256 x 512 x 4096     92            144 +57% (thin m, n with long k: the worst of the 28)
 *
 * Over the 28 transcribed shapes the mean absolute error is 12%, 22 of 28 are within 15%; the
 * model is optimistic for thin GEMMs with a long contraction (k = 4096 with m, n <= 1024).
 * The small shapes are carried by the launch overhead, the large ones by gemm_eff_max.
 */
#include "compute-private.h"
#include "moe.h"
#include "schedule-private.h"
#include <json-glib/json-glib.h>
#include <math.h>
#include <string.h>

G_DEFINE_QUARK(simpar_compute_error_quark, simpar_compute_error)

/* ----- GPU figures: one table for the calibration keys and their sane ranges ----- */

typedef struct {
    const char *key;
    gsize offset;
    double min, max; /* smaller or larger values are absurd (a denormal peak: infinite times) */
    int dtype;       /* peaks: the dtype they serve (needed only for it); -1: always needed;
                        GPU_OPTIONAL: 0 means not given */
} GpuField;

#define GPU_OPTIONAL (-2)
#define GPU_KEFF(c)  (G_STRUCT_OFFSET(SimparGpu, kernel_eff) + (c) * sizeof(double))
#define GPU_KBW(c)   (G_STRUCT_OFFSET(SimparGpu, kernel_bw) + (c) * sizeof(double))

#define GPU_PEAK(dt) (G_STRUCT_OFFSET(SimparGpu, peak_flops) + (dt) * sizeof(double))

/* Bounds: efficiencies are fractions of at least 1e-3; no GPU comes near 1e17 flop/s, 1e14
 * B/s or 1e14 bytes, nor below 1e6 of each (a denormal or tiny figure makes times infinite); a
 * launch overhead above 10 ms or a half-efficiency dimension above 65536 is a typo. */
static const GpuField gpu_fields[] = {
    {"gemm_eff_max", G_STRUCT_OFFSET(SimparGpu, gemm_eff_max), 1e-3, 1.0, -1},
    {"gemm_half_dim", G_STRUCT_OFFSET(SimparGpu, gemm_half_dim), 1e-3, 65536.0, -1},
    {"mem_eff", G_STRUCT_OFFSET(SimparGpu, mem_eff), 1e-3, 1.0, -1},
    {"launch_s", G_STRUCT_OFFSET(SimparGpu, launch_s), 1e-12, 1e-2, -1},
    {"peak_fp16_flops", GPU_PEAK(SIMPAR_DTYPE_FP16), 1e6, 1e17, SIMPAR_DTYPE_FP16},
    {"peak_bf16_flops", GPU_PEAK(SIMPAR_DTYPE_BF16), 1e6, 1e17, SIMPAR_DTYPE_BF16},
    {"peak_fp32_flops", GPU_PEAK(SIMPAR_DTYPE_FP32), 1e6, 1e17, SIMPAR_DTYPE_FP32},
    {"peak_fp64_flops", GPU_PEAK(SIMPAR_DTYPE_FP64), 1e6, 1e17, SIMPAR_DTYPE_FP64},
    {"peak_fp8_flops", GPU_PEAK(SIMPAR_DTYPE_FP8), 1e6, 1e17, SIMPAR_DTYPE_FP8},
    {"mem_bandwidth_Bps", G_STRUCT_OFFSET(SimparGpu, mem_bw_Bps), 1e6, 1e14, -1},
    {"mem_bytes", G_STRUCT_OFFSET(SimparGpu, mem_bytes), 1e6, 1e14, -1},
    {"kernel_eff_stream", GPU_KEFF(SIMPAR_KCLASS_STREAM), 1e-3, 1.0, GPU_OPTIONAL},
    {"kernel_eff_activation", GPU_KEFF(SIMPAR_KCLASS_ACTIVATION), 1e-3, 1.0, GPU_OPTIONAL},
    {"kernel_eff_dropout", GPU_KEFF(SIMPAR_KCLASS_DROPOUT), 1e-3, 1.0, GPU_OPTIONAL},
    {"kernel_eff_norm", GPU_KEFF(SIMPAR_KCLASS_NORM), 1e-3, 1.0, GPU_OPTIONAL},
    {"kernel_eff_softmax", GPU_KEFF(SIMPAR_KCLASS_SOFTMAX), 1e-3, 1.0, GPU_OPTIONAL},
    {"kernel_eff_optimizer", GPU_KEFF(SIMPAR_KCLASS_OPTIMIZER), 1e-3, 1.0, GPU_OPTIONAL},
    {"kernel_bw_stream_Bps", GPU_KBW(SIMPAR_KCLASS_STREAM), 1e6, 1e14, GPU_OPTIONAL},
    {"kernel_bw_activation_Bps", GPU_KBW(SIMPAR_KCLASS_ACTIVATION), 1e6, 1e14, GPU_OPTIONAL},
    {"kernel_bw_dropout_Bps", GPU_KBW(SIMPAR_KCLASS_DROPOUT), 1e6, 1e14, GPU_OPTIONAL},
    {"kernel_bw_norm_Bps", GPU_KBW(SIMPAR_KCLASS_NORM), 1e6, 1e14, GPU_OPTIONAL},
    {"kernel_bw_softmax_Bps", GPU_KBW(SIMPAR_KCLASS_SOFTMAX), 1e6, 1e14, GPU_OPTIONAL},
    {"kernel_bw_optimizer_Bps", GPU_KBW(SIMPAR_KCLASS_OPTIMIZER), 1e6, 1e14, GPU_OPTIONAL},
};

void
simpar_gpu_init(SimparGpu *gpu)
{
    g_return_if_fail(gpu != NULL);
    *gpu = (SimparGpu){
        .gemm_eff_max = 0.85,
        .gemm_half_dim = 128,
        .mem_eff = 0.8,
        .launch_s = 5e-6,
    };
}

static const char *
gpu_name(const SimparGpu *gpu)
{
    return gpu->model != NULL ? gpu->model : "(unnamed)";
}

gboolean
simpar_gpu_validate(const SimparGpu *gpu, SimparDtype dtype, GError **error)
{
    g_return_val_if_fail(gpu != NULL && dtype <= SIMPAR_DTYPE_FP8, FALSE);
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    for (guint i = 0; i < G_N_ELEMENTS(gpu_fields); i++) {
        const GpuField *f = &gpu_fields[i];
        double v = G_STRUCT_MEMBER(double, gpu, f->offset);
        gboolean needed = f->dtype == -1 || f->dtype == (int) dtype;
        if (v == 0 && !needed) /* a peak of another dtype: 0 means unsupported */
            continue;
        if (v == 0) {
            g_set_error(error, SIMPAR_COMPUTE_ERROR, SIMPAR_COMPUTE_ERROR_INVALID,
                        "GPU %s has no %s, needed for %s training (give it as a host property "
                        "or a calibration key)",
                        gpu_name(gpu), f->key, simpar_dtype_name(dtype));
            return FALSE;
        }
        if (!(v >= f->min && v <= f->max)) { /* also refuses NaN */
            g_set_error(error, SIMPAR_COMPUTE_ERROR, SIMPAR_COMPUTE_ERROR_INVALID,
                        "GPU %s: %s = %g is out of range [%g, %g]", gpu_name(gpu), f->key, v,
                        f->min, f->max);
            return FALSE;
        }
    }
    return TRUE;
}

static const GpuField *
gpu_field_lookup(const char *key)
{
    for (guint i = 0; i < G_N_ELEMENTS(gpu_fields); i++)
        if (g_str_equal(key, gpu_fields[i].key))
            return &gpu_fields[i];
    return NULL;
}

gboolean
simpar_gpu_figure_valid(const char *key, double v, char **range)
{
    const GpuField *f = gpu_field_lookup(key);
    if (f == NULL || (v >= f->min && v <= f->max))
        return TRUE;
    *range = g_strdup_printf("from %g to %g", f->min, f->max);
    return FALSE;
}

/* Members of a calibration file that are not the GPU's: the network's link figures (read by
 * sim/platform.c) and the file's provenance and fit residuals (written by simpar calibrate). */
static const char *const gpu_other_keys[] = {
    "intra_node_bandwidth_Bps",
    "intra_node_latency_s",
    "inter_node_bandwidth_Bps",
    "inter_node_latency_s",
    "fabric_bandwidth_Bps",
    "nvls_latency_s",
    "source",
    "fit",
    "format",  /* "simpar-calibration" (docs/schemas/calibration.json) */
    "version", /* of that format */
};

static gboolean
gpu_other_key(const char *key)
{
    for (guint i = 0; i < G_N_ELEMENTS(gpu_other_keys); i++)
        if (g_str_equal(key, gpu_other_keys[i]))
            return TRUE;
    return FALSE;
}

static gboolean
gpu_unknown_key(const char *path, const char *key, GError **error)
{
    g_autoptr(GString) valid = g_string_new(NULL);
    for (guint i = 0; i < G_N_ELEMENTS(gpu_fields); i++)
        g_string_append_printf(valid, "%s%s", i ? ", " : "", gpu_fields[i].key);
    for (guint i = 0; i < G_N_ELEMENTS(gpu_other_keys); i++)
        g_string_append_printf(valid, ", %s", gpu_other_keys[i]);
    g_string_append(valid, ", gemm_table, kernel_bw_Bps, kernel_floor_s, kernel_max_bytes");
    g_set_error(error, SIMPAR_COMPUTE_ERROR, SIMPAR_COMPUTE_ERROR_PARSE,
                "%s: unknown key \"%s\" (valid: %s)", path, key, valid->str);
    return FALSE;
}

static gboolean
gpu_read_member(SimparGpu *gpu, const char *path, const char *key, JsonNode *node, GError **error)
{
    if (g_str_equal(key, "gemm_table"))
        return gemm_table_from_json(node, path, &gpu->gemm_table, error);
    if (g_str_equal(key, "kernel_bw_Bps"))
        return kind_values_from_json(node, path, key, 1e6, 1e14, &gpu->kind_bw, error);
    if (g_str_equal(key, "kernel_floor_s"))
        return kind_values_from_json(node, path, key, 0, 1e-3, &gpu->kind_floor, error);
    if (g_str_equal(key, "kernel_max_bytes"))
        return kind_values_from_json(node, path, key, 1, 1e15, &gpu->kind_max_bytes, error);
    const GpuField *f = gpu_field_lookup(key);
    if (f == NULL)
        return gpu_unknown_key(path, key, error);
    GType type = JSON_NODE_HOLDS_VALUE(node) ? json_node_get_value_type(node) : G_TYPE_INVALID;
    if (type != G_TYPE_INT64 && type != G_TYPE_DOUBLE) {
        g_set_error(error, SIMPAR_COMPUTE_ERROR, SIMPAR_COMPUTE_ERROR_PARSE,
                    "%s: \"%s\" must be a number", path, key);
        return FALSE;
    }
    double v = json_node_get_double(node); /* converts integers too */
    if (!(v >= f->min && v <= f->max)) {
        g_set_error(error, SIMPAR_COMPUTE_ERROR, SIMPAR_COMPUTE_ERROR_INVALID,
                    "%s: \"%s\" = %g is out of range: it must be from %g to %g", path, key, v,
                    f->min, f->max);
        return FALSE;
    }
    G_STRUCT_MEMBER(double, gpu, f->offset) = v;
    return TRUE;
}

gboolean
simpar_gpu_load_calibration(SimparGpu *gpu, const char *path, GError **error)
{
    g_return_val_if_fail(gpu != NULL && path != NULL, FALSE);
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    g_autoptr(JsonParser) parser = json_parser_new();
    JsonObject *obj = simpar_json_load_object(parser, path, SIMPAR_JSON_SMALL_MAX, error);
    if (obj == NULL)
        return FALSE;
    g_autoptr(GList) members = json_object_get_members(obj);
    SimparGpu updated = *gpu; /* a bad file leaves the caller's figures untouched */
    for (GList *l = members; l != NULL; l = l->next)
        if (!gpu_other_key(l->data) &&
            !gpu_read_member(&updated, path, l->data, json_object_get_member(obj, l->data), error))
            return FALSE;
    if (updated.gemm_table != gpu->gemm_table ||
        memcmp(updated.kernel_eff, gpu->kernel_eff, sizeof gpu->kernel_eff) != 0 ||
        memcmp(updated.kernel_bw, gpu->kernel_bw, sizeof gpu->kernel_bw) != 0 ||
        updated.kind_bw != gpu->kind_bw || updated.kind_floor != gpu->kind_floor ||
        updated.kind_max_bytes != gpu->kind_max_bytes) {
        g_autofree char *source = g_strdup_printf(
            "calibration %s; where it gives none, %s", path,
            gpu->data_source != NULL ? gpu->data_source : "the platform's roofline figures");
        updated.data_source = g_intern_string(source);
    }
    *gpu = updated;
    return TRUE;
}

/* ----- roofline ----- */

static double
compute_roofline(const SimparGpu *gpu, SimparDtype dtype, double flops, double eff, double bytes)
{
    double t_flops = flops > 0 ? flops / (gpu->peak_flops[dtype] * eff) : 0;
    double t_mem = bytes / (gpu->mem_bw_Bps * gpu->mem_eff);
    return gpu->launch_s + MAX(t_flops, t_mem);
}

/* The bandwidth kernels of class kc reach: their measured fraction of the datasheet's, or
 * mem_eff where the GPU's data has none. */
double
simpar_compute_kernel_bandwidth(const SimparGpu *gpu, SimparKernelClass kc)
{
    if (kc < SIMPAR_KCLASS_N && gpu->kernel_bw[kc] > 0) /* measured; never above the datasheet */
        return MIN(gpu->kernel_bw[kc], gpu->mem_bw_Bps);
    double eff =
        kc < SIMPAR_KCLASS_N && gpu->kernel_eff[kc] > 0 ? gpu->kernel_eff[kc] : gpu->mem_eff;
    return gpu->mem_bw_Bps * eff;
}

double
simpar_compute_op_bandwidth(const SimparGpu *gpu, SimparOpKind kind)
{
    double bw = gpu->kind_bw != NULL && kind < SIMPAR_N_OP_KINDS ? gpu->kind_bw[kind] : 0;
    if (bw > 0) /* measured for the kind itself; never above the datasheet */
        return MIN(bw, gpu->mem_bw_Bps);
    return simpar_compute_kernel_bandwidth(gpu, simpar_kernel_class_of(kind));
}

/* Elementwise and row-wise kernels: their few flops hide behind the memory traffic. */
static double
compute_memory_time(const SimparGpu *gpu, double bw, double bytes)
{
    return gpu->launch_s + bytes / bw;
}

/* A kernel of op kind `kind`: its measured floor beyond the launch as well (a calibration's). */
double
simpar_compute_op_floor(const SimparGpu *gpu, SimparOpKind kind)
{
    return gpu->kind_floor != NULL && kind < SIMPAR_N_OP_KINDS ? gpu->kind_floor[kind] : 0;
}

static double
compute_kind_time(const SimparGpu *gpu, SimparOpKind kind, double bw, double bytes)
{
    return compute_memory_time(gpu, bw, bytes) + simpar_compute_op_floor(gpu, kind);
}

/* Tiles of a dimension much smaller than gemm_half_dim leave the tensor cores idle. */
static double
compute_gemm_eff(const SimparGpu *gpu, double m, double n, double k)
{
    double h = gpu->gemm_half_dim;
    return gpu->gemm_eff_max * (m / (m + h)) * (n / (n + h)) * (k / (k + h));
}

/* Bytes a GEMM moves: an accumulating GEMM (c +=) reads c as well as writing it. An FP8 GEMM
 * reads its inputs in FP8 and writes bf16 (Transformer Engine's GEMMs, fp32 accumulation). */
static double
compute_gemm_bytes(SimparDtype dtype, double m, double n, double k, double batch,
                   gboolean accumulate)
{
    double out =
        dtype == SIMPAR_DTYPE_FP8 ? simpar_dtype_size(SIMPAR_DTYPE_BF16) : simpar_dtype_size(dtype);
    return ((m * k + k * n) * simpar_dtype_size(dtype) + (accumulate ? 2 : 1) * m * n * out) *
           batch;
}

/* The shape curve alone; an FP8 GEMM never faster than the most FP8 throughput measured at any
 * shape (gemm_fp8_max_flops: Hopper's FP8 tops out at 71-73% of its datasheet peak where its
 * bf16 reaches 80%, bench/fidelity/gemm-mamf-fp8.csv). */
static double
compute_gemm_curve(const SimparGpu *gpu, SimparDtype dtype, double m, double n, double k,
                   double batch, gboolean accumulate)
{
    double eff = compute_gemm_eff(gpu, m, n, k);
    if (dtype == SIMPAR_DTYPE_FP8 && gpu->gemm_fp8_max_flops > 0)
        eff = MIN(eff, gpu->gemm_fp8_max_flops / gpu->peak_flops[dtype]);
    return compute_roofline(gpu, dtype, 2 * m * n * k * batch, eff,
                            compute_gemm_bytes(dtype, m, n, k, batch, accumulate));
}

typedef struct {
    const SimparGpu *gpu;
    SimparDtype dtype;
} GemmCtx;

/* The fastest a GEMM can run: the datasheet's peak at full efficiency, or its bytes at the
 * full bandwidth, after the launch. */
static double
compute_gemm_floor(const SimparGpu *gpu, SimparDtype dtype, double m, double n, double k,
                   double batch, gboolean accumulate)
{
    return gpu->launch_s +
           MAX(2 * m * n * k * batch / gpu->peak_flops[dtype],
               compute_gemm_bytes(dtype, m, n, k, batch, accumulate) / gpu->mem_bw_Bps);
}

static double
compute_gemm_row_curve(const void *ctx, double m, double n, double k, double batch, double *floor)
{
    const GemmCtx *c = ctx;
    *floor = compute_gemm_floor(c->gpu, c->dtype, m, n, k, batch, FALSE);
    return compute_gemm_curve(c->gpu, c->dtype, m, n, k, batch, FALSE);
}

/* The curve corrected by the GPU's measured table (compute-data.c), never faster than the
 * datasheet allows: the peak at full efficiency, the bytes at the full bandwidth. */
static double
compute_gemm_op(const SimparGpu *gpu, SimparDtype dtype, const GemmQuery *q, gboolean accumulate)
{
    double t = compute_gemm_curve(gpu, dtype, q->m, q->n, q->k, q->batch, accumulate);
    GemmCtx ctx = {gpu, dtype};
    /* every figure compute_gemm_row_curve reads, for the table's kept row ratios */
    const double key[] = {gpu->peak_flops[dtype], gpu->mem_bw_Bps,        gpu->mem_eff,
                          gpu->launch_s,          gpu->gemm_eff_max,      gpu->gemm_half_dim,
                          (double) dtype,         gpu->gemm_fp8_max_flops};
    double ratio;
    if (gpu->gemm_table == NULL || !gemm_table_ratio(gpu->gemm_table, q, compute_gemm_row_curve,
                                                     &ctx, key, sizeof key, &ratio))
        return t;
    return MAX(t * ratio, compute_gemm_floor(gpu, dtype, q->m, q->n, q->k, q->batch, accumulate));
}

static double
compute_gemm(const SimparGpu *gpu, SimparDtype dtype, double m, double n, double k, double batch,
             gboolean accumulate)
{
    GemmQuery q = {dtype, m, n, k, batch, FALSE, FALSE};
    return compute_gemm_op(gpu, dtype, &q, accumulate);
}

double
simpar_compute_sm_share(const SimparGpu *gpu, const SimparGemm *g)
{
    if (g->comm_sms == 0 || gpu->sms <= (gint64) g->comm_sms)
        return 1;
    return (double) gpu->sms / (double) (gpu->sms - (gint64) g->comm_sms);
}

static gboolean
compute_usable(const SimparGpu *gpu, SimparDtype dtype)
{
    return dtype <= SIMPAR_DTYPE_FP8 && gpu->peak_flops[dtype] > 0 && gpu->mem_bw_Bps > 0 &&
           gpu->mem_eff > 0 && gpu->gemm_eff_max > 0;
}

double
simpar_compute_gemm_time(const SimparGpu *gpu, SimparDtype dtype, double m, double n, double k,
                         double batch)
{
    g_return_val_if_fail(gpu != NULL && compute_usable(gpu, dtype), 0.0);
    return compute_gemm(gpu, dtype, m, n, k, batch, FALSE);
}

double
simpar_compute_gemm_time_ops(const SimparGpu *gpu, SimparDtype dtype, double m, double n, double k,
                             double batch, gboolean trans_a, gboolean trans_b)
{
    g_return_val_if_fail(gpu != NULL && compute_usable(gpu, dtype), 0.0);
    GemmQuery q = {dtype, m, n, k, batch, trans_a, trans_b};
    return compute_gemm_op(gpu, dtype, &q, FALSE);
}

/* ----- FP8 (Transformer Engine) ----- */

/* What Transformer Engine runs around a linear's FP8 GEMMs (transformer_engine/pytorch/module/
 * linear.py and its quantizers; NVIDIA/TransformerEngine), per GEMM op of a layer schedule,
 * the op's operands a [m x k] and b [k x n]:
 *   forward (no transposes): the input X = a is cast to FP8 with its transpose (Hopper's FP8
 *     GEMMs take only TN operands, so the weight gradient's X^T is made now), and the weight
 *     W = b likewise: each a cast-transpose reading 2 bytes and writing 2 FP8 copies;
 *   data gradient (b transposed): the output gradient dY = a, cast to E5M2 (delayed, current)
 *     with its transpose, which the weight gradient reuses;
 *   weight gradient (a transposed): nothing (X^T and dY^T are cast already).
 * mxfp8 writes a rowwise and a columnwise copy, each with one E8M0 scale byte per 32 values;
 * current scaling reads each tensor once more for its amax first (one more kernel); delayed
 * scaling takes the amax inside the cast, and its scale update (one multi-tensor kernel per
 * forward over the amax histories, Transformer Engine's default length 1024, 4-byte floats,
 * read and written) is counted on the forward GEMM for its three tensors (X, W, dY), without a
 * launch of its own.
 *
 * The weight's cast is the step's, not the micro-batch's: Megatron-Core passes Linear.forward
 * is_first_microbatch, and Transformer Engine quantizes the weight into its cached FP8
 * workspace only when it is TRUE (linear.py: update_ws = is_first_microbatch is None or
 * is_first_microbatch), reusing the cached copy for the step's other micro-batches and for
 * recomputed forwards. `weight` picks that part: the weight's cast (forward GEMMs only), or
 * everything else (the input's and the output gradient's casts, the scale update). */
#define COMPUTE_FP8_HISTORY 1024

/* Bytes per element of one cast from bf16 to FP8 writing `copies` FP8 copies (a linear's
 * operand: 2, it and its transpose, or mxfp8's rowwise and columnwise copies): read 2, write
 * the copies (mxfp8: a scale byte per 32 values each), and current scaling's amax pass. */
static double
compute_fp8_cast_per_elem(SimparFp8Recipe recipe, double copies)
{
    double one = recipe == SIMPAR_FP8_MXFP8 ? 1 + 1.0 / 32 : 1;
    return 2 + copies * one + (recipe == SIMPAR_FP8_CURRENT ? 2 : 0);
}

/* The cast's bytes with `copies` FP8 copies of an operand (compute_fp8_cast_per_elem). */
static double
compute_fp8_cast_bytes_copies(const SimparGemm *g, gboolean weight, guint *launches, double copies)
{
    double per_elem = compute_fp8_cast_per_elem((SimparFp8Recipe) g->fp8, copies);
    double batch = MAX(g->batch, 1u), a = (double) g->m * g->k * batch;
    double b = (double) g->k * g->n * (g->stride_b == 0 ? 1 : batch), bytes = 0; /* one b */
    gboolean forward = !g->trans_a && !g->trans_b, dgrad = g->trans_b && !g->trans_a;
    guint casts = 0;
    if (weight && forward && g->chunk == 0) /* W, once for a linear's chunks */
        bytes = b * per_elem, casts = 1;
    else if (!weight && (forward || dgrad)) /* X, or dY */
        bytes = a * per_elem, casts = 1;
    if (!weight && forward && g->fp8 == SIMPAR_FP8_DELAYED)
        bytes += 3 * 2 * COMPUTE_FP8_HISTORY * 4.0;
    if (launches != NULL) /* a linear's chunks: one cast of the whole input */
        *launches = g->chunk > 0 ? 0 : casts * (g->fp8 == SIMPAR_FP8_CURRENT ? 2 : 1);
    return bytes;
}

double
simpar_compute_fp8_cast_bytes(const SimparGemm *g, gboolean weight, guint *launches)
{
    g_return_val_if_fail(g != NULL && g->fp8 != SIMPAR_FP8_NONE, 0);
    return compute_fp8_cast_bytes_copies(g, weight, launches, 2);
}

/* The FP8 copies a cast writes of an operand on `gpu`: mxfp8 its rowwise and columnwise ones
 * (block scales run along one direction); a per-tensor recipe the operand and its transpose
 * where FP8 GEMMs take only the TN layout (Hopper), one copy where they take every layout
 * (Blackwell: Transformer Engine's quantizers write no transpose where
 * nvte_is_non_tn_fp8_gemm_supported, transformer_engine/pytorch/csrc/quantizer.cpp). */
static double
compute_fp8_copies(const SimparGpu *gpu, SimparFp8Recipe recipe)
{
    return recipe != SIMPAR_FP8_MXFP8 && gpu->fp8_any_layout ? 1 : 2;
}

double
simpar_compute_fp8_cast_time(const SimparGpu *gpu, const SimparGemm *g, gboolean weight)
{
    g_return_val_if_fail(gpu != NULL && g != NULL && g->fp8 != SIMPAR_FP8_NONE, 0);
    guint launches;
    double bytes = compute_fp8_cast_bytes_copies(g, weight, &launches,
                                                 compute_fp8_copies(gpu, (SimparFp8Recipe) g->fp8));
    return launches * gpu->launch_s +
           bytes / simpar_compute_kernel_bandwidth(gpu, SIMPAR_KCLASS_STREAM);
}

double
simpar_compute_fp8_weight_cast_time(const SimparGpu *gpu, const SimparSchedule *sched)
{
    g_return_val_if_fail(gpu != NULL && sched != NULL, 0);
    double sum = 0;
    for (guint i = 0; i < simpar_schedule_n_ops(sched); i++) {
        const SimparOp *op = simpar_schedule_op(sched, i);
        if (op->kind == SIMPAR_OP_GEMM && op->u.gemm.fp8 != SIMPAR_FP8_NONE &&
            op->phase == SIMPAR_PHASE_FORWARD)
            sum += simpar_compute_fp8_cast_time(gpu, &op->u.gemm, TRUE);
    }
    return sum / simpar_schedule_n_ranks(sched);
}

gboolean
simpar_gpu_check_fp8(const SimparGpu *gpu, SimparFp8Recipe recipe, gboolean fp8_attention,
                     GError **error)
{
    g_return_val_if_fail(gpu != NULL, FALSE);
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    if (recipe == SIMPAR_FP8_NONE)
        return TRUE;
    if (fp8_attention && !(gpu->peak_flops[SIMPAR_DTYPE_FP8] > 0)) {
        g_set_error(error, SIMPAR_COMPUTE_ERROR, SIMPAR_COMPUTE_ERROR_OPTION,
                    "--fp8-dot-product-attention: GPU %s has no FP8 tensor cores (cuDNN's FP8 "
                    "attention needs Hopper or Blackwell, such as the dgx-h100, h200-sxm, "
                    "dgx-b200 or gb200-nvl72 presets); drop it and use --dtype bf16 or fp16",
                    gpu_name(gpu));
        return FALSE;
    }
    if (!(gpu->peak_flops[SIMPAR_DTYPE_FP8] > 0)) {
        g_set_error(error, SIMPAR_COMPUTE_ERROR, SIMPAR_COMPUTE_ERROR_OPTION,
                    "--dtype fp8: GPU %s has no FP8 tensor cores (no peak_fp8_flops; FP8 "
                    "training needs Hopper or Blackwell, such as the dgx-h100, h200-sxm, "
                    "dgx-b200 or gb200-nvl72 presets); use --dtype bf16 or fp16",
                    gpu_name(gpu));
        return FALSE;
    }
    if (recipe == SIMPAR_FP8_MXFP8 && !gpu->mxfp8) {
        g_set_error(error, SIMPAR_COMPUTE_ERROR, SIMPAR_COMPUTE_ERROR_OPTION,
                    "--fp8-recipe mxfp8: GPU %s has no block-scaled FP8 tensor cores (MXFP8 "
                    "needs Blackwell: dgx-b200, b200-sxm, gb200-nvl72, gb300-nvl72, gb200); "
                    "valid here: delayed, current",
                    gpu_name(gpu));
        return FALSE;
    }
    return simpar_gpu_validate(gpu, SIMPAR_DTYPE_FP8, error);
}

gboolean
simpar_attention_check_fp8(gboolean fp8_attention, SimparAttentionImpl attn, GError **error)
{
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    if (!fp8_attention || attn == SIMPAR_ATTENTION_FLASH)
        return TRUE;
    g_set_error(error, SIMPAR_COMPUTE_ERROR, SIMPAR_COMPUTE_ERROR_OPTION,
                "--fp8-dot-product-attention needs --attention flash (cuDNN's FP8 attention is "
                "one fused kernel; --attention %s runs the attention core as separate bf16 "
                "GEMMs and softmax)",
                simpar_attention_name(attn));
    return FALSE;
}

/* ----- attention ----- */

/* Keys per query row: the sequence's, with context parallelism every rank's (s C), or one
 * ring block's (s). */
static double
compute_keys(const SimparOpKind kind, const SimparAttention *a)
{
    gboolean block = kind == SIMPAR_OP_ATTN_BLOCK || kind == SIMPAR_OP_ATTN_BLOCK_BWD;
    return (double) a->s * (block ? 1 : MAX(a->cp, 1));
}

/* A head's value columns: dv in the latent layout (multi-head latent attention), else dh. */
static double
compute_dv(const SimparAttention *a)
{
    return a->dv != 0 ? a->dv : a->dh;
}

/* The bandwidth of the attention's passes over its scores: the kind's own where a calibration
 * measured it (simpar calibrate: the bench's attention rows less their GEMMs), else the
 * softmax kernels'. */
static double
compute_scores_bw(const SimparGpu *gpu, SimparOpKind kind)
{
    double bw = gpu->kind_bw != NULL ? gpu->kind_bw[kind] : 0;
    return bw > 0 ? MIN(bw, gpu->mem_bw_Bps)
                  : simpar_compute_kernel_bandwidth(gpu, SIMPAR_KCLASS_SOFTMAX);
}

/* The unfused attention's GEMMs in order, forward QK^T [s x S x dh] and PV [s x dv x S], for s
 * query rows and S keys per sequence; backward dV = P^T dctx, dP = dctx V^T, dQ = dS K,
 * dK = dS^T Q; the times in g[], their count returned. */
static guint
compute_unfused_gemms(const SimparGpu *gpu, SimparDtype dt, const SimparAttention *a, gboolean bwd,
                      double g[4])
{
    double bh = (double) a->nb * a->nh, s = a->s, S = compute_keys(SIMPAR_OP_ATTENTION, a),
           dh = a->dh, dv = compute_dv(a);
    if (!bwd) {
        g[0] = compute_gemm(gpu, dt, s, S, dh, bh, FALSE);
        g[1] = compute_gemm(gpu, dt, s, dv, S, bh, FALSE);
        return 2;
    }
    g[0] = compute_gemm(gpu, dt, S, dv, s, bh, FALSE);
    g[1] = compute_gemm(gpu, dt, s, S, dv, bh, FALSE);
    g[2] = compute_gemm(gpu, dt, s, dh, S, bh, FALSE);
    g[3] = compute_gemm(gpu, dt, S, dh, s, bh, FALSE);
    return 4;
}

/* Elements of the scores: heads x query rows x keys. */
static double
compute_scores(const SimparAttention *a)
{
    return (double) a->nb * a->nh * a->s * compute_keys(SIMPAR_OP_ATTENTION, a);
}

/* simpar-exec's one kernel over the scores (exec/cuda-compute.c): forward the softmax reads the
 * scores and writes the probabilities and, when p > 0, the dropped ones beside them; backward it
 * reads P and dP and writes dS and the dropped probabilities dV takes, whatever p. */
static double
compute_exec_score_bytes(SimparDtype dt, const SimparAttention *a, gboolean bwd)
{
    return (bwd ? 4 : 2 + (a->p > 0)) * compute_scores(a) * simpar_dtype_size(dt);
}

void
simpar_compute_attention_parts(const SimparGpu *gpu, SimparDtype dt, const SimparAttention *a,
                               gboolean bwd, double *gemm_s, double *score_bytes)
{
    g_return_if_fail(gpu != NULL && compute_usable(gpu, dt) && a != NULL);
    double g[4];
    guint n = compute_unfused_gemms(gpu, dt, a, bwd, g);
    *gemm_s = 0;
    for (guint i = 0; i < n; i++)
        *gemm_s += g[i];
    *score_bytes = compute_exec_score_bytes(dt, a, bwd);
}

/* The GEMMs and the passes over the scores in memory. PyTorch and Megatron-Core: forward a
 * softmax kernel (read, write) and, when p > 0, a dropout kernel that keeps a 1-byte mask (at
 * p = 0 PyTorch's dropout returns its input: no kernel), between QK^T and PV; backward, after
 * dV and dP, the dropout's (p > 0) and the softmax's (dP, P -> dS). simpar-exec (the unfused
 * set): its one kernel. */
static double
compute_unfused(const SimparGpu *gpu, SimparDtype dt, const SimparAttention *a, gboolean bwd)
{
    SimparOpKind kind = bwd ? SIMPAR_OP_ATTENTION_BWD : SIMPAR_OP_ATTENTION;
    double ds = simpar_dtype_size(dt), scores = compute_scores(a), g[4];
    double bw = compute_scores_bw(gpu, kind);
    double dropout =
        simpar_compute_op_bandwidth(gpu, bwd ? SIMPAR_OP_DROPOUT_BWD : SIMPAR_OP_DROPOUT);
    double drop = a->p > 0 ? compute_memory_time(gpu, dropout, scores * (2 * ds + 1)) : 0;
    compute_unfused_gemms(gpu, dt, a, bwd, g);
    if (gpu->kernel_set == SIMPAR_KERNELS_UNFUSED) {
        double one = compute_memory_time(gpu, bw, compute_exec_score_bytes(dt, a, bwd));
        return bwd ? g[0] + g[1] + one + g[2] + g[3] : g[0] + one + g[1];
    }
    if (!bwd)
        return g[0] + compute_memory_time(gpu, bw, 2 * scores * ds) + drop + g[1];
    return g[0] + g[1] + drop + compute_memory_time(gpu, bw, 3 * scores * ds) + g[2] + g[3];
}

/* One kernel; q, k, v, ctx and (backward) dctx, dqkv cross memory once, plus the fp32
 * log-sum-exp per row that the backward needs. Causal masks skip the upper triangle's tiles;
 * the backward recomputes QK^T: 2.5x the forward FLOPs. Forward q and ctx, backward q, ctx,
 * dctx, dq and the dctx . ctx row sums' second pass over dctx; k and v (backward also dk, dv)
 * are nkv/nh of q's and ctx's sizes with grouped-query attention. q and k have dh columns a
 * head, v and ctx dv (multi-head latent attention: 192 and 128). */
static double
compute_flash(const SimparGpu *gpu, SimparDtype dt, SimparOpKind kind, const SimparAttention *a,
              gboolean bwd)
{
    double bh = (double) a->nb * a->nh, s = a->s, S = compute_keys(kind, a), dh = a->dh;
    double dv = compute_dv(a), ds = simpar_dtype_size(dt);
    /* causal: half the score tiles, also per context-parallel rank (chunks c and 2C-1-c) */
    double flops = 2 * bh * s * S * (dh + dv) * (a->causal ? 0.5 : 1.0) * (bwd ? 2.5 : 1.0);
    double q = bh * s * dh, o = bh * s * dv; /* elements of q, ctx */
    double r = a->nkv != 0 ? (double) a->nkv / a->nh : 1.0, k = bh * S * dh * r,
           v = bh * S * dv * r;
    double bytes = (bwd ? 2 * q + 3 * o + 2 * (k + v) : q + o + k + v) * ds + bh * s * 4;
    return compute_roofline(gpu, dt, flops, compute_gemm_eff(gpu, s, S, dh), bytes);
}

/* cuDNN's fused FP8 attention as Transformer Engine runs it (fp8_dpa: FusedAttnFunc in
 * transformer_engine/pytorch/attention/dot_product_attention/backends.py): flash attention's
 * FLOPs and efficiency curve at the FP8 peak; the kernel reads Q, K, V (backward also O and dO)
 * in FP8 and writes O (backward dQ, dK, dV) in bf16, and the fp32 log-sum-exp rows (backward
 * bytes as compute_flash counts them). Around it, cast kernels (one FP8 copy each, no transpose:
 * compute_fp8_cast_per_elem; current scaling one launch more each): the forward casts Q, K
 * and V (3 launches), and under the delayed recipe O, kept in FP8 for the backward; the
 * backward casts dO. O stays bf16 under current scaling (NVTE_DPA_FP8CS_O_in_F16, default on)
 * and mxfp8. Ring blocks cast their own inputs. */
static double
compute_flash_fp8(const SimparGpu *gpu, SimparOpKind kind, const SimparAttention *a, gboolean bwd)
{
    double bh = (double) a->nb * a->nh, s = a->s, S = compute_keys(kind, a), dh = a->dh;
    double flops = 4 * bh * s * S * dh * (a->causal ? 0.5 : 1.0) * (bwd ? 2.5 : 1.0);
    double q = bh * s * dh, kv = bh * S * dh * (a->nkv != 0 ? (double) a->nkv / a->nh : 1.0);
    gboolean o8 = a->fp8 == SIMPAR_FP8_DELAYED;                 /* O kept in FP8 for the backward */
    double one = a->fp8 == SIMPAR_FP8_MXFP8 ? 1 + 1.0 / 32 : 1; /* an FP8 element */
    double cast = compute_fp8_cast_per_elem((SimparFp8Recipe) a->fp8, 1);
    double bytes = bwd ? q * (one + (o8 ? one : 2) + 2 * one + 2) + kv * (2 * one + 4)
                       : q * (one + 2) + kv * 2 * one;
    double cast_bytes = bwd ? q * cast : (q + 2 * kv + (o8 ? q : 0)) * cast;
    guint launches = (bwd ? 1 : 3 + o8) * (a->fp8 == SIMPAR_FP8_CURRENT ? 2 : 1);
    return compute_roofline(gpu, SIMPAR_DTYPE_FP8, flops, compute_gemm_eff(gpu, s, S, dh),
                            bytes + bh * s * 4) +
           launches * gpu->launch_s +
           cast_bytes / simpar_compute_kernel_bandwidth(gpu, SIMPAR_KCLASS_STREAM);
}

static double
compute_attention(const SimparGpu *gpu, SimparDtype dt, const SimparOp *op,
                  SimparAttentionImpl impl)
{
    gboolean bwd = op->kind == SIMPAR_OP_ATTENTION_BWD || op->kind == SIMPAR_OP_ATTN_BLOCK_BWD;
    if (op->kind == SIMPAR_OP_ATTN_MERGE) { /* read both outputs, write one; the lse rows */
        const SimparAttention *a = &op->u.attn;
        double o = (double) a->nb * a->s * a->nh * a->dh, rows = (double) a->nb * a->nh * a->s;
        return compute_kind_time(gpu, op->kind, simpar_compute_op_bandwidth(gpu, op->kind),
                                 3 * o * simpar_dtype_size(dt) + 3 * rows * 4);
    }
    /* ring blocks are flash attention's kernels, whatever --attention says */
    gboolean ring = op->kind == SIMPAR_OP_ATTN_BLOCK || op->kind == SIMPAR_OP_ATTN_BLOCK_BWD;
    if ((impl == SIMPAR_ATTENTION_FLASH || ring) && op->u.attn.fp8 != SIMPAR_FP8_NONE)
        return compute_flash_fp8(gpu, op->kind, &op->u.attn, bwd);
    if (impl == SIMPAR_ATTENTION_FLASH || ring)
        return compute_flash(gpu, dt, op->kind, &op->u.attn, bwd);
    return compute_unfused(gpu, dt, &op->u.attn, bwd);
}

/* ----- one op on its own ----- */

/* Dropout keeps its mask for the backward, one byte per element (Korthikanti et al.); at p = 0
 * there is none. */
static double
compute_mask_bytes(const SimparOp *op)
{
    gboolean dropout = op->kind == SIMPAR_OP_DROPOUT || op->kind == SIMPAR_OP_DROPOUT_BWD;
    return dropout && op->u.kern.p > 0 ? (double) op->u.kern.rows * op->u.kern.cols : 0;
}

/* Dropout at p = 0: PyTorch's dropout returns its input (no kernel; in Megatron-Core's
 * bias-dropout-add the add stays, fuse_find); simpar-exec's kernel copies x to y at the
 * streaming kernels' bandwidth (its dropout bandwidth is measured with the mask's hashing). */
static double
compute_dropout_off(const SimparGpu *gpu, SimparDtype dt, const SimparOp *op)
{
    if (gpu->kernel_set != SIMPAR_KERNELS_UNFUSED)
        return 0;
    return compute_memory_time(gpu, simpar_compute_kernel_bandwidth(gpu, SIMPAR_KCLASS_STREAM),
                               2.0 * op->u.kern.rows * op->u.kern.cols * simpar_dtype_size(dt));
}

/* Elements each kernel reads and writes come from its shape (simpar_op_accesses), the same
 * ranges the schedule checks use. */
static double
compute_kernel_bytes(const SimparSchedule *sched, const SimparOp *op)
{
    SimparAccess acc[SIMPAR_MAX_ACCESSES];
    guint n = simpar_op_accesses(sched, op, acc);
    double elems = 0;
    for (guint i = 0; i < n; i++)
        elems += acc[i].len;
    return elems * simpar_dtype_size(simpar_schedule_dtype(sched)) + compute_mask_bytes(op);
}

/* ----- embedding, cross-entropy, optimizer ----- */

#define COMPUTE_ID_BYTES   8.0 /* token ids and targets are int64, as Megatron-LM passes them */
#define COMPUTE_STAT_BYTES 4.0 /* per-row statistics (max, sums, loss) are fp32 */

/* Exponentials, sums and the optimizer's arithmetic run on the vector units in fp32, not the
 * tensor cores: their flops count against peak_fp32_flops (or, on a platform that does not
 * give it, the dtype's peak) at full efficiency. They hide behind the memory traffic on every
 * GPU listed in topologies/, but the roofline keeps them honest. */
static double
compute_vector_time(const SimparGpu *gpu, SimparOpKind kind, SimparDtype dt, double flops,
                    double bytes)
{
    double peak = gpu->peak_flops[SIMPAR_DTYPE_FP32] > 0 ? gpu->peak_flops[SIMPAR_DTYPE_FP32]
                                                         : gpu->peak_flops[dt];
    return gpu->launch_s + simpar_compute_op_floor(gpu, kind) +
           MAX(flops / peak, bytes / simpar_compute_op_bandwidth(gpu, kind));
}

/* Bytes, element sizes ds (the dtype), 8 per id, 4 per row statistic; r rows, c columns,
 * v = the slice's vocabulary:
 *   EMBED      gathers r rows of the table, reads the ids, writes y:     2 r c ds + 8 r
 *   EMBED_BWD  reads dy and the ids, read-modify-writes r rows of dtable: 3 r c ds + 8 r
 *   XENT_MAX   reads the logits, writes the maxima:                      r v ds + 4 r
 *   XENT_FWD   logits, maxima, targets in; sums and target logits out:   r v ds + 20 r,
 *              plus ~4 flops per logit (subtract, exp, add)
 *   XENT_LOSS  maxima and statistics in, the loss read and written:      12 r + 8
 *   XENT_BWD   logits, maxima, targets, statistics in; dlogits out:      2 r v ds + 20 r,
 *              plus ~4 flops per logit (subtract, exp, divide, subtract) */
static double
compute_vocab(const SimparGpu *gpu, SimparDtype dt, const SimparOp *op)
{
    const SimparVocab *v = &op->u.vocab;
    double r = v->rows, rc = r * v->cols, rv = r * (double) v->vocab, ds = simpar_dtype_size(dt);
    double ids = COMPUTE_ID_BYTES * r, stat = COMPUTE_STAT_BYTES * r;
    const double bw = simpar_compute_op_bandwidth(gpu, op->kind);
    switch (op->kind) {
    case SIMPAR_OP_EMBED:
        return compute_kind_time(gpu, op->kind, bw, 2 * rc * ds + ids);
    case SIMPAR_OP_EMBED_BWD:
        return compute_kind_time(gpu, op->kind, bw, 3 * rc * ds + ids);
    case SIMPAR_OP_XENT_MAX:
        return compute_kind_time(gpu, op->kind, bw, rv * ds + stat);
    case SIMPAR_OP_XENT_FWD: /* max and target in, two statistics out */
        return compute_vector_time(gpu, op->kind, dt, 4 * rv, rv * ds + 3 * stat + ids);
    case SIMPAR_OP_XENT_LOSS:
        return compute_kind_time(gpu, op->kind, bw, 3 * stat + 2 * COMPUTE_STAT_BYTES);
    default: /* XENT_BWD: max, two statistics and the target in */
        return compute_vector_time(gpu, op->kind, dt, 4 * rv, 2 * rv * ds + 3 * stat + ids);
    }
}

/* Mixture-of-experts routing (schedule.h, SimparMoe) as Megatron-Core's fused permutation
 * kernels run it: each moves the routed rows (T k of h), not the all-to-all's padding; the gate
 * reads every logit (top-k) and writes the scores; sort and unsort move the received rows. The
 * all-gather dispatcher's permutation runs over the gathered rows (G T of them, G the TP x EP
 * group): the rank's experts' share of the choices (G T k / EP rows) moved, the gathered side
 * read or written whole, and its probs' E/EP local columns; its gate writes the dense probs. */
static double
compute_moe(const SimparGpu *gpu, SimparDtype dt, const SimparOp *op)
{
    const SimparMoe *m = &op->u.moe;
    double ds = simpar_dtype_size(dt), T = m->tokens, k = m->top_k, h = m->hidden;
    double routed = T * k * h * ds, tokens = T * h * ds, scores = T * k * COMPUTE_STAT_BYTES;
    double logits = T * m->experts * COMPUTE_STAT_BYTES;
    double received = (double) m->experts * m->capacity * h * ds, map = 0;
    const double bw = simpar_compute_op_bandwidth(gpu, op->kind);
    if (m->gather > 0) { /* the all-gather dispatcher (schedule.h) */
        double n = m->gather, local = (double) m->experts / m->ep;
        if (op->kind == SIMPAR_OP_MOE_GATE || op->kind == SIMPAR_OP_MOE_GATE_BWD)
            scores = T * m->experts * COMPUTE_STAT_BYTES; /* the dense probs */
        else /* the gathered rows' side whole, the local experts' share of the choices moved, the
                probs' local columns of every gathered row (token_dispatcher.py's local_map and
                local_probs slices) */
            tokens = n * tokens, routed = n * routed / m->ep,
            scores = map = n * T * local * COMPUTE_STAT_BYTES;
    }
    switch (op->kind) {
    case SIMPAR_OP_MOE_GATE:
        return compute_vector_time(gpu, op->kind, dt, 4 * T * m->experts, logits + scores);
    case SIMPAR_OP_MOE_GATE_BWD:
        return compute_kind_time(gpu, op->kind, bw, 2 * logits + scores);
    case SIMPAR_OP_MOE_DISPATCH:
    case SIMPAR_OP_MOE_DISPATCH_BWD: /* routed rows one way, the tokens the other */
        return compute_kind_time(gpu, op->kind, bw, routed + tokens + map);
    case SIMPAR_OP_MOE_COMBINE:
        return compute_kind_time(gpu, op->kind, bw, routed + scores + tokens);
    case SIMPAR_OP_MOE_COMBINE_BWD:
        return compute_kind_time(gpu, op->kind, bw, tokens + 2 * routed + 2 * scores);
    case SIMPAR_OP_MOE_SORT:
    case SIMPAR_OP_MOE_UNSORT: /* expert tensor parallelism: the etp gathered copies */
        return compute_kind_time(gpu, op->kind, bw, 2 * received * MAX(m->etp, 1u));
    default: { /* DeepEP's hops: the a side read or written, the b side the other way */
        gboolean reduce = op->kind >= SIMPAR_OP_MOE_HOP_REDUCE;
        double R = MAX(m->node_ranks, 1u), w = (h + (reduce ? 0 : simpar_moe_hop_scores(m))) * ds;
        double rail = simpar_moe_hop_ranks(m) / R * m->cap_node * w, node = R * m->cap_gpu * w;
        double sides[3] = {tokens + rail, rail + node, node + received * MAX(m->etp, 1u)};
        return compute_kind_time(gpu, op->kind, bw, sides[MIN(m->hop, 2u)]);
    }
    }
}

/* The optimizer step per element of the rank's parameters (schedule.h, SimparAdam), as each
 * kernel set's framework runs it, ds the dtype's size. Each pass is one kernel of the optimizer
 * class: its launch and floor once (a multi-tensor launch covers millions of elements).
 *   unfused   simpar-exec's one Adam kernel. With a 16-bit dtype it reads the 16-bit gradient
 *             (2 bytes), reads and writes the fp32 master weight, momentum and variance
 *             (3 x (4 + 4) = 24) and writes the 16-bit weight (2): 28 bytes. In fp32 or fp64
 *             training the weight is its own master: the gradient read, the weight, momentum and
 *             variance read and written, 7 ds.
 *   megatron  Megatron-Core's MixedPrecisionOptimizer.step (megatron/core/optimizer/optimizer.py
 *             and clip_grads.py, core_v0.12.0 to core_v0.19.0): in fp16, the fp16 gradient buffer
 *             copied into fp32 main gradients (2 + 4) and unscaled with the inf/nan check
 *             (4 + 4); the gradient norm for clipping (multi_tensor_l2norm over the fp32
 *             gradients, 4); the gradients rescaled by the clip coefficient (multi_tensor_scale,
 *             4 + 4: --clip-grad defaults to 1.0, and since core_v0.18.0, where Transformer
 *             Engine provides multi_tensor_scale_tensor, clip_grad_by_total_norm_fp32 rescales
 *             every step by the coefficient clamped to 1 without reading the norm back; before,
 *             only when the norm was past the limit, which early training's norms often are:
 *             counted every step); Adam on the fp32 master weights with fp32 gradients (4 + 24:
 *             bf16 training accumulates and reduces its gradients in fp32, which Megatron-LM
 *             forces); the master weights copied to the 16-bit model weights (4 + 2). bf16: 46
 *             bytes in 4 kernels; fp16: 60 in 6. fp32 or fp64 training (FP32Optimizer): the norm,
 *             the rescale and Adam, 10 ds in 3.
 *   pytorch   torch.nn.utils.clip_grad_norm_ (torch/nn/utils/clip_grad.py: the gradients' norm,
 *             then every gradient times the clamped coefficient, unconditionally: 1 + 2 gradient
 *             sizes) and torch.optim.AdamW(fused=True) on the master weights (7 sizes); with a
 *             16-bit dtype the master weights and gradients are fp32 (FSDP's mixed precision):
 *             40 bytes in 3 kernels, 10 ds otherwise; fp16 adds GradScaler's unscale (4 + 4).
 *             The 16-bit weights are cast where they are gathered or used, not here.
 * About 12 flops per element for Adam (two moment updates, bias corrections, square root,
 * divide, decay, step), 2 for the norm, 1 for the rescale. */
static double
compute_adam(const SimparGpu *gpu, SimparDtype dt, const SimparAdam *a)
{
    double ds = simpar_dtype_size(dt), n = (double) a->count, per_elem, flops = 12;
    guint passes = 1;
    gboolean half = ds == 2;
    switch ((SimparKernelSet) gpu->kernel_set) {
    case SIMPAR_KERNELS_MEGATRON:
        per_elem = half ? 4 + (4 + 4) + (4 + 24) + (4 + 2) : 10 * ds, passes = half ? 4 : 3;
        flops += 3; /* the norm's 2, the rescale's 1 */
        if (dt == SIMPAR_DTYPE_FP16)
            per_elem += (2 + 4) + (4 + 4), passes += 2, flops += 1;
        break;
    case SIMPAR_KERNELS_PYTORCH:
        per_elem = half ? 4 + 8 + 28 : 10 * ds, passes = 3, flops += 3;
        if (dt == SIMPAR_DTYPE_FP16) /* GradScaler.unscale_ */
            per_elem += 4 + 4, passes += 1, flops += 1;
        break;
    default: /* SIMPAR_KERNELS_UNFUSED */
        per_elem = half ? 2 + 3 * (4 + 4) + 2 : 7 * ds;
        break;
    }
    double fixed = (passes - 1) * (gpu->launch_s + simpar_compute_op_floor(gpu, SIMPAR_OP_ADAM));
    return fixed + compute_vector_time(gpu, SIMPAR_OP_ADAM, dt, flops * n, per_elem * n);
}

/* The gradient buffer zeroed before a step's first forward (schedule.h, SimparZeroGrad), as each
 * kernel set's framework does it:
 *   megatron  DistributedDataParallel.zero_grad_buffer (megatron/core/distributed/
 *             distributed_data_parallel.py, called by train_step in megatron/training/training.py
 *             at the start of every iteration) runs grad_data.zero_() on every gradient buffer
 *             (param_and_grad_buffer.py, _ParamAndGradBuffer.reset): one write-only pass over the
 *             whole buffer, elem_bytes per gradient (fp32 when gradients are accumulated and
 *             reduced in fp32, which arguments.py makes the default for bf16; else the model's
 *             dtype), the distributed optimizer's shards being views into it. The optimizer's own
 *             zero_grad (optimizer.py) sets the fp32 main gradients to None: no kernel. Priced as
 *             a streaming kernel (a memset is one) writing count x elem_bytes bytes.
 *   pytorch   optimizer.zero_grad() sets gradients to None by default since PyTorch 2.0
 *             (torch.optim.Optimizer.zero_grad, set_to_none=True): no kernel, 0.
 *   unfused   simpar-exec runs one step on buffers allocated zeroed: no kernel, 0. */
static double
compute_zero_grad(const SimparGpu *gpu, const SimparZeroGrad *z)
{
    if ((SimparKernelSet) gpu->kernel_set != SIMPAR_KERNELS_MEGATRON || z->count == 0)
        return 0;
    return compute_kind_time(gpu, SIMPAR_OP_ZERO_GRAD,
                             simpar_compute_op_bandwidth(gpu, SIMPAR_OP_ZERO_GRAD),
                             (double) z->count * z->elem_bytes);
}

static double
compute_op_time(const SimparGpu *gpu, const SimparSchedule *sched, const SimparOp *op,
                SimparAttentionImpl attn)
{
    SimparDtype dt = simpar_schedule_dtype(sched);
    const SimparGemm *g = &op->u.gemm;
    switch (op->kind) {
    case SIMPAR_OP_EMBED:
    case SIMPAR_OP_EMBED_BWD:
    case SIMPAR_OP_XENT_MAX:
    case SIMPAR_OP_XENT_FWD:
    case SIMPAR_OP_XENT_LOSS:
    case SIMPAR_OP_XENT_BWD:
        return compute_vocab(gpu, dt, op);
    case SIMPAR_OP_ADAM:
        return compute_adam(gpu, dt, &op->u.adam);
    case SIMPAR_OP_ZERO_GRAD:
        return compute_zero_grad(gpu, &op->u.zero);
    case SIMPAR_OP_BLOCK:
        return 0; /* the interpreter times blocks by their key */
    case SIMPAR_OP_MOE_GATE:
    case SIMPAR_OP_MOE_GATE_BWD:
    case SIMPAR_OP_MOE_DISPATCH:
    case SIMPAR_OP_MOE_DISPATCH_BWD:
    case SIMPAR_OP_MOE_COMBINE:
    case SIMPAR_OP_MOE_COMBINE_BWD:
    case SIMPAR_OP_MOE_SORT:
    case SIMPAR_OP_MOE_UNSORT:
    case SIMPAR_OP_MOE_HOP:
    case SIMPAR_OP_MOE_HOP_BWD:
    case SIMPAR_OP_MOE_HOP_REDUCE:
    case SIMPAR_OP_MOE_HOP_REDUCE_BWD:
        return compute_moe(gpu, dt, op);
    case SIMPAR_OP_GEMM: {
        SimparDtype gt = g->fp8 != SIMPAR_FP8_NONE ? SIMPAR_DTYPE_FP8 : dt;
        GemmQuery q = {gt, g->m, g->n, g->k, g->batch, g->trans_a, g->trans_b};
        if (g->batch > 1 && g->stride_b == 0 && !g->trans_a) /* blocks of rows, one b: */
            q.m *= g->batch, q.batch = 1; /* the tiles of one GEMM of all the rows */
        return compute_gemm_op(gpu, gt, &q, g->accumulate) * simpar_compute_sm_share(gpu, g) +
               (g->fp8 != SIMPAR_FP8_NONE ? simpar_compute_fp8_cast_time(gpu, g, FALSE) : 0);
    }
    case SIMPAR_OP_ATTENTION:
    case SIMPAR_OP_ATTENTION_BWD:
    case SIMPAR_OP_ATTN_BLOCK:
    case SIMPAR_OP_ATTN_MERGE:
    case SIMPAR_OP_ATTN_BLOCK_BWD:
        return compute_attention(gpu, dt, op, attn);
    case SIMPAR_OP_COLLECTIVE:
    case SIMPAR_OP_SEND:
    case SIMPAR_OP_RECV:
        return 0; /* the network's business */
    case SIMPAR_OP_DROPOUT:
    case SIMPAR_OP_DROPOUT_BWD:
        if (op->u.kern.p == 0)
            return compute_dropout_off(gpu, dt, op);
        return compute_kind_time(gpu, op->kind, simpar_compute_op_bandwidth(gpu, op->kind),
                                 compute_kernel_bytes(sched, op));
    case SIMPAR_OP_PACK_COLS: /* the packed elements read and written once */
    case SIMPAR_OP_UNPACK_COLS:
        return compute_kind_time(gpu, op->kind, simpar_compute_op_bandwidth(gpu, op->kind),
                                 2.0 * op->u.kern.rows * op->u.kern.cols * simpar_dtype_size(dt));
    default:
        return compute_kind_time(gpu, op->kind, simpar_compute_op_bandwidth(gpu, op->kind),
                                 compute_kernel_bytes(sched, op));
    }
}

/* The same roofline with unit figures and no launch overhead reads back each side on its own:
 * infinite peaks and a unit bandwidth make every time the bytes, infinite bandwidth and unit
 * peaks at full efficiency (gemm_half_dim ~0: g(x) = 1 for x >= 1) make it the FLOPs. The op is
 * its own kernel, as simpar-exec runs it (the unfused set: a bench row's bytes, the optimizer
 * step as one Adam kernel). */
void
simpar_compute_op_cost(const SimparSchedule *sched, const SimparOp *op, SimparAttentionImpl attn,
                       double *flops, double *bytes)
{
    g_return_if_fail(sched != NULL && op != NULL && flops != NULL && bytes != NULL);
    SimparGpu by_bytes = {.gemm_eff_max = 1,
                          .gemm_half_dim = 1e-300,
                          .mem_eff = 1,
                          .mem_bw_Bps = 1,
                          .kernel_set = SIMPAR_KERNELS_UNFUSED};
    if (op->kind == SIMPAR_OP_ZERO_GRAD) /* simpar-exec runs none: the bytes Megatron's writes */
        by_bytes.kernel_set = SIMPAR_KERNELS_MEGATRON;
    SimparGpu by_flops = by_bytes;
    by_flops.mem_bw_Bps = INFINITY;
    for (guint d = 0; d <= SIMPAR_DTYPE_FP8; d++)
        by_bytes.peak_flops[d] = INFINITY, by_flops.peak_flops[d] = 1;
    *bytes = compute_op_time(&by_bytes, sched, op, attn);
    *flops = compute_op_time(&by_flops, sched, op, attn);
}

/* ----- fusion ----- */

#define COMPUTE_MAX_FUSED 3

typedef struct {
    const SimparSchedule *sched;
    const guint *ops; /* the rank's ops in program order */
    guint n;
    const gboolean *fused; /* by global op index: already in a group */
    SimparKernelSet set;
} FuseCtx;

static const SimparOp *
fuse_op(const FuseCtx *f, guint pos)
{
    return simpar_schedule_op(f->sched, f->ops[pos]);
}

/* The next op of the rank on the same stream, if it is an unfused kernel of `kind` on `cols`
 * columns of the same rows that reads `v` as input `in`; G_MAXUINT otherwise. */
static guint
fuse_next_cols(const FuseCtx *f, guint pos, SimparOpKind kind, guint in, SimparView v, guint cols)
{
    const SimparOp *op = fuse_op(f, pos);
    for (guint q = pos + 1; q < f->n; q++) {
        const SimparOp *next = fuse_op(f, q);
        if (next->stream != op->stream)
            continue;
        gboolean match = next->kind == kind && !f->fused[f->ops[q]] &&
                         next->u.kern.rows == op->u.kern.rows && next->u.kern.cols == cols &&
                         next->u.kern.in[in].buf == v.buf && next->u.kern.in[in].off == v.off;
        return match ? q : G_MAXUINT;
    }
    return G_MAXUINT;
}

/* The same on the same block. */
static guint
fuse_next(const FuseCtx *f, guint pos, SimparOpKind kind, guint in, SimparView v)
{
    return fuse_next_cols(f, pos, kind, in, v, fuse_op(f, pos)->u.kern.cols);
}

/* The bias gradient may sit after the linear's GEMMs: it only needs the activation backward's
 * output (twice as wide for SwiGLU), so anything in between leaves the fusion possible. Stops at
 * the next activation backward. */
static guint
fuse_bias_grad(const FuseCtx *f, guint pos)
{
    const SimparOp *op = fuse_op(f, pos);
    SimparView dx = op->u.kern.out[0];
    guint cols = op->u.kern.cols * (op->kind == SIMPAR_OP_SWIGLU_BWD ? 2 : 1);
    for (guint q = pos + 1; q < f->n; q++) {
        const SimparOp *next = fuse_op(f, q);
        if (next->stream != op->stream || f->fused[f->ops[q]])
            continue;
        if (next->kind == SIMPAR_OP_GELU_BWD || next->kind == SIMPAR_OP_SWIGLU_BWD)
            return G_MAXUINT;
        if (next->kind == SIMPAR_OP_BIAS_GRAD && next->u.kern.in[0].buf == dx.buf &&
            next->u.kern.in[0].off == dx.off && next->u.kern.rows == op->u.kern.rows &&
            next->u.kern.cols == cols)
            return q;
    }
    return G_MAXUINT;
}

/* The residual add that takes the dropout at `pos`'s output, or G_MAXUINT. */
static guint
fuse_dropout_add(const FuseCtx *f, guint pos)
{
    SimparView d = fuse_op(f, pos)->u.kern.out[0];
    guint r = fuse_next(f, pos, SIMPAR_OP_ADD, 0, d);
    return r != G_MAXUINT ? r : fuse_next(f, pos, SIMPAR_OP_ADD, 1, d);
}

/* bias + dropout + residual add (bias_dropout_add), bias + GeLU (bias_gelu) or bias + SwiGLU
 * (bias_swiglu, on half as many output columns). */
static guint
fuse_bias_add(const FuseCtx *f, guint pos, guint group[COMPUTE_MAX_FUSED])
{
    const SimparOp *op = fuse_op(f, pos);
    SimparView y = op->u.kern.out[0];
    guint q = fuse_next(f, pos, SIMPAR_OP_GELU, 0, y);
    if (q == G_MAXUINT && op->u.kern.cols % 2 == 0)
        q = fuse_next_cols(f, pos, SIMPAR_OP_SWIGLU, 0, y, op->u.kern.cols / 2);
    if (q != G_MAXUINT) {
        group[1] = q;
        return 2;
    }
    q = fuse_next(f, pos, SIMPAR_OP_DROPOUT, 0, y);
    if (q == G_MAXUINT)
        return 1;
    guint r = fuse_dropout_add(f, q);
    if (r == G_MAXUINT)
        return 1;
    group[1] = q, group[2] = r;
    return 3;
}

/* The positions of the group that starts at `pos` (group[0] = pos); returns its size. */
static guint
fuse_find(const FuseCtx *f, guint pos, guint group[COMPUTE_MAX_FUSED])
{
    const SimparOp *op = fuse_op(f, pos);
    guint q = G_MAXUINT;
    group[0] = pos;
    gboolean megatron = f->set == SIMPAR_KERNELS_MEGATRON; /* plain PyTorch: layer norm only */
    if (f->set == SIMPAR_KERNELS_UNFUSED ||
        (!megatron && op->kind != SIMPAR_OP_LN_STATS && op->kind != SIMPAR_OP_LN_BWD_STATS))
        return 1;
    switch (op->kind) {
    case SIMPAR_OP_BIAS_ADD:
        return fuse_bias_add(f, pos, group);
    case SIMPAR_OP_LN_STATS: /* a statistics all-reduce in between breaks the fusion */
        q = fuse_next(f, pos, SIMPAR_OP_LN_APPLY, 1, op->u.kern.out[0]);
        break;
    case SIMPAR_OP_LN_BWD_STATS:
        q = fuse_next(f, pos, SIMPAR_OP_LN_BWD_APPLY, 4, op->u.kern.out[0]);
        break;
    case SIMPAR_OP_GELU_BWD:
    case SIMPAR_OP_SWIGLU_BWD:
        q = fuse_bias_grad(f, pos);
        break;
    case SIMPAR_OP_DROPOUT: /* no bias before it: dropout + residual add, one kernel */
        q = fuse_dropout_add(f, pos);
        break;
    default:
        break;
    }
    group[1] = q;
    return q == G_MAXUINT ? 1 : 2;
}

static gboolean
fuse_overlap(const SimparAccess *a, const SimparAccess *b)
{
    return a->buf == b->buf && a->off < b->off + b->len && b->off < a->off + a->len;
}

/* Does an op of the rank after `pos` that is not in the group read what `w` wrote? */
static gboolean
fuse_read_outside(const FuseCtx *f, guint pos, const guint *group, guint n_group,
                  const SimparAccess *w)
{
    for (guint q = pos + 1; q < f->n; q++) {
        gboolean member = FALSE;
        for (guint g = 0; g < n_group; g++)
            member = member || group[g] == q;
        SimparAccess acc[SIMPAR_MAX_ACCESSES];
        guint na = member ? 0 : simpar_op_accesses(f->sched, fuse_op(f, q), acc);
        for (guint i = 0; i < na; i++)
            if (!acc[i].write && fuse_overlap(&acc[i], w))
                return TRUE;
    }
    return FALSE;
}

/* Is `w` read by a member after member `m`? */
static gboolean
fuse_read_inside(const FuseCtx *f, const guint *group, guint n_group, guint m,
                 const SimparAccess *w)
{
    for (guint g = m + 1; g < n_group; g++) {
        SimparAccess acc[SIMPAR_MAX_ACCESSES];
        guint na = simpar_op_accesses(f->sched, fuse_op(f, group[g]), acc);
        for (guint i = 0; i < na; i++)
            if (!acc[i].write && fuse_overlap(&acc[i], w))
                return TRUE;
    }
    return FALSE;
}

/* An element an earlier access of the group read or wrote is already on chip. */
static gboolean
fuse_on_chip(const SimparAccess *seen, guint n_seen, const SimparAccess *a)
{
    for (guint i = 0; i < n_seen; i++)
        if (fuse_overlap(&seen[i], a))
            return TRUE;
    return FALSE;
}

/* Bytes of the group's outer inputs and outputs: a read of what an earlier member wrote stays
 * on chip, an input several members read is loaded once, and a write only the group reads is
 * never stored. Dropout masks are outputs (the backward reads them). */
static double
fuse_bytes(const FuseCtx *f, const guint *group, guint n_group)
{
    SimparAccess seen[COMPUTE_MAX_FUSED * SIMPAR_MAX_ACCESSES];
    guint n_seen = 0;
    double elems = 0, masks = 0;
    for (guint m = 0; m < n_group; m++) {
        SimparAccess acc[SIMPAR_MAX_ACCESSES];
        guint na = simpar_op_accesses(f->sched, fuse_op(f, group[m]), acc);
        for (guint i = 0; i < na; i++) {
            const SimparAccess *a = &acc[i];
            gboolean counted = a->write ? !fuse_read_inside(f, group, n_group, m, a) ||
                                              fuse_read_outside(f, group[m], group, n_group, a)
                                        : !fuse_on_chip(seen, n_seen, a);
            elems += counted ? a->len : 0;
            seen[n_seen++] = *a;
        }
        masks += compute_mask_bytes(fuse_op(f, group[m]));
    }
    return elems * simpar_dtype_size(simpar_schedule_dtype(f->sched)) + masks;
}

static void
fuse_rank(const SimparGpu *gpu, const SimparSchedule *sched, guint rank, double *times,
          gboolean *fused)
{
    FuseCtx f = {.sched = sched, .fused = fused, .set = (SimparKernelSet) gpu->kernel_set};
    f.ops = simpar_schedule_rank_ops(sched, rank, &f.n);
    for (guint p = 0; p < f.n; p++) {
        guint group[COMPUTE_MAX_FUSED];
        if (fused[f.ops[p]])
            continue;
        guint n = fuse_find(&f, p, group);
        if (n == 1)
            continue;
        /* the group streams at its slowest member's bandwidth (a dropout at p = 0 does
         * nothing in it) */
        double bw = simpar_compute_op_bandwidth(gpu, fuse_op(&f, p)->kind);
        for (guint g = 1; g < n; g++) {
            const SimparOp *m = fuse_op(&f, group[g]);
            gboolean off = (m->kind == SIMPAR_OP_DROPOUT || m->kind == SIMPAR_OP_DROPOUT_BWD) &&
                           m->u.kern.p == 0;
            if (!off)
                bw = MIN(bw, simpar_compute_op_bandwidth(gpu, m->kind));
        }
        times[f.ops[p]] =
            compute_kind_time(gpu, fuse_op(&f, p)->kind, bw, fuse_bytes(&f, group, n));
        for (guint g = 0; g < n; g++) {
            fused[f.ops[group[g]]] = TRUE;
            if (g > 0)
                times[f.ops[group[g]]] = 0;
        }
    }
}

void
simpar_compute_times(const SimparGpu *gpu, const SimparSchedule *sched, SimparAttentionImpl attn,
                     double *times)
{
    g_return_if_fail(gpu != NULL && sched != NULL && times != NULL);
    g_return_if_fail(compute_usable(gpu, simpar_schedule_dtype(sched)));
    guint n_ops = simpar_schedule_n_ops(sched);
    for (guint i = 0; i < n_ops; i++)
        times[i] = compute_op_time(gpu, sched, simpar_schedule_op(sched, i), attn);
    g_autofree gboolean *fused = g_new0(gboolean, MAX(n_ops, 1));
    for (guint r = 0; r < simpar_schedule_n_ranks(sched); r++)
        fuse_rank(gpu, sched, r, times, fused);
}

/* ----- the report's line ----- */

/* Kernels past what their kind was measured at: more than COMPUTE_KERNEL_FAR times the bytes of
 * the kind's largest row (a calibration's kernel_max_bytes), whose bandwidth is the largest
 * row's carried beyond it. */
#define COMPUTE_KERNEL_FAR 4.0

/* "; 3 of its 31 measured kernels more than 4x the bytes of their kind's largest measured row
 * (extrapolated; at most 24x)", or nothing without kernel_max_bytes. */
static void
describe_kernels(GString *s, const SimparGpu *gpu, const SimparSchedule *sched)
{
    if (gpu->kind_max_bytes == NULL)
        return;
    guint kernels = 0, far = 0;
    double most = 0;
    for (guint i = 0; i < simpar_schedule_n_ops(sched); i++) {
        const SimparOp *op = simpar_schedule_op(sched, i);
        double max = op->kind < SIMPAR_N_OP_KINDS ? gpu->kind_max_bytes[op->kind] : 0;
        if (!(max > 0))
            continue;
        double flops, bytes;
        simpar_compute_op_cost(sched, op, SIMPAR_ATTENTION_UNFUSED, &flops, &bytes);
        kernels++;
        if (bytes > COMPUTE_KERNEL_FAR * max)
            far++, most = MAX(most, bytes / max);
    }
    g_string_append_printf(s,
                           "; %u of its %u kernels of measured kinds more than %.0fx the bytes of "
                           "their kind's largest measured row",
                           far, kernels, COMPUTE_KERNEL_FAR);
    if (far > 0)
        g_string_append_printf(s, " (extrapolated; at most %.0fx)", most);
}

/* "; FP8 (delayed recipe): 24 of 24 GEMMs in FP8 on 19 measured FP8 GEMMs (3 more than 2x from
 * them: extrapolated), 1.23 ms, their input
 * and gradient casts 0.45 ms, summed over the layer's ranks, and the weights' casts 0.12 ms per
 * rank once per step" for a layer with FP8 GEMMs, and whether its attention runs in FP8;
 * nothing otherwise. */
static void
describe_fp8(GString *s, const SimparGpu *gpu, const SimparSchedule *sched)
{
    guint fp8 = 0, gemms = 0, recipe = 0, rows = 0, attn = 0, far = 0;
    double gemm_s = 0, cast_s = 0;
    rows = gemm_table_count(gpu->gemm_table, SIMPAR_DTYPE_FP8);
    for (guint i = 0; i < simpar_schedule_n_ops(sched); i++) {
        const SimparOp *op = simpar_schedule_op(sched, i);
        const SimparGemm *g = &op->u.gemm;
        attn += simpar_op_is_attention(op->kind) && op->u.attn.fp8 != SIMPAR_FP8_NONE;
        if (op->kind != SIMPAR_OP_GEMM)
            continue;
        gemms++;
        if (g->fp8 == SIMPAR_FP8_NONE || !(gpu->peak_flops[SIMPAR_DTYPE_FP8] > 0))
            continue;
        fp8++, recipe = g->fp8;
        far += simpar_compute_gemm_extrapolated(gpu, SIMPAR_DTYPE_FP8, g->m, g->n, g->k, g->batch);
        gemm_s += simpar_compute_gemm_time(gpu, SIMPAR_DTYPE_FP8, g->m, g->n, g->k, g->batch);
        cast_s += simpar_compute_fp8_cast_time(gpu, g, FALSE);
    }
    if (fp8 == 0)
        return;
    g_autofree char *table =
        rows > 0 ? g_strdup_printf("%u measured FP8 GEMMs (%u more than 2x from them: "
                                   "extrapolated)",
                                   rows, far)
        : gpu->gemm_fp8_max_flops > 0
            ? g_strdup_printf("the shape curve at the FP8 peak, never above the %.0f TFLOP/s "
                              "measured at the best shape (no measured FP8 table)",
                              gpu->gemm_fp8_max_flops / 1e12)
            : g_strdup("the shape curve at the FP8 peak (no measured FP8 GEMMs)");
    g_string_append_printf(s,
                           "; FP8 (%s recipe): %u of %u GEMMs in FP8 on %s, %.4g ms, their "
                           "input and gradient casts %.4g ms, summed over the layer's ranks, "
                           "and the weights' casts %.4g ms per rank once per step",
                           simpar_fp8_recipe_name(recipe), fp8, gemms, table, gemm_s * 1e3,
                           cast_s * 1e3, simpar_compute_fp8_weight_cast_time(gpu, sched) * 1e3);
    if (attn > 0)
        g_string_append(s, "; attention in FP8 (cuDNN's fused FP8 attention: flash attention's "
                           "curve at the FP8 peak, no measured FP8 attention)");
}

char *
simpar_compute_describe(const SimparGpu *gpu, const SimparSchedule *sched)
{
    g_return_val_if_fail(gpu != NULL && sched != NULL, NULL);
    SimparDtype dt = simpar_schedule_dtype(sched);
    guint rows = gemm_table_count(gpu->gemm_table, dt), gemms = 0, far = 0;
    for (guint i = 0; rows > 0 && i < simpar_schedule_n_ops(sched); i++) {
        const SimparOp *op = simpar_schedule_op(sched, i);
        const SimparGemm *g = &op->u.gemm;
        if (op->kind == SIMPAR_OP_GEMM) {
            gemms++;
            far += simpar_compute_gemm_extrapolated(gpu, dt, g->m, g->n, g->k, g->batch);
        }
    }
    GString *s = g_string_new(NULL);
    g_string_append_printf(s, "compute: %s kernels; ",
                           simpar_kernel_set_name((SimparKernelSet) gpu->kernel_set));
    if (rows == 0)
        g_string_append_printf(s, "GEMMs on the shape curve (no measured %s GEMMs)",
                               simpar_dtype_name(dt));
    else
        g_string_append_printf(s,
                               "%u of the layer's %u GEMMs more than 2x from the %u measured "
                               "shapes (extrapolated)",
                               far, gemms, rows);
    describe_kernels(s, gpu, sched);
    describe_fp8(s, gpu, sched);
    g_string_append_printf(s, "; figures: %s",
                           gpu->data_source != NULL ? gpu->data_source
                                                    : "the platform's roofline figures alone");
    return g_string_free(s, FALSE); /* (transfer full) */
}
