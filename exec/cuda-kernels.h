/* cuda-kernels.h - the CUDA kernels of the executor's compute ops, behind plain C launchers.
 *
 * cuda-compute.c resolves an op's views to device addresses and element types, then calls one
 * launcher here (cuBLAS does the GEMMs, in cuda-compute.c). Each launcher picks the kernel
 * instantiation for the element types, launches it on `stream` and returns cudaGetLastError():
 * asynchronous, errors of the launch only. Zero-sized work launches nothing.
 *
 *   int t   the activation type: x, y, weights, gradients, logits (SIMPAR_CUK_F16 ... F64)
 *   int s   the statistics type: LN sums, rstd, token ids, targets, row maxima, loss, Adam m
 *           and v (SIMPAR_CUK_F32 or F64)
 *   math    in fp32, in fp64 when t or s is fp64; results rounded once into their type
 *
 * The math of every kind is exec/host-kernels.c's (see models/schedule.h for the formulas).
 * Plain C types only: no GLib here, since nvcc compiles the .cu side.
 */
#ifndef SIMPAR_CUDA_KERNELS_H
#define SIMPAR_CUDA_KERNELS_H
#include <cuda_runtime_api.h>
#include <stddef.h>
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif

/* Element type codes: the values of SimparCuType (cuda-compute.c asserts that they agree). */
enum {
    SIMPAR_CUK_F16,
    SIMPAR_CUK_BF16,
    SIMPAR_CUK_F32,
    SIMPAR_CUK_F64,
};

/* A row-wise or elementwise op (SimparKernel) with its views resolved: in[] and out[] in
 * schedule.h's order, NULL where the kind does not use one or it is empty. */
typedef struct {
    const void *in[5];
    void *out[3];
    size_t rows, cols;
    double hidden, eps; /* layer norm */
    double p;           /* dropout probability */
    uint64_t seed;      /* dropout mask: keep(seed, site, (row0 + r) * global_cols + col0 + c) */
    unsigned site;
    uint64_t row0, col0, global_cols;
    int rms; /* layer norm: RMSNorm (no mean, no beta: in[3], out[2] NULL) */
} SimparCukKernel;

/* LN_STATS, LN_APPLY, LN_BWD_STATS, LN_BWD_APPLY, BIAS_ADD, BIAS_GRAD, GELU, GELU_BWD, SWIGLU,
 * SWIGLU_BWD, DROPOUT (and DROPOUT_BWD, the same map), ADD. `work` is device scratch of
 * simpar_cuk_colsum_work() bytes for BIAS_GRAD (1 sum) and LN_BWD_STATS (2 sums), unused by the
 * others. */
typedef cudaError_t (*SimparCukKernelFn)(int t, int s, const SimparCukKernel *k, void *work,
                                         cudaStream_t stream);
cudaError_t simpar_cuk_ln_stats(int t, int s, const SimparCukKernel *k, void *work,
                                cudaStream_t stream);
cudaError_t simpar_cuk_ln_apply(int t, int s, const SimparCukKernel *k, void *work,
                                cudaStream_t stream);
cudaError_t simpar_cuk_ln_bwd_stats(int t, int s, const SimparCukKernel *k, void *work,
                                    cudaStream_t stream);
cudaError_t simpar_cuk_ln_bwd_apply(int t, int s, const SimparCukKernel *k, void *work,
                                    cudaStream_t stream);
cudaError_t simpar_cuk_bias_add(int t, int s, const SimparCukKernel *k, void *work,
                                cudaStream_t stream);
cudaError_t simpar_cuk_bias_grad(int t, int s, const SimparCukKernel *k, void *work,
                                 cudaStream_t stream);
cudaError_t simpar_cuk_gelu(int t, int s, const SimparCukKernel *k, void *work,
                            cudaStream_t stream);
cudaError_t simpar_cuk_gelu_bwd(int t, int s, const SimparCukKernel *k, void *work,
                                cudaStream_t stream);
cudaError_t simpar_cuk_swiglu(int t, int s, const SimparCukKernel *k, void *work,
                              cudaStream_t stream);
cudaError_t simpar_cuk_swiglu_bwd(int t, int s, const SimparCukKernel *k, void *work,
                                  cudaStream_t stream);
cudaError_t simpar_cuk_dropout(int t, int s, const SimparCukKernel *k, void *work,
                               cudaStream_t stream);
cudaError_t simpar_cuk_add(int t, int s, const SimparCukKernel *k, void *work, cudaStream_t stream);
/* Scratch bytes of a column reduction of `sums` sums over rows x cols (BIAS_GRAD: 1, LN_BWD_STATS:
 * 2): one partial sum per 256-row chunk, column and sum, in the math type of (t, s). */
size_t simpar_cuk_colsum_work(size_t rows, size_t cols, unsigned sums, int t, int s);

/* A vocabulary-parallel op (SimparVocab) with its views resolved. */
typedef struct {
    const void *in[4];
    void *out;
    size_t rows, cols;      /* tokens; embedding width */
    uint64_t vocab0, vocab; /* this rank's slice of the vocabulary */
    double scale;
} SimparCukVocab;

/* EMBED, EMBED_BWD (atomicAdd), XENT_MAX, XENT_FWD, XENT_LOSS, XENT_BWD. */
typedef cudaError_t (*SimparCukVocabFn)(int t, int s, const SimparCukVocab *v, cudaStream_t stream);
cudaError_t simpar_cuk_embed(int t, int s, const SimparCukVocab *v, cudaStream_t stream);
cudaError_t simpar_cuk_embed_bwd(int t, int s, const SimparCukVocab *v, cudaStream_t stream);
cudaError_t simpar_cuk_xent_max(int t, int s, const SimparCukVocab *v, cudaStream_t stream);
cudaError_t simpar_cuk_xent_fwd(int t, int s, const SimparCukVocab *v, cudaStream_t stream);
cudaError_t simpar_cuk_xent_loss(int t, int s, const SimparCukVocab *v, cudaStream_t stream);
cudaError_t simpar_cuk_xent_bwd(int t, int s, const SimparCukVocab *v, cudaStream_t stream);

/* ADAM on `count` elements: param and grad of type t, m and v of type s. */
typedef struct {
    void *param, *m, *v;
    const void *grad;
    size_t count;
    double lr, beta1, beta2, eps, weight_decay;
    double c1, c2; /* the bias corrections 1 - beta1^step and 1 - beta2^step */
} SimparCukAdam;

cudaError_t simpar_cuk_adam(int t, int s, const SimparCukAdam *a, cudaStream_t stream);

/* Attention's row kernels over the heads of one sequence; the products around them are cuBLAS's
 * (cuda-compute.c). Every matrix is [heads x s x s], row-major, of type t:
 *
 *           probs                    dropped                    grad
 *   fwd     in: scores (scaled),     out: P * keep / (1-p)      -
 *           out: P (causal: 0 past
 *           the diagonal)            (NULL when p == 0)
 *   bwd     in: P                    out: P * keep / (1-p)      in: dPd = dctx . V^T
 *                                    (masked: 0)                out: dS = P (dP - rowsum(P dP))
 *
 * keep for row i, column j of local head g is simpar_dropout_keep(seed, site,
 * ((head + g) * s + i) * s + j, p), where head = (batch0 + sequence) * heads + head0. */
typedef struct {
    void *probs, *dropped, *grad;
    size_t heads, s;
    int causal;
    double p;
    uint64_t seed;
    unsigned site;
    uint64_t head;
} SimparCukSoftmax;

cudaError_t simpar_cuk_softmax(int t, const SimparCukSoftmax *sm, cudaStream_t stream);
cudaError_t simpar_cuk_softmax_bwd(int t, const SimparCukSoftmax *sm, cudaStream_t stream);

/* n elements of type t at `elems`: simpar_inputs_random()'s values (exec/inputs.h) for `seed`:
 * uniform in [0.5, 1.5), or whole numbers in [0, ids) when ids > 0. */
cudaError_t simpar_cuk_random(int t, void *elems, size_t n, uint64_t seed, uint64_t ids,
                              cudaStream_t stream);

/* simpar_cu_from_f64 / to_f64: n elements of type t at `elems` from / to doubles. */
cudaError_t simpar_cuk_from_f64(int t, void *elems, const double *src, size_t n,
                                cudaStream_t stream);
cudaError_t simpar_cuk_to_f64(int t, const void *elems, double *dst, size_t n, cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif /* SIMPAR_CUDA_KERNELS_H */
