/* summary.c - per-GPU collective counts and bytes by axis, kind and phase (and ring attention's
 * point-to-point sends, kind "send"); text and JSON. */
#include "summary.h"
#include "generators.h"
#include <json-glib/json-glib.h>
#include <math.h>
#include <string.h>

const char *
simpar_phase_name(SimparPhase phase)
{
    return phase == SIMPAR_PHASE_FORWARD ? "forward" : "backward";
}

static gint
summary_row_cmp(gconstpointer pa, gconstpointer pb)
{
    const SimparSummaryRow *a = pa, *b = pb;
    int c = strcmp(a->axis, b->axis);
    if (c != 0)
        return c;
    if (a->kind != b->kind)
        return (gint) a->kind - (gint) b->kind;
    return (gint) a->phase - (gint) b->phase;
}

/* A transfer's axis: the first group holding both ends (ring attention's "cp"), or NULL. */
static const char *
summary_p2p_axis(const SimparSchedule *sched, const SimparOp *op)
{
    guint g = simpar_schedule_group_of_pair(sched, op->rank, op->u.p2p.peer);
    return g != G_MAXUINT ? simpar_schedule_group(sched, g)->axis : NULL;
}

/* The kind column: a collective's name, or "send" for point-to-point transfers. */
static const char *
summary_kind_name(SimparCollKind kind)
{
    return kind == SIMPAR_N_COLL_KINDS ? "send" : simpar_coll_kind_name(kind);
}

static GArray *
summary_rows(const SimparSchedule *sched, guint rank, double *flops, guint *n_ops)
{
    GArray *rows = g_array_new(FALSE, FALSE, sizeof(SimparSummaryRow));
    guint n;
    const guint *ops = simpar_schedule_rank_ops(sched, rank, &n);
    for (guint i = 0; i < n; i++) {
        const SimparOp *op = simpar_schedule_op(sched, ops[i]);
        if (n_ops != NULL)
            n_ops[op->phase]++;
        if (op->kind == SIMPAR_OP_GEMM && flops != NULL)
            flops[op->phase] += 2.0 * op->u.gemm.m * op->u.gemm.n * op->u.gemm.k * op->u.gemm.batch;
        if (op->kind == SIMPAR_OP_BLOCK && flops != NULL) /* a timed span: its whole flops */
            flops[op->phase] += op->u.block.flops;
        const char *p2p = op->kind == SIMPAR_OP_SEND ? summary_p2p_axis(sched, op) : NULL;
        if (op->kind != SIMPAR_OP_COLLECTIVE && p2p == NULL)
            continue;
        SimparSummaryRow key = {
            p2p != NULL ? p2p : simpar_schedule_group(sched, op->u.coll.group)->axis,
            p2p != NULL ? SIMPAR_N_COLL_KINDS : op->u.coll.kind, op->phase, 0, 0};
        SimparSummaryRow *row = NULL;
        for (guint r = 0; r < rows->len && row == NULL; r++)
            if (summary_row_cmp(&g_array_index(rows, SimparSummaryRow, r), &key) == 0)
                row = &g_array_index(rows, SimparSummaryRow, r);
        if (row == NULL) {
            g_array_append_val(rows, key);
            row = &g_array_index(rows, SimparSummaryRow, rows->len - 1);
        }
        row->calls++;
        row->elems += p2p != NULL ? op->u.p2p.count : simpar_op_coll_elems(sched, op);
    }
    g_array_sort(rows, summary_row_cmp);
    return rows;
}

static gboolean
summary_rows_equal(GArray *a, GArray *b)
{
    if (a->len != b->len)
        return FALSE;
    for (guint i = 0; i < a->len; i++) {
        SimparSummaryRow *x = &g_array_index(a, SimparSummaryRow, i);
        SimparSummaryRow *y = &g_array_index(b, SimparSummaryRow, i);
        if (summary_row_cmp(x, y) != 0 || x->calls != y->calls || x->elems != y->elems)
            return FALSE;
    }
    return TRUE;
}

SimparSummary *
simpar_summary_new(const SimparSchedule *sched, guint rank)
{
    g_return_val_if_fail(rank < simpar_schedule_n_ranks(sched), NULL);
    SimparSummary *s = g_new0(SimparSummary, 1);
    s->rank = rank;
    s->elem_size = simpar_dtype_size(simpar_schedule_dtype(sched));
    s->rows = summary_rows(sched, rank, s->flops, s->n_ops);
    s->uniform = TRUE;
    for (guint r = 0; r < simpar_schedule_n_ranks(sched) && s->uniform; r++) {
        g_autoptr(GArray) other = summary_rows(sched, r, NULL, NULL);
        s->uniform = summary_rows_equal(s->rows, other);
    }
    return s; /* (transfer full) */
}

void
simpar_summary_free(SimparSummary *s)
{
    if (s == NULL)
        return;
    g_array_unref(s->rows);
    g_free(s);
}

const SimparSummaryRow *
simpar_summary_find(const SimparSummary *s, const char *axis, SimparCollKind kind,
                    SimparPhase phase)
{
    for (guint i = 0; i < s->rows->len; i++) {
        const SimparSummaryRow *r = &g_array_index(s->rows, SimparSummaryRow, i);
        if (g_str_equal(r->axis, axis) && r->kind == kind && r->phase == phase)
            return r;
    }
    return NULL;
}

static char *
summary_plan_text(const SimparModel *m, const SimparPlan *p)
{
    g_autofree char *grid = simpar_plan_grid_label(p, TRUE);
    return g_strdup_printf("%s tensor parallelism, %" G_GINT64_FORMAT " GPUs (%s); model %s: "
                           "h=%" G_GINT64_FORMAT " a=%" G_GINT64_FORMAT " s=%" G_GINT64_FORMAT
                           " b=%" G_GINT64_FORMAT " ffn=%" G_GINT64_FORMAT "%s %s",
                           p->gen->name, p->tp * simpar_plan_cp(p), grid, m->name, m->hidden,
                           m->heads, m->seq, m->micro_batch, m->ffn, simpar_model_flavour(m),
                           simpar_dtype_name(m->dtype));
}

char *
simpar_summary_to_text(const SimparSummary *s, const SimparModel *m, const SimparPlan *p)
{
    GString *out = g_string_new(NULL);
    g_autofree char *head = summary_plan_text(m, p);
    g_string_append_printf(out, "%s\nper GPU per layer (rank %u%s):\n", head, s->rank,
                           s->uniform ? "; every rank the same" : "; ranks differ");
    g_string_append_printf(out, "  %-14s %-15s %-9s %6s %16s %16s\n", "axis", "collective", "phase",
                           "calls", "elements", "bytes");
    for (guint i = 0; i < s->rows->len; i++) {
        const SimparSummaryRow *r = &g_array_index(s->rows, SimparSummaryRow, i);
        g_string_append_printf(
            out, "  %-14s %-15s %-9s %6u %16" G_GUINT64_FORMAT " %16" G_GUINT64_FORMAT "\n",
            r->axis, summary_kind_name(r->kind), simpar_phase_name(r->phase), r->calls, r->elems,
            r->elems * s->elem_size);
    }
    for (guint ph = 0; ph < SIMPAR_N_PHASES; ph++)
        g_string_append_printf(out, "  %s: %u ops, %.6g GEMM GFLOP\n",
                               simpar_phase_name((SimparPhase) ph), s->n_ops[ph],
                               s->flops[ph] / 1e9);
    return g_string_free(out, FALSE); /* (transfer full) */
}

static void
summary_json_plan(JsonBuilder *b, const SimparModel *m, const SimparPlan *p)
{
    json_builder_set_member_name(b, "plan");
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "tp_mode");
    json_builder_add_string_value(b, p->gen->name);
    json_builder_set_member_name(b, "tp");
    json_builder_add_int_value(b, p->tp);
    json_builder_set_member_name(b, "q");
    json_builder_add_int_value(b, p->q);
    json_builder_set_member_name(b, "depth");
    json_builder_add_int_value(b, p->depth);
    json_builder_set_member_name(b, "sequence_parallel");
    json_builder_add_boolean_value(b, p->sequence_parallel);
    json_builder_set_member_name(b, "variant_3d");
    json_builder_add_string_value(b, p->paper_3d ? "paper" : "later");
    json_builder_end_object(b);
    json_builder_set_member_name(b, "model");
    json_builder_begin_object(b);

    const struct {
        const char *k;
        gint64 v;
    } f[] = {{"hidden", m->hidden}, {"heads", m->heads},
             {"seq", m->seq},       {"micro_batch", m->micro_batch},
             {"ffn", m->ffn},       {"kv_heads", simpar_model_kv_heads(m)},
             {"layers", m->layers}, {"vocab", m->vocab}};

    json_builder_set_member_name(b, "name");
    json_builder_add_string_value(b, m->name);
    for (guint i = 0; i < G_N_ELEMENTS(f); i++) {
        json_builder_set_member_name(b, f[i].k);
        json_builder_add_int_value(b, f[i].v);
    }
    if (m->head_dim != 0) { /* a head's width where it is not h/a */
        json_builder_set_member_name(b, "head_dim");
        json_builder_add_int_value(b, m->head_dim);
    }
    json_builder_set_member_name(b, "dtype");
    json_builder_add_string_value(b, simpar_dtype_name(m->dtype));
    json_builder_set_member_name(b, "mlp");
    json_builder_add_string_value(b, simpar_mlp_name(m->mlp));
    json_builder_set_member_name(b, "norm");
    json_builder_add_string_value(b, simpar_norm_name(m->norm));
    json_builder_end_object(b);
}

static void
summary_json_rows(JsonBuilder *b, const SimparSummary *s)
{
    json_builder_set_member_name(b, "collectives");
    json_builder_begin_array(b);
    for (guint i = 0; i < s->rows->len; i++) {
        const SimparSummaryRow *r = &g_array_index(s->rows, SimparSummaryRow, i);
        json_builder_begin_object(b);
        json_builder_set_member_name(b, "axis");
        json_builder_add_string_value(b, r->axis);
        json_builder_set_member_name(b, "kind");
        json_builder_add_string_value(b, summary_kind_name(r->kind));
        json_builder_set_member_name(b, "phase");
        json_builder_add_string_value(b, simpar_phase_name(r->phase));
        json_builder_set_member_name(b, "calls");
        json_builder_add_int_value(b, r->calls);
        json_builder_set_member_name(b, "elements");
        json_builder_add_int_value(b, (gint64) r->elems);
        json_builder_set_member_name(b, "bytes");
        json_builder_add_int_value(b, (gint64) (r->elems * s->elem_size));
        json_builder_end_object(b);
    }
    json_builder_end_array(b);
}

char *
simpar_summary_to_json(const SimparSummary *s, const SimparModel *m, const SimparPlan *p)
{
    g_autoptr(JsonBuilder) b = json_builder_new();
    json_builder_begin_object(b);
    simpar_json_head(b, "simpar-schedule", SIMPAR_SUMMARY_JSON_VERSION);
    summary_json_plan(b, m, p);
    json_builder_set_member_name(b, "rank");
    json_builder_add_int_value(b, s->rank);
    json_builder_set_member_name(b, "uniform");
    json_builder_add_boolean_value(b, s->uniform);
    summary_json_rows(b, s);
    for (guint ph = 0; ph < SIMPAR_N_PHASES; ph++) {
        g_autofree char *k = g_strdup_printf("gemm_flops_%s", simpar_phase_name((SimparPhase) ph));
        json_builder_set_member_name(b, k);
        json_builder_add_int_value(b, (gint64) llround(s->flops[ph])); /* a count */
    }
    json_builder_end_object(b);
    return simpar_json_builder_text(b, NULL); /* (transfer full) */
}
