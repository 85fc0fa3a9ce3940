/* step-slice.c - one tensor-parallel slice of a step in place of the whole (see step-slice.h). */
#include "step-slice.h"
#include "collectives.h"
#include "platform.h"
#include "replay.h"
#include "step-predict.h"
#include "step.h"
#include <string.h>

static guint64
slice_pair(guint a, guint b)
{
    return (guint64) a << 32 | b;
}

static gint
slice_pair_cmp(gconstpointer a, gconstpointer b)
{
    guint64 x = *(const guint64 *) a, y = *(const guint64 *) b;
    return x < y ? -1 : x > y;
}

/* The sends of one collective (each algorithm, kind, root and group once) as rank pairs: every
 * peer a member sends to in any round. */
static void
slice_coll_pairs(SimparReplay *r, guint coll, const guint *rank_of_gpu, GArray *pairs)
{
    const SimparReplayColl *rc = &g_array_index(r->colls, SimparReplayColl, coll);
    for (guint m = 0; m < rc->group.n; m++) {
        g_autoptr(GArray) xfers = simpar_replay_member_xfers(r, coll, m);
        for (guint j = 0; j < xfers->len; j++) {
            const SimparXfer *x = &g_array_index(xfers, SimparXfer, j);
            if (!x->send)
                continue;
            guint64 p =
                slice_pair(rank_of_gpu[rc->group.gpus[m]], rank_of_gpu[rc->group.gpus[x->peer]]);
            g_array_append_val(pairs, p);
        }
    }
}

/* Every (sender, receiver) pair of ranks of `run` that moves bytes, sorted, each once. */
static GArray *
slice_pairs(const SimparRun *run, guint n_job)
{
    GArray *pairs = g_array_new(FALSE, FALSE, sizeof(guint64));
    const SimparSchedule *s = run->sched;
    for (guint i = 0; i < simpar_schedule_n_ops(s); i++) {
        const SimparOp *op = simpar_schedule_op(s, i);
        if (op->kind == SIMPAR_OP_SEND) {
            guint64 p = slice_pair(op->rank, op->u.p2p.peer);
            g_array_append_val(pairs, p);
        }
    }
    g_autofree guint *rank_of_gpu = g_new(guint, n_job);
    for (guint r = 0; r < simpar_schedule_n_ranks(s); r++)
        rank_of_gpu[run->gpus[r]] = r;
    g_autoptr(SimparReplay) r = simpar_replay_new(run);
    g_autoptr(GHashTable) seen = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    for (guint c = 0; c < r->colls->len; c++) {
        const SimparReplayColl *rc = &g_array_index(r->colls, SimparReplayColl, c);
        if (rc->group.n < 2 || rc->idle) /* an idle one moves nothing */
            continue;
        GString *key = g_string_new(NULL);
        g_string_printf(key, "%s %d %u:", rc->algo->name, rc->kind, rc->root);
        for (guint m = 0; m < rc->group.n; m++)
            g_string_append_printf(key, " %u", rc->group.gpus[m]);
        if (!g_hash_table_add(seen, g_string_free(key, FALSE)))
            continue;
        slice_coll_pairs(r, c, rank_of_gpu, pairs);
    }
    g_array_sort(pairs, slice_pair_cmp);
    guint n = 0;
    for (guint i = 0; i < pairs->len; i++)
        if (n == 0 || g_array_index(pairs, guint64, i) != g_array_index(pairs, guint64, n - 1))
            g_array_index(pairs, guint64, n++) = g_array_index(pairs, guint64, i);
    g_array_set_size(pairs, n);
    return pairs; /* (transfer full) */
}

/* Records that slice t's traffic crosses `link`; FALSE when another slice's does too. */
static gboolean
slice_own(GHashTable *owner, gpointer link, guint t)
{
    if (!simpar_platform_link_shared(link))
        return TRUE;
    gpointer o = g_hash_table_lookup(owner, link);
    if (o == NULL)
        g_hash_table_insert(owner, link, GUINT_TO_POINTER(t + 1));
    return o == NULL || GPOINTER_TO_UINT(o) == t + 1;
}

/* Slice 0's link `a` is its own image in slice t (fixed) or another link (moved); a shared link
 * must be one or the other in every slice. */
enum {
    SLICE_FIXED = 1,
    SLICE_MOVED = 2
};

static gboolean
slice_mark(GHashTable *how, gpointer a, guint mark)
{
    guint was = GPOINTER_TO_UINT(g_hash_table_lookup(how, a));
    g_hash_table_insert(how, a, GUINT_TO_POINTER(mark));
    return was == 0 || was == mark;
}

/* Whether every slice's routes are slice 0's, link for link, on links no two slices share but
 * the ones every slice crosses alike, appended to `shared` (step-slice.h; `shared_ok`: a
 * backend without contention, where any link may be shared). gpus[t]: slice t's GPU of each
 * slice rank. */
static gboolean
slice_routes_alike(const SimparNet *net, guint **gpus, guint T, const GArray *pairs,
                   gboolean shared_ok, GPtrArray *shared)
{
    /* slice 0's routes, one after the other; first[i]: where pair i's begins */
    g_autoptr(GPtrArray) links0 = g_ptr_array_new();
    g_autofree guint *first = g_new(guint, pairs->len + 1);
    g_autoptr(GHashTable) owner = g_hash_table_new(NULL, NULL);
    for (guint i = 0; i < pairs->len; i++) {
        guint64 p = g_array_index(pairs, guint64, i);
        first[i] = links0->len;
        if (!simpar_platform_route_links(net, gpus[0][p >> 32], gpus[0][(guint) p], links0))
            return FALSE; /* not the platform's routes: nothing to prove with */
    }
    first[pairs->len] = links0->len;
    for (guint k = 0; k < links0->len; k++)
        (void) slice_own(owner, links0->pdata[k], 0); /* a slice never conflicts with itself */
    /* per slice-0 link: fixed or moved; per fixed link: the narrowest link of a route through
     * it */
    g_autoptr(GHashTable) how = g_hash_table_new(NULL, NULL);
    g_autoptr(GHashTable) narrowest = g_hash_table_new_full(NULL, NULL, NULL, g_free);
    g_autoptr(GPtrArray) links = g_ptr_array_new();
    for (guint t = 1; t < T; t++) {
        g_autoptr(GHashTable) fwd = g_hash_table_new(NULL, NULL);
        g_autoptr(GHashTable) back = g_hash_table_new(NULL, NULL);
        for (guint i = 0; i < pairs->len; i++) {
            guint64 p = g_array_index(pairs, guint64, i);
            g_ptr_array_set_size(links, 0);
            simpar_platform_route_links(net, gpus[t][p >> 32], gpus[t][(guint) p], links);
            if (links->len != first[i + 1] - first[i])
                return FALSE; /* the routes differ in length */
            for (guint k = 0; k < links->len; k++) {
                gpointer a = links0->pdata[first[i] + k], b = links->pdata[k];
                gpointer fa = g_hash_table_lookup(fwd, a), bb = g_hash_table_lookup(back, b);
                if (!simpar_platform_links_alike(a, b) || (fa != NULL && fa != b) ||
                    (bb != NULL && bb != a))
                    return FALSE; /* unlike links, or no one-to-one map */
                g_hash_table_insert(fwd, a, b);
                g_hash_table_insert(back, b, a);
                if (shared_ok || !simpar_platform_link_shared(b))
                    continue;
                if (a != b ? !slice_mark(how, a, SLICE_MOVED) || !slice_own(owner, b, t)
                           : !slice_mark(how, a, SLICE_FIXED))
                    return FALSE; /* a shared link carries two slices, not all alike */
                if (a == b) {     /* the narrowest link of the route through a */
                    double *lo = g_hash_table_lookup(narrowest, a);
                    if (lo == NULL) {
                        lo = g_new(double, 1), *lo = G_MAXDOUBLE;
                        g_hash_table_insert(narrowest, a, lo);
                    }
                    for (guint j = first[i]; j < first[i + 1]; j++)
                        *lo = MIN(*lo, simpar_platform_link_bw(links0->pdata[j]));
                }
            }
        }
    }
    GHashTableIter it;
    gpointer link, lo;
    g_hash_table_iter_init(&it, narrowest);
    while (g_hash_table_iter_next(&it, &link, &lo)) {
        if (simpar_platform_link_bw(link) / T < *(double *) lo)
            return FALSE; /* its share would narrow a route: not the routes cached */
        g_ptr_array_add(shared, link);
    }
    return TRUE;
}

/* Whether the tensor-parallel ranks' steps are alike. */
static gboolean
slice_ranks_alike(const SimparTrain *train, const SimparSchedule *layer)
{
    if (train->scatter_gather)
        return FALSE; /* a tensor-parallel all-gather between stages */
    g_autofree SimparRankFacts *f = simpar_schedule_rank_facts(layer);
    if (f[0].expert_params > 0)
        return FALSE; /* the experts' gradients reduce across the slices (train.h) */
    for (guint t = 1; t < simpar_train_group(train); t++)
        if (f[t].act_elems != f[0].act_elems || f[t].layer_params != f[0].layer_params)
            return FALSE; /* the ranks hold different shares */
    return TRUE;
}

/* Slice 0 as out->step, when it stands for the whole. */
static gboolean
slice_try(const SimparStepTimer *tm, const SimparModel *model, const SimparTrain *train,
          const SimparSchedule *layer, SimparStepPlan *out)
{
    /* slice t: the ranks t + T c of every context-parallel rank c, which reduce together */
    guint T = (guint) train->tp.tp, C = simpar_plan_cp(&train->tp);
    guint n_job = (guint) (T * C * train->pp * train->dp), n = n_job / T;
    if (!slice_ranks_alike(train, layer))
        return FALSE;
    SimparTrain num;
    simpar_train_tp_slice(train, &num);
    g_autofree guint **gpus = g_new(guint *, T);
    for (guint t = 0; t < T; t++) {
        gpus[t] = g_new(guint, n);
        for (guint c = 0; c < C; c++)
            for (guint d = 0; d < train->dp; d++)
                for (guint p = 0; p < train->pp; p++)
                    gpus[t][simpar_train_rank(&num, c, d, p)] =
                        out->job_gpus[simpar_train_rank(train, t + T * c, d, p)];
    }
    SimparSchedule *step = simpar_step_build_slice(model, train, layer, 0);
    SimparRun run = tm->base;
    run.sched = step, run.n_layers = 1, run.gpus = gpus[0];
    g_autoptr(GArray) pairs = slice_pairs(&run, n_job);
    g_autoptr(GPtrArray) shared = g_ptr_array_new();
    gboolean alike =
        slice_routes_alike(tm->base.net, gpus, T, pairs, !tm->backend->contention, shared);
    for (guint t = 1; t < T; t++)
        g_free(gpus[t]);
    if (!alike) {
        simpar_schedule_free(step);
        g_free(gpus[0]);
        return FALSE;
    }
    out->step = step, out->gpus = gpus[0], out->slices = T;
    if (shared->len > 0) {
        g_ptr_array_sort(shared,
                         simpar_platform_link_cmp); /* a hash table's order: not reproducible */
        out->shared = g_ptr_array_ref(shared);
        out->net = tm->base.net;
        out->shared_bw = g_array_new(FALSE, FALSE, sizeof(double));
        for (guint i = 0; i < shared->len; i++) {
            double bw = simpar_platform_link_bw(shared->pdata[i]);
            g_array_append_val(out->shared_bw, bw);
        }
    }
    return TRUE;
}

void
simpar_step_plan(const SimparStepTimer *tm, const SimparModel *model, const SimparTrain *train,
                 const SimparSchedule *layer, gboolean slice, SimparStepPlan *out)
{
    guint n_job = (guint) (simpar_train_group(train) * train->pp * train->dp);
    *out = (SimparStepPlan){.job_gpus = g_new(guint, n_job), .slices = 1};
    SimparTrain with = *train; /* the scalar all-reduces of the GPU's kernel set's framework */
    with.scalars = simpar_step_scalars_of(tm->gpu);
    train = &with;
    for (guint i = 0; i < n_job; i++)
        out->job_gpus[i] = i;
    if (slice && train->tp.tp > 1 && slice_try(tm, model, train, layer, out))
        return;
    out->step = simpar_step_build(model, train, layer);
    out->gpus = g_memdup2(out->job_gpus, n_job * sizeof(guint));
}

void
simpar_step_plan_share(const SimparStepPlan *plan, gboolean on)
{
    if (plan->shared == NULL)
        return;
    simpar_platform_links_set_bw(plan->net, plan->shared, (const double *) plan->shared_bw->data,
                                 on ? plan->slices : 1);
}

void
simpar_step_plan_clear(SimparStepPlan *plan)
{
    g_clear_pointer(&plan->shared, g_ptr_array_unref);
    g_clear_pointer(&plan->shared_bw, g_array_unref);
    g_clear_pointer(&plan->step, simpar_schedule_free);
    g_clear_pointer(&plan->gpus, g_free);
    g_clear_pointer(&plan->job_gpus, g_free);
}
