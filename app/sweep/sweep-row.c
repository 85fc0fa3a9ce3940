/* sweep-row.c - one configuration of a sweep: its job options, its prediction (in a worker,
 * through predict-config.c, as `simpar predict` computes it) and its CSV line. */
#include "generators.h"
#include "predict-config.h"
#include "sweep.h"
#include <math.h>
#include <stdio.h>
#include <string.h>

#define GIB (1024.0 * 1024.0 * 1024.0)

const char *const simpar_sweep_columns[SIMPAR_SWEEP_N_COLUMNS] = {
#define SWEEP_COLUMN_NAME(id, name) name,
    SIMPAR_SWEEP_COLUMNS(SWEEP_COLUMN_NAME)
#undef SWEEP_COLUMN_NAME
};

/* The fields of one row: each in `text` (NUL-terminated) at its offset, -1 for an empty field.
 * One buffer a row (a field set again is written anew), not an allocation a field. */
typedef struct {
    GString *text;
    gssize at[SIMPAR_SWEEP_N_COLUMNS];
} SweepRow;

static void
row_init(SweepRow *r)
{
    r->text = g_string_sized_new(1024);
    for (guint i = 0; i < SIMPAR_SWEEP_N_COLUMNS; i++)
        r->at[i] = -1;
}

/* Field `col` is `len` bytes at `v` (NULL: empty). */
static void
row_set_len(SweepRow *r, SimparSweepColumn col, const char *v, gsize len)
{
    if (v == NULL) {
        r->at[col] = -1;
        return;
    }
    r->at[col] = (gssize) r->text->len;
    g_string_append_len(r->text, v, (gssize) len);
    g_string_append_c(r->text, '\0');
}

static void
row_set_text(SweepRow *r, SimparSweepColumn col, const char *v)
{
    row_set_len(r, col, v, v != NULL ? strlen(v) : 0);
}

/* Field `col` is `owned`, which is freed. */
static void
row_set(SweepRow *r, SimparSweepColumn col, char *owned)
{
    row_set_text(r, col, owned);
    g_free(owned);
}

/* ----- numbers: printf's "%.9g" and "%d" without printf ----- */

/* A row prints some thirty numbers, and in simpar every printf takes glibc's slow positional
 * path (libquadmath, which SimGrid's libraries pull in, registers printf extensions when it
 * loads): a third of a formula row's time went there. */

static const long double row_pow10[] = {1e0L,  1e1L,  1e2L,  1e3L,  1e4L,  1e5L,  1e6L,
                                        1e7L,  1e8L,  1e9L,  1e10L, 1e11L, 1e12L, 1e13L,
                                        1e14L, 1e15L, 1e16L, 1e17L, 1e18L, 1e19L, 1e20L,
                                        1e21L, 1e22L, 1e23L, 1e24L, 1e25L, 1e26L, 1e27L};

/* v's decimal digits at p (v < 10^19); the end. */
static char *
row_digits(char *p, guint64 v)
{
    char tmp[20];
    guint n = 0;
    do
        tmp[n++] = (char) ('0' + v % 10);
    while ((v /= 10) > 0);
    while (n > 0)
        *p++ = tmp[--n];
    return p;
}

/* a (> 0) rounded to 9 significant digits, q in [10^8, 10^9), a ~ q 10^(e - 8): FALSE when the
 * rounding is too close to call in long double (|error| < 1e-9 of a unit; exact ties included)
 * or 10^(8 - e) is not exact (|8 - e| > 27: 5^27 < 2^64). */
static gboolean
row_round9(double a, int *e, guint64 *q)
{
    for (guint tries = 0; tries < 3; tries++) {
        int k = 8 - *e;
        if (k > 27 || k < -27)
            return FALSE;
        long double s = k >= 0 ? (long double) a * row_pow10[k] : (long double) a / row_pow10[-k];
        long double whole = floorl(s), frac = s - whole;
        if (fabsl(frac - 0.5L) < 1e-8L)
            return FALSE;
        *q = (guint64) whole + (frac > 0.5L);
        if (*q >= 1000000000u)
            ++*e;
        else if (*q < 100000000u)
            --*e;
        else
            return TRUE;
    }
    return FALSE;
}

void
simpar_sweep_format_number(double v, char *out)
{
    int e = v != 0 && isfinite(v) ? (int) floor(log10(fabs(v))) : 0;
    guint64 q;
    if (v == 0 || !isfinite(v) || !row_round9(fabs(v), &e, &q)) {
        snprintf(out, SIMPAR_SWEEP_NUMBER_LEN, "%.9g", v);
        return;
    }
    char digits[9], *p = out;
    row_digits(digits, q);
    guint n = 9; /* significant digits left once trailing zeros go */
    while (n > 1 && digits[n - 1] == '0')
        n--;
    if (v < 0)
        *p++ = '-';
    if (e < -4 || e >= 9) { /* d.ddd e+XX */
        *p++ = digits[0];
        if (n > 1)
            *p++ = '.', memcpy(p, digits + 1, n - 1), p += n - 1;
        *p++ = 'e', *p++ = e < 0 ? '-' : '+';
        if (ABS(e) < 10)
            *p++ = '0';
        p = row_digits(p, (guint64) ABS(e));
    } else if (e >= 0) { /* ddd.ddd */
        memcpy(p, digits, (gsize) e + 1), p += e + 1;
        if (n > (guint) e + 1)
            *p++ = '.', memcpy(p, digits + e + 1, n - e - 1), p += n - e - 1;
    } else { /* 0.000ddd */
        *p++ = '0', *p++ = '.';
        for (int z = -1; z > e; z--)
            *p++ = '0';
        memcpy(p, digits, n), p += n;
    }
    *p = '\0';
}

/* v as printf's "%" G_GINT64_FORMAT writes it, at p; the end. */
static char *
row_signed(char *p, gint64 v)
{
    if (v < 0)
        *p++ = '-';
    return row_digits(p, v < 0 ? -(guint64) v : (guint64) v);
}

static void
row_int(SweepRow *r, SimparSweepColumn col, gint64 v)
{
    char text[24];
    if (v <= 0) {
        row_set_text(r, col, NULL);
        return;
    }
    row_set_len(r, col, text, (gsize) (row_digits(text, (guint64) v) - text));
}

static void
row_signed_int(SweepRow *r, SimparSweepColumn col, gint64 v)
{
    char text[24];
    row_set_len(r, col, text, (gsize) (row_signed(text, v) - text));
}

static void
row_num(SweepRow *r, SimparSweepColumn col, double v)
{
    char text[SIMPAR_SWEEP_NUMBER_LEN];
    simpar_sweep_format_number(v, text);
    row_set_text(r, col, text);
}

static void
row_finish(SweepRow *r, GString *line)
{
    const char *f[SIMPAR_SWEEP_N_COLUMNS];
    for (guint i = 0; i < SIMPAR_SWEEP_N_COLUMNS; i++)
        f[i] = r->at[i] >= 0 ? r->text->str + r->at[i] : NULL;
    simpar_csv_append_row(line, f, SIMPAR_SWEEP_N_COLUMNS);
    g_string_free(r->text, TRUE);
}

/* A reason on one line (the journal is read back line by line). */
static void
row_status(SweepRow *r, const char *status, const char *reason)
{
    row_set_text(r, SIMPAR_SWEEP_COL_STATUS, status);
    row_set_text(r, SIMPAR_SWEEP_COL_REASON, reason);
    for (char *p = reason != NULL ? r->text->str + r->at[SIMPAR_SWEEP_COL_REASON] : NULL;
         p != NULL && *p != '\0'; p++)
        if (*p == '\n' || *p == '\r')
            *p = ' ';
}

static guint
row_nodes(const SimparSweep *sw, guint gpus)
{
    if (sw->preset != NULL)
        return (gpus + simpar_sweep_node_gpus(sw) - 1) / simpar_sweep_node_gpus(sw);
    return gpus <= sw->platform_nodes->len ? g_array_index(sw->platform_nodes, guint, gpus - 1) + 1
                                           : 0;
}

/* "T=4+SP", "q=2 d=2" or "q=2" (printf's, without printf). */
static void
row_grid(SweepRow *r, const SimparSweepConfig *c, gboolean sp)
{
    char text[64], *p = text;
    gboolean line = c->gen->grid == SIMPAR_GRID_LINE;
    *p++ = line ? 'T' : 'q', *p++ = '=';
    p = row_signed(p, line ? c->tp : c->q);
    if (line && sp)
        memcpy(p, "+SP", 3), p += 3;
    if (!line && c->depth > 0)
        *p++ = ' ', *p++ = 'd', *p++ = '=', p = row_signed(p, c->depth);
    row_set_len(r, SIMPAR_SWEEP_COL_GRID, text, (gsize) (p - text));
}

/* The dtype column: the model's precision, or the row's --precision item in its words. */
static void
row_precision(SweepRow *r, const SimparSweepConfig *c, const SimparModel *base)
{
    if (c->precision == NULL)
        row_set_text(r, SIMPAR_SWEEP_COL_DTYPE, simpar_model_precision(base));
    else if (!g_str_has_prefix(c->precision, "fp8"))
        row_set_text(r, SIMPAR_SWEEP_COL_DTYPE, c->precision);
    else
        row_set(
            r, SIMPAR_SWEEP_COL_DTYPE,
            g_strconcat("fp8 (", c->precision[3] == '-' ? c->precision + 4 : "delayed", ")", NULL));
}

/* What the configuration itself says, before any prediction. */
static void
row_config(const SimparSweep *sw, const SimparSweepConfig *c, const SimparBackend *backend,
           SweepRow *r)
{
    const SimparModel *base = &g_array_index(sw->models, SimparModel, c->model);
    const SimparJobArgs *j = &sw->args.job;
    char index[24];
    row_set_len(r, SIMPAR_SWEEP_COL_INDEX, index, (gsize) (row_digits(index, c->index) - index));
    row_set_text(r, SIMPAR_SWEEP_COL_MODEL, base->name);
    row_int(r, SIMPAR_SWEEP_COL_HIDDEN, c->hidden);
    row_int(r, SIMPAR_SWEEP_COL_HEADS, c->heads);
    row_int(r, SIMPAR_SWEEP_COL_KV_HEADS, c->kv_heads != SIMPAR_JOB_UNSET ? c->kv_heads : c->heads);
    row_int(r, SIMPAR_SWEEP_COL_LAYERS, c->layers);
    row_int(r, SIMPAR_SWEEP_COL_SEQ, c->seq);
    row_precision(r, c, base);
    if (sw->preset != NULL)
        row_set_text(r, SIMPAR_SWEEP_COL_PRESET, sw->preset->name);
    else
        row_set(r, SIMPAR_SWEEP_COL_PRESET, g_path_get_basename(sw->args.topology));
    row_int(r, SIMPAR_SWEEP_COL_NODES, row_nodes(sw, c->gpus));
    row_int(r, SIMPAR_SWEEP_COL_GPUS, c->gpus);
    row_set_text(r, SIMPAR_SWEEP_COL_MODE, c->gen->name);
    row_grid(r, c, j->sp);
    row_int(r, SIMPAR_SWEEP_COL_TP, c->tp);
    row_int(r, SIMPAR_SWEEP_COL_CP, c->cp);
    row_set_text(r, SIMPAR_SWEEP_COL_CP_MODE, c->cp_mode != NULL ? c->cp_mode : "allgather");
    row_int(r, SIMPAR_SWEEP_COL_EP, c->ep != SIMPAR_JOB_UNSET ? c->ep : 1);
    row_int(r, SIMPAR_SWEEP_COL_Q, c->q);
    row_int(r, SIMPAR_SWEEP_COL_DEPTH, c->depth);
    row_int(r, SIMPAR_SWEEP_COL_PP, c->pp);
    row_int(r, SIMPAR_SWEEP_COL_DP, c->dp);
    row_set_text(r, SIMPAR_SWEEP_COL_SCHEDULE, c->schedule != NULL ? c->schedule : "1f1b");
    row_int(r, SIMPAR_SWEEP_COL_MICRO_BATCH, c->micro_batch);
    row_int(r, SIMPAR_SWEEP_COL_GLOBAL_BATCH,
            c->global_batch != SIMPAR_JOB_UNSET ? c->global_batch : c->micro_batch * c->dp);
    row_set_text(r, SIMPAR_SWEEP_COL_RECOMPUTE, c->recompute != NULL ? c->recompute : "none");
    row_signed_int(r, SIMPAR_SWEEP_COL_ZERO, j->zero != SIMPAR_JOB_UNSET ? j->zero : 0);
    row_int(r, SIMPAR_SWEEP_COL_SHARD_GROUP,
            c->shard_group != SIMPAR_JOB_UNSET ? c->shard_group : c->dp);
    row_set_text(r, SIMPAR_SWEEP_COL_BACKEND, backend->name);
}

/* The job options of the configuration: `simpar predict` given these (and --gpus, --topology
 * and the predict options) computes the same row. Strings borrowed. */
static void
row_job_args(const SimparSweep *sw, const SimparSweepConfig *c, SimparJobArgs *a)
{
    *a = sw->args.job;
    a->model = sw->names[SIMPAR_SWEEP_MODELS]->pdata[c->model];
    a->hidden = c->hidden, a->heads = c->heads, a->ffn = c->ffn, a->layers = c->layers;
    a->kv_heads = c->kv_heads, a->shard_group = c->shard_group, a->cp = c->cp;
    if (c->ep != SIMPAR_JOB_UNSET)
        a->ep = c->ep;
    if (c->cp_mode != NULL)
        a->cp_mode = (char *) c->cp_mode;
    a->seq = c->seq, a->micro_batch = c->micro_batch, a->global_batch = c->global_batch;
    a->tp_mode = (char *) c->gen->name, a->tp = c->tp;
    a->depth = c->depth > 0 ? c->depth : SIMPAR_JOB_UNSET;
    a->pp = c->pp, a->dp = c->dp;
    a->schedule = (char *) c->schedule, a->recompute = (char *) c->recompute;
    /* the accounted split (--account-for-*-in-pipeline-split): the rows of a pipeline */
    gboolean piped = c->pp >= 2;
    a->account_embedding = piped && a->account_embedding;
    a->account_loss = piped && a->account_loss;
    if (g_strcmp0(a->recompute, "selective") != 0) /* --recompute-modules: selective's rows */
        a->recompute_modules = NULL;
    if (c->precision != NULL) { /* "fp8-current": --dtype fp8 --fp8-recipe current */
        gboolean fp8 = g_str_has_prefix(c->precision, "fp8");
        a->dtype = fp8 ? (char *) "fp8" : (char *) c->precision;
        a->fp8_recipe = fp8 && c->precision[3] == '-' ? (char *) c->precision + 4 : NULL;
        a->fp8_attention = fp8 && a->fp8_attention; /* the FP8 rows' attention */
        /* the MXFP8 rows' output layer */
        a->fp8_output_proj =
            a->fp8_recipe != NULL && g_str_equal(a->fp8_recipe, "mxfp8") && a->fp8_output_proj;
    }
}

/* The sweep's own refusals: a 2.5-D grid without a depth, T x P x D that cannot be G. */
static gboolean
row_check_split(const SimparSweepConfig *c, GError **why)
{
    if (c->gen->grid == SIMPAR_GRID_LAYERS && c->depth == 0) {
        g_set_error(why, SIMPAR_SWEEP_ERROR, SIMPAR_SWEEP_ERROR_SPLIT,
                    "%s q=%" G_GINT64_FORMAT ": no depth d >= 2 makes q*q*d divide the %u GPUs "
                    "(give --depth)",
                    c->gen->name, c->q, c->gpus);
        return FALSE;
    }
    if (c->pp > 0 && c->dp > 0)
        return TRUE;
    g_autofree char *p =
        c->pp > 0 ? g_strdup_printf(" x P=%" G_GINT64_FORMAT, c->pp) : g_strdup("");
    g_autofree char *d =
        c->dp > 0 ? g_strdup_printf(" x D=%" G_GINT64_FORMAT, c->dp) : g_strdup("");
    g_autofree char *cp =
        c->cp > 1 ? g_strdup_printf(" x C=%" G_GINT64_FORMAT, c->cp) : g_strdup("");
    g_set_error(why, SIMPAR_SWEEP_ERROR, SIMPAR_SWEEP_ERROR_SPLIT,
                "%s T=%" G_GINT64_FORMAT "%s%s%s does not divide the %u GPUs: T x%s P x D must "
                "equal them",
                c->gen->name, c->tp, cp, p, d, c->gpus, c->cp > 1 ? " C x" : "");
    return FALSE;
}

/* Tensor-parallel exposure inside and across nodes: the axes other than pp and dp. */
static void
row_tp_scopes(const SimparReportRow *row, double *intra, double *inter)
{
    *intra = *inter = 0;
    for (guint i = 0; row->axes != NULL && i < row->axes->len; i++) {
        const SimparAxisTime *a = &g_array_index(row->axes, SimparAxisTime, i);
        if (!g_str_equal(a->axis, "pp") && !g_str_equal(a->axis, "dp"))
            *(a->inter ? inter : intra) += a->exposed_s;
    }
}

static void
row_memory(SweepRow *r, const SimparReportRow *row)
{
    if (row->memory.total_B <= 0)
        return;
    row_num(r, SIMPAR_SWEEP_COL_MEM, row->memory.total_B / GIB);
    row_num(r, SIMPAR_SWEEP_COL_MEM_CAPACITY, row->mem_capacity_B / GIB);
    row_num(r, SIMPAR_SWEEP_COL_STATES, row->memory.states_B / GIB);
    row_num(r, SIMPAR_SWEEP_COL_ACTIVATIONS, row->memory.activations_B / GIB);
    row_num(r, SIMPAR_SWEEP_COL_TRANSIENT, row->memory.transient_B / GIB);
}

/* The figures of a simulated row. */
static void
row_figures(SweepRow *r, const SimparReportRow *row, const SimparTrain *t, gint64 seq,
            const SimparBackend *backend)
{
    double tokens = (double) t->global_batch * (double) seq, intra, inter;
    row_num(r, SIMPAR_SWEEP_COL_STEP, row->step_s);
    row_num(r, SIMPAR_SWEEP_COL_TOKENS, tokens / row->step_s);
    row_num(r, SIMPAR_SWEEP_COL_GPU_HOURS, row->gpus * row->step_s / 3600 / (tokens / 1e9));
    row_num(r, SIMPAR_SWEEP_COL_TFLOPS, row->tflops_per_gpu);
    row_num(r, SIMPAR_SWEEP_COL_MFU, row->step.mfu);
    row_num(r, SIMPAR_SWEEP_COL_COMPUTE, row->compute_s);
    row_num(r, SIMPAR_SWEEP_COL_TP_EXPOSED, row->step.tp_exposed_s);
    row_tp_scopes(row, &intra, &inter);
    row_num(r, SIMPAR_SWEEP_COL_TP_INTRA, intra);
    row_num(r, SIMPAR_SWEEP_COL_TP_INTER, inter);
    row_num(r, SIMPAR_SWEEP_COL_BUBBLE, row->step.bubble_s);
    row_num(r, SIMPAR_SWEEP_COL_PP_P2P, row->step.pp_p2p_s);
    row_num(r, SIMPAR_SWEEP_COL_DP_EXPOSED, row->step.dp_exposed_s);
    row_num(r, SIMPAR_SWEEP_COL_OPTIMIZER, row->step.optimizer_s);
    if (!backend->contention) /* analytic; formula: the same figure */
        row_num(r, SIMPAR_SWEEP_COL_ANALYTIC_STEP, row->step_s);
}

/* What the split became once validated (defaults filled in). */
static void
row_train(SweepRow *r, const SimparTrain *t)
{
    row_set_text(r, SIMPAR_SWEEP_COL_SCHEDULE, simpar_pipe_schedule_name(t->schedule));
    row_int(r, SIMPAR_SWEEP_COL_VIRTUAL_STAGES, t->virtual_stages);
    row_int(r, SIMPAR_SWEEP_COL_GLOBAL_BATCH, t->global_batch);
    row_set_text(r, SIMPAR_SWEEP_COL_RECOMPUTE, simpar_recompute_name(t->tp.recompute));
    row_signed_int(r, SIMPAR_SWEEP_COL_ZERO, t->zero);
}

/* The model, the GPU's dtype, the split as options: the checks before the prediction. */
static gboolean
row_prepare(const SimparSweep *sw, const SimparSweepConfig *c, const SimparGpu *gpu,
            SimparModel *model, SimparTrain *train, GError **why)
{
    SimparJobArgs a;
    row_job_args(sw, c, &a);
    if (!simpar_job_model(&a, SIMPAR_PREDICT_DEFAULT_MODEL, model, why))
        return FALSE;
    if (!simpar_gpu_check_fp8(gpu, (SimparFp8Recipe) model->fp8, a.fp8_attention, why) ||
        !simpar_gpu_validate(gpu, model->dtype, why)) {
        g_prefix_error(why, "%s: ", sw->preset != NULL ? sw->preset->name : sw->args.topology);
        return FALSE;
    }
    return row_check_split(c, why) && simpar_job_train(&a, train, why) &&
           simpar_job_plan(&a, model, c->gen, &train->tp, why);
}

void
simpar_sweep_row_predict(const SimparSweep *sw, const SimparSweepConfig *c,
                         const SimparPlatform *platform, const SimparGpu *gpu,
                         const SimparBackend *backend, SimparPredictCache *cache, GString *line)
{
    SweepRow r;
    row_init(&r);
    row_config(sw, c, backend, &r);
    g_autoptr(GError) why = NULL, failure = NULL;
    SimparModel model;
    SimparTrain train;
    if (!row_prepare(sw, c, gpu, &model, &train, &why)) {
        row_status(&r, "skipped", why->message);
        row_finish(&r, line);
        return;
    }
    SimparPredictContext ctx = {.backend = backend,
                                .run = sw->run,
                                .attention = sw->attention,
                                .platform = platform,
                                .gpu = gpu,
                                .gpus = c->gpus,
                                .steps_to_target = G_MININT64,
                                .all_slices = sw->all_slices,
                                .budget_s = sw->budget_s,
                                .block_backend = sw->block_backend,
                                .trace_index = (guint) c->index,
                                .cache = cache};
    SimparReportRow row;
    if (!simpar_predict_config(&ctx, &model, &train, &row, &why, &failure)) {
        row_status(&r, "failed", failure->message);
        row_finish(&r, line);
        return;
    }
    if (!g_str_equal(row.grid, "-"))
        row_set_text(&r, SIMPAR_SWEEP_COL_GRID, row.grid);
    if (why == NULL || row.memory.total_B > 0)
        row_train(&r, &train);
    row_memory(&r, &row);
    row_status(&r, why != NULL ? "skipped" : "ok", why != NULL ? why->message : NULL);
    if (why == NULL)
        row_figures(&r, &row, &train, model.seq, backend);
    simpar_predict_row_clear(&row);
    row_finish(&r, line);
}

void
simpar_sweep_row_failed(const SimparSweep *sw, const SimparSweepConfig *c,
                        const SimparBackend *backend, const char *reason, GString *line)
{
    SweepRow r;
    row_init(&r);
    row_config(sw, c, backend, &r);
    row_status(&r, "failed", reason);
    row_finish(&r, line);
}

/* ---------------------------------------------------------------- rows a sweep must hold */

typedef struct {
    const SimparSweep *sw;
    const SimparBackend *backend;
    GHashTable *want; /* index -> its columns' fields (the virtual stages' aside) */
} SweepExpect;

static gboolean
sweep_expect_visit(const SimparSweepConfig *c, gpointer data, GError **error)
{
    (void) error;
    SweepExpect *e = data;
    g_autoptr(GString) line = g_string_new(NULL);
    simpar_sweep_row_failed(e->sw, c, e->backend, "", line);
    /* the fields up to the backend's hold no comma (names, numbers, grid labels) */
    g_hash_table_insert(e->want, GSIZE_TO_POINTER(c->index),
                        g_strsplit(line->str, ",", SIMPAR_SWEEP_COL_BACKEND + 2));
    return TRUE;
}

GHashTable *
simpar_sweep_expected(const SimparSweep *sw, const SimparBackend *backend, GError **error)
{
    g_autoptr(GHashTable) want =
        g_hash_table_new_full(NULL, NULL, NULL, (GDestroyNotify) g_strfreev);
    SweepExpect e = {sw, backend, want};
    if (!simpar_sweep_enumerate(sw, sweep_expect_visit, &e, error))
        return NULL;
    return g_steal_pointer(&want); /* (transfer full) */
}

gboolean
simpar_sweep_row_is(const SimparCsv *csv, guint i, char **want)
{
    gboolean same = want != NULL && g_strv_length(want) > SIMPAR_SWEEP_COL_BACKEND;
    for (guint k = 0; same && k <= SIMPAR_SWEEP_COL_BACKEND; k++) /* the backend's own row */
        same = k == SIMPAR_SWEEP_COL_VIRTUAL_STAGES || k == SIMPAR_SWEEP_COL_BACKEND ||
               (k == SIMPAR_SWEEP_COL_NODES && want[k][0] == '\0') || /* no platform read */
               g_str_equal(simpar_csv_get(csv, i, (int) k), want[k]);
    return same;
}
