/* test-published.c - `simpar validate --published SET`: every set of published whole-step
 * times and throughputs (topologies/published.ini) predicted as a user would, each case's
 * published figure as the data file gives it, its prediction the one simpar gives that job by
 * hand, and unknown sets refused. The binary's path comes from SIMPAR_BIN; the working
 * directory is the source root. */
#include "cli-run-json.h"
#include "cli.h"
#include "simpar-test.h"
#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <math.h>
#include <string.h>

SIMPAR_TEST_SUITE_TMPDIR("simpar-published-XXXXXX")

/* Runs simpar, which must succeed; its stdout parsed as JSON (or NULL when `json` is FALSE). */
static JsonNode *
run_ok(const char *args, gboolean json)
{
    return simpar_cli_run_ok(args, json); /* (transfer full) */
}

/* The step simpar gives `args` on a platform written by `topology` (simpar topology's
 * options), by hand; its memory per GPU in *memory_gib where not NULL. */
static double
step_by_hand(const char *topology, const char *args, double *memory_gib)
{
    g_autofree char *xml = tmp_path("by-hand.xml");
    g_autofree char *topo = g_strdup_printf("topology %s -o %s", topology, xml);
    g_autoptr(JsonNode) none = run_ok(topo, FALSE);
    g_autofree char *cmd = g_strdup_printf("--topology %s --json --backend formula %s", xml, args);
    g_autoptr(JsonNode) rows = run_ok(cmd, TRUE);
    g_remove(xml);
    JsonObject *row = json_array_get_object_element(json_node_get_array(rows), 0);
    if (memory_gib != NULL)
        *memory_gib = json_object_get_double_member(row, "memory_per_gpu_gib");
    return json_object_get_double_member(row, "step_time_s");
}

/* The published table: every case's published time as the data file gives it, its prediction
 * the one simpar gives that job run by hand, and unknown sets refused. */
static void
test_published(void)
{
    g_autoptr(JsonNode) root = run_ok("validate --published korthikanti --json", TRUE);
    JsonObject *o = json_node_get_object(root);
    JsonArray *cases = json_object_get_array_member(o, "cases");
    const double measured[] = {1.42, 1.10, 18.13, 13.75, 49.05, 37.83, 94.42, 71.49};
    CU_ASSERT_EQUAL_FATAL(json_array_get_length(cases), G_N_ELEMENTS(measured));
    for (guint i = 0; i < G_N_ELEMENTS(measured); i++) {
        JsonObject *c = json_array_get_object_element(cases, i);
        double m = json_object_get_double_member(c, "measured_s");
        double p = json_object_get_double_member(c, "predicted_s");
        CU_ASSERT_DOUBLE_EQUAL(m, measured[i], 1e-12);
        CU_ASSERT_TRUE(p > 0.5 * m && p < 2 * m);
        CU_ASSERT_DOUBLE_EQUAL(json_object_get_double_member(c, "error"), p / m - 1, 1e-12);
    }
    /* the 22B case by hand: the same prediction, bit for bit */
    JsonObject *first = json_array_get_object_element(cases, 0);
    double memory = 0;
    CU_ASSERT_EQUAL(step_by_hand("--preset dgx-a100 --nodes 1",
                                 json_object_get_string_member(first, "args"), &memory),
                    json_object_get_double_member(first, "predicted_s"));
    /* its memory the prediction's, against the A100's 80 GB */
    CU_ASSERT_EQUAL(json_object_get_double_member(first, "memory_per_gpu_gib"), memory);
    CU_ASSERT_DOUBLE_EQUAL(json_object_get_double_member(first, "capacity_gib"), 80.0, 1e-9);
    CU_ASSERT_TRUE(simpar_cli_refused("validate --published narayanan", 2,
                                      "--published narayanan: unknown (valid: korthikanti, "
                                      "megatron-bridge, megatron-bridge-gb200, "
                                      "megatron-bridge-gb300)"));
    CU_ASSERT_TRUE(simpar_cli_refused("validate --published korthikanti --topology x.xml", 2,
                                      "drop --measured, --topology"));
    CU_ASSERT_TRUE(simpar_cli_refused("validate --published korthikanti --backend ns3", 2,
                                      "--backend ns3: unknown"));
}

/* A published throughput as a table gives it: tokens/s/GPU, global batch, sequence, GPUs. */
typedef struct {
    double tokens, batch, seq, gpus;
} PublishedRate;

/* `set`'s cases (--json), each held against `want`: its GPUs and published throughput, its
 * measured step the time that throughput means (B s / (tokens/s/GPU x GPUs)), its prediction
 * within 2x. *root keeps the cases alive. */
static JsonArray *
published_rates(const char *set, const PublishedRate *want, guint n, JsonNode **root)
{
    g_autofree char *cmd = g_strdup_printf("validate --published %s --json", set);
    *root = run_ok(cmd, TRUE);
    JsonArray *cases = json_object_get_array_member(json_node_get_object(*root), "cases");
    CU_ASSERT_EQUAL_FATAL(json_array_get_length(cases), n);
    for (guint i = 0; i < n; i++) {
        JsonObject *c = json_array_get_object_element(cases, i);
        CU_ASSERT_EQUAL(json_object_get_int_member(c, "gpus"), (gint64) want[i].gpus);
        CU_ASSERT_EQUAL(json_object_get_double_member(c, "tokens_per_gpu_s"), want[i].tokens);
        double m = json_object_get_double_member(c, "measured_s");
        CU_ASSERT_DOUBLE_EQUAL(m, want[i].batch * want[i].seq / (want[i].tokens * want[i].gpus),
                               1e-12);
        double p = json_object_get_double_member(c, "predicted_s");
        CU_ASSERT_TRUE(p > 0.5 * m && p < 2 * m);
    }
    return cases;
}

/* A table of throughputs (megatron-bridge: tokens/s/GPU): each case held as the step time its
 * throughput means on its GPUs, B s / (tokens/s/GPU x GPUs), the published figure passed on. */
static void
test_published_throughput(void)
{
    const PublishedRate want[] = {{326, 1536, 8192, 1024},
                                  {1664, 256, 8192, 64},
                                  {8826, 1024, 4096, 16},
                                  {1712, 8192, 4096, 256}};
    g_autoptr(JsonNode) root = NULL;
    JsonArray *cases = published_rates("megatron-bridge", want, G_N_ELEMENTS(want), &root);
    /* the text shows each case's throughput, published and as predicted (B s / (step x GPUs)) */
    JsonObject *c70 = json_array_get_object_element(cases, 1);
    g_autofree char *want70 = g_strdup_printf(
        "1664, %.0f ", 256.0 * 8192 / (json_object_get_double_member(c70, "predicted_s") * 64));
    SimparCliRun r = simpar_cli_run("validate --published megatron-bridge");
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "tokens/s/GPU (published, predicted)"));
    const char *row = strstr(r.out, "bridge Llama3-70B FP8");
    CU_ASSERT_PTR_NOT_NULL_FATAL(row);
    CU_ASSERT_PTR_NOT_NULL(strstr(row, want70));
    simpar_cli_run_clear(&r);
    /* Qwen3-30B-A3B runs Hybrid-EP (--moe-flex-backend hybridep): its step is the one of DeepEP's
     * hops alone plus, for each of its 48 layers' forwards in each of 64 micro-batches, the
     * all-gather of the 16 GPUs' routing maps (4096 tokens x 128 experts, a byte each: 8 MiB,
     * nccl-tests' size) at simpar collective's time on the same 2 DGX H100, to 1e-9 */
    JsonObject *q30 = json_array_get_object_element(cases, 2);
    const char *args = json_object_get_string_member(q30, "args");
    CU_ASSERT_PTR_NOT_NULL_FATAL(strstr(args, " --moe-flex-backend hybridep"));
    g_autofree char *deep = g_strdup(args);
    char *flag = strstr(deep, " --moe-flex-backend hybridep");
    memmove(flag, flag + strlen(" --moe-flex-backend hybridep"),
            strlen(flag + strlen(" --moe-flex-backend hybridep")) + 1);
    double with = json_object_get_double_member(q30, "predicted_s");
    double without = step_by_hand("--preset dgx-h100 --nodes 2", deep, NULL);
    g_autofree char *xml = tmp_path("h100x16.xml");
    g_autofree char *topo = g_strdup_printf("topology --preset dgx-h100 --nodes 2 -o %s", xml);
    g_autoptr(JsonNode) none = run_ok(topo, FALSE);
    g_autofree char *coll = g_strdup_printf(
        "collective --topology %s --op allgather --gpus 16 --bytes 8388608 --json", xml);
    g_autoptr(JsonNode) ag = run_ok(coll, TRUE);
    double t = json_object_get_double_member(
        json_array_get_object_element(json_node_get_array(ag), 0), "time_s");
    g_remove(xml);
    printf("\n    Qwen3-30B-A3B: %.6f s with Hybrid-EP's all-gathers, %.6f without, 48 x 64 x "
           "%.3f us",
           with, without, t * 1e6);
    CU_ASSERT(fabs(with - without - 48 * 64 * t) <= 1e-9 * with);
}

/* The GB200 table (megatron-bridge-gb200): each case's throughput held as its step time on its
 * GPUs, its prediction within 2x; the 256-GPU cases run on 4 racks of 64 GPUs (rack_gpus): the
 * Llama 3.1 405B case is the prediction by hand on `simpar topology --preset gb200-nvl72 --racks
 * 4 --rack-gpus 64`, bit for bit, and not the one on the first 256 GPUs of 4 full racks of 72
 * (its data-parallel groups of 16 would then straddle racks). */
static void
test_published_gb200(void)
{
    const PublishedRate want[] = {{843, 1536, 8192, 256},  {783, 1536, 8192, 256},
                                  {3712, 256, 8192, 64},   {39936, 512, 4096, 8},
                                  {7280, 8192, 4096, 256}, {4912, 4096, 4096, 256}};
    g_autoptr(JsonNode) root = NULL;
    JsonArray *cases = published_rates("megatron-bridge-gb200", want, G_N_ELEMENTS(want), &root);
    JsonObject *first = json_array_get_object_element(cases, 0);
    const char *args = json_object_get_string_member(first, "args");
    double p = json_object_get_double_member(first, "predicted_s");
    double racks64 = step_by_hand("--preset gb200-nvl72 --racks 4 --rack-gpus 64", args, NULL);
    double racks72 = step_by_hand("--preset gb200-nvl72 --racks 4", args, NULL);
    printf("\n    Llama 3.1 405B on 256 GB200: %.6f s in the set, %.6f on racks of 64, %.6f on "
           "racks of 72 ",
           p, racks64, racks72);
    CU_ASSERT_EQUAL(p, racks64);
    CU_ASSERT_NOT_EQUAL(p, racks72);
    CU_ASSERT_PTR_NOT_NULL(strstr(json_object_get_string_member(first, "split"),
                                  " v=4 accounted=embedding+loss m=384 "));
    /* memory: every case ran, and simpar says each fits (Qwen3-30B-A3B at micro-batch 4 under
     * the merged 1F1B too: one micro-batch's activations and a layer, not two micro-batches') */
    guint over = 0;
    for (guint i = 0; i < G_N_ELEMENTS(want); i++) {
        JsonObject *c = json_array_get_object_element(cases, i);
        over += json_object_get_double_member(c, "memory_per_gpu_gib") >
                json_object_get_double_member(c, "capacity_gib");
    }
    CU_ASSERT_EQUAL(over, 0);
    SimparCliRun r = simpar_cli_run("validate --published megatron-bridge-gb200");
    CU_ASSERT_EQUAL(r.status, 0);
    g_autofree char *line =
        g_strdup_printf("memory: %u of %u cases over the GPU's capacity as simpar counts it", over,
                        (guint) G_N_ELEMENTS(want));
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, line));
    const char *q30 = strstr(r.out, "bridge GB200 Qwen3-30B-A3B MXFP8");
    CU_ASSERT_PTR_NOT_NULL_FATAL(q30);
    CU_ASSERT_PTR_NULL(strstr(r.out, " (over)"));
    simpar_cli_run_clear(&r);
}

/* The GB300 table (megatron-bridge-gb300): each case's throughput held as its step time; the
 * Qwen3-30B-A3B case is its job by hand on `simpar topology --preset gb300-nvl72 --racks 1
 * --rack-gpus 8`, bit for bit, on GPUs of 279 GB. Inside one NVLink domain the GB300's figures
 * are the GB200's (the same peaks, NVLink and GEMM data; only its NICs and memory differ), so the
 * same job takes the same time on a GB200 rack, where its 244 GiB at micro-batch 8 would not fit
 * (the GB200 recipe runs micro-batch 4). */
static void
test_published_gb300(void)
{
    const PublishedRate want[] = {{1048, 1536, 8192, 256},
                                  {952, 1536, 8192, 256},
                                  {44544, 512, 4096, 8},
                                  {8816, 8192, 4096, 256},
                                  {6288, 4096, 4096, 256}};
    g_autoptr(JsonNode) root = NULL;
    JsonArray *cases = published_rates("megatron-bridge-gb300", want, G_N_ELEMENTS(want), &root);
    JsonObject *q30 = json_array_get_object_element(cases, 2);
    const char *args = json_object_get_string_member(q30, "args");
    double mem300, mem200;
    double gb300 = step_by_hand("--preset gb300-nvl72 --racks 1 --rack-gpus 8", args, &mem300);
    double gb200 = step_by_hand("--preset gb200-nvl72 --racks 1 --rack-gpus 8", args, &mem200);
    printf("\n    Qwen3-30B-A3B MXFP8 at micro-batch 8 on 8 GB300: %.6f s (%.2f GiB), on 8 GB200: "
           "%.6f s (%.2f GiB) ",
           gb300, mem300, gb200, mem200);
    CU_ASSERT_EQUAL(json_object_get_double_member(q30, "predicted_s"), gb300);
    CU_ASSERT_DOUBLE_EQUAL(json_object_get_double_member(q30, "capacity_gib"),
                           279e9 / (1024.0 * 1024 * 1024), 1e-9);
    CU_ASSERT_EQUAL(gb300, gb200);
    CU_ASSERT_DOUBLE_EQUAL(mem300, mem200, 1e-9); /* the same job holds the same bytes */
    CU_ASSERT(mem300 < 279e9 / (1024.0 * 1024 * 1024) && mem300 > 186e9 / (1024.0 * 1024 * 1024));
    /* the split shows the recipe's layout */
    JsonObject *ds = json_array_get_object_element(cases, 4);
    CU_ASSERT_PTR_NOT_NULL(strstr(json_object_get_string_member(ds, "split"),
                                  "interleaved v=8 merged-1F1B layout=Et*4|(t*4|)*14tmL m=32 "));
    for (guint i = 0; i < G_N_ELEMENTS(want); i++) { /* each fits the GB300's 279 GB */
        JsonObject *c = json_array_get_object_element(cases, i);
        CU_ASSERT(json_object_get_double_member(c, "memory_per_gpu_gib") <
                  json_object_get_double_member(c, "capacity_gib"));
    }
}

/* A case's run that printed no prediction row (nothing, a cut array, an empty one, a row
 * without its step) is refused naming the case and what the run said, never read as zeros; a
 * whole row is read. */
static void
test_published_row(void)
{
    const char *bad[] = {NULL,
                         "",
                         "[]",
                         "{}",
                         "[{}]",
                         "[3]",
                         "[{\"step_time_s\": 1.5, \"split\": \"T=1\"",
                         "[{\"step_time_s\": 0, \"split\": \"T=1\", \"gpus\": 8}]"};
    for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
        g_autoptr(JsonParser) parser = json_parser_new();
        g_autoptr(GError) error = NULL;
        CU_ASSERT_PTR_NULL(simpar_published_row(parser, "bridge X", bad[i], "killed\n", &error));
        CU_ASSERT_PTR_NOT_NULL_FATAL(error);
        CU_ASSERT_PTR_NOT_NULL(strstr(error->message, "case \"bridge X\" gave no prediction"));
        CU_ASSERT_PTR_NOT_NULL(strstr(error->message, ": killed"));
    }
    const char *good = "[{\"step_time_s\": 1.5, \"split\": \"T=1\", \"gpus\": 8, "
                       "\"memory_per_gpu_gib\": 12.5, \"memory\": {\"capacity_gib\": 80}, "
                       "\"config\": {\"global_batch\": 16}, \"model_dims\": {\"seq\": 2048}}]";
    g_autoptr(JsonParser) parser = json_parser_new();
    JsonObject *row = simpar_published_row(parser, "bridge X", good, "", NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(row);
    CU_ASSERT_EQUAL(json_object_get_double_member(row, "step_time_s"), 1.5);
}

static CU_TestInfo published_tests[] = {
    {"the published table: each case's time as published, its prediction as by hand",
     test_published},
    {"a case's run that printed no prediction row is refused, never read as zeros",
     test_published_row},
    {"a published table of throughputs: each case's step time as its tokens/s/GPU mean it",
     test_published_throughput},
    {"the GB200 table: its cases on racks of 64 GPUs, the 405B case's prediction as by hand",
     test_published_gb200},
    {"the GB300 table: its cases' throughputs, the Qwen3-30B-A3B case as by hand on GB300 racks",
     test_published_gb300},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"published", suite_init, suite_clean, NULL, NULL, published_tests},
    CU_SUITE_INFO_NULL,
};

int
main(void)
{
    return simpar_test_main(suites);
}
