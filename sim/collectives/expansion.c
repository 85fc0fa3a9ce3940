/* expansion.c - the expansion container (a collective member by member, round by round), its
 * per-peer fusion and its evaluation on an idle network.
 */
#include "collectives-private.h"
#include <math.h>
#include <stdlib.h>

/* ---- the expansion container -------------------------------------------------------------- */

/* The public struct plus the builder's cursor, like GArray / GRealArray. */
typedef struct {
    SimparExpansion pub;
    guint next; /* members [0, next) have begun; the current one is next - 1 */
    gboolean ended;
} SimparRealExpansion;

SimparExpansion *
simpar_expansion_new(guint n_members)
{
    SimparRealExpansion *re = g_new0(SimparRealExpansion, 1);
    re->pub.n_members = n_members;
    re->pub.rounds = g_array_new(FALSE, FALSE, sizeof(SimparRound));
    re->pub.xfers = g_array_new(FALSE, FALSE, sizeof(SimparXfer));
    re->pub.member_first = g_new0(guint, n_members + 1);
    return &re->pub; /* (transfer full) */
}

void
simpar_expansion_free(SimparExpansion *e)
{
    if (e == NULL)
        return;
    g_array_unref(e->rounds);
    g_array_unref(e->xfers);
    g_free(e->member_first);
    g_free((SimparRealExpansion *) e);
}

void
simpar_expansion_begin_member(SimparExpansion *e, guint member)
{
    SimparRealExpansion *re = (SimparRealExpansion *) e;
    g_return_if_fail(e != NULL && !re->ended);
    g_return_if_fail(member >= re->next && member < e->n_members);
    /* members skipped over have no rounds */
    for (guint m = re->next; m <= member; m++)
        e->member_first[m] = e->rounds->len;
    re->next = member + 1;
}

void
simpar_expansion_round(SimparExpansion *e, double delay_s)
{
    SimparRealExpansion *re = (SimparRealExpansion *) e;
    g_return_if_fail(e != NULL && !re->ended && re->next > 0);
    g_return_if_fail(delay_s >= 0.0);
    SimparRound r = {delay_s, e->xfers->len, 0};
    g_array_append_val(e->rounds, r);
}

void
simpar_expansion_xfer(SimparExpansion *e, guint peer, gboolean send, double bytes)
{
    simpar_expansion_xfer_timed(e, peer, send, bytes, 0);
}

void
simpar_expansion_xfer_timed(SimparExpansion *e, guint peer, gboolean send, double bytes,
                            double idle_s)
{
    SimparRealExpansion *re = (SimparRealExpansion *) e;
    g_return_if_fail(e != NULL && !re->ended && re->next > 0);
    g_return_if_fail(e->rounds->len > e->member_first[re->next - 1]); /* no round begun */
    g_return_if_fail(peer < e->n_members && peer != re->next - 1);
    g_return_if_fail(bytes >= 0.0 && idle_s >= 0.0);
    SimparXfer x = {peer, send, bytes, idle_s};
    g_array_append_val(e->xfers, x);
    g_array_index(e->rounds, SimparRound, e->rounds->len - 1).n++;
}

void
simpar_expansion_end(SimparExpansion *e)
{
    SimparRealExpansion *re = (SimparRealExpansion *) e;
    g_return_if_fail(e != NULL && !re->ended);
    for (guint m = re->next; m <= e->n_members; m++)
        e->member_first[m] = e->rounds->len;
    re->next = e->n_members;
    re->ended = TRUE;
}

/* ---- idle-network evaluation ------------------------------------------------------------- */

typedef struct {
    const SimparExpansion *e;
    const SimparCollGroup *g;
    guint *owner;  /* transfer -> index of its round in e->rounds */
    guint *match;  /* transfer -> the peer's transfer it pairs with */
    guint *cur;    /* member -> its current round; member_first[m + 1] once done */
    double *begin; /* round -> begin time, valid once its member has reached it */
    double *last;  /* member -> end of its last finished round */
    guint *queue;  /* members to look at again, a ring of n slots */
    gboolean *queued;
    guint head, len;
} EvalState;

typedef struct {
    guint64 pair; /* sender * n + receiver */
    guint xfer;
} EvalKey;

static int
eval_key_cmp(const void *a, const void *b)
{
    const EvalKey *x = a, *y = b;
    if (x->pair != y->pair)
        return x->pair < y->pair ? -1 : 1;
    return x->xfer < y->xfer ? -1 : x->xfer > y->xfer;
}

/* Pairs the k-th send from a to b with the k-th receive on b from a: transfers are stored
 * member by member in program order, so sorting by (pair, index) gives the FIFO order. */
static void
eval_match(EvalState *st)
{
    const SimparExpansion *e = st->e;
    guint nx = e->xfers->len, ns = 0, nr = 0;
    g_autofree EvalKey *sends = g_new(EvalKey, nx);
    g_autofree EvalKey *recvs = g_new(EvalKey, nx);
    for (guint m = 0; m < e->n_members; m++)
        for (guint r = e->member_first[m]; r < e->member_first[m + 1]; r++) {
            const SimparRound *rd = &g_array_index(e->rounds, SimparRound, r);
            for (guint i = rd->first; i < rd->first + rd->n; i++) {
                const SimparXfer *x = &g_array_index(e->xfers, SimparXfer, i);
                st->owner[i] = r;
                if (x->send)
                    sends[ns++] = (EvalKey){(guint64) m * e->n_members + x->peer, i};
                else
                    recvs[nr++] = (EvalKey){(guint64) x->peer * e->n_members + m, i};
            }
        }
    g_assert_cmpuint(ns, ==, nr); /* a send without its receive, or the reverse */
    if (ns == 0)
        return; /* g_new(.., 0) gave NULL, which qsort must not see */
    qsort(sends, ns, sizeof(EvalKey), eval_key_cmp);
    qsort(recvs, nr, sizeof(EvalKey), eval_key_cmp);
    for (guint k = 0; k < ns; k++) {
        g_assert(sends[k].pair == recvs[k].pair);
        double bs = g_array_index(e->xfers, SimparXfer, sends[k].xfer).bytes;
        double br = g_array_index(e->xfers, SimparXfer, recvs[k].xfer).bytes;
        g_assert(fabs(bs - br) <= 1e-9 * MAX(bs, br));
        st->match[sends[k].xfer] = recvs[k].xfer;
        st->match[recvs[k].xfer] = sends[k].xfer;
    }
}

static void
eval_push(EvalState *st, guint m)
{
    if (st->queued[m])
        return;
    st->queued[m] = TRUE;
    st->queue[(st->head + st->len++) % st->e->n_members] = m;
}

/* Member m has just reached round r: its begin is known, so peers blocked on it may go on. */
static void
eval_reach(EvalState *st, guint m, guint r, double prev_end)
{
    const SimparRound *rd = &g_array_index(st->e->rounds, SimparRound, r);
    st->cur[m] = r;
    st->begin[r] = prev_end + rd->delay_s;
    for (guint i = rd->first; i < rd->first + rd->n; i++)
        eval_push(st, g_array_index(st->e->xfers, SimparXfer, i).peer);
}

/* Finishes member m's current round if every peer has posted its side; FALSE if blocked. */
static gboolean
eval_round(EvalState *st, guint m)
{
    const SimparExpansion *e = st->e;
    guint r = st->cur[m];
    if (r == e->member_first[m + 1])
        return FALSE;
    const SimparRound *rd = &g_array_index(e->rounds, SimparRound, r);
    double end = st->begin[r];
    for (guint i = rd->first; i < rd->first + rd->n; i++) {
        const SimparXfer *x = &g_array_index(e->xfers, SimparXfer, i);
        guint pr = st->owner[st->match[i]];
        if (pr > st->cur[x->peer])
            return FALSE; /* the peer has not reached the round that posts it */
        double start = MAX(st->begin[r], st->begin[pr]);
        guint src = x->send ? m : x->peer, dst = x->send ? x->peer : m;
        double t = x->idle_s > 0 ? x->idle_s : simpar_coll_xfer_time(st->g, src, dst, x->bytes);
        end = MAX(end, start + t);
    }
    st->last[m] = end;
    st->cur[m] = r + 1;
    if (r + 1 < e->member_first[m + 1])
        eval_reach(st, m, r + 1, end);
    return TRUE;
}

void
simpar_expansion_fuse(const SimparExpansion *e, guint m, GArray *out)
{
    guint first = out->len;
    for (guint i = e->member_first[m]; i < e->member_first[m + 1]; i++) {
        const SimparRound *rd = &g_array_index(e->rounds, SimparRound, i);
        for (guint j = rd->first; j < rd->first + rd->n; j++) {
            const SimparXfer *x = &g_array_index(e->xfers, SimparXfer, j);
            guint f = first;
            while (f < out->len && (g_array_index(out, SimparXfer, f).peer != x->peer ||
                                    g_array_index(out, SimparXfer, f).send != x->send))
                f++;
            if (f == out->len) {
                SimparXfer sum = {x->peer, x->send, x->bytes, 0}; /* a sum has no round time */
                g_array_append_val(out, sum);
            } else
                g_array_index(out, SimparXfer, f).bytes += x->bytes;
        }
    }
}

void
simpar_expansion_eval_idle(const SimparExpansion *e, const SimparCollGroup *g, const double *start,
                           double *end)
{
    g_return_if_fail(e != NULL && simpar_coll_group_ok(g) && start != NULL && end != NULL);
    g_return_if_fail(g->n == e->n_members && e->member_first[e->n_members] == e->rounds->len);

    guint n = e->n_members, nx = e->xfers->len, nr = e->rounds->len;
    g_autofree guint *owner = g_new(guint, nx);
    g_autofree guint *match = g_new(guint, nx);
    g_autofree guint *cur = g_new(guint, n);
    g_autofree guint *queue = g_new(guint, n);
    g_autofree double *begin = g_new(double, nr);
    g_autofree gboolean *queued = g_new0(gboolean, n);
    EvalState st = {e, g, owner, match, cur, begin, end, queue, queued, 0, 0};
    eval_match(&st);
    for (guint m = 0; m < n; m++) {
        end[m] = start[m];
        cur[m] = e->member_first[m];
        eval_push(&st, m);
    }
    for (guint m = 0; m < n; m++)
        if (cur[m] < e->member_first[m + 1])
            eval_reach(&st, m, cur[m], start[m]);
    /* a worklist rather than recursion: a member runs until blocked and is woken when a peer
     * reaches a round it shares with it */
    while (st.len > 0) {
        guint m = queue[st.head];
        st.head = (st.head + 1) % n, st.len--, queued[m] = FALSE;
        while (eval_round(&st, m))
            ;
    }
    for (guint m = 0; m < n; m++)
        g_assert_cmpuint(cur[m], ==, e->member_first[m + 1]); /* deadlock */
}
