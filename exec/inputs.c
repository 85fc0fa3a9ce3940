/* inputs.c - a measured run's input values, fast, in each buffer's own element type (inputs.h).
 *
 * The fast path, for a block of up to INPUTS_BLOCK columns of one row of a normal tensor:
 *
 *   u1, u2      the reference's uniforms, the same operations (exact)
 *   log u1      u1 = m 2^e, m in [sqrt(1/2), sqrt(2)): e ln 2 + 2 atanh((m-1)/(m+1)) by its
 *               series to s^21 (truncation below 1e-18 relative)
 *   cos X       X = 2 pi u2 as the reference rounds it; X - k pi/2 (pi/2 in two parts, k <= 4,
 *               exact), then the Taylor series of cos or sin to r^18 / r^19 (below 1e-18)
 *   w, bound    w = scale sqrt(-2 log u1) cos X; |w - reference| <= 2^-44 scale S (|cos| + 1),
 *               where the analysis gives about 2^-50: a margin of 2^6 for rounding in the
 *               polynomials, contracted or not
 *   rounding    w - bound and w + bound rounded to the type: equal bits, and the reference
 *               (rounded the same way, monotone) lies between them, so those are its bits;
 *               otherwise the element is computed by the reference formula
 *
 * On x86-64 with GCC the two block loops are also compiled for x86-64-v3 and v4 (AVX2, AVX-512)
 * and picked at load time (target_clones); meson builds this file at -O3 without errno from
 * libm calls, so that the loops vectorise.
 */
#include "inputs.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>
#ifdef __linux__
#include <sys/mman.h>
#endif

#define INPUTS_BLOCK       256
#define INPUTS_UNIT        ((guint64) 1 << 18) /* elements a worker takes at a time (about) */
#define INPUTS_MAX_THREADS 64

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__linux__)
#define INPUTS_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define INPUTS_CLONES
#endif

/* ---- the reference ------------------------------------------------------------------------ */

static inline guint64
inputs_mix(guint64 x) /* splitmix64's finalizer */
{
    x += G_GUINT64_CONSTANT(0x9e3779b97f4a7c15);
    x = (x ^ (x >> 30)) * G_GUINT64_CONSTANT(0xbf58476d1ce4e5b9);
    x = (x ^ (x >> 27)) * G_GUINT64_CONSTANT(0x94d049bb133111eb);
    return x ^ (x >> 31);
}

#define INPUTS_COL_MUL      G_GUINT64_CONSTANT(0xd6e8feb86659fd93)
#define INPUTS_U2_XOR       G_GUINT64_CONSTANT(0x5851f42d4c957f2d)
#define INPUTS_WEIGHT_SCALE 0.02

static inline double
inputs_unit(guint64 key) /* uniform in (0, 1] */
{
    return ((double) (inputs_mix(key) >> 11) + 0.5) * 0x1p-53;
}

static double
inputs_normal(guint64 key) /* Box-Muller */
{
    double u1 = inputs_unit(key), u2 = inputs_unit(key ^ INPUTS_U2_XOR);
    return sqrt(-2.0 * log(u1)) * cos(2.0 * G_PI * u2);
}

typedef enum {
    INPUT_WEIGHT,     /* normal * 0.02 */
    INPUT_ACTIVATION, /* x, dy, embed.dy, head.x: N(0, 1) */
    INPUT_ID,         /* tokens, targets: whole numbers in [0, V) */
} InputKind;

static InputKind
inputs_kind(const char *tensor)
{
    if (g_str_equal(tensor, "tokens") || g_str_equal(tensor, "targets"))
        return INPUT_ID;
    const char *last = strrchr(tensor, '.');
    last = last != NULL ? last + 1 : tensor;
    return g_str_equal(last, "x") || g_str_equal(last, "dy") ? INPUT_ACTIVATION : INPUT_WEIGHT;
}

static double
inputs_reference(InputKind kind, guint64 key, guint64 vocab)
{
    return kind == INPUT_ID ? MIN(floor(inputs_unit(key) * (double) vocab), (double) vocab - 1)
           : kind == INPUT_ACTIVATION ? inputs_normal(key)
                                      : INPUTS_WEIGHT_SCALE * inputs_normal(key);
}

static guint64
inputs_base(const SimparShard *sh, guint64 seed)
{
    return inputs_mix(seed ^ inputs_mix(g_str_hash(sh->tensor)));
}

static inline guint64
inputs_key(guint64 row_key, guint64 col)
{
    return row_key ^ col * INPUTS_COL_MUL;
}

double
simpar_inputs_value(const SimparShard *sh, guint64 seed, guint64 vocab, guint64 r, guint64 c)
{
    g_return_val_if_fail(r < sh->rows && c < sh->cols, 0);
    guint64 row_key = inputs_mix(inputs_base(sh, seed) + sh->row0 + r);
    return inputs_reference(inputs_kind(sh->tensor), inputs_key(row_key, sh->col0 + c), vocab);
}

void
simpar_inputs_random(double *dst, gsize n, guint64 seed, guint64 ids)
{
    for (gsize i = 0; i < n; i++) {
        double u = (double) (inputs_mix(seed ^ inputs_mix(i)) >> 11) * 0x1p-53;
        dst[i] = ids > 0 ? MIN(floor(u * (double) ids), (double) ids - 1) : 0.5 + u;
    }
}

/* ---- rounding into the element types ------------------------------------------------------ */

static inline guint32
inputs_float_bits(float f)
{
    guint32 u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* Nearest-even bf16: rounded to odd in float (24 bits, truncated toward zero, the last bit set
 * when inexact), then to 8 bits: one rounding of x. Branch-free, so that it vectorises. */
static inline guint16
inputs_bf16(double x)
{
    float f = (float) x;
    double d = (double) f;
    guint32 u = inputs_float_bits(f);
    u -= (guint32) (fabs(d) > fabs(x)); /* rounded away from zero: one step back */
    u |= (guint32) (d != x);
    return (guint16) ((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

/* Nearest-even binary16, with subnormals and overflow to infinity. */
static guint16
inputs_fp16(double x)
{
    guint16 sign = signbit(x) ? 0x8000 : 0;
    double a = fabs(x);
    if (isnan(x))
        return 0x7e00;
    int e;
    (void) frexp(a, &e);                       /* a in [2^(e-1), 2^e) */
    int ulp = MAX(e - 1, -14) - 10;            /* the spacing of binary16 numbers around a */
    a = ldexp(nearbyint(ldexp(a, -ulp)), ulp); /* exact: scaling by powers of two */
    if (a >= 65536.0)
        return sign | 0x7c00;
    if (a < 0x1p-14) /* subnormal (or the smallest normal, 1024 x 2^-24, which packs the same) */
        return sign | (guint16) (a * 0x1p24);
    double f = frexp(a, &e); /* f in [0.5, 1) */
    return sign | (guint16) ((e - 1 + 15) << 10) | (guint16) ((f * 2.0 - 1.0) * 1024.0);
}

void
simpar_inputs_store(SimparDtype type, void *dst, gsize i, double x)
{
    switch (type) {
    case SIMPAR_DTYPE_FP16:
        ((guint16 *) dst)[i] = inputs_fp16(x);
        break;
    case SIMPAR_DTYPE_BF16:
        ((guint16 *) dst)[i] = inputs_bf16(x);
        break;
    case SIMPAR_DTYPE_FP32:
        ((float *) dst)[i] = (float) x;
        break;
    default:
        ((double *) dst)[i] = x;
        break;
    }
}

/* ---- the fast path ------------------------------------------------------------------------ */

static inline guint64
inputs_double_bits(double d)
{
    guint64 u;
    memcpy(&u, &d, sizeof u);
    return u;
}

static inline double
inputs_bits_double(guint64 u)
{
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}

#define INPUTS_LN2_HI  0x1.62e42fefa3800p-1 /* ln 2 in two parts: e x HI is exact */
#define INPUTS_LN2_LO  0x1.ef35793c76730p-45
#define INPUTS_PIO2_HI 0x1.921fb54400000p0 /* pi/2 in two parts: k x HI is exact */
#define INPUTS_PIO2_LO 0x1.0b4611a626331p-34
#define INPUTS_SQRT1_2 G_GUINT64_CONSTANT(0x3fe6a09e667f3bcd) /* the bits of sqrt(1/2) */
#define INPUTS_MAGIC   0x1.8p52 /* adding and subtracting it rounds to an integer */

/* ln u for u in (0, 1]. */
static inline double
inputs_log(double u)
{
    /* m = u 2^-e in [sqrt(1/2), sqrt(2)); 64 added to e keeps the shifts logical */
    guint64 bits = inputs_double_bits(u);
    guint64 eb = (bits - INPUTS_SQRT1_2 + (G_GUINT64_CONSTANT(64) << 52)) >> 52;
    double e = inputs_bits_double(G_GUINT64_CONSTANT(0x4330000000000000) | eb) - 0x1p52 - 64.0;
    double m = inputs_bits_double(bits - (eb << 52) + (G_GUINT64_CONSTANT(64) << 52));
    double s = (m - 1.0) / (m + 1.0), s2 = s * s;
    double p = 1.0 / 21;
    p = p * s2 + 1.0 / 19, p = p * s2 + 1.0 / 17, p = p * s2 + 1.0 / 15, p = p * s2 + 1.0 / 13;
    p = p * s2 + 1.0 / 11, p = p * s2 + 1.0 / 9, p = p * s2 + 1.0 / 7, p = p * s2 + 1.0 / 5;
    p = p * s2 + 1.0 / 3;
    return e * INPUTS_LN2_HI + (e * INPUTS_LN2_LO + (2.0 * s + 2.0 * s * s2 * p));
}

/* cos x for x in [0, 2 pi]. */
static inline double
inputs_cos(double x)
{
    double k = (x * (2.0 / G_PI) + INPUTS_MAGIC) - INPUTS_MAGIC; /* 0 .. 4 */
    double r = (x - k * INPUTS_PIO2_HI) - k * INPUTS_PIO2_LO, r2 = r * r;
    double c = -1.0 / 87178291200.0; /* 1/14! */
    c = c * r2 + 1.0 / 479001600.0, c = c * r2 - 1.0 / 3628800.0, c = c * r2 + 1.0 / 40320.0;
    c = c * r2 - 1.0 / 720.0, c = c * r2 + 1.0 / 24.0, c = c * r2 - 0.5, c = c * r2 + 1.0;
    double s = 1.0 / 6227020800.0; /* 1/13! */
    s = s * r2 - 1.0 / 39916800.0, s = s * r2 + 1.0 / 362880.0, s = s * r2 - 1.0 / 5040.0;
    s = s * r2 + 1.0 / 120.0, s = s * r2 - 1.0 / 6.0, s = r + r * r2 * s;
    int q = (int) k;
    double v = (q & 1) ? s : c; /* cos(r + k pi/2): cos r, -sin r, -cos r, sin r */
    return ((q + 1) & 2) ? -v : v;
}

/* Columns col .. col + n of a row: w and the bound of its error. */
INPUTS_CLONES static void
inputs_block_values(guint64 row_key, guint64 col, guint n, double scale, double *w, double *bound)
{
    for (guint i = 0; i < n; i++) {
        guint64 key = inputs_key(row_key, col + i);
        double u1 = ((double) (inputs_mix(key) >> 11) + 0.5) * 0x1p-53;
        double u2 = ((double) (inputs_mix(key ^ INPUTS_U2_XOR) >> 11) + 0.5) * 0x1p-53;
        double s = sqrt(-2.0 * inputs_log(u1)), c = inputs_cos(2.0 * G_PI * u2);
        w[i] = scale * (s * c);
        bound[i] = s * (fabs(c) + 1.0) * scale * 0x1p-44;
    }
}

/* bf16 and fp32: the values' bits where both ends of the bound round alike; the count of the
 * others, marked in `redo`. */
INPUTS_CLONES static guint
inputs_block_bf16(guint n, const double *w, const double *bound, guint16 *out, guint8 *redo)
{
    guint8 any = 0;
    for (guint i = 0; i < n; i++) {
        guint16 lo = inputs_bf16(w[i] - bound[i]), hi = inputs_bf16(w[i] + bound[i]);
        out[i] = lo;
        redo[i] = (guint8) (lo != hi);
        any |= redo[i];
    }
    return any;
}

INPUTS_CLONES static guint
inputs_block_fp32(guint n, const double *w, const double *bound, float *out, guint8 *redo)
{
    guint8 any = 0;
    for (guint i = 0; i < n; i++) {
        float lo = (float) (w[i] - bound[i]), hi = (float) (w[i] + bound[i]);
        out[i] = lo;
        redo[i] = (guint8) (inputs_float_bits(lo) != inputs_float_bits(hi));
        any |= redo[i];
    }
    return any;
}

static guint
inputs_block_fp16(guint n, const double *w, const double *bound, guint16 *out, guint8 *redo)
{
    guint any = 0;
    for (guint i = 0; i < n; i++) {
        guint16 lo = inputs_fp16(w[i] - bound[i]), hi = inputs_fp16(w[i] + bound[i]);
        out[i] = lo;
        redo[i] = lo != hi;
        any += redo[i];
    }
    return any;
}

/* ---- memory ------------------------------------------------------------------------------ */

#define INPUTS_MMAP_MIN ((gsize) 1 << 21) /* below, plain g_malloc0 */

static gint
inputs_cmp_offset(gconstpointer a, gconstpointer b)
{
    gsize x = (*(const SimparShard *const *) a)->view.off;
    gsize y = (*(const SimparShard *const *) b)->view.off;
    return (x > y) - (x < y);
}

void
simpar_inputs_zero_gaps(const SimparShard *const *shards, guint n, gsize elems, SimparDtype type,
                        void *buf)
{
    g_autofree const SimparShard **order = g_memdup2(shards, n * sizeof *shards);
    qsort(order, n, sizeof *order, inputs_cmp_offset);
    gsize size = simpar_dtype_size(type), end = 0; /* [0, end) is covered or zeroed */
    for (guint i = 0; i <= n; i++) {
        gsize off = i < n ? MIN(order[i]->view.off, elems) : elems;
        if (off > end)
            memset((guint8 *) buf + end * size, 0, (off - end) * size);
        if (i < n)
            end = MAX(end, MIN(order[i]->view.off + order[i]->rows * order[i]->cols, elems));
    }
}

void *
simpar_inputs_alloc(gsize bytes)
{
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (bytes >= INPUTS_MMAP_MIN) {
        void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
            return NULL; /* (simpar_inputs_free unmaps what is this large) */
        (void) madvise(p, bytes, MADV_HUGEPAGE); /* a hint: without it, small pages */
        return p;
    }
#endif
    return g_try_malloc0(MAX(bytes, 1));
}

void
simpar_inputs_free(void *values, gsize bytes)
{
    if (values == NULL)
        return;
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (bytes >= INPUTS_MMAP_MIN) {
        (void) munmap(values, bytes);
        return;
    }
#endif
    (void) bytes;
    g_free(values);
}

/* ---- rows and workers --------------------------------------------------------------------- */

typedef struct {
    guint64 key; /* the row's */
    guint64 col0, cols;
    InputKind kind;
    guint64 vocab;
    SimparDtype type;
    guint8 *out; /* the row's first element */
} InputsRow;

static void
inputs_row_reference(const InputsRow *rw, guint64 c0, guint64 n)
{
    for (guint64 c = c0; c < c0 + n; c++)
        simpar_inputs_store(
            rw->type, rw->out, c,
            inputs_reference(rw->kind, inputs_key(rw->key, rw->col0 + c), rw->vocab));
}

static void
inputs_row_fast(const InputsRow *rw)
{
    double w[INPUTS_BLOCK], bound[INPUTS_BLOCK];
    guint8 redo[INPUTS_BLOCK];
    double scale = rw->kind == INPUT_WEIGHT ? INPUTS_WEIGHT_SCALE : 1.0;
    gsize size = simpar_dtype_size(rw->type);
    for (guint64 c = 0; c < rw->cols; c += INPUTS_BLOCK) {
        guint n = (guint) MIN(rw->cols - c, INPUTS_BLOCK), again;
        void *out = rw->out + c * size;
        inputs_block_values(rw->key, rw->col0 + c, n, scale, w, bound);
        again = rw->type == SIMPAR_DTYPE_BF16   ? inputs_block_bf16(n, w, bound, out, redo)
                : rw->type == SIMPAR_DTYPE_FP32 ? inputs_block_fp32(n, w, bound, out, redo)
                                                : inputs_block_fp16(n, w, bound, out, redo);
        for (guint i = 0; again > 0 && i < n; i++)
            if (redo[i])
                inputs_row_reference(rw, c + i, 1);
    }
}

typedef struct {
    guint shard;
    guint64 r0, r1;
} InputsUnit;

typedef struct {
    const SimparShard *const *shards;
    guint64 seed, vocab;
    SimparDtype type;
    guint8 *buf;
    GArray *units; /* InputsUnit */
    gint next;     /* atomic: the next unit to take */
} InputsFill;

static void
inputs_unit_run(const InputsFill *f, const InputsUnit *u)
{
    const SimparShard *sh = f->shards[u->shard];
    InputKind kind = inputs_kind(sh->tensor);
    guint64 base = inputs_base(sh, f->seed);
    gsize size = simpar_dtype_size(f->type);
    gboolean fast = kind != INPUT_ID && f->type != SIMPAR_DTYPE_FP64;
    for (guint64 r = u->r0; r < u->r1; r++) {
        InputsRow rw = {inputs_mix(base + sh->row0 + r),
                        sh->col0,
                        sh->cols,
                        kind,
                        f->vocab,
                        f->type,
                        f->buf + (sh->view.off + r * sh->cols) * size};
        if (fast)
            inputs_row_fast(&rw);
        else
            inputs_row_reference(&rw, 0, sh->cols);
    }
}

static gpointer
inputs_worker(gpointer data)
{
    InputsFill *f = data;
    for (;;) {
        guint i = (guint) g_atomic_int_add(&f->next, 1);
        if (i >= f->units->len)
            return NULL;
        inputs_unit_run(f, &g_array_index(f->units, InputsUnit, i));
    }
}

void
simpar_inputs_fill(const SimparShard *const *shards, guint n, guint64 seed, guint64 vocab,
                   SimparDtype type, void *buf, guint threads)
{
    g_return_if_fail(n == 0 || (shards != NULL && buf != NULL));
    InputsFill f = {shards, seed, vocab, type, buf, g_array_new(FALSE, FALSE, sizeof(InputsUnit)),
                    0};
    for (guint s = 0; s < n; s++) {
        guint64 step = MAX(INPUTS_UNIT / MAX(shards[s]->cols, 1), 1);
        for (guint64 r = 0; r < shards[s]->rows && shards[s]->cols > 0; r += step) {
            InputsUnit u = {s, r, MIN(r + step, shards[s]->rows)};
            g_array_append_val(f.units, u);
        }
    }
    guint n_threads = threads > 0 ? threads : g_get_num_processors();
    n_threads = MIN(MIN(n_threads, INPUTS_MAX_THREADS), f.units->len);
    GThread *workers[INPUTS_MAX_THREADS];
    guint started = 0;
    for (guint t = 1; t < n_threads; t++) {
        workers[started] = g_thread_try_new("simpar-inputs", inputs_worker, &f, NULL);
        started += workers[started] != NULL; /* fewer threads: the others do more */
    }
    inputs_worker(&f);
    for (guint t = 0; t < started; t++)
        g_thread_join(workers[t]);
    g_array_unref(f.units);
}
