/* test-reference.c - the serial reference layer against hand values and finite differences.
 *
 * The reference (reference-layer.c) is the oracle for every distributed schedule, so it gets its
 * own oracles: four tiny layers whose outputs are worked out by hand (one token, two-token
 * attention with a softmax of 3/4 and 1/4, equal scores over two sequences of four tokens, two
 * heads with dropout), and a central finite difference of loss = sum(y .* dy) for every entry
 * of every input, causal or not, with and without dropout.
 *
 * Usage: test-reference [SEED]   (the seed of the random tensors; printed on every run)
 */
#include "reference-layer.h"
#include "schedule.h"
#include <CUnit/Basic.h>
#include <math.h>
#include <stdio.h>

#define REF_TEST_STEP  1e-5 /* finite-difference step */
#define REF_TEST_TOL   1e-6 /* largest accepted relative error */
#define REF_TEST_FLOOR 1e-2 /* gradients smaller than this are compared absolutely */

static guint64 ref_test_seed = 20240611;

/* ---------------------------------------------------------------- tensors */

static gsize
ref_test_size(const RefShape *sh, RefTensor t)
{
    guint64 rows, cols;
    ref_tensor_shape(sh, t, &rows, &cols);
    return (gsize) (rows * cols);
}

/* Allocates every tensor of sh, zeroed. */
static void
ref_test_alloc(const RefShape *sh, double *t[REF_N_TENSORS])
{
    for (guint i = 0; i < REF_N_TENSORS; i++)
        t[i] = g_new0(double, ref_test_size(sh, i));
}

static void
ref_test_free(double *t[REF_N_TENSORS])
{
    for (guint i = 0; i < REF_N_TENSORS; i++)
        g_clear_pointer(&t[i], g_free);
}

static void
ref_test_set(double *a, const double *values, gsize n)
{
    for (gsize i = 0; i < n; i++)
        a[i] = values[i];
}

static void
ref_test_check_close(const char *what, double got, double want)
{
    if (fabs(got - want) > 1e-12 * MAX(1.0, fabs(want)))
        printf("\n    %s: got %.17g, want %.17g", what, got, want);
    CU_ASSERT_DOUBLE_EQUAL(got, want, 1e-12 * MAX(1.0, fabs(want)));
}

/* ---------------------------------------------------------------- hand-computed forwards */

static double
ref_test_gelu(double z)
{
    return 0.5 * z * (1.0 + tanh(sqrt(2.0 / G_PI) * (z + 0.044715 * z * z * z)));
}

/* x = [1, 3] -> u = [-1, 1] -> v = [-0.5, 2] -> o = [2.25, -0.5] -> r1 = [3.25, 2.5]
 * -> LN2 (gamma 2, beta [1, -1]) = [3, -3] -> z1 = 3 -> y = r1 + [gelu(3), 0.5 - gelu(3)]. */
static void
test_one_token(void)
{
    RefShape sh = {.b = 1, .s = 1, .h = 2, .a = 1, .f = 1, .eps = 0.0};
    double *t[REF_N_TENSORS];
    ref_test_alloc(&sh, t);
    ref_test_set(t[REF_X], (const double[]){1, 3}, 2);
    ref_test_set(t[REF_LN1_G], (const double[]){1, 1}, 2);
    /* q and k columns (0..3) are arbitrary: with one token attention returns v */
    ref_test_set(t[REF_QKV_W],
                 (const double[]){0.7, -0.3, 0.2, 0.9, 1, 0, 0.4, 0.1, -0.6, 0.8, 0, 2}, 12);
    ref_test_set(t[REF_QKV_B], (const double[]){0.3, 0.1, -0.2, 0.5, 0.5, 0}, 6);
    ref_test_set(t[REF_PROJ_W], (const double[]){0, 1, 1, 0}, 4);
    ref_test_set(t[REF_PROJ_B], (const double[]){0.25, 0}, 2);
    ref_test_set(t[REF_LN2_G], (const double[]){2, 2}, 2);
    ref_test_set(t[REF_LN2_B], (const double[]){1, -1}, 2);
    ref_test_set(t[REF_FC1_W], (const double[]){1, 0}, 2);
    ref_test_set(t[REF_FC2_W], (const double[]){1, -1}, 2);
    ref_test_set(t[REF_FC2_B], (const double[]){0, 0.5}, 2);
    ref_layer_run(&sh, t);
    double g = ref_test_gelu(3.0);
    CU_ASSERT_DOUBLE_EQUAL(g, 2.996362607918227, 1e-14);
    ref_test_check_close("y[0]", t[REF_Y][0], 3.25 + g);
    ref_test_check_close("y[1]", t[REF_Y][1], 3.0 - g);
    ref_test_free(t);
}

/* The Llama flavour on one token: h = 2, a = 2 heads on kv = 1 key/value head (columns q0 | q1 |
 * k | v), SwiGLU, RMSNorm, no biases, eps 0. x = [1, 3] -> u = x / sqrt(5); v = u0 + u1 = 4/sqrt(5)
 * is the context of both heads -> o = ctx (proj the identity) -> r1 = x + o -> w = r1 / rms(r1) *
 * [1, 2]
 * -> gate = w0, up = w1 -> y = r1 + [m, -m], m = gate / (1 + e^-gate) * up. */
static void
test_one_token_llama(void)
{
    RefShape sh = {.b = 1,
                   .s = 1,
                   .h = 2,
                   .a = 2,
                   .f = 1,
                   .kv = 1,
                   .swiglu = TRUE,
                   .rms = TRUE,
                   .no_bias = TRUE};
    double *t[REF_N_TENSORS];
    ref_test_alloc(&sh, t);
    guint64 rows, cols;
    ref_tensor_shape(&sh, REF_QKV_W, &rows, &cols);
    CU_ASSERT(rows == 2 && cols == 4);
    ref_tensor_shape(&sh, REF_FC1_W, &rows, &cols);
    CU_ASSERT(rows == 2 && cols == 2);
    ref_tensor_shape(&sh, REF_LN1_B, &rows, &cols);
    CU_ASSERT(rows * cols == 0);
    ref_tensor_shape(&sh, REF_QKV_B, &rows, &cols);
    CU_ASSERT(rows * cols == 0);
    ref_test_set(t[REF_X], (const double[]){1, 3}, 2);
    ref_test_set(t[REF_LN1_G], (const double[]){1, 1}, 2);
    /* q0, q1, k arbitrary (one token), v = u0 + u1 */
    ref_test_set(t[REF_QKV_W], (const double[]){0.7, -0.3, 0.2, 1, 0.4, 0.1, -0.6, 1}, 8);
    ref_test_set(t[REF_PROJ_W], (const double[]){1, 0, 0, 1}, 4);
    ref_test_set(t[REF_LN2_G], (const double[]){1, 2}, 2);
    ref_test_set(t[REF_FC1_W], (const double[]){1, 0, 0, 1}, 4);
    ref_test_set(t[REF_FC2_W], (const double[]){1, -1}, 2);
    ref_layer_run(&sh, t);
    double v = 4 / sqrt(5.0), r1[2] = {1 + v, 3 + v};
    double rms = sqrt((r1[0] * r1[0] + r1[1] * r1[1]) / 2);
    double gate = r1[0] / rms, up = 2 * r1[1] / rms, m = gate / (1 + exp(-gate)) * up;
    ref_test_check_close("y[0]", t[REF_Y][0], r1[0] + m);
    ref_test_check_close("y[1]", t[REF_Y][1], r1[1] - m);
    ref_test_free(t);
}

/* u0 = [-1, 1], u1 = [1, -1]; q = alpha u, k = v = u with alpha = sqrt(2) ln(3) / 4, so the
 * scores are +-ln(3)/2 and every unmasked softmax row is {3/4 on itself, 1/4 on the other}.
 * The FFN weights are zero and proj is the identity: y = x + ctx. */
static void
ref_test_two_tokens(gboolean causal, const double want[4])
{
    RefShape sh = {.b = 1, .s = 2, .h = 2, .a = 1, .f = 3, .causal = causal, .eps = 0.0};
    double *t[REF_N_TENSORS];
    ref_test_alloc(&sh, t);
    double alpha = sqrt(2.0) * log(3.0) / 4.0;
    ref_test_set(t[REF_X], (const double[]){1, 3, 4, 0}, 4);
    ref_test_set(t[REF_LN1_G], (const double[]){1, 1}, 2);
    ref_test_set(t[REF_QKV_W], (const double[]){alpha, 0, 1, 0, 1, 0, 0, alpha, 0, 1, 0, 1}, 12);
    ref_test_set(t[REF_PROJ_W], (const double[]){1, 0, 0, 1}, 4);
    ref_test_set(t[REF_LN2_G], (const double[]){0.5, -2}, 2);
    ref_test_set(t[REF_FC1_B], (const double[]){0.1, 0.2, 0.3}, 3);
    ref_layer_run(&sh, t);
    for (guint i = 0; i < 4; i++)
        ref_test_check_close(causal ? "causal y" : "y", t[REF_Y][i], want[i]);
    ref_test_free(t);
}

static void
test_two_tokens(void)
{
    /* causal: ctx0 = v0 = [-1, 1]; ctx1 = v0/4 + 3 v1/4 = [0.5, -0.5] */
    ref_test_two_tokens(TRUE, (const double[]){0, 4, 4.5, -0.5});
    /* not causal: ctx0 = 3 v0/4 + v1/4 = [-0.5, 0.5]; ctx1 = [0.5, -0.5] */
    ref_test_two_tokens(FALSE, (const double[]){0.5, 3.5, 4.5, -0.5});
}

/* q = 0 makes every score equal, so attention averages the v of the visible tokens of its own
 * sequence. h = 2 and eps = 0 give u = [sign, -sign] with sign = sign(x0 - x1); v = u; proj is
 * the identity and the FFN weights are zero: y = x + mean(visible signs) * [1, -1]. */
static void
ref_test_uniform(gboolean causal, const double mean[8])
{
    RefShape sh = {.b = 2, .s = 4, .h = 2, .a = 1, .f = 2, .causal = causal, .eps = 0.0};
    double *t[REF_N_TENSORS];
    ref_test_alloc(&sh, t);
    /* signs: sequence 0 is + + - +, sequence 1 is - - - + */
    ref_test_set(t[REF_X], (const double[]){2, 0, 2, 0, 0, 2, 2, 0, 0, 2, 0, 2, 0, 2, 3, 1}, 16);
    ref_test_set(t[REF_LN1_G], (const double[]){1, 1}, 2);
    ref_test_set(t[REF_QKV_W], (const double[]){0, 0, 0.3, -0.7, 1, 0, 0, 0, 0.9, 0.2, 0, 1}, 12);
    ref_test_set(t[REF_PROJ_W], (const double[]){1, 0, 0, 1}, 4);
    ref_test_set(t[REF_LN2_G], (const double[]){1, 1}, 2);
    ref_layer_run(&sh, t);
    for (guint r = 0; r < 8; r++) {
        ref_test_check_close("y0", t[REF_Y][2 * r], t[REF_X][2 * r] + mean[r]);
        ref_test_check_close("y1", t[REF_Y][2 * r + 1], t[REF_X][2 * r + 1] - mean[r]);
    }
    ref_test_free(t);
}

static void
test_uniform_attention(void)
{
    ref_test_uniform(TRUE, (const double[]){1, 1, 1.0 / 3, 0.5, -1, -1, -1, -0.5});
    ref_test_uniform(FALSE, (const double[]){0.5, 0.5, 0.5, 0.5, -0.5, -0.5, -0.5, -0.5});
}

/* h = 4, a = 2, one token, qkv.weight = 0 and qkv.bias[c] = c: head 0's v is columns 4, 5 and
 * head 1's is 10, 11, so ctx = [4, 5, 10, 11] before attention dropout. With zero FFN weights,
 * y = x + drop(ctx + proj.bias) + drop(fc2.bias). */
static void
test_heads_and_dropout(void)
{
    RefShape sh = {.b = 1, .s = 1, .h = 4, .a = 2, .f = 2, .eps = 1e-5};
    sh.p_hidden = sh.p_attn = 0.5;
    sh.seed = ref_test_seed;
    double *t[REF_N_TENSORS];
    ref_test_alloc(&sh, t);
    g_autoptr(GRand) rng = g_rand_new_with_seed((guint32) ref_test_seed);
    ref_fill_random(t[REF_X], 4, rng);
    for (guint c = 0; c < 12; c++)
        t[REF_QKV_B][c] = c;
    ref_test_set(t[REF_PROJ_W], (const double[]){1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1},
                 16);
    ref_test_set(t[REF_PROJ_B], (const double[]){0.5, 0.5, 0.5, 0.5}, 4);
    ref_test_set(t[REF_FC2_B], (const double[]){1, 2, 3, 4}, 4);
    ref_layer_run(&sh, t);
    const double v[4] = {4, 5, 10, 11};
    for (guint c = 0; c < 4; c++) {
        /* attention index ((n*a + g)*s + i)*s + j = g; hidden index r*h + c = c */
        double ctx = simpar_dropout_keep(sh.seed, SIMPAR_DROPOUT_ATTN, c / 2, 0.5) ? 2 * v[c] : 0;
        double o = simpar_dropout_keep(sh.seed, SIMPAR_DROPOUT_PROJ, c, 0.5) ? 2 * (ctx + 0.5) : 0;
        double z = simpar_dropout_keep(sh.seed, SIMPAR_DROPOUT_FC2, c, 0.5) ? 2.0 * (c + 1) : 0;
        ref_test_check_close("y", t[REF_Y][c], t[REF_X][c] + o + z);
    }
    ref_test_free(t);
}

/* ---------------------------------------------------------------- finite differences */

static double
ref_test_loss(const RefShape *sh, double *const t[REF_N_TENSORS])
{
    ref_layer_run(sh, t);
    double loss = 0.0;
    for (gsize i = 0; i < ref_test_size(sh, REF_Y); i++)
        loss += t[REF_Y][i] * t[REF_DY][i];
    return loss;
}

/* Largest relative error between the gradient of input `in` in `exact` and central differences;
 * `probe` shares exact's inputs (perturbed in place, then restored) but has its own outputs. */
static double
ref_test_worst(const RefShape *sh, double *const exact[REF_N_TENSORS],
               double *const probe[REF_N_TENSORS], RefTensor in)
{
    RefTensor grad = in == REF_X ? REF_DX : REF_LN1_G_GRAD + (in - REF_LN1_G);
    double worst = 0.0;
    for (gsize i = 0; i < ref_test_size(sh, in); i++) {
        double keep = exact[in][i];
        exact[in][i] = keep + REF_TEST_STEP;
        double plus = ref_test_loss(sh, probe);
        exact[in][i] = keep - REF_TEST_STEP;
        double minus = ref_test_loss(sh, probe);
        exact[in][i] = keep;
        double numeric = (plus - minus) / (2 * REF_TEST_STEP), analytic = exact[grad][i];
        double scale = MAX(REF_TEST_FLOOR, MAX(fabs(numeric), fabs(analytic)));
        worst = MAX(worst, fabs(numeric - analytic) / scale);
    }
    return worst;
}

/* `llama`: 4 heads on 2 key/value heads, SwiGLU, RMSNorm; else 2 heads, GeLU, LayerNorm.
 * `mla`: multi-head latent attention (latents 5 and 3, heads of 3 + 2 and 4 columns). */
static void
ref_test_gradients(gboolean causal, double p, gboolean llama, gboolean mla)
{
    RefShape sh = {.b = 2, .s = 3, .h = 8, .a = 2, .f = 12, .causal = causal, .eps = 1e-5};
    if (llama)
        sh.a = 4, sh.kv = 2, sh.swiglu = sh.rms = sh.no_bias = TRUE;
    if (mla)
        sh.kv = 0, sh.q_lora = 5, sh.kv_lora = 3, sh.dn = 3, sh.dpe = 2, sh.dv = 4;
    sh.p_hidden = sh.p_attn = p;
    sh.seed = ref_test_seed;
    printf("\n    %s%scausal %d, p %.2f, seed %" G_GUINT64_FORMAT ":", llama ? "llama " : "",
           mla ? "mla " : "", causal, p, sh.seed);
    double *exact[REF_N_TENSORS], *probe[REF_N_TENSORS];
    ref_test_alloc(&sh, exact);
    ref_test_alloc(&sh, probe);
    g_autoptr(GRand) rng = g_rand_new_with_seed((guint32) (ref_test_seed ^ (ref_test_seed >> 32)));
    for (guint i = 0; i < REF_N_INPUTS; i++) {
        ref_fill_random(exact[i], ref_test_size(&sh, i), rng);
        g_free(probe[i]);
        probe[i] = exact[i]; /* borrowed: freed with exact */
    }
    ref_layer_run(&sh, exact);
    for (guint in = 0; in < REF_N_INPUTS; in++) {
        if (in == REF_DY || ref_test_size(&sh, in) == 0)
            continue;
        double worst = ref_test_worst(&sh, exact, probe, in);
        printf(" %s %.1e", ref_tensor_name(in), worst);
        CU_ASSERT(worst < REF_TEST_TOL);
    }
    for (guint i = 0; i < REF_N_INPUTS; i++)
        probe[i] = NULL;
    ref_test_free(probe);
    ref_test_free(exact);
}

static void
test_gradients_without_dropout(void)
{
    ref_test_gradients(FALSE, 0.0, FALSE, FALSE);
    ref_test_gradients(TRUE, 0.0, FALSE, FALSE);
}

static void
test_gradients_with_dropout(void)
{
    ref_test_gradients(FALSE, 0.1, FALSE, FALSE);
    ref_test_gradients(TRUE, 0.1, FALSE, FALSE);
}

static void
test_gradients_mla(void)
{
    ref_test_gradients(TRUE, 0.0, FALSE, TRUE);
    ref_test_gradients(FALSE, 0.1, TRUE, TRUE);
}

static void
test_gradients_llama(void)
{
    ref_test_gradients(TRUE, 0.0, TRUE, FALSE);
    ref_test_gradients(FALSE, 0.1, TRUE, FALSE);
}

/* ---------------------------------------------------------------- registry */

static void
test_names_and_shapes(void)
{
    RefShape sh = {.b = 2, .s = 3, .h = 8, .a = 2, .f = 12};
    CU_ASSERT_STRING_EQUAL(ref_tensor_name(REF_QKV_W_GRAD), "qkv.weight.grad");
    CU_ASSERT_STRING_EQUAL(ref_tensor_name(REF_DX), "dx");
    CU_ASSERT_STRING_EQUAL(ref_tensor_name(REF_FC2_B), "fc2.bias");
    guint64 rows, cols;
    ref_tensor_shape(&sh, REF_FC1_W_GRAD, &rows, &cols);
    CU_ASSERT(rows == 8 && cols == 12);
    ref_tensor_shape(&sh, REF_Y, &rows, &cols);
    CU_ASSERT(rows == 6 && cols == 8);
    ref_tensor_shape(&sh, REF_QKV_B, &rows, &cols);
    CU_ASSERT(rows == 1 && cols == 24);
}

static CU_TestInfo ref_tests[] = {
    {"Tensor names and shapes follow the documented table", test_names_and_shapes},
    {"A one-token layer with chosen weights gives the hand-computed output", test_one_token},
    {"Two-token attention gives the hand-computed softmax, causal and not", test_two_tokens},
    {"Equal scores average the visible tokens of the same sequence, causal and not",
     test_uniform_attention},
    {"Heads own contiguous q|k|v columns and dropout uses the documented indices",
     test_heads_and_dropout},
    {"Every gradient matches central differences without dropout", test_gradients_without_dropout},
    {"Every gradient matches central differences with dropout", test_gradients_with_dropout},
    {"A one-token Llama layer (multi-query, SwiGLU, RMSNorm) gives the hand-computed output",
     test_one_token_llama},
    {"Every gradient of the Llama flavour (GQA, SwiGLU, RMSNorm) matches central differences",
     test_gradients_llama},
    {"Every gradient of an MLA layer (latents, their norms, the shared key part) matches central "
     "differences",
     test_gradients_mla},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo ref_suites[] = {
    {"reference layer", NULL, NULL, NULL, NULL, ref_tests},
    CU_SUITE_INFO_NULL,
};

int
main(int argc, char **argv)
{
    if (argc > 1)
        ref_test_seed = g_ascii_strtoull(argv[1], NULL, 10);
    printf("test-reference: seed %" G_GUINT64_FORMAT "\n", ref_test_seed);
    if (CU_initialize_registry() != CUE_SUCCESS)
        return 99;
    if (CU_register_suites(ref_suites) != CUE_SUCCESS) {
        CU_cleanup_registry();
        return 99;
    }
    CU_basic_set_mode(CU_BRM_VERBOSE);
    CU_basic_run_tests();
    int failed = CU_get_number_of_failures() != 0;
    CU_cleanup_registry();
    return failed;
}
