/* test-cli.c - the simpar binary: bad plans and inputs get one clear message and a non-zero
 * exit; good ones print the summary (text and JSON) and the main job reads a platform.
 *
 * The binary's path comes from SIMPAR_BIN (set by tests/meson.build); the working directory is
 * the source root.
 */
#include "cli-run.h"
#include "cli.h"
#include "simpar-test.h"
#include <gio/gio.h>
#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <math.h>

/* Exits non-zero, prints nothing on stdout, and one stderr line containing `want`. */
static void
cli_refuses(const char *args, const char *want)
{
    SimparCliRun r = simpar_cli_run(args);
    gboolean ok = r.status != 0 && strstr(r.err, want) != NULL && r.out[0] == '\0' &&
                  strchr(r.err, '\n') == r.err + strlen(r.err) - 1;
    if (!ok)
        printf("\n    simpar %s -> status %d, stderr: %s", args, r.status, r.err);
    CU_ASSERT_TRUE(ok);
    g_free(r.out);
    g_free(r.err);
}

static void
test_grids(void)
{
    cli_refuses("schedule --tp-mode 2d --tp 8", "--tp 8 is not a square");
    cli_refuses("schedule --tp-mode 3d --tp 9", "--tp 9 is not a cube");
    cli_refuses("schedule --tp-mode 3d --tp 16", "--tp 16 is not a cube");
    cli_refuses("schedule --tp-mode 2.5d --tp 12 --depth 2", "--tp 12 is not q*q*d");
    cli_refuses("schedule --tp-mode 2.5d --tp 8", "needs --depth");
    cli_refuses("schedule --tp-mode 2d --tp 4 --depth 2", "--depth applies to --tp-mode 2.5d");
    cli_refuses("schedule --tp-mode 3d --tp 8 --sp", "--sp (sequence parallelism) applies");
    cli_refuses("schedule --tp-mode 5d --tp 8", "--tp-mode 5d: unknown tensor-parallel mode");
    cli_refuses("schedule --tp 0", "--tp 0 is out of range");
    cli_refuses("schedule --tp -4", "--tp -4 is out of range");
    cli_refuses("schedule --tp 100000000", "is out of range");
    cli_refuses("schedule --tp-mode 2d --tp 4 --variant later", "--variant later: valid only");
}

static void
test_divisibility(void)
{
    cli_refuses("schedule --tp-mode 1d --tp 3", "--heads 32 is not divisible by 3");
    cli_refuses("schedule --tp-mode 1d --tp 2 --sp --seq 511", "--seq 511 is not divisible by 2");
    cli_refuses("schedule --tp-mode 2d --tp 4 --hidden 2049 --heads 3",
                "--hidden 2049 is not divisible by 2");
    cli_refuses("schedule --tp-mode 2d --tp 9 --hidden 2304 --heads 36 --ffn 9216 --micro-batch 4",
                "--micro-batch 4 is not divisible");
    cli_refuses("schedule --tp-mode 3d --tp 8 --hidden 2050 --heads 2", "--hidden 2050 is not "
                                                                        "divisible by 4");
    cli_refuses("schedule --tp-mode 3d --tp 8 --micro-batch 6", "--micro-batch 6 is not divisible "
                                                                "by 4");
    cli_refuses("schedule --tp-mode 3d --tp 27 --hidden 2304 --ffn 9216 --heads 32",
                "--heads 32 is not divisible by 3");
    cli_refuses("schedule --tp 4 --hidden 100 --heads 7",
                "--hidden 100 is not divisible by --heads 7");
}

/* simpar --version: the project's version (meson.build) and SimGrid's, exit 0; with another
 * argument, exit 2. */
static void
test_version(void)
{
    SimparCliRun r = simpar_cli_run("--version");
    g_autofree char *want = g_strdup_printf("simpar %s (SimGrid 3.", SIMPAR_VERSION);
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_TRUE(g_str_has_prefix(r.out, want));
    CU_ASSERT_STRING_EQUAL(r.err, "");
    simpar_cli_run_clear(&r);
    cli_refuses("--version --topology x.xml", "simpar: --version takes no other argument");
    r = simpar_cli_run("--help");
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "simpar --version prints"));
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "  simpar [predict] [OPTION?] - plan transformer"));
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "Predicts the time of one whole optimizer step"));
    simpar_cli_run_clear(&r);
    /* no arguments: every command of the table named */
    cli_refuses("", "simpar: --topology FILE is required (e.g. topologies/v100x64.xml), or a "
                    "command: schedule, predict, collective, topology, sweep, validate, calibrate, "
                    "plot (simpar --help lists them)");
    /* each command's usage line names it */
    guint n;
    const SimparCommand *commands = simpar_commands(&n);
    for (guint i = 0; i < n; i++) {
        g_autofree char *args = g_strdup_printf("%s --help", commands[i].name);
        g_autofree char *usage =
            g_strdup_printf(g_str_equal(commands[i].name, "predict") ? "  simpar [%s] [OPTION"
                                                                     : "  simpar %s [OPTION",
                            commands[i].name);
        r = simpar_cli_run(args);
        CU_ASSERT_EQUAL(r.status, 0);
        if (strstr(r.out, usage) == NULL)
            printf("\n    simpar %s: no \"%s\" in its usage", args, usage);
        CU_ASSERT_PTR_NOT_NULL(strstr(r.out, usage));
        simpar_cli_run_clear(&r);
    }
}

/* A sweep started with descriptors 0-2 closed: its journal took one of their numbers and the
 * sweep lost every row with exit 1 and no message; now the rows are in the CSV, and only the
 * summary for the closed stdout is lost (exit 1, as with stdout closed alone). */
static void
test_closed_descriptors(void)
{
    g_autofree char *dir = g_dir_make_tmp("simpar-fds-XXXXXX", NULL);
    g_autofree char *csv = g_build_filename(dir, "s.csv", NULL);
    g_autofree char *cmd =
        g_strdup_printf("%s sweep --topology topologies/v100x64.xml --model tiny "
                        "--tp-mode 1d -o %s <&- >&- 2>&-",
                        g_getenv("SIMPAR_BIN"), csv);
    const char *argv[] = {"/bin/sh", "-c", cmd, NULL};
    int wait = 0;
    CU_ASSERT_TRUE_FATAL(g_spawn_sync(NULL, (char **) argv, NULL, G_SPAWN_DEFAULT, NULL, NULL, NULL,
                                      NULL, &wait, NULL));
    g_autofree char *text = NULL;
    guint rows = 0;
    if (g_file_get_contents(csv, &text, NULL, NULL))
        for (const char *c = text; (c = strchr(c, '\n')) != NULL; c++)
            rows++;
    CU_ASSERT_TRUE(WIFEXITED(wait) && WEXITSTATUS(wait) == 1);
    CU_ASSERT_EQUAL(rows, 1 + 13); /* the header, the 13 configurations */
    if (rows != 14)
        printf("\n    sweep with 0-2 closed: status %d, %u lines in %s", wait, rows, csv);
    simpar_test_tmpdir_remove(g_steal_pointer(&dir));
}

/* Output that cannot be written (stdout on a full disk) is an error, exit 1 with one line, in
 * both binaries: not lost with exit 0. */
static void
test_lost_output(void)
{
    const char *bins[] = {g_getenv("SIMPAR_BIN"), g_getenv("SIMPAR_EXEC_BIN")};
    const char *args[] = {"--topology topologies/v100x64.xml --backend analytic --tp-mode 1d",
                          "--executor host --tp 2 --repeats 1 --warmup 0"};
    const char *names[] = {"simpar", "simpar-exec"};
    for (guint i = 0; i < G_N_ELEMENTS(bins); i++) {
        if (bins[i] == NULL)
            continue;
        g_autofree char *cmd = g_strdup_printf("%s %s > /dev/full", bins[i], args[i]);
        const char *argv[] = {"/bin/sh", "-c", cmd, NULL};
        g_autofree char *err = NULL;
        int wait = 0;
        CU_ASSERT_TRUE_FATAL(g_spawn_sync(NULL, (char **) argv, NULL, G_SPAWN_DEFAULT, NULL, NULL,
                                          NULL, &err, &wait, NULL));
        CU_ASSERT_TRUE(WIFEXITED(wait) && WEXITSTATUS(wait) == 1);
        g_autofree char *want = g_strdup_printf(
            "%s: cannot write the output to stdout: No space left on device\n", names[i]);
        if (!g_str_equal(err, want))
            printf("\n    %s > /dev/full: %s", names[i], err);
        CU_ASSERT_STRING_EQUAL(err, want);
    }
    /* stdout closed: the output is lost, an error; stderr closed: the workers' reply files
     * must not take its descriptor (they did, and every platform command failed, silently) */
    const char *closed[] = {">&-", "2>&-"};
    for (guint i = 0; i < G_N_ELEMENTS(closed); i++) {
        g_autofree char *cmd =
            g_strdup_printf("%s --topology topologies/v100x64.xml --tp-mode 1d %s",
                            g_getenv("SIMPAR_BIN"), closed[i]);
        const char *argv[] = {"/bin/sh", "-c", cmd, NULL};
        g_autofree char *out = NULL, *err = NULL;
        int wait = 0;
        CU_ASSERT_TRUE_FATAL(g_spawn_sync(NULL, (char **) argv, NULL, G_SPAWN_DEFAULT, NULL, NULL,
                                          &out, &err, &wait, NULL));
        gboolean ok =
            i == 0 ? WIFEXITED(wait) && WEXITSTATUS(wait) == 1 &&
                         strstr(err, "cannot write the output to stdout") != NULL
                   : WIFEXITED(wait) && WEXITSTATUS(wait) == 0 && strstr(out, "1d    T=64") != NULL;
        if (!ok)
            printf("\n    simpar %s: status %d, stdout %s, stderr %s", closed[i], wait, out, err);
        CU_ASSERT_TRUE(ok);
    }
}

static void
test_values(void)
{
    cli_refuses("schedule --tp 4 --hidden 0", "--hidden 0 is out of range");
    cli_refuses("schedule --tp 4 --seq -8", "--seq -8 is out of range");
    cli_refuses("schedule --tp 4 --micro-batch 1000000000000",
                "--micro-batch 1000000000000 is out");
    cli_refuses("schedule --tp 4 --hidden big", "Cannot parse integer value");
    cli_refuses("schedule --tp 4 --dtype fp4",
                "dtype 'fp4' is not one of fp16, bf16, fp32, fp64, fp8");
    cli_refuses("schedule --tp 4 --frobnicate", "Unknown option --frobnicate");
    cli_refuses("schedule --tp 4 extra", "unexpected argument 'extra'");
    cli_refuses("schedule", "--tp N is required");
    cli_refuses("frobnicate", "unknown command 'frobnicate'");
    cli_refuses("schedule --tp 4 --model gpt5", "--model gpt5: no such preset");
    cli_refuses("schedule --tp 4 --model /nonexistent/m.json", "/nonexistent/m.json");
}

static void
test_topology(void)
{
    g_autofree char *dir = g_dir_make_tmp("simpar-cli-XXXXXX", NULL);
    g_autofree char *bad = g_build_filename(dir, "bad.xml", NULL);
    g_autofree char *odd = g_build_filename(dir, "odd.xml", NULL);
    g_assert(g_file_set_contents(bad, "<platform><zone>\n</platform>\n", -1, NULL));
    g_assert(
        g_file_set_contents(odd, "<?xml version='1.0'?>\n<platform version=\"4.1\"/>\n", -1, NULL));
    g_autofree char *a1 = g_strdup_printf("--topology %s", bad);
    g_autofree char *a2 = g_strdup_printf("--topology %s", odd);
    cli_refuses(a1, "not well-formed XML");
    cli_refuses(a2, "SimGrid cannot use this platform");
    cli_refuses("--topology /nonexistent/p.xml", "/nonexistent/p.xml");
    cli_refuses("--topology meson.build", "not well-formed XML");
    cli_refuses("", "--topology FILE is required");
    g_remove(bad);
    g_remove(odd);
    g_rmdir(dir);
}

/* A two-GPU platform whose hosts are `names` and whose GPUs carry `props`. */
static char *
cli_platform(const char *dir, const char *file, const char *name0, const char *name1,
             const char *props)
{
    g_autofree char *xml = g_strdup_printf(
        "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
        "<platform version=\"4.1\"><zone id=\"w\" routing=\"Full\">\n"
        "<host id=\"%s\" speed=\"1Gf\">%s</host><host id=\"%s\" speed=\"1Gf\">%s</host>\n"
        "<link id=\"l\" bandwidth=\"10GBps\" latency=\"1us\"/>\n"
        "<route src=\"%s\" dst=\"%s\"><link_ctn id=\"l\"/></route></zone></platform>\n",
        name0, props, name1, props, name0, name1);
    char *path = g_build_filename(dir, file, NULL);
    g_assert(g_file_set_contents(path, xml, -1, NULL));
    return path;
}

static void
test_platform_content(void)
{
    g_autofree char *dir = g_dir_make_tmp("simpar-cli-XXXXXX", NULL);
    const char *v100 = "<prop id=\"peak_fp16_flops\" value=\"125e12\"/><prop "
                       "id=\"mem_bandwidth_Bps\" value=\"900e9\"/><prop id=\"mem_bytes\" "
                       "value=\"17179869184\"/>";
    g_autofree char *noprops = cli_platform(dir, "noprops.xml", "node0-gpu0", "node0-gpu1", "");
    g_autofree char *names = cli_platform(dir, "names.xml", "gpu0", "gpu1", v100);
    g_autofree char *nofp32 = cli_platform(dir, "nofp32.xml", "node0-gpu0", "node1-gpu0", v100);
    g_autofree char *a1 = g_strdup_printf("--topology %s --model tiny", noprops);
    g_autofree char *a2 = g_strdup_printf("--topology %s --model tiny", names);
    g_autofree char *a3 = g_strdup_printf("--topology %s --model tiny", nofp32);
    g_autofree char *a4 =
        g_strdup_printf("--topology %s --model tiny --dtype fp16 --tp-mode 1d", nofp32);
    cli_refuses(a1, "lacks the property mem_bandwidth_Bps");
    cli_refuses(a2, "no host is named node<N>-gpu<G>");
    cli_refuses(a3, "peak_fp32_flops");
    SimparCliRun r = simpar_cli_run(a4); /* the same platform trains fp16 */
    CU_ASSERT_EQUAL(r.status, 0);
    g_free(r.out), g_free(r.err);
    g_remove(noprops), g_remove(names), g_remove(nofp32);
    g_rmdir(dir);
}

static void
test_predict_refusals(void)
{
    const char *t = "--topology topologies/v100x64.xml";

    const struct {
        const char *args, *want;
    } cases[] = {
        {"--tp-mode 3d --gpus 32", "--tp 32 is not a cube"},
        {"--tp-mode 2d --gpus 48", "--tp 48 is not a square"},
        {"--gpus 128", "has only 64 GPUs"},
        {"--gpus 0", "--gpus 0: must be between 1"},
        {"--tp 16 --dp 1", "--tp 16 x --pp 1 x --dp 1 = 16 GPUs, but 64 are used"},
        {"--tp 24", "--tp 24 x --pp 1 = 24 GPUs does not divide the 64 used"},
        {"--tp-mode 1d --pp 4 --layers 3", "--layers 3 cannot be split into --pp 4"},
        {"--tp-mode 1d --pp 4 --layers 12 --first-stage-layers 11",
         "--first-stage-layers 11 and --last-stage-layers 0 leave no valid split of --layers 12"},
        {"--tp-mode 1d --pp 4 --global-batch 24", "--global-batch 24: must be a positive multiple"},
        {"--tp-mode 1d --pp 4 --schedule interleaved --global-batch 48",
         "a multiple of --pp 4, got 3"},
        {"--tp-mode 1d --pp 2 --zero 2", "--zero 2 with --pp 2"},
        {"--tp-mode 1d --zero 5", "--zero 5: valid stages are 0"},
        {"--tp-mode 1d --sp --scatter-gather", "--scatter-gather applies to 1-D tensor parallelism "
                                               "without --sp"},
        {"--schedule zigzag", "--schedule zigzag: unknown (valid: gpipe, 1f1b, interleaved"},
        {"--order tp,dp,tp", "--order tp,dp,tp: give tp, dp and pp once each"},
        {"--local-chunks 4 --pp 2", "--local-chunks replaces --pp"},
        {"--local-async", "apply to local parallelism"},
        {"--aux-head-width 0 --local-chunks 2", "--aux-head-width 0: must be at least 1"},
        {"--steps-to-target -3", "--steps-to-target -3: must be at least 1"},
        {"--recompute most", "--recompute most: unknown (valid: none, selective, full)"},
        {"--recompute full --recompute-modules mlp",
         "--recompute-modules mlp: valid only with --recompute selective (got --recompute full)"},
        {"--recompute selective --recompute-modules mlp,attn",
         "--recompute-modules attn: unknown (valid: core_attn, moe_act"},
        {"--recompute selective --recompute-modules mhc",
         "--recompute-modules mhc: a module of Megatron's GatedDeltaNet"},
        {"--recompute selective --recompute-modules mla_up_proj",
         "--recompute-modules mla_up_proj: mla_up_proj needs multi-head latent attention"},
        {"--model deepseek-v3 --moe-shared-expert-overlap --recompute selective "
         "--recompute-modules shared_experts --tp-mode 1d --topology topologies/dgx-h100x64.xml",
         "shared_experts cannot be recomputed with --moe-shared-expert-overlap"},
        {"--dtype fp8 --recompute selective --recompute-modules layernorm --tp-mode 1d "
         "--topology topologies/dgx-h100x64.xml",
         "does not work with FP8's delayed scaling"},
        {"--backend ns3", "--backend ns3: unknown (valid: simgrid, analytic, formula)"},
        {"--collectives some", "--collectives some: unknown"},
        {"--tp-slices two", "--tp-slices two: unknown (valid: one, all)"},
        {"--block-backend formula", "--block-backend formula: unknown (valid: simgrid, analytic)"},
        {"--algo butterfly", "'butterfly' (valid: auto, ring, tree"},
        {"--attention sparse", "sparse"},
        {"--nccl-proto ll64", "--nccl-proto ll64: unknown"},
        {"--jobs 0", "--jobs 0: from 1 to 1024"},
        {"--tp-mode 4d", "--tp-mode 4d: unknown"},
        {"--calibration /nonexistent/c.json", "/nonexistent/c.json"},
        {"--trace /nonexistent/dir/t.json --tp-mode 1d --layers 1", "/nonexistent/dir/t.json"},
        {"--time-budget soon", "--time-budget soon: not a number of minutes in (0, 10080]"},
        {"--time-budget 0", "--time-budget 0: not a number of minutes in (0, 10080]"},
        {"--time-budget=-5", "--time-budget -5: not a number"},
        {"--time-budget 1e9", "--time-budget 1e9: not a number"},
        {"--time-budget 30m", "--time-budget 30m: not a number"},
        /* over the time budget: the estimate, and the faster mode that would do */
        {"--tp-mode 2d --collectives exact --time-budget 0.0001",
         "2d q=8: simulating it on SimGrid would take about"},
        {"--tp-mode 2d --collectives exact --time-budget 0.0001",
         "more than --time-budget 0.0001 minutes: the default --collectives fused is fast"},
        {"--tp-mode 3d --time-budget 0.0001", "--block-backend analytic times the blocks"},
        {"--model tiny --tp-mode 1d --tp 4 --dp 16 --tp-slices all --time-budget 0.0001",
         "the default --tp-slices one is fast"},
    };

    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autofree char *args = g_strdup_printf("%s %s", t, cases[i].args);
        cli_refuses(args, cases[i].want);
    }
    cli_refuses("collective --topology topologies/v100x64.xml --op gather --gpus 4",
                "--op gather: unknown");
    cli_refuses("collective --topology topologies/v100x64.xml --op allreduce --gpus 4 --bytes 0",
                "--bytes 0: a size in bytes");
    cli_refuses("collective --topology topologies/v100x64.xml --op allreduce --gpus 4 "
                "--min-bytes 1M --max-bytes 1K",
                "--min-bytes 1M is larger than --max-bytes 1K");
    cli_refuses("collective --topology topologies/v100x64.xml --op allreduce --gpus 4 --algo chain",
                "--algo chain does not implement allreduce");
    cli_refuses("collective --topology topologies/v100x64.xml --op allreduce --gpus 65",
                "has only 64 GPUs");
    cli_refuses("collective --topology topologies/v100x64.xml --gpus 4", "--op OP");
    cli_refuses("collective --topology topologies/v100x64.xml --op allreduce --gpus 4 --format csv",
                "--format csv: valid are table (default), json, nccl-tests");
    cli_refuses("collective --topology topologies/v100x64.xml --op allreduce --gpus 4 --json "
                "--format nccl-tests",
                "--json and --format nccl-tests contradict each other; give one");
    /* sizes of whole fp32 elements (per GPU where the kind splits S over them), as counted */
    cli_refuses("collective --topology topologies/v100x64.xml --op allreduce --gpus 4 --bytes 10",
                "--bytes 10: 10 bytes is not a whole number of fp32 elements (multiples of 4 "
                "bytes; the nearest: 8 or 12)");
    cli_refuses("collective --topology topologies/v100x64.xml --op allgather --gpus 4 --bytes 24",
                "--bytes 24: 24 bytes is not a whole number of fp32 elements per GPU (multiples "
                "of 16 bytes; the nearest: 16 or 32)");
    cli_refuses("collective --topology topologies/v100x64.xml --op allreduce --gpus 4 "
                "--min-bytes 6",
                "--min-bytes 6: 6 bytes is not a whole number of fp32 elements");
    cli_refuses("collective --topology topologies/v100x64.xml --op allreduce --gpus 4 "
                "--max-bytes 1M --min-bytes 2",
                "--min-bytes 2: 2 bytes is not a whole number of fp32 elements (multiples of 4 "
                "bytes; the nearest: 4 or 8)");
}

static void
test_main_job(void)
{
    SimparCliRun r = simpar_cli_run("--topology topologies/v100x64.xml");
    CU_ASSERT_EQUAL(r.status, 0);
    const char *rows[] = {"\n1d    T=64         64 ", "\n2d    q=8          64 ",
                          "\n2.5d  q=4 d=4      64 ", "\n3d    q=4          64 "};
    for (guint i = 0; i < G_N_ELEMENTS(rows); i++)
        CU_ASSERT_PTR_NOT_NULL(strstr(r.out, rows[i]));
    CU_ASSERT_PTR_NULL(strstr(r.out, "not simulated"));
    g_free(r.out);
    g_free(r.err);
}

static JsonArray *
cli_json_rows(JsonParser *p, const char *args)
{
    SimparCliRun r = simpar_cli_run(args);
    CU_ASSERT_EQUAL(r.status, 0);
    gboolean ok = json_parser_load_from_data(p, r.out, -1, NULL);
    g_free(r.out), g_free(r.err);
    CU_ASSERT_TRUE_FATAL(ok);
    return json_node_get_array(json_parser_get_root(p));
}

/* The documented schema and consistent figures: the step is the sum of its parts, on the main
 * job and on a pipelined, data-parallel split. */
static void
test_predict_json(void)
{
    const char *runs[] = {
        "--topology topologies/v100x64.xml --backend analytic --json",
        "--topology topologies/v100x64.xml --json --tp-mode 1d --tp 4 --pp 4 --dp 4 --schedule "
        "interleaved --micro-batch 2 --global-batch 64 --overlap-grad-reduce --zero 1",
    };
    const char *keys[] = {"step_time_s",        "compute_s", "exposed_comm_s", "tflops_per_gpu",
                          "memory_per_gpu_gib", "bubble_s",  "optimizer_s",    "dp_exposed_s",
                          "pp_p2p_s",           "mfu",       "split",          "placement"};
    for (guint run = 0; run < G_N_ELEMENTS(runs); run++) {
        g_autoptr(JsonParser) p = json_parser_new();
        JsonArray *rows = cli_json_rows(p, runs[run]);
        CU_ASSERT_EQUAL_FATAL(json_array_get_length(rows), run == 0 ? 4 : 1);
        for (guint i = 0; i < json_array_get_length(rows); i++) {
            JsonObject *a = json_array_get_object_element(rows, i);
            for (guint k = 0; k < G_N_ELEMENTS(keys); k++)
                CU_ASSERT_TRUE(json_object_has_member(a, keys[k]));
            CU_ASSERT_EQUAL(json_object_get_int_member(a, "gpus"), 64);
            double step = json_object_get_double_member(a, "step_time_s"), sum = 0;
            const char *parts[] = {"compute_s", "exposed_comm_s", "bubble_s", "optimizer_s",
                                   "other_wait_s"};
            for (guint k = 0; k < G_N_ELEMENTS(parts); k++)
                sum += json_object_get_double_member(a, parts[k]);
            CU_ASSERT_TRUE(fabs(sum - step) < 1e-9 * step);
            double tf = json_object_get_double_member(a, "model_flops") / step / 64 / 1e12;
            CU_ASSERT_TRUE(fabs(tf - json_object_get_double_member(a, "tflops_per_gpu")) <
                           1e-9 * tf);
            CU_ASSERT_TRUE(json_object_get_double_member(a, "mfu") > 0 &&
                           json_object_get_double_member(a, "mfu") < 1);
            /* 1-D T=64 of the main job: 4 all-reduces of b s h per layer, 24 layers, fp16 */
            if (run == 0 && i == 0)
                CU_ASSERT_DOUBLE_EQUAL(json_object_get_double_member(a, "comm_bytes_per_gpu"),
                                       24.0 * 4 * 16 * 512 * 4096 * 2, 1.0);
            /* what ran, counts as integers, no target figures without --steps-to-target */
            CU_ASSERT_STRING_EQUAL(json_object_get_string_member(a, "simpar_version"),
                                   SIMPAR_VERSION);
            CU_ASSERT_STRING_EQUAL(json_object_get_string_member(a, "topology"),
                                   "topologies/v100x64.xml");
            CU_ASSERT_STRING_EQUAL(json_object_get_string_member(a, "model"), "default-4k");
            const char *counts[] = {"gpus", "tp_ranks", "layer_ranks", "step_slices"};
            for (guint k = 0; k < G_N_ELEMENTS(counts); k++)
                CU_ASSERT_EQUAL(json_node_get_value_type(json_object_get_member(a, counts[k])),
                                G_TYPE_INT64);
            CU_ASSERT_FALSE(json_object_has_member(a, "steps_to_target"));
            CU_ASSERT_FALSE(json_object_has_member(a, "time_to_target_s"));
            if (run == 1) {
                CU_ASSERT_TRUE(json_object_get_double_member(a, "bubble_s") > 0);
                CU_ASSERT_TRUE(json_object_get_double_member(a, "optimizer_s") > 0);
                CU_ASSERT_STRING_EQUAL(json_object_get_string_member(a, "placement"),
                                       "tp intra-node, dp inter-node, pp inter-node");
            }
            printf("\n    %s: step %.6f s = parts %.6f s", json_object_get_string_member(a, "mode"),
                   step, sum);
        }
    }
}

/* JSON parses with json-glib and carries the 1-D numbers: 2 all-reduces of B*h forward. */
static void
test_json(void)
{
    SimparCliRun r = simpar_cli_run("schedule --tp-mode 1d --tp 4 --model tiny --json");
    CU_ASSERT_EQUAL_FATAL(r.status, 0);
    g_autoptr(JsonParser) p = json_parser_new();
    CU_ASSERT_TRUE_FATAL(json_parser_load_from_data(p, r.out, -1, NULL));
    JsonObject *o = json_node_get_object(json_parser_get_root(p));
    JsonArray *rows = json_object_get_array_member(o, "collectives");
    CU_ASSERT_EQUAL(json_array_get_length(rows), 2);
    JsonObject *fwd = json_array_get_object_element(rows, 0);
    CU_ASSERT_STRING_EQUAL(json_object_get_string_member(fwd, "kind"), "all-reduce");
    CU_ASSERT_STRING_EQUAL(json_object_get_string_member(fwd, "phase"), "forward");
    CU_ASSERT_EQUAL(json_object_get_int_member(fwd, "calls"), 2);
    CU_ASSERT_EQUAL(json_object_get_int_member(fwd, "bytes"), 2 * 8 * 32 * 64 * 4); /* fp32 */
    SimparCliRun again = simpar_cli_run("schedule --tp-mode 1d --tp 4 --model tiny --json");
    CU_ASSERT_STRING_EQUAL(again.out, r.out); /* same input, same output */
    g_free(r.out), g_free(r.err), g_free(again.out), g_free(again.err);
}

/* Same input, same output: the text and the JSON byte for byte, across runs and whatever the
 * number of worker processes (--jobs 1 runs every mode in one process). */
static void
test_predict_deterministic(void)
{
    const char *base = "--topology topologies/v100x64.xml --model tiny --gpus 4 --layers 3";
    const char *tails[] = {"",        " --jobs 1",        " --jobs 3",        "",
                           " --json", " --json --jobs 1", " --json --jobs 2", " --json"};
    SimparCliRun r[G_N_ELEMENTS(tails)];
    for (guint i = 0; i < G_N_ELEMENTS(tails); i++) {
        g_autofree char *args = g_strconcat(base, tails[i], NULL);
        r[i] = simpar_cli_run(args);
        CU_ASSERT_EQUAL(r[i].status, 0);
    }
    for (guint i = 1; i < G_N_ELEMENTS(tails); i++)
        if (i != 4) /* 0-3 the text, 4-7 the JSON */
            CU_ASSERT_STRING_EQUAL(r[i].out, r[i < 4 ? 0 : 4].out);
    CU_ASSERT_PTR_NOT_NULL(strstr(r[4].out, "\"step_time_s\""));
    CU_ASSERT_PTR_NULL(strstr(r[4].out, "wall")); /* nothing that varies from run to run */
    for (guint i = 0; i < G_N_ELEMENTS(tails); i++)
        g_free(r[i].out), g_free(r[i].err);
}

/* The trace events of `path` (transfer full: the parser). */
static JsonParser *
test_trace_load(const char *path, JsonArray **events)
{
    JsonParser *p = json_parser_new();
    CU_ASSERT_TRUE_FATAL(json_parser_load_from_file(p, path, NULL));
    *events =
        json_object_get_array_member(json_node_get_object(json_parser_get_root(p)), "traceEvents");
    return p;
}

/* The Chrome trace parses, has complete events and named tracks; by default one rank per role
 * (3-D: every rank alike), --trace-ranks picks them; bad lists are refused. */
static void
test_predict_trace(void)
{
    g_autofree char *dir = g_dir_make_tmp("simpar-cli-XXXXXX", NULL);
    g_autofree char *path = g_build_filename(dir, "trace.json", NULL);
    const char *pick[] = {"", " --trace-ranks all", " --trace-ranks 5,3"};
    const guint want_ranks[] = {1, 8, 2};
    for (guint c = 0; c < G_N_ELEMENTS(pick); c++) {
        g_autofree char *args = g_strdup_printf(
            "--topology topologies/v100x64.xml --model tiny --layers 2 --tp-mode 3d --gpus 8 "
            "--trace %s%s",
            path, pick[c]);
        SimparCliRun r = simpar_cli_run(args);
        CU_ASSERT_EQUAL_FATAL(r.status, 0);
        JsonArray *ev;
        g_autoptr(JsonParser) p = test_trace_load(path, &ev);
        guint complete = 0, named = 0;
        g_autoptr(GHashTable) pids = g_hash_table_new(NULL, NULL);
        for (guint i = 0; i < json_array_get_length(ev); i++) {
            JsonObject *e = json_array_get_object_element(ev, i);
            const char *ph = json_object_get_string_member(e, "ph");
            complete += g_str_equal(ph, "X");
            named += g_str_equal(ph, "M");
            CU_ASSERT_TRUE(json_object_has_member(e, "pid") && json_object_has_member(e, "tid"));
            /* the job rank (pid: mode index x 100000 + rank) */
            g_hash_table_add(pids,
                             GINT_TO_POINTER(json_object_get_int_member(e, "pid") % 100000 + 1));
        }
        guint n = g_hash_table_size(pids);
        CU_ASSERT_EQUAL(n, want_ranks[c]);
        CU_ASSERT_TRUE(complete >= n * 7); /* embedding, layers, head, backwards, Adam */
        CU_ASSERT_TRUE(named >= n * 2);    /* a process name and a track name per stream */
        if (c == 2)
            CU_ASSERT_TRUE(g_hash_table_contains(pids, GINT_TO_POINTER(3 + 1)) &&
                           g_hash_table_contains(pids, GINT_TO_POINTER(5 + 1)));
        g_free(r.out), g_free(r.err);
    }
    const char *bad[] = {"--trace-ranks 8", "--trace-ranks 5-3", "--trace-ranks x",
                         "--trace-ranks 1,", "--trace-ranks -1"};
    for (guint c = 0; c < G_N_ELEMENTS(bad); c++) {
        g_autofree char *args = g_strdup_printf(
            "--topology topologies/v100x64.xml --model tiny --layers 2 --tp-mode 3d --gpus 8 "
            "--trace %s %s",
            path, bad[c]);
        SimparCliRun r = simpar_cli_run(args);
        CU_ASSERT_EQUAL(r.status, 2);
        CU_ASSERT_PTR_NOT_NULL(strstr(r.err, "--trace-ranks"));
        g_free(r.out), g_free(r.err);
    }
    SimparCliRun r = simpar_cli_run("--topology topologies/v100x64.xml --trace-ranks 0");
    CU_ASSERT_EQUAL(r.status, 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.err, "no trace"));
    g_free(r.out), g_free(r.err);
    g_remove(path);
    g_rmdir(dir);
}

/* The main job's trace holds every layer's ops: rank 0's collectives inside the layer blocks,
 * summed per axis, are the layers (24) times `simpar schedule`'s bytes per GPU per layer, in
 * every mode. */
static void
test_predict_trace_layers(void)
{
    g_autofree char *dir = g_dir_make_tmp("simpar-cli-XXXXXX", NULL);
    g_autofree char *path = g_build_filename(dir, "trace.json", NULL);
    g_autofree char *args =
        g_strdup_printf("--topology topologies/v100x64.xml --trace %s --trace-ranks 0", path);
    SimparCliRun r = simpar_cli_run(args);
    CU_ASSERT_EQUAL_FATAL(r.status, 0);
    g_free(r.out), g_free(r.err);
    JsonArray *ev;
    g_autoptr(JsonParser) p = test_trace_load(path, &ev);
    const char *modes[] = {"--tp-mode 1d --tp 64", "--tp-mode 2d --tp 64",
                           "--tp-mode 2.5d --tp 64 --depth 4", "--tp-mode 3d --tp 64"};
    for (guint m = 0; m < G_N_ELEMENTS(modes); m++) {
        g_autoptr(GHashTable) traced =
            g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free); /* axis -> bytes */
        guint layers_seen = 0;
        for (guint i = 0; i < json_array_get_length(ev); i++) {
            JsonObject *e = json_array_get_object_element(ev, i);
            if (!g_str_equal(json_object_get_string_member(e, "ph"), "X") ||
                json_object_get_int_member(e, "pid") != m * 100000 ||
                json_object_get_int_member(e, "tid") < 100 ||
                !g_str_equal(json_object_get_string_member(e, "cat"), "collective"))
                continue;
            JsonObject *a = json_object_get_object_member(e, "args");
            const char *axis = json_object_get_string_member(a, "axis");
            /* each with the algorithm and protocol it runs with */
            CU_ASSERT_TRUE(json_object_has_member(a, "algo") && json_object_has_member(a, "proto"));
            double *sum = g_hash_table_lookup(traced, axis);
            if (sum == NULL)
                g_hash_table_insert(traced, g_strdup(axis), sum = g_new0(double, 1));
            *sum += (double) json_object_get_int_member(a, "bytes");
            layers_seen = MAX(layers_seen, (guint) json_object_get_int_member(a, "layer") + 1);
        }
        CU_ASSERT_EQUAL(layers_seen, 24);
        guint waits = 0; /* where a stream idles: what it waited for */
        for (guint i = 0; i < json_array_get_length(ev); i++) {
            JsonObject *e = json_array_get_object_element(ev, i);
            if (json_object_get_int_member(e, "pid") == m * 100000 &&
                g_str_equal(json_object_get_string_member(e, "ph"), "X") &&
                g_str_equal(json_object_get_string_member(e, "cat"), "wait"))
                waits += json_object_has_member(json_object_get_object_member(e, "args"), "for");
        }
        if (m == 0) /* 1-D: the backward's kernels wait for the all-reduces on the comm stream */
            CU_ASSERT_TRUE(waits > 0);
        g_autofree char *sched = g_strdup_printf("schedule --model default-4k %s --json", modes[m]);
        SimparCliRun s = simpar_cli_run(sched);
        CU_ASSERT_EQUAL_FATAL(s.status, 0);
        g_autoptr(JsonParser) sp = json_parser_new();
        CU_ASSERT_TRUE_FATAL(json_parser_load_from_data(sp, s.out, -1, NULL));
        JsonArray *rows = json_object_get_array_member(
            json_node_get_object(json_parser_get_root(sp)), "collectives");
        g_autoptr(GHashTable) want = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
        for (guint i = 0; i < json_array_get_length(rows); i++) {
            JsonObject *row = json_array_get_object_element(rows, i);
            const char *axis = json_object_get_string_member(row, "axis");
            double *sum = g_hash_table_lookup(want, axis);
            if (sum == NULL)
                g_hash_table_insert(want, g_strdup(axis), sum = g_new0(double, 1));
            *sum += 24 * json_object_get_double_member(row, "bytes");
        }
        CU_ASSERT_TRUE(g_hash_table_size(want) > 0);
        CU_ASSERT_EQUAL(g_hash_table_size(traced), g_hash_table_size(want));
        GHashTableIter it;
        gpointer axis, bytes;
        g_hash_table_iter_init(&it, want);
        while (g_hash_table_iter_next(&it, &axis, &bytes)) {
            const double *got = g_hash_table_lookup(traced, axis);
            printf("\n    %s %s: trace %.0f bytes, 24 x schedule %.0f", modes[m],
                   (const char *) axis, got != NULL ? *got : -1, *(double *) bytes);
            CU_ASSERT_TRUE(got != NULL && *got == *(double *) bytes);
        }
        g_free(s.out), g_free(s.err);
    }
    g_remove(path);
    g_rmdir(dir);
}

/* Every rank of a 256-GPU step under a 3 GB address-space limit: an actor per GPU stream with
 * SimGrid's default 8 MiB stack reserved 8 GB ("Failed to allocate stack", reported as a
 * platform SimGrid cannot use). Not under AddressSanitizer, whose shadow memory needs far more
 * address space than any limit a test can set. */
static void
test_address_space(void)
{
#if defined(__SANITIZE_ADDRESS__)
    printf("\n    skipped under AddressSanitizer");
#else
    g_autofree char *dir = g_dir_make_tmp("simpar-cli-XXXXXX", NULL);
    g_autofree char *xml = g_build_filename(dir, "a256.xml", NULL);
    g_autofree char *gen = g_strdup_printf("topology --preset dgx-a100 --nodes 32 -o %s", xml);
    SimparCliRun t = simpar_cli_run(gen);
    CU_ASSERT_EQUAL_FATAL(t.status, 0);
    simpar_cli_run_clear(&t);
    g_autofree char *cmd = g_strdup_printf(
        "ulimit -v 3000000; %s --topology %s --model gpt3-1.3b --tp-mode 1d --tp 8 --pp 4 --dp 8 "
        "--layers 8 --global-batch 64 --micro-batch 1 --tp-slices all --jobs 1",
        g_getenv("SIMPAR_BIN"), xml);
    const char *argv[] = {"/bin/sh", "-c", cmd, NULL};
    g_autofree char *out = NULL, *err = NULL;
    int wait = 0;
    CU_ASSERT_TRUE_FATAL(g_spawn_sync(NULL, (char **) argv, NULL, G_SPAWN_DEFAULT, NULL, NULL, &out,
                                      &err, &wait, NULL));
    gboolean ok = WIFEXITED(wait) && WEXITSTATUS(wait) == 0 && strstr(out, "1d ") != NULL;
    if (!ok)
        printf("\n    256 GPUs, every rank, 3 GB of address space: status %d, %s", wait, err);
    CU_ASSERT_TRUE(ok);
    g_remove(xml);
    g_rmdir(dir);
#endif
}

/* `cmd` run by /bin/sh: TRUE when it exits with `status` and its stderr holds `want`;
 * otherwise says what it did, prefixed with `what`. */
static gboolean
cli_shell(const char *what, const char *cmd, int status, const char *want)
{
    const char *argv[] = {"/bin/sh", "-c", cmd, NULL};
    g_autofree char *out = NULL, *err = NULL;
    int wait = 0;
    g_assert(g_spawn_sync(NULL, (char **) argv, NULL, G_SPAWN_DEFAULT, NULL, NULL, &out, &err,
                          &wait, NULL));
    gboolean ok = WIFEXITED(wait) && WEXITSTATUS(wait) == status && strstr(err, want) != NULL;
    if (!ok)
        printf("\n    %s: status %d, %s", what, wait, err);
    return ok;
}

/* simpar-exec with buffers past the memory it may have (a 2 GB address-space limit, 8.25 GiB
 * of buffers): one error naming the bytes, exit 1; it died of SIGTRAP in GLib's allocator.
 * Not under AddressSanitizer (its shadow memory needs more address space than the limit). */
static void
test_exec_memory(void)
{
#if defined(__SANITIZE_ADDRESS__)
    printf("\n    skipped under AddressSanitizer");
#else
    g_autofree char *dir = g_dir_make_tmp("simpar-cli-XXXXXX", NULL);
    g_autofree char *out_json = g_build_filename(dir, "run.json", NULL);
    g_autofree char *cmd =
        g_strdup_printf("ulimit -v 2000000; %s --executor host --model gpt3-1.3b --tp-mode 1d "
                        "--tp 1 --repeats 1 --warmup 0 -o %s",
                        g_getenv("SIMPAR_EXEC_BIN"), out_json);
    CU_ASSERT_TRUE(
        cli_shell("simpar-exec past its memory", cmd, 1, "buffers need 8.25 GiB in all"));
    CU_ASSERT_FALSE(g_file_test(out_json, G_FILE_TEST_EXISTS));
    g_rmdir(dir);
#endif
}

/* A platform file replaced while a sweep runs (once its journal exists, after the sweep took
 * the file's hash as part of its identity): the rows would mix two platforms under one identity;
 * the sweep ends with one error and writes no output (it wrote the mixed rows, exit 0). */
static void
test_sweep_input_changed(void)
{
    g_autofree char *dir = g_dir_make_tmp("simpar-cli-XXXXXX", NULL);
    g_autofree char *topo = g_build_filename(dir, "t.xml", NULL);
    g_autofree char *out_csv = g_build_filename(dir, "out.csv", NULL);
    g_autofree char *xml = NULL;
    CU_ASSERT_TRUE_FATAL(g_file_get_contents("topologies/dgx-a100x64.xml", &xml, NULL, NULL));
    CU_ASSERT_TRUE_FATAL(g_file_set_contents(topo, xml, -1, NULL));
    g_autofree char *cmd = g_strdup_printf(
        "%s sweep --topology %s --gpus 8..64 --model gpt3-1.3b --micro-batch 1..8 "
        "--recompute none,selective --global-batch 512 --jobs 1 -q -o %s & pid=$!; "
        "while [ ! -e %s.part ]; do sleep 0.01; done; echo '<!-- edited -->' >> %s; wait $pid",
        g_getenv("SIMPAR_BIN"), topo, out_csv, out_csv, topo);
    CU_ASSERT_TRUE(
        cli_shell("platform replaced during a sweep", cmd, 1, "changed while the sweep ran"));
    CU_ASSERT_FALSE(g_file_test(out_csv, G_FILE_TEST_EXISTS));
    g_autofree char *part = g_strconcat(out_csv, ".part", NULL);
    g_remove(part);
    g_remove(topo);
    g_rmdir(dir);
}

/* A configuration over its GPU's memory is predicted, the shortfall and the stage that falls
 * short named in text and JSON (users bring configurations that ran; refused before). Stage 1
 * holds 3 micro-batches of 10 layers, stage 0 four of 2: the peak is stage 1, which the worker
 * processes once lost (the text said stage 0). */
static void
test_over_capacity(void)
{
    const char *args = "--topology topologies/v100x64.xml --model llama3-8b --dtype fp16 "
                       "--tp-mode 1d --tp 8 --pp 4 --dp 2 --first-stage-layers 2 "
                       "--global-batch 16 --backend analytic";
    g_autofree char *text = g_strdup(args);
    SimparCliRun r = simpar_cli_run(text);
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "OVER CAPACITY by "));
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "GiB on pipeline stage 1:"));
    simpar_cli_run_clear(&r);
    g_autofree char *json = g_strconcat(args, " --json", NULL);
    r = simpar_cli_run(json);
    CU_ASSERT_EQUAL(r.status, 0);
    g_autoptr(JsonParser) p = json_parser_new();
    CU_ASSERT_TRUE_FATAL(json_parser_load_from_data(p, r.out, -1, NULL));
    simpar_cli_run_clear(&r);
    JsonObject *row =
        json_array_get_object_element(json_node_get_array(json_parser_get_root(p)), 0);
    JsonObject *mem = json_object_get_object_member(row, "memory");
    double over = json_object_get_double_member(mem, "over_capacity_gib");
    CU_ASSERT_TRUE(over > 0);
    CU_ASSERT_DOUBLE_EQUAL(over,
                           json_object_get_double_member(row, "memory_per_gpu_gib") -
                               json_object_get_double_member(mem, "capacity_gib"),
                           1e-9);
    CU_ASSERT_EQUAL(json_object_get_int_member(mem, "peak_stage"), 1);
    CU_ASSERT_DOUBLE_EQUAL(json_object_get_double_member(mem, "micro_batches_held"), 3, 1e-12);
    /* the parts add up to the total */
    const char *parts[] = {"weights_gib", "grads_gib",     "optimizer_gib",   "embedding_gib",
                           "logits_gib",  "recompute_gib", "activations_gib", "transient_gib"};
    double sum = 0;
    for (guint i = 0; i < G_N_ELEMENTS(parts); i++)
        sum += json_object_get_double_member(mem, parts[i]);
    CU_ASSERT_DOUBLE_EQUAL(sum, json_object_get_double_member(row, "memory_per_gpu_gib"), 1e-9);
}

/* A pipeline's transfers as they ran: each send's event is its transfer, drawn at both ends over
 * the same time (it began when both ends were there), and the time a sender or receiver waited
 * for the other end is a "wait" event of its own (a send once lasted until its receiver took it:
 * 757 us drawn for a 2 us transfer here). */
static void
test_predict_trace_transfers(void)
{
    g_autofree char *dir = g_dir_make_tmp("simpar-cli-XXXXXX", NULL);
    g_autofree char *path = g_build_filename(dir, "trace.json", NULL);
    g_autofree char *args = g_strdup_printf(
        "--topology topologies/v100x64.xml --model tiny --layers 4 --tp-mode 1d --tp 1 --pp 4 "
        "--gpus 4 --global-batch 64 --trace %s --trace-ranks all --json",
        path);
    SimparCliRun r = simpar_cli_run(args);
    CU_ASSERT_EQUAL_FATAL(r.status, 0);
    g_autoptr(JsonParser) out = json_parser_new();
    CU_ASSERT_TRUE_FATAL(json_parser_load_from_data(out, r.out, -1, NULL));
    JsonObject *mem = json_object_get_object_member(
        json_array_get_object_element(json_node_get_array(json_parser_get_root(out)), 0), "memory");
    simpar_cli_run_clear(&r);
    JsonArray *ev;
    g_autoptr(JsonParser) p = test_trace_load(path, &ev);
    /* the recvs by (receiver, sender, end) -> start */
    g_autoptr(GHashTable) recvs = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    guint sends = 0, matched = 0, waits = 0;
    for (int pass = 0; pass < 2; pass++)
        for (guint i = 0; i < json_array_get_length(ev); i++) {
            JsonObject *e = json_array_get_object_element(ev, i);
            const char *cat =
                json_object_has_member(e, "cat") ? json_object_get_string_member(e, "cat") : "";
            waits += pass == 0 && g_str_equal(cat, "wait");
            gboolean send = g_str_equal(cat, "send"), recv = g_str_equal(cat, "recv");
            if ((pass == 0 && !recv) || (pass == 1 && !send))
                continue;
            double ts = json_object_get_double_member(e, "ts");
            double end = ts + json_object_get_double_member(e, "dur");
            gint64 me = json_object_get_int_member(e, "pid") % 100000;
            gint64 peer =
                json_object_get_int_member(json_object_get_object_member(e, "args"), "peer");
            g_autofree char *key = g_strdup_printf("%" G_GINT64_FORMAT ">%" G_GINT64_FORMAT "@%.3f",
                                                   send ? me : peer, send ? peer : me, end);
            if (recv) {
                double *start = g_new(double, 1);
                *start = ts;
                g_hash_table_insert(recvs, g_steal_pointer(&key), start);
                continue;
            }
            sends++;
            const double *rts = g_hash_table_lookup(recvs, key);
            matched += rts != NULL && fabs(*rts - ts) < 1e-3;
        }
    CU_ASSERT_TRUE(sends > 0 && waits > 0);
    CU_ASSERT_EQUAL(matched, sends);
    if (matched != sends)
        printf("\n    %u of %u sends drawn over their recv's time", matched, sends);
    /* a flow arrow per transfer, its two ends sharing an id; the run's metadata */
    g_autoptr(GHashTable) flows = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    guint starts = 0, ends = 0;
    for (guint i = 0; i < json_array_get_length(ev); i++) {
        JsonObject *e = json_array_get_object_element(ev, i);
        const char *ph = json_object_get_string_member(e, "ph");
        if ((!g_str_equal(ph, "s") && !g_str_equal(ph, "f")) ||
            !g_str_equal(json_object_get_string_member(e, "cat"), "transfer"))
            continue;
        starts += g_str_equal(ph, "s"), ends += g_str_equal(ph, "f");
        const char *id = json_object_get_string_member(e, "id");
        guint n = GPOINTER_TO_UINT(g_hash_table_lookup(flows, id));
        g_hash_table_insert(flows, g_strdup(id), GUINT_TO_POINTER(n + 1));
    }
    CU_ASSERT_TRUE(starts == sends && ends == sends && g_hash_table_size(flows) == sends);
    JsonObject *other =
        json_object_get_object_member(json_node_get_object(json_parser_get_root(p)), "otherData");
    CU_ASSERT_STRING_EQUAL(json_object_get_string_member(other, "platform"),
                           "topologies/v100x64.xml");
    CU_ASSERT_STRING_EQUAL(json_object_get_string_member(other, "model"), "tiny");
    CU_ASSERT_PTR_NOT_NULL(strstr(json_object_get_string_member(other, "command"), "--pp 4"));
    /* the memory counter of the peak stage (rank = stage here) peaks at its states and the
     * activations the table says it holds */
    gint64 peak = json_object_get_int_member(mem, "peak_stage");
    double top = 0, want = json_object_get_double_member(mem, "states_gib") +
                           json_object_get_double_member(mem, "activations_gib");
    for (guint i = 0; i < json_array_get_length(ev); i++) {
        JsonObject *e = json_array_get_object_element(ev, i);
        if (g_str_equal(json_object_get_string_member(e, "ph"), "C") &&
            json_object_get_int_member(e, "pid") == peak)
            top = MAX(top, json_object_get_double_member(json_object_get_object_member(e, "args"),
                                                         "GiB"));
    }
    CU_ASSERT_DOUBLE_EQUAL(top, want, 1e-6 * want);
    if (fabs(top - want) > 1e-6 * want)
        printf("\n    memory counter peaks at %.9g GiB, the table says %.9g", top, want);
    g_remove(path);
    g_rmdir(dir);
}

/* --trace T.json.gz: the same trace, gzip'ed (Perfetto reads it so), every run the same bytes;
 * simpar plot timeline reads it as it is. */
static void
test_predict_trace_gzip(void)
{
    g_autofree char *dir = g_dir_make_tmp("simpar-cli-XXXXXX", NULL);
    const char *names[] = {"t.json", "t.json.gz", "t.json.gz"}; /* the last: run again */
    char *text[3] = {NULL, NULL, NULL};
    gsize len[3] = {0, 0, 0};
    for (guint i = 0; i < 3; i++) {
        g_autofree char *path = g_build_filename(dir, names[i], NULL);
        g_autofree char *args = g_strdup_printf(
            "--topology topologies/v100x64.xml --model tiny --layers 4 --tp-mode 1d --tp 1 --pp 4 "
            "--gpus 4 --global-batch 64 --trace %s",
            path);
        SimparCliRun r = simpar_cli_run(args);
        CU_ASSERT_EQUAL(r.status, 0);
        simpar_cli_run_clear(&r);
        CU_ASSERT_TRUE(g_file_get_contents(path, &text[i], &len[i], NULL));
    }
    /* gzip'ed: inflated, the plain trace but for the command in its metadata */
    g_autoptr(GInputStream) raw =
        g_memory_input_stream_new_from_data(text[1], (gssize) len[1], NULL);
    g_autoptr(GConverter) z = G_CONVERTER(g_zlib_decompressor_new(G_ZLIB_COMPRESSOR_FORMAT_GZIP));
    g_autoptr(GInputStream) in = g_converter_input_stream_new(raw, z);
    g_autoptr(GOutputStream) mem = g_memory_output_stream_new_resizable();
    CU_ASSERT_TRUE(
        g_output_stream_splice(mem, in, G_OUTPUT_STREAM_SPLICE_CLOSE_TARGET, NULL, NULL) > 0);
    gsize n = g_memory_output_stream_get_data_size(G_MEMORY_OUTPUT_STREAM(mem));
    const char *inflated = g_memory_output_stream_get_data(G_MEMORY_OUTPUT_STREAM(mem));
    const char *cut = strstr(text[0], "\"command\"");
    CU_ASSERT_TRUE(len[1] < len[0] / 4 && cut != NULL && n > (gsize) (cut - text[0]) &&
                   memcmp(inflated, text[0], (gsize) (cut - text[0])) == 0);
    /* the same bytes from run to run */
    CU_ASSERT_TRUE(len[1] == len[2] && memcmp(text[1], text[2], len[1]) == 0);
    g_autofree char *gz = g_build_filename(dir, "t.json.gz", NULL);
    g_autofree char *png = g_build_filename(dir, "t.png", NULL);
    g_autofree char *plot = g_strdup_printf("plot timeline %s -o %s", gz, png);
    SimparCliRun r = simpar_cli_run(plot);
    CU_ASSERT_EQUAL(r.status, 0);
    simpar_cli_run_clear(&r);
    for (guint i = 0; i < 3; i++)
        g_free(text[i]);
    simpar_test_tmpdir_remove(g_steal_pointer(&dir));
}

/* One grammar for sizes and lists: the spellings documented before and the new ones give the
 * same runs (collective sizes; --trace-ranks ranges and steps). */
static void
test_sizes_and_lists(void)
{
    const char *base = "collective --topology topologies/v100x64.xml --op allreduce --gpus 4 "
                       "--json --bytes ";
    const char *same[] = {"1M", "1m", "1Mi", "1MiB", "1048576", "1048576B"};
    g_autofree char *first = NULL;
    for (guint i = 0; i < G_N_ELEMENTS(same); i++) {
        g_autofree char *args = g_strconcat(base, same[i], NULL);
        SimparCliRun r = simpar_cli_run(args);
        CU_ASSERT_EQUAL(r.status, 0);
        if (first == NULL)
            first = g_strdup(r.out);
        CU_ASSERT_STRING_EQUAL(r.out, first);
        simpar_cli_run_clear(&r);
    }
    g_autofree char *dir = g_dir_make_tmp("simpar-cli-XXXXXX", NULL);
    g_autofree char *path = g_build_filename(dir, "t.json", NULL);
    const char *lists[] = {"0-2,6", "0..2,6", "6,0..2:+1,1", "0..6:+2,1"};
    const char *want[] = {"0 1 2 6", "0 1 2 6", "0 1 2 6", "0 1 2 4 6"};
    for (guint i = 0; i < G_N_ELEMENTS(lists); i++) {
        g_autofree char *args = g_strdup_printf(
            "--topology topologies/v100x64.xml --model tiny --layers 8 --tp-mode "
            "1d --tp 1 --pp 8 --gpus 8 --global-batch 16 --trace %s --trace-ranks %s",
            path, lists[i]);
        SimparCliRun r = simpar_cli_run(args);
        CU_ASSERT_EQUAL(r.status, 0);
        simpar_cli_run_clear(&r);
        g_autoptr(JsonParser) p = json_parser_new();
        CU_ASSERT_TRUE_FATAL(json_parser_load_from_file(p, path, NULL));
        JsonArray *ev = json_object_get_array_member(json_node_get_object(json_parser_get_root(p)),
                                                     "traceEvents");
        g_autoptr(GString) pids = g_string_new(NULL);
        for (guint k = 0; k < json_array_get_length(ev); k++) {
            JsonObject *e = json_array_get_object_element(ev, k);
            if (g_str_equal(json_object_get_string_member(e, "ph"), "M") &&
                g_str_equal(json_object_get_string_member(e, "name"), "process_name"))
                g_string_append_printf(pids, "%s%" G_GINT64_FORMAT, pids->len > 0 ? " " : "",
                                       json_object_get_int_member(e, "pid"));
        }
        if (!g_str_equal(pids->str, want[i]))
            printf("\n    --trace-ranks %s traced %s", lists[i], pids->str);
        CU_ASSERT_STRING_EQUAL(pids->str, want[i]);
    }
    g_remove(path);
    simpar_test_tmpdir_remove(g_steal_pointer(&dir));
}

/* Whether the flow end `e` lies inside a collective's complete event of its track. */
static gboolean
flow_in_collective(JsonArray *ev, JsonObject *e)
{
    double ts = json_object_get_double_member(e, "ts");
    for (guint i = 0; i < json_array_get_length(ev); i++) {
        JsonObject *x = json_array_get_object_element(ev, i);
        if (g_str_equal(json_object_get_string_member(x, "ph"), "X") &&
            g_str_equal(json_object_get_string_member(x, "cat"), "collective") &&
            json_object_get_int_member(x, "pid") == json_object_get_int_member(e, "pid") &&
            json_object_get_int_member(x, "tid") == json_object_get_int_member(e, "tid") &&
            ts >= json_object_get_double_member(x, "ts") - 1e-3 &&
            ts <= json_object_get_double_member(x, "ts") + json_object_get_double_member(x, "dur") +
                      1e-3)
            return TRUE;
    }
    return FALSE;
}

/* The members of a collective joined by flow arrows, each member to the next: every id has
 * one start and one end, the start no later than the end, both inside the collective's events;
 * arrows for the layers' tensor-parallel collectives and the step's data-parallel ones, with
 * `ranks` traced ("0-7": both, "4-7": the second tensor-parallel group's, "0,5": none, each
 * rank's peers being untraced; these two drew an end without its other or no arrow at all when
 * every rank looked its peers up in the first group). */
static void
trace_collective_flows(const char *ranks, gboolean want_layer, gboolean want_step)
{
    g_autofree char *dir = g_dir_make_tmp("simpar-cli-XXXXXX", NULL);
    g_autofree char *path = g_build_filename(dir, "t.json", NULL);
    g_autofree char *args = g_strdup_printf(
        "--topology topologies/v100x64.xml --model tiny --layers 2 --tp-mode 1d --tp 4 --dp 2 "
        "--gpus 8 --global-batch 16 --trace %s --trace-ranks %s",
        path, ranks);
    SimparCliRun r = simpar_cli_run(args);
    CU_ASSERT_EQUAL_FATAL(r.status, 0);
    simpar_cli_run_clear(&r);
    g_autoptr(JsonParser) p = json_parser_new();
    CU_ASSERT_TRUE_FATAL(json_parser_load_from_file(p, path, NULL));
    JsonArray *ev =
        json_object_get_array_member(json_node_get_object(json_parser_get_root(p)), "traceEvents");
    g_autoptr(GHashTable) starts = g_hash_table_new(g_str_hash, g_str_equal);
    g_autoptr(GHashTable) ends = g_hash_table_new(g_str_hash, g_str_equal);
    guint layer = 0, step = 0, inside = 0, n = 0;
    for (guint i = 0; i < json_array_get_length(ev); i++) {
        JsonObject *e = json_array_get_object_element(ev, i);
        const char *ph = json_object_get_string_member(e, "ph");
        if ((!g_str_equal(ph, "s") && !g_str_equal(ph, "f")) ||
            !g_str_equal(json_object_get_string_member(e, "cat"), "collective"))
            continue;
        const char *id = json_object_get_string_member(e, "id");
        GHashTable *set = g_str_equal(ph, "s") ? starts : ends;
        CU_ASSERT_FALSE(g_hash_table_contains(set, id));
        g_hash_table_insert(set, (gpointer) id, e);
        inside += flow_in_collective(ev, e), n++;
        if (g_str_equal(ph, "s"))
            layer += strstr(id, ".l") != NULL, step += strstr(id, ".s") != NULL;
    }
    if ((layer > 0) != want_layer || (step > 0) != want_step ||
        g_hash_table_size(starts) != g_hash_table_size(ends))
        printf("\n    --trace-ranks %s: %u layer and %u step arrows, %u starts, %u ends", ranks,
               layer, step, g_hash_table_size(starts), g_hash_table_size(ends));
    CU_ASSERT_TRUE((layer > 0) == want_layer && (step > 0) == want_step);
    CU_ASSERT_EQUAL(inside, n);
    CU_ASSERT_EQUAL(g_hash_table_size(starts), g_hash_table_size(ends));
    GHashTableIter it;
    gpointer id, s;
    g_hash_table_iter_init(&it, starts);
    while (g_hash_table_iter_next(&it, &id, &s)) {
        JsonObject *f = g_hash_table_lookup(ends, id);
        CU_ASSERT_PTR_NOT_NULL_FATAL(f);
        CU_ASSERT_TRUE(json_object_get_double_member(s, "ts") <=
                       json_object_get_double_member(f, "ts"));
    }
    g_remove(path);
    simpar_test_tmpdir_remove(g_steal_pointer(&dir));
}

static void
test_predict_trace_collective_flows(void)
{
    trace_collective_flows("0-7", TRUE, TRUE);
    trace_collective_flows("4-7", TRUE, FALSE);
    trace_collective_flows("0,5", FALSE, FALSE);
}

/* A trace past the warning size ($SIMPAR_TRACE_WARN_MIB here, 256 MiB by default): one
 * warning on stderr with the expected size and how to shrink it, the run as without it; the
 * estimate within a factor of two of the file written. */
static void
test_predict_trace_warning(void)
{
    g_autofree char *dir = g_dir_make_tmp("simpar-cli-XXXXXX", NULL);
    const char *names[] = {"t.json", "t.json.gz", "quiet.json"};
    const char *warn_mib[] = {"0.01", "0.01", NULL};
    for (guint i = 0; i < G_N_ELEMENTS(names); i++) {
        g_autofree char *path = g_build_filename(dir, names[i], NULL);
        g_autofree char *args = g_strdup_printf(
            "--topology topologies/v100x64.xml --model tiny --layers 4 --tp-mode 1d --tp 1 --pp 4 "
            "--gpus 4 --global-batch 64 --trace %s",
            path);
        if (warn_mib[i] != NULL)
            g_setenv("SIMPAR_TRACE_WARN_MIB", warn_mib[i], TRUE);
        SimparCliRun r = simpar_cli_run(args);
        g_unsetenv("SIMPAR_TRACE_WARN_MIB");
        CU_ASSERT_EQUAL(r.status, 0);
        const char *w = strstr(r.err, "simpar: warning: the trace will be large: about ");
        if (warn_mib[i] == NULL) {
            CU_ASSERT_STRING_EQUAL(r.err, "");
        } else {
            CU_ASSERT_PTR_NOT_NULL_FATAL(w);
            CU_ASSERT_PTR_NULL(strstr(w + 1, "simpar: warning:")); /* once */
            CU_ASSERT_PTR_NOT_NULL(strstr(w, "--trace-ranks"));
            gboolean gz = g_str_has_suffix(names[i], ".gz");
            CU_ASSERT_EQUAL(strstr(w, "before gzip") != NULL, gz);
            CU_ASSERT_EQUAL(strstr(w, "--trace FILE.json.gz") != NULL, !gz);
            GStatBuf st;
            double mib = g_ascii_strtod(w + strlen("simpar: warning: the trace will be large: "
                                                   "about "),
                                        NULL);
            if (!gz && g_stat(path, &st) == 0) {
                double real = (double) st.st_size / (1 << 20);
                CU_ASSERT_TRUE(mib > real / 2 && mib < real * 2);
                if (!(mib > real / 2 && mib < real * 2))
                    printf("\n    estimated %.3g MiB, wrote %.3g MiB", mib, real);
            }
        }
        simpar_cli_run_clear(&r);
    }
    simpar_test_tmpdir_remove(g_steal_pointer(&dir));
}

/* Multi-token prediction on every backend: the formula replays such a step (bit for bit the
 * analytic backend's), SimGrid within 2%; the modules lengthen the step on all three and the
 * parameters are reported apart, the main model's 2 V h + L layer + h's LayerNorm and the
 * module's layer + eh_proj 2h^2 + three LayerNorms (tiny: h = 64, f = 256, V = 1024, L = 8). */
static void
test_mtp_backends(void)
{
    const char *backends[] = {"analytic", "formula", "simgrid"};
    double step[3][2];
    for (guint b = 0; b < G_N_ELEMENTS(backends); b++)
        for (guint n = 0; n <= 1; n++) {
            g_autofree char *args = g_strdup_printf(
                "--topology topologies/v100x64.xml --model tiny --layers 8 --tp-mode 1d --tp 2 "
                "--pp 4 --gpus 8 --dp 1 --global-batch 32 --mtp-layers %u --backend %s --json",
                n, backends[b]);
            g_autoptr(JsonParser) p = json_parser_new();
            JsonArray *rows = cli_json_rows(p, args);
            CU_ASSERT_EQUAL_FATAL(json_array_get_length(rows), 1);
            JsonObject *row = json_array_get_object_element(rows, 0);
            step[b][n] = json_object_get_double_member(row, "step_time_s");
            JsonObject *dims = json_object_get_object_member(row, "model_dims");
            CU_ASSERT_EQUAL(json_object_has_member(dims, "mtp"), n == 1);
            if (n == 0)
                continue;
            JsonObject *mtp = json_object_get_object_member(dims, "mtp");
            double h = 64, f = 256, V = 1024;
            double layer = 4 * h * h + 2 * h * f + 3 * h + h + f + h + 4 * h;
            CU_ASSERT_EQUAL(json_object_get_int_member(mtp, "layers"), 1);
            CU_ASSERT_EQUAL(json_object_get_int_member(mtp, "main_params"),
                            (gint64) (2 * V * h + 8 * layer + 2 * h));
            CU_ASSERT_EQUAL(json_object_get_int_member(mtp, "mtp_params"),
                            (gint64) (layer + 2 * h * h + 3 * 2 * h));
            CU_ASSERT_EQUAL(
                json_object_get_int_member(mtp, "stored_params"),
                (gint64) (2 * V * h + 9 * layer + 2 * h + 2 * h * h + 6 * h + 2 * V * h));
        }
    printf("\n    step without / with one module: analytic %.9g / %.9g s, formula %.9g / %.9g s, "
           "simgrid %.9g / %.9g s",
           step[0][0], step[0][1], step[1][0], step[1][1], step[2][0], step[2][1]);
    for (guint n = 0; n <= 1; n++) {
        CU_ASSERT_EQUAL(step[1][n], step[0][n]);
        CU_ASSERT_DOUBLE_EQUAL(step[2][n] / step[0][n], 1, 0.02);
    }
    for (guint b = 0; b < G_N_ELEMENTS(backends); b++)
        CU_ASSERT_TRUE(step[b][1] > step[b][0]);
    SimparCliRun r = simpar_cli_run("--topology topologies/v100x64.xml --model tiny --layers 8 "
                                    "--tp-mode 1d --tp 2 --pp 4 --gpus 8 --dp 1 --global-batch 32 "
                                    "--mtp-layers 1 --backend analytic");
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, " mtp=1 "));
    CU_ASSERT_PTR_NOT_NULL(
        strstr(r.out, "parameters: 531072 main model + 58560 multi-token prediction = 589632"));
    simpar_cli_run_clear(&r);
}

static CU_TestInfo cli_tests[] = {
    {"--trace T.json.gz writes the trace gzip'ed; plot timeline reads it", test_predict_trace_gzip},
    {"multi-token prediction: the formula replays it as the analytic backend, SimGrid within 2%; "
     "parameters apart",
     test_mtp_backends},
    {"sizes and lists: the old spellings and the new give the same runs", test_sizes_and_lists},
    {"the members of a collective joined by flow arrows in the trace, each to the next",
     test_predict_trace_collective_flows},
    {"a trace past the warning size: one warning with its expected size and how to shrink it",
     test_predict_trace_warning},
    {"a pipeline transfer is drawn as it ran at both ends, its wait apart, a flow arrow joining "
     "them; the trace names its run; its memory counter peaks at the table's memory",
     test_predict_trace_transfers},
    {"a configuration over its GPU memory is predicted, the shortfall named", test_over_capacity},
    {"simpar-exec past the memory it may have: one error naming the bytes", test_exec_memory},
    {"a platform file replaced while a sweep runs: one error, no output", test_sweep_input_changed},
    {"output that cannot be written to stdout is an error in both binaries", test_lost_output},
    {"a sweep with descriptors 0-2 closed keeps its rows", test_closed_descriptors},
    {"every rank of a 256-GPU step runs in 3 GB of address space", test_address_space},
    {"--version prints the version; --help says so; usage lines and bare simpar name the commands",
     test_version},
    {"GPU counts a mode cannot use are refused with the valid ones", test_grids},
    {"sizes not divisible by the grid are refused naming flag and divisor", test_divisibility},
    {"zero, negative, absurd and malformed values and unknown flags are refused", test_values},
    {"missing, malformed and unusable platform files are refused", test_topology},
    {"platforms without GPU figures or GPU host names are refused", test_platform_content},
    {"unusable plans, models that do not fit and bad predict flags are refused",
     test_predict_refusals},
    {"the main job predicts every mode on v100x64.xml", test_main_job},
    {"predict JSON has the documented fields and periodic replay equals every layer",
     test_predict_json},
    {"--json output parses and carries the summary numbers", test_json},
    {"the same prediction twice gives the same output", test_predict_deterministic},
    {"--trace writes a Chrome trace with a track per GPU stream; --trace-ranks picks the ranks",
     test_predict_trace},
    {"the main job's trace holds the collectives of every layer with schedule's bytes",
     test_predict_trace_layers},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"simpar command line", NULL, NULL, NULL, NULL, cli_tests},
    CU_SUITE_INFO_NULL,
};

int
main(void)
{
    return simpar_test_main(suites);
}
