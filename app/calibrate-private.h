/* calibrate-private.h - what cmd-calibrate.c and calibrate-tables.c share (private to app/).
 *
 * Tables: a GPU's bench made into the compute model's measured tables (calibrate-tables.c).
 * Ownership: a Tables owns its `gemm` and `kernels` arrays (simpar_calibrate_tables_clear).
 */
#ifndef SIMPAR_CALIBRATE_PRIVATE_H
#define SIMPAR_CALIBRATE_PRIVATE_H
#include "compute.h"
#include "measured.h"
#include <json-glib/json-glib.h>
G_BEGIN_DECLS

/* One bandwidth fitted to a group of kernel rows (a class, or one op kind). timer_s: what the
 * bench adds to each of them (the fitted floor less the launch floor); rms: of launch_s +
 * bytes / bw_Bps on the rows less it; preset: the same of --topology's own figures (NAN
 * without it). */
typedef struct {
    gboolean fitted, held; /* held: faster than the datasheet, kept at it */
    guint points;
    double bw_Bps, timer_s, rms, preset;
    double scaled;  /* > 0: a class not measured, --topology's figure times this ratio */
    double floor_s; /* a kind's own fixed time beyond the launch: timer_s less the bench's timer */
    /* the relative error in the rows' summed time (less the timer), the calibration's and
     * --topology's (NAN: not known) */
    double time_err, preset_time_err;
} TablesFit;

/* The groups: the kernel classes, then every op kind. */
#define TABLES_GROUPS (SIMPAR_KCLASS_N + SIMPAR_N_OP_KINDS)

/* A bench kernel row of a streaming kind. */
typedef struct {
    SimparOpKind kind;
    double bytes, time_s;
} TablesKernel;

typedef struct {
    GArray *gemm;    /* SimparBenchGemm, less the overhead */
    GArray *kernels; /* TablesKernel */
    double gemm_overhead_s, launch_s;
    guint gemm_held;      /* rows held at the datasheet peak */
    guint gemm_zero;      /* rows left out: run on zero-filled buffers */
    guint gemm_timed_out; /* rows left out: less than TABLES_TIMER_SHARE times the timer */
    /* --topology's own GEMM figures on the rows kept: rms, median and largest relative error
     * (NAN without it) */
    double gemm_preset, gemm_preset_median, gemm_preset_max;
    /* each row predicted from the others (the table this calibration writes on --topology's
     * curve): median and largest relative error, NAN without --topology or with one row */
    double gemm_loo_median, gemm_loo_max;
    TablesFit fits[TABLES_GROUPS]; /* by class, then by op kind (SIMPAR_KCLASS_N + kind) */
    double kernel_timer_s;         /* the bench's timer on kernels: the least timer_s of a kind */
} Tables;

/* GSL's golden-section search (calibrate-gsl.c) of f over [*lo, *hi] from *x, until the interval
 * is below `tol` or `max_iter` iterations; *x the best point, [*lo, *hi] the last interval.
 * FALSE, nothing moved, when no point of the interval lies below both its ends. */
gboolean simpar_calibrate_golden(double (*f)(double x, void *data), gpointer data, double *lo,
                                 double *x, double *hi, double tol, guint max_iter);
/* GSL's Nelder-Mead (nmsimplex2) of f over k coordinates from x, with an initial simplex of
 * `step` along each, until its size is below `size_tol` or `max_iter` iterations: x the best
 * point, its cost returned (the start's when none was better). */
double simpar_calibrate_simplex(double (*f)(const double *x, guint k, void *data), gpointer data,
                                guint k, double *x, double step, double size_tol, guint max_iter);

/* platform: --topology's GPU 0 as predictions see it (its peaks, bandwidth, launch_s and
 * measured data), or NULL. */
void simpar_calibrate_tables(const SimparBench *b, const SimparGpu *platform, Tables *t);
void simpar_calibrate_tables_clear(Tables *t);
/* The members of CALIB.json: kernel_bw_<class>_Bps, kernel_bw_Bps, kernel_max_bytes,
 * kernel_floor_s, gemm_table. */
void simpar_calibrate_tables_json(const Tables *t, JsonBuilder *jb);
/* Members of CALIB.json's "fit": "gemm", "kernel_classes" and "kernel_kinds", each group's
 * rms relative error, the preset's on the same rows, the timer taken off and the rows. */
void simpar_calibrate_tables_json_fit(const Tables *t, JsonBuilder *jb);
void simpar_calibrate_tables_print(const Tables *t, GString *out);
/* Every figure within what the loaders accept (simpar_calibration_figure_check). */
gboolean simpar_calibrate_tables_check(const Tables *t, GError **error);

G_END_DECLS
#endif /* SIMPAR_CALIBRATE_PRIVATE_H */
