/* reference-layer.h - a serial, double-precision oracle for one pre-LN transformer layer.
 *
 * The distributed schedules of models/ are checked against this file: it computes the forward
 * and backward pass of one layer with plain loops and shares nothing with the project except
 * simpar_dropout_keep() (models/schedule.h), so that masks agree element for element.
 *
 *   x -> LN1 -> qkv -> attention(+drop) -> proj -> drop --(+x)--> r1
 *   r1 -> LN2 -> fc1 -> gelu -> fc2 -> drop --(+r1)--> y
 *   dy -> (chain rule) -> dx and every parameter's gradient
 *
 * Rows are tokens (row r = sequence n * s + position i), arrays are row-major, weights are
 * stored [in x out] (y = x.W + b). The qkv columns are head-major: head g owns columns
 * [g*3dh, (g+1)*3dh) as q | k | v, dh = h/a. With kv < a key/value heads (grouped-query
 * attention) the a heads form kv groups of r = a/kv consecutive heads; group G owns columns
 * [G(r+2)dh, (G+1)(r+2)dh) as the q of its r heads | k | v, which its heads share.
 * Variants: SwiGLU (fc1 is [h x 2f], its column 2c the gate and 2c+1 the up value of column c
 * of the [rows x f] activation silu(gate) * up) and RMSNorm (z / sqrt(mean(z^2) + eps) * gamma;
 * the betas are then empty tensors, 1 x 0).
 * Multi-head latent attention (kv_lora > 0; no biases in its projections, its norms the
 * layer's kind): qkv is made, not projected: u -> q_down [h x q_lora] -> norm -> q_up
 * [q_lora x a (dn + dpe)] gives head g's query in columns [g (dn + dpe), (g+1) (dn + dpe));
 * u -> kv_down [h x (kv_lora + dpe)], whose first kv_lora columns -> norm -> kv_up
 * [kv_lora x a (dn + dv)] give head g's key columns [g (dn + dv), + dn) and value columns
 * [g (dn + dv) + dn, (g+1) (dn + dv)); every head's key ends with kv_down's last dpe columns.
 * The heads' q | k | v are (dn + dpe) | (dn + dpe) | dv wide, scores are scaled by
 * 1/sqrt(dn + dpe), ctx is [rows x a dv] and proj [a dv x h]. The qkv tensors are then empty.
 * Context-parallel row order (cp = C > 1; s divisible by 2C): every sequence is cut into 2C
 * chunks of L = s/(2C) positions and rank c owns chunks c and 2C-1-c; the rows of x, dy, y and
 * dx are rank 0's (sequence by sequence, its two chunks in order), then rank 1's, ... Only
 * attention cares: it works on positions, whose rows this order gives.
 *
 * Ownership: the caller owns every tensor; ref_layer_run() reads the inputs and overwrites the
 * outputs (y, dx, all gradients) and keeps nothing.
 */
#ifndef SIMPAR_REFERENCE_LAYER_H
#define SIMPAR_REFERENCE_LAYER_H
#include <glib.h>
G_BEGIN_DECLS

typedef struct {
    guint b, s, h, a, f;     /* sequences, length, hidden, heads (dh below), FFN width */
    gboolean causal;         /* mask j > i in attention */
    double eps;              /* layer-norm epsilon */
    double p_hidden, p_attn; /* dropout probabilities (proj and fc2 / attention probabilities) */
    guint64 seed;            /* dropout seed */
    guint kv;                /* key/value heads (a % kv == 0); 0 = a */
    gboolean swiglu, rms;    /* SwiGLU instead of GeLU, RMSNorm instead of LayerNorm */
    guint cp;                /* rows in context-parallel order over cp ranks (0, 1: natural) */
    gboolean no_bias;        /* linears without biases: the biases are empty tensors, 1 x 0 */
    guint q_lora, kv_lora;   /* multi-head latent attention (kv_lora > 0): latent widths */
    guint dn, dpe, dv;       /* its heads' query/key columns without and with the shared key
                                part (dn + dpe), and value columns */
    guint dh;                /* without MLA, a head's columns; 0 = h/a */
} RefShape;

typedef enum {
    REF_X,
    REF_DY,
    REF_LN1_G,
    REF_LN1_B,
    REF_QKV_W,
    REF_QKV_B,
    REF_PROJ_W,
    REF_PROJ_B,
    REF_LN2_G,
    REF_LN2_B,
    REF_FC1_W,
    REF_FC1_B,
    REF_FC2_W,
    REF_FC2_B,
    REF_QD_W, /* multi-head latent attention's (empty tensors without it) */
    REF_QN_G,
    REF_QN_B,
    REF_QU_W,
    REF_KVD_W,
    REF_KVN_G,
    REF_KVN_B,
    REF_KVU_W,
    REF_N_INPUTS,
    REF_Y = REF_N_INPUTS,
    REF_DX,
    REF_LN1_G_GRAD,
    REF_LN1_B_GRAD,
    REF_QKV_W_GRAD,
    REF_QKV_B_GRAD,
    REF_PROJ_W_GRAD,
    REF_PROJ_B_GRAD,
    REF_LN2_G_GRAD,
    REF_LN2_B_GRAD,
    REF_FC1_W_GRAD,
    REF_FC1_B_GRAD,
    REF_FC2_W_GRAD,
    REF_FC2_B_GRAD,
    REF_QD_W_GRAD,
    REF_QN_G_GRAD,
    REF_QN_B_GRAD,
    REF_QU_W_GRAD,
    REF_KVD_W_GRAD,
    REF_KVN_G_GRAD,
    REF_KVN_B_GRAD,
    REF_KVU_W_GRAD,
    REF_N_TENSORS
} RefTensor;

const char *ref_tensor_name(RefTensor t); /* (transfer none) "x", "qkv.weight.grad", ... */
void ref_tensor_shape(const RefShape *shape, RefTensor t, guint64 *rows, guint64 *cols);
void ref_layer_run(const RefShape *shape, double *const t[REF_N_TENSORS]);
void ref_fill_random(double *a, gsize n, GRand *rng); /* uniform in [-1, 1) */
/* The layer's norms on their own, `rows` rows of h: out = (z - mean) rstd gamma + beta with the
 * rows' mean and rstd kept (RMSNorm: beta NULL, mean 0), and its backward from dout into dz and
 * the parameters' gradients (RMSNorm: dbeta NULL). */
void ref_ln_forward(const double *z, const double *gamma, const double *beta, double eps,
                    gsize rows, gsize h, double *out, double *mu, double *rstd);
void ref_ln_backward(const double *z, const double *mu, const double *rstd, const double *gamma,
                     const double *dout, gsize rows, gsize h, double *dz, double *dgamma,
                     double *dbeta);

G_END_DECLS
#endif /* SIMPAR_REFERENCE_LAYER_H */
