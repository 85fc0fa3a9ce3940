/* schedule.h - what every rank does, in order, on which stream, and what each op waits for.
 *
 * Generators (models/tp-*.c) build schedules; interpreters (exec/host.c, later the SimGrid and
 * analytic backends and the CUDA executor) run them. A schedule holds, for every rank:
 *   - buffers: named, per-rank arrays of elements (the interpreter chooses the element type;
 *     the dtype only sets byte counts);
 *   - ops in program (issue) order, each on one of the schedule's streams. An op starts when the
 *     previous op of its rank on the same stream and all of its deps (ops of the same rank) have
 *     finished. Collectives and send/recv additionally synchronise with their peers.
 *   - process groups: explicit lists of global ranks with an axis name ("tp", "row", "in", ...).
 *
 *   rank 0  compute: [LN] -> [GEMM qkv] -> [attn] -> [GEMM proj] -> [all-reduce tp] -> ...
 *           comm:                          [reduce-scatter dW in] ...   (deps on compute ops)
 *   rank 1  compute: [LN] -> [GEMM qkv] -> [attn] -> [GEMM proj] -> [all-reduce tp] -> ...
 *
 * Ops carry tensor semantics (shapes, buffers, offsets) so the host executor can run them with
 * real numbers. Collective counts follow NCCL: all-reduce/broadcast/reduce move `count` elements;
 * all-gather sends `count` and receives group_size*count; reduce-scatter sends group_size*count
 * and receives `count`; all-to-all sends and receives group_size blocks of `count`.
 * simpar_op_coll_elems() gives the "full buffer" size used in summaries (group_size*count for
 * all-gather, reduce-scatter and all-to-all; `count` otherwise).
 *
 * Ownership: a SimparSchedule owns its ops, buffers, groups and dep lists in flat arrays; callers
 * hold indices, never pointers kept across additions. Strings are interned.
 */
#ifndef SIMPAR_SCHEDULE_H
#define SIMPAR_SCHEDULE_H
#include "model.h"
#include <glib.h>
G_BEGIN_DECLS

/* When an op ran, or is predicted to run: seconds from the run's start. Every interpreter
 * reports its ops' times as one span per op (the backends' predictions, measured runs). */
typedef struct {
    double start, end;
} SimparSpan;

#define SIMPAR_SCHEDULE_ERROR (simpar_schedule_error_quark())
GQuark simpar_schedule_error_quark(void);

typedef enum {
    SIMPAR_SCHEDULE_ERROR_CYCLE,     /* ops can never all run: a dependency cycle or deadlock */
    SIMPAR_SCHEDULE_ERROR_MISMATCH,  /* group members call collectives in different order/size */
    SIMPAR_SCHEDULE_ERROR_UNMATCHED, /* a send without its recv, or the reverse */
    SIMPAR_SCHEDULE_ERROR_BOUNDS,    /* an op reads or writes past the end of a buffer */
    SIMPAR_SCHEDULE_ERROR_HAZARD,    /* two unordered ops touch the same bytes, one writes */
    SIMPAR_SCHEDULE_ERROR_INVALID,   /* an unknown kind, or a parameter no kernel can use */
} SimparScheduleError;

typedef enum {
    SIMPAR_PHASE_FORWARD,
    SIMPAR_PHASE_BACKWARD,
    SIMPAR_N_PHASES,
} SimparPhase;

typedef enum {
    SIMPAR_OP_GEMM,           /* c (+)= op(a) . op(b), batched with strides */
    SIMPAR_OP_LN_STATS,       /* out[0..rows) = sum_j x, out[rows..2rows) = sum_j x^2 */
    SIMPAR_OP_LN_APPLY,       /* xhat, rstd from x + stats over `hidden` columns; y = xhat*g+b */
    SIMPAR_OP_LN_BWD_STATS,   /* stats of dy*g and dy*g*xhat; dgamma, dbeta overwritten */
    SIMPAR_OP_LN_BWD_APPLY,   /* dx = rstd * (dy*g - mean(dy*g) - xhat * mean(dy*g*xhat)) */
    SIMPAR_OP_BIAS_ADD,       /* y[r][c] += bias[c] (in place) */
    SIMPAR_OP_BIAS_GRAD,      /* db[c] = sum_r dy[r][c] */
    SIMPAR_OP_GELU,           /* y = gelu(x), tanh approximation */
    SIMPAR_OP_GELU_BWD,       /* dx = dy * gelu'(x) */
    SIMPAR_OP_SWIGLU,         /* y = silu(gate) * up from interleaved (gate, up) column pairs */
    SIMPAR_OP_SWIGLU_BWD,     /* d(gate, up) from dy and the saved pairs */
    SIMPAR_OP_PACK_COLS,      /* groups of columns of a wider row, packed side by side */
    SIMPAR_OP_UNPACK_COLS,    /* the reverse: packed columns written back into the wider rows */
    SIMPAR_OP_DROPOUT,        /* y = x * keep(seed, site, global index) / (1-p) */
    SIMPAR_OP_DROPOUT_BWD,    /* dx = dy * keep(...) / (1-p) */
    SIMPAR_OP_ADD,            /* c = a + b, elementwise over rows*cols */
    SIMPAR_OP_ATTENTION,      /* softmax(QK^T/sqrt(dh), causal) . V per (sequence, head) */
    SIMPAR_OP_ATTENTION_BWD,  /* dQ, dK, dV from the saved probabilities */
    SIMPAR_OP_ATTN_BLOCK,     /* ring attention: one key block's output and log-sum-exp */
    SIMPAR_OP_ATTN_MERGE,     /* ring attention: a block's output merged into the running one */
    SIMPAR_OP_ATTN_BLOCK_BWD, /* ring attention: one key block's dQ and dK, dV, from the lse */
    SIMPAR_OP_COLLECTIVE,
    SIMPAR_OP_SEND,
    SIMPAR_OP_RECV,
    SIMPAR_OP_EMBED,            /* vocabulary-parallel embedding lookup (SimparVocab) */
    SIMPAR_OP_EMBED_BWD,        /* its backward: scatter-add into the table gradient */
    SIMPAR_OP_XENT_MAX,         /* vocabulary-parallel cross-entropy: local row maxima */
    SIMPAR_OP_XENT_FWD,         /* sums of exponentials and the target's logit */
    SIMPAR_OP_XENT_LOSS,        /* the loss from the reduced statistics (accumulated) */
    SIMPAR_OP_XENT_BWD,         /* d logits */
    SIMPAR_OP_ADAM,             /* mixed-precision Adam update of a parameter block (SimparAdam) */
    SIMPAR_OP_BLOCK,            /* an opaque span of compute whose time the interpreter is given */
    SIMPAR_OP_MOE_GATE,         /* mixture of experts (SimparMoe): the chosen experts' scores */
    SIMPAR_OP_MOE_GATE_BWD,     /* d logits from d scores */
    SIMPAR_OP_MOE_DISPATCH,     /* tokens permuted into the all-to-all's blocks, by expert */
    SIMPAR_OP_MOE_DISPATCH_BWD, /* their gradients summed back per token */
    SIMPAR_OP_MOE_COMBINE,      /* expert outputs un-permuted, weighted by score, summed */
    SIMPAR_OP_MOE_COMBINE_BWD,  /* d expert outputs and d scores */
    SIMPAR_OP_MOE_SORT,         /* received blocks [source][expert] -> [expert][source] */
    SIMPAR_OP_MOE_UNSORT,       /* the reverse */
    SIMPAR_OP_MOE_HOP,          /* DeepEP's dispatch, one hop: rows gathered by the routing */
    SIMPAR_OP_MOE_HOP_BWD,      /* its gradients scattered back and summed */
    SIMPAR_OP_MOE_HOP_REDUCE,   /* DeepEP's combine, one hop: the dispatch's rows summed back */
    SIMPAR_OP_MOE_HOP_REDUCE_BWD, /* its gradients gathered again */
    SIMPAR_OP_ZERO_GRAD, /* the gradient buffer set to zero before a step (SimparZeroGrad) */
    SIMPAR_N_OP_KINDS,
} SimparOpKind;

/* The class of an op kind, where simpar reports busy time per class (validate), in this order:
 * the compute classes, then collectives and point-to-point transfers. */
typedef enum {
    SIMPAR_OP_CLASS_GEMM,
    SIMPAR_OP_CLASS_ATTENTION,
    SIMPAR_OP_CLASS_KERNELS, /* layer norm, GeLU, SwiGLU, dropout, bias, add, packing, MoE */
    SIMPAR_OP_CLASS_EMBED_LOSS,
    SIMPAR_OP_CLASS_OPTIMIZER,
    SIMPAR_OP_CLASS_BLOCK,
    SIMPAR_OP_CLASS_COLLECTIVE,
    SIMPAR_OP_CLASS_P2P,
    SIMPAR_N_OP_CLASSES,
} SimparOpClass;

/* Kernel classes: every elementwise or row-wise kernel streams its bytes at its class's
 * measured fraction of the datasheet bandwidth (kernel_eff; 0: mem_eff). */
typedef enum {
    SIMPAR_KCLASS_STREAM,     /* add, bias add, copy, pack, embedding gather and scatter */
    SIMPAR_KCLASS_ACTIVATION, /* GeLU, SwiGLU and their backward */
    SIMPAR_KCLASS_DROPOUT,    /* dropout and its backward (the mask written or read) */
    SIMPAR_KCLASS_NORM,       /* layer norm and RMSNorm, bias gradient (row and column sums) */
    SIMPAR_KCLASS_SOFTMAX,    /* softmax, cross-entropy */
    SIMPAR_KCLASS_OPTIMIZER,  /* Adam, one multi-tensor kernel */
    SIMPAR_KCLASS_N,
} SimparKernelClass;

typedef enum {
    SIMPAR_COLL_ALL_REDUCE,
    SIMPAR_COLL_ALL_GATHER,
    SIMPAR_COLL_REDUCE_SCATTER,
    SIMPAR_COLL_BROADCAST,
    SIMPAR_COLL_REDUCE,
    SIMPAR_COLL_ALL_TO_ALL,
    SIMPAR_N_COLL_KINDS,
} SimparCollKind;

/* A place in a rank's buffer: the buffer index and an element offset into it. */
typedef struct {
    guint buf;
    gsize off;
} SimparView;

#define SIMPAR_NO_VIEW ((SimparView){G_MAXUINT, 0})

typedef struct {
    guint m, n, k, batch; /* per batch: c[m x n] = op(a)[m x k] . op(b)[k x n], row-major */
    gboolean trans_a;     /* a is stored [k x m] */
    gboolean trans_b;     /* b is stored [n x k] */
    gboolean accumulate;  /* c += instead of c = */
    gsize stride_a, stride_b, stride_c; /* elements between batch entries */
    SimparView a, b, c;
    guint fp8;      /* SimparFp8Recipe of a linear's GEMM run in FP8 (inputs cast by the recipe's
                       kernels, bf16 out; compute.c); 0: in the schedule's dtype */
    guint comm_sms; /* SMs that communication kernels hold while it runs (Transformer Engine's
                       userbuffers, --tp-comm-overlap): it runs on the GPU's other SMs */
    guint chunk;    /* --tp-comm-overlap: its index among the chunks a linear's GEMM is split in
                       (0: the first, or the whole GEMM); with FP8 the weight's cast and the
                       launches of the input's are the first chunk's (compute.c) */
} SimparGemm;

/* Elementwise and row-wise kernels on a local block x[rows x cols] (row-major, rows = tokens).
 *   LN_STATS       in0 x; out0 stats[2*rows]: stats[r] = sum_c x, stats[rows+r] = sum_c x^2.
 *   LN_APPLY       in0 x, in1 stats (sums over the whole row, i.e. after any all-reduce),
 *                  in2 gamma[cols], in3 beta[cols]; out0 y, out1 xhat[rows x cols], out2
 * rstd[rows]: mean = stats[r]/hidden, var = stats[rows+r]/hidden - mean^2, rstd = 1/sqrt(var+eps),
 * xhat = (x-mean)*rstd, y = xhat*gamma + beta. LN_BWD_STATS   in0 dy, in1 xhat, in2 gamma; out0
 * stats[2*rows]: stats[r] = sum_c dy*gamma, stats[rows+r] = sum_c dy*gamma*xhat; out1 dgamma[cols]
 * = sum_r dy*xhat, out2 dbeta[cols] = sum_r dy (both overwritten). LN_BWD_APPLY   in0 dy, in1 xhat,
 * in2 gamma, in3 rstd, in4 stats (whole-row sums); out0 dx = rstd*(dy*gamma - stats[r]/hidden -
 * xhat*stats[rows+r]/hidden). With `rms` (RMSNorm) the mean terms are 0: LN_APPLY takes
 * var = stats[rows+r]/hidden, xhat = x*rstd, y = xhat*gamma and has no in3; LN_BWD_STATS leaves
 * stats[r] 0 and has no out2; LN_BWD_APPLY drops stats[r]/hidden. LN_STATS is the same.
 *   BIAS_ADD       in0 bias[cols]; out0 y, updated in place: y += bias.
 *   BIAS_GRAD      in0 dy; out0 db[cols] = sum_r dy (overwritten).
 *   GELU           in0 x; out0 y = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
 *   GELU_BWD       in0 dy, in1 x; out0 dx = dy * gelu'(x).
 *   SWIGLU         in0 z[rows x 2cols], column 2c the gate g and 2c+1 the up value u of output
 *                  column c; out0 y[rows x cols] = silu(g) * u, silu(g) = g / (1 + exp(-g)).
 *   SWIGLU_BWD     in0 dy[rows x cols], in1 z[rows x 2cols]; out0 dz[rows x 2cols]:
 *                  dg = dy * u * silu'(g), du = dy * silu(g).
 *   PACK_COLS      in0 w[rows x ld]; out0 p[rows x cols], cols = groups * width:
 *                  p[r][g width + c] = w[r][offset + g stride + c] (context parallelism packs the
 *                  k and v columns of every key/value group to gather them).
 *   UNPACK_COLS    in0 p[rows x cols]; out0 w[rows x ld]: the same elements written back, the
 *                  other columns of w left as they are.
 *   DROPOUT        in0 x; out0 y = x * keep / (1-p), keep = simpar_dropout_keep(seed, site,
 *                  (row0 + r) * global_cols + col0 + c, p).
 *   DROPOUT_BWD    in0 dy; out0 dx = dy * keep / (1-p), same mask.
 *   ADD            in0 a, in1 b; out0 c = a + b (rows*cols elements; c may alias a or b). */
typedef struct {
    guint rows, cols;    /* local block, row-major, rows = tokens */
    SimparView in[5];    /* inputs, in the order documented per kind */
    SimparView out[3];   /* outputs */
    guint64 hidden;      /* LN: number of columns in the full (global) row */
    double eps;          /* LN epsilon */
    double p;            /* dropout probability */
    guint64 seed;        /* dropout seed */
    guint site;          /* dropout site (which dropout of the layer) */
    guint64 row0, col0;  /* global position of the local block (dropout masks) */
    guint64 global_cols; /* global row length (dropout masks) */
    gboolean rms;        /* LN_*: RMSNorm (no mean, no beta) */
    guint ld, groups, width, stride, offset; /* PACK_COLS / UNPACK_COLS */
} SimparKernel;

/* Context parallelism (cp = C > 1, Liu et al. ring attention; Llama 3's all-gather form): each
 * sequence of S tokens is cut into 2C chunks of L = S/(2C); rank c holds chunks c and 2C-1-c
 * (causal load balance), s = 2L rows per sequence: local row i sits at position
 * simpar_cp_position(C, c, L, i). The keys and values of every rank come gathered in in[3], kv
 * [C x nb*s x 2 nkv dh], rank j's rows in its own order, per group k | v; query row i sees key
 * (j, i') when its position is not past i's (causal). Backward: out[1] = dkv, same layout. */
guint64 simpar_cp_position(guint cp, guint rank, guint64 chunk, guint64 i);
/* Whether ops of `kind` carry a SimparAttention (u.attn); a SimparMoe (u.moe). */
gboolean simpar_op_is_attention(SimparOpKind kind);
gboolean simpar_op_is_moe(SimparOpKind kind);

/* Ring attention (--cp-mode ring, Liu et al. arXiv 2310.01889): the keys and values travel
 * around the C ranks one block at a time, each block attended as flash attention does, with
 * the row's log-sum-exp (lse) kept instead of probabilities.
 *   ATTN_BLOCK      in[0] qkv (q), in[3] kv block of rank kv_rank [nb*s x 2 nkv dh]; out[0]
 *                   o [nb*s x nh dh], the block's softmax-weighted values (0 where a row sees
 *                   none of its keys), out[1] lse [nb x nh x s] (-inf there).
 *   ATTN_MERGE      in[0] o_b, in[1] lse_b (a block's); out[0] o, out[1] lse updated in place:
 *                   lse' = log(e^lse + e^lse_b), o' = o e^(lse - lse') + o_b e^(lse_b - lse').
 *   ATTN_BLOCK_BWD  in[0] qkv, in[1] o (final), in[2] dctx, in[3] kv block, in[4] lse (final);
 *                   out[0] dqkv's q columns, out[1] dkv block [nb*s x 2 nkv dh]: the block's
 *                   share of dQ, dK, dV with P = e^(score - lse) and D = rowsum(dctx . o),
 *                   added (accumulate) or written. */

/* Attention core on a local block of whole sequences and whole heads, with nkv key/value heads
 * (grouped-query attention; nkv = 0 stands for nh): the nh query heads fall into nkv groups of
 * r = nh/nkv consecutive heads that share one key and one value head.
 * in[0] = qkv [nb*s x (nh + 2 nkv) dh], per group: q of its r heads | k | v (with r = 1: per
 * head q | k | v), out[0] = ctx [nb*s x nh*dh], out[1] = probabilities [nb x nh x s x s] saved
 * for backward. Backward: in[0] = qkv, in[1] = probs, in[2] = dctx; out[0] = dqkv (dk and dv
 * summed over the heads of their group). */
/* Multi-head latent attention (dv != 0; model.h, SimparMlaConfig) has the latent layout: in[0]
 * (and the backward's out[0]) holds three regions one after the other, rows = nb*s:
 *   q   [rows x nh dh]                 per head its query (dh = its nope columns | its dpe)
 *   kv  [rows x nh (dh - dpe + dv)]    per head its key's nope columns | its value
 *   pe  [rows x dpe]                   the last dpe columns of every head's key, shared
 * ctx (and dctx) is [rows x nh dv]; the backward's pe region sums every local head's share.
 * No key/value groups (nkv = 0) and no context parallelism. */
typedef struct {
    guint nb, nh, s, dh; /* dh: a head's query/key columns */
    guint dv;            /* a head's value columns: 0 for dh and the qkv layout above, else the
                            latent layout */
    guint dpe;           /* latent layout: the shared key columns */
    guint nkv;           /* key/value heads, 0 = nh */
    guint cp, cp_rank;   /* context parallelism: C (0 or 1: none) and this rank's index */
    gboolean causal;
    double p; /* attention-probability dropout */
    guint64 seed;
    guint64 batch0, head0; /* global index of the first local sequence / head */
    guint64 heads;         /* a: heads of the whole layer (dropout mask index) */
    guint kv_rank;         /* ring blocks: the context-parallel rank whose keys in[3] holds */
    gboolean accumulate;   /* ATTN_BLOCK_BWD: add into out[0], out[1] (else overwrite) */
    SimparView in[5];
    SimparView out[2];
    guint fp8; /* SimparFp8Recipe of an attention core run in FP8 (cuDNN's fused FP8 attention,
                  timed so under flash attention: compute.c); 0: in the schedule's dtype */
} SimparAttention;

typedef enum {
    SIMPAR_RED_SUM, /* the default (zero) */
    SIMPAR_RED_MAX,
} SimparRedOp;

typedef struct {
    SimparCollKind kind;
    guint group;
    gsize count; /* NCCL count, see the header comment */
    guint root;  /* index within the group (broadcast, reduce) */
    SimparView send, recv;
    SimparRedOp red; /* all-reduce, reduce, reduce-scatter */
} SimparColl;

/* Vocabulary-parallel embedding and cross-entropy (Megatron-LM): this rank holds vocabulary
 * rows [vocab0, vocab0 + vocab) of the table, or those columns of the logits. Token ids and
 * targets are stored as element values (whole numbers in [0, V)).
 *   EMBED      in0 tokens[rows], in1 table[vocab x cols]; out0 y[rows x cols] = table[id - vocab0]
 *              for ids in the slice, 0 otherwise (an all-reduce over the group adds the parts).
 *   EMBED_BWD  in0 tokens, in1 dy[rows x cols]; out0 dtable[id - vocab0] += dy[r] (accumulates).
 *   XENT_MAX   in0 logits[rows x vocab]; out0 max[rows] = max_c logits (then all-reduce MAX).
 *   XENT_FWD   in0 logits, in1 max (global), in2 targets[rows]; out0 stats[2*rows]:
 *              stats[r] = sum_c exp(logit - max), stats[rows + r] = the target's logit when the
 *              target is in the slice, else 0 (then all-reduce SUM).
 *   XENT_LOSS  in0 max, in1 stats (global); out0 loss[0] += scale * sum_r (log stats[r] + max[r]
 *              - stats[rows + r]).
 *   XENT_BWD   in0 logits, in1 max, in2 targets, in3 stats (global); out0 dlogits[rows x vocab] =
 *              scale * (exp(logit - max) / stats[r] - [vocab0 + c == target]). */
typedef struct {
    guint rows;            /* tokens */
    guint cols;            /* embedding width (EMBED, EMBED_BWD) */
    guint64 vocab0, vocab; /* this rank's slice of the vocabulary */
    double scale;          /* XENT_LOSS, XENT_BWD: usually 1 / (tokens of the global batch) */
    SimparView in[4];
    SimparView out[1];
} SimparVocab;

/* Adam (Kingma and Ba) on `count` elements with bias correction at step `step` (1-based):
 *   m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2; p -= lr (m / (1-b1^t)) / (sqrt(v / (1-b2^t)) + eps)
 *   (+ lr * weight_decay * p, decoupled, AdamW). Mixed precision keeps fp32 master weights,
 * momentum and variance (12 bytes per parameter) next to the 16-bit weights and gradients. */
typedef struct {
    gsize count;
    double lr, beta1, beta2, eps, weight_decay;
    guint step;
    SimparView param, grad, m, v;
} SimparAdam;

/* Mixture-of-experts routing with expert parallelism over `ep` ranks (models/moe.h): rank
 * `ep_rank` holds experts [ep_rank E/ep, (ep_rank + 1) E/ep) and `tokens` rows of the layer's
 * input, the global tokens [token0, token0 + tokens). Which top_k experts a token goes to is a
 * pure function of (seed, global token) (simpar_moe_choose); the scores weighting them are
 * computed from the router's logits. The all-to-all blocks hold `capacity` rows per (source
 * rank, expert): a token's choice past an expert's capacity is dropped, padding rows are zero.
 *   GATE          in0 logits [tokens x E]; out0 scores [tokens x top_k] of the chosen experts
 *                 (softmax or sigmoid of the logits, normalised over the chosen ones).
 *   GATE_BWD      in0 logits, in1 d scores; out0 d logits [tokens x E] (0 off the chosen).
 *   DISPATCH      in0 x [tokens x hidden]; out0 send [E x capacity x hidden], expert-major:
 *                 the i-th kept choice of expert e at row e capacity + i, the rest 0.
 *   DISPATCH_BWD  in0 d send; out0 dx [tokens x hidden]: each token's kept rows summed.
 *   COMBINE       in0 back [E x capacity x hidden] (send's layout), in1 scores; out0 y: the
 *                 token's kept rows weighted by their scores, summed.
 *   COMBINE_BWD   in0 dy, in1 scores, in2 back; out0 d back (0 on padding), out1 d scores.
 *   SORT          in0 [ep x E/ep x capacity x hidden] (blocks by source rank, then local
 *                 expert); out0 [E/ep x ep x capacity x hidden]. UNSORT: the reverse. With
 *                 expert tensor parallelism (etp > 1) the blocks are those of the etp x ep
 *                 sources the expert-TP group's all-gather joined: [etp ep x E/ep x ...].
 * The all-gather dispatcher (gather > 0: the gather = etp x ep ranks of the TP x EP group; moe.h)
 * keeps the routing in Megatron-Core's dense probs [tokens x E] (0 off the chosen experts) and
 * permutes the group's gathered tokens, source p's the global tokens [token0 + p tokens, ...):
 *   GATE, GATE_BWD  scores and d scores dense [tokens x E] (token0 the rank's own).
 *   DISPATCH      in0 the gathered x [gather x tokens x hidden]; out0 the rank's experts' rows
 *                 [E/ep x gather x capacity x hidden] (SORT's out0 layout: the i-th kept choice
 *                 of local expert e from source p at row (e gather + p) capacity + i, the rest 0;
 *                 the other ranks' experts' choices skipped).
 *   DISPATCH_BWD  in0 d rows; out0 d gathered x: each gathered token's local rows summed.
 *   COMBINE       in0 the rows, in1 the gathered probs [gather x tokens x E]; out0 [gather x
 *                 tokens x hidden]: each token's local kept rows weighted by their probs, summed.
 *   COMBINE_BWD   in0 d out0, in1 the gathered probs, in2 the rows; out0 d rows, out1 d gathered
 *                 probs (0 off the local kept choices).
 * DeepEP's hierarchical dispatch (node_ranks > 0: the G = ep x etp ranks of the TP x EP group,
 * rank ep_rank etp + etp_rank, are G / node_ranks nodes of node_ranks consecutive ranks; moe.h)
 * moves rows in three hops, `hop` 0 to 2, each from its "a" side to its "b" side
 * (simpar_moe_hop_map gives every b row its a row, -1: padding). A row carries its token and
 * its S = top_k x etp scores (simpar_moe_hop_scores: each choice's score once per expert-TP rank
 * of its expert, as Megatron-Core expands the routing map):
 *   hop 0  a: the tokens [tokens x hidden] and scores [tokens x top_k]; b: [nodes x cap_node x
 *          (hidden + S)], per target node the tokens with a kept choice there.
 *   hop 1  a: hop 0's b side as received over the rail [nodes x cap_node x (hidden + S)];
 *          b: [node_ranks x cap_gpu x (hidden + S)], per GPU of the node the rows going there.
 *   hop 2  a: hop 1's b side as received in the node [node_ranks x cap_gpu x (hidden + S)];
 *          b: the experts' rows [E/ep x G x capacity x hidden] (SORT's out0, sources in group
 *          rank order) and each row's score [E/ep x G x capacity].
 *   HOP            in0 (hop 0: and in1) the a side; out0 (hop 2: and out1) the b side.
 *   HOP_BWD        in0 (hop 2: and in1) d b side; out0 (hop 0: and out1) d a side, summed.
 *   HOP_REDUCE     in0 the b side's rows [.. x hidden] (hop 2: in1 their scores); out0 the a
 *                  side [.. x hidden]: each a row the sum of its b rows (hop 2: weighted).
 *   HOP_REDUCE_BWD in0 d a side (hop 2: in1 scores, in2 the rows); out0 d b side (hop 2: out1
 *                  d scores). */
typedef struct {
    guint tokens, hidden;
    guint experts, top_k;
    guint ep, ep_rank;
    guint etp;      /* SORT, UNSORT: expert tensor parallelism's etp x ep source blocks; 0 or 1: ep;
                       HOP*: the TP x EP group's etp (DeepEP's G = ep x etp ranks) */
    guint etp_rank; /* HOP*: the rank's expert-TP index: group rank ep_rank etp + etp_rank */
    guint gather;   /* the all-gather dispatcher's gathered sources (etp x ep); 0: the rank's own */
    guint capacity;
    guint groups, group_limit; /* node-limited routing: top_k within group_limit of groups */
    guint router;              /* SimparRouterScore */
    guint node_ranks;          /* DeepEP's hops: the group's ranks one node holds; 0: flat */
    guint hop;                 /* HOP*: which of the three */
    guint cap_node, cap_gpu;   /* HOP*: rows per (source, target node), (forwarder, target GPU) */
    guint64 seed;
    guint64 token0;
    SimparView in[3];
    SimparView out[2];
} SimparMoe;

/* A span of compute the schedule does not spell out (a whole layer forward in a step schedule
 * built from timed blocks): its time is `count` times the time the interpreter is given for
 * `key` (interned, e.g. "layer.fwd"); `flops` is for reports only. */
typedef struct {
    const char *key;
    guint count;
    double flops;
} SimparBlockOp;

/* The rank's gradient buffer set to zero at the start of a step built from timed blocks
 * (models/step.c: Megatron-Core's DistributedDataParallel.zero_grad_buffer): `count` gradients of
 * `elem_bytes` bytes each, written once. A timed op like a block: no data (executable steps have
 * none; their buffers start at zero). */
typedef struct {
    gsize count;
    double elem_bytes;
} SimparZeroGrad;

typedef struct {
    guint peer; /* global rank */
    guint tag;
    gsize count;
    SimparView buf;
} SimparP2p;

typedef struct {
    SimparOpKind kind;
    guint rank;
    guint stream;
    SimparPhase phase;
    const char *name; /* interned, e.g. "fwd.qkv.gemm" */
    guint dep_first, n_deps;

    union {
        SimparGemm gemm;
        SimparKernel kern;
        SimparAttention attn;
        SimparColl coll;
        SimparP2p p2p;
        SimparVocab vocab;
        SimparAdam adam;
        SimparBlockOp block;
        SimparMoe moe;
        SimparZeroGrad zero;
    } u;
} SimparOp;

typedef struct {
    const char *axis; /* interned, e.g. "row" */
    guint size;
    guint first;   /* into the schedule's member array */
    guint step;    /* members[i] = members[0] + i * step, or 0 when they do not step evenly */
    gboolean idle; /* its collectives are latency-bound scalars (the optimizer's, models/step.c):
                      every backend times them at their closed form on an idle network, moving
                      no flows (simpar_schedule_set_group_idle) */
} SimparGroup;

typedef struct {
    const char *name; /* interned */
    guint rank;
    gsize elems;
} SimparBuffer;

/* Where a rank keeps a block of a named global tensor ("x", "qkv.weight", "qkv.weight.grad"):
 * the local buffer holds rows x cols of the global matrix starting at (row0, col0), row-major.
 * Inputs are filled by whoever runs the schedule; outputs are what it computes. A block held by
 * several ranks (replicated) has one shard per rank. */
typedef enum {
    SIMPAR_SHARD_INPUT,
    SIMPAR_SHARD_OUTPUT,
    SIMPAR_SHARD_PARTIAL, /* an output whose value is the sum of this block over the ranks of
                           * `sum_group` (context parallelism's weight gradients, summed by the
                           * step's data-parallel reduction) */
} SimparShardRole;

typedef struct {
    const char *tensor; /* interned */
    SimparShardRole role;
    guint rank;
    SimparView view;
    guint64 row0, rows, col0, cols;
    guint sum_group; /* PARTIAL: the group over which the blocks sum */
} SimparShard;

typedef struct _SimparSchedule SimparSchedule;

SimparSchedule *simpar_schedule_new(guint n_ranks, SimparDtype dtype); /* (transfer full) */
void simpar_schedule_free(SimparSchedule *sched);
guint simpar_schedule_n_ranks(const SimparSchedule *sched);
SimparDtype simpar_schedule_dtype(const SimparSchedule *sched);
/* Marks every GEMM of the schedule as run in FP8 by `recipe` (a SimparFp8Recipe; a layer of an
 * FP8 model: all its GEMMs are the linears'), and with `attention` its attention cores too. */
void simpar_schedule_set_fp8(SimparSchedule *sched, guint recipe, gboolean attention);

guint simpar_schedule_add_stream(SimparSchedule *sched, const char *name);
guint simpar_schedule_add_buffer(SimparSchedule *sched, guint rank, const char *name, gsize elems);
/* A buffer for a generator that replays forward ops in a backward (recomputation): with `kept`
 * (the forward's buffers in the order made; NULL when none are kept) and `replay`, the kept
 * buffer at *next, which must have this name and size (the forward is replayed), *next advanced;
 * otherwise a new buffer, appended to `kept` when `forward`. */
guint simpar_schedule_replay_buffer(SimparSchedule *sched, guint rank, const char *name,
                                    gsize elems, GArray *kept, gboolean forward, gboolean replay,
                                    guint *next);
guint simpar_schedule_add_group(SimparSchedule *sched, const char *axis, const guint *ranks,
                                guint size);
/* Marks `group`'s collectives as latency-bound scalars (SimparGroup.idle). */
void simpar_schedule_set_group_idle(SimparSchedule *sched, guint group);
/* Appends `op` (its rank, stream, kind and payload set by the caller); returns its index. */
guint simpar_schedule_add_op(SimparSchedule *sched, const SimparOp *op);
/* `op` waits for `first`, an earlier op of the same rank (usually on another stream). */
void simpar_schedule_add_dep(SimparSchedule *sched, guint op, guint first);

void simpar_schedule_add_shard(SimparSchedule *sched, const SimparShard *shard);
/* The first shard of `tensor` on `rank`, or NULL. */
const SimparShard *simpar_schedule_find_shard(const SimparSchedule *sched, guint rank,
                                              const char *tensor); /* (transfer none) */
const SimparShard *simpar_schedule_shards(const SimparSchedule *sched,
                                          guint *n); /* (transfer none) */

/* Facts of one rank of a layer schedule, from its input shards. */
typedef struct {
    gsize act_elems;     /* its block of the residual stream "x" (what a pipeline stage sends) */
    gsize layer_params;  /* parameters of one layer it holds (the inputs other than x and dy) */
    gsize expert_params; /* of them, the routed experts' ("moe.experts"): an MoE layer's
                          * weights reduced over the expert-data-parallel group (train.h) */
} SimparRankFacts;

/* Per rank of the layer schedule, in one pass over its shards. */
SimparRankFacts *simpar_schedule_rank_facts(const SimparSchedule *sched); /* (transfer full) */

/* Read access: indices are stable, pointers are valid until the next addition. */
guint simpar_schedule_n_ops(const SimparSchedule *sched);
const SimparOp *simpar_schedule_op(const SimparSchedule *sched, guint i); /* (transfer none) */
const guint *simpar_schedule_deps(const SimparSchedule *sched, const SimparOp *op);
const guint *simpar_schedule_rank_ops(const SimparSchedule *sched, guint rank, guint *n);
guint simpar_schedule_n_buffers(const SimparSchedule *sched);
const SimparBuffer *simpar_schedule_buffer(const SimparSchedule *sched, guint i);
guint simpar_schedule_n_groups(const SimparSchedule *sched);
const SimparGroup *simpar_schedule_group(const SimparSchedule *sched, guint i);
const guint *simpar_schedule_group_ranks(const SimparSchedule *sched, guint group);
/* The first group holding both ranks a and b (a point-to-point transfer's axis), or G_MAXUINT. */
guint simpar_schedule_group_of_pair(const SimparSchedule *sched, guint a, guint b);
guint simpar_schedule_n_streams(const SimparSchedule *sched);
const char *simpar_schedule_stream_name(const SimparSchedule *sched, guint stream);

/* Index of `rank` inside `group`, or G_MAXUINT if it is not a member. */
guint simpar_group_index(const SimparSchedule *sched, guint group, guint rank);
/* Elements this member of a collective reads from `send` and writes to `recv`: NCCL counts, a
 * broadcast reads only the root's send and a reduce writes only the root's recv. */
void simpar_op_coll_counts(const SimparSchedule *sched, const SimparOp *op, gsize *send,
                           gsize *recv);
/* Full-buffer elements of a collective (see the header comment). */
gsize simpar_op_coll_elems(const SimparSchedule *sched, const SimparOp *op);
const char *simpar_coll_kind_name(SimparCollKind kind);
/* nccl-tests' bus-bandwidth factor of a kind for n ranks: all-reduce 2(n-1)/n; all-gather,
 * reduce-scatter and all-to-all (n-1)/n; broadcast and reduce 1. */
double simpar_coll_busbw_factor(SimparCollKind kind, guint n);
const char *simpar_op_kind_name(SimparOpKind kind);
/* The class of `kind` (its row in the op-kind table) and the class's name ("gemm", "attention",
 * "other kernels", "embedding + loss", "optimizer", "timed blocks", "collective", "p2p"). */
SimparOpClass simpar_op_class(SimparOpKind kind);
const char *simpar_op_class_name(SimparOpClass klass);
/* The class whose bandwidth a kernel of `kind` reaches (its row; SIMPAR_KCLASS_N: not a
 * kernel). */
SimparKernelClass simpar_kernel_class_of(SimparOpKind kind);

/* Each op (known kind, existing group it belongs to, usable parameters, every view it needs
 * present and inside a buffer of its rank), collective order/size/root per group, matched
 * send/recv, and that the whole schedule can run to completion (no cycle, no deadlock). Every
 * interpreter runs it first, so none of them checks ops again. */
gboolean simpar_schedule_check(const SimparSchedule *sched, GError **error);
/* Data races: every pair of ops of one rank that touch overlapping elements, one of them
 * writing, must be ordered by stream order and deps (what CUDA streams need). */
gboolean simpar_schedule_check_hazards(const SimparSchedule *sched, GError **error);

/* Dropout sites of a layer; the mask is a pure function of (seed, site, global element index). */
enum {
    SIMPAR_DROPOUT_ATTN = 0,
    SIMPAR_DROPOUT_PROJ = 1,
    SIMPAR_DROPOUT_FC2 = 2
};

gboolean simpar_dropout_keep(guint64 seed, guint site, guint64 index, double p);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(SimparSchedule, simpar_schedule_free)
G_END_DECLS
#endif /* SIMPAR_SCHEDULE_H */
