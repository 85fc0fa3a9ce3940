/* test-memory.c - per-GPU memory of a whole training step (models/memory.h).
 *
 * Expected values are written here from the sources' formulas: Korthikanti et al.'s per-layer
 * activations in their 16-bit form (arXiv 2205.05198, Table 2), 16 bytes per parameter and the
 * ZeRO paper's 7.5B example (Rajbhandari et al., arXiv 1910.02054, Figure 1), the schedules'
 * in-flight micro-batches (Megatron-LM's schedules.py; GPipe), not read back from memory.c.
 */
#include "generators.h"
#include "memory.h"
#include "simpar-test.h"
#include <math.h>

/* ----- helpers ----- */

/* h = 64, a = 4, s = 32, b = 16, L = 16, f = 4h, V = 1000, fp16. */
static const SimparModel model16 = {"mem",
                                    64,
                                    4,
                                    32,
                                    16,
                                    16,
                                    256,
                                    1000,
                                    SIMPAR_DTYPE_FP16,
                                    0,
                                    SIMPAR_MLP_GELU,
                                    SIMPAR_NORM_LAYERNORM,
                                    FALSE,
                                    FALSE,
                                    0,
                                    {0},
                                    {0},
                                    0,
                                    0};

static gboolean
near(double got, double want)
{
    gboolean ok = fabs(got - want) <= 1e-12 * fabs(want) + 1e-18;
    if (!ok)
        printf("\n    got %.17g, want %.17g", got, want);
    return ok;
}

/* A 1-D plan of T GPUs under `schedule` over P stages, v chunks, m micro-batches, D = 1. */
static SimparTrain
train_1d(gint64 T, SimparPipeSchedule schedule, gint64 P, gint64 v, gint64 m)
{
    SimparTrain train = {0};
    simpar_plan_init(&train.tp);
    train.tp.tp = T;
    train.tp.q = (guint) T;
    train.pp = P, train.dp = 1, train.virtual_stages = v, train.schedule = schedule;
    train.micro_batches = m, train.global_batch = m * model16.micro_batch;
    return train;
}

static SimparMemory
step(const SimparModel *model, const SimparTrain *train, guint stage)
{
    SimparMemory mem = {0};
    simpar_memory_step(model, train, stage, 0, SIMPAR_ATTENTION_UNFUSED, &mem);
    return mem;
}

/* Korthikanti et al.'s table at 16 bits, bytes per layer and micro-batch. */
static double
korthikanti(double t, gboolean sp, SimparRecompute rc)
{
    double s = 32, b = 16, h = 64, a = 4, sbh = s * b * h;
    if (rc == SIMPAR_RECOMPUTE_FULL)
        return sp ? 2 * sbh / t : 2 * sbh;
    double scores = rc == SIMPAR_RECOMPUTE_SELECTIVE ? 0 : 5 * a * s / (h * t);
    return sp ? sbh * (34 / t + scores) : sbh * (10 + 24 / t + scores);
}

/* Parameters of one layer: 12h^2 + 13h at f = 4h. */
static double
layer_params(const SimparModel *m)
{
    double h = m->hidden;
    return 12 * h * h + 13 * h;
}

/* ----- activations per layer ----- */

static void
test_activations_table(void)
{
    const SimparRecompute modes[] = {SIMPAR_RECOMPUTE_NONE, SIMPAR_RECOMPUTE_SELECTIVE,
                                     SIMPAR_RECOMPUTE_FULL};
    for (gint64 T = 1; T <= 8; T *= 2)
        for (guint i = 0; i < G_N_ELEMENTS(modes); i++)
            for (gint sp = 0; sp <= 1; sp++) {
                SimparTrain train = train_1d(T, SIMPAR_PIPE_1F1B, 1, 1, 1);
                train.tp.sequence_parallel = sp, train.tp.recompute = modes[i];
                SimparMemory mem = step(&model16, &train, 0);
                double want = korthikanti((double) T, sp, modes[i]);
                CU_ASSERT(near(mem.activations_B, 16 * want));
                /* the layer recomputed in its backward holds what was not kept */
                double none = korthikanti((double) T, sp, SIMPAR_RECOMPUTE_NONE);
                CU_ASSERT(near(mem.recompute_B + want, none));
            }
}

/* The layer-stack estimate honours the plan's recompute mode the same way. */
static void
test_estimate_recompute(void)
{
    SimparModel m = model16;
    SimparPlan plan;
    simpar_plan_init(&plan);
    plan.tp = 4, plan.recompute = SIMPAR_RECOMPUTE_SELECTIVE;
    g_autoptr(SimparSchedule) layer = simpar_generate_layer(&m, &plan, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(layer);
    SimparMemory mem;
    simpar_memory_estimate(&m, &plan, layer, SIMPAR_ATTENTION_UNFUSED, &mem);
    CU_ASSERT(near(mem.activations_B, 16 * korthikanti(4, FALSE, SIMPAR_RECOMPUTE_SELECTIVE)));
    CU_ASSERT(near(mem.states_B, 16 * 16 * layer_params(&m) / 4));
    CU_ASSERT(
        near(mem.total_B, mem.states_B + mem.activations_B + mem.recompute_B + mem.transient_B));
}

/* Llama 3 8B (GQA 32 heads on 8, SwiGLU, RMSNorm, no biases, untied): 8.03e9 parameters as
 * published (arXiv 2407.21783); the layer holds q, o [h x h], k, v [h x 1024], three [h x f]
 * MLP matrices and one gain per norm. Its stored activations are Korthikanti's terms with the
 * wider fc1 output and the narrower k, v, and without dropout masks (Llama trains without
 * dropout): the unfused scores keep only the softmax output. */
static void
test_llama3_8b(void)
{
    SimparModel m;
    CU_ASSERT_TRUE_FATAL(simpar_model_preset("llama3-8b", &m, NULL));
    SimparTrain train = train_1d(1, SIMPAR_PIPE_1F1B, 1, 1, 1);
    train.global_batch = m.micro_batch;
    SimparMemory mem = step(&m, &train, 0);
    double h = 4096, kv = 1024, f = 14336, V = 128256, L = 32;
    double layer = h * (h + 2 * kv) + h * h + 3 * h * f + 2 * h; /* no biases */
    CU_ASSERT(near(mem.params, L * layer + 2 * h * V));
    printf("\n    llama3-8b: %.4g parameters (published 8.03e9)", mem.params);
    CU_ASSERT_DOUBLE_EQUAL(mem.params / 8.03e9, 1, 0.002);
    double s = 8192, sbh = s * h, ds = 2;
    double stored = sbh * 4 * ds + s * (h + 2 * kv + h + 2 * f + f) * ds + 32 * s * s * ds;
    CU_ASSERT(near(mem.activations_B, L * stored));
}

/* DeepSeek-V3 (arXiv 2412.19437): 671B parameters without its multi-token-prediction module.
 * The attention is multi-head latent attention, written out here from its config.json. */
static void
test_deepseek_v3_params(void)
{
    SimparModel m;
    CU_ASSERT_TRUE_FATAL(simpar_model_preset("deepseek-v3", &m, NULL));
    double h = 7168, a = 128, V = 129280, q = 1536, kv = 512, nope = 128, rope = 64, v = 128;
    double attn = h * q + q * a * (nope + rope) + h * (kv + rope) + kv * a * (nope + v) + a * v * h;
    double norms = 2 * h + q + kv; /* RMSNorms: ln1, ln2 and the two latents' */
    CU_ASSERT(near(simpar_model_attention_weights(&m), attn));
    CU_ASSERT(near(simpar_model_layer_small_params(&m), norms));
    double expert = 3 * h * 2048, dense = 3 * h * 18432;
    double moe = h * 256 + expert + 256 * expert; /* router, shared expert, routed experts */
    double want = 61 * (attn + norms) + 3 * dense + 58 * moe + 2 * V * h + h;
    double got = simpar_memory_model_params(&m);
    printf("\n    deepseek-v3: %.6g parameters (published 671e9 without MTP; %+.3g%%)", got,
           100 * (got / 671e9 - 1));
    CU_ASSERT(near(got, want));
    CU_ASSERT_DOUBLE_EQUAL(got / 671e9, 1, 0.001);
    /* without MLA the same model is 128 heads of h/a = 56 */
    m.mla = (SimparMlaConfig){0};
    CU_ASSERT(near(simpar_model_attention_weights(&m), 4 * h * h));
}

/* DeepSeek-V3 with its multi-token prediction module (arXiv 2412.19437 section 2.2 and the
 * Hugging Face model card: 671B main-model parameters + 14B of the module = 685B): the module's
 * own parameters by hand (an MoE layer with MLA, eh_proj 2h x h, three RMSNorms), and as the
 * checkpoint stores them, with its copies of the embedding and the output layer. */
static void
test_deepseek_v3_mtp_params(void)
{
    SimparModel m;
    CU_ASSERT_TRUE_FATAL(simpar_model_preset("deepseek-v3", &m, NULL));
    double h = 7168, a = 128, V = 129280, q = 1536, kv = 512, nope = 128, rope = 64, v = 128;
    double attn = h * q + q * a * (nope + rope) + h * (kv + rope) + kv * a * (nope + v) + a * v * h;
    double norms = 2 * h + q + kv, expert = 3 * h * 2048;
    double layer = attn + norms + h * 256 + expert + 256 * expert; /* layer 61: an MoE layer */
    m.mtp_layers = 0;
    double main0 = simpar_memory_model_params(&m);
    m.mtp_layers = 1;
    double main = simpar_memory_model_params(&m), mtp = simpar_memory_mtp_params(&m);
    CU_ASSERT(near(main, main0)); /* the main model's count leaves the module out */
    CU_ASSERT(near(mtp, layer + 2 * h * h + 3 * h));
    double stored = main + mtp + 2 * V * h;
    printf("\n    deepseek-v3: %.6g main-model parameters (published 671e9; %+.3g%%), %.6g of "
           "the module (%.6g stored with its embedding and head copies, published 14e9), %.6g in "
           "all (published 685e9; %+.3g%%)",
           main, 100 * (main / 671e9 - 1), mtp, stored - main, stored, 100 * (stored / 685e9 - 1));
    CU_ASSERT_DOUBLE_EQUAL(main / 671e9, 1, 0.001);
    CU_ASSERT_DOUBLE_EQUAL(stored / 685e9, 1, 0.001);
    CU_ASSERT_DOUBLE_EQUAL((stored - main) / 14e9, 1, 0.05); /* 13.46e9 */
    m.mtp_layers = 2;
    CU_ASSERT(near(simpar_memory_mtp_params(&m), 2 * mtp));
}

/* Multi-token prediction's memory on the last stage of P = 2 (stage 0 unchanged): its layer's
 * parameters over T, eh_proj's 2h^2 / T, three LayerNorms' 6h, the embedding's copy hV / T
 * (none when tied), at 16 bytes each (fp16 with Adam); its layer's activations and its own
 * 5 s b h values (fp16), one more logits buffer of s b V / T floats. */
static void
test_mtp_memory(void)
{
    SimparTrain train = train_1d(2, SIMPAR_PIPE_1F1B, 2, 1, 4);
    for (guint tied = 0; tied <= 1; tied++) {
        train.tied_embeddings = tied;
        SimparModel m = model16;
        SimparMemory a0 = step(&m, &train, 0), b0 = step(&m, &train, 1);
        m.mtp_layers = 1;
        SimparMemory a1 = step(&m, &train, 0), b1 = step(&m, &train, 1);
        double h = 64, f = 256, V = 1000, T = 2, s = 32, b = 16;
        double layer = 4 * h * h + 2 * h * f + 3 * h + h + f + h + 4 * h;
        double own = layer / T + 2 * h * h / T + 3 * 2 * h + (tied ? 0 : h * V / T);
        CU_ASSERT(near(a1.total_B, a0.total_B));
        CU_ASSERT(near(b1.params - b0.params, own));
        CU_ASSERT(near(b1.states_B - b0.states_B, 16 * own));
        double act = simpar_memory_layer_activations(&m, &train.tp, SIMPAR_ATTENTION_UNFUSED);
        CU_ASSERT(near(b1.activations_B - b0.activations_B, act + 5 * s * b * h * 2));
        CU_ASSERT(near(b1.head_B - b0.head_B, s * b * V / T * 4));
    }
    /* full recomputation: the module's checkpoint keeps its two inputs, 2 s b h values */
    train.tp.recompute = SIMPAR_RECOMPUTE_FULL;
    SimparModel m = model16;
    SimparMemory b0 = step(&m, &train, 1);
    m.mtp_layers = 1;
    SimparMemory b1 = step(&m, &train, 1);
    CU_ASSERT(near(b1.activations_B - b0.activations_B, 2 * 32 * 16 * 64 * 2));
}

/* Qwen3-235B-A22B (Qwen/Qwen3-235B-A22B config.json): 64 query heads and 4 key/value heads of
 * 128 columns where h/a = 64; 235B parameters, 22B of them active. The heads' width moves the
 * attention's weights and the activations it keeps by closed forms. */
static void
test_qwen3_head_dim(void)
{
    SimparModel m;
    CU_ASSERT_TRUE_FATAL(simpar_model_preset("qwen3-235b-a22b", &m, NULL));
    double h = 4096, a = 64, kv = 4, dh = 128, V = 151936, L = 94, fe = 1536, E = 128, k = 8;
    double attn = h * (a + 2 * kv) * dh + a * dh * h;
    CU_ASSERT(near(simpar_model_attention_weights(&m), attn));
    CU_ASSERT_EQUAL(simpar_model_qkv_cols(&m), (gint64) ((a + 2 * kv) * dh));
    double expert = 3 * h * fe, norms = 2 * h;
    double want = L * (attn + norms + h * E + E * expert) + 2 * V * h + h;
    double got = simpar_memory_model_params(&m);
    double active = L * (attn + norms + h * E + k * expert) + 2 * V * h + h;
    printf("\n    qwen3-235b-a22b: %.6g parameters (published 235e9; %+.3g%%), %.4g active "
           "(published 22e9)",
           got, 100 * (got / 235e9 - 1), active);
    CU_ASSERT(near(got, want));
    CU_ASSERT_DOUBLE_EQUAL(got / 235e9, 1, 0.002);
    CU_ASSERT_DOUBLE_EQUAL(active / 22e9, 1, 0.02);
    /* the kept activations: qkv (a + 2 kv) dh and proj's input a dh columns a token, 2 bytes */
    SimparTrain train = train_1d(1, SIMPAR_PIPE_1F1B, 1, 1, 1);
    train.global_batch = m.micro_batch;
    SimparModel narrow = m;
    narrow.head_dim = 0; /* h/a = 64 */
    double s = 4096, more = s * ((a + 2 * kv) + a) * (dh - h / a) * 2;
    CU_ASSERT(
        near(step(&m, &train, 0).activations_B - step(&narrow, &train, 0).activations_B, L * more));
}

/* The presets without a closed form of their own elsewhere, against their published sizes:
 * Qwen3-30B-A3B (Qwen/Qwen3-30B-A3B: 30.5B parameters, 3.3B active) and Kimi K2 (arXiv
 * 2507.20534: "1 trillion total parameters", 32 billion activated). Qwen3's per-head query and key
 * norms (2 dh each a layer) are not in simpar's count; Kimi K2's MLA and MoE are DeepSeek-V3's. */
static void
test_preset_sizes(void)
{
    SimparModel m;
    CU_ASSERT_TRUE_FATAL(simpar_model_preset("qwen3-30b-a3b", &m, NULL));
    double h = 2048, a = 32, kv = 4, dh = 128, V = 151936, L = 48, fe = 768, E = 128, k = 8;
    double attn = h * (a + 2 * kv) * dh + a * dh * h, expert = 3 * h * fe, norms = 2 * h;
    double want = L * (attn + norms + h * E + E * expert) + 2 * V * h + h;
    double active = L * (attn + norms + h * E + k * expert) + 2 * V * h + h;
    double got = simpar_memory_model_params(&m);
    printf("\n    qwen3-30b-a3b: %.6g parameters (published 30.5e9; %+.3g%%), %.4g active "
           "(published 3.3e9)",
           got, 100 * (got / 30.5e9 - 1), active);
    CU_ASSERT(near(got, want));
    CU_ASSERT_DOUBLE_EQUAL(got / 30.5e9, 1, 0.01);
    CU_ASSERT_DOUBLE_EQUAL(active / 3.3e9, 1, 0.05);
    CU_ASSERT_TRUE_FATAL(simpar_model_preset("kimi-k2", &m, NULL));
    /* MLA with 64 heads: q down and up, kv down (with the rotary key) and up, output */
    double H = 7168, heads = 64, qk = 128 + 64,
           mla = H * 1536 + 1536 * heads * qk + H * (512 + 64) + 512 * heads * (128 + 128) +
                 heads * 128 * H;
    double kexpert = 3 * H * 2048, kdense = 3 * H * 18432, kV = 163840;
    double kimi_want = 61 * (mla + 2 * H + 2 * 512 + 1536) + kdense +
                       60 * (H * 384 + 385 * kexpert) + 2 * kV * H + H;
    double kimi = simpar_memory_model_params(&m);
    double kimi_active = 61 * (mla + 2 * H + 2 * 512 + 1536) + kdense +
                         60 * (H * 384 + 9 * kexpert) + 2 * kV * H + H;
    printf("; kimi-k2: %.6g parameters (published 1e12; %+.3g%%), %.4g active (published 32e9)",
           kimi, 100 * (kimi / 1e12 - 1), kimi_active);
    CU_ASSERT_DOUBLE_EQUAL(kimi / kimi_want, 1, 1e-3);
    CU_ASSERT_DOUBLE_EQUAL(kimi / 1e12, 1, 0.03);
    CU_ASSERT_DOUBLE_EQUAL(kimi_active / 32e9, 1, 0.05);
    /* against DeepSeek-V3's count: 128 more experts in 60 MoE layers (2 more dense), 64 fewer
     * heads, 34,560 more vocabulary rows */
    SimparModel ds;
    CU_ASSERT_TRUE_FATAL(simpar_model_preset("deepseek-v3", &ds, NULL));
    ds.mtp_layers = 0;
    CU_ASSERT(simpar_memory_model_params(&m) > simpar_memory_model_params(&ds) + 0.3e12);
}

/* ----- model states ----- */

static void
test_states_16_bytes(void)
{
    const SimparDtype dtypes[] = {SIMPAR_DTYPE_FP16, SIMPAR_DTYPE_BF16, SIMPAR_DTYPE_FP32};
    for (guint i = 0; i < G_N_ELEMENTS(dtypes); i++) {
        SimparModel m = model16;
        m.dtype = dtypes[i];
        SimparTrain train = train_1d(4, SIMPAR_PIPE_1F1B, 1, 1, 1);
        SimparMemory mem = step(&m, &train, 0);
        double layers = 16 * layer_params(&m) / 4, heads = 2 * 64 * 1000.0 / 4;
        CU_ASSERT(near(mem.params, layers + heads));
        CU_ASSERT(near(mem.weights_B + mem.grads_B + mem.optimizer_B, 16 * layers));
        CU_ASSERT(near(mem.weights_B, simpar_dtype_size(m.dtype) * layers));
        CU_ASSERT(near(mem.embedding_B, 16 * heads));
        CU_ASSERT(near(mem.states_B, 16 * (layers + heads)));
    }
}

/* Psi = 26 (12h^2 + 13h) + hV = 7.5e9 exactly at h = 4800, V = 64562, tied, P = 1, T = 1. */
static const SimparModel zero_model = {"zero",
                                       4800,
                                       32,
                                       1024,
                                       1,
                                       26,
                                       19200,
                                       64562,
                                       SIMPAR_DTYPE_FP16,
                                       0,
                                       SIMPAR_MLP_GELU,
                                       SIMPAR_NORM_LAYERNORM,
                                       FALSE,
                                       FALSE,
                                       0,
                                       {0},
                                       {0},
                                       0,
                                       0};

static void
test_states_zero_example(void)
{
    SimparModel m = zero_model;
    const double want_GB[] = {120, 31.4, 16.6, 1.875};
    const double tol_GB[] = {1e-9, 0.05, 0.05, 1e-9};
    for (gint zero = 0; zero <= 3; zero++) {
        SimparTrain train = train_1d(1, SIMPAR_PIPE_1F1B, 1, 1, 1);
        train.dp = 64, train.zero = zero, train.tied_embeddings = TRUE;
        SimparMemory mem = step(&m, &train, 0);
        CU_ASSERT_DOUBLE_EQUAL(mem.params, 7.5e9, 0.5);
        CU_ASSERT_DOUBLE_EQUAL(mem.states_B / 1e9, want_GB[zero], tol_GB[zero]);
    }
    /* the exact forms: (4 + 12/64), (2 + 14/64) bytes per parameter */
    SimparTrain train = train_1d(1, SIMPAR_PIPE_1F1B, 1, 1, 1);
    train.dp = 64, train.tied_embeddings = TRUE;
    train.zero = 1;
    CU_ASSERT(near(step(&m, &train, 0).states_B, (4 + 12.0 / 64) * 7.5e9));
    train.zero = 2;
    SimparMemory z2 = step(&m, &train, 0);
    CU_ASSERT(near(z2.states_B, (2 + 14.0 / 64) * 7.5e9));
    double layers = 26 * layer_params(&m);
    CU_ASSERT(near(z2.weights_B, 2 * layers));
    CU_ASSERT(near(z2.grads_B, 2 * layers / 64));
    CU_ASSERT(near(z2.optimizer_B, 12 * layers / 64));
}

/* The same 7.5e9 parameters over 64 replicas with the FSDP options, bytes per parameter:
 * ZeRO-3 sharded over groups of 8: 16/8 = 2; --no-reshard keeps the whole weights too: 2 + 2;
 * ZeRO-1 over groups of 4 with fp32 gradients: 2 + 4 + 12/4 = 9. */
static void
test_states_fsdp_options(void)
{
    SimparModel m = zero_model;
    SimparTrain train = train_1d(1, SIMPAR_PIPE_1F1B, 1, 1, 1);
    train.dp = 64, train.tied_embeddings = TRUE;
    train.zero = 3, train.shard_group = 8;
    CU_ASSERT(near(step(&m, &train, 0).states_B, 2 * 7.5e9));
    train.no_reshard = TRUE;
    CU_ASSERT(near(step(&m, &train, 0).states_B, 4 * 7.5e9));
    train.no_reshard = FALSE;
    train.zero = 1, train.shard_group = 4;
    train.grad_dtype_set = TRUE, train.grad_dtype = SIMPAR_DTYPE_FP32;
    CU_ASSERT(near(step(&m, &train, 0).states_B, 9 * 7.5e9));
}

/* FP8 by hand, the same model trained in bf16 and in FP8 over 64 replicas with ZeRO-1: its
 * linears' weights, lin = 26 layers x (4800 (3 x 4800 + 4800) + 2 x 4800 x 19200) = 7188480000
 * elements (tensor parallelism 1), gain Transformer Engine's FP8 copy and transpose cache, 2
 * bytes each (delayed and current), 2 x 33/32 with mxfp8 (a scale byte per 32); with
 * --fp8-param-gather the weights are FP8 themselves (1 byte in place of 2) and only the
 * transposed copy is added, 1 byte: the states are those of bf16. On Blackwell (FP8 GEMMs of every
 * layout) a per-tensor recipe keeps the copy alone, 1 byte. ZeRO-3 over groups of 8 holds an
 * eighth of the weights, and of their copies. */
static void
test_states_fp8(void)
{
    SimparModel bf = zero_model, f8 = zero_model;
    bf.dtype = f8.dtype = SIMPAR_DTYPE_BF16;
    f8.fp8 = SIMPAR_FP8_DELAYED;
    double lin = 26 * (4800.0 * (3 * 4800 + 4800) + 2 * 4800.0 * 19200);
    CU_ASSERT(near(simpar_model_layer_weights(&f8) * 26, lin));
    SimparTrain train = train_1d(1, SIMPAR_PIPE_1F1B, 1, 1, 1);
    train.dp = 64, train.tied_embeddings = TRUE, train.zero = 1;
    SimparMemory b = step(&bf, &train, 0), d = step(&f8, &train, 0);
    CU_ASSERT(near(d.fp8_B, 2 * lin));
    CU_ASSERT(near(d.states_B - b.states_B, 2 * lin));
    CU_ASSERT(near(d.weights_B, b.weights_B));
    f8.fp8 = SIMPAR_FP8_MXFP8;
    CU_ASSERT(near(step(&f8, &train, 0).fp8_B, 2 * 33.0 / 32 * lin));
    f8.fp8 = SIMPAR_FP8_CURRENT;
    train.fp8_param_gather = TRUE;
    SimparMemory g = step(&f8, &train, 0);
    CU_ASSERT(near(g.fp8_B, lin));
    CU_ASSERT(near(b.weights_B - g.weights_B, lin));
    CU_ASSERT(near(g.states_B, b.states_B));
    train.fp8_param_gather = FALSE;
    /* on a GPU whose FP8 GEMMs take every layout (Blackwell) a per-tensor copy alone, 1 byte;
     * mxfp8 keeps its two */
    train.fp8_any_layout = TRUE;
    CU_ASSERT(near(step(&f8, &train, 0).fp8_B, lin));
    f8.fp8 = SIMPAR_FP8_MXFP8;
    CU_ASSERT(near(step(&f8, &train, 0).fp8_B, 2 * 33.0 / 32 * lin));
    f8.fp8 = SIMPAR_FP8_CURRENT;
    train.fp8_any_layout = FALSE;
    train.zero = 3, train.shard_group = 8;
    CU_ASSERT(near(step(&f8, &train, 0).fp8_B, 2 * lin / 8));
}

/* An MoE layer's stored activations by hand: the tiny model (h = 64, a = 4, s = 32, b = 8,
 * fp32, GeLU, LayerNorm, dropout) with 8 experts of width 64, top-2, no shared expert, over
 * T = 2 GPUs of 1-D with sequence parallelism, flash attention. Split over T: the second norm's
 * input r1 and the MoE block's input (that norm's output), beside the first norm's and qkv's
 * inputs, the "4 sbh" the dense layer keeps for its two norms and two input linears, 2 masks,
 * Q, K, V and proj's input (4h), the lse (a s b fp32); the block's: the router's logits (s b / T
 * x 8 fp32) and the busiest GPU's s b / T x 2 rows' input, output, fc1 and GeLU outputs. */
static void
test_activations_moe_layer_keeps_its_second_norm_input(void)
{
    SimparModel m;
    g_assert(simpar_model_preset("tiny", &m, NULL));
    m.moe = (SimparMoeConfig){.experts = 8, .top_k = 2, .moe_ffn = 64, .moe_every = 1};
    SimparPlan plan;
    simpar_plan_init(&plan);
    plan.gen = simpar_generator_of("1d"), plan.tp = 2, plan.sequence_parallel = TRUE, plan.ep = 2;
    double h = 64, a = 4, sb = 32 * 8, ds = 4, t = 2, tokens = sb / t;
    double layer = (sb * h * (4 * ds + 2) + sb * 4 * h * ds + a * sb * 4) / t;
    double block = tokens * 8 * 4 + tokens * 2 * (2 * h + 64 + 64) * ds;
    CU_ASSERT(
        near(simpar_memory_layer_activations(&m, &plan, SIMPAR_ATTENTION_FLASH), layer + block));
}

/* An MoE layer of the tiny model (h = 64, s = 32, b = 8, fp32) with 8 experts of width 64,
 * top-2: 2-D (q = 2), 2.5-D (q = 2, d = 2) and 3-D (q = 2) split the attention's activations
 * over T as 1-D with sequence parallelism does, and give the MoE block the same s b / T tokens;
 * they keep one more [s b / T x h]: the block's input all-to-all'd into its tokens' rows
 * (models/tp-moe.c), 32 x 8 / T x 64 x 4 bytes. */
static void
test_activations_moe_grid(void)
{
    SimparModel m;
    g_assert(simpar_model_preset("tiny", &m, NULL));
    m.moe = (SimparMoeConfig){.experts = 8, .top_k = 2, .moe_ffn = 64, .moe_every = 1};
    const char *modes[] = {"2d", "2.5d", "3d"};
    const gint64 tp[] = {4, 8, 8}, depth[] = {0, 2, 0};
    for (guint i = 0; i < G_N_ELEMENTS(modes); i++) {
        SimparPlan sp, grid;
        simpar_plan_init(&sp);
        sp.gen = simpar_generator_of("1d"), sp.tp = tp[i], sp.sequence_parallel = TRUE, sp.ep = 2;
        grid = sp;
        grid.gen = simpar_generator_of(modes[i]), grid.sequence_parallel = FALSE, grid.q = 2,
        grid.depth = depth[i];
        double a = simpar_memory_layer_activations(&m, &sp, SIMPAR_ATTENTION_UNFUSED);
        double b = simpar_memory_layer_activations(&m, &grid, SIMPAR_ATTENTION_UNFUSED);
        CU_ASSERT(near(b - a, 32.0 * 8 / (double) tp[i] * 64 * 4));
    }
}

/* FP8 attention by hand: a layer of the tiny model (h = 64, a = 4, s = 32, b = 8, f = 256, qkv
 * 3h = 192 columns) over T = 2 ranks of 1-D with sequence parallelism, flash attention, no
 * recomputation, against the same recipe without it. Transformer Engine's FP8 attention keeps Q,
 * K and V in FP8 for the backward, 1 byte in place of 2: s b 3h / T = 24576 bytes fewer; under
 * the delayed recipe O in FP8 too, in place of the bf16 O flash attention keeps otherwise (proj
 * keeps its own FP8 copy either way): s b h / T = 8192 bytes fewer; mxfp8 adds a scale byte per
 * 32 (768). The unfused kernel has no FP8 form (the plan's flag changes nothing there), nor has a
 * bf16 model. */
static void
test_activations_fp8_attention(void)
{
    SimparModel m;
    g_assert(simpar_model_preset("tiny", &m, NULL));
    m.dtype = SIMPAR_DTYPE_BF16;
    SimparPlan plan;
    simpar_plan_init(&plan);
    plan.gen = simpar_generator_of("1d"), plan.tp = 2, plan.sequence_parallel = TRUE, plan.q = 2;
    const SimparFp8Recipe recipes[] = {SIMPAR_FP8_DELAYED, SIMPAR_FP8_CURRENT, SIMPAR_FP8_MXFP8,
                                       SIMPAR_FP8_NONE};
    const double fewer[] = {24576 + 8192, 24576, 24576 - 768, 0};
    for (guint i = 0; i < G_N_ELEMENTS(recipes); i++) {
        m.fp8 = recipes[i];
        plan.fp8_attention = FALSE;
        double bf = simpar_memory_layer_activations(&m, &plan, SIMPAR_ATTENTION_FLASH);
        double un = simpar_memory_layer_activations(&m, &plan, SIMPAR_ATTENTION_UNFUSED);
        plan.fp8_attention = TRUE;
        CU_ASSERT(near(simpar_memory_layer_activations(&m, &plan, SIMPAR_ATTENTION_FLASH),
                       bf - fewer[i]));
        CU_ASSERT(near(simpar_memory_layer_activations(&m, &plan, SIMPAR_ATTENTION_UNFUSED), un));
    }
}

/* FP8 linears' inputs by hand (memory.h; Transformer Engine's module/linear.py and
 * module/layernorm_linear.py, Megatron-Core's TE layer spec): a Llama-like layer of the tiny
 * model in bf16 (h = 64, a = 4, 2 key/value heads of 16 columns: qkv 64 + 2 x 32 = 128 columns,
 * SwiGLU of f = 256: fc1 2f = 512 columns, RMSNorm, no biases, no dropout), s = 32, b = 8 over
 * T = 2 ranks of 1-D with sequence parallelism, flash attention: per token of the rank's
 * s b / T = 128,
 *   bf16     2h x 2 (the norms' inputs) + 2h x 2 (qkv's and fc1's inputs)
 *            + (qkv + h (O) + 2f (fc1's output) + f (fc2's input)) x 2
 *   FP8      the norms' inputs, Q, K, V, fc1's output stay bf16; qkv's, fc1's and fc2's inputs
 *            take x bytes (1; mxfp8 1 + 1/32); O: bf16 once (current, mxfp8: proj keeps the
 *            attention's bf16 output), bf16 and an FP8 copy (delayed: proj keeps its own)
 * plus the log-sum-exp, a x 4 bytes per token. */
static void
test_activations_fp8_linears_dense(void)
{
    SimparModel m;
    g_assert(simpar_model_preset("tiny", &m, NULL));
    m.dtype = SIMPAR_DTYPE_BF16, m.kv_heads = 2, m.mlp = SIMPAR_MLP_SWIGLU;
    m.norm = SIMPAR_NORM_RMSNORM, m.no_bias = TRUE, m.no_dropout = TRUE;
    SimparPlan plan;
    simpar_plan_init(&plan);
    plan.gen = simpar_generator_of("1d"), plan.tp = 2, plan.sequence_parallel = TRUE, plan.q = 2;
    double tok = 32 * 8 / 2, h = 64, qkv = 128, f = 256, lse = tok * 4 * 4, mx = 1 + 1.0 / 32;
    CU_ASSERT(near(simpar_memory_layer_activations(&m, &plan, SIMPAR_ATTENTION_FLASH),
                   tok * (4 * h * 2 + (qkv + h + 2 * f + f) * 2) + lse));
    m.fp8 = SIMPAR_FP8_CURRENT;
    CU_ASSERT(near(simpar_memory_layer_activations(&m, &plan, SIMPAR_ATTENTION_FLASH),
                   tok * (2 * h * 2 + 2 * h * 1 + (qkv + h + 2 * f) * 2 + f * 1) + lse));
    m.fp8 = SIMPAR_FP8_MXFP8;
    CU_ASSERT(near(simpar_memory_layer_activations(&m, &plan, SIMPAR_ATTENTION_FLASH),
                   tok * (2 * h * 2 + 2 * h * mx + (qkv + h + 2 * f) * 2 + f * mx) + lse));
    m.fp8 = SIMPAR_FP8_DELAYED;
    CU_ASSERT(near(simpar_memory_layer_activations(&m, &plan, SIMPAR_ATTENTION_FLASH),
                   tok * (2 * h * 2 + 2 * h * 1 + (qkv + h + 2 * f) * 2 + h * 1 + f * 1) + lse));
}

/* The same for a GeLU layer with dropout (the tiny model in bf16: h = 64, a = 4, f = 256, biases,
 * LayerNorm), s = 32, b = 8 over T = 2 ranks of 1-D without sequence parallelism, the unfused
 * attention core: every rank keeps the s b = 256 tokens' norm inputs, qkv's and fc1's inputs and
 * two dropout masks (1 byte), and 1/T of Q, K, V (3h), O, GeLU's input and fc2's input (f each)
 * and the scores (a s s b: softmax output 2 bytes, its mask 1, the masked output 2). Under FP8
 * qkv's, fc1's and fc2's inputs take x bytes; the unfused core keeps no O, so proj's input is
 * its bf16 O (current, mxfp8: save_original_input) or its FP8 copy alone (delayed). */
static void
test_activations_fp8_linears_gelu(void)
{
    SimparModel m;
    g_assert(simpar_model_preset("tiny", &m, NULL));
    m.dtype = SIMPAR_DTYPE_BF16;
    SimparPlan plan;
    simpar_plan_init(&plan);
    plan.gen = simpar_generator_of("1d"), plan.tp = 2, plan.q = 2;
    double sb = 32 * 8, t = 2, h = 64, f = 256, mx = 1 + 1.0 / 32;
    double scores = 4 * sb * 32 * (2 + 1 + 2) / t;
    CU_ASSERT(near(simpar_memory_layer_activations(&m, &plan, SIMPAR_ATTENTION_UNFUSED),
                   sb * h * (2 * 2 + 2 * 2 + 2) + sb * (3 * h + h + f + f) * 2 / t + scores));
    m.fp8 = SIMPAR_FP8_CURRENT;
    CU_ASSERT(near(simpar_memory_layer_activations(&m, &plan, SIMPAR_ATTENTION_UNFUSED),
                   sb * h * (2 * 2 + 2 * 1 + 2) + sb * ((3 * h + h + f) * 2 + f * 1) / t + scores));
    m.fp8 = SIMPAR_FP8_MXFP8;
    CU_ASSERT(
        near(simpar_memory_layer_activations(&m, &plan, SIMPAR_ATTENTION_UNFUSED),
             sb * h * (2 * 2 + 2 * mx + 2) + sb * ((3 * h + h + f) * 2 + f * mx) / t + scores));
    m.fp8 = SIMPAR_FP8_DELAYED;
    CU_ASSERT(near(simpar_memory_layer_activations(&m, &plan, SIMPAR_ATTENTION_UNFUSED),
                   sb * h * (2 * 2 + 2 * 1 + 2) + sb * ((3 * h + f) * 2 + h + f) / t + scores));
}

/* FP8 in an MoE layer by hand: the tiny model in bf16 (h = 64, a = 4, s = 32, b = 8, GeLU,
 * LayerNorm, dropout) with 8 experts of width 64, top-2, shared experts of width 32, over T = 2
 * ranks of 1-D with sequence parallelism, EP 2, flash attention: per token of the rank's
 * s b / T = 128, the attention part keeps the norms' inputs and the block's input (the router's,
 * bf16), qkv's input in x bytes (1; mxfp8 1 + 1/32), two masks, Q, K, V and O once in bf16
 * (current, mxfp8), the lse; the block the router's logits (8 fp32), and for its 2 routed rows
 * the experts' input (Transformer Engine's GroupedLinear: x bytes) and output (bf16), fc1's
 * output (bf16) and fc2's input (x bytes), for the shared experts fc1's output (bf16) and fc2's
 * input (x bytes); delayed adds proj's FP8 O and the shared fc1's FP8 copy of the block's input
 * (h each). */
static void
test_activations_fp8_moe_layer(void)
{
    SimparModel m;
    g_assert(simpar_model_preset("tiny", &m, NULL));
    m.dtype = SIMPAR_DTYPE_BF16;
    m.moe = (SimparMoeConfig){
        .experts = 8, .top_k = 2, .moe_ffn = 64, .shared_ffn = 32, .moe_every = 1};
    SimparPlan plan;
    simpar_plan_init(&plan);
    plan.gen = simpar_generator_of("1d"), plan.tp = 2, plan.sequence_parallel = TRUE, plan.ep = 2;
    double tok = 32 * 8 / 2, h = 64, a = 4, fe = 64, fs = 32;
    const SimparFp8Recipe recipes[] = {SIMPAR_FP8_CURRENT, SIMPAR_FP8_MXFP8, SIMPAR_FP8_DELAYED};
    const double x[] = {1, 1 + 1.0 / 32, 1};
    for (guint i = 0; i < G_N_ELEMENTS(recipes); i++) {
        m.fp8 = recipes[i];
        double delayed = recipes[i] == SIMPAR_FP8_DELAYED ? 1 : 0;
        double layer = tok * (h * (3 * 2 + x[i] + 2) + (3 * h + h) * 2 + delayed * h + a * 4);
        double block = tok * 8 * 4 + tok * 2 * (h * (x[i] + 2) + fe * 2 + fe * x[i]) +
                       tok * (fs * 2 + fs * x[i] + delayed * h);
        CU_ASSERT(near(simpar_memory_layer_activations(&m, &plan, SIMPAR_ATTENTION_FLASH),
                       layer + block));
    }
}

/* Context parallelism keeps s / C tokens of every sequence, and their scores against all s
 * keys: every term of the stored activations (Korthikanti's sbh terms, the a s^2 b scores) and
 * the logits fall by C; the states stay. */
static void
test_activations_cp(void)
{
    const SimparRecompute modes[] = {SIMPAR_RECOMPUTE_NONE, SIMPAR_RECOMPUTE_SELECTIVE,
                                     SIMPAR_RECOMPUTE_FULL};
    for (guint i = 0; i < G_N_ELEMENTS(modes); i++)
        for (gint64 C = 2; C <= 8; C *= 2) {
            SimparTrain one = train_1d(4, SIMPAR_PIPE_1F1B, 1, 1, 1), cp = one;
            one.tp.recompute = cp.tp.recompute = modes[i];
            cp.tp.cp = C;
            SimparMemory a = step(&model16, &one, 0), b = step(&model16, &cp, 0);
            CU_ASSERT(near(b.activations_B * C, a.activations_B));
            CU_ASSERT(near(b.head_B * C, a.head_B));
            CU_ASSERT(near(b.states_B, a.states_B));
        }
}

/* ----- micro-batches in flight ----- */

static void
test_1f1b_in_flight(void)
{
    const gint64 ms[] = {1, 2, 3, 8};
    double layer = korthikanti(2, FALSE, SIMPAR_RECOMPUTE_NONE);
    for (guint i = 0; i < G_N_ELEMENTS(ms); i++) {
        SimparTrain train = train_1d(2, SIMPAR_PIPE_1F1B, 4, 1, ms[i]);
        for (guint p = 0; p < 4; p++) {
            SimparMemory mem = step(&model16, &train, p);
            double held = MIN(4.0 - p, (double) ms[i]); /* stage 0 holds P, stage P-1 one */
            CU_ASSERT_DOUBLE_EQUAL(mem.in_flight, held, 0);
            CU_ASSERT(near(mem.activations_B, 4 * layer * held)); /* L/P = 4 layers */
        }
    }
}

static void
test_gpipe_in_flight(void)
{
    double layer = korthikanti(2, FALSE, SIMPAR_RECOMPUTE_NONE);
    SimparTrain train = train_1d(2, SIMPAR_PIPE_GPIPE, 4, 1, 8);
    for (guint p = 0; p < 4; p++) {
        SimparMemory mem = step(&model16, &train, p);
        CU_ASSERT_DOUBLE_EQUAL(mem.in_flight, 8, 0);
        CU_ASSERT(near(mem.activations_B, 4 * layer * 8));
    }
    /* the last stage keeps every micro-batch's fp32 logits until the backward phase */
    CU_ASSERT(near(step(&model16, &train, 3).head_B, 8 * 16 * 32 * 1000.0 / 2 * 4));
}

static void
test_interleaved_in_flight(void)
{
    double layer = korthikanti(2, FALSE, SIMPAR_RECOMPUTE_NONE), P = 4, v = 2;
    SimparTrain train = train_1d(2, SIMPAR_PIPE_INTERLEAVED, 4, 2, 8);
    /* Megatron's rule: stage 0 holds P (1 + (P - 1)/(P v)) micro-batches of L/P layers */
    SimparMemory first = step(&model16, &train, 0);
    CU_ASSERT(near(first.in_flight, P * (1 + (P - 1) / (P * v))));
    CU_ASSERT(near(first.activations_B, 16 / P * layer * P * (1 + (P - 1) / (P * v))));
    /* stage p: 2 (P - p - 1) + (v - 1) P + 1 chunks of L/(P v) = 2 layers */
    const double chunks[] = {11, 9, 7, 5};
    for (guint p = 0; p < 4; p++)
        CU_ASSERT(near(step(&model16, &train, p).activations_B, 2 * layer * chunks[p]));
    /* fewer micro-batches than the warm-up: all m v chunks */
    train.micro_batches = 4;
    CU_ASSERT(near(step(&model16, &train, 0).activations_B, 2 * layer * 8));
    CU_ASSERT(near(step(&model16, &train, 3).activations_B, 2 * layer * 5));
}

/* ----- embedding, output layer, heads ----- */

static void
test_embedding_ends(void)
{
    double hv = 64 * 1000.0 / 2, logits = 16 * 32 * 1000.0 / 2 * 4;
    for (gint tied = 0; tied <= 1; tied++) {
        SimparTrain train = train_1d(2, SIMPAR_PIPE_1F1B, 4, 1, 8);
        train.tied_embeddings = tied; /* P > 1: each end keeps its copy */
        for (guint p = 0; p < 4; p++) {
            SimparMemory mem = step(&model16, &train, p);
            CU_ASSERT(near(mem.embedding_B, p == 0 || p == 3 ? 16 * hv : 0));
            CU_ASSERT(near(mem.head_B, p == 3 ? logits : 0));
            CU_ASSERT(
                near(mem.params, 4 * layer_params(&model16) / 2 + (p == 0 || p == 3 ? hv : 0)));
        }
    }
}

static void
test_embedding_single_stage(void)
{
    double hv = 64 * 1000.0 / 2;
    SimparTrain train = train_1d(2, SIMPAR_PIPE_1F1B, 1, 1, 4);
    CU_ASSERT(near(step(&model16, &train, 0).embedding_B, 2 * 16 * hv));
    train.tied_embeddings = TRUE;
    SimparMemory mem = step(&model16, &train, 0);
    CU_ASSERT(near(mem.embedding_B, 16 * hv));
    CU_ASSERT(near(mem.head_B, 16 * 32 * 1000.0 / 2 * 4)); /* one micro-batch's fp32 logits */
    CU_ASSERT(near(mem.total_B, mem.weights_B + mem.grads_B + mem.optimizer_B + mem.embedding_B +
                                    mem.activations_B + mem.head_B + mem.recompute_B +
                                    mem.transient_B));
}

/* K = 4 chunks, aux heads W = 300: chunks 0..2 carry one, the last chunk's head is the model's
 * output layer (V). */
static void
test_local_parallelism(void)
{
    double layer = korthikanti(2, FALSE, SIMPAR_RECOMPUTE_NONE), hv = 64 * 1000.0 / 2;
    double hw = 64 * 300.0 / 2, sb = 16 * 32;
    SimparTrain train = train_1d(2, SIMPAR_PIPE_LOCAL, 4, 1, 8);
    train.aux_head_width = 300;
    const double heads[] = {hv + hw, hw, hw, hv};
    const double logits[] = {300, 300, 300, 1000};
    for (guint p = 0; p < 4; p++) {
        SimparMemory mem;
        simpar_memory_step(&model16, &train, p, 1e6, SIMPAR_ATTENTION_UNFUSED, &mem);
        CU_ASSERT_DOUBLE_EQUAL(mem.in_flight, 1, 0);
        CU_ASSERT(near(mem.activations_B, 4 * layer));
        CU_ASSERT(near(mem.embedding_B, 16 * heads[p]));
        CU_ASSERT(near(mem.head_B, sb * logits[p] / 2 * 4));
        CU_ASSERT_EQUAL(mem.transient_B, 1e6);
    }
}

/* The memory of one stage's parts, equal part by part within 1e-12. */
static void
stage_equal(const SimparMemory *got, const SimparMemory *want)
{
    CU_ASSERT(near(got->params, want->params));
    CU_ASSERT(near(got->weights_B, want->weights_B));
    CU_ASSERT(near(got->grads_B, want->grads_B));
    CU_ASSERT(near(got->optimizer_B, want->optimizer_B));
    CU_ASSERT(near(got->activations_B, want->activations_B));
    CU_ASSERT(near(got->recompute_B, want->recompute_B));
    CU_ASSERT(near(got->total_B, want->total_B));
}

/* An MoE model's dense layers (--dense-layers, --moe-every) hold a dense layer's parameters,
 * states and activations: model16 with 8 experts of width 64, top-2, over two 1F1B stages of 8
 * layers, ZeRO-1 over D = 2. With its first 8 layers dense, stage 0 is the dense model's stage 0
 * and stage 1 the all-MoE model's stage 1, part by part (recomputing selectively and fully: a
 * full recomputation re-creates the MLP's activations, which the two kinds of layer differ in);
 * with an MoE layer every 2 layers, each stage is the mean of the two. Both for the step's own
 * split (train.layers) and for even chunks. */
static void
test_moe_dense_layers(void)
{
    SimparModel moe = model16, dense_first, alternate;
    moe.moe = (SimparMoeConfig){.experts = 8, .top_k = 2, .moe_ffn = 64, .moe_every = 1};
    dense_first = moe, alternate = moe;
    dense_first.moe.dense_layers = 8;
    alternate.moe.moe_every = 2;
    for (guint i = 0; i < 4; i++) {
        SimparTrain train = train_1d(2, SIMPAR_PIPE_1F1B, 2, 1, 4);
        train.dp = 2, train.zero = 1, train.tp.ep = 2;
        train.tp.recompute = i < 2 ? SIMPAR_RECOMPUTE_SELECTIVE : SIMPAR_RECOMPUTE_FULL;
        train.global_batch = 8 * model16.micro_batch;
        if (i % 2) /* the step's own split, else even chunks */
            train.layers = 16;
        for (guint p = 0; p < 2; p++) {
            SimparMemory got = step(&dense_first, &train, p);
            SimparMemory want = step(p == 0 ? &model16 : &moe, &train, p);
            stage_equal(&got, &want);
            SimparMemory mixed = step(&alternate, &train, p), a = step(&model16, &train, p),
                         b = step(&moe, &train, p);
            CU_ASSERT(near(mixed.params, (a.params + b.params) / 2));
            CU_ASSERT(near(mixed.activations_B, (a.activations_B + b.activations_B) / 2));
            CU_ASSERT(near(mixed.recompute_B, MAX(a.recompute_B, b.recompute_B)));
        }
    }
}

/* Expert tensor parallelism: model16 with 8 experts of width 64 (GeLU), top-2, 1-D T = 2 with
 * sequence parallelism, two stages of 8 layers, D = 2, EP 2: ETP 2 holds half of each of the
 * GPU's E/EP = 4 experts, 8 x 4 x 2 h f_e / 2 = 131072 parameters fewer, their weights,
 * gradients and states at 16 bytes each (ZeRO 0); each MoE layer keeps the ETP gathered rows'
 * input and output, s b / T x k x 2h x 2 bytes = 131072 more, and fc1's and the activation's
 * outputs as before (1/ETP of the columns of ETP times the rows). */
static void
test_expert_tensor_parallelism_splits_the_experts(void)
{
    SimparModel moe = model16;
    moe.moe = (SimparMoeConfig){.experts = 8, .top_k = 2, .moe_ffn = 64, .moe_every = 1};
    SimparMemory m[2];
    double act[2];
    for (guint i = 0; i < 2; i++) {
        SimparTrain train = train_1d(2, SIMPAR_PIPE_1F1B, 2, 1, 4);
        train.dp = 2, train.tp.sequence_parallel = TRUE, train.global_batch = 8 * moe.micro_batch;
        train.ep = train.tp.ep = 2, train.etp = train.tp.etp = 1 + i;
        m[i] = step(&moe, &train, 0);
        act[i] = simpar_memory_layer_activations(&moe, &train.tp, SIMPAR_ATTENTION_UNFUSED);
    }
    double fewer = 8 * 4 * 2 * 64 * 64 / 2.0;
    CU_ASSERT(near(m[0].params - m[1].params, fewer));
    CU_ASSERT(near(m[0].weights_B - m[1].weights_B, 2 * fewer));
    CU_ASSERT(near(m[0].grads_B - m[1].grads_B, 2 * fewer));
    CU_ASSERT(near(m[0].optimizer_B - m[1].optimizer_B, 12 * fewer));
    CU_ASSERT(near(act[1] - act[0], 32.0 * 16 / 2 * 2 * 2 * 64 * 2));
}

/* Megatron-Core's all-gather dispatcher (plan.moe_gather): model16 with 8 experts (GeLU), 1-D
 * T = 4 with sequence parallelism, EP 2 x ETP 2: the G = 4 GPUs' gathered tokens, their
 * un-permuted rows and the gathered probs, G x s b / T x (2h + E) x 2 bytes = 4 x 128 x 136 x 2,
 * join the layer's transient buffers, and nothing else changes; a one-GPU group gathers nothing. */
static void
test_the_all_gather_dispatcher_adds_its_gathered_tokens_to_the_working_set(void)
{
    SimparModel moe = model16;
    moe.moe = (SimparMoeConfig){.experts = 8, .top_k = 2, .moe_ffn = 64, .moe_every = 1};

    const struct {
        gint64 ep, etp;
        double more;
    } cases[] = {{2, 2, 4.0 * 128 * (2 * 64 + 8) * 2}, {1, 1, 0}};

    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        SimparPlan plan;
        simpar_plan_init(&plan);
        plan.tp = 4, plan.sequence_parallel = TRUE, plan.ep = cases[i].ep, plan.etp = cases[i].etp;
        g_autoptr(SimparSchedule) layer = simpar_generate_layer(&moe, &plan, NULL);
        CU_ASSERT_PTR_NOT_NULL_FATAL(layer);
        SimparMemory a2a, ag;
        simpar_memory_estimate(&moe, &plan, layer, SIMPAR_ATTENTION_UNFUSED, &a2a);
        plan.moe_gather = TRUE;
        simpar_memory_estimate(&moe, &plan, layer, SIMPAR_ATTENTION_UNFUSED, &ag);
        CU_ASSERT(near(ag.transient_B - a2a.transient_B, cases[i].more));
        CU_ASSERT(near(ag.total_B - a2a.total_B, cases[i].more));
        CU_ASSERT(ag.activations_B == a2a.activations_B && ag.states_B == a2a.states_B);
    }
}

static void
test_peak_stage(void)
{
    SimparTrain train = train_1d(2, SIMPAR_PIPE_1F1B, 4, 1, 8);
    SimparMemory peak;
    guint stage = 99;
    simpar_memory_step_peak(&model16, &train, 0, SIMPAR_ATTENTION_UNFUSED, &peak, &stage);
    double best = 0;
    guint best_p = 0;
    for (guint p = 0; p < 4; p++) {
        double total = step(&model16, &train, p).total_B;
        if (total > best)
            best = total, best_p = p;
    }
    CU_ASSERT_EQUAL(stage, best_p);
    CU_ASSERT_EQUAL(stage, 0); /* four micro-batches and the embedding */
    CU_ASSERT_EQUAL(peak.total_B, best);
}

/* Llama 3 405B at 8K sequences as its paper trained it on 80 GB H100s (Dubey et al., arXiv
 * 2407.21783, section 3.3.2 and Table 4): TP 8 with sequence parallelism, PP 16 interleaved
 * (v = 2) with the 126 layers spread 7/8 per stage, DP 128, 16 micro-batches of one sequence,
 * FSDP without resharding (the gathered weights kept beside their shard), flash attention, no
 * activation recomputation, no dropout. Stage 1 (8 layers, no embedding) holds all 16
 * micro-batches of its 2 chunks: Megatron-Core runs every forward before the first backward when
 * its warm-up, 2 (P - 2) + P, exceeds m v = 32. The closed form per layer and micro-batch (bf16,
 * t = 8): 8sbh (two norm inputs, the qkv and fc1 inputs; no masks) + 2sb(qkv + h) (Q, K, V, the
 * projection input) + 2sb(2f + f) (SwiGLU's input and output) + 4asb (flash attention's fp32
 * log-sum-exp), over t. It fits in 80 GiB with the layer's working set. */
static void
test_llama3_405b_8k(void)
{
    SimparModel m;
    CU_ASSERT_TRUE_FATAL(simpar_model_preset("llama3-405b", &m, NULL));
    SimparTrain train = train_1d(8, SIMPAR_PIPE_INTERLEAVED, 16, 2, 16);
    train.tp.sequence_parallel = TRUE, train.dp = 128, train.zero = 3, train.no_reshard = TRUE;
    train.layers = m.layers, train.global_batch = 2048;
    g_autoptr(SimparSchedule) layer = simpar_generate_layer(&m, &train.tp, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(layer);
    SimparMemory one, mem;
    simpar_memory_estimate(&m, &train.tp, layer, SIMPAR_ATTENTION_FLASH, &one);
    guint stage = 99;
    simpar_memory_step_peak(&m, &train, one.transient_B, SIMPAR_ATTENTION_FLASH, &mem, &stage);
    double s = 8192, b = 1, h = 16384, a = 128, f = 53248, qkv = h + 2 * 8 * 128, t = 8;
    double per_layer =
        (8 * s * b * h + 2 * s * b * (qkv + h) + 2 * s * b * 3 * f + 4 * a * s * b) / t;
    CU_ASSERT_EQUAL(stage, 1);
    CU_ASSERT(near(mem.in_flight, 16));
    CU_ASSERT(near(mem.activations_B, 8 * 16 * per_layer));
    double params = 8 * (simpar_model_layer_weights(&m) + simpar_model_layer_small_params(&m)) / t;
    CU_ASSERT(near(mem.params, params));
    CU_ASSERT(near(mem.states_B, params * (2 + 2.0 / 128 + 2 + 12.0 / 128)));
    CU_ASSERT(mem.transient_B < 1.0 * (1 << 30)); /* a few s b h-sized buffers, not the layer */
    CU_ASSERT(mem.total_B < 80.0 * (1 << 30));
    CU_ASSERT(mem.total_B > 70.0 * (1 << 30));
}

/* Llama 3.1 405B at 8K in FP8 (current scaling) on GB200s as NeMo Megatron-Bridge ran it (TP 4
 * with sequence parallelism, PP 16 interleaved v = 4, DP 4, 384 micro-batches of one sequence,
 * ZeRO-1, flash attention, no recomputation): stage 1 (8 layers in 4 chunks of 2) holds
 * min(m v, 2 (P - 2) + (v - 1) P + 1) = 77 chunk-micro-batches. The closed form per layer and
 * micro-batch (t = 4): the two norm inputs in bf16, the qkv and fc1 inputs in FP8, 6sbh;
 * 2sb(qkv + h) (Q, K, V, and O once: proj keeps flash attention's bf16 O); 2sb 2f (SwiGLU's
 * input) + sb f (fc2's FP8 input); 4asb, over t: 127.68 GiB (152.95 with every input in bf16). */
static void
test_llama3_405b_fp8_gb200(void)
{
    SimparModel m;
    CU_ASSERT_TRUE_FATAL(simpar_model_preset("llama3-405b", &m, NULL));
    m.dtype = SIMPAR_DTYPE_BF16, m.fp8 = SIMPAR_FP8_CURRENT;
    SimparTrain train = train_1d(4, SIMPAR_PIPE_INTERLEAVED, 16, 4, 384);
    train.tp.sequence_parallel = TRUE, train.dp = 4, train.zero = 1;
    train.layers = m.layers, train.global_batch = 1536;
    SimparMemory mem = {0};
    simpar_memory_step(&m, &train, 1, 0, SIMPAR_ATTENTION_FLASH, &mem);
    double s = 8192, b = 1, h = 16384, a = 128, f = 53248, qkv = h + 2 * 8 * 128, t = 4;
    double per_layer =
        (6 * s * b * h + 2 * s * b * (qkv + h) + 2 * s * b * 2 * f + s * b * f + 4 * a * s * b) / t;
    CU_ASSERT(near(mem.in_flight * 4, 77));
    CU_ASSERT(near(mem.activations_B, 77 * 2 * per_layer));
    CU_ASSERT(near(mem.activations_B / (1 << 30), 127.681640625));
}

/* An MoE model's dense layers (--dense-layers) in a step's memory: a stage whose layers are all
 * dense holds what the model without experts' same stage holds, and a stage whose layers are all
 * MoE ones what the model with every layer an MoE one's holds (parameters, states, activations,
 * recomputation, total); a stage of both kinds lies between. Even stages (the split a train
 * that is not validated gets) and uneven ones (--first-stage-layers). Fails with every layer of
 * a stage taken as an MoE one (stage 0 then holds experts). */
static void
test_dense_layers_of_an_moe_model(void)
{
    const struct {
        gint64 layers, first, dense;
        gint kind[2]; /* per stage: 0 every layer dense, 1 every layer MoE, 2 both */
    } cases[] = {
        {4, 0, 2, {0, 1}},
        {5, 1, 1, {0, 1}},
        {6, 2, 3, {0, 2}},
    };

    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        SimparModel m, all, dense;
        CU_ASSERT_TRUE_FATAL(simpar_model_preset("tiny", &m, NULL));
        m.layers = cases[i].layers;
        m.moe = (SimparMoeConfig){
            .experts = 4, .top_k = 2, .moe_ffn = 32, .dense_layers = cases[i].dense};
        all = m, all.moe.dense_layers = 0;
        simpar_model_dense_layer(&m, &dense);
        SimparTrain train = train_1d(1, SIMPAR_PIPE_1F1B, 2, 1, 4);
        train.tp.ep = 1;
        if (cases[i].first > 0)
            train.layers = m.layers, train.first_stage_layers = cases[i].first;
        for (guint p = 0; p < 2; p++) {
            SimparMemory got = step(&m, &train, p), d = step(&dense, &train, p),
                         a = step(&all, &train, p);
            printf("\n    L=%" G_GINT64_FORMAT " K=%" G_GINT64_FORMAT " stage %u: %.0f parameters "
                   "(no experts %.0f, every layer MoE %.0f), activations %.0f B",
                   m.layers, m.moe.dense_layers, p, got.params, d.params, a.params,
                   got.activations_B);
            const double *fields[3][6] = {
                {&got.params, &got.weights_B, &got.grads_B, &got.optimizer_B, &got.activations_B,
                 &got.total_B},
                {&d.params, &d.weights_B, &d.grads_B, &d.optimizer_B, &d.activations_B, &d.total_B},
                {&a.params, &a.weights_B, &a.grads_B, &a.optimizer_B, &a.activations_B,
                 &a.total_B}};
            gint kind = cases[i].kind[p];
            for (guint k = 0; k < 6; k++) {
                double x = *fields[0][k], lo = MIN(*fields[1][k], *fields[2][k]),
                       hi = MAX(*fields[1][k], *fields[2][k]);
                gboolean ok = kind < 2 ? near(x, *fields[1 + kind][k]) : x > lo && x < hi;
                CU_ASSERT(ok); /* kind 2: between the two */
            }
        }
    }
}

/* Megatron-Core's layout (--pipeline-model-parallel-layout) with a stage of no decoder layer:
 * "E|t*8|t*8|t*8L" over 4 stages. Stage 0 holds the embedding alone: no layer weights,
 * gradients, optimizer states or layer activations; stages 1 and 2 hold 8 layers each, 8/6 of
 * what the even split's 6 layers a stage hold. Fails with the layout's stages read as the even
 * split's. */
static void
test_layout_stage_of_no_layer(void)
{
    SimparModel m;
    CU_ASSERT_TRUE_FATAL(simpar_model_preset("tiny", &m, NULL));
    m.layers = 24;
    SimparTrain even = train_1d(1, SIMPAR_PIPE_1F1B, 4, 1, 8), lay = even;
    even.layers = lay.layers = m.layers;
    even.layers_per_chunk = 6;
    lay.layout = g_intern_static_string("E|t*8|t*8|t*8L");
    lay.split = simpar_layout_parse(lay.layout, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(lay.split);
    SimparMemory first = step(&m, &lay, 0), first_even = step(&m, &even, 0);
    printf("\n    stage 0: layer weights %.0f B, activations %.0f B (even split: %.0f, %.0f); "
           "embedding %.0f B",
           first.weights_B, first.activations_B, first_even.weights_B, first_even.activations_B,
           first.embedding_B);
    CU_ASSERT_EQUAL(first.weights_B, 0);
    CU_ASSERT_EQUAL(first.grads_B, 0);
    CU_ASSERT_EQUAL(first.optimizer_B, 0);
    CU_ASSERT_EQUAL(first.activations_B, 0);
    CU_ASSERT(first.embedding_B > 0 && near(first.embedding_B, first_even.embedding_B));
    for (guint p = 1; p < 3; p++) {
        SimparMemory a = step(&m, &lay, p), b = step(&m, &even, p);
        CU_ASSERT(near(a.weights_B, b.weights_B * 8 / 6));
        CU_ASSERT(near(a.optimizer_B, b.optimizer_B * 8 / 6));
        CU_ASSERT(near(a.activations_B, b.activations_B * 8 / 6));
    }
}

/* --overlap-moe-expert-parallel-comm: the merged 1F1B runs one more warm-up forward, but each
 * steady-state forward keeps a layer as its paired backward frees one (pipeline.h,
 * Megatron-Core's TransformerModelChunkSchedulePlan.run), so a device holds the schedule's own
 * chunks and one layer more: 1F1B at P = 1 (16 layers in one chunk) 16 + 1 layers for 16; the
 * interleaved schedule's device 1 of P = 2, v = 2, m = 4 (4 layers a chunk) 3 chunks, 12 + 1
 * layers; device 0 of P = 2, v = 2, m = 2 runs all m v = 4 forwards as its warm-up, no steady
 * state, 16 layers either way. The states are the same. */
static void
test_the_merged_1f1b_holds_one_more_layer(void)
{
    const struct {
        SimparPipeSchedule kind;
        gint64 P, v, m;
        guint stage;
        double layers_off, layers_on;
    } cases[] = {{SIMPAR_PIPE_1F1B, 1, 1, 4, 0, 16, 17},
                 {SIMPAR_PIPE_INTERLEAVED, 2, 2, 4, 1, 12, 13},
                 {SIMPAR_PIPE_INTERLEAVED, 2, 2, 2, 0, 16, 16}};

    g_assert(model16.layers == 16);
    for (guint c = 0; c < G_N_ELEMENTS(cases); c++) {
        SimparTrain train = train_1d(2, cases[c].kind, cases[c].P, cases[c].v, cases[c].m);
        SimparMemory off = step(&model16, &train, cases[c].stage);
        train.ep_overlap = TRUE;
        SimparMemory on = step(&model16, &train, cases[c].stage);
        double per_layer = off.activations_B / cases[c].layers_off;
        CU_ASSERT(per_layer > 0);
        CU_ASSERT_DOUBLE_EQUAL(on.activations_B, per_layer * cases[c].layers_on,
                               1e-9 * on.activations_B);
        CU_ASSERT_DOUBLE_EQUAL(on.in_flight * 16 / cases[c].P, cases[c].layers_on, 1e-12);
        CU_ASSERT_DOUBLE_EQUAL(off.in_flight * 16 / cases[c].P, cases[c].layers_off, 1e-12);
        CU_ASSERT_DOUBLE_EQUAL(on.states_B, off.states_B, 0);
    }
}

static CU_TestInfo memory_tests[] = {
    {"the merged 1F1B of --overlap-moe-expert-parallel-comm holds one layer more",
     test_the_merged_1f1b_holds_one_more_layer},
    {"an MoE model's dense layers hold the memory of the model without experts",
     test_dense_layers_of_an_moe_model},
    {"a layout's stage of no decoder layer holds no layer's memory, the others their layers'",
     test_layout_stage_of_no_layer},
    {"FP8 weight copies, transpose caches and FP8 parameters: their bytes by hand",
     test_states_fp8},
    {"FP8 attention keeps Q, K, V (delayed: and O, for the bf16 O) in FP8, by hand; unfused and "
     "bf16 as before",
     test_activations_fp8_attention},
    {"FP8 linears keep their inputs in FP8, by hand: a Llama-like layer (SwiGLU, GQA, SP, flash)",
     test_activations_fp8_linears_dense},
    {"FP8 linears keep their inputs in FP8, by hand: a GeLU layer (no SP, unfused attention)",
     test_activations_fp8_linears_gelu},
    {"FP8 in an MoE layer, by hand: the experts' and shared experts' inputs, the router's bf16 one",
     test_activations_fp8_moe_layer},
    {"Llama 3 8B: the published parameter count, activations of GQA and SwiGLU", test_llama3_8b},
    {"DeepSeek-V3 with multi-head latent attention: 671B parameters, the attention by hand",
     test_deepseek_v3_params},
    {"DeepSeek-V3's multi-token prediction module: 671B + 14B = 685B, the module by hand",
     test_deepseek_v3_mtp_params},
    {"multi-token prediction's parameters, states and activations on the last stage",
     test_mtp_memory},
    {"Qwen3-235B-A22B: 235B parameters with its heads of 128 columns, and their activations",
     test_qwen3_head_dim},
    {"the Qwen3-30B-A3B and Kimi K2 presets have their published parameter counts",
     test_preset_sizes},
    {"hybrid sharding, --no-reshard and fp32 gradients: their bytes per parameter",
     test_states_fsdp_options},
    {"context parallelism divides activations and logits by C", test_activations_cp},
    {"2-D, 2.5-D and 3-D MoE layers keep 1-D SP's activations and the block's redistributed "
     "input",
     test_activations_moe_grid},
    {"an MoE layer keeps its second norm's input and the MoE block's input (s b h each, split "
     "over T with SP), as a dense layer keeps its second norm's and fc1's",
     test_activations_moe_layer_keeps_its_second_norm_input},
    {"1-D activations per layer are Korthikanti's table for every recompute and SP choice",
     test_activations_table},
    {"the layer-stack estimate honours selective recomputation", test_estimate_recompute},
    {"weights, gradients and Adam states take 16 bytes per parameter", test_states_16_bytes},
    {"ZeRO 0-3 give the paper's 120, 31.4, 16.6 and 1.875 GB for 7.5B parameters over 64",
     test_states_zero_example},
    {"1F1B stage p holds min(P - p, m) micro-batches", test_1f1b_in_flight},
    {"GPipe holds all m micro-batches on every stage", test_gpipe_in_flight},
    {"interleaved stage 0 holds 1 + (P - 1)/(P v) times P micro-batches",
     test_interleaved_in_flight},
    {"the embedding sits on the first stage and the output layer on the last", test_embedding_ends},
    {"one stage with tied embeddings counts the table once", test_embedding_single_stage},
    {"local parallelism holds one micro-batch and its chunk's auxiliary head",
     test_local_parallelism},
    {"the peak is the stage with the largest total", test_peak_stage},
    {"an MoE model's dense layers hold a dense layer's states and activations, stage by stage",
     test_moe_dense_layers},
    {"expert tensor parallelism holds 1/ETP of the experts' weights, gradients and states",
     test_expert_tensor_parallelism_splits_the_experts},
    {"the all-gather dispatcher adds G s b / T (2h + E) to the working set",
     test_the_all_gather_dispatcher_adds_its_gathered_tokens_to_the_working_set},
    {"Llama 3 405B at 8K as its paper ran it fits in 80 GiB", test_llama3_405b_8k},
    {"Llama 3.1 405B at 8K in FP8 on GB200s: stage 1's activations by hand",
     test_llama3_405b_fp8_gb200},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"memory of a training step", NULL, NULL, NULL, NULL, memory_tests},
    CU_SUITE_INFO_NULL,
};

int
main(void)
{
    return simpar_test_main(suites);
}
