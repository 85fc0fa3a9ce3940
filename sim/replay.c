/* replay.c - instance order and collective table shared by the backends. */
#include "replay.h"
#include <string.h>

/* Appends the instances of `rank` for one layer and phase to its streams, in program order. */
static void
replay_add_phase(SimparReplay *r, guint rank, guint layer, SimparPhase phase, guint *calls)
{
    const SimparSchedule *s = r->run->sched;
    guint n;
    const guint *ops = simpar_schedule_rank_ops(s, rank, &n);
    for (guint i = 0; i < n; i++) {
        const SimparOp *op = simpar_schedule_op(s, ops[i]);
        if (op->phase != phase)
            continue;
        guint inst = layer * r->n_ops + ops[i];
        g_array_append_val(r->seq[rank * r->n_streams + op->stream], inst);
        if (op->kind == SIMPAR_OP_COLLECTIVE)
            r->coll_k[inst] = calls[op->u.coll.group]++;
    }
}

static void
replay_order(SimparReplay *r)
{
    guint n_groups = simpar_schedule_n_groups(r->run->sched);
    g_autofree guint *calls = g_new(guint, n_groups);
    for (guint rank = 0; rank < r->n_ranks; rank++) {
        memset(calls, 0, n_groups * sizeof *calls);
        for (guint l = 0; l < r->run->n_layers; l++)
            replay_add_phase(r, rank, l, SIMPAR_PHASE_FORWARD, calls);
        for (guint l = r->run->n_layers; l-- > 0;)
            replay_add_phase(r, rank, l, SIMPAR_PHASE_BACKWARD, calls);
        for (guint g = 0; g < n_groups; g++)
            r->group_calls[g] = MAX(r->group_calls[g], calls[g]);
    }
}

/* Members of one collective share its table entry: same group, kind, count and root. */
static guint
replay_coll_key(SimparReplay *r, GHashTable *seen, const SimparOp *op)
{
    const SimparSchedule *s = r->run->sched;
    const SimparColl *c = &op->u.coll;
    g_autofree char *key =
        g_strdup_printf("%u/%d/%" G_GSIZE_FORMAT "/%u", c->group, c->kind, c->count, c->root);
    gpointer found;
    if (g_hash_table_lookup_extended(seen, key, NULL, &found))
        return GPOINTER_TO_UINT(found);

    const SimparGroup *g = simpar_schedule_group(s, c->group);
    const guint *ranks = simpar_schedule_group_ranks(s, c->group);
    guint *gpus = g_new(guint, g->size);
    for (guint i = 0; i < g->size; i++)
        gpus[i] = r->run->gpus[ranks[i]];
    SimparReplayColl rc = {
        .group = {g->size, gpus, r->run->net},
        .kind = c->kind,
        .bytes = (double) simpar_op_coll_elems(s, op) * simpar_dtype_size(simpar_schedule_dtype(s)),
        .root = c->root,
    };
    gboolean forced = r->run->algo != NULL && (r->run->algo->kinds & (1u << rc.kind)) != 0;
    rc.algo =
        forced ? r->run->algo : simpar_coll_choose(rc.kind, &rc.group, rc.bytes, &r->run->coll);
    rc.time_s = g->size < 2
                    ? 0
                    : rc.algo->closed_form(rc.kind, &rc.group, rc.bytes, rc.root, &r->run->coll);
    g_array_append_val(r->colls, rc);
    guint idx = r->colls->len - 1;
    g_hash_table_insert(seen, g_steal_pointer(&key), GUINT_TO_POINTER(idx));
    return idx;
}

static void
replay_colls(SimparReplay *r)
{
    g_autoptr(GHashTable) seen = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    for (guint i = 0; i < r->n_ops; i++) {
        const SimparOp *op = simpar_schedule_op(r->run->sched, i);
        r->coll_of_op[i] =
            op->kind == SIMPAR_OP_COLLECTIVE ? replay_coll_key(r, seen, op) : G_MAXUINT;
    }
}

SimparReplay *
simpar_replay_new(const SimparRun *run)
{
    g_return_val_if_fail(run->n_layers >= 1, NULL);
    SimparReplay *r = g_new0(SimparReplay, 1);
    r->run = run;
    r->n_ops = simpar_schedule_n_ops(run->sched);
    r->n_streams = simpar_schedule_n_streams(run->sched);
    r->n_ranks = simpar_schedule_n_ranks(run->sched);
    r->n_instances = r->n_ops * run->n_layers;
    r->seq = g_new(GArray *, r->n_ranks * r->n_streams);
    for (guint i = 0; i < r->n_ranks * r->n_streams; i++)
        r->seq[i] = g_array_new(FALSE, FALSE, sizeof(guint));
    r->coll_k = g_new0(guint, r->n_instances);
    r->coll_of_op = g_new(guint, r->n_ops);
    r->colls = g_array_new(FALSE, FALSE, sizeof(SimparReplayColl));
    r->group_calls = g_new0(guint, simpar_schedule_n_groups(run->sched));
    replay_order(r);
    replay_colls(r);
    return r; /* (transfer full) */
}

void
simpar_replay_free(SimparReplay *r)
{
    if (r == NULL)
        return;
    for (guint i = 0; i < r->n_ranks * r->n_streams; i++)
        g_array_free(r->seq[i], TRUE);
    for (guint i = 0; i < r->colls->len; i++) {
        SimparReplayColl *c = &g_array_index(r->colls, SimparReplayColl, i);
        g_free((guint *) c->group.gpus);
        g_clear_pointer(&c->exp, simpar_expansion_free);
    }
    g_array_free(r->colls, TRUE);
    g_free(r->seq);
    g_free(r->coll_k);
    g_free(r->coll_of_op);
    g_free(r->group_calls);
    g_free(r);
}

const SimparOp *
simpar_replay_op(const SimparReplay *r, guint instance)
{
    return simpar_schedule_op(r->run->sched, instance % r->n_ops); /* (transfer none) */
}

const SimparExpansion *
simpar_replay_expansion(SimparReplay *r, guint coll)
{
    SimparReplayColl *c = &g_array_index(r->colls, SimparReplayColl, coll);
    if (c->exp == NULL) {
        c->exp = simpar_expansion_new(c->group.n);
        c->algo->expand(c->kind, &c->group, c->bytes, c->root, &r->run->coll, c->exp);
    }
    return c->exp; /* (transfer none) */
}
