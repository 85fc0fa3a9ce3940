/* predict-cache.h - what the configurations predicted in one process share (private to predict/).
 *
 * A sweep predicts the same tensor-parallel layer under many pipeline and data-parallel splits,
 * batches and schedules. What the layer alone decides is computed once per process and kept
 * here, keyed by everything it depends on:
 *
 *   layer schedule, memory estimate   model shape (not its name), the plan (mode, T, q, depth,
 *                                     SP, 3-D variant, recomputation, dropout), attention
 *   block times (step-predict.h)      the above, the GPU's figures (calibration included), the
 *                                     backend, network and collective settings, the measured
 *                                     group's GPUs (T and the tensor-parallel rank stride) and
 *                                     local parallelism's auxiliary head
 *   numbers                           whatever a caller derives from these, under its own key
 *                                     (the formula mode's collective times and step figures)
 *
 * A cache belongs to one platform (one network): a platform lives in one process
 * (platform.h), and so does a cache. What it returns is what the uncached computation gives,
 * bit for bit.
 *
 * Ownership: the cache owns its entries; the layer it returns is borrowed until the cache is
 * freed; block times share its tables (simpar_block_times_clear releases them).
 */
#ifndef SIMPAR_PREDICT_CACHE_H
#define SIMPAR_PREDICT_CACHE_H
#include "memory.h"
#include "step-predict.h"
G_BEGIN_DECLS

typedef struct _SimparPredictCache SimparPredictCache;

SimparPredictCache *simpar_predict_cache_new(void); /* (transfer full) */
void simpar_predict_cache_free(SimparPredictCache *cache);

/* The layer schedule of `plan` (validated) and its memory estimate; NULL with `error` set when
 * the generator fails. (transfer none) */
const SimparSchedule *simpar_predict_cache_layer(SimparPredictCache *cache,
                                                 const SimparModel *model, const SimparPlan *plan,
                                                 SimparAttentionImpl attn, SimparMemory *layer_mem,
                                                 GError **error);
/* Fills `bt` as simpar_block_times_measure() does; `layer` must be the cache's layer of
 * train->tp. With a NULL cache, measures. */
void simpar_predict_cache_blocks(SimparPredictCache *cache, const SimparStepTimer *tm,
                                 const SimparModel *model, const SimparTrain *train,
                                 const SimparSchedule *layer, SimparBlockTimes *bt);

/* The `value_size` bytes stored under `key` (`key_size` bytes, padding zeroed) into `value`;
 * FALSE when there are none (and always with a NULL cache). */
gboolean simpar_predict_cache_get(SimparPredictCache *cache, const void *key, gsize key_size,
                                  void *value, gsize value_size);
void simpar_predict_cache_put(SimparPredictCache *cache, const void *key, gsize key_size,
                              const void *value, gsize value_size);
/* The text stored under `key` by simpar_predict_cache_put_text, or NULL (always with a NULL
 * cache). (transfer none: the cache's, until it is freed) */
const char *simpar_predict_cache_text(SimparPredictCache *cache, const void *key, gsize key_size);
void simpar_predict_cache_put_text(SimparPredictCache *cache, const void *key, gsize key_size,
                                   const char *text);

/* A scratch array for a computation that runs again and again with arrays of like sizes (the
 * formula mode's ops): the cache's array `slot` (< SIMPAR_PREDICT_CACHE_SCRATCH), emptied, with
 * room for `len` elements of `elem_size` bytes at first; the caller unrefs it when done, and
 * must be done before the next call with that slot. Its memory stays with the cache for the
 * next call (no new pages per evaluation). With a NULL cache, a new array. */
#define SIMPAR_PREDICT_CACHE_SCRATCH 10
GArray *simpar_predict_cache_scratch(SimparPredictCache *cache, guint slot, guint elem_size,
                                     guint len);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(SimparPredictCache, simpar_predict_cache_free)
G_END_DECLS
#endif /* SIMPAR_PREDICT_CACHE_H */
