/* step-predict.c - one optimizer step: block times, the step run and its breakdown. */
#include "step-predict.h"
#include "ends.h"
#include "generators.h"
#include "moe.h"
#include <string.h>

void
simpar_block_times_clear(SimparBlockTimes *bt)
{
    g_clear_pointer(&bt->time_s, g_hash_table_unref);
    g_clear_pointer(&bt->compute_s, g_hash_table_unref);
    if (bt->layer_axes != NULL)
        g_array_free(g_steal_pointer(&bt->layer_axes), TRUE);
    if (bt->dense_axes != NULL)
        g_array_free(g_steal_pointer(&bt->dense_axes), TRUE);
}

static void
block_set(SimparBlockTimes *bt, const char *key, double time_s, double compute_s)
{
    double *t = g_new(double, 1), *c = g_new(double, 1);
    *t = MAX(time_s, 0.0);
    *c = MIN(MAX(compute_s, 0.0), *t);
    g_hash_table_replace(bt->time_s, (gpointer) g_intern_string(key), t);
    g_hash_table_replace(bt->compute_s, (gpointer) g_intern_string(key), c);
}

double
simpar_block_time(const SimparBlockTimes *bt, const char *key)
{
    const double *t = g_hash_table_lookup(bt->time_s, g_intern_string(key));
    return t != NULL ? *t : 0.0;
}

static double
block_compute(const SimparBlockTimes *bt, const char *key)
{
    const double *t = g_hash_table_lookup(bt->compute_s, g_intern_string(key));
    return t != NULL ? *t : 0.0;
}

/* `sched` on the GPUs of the first tensor-parallel group for `layers` stacked layers. */
static SimparSpan *
block_run(const SimparStepTimer *tm, const SimparSchedule *sched, guint layers, const guint *gpus,
          SimparRun *run, double **compute)
{
    *compute = g_new(double, simpar_schedule_n_ops(sched));
    simpar_compute_times(tm->gpu, sched, tm->attn, *compute);
    *run = tm->base;
    run->sched = sched, run->n_layers = layers, run->gpus = gpus, run->compute_s = *compute;
    SimparSpan *spans = g_new(SimparSpan, (gsize) simpar_schedule_n_ops(sched) * layers);
    tm->backend->run(run, spans);
    return spans; /* (transfer full) */
}

/* Mean over ranks of the compute-stream compute time of the ops `pick` selects. */
static double
block_mean_compute(const SimparSchedule *s, const double *compute, const char *prefix,
                   SimparPhase phase)
{
    double sum = 0;
    for (guint i = 0; i < simpar_schedule_n_ops(s); i++) {
        const SimparOp *op = simpar_schedule_op(s, i);
        if (op->stream == 0 && op->kind != SIMPAR_OP_COLLECTIVE &&
            (prefix != NULL ? g_str_has_prefix(op->name, prefix) : op->phase == phase))
            sum += compute[i];
    }
    return sum / simpar_schedule_n_ranks(s);
}

/* The bounds of the blocks in the spans `sp` of two stacked layers: b[0], b[1] the ends of the
 * first and the second layer's forward ("layer.fwd" is the second's, from b[0] to b[1]);
 * b[2] the end of the second layer's backward, b[3] the end (the first's, "layer.bwd"). */
static void
block_layer_bounds(const SimparSchedule *layer, const SimparSpan *sp, double b[4])
{
    guint n = simpar_schedule_n_ops(layer);
    b[0] = b[1] = b[2] = b[3] = 0;
    for (guint l = 0; l < 2; l++)
        for (guint i = 0; i < n; i++) {
            const SimparOp *op = simpar_schedule_op(layer, i);
            double e = sp[l * n + i].end;
            b[3] = MAX(b[3], e);
            if (op->phase == SIMPAR_PHASE_FORWARD)
                b[l] = MAX(b[l], e);
            else if (l == 1)
                b[2] = MAX(b[2], e);
        }
}

/* Per op of `s`: its span within its block, from the spans `sp` of two stacked runs of `s` (the
 * second's forward, the first's backward, clipped to the block's bounds); part_s (or NULL)
 * gets the forward and the backward block's time (transfer full). */
static SimparSpan *
block_spans_within(const SimparSchedule *s, const SimparSpan *sp, double part_s[2])
{
    double b[4];
    block_layer_bounds(s, sp, b);
    guint n = simpar_schedule_n_ops(s);
    SimparSpan *out = g_new(SimparSpan, n);
    for (guint i = 0; i < n; i++) {
        gboolean fwd = simpar_schedule_op(s, i)->phase == SIMPAR_PHASE_FORWARD;
        SimparSpan x = fwd ? sp[n + i] : sp[i]; /* the second layer's forward, the first's back */
        double from = fwd ? b[0] : b[2], to = fwd ? b[1] : b[3];
        out[i] = x.end < from || x.start > to
                     ? (SimparSpan){-1, -1}
                     : (SimparSpan){MAX(x.start, from) - from, MIN(x.end, to) - from};
    }
    if (part_s != NULL)
        part_s[0] = b[1] - b[0], part_s[1] = b[3] - b[2];
    return out; /* (transfer full) */
}

SimparSpan *
simpar_block_layer_spans(const SimparStepTimer *tm, const SimparTrain *train,
                         const SimparSchedule *layer, double part_s[2])
{
    SimparRun run;
    g_autofree double *compute = NULL;
    g_autofree guint *gpus = simpar_block_gpus(train);
    g_autofree SimparSpan *sp = block_run(tm, layer, 2, gpus, &run, &compute);
    return block_spans_within(layer, sp, part_s); /* (transfer full) */
}

/* Mean over the ranks of one of two stacked MoE blocks' time in part k: 0 the dispatch
 * all-to-alls, 1 the combine all-to-alls, 2 the experts' GEMMs; 3 the layer's all-to-alls
 * between a grid mode's layout and the block's tokens (tp-moe.c; `moe` the layer's schedule);
 * 4 and 5 expert tensor parallelism's all-gathers and reduce-scatters (moe.h); the all-gather
 * dispatcher's collectives: 6 the tokens' (fwd) and their gradients' (bwd), 7 the probs', 8 the
 * combine's reduce-scatter and its backward's all-gather. */
static double
block_moe_part(const SimparSchedule *moe, const SimparSpan *sp, guint k)
{
    static const char *const what[] = {".moe.all-to-all-dispatch",
                                       ".moe.all-to-all-combine",
                                       ".experts.",
                                       ".moe.redistribute-",
                                       ".moe.all-gather-",
                                       ".moe.reduce-scatter-",
                                       "-dispatch",
                                       "-probs",
                                       "-combine"};
    guint n = simpar_schedule_n_ops(moe);
    double sum = 0;
    for (guint i = 0; i < n; i++) {
        const SimparOp *op = simpar_schedule_op(moe, i);
        gboolean gemm = op->kind == SIMPAR_OP_GEMM, coll = op->kind == SIMPAR_OP_COLLECTIVE;
        if ((k == 2 ? gemm : coll) && strstr(op->name, what[k]) != NULL)
            for (guint l = 0; l < 2; l++)
                sum += sp[l * n + i].end - sp[l * n + i].start;
    }
    return sum / 2 / simpar_schedule_n_ranks(moe);
}

/* "layer.fwd" and "layer.bwd" (or, `dense`, an MoE model's dense layer's "dense.fwd" and
 * "dense.bwd"): the second of two stacked layers, as the first layer's ramp-up and the last
 * one's drain do not repeat. */
static void
block_layers(const SimparStepTimer *tm, const SimparSchedule *layer, const guint *gpus,
             gboolean dense, SimparBlockTimes *bt)
{
    SimparRun run;
    g_autofree double *compute = NULL;
    guint simulated = simpar_schedule_n_ranks(layer);
    SimparStepTimer layer_tm = *tm;
    layer_tm.base.n_simulated = &simulated;
    g_autofree SimparSpan *sp = block_run(&layer_tm, layer, 2, gpus, &run, &compute);
    if (!dense) {
        bt->layer_ranks = simulated;
        double redistribute = block_moe_part(layer, sp, 3);
        if (redistribute > 0)
            block_set(bt, "moe.redistribute", redistribute, 0);
    }
    double b[4];
    block_layer_bounds(layer, sp, b);
    block_set(bt, dense ? "dense.fwd" : "layer.fwd", b[1] - b[0],
              block_mean_compute(layer, compute, NULL, SIMPAR_PHASE_FORWARD));
    block_set(bt, dense ? "dense.bwd" : "layer.bwd", b[3] - b[2],
              block_mean_compute(layer, compute, NULL, SIMPAR_PHASE_BACKWARD));
    SimparReportRow row = {0};
    simpar_report_breakdown(&run, sp, &row);
    for (guint i = 0; i < row.axes->len; i++)
        g_array_index(row.axes, SimparAxisTime, i).exposed_s /= 2;
    *(dense ? &bt->dense_axes : &bt->layer_axes) = row.axes;
    *(dense ? &bt->dense_comm_bytes : &bt->layer_comm_bytes) = row.comm_bytes_per_gpu / 2;
}

/* `add` seconds more for `key` (already set), `compute_add` of them compute. */
static void
block_add(SimparBlockTimes *bt, const char *key, double add, double compute_add)
{
    double *t = g_hash_table_lookup(bt->time_s, g_intern_string(key));
    double *c = g_hash_table_lookup(bt->compute_s, g_intern_string(key));
    g_assert(t != NULL && c != NULL);
    *t += add;
    *c = MIN(*c + MAX(compute_add, 0.0), *t);
}

SimparSchedule *
simpar_block_moe_build(const SimparModel *model, const SimparTrain *train, guint **gpus)
{
    guint ep = (guint) MAX(train->ep, 1), etp = (guint) MAX(train->etp, 1);
    guint64 tokens = (guint64) model->micro_batch * model->seq / simpar_plan_cp(&train->tp) /
                     (simpar_plan_whole_rows(&train->tp) ? 1 : (guint64) train->tp.tp);
    gboolean deepep = train->moe_dispatcher == SIMPAR_MOE_DEEPEP;
    g_assert(!deepep || train->ep_node > 0); /* the platform's nodes (predict-config.c) */
    guint capacity = simpar_moe_capacity(model, (guint) tokens);
    guint recompute = simpar_plan_recompute_set(&train->tp);
    SimparSchedule *moe =
        train->moe_dispatcher == SIMPAR_MOE_ALLGATHER
            ? simpar_moe_gather_block_build(model, ep, etp, (guint) tokens, train->tp.seed,
                                            capacity, recompute, NULL)
            : simpar_moe_block_build(model, ep, etp, deepep ? (guint) train->ep_node : 0,
                                     (guint) tokens, train->tp.seed, capacity, recompute, NULL);
    g_assert(moe != NULL); /* simpar_train_validate checked E against EP, predict-config.c the
                              nodes against EP */
    *gpus = g_new(guint, ep * etp); /* block rank e ETP + t (moe.h) */
    for (guint i = 0; i < ep * etp; i++)
        (*gpus)[i] = simpar_train_expert_rank(train, i % etp, i / etp, 0, 0);
    return moe; /* (transfer full) */
}

/* The first start and the last end of the ops of the second (`l` 1) or first (`l` 0) of two
 * stacked blocks in phase `ph` whose name holds `what`; FALSE if there is none. */
static gboolean
block_moe_window(const SimparSchedule *moe, const SimparSpan *sp, guint l, SimparPhase ph,
                 const char *what, double *from, double *to)
{
    guint n = simpar_schedule_n_ops(moe);
    *from = G_MAXDOUBLE, *to = -G_MAXDOUBLE;
    for (guint i = 0; i < n; i++) {
        const SimparOp *op = simpar_schedule_op(moe, i);
        if (op->phase == ph && op->kind == SIMPAR_OP_COLLECTIVE && strstr(op->name, what) != NULL)
            *from = MIN(*from, sp[l * n + i].start), *to = MAX(*to, sp[l * n + i].end);
    }
    return *to >= *from;
}

/* --overlap-moe-expert-parallel-comm's nodes (models/step-overlap.c), the parts of "layer.fwd"
 * and "layer.bwd" as the MoE block ran them (`b` its bounds, block_layer_bounds): the forward's
 * pre-dispatch (the layer schedule's attention part and the block up to the dispatch's first
 * collective), dispatch (its all-to-alls, after Hybrid-EP's all-gather of the routing maps), mlp
 * (to the combine's first all-to-all), combine (the all-to-alls and what follows); the backward's
 * combine (to the end of the combine's all-to-alls), mlp, dispatch, pre-dispatch (the rest and the
 * attention part). */
static void
block_moe_nodes(const SimparSchedule *moe, const SimparSpan *sp, const double b[4],
                SimparBlockTimes *bt)
{
    double d0, d1, c0, c1, db0, db1, cb0, cb1;
    const char *dispatch = ".moe.all-to-all-dispatch", *combine = ".moe.all-to-all-combine";
    gboolean ok = block_moe_window(moe, sp, 1, SIMPAR_PHASE_FORWARD, dispatch, &d0, &d1) &&
                  block_moe_window(moe, sp, 1, SIMPAR_PHASE_FORWARD, combine, &c0, &c1) &&
                  block_moe_window(moe, sp, 0, SIMPAR_PHASE_BACKWARD, dispatch, &db0, &db1) &&
                  block_moe_window(moe, sp, 0, SIMPAR_PHASE_BACKWARD, combine, &cb0, &cb1);
    g_assert(ok && d1 <= c0 && cb1 <= db0); /* the block's order (moe.c) */
    double g0,
        g1; /* --moe-flex-backend hybridep: the routing maps' all-gather opens the dispatch */
    if (block_moe_window(moe, sp, 1, SIMPAR_PHASE_FORWARD, ".moe.routing-map-all-gather", &g0, &g1))
        d0 = MIN(d0, g0);
    double fwd = simpar_block_time(bt, "layer.fwd"), bwd = simpar_block_time(bt, "layer.bwd");
    /* the mlp nodes are compute; the pre-dispatch ones the rest of the layer's compute (their
     * tensor-parallel collectives' exposure stays exposed); the all-to-all nodes none */
    double cf = block_compute(bt, "layer.fwd") - (c0 - d1);
    double cb = block_compute(bt, "layer.bwd") - (db0 - cb1);

    const struct {
        const char *key;
        double t, compute;
    } node[] = {
        {"moe.fwd.dispatch", d1 - d0, 0},   {"moe.fwd.mlp", c0 - d1, c0 - d1},
        {"moe.fwd.combine", b[1] - c0, 0},  {"moe.fwd.pre", fwd - (b[1] - d0), cf},
        {"moe.bwd.combine", cb1 - b[2], 0}, {"moe.bwd.mlp", db0 - cb1, db0 - cb1},
        {"moe.bwd.dispatch", db1 - db0, 0}, {"moe.bwd.pre", bwd - (db1 - b[2]), cb},
    };

    for (guint k = 0; k < G_N_ELEMENTS(node); k++)
        block_set(bt, node[k].key, node[k].t, node[k].compute);
}

/* An MoE layer's MLP part (moe.h) on the GPUs of the first expert-parallel group of the first
 * stage, as Megatron-Core's expert numbering places it (train.h), each with its own B/T tokens
 * (1-D's sequence-parallel rows; 2-D, 2.5-D and 3-D's after the layer's all-to-all, tp-moe.c),
 * two stacked blocks as the layers are timed. Its forward and backward join "layer.fwd" and
 * "layer.bwd" (the layer schedule holds the attention part), its all-to-alls the layer's
 * exposed communication (axis "ep"). */
static void
block_moe(const SimparStepTimer *tm, const SimparModel *model, const SimparTrain *train,
          SimparBlockTimes *bt)
{
    g_autofree guint *gpus = NULL;
    g_autoptr(SimparSchedule) moe = simpar_block_moe_build(model, train, &gpus);
    SimparRun run;
    g_autofree double *compute = NULL;
    g_autofree SimparSpan *sp = block_run(tm, moe, 2, gpus, &run, &compute);
    double b[4];
    block_layer_bounds(moe, sp, b);
    block_add(bt, "layer.fwd", b[1] - b[0],
              block_mean_compute(moe, compute, NULL, SIMPAR_PHASE_FORWARD));
    block_add(bt, "layer.bwd", b[3] - b[2],
              block_mean_compute(moe, compute, NULL, SIMPAR_PHASE_BACKWARD));
    if (train->ep_overlap) /* the merged layers' nodes (moe recomputation is refused there) */
        block_moe_nodes(moe, sp, b, bt);
    const char *const parts[] = {"moe.dispatch", "moe.combine", "moe.experts"};
    for (guint k = 0; k < G_N_ELEMENTS(parts); k++)
        block_set(bt, parts[k], block_moe_part(moe, sp, k), 0);
    if (train->moe_dispatcher == SIMPAR_MOE_ALLGATHER) { /* its all-gathers and reduce-scatters,
                                                            expert-TP's among them */
        block_set(bt, "moe.dispatch", block_moe_part(moe, sp, 6) + block_moe_part(moe, sp, 7), 0);
        block_set(bt, "moe.combine", block_moe_part(moe, sp, 8), 0);
    } else if (train->etp > 1)
        block_set(bt, "moe.expert-tp", block_moe_part(moe, sp, 4) + block_moe_part(moe, sp, 5), 0);
    SimparReportRow row = {0};
    simpar_report_breakdown(&run, sp, &row);
    for (guint i = 0; i < row.axes->len; i++) {
        SimparAxisTime a = g_array_index(row.axes, SimparAxisTime, i);
        a.exposed_s /= 2;
        g_array_append_val(bt->layer_axes, a);
    }
    g_array_unref(row.axes);
    bt->layer_comm_bytes += row.comm_bytes_per_gpu / 2;
}

SimparSpan *
simpar_block_moe_spans(const SimparStepTimer *tm, const SimparModel *model,
                       const SimparTrain *train, SimparSchedule **moe, guint **gpus,
                       double part_s[2])
{
    g_return_val_if_fail(simpar_model_is_moe(model), NULL);
    *moe = simpar_block_moe_build(model, train, gpus);
    SimparRun run;
    g_autofree double *compute = NULL;
    g_autofree SimparSpan *sp = block_run(tm, *moe, 2, *gpus, &run, &compute);
    return block_spans_within(*moe, sp, part_s); /* (transfer full) */
}

/* The segments of an ends schedule, each the time from the previous segment's end to its own. */
static void
block_ends(const SimparStepTimer *tm, const SimparSchedule *ends, const guint *gpus,
           SimparBlockTimes *bt)
{
    static const char *const segs[] = {"embed.fwd", "mtp.fwd", "head.fwd", "aux.fwd",
                                       "head.bwd",  "aux.bwd", "mtp.bwd",  "embed.bwd"};
    SimparRun run;
    g_autofree double *compute = NULL;
    SimparStepTimer ends_tm = *tm;
    ends_tm.base.ends = TRUE;
    g_autofree SimparSpan *sp = block_run(&ends_tm, ends, 1, gpus, &run, &compute);
    double prev = 0;
    for (guint k = 0; k < G_N_ELEMENTS(segs); k++) {
        g_autofree char *prefix = g_strdup_printf("%s.", segs[k]);
        double end = -1;
        for (guint i = 0; i < simpar_schedule_n_ops(ends); i++)
            if (g_str_has_prefix(simpar_schedule_op(ends, i)->name, prefix))
                end = MAX(end, sp[i].end);
        if (end < 0)
            continue;
        block_set(bt, segs[k], end - prev,
                  block_mean_compute(ends, compute, prefix, SIMPAR_PHASE_FORWARD));
        prev = end;
    }
}

/* "optimizer.tp-stats": one fp32 all-reduced over the first tensor-parallel group, the
 * tensor-parallel part of the optimizer step's scalar all-reduces (models/step.c, step_scalars). */
static void
block_scalars(const SimparStepTimer *tm, const SimparTrain *train, const SimparSchedule *layer,
              const guint *gpus, SimparBlockTimes *bt)
{
    guint T = simpar_train_group(train), Ttp = (guint) train->tp.tp;
    if (Ttp < 2)
        return;
    SimparDtype dt = simpar_schedule_dtype(layer);
    g_autoptr(SimparSchedule) s = simpar_schedule_new(T, dt);
    g_autofree guint *ranks = g_new(guint, Ttp);
    for (guint t = 0; t < Ttp; t++)
        ranks[t] = t;
    guint g = simpar_schedule_add_group(s, "tp", ranks, Ttp);
    simpar_schedule_set_group_idle(s, g);
    gsize count = simpar_step_scalar_count(dt, 4);
    for (guint t = 0; t < Ttp; t++) {
        SimparView v = {simpar_schedule_add_buffer(s, t, "optimizer.scalars", count), 0};
        SimparOp op = {.kind = SIMPAR_OP_COLLECTIVE,
                       .rank = t,
                       .name = "optimizer.tp-stats",
                       .u.coll = {SIMPAR_COLL_ALL_REDUCE, g, count, 0, v, v, SIMPAR_RED_SUM}};
        simpar_schedule_add_op(s, &op);
    }
    SimparRun run;
    g_autofree double *compute = NULL;
    g_autofree SimparSpan *sp = block_run(tm, s, 1, gpus, &run, &compute);
    double end = 0;
    for (guint i = 0; i < simpar_schedule_n_ops(s); i++)
        end = MAX(end, sp[i].end);
    block_set(bt, "optimizer.tp-stats", end, 0);
}

guint *
simpar_block_gpus(const SimparTrain *train)
{
    guint T = simpar_train_group(train); /* the layer's ranks, context-parallel ones too */
    guint *gpus = g_new(guint, T);
    for (guint t = 0; t < T; t++)
        gpus[t] = simpar_train_rank(train, t, 0, 0);
    return gpus; /* (transfer full) */
}

void
simpar_block_times_measure(const SimparStepTimer *tm, const SimparModel *model,
                           const SimparTrain *train, const SimparSchedule *layer,
                           SimparBlockTimes *bt)
{
    bt->time_s = g_hash_table_new_full(NULL, NULL, NULL, g_free);
    bt->compute_s = g_hash_table_new_full(NULL, NULL, NULL, g_free);
    g_autofree guint *gpus = simpar_block_gpus(train);
    block_layers(tm, layer, gpus, FALSE, bt);
    if (simpar_model_is_moe(model))
        block_moe(tm, model, train, bt);
    g_autoptr(SimparSchedule) dense = simpar_model_has_dense_layers(model)
                                          ? simpar_generate_dense_layer(model, &train->tp, NULL)
                                          : NULL;
    if (dense != NULL) /* validated with the model (simpar_predict_config) */
        block_layers(tm, dense, gpus, TRUE, bt);
    guint mtp = model->mtp_layers > 0 ? SIMPAR_ENDS_MTP : 0; /* one module's "mtp.*" */
    g_autoptr(SimparSchedule) ends = simpar_ends_build(model, &train->tp, layer, model->vocab,
                                                       SIMPAR_ENDS_EMBED | SIMPAR_ENDS_HEAD | mtp);
    block_ends(tm, ends, gpus, bt);
    block_scalars(tm, train, layer, gpus, bt);
    if (model->fp8 != SIMPAR_FP8_NONE) { /* compute alone, one layer's on one rank */
        double cast = simpar_compute_fp8_weight_cast_time(tm->gpu, layer);
        block_set(bt, "fp8.cast", cast, cast);
        if (dense != NULL) {
            cast = simpar_compute_fp8_weight_cast_time(tm->gpu, dense);
            block_set(bt, "dense.fp8.cast", cast, cast);
        }
    }
    if (train->schedule == SIMPAR_PIPE_LOCAL) {
        g_autoptr(SimparSchedule) aux =
            simpar_ends_build(model, &train->tp, layer, train->aux_head_width, SIMPAR_ENDS_AUX);
        block_ends(tm, aux, gpus, bt);
    }
}

SimparScalars
simpar_step_scalars_of(const SimparGpu *gpu)
{
    switch ((SimparKernelSet) gpu->kernel_set) {
    case SIMPAR_KERNELS_MEGATRON:
        return SIMPAR_SCALARS_MEGATRON;
    case SIMPAR_KERNELS_PYTORCH:
        return SIMPAR_SCALARS_PYTORCH;
    default:
        return SIMPAR_SCALARS_NONE;
    }
}

SimparSpan *
simpar_step_run(const SimparStepTimer *tm, const SimparSchedule *step, const SimparBlockTimes *bt,
                const guint *gpus, SimparRun *run, double **compute)
{
    guint n = simpar_schedule_n_ops(step);
    *compute = g_new(double, n);
    simpar_compute_times(tm->gpu, step, tm->attn, *compute);
    for (guint i = 0; i < n; i++) {
        const SimparOp *op = simpar_schedule_op(step, i);
        if (op->kind == SIMPAR_OP_BLOCK)
            (*compute)[i] = op->u.block.count * simpar_block_time(bt, op->u.block.key);
    }
    *run = tm->base;
    run->sched = step, run->n_layers = 1, run->gpus = gpus, run->compute_s = *compute;
    SimparSpan *spans = g_new(SimparSpan, n);
    tm->backend->run(run, spans);
    return spans; /* (transfer full) */
}

/* ----- the breakdown ----- */

typedef struct {
    const SimparRun *run;
    const SimparSpan *spans;
    const SimparBlockTimes *bt;
    SimparReportRow *row;
    double tp_exposed, layer_blocks;
    double dense_exposed, dense_blocks; /* an MoE model's dense layers' blocks */
} Breakdown;

static gboolean
breakdown_inter(const SimparRun *run, const guint *job_gpus, const guint *ranks, guint n)
{
    for (guint i = 1; i < n; i++)
        if (simpar_net_node(run->net, job_gpus[ranks[i]]) !=
            simpar_net_node(run->net, job_gpus[ranks[0]]))
            return TRUE;
    return FALSE;
}

/* Which of the split's groups cross nodes (the first group of each axis; all are alike);
 * job_gpus: the GPU of each rank of the job. */
static char *
breakdown_placement(const SimparRun *run, const guint *job_gpus, const SimparTrain *tr,
                    gboolean inter[SIMPAR_N_TRAIN_AXES])
{
    const guint size[] = {(guint) tr->tp.tp, (guint) tr->dp, (guint) tr->pp};
    GString *out = g_string_new(NULL);
    inter[SIMPAR_AXIS_CP] = FALSE;
    for (guint a = 0; a < G_N_ELEMENTS(size); a++) { /* cp after them, where it is used */
        g_autofree guint *ranks = g_new(guint, size[a]);
        for (guint k = 0; k < size[a]; k++)
            ranks[k] = simpar_train_rank(tr, a == SIMPAR_AXIS_TP ? k : 0,
                                         a == SIMPAR_AXIS_DP ? k : 0, a == SIMPAR_AXIS_PP ? k : 0);
        inter[a] = breakdown_inter(run, job_gpus, ranks, size[a]);
        g_string_append(out, a ? ", " : ""); /* no printf: three a row of a sweep */
        g_string_append(out, simpar_train_axis_name(a));
        g_string_append(out, size[a] == 1 ? " 1 GPU" : inter[a] ? " inter-node" : " intra-node");
    }
    guint C = simpar_plan_cp(&tr->tp);
    if (C > 1) { /* context parallelism: the layer ranks t + T c */
        g_autofree guint *ranks = g_new(guint, C);
        for (guint c = 0; c < C; c++)
            ranks[c] = simpar_train_rank(tr, c * (guint) tr->tp.tp, 0, 0);
        g_string_append(out, breakdown_inter(run, job_gpus, ranks, C) ? ", cp inter-node"
                                                                      : ", cp intra-node");
    }
    guint ep = (guint) MAX(tr->ep, 1);
    inter[SIMPAR_AXIS_EP] = FALSE;
    if (ep > 1) { /* the first expert-parallel group, in the experts' numbering (train.h) */
        g_autofree guint *ranks = g_new(guint, ep);
        for (guint k = 0; k < ep; k++)
            ranks[k] = simpar_train_expert_rank(tr, 0, k, 0, 0);
        inter[SIMPAR_AXIS_EP] = breakdown_inter(run, job_gpus, ranks, ep);
        g_string_append(out, inter[SIMPAR_AXIS_EP] ? ", ep inter-node" : ", ep intra-node");
    }
    return g_string_free(out, FALSE); /* (transfer full) */
}

/* The transfer part of a receive: its message on an idle route. */
static double
breakdown_transfer(const SimparRun *run, const SimparOp *op)
{
    SimparRoute route;
    simpar_net_route(run->net, run->gpus[op->u.p2p.peer], run->gpus[op->rank], &route);
    double bytes = (double) op->u.p2p.count * simpar_dtype_size(simpar_schedule_dtype(run->sched));
    return route.lat_s + bytes / route.bw_Bps;
}

static gboolean
breakdown_waits_on_dp(const SimparRun *run, const SimparOp *op)
{
    const guint *deps = simpar_schedule_deps(run->sched, op);
    for (guint d = 0; d < op->n_deps; d++) {
        const SimparOp *dep = simpar_schedule_op(run->sched, deps[d]);
        if (dep->kind == SIMPAR_OP_COLLECTIVE)
            return TRUE;
    }
    return FALSE;
}

/* Whether `op` waits for a block on another stream (--overlap-moe-expert-parallel-comm's
 * all-to-all nodes, models/step-overlap.c). */
static gboolean
breakdown_waits_on_comm_block(const SimparRun *run, const SimparOp *op)
{
    const guint *deps = simpar_schedule_deps(run->sched, op);
    for (guint d = 0; d < op->n_deps; d++) {
        const SimparOp *dep = simpar_schedule_op(run->sched, deps[d]);
        if (dep->kind == SIMPAR_OP_BLOCK && dep->stream != 0)
            return TRUE;
    }
    return FALSE;
}

/* Whether `op` is one of the optimizer step's scalar all-reduces (models/step.c, step_scalars
 * and step_loss): their tensor-parallel block or a collective over their groups. */
static gboolean
step_optimizer_scalar(const SimparSchedule *s, const SimparOp *op)
{
    if (op->kind == SIMPAR_OP_BLOCK)
        return g_str_equal(op->u.block.key, "optimizer.tp-stats");
    if (op->kind != SIMPAR_OP_COLLECTIVE)
        return FALSE;
    const char *axis = simpar_schedule_group(s, op->u.coll.group)->axis;
    return g_str_equal(axis, "grad-stats") || g_str_equal(axis, "loss");
}

/* Walks the compute stream of `rank` from `from` to `to`. */
static void
breakdown_rank(Breakdown *b, guint rank, double from, double to)
{
    const SimparSchedule *s = b->run->sched;
    SimparReportRow *row = b->row;
    guint n;
    const guint *ops = simpar_schedule_rank_ops(s, rank, &n);
    double t = from;
    for (guint i = 0; i < n; i++) {
        const SimparOp *op = simpar_schedule_op(s, ops[i]);
        const SimparSpan *sp = &b->spans[ops[i]];
        if (sp->end <= from || sp->start >= to)
            continue;
        if (op->kind == SIMPAR_OP_COLLECTIVE || op->kind == SIMPAR_OP_SEND ||
            op->kind == SIMPAR_OP_RECV)
            row->comm_bytes_per_gpu +=
                (double) (op->kind == SIMPAR_OP_COLLECTIVE ? simpar_op_coll_elems(s, op)
                                                           : op->u.p2p.count) *
                simpar_dtype_size(simpar_schedule_dtype(s));
        if (op->stream != 0)
            continue;
        double gap = MAX(sp->start - t, 0.0), busy = sp->end - MAX(sp->start, t);
        if (step_optimizer_scalar(s, op)) { /* waits for the reductions, as Adam */
            row->step.optimizer_s += busy;
            row->step.dp_exposed_s += gap;
            t = MAX(t, sp->end);
            continue;
        }
        switch (op->kind) {
        case SIMPAR_OP_BLOCK: {
            const char *key = op->u.block.key;
            double c = op->u.block.count * block_compute(b->bt, key);
            gboolean dense = g_str_equal(key, "dense.fwd") || g_str_equal(key, "dense.bwd");
            c = MIN(c, busy);
            row->compute_s += c;
            *(dense ? &b->dense_exposed : &b->tp_exposed) += busy - c;
            *(op->phase == SIMPAR_PHASE_FORWARD ? &row->forward_s : &row->backward_s) += busy;
            if (g_str_has_prefix(key, "layer.") || g_str_equal(key, "moe.fwd.pre") ||
                g_str_equal(key, "moe.bwd.pre")) /* a merged layer's nodes: one pre each way */
                b->layer_blocks += op->u.block.count / 2.0;
            else if (dense)
                b->dense_blocks += op->u.block.count / 2.0;
            else if (g_str_has_suffix(key, "fp8.cast"))
                row->step.fp8_cast_s += busy;
            if (breakdown_waits_on_comm_block(b->run, op)) /* a merged layer's all-to-all */
                b->tp_exposed += gap;
            else
                *(breakdown_waits_on_dp(b->run, op) ? &row->step.dp_exposed_s : &row->other_s) +=
                    gap;
            break;
        }
        case SIMPAR_OP_RECV: {
            double xfer = MIN(breakdown_transfer(b->run, op), busy);
            row->step.pp_p2p_s += xfer;
            row->step.bubble_s += busy - xfer + gap;
            break;
        }
        case SIMPAR_OP_COLLECTIVE: {
            const SimparGroup *g = simpar_schedule_group(s, op->u.coll.group);
            *(g_str_equal(g->axis, "tp") ? &row->step.pp_p2p_s : &row->step.dp_exposed_s) += busy;
            row->other_s += gap;
            break;
        }
        case SIMPAR_OP_ADAM:
            row->step.optimizer_s += busy;
            row->step.dp_exposed_s += gap;
            break;
        case SIMPAR_OP_ZERO_GRAD: /* before the step's first forward */
            row->step.optimizer_s += busy;
            row->other_s += gap;
            break;
        default:
            row->compute_s += busy;
            row->other_s += gap;
            break;
        }
        t = MAX(t, sp->end);
    }
    row->step.dp_exposed_s += MAX(to - t, 0.0); /* parameter all-gathers after the update */
}

/* The end of `name` (an op name) on `rank`, or -1. */
static double
breakdown_op_end(const SimparRun *run, const SimparSpan *spans, guint rank, const char *name)
{
    guint n;
    const guint *ops = simpar_schedule_rank_ops(run->sched, rank, &n);
    const char *key = g_intern_string(name);
    for (guint i = n; i-- > 0;)
        if (simpar_schedule_op(run->sched, ops[i])->name == key)
            return spans[ops[i]].end;
    return -1;
}

void
simpar_step_breakdown(const SimparRun *run, const SimparSpan *spans, const SimparBlockTimes *bt,
                      const SimparModel *model, const SimparTrain *tr, const guint *job_gpus,
                      SimparReportRow *row)
{
    const SimparSchedule *s = run->sched;
    guint n_ranks = simpar_schedule_n_ranks(s), n = simpar_schedule_n_ops(s);
    /* the rank that ends last: the lowest of those within 1e-9 of the last end, so that alike
     * ranks whose ends differ in the last bits (SimGrid's sums in another order) do not decide
     * which one's breakdown is shown, and a slice or a quotient shows the rank every rank
     * shows */
    guint crit = 0;
    double end = 0;
    g_autofree double *rank_end = g_new0(double, n_ranks);
    for (guint i = 0; i < n; i++) {
        guint r = simpar_schedule_op(s, i)->rank;
        rank_end[r] = MAX(rank_end[r], spans[i].end);
    }
    for (guint r = 0; r < n_ranks; r++)
        end = MAX(end, rank_end[r]);
    while (crit + 1 < n_ranks && rank_end[crit] < end * (1 - 1e-9))
        crit++;
    end = rank_end[crit];
    double from = 0, to = end;
    /* local parallelism without a flush: the last of the generated steps, in steady state */
    for (guint k = 1; k < 16; k++) {
        g_autofree char *name = g_strdup_printf("optimizer.step%u", k);
        if (breakdown_op_end(run, spans, crit, name) < 0)
            break;
        g_autofree char *prev = g_strdup_printf("optimizer.step%u", k - 1);
        from = breakdown_op_end(run, spans, crit, prev);
        to = breakdown_op_end(run, spans, crit, name);
        double last = 0, before = 0;
        for (guint r = 0; r < n_ranks; r++) {
            last = MAX(last, breakdown_op_end(run, spans, r, name));
            before = MAX(before, breakdown_op_end(run, spans, r, prev));
        }
        end = last - before;
    }
    row->step_s = end;
    row->axes = g_array_new(FALSE, FALSE, sizeof(SimparAxisTime));
    Breakdown b = {run, spans, bt, row, 0, 0, 0, 0};
    breakdown_rank(&b, crit, from, to);
    simpar_step_breakdown_finish(run, job_gpus, bt, model, tr, b.tp_exposed, b.layer_blocks,
                                 b.dense_exposed, b.dense_blocks, row);
}

/* The exposure `exposed` of layers whose one layer's exposure by axis is `one`, appended to
 * `axes` in those proportions (`merge`: added to an entry of the same axis and placement where
 * there is one); the sum of `one`'s exposures. */
static double
breakdown_axes(GArray *axes, const GArray *one, double exposed, gboolean merge)
{
    double sum = 0;
    for (guint i = 0; i < one->len; i++)
        sum += g_array_index(one, SimparAxisTime, i).exposed_s;
    for (guint i = 0; i < one->len && sum > 0; i++) {
        SimparAxisTime a = g_array_index(one, SimparAxisTime, i);
        a.exposed_s = exposed * a.exposed_s / sum;
        guint k = 0;
        while (merge && k < axes->len &&
               !(g_str_equal(g_array_index(axes, SimparAxisTime, k).axis, a.axis) &&
                 g_array_index(axes, SimparAxisTime, k).inter == a.inter))
            k++;
        if (merge && k < axes->len)
            g_array_index(axes, SimparAxisTime, k).exposed_s += a.exposed_s;
        else
            g_array_append_val(axes, a);
    }
    return sum;
}

void
simpar_step_breakdown_finish(const SimparRun *run, const guint *job_gpus,
                             const SimparBlockTimes *bt, const SimparModel *model,
                             const SimparTrain *tr, double tp_exposed, double layer_blocks,
                             double dense_exposed, double dense_blocks, SimparReportRow *row)
{
    Breakdown b = {.tp_exposed = tp_exposed, .layer_blocks = layer_blocks};
    row->step.tp_exposed_s = b.tp_exposed + dense_exposed;
    row->step.moe_dispatch_s = simpar_block_time(bt, "moe.dispatch");
    row->step.moe_combine_s = simpar_block_time(bt, "moe.combine");
    row->step.moe_experts_s = simpar_block_time(bt, "moe.experts");
    row->step.moe_redistribute_s = simpar_block_time(bt, "moe.redistribute");
    row->step.moe_expert_tp_s = simpar_block_time(bt, "moe.expert-tp");
    row->step.layer_ranks = bt->layer_ranks;
    row->step.tp_ranks = (double) tr->tp.tp * simpar_plan_cp(&tr->tp); /* the layer's: T x C */
    row->comm_bytes_per_gpu +=
        bt->layer_comm_bytes * b.layer_blocks + bt->dense_comm_bytes * dense_blocks;
    gboolean inter[SIMPAR_N_TRAIN_AXES];
    row->step.placement =
        breakdown_placement(run, job_gpus != NULL ? job_gpus : run->gpus, tr, inter);
    /* the tensor-parallel exposure by axis, in the proportions of one layer's (an MoE model's
     * dense layers' in their own: no expert-parallel all-to-alls) */
    double layer_sum = breakdown_axes(row->axes, bt->layer_axes, b.tp_exposed, FALSE);
    double dense_sum =
        bt->dense_axes != NULL ? breakdown_axes(row->axes, bt->dense_axes, dense_exposed, TRUE) : 0;

    const struct {
        const char *axis;
        gboolean inter;
        double s;
    } more[] = {{"pp", inter[SIMPAR_AXIS_PP], row->step.pp_p2p_s},
                {"dp", inter[SIMPAR_AXIS_DP], row->step.dp_exposed_s}};

    for (guint i = 0; i < G_N_ELEMENTS(more); i++) {
        if (more[i].s <= 0)
            continue;
        SimparAxisTime a = {g_intern_string(more[i].axis), more[i].inter, more[i].s};
        g_array_append_val(row->axes, a);
    }
    if (layer_sum <= 0)
        row->other_s += b.tp_exposed; /* no tensor-parallel communication to charge */
    if (dense_sum <= 0)
        row->other_s += dense_exposed;
    for (guint i = 0; i < row->axes->len; i++) {
        const SimparAxisTime *a = &g_array_index(row->axes, SimparAxisTime, i);
        row->exposed_s += a->exposed_s;
        *(a->inter ? &row->exposed_inter_s : &row->exposed_intra_s) += a->exposed_s;
    }
    row->model_flops = simpar_train_model_flops(model, tr);
    row->gpus = (guint) (simpar_train_group(tr) * tr->pp * tr->dp); /* a slice: them all */
    row->tflops_per_gpu = row->model_flops / row->step_s / row->gpus / 1e12;
}
