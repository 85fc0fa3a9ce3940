/* moe.h - a mixture-of-experts layer with expert parallelism: its routing and its schedule.
 *
 * Megatron-Core's MoELayer with the all-to-all token dispatcher (Megatron-LM,
 * megatron/core/transformer/moe/: moe_layer.py, router.py, token_dispatcher.py, experts.py):
 * each of the ep ranks of the expert-parallel group holds E/ep experts and its own tokens, and
 * every token goes to top_k experts.
 *
 *   x --router GEMM--> logits --gate--> scores                          (each rank, its tokens)
 *   x --dispatch--> [E x C x h] --all-to-all ep--> [ep x E/ep x C x h] --sort--> per expert
 *     --grouped fc1, act, fc2 (batched GEMMs over the rank's experts)--> --unsort-->
 *     --all-to-all ep--> [E x C x h] --combine (x scores, summed per token)--> + shared MLP = y
 *
 * Routing is deterministic: a token's experts are the top_k of scores hashed from (seed,
 * global token, expert), within the group_limit best groups when routing is node-limited (each
 * group's score the sum of its two best, as DeepSeek-V3 ranks nodes, arXiv 2412.19437 section
 * 2.1.2); the weights of its experts are computed from the router's logits, so the router gets
 * its gradient. C rows per (source rank, expert) pad the all-to-all's blocks: dropless C is the
 * largest count the routing gives, a capacity factor cf gives ceil(T top_k / E cf) and drops the
 * later choices past it (Megatron's token drop policy "position").
 *
 * Expert tensor parallelism (etp > 1; Megatron-Core's MoEAlltoAllTokenDispatcher with an
 * expert-TP group, and TEGroupedMLP's column-parallel fc1 and row-parallel fc2, experts.py):
 * the block has ep x etp ranks, rank e etp + t (Megatron-Core's expert numbering, train.h)
 * holding column slice t of the fc1 of experts [e E/ep, (e+1) E/ep) (f_e/etp of each; SwiGLU's
 * (gate, up) pairs whole) and the same rows of their fc2, and its own tokens, routed by itself.
 * The all-to-all runs among the ep ranks of one expert-TP index; the expert-TP group all-gathers
 * what its ranks received, each runs its slice on all of it, and a reduce-scatter sums the
 * partial rows and hands each rank its own back before the combine's all-to-all:
 *
 *   x --dispatch--> [E x C x h] --all-to-all ep--> [ep x E/ep x C x h] --all-gather etp-->
 *     [etp x ep x E/ep x C x h] --sort--> [E/ep x etp ep x C x h] --fc1 (f_e/etp columns), act,
 *     fc2 (partial sums)--> --unsort--> --reduce-scatter etp--> --all-to-all ep--> combine
 *
 * The backward swaps them: the combine's all-to-all, an all-gather of dy's rows, the experts'
 * backward, a reduce-scatter of dx's partial rows, the dispatch's all-to-all. The router and
 * the shared experts are each rank's own, as at etp 1 (Megatron shards the shared experts with
 * the attention's tensor parallelism, shared_experts.py, not with the experts').
 *
 * DeepEP's dispatch (train.h, SIMPAR_MOE_DEEPEP; github.com/deepseek-ai/DeepEP "normal"
 * kernels, DeepSeek-V3 arXiv 2412.19437 section 3.2.2) replaces each all-to-all by two hops
 * when the ep ranks are nodes of R consecutive ranks: rank (node n, local l) sends each token
 * once to every node it has a kept choice on, to rank (n', l) (the rail all-to-all among the
 * ranks of local index l), which forwards it once to each GPU of its node holding one of its
 * choices (the node's all-to-all, NVLink); that GPU places it into the experts' rows as SORT
 * does. The token's scores travel with it, the expert's GPU weights its rows, and the combine
 * sums them back per GPU, then per node, along the same hops reversed:
 *
 *   x, scores --hop 0--> [nodes x cap_node x (h + k)] --all-to-all rail--> --hop 1-->
 *     [R x cap_gpu x (h + k)] --all-to-all node--> --hop 2--> experts.x, experts.scores
 *   experts' rows --hop 2 reduce (x scores)--> --all-to-all node--> --hop 1 reduce-->
 *     --all-to-all rail--> --hop 0 reduce--> y
 *
 * With expert tensor parallelism DeepEP runs as Megatron-Core's flex dispatcher runs it
 * (token_dispatcher.py, MoEFlexTokenDispatcher: one communication group, tp_ep_group, and the
 * routing map expanded over it in _initialize_metadata): the hops' group is the block's G =
 * ep x etp ranks, rank e etp + t, nodes of R consecutive ones (G a multiple of R), and a kept
 * choice of expert x goes to every rank of x's expert-TP group, x / (E/ep) etp + s for s < etp
 * (top_k x etp destinations, the choice's score carried once for each: rows h + top_k etp
 * wide). A token crosses the rail once per node holding one of them and NVLink once per such
 * GPU; each lands in that GPU's rows [E/ep x G x C x h], the rank runs its column slice on them
 * and weights its partial fc2 rows by the score, and the combine's sums (per GPU, per node,
 * home) add the etp slices' partial rows up with the experts'. No expert-TP all-gather or
 * reduce-scatter.
 *
 * Megatron-Core's all-gather dispatcher (train.h, SIMPAR_MOE_ALLGATHER; its default,
 * megatron/core/transformer/moe/token_dispatcher.py, MoEAllGatherTokenDispatcher) needs no
 * routing-dependent transfer: the TP x EP group (tp_ep_group: the block's ep x etp ranks) all-
 * gathers every rank's router probs (dense [T x E], 0 off the chosen experts) and tokens, each
 * rank picks from the G = etp ep gathered tokens the rows of its own E/ep experts (the local
 * permutation, in the same [E/ep x G x C x h] rows as SORT's), runs its experts (its 1/etp
 * columns with expert tensor parallelism: the ranks of an expert-TP group pick the same rows),
 * weights their rows by the probs and un-permutes them into the gathered tokens, and a
 * reduce-scatter over the group sums the experts' (and the expert-TP slices') contributions and
 * hands each rank its own tokens back:
 *
 *   x --router--> probs [T x E] --all-gather tp_ep--> [G T x E]
 *   x --all-gather tp_ep--> [G T x h] --local permute--> [E/ep x G x C x h] --fc1, act, fc2-->
 *     --un-permute (x probs, summed per token)--> [G T x h] --reduce-scatter tp_ep--> [T x h]
 *
 * The backward all-gathers dy, and the local permutation's and the probs' gradients over the
 * gathered tokens are reduce-scattered back (the gathers' backward in tensor_parallel/
 * mappings.py). Megatron-Core also gathers the boolean routing map (1 byte per token and expert,
 * under no_grad); simpar's routing is a function of the token, so that gather is left out. The
 * probs are applied to the experts' activation in Megatron-Core (experts.py, TEGroupedMLP's
 * bias_act_func) and at the un-permutation here, as for the all-to-all: fc2 is linear and has no
 * bias, so the output and every gradient are the same. A capacity factor drops in the router,
 * per rank over its own tokens (router.py, apply_router_token_dropping), as here.
 *
 * Ownership: plain functions; the builder returns a schedule the caller owns.
 */
#ifndef SIMPAR_MOE_H
#define SIMPAR_MOE_H
#include "schedule.h"
G_BEGIN_DECLS

/* The experts of global token `token` in increasing order into experts[m->top_k]. */
void simpar_moe_choose(const SimparMoe *m, guint64 token, guint *experts);
/* For each of the rank's tokens t and choices j, rows[t top_k + j]: the row of the expert-major
 * blocks [E x capacity] it is dispatched to, or -1 when dropped; the choices' experts into
 * experts[tokens x top_k] (may be NULL). */
void simpar_moe_rows(const SimparMoe *m, gint64 *rows, guint *experts);
/* The all-gather dispatcher (schedule.h, gather > 0): for each of the gather x tokens gathered
 * tokens (source p's the global tokens [token0 + p tokens, ...), each source's capacity drops its
 * own) and choices j, rows[i top_k + j] its row among the rank's experts' [E/ep x gather x
 * capacity], -1 when dropped or another rank's; the experts into experts[gather x tokens x
 * top_k] (may be NULL). */
void simpar_moe_gathered_rows(const SimparMoe *m, gint64 *rows, guint *experts);
/* The most choices of one rank's tokens that one expert gets (the dropless capacity). */
guint simpar_moe_max_load(const SimparMoe *m);

/* One MoE layer's MLP part on its own, for the executors: ep x etp ranks, `tokens` rows of x
 * each, the global tensors "x", "dy" (inputs), "router.weight" [h x E], "experts.fc1.weight"
 * [E h x fc1], "experts.fc2.weight" [E f_e x h], "shared.fc1.weight", "shared.fc2.weight" (when
 * the model has shared experts), and the outputs "y", "dx" and the weights' ".grad"s (router and
 * shared: partial sums over every rank; etp > 1: the experts' column blocks). capacity 0: from the
 * model's capacity factor, else dropless (the largest count the routing gives); else that many
 * rows. node_ranks > 0: DeepEP's hops (train.h, SIMPAR_MOE_DEEPEP) over nodes of that many ranks;
 * 0: Megatron's flat all-to-all. recompute: plan.h's module bits (simpar_plan_recompute_set):
 * moe runs the whole forward again, all-to-alls included, before the block's backward; moe_act
 * the routed experts' activation before fc2's backward; shared_experts the shared experts'
 * forward before their backward (ops "bwd.recompute.*", into the forward's buffers). (transfer
 * full); NULL and a SIMPAR_MODEL_ERROR when the split cannot be made. */
SimparSchedule *simpar_moe_block_build(const SimparModel *model, guint ep, guint etp,
                                       guint node_ranks, guint tokens, guint64 seed, guint capacity,
                                       guint recompute, GError **error);
/* The same block with Megatron-Core's all-gather dispatcher (the header's last diagram): the
 * same tensors and shards; capacity and recompute as above. Neither --moe-shared-expert-overlap
 * nor the merged pair (Megatron-Core runs neither with it). (transfer full) */
SimparSchedule *simpar_moe_gather_block_build(const SimparModel *model, guint ep, guint etp,
                                              guint tokens, guint64 seed, guint capacity,
                                              guint recompute, GError **error);
/* --overlap-moe-expert-parallel-comm (Megatron-Core's combined 1F1B) on the same block, for the
 * executors: two micro-batches on the same weights, the second's tensors named "mb1.x",
 * "mb1.dy", "mb1.y", "mb1.dx" and "mb1.<weight>.grad" (its own gradients); the first's forward
 * alone, then the second's forward merged with the first's backward in Megatron-Core's node
 * order (models/step-overlap.c), the all-to-alls on a second stream ("comm"), then the second's
 * backward. The flat all-to-all only (node_ranks 0), not with shared_overlap. (transfer full) */
SimparSchedule *simpar_moe_pair_build(const SimparModel *model, guint ep, guint etp, guint tokens,
                                      guint64 seed, guint capacity, GError **error);
/* DeepEP's hops (SIMPAR_MOE_DEEPEP, schedule.h): the ep ranks are nodes of node_ranks
 * consecutive ones. cap_node and cap_gpu of m (its routing, node_ranks and capacity set): the
 * most tokens one rank sends one node, and one rank forwards one GPU of its node, from the
 * routing of every rank's tokens. */
void simpar_moe_hop_capacity(SimparMoe *m);
/* DeepEP's group (SIMPAR_MOE_DEEPEP): its ranks, ep x etp (Megatron-Core's tp_ep group), and
 * the scores a hop's row carries, top_k x etp (each choice's once per expert-TP rank). */
guint simpar_moe_hop_ranks(const SimparMoe *m);
guint simpar_moe_hop_scores(const SimparMoe *m);
/* Hop m->hop at group rank m->ep_rank etp + m->etp_rank: for each row of its b side (schedule.h)
 * the a row it copies, -1 for padding, their count into *n_rows; hop 2: the token's choice of each
 * row's expert into choice[*n_rows] (may be NULL; rows without an a row left as they are). */
gint64 *simpar_moe_hop_map(const SimparMoe *m, guint *choice, gsize *n_rows);
/* The rows per (source rank, expert) a prediction gives the all-to-all's blocks and the grouped
 * GEMMs: ceil(T k / E cf) with a capacity factor, else the busiest expert's ceil(T k / E x
 * imbalance) (dropless: the routing's real counts are the executors' business). */
guint simpar_moe_capacity(const SimparModel *model, guint tokens);
/* Parameters of one MoE layer's MLP part on one of ep x etp ranks: the router [h x E], the
 * shared experts and the rank's 1/etp of its E/ep routed experts. */
double simpar_moe_rank_params(const SimparModel *model, gint64 ep, gint64 etp);
/* Of them, the rank's 1/etp of E/ep routed experts: the weights reduced over the
 * expert-data-parallel group (train.h). */
double simpar_moe_expert_params(const SimparModel *model, gint64 ep, gint64 etp);
/* The weights one token passes through in an MoE layer's MLP part: the router, the shared
 * experts and its top_k routed experts (the active parameters, for model FLOPs). */
double simpar_moe_active_params(const SimparModel *model);

G_END_DECLS
#endif /* SIMPAR_MOE_H */
