/* step-formula.c - the step from closed forms: the configuration, its collectives' closed forms,
 * one chain or every one, the figures at m (evaluated or extrapolated) and the row (see
 * step-formula.h; the ops are step-formula-ops.c's). */
#include "generators.h"
#include "pipeline.h"
#include "step-formula-private.h"
#include <math.h>
#include <string.h>

static const char *const formula_keys[FORMULA_N_KEYS] = {
    "layer.fwd", "layer.bwd",          "embed.fwd", "embed.bwd", "head.fwd",      "head.bwd",
    "fp8.cast",  "optimizer.tp-stats", "dense.fwd", "dense.bwd", "dense.fp8.cast"};

/* formula_keys interned once: the block times' tables are keyed by the interned names, and
 * interning them again for each configuration cost a sweep 2% of its time. */
static const char *const *
formula_interned_keys(void)
{
    static const char *interned[FORMULA_N_KEYS];
    static gsize done;
    if (g_once_init_enter(&done)) {
        for (guint k = 0; k < FORMULA_N_KEYS; k++)
            interned[k] = g_intern_static_string(formula_keys[k]);
        g_once_init_leave(&done, 1);
    }
    return interned;
}

/* ----- closed forms of collectives and Adam (memoised) ----- */

typedef struct {
    gint64 what, kind, elems, first, stride, n, T, D, P, st[3], proto, max_chunks;
    gint64 est[8]; /* formula_one_chain: the experts' strides, EP, ETP, whether they reduce */
    double chunk_bytes, dsize;
    const void *net, *algo;
} FormulaCollKey;

static void
formula_coll_key(const Formula *f, gint64 what, SimparCollKind kind, gsize elems, FormulaCollKey *k)
{
    memset(k, 0, sizeof *k);
    k->what = what, k->kind = kind, k->elems = (gint64) elems;
    k->T = f->T, k->D = f->D, k->P = f->P;
    memcpy(k->st, f->c.stride, sizeof k->st);
    k->proto = f->c.proto, k->max_chunks = f->c.max_chunks, k->chunk_bytes = f->c.chunk_bytes;
    k->dsize = f->c.dsize; /* a group's time is of elems x dsize bytes */
    k->net = f->c.net, k->algo = f->c.algo;
}

/* Member k of a group of shape sh, as a rank distance from its first. */
static guint
formula_member(const FormulaShape *sh, guint k)
{
    return k % sh->n * sh->stride + k / sh->n * sh->stride2;
}

/* A collective over GPUs first + member k (k < n n2), as the replay times it (replay.c). */
static double
formula_group_time(Formula *f, SimparCollKind kind, gsize elems, guint first,
                   const FormulaShape *sh)
{
    FormulaCollKey key; /* the group alone, whatever the split */
    formula_coll_key(f, 0, kind, elems, &key);
    key.T = key.D = key.P = key.st[2] = 0;
    key.first = first, key.stride = sh->stride, key.n = sh->n;
    key.st[0] = sh->stride2, key.st[1] = sh->n2; /* the outer axis (1: none) */
    double t;
    if (simpar_predict_cache_get(f->cache, &key, sizeof key, &t, sizeof t))
        return t;
    const SimparRun *run = &f->tm->base;
    guint n = sh->n * sh->n2;
    g_autofree guint *gpus = g_new(guint, n);
    for (guint k = 0; k < n; k++)
        gpus[k] = first + formula_member(sh, k);
    SimparCollGroup g = {n, gpus, run->net};
    double bytes = (double) elems * f->c.dsize;
    gboolean forced = run->algo != NULL && (run->algo->kinds & (1u << kind)) != 0;
    const SimparCollAlgo *algo = forced ? simpar_coll_runs_as(run->algo, &g)
                                        : simpar_coll_choose(kind, &g, bytes, &run->coll);
    t = n < 2 ? 0 : algo->closed_form(kind, &g, bytes, 0, &run->coll);
    simpar_predict_cache_put(f->cache, &key, sizeof key, &t, sizeof t);
    return t;
}

guint
formula_axis_size(const Formula *f, FormulaAxis axis)
{
    switch (axis) {
    case FORMULA_AXIS_DP:
    case FORMULA_AXIS_OPT_DP:
        return f->D;
    case FORMULA_AXIS_TP:
        return f->T;
    case FORMULA_AXIS_STATS:
        return f->c.zero == 0 ? f->P : f->D * f->P;
    case FORMULA_AXIS_EDP:
        return (guint) f->c.DE;
    default:
        return 2;
    }
}

/* The members of a group of `axis` as rank distances from its first: one axis, or ZeRO >= 1's
 * gradient statistics over (d, p), the axis of the smaller stride inside (models/step.c,
 * step_stats_member). */
static void
formula_axis_shape(const Formula *f, FormulaAxis axis, FormulaShape *sh)
{
    const gint64 *st = f->tr->stride;
    guint sd = (guint) st[SIMPAR_AXIS_DP], sp = (guint) st[SIMPAR_AXIS_PP];
    *sh = (FormulaShape){0, formula_axis_size(f, axis), 0, 1};
    if (axis == FORMULA_AXIS_EDP)
        sh->stride = (guint) f->c.expert_stride[SIMPAR_AXIS_DP];
    else if (axis == FORMULA_AXIS_STATS && f->c.zero >= 1 && f->D > 1 && f->P > 1)
        *sh = sp < sd ? (FormulaShape){sp, f->P, sd, f->D} : (FormulaShape){sd, f->D, sp, f->P};
    else if (axis == FORMULA_AXIS_STATS)
        sh->stride = f->c.zero >= 1 && f->P == 1 ? sd : sp;
    else
        sh->stride = axis == FORMULA_AXIS_DP || axis == FORMULA_AXIS_OPT_DP ? sd
                     : axis == FORMULA_AXIS_TP ? (guint) st[SIMPAR_AXIS_TP]
                                               : (f->P - 1) * sp;
}

guint
formula_edp_group(const Formula *f, guint rank, guint p, guint *first)
{
    const gint64 *es = f->c.expert_stride;
    guint etp = (guint) f->c.etp, ep = (guint) f->c.ep;
    guint e_tp = rank / (guint) es[SIMPAR_AXIS_TP] % etp,
          e_ep = rank / (guint) es[SIMPAR_AXIS_EP] % ep;
    *first = simpar_train_expert_rank(f->tr, e_tp, e_ep, 0, p);
    return (p * ep + e_ep) * etp + e_tp;
}

double
formula_coll_time(Formula *f, SimparCollKind kind, gsize count, FormulaAxis axis)
{
    guint n = formula_axis_size(f, axis);
    gboolean per_rank = kind == SIMPAR_COLL_ALL_GATHER || kind == SIMPAR_COLL_REDUCE_SCATTER;
    gboolean stats = axis == FORMULA_AXIS_STATS, over_d = axis == FORMULA_AXIS_DP ||
                                                          axis == FORMULA_AXIS_OPT_DP ||
                                                          (stats && f->c.zero >= 1);
    guint p = f->n_chains == 1 || axis == FORMULA_AXIS_EMBED || stats ? 0 : f->p; /* alike */
    guint first =
        simpar_train_rank(f->tr, axis == FORMULA_AXIS_TP ? 0 : f->t, over_d ? 0 : f->d, p);
    if (axis == FORMULA_AXIS_EDP)
        formula_edp_group(f, simpar_train_rank(f->tr, f->t, f->d, p), p, &first);
    FormulaShape sh;
    formula_axis_shape(f, axis, &sh);
    return formula_group_time(f, kind, per_rank ? count * n : count, first, &sh);
}

double
formula_adam_time(Formula *f, gsize count)
{
    struct {
        gint64 what, count, dtype;
        double gpu[6];
    } key;

    memset(&key, 0, sizeof key);
    key.what = 2, key.count = (gint64) count, key.dtype = f->c.dtype;
    memcpy(key.gpu, f->c.adam, sizeof key.gpu);
    double t;
    if (simpar_predict_cache_get(f->cache, &key, sizeof key, &t, sizeof t))
        return t;
    g_autoptr(SimparSchedule) s = simpar_schedule_new(1, (SimparDtype) f->c.dtype);
    SimparOp op = {.kind = SIMPAR_OP_ADAM, .name = "optimizer", .u.adam = {.count = count}};
    simpar_schedule_add_op(s, &op); /* simpar_compute_times() times it as the step's */
    simpar_compute_times(f->tm->gpu, s, f->tm->attn, &t);
    simpar_predict_cache_put(f->cache, &key, sizeof key, &t, sizeof t);
    return t;
}

/* models/step.c's zero-grad op of `count` gradients, as simpar_compute_times times it. */
double
formula_zero_time(Formula *f, gsize count)
{
    struct {
        gint64 what, count;
        double gpu[5];
    } key;

    memset(&key, 0, sizeof key);
    key.what = 3, key.count = (gint64) count;
    memcpy(key.gpu, f->c.zgrad, sizeof key.gpu);
    double t;
    if (simpar_predict_cache_get(f->cache, &key, sizeof key, &t, sizeof t))
        return t;
    g_autoptr(SimparSchedule) s = simpar_schedule_new(1, (SimparDtype) f->c.dtype);
    SimparOp op = {.kind = SIMPAR_OP_ZERO_GRAD,
                   .name = "optimizer.zero-grad",
                   .u.zero = {count, f->c.zgrad[4]}};
    simpar_schedule_add_op(s, &op);
    simpar_compute_times(f->tm->gpu, s, f->tm->attn, &t);
    simpar_predict_cache_put(f->cache, &key, sizeof key, &t, sizeof t);
    return t;
}

/* ----- one chain for all, or every chain ----- */

static gboolean
formula_route_equal(const SimparRoute *a, const SimparRoute *b)
{
    return a->lat_s == b->lat_s && a->bw_Bps == b->bw_Bps;
}

/* Whether the groups of GPUs a + member k and b + member k (formula_member) take the same time
 * in every closed form: member by member the same routes, and the same members sharing a node
 * (all that sim/collectives reads of a group). */
static gboolean
formula_groups_alike(const SimparNet *net, guint a, guint b, const FormulaShape *sh)
{
    guint n = sh->n * sh->n2;
    for (guint i = 0; i < n; i++)
        for (guint j = 0; j < n; j++) {
            guint mi = formula_member(sh, i), mj = formula_member(sh, j);
            guint ai = a + mi, aj = a + mj, bi = b + mi, bj = b + mj;
            SimparRoute ra, rb;
            if (i == j)
                continue;
            simpar_net_route(net, ai, aj, &ra);
            simpar_net_route(net, bi, bj, &rb);
            gboolean na = simpar_net_node(net, ai) == simpar_net_node(net, aj);
            if (!formula_route_equal(&ra, &rb) ||
                na != (simpar_net_node(net, bi) == simpar_net_node(net, bj)))
                return FALSE;
        }
    return TRUE;
}

/* Whether every group of `axis`, on every stage, is alike the first. */
static gboolean
formula_axis_alike(const Formula *f, FormulaAxis axis)
{
    guint ref = simpar_train_rank(f->tr, 0, 0, 0);
    FormulaShape sh;
    formula_axis_shape(f, axis, &sh);
    gboolean stats = axis == FORMULA_AXIS_STATS;
    guint n_t = axis == FORMULA_AXIS_TP ? 1 : f->T;
    guint n_d = axis == FORMULA_AXIS_DP || (stats && f->c.zero >= 1) ? 1 : f->D;
    guint n_p = axis == FORMULA_AXIS_EMBED || stats ? 1 : f->P;
    gboolean alike = TRUE;
    for (guint p = 0; p < n_p && alike; p++)
        for (guint t = 0; t < n_t && alike; t++)
            for (guint d = 0; d < n_d && alike; d++)
                alike = formula_groups_alike(f->tm->base.net, ref,
                                             simpar_train_rank(f->tr, t, d, p), &sh);
    return alike;
}

/* Whether every expert-data-parallel group, on every stage, is alike the first. */
static gboolean
formula_edp_alike(const Formula *f)
{
    FormulaShape sh;
    formula_axis_shape(f, FORMULA_AXIS_EDP, &sh);
    guint ref = simpar_train_expert_rank(f->tr, 0, 0, 0, 0);
    for (guint p = 0; p < f->P; p++)
        for (guint e = 0; e < f->c.ep * f->c.etp; e++)
            if (!formula_groups_alike(f->tm->base.net, ref,
                                      simpar_train_expert_rank(f->tr, e % (guint) f->c.etp,
                                                               e / (guint) f->c.etp, 0, p),
                                      &sh))
                return FALSE;
    return TRUE;
}

/* Whether every (t, d) has (0, 0)'s routes between neighbouring stages, both ways. */
static gboolean
formula_routes_alike(const Formula *f)
{
    const SimparNet *net = f->tm->base.net;
    for (guint p = 0; p < f->P && f->P > 1; p++) {
        guint q = (p + 1) % f->P;
        if (q == 0 && f->v == 1)
            continue; /* no boundary from the last stage to the first */
        SimparRoute there0, back0, there, back;
        guint a0 = simpar_train_rank(f->tr, 0, 0, p), b0 = simpar_train_rank(f->tr, 0, 0, q);
        simpar_net_route(net, a0, b0, &there0);
        simpar_net_route(net, b0, a0, &back0);
        for (guint i = 1; i < f->T * f->D; i++) {
            guint a = simpar_train_rank(f->tr, i % f->T, i / f->T, p);
            guint b = simpar_train_rank(f->tr, i % f->T, i / f->T, q);
            simpar_net_route(net, a, b, &there);
            simpar_net_route(net, b, a, &back);
            if (!formula_route_equal(&there, &there0) || !formula_route_equal(&back, &back0))
                return FALSE;
        }
    }
    return TRUE;
}

gboolean
formula_stats_group(const Formula *f)
{
    return f->c.n_scalars > 0 && f->c.scalars == SIMPAR_SCALARS_MEGATRON &&
           formula_axis_size(f, FORMULA_AXIS_STATS) > 1;
}

/* Whether the ranks of a stage all run alike (memoised per placement and layer shares). */
static gboolean
formula_one_chain(Formula *f, gboolean facts_alike)
{
    FormulaCollKey key;
    formula_coll_key(f, 3, 0, f->v > 1, &key);
    key.first = f->c.sg, key.stride = f->c.tied, key.n = facts_alike;
    key.kind = f->c.scalars * 4 + MIN(f->c.zero, 1); /* the gradient statistics' groups */
    memcpy(key.est, f->c.expert_stride, sizeof f->c.expert_stride); /* the experts' groups */
    key.est[5] = f->c.ep, key.est[6] = f->c.etp, key.est[7] = f->c.moe && f->c.DE > 1;
    gboolean alike;
    if (simpar_predict_cache_get(f->cache, &key, sizeof key, &alike, sizeof alike))
        return alike;
    alike = facts_alike && formula_routes_alike(f) &&
            (f->D == 1 || formula_axis_alike(f, FORMULA_AXIS_DP)) &&
            (!f->c.sg || formula_axis_alike(f, FORMULA_AXIS_TP)) &&
            (!f->c.tied || f->P == 1 || formula_axis_alike(f, FORMULA_AXIS_EMBED)) &&
            (!formula_stats_group(f) || formula_axis_alike(f, FORMULA_AXIS_STATS)) &&
            (!f->c.moe || f->c.DE == 1 || formula_edp_alike(f));
    simpar_predict_cache_put(f->cache, &key, sizeof key, &alike, sizeof alike);
    return alike;
}

/* The chains, their routes between stages and the lowest rank each (chain, stage) stands for. */
static void
formula_chains(Formula *f, gboolean one)
{
    const SimparNet *net = f->tm->base.net;
    f->n_chains = one ? 1 : f->T * f->D;
    guint n = f->n_chains * f->P;
    f->fwd = g_new0(SimparRoute, n), f->bwd = g_new0(SimparRoute, n);
    f->end_rank = g_new(guint, n);
    for (guint c = 0; c < f->n_chains; c++)
        for (guint p = 0; p < f->P; p++) {
            guint t = c % f->T, d = c / f->T, q = (p + 1) % f->P;
            guint a = simpar_train_rank(f->tr, t, d, p), b = simpar_train_rank(f->tr, t, d, q);
            f->end_rank[c * f->P + p] = a;
            if (f->P > 1) {
                simpar_net_route(net, a, b, &f->fwd[c * f->P + p]);
                simpar_net_route(net, b, a, &f->bwd[c * f->P + p]);
            }
        }
}

/* ----- figures at m: evaluated, or extrapolated from probes ----- */

static gboolean formula_evaluate_all; /* simpar_step_formula_evaluate_all */

void
simpar_step_formula_evaluate_all(gboolean on)
{
    formula_evaluate_all = on;
}

static guint
formula_n_ends(const Formula *f)
{
    return f->n_chains * f->P;
}

/* The figures at m (memoised per configuration): evaluated, or with `flow` from the stages'
 * item times (formula_flow). */
static void
formula_eval_at(Formula *f, guint m, gboolean flow, double *fig)
{
    gsize size = (FORMULA_N_FIGURES + formula_n_ends(f)) * sizeof(double);
    f->c.m = m, f->c.flow = flow;
    if (simpar_predict_cache_get(f->cache, &f->c, sizeof f->c, fig, size))
        return;
    memset(fig, 0, size);
    if (flow)
        formula_flow(f, m, fig);
    else
        formula_run(f, m, fig);
    simpar_predict_cache_put(f->cache, &f->c, sizeof f->c, fig, size);
}

static void
formula_at(Formula *f, guint m, double *fig)
{
    formula_eval_at(f, m, FALSE, fig);
}

/* Whether figure i of the probes p[0..3] (n figures each, at m0, m0 + u, m1, m1 + u) lies on
 * one line: the same slope at m0 and m1, and m0's value on m1's line k units back. */
static gboolean
formula_affine_at(const double *p, gsize n, guint i, guint k)
{
    double a = p[i], b = p[n + i], c = p[2 * n + i], d = p[3 * n + i];
    gboolean time = i != FORMULA_BYTES && i != FORMULA_LAYER_BLOCKS && i != FORMULA_DENSE_BLOCKS;
    double tol = FORMULA_AFFINE_TOL * (time ? p[3 * n + FORMULA_STEP] : fabs(d));
    return fabs((d - c) - (b - a)) <= tol && fabs(c - k * (d - c) - a) <= tol;
}

/* The rank that ends last at the probes stays so, at the extrapolated figures: ahead of every
 * other by more than rounding, or tied at every probe with one of a higher rank. */
static gboolean
formula_crit_holds(const Formula *f, const double *p, guint probes, gsize n, const double *fig)
{
    guint crit = (guint) fig[FORMULA_CRIT];
    const double *end = fig + FORMULA_N_FIGURES;
    double tol = FORMULA_AFFINE_TOL * fig[FORMULA_STEP];
    for (guint s = 0; s < formula_n_ends(f); s++) {
        gboolean tied = f->end_rank[s] > f->end_rank[crit];
        for (guint k = 0; k < probes; k++)
            tied = tied && p[k * n + FORMULA_N_FIGURES + s] == p[k * n + FORMULA_N_FIGURES + crit];
        if (s != crit && end[crit] - end[s] <= tol && !tied)
            return FALSE;
    }
    return TRUE;
}

/* fig = the probes' line `ahead` units past m1 (m1 is k units past m0); FALSE when the probes
 * do not lie on one line. */
static gboolean
formula_line(const Formula *f, const double *p, guint k, guint ahead, double *fig)
{
    gsize n = FORMULA_N_FIGURES + formula_n_ends(f);
    for (guint j = 1; j < 4; j++)
        if (p[j * n + FORMULA_CRIT] != p[FORMULA_CRIT])
            return FALSE;
    for (guint i = 0; i < n; i++) {
        if (i != FORMULA_CRIT && !formula_affine_at(p, n, i, k))
            return FALSE;
        double at = p[2 * n + i], slope = p[3 * n + i] - at;
        fig[i] = i == FORMULA_CRIT ? at : at + ahead * slope;
    }
    return formula_crit_holds(f, p, 4, n, fig);
}

guint
formula_period(const Formula *f)
{
    return f->c.schedule == SIMPAR_PIPE_INTERLEAVED ? (guint) f->c.vp_group : 1;
}

/* The fewest micro-batches (a multiple of the period u) whose step formula_periodic can find
 * periodic: 3 R + c units past stage 0's warm-up. */
static guint
formula_first_probe(const Formula *f)
{
    guint u = formula_period(f), c = u * f->v, reach = f->P * f->v + c;
    guint64 warm =
        f->c.schedule == SIMPAR_PIPE_GPIPE
            ? 0
            : simpar_pipeline_warmup_grouped((SimparPipeSchedule) f->c.schedule, f->P, f->v,
                                             G_MAXUINT16, (guint) f->c.vp_group, 0);
    guint64 items = warm + 3 * (guint64) reach + c, m = (items + f->v - 1) / f->v;
    return (guint) MIN((m + u - 1) / u * u, G_MAXUINT / 4);
}

/* fig = the figures k periods past probe p0, from p0 and p1 one period later, both in the
 * periodic regime: every figure moves by its change in a period, every end alike. */
static gboolean
formula_periods(const Formula *f, const double *p, guint k, double *fig)
{
    gsize n = FORMULA_N_FIGURES + formula_n_ends(f);
    const double *p0 = p, *p1 = p + n;
    double shift = p1[FORMULA_STEP] - p0[FORMULA_STEP];
    double tol = FORMULA_AFFINE_TOL * p1[FORMULA_STEP];
    if (p1[FORMULA_CRIT] != p0[FORMULA_CRIT])
        return FALSE;
    for (gsize s = FORMULA_N_FIGURES; s < n; s++)
        if (fabs(p1[s] - p0[s] - shift) > tol)
            return FALSE;
    for (gsize i = 0; i < n; i++)
        fig[i] = i == FORMULA_CRIT ? p0[i] : p0[i] + k * (p1[i] - p0[i]);
    return formula_crit_holds(f, p, 2, n, fig);
}

/* Uneven chunks: the figures at m from probes m_p, m_p + u where formula_periodic finds the
 * step periodic (m_p doubling from the first that can tell, while below m), else evaluated at
 * m. The probes are memoised with the configuration, so the rows of a sweep that differ in m
 * (the global batch) share them. */
static void
formula_periodic_at(Formula *f, guint m, double *fig)
{
    guint u = formula_period(f);
    gsize n = FORMULA_N_FIGURES + formula_n_ends(f);
    g_autofree double *p = g_new(double, 2 * n);
    guint64 step = MAX(u, (f->P * f->v + u * f->v) / 4 / u * u); /* a multiple of u */
    gboolean gpipe = f->c.schedule == SIMPAR_PIPE_GPIPE;
    for (guint64 mp = formula_first_probe(f); !gpipe && m % u == 0 && mp + u < m;
         mp += step, step *= 2) {
        formula_at(f, (guint) mp, p); /* below m */
        if (p[FORMULA_PERIODIC] == 0)
            continue;
        formula_at(f, (guint) mp + u, p + n);
        if (formula_periods(f, p, (guint) ((m - mp) / u), fig))
            return;
    }
    formula_at(f, m, fig);
}

/* The figures at m: from the probes m0, m0 + u, m1 = 2 m0, m1 + u when m lies past them, the
 * chunks are even and the probes lie on one line, else evaluated. m0: two rounds of the pipeline
 * past its start (its warm-up is at most 2 (P - 1) + (v - 1) N forwards), in whole groups of u
 * micro-batches (interleaved: its groups of N; a last group of another size is not on their line:
 * evaluated). */
static void
formula_figures_at(Formula *f, guint m, double *fig)
{
    guint u = f->c.schedule == SIMPAR_PIPE_INTERLEAVED ? (guint) f->c.vp_group : 1;
    guint m0 = (2 * f->P * f->v + u - 1) / u * u, m1 = 2 * m0;
    if (formula_evaluate_all) {
        formula_at(f, m, fig);
        return;
    }
    /* uneven chunks: the stages ahead of the slowest one fill their in-flight windows for
     * longer than two rounds, and probes at m0 and m1 can lie on a line the step leaves later
     * (24 layers over 16 stages at m = 256: 0.37% off): from the stages' item times where
     * formula_flow takes the step (GPipe, 1F1B), else from probes known periodic */
    if (f->lc == 0) {
        if (formula_flow_applies(f, m))
            formula_eval_at(f, m, TRUE, fig);
        else
            formula_periodic_at(f, m, fig);
        return;
    }
    if (m <= m1 + u || m % u != 0) {
        formula_at(f, m, fig);
        return;
    }
    gsize n = FORMULA_N_FIGURES + formula_n_ends(f);
    g_autofree double *p = g_new(double, 4 * n);
    const guint at[] = {m0, m0 + u, m1, m1 + u};
    for (guint j = 0; j < 4; j++)
        formula_at(f, at[j], p + j * n);
    if (!formula_line(f, p, (m1 - m0) / u, (m - m1) / u, fig))
        formula_at(f, m, fig);
}

/* ----- the step ----- */

/* Everything the figures depend on but m: the memo key. */
static void
formula_config(Formula *f, const SimparBlockTimes *bt, const SimparModel *model,
               const SimparSchedule *layer)
{
    const SimparTrain *tr = f->tr;
    const SimparRun *run = &f->tm->base;
    const SimparGpu *gpu = f->tm->gpu;
    FormulaConfig *c = &f->c;
    memset(c, 0, sizeof *c);
    c->T = f->T, c->P = f->P, c->D = f->D, c->v = f->v, c->lc = f->lc;
    c->first_layers = tr->first_stage_layers, c->last_layers = tr->last_stage_layers;
    c->accounted = tr->account_embedding + 2 * (gint64) tr->account_loss;
    c->split = tr->split;
    c->zero = tr->zero, c->sg = tr->scatter_gather && f->T > 1;
    c->overlap = tr->overlap_grad_reduce, c->tied = tr->tied_embeddings;
    c->bucket_params = tr->bucket_params, c->schedule = tr->schedule;
    c->vp_group = simpar_train_vp_group(tr);
    memcpy(c->stride, tr->stride, sizeof c->stride);
    c->hidden = model->hidden, c->heads = model->heads, c->seq = model->seq;
    c->micro_batch = model->micro_batch, c->layers = model->layers, c->ffn = model->ffn;
    c->kv_heads = simpar_model_kv_heads(model), c->mlp = model->mlp, c->norm = model->norm;
    c->no_bias = model->no_bias, c->fp8 = model->fp8;
    c->vocab = model->vocab, c->tp_mode = tr->tp.gen, c->q = tr->tp.q;
    c->recompute = tr->tp.recompute + 8 * (gint64) tr->tp.recompute_modules; /* plan.h */
    c->sp = tr->tp.sequence_parallel, c->depth = tr->tp.depth;
    c->paper = tr->tp.paper_3d;
    c->ends = (model->vocab + f->T - 1) / f->T * model->hidden; /* vocabulary-parallel ends */
    c->dtype = simpar_schedule_dtype(layer), c->dsize = simpar_dtype_size(c->dtype);
    c->proto = run->coll.proto, c->max_chunks = run->coll.max_chunks;
    c->chunk_bytes = run->coll.chunk_bytes, c->mode = run->mode;
    c->net = run->net, c->algo = run->algo;
    const char *const *keys = formula_interned_keys(); /* simpar_block_time's lookups */
    for (guint k = 0; k < FORMULA_N_KEYS; k++) {
        const double *t = g_hash_table_lookup(bt->time_s, keys[k]);
        const double *share = g_hash_table_lookup(bt->compute_s, keys[k]);
        c->block_s[k] = t != NULL ? *t : 0.0;
        c->block_c[k] = share != NULL ? *share : 0;
    }
    c->adam[0] = gpu->peak_flops[SIMPAR_DTYPE_FP32], c->adam[1] = gpu->peak_flops[c->dtype];
    c->adam[2] = simpar_compute_op_bandwidth(gpu, SIMPAR_OP_ADAM);
    c->adam[3] = gpu->launch_s, c->adam[4] = simpar_compute_op_floor(gpu, SIMPAR_OP_ADAM);
    c->adam[5] = gpu->kernel_set; /* the framework's optimizer passes (compute.c) */
    c->zgrad[0] = simpar_compute_op_bandwidth(gpu, SIMPAR_OP_ZERO_GRAD);
    c->zgrad[1] = gpu->launch_s, c->zgrad[2] = simpar_compute_op_floor(gpu, SIMPAR_OP_ZERO_GRAD);
    c->zgrad[3] = gpu->kernel_set;
    c->zgrad[4] = simpar_train_grad_buffer_bytes(tr, model->dtype);
    SimparTrain with = *tr; /* the kernel set's framework's scalar all-reduces */
    with.scalars = c->scalars = simpar_step_scalars_of(gpu);
    c->n_scalars = simpar_step_n_scalars(&with, (SimparDtype) c->dtype);
    c->pg8 = 1; /* models/step.c's */
    if (tr->fp8_param_gather) {
        double lin = simpar_model_layer_weights(model);
        double fp8 = model->fp8 == SIMPAR_FP8_MXFP8 ? 1 + 1.0 / 32 : 1; /* bytes per weight */
        c->pg8 = 1 - lin / (lin + simpar_model_layer_small_params(model)) *
                         (1 - fp8 / simpar_dtype_size(model->dtype));
    }
    c->moe = simpar_model_is_moe(model);
    c->DE = c->moe ? simpar_train_expert_replicas(tr) : 1;
    c->ep = MAX(tr->ep, 1), c->etp = MAX(tr->etp, 1);
    memcpy(c->expert_stride, tr->expert_stride, sizeof c->expert_stride);
    c->dense_layers = model->moe.dense_layers, c->moe_every = model->moe.moe_every;
}

/* The layer's shares per tensor-parallel rank; FALSE when they differ where they must not:
 * scatter/gather's all-gather sums the ranks' shares of the activation. *alike: all equal. */
static gboolean
formula_facts(Formula *f, const SimparSchedule *layer, gboolean *alike)
{
    f->facts = simpar_schedule_rank_facts(layer);
    if (simpar_model_has_dense_layers(f->model)) { /* their parameters: the dense layer's */
        g_autoptr(SimparSchedule) dense = simpar_generate_dense_layer(f->model, &f->tr->tp, NULL);
        g_assert(dense != NULL); /* validated with the model (simpar_predict_config) */
        f->dense_facts = simpar_schedule_rank_facts(dense);
    }
    *alike = TRUE;
    for (guint t = 1; t < f->T; t++)
        *alike = *alike && f->facts[t].act_elems == f->facts[0].act_elems &&
                 f->facts[t].layer_params == f->facts[0].layer_params &&
                 f->facts[t].expert_params == f->facts[0].expert_params &&
                 (f->dense_facts == NULL ||
                  f->dense_facts[t].layer_params == f->dense_facts[0].layer_params);
    f->c.act = (gint64) f->facts[0].act_elems,
    f->c.layer_params = (gint64) f->facts[0].layer_params;
    f->c.le = (gint64) f->facts[0].expert_params;
    f->c.lpd = f->dense_facts != NULL ? (gint64) f->dense_facts[0].layer_params : 0;
    return *alike || !f->c.sg;
}

/* The row from the figures, as simpar_step_breakdown fills it. */
static void
formula_fill(const Formula *f, const double *fig, const SimparBlockTimes *bt,
             const SimparModel *model, SimparReportRow *row)
{
    row->step_s = fig[FORMULA_STEP];
    row->forward_s += fig[FORMULA_FORWARD], row->backward_s += fig[FORMULA_BACKWARD];
    row->compute_s += fig[FORMULA_COMPUTE_S], row->other_s += fig[FORMULA_OTHER];
    row->step.bubble_s += fig[FORMULA_BUBBLE], row->step.pp_p2p_s += fig[FORMULA_P2P];
    row->step.dp_exposed_s += fig[FORMULA_DP_EXPOSED];
    row->step.optimizer_s += fig[FORMULA_OPTIMIZER];
    row->step.fp8_cast_s += fig[FORMULA_FP8_CAST_S];
    row->comm_bytes_per_gpu += fig[FORMULA_BYTES];
    row->axes = g_array_new(FALSE, FALSE, sizeof(SimparAxisTime));
    guint gpus = f->T * f->P * f->D;
    g_autofree guint *job_gpus = g_new(guint, gpus);
    for (guint i = 0; i < gpus; i++)
        job_gpus[i] = i;
    SimparRun run = f->tm->base;
    run.gpus = job_gpus;
    simpar_step_breakdown_finish(&run, job_gpus, bt, model, f->tr, fig[FORMULA_TP_EXPOSED],
                                 fig[FORMULA_LAYER_BLOCKS], fig[FORMULA_DENSE_EXPOSED],
                                 fig[FORMULA_DENSE_BLOCKS], row);
}

/* The layers per chunk where every chunk runs the same layers (train->layers_per_chunk), else
 * 0: an MoE model's chunks of as many layers but other dense ones (--dense-layers, --moe-every)
 * take other times, uneven stages (formula_figures_at). */
static guint
formula_even_layers(const SimparModel *model, const SimparTrain *train)
{
    guint lc = (guint) train->layers_per_chunk;
    guint n_vs = (guint) (train->pp * train->virtual_stages);
    gint64 first0 = simpar_train_stage_first_layer(train, 0);
    for (guint vs = 1; vs < n_vs && lc > 0 && simpar_model_has_dense_layers(model); vs++) {
        gint64 first = simpar_train_stage_first_layer(train, vs);
        for (guint l = 0; l < lc; l++)
            if (simpar_model_layer_is_moe(model, first + l) !=
                simpar_model_layer_is_moe(model, first0 + l))
                return 0;
    }
    return lc;
}

/* The token dispatchers whose MoE layers the closed forms take: the layer's blocks time them
 * (step-predict.c), the step holds their parameters and their experts' reductions. A
 * dispatcher not listed here is replayed until its layer is checked against the replay. */
static gboolean
formula_dispatcher_covered(gint64 dispatcher)
{
    switch (dispatcher) {
    case SIMPAR_MOE_ALLTOALL:
    case SIMPAR_MOE_DEEPEP:
    case SIMPAR_MOE_ALLGATHER:
        return TRUE;
    default:
        return FALSE;
    }
}

/* What the closed forms cover; multi-token prediction, hybrid sharding, fp32 gradient
 * reductions, --overlap-param-gather (its buckets' gathers at the step's start, each layer's
 * first forward waiting for its own) and, for an MoE model, the merged 1F1B of
 * --overlap-moe-expert-parallel-comm (its layers' nodes on two streams) and other dispatchers than
 * formula_dispatcher_covered's are replayed. */
static gboolean
formula_supported(const SimparStepTimer *tm, const SimparModel *model, const SimparTrain *train)
{
    gboolean moe = simpar_model_is_moe(model);
    return model->mtp_layers == 0 && train->schedule != SIMPAR_PIPE_LOCAL && train->zero < 3 &&
           tm->base.mode == SIMPAR_COLL_MODE_FUSED &&
           simpar_train_shard_group(train) == (guint) train->dp && !train->grad_dtype_set &&
           simpar_plan_cp(&train->tp) == 1 && !train->overlap_param_gather &&
           (!moe || (!train->ep_overlap && formula_dispatcher_covered(train->moe_dispatcher)));
}

double
simpar_step_formula_bytes(const SimparStepTimer *tm, const SimparBlockTimes *bt,
                          const SimparModel *model, const SimparTrain *train,
                          const SimparSchedule *layer, SimparPredictCache *cache)
{
    if (!formula_supported(tm, model, train))
        return 0;
    Formula f = {.tm = tm, .tr = train, .model = model, .cache = cache};
    f.T = (guint) train->tp.tp, f.P = (guint) train->pp, f.D = (guint) train->dp;
    f.v = (guint) train->virtual_stages, f.lc = formula_even_layers(model, train);
    formula_config(&f, bt, model, layer);
    gboolean alike, ok = formula_facts(&f, layer, &alike);
    double bytes = 0;
    if (ok) { /* formula_run's arrays at m itself: the ops (an array grown to a power of two) */
        double m = (double) train->micro_batches,
               chains = formula_one_chain(&f, alike) ? 1 : f.T * f.D;
        guint runs = 1; /* an MoE model's dense layers: a block per run of one kind */
        for (guint vs = 0; vs < f.P * f.v && f.dense_facts != NULL; vs++)
            runs = MAX(runs, formula_layer_runs_of(&f, vs));
        double ops = (6 * m + 8 + 2 * (runs - 1) * m) * f.P * f.v * chains;
        bytes =
            exp2(ceil(log2(ops * sizeof(FormulaOp)))) + chains * m * f.P * f.v * 2 * sizeof(guint);
    }
    g_free(f.facts), g_free(f.dense_facts);
    return bytes;
}

gboolean
simpar_step_formula(const SimparStepTimer *tm, const SimparBlockTimes *bt, const SimparModel *model,
                    const SimparTrain *train, const SimparSchedule *layer,
                    SimparPredictCache *cache, SimparReportRow *row, double *step_s)
{
    g_return_val_if_fail(row != NULL || step_s != NULL, FALSE);
    if (!formula_supported(tm, model, train))
        return FALSE;
    Formula f = {.tm = tm, .tr = train, .model = model, .cache = cache};
    f.T = (guint) train->tp.tp, f.P = (guint) train->pp, f.D = (guint) train->dp;
    f.v = (guint) train->virtual_stages, f.lc = formula_even_layers(model, train);
    formula_config(&f, bt, model, layer);
    gboolean alike, ok = formula_facts(&f, layer, &alike);
    if (ok) {
        formula_chains(&f, formula_one_chain(&f, alike));
        f.c.wide = f.n_chains > 1;
        g_autofree double *fig = g_new0(double, FORMULA_N_FIGURES + formula_n_ends(&f));
        formula_figures_at(&f, (guint) train->micro_batches, fig);
        SimparReportRow tmp = {0};
        formula_fill(&f, fig, bt, model, row != NULL ? row : &tmp);
        if (row == NULL)
            *step_s = tmp.step_s;
        g_clear_pointer(&tmp.axes, g_array_unref);
        g_clear_pointer(&tmp.step.placement, g_free);
    }
    g_free(f.facts), g_free(f.dense_facts), g_free(f.fwd), g_free(f.bwd), g_free(f.end_rank);
    return ok;
}
