/* plot-private.h - what the plot kinds share (private to app/plot/plot*.c).
 *
 * Each kind is one data function (one file, or one section of plot-sweep.c) and one row of the
 * table in plot.c: it reads its input and fills a SimparPlotOut, the .dat text, the gnuplot
 * variables its script reads beyond datafile, outfile, fmt and title_text, and its default
 * title. plot.c writes the data to a private temporary folder and runs the script.
 *
 * Ownership: a SimparPlotOut owns its strings (simpar_plot_out_clear()).
 */
#ifndef SIMPAR_PLOT_PRIVATE_H
#define SIMPAR_PLOT_PRIVATE_H
#include "csv-table.h"
#include "plot.h"
G_BEGIN_DECLS

typedef struct {
    GString *data; /* the .dat text */
    GString *vars; /* gnuplot assignments: "name='value'; " */
    char *title;   /* the generated title */
} SimparPlotOut;

typedef gboolean (*SimparPlotDataFunc)(const char *input, const SimparPlotOptions *opt,
                                       SimparPlotOut *out, GError **error);

/* The characters of a label in a .dat file beyond which it is cut (and ends in "..."): a bar's
 * or point's label, a timeline track's name. */
#define SIMPAR_PLOT_LABEL_MAX 100
#define SIMPAR_PLOT_TRACK_MAX 40

void simpar_plot_out_clear(SimparPlotOut *out);
/* Appends name=value; to out->vars: a string as an expression gnuplot can only read as data
 * (runs between single quotes, joined to "'" and "\n"; any other control character a blank),
 * or a number. Nothing from an input may reach gnuplot any other way. */
void simpar_plot_var_string(SimparPlotOut *out, const char *name, const char *value);
void simpar_plot_var_number(SimparPlotOut *out, const char *name, double value);
/* Series names for the scripts: n_series=N; series_1='...'; ... */
void simpar_plot_var_series(SimparPlotOut *out, const char *const *names, guint n);
/* A label for a .dat file, which a script reads with ytic(), xtic() or `with labels`: between
 * double quotes, a '"' or control character made a blank, invalid UTF-8 made valid, cut at `max`
 * characters. */
void simpar_plot_append_label(GString *data, const char *label, glong max);
/* Sets title_text (opt->title, else out->title in lines) and runs plots/`script` on `out`. */
gboolean simpar_plot_out_render(const char *script, SimparPlotOut *out,
                                const SimparPlotOptions *opt, const char *output, GError **error);
/* Runs plots/`script` on `data` with `vars`, writing `output` (.png or .svg). */
gboolean simpar_plot_run(const char *script, const char *data, const char *vars, const char *output,
                         GError **error);

/* JSON inputs: a file's object or array (an error names the file); a member as a string (NULL
 * when absent or not a string) or a number (NaN when absent or not a number). */
JsonNode *simpar_plot_load_json(const char *path, GError **error); /* (transfer full) */
JsonNode *simpar_plot_parse_json(const char *text, gssize len, const char *path,
                                 GError **error);                    /* (transfer full) */
const char *simpar_plot_json_string(JsonObject *o, const char *key); /* (transfer none) */
double simpar_plot_json_number(JsonObject *o, const char *key);

/* A Chrome trace read as a stream (plot-trace.c): each element of its traceEvents array (or of
 * the top-level array) handed to `func` in turn, the fields simpar draws from copied out, valid
 * only during the call. Memory does not grow with the trace; a gzip'ed file is inflated on the
 * way. Errors name the file and the line; `func` returning FALSE (its error set) stops it. */
typedef struct {
    guint index;                 /* in traceEvents */
    gboolean object;             /* FALSE: the element is not an object (its fields are absent) */
    const char *ph, *name, *cat; /* NULL when absent or not a string */
    double pid, tid, ts, dur;    /* NaN when absent or not a number */
    const char *arg_name, *arg_axis; /* args.name and args.axis, NULL when absent */
} SimparTraceEvent;

typedef gboolean (*SimparTraceEventFunc)(const SimparTraceEvent *e, gpointer data, GError **error);
gboolean simpar_plot_trace_read(const char *path, SimparTraceEventFunc func, gpointer data,
                                GError **error);

/* Sweep CSV inputs (plot-sweep.c). The columns `names` of `csv` into `cols`, an error naming
 * the file and the first missing one. */
SimparCsv *simpar_plot_sweep_load(const char *path, GError **error); /* (transfer full) */
gboolean simpar_plot_sweep_columns(const SimparCsv *csv, const char *const *names, int *cols,
                                   guint n, GError **error);
/* The rows of `csv` whose status column says "ok", in file order. */
GArray *simpar_plot_sweep_ok_rows(const SimparCsv *csv, int status_col); /* (transfer full) */

gboolean simpar_plot_scaling_data(const char *input, const SimparPlotOptions *opt,
                                  SimparPlotOut *out, GError **error);
gboolean simpar_plot_memory_data(const char *input, const SimparPlotOptions *opt,
                                 SimparPlotOut *out, GError **error);
gboolean simpar_plot_breakdown_data(const char *input, const SimparPlotOptions *opt,
                                    SimparPlotOut *out, GError **error);
gboolean simpar_plot_validate_data(const char *input, const SimparPlotOptions *opt,
                                   SimparPlotOut *out, GError **error);
gboolean simpar_plot_timeline_data(const char *input, const SimparPlotOptions *opt,
                                   SimparPlotOut *out, GError **error);

G_END_DECLS
#endif /* SIMPAR_PLOT_PRIVATE_H */
