/* compute-private.h - what compute.c and compute-data.c share (private to models/). */
#ifndef SIMPAR_COMPUTE_PRIVATE_H
#define SIMPAR_COMPUTE_PRIVATE_H
#include "compute.h"
#include "model.h"
#include <json-glib/json-glib.h>
G_BEGIN_DECLS

typedef struct {
    SimparDtype dtype;
    double m, n, k, batch;
    gboolean ta, tb;
} GemmQuery;

/* The shape curve's time of a GEMM (compute.c), for the table's ratios; *floor: the fastest
 * the datasheet allows (a measurement below it is held at it). */
typedef double (*GemmCurve)(const void *ctx, double m, double n, double k, double batch,
                            double *floor);

/* The rows of dtype `dtype` in t (0 for NULL). */
guint gemm_table_count(const SimparGemmTable *t, SimparDtype dtype);
/* The measured-over-curve ratio at q (compute-data.c's header); FALSE when the table has no
 * row of q's dtype. The rows' own ratios depend on the curve alone, not on q: they are kept
 * for the last few curves, each known by `key` (key_len bytes: every figure the curve reads,
 * byte for byte), and worked out again for another key. */
gboolean gemm_table_ratio(const SimparGemmTable *t, const GemmQuery *q, GemmCurve curve,
                          const void *ctx, const void *key, gsize key_len, double *ratio);
/* A calibration file's "gemm_table" member: an array of {"dtype", "m", "n", "k", "batch",
 * "trans_a", "trans_b", "time_s"} objects. */
gboolean gemm_table_from_json(JsonNode *node, const char *path, const SimparGemmTable **out,
                              GError **error);
/* A calibration file's "kernel_bw_Bps" member: {"<op kind>": B/s, ...}, interned as
 * SIMPAR_N_OP_KINDS doubles (0 for a kind not given). */
gboolean kind_values_from_json(JsonNode *node, const char *path, const char *key, double min,
                               double max, const double **out, GError **error);

G_END_DECLS
#endif /* SIMPAR_COMPUTE_PRIVATE_H */
