/* step-formula.h - the step of a training plan without its schedule: the "formula" backend
 * (private to predict/).
 *
 * The analytic backend replays the step schedule of every GPU (models/step.h) op by op. The
 * formula mode times the blocks the same way (the layer and the ends replayed on the
 * analytic backend, step-predict.h), then gets the step from the closed form of each op of a
 * rank, in the order of models/step.c:
 *
 *   block          end = start + count x block time
 *   send / recv    end = max(sender's, receiver's arrival) + lat + bytes / bw of the route
 *   collective     end = max(members' arrivals) + the algorithm's closed form (collectives.h)
 *   Adam           end = start + its roofline time (compute.h)
 *   any op         start = max(end of its stream predecessor, end of what it waits for)
 *
 * evaluated as one max-plus recurrence over the stages' pipeline orders (pipeline.h): 1F1B,
 * GPipe and interleaved 1F1B, the p2p activations and gradients between stages, the
 * data-parallel buckets (all-reduce; ZeRO-1/2 reduce-scatter and parameter all-gather; ZeRO-2
 * per layer and micro-batch; --overlap-grad-reduce), tied embeddings, scatter/gather. The sums
 * are the replay's, in its order: the step and its breakdown (step-predict.h) are the analytic
 * backend's, bit for bit, without a schedule of T x P x D ranks to build, hash and replay.
 *
 * One chain of ranks (0, 0, p), p < P, stands for all when the ranks of each stage run alike:
 * the tensor-parallel ranks hold the same shares (simpar_schedule_rank_facts), every (t, d)
 * has the routes of (0, 0) to the neighbouring stages, and every group of an axis (dp, tp,
 * embed) is its first one's image member by member (routes and node sharing; memoised per
 * placement).
 * Else (e.g. v100x64, whose GPUs 2 and 3 reach the NIC over the X-bus) every (t, d) gets its
 * chain, T x D of them, joined by their collectives: O(T D P m v) terms, still no schedule.
 *
 * In m the figures are closed forms too: once the pipeline runs periodically, one more group of
 * u micro-batches (u = P interleaved, else 1) adds one period to every figure. A large m is
 * evaluated at probes m0, m0 + u (m0 = 2 P v rounded up to u) and m1 = 2 m0, m1 + u: when they
 * lie on one line in every figure (to 1e-12 of the step) and the rank that ends last stays
 * ahead, the figures at m are that line's (off the replay's sums of m terms by rounding: at
 * most 5e-14 of the step over tests/test-formula.c's grid); else m itself is evaluated.
 * Uneven stages (the chunks' layers differ): with one chain and one chunk a stage, GPipe from
 * its two flow shops' longest paths in closed form and 1F1B from the recurrence of its items'
 * ends (its steady rounds until one shifts every item alike), then a step of 2 micro-batches for
 * the last backward and the optimizer (step-formula-flow.c): the evaluation at m to rounding,
 * at any m; else (interleaved, several chains) from probes found periodic (step-formula.c).
 * Figures are memoised per configuration and m: a sweep over batch sizes evaluates a split's
 * probes once.
 *
 * Left to the replay (simpar_step_formula returns FALSE):
 *   - local parallelism (auxiliary heads, steps without a flush);
 *   - ZeRO-3 (parameter gathers prefetched on their own stream, one per layer);
 *   - --overlap-param-gather (the buckets' parameter gathers at the step's start on their own
 *     stream, each layer's first forward waiting for its bucket's);
 *   - --collectives exact (each member's arrival enters the collective's expansion);
 *   - scatter/gather with tensor-parallel ranks whose activation shares differ;
 *   - an MoE model's merged 1F1B (--overlap-moe-expert-parallel-comm: its layers' nodes on two
 *     streams) and token dispatchers other than the all-to-all and DeepEP's (a whitelist: a new
 *     dispatcher is replayed until the closed forms are checked against it).
 * Mixtures of experts are closed forms as dense models are: what an MoE layer computes and
 * sends inside the layer (the router, the dispatch and combine all-to-alls or DeepEP's hops,
 * expert tensor parallelism's all-gathers and reduce-scatters, the permutations, the grouped
 * GEMMs under imbalance or capacity, shared experts, recomputation) is the "layer.fwd" and
 * "layer.bwd" blocks' time (step-predict.c); the step adds the dense layers' own blocks
 * ("dense.fwd", "dense.bwd", "dense.fp8.cast": --dense-layers, --moe-every, a block per run of
 * one kind), the routed experts' gradients in their own buckets, reduced over the
 * expert-data-parallel group (all-reduce, or with ZeRO 1/2 reduce-scatter, Adam on the shard
 * and all-gather over that group; ZeRO-2 per layer and micro-batch), as models/step.c does.
 * Chunks of as many layers whose dense layers differ (--dense-layers 2 --moe-every 2 over 4
 * stages: 3 dense layers on the first, 2 on the others) take other times: uneven stages, as
 * below (from probes at m0, m1 such a step was 0.2% off, tests/test-formula.c).
 * (predict-config.c also replays for a Chrome trace, which wants every op's span.)
 *
 * Ownership: nothing is kept; numbers are memoised in the cache when one is given.
 */
#ifndef SIMPAR_STEP_FORMULA_H
#define SIMPAR_STEP_FORMULA_H
#include "predict-cache.h"
G_BEGIN_DECLS

/* The step of `train` (validated) on the platform's first T x P x D GPUs, with the block times
 * `bt` of `layer`: row->step_s and the breakdown as simpar_step_breakdown() fills them (or, with
 * a NULL row, the step time into *step_s). FALSE, filling nothing, for the cases above. `cache`
 * (or NULL) memoises collective times, checks and figures. */
/* The bytes simpar_step_formula would allocate for its ops at once (0 where it leaves the step
 * to the replay), known before it allocates them. */
double simpar_step_formula_bytes(const SimparStepTimer *tm, const SimparBlockTimes *bt,
                                 const SimparModel *model, const SimparTrain *train,
                                 const SimparSchedule *layer, SimparPredictCache *cache);
gboolean simpar_step_formula(const SimparStepTimer *tm, const SimparBlockTimes *bt,
                             const SimparModel *model, const SimparTrain *train,
                             const SimparSchedule *layer, SimparPredictCache *cache,
                             SimparReportRow *row, double *step_s);
/* Tests: with TRUE, every step is evaluated at its own micro-batch count (no probes, no closed
 * form in m), the reference the closed forms in m are held to. Process-wide; FALSE by default. */
void simpar_step_formula_evaluate_all(gboolean on);

G_END_DECLS
#endif /* SIMPAR_STEP_FORMULA_H */
