/* measure.c - a measured run of a job's schedule (simpar-exec --run): inputs, warm-up and
 * repeats, the correctness check against the host executor, RUN.json.
 *
 *   schedule (simpar_job_schedule, fallback model "tiny")
 *     -> inputs: every SIMPAR_SHARD_INPUT shard from --seed, as a pure function of (seed,
 *        tensor, global row, global column) (inputs.h), so replicated shards agree; other
 *        buffers zero. Generated once on the host's cores in each buffer's element type,
 *        written once, saved where they live
 *     -> [--check: run once here and once on the host executor, compare output shards]
 *     -> warm-up + repeats: restore inputs (untimed; a GPU: device copies) | run, per-op
 *        start/end | ...
 *     -> verify the last run's outputs (verify.h): every value finite, replicated blocks equal
 *        on every rank (over all processes); a failure is the error and no timing is reported
 *     -> the repeat with the median step time (the lower median: an actual repeat) gives "ops"
 *
 * Step time of a repeat = max end - min start over all ops (per-op times of other processes
 * arrive by an all-reduce MAX over arrays holding -1 for ops that are not local).
 */
#include "measure.h"
#include "generators.h"
#include "host.h"
#include "inputs.h"
#include "output.h"
#include "verify.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The host reference computes in doubles with plain loops (~1e9 flop/s per thread): beyond
 * this many model FLOPs, --check would take minutes. */
#define MEASURE_CHECK_MAX_FLOPS 2e10

/* ---- inputs ------------------------------------------------------------------------------- */

/* Per buffer, its SIMPAR_SHARD_INPUT shards of the ranks `local` accepts (NULL: all ranks); a
 * buffer without any has none (no array). */
typedef struct {
    guint n;
    GPtrArray **shards; /* per buffer: const SimparShard *, or NULL */
} Inputs;

static void
measure_inputs_clear(Inputs *in)
{
    for (guint b = 0; b < in->n; b++)
        if (in->shards[b] != NULL)
            g_ptr_array_unref(in->shards[b]);
    g_clear_pointer(&in->shards, g_free);
}

static void
measure_inputs_init(Inputs *in, const SimparSchedule *sched, const SimparExecutor *local)
{
    in->n = simpar_schedule_n_buffers(sched);
    in->shards = g_new0(GPtrArray *, in->n);
    guint n;
    const SimparShard *sh = simpar_schedule_shards(sched, &n);
    for (guint i = 0; i < n; i++) {
        guint b = sh[i].view.buf;
        if (sh[i].role != SIMPAR_SHARD_INPUT ||
            (local != NULL && !simpar_executor_is_local(local, sh[i].rank)))
            continue;
        if (in->shards[b] == NULL)
            in->shards[b] = g_ptr_array_new();
        g_ptr_array_add(in->shards[b], (gpointer) &sh[i]);
    }
}

/* Buffer b's input values, in parallel, into `dst` (elems of `type`, zeros elsewhere). */
static void
measure_inputs_fill(const Inputs *in, guint b, guint64 seed, guint64 vocab, SimparDtype type,
                    void *dst)
{
    if (dst != NULL) /* NULL: an empty buffer */
        simpar_inputs_fill((const SimparShard *const *) in->shards[b]->pdata, in->shards[b]->len,
                           seed, vocab, type, dst, 0);
}

/* Every input buffer generated once in the executor's element type (in one scratch array, the
 * size of the largest, zeroed where the shards leave gaps), written and saved where it lives; a
 * repeat restores them (simpar_executor_restore). */
static gboolean
measure_inputs_write(SimparExecutor *ex, const SimparSchedule *sched, const Inputs *in,
                     guint64 seed, guint64 vocab, GError **error)
{
    gsize most = 0;
    for (guint b = 0; b < in->n; b++)
        if (in->shards[b] != NULL)
            most = MAX(most, simpar_schedule_buffer(sched, b)->elems *
                                 simpar_dtype_size(simpar_executor_input_type(ex, b)));
    void *values = simpar_inputs_alloc(most);
    if (values == NULL) {
        g_set_error(error, SIMPAR_EXEC_ERROR, SIMPAR_EXEC_ERROR_FAILED,
                    "the input values' scratch array needs %.3g GiB (the largest input buffer) "
                    "and this machine could not give it: run a smaller job",
                    (double) most / (1 << 30));
        return FALSE;
    }
    gboolean ok = TRUE;
    for (guint b = 0; b < in->n && ok; b++) {
        if (in->shards[b] == NULL)
            continue;
        SimparDtype type = simpar_executor_input_type(ex, b);
        gsize elems = simpar_schedule_buffer(sched, b)->elems;
        simpar_inputs_zero_gaps((const SimparShard *const *) in->shards[b]->pdata,
                                in->shards[b]->len, elems, type, values);
        measure_inputs_fill(in, b, seed, vocab, type, values);
        ok = simpar_executor_write(ex, b, values, error) && simpar_executor_save(ex, b, error);
    }
    simpar_inputs_free(values, most);
    return ok;
}

/* ---- --check ------------------------------------------------------------------------------ */

typedef struct {
    GPtrArray *tensors; /* sorted names of the schedule's output tensors (interned) */
    double *worst;      /* per tensor: worst relative error, -1 when none compared */
    double shards, max_error, tolerance;
} Check;

static void
measure_check_clear(Check *ck)
{
    g_clear_pointer(&ck->tensors, g_ptr_array_unref);
    g_clear_pointer(&ck->worst, g_free);
}

/* fp64 1e-9; fp32 1e-4 (2e-2 with TF32 GEMMs); bf16 5e-2; fp16 1e-2. */
static double
measure_tolerance(SimparDtype dt, gboolean tf32)
{
    switch (dt) {
    case SIMPAR_DTYPE_FP64:
        return 1e-9;
    case SIMPAR_DTYPE_FP32:
        return tf32 ? 2e-2 : 1e-4;
    case SIMPAR_DTYPE_BF16:
        return 5e-2;
    default:
        return 1e-2;
    }
}

static gboolean
measure_check_size(const SimparSchedule *sched, const SimparModel *m, SimparJobRun run,
                   GError **error)
{
    double total = 0;
    for (guint i = 0; i < simpar_schedule_n_ops(sched); i++) {
        double flops, bytes;
        simpar_compute_op_cost(sched, simpar_schedule_op(sched, i), SIMPAR_ATTENTION_UNFUSED,
                               &flops, &bytes);
        total += flops;
    }
    if (total <= MEASURE_CHECK_MAX_FLOPS)
        return TRUE;
    g_set_error(
        error, SIMPAR_EXEC_ERROR, SIMPAR_EXEC_ERROR_USAGE,
        "--check: the host reference would compute %.3g flops for %s (--hidden %" G_GINT64_FORMAT
        " --seq %" G_GINT64_FORMAT " --micro-batch %" G_GINT64_FORMAT " --ffn %" G_GINT64_FORMAT
        " --layers %" G_GINT64_FORMAT " --vocab %" G_GINT64_FORMAT
        "), more than %.0e in doubles on the CPU; check smaller sizes, e.g. --model tiny "
        "or --hidden 256 --ffn 1024 --seq 128 --micro-batch 2%s",
        total, m->name, m->hidden, m->seq, m->micro_batch, m->ffn, m->layers, m->vocab,
        MEASURE_CHECK_MAX_FLOPS, run == SIMPAR_JOB_RUN_STEP ? " --layers 2 --vocab 1024" : "");
    return FALSE;
}

static gint
measure_cmp_str(gconstpointer a, gconstpointer b)
{
    return strcmp(*(const char *const *) a, *(const char *const *) b);
}

static void
measure_check_init(Check *ck, const SimparSchedule *sched, double tolerance)
{
    g_autoptr(GHashTable) seen = g_hash_table_new(NULL, NULL);
    guint n;
    const SimparShard *sh = simpar_schedule_shards(sched, &n);
    ck->tensors = g_ptr_array_new();
    for (guint i = 0; i < n; i++)
        if (sh[i].role == SIMPAR_SHARD_OUTPUT && g_hash_table_add(seen, (gpointer) sh[i].tensor))
            g_ptr_array_add(ck->tensors, (gpointer) sh[i].tensor);
    g_ptr_array_sort(ck->tensors, measure_cmp_str);
    ck->worst = g_new(double, MAX(ck->tensors->len, 1));
    for (guint t = 0; t < ck->tensors->len; t++)
        ck->worst[t] = -1;
    ck->tolerance = tolerance;
}

/* max |got - ref| / max |ref| over the shard (max |got| when the reference is all zero); a
 * non-finite result is the largest error. */
static double
measure_shard_error(const SimparShard *sh, const double *got, const double *ref)
{
    gsize n = (gsize) (sh->rows * sh->cols);
    double diff = 0, scale = 0, got_scale = 0;
    got += sh->view.off, ref += sh->view.off;
    for (gsize i = 0; i < n; i++) {
        if (!isfinite(got[i]))
            return G_MAXDOUBLE;
        diff = MAX(diff, fabs(got[i] - ref[i]));
        scale = MAX(scale, fabs(ref[i]));
        got_scale = MAX(got_scale, fabs(got[i]));
    }
    scale = scale > 0 ? scale : got_scale;
    return scale > 0 ? diff / scale : 0;
}

static guint
measure_tensor_index(const Check *ck, const char *tensor)
{
    for (guint t = 0; t < ck->tensors->len; t++)
        if (ck->tensors->pdata[t] == tensor) /* interned */
            return t;
    g_assert_not_reached();
}

/* Compares the local output shards of `ex` with the host reference `ref`. */
static gboolean
measure_compare(Check *ck, const SimparSchedule *sched, SimparExecutor *ex, SimparHost *ref,
                GError **error)
{
    g_autoptr(GHashTable) got = g_hash_table_new_full(NULL, NULL, NULL, g_free);
    guint n;
    const SimparShard *sh = simpar_schedule_shards(sched, &n);
    for (guint i = 0; i < n; i++) {
        guint b = sh[i].view.buf;
        if (sh[i].role != SIMPAR_SHARD_OUTPUT || !simpar_executor_is_local(ex, sh[i].rank))
            continue;
        double *g = g_hash_table_lookup(got, GUINT_TO_POINTER(b));
        if (g == NULL) {
            g = g_new0(double, MAX(simpar_schedule_buffer(sched, b)->elems, 1));
            g_hash_table_insert(got, GUINT_TO_POINTER(b), g);
            if (!simpar_executor_read(ex, b, g, error))
                return FALSE;
        }
        guint t = measure_tensor_index(ck, sh[i].tensor);
        ck->worst[t] =
            MAX(ck->worst[t], measure_shard_error(&sh[i], g, simpar_host_buffer(ref, b)));
        ck->shards++;
    }
    return TRUE;
}

static gboolean
measure_check_verdict(const Check *ck, const char *executor, GError **error)
{
    g_autoptr(GString) bad = g_string_new(NULL);
    guint n_bad = 0;
    for (guint t = 0; t < ck->tensors->len; t++) {
        if (ck->worst[t] <= ck->tolerance)
            continue;
        if (n_bad++ < 5)
            g_string_append_printf(bad, "%s %s %.3g", n_bad > 1 ? "," : "",
                                   (const char *) ck->tensors->pdata[t], ck->worst[t]);
    }
    if (n_bad == 0)
        return TRUE;
    g_set_error(error, SIMPAR_EXEC_ERROR, SIMPAR_EXEC_ERROR_FAILED,
                "--check failed: %u of %u output tensors of the %s executor differ from the host "
                "executor by more than %.0e (relative to each shard's largest value):%s%s",
                n_bad, ck->tensors->len, executor, ck->tolerance, bad->str,
                n_bad > 5 ? ", ..." : "");
    return FALSE;
}

/* Runs the schedule once on `ex` and once on the host (every rank, in this process) from the
 * same inputs and compares every output shard of the local ranks. */
static gboolean
measure_check(Check *ck, const SimparSchedule *sched, SimparExecutor *ex,
              const SimparRunOptions *opts, const SimparExecWorld *world, guint64 vocab,
              GError **error)
{
    measure_check_init(ck, sched, measure_tolerance(simpar_schedule_dtype(sched), opts->cfg.tf32));
    g_autoptr(SimparHost) ref = simpar_host_try_new(sched, error);
    if (ref == NULL) {
        g_prefix_error(error, "--check: the reference run: ");
        return FALSE;
    }
    Inputs all = {0};
    measure_inputs_init(&all, sched, NULL);
    for (guint b = 0; b < all.n; b++)
        if (all.shards[b] != NULL)
            measure_inputs_fill(&all, b, opts->seed, vocab, SIMPAR_DTYPE_FP64,
                                simpar_host_buffer(ref, b));
    measure_inputs_clear(&all);
    if (!simpar_executor_restore(ex, error) || !simpar_executor_run(ex, NULL, error))
        return FALSE;
    if (!simpar_host_run(ref, error)) {
        g_prefix_error(error, "--check, the host reference: ");
        return FALSE;
    }
    if (!measure_compare(ck, sched, ex, ref, error))
        return FALSE;
    simpar_exec_world_max(world, ck->worst, ck->tensors->len);
    simpar_exec_world_sum(world, &ck->shards, 1);
    for (guint t = 0; t < ck->tensors->len; t++)
        ck->max_error = MAX(ck->max_error, ck->worst[t]);
    return measure_check_verdict(ck, opts->executor->name, error);
}

/* ---- warm-up and repeats ------------------------------------------------------------------ */

typedef struct {
    guint n_ops, repeats;
    SimparSpan *spans; /* [repeat * n_ops + op] */
    double *step;      /* per repeat */
    guint median;      /* the repeat with the (lower) median step time */
} Timing;

static void
measure_timing_clear(Timing *tm)
{
    g_clear_pointer(&tm->spans, g_free);
    g_clear_pointer(&tm->step, g_free);
}

static gboolean
measure_step_time(const SimparExecutor *ex, const SimparSpan *spans, guint n_ops, double *step,
                  GError **error)
{
    double first = G_MAXDOUBLE, last = 0;
    for (guint i = 0; i < n_ops; i++) {
        if (spans[i].start < 0 || spans[i].end < spans[i].start) {
            g_set_error(error, SIMPAR_EXEC_ERROR, SIMPAR_EXEC_ERROR_FAILED,
                        "the executor on %s gave op %u no time (start %g, end %g)",
                        simpar_executor_device(ex), i, spans[i].start, spans[i].end);
            return FALSE;
        }
        first = MIN(first, spans[i].start), last = MAX(last, spans[i].end);
    }
    *step = n_ops > 0 ? last - first : 0;
    return TRUE;
}

typedef struct {
    double step;
    guint repeat;
} Sample;

static int
measure_cmp_sample(const void *a, const void *b)
{
    const Sample *x = a, *y = b;
    return x->step != y->step ? (x->step > y->step) - (x->step < y->step)
                              : (x->repeat > y->repeat) - (x->repeat < y->repeat);
}

static guint
measure_median(const double *step, guint n)
{
    g_autofree Sample *order = g_new(Sample, n);
    for (guint i = 0; i < n; i++)
        order[i] = (Sample){step[i], i};
    qsort(order, n, sizeof(Sample), measure_cmp_sample);
    return order[(n - 1) / 2].repeat;
}

static gboolean
measure_repeats(Timing *tm, SimparExecutor *ex, const SimparSchedule *sched,
                const SimparRunOptions *opts, const SimparExecWorld *world, GError **error)
{
    guint n = tm->n_ops = simpar_schedule_n_ops(sched);
    tm->repeats = opts->repeats;
    tm->spans = g_new(SimparSpan, (gsize) MAX(n, 1) * opts->repeats);
    tm->step = g_new(double, opts->repeats);
    for (guint i = 0; i < opts->warmup + opts->repeats; i++) {
        guint r = i < opts->warmup ? 0 : i - opts->warmup; /* warm-ups write into repeat 0 */
        SimparSpan *spans = tm->spans + (gsize) r * n;
        if (!simpar_executor_restore(ex, error) || !simpar_executor_run(ex, spans, error))
            return FALSE;
        /* every rank's spans to every process: a span is two doubles, maxed element by element */
        G_STATIC_ASSERT(sizeof(SimparSpan) == 2 * sizeof(double));
        simpar_exec_world_max(world, (double *) spans, 2 * n);
        if (!measure_step_time(ex, spans, n, &tm->step[r], error))
            return FALSE;
    }
    tm->median = measure_median(tm->step, opts->repeats);
    return TRUE;
}

/* ---- verification of the timed runs ------------------------------------------------------ */

typedef struct {
    guint blocks, replicated; /* output blocks, those held by several ranks */
    double tolerance;
} Verified;

/* The outputs of the last run, every local output buffer read once: finite, and the replicas of
 * each block equal to `tolerance` (relative to the block's largest |value|) over all
 * processes. Runs before anything is reported: a failure is the run's error. */
static gboolean
measure_verify(Verified *vd, SimparExecutor *ex, const SimparSchedule *sched,
               const SimparRunOptions *opts, const SimparExecWorld *world, GError **error)
{
    vd->tolerance = measure_tolerance(simpar_schedule_dtype(sched), opts->cfg.tf32);
    g_autoptr(SimparVerify) vf = simpar_verify_new(sched, vd->tolerance);
    for (guint b = 0; b < simpar_schedule_n_buffers(sched); b++) {
        const SimparBuffer *buf = simpar_schedule_buffer(sched, b);
        if (!simpar_verify_needs(vf, b) || !simpar_executor_is_local(ex, buf->rank))
            continue;
        g_autofree double *v = g_new(double, MAX(buf->elems, 1));
        if (!simpar_executor_read(ex, b, v, error))
            return FALSE;
        simpar_verify_buffer(vf, b, v);
    }
    guint n;
    double *state = simpar_verify_state(vf, &n);
    simpar_exec_world_max(world, state, n);
    simpar_verify_count(vf, &vd->blocks, &vd->replicated);
    if (simpar_verify_check(vf, error))
        return TRUE;
    g_prefix_error(error,
                   "the outputs of the last run on the %s executor, verified before any timing "
                   "is reported: ",
                   opts->executor->name);
    return FALSE;
}

/* ---- RUN.json ----------------------------------------------------------------------------- */

static void
measure_json_member_int(JsonBuilder *b, const char *key, gint64 v)
{
    json_builder_set_member_name(b, key);
    json_builder_add_int_value(b, v);
}

static void
measure_json_member_str(JsonBuilder *b, const char *key, const char *v)
{
    json_builder_set_member_name(b, key);
    json_builder_add_string_value(b, v);
}

static void
measure_json_steps(JsonBuilder *b, const Timing *tm)
{
    double lo = G_MAXDOUBLE, hi = 0, sum = 0;
    for (guint r = 0; r < tm->repeats; r++)
        lo = MIN(lo, tm->step[r]), hi = MAX(hi, tm->step[r]), sum += tm->step[r];
    json_builder_set_member_name(b, "step_s");
    json_builder_begin_object(b);

    const struct {
        const char *key;
        double v;
    } stats[] = {
        {"median", tm->step[tm->median]}, {"min", lo}, {"max", hi}, {"mean", sum / tm->repeats}};

    for (guint i = 0; i < G_N_ELEMENTS(stats); i++) {
        json_builder_set_member_name(b, stats[i].key);
        json_builder_add_double_value(b, stats[i].v);
    }
    json_builder_set_member_name(b, "samples");
    json_builder_begin_array(b);
    for (guint r = 0; r < tm->repeats; r++)
        json_builder_add_double_value(b, tm->step[r]);
    json_builder_end_array(b);
    json_builder_end_object(b);
}

static void
measure_json_check(JsonBuilder *b, const Check *ck, gboolean checked)
{
    json_builder_set_member_name(b, "check");
    if (!checked) {
        json_builder_add_null_value(b);
        return;
    }
    json_builder_begin_object(b);
    measure_json_member_str(b, "against", "host");
    json_builder_set_member_name(b, "buffers");
    json_builder_add_int_value(b, (gint64) ck->shards);
    json_builder_set_member_name(b, "max_rel_error");
    json_builder_add_double_value(b, ck->max_error);
    json_builder_set_member_name(b, "tolerance");
    json_builder_add_double_value(b, ck->tolerance);
    json_builder_set_member_name(b, "passed");
    json_builder_add_boolean_value(b, TRUE); /* a failed check is an error, not a file */
    json_builder_end_object(b);
}

/* What every run gets, --check or not (a failed verification is an error, not a file). */
static void
measure_json_verified(JsonBuilder *b, const Verified *vd)
{
    json_builder_set_member_name(b, "verified");
    json_builder_begin_object(b);
    measure_json_member_str(b, "outputs", "finite, replicated blocks equal on every rank");
    measure_json_member_int(b, "blocks", vd->blocks);
    measure_json_member_int(b, "replicated", vd->replicated);
    json_builder_set_member_name(b, "tolerance");
    json_builder_add_double_value(b, vd->tolerance);
    json_builder_end_object(b);
}

/* Collectives: coll, axis and the nccl-tests size; send/recv: peer and bytes. */
static void
measure_json_comm(JsonBuilder *b, const SimparSchedule *sched, const SimparOp *op)
{
    guint ds = simpar_dtype_size(simpar_schedule_dtype(sched));
    if (op->kind == SIMPAR_OP_COLLECTIVE) {
        measure_json_member_str(b, "coll", simpar_coll_kind_name(op->u.coll.kind));
        measure_json_member_str(b, "axis", simpar_schedule_group(sched, op->u.coll.group)->axis);
        measure_json_member_int(b, "bytes", (gint64) (simpar_op_coll_elems(sched, op) * ds));
    } else if (op->kind == SIMPAR_OP_SEND || op->kind == SIMPAR_OP_RECV) {
        measure_json_member_int(b, "peer", op->u.p2p.peer);
        measure_json_member_int(b, "bytes", (gint64) (op->u.p2p.count * ds));
    }
}

static void
measure_json_ops(JsonBuilder *b, const SimparSchedule *sched, const Timing *tm)
{
    const SimparSpan *spans = tm->spans + (gsize) tm->median * tm->n_ops;
    json_builder_set_member_name(b, "ops");
    json_builder_begin_array(b);
    for (guint i = 0; i < tm->n_ops; i++) {
        const SimparOp *op = simpar_schedule_op(sched, i);
        json_builder_begin_object(b);
        measure_json_member_int(b, "op", i);
        measure_json_member_int(b, "rank", op->rank);
        measure_json_member_str(b, "stream", simpar_schedule_stream_name(sched, op->stream));
        measure_json_member_str(b, "kind", simpar_op_kind_name(op->kind));
        measure_json_member_str(b, "name", op->name != NULL ? op->name : "");
        measure_json_comm(b, sched, op);
        json_builder_set_member_name(b, "start_s");
        json_builder_add_double_value(b, spans[i].start);
        json_builder_set_member_name(b, "end_s");
        json_builder_add_double_value(b, spans[i].end);
        json_builder_end_object(b);
    }
    json_builder_end_array(b);
}

typedef struct {
    const SimparRunOptions *opts;
    const SimparSchedule *sched;
    const SimparModel *model;
    const SimparTrain *train;
    const char *device;
    const Timing *tm;
    const Check *ck;
    const Verified *vd;
} RunReport;

static JsonNode *
measure_json(const RunReport *rp)
{
    const SimparRunOptions *o = rp->opts;
    g_autoptr(JsonBuilder) b = json_builder_new();
    json_builder_begin_object(b);
    simpar_json_head(b, "simpar-run", 1);
    measure_json_member_str(b, "executor", o->executor->name);
    measure_json_member_str(b, "device", rp->device);
    measure_json_member_str(b, "run", simpar_job_run_name(o->run));
    json_builder_set_member_name(b, "job_args");
    json_builder_begin_array(b);
    g_auto(GStrv) argv = simpar_job_args_to_argv(&o->job);
    for (guint i = 0; argv[i] != NULL; i++)
        json_builder_add_string_value(b, argv[i]);
    json_builder_end_array(b);
    measure_json_member_str(b, "model", rp->model->name);
    measure_json_member_str(b, "mode", rp->train->tp.gen->name);
    measure_json_member_int(b, "ranks", simpar_schedule_n_ranks(rp->sched));
    measure_json_member_str(b, "dtype", simpar_dtype_name(rp->model->dtype));
    json_builder_set_member_name(b, "tf32");
    json_builder_add_boolean_value(b, o->cfg.tf32);
    measure_json_member_str(b, "attention", simpar_attention_name(o->attention));
    json_builder_set_member_name(b, "dropout_p"); /* hidden and attention alike */
    json_builder_add_double_value(b, rp->train->tp.p_hidden);
    measure_json_member_int(b, "warmup", o->warmup);
    measure_json_member_int(b, "repeats", o->repeats);
    measure_json_steps(b, rp->tm);
    measure_json_check(b, rp->ck, o->check);
    measure_json_verified(b, rp->vd);
    measure_json_ops(b, rp->sched, rp->tm);
    json_builder_end_object(b);
    return json_builder_get_root(b); /* (transfer full) */
}

gboolean
simpar_measure_write_json(JsonNode *root, const char *path, GError **error)
{
    g_autoptr(JsonGenerator) gen = json_generator_new();
    json_generator_set_pretty(gen, TRUE);
    json_generator_set_indent(gen, 2);
    json_generator_set_root(gen, root);
    gsize len;
    g_autofree char *text = json_generator_to_data(gen, &len);
    return simpar_output_write("-o", path, text, len, error);
}

/* ---- text --------------------------------------------------------------------------------- */

static char *
measure_summary(const RunReport *rp)
{
    const Timing *tm = rp->tm;
    double lo = G_MAXDOUBLE, hi = 0;
    for (guint r = 0; r < tm->repeats; r++)
        lo = MIN(lo, tm->step[r]), hi = MAX(hi, tm->step[r]);
    g_auto(GStrv) argv = simpar_job_args_to_argv(&rp->opts->job);
    g_autofree char *args = g_strjoinv(" ", argv);
    return g_strdup_printf(
        "executor:  %s on %s\n"
        "job:       %s%s%s (model %s, %s, %u rank%s, %s)\n"
        "ops:       %u\n"
        "verified:  %u output blocks finite, %u replicated ones equal on every rank (to %.0e)\n"
        "step time: median %.6g ms, min %.6g ms, max %.6g ms "
        "(%u repeats after %u warm-up)\n",
        rp->opts->executor->name, rp->device, simpar_job_run_name(rp->opts->run),
        args[0] != '\0' ? " " : "", args, rp->model->name, rp->train->tp.gen->name,
        simpar_schedule_n_ranks(rp->sched), simpar_schedule_n_ranks(rp->sched) == 1 ? "" : "s",
        simpar_dtype_name(rp->model->dtype), tm->n_ops, rp->vd->blocks, rp->vd->replicated,
        rp->vd->tolerance, tm->step[tm->median] * 1e3, lo * 1e3, hi * 1e3, tm->repeats,
        rp->opts->warmup);
}

static char *
measure_check_text(const Check *ck)
{
    GString *s = g_string_new(NULL);
    g_string_append_printf(s,
                           "check against host: %.0f output shards, worst relative error "
                           "%.3g (tolerance %.0e): passed\n",
                           ck->shards, ck->max_error, ck->tolerance);
    for (guint t = 0; t < ck->tensors->len; t++)
        if (ck->worst[t] >= 0)
            g_string_append_printf(s, "  %-32s %.3g\n", (const char *) ck->tensors->pdata[t],
                                   ck->worst[t]);
    return g_string_free(s, FALSE); /* (transfer full) */
}

/* ---- the run ------------------------------------------------------------------------------ */

JsonNode *
simpar_measure_run(const SimparRunOptions *opts, const SimparExecWorld *world, char **summary,
                   char **check, GError **error)
{
    g_return_val_if_fail(error == NULL || *error == NULL, NULL);
    g_return_val_if_fail(opts->repeats >= 1, NULL);
    SimparModel model;
    SimparTrain train;
    g_autoptr(SimparSchedule) sched =
        simpar_job_schedule(&opts->job, opts->run, "tiny", &model, &train, error);
    if (sched == NULL || (opts->check && !measure_check_size(sched, &model, opts->run, error)))
        return NULL;
    g_autoptr(SimparExecutor) ex =
        simpar_executor_new(opts->executor, sched, world, &opts->cfg, error);
    if (ex == NULL)
        return NULL;
    Inputs in = {0};
    Check ck = {0};
    Timing tm = {0};
    Verified vd = {0};
    measure_inputs_init(&in, sched, ex);
    JsonNode *root = NULL;
    if (measure_inputs_write(ex, sched, &in, opts->seed, (guint64) model.vocab, error) &&
        (!opts->check || measure_check(&ck, sched, ex, opts, world, model.vocab, error)) &&
        measure_repeats(&tm, ex, sched, opts, world, error) &&
        measure_verify(&vd, ex, sched, opts, world, error)) {
        RunReport rp = {opts, sched, &model, &train, simpar_executor_device(ex), &tm, &ck, &vd};
        root = measure_json(&rp);
        *summary = measure_summary(&rp);
        *check = opts->check ? measure_check_text(&ck) : NULL;
    }
    measure_inputs_clear(&in);
    measure_check_clear(&ck);
    measure_timing_clear(&tm);
    return root; /* (transfer full) */
}
