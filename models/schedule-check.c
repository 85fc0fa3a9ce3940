/* schedule-check.c - a schedule checks itself: bounds, collective matching, p2p matching, that it
 * runs to completion (no cycle, no deadlock), and that streams and deps order every data hazard.
 */
#include "moe.h"
#include "schedule-private.h"
#include <math.h>
#include <stdarg.h>
#include <string.h>

/* ----- element ranges of an op ----- */

/* Size arithmetic saturating at G_MAXSIZE, so an absurd shape fails the bounds check. */
static gsize
access_mul(gsize a, gsize b)
{
    gsize r;
    return g_size_checked_mul(&r, a, b) ? r : G_MAXSIZE;
}

static gsize
access_add_sizes(gsize a, gsize b)
{
    gsize r;
    return g_size_checked_add(&r, a, b) ? r : G_MAXSIZE;
}

/* A view the op needs for `len` elements; SIMPAR_NO_VIEW there is recorded as buffer
 * G_MAXUINT, which the bounds check refuses. */
static void
access_add(SimparAccess *out, guint *n, SimparView v, gsize len, gboolean write)
{
    if (len == 0)
        return;
    g_assert(*n < SIMPAR_MAX_ACCESSES);
    out[(*n)++] = (SimparAccess){v.buf, v.off, len, write};
}

static gsize
access_batched(guint batch, gsize stride, gsize one)
{
    if (batch == 0 || one == 0)
        return 0;
    return access_add_sizes(access_mul(batch - 1, stride), one);
}

void
simpar_op_coll_counts(const SimparSchedule *sched, const SimparOp *op, gsize *send, gsize *recv)
{
    const SimparColl *c = &op->u.coll;
    gsize all = access_mul(simpar_schedule_group(sched, c->group)->size, c->count);
    gboolean root = simpar_group_index(sched, c->group, op->rank) == c->root;
    *send = c->count, *recv = c->count;
    switch (c->kind) {
    case SIMPAR_COLL_ALL_GATHER:
        *recv = all;
        break;
    case SIMPAR_COLL_REDUCE_SCATTER:
        *send = all;
        break;
    case SIMPAR_COLL_ALL_TO_ALL:
        *send = all, *recv = all;
        break;
    case SIMPAR_COLL_BROADCAST: /* only the root's send is read */
        *send = root ? c->count : 0;
        break;
    case SIMPAR_COLL_REDUCE: /* only the root's recv is written */
        *recv = root ? c->count : 0;
        break;
    default:
        break;
    }
}

static void
access_coll(const SimparSchedule *sched, const SimparOp *op, SimparAccess *out, guint *n)
{
    gsize send, recv;
    simpar_op_coll_counts(sched, op, &send, &recv);
    access_add(out, n, op->u.coll.send, send, FALSE);
    access_add(out, n, op->u.coll.recv, recv, TRUE);
}

static void
access_kernel(const SimparOp *op, SimparAccess *out, guint *n)
{
    const SimparKernel *k = &op->u.kern;
    gsize rc = access_mul(k->rows, k->cols), r = k->rows, r2 = access_mul(2, k->rows), c = k->cols;
    /* lengths of in[0..4] and out[0..2] per kind; 0 = unused */
    gsize in[5] = {rc, 0, 0, 0, 0}, outl[3] = {rc, 0, 0};
    switch (op->kind) {
    case SIMPAR_OP_LN_STATS:
        outl[0] = r2;
        break;
    case SIMPAR_OP_LN_APPLY:
        in[1] = r2, in[2] = c, in[3] = k->rms ? 0 : c, outl[1] = rc, outl[2] = r;
        break;
    case SIMPAR_OP_LN_BWD_STATS:
        in[1] = rc, in[2] = c, outl[0] = r2, outl[1] = c, outl[2] = k->rms ? 0 : c;
        break;
    case SIMPAR_OP_LN_BWD_APPLY:
        in[1] = rc, in[2] = c, in[3] = r, in[4] = r2;
        break;
    case SIMPAR_OP_BIAS_ADD:
        in[0] = c;
        access_add(out, n, k->out[0], rc, FALSE); /* read-modify-write */
        break;
    case SIMPAR_OP_BIAS_GRAD:
        outl[0] = c;
        break;
    case SIMPAR_OP_GELU_BWD:
    case SIMPAR_OP_ADD:
        in[1] = rc;
        break;
    case SIMPAR_OP_SWIGLU:
        in[0] = access_mul(2, rc);
        break;
    case SIMPAR_OP_SWIGLU_BWD:
        in[1] = access_mul(2, rc), outl[0] = access_mul(2, rc);
        break;
    case SIMPAR_OP_PACK_COLS: /* the strided side: whole rows of ld */
        in[0] = access_mul(k->rows, k->ld);
        break;
    case SIMPAR_OP_UNPACK_COLS: /* writes some columns of whole rows: read-modify-write */
        outl[0] = access_mul(k->rows, k->ld);
        access_add(out, n, k->out[0], outl[0], FALSE);
        break;
    default:
        break;
    }
    for (guint i = 0; i < 5; i++)
        access_add(out, n, k->in[i], in[i], FALSE);
    for (guint i = 0; i < 3; i++)
        access_add(out, n, k->out[i], outl[i], TRUE);
}

/* Ring attention's ops (schedule.h): q from qkv, one rank's key block, o and lse. */
static void
access_ring(const SimparOp *op, SimparAccess *out, guint *n)
{
    const SimparAttention *a = &op->u.attn;
    gsize tokens = access_mul(a->nb, a->s), ctx = access_mul(tokens, access_mul(a->nh, a->dh));
    gsize kv = a->nkv != 0 ? a->nkv : a->nh, lse = access_mul(a->nb, access_mul(a->nh, a->s));
    gsize qkv = access_mul(tokens, access_mul(access_add_sizes(a->nh, access_mul(2, kv)), a->dh));
    gsize block = access_mul(tokens, access_mul(2, access_mul(kv, a->dh)));
    switch (op->kind) {
    case SIMPAR_OP_ATTN_BLOCK:
        access_add(out, n, a->in[0], qkv, FALSE);
        access_add(out, n, a->in[3], block, FALSE);
        access_add(out, n, a->out[0], ctx, TRUE);
        access_add(out, n, a->out[1], lse, TRUE);
        break;
    case SIMPAR_OP_ATTN_MERGE: /* o and lse updated in place */
        access_add(out, n, a->in[0], ctx, FALSE);
        access_add(out, n, a->in[1], lse, FALSE);
        for (guint w = 0; w < 2; w++) {
            access_add(out, n, a->out[0], ctx, w);
            access_add(out, n, a->out[1], lse, w);
        }
        break;
    default: /* ATTN_BLOCK_BWD */
        access_add(out, n, a->in[0], qkv, FALSE);
        access_add(out, n, a->in[1], ctx, FALSE);
        access_add(out, n, a->in[2], ctx, FALSE);
        access_add(out, n, a->in[3], block, FALSE);
        access_add(out, n, a->in[4], lse, FALSE);
        if (a->accumulate) {
            access_add(out, n, a->out[0], qkv, FALSE);
            access_add(out, n, a->out[1], block, FALSE);
        }
        access_add(out, n, a->out[0], qkv, TRUE);
        access_add(out, n, a->out[1], block, TRUE);
        break;
    }
}

static void
access_attention(const SimparOp *op, SimparAccess *out, guint *n)
{
    const SimparAttention *a = &op->u.attn;
    if (op->kind != SIMPAR_OP_ATTENTION && op->kind != SIMPAR_OP_ATTENTION_BWD) {
        access_ring(op, out, n);
        return;
    }
    gsize tokens = access_mul(a->nb, a->s), dv = a->dv != 0 ? a->dv : a->dh;
    gsize ctx = access_mul(tokens, access_mul(a->nh, dv));
    gsize kv = a->nkv != 0 ? a->nkv : a->nh, cp = MAX(a->cp, 1);
    /* the latent layout's three regions (schedule.h) */
    gsize latent = access_add_sizes(
        access_mul(a->nh, access_add_sizes(a->dh, access_add_sizes(a->dh - a->dpe, a->dv))),
        a->dpe);
    gsize qkv = a->dv != 0
                    ? access_mul(tokens, latent)
                    : access_mul(tokens,
                                 access_mul(access_add_sizes(a->nh, access_mul(2, kv)), a->dh)),
          probs = access_mul(access_mul(a->nb, a->nh), access_mul(a->s, access_mul(cp, a->s)));
    /* context parallelism: every rank's keys and values, gathered */
    gsize all_kv =
        cp > 1 ? access_mul(access_mul(cp, tokens), access_mul(2, access_mul(kv, a->dh))) : 0;
    access_add(out, n, a->in[0], qkv, FALSE);
    access_add(out, n, a->in[3], all_kv, FALSE);
    if (op->kind == SIMPAR_OP_ATTENTION) {
        access_add(out, n, a->out[0], ctx, TRUE);
        access_add(out, n, a->out[1], probs, TRUE);
    } else {
        access_add(out, n, a->in[1], probs, FALSE);
        access_add(out, n, a->in[2], ctx, FALSE);
        access_add(out, n, a->out[0], qkv, TRUE);
        access_add(out, n, a->out[1], all_kv, TRUE);
    }
}

/* Vocabulary kernels (schedule.h, SimparVocab): ids, targets and row statistics are per row;
 * the table and the logits are this rank's vocabulary slice. */
static void
access_vocab(const SimparOp *op, SimparAccess *out, guint *n)
{
    const SimparVocab *v = &op->u.vocab;
    gsize r = v->rows, r2 = access_mul(2, v->rows), rc = access_mul(v->rows, v->cols);
    gsize table = access_mul(v->vocab, v->cols), logits = access_mul(v->rows, v->vocab);
    /* lengths of in[0..3] and out[0]; 0 = unused */
    gsize in[4] = {0, 0, 0, 0}, out0 = 0;
    switch (op->kind) {
    case SIMPAR_OP_EMBED:
        in[0] = r, in[1] = table, out0 = rc;
        break;
    case SIMPAR_OP_EMBED_BWD: /* dtable accumulates: read-modify-write */
        in[0] = r, in[1] = rc;
        access_add(out, n, v->out[0], table, FALSE);
        out0 = table;
        break;
    case SIMPAR_OP_XENT_MAX:
        in[0] = logits, out0 = r;
        break;
    case SIMPAR_OP_XENT_FWD:
        in[0] = logits, in[1] = r, in[2] = r, out0 = r2;
        break;
    case SIMPAR_OP_XENT_LOSS: /* loss[0] accumulates */
        in[0] = r, in[1] = r2;
        access_add(out, n, v->out[0], 1, FALSE);
        out0 = 1;
        break;
    default: /* XENT_BWD */
        in[0] = logits, in[1] = r, in[2] = r, in[3] = r2, out0 = logits;
        break;
    }
    for (guint i = 0; i < 4; i++)
        access_add(out, n, v->in[i], in[i], FALSE);
    access_add(out, n, v->out[0], out0, TRUE);
}

/* DeepEP's hops (schedule.h): the lengths of in[] and out[] from the hop's a and b sides. */
static void
access_moe_hop(const SimparOp *op, gsize in[3], gsize outl[2])
{
    const SimparMoe *m = &op->u.moe;
    gboolean reduce = op->kind >= SIMPAR_OP_MOE_HOP_REDUCE;
    gsize w = m->hidden + (reduce ? 0 : simpar_moe_hop_scores(m)), R = MAX(m->node_ranks, 1u);
    gsize N = simpar_moe_hop_ranks(m) / R, etp = MAX(m->etp, 1u);
    gsize rows_a[3] = {m->tokens, N * m->cap_node, R * m->cap_gpu};
    gsize rows_b[3] = {N * m->cap_node, R * m->cap_gpu,
                       access_mul(access_mul(m->experts, m->capacity), etp)};
    guint hop = MIN(m->hop, 2u);
    gsize a[2] = {access_mul(rows_a[hop], hop == 0 ? m->hidden : w),
                  hop == 0 && !reduce ? access_mul(m->tokens, m->top_k) : 0};
    gsize b[2] = {access_mul(rows_b[hop], hop == 2 ? m->hidden : w), hop == 2 ? rows_b[2] : 0};
    switch (op->kind) {
    case SIMPAR_OP_MOE_HOP:
        in[0] = a[0], in[1] = a[1], outl[0] = b[0], outl[1] = b[1];
        break;
    case SIMPAR_OP_MOE_HOP_BWD:
        in[0] = b[0], in[1] = b[1], outl[0] = a[0], outl[1] = a[1];
        break;
    case SIMPAR_OP_MOE_HOP_REDUCE:
        in[0] = b[0], in[1] = b[1], outl[0] = a[0];
        break;
    default: /* HOP_REDUCE_BWD */
        in[0] = a[0], in[1] = b[1], in[2] = hop == 2 ? b[0] : 0, outl[0] = b[0], outl[1] = b[1];
        break;
    }
}

/* Mixture-of-experts ops (schedule.h, SimparMoe): tokens, logits, scores and the all-to-all's
 * expert-major blocks. */
static void
access_moe(const SimparOp *op, SimparAccess *out, guint *n)
{
    const SimparMoe *m = &op->u.moe;
    gsize x = access_mul(m->tokens, m->hidden), logits = access_mul(m->tokens, m->experts);
    gsize scores = access_mul(m->tokens, m->top_k);
    gsize blocks = access_mul(access_mul(m->experts, m->capacity), m->hidden);
    if (m->gather > 0 && m->ep > 0) { /* the all-gather dispatcher (schedule.h) */
        gboolean gate = op->kind == SIMPAR_OP_MOE_GATE || op->kind == SIMPAR_OP_MOE_GATE_BWD;
        scores = gate ? logits : access_mul(logits, m->gather);
        x = gate ? x : access_mul(x, m->gather);
        blocks = access_mul(access_mul(access_mul(m->experts / m->ep, m->gather), m->capacity),
                            m->hidden);
    }
    /* lengths of in[0..2] and out[0..1] per kind */
    gsize in[3] = {0, 0, 0}, outl[2] = {0, 0};
    switch (op->kind) {
    case SIMPAR_OP_MOE_HOP:
    case SIMPAR_OP_MOE_HOP_BWD:
    case SIMPAR_OP_MOE_HOP_REDUCE:
    case SIMPAR_OP_MOE_HOP_REDUCE_BWD:
        access_moe_hop(op, in, outl);
        break;
    case SIMPAR_OP_MOE_GATE:
        in[0] = logits, outl[0] = scores;
        break;
    case SIMPAR_OP_MOE_GATE_BWD:
        in[0] = logits, in[1] = scores, outl[0] = logits;
        break;
    case SIMPAR_OP_MOE_DISPATCH:
        in[0] = x, outl[0] = blocks;
        break;
    case SIMPAR_OP_MOE_DISPATCH_BWD:
        in[0] = blocks, outl[0] = x;
        break;
    case SIMPAR_OP_MOE_COMBINE:
        in[0] = blocks, in[1] = scores, outl[0] = x;
        break;
    case SIMPAR_OP_MOE_COMBINE_BWD:
        in[0] = x, in[1] = scores, in[2] = blocks, outl[0] = blocks, outl[1] = scores;
        break;
    default: /* SORT, UNSORT: etp x ep source blocks with expert tensor parallelism */
        in[0] = outl[0] = access_mul(blocks, MAX(m->etp, 1u));
        break;
    }
    for (guint i = 0; i < 3; i++)
        access_add(out, n, m->in[i], in[i], FALSE);
    for (guint i = 0; i < 2; i++)
        access_add(out, n, m->out[i], outl[i], TRUE);
}

/* Adam reads the gradient and updates the parameter, momentum and variance in place. */
static void
access_adam(const SimparOp *op, SimparAccess *out, guint *n)
{
    const SimparAdam *a = &op->u.adam;
    access_add(out, n, a->grad, a->count, FALSE);
    const SimparView rmw[3] = {a->param, a->m, a->v};
    for (guint i = 0; i < 3; i++) {
        access_add(out, n, rmw[i], a->count, FALSE);
        access_add(out, n, rmw[i], a->count, TRUE);
    }
}

guint
simpar_op_accesses(const SimparSchedule *sched, const SimparOp *op,
                   SimparAccess out[SIMPAR_MAX_ACCESSES])
{
    guint n = 0;
    const SimparGemm *g = &op->u.gemm;
    gsize c_len;
    switch (op->kind) {
    case SIMPAR_OP_GEMM:
        c_len = access_batched(g->batch, g->stride_c, access_mul(g->m, g->n));
        access_add(out, &n, g->a, access_batched(g->batch, g->stride_a, access_mul(g->m, g->k)),
                   FALSE);
        access_add(out, &n, g->b, access_batched(g->batch, g->stride_b, access_mul(g->k, g->n)),
                   FALSE);
        if (g->accumulate)
            access_add(out, &n, g->c, c_len, FALSE);
        access_add(out, &n, g->c, c_len, TRUE);
        break;
    case SIMPAR_OP_ATTENTION:
    case SIMPAR_OP_ATTENTION_BWD:
    case SIMPAR_OP_ATTN_BLOCK:
    case SIMPAR_OP_ATTN_MERGE:
    case SIMPAR_OP_ATTN_BLOCK_BWD:
        access_attention(op, out, &n);
        break;
    case SIMPAR_OP_COLLECTIVE:
        access_coll(sched, op, out, &n);
        break;
    case SIMPAR_OP_SEND:
    case SIMPAR_OP_RECV:
        access_add(out, &n, op->u.p2p.buf, op->u.p2p.count, op->kind == SIMPAR_OP_RECV);
        break;
    case SIMPAR_OP_EMBED:
    case SIMPAR_OP_EMBED_BWD:
    case SIMPAR_OP_XENT_MAX:
    case SIMPAR_OP_XENT_FWD:
    case SIMPAR_OP_XENT_LOSS:
    case SIMPAR_OP_XENT_BWD:
        access_vocab(op, out, &n);
        break;
    case SIMPAR_OP_ADAM:
        access_adam(op, out, &n);
        break;
    case SIMPAR_OP_BLOCK: /* an opaque timed span: no data */
    case SIMPAR_OP_ZERO_GRAD:
        break;
    default:
        if (simpar_op_is_moe(op->kind))
            access_moe(op, out, &n);
        else
            access_kernel(op, out, &n);
        break;
    }
    return n;
}

guint
simpar_op_view_fields(SimparOp *op, SimparView *out[SIMPAR_MAX_VIEWS])
{
    guint n = 0;
    switch (op->kind) {
    case SIMPAR_OP_GEMM:
        out[n++] = &op->u.gemm.a, out[n++] = &op->u.gemm.b, out[n++] = &op->u.gemm.c;
        break;
    case SIMPAR_OP_ATTENTION:
    case SIMPAR_OP_ATTENTION_BWD:
    case SIMPAR_OP_ATTN_BLOCK:
    case SIMPAR_OP_ATTN_MERGE:
    case SIMPAR_OP_ATTN_BLOCK_BWD:
        for (guint i = 0; i < G_N_ELEMENTS(op->u.attn.in); i++)
            out[n++] = &op->u.attn.in[i];
        for (guint i = 0; i < G_N_ELEMENTS(op->u.attn.out); i++)
            out[n++] = &op->u.attn.out[i];
        break;
    case SIMPAR_OP_COLLECTIVE:
        out[n++] = &op->u.coll.send, out[n++] = &op->u.coll.recv;
        break;
    case SIMPAR_OP_SEND:
    case SIMPAR_OP_RECV:
        out[n++] = &op->u.p2p.buf;
        break;
    case SIMPAR_OP_EMBED:
    case SIMPAR_OP_EMBED_BWD:
    case SIMPAR_OP_XENT_MAX:
    case SIMPAR_OP_XENT_FWD:
    case SIMPAR_OP_XENT_LOSS:
    case SIMPAR_OP_XENT_BWD:
        for (guint i = 0; i < G_N_ELEMENTS(op->u.vocab.in); i++)
            out[n++] = &op->u.vocab.in[i];
        out[n++] = &op->u.vocab.out[0];
        break;
    case SIMPAR_OP_ADAM:
        out[n++] = &op->u.adam.param, out[n++] = &op->u.adam.grad;
        out[n++] = &op->u.adam.m, out[n++] = &op->u.adam.v;
        break;
    case SIMPAR_OP_BLOCK:
    case SIMPAR_OP_ZERO_GRAD:
        break;
    default:
        if (simpar_op_is_moe(op->kind)) {
            for (guint i = 0; i < G_N_ELEMENTS(op->u.moe.in); i++)
                out[n++] = &op->u.moe.in[i];
            for (guint i = 0; i < G_N_ELEMENTS(op->u.moe.out); i++)
                out[n++] = &op->u.moe.out[i];
            break;
        }
        for (guint i = 0; i < G_N_ELEMENTS(op->u.kern.in); i++)
            out[n++] = &op->u.kern.in[i];
        for (guint i = 0; i < G_N_ELEMENTS(op->u.kern.out); i++)
            out[n++] = &op->u.kern.out[i];
        break;
    }
    g_assert(n <= SIMPAR_MAX_VIEWS);
    return n;
}

gboolean
simpar_accesses_conflict(const SimparAccess *a, guint na, const SimparAccess *b, guint nb)
{
    for (guint i = 0; i < na; i++)
        for (guint j = 0; j < nb; j++)
            if (a[i].buf == b[j].buf && a[i].buf != G_MAXUINT && (a[i].write || b[j].write) &&
                a[i].off < b[j].off + b[j].len && b[j].off < a[i].off + a[i].len)
                return TRUE;
    return FALSE;
}

/* ----- each op on its own: kinds, groups, peers, parameters, bounds ----- */

static gboolean check_fail(GError **error, SimparScheduleError code, guint i, const SimparOp *op,
                           const char *fmt, ...) G_GNUC_PRINTF(5, 6);

static gboolean
check_fail(GError **error, SimparScheduleError code, guint i, const SimparOp *op, const char *fmt,
           ...)
{
    va_list ap;
    va_start(ap, fmt);
    g_autofree char *what = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    g_set_error(error, SIMPAR_SCHEDULE_ERROR, code, "op %u '%s' on rank %u %s", i, op->name,
                op->rank, what);
    return FALSE;
}

/* Group membership problems are reported as MISMATCH: the members cannot meet. */
static gboolean
check_coll_op(const SimparSchedule *sched, guint i, const SimparOp *op, GError **error)
{
    const SimparColl *c = &op->u.coll;
    if (c->kind >= SIMPAR_N_COLL_KINDS)
        return check_fail(error, SIMPAR_SCHEDULE_ERROR_INVALID, i, op,
                          "has unknown collective kind %d", (int) c->kind);
    if (c->red != SIMPAR_RED_SUM && c->red != SIMPAR_RED_MAX)
        return check_fail(error, SIMPAR_SCHEDULE_ERROR_INVALID, i, op,
                          "has unknown reduction op %d", (int) c->red);
    if (c->red == SIMPAR_RED_MAX && c->kind != SIMPAR_COLL_ALL_REDUCE &&
        c->kind != SIMPAR_COLL_REDUCE && c->kind != SIMPAR_COLL_REDUCE_SCATTER)
        return check_fail(error, SIMPAR_SCHEDULE_ERROR_INVALID, i, op,
                          "has reduction max, but %s does not reduce (only all-reduce, reduce "
                          "and reduce-scatter do)",
                          simpar_coll_kind_name(c->kind));
    if (c->group >= simpar_schedule_n_groups(sched))
        return check_fail(error, SIMPAR_SCHEDULE_ERROR_MISMATCH, i, op,
                          "names group %u, which does not exist", c->group);
    if (simpar_group_index(sched, c->group, op->rank) == G_MAXUINT ||
        c->root >= simpar_schedule_group(sched, c->group)->size)
        return check_fail(error, SIMPAR_SCHEDULE_ERROR_MISMATCH, i, op,
                          "is not in group %u, or root %u is not a member index", c->group,
                          c->root);
    return TRUE;
}

static gboolean
check_probability(guint i, const SimparOp *op, double p, GError **error)
{
    if (p >= 0.0 && p < 1.0)
        return TRUE;
    return check_fail(error, SIMPAR_SCHEDULE_ERROR_INVALID, i, op,
                      "has dropout probability %g, not in [0, 1)", p);
}

/* The vocabulary slice must be addressable and the loss scale a number. */
static gboolean
check_vocab(guint i, const SimparOp *op, GError **error)
{
    const SimparVocab *v = &op->u.vocab;
    if (v->vocab0 > G_MAXUINT64 - v->vocab)
        return check_fail(error, SIMPAR_SCHEDULE_ERROR_INVALID, i, op,
                          "has a vocabulary slice [%" G_GUINT64_FORMAT " + %" G_GUINT64_FORMAT
                          ") past the largest id",
                          v->vocab0, v->vocab);
    if ((op->kind == SIMPAR_OP_XENT_LOSS || op->kind == SIMPAR_OP_XENT_BWD) && !isfinite(v->scale))
        return check_fail(error, SIMPAR_SCHEDULE_ERROR_INVALID, i, op, "has loss scale %g",
                          v->scale);
    return TRUE;
}

/* Adam (schedule.h): betas in [0, 1), eps > 0, lr and weight decay finite and >= 0, step >= 1
 * (the bias corrections divide by 1 - beta^step). */
static gboolean
check_adam(guint i, const SimparOp *op, GError **error)
{
    const SimparAdam *a = &op->u.adam;
    if (!(a->beta1 >= 0.0 && a->beta1 < 1.0 && a->beta2 >= 0.0 && a->beta2 < 1.0))
        return check_fail(error, SIMPAR_SCHEDULE_ERROR_INVALID, i, op,
                          "has Adam betas (%g, %g), not in [0, 1)", a->beta1, a->beta2);
    if (!(a->eps > 0.0 && isfinite(a->eps)))
        return check_fail(error, SIMPAR_SCHEDULE_ERROR_INVALID, i, op,
                          "has Adam epsilon %g, not > 0", a->eps);
    if (!(a->lr >= 0.0 && isfinite(a->lr) && a->weight_decay >= 0.0 && isfinite(a->weight_decay)))
        return check_fail(error, SIMPAR_SCHEDULE_ERROR_INVALID, i, op,
                          "has learning rate %g or weight decay %g, not finite and >= 0", a->lr,
                          a->weight_decay);
    if (a->step == 0)
        return check_fail(error, SIMPAR_SCHEDULE_ERROR_INVALID, i, op,
                          "has Adam step 0; steps count from 1");
    return TRUE;
}

static gboolean
check_block(guint i, const SimparOp *op, GError **error)
{
    const SimparBlockOp *b = &op->u.block;
    if (b->key == NULL)
        return check_fail(error, SIMPAR_SCHEDULE_ERROR_INVALID, i, op, "is a block without a key");
    if (!(b->flops >= 0.0 && isfinite(b->flops)))
        return check_fail(error, SIMPAR_SCHEDULE_ERROR_INVALID, i, op, "is a block of %g flops",
                          b->flops);
    return TRUE;
}

/* Experts split evenly over the ranks, each token's choices among them, node-limited groups
 * that hold them, and a router the kernels know. */
static gboolean
check_moe(guint i, const SimparOp *op, GError **error)
{
    const SimparMoe *m = &op->u.moe;
    gboolean groups_ok =
        m->groups == 0 ||
        (m->experts % m->groups == 0 && m->group_limit >= 1 && m->group_limit <= m->groups &&
         (guint64) m->top_k <= (guint64) m->group_limit * (m->experts / m->groups));
    if (m->ep == 0 || m->experts == 0 || m->experts % m->ep != 0 || m->ep_rank >= m->ep ||
        m->top_k == 0 || m->top_k > m->experts || !groups_ok || m->router > SIMPAR_ROUTER_SIGMOID ||
        m->gather % m->ep != 0 ||
        (op->kind >= SIMPAR_OP_MOE_HOP &&
         (m->node_ranks == 0 || simpar_moe_hop_ranks(m) % m->node_ranks != 0 ||
          m->etp_rank >= MAX(m->etp, 1u) || m->hop > 2 || m->cap_node == 0 || m->cap_gpu == 0)))
        return check_fail(error, SIMPAR_SCHEDULE_ERROR_INVALID, i, op,
                          "routes to %u of %u experts (%u groups, limit %u, router %u) over rank "
                          "%u of %u",
                          m->top_k, m->experts, m->groups, m->group_limit, m->router, m->ep_rank,
                          m->ep);
    return TRUE;
}

/* Parameters a kernel divides by or feeds to a dropout mask. */
static gboolean
check_params(guint i, const SimparOp *op, GError **error)
{
    if (simpar_op_is_moe(op->kind))
        return check_moe(i, op, error);
    switch (op->kind) {
    case SIMPAR_OP_EMBED:
    case SIMPAR_OP_EMBED_BWD:
    case SIMPAR_OP_XENT_MAX:
    case SIMPAR_OP_XENT_FWD:
    case SIMPAR_OP_XENT_LOSS:
    case SIMPAR_OP_XENT_BWD:
        return check_vocab(i, op, error);
    case SIMPAR_OP_ADAM:
        return check_adam(i, op, error);
    case SIMPAR_OP_BLOCK:
        return check_block(i, op, error);
    case SIMPAR_OP_ZERO_GRAD:
        if (!(op->u.zero.elem_bytes > 0 && op->u.zero.elem_bytes <= 8))
            return check_fail(error, SIMPAR_SCHEDULE_ERROR_INVALID, i, op,
                              "zeroes gradients of %g bytes (valid: 0 < bytes <= 8)",
                              op->u.zero.elem_bytes);
        return TRUE;
    case SIMPAR_OP_LN_APPLY:
    case SIMPAR_OP_LN_BWD_APPLY:
        if (op->u.kern.hidden == 0 && op->u.kern.rows > 0)
            return check_fail(error, SIMPAR_SCHEDULE_ERROR_INVALID, i, op,
                              "normalises over hidden = 0 columns");
        return TRUE;
    case SIMPAR_OP_DROPOUT:
    case SIMPAR_OP_DROPOUT_BWD:
        return check_probability(i, op, op->u.kern.p, error);
    case SIMPAR_OP_PACK_COLS:
    case SIMPAR_OP_UNPACK_COLS: {
        const SimparKernel *k = &op->u.kern;
        guint64 last = k->groups == 0
                           ? 0
                           : (guint64) k->offset + (guint64) (k->groups - 1) * k->stride + k->width;
        if ((guint64) k->groups * k->width != k->cols || last > k->ld)
            return check_fail(error, SIMPAR_SCHEDULE_ERROR_INVALID, i, op,
                              "packs %u groups of %u columns (stride %u from %u) as %u of rows "
                              "of %u",
                              k->groups, k->width, k->stride, k->offset, k->cols, k->ld);
        return TRUE;
    }
    case SIMPAR_OP_ATTENTION:
    case SIMPAR_OP_ATTENTION_BWD:
    case SIMPAR_OP_ATTN_BLOCK:
    case SIMPAR_OP_ATTN_MERGE:
    case SIMPAR_OP_ATTN_BLOCK_BWD:
        if (op->u.attn.dh == 0)
            return check_fail(error, SIMPAR_SCHEDULE_ERROR_INVALID, i, op,
                              "has attention head size 0");
        if (op->u.attn.dv != 0 &&
            (op->u.attn.dpe > op->u.attn.dh || op->u.attn.cp > 1 ||
             (op->u.attn.nkv != 0 && op->u.attn.nkv != op->u.attn.nh) ||
             !(op->kind == SIMPAR_OP_ATTENTION || op->kind == SIMPAR_OP_ATTENTION_BWD)))
            return check_fail(error, SIMPAR_SCHEDULE_ERROR_INVALID, i, op,
                              "has the latent layout with %u shared of %u key columns, %u "
                              "key/value heads for %u heads and %u context-parallel ranks",
                              op->u.attn.dpe, op->u.attn.dh, op->u.attn.nkv, op->u.attn.nh,
                              op->u.attn.cp);
        if (op->u.attn.nkv != 0 && op->u.attn.nh % op->u.attn.nkv != 0)
            return check_fail(error, SIMPAR_SCHEDULE_ERROR_INVALID, i, op,
                              "has %u heads, not a multiple of its %u key/value heads",
                              op->u.attn.nh, op->u.attn.nkv);
        if (op->u.attn.cp > 1 && (op->u.attn.cp_rank >= op->u.attn.cp ||
                                  op->u.attn.kv_rank >= op->u.attn.cp || op->u.attn.s % 2 != 0))
            return check_fail(error, SIMPAR_SCHEDULE_ERROR_INVALID, i, op,
                              "is rank %u of %u context-parallel ranks with %u rows per sequence "
                              "(two equal chunks each)",
                              op->u.attn.cp_rank, op->u.attn.cp, op->u.attn.s);
        return check_probability(i, op, op->u.attn.p, error);
    default:
        return TRUE;
    }
}

static gboolean
check_access(const SimparSchedule *sched, guint i, const SimparOp *op, const SimparAccess *a,
             GError **error)
{
    if (a->buf == G_MAXUINT)
        return check_fail(error, SIMPAR_SCHEDULE_ERROR_BOUNDS, i, op,
                          "has no buffer for %zu elements it needs", a->len);
    if (a->buf >= simpar_schedule_n_buffers(sched))
        return check_fail(error, SIMPAR_SCHEDULE_ERROR_BOUNDS, i, op,
                          "names buffer %u, which does not exist", a->buf);
    const SimparBuffer *b = simpar_schedule_buffer(sched, a->buf);
    if (b->rank == op->rank && a->off <= b->elems && a->len <= b->elems - a->off)
        return TRUE;
    return check_fail(error, SIMPAR_SCHEDULE_ERROR_BOUNDS, i, op,
                      "touches elements [%zu, %zu) of buffer '%s' of rank %u, which holds %zu",
                      a->off, access_add_sizes(a->off, a->len), b->name, b->rank, b->elems);
}

static gboolean
check_op(const SimparSchedule *sched, guint i, GError **error)
{
    const SimparOp *op = simpar_schedule_op(sched, i);
    if (op->kind >= SIMPAR_N_OP_KINDS)
        return check_fail(error, SIMPAR_SCHEDULE_ERROR_INVALID, i, op, "has unknown kind %d",
                          (int) op->kind);
    if (op->kind == SIMPAR_OP_COLLECTIVE && !check_coll_op(sched, i, op, error))
        return FALSE;
    if ((op->kind == SIMPAR_OP_SEND || op->kind == SIMPAR_OP_RECV) &&
        op->u.p2p.peer >= simpar_schedule_n_ranks(sched))
        return check_fail(error, SIMPAR_SCHEDULE_ERROR_UNMATCHED, i, op,
                          "names peer rank %u, which does not exist", op->u.p2p.peer);
    if (!check_params(i, op, error))
        return FALSE;
    SimparAccess acc[SIMPAR_MAX_ACCESSES];
    guint n = simpar_op_accesses(sched, op, acc);
    for (guint a = 0; a < n; a++)
        if (!check_access(sched, i, op, &acc[a], error))
            return FALSE;
    return TRUE;
}

/* For each group, the collective ops of each member in program order. */
typedef struct {
    const SimparSchedule *sched;
    GArray **calls;  /* [group * n_ranks + member index] -> guint op indices */
    guint *instance; /* per op: index of its call on its group; or p2p partner op */
    guint *arrived;  /* [group][instance] arrivals, flattened through `inst_base` */
    guint *inst_base;
} CheckState;

static GArray *
check_calls(CheckState *st, guint group, guint member)
{
    return st->calls[group * simpar_schedule_n_ranks(st->sched) + member];
}

static void
check_collect_calls(CheckState *st)
{
    const SimparSchedule *sched = st->sched;
    for (guint r = 0; r < simpar_schedule_n_ranks(sched); r++) {
        guint n;
        const guint *ops = simpar_schedule_rank_ops(sched, r, &n);
        for (guint i = 0; i < n; i++) {
            const SimparOp *op = simpar_schedule_op(sched, ops[i]);
            if (op->kind != SIMPAR_OP_COLLECTIVE)
                continue;
            const SimparColl *c = &op->u.coll; /* membership checked by check_op */
            GArray *calls = check_calls(st, c->group, simpar_group_index(sched, c->group, r));
            st->instance[ops[i]] = calls->len;
            g_array_append_val(calls, ops[i]);
        }
    }
}

/* Reduction ops were checked by check_coll_op. */
static const char *
check_red_name(SimparRedOp red)
{
    return red == SIMPAR_RED_MAX ? "max" : "sum";
}

static gboolean
check_same_call(const SimparSchedule *sched, const SimparOp *a, const SimparOp *b, guint call,
                GError **error)
{
    const SimparColl *ca = &a->u.coll, *cb = &b->u.coll;
    if (ca->kind == cb->kind && ca->count == cb->count && ca->root == cb->root &&
        ca->red == cb->red)
        return TRUE;
    g_set_error(error, SIMPAR_SCHEDULE_ERROR, SIMPAR_SCHEDULE_ERROR_MISMATCH,
                "call %u on group %u (%s): rank %u issues '%s' (%s %s, %zu elements, root %u) "
                "but rank %u issues '%s' (%s %s, %zu elements, root %u)",
                call, ca->group, simpar_schedule_group(sched, ca->group)->axis, a->rank, a->name,
                simpar_coll_kind_name(ca->kind), check_red_name(ca->red), ca->count, ca->root,
                b->rank, b->name, simpar_coll_kind_name(cb->kind), check_red_name(cb->red),
                cb->count, cb->root);
    return FALSE;
}

static gboolean
check_match_calls(CheckState *st, GError **error)
{
    const SimparSchedule *sched = st->sched;
    guint base = 0;
    for (guint g = 0; g < simpar_schedule_n_groups(sched); g++) {
        const SimparGroup *grp = simpar_schedule_group(sched, g);
        const guint *ranks = simpar_schedule_group_ranks(sched, g);
        GArray *first = check_calls(st, g, 0);
        st->inst_base[g] = base;
        base += first->len;
        for (guint m = 1; m < grp->size; m++) {
            GArray *calls = check_calls(st, g, m);
            if (calls->len != first->len) {
                g_set_error(error, SIMPAR_SCHEDULE_ERROR, SIMPAR_SCHEDULE_ERROR_MISMATCH,
                            "group %u (%s): rank %u makes %u collective calls but rank %u makes %u",
                            g, grp->axis, ranks[0], first->len, ranks[m], calls->len);
                return FALSE;
            }
            for (guint c = 0; c < calls->len; c++)
                if (!check_same_call(
                        sched, simpar_schedule_op(sched, g_array_index(first, guint, c)),
                        simpar_schedule_op(sched, g_array_index(calls, guint, c)), c, error))
                    return FALSE;
        }
    }
    st->arrived = g_new0(guint, base + 1);
    return TRUE;
}

/* Sends and recvs pair up in FIFO order per (src, dst, tag). */
static gboolean
check_match_p2p(CheckState *st, GError **error)
{
    const SimparSchedule *sched = st->sched;
    g_autoptr(GHashTable) queues =
        g_hash_table_new_full(g_str_hash, g_str_equal, g_free, (GDestroyNotify) g_queue_free);
    for (guint i = 0; i < simpar_schedule_n_ops(sched); i++) {
        const SimparOp *op = simpar_schedule_op(sched, i);
        if (op->kind != SIMPAR_OP_SEND && op->kind != SIMPAR_OP_RECV)
            continue;
        gboolean send = op->kind == SIMPAR_OP_SEND;
        guint src = send ? op->rank : op->u.p2p.peer, dst = send ? op->u.p2p.peer : op->rank;
        char *key = g_strdup_printf("%u>%u#%u%c", src, dst, op->u.p2p.tag, send ? 's' : 'r');
        GQueue *q = g_hash_table_lookup(queues, key);
        if (q == NULL) {
            q = g_queue_new();
            g_hash_table_insert(queues, g_strdup(key), q);
        }
        g_free(key);
        g_queue_push_tail(q, GUINT_TO_POINTER(i));
    }
    GHashTableIter it;
    gpointer key, value;
    g_hash_table_iter_init(&it, queues);
    while (g_hash_table_iter_next(&it, &key, &value)) {
        char *k = key;
        if (k[strlen(k) - 1] != 's')
            continue;
        g_autofree char *rkey = g_strdup(k);
        rkey[strlen(rkey) - 1] = 'r';
        GQueue *sends = value, *recvs = g_hash_table_lookup(queues, rkey);
        guint nr = recvs != NULL ? recvs->length : 0;
        if (sends->length != nr) {
            const SimparOp *op =
                simpar_schedule_op(sched, GPOINTER_TO_UINT(g_queue_peek_head(sends)));
            g_set_error(error, SIMPAR_SCHEDULE_ERROR, SIMPAR_SCHEDULE_ERROR_UNMATCHED,
                        "rank %u sends %u messages to rank %u with tag %u ('%s') but %u are "
                        "received",
                        op->rank, sends->length, op->u.p2p.peer, op->u.p2p.tag, op->name, nr);
            return FALSE;
        }
        for (GList *s = sends->head, *r = recvs->head; s != NULL; s = s->next, r = r->next) {
            guint so = GPOINTER_TO_UINT(s->data), ro = GPOINTER_TO_UINT(r->data);
            if (simpar_schedule_op(sched, so)->u.p2p.count !=
                simpar_schedule_op(sched, ro)->u.p2p.count) {
                g_set_error(error, SIMPAR_SCHEDULE_ERROR, SIMPAR_SCHEDULE_ERROR_UNMATCHED,
                            "send '%s' and recv '%s' pair up but their counts differ",
                            simpar_schedule_op(sched, so)->name,
                            simpar_schedule_op(sched, ro)->name);
                return FALSE;
            }
            st->instance[so] = ro;
            st->instance[ro] = so;
        }
    }
    /* recvs without any send */
    g_hash_table_iter_init(&it, queues);
    while (g_hash_table_iter_next(&it, &key, &value)) {
        char *k = key;
        g_autofree char *skey = g_strdup(k);
        skey[strlen(skey) - 1] = 's';
        if (k[strlen(k) - 1] == 'r' && !g_hash_table_contains(queues, skey)) {
            const SimparOp *op =
                simpar_schedule_op(sched, GPOINTER_TO_UINT(g_queue_peek_head(value)));
            g_set_error(error, SIMPAR_SCHEDULE_ERROR, SIMPAR_SCHEDULE_ERROR_UNMATCHED,
                        "rank %u waits for a message from rank %u with tag %u ('%s') that is "
                        "never sent",
                        op->rank, op->u.p2p.peer, op->u.p2p.tag, op->name);
            return FALSE;
        }
    }
    return TRUE;
}

/* ----- runs to completion: a zero-time execution of every stream ----- */

typedef struct {
    GArray **lists; /* [rank * n_streams + stream] -> op indices in program order */
    guint *cursor;
    gboolean *done, *arrived;
} RunState;

static gboolean
run_deps_done(const SimparSchedule *sched, const RunState *rs, const SimparOp *op)
{
    const guint *deps = simpar_schedule_deps(sched, op);
    for (guint d = 0; d < op->n_deps; d++)
        if (!rs->done[deps[d]])
            return FALSE;
    return TRUE;
}

/* Tries to finish op `o`; returns TRUE if it is done. Marks arrival of sync ops. */
static gboolean
run_try(CheckState *st, RunState *rs, guint o)
{
    const SimparOp *op = simpar_schedule_op(st->sched, o);
    if (!run_deps_done(st->sched, rs, op))
        return FALSE;
    if (op->kind == SIMPAR_OP_COLLECTIVE) {
        guint slot = st->inst_base[op->u.coll.group] + st->instance[o];
        if (!rs->arrived[o]) {
            rs->arrived[o] = TRUE;
            st->arrived[slot]++;
        }
        return st->arrived[slot] == simpar_schedule_group(st->sched, op->u.coll.group)->size;
    }
    if (op->kind == SIMPAR_OP_SEND || op->kind == SIMPAR_OP_RECV) {
        rs->arrived[o] = TRUE;
        return rs->arrived[st->instance[o]];
    }
    return TRUE;
}

static gboolean
run_pass(CheckState *st, RunState *rs, guint n_lists)
{
    gboolean progress = FALSE;
    for (guint l = 0; l < n_lists; l++) {
        GArray *list = rs->lists[l];
        while (rs->cursor[l] < list->len) {
            guint o = g_array_index(list, guint, rs->cursor[l]);
            gboolean was = rs->arrived[o];
            if (!run_try(st, rs, o)) {
                progress = progress || rs->arrived[o] != was;
                break;
            }
            rs->done[o] = TRUE;
            rs->cursor[l]++;
            progress = TRUE;
        }
    }
    return progress;
}

static gboolean
run_report(const SimparSchedule *sched, RunState *rs, guint n_lists, GError **error)
{
    guint ns = simpar_schedule_n_streams(sched);
    for (guint l = 0; l < n_lists; l++) {
        if (rs->cursor[l] == rs->lists[l]->len)
            continue;
        const SimparOp *op =
            simpar_schedule_op(sched, g_array_index(rs->lists[l], guint, rs->cursor[l]));
        g_set_error(error, SIMPAR_SCHEDULE_ERROR, SIMPAR_SCHEDULE_ERROR_CYCLE,
                    "the schedule cannot run to completion: rank %u, stream '%s' waits forever "
                    "at op '%s' (%s)",
                    l / ns, simpar_schedule_stream_name(sched, l % ns), op->name,
                    simpar_op_kind_name(op->kind));
        return FALSE;
    }
    return TRUE;
}

static gboolean
check_runs(CheckState *st, GError **error)
{
    const SimparSchedule *sched = st->sched;
    guint ns = simpar_schedule_n_streams(sched), n_lists = simpar_schedule_n_ranks(sched) * ns;
    guint n_ops = simpar_schedule_n_ops(sched);
    RunState rs = {g_new0(GArray *, n_lists), g_new0(guint, n_lists), g_new0(gboolean, n_ops),
                   g_new0(gboolean, n_ops)};
    for (guint l = 0; l < n_lists; l++)
        rs.lists[l] = g_array_new(FALSE, FALSE, sizeof(guint));
    for (guint r = 0; r < simpar_schedule_n_ranks(sched); r++) {
        guint n;
        const guint *ops = simpar_schedule_rank_ops(sched, r, &n);
        for (guint i = 0; i < n; i++)
            g_array_append_val(rs.lists[r * ns + simpar_schedule_op(sched, ops[i])->stream],
                               ops[i]);
    }
    while (run_pass(st, &rs, n_lists))
        ;
    gboolean ok = run_report(sched, &rs, n_lists, error);
    for (guint l = 0; l < n_lists; l++)
        g_array_unref(rs.lists[l]);
    g_free(rs.lists);
    g_free(rs.cursor);
    g_free(rs.done);
    g_free(rs.arrived);
    return ok;
}

gboolean
simpar_schedule_check(const SimparSchedule *sched, GError **error)
{
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    for (guint i = 0; i < simpar_schedule_n_ops(sched); i++)
        if (!check_op(sched, i, error))
            return FALSE;
    guint n_ranks = simpar_schedule_n_ranks(sched), n_groups = simpar_schedule_n_groups(sched);
    CheckState st = {sched, g_new0(GArray *, (gsize) n_groups * n_ranks + 1),
                     g_new0(guint, simpar_schedule_n_ops(sched) + 1), NULL,
                     g_new0(guint, n_groups + 1)};
    for (gsize i = 0; i < (gsize) n_groups * n_ranks; i++)
        st.calls[i] = g_array_new(FALSE, FALSE, sizeof(guint));
    check_collect_calls(&st);
    gboolean ok =
        check_match_calls(&st, error) && check_match_p2p(&st, error) && check_runs(&st, error);
    for (gsize i = 0; i < (gsize) n_groups * n_ranks; i++)
        g_array_unref(st.calls[i]);
    g_free(st.calls);
    g_free(st.instance);
    g_free(st.arrived);
    g_free(st.inst_base);
    return ok;
}

/* ----- hazards: happens-before within a rank ----- */

static gboolean
hazard_rank(const SimparSchedule *sched, guint rank, GError **error)
{
    guint n;
    const guint *ops = simpar_schedule_rank_ops(sched, rank, &n);
    guint words = (n + 63) / 64;
    g_autofree guint64 *before = g_new0(guint64, (gsize) n * words); /* before[p] bitset */
    g_autoptr(GHashTable) pos = g_hash_table_new(NULL, NULL);
    g_autofree guint *last = g_new(guint, simpar_schedule_n_streams(sched));
    memset(last, 0xff, sizeof(guint) * simpar_schedule_n_streams(sched));
    for (guint p = 0; p < n; p++) {
        const SimparOp *op = simpar_schedule_op(sched, ops[p]);
        g_hash_table_insert(pos, GUINT_TO_POINTER(ops[p]), GUINT_TO_POINTER(p));
        guint64 *bp = before + (gsize) p * words;
        const guint *deps = simpar_schedule_deps(sched, op);
        for (guint d = 0; d <= op->n_deps; d++) { /* the stream predecessor, then every dep */
            guint q = d == op->n_deps
                          ? last[op->stream]
                          : GPOINTER_TO_UINT(g_hash_table_lookup(pos, GUINT_TO_POINTER(deps[d])));
            if (q == G_MAXUINT)
                continue;
            const guint64 *bq = before + (gsize) q * words;
            for (guint w = 0; w < words; w++)
                bp[w] |= bq[w];
            bp[q / 64] |= G_GUINT64_CONSTANT(1) << (q % 64);
        }
        last[op->stream] = p;
        SimparAccess a[SIMPAR_MAX_ACCESSES], b[SIMPAR_MAX_ACCESSES];
        guint na = simpar_op_accesses(sched, op, a);
        for (guint q = 0; q < p; q++) {
            if (bp[q / 64] & (G_GUINT64_CONSTANT(1) << (q % 64)))
                continue;
            const SimparOp *other = simpar_schedule_op(sched, ops[q]);
            guint nb = simpar_op_accesses(sched, other, b);
            if (simpar_accesses_conflict(a, na, b, nb)) {
                g_set_error(error, SIMPAR_SCHEDULE_ERROR, SIMPAR_SCHEDULE_ERROR_HAZARD,
                            "rank %u: '%s' (stream '%s') and '%s' (stream '%s') touch the same "
                            "elements, one writes, and nothing orders them",
                            rank, other->name, simpar_schedule_stream_name(sched, other->stream),
                            op->name, simpar_schedule_stream_name(sched, op->stream));
                return FALSE;
            }
        }
    }
    return TRUE;
}

gboolean
simpar_schedule_check_hazards(const SimparSchedule *sched, GError **error)
{
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    for (guint r = 0; r < simpar_schedule_n_ranks(sched); r++)
        if (!hazard_rank(sched, r, error))
            return FALSE;
    return TRUE;
}
