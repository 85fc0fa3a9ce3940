/* backend-analytic.c - the schedule on an idle network, without SimGrid.
 *
 * Every (rank, stream) advances as far as its ops' inputs allow. A collective instance waits
 * for all of its members; then, in fused mode (the default), it starts when the last member
 * arrived and ends for all of them a closed form later; in exact mode its expansion is
 * evaluated from each member's own arrival (simpar_expansion_eval_idle), which is what the
 * SimGrid backend's exact mode computes on an idle network. The sweep repeats until every
 * instance has a span. Deterministic: no ties are broken by chance.
 */
#include "replay.h"

typedef struct {
    guint arrived; /* members that reached it */
    guint *inst;   /* by position in the group: the member's instance */
    double *ready; /* by position in the group: when the member reached it */
} AnalyticColl;

typedef struct {
    SimparReplay *r;
    SimparSpan *spans;
    guint *pos;             /* per (rank, stream): next position in its sequence */
    double *free_at;        /* per (rank, stream): when its previous op ended */
    gboolean *arrived;      /* per instance: a collective member has registered */
    AnalyticColl **pending; /* per group: the collective instances, by sequence number */
} Analytic;

/* When all deps of `inst` have ended, the latest end; a negative value while one has not. */
static double
analytic_deps_ready(const Analytic *a, guint inst, double t)
{
    const SimparReplay *r = a->r;
    const SimparOp *op = simpar_replay_op(r, inst);
    const guint *deps = simpar_schedule_deps(r->run->sched, op);
    guint base = inst - inst % r->n_ops;
    for (guint d = 0; d < op->n_deps; d++) {
        double end = a->spans[base + deps[d]].end;
        if (end < 0)
            return -1;
        t = MAX(t, end);
    }
    return t;
}

/* Gives every member of a complete collective instance its span. */
static void
analytic_finish(Analytic *a, guint coll, AnalyticColl *c)
{
    const SimparReplayColl *rc = &g_array_index(a->r->colls, SimparReplayColl, coll);
    guint n = rc->group.n;
    if (a->r->run->mode == SIMPAR_COLL_MODE_EXACT && n > 1) {
        g_autofree double *end = g_new(double, n);
        simpar_expansion_eval_idle(simpar_replay_expansion(a->r, coll), &rc->group, c->ready, end);
        for (guint m = 0; m < n; m++)
            a->spans[c->inst[m]] = (SimparSpan){c->ready[m], end[m]};
        return;
    }
    double start = 0;
    for (guint m = 0; m < n; m++)
        start = MAX(start, c->ready[m]);
    for (guint m = 0; m < n; m++)
        a->spans[c->inst[m]] = (SimparSpan){c->ready[m], start + rc->time_s};
}

/* Registers one member at a collective; the last one to arrive completes it. */
static void
analytic_arrive(Analytic *a, guint inst, double ready)
{
    const SimparReplay *r = a->r;
    const SimparOp *op = simpar_replay_op(r, inst);
    guint coll = r->coll_of_op[inst % r->n_ops], g = op->u.coll.group;
    guint n = simpar_schedule_group(r->run->sched, g)->size;
    AnalyticColl *c = &a->pending[g][r->coll_k[inst]];
    if (c->inst == NULL)
        c->inst = g_new(guint, n), c->ready = g_new(double, n);
    guint pos = simpar_group_index(r->run->sched, g, op->rank);
    c->inst[pos] = inst, c->ready[pos] = ready;
    a->arrived[inst] = TRUE;
    if (++c->arrived < n)
        return;
    analytic_finish(a, coll, c);
    g_clear_pointer(&c->inst, g_free);
    g_clear_pointer(&c->ready, g_free);
}

/* Advances one stream as far as it can; returns the number of ops it moved past. */
static guint
analytic_advance(Analytic *a, guint s)
{
    GArray *seq = a->r->seq[s];
    guint moved = 0;
    while (a->pos[s] < seq->len) {
        guint inst = g_array_index(seq, guint, a->pos[s]);
        const SimparOp *op = simpar_replay_op(a->r, inst);
        if (op->kind == SIMPAR_OP_COLLECTIVE && !a->arrived[inst]) {
            double ready = analytic_deps_ready(a, inst, a->free_at[s]);
            if (ready < 0)
                break;
            analytic_arrive(a, inst, ready);
        } else if (op->kind != SIMPAR_OP_COLLECTIVE) {
            g_assert(op->kind != SIMPAR_OP_SEND && op->kind != SIMPAR_OP_RECV);
            double ready = analytic_deps_ready(a, inst, a->free_at[s]);
            if (ready < 0)
                break;
            double dur = a->r->run->compute_s[inst % a->r->n_ops];
            a->spans[inst] = (SimparSpan){ready, ready + dur};
        }
        if (a->spans[inst].end < 0)
            break; /* a collective still waiting for members */
        a->free_at[s] = a->spans[inst].end;
        a->pos[s]++;
        moved++;
    }
    return moved;
}

static void
analytic_init(Analytic *a, SimparReplay *r, SimparSpan *spans)
{
    guint n_streams = r->n_ranks * r->n_streams;
    guint n_groups = simpar_schedule_n_groups(r->run->sched);
    *a = (Analytic){r,
                    spans,
                    g_new0(guint, n_streams),
                    g_new0(double, n_streams),
                    g_new0(gboolean, r->n_instances),
                    g_new(AnalyticColl *, n_groups)};
    for (guint g = 0; g < n_groups; g++)
        a->pending[g] = g_new0(AnalyticColl, r->group_calls[g]);
    for (guint i = 0; i < r->n_instances; i++)
        spans[i] = (SimparSpan){-1, -1};
}

static void
analytic_clear(Analytic *a)
{
    guint n_groups = simpar_schedule_n_groups(a->r->run->sched);
    for (guint g = 0; g < n_groups; g++)
        g_free(a->pending[g]);
    g_free(a->pending);
    g_free(a->pos);
    g_free(a->free_at);
    g_free(a->arrived);
}

void
simpar_backend_analytic_run(const SimparRun *run, SimparSpan *spans)
{
    g_autoptr(SimparReplay) r = simpar_replay_new(run);
    Analytic a;
    analytic_init(&a, r, spans);
    guint n_streams = r->n_ranks * r->n_streams, done = 0, total = 0;
    for (guint s = 0; s < n_streams; s++)
        total += r->seq[s]->len;
    while (done < total) {
        guint moved = 0;
        for (guint s = 0; s < n_streams; s++)
            moved += analytic_advance(&a, s);
        g_assert(moved > 0); /* the schedule check proved it runs to completion */
        done += moved;
    }
    analytic_clear(&a);
}
