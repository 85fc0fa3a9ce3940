/* calibrate-private.h - what cmd-calibrate.c and calibrate-tables.c share (private to app/).
 *
 * Tables: a GPU's bench made into the compute model's measured tables (calibrate-tables.c).
 * Ownership: a Tables owns its `gemm` array (simpar_calibrate_tables_clear).
 */
#ifndef SIMPAR_CALIBRATE_PRIVATE_H
#define SIMPAR_CALIBRATE_PRIVATE_H
#include "compute.h"
#include "measured.h"
#include <json-glib/json-glib.h>
G_BEGIN_DECLS

typedef struct {
    gboolean fitted, held; /* held: faster than the datasheet, kept at it */
    guint points;
    double bw_Bps, floor_s, rms;
} TablesClassFit;

typedef struct {
    GArray *gemm; /* SimparBenchGemm, less the overhead */
    double gemm_overhead_s, launch_s;
    guint gemm_held; /* rows held at the datasheet peak */
    guint gemm_zero; /* rows left out: run on zero-filled buffers */
    TablesClassFit classes[SIMPAR_KCLASS_N];
} Tables;

/* platform: --topology's GPU 0 (its peaks, bandwidth and launch_s), or NULL. */
void simpar_calibrate_tables(const SimparBench *b, const SimparGpu *platform, Tables *t);
void simpar_calibrate_tables_clear(Tables *t);
/* The members of CALIB.json: kernel_bw_<class>_Bps, gemm_table. */
void simpar_calibrate_tables_json(const Tables *t, JsonBuilder *jb);
void simpar_calibrate_tables_print(const Tables *t, GString *out);
/* Every figure within what the loaders accept (simpar_calibration_figure_check). */
gboolean simpar_calibrate_tables_check(const Tables *t, GError **error);

G_END_DECLS
#endif /* SIMPAR_CALIBRATE_PRIVATE_H */
