/* test-megatron.c - Megatron-LM arguments in (app/megatron.c): a launch script read as simpar's
 * flags predicts exactly what simpar's own flags predict, what was ignored is listed with why,
 * the script is read as a shell would cut it (never run), and what simpar cannot read or model
 * is one error naming the file, the line and the flag.
 *
 * The binary's path comes from SIMPAR_BIN; the working directory is the source root.
 */
#include "cli-run-json.h"
#include "megatron.h"
#include "simpar-test.h"
#include <glib/gstdio.h>

static char *megatron_dir;      /* a suite folder */
static char *megatron_a100x128; /* a 16-node DGX A100 platform in it */

static int
megatron_setup(void)
{
    megatron_dir = g_dir_make_tmp("simpar-megatron-XXXXXX", NULL);
    megatron_a100x128 = g_build_filename(megatron_dir, "a100x128.xml", NULL);
    g_autofree char *args =
        g_strdup_printf("topology --preset dgx-a100 --nodes 16 -o %s", megatron_a100x128);
    SimparCliRun r = simpar_cli_run(args);
    int status = r.status;
    simpar_cli_run_clear(&r);
    return status;
}

static int
megatron_teardown(void)
{
    g_free(megatron_a100x128);
    simpar_test_tmpdir_remove(megatron_dir);
    return 0;
}

/* The simpar flags a text translates to, joined by blanks (transfer full); NULL with the error
 * printed when it is refused. */
static char *
megatron_flags(const char *text)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(SimparMegatron) meg = simpar_megatron_parse(text, "--megatron-args test.sh", &error);
    if (meg == NULL) {
        printf("\n    refused: %s", error->message);
        return NULL;
    }
    return g_strjoinv(" ", (char **) simpar_megatron_argv(meg));
}

/* The refusal of `text`, checked to name `want` and the file. */
static void
megatron_refuses(const char *text, const char *want)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(SimparMegatron) meg = simpar_megatron_parse(text, "--megatron-args test.sh", &error);
    gboolean ok = meg == NULL && error != NULL && strstr(error->message, want) != NULL &&
                  strstr(error->message, "--megatron-args test.sh: ") == error->message;
    if (!ok)
        printf("\n    %s\n    -> %s (want %s)", text, error != NULL ? error->message : "accepted",
               want);
    CU_ASSERT_TRUE(ok);
}

#define MEG_SHAPE                                                                                  \
    "--num-layers 24 --hidden-size 2048 --num-attention-heads 16 --seq-length 2048 "               \
    "--micro-batch-size 2 "

/* The two scripts predict what simpar's flags predict, byte for byte, on 128 GPUs; the text
 * lists what was ignored and why. */
static void
megatron_same(const char *script, const char *flags, const char *ignored)
{
    const char *common = "--backend formula --json --jobs 1";
    g_autofree char *a =
        g_strdup_printf("--megatron-args %s --topology %s %s", script, megatron_a100x128, common);
    g_autofree char *b = g_strdup_printf("%s --topology %s %s", flags, megatron_a100x128, common);
    SimparCliRun ra = simpar_cli_run(a), rb = simpar_cli_run(b);
    gboolean ok = ra.status == 0 && rb.status == 0 && g_str_equal(ra.out, rb.out) &&
                  strstr(ra.err, ignored) != NULL && strstr(ra.out, "\"step_time_s\"") != NULL;
    if (!ok)
        printf("\n    simpar %s -> %d\n%s%s\n    simpar %s -> %d\n%s%s", a, ra.status, ra.out,
               ra.err, b, rb.status, rb.out, rb.err);
    CU_ASSERT_TRUE(ok);
    simpar_cli_run_clear(&ra);
    simpar_cli_run_clear(&rb);
}

static void
test_examples(void)
{
    /* Megatron-LM's examples/gpt3 launch: TP 8, PP 16, tied embeddings, GPT-2's vocabulary
     * padded to 51200, fused attention; data parallelism 1 on 128 GPUs */
    megatron_same("tests/data/megatron-gpt3-175b.sh",
                  "--model gpt3-175b --tp-mode 1d --tp 8 --pp 16 --dp 1 --tied-embeddings "
                  "--global-batch 1536 --attention flash",
                  "ignored (26):\n    --nproc_per_node: the launcher's (torchrun)");
    megatron_same("tests/data/megatron-gpt3-175b.sh",
                  "--model gpt3-175b --tp-mode 1d --tp 8 --pp 16 --tied-embeddings "
                  "--global-batch 1536 --attention flash",
                  "--lr: a training hyper-parameter");
    /* a Megatron-Core Llama 3 70B script: data parallelism 4 from the 128 GPUs */
    megatron_same("tests/data/megatron-llama3-70b.sh",
                  "--model llama3-70b --vocab 129024 --tp-mode 1d --tp 8 --pp 4 --dp 4 --sp "
                  "--schedule interleaved --virtual-stages 4 --recompute full --zero 1 "
                  "--overlap-grad-reduce --overlap-param-gather --grad-reduce-dtype fp32 "
                  "--global-batch 128 --attention flash",
                  "--overlap-param-gather -> --overlap-param-gather");
}

static void
test_aliases(void)
{
    /* Megatron's names on simpar's command line mean simpar's flags */
    megatron_same("tests/data/megatron-gpt3-175b.sh",
                  "--model gpt3-175b --tp-mode 1d --tensor-model-parallel-size 8 "
                  "--pipeline-model-parallel-size 16 --tied-embeddings --global-batch-size 1536 "
                  "--attention flash",
                  "ignored (26)");
    megatron_same("tests/data/megatron-llama3-70b.sh",
                  "--model llama3-70b --num-layers 80 --hidden-size 8192 --ffn-hidden-size 28672 "
                  "--num-attention-heads 64 --group-query-attention --num-query-groups 8 "
                  "--seq-length 8192 --micro-batch-size 1 --vocab 129024 --swiglu "
                  "--normalization RMSNorm --disable-bias-linear --dropout off --bf16 "
                  "--tp-mode 1d --tp 8 --pp 4 --sequence-parallel --schedule interleaved "
                  "--virtual-stages 4 --recompute-granularity full --use-distributed-optimizer "
                  "--overlap-grad-reduce --overlap-param-gather "
                  "--accumulate-allreduce-grads-in-fp32 --untie-embeddings-and-output-weights "
                  "--global-batch-size 128 --attention flash",
                  "ignored (35)");
}

/* pretrain_gpt.py's arguments after `--`, one word each: the same job as the script's */
static void
test_after_dashes(void)
{
    const char *common = "--backend formula --json --jobs 1";
    g_autofree char *a =
        g_strdup_printf("--megatron-args tests/data/megatron-gpt3-175b.sh --topology %s %s",
                        megatron_a100x128, common);
    g_autofree char *b = g_strdup_printf(
        "--topology %s %s -- --num-layers 96 --hidden-size 12288 --num-attention-heads 96 "
        "--seq-length 2048 --micro-batch-size 1 --global-batch-size 1536 --fp16 --lr 6.0e-5 "
        "--tensor-model-parallel-size 8 --pipeline-model-parallel-size 16 --vocab-size 50257",
        megatron_a100x128, common);
    SimparCliRun ra = simpar_cli_run(a), rb = simpar_cli_run(b);
    CU_ASSERT_TRUE(ra.status == 0 && rb.status == 0 && g_str_equal(ra.out, rb.out));
    CU_ASSERT_PTR_NOT_NULL(strstr(rb.err, "Megatron arguments (the arguments after --)"));
    CU_ASSERT_PTR_NOT_NULL(strstr(rb.err, "--lr: a training hyper-parameter"));
    simpar_cli_run_clear(&ra);
    simpar_cli_run_clear(&rb);
    CU_ASSERT_TRUE(simpar_cli_refused("--megatron-args tests/data/megatron-gpt3-175b.sh --topology "
                                      "topologies/v100x64.xml -- --num-layers 2",
                                      2, "give the Megatron arguments one way"));
}

static void
test_command_line_wins(void)
{
    /* the command line's flags come after the file's */
    const char *common = "--backend formula --json --jobs 1";
    g_autofree char *a = g_strdup_printf(
        "--megatron-args tests/data/megatron-gpt3-175b.sh --global-batch 768 --topology %s %s",
        megatron_a100x128, common);
    SimparCliRun r = simpar_cli_run(a);
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "B=768"));
    simpar_cli_run_clear(&r);
}

static void
test_shell_words(void)
{
    const struct {
        const char *text, *want;
    } cases[] = {
        /* continuations, variables and their defaults, quotes, comments */
        {"TP=4\nL=${LAYERS:-24}\npython pretrain_gpt.py \\\n --tensor-model-parallel-size $TP \\\n"
         " --num-layers \"$L\" --hidden-size '2048' --num-attention-heads 16 # 16 heads\n"
         " --seq-length=2048 --micro-batch-size 2 --bf16",
         "--model=gpt3-1.3b --micro-batch=2 --dtype=bf16 --tp-mode=1d --tp=4 "
         "--grad-reduce-dtype=fp32 --tied-embeddings --attention=flash"},
        /* a bash array with quoted "--flag value" pairs, exported and braced variables */
        {"export PP=2\nARGS=(\n  \"--pipeline-model-parallel-size ${PP}\"\n  --swiglu\n)\n"
         "torchrun x.py ${ARGS[@]} " MEG_SHAPE "--normalization RMSNorm --vocab-size 1000",
         "--pp=2"},
        /* Megatron's SwiGLU width, GQA and untied embeddings */
        {MEG_SHAPE "--swiglu --group-query-attention --num-query-groups 4 "
                   "--untie-embeddings-and-output-weights --vocab-size 32000 "
                   "--make-vocab-size-divisible-by 64",
         "--kv-heads=4 --ffn=5440 --seq=2048 --micro-batch=2 --vocab=32000"},
        /* context parallelism: Megatron's p2p is simpar's ring */
        {MEG_SHAPE "--context-parallel-size 2", "--cp=2 --cp-mode=ring"},
        {MEG_SHAPE "--context-parallel-size 2 --cp-comm-type allgather",
         "--cp=2 --cp-mode=allgather"},
        /* interleaving from layers per virtual stage; selective recomputation */
        {MEG_SHAPE "--pipeline-model-parallel-size 4 --num-layers-per-virtual-pipeline-stage 3 "
                   "--recompute-activations",
         "--schedule=interleaved --virtual-stages=2 --recompute=selective"},
        /* selective's modules in Megatron's order; --moe-layer-recompute adds moe */
        {MEG_SHAPE "--recompute-granularity selective --recompute-modules mlp moe mla_up_proj "
                   "layernorm",
         "--recompute=selective --recompute-modules=layernorm,mla_up_proj,mlp,moe"},
        {MEG_SHAPE "--moe-layer-recompute",
         "--recompute=selective --recompute-modules=core_attn,moe"},
        /* FP8 as Transformer Engine runs it: Megatron's tensorwise is simpar's current */
        {MEG_SHAPE "--bf16 --fp8-format hybrid --fp8-recipe tensorwise --fp8-amax-history-len 16 "
                   "--use-distributed-optimizer --fp8-param-gather",
         "--dtype=fp8 --fp8-recipe=current --fp8-param-gather"},
        {MEG_SHAPE "--bf16 --fp8-format e4m3 --fp8-dot-product-attention",
         "--dtype=fp8 --fp8-recipe=delayed --fp8-dot-product-attention"},
        /* no tensor parallelism: no sequence parallelism, as Megatron turns it off */
        {MEG_SHAPE "--sequence-parallel --use-torch-fsdp2 --fp16 --attention-backend unfused",
         "--tp=1 --zero=3 --tied-embeddings --attention=unfused"},
    };

    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autofree char *flags = megatron_flags(cases[i].text);
        gboolean ok = flags != NULL && strstr(flags, cases[i].want) != NULL;
        if (!ok)
            printf("\n    case %u: %s\n    want %s", i, flags, cases[i].want);
        CU_ASSERT_TRUE(ok);
    }
}

static void
test_refusals(void)
{
    megatron_refuses("echo hello", "no --flag in it");
    megatron_refuses("--hidden-size 2048 --num-attention-heads 16 --seq-length 2048 "
                     "--micro-batch-size 2",
                     "no --num-layers: Megatron needs it");
    megatron_refuses(MEG_SHAPE "\n--tensor-model-parallel-size $((2*4))",
                     "line 2: --tensor-model-parallel-size $((2*4)): simpar reads variables");
    megatron_refuses(MEG_SHAPE "--tensor-model-parallel-size $TP",
                     "--tensor-model-parallel-size $TP: simpar reads variables the file sets");
    megatron_refuses(MEG_SHAPE "--tensor-model-parallel-size 2\n--tensor-model-parallel-size 4",
                     "--tensor-model-parallel-size is given twice, as 2 (line 1) and 4 (line 2)");
    megatron_refuses(MEG_SHAPE "--tensor-model-parallel-size eight",
                     "line 1: --tensor-model-parallel-size eight: valid is a whole number");
    megatron_refuses(MEG_SHAPE "--context-parallel-size 2 --cp-comm-type a2a",
                     "--cp-comm-type a2a: simpar models p2p");
    megatron_refuses(MEG_SHAPE "--context-parallel-size 2 --cp-comm-type= allgather",
                     "--cp-comm-type is empty");
    megatron_refuses(MEG_SHAPE "--expert-model-parallel-size 2",
                     "--expert-model-parallel-size 2 without --num-experts");
    megatron_refuses(
        MEG_SHAPE "--num-experts 8 --moe-layer-freq '[1,0]'",
        "--moe-layer-freq [1,0]: valid are an integer N and a list of --num-layers (24)");
    megatron_refuses(MEG_SHAPE "--bf16 --fp16", "--bf16 and --fp16 together");
    megatron_refuses(MEG_SHAPE "--bf16 --fp8-format e5m2", "--fp8-format e5m2: valid are e4m3");
    megatron_refuses(MEG_SHAPE "--fp8-format hybrid", "--fp8-format hybrid without --bf16");
    megatron_refuses(MEG_SHAPE "--bf16 --fp8-format hybrid --fp8-recipe blockwise",
                     "--fp8-recipe blockwise: valid are delayed, tensorwise and mxfp8");
    megatron_refuses(MEG_SHAPE "--normalization BatchNorm",
                     "--normalization BatchNorm: valid are LayerNorm and RMSNorm");
    megatron_refuses(
        "--num-layers 24 --hidden-size 2048 --num-attention-heads 24 --seq-length 2048 "
        "--micro-batch-size 2",
        "--hidden-size 2048 is not divisible by --num-attention-heads 24: give the "
        "heads' width, --kv-channels");
    megatron_refuses(MEG_SHAPE "--recompute-granularity full",
                     "--recompute-granularity full needs --recompute-method");
    megatron_refuses(MEG_SHAPE "--pipeline-model-parallel-size 2 --recompute-granularity full "
                               "--recompute-method block --recompute-num-layers 4",
                     "a stage has 12 layers");
    megatron_refuses(MEG_SHAPE "--hidden-dropout 2", "--hidden-dropout 2: valid is a probability");
    megatron_refuses(MEG_SHAPE "--recompute-granularity selective --recompute-modules moe_act",
                     "moe_act in recompute_modules is only supported with moe_grouped_gemm");
    megatron_refuses(MEG_SHAPE "--recompute-granularity selective --recompute-modules gdn_norm_out",
                     "--recompute-modules gdn_norm_out: a module of Megatron's GatedDeltaNet");
    megatron_refuses(MEG_SHAPE "--moe-layer-recompute --recompute-granularity full "
                               "--recompute-method uniform",
                     "--moe-layer-recompute with --recompute-granularity full: Megatron refuses");

    /* the binary: a file's fault exits 1, one line */
    CU_ASSERT_TRUE(simpar_cli_refused("--megatron-args /nonexistent/train.sh --topology "
                                      "topologies/v100x64.xml",
                                      1, "--megatron-args: "));
    CU_ASSERT_TRUE(simpar_cli_refused("--megatron-args tests/data/megatron-gpt3-175b.sh "
                                      "--topology topologies/v100x64.xml",
                                      2,
                                      "--tp 8 x --pp 16 = 128 GPUs does not divide the 64 used"));
    CU_ASSERT_TRUE(simpar_cli_refused("--megatron-args tests/data/megatron-gpt3-175b.sh "
                                      "--topology topologies/v100x64.xml --trace "
                                      "tests/data/megatron-gpt3-175b.sh",
                                      2, "tests/data/megatron-gpt3-175b.sh"));
    CU_ASSERT_TRUE(simpar_cli_refused("--topology topologies/v100x64.xml --cp-comm-type a2a", 2,
                                      "--cp-comm-type a2a: valid are p2p and allgather"));
}

/* --expert-tensor-parallel-size 2 flows into a prediction: a Mixtral-shaped launch with TP 4,
 * sequence parallelism, EP 4 and ETP 2 and the all-to-all dispatcher predicts a step with the
 * expert-TP collectives; with Megatron's default dispatcher (allgather) the step's expert-TP
 * ranks join the TP x EP group's all-gathers instead. */
static void
test_expert_tensor_parallel_size_predicts(void)
{
    g_autofree char *script = g_build_filename(megatron_dir, "etp.sh", NULL);
    const char *text = "torchrun pretrain_gpt.py --num-layers 2 --hidden-size 4096 "
                       "--num-attention-heads 32 --group-query-attention --num-query-groups 8 "
                       "--ffn-hidden-size 14336 --seq-length 4096 --micro-batch-size 1 "
                       "--global-batch-size 64 --swiglu --normalization RMSNorm "
                       "--disable-bias-linear --bf16 --vocab-size 32000 --num-experts 8 "
                       "--moe-router-topk 2 --tensor-model-parallel-size 4 --sequence-parallel "
                       "--expert-model-parallel-size 4 --expert-tensor-parallel-size 2 "
                       "--moe-token-dispatcher-type alltoall\n";
    g_assert(g_file_set_contents(script, text, -1, NULL));
    g_autofree char *args =
        g_strdup_printf("--megatron-args %s --topology %s --backend analytic --json --jobs 1",
                        script, megatron_a100x128);
    SimparCliRun r = simpar_cli_run(args);
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "\"grid\" : \"T=4+SP\""));
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "\"moe_expert_tp_s\""));
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "\"axis\" : \"etp\""));
    if (r.status != 0)
        printf("\n    simpar %s -> %d: %s", args, r.status, r.err);
    simpar_cli_run_clear(&r);
    /* the same without --moe-token-dispatcher-type: Megatron's allgather over ETP x EP = 8 */
    char *a2a = strstr(text, " --moe-token-dispatcher-type alltoall");
    g_autofree char *plain = g_strndup(text, (gsize) (a2a - text));
    g_autofree char *line = g_strconcat(plain, "\n", NULL);
    g_assert(g_file_set_contents(script, line, -1, NULL));
    SimparCliRun ag = simpar_cli_run(args);
    CU_ASSERT_EQUAL(ag.status, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(ag.out, "\"moe_dispatcher\" : \"allgather\""));
    CU_ASSERT_PTR_NULL(strstr(ag.out, "\"moe_expert_tp_s\""));
    simpar_cli_run_clear(&ag);
}

static void
test_derived_dp(void)
{
    /* --tp without --dp: D is the GPUs over T x C x P (it was refused: T x P x 1 != GPUs) */
    SimparCliRun r = simpar_cli_run("--topology topologies/v100x64.xml --model tiny --tp-mode 1d "
                                    "--tp 4 --pp 2 --backend formula --jobs 1");
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "T=4 P=2 D=8 "));
    simpar_cli_run_clear(&r);
}

/* Megatron-Core's MoE flags become simpar's, with Megatron's defaults (top-2, softmax, the
 * dense FFN width, ETP = TP) and DeepSeek-V3's layer pattern */
static void
test_moe_flags(void)
{
    g_autofree char *mixtral = megatron_flags(
        MEG_SHAPE "--num-experts 8 --expert-model-parallel-size 8 --moe-grouped-gemm "
                  "--moe-shared-expert-overlap");
    CU_ASSERT_PTR_NOT_NULL_FATAL(mixtral);
    CU_ASSERT_PTR_NOT_NULL(strstr(mixtral, "--experts=8 --topk=2 --moe-ffn=8192 "));
    CU_ASSERT_PTR_NULL(strstr(mixtral, "--router")); /* softmax, simpar's default */
    { /* what simpar leaves out of a DeepSeek-V3 or Qwen3 script is said, with why */
        g_autoptr(GError) error = NULL;
        g_autoptr(SimparMegatron) meg =
            simpar_megatron_parse(MEG_SHAPE "--position-embedding-type rope --mtp-num-layers 1 "
                                            "--mtp-loss-scaling-factor 0.1 --qk-layernorm",
                                  "test.sh", &error);
        CU_ASSERT_PTR_NOT_NULL_FATAL(meg);
        g_autofree char *text = simpar_megatron_describe(meg);
        /* multi-token prediction is priced: its modules are read (test_mtp_flags) */
        CU_ASSERT_PTR_NOT_NULL(strstr(text, "--mtp-num-layers 1 -> --mtp-layers 1"));
        CU_ASSERT_PTR_NOT_NULL(strstr(text, "--mtp-loss-scaling-factor 0.1 -> accepted"));
        CU_ASSERT_PTR_NOT_NULL(strstr(text, "--qk-layernorm: the queries' and keys' own norms"));
    }
    { /* Megatron's default dispatcher is allgather, and simpar prices it: said */
        g_autoptr(GError) error = NULL;
        g_autoptr(SimparMegatron) meg = simpar_megatron_parse(
            MEG_SHAPE "--num-experts 8 --expert-model-parallel-size 8", "test.sh", &error);
        CU_ASSERT_PTR_NOT_NULL_FATAL(meg);
        g_autofree char *text = simpar_megatron_describe(meg);
        CU_ASSERT_PTR_NOT_NULL(strstr(text, "(no --moe-token-dispatcher-type: Megatron's "
                                            "default allgather) -> --moe-dispatcher allgather"));
        CU_ASSERT_PTR_NULL(strstr(text, "not modelled"));
    }
    { /* each type as given: allgather and alltoall used (alltoall simpar's default: no
       * argument), anything else refused naming the valid ones */
        const char *const types[] = {"allgather", "alltoall"};
        for (guint i = 0; i < G_N_ELEMENTS(types); i++) {
            g_autofree char *text =
                g_strconcat(MEG_SHAPE "--num-experts 8 --expert-model-parallel-size 8 "
                                      "--moe-token-dispatcher-type ",
                            types[i], NULL);
            g_autofree char *got = megatron_flags(text);
            CU_ASSERT_PTR_NOT_NULL_FATAL(got);
            CU_ASSERT((strstr(got, "--moe-dispatcher=allgather") != NULL) == (i == 0));
            CU_ASSERT_PTR_NULL(strstr(got, "--moe-dispatcher=alltoall"));
            g_autoptr(SimparMegatron) meg = simpar_megatron_parse(text, "test.sh", NULL);
            CU_ASSERT_PTR_NOT_NULL_FATAL(meg);
            g_autofree char *said = simpar_megatron_describe(meg);
            g_autofree char *want = g_strdup_printf(
                "--moe-token-dispatcher-type %s -> --moe-dispatcher %s", types[i], types[i]);
            CU_ASSERT_PTR_NOT_NULL(strstr(said, want));
        }
        megatron_refuses(MEG_SHAPE "--num-experts 8 --expert-model-parallel-size 8 "
                                   "--moe-token-dispatcher-type alltoall_seq",
                         "--moe-token-dispatcher-type alltoall_seq: valid are allgather "
                         "(Megatron's default), alltoall and flex");
    }
    CU_ASSERT_PTR_NOT_NULL(strstr(mixtral, " --ep=8 "));
    CU_ASSERT_PTR_NULL(strstr(mixtral, "--etp"));
    /* no shared experts: Megatron's overlap has none to run (transformer_config.py) */
    CU_ASSERT_PTR_NULL(strstr(mixtral, "--moe-shared-expert-overlap"));
    g_autofree char *deepseek = megatron_flags(
        MEG_SHAPE "--num-experts 256 --moe-router-topk 8 --moe-ffn-hidden-size 2048 "
                  "--moe-shared-expert-intermediate-size 2048 --moe-layer-freq '([0]*3+[1]*21)' "
                  "--moe-router-score-function sigmoid --moe-router-num-groups 8 "
                  "--moe-router-group-topk 4 --expert-model-parallel-size 64 "
                  "--tensor-model-parallel-size 2 --expert-tensor-parallel-size 1 "
                  "--moe-shared-expert-overlap");
    CU_ASSERT_PTR_NOT_NULL_FATAL(deepseek);
    CU_ASSERT_PTR_NOT_NULL(strstr(deepseek, "--moe-shared-expert-overlap"));
    CU_ASSERT_PTR_NOT_NULL(strstr(deepseek, "--experts=256 --topk=8 --moe-ffn=2048 "
                                            "--shared-ffn=2048 --dense-layers=3 "
                                            "--expert-groups=8 --group-limit=4 "));
    CU_ASSERT_PTR_NOT_NULL(strstr(deepseek, " --router=sigmoid "));
    CU_ASSERT_PTR_NOT_NULL(strstr(deepseek, " --ep=64 "));
    CU_ASSERT_PTR_NULL(strstr(deepseek, "--overlap-moe-expert-parallel-comm"));
    /* the combined 1F1B passes on as it stands (simpar refuses what Megatron-Core refuses) */
    g_autofree char *merged =
        megatron_flags(MEG_SHAPE "--num-experts 8 --expert-model-parallel-size 8 "
                                 "--overlap-moe-expert-parallel-comm");
    CU_ASSERT_PTR_NOT_NULL_FATAL(merged);
    CU_ASSERT_PTR_NOT_NULL(strstr(merged, "--ep=8 --overlap-moe-expert-parallel-comm"));
    g_autofree char *etp = megatron_flags(MEG_SHAPE "--num-experts 8 --tensor-model-parallel-size "
                                                    "2 --expert-model-parallel-size 4");
    CU_ASSERT_PTR_NOT_NULL_FATAL(etp);
    CU_ASSERT_PTR_NOT_NULL(strstr(etp, "--ep=4 --etp=2")); /* Megatron's default ETP = TP */
    g_autofree char *etp2 = megatron_flags(MEG_SHAPE "--num-experts 8 --tensor-model-parallel-size "
                                                     "4 --sequence-parallel "
                                                     "--expert-model-parallel-size 4 "
                                                     "--expert-tensor-parallel-size 2");
    CU_ASSERT_PTR_NOT_NULL_FATAL(etp2);
    CU_ASSERT_PTR_NOT_NULL(strstr(etp2, "--ep=4 --etp=2"));
    /* the flex dispatcher with DeepEP is simpar's DeepEP hops; flex alone is refused */
    g_autofree char *deepep =
        megatron_flags(MEG_SHAPE "--num-experts 8 --expert-model-parallel-size "
                                 "8 --moe-token-dispatcher-type flex "
                                 "--moe-enable-deepep");
    CU_ASSERT_PTR_NOT_NULL_FATAL(deepep);
    CU_ASSERT_PTR_NOT_NULL(strstr(deepep, "--moe-dispatcher=deepep"));
    CU_ASSERT_PTR_NOT_NULL(strstr(mixtral, "--moe-dispatcher=allgather")); /* Megatron's default */
    /* Megatron-Core's flex backends: deepep by default (--moe-enable-deepep its deprecated
     * spelling), hybridep priced as DeepEP's hops, ncclep not modelled */
    const char *const flex[] = {"", "--moe-flex-dispatcher-backend deepep",
                                "--moe-flex-dispatcher-backend hybridep"};
    for (guint i = 0; i < G_N_ELEMENTS(flex); i++) {
        g_autofree char *text =
            g_strconcat(MEG_SHAPE "--num-experts 8 --expert-model-parallel-size 8 "
                                  "--moe-token-dispatcher-type flex ",
                        flex[i], NULL);
        g_autofree char *got = megatron_flags(text);
        CU_ASSERT_PTR_NOT_NULL(got != NULL ? strstr(got, "--moe-dispatcher=deepep") : NULL);
        /* HybridEP's routing maps' all-gather: hybridep alone */
        CU_ASSERT((got != NULL && strstr(got, "--moe-flex-backend=hybridep") != NULL) == (i == 2));
    }
    megatron_refuses(MEG_SHAPE "--num-experts 8 --expert-model-parallel-size 8 "
                               "--moe-token-dispatcher-type flex --moe-flex-dispatcher-backend "
                               "ncclep",
                     "--moe-flex-dispatcher-backend ncclep: simpar models deepep and hybridep");
    megatron_refuses(MEG_SHAPE "--num-experts 8 --expert-model-parallel-size 8 "
                               "--moe-token-dispatcher-type flex --moe-enable-deepep "
                               "--moe-flex-dispatcher-backend hybridep",
                     "Megatron refuses two backends");
}

/* --moe-layer-freq as Megatron evaluates it (a Python list expression of --num-layers entries):
 * with or without parentheses, repeated groups; patterns simpar's model cannot hold refused */
static void
test_moe_layer_freq(void)
{
    const struct {
        const char *freq, *want;
    } cases[] = {
        {"'([0]*3+[1]*21)'", "--dense-layers=3 --dtype"},
        {"[0]*3+[1]*21", "--dense-layers=3 --dtype"},
        {"'[0,1]*12'", "--dense-layers=1 --moe-every=2 "},
        {"'([0]+[1,0,0]*7+[1,0])'", "--dense-layers=1 --moe-every=3 "},
        {"'[0]*0+[1]*24'", "--experts=8 --topk=2 --moe-ffn=8192 --dtype"},
        {"3", "--moe-ffn=8192 --moe-every=3 "},
    };

    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autofree char *text =
            g_strconcat(MEG_SHAPE "--num-experts 8 --moe-layer-freq ", cases[i].freq, NULL);
        g_autofree char *got = megatron_flags(text);
        g_autofree char *with_model = got != NULL ? g_strconcat(got, " --model", NULL) : NULL;
        gboolean ok = with_model != NULL && strstr(with_model, cases[i].want) != NULL;
        if (!ok)
            printf("\n    %s -> %s (want %s)", cases[i].freq, got, cases[i].want);
        CU_ASSERT_TRUE(ok);
    }
    const char *const refused[] = {"'([1]*3+[0]*1)*6'",
                                   "'[0]*3+[1]*20'",
                                   "'[0]*24'",
                                   "'[0]*3+[1]*99999999999'",
                                   "'[0]*3+[2]*21'",
                                   "'[0]*3+[1]*21)'",
                                   "'([0]*3+[1]*21'",
                                   "'((((((((((((((((((((((((((((((((((([0]*3+[1]*21)))))))))))))))"
                                   "))))))))))))))))))))'"};
    for (guint i = 0; i < G_N_ELEMENTS(refused); i++) {
        g_autofree char *text =
            g_strconcat(MEG_SHAPE "--num-experts 8 --moe-layer-freq ", refused[i], NULL);
        megatron_refuses(text, "entries of 0 and 1");
    }
}

/* The base preset is the one whose experts match too (Mixtral's shape is Llama 3 8B's, and its
 * vocabulary is Mixtral's), and a dense script of an MoE preset's shape is dense (--experts 0)
 * and predicts; --kv-channels is unused under MLA, the heads' width without it */
static void
test_moe_base(void)
{
    const char *mixtral_shape = "--num-layers 32 --hidden-size 4096 --num-attention-heads 32 "
                                "--seq-length 4096 --micro-batch-size 1 --swiglu ";
    g_autofree char *dense_text = g_strconcat(mixtral_shape, "--ffn-hidden-size 14336", NULL);
    g_autofree char *moe_text = g_strconcat(mixtral_shape,
                                            "--ffn-hidden-size 14336 --num-experts 8 "
                                            "--expert-model-parallel-size 8",
                                            NULL);
    g_autofree char *dense = megatron_flags(dense_text), *moe = megatron_flags(moe_text);
    CU_ASSERT_PTR_NOT_NULL_FATAL(dense);
    CU_ASSERT_PTR_NOT_NULL_FATAL(moe);
    CU_ASSERT_TRUE(g_str_has_prefix(dense, "--model=llama3-8b "));
    CU_ASSERT_TRUE(g_str_has_prefix(moe, "--model=mixtral-8x7b --kv-heads=32 "));
    CU_ASSERT_PTR_NULL(strstr(moe, "--experts")); /* Mixtral's own: 8, top-2, 14336 */
    CU_ASSERT_PTR_NULL(strstr(moe, "--moe-ffn"));
    const char *ds_shape = "--num-layers 61 --hidden-size 7168 --num-attention-heads 128 "
                           "--seq-length 4096 --micro-batch-size 1 --swiglu --bf16 "
                           "--ffn-hidden-size 18432 --global-batch-size 128 ";
    g_autofree char *ds_dense = megatron_flags(ds_shape);
    CU_ASSERT_PTR_NOT_NULL_FATAL(ds_dense);
    CU_ASSERT_PTR_NOT_NULL(strstr(ds_dense, "--model=deepseek-v3 "));
    CU_ASSERT_PTR_NOT_NULL(strstr(ds_dense, " --experts=0 "));
    g_autofree char *path = g_build_filename(megatron_dir, "dense-ds.sh", NULL);
    g_autofree char *script = g_strconcat("torchrun pretrain_gpt.py ", ds_shape, "\n", NULL);
    CU_ASSERT_TRUE_FATAL(g_file_set_contents(path, script, -1, NULL));
    g_autofree char *args =
        g_strdup_printf("--megatron-args %s --topology %s --backend formula --json --jobs 1", path,
                        megatron_a100x128);
    SimparCliRun r = simpar_cli_run(args);
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_PTR_NULL(strstr(r.out, "experts"));
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "\"step_time_s\""));
    if (r.status != 0)
        printf("\n    simpar %s -> %d: %s", args, r.status, r.err);
    simpar_cli_run_clear(&r);
    const char *mla = "--multi-latent-attention --q-lora-rank 1536 --kv-lora-rank 512 "
                      "--qk-head-dim 128 --qk-pos-emb-head-dim 64 --v-head-dim 128 ";
    g_autofree char *kvc_text = g_strconcat(ds_shape, mla, "--kv-channels 128", NULL);
    g_autofree char *kvc = megatron_flags(kvc_text);
    CU_ASSERT_PTR_NOT_NULL(kvc);
    /* --kv-channels is the heads' width (--head-dim), written where it differs from the base
     * preset's: Qwen3-235B-A22B's 128 at h/a = 64 */
    g_autofree char *narrow = megatron_flags(MEG_SHAPE "--kv-channels 64");
    g_autofree char *same = megatron_flags(MEG_SHAPE "--kv-channels 128");
    CU_ASSERT_PTR_NOT_NULL_FATAL(narrow);
    CU_ASSERT_PTR_NOT_NULL_FATAL(same);
    CU_ASSERT_PTR_NOT_NULL(strstr(narrow, " --head-dim=64 "));
    CU_ASSERT_PTR_NULL(strstr(same, "--head-dim"));
    const char *qwen3 = "--num-layers 94 --hidden-size 4096 --num-attention-heads 64 "
                        "--seq-length 4096 --micro-batch-size 1 --swiglu --ffn-hidden-size 12288 "
                        "--group-query-attention --num-query-groups 4 --num-experts 128 "
                        "--moe-ffn-hidden-size 1536 --moe-router-topk 8 ";
    g_autofree char *qwen3_text = g_strconcat(qwen3, "--kv-channels 128", NULL);
    g_autofree char *qwen3_flags = megatron_flags(qwen3_text), *qwen3_64 = megatron_flags(qwen3);
    CU_ASSERT_PTR_NOT_NULL_FATAL(qwen3_flags);
    CU_ASSERT_PTR_NOT_NULL_FATAL(qwen3_64);
    CU_ASSERT_TRUE(g_str_has_prefix(qwen3_flags, "--model=qwen3-235b-a22b "));
    CU_ASSERT_PTR_NULL(strstr(qwen3_flags, "--head-dim"));
    CU_ASSERT_PTR_NOT_NULL(strstr(qwen3_64, " --head-dim=64 ")); /* Megatron's default h/a */
}

/* --multi-latent-attention with DeepSeek-V3's sizes; without one of them, refused */
static void
test_mla_flags(void)
{
    const char *mla = "--multi-latent-attention --q-lora-rank 1536 --kv-lora-rank 512 "
                      "--qk-head-dim 128 --qk-pos-emb-head-dim 64 --v-head-dim 128";
    g_autofree char *text = g_strconcat(MEG_SHAPE, mla, NULL);
    g_autofree char *flags = megatron_flags(text);
    CU_ASSERT_PTR_NOT_NULL_FATAL(flags);
    CU_ASSERT_PTR_NOT_NULL(strstr(flags, "--q-lora-rank=1536 --kv-lora-rank=512 --qk-head-dim=128 "
                                         "--qk-pos-emb-head-dim=64 --v-head-dim=128"));
    g_autofree char *mha = megatron_flags(MEG_SHAPE);
    CU_ASSERT_PTR_NOT_NULL_FATAL(mha);
    CU_ASSERT_PTR_NULL(strstr(mha, "lora"));
    megatron_refuses(MEG_SHAPE "--multi-latent-attention --q-lora-rank 1536 --kv-lora-rank 512",
                     "--multi-latent-attention without --qk-head-dim");
}

/* --mtp-num-layers becomes --mtp-layers (used, not ignored); --mtp-loss-scaling-factor is
 * accepted at no cost; Megatron's names on simpar's command line mean the same; what Megatron
 * refuses (a negative count, --overlap-moe-expert-parallel-comm with two modules) is refused. */
static void
test_mtp_flags(void)
{
    g_autofree char *flags =
        megatron_flags(MEG_SHAPE "--position-embedding-type rope --mtp-num-layers 1 "
                                 "--mtp-loss-scaling-factor 0.3");
    CU_ASSERT_PTR_NOT_NULL_FATAL(flags);
    CU_ASSERT_PTR_NOT_NULL(strstr(flags, " --mtp-layers=1 "));
    g_autofree char *none = megatron_flags(MEG_SHAPE);
    CU_ASSERT_PTR_NOT_NULL_FATAL(none);
    CU_ASSERT_PTR_NULL(strstr(none, "mtp"));
    g_autofree char *script = g_build_filename(megatron_dir, "mtp.sh", NULL);
    CU_ASSERT_TRUE_FATAL(g_file_set_contents(script,
                                             MEG_SHAPE "--tensor-model-parallel-size 2 "
                                                       "--pipeline-model-parallel-size 2 "
                                                       "--position-embedding-type none "
                                                       "--mtp-num-layers 2 "
                                                       "--mtp-loss-scaling-factor 0.1\n",
                                             -1, NULL));
    g_autofree char *args = g_strdup_printf("--megatron-args %s --topology %s --backend analytic",
                                            script, megatron_a100x128);
    SimparCliRun r = simpar_cli_run(args);
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "--mtp-num-layers 2 -> --mtp-layers 2"));
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "--mtp-loss-scaling-factor 0.1 -> accepted"));
    CU_ASSERT_PTR_NULL(strstr(r.out, "    --mtp-num-layers:")); /* not among the ignored */
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, " mtp=2 "));
    simpar_cli_run_clear(&r);
    /* the aliases */
    megatron_same(
        script,
        "--model gpt3-1.3b --micro-batch 2 --mtp-num-layers 2 --mtp-loss-scaling-factor 0.1 "
        "--dtype fp32 --tp-mode 1d --tp 2 --pp 2 --tied-embeddings --attention flash",
        "--mtp-num-layers 2 -> --mtp-layers 2");
    /* Megatron asserts rope or none, its default learned_absolute refused (the deprecated
     * --use-rotary-position-embeddings is read after that assertion) */
    megatron_refuses(MEG_SHAPE "--mtp-num-layers 1",
                     "--mtp-num-layers 1 with --position-embedding-type learned_absolute "
                     "(Megatron's default): Megatron supports multi-token prediction with rope "
                     "or none only");
    megatron_refuses(MEG_SHAPE "--use-rotary-position-embeddings --mtp-num-layers 1",
                     "--position-embedding-type learned_absolute");
    megatron_refuses(MEG_SHAPE "--mtp-num-layers -1",
                     "--mtp-num-layers -1: valid is a whole number from 0");
    megatron_refuses(MEG_SHAPE "--mtp-num-layers 65", "--mtp-num-layers 65: valid is 0 to 64");
    megatron_refuses(MEG_SHAPE "--position-embedding-type rope --mtp-num-layers 1 "
                               "--mtp-loss-scaling-factor lots",
                     "--mtp-loss-scaling-factor lots: valid is a number from 0");
    CU_ASSERT_TRUE(simpar_cli_refused("--topology topologies/v100x64.xml --mtp-num-layers -1", 2,
                                      "--mtp-layers -1: valid is 0"));
    CU_ASSERT_TRUE(
        simpar_cli_refused("--topology topologies/v100x64.xml --mtp-loss-scaling-factor -2", 2,
                           "--mtp-loss-scaling-factor -2: valid is a number from 0"));
}

/* --tp-comm-overlap becomes simpar's (Transformer Engine's default methods), with
 * --sequence-parallel and 2 or more tensor-parallel GPUs; without them Megatron asserts, and
 * so does the importer; a configuration file is said to be predicted with the defaults. */
static void
test_tp_comm_overlap(void)
{
    g_autofree char *on = megatron_flags(MEG_SHAPE "--tensor-model-parallel-size 4 "
                                                   "--sequence-parallel --tp-comm-overlap");
    CU_ASSERT_PTR_NOT_NULL_FATAL(on);
    CU_ASSERT_PTR_NOT_NULL(strstr(on, " --sp --tp-comm-overlap"));
    g_autofree char *off =
        megatron_flags(MEG_SHAPE "--tensor-model-parallel-size 4 --sequence-parallel");
    CU_ASSERT_PTR_NOT_NULL_FATAL(off);
    CU_ASSERT_PTR_NULL(strstr(off, "--tp-comm-overlap"));
    megatron_refuses(MEG_SHAPE "--tensor-model-parallel-size 4 --tp-comm-overlap",
                     "--tp-comm-overlap needs --sequence-parallel");
    megatron_refuses(MEG_SHAPE "--sequence-parallel --tp-comm-overlap",
                     "--tensor-model-parallel-size 2 or more");
    g_autoptr(GError) error = NULL;
    g_autoptr(SimparMegatron) meg =
        simpar_megatron_parse(MEG_SHAPE "--tensor-model-parallel-size 2 --sequence-parallel "
                                        "--tp-comm-overlap --tp-comm-overlap-cfg ub.yaml",
                              "test.sh", &error);
    CU_ASSERT_PTR_NOT_NULL_FATAL(meg);
    g_autofree char *text = simpar_megatron_describe(meg);
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "--tp-comm-overlap -> --tp-comm-overlap (Transformer "
                                        "Engine's default userbuffers methods"));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "--tp-comm-overlap-cfg: simpar prices Transformer "
                                        "Engine's default userbuffers configuration"));
}

/* --account-for-embedding-in-pipeline-split and --account-for-loss-in-pipeline-split become
 * simpar's flags of the same names, each alone or both, listed as used (not ignored); with one
 * pipeline stage they change nothing and are not passed on. */
static void
test_accounted_split(void)
{
    g_autofree char *both = megatron_flags(MEG_SHAPE "--pipeline-model-parallel-size 2 "
                                                     "--account-for-embedding-in-pipeline-split "
                                                     "--account-for-loss-in-pipeline-split");
    CU_ASSERT_PTR_NOT_NULL_FATAL(both);
    CU_ASSERT_PTR_NOT_NULL(strstr(both, " --account-for-embedding-in-pipeline-split "
                                        "--account-for-loss-in-pipeline-split"));
    g_autofree char *loss = megatron_flags(MEG_SHAPE "--pipeline-model-parallel-size 5 "
                                                     "--account-for-loss-in-pipeline-split");
    CU_ASSERT_PTR_NOT_NULL_FATAL(loss);
    CU_ASSERT_PTR_NOT_NULL(strstr(loss, " --account-for-loss-in-pipeline-split"));
    CU_ASSERT_PTR_NULL(strstr(loss, "embedding-in-pipeline"));
    g_autoptr(GError) error = NULL;
    g_autoptr(SimparMegatron) meg = simpar_megatron_parse(
        MEG_SHAPE "--pipeline-model-parallel-size 2 --account-for-embedding-in-pipeline-split",
        "test.sh", &error);
    CU_ASSERT_PTR_NOT_NULL_FATAL(meg);
    g_autofree char *text = simpar_megatron_describe(meg);
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "--account-for-embedding-in-pipeline-split -> "
                                        "--account-for-embedding-in-pipeline-split"));
    CU_ASSERT_PTR_NULL(strstr(text, "not modelled"));
    /* one stage: no effect (Megatron builds the L layers), not passed on */
    g_autofree char *one = megatron_flags(MEG_SHAPE "--account-for-loss-in-pipeline-split");
    CU_ASSERT_PTR_NOT_NULL_FATAL(one);
    CU_ASSERT_PTR_NULL(strstr(one, "account-for"));
    g_autoptr(SimparMegatron) meg1 =
        simpar_megatron_parse(MEG_SHAPE "--account-for-loss-in-pipeline-split", "test.sh", &error);
    CU_ASSERT_PTR_NOT_NULL_FATAL(meg1);
    g_autofree char *text1 = simpar_megatron_describe(meg1);
    CU_ASSERT_PTR_NOT_NULL(strstr(text1, "--account-for-loss-in-pipeline-split -> nothing (one "
                                         "pipeline stage holds every layer)"));
}

/* --pipeline-model-parallel-layout becomes simpar's flag of the same name, its stages over
 * --pipeline-model-parallel-size the virtual stages (interleaved above 1), as Megatron's
 * arguments.py derives them, over any --virtual-pipeline-model-parallel-size; refused beside the
 * other virtual-stage flags and when its stages do not divide over PP; a quoted layout read
 * whole. */
static void
test_layout(void)
{
    g_autofree char *v2 =
        megatron_flags(MEG_SHAPE "--pipeline-model-parallel-size 2 "
                                 "--virtual-pipeline-model-parallel-size 3 "
                                 "--pipeline-model-parallel-layout \"E|(t*8|)*2t*8L\"");
    CU_ASSERT_PTR_NOT_NULL_FATAL(v2);
    CU_ASSERT_PTR_NOT_NULL(strstr(v2, " --pipeline-model-parallel-layout=E|(t*8|)*2t*8L "));
    CU_ASSERT_PTR_NOT_NULL(strstr(v2, " --schedule=interleaved --virtual-stages=2"));
    CU_ASSERT_PTR_NULL(strstr(v2, "--virtual-stages=3"));
    g_autofree char *v1 =
        megatron_flags(MEG_SHAPE "--pipeline-model-parallel-size 2 "
                                 "--pipeline-model-parallel-layout 'Et*12|t*12L'");
    CU_ASSERT_PTR_NOT_NULL_FATAL(v1);
    CU_ASSERT_PTR_NOT_NULL(strstr(v1, " --pipeline-model-parallel-layout=Et*12|t*12L"));
    CU_ASSERT_PTR_NULL(strstr(v1, "--virtual-stages"));
    g_autoptr(GError) error = NULL;
    g_autoptr(SimparMegatron) meg =
        simpar_megatron_parse(MEG_SHAPE "--pipeline-model-parallel-size 2 "
                                        "--pipeline-model-parallel-layout 'Et*12|t*12L'",
                              "test.sh", &error);
    CU_ASSERT_PTR_NOT_NULL_FATAL(meg);
    g_autofree char *text = simpar_megatron_describe(meg);
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "--pipeline-model-parallel-layout -> "
                                        "--pipeline-model-parallel-layout Et*12|t*12L"));
    megatron_refuses(MEG_SHAPE "--pipeline-model-parallel-size 2 "
                               "--num-layers-per-virtual-pipeline-stage 6 "
                               "--pipeline-model-parallel-layout 'Et*12|t*12L'",
                     "Megatron refuses more than one of them");
    megatron_refuses(MEG_SHAPE "--pipeline-model-parallel-size 2 "
                               "--pipeline-model-parallel-layout 'E|t*12|t*12L'",
                     "3 stages are not divisible by --pipeline-model-parallel-size 2");
    megatron_refuses(MEG_SHAPE "--pipeline-model-parallel-size 2 "
                               "--pipeline-model-parallel-layout 'Et*12|t*1x2L'",
                     "at position 10, 'x' is not a layer symbol");
    /* the JSON rows' config echoes the layout as given */
    g_autoptr(JsonNode) root =
        simpar_cli_run_ok("--topology topologies/v100x64.xml --model tiny --layers 24 --tp-mode "
                          "1d --gpus 4 --pp 2 --dp 2 --backend analytic --json "
                          "--pipeline-model-parallel-layout 'Et*24|,L'",
                          TRUE);
    JsonObject *row = json_array_get_object_element(json_node_get_array(root), 0);
    JsonObject *config = json_object_get_object_member(row, "config");
    CU_ASSERT_STRING_EQUAL(
        json_object_get_string_member_with_default(config, "pipeline_layout", ""), "Et*24|,L");
}

static CU_TestInfo megatron_tests[] = {
    {"Megatron's --pipeline-model-parallel-layout becomes simpar's, its virtual stages too",
     test_layout},
    {"Megatron's --account-for-*-in-pipeline-split become simpar's", test_accounted_split},
    {"Megatron's --multi-latent-attention and its sizes become simpar's MLA flags", test_mla_flags},
    {"Megatron's --mtp-num-layers becomes --mtp-layers, its loss weight accepted", test_mtp_flags},
    {"Megatron's MoE flags become simpar's, with Megatron's defaults", test_moe_flags},
    {"--tp-comm-overlap becomes simpar's with --sequence-parallel, refused without",
     test_tp_comm_overlap},
    {"--moe-layer-freq is read as Megatron evaluates it", test_moe_layer_freq},
    {"the base preset's experts match the script's; a dense script of an MoE shape is dense",
     test_moe_base},
    {"Megatron's GPT-3 175B and Llama 3 70B scripts predict what simpar's flags predict",
     test_examples},
    {"Megatron's flag names on simpar's command line mean simpar's flags", test_aliases},
    {"pretrain_gpt.py's arguments after -- are read as the script's", test_after_dashes},
    {"the command line's flags win over the file's", test_command_line_wins},
    {"scripts are cut into words as a shell would, variables substituted, never run",
     test_shell_words},
    {"what simpar cannot read or model is one error naming the file, line and flag", test_refusals},
    {"without --dp, data parallelism is the GPUs over T x C x P", test_derived_dp},
    {"--expert-tensor-parallel-size 2 predicts a step with expert-TP collectives",
     test_expert_tensor_parallel_size_predicts},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"Megatron arguments", megatron_setup, megatron_teardown, NULL, NULL, megatron_tests},
    CU_SUITE_INFO_NULL,
};

int
main(void)
{
    return simpar_test_main(suites);
}
