/* inputs.h - the input values of a measured run (simpar-exec --run), generated fast and in the
 * element type of the buffer that receives them.
 *
 * Every value is a pure function of (seed, tensor, global row, global column): replicated shards
 * agree, and the host executor (--check's reference, doubles) and the CUDA executor (each
 * buffer's own type) get the same numbers, the latter rounded once to nearest-even as the GPU's
 * own conversions round (cvt.rn: __double2bfloat16, __double2half, a cast to float).
 *
 *   tensor       kind         value (key from seed, tensor, row, column; splitmix64 uniforms)
 *   tokens,      id           floor(u * vocab), at most vocab - 1
 *   targets
 *   *.x, *.dy    activation   Box-Muller normal sqrt(-2 log u1) cos(2 pi u2)
 *   the others   weight       0.02 x that normal
 *
 *   simpar_inputs_fill(shards, type, buf)
 *     -> units of rows, one GThread per core pulling them
 *        -> fp64 (or ids): the reference formula, libm, one value at a time
 *        -> bf16, fp16, fp32: blocks of 256 columns: vectorisable polynomials for log and cos
 *           with an error bound, rounded to the type; a value whose bound straddles a rounding
 *           boundary of the type is computed again by the reference formula (a few in 10^5)
 *
 * So the fast path gives bit for bit what rounding the reference value gives, whatever the
 * polynomials' last bits. tests/test-inputs.c holds that over several tensors and types.
 */
#ifndef SIMPAR_INPUTS_H
#define SIMPAR_INPUTS_H
#include "model.h"
#include "schedule.h"
#include <glib.h>
G_BEGIN_DECLS

/* The reference: the value of element (r, c) of shard `sh` (local row and column), as a double. */
double simpar_inputs_value(const SimparShard *sh, guint64 seed, guint64 vocab, guint64 r,
                           guint64 c);

/* Every element of the `n` shards into `buf`, elements of `type` (a shard at its view's offset,
 * rows x cols row-major); the others are left alone. On `threads` threads (0: one per core). */
void simpar_inputs_fill(const SimparShard *const *shards, guint n, guint64 seed, guint64 vocab,
                        SimparDtype type, void *buf, guint threads);

/* Zeros into the elements of [0, elems) of `buf` (elements of `type`) that none of the shards
 * covers (each rows x cols from its view's offset): with simpar_inputs_fill(), a reused array
 * holds exactly a buffer's inputs, its other elements zero. */
void simpar_inputs_zero_gaps(const SimparShard *const *shards, guint n, gsize elems,
                             SimparDtype type, void *buf);

/* (transfer full): `bytes` of zeros for simpar_inputs_fill(), in huge pages where the system
 * offers them (page faults cost more than the values on a large buffer), or NULL when the
 * memory cannot be had; free with simpar_inputs_free() and the same size. */
void *simpar_inputs_alloc(gsize bytes);
void simpar_inputs_free(void *values, gsize bytes);

/* A bench's values, element i of n: uniform in [0.5, 1.5), or whole numbers in [0, ids) when
 * ids > 0, from splitmix64(seed ^ splitmix64(i)); the CUDA executor's kernel computes the same. */
void simpar_inputs_random(double *dst, gsize n, guint64 seed, guint64 ids);

/* `x` rounded to nearest-even into `type` at element `i` of `dst` (fp16 and bf16 as their bits). */
void simpar_inputs_store(SimparDtype type, void *dst, gsize i, double x);

G_END_DECLS
#endif /* SIMPAR_INPUTS_H */
