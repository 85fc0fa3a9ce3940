/* measured.c - RUN.json and BENCH.json read with json-glib, checked member by member. */
#include "measured.h"
#include <json-glib/json-glib.h>
#include <math.h>

G_DEFINE_QUARK(simpar_measured_error_quark, simpar_measured_error)

/* ----------------------------------------------------------------------- members, checked */

/* Where a member sits: the file, and the enclosing element ("ops[3]."), or "" at the top. */
typedef struct {
    const char *path;
    const char *where;
} Loc;

static gboolean
measured_bad(const Loc *l, const char *key, const char *want, GError **error)
{
    g_set_error(error, SIMPAR_MEASURED_ERROR, SIMPAR_MEASURED_ERROR_PARSE, "%s: %s%s %s", l->path,
                l->where, key, want);
    return FALSE;
}

/* A member that is there but wrong: its value (shortened) in the message. */
static gboolean
measured_bad_value(const Loc *l, const char *key, JsonNode *node, const char *want, GError **error)
{
    g_autofree char *text = json_to_string(node, FALSE);
    gboolean cut = g_utf8_strlen(text, -1) > 40;
    /* g_utf8_substring reads past a string shorter than its end: cut only a long one */
    g_autofree char *head = cut ? g_utf8_substring(text, 0, 37) : NULL;
    g_autofree char *what =
        g_strdup_printf("is %s%s: %s", cut ? head : text, cut ? "..." : "", want);
    return measured_bad(l, key, what, error);
}

static JsonNode *
measured_member(const Loc *l, JsonObject *o, const char *key, GError **error)
{
    JsonNode *node = json_object_get_member(o, key);
    if (node == NULL)
        measured_bad(l, key, "is missing", error);
    return node;
}

static gboolean
measured_string(const Loc *l, JsonObject *o, const char *key, const char **out, GError **error)
{
    JsonNode *node = measured_member(l, o, key, error);
    if (node == NULL)
        return FALSE;
    if (!JSON_NODE_HOLDS_VALUE(node) || json_node_get_value_type(node) != G_TYPE_STRING)
        return measured_bad_value(l, key, node, "must be a string", error);
    *out = json_node_get_string(node);
    return TRUE;
}

/* A finite number at least `min`. */
static gboolean
measured_number(const Loc *l, JsonObject *o, const char *key, double min, double *out,
                GError **error)
{
    JsonNode *node = measured_member(l, o, key, error);
    if (node == NULL)
        return FALSE;
    GType t = JSON_NODE_HOLDS_VALUE(node) ? json_node_get_value_type(node) : G_TYPE_INVALID;
    double v = t == G_TYPE_INT64 || t == G_TYPE_DOUBLE ? json_node_get_double(node) : NAN;
    if (!isfinite(v) || v < min) {
        g_autofree char *want = isinf(min)
                                    ? g_strdup("must be a number")
                                    : g_strdup_printf("must be a number of at least %g", min);
        return measured_bad_value(l, key, node, want, error);
    }
    *out = v;
    return TRUE;
}

static gboolean
measured_uint(const Loc *l, JsonObject *o, const char *key, guint min, guint *out, GError **error)
{
    double v;
    if (!measured_number(l, o, key, min, &v, error))
        return FALSE;
    if (v != floor(v) || v > G_MAXUINT) {
        g_autofree char *want = g_strdup_printf("must be a whole number of at least %u", min);
        return measured_bad_value(l, key, json_object_get_member(o, key), want, error);
    }
    *out = (guint) v;
    return TRUE;
}

/* An array member; `optional` ones may be absent (NULL, no error). */
static gboolean
measured_array(const Loc *l, JsonObject *o, const char *key, gboolean optional, JsonArray **out,
               GError **error)
{
    *out = NULL;
    if (optional && !json_object_has_member(o, key))
        return TRUE;
    JsonNode *node = measured_member(l, o, key, error);
    if (node == NULL)
        return FALSE;
    if (!JSON_NODE_HOLDS_ARRAY(node))
        return measured_bad_value(l, key, node, "must be an array", error);
    *out = json_node_get_array(node);
    return TRUE;
}

static JsonObject *
measured_element(const Loc *l, JsonArray *a, const char *key, guint i, GError **error)
{
    JsonNode *node = json_array_get_element(a, i);
    if (!JSON_NODE_HOLDS_OBJECT(node)) {
        g_autofree char *name = g_strdup_printf("%s[%u]", key, i);
        measured_bad(l, name, "must be an object", error);
        return NULL;
    }
    return json_node_get_object(node);
}

/* The file's top object, with "format" `format` and "version" 1. */
static JsonObject *
measured_open(JsonParser *parser, const char *path, const char *format, GError **error)
{
    JsonObject *o = simpar_json_load_object(parser, path, SIMPAR_JSON_LARGE_MAX, error);
    if (o == NULL) {
        g_prefix_error(error, "--measured ");
        return NULL;
    }
    Loc l = {path, ""};
    const char *got;
    guint version;
    if (!measured_string(&l, o, "format", &got, error))
        return NULL;
    if (!g_str_equal(got, format)) {
        g_set_error(error, SIMPAR_MEASURED_ERROR, SIMPAR_MEASURED_ERROR_PARSE,
                    "%s: \"format\" is \"%s\"; this command reads \"%s\" (%s)", path, got, format,
                    g_str_equal(format, "simpar-run") ? "simpar-exec --run ... -o RUN.json"
                                                      : "simpar-exec --bench ... -o BENCH.json");
        return NULL;
    }
    if (!measured_uint(&l, o, "version", 0, &version, error))
        return NULL;
    if (version != 1) {
        g_set_error(error, SIMPAR_MEASURED_ERROR, SIMPAR_MEASURED_ERROR_PARSE,
                    "%s: \"version\" is %u; this simpar reads version 1", path, version);
        return NULL;
    }
    return o;
}

/* --------------------------------------------------------------------------------- RUN.json */

void
simpar_measured_run_free(SimparMeasuredRun *m)
{
    if (m == NULL)
        return;
    g_free(m->path), g_free(m->executor), g_free(m->device), g_free(m->attention);
    g_strfreev(m->job_args);
    g_free(m->spans), g_free(m->ranks_by_op);
    g_strfreev(m->kinds_by_op);
    g_strfreev(m->names_by_op);
    g_free(m->bytes_by_op);
    g_free(m);
}

static gboolean
measured_run_header(SimparMeasuredRun *m, JsonObject *o, GError **error)
{
    Loc l = {m->path, ""};
    const char *executor, *device, *run, *attention = "unfused";
    JsonArray *args;
    if (!measured_string(&l, o, "executor", &executor, error) ||
        !measured_string(&l, o, "device", &device, error) ||
        !measured_string(&l, o, "run", &run, error) ||
        !measured_uint(&l, o, "ranks", 1, &m->ranks, error) ||
        (json_object_has_member(o, "attention") &&
         !measured_string(&l, o, "attention", &attention, error)) ||
        !measured_array(&l, o, "job_args", FALSE, &args, error) ||
        (json_object_has_member(o, "dropout_p") &&
         !measured_number(&l, o, "dropout_p", 0, &m->dropout_p, error)))
        return FALSE;
    if (!(m->dropout_p < 1))
        return measured_bad(&l, "dropout_p", "must be from 0 to less than 1", error);
    if (!simpar_job_run_parse(run, &m->run, NULL))
        return measured_bad(&l, "run", "must be \"layer\" or \"step\"", error);
    m->executor = g_strdup(executor), m->device = g_strdup(device);
    m->attention = g_strdup(attention);
    m->job_args = g_new0(char *, json_array_get_length(args) + 1);
    for (guint i = 0; i < json_array_get_length(args); i++) {
        JsonNode *n = json_array_get_element(args, i);
        if (!JSON_NODE_HOLDS_VALUE(n) || json_node_get_value_type(n) != G_TYPE_STRING)
            return measured_bad(&l, "job_args", "must be an array of strings", error);
        m->job_args[i] = g_strdup(json_node_get_string(n));
    }
    JsonNode *step = measured_member(&l, o, "step_s", error);
    if (step == NULL)
        return FALSE;
    if (!JSON_NODE_HOLDS_OBJECT(step))
        return measured_bad(&l, "step_s", "must be an object", error);
    Loc ls = {m->path, "step_s."};
    return measured_number(&ls, json_node_get_object(step), "median", 0, &m->step_median_s, error);
}

static gboolean
measured_run_ops(SimparMeasuredRun *m, JsonObject *o, GError **error)
{
    Loc l = {m->path, ""};
    JsonArray *ops;
    if (!measured_array(&l, o, "ops", FALSE, &ops, error))
        return FALSE;
    m->n_ops = json_array_get_length(ops);
    m->spans = g_new(SimparSpan, MAX(m->n_ops, 1));
    m->ranks_by_op = g_new(guint, MAX(m->n_ops, 1));
    m->kinds_by_op = g_new0(char *, m->n_ops + 1);
    m->names_by_op = g_new0(char *, m->n_ops + 1);
    m->bytes_by_op = g_new(double, MAX(m->n_ops, 1));
    double first = INFINITY;
    for (guint i = 0; i < m->n_ops; i++) {
        JsonObject *op = measured_element(&l, ops, "ops", i, error);
        g_autofree char *where = g_strdup_printf("ops[%u].", i);
        Loc lo = {m->path, where};
        guint index;
        const char *kind;
        if (op == NULL || !measured_uint(&lo, op, "op", 0, &index, error) ||
            !measured_uint(&lo, op, "rank", 0, &m->ranks_by_op[i], error) ||
            !measured_string(&lo, op, "kind", &kind, error) ||
            !measured_number(&lo, op, "start_s", -INFINITY, &m->spans[i].start, error) ||
            !measured_number(&lo, op, "end_s", m->spans[i].start, &m->spans[i].end, error))
            return FALSE;
        if (index != i)
            return measured_bad(&lo, "op", "must be the op's index (ops are in op order)", error);
        m->kinds_by_op[i] = g_strdup(kind);
        const char *name = "";
        m->bytes_by_op[i] = -1;
        if ((json_object_has_member(op, "name") &&
             !measured_string(&lo, op, "name", &name, error)) ||
            (json_object_has_member(op, "bytes") &&
             !measured_number(&lo, op, "bytes", 0, &m->bytes_by_op[i], error)))
            return FALSE;
        m->names_by_op[i] = g_strdup(name);
        first = MIN(first, m->spans[i].start);
    }
    double last = 0;
    for (guint i = 0; i < m->n_ops; i++) {
        m->spans[i].start -= first, m->spans[i].end -= first;
        last = MAX(last, m->spans[i].end);
    }
    if (m->n_ops > 0 && !(last > 0)) /* a step of 0 s: every rate derived from it infinite */
        return measured_bad(&l, "ops",
                            "all start and end at one instant (the run spans 0 s); a "
                            "measured run takes time",
                            error);
    return TRUE;
}

SimparMeasuredRun *
simpar_measured_run_load(const char *path, GError **error)
{
    g_return_val_if_fail(path != NULL, NULL);
    g_return_val_if_fail(error == NULL || *error == NULL, NULL);
    g_autoptr(JsonParser) parser = json_parser_new();
    JsonObject *o = measured_open(parser, path, "simpar-run", error);
    if (o == NULL)
        return NULL;
    g_autoptr(SimparMeasuredRun) m = g_new0(SimparMeasuredRun, 1);
    m->path = g_strdup(path);
    if (!measured_run_header(m, o, error) || !measured_run_ops(m, o, error))
        return NULL;
    return g_steal_pointer(&m); /* (transfer full) */
}

static gboolean measured_mismatch(const SimparMeasuredRun *m, GError **error, const char *fmt, ...)
    G_GNUC_PRINTF(3, 4);

static gboolean
measured_mismatch(const SimparMeasuredRun *m, GError **error, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    g_autofree char *what = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    g_autofree char *job = g_strjoinv(" ", m->job_args);
    g_set_error(error, SIMPAR_MEASURED_ERROR, SIMPAR_MEASURED_ERROR_MISMATCH,
                "%s: %s: the run does not match this simpar's schedule of its job (%s, --run %s); "
                "build simpar-exec and simpar from the same source",
                m->path, what, job, simpar_job_run_name(m->run));
    return FALSE;
}

static gboolean
measured_run_check(const SimparMeasuredRun *m, const SimparSchedule *s, GError **error)
{
    if (simpar_schedule_n_ranks(s) != m->ranks)
        return measured_mismatch(m, error, "%u ranks, the schedule has %u", m->ranks,
                                 simpar_schedule_n_ranks(s));
    if (simpar_schedule_n_ops(s) != m->n_ops)
        return measured_mismatch(m, error, "%u ops, the schedule has %u", m->n_ops,
                                 simpar_schedule_n_ops(s));
    for (guint i = 0; i < m->n_ops; i++) {
        const SimparOp *op = simpar_schedule_op(s, i);
        if (op->rank != m->ranks_by_op[i] ||
            !g_str_equal(simpar_op_kind_name(op->kind), m->kinds_by_op[i]))
            return measured_mismatch(
                m, error, "op %u is a %s on rank %u, the schedule's is a %s on rank %u", i,
                m->kinds_by_op[i], m->ranks_by_op[i], simpar_op_kind_name(op->kind), op->rank);
        if (m->names_by_op[i][0] != '\0' && !g_str_equal(m->names_by_op[i], op->name))
            return measured_mismatch(m, error, "op %u is '%s', the schedule's is '%s'", i,
                                     m->names_by_op[i], op->name);
        /* the sizes the job_args give: a run of another model's sizes is not this job's */
        double ds = simpar_dtype_size(simpar_schedule_dtype(s)), want = -1;
        if (op->kind == SIMPAR_OP_COLLECTIVE)
            want = (double) simpar_op_coll_elems(s, op) * ds;
        else if (op->kind == SIMPAR_OP_SEND || op->kind == SIMPAR_OP_RECV)
            want = (double) op->u.p2p.count * ds;
        if (m->bytes_by_op[i] >= 0 && want >= 0 && m->bytes_by_op[i] != want)
            return measured_mismatch(m, error, "op %u ('%s') moves %.0f bytes, the schedule's %.0f",
                                     i, op->name, m->bytes_by_op[i], want);
    }
    return TRUE;
}

SimparSchedule *
simpar_measured_run_schedule(const SimparMeasuredRun *m, SimparModel *model, SimparTrain *train,
                             GError **error)
{
    g_return_val_if_fail(error == NULL || *error == NULL, NULL);
    SimparJobArgs args;
    simpar_job_args_init(&args);
    g_autoptr(GError) local = NULL;
    g_autoptr(SimparSchedule) s = NULL;
    if (simpar_job_args_from_argv(&args, (const char *const *) m->job_args, &local)) {
        /* a run at p = 0 (every run before "dropout_p") is the job without dropout */
        if (m->dropout_p == 0)
            g_free(args.dropout), args.dropout = g_strdup("off");
        s = simpar_job_schedule(&args, m->run, "tiny", model, train, &local);
    }
    simpar_job_args_clear(&args);
    if (s != NULL && train->tp.p_hidden != m->dropout_p) {
        g_set_error(error, SIMPAR_MEASURED_ERROR, SIMPAR_MEASURED_ERROR_PARSE,
                    "%s: dropout_p is %g where its job_args give %g", m->path, m->dropout_p,
                    train->tp.p_hidden);
        return NULL;
    }
    if (s == NULL) { /* the file's job, not the user's options: not a usage error */
        g_set_error(error, SIMPAR_MEASURED_ERROR, SIMPAR_MEASURED_ERROR_PARSE, "%s: job_args: %s",
                    m->path, local->message);
        return NULL;
    }
    if (!measured_run_check(m, s, error))
        return NULL;
    return g_steal_pointer(&s); /* (transfer full) */
}

/* ------------------------------------------------------------------------------- BENCH.json */

void
simpar_bench_free(SimparBench *b)
{
    if (b == NULL)
        return;
    g_free(b->path), g_free(b->executor), g_free(b->device);
    if (b->gemm != NULL)
        g_array_free(b->gemm, TRUE);
    if (b->kernels != NULL)
        g_array_free(b->kernels, TRUE);
    if (b->colls != NULL)
        g_array_free(b->colls, TRUE);
    g_free(b);
}

static gboolean
bench_dtype(const Loc *l, JsonObject *o, SimparDtype fallback, SimparDtype *out, GError **error)
{
    const char *name;
    *out = fallback;
    if (json_object_has_member(o, "dtype") && !measured_string(l, o, "dtype", &name, error))
        return FALSE;
    if (json_object_has_member(o, "dtype") && !simpar_dtype_parse(name, out, NULL))
        return measured_bad(l, "dtype", "must be one of fp16, bf16, fp32, fp64", error);
    return TRUE;
}

/* An optional boolean member (false when not given). */
static gboolean
bench_bool(const Loc *l, JsonObject *o, const char *key, gboolean *out, GError **error)
{
    JsonNode *n = json_object_get_member(o, key);
    *out = FALSE;
    if (n == NULL)
        return TRUE;
    if (!JSON_NODE_HOLDS_VALUE(n) || json_node_get_value_type(n) != G_TYPE_BOOLEAN) {
        g_set_error(error, SIMPAR_MEASURED_ERROR, SIMPAR_MEASURED_ERROR_PARSE,
                    "%s: %s\"%s\" must be true or false", l->path, l->where, key);
        return FALSE;
    }
    *out = json_node_get_boolean(n);
    return TRUE;
}

static gboolean
bench_gemm(SimparBench *b, const Loc *l, JsonObject *o, GError **error)
{
    SimparBenchGemm g = {.batch = 1};
    if (!measured_number(l, o, "m", 1, &g.m, error) ||
        !measured_number(l, o, "n", 1, &g.n, error) ||
        !measured_number(l, o, "k", 1, &g.k, error) ||
        (json_object_has_member(o, "batch") &&
         !measured_number(l, o, "batch", 1, &g.batch, error)) ||
        !bench_dtype(l, o, b->dtype, &g.dtype, error) ||
        !measured_number(l, o, "time_s", 1e-12, &g.time_s, error) ||
        !bench_bool(l, o, "trans_a", &g.trans_a, error) ||
        !bench_bool(l, o, "trans_b", &g.trans_b, error))
        return FALSE;
    g_array_append_val(b->gemm, g);
    return TRUE;
}

static gboolean
bench_kernel(SimparBench *b, const Loc *l, JsonObject *o, GError **error)
{
    SimparBenchKernel k = {0};
    const char *kind;
    if (!measured_string(l, o, "kind", &kind, error) ||
        !measured_number(l, o, "bytes", 0, &k.bytes, error) ||
        !measured_number(l, o, "time_s", 1e-12, &k.time_s, error))
        return FALSE;
    const char *dims[] = {"batch", "heads", "seq", "head_dim"};
    guint *out[] = {&k.batch, &k.heads, &k.seq, &k.head_dim};
    for (guint i = 0; i < G_N_ELEMENTS(dims); i++)
        if (json_object_has_member(o, dims[i]) && !measured_uint(l, o, dims[i], 1, out[i], error))
            return FALSE;
    k.dropout_p = 0.1;
    if (json_object_has_member(o, "dropout_p") &&
        !measured_number(l, o, "dropout_p", 0, &k.dropout_p, error))
        return FALSE;
    if (!(k.dropout_p < 1))
        return measured_bad(l, "dropout_p", "must be from 0 to less than 1", error);
    k.kind = g_intern_string(kind);
    g_array_append_val(b->kernels, k);
    return TRUE;
}

/* BENCH.json names a collective as nccl-tests and `simpar collective --op` do: "allreduce". */
static gboolean
bench_op_is(const char *op, SimparCollKind kind)
{
    g_auto(GStrv) parts = g_strsplit(simpar_coll_kind_name(kind), "-", -1);
    g_autofree char *name = g_strjoinv("", parts);
    return g_str_equal(op, name);
}

static gboolean
bench_coll(SimparBench *b, const Loc *l, JsonObject *o, GError **error)
{
    SimparBenchColl c = {0};
    const char *op;
    if (!measured_string(l, o, "op", &op, error) ||
        !measured_uint(l, o, "gpus", 1, &c.gpus, error) ||
        !measured_number(l, o, "bytes", 1, &c.bytes, error) ||
        !measured_number(l, o, "time_s", 1e-12, &c.time_s, error))
        return FALSE;
    guint k = 0; /* simpar_coll_kind_name without its hyphens, as simpar-exec writes it */
    while (k < SIMPAR_N_COLL_KINDS && !bench_op_is(op, (SimparCollKind) k))
        k++;
    if (k == SIMPAR_N_COLL_KINDS)
        return measured_bad(l, "op",
                            "must be allreduce, allgather, reducescatter, broadcast, reduce or "
                            "alltoall",
                            error);
    c.kind = (SimparCollKind) k;
    g_array_append_val(b->colls, c);
    return TRUE;
}

typedef gboolean (*BenchRow)(SimparBench *b, const Loc *l, JsonObject *o, GError **error);

static gboolean
bench_rows(SimparBench *b, JsonObject *top, const char *key, BenchRow row, GError **error)
{
    Loc l = {b->path, ""};
    JsonArray *a;
    if (!measured_array(&l, top, key, TRUE, &a, error))
        return FALSE;
    for (guint i = 0; a != NULL && i < json_array_get_length(a); i++) {
        JsonObject *o = measured_element(&l, a, key, i, error);
        g_autofree char *where = g_strdup_printf("%s[%u].", key, i);
        Loc lr = {b->path, where};
        if (o == NULL || !row(b, &lr, o, error))
            return FALSE;
    }
    return TRUE;
}

SimparBench *
simpar_bench_load(const char *path, GError **error)
{
    g_return_val_if_fail(path != NULL, NULL);
    g_return_val_if_fail(error == NULL || *error == NULL, NULL);
    g_autoptr(JsonParser) parser = json_parser_new();
    JsonObject *o = measured_open(parser, path, "simpar-bench", error);
    if (o == NULL)
        return NULL;
    g_autoptr(SimparBench) b = g_new0(SimparBench, 1);
    b->path = g_strdup(path);
    b->gemm = g_array_new(FALSE, FALSE, sizeof(SimparBenchGemm));
    b->kernels = g_array_new(FALSE, FALSE, sizeof(SimparBenchKernel));
    b->colls = g_array_new(FALSE, FALSE, sizeof(SimparBenchColl));
    Loc l = {path, ""};
    const char *executor, *device;
    if (!measured_string(&l, o, "executor", &executor, error) ||
        !measured_string(&l, o, "device", &device, error) ||
        !bench_dtype(&l, o, SIMPAR_DTYPE_FP32, &b->dtype, error) ||
        (json_object_has_member(o, "gpus") && !measured_uint(&l, o, "gpus", 0, &b->gpus, error)))
        return NULL;
    b->executor = g_strdup(executor), b->device = g_strdup(device);
    const char *inputs = ""; /* a string when given: "random", or the bench's older fill */
    if (json_object_has_member(o, "inputs") && !measured_string(&l, o, "inputs", &inputs, error))
        return NULL;
    b->zero_above_elems = g_strcmp0(inputs, "random") == 0 ? 0 : (double) (1u << 27);
    if (!bench_rows(b, o, "gemm", bench_gemm, error) ||
        !bench_rows(b, o, "kernels", bench_kernel, error) ||
        !bench_rows(b, o, "collectives", bench_coll, error))
        return NULL;
    return g_steal_pointer(&b); /* (transfer full) */
}
