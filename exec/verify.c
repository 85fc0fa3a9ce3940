/* verify.c - finite outputs and equal replicas (see verify.h).
 *
 * The output shards are sorted by (tensor name, row0, rows, col0, cols, rank): names, not
 * interned pointers, so that every process lays the state out alike. A run of equal keys but the
 * rank is one block; its slice of the state is
 *
 *   [bad rank + 1 | largest |value| | max of each sample ... | -min of each sample ...]
 *
 * all combined by MAX: the first slot over the ranks that hold a NaN or an infinity, the samples
 * (blocks held by several ranks only) so that max + -min is the spread between the replicas.
 */
#include "verify.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

G_DEFINE_QUARK(simpar_verify_error_quark, simpar_verify_error)

typedef struct {
    const char *tensor;
    guint64 row0, rows, col0, cols;
    guint rank, shard;
} VerifyEntry;

typedef struct {
    guint first, count; /* its entries */
    guint n_samples;    /* 0 for a block held by one rank */
    guint offset;       /* into the state */
} VerifyBlock;

struct _SimparVerify {
    const SimparSchedule *sched; /* borrowed */
    const SimparShard *shards;   /* the schedule's (transfer none) */
    double tolerance;
    VerifyEntry *entries; /* the output shards, sorted */
    guint n_entries;
    GArray *blocks;    /* VerifyBlock */
    guint *block_of;   /* per shard of the schedule: its block, G_MAXUINT for inputs */
    guint *buf_start;  /* per buffer b: its output shards are buf_shards[buf_start[b] ..] */
    guint *buf_shards; /* up to buf_start[b + 1] */
    double *state;
    guint n_state;
};

static int
verify_cmp_block(const VerifyEntry *x, const VerifyEntry *y)
{
    int c = strcmp(x->tensor, y->tensor);
    if (c != 0)
        return c;
    const guint64 kx[] = {x->row0, x->rows, x->col0, x->cols};
    const guint64 ky[] = {y->row0, y->rows, y->col0, y->cols};
    for (guint i = 0; i < G_N_ELEMENTS(kx); i++)
        if (kx[i] != ky[i])
            return kx[i] < ky[i] ? -1 : 1;
    return 0;
}

static int
verify_cmp_entry(const void *a, const void *b)
{
    const VerifyEntry *x = a, *y = b;
    int c = verify_cmp_block(x, y);
    if (c != 0)
        return c;
    return x->rank != y->rank ? (x->rank < y->rank ? -1 : 1)
                              : (x->shard > y->shard) - (x->shard < y->shard);
}

static void
verify_entries(SimparVerify *vf)
{
    guint n;
    const SimparShard *sh = vf->shards = simpar_schedule_shards(vf->sched, &n);
    vf->entries = g_new(VerifyEntry, MAX(n, 1));
    for (guint i = 0; i < n; i++)
        if (sh[i].role == SIMPAR_SHARD_OUTPUT)
            vf->entries[vf->n_entries++] = (VerifyEntry){
                sh[i].tensor, sh[i].row0, sh[i].rows, sh[i].col0, sh[i].cols, sh[i].rank, i};
    qsort(vf->entries, vf->n_entries, sizeof(VerifyEntry), verify_cmp_entry);
}

/* Blocks as runs of equal keys, their slices of the state, and each shard's block. */
static void
verify_blocks(SimparVerify *vf, guint n_shards)
{
    vf->blocks = g_array_new(FALSE, FALSE, sizeof(VerifyBlock));
    vf->block_of = g_new(guint, MAX(n_shards, 1));
    memset(vf->block_of, 0xff, MAX(n_shards, 1) * sizeof(guint));
    guint offset = 0;
    for (guint e = 0; e < vf->n_entries;) {
        guint end = e + 1;
        while (end < vf->n_entries && verify_cmp_block(&vf->entries[e], &vf->entries[end]) == 0)
            end++;
        guint64 elems = vf->entries[e].rows * vf->entries[e].cols;
        VerifyBlock b = {e, end - e, end - e > 1 ? (guint) MIN(elems, SIMPAR_VERIFY_SAMPLES) : 0,
                         offset};
        offset += 2 + 2 * b.n_samples;
        for (guint k = e; k < end; k++)
            vf->block_of[vf->entries[k].shard] = vf->blocks->len;
        g_array_append_val(vf->blocks, b);
        e = end;
    }
    vf->n_state = offset;
}

/* Output shards by buffer, as offsets into one array (counts, then prefix sums). */
static void
verify_by_buffer(SimparVerify *vf)
{
    guint n_buffers = simpar_schedule_n_buffers(vf->sched), n;
    const SimparShard *sh = simpar_schedule_shards(vf->sched, &n);
    vf->buf_start = g_new0(guint, n_buffers + 1);
    vf->buf_shards = g_new(guint, MAX(vf->n_entries, 1));
    for (guint e = 0; e < vf->n_entries; e++)
        vf->buf_start[sh[vf->entries[e].shard].view.buf + 1]++;
    for (guint b = 0; b < n_buffers; b++)
        vf->buf_start[b + 1] += vf->buf_start[b];
    g_autofree guint *fill = g_memdup2(vf->buf_start, (n_buffers + 1) * sizeof(guint));
    for (guint i = 0; i < n; i++)
        if (sh[i].role == SIMPAR_SHARD_OUTPUT)
            vf->buf_shards[fill[sh[i].view.buf]++] = i;
}

SimparVerify *
simpar_verify_new(const SimparSchedule *sched, double tolerance)
{
    g_return_val_if_fail(sched != NULL && tolerance >= 0, NULL);
    SimparVerify *vf = g_new0(SimparVerify, 1);
    guint n_shards;
    simpar_schedule_shards(sched, &n_shards);
    vf->sched = sched;
    vf->tolerance = tolerance;
    verify_entries(vf);
    verify_blocks(vf, n_shards);
    verify_by_buffer(vf);
    vf->state = g_new(double, MAX(vf->n_state, 1));
    for (guint i = 0; i < vf->blocks->len; i++) {
        const VerifyBlock *b = &g_array_index(vf->blocks, VerifyBlock, i);
        vf->state[b->offset] = vf->state[b->offset + 1] = 0;
        for (guint k = 0; k < 2 * b->n_samples; k++)
            vf->state[b->offset + 2 + k] = -G_MAXDOUBLE;
    }
    return vf; /* (transfer full) */
}

void
simpar_verify_free(SimparVerify *vf)
{
    if (vf == NULL)
        return;
    g_free(vf->entries);
    g_array_unref(vf->blocks);
    g_free(vf->block_of);
    g_free(vf->buf_start);
    g_free(vf->buf_shards);
    g_free(vf->state);
    g_free(vf);
}

gboolean
simpar_verify_needs(const SimparVerify *vf, guint buf)
{
    g_return_val_if_fail(vf != NULL && buf < simpar_schedule_n_buffers(vf->sched), FALSE);
    return vf->buf_start[buf + 1] > vf->buf_start[buf];
}

/* One shard's `rows x cols` values into its block's slice. */
static void
verify_shard(SimparVerify *vf, guint shard, const double *v)
{
    const SimparShard *sh = &vf->shards[shard];
    const VerifyBlock *b = &g_array_index(vf->blocks, VerifyBlock, vf->block_of[shard]);
    double *slot = vf->state + b->offset, largest = 0;
    guint64 n = sh->rows * sh->cols;
    for (guint64 i = 0; i < n; i++) {
        if (!isfinite(v[i])) {
            slot[0] = MAX(slot[0], (double) sh->rank + 1);
            return;
        }
        largest = MAX(largest, fabs(v[i]));
    }
    slot[1] = MAX(slot[1], largest);
    double *hi = slot + 2, *neg_lo = hi + b->n_samples;
    for (guint k = 0; k < b->n_samples; k++) {
        double x = v[(guint64) k * n / b->n_samples];
        hi[k] = MAX(hi[k], x);
        neg_lo[k] = MAX(neg_lo[k], -x);
    }
}

void
simpar_verify_buffer(SimparVerify *vf, guint buf, const double *values)
{
    g_return_if_fail(vf != NULL && buf < simpar_schedule_n_buffers(vf->sched));
    g_return_if_fail(values != NULL || !simpar_verify_needs(vf, buf));
    const SimparShard *sh = vf->shards;
    for (guint j = vf->buf_start[buf]; j < vf->buf_start[buf + 1]; j++) {
        guint i = vf->buf_shards[j];
        verify_shard(vf, i, values + sh[i].view.off);
    }
}

double *
simpar_verify_state(SimparVerify *vf, guint *n)
{
    g_return_val_if_fail(vf != NULL && n != NULL, NULL);
    *n = vf->n_state;
    return vf->state; /* (transfer none) */
}

void
simpar_verify_count(const SimparVerify *vf, guint *blocks, guint *replicated)
{
    g_return_if_fail(vf != NULL && blocks != NULL && replicated != NULL);
    *blocks = vf->blocks->len;
    *replicated = 0;
    for (guint i = 0; i < vf->blocks->len; i++)
        *replicated += g_array_index(vf->blocks, VerifyBlock, i).count > 1;
}

/* ---- the verdict -------------------------------------------------------------------------- */

/* "'x' rows 0-7, cols 0-15" */
static char *
verify_block_name(const VerifyEntry *e)
{
    return g_strdup_printf("'%s' rows %" G_GUINT64_FORMAT "-%" G_GUINT64_FORMAT
                           ", cols %" G_GUINT64_FORMAT "-%" G_GUINT64_FORMAT,
                           e->tensor, e->row0, e->row0 + e->rows - 1, e->col0,
                           e->col0 + e->cols - 1); /* (transfer full) */
}

/* The message for block `b`, or NULL when it passes; *code its error code. */
static char *
verify_block_problem(const SimparVerify *vf, const VerifyBlock *b, gint *code)
{
    const VerifyEntry *e = &vf->entries[b->first];
    const double *slot = vf->state + b->offset, *hi = slot + 2, *neg_lo = hi + b->n_samples;
    g_autofree char *name = verify_block_name(e);
    if (slot[0] > 0) {
        *code = SIMPAR_VERIFY_ERROR_NON_FINITE;
        return g_strdup_printf("output %s of rank %.0f holds a NaN or an infinity", name,
                               slot[0] - 1);
    }
    guint worst = 0;
    for (guint k = 1; k < b->n_samples; k++)
        if (hi[k] + neg_lo[k] > hi[worst] + neg_lo[worst])
            worst = k;
    double spread = b->n_samples > 0 ? hi[worst] + neg_lo[worst] : 0;
    if (spread <= vf->tolerance * slot[1])
        return NULL;
    g_autoptr(GString) ranks = g_string_new(NULL);
    for (guint k = 0; k < b->count; k++)
        g_string_append_printf(ranks, "%s%u",
                               k == 0             ? ""
                               : k + 1 < b->count ? ", "
                                                  : " and ",
                               vf->entries[b->first + k].rank);
    guint64 elem = (guint64) worst * (e->rows * e->cols) / b->n_samples;
    *code = SIMPAR_VERIFY_ERROR_MISMATCH;
    return g_strdup_printf("output %s is held by ranks %s, which must hold equal copies, but "
                           "element %" G_GUINT64_FORMAT " ranges from %.9g to %.9g: a spread of "
                           "%.3g of the block's largest |value| %.3g, above the tolerance %.0e",
                           name, ranks->str, elem, -neg_lo[worst], hi[worst],
                           slot[1] > 0 ? spread / slot[1] : spread, slot[1], vf->tolerance);
}

gboolean
simpar_verify_check(const SimparVerify *vf, GError **error)
{
    g_return_val_if_fail(vf != NULL, FALSE);
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    g_autofree char *first = NULL;
    gint code = 0;
    guint n_bad = 0;
    for (guint i = 0; i < vf->blocks->len; i++) {
        gint c;
        char *problem = verify_block_problem(vf, &g_array_index(vf->blocks, VerifyBlock, i), &c);
        if (problem == NULL)
            continue;
        if (n_bad++ == 0)
            first = problem, code = c;
        else
            g_free(problem);
    }
    if (n_bad == 0)
        return TRUE;
    if (n_bad == 1)
        g_set_error_literal(error, SIMPAR_VERIFY_ERROR, code, first);
    else
        g_set_error(error, SIMPAR_VERIFY_ERROR, code, "%s (and %u more output blocks fail)", first,
                    n_bad - 1);
    return FALSE;
}
