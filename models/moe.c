/* moe.c - mixture-of-experts routing and the MoE block's schedule (see moe.h). */
#include "moe.h"
#include "plan.h"
#include <math.h>

/* ----- routing ----- */

/* SplitMix64's finaliser (Steele, Lea and Flood, "Fast splittable pseudorandom number
 * generators", OOPSLA 2014). */
static guint64
moe_mix(guint64 z)
{
    z += G_GUINT64_CONSTANT(0x9E3779B97F4A7C15);
    z = (z ^ (z >> 30)) * G_GUINT64_CONSTANT(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * G_GUINT64_CONSTANT(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

/* The hashed affinity of `token` for expert e, in [0, 1). */
static double
moe_affinity(const SimparMoe *m, guint64 token, guint e)
{
    guint64 h = moe_mix(m->seed ^ moe_mix(token * G_GUINT64_CONSTANT(0x100000001B3) + e));
    return (double) (h >> 11) * 0x1.0p-53;
}

/* The index of the largest score[i] with allowed[i] (ties to the lower index); G_MAXUINT if
 * none is allowed. */
static guint
moe_argmax(const double *score, const gboolean *allowed, guint n)
{
    guint best = G_MAXUINT;
    for (guint i = 0; i < n; i++)
        if (allowed[i] && (best == G_MAXUINT || score[i] > score[best]))
            best = i;
    return best;
}

/* Node-limited routing: only the experts of the group_limit groups with the largest sums of
 * their two best affinities stay allowed. */
static void
moe_limit_groups(const SimparMoe *m, const double *aff, gboolean *allowed)
{
    guint per = m->experts / m->groups;
    g_autofree double *gscore = g_new(double, m->groups);
    g_autofree gboolean *gpick = g_new0(gboolean, m->groups), *gleft = g_new(gboolean, m->groups);
    for (guint g = 0; g < m->groups; g++) {
        double b1 = -1, b2 = 0;
        for (guint e = g * per; e < (g + 1) * per; e++) {
            if (aff[e] > b1)
                b2 = b1 < 0 ? 0 : b1, b1 = aff[e];
            else if (aff[e] > b2)
                b2 = aff[e];
        }
        gscore[g] = b1 + (per > 1 ? b2 : 0);
        gleft[g] = TRUE;
    }
    for (guint i = 0; i < m->group_limit; i++) {
        guint g = moe_argmax(gscore, gleft, m->groups);
        gpick[g] = TRUE, gleft[g] = FALSE;
    }
    for (guint e = 0; e < m->experts; e++)
        allowed[e] = gpick[e / per];
}

static void
moe_choose_with(const SimparMoe *m, guint64 token, double *aff, gboolean *allowed, guint *experts)
{
    for (guint e = 0; e < m->experts; e++)
        aff[e] = moe_affinity(m, token, e), allowed[e] = TRUE;
    if (m->groups > 0)
        moe_limit_groups(m, aff, allowed);
    for (guint j = 0; j < m->top_k; j++) {
        guint e = moe_argmax(aff, allowed, m->experts);
        g_assert(e != G_MAXUINT); /* checked: the groups hold top_k experts */
        allowed[e] = FALSE;
        guint i = j;
        for (; i > 0 && experts[i - 1] > e; i--) /* kept in increasing order */
            experts[i] = experts[i - 1];
        experts[i] = e;
    }
}

void
simpar_moe_choose(const SimparMoe *m, guint64 token, guint *experts)
{
    g_autofree double *aff = g_new(double, m->experts);
    g_autofree gboolean *allowed = g_new(gboolean, m->experts);
    moe_choose_with(m, token, aff, allowed, experts);
}

void
simpar_moe_rows(const SimparMoe *m, gint64 *rows, guint *experts)
{
    g_autofree double *aff = g_new(double, m->experts);
    g_autofree gboolean *allowed = g_new(gboolean, m->experts);
    g_autofree guint *count = g_new0(guint, m->experts), *chosen = g_new(guint, m->top_k);
    for (guint t = 0; t < m->tokens; t++) {
        moe_choose_with(m, m->token0 + t, aff, allowed, chosen);
        for (guint j = 0; j < m->top_k; j++) {
            guint e = chosen[j], slot = count[e]++;
            rows[(gsize) t * m->top_k + j] =
                slot < m->capacity ? (gint64) e * m->capacity + slot : -1;
            if (experts != NULL)
                experts[(gsize) t * m->top_k + j] = e;
        }
    }
}

void
simpar_moe_gathered_rows(const SimparMoe *m, gint64 *rows, guint *experts)
{
    guint El = m->experts / m->ep, e0 = m->ep_rank * El;
    gsize n = (gsize) m->tokens * m->top_k;
    g_autofree guint *own = experts == NULL ? g_new(guint, n * m->gather) : NULL;
    guint *ex = experts != NULL ? experts : own;
    for (guint p = 0; p < m->gather; p++) {
        SimparMoe src = *m; /* source p's routing: its own tokens, its own capacity drops */
        src.token0 = m->token0 + (guint64) p * m->tokens;
        gint64 *r = rows + p * n;
        guint *x = ex + p * n;
        simpar_moe_rows(&src, r, x);
        for (gsize i = 0; i < n; i++) {
            if (r[i] < 0 || x[i] < e0 || x[i] >= e0 + El) {
                r[i] = -1;
                continue;
            }
            gint64 slot = r[i] - (gint64) x[i] * m->capacity;
            r[i] = ((gint64) (x[i] - e0) * m->gather + p) * m->capacity + slot;
        }
    }
}

guint
simpar_moe_max_load(const SimparMoe *m)
{
    SimparMoe all = *m;
    all.capacity = G_MAXUINT / MAX(m->experts, 1u); /* nothing dropped */
    g_autofree gint64 *rows = g_new(gint64, (gsize) m->tokens * m->top_k);
    g_autofree guint *experts = g_new(guint, (gsize) m->tokens * m->top_k);
    g_autofree guint *count = g_new0(guint, m->experts);
    simpar_moe_rows(&all, rows, experts);
    guint most = 0;
    for (gsize i = 0; i < (gsize) m->tokens * m->top_k; i++)
        most = MAX(most, ++count[experts[i]]);
    return most;
}

/* ----- DeepEP's hops ----- */

guint
simpar_moe_hop_ranks(const SimparMoe *m)
{
    return m->ep * MAX(m->etp, 1u);
}

guint
simpar_moe_hop_scores(const SimparMoe *m)
{
    return m->top_k * MAX(m->etp, 1u);
}

/* The routing of every rank of DeepEP's group (ep x etp: Megatron-Core's tp_ep group, rank
 * e etp + t): a hop's rows come from other ranks. Each rank routes its own tokens; a kept choice
 * of expert x goes to every expert-TP rank of its EP rank x / El, the etp ranks from
 * (x / El) etp (MoEFlexTokenDispatcher._initialize_metadata's expanded routing map). */
typedef struct {
    guint T, k, R, N, El, C, G, etp;
    gint64 *rows;   /* [G x T x k]: simpar_moe_rows of rank p, -1 dropped */
    guint *experts; /* [G x T x k] */
} MoeWalk;

static void
moe_walk_init(MoeWalk *w, const SimparMoe *m)
{
    guint G = simpar_moe_hop_ranks(m);
    g_assert(m->node_ranks > 0 && G % m->node_ranks == 0);
    *w = (MoeWalk){.T = m->tokens,
                   .k = m->top_k,
                   .R = m->node_ranks,
                   .N = G / m->node_ranks,
                   .El = m->experts / m->ep,
                   .C = m->capacity,
                   .G = G,
                   .etp = MAX(m->etp, 1u)};
    gsize n = (gsize) m->tokens * m->top_k;
    w->rows = g_new(gint64, n * G), w->experts = g_new(guint, n * G);
    for (guint p = 0; p < G; p++) {
        SimparMoe r = *m;
        r.ep_rank = p / w->etp, r.token0 = (guint64) p * m->tokens;
        simpar_moe_rows(&r, w->rows + p * n, w->experts + p * n);
    }
}

static void
moe_walk_clear(MoeWalk *w)
{
    g_free(w->rows), g_free(w->experts);
}

/* Whether expert x's rows go to group rank q (q_node: to a rank of q's node). */
static gboolean
moe_walk_holds(const MoeWalk *w, guint x, guint q, gboolean q_node)
{
    guint first = x / w->El * w->etp; /* its expert-TP ranks: first .. first + etp - 1 */
    if (!q_node)
        return q / w->etp * w->etp == first;
    return first / w->R <= q / w->R && q / w->R <= (first + w->etp - 1) / w->R;
}

/* Whether token t of source rank p has a kept choice on rank q (q_node: on q's node). */
static gboolean
moe_walk_on(const MoeWalk *w, guint p, guint t, guint q, gboolean q_node)
{
    gsize i = ((gsize) p * w->T + t) * w->k;
    for (guint j = 0; j < w->k; j++)
        if (w->rows[i + j] >= 0 && moe_walk_holds(w, w->experts[i + j], q, q_node))
            return TRUE;
    return FALSE;
}

void
simpar_moe_hop_capacity(SimparMoe *m)
{
    MoeWalk w;
    moe_walk_init(&w, m);
    g_autofree guint *node = g_new0(guint, (gsize) w.G * w.N);
    g_autofree guint *gpu = g_new0(guint, (gsize) w.G * w.R);
    m->cap_node = m->cap_gpu = 1; /* an empty block still has a row: counts of 0 are refused */
    for (guint p = 0; p < w.G; p++)
        for (guint t = 0; t < w.T; t++)
            for (guint n = 0; n < w.N; n++) {
                if (!moe_walk_on(&w, p, t, n * w.R, TRUE))
                    continue;
                guint f = n * w.R + p % w.R, rows = ++node[p * w.N + n]; /* f: its rail peer */
                m->cap_node = MAX(m->cap_node, rows); /* (MAX evaluates twice: no ++ inside) */
                for (guint l = 0; l < w.R; l++) {
                    if (!moe_walk_on(&w, p, t, n * w.R + l, FALSE))
                        continue;
                    rows = ++gpu[(gsize) f * w.R + l];
                    m->cap_gpu = MAX(m->cap_gpu, rows);
                }
            }
    moe_walk_clear(&w);
}

gint64 *
simpar_moe_hop_map(const SimparMoe *m, guint *choice, gsize *n_rows)
{
    MoeWalk w;
    moe_walk_init(&w, m);
    guint r = m->ep_rank * w.etp + m->etp_rank, home = r / w.R * w.R; /* r's node's first rank */
    gsize n = m->hop == 0   ? (gsize) w.N * m->cap_node
              : m->hop == 1 ? (gsize) w.R * m->cap_gpu
                            : (gsize) w.El * w.G * w.C;
    gint64 *src = g_new(gint64, n);
    for (gsize i = 0; i < n; i++)
        src[i] = -1;
    g_autofree guint *count = g_new0(guint, MAX(w.N, w.R));
    if (m->hop == 0) /* per target node, the rank's tokens with a kept choice there */
        for (guint t = 0; t < w.T; t++)
            for (guint nd = 0; nd < w.N; nd++)
                if (moe_walk_on(&w, r, t, nd * w.R, TRUE))
                    src[(gsize) nd * m->cap_node + count[nd]++] = t;
    /* hop 1: what r received over the rail (block nd: from rank nd R + r's local index), per GPU
     * of r's node the rows going there; hop 2: r's rows as its node's forwarders send them */
    for (guint l = 0; m->hop > 0 && l < w.R; l++) {
        if (m->hop == 1 && l != r % w.R)
            continue;
        guint slot = 0; /* hop 2: the rows forwarder home + l sends r */
        for (guint nd = 0; nd < w.N; nd++) {
            guint p = nd * w.R + l, received = 0;
            for (guint t = 0; t < w.T; t++) {
                if (!moe_walk_on(&w, p, t, r, TRUE))
                    continue;
                gint64 row = (gint64) nd * m->cap_node + received++;
                if (m->hop == 1) {
                    for (guint g = 0; g < w.R; g++)
                        if (moe_walk_on(&w, p, t, home + g, FALSE))
                            src[(gsize) g * m->cap_gpu + count[g]++] = row;
                    continue;
                }
                if (!moe_walk_on(&w, p, t, r, FALSE))
                    continue;
                gsize i = ((gsize) p * w.T + t) * w.k;
                for (guint j = 0; j < w.k; j++) {
                    guint e = w.experts[i + j];
                    if (w.rows[i + j] < 0 || !moe_walk_holds(&w, e, r, FALSE))
                        continue;
                    gsize b = (((gsize) (e % w.El) * w.G + p) * w.C +
                               (gsize) (w.rows[i + j] - (gint64) e * w.C));
                    src[b] = (gint64) l * m->cap_gpu + slot;
                    if (choice != NULL) /* its score's column: choice j's copy for r */
                        choice[b] = j * w.etp + r % w.etp;
                }
                slot++;
            }
        }
    }
    moe_walk_clear(&w);
    *n_rows = n;
    return src; /* (transfer full) */
}

/* ----- the block's schedule ----- */

typedef struct {
    SimparSchedule *sched;
    const SimparModel *model;
    SimparMoe route; /* this rank's routing (views left empty) */
    guint rank, ep_group;
    guint etp, etp_rank, etp_group; /* expert tensor parallelism: ETP, this rank's place, group */
    guint sum_group;                /* the router's and shared experts' partial gradients */
    const guint *rails, *nodes;     /* DeepEP's hops: the groups of each local index, each node */
    SimparPhase phase;
    guint64 T, h, E, El, C, fe, fc1e, fs, fc1s; /* fe, fc1e: the rank's 1/ETP columns */
    guint64 rows;                               /* each local expert's: ETP x EP x C */
    /* --moe-shared-expert-overlap: the all-to-alls' stream (G_MAXUINT: the compute stream), the
     * rank's last op on the compute stream, the all-to-all the next compute op of moe_join's
     * waits for (G_MAXUINT: none) */
    guint comm, last, wait;
    gboolean join;
    /* without --moe-shared-expert-overlap, the all-to-alls' stream: 0, or the merged micro-batches'
     * communication stream (simpar_moe_pair_build) */
    guint a2a;
    const char *prefix;   /* the micro-batch's tensors' prefix: "" or "mb1." (the pair's second) */
    guint recompute;      /* plan.h's module bits: moe, moe_act, shared_experts */
    gboolean recomputing; /* emitting forward ops again in the backward ("bwd.recompute.") */
    GArray *fwd_bufs;     /* moe, shared_experts: the buffers the forward made, in order */
    guint n_replayed;     /* while recomputing: of them, handed out again */
    guint shared_mark;    /* shared_experts: where their three buffers start among fwd_bufs */
} MoeCtx;

/* The start of buffer `buf`; G_MAXUINT: no view. */
static SimparView
moe_view(guint buf)
{
    return buf == G_MAXUINT ? SIMPAR_NO_VIEW : (SimparView){buf, 0};
}

/* A new buffer; while recomputing, the forward's made by the same request (the recomputed ops
 * rewrite the kept activations in place). */
static guint
moe_buf(MoeCtx *c, const char *name, guint64 elems)
{
    return simpar_schedule_replay_buffer(c->sched, c->rank, name, elems, c->fwd_bufs,
                                         c->phase == SIMPAR_PHASE_FORWARD, c->recomputing,
                                         &c->n_replayed);
}

/* Appends `op` for the rank: on the compute stream unless the caller put it on c->comm, where
 * it waits for the compute stream's last op; a compute op after moe_join waits for the
 * all-to-all. */
static void
moe_add(MoeCtx *c, SimparOp *op, const char *name)
{
    op->rank = c->rank;
    op->phase = c->phase;
    g_autofree char *full = g_strconcat(c->phase == SIMPAR_PHASE_FORWARD ? "fwd." : "bwd.",
                                        c->recomputing ? "recompute." : "", name, NULL);
    op->name = g_intern_string(full);
    guint idx = simpar_schedule_add_op(c->sched, op);
    if (op->stream != 0) {
        if (c->last != G_MAXUINT)
            simpar_schedule_add_dep(c->sched, idx, c->last);
        c->wait = idx;
        return;
    }
    if (c->join && c->wait != G_MAXUINT)
        simpar_schedule_add_dep(c->sched, idx, c->wait);
    if (c->join)
        c->wait = G_MAXUINT, c->join = FALSE;
    c->last = idx;
}

/* The next compute op waits for the all-to-all on c->comm (nothing without one). */
static void
moe_join(MoeCtx *c)
{
    c->join = c->wait != G_MAXUINT;
}

static void
moe_route_op(MoeCtx *c, SimparOpKind kind, const char *name, guint in0, guint in1, guint in2,
             guint out0, guint out1)
{
    SimparOp op = {.kind = kind, .u.moe = c->route};
    const guint in[3] = {in0, in1, in2}, out[2] = {out0, out1};
    for (guint i = 0; i < 3; i++)
        op.u.moe.in[i] = moe_view(in[i]);
    for (guint i = 0; i < 2; i++)
        op.u.moe.out[i] = moe_view(out[i]);
    moe_add(c, &op, name);
}

/* c = op(a) op(b), batched over `batch` experts with whole-matrix strides. */
static void
moe_gemm(MoeCtx *c, const char *name, guint batch, const SimparGemm *shape)
{
    SimparOp op = {.kind = SIMPAR_OP_GEMM, .u.gemm = *shape};
    SimparGemm *g = &op.u.gemm;
    g->batch = batch;
    if (batch > 1) {
        g->stride_a = (gsize) g->m * g->k, g->stride_b = (gsize) g->k * g->n;
        g->stride_c = (gsize) g->m * g->n;
    }
    moe_add(c, &op, name);
}

static void
moe_kernel(MoeCtx *c, SimparOpKind kind, const char *name, guint64 rows, guint64 cols, guint in0,
           guint in1, guint out0)
{
    SimparOp op = {.kind = kind};
    op.u.kern.rows = rows, op.u.kern.cols = cols;
    op.u.kern.in[0] = moe_view(in0);
    op.u.kern.in[1] = moe_view(in1);
    op.u.kern.out[0] = moe_view(out0);
    for (guint i = 2; i < G_N_ELEMENTS(op.u.kern.in); i++)
        op.u.kern.in[i] = SIMPAR_NO_VIEW;
    for (guint i = 1; i < G_N_ELEMENTS(op.u.kern.out); i++)
        op.u.kern.out[i] = SIMPAR_NO_VIEW;
    moe_add(c, &op, name);
}

static void
moe_all_to_all_in(MoeCtx *c, const char *name, guint group, guint64 count, guint send, guint recv)
{
    SimparOp op = {.kind = SIMPAR_OP_COLLECTIVE, .stream = c->comm == G_MAXUINT ? c->a2a : c->comm};
    op.u.coll = (SimparColl){SIMPAR_COLL_ALL_TO_ALL, group,          count,         0,
                             moe_view(send),         moe_view(recv), SIMPAR_RED_SUM};
    moe_add(c, &op, name);
}

static void
moe_all_to_all(MoeCtx *c, const char *name, guint send, guint recv)
{
    moe_all_to_all_in(c, name, c->ep_group, c->El * c->C * c->h, send, recv);
}

/* DeepEP's hops (schedule.h): the rail all-to-all among the ranks of the same local index (one
 * RDMA transfer per token and target node), then the node's over NVLink (one per token and
 * target GPU); `rows` the row width, `node` FALSE for the rail. */
static void
moe_hop_all_to_all(MoeCtx *c, const char *name, gboolean node, guint64 width, guint send,
                   guint recv)
{
    guint R = c->route.node_ranks;
    guint64 cap = node ? c->route.cap_gpu : c->route.cap_node;
    moe_all_to_all_in(c, name, node ? c->nodes[c->rank / R] : c->rails[c->rank % R], cap * width,
                      send, recv);
}

/* One of the hops' ops: hop `hop` of `kind`. */
static void
moe_hop_op(MoeCtx *c, SimparOpKind kind, guint hop, const char *name, guint in0, guint in1,
           guint in2, guint out0, guint out1)
{
    c->route.hop = hop;
    moe_route_op(c, kind, name, in0, in1, in2, out0, out1);
    c->route.hop = 0;
}

/* The MLP's activation of `rows` rows: z [rows x fc1] -> y [rows x f]. */
static void
moe_act(MoeCtx *c, const char *name, guint64 rows, guint64 f, guint z, guint y)
{
    gboolean swiglu = c->model->mlp == SIMPAR_MLP_SWIGLU;
    moe_kernel(c, swiglu ? SIMPAR_OP_SWIGLU : SIMPAR_OP_GELU, name, rows, f, z, G_MAXUINT, y);
}

static void
moe_act_bwd(MoeCtx *c, const char *name, guint64 rows, guint64 f, guint dy, guint z, guint dz)
{
    gboolean swiglu = c->model->mlp == SIMPAR_MLP_SWIGLU;
    moe_kernel(c, swiglu ? SIMPAR_OP_SWIGLU_BWD : SIMPAR_OP_GELU_BWD, name, rows, f, dy, z, dz);
}

static void
moe_shard_at(MoeCtx *c, const char *tensor, SimparShardRole role, SimparView v, guint64 row0,
             guint64 rows, guint64 col0, guint64 cols)
{
    SimparShard s = {tensor, role, c->rank, v, row0, rows, col0, cols, c->sum_group};
    simpar_schedule_add_shard(c->sched, &s);
}

static void
moe_shard(MoeCtx *c, const char *tensor, SimparShardRole role, guint buf, guint64 row0,
          guint64 rows, guint64 cols)
{
    moe_shard_at(c, tensor, role, moe_view(buf), row0, rows, 0, cols);
}

/* Expert tensor parallelism (etp > 1): the rank's experts' weights and gradients are column
 * slice etp_rank of each expert's fc1 (fc1e of them; SwiGLU's (gate, up) pairs whole) and the
 * same rows of its fc2: one fc1 block, one fc2 block per local expert. */
static void
moe_expert_shards(MoeCtx *c, const char *tensor, guint w, guint dw, gboolean fc1)
{
    g_autofree char *grad = g_strconcat(c->prefix, tensor, ".grad", NULL);
    const char *g = g_intern_string(grad);
    guint64 e0 = (guint64) c->route.ep_rank * c->El;
    if (fc1) {
        guint64 col0 = c->etp_rank * c->fc1e;
        if (w != G_MAXUINT) /* G_MAXUINT: another micro-batch's, its shards made */
            moe_shard_at(c, tensor, SIMPAR_SHARD_INPUT, moe_view(w), e0 * c->h, c->El * c->h, col0,
                         c->fc1e);
        moe_shard_at(c, g, SIMPAR_SHARD_OUTPUT, moe_view(dw), e0 * c->h, c->El * c->h, col0,
                     c->fc1e);
        return;
    }
    for (guint64 i = 0; i < c->El; i++) {
        guint64 row0 = (e0 + i) * c->fe * c->etp + c->etp_rank * c->fe;
        gsize off = (gsize) (i * c->fe * c->h);
        if (w != G_MAXUINT)
            moe_shard_at(c, tensor, SIMPAR_SHARD_INPUT, (SimparView){w, off}, row0, c->fe, 0, c->h);
        moe_shard_at(c, g, SIMPAR_SHARD_OUTPUT, (SimparView){dw, off}, row0, c->fe, 0, c->h);
    }
}

typedef struct {
    guint x, dy, wr, w1, w2, ws1, ws2;              /* inputs */
    guint y, dx, dwr, dw1, dw2, dws1, dws2;         /* outputs */
    guint logits, scores, back, xs, z1, a1, s1, sa; /* kept for the backward */
    guint sc, z2;                                   /* DeepEP's hops: xs's scores, fc2's rows */
    guint ys, dsa, ds1; /* the shared experts' output, their gradients at fc2 and fc1 */
    /* between the flat dispatcher's nodes (moe_fwd_* and moe_bwd_*): the all-to-alls' buffers,
     * the scores' gradient */
    guint send, recv, zu, dback, drecv, dxu, dsend, dscores;
    guint probs; /* the all-gather dispatcher's gathered probs */
} MoeBufs;

/* The name of `tensor` of the context's micro-batch (interned). */
static const char *
moe_name(const MoeCtx *c, const char *tensor)
{
    g_autofree char *name = g_strconcat(c->prefix, tensor, NULL);
    return g_intern_string(name);
}

/* The rank's weights (or, `shared` not NULL, its weights: the pair's second micro-batch), their
 * gradients, x, dy, y and dx, each with its shard. */
static void
moe_params(MoeCtx *c, MoeBufs *b, const MoeBufs *shared)
{
    guint64 T = c->T, h = c->h, p = c->rank, e = c->route.ep_rank;

    struct {
        const char *name;
        guint *w, *dw;
        guint64 row0, rows, cols;
        SimparShardRole grad;
    } params[] = {
        {"router.weight", &b->wr, &b->dwr, 0, h, c->E, SIMPAR_SHARD_PARTIAL},
        {"experts.fc1.weight", &b->w1, &b->dw1, e * c->El * h, c->El * h, c->fc1e,
         SIMPAR_SHARD_OUTPUT},
        {"experts.fc2.weight", &b->w2, &b->dw2, e * c->El * c->fe, c->El * c->fe, h,
         SIMPAR_SHARD_OUTPUT},
        {"shared.fc1.weight", &b->ws1, &b->dws1, 0, h, c->fc1s, SIMPAR_SHARD_PARTIAL},
        {"shared.fc2.weight", &b->ws2, &b->dws2, 0, c->fs, h, SIMPAR_SHARD_PARTIAL},
    };

    guint n = c->fs > 0 ? G_N_ELEMENTS(params) : 3;
    for (guint i = 0; i < n; i++) {
        g_autofree char *grad = g_strconcat(params[i].name, ".grad", NULL);
        if (shared != NULL) { /* the same weights: their offsets in MoeBufs */
            gsize off = (gsize) ((const char *) params[i].w - (const char *) b);
            *params[i].w = G_STRUCT_MEMBER(guint, shared, off);
        } else {
            *params[i].w = moe_buf(c, params[i].name, params[i].rows * params[i].cols);
        }
        *params[i].dw = moe_buf(c, grad, params[i].rows * params[i].cols);
        if (c->etp > 1 && (i == 1 || i == 2)) {
            moe_expert_shards(c, params[i].name, shared != NULL ? G_MAXUINT : *params[i].w,
                              *params[i].dw, i == 1);
            continue;
        }
        if (shared == NULL)
            moe_shard(c, params[i].name, SIMPAR_SHARD_INPUT, *params[i].w, params[i].row0,
                      params[i].rows, params[i].cols);
        moe_shard(c, moe_name(c, grad), params[i].grad, *params[i].dw, params[i].row0,
                  params[i].rows, params[i].cols);
    }
    b->x = moe_buf(c, "x", T * h), b->dy = moe_buf(c, "dy", T * h);
    b->y = moe_buf(c, "y", T * h), b->dx = moe_buf(c, "dx", T * h);
    moe_shard(c, moe_name(c, "x"), SIMPAR_SHARD_INPUT, b->x, p * T, T, h);
    moe_shard(c, moe_name(c, "dy"), SIMPAR_SHARD_INPUT, b->dy, p * T, T, h);
    moe_shard(c, moe_name(c, "y"), SIMPAR_SHARD_OUTPUT, b->y, p * T, T, h);
    moe_shard(c, moe_name(c, "dx"), SIMPAR_SHARD_OUTPUT, b->dx, p * T, T, h);
}

/* The shared experts' fc1 and activation: x -> b->sa. */
static void
moe_shared_fc1(MoeCtx *c, MoeBufs *b)
{
    guint64 T = c->T, h = c->h;
    b->s1 = moe_buf(c, "shared.fc1.y", T * c->fc1s), b->sa = moe_buf(c, "shared.act", T * c->fs);
    b->ys = moe_buf(c, "shared.fc2.y", T * h);
    moe_gemm(c, "shared.fc1.gemm", 1,
             &(SimparGemm){
                 .m = T, .n = c->fc1s, .k = h, .a = {b->x, 0}, .b = {b->ws1, 0}, .c = {b->s1, 0}});
    moe_act(c, "shared.act", T, c->fs, b->s1, b->sa);
}

/* The shared experts' fc2: b->sa -> b->ys. */
static void
moe_shared_fc2(MoeCtx *c, MoeBufs *b)
{
    moe_gemm(
        c, "shared.fc2.gemm", 1,
        &(SimparGemm){
            .m = c->T, .n = c->h, .k = c->fs, .a = {b->sa, 0}, .b = {b->ws2, 0}, .c = {b->ys, 0}});
}

/* The shared experts' forward (moe_shared_fc1 and _fc2). */
static void
moe_shared_fwd(MoeCtx *c, MoeBufs *b)
{
    moe_shared_fc1(c, b);
    moe_shared_fc2(c, b);
}

/* Megatron-Core's --moe-shared-expert-overlap (shared_experts.py, SharedExpertMLP on a stream
 * of its own; token_dispatcher.py): the all-to-alls run beside the compute stream, which goes on
 * with the shared experts' fc1 and activation during the dispatch and their fc2 during the
 * combine (in the backward, fc2's gradients during the combine's and the rest during the
 * dispatch's); the op after them waits for the all-to-all. Without it nothing runs beside. */
static gboolean
moe_overlap(const MoeCtx *c)
{
    return c->comm != G_MAXUINT;
}

/* Expert tensor parallelism (etp > 1), as Megatron-Core's all-to-all dispatcher runs it
 * (megatron/core/transformer/moe/token_dispatcher.py, MoEAlltoAllTokenDispatcher's
 * dispatch_postprocess and combine_preprocess): the rows a rank received over its EP group,
 * [ep x E/ep x C x h], all-gathered over the expert-TP group into [etp x ep x E/ep x C x h], as
 * every rank of it runs its column slice of the same experts on the same rows; the experts'
 * partial rows, reduce-scattered back. Returns the gathered buffer (`in` itself at etp 1). */
static guint
moe_etp_gather(MoeCtx *c, const char *buf, const char *name, guint in)
{
    if (c->etp == 1)
        return in;
    guint64 blocks = c->E * c->C * c->h;
    guint out = moe_buf(c, buf, blocks * c->etp);
    SimparOp op = {.kind = SIMPAR_OP_COLLECTIVE};
    op.u.coll = (SimparColl){SIMPAR_COLL_ALL_GATHER, c->etp_group,  blocks,        0,
                             moe_view(in),           moe_view(out), SIMPAR_RED_SUM};
    moe_add(c, &op, name);
    return out;
}

/* The reverse: [etp x ep x E/ep x C x h] partial rows summed over the expert-TP group, this
 * rank's [ep x E/ep x C x h] into a new buffer `buf` (`in` itself at etp 1). */
static guint
moe_etp_scatter(MoeCtx *c, const char *buf, const char *name, guint in)
{
    if (c->etp == 1)
        return in;
    guint64 blocks = c->E * c->C * c->h;
    guint out = moe_buf(c, buf, blocks);
    SimparOp op = {.kind = SIMPAR_OP_COLLECTIVE};
    op.u.coll = (SimparColl){SIMPAR_COLL_REDUCE_SCATTER,
                             c->etp_group,
                             blocks,
                             0,
                             moe_view(in),
                             moe_view(out),
                             SIMPAR_RED_SUM};
    moe_add(c, &op, name);
    return out;
}

/* The widths of DeepEP's hops' rows: a token and its scores (DeepEP's dispatch sends the
 * top-k weights with the token, README "normal kernels"), so that the expert's GPU weights its
 * output and a node's rows are summed before the one transfer back (arXiv 2412.19437 section
 * 3.2.2); the combine's rows are the token's width. */
static guint64
moe_hop_width(const MoeCtx *c)
{
    return c->h + simpar_moe_hop_scores(&c->route);
}

/* Hybrid-EP's metadata preprocessing (--moe-flex-backend hybridep): before its dispatch kernel
 * each rank's routing map, a byte per token and expert, is all-gathered over the group with NCCL
 * (DeepEP's hybrid-ep branch, csrc/hybrid_ep/executor/executor.cu Executor::allgather_routing_map:
 * all_gather_into_tensor across nodes, and in one node unless enable_custom_allgather, off by
 * default), once per forward dispatch (the backward reuses the handle: Megatron-Core's
 * fused_a2a.py HybridEPDispatch.backward and HybridEPCombine.backward). The map is held in
 * elements of the schedule's type, T E bytes rounded up; the preprocessing kernel that reads the
 * gathered maps is not priced. */
static void
moe_routing_gather(MoeCtx *c)
{
    guint G = simpar_moe_hop_ranks(&c->route);
    if (!c->model->moe.hybridep || G == 1)
        return;
    guint64 ds = simpar_dtype_size(simpar_schedule_dtype(c->sched));
    guint64 count = (c->T * c->E + ds - 1) / ds;
    guint map = moe_buf(c, "moe.routing-map", count);
    guint gathered = moe_buf(c, "moe.routing-map.gathered", count * G);
    SimparOp op = {.kind = SIMPAR_OP_COLLECTIVE, .stream = c->comm == G_MAXUINT ? c->a2a : c->comm};
    op.u.coll = (SimparColl){SIMPAR_COLL_ALL_GATHER, c->sum_group,       count,         0,
                             moe_view(map),          moe_view(gathered), SIMPAR_RED_SUM};
    moe_add(c, &op, "moe.routing-map-all-gather");
}

/* DeepEP's dispatch: x and scores -> b->xs and b->sc over the rail, then the node. */
static void
moe_dispatch_hops(MoeCtx *c, MoeBufs *b)
{
    guint64 R = c->route.node_ranks, N = simpar_moe_hop_ranks(&c->route) / R, w = moe_hop_width(c);
    guint64 rail = N * c->route.cap_node * w, node = R * c->route.cap_gpu * w;
    guint s0 = moe_buf(c, "moe.dispatch.send", rail), r0 = moe_buf(c, "moe.dispatch.recv", rail);
    moe_hop_op(c, SIMPAR_OP_MOE_HOP, 0, "moe.permute", b->x, b->scores, G_MAXUINT, s0, G_MAXUINT);
    moe_routing_gather(c); /* next to the hops, as the merged layers' dispatch node begins */
    moe_hop_all_to_all(c, "moe.all-to-all-dispatch-rail", FALSE, w, s0, r0);
    if (moe_overlap(c))
        moe_shared_fc1(c, b);
    moe_join(c);
    guint s1 = moe_buf(c, "moe.dispatch.forward", node),
          r1 = moe_buf(c, "moe.dispatch.forwarded", node);
    moe_hop_op(c, SIMPAR_OP_MOE_HOP, 1, "moe.forward", r0, G_MAXUINT, G_MAXUINT, s1, G_MAXUINT);
    moe_hop_all_to_all(c, "moe.all-to-all-dispatch-node", TRUE, w, s1, r1);
    moe_join(c);
    b->xs = moe_buf(c, "experts.x", c->E * c->C * c->h * c->etp);
    b->sc = moe_buf(c, "experts.scores", c->E * c->C * c->etp);
    moe_hop_op(c, SIMPAR_OP_MOE_HOP, 2, "moe.sort", r1, G_MAXUINT, G_MAXUINT, b->xs, b->sc);
}

/* DeepEP's combine: the experts' rows b->z2, weighted and summed per forwarder (NVLink), then
 * per node (the rail), into the routed output; returns it. */
static guint
moe_combine_hops(MoeCtx *c, MoeBufs *b)
{
    guint64 R = c->route.node_ranks, N = simpar_moe_hop_ranks(&c->route) / R, h = c->h;
    guint64 node = R * c->route.cap_gpu * h, rail = N * c->route.cap_node * h;
    guint s2 = moe_buf(c, "moe.combine.send", node), r2 = moe_buf(c, "moe.combine.forwarded", node);
    moe_hop_op(c, SIMPAR_OP_MOE_HOP_REDUCE, 2, "moe.unsort", b->z2, b->sc, G_MAXUINT, s2,
               G_MAXUINT);
    moe_hop_all_to_all(c, "moe.all-to-all-combine-node", TRUE, h, s2, r2);
    if (moe_overlap(c))
        moe_shared_fc2(c, b);
    moe_join(c);
    guint s1 = moe_buf(c, "moe.combine.forward", rail);
    b->back = moe_buf(c, "moe.combine.recv", rail);
    moe_hop_op(c, SIMPAR_OP_MOE_HOP_REDUCE, 1, "moe.forward", r2, G_MAXUINT, G_MAXUINT, s1,
               G_MAXUINT);
    moe_hop_all_to_all(c, "moe.all-to-all-combine-rail", FALSE, h, s1, b->back);
    moe_join(c);
    guint yr = c->fs > 0 ? moe_buf(c, "moe.y", c->T * h) : b->y;
    moe_hop_op(c, SIMPAR_OP_MOE_HOP_REDUCE, 0, "moe.unpermute", b->back, G_MAXUINT, G_MAXUINT, yr,
               G_MAXUINT);
    return yr;
}

/* The shared experts, added to the routed output yr (b->y itself without them). */
static void
moe_forward_shared(MoeCtx *c, MoeBufs *b, guint yr)
{
    if (c->fs == 0)
        return;
    if (!moe_overlap(c)) {
        if (!c->recomputing)
            c->shared_mark = c->fwd_bufs != NULL ? c->fwd_bufs->len : 0;
        moe_shared_fwd(c, b);
    }
    moe_kernel(c, SIMPAR_OP_ADD, "moe.add-shared", c->T, c->h, yr, b->ys, b->y);
}

/* The columns of a token's scores: its top_k, or the all-gather dispatcher's dense probs over
 * every expert (schedule.h). */
static guint64
moe_score_cols(const MoeCtx *c)
{
    return c->route.gather > 0 ? c->E : c->route.top_k;
}

/* The router: x -> logits -> scores. */
static void
moe_router(MoeCtx *c, MoeBufs *b)
{
    guint64 T = c->T, h = c->h, E = c->E;
    b->logits = moe_buf(c, "router.logits", T * E);
    moe_gemm(c, "router.gemm", 1,
             &(SimparGemm){
                 .m = T, .n = E, .k = h, .a = {b->x, 0}, .b = {b->wr, 0}, .c = {b->logits, 0}});
    b->scores = moe_buf(c, "router.scores", T * moe_score_cols(c));
    moe_route_op(c, SIMPAR_OP_MOE_GATE, "router.gate", b->logits, G_MAXUINT, G_MAXUINT, b->scores,
                 G_MAXUINT);
}

/* The local experts on b->xs: fc1, activation, fc2 into b->z2 (allocated). */
static void
moe_experts_forward(MoeCtx *c, MoeBufs *b)
{
    guint64 h = c->h, rows = c->rows, blocks = c->E * c->C * h;
    b->z1 = moe_buf(c, "experts.fc1.y", c->El * rows * c->fc1e);
    moe_gemm(
        c, "experts.fc1.gemm", c->El,
        &(SimparGemm){
            .m = rows, .n = c->fc1e, .k = h, .a = {b->xs, 0}, .b = {b->w1, 0}, .c = {b->z1, 0}});
    b->a1 = moe_buf(c, "experts.act", c->El * rows * c->fe);
    moe_act(c, "experts.act", c->El * rows, c->fe, b->z1, b->a1);
    b->z2 = moe_buf(c, "experts.fc2.y", blocks * c->etp);
}

/* The flat dispatcher's forward as Megatron-Core's --overlap-moe-expert-parallel-comm splits it
 * (megatron/core/models/gpt/fine_grained_callables.py): pre-dispatch (router, permutation),
 * dispatch (the all-to-all), mlp (expert-TP's gather, sort, experts, unsort, its
 * reduce-scatter), combine (the all-to-all, unpermutation, shared experts). */
static void
moe_fwd_pre(MoeCtx *c, MoeBufs *b)
{
    guint64 blocks = c->E * c->C * c->h;
    moe_router(c, b);
    b->send = moe_buf(c, "moe.dispatch.send", blocks),
    b->recv = moe_buf(c, "moe.dispatch.recv", blocks);
    moe_route_op(c, SIMPAR_OP_MOE_DISPATCH, "moe.permute", b->x, G_MAXUINT, G_MAXUINT, b->send,
                 G_MAXUINT);
}

static void
moe_fwd_dispatch(MoeCtx *c, MoeBufs *b)
{
    moe_all_to_all(c, "moe.all-to-all-dispatch", b->send, b->recv);
    if (moe_overlap(c))
        moe_shared_fc1(c, b);
    moe_join(c);
}

static void
moe_fwd_mlp(MoeCtx *c, MoeBufs *b)
{
    guint64 blocks = c->E * c->C * c->h;
    guint recv = moe_etp_gather(c, "moe.dispatch.gathered", "moe.all-gather-dispatch", b->recv);
    b->xs = moe_buf(c, "experts.x", blocks * c->etp);
    moe_route_op(c, SIMPAR_OP_MOE_SORT, "moe.sort", recv, G_MAXUINT, G_MAXUINT, b->xs, G_MAXUINT);
    moe_experts_forward(c, b);
    guint zu = moe_buf(c, c->etp > 1 ? "moe.combine.partial" : "moe.combine.send", blocks * c->etp);
    moe_gemm(c, "experts.fc2.gemm", c->El,
             &(SimparGemm){.m = c->rows,
                           .n = c->h,
                           .k = c->fe,
                           .a = {b->a1, 0},
                           .b = {b->w2, 0},
                           .c = {b->z2, 0}});
    moe_route_op(c, SIMPAR_OP_MOE_UNSORT, "moe.unsort", b->z2, G_MAXUINT, G_MAXUINT, zu, G_MAXUINT);
    b->zu = moe_etp_scatter(c, "moe.combine.send", "moe.reduce-scatter-combine", zu);
}

static void
moe_fwd_combine(MoeCtx *c, MoeBufs *b)
{
    b->back = moe_buf(c, "moe.combine.recv", c->E * c->C * c->h);
    moe_all_to_all(c, "moe.all-to-all-combine", b->zu, b->back);
    if (moe_overlap(c))
        moe_shared_fc2(c, b);
    moe_join(c);
    guint yr = c->fs > 0 ? moe_buf(c, "moe.y", c->T * c->h) : b->y;
    moe_route_op(c, SIMPAR_OP_MOE_COMBINE, "moe.unpermute", b->back, b->scores, G_MAXUINT, yr,
                 G_MAXUINT);
    moe_forward_shared(c, b, yr);
}

/* The all-gather dispatcher (moe.h; megatron/core/transformer/moe/token_dispatcher.py,
 * MoEAllGatherTokenDispatcher): its collectives run over the TP x EP group (the block's every
 * rank; none when it is one rank). ALL_GATHER: `count` elements of `in` from each rank into a
 * new buffer `buf`, source-major; REDUCE_SCATTER: `in`'s [G x count] summed over the group, this
 * rank's count into `out` (G_MAXUINT: a new buffer `buf`). Returns the result (`in` itself on
 * one rank, or `out` when given). */
static guint
moe_tp_ep(MoeCtx *c, SimparCollKind kind, const char *buf, const char *name, guint64 count,
          guint in, guint out)
{
    guint n = c->route.gather;
    if (n == 1 && out == G_MAXUINT)
        return in;
    if (out == G_MAXUINT)
        out = moe_buf(c, buf, kind == SIMPAR_COLL_ALL_GATHER ? count * n : count);
    if (n == 1) /* a one-rank group gathers nothing: the permutation wrote `out` itself */
        return out;
    SimparOp op = {.kind = SIMPAR_OP_COLLECTIVE};
    op.u.coll =
        (SimparColl){kind, c->sum_group, count, 0, moe_view(in), moe_view(out), SIMPAR_RED_SUM};
    moe_add(c, &op, name);
    return out;
}

/* One of the all-gather dispatcher's permutation ops on the gathered tokens: token0 the TP x EP
 * group's first (schedule.h). */
static void
moe_gathered_op(MoeCtx *c, SimparOpKind kind, const char *name, guint in0, guint in1, guint in2,
                guint out0, guint out1)
{
    guint64 own = c->route.token0;
    c->route.token0 -= (guint64) c->rank * c->T; /* the block's rank p holds tokens p T.. */
    moe_route_op(c, kind, name, in0, in1, in2, out0, out1);
    c->route.token0 = own;
}

/* The all-gather dispatcher's forward: the router, the probs and the tokens all-gathered over the
 * TP x EP group (dispatch_preprocess, token_dispatch), the rows of the rank's experts picked from
 * every gathered token (dispatch_postprocess's local permutation), the experts, their rows
 * weighted by the probs and un-permuted into the gathered tokens (combine_preprocess), reduce-
 * scattered back to each rank's own (token_combine), then the shared experts. */
static void
moe_forward_gather(MoeCtx *c, MoeBufs *b)
{
    guint64 T = c->T, h = c->h, n = c->route.gather;
    moe_router(c, b);
    b->probs = moe_tp_ep(c, SIMPAR_COLL_ALL_GATHER, "moe.dispatch.probs", "moe.all-gather-probs",
                         T * c->E, b->scores, G_MAXUINT);
    guint xg = moe_tp_ep(c, SIMPAR_COLL_ALL_GATHER, "moe.dispatch.gathered",
                         "moe.all-gather-dispatch", T * h, b->x, G_MAXUINT);
    b->xs = moe_buf(c, "experts.x", c->El * n * c->C * h);
    moe_gathered_op(c, SIMPAR_OP_MOE_DISPATCH, "moe.permute", xg, G_MAXUINT, G_MAXUINT, b->xs,
                    G_MAXUINT);
    moe_experts_forward(c, b);
    moe_gemm(
        c, "experts.fc2.gemm", c->El,
        &(SimparGemm){
            .m = c->rows, .n = h, .k = c->fe, .a = {b->a1, 0}, .b = {b->w2, 0}, .c = {b->z2, 0}});
    guint yr = c->fs > 0 ? moe_buf(c, "moe.y", T * h) : b->y;
    guint yg = n > 1 ? moe_buf(c, "moe.combine.partial", n * T * h) : yr;
    moe_gathered_op(c, SIMPAR_OP_MOE_COMBINE, "moe.unpermute", b->z2, b->probs, G_MAXUINT, yg,
                    G_MAXUINT);
    moe_tp_ep(c, SIMPAR_COLL_REDUCE_SCATTER, NULL, "moe.reduce-scatter-combine", T * h, yg, yr);
    moe_forward_shared(c, b, yr);
}

/* Router, dispatch, the local experts, combine and the shared experts. */
static void
moe_forward(MoeCtx *c, MoeBufs *b)
{
    if (c->route.gather > 0) {
        moe_forward_gather(c, b);
        return;
    }
    if (c->route.node_ranks == 0) {
        moe_fwd_pre(c, b);
        moe_fwd_dispatch(c, b);
        moe_fwd_mlp(c, b);
        moe_fwd_combine(c, b);
        return;
    }
    moe_router(c, b); /* DeepEP's hops */
    moe_dispatch_hops(c, b);
    moe_experts_forward(c, b);
    moe_gemm(c, "experts.fc2.gemm", c->El,
             &(SimparGemm){.m = c->rows,
                           .n = c->h,
                           .k = c->fe,
                           .a = {b->a1, 0},
                           .b = {b->w2, 0},
                           .c = {b->z2, 0}});
    moe_forward_shared(c, b, moe_combine_hops(c, b));
}

/* The experts' backward on the rank's sorted rows: dz2 -> dxs, dW1, dW2. */
static guint
moe_experts_backward(MoeCtx *c, MoeBufs *b, guint dz2)
{
    guint64 h = c->h, rows = c->rows, blocks = c->E * c->C * h * c->etp;
    if (c->recompute & SIMPAR_RECOMPUTE_MOE_ACT) { /* before fc2's backward, as its input */
        c->recomputing = TRUE;
        moe_act(c, "experts.act", c->El * rows, c->fe, b->z1, b->a1);
        c->recomputing = FALSE;
    }
    guint da1 = moe_buf(c, "experts.act.grad", c->El * rows * c->fe);
    moe_gemm(c, "experts.fc2.gemm-dx", c->El,
             &(SimparGemm){.m = rows,
                           .n = c->fe,
                           .k = h,
                           .trans_b = TRUE,
                           .a = {dz2, 0},
                           .b = {b->w2, 0},
                           .c = {da1, 0}});
    moe_gemm(c, "experts.fc2.gemm-dw", c->El,
             &(SimparGemm){.m = c->fe,
                           .n = h,
                           .k = rows,
                           .trans_a = TRUE,
                           .a = {b->a1, 0},
                           .b = {dz2, 0},
                           .c = {b->dw2, 0}});
    guint dz1 = moe_buf(c, "experts.fc1.y.grad", c->El * rows * c->fc1e);
    moe_act_bwd(c, "experts.act-bwd", c->El * rows, c->fe, da1, b->z1, dz1);
    guint dxs = moe_buf(c, "experts.x.grad", blocks);
    moe_gemm(c, "experts.fc1.gemm-dx", c->El,
             &(SimparGemm){.m = rows,
                           .n = h,
                           .k = c->fc1e,
                           .trans_b = TRUE,
                           .a = {dz1, 0},
                           .b = {b->w1, 0},
                           .c = {dxs, 0}});
    moe_gemm(c, "experts.fc1.gemm-dw", c->El,
             &(SimparGemm){.m = h,
                           .n = c->fc1e,
                           .k = rows,
                           .trans_a = TRUE,
                           .a = {b->xs, 0},
                           .b = {dz1, 0},
                           .c = {b->dw1, 0}});
    return dxs;
}

/* The shared experts' fc2 backward: dy -> b->dsa and fc2's weight gradient. */
static void
moe_shared_bwd_fc2(MoeCtx *c, MoeBufs *b)
{
    guint64 T = c->T, h = c->h;
    b->dsa = moe_buf(c, "shared.act.grad", T * c->fs);
    b->ds1 = moe_buf(c, "shared.fc1.y.grad", T * c->fc1s);
    moe_gemm(c, "shared.fc2.gemm-dx", 1,
             &(SimparGemm){.m = T,
                           .n = c->fs,
                           .k = h,
                           .trans_b = TRUE,
                           .a = {b->dy, 0},
                           .b = {b->ws2, 0},
                           .c = {b->dsa, 0}});
    moe_gemm(c, "shared.fc2.gemm-dw", 1,
             &(SimparGemm){.m = c->fs,
                           .n = h,
                           .k = T,
                           .trans_a = TRUE,
                           .a = {b->sa, 0},
                           .b = {b->dy, 0},
                           .c = {b->dws2, 0}});
}

/* The rest: the activation's and fc1's backward, x's gradient into dx (added to it with
 * `accumulate`). */
static void
moe_shared_bwd_fc1(MoeCtx *c, MoeBufs *b, guint dx, gboolean accumulate)
{
    guint64 T = c->T, h = c->h;
    moe_act_bwd(c, "shared.act-bwd", T, c->fs, b->dsa, b->s1, b->ds1);
    moe_gemm(c, "shared.fc1.gemm-dw", 1,
             &(SimparGemm){.m = h,
                           .n = c->fc1s,
                           .k = T,
                           .trans_a = TRUE,
                           .a = {b->x, 0},
                           .b = {b->ds1, 0},
                           .c = {b->dws1, 0}});
    moe_gemm(c, "shared.fc1.gemm-dx", 1,
             &(SimparGemm){.m = T,
                           .n = h,
                           .k = c->fc1s,
                           .trans_b = TRUE,
                           .accumulate = accumulate,
                           .a = {b->ds1, 0},
                           .b = {b->ws1, 0},
                           .c = {dx, 0}});
}

/* Overlapped (moe_overlap): the shared experts' fc1 backward during the dispatch's all-to-all
 * backward, x's gradient from them kept apart; returns where the routed part of x's gradient
 * goes (b->dx without the overlap). */
static guint
moe_shared_bwd_overlap(MoeCtx *c, MoeBufs *b, guint *sdx)
{
    *sdx = G_MAXUINT;
    if (!moe_overlap(c)) {
        moe_join(c); /* the all-to-all on the merged micro-batches' stream (moe_pair_build) */
        return b->dx;
    }
    *sdx = moe_buf(c, "shared.x.grad", c->T * c->h);
    moe_shared_bwd_fc1(c, b, *sdx, FALSE);
    moe_join(c);
    return moe_buf(c, "moe.x.grad", c->T * c->h);
}

/* x's gradient: the routed part dxr and the shared experts' sdx summed into b->dx, as autograd
 * sums a tensor's two uses (nothing without the overlap: the shared fc1 adds into b->dx). */
static void
moe_shared_bwd_sum(MoeCtx *c, MoeBufs *b, guint dxr, guint sdx)
{
    if (sdx != G_MAXUINT)
        moe_kernel(c, SIMPAR_OP_ADD, "moe.add-shared", c->T, c->h, dxr, sdx, b->dx);
}

/* DeepEP's combine and dispatch backward: dy back over the rail and the node to the experts'
 * rows (their scores' gradients beside them), the experts' backward, then dx and the scores'
 * gradients over the node and the rail; a token's copies are summed (each choice's score
 * gradient is nonzero on its expert's GPU only). */
static void
moe_backward_hops(MoeCtx *c, MoeBufs *b, guint dscores)
{
    guint64 R = c->route.node_ranks, N = simpar_moe_hop_ranks(&c->route) / R, h = c->h;
    guint64 w = moe_hop_width(c);
    guint64 rail = N * c->route.cap_node, node = R * c->route.cap_gpu;
    guint g0 = moe_buf(c, "moe.combine.recv.grad", rail * h),
          g0r = moe_buf(c, "moe.combine.forward.grad", rail * h);
    moe_hop_op(c, SIMPAR_OP_MOE_HOP_REDUCE_BWD, 0, "moe.unpermute", b->dy, G_MAXUINT, G_MAXUINT, g0,
               G_MAXUINT);
    moe_hop_all_to_all(c, "moe.all-to-all-combine-rail", FALSE, h, g0, g0r);
    if (moe_overlap(c))
        moe_shared_bwd_fc2(c, b);
    moe_join(c);
    guint g1 = moe_buf(c, "moe.combine.forwarded.grad", node * h),
          g1r = moe_buf(c, "moe.combine.send.grad", node * h);
    moe_hop_op(c, SIMPAR_OP_MOE_HOP_REDUCE_BWD, 1, "moe.forward", g0r, G_MAXUINT, G_MAXUINT, g1,
               G_MAXUINT);
    moe_hop_all_to_all(c, "moe.all-to-all-combine-node", TRUE, h, g1, g1r);
    moe_join(c);
    guint dz2 = moe_buf(c, "experts.fc2.y.grad", c->E * c->C * h * c->etp),
          dsc = moe_buf(c, "experts.scores.grad", c->E * c->C * c->etp);
    moe_hop_op(c, SIMPAR_OP_MOE_HOP_REDUCE_BWD, 2, "moe.unsort", g1r, b->sc, b->z2, dz2, dsc);
    guint dxs = moe_experts_backward(c, b, dz2);
    guint d2 = moe_buf(c, "moe.dispatch.forwarded.grad", node * w),
          d2r = moe_buf(c, "moe.dispatch.forward.grad", node * w);
    moe_hop_op(c, SIMPAR_OP_MOE_HOP_BWD, 2, "moe.sort", dxs, dsc, G_MAXUINT, d2, G_MAXUINT);
    moe_hop_all_to_all(c, "moe.all-to-all-dispatch-node", TRUE, w, d2, d2r);
    guint sdx, dx = moe_shared_bwd_overlap(c, b, &sdx);
    guint d1 = moe_buf(c, "moe.dispatch.recv.grad", rail * w),
          d1r = moe_buf(c, "moe.dispatch.send.grad", rail * w);
    moe_hop_op(c, SIMPAR_OP_MOE_HOP_BWD, 1, "moe.forward", d2r, G_MAXUINT, G_MAXUINT, d1,
               G_MAXUINT);
    moe_hop_all_to_all(c, "moe.all-to-all-dispatch-rail", FALSE, w, d1, d1r);
    moe_join(c);
    moe_hop_op(c, SIMPAR_OP_MOE_HOP_BWD, 0, "moe.permute", d1r, G_MAXUINT, G_MAXUINT, dx, dscores);
    moe_shared_bwd_sum(c, b, dx, sdx);
}

/* The forward's ops from the buffer `from` to the end of what `fwd` makes, again (moe: the
 * whole block; shared_experts: theirs). */
static void
moe_recompute(MoeCtx *c, MoeBufs *b, guint from, void (*fwd)(MoeCtx *c, MoeBufs *b), guint to)
{
    c->recomputing = TRUE;
    c->n_replayed = from;
    fwd(c, b);
    g_assert(c->n_replayed == to);
    c->recomputing = FALSE;
}

/* The flat dispatcher's backward in --overlap-moe-expert-parallel-comm's nodes: combine (the
 * unpermutation's backward, the all-to-all), mlp (expert-TP's gather, sort, the experts'
 * backward, unsort, its reduce-scatter), dispatch (the all-to-all), pre-dispatch (the
 * permutation's backward, the router's, the shared experts'). */
static void
moe_bwd_combine(MoeCtx *c, MoeBufs *b)
{
    guint64 blocks = c->E * c->C * c->h;
    b->dback = moe_buf(c, "moe.combine.recv.grad", blocks);
    b->dscores = moe_buf(c, "router.scores.grad", c->T * c->route.top_k);
    moe_route_op(c, SIMPAR_OP_MOE_COMBINE_BWD, "moe.unpermute", b->dy, b->scores, b->back, b->dback,
                 b->dscores);
    b->drecv = moe_buf(c, "moe.combine.send.grad", blocks);
    moe_all_to_all(c, "moe.all-to-all-combine", b->dback, b->drecv);
    if (moe_overlap(c))
        moe_shared_bwd_fc2(c, b);
    moe_join(c);
}

static void
moe_bwd_mlp(MoeCtx *c, MoeBufs *b)
{
    guint64 blocks = c->E * c->C * c->h;
    guint drecv =
        moe_etp_gather(c, "moe.combine.gathered.grad", "moe.all-gather-combine", b->drecv);
    guint dz2 = moe_buf(c, "experts.fc2.y.grad", blocks * c->etp);
    moe_route_op(c, SIMPAR_OP_MOE_SORT, "moe.sort", drecv, G_MAXUINT, G_MAXUINT, dz2, G_MAXUINT);
    guint dxs = moe_experts_backward(c, b, dz2);
    guint dxu = moe_buf(c, c->etp > 1 ? "moe.dispatch.partial.grad" : "moe.dispatch.recv.grad",
                        blocks * c->etp);
    moe_route_op(c, SIMPAR_OP_MOE_UNSORT, "moe.unsort", dxs, G_MAXUINT, G_MAXUINT, dxu, G_MAXUINT);
    b->dxu = moe_etp_scatter(c, "moe.dispatch.recv.grad", "moe.reduce-scatter-dispatch", dxu);
}

static void
moe_bwd_dispatch(MoeCtx *c, MoeBufs *b)
{
    b->dsend = moe_buf(c, "moe.dispatch.send.grad", c->E * c->C * c->h);
    moe_all_to_all(c, "moe.all-to-all-dispatch", b->dxu, b->dsend);
}

/* The router's backward from the scores' gradient, and without the overlap the shared
 * experts'. */
static void
moe_bwd_router(MoeCtx *c, MoeBufs *b)
{
    guint64 T = c->T, h = c->h, E = c->E;
    guint dlogits = moe_buf(c, "router.logits.grad", T * E);
    moe_route_op(c, SIMPAR_OP_MOE_GATE_BWD, "router.gate", b->logits, b->dscores, G_MAXUINT,
                 dlogits, G_MAXUINT);
    moe_gemm(c, "router.gemm-dw", 1,
             &(SimparGemm){.m = h,
                           .n = E,
                           .k = T,
                           .trans_a = TRUE,
                           .a = {b->x, 0},
                           .b = {dlogits, 0},
                           .c = {b->dwr, 0}});
    moe_gemm(c, "router.gemm-dx", 1,
             &(SimparGemm){.m = T,
                           .n = h,
                           .k = E,
                           .trans_b = TRUE,
                           .accumulate = TRUE,
                           .a = {dlogits, 0},
                           .b = {b->wr, 0},
                           .c = {b->dx, 0}});
    if (c->fs > 0 && !moe_overlap(c)) {
        if (c->recompute & SIMPAR_RECOMPUTE_SHARED_EXPERTS)
            moe_recompute(c, b, c->shared_mark, moe_shared_fwd, c->shared_mark + 3);
        moe_shared_bwd_fc2(c, b);
        moe_shared_bwd_fc1(c, b, b->dx, TRUE);
    }
}

static void
moe_bwd_pre(MoeCtx *c, MoeBufs *b)
{
    guint sdx, dx = moe_shared_bwd_overlap(c, b, &sdx);
    moe_route_op(c, SIMPAR_OP_MOE_DISPATCH_BWD, "moe.permute", b->dsend, G_MAXUINT, G_MAXUINT, dx,
                 G_MAXUINT);
    moe_shared_bwd_sum(c, b, dx, sdx);
    moe_bwd_router(c, b);
}

/* Its backward: dy all-gathered (the reduce-scatter's backward), the rows' and the probs'
 * gradients, the experts' backward, the gathered tokens' gradients summed back per token and
 * reduce-scattered with the probs' (the all-gathers' backward) into dx and the router's. */
static void
moe_backward_gather(MoeCtx *c, MoeBufs *b)
{
    guint64 T = c->T, h = c->h, n = c->route.gather;
    guint dyg = moe_tp_ep(c, SIMPAR_COLL_ALL_GATHER, "moe.combine.gathered.grad",
                          "moe.all-gather-combine", T * h, b->dy, G_MAXUINT);
    guint dz2 = moe_buf(c, "experts.fc2.y.grad", c->El * n * c->C * h);
    b->dscores = moe_buf(c, "router.scores.grad", T * c->E);
    guint dprobs = n > 1 ? moe_buf(c, "moe.dispatch.probs.grad", n * T * c->E) : b->dscores;
    moe_gathered_op(c, SIMPAR_OP_MOE_COMBINE_BWD, "moe.unpermute", dyg, b->probs, b->z2, dz2,
                    dprobs);
    guint dxs = moe_experts_backward(c, b, dz2);
    guint dxg = n > 1 ? moe_buf(c, "moe.dispatch.gathered.grad", n * T * h) : b->dx;
    moe_gathered_op(c, SIMPAR_OP_MOE_DISPATCH_BWD, "moe.permute", dxs, G_MAXUINT, G_MAXUINT, dxg,
                    G_MAXUINT);
    moe_tp_ep(c, SIMPAR_COLL_REDUCE_SCATTER, NULL, "moe.reduce-scatter-dispatch", T * h, dxg,
              b->dx);
    moe_tp_ep(c, SIMPAR_COLL_REDUCE_SCATTER, NULL, "moe.reduce-scatter-probs", T * c->E, dprobs,
              b->dscores);
    moe_bwd_router(c, b);
}

static void
moe_backward(MoeCtx *c, MoeBufs *b)
{
    if (c->recompute & SIMPAR_RECOMPUTE_MOE) /* the whole block, its all-to-alls too */
        moe_recompute(c, b, 0, moe_forward, c->fwd_bufs->len);
    if (c->route.gather > 0) {
        moe_backward_gather(c, b);
        return;
    }
    if (c->route.node_ranks > 0) { /* DeepEP's hops */
        b->dscores = moe_buf(c, "router.scores.grad", c->T * c->route.top_k);
        moe_backward_hops(c, b, b->dscores);
        moe_bwd_router(c, b);
        return;
    }
    moe_bwd_combine(c, b);
    moe_bwd_mlp(c, b);
    moe_bwd_dispatch(c, b);
    moe_bwd_pre(c, b);
}

/* The routing every rank of the block shares; capacity from the model or the routing. */
guint
simpar_moe_capacity(const SimparModel *model, guint tokens)
{
    const SimparMoeConfig *e = &model->moe;
    double mean = (double) tokens * e->top_k / e->experts;
    double c = ceil(mean * (e->capacity > 0 ? e->capacity : MAX(e->imbalance, 1.0)) - 1e-9);
    return (guint) MAX(c, 1.0);
}

double
simpar_moe_expert_params(const SimparModel *m, gint64 ep, gint64 etp)
{
    const SimparMoeConfig *e = &m->moe;
    double w = m->mlp == SIMPAR_MLP_SWIGLU ? 3 : 2, h = (double) m->hidden;
    return (double) (e->experts / MAX(ep, 1)) * w * h * (double) (e->moe_ffn / MAX(etp, 1));
}

double
simpar_moe_rank_params(const SimparModel *m, gint64 ep, gint64 etp)
{
    const SimparMoeConfig *e = &m->moe;
    double w = m->mlp == SIMPAR_MLP_SWIGLU ? 3 : 2, h = (double) m->hidden;
    return h * (double) e->experts + w * h * (double) e->shared_ffn +
           simpar_moe_expert_params(m, ep, etp);
}

double
simpar_moe_active_params(const SimparModel *m)
{
    const SimparMoeConfig *e = &m->moe;
    double w = m->mlp == SIMPAR_MLP_SWIGLU ? 3 : 2, h = (double) m->hidden;
    return h * (double) e->experts +
           w * h * ((double) e->shared_ffn + (double) e->top_k * e->moe_ffn);
}

/* The routing of `sources` ranks' tokens (EP x ETP: each rank routes its own) over ep. */
static SimparMoe
moe_route_capacity(const SimparModel *m, guint ep, guint sources, guint tokens, guint64 seed,
                   guint capacity)
{
    const SimparMoeConfig *e = &m->moe;
    SimparMoe r = {.tokens = tokens,
                   .hidden = m->hidden,
                   .experts = e->experts,
                   .top_k = e->top_k,
                   .ep = ep,
                   .groups = e->groups,
                   .group_limit = e->group_limit,
                   .router = e->router,
                   .seed = seed};
    if (capacity > 0 || e->capacity > 0) {
        r.capacity = capacity > 0 ? capacity : simpar_moe_capacity(m, tokens);
        return r;
    }
    for (guint p = 0; p < sources; p++) {
        r.ep_rank = p / (sources / ep), r.token0 = (guint64) p * tokens;
        r.capacity = MAX(r.capacity, simpar_moe_max_load(&r));
    }
    r.ep_rank = 0, r.token0 = 0;
    return r;
}

static SimparMoe
moe_route_init(const SimparModel *m, guint ep, guint etp, guint node_ranks, guint tokens,
               guint64 seed, guint capacity, gboolean gather)
{
    SimparMoe r = moe_route_capacity(m, ep, ep * etp, tokens, seed, capacity);
    r.node_ranks = node_ranks;
    r.gather = gather ? ep * etp : 0;
    r.etp = etp > 1 ? etp : 0; /* SORT's sources; 0 keeps ETP 1's ops as they were */
    if (node_ranks > 0)
        simpar_moe_hop_capacity(&r);
    return r;
}

/* DeepEP's groups over its G ranks (ep x etp, rank e etp + t; axis "ep", or "tp_ep" with
 * expert tensor parallelism as Megatron-Core names the group): rails[l] the ranks of local
 * index l of every node, nodes[n] node n's. */
static void
moe_hop_groups(SimparSchedule *sched, guint G, guint etp, guint R, guint *rails, guint *nodes)
{
    const char *axis = etp > 1 ? "tp_ep" : "ep";
    g_autofree guint *members = g_new(guint, MAX(G / R, R));
    for (guint l = 0; l < R; l++) {
        for (guint n = 0; n < G / R; n++)
            members[n] = n * R + l;
        rails[l] = simpar_schedule_add_group(sched, axis, members, G / R);
    }
    for (guint n = 0; n < G / R; n++) {
        for (guint l = 0; l < R; l++)
            members[l] = n * R + l;
        nodes[n] = simpar_schedule_add_group(sched, axis, members, R);
    }
}

/* Expert tensor parallelism's groups over the ep x etp ranks (rank e etp + t, Megatron-Core's
 * expert numbering, train.h): ep_groups[t] the EP ranks of expert-TP index t, etp_groups[e] the
 * expert-TP group of EP rank e, *all every rank (the router's and shared experts' sums; the
 * all-gather dispatcher's TP x EP group, axis "tp_ep" as Megatron-Core names it, with `gather`).
 */
static void
moe_etp_groups(SimparSchedule *sched, guint ep, guint etp, gboolean gather, guint *ep_groups,
               guint *etp_groups, guint *all)
{
    g_autofree guint *members = g_new(guint, ep * etp);
    for (guint t = 0; t < etp; t++) {
        for (guint e = 0; e < ep; e++)
            members[e] = e * etp + t;
        ep_groups[t] = simpar_schedule_add_group(sched, "ep", members, ep);
    }
    for (guint e = 0; e < ep; e++) {
        for (guint t = 0; t < etp; t++)
            members[t] = e * etp + t;
        etp_groups[e] = simpar_schedule_add_group(sched, "etp", members, etp);
    }
    for (guint r = 0; r < ep * etp; r++)
        members[r] = r;
    *all = simpar_schedule_add_group(sched, gather ? "tp_ep" : "moe", members, ep * etp);
}

static gboolean
moe_block_check(const SimparModel *model, guint ep, guint etp, guint node_ranks, GError **error)
{
    if (!simpar_model_is_moe(model) || model->moe.experts % ep != 0) {
        g_set_error(error, SIMPAR_MODEL_ERROR, SIMPAR_MODEL_ERROR_INVALID,
                    "--experts %" G_GINT64_FORMAT " is not divisible by --ep %u: every rank of "
                    "the expert-parallel group holds E/EP whole experts",
                    model->moe.experts, ep);
        return FALSE;
    }
    if (model->moe.moe_ffn % etp != 0) {
        g_set_error(error, SIMPAR_MODEL_ERROR, SIMPAR_MODEL_ERROR_INVALID,
                    "--etp %u: the experts' FFN width %" G_GINT64_FORMAT " must split into ETP "
                    "column slices (valid: --etp a divisor of --moe-ffn)",
                    etp, model->moe.moe_ffn);
        return FALSE;
    }
    if (node_ranks > 0 && (ep * etp) % node_ranks != 0) {
        g_set_error(error, SIMPAR_MODEL_ERROR, SIMPAR_MODEL_ERROR_INVALID,
                    "--moe-dispatcher deepep: the expert-parallel group (--ep %u x --etp %u) must "
                    "span whole nodes of %u ranks (valid: --ep x --etp a multiple of the node's "
                    "ranks, or --moe-dispatcher alltoall)",
                    ep, etp, node_ranks);
        return FALSE;
    }
    return TRUE;
}

/* --overlap-moe-expert-parallel-comm on one MoE block, two micro-batches (the second's tensors
 * "mb1."-prefixed, the same weights): F0 alone, then F1 merged with B0 in the order of Megatron-
 * Core's TransformerLayerSchedulePlan.run (model_chunk_schedule_plan.py; models/step-overlap.c),
 * the all-to-alls on the communication stream, each micro-batch's ops waiting for its own
 * all-to-all as the nodes wait for their micro-batch's event; then B1 alone. */
static void
moe_pair_rank(MoeCtx *c0)
{
    MoeCtx c1 = *c0;
    MoeBufs b0 = {0}, b1 = {0};
    c1.prefix = "mb1.";
    moe_params(c0, &b0, NULL);
    moe_params(&c1, &b1, &b0);
    c0->phase = SIMPAR_PHASE_FORWARD;
    moe_forward(c0, &b0);
    c0->phase = SIMPAR_PHASE_BACKWARD;
    moe_bwd_combine(c0, &b0); /* comm: B combine | compute: F pre */
    moe_fwd_pre(&c1, &b1);
    moe_bwd_mlp(c0, &b0); /* compute: B mlp | comm: F dispatch, B dispatch */
    moe_fwd_dispatch(&c1, &b1);
    moe_bwd_dispatch(c0, &b0);
    moe_fwd_mlp(&c1, &b1); /* compute: F mlp | comm: F combine */
    moe_fwd_combine(&c1, &b1);
    moe_bwd_pre(c0, &b0); /* compute: B pre */
    c1.phase = SIMPAR_PHASE_BACKWARD;
    moe_backward(&c1, &b1);
}

static SimparSchedule *
moe_build(const SimparModel *model, guint ep, guint etp, guint node_ranks, guint tokens,
          guint64 seed, guint capacity, gboolean pair, gboolean gather, guint recompute,
          GError **error)
{
    g_return_val_if_fail(model != NULL && ep > 0 && etp > 0 && tokens > 0, NULL);
    g_return_val_if_fail(error == NULL || *error == NULL, NULL);
    g_return_val_if_fail(!pair || (node_ranks == 0 && !model->moe.shared_overlap), NULL);
    /* the merged pair recomputes nothing of the block (predict-config.c refuses it) */
    g_return_val_if_fail(!pair || recompute == 0, NULL);
    /* Megatron-Core runs neither overlap with the all-gather dispatcher (transformer_config.py;
     * simpar_train_validate refuses them) */
    g_return_val_if_fail(!gather || (!pair && node_ranks == 0 && !model->moe.shared_overlap), NULL);
    if (!moe_block_check(model, ep, etp, node_ranks, error))
        return NULL;
    guint R = node_ranks, n = ep * etp;
    g_autoptr(SimparSchedule) sched = simpar_schedule_new(n, model->dtype);
    g_autofree guint *ep_groups = g_new(guint, etp), *etp_groups = g_new(guint, ep);
    guint all;
    if (etp > 1) {
        moe_etp_groups(sched, ep, etp, gather, ep_groups, etp_groups, &all);
    } else { /* one group, as ETP 1 has always numbered it */
        g_autofree guint *members = g_new(guint, ep);
        for (guint p = 0; p < ep; p++)
            members[p] = p;
        all = ep_groups[0] = simpar_schedule_add_group(sched, "ep", members, ep);
    }
    g_autofree guint *rails = g_new(guint, MAX(R, 1u)), *nodes = g_new(guint, MAX(n, 1u));
    if (R > 0)
        moe_hop_groups(sched, n, etp, R, rails, nodes);
    gboolean swiglu = model->mlp == SIMPAR_MLP_SWIGLU;
    MoeCtx c = {.sched = sched,
                .model = model,
                .route = moe_route_init(model, ep, etp, R, tokens, seed, capacity, gather),
                .etp = etp,
                .sum_group = all,
                .rails = rails,
                .nodes = nodes,
                .prefix = "",
                .recompute = recompute};
    c.T = tokens, c.h = model->hidden, c.E = model->moe.experts, c.El = c.E / ep;
    c.C = c.route.capacity, c.fe = model->moe.moe_ffn / etp, c.fc1e = swiglu ? 2 * c.fe : c.fe;
    c.fs = model->moe.shared_ffn, c.fc1s = swiglu ? 2 * c.fs : c.fs;
    c.comm = model->moe.shared_overlap && c.fs > 0 ? simpar_schedule_add_stream(sched, "comm")
                                                   : G_MAXUINT;
    c.rows = (guint64) n * c.C;
    c.a2a = pair ? simpar_schedule_add_stream(sched, "comm") : 0;
    for (guint p = 0; p < n; p++) {
        MoeBufs b = {0};
        c.last = c.wait = G_MAXUINT, c.join = FALSE;
        c.rank = p, c.route.ep_rank = p / etp, c.route.token0 = (guint64) p * tokens;
        c.route.etp_rank = p % etp;
        c.etp_rank = p % etp, c.ep_group = ep_groups[p % etp], c.etp_group = etp_groups[p / etp];
        if (pair) {
            moe_pair_rank(&c);
            continue;
        }
        moe_params(&c, &b, NULL);
        if (recompute & (SIMPAR_RECOMPUTE_MOE | SIMPAR_RECOMPUTE_SHARED_EXPERTS))
            c.fwd_bufs = g_array_new(FALSE, FALSE, sizeof(guint));
        c.phase = SIMPAR_PHASE_FORWARD;
        moe_forward(&c, &b);
        c.phase = SIMPAR_PHASE_BACKWARD;
        moe_backward(&c, &b);
        g_clear_pointer(&c.fwd_bufs, g_array_unref);
    }
    return g_steal_pointer(&sched); /* (transfer full) */
}

SimparSchedule *
simpar_moe_block_build(const SimparModel *model, guint ep, guint etp, guint node_ranks,
                       guint tokens, guint64 seed, guint capacity, guint recompute, GError **error)
{
    return moe_build(model, ep, etp, node_ranks, tokens, seed, capacity, FALSE, FALSE, recompute,
                     error);
}

SimparSchedule *
simpar_moe_gather_block_build(const SimparModel *model, guint ep, guint etp, guint tokens,
                              guint64 seed, guint capacity, guint recompute, GError **error)
{
    return moe_build(model, ep, etp, 0, tokens, seed, capacity, FALSE, TRUE, recompute, error);
}

SimparSchedule *
simpar_moe_pair_build(const SimparModel *model, guint ep, guint etp, guint tokens, guint64 seed,
                      guint capacity, GError **error)
{
    return moe_build(model, ep, etp, 0, tokens, seed, capacity, TRUE, FALSE, 0, error);
}
