/* predict-cache.c - layer schedules, memory estimates, block times and numbers by key (see
 * predict-cache.h). Keys are plain structs, zeroed before they are filled (no padding garbage),
 * hashed and compared as bytes. */
#include "predict-cache.h"
#include "generators.h"
#include <string.h>

struct _SimparPredictCache {
    GHashTable *layers; /* GBytes (CacheLayerKey) -> CacheLayer */
    GHashTable *blocks; /* GBytes (CacheBlockKey) -> SimparBlockTimes */
    GHashTable *memo;   /* GBytes (the caller's key) -> GBytes */
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

/* FNV-1a over 8-byte words: keys are a few hundred bytes of integers and doubles, and a sweep
 * looks one up several times per row (g_bytes_hash goes byte by byte). */
static guint
cache_hash(gconstpointer key)
{
    gsize n;
    const guint8 *d = g_bytes_get_data((GBytes *) key, &n);
    guint64 h = G_GUINT64_CONSTANT(14695981039346656037), w;
    for (gsize i = 0; i < n; i += sizeof w) {
        w = 0;
        memcpy(&w, d + i, MIN(sizeof w, n - i));
        h = (h ^ w) * G_GUINT64_CONSTANT(1099511628211);
    }
    return (guint) (h ^ (h >> 32));
}

SimparPredictCache *
simpar_predict_cache_new(void)
{
    SimparPredictCache *c = g_new0(SimparPredictCache, 1);
    GHashFunc h = cache_hash;
    GEqualFunc eq = g_bytes_equal;
    c->layers = g_hash_table_new_full(h, eq, (GDestroyNotify) g_bytes_unref, cache_layer_free);
    c->blocks = g_hash_table_new_full(h, eq, (GDestroyNotify) g_bytes_unref, cache_blocks_free);
    c->memo = g_hash_table_new_full(h, eq, (GDestroyNotify) g_bytes_unref,
                                    (GDestroyNotify) g_bytes_unref);
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
    GBytes *k = g_bytes_new_static(key, size);
    gpointer found = g_hash_table_lookup(table, k);
    g_bytes_unref(k);
    return found;
}

static void
cache_add(GHashTable *table, const void *key, gsize size, gpointer value)
{
    g_hash_table_insert(table, g_bytes_new(key, size), value);
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
    GBytes *v = c != NULL ? cache_find(c->memo, key, key_size) : NULL;
    if (v == NULL)
        return FALSE;
    g_assert(g_bytes_get_size(v) == value_size); /* one key, one kind of value */
    memcpy(value, g_bytes_get_data(v, NULL), value_size);
    return TRUE;
}

void
simpar_predict_cache_put(SimparPredictCache *c, const void *key, gsize key_size, const void *value,
                         gsize value_size)
{
    if (c != NULL)
        cache_add(c->memo, key, key_size, g_bytes_new(value, value_size));
}

const char *
simpar_predict_cache_text(SimparPredictCache *c, const void *key, gsize key_size)
{
    GBytes *v = c != NULL ? cache_find(c->memo, key, key_size) : NULL;
    return v != NULL ? g_bytes_get_data(v, NULL) : NULL;
}

void
simpar_predict_cache_put_text(SimparPredictCache *c, const void *key, gsize key_size,
                              const char *text)
{
    if (c != NULL)
        cache_add(c->memo, key, key_size, g_bytes_new(text, strlen(text) + 1));
}
