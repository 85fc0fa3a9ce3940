/* reference-moe.h - one mixture-of-experts MLP (router, routed experts, shared experts),
 * forward and backward, token by token in plain loops: the serial oracle of the MoE block's
 * schedule (models/moe.h).
 *
 * N tokens, each from x [N x h]; the token's experts are simpar_moe_choose's (the routing is
 * the model's definition, as a dropout mask is); a choice is kept when fewer than `capacity`
 * earlier tokens of its source rank (token / tokens_per_rank) chose that expert. Then
 *   y = sum over kept choices j of g_j expert_e(x) + shared(x),
 *   g = softmax of the chosen logits, or their sigmoids over the sum of them, logits = x Wr,
 *   expert_e(x) = act(x W1[e]) W2[e], W1[e] = rows [e h, (e + 1) h) of "experts.fc1.weight",
 * and the backward from dy through every weight (the scores' Jacobian written out).
 *
 * Tensors by name ("x", "router.weight", "experts.fc1.weight.grad", ...), each a global
 * row-major matrix; ref_moe_new allocates them (inputs random from `seed`, outputs zero).
 */
#ifndef SIMPAR_REFERENCE_MOE_H
#define SIMPAR_REFERENCE_MOE_H
#include "moe.h"
#include "reference-layer.h"

typedef struct {
    const char *name;
    guint64 rows, cols;
    double *data;
} RefMoeTensor;

typedef struct {
    SimparModel model;
    SimparMoe route; /* the block's routing: tokens per rank, ep, capacity, seed */
    guint64 n;       /* all tokens */
    GArray *tensors; /* RefMoeTensor, data owned */
    guint dropped;   /* choices past capacity, counted by the run */
} RefMoe;

RefMoe *ref_moe_new(const SimparModel *model, const SimparMoe *route, guint64 seed);
void ref_moe_free(RefMoe *ref);
/* The tensor of that name, or NULL. (transfer none) */
RefMoeTensor *ref_moe_tensor(RefMoe *ref, const char *name);
/* Fills every output from the inputs. */
void ref_moe_run(RefMoe *ref);
/* An MoE model's layer (reference-layer.h) with this block as its MLP, as Megatron-Core's
 * TransformerLayer runs it: r1 = the layer's attention part (the serial layer of t[] with fc2
 * zero, its y), u2 = the second norm of r1 (ln2's gamma and beta in t[]) into u2[], the block on
 * x = u2 and dy = t[dy], y = r1 + the block's y; backward dr1 = dy + the norm's backward of the
 * block's dx. t2[] gets t's inputs and every output: y, dx, the attention part's gradients
 * (the serial layer again from dr1) and ln2's. (t2's tensors transfer full.) */
void ref_moe_layer_run(RefMoe *ref, const RefShape *shape, double *t[REF_N_TENSORS],
                       double *t2[REF_N_TENSORS], double *u2);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(RefMoe, ref_moe_free)
#endif /* SIMPAR_REFERENCE_MOE_H */
