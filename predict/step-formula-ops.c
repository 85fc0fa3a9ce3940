/* step-formula-ops.c - one evaluation of the formula mode: the ops of its chains in
 * models/step.c's program order, their order of evaluation, and the breakdown's walk of the rank
 * that ends last (see step-formula-private.h). */
#include "pipeline.h"
#include "step-formula-private.h"
#include <math.h>
#include <string.h>

static FormulaOp *
formula_op(const Formula *f, guint i)
{
    return &g_array_index(f->ops, FormulaOp, i);
}

/* formula_run's array `slot` of n guints (the cache's, between evaluations). */
static guint *
formula_buf(Formula *f, FormulaBuf slot, gsize n)
{
    g_assert(n <= G_MAXUINT && f->buf[slot] == NULL);
    f->buf[slot] = simpar_predict_cache_scratch(f->cache, slot, sizeof(guint), (guint) n);
    g_array_set_size(f->buf[slot], (guint) n);
    return (guint *) (void *) f->buf[slot]->data;
}

/* ----- emission: models/step.c for rank (t, d, p) of the chain ----- */

static guint
formula_add(Formula *f, FormulaKind kind, guint stream, double a, double b, guint dep)
{
    guint i = f->n_ops++, s = (f->chain * f->P + f->p) * FORMULA_N_STREAMS + stream;
    if (i == f->ops->len) /* out of room: twice as much (the array is the cache's) */
        g_array_set_size(f->ops, MAX(2 * f->ops->len, 1024u));
    *formula_op(f, i) = (FormulaOp){.a = a,
                                    .b = b,
                                    .start = 0,
                                    .end = -1,
                                    .dep = dep,
                                    .partner = i,
                                    .next = FORMULA_NONE,
                                    .chain = f->chain,
                                    .stage = f->p,
                                    .kind = kind,
                                    .stream = stream};
    if (f->last[s] != FORMULA_NONE)
        formula_op(f, f->last[s])->next = i;
    f->last[s] = i;
    if (stream == FORMULA_COMPUTE)
        f->last_compute = i;
    else if (stream == FORMULA_DP)
        f->last_dp = i;
    return i;
}

/* Op i joins the ring of `first` (ops of one collective or message). */
static void
formula_join(Formula *f, guint first, guint i)
{
    formula_op(f, i)->partner = formula_op(f, first)->partner;
    formula_op(f, first)->partner = i;
}

static guint
formula_block(Formula *f, FormulaKey key, guint count, SimparPhase phase)
{
    guint i =
        formula_add(f, FORMULA_BLOCK, FORMULA_COMPUTE, count * f->c.block_s[key], 0, FORMULA_NONE);
    FormulaOp *op = formula_op(f, i);
    op->key = key, op->count = count, op->phase = phase;
    return i;
}

/* A collective of the rank on `axis`; with several chains, its group's members on them share
 * one ring: the k-th collective of a group on every member's stream. */
static guint
formula_coll(Formula *f, guint stream, SimparCollKind kind, gsize count, FormulaAxis axis,
             guint dep)
{
    guint n = formula_axis_size(f, axis);
    gboolean per_rank = kind == SIMPAR_COLL_ALL_GATHER || kind == SIMPAR_COLL_REDUCE_SCATTER;
    guint i = formula_add(f, FORMULA_COLL, stream, formula_coll_time(f, kind, count, axis), 0, dep);
    FormulaOp *op = formula_op(f, i);
    op->axis = axis, op->bytes = (double) (per_rank ? count * n : count) * f->c.dsize;
    gboolean stages = axis == FORMULA_AXIS_EMBED || (axis == FORMULA_AXIS_STATS && f->P > 1);
    if (f->n_chains == 1 && !stages)
        return i; /* the other members run alike */
    guint first;
    guint group =
        axis == FORMULA_AXIS_EDP
            ? formula_edp_group(f, simpar_train_rank(f->tr, f->t, f->d, f->p), f->p, &first)
        : axis == FORMULA_AXIS_DP || axis == FORMULA_AXIS_OPT_DP ? f->t * f->P + f->p
        : axis == FORMULA_AXIS_TP                                ? f->d * f->P + f->p
        : axis == FORMULA_AXIS_STATS && f->c.zero >= 1           ? f->t
                                                       : f->chain; /* its stages in the chain */
    guint64 key = ((guint64) axis << 60) | ((guint64) group << 32) | f->seq[axis]++;
    gpointer head;
    if (g_hash_table_lookup_extended(f->ring, &key, NULL, &head))
        formula_join(f, GPOINTER_TO_UINT(head), i);
    else
        g_hash_table_insert(f->ring, g_memdup2(&key, sizeof key), GUINT_TO_POINTER(i));
    return i;
}

/* A send or recv of the message crossing virtual-stage boundary `k` (between k and k + 1) in
 * direction `dir` (0: activation forward, 1: gradient back), in one ring with its other end. */
static void
formula_p2p(Formula *f, FormulaKind kind, guint stream, guint k, guint micro, guint dir, guint dep)
{
    guint at = f->chain * f->P + k % f->P;
    const SimparRoute *r = dir == 0 ? &f->fwd[at] : &f->bwd[at];
    gsize msg = f->c.sg ? f->facts[f->t].act_elems / f->T : f->facts[f->t].act_elems;
    double bytes = (double) msg * f->c.dsize;
    guint i = formula_add(f, kind, stream, r->lat_s, bytes / r->bw_Bps, dep);
    formula_op(f, i)->bytes = bytes;
    guint *other = &f->pending[((f->chain * f->m + micro) * f->n_vs + k) * 2 + dir];
    if (*other == FORMULA_NONE)
        *other = i;
    else
        formula_join(f, *other, i);
}

static void
formula_recv(Formula *f, guint k, guint micro, guint dir)
{
    formula_p2p(f, FORMULA_RECV, FORMULA_COMPUTE, k, micro, dir, FORMULA_NONE);
    if (f->c.sg)
        formula_coll(f, FORMULA_COMPUTE, SIMPAR_COLL_ALL_GATHER, f->facts[f->t].act_elems / f->T,
                     FORMULA_AXIS_TP, FORMULA_NONE);
}

/* The ranks that reduce gradients of `kind` together: the replicas, or the experts' group. */
static guint
formula_reducers(const Formula *f, guint kind)
{
    return kind == FORMULA_GRADS_EXPERT ? (guint) f->c.DE : f->D;
}

/* One bucket's reduction: over the replicas, or the experts' over their group (an all-reduce,
 * or with ZeRO >= 1 a reduce-scatter: their optimizer is sharded over that group). */
static void
formula_reduce(Formula *f, guint kind, gsize count, guint dep)
{
    guint n = formula_reducers(f, kind);
    FormulaAxis axis = kind == FORMULA_GRADS_EXPERT ? FORMULA_AXIS_EDP : FORMULA_AXIS_DP;
    if (n == 1 || count == 0)
        return;
    if (f->c.zero == 0)
        formula_coll(f, FORMULA_DP, SIMPAR_COLL_ALL_REDUCE, count, axis, dep);
    else
        formula_coll(f, FORMULA_DP, SIMPAR_COLL_REDUCE_SCATTER, count / n, axis, dep);
}

static void
formula_bucket(Formula *f, guint kind, guint ready)
{
    gsize b[3] = {f->open[kind], ready, kind};
    g_array_append_vals(f->buckets, b, 3);
    f->open[kind] = 0;
}

/* Gradients of `kind` final after `ready` join its open bucket (ZeRO 0/1). */
static void
formula_ready(Formula *f, guint kind, gsize count, guint ready)
{
    if (formula_reducers(f, kind) == 1 || count == 0)
        return; /* nothing is reduced */
    f->open[kind] += count;
    if ((gint64) f->open[kind] >= f->c.bucket_params)
        formula_bucket(f, kind, ready);
}

static void
formula_end_grads(Formula *f, gboolean final)
{
    if (f->c.zero >= 2)
        formula_reduce(f, FORMULA_GRADS_DENSE, (gsize) f->c.ends, f->last_compute);
    else if (final)
        formula_ready(f, FORMULA_GRADS_DENSE, (gsize) f->c.ends, f->last_compute);
}

/* Layers of virtual stage `vs`: the chunks' common count, or the train's uneven split. */
static guint
formula_chunk_layers(const Formula *f, guint vs)
{
    return f->lc > 0 ? f->lc : simpar_train_stage_layers(f->tr, vs);
}

gboolean
formula_dense(const Formula *f, guint vs, guint l)
{
    return f->dense_facts != NULL &&
           !simpar_model_layer_is_moe(f->model, simpar_train_stage_first_layer(f->tr, vs) + l);
}

static guint
formula_n_dense(const Formula *f, guint vs, guint from, guint to)
{
    if (f->dense_facts == NULL)
        return 0;
    gint64 first = simpar_train_stage_first_layer(f->tr, vs);
    return to - from - (guint) simpar_model_moe_layers(f->model, first + from, first + to);
}

/* One layer's parameters of the rank: an MoE layer's but its experts', its experts', a dense
 * layer's (an MoE model's; no experts). */
static gsize
formula_lp(const Formula *f)
{
    return f->facts[f->t].layer_params - f->facts[f->t].expert_params;
}

static gsize
formula_le(const Formula *f)
{
    return f->facts[f->t].expert_params;
}

static gsize
formula_lpd(const Formula *f)
{
    return f->dense_facts != NULL ? f->dense_facts[f->t].layer_params : 0;
}

guint
formula_layer_runs_of(const Formula *f, guint vs)
{
    guint lc = formula_chunk_layers(f, vs), runs = lc > 0;
    for (guint l = 1; l < lc && f->dense_facts != NULL; l++)
        runs += formula_dense(f, vs, l) != formula_dense(f, vs, l - 1);
    return runs;
}

/* A chunk's layers forward or backward, a block per run of layers of one kind in the order
 * they run (one block but for an MoE model's dense layers). */
static void
formula_layer_runs(Formula *f, guint vs, gboolean backward)
{
    guint lc = formula_chunk_layers(f, vs);
    SimparPhase ph = backward ? SIMPAR_PHASE_BACKWARD : SIMPAR_PHASE_FORWARD;
    for (guint k = 0, run; k < lc; k += run) {
        gboolean dense = formula_dense(f, vs, backward ? lc - 1 - k : k);
        for (run = 1; k + run < lc; run++)
            if (formula_dense(f, vs, backward ? lc - 1 - k - run : k + run) != dense)
                break;
        FormulaKey key = dense ? (backward ? FORMULA_DENSE_BWD : FORMULA_DENSE_FWD)
                               : (backward ? FORMULA_LAYER_BWD : FORMULA_LAYER_FWD);
        formula_block(f, key, run, ph);
    }
}

static void
formula_forward(Formula *f, const SimparPipeItem *it)
{
    guint vs = it->chunk * f->P + f->p, lc = formula_chunk_layers(f, vs);
    if (vs > 0)
        formula_recv(f, vs - 1, it->micro, 0);
    else
        formula_block(f, FORMULA_EMBED_FWD, 1, SIMPAR_PHASE_FORWARD);
    if (f->c.fp8 != SIMPAR_FP8_NONE && it->micro == 0) { /* models/step.c's step_fp8_cast */
        guint dense = formula_n_dense(f, vs, 0, lc);
        if (lc > dense)
            formula_block(f, FORMULA_FP8_CAST, lc - dense, SIMPAR_PHASE_FORWARD);
        if (dense > 0)
            formula_block(f, FORMULA_DENSE_FP8_CAST, dense, SIMPAR_PHASE_FORWARD);
    }
    formula_layer_runs(f, vs, FALSE);
    if (vs + 1 < f->n_vs)
        formula_p2p(f, FORMULA_SEND, FORMULA_SEND_FWD, vs, it->micro, 0, f->last_compute);
    else
        formula_block(f, FORMULA_HEAD_FWD, 1, SIMPAR_PHASE_FORWARD);
}

/* The routed experts' gradients of the rank (its MoE layers' experts). */
static gsize
formula_expert_grads(const Formula *f)
{
    gsize n = 0;
    for (guint c = 0; c < f->v; c++) {
        guint vs = c * f->P + f->p, lc = formula_chunk_layers(f, vs);
        n += (lc - formula_n_dense(f, vs, 0, lc)) * formula_le(f);
    }
    return n;
}

/* Whether the rank reduces any gradients (models/step.c's step_reduces). */
static gboolean
formula_reduces(const Formula *f)
{
    return f->D > 1 || (f->c.DE > 1 && formula_expert_grads(f) > 0);
}

/* A chunk's layers backward: a block per run, or one per layer where ZeRO-2 reduces each or the
 * buckets need to know when each is final; each layer's gradients of both kinds. */
static void
formula_layers_bwd(Formula *f, guint vs, gboolean final)
{
    gboolean zero2 = f->c.zero == 2;
    guint lc = formula_chunk_layers(f, vs);
    if (!zero2 && !(final && formula_reduces(f))) {
        formula_layer_runs(f, vs, TRUE);
        return;
    }
    for (guint k = 0; k < lc; k++) {
        gboolean dense = formula_dense(f, vs, lc - 1 - k);
        guint b = formula_block(f, dense ? FORMULA_DENSE_BWD : FORMULA_LAYER_BWD, 1,
                                SIMPAR_PHASE_BACKWARD);
        gsize lp = dense ? formula_lpd(f) : formula_lp(f), le = dense ? 0 : formula_le(f);
        if (zero2) {
            formula_reduce(f, FORMULA_GRADS_DENSE, lp, b);
            formula_reduce(f, FORMULA_GRADS_EXPERT, le, b);
        } else {
            formula_ready(f, FORMULA_GRADS_DENSE, lp, b);
            formula_ready(f, FORMULA_GRADS_EXPERT, le, b);
        }
    }
}

static void
formula_backward(Formula *f, const SimparPipeItem *it)
{
    guint vs = it->chunk * f->P + f->p;
    gboolean final = it->micro + 1 == f->m;
    if (vs + 1 == f->n_vs) {
        formula_block(f, FORMULA_HEAD_BWD, 1, SIMPAR_PHASE_BACKWARD);
        formula_end_grads(f, final);
    } else {
        formula_recv(f, vs, it->micro, 1);
    }
    formula_layers_bwd(f, vs, final);
    if (vs == 0) {
        formula_block(f, FORMULA_EMBED_BWD, 1, SIMPAR_PHASE_BACKWARD);
        formula_end_grads(f, final);
    } else {
        formula_p2p(f, FORMULA_SEND, FORMULA_SEND_BWD, vs - 1, it->micro, 1, f->last_compute);
    }
    for (guint kind = 0; final && f->c.zero < 2 && kind < 2; kind++)
        if (f->open[kind] > 0) /* buckets do not span chunks */
            formula_bucket(f, kind, f->last_compute);
}

/* The rank's gradients: its layers, the output layer on the last stage (unless tied to the
 * embedding of a single stage), the embedding on the first. */
static gsize
formula_grads(const Formula *f)
{
    gsize n = 0, ends = (gsize) f->c.ends;
    for (guint c = 0; c < f->v; c++) {
        guint vs = c * f->P + f->p, lc = formula_chunk_layers(f, vs);
        guint dense = formula_n_dense(f, vs, 0, lc);
        n += (lc - dense) * f->facts[f->t].layer_params + dense * formula_lpd(f);
    }
    if (f->p + 1 == f->P && !(f->c.tied && f->P == 1))
        n += ends;
    return f->p == 0 ? n + ends : n;
}

/* models/step.c's step_scalars: Megatron's tensor-parallel block and its gradient statistics'
 * all-reduces, or PyTorch's over the shard group (formula: the replicas). */
static void
formula_scalars(Formula *f)
{
    guint n = (guint) f->c.n_scalars;
    if (n == 0)
        return;
    gboolean megatron = f->c.scalars == SIMPAR_SCALARS_MEGATRON;
    if (megatron && f->T > 1) {
        guint i = formula_add(f, FORMULA_BLOCK, FORMULA_COMPUTE, n * f->c.block_s[FORMULA_TP_STATS],
                              0, f->last_dp);
        FormulaOp *op = formula_op(f, i);
        op->key = FORMULA_TP_STATS, op->count = n, op->phase = SIMPAR_PHASE_BACKWARD;
    }
    if (megatron && !formula_stats_group(f))
        return;
    gsize count = simpar_step_scalar_count((SimparDtype) f->c.dtype, 4);
    for (guint k = 0; k < n; k++) /* fp16's inf/nan flag, then the norm */
        formula_coll(f, FORMULA_COMPUTE, SIMPAR_COLL_ALL_REDUCE, count,
                     megatron ? FORMULA_AXIS_STATS : FORMULA_AXIS_OPT_DP, f->last_dp);
}

static void
formula_optimizer(Formula *f)
{
    guint end_bwd = f->last_compute;
    for (guint k = 0; k < f->buckets->len; k += 3) {
        const gsize *b = &g_array_index(f->buckets, gsize, k);
        formula_reduce(f, (guint) b[2], b[0], f->c.overlap ? (guint) b[1] : end_bwd);
    }
    g_array_set_size(f->buckets, 0);
    if (f->c.tied && f->P > 1 && (f->p == 0 || f->p + 1 == f->P))
        formula_coll(f, FORMULA_COMPUTE, SIMPAR_COLL_ALL_REDUCE, (gsize) f->c.ends,
                     FORMULA_AXIS_EMBED, FORMULA_NONE);
    formula_scalars(f);
    /* ZeRO >= 1: the experts' optimizer sharded over their group, after the rest */
    gsize ne = formula_expert_grads(f), nd = formula_grads(f);
    gboolean apart = f->c.zero >= 1 && ne > 0;
    nd -= apart ? ne : 0;
    gsize count = f->c.zero >= 1 ? nd / f->D : nd;
    guint adam =
        formula_add(f, FORMULA_ADAM, FORMULA_COMPUTE, formula_adam_time(f, count), 0, f->last_dp);
    guint eadam = apart ? formula_add(f, FORMULA_ADAM, FORMULA_COMPUTE,
                                      formula_adam_time(f, ne / (gsize) f->c.DE), 0, f->last_dp)
                        : FORMULA_NONE;
    if (f->c.scalars == SIMPAR_SCALARS_MEGATRON && f->p + 1 == f->P && f->D > 1)
        formula_coll(f, FORMULA_COMPUTE, SIMPAR_COLL_ALL_REDUCE,
                     simpar_step_scalar_count((SimparDtype) f->c.dtype, 8), FORMULA_AXIS_OPT_DP,
                     FORMULA_NONE); /* models/step.c's step_loss */
    if (apart && f->c.DE > 1 && (f->c.zero == 1 || f->c.zero == 2))
        formula_coll(f, FORMULA_DP, SIMPAR_COLL_ALL_GATHER,
                     (gsize) llround((double) (ne / (gsize) f->c.DE) * f->c.pg8), FORMULA_AXIS_EDP,
                     eadam);
    if (f->D > 1 && (f->c.zero == 1 || f->c.zero == 2)) {
        /* the layers' share of the rank's parameters gathered in FP8, the ends' in bf16, as
         * models/step.c counts them */
        gsize n = nd, ends = (gsize) f->c.ends;
        ends = (f->p == 0 ? ends : 0) + (f->p + 1 == f->P ? ends : 0);
        double layers = n > ends ? (double) (n - ends) / n : 0;
        gsize wire = (gsize) llround((double) count * (1 - layers * (1 - f->c.pg8)));
        formula_coll(f, FORMULA_DP, SIMPAR_COLL_ALL_GATHER, wire, FORMULA_AXIS_DP, adam);
    }
}

static void
formula_stage(Formula *f, guint chain, guint p, const GArray *order)
{
    f->chain = chain, f->p = p;
    f->t = f->n_chains == 1 ? 0 : chain % f->T, f->d = f->n_chains == 1 ? 0 : chain / f->T;
    f->last_compute = f->last_dp = FORMULA_NONE;
    f->open[FORMULA_GRADS_DENSE] = f->open[FORMULA_GRADS_EXPERT] = 0;
    memset(f->seq, 0, sizeof f->seq);
    formula_add(f, FORMULA_ZERO, FORMULA_COMPUTE, formula_zero_time(f, formula_grads(f)), 0,
                FORMULA_NONE); /* models/step.c's step_zero_grad */
    guint *first =
        f->item_first != NULL ? f->item_first + (chain * f->P + p) * (order->len + 1) : NULL;
    for (guint i = 0; i < order->len; i++) {
        const SimparPipeItem *it = &g_array_index(order, SimparPipeItem, i);
        if (first != NULL)
            first[i] = f->n_ops;
        if (it->backward)
            formula_backward(f, it);
        else
            formula_forward(f, it);
    }
    if (first != NULL)
        first[order->len] = f->n_ops;
    formula_optimizer(f);
}

/* ----- evaluation: the ops in an order where all that one waits for comes first ----- */

typedef struct {
    Formula *f;
    guint *waiting;    /* per op: its stream predecessor and dep that have not ended */
    guint *dependents; /* per op, from first_dep[op] to first_dep[op + 1]: the ops it is dep of */
    guint *first_dep;
    guint *ready; /* ops whose stream predecessor and dep have ended, n_ready of them */
    guint n_ready;
} FormulaOrder;

/* Op j may start no earlier than `end`; it arrives once nothing else holds it back. */
static void
formula_hold(FormulaOrder *o, guint j, double end)
{
    FormulaOp *op = formula_op(o->f, j);
    op->start = MAX(op->start, end);
    if (--o->waiting[j] == 0)
        o->ready[o->n_ready++] = j;
}

/* Op i has ended: what comes after it on its stream and what depends on it may start. */
static void
formula_release(FormulaOrder *o, guint i)
{
    const FormulaOp *op = formula_op(o->f, i);
    if (op->next != FORMULA_NONE)
        formula_hold(o, op->next, op->end);
    for (guint k = o->first_dep[i]; k < o->first_dep[i + 1]; k++)
        formula_hold(o, o->dependents[k], op->end);
}

/* Op i has arrived at op->start: when every member of its ring has, they all end together,
 * (the last arrival + a) + b, as the analytic backend ends a collective or a message. */
static void
formula_arrive(FormulaOrder *o, guint i)
{
    FormulaOp *op = formula_op(o->f, i);
    if (op->end >= 0)
        return; /* ended with its ring */
    double start = op->start;
    for (guint j = op->partner; j != i; j = formula_op(o->f, j)->partner) {
        if (o->waiting[j] != 0)
            return; /* the last member's arrival ends the ring */
        start = MAX(start, formula_op(o->f, j)->start);
    }
    double end = start + op->a + op->b;
    guint j = i;
    do {
        formula_op(o->f, j)->end = end;
        formula_release(o, j);
        j = formula_op(o->f, j)->partner;
    } while (j != i);
}

/* Every op's span. Each op waits for its stream predecessor and at most one dep, so a count per
 * op and the ops' dependents (one array, by op) order them. */
void
formula_evaluate(Formula *f)
{
    guint n = f->ops->len;
    FormulaOrder o = {.f = f,
                      .waiting = formula_buf(f, FORMULA_BUF_WAITING, n),
                      .dependents = formula_buf(f, FORMULA_BUF_DEPENDENTS, n),
                      .first_dep = formula_buf(f, FORMULA_BUF_FIRST_DEP, n + 1)};
    o.ready = formula_buf(f, FORMULA_BUF_READY, n); /* each op is ready once */
    memset(o.waiting, 0, n * sizeof(guint));
    memset(o.first_dep, 0, (n + 1) * sizeof(guint));
    for (guint i = 0; i < n; i++) {
        const FormulaOp *op = formula_op(f, i);
        if (op->next != FORMULA_NONE)
            o.waiting[op->next]++;
        if (op->dep != FORMULA_NONE)
            o.waiting[i]++, o.first_dep[op->dep + 1]++;
    }
    for (guint i = 0; i < n; i++)
        o.first_dep[i + 1] += o.first_dep[i];
    guint *fill = formula_buf(f, FORMULA_BUF_FILL, n);
    memcpy(fill, o.first_dep, n * sizeof(guint));
    for (guint i = 0; i < n; i++) {
        guint dep = formula_op(f, i)->dep;
        if (dep != FORMULA_NONE)
            o.dependents[fill[dep]++] = i;
        if (o.waiting[i] == 0)
            o.ready[o.n_ready++] = i;
    }
    for (guint k = 0; k < o.n_ready; k++)
        formula_arrive(&o, o.ready[k]);
    for (guint i = 0; i < n; i++)
        if (formula_op(f, i)->end < 0)
            g_error("formula mode: op %u (chain %u, stage %u) never ends (a pairing bug)", i,
                    formula_op(f, i)->chain, formula_op(f, i)->stage);
}

/* ----- the breakdown: simpar_step_breakdown's walk of the rank that ends last ----- */

void
formula_charge(const Formula *f, const FormulaOp *op, double gap, double busy, double *fig)
{
    if ((op->kind == FORMULA_BLOCK && op->key == FORMULA_TP_STATS) ||
        (op->kind == FORMULA_COLL &&
         (op->axis == FORMULA_AXIS_STATS || op->axis == FORMULA_AXIS_OPT_DP))) {
        fig[FORMULA_OPTIMIZER] += busy; /* the optimizer's scalars wait for the reductions */
        fig[FORMULA_DP_EXPOSED] += gap;
        return;
    }
    switch (op->kind) {
    case FORMULA_BLOCK: {
        double c = MIN(op->count * f->c.block_c[op->key], busy);
        fig[FORMULA_COMPUTE_S] += c;
        gboolean dense = op->key == FORMULA_DENSE_FWD || op->key == FORMULA_DENSE_BWD;
        fig[dense ? FORMULA_DENSE_EXPOSED : FORMULA_TP_EXPOSED] += busy - c;
        fig[op->phase == SIMPAR_PHASE_FORWARD ? FORMULA_FORWARD : FORMULA_BACKWARD] += busy;
        if (op->key == FORMULA_LAYER_FWD || op->key == FORMULA_LAYER_BWD)
            fig[FORMULA_LAYER_BLOCKS] += op->count / 2.0;
        else if (dense)
            fig[FORMULA_DENSE_BLOCKS] += op->count / 2.0;
        else if (op->key == FORMULA_FP8_CAST || op->key == FORMULA_DENSE_FP8_CAST)
            fig[FORMULA_FP8_CAST_S] += busy;
        fig[FORMULA_OTHER] += gap; /* no block waits for a collective (no ZeRO-3) */
        break;
    }
    case FORMULA_RECV: {
        double xfer = MIN(op->a + op->b, busy);
        fig[FORMULA_P2P] += xfer;
        fig[FORMULA_BUBBLE] += busy - xfer + gap;
        break;
    }
    case FORMULA_COLL:
        fig[op->axis == FORMULA_AXIS_TP ? FORMULA_P2P : FORMULA_DP_EXPOSED] += busy;
        fig[FORMULA_OTHER] += gap;
        break;
    case FORMULA_ZERO:
        fig[FORMULA_OPTIMIZER] += busy;
        fig[FORMULA_OTHER] += gap;
        break;
    default: /* Adam */
        fig[FORMULA_OPTIMIZER] += busy;
        fig[FORMULA_DP_EXPOSED] += gap;
        break;
    }
}

void
formula_ends(const Formula *f, double *fig)
{
    double *end = fig + FORMULA_N_FIGURES;
    guint n_ends = f->n_chains * f->P, crit = 0;
    for (guint i = 0; i < f->ops->len; i++) {
        const FormulaOp *op = formula_op(f, i);
        guint at = op->chain * f->P + op->stage;
        end[at] = MAX(end[at], op->end);
    }
    for (guint k = 1; k < n_ends; k++) /* the last to end; the lowest rank of equals */
        if (end[k] > end[crit] || (end[k] == end[crit] && f->end_rank[k] < f->end_rank[crit]))
            crit = k;
    fig[FORMULA_CRIT] = crit;
    fig[FORMULA_STEP] = end[crit];
}

void
formula_walk(const Formula *f, guint from, double t, double *fig)
{
    guint crit = (guint) fig[FORMULA_CRIT];
    double step = fig[FORMULA_STEP];
    for (guint i = from; i < f->ops->len; i++) {
        const FormulaOp *op = formula_op(f, i);
        if (op->chain * f->P + op->stage != crit || op->end <= 0 || op->start >= step)
            continue;
        if (op->kind != FORMULA_BLOCK && op->kind != FORMULA_ADAM && op->kind != FORMULA_ZERO)
            fig[FORMULA_BYTES] += op->bytes;
        if (op->stream != FORMULA_COMPUTE)
            continue;
        formula_charge(f, op, MAX(op->start - t, 0.0), op->end - MAX(op->start, t), fig);
        t = MAX(t, op->end);
    }
    fig[FORMULA_DP_EXPOSED] += MAX(step - t, 0.0); /* parameter all-gathers after the update */
}

/* ----- the periodic regime ----- */

/* A stage's warm-up forwards (all of them under GPipe). */
static guint
formula_warmup(const Formula *f, guint p)
{
    return simpar_pipeline_warmup_grouped((SimparPipeSchedule) f->c.schedule, f->P, f->v, f->m,
                                          (guint) f->c.vp_group, p);
}

/* Whether unit j + c of every (chain, stage) repeats unit j, `shift` later, for j in [lo, hi):
 * the same ops (kind, stream, durations) ending shift later, within tol. A unit is a pair of
 * items (the forward and backward of one steady round: stride 2 from the warm-up's end), or
 * under GPipe one item of the forwards (part 0) or of the backwards (part 1). */
static gboolean
formula_units_repeat(const Formula *f, guint part, guint lo, guint hi, guint c, double tol)
{
    guint n = f->m * f->v;
    gboolean gpipe = f->c.schedule == SIMPAR_PIPE_GPIPE;
    guint stride = gpipe ? 1 : 2;
    double shift = NAN;
    for (guint s = 0; s < f->n_chains * f->P; s++) {
        const guint *first = f->item_first + s * (2 * n + 1);
        guint off = gpipe ? part * n : formula_warmup(f, s % f->P);
        for (guint j = lo; j < hi; j++) {
            guint a = first[off + stride * j], a_end = first[off + stride * (j + 1)];
            guint b = first[off + stride * (j + c)], b_end = first[off + stride * (j + c + 1)];
            if (a_end - a != b_end - b)
                return FALSE;
            for (guint k = 0; k < a_end - a; k++) {
                const FormulaOp *x = formula_op(f, a + k), *y = formula_op(f, b + k);
                if (x->kind != y->kind || x->stream != y->stream || x->a != y->a || x->b != y->b)
                    return FALSE;
                double d = y->end - x->end;
                if (isnan(shift))
                    shift = d;
                else if (fabs(d - shift) > tol)
                    return FALSE;
            }
        }
    }
    return TRUE;
}

/* Whether the evaluated step has reached its periodic regime: in each part that grows with m
 * (the steady rounds; under GPipe the forwards and the backwards), a window of 2 R units that
 * repeats one period (c = the table's period in items) later, R before the part's end. R = P v
 * + c units bounds how far an op's end reaches across the stages (a send ends when its
 * receiver, up to P v items on, takes it) and how far the tail (the cool-down, the final
 * micro-batch's reductions) reaches back. A max-plus system whose whole state (every op of R
 * consecutive units) moves by one shift in a period moves by it in every period after: a step
 * of more micro-batches is this one with periods inserted in each part, every op after them
 * later by their shifts. */
static gboolean
formula_periodic(const Formula *f, double tol)
{
    guint n = f->m * f->v, c = formula_period(f) * f->v, reach = f->P * f->v + c;
    gboolean gpipe = f->c.schedule == SIMPAR_PIPE_GPIPE;
    guint units = gpipe ? n : n - formula_warmup(f, 0); /* stage 0 warms up longest */
    if (units < 3 * reach + c)
        return FALSE;
    guint hi = units - reach - c;
    for (guint part = 0; part < (gpipe ? 2u : 1u); part++)
        if (!formula_units_repeat(f, part, hi - 2 * reach, hi, c, tol))
            return FALSE;
    return TRUE;
}

void
formula_emit(Formula *f, guint m, gboolean items)
{
    f->m = m, f->n_vs = f->P * f->v;
    guint n_streams = f->n_chains * f->P * FORMULA_N_STREAMS;
    gsize n_tags = (gsize) f->n_chains * m * f->n_vs * 2;
    gsize n_ops = (6 * (gsize) m + 8) * f->n_vs * f->n_chains;
    f->ops = f->buf[FORMULA_BUF_OPS] = simpar_predict_cache_scratch(
        f->cache, FORMULA_BUF_OPS, sizeof(FormulaOp), (guint) MIN(n_ops, G_MAXUINT / 2));
    g_array_set_size(f->ops, (guint) MIN(n_ops, G_MAXUINT / 2)); /* room; n_ops counts */
    f->n_ops = 0;
    f->last = formula_buf(f, FORMULA_BUF_LAST, n_streams);
    f->pending = formula_buf(f, FORMULA_BUF_PENDING, n_tags);
    memset(f->last, 0xff, n_streams * sizeof(guint)); /* FORMULA_NONE */
    memset(f->pending, 0xff, n_tags * sizeof(guint));
    f->ring = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, NULL);
    f->buckets = g_array_new(FALSE, FALSE, sizeof(gsize));
    if (items) /* where each item's ops begin, per (chain, stage) */
        f->item_first = formula_buf(f, FORMULA_BUF_ITEMS,
                                    (gsize) f->n_chains * f->P * (2 * (gsize) m * f->v + 1));
    for (guint p = 0; p < f->P; p++) {
        g_autoptr(GArray) order = simpar_pipeline_order_grouped(
            (SimparPipeSchedule) f->c.schedule, f->P, f->v, m, (guint) f->c.vp_group, p);
        for (guint chain = 0; chain < f->n_chains; chain++)
            formula_stage(f, chain, p, order);
    }
    g_array_set_size(f->ops, f->n_ops);
}

void
formula_done(Formula *f)
{
    for (guint i = 0; i < FORMULA_N_BUFS; i++)
        g_clear_pointer(&f->buf[i], g_array_unref);
    f->ops = NULL, f->last = f->pending = f->item_first = NULL;
    g_hash_table_unref(f->ring);
    g_array_unref(f->buckets);
}

void
formula_run(Formula *f, guint m, double *fig)
{
    formula_emit(f, m, f->lc == 0); /* uneven chunks: tell whether the step is periodic */
    formula_evaluate(f);
    formula_ends(f, fig);
    formula_walk(f, 0, 0, fig);
    if (f->lc == 0)
        fig[FORMULA_PERIODIC] = formula_periodic(f, FORMULA_AFFINE_TOL * fig[FORMULA_STEP]);
    formula_done(f);
}
