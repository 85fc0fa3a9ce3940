/* plot.h - pictures of simpar's outputs: gnuplot scripts in plots/ fed by C that reads the input.
 *
 *   INPUT (sweep CSV, predict/validate JSON, Chrome trace)
 *     -> read and aggregate (plot-sweep.c, plot-breakdown.c, plot-validate.c, plot-timeline.c)
 *     -> a whitespace-separated .dat file in a private temporary folder
 *     -> gnuplot -e "datafile=...; outfile=...; fmt='png'|'svg'; title_text=...; ..." KIND.gp
 *     -> OUT.png (pngcairo) or OUT.svg, chosen by the extension; the folder is removed
 *
 * Kinds: scaling, memory, breakdown, validate, timeline (simpar_plot_kinds_help() lists them
 * with their inputs). `simpar plot`, `simpar validate --plot` and any command that wants a picture
 * of its output call simpar_plot_render() or simpar_plot_validate(); simpar_plot_data() gives the
 * .dat text alone (the tests check the aggregation with it).
 *
 * Errors: a bad kind, option or output name is SIMPAR_CLI_ERROR_USAGE (exit 2); an input that
 * cannot be read or holds nothing to plot is SIMPAR_PLOT_ERROR (or the CSV or file error) naming
 * the file and the line or key; no gnuplot is G_SPAWN_ERROR_NOENT naming gnuplot-nox.
 */
#ifndef SIMPAR_PLOT_H
#define SIMPAR_PLOT_H
#include <json-glib/json-glib.h>
G_BEGIN_DECLS

#define SIMPAR_PLOT_ERROR (simpar_plot_error_quark())
GQuark simpar_plot_error_quark(void);

typedef enum {
    SIMPAR_PLOT_ERROR_INPUT,   /* the input is not what the kind reads: file and line or key */
    SIMPAR_PLOT_ERROR_EMPTY,   /* nothing to plot (no ok rows, no events on the chosen ranks) */
    SIMPAR_PLOT_ERROR_GNUPLOT, /* gnuplot ran and failed */
} SimparPlotError;

typedef struct {
    const char *title;           /* replaces the generated title; NULL: generated */
    guint top;                   /* breakdown of a sweep: the `top` best by rank (default 12) */
    guint rank_first, rank_last; /* timeline: the ranks drawn (--ranks) */
    gboolean ranks_given;        /* else: the first 16 ranks the trace holds of the mode */
    const GArray *ranks;         /* timeline: the ranks drawn where they leave gaps (guint,
                                    ascending), or NULL: rank_first..rank_last */
    const char *ranks_text;      /* those ranks as given (for messages), with `ranks` */
    const char *mode;            /* timeline: the mode (process prefix) drawn; NULL: the first */
} SimparPlotOptions;

void simpar_plot_options_init(SimparPlotOptions *opt);
/* One line per kind: "  name   input: what it shows". */
char *simpar_plot_kinds_help(void); /* (transfer full) */
/* FALSE unless `output` ends in .png or .svg and gnuplot is on PATH (checked before long work). */
gboolean simpar_plot_check_output(const char *output, GError **error);
/* The .dat text that `kind` would plot from `input`. */
char *simpar_plot_data(const char *kind, const char *input, const SimparPlotOptions *opt,
                       GError **error); /* (transfer full) */
/* Reads `input`, writes the picture of `kind` to `output` (.png or .svg); opt may be NULL. */
gboolean simpar_plot_render(const char *kind, const char *input, const char *output,
                            const SimparPlotOptions *opt, GError **error);
/* The timeline of each of `modes` in the Chrome trace `input` into outputs[i] (.png or .svg), the
 * trace read once for all of them (simpar --report). */
gboolean simpar_plot_timelines(const char *input, const char *const *modes,
                               const char *const *outputs, guint n, GError **error);
/* The predicted-against-measured plot of one `simpar validate --json` object. */
gboolean simpar_plot_validate(JsonObject *result, const char *title, const char *output,
                              GError **error);

G_END_DECLS
#endif /* SIMPAR_PLOT_H */
