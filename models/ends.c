/* ends.c - the model's ends on one tensor-parallel group (see ends.h). */
#include "ends.h"
#include "generators.h"

typedef struct {
    SimparSchedule *s;
    guint rank, group, T;
    guint64 rows, h, width, slice, vocab0, act;
    guint64 share; /* rows * h / T: one rank's part of whole rows in the gathers and scatters */
    gboolean full_rows; /* the layer keeps whole rows on every rank (1-D without SP) */
    const char *segment;
    SimparShard res; /* the rank's block of the residual stream (the layer's "x") */
} Ends;

static guint
ends_add(Ends *e, SimparOp *op, SimparPhase phase, const char *what)
{
    op->rank = e->rank;
    op->phase = phase;
    g_autofree char *name = g_strdup_printf("%s.%s", e->segment, what);
    op->name = g_intern_string(name);
    return simpar_schedule_add_op(e->s, op);
}

static guint
ends_buf(Ends *e, const char *what, gsize elems)
{
    g_autofree char *name = g_strdup_printf("%s.%s", e->segment, what);
    return simpar_schedule_add_buffer(e->s, e->rank, name, MAX(elems, 1));
}

/* A shard of this rank: a block of a global tensor at the start of `buf`. */
static void
ends_shard(Ends *e, const char *tensor, SimparShardRole role, guint buf, guint64 row0, guint64 rows,
           guint64 col0, guint64 cols)
{
    SimparShard sh = {g_intern_string(tensor), role, e->rank, {buf, 0}, row0, rows, col0, cols, 0};
    simpar_schedule_add_shard(e->s, &sh);
}

/* The rank's block of the residual stream in `buf`, under the name `tensor`. */
static void
ends_res_shard(Ends *e, const char *tensor, SimparShardRole role, guint buf)
{
    ends_shard(e, tensor, role, buf, e->res.row0, e->res.rows, e->res.col0, e->res.cols);
}

/* The rank's vocabulary slice, clipped to the vocabulary (the last slice may be short). */
static guint64
ends_slice_rows(const Ends *e)
{
    return e->vocab0 >= e->width ? 0 : MIN(e->slice, e->width - e->vocab0);
}

static void
ends_coll(Ends *e, SimparCollKind kind, gsize count, guint send, guint recv, SimparRedOp red,
          SimparPhase phase, const char *what)
{
    if (e->T == 1)
        return;
    SimparOp op = {.kind = SIMPAR_OP_COLLECTIVE,
                   .u.coll = {kind, e->group, count, 0, {send, 0}, {recv, 0}, red}};
    ends_add(e, &op, phase, what);
}

static void
ends_vocab(Ends *e, SimparOpKind kind, SimparPhase phase, const char *what, guint cols,
           double scale, const guint *in, guint n_in, guint out)
{
    SimparOp op = {.kind = kind,
                   .u.vocab = {(guint) e->rows, cols, e->vocab0, e->slice, scale, {{0}}, {{0}}}};
    for (guint i = 0; i < n_in; i++)
        op.u.vocab.in[i] = (SimparView){in[i], 0};
    op.u.vocab.out[0] = (SimparView){out, 0};
    ends_add(e, &op, phase, what);
}

/* Whole rows [rows x h] on every rank from the layer's blocks: nothing to do for 1-D without
 * sequence parallelism, an all-gather otherwise. */
static guint
ends_full_rows(Ends *e, guint block, SimparPhase phase, const char *what)
{
    if (e->full_rows || e->T == 1)
        return block;
    guint full = ends_buf(e, what, e->rows * e->h);
    ends_coll(e, SIMPAR_COLL_ALL_GATHER, e->share, block, full, SIMPAR_RED_SUM, phase, what);
    return full;
}

/* Partial sums of whole rows to the layer's blocks: an all-reduce for 1-D without sequence
 * parallelism, a reduce-scatter otherwise. */
static guint
ends_to_blocks(Ends *e, guint partial, SimparPhase phase, const char *what)
{
    if (e->full_rows || e->T == 1) {
        ends_coll(e, SIMPAR_COLL_ALL_REDUCE, e->rows * e->h, partial, partial, SIMPAR_RED_SUM,
                  phase, what);
        return partial;
    }
    guint block = ends_buf(e, what, MAX(e->act, e->share));
    ends_coll(e, SIMPAR_COLL_REDUCE_SCATTER, e->share, partial, block, SIMPAR_RED_SUM, phase, what);
    return block;
}

static void
ends_embedding(Ends *e, guint tokens, gboolean backward)
{
    e->segment = backward ? "embed.bwd" : "embed.fwd";
    if (!backward) {
        guint table = ends_buf(e, "table", e->slice * e->h);
        ends_shard(e, "embedding.weight", SIMPAR_SHARD_INPUT, table, e->vocab0, ends_slice_rows(e),
                   0, e->h);
        guint y = ends_buf(e, "y", e->rows * e->h);
        guint in[] = {tokens, table};
        ends_vocab(e, SIMPAR_OP_EMBED, SIMPAR_PHASE_FORWARD, "lookup", (guint) e->h, 1, in, 2, y);
        ends_res_shard(e, "embed.y", SIMPAR_SHARD_OUTPUT,
                       ends_to_blocks(e, y, SIMPAR_PHASE_FORWARD, "reduce"));
        return;
    }
    guint dy = ends_buf(e, "dy", MAX(e->act, e->share));
    ends_res_shard(e, "embed.dy", SIMPAR_SHARD_INPUT, dy);
    guint full = ends_full_rows(e, dy, SIMPAR_PHASE_BACKWARD, "gather-dy");
    guint dtable = ends_buf(e, "table.grad", e->slice * e->h);
    ends_shard(e, "embedding.weight.grad", SIMPAR_SHARD_OUTPUT, dtable, e->vocab0,
               ends_slice_rows(e), 0, e->h);
    guint in[] = {tokens, full};
    ends_vocab(e, SIMPAR_OP_EMBED_BWD, SIMPAR_PHASE_BACKWARD, "scatter-add", (guint) e->h, 1, in, 2,
               dtable);
}

static void
ends_gemm(Ends *e, SimparPhase phase, const char *what, SimparGemm g)
{
    SimparOp op = {.kind = SIMPAR_OP_GEMM, .u.gemm = g};
    op.u.gemm.batch = 1;
    ends_add(e, &op, phase, what);
}

/* Output layer (or an auxiliary head) and vocabulary-parallel cross-entropy. */
static void
ends_head(Ends *e, gboolean aux, guint targets, double scale)
{
    const char *name = aux ? "aux" : "head", *tensor = aux ? "aux.weight" : "output.weight";
    g_autofree char *fwd = g_strdup_printf("%s.fwd", name), *bwd = g_strdup_printf("%s.bwd", name);
    g_autofree char *weight_grad = g_strdup_printf("%s.grad", tensor);
    e->segment = g_intern_string(fwd);
    guint x = ends_buf(e, "x", MAX(e->act, e->share)), w = ends_buf(e, "weight", e->h * e->slice);
    ends_res_shard(e, "head.x", SIMPAR_SHARD_INPUT, x);
    ends_shard(e, tensor, SIMPAR_SHARD_INPUT, w, 0, e->h, e->vocab0, ends_slice_rows(e));
    guint xf = ends_full_rows(e, x, SIMPAR_PHASE_FORWARD, "gather-x");
    guint logits = ends_buf(e, "logits", e->rows * e->slice);
    ends_gemm(e, SIMPAR_PHASE_FORWARD, "gemm",
              (SimparGemm){.m = (guint) e->rows,
                           .n = (guint) e->slice,
                           .k = (guint) e->h,
                           .a = {xf, 0},
                           .b = {w, 0},
                           .c = {logits, 0}});
    guint max = ends_buf(e, "max", e->rows), stats = ends_buf(e, "stats", 2 * e->rows);
    guint loss = ends_buf(e, "loss", 1);
    guint in_max[] = {logits};
    ends_vocab(e, SIMPAR_OP_XENT_MAX, SIMPAR_PHASE_FORWARD, "xent-max", 0, scale, in_max, 1, max);
    ends_coll(e, SIMPAR_COLL_ALL_REDUCE, e->rows, max, max, SIMPAR_RED_MAX, SIMPAR_PHASE_FORWARD,
              "all-reduce-max");
    guint in_fwd[] = {logits, max, targets};
    ends_vocab(e, SIMPAR_OP_XENT_FWD, SIMPAR_PHASE_FORWARD, "xent-fwd", 0, scale, in_fwd, 3, stats);
    ends_coll(e, SIMPAR_COLL_ALL_REDUCE, 2 * e->rows, stats, stats, SIMPAR_RED_SUM,
              SIMPAR_PHASE_FORWARD, "all-reduce-stats");
    guint in_loss[] = {max, stats};
    ends_vocab(e, SIMPAR_OP_XENT_LOSS, SIMPAR_PHASE_FORWARD, "xent-loss", 0, scale, in_loss, 2,
               loss);
    ends_shard(e, "loss", SIMPAR_SHARD_OUTPUT, loss, 0, 1, 0, 1);
    e->segment = g_intern_string(bwd);
    guint dlogits = ends_buf(e, "dlogits", e->rows * e->slice);
    guint in_bwd[] = {logits, max, targets, stats};
    ends_vocab(e, SIMPAR_OP_XENT_BWD, SIMPAR_PHASE_BACKWARD, "xent-bwd", 0, scale, in_bwd, 4,
               dlogits);
    guint dx = ends_buf(e, "dx-partial", e->rows * e->h),
          dw = ends_buf(e, "weight.grad", e->h * e->slice);
    ends_shard(e, weight_grad, SIMPAR_SHARD_OUTPUT, dw, 0, e->h, e->vocab0, ends_slice_rows(e));
    ends_gemm(e, SIMPAR_PHASE_BACKWARD, "gemm-dx",
              (SimparGemm){.m = (guint) e->rows,
                           .n = (guint) e->h,
                           .k = (guint) e->slice,
                           .trans_b = TRUE,
                           .a = {dlogits, 0},
                           .b = {w, 0},
                           .c = {dx, 0}});
    ends_gemm(e, SIMPAR_PHASE_BACKWARD, "gemm-dw",
              (SimparGemm){.m = (guint) e->h,
                           .n = (guint) e->slice,
                           .k = (guint) e->rows,
                           .trans_a = TRUE,
                           .a = {xf, 0},
                           .b = {dlogits, 0},
                           .c = {dw, 0}});
    ends_res_shard(e, "head.dx", SIMPAR_SHARD_OUTPUT,
                   ends_to_blocks(e, dx, SIMPAR_PHASE_BACKWARD, "reduce-dx"));
}

SimparSchedule *
simpar_ends_build(const SimparModel *model, const SimparPlan *plan, const SimparSchedule *layer,
                  gint64 width, guint parts)
{
    /* the tensor-parallel group of the first context-parallel rank: every other one does the
     * same with its own tokens */
    guint T = (guint) plan->tp;
    g_return_val_if_fail(simpar_schedule_n_ranks(layer) == T * simpar_plan_cp(plan), NULL);
    SimparSchedule *s = simpar_schedule_new(T, model->dtype);
    g_autofree guint *ranks = g_new(guint, T);
    for (guint r = 0; r < T; r++)
        ranks[r] = r;
    guint group = simpar_schedule_add_group(s, "tp", ranks, T);
    g_autofree SimparRankFacts *facts = simpar_schedule_rank_facts(layer);
    for (guint r = 0; r < T; r++) {
        SimparRankFacts f = facts[r];
        Ends e = {.s = s,
                  .rank = r,
                  .group = group,
                  .T = T,
                  .rows = (guint64) (model->micro_batch * model->seq / simpar_plan_cp(plan)),
                  .h = (guint64) model->hidden};
        e.act = f.act_elems;
        e.share = e.rows * e.h / T;
        e.full_rows = simpar_plan_whole_rows(plan);
        const SimparShard *x = simpar_schedule_find_shard(layer, r, "x");
        g_return_val_if_fail(x != NULL, s);
        e.res = *x;
        double scale = 1.0 / (double) e.rows;
        guint tokens = G_MAXUINT;
        if (parts & SIMPAR_ENDS_EMBED) {
            tokens = simpar_schedule_add_buffer(s, r, "tokens", e.rows);
            ends_shard(&e, "tokens", SIMPAR_SHARD_INPUT, tokens, 0, e.rows, 0, 1);
            e.width = model->vocab;
            e.slice = ((guint64) model->vocab + T - 1) / T;
            e.vocab0 = r * e.slice;
            ends_embedding(&e, tokens, FALSE);
        }
        if (parts & (SIMPAR_ENDS_HEAD | SIMPAR_ENDS_AUX)) {
            guint targets = simpar_schedule_add_buffer(s, r, "targets", e.rows);
            ends_shard(&e, "targets", SIMPAR_SHARD_INPUT, targets, 0, e.rows, 0, 1);
            e.width = parts & SIMPAR_ENDS_HEAD ? model->vocab : width;
            e.slice = (e.width + T - 1) / T;
            e.vocab0 = r * e.slice;
            ends_head(&e, !(parts & SIMPAR_ENDS_HEAD), targets, scale);
        }
        if (parts & SIMPAR_ENDS_EMBED) {
            e.width = model->vocab;
            e.slice = ((guint64) model->vocab + T - 1) / T;
            e.vocab0 = r * e.slice;
            ends_embedding(&e, tokens, TRUE);
        }
    }
    return s; /* (transfer full) */
}
