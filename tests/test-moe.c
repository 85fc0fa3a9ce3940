/* test-moe.c - mixture-of-experts layers: the routing, the MoE block's schedule run by the host
 * executor against the serial reference (reference-moe.c), the tokens its all-to-all moves, and
 * 2-D, 2.5-D and 3-D layers with the MoE block (reference-layer.c and reference-moe.c joined).
 */
#include "generators.h"
#include "host.h"
#include "moe.h"
#include "reference-layer.h"
#include "reference-moe.h"
#include "simpar-test.h"
#include <math.h>
#include <string.h>

#define MOE_TOL 1e-9

/* A small MoE model: h=16, experts of width 8, SwiGLU (or GeLU), fp64. */
static SimparModel
moe_model(gint64 experts, gint64 top_k, gint64 shared, SimparMlp mlp)
{
    SimparModel m;
    g_assert(simpar_model_preset("tiny", &m, NULL));
    m.hidden = 16, m.heads = 2, m.dtype = SIMPAR_DTYPE_FP64, m.mlp = mlp;
    m.no_bias = TRUE;
    m.moe = (SimparMoeConfig){
        .experts = experts, .top_k = top_k, .moe_ffn = 8, .shared_ffn = shared, .moe_every = 1};
    return m;
}

/* The routing of the block's first MoE op, rank 0's view. */
static SimparMoe
moe_route_of(const SimparSchedule *sched)
{
    for (guint i = 0; i < simpar_schedule_n_ops(sched); i++) {
        const SimparOp *op = simpar_schedule_op(sched, i);
        if (simpar_op_is_moe(op->kind)) {
            SimparMoe m = op->u.moe;
            m.ep_rank = 0, m.token0 = 0;
            return m;
        }
    }
    g_assert_not_reached();
}

/* Whether shard tensor `name` is the micro-batch's of `prefix` ("" the first, "mb1." the second
 * of simpar_moe_pair_build's); *ref_name its name in the reference. */
static gboolean
moe_mine(const char *name, const char *prefix, const char **ref_name)
{
    gboolean second = g_str_has_prefix(name, "mb1.");
    *ref_name = name + (second ? strlen("mb1.") : 0);
    return *prefix != '\0' ? second : !second;
}

/* Inputs from the reference's tensors into every INPUT shard of the micro-batch of `prefix`. */
static void
moe_fill_of(const SimparSchedule *sched, SimparHost *host, RefMoe *ref, const char *prefix)
{
    guint n;
    const char *name;
    const SimparShard *sh = simpar_schedule_shards(sched, &n);
    for (guint i = 0; i < n; i++) {
        if (sh[i].role != SIMPAR_SHARD_INPUT || !moe_mine(sh[i].tensor, prefix, &name))
            continue;
        RefMoeTensor *t = ref_moe_tensor(ref, name);
        g_assert(t != NULL && sh[i].col0 + sh[i].cols <= t->cols);
        double *buf = simpar_host_buffer(host, sh[i].view.buf) + sh[i].view.off;
        for (guint64 r = 0; r < sh[i].rows; r++) /* a block of columns: expert TP's slices */
            memcpy(buf + r * sh[i].cols, t->data + (sh[i].row0 + r) * t->cols + sh[i].col0,
                   sizeof(double) * sh[i].cols);
    }
}

/* The largest difference between the outputs (partial ones summed over their ranks) and the
 * reference, over the largest reference magnitude (at least 1); *compared counts the tensors. */
static double
moe_compare_of(const SimparSchedule *sched, SimparHost *host, RefMoe *ref, const char *prefix,
               guint *compared)
{
    guint n;
    const char *name;
    const SimparShard *sh = simpar_schedule_shards(sched, &n);
    g_autoptr(GHashTable) sums = g_hash_table_new_full(NULL, NULL, NULL, g_free);
    double worst = 0;
    for (guint i = 0; i < n; i++) {
        if (sh[i].role == SIMPAR_SHARD_INPUT || !moe_mine(sh[i].tensor, prefix, &name))
            continue;
        RefMoeTensor *t = ref_moe_tensor(ref, name);
        g_assert(t != NULL);
        double *sum = g_hash_table_lookup(sums, t->name);
        if (sum == NULL) {
            sum = g_new0(double, t->rows * t->cols);
            g_hash_table_insert(sums, (gpointer) t->name, sum);
        }
        const double *buf = simpar_host_buffer(host, sh[i].view.buf) + sh[i].view.off;
        for (guint64 r = 0; r < sh[i].rows; r++)
            for (guint64 col = 0; col < sh[i].cols; col++)
                sum[(sh[i].row0 + r) * t->cols + sh[i].col0 + col] += buf[r * sh[i].cols + col];
    }
    GHashTableIter it;
    gpointer key, value;
    g_hash_table_iter_init(&it, sums);
    *compared = 0;
    while (g_hash_table_iter_next(&it, &key, &value)) {
        RefMoeTensor *t = ref_moe_tensor(ref, key);
        const double *got = value;
        double scale = 1, diff = 0;
        for (guint64 e = 0; e < t->rows * t->cols; e++)
            scale = MAX(scale, fabs(t->data[e]));
        for (guint64 e = 0; e < t->rows * t->cols; e++)
            diff = MAX(diff, fabs(got[e] - t->data[e]));
        worst = MAX(worst, diff / scale);
        (*compared)++;
    }
    return worst;
}

static void
moe_fill(const SimparSchedule *sched, SimparHost *host, RefMoe *ref)
{
    moe_fill_of(sched, host, ref, "");
}

static double
moe_compare(const SimparSchedule *sched, SimparHost *host, RefMoe *ref, guint *compared)
{
    return moe_compare_of(sched, host, ref, "", compared);
}

typedef struct {
    guint ep, tokens;
    gint64 experts, top_k, shared, groups, limit;
    SimparMlp mlp;
    SimparRouterScore router;
    double capacity;
    guint node_ranks; /* DeepEP's hops over nodes of this many ranks; 0: the flat all-to-all */
    guint etp;        /* expert tensor parallelism; 0: 1 */
    gboolean gather;  /* Megatron-Core's all-gather dispatcher (simpar_moe_gather_block_build) */
} MoeCase;

/* The case's block: the all-to-all (or DeepEP's hops), or the all-gather dispatcher. */
static SimparSchedule *
moe_case_build(const MoeCase *mc, const SimparModel *m, guint recompute, GError **error)
{
    guint etp = MAX(mc->etp, 1u);
    if (mc->gather)
        return simpar_moe_gather_block_build(m, mc->ep, etp, mc->tokens, 7, 0, recompute, error);
    return simpar_moe_block_build(m, mc->ep, etp, mc->node_ranks, mc->tokens, 7, 0, recompute,
                                  error);
}

/* Builds, runs and compares one case, the shared experts beside the all-to-alls with `overlap`
 * (--moe-shared-expert-overlap); returns the choices the reference dropped. */
static guint
moe_check_recompute(const MoeCase *mc, guint n_tensors, gboolean overlap, guint recompute,
                    SimparSchedule **out)
{
    SimparModel m = moe_model(mc->experts, mc->top_k, mc->shared, mc->mlp);
    m.moe.router = mc->router, m.moe.groups = mc->groups, m.moe.group_limit = mc->limit;
    m.moe.capacity = mc->capacity, m.moe.shared_overlap = overlap;
    CU_ASSERT_FATAL(simpar_model_validate(&m, NULL));
    g_autoptr(GError) error = NULL;
    g_autoptr(SimparSchedule) sched = moe_case_build(mc, &m, recompute, &error);
    CU_ASSERT_PTR_NOT_NULL_FATAL(sched);
    CU_ASSERT_FATAL(simpar_schedule_check(sched, &error));
    CU_ASSERT_FATAL(simpar_schedule_check_hazards(sched, &error));
    SimparMoe route = moe_route_of(sched);
    g_autoptr(RefMoe) ref = ref_moe_new(&m, &route, 11);
    g_autoptr(SimparHost) host = simpar_host_new(sched);
    moe_fill(sched, host, ref);
    CU_ASSERT_FATAL(simpar_host_run(host, &error));
    ref_moe_run(ref);
    guint compared;
    double err = moe_compare(sched, host, ref, &compared);
    if (err > MOE_TOL || compared != n_tensors)
        printf("\n  ep %u etp %u E %" G_GINT64_FORMAT " top-%" G_GINT64_FORMAT
               "%s: %u tensors compared, worst relative error %.3g\n",
               mc->ep, MAX(mc->etp, 1u), mc->experts, mc->top_k, mc->gather ? " allgather" : "",
               compared, err);
    CU_ASSERT(err <= MOE_TOL);
    CU_ASSERT_EQUAL(compared, n_tensors);
    if (out != NULL)
        *out = g_steal_pointer(&sched);
    return ref->dropped;
}

static guint
moe_check_overlap(const MoeCase *mc, guint n_tensors, gboolean overlap)
{
    return moe_check_recompute(mc, n_tensors, overlap, 0, NULL);
}

static guint
moe_check(const MoeCase *mc, guint n_tensors)
{
    return moe_check_overlap(mc, n_tensors, FALSE);
}

/* Rank 0's ops named "bwd.recompute." + prefix. */
static guint
moe_count_recomputed(const SimparSchedule *sched, const char *prefix)
{
    g_autofree char *want = g_strconcat("bwd.recompute.", prefix, NULL);
    guint n = 0;
    for (guint i = 0; i < simpar_schedule_n_ops(sched); i++) {
        const SimparOp *op = simpar_schedule_op(sched, i);
        n += op->rank == 0 && g_str_has_prefix(op->name, want);
    }
    return n;
}

/* Selective's MoE modules (plan.h): moe runs the block's whole forward again before its
 * backward, both all-to-alls (or DeepEP's four hops) included; moe_act the routed experts'
 * activation before fc2's backward; shared_experts the shared experts' fc1, activation and fc2
 * before their backward. Each block, with each and all of them, still equals the serial one
 * (every output and gradient; the hazard check passes), flat, DeepEP's hops and ETP 2. */
static void
test_recomputed_moe_modules_equal_the_serial_block(void)
{
    const MoeCase cases[] = {
        {4, 12, 8, 2, 12, 0, 0, SIMPAR_MLP_SWIGLU, SIMPAR_ROUTER_SOFTMAX, 0, 0, 0, FALSE},
        {8, 10, 16, 4, 8, 4, 2, SIMPAR_MLP_SWIGLU, SIMPAR_ROUTER_SIGMOID, 0, 2, 1, FALSE},
        {2, 8, 4, 2, 6, 0, 0, SIMPAR_MLP_GELU, SIMPAR_ROUTER_SOFTMAX, 0, 0, 2, FALSE},
        {4, 16, 8, 2, 0, 0, 0, SIMPAR_MLP_SWIGLU, SIMPAR_ROUTER_SOFTMAX, 0.5, 0, 0, FALSE},
    };
    const guint mods[] = {
        SIMPAR_RECOMPUTE_MOE, SIMPAR_RECOMPUTE_MOE_ACT, SIMPAR_RECOMPUTE_SHARED_EXPERTS,
        SIMPAR_RECOMPUTE_MOE | SIMPAR_RECOMPUTE_MOE_ACT | SIMPAR_RECOMPUTE_SHARED_EXPERTS};
    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        const MoeCase *mc = &cases[i];
        guint n_tensors = mc->shared > 0 ? 7 : 5;
        for (guint k = 0; k < G_N_ELEMENTS(mods); k++) {
            SimparSchedule *sched = NULL;
            moe_check_recompute(mc, n_tensors, FALSE, mods[k], &sched);
            CU_ASSERT_PTR_NOT_NULL_FATAL(sched);
            gboolean moe = mods[k] & SIMPAR_RECOMPUTE_MOE;
            guint a2a = moe_count_recomputed(sched, "moe.all-to-all");
            CU_ASSERT_EQUAL(a2a, moe ? (mc->node_ranks > 0 ? 4u : 2u) : 0u);
            CU_ASSERT_EQUAL(moe_count_recomputed(sched, "router.gemm"), moe ? 1u : 0u);
            CU_ASSERT_EQUAL(moe_count_recomputed(sched, "experts.fc1.gemm"), moe ? 1u : 0u);
            guint act = (moe ? 1 : 0) + (mods[k] & SIMPAR_RECOMPUTE_MOE_ACT ? 1 : 0);
            CU_ASSERT_EQUAL(moe_count_recomputed(sched, "experts.act"), act);
            guint shared = mc->shared > 0
                               ? (moe ? 1 : 0) + (mods[k] & SIMPAR_RECOMPUTE_SHARED_EXPERTS ? 1 : 0)
                               : 0;
            CU_ASSERT_EQUAL(moe_count_recomputed(sched, "shared.fc1.gemm"), shared);
            CU_ASSERT_EQUAL(moe_count_recomputed(sched, "shared.fc2.gemm"), shared);
            simpar_schedule_free(sched);
        }
    }
}

static void
test_a_dropless_softmax_block_with_a_shared_expert_equals_the_serial_one(void)
{
    /* y, dx, router, experts fc1 and fc2, shared fc1 and fc2 */
    MoeCase mc = {4, 12, 8, 2, 12, 0, 0, SIMPAR_MLP_SWIGLU, SIMPAR_ROUTER_SOFTMAX, 0, 0, 0, FALSE};
    CU_ASSERT_EQUAL(moe_check(&mc, 7), 0);
}

static void
test_sigmoid_node_limited_routing_equals_the_serial_one(void)
{
    /* DeepSeek-V3's shape in small: 16 experts in 4 groups, top-4 within 2 groups */
    MoeCase mc = {4, 10, 16, 4, 8, 4, 2, SIMPAR_MLP_SWIGLU, SIMPAR_ROUTER_SIGMOID, 0, 0, 0, FALSE};
    CU_ASSERT_EQUAL(moe_check(&mc, 7), 0);
}

static void
test_a_gelu_top_1_block_without_shared_experts_equals_the_serial_one(void)
{
    MoeCase mc = {2, 9, 4, 1, 0, 0, 0, SIMPAR_MLP_GELU, SIMPAR_ROUTER_SOFTMAX, 0, 0, 0, FALSE};
    CU_ASSERT_EQUAL(moe_check(&mc, 5), 0);
}

static void
test_a_capacity_factor_drops_the_same_choices_as_the_serial_one(void)
{
    /* capacity ceil(16 x 2 / 8 x 0.5) = 2 rows per (rank, expert): some choices dropped */
    MoeCase mc = {4, 16, 8, 2, 0, 0, 0, SIMPAR_MLP_SWIGLU, SIMPAR_ROUTER_SOFTMAX, 0.5, 0, 0, FALSE};
    guint dropped = moe_check(&mc, 5);
    CU_ASSERT(dropped > 0);
}

static void
test_one_rank_holding_every_expert_equals_the_serial_one(void)
{
    MoeCase mc = {1, 8, 4, 2, 8, 0, 0, SIMPAR_MLP_SWIGLU, SIMPAR_ROUTER_SOFTMAX, 0, 0, 0, FALSE};
    CU_ASSERT_EQUAL(moe_check(&mc, 7), 0);
}

/* --moe-shared-expert-overlap: every all-to-all on a stream of its own, the shared experts on
 * the compute stream meanwhile, x's gradient summed from its routed and shared parts; the block
 * is still the serial one (every output and gradient), and the hazard check proves the streams'
 * waits, with the flat all-to-all and with DeepEP's hops. */
static void
test_shared_experts_beside_the_all_to_alls_equal_the_serial_one(void)
{
    MoeCase flat = {4, 12, 8, 2,    12, 0, 0, SIMPAR_MLP_SWIGLU, SIMPAR_ROUTER_SOFTMAX,
                    0, 0,  1, FALSE};
    CU_ASSERT_EQUAL(moe_check_overlap(&flat, 7, TRUE), 0);
    MoeCase hops = {8, 10, 16, 4,    8, 4, 2, SIMPAR_MLP_SWIGLU, SIMPAR_ROUTER_SIGMOID,
                    0, 2,  1,  FALSE};
    CU_ASSERT_EQUAL(moe_check_overlap(&hops, 7, TRUE), 0);
    /* with expert tensor parallelism: its all-gathers and reduce-scatters on the compute stream */
    MoeCase etp = {2, 12, 8, 2, 12, 0, 0, SIMPAR_MLP_SWIGLU, SIMPAR_ROUTER_SOFTMAX, 0, 0, 2, FALSE};
    CU_ASSERT_EQUAL(moe_check_overlap(&etp, 7, TRUE), 0);
    /* the all-to-alls are on the second stream, nothing else is */
    SimparModel m = moe_model(8, 2, 12, SIMPAR_MLP_SWIGLU);
    m.moe.shared_overlap = TRUE;
    g_autoptr(SimparSchedule) sched = simpar_moe_block_build(&m, 4, 1, 0, 12, 7, 0, 0, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(sched);
    CU_ASSERT_EQUAL(simpar_schedule_n_streams(sched), 2);
    guint beside = 0, a2a = 0;
    for (guint i = 0; i < simpar_schedule_n_ops(sched); i++) {
        const SimparOp *op = simpar_schedule_op(sched, i);
        gboolean coll = op->kind == SIMPAR_OP_COLLECTIVE;
        a2a += coll, beside += op->stream == 1;
        CU_ASSERT_EQUAL(op->stream, coll ? 1u : 0u);
    }
    CU_ASSERT_EQUAL(a2a, 4 * 4); /* dispatch and combine, forward and backward, on 4 ranks */
    CU_ASSERT_EQUAL(beside, a2a);
}

/* ----- --overlap-moe-expert-parallel-comm ----- */

/* One case of simpar_moe_pair_build: two micro-batches on the same weights, the second's forward
 * merged with the first's backward; every output and gradient of each equals the serial
 * reference's for its own x and dy (n_tensors each), and the hazard check passes. */
static void
moe_check_pair(const MoeCase *mc, guint n_tensors)
{
    SimparModel m = moe_model(mc->experts, mc->top_k, mc->shared, mc->mlp);
    m.moe.router = mc->router, m.moe.groups = mc->groups, m.moe.group_limit = mc->limit;
    m.moe.capacity = mc->capacity;
    CU_ASSERT_FATAL(simpar_model_validate(&m, NULL));
    g_autoptr(GError) error = NULL;
    g_autoptr(SimparSchedule) sched =
        simpar_moe_pair_build(&m, mc->ep, MAX(mc->etp, 1u), mc->tokens, 7, 0, &error);
    CU_ASSERT_PTR_NOT_NULL_FATAL(sched);
    CU_ASSERT_FATAL(simpar_schedule_check(sched, &error));
    gboolean safe = simpar_schedule_check_hazards(sched, &error);
    if (!safe)
        printf("\n  %s", error->message);
    CU_ASSERT_FATAL(safe);
    SimparMoe route = moe_route_of(sched);
    g_autoptr(RefMoe) ref0 = ref_moe_new(&m, &route, 11);
    g_autoptr(RefMoe) ref1 = ref_moe_new(&m, &route, 13);
    const char *const weights[] = {"router.weight", "experts.fc1.weight", "experts.fc2.weight",
                                   "shared.fc1.weight", "shared.fc2.weight"};
    for (guint i = 0; i < G_N_ELEMENTS(weights); i++) { /* the same weights, other x and dy */
        RefMoeTensor *a = ref_moe_tensor(ref0, weights[i]), *b = ref_moe_tensor(ref1, weights[i]);
        if (a != NULL)
            memcpy(b->data, a->data, sizeof(double) * a->rows * a->cols);
    }
    g_autoptr(SimparHost) host = simpar_host_new(sched);
    moe_fill_of(sched, host, ref0, "");
    moe_fill_of(sched, host, ref1, "mb1.");
    CU_ASSERT_FATAL(simpar_host_run(host, &error));
    ref_moe_run(ref0);
    ref_moe_run(ref1);
    guint compared[2];
    double err[2] = {moe_compare_of(sched, host, ref0, "", &compared[0]),
                     moe_compare_of(sched, host, ref1, "mb1.", &compared[1])};
    for (guint j = 0; j < 2; j++) {
        if (err[j] > MOE_TOL || compared[j] != n_tensors)
            printf("\n  micro-batch %u: %u tensors compared, worst relative error %.3g", j,
                   compared[j], err[j]);
        CU_ASSERT(err[j] <= MOE_TOL);
        CU_ASSERT_EQUAL(compared[j], n_tensors);
    }
}

/* --overlap-moe-expert-parallel-comm (Megatron-Core's combined 1F1B): micro-batch 1's forward
 * merged with micro-batch 0's backward node by node, the all-to-alls on the second stream; the
 * host executor gives each micro-batch's outputs and gradients as the serial reference does
 * (with a shared expert, expert tensor parallelism, dropped tokens), and the hazard check proves
 * the waits (fails with a micro-batch's op not waiting for its own all-to-all). On the second
 * stream rank 0 runs F0's two all-to-alls, then B0's combine, F1's dispatch, B0's dispatch, F1's
 * combine (model_chunk_schedule_plan.py's order), then B1's two. */
static void
test_merged_micro_batches_equal_the_serial_ones(void)
{
    MoeCase flat = {4, 12, 8, 2,    12, 0, 0, SIMPAR_MLP_SWIGLU, SIMPAR_ROUTER_SOFTMAX,
                    0, 0,  1, FALSE};
    moe_check_pair(&flat, 7);
    MoeCase limited = {4, 10, 16, 4,    8, 4, 2, SIMPAR_MLP_SWIGLU, SIMPAR_ROUTER_SIGMOID,
                       0, 0,  1,  FALSE};
    moe_check_pair(&limited, 7);
    MoeCase etp = {2, 12, 8, 2, 12, 0, 0, SIMPAR_MLP_SWIGLU, SIMPAR_ROUTER_SOFTMAX, 0, 0, 2, FALSE};
    moe_check_pair(&etp, 7);
    MoeCase drop = {4, 16, 8, 2, 0, 0, 0, SIMPAR_MLP_GELU, SIMPAR_ROUTER_SOFTMAX, 0.5, 0, 1, FALSE};
    moe_check_pair(&drop, 5);
    SimparModel m = moe_model(8, 2, 12, SIMPAR_MLP_SWIGLU);
    g_autoptr(SimparSchedule) sched = simpar_moe_pair_build(&m, 4, 1, 12, 7, 0, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(sched);
    guint n;
    const guint *ops = simpar_schedule_rank_ops(sched, 0, &n);
    GString *order = g_string_new(NULL);
    for (guint i = 0; i < n; i++) {
        const SimparOp *op = simpar_schedule_op(sched, ops[i]);
        CU_ASSERT_EQUAL(op->stream, op->kind == SIMPAR_OP_COLLECTIVE ? 1u : 0u);
        if (op->stream == 1)
            g_string_append_c(order, op->phase == SIMPAR_PHASE_FORWARD ? 'F' : 'B');
    }
    CU_ASSERT_STRING_EQUAL(order->str, "FFBFBFBB");
    g_string_free(order, TRUE);
}

/* ----- expert tensor parallelism ----- */

static void
test_etp_2_with_ep_2_and_a_shared_expert_equals_the_serial_one(void)
{
    /* 4 ranks: EP 2 x ETP 2, each expert's SwiGLU fc1 split into 2 column slices of (gate, up)
     * pairs; every output and gradient: y, dx, router, experts fc1 and fc2, shared fc1 and fc2 */
    MoeCase mc = {2, 12, 8, 2, 12, 0, 0, SIMPAR_MLP_SWIGLU, SIMPAR_ROUTER_SOFTMAX, 0, 0, 2, FALSE};
    CU_ASSERT_EQUAL(moe_check(&mc, 7), 0);
}

static void
test_etp_2_with_ep_4_node_limited_and_gelu_equal_the_serial_one(void)
{
    /* 8 ranks: EP 4 x ETP 2, sigmoid node-limited routing; then GeLU top-1 without shared */
    MoeCase mc = {4, 10, 16, 4, 8, 4, 2, SIMPAR_MLP_SWIGLU, SIMPAR_ROUTER_SIGMOID, 0, 0, 2, FALSE};
    CU_ASSERT_EQUAL(moe_check(&mc, 7), 0);
    MoeCase gelu = {4, 9, 4, 1, 0, 0, 0, SIMPAR_MLP_GELU, SIMPAR_ROUTER_SOFTMAX, 0, 0, 2, FALSE};
    CU_ASSERT_EQUAL(moe_check(&gelu, 5), 0);
}

static void
test_etp_4_with_ep_1_and_dropped_tokens_equal_the_serial_one(void)
{
    /* one EP rank, its experts split 4 ways (ETP 4 = the whole group); a capacity factor of 0.5
     * drops choices on each source rank as the serial one does */
    MoeCase mc = {1, 8, 4, 2, 8, 0, 0, SIMPAR_MLP_SWIGLU, SIMPAR_ROUTER_SOFTMAX, 0, 0, 4, FALSE};
    CU_ASSERT_EQUAL(moe_check(&mc, 7), 0);
    MoeCase drop = {2,   16, 8, 2,    0, 0, 0, SIMPAR_MLP_SWIGLU, SIMPAR_ROUTER_SOFTMAX,
                    0.5, 0,  2, FALSE};
    CU_ASSERT(moe_check(&drop, 5) > 0);
}

/* The expert-TP collectives' counts: all-gather and reduce-scatter of E C h per rank, one pair
 * each way, in the group of the EP rank's ETP ranks; the experts' GEMMs f_e / ETP wide. */
static void
test_etp_collectives_move_the_received_rows_and_gemms_split_the_columns(void)
{
    SimparModel m = moe_model(8, 2, 0, SIMPAR_MLP_SWIGLU);
    guint ep = 2, etp = 2, T = 12;
    g_autoptr(SimparSchedule) sched = simpar_moe_block_build(&m, ep, etp, 0, T, 7, 0, 0, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(sched);
    SimparMoe route = moe_route_of(sched);
    guint64 C = route.capacity, per = 8 * C * 16, gathers = 0, scatters = 0;
    for (guint i = 0; i < simpar_schedule_n_ops(sched); i++) {
        const SimparOp *op = simpar_schedule_op(sched, i);
        if (op->kind == SIMPAR_OP_GEMM && g_str_has_suffix(op->name, "experts.fc1.gemm"))
            CU_ASSERT(op->u.gemm.n == 2 * 8 / etp && op->u.gemm.m == ep * etp * C &&
                      op->u.gemm.batch == 8 / ep);
        if (op->kind != SIMPAR_OP_COLLECTIVE || op->u.coll.kind == SIMPAR_COLL_ALL_TO_ALL)
            continue;
        const SimparGroup *g = simpar_schedule_group(sched, op->u.coll.group);
        CU_ASSERT(g_str_equal(g->axis, "etp") && g->size == etp);
        CU_ASSERT(simpar_group_index(sched, op->u.coll.group, op->rank) == op->rank % etp);
        CU_ASSERT_EQUAL(op->u.coll.count, per);
        gathers += op->u.coll.kind == SIMPAR_COLL_ALL_GATHER;
        scatters += op->u.coll.kind == SIMPAR_COLL_REDUCE_SCATTER;
    }
    CU_ASSERT_EQUAL(gathers, 2 * ep * etp); /* forward's dispatch, backward's combine */
    CU_ASSERT_EQUAL(scatters, 2 * ep * etp);
}

/* ----- DeepEP's hops ----- */

static void
test_deepep_hops_over_2_nodes_of_2_equal_the_serial_one(void)
{
    /* every output and gradient: y, dx, router, experts fc1 and fc2, shared fc1 and fc2 */
    MoeCase mc = {4, 12, 8, 2, 12, 0, 0, SIMPAR_MLP_SWIGLU, SIMPAR_ROUTER_SOFTMAX, 0, 2, 0, FALSE};
    CU_ASSERT_EQUAL(moe_check(&mc, 7), 0);
}

static void
test_deepep_hops_with_node_limited_routing_equal_the_serial_one(void)
{
    /* 16 experts in 4 groups, top-4 within 2 of them, over 4 nodes of 2 ranks (one group a
     * node, as DeepSeek-V3 places them) and over 2 nodes of 4 */
    MoeCase mc = {8, 10, 16, 4, 8, 4, 2, SIMPAR_MLP_SWIGLU, SIMPAR_ROUTER_SIGMOID, 0, 2, 0, FALSE};
    CU_ASSERT_EQUAL(moe_check(&mc, 7), 0);
    mc.node_ranks = 4;
    CU_ASSERT_EQUAL(moe_check(&mc, 7), 0);
}

static void
test_deepep_hops_drop_the_same_choices_as_the_serial_one(void)
{
    MoeCase mc = {4, 16, 8, 2, 0, 0, 0, SIMPAR_MLP_GELU, SIMPAR_ROUTER_SOFTMAX, 0.5, 2, 0, FALSE};
    CU_ASSERT(moe_check(&mc, 5) > 0);
    mc.node_ranks = 1, mc.capacity = 0; /* a node a rank: the rail is the whole group */
    CU_ASSERT_EQUAL(moe_check(&mc, 5), 0);
    mc.node_ranks = 4; /* one node: NVLink only */
    CU_ASSERT_EQUAL(moe_check(&mc, 5), 0);
}

/* The bytes the forward dispatch's rail all-to-alls send to other nodes, all ranks: the padded
 * blocks (*padded) and the rows that hold a token (*routed), hop 0's map; the blocks are as
 * long as the fullest one. */
static void
moe_rail_bytes(const SimparSchedule *sched, guint R, double *padded, double *routed)
{
    *padded = *routed = 0;
    guint fullest = 0, cap = 0;
    double ds = simpar_dtype_size(simpar_schedule_dtype(sched));
    for (guint o = 0; o < simpar_schedule_n_ops(sched); o++) {
        const SimparOp *op = simpar_schedule_op(sched, o);
        if (op->phase != SIMPAR_PHASE_FORWARD)
            continue;
        if (op->kind == SIMPAR_OP_COLLECTIVE &&
            g_str_has_suffix(op->name, "moe.all-to-all-dispatch-rail")) {
            guint members = simpar_schedule_group(sched, op->u.coll.group)->size;
            *padded += (double) (members - 1) * op->u.coll.count * ds;
        }
        if (op->kind == SIMPAR_OP_MOE_HOP && op->u.moe.hop == 0) {
            const SimparMoe *m = &op->u.moe;
            gsize n;
            g_autofree gint64 *src = simpar_moe_hop_map(m, NULL, &n);
            for (gsize i = 0; i < n; i++) { /* rows to other nodes, a token's width each */
                if (src[i] >= 0 && i / m->cap_node != m->ep_rank / R)
                    *routed += (double) m->hidden * ds;
                if (src[i] >= 0)
                    fullest = MAX(fullest, (guint) (i % m->cap_node) + 1);
            }
            cap = m->cap_node;
        }
    }
    CU_ASSERT_EQUAL(fullest, cap);
}

/* The flat all-to-all's bytes to other nodes of R ranks, all ranks, forward dispatch. */
static double
moe_flat_inter_node_bytes(const SimparSchedule *sched, guint ep, guint R)
{
    double ds = simpar_dtype_size(simpar_schedule_dtype(sched));
    for (guint o = 0; o < simpar_schedule_n_ops(sched); o++) {
        const SimparOp *op = simpar_schedule_op(sched, o);
        if (op->kind == SIMPAR_OP_COLLECTIVE && op->phase == SIMPAR_PHASE_FORWARD)
            return (double) ep * (ep - R) * op->u.coll.count * ds;
    }
    g_assert_not_reached();
}

static void
test_deepep_sends_a_token_once_per_other_node(void)
{
    /* DeepSeek-V3's shape in small: 32 experts in 4 groups, top-8 within 2 groups, EP 8 over
     * 4 nodes of 2 ranks; then without the node limit */
    guint ep = 8, R = 2, T = 64, k = 8;
    for (guint limited = 0; limited < 2; limited++) {
        SimparModel m = moe_model(32, k, 0, SIMPAR_MLP_SWIGLU);
        m.moe.groups = limited ? 4 : 0, m.moe.group_limit = limited ? 2 : 0;
        m.moe.router = SIMPAR_ROUTER_SIGMOID;
        CU_ASSERT_FATAL(simpar_model_validate(&m, NULL));
        g_autoptr(SimparSchedule) flat = simpar_moe_block_build(&m, ep, 1, 0, T, 7, 0, 0, NULL);
        g_autoptr(SimparSchedule) deep = simpar_moe_block_build(&m, ep, 1, R, T, 7, 0, 0, NULL);
        CU_ASSERT_FATAL(flat != NULL && deep != NULL);
        /* the closed form: distinct (token, node other than its own) pairs x h x dtype size */
        SimparMoe route = moe_route_of(deep);
        g_autofree guint *chosen = g_new(guint, k);
        double pairs = 0, choices = 0, El = 32.0 / ep;
        for (guint p = 0; p < ep; p++)
            for (guint t = 0; t < T; t++) {
                gboolean node[4] = {FALSE};
                simpar_moe_choose(&route, (guint64) p * T + t, chosen);
                for (guint j = 0; j < k; j++) {
                    guint nd = (guint) (chosen[j] / El) / R;
                    choices += nd != p / R;
                    if (nd != p / R && !node[nd])
                        node[nd] = TRUE, pairs++;
                }
            }
        double padded, routed, ds = 8;
        moe_rail_bytes(deep, R, &padded, &routed);
        double flat_bytes = moe_flat_inter_node_bytes(flat, ep, R);
        printf("\n  %s: %.0f (token, node) pairs of %.0f choices off-node; rail %.0f B "
               "(padded %.0f), flat %.0f B",
               limited ? "node-limited" : "free", pairs, choices, routed, padded, flat_bytes);
        CU_ASSERT_EQUAL(routed, pairs * m.hidden * ds);
        CU_ASSERT(padded >= routed && padded < flat_bytes);
        CU_ASSERT(choices * m.hidden * ds <= flat_bytes);
        if (limited) /* 8 choices in at most 2 nodes: at most 2 copies */
            CU_ASSERT(pairs * 3 < choices);
    }
}

/* ----- DeepEP's hops with expert tensor parallelism ----- */

/* Megatron-Core's flex dispatcher with ETP > 1 (token_dispatcher.py, MoEFlexTokenDispatcher):
 * DeepEP runs over the TP x EP group of EP x ETP ranks, each choice sent to every expert-TP rank
 * of its expert, the combine summing their partial fc2 rows. Every output and gradient equals the
 * serial block's: ETP 2 x EP 2 over nodes of 2 (an expert's two ranks on one node), of 4 (one
 * node) and of 1 (its two ranks on two nodes: two rail copies); ETP 2 x EP 4 node-limited over
 * nodes of 2 and 4; dropped tokens; GeLU top-1 without shared experts; the shared experts beside
 * the hops; each recomputed module. */
static void
test_deepep_hops_with_etp_2_equal_the_serial_one(void)
{
    MoeCase mc = {2, 12, 8, 2, 12, 0, 0, SIMPAR_MLP_SWIGLU, SIMPAR_ROUTER_SOFTMAX, 0, 2, 2, FALSE};
    const guint nodes[] = {2, 4, 1};
    for (guint i = 0; i < G_N_ELEMENTS(nodes); i++) {
        mc.node_ranks = nodes[i];
        CU_ASSERT_EQUAL(moe_check(&mc, 7), 0);
    }
    MoeCase limited = {4, 10, 16, 4,    8, 4, 2, SIMPAR_MLP_SWIGLU, SIMPAR_ROUTER_SIGMOID,
                       0, 2,  2,  FALSE};
    CU_ASSERT_EQUAL(moe_check(&limited, 7), 0);
    limited.node_ranks = 4;
    CU_ASSERT_EQUAL(moe_check(&limited, 7), 0);
    MoeCase drop = {2,   16, 8, 2,    0, 0, 0, SIMPAR_MLP_SWIGLU, SIMPAR_ROUTER_SOFTMAX,
                    0.5, 4,  2, FALSE};
    CU_ASSERT(moe_check(&drop, 5) > 0);
    MoeCase gelu = {4, 9, 4, 1, 0, 0, 0, SIMPAR_MLP_GELU, SIMPAR_ROUTER_SOFTMAX, 0, 4, 2, FALSE};
    CU_ASSERT_EQUAL(moe_check(&gelu, 5), 0);
    CU_ASSERT_EQUAL(moe_check_overlap(&mc, 7, TRUE), 0);
    const guint mods[] = {SIMPAR_RECOMPUTE_MOE, SIMPAR_RECOMPUTE_MOE_ACT,
                          SIMPAR_RECOMPUTE_SHARED_EXPERTS};
    mc.node_ranks = 2;
    for (guint k = 0; k < G_N_ELEMENTS(mods); k++) {
        SimparSchedule *sched = NULL;
        moe_check_recompute(&mc, 7, FALSE, mods[k], &sched);
        CU_ASSERT_PTR_NOT_NULL_FATAL(sched);
        guint a2a = moe_count_recomputed(sched, "moe.all-to-all");
        CU_ASSERT_EQUAL(a2a, mods[k] == SIMPAR_RECOMPUTE_MOE ? 4u : 0u);
        simpar_schedule_free(sched);
    }
}

/* The rows each hop of the forward dispatch moves, all ranks, against the closed form from the
 * routing (dropless): a token crosses the rail once per node holding an expert-TP rank of one of
 * its choices' EP ranks, NVLink once per such GPU (ETP per EP rank holding a choice), and lands
 * ETP times per choice (G T k ETP rows in all). The all-to-alls run over the TP x EP group's
 * rails and nodes, each row h + k ETP wide (the token and its expanded scores), the blocks as
 * long as the fullest. No expert-TP all-gather or reduce-scatter. */
static void
test_deepep_hops_with_etp_move_the_closed_form_rows(void)
{
    guint ep = 4, etp = 2, G = ep * etp, T = 16, k = 4, E = 16, El = E / ep;
    const guint nodes[] = {1, 2, 4, 8};
    for (guint i = 0; i < G_N_ELEMENTS(nodes); i++) {
        guint R = nodes[i];
        SimparModel m = moe_model(E, k, 0, SIMPAR_MLP_SWIGLU);
        g_autoptr(SimparSchedule) sched = simpar_moe_block_build(&m, ep, etp, R, T, 7, 0, 0, NULL);
        CU_ASSERT_PTR_NOT_NULL_FATAL(sched);
        SimparMoe route = moe_route_of(sched);
        double want[3] = {0, 0, 0};
        g_autofree guint *chosen = g_new(guint, k);
        for (guint p = 0; p < G; p++)
            for (guint t = 0; t < T; t++) {
                gboolean on_node[8] = {FALSE}, on_ep[4] = {FALSE};
                simpar_moe_choose(&route, (guint64) p * T + t, chosen);
                for (guint j = 0; j < k; j++) {
                    guint o = chosen[j] / El;
                    if (!on_ep[o])
                        on_ep[o] = TRUE, want[1] += etp;
                    for (guint s = 0; s < etp; s++) /* its expert-TP ranks o ETP + s */
                        if (!on_node[(o * etp + s) / R])
                            on_node[(o * etp + s) / R] = TRUE, want[0]++;
                }
            }
        want[2] = (double) G * T * k * etp;
        double got[3] = {0, 0, 0};
        guint a2a = 0, etp_colls = 0;
        for (guint o = 0; o < simpar_schedule_n_ops(sched); o++) {
            const SimparOp *op = simpar_schedule_op(sched, o);
            if (op->kind == SIMPAR_OP_COLLECTIVE && op->u.coll.kind != SIMPAR_COLL_ALL_TO_ALL)
                etp_colls +=
                    g_str_equal(simpar_schedule_group(sched, op->u.coll.group)->axis, "etp");
            if (op->phase != SIMPAR_PHASE_FORWARD)
                continue;
            if (op->kind == SIMPAR_OP_COLLECTIVE && op->u.coll.kind == SIMPAR_COLL_ALL_TO_ALL) {
                const SimparGroup *g = simpar_schedule_group(sched, op->u.coll.group);
                gboolean rail = g_str_has_suffix(op->name, "-rail");
                guint cap = rail ? route.cap_node : route.cap_gpu;
                CU_ASSERT(g_str_equal(g->axis, "tp_ep") && g->size == (rail ? G / R : R));
                if (strstr(op->name, "dispatch") != NULL)
                    CU_ASSERT_EQUAL(op->u.coll.count, (guint64) cap * (m.hidden + k * etp));
                a2a++;
            }
            if (op->kind != SIMPAR_OP_MOE_HOP)
                continue;
            gsize n;
            g_autofree gint64 *src = simpar_moe_hop_map(&op->u.moe, NULL, &n);
            for (gsize r = 0; r < n; r++)
                got[op->u.moe.hop] += src[r] >= 0;
        }
        printf("\n  EP %u x ETP %u, nodes of %u: rail %.0f, NVLink %.0f, experts %.0f rows", ep,
               etp, R, got[0], got[1], got[2]);
        for (guint h = 0; h < 3; h++)
            CU_ASSERT_EQUAL(got[h], want[h]);
        CU_ASSERT_EQUAL(a2a, 4 * G); /* the dispatch's and the combine's two hops, each rank */
        CU_ASSERT_EQUAL(etp_colls, 0);
    }
}

/* DeepEP needs the TP x EP group to be whole nodes: EP 3 x ETP 2 over nodes of 4 is refused with
 * a message naming both flags. */
static void
test_deepep_with_etp_refuses_a_group_that_does_not_fill_nodes(void)
{
    SimparModel m = moe_model(6, 2, 0, SIMPAR_MLP_SWIGLU);
    g_autoptr(GError) error = NULL;
    SimparSchedule *sched = simpar_moe_block_build(&m, 3, 2, 4, 8, 7, 0, 0, &error);
    CU_ASSERT_PTR_NULL(sched);
    CU_ASSERT_PTR_NOT_NULL_FATAL(error);
    CU_ASSERT(strstr(error->message, "(--ep 3 x --etp 2)") != NULL &&
              strstr(error->message, "whole nodes of 4 ranks") != NULL);
}

/* ----- the all-to-all moves exactly the routed tokens ----- */

/* The receive buffer of the forward dispatch all-to-all on `rank`. */
static guint
moe_dispatch_recv(const SimparSchedule *sched, guint rank)
{
    guint n;
    const guint *ops = simpar_schedule_rank_ops(sched, rank, &n);
    for (guint i = 0; i < n; i++) {
        const SimparOp *op = simpar_schedule_op(sched, ops[i]);
        if (op->kind == SIMPAR_OP_COLLECTIVE && op->u.coll.kind == SIMPAR_COLL_ALL_TO_ALL)
            return op->u.coll.recv.buf;
    }
    g_assert_not_reached();
}

static gboolean
moe_row_is(const double *row, const double *want, guint h)
{
    for (guint c = 0; c < h; c++)
        if (want != NULL ? row[c] != want[c] : row[c] != 0)
            return FALSE;
    return TRUE;
}

static void
test_the_dispatch_all_to_all_moves_exactly_the_routed_tokens(void)
{
    guint ep = 4, T = 12;
    SimparModel m = moe_model(8, 2, 0, SIMPAR_MLP_SWIGLU);
    g_autoptr(SimparSchedule) sched = simpar_moe_block_build(&m, ep, 1, 0, T, 7, 0, 0, NULL);
    SimparMoe route = moe_route_of(sched);
    g_autoptr(RefMoe) ref = ref_moe_new(&m, &route, 11);
    g_autoptr(SimparHost) host = simpar_host_new(sched);
    moe_fill(sched, host, ref);
    CU_ASSERT_FATAL(simpar_host_run(host, NULL));
    const double *x = ref_moe_tensor(ref, "x")->data;
    guint h = m.hidden, E = m.moe.experts, El = E / ep, C = route.capacity, k = route.top_k;
    guint moved = 0, wrong = 0;
    g_autofree guint *chosen = g_new(guint, k);
    for (guint q = 0; q < ep; q++) {
        const double *recv = simpar_host_buffer(host, moe_dispatch_recv(sched, q));
        for (guint p = 0; p < ep; p++)
            for (guint le = 0; le < El; le++) {
                guint e = q * El + le, slot = 0;
                const double *block = recv + ((gsize) (p * El + le) * C) * h;
                for (guint t = 0; t < T; t++) { /* rank p's tokens that chose e, in order */
                    simpar_moe_choose(&route, (guint64) p * T + t, chosen);
                    for (guint j = 0; j < k; j++)
                        if (chosen[j] == e) {
                            wrong += !moe_row_is(block + (gsize) slot * h,
                                                 x + ((gsize) p * T + t) * h, h);
                            slot++, moved++;
                        }
                }
                for (; slot < C; slot++) /* padding */
                    wrong += !moe_row_is(block + (gsize) slot * h, NULL, h);
            }
    }
    CU_ASSERT_EQUAL(moved, ep * T * k); /* dropless: every choice travels */
    CU_ASSERT_EQUAL(wrong, 0);
}

/* ----- Megatron-Core's all-gather dispatcher ----- */

/* Every output and gradient (y, dx, router, experts' fc1 and fc2, shared fc1 and fc2) of the
 * all-gather dispatcher's block equals the serial one: softmax with a shared expert, node-limited
 * sigmoid top-4, GeLU top-1, dropped tokens (each rank's capacity over its own tokens), one rank
 * (no collectives), and with expert tensor parallelism (ETP 2 x EP 2 and x EP 4, ETP 4 x EP 1,
 * ETP 2 with drops: the expert-TP ranks pick the same rows, the reduce-scatter sums their
 * slices). */
static void
test_the_all_gather_dispatcher_equals_the_serial_block(void)
{
    const struct {
        MoeCase mc;
        guint tensors;
        gboolean drops;
    } cases[] = {
        {{4, 12, 8, 2, 12, 0, 0, SIMPAR_MLP_SWIGLU, SIMPAR_ROUTER_SOFTMAX, 0, 0, 0, TRUE}, 7, 0},
        {{8, 10, 16, 4, 8, 4, 2, SIMPAR_MLP_SWIGLU, SIMPAR_ROUTER_SIGMOID, 0, 0, 0, TRUE}, 7, 0},
        {{2, 9, 4, 1, 0, 0, 0, SIMPAR_MLP_GELU, SIMPAR_ROUTER_SOFTMAX, 0, 0, 0, TRUE}, 5, 0},
        {{4, 16, 8, 2, 0, 0, 0, SIMPAR_MLP_SWIGLU, SIMPAR_ROUTER_SOFTMAX, 0.5, 0, 0, TRUE}, 5, 1},
        {{1, 8, 4, 2, 8, 0, 0, SIMPAR_MLP_SWIGLU, SIMPAR_ROUTER_SOFTMAX, 0, 0, 0, TRUE}, 7, 0},
        {{2, 12, 8, 2, 12, 0, 0, SIMPAR_MLP_SWIGLU, SIMPAR_ROUTER_SOFTMAX, 0, 0, 2, TRUE}, 7, 0},
        {{4, 10, 16, 4, 8, 4, 2, SIMPAR_MLP_SWIGLU, SIMPAR_ROUTER_SIGMOID, 0, 0, 2, TRUE}, 7, 0},
        {{1, 8, 4, 2, 0, 0, 0, SIMPAR_MLP_GELU, SIMPAR_ROUTER_SOFTMAX, 0, 0, 4, TRUE}, 5, 0},
        {{2, 16, 8, 2, 0, 0, 0, SIMPAR_MLP_SWIGLU, SIMPAR_ROUTER_SOFTMAX, 0.5, 0, 2, TRUE}, 5, 1},
    };

    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        guint dropped = moe_check(&cases[i].mc, cases[i].tensors);
        CU_ASSERT(cases[i].drops ? dropped > 0 : dropped == 0);
    }
}

/* Selective's MoE modules with the all-gather dispatcher: moe runs its two all-gathers and its
 * reduce-scatter again; the block still equals the serial one. */
static void
test_recomputed_moe_modules_with_the_all_gather_dispatcher_equal_the_serial_block(void)
{
    const MoeCase cases[] = {
        {4, 12, 8, 2, 12, 0, 0, SIMPAR_MLP_SWIGLU, SIMPAR_ROUTER_SOFTMAX, 0, 0, 0, TRUE},
        {2, 8, 4, 2, 6, 0, 0, SIMPAR_MLP_GELU, SIMPAR_ROUTER_SOFTMAX, 0, 0, 2, TRUE},
    };
    const guint mods[] = {SIMPAR_RECOMPUTE_MOE, SIMPAR_RECOMPUTE_MOE_ACT,
                          SIMPAR_RECOMPUTE_SHARED_EXPERTS,
                          SIMPAR_RECOMPUTE_MOE | SIMPAR_RECOMPUTE_MOE_ACT};
    for (guint i = 0; i < G_N_ELEMENTS(cases); i++)
        for (guint k = 0; k < G_N_ELEMENTS(mods); k++) {
            SimparSchedule *sched = NULL;
            moe_check_recompute(&cases[i], 7, FALSE, mods[k], &sched);
            CU_ASSERT_PTR_NOT_NULL_FATAL(sched);
            gboolean moe = mods[k] & SIMPAR_RECOMPUTE_MOE;
            CU_ASSERT_EQUAL(moe_count_recomputed(sched, "moe.all-gather"), moe ? 2u : 0u);
            CU_ASSERT_EQUAL(moe_count_recomputed(sched, "moe.reduce-scatter"), moe ? 1u : 0u);
            CU_ASSERT_EQUAL(moe_count_recomputed(sched, "moe.all-to-all"), 0u);
            simpar_schedule_free(sched);
        }
}

/* The all-gather dispatcher's collectives in closed form: every one over the whole TP x EP
 * group (G = ETP x EP ranks, each at its own index), per rank the forward's all-gathers of its
 * dense probs (T E) and tokens (T h) and the combine's reduce-scatter (T h), the backward's
 * all-gather of dy (T h) and reduce-scatters of the tokens' and the probs' gradients; so a rank
 * receives (G - 1) T (h + E) elements in the forward's gathers. No all-to-all; the experts'
 * grouped GEMMs take G C rows of each of the E/EP local experts. */
static void
test_the_all_gather_dispatcher_gathers_t_h_plus_e_per_rank_over_tp_x_ep(void)
{
    SimparModel m = moe_model(8, 2, 0, SIMPAR_MLP_SWIGLU);
    guint ep = 4, etp = 2, T = 12, G = ep * etp, h = 16, E = 8;
    g_autoptr(SimparSchedule) sched = simpar_moe_gather_block_build(&m, ep, etp, T, 7, 0, 0, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(sched);
    SimparMoe route = moe_route_of(sched);
    CU_ASSERT_EQUAL(route.gather, G);

    const struct {
        const char *name;
        SimparCollKind kind;
        guint64 count;
        SimparPhase phase;
    } want[] = {
        {"fwd.moe.all-gather-probs", SIMPAR_COLL_ALL_GATHER, T * E, SIMPAR_PHASE_FORWARD},
        {"fwd.moe.all-gather-dispatch", SIMPAR_COLL_ALL_GATHER, T * h, SIMPAR_PHASE_FORWARD},
        {"fwd.moe.reduce-scatter-combine", SIMPAR_COLL_REDUCE_SCATTER, T * h, SIMPAR_PHASE_FORWARD},
        {"bwd.moe.all-gather-combine", SIMPAR_COLL_ALL_GATHER, T * h, SIMPAR_PHASE_BACKWARD},
        {"bwd.moe.reduce-scatter-dispatch", SIMPAR_COLL_REDUCE_SCATTER, T * h,
         SIMPAR_PHASE_BACKWARD},
        {"bwd.moe.reduce-scatter-probs", SIMPAR_COLL_REDUCE_SCATTER, T * E, SIMPAR_PHASE_BACKWARD},
    };

    g_autofree guint *seen = g_new0(guint, G_N_ELEMENTS(want));
    double gathered = 0;
    for (guint i = 0; i < simpar_schedule_n_ops(sched); i++) {
        const SimparOp *op = simpar_schedule_op(sched, i);
        if (op->kind == SIMPAR_OP_GEMM && g_str_has_suffix(op->name, "experts.fc1.gemm"))
            CU_ASSERT(op->u.gemm.m == G * route.capacity && op->u.gemm.batch == E / ep &&
                      op->u.gemm.n == 2 * 8 / etp);
        if (op->kind != SIMPAR_OP_COLLECTIVE)
            continue;
        const SimparGroup *g = simpar_schedule_group(sched, op->u.coll.group);
        CU_ASSERT_EQUAL(g->size, G);
        CU_ASSERT_STRING_EQUAL(g->axis, "tp_ep"); /* Megatron-Core's name for it */
        CU_ASSERT_EQUAL(simpar_group_index(sched, op->u.coll.group, op->rank), op->rank);
        guint k = 0;
        while (k < G_N_ELEMENTS(want) && !g_str_equal(op->name, want[k].name))
            k++;
        CU_ASSERT_FATAL(k < G_N_ELEMENTS(want));
        CU_ASSERT(op->u.coll.kind == want[k].kind && op->u.coll.count == want[k].count &&
                  op->phase == want[k].phase);
        seen[k]++;
        if (op->rank == 0 && op->phase == SIMPAR_PHASE_FORWARD &&
            op->u.coll.kind == SIMPAR_COLL_ALL_GATHER)
            gathered += (double) (G - 1) * op->u.coll.count;
    }
    for (guint k = 0; k < G_N_ELEMENTS(want); k++)
        CU_ASSERT_EQUAL(seen[k], G);
    CU_ASSERT_EQUAL(gathered, (double) (G - 1) * T * (h + E));
}

/* The local permutation puts each gathered token's row on exactly the ranks of its experts:
 * rank q's experts' rows [E/EP x G x C x h] hold, at ((e - e0) G + p) C + i, the token of source
 * p that is the i-th kept choice of local expert e, and nothing else (EP 4 x ETP 2: the two
 * expert-TP ranks of each EP rank the same rows). */
static void
test_the_local_permutation_puts_each_gathered_token_on_its_experts_ranks(void)
{
    guint ep = 4, etp = 2, T = 12, G = ep * etp;
    SimparModel m = moe_model(8, 2, 0, SIMPAR_MLP_SWIGLU);
    g_autoptr(SimparSchedule) sched = simpar_moe_gather_block_build(&m, ep, etp, T, 7, 0, 0, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(sched);
    SimparMoe route = moe_route_of(sched);
    g_autoptr(RefMoe) ref = ref_moe_new(&m, &route, 11);
    g_autoptr(SimparHost) host = simpar_host_new(sched);
    moe_fill(sched, host, ref);
    CU_ASSERT_FATAL(simpar_host_run(host, NULL));
    const double *x = ref_moe_tensor(ref, "x")->data;
    guint h = m.hidden, El = 8 / ep, C = route.capacity, k = route.top_k;
    guint placed = 0, wrong = 0, choices = 0;
    g_autofree guint *chosen = g_new(guint, k);
    for (guint q = 0; q < G; q++) {
        const double *rows = NULL;
        guint n;
        const guint *ops = simpar_schedule_rank_ops(sched, q, &n);
        for (guint i = 0; i < n && rows == NULL; i++) {
            const SimparOp *op = simpar_schedule_op(sched, ops[i]);
            if (op->kind == SIMPAR_OP_MOE_DISPATCH)
                rows = simpar_host_buffer(host, op->u.moe.out[0].buf);
        }
        CU_ASSERT_PTR_NOT_NULL_FATAL(rows);
        g_autofree gboolean *used = g_new0(gboolean, (gsize) El * G * C);
        guint e0 = q / etp * El;
        for (guint p = 0; p < G; p++) {
            g_autofree guint *count = g_new0(guint, 8);
            for (guint t = 0; t < T; t++) {
                simpar_moe_choose(&route, (guint64) p * T + t, chosen);
                for (guint j = 0; j < k; j++) {
                    guint e = chosen[j], slot = count[e]++;
                    if (e < e0 || e >= e0 + El || slot >= C)
                        continue;
                    gsize r = ((gsize) (e - e0) * G + p) * C + slot;
                    used[r] = TRUE, choices++;
                    if (moe_row_is(rows + r * h, x + ((gsize) p * T + t) * h, h))
                        placed++;
                }
            }
        }
        for (gsize r = 0; r < (gsize) El * G * C; r++)
            wrong += !used[r] && !moe_row_is(rows + r * h, NULL, h);
    }
    /* dropless: each of the G T k choices on the ETP ranks of its expert's EP rank */
    CU_ASSERT_EQUAL(choices, G * T * k * etp);
    CU_ASSERT_EQUAL(placed, choices);
    CU_ASSERT_EQUAL(wrong, 0);
}

/* ----- a layer with the MoE block, every tensor-parallel mode ----- */

/* The layer of an MoE model (its attention part, its second norm, in a grid mode the
 * all-to-alls to the MoE block's tokens and back, tp-moe.c) and the MoE block on the same T
 * ranks (EP = T / ETP, rank p the tokens [p N/T, (p+1) N/T)), joined through the layer's
 * "moe.x", "moe.dy" (outputs) and "moe.y", "moe.dx" (inputs): the layer runs once for its MoE
 * inputs, the block on them, the layer again with the block's outputs. The serial oracle
 * (ref_moe_layer_run) joins the two references the same way: r1 = the layer without its MLP
 * (fc2 zero), y = r1 + moe(norm(r1)), and the attention part's backward from dy + the norm's
 * backward of moe's dx. */

typedef struct {
    double *data; /* global, row-major; (transfer none) */
    guint64 rows, cols;
    gboolean *covered; /* outputs: elements some shard gave; NULL for inputs */
} GridTensor;

static void
grid_tensor_free(gpointer p)
{
    GridTensor *t = p;
    g_free(t->covered), g_free(t);
}

static void
grid_add(GHashTable *tab, const char *name, double *data, guint64 rows, guint64 cols,
         gboolean output)
{
    GridTensor *t = g_new0(GridTensor, 1);
    *t = (GridTensor){data, rows, cols, output ? g_new0(gboolean, rows * cols) : NULL};
    g_hash_table_insert(tab, (gpointer) name, t);
}

/* Copies the table's tensors into the INPUT shards it names (the others stay zero), or the
 * OUTPUT shards into the table's tensors (`gather`). */
static void
grid_move(const SimparSchedule *sched, SimparHost *host, GHashTable *tab, gboolean gather)
{
    guint n;
    const SimparShard *sh = simpar_schedule_shards(sched, &n);
    for (guint i = 0; i < n; i++) {
        GridTensor *t = g_hash_table_lookup(tab, sh[i].tensor);
        if ((sh[i].role == SIMPAR_SHARD_INPUT) == gather || t == NULL)
            continue;
        CU_ASSERT_FATAL(sh[i].role != SIMPAR_SHARD_PARTIAL);
        CU_ASSERT_FATAL(sh[i].row0 + sh[i].rows <= t->rows && sh[i].col0 + sh[i].cols <= t->cols);
        double *buf = simpar_host_buffer(host, sh[i].view.buf) + sh[i].view.off;
        for (guint64 r = 0; r < sh[i].rows; r++)
            for (guint64 c = 0; c < sh[i].cols; c++) {
                guint64 e = (sh[i].row0 + r) * t->cols + sh[i].col0 + c;
                double *local = buf + r * sh[i].cols + c;
                *(gather ? &t->data[e] : local) = gather ? *local : t->data[e];
            }
    }
}

/* The worst difference of every OUTPUT shard from the table's tensor, over the largest
 * magnitude of that tensor (at least 1); every output tensor of the table must be covered and
 * every output shard known. */
static double
grid_compare(const SimparSchedule *sched, SimparHost *host, GHashTable *tab, guint *compared)
{
    guint n;
    const SimparShard *sh = simpar_schedule_shards(sched, &n);
    double worst = 0;
    for (guint i = 0; i < n; i++) {
        if (sh[i].role == SIMPAR_SHARD_INPUT)
            continue;
        GridTensor *t = g_hash_table_lookup(tab, sh[i].tensor);
        CU_ASSERT_FATAL(t != NULL && t->covered != NULL);
        double scale = 1;
        for (guint64 e = 0; e < t->rows * t->cols; e++)
            scale = MAX(scale, fabs(t->data[e]));
        const double *buf = simpar_host_buffer(host, sh[i].view.buf) + sh[i].view.off;
        for (guint64 r = 0; r < sh[i].rows; r++)
            for (guint64 c = 0; c < sh[i].cols; c++) {
                guint64 e = (sh[i].row0 + r) * t->cols + sh[i].col0 + c;
                worst = MAX(worst, fabs(buf[r * sh[i].cols + c] - t->data[e]) / scale);
                t->covered[e] = TRUE;
            }
    }
    GHashTableIter it;
    gpointer key, value;
    g_hash_table_iter_init(&it, tab);
    *compared = 0;
    while (g_hash_table_iter_next(&it, &key, &value)) {
        const GridTensor *t = value;
        guint64 missing = 0;
        for (guint64 e = 0; t->covered != NULL && e < t->rows * t->cols; e++)
            missing += !t->covered[e];
        if (missing > 0)
            printf("\n  %s: %" G_GUINT64_FORMAT " elements not produced", (const char *) key,
                   missing);
        CU_ASSERT_EQUAL(missing, 0);
        *compared += t->covered != NULL;
    }
    return worst;
}

typedef struct {
    const char *mode;
    gint64 tp, depth, shared;
    gint64 etp;       /* the block's expert tensor parallelism: EP = T / ETP; 0: 1 */
    gboolean sp;      /* 1-D: sequence parallelism */
    gboolean rms;     /* RMSNorm (no betas) */
    gboolean gather;  /* the block with Megatron-Core's all-gather dispatcher */
    guint node_ranks; /* the block with DeepEP's hops over nodes of this many ranks; 0: none */
} GridCase;

/* The layer's tensors: t's inputs and t2's outputs (the dense MLP's left out, the second norm
 * kept), the MoE block's input u2 and dy (the oracle's) and its output y and dx (the
 * distributed block's, moe[]). */
static GHashTable *
grid_table(const RefShape *shape, double *t[REF_N_TENSORS], double *t2[REF_N_TENSORS], double *u2,
           double *moe[4])
{
    GHashTable *tab = g_hash_table_new_full(g_str_hash, g_str_equal, NULL, grid_tensor_free);
    for (guint i = 0; i < REF_N_TENSORS; i++) {
        guint64 rows, cols;
        ref_tensor_shape(shape, (RefTensor) i, &rows, &cols);
        gboolean mlp =
            (i >= REF_FC1_W && i <= REF_FC2_B) || (i >= REF_FC1_W_GRAD && i <= REF_FC2_B_GRAD);
        if (rows * cols > 0 && !mlp)
            grid_add(tab, ref_tensor_name((RefTensor) i), i >= REF_N_INPUTS ? t2[i] : t[i], rows,
                     cols, i >= REF_N_INPUTS);
    }
    guint64 n = (guint64) shape->b * shape->s;
    grid_add(tab, "moe.x", u2, n, shape->h, TRUE);
    grid_add(tab, "moe.dy", t[REF_DY], n, shape->h, TRUE);
    grid_add(tab, "moe.y", moe[2], n, shape->h, FALSE);
    grid_add(tab, "moe.dx", moe[3], n, shape->h, FALSE);
    return tab;
}

/* The MoE block on the layer's "moe.x" and "moe.dy" against the reference; its y and dx into
 * moe[2], moe[3]. */
static double
grid_moe_block(const SimparSchedule *block, RefMoe *ref, double *moe[4], guint *compared)
{
    RefMoeTensor *x = ref_moe_tensor(ref, "x"), *dy = ref_moe_tensor(ref, "dy");
    gsize bytes = sizeof(double) * x->rows * x->cols;
    memcpy(x->data, moe[0], bytes), memcpy(dy->data, moe[1], bytes); /* the distributed ones */
    g_autoptr(SimparHost) host = simpar_host_new(block);
    moe_fill(block, host, ref);
    CU_ASSERT_FATAL(simpar_host_run(host, NULL));
    g_autoptr(GHashTable) out = g_hash_table_new_full(g_str_hash, g_str_equal, NULL, g_free);
    grid_add(out, "y", moe[2], x->rows, x->cols, FALSE);
    grid_add(out, "dx", moe[3], x->rows, x->cols, FALSE);
    grid_move(block, host, out, TRUE);
    return moe_compare(block, host, ref, compared);
}

static void
grid_check(const GridCase *gc)
{
    SimparModel m = moe_model(8, 2, gc->shared, SIMPAR_MLP_SWIGLU);
    m.seq = 4, m.micro_batch = 4;
    if (g_str_equal(gc->mode, "1d") && gc->tp > m.heads) /* 1-D splits the heads */
        m.heads = gc->tp;
    m.norm = gc->rms ? SIMPAR_NORM_RMSNORM : SIMPAR_NORM_LAYERNORM;
    CU_ASSERT_FATAL(simpar_model_validate(&m, NULL));
    SimparPlan plan;
    simpar_plan_init(&plan);
    guint etp = (guint) MAX(gc->etp, 1);
    plan.gen = simpar_generator_of(gc->mode), plan.tp = gc->tp, plan.depth = gc->depth;
    plan.ep = gc->tp / etp, plan.etp = etp, plan.sequence_parallel = gc->sp;
    plan.causal = TRUE, plan.p_hidden = 0, plan.p_attn = 0;
    g_autoptr(GError) error = NULL;
    g_autoptr(SimparSchedule) layer = simpar_generate_layer(&m, &plan, &error);
    CU_ASSERT_PTR_NOT_NULL_FATAL(layer);
    CU_ASSERT_FATAL(simpar_schedule_check_hazards(layer, &error));
    guint T = (guint) gc->tp, N = (guint) (m.micro_batch * m.seq);
    MoeCase mc = {.ep = T / etp,
                  .tokens = N / T,
                  .etp = etp,
                  .gather = gc->gather,
                  .node_ranks = gc->node_ranks};
    g_autoptr(SimparSchedule) block = moe_case_build(&mc, &m, 0, &error);
    CU_ASSERT_PTR_NOT_NULL_FATAL(block);
    SimparMoe route = moe_route_of(block);
    g_autoptr(RefMoe) ref = ref_moe_new(&m, &route, 11);

    RefShape shape = {.b = 4,
                      .s = 4,
                      .h = (guint) m.hidden,
                      .a = (guint) m.heads,
                      .f = (guint) m.ffn,
                      .causal = TRUE,
                      .eps = plan.eps,
                      .seed = plan.seed,
                      .rms = m.norm == SIMPAR_NORM_RMSNORM,
                      .no_bias = TRUE};
    g_autoptr(GRand) rng = g_rand_new_with_seed(20261128);
    double *t[REF_N_TENSORS], *t2[REF_N_TENSORS], *moe[4];
    g_autofree double *u2 = g_new0(double, (gsize) N *m.hidden);
    for (guint i = 0; i < REF_N_TENSORS; i++) {
        guint64 rows, cols;
        ref_tensor_shape(&shape, (RefTensor) i, &rows, &cols);
        t[i] = g_new0(double, rows *cols);
        if (i < REF_N_INPUTS && i != REF_FC2_W) /* fc2 zero: the dense MLP adds nothing */
            ref_fill_random(t[i], rows * cols, rng);
    }
    for (guint i = 0; i < 4; i++)
        moe[i] = g_new0(double, (gsize) N *m.hidden);
    ref_moe_layer_run(ref, &shape, t, t2, u2);
    g_autoptr(GHashTable) tab = grid_table(&shape, t, t2, u2, moe);
    g_autoptr(GHashTable) iface = g_hash_table_new_full(g_str_hash, g_str_equal, NULL, g_free);
    grid_add(iface, "moe.x", moe[0], N, m.hidden, FALSE);
    grid_add(iface, "moe.dy", moe[1], N, m.hidden, FALSE);

    g_autoptr(SimparHost) first = simpar_host_new(layer); /* the block's inputs */
    grid_move(layer, first, tab, FALSE);
    CU_ASSERT_FATAL(simpar_host_run(first, &error));
    grid_move(layer, first, iface, TRUE);
    guint moe_tensors, layer_tensors;
    double moe_err = grid_moe_block(block, ref, moe, &moe_tensors);
    g_autoptr(SimparHost) second = simpar_host_new(layer); /* with the block's outputs */
    grid_move(layer, second, tab, FALSE);
    CU_ASSERT_FATAL(simpar_host_run(second, &error));
    double layer_err = grid_compare(layer, second, tab, &layer_tensors);
    printf("\n    %s%s%s T=%" G_GINT64_FORMAT
           " EP %u ETP %u%s%s: MoE block %u tensors %.3g, layer %u tensors %.3g",
           gc->mode, gc->sp ? " sp" : "", gc->rms ? " rmsnorm" : "", gc->tp, T / etp, etp,
           gc->gather ? " allgather" : "", gc->node_ranks > 0 ? " deepep" : "", moe_tensors,
           moe_err, layer_tensors, layer_err);
    CU_ASSERT(moe_err <= MOE_TOL && layer_err <= MOE_TOL);
    CU_ASSERT_EQUAL(moe_tensors, gc->shared > 0 ? 7 : 5);
    /* y, dx, moe.x, moe.dy, ln1's and ln2's gamma and beta (RMSNorm: gamma), qkv and proj
     * weights */
    CU_ASSERT_EQUAL(layer_tensors, gc->rms ? 8 : 10);
    for (guint i = 0; i < REF_N_TENSORS; i++)
        g_free(t[i]), g_free(t2[i]);
    for (guint i = 0; i < 4; i++)
        g_free(moe[i]);
}

/* 1-D: the block takes the norm's output in the layer's own rows (every row on every GPU
 * without sequence parallelism, B/T of them with it) */
static void
test_a_1d_layer_with_the_moe_block_equals_the_serial_one(void)
{
    grid_check(&(GridCase){"1d", 2, 0, 12, 0, FALSE, FALSE, FALSE, 0});
    grid_check(&(GridCase){"1d", 2, 0, 0, 0, TRUE, FALSE, FALSE, 0});
    grid_check(&(GridCase){"1d", 2, 0, 12, 0, TRUE, TRUE, FALSE, 0});
    grid_check(&(GridCase){"1d", 2, 0, 12, 2, TRUE, FALSE, FALSE, 0});
}

/* 1-D with sequence parallelism and the all-gather dispatcher: the block's TP x EP group
 * gathers the B/T rows of every GPU (T = 2: EP 2, ETP 2; T = 4: EP 2 x ETP 2, EP 4) */
static void
test_a_1d_layer_with_the_all_gather_dispatcher_equals_the_serial_one(void)
{
    grid_check(&(GridCase){"1d", 2, 0, 12, 0, TRUE, FALSE, TRUE, 0});
    grid_check(&(GridCase){"1d", 2, 0, 0, 2, TRUE, TRUE, TRUE, 0});
    grid_check(&(GridCase){"1d", 4, 0, 12, 2, TRUE, FALSE, TRUE, 0});
    grid_check(&(GridCase){"1d", 4, 0, 12, 0, TRUE, TRUE, TRUE, 0});
}

static void
test_a_2d_layer_with_the_moe_block_equals_the_serial_one(void)
{
    grid_check(&(GridCase){"2d", 4, 0, 12, 0, FALSE, FALSE, FALSE, 0});
}

static void
test_a_2p5d_layer_with_the_moe_block_equals_the_serial_one(void)
{
    grid_check(&(GridCase){"2.5d", 8, 2, 0, 0, FALSE, TRUE, FALSE, 0});
    grid_check(&(GridCase){"2.5d", 8, 2, 0, 0, FALSE, FALSE, FALSE, 0});
}

static void
test_a_3d_layer_with_the_moe_block_equals_the_serial_one(void)
{
    grid_check(&(GridCase){"3d", 8, 0, 12, 0, FALSE, FALSE, FALSE, 0});
}

/* The same layers with the block's 8 (2-D: 4) GPUs EP x ETP 2 */
static void
test_grid_layers_with_etp_2_experts_equal_the_serial_one(void)
{
    grid_check(&(GridCase){"2d", 4, 0, 12, 2, FALSE, FALSE, FALSE, 0});
    grid_check(&(GridCase){"2.5d", 8, 2, 0, 2, FALSE, FALSE, FALSE, 0});
    grid_check(&(GridCase){"3d", 8, 0, 12, 2, FALSE, FALSE, FALSE, 0});
}

/* The layers with the block's EP x ETP 2 experts behind DeepEP's hops (1-D SP T 4 over nodes of
 * 2, 2-D T 4 over nodes of 2, 3-D T 8 over nodes of 4) */
static void
test_layers_with_deepep_and_etp_2_equal_the_serial_one(void)
{
    grid_check(&(GridCase){"1d", 4, 0, 12, 2, TRUE, FALSE, FALSE, 2});
    grid_check(&(GridCase){"2d", 4, 0, 12, 2, FALSE, FALSE, FALSE, 2});
    grid_check(&(GridCase){"3d", 8, 0, 0, 2, FALSE, TRUE, FALSE, 4});
}

/* ----- routing ----- */

static void
test_routing_is_a_pure_function_of_seed_and_token(void)
{
    SimparMoe r = {.experts = 16, .top_k = 4, .ep = 1, .seed = 3, .groups = 4, .group_limit = 2};
    guint a[4], b[4];
    guint hits[16] = {0};
    for (guint64 t = 0; t < 2000; t++) {
        simpar_moe_choose(&r, t, a);
        simpar_moe_choose(&r, t, b);
        CU_ASSERT_EQUAL(memcmp(a, b, sizeof a), 0);
        guint groups = 0;
        for (guint j = 0; j < 4; j++) {
            hits[a[j]]++;
            CU_ASSERT(j == 0 || a[j] > a[j - 1]); /* distinct, increasing */
            groups |= 1u << (a[j] / 4);
        }
        CU_ASSERT(__builtin_popcount(groups) <= 2);
    }
    for (guint e = 0; e < 16; e++) /* 500 expected each: hashed affinities spread them */
        CU_ASSERT(hits[e] > 350 && hits[e] < 650);
    r.seed = 4;
    guint moved = 0;
    for (guint64 t = 0; t < 100; t++) {
        simpar_moe_choose(&r, t, b);
        SimparMoe s = r;
        s.seed = 3;
        simpar_moe_choose(&s, t, a);
        moved += memcmp(a, b, sizeof a) != 0;
    }
    CU_ASSERT(moved > 50); /* another seed, another routing */
}

static void
test_the_moe_presets_validate_and_name_their_experts(void)
{
    const char *names[] = {"mixtral-8x7b", "mixtral-8x22b", "qwen3-235b-a22b", "deepseek-v3"};
    const gint64 experts[] = {8, 8, 128, 256}, top_k[] = {2, 2, 8, 8};
    for (guint i = 0; i < G_N_ELEMENTS(names); i++) {
        SimparModel m;
        CU_ASSERT_FATAL(simpar_model_preset(names[i], &m, NULL));
        CU_ASSERT(simpar_model_validate(&m, NULL));
        CU_ASSERT_EQUAL(m.moe.experts, experts[i]);
        CU_ASSERT_EQUAL(m.moe.top_k, top_k[i]);
    }
    SimparModel d;
    CU_ASSERT_FATAL(simpar_model_preset("deepseek-v3", &d, NULL));
    CU_ASSERT(!simpar_model_layer_is_moe(&d, 2)); /* the first 3 of 61 layers are dense */
    CU_ASSERT(simpar_model_layer_is_moe(&d, 3));
    CU_ASSERT(simpar_model_layer_is_moe(&d, 60));
}

static void
test_impossible_expert_settings_are_refused_naming_the_flag(void)
{
    SimparModel m = moe_model(8, 2, 0, SIMPAR_MLP_SWIGLU);
    g_autoptr(GError) e1 = NULL, e2 = NULL, e3 = NULL, e4 = NULL;
    m.moe.top_k = 9;
    CU_ASSERT(!simpar_model_validate(&m, &e1));
    CU_ASSERT(e1 != NULL && strstr(e1->message, "--topk 9") != NULL);
    m.moe.top_k = 2, m.moe.groups = 3, m.moe.group_limit = 1;
    CU_ASSERT(!simpar_model_validate(&m, &e2));
    CU_ASSERT(e2 != NULL && strstr(e2->message, "--expert-groups 3") != NULL);
    m.moe.groups = 4, m.moe.group_limit = 5;
    CU_ASSERT(!simpar_model_validate(&m, &e3));
    CU_ASSERT(e3 != NULL && strstr(e3->message, "--group-limit 5") != NULL);
    m.moe.groups = 0, m.moe.group_limit = 0, m.moe.imbalance = 0.5;
    CU_ASSERT(!simpar_model_validate(&m, &e4));
    CU_ASSERT(e4 != NULL && strstr(e4->message, "--imbalance 0.5") != NULL);
    g_autoptr(GError) e5 = NULL;
    m.moe.imbalance = 1;
    CU_ASSERT(simpar_moe_block_build(&m, 3, 1, 0, 4, 1, 0, 0, &e5) == NULL);
    CU_ASSERT(e5 != NULL && strstr(e5->message, "--ep 3") != NULL);
}

static void
test_a_predicted_all_to_all_moves_the_busiest_experts_rows(void)
{
    SimparModel m = moe_model(16, 4, 0, SIMPAR_MLP_SWIGLU);
    guint ep = 4, T = 64; /* T k / E = 16 rows per (rank, expert) on average */
    const double imbalance[] = {1, 1.5};
    const guint rows[] = {16, 24};
    for (guint i = 0; i < G_N_ELEMENTS(imbalance); i++) {
        m.moe.imbalance = imbalance[i];
        guint C = simpar_moe_capacity(&m, T);
        CU_ASSERT_EQUAL(C, rows[i]);
        g_autoptr(SimparSchedule) sched = simpar_moe_block_build(&m, ep, 1, 0, T, 7, C, 0, NULL);
        guint n_a2a = 0;
        for (guint o = 0; o < simpar_schedule_n_ops(sched); o++) {
            const SimparOp *op = simpar_schedule_op(sched, o);
            if (op->kind != SIMPAR_OP_COLLECTIVE)
                continue;
            n_a2a++;
            /* each peer gets its E/EP experts' C rows of h: balanced, T k h / EP in all */
            CU_ASSERT_EQUAL(op->u.coll.count, (gsize) (16 / ep) * C * m.hidden);
            CU_ASSERT_EQUAL(op->u.coll.kind, SIMPAR_COLL_ALL_TO_ALL);
        }
        CU_ASSERT_EQUAL(n_a2a, 4 * ep); /* dispatch and combine, forward and backward */
    }
    m.moe.capacity = 1.25; /* a capacity factor sets the rows whatever the imbalance */
    CU_ASSERT_EQUAL(simpar_moe_capacity(&m, T), 20);
}

static CU_TestInfo host_tests[] = {
    {"a dropless softmax block with a shared expert on 4 ranks equals the serial one at 1e-9",
     test_a_dropless_softmax_block_with_a_shared_expert_equals_the_serial_one},
    {"sigmoid node-limited routing (top-4 in 2 of 4 groups) equals the serial one at 1e-9",
     test_sigmoid_node_limited_routing_equals_the_serial_one},
    {"a GeLU top-1 block without shared experts equals the serial one at 1e-9",
     test_a_gelu_top_1_block_without_shared_experts_equals_the_serial_one},
    {"a capacity factor drops the same choices as the serial one",
     test_a_capacity_factor_drops_the_same_choices_as_the_serial_one},
    {"one rank holding every expert equals the serial one",
     test_one_rank_holding_every_expert_equals_the_serial_one},
    {"the dispatch all-to-all moves exactly the routed tokens",
     test_the_dispatch_all_to_all_moves_exactly_the_routed_tokens},
    {"a predicted all-to-all moves the busiest expert's rows (T k / E x imbalance)",
     test_a_predicted_all_to_all_moves_the_busiest_experts_rows},
    {"shared experts beside the all-to-alls (flat, DeepEP's, ETP 2) equal the serial one at 1e-9",
     test_shared_experts_beside_the_all_to_alls_equal_the_serial_one},
    {"--overlap-moe-expert-parallel-comm: one micro-batch's forward merged with another's "
     "backward equals the serial ones, its waits hazard-free",
     test_merged_micro_batches_equal_the_serial_ones},
    {"selective's MoE modules (moe: the whole block again, its all-to-alls too; moe_act; "
     "shared_experts) recompute their ops and equal the serial block: flat, DeepEP's hops, ETP 2",
     test_recomputed_moe_modules_equal_the_serial_block},
    {"ETP 2 x EP 2 with a shared expert equals the serial one at 1e-9 (every gradient)",
     test_etp_2_with_ep_2_and_a_shared_expert_equals_the_serial_one},
    {"ETP 2 x EP 4 (node-limited sigmoid; GeLU top-1) equals the serial one at 1e-9",
     test_etp_2_with_ep_4_node_limited_and_gelu_equal_the_serial_one},
    {"ETP 4 x EP 1, and ETP 2 with dropped tokens, equal the serial one at 1e-9",
     test_etp_4_with_ep_1_and_dropped_tokens_equal_the_serial_one},
    {"ETP's all-gather and reduce-scatter move E C h per rank; expert GEMMs are f_e/ETP wide",
     test_etp_collectives_move_the_received_rows_and_gemms_split_the_columns},
    {"the all-gather dispatcher (softmax, node-limited sigmoid, GeLU top-1, drops, one rank, ETP "
     "2 x EP 2 and 4, ETP 4, ETP 2 with drops) equals the serial block at 1e-9",
     test_the_all_gather_dispatcher_equals_the_serial_block},
    {"selective's MoE modules with the all-gather dispatcher (moe: its gathers and "
     "reduce-scatter again) equal the serial block at 1e-9",
     test_recomputed_moe_modules_with_the_all_gather_dispatcher_equal_the_serial_block},
    {"the all-gather dispatcher gathers T (h + E) per rank over the TP x EP group",
     test_the_all_gather_dispatcher_gathers_t_h_plus_e_per_rank_over_tp_x_ep},
    {"the local permutation puts each gathered token on exactly its experts' ranks",
     test_the_local_permutation_puts_each_gathered_token_on_its_experts_ranks},
    {"DeepEP's hops over 2 nodes of 2 ranks equal the serial one at 1e-9",
     test_deepep_hops_over_2_nodes_of_2_equal_the_serial_one},
    {"DeepEP's hops with node-limited routing (nodes of 2 and 4) equal the serial one at 1e-9",
     test_deepep_hops_with_node_limited_routing_equal_the_serial_one},
    {"DeepEP's hops drop the same choices; nodes of 1 rank and 1 node equal the serial one",
     test_deepep_hops_drop_the_same_choices_as_the_serial_one},
    {"DeepEP sends a token once per other node: fewer inter-node bytes than the all-to-all",
     test_deepep_sends_a_token_once_per_other_node},
    {"DeepEP's hops with ETP 2 (nodes of 1, 2, 4; drops, overlap, recompute) equal the serial one "
     "at 1e-9",
     test_deepep_hops_with_etp_2_equal_the_serial_one},
    {"DeepEP's hops with ETP 2 move the closed form's rows (rail, NVLink, experts)",
     test_deepep_hops_with_etp_move_the_closed_form_rows},
    {"DeepEP with ETP refuses a TP x EP group that does not fill nodes",
     test_deepep_with_etp_refuses_a_group_that_does_not_fill_nodes},
    CU_TEST_INFO_NULL,
};

static CU_TestInfo grid_tests[] = {
    {"a 1-D layer (T = 2, with and without SP, RMSNorm, ETP 2) with the MoE block equals the "
     "serial one at 1e-9",
     test_a_1d_layer_with_the_moe_block_equals_the_serial_one},
    {"a 1-D layer (SP, T = 2 and 4, EP and ETP) with the all-gather dispatcher's block equals the "
     "serial one at 1e-9",
     test_a_1d_layer_with_the_all_gather_dispatcher_equals_the_serial_one},
    {"a 2-D layer (q=2) with the MoE block (EP 4, a shared expert) equals the serial one at 1e-9",
     test_a_2d_layer_with_the_moe_block_equals_the_serial_one},
    {"a 2.5-D layer (q=2, d=2) with the MoE block (EP 8), RMSNorm and LayerNorm, equals the serial "
     "one at 1e-9",
     test_a_2p5d_layer_with_the_moe_block_equals_the_serial_one},
    {"a 3-D layer (q=2) with the MoE block (EP 8, a shared expert) equals the serial one at 1e-9",
     test_a_3d_layer_with_the_moe_block_equals_the_serial_one},
    {"2-D, 2.5-D and 3-D layers with the MoE block's experts EP x ETP 2 equal the serial one at "
     "1e-9",
     test_grid_layers_with_etp_2_experts_equal_the_serial_one},
    {"1-D, 2-D and 3-D layers with the experts EP x ETP 2 behind DeepEP's hops equal the serial "
     "one at 1e-9",
     test_layers_with_deepep_and_etp_2_equal_the_serial_one},
    CU_TEST_INFO_NULL,
};

static CU_TestInfo routing_tests[] = {
    {"routing is a pure function of seed and token, spread and node-limited",
     test_routing_is_a_pure_function_of_seed_and_token},
    {"the MoE presets validate and name their experts",
     test_the_moe_presets_validate_and_name_their_experts},
    {"impossible expert settings are refused naming the flag",
     test_impossible_expert_settings_are_refused_naming_the_flag},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"MoE block on the host executor", NULL, NULL, NULL, NULL, host_tests},
    {"2-D, 2.5-D and 3-D layers with the MoE block", NULL, NULL, NULL, NULL, grid_tests},
    {"routing and the model", NULL, NULL, NULL, NULL, routing_tests},
    CU_SUITE_INFO_NULL,
};

int
main(void)
{
    return simpar_test_main(suites);
}
