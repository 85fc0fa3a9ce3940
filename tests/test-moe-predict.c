/* test-moe-predict.c - whole steps of mixture-of-experts models predicted by the simpar binary
 * (SIMPAR_BIN): the breakdown names the MoE block's parts, the expert-parallel all-to-alls sit
 * on their own axis, and the load-imbalance figure slows the experts as it should. */
#include "cli-run.h"
#include "simpar-test.h"
#include <json-glib/json-glib.h>
#include <math.h>
#include <string.h>

#define H100 "topologies/dgx-h100x64.xml"
/* a small MoE model on 64 H100s: 16 experts of width 1024, top-2, EP 8 over the data-parallel
 * GPUs of one node */
#define MOE_JOB                                                                                    \
    "--topology " H100 " --json --model llama3-8b --layers 4 --seq 1024 --experts 16 --topk 2 "    \
    "--moe-ffn 1024 --tp-mode 1d --tp 1 --pp 2 --dp 32 --ep 8 --global-batch 128"

/* The row of the one-mode JSON array simpar printed; *parser keeps it alive. */
static JsonObject *
moe_step(const char *args, JsonParser **parser)
{
    SimparCliRun r = simpar_cli_run(args);
    if (r.status != 0)
        printf("\n    simpar %s -> %d: %s", args, r.status, r.err);
    g_assert(r.status == 0);
    *parser = json_parser_new();
    g_assert(json_parser_load_from_data(*parser, r.out, -1, NULL));
    simpar_cli_run_clear(&r);
    JsonNode *root = json_parser_get_root(*parser);
    JsonArray *rows = JSON_NODE_HOLDS_ARRAY(root) ? json_node_get_array(root) : NULL;
    return rows != NULL ? json_array_get_object_element(rows, 0) : json_node_get_object(root);
}

static double
moe_member(JsonObject *o, const char *key)
{
    return json_object_has_member(o, key) ? json_object_get_double_member(o, key) : -1;
}

static void
test_an_moe_step_names_dispatch_combine_and_expert_gemms(void)
{
    g_autoptr(JsonParser) p = NULL;
    JsonObject *step = moe_step(MOE_JOB, &p);
    double dispatch = moe_member(step, "moe_dispatch_s"),
           combine = moe_member(step, "moe_combine_s");
    double experts = moe_member(step, "moe_experts_s");
    CU_ASSERT(dispatch > 0 && combine > 0 && experts > 0);
    /* the all-to-alls move the same rows both ways: equal within the network's rounding */
    CU_ASSERT(fabs(dispatch - combine) <= 1e-3 * dispatch);
    JsonArray *axes = json_object_get_array_member(step, "exposed_comm_by_axis");
    gboolean ep = FALSE;
    for (guint i = 0; i < json_array_get_length(axes); i++) {
        JsonObject *a = json_array_get_object_element(axes, i);
        ep = ep || g_str_equal(json_object_get_string_member(a, "axis"), "ep");
    }
    CU_ASSERT(ep);
}

/* The text's step line counts the expert-parallel all-to-alls among the layers' exposed
 * communication and says so; a dense model's line speaks of tensor parallelism alone. */
static void
test_the_step_line_names_expert_parallel_exposure(void)
{
    const char *dense = "--topology " H100 " --model llama3-8b --layers 4 --seq 1024 --tp-mode 1d "
                        "--tp 1 --pp 2 --dp 32 --global-batch 128";
    g_auto(GStrv) parts = g_strsplit(MOE_JOB, "--json ", 2);
    g_autofree char *moe = g_strjoinv("", parts); /* the text table */
    SimparCliRun r = simpar_cli_run(moe), d = simpar_cli_run(dense);
    CU_ASSERT(r.status == 0 && d.status == 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "tensor- and expert-parallel exposed "));
    CU_ASSERT_PTR_NOT_NULL(strstr(d.out, ", tensor-parallel exposed "));
    CU_ASSERT_PTR_NULL(strstr(d.out, "expert-parallel"));
    simpar_cli_run_clear(&r);
    simpar_cli_run_clear(&d);
}

static void
test_a_dense_model_has_no_moe_figures(void)
{
    g_autoptr(JsonParser) p = NULL;
    JsonObject *step = moe_step("--topology " H100 " --json --model llama3-8b --layers 4 --seq "
                                "1024 --tp-mode 1d --tp 1 --pp 2 --dp 32 --global-batch 128",
                                &p);
    CU_ASSERT(!json_object_has_member(step, "moe_experts_s"));
    CU_ASSERT(!json_object_has_member(step, "moe_dispatch_s"));
}

static void
test_twice_the_imbalance_doubles_the_expert_gemms_rows(void)
{
    g_autoptr(JsonParser) p1 = NULL, p2 = NULL;
    double e1 = moe_member(moe_step(MOE_JOB, &p1), "moe_experts_s");
    double e2 = moe_member(moe_step(MOE_JOB " --imbalance 2", &p2), "moe_experts_s");
    /* the busiest GPU's grouped GEMMs get twice the rows: between 1.5x and 2.1x the time (the
     * GEMMs get more efficient as they grow) */
    CU_ASSERT(e2 > 1.5 * e1 && e2 < 2.1 * e1);
}

static void
test_an_ep_group_across_nodes_is_exposed_between_nodes(void)
{
    g_autoptr(JsonParser) p = NULL;
    /* EP 16 over two nodes of 8 */
    JsonObject *step =
        moe_step("--topology " H100 " --json --model llama3-8b --layers 4 --seq 1024 --experts "
                 "16 --topk 2 --moe-ffn 1024 --tp-mode 1d --tp 1 --pp 2 --dp 32 --ep 16 "
                 "--global-batch 128",
                 &p);
    JsonArray *axes = json_object_get_array_member(step, "exposed_comm_by_axis");
    gboolean inter = FALSE;
    for (guint i = 0; i < json_array_get_length(axes); i++) {
        JsonObject *a = json_array_get_object_element(axes, i);
        inter = inter || (g_str_equal(json_object_get_string_member(a, "axis"), "ep") &&
                          g_str_equal(json_object_get_string_member(a, "scope"), "inter-node"));
    }
    CU_ASSERT(inter);
}

/* With EP 16 the experts' gradients reduce over expert-data-parallel pairs (T C D) / EP = 2 GPUs
 * 16 apart (models/step.c), which the fold of the data-parallel ring merges into one rank: the
 * SimGrid backend still simulates the step on fewer alike ranks, timing those reductions at their
 * closed form, and gives the step that every rank simulated gives (--tp-slices all turns the
 * fold off). */
static void
test_the_experts_reductions_leave_the_step_on_alike_ranks(void)
{
    g_autoptr(JsonParser) p1 = NULL, p2 = NULL;
    const char *job = "--topology " H100 " --json --model llama3-8b --layers 4 --seq 1024 "
                      "--experts 16 --topk 2 --moe-ffn 1024 --tp-mode 1d --tp 1 --pp 2 --dp 32 "
                      "--ep 16 --global-batch 128";
    g_autofree char *all = g_strconcat(job, " --tp-slices all", NULL);
    JsonObject *folded = moe_step(job, &p1);
    JsonObject *every = moe_step(all, &p2);
    double a = moe_member(folded, "step_time_s"), b = moe_member(every, "step_time_s");
    double ranks = moe_member(folded, "step_ranks"), n = moe_member(every, "step_ranks");
    printf("\n    step %.12g s on %.0f ranks, %.12g s on %.0f", a, ranks, b, n);
    CU_ASSERT(ranks > 0 && ranks < 64);
    CU_ASSERT_DOUBLE_EQUAL(n, 64, 0);
    CU_ASSERT(b > 0 && fabs(a - b) <= 1e-9 * b);
}

/* --order places the expert-parallel groups (Megatron-Core's one order string for both
 * numberings): ep inside dp (the default) keeps EP 8 in a node of 8, ep after dp spreads it over
 * 8 nodes, whose all-to-alls then take longer. */
static void
test_order_places_the_expert_parallel_groups(void)
{
    g_autoptr(JsonParser) p1 = NULL, p2 = NULL;
    JsonObject *in = moe_step(MOE_JOB, &p1);
    JsonObject *out = moe_step(MOE_JOB " --order tp,dp,ep,pp", &p2);
    const char *a = json_object_get_string_member(in, "placement");
    const char *b = json_object_get_string_member(out, "placement");
    printf("\n    %s | %s", a, b);
    CU_ASSERT_PTR_NOT_NULL(strstr(a, "ep intra-node"));
    CU_ASSERT_PTR_NOT_NULL(strstr(b, "ep inter-node"));
    CU_ASSERT(moe_member(out, "moe_dispatch_s") > 2 * moe_member(in, "moe_dispatch_s"));
}

/* Mixtral 8x7B on 16 V100s (4 a node) beside 2-D, 2.5-D and 3-D attention, EP 4: every backend
 * predicts the step and times the layer's all-to-alls between the grid's blocks and the MoE
 * block's tokens (models/tp-moe.c); the formula backend gives the analytic replay's step and
 * figures, as on every plan (test-formula.c); a 1-D job has none of them. */
static void
test_grid_modes_time_the_all_to_alls_to_the_moe_block(void)
{
    const char *plans[] = {"--tp-mode 2d --tp 4 --dp 4 --micro-batch 2",
                           "--tp-mode 2.5d --tp 8 --depth 2 --dp 2 --micro-batch 4",
                           "--tp-mode 3d --tp 8 --dp 2 --micro-batch 4",
                           "--tp-mode 1d --tp 4 --sp --dp 4 --micro-batch 2"};
    const char *backends[] = {"simgrid", "analytic", "formula"};
    for (guint i = 0; i < G_N_ELEMENTS(plans); i++) {
        double step[3], moved[3];
        for (guint b = 0; b < 3; b++) {
            g_autofree char *args = g_strdup_printf(
                "--topology topologies/v100x64.xml --gpus 16 --model mixtral-8x7b --dtype fp16 "
                "--layers 2 --ep 4 --global-batch 8 --json %s --backend %s",
                plans[i], backends[b]);
            g_autoptr(JsonParser) p = NULL;
            JsonObject *row = moe_step(args, &p);
            step[b] = moe_member(row, "step_time_s"),
            moved[b] = moe_member(row, "moe_redistribute_s");
            CU_ASSERT(step[b] > 0 && moe_member(row, "moe_experts_s") > 0);
        }
        printf("\n    %s: step %.6f / %.6f / %.6f s, all-to-alls to the tokens %.6f / %.6f s",
               plans[i], step[0], step[1], step[2], moved[0], moved[1]);
        gboolean grid = i < 3;
        CU_ASSERT(grid ? moved[0] > 0 && moved[1] > 0 : moved[0] == -1 && moved[1] == -1);
        CU_ASSERT(fabs(step[2] - step[1]) <= 1e-9 * step[1]);
        CU_ASSERT(fabs(moved[2] - moved[1]) <= 1e-9 * fabs(moved[1]));
    }
}

static CU_TestInfo predict_tests[] = {
    {"an MoE step names its dispatch and combine all-to-alls and expert GEMMs",
     test_an_moe_step_names_dispatch_combine_and_expert_gemms},
    {"a dense model has no MoE figures", test_a_dense_model_has_no_moe_figures},
    {"the step line names the expert-parallel exposure",
     test_the_step_line_names_expert_parallel_exposure},
    {"twice the imbalance doubles the expert GEMMs' rows",
     test_twice_the_imbalance_doubles_the_expert_gemms_rows},
    {"an expert-parallel group across nodes is exposed between nodes",
     test_an_ep_group_across_nodes_is_exposed_between_nodes},
    {"--order places the expert-parallel groups", test_order_places_the_expert_parallel_groups},
    {"the experts' reductions leave the step on alike ranks, as every rank gives it",
     test_the_experts_reductions_leave_the_step_on_alike_ranks},
    {"2-D, 2.5-D and 3-D MoE steps time the all-to-alls to the MoE block's tokens on every "
     "backend, "
     "the formula's equal to the analytic replay's",
     test_grid_modes_time_the_all_to_alls_to_the_moe_block},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"MoE steps predicted", NULL, NULL, NULL, NULL, predict_tests},
    CU_SUITE_INFO_NULL,
};

int
main(void)
{
    return simpar_test_main(suites);
}
