/* step-ops.c - the executable mode of the step builder (step.h, simpar_step_build_ops): the
 * ops of the layer and ends schedules copied onto every rank (see step-private.h). */
#include "ends.h"
#include "generators.h"
#include "schedule-private.h"
#include "step-private.h"
#include <string.h>

/* Steps larger than this are refused: the mode spells out every op of every micro-batch. */
#define STEP_OPS_MAX 1000000.0

/* What a buffer of a source schedule (layer or ends) becomes on the step's rank. */
typedef enum {
    BUF_FRESH,    /* a new buffer per instance */
    BUF_PARAM,    /* the rank's flat parameters, at the instance's base + off */
    BUF_GRAD,     /* the instance's gradient scratch, at off */
    BUF_RES,      /* the residual stream into level + delta */
    BUF_RES_GRAD, /* its gradient */
    BUF_TOKENS,
    BUF_TARGETS,
    BUF_LOSS,
} StepBufRole;

typedef struct {
    StepBufRole role;
    gsize off;   /* BUF_PARAM, BUF_GRAD */
    guint delta; /* BUF_RES, BUF_RES_GRAD: 1 for the layer's output y and input gradient dy */
} StepBufMap;

/* A source schedule and its buffers' roles on the tensor-parallel rank being emitted. */
typedef struct {
    const SimparSchedule *src;
    StepBufMap *map; /* per source buffer */
    gsize params;    /* parameters of one instance on this rank */
    guint *groups;   /* per (source group, d, p): the step's group, or G_MAXUINT */
} StepSource;

/* One layer of one micro-batch, or one end of one micro-batch, from forward to backward. */
typedef struct {
    StepSource *src;
    guint level, micro; /* residual level of its input; micro-batch of its replica */
    gsize base;         /* its parameters in the rank's flat buffers */
    guint64 seed;       /* its dropout seed */
    SimparView *bufs;   /* per source buffer: its place on the step's rank */
    guint *ops;         /* per source op: the copy, or G_MAXUINT */
    guint scratch;      /* its gradients, added into the flat gradients after its backward */
    char *prefix;       /* of its fresh buffers' names */
} StepInst;

typedef struct _StepOps {
    StepSource layer, ends;
    GHashTable *insts; /* instance key -> StepInst */
    guint *res;        /* per (level, micro, grad): residual buffers of the rank, or G_MAXUINT */
    guint *io;         /* per (micro, tokens/targets) */
    guint loss;
    GHashTable *sent; /* buffer -> 1 + the send that reads it */
    gsize res_elems;  /* the largest residual block on the rank */
    double scale;     /* of the cross-entropy: 1 / tokens of the global batch */
} StepOps;

/* Executable ZeRO-3 shards each layer's and each end's parameters in S equal pieces, and
 * reduces gradients once after the last micro-batch (as FSDP does with pipelining). */
static gboolean
step_ops_zero3_supported(const SimparModel *model, const SimparTrain *tr,
                         const SimparSchedule *layer, GError **error)
{
    guint S = simpar_train_shard_group(tr);
    if (S <= 1)
        return TRUE;
    if (tr->pp == 1 && tr->micro_batches > 1) {
        g_set_error(error, SIMPAR_PLAN_ERROR, SIMPAR_PLAN_ERROR_INVALID,
                    "--zero 3 with --pp 1 reduce-scatters the gradients of every micro-batch, "
                    "which an executable step would need a separate shard accumulator for; run "
                    "it with --pp 2 or more, or one micro-batch (--global-batch)");
        return FALSE;
    }
    g_autofree SimparRankFacts *facts = simpar_schedule_rank_facts(layer);
    gsize lp = facts[0].layer_params;
    gsize end = (gsize) ((model->vocab + tr->tp.tp - 1) / tr->tp.tp * model->hidden);
    if (lp % S != 0 || end % S != 0) {
        g_set_error(
            error, SIMPAR_PLAN_ERROR, SIMPAR_PLAN_ERROR_INVALID,
            "--zero 3 over %u replicas: an executable step shards each layer's %" G_GSIZE_FORMAT
            " and each end's %" G_GSIZE_FORMAT " parameters (per tensor-parallel rank) "
            "in equal pieces, and %u divides %s; choose another --hidden, --dp or "
            "--shard-group",
            S, lp, end, S, lp % S != 0 ? "not the layer's" : "not the end's");
        return FALSE;
    }
    return TRUE;
}

gboolean
step_ops_supported(const SimparModel *model, const SimparTrain *tr, const SimparSchedule *layer,
                   GError **error)
{
    const char *flag = NULL;
    if (tr->schedule == SIMPAR_PIPE_LOCAL)
        flag = "--local-chunks (local parallelism)";
    else if (tr->zero == 2)
        flag = "--zero 2";
    else if (tr->overlap_param_gather)
        flag = "--overlap-param-gather";
    else if (tr->tied_embeddings)
        flag = "--tied-embeddings";
    else if (tr->grad_dtype_set && tr->grad_dtype != model->dtype)
        flag = "--grad-reduce-dtype";
    else if (simpar_plan_cp(&tr->tp) > 1)
        flag = "--cp";
    else if (simpar_model_is_moe(model))
        flag = "--experts (MoE layers)";
    else if (model->mtp_layers > 0)
        flag = "--mtp-layers (multi-token prediction)";
    if (flag != NULL) {
        g_set_error(error, SIMPAR_PLAN_ERROR, SIMPAR_PLAN_ERROR_INVALID,
                    "%s is modelled from timed blocks only; an executable step has ZeRO 0, 1 or "
                    "3, untied embeddings, gradients in the model's dtype, dense layers without "
                    "multi-token prediction and a pipeline schedule (gpipe, 1f1b, interleaved)",
                    flag);
        return FALSE;
    }
    if (!simpar_generator_has(tr->tp.gen, SIMPAR_GEN_LINE)) {
        g_autofree char *line = simpar_generator_list(SIMPAR_GEN_LINE, SIMPAR_GEN_LABEL, "or");
        g_autofree char *grids = simpar_generator_list(SIMPAR_GEN_GRID, SIMPAR_GEN_LABEL, "and");
        g_set_error(error, SIMPAR_PLAN_ERROR, SIMPAR_PLAN_ERROR_INVALID,
                    "--tp-mode %s: an executable step needs %s tensor parallelism (with or "
                    "without --sp); the ends of %s layers are timed, not spelled out as ops "
                    "(their blocks are not contiguous rows)",
                    tr->tp.gen->name, line, grids);
        return FALSE;
    }
    if (tr->zero == 3 && !step_ops_zero3_supported(model, tr, layer, error))
        return FALSE;
    if (model->vocab % tr->tp.tp != 0) {
        g_set_error(error, SIMPAR_PLAN_ERROR, SIMPAR_PLAN_ERROR_INVALID,
                    "--vocab %" G_GINT64_FORMAT
                    " is not divisible by the tensor-parallel size %" G_GINT64_FORMAT
                    "; an executable step needs equal vocabulary slices",
                    model->vocab, tr->tp.tp);
        return FALSE;
    }
    /* every layer of every micro-batch of every replica, on its stage's T GPUs */
    double ops = (double) simpar_schedule_n_ops(layer) * (double) tr->dp *
                 (double) tr->micro_batches * (double) model->layers;
    if (ops > STEP_OPS_MAX) {
        g_set_error(error, SIMPAR_PLAN_ERROR, SIMPAR_PLAN_ERROR_INVALID,
                    "an executable step of this size has %.3g ops, more than %g; use fewer "
                    "--layers, --dp or micro-batches (--global-batch)",
                    ops, STEP_OPS_MAX);
        return FALSE;
    }
    return TRUE;
}

/* ----- buffer roles ----- */

static const struct {
    const char *tensor;
    StepBufRole role;
    guint delta;
} step_ops_named[] = {
    {"x", BUF_RES, 0},         {"y", BUF_RES, 1},
    {"dx", BUF_RES_GRAD, 0},   {"dy", BUF_RES_GRAD, 1},
    {"embed.y", BUF_RES, 0},   {"embed.dy", BUF_RES_GRAD, 0},
    {"head.x", BUF_RES, 0},    {"head.dx", BUF_RES_GRAD, 0},
    {"tokens", BUF_TOKENS, 0}, {"targets", BUF_TARGETS, 0},
    {"loss", BUF_LOSS, 0},
};

static gboolean
step_ops_is_grad(const char *tensor)
{
    return g_str_has_suffix(tensor, ".grad");
}

/* The roles of the source's buffers on tensor-parallel rank t. Parameters are laid out in the
 * order their shards appear (whole buffers; `one_block`: every buffer its own block at 0, as
 * the ends' table and output weight are), each gradient at its parameter's place. */
static void
step_ops_source_roles(StepSource *so, guint t, gboolean one_block)
{
    guint n_bufs = simpar_schedule_n_buffers(so->src), n;
    const SimparShard *sh = simpar_schedule_shards(so->src, &n);
    memset(so->map, 0, n_bufs * sizeof(StepBufMap)); /* BUF_FRESH */
    so->params = 0;
    for (guint i = 0; i < n; i++) {
        if (sh[i].rank != t)
            continue;
        StepBufMap *m = &so->map[sh[i].view.buf];
        gboolean named = FALSE;
        for (guint k = 0; k < G_N_ELEMENTS(step_ops_named); k++)
            if (g_str_equal(sh[i].tensor, step_ops_named[k].tensor)) {
                *m = (StepBufMap){step_ops_named[k].role, 0, step_ops_named[k].delta};
                named = TRUE;
            }
        if (named || step_ops_is_grad(sh[i].tensor) || m->role == BUF_PARAM)
            continue;
        gsize elems = simpar_schedule_buffer(so->src, sh[i].view.buf)->elems;
        *m = (StepBufMap){BUF_PARAM, one_block ? 0 : so->params, 0};
        so->params = one_block ? MAX(so->params, elems) : so->params + elems;
    }
    for (guint i = 0; i < n; i++) {
        if (sh[i].rank != t || !step_ops_is_grad(sh[i].tensor))
            continue;
        g_autofree char *param = g_strndup(sh[i].tensor, strlen(sh[i].tensor) - strlen(".grad"));
        const SimparShard *p = simpar_schedule_find_shard(so->src, t, param);
        g_assert(p != NULL && p->view.off == sh[i].view.off);
        so->map[sh[i].view.buf] = (StepBufMap){BUF_GRAD, so->map[p->view.buf].off, 0};
    }
}

static void
step_ops_source_init(StepSource *so, const SimparSchedule *src, const Step *st)
{
    so->src = src;
    so->map = g_new0(StepBufMap, simpar_schedule_n_buffers(src));
    gsize n = (gsize) simpar_schedule_n_groups(src) * st->D * st->P;
    so->groups = g_new(guint, n);
    for (gsize i = 0; i < n; i++)
        so->groups[i] = G_MAXUINT;
}

void
step_ops_init(Step *st)
{
    StepOps *o = st->ops = g_new0(StepOps, 1);
    g_autoptr(SimparSchedule) ends = simpar_ends_build(st->model, &st->tr->tp, st->layer, 0,
                                                       SIMPAR_ENDS_EMBED | SIMPAR_ENDS_HEAD);
    step_ops_source_init(&o->layer, st->layer, st);
    step_ops_source_init(&o->ends, g_steal_pointer(&ends), st);
    o->insts = g_hash_table_new(g_direct_hash, g_direct_equal);
    o->sent = g_hash_table_new(g_direct_hash, g_direct_equal);
    guint levels = (guint) st->model->layers + 1;
    o->res = g_new(guint, (gsize) levels * st->m * 2);
    o->io = g_new(guint, (gsize) st->m * 2);
    o->scale = 1.0 / ((double) st->D * st->m * st->model->micro_batch * st->model->seq);
}

void
step_ops_free(Step *st)
{
    StepOps *o = st->ops;
    g_assert(g_hash_table_size(o->insts) == 0); /* every instance ran its backward */
    g_hash_table_unref(o->insts);
    g_hash_table_unref(o->sent);
    simpar_schedule_free((SimparSchedule *) o->ends.src);
    g_free(o->layer.map), g_free(o->layer.groups);
    g_free(o->ends.map), g_free(o->ends.groups);
    g_free(o->res), g_free(o->io);
    g_clear_pointer(&st->ops, g_free);
}

/* ----- the rank's own buffers and shards ----- */

static void
step_ops_shard(Step *st, const char *tensor, SimparShardRole role, SimparView v, guint64 row0,
               guint64 rows, guint64 col0, guint64 cols)
{
    SimparShard sh = {g_intern_string(tensor), role, st->rank, v, row0, rows, col0, cols, 0};
    simpar_schedule_add_shard(st->s, &sh);
}

/* A parameter shard (rows x cols, row-major at v) as far as it lies in [lo, hi) of its buffer,
 * in up to three contiguous pieces: a partial first row, whole rows, a partial last row. */
static void
step_ops_shard_range(Step *st, const char *tensor, SimparShardRole role, SimparView v, guint64 row0,
                     guint64 rows, guint64 col0, guint64 cols, gsize lo, gsize hi)
{
    gsize e0 = MAX(v.off, lo), e1 = MIN(v.off + rows * cols, hi);
    if (e0 >= e1)
        return;
    e0 -= v.off, e1 -= v.off;
    guint64 r = e0 / cols, c = e0 % cols, r1 = e1 / cols, c1 = e1 % cols;
    if (r == r1) {
        step_ops_shard(st, tensor, role, (SimparView){v.buf, v.off + e0}, row0 + r, 1, col0 + c,
                       c1 - c);
        return;
    }
    if (c > 0) {
        step_ops_shard(st, tensor, role, (SimparView){v.buf, v.off + e0}, row0 + r, 1, col0 + c,
                       cols - c);
        r++;
    }
    if (r1 > r)
        step_ops_shard(st, tensor, role, (SimparView){v.buf, v.off + r * cols}, row0 + r, r1 - r,
                       col0, cols);
    if (c1 > 0)
        step_ops_shard(st, tensor, role, (SimparView){v.buf, v.off + r1 * cols}, row0 + r1, 1, col0,
                       c1);
}

/* A parameter's input and output shards within the region [off, off + count): under
 * executable ZeRO-3 only the rank's own piece (the rest is gathered when used, and stale after
 * Adam), else all of it. */
static void
step_ops_param_pair(Step *st, const char *tensor, SimparView v, const SimparShard *sh, gsize off,
                    gsize count)
{
    gsize lo, hi;
    step_owned(st, off, count, &lo, &hi);
    step_ops_shard_range(st, tensor, SIMPAR_SHARD_INPUT, v, sh->row0, sh->rows, sh->col0, sh->cols,
                         lo, hi);
    step_ops_shard_range(st, tensor, SIMPAR_SHARD_OUTPUT, v, sh->row0, sh->rows, sh->col0, sh->cols,
                         lo, hi);
}

/* Whether the gradient buffer ends the step holding every summed gradient: not under ZeRO,
 * whose reduce-scatter leaves each rank its shard. */
static gboolean
step_ops_grads_whole(const Step *st)
{
    return st->tr->zero == 0 || st->DR == 1;
}

/* The parameter shards of one source instance at flat offset `base`, named prefix + tensor:
 * the parameter (input, and output once Adam has run) and its summed gradient (output). */
static void
step_ops_param_shards(Step *st, StepSource *so, gsize base, const char *prefix)
{
    guint n;
    const SimparShard *sh = simpar_schedule_shards(so->src, &n);
    for (guint i = 0; i < n; i++) {
        const StepBufMap *m = &so->map[sh[i].view.buf];
        if (sh[i].rank != st->t || (m->role != BUF_PARAM && m->role != BUF_GRAD) ||
            (m->role == BUF_GRAD && !step_ops_grads_whole(st)))
            continue;
        g_autofree char *name = g_strconcat(prefix, sh[i].tensor, NULL);
        guint buf = m->role == BUF_PARAM ? st->params : st->grads;
        SimparView v = {buf, base + m->off + sh[i].view.off};
        if (m->role == BUF_PARAM)
            step_ops_param_pair(st, name, v, &sh[i], base, so->params);
        else
            step_ops_shard(st, name, SIMPAR_SHARD_OUTPUT, v, sh[i].row0, sh[i].rows, sh[i].col0,
                           sh[i].cols);
    }
}

static gsize
step_ops_res_elems(const StepSource *so, guint t)
{
    gsize elems = 0;
    for (guint b = 0; b < simpar_schedule_n_buffers(so->src); b++) {
        const SimparBuffer *buf = simpar_schedule_buffer(so->src, b);
        if (buf->rank == t && (so->map[b].role == BUF_RES || so->map[b].role == BUF_RES_GRAD))
            elems = MAX(elems, buf->elems);
    }
    return elems;
}

void
step_ops_rank(Step *st)
{
    StepOps *o = st->ops;
    guint levels = (guint) st->model->layers + 1,
          rows = (guint) (st->model->micro_batch * st->model->seq);
    step_ops_source_roles(&o->layer, st->t, FALSE);
    step_ops_source_roles(&o->ends, st->t, TRUE);
    g_assert(o->layer.params == st->facts.layer_params);
    for (gsize i = 0; i < (gsize) levels * st->m * 2; i++)
        o->res[i] = G_MAXUINT;
    for (guint i = 0; i < st->m * 2; i++)
        o->io[i] = G_MAXUINT;
    o->loss = G_MAXUINT;
    g_hash_table_remove_all(o->sent);
    o->res_elems = MAX(step_ops_res_elems(&o->layer, st->t), step_ops_res_elems(&o->ends, st->t));
    for (guint c = 0; c < st->v; c++) {
        guint vs = c * st->P + st->p, lc = simpar_train_stage_layers(st->tr, vs);
        for (guint k = 0; k < lc; k++) {
            guint l = simpar_train_stage_first_layer(st->tr, vs) + k;
            g_autofree char *prefix = g_strdup_printf("layers.%u.", l);
            step_ops_param_shards(st, &o->layer, st->layer_off[c] + (lc - 1 - k) * o->layer.params,
                                  prefix);
        }
    }
    /* the ends: their shards carry their own names; each sits at its own offset */
    guint n;
    const SimparShard *sh = simpar_schedule_shards(o->ends.src, &n);
    for (guint i = 0; i < n; i++) {
        const StepBufMap *m = &o->ends.map[sh[i].view.buf];
        gboolean embed = g_str_has_prefix(sh[i].tensor, "embedding.");
        if (sh[i].rank != st->t || (m->role != BUF_PARAM && m->role != BUF_GRAD) ||
            (embed ? st->p != 0 : st->p + 1 != st->P) ||
            (m->role == BUF_GRAD && !step_ops_grads_whole(st)))
            continue;
        gsize region = embed ? st->embed_off : st->head_off;
        SimparView v = {m->role == BUF_PARAM ? st->params : st->grads, region + sh[i].view.off};
        if (m->role == BUF_PARAM)
            step_ops_param_pair(st, sh[i].tensor, v, &sh[i], region, st->ends);
        else
            step_ops_shard(st, sh[i].tensor, SIMPAR_SHARD_OUTPUT, v, sh[i].row0, sh[i].rows,
                           sh[i].col0, sh[i].cols);
    }
    /* tokens on the first stage, targets and the loss on the last */
    for (guint j = 0; j < st->m; j++)
        for (guint k = 0; k < 2; k++) {
            if (k == 0 ? st->p != 0 : st->p + 1 != st->P)
                continue;
            g_autofree char *name = g_strdup_printf("%s.m%u", k ? "targets" : "tokens", j);
            o->io[j * 2 + k] = simpar_schedule_add_buffer(st->s, st->rank, name, rows);
            step_ops_shard(st, k ? "targets" : "tokens", SIMPAR_SHARD_INPUT,
                           (SimparView){o->io[j * 2 + k], 0}, ((guint64) st->d * st->m + j) * rows,
                           rows, 0, 1);
        }
    if (st->p + 1 == st->P) {
        o->loss = simpar_schedule_add_buffer(st->s, st->rank, "loss", 1);
        step_ops_shard(st, "loss", SIMPAR_SHARD_OUTPUT, (SimparView){o->loss, 0}, st->d, 1, 0, 1);
    }
}

guint
step_ops_res(Step *st, guint level, guint j, gboolean grad)
{
    StepOps *o = st->ops;
    guint *b = &o->res[((gsize) level * st->m + j) * 2 + (grad ? 1 : 0)];
    if (*b == G_MAXUINT) {
        g_autofree char *name = g_strdup_printf("%s.%u.m%u", grad ? "res-grad" : "res", level, j);
        *b = simpar_schedule_add_buffer(st->s, st->rank, name, o->res_elems);
    }
    return *b;
}

void
step_ops_sent(Step *st, guint buf, guint send)
{
    g_hash_table_insert(st->ops->sent, GUINT_TO_POINTER(buf), GUINT_TO_POINTER(send + 1));
}

void
step_ops_after_sends(Step *st, guint to)
{
    SimparAccess acc[SIMPAR_MAX_ACCESSES];
    guint na = simpar_op_accesses(st->s, simpar_schedule_op(st->s, to), acc);
    for (guint a = 0; a < na; a++) {
        guint send =
            GPOINTER_TO_UINT(g_hash_table_lookup(st->ops->sent, GUINT_TO_POINTER(acc[a].buf)));
        if (acc[a].write && send != 0)
            simpar_schedule_add_dep(st->s, to, send - 1);
    }
}

/* ----- copying ops ----- */

static StepInst *
step_ops_inst(Step *st, StepSource *so, guint key, guint level, guint j, gsize base, guint64 seed,
              const char *prefix)
{
    StepOps *o = st->ops;
    StepInst *in = g_hash_table_lookup(o->insts, GUINT_TO_POINTER(key + 1));
    if (in != NULL)
        return in;
    in = g_new0(StepInst, 1);
    in->src = so;
    in->level = level, in->micro = j, in->base = base, in->seed = seed;
    guint n_bufs = simpar_schedule_n_buffers(so->src), n_ops = simpar_schedule_n_ops(so->src);
    in->bufs = g_new(SimparView, n_bufs);
    for (guint b = 0; b < n_bufs; b++)
        in->bufs[b] = SIMPAR_NO_VIEW;
    in->ops = g_new(guint, n_ops);
    for (guint i = 0; i < n_ops; i++)
        in->ops[i] = G_MAXUINT;
    g_autofree char *scratch = g_strdup_printf("%sgrads", prefix);
    in->scratch = simpar_schedule_add_buffer(st->s, st->rank, scratch, so->params);
    in->prefix = g_strdup(prefix);
    g_hash_table_insert(o->insts, GUINT_TO_POINTER(key + 1), in);
    return in;
}

static void
step_ops_inst_free(Step *st, guint key, StepInst *in)
{
    g_hash_table_remove(st->ops->insts, GUINT_TO_POINTER(key + 1));
    g_free(in->bufs), g_free(in->ops), g_free(in->prefix);
    g_free(in);
}

/* Where source buffer `b` (of the rank being copied) lives on the step's rank. */
static SimparView
step_ops_place(Step *st, StepInst *in, guint b)
{
    if (in->bufs[b].buf != G_MAXUINT)
        return in->bufs[b];
    StepOps *o = st->ops;
    const SimparBuffer *buf = simpar_schedule_buffer(in->src->src, b);
    const StepBufMap *m = &in->src->map[b];
    SimparView v = {0, 0};
    switch (m->role) {
    case BUF_PARAM:
        v = (SimparView){st->params, in->base + m->off};
        break;
    case BUF_GRAD:
        v = (SimparView){in->scratch, m->off};
        break;
    case BUF_RES:
    case BUF_RES_GRAD:
        g_assert(buf->elems <= o->res_elems);
        v.buf = step_ops_res(st, in->level + m->delta, in->micro, m->role == BUF_RES_GRAD);
        break;
    case BUF_TOKENS:
    case BUF_TARGETS:
        v.buf = o->io[in->micro * 2 + (m->role == BUF_TARGETS ? 1 : 0)];
        g_assert(v.buf != G_MAXUINT);
        break;
    case BUF_LOSS:
        v.buf = o->loss;
        break;
    default: {
        g_autofree char *name = g_strconcat(in->prefix, buf->name, NULL);
        v.buf = simpar_schedule_add_buffer(st->s, st->rank, name, buf->elems);
    }
    }
    return in->bufs[b] = v;
}

/* The step's copy of a group of the source, for this rank's replica and stage. */
static guint
step_ops_group(Step *st, StepSource *so, guint g)
{
    guint *slot = &so->groups[((gsize) g * st->D + st->d) * st->P + st->p];
    if (*slot == G_MAXUINT) {
        const SimparGroup *grp = simpar_schedule_group(so->src, g);
        const guint *members = simpar_schedule_group_ranks(so->src, g);
        g_autofree guint *ranks = g_new(guint, grp->size);
        for (guint k = 0; k < grp->size; k++)
            ranks[k] = simpar_train_rank(st->tr, members[k], st->d, st->p);
        *slot = simpar_schedule_add_group(st->s, grp->axis, ranks, grp->size);
    }
    return *slot;
}

static guint
step_ops_stream(Step *st, StepSource *so, guint stream)
{
    const char *name = simpar_schedule_stream_name(so->src, stream);
    for (guint i = 0; i < simpar_schedule_n_streams(st->s); i++)
        if (g_str_equal(simpar_schedule_stream_name(st->s, i), name))
            return i;
    g_return_val_if_reached(STEP_COMPUTE);
}

/* Copies the ops of tensor-parallel rank t that `want` selects onto the step's rank, in
 * program order. The first copied op of each stream other than compute waits for the rank's
 * last compute op (what produced the instance's inputs); `last` gets the last copy per
 * stream. */
static void
step_ops_copy(Step *st, StepInst *in, gboolean (*want)(const SimparOp *op, gconstpointer data),
              gconstpointer data, guint last[STEP_N_STREAMS])
{
    const SimparSchedule *src = in->src->src;
    guint n;
    const guint *list = simpar_schedule_rank_ops(src, st->t, &n);
    for (guint s = 0; s < STEP_N_STREAMS; s++)
        last[s] = G_MAXUINT;
    guint entry = st->last_compute;
    for (guint i = 0; i < n; i++) {
        const SimparOp *from = simpar_schedule_op(src, list[i]);
        if (!want(from, data))
            continue;
        SimparOp op = *from;
        op.rank = st->rank;
        op.stream = step_ops_stream(st, in->src, from->stream);
        SimparView *views[SIMPAR_MAX_VIEWS];
        SimparAccess acc[SIMPAR_MAX_ACCESSES];
        guint nv = simpar_op_view_fields(&op, views), na = simpar_op_accesses(src, from, acc);
        for (guint k = 0; k < nv; k++) {
            gboolean used = FALSE; /* a field the kind reads or writes */
            for (guint a = 0; a < na; a++)
                used |= acc[a].buf == views[k]->buf && acc[a].off == views[k]->off;
            if (!used) {
                *views[k] = SIMPAR_NO_VIEW;
                continue;
            }
            SimparView at = step_ops_place(st, in, views[k]->buf);
            *views[k] = (SimparView){at.buf, at.off + views[k]->off};
        }
        if (op.kind == SIMPAR_OP_COLLECTIVE)
            op.u.coll.group = step_ops_group(st, in->src, from->u.coll.group);
        else if (op.kind == SIMPAR_OP_DROPOUT || op.kind == SIMPAR_OP_DROPOUT_BWD)
            op.u.kern.seed = in->seed;
        else if (op.kind == SIMPAR_OP_ATTENTION || op.kind == SIMPAR_OP_ATTENTION_BWD)
            op.u.attn.seed = in->seed;
        else if (op.kind == SIMPAR_OP_XENT_LOSS || op.kind == SIMPAR_OP_XENT_BWD)
            op.u.vocab.scale = st->ops->scale;
        op.dep_first = op.n_deps = 0;
        guint to = simpar_schedule_add_op(st->s, &op);
        in->ops[list[i]] = to;
        const guint *deps = simpar_schedule_deps(src, from);
        for (guint k = 0; k < from->n_deps; k++) {
            g_assert(in->ops[deps[k]] != G_MAXUINT); /* forward ops are copied first */
            simpar_schedule_add_dep(st->s, to, in->ops[deps[k]]);
        }
        if (op.stream != STEP_COMPUTE && last[op.stream] == G_MAXUINT && entry != G_MAXUINT)
            simpar_schedule_add_dep(st->s, to, entry);
        step_ops_after_sends(st, to);
        last[op.stream] = to;
        if (op.stream == STEP_COMPUTE)
            st->last_compute = to;
    }
}

/* After an instance's backward: its gradients join the rank's (gradient accumulation). The
 * add waits for every stream the backward used. */
static void
step_ops_accumulate(Step *st, StepInst *in, const guint last[STEP_N_STREAMS])
{
    gsize n = in->src->params;
    SimparOp op = {.kind = SIMPAR_OP_ADD,
                   .rank = st->rank,
                   .stream = STEP_COMPUTE,
                   .phase = SIMPAR_PHASE_BACKWARD,
                   .name = g_intern_static_string("grads.accumulate"),
                   .u.kern = {.rows = 1,
                              .cols = (guint) n,
                              .in = {{st->grads, in->base}, {in->scratch, 0}},
                              .out = {{st->grads, in->base}}}};
    guint a = simpar_schedule_add_op(st->s, &op);
    for (guint s = 0; s < STEP_N_STREAMS; s++)
        if (last[s] != G_MAXUINT && s != STEP_COMPUTE)
            simpar_schedule_add_dep(st->s, a, last[s]);
    st->last_compute = a;
}

static gboolean
step_ops_want_phase(const SimparOp *op, gconstpointer data)
{
    return op->phase == *(const SimparPhase *) data;
}

static gboolean
step_ops_want_segment(const SimparOp *op, gconstpointer data)
{
    return g_str_has_prefix(op->name, data) && op->name[strlen(data)] == '.';
}

static void
step_ops_finish(Step *st, guint key, StepInst *in, gboolean backward,
                const guint last[STEP_N_STREAMS])
{
    if (!backward)
        return;
    step_ops_accumulate(st, in, last);
    step_ops_inst_free(st, key, in);
}

void
step_ops_layer(Step *st, guint chunk, guint k, guint j, gboolean backward)
{
    StepOps *o = st->ops;
    guint vs = chunk * st->P + st->p, lc = simpar_train_stage_layers(st->tr, vs);
    guint l = simpar_train_stage_first_layer(st->tr, vs) + k;
    guint key = (l * st->m + j) * 2;
    gsize base = st->layer_off[chunk] + (lc - 1 - k) * o->layer.params;
    guint64 seed = simpar_train_dropout_seed(st->tr->tp.seed, l, (guint64) st->d * st->m + j);
    g_autofree char *prefix = g_strdup_printf("layers.%u.m%u.", l, j);
    StepInst *in = step_ops_inst(st, &o->layer, key, l, j, base, seed, prefix);
    SimparPhase phase = backward ? SIMPAR_PHASE_BACKWARD : SIMPAR_PHASE_FORWARD;
    guint last[STEP_N_STREAMS];
    step_ops_copy(st, in, step_ops_want_phase, &phase, last);
    step_ops_finish(st, key, in, backward, last);
}

void
step_ops_end(Step *st, const char *end, guint j, gboolean backward)
{
    StepOps *o = st->ops;
    gboolean embed = g_str_equal(end, "embed");
    guint levels = (guint) st->model->layers + 1;
    guint key = ((levels * st->m) + j) * 2 + (embed ? 0 : 1); /* after every layer's keys */
    g_autofree char *prefix = g_strdup_printf("%s.m%u.", end, j);
    StepInst *in = step_ops_inst(st, &o->ends, key, embed ? 0 : levels - 1, j,
                                 embed ? st->embed_off : st->head_off, 0, prefix);
    g_autofree char *segment = g_strdup_printf("%s.%s", end, backward ? "bwd" : "fwd");
    guint last[STEP_N_STREAMS];
    step_ops_copy(st, in, step_ops_want_segment, segment, last);
    step_ops_finish(st, key, in, backward, last);
}
