/* step-formula-flow.c - a pipeline of one chain from its stages' item times, whatever their
 * layers: GPipe in closed form, 1F1B by its longest-path recurrence over the items (see
 * step-formula-private.h and docs/proofs.md).
 *
 * With one chain, one chunk per stage and no reduction before the last backward, an item of
 * stage p (a forward or backward of one micro-batch: its recv's message, collectives and
 * blocks one after another on the compute stream) ends at
 *
 *   end = max(end of the stage's item before, end of the same item on the stage it receives
 *         from) + its time                     (a send ends with its recv, before the next)
 *
 * from the zero-grad op's end on. Under GPipe (every forward, then every backward) the two
 * phases are flow shops whose ends are longest paths:
 *
 *   F(p, 0)  = max(F(p - 1, 0), zero-grad end of p) + s0(p)       s0: item 0 (FP8 casts)
 *   F(p, j)  = max over k <= p of F(k, 0) + s(k..p) + (j - 1) max s[k..p]
 *   B(p, 0)  = max(B(p + 1, 0), F(p, m - 1)) + sb(p)
 *   B(p, j)  = max over k >= p of B(k, 0) + sb(p..k) + (j - 1) max sb[p..k]
 *
 * 1F1B runs the recurrence over its steady rounds until one ends every item one common shift
 * after the round before, then puts its last steady round that many shifts on (the max-plus
 * state of a round is the round before it: flow_1f1b_rounds). The ops from each stage's last
 * backward on (the final micro-batch's reductions, the optimizer) are those of a step of 2
 * micro-batches whose last backward starts no earlier than that stage's end before it; what the
 * breakdown's rank did before is its items' figures times their count, its waits its bubble. */
#include "pipeline.h"
#include "step-formula-private.h"
#include <math.h>

/* A stage's items in a step of 2 micro-batches: forwards 0 and 1, backwards 0 and 1 (final). */
enum {
    FLOW_F0,
    FLOW_F1,
    FLOW_B0,
    FLOW_FINAL,
    FLOW_N_ITEMS
};

gboolean
formula_flow_applies(const Formula *f, guint m)
{
    gboolean kind = f->c.schedule == SIMPAR_PIPE_GPIPE || f->c.schedule == SIMPAR_PIPE_1F1B;
    /* 1F1B keeps 2 m P ends: up to 64 MiB (past that, periodic probes are cheaper) */
    guint64 items = (guint64) f->P * m;
    return kind && f->v == 1 && f->n_chains == 1 && f->P > 1 && m >= 3 &&
           (f->D == 1 || f->c.zero < 2) &&
           items <= (f->c.schedule == SIMPAR_PIPE_GPIPE ? G_MAXUINT / 4 : 1u << 22);
}

/* The compute-stream time of ops [a, b) one after another; with fig, `times` their figures as
 * the breakdown charges ops that wait for nothing, and their bytes. */
static double
flow_ops(const Formula *f, guint a, guint b, double times, double *fig)
{
    double sum = 0, one[FORMULA_N_FIGURES] = {0};
    for (guint i = a; i < b; i++) {
        const FormulaOp *op = &g_array_index(f->ops, FormulaOp, i);
        if (op->kind != FORMULA_BLOCK && op->kind != FORMULA_ADAM && op->kind != FORMULA_ZERO)
            one[FORMULA_BYTES] += op->bytes;
        if (op->stream != FORMULA_COMPUTE)
            continue;
        sum += op->a + op->b;
        formula_charge(f, op, 0, op->a + op->b, one);
    }
    for (guint k = 0; fig != NULL && k < FORMULA_CRIT; k++)
        fig[k] += times * one[k];
    return sum;
}

/* Item `item` (FLOW_*) of stage p in the step of 2 micro-batches: its first op, its end's. */
static void
flow_item(const Formula *f, guint p, guint item, guint *a, guint *b)
{
    g_autoptr(GArray) order =
        simpar_pipeline_order((SimparPipeSchedule) f->c.schedule, f->P, 1, 2, p);
    const guint *first = f->item_first + p * (FLOW_N_ITEMS + 1);
    for (guint i = 0; i < FLOW_N_ITEMS; i++) {
        const SimparPipeItem *it = &g_array_index(order, SimparPipeItem, i);
        if ((guint) it->backward * 2 + it->micro == item) {
            *a = first[i], *b = first[i + 1];
            return;
        }
    }
    g_assert_not_reached();
}

/* GPipe: the end of every stage's compute stream before its last backward, B(p, m - 2), into
 * r from the items' times t (zero, s0, s, sb: P each). */
static void
flow_gpipe(guint P, guint m, const double *t, double *r)
{
    const double *zero = t, *s0 = t + P, *s = t + 2 * P, *sb = t + 3 * P;
    g_autofree double *f0 = g_new(double, P), *a = g_new(double, P), *b0 = g_new(double, P);
    for (guint p = 0; p < P; p++) { /* the forwards' ends F(p, m - 1) */
        f0[p] = (p == 0 ? zero[0] : MAX(f0[p - 1], zero[p])) + s0[p];
        double sum = 0, top = 0, best = 0;
        for (guint k = p + 1; k-- > 0;) {
            sum += s[k], top = MAX(top, s[k]);
            best = MAX(best, f0[k] + sum + (m - 2) * top);
        }
        a[p] = best;
    }
    for (guint p = P; p-- > 0;) {
        b0[p] = (p + 1 == P ? a[p] : MAX(b0[p + 1], a[p])) + sb[p];
        double sum = 0, top = 0, best = 0;
        for (guint k = p; k < P; k++) {
            sum += sb[k], top = MAX(top, sb[k]);
            best = MAX(best, b0[k] + sum + (m - 3) * top);
        }
        r[p] = best;
    }
}

/* 1F1B's recurrence: its ends (2 P m: the forwards' then the backwards', stage-major; < 0 not
 * yet), each stage's compute stream free at r, the items' times t (zero, s0, s, sb: P each). */
typedef struct {
    guint P, m;
    const double *t;
    double *end, *r;
} Flow1f1b;

static double *
flow_end(const Flow1f1b *w, gboolean bwd, guint p, guint j)
{
    return &w->end[(bwd * (gsize) w->P + p) * w->m + j];
}

/* Item j of stage p, forward or backward: FALSE while the message it receives is not there. */
static gboolean
flow_1f1b_run(Flow1f1b *w, gboolean bwd, guint p, guint j)
{
    guint P = w->P;
    double in = w->r[p], dur = bwd ? w->t[3 * P + p] : j == 0 ? w->t[P + p] : w->t[2 * P + p];
    if (bwd ? p + 1 < P : p > 0) { /* from the stage after or before */
        double from = *flow_end(w, bwd, bwd ? p + 1 : p - 1, j);
        if (from < 0)
            return FALSE;
        in = MAX(in, from);
    }
    w->r[p] = *flow_end(w, bwd, p, j) = in + dur;
    return TRUE;
}

/* Whether steady round k (stage p's forward P - p - 1 + k and backward k) of every stage ends
 * one common shift after round k - 1, to FORMULA_AFFINE_TOL of the step so far. */
static gboolean
flow_1f1b_shifted(const Flow1f1b *w, guint k)
{
    double d = *flow_end(w, TRUE, 0, k) - *flow_end(w, TRUE, 0, k - 1);
    double tol = FORMULA_AFFINE_TOL * *flow_end(w, TRUE, 0, k);
    for (guint p = 0; p < w->P; p++) {
        guint f = w->P - p - 1 + k;
        double df = *flow_end(w, FALSE, p, f) - *flow_end(w, FALSE, p, f - 1);
        double db = *flow_end(w, TRUE, p, k) - *flow_end(w, TRUE, p, k - 1);
        if (fabs(df - d) > tol || fabs(db - d) > tol)
            return FALSE;
    }
    return TRUE;
}

/* The warm-ups, then the steady rounds k = 0 .. m - P that every stage runs (stage p's forward
 * P - p - 1 + k, which stage p - 1 ended in round k - 1, and backward k, which stage p + 1 ended
 * before it in round k). A round that ends every item of the round before one common shift
 * later is the max-plus state of the next, which then ends that shift later again: round m - P
 * is round k plus m - P - k shifts, item by item. Stage p then stands at item 2 (m - P + 1) +
 * P - p - 1 of its order. */
static void
flow_1f1b_rounds(Flow1f1b *w, guint *pos)
{
    guint P = w->P, last = w->m - P;
    gboolean ran = TRUE; /* every message is there: the stages run in their dependencies' order */
    for (guint p = 0; p < P; p++)
        for (guint j = 0; j < P - p - 1; j++)
            ran = flow_1f1b_run(w, FALSE, p, j) && ran;
    for (guint k = 0; k <= last; k++) {
        for (guint p = P; p-- > 0;)
            ran = flow_1f1b_run(w, FALSE, p, P - p - 1 + k) && flow_1f1b_run(w, TRUE, p, k) && ran;
        if (k < 2 || k == last || !flow_1f1b_shifted(w, k))
            continue;
        for (guint p = 0; p < P; p++) {
            guint f = P - p - 1 + k;
            for (guint b = 0; b < 2; b++) {
                double *at = flow_end(w, b, p, b ? k : f),
                       *before = flow_end(w, b, p, b ? k - 1 : f - 1);
                *flow_end(w, b, p, b ? last : f + last - k) = *at + (last - k) * (*at - *before);
            }
            w->r[p] = *flow_end(w, TRUE, p, last);
        }
        break;
    }
    g_assert(ran);
    for (guint p = 0; p < P; p++)
        pos[p] = 2 * (last + 1) + P - p - 1;
}

/* Item q of a 1F1B stage's order with warm-up w (pipeline.c's: w forwards, then forward w + i
 * and backward i in turn, then the backwards left): micro-batch *j, backward or not. */
static gboolean
flow_1f1b_item(guint m, guint w, guint q, guint *j)
{
    if (q < w || (q < 2 * m - w && (q - w) % 2 == 0)) {
        *j = q < w ? q : w + (q - w) / 2;
        return FALSE;
    }
    *j = q < 2 * m - w ? (q - w) / 2 : q - m;
    return TRUE;
}

/* 1F1B: the ends by the recurrence, each stage in its order as far as the stage it receives
 * from has gone, until every stage stands before its last backward (the steady rounds first,
 * flow_1f1b_rounds, when there are 3 or more). end: 2 P m. */
static void
flow_1f1b(guint P, guint m, const double *t, double *end, double *r)
{
    Flow1f1b w = {P, m, t, end, r};
    for (gsize i = 0; i < 2 * (gsize) P * m; i++)
        end[i] = -1;
    g_autofree guint *pos = g_new0(guint, 2 * P);
    guint *warm = pos + P;
    for (guint p = 0; p < P; p++)
        r[p] = t[p], warm[p] = simpar_pipeline_warmup(SIMPAR_PIPE_1F1B, P, 1, m, p);
    if (m >= P + 3)
        flow_1f1b_rounds(&w, pos);
    for (gboolean moved = TRUE; moved;) {
        moved = FALSE;
        for (guint p = 0; p < P; p++)
            for (; pos[p] + 1 < 2 * m; pos[p]++, moved = TRUE) {
                guint j;
                gboolean bwd = flow_1f1b_item(m, warm[p], pos[p], &j);
                if (!flow_1f1b_run(&w, bwd, p, j))
                    break;
            }
    }
    for (guint p = 0; p < P; p++)
        g_assert(pos[p] + 1 == 2 * m);
}

void
formula_flow(Formula *f, guint m, double *fig)
{
    g_assert(formula_flow_applies(f, m));
    guint P = f->P, a, b;
    formula_emit(f, 2, TRUE);
    g_autofree double *t = g_new(double, 5 * P);
    double *r = t + 4 * P;
    for (guint p = 0; p < P; p++) {
        guint zero = f->item_first[p * (FLOW_N_ITEMS + 1)] - 1; /* the stage's zero-grad op */
        g_assert(g_array_index(f->ops, FormulaOp, zero).kind == FORMULA_ZERO);
        t[p] = flow_ops(f, zero, zero + 1, 0, NULL);
        for (guint i = FLOW_F0; i < FLOW_FINAL; i++) {
            flow_item(f, p, i, &a, &b);
            t[(i + 1) * P + p] = flow_ops(f, a, b, 0, NULL);
        }
    }
    if (f->c.schedule == SIMPAR_PIPE_GPIPE)
        flow_gpipe(P, m, t, r);
    else { /* the ends in the cache's array, as formula_run's */
        GArray *end =
            simpar_predict_cache_scratch(f->cache, FORMULA_BUF_FLOW, sizeof(double), 2 * P * m);
        g_array_set_size(end, 2 * P * m);
        flow_1f1b(P, m, t, (double *) (void *) end->data, r);
        g_array_unref(end);
    }
    for (guint p = 0; p < P; p++) { /* the last backward waits for the m - 1 before it */
        flow_item(f, p, FLOW_FINAL, &a, &b);
        g_array_index(f->ops, FormulaOp, a).start = r[p];
    }
    formula_evaluate(f);
    formula_ends(f, fig);
    guint crit = (guint) fig[FORMULA_CRIT], zero = f->item_first[crit * (FLOW_N_ITEMS + 1)] - 1;
    double busy = flow_ops(f, zero, zero + 1, 1, fig);
    for (guint i = FLOW_F0; i < FLOW_FINAL; i++) {
        flow_item(f, crit, i, &a, &b);
        double n = i == FLOW_F0 ? 1 : m - 1;
        busy += flow_ops(f, a, b, n, fig) * n;
    }
    fig[FORMULA_BUBBLE] += r[crit] - busy; /* its recvs' waits */
    flow_item(f, crit, FLOW_FINAL, &a, &b);
    formula_walk(f, a, r[crit], fig);
    formula_done(f);
}
