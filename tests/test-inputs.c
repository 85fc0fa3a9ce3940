/* test-inputs.c - a measured run's input values (exec/inputs.h): the reference formula gives
 * the values simpar-exec gave before the values were generated in parallel and in each buffer's
 * type (pinned, bit for bit), and the parallel, typed generation gives, element for element,
 * the reference rounded once to nearest-even into fp64, fp32, bf16 and fp16, for weights,
 * activations and token ids, shards at offsets, blocks not a multiple of the vector width.
 * The rounding oracle here decodes the stored bits and checks that no neighbour of the type is
 * nearer (ties to the even one); it shares no code with the generator's conversions.
 */
#include "inputs.h"
#include "simpar-test.h"
#include <math.h>
#include <string.h>

#define SEED  7
#define VOCAB 51200

/* Values the previous generator (simpar-exec at 644e920, measure.c: one double at a time, on
 * one thread) gave for a 1 x 1 shard at (row, col) with --seed 7 and V 51200. */
static const struct {
    const char *tensor;
    guint64 row, col;
    double value;
} pinned[] = {
    {"l0.fc1.weight", 0, 0, 0x1.d6e4ebf81c898p-6},
    {"l0.fc1.weight", 3, 7, 0x1.716f0b5199fb1p-9},
    {"l0.fc1.weight", 1000, 4095, 0x1.1dab0811b10a4p-6},
    {"l0.fc1.weight", 65535, 12, -0x1.d1e4f6523c698p-8},
    {"x", 0, 0, 0x1.483e702a41f62p+0},
    {"x", 3, 7, 0x1.89993a104cfabp+0},
    {"x", 1000, 4095, -0x1.014d540569e56p-3},
    {"x", 65535, 12, 0x1.16fe8ffd48535p+0},
    {"l1.dy", 0, 0, 0x1.b560319de962ep-7},
    {"l1.dy", 3, 7, -0x1.9fa9014cdffffp-1},
    {"l1.dy", 1000, 4095, -0x1.e5e5789c2f57ep-1},
    {"l1.dy", 65535, 12, -0x1.52e5ce2c511f9p-2},
    {"tokens", 0, 0, 0x1.7084p+14},
    {"tokens", 3, 7, 0x1.628cp+14},
    {"tokens", 1000, 4095, 0x1.fcap+11},
    {"tokens", 65535, 12, 0x1.7c62p+15},
    {"targets", 0, 0, 0x1.3f3cp+15},
    {"targets", 3, 7, 0x1.7e52p+15},
    {"targets", 1000, 4095, 0x1.60ap+14},
    {"targets", 65535, 12, 0x1.63c8p+15},
    {"embed.weight", 0, 0, 0x1.a43e6ea52cb84p-8},
    {"embed.weight", 3, 7, 0x1.1cc93cc29f755p-7},
    {"embed.weight", 1000, 4095, 0x1.e8006419698bfp-6},
    {"embed.weight", 65535, 12, 0x1.d1e09d83361c5p-7},
};

static SimparShard
shard(const char *tensor, gsize off, guint64 row0, guint64 rows, guint64 col0, guint64 cols)
{
    SimparShard sh = {
        g_intern_string(tensor), SIMPAR_SHARD_INPUT, 0, {0, off}, row0, rows, col0, cols, 0};
    return sh;
}

static void
test_pinned(void)
{
    guint bad = 0;
    for (guint i = 0; i < G_N_ELEMENTS(pinned); i++) {
        SimparShard sh = shard(pinned[i].tensor, 0, pinned[i].row, 1, pinned[i].col, 1);
        double v = simpar_inputs_value(&sh, SEED, VOCAB, 0, 0), w = 0;
        const SimparShard *list[] = {&sh};
        simpar_inputs_fill(list, 1, SEED, VOCAB, SIMPAR_DTYPE_FP64, &w, 1);
        if (memcmp(&v, &pinned[i].value, sizeof v) != 0 || memcmp(&w, &v, sizeof v) != 0) {
            printf("\n    %s (%" G_GUINT64_FORMAT ", %" G_GUINT64_FORMAT "): %a, filled %a, was %a",
                   pinned[i].tensor, pinned[i].row, pinned[i].col, v, w, pinned[i].value);
            bad++;
        }
    }
    CU_ASSERT_EQUAL(bad, 0);
}

/* ---- the rounding oracle ------------------------------------------------------------------ */

static double
decode_bf16(guint16 h)
{
    guint32 u = (guint32) h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static double
decode_fp16(guint16 h)
{
    int e = (h >> 10) & 0x1f, m = h & 0x3ff;
    double v = e == 0 ? ldexp(m, -24) : e == 31 ? INFINITY : ldexp(1024 + m, e - 25);
    return h & 0x8000 ? -v : v;
}

/* The neighbours of bits h in a 16-bit format (sign-magnitude: h - 1 and h + 1 in magnitude). */
static gboolean
nearest16(double ref, guint16 h, double (*decode)(guint16))
{
    double v = decode(h), d = fabs(ref - v);
    guint16 mag = h & 0x7fff, sign = h & 0x8000;
    if (ref == 0) /* zero keeps its sign */
        return v == 0 && (signbit(ref) != 0) == (sign != 0);
    if ((ref < 0) != (sign != 0))
        return FALSE;
    for (int step = -1; step <= 1; step += 2) {
        if ((mag == 0 && step < 0) || mag + step > 0x7fff)
            continue;
        double n = decode((guint16) (sign | (mag + step))), dn = fabs(ref - n);
        if (dn < d || (dn == d && (h & 1)))
            return FALSE;
    }
    return TRUE;
}

static gboolean
nearest(SimparDtype type, double ref, const void *buf, gsize i)
{
    switch (type) {
    case SIMPAR_DTYPE_FP64:
        return memcmp((const double *) buf + i, &ref, sizeof ref) == 0;
    case SIMPAR_DTYPE_FP32: {
        float f = ((const float *) buf)[i], lo = nextafterf(f, -INFINITY),
              hi = nextafterf(f, INFINITY);
        double d = fabs(ref - f), dl = fabs(ref - lo), dh = fabs(ref - hi);
        guint32 u;
        memcpy(&u, &f, sizeof u);
        return d <= dl && d <= dh && ((d != dl && d != dh) || !(u & 1)) &&
               (signbit(f) != 0) == (signbit(ref) != 0);
    }
    case SIMPAR_DTYPE_BF16:
        return nearest16(ref, ((const guint16 *) buf)[i], decode_bf16);
    default:
        return nearest16(ref, ((const guint16 *) buf)[i], decode_fp16);
    }
}

/* ---- typed, parallel generation ----------------------------------------------------------- */

#define SENTINEL 0x5a

/* Two shards of one tensor at offsets of one buffer, the elements between them untouched. */
static guint
check_fill(const char *tensor, SimparDtype type, guint64 rows, guint64 cols)
{
    gsize size = simpar_dtype_size(type), gap = 13, n = 2 * rows * cols + 2 * gap;
    SimparShard a = shard(tensor, gap, 5, rows, 3, cols);
    SimparShard b = shard(tensor, 2 * gap + rows * cols, 5 + rows, rows, 1000, cols);
    const SimparShard *list[] = {&a, &b};
    g_autofree guint8 *buf = g_malloc(n * size);
    memset(buf, SENTINEL, n * size);
    simpar_inputs_fill(list, 2, SEED, VOCAB, type, buf, 0);
    guint bad = 0;
    for (guint s = 0; s < 2; s++)
        for (guint64 r = 0; r < rows; r++)
            for (guint64 c = 0; c < cols; c++) {
                double ref = simpar_inputs_value(list[s], SEED, VOCAB, r, c);
                bad += !nearest(type, ref, buf, list[s]->view.off + r * cols + c);
            }
    for (gsize i = 0; i < gap * size; i++) /* before a, between a and b */
        bad += buf[i] != SENTINEL || buf[(gap + rows * cols) * size + i] != SENTINEL;
    if (bad > 0)
        printf("\n    %s, %s, %" G_GUINT64_FORMAT " x %" G_GUINT64_FORMAT ": %u wrong", tensor,
               simpar_dtype_name(type), rows, cols, bad);
    return bad;
}

static void
test_typed(void)
{
    const char *tensors[] = {"l0.qkv.weight", "l3.x", "head.dy", "tokens"};
    const SimparDtype types[] = {SIMPAR_DTYPE_FP64, SIMPAR_DTYPE_FP32, SIMPAR_DTYPE_BF16,
                                 SIMPAR_DTYPE_FP16};
    guint bad = 0;
    for (guint t = 0; t < G_N_ELEMENTS(tensors); t++)
        for (guint d = 0; d < G_N_ELEMENTS(types); d++)
            bad += check_fill(tensors[t], types[d], 37, 1000); /* 1000: not a multiple of 256 */
    CU_ASSERT_EQUAL(bad, 0);
}

/* Many values of a weight, where the fast path's bound straddles a rounding boundary a few
 * times in 10^5 (those values come from the reference formula). */
static void
test_many(void)
{
    CU_ASSERT_EQUAL(check_fill("l7.fc2.weight", SIMPAR_DTYPE_BF16, 600, 2048), 0);
    CU_ASSERT_EQUAL(check_fill("l7.x", SIMPAR_DTYPE_FP32, 300, 2048), 0);
    CU_ASSERT_EQUAL(check_fill("l7.x", SIMPAR_DTYPE_FP16, 100, 2048), 0);
}

/* A bench's random values: a pure function of (seed, element) in [0.5, 1.5), ids whole. */
static void
test_random(void)
{
    double v[4096], w[4096], ids[4096];
    simpar_inputs_random(v, G_N_ELEMENTS(v), 11, 0);
    simpar_inputs_random(w, G_N_ELEMENTS(w), 11, 0);
    simpar_inputs_random(ids, G_N_ELEMENTS(ids), 11, 100);
    guint bad = 0, low = 0;
    for (guint i = 0; i < G_N_ELEMENTS(v); i++) {
        bad += !(v[i] >= 0.5 && v[i] < 1.5) || v[i] != w[i];
        bad += !(ids[i] >= 0 && ids[i] <= 99 && ids[i] == floor(ids[i]));
        low += v[i] < 1.0;
    }
    CU_ASSERT_EQUAL(bad, 0);
    CU_ASSERT_TRUE(low > 1900 && low < 2200); /* uniform: about half below 1 */
    CU_ASSERT_DOUBLE_EQUAL(v[0] - 0.5, ids[0] / 100, 0.01);
}

static CU_TestInfo inputs_tests[] = {
    {"The reference formula gives the values simpar-exec gave before, bit for bit", test_pinned},
    {"Typed parallel generation is the reference rounded to nearest-even in every type",
     test_typed},
    {"Over 2.5 million values the fast path never differs from the rounded reference", test_many},
    {"A bench's random values are a pure function of seed and element, ids whole", test_random},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"inputs", NULL, NULL, NULL, NULL, inputs_tests},
    CU_SUITE_INFO_NULL,
};

int
main(void)
{
    return simpar_test_main(suites);
}
