/* test-moe-predict.c - whole steps of mixture-of-experts models predicted by the simpar binary
 * (SIMPAR_BIN): the breakdown names the MoE block's parts, the expert-parallel all-to-alls sit
 * on their own axis, and the load-imbalance figure slows the experts as it should. */
#include "cli-run.h"
#include "memory.h"
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

/* Whether the step's exposed communication has a group axis named `axis`. */
static gboolean
moe_has_axis(JsonObject *step, const char *axis)
{
    JsonArray *axes = json_object_get_array_member(step, "exposed_comm_by_axis");
    for (guint i = 0; i < json_array_get_length(axes); i++) {
        JsonObject *a = json_array_get_object_element(axes, i);
        if (g_str_equal(json_object_get_string_member(a, "axis"), axis))
            return TRUE;
    }
    return FALSE;
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
    CU_ASSERT(moe_has_axis(step, "ep"));
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

/* `job` on `backend` with the all-to-all dispatcher (*a2a) and with DeepEP's (*hops), parsed by
 * *p1 and *p2 (the caller frees them): DeepEP's dispatch and step are the shorter. DeepEP's step
 * time. */
static double
moe_deepep_faster(const char *job, const char *backend, JsonParser **p1, JsonParser **p2,
                  JsonObject **a2a, JsonObject **hops)
{
    g_autofree char *flat = g_strdup_printf("%s --backend %s", job, backend);
    g_autofree char *deep = g_strconcat(flat, " --moe-dispatcher deepep", NULL);
    *a2a = moe_step(flat, p1), *hops = moe_step(deep, p2);
    double d1 = moe_member(*a2a, "moe_dispatch_s"), d2 = moe_member(*hops, "moe_dispatch_s");
    double s1 = moe_member(*a2a, "step_time_s"), s2 = moe_member(*hops, "step_time_s");
    printf("\n    %s: dispatch %.4g -> %.4g s, step %.4g -> %.4g s", backend, d1, d2, s1, s2);
    CU_ASSERT(d2 > 0 && d2 < d1 && s2 < s1);
    return s2;
}

/* DeepEP's hops (--moe-dispatcher deepep) with node-limited routing, EP 32 over 4 nodes of 8:
 * the dispatch takes less time than the flat all-to-all on every backend, and part of it is the
 * nodes' NVLink hop (axis ep, intra-node). */
static void
test_deepep_dispatches_faster_than_the_all_to_all_with_node_limited_routing(void)
{
    const char *job = "--topology " H100 " --json --model llama3-8b --layers 4 --seq 1024 "
                      "--experts 32 --topk 8 --router sigmoid --expert-groups 4 --group-limit 2 "
                      "--moe-ffn 1024 --tp-mode 1d --tp 1 --pp 2 --dp 32 --ep 32 "
                      "--global-batch 128";
    const char *backends[] = {"simgrid", "analytic", "formula"};
    for (guint i = 0; i < G_N_ELEMENTS(backends); i++) {
        g_autoptr(JsonParser) p1 = NULL, p2 = NULL;
        JsonObject *a2a, *hops;
        moe_deepep_faster(job, backends[i], &p1, &p2, &a2a, &hops);
        /* the JSON's config names the dispatcher */
        const char *want[] = {"alltoall", "deepep"};
        JsonObject *rows[] = {a2a, hops};
        for (guint k = 0; k < 2; k++) {
            JsonObject *config = json_object_get_object_member(rows[k], "config");
            CU_ASSERT_STRING_EQUAL(
                json_object_get_string_member_with_default(config, "moe_dispatcher", ""), want[k]);
        }
        JsonArray *axes = json_object_get_array_member(hops, "exposed_comm_by_axis");
        gboolean intra = FALSE;
        for (guint j = 0; j < json_array_get_length(axes); j++) {
            JsonObject *ax = json_array_get_object_element(axes, j);
            intra =
                intra || (g_str_equal(json_object_get_string_member(ax, "axis"), "ep") &&
                          g_str_equal(json_object_get_string_member(ax, "scope"), "intra-node"));
        }
        CU_ASSERT(intra);
    }
    /* the text names the hops */
    g_autofree char *text = g_strdup_printf("%s --moe-dispatcher deepep", job);
    char *json = strstr(text, " --json");
    memmove(json, json + 7, strlen(json + 7) + 1);
    SimparCliRun r = simpar_cli_run(text);
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "dispatch all-to-alls (rail, then NVLink: DeepEP) "));
    simpar_cli_run_clear(&r);
}

/* Group-limited routing inside one node (DeepSeek-V3's 4 of 8 groups with EP 8 on one DGX, as
 * Megatron-Core routes it on groups of experts wherever they live): it predicts, on every
 * backend, its all-to-alls all within the node, the formula's step the analytic replay's. */
static void
test_group_limited_routing_inside_one_node_predicts(void)
{
    const char *job = "--topology " H100 " --json --model deepseek-v3 --layers 8 --seq 1024 "
                      "--tp-mode 1d --tp 1 --pp 2 --ep 8 --dp 32 --global-batch 64";
    const char *backends[] = {"simgrid", "analytic", "formula"};
    double step[G_N_ELEMENTS(backends)];
    for (guint i = 0; i < G_N_ELEMENTS(backends); i++) {
        g_autofree char *args = g_strdup_printf("%s --backend %s", job, backends[i]);
        SimparCliRun r = simpar_cli_run(args);
        CU_ASSERT_EQUAL(r.status, 0);
        step[i] = -1;
        g_autoptr(JsonParser) p = json_parser_new();
        if (r.status == 0 && json_parser_load_from_data(p, r.out, -1, NULL)) {
            JsonObject *row =
                json_array_get_object_element(json_node_get_array(json_parser_get_root(p)), 0);
            step[i] = json_object_get_double_member(row, "step_time_s");
            CU_ASSERT(moe_member(row, "moe_dispatch_s") > 0);
            JsonArray *axes = json_object_get_array_member(row, "exposed_comm_by_axis");
            for (guint j = 0; j < json_array_get_length(axes); j++) {
                JsonObject *ax = json_array_get_object_element(axes, j);
                if (g_str_equal(json_object_get_string_member(ax, "axis"), "ep"))
                    CU_ASSERT_STRING_EQUAL(json_object_get_string_member(ax, "scope"),
                                           "intra-node");
            }
        }
        simpar_cli_run_clear(&r);
    }
    printf("\n    step %.6f / %.6f / %.6f s ", step[0], step[1], step[2]);
    CU_ASSERT(step[0] > 0 && step[1] > 0 && step[2] > 0);
    /* the analytic replay and the formula give one step; SimGrid's contention only adds */
    CU_ASSERT(fabs(step[2] - step[1]) <= 1e-9 * step[1]);
    CU_ASSERT(step[0] >= step[1] * (1 - 1e-9));
}

/* DeepEP's hops with expert tensor parallelism (--etp 2, Megatron-Core's flex dispatcher over
 * the TP x EP group): EP 16 x ETP 2 = 32 GPUs over 4 nodes of 8, node-limited routing. Every
 * backend predicts it; its hops are exposed on axis tp_ep (inter- and intra-node) and no
 * expert-TP collective runs (no axis etp, no moe_expert_tp_s), where the all-to-all dispatcher
 * has both; its dispatch and its step are faster; the formula backend replays the step, giving
 * the analytic figure. */
static void
test_deepep_with_etp_runs_over_the_tp_ep_group(void)
{
    const char *job = "--topology " H100 " --json --model llama3-8b --layers 4 --seq 1024 "
                      "--experts 32 --topk 8 --router sigmoid --expert-groups 4 --group-limit 2 "
                      "--moe-ffn 1024 --tp-mode 1d --tp 1 --pp 2 --dp 32 --ep 16 --etp 2 "
                      "--global-batch 128";
    const char *backends[] = {"simgrid", "analytic", "formula"};
    double analytic = 0;
    for (guint i = 0; i < G_N_ELEMENTS(backends); i++) {
        g_autoptr(JsonParser) p1 = NULL, p2 = NULL;
        JsonObject *a2a, *hops;
        double s2 = moe_deepep_faster(job, backends[i], &p1, &p2, &a2a, &hops);
        CU_ASSERT(moe_member(a2a, "moe_expert_tp_s") > 0 && moe_has_axis(a2a, "etp"));
        CU_ASSERT(moe_member(hops, "moe_expert_tp_s") <= 0 && !moe_has_axis(hops, "etp"));
        CU_ASSERT(moe_has_axis(hops, "tp_ep") && !moe_has_axis(hops, "ep"));
        if (i == 1)
            analytic = s2;
        if (i == 2)
            CU_ASSERT_DOUBLE_EQUAL(s2, analytic, 1e-12);
    }
}

/* The time of one `op` of `bytes` in all (nccl-tests' size) over the first `gpus` GPUs of H100,
 * as simpar collective gives it on `backend`. */
static double
moe_collective_s(const char *op, guint gpus, double bytes, const char *backend)
{
    g_autofree char *args =
        g_strdup_printf("collective --topology " H100 " --op %s --gpus %u --bytes %.0f --json "
                        "--backend %s",
                        op, gpus, bytes, backend);
    g_autoptr(JsonParser) p = NULL;
    JsonObject *row = moe_step(args, &p);
    g_assert(json_object_get_int_member(row, "bytes") == (gint64) bytes);
    return json_object_get_double_member(row, "time_s");
}

/* --moe-dispatcher allgather on an idle network (EP 8 on the 8 GPUs of node 0, T = 1024 tokens
 * a GPU, h = 4096, E = 16, bf16): per layer the dispatch is the forward's all-gathers of the
 * dense probs (T E) and the tokens (T h) and the backward's reduce-scatters of their gradients,
 * the combine the forward's reduce-scatter (T h) and the backward's all-gather of dy, each at
 * simpar collective's time for 8 x those elements (nccl-tests' size) on the same backend (the
 * formula backend replays on the analytic one), to 1e-9; the text and the JSON name the
 * dispatcher, and no all-to-all runs. */
static void
test_the_all_gather_dispatcher_s_collectives_take_their_collective_time(void)
{
    double T = 1024, h = 4096, E = 16, ds = 2, G = 8;
    double probs = G * T * E * ds, tokens = G * T * h * ds;
    const char *backends[] = {"analytic", "formula", "simgrid"};
    for (guint b = 0; b < G_N_ELEMENTS(backends); b++) {
        const char *be = b == 1 ? "analytic" : backends[b];
        double ag = moe_collective_s("allgather", 8, tokens, be);
        double rs = moe_collective_s("reducescatter", 8, tokens, be);
        double dispatch = moe_collective_s("allgather", 8, probs, be) + ag + rs +
                          moe_collective_s("reducescatter", 8, probs, be);
        double combine = rs + ag;
        g_autofree char *args =
            g_strdup_printf(MOE_JOB " --moe-dispatcher allgather --backend %s", backends[b]);
        g_autoptr(JsonParser) p = NULL;
        JsonObject *row = moe_step(args, &p);
        double d = moe_member(row, "moe_dispatch_s"), c = moe_member(row, "moe_combine_s");
        printf("\n    %s: dispatch %.9g s (closed form %.9g), combine %.9g s (%.9g)", backends[b],
               d, dispatch, c, combine);
        CU_ASSERT(fabs(d - dispatch) <= 1e-9 * dispatch);
        CU_ASSERT(fabs(c - combine) <= 1e-9 * combine);
        JsonObject *config = json_object_get_object_member(row, "config");
        CU_ASSERT_STRING_EQUAL(
            json_object_get_string_member_with_default(config, "moe_dispatcher", ""), "allgather");
    }
    SimparCliRun r = simpar_cli_run(
        "--topology " H100 " --model llama3-8b --layers 4 --seq 1024 --experts 16 --topk 2 "
        "--moe-ffn 1024 --tp-mode 1d --tp 1 --pp 2 --dp 32 --ep 8 --global-batch 128 "
        "--moe-dispatcher allgather --backend analytic");
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_PTR_NOT_NULL(
        strstr(r.out, "dispatch all-gathers (TP x EP, and their reduce-scatters) "));
    CU_ASSERT_PTR_NULL(strstr(r.out, "all-to-all"));
    simpar_cli_run_clear(&r);
}

/* --moe-flex-backend hybridep: Hybrid-EP's routing maps (T E bytes a GPU, held as T E / 2 bf16
 * elements) all-gathered over the EP group before each forward's hops, and nothing else: on EP 16
 * over 2 nodes (T = 1024 tokens, E = 16), L = 4 layers and m = 8 micro-batches with nothing to
 * overlap it, the step grows by exactly L m times simpar collective's time for that all-gather
 * (16 x 16384 bytes, nccl-tests' size) on the same backend, to 1e-9; the hops' own times do not
 * change; the JSON says the backend, the text names Hybrid-EP; without the flag nothing of it. */
static void
test_hybridep_gathers_the_routing_maps_before_each_forward_dispatch(void)
{
    const char *job =
        "--topology " H100 " --json --model llama3-8b --layers 4 --seq 1024 "
        "--experts 16 --topk 2 --moe-ffn 1024 --tp-mode 1d --tp 1 --gpus 16 --dp 16 --ep 16 "
        "--global-batch 128 --moe-dispatcher deepep";
    double L = 4, m = 128 / 16, G = 16, T = 1024, E = 16;
    const char *backends[] = {"analytic", "formula"};
    for (guint b = 0; b < G_N_ELEMENTS(backends); b++) {
        double ag = moe_collective_s("allgather", 16, G * T * E, "analytic");
        g_autofree char *deep = g_strdup_printf("%s --backend %s", job, backends[b]);
        g_autofree char *hyb =
            g_strdup_printf("%s --backend %s --moe-flex-backend hybridep", job, backends[b]);
        g_autoptr(JsonParser) p1 = NULL;
        g_autoptr(JsonParser) p2 = NULL;
        JsonObject *r1 = moe_step(deep, &p1), *r2 = moe_step(hyb, &p2);
        double d = moe_member(r2, "step_time_s") - moe_member(r1, "step_time_s");
        printf("\n    %s: the step grows by %.9g s, L m x the all-gather %.9g s", backends[b], d,
               L * m * ag);
        CU_ASSERT(fabs(d - L * m * ag) <= 1e-9 * L * m * ag);
        CU_ASSERT_EQUAL(moe_member(r2, "moe_dispatch_s"), moe_member(r1, "moe_dispatch_s"));
        CU_ASSERT_EQUAL(moe_member(r2, "moe_combine_s"), moe_member(r1, "moe_combine_s"));
        JsonObject *c1 = json_object_get_object_member(r1, "config");
        JsonObject *c2 = json_object_get_object_member(r2, "config");
        CU_ASSERT_FALSE(json_object_has_member(c1, "moe_flex_backend"));
        CU_ASSERT_STRING_EQUAL(
            json_object_get_string_member_with_default(c2, "moe_flex_backend", ""), "hybridep");
    }
    SimparCliRun r = simpar_cli_run(
        "--topology " H100 " --model llama3-8b --layers 4 --seq 1024 --experts 16 --topk 2 "
        "--moe-ffn 1024 --tp-mode 1d --tp 1 --gpus 16 --dp 16 --ep 16 --global-batch 128 "
        "--moe-dispatcher deepep --moe-flex-backend hybridep --backend analytic");
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "NVLink: Hybrid-EP; its routing maps' all-gather apart"));
    simpar_cli_run_clear(&r);
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

/* What a trace shows of the traced ranks' layer blocks: per MoE figure of the prediction
 * (moe_dispatch_s, moe_combine_s, moe_experts_s) the seconds its ops take in one layer, mean
 * over the ranks and layers; the layers drawn; the largest gap between a layer's share of its
 * block and the sum of its compute stream's events (ops and waits), or an event outside it. */
typedef struct {
    double part_s[4]; /* and moe_expert_tp_s */
    guint layers;
    gboolean all_names; /* every MoE op the test names is there */
    double worst_s;     /* beyond the trace's rounding: 0.5 ns an event */
} MoeTraced;

/* A "layer.fwd" or "layer.bwd" block of the trace and, per layer in it, the seconds and the
 * events of its layer compute stream (tid 100). */
typedef struct {
    gint64 pid;
    double from, dur;
    gboolean fwd;
    guint count, events[64];
    double busy[64];
} MoeBlock;

static double
moe_event_s(JsonObject *e, const char *key)
{
    return json_object_get_double_member(e, key) * 1e-6;
}

/* The block of `blocks` on `pid` that event time `at` falls in: the last to start by then (the
 * trace's times are rounded to the nanosecond: a block starts where the one before ends). */
static MoeBlock *
moe_block_at(GArray *blocks, gint64 pid, double at)
{
    MoeBlock *in = NULL;
    for (guint i = 0; i < blocks->len; i++) {
        MoeBlock *b = &g_array_index(blocks, MoeBlock, i);
        if (b->pid == pid && b->from <= at + 0.5e-9 && (in == NULL || b->from > in->from))
            in = b;
    }
    return in;
}

/* Event `e` on a layer stream (tid >= 100) into its block and, for the MoE parts, into *m. */
static void
moe_trace_event(GArray *blocks, JsonObject *e, MoeTraced *m, GHashTable *names)
{
    static const char *const what[] = {".moe.all-to-all-dispatch", ".moe.all-to-all-combine",
                                       ".experts.", ".moe.all-gather-", ".moe.reduce-scatter-"};
    double at = moe_event_s(e, "ts"), len = moe_event_s(e, "dur");
    MoeBlock *b = moe_block_at(blocks, json_object_get_int_member(e, "pid"), at);
    if (b == NULL) {
        CU_FAIL("a layer stream's event outside the layer blocks");
        return;
    }
    guint k = (guint) json_object_get_int_member(json_object_get_object_member(e, "args"), "layer");
    g_assert(k < G_N_ELEMENTS(b->busy));
    const char *name = json_object_get_string_member(e, "name");
    b->count = MAX(b->count, k + 1);
    m->worst_s = MAX(m->worst_s, at + len - (b->from + b->dur) - 1e-9); /* past its end */
    if (json_object_get_int_member(e, "tid") == 100)
        b->busy[k] += len, b->events[k]++;
    g_hash_table_add(names, (gpointer) g_intern_string(name));
    gboolean gemm = g_str_equal(json_object_get_string_member(e, "cat"), "gemm");
    for (guint p = 0; p < G_N_ELEMENTS(what); p++)
        if (strstr(name, what[p]) != NULL && (p != 2 || gemm))
            m->part_s[MIN(p, 3u)] += len;
}

/* The layer blocks of the events `ev` and the events on their layer streams: into *m. */
static void
moe_trace_blocks(JsonArray *ev, MoeTraced *m, GHashTable *names)
{
    g_autoptr(GArray) blocks = g_array_new(FALSE, TRUE, sizeof(MoeBlock));
    for (guint pass = 0; pass < 2; pass++)
        for (guint i = 0; i < json_array_get_length(ev); i++) {
            JsonObject *e = json_array_get_object_element(ev, i);
            const char *name = json_object_get_string_member(e, "name");
            if (!g_str_equal(json_object_get_string_member(e, "ph"), "X"))
                continue;
            gboolean block = g_str_equal(name, "layer.fwd") || g_str_equal(name, "layer.bwd");
            if (pass == 0 && block) {
                MoeBlock b = {.pid = json_object_get_int_member(e, "pid"),
                              .from = moe_event_s(e, "ts"),
                              .dur = moe_event_s(e, "dur"),
                              .fwd = g_str_equal(name, "layer.fwd")};
                g_array_append_val(blocks, b);
            } else if (pass == 1 && json_object_get_int_member(e, "tid") >= 100) {
                moe_trace_event(blocks, e, m, names);
            }
        }
    for (guint i = 0; i < blocks->len; i++) {
        const MoeBlock *b = &g_array_index(blocks, MoeBlock, i);
        for (guint k = 0; k < b->count; k++) /* a layer: its share of the block, its stream full */
            m->worst_s =
                MAX(m->worst_s, fabs(b->busy[k] - b->dur / b->count) - 0.5e-9 * (b->events[k] + 1));
        m->layers += b->fwd ? b->count : 0;
    }
}

/* The trace at `path` of `ranks` ranks summed into *m (the parts per layer and rank). */
static void
moe_trace_read(const char *path, guint ranks, MoeTraced *m)
{
    static const char *const ops[] = {"fwd.router.gemm",
                                      "fwd.router.gate",
                                      "fwd.moe.permute",
                                      "fwd.moe.all-to-all-dispatch",
                                      "fwd.moe.sort",
                                      "fwd.experts.fc1.gemm",
                                      "fwd.experts.fc2.gemm",
                                      "fwd.moe.unsort",
                                      "fwd.moe.all-to-all-combine",
                                      "fwd.moe.unpermute",
                                      "fwd.shared.fc1.gemm",
                                      "fwd.shared.fc2.gemm",
                                      "bwd.moe.all-to-all-combine",
                                      "bwd.experts.fc2.gemm-dx",
                                      "bwd.experts.fc1.gemm-dw",
                                      "bwd.moe.all-to-all-dispatch",
                                      "bwd.moe.permute",
                                      "bwd.router.gate",
                                      "bwd.router.gemm-dw",
                                      "bwd.shared.fc1.gemm-dx"};
    g_autoptr(JsonParser) p = json_parser_new();
    CU_ASSERT_TRUE_FATAL(json_parser_load_from_file(p, path, NULL));
    JsonArray *ev =
        json_object_get_array_member(json_node_get_object(json_parser_get_root(p)), "traceEvents");
    g_autoptr(GHashTable) names = g_hash_table_new(NULL, NULL);
    *m = (MoeTraced){{0}, 0, FALSE, 0};
    moe_trace_blocks(ev, m, names);
    guint seen = 0;
    for (guint k = 0; k < G_N_ELEMENTS(ops); k++)
        seen += g_hash_table_contains(names, g_intern_string(ops[k]));
    m->all_names = seen == G_N_ELEMENTS(ops);
    for (guint k = 0; k < G_N_ELEMENTS(m->part_s) && m->layers > 0; k++)
        m->part_s[k] /= m->layers;
    CU_ASSERT(m->layers % ranks == 0);
}

/* A traced MoE step draws every layer's MoE block (router, permutation, the dispatch and
 * combine all-to-alls, the experts' and the shared experts' GEMMs, forward and backward)
 * inside its layer blocks: on every backend, the all-to-alls and the experts' GEMMs of the
 * expert-parallel group's ranks take what the prediction says they take (to the trace's nanosecond:
 * two events a layer), and each layer's compute stream fills its share of its block. */
static void
test_an_moe_trace_shows_the_moe_block_with_the_prediction_s_times(void)
{
    g_autofree char *dir = g_dir_make_tmp("simpar-moe-XXXXXX", NULL);
    g_autofree char *path = g_build_filename(dir, "trace.json", NULL);
    const char *backends[] = {"analytic", "simgrid", "formula"};
    const char *keys[] = {"moe_dispatch_s", "moe_combine_s", "moe_experts_s"};
    for (guint b = 0; b < G_N_ELEMENTS(backends); b++) {
        g_autofree char *args =
            g_strdup_printf(MOE_JOB " --shared-ffn 512 --backend %s --trace %s --trace-ranks 0-7",
                            backends[b], path);
        g_autoptr(JsonParser) p = NULL;
        JsonObject *row = moe_step(args, &p);
        MoeTraced m;
        moe_trace_read(path, 8, &m);
        printf("\n    %s: %u layers drawn, worst layer %.3g s off its share;", backends[b],
               m.layers, m.worst_s);
        CU_ASSERT(m.all_names && m.layers == 8 * 4 * 2 && m.worst_s <= 0); /* m = 4, 2 layers */
        for (guint k = 0; k < G_N_ELEMENTS(keys); k++) {
            double want = moe_member(row, keys[k]);
            printf(" %s %.9g / %.9g s", keys[k], m.part_s[k], want);
            /* the trace's figures are whole nanoseconds: 0.5 ns an event, a layer's part two
             * all-to-alls (forward, backward) or six GEMMs (two forward, four backward) */
            CU_ASSERT(want > 0 && fabs(m.part_s[k] - want) <= 1e-9 * want + (k < 2 ? 1e-9 : 3e-9));
        }
    }
    simpar_test_tmpdir_remove(g_steal_pointer(&dir));
}

/* The same with --etp 2 (EP 8 x ETP 2: the block on ranks 0-15): the trace's all-to-alls,
 * experts' GEMMs and expert-TP all-gathers and reduce-scatters of those ranks take what the
 * prediction says, on the analytic and SimGrid backends. */
static void
test_an_etp_trace_shows_the_expert_tp_collectives_with_the_prediction_s_times(void)
{
    g_autofree char *dir = g_dir_make_tmp("simpar-moe-XXXXXX", NULL);
    g_autofree char *path = g_build_filename(dir, "trace.json", NULL);
    const char *backends[] = {"analytic", "simgrid"};
    const char *keys[] = {"moe_dispatch_s", "moe_combine_s", "moe_experts_s", "moe_expert_tp_s"};
    for (guint b = 0; b < G_N_ELEMENTS(backends); b++) {
        g_autofree char *args = g_strdup_printf(
            MOE_JOB " --etp 2 --backend %s --trace %s --trace-ranks 0-15", backends[b], path);
        g_autoptr(JsonParser) p = NULL;
        JsonObject *row = moe_step(args, &p);
        MoeTraced m;
        moe_trace_read(path, 16, &m);
        CU_ASSERT(m.layers == 16 * 4 * 2 && m.worst_s <= 0);
        printf("\n    %s:", backends[b]);
        for (guint k = 0; k < G_N_ELEMENTS(keys); k++) {
            double want = moe_member(row, keys[k]);
            printf(" %s %.9g / %.9g s", keys[k], m.part_s[k], want);
            /* whole nanoseconds a trace event: two all-to-alls, six GEMMs or four expert-TP
             * collectives a layer */
            double slack = (k < 2 ? 1e-9 : k == 2 ? 3e-9 : 2e-9);
            CU_ASSERT(want > 0 && fabs(m.part_s[k] - want) <= 1e-9 * want + slack);
        }
    }
    simpar_test_tmpdir_remove(g_steal_pointer(&dir));
}

/* The figures of `job` with `extra` (the JSON row's, keys[k] into out[k]). */
static void
moe_figures(const char *job, const char *extra, const char *const *keys, guint n, double *out)
{
    g_autoptr(JsonParser) p = NULL;
    g_autofree char *args = g_strdup_printf("%s%s", job, extra);
    JsonObject *row = moe_step(args, &p);
    for (guint k = 0; k < n; k++)
        out[k] = moe_member(row, keys[k]);
}

/* An MoE model's dense layers (--dense-layers K, --moe-every N) against a closed construction.
 * On one GPU (one stage, one replica) the step is one compute stream: the ends, then m times
 * each layer's forward and backward block, then one Adam over all the parameters, whose time is
 * affine in their count (launch + floor + the larger of two terms linear in it). A dense layer
 * runs the dense layer's blocks and holds its parameters, and the dense layer is the layer of
 * the same model without experts; so with n of the L layers dense, every term is affine in n
 * and step(n dense) = n/L step(no experts) + (L - n)/L step(every layer an MoE one), up to
 * rounding; so are the compute, the bytes moved and the model FLOPs. Fails with the dense
 * layers timed, counted or laid out as MoE ones. */
static void
test_dense_layers_are_timed_as_dense_layers(void)
{
    const char *job = "--topology " H100 " --gpus 1 --json --model llama3-8b --layers 4 "
                      "--seq 1024 --tp-mode 1d --tp 1 --pp 1 --dp 1 --global-batch 2 "
                      "--backend analytic";
    const char *moe = " --experts 16 --topk 2 --moe-ffn 1024";
    const char *const keys[] = {"step_time_s", "compute_s", "optimizer_s", "comm_bytes_per_gpu",
                                "model_flops"};

    enum {
        N = G_N_ELEMENTS(keys)
    };

    const struct {
        const char *flags;
        double dense; /* of the 4 layers */
    } cases[] = {
        {" --dense-layers 1", 1},
        {" --dense-layers 3", 3},
        {" --moe-every 2", 2},                  /* layers 0 and 2 MoE */
        {" --dense-layers 1 --moe-every 3", 3}, /* layer 1 MoE (the next would be 4) */
    };

    double dense[N], all[N];
    moe_figures(job, "", keys, N, dense);
    moe_figures(job, moe, keys, N, all);
    printf("\n    no experts: step %.9g s; every layer MoE: %.9g s", dense[0], all[0]);
    CU_ASSERT(fabs(dense[0] - all[0]) > 1e-3 * all[0]); /* the two kinds differ */
    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autofree char *flags = g_strconcat(moe, cases[i].flags, NULL);
        double got[N], w = cases[i].dense / 4;
        moe_figures(job, flags, keys, N, got);
        for (guint k = 0; k < N; k++) {
            double want = w * dense[k] + (1 - w) * all[k];
            if (k == 0)
                printf("\n    %s: step %.9g s, the construction's %.9g s", cases[i].flags, got[k],
                       want);
            CU_ASSERT(got[k] > 0 && fabs(got[k] - want) <= 1e-9 * want);
        }
    }
}

/* With pipelines (uneven first stage, interleaved chunks) and data parallelism, an MoE model
 * with dense layers: the formula backend gives the analytic replay's step (it leaves MoE models
 * to that replay, step-formula.h), the SimGrid backend runs it, and the dense layers change the
 * step on every backend (here a dense layer, its MLP of width 14336, is slower than an MoE one,
 * top-2 of width 1024). */
static void
test_dense_layers_with_pipelines_on_every_backend(void)
{
    const char *job = "--topology " H100 " --json --model llama3-8b --layers 8 --seq 1024 "
                      "--experts 16 --topk 2 --moe-ffn 1024 --tp-mode 1d --tp 1 --pp 4 --dp 16 "
                      "--ep 8 --global-batch 128";
    const char *const cases[] = {
        " --moe-every 2",
        " --dense-layers 3 --first-stage-layers 3",
        " --dense-layers 1 --moe-every 2 --schedule interleaved --virtual-stages 2",
        " --dense-layers 2 --zero 1 --overlap-grad-reduce --last-stage-layers 1",
    };
    const char *const backends[] = {"analytic", "formula", "simgrid"};
    const char *const keys[] = {"step_time_s"};
    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        double step[3], all[3];
        for (guint b = 0; b < G_N_ELEMENTS(backends); b++) {
            g_autofree char *with = g_strdup_printf("%s --backend %s", cases[i], backends[b]);
            /* the same split with every layer an MoE one: the case without its K and N */
            GString *none = g_string_new(NULL);
            g_auto(GStrv) words = g_strsplit(cases[i], " ", -1);
            for (guint w = 0; words[w] != NULL; w++) {
                if (g_str_equal(words[w], "--dense-layers") ||
                    g_str_equal(words[w], "--moe-every")) {
                    if (words[w + 1] != NULL)
                        w++;
                    continue;
                }
                if (*words[w] != '\0')
                    g_string_append_printf(none, " %s", words[w]);
            }
            g_string_append_printf(none, " --backend %s", backends[b]);
            moe_figures(job, with, keys, 1, &step[b]);
            moe_figures(job, none->str, keys, 1, &all[b]);
            g_string_free(none, TRUE);
            printf("\n    %s %s: step %.9g s (every layer MoE: %.9g s)", cases[i], backends[b],
                   step[b], all[b]);
            CU_ASSERT(step[b] > 0 && fabs(step[b] - all[b]) > 1e-3 * all[b]);
        }
        CU_ASSERT(fabs(step[1] - step[0]) <= 1e-12 * step[0]);
        CU_ASSERT(fabs(step[2] - step[0]) <= 0.05 * step[0]); /* contention: close to idle */
    }
}

/* The memory counter of the trace `ev` (the job of test_a_trace_draws_dense_layers_as_the_dense_
 * layer, whose layers alternate: every block one layer): at the end of each forward layer block
 * it rises by one layer's stored activations, the dense layer's (the model without experts') for
 * a "dense.fwd" block, an MoE layer's for a "layer.fwd" one (memory.h; 9 digits of GiB an
 * event). */
static void
moe_trace_memory_rises(JsonArray *ev)
{
    SimparModel m, dense;
    CU_ASSERT_TRUE_FATAL(simpar_model_preset("llama3-8b", &m, NULL));
    m.layers = 4, m.seq = 1024;
    m.moe = (SimparMoeConfig){
        .experts = 16, .top_k = 2, .moe_ffn = 1024, .dense_layers = 1, .moe_every = 2};
    SimparTrain tr;
    simpar_train_init(&tr);
    tr.tp.tp = 4, tr.tp.sequence_parallel = TRUE, tr.pp = 2, tr.dp = 8, tr.ep = 8;
    tr.global_batch = 32;
    CU_ASSERT_TRUE_FATAL(simpar_train_validate(&tr, &m, 64, NULL));
    simpar_model_dense_layer(&m, &dense);
    double want[2] = {
        simpar_memory_layer_activations(&m, &tr.tp, SIMPAR_ATTENTION_UNFUSED) / (1 << 30),
        simpar_memory_layer_activations(&dense, &tr.tp, SIMPAR_ATTENTION_UNFUSED) / (1 << 30)};
    CU_ASSERT(fabs(want[0] - want[1]) > 1e-3 * want[0]); /* the two kinds differ */
    guint n = json_array_get_length(ev), seen[2] = {0, 0}, wrong = 0;
    for (guint i = 0; i < n; i++) {
        JsonObject *b = json_array_get_object_element(ev, i);
        const char *name = json_object_get_string_member(b, "name");
        gboolean dense_block = g_str_equal(name, "dense.fwd");
        if (!g_str_equal(json_object_get_string_member(b, "ph"), "X") ||
            (!dense_block && !g_str_equal(name, "layer.fwd")))
            continue;
        gint64 pid = json_object_get_int_member(b, "pid");
        double end =
            json_object_get_double_member(b, "ts") + json_object_get_double_member(b, "dur");
        double before = -1, after = -1;
        for (guint j = 0; j < n && after < 0;
             j++) { /* the counter at the block's end, the one before */
            JsonObject *e = json_array_get_object_element(ev, j);
            if (!g_str_equal(json_object_get_string_member(e, "ph"), "C") ||
                json_object_get_int_member(e, "pid") != pid)
                continue;
            double v =
                json_object_get_double_member(json_object_get_object_member(e, "args"), "GiB");
            if (fabs(json_object_get_double_member(e, "ts") - end) < 1.5e-3) /* ns */
                after = v;
            else
                before = v;
        }
        double rise = after - before, one = want[dense_block];
        seen[dense_block]++;
        wrong += before < 0 || after < 0 || fabs(rise - one) > 1e-6 * one + 2e-8;
    }
    printf("; memory per layer %.9g GiB (MoE), %.9g GiB (dense), %u rises wrong", want[0], want[1],
           wrong);
    CU_ASSERT(seen[0] > 0 && seen[1] > 0);
    CU_ASSERT_EQUAL(wrong, 0);
}

/* The trace of an MoE model with dense layers: each "dense.fwd" / "dense.bwd" block is drawn
 * as the dense layer's ops, its layer compute stream (tid 100) busy for the block's time (to the
 * trace's rounding, 0.5 ns an event), none of them an MoE op; the MoE layers' blocks keep their
 * MoE block. Fails with the dense blocks left as bare blocks or drawn as MoE layers. */
static void
test_a_trace_draws_dense_layers_as_the_dense_layer(void)
{
    g_autofree char *dir = g_dir_make_tmp("simpar-moe-XXXXXX", NULL);
    g_autofree char *path = g_build_filename(dir, "trace.json", NULL);
    g_autofree char *args = g_strdup_printf(
        "--topology " H100 " --json --model llama3-8b --layers 4 --seq 1024 --experts 16 "
        "--topk 2 --moe-ffn 1024 --tp-mode 1d --tp 4 --sp --pp 2 --dp 8 --ep 8 --global-batch 32 "
        "--dense-layers 1 --moe-every 2 --backend analytic --trace %s",
        path);
    g_autoptr(JsonParser) row = NULL;
    (void) moe_step(args, &row);
    g_autoptr(JsonParser) p = json_parser_new();
    CU_ASSERT_TRUE_FATAL(json_parser_load_from_file(p, path, NULL));
    JsonArray *ev =
        json_object_get_array_member(json_node_get_object(json_parser_get_root(p)), "traceEvents");
    guint n = json_array_get_length(ev), blocks[2] = {0, 0}, wrong = 0;
    for (guint i = 0; i < n; i++) {
        JsonObject *b = json_array_get_object_element(ev, i);
        const char *name = json_object_get_string_member(b, "name");
        gboolean dense = g_str_equal(name, "dense.fwd") || g_str_equal(name, "dense.bwd");
        if (!g_str_equal(json_object_get_string_member(b, "ph"), "X") ||
            !(dense || g_str_equal(name, "layer.fwd") || g_str_equal(name, "layer.bwd")))
            continue;
        double from = json_object_get_double_member(b, "ts"), busy = 0;
        double dur = json_object_get_double_member(b, "dur");
        guint events = 0, moe = 0;
        for (guint j = 0; j < n; j++) { /* the layer streams' events inside the block */
            JsonObject *e = json_array_get_object_element(ev, j);
            if (!g_str_equal(json_object_get_string_member(e, "ph"), "X") ||
                json_object_get_int_member(e, "pid") != json_object_get_int_member(b, "pid") ||
                json_object_get_int_member(e, "tid") < 100)
                continue;
            double at = json_object_get_double_member(e, "ts");
            if (at < from - 5e-4 || at >= from + dur - 5e-4)
                continue;
            const char *what = json_object_get_string_member(e, "name");
            moe += strstr(what, ".moe.") != NULL || strstr(what, ".experts.") != NULL;
            if (json_object_get_int_member(e, "tid") == 100)
                busy += json_object_get_double_member(e, "dur"), events++;
        }
        blocks[dense]++;
        /* microseconds: 0.5 ns an event */
        wrong +=
            dense ? moe > 0 || events == 0 || fabs(busy - dur) > 5e-4 * (events + 1) : moe == 0;
    }
    printf("\n    %u dense and %u MoE layer blocks, %u drawn wrong", blocks[1], blocks[0], wrong);
    CU_ASSERT(blocks[0] > 0 && blocks[1] > 0);
    CU_ASSERT_EQUAL(wrong, 0);
    moe_trace_memory_rises(ev);
    simpar_test_tmpdir_remove(g_steal_pointer(&dir));
}

/* The summed durations of GPU 0's trace events: the layer blocks of phase `fwd` (fwd[0]) and the
 * events whose name starts with `prefix` (fwd[1]); `count` the latter's. */
static void
moe_trace_sums(const char *path, const char *block, const char *prefix, double sum[2], guint *count)
{
    g_autoptr(JsonParser) p = json_parser_new();
    CU_ASSERT_TRUE_FATAL(json_parser_load_from_file(p, path, NULL));
    JsonArray *ev =
        json_object_get_array_member(json_node_get_object(json_parser_get_root(p)), "traceEvents");
    sum[0] = sum[1] = 0, *count = 0;
    for (guint i = 0; i < json_array_get_length(ev); i++) {
        JsonObject *e = json_array_get_object_element(ev, i);
        if (!g_str_equal(json_object_get_string_member(e, "ph"), "X") ||
            json_object_get_int_member(e, "pid") != 0)
            continue;
        const char *name = json_object_get_string_member(e, "name");
        if (g_str_equal(name, block))
            sum[0] += moe_event_s(e, "dur");
        if (g_str_has_prefix(name, prefix))
            sum[1] += moe_event_s(e, "dur"), (*count)++;
    }
}

/* --moe-shared-expert-overlap (Megatron-Core's, shared_experts.py): the all-to-alls run on a
 * stream of their own and the compute stream runs the shared experts meanwhile. With EP 32 over
 * 4 nodes each all-to-all outlasts the shared experts' ops beside it, so on GPU 0's trace a
 * layer's forward blocks are shorter by exactly those ops (fc1, activation, fc2) and its
 * backward blocks by theirs less the add of x's two gradients, on the analytic and the SimGrid
 * backend; the step is shorter, and the JSON says the overlap is on. Fails with the shared
 * experts after the all-to-alls, or the all-to-alls on the compute stream. */
static void
test_the_shared_experts_run_beside_the_all_to_alls(void)
{
    g_autofree char *dir = g_dir_make_tmp("simpar-moe-XXXXXX", NULL);
    const char *job = "--topology " H100 " --json --model llama3-8b --layers 4 --seq 1024 "
                      "--experts 32 --topk 2 --moe-ffn 1024 --shared-ffn 2048 --tp-mode 1d --tp 1 "
                      "--pp 2 --dp 32 --ep 32 --global-batch 128";
    const char *backends[] = {"analytic", "simgrid"};
    for (guint b = 0; b < G_N_ELEMENTS(backends); b++) {
        double fwd[2][2], bwd[2][2], add[2], step[2];
        guint n[3];
        for (guint o = 0; o < 2; o++) {
            g_autofree char *path = g_build_filename(dir, o ? "on.json" : "off.json", NULL);
            g_autofree char *args =
                g_strdup_printf("%s --backend %s --trace %s%s", job, backends[b], path,
                                o ? " --moe-shared-expert-overlap" : "");
            g_autoptr(JsonParser) p = NULL;
            JsonObject *row = moe_step(args, &p);
            step[o] = moe_member(row, "step_time_s");
            JsonObject *config = json_object_get_object_member(row, "config");
            CU_ASSERT_EQUAL(json_object_get_boolean_member_with_default(
                                config, "moe_shared_expert_overlap", !o),
                            o);
            moe_trace_sums(path, "layer.fwd", "fwd.shared.", fwd[o], &n[0]);
            moe_trace_sums(path, "layer.bwd", "bwd.shared.", bwd[o], &n[1]);
            double none[2];
            moe_trace_sums(path, "-", "bwd.moe.add-shared", none, &n[2]);
            add[o] = none[1];
        }
        /* whole nanoseconds: 0.5 ns an event */
        double tol_f = 0.5e-9 * (2 * n[0] + 8), tol_b = 0.5e-9 * (2 * n[1] + n[2] + 10);
        printf("\n    %s: forward %.9g -> %.9g s (shared %.9g s), backward %.9g -> %.9g s "
               "(shared %.9g s, add %.9g s), step %.6g -> %.6g s",
               backends[b], fwd[0][0], fwd[1][0], fwd[0][1], bwd[0][0], bwd[1][0], bwd[0][1],
               add[1], step[0], step[1]);
        CU_ASSERT(n[0] > 0 && n[1] > 0 && n[2] > 0 && add[0] == 0);
        CU_ASSERT(fabs(fwd[0][0] - fwd[1][0] - fwd[0][1]) <= tol_f);
        CU_ASSERT(fabs(bwd[0][0] - bwd[1][0] - (bwd[0][1] - add[1])) <= tol_b);
        CU_ASSERT(step[1] < step[0]);
    }
    simpar_test_tmpdir_remove(g_steal_pointer(&dir));
}

/* The summed durations on GPU 0's trace of the merged layers' nodes named in `names` (n of
 * them), each name's in sum[i]; `count` the events. */
static void
moe_trace_nodes(const char *path, const char *const *names, guint n, double *sum, guint *count)
{
    g_autoptr(JsonParser) p = json_parser_new();
    CU_ASSERT_TRUE_FATAL(json_parser_load_from_file(p, path, NULL));
    JsonArray *ev =
        json_object_get_array_member(json_node_get_object(json_parser_get_root(p)), "traceEvents");
    memset(sum, 0, n * sizeof *sum), *count = 0;
    for (guint i = 0; i < json_array_get_length(ev); i++) {
        JsonObject *e = json_array_get_object_element(ev, i);
        if (!g_str_equal(json_object_get_string_member(e, "ph"), "X") ||
            json_object_get_int_member(e, "pid") != 0)
            continue;
        for (guint k = 0; k < n; k++)
            if (g_str_equal(json_object_get_string_member(e, "name"), names[k]))
                sum[k] += moe_event_s(e, "dur"), (*count)++;
    }
}

/* --overlap-moe-expert-parallel-comm (Megatron-Core's combined 1F1B; combined_1f1b.py,
 * model_chunk_schedule_plan.py): one stage and two micro-batches run F0, then F1 merged with B0
 * layer by layer, then B1. In each merged layer the backward's combine runs beside the forward's
 * pre-dispatch node, the forward's dispatch beside the backward's mlp, the backward's dispatch
 * beside the forward's mlp, the forward's combine beside the backward's pre-dispatch; here each
 * communication node is the shorter of its pair, so by hand the merged layer takes its four
 * compute nodes alone and the step is shorter by exactly the four communication nodes of each
 * of the 2 layers, on the analytic backend (to the trace's nanosecond). Fails with the
 * all-to-all nodes on the compute stream (no saving), or with a node waiting for the wrong one. */
static void
test_merged_forward_and_backward_hide_the_all_to_alls_exactly(void)
{
    g_autofree char *dir = g_dir_make_tmp("simpar-moe-XXXXXX", NULL);
    const char *job = "--topology " H100 " --json --model llama3-8b --layers 2 --seq 1024 "
                      "--experts 16 --topk 2 --moe-ffn 1024 --tp-mode 1d --tp 1 --pp 1 --dp 64 "
                      "--ep 8 --global-batch 128 --backend analytic";
    g_autofree char *path = g_build_filename(dir, "on.json", NULL);
    g_autofree char *on =
        g_strdup_printf("%s --trace %s --overlap-moe-expert-parallel-comm", job, path);
    g_autoptr(JsonParser) p0 = NULL, p1 = NULL;
    JsonObject *off_row = moe_step(job, &p0), *on_row = moe_step(on, &p1);
    double step[2] = {moe_member(off_row, "step_time_s"), moe_member(on_row, "step_time_s")};
    CU_ASSERT_FALSE(json_object_has_member(json_object_get_object_member(off_row, "config"),
                                           "overlap_moe_expert_parallel_comm"));
    CU_ASSERT_TRUE(
        json_object_get_boolean_member_with_default(json_object_get_object_member(on_row, "config"),
                                                    "overlap_moe_expert_parallel_comm", FALSE));
    /* beside each other: comm[k] runs beside compute[k] */
    const char *const comm[] = {"moe.bwd.combine", "moe.fwd.dispatch", "moe.bwd.dispatch",
                                "moe.fwd.combine"};
    const char *const compute[] = {"moe.fwd.pre", "moe.bwd.mlp", "moe.fwd.mlp", "moe.bwd.pre"};
    double c[4], k[4];
    guint n_comm, n_compute;
    moe_trace_nodes(path, comm, 4, c, &n_comm);
    moe_trace_nodes(path, compute, 4, k, &n_compute);
    CU_ASSERT_EQUAL(n_comm, 4 * 2); /* one merged pair of 2 layers */
    CU_ASSERT_EQUAL(n_compute, 4 * 2);
    double hidden = 0;
    for (guint i = 0; i < 4; i++) {
        CU_ASSERT(c[i] > 0 && c[i] < k[i]); /* the case computed by hand */
        hidden += c[i];
    }
    double tol = 0.5e-9 * (n_comm + 2); /* whole nanoseconds: 0.5 ns an event */
    printf("\n    step %.9g -> %.9g s, all-to-all nodes %.9g s", step[0], step[1], hidden);
    CU_ASSERT(fabs(step[0] - step[1] - hidden) <= tol);
    simpar_test_tmpdir_remove(g_steal_pointer(&dir));
}

/* The time simpar collective gives one collective of S bytes (nccl-tests' size) over the
 * first two GPUs on `backend`. */

/* --overlap-moe-expert-parallel-comm with the MoE block's moe_act and shared_experts
 * recomputation, which Megatron-Core allows with it (it refuses moe): the merged nodes hold the
 * recomputed ops, so the step's compute grows by exactly what it grows by without the flag, and
 * the step with them. Fails when a recomputed op falls into an all-to-all node (no compute). */
static void
test_merged_layers_recompute_the_experts_activation_and_shared_experts(void)
{
    const char *job = "--topology " H100 " --json --model llama3-8b --layers 2 --seq 1024 "
                      "--experts 16 --topk 2 --moe-ffn 1024 --shared-ffn 512 --tp-mode 1d --tp 1 "
                      "--pp 1 --dp 64 --ep 8 --global-batch 128 --backend analytic "
                      "--recompute selective --recompute-modules layernorm";
    const char *const flags[] = {"", " --overlap-moe-expert-parallel-comm"};
    double compute[2][2], step[2][2];
    for (guint f = 0; f < 2; f++)
        for (guint k = 0; k < 2; k++) {
            g_autofree char *args =
                g_strconcat(job, k ? ",moe_act,shared_experts" : "", flags[f], NULL);
            g_autoptr(JsonParser) parser = NULL;
            JsonObject *row = moe_step(args, &parser);
            compute[f][k] = moe_member(row, "compute_s"),
            step[f][k] = moe_member(row, "step_time_s");
        }
    double unmerged = compute[0][1] - compute[0][0], merged = compute[1][1] - compute[1][0];
    printf("\n    recomputed compute: %.9g s unmerged, %.9g s merged; merged step %.9g -> %.9g s ",
           unmerged, merged, step[1][0], step[1][1]);
    CU_ASSERT(unmerged > 0);
    CU_ASSERT_DOUBLE_EQUAL(merged, unmerged, 1e-9 * compute[1][1]);
    CU_ASSERT(step[1][1] > step[1][0]);
}

/* --recompute-modules moe runs the MoE block's forward again before its backward, its
 * all-to-alls too: a layer's dispatch and combine all-to-alls take 3/2 of their time without it
 * (forward, recomputed forward, backward), exactly on the analytic backend, and the step
 * predicts (it aborted while the merged 1F1B's nodes were read from every MoE block). */
static void
test_recomputing_the_moe_block_repeats_its_all_to_alls(void)
{
    const char *job = "--topology " H100 " --json --model llama3-8b --layers 2 --seq 1024 "
                      "--experts 16 --topk 2 --moe-ffn 1024 --tp-mode 1d --tp 1 --pp 1 --dp 64 "
                      "--ep 8 --global-batch 128 --backend analytic --recompute selective";
    g_autofree char *with = g_strconcat(job, " --recompute-modules moe", NULL);
    g_autoptr(JsonParser) p0 = NULL, p1 = NULL;
    JsonObject *off = moe_step(job, &p0), *on = moe_step(with, &p1);
    const char *const keys[] = {"moe_dispatch_s", "moe_combine_s"};
    for (guint k = 0; k < G_N_ELEMENTS(keys); k++) {
        double a = moe_member(off, keys[k]), b = moe_member(on, keys[k]);
        printf("\n    %s %.9g -> %.9g s ", keys[k], a, b);
        CU_ASSERT(a > 0);
        CU_ASSERT_DOUBLE_EQUAL(b, 1.5 * a, 1e-9 * b);
    }
    CU_ASSERT(moe_member(on, "step_time_s") > moe_member(off, "step_time_s"));
}

/* Expert tensor parallelism 2 (MOE_JOB with --etp 2: 16 GPUs of one node are EP 8 x ETP 2,
 * each ETP pair two neighbours): an MoE layer runs two all-gathers (the dispatch's rows, the
 * combine's gradient) and two reduce-scatters (the experts' output, the dispatch's gradient) over
 * the pair, each of the E C h rows a GPU received, C = ceil(T k / E) = ceil(1024 x 2 / 16) = 128:
 * 16 x 128 x 4096 bf16 elements a GPU, S = 2 x 16 MiB in nccl-tests' terms. The report's
 * moe_expert_tp_s is their time as simpar collective gives it on two GPUs of the node, on the
 * analytic and the SimGrid backends (the pairs of the block run side by side on the NVSwitch);
 * ETP 1 reports none, and ETP 2's collectives sit on their own axis, "etp". */
static void
test_etp_2_times_its_all_gathers_and_reduce_scatters_as_the_collectives(void)
{
    double bytes = 2.0 * 16 * 128 * 4096 * 2;
    const char *backends[] = {"analytic", "simgrid"};
    for (guint i = 0; i < G_N_ELEMENTS(backends); i++) {
        g_autofree char *args = g_strdup_printf(MOE_JOB " --etp 2 --backend %s", backends[i]);
        g_autoptr(JsonParser) p = NULL, p1 = NULL;
        JsonObject *step = moe_step(args, &p);
        double want = 2 * moe_collective_s("allgather", 2, bytes, backends[i]) +
                      2 * moe_collective_s("reducescatter", 2, bytes, backends[i]);
        double got = moe_member(step, "moe_expert_tp_s");
        if (fabs(got - want) > 1e-9 * want)
            printf("\n    %s: moe_expert_tp_s %.9g, collectives %.9g", backends[i], got, want);
        CU_ASSERT(fabs(got - want) <= 1e-9 * want);
        CU_ASSERT(moe_has_axis(step, "etp"));
        g_autofree char *one = g_strdup_printf(MOE_JOB " --backend %s", backends[i]);
        CU_ASSERT(!json_object_has_member(moe_step(one, &p1), "moe_expert_tp_s"));
    }
}

/* Every mode (no --tp-mode) of a model with multi-head latent attention: the 1-D row predicts,
 * the other modes are rows that say why MLA does not run in them (it used to end the command
 * with the 2-D mode's error); asked for explicitly, 2-D is the error. */
static void
test_an_mla_model_in_every_mode_predicts_1d_and_says_why_not_the_others(void)
{
    SimparCliRun r = simpar_cli_run("--topology " H100 " --model deepseek-v3 --layers 6 --tp 1 "
                                    "--pp 2 --ep 32 --global-batch 64 --backend analytic");
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "\n1d    T=1 "));
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "2d    -            64   not simulated: --tp-mode 2d: "
                                         "multi-head latent attention"));
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "3d    -            64   not simulated: --tp-mode 3d: "
                                         "multi-head latent attention"));
    simpar_cli_run_clear(&r);
    CU_ASSERT_TRUE(simpar_cli_refused("--topology " H100 " --model deepseek-v3 --layers 6 "
                                      "--tp-mode 2d --tp 1 --pp 2 --ep 32 --global-batch 64",
                                      2, "runs in --tp-mode 1d only"));
}

static CU_TestInfo predict_tests[] = {
    {"an MoE step names its dispatch and combine all-to-alls and expert GEMMs",
     test_an_moe_step_names_dispatch_combine_and_expert_gemms},
    {"a dense model has no MoE figures", test_a_dense_model_has_no_moe_figures},
    {"the all-gather dispatcher's all-gathers and reduce-scatters take simpar collective's time "
     "(analytic, formula, SimGrid)",
     test_the_all_gather_dispatcher_s_collectives_take_their_collective_time},
    {"an MoE model's dense layers are timed as dense layers: a closed construction",
     test_dense_layers_are_timed_as_dense_layers},
    {"an MoE model's dense layers with pipelines, the formula's step the analytic one's, SimGrid's "
     "close",
     test_dense_layers_with_pipelines_on_every_backend},
    {"a trace draws an MoE model's dense layers as the dense layer's ops",
     test_a_trace_draws_dense_layers_as_the_dense_layer},
    {"the step line names the expert-parallel exposure",
     test_the_step_line_names_expert_parallel_exposure},
    {"twice the imbalance doubles the expert GEMMs' rows",
     test_twice_the_imbalance_doubles_the_expert_gemms_rows},
    {"an expert-parallel group across nodes is exposed between nodes",
     test_an_ep_group_across_nodes_is_exposed_between_nodes},
    {"--order places the expert-parallel groups", test_order_places_the_expert_parallel_groups},
    {"DeepEP dispatches faster than the all-to-all with node-limited routing, on every backend",
     test_deepep_dispatches_faster_than_the_all_to_all_with_node_limited_routing},
    {"group-limited routing inside one node predicts on every backend, its all-to-alls in the "
     "node",
     test_group_limited_routing_inside_one_node_predicts},
    {"DeepEP with ETP 2 runs over the TP x EP group: axis tp_ep, no expert-TP collective, faster",
     test_deepep_with_etp_runs_over_the_tp_ep_group},
    {"the experts' reductions leave the step on alike ranks, as every rank gives it",
     test_the_experts_reductions_leave_the_step_on_alike_ranks},
    {"2-D, 2.5-D and 3-D MoE steps time the all-to-alls to the MoE block's tokens on every "
     "backend, "
     "the formula's equal to the analytic replay's",
     test_grid_modes_time_the_all_to_alls_to_the_moe_block},
    {"--moe-shared-expert-overlap hides the shared experts under the all-to-alls exactly, on "
     "the analytic and SimGrid backends",
     test_the_shared_experts_run_beside_the_all_to_alls},
    {"--overlap-moe-expert-parallel-comm hides one micro-batch's all-to-alls under the other's "
     "compute exactly, as computed by hand on the analytic backend",
     test_merged_forward_and_backward_hide_the_all_to_alls_exactly},
    {"--overlap-moe-expert-parallel-comm's merged nodes hold moe_act's and shared_experts' "
     "recomputation",
     test_merged_layers_recompute_the_experts_activation_and_shared_experts},
    {"--recompute-modules moe repeats the MoE block's all-to-alls in the backward",
     test_recomputing_the_moe_block_repeats_its_all_to_alls},
    {"an MoE step's trace shows the MoE block in every layer, with the prediction's times on "
     "every backend",
     test_an_moe_trace_shows_the_moe_block_with_the_prediction_s_times},
    {"an ETP 2 step's trace shows the expert-TP collectives with the prediction's times",
     test_an_etp_trace_shows_the_expert_tp_collectives_with_the_prediction_s_times},
    {"ETP 2's all-gathers and reduce-scatters take the time simpar collective gives them, on "
     "the analytic and SimGrid backends",
     test_etp_2_times_its_all_gathers_and_reduce_scatters_as_the_collectives},
    {"--moe-flex-backend hybridep all-gathers the routing maps before each forward dispatch: the "
     "step grows by layers x micro-batches x simpar collective's time",
     test_hybridep_gathers_the_routing_maps_before_each_forward_dispatch},
    {"an MLA model in every mode predicts 1-D and says why not the others",
     test_an_mla_model_in_every_mode_predicts_1d_and_says_why_not_the_others},
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
