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

SimparKernelClass
simpar_kernel_class_of(SimparOpKind kind)
{
    switch (kind) {
    case SIMPAR_OP_ADD:
    case SIMPAR_OP_BIAS_ADD:
    case SIMPAR_OP_PACK_COLS:
    case SIMPAR_OP_UNPACK_COLS:
    case SIMPAR_OP_EMBED:
    case SIMPAR_OP_EMBED_BWD:
    case SIMPAR_OP_ATTN_MERGE:
        return SIMPAR_KCLASS_STREAM;
    case SIMPAR_OP_GELU:
    case SIMPAR_OP_GELU_BWD:
    case SIMPAR_OP_SWIGLU:
    case SIMPAR_OP_SWIGLU_BWD:
        return SIMPAR_KCLASS_ACTIVATION;
    case SIMPAR_OP_DROPOUT:
    case SIMPAR_OP_DROPOUT_BWD:
        return SIMPAR_KCLASS_DROPOUT;
    case SIMPAR_OP_LN_STATS:
    case SIMPAR_OP_LN_APPLY:
    case SIMPAR_OP_LN_BWD_STATS:
    case SIMPAR_OP_LN_BWD_APPLY:
    case SIMPAR_OP_BIAS_GRAD:
        return SIMPAR_KCLASS_NORM;
    case SIMPAR_OP_XENT_MAX:
    case SIMPAR_OP_XENT_FWD:
    case SIMPAR_OP_XENT_LOSS:
    case SIMPAR_OP_XENT_BWD:
        return SIMPAR_KCLASS_SOFTMAX;
    case SIMPAR_OP_ADAM:
        return SIMPAR_KCLASS_OPTIMIZER;
    default:
        return SIMPAR_KCLASS_N;
    }
}

static const char *const kernel_set_names[] = {"megatron", "pytorch", "unfused"};

gboolean
simpar_kernel_set_parse(const char *name, SimparKernelSet *out, GError **error)
{
    for (guint i = 0; i < G_N_ELEMENTS(kernel_set_names); i++)
        if (g_strcmp0(name, kernel_set_names[i]) == 0) {
            *out = (SimparKernelSet) i;
            return TRUE;
        }
    g_set_error(error, SIMPAR_COMPUTE_ERROR, SIMPAR_COMPUTE_ERROR_INVALID,
                "--kernels %s: unknown kernel set (valid: megatron, Megatron-Core's fused "
                "kernels; pytorch, plain PyTorch; unfused, one kernel per op as simpar-exec runs)",
                name != NULL ? name : "(null)");
    return FALSE;
}

const char *
simpar_kernel_set_name(SimparKernelSet set)
{
    g_return_val_if_fail(set < G_N_ELEMENTS(kernel_set_names), "?");
    return kernel_set_names[set];
}

/* ----- GEMM tables ----- */

typedef struct {
    gint64 dtype, ta, tb;
    double m, n, k, batch, time_s;
    double lm, ln, lk, lb; /* log2 of the shape */
} GemmRow;

struct _SimparGemmTable {
    GArray *rows; /* GemmRow, in the order added */
};

SimparGemmTable *
simpar_gemm_table_new(void)
{
    SimparGemmTable *t = g_new0(SimparGemmTable, 1);
    t->rows = g_array_new(FALSE, TRUE, sizeof(GemmRow));
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
}

guint
simpar_gemm_table_n_rows(const SimparGemmTable *t)
{
    return t != NULL ? t->rows->len : 0;
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
    if (found != t) {
        g_array_unref(t->rows);
        g_free(t);
    }
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

gboolean
gemm_table_ratio(const SimparGemmTable *t, const GemmQuery *q, GemmCurve curve, const void *ctx,
                 double *ratio, gboolean *far)
{
    double lq[4] = {log2(q->m), log2(q->n), log2(q->k), log2(q->batch)};
    double sw = 0, swr = 0;
    *far = TRUE;
    for (guint i = 0; t != NULL && i < t->rows->len; i++) {
        const GemmRow *r = &g_array_index(t->rows, GemmRow, i);
        if (r->dtype != (gint64) q->dtype)
            continue;
        gboolean near;
        double d2 = gemm_row_distance(r, lq, q->ta, q->tb, &near);
        double lr = log(r->time_s / curve(ctx, r->m, r->n, r->k, r->batch));
        *far = *far && !near;
        if (d2 < 1e-12) { /* a measured shape: its measurement */
            *ratio = exp(lr), *far = FALSE;
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
        gboolean near;
        if (r->dtype == (gint64) dtype && (gemm_row_distance(r, lq, FALSE, FALSE, &near), near))
            return FALSE;
    }
    return TRUE;
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
    for (SimparDtype dt = 0; dt <= SIMPAR_DTYPE_FP64; dt++) {
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

gboolean
simpar_gpu_load_data(SimparGpu *gpu, GKeyFile *data, GError **error)
{
    g_return_val_if_fail(gpu != NULL && data != NULL, FALSE);
    const char *group = gpu->model;
    if (group == NULL || !g_key_file_has_group(data, group))
        return TRUE;
    for (guint c = 0; c < SIMPAR_KCLASS_N; c++) {
        g_autofree char *key = g_strdup_printf("kernel_eff_%s", kclass_names[c]);
        if (g_key_file_has_key(data, group, key, NULL)) {
            double v = g_key_file_get_double(data, group, key, NULL);
            if (!(v >= 1e-3 && v <= 1)) {
                g_set_error(error, SIMPAR_COMPUTE_ERROR, SIMPAR_COMPUTE_ERROR_INVALID,
                            "compute data [%s]: %s = %g is not a fraction from 0.001 to 1", group,
                            key, v);
                return FALSE;
            }
            gpu->kernel_eff[c] = v;
        }
    }
    SimparGemmTable *t = simpar_gemm_table_new();
    if (!data_gemm_rows(data, group, t, error)) {
        g_array_unref(t->rows), g_free(t);
        return FALSE;
    }
    if (t->rows->len > 0)
        gpu->gemm_table = simpar_gemm_table_intern(t);
    else
        g_array_unref(t->rows), g_free(t);
    g_autofree char *source = g_key_file_get_string(data, group, "summary", NULL);
    if (source != NULL)
        gpu->data_source = g_intern_string(source);
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
    const char *dtype = json_object_get_string_member_with_default(o, "dtype", "");
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
    guint n = a != NULL ? json_array_get_length(a) : 0;
    SimparGemmTable *t = simpar_gemm_table_new();
    for (guint i = 0; i < n; i++)
        if (!json_gemm_row(t, json_array_get_element(a, i))) {
            g_set_error(error, SIMPAR_COMPUTE_ERROR, SIMPAR_COMPUTE_ERROR_PARSE,
                        "%s: \"gemm_table\" row %u must be {\"dtype\": \"bf16\", \"m\", \"n\", "
                        "\"k\", \"batch\" (each at least 1), \"trans_a\", \"trans_b\" (booleans), "
                        "\"time_s\" (from 1e-9 to 1000)}",
                        path, i);
            n = 0, a = NULL;
        }
    if (a == NULL || n == 0) {
        if (error != NULL && *error == NULL)
            g_set_error(error, SIMPAR_COMPUTE_ERROR, SIMPAR_COMPUTE_ERROR_PARSE,
                        "%s: \"gemm_table\" must be a non-empty array of measured GEMMs", path);
        g_array_unref(t->rows), g_free(t);
        return FALSE;
    }
    *out = simpar_gemm_table_intern(t);
    return TRUE;
}
