/* predict-cache.c - layer schedules, memory estimates, block times and numbers by key (see
 * predict-cache.h). Keys are plain structs, zeroed before they are filled (no padding garbage),
 * hashed and compared as bytes; a lookup hashes the caller's bytes where they lie (a sweep looks
 * keys up several times per row: no copy, no allocation). */
#include "predict-cache.h"
#include "generators.h"
#include <string.h>

struct _SimparPredictCache {
    GHashTable *layers; /* CacheKey (CacheLayerKey) -> CacheLayer */
    GHashTable *blocks; /* CacheKey (CacheBlockKey) -> SimparBlockTimes */
    GHashTable *memo;   /* CacheKey (the caller's key) -> CacheKey (the value's bytes) */
    GArray *scratch[SIMPAR_PREDICT_CACHE_SCRATCH];
};

/* What the layer schedule and its memory estimate depend on. */
typedef struct {
    gint64 hidden, heads, seq, micro_batch, layers, ffn, vocab, kv_heads, mlp, norm, no_bias, tp;
    gint64 no_dropout;
    gint64 depth, cp;
    double p_hidden, p_attn, eps;
    guint64 seed;
    const SimparGenerator *gen; /* the mode: a row of the table */
    gint64 dtype, recompute, attention, sp, paper_3d, causal, q;
    gint64 fp8, fp8_attention; /* FP8 GEMMs' recipe, FP8 attention (+ 2: FP8 output layer) */
    SimparMoeConfig moe;       /* integers and doubles only: no padding */
    gint64 ep, etp, moe_gather;
} CacheLayerKey;

/* What the block times depend on besides the layer. */
typedef struct {
    CacheLayerKey layer;
    SimparGpu gpu; /* pointers and doubles only: no padding */
    const void *backend, *net, *algo;
    double chunk_bytes;
    gint64 proto, max_chunks, mode, play_all, every_rank, tp, tp_stride, cp_stride, local,
        aux_width;
    gint64 ep_stride;  /* an MoE model's: where its expert-parallel group lies (train.h) */
    gint64 etp_stride; /* and its expert-tensor-parallel group (etp itself: the layer's key) */
    gint64 ep_hops;    /* DeepEP's hops: the EP ranks of a node (0: the flat all-to-all) */
    gint64 ep_overlap; /* --overlap-moe-expert-parallel-comm: the merged layers' nodes timed */
} CacheBlockKey;

typedef struct {
    SimparSchedule *layer;
    SimparMemory mem;
} CacheLayer;

static void
cache_layer_free(gpointer p)
{
    CacheLayer *e = p;
    simpar_schedule_free(e->layer);
    g_free(e);
}

static void
cache_blocks_free(gpointer p)
{
    simpar_block_times_clear(p);
    g_free(p);
}

/* A key or a value: `size` bytes at `data`, their hash. A stored one holds its bytes right
 * after itself (cache_key_new); a lookup's points at the caller's. */
typedef struct {
    const guint8 *data;
    gsize size;
    guint hash;
} CacheKey;

/* Four FNV-1a lanes over 8-byte words, folded: keys are a few hundred bytes of integers and
 * doubles, and one lane's multiplies wait on each other (a sweep hashes several keys a row). */
static guint
cache_hash_bytes(const guint8 *d, gsize n)
{
    const guint64 prime = G_GUINT64_CONSTANT(1099511628211);
    guint64 h[4] = {G_GUINT64_CONSTANT(14695981039346656037), G_GUINT64_CONSTANT(1),
                    G_GUINT64_CONSTANT(2), G_GUINT64_CONSTANT(3)},
            w[4];
    gsize i = 0;
    for (; i + sizeof w <= n; i += sizeof w) {
        memcpy(w, d + i, sizeof w);
        for (guint k = 0; k < 4; k++)
            h[k] = (h[k] ^ w[k]) * prime;
    }
    for (guint k = 0; i < n; i += sizeof w[0], k++) {
        w[0] = 0;
        memcpy(&w[0], d + i, MIN(sizeof w[0], n - i));
        h[k] = (h[k] ^ w[0]) * prime;
    }
    guint64 x = ((h[0] * prime ^ h[1]) * prime ^ h[2]) * prime ^ h[3] ^ n;
    return (guint) (x ^ (x >> 32));
}

static guint
cache_hash(gconstpointer key)
{
    return ((const CacheKey *) key)->hash;
}

static gboolean
cache_equal(gconstpointer a, gconstpointer b)
{
    const CacheKey *x = a, *y = b;
    return x->hash == y->hash && x->size == y->size && memcmp(x->data, y->data, x->size) == 0;
}

/* A stored copy of `size` bytes at `data` (one allocation; g_free frees it). */
static CacheKey *
cache_key_new(const void *data, gsize size, guint hash)
{
    CacheKey *k = g_malloc(sizeof *k + size);
    guint8 *copy = (guint8 *) (k + 1);
    memcpy(copy, data, size);
    *k = (CacheKey){copy, size, hash};
    return k; /* (transfer full) */
}

SimparPredictCache *
simpar_predict_cache_new(void)
{
    SimparPredictCache *c = g_new0(SimparPredictCache, 1);
    c->layers = g_hash_table_new_full(cache_hash, cache_equal, g_free, cache_layer_free);
    c->blocks = g_hash_table_new_full(cache_hash, cache_equal, g_free, cache_blocks_free);
    c->memo = g_hash_table_new_full(cache_hash, cache_equal, g_free, g_free);
    return c; /* (transfer full) */
}

void
simpar_predict_cache_free(SimparPredictCache *c)
{
    if (c == NULL)
        return;
    g_hash_table_unref(c->layers);
    g_hash_table_unref(c->blocks);
    g_hash_table_unref(c->memo);
    for (guint i = 0; i < SIMPAR_PREDICT_CACHE_SCRATCH; i++)
        if (c->scratch[i] != NULL)
            g_array_unref(c->scratch[i]);
    g_free(c);
}

GArray *
simpar_predict_cache_scratch(SimparPredictCache *c, guint slot, guint elem_size, guint len)
{
    g_return_val_if_fail(slot < SIMPAR_PREDICT_CACHE_SCRATCH && elem_size > 0, NULL);
    if (c == NULL)
        return g_array_sized_new(FALSE, FALSE, elem_size, len);
    GArray *a = c->scratch[slot];
    if (a == NULL || g_array_get_element_size(a) != elem_size) {
        if (a != NULL)
            g_array_unref(a);
        a = c->scratch[slot] = g_array_sized_new(FALSE, FALSE, elem_size, len);
    }
    g_array_set_size(a, 0);
    return g_array_ref(a); /* (transfer full): the cache keeps its own reference */
}

/* The entry of `key` in `table`, or NULL. */
static gpointer
cache_find(GHashTable *table, const void *key, gsize size)
{
    CacheKey k = {key, size, cache_hash_bytes(key, size)};
    return g_hash_table_lookup(table, &k);
}

static void
cache_add(GHashTable *table, const void *key, gsize size, gpointer value)
{
    g_hash_table_insert(table, cache_key_new(key, size, cache_hash_bytes(key, size)), value);
}

static void
cache_layer_key(const SimparModel *m, const SimparPlan *plan, SimparAttentionImpl attn,
                CacheLayerKey *k)
{
    memset(k, 0, sizeof *k);
    k->hidden = m->hidden, k->heads = m->heads, k->seq = m->seq, k->layers = m->layers;
    k->micro_batch = m->micro_batch, k->ffn = m->ffn, k->vocab = m->vocab;
    k->kv_heads = simpar_model_kv_heads(m), k->mlp = m->mlp, k->norm = m->norm;
    k->no_bias = m->no_bias;
    k->no_dropout = m->no_dropout;
    k->dtype = m->dtype, k->fp8 = m->fp8;
    k->fp8_attention = plan->fp8_attention + 2 * (gint64) plan->fp8_output_proj; /* two bits */
    k->gen = plan->gen, k->tp = plan->tp, k->depth = plan->depth;
    k->cp = simpar_plan_cp(plan) * (plan->cp_ring ? -1 : 1);
    k->sp = plan->sequence_parallel + 2 * plan->tp_comm_overlap, k->paper_3d = plan->paper_3d,
    k->q = plan->q;
    k->recompute = plan->recompute + 8 * (gint64) plan->recompute_modules; /* plan.h */
    k->causal = plan->causal, k->seed = plan->seed;
    k->p_hidden = plan->p_hidden, k->p_attn = plan->p_attn, k->eps = plan->eps;
    k->attention = attn;
    k->moe = m->moe, k->ep = plan->ep, k->etp = plan->etp;
    k->moe_gather = plan->moe_gather;
}

const SimparSchedule *
simpar_predict_cache_layer(SimparPredictCache *c, const SimparModel *model, const SimparPlan *plan,
                           SimparAttentionImpl attn, SimparMemory *layer_mem, GError **error)
{
    g_return_val_if_fail(c != NULL, NULL);
    g_return_val_if_fail(error == NULL || *error == NULL, NULL);
    CacheLayerKey key;
    cache_layer_key(model, plan, attn, &key);
    CacheLayer *e = cache_find(c->layers, &key, sizeof key);
    if (e == NULL) {
        SimparPlan copy = *plan; /* validated already: generating leaves it as it is */
        SimparSchedule *layer = simpar_generate_layer(model, &copy, error);
        if (layer == NULL)
            return NULL;
        e = g_new0(CacheLayer, 1);
        e->layer = layer;
        simpar_memory_estimate(model, &copy, layer, attn, &e->mem);
        cache_add(c->layers, &key, sizeof key, e);
    }
    *layer_mem = e->mem;
    return e->layer; /* (transfer none) */
}

static void
cache_block_key(const SimparStepTimer *tm, const SimparModel *model, const SimparTrain *train,
                CacheBlockKey *k)
{
    memset(k, 0, sizeof *k);
    cache_layer_key(model, &train->tp, tm->attn, &k->layer);
    memcpy(&k->gpu, tm->gpu, sizeof k->gpu);
    k->backend = tm->backend, k->net = tm->base.net, k->algo = tm->base.algo;
    k->chunk_bytes = tm->base.coll.chunk_bytes, k->max_chunks = tm->base.coll.max_chunks;
    k->proto = tm->base.coll.proto, k->mode = tm->base.mode, k->play_all = tm->base.play_all;
    k->every_rank = tm->base.every_rank;
    k->tp = train->tp.tp, k->tp_stride = train->stride[SIMPAR_AXIS_TP];
    k->cp_stride = train->stride[SIMPAR_AXIS_CP];
    k->local = train->schedule == SIMPAR_PIPE_LOCAL;
    k->aux_width = k->local ? train->aux_head_width : 0;
    k->ep_stride = simpar_model_is_moe(model) ? train->expert_stride[SIMPAR_AXIS_EP] : 0;
    k->etp_stride = simpar_model_is_moe(model) ? train->expert_stride[SIMPAR_AXIS_TP] : 0;
    k->ep_hops = train->moe_dispatcher == SIMPAR_MOE_DEEPEP ? train->ep_node : 0;
    k->ep_overlap = simpar_model_is_moe(model) && train->ep_overlap; /* the merged nodes' blocks */
}

/* Another holder of `from`'s tables (a copy of its small axes array). */
static void
cache_blocks_share(const SimparBlockTimes *from, SimparBlockTimes *to)
{
    to->time_s = g_hash_table_ref(from->time_s);
    to->compute_s = g_hash_table_ref(from->compute_s);
    to->layer_axes = g_array_copy(from->layer_axes);
    to->layer_comm_bytes = from->layer_comm_bytes;
    to->dense_axes = from->dense_axes != NULL ? g_array_copy(from->dense_axes) : NULL;
    to->dense_comm_bytes = from->dense_comm_bytes;
    to->layer_ranks = from->layer_ranks;
}

void
simpar_predict_cache_blocks(SimparPredictCache *c, const SimparStepTimer *tm,
                            const SimparModel *model, const SimparTrain *train,
                            const SimparSchedule *layer, SimparBlockTimes *bt)
{
    if (c == NULL) {
        simpar_block_times_measure(tm, model, train, layer, bt);
        return;
    }
    CacheBlockKey key;
    cache_block_key(tm, model, train, &key);
    SimparBlockTimes *e = cache_find(c->blocks, &key, sizeof key);
    if (e == NULL) {
        e = g_new0(SimparBlockTimes, 1);
        simpar_block_times_measure(tm, model, train, layer, e);
        cache_add(c->blocks, &key, sizeof key, e);
    }
    cache_blocks_share(e, bt);
}

gboolean
simpar_predict_cache_get(SimparPredictCache *c, const void *key, gsize key_size, void *value,
                         gsize value_size)
{
    const CacheKey *v = c != NULL ? cache_find(c->memo, key, key_size) : NULL;
    if (v == NULL)
        return FALSE;
    g_assert(v->size == value_size); /* one key, one kind of value */
    memcpy(value, v->data, value_size);
    return TRUE;
}

void
simpar_predict_cache_put(SimparPredictCache *c, const void *key, gsize key_size, const void *value,
                         gsize value_size)
{
    if (c != NULL)
        cache_add(c->memo, key, key_size, cache_key_new(value, value_size, 0));
}

const char *
simpar_predict_cache_text(SimparPredictCache *c, const void *key, gsize key_size)
{
    const CacheKey *v = c != NULL ? cache_find(c->memo, key, key_size) : NULL;
    return v != NULL ? (const char *) v->data : NULL;
}

void
simpar_predict_cache_put_text(SimparPredictCache *c, const void *key, gsize key_size,
                              const char *text)
{
    if (c != NULL)
        cache_add(c->memo, key, key_size, cache_key_new(text, strlen(text) + 1, 0));
}
