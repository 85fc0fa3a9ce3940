/* report.c - breakdown of a predicted step, and its text, JSON and Chrome-trace forms. */
#include "report.h"
#include "generators.h"
#include "job.h"
#include <math.h>

struct _SimparReport {
    const SimparModel *model;
    char *topology, *backend, *coll_mode, *attention;
    GArray *rows; /* SimparReportRow */
};

SimparReport *
simpar_report_new(const SimparModel *model, const char *topology, const char *backend,
                  const char *coll_mode, const char *attention)
{
    SimparReport *rep = g_new0(SimparReport, 1);
    rep->model = model;
    rep->topology = g_strdup(topology);
    rep->backend = g_strdup(backend);
    rep->coll_mode = g_strdup(coll_mode);
    rep->attention = g_strdup(attention);
    rep->rows = g_array_new(FALSE, TRUE, sizeof(SimparReportRow));
    return rep; /* (transfer full) */
}

void
simpar_report_free(SimparReport *rep)
{
    if (rep == NULL)
        return;
    for (guint i = 0; i < rep->rows->len; i++) {
        SimparReportRow *row = &g_array_index(rep->rows, SimparReportRow, i);
        g_free(row->grid);
        g_free(row->skipped);
        g_free(row->step.split);
        g_free(row->step.placement);
        g_free(row->step.compute);
        if (row->axes != NULL)
            g_array_free(row->axes, TRUE);
    }
    g_array_free(rep->rows, TRUE);
    g_free(rep->topology);
    g_free(rep->backend);
    g_free(rep->coll_mode);
    g_free(rep->attention);
    g_free(rep);
}

guint
simpar_report_n_simulated(const SimparReport *rep)
{
    guint n = 0;
    for (guint i = 0; i < rep->rows->len; i++)
        n += g_array_index(rep->rows, SimparReportRow, i).skipped == NULL;
    return n;
}

char *
simpar_report_reasons(const SimparReport *rep)
{
    GString *out = g_string_new(NULL);
    for (guint i = 0; i < rep->rows->len; i++) {
        const SimparReportRow *row = &g_array_index(rep->rows, SimparReportRow, i);
        if (row->skipped != NULL)
            g_string_append_printf(out, "%s%s: %s", out->len ? "; " : "", row->gen->name,
                                   row->skipped);
    }
    return g_string_free(out, FALSE); /* (transfer full) */
}

/* ----------------------------------------------------------------------------- the breakdown */

typedef struct {
    const SimparRun *run;
    const SimparSpan *spans;
    guint n_ops;
    gboolean *inter; /* per group: spans nodes */
    SimparReportRow *row;
} ReportCtx;

/* The group of an asynchronous transfer inside a layer (ring attention's, on its context-parallel
 * group): the first group holding both ends; G_MAXUINT for none. Pipeline transfers run on the
 * compute stream and stay "other". */
static guint
report_p2p_group(const ReportCtx *c, const SimparOp *op)
{
    if ((op->kind != SIMPAR_OP_SEND && op->kind != SIMPAR_OP_RECV) || op->stream == 0)
        return G_MAXUINT;
    return simpar_schedule_group_of_pair(c->run->sched, op->rank, op->u.p2p.peer);
}

static void
report_charge(ReportCtx *c, const SimparOp *op, double s)
{
    if (s <= 0)
        return;
    guint group = op == NULL                         ? G_MAXUINT
                  : op->kind == SIMPAR_OP_COLLECTIVE ? op->u.coll.group
                                                     : report_p2p_group(c, op);
    if (group == G_MAXUINT) {
        c->row->other_s += s;
        return;
    }
    const SimparGroup *g = simpar_schedule_group(c->run->sched, group);
    gboolean inter = c->inter[group];
    for (guint i = 0; i < c->row->axes->len; i++) {
        SimparAxisTime *a = &g_array_index(c->row->axes, SimparAxisTime, i);
        if (a->axis == g->axis && a->inter == inter) {
            a->exposed_s += s;
            return;
        }
    }
    SimparAxisTime a = {g->axis, inter, s};
    g_array_append_val(c->row->axes, a);
}

/* The dep of `inst` that ended last, or NULL when none ended after `after`. */
static const SimparOp *
report_blocker(const ReportCtx *c, guint inst, double after)
{
    const SimparOp *op = simpar_schedule_op(c->run->sched, inst % c->n_ops), *best = NULL;
    const guint *deps = simpar_schedule_deps(c->run->sched, op);
    guint base = inst - inst % c->n_ops;
    for (guint d = 0; d < op->n_deps; d++) {
        if (c->spans[base + deps[d]].end > after) {
            after = c->spans[base + deps[d]].end;
            best = simpar_schedule_op(c->run->sched, deps[d]);
        }
    }
    return best;
}

/* Walks one rank's compute stream (stream 0) through the step. */
static void
report_rank(ReportCtx *c, guint rank, double step, double *compute)
{
    const SimparSchedule *s = c->run->sched;
    guint n;
    const guint *ops = simpar_schedule_rank_ops(s, rank, &n);
    double t = 0;
    const SimparOp *last_other = NULL;
    double last_other_end = 0;
    /* as the backends replay it: one layer (a whole step) in program order */
    guint passes = c->run->n_layers == 1 ? 1 : 2 * c->run->n_layers;
    for (guint layer = 0; layer < passes; layer++) {
        gboolean bwd = layer >= c->run->n_layers;
        guint l = bwd ? 2 * c->run->n_layers - 1 - layer : layer;
        for (guint i = 0; i < n; i++) {
            const SimparOp *op = simpar_schedule_op(s, ops[i]);
            const SimparSpan *sp = &c->spans[l * c->n_ops + ops[i]];
            if (passes > 1 && op->phase != (bwd ? SIMPAR_PHASE_BACKWARD : SIMPAR_PHASE_FORWARD))
                continue;
            if (op->stream != 0) {
                if (sp->end > last_other_end)
                    last_other_end = sp->end, last_other = op;
                continue;
            }
            if (op->kind == SIMPAR_OP_COLLECTIVE) {
                report_charge(c, op, sp->end - t);
            } else if (op->kind == SIMPAR_OP_SEND || op->kind == SIMPAR_OP_RECV) {
                report_charge(c, NULL, sp->end - t); /* pipeline send/recv: other waits */
            } else {
                report_charge(c, report_blocker(c, l * c->n_ops + ops[i], t), sp->start - t);
                *compute += sp->end - sp->start;
            }
            t = MAX(t, sp->end);
        }
    }
    report_charge(c, last_other_end > t ? last_other : NULL, step - t);
}

static gboolean *
report_inter_groups(const SimparRun *run)
{
    guint n = simpar_schedule_n_groups(run->sched);
    gboolean *inter = g_new0(gboolean, n);
    for (guint g = 0; g < n; g++) {
        const guint *ranks = simpar_schedule_group_ranks(run->sched, g);
        guint first = simpar_net_node(run->net, run->gpus[ranks[0]]);
        for (guint i = 1; i < simpar_schedule_group(run->sched, g)->size; i++)
            inter[g] |= simpar_net_node(run->net, run->gpus[ranks[i]]) != first;
    }
    return inter;
}

static void
report_times(SimparReportRow *row, const SimparRun *run, const SimparSpan *spans)
{
    guint n_ops = simpar_schedule_n_ops(run->sched), n_ranks = simpar_schedule_n_ranks(run->sched);
    for (guint i = 0; i < n_ops * run->n_layers; i++) {
        const SimparOp *op = simpar_schedule_op(run->sched, i % n_ops);
        row->step_s = MAX(row->step_s, spans[i].end);
        if (op->phase == SIMPAR_PHASE_FORWARD)
            row->forward_s = MAX(row->forward_s, spans[i].end);
    }
    row->backward_s = row->step_s - row->forward_s;
    ReportCtx c = {run, spans, n_ops, report_inter_groups(run), row};
    double compute = 0;
    for (guint r = 0; r < n_ranks; r++)
        report_rank(&c, r, row->step_s, &compute);
    g_free(c.inter);
    row->compute_s = compute / n_ranks;
    row->other_s /= n_ranks;
    for (guint i = 0; i < row->axes->len; i++) {
        SimparAxisTime *a = &g_array_index(row->axes, SimparAxisTime, i);
        a->exposed_s /= n_ranks;
        row->exposed_s += a->exposed_s;
        *(a->inter ? &row->exposed_inter_s : &row->exposed_intra_s) += a->exposed_s;
    }
}

/* Collective buffer bytes (nccl-tests S) rank 0 moves in a step. */
static double
report_comm_bytes(const SimparRun *run)
{
    guint n;
    const guint *ops = simpar_schedule_rank_ops(run->sched, 0, &n);
    double bytes = 0;
    for (guint i = 0; i < n; i++) {
        const SimparOp *op = simpar_schedule_op(run->sched, ops[i]);
        if (op->kind == SIMPAR_OP_COLLECTIVE)
            bytes += (double) simpar_op_coll_elems(run->sched, op);
    }
    return bytes * simpar_dtype_size(simpar_schedule_dtype(run->sched)) * run->n_layers;
}

static SimparReportRow *
report_row(SimparReport *rep, const SimparGenerator *gen, const char *grid, guint gpus,
           const SimparMemory *mem, double mem_capacity_B)
{
    SimparReportRow row = {.gen = gen, .grid = g_strdup(grid), .gpus = gpus};
    row.memory = *mem;
    row.mem_capacity_B = mem_capacity_B;
    g_array_append_val(rep->rows, row);
    return &g_array_index(rep->rows, SimparReportRow, rep->rows->len - 1);
}

/* The breakdown of one run into `row` (times, axes, bytes). */
static void
report_fill(SimparReportRow *row, const SimparRun *run, const SimparSpan *spans)
{
    row->axes = g_array_new(FALSE, FALSE, sizeof(SimparAxisTime));
    report_times(row, run, spans);
    row->comm_bytes_per_gpu = report_comm_bytes(run);
}

void
simpar_report_breakdown(const SimparRun *run, const SimparSpan *spans, SimparReportRow *row)
{
    report_fill(row, run, spans);
}

void
simpar_report_append(SimparReport *rep, SimparReportRow *row)
{
    g_assert(row->gen != NULL);
    g_array_append_val(rep->rows, *row);
}

void
simpar_report_skip(SimparReport *rep, const SimparGenerator *gen, const char *grid, guint gpus,
                   const SimparMemory *mem, double mem_capacity_B, const char *why)
{
    SimparMemory none = {0};
    SimparReportRow *row =
        report_row(rep, gen, grid, gpus, mem != NULL ? mem : &none, mem_capacity_B);
    row->skipped = g_strdup(why);
}

/* ------------------------------------------------------------------------------------- text */

#define GIB (1024.0 * 1024.0 * 1024.0)

static const SimparReportRow *
report_baseline(const SimparReport *rep)
{
    for (guint i = 0; i < rep->rows->len; i++) {
        const SimparReportRow *row = &g_array_index(rep->rows, SimparReportRow, i);
        if (row->gen == simpar_generator_baseline() && row->skipped == NULL)
            return row;
    }
    return NULL;
}

static void
report_text_row(GString *out, const SimparReportRow *row, const SimparReportRow *base)
{
    g_string_append_printf(out, "%-5s %-9s %5u ", row->gen->name, row->grid, row->gpus);
    if (row->skipped != NULL) {
        g_string_append_printf(out, "  not simulated: %s\n", row->skipped);
        return;
    }
    g_autofree char *speedup =
        base != NULL ? g_strdup_printf("%6.2fx", base->step_s / row->step_s) : g_strdup("     -");
    g_string_append_printf(out, "%9.4f %8.4f %8.4f %9.4f %9.4f %8.4f %8.4f %7.2f %8.2f %s\n",
                           row->step_s, row->forward_s, row->backward_s, row->compute_s,
                           row->exposed_s, row->exposed_intra_s, row->exposed_inter_s,
                           row->memory.total_B / GIB, row->tflops_per_gpu, speedup);
}

static void
report_text_axes(GString *out, const SimparReportRow *row, const SimparModel *m)
{
    if (row->skipped != NULL)
        return;
    g_string_append_printf(out, "  %-5s exposed communication per group axis:", row->gen->name);
    for (guint i = 0; i < row->axes->len; i++) {
        const SimparAxisTime *a = &g_array_index(row->axes, SimparAxisTime, i);
        g_string_append_printf(out, " %s (%s) %.4f s;", a->axis, a->inter ? "inter" : "intra",
                               a->exposed_s);
    }
    if (row->other_s >= 5e-5) /* below the printed precision */
        g_string_append_printf(out, " other waits %.4f s;", row->other_s);
    g_string_truncate(out, out->len - (out->str[out->len - 1] == ';'));
    const SimparReportStep *st = &row->step;
    g_autoptr(GString) notes = g_string_new(NULL);
    if (st->slices > 1)
        g_string_append_printf(notes, "; step simulated on 1 of %.0f alike tensor-parallel slices",
                               st->slices);
    if (st->step_ranks > 0 && st->step_ranks < st->slice_ranks)
        g_string_append_printf(notes, "; step simulated on %.0f of its %.0f ranks (alike ranks)",
                               st->step_ranks, st->slice_ranks);
    if (st->layer_ranks > 0 && st->layer_ranks < st->tp_ranks)
        g_string_append_printf(notes, "; layer simulated on %.0f of %.0f ranks (alike nodes)",
                               st->layer_ranks, st->tp_ranks);
    if (st->block_backend != NULL)
        g_string_append_printf(notes, "; blocks timed on the %s backend", st->block_backend);
    /* the layer blocks' exposed communication: an MoE layer's all-to-alls are among it */
    const char *layer_axes =
        st->moe_experts_s > 0 ? "tensor- and expert-parallel" : "tensor-parallel";
    if (st->split != NULL)
        g_string_append_printf(out,
                               "\n  %-5s %s; %s%s\n  %-5s step: compute %.4f s, %s exposed %.4f, "
                               "bubble %.4f, pipeline p2p %.4f, data-parallel exposed %.4f, "
                               "optimizer %.4f; MFU %.1f%%",
                               row->gen->name, st->split, st->placement, notes->str, row->gen->name,
                               row->compute_s, layer_axes, st->tp_exposed_s, st->bubble_s,
                               st->pp_p2p_s, st->dp_exposed_s, st->optimizer_s, 100 * st->mfu);
    if (st->split != NULL && st->fp8_cast_s > 0) /* FP8's GEMMs: up to twice that peak */
        g_string_append(out, " of the bf16 peak");
    if (st->fp8_cast_s > 0)
        g_string_append_printf(out,
                               "\n  %-5s FP8 weight casts %.4f s of the step's compute (cached "
                               "for the micro-batches: once per step, under ZeRO-3 at every "
                               "forward)",
                               row->gen->name, st->fp8_cast_s);
    const char *hops = row->config.hybridep ? "s (rail, then NVLink: Hybrid-EP; its routing maps' "
                                              "all-gather apart)"
                       : row->config.deepep ? "s (rail, then NVLink: DeepEP)"
                                            : "";
    gboolean ag = row->config.allgather;
    if (st->moe_experts_s > 0)
        g_string_append_printf(
            out,
            "\n  %-5s one MoE layer (fwd + bwd) on an expert-parallel GPU: "
            "dispatch %s%s %.4f s, combine %s%s %.4f s, expert GEMMs %.4f s%s",
            row->gen->name, ag ? "all-gathers (TP x EP, and their reduce-scatters)" : "all-to-all",
            hops, st->moe_dispatch_s, ag ? "reduce-scatter (and its all-gather)" : "all-to-all",
            hops, st->moe_combine_s, st->moe_experts_s,
            row->config.moe_shared_overlap ? " (the shared experts run beside the all-to-alls)"
                                           : "");
    if (st->moe_expert_tp_s > 0)
        g_string_append_printf(out, ", expert-TP all-gathers and reduce-scatters %.4f s",
                               st->moe_expert_tp_s);
    if (st->moe_redistribute_s > 0)
        g_string_append_printf(out,
                               "; on a tensor-parallel GPU: all-to-alls between the grid's "
                               "blocks and the block's tokens %.4f s",
                               st->moe_redistribute_s);
    if (st->moe_experts_s > 0 && simpar_model_has_dense_layers(m)) /* timed as dense layers */
        g_string_append_printf(out,
                               "; %" G_GINT64_FORMAT " of the %" G_GINT64_FORMAT
                               " layers are MoE layers, the others dense",
                               simpar_model_moe_layers(m, 0, m->layers), m->layers);
    if (st->compute != NULL)
        g_string_append_printf(out, "\n  %-5s %s", row->gen->name, st->compute);
    if (st->pipeline_step_s > 0)
        g_string_append_printf(
            out, "\n  %-5s the same split as a 1F1B pipeline: step %.4f s (%.2fx)", row->gen->name,
            st->pipeline_step_s, st->pipeline_step_s / row->step_s);
    if (st->steps_to_target > 0)
        g_string_append_printf(out, "\n  %-5s to target: %.0f steps, %.2f h, %.1f GPU-hours",
                               row->gen->name, st->steps_to_target, st->time_to_target_s / 3600,
                               st->gpu_hours_to_target);
    g_string_append_printf(out,
                           "\n  %-5s memory per GPU %.2f GiB of %.2f (states %.2f, "
                           "activations %.2f, transient %.2f",
                           row->gen->name, row->memory.total_B / GIB, row->mem_capacity_B / GIB,
                           row->memory.states_B / GIB, row->memory.activations_B / GIB,
                           row->memory.transient_B / GIB);
    if (row->memory.head_B > 0)
        g_string_append_printf(out, ", logits %.2f", row->memory.head_B / GIB);
    if (row->memory.recompute_B > 0)
        g_string_append_printf(out, ", recompute %.2f", row->memory.recompute_B / GIB);
    g_string_append_c(out, ')');
    if (row->mem_capacity_B > 0 && row->memory.total_B > row->mem_capacity_B)
        g_string_append_printf(out,
                               "\n  %-5s OVER CAPACITY by %.2f GiB on pipeline stage %u: does not "
                               "fit as simpar models memory; the step is predicted anyway",
                               row->gen->name, (row->memory.total_B - row->mem_capacity_B) / GIB,
                               st->peak_stage);
    g_string_append_c(out, '\n');
}

/* A parameter count in words: "671.03B", "13.21M", "5120" (transfer full). */
static char *
report_count_text(double n)
{
    if (n >= 1e9)
        return g_strdup_printf("%.2fB", n / 1e9);
    if (n >= 1e6)
        return g_strdup_printf("%.2fM", n / 1e6);
    return g_strdup_printf("%.0f", n);
}

/* The parameters of a model with multi-token prediction (model.h): [0] the main model's,
 * [1] the modules' own, [2] as a checkpoint stores them (DeepSeek-V3's on Hugging Face: each
 * module with its copy of the embedding and the output layer). */
static void
report_mtp_params(const SimparModel *m, double out[3])
{
    out[0] = simpar_memory_model_params(m);
    out[1] = simpar_memory_mtp_params(m);
    out[2] = out[0] + out[1] + (double) m->mtp_layers * 2 * (double) m->vocab * (double) m->hidden;
}

char *
simpar_report_to_text(const SimparReport *rep)
{
    const SimparModel *m = rep->model;
    GString *out = g_string_new(NULL);
    g_string_append_printf(out,
                           "%s: model %s (h=%" G_GINT64_FORMAT " a=%" G_GINT64_FORMAT
                           " s=%" G_GINT64_FORMAT " b=%" G_GINT64_FORMAT " L=%" G_GINT64_FORMAT
                           " ffn=%" G_GINT64_FORMAT " V=%" G_GINT64_FORMAT
                           "%s %s), attention %s, backend %s (%s)\n"
                           "step = one optimizer step (embedding, layers, loss, Adam); times in "
                           "seconds of the GPU that ends last; fwd/bwd = its busy forward and "
                           "backward; exposed = communication its compute stream waits for\n\n",
                           rep->topology, m->name, m->hidden, m->heads, m->seq, m->micro_batch,
                           m->layers, m->ffn, m->vocab, simpar_model_flavour(m),
                           simpar_model_precision(m), rep->attention, rep->backend, rep->coll_mode);
    if (m->mtp_layers > 0) {
        double p[3];
        report_mtp_params(m, p);
        g_autofree char *main = report_count_text(p[0]), *mtp = report_count_text(p[1]);
        g_autofree char *both = report_count_text(p[0] + p[1]), *stored = report_count_text(p[2]);
        g_string_append_printf(out,
                               "parameters: %s main model + %s multi-token prediction = %s (%s "
                               "as a checkpoint stores them: each module with its copy of the "
                               "embedding and output layer)\n\n",
                               main, mtp, both, stored);
    }
    g_string_append(out, "mode  grid       GPUs    step s    fwd s    bwd s  compute s  "
                         "exposed s  intra s  inter s mem GiB TFLOP/s  vs 1-D\n");
    const SimparReportRow *base = report_baseline(rep);
    for (guint i = 0; i < rep->rows->len; i++)
        report_text_row(out, &g_array_index(rep->rows, SimparReportRow, i), base);
    g_string_append_c(out, '\n');
    for (guint i = 0; i < rep->rows->len; i++)
        report_text_axes(out, &g_array_index(rep->rows, SimparReportRow, i), rep->model);
    return g_string_free(out, FALSE); /* (transfer full) */
}

/* ------------------------------------------------------------------------------------- JSON */

static void
report_json_member(JsonBuilder *b, const char *key, double v)
{
    json_builder_set_member_name(b, key);
    json_builder_add_double_value(b, v);
}

/* A count (GPUs, ranks, parameters): an integer in the JSON. */
static void
report_json_count(JsonBuilder *b, const char *key, double v)
{
    json_builder_set_member_name(b, key);
    json_builder_add_int_value(b, (gint64) llround(v));
}

/* The parts of the memory total beside states, activations and transient, in GiB. */
static const struct {
    const char *key;
    gsize off;
} report_memory_parts[] = {
    {"weights_gib", G_STRUCT_OFFSET(SimparMemory, weights_B)},
    {"grads_gib", G_STRUCT_OFFSET(SimparMemory, grads_B)},
    {"optimizer_gib", G_STRUCT_OFFSET(SimparMemory, optimizer_B)},
    {"embedding_gib", G_STRUCT_OFFSET(SimparMemory, embedding_B)},
    {"logits_gib", G_STRUCT_OFFSET(SimparMemory, head_B)},
    {"recompute_gib", G_STRUCT_OFFSET(SimparMemory, recompute_B)},
    {"embedding_weights_gib", G_STRUCT_OFFSET(SimparMemory, embedding_weights_B)},
    {"embedding_grads_gib", G_STRUCT_OFFSET(SimparMemory, embedding_grads_B)},
    {"fp8_gib", G_STRUCT_OFFSET(SimparMemory, fp8_B)}, /* FP8 weight copies and transposes */
};

/* The memory by kind, the five summing to the total: weights (with FP8 training's FP8 copies),
 * gradients and optimizer states (the layers' and the embedding's and output layer's), activations
 * (the layers', the logits kept for the loss, one layer re-created by recomputation), transient
 * buffers. */
static void
report_json_memory_kinds(JsonBuilder *b, const SimparMemory *m)
{
    double ew = m->embedding_weights_B, eg = m->embedding_grads_B;

    const struct {
        const char *key;
        double B;
    } kinds[] = {
        {"weights_gib", m->weights_B + ew + m->fp8_B}, /* FP8 copies and transposes too */
        {"gradients_gib", m->grads_B + eg},
        {"optimizer_states_gib", m->optimizer_B + (m->embedding_B - ew - eg)},
        {"activations_gib", m->activations_B + m->head_B + m->recompute_B},
        {"transient_gib", m->transient_B},
    };

    json_builder_set_member_name(b, "by_kind");
    json_builder_begin_object(b);
    for (guint i = 0; i < G_N_ELEMENTS(kinds); i++)
        report_json_member(b, kinds[i].key, kinds[i].B / GIB);
    json_builder_end_object(b);
}

static void
report_json_memory(JsonBuilder *b, const SimparReportRow *row)
{
    report_json_member(b, "memory_per_gpu_gib", row->memory.total_B / GIB);
    json_builder_set_member_name(b, "memory");
    json_builder_begin_object(b);
    report_json_member(b, "states_gib", row->memory.states_B / GIB);
    report_json_member(b, "activations_gib", row->memory.activations_B / GIB);
    report_json_member(b, "transient_gib", row->memory.transient_B / GIB);
    report_json_member(b, "capacity_gib", row->mem_capacity_B / GIB);
    report_json_member(b, "over_capacity_gib",
                       MAX(row->memory.total_B - row->mem_capacity_B, 0) / GIB);
    report_json_count(b, "params_per_gpu", row->memory.params);
    for (guint i = 0; i < G_N_ELEMENTS(report_memory_parts); i++)
        report_json_member(b, report_memory_parts[i].key,
                           G_STRUCT_MEMBER(double, &row->memory, report_memory_parts[i].off) / GIB);
    report_json_member(b, "micro_batches_held", row->memory.in_flight);
    report_json_count(b, "peak_stage", row->step.peak_stage);
    report_json_memory_kinds(b, &row->memory);
    json_builder_end_object(b);
}

static void
report_json_axes(JsonBuilder *b, const SimparReportRow *row)
{
    json_builder_set_member_name(b, "exposed_comm_by_axis");
    json_builder_begin_array(b);
    for (guint i = 0; i < row->axes->len; i++) {
        const SimparAxisTime *a = &g_array_index(row->axes, SimparAxisTime, i);
        json_builder_begin_object(b);
        json_builder_set_member_name(b, "axis");
        json_builder_add_string_value(b, a->axis);
        json_builder_set_member_name(b, "scope");
        json_builder_add_string_value(b, a->inter ? "inter-node" : "intra-node");
        report_json_member(b, "exposed_s", a->exposed_s);
        json_builder_end_object(b);
    }
    json_builder_end_array(b);
}

static void
report_json_string(JsonBuilder *b, const char *key, const char *v)
{
    json_builder_set_member_name(b, key);
    json_builder_add_string_value(b, v != NULL ? v : "");
}

/* The step's figures; `count`: an integer; `target`: only with --steps-to-target. */
static const struct {
    const char *key;
    gsize off;
    gboolean count, target;
} report_step_fields[] = {
    {"tp_exposed_s", G_STRUCT_OFFSET(SimparReportStep, tp_exposed_s), FALSE, FALSE},
    {"bubble_s", G_STRUCT_OFFSET(SimparReportStep, bubble_s), FALSE, FALSE},
    {"pp_p2p_s", G_STRUCT_OFFSET(SimparReportStep, pp_p2p_s), FALSE, FALSE},
    {"dp_exposed_s", G_STRUCT_OFFSET(SimparReportStep, dp_exposed_s), FALSE, FALSE},
    {"optimizer_s", G_STRUCT_OFFSET(SimparReportStep, optimizer_s), FALSE, FALSE},
    {"mfu", G_STRUCT_OFFSET(SimparReportStep, mfu), FALSE, FALSE},
    {"steps_to_target", G_STRUCT_OFFSET(SimparReportStep, steps_to_target), TRUE, TRUE},
    {"time_to_target_s", G_STRUCT_OFFSET(SimparReportStep, time_to_target_s), FALSE, TRUE},
    {"gpu_hours_to_target", G_STRUCT_OFFSET(SimparReportStep, gpu_hours_to_target), FALSE, TRUE},
    {"pipeline_step_s", G_STRUCT_OFFSET(SimparReportStep, pipeline_step_s), FALSE, FALSE},
    {"moe_dispatch_s", G_STRUCT_OFFSET(SimparReportStep, moe_dispatch_s), FALSE, FALSE},
    {"moe_combine_s", G_STRUCT_OFFSET(SimparReportStep, moe_combine_s), FALSE, FALSE},
    {"moe_experts_s", G_STRUCT_OFFSET(SimparReportStep, moe_experts_s), FALSE, FALSE},
    {"moe_redistribute_s", G_STRUCT_OFFSET(SimparReportStep, moe_redistribute_s), FALSE, FALSE},
    {"moe_expert_tp_s", G_STRUCT_OFFSET(SimparReportStep, moe_expert_tp_s), FALSE, FALSE},
    {"fp8_weight_cast_s", G_STRUCT_OFFSET(SimparReportStep, fp8_cast_s), FALSE, FALSE},
    {"step_slices", G_STRUCT_OFFSET(SimparReportStep, slices), TRUE, FALSE},
    {"tp_ranks", G_STRUCT_OFFSET(SimparReportStep, tp_ranks), TRUE, FALSE},
    {"layer_ranks", G_STRUCT_OFFSET(SimparReportStep, layer_ranks), TRUE, FALSE},
    {"slice_ranks", G_STRUCT_OFFSET(SimparReportStep, slice_ranks), TRUE, FALSE},
    {"step_ranks", G_STRUCT_OFFSET(SimparReportStep, step_ranks), TRUE, FALSE},
};

static void
report_json_step(JsonBuilder *b, const SimparReportRow *row)
{
    report_json_string(b, "split", row->step.split);
    report_json_string(b, "placement", row->step.placement);
    if (row->step.compute != NULL)
        report_json_string(b, "compute", row->step.compute);
    if (row->step.block_backend != NULL) /* blocks not timed on the run's backend */
        report_json_string(b, "block_backend", row->step.block_backend);
    for (guint i = 0; i < G_N_ELEMENTS(report_step_fields); i++) {
        double v = G_STRUCT_MEMBER(double, &row->step, report_step_fields[i].off);
        if (report_step_fields[i].target && row->step.steps_to_target == 0)
            continue; /* no --steps-to-target: absent, not 0 */
        if (g_str_has_prefix(report_step_fields[i].key, "moe_") && row->step.moe_experts_s == 0)
            continue; /* a dense model: absent */
        if ((g_str_equal(report_step_fields[i].key, "moe_redistribute_s") ||
             g_str_equal(report_step_fields[i].key, "moe_expert_tp_s")) &&
            v == 0)
            continue; /* 1-D: the block's tokens are the layer's own rows */
        if (g_str_has_prefix(report_step_fields[i].key, "fp8_") && v == 0)
            continue; /* a model without FP8 weights: absent */
        if (report_step_fields[i].count)
            report_json_count(b, report_step_fields[i].key, v);
        else
            report_json_member(b, report_step_fields[i].key, v);
    }
}

/* ---- the configuration and the model as fields ---- */

void
simpar_report_config_init(SimparReportConfig *c, const SimparModel *model, const SimparTrain *t)
{
    *c = (SimparReportConfig){.set = TRUE,
                              .tp = t->tp.tp,
                              .q = t->tp.q,
                              .depth = t->tp.depth,
                              .cp = simpar_plan_cp(&t->tp),
                              .pp = t->pp,
                              .vp = t->virtual_stages,
                              .vp_group = t->vp_group,
                              .dp = t->dp,
                              .micro_batch = model->micro_batch,
                              .micro_batches = t->micro_batches,
                              .global_batch = t->global_batch,
                              .zero = t->zero,
                              .shard_group = t->shard_group,
                              .sp = t->tp.sequence_parallel,
                              .tied_embeddings = t->tied_embeddings,
                              .overlap_grad_reduce = t->overlap_grad_reduce};
    c->ep = simpar_model_is_moe(model) ? MAX(t->ep, 1) : 0;
    c->deepep = c->ep > 0 && t->moe_dispatcher == SIMPAR_MOE_DEEPEP;
    c->hybridep = c->deepep && model->moe.hybridep;
    c->allgather = c->ep > 0 && t->moe_dispatcher == SIMPAR_MOE_ALLGATHER;
    c->moe_shared_overlap = c->ep > 0 && model->moe.shared_overlap;
    c->ep_overlap = c->ep > 0 && t->ep_overlap;
    c->fp8_attention = model->fp8 != SIMPAR_FP8_NONE && t->tp.fp8_attention;
    c->fp8_output_proj = model->fp8 == SIMPAR_FP8_MXFP8 && t->tp.fp8_output_proj;
    c->tp_comm_overlap = t->tp.tp_comm_overlap;
    c->schedule = g_intern_string(simpar_pipe_schedule_name(t->schedule));
    c->recompute = g_intern_string(simpar_recompute_name(t->tp.recompute));
    if (t->tp.recompute_modules != 0) {
        g_autofree char *mods = simpar_recompute_modules_name(t->tp.recompute_modules);
        c->recompute_modules = g_intern_string(mods);
    }
    c->pipeline_layout = t->layout;
    c->cp_mode = g_intern_static_string(simpar_job_cp_mode_name(t->tp.cp_ring));
    c->dtype = g_intern_string(simpar_dtype_name(model->dtype));
    c->grad_reduce_dtype =
        g_intern_string(simpar_dtype_name(t->grad_dtype_set ? t->grad_dtype : model->dtype));
}

/* The integer, string and boolean members of "config", in order. */
static const struct {
    const char *key;
    gsize off;
    char kind; /* 'i' gint64, 's' interned string, 'b' gboolean */
} report_config_fields[] = {
    {"tp", G_STRUCT_OFFSET(SimparReportConfig, tp), 'i'},
    {"q", G_STRUCT_OFFSET(SimparReportConfig, q), 'i'},
    {"depth", G_STRUCT_OFFSET(SimparReportConfig, depth), 'i'},
    {"sp", G_STRUCT_OFFSET(SimparReportConfig, sp), 'b'},
    {"cp", G_STRUCT_OFFSET(SimparReportConfig, cp), 'i'},
    {"cp_mode", G_STRUCT_OFFSET(SimparReportConfig, cp_mode), 's'},
    {"pp", G_STRUCT_OFFSET(SimparReportConfig, pp), 'i'},
    {"schedule", G_STRUCT_OFFSET(SimparReportConfig, schedule), 's'},
    {"vp", G_STRUCT_OFFSET(SimparReportConfig, vp), 'i'},
    {"vp_group", G_STRUCT_OFFSET(SimparReportConfig, vp_group), 'i'},
    {"dp", G_STRUCT_OFFSET(SimparReportConfig, dp), 'i'},
    {"micro_batch", G_STRUCT_OFFSET(SimparReportConfig, micro_batch), 'i'},
    {"micro_batches", G_STRUCT_OFFSET(SimparReportConfig, micro_batches), 'i'},
    {"global_batch", G_STRUCT_OFFSET(SimparReportConfig, global_batch), 'i'},
    {"zero", G_STRUCT_OFFSET(SimparReportConfig, zero), 'i'},
    {"shard_group", G_STRUCT_OFFSET(SimparReportConfig, shard_group), 'i'},
    {"recompute", G_STRUCT_OFFSET(SimparReportConfig, recompute), 's'},
    {"dtype", G_STRUCT_OFFSET(SimparReportConfig, dtype), 's'},
    {"grad_reduce_dtype", G_STRUCT_OFFSET(SimparReportConfig, grad_reduce_dtype), 's'},
    {"tied_embeddings", G_STRUCT_OFFSET(SimparReportConfig, tied_embeddings), 'b'},
    {"overlap_grad_reduce", G_STRUCT_OFFSET(SimparReportConfig, overlap_grad_reduce), 'b'},
};

static void
report_json_config(JsonBuilder *b, const SimparReportConfig *c, const char *mode)
{
    json_builder_set_member_name(b, "config");
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "tp_mode");
    json_builder_add_string_value(b, mode);
    for (guint i = 0; i < G_N_ELEMENTS(report_config_fields); i++) {
        gsize off = report_config_fields[i].off;
        json_builder_set_member_name(b, report_config_fields[i].key);
        if (report_config_fields[i].kind == 'i')
            json_builder_add_int_value(b, G_STRUCT_MEMBER(gint64, c, off));
        else if (report_config_fields[i].kind == 's')
            json_builder_add_string_value(b, G_STRUCT_MEMBER(const char *, c, off));
        else
            json_builder_add_boolean_value(b, G_STRUCT_MEMBER(gboolean, c, off));
    }
    if (c->ep > 0) { /* an MoE model */
        json_builder_set_member_name(b, "ep");
        json_builder_add_int_value(b, c->ep);
        json_builder_set_member_name(b, "moe_dispatcher");
        json_builder_add_string_value(b, c->deepep      ? "deepep"
                                         : c->allgather ? "allgather"
                                                        : "alltoall");
        if (c->hybridep) {
            json_builder_set_member_name(b, "moe_flex_backend");
            json_builder_add_string_value(b, "hybridep");
        }
        json_builder_set_member_name(b, "moe_shared_expert_overlap");
        json_builder_add_boolean_value(b, c->moe_shared_overlap);
        if (c->ep_overlap) {
            json_builder_set_member_name(b, "overlap_moe_expert_parallel_comm");
            json_builder_add_boolean_value(b, TRUE);
        }
    }
    if (c->tp_comm_overlap) { /* --tp-comm-overlap */
        json_builder_set_member_name(b, "tp_comm_overlap");
        json_builder_add_boolean_value(b, TRUE);
    }
    if (c->fp8_attention) { /* --fp8-dot-product-attention */
        json_builder_set_member_name(b, "fp8_attention");
        json_builder_add_boolean_value(b, TRUE);
    }
    if (c->fp8_output_proj) { /* --fp8-output-proj */
        json_builder_set_member_name(b, "fp8_output_proj");
        json_builder_add_boolean_value(b, TRUE);
    }
    if (c->recompute_modules != NULL) { /* --recompute-modules, other than core_attn alone */
        json_builder_set_member_name(b, "recompute_modules");
        json_builder_add_string_value(b, c->recompute_modules);
    }
    if (c->pipeline_layout != NULL) { /* --pipeline-model-parallel-layout, as given */
        json_builder_set_member_name(b, "pipeline_layout");
        json_builder_add_string_value(b, c->pipeline_layout);
    }
    json_builder_end_object(b);
}

static void
report_json_read_config(JsonObject *o, SimparReportConfig *c)
{
    if (!json_object_has_member(o, "config"))
        return;
    JsonObject *j = json_object_get_object_member(o, "config");
    c->set = TRUE;
    for (guint i = 0; i < G_N_ELEMENTS(report_config_fields); i++) {
        gsize off = report_config_fields[i].off;
        const char *key = report_config_fields[i].key;
        if (report_config_fields[i].kind == 'i')
            G_STRUCT_MEMBER(gint64, c, off) = json_object_get_int_member(j, key);
        else if (report_config_fields[i].kind == 's')
            G_STRUCT_MEMBER(const char *, c, off) =
                g_intern_string(json_object_get_string_member(j, key));
        else
            G_STRUCT_MEMBER(gboolean, c, off) = json_object_get_boolean_member(j, key);
    }
    c->ep = json_object_has_member(j, "ep") ? json_object_get_int_member(j, "ep") : 0;
    JsonNode *dispatcher = json_object_get_member(j, "moe_dispatcher");
    const char *name = dispatcher != NULL && JSON_NODE_HOLDS_VALUE(dispatcher) &&
                               json_node_get_value_type(dispatcher) == G_TYPE_STRING
                           ? json_node_get_string(dispatcher)
                           : "";
    c->deepep = g_str_equal(name, "deepep"), c->allgather = g_str_equal(name, "allgather");
    c->hybridep = c->deepep &&
                  g_strcmp0(json_object_get_string_member_with_default(j, "moe_flex_backend", NULL),
                            "hybridep") == 0;
    c->moe_shared_overlap =
        json_object_get_boolean_member_with_default(j, "moe_shared_expert_overlap", FALSE);
    c->ep_overlap =
        json_object_get_boolean_member_with_default(j, "overlap_moe_expert_parallel_comm", FALSE);
    c->fp8_attention = json_object_get_boolean_member_with_default(j, "fp8_attention", FALSE);
    c->fp8_output_proj = json_object_get_boolean_member_with_default(j, "fp8_output_proj", FALSE);
    c->tp_comm_overlap = json_object_get_boolean_member_with_default(j, "tp_comm_overlap", FALSE);
    const char *mods = json_object_get_string_member_with_default(j, "recompute_modules", NULL);
    c->recompute_modules = mods != NULL ? g_intern_string(mods) : NULL;
    const char *layout = json_object_get_string_member_with_default(j, "pipeline_layout", NULL);
    c->pipeline_layout = layout != NULL ? g_intern_string(layout) : NULL;
}

/* The model's figures that differ from the preset of its name, "hidden, heads" (transfer
 * full); NULL when it is a preset as it stands, or no preset's name. */
static char *
report_model_modified(const SimparModel *m)
{
    SimparModel p;
    if (!simpar_model_preset(m->name, &p, NULL))
        return NULL;

    const struct {
        const char *name;
        gboolean differs;
    } f[] = {
        {"hidden", m->hidden != p.hidden},
        {"heads", m->heads != p.heads},
        /* multi-head attention stays so when the heads change */
        {"kv_heads", (simpar_model_kv_heads(m) == m->heads ? 0 : simpar_model_kv_heads(m)) !=
                         (simpar_model_kv_heads(&p) == p.heads ? 0 : simpar_model_kv_heads(&p))},
        {"head_dim", m->head_dim != p.head_dim},
        {"ffn", m->ffn != p.ffn},
        {"layers", m->layers != p.layers},
        {"seq", m->seq != p.seq},
        {"vocab", m->vocab != p.vocab},
        {"dtype", m->dtype != p.dtype},
        {"mlp", m->mlp != p.mlp},
        {"norm", m->norm != p.norm},
        {"bias", m->no_bias != p.no_bias},
        {"dropout", m->no_dropout != p.no_dropout},
        {"moe", memcmp(&m->moe, &p.moe, sizeof m->moe) != 0},
        {"mla", memcmp(&m->mla, &p.mla, sizeof m->mla) != 0},
        {"mtp_layers", m->mtp_layers != p.mtp_layers},
    };

    GString *s = g_string_new(NULL);
    for (guint i = 0; i < G_N_ELEMENTS(f); i++)
        if (f[i].differs)
            g_string_append_printf(s, "%s%s", s->len > 0 ? ", " : "", f[i].name);
    return g_string_free(s, s->len == 0); /* (transfer full) */
}

/* "moe": an MoE model's experts (model.h, SimparMoeConfig). */
static void
report_json_moe(JsonBuilder *b, const SimparModel *m)
{
    const SimparMoeConfig *e = &m->moe;
    json_builder_set_member_name(b, "moe");
    json_builder_begin_object(b);

    const struct {
        const char *key;
        gint64 v;
    } ints[] = {{"experts", e->experts},           {"top_k", e->top_k},
                {"moe_ffn", e->moe_ffn},           {"shared_ffn", e->shared_ffn},
                {"dense_layers", e->dense_layers}, {"moe_every", MAX(e->moe_every, 1)},
                {"expert_groups", e->groups},      {"group_limit", e->group_limit}};

    for (guint i = 0; i < G_N_ELEMENTS(ints); i++) {
        json_builder_set_member_name(b, ints[i].key);
        json_builder_add_int_value(b, ints[i].v);
    }
    report_json_string(b, "router", simpar_router_name((SimparRouterScore) e->router));
    report_json_member(b, "capacity_factor", e->capacity);
    report_json_member(b, "imbalance", MAX(e->imbalance, 1.0));
    json_builder_end_object(b);
}

/* "mla": a multi-head latent attention's figures (model.h, SimparMlaConfig). */
static void
report_json_mla(JsonBuilder *b, const SimparModel *m)
{
    const SimparMlaConfig *l = &m->mla;

    const struct {
        const char *key;
        gint64 v;
    } ints[] = {{"q_lora_rank", l->q_lora_rank},
                {"kv_lora_rank", l->kv_lora_rank},
                {"qk_head_dim", l->qk_head_dim},
                {"qk_pos_emb_head_dim", l->qk_pos_emb_head_dim},
                {"v_head_dim", l->v_head_dim}};

    json_builder_set_member_name(b, "mla");
    json_builder_begin_object(b);
    for (guint i = 0; i < G_N_ELEMENTS(ints); i++) {
        json_builder_set_member_name(b, ints[i].key);
        json_builder_add_int_value(b, ints[i].v);
    }
    json_builder_end_object(b);
}

/* "mtp": the multi-token prediction modules and the parameters with and without them. */
static void
report_json_mtp(JsonBuilder *b, const SimparModel *m)
{
    double p[3];
    report_mtp_params(m, p);
    json_builder_set_member_name(b, "mtp");
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "layers");
    json_builder_add_int_value(b, m->mtp_layers);
    report_json_count(b, "main_params", p[0]);
    report_json_count(b, "mtp_params", p[1]);
    report_json_count(b, "stored_params", p[2]);
    json_builder_end_object(b);
}

/* "model": the name, "gpt3-13b (modified: hidden, heads)" when the flags changed a preset's
 * figures; "model_dims": the figures as used. */
static void
report_json_model(JsonBuilder *b, const SimparModel *m)
{
    g_autofree char *modified = report_model_modified(m);
    g_autofree char *name =
        modified != NULL ? g_strdup_printf("%s (modified: %s)", m->name, modified) : NULL;
    report_json_string(b, "model", name != NULL ? name : m->name);
    json_builder_set_member_name(b, "model_dims");
    json_builder_begin_object(b);
    report_json_string(b, "name", m->name);
    json_builder_set_member_name(b, "modified");
    json_builder_begin_array(b);
    g_auto(GStrv) parts = modified != NULL ? g_strsplit(modified, ", ", -1) : NULL;
    for (guint i = 0; parts != NULL && parts[i] != NULL; i++)
        json_builder_add_string_value(b, parts[i]);
    json_builder_end_array(b);

    const struct {
        const char *key;
        gint64 v;
    } dims[] = {
        {"hidden", m->hidden}, {"heads", m->heads},   {"kv_heads", simpar_model_kv_heads(m)},
        {"ffn", m->ffn},       {"layers", m->layers}, {"seq", m->seq},
        {"vocab", m->vocab}};

    for (guint i = 0; i < G_N_ELEMENTS(dims); i++) {
        json_builder_set_member_name(b, dims[i].key);
        json_builder_add_int_value(b, dims[i].v);
    }
    if (m->head_dim != 0) { /* a head's width where it is not h/a */
        json_builder_set_member_name(b, "head_dim");
        json_builder_add_int_value(b, m->head_dim);
    }
    report_json_string(b, "dtype", simpar_dtype_name(m->dtype));
    report_json_string(b, "mlp", simpar_mlp_name(m->mlp));
    report_json_string(b, "norm", simpar_norm_name(m->norm));
    json_builder_set_member_name(b, "bias");
    json_builder_add_boolean_value(b, !m->no_bias);
    json_builder_set_member_name(b, "dropout");
    json_builder_add_boolean_value(b, !m->no_dropout);
    if (simpar_model_is_moe(m))
        report_json_moe(b, m);
    if (simpar_model_is_mla(m))
        report_json_mla(b, m);
    if (m->mtp_layers > 0)
        report_json_mtp(b, m);
    json_builder_end_object(b);
}

static void
report_json_row(JsonBuilder *b, const SimparReport *rep, const SimparReportRow *row)
{
    json_builder_begin_object(b);
    simpar_json_head(b, "simpar-prediction", SIMPAR_REPORT_JSON_VERSION);
    json_builder_set_member_name(b, "mode");
    json_builder_add_string_value(b, row->gen->name);
    json_builder_set_member_name(b, "grid");
    json_builder_add_string_value(b, row->grid);
    json_builder_set_member_name(b, "gpus");
    json_builder_add_int_value(b, row->gpus);
    report_json_model(b, rep->model);
    if (rep->model->fp8 != SIMPAR_FP8_NONE) /* the linears' GEMMs in FP8, this recipe */
        report_json_string(b, "fp8_recipe", simpar_fp8_recipe_name(rep->model->fp8));

    report_json_string(b, "topology", rep->topology);
    report_json_string(b, "simpar_version", SIMPAR_VERSION);
    json_builder_set_member_name(b, "backend");
    json_builder_add_string_value(b, rep->backend);
    json_builder_set_member_name(b, "collectives");
    json_builder_add_string_value(b, rep->coll_mode);
    json_builder_set_member_name(b, "attention");
    json_builder_add_string_value(b, rep->attention);
    json_builder_set_member_name(b, "simulated");
    json_builder_add_boolean_value(b, row->skipped == NULL);
    if (row->skipped != NULL) {
        json_builder_set_member_name(b, "reason");
        json_builder_add_string_value(b, row->skipped);
    } else {
        const struct {
            const char *key;
            double v;
        } f[] = {{"step_time_s", row->step_s},
                 {"forward_s", row->forward_s},
                 {"backward_s", row->backward_s},
                 {"compute_s", row->compute_s},
                 {"exposed_comm_s", row->exposed_s},
                 {"exposed_intra_node_s", row->exposed_intra_s},
                 {"exposed_inter_node_s", row->exposed_inter_s},
                 {"other_wait_s", row->other_s},
                 {"tflops_per_gpu", row->tflops_per_gpu},
                 {"model_flops", row->model_flops},
                 {"comm_bytes_per_gpu", row->comm_bytes_per_gpu}};

        for (guint i = 0; i < G_N_ELEMENTS(f); i++)
            report_json_member(b, f[i].key, f[i].v);
        report_json_axes(b, row);
        report_json_step(b, row);
        if (row->config.set)
            report_json_config(b, &row->config, row->gen->name);
    }
    report_json_memory(b, row);
    json_builder_end_object(b);
}

char *
simpar_report_to_json(const SimparReport *rep)
{
    g_autoptr(JsonBuilder) b = json_builder_new();
    json_builder_begin_array(b);
    for (guint i = 0; i < rep->rows->len; i++)
        report_json_row(b, rep, &g_array_index(rep->rows, SimparReportRow, i));
    json_builder_end_array(b);
    return simpar_json_builder_text(b, NULL); /* (transfer full) */
}

/* ------------------------------------------------------------------------------ Chrome trace */

/* Layer ops go on these thread ids, after the step's own streams. */
#define REPORT_TRACE_LAYER_TID 100

/* What writing one schedule's events needs: its run (the algorithms of its collectives) and
 * what was looked up already. */
typedef struct {
    SimparTrace *t;
    const SimparRun *run;
    GHashTable *algos; /* op -> ReportAlgo (owned) */
    const SimparTraceRank *who;
    const guint *run_job;
    guint *p2p_peer;     /* per op of a step schedule: the other end of a send or recv, or
                            G_MAXUINT; NULL for a layer's */
    guint *coll_ord;     /* per op: a collective's ordinal on its group at its rank */
    GHashTable *coll_at; /* report_coll_key(group, member index, ordinal) -> op + 1 */
    GHashTable *traced;  /* report_traced_key(base, rank) of the ranks the trace shows */
    guint64 base;        /* the rank's: its slice (step) or its layer's base (layer) */
    char scope[96];      /* what keeps apart the collective flows of runs alike */
} ReportTrace;

/* The algorithm and protocol a collective runs with (names from their tables, static). */
typedef struct {
    const char *algo, *proto;
} ReportAlgo;

/* "ring" and "simple": the algorithm and protocol collective `op` runs with, looked up once. */
static void
report_trace_algo(ReportTrace *rt, const SimparOp *op, const char **algo, const char **proto)
{
    ReportAlgo *found = g_hash_table_lookup(rt->algos, op);
    if (found == NULL) {
        SimparProto p;
        found = g_new(ReportAlgo, 1);
        found->algo = simpar_run_coll_algo(rt->run, op, &p)->name;
        found->proto = simpar_nccl_proto_name(p);
        g_hash_table_insert(rt->algos, (gpointer) op, found);
    }
    *algo = found->algo, *proto = found->proto;
}

/* One op from start to end. */
static void
report_trace_op(ReportTrace *rt, const SimparOp *op, guint layer, guint pid, guint tid,
                double start, double end)
{
    const SimparSchedule *s = rt->run->sched;
    SimparTraceArgs a = {layer, NULL, NULL, -1, -1, NULL, NULL, NULL};
    double elems = 0;
    if (op->kind == SIMPAR_OP_COLLECTIVE) {
        a.kind = simpar_coll_kind_name(op->u.coll.kind);
        a.axis = simpar_schedule_group(s, op->u.coll.group)->axis;
        elems = (double) simpar_op_coll_elems(s, op);
        if (simpar_schedule_group(s, op->u.coll.group)->size > 1)
            report_trace_algo(rt, op, &a.algo, &a.proto);
    } else if (op->kind == SIMPAR_OP_SEND || op->kind == SIMPAR_OP_RECV) {
        guint g = simpar_schedule_group_of_pair(s, op->rank, op->u.p2p.peer);
        a.axis = g != G_MAXUINT ? simpar_schedule_group(s, g)->axis : NULL;
        elems = (double) op->u.p2p.count;
        if (rt->who != NULL) /* a step's transfer: the peer's job rank */
            a.peer = rt->run_job == NULL
                         ? op->u.p2p.peer
                         : (gint64) rt->run_job[op->u.p2p.peer] +
                               ((gint64) rt->who->job_rank - rt->run_job[rt->who->run_rank]);
    }
    if (elems > 0)
        a.bytes = elems * simpar_dtype_size(simpar_schedule_dtype(s));
    simpar_trace_event(rt->t, op->name, simpar_op_kind_name(op->kind), pid, tid, start, end, &a);
}

/* A transfer's two ends, as the replay pairs them: by (sender, receiver, tag), then issue
 * order (sim/replay.c). */
typedef struct {
    guint src, dst, tag, op;
} ReportEnd;

static int
report_end_cmp(gconstpointer pa, gconstpointer pb)
{
    const ReportEnd *a = pa, *b = pb;
    if (a->src != b->src)
        return a->src < b->src ? -1 : 1;
    if (a->dst != b->dst)
        return a->dst < b->dst ? -1 : 1;
    if (a->tag != b->tag)
        return a->tag < b->tag ? -1 : 1;
    return (a->op > b->op) - (a->op < b->op);
}

/* Per op: the other end of a send or recv, G_MAXUINT for the rest (transfer full). */
static guint *
report_p2p_pairs(const SimparSchedule *s)
{
    guint n = simpar_schedule_n_ops(s);
    guint *peer = g_new(guint, n);
    g_autoptr(GArray) sends = g_array_new(FALSE, FALSE, sizeof(ReportEnd));
    g_autoptr(GArray) recvs = g_array_new(FALSE, FALSE, sizeof(ReportEnd));
    for (guint i = 0; i < n; i++) {
        const SimparOp *op = simpar_schedule_op(s, i);
        peer[i] = G_MAXUINT;
        if (op->kind == SIMPAR_OP_SEND) {
            ReportEnd e = {op->rank, op->u.p2p.peer, op->u.p2p.tag, i};
            g_array_append_val(sends, e);
        } else if (op->kind == SIMPAR_OP_RECV) {
            ReportEnd e = {op->u.p2p.peer, op->rank, op->u.p2p.tag, i};
            g_array_append_val(recvs, e);
        }
    }
    g_array_sort(sends, report_end_cmp);
    g_array_sort(recvs, report_end_cmp);
    for (guint k = 0; k < sends->len && k < recvs->len; k++) {
        const ReportEnd *a = &g_array_index(sends, ReportEnd, k);
        const ReportEnd *b = &g_array_index(recvs, ReportEnd, k);
        if (a->src == b->src && a->dst == b->dst && a->tag == b->tag)
            peer[a->op] = b->op, peer[b->op] = a->op;
    }
    return peer;
}

/* A send or recv whose other end came later waited for it: the transfer runs from when both
 * ends are there. `*start` becomes that time, and the wait before it is drawn apart (a "wait"
 * event, args.for the other end). */
static void
report_trace_p2p_wait(ReportTrace *rt, const SimparOp *op, guint i, guint layer, guint pid,
                      guint tid, double *start, const SimparSpan *base)
{
    if (rt->p2p_peer == NULL || rt->p2p_peer[i] == G_MAXUINT)
        return;
    const SimparSpan *other = &base[rt->p2p_peer[i]];
    if (!(other->end >= other->start && other->start > *start + 1e-12) ||
        other->start > base[i].end)
        return;
    const SimparOp *peer = simpar_schedule_op(rt->run->sched, rt->p2p_peer[i]);
    SimparTraceArgs a = {layer, NULL, NULL, -1, -1, NULL, NULL, peer->name};
    simpar_trace_event(rt->t, "wait", "wait", pid, tid, *start, other->start, &a);
    *start = other->start;
    (void) op;
}

/* A flow arrow from a send's transfer to its recv's: each end is written by its own rank, with
 * an id both compute (the mode, the sender's job rank, the layer, the send op). */
static void
report_trace_flow(ReportTrace *rt, const SimparOp *op, guint i, guint mode_index, guint layer,
                  guint pid, double start)
{
    if (rt->p2p_peer == NULL || rt->p2p_peer[i] == G_MAXUINT || rt->who == NULL)
        return;
    gboolean send = op->kind == SIMPAR_OP_SEND;
    gint64 me = rt->who->job_rank;
    gint64 peer = rt->run_job == NULL
                      ? op->u.p2p.peer
                      : (gint64) rt->run_job[op->u.p2p.peer] +
                            ((gint64) rt->who->job_rank - rt->run_job[rt->who->run_rank]);
    char id[96];
    g_snprintf(id, sizeof id, "%u.%" G_GINT64_FORMAT ".%u.%u", mode_index, send ? me : peer, layer,
               send ? i : rt->p2p_peer[i]);
    simpar_trace_flow(rt->t, send, "transfer", id, pid, op->stream, start);
}

/* (group, member index, ordinal) as one key; G_MAXUINT64 past its bits. */
static guint64
report_coll_key(guint group, guint member, guint ord)
{
    if (group >= 1u << 20 || member >= 1u << 20 || ord >= 1u << 24)
        return G_MAXUINT64;
    return (guint64) group << 44 | (guint64) member << 24 | ord;
}

/* Every collective's ordinal among its rank's collectives on its group (the members of a group
 * issue its collectives in one order, as NCCL wants), into rt->coll_ord, and the op of every
 * (group, member, ordinal) into rt->coll_at. */
static void
report_coll_order(ReportTrace *rt, const SimparSchedule *s)
{
    guint n_ops = simpar_schedule_n_ops(s);
    rt->coll_ord = g_new(guint, n_ops);
    rt->coll_at = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, NULL);
    g_autoptr(GHashTable) count = g_hash_table_new(NULL, NULL); /* group + 1 -> collectives */
    for (guint r = 0; r < simpar_schedule_n_ranks(s); r++) {
        g_hash_table_remove_all(count);
        guint n;
        const guint *ops = simpar_schedule_rank_ops(s, r, &n);
        for (guint i = 0; i < n; i++) {
            const SimparOp *op = simpar_schedule_op(s, ops[i]);
            rt->coll_ord[ops[i]] = G_MAXUINT;
            if (op->kind != SIMPAR_OP_COLLECTIVE)
                continue;
            gpointer g = GUINT_TO_POINTER(op->u.coll.group + 1);
            guint k = GPOINTER_TO_UINT(g_hash_table_lookup(count, g));
            g_hash_table_insert(count, g, GUINT_TO_POINTER(k + 1));
            guint64 key =
                report_coll_key(op->u.coll.group, simpar_group_index(s, op->u.coll.group, r), k);
            if (key == G_MAXUINT64)
                continue;
            rt->coll_ord[ops[i]] = k;
            guint64 *owned = g_new(guint64, 1);
            *owned = key;
            g_hash_table_insert(rt->coll_at, owned, GUINT_TO_POINTER(ops[i] + 1));
        }
    }
}

static void
report_coll_clear(ReportTrace *rt)
{
    g_clear_pointer(&rt->coll_ord, g_free);
    g_clear_pointer(&rt->coll_at, g_hash_table_unref);
    g_clear_pointer(&rt->traced, g_hash_table_unref);
}

/* A rank the trace shows, as its schedule knows it: its slice (or its layer's base) and its run
 * (or layer) rank. */
static gint64 *
report_traced_key(guint64 base, guint rank)
{
    gint64 *key = g_new(gint64, 1);
    *key = (gint64) (base << 32 | rank);
    return key;
}

/* The ranks the trace shows, for the step's collectives (by slice and run rank) and the
 * layers' (by the layer's base and layer rank): an arrow is drawn only between two of them. */
static void
report_traced(ReportTrace *rt, ReportTrace *lt, const SimparTraceRank *ranks, guint n,
              const guint *run_job)
{
    rt->traced = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, NULL);
    lt->traced = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, NULL);
    for (guint k = 0; k < n; k++) {
        guint64 slice = run_job == NULL ? 0 : ranks[k].job_rank - run_job[ranks[k].run_rank];
        g_hash_table_add(rt->traced, report_traced_key(slice, ranks[k].run_rank));
        g_hash_table_add(lt->traced, report_traced_key(ranks[k].layer_base, ranks[k].layer_rank));
    }
}

/* Per stream of the MoE block: the layer stream of its name, or one after the layer's
 * (report_trace_streams names them) (transfer full). */
static guint *
report_moe_tids(const SimparSchedule *layer, const SimparSchedule *moe)
{
    guint n = simpar_schedule_n_streams(moe), n_layer = simpar_schedule_n_streams(layer);
    guint *tids = g_new(guint, n), extra = n_layer;
    for (guint st = 0; st < n; st++) {
        tids[st] = G_MAXUINT;
        for (guint j = 0; j < n_layer && tids[st] == G_MAXUINT; j++)
            if (g_str_equal(simpar_schedule_stream_name(moe, st),
                            simpar_schedule_stream_name(layer, j)))
                tids[st] = j;
        if (tids[st] == G_MAXUINT)
            tids[st] = extra++;
    }
    return tids;
}

/* The ranks the trace shows, for the MoE block's collectives (by their group's first job rank
 * and MoE rank); none for a dense model. */
static void
report_traced_moe(ReportTrace *mt, const SimparTraceRank *ranks, guint n)
{
    if (mt->run == NULL)
        return;
    mt->traced = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, NULL);
    for (guint k = 0; k < n; k++)
        g_hash_table_add(mt->traced, report_traced_key(ranks[k].moe_base, ranks[k].moe_rank));
}

/* The names of the MoE block's streams the layer schedule does not have. */
static void
report_trace_moe_streams(SimparTrace *t, guint pid, const SimparSchedule *layer,
                         const SimparSchedule *moe)
{
    g_autofree guint *tids = report_moe_tids(layer, moe);
    for (guint st = 0; st < simpar_schedule_n_streams(moe); st++)
        if (tids[st] >= simpar_schedule_n_streams(layer)) {
            g_autofree char *name =
                g_strdup_printf("layer %s", simpar_schedule_stream_name(moe, st));
            simpar_trace_meta(t, "thread_name", pid, REPORT_TRACE_LAYER_TID + tids[st], name);
        }
}

/* Flow arrows joining the members of collective `op` (op index i) in their group's order: from
 * each member to the next, each end written by its own rank, at the time both run the
 * collective (the later start, and halfway to the earlier end), with an id both compute
 * (rt->scope, the group, the ordinal, the member the arrow leaves). `base` gives the spans of
 * the schedule's ops, `offset` what to add to them. */
static void
report_trace_coll_flow(ReportTrace *rt, const SimparOp *op, guint i, guint pid, guint tid,
                       const SimparSpan *base, double offset)
{
    if (op->kind != SIMPAR_OP_COLLECTIVE || rt->coll_ord == NULL || rt->coll_ord[i] == G_MAXUINT)
        return;
    const SimparSchedule *s = rt->run->sched;
    guint g = op->u.coll.group, k = rt->coll_ord[i];
    guint size = simpar_schedule_group(s, g)->size, me = simpar_group_index(s, g, op->rank);
    for (guint leave = 0; leave < 2; leave++) { /* the arrow leaving me, then the one reaching me */
        guint other = leave == 0 ? me + 1 : me - 1;
        if (leave == 0 ? me + 1 >= size : me == 0)
            continue;
        guint64 key = report_coll_key(g, other, k);
        guint at = GPOINTER_TO_UINT(g_hash_table_lookup(rt->coll_at, &key));
        g_autofree gint64 *peer =
            report_traced_key(rt->base, simpar_schedule_group_ranks(s, g)[other]);
        if (at == 0 || !g_hash_table_contains(rt->traced, peer))
            continue; /* the other end is not in the trace: no arrow */
        const SimparSpan *a = &base[i], *b = &base[at - 1];
        double from = MAX(a->start, b->start), to = MIN(a->end, b->end);
        char id[160];
        g_snprintf(id, sizeof id, "%s.%u.%u.%u", rt->scope, g, k, leave == 0 ? me : other);
        simpar_trace_flow(rt->t, leave == 0, "collective", id, pid, tid,
                          offset + (leave == 0 ? from : MAX(from, (from + to) / 2)));
    }
}

/* The rank's memory after block `op` ends: a forward layer block keeps its layers' activations,
 * a backward one frees them. */
static void
report_trace_memory(SimparTrace *t, const SimparTraceRank *who, const SimparOp *op, guint pid,
                    double end, double *held)
{
    const char *key = op->u.block.key;
    gboolean dense = g_str_equal(key, "dense.fwd") || g_str_equal(key, "dense.bwd");
    gboolean fwd = g_str_equal(key, "layer.fwd") || g_str_equal(key, "dense.fwd");
    if (who->states_B <= 0 || (!fwd && !dense && !g_str_equal(key, "layer.bwd")))
        return;
    double one = dense ? who->dense_activations_B : who->layer_activations_B;
    *held += (fwd ? 1 : -1) * (double) op->u.block.count * one;
    simpar_trace_counter(t, "memory", pid, end, "GiB", (who->states_B + MAX(*held, 0)) / GIB);
}

/* Whether a trace shows the op: one that takes time, or any communication. */
static gboolean
report_trace_shown(const SimparOp *op, const SimparSpan *sp)
{
    return sp->end > sp->start || op->kind == SIMPAR_OP_COLLECTIVE || op->kind == SIMPAR_OP_SEND ||
           op->kind == SIMPAR_OP_RECV;
}

/* The op's compute stream (stream 0) idled from `idle` (its previous op's end) to its start: a
 * "wait" event,
 * args.for the op it waited for (the dep that ended last, or, with no later dep, the op
 * itself: its peers or its group). `ends` gives each dep's end. */
static void
report_trace_wait(ReportTrace *rt, const SimparOp *op, guint layer, guint pid, guint tid,
                  double idle, double start, const SimparSpan *base)
{
    if (op->stream != 0 || !(start > idle + 1e-12))
        return; /* the compute stream's waits: what a GPU's compute waits for */
    const SimparSchedule *s = rt->run->sched;
    const char *what = op->name;
    double last = idle;
    const guint *deps = simpar_schedule_deps(s, op);
    for (guint d = 0; d < op->n_deps; d++) {
        double e = base[deps[d]].end;
        if (e > last && e <= start + 1e-12)
            last = e, what = simpar_schedule_op(s, deps[d])->name;
    }
    SimparTraceArgs a = {layer, NULL, NULL, -1, -1, NULL, NULL, what};
    simpar_trace_event(rt->t, "wait", "wait", pid, tid, idle, start, &a);
}

/* The ops of rank `r` of one part of a layer (the layer schedule or the MoE block: pt->run,
 * their spans `spans` within the part) in layer k of a block, the part starting at `base`;
 * `tids` the layer stream each of the part's streams is drawn on, `idle` each layer stream's
 * last end, `at` the ops' spans in the trace (for the waits' deps). */
static void
report_trace_part(ReportTrace *pt, const SimparSpan *spans, guint r, gboolean fwd, guint k,
                  guint pid, double base, const guint *tids, double *idle, SimparSpan *at,
                  const char *scope)
{
    guint n;
    const guint *ops = simpar_schedule_rank_ops(pt->run->sched, r, &n);
    for (guint i = 0; i < n; i++) {
        const SimparOp *x = simpar_schedule_op(pt->run->sched, ops[i]);
        const SimparSpan *sp = &spans[ops[i]];
        if ((x->phase == SIMPAR_PHASE_FORWARD) != fwd || sp->end < 0)
            continue;
        at[ops[i]] = (SimparSpan){base + sp->start, base + sp->end};
        if (!report_trace_shown(x, sp))
            continue;
        guint st = tids[x->stream], tid = REPORT_TRACE_LAYER_TID + st;
        report_trace_wait(pt, x, k, pid, tid, idle[st], at[ops[i]].start, at);
        report_trace_op(pt, x, k, pid, tid, at[ops[i]].start, at[ops[i]].end);
        g_snprintf(pt->scope, sizeof pt->scope, "%s.%u", scope, k);
        report_trace_coll_flow(pt, x, ops[i], pid, tid, spans, base);
        idle[st] = MAX(idle[st], at[ops[i]].end);
    }
}

/* The ops standing for the `count` layers of block op `op` (rank pid): layer rank
 * who->layer_rank's and, for an MoE model, MoE rank who->moe_rank's (mt), or for an MoE model's
 * dense layers' blocks the dense layer's (dt), and their streams' waits inside the block;
 * `scope` and `moe_scope` keep the flows of their collectives apart. */
static void
report_trace_layers(ReportTrace *lt, ReportTrace *mt, ReportTrace *dt, const SimparTraceLayer *tl,
                    const SimparOp *op, const SimparTraceRank *who, guint pid, const SimparSpan *sp,
                    const char *scope, const char *moe_scope)
{
    const char *key = op->u.block.key;
    gboolean dense = g_str_equal(key, "dense.fwd") || g_str_equal(key, "dense.bwd");
    gboolean fwd = g_str_equal(key, "layer.fwd") || g_str_equal(key, "dense.fwd");
    if ((!fwd && !dense && !g_str_equal(key, "layer.bwd")) || (dense && tl->dense_run == NULL))
        return;
    ReportTrace *pt = dense ? dt : lt; /* the layer schedule the block stands for */
    double per = (sp->end - sp->start) / MAX(op->u.block.count, 1);
    const SimparSchedule *ls = tl->run->sched, *ps = pt->run->sched;
    const SimparSchedule *ms = tl->moe_run != NULL && !dense ? tl->moe_run->sched : NULL;
    guint n_streams = simpar_schedule_n_streams(ls);
    /* the dense layer's streams drawn on the layer's of the same names */
    g_autofree guint *tids = report_moe_tids(ls, ps);
    g_autofree guint *moe_tids = ms != NULL ? report_moe_tids(ls, ms) : NULL;
    guint n_tids = n_streams + simpar_schedule_n_streams(ps) +
                   (ms != NULL ? simpar_schedule_n_streams(ms) : 0);
    g_autofree double *idle = g_new(double, n_tids);
    g_autofree SimparSpan *at = g_new0(SimparSpan, simpar_schedule_n_ops(ps));
    g_autofree SimparSpan *moe_at =
        ms != NULL ? g_new0(SimparSpan, simpar_schedule_n_ops(ms)) : NULL;
    for (guint st = 0; st < n_tids; st++)
        idle[st] = sp->start;
    for (guint k = 0; k < op->u.block.count; k++) {
        double base = sp->start + k * per;
        if (ms != NULL && !fwd) /* the MoE block's backward comes first */
            report_trace_part(mt, tl->moe_spans, who->moe_rank, fwd, k, pid, base, moe_tids, idle,
                              moe_at, moe_scope);
        report_trace_part(pt, dense ? tl->dense_spans : tl->spans, who->layer_rank, fwd, k, pid,
                          ms != NULL && !fwd ? base + tl->moe_part_s[1] : base, tids, idle, at,
                          scope);
        if (ms != NULL && fwd)
            report_trace_part(mt, tl->moe_spans, who->moe_rank, fwd, k, pid, base + tl->part_s[0],
                              moe_tids, idle, moe_at, moe_scope);
    }
}

void
simpar_report_trace(SimparTrace *t, guint mode_index, const char *mode, const SimparRun *run,
                    const SimparSpan *spans, const SimparTraceRank *ranks, guint n_ranks,
                    const guint *run_job, const SimparTraceLayer *layers)
{
    const SimparSchedule *s = run->sched;
    guint n_ops = simpar_schedule_n_ops(s), n_streams = simpar_schedule_n_streams(s);
    g_autoptr(GHashTable) algos = g_hash_table_new_full(NULL, NULL, NULL, g_free);
    g_autoptr(GHashTable) layer_algos = g_hash_table_new_full(NULL, NULL, NULL, g_free);
    g_autofree guint *pairs = report_p2p_pairs(s);
    ReportTrace rt = {.t = t, .run = run, .algos = algos, .run_job = run_job, .p2p_peer = pairs};
    ReportTrace lt = {.t = t, .run = layers != NULL ? layers->run : NULL, .algos = layer_algos};
    const SimparRun *moe = layers != NULL ? layers->moe_run : NULL;
    ReportTrace mt = {.t = t, .run = moe, .algos = layer_algos};
    const SimparRun *dense = layers != NULL ? layers->dense_run : NULL;
    ReportTrace dt = {.t = t, .run = dense, .algos = layer_algos};
    report_coll_order(&rt, s);
    if (layers != NULL)
        report_coll_order(&lt, layers->run->sched);
    if (moe != NULL)
        report_coll_order(&mt, moe->sched);
    if (dense != NULL)
        report_coll_order(&dt, dense->sched);
    report_traced(&rt, &lt, ranks, n_ranks, run_job);
    report_traced_moe(&mt, ranks, n_ranks);
    if (dense != NULL) /* the dense layer's ranks are the layer's */
        dt.traced = g_hash_table_ref(lt.traced);
    g_autofree double *idle = g_new(double, n_streams);
    for (guint k = 0; k < n_ranks; k++) {
        const SimparTraceRank *who = &ranks[k];
        rt.who = who;
        guint pid = mode_index * 100000 + who->job_rank;
        g_autofree char *pname =
            g_strdup_printf("%s rank %u (GPU %u)", mode, who->job_rank, who->gpu);
        simpar_trace_meta(t, "process_name", pid, 0, pname);
        for (guint st = 0; st < n_streams; st++)
            simpar_trace_meta(t, "thread_name", pid, st, simpar_schedule_stream_name(s, st));
        for (guint st = 0; layers != NULL && st < simpar_schedule_n_streams(layers->run->sched);
             st++) {
            g_autofree char *name =
                g_strdup_printf("layer %s", simpar_schedule_stream_name(layers->run->sched, st));
            simpar_trace_meta(t, "thread_name", pid, REPORT_TRACE_LAYER_TID + st, name);
        }
        if (moe != NULL)
            report_trace_moe_streams(t, pid, layers->run->sched, moe->sched);
        mt.base = who->moe_base, lt.base = dt.base = who->layer_base; /* the rank's groups */
        guint n;
        const guint *ops = simpar_schedule_rank_ops(s, who->run_rank, &n);
        double held = 0; /* the layer activations the rank holds */
        if (who->states_B > 0)
            simpar_trace_counter(t, "memory", pid, 0, "GiB", who->states_B / GIB);
        gint64 slice = run_job == NULL ? 0 : (gint64) who->job_rank - run_job[who->run_rank];
        rt.base = (guint64) slice;
        for (guint l = 0; l < run->n_layers; l++) {
            for (guint st = 0; st < n_streams; st++)
                idle[st] = 0;
            guint blocks = 0; /* the rank's layer blocks so far */
            g_snprintf(rt.scope, sizeof rt.scope, "c%u.s%" G_GINT64_FORMAT ".%u", mode_index, slice,
                       l);
            for (guint i = 0; i < n; i++) {
                const SimparOp *op = simpar_schedule_op(s, ops[i]);
                const SimparSpan *sp = &spans[l * n_ops + ops[i]];
                if (report_trace_shown(op, sp)) {
                    double start = sp->start;
                    report_trace_wait(&rt, op, l, pid, op->stream, idle[op->stream], sp->start,
                                      spans + l * n_ops);
                    report_trace_p2p_wait(&rt, op, ops[i], l, pid, op->stream, &start,
                                          spans + l * n_ops);
                    report_trace_op(&rt, op, l, pid, op->stream, start, sp->end);
                    report_trace_flow(&rt, op, ops[i], mode_index, l, pid, start);
                    report_trace_coll_flow(&rt, op, ops[i], pid, op->stream, spans + l * n_ops, 0);
                    idle[op->stream] = MAX(idle[op->stream], sp->end);
                }
                if (layers != NULL && op->kind == SIMPAR_OP_BLOCK) {
                    char scope[64], moe_scope[64]; /* the layer's replica and stage (the MoE
                                                      block's group), the block */
                    g_snprintf(scope, sizeof scope, "c%u.l%u.%u.%u", mode_index, who->layer_base, l,
                               blocks);
                    g_snprintf(moe_scope, sizeof moe_scope, "c%u.e%u.%u.%u", mode_index,
                               who->moe_base, l, blocks++);
                    report_trace_layers(&lt, &mt, &dt, layers, op, who, pid, sp, scope, moe_scope);
                }
                if (op->kind == SIMPAR_OP_BLOCK)
                    report_trace_memory(t, who, op, pid, sp->end, &held);
            }
        }
    }
    report_coll_clear(&rt);
    report_coll_clear(&lt);
    report_coll_clear(&mt);
    report_coll_clear(&dt);
}

/* ------------------------------------------------------------------------- rows from JSON */

static double
report_json_double(JsonObject *o, const char *key)
{
    return json_object_has_member(o, key) ? json_object_get_double_member(o, key) : 0;
}

static void
report_json_read_row(SimparReport *rep, JsonObject *o)
{
    /* a worker's row: its mode is a row of the table */
    const SimparGenerator *gen = simpar_generator_of(json_object_get_string_member(o, "mode"));
    g_assert(gen != NULL);
    const char *grid = json_object_get_string_member(o, "grid");
    JsonObject *mem = json_object_get_object_member(o, "memory");
    SimparMemory m = {.params = report_json_double(mem, "params_per_gpu"),
                      .states_B = report_json_double(mem, "states_gib") * GIB,
                      .activations_B = report_json_double(mem, "activations_gib") * GIB,
                      .transient_B = report_json_double(mem, "transient_gib") * GIB,
                      .total_B = report_json_double(o, "memory_per_gpu_gib") * GIB,
                      .in_flight = report_json_double(mem, "micro_batches_held")};
    for (guint i = 0; i < G_N_ELEMENTS(report_memory_parts); i++)
        G_STRUCT_MEMBER(double, &m, report_memory_parts[i].off) =
            report_json_double(mem, report_memory_parts[i].key) * GIB;
    SimparReportRow *row = report_row(rep, gen, grid, (guint) json_object_get_int_member(o, "gpus"),
                                      &m, report_json_double(mem, "capacity_gib") * GIB);
    row->step.peak_stage = (guint) report_json_double(mem, "peak_stage");
    if (!json_object_get_boolean_member(o, "simulated")) {
        row->skipped = g_strdup(json_object_get_string_member(o, "reason"));
        return;
    }
    row->step_s = report_json_double(o, "step_time_s");
    row->forward_s = report_json_double(o, "forward_s");
    row->backward_s = report_json_double(o, "backward_s");
    row->compute_s = report_json_double(o, "compute_s");
    row->exposed_s = report_json_double(o, "exposed_comm_s");
    row->exposed_intra_s = report_json_double(o, "exposed_intra_node_s");
    row->exposed_inter_s = report_json_double(o, "exposed_inter_node_s");
    row->other_s = report_json_double(o, "other_wait_s");
    row->tflops_per_gpu = report_json_double(o, "tflops_per_gpu");
    row->comm_bytes_per_gpu = report_json_double(o, "comm_bytes_per_gpu");
    row->model_flops = report_json_double(o, "model_flops");
    if (json_object_has_member(o, "split")) {
        row->step.split = g_strdup(json_object_get_string_member(o, "split"));
        row->step.placement = g_strdup(json_object_get_string_member(o, "placement"));
    }
    if (json_object_has_member(o, "compute"))
        row->step.compute = g_strdup(json_object_get_string_member(o, "compute"));
    if (json_object_has_member(o, "block_backend"))
        row->step.block_backend =
            g_intern_string(json_object_get_string_member(o, "block_backend"));
    for (guint i = 0; i < G_N_ELEMENTS(report_step_fields); i++)
        G_STRUCT_MEMBER(double, &row->step, report_step_fields[i].off) =
            report_json_double(o, report_step_fields[i].key);
    report_json_read_config(o, &row->config);
    row->axes = g_array_new(FALSE, FALSE, sizeof(SimparAxisTime));
    JsonArray *axes = json_object_get_array_member(o, "exposed_comm_by_axis");
    for (guint i = 0; i < json_array_get_length(axes); i++) {
        JsonObject *a = json_array_get_object_element(axes, i);
        SimparAxisTime t = {g_intern_string(json_object_get_string_member(a, "axis")),
                            g_str_equal(json_object_get_string_member(a, "scope"), "inter-node"),
                            report_json_double(a, "exposed_s")};
        g_array_append_val(row->axes, t);
    }
}

void
simpar_report_merge_json(SimparReport *rep, const char *json)
{
    g_autoptr(JsonParser) parser = json_parser_new();
    g_autoptr(GError) error = NULL;
    if (!json_parser_load_from_data(parser, json, -1, &error))
        g_error("report from a worker: %s", error->message); /* written by simpar itself */
    JsonArray *rows = json_node_get_array(json_parser_get_root(parser));
    for (guint i = 0; i < json_array_get_length(rows); i++)
        report_json_read_row(rep, json_array_get_object_element(rows, i));
}
