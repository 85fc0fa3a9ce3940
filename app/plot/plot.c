/* plot.c - the plot kinds' table, and the one place that runs gnuplot. */
#include "cli.h"
#include "plot-private.h"
#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

#ifndef SIMPAR_PLOTS_DIR
#define SIMPAR_PLOTS_DIR "plots"
#endif
#ifndef SIMPAR_PLOTS_INSTALLED
#define SIMPAR_PLOTS_INSTALLED "share/simpar/plots"
#endif
#ifndef SIMPAR_BINDIR
#define SIMPAR_BINDIR "bin"
#endif

G_DEFINE_QUARK(simpar_plot_error_quark, simpar_plot_error)

typedef struct {
    const char *name, *script, *input, *description;
    SimparPlotDataFunc data;
} SimparPlotKind;

static const SimparPlotKind plot_kinds[] = {
    {"scaling", "scaling.gp", "sweep CSV",
     "best step time and throughput against GPUs, one line per mode", simpar_plot_scaling_data},
    {"memory", "memory.gp", "sweep CSV",
     "memory per GPU against q (T for 1-D), one line per mode, and the device memory",
     simpar_plot_memory_data},
    {"breakdown", "breakdown.gp", "sweep CSV or predict/validate --json",
     "stacked bars: where the step goes, per configuration", simpar_plot_breakdown_data},
    {"validate", "validate.gp", "validate --json", "predicted against measured busy time per class",
     simpar_plot_validate_data},
    {"timeline", "timeline.gp", "Chrome trace (--trace)",
     "one step as a Gantt chart: a track per rank and stream", simpar_plot_timeline_data},
};

void
simpar_plot_options_init(SimparPlotOptions *opt)
{
    *opt = (SimparPlotOptions){.top = 12, .rank_first = 0, .rank_last = 15};
}

char *
simpar_plot_kinds_help(void)
{
    GString *out = g_string_new(NULL);
    for (guint i = 0; i < G_N_ELEMENTS(plot_kinds); i++)
        g_string_append_printf(out, "%s  %-10s %s\n  %-10s (input: %s)", i > 0 ? "\n" : "",
                               plot_kinds[i].name, plot_kinds[i].description, "",
                               plot_kinds[i].input);
    return g_string_free(out, FALSE); /* (transfer full) */
}

static const SimparPlotKind *
plot_kind_lookup(const char *name, GError **error)
{
    for (guint i = 0; i < G_N_ELEMENTS(plot_kinds); i++)
        if (g_str_equal(name, plot_kinds[i].name))
            return &plot_kinds[i];
    g_autoptr(GString) valid = g_string_new(NULL);
    for (guint i = 0; i < G_N_ELEMENTS(plot_kinds); i++)
        g_string_append_printf(valid, "%s%s", i > 0 ? ", " : "", plot_kinds[i].name);
    g_set_error(error, SIMPAR_CLI_ERROR, SIMPAR_CLI_ERROR_USAGE,
                "unknown plot kind '%s' (valid: %s)", name, valid->str);
    return NULL;
}

gboolean
simpar_plot_check_output(const char *output, GError **error)
{
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    if (!g_str_has_suffix(output, ".png") && !g_str_has_suffix(output, ".svg")) {
        g_set_error(error, SIMPAR_CLI_ERROR, SIMPAR_CLI_ERROR_USAGE,
                    "%s: the file name must end in .png or .svg", output);
        return FALSE;
    }
    for (const char *p = output; *p != '\0'; p++)
        if (g_ascii_iscntrl(*p)) {
            g_autofree char *shown = g_strescape(output, NULL);
            g_set_error(error, SIMPAR_CLI_ERROR, SIMPAR_CLI_ERROR_USAGE,
                        "%s: the file name holds a control character (byte 0x%02x)", shown,
                        (guchar) *p);
            return FALSE;
        }
    g_autofree char *gnuplot = g_find_program_in_path("gnuplot");
    if (gnuplot == NULL) {
        g_set_error(error, G_SPAWN_ERROR, G_SPAWN_ERROR_NOENT,
                    "%s: gnuplot is not installed (Debian, Ubuntu: apt-get install gnuplot-nox)",
                    output);
        return FALSE;
    }
    return TRUE;
}

/* ------------------------------------------------------------------------ out and variables */

void
simpar_plot_out_clear(SimparPlotOut *out)
{
    if (out->data != NULL)
        g_string_free(out->data, TRUE);
    if (out->vars != NULL)
        g_string_free(out->vars, TRUE);
    g_clear_pointer(&out->title, g_free);
    out->data = out->vars = NULL;
}

/* `s` as a gnuplot string expression that is only ever data: runs of plain characters between
 * single quotes (where gnuplot substitutes nothing: no backquotes, no macros, no escapes),
 * joined by '.' to "'" and "\n" for the quotes and newlines (a quote doubled inside single quotes
 * is misread where it follows the opening one, and a raw newline would end the command in a
 * script file). Other control characters become blanks; other bytes are kept (file names). */
static void
plot_append_quoted(GString *out, const char *s)
{
    gboolean open = FALSE, first = TRUE;
    for (const char *p = s; *p != '\0'; p++) {
        gboolean special = *p == '\'' || *p == '\n';
        if (open && special)
            g_string_append_c(out, '\'');
        if ((special || !open) && !first)
            g_string_append_c(out, '.');
        if (special)
            g_string_append(out, *p == '\'' ? "\"'\"" : "\"\\n\"");
        else
            g_string_append_printf(out, "%s%c", open ? "" : "'", g_ascii_iscntrl(*p) ? ' ' : *p);
        open = !special, first = FALSE;
    }
    g_string_append(out, open ? "'" : first ? "''" : "");
}

void
simpar_plot_var_string(SimparPlotOut *out, const char *name, const char *value)
{
    g_autofree char *valid = g_utf8_make_valid(value, -1); /* text cairo can draw */
    g_string_append_printf(out->vars, "%s=", name);
    plot_append_quoted(out->vars, valid);
    g_string_append(out->vars, "; ");
}

void
simpar_plot_var_number(SimparPlotOut *out, const char *name, double value)
{
    char buf[G_ASCII_DTOSTR_BUF_SIZE];
    g_assert(isfinite(value));
    g_string_append_printf(out->vars, "%s=%s; ", name,
                           g_ascii_formatd(buf, sizeof buf, "%.9g", value));
}

void
simpar_plot_var_series(SimparPlotOut *out, const char *const *names, guint n)
{
    simpar_plot_var_number(out, "n_series", n);
    for (guint i = 0; i < n; i++) {
        g_autofree char *name = g_strdup_printf("series_%u", i + 1);
        simpar_plot_var_string(out, name, names[i]);
    }
}

void
simpar_plot_append_label(GString *data, const char *label, glong max)
{
    g_autofree char *valid = g_utf8_make_valid(label, -1);
    glong n = g_utf8_strlen(valid, -1);
    g_autofree char *s = g_utf8_substring(valid, 0, MIN(n, max));
    for (char *p = s; *p != '\0'; p++)
        if (*p == '"' || g_ascii_iscntrl(*p))
            *p = ' ';
    g_string_append_printf(data, "\"%s%s\"", s, n > max ? "..." : "");
}

/* ------------------------------------------------------------------------------- gnuplot */

static gboolean
plot_spawn(const char *gnuplot, const char *vars_path, const char *script_path, const char *output,
           GError **error)
{
    const char *argv[] = {gnuplot, vars_path, script_path, NULL};
    g_autofree char *err = NULL;
    int status = 0;
    if (!g_spawn_sync(NULL, (char **) argv, NULL, G_SPAWN_STDOUT_TO_DEV_NULL, NULL, NULL, NULL,
                      &err, &status, error)) {
        g_prefix_error(error, "%s: gnuplot: ", output);
        return FALSE;
    }
    g_autoptr(GError) how = NULL; /* "exited with code 1", "killed by signal 11", ... */
    if (!g_spawn_check_wait_status(status, &how)) {
        g_strstrip(err);
        for (char *c = err; *c != '\0'; c++) /* one line */
            if (*c == '\n')
                *c = ' ';
        g_set_error(error, SIMPAR_PLOT_ERROR, SIMPAR_PLOT_ERROR_GNUPLOT,
                    "%s: gnuplot %s failed (%s): %s", output, script_path, how->message,
                    err[0] != '\0' ? err : "it printed nothing");
        return FALSE;
    }
    return TRUE;
}

/* The folder of the gnuplot scripts: $SIMPAR_PLOTS_DIR; else, for an installed simpar, the
 * scripts installed beside it (its folder, up as many levels as bindir has, then
 * datadir/simpar/plots: wherever the install was moved); else the source tree's plots/. */
static char *
plot_scripts_dir(const char *script)
{
    const char *env = g_getenv("SIMPAR_PLOTS_DIR");
    if (env != NULL)
        return g_strdup(env);
    g_autofree char *exe = g_file_read_link("/proc/self/exe", NULL);
    if (exe != NULL) {
        g_autofree char *dir = g_path_get_dirname(exe);
        g_auto(GStrv) parts = g_strsplit(SIMPAR_BINDIR, "/", -1);
        g_autoptr(GString) up = g_string_new(dir);
        for (guint i = 0; parts[i] != NULL; i++)
            if (parts[i][0] != '\0')
                g_string_append(up, "/..");
        g_autofree char *installed = g_path_is_absolute(SIMPAR_PLOTS_INSTALLED)
                                         ? g_strdup(SIMPAR_PLOTS_INSTALLED)
                                         : g_build_filename(up->str, SIMPAR_PLOTS_INSTALLED, NULL);
        g_autofree char *probe = g_build_filename(installed, script, NULL);
        if (g_file_test(probe, G_FILE_TEST_IS_REGULAR))
            return g_canonicalize_filename(installed, NULL);
    }
    return g_strdup(SIMPAR_PLOTS_DIR); /* (transfer full) */
}

/* Whether gnuplot's picture is whole: not empty, and a PNG it began ends with its IEND chunk,
 * an SVG with its closing tag (on a full disk gnuplot exits 0 with an empty or cut picture). */
static gboolean
plot_whole(const char *bytes, gsize len)
{
    static const char png[] = "\x89PNG\r\n\x1a\n", iend[] = "IEND\xae\x42\x60\x82";
    if (len == 0)
        return FALSE;
    if (len >= 8 && memcmp(bytes, png, 8) == 0)
        return len >= 8 + 12 && memcmp(bytes + len - 8, iend, 8) == 0;
    if (g_strstr_len(bytes, (gssize) MIN(len, 4096), "<svg") != NULL)
        return g_strstr_len(bytes + len - MIN(len, 256), (gssize) MIN(len, 256), "</svg>") != NULL;
    return TRUE;
}

/* gnuplot's picture `made` written to `output` (output.h). */
static gboolean
plot_move(const char *made, const char *output, GError **error)
{
    g_autofree char *bytes = NULL;
    gsize len;
    if (!simpar_file_read(made, SIMPAR_JSON_LARGE_MAX, &bytes, &len, error))
        return FALSE;
    if (!plot_whole(bytes, len)) {
        g_set_error(error, SIMPAR_PLOT_ERROR, SIMPAR_PLOT_ERROR_GNUPLOT,
                    "%s: gnuplot exited 0 but its picture is %s (%" G_GSIZE_FORMAT " bytes; a "
                    "full disk where it draws, %s?): nothing written",
                    output, len == 0 ? "empty" : "cut short", len, g_get_tmp_dir());
        return FALSE;
    }
    return simpar_output_write("picture", output, bytes, len, error);
}

/* Runs gnuplot on two files in a private folder: vars.gp, the assignments (string values
 * through plot_append_quoted, so that no input reaches gnuplot's parser as code, and no length
 * limit of a command-line argument applies), then the script, which reads plot.dat. Both paths
 * gnuplot opens are absolute: a name it would read as a pipe ("|cmd" for set output, "<cmd"
 * for a data file) or a home folder ("~") cannot arise. */
gboolean
simpar_plot_run(const char *script, const char *data, const char *vars, const char *output,
                GError **error)
{
    if (!simpar_plot_check_output(output, error))
        return FALSE;
    g_autofree char *made = g_dir_make_tmp("simpar-plot-XXXXXX", error);
    if (made == NULL)
        return FALSE;
    g_autofree char *dir = g_canonicalize_filename(made, NULL);
    g_autofree char *data_path = g_build_filename(dir, "plot.dat", NULL);
    g_autofree char *vars_path = g_build_filename(dir, "vars.gp", NULL);
    /* gnuplot writes into the private folder (its `set output` would follow a link); the
     * picture then goes into place as every output does (output.h) */
    const char *ext = g_str_has_suffix(output, ".svg") ? "svg" : "png";
    g_autofree char *out_name = g_strconcat("plot.", ext, NULL);
    g_autofree char *out_path = g_build_filename(dir, out_name, NULL);
    g_autofree char *plots = plot_scripts_dir(script);
    g_autofree char *script_rel = g_build_filename(plots, script, NULL);
    g_autofree char *script_path = g_canonicalize_filename(script_rel, NULL);
    g_autoptr(GString) all = g_string_new("datafile=");
    plot_append_quoted(all, data_path);
    g_string_append(all, "; outfile=");
    plot_append_quoted(all, out_path);
    g_string_append_printf(all, "; fmt='%s'; %s\n", ext, vars);
    g_autofree char *gnuplot = g_find_program_in_path("gnuplot");
    gboolean ok = g_file_set_contents(data_path, data, -1, error) &&
                  g_file_set_contents(vars_path, all->str, -1, error) &&
                  plot_spawn(gnuplot, vars_path, script_path, output, error) &&
                  plot_move(out_path, output, error);
    g_unlink(data_path);
    g_unlink(vars_path);
    g_unlink(out_path);
    g_rmdir(dir);
    return ok;
}

/* ------------------------------------------------------------------------------ the kinds */

/* Generated titles are cut into lines of at most this many characters, at spaces. */
#define PLOT_TITLE_LINE 95

/* A generated title in lines that fit the picture (transfer full). */
static char *
plot_wrap(const char *title)
{
    if (title == NULL)
        return NULL;
    GString *out = g_string_new(title);
    gsize line = 0, space = G_MAXSIZE;
    for (gsize i = 0; i < out->len; i++, line++) {
        if (out->str[i] == ' ')
            space = i;
        if (line >= PLOT_TITLE_LINE && space != G_MAXSIZE) {
            out->str[space] = '\n';
            line = i - space, space = G_MAXSIZE;
        }
    }
    return g_string_free(out, FALSE);
}

/* title_text: the options' title, else the generated one in lines. */
static void
plot_title(SimparPlotOut *out, const SimparPlotOptions *opt)
{
    g_autofree char *title = opt->title != NULL ? g_strdup(opt->title) : plot_wrap(out->title);
    simpar_plot_var_string(out, "title_text", title);
}

static gboolean
plot_prepare(const char *kind, const char *input, const SimparPlotOptions *opt,
             const SimparPlotKind **k, SimparPlotOut *out, GError **error)
{
    g_return_val_if_fail(kind != NULL && input != NULL, FALSE);
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    SimparPlotOptions defaults;
    simpar_plot_options_init(&defaults);
    if (opt == NULL)
        opt = &defaults;
    *k = plot_kind_lookup(kind, error);
    if (*k == NULL)
        return FALSE;
    *out = (SimparPlotOut){g_string_new(NULL), g_string_new(NULL), NULL};
    if (!(*k)->data(input, opt, out, error))
        return FALSE;
    plot_title(out, opt);
    return TRUE;
}

gboolean
simpar_plot_out_render(const char *script, SimparPlotOut *out, const SimparPlotOptions *opt,
                       const char *output, GError **error)
{
    plot_title(out, opt);
    return simpar_plot_run(script, out->data->str, out->vars->str, output, error);
}

char *
simpar_plot_data(const char *kind, const char *input, const SimparPlotOptions *opt, GError **error)
{
    const SimparPlotKind *k;
    SimparPlotOut out = {0};
    char *data = NULL;
    if (plot_prepare(kind, input, opt, &k, &out, error))
        data = g_strdup(out.data->str);
    simpar_plot_out_clear(&out);
    return data; /* (transfer full) */
}

gboolean
simpar_plot_render(const char *kind, const char *input, const char *output,
                   const SimparPlotOptions *opt, GError **error)
{
    g_return_val_if_fail(output != NULL, FALSE);
    const SimparPlotKind *k;
    SimparPlotOut out = {0};
    gboolean ok = simpar_plot_check_output(output, error) &&
                  plot_prepare(kind, input, opt, &k, &out, error) &&
                  simpar_plot_run(k->script, out.data->str, out.vars->str, output, error);
    simpar_plot_out_clear(&out);
    return ok;
}

/* ------------------------------------------------------------------------------- JSON input */

JsonNode *
simpar_plot_parse_json(const char *text, gssize len, const char *path, GError **error)
{
    g_autoptr(JsonParser) parser = json_parser_new();
    g_autoptr(GError) local = NULL;
    if (!simpar_json_parse(parser, text, len < 0 ? strlen(text) : (gsize) len, path, &local)) {
        g_set_error_literal(error, SIMPAR_PLOT_ERROR, SIMPAR_PLOT_ERROR_INPUT, local->message);
        return NULL;
    }
    JsonNode *root = json_parser_get_root(parser);
    if (root == NULL || (!JSON_NODE_HOLDS_OBJECT(root) && !JSON_NODE_HOLDS_ARRAY(root))) {
        g_set_error(error, SIMPAR_PLOT_ERROR, SIMPAR_PLOT_ERROR_INPUT,
                    "%s: expected a JSON object or array", path);
        return NULL;
    }
    return json_node_copy(root); /* (transfer full) */
}

/* A gzip'ed input (`--trace T.json.gz`), inflated to at most SIMPAR_JSON_LARGE_MAX bytes, as
 * a file of that size is read (transfer full, NUL-terminated); NULL naming the file. */
static char *
plot_gunzip(const char *text, gsize len, const char *path, gsize *out_len, GError **error)
{
    g_autoptr(GConverter) z = G_CONVERTER(g_zlib_decompressor_new(G_ZLIB_COMPRESSOR_FORMAT_GZIP));
    g_autoptr(GByteArray) out = g_byte_array_new();
    GConverterResult r = G_CONVERTER_CONVERTED;
    while (r != G_CONVERTER_FINISHED) {
        if (out->len > SIMPAR_JSON_LARGE_MAX) {
            g_set_error(error, SIMPAR_PLOT_ERROR, SIMPAR_PLOT_ERROR_INPUT,
                        "%s: inflates past %" G_GSIZE_FORMAT " bytes, the most simpar reads", path,
                        SIMPAR_JSON_LARGE_MAX);
            return NULL;
        }
        guint at = out->len;
        g_byte_array_set_size(out, at + (1 << 16));
        gsize read = 0, written = 0;
        g_autoptr(GError) local = NULL;
        r = g_converter_convert(z, text, len, out->data + at, 1 << 16, G_CONVERTER_INPUT_AT_END,
                                &read, &written, &local);
        g_byte_array_set_size(out, at + (guint) written);
        if (r == G_CONVERTER_ERROR) {
            g_set_error(error, SIMPAR_PLOT_ERROR, SIMPAR_PLOT_ERROR_INPUT,
                        "%s: not a whole gzip stream: %s", path, local->message);
            return NULL;
        }
        text += read, len -= read;
    }
    *out_len = out->len;
    g_byte_array_append(out, (const guint8 *) "", 1);
    return (char *) g_byte_array_free(g_steal_pointer(&out), FALSE);
}

JsonNode *
simpar_plot_load_json(const char *path, GError **error)
{
    g_autofree char *text = NULL;
    gsize len;
    if (!simpar_file_read(path, SIMPAR_JSON_LARGE_MAX, &text, &len, error))
        return NULL;
    if (len >= 2 && (guchar) text[0] == 0x1f && (guchar) text[1] == 0x8b) { /* gzip's magic */
        g_autofree char *gz = g_steal_pointer(&text);
        if ((text = plot_gunzip(gz, len, path, &len, error)) == NULL)
            return NULL;
    }
    return simpar_plot_parse_json(text, (gssize) len, path, error); /* (transfer full) */
}

const char *
simpar_plot_json_string(JsonObject *o, const char *key)
{
    JsonNode *n = json_object_get_member(o, key);
    return n != NULL && JSON_NODE_HOLDS_VALUE(n) && json_node_get_value_type(n) == G_TYPE_STRING
               ? json_node_get_string(n)
               : NULL;
}

double
simpar_plot_json_number(JsonObject *o, const char *key)
{
    JsonNode *n = json_object_get_member(o, key);
    if (n == NULL || !JSON_NODE_HOLDS_VALUE(n))
        return NAN;
    GType t = json_node_get_value_type(n);
    return t == G_TYPE_DOUBLE || t == G_TYPE_INT64 ? json_node_get_double(n) : NAN;
}
