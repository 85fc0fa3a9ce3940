/* ends.c - the model's ends on one tensor-parallel group (see ends.h). */
#include "ends.h"
#include "generators.h"

typedef struct {
    SimparSchedule *s;
    guint rank, group, T;
    guint64 rows, h, width, slice, vocab0, act;
    guint64 share; /* rows * h / T: one rank's part of whole rows in the gathers and scatters */
    gboolean full_rows; /* the layer keeps whole rows on every rank (1-D without SP) */
    gboolean rms;       /* the model's norms are RMSNorms */
    guint head_fp8;     /* the output layer's GEMMs' FP8 recipe (--fp8-output-proj), else 0 */
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
                           .fp8 = e->head_fp8,
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
                           .fp8 = e->head_fp8,
                           .a = {dlogits, 0},
                           .b = {w, 0},
                           .c = {dx, 0}});
    ends_gemm(e, SIMPAR_PHASE_BACKWARD, "gemm-dw",
              (SimparGemm){.m = (guint) e->h,
                           .n = (guint) e->slice,
                           .k = (guint) e->rows,
                           .trans_a = TRUE,
                           .fp8 = e->head_fp8,
                           .a = {xf, 0},
                           .b = {dlogits, 0},
                           .c = {dw, 0}});
    ends_res_shard(e, "head.dx", SIMPAR_SHARD_OUTPUT,
                   ends_to_blocks(e, dx, SIMPAR_PHASE_BACKWARD, "reduce-dx"));
}

/* The rows of the rank's block of the residual stream taken as whole rows of h (1-D: all rows,
 * or its sequence-parallel share; the grid modes' tiles hold as many elements). */
static guint64
ends_block_rows(const Ends *e)
{
    return e->full_rows || e->T == 1 ? e->rows : MAX(e->share / e->h, (guint64) 1);
}

static void
ends_kernel(Ends *e, SimparOpKind kind, SimparPhase phase, const char *what, SimparKernel k)
{
    SimparOp op = {.kind = kind, .u.kern = k};
    ends_add(e, &op, phase, what);
}

/* A norm (the model's kind) over the rank's block rows x h of `x` into `out` (forward), or its
 * backward from `x` the gradient into `out`; `name` tells the norms apart. */
static void
ends_norm(Ends *e, const char *name, guint x, guint out, gboolean backward)
{
    guint64 rows = ends_block_rows(e);
    g_autofree char *n_stats = g_strdup_printf("%s.stats", name),
                    *n_xhat = g_strdup_printf("%s.xhat", name),
                    *n_rstd = g_strdup_printf("%s.rstd", name),
                    *n_gamma = g_strdup_printf("%s.gamma", name),
                    *n_grad = g_strdup_printf("%s.gamma.grad", name),
                    *n_apply = g_strdup_printf("%s.apply", name);
    guint stats = ends_buf(e, n_stats, 2 * rows), xhat = ends_buf(e, n_xhat, rows * e->h);
    guint rstd = ends_buf(e, n_rstd, rows), gamma = ends_buf(e, n_gamma, 2 * e->h);
    SimparKernel k = {
        .rows = (guint) rows, .cols = (guint) e->h, .hidden = e->h, .eps = 1e-5, .rms = e->rms};
    if (!backward) {
        k.in[0] = (SimparView){x, 0}, k.out[0] = (SimparView){stats, 0};
        ends_kernel(e, SIMPAR_OP_LN_STATS, SIMPAR_PHASE_FORWARD, n_stats, k);
        k.in[1] = (SimparView){stats, 0}, k.in[2] = (SimparView){gamma, 0};
        k.in[3] = e->rms ? SIMPAR_NO_VIEW : (SimparView){gamma, e->h};
        k.out[0] = (SimparView){out, 0}, k.out[1] = (SimparView){xhat, 0};
        k.out[2] = (SimparView){rstd, 0};
        ends_kernel(e, SIMPAR_OP_LN_APPLY, SIMPAR_PHASE_FORWARD, n_apply, k);
        return;
    }
    guint grad = ends_buf(e, n_grad, 2 * e->h);
    k.in[0] = (SimparView){x, 0}, k.in[1] = (SimparView){xhat, 0}, k.in[2] = (SimparView){gamma, 0};
    k.out[0] = (SimparView){stats, 0}, k.out[1] = (SimparView){grad, 0};
    k.out[2] = e->rms ? SIMPAR_NO_VIEW : (SimparView){grad, e->h};
    ends_kernel(e, SIMPAR_OP_LN_BWD_STATS, SIMPAR_PHASE_BACKWARD, n_stats, k);
    k = (SimparKernel){.rows = (guint) rows, .cols = (guint) e->h, .hidden = e->h, .rms = e->rms};
    k.in[0] = (SimparView){x, 0}, k.in[1] = (SimparView){xhat, 0}, k.in[2] = (SimparView){gamma, 0};
    k.in[3] = (SimparView){rstd, 0}, k.in[4] = (SimparView){stats, 0};
    k.out[0] = (SimparView){out, 0};
    ends_kernel(e, SIMPAR_OP_LN_BWD_APPLY, SIMPAR_PHASE_BACKWARD, n_apply, k);
}

/* One multi-token prediction module's own ops (model.h; Megatron-Core's
 * MultiTokenPredictionLayer._concat_embeddings and its final norm), "mtp.fwd": the shifted
 * tokens' embedding and the main model's hidden state each normalised on the rank's rows,
 * side by side as eh_proj's [rows x 2h] input (read where the norms write them: no copy op),
 * whole rows gathered (all-gather unless 1-D without SP), eh_proj column-parallel
 * [2h x h/T], its output all-gathered over the group (gather_from_tensor_model_parallel_region)
 * and, with SP, the rank's rows kept; the final norm (after the module's layer in the model,
 * here beside the other two: the same ops). "mtp.bwd": the final norm's backward, with SP the
 * gradient's rows all-gathered (the scatter's backward), d input = dy M^T summed into the
 * rank's rows (all-reduce, or reduce-scatter with SP), dM = input^T dy, the two norms'
 * backwards and the hidden state's gradient added to the output layer's. */
static void
ends_mtp(Ends *e, gboolean backward)
{
    guint64 rows = ends_block_rows(e), blk = rows * e->h, h2 = 2 * e->h;
    guint64 cols = (e->h + e->T - 1) / e->T; /* eh_proj's output columns on a rank */
    gboolean gather = !(e->full_rows || e->T == 1);
    if (!backward) {
        e->segment = "mtp.fwd";
        guint emb = ends_buf(e, "emb", MAX(e->act, blk)),
              hid = ends_buf(e, "hidden", MAX(e->act, blk));
        guint cat = ends_buf(e, "cat", 2 * blk);
        ends_norm(e, "enorm", emb, cat, FALSE);
        ends_norm(e, "hnorm", hid, cat, FALSE); /* its half: bytes and times, not values */
        guint full = cat;
        if (gather) {
            full = ends_buf(e, "cat-full", e->rows * h2);
            ends_coll(e, SIMPAR_COLL_ALL_GATHER, 2 * e->share, cat, full, SIMPAR_RED_SUM,
                      SIMPAR_PHASE_FORWARD, "gather-x");
        }
        guint w = ends_buf(e, "eh_proj", h2 * cols), y = ends_buf(e, "y", e->rows * cols);
        ends_gemm(e, SIMPAR_PHASE_FORWARD, "gemm",
                  (SimparGemm){.m = (guint) e->rows,
                               .n = (guint) cols,
                               .k = (guint) h2,
                               .a = {full, 0},
                               .b = {w, 0},
                               .c = {y, 0}});
        guint yf = ends_buf(e, "y-full", e->rows * cols * e->T);
        ends_coll(e, SIMPAR_COLL_ALL_GATHER, e->rows * cols, y, yf, SIMPAR_RED_SUM,
                  SIMPAR_PHASE_FORWARD, "gather-y");
        guint out = ends_buf(e, "out", blk);
        ends_norm(e, "final-norm", e->T == 1 ? y : yf, out, FALSE);
        return;
    }
    e->segment = "mtp.bwd";
    guint dy = ends_buf(e, "dy", blk), dn = ends_buf(e, "dnorm", blk);
    ends_norm(e, "final-norm", dy, dn, TRUE);
    guint dfull = dn;
    if (gather) {
        dfull = ends_buf(e, "dy-full", e->rows * e->h);
        ends_coll(e, SIMPAR_COLL_ALL_GATHER, e->share, dn, dfull, SIMPAR_RED_SUM,
                  SIMPAR_PHASE_BACKWARD, "gather-dy");
    }
    guint w = ends_buf(e, "eh_proj", h2 * cols), x = ends_buf(e, "cat-full", e->rows * h2);
    guint dx = ends_buf(e, "dx-partial", e->rows * h2), dw = ends_buf(e, "eh_proj.grad", h2 * cols);
    /* the gradient's rank columns: a [rows x h/T] view of the whole rows (values aside) */
    ends_gemm(e, SIMPAR_PHASE_BACKWARD, "gemm-dx",
              (SimparGemm){.m = (guint) e->rows,
                           .n = (guint) h2,
                           .k = (guint) cols,
                           .trans_b = TRUE,
                           .a = {dfull, 0},
                           .b = {w, 0},
                           .c = {dx, 0}});
    ends_gemm(e, SIMPAR_PHASE_BACKWARD, "gemm-dw",
              (SimparGemm){.m = (guint) h2,
                           .n = (guint) cols,
                           .k = (guint) e->rows,
                           .trans_a = TRUE,
                           .a = {x, 0},
                           .b = {dfull, 0},
                           .c = {dw, 0}});
    guint dcat = dx;
    if (e->T > 1 && gather) {
        dcat = ends_buf(e, "dcat", 2 * blk);
        ends_coll(e, SIMPAR_COLL_REDUCE_SCATTER, 2 * e->share, dx, dcat, SIMPAR_RED_SUM,
                  SIMPAR_PHASE_BACKWARD, "reduce-dx");
    } else {
        ends_coll(e, SIMPAR_COLL_ALL_REDUCE, e->rows * h2, dx, dx, SIMPAR_RED_SUM,
                  SIMPAR_PHASE_BACKWARD, "reduce-dx");
    }
    guint de = ends_buf(e, "demb", blk), dh = ends_buf(e, "dhidden", blk);
    ends_norm(e, "enorm", dcat, de, TRUE);
    ends_norm(e, "hnorm", dcat, dh, TRUE);
    guint head_dx = ends_buf(e, "head-dx", blk);
    ends_kernel(e, SIMPAR_OP_ADD, SIMPAR_PHASE_BACKWARD, "add-dhidden",
                (SimparKernel){.rows = (guint) rows,
                               .cols = (guint) e->h,
                               .in = {{head_dx, 0}, {dh, 0}},
                               .out = {{head_dx, 0}}});
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
        e.rms = model->norm == SIMPAR_NORM_RMSNORM;
        /* Megatron-Core's fp8_output_proj: the LM head (the MTP modules share it) under MXFP8 */
        e.head_fp8 =
            plan->fp8_output_proj && model->fp8 == SIMPAR_FP8_MXFP8 ? (guint) model->fp8 : 0;
        if (parts & SIMPAR_ENDS_MTP)
            ends_mtp(&e, FALSE);
        if (parts & (SIMPAR_ENDS_HEAD | SIMPAR_ENDS_AUX)) {
            guint targets = simpar_schedule_add_buffer(s, r, "targets", e.rows);
            ends_shard(&e, "targets", SIMPAR_SHARD_INPUT, targets, 0, e.rows, 0, 1);
            e.width = parts & SIMPAR_ENDS_HEAD ? model->vocab : width;
            e.slice = (e.width + T - 1) / T;
            e.vocab0 = r * e.slice;
            ends_head(&e, !(parts & SIMPAR_ENDS_HEAD), targets, scale);
        }
        if (parts & SIMPAR_ENDS_MTP)
            ends_mtp(&e, TRUE);
        if (parts & SIMPAR_ENDS_EMBED) {
            e.width = model->vocab;
            e.slice = ((guint64) model->vocab + T - 1) / T;
            e.vocab0 = r * e.slice;
            ends_embedding(&e, tokens, TRUE);
        }
    }
    return s; /* (transfer full) */
}
