/* compute.h - how long each compute op of a schedule takes on one GPU: measured figures where
 * the GPU has them, the roofline where it has none, never faster than the datasheet.
 *
 *   GEMM    the shape curve, time = launch_s + max(flops / (peak[dtype] * eff), bytes / mem_bw)
 *           with eff = gemm_eff_max * g(m) * g(n) * g(k), g(x) = x / (x + gemm_half_dim),
 *           corrected by the GPU's measured GEMM table (compute-data.c): at a measured shape
 *           the measurement, between shapes the measured-over-curve ratio of the nearest ones.
 *   kernel  launch_s + floor + bytes / bandwidth: its op kind's measured floor (kind_floor, from
 *           simpar calibrate; 0 without) and B/s (kind_bw), else its class's (SimparKernelClass): a
 * measured B/s (kernel_bw), else a measured fraction of the datasheet bandwidth (kernel_eff,
 * topologies/compute.ini), else mem_eff; never above the datasheet. Bytes are what the kernel reads
 * and writes.
 *
 * Fusion follows the kernel set (SimparKernelSet): `megatron` fuses as below, `pytorch` only
 * the layer norm's statistics and apply, `unfused` nothing. Megatron's fusion follows the
 * implementations: on a rank's compute stream, bias-add + GeLU is one kernel
 * (Megatron's bias_gelu), bias-add + dropout + residual add is one kernel (bias_dropout_add),
 * GeLU backward + bias gradient is one, and layer-norm statistics + apply (forward or backward)
 * are one kernel when no collective sits between them (1-D; 2-D/2.5-D/3-D all-reduce the
 * statistics in between, so they stay two kernels). A fused group costs one launch and the
 * bytes of its outer inputs and outputs; its time is charged to the group's first op, the
 * others get zero.
 *
 * Attention (SIMPAR_OP_ATTENTION[_BWD]) has two implementations:
 *   unfused  batched QK^T GEMM, softmax, dropout, batched AV GEMM (backward: 4 batched GEMMs,
 *            dropout and softmax backward), with the s x s scores written and read in memory;
 *   flash    one kernel, no s x s tensor in memory; causal masks skip half the work; the
 *            backward recomputes QK^T (2.5x the forward FLOPs).
 *
 * GPU figures come from the platform's host properties (peak_<dtype>_flops, mem_bandwidth_Bps,
 * mem_bytes, the curve's gemm_eff_max, gemm_half_dim, launch_s), the compiled-in data of its
 * gpu_model (kernel_eff_<class>, a GEMM table), and can be overridden by a calibration file
 * (JSON, keys as in SimparGpu; simpar calibrate writes the measured ones):
 *   {"gemm_eff_max": 0.8, "gemm_half_dim": 128, "mem_eff": 0.8, "launch_s": 5e-6,
 *    "peak_fp16_flops": 125e12, "mem_bandwidth_Bps": 900e9, "kernel_bw_norm_Bps": 2.2e12,
 *    "gemm_table": [{"dtype": "bf16", "m": 4096, "n": 8192, "k": 8192, "batch": 1,
 *                    "trans_a": false, "trans_b": false, "time_s": 6.4e-4}]}
 *
 * Ownership: value types; a GEMM table is interned for the process's life (compute-data.c), so
 * a SimparGpu copies and compares as bytes; no allocation except simpar_compute_times' output
 * (caller's) and simpar_compute_describe's string.
 */
#ifndef SIMPAR_COMPUTE_H
#define SIMPAR_COMPUTE_H
#include "schedule.h"
G_BEGIN_DECLS

#define SIMPAR_COMPUTE_ERROR (simpar_compute_error_quark())
GQuark simpar_compute_error_quark(void);

typedef enum {
    SIMPAR_COMPUTE_ERROR_PARSE,   /* the calibration file is not the documented JSON */
    SIMPAR_COMPUTE_ERROR_INVALID, /* a figure is missing, zero, negative or absurd */
    SIMPAR_COMPUTE_ERROR_OPTION,  /* a name on the command line (--attention, --kernels) */
} SimparComputeError;

typedef enum {
    SIMPAR_ATTENTION_UNFUSED,
    SIMPAR_ATTENTION_FLASH,
} SimparAttentionImpl;

/* Which kernels a step runs: the framework's choice. */
typedef enum {
    SIMPAR_KERNELS_MEGATRON, /* Megatron-Core's fused kernels (bias-GeLU, bias-dropout-add,
                                fused layer norm, fused Adam): the default of simpar predict */
    SIMPAR_KERNELS_PYTORCH,  /* plain PyTorch: layer norm one kernel each way, every other op
                                its own kernel */
    SIMPAR_KERNELS_UNFUSED,  /* every op of the schedule its own kernel, as simpar-exec runs
                                them: the default of simpar validate */
} SimparKernelSet;

/* Measured GEMMs of one GPU model (compute-data.c): immutable, kept for the process's life. */
typedef struct _SimparGemmTable SimparGemmTable;

typedef struct {
    const char *model;                       /* interned, e.g. "V100-SXM2-16GB" */
    double peak_flops[SIMPAR_DTYPE_FP8 + 1]; /* by SimparDtype (fp8: dense FP8 tensor cores);
                                                0 = not supported */
    double mem_bw_Bps;
    double mem_bytes;
    double gemm_eff_max;                /* default 0.85 */
    double gemm_half_dim;               /* default 128 */
    double mem_eff;                     /* default 0.8 */
    double launch_s;                    /* default 5e-6 */
    double kernel_eff[SIMPAR_KCLASS_N]; /* by SimparKernelClass; 0: mem_eff */
    double kernel_bw[SIMPAR_KCLASS_N];  /* measured B/s by class (a calibration); 0: kernel_eff */
    const double *kind_bw;              /* (transfer none) interned, SIMPAR_N_OP_KINDS measured B/s
                                           by op kind (a calibration), 0: the class's; or NULL */
    const double *kind_floor;           /* (transfer none) interned, SIMPAR_N_OP_KINDS seconds a
                                           kind's kernel takes beyond launch_s whatever its bytes
                                           (a calibration), or NULL */
    const double *kind_max_bytes;       /* (transfer none) interned, SIMPAR_N_OP_KINDS bytes of a
                                           kind's largest measured row (a calibration), or NULL:
                                           the report counts kernels far past it */
    const SimparGemmTable *gemm_table;  /* (transfer none) measured GEMMs; NULL: the curve */
    const char *data_source;            /* interned: where the measured figures come from */
    gint64 kernel_set;                  /* SimparKernelSet */
    gint64 mxfp8; /* block-scaled (1 x 32) FP8 tensor cores (Blackwell; compute data's mxfp8) */
    double gemm_fp8_max_flops; /* the most FP8 GEMM throughput measured at any shape (compute
                                  data's gemm_fp8_max_flops): the curve's FP8 ceiling; 0: none */
    gint64 sms; /* streaming multiprocessors (compute data's sms, the datasheet's); 0: unknown,
                   and a GEMM beside communication kernels that hold SMs (SimparGemm.comm_sms)
                   is timed as if it had them all */
    gint64 fp8_any_layout; /* FP8 GEMMs of every operand layout (compute data's fp8_any_layout:
                              Blackwell): a per-tensor FP8 tensor is one copy, no transpose */
} SimparGpu;

/* Defaults for the model parameters; figures (peaks, bandwidth, memory) zero. */
void simpar_gpu_init(SimparGpu *gpu);
/* Every figure the model needs is present and sane for `dtype`. */
/* Whether `v` is a value a calibration file may give GPU figure `key` (TRUE for a key that is
 * not a GPU figure); else *range (transfer full) says what is. */
gboolean simpar_gpu_figure_valid(const char *key, double v, char **range);
gboolean simpar_gpu_validate(const SimparGpu *gpu, SimparDtype dtype, GError **error);
/* Overrides fields from a calibration JSON file; unknown keys and bad values are errors that
 * name the file and key. The link keys (intra_node_bandwidth_Bps, intra_node_latency_s,
 * inter_node_bandwidth_Bps, inter_node_latency_s; sim/platform.c reads them) and "source" and
 * "fit" (what simpar calibrate records) are skipped here. */
gboolean simpar_gpu_load_calibration(SimparGpu *gpu, const char *path, GError **error);

/* The measured figures of `gpu->model` in the compiled-in data (topologies/compute.ini, handed
 * over as `data`): kernel efficiencies and a GEMM table. A model the data does not list keeps
 * the roofline's figures. */
gboolean simpar_gpu_load_data(SimparGpu *gpu, GKeyFile *data, GError **error);
gboolean simpar_kernel_set_parse(const char *name, SimparKernelSet *out, GError **error);
const char *simpar_kernel_set_name(SimparKernelSet set);
const char *simpar_kernel_class_name(SimparKernelClass kc);
/* The seconds a kernel of op kind `kind` takes beyond launch_s whatever its bytes: a
 * calibration's kernel_floor_s, else 0. */
double simpar_compute_op_floor(const SimparGpu *gpu, SimparOpKind kind);
/* The unfused attention `a` as simpar-exec runs it: the time of its GEMMs on `gpu` (forward or
 * backward) and the bytes of its one kernel over the scores (calibrate takes the scores'
 * bandwidth from a bench's attention rows with them). */
void simpar_compute_attention_parts(const SimparGpu *gpu, SimparDtype dt, const SimparAttention *a,
                                    gboolean bwd, double *gemm_s, double *score_bytes);
/* The bandwidth kernels of class kc reach on `gpu`, B/s. */
double simpar_compute_kernel_bandwidth(const SimparGpu *gpu, SimparKernelClass kc);
/* The bandwidth a kernel of `kind` reaches: its own measured one, else its class's. */
double simpar_compute_op_bandwidth(const SimparGpu *gpu, SimparOpKind kind);

/* A GEMM table built row by row, then interned (equal tables share one pointer, so that
 * SimparGpu stays a value that caches compare as bytes). */
SimparGemmTable *simpar_gemm_table_new(void); /* (transfer full) */
void simpar_gemm_table_add(SimparGemmTable *t, SimparDtype dtype, double m, double n, double k,
                           double batch, gboolean trans_a, gboolean trans_b, double time_s);
const SimparGemmTable *simpar_gemm_table_intern(SimparGemmTable *t); /* takes t; (transfer none) */
/* Frees a table never interned (one a caller uses for a moment, as calibrate's leave-one-out). */
void simpar_gemm_table_free(SimparGemmTable *t);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(SimparGemmTable, simpar_gemm_table_free)
/* Whether a GEMM of this shape lies more than a factor 2 (in m, n, k or batch) from every
 * measured shape of its dtype: its time is then the curve's, scaled by the table's far trend. */
gboolean simpar_compute_gemm_extrapolated(const SimparGpu *gpu, SimparDtype dtype, double m,
                                          double n, double k, double batch);
/* One line for reports (transfer full): the kernel set, the GEMM table and how many of
 * sched's GEMMs lie outside it, and where the measured figures come from. */
char *simpar_compute_describe(const SimparGpu *gpu, const SimparSchedule *sched);

gboolean simpar_attention_parse(const char *name, SimparAttentionImpl *out, GError **error);
const char *simpar_attention_name(SimparAttentionImpl impl);

/* Seconds for every op of `sched` (times[i] for op i; collectives, send and recv get 0), with
 * the fusion rules above. SIMPAR_OP_BLOCK ops get 0 as well: the interpreter times a block
 * itself, `count` times the time it was given for the block's key. Embedding, cross-entropy,
 * Adam and zero-grad ops are memory bound, one launch each (their bytes: compute.c; a zero-grad
 * op costs only under the megatron set, whose framework alone runs a kernel for it). */
void simpar_compute_times(const SimparGpu *gpu, const SimparSchedule *sched,
                          SimparAttentionImpl attn, double *times);
/* Whether `gpu` can run FP8 recipe `recipe` (FP8 tensor cores: a peak_fp8_flops; mxfp8: block-
 * scaled ones) and, with `fp8_attention`, FP8 attention; else an error naming the flag, the GPU
 * and what would run it. */
gboolean simpar_gpu_check_fp8(const SimparGpu *gpu, SimparFp8Recipe recipe, gboolean fp8_attention,
                              GError **error);
/* Whether FP8 attention (SimparPlan.fp8_attention) can run under `attn`: only flash
 * attention's fused kernel has an FP8 form; else an error naming the flag and what is valid. */
gboolean simpar_attention_check_fp8(gboolean fp8_attention, SimparAttentionImpl attn,
                                    GError **error);
/* The kernels Transformer Engine adds to one FP8 GEMM op (g->fp8 set), as simpar counts them:
 * the bytes they read and write and their launches (compute.c: casts and transposes of the
 * inputs, amax passes, the delayed recipe's scale update). `weight`: the weight's cast alone
 * (a forward GEMM's b, cast once per step and cached); else the rest, run every micro-batch. */
double simpar_compute_fp8_cast_bytes(const SimparGemm *g, gboolean weight, guint *launches);
/* Their time on `gpu`: launches x launch_s + bytes at the stream kernels' bandwidth. */
double simpar_compute_fp8_cast_time(const SimparGpu *gpu, const SimparGemm *g, gboolean weight);
/* The factor a GEMM's time takes while communication kernels hold g->comm_sms of the GPU's SMs
 * (Transformer Engine's userbuffers, --tp-comm-overlap): sms / (sms - comm_sms), the GEMM's
 * tiles spread over the SMs left; 1 without comm_sms or where the GPU's SM count is unknown. */
double simpar_compute_sm_share(const SimparGpu *gpu, const SimparGemm *g);
/* One layer's weight casts on one of its ranks (the mean over sched's ranks of its forward FP8
 * GEMMs' weight casts): the step's "fp8.cast" block per layer (models/step.h). Op times
 * (simpar_compute_times) leave them out. */
double simpar_compute_fp8_weight_cast_time(const SimparGpu *gpu, const SimparSchedule *sched);
/* One GEMM of the given shape and dtype (exposed for tests and calibration), operands as they
 * are (op(a) op(b) = NN); _ops: with op(a), op(b) transposed where told (C = op(A) op(B),
 * row-major m x n), which a measured table tells apart. */
double simpar_compute_gemm_time(const SimparGpu *gpu, SimparDtype dtype, double m, double n,
                                double k, double batch);
double simpar_compute_gemm_time_ops(const SimparGpu *gpu, SimparDtype dtype, double m, double n,
                                    double k, double batch, gboolean trans_a, gboolean trans_b);
/* The FLOPs and memory bytes the model counts for one op on its own (no fusion; 0 and 0 for
 * collectives, send, recv and blocks): the roofline's two sides, for microbenchmarks and for
 * sizing work (simpar-exec). */
void simpar_compute_op_cost(const SimparSchedule *sched, const SimparOp *op,
                            SimparAttentionImpl attn, double *flops, double *bytes);

G_END_DECLS
#endif /* SIMPAR_COMPUTE_H */
