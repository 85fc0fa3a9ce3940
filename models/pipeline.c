/* pipeline.c - per-device forward/backward order of the four pipeline schedules.
 *
 * Every schedule is the same three-phase walk over two tables (Megatron-LM's
 * convert_schedule_table_to_order, megatron/core/pipeline_parallel/schedules.py):
 *
 *   order = fwd[0 .. w)                                    warm-up
 *         + fwd[w], bwd[0], fwd[w+1], bwd[1], ...           steady (F, B) pairs
 *         + bwd[n-w .. n)                                   cool-down,  n = m v
 *
 * and the schedules differ only in the tables and in w:
 *
 *   GPipe        fwd = bwd = 0 .. m-1                       w = m (no pairs)
 *   1F1B         fwd = bwd = 0 .. m-1                       w = min(P - i - 1, m)
 *   interleaved  fwd = Megatron's table, bwd = it with chunk v-1-c
 *                                                           w = min(m v, 2 (P-i-1) + (v-1) P)
 *   local        fwd = bwd = 0 .. m-1                       w = 0 (F0 B0 F1 B1 ...)
 */
#include "pipeline.h"

/* ---------------------------------------------------------------- validation */

static gboolean pipeline_fail(GError **error, const char *format, ...) G_GNUC_PRINTF(2, 3);

static gboolean
pipeline_fail(GError **error, const char *format, ...)
{
    va_list args;
    va_start(args, format);
    char *message = g_strdup_vprintf(format, args);
    va_end(args);
    g_set_error_literal(error, SIMPAR_PLAN_ERROR, SIMPAR_PLAN_ERROR_INVALID, message);
    g_free(message);
    return FALSE;
}

static gboolean
pipeline_validate_interleaved(guint p, guint v, guint m, guint n, GError **error)
{
    if (p < 2)
        return pipeline_fail(error,
                             "--schedule interleaved needs --pp at least 2, got %u "
                             "(use --schedule 1f1b on one stage)",
                             p);
    if (v < 2)
        return pipeline_fail(error,
                             "--schedule interleaved needs --virtual-stages at least 2, got %u "
                             "(with 1 chunk per device use --schedule 1f1b)",
                             v);
    if (n != p) { /* groups of N given */
        if (n < p || n > m)
            return pipeline_fail(error,
                                 "--vp-group %u: the micro-batches of a virtual-stage group must "
                                 "be at least --pp %u and at most the %u micro-batches per replica",
                                 n, p, m);
        if (m % n != 0 && m % n < p)
            return pipeline_fail(error,
                                 "--vp-group %u: the last group would hold %u micro-batch%s "
                                 "(%u mod %u), fewer than --pp %u; give a group size that leaves "
                                 "0 or at least %u",
                                 n, m % n, m % n == 1 ? "" : "es", m, n, p, p);
        return TRUE;
    }
    if (m % p != 0) {
        guint below = m / p * p, above = below + p;
        return pipeline_fail(error,
                             "--schedule interleaved needs the micro-batches per replica "
                             "(--global-batch / (--micro-batch x data-parallel size)) to be a "
                             "multiple of --pp %u, got %u (valid: %u or %u)",
                             p, m, below > 0 ? below : above, below > 0 ? above : 2 * p);
    }
    return TRUE;
}

gboolean
simpar_pipeline_validate(SimparPipeSchedule kind, guint p, guint v, guint m, GError **error)
{
    return simpar_pipeline_validate_grouped(kind, p, v, m, p, error);
}

gboolean
simpar_pipeline_validate_grouped(SimparPipeSchedule kind, guint p, guint v, guint m, guint n_group,
                                 GError **error)
{
    g_return_val_if_fail(kind < SIMPAR_N_PIPE_SCHEDULES, FALSE);
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);

    if (p < 1)
        return pipeline_fail(error, "--pp must be at least 1, got %u", p);
    if (m < 1)
        return pipeline_fail(error, "--global-batch must be at least --micro-batch x data-parallel "
                                    "size: got 0 micro-batches per replica");
    if (v < 1)
        return pipeline_fail(error, "--virtual-stages must be at least 1, got %u", v);
    if ((guint64) m * v > G_MAXUINT / 2)
        return pipeline_fail(
            error, "%u micro-batches x %u --virtual-stages is too many pipeline items", m, v);
    if (kind == SIMPAR_PIPE_INTERLEAVED)
        return pipeline_validate_interleaved(p, v, m, n_group, error);
    if (v != 1)
        return pipeline_fail(error,
                             "--virtual-stages applies to --schedule interleaved only, got %u "
                             "(valid: 1, or --schedule interleaved)",
                             v);
    return TRUE;
}

/* ---------------------------------------------------------------- warm-up and tables */

guint
simpar_pipeline_warmup(SimparPipeSchedule kind, guint p, guint v, guint m, guint stage)
{
    return simpar_pipeline_warmup_grouped(kind, p, v, m, p, stage);
}

guint
simpar_pipeline_warmup_grouped(SimparPipeSchedule kind, guint p, guint v, guint m, guint n_group,
                               guint stage)
{
    g_return_val_if_fail(stage < p, 0);
    switch (kind) {
    case SIMPAR_PIPE_GPIPE:
        return m;
    case SIMPAR_PIPE_1F1B:
        return MIN(p - stage - 1, m);
    case SIMPAR_PIPE_INTERLEAVED:
        /* Megatron-LM's get_pp_rank_microbatches with group size N. Older Megatron-LM releases
         * ran everything as warm-up when m == P; the cited one (and we) only clamp to m v. */
        return (guint) MIN((guint64) m * v,
                           2 * (guint64) (p - stage - 1) + (guint64) (v - 1) * n_group);
    case SIMPAR_PIPE_LOCAL:
        return 0;
    default:
        g_return_val_if_reached(0);
    }
}

/* Item k (0 .. m v - 1) of the forward table, or of the backward table (chunk v-1-c).
 * Interleaved: groups of N micro-batches; in each group chunk 0 for the whole group, then
 * chunk 1, ...; the last group holds the micro-batches left (N when N divides m), as
 * Megatron-Core's get_schedule_table. Others: v = 1, item k is micro-batch k. */
static SimparPipeItem
pipeline_table(SimparPipeSchedule kind, guint v, guint m, guint n_group, guint k, gboolean backward)
{
    guint group = (kind == SIMPAR_PIPE_INTERLEAVED) ? n_group : 1;
    guint last = (m - 1) / group * group; /* the last group's first micro-batch */
    guint micro, chunk;
    if ((guint64) k < (guint64) last * v) { /* a full group */
        guint in_group = k % (group * v);
        chunk = in_group / group, micro = k / (group * v) * group + in_group % group;
    } else { /* the last group, of m - last */
        guint size = m - last, in_last = k - last * v;
        chunk = in_last / size, micro = last + in_last % size;
    }
    SimparPipeItem item = {
        .backward = backward,
        .micro = micro,
        .chunk = backward ? v - 1 - chunk : chunk,
    };
    return item;
}

/* ---------------------------------------------------------------- order */

GArray *
simpar_pipeline_order(SimparPipeSchedule kind, guint p, guint v, guint m, guint stage)
{
    return simpar_pipeline_order_grouped(kind, p, v, m, p, stage);
}

static GArray *
pipeline_order(SimparPipeSchedule kind, guint v, guint m, guint n_group, guint w)
{
    guint n = m * v;
    g_assert(w <= n);
    GArray *order = g_array_sized_new(FALSE, FALSE, sizeof(SimparPipeItem), 2 * n);
    for (guint k = 0; k < w; k++) {
        SimparPipeItem f = pipeline_table(kind, v, m, n_group, k, FALSE);
        g_array_append_val(order, f);
    }
    for (guint k = w; k < n; k++) {
        SimparPipeItem f = pipeline_table(kind, v, m, n_group, k, FALSE);
        SimparPipeItem b = pipeline_table(kind, v, m, n_group, k - w, TRUE);
        g_array_append_val(order, f);
        g_array_append_val(order, b);
    }
    for (guint k = n - w; k < n; k++) {
        SimparPipeItem b = pipeline_table(kind, v, m, n_group, k, TRUE);
        g_array_append_val(order, b);
    }
    g_assert(order->len == 2 * n);
    return order; /* (transfer full) */
}

GArray *
simpar_pipeline_order_grouped(SimparPipeSchedule kind, guint p, guint v, guint m, guint n_group,
                              guint stage)
{
    g_return_val_if_fail(simpar_pipeline_validate_grouped(kind, p, v, m, n_group, NULL), NULL);
    g_return_val_if_fail(stage < p, NULL);
    return pipeline_order(kind, v, m, n_group,
                          simpar_pipeline_warmup_grouped(kind, p, v, m, n_group, stage));
}

/* ---------------------------------------------------------------- merged 1F1B */

guint
simpar_pipeline_warmup_merged(SimparPipeSchedule kind, guint p, guint v, guint m, guint n_group,
                              guint stage)
{
    g_return_val_if_fail(kind == SIMPAR_PIPE_INTERLEAVED || (kind == SIMPAR_PIPE_1F1B && p == 1),
                         0);
    return MIN(simpar_pipeline_warmup_grouped(kind, p, v, m, n_group, stage) + 1, m * v);
}

GArray *
simpar_pipeline_order_merged(SimparPipeSchedule kind, guint p, guint v, guint m, guint n_group,
                             guint stage)
{
    g_return_val_if_fail(simpar_pipeline_validate_grouped(kind, p, v, m, n_group, NULL), NULL);
    g_return_val_if_fail(stage < p, NULL);
    return pipeline_order(kind, v, m, n_group,
                          simpar_pipeline_warmup_merged(kind, p, v, m, n_group, stage));
}
