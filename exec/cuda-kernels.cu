/* cuda-kernels.cu - the CUDA kernels of every compute op kind but the GEMMs (cuda-kernels.h).
 *
 * Three shapes of kernel, each written once and instantiated per element type:
 *
 *   elementwise    grid-stride loop over n elements            GELU, ADD, DROPOUT, EMBED, ADAM
 *   row-wise       one block per row (block-stride over rows),  LN, softmax, cross-entropy
 *                  threads stride over the row's columns and
 *                  meet in block_reduce() (warp shuffles, then
 *                  one partial per warp in shared memory)
 *   column sums    two passes: 32 columns x 256-row chunks per  BIAS_GRAD, LN dgamma / dbeta
 *                  block into scratch, then chunks summed in
 *                  order (deterministic, no atomics)
 *
 *        cols ->                       cols ->
 *   r   [t0 t1 .. tB t0 t1 ..]     c0..c31 c32..     block (x, y) sums rows
 *   o   [t0 t1 .. tB t0 t1 ..]     [blk 0,0][1,0]    y*256 .. y*256+255 of columns
 *   w   ... one block per row      [blk 0,1][1,1]    x*32 .. x*32+31 into part[y][sum][col]
 *
 * Element types: T is the activation type (__half, __nv_bfloat16, float, double), S the
 * statistics type (float, double); Acc<...> is the math type, double when any of them is, float
 * otherwise. Loads convert to Acc (ld), stores round once into the element type (st). No kernel
 * uses __restrict__: ADD and XENT_BWD may write their input in place, which is safe because
 * each element is read and written by the same thread.
 *
 * The dropout mask is simpar_dropout_keep() (models/schedule.c) bit for bit: the same SplitMix64
 * finaliser, the same 53-bit uniform and the same comparison in double.
 */
#include "cuda-kernels.h"
#include <algorithm>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <type_traits>

namespace
{

/* ---- element types ------------------------------------------------------------------------ */

template <class X, class Y> constexpr bool same = std::is_same<X, Y>::value;

/* The math type of a kernel touching elements of types X...: double if any is double. */
template <class... X>
using Acc = typename std::conditional<(same<X, double> || ...), double, float>::type;

/* Element i of p, in the math type A. */
template <class A, class T>
__device__ __forceinline__ A
ld(const T *p, size_t i)
{
    if constexpr (same<T, __half>)
        return (A) __half2float(p[i]);
    else if constexpr (same<T, __nv_bfloat16>)
        return (A) __bfloat162float(p[i]);
    else
        return (A) p[i];
}

/* Element i of p = v, rounded once to nearest. */
template <class T, class A>
__device__ __forceinline__ void
st(T *p, size_t i, A v)
{
    if constexpr (same<T, __half>)
        p[i] = same<A, double> ? __double2half((double) v) : __float2half_rn((float) v);
    else if constexpr (same<T, __nv_bfloat16>)
        p[i] = same<A, double> ? __double2bfloat16((double) v) : __float2bfloat16_rn((float) v);
    else
        p[i] = (T) v;
}

/* Math functions by type: expf for float, exp for double. */
template <class A>
__device__ __forceinline__ A
dexp(A x)
{
    if constexpr (same<A, double>)
        return exp(x);
    else
        return expf(x);
}

template <class A>
__device__ __forceinline__ A
dlog(A x)
{
    if constexpr (same<A, double>)
        return log(x);
    else
        return logf(x);
}

template <class A>
__device__ __forceinline__ A
dtanh(A x)
{
    if constexpr (same<A, double>)
        return tanh(x);
    else
        return tanhf(x);
}

template <class A>
__device__ __forceinline__ A
dsqrt(A x)
{
    if constexpr (same<A, double>)
        return sqrt(x);
    else
        return sqrtf(x);
}

/* atomicAdd on the table gradient's type, the value rounded to it first: 16-bit atomics need
 * sm_70 (half) and sm_80 (bf16), which meson's -gencode list (sm_80, sm_90) guarantees. */
template <class T, class A>
__device__ __forceinline__ void
atomic_add(T *p, A v)
{
    T t;
    st(&t, 0, v);
    atomicAdd(p, t);
}

/* ---- dropout mask and vocabulary rows ----------------------------------------------------- */

/* schedule_mix64 (models/schedule.c): the SplitMix64 finaliser. */
__host__ __device__ __forceinline__ uint64_t
mix64(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* The first hash of simpar_dropout_keep, computed once per launch on the host. */
uint64_t
site_hash(uint64_t seed, unsigned site)
{
    return mix64(seed ^ ((uint64_t) site << 56));
}

/* simpar_dropout_keep(seed, site, index, p), given site_hash(seed, site). */
__device__ __forceinline__ bool
keep(uint64_t site_h, uint64_t index, double p)
{
    if (p <= 0.0)
        return true;
    uint64_t h = mix64(site_h ^ index);
    double u = (double) (h >> 11) * (1.0 / 9007199254740992.0); /* 53 bits in [0, 1) */
    return u >= p;
}

#define NO_ROW (~(uint64_t) 0)

/* kern_vocab_row (host-kernels.c): the local row of token id `id`, or NO_ROW when it is outside
 * [vocab0, vocab0 + vocab) or not a whole number. */
__device__ __forceinline__ uint64_t
vocab_row(double id, uint64_t vocab0, uint64_t vocab)
{
    if (!(id >= 0.0 && id < 0x1p64) || id != floor(id))
        return NO_ROW;
    uint64_t u = (uint64_t) id;
    return u >= vocab0 && u - vocab0 < vocab ? u - vocab0 : NO_ROW;
}

/* ---- launch shapes and reductions --------------------------------------------------------- */

#define FLAT_THREADS 256
#define FLAT_BLOCKS  8192    /* enough to fill any GPU; the loops stride beyond */
#define ROW_MAX      512     /* threads of a row-wise block */
#define ROW_BLOCKS   1048576 /* rows beyond this many blocks are strided */
#define COL_TILE     32      /* columns of a column-sum block */
#define COL_LANES    8       /* threads per column in a column-sum block */
#define COL_CHUNK    256     /* rows of a column-sum block (at least) */

#define GRID_STRIDE(i, n)                                                                          \
    for (size_t i = (size_t) blockIdx.x * blockDim.x + threadIdx.x; i < (n);                       \
         i += (size_t) gridDim.x * blockDim.x)

/* Block-uniform: every thread of a block runs the same rows, so block_reduce may sit inside. */
#define ROW_LOOP(r, rows) for (size_t r = blockIdx.x; r < (rows); r += gridDim.x)

/* Threads strided over one row's columns. */
#define COL_LOOP(c, cols) for (size_t c = threadIdx.x; c < (cols); c += blockDim.x)

size_t
div_up(size_t a, size_t b)
{
    return (a + b - 1) / b;
}

unsigned
flat_blocks(size_t n)
{
    size_t b = div_up(n, FLAT_THREADS);
    return (unsigned) (b < FLAT_BLOCKS ? b : FLAT_BLOCKS);
}

/* A whole number of warps, at most ROW_MAX, enough for `len` columns. */
unsigned
row_threads(size_t len)
{
    size_t t = div_up(len, 32) * 32;
    return (unsigned) (t < 32 ? 32 : t > ROW_MAX ? ROW_MAX : t);
}

unsigned
row_blocks(size_t rows)
{
    return (unsigned) (rows < ROW_BLOCKS ? rows : ROW_BLOCKS);
}

/* ---- 16-byte loads and stores ------------------------------------------------------------ */

/* W consecutive elements of type T, loaded or stored as one access of W * sizeof(T) bytes (16 at
 * most, CUDA's widest) when the address is a multiple of that. */
template <class T, int W> struct alignas(sizeof(T) * W) Pack {
    T v[W];
};

/* The elements a vectorised kernel handles per access: 16 bytes of the widest element type. */
template <class... X> constexpr int vec_width = (int) (16 / std::max({sizeof(X)...}));

template <int W, class T>
bool
vec_aligned(const T *p)
{
    return p == nullptr || (uintptr_t) p % (sizeof(T) * W) == 0;
}

/* x[0..W) = elements e .. e + W - 1 of p in the math type A (one access when W > 1). */
template <int W, class A, class T>
__device__ __forceinline__ void
ldv(const T *p, size_t e, A (&x)[W])
{
    if constexpr (W == 1) {
        x[0] = ld<A>(p, e);
    } else {
        Pack<T, W> pk = *reinterpret_cast<const Pack<T, W> *>(p + e);
#pragma unroll
        for (int i = 0; i < W; i++)
            x[i] = ld<A>(pk.v, i);
    }
}

/* Elements e .. e + W - 1 of p = x[0..W), each rounded once (one access when W > 1). */
template <int W, class T, class A>
__device__ __forceinline__ void
stv(T *p, size_t e, const A (&x)[W])
{
    if constexpr (W == 1) {
        st(p, e, x[0]);
    } else {
        Pack<T, W> pk;
#pragma unroll
        for (int i = 0; i < W; i++)
            st(pk.v, i, x[i]);
        *reinterpret_cast<Pack<T, W> *>(p + e) = pk;
    }
}

/* An elementwise kernel K (a functor with width W, aligned() on the host and run<w>(e) on the
 * device, which handles elements e .. e + w - 1): chunks of K::W elements per thread with
 * 16-byte accesses over the first n - n % W elements when every pointer allows it, then one
 * element per thread for the rest (and for everything otherwise). Each element's math is the
 * same either way. */
template <int W, class K>
__global__ void
vec_kernel(K k, size_t chunks)
{
    GRID_STRIDE(i, chunks)
    {
        k.template run<W>(i * W);
    }
}

template <class K>
__global__ void
tail_kernel(K k, size_t first, size_t n)
{
    GRID_STRIDE(i, n - first)
    {
        k.template run<1>(first + i);
    }
}

template <class K>
cudaError_t
launch_elementwise(K k, size_t n, cudaStream_t stream)
{
    constexpr int W = K::W;
    size_t chunks = k.aligned() ? n / W : 0, first = chunks * W;
    cudaError_t e = cudaSuccess;
    if (chunks > 0) {
        vec_kernel<W, K><<<flat_blocks(chunks), FLAT_THREADS, 0, stream>>>(k, chunks);
        e = cudaGetLastError();
    }
    if (e == cudaSuccess && first < n) {
        tail_kernel<K><<<flat_blocks(n - first), FLAT_THREADS, 0, stream>>>(k, first, n);
        e = cudaGetLastError();
    }
    return e;
}

struct Sum {
    template <class A>
    __device__ A
    operator()(A a, A b) const
    {
        return a + b;
    }
};

/* GLib's MAX(a, b). */
struct Max {
    template <class A>
    __device__ A
    operator()(A a, A b) const
    {
        return a > b ? a : b;
    }
};

/* Reduces v[0..N) over the block with `op`; every thread gets the results. blockDim.x must be a
 * whole number of warps (at most 1024) and every thread of the block must call it. The order
 * of combination is fixed, so results are deterministic. */
template <class Op, class A, int N>
__device__ void
block_reduce(A (&v)[N], Op op)
{
    __shared__ A part[N][32];
    const unsigned lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const unsigned warps = (blockDim.x + 31) >> 5;
#pragma unroll
    for (int k = 0; k < N; k++)
        for (int o = 16; o > 0; o >>= 1)
            v[k] = op(v[k], __shfl_xor_sync(0xffffffffu, v[k], o));
    __syncthreads(); /* a previous call may still read part[] */
    if (lane == 0)
#pragma unroll
        for (int k = 0; k < N; k++)
            part[k][warp] = v[k];
    __syncthreads();
#pragma unroll
    for (int k = 0; k < N; k++) {
        A x = part[k][0];
        for (unsigned w = 1; w < warps; w++)
            x = op(x, part[k][w]);
        v[k] = x;
    }
}

template <class K, class... Args>
cudaError_t
launch(K kernel, dim3 grid, dim3 block, cudaStream_t stream, Args... args)
{
    kernel<<<grid, block, 0, stream>>>(args...);
    return cudaGetLastError();
}

/* ---- type dispatch ------------------------------------------------------------------------ */

template <class X> struct Ty {
    using type = X;
};

template <class X> using Of = typename X::type;

/* f(Ty<T>()) for the activation type code t. */
template <class F>
cudaError_t
with_t(int t, F f)
{
    switch (t) {
    case SIMPAR_CUK_F16:
        return f(Ty<__half>());
    case SIMPAR_CUK_BF16:
        return f(Ty<__nv_bfloat16>());
    case SIMPAR_CUK_F32:
        return f(Ty<float>());
    case SIMPAR_CUK_F64:
        return f(Ty<double>());
    default:
        return cudaErrorInvalidValue;
    }
}

/* f(Ty<T>(), Ty<S>()) for the activation type t and the statistics type s (fp32 or fp64). */
template <class F>
cudaError_t
with_ts(int t, int s, F f)
{
    return with_t(t, [&](auto tt) -> cudaError_t {
        switch (s) {
        case SIMPAR_CUK_F32:
            return f(tt, Ty<float>());
        case SIMPAR_CUK_F64:
            return f(tt, Ty<double>());
        default:
            return cudaErrorInvalidValue;
        }
    });
}

/* ---- conversions -------------------------------------------------------------------------- */

template <class T>
__global__ void
from_f64_kernel(T *dst, const double *src, size_t n)
{
    GRID_STRIDE(i, n)
    {
        st(dst, i, src[i]);
    }
}

template <class T>
__global__ void
to_f64_kernel(const T *src, double *dst, size_t n)
{
    GRID_STRIDE(i, n)
    {
        dst[i] = ld<double>(src, i);
    }
}

/* simpar_inputs_random (exec/inputs.c), element for element. */
template <class T>
__global__ void
random_kernel(T *dst, size_t n, uint64_t seed, uint64_t ids)
{
    GRID_STRIDE(i, n)
    {
        double u = (double) (mix64(seed ^ mix64(i)) >> 11) * (1.0 / 9007199254740992.0);
        double v = ids > 0 ? fmin(floor(u * (double) ids), (double) ids - 1.0) : 0.5 + u;
        st(dst, i, v);
    }
}

/* ---- layer norm --------------------------------------------------------------------------- */

/* The row kernels take W, the columns a thread reads per access: vec_width<T> (16 bytes) when
 * every row starts on a 16-byte boundary (cols a whole number of chunks, the arrays aligned),
 * else 1. A thread's columns, then the block's reduction in a fixed order: deterministic. */
#define VEC_COL_LOOP(c, cols, W)                                                                   \
    for (size_t c = (size_t) threadIdx.x * (W); c < (cols); c += (size_t) blockDim.x * (W))

/* stats[r] = sum_c x, stats[rows + r] = sum_c x^2. */
template <int W, class T, class S>
__global__ void
ln_stats_kernel(const T *x, S *stats, size_t rows, size_t cols)
{
    using A = Acc<T, S>;
    ROW_LOOP(r, rows)
    {
        A v[2] = {0, 0};
        VEC_COL_LOOP(c, cols, W)
        {
            A e[W];
            ldv<W>(x, r * cols + c, e);
#pragma unroll
            for (int i = 0; i < W; i++) {
                v[0] += e[i];
                v[1] += e[i] * e[i];
            }
        }
        block_reduce(v, Sum());
        if (threadIdx.x == 0) {
            st(stats, r, v[0]);
            st(stats, rows + r, v[1]);
        }
    }
}

template <int W, class T, class S>
__global__ void
ln_apply_kernel(const T *x, const S *stats, const T *gamma, const T *beta, T *y, T *xhat, S *rstd,
                size_t rows, size_t cols, double hidden, double eps)
{
    using A = Acc<T, S>;
    ROW_LOOP(r, rows)
    {
        A mean = beta != nullptr ? ld<A>(stats, r) / (A) hidden : (A) 0; /* RMSNorm: no beta */
        A var = ld<A>(stats, rows + r) / (A) hidden - mean * mean;
        A rs = (A) 1 / dsqrt(var + (A) eps);
        VEC_COL_LOOP(c, cols, W)
        {
            size_t e = r * cols + c;
            A xv[W], g[W], b[W], xh[W];
            ldv<W>(x, e, xv);
            ldv<W>(gamma, c, g);
            if (beta != nullptr)
                ldv<W>(beta, c, b);
#pragma unroll
            for (int i = 0; i < W; i++) {
                xh[i] = (xv[i] - mean) * rs;
                xv[i] = xh[i] * g[i] + (beta != nullptr ? b[i] : (A) 0);
            }
            stv<W>(xhat, e, xh);
            stv<W>(y, e, xv);
        }
        if (threadIdx.x == 0)
            st(rstd, r, rs);
    }
}

/* stats[r] = sum_c dy*gamma (0 with `rms`), stats[rows + r] = sum_c dy*gamma*xhat (dgamma,
 * dbeta: colsum). */
template <int W, class T, class S>
__global__ void
ln_bwd_stats_kernel(const T *dy, const T *xhat, const T *gamma, S *stats, size_t rows, size_t cols,
                    int rms)
{
    using A = Acc<T, S>;
    ROW_LOOP(r, rows)
    {
        A v[2] = {0, 0};
        VEC_COL_LOOP(c, cols, W)
        {
            size_t e = r * cols + c;
            A d[W], g[W], xh[W];
            ldv<W>(dy, e, d);
            ldv<W>(gamma, c, g);
            ldv<W>(xhat, e, xh);
#pragma unroll
            for (int i = 0; i < W; i++) {
                A dyg = d[i] * g[i];
                v[0] += dyg;
                v[1] += dyg * xh[i];
            }
        }
        block_reduce(v, Sum());
        if (threadIdx.x == 0) {
            st(stats, r, rms ? (A) 0 : v[0]);
            st(stats, rows + r, v[1]);
        }
    }
}

template <int W, class T, class S>
__global__ void
ln_bwd_apply_kernel(const T *dy, const T *xhat, const T *gamma, const S *rstd, const S *stats,
                    T *dx, size_t rows, size_t cols, double hidden, int rms)
{
    using A = Acc<T, S>;
    ROW_LOOP(r, rows)
    {
        A m1 = rms ? (A) 0 : ld<A>(stats, r) / (A) hidden;
        A m2 = ld<A>(stats, rows + r) / (A) hidden;
        A rs = ld<A>(rstd, r);
        VEC_COL_LOOP(c, cols, W)
        {
            size_t e = r * cols + c;
            A d[W], g[W], xh[W];
            ldv<W>(dy, e, d);
            ldv<W>(gamma, c, g);
            ldv<W>(xhat, e, xh);
#pragma unroll
            for (int i = 0; i < W; i++)
                d[i] = rs * (d[i] * g[i] - m1 - xh[i] * m2);
            stv<W>(dx, e, d);
        }
    }
}

/* Calls f(std::integral_constant<int, W>()) with W = vec_width<T> when cols is a whole number of
 * chunks and every pointer is 16-byte aligned, else W = 1. */
template <class T, class F, class... P>
cudaError_t
with_row_width(size_t cols, F f, const P *...ptrs)
{
    constexpr int V = vec_width<T>;
    bool ok = cols % V == 0 && (vec_aligned<V>((const T *) ptrs) && ...);
    if (ok)
        return f(std::integral_constant<int, V>());
    return f(std::integral_constant<int, 1>());
}

/* ---- column sums -------------------------------------------------------------------------- */

/* Rows per column-sum chunk: COL_CHUNK, or more when gridDim.y (at most 65535) would overflow. */
size_t
col_chunk(size_t rows)
{
    size_t chunk = div_up(rows, 65535);
    return chunk < COL_CHUNK ? COL_CHUNK : chunk;
}

size_t
col_chunks(size_t rows)
{
    return div_up(rows, col_chunk(rows));
}

/* What each row adds to column c's sums: BIAS_GRAD dy; LN_BWD_STATS dy*xhat and dy. */
template <class T> struct BiasGradTerm {
    const T *dy;
    size_t cols;

    template <class A>
    __device__ void
    operator()(size_t r, size_t c, A *acc) const
    {
        acc[0] += ld<A>(dy, r * cols + c);
    }
};

/* RMSNorm: dgamma only. */
template <class T> struct RmsGradTerm {
    const T *dy, *xhat;
    size_t cols;

    template <class A>
    __device__ void
    operator()(size_t r, size_t c, A *acc) const
    {
        acc[0] += ld<A>(dy, r * cols + c) * ld<A>(xhat, r * cols + c);
    }
};

template <class T> struct LnGradTerm {
    const T *dy, *xhat;
    size_t cols;

    template <class A>
    __device__ void
    operator()(size_t r, size_t c, A *acc) const
    {
        A d = ld<A>(dy, r * cols + c);
        acc[0] += d * ld<A>(xhat, r * cols + c);
        acc[1] += d;
    }
};

template <class T, int N> struct ColOut {
    T *p[N];
};

/* part[(chunk * N + k) * cols + c] = sum k of column c over the block's chunk of rows. */
template <int N, class A, class Term>
__global__ void
colsum_part_kernel(Term term, size_t rows, size_t cols, size_t chunk, A *part)
{
    __shared__ A sh[N][COL_LANES][COL_TILE];
    const size_t c = (size_t) blockIdx.x * COL_TILE + threadIdx.x;
    const size_t r0 = (size_t) blockIdx.y * chunk;
    const size_t r1 = rows - r0 < chunk ? rows : r0 + chunk;
    A acc[N];
#pragma unroll
    for (int k = 0; k < N; k++)
        acc[k] = 0;
    if (c < cols)
        for (size_t r = r0 + threadIdx.y; r < r1; r += COL_LANES)
            term(r, c, acc);
#pragma unroll
    for (int k = 0; k < N; k++)
        sh[k][threadIdx.y][threadIdx.x] = acc[k];
    __syncthreads();
    if (threadIdx.y != 0 || c >= cols)
        return;
#pragma unroll
    for (int k = 0; k < N; k++) {
        A sum = 0;
        for (int y = 0; y < COL_LANES; y++)
            sum += sh[k][y][threadIdx.x];
        part[((size_t) blockIdx.y * N + k) * cols + c] = sum;
    }
}

/* out.p[k][c] = the chunks' partial sums of (k, c), added in chunk order. */
template <int N, class A, class T>
__global__ void
colsum_finish_kernel(const A *part, size_t chunks, size_t cols, ColOut<T, N> out)
{
    GRID_STRIDE(i, N * cols)
    {
        size_t k = i / cols, c = i - k * cols;
        A sum = 0;
        for (size_t ch = 0; ch < chunks; ch++)
            sum += part[(ch * N + k) * cols + c];
        st(out.p[k], c, sum);
    }
}

/* The N column sums of `term` over rows x cols into out (overwritten; zeros when rows == 0). */
template <int N, class A, class T, class Term>
cudaError_t
colsum(Term term, size_t rows, size_t cols, ColOut<T, N> out, void *work, cudaStream_t stream)
{
    if (cols == 0)
        return cudaSuccess;
    size_t chunks = col_chunks(rows);
    if (chunks > 0) {
        if (work == NULL)
            return cudaErrorInvalidValue;
        dim3 grid((unsigned) div_up(cols, COL_TILE), (unsigned) chunks);
        cudaError_t e = launch(colsum_part_kernel<N, A, Term>, grid, dim3(COL_TILE, COL_LANES),
                               stream, term, rows, cols, col_chunk(rows), (A *) work);
        if (e != cudaSuccess)
            return e;
    }
    return launch(colsum_finish_kernel<N, A, T>, flat_blocks(N * cols), FLAT_THREADS, stream,
                  (const A *) work, chunks, cols, out);
}

/* ---- elementwise -------------------------------------------------------------------------- */

/* y[e] += bias[e % cols]: vectorised when cols is a whole number of chunks, so that a chunk
 * stays in one row and reads W consecutive bias elements. */
template <class T> struct BiasAdd {
    static constexpr int W = vec_width<T>;
    const T *bias;
    T *y;
    size_t cols;

    bool
    aligned() const
    {
        return cols % W == 0 && vec_aligned<W>(bias) && vec_aligned<W>(y);
    }

    template <int w>
    __device__ void
    run(size_t e) const
    {
        using A = Acc<T>;
        A v[w], b[w];
        ldv<w>(y, e, v);
        ldv<w>(bias, e % cols, b);
#pragma unroll
        for (int i = 0; i < w; i++)
            v[i] = v[i] + b[i];
        stv<w>(y, e, v);
    }
};

#define GELU_C 0.7978845608028654 /* sqrt(2/pi) */
#define GELU_A 0.044715

template <class T> struct Gelu {
    static constexpr int W = vec_width<T>;
    const T *x;
    T *y;

    bool
    aligned() const
    {
        return vec_aligned<W>(x) && vec_aligned<W>(y);
    }

    template <int w>
    __device__ void
    run(size_t e) const
    {
        using A = Acc<T>;
        A v[w];
        ldv<w>(x, e, v);
#pragma unroll
        for (int i = 0; i < w; i++)
            v[i] = (A) 0.5 * v[i] *
                   ((A) 1 + dtanh((A) GELU_C * (v[i] + (A) GELU_A * v[i] * v[i] * v[i])));
        stv<w>(y, e, v);
    }
};

/* d/dx of 0.5 x (1 + tanh(u)), u = c (x + a x^3). */
template <class T> struct GeluBwd {
    static constexpr int W = vec_width<T>;
    const T *dy, *x;
    T *dx;

    bool
    aligned() const
    {
        return vec_aligned<W>(dy) && vec_aligned<W>(x) && vec_aligned<W>(dx);
    }

    template <int w>
    __device__ void
    run(size_t e) const
    {
        using A = Acc<T>;
        A v[w], d[w];
        ldv<w>(x, e, v);
        ldv<w>(dy, e, d);
#pragma unroll
        for (int i = 0; i < w; i++) {
            A t = dtanh((A) GELU_C * (v[i] + (A) GELU_A * v[i] * v[i] * v[i]));
            A du = (A) GELU_C * ((A) 1 + (A) 3 * (A) GELU_A * v[i] * v[i]);
            A g = (A) 0.5 * ((A) 1 + t) + (A) 0.5 * v[i] * ((A) 1 - t * t) * du;
            d[i] = d[i] * g;
        }
        stv<w>(dx, e, d);
    }
};

template <class A>
__device__ A
dsigmoid(A g)
{
    return (A) 1 / ((A) 1 + dexp(-g));
}

/* y[e] = silu(z[2e]) z[2e+1] over the (gate, up) column pairs. */
template <class T>
__global__ void
swiglu_kernel(const T *z, T *y, size_t n)
{
    using A = Acc<T>;
    GRID_STRIDE(e, n)
    {
        A g = ld<A>(z, 2 * e), u = ld<A>(z, 2 * e + 1);
        st(y, e, g * dsigmoid(g) * u);
    }
}

/* dg = dy u silu'(g), silu'(g) = sig(g) (1 + g (1 - sig(g))); du = dy silu(g). */
template <class T>
__global__ void
swiglu_bwd_kernel(const T *dy, const T *z, T *dz, size_t n)
{
    using A = Acc<T>;
    GRID_STRIDE(e, n)
    {
        A g = ld<A>(z, 2 * e), u = ld<A>(z, 2 * e + 1), sg = dsigmoid(g), d = ld<A>(dy, e);
        st(dz, 2 * e, d * u * sg * ((A) 1 + g * ((A) 1 - sg)));
        st(dz, 2 * e + 1, d * g * sg);
    }
}

/* y = x * keep / (1-p), keep of element (row0 + r, col0 + c) of the global block. */
template <class T> struct Dropout {
    static constexpr int W = vec_width<T>;
    const T *x;
    T *y;
    size_t cols;
    uint64_t site_h;
    double p;
    uint64_t row0, col0, global_cols;

    bool
    aligned() const
    {
        return vec_aligned<W>(x) && vec_aligned<W>(y);
    }

    template <int w>
    __device__ void
    run(size_t e) const
    {
        using A = Acc<T>;
        const A scale = (A) (1.0 / (1.0 - p));
        A v[w];
        ldv<w>(x, e, v);
#pragma unroll
        for (int i = 0; i < w; i++) {
            size_t r = (e + i) / cols, c = e + i - r * cols;
            bool k = keep(site_h, (row0 + r) * global_cols + col0 + c, p);
            v[i] = k ? v[i] * scale : (A) 0;
        }
        stv<w>(y, e, v);
    }
};

/* c = a + b; c may be a or b (each chunk is read before it is written, by one thread). */
template <class T> struct Add {
    static constexpr int W = vec_width<T>;
    const T *a, *b;
    T *c;

    bool
    aligned() const
    {
        return vec_aligned<W>(a) && vec_aligned<W>(b) && vec_aligned<W>(c);
    }

    template <int w>
    __device__ void
    run(size_t e) const
    {
        using A = Acc<T>;
        A x[w], y[w];
        ldv<w>(a, e, x);
        ldv<w>(b, e, y);
#pragma unroll
        for (int i = 0; i < w; i++)
            x[i] = x[i] + y[i];
        stv<w>(c, e, x);
    }
};

/* ---- embedding and cross-entropy ---------------------------------------------------------- */

template <class T, class S>
__global__ void
embed_kernel(const S *tokens, const T *table, T *y, size_t rows, size_t cols, uint64_t vocab0,
             uint64_t vocab)
{
    using A = Acc<T, S>;
    GRID_STRIDE(e, rows * cols)
    {
        size_t r = e / cols, c = e - r * cols;
        uint64_t row = vocab_row(ld<double>(tokens, r), vocab0, vocab);
        st(y, e, row != NO_ROW ? ld<A>(table, row * cols + c) : (A) 0);
    }
}

/* Repeated ids meet in atomicAdd: the order of the additions is not fixed. */
template <class T, class S>
__global__ void
embed_bwd_kernel(const S *tokens, const T *dy, T *dtable, size_t rows, size_t cols, uint64_t vocab0,
                 uint64_t vocab)
{
    using A = Acc<T, S>;
    GRID_STRIDE(e, rows * cols)
    {
        size_t r = e / cols, c = e - r * cols;
        uint64_t row = vocab_row(ld<double>(tokens, r), vocab0, vocab);
        if (row != NO_ROW)
            atomic_add(dtable + row * cols + c, ld<A>(dy, e));
    }
}

/* An empty slice gives -inf, the identity of the max all-reduce that follows. */
template <class T, class S>
__global__ void
xent_max_kernel(const T *logits, S *max, size_t rows, size_t vocab)
{
    using A = Acc<T, S>;
    ROW_LOOP(r, rows)
    {
        A v[1] = {-INFINITY};
        COL_LOOP(c, vocab)
        {
            v[0] = Max()(v[0], ld<A>(logits, r * vocab + c));
        }
        block_reduce(v, Max());
        if (threadIdx.x == 0)
            st(max, r, v[0]);
    }
}

template <class T, class S>
__global__ void
xent_fwd_kernel(const T *logits, const S *max, const S *targets, S *stats, size_t rows,
                size_t vocab, uint64_t vocab0)
{
    using A = Acc<T, S>;
    ROW_LOOP(r, rows)
    {
        A m = ld<A>(max, r), v[1] = {0};
        COL_LOOP(c, vocab)
        {
            v[0] += dexp(ld<A>(logits, r * vocab + c) - m);
        }
        block_reduce(v, Sum());
        if (threadIdx.x == 0) {
            uint64_t t = vocab_row(ld<double>(targets, r), vocab0, vocab);
            st(stats, r, v[0]);
            st(stats, rows + r, t != NO_ROW ? ld<A>(logits, r * vocab + t) : (A) 0);
        }
    }
}

/* One block: loss[0] += scale * sum_r (log stats[r] + max[r] - stats[rows + r]). */
template <class S>
__global__ void
xent_loss_kernel(const S *max, const S *stats, S *loss, size_t rows, double scale)
{
    using A = Acc<S>;
    A v[1] = {0};
    COL_LOOP(r, rows)
    {
        v[0] += dlog(ld<A>(stats, r)) + ld<A>(max, r) - ld<A>(stats, rows + r);
    }
    block_reduce(v, Sum());
    if (threadIdx.x == 0)
        st(loss, 0, ld<A>(loss, 0) + (A) scale * v[0]);
}

template <class T, class S>
__global__ void
xent_bwd_kernel(const T *logits, const S *max, const S *targets, const S *stats, T *dlogits,
                size_t rows, size_t vocab, uint64_t vocab0, double scale)
{
    using A = Acc<T, S>;
    ROW_LOOP(r, rows)
    {
        A m = ld<A>(max, r), sum = ld<A>(stats, r);
        uint64_t t = vocab_row(ld<double>(targets, r), vocab0, vocab);
        COL_LOOP(c, vocab)
        {
            size_t e = r * vocab + c;
            A p = dexp(ld<A>(logits, e) - m) / sum;
            st(dlogits, e, (A) scale * (p - (c == t ? (A) 1 : (A) 0)));
        }
    }
}

/* ---- Adam --------------------------------------------------------------------------------- */

/* AdamW: the decoupled decay uses the parameter before this step's update. */
template <class T, class S> struct Adam {
    static constexpr int W = vec_width<T, S>;
    T *param;
    const T *grad;
    S *m, *v;
    SimparCukAdam a;

    bool
    aligned() const
    {
        return vec_aligned<W>(param) && vec_aligned<W>(grad) && vec_aligned<W>(m) &&
               vec_aligned<W>(v);
    }

    template <int w>
    __device__ void
    run(size_t e) const
    {
        using A = Acc<T, S>;
        const A b1 = (A) a.beta1, b2 = (A) a.beta2;
        A g[w], mi[w], vi[w], p[w];
        ldv<w>(grad, e, g);
        ldv<w>(m, e, mi);
        ldv<w>(v, e, vi);
        ldv<w>(param, e, p);
#pragma unroll
        for (int i = 0; i < w; i++) {
            mi[i] = b1 * mi[i] + ((A) 1 - b1) * g[i];
            vi[i] = b2 * vi[i] + ((A) 1 - b2) * g[i] * g[i];
        }
        stv<w>(m, e, mi); /* rounded into S, as before: the update uses the unrounded moments */
        stv<w>(v, e, vi);
#pragma unroll
        for (int i = 0; i < w; i++) {
            A update = (mi[i] / (A) a.c1) / (dsqrt(vi[i] / (A) a.c2) + (A) a.eps);
            p[i] = p[i] - (A) a.lr * (update + (A) a.weight_decay * p[i]);
        }
        stv<w>(param, e, p);
    }
};

/* ---- attention softmax -------------------------------------------------------------------- */

/* Row `row` of the [heads x s x s] block: local head g, query i, and its unmasked length. */
struct SoftRow {
    size_t g, i, len;
    uint64_t mask; /* dropout index of element (i, 0) */
};

__device__ __forceinline__ SoftRow
soft_row(size_t row, size_t s, bool causal, uint64_t head)
{
    SoftRow sr;
    sr.g = row / s;
    sr.i = row - sr.g * s;
    sr.len = causal ? sr.i + 1 : s;
    sr.mask = ((head + sr.g) * s + sr.i) * s;
    return sr;
}

/* In place: scores -> P = softmax over the first len columns, 0 after; dropped = P*keep/(1-p). */
template <class T>
__global__ void
softmax_kernel(T *probs, T *dropped, size_t heads, size_t s, bool causal, double p, uint64_t site_h,
               uint64_t head)
{
    using A = Acc<T>;
    const A scale = (A) (1.0 / (1.0 - p));
    ROW_LOOP(row, heads * s)
    {
        SoftRow sr = soft_row(row, s, causal, head);
        T *pr = probs + row * s;
        A mx[1] = {-INFINITY}, sum[1] = {0};
        COL_LOOP(j, sr.len)
        {
            mx[0] = Max()(mx[0], ld<A>(pr, j));
        }
        block_reduce(mx, Max());
        COL_LOOP(j, sr.len)
        {
            sum[0] += dexp(ld<A>(pr, j) - mx[0]);
        }
        block_reduce(sum, Sum());
        const A inv = (A) 1 / sum[0];
        COL_LOOP(j, s)
        {
            A pv = j < sr.len ? dexp(ld<A>(pr, j) - mx[0]) * inv : (A) 0;
            st(pr, j, pv);
            if (dropped != NULL)
                st(dropped + row * s, j, keep(site_h, sr.mask + j, p) ? pv * scale : (A) 0);
        }
    }
}

/* dp = dPd * keep/(1-p); dS = P (dp - sum_j P dp) in place of dPd; dropped = P*keep/(1-p). The
 * columns past len (causal) give 0 whatever P holds there, as in the host's loops. */
template <class T>
__global__ void
softmax_bwd_kernel(const T *probs, T *grad, T *dropped, size_t heads, size_t s, bool causal,
                   double p, uint64_t site_h, uint64_t head)
{
    using A = Acc<T>;
    const A scale = (A) (1.0 / (1.0 - p));
    ROW_LOOP(row, heads * s)
    {
        SoftRow sr = soft_row(row, s, causal, head);
        const T *pr = probs + row * s;
        T *gr = grad + row * s, *dr = dropped + row * s;
        A dot[1] = {0};
        COL_LOOP(j, sr.len)
        {
            A k = keep(site_h, sr.mask + j, p) ? scale : (A) 0;
            dot[0] += ld<A>(pr, j) * ld<A>(gr, j) * k;
        }
        block_reduce(dot, Sum());
        COL_LOOP(j, s) /* the same j as above: each thread rewrites only what it read */
        {
            A k = j < sr.len && keep(site_h, sr.mask + j, p) ? scale : (A) 0;
            A pv = j < sr.len ? ld<A>(pr, j) : (A) 0;
            st(gr, j, pv * (ld<A>(gr, j) * k - dot[0]));
            st(dr, j, pv * k);
        }
    }
}

} // namespace

/* ---- launchers ---------------------------------------------------------------------------- */

extern "C" cudaError_t
simpar_cuk_from_f64(int t, void *elems, const double *src, size_t n, cudaStream_t stream)
{
    if (n == 0)
        return cudaSuccess;
    return with_t(t, [&](auto tt) {
        using T = Of<decltype(tt)>;
        return launch(from_f64_kernel<T>, flat_blocks(n), FLAT_THREADS, stream, (T *) elems, src,
                      n);
    });
}

extern "C" cudaError_t
simpar_cuk_to_f64(int t, const void *elems, double *dst, size_t n, cudaStream_t stream)
{
    if (n == 0)
        return cudaSuccess;
    return with_t(t, [&](auto tt) {
        using T = Of<decltype(tt)>;
        return launch(to_f64_kernel<T>, flat_blocks(n), FLAT_THREADS, stream, (const T *) elems,
                      dst, n);
    });
}

extern "C" cudaError_t
simpar_cuk_random(int t, void *elems, size_t n, uint64_t seed, uint64_t ids, cudaStream_t stream)
{
    if (n == 0)
        return cudaSuccess;
    return with_t(t, [&](auto tt) {
        using T = Of<decltype(tt)>;
        return launch(random_kernel<T>, flat_blocks(n), FLAT_THREADS, stream, (T *) elems, n, seed,
                      ids);
    });
}

extern "C" cudaError_t
simpar_cuk_ln_stats(int t, int s, const SimparCukKernel *k, void *work, cudaStream_t stream)
{
    (void) work;
    if (k->rows == 0)
        return cudaSuccess;
    return with_ts(t, s, [&](auto tt, auto ss) {
        using T = Of<decltype(tt)>;
        using S = Of<decltype(ss)>;
        return with_row_width<T>(
            k->cols,
            [&](auto w) {
                constexpr int W = decltype(w)::value;
                return launch(ln_stats_kernel<W, T, S>, row_blocks(k->rows),
                              row_threads(k->cols / W), stream, (const T *) k->in[0],
                              (S *) k->out[0], k->rows, k->cols);
            },
            k->in[0]);
    });
}

extern "C" cudaError_t
simpar_cuk_ln_apply(int t, int s, const SimparCukKernel *k, void *work, cudaStream_t stream)
{
    (void) work;
    if (k->rows == 0)
        return cudaSuccess;
    return with_ts(t, s, [&](auto tt, auto ss) {
        using T = Of<decltype(tt)>;
        using S = Of<decltype(ss)>;
        return with_row_width<T>(
            k->cols,
            [&](auto w) {
                constexpr int W = decltype(w)::value;
                return launch(ln_apply_kernel<W, T, S>, row_blocks(k->rows),
                              row_threads(k->cols / W), stream, (const T *) k->in[0],
                              (const S *) k->in[1], (const T *) k->in[2], (const T *) k->in[3],
                              (T *) k->out[0], (T *) k->out[1], (S *) k->out[2], k->rows, k->cols,
                              k->hidden, k->eps);
            },
            k->in[0], k->in[2], k->in[3], k->out[0], k->out[1]);
    });
}

extern "C" cudaError_t
simpar_cuk_ln_bwd_stats(int t, int s, const SimparCukKernel *k, void *work, cudaStream_t stream)
{
    return with_ts(t, s, [&](auto tt, auto ss) {
        using T = Of<decltype(tt)>;
        using S = Of<decltype(ss)>;
        using A = Acc<T, S>;
        if (k->rows > 0) {
            cudaError_t e = with_row_width<T>(
                k->cols,
                [&](auto w) {
                    constexpr int W = decltype(w)::value;
                    return launch(ln_bwd_stats_kernel<W, T, S>, row_blocks(k->rows),
                                  row_threads(k->cols / W), stream, (const T *) k->in[0],
                                  (const T *) k->in[1], (const T *) k->in[2], (S *) k->out[0],
                                  k->rows, k->cols, k->rms);
                },
                k->in[0], k->in[1], k->in[2]);
            if (e != cudaSuccess)
                return e;
        }
        if (k->rms) {
            RmsGradTerm<T> rterm = {(const T *) k->in[0], (const T *) k->in[1], k->cols};
            ColOut<T, 1> rout = {{(T *) k->out[1]}};
            return colsum<1, A>(rterm, k->rows, k->cols, rout, work, stream);
        }
        LnGradTerm<T> term = {(const T *) k->in[0], (const T *) k->in[1], k->cols};
        ColOut<T, 2> out = {{(T *) k->out[1], (T *) k->out[2]}};
        return colsum<2, A>(term, k->rows, k->cols, out, work, stream);
    });
}

extern "C" cudaError_t
simpar_cuk_ln_bwd_apply(int t, int s, const SimparCukKernel *k, void *work, cudaStream_t stream)
{
    (void) work;
    if (k->rows == 0)
        return cudaSuccess;
    return with_ts(t, s, [&](auto tt, auto ss) {
        using T = Of<decltype(tt)>;
        using S = Of<decltype(ss)>;
        return with_row_width<T>(
            k->cols,
            [&](auto w) {
                constexpr int W = decltype(w)::value;
                return launch(ln_bwd_apply_kernel<W, T, S>, row_blocks(k->rows),
                              row_threads(k->cols / W), stream, (const T *) k->in[0],
                              (const T *) k->in[1], (const T *) k->in[2], (const S *) k->in[3],
                              (const S *) k->in[4], (T *) k->out[0], k->rows, k->cols, k->hidden,
                              k->rms);
            },
            k->in[0], k->in[1], k->in[2], k->out[0]);
    });
}

extern "C" cudaError_t
simpar_cuk_bias_add(int t, int s, const SimparCukKernel *k, void *work, cudaStream_t stream)
{
    (void) s, (void) work;
    size_t n = k->rows * k->cols;
    if (n == 0)
        return cudaSuccess;
    return with_t(t, [&](auto tt) {
        using T = Of<decltype(tt)>;
        return launch_elementwise(BiasAdd<T>{(const T *) k->in[0], (T *) k->out[0], k->cols}, n,
                                  stream);
    });
}

extern "C" cudaError_t
simpar_cuk_bias_grad(int t, int s, const SimparCukKernel *k, void *work, cudaStream_t stream)
{
    return with_ts(t, s, [&](auto tt, auto ss) {
        using T = Of<decltype(tt)>;
        using A = Acc<T, Of<decltype(ss)>>;
        BiasGradTerm<T> term = {(const T *) k->in[0], k->cols};
        ColOut<T, 1> out = {{(T *) k->out[0]}};
        return colsum<1, A>(term, k->rows, k->cols, out, work, stream);
    });
}

extern "C" cudaError_t
simpar_cuk_gelu(int t, int s, const SimparCukKernel *k, void *work, cudaStream_t stream)
{
    (void) s, (void) work;
    size_t n = k->rows * k->cols;
    if (n == 0)
        return cudaSuccess;
    return with_t(t, [&](auto tt) {
        using T = Of<decltype(tt)>;
        return launch_elementwise(Gelu<T>{(const T *) k->in[0], (T *) k->out[0]}, n, stream);
    });
}

extern "C" cudaError_t
simpar_cuk_gelu_bwd(int t, int s, const SimparCukKernel *k, void *work, cudaStream_t stream)
{
    (void) s, (void) work;
    size_t n = k->rows * k->cols;
    if (n == 0)
        return cudaSuccess;
    return with_t(t, [&](auto tt) {
        using T = Of<decltype(tt)>;
        return launch_elementwise(
            GeluBwd<T>{(const T *) k->in[0], (const T *) k->in[1], (T *) k->out[0]}, n, stream);
    });
}

extern "C" cudaError_t
simpar_cuk_swiglu(int t, int s, const SimparCukKernel *k, void *work, cudaStream_t stream)
{
    (void) s, (void) work;
    size_t n = k->rows * k->cols;
    if (n == 0)
        return cudaSuccess;
    return with_t(t, [&](auto tt) {
        using T = Of<decltype(tt)>;
        return launch(swiglu_kernel<T>, flat_blocks(n), FLAT_THREADS, stream, (const T *) k->in[0],
                      (T *) k->out[0], n);
    });
}

extern "C" cudaError_t
simpar_cuk_swiglu_bwd(int t, int s, const SimparCukKernel *k, void *work, cudaStream_t stream)
{
    (void) s, (void) work;
    size_t n = k->rows * k->cols;
    if (n == 0)
        return cudaSuccess;
    return with_t(t, [&](auto tt) {
        using T = Of<decltype(tt)>;
        return launch(swiglu_bwd_kernel<T>, flat_blocks(n), FLAT_THREADS, stream,
                      (const T *) k->in[0], (const T *) k->in[1], (T *) k->out[0], n);
    });
}

extern "C" cudaError_t
simpar_cuk_dropout(int t, int s, const SimparCukKernel *k, void *work, cudaStream_t stream)
{
    (void) s, (void) work;
    size_t n = k->rows * k->cols;
    if (n == 0)
        return cudaSuccess;
    return with_t(t, [&](auto tt) {
        using T = Of<decltype(tt)>;
        Dropout<T> d = {(const T *) k->in[0],
                        (T *) k->out[0],
                        k->cols,
                        site_hash(k->seed, k->site),
                        k->p,
                        k->row0,
                        k->col0,
                        k->global_cols};
        return launch_elementwise(d, n, stream);
    });
}

extern "C" cudaError_t
simpar_cuk_add(int t, int s, const SimparCukKernel *k, void *work, cudaStream_t stream)
{
    (void) s, (void) work;
    size_t n = k->rows * k->cols;
    if (n == 0)
        return cudaSuccess;
    return with_t(t, [&](auto tt) {
        using T = Of<decltype(tt)>;
        return launch_elementwise(
            Add<T>{(const T *) k->in[0], (const T *) k->in[1], (T *) k->out[0]}, n, stream);
    });
}

extern "C" size_t
simpar_cuk_colsum_work(size_t rows, size_t cols, unsigned sums, int t, int s)
{
    size_t acc = t == SIMPAR_CUK_F64 || s == SIMPAR_CUK_F64 ? sizeof(double) : sizeof(float);
    return col_chunks(rows) * sums * cols * acc;
}

extern "C" cudaError_t
simpar_cuk_embed(int t, int s, const SimparCukVocab *v, cudaStream_t stream)
{
    size_t n = v->rows * v->cols;
    if (n == 0)
        return cudaSuccess;
    return with_ts(t, s, [&](auto tt, auto ss) {
        using T = Of<decltype(tt)>;
        using S = Of<decltype(ss)>;
        return launch(embed_kernel<T, S>, flat_blocks(n), FLAT_THREADS, stream,
                      (const S *) v->in[0], (const T *) v->in[1], (T *) v->out, v->rows, v->cols,
                      v->vocab0, v->vocab);
    });
}

extern "C" cudaError_t
simpar_cuk_embed_bwd(int t, int s, const SimparCukVocab *v, cudaStream_t stream)
{
    size_t n = v->rows * v->cols;
    if (n == 0 || v->vocab == 0)
        return cudaSuccess;
    return with_ts(t, s, [&](auto tt, auto ss) {
        using T = Of<decltype(tt)>;
        using S = Of<decltype(ss)>;
        return launch(embed_bwd_kernel<T, S>, flat_blocks(n), FLAT_THREADS, stream,
                      (const S *) v->in[0], (const T *) v->in[1], (T *) v->out, v->rows, v->cols,
                      v->vocab0, v->vocab);
    });
}

extern "C" cudaError_t
simpar_cuk_xent_max(int t, int s, const SimparCukVocab *v, cudaStream_t stream)
{
    if (v->rows == 0)
        return cudaSuccess;
    return with_ts(t, s, [&](auto tt, auto ss) {
        using T = Of<decltype(tt)>;
        using S = Of<decltype(ss)>;
        return launch(xent_max_kernel<T, S>, row_blocks(v->rows), row_threads(v->vocab), stream,
                      (const T *) v->in[0], (S *) v->out, v->rows, (size_t) v->vocab);
    });
}

extern "C" cudaError_t
simpar_cuk_xent_fwd(int t, int s, const SimparCukVocab *v, cudaStream_t stream)
{
    if (v->rows == 0)
        return cudaSuccess;
    return with_ts(t, s, [&](auto tt, auto ss) {
        using T = Of<decltype(tt)>;
        using S = Of<decltype(ss)>;
        return launch(xent_fwd_kernel<T, S>, row_blocks(v->rows), row_threads(v->vocab), stream,
                      (const T *) v->in[0], (const S *) v->in[1], (const S *) v->in[2],
                      (S *) v->out, v->rows, (size_t) v->vocab, v->vocab0);
    });
}

extern "C" cudaError_t
simpar_cuk_xent_loss(int t, int s, const SimparCukVocab *v, cudaStream_t stream)
{
    (void) t;
    if (v->rows == 0)
        return cudaSuccess;
    return with_ts(SIMPAR_CUK_F32, s, [&](auto, auto ss) {
        using S = Of<decltype(ss)>;
        return launch(xent_loss_kernel<S>, 1, row_threads(v->rows), stream, (const S *) v->in[0],
                      (const S *) v->in[1], (S *) v->out, v->rows, v->scale);
    });
}

extern "C" cudaError_t
simpar_cuk_xent_bwd(int t, int s, const SimparCukVocab *v, cudaStream_t stream)
{
    if (v->rows == 0 || v->vocab == 0)
        return cudaSuccess;
    return with_ts(t, s, [&](auto tt, auto ss) {
        using T = Of<decltype(tt)>;
        using S = Of<decltype(ss)>;
        return launch(xent_bwd_kernel<T, S>, row_blocks(v->rows), row_threads(v->vocab), stream,
                      (const T *) v->in[0], (const S *) v->in[1], (const S *) v->in[2],
                      (const S *) v->in[3], (T *) v->out, v->rows, (size_t) v->vocab, v->vocab0,
                      v->scale);
    });
}

extern "C" cudaError_t
simpar_cuk_adam(int t, int s, const SimparCukAdam *a, cudaStream_t stream)
{
    if (a->count == 0)
        return cudaSuccess;
    return with_ts(t, s, [&](auto tt, auto ss) {
        using T = Of<decltype(tt)>;
        using S = Of<decltype(ss)>;
        Adam<T, S> k = {(T *) a->param, (const T *) a->grad, (S *) a->m, (S *) a->v, *a};
        return launch_elementwise(k, a->count, stream);
    });
}

extern "C" cudaError_t
simpar_cuk_softmax(int t, const SimparCukSoftmax *sm, cudaStream_t stream)
{
    size_t rows = sm->heads * sm->s;
    if (rows == 0)
        return cudaSuccess;
    return with_t(t, [&](auto tt) {
        using T = Of<decltype(tt)>;
        return launch(softmax_kernel<T>, row_blocks(rows), row_threads(sm->s), stream,
                      (T *) sm->probs, (T *) sm->dropped, sm->heads, sm->s, sm->causal != 0, sm->p,
                      site_hash(sm->seed, sm->site), sm->head);
    });
}

extern "C" cudaError_t
simpar_cuk_softmax_bwd(int t, const SimparCukSoftmax *sm, cudaStream_t stream)
{
    size_t rows = sm->heads * sm->s;
    if (rows == 0)
        return cudaSuccess;
    if (sm->grad == NULL || sm->dropped == NULL)
        return cudaErrorInvalidValue;
    return with_t(t, [&](auto tt) {
        using T = Of<decltype(tt)>;
        return launch(softmax_bwd_kernel<T>, row_blocks(rows), row_threads(sm->s), stream,
                      (const T *) sm->probs, (T *) sm->grad, (T *) sm->dropped, sm->heads, sm->s,
                      sm->causal != 0, sm->p, site_hash(sm->seed, sm->site), sm->head);
    });
}
