/* compute-data.c - the measured side of the compute model (compute.h): GEMM tables, kernel
 * classes and kernel sets, and the per-GPU data compiled into simpar (topologies/compute.ini).
 *
 * A GEMM table holds measured times of shapes (m, n, k, batch, transposes) of one dtype. A
 * GEMM's time is the shape curve's (compute.c), times the measured-over-curve ratio at that
 * shape: at a measured shape the measurement itself, between shapes the ratios of the nearest
 * ones weighted by 1 / d^4 (d: distance in log2 of m, n, k and batch, a quarter per transpose
 * that differs), far from every shape the table's overall trend. The curve keeps the shape's
 * physics where the table has none; the table corrects it where it was measured.
 *
 *   time(query) = curve(query) * exp(sum_i w_i ln(t_i / curve_i) / sum_i w_i),  w_i = d_i^-4
 *
 * Also the names the command line gives the attention implementations and the kernel sets.
 *
 * Ownership: tables are interned and never freed (process-wide, immutable): a SimparGpu that
 * points to one stays a plain value.
 */
#include "compute-private.h"
#include <math.h>
#include <stdio.h>
#include <string.h>

/* ----- kernel classes and sets ----- */

static const char *const kclass_names[SIMPAR_KCLASS_N] = {
    "stream", "activation", "dropout", "norm", "softmax", "optimizer",
};

const char *
simpar_kernel_class_name(SimparKernelClass kc)
{
    g_return_val_if_fail(kc < SIMPAR_KCLASS_N, "?");
    return kclass_names[kc];
}

/* ----- names on the command line: attention implementations, kernel sets ----- */

static const char *const attention_names[] = {"unfused", "flash"};
static const char *const kernel_set_names[] = {"megatron", "pytorch", "unfused"};

/* The index of `name` in `names`, or -1 with the error naming the option and what is valid. */
static int
compute_option_index(const char *const *names, guint n, const char *option, const char *name,
                     const char *valid, GError **error)
{
    for (guint i = 0; i < n; i++)
        if (g_strcmp0(name, names[i]) == 0)
            return (int) i;
    g_set_error(error, SIMPAR_COMPUTE_ERROR, SIMPAR_COMPUTE_ERROR_OPTION,
                "%s %s: unknown (valid: %s)", option, name != NULL ? name : "(null)", valid);
    return -1;
}

gboolean
simpar_attention_parse(const char *name, SimparAttentionImpl *out, GError **error)
{
    g_return_val_if_fail(out != NULL, FALSE);
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    int i = compute_option_index(attention_names, G_N_ELEMENTS(attention_names), "--attention",
                                 name, "unfused, flash", error);
    if (i >= 0)
        *out = (SimparAttentionImpl) i;
    return i >= 0;
}

gboolean
simpar_kernel_set_parse(const char *name, SimparKernelSet *out, GError **error)
{
    g_return_val_if_fail(out != NULL, FALSE);
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    int i =
        compute_option_index(kernel_set_names, G_N_ELEMENTS(kernel_set_names), "--kernels", name,
                             "megatron, Megatron-Core's fused kernels; pytorch, plain "
                             "PyTorch; unfused, one kernel per op as simpar-exec runs them",
                             error);
    if (i >= 0)
        *out = (SimparKernelSet) i;
    return i >= 0;
}

const char *
simpar_kernel_set_name(SimparKernelSet set)
{
    g_return_val_if_fail(set < G_N_ELEMENTS(kernel_set_names), "?");
    return kernel_set_names[set];
}

const char *
simpar_attention_name(SimparAttentionImpl impl)
{
    g_return_val_if_fail(impl <= SIMPAR_ATTENTION_FLASH, "?");
    return attention_names[impl];
}

/* ----- GEMM tables ----- */

typedef struct {
    gint64 dtype, ta, tb;
    double m, n, k, batch, time_s;
    double lm, ln, lk, lb; /* log2 of the shape */
} GemmRow;

struct _SimparGemmTable {
    GArray *rows; /* GemmRow, in the order added */
    gsize id;     /* new with every row added, never reused: what the kept ratios know it by
                   * (a freed table's address comes back, as leave-one-out tables do) */
};

static gsize gemm_table_ids;

static gsize
gemm_table_next_id(void)
{
    return (gsize) g_atomic_pointer_add(&gemm_table_ids, 1) + 1;
}

void
simpar_gemm_table_free(SimparGemmTable *t)
{
    if (t == NULL)
        return;
    g_array_unref(t->rows);
    g_free(t);
}

SimparGemmTable *
simpar_gemm_table_new(void)
{
    SimparGemmTable *t = g_new0(SimparGemmTable, 1);
    t->rows = g_array_new(FALSE, TRUE, sizeof(GemmRow));
    t->id = gemm_table_next_id();
    return t; /* (transfer full) */
}

void
simpar_gemm_table_add(SimparGemmTable *t, SimparDtype dtype, double m, double n, double k,
                      double batch, gboolean trans_a, gboolean trans_b, double time_s)
{
    g_return_if_fail(t != NULL && m >= 1 && n >= 1 && k >= 1 && batch >= 1 && time_s > 0);
    GemmRow r;
    memset(&r, 0, sizeof r); /* rows are compared as bytes when interned */
    r.dtype = dtype, r.ta = trans_a != FALSE, r.tb = trans_b != FALSE;
    r.m = m, r.n = n, r.k = k, r.batch = batch, r.time_s = time_s;
    r.lm = log2(m), r.ln = log2(n), r.lk = log2(k), r.lb = log2(batch);
    g_array_append_val(t->rows, r);
    t->id = gemm_table_next_id();
}

static GPtrArray *gemm_tables; /* every interned table; never freed */
G_LOCK_DEFINE_STATIC(gemm_tables);

const SimparGemmTable *
simpar_gemm_table_intern(SimparGemmTable *t)
{
    g_return_val_if_fail(t != NULL, NULL);
    const SimparGemmTable *found = NULL;
    G_LOCK(gemm_tables);
    if (gemm_tables == NULL)
        gemm_tables = g_ptr_array_new();
    for (guint i = 0; i < gemm_tables->len && found == NULL; i++) {
        const SimparGemmTable *o = g_ptr_array_index(gemm_tables, i);
        if (o->rows->len == t->rows->len &&
            memcmp(o->rows->data, t->rows->data, t->rows->len * sizeof(GemmRow)) == 0)
            found = o;
    }
    if (found == NULL)
        g_ptr_array_add(gemm_tables, t), found = t;
    G_UNLOCK(gemm_tables);
    if (found != t)
        simpar_gemm_table_free(t);
    return found; /* (transfer none) */
}

/* Squared distance in log2 units, and whether the row is within a factor 2 in every size. */
static double
gemm_row_distance(const GemmRow *r, const double q[4], gboolean ta, gboolean tb, gboolean *near)
{
    double d[4] = {r->lm - q[0], r->ln - q[1], r->lk - q[2], r->lb - q[3]};
    *near = fabs(d[0]) <= 1 && fabs(d[1]) <= 1 && fabs(d[2]) <= 1 && fabs(d[3]) <= 1;
    return d[0] * d[0] + d[1] * d[1] + d[2] * d[2] + d[3] * d[3] +
           0.25 * ((r->ta != 0) != (ta != FALSE)) + 0.25 * ((r->tb != 0) != (tb != FALSE));
}

/* The rows' log ratios, log(max(measured, floor) / curve), of one table under one curve (`key`),
 * for the last GEMM_RATIOS_KEPT curves asked: a step prices every GEMM of a layer many times
 * under one GPU's figures, and the rows' ratios (a curve and a logarithm each) took most of it. */
#define GEMM_RATIOS_KEPT 4

typedef struct {
    gsize table; /* SimparGemmTable.id */
    GBytes *key;
    double *lr; /* per row */
} GemmRatios;

G_LOCK_DEFINE_STATIC(gemm_ratios);
static GemmRatios gemm_ratios[GEMM_RATIOS_KEPT];
static guint gemm_ratios_next;

/* Fills lr (t->rows->len) with the rows' log ratios under `curve`, kept or worked out. */
static void
gemm_row_ratios(const SimparGemmTable *t, GemmCurve curve, const void *ctx, const void *key,
                gsize key_len, double *lr)
{
    g_autoptr(GBytes) k = g_bytes_new(key, key_len);
    gsize bytes = t->rows->len * sizeof(double);
    G_LOCK(gemm_ratios);
    for (guint i = 0; i < GEMM_RATIOS_KEPT; i++)
        if (gemm_ratios[i].table == t->id && g_bytes_equal(gemm_ratios[i].key, k)) {
            memcpy(lr, gemm_ratios[i].lr, bytes);
            G_UNLOCK(gemm_ratios);
            return;
        }
    G_UNLOCK(gemm_ratios);
    for (guint i = 0; i < t->rows->len; i++) {
        const GemmRow *r = &g_array_index(t->rows, GemmRow, i);
        double floor, at = curve(ctx, r->m, r->n, r->k, r->batch, &floor);
        lr[i] = log(MAX(r->time_s, floor) / at);
    }
    G_LOCK(gemm_ratios);
    GemmRatios *slot = &gemm_ratios[gemm_ratios_next++ % GEMM_RATIOS_KEPT];
    g_clear_pointer(&slot->key, g_bytes_unref);
    g_free(slot->lr);
    *slot = (GemmRatios){t->id, g_bytes_ref(k), g_memdup2(lr, bytes)};
    G_UNLOCK(gemm_ratios);
}

gboolean
gemm_table_ratio(const SimparGemmTable *t, const GemmQuery *q, GemmCurve curve, const void *ctx,
                 const void *key, gsize key_len, double *ratio)
{
    if (t == NULL)
        return FALSE;
    double lq[4] = {log2(q->m), log2(q->n), log2(q->k), log2(q->batch)};
    double sw = 0, swr = 0;
    g_autofree double *lrs = g_new(double, t->rows->len + 1);
    gemm_row_ratios(t, curve, ctx, key, key_len, lrs);
    for (guint i = 0; i < t->rows->len; i++) {
        const GemmRow *r = &g_array_index(t->rows, GemmRow, i);
        if (r->dtype != (gint64) q->dtype)
            continue;
        gboolean near;
        double d2 = gemm_row_distance(r, lq, q->ta, q->tb, &near);
        double lr = lrs[i];
        if (d2 < 1e-12) { /* a measured shape: its measurement */
            *ratio = exp(lr);
            return TRUE;
        }
        double w = 1 / (d2 * d2);
        sw += w, swr += w * lr;
    }
    if (!(sw > 0))
        return FALSE;
    *ratio = exp(swr / sw);
    return TRUE;
}

gboolean
simpar_compute_gemm_extrapolated(const SimparGpu *gpu, SimparDtype dtype, double m, double n,
                                 double k, double batch)
{
    g_return_val_if_fail(gpu != NULL, TRUE);
    double lq[4] = {log2(m), log2(n), log2(k), log2(MAX(batch, 1))};
    const SimparGemmTable *t = gpu->gemm_table;
    for (guint i = 0; t != NULL && i < t->rows->len; i++) {
        const GemmRow *r = &g_array_index(t->rows, GemmRow, i);
        gboolean near = FALSE;
        if (r->dtype == (gint64) dtype)
            gemm_row_distance(r, lq, FALSE, FALSE, &near);
        if (near)
            return FALSE;
    }
    return TRUE;
}

guint
gemm_table_count(const SimparGemmTable *t, SimparDtype dtype)
{
    guint rows = 0;
    for (guint i = 0; t != NULL && i < t->rows->len; i++)
        rows += g_array_index(t->rows, GemmRow, i).dtype == (gint64) dtype;
    return rows;
}

/* ----- the compiled-in data of a GPU model ----- */

/* One row "m n k batch op(a)op(b) time_s", e.g. "4096 8192 8192 1 NT 6.39e-4". */
static gboolean
data_gemm_row(SimparGemmTable *t, SimparDtype dt, const char *row, GError **error)
{
    double m, n, k, b, s;
    char ops[3];
    if (sscanf(row, "%lf %lf %lf %lf %2[NT] %lf", &m, &n, &k, &b, ops, &s) != 6 || !(m >= 1) ||
        !(n >= 1) || !(k >= 1) || !(b >= 1) || !(s > 0) || !(s < 1e3) || strlen(ops) != 2) {
        g_set_error(error, SIMPAR_COMPUTE_ERROR, SIMPAR_COMPUTE_ERROR_PARSE,
                    "compute data: bad GEMM row \"%s\" (want \"m n k batch NN|NT|TN|TT time_s\")",
                    row);
        return FALSE;
    }
    simpar_gemm_table_add(t, dt, m, n, k, b, ops[0] == 'T', ops[1] == 'T', s);
    return TRUE;
}

static gboolean
data_gemm_rows(GKeyFile *data, const char *group, SimparGemmTable *t, GError **error)
{
    for (SimparDtype dt = 0; dt <= SIMPAR_DTYPE_FP8; dt++) {
        g_autofree char *key = g_strdup_printf("gemm_%s", simpar_dtype_name(dt));
        g_auto(GStrv) rows = g_key_file_get_string_list(data, group, key, NULL, NULL);
        for (guint i = 0; rows != NULL && rows[i] != NULL; i++) {
            g_strstrip(rows[i]);
            if (rows[i][0] != '\0' && !data_gemm_row(t, dt, rows[i], error))
                return FALSE;
        }
    }
    return TRUE;
}

/* The figures of one group of the data, read once (a platform asks for every GPU's). */
typedef struct {
    double kernel_eff[SIMPAR_KCLASS_N];
    const SimparGemmTable *gemm_table;
    const char *source;  /* interned */
    gboolean mxfp8;      /* block-scaled FP8 tensor cores */
    double fp8_max;      /* gemm_fp8_max_flops, 0: none */
    gint64 sms;          /* streaming multiprocessors, 0: not given */
    gboolean any_layout; /* FP8 GEMMs of every layout */
} GpuData;

static gboolean
data_read(GKeyFile *data, const char *group, GpuData *out, GError **error)
{
    for (guint c = 0; c < SIMPAR_KCLASS_N; c++) {
        g_autofree char *key = g_strdup_printf("kernel_eff_%s", kclass_names[c]);
        if (!g_key_file_has_key(data, group, key, NULL))
            continue;
        double v = g_key_file_get_double(data, group, key, NULL);
        if (!(v >= 1e-3 && v <= 1)) {
            g_set_error(error, SIMPAR_COMPUTE_ERROR, SIMPAR_COMPUTE_ERROR_INVALID,
                        "compute data [%s]: %s = %g is not a fraction from 0.001 to 1", group, key,
                        v);
            return FALSE;
        }
        out->kernel_eff[c] = v;
    }
    SimparGemmTable *t = simpar_gemm_table_new();
    if (!data_gemm_rows(data, group, t, error)) {
        simpar_gemm_table_free(t);
        return FALSE;
    }
    if (t->rows->len > 0)
        out->gemm_table = simpar_gemm_table_intern(t);
    else
        simpar_gemm_table_free(t);
    g_autofree char *source = g_key_file_get_string(data, group, "summary", NULL);
    out->source = source != NULL ? g_intern_string(source) : NULL;
    out->mxfp8 = g_key_file_get_boolean(data, group, "mxfp8", NULL);
    out->any_layout = g_key_file_get_boolean(data, group, "fp8_any_layout", NULL);
    if (g_key_file_has_key(data, group, "gemm_fp8_max_flops", NULL)) {
        out->fp8_max = g_key_file_get_double(data, group, "gemm_fp8_max_flops", NULL);
        if (!(out->fp8_max >= 1e6 && out->fp8_max <= 1e17)) {
            g_set_error(error, SIMPAR_COMPUTE_ERROR, SIMPAR_COMPUTE_ERROR_INVALID,
                        "compute data [%s]: gemm_fp8_max_flops = %g is not a throughput from "
                        "1e6 to 1e17 flop/s",
                        group, out->fp8_max);
            return FALSE;
        }
    }
    if (g_key_file_has_key(data, group, "sms", NULL)) {
        out->sms = g_key_file_get_int64(data, group, "sms", NULL);
        if (out->sms < 1 || out->sms > 4096) {
            g_set_error(error, SIMPAR_COMPUTE_ERROR, SIMPAR_COMPUTE_ERROR_INVALID,
                        "compute data [%s]: sms = %" G_GINT64_FORMAT
                        " is not a count of streaming multiprocessors from 1 to 4096",
                        group, out->sms);
            return FALSE;
        }
    }
    return TRUE;
}

static GHashTable *data_read_once; /* "<data pointer>/<group>" -> GpuData; never freed */
G_LOCK_DEFINE_STATIC(data_read_once);

gboolean
simpar_gpu_load_data(SimparGpu *gpu, GKeyFile *data, GError **error)
{
    g_return_val_if_fail(gpu != NULL && data != NULL, FALSE);
    const char *group = gpu->model;
    if (group == NULL || !g_key_file_has_group(data, group))
        return TRUE;
    g_autofree char *key = g_strdup_printf("%p/%s", (void *) data, group);
    G_LOCK(data_read_once);
    if (data_read_once == NULL)
        data_read_once = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    GpuData *d = g_hash_table_lookup(data_read_once, key);
    if (d == NULL) {
        d = g_new0(GpuData, 1);
        if (data_read(data, group, d, error))
            g_hash_table_insert(data_read_once, g_steal_pointer(&key), d);
        else
            g_clear_pointer(&d, g_free);
    }
    G_UNLOCK(data_read_once);
    if (d == NULL)
        return FALSE;
    for (guint c = 0; c < SIMPAR_KCLASS_N; c++)
        if (d->kernel_eff[c] > 0)
            gpu->kernel_eff[c] = d->kernel_eff[c];
    if (d->gemm_table != NULL)
        gpu->gemm_table = d->gemm_table;
    if (d->source != NULL)
        gpu->data_source = d->source;
    gpu->mxfp8 = d->mxfp8;
    gpu->fp8_any_layout = d->any_layout;
    gpu->gemm_fp8_max_flops = d->fp8_max;
    gpu->sms = d->sms;
    return TRUE;
}

/* ----- a calibration file's table ----- */

static gboolean
json_row_number(JsonObject *o, const char *key, double min, double *out)
{
    JsonNode *n = json_object_get_member(o, key);
    GType t = n != NULL && JSON_NODE_HOLDS_VALUE(n) ? json_node_get_value_type(n) : G_TYPE_INVALID;
    if (t != G_TYPE_INT64 && t != G_TYPE_DOUBLE)
        return FALSE;
    *out = json_node_get_double(n);
    return *out >= min && *out <= 1e9;
}

static gboolean
json_row_bool(JsonObject *o, const char *key, gboolean *out)
{
    JsonNode *n = json_object_get_member(o, key);
    if (n == NULL) {
        *out = FALSE;
        return TRUE;
    }
    if (!JSON_NODE_HOLDS_VALUE(n) || json_node_get_value_type(n) != G_TYPE_BOOLEAN)
        return FALSE;
    *out = json_node_get_boolean(n);
    return TRUE;
}

static gboolean
json_gemm_row(SimparGemmTable *t, JsonNode *node)
{
    if (!JSON_NODE_HOLDS_OBJECT(node))
        return FALSE;
    JsonObject *o = json_node_get_object(node);
    JsonNode *d = json_object_get_member(o, "dtype"); /* a string, or the row is refused */
    const char *dtype =
        d != NULL && JSON_NODE_HOLDS_VALUE(d) && json_node_get_value_type(d) == G_TYPE_STRING
            ? json_node_get_string(d)
            : "";
    SimparDtype dt;
    double m, n, k, b, s;
    gboolean ta, tb;
    if (!simpar_dtype_parse(dtype, &dt, NULL) || !json_row_number(o, "m", 1, &m) ||
        !json_row_number(o, "n", 1, &n) || !json_row_number(o, "k", 1, &k) ||
        !json_row_number(o, "batch", 1, &b) || !json_row_number(o, "time_s", 1e-9, &s) || s > 1e3 ||
        !json_row_bool(o, "trans_a", &ta) || !json_row_bool(o, "trans_b", &tb))
        return FALSE;
    simpar_gemm_table_add(t, dt, m, n, k, b, ta, tb, s);
    return TRUE;
}

gboolean
gemm_table_from_json(JsonNode *node, const char *path, const SimparGemmTable **out, GError **error)
{
    JsonArray *a = JSON_NODE_HOLDS_ARRAY(node) ? json_node_get_array(node) : NULL;
    if (a == NULL || json_array_get_length(a) == 0) {
        g_set_error(error, SIMPAR_COMPUTE_ERROR, SIMPAR_COMPUTE_ERROR_PARSE,
                    "%s: \"gemm_table\" must be a non-empty array of measured GEMMs", path);
        return FALSE;
    }
    SimparGemmTable *t = simpar_gemm_table_new();
    for (guint i = 0; i < json_array_get_length(a); i++)
        if (!json_gemm_row(t, json_array_get_element(a, i))) {
            g_set_error(error, SIMPAR_COMPUTE_ERROR, SIMPAR_COMPUTE_ERROR_PARSE,
                        "%s: \"gemm_table\" row %u must be {\"dtype\": \"bf16\", \"m\", \"n\", "
                        "\"k\", \"batch\" (each from 1 to 1e9), \"trans_a\", \"trans_b\" "
                        "(booleans), \"time_s\" (from 1e-9 to 1000)}",
                        path, i);
            simpar_gemm_table_free(t);
            return FALSE;
        }
    *out = simpar_gemm_table_intern(t);
    return TRUE;
}

/* ----- a calibration file's bandwidths by op kind ----- */

static GPtrArray *kind_bws; /* every interned array of SIMPAR_N_OP_KINDS doubles; never freed */
G_LOCK_DEFINE_STATIC(kind_bws);

static const double *
kind_bw_intern(const double *bw)
{
    const double *found = NULL;
    G_LOCK(kind_bws);
    if (kind_bws == NULL)
        kind_bws = g_ptr_array_new();
    for (guint i = 0; i < kind_bws->len && found == NULL; i++)
        if (memcmp(g_ptr_array_index(kind_bws, i), bw, SIMPAR_N_OP_KINDS * sizeof(double)) == 0)
            found = g_ptr_array_index(kind_bws, i);
    if (found == NULL) {
        double *copy = g_memdup2(bw, SIMPAR_N_OP_KINDS * sizeof(double));
        g_ptr_array_add(kind_bws, copy);
        found = copy;
    }
    G_UNLOCK(kind_bws);
    return found; /* (transfer none) */
}

static int
kind_by_name(const char *name)
{
    for (guint k = 0; k < SIMPAR_N_OP_KINDS; k++)
        if (g_str_equal(name, simpar_op_kind_name((SimparOpKind) k)) &&
            (simpar_kernel_class_of((SimparOpKind) k) < SIMPAR_KCLASS_N ||
             k == SIMPAR_OP_ATTENTION || k == SIMPAR_OP_ATTENTION_BWD))
            return (int) k;
    return -1;
}

/* "kernel_bw_Bps" (bandwidths, B/s) or "kernel_floor_s" (a kind's fixed time beyond launch_s):
 * an object of op kinds and values in [min, max]. */
gboolean
kind_values_from_json(JsonNode *node, const char *path, const char *key, double min, double max,
                      const double **out, GError **error)
{
    double v[SIMPAR_N_OP_KINDS] = {0};
    JsonObject *o = JSON_NODE_HOLDS_OBJECT(node) ? json_node_get_object(node) : NULL;
    g_autoptr(GList) members = o != NULL ? json_object_get_members(o) : NULL;
    for (GList *l = members; l != NULL; l = l->next) {
        JsonNode *n = json_object_get_member(o, l->data);
        GType t = JSON_NODE_HOLDS_VALUE(n) ? json_node_get_value_type(n) : G_TYPE_INVALID;
        double x = t == G_TYPE_INT64 || t == G_TYPE_DOUBLE ? json_node_get_double(n) : NAN;
        int k = kind_by_name(l->data);
        if (k < 0 || !(x >= min && x <= max)) {
            g_set_error(error, SIMPAR_COMPUTE_ERROR, SIMPAR_COMPUTE_ERROR_INVALID,
                        "%s: \"%s\" member \"%s\" must be a streaming kernel's op kind (ln-stats, "
                        "bias-add, gelu, dropout, add, adam, ...; attention and attention-bwd: the "
                        "unfused attention's passes over its scores) with a value from %g to %g",
                        path, key, (const char *) l->data, min, max);
            return FALSE;
        }
        v[k] = x;
    }
    if (o == NULL) {
        g_set_error(error, SIMPAR_COMPUTE_ERROR, SIMPAR_COMPUTE_ERROR_PARSE,
                    "%s: \"%s\" must be an object of op kinds and values", path, key);
        return FALSE;
    }
    *out = kind_bw_intern(v);
    return TRUE;
}
