/* cmd-plot.c - `simpar plot KIND INPUT -o OUT.png|OUT.svg`: re-renders any of simpar's plots from
 * its saved output (plot.c and plots/KIND.gp do the work).
 */
#include "cli.h"
#include "plot.h"
#include <stdlib.h>

/* "A..B" or "A" into the options' rank range. */
static gboolean
plot_parse_ranks(const char *s, SimparPlotOptions *opt, GError **error)
{
    char *end;
    guint64 a = g_ascii_strtoull(s, &end, 10), b = a;
    gboolean ok = end != s && *s != '-';
    if (ok && g_str_has_prefix(end, "..")) {
        const char *second = end + 2;
        b = g_ascii_strtoull(second, &end, 10);
        ok = end != second && *second != '-';
    }
    if (!ok || *end != '\0' || a > b || b > G_MAXUINT) {
        g_set_error(error, SIMPAR_CLI_ERROR, SIMPAR_CLI_ERROR_USAGE,
                    "--ranks %s: expected A..B (first and last rank, A <= B) or one rank", s);
        return FALSE;
    }
    opt->rank_first = (guint) a, opt->rank_last = (guint) b, opt->ranks_given = TRUE;
    return TRUE;
}

static gboolean
plot_resolve(char **args, const char *output, gint64 top, const char *ranks, SimparPlotOptions *opt,
             GError **error)
{
    if (args == NULL || g_strv_length(args) != 2 || output == NULL) {
        g_set_error(error, SIMPAR_CLI_ERROR, SIMPAR_CLI_ERROR_USAGE,
                    "expected KIND INPUT -o OUT.png|OUT.svg (see simpar plot --help)");
        return FALSE;
    }
    if (top != G_MININT64 && (top < 1 || top > 1000)) {
        g_set_error(error, SIMPAR_CLI_ERROR, SIMPAR_CLI_ERROR_USAGE,
                    "--top %" G_GINT64_FORMAT ": must be 1 to 1000", top);
        return FALSE;
    }
    if (top != G_MININT64)
        opt->top = (guint) top;
    return ranks == NULL || plot_parse_ranks(ranks, opt, error);
}

static const char plot_summary[] =
    "Draws one of simpar's outputs as a picture with gnuplot (Debian: gnuplot-nox), PNG or SVG\n"
    "by the extension of -o. Kinds:\n";

gboolean
simpar_cmd_plot(int argc, char **argv, GError **error)
{
    g_auto(GStrv) args = NULL;
    g_autofree char *output = NULL, *title = NULL, *ranks = NULL, *mode = NULL;
    gint64 top = G_MININT64;
    const GOptionEntry entries[] = {
        {"output", 'o', 0, G_OPTION_ARG_FILENAME, &output, "The image to write: OUT.png or OUT.svg",
         "OUT"},
        {"title", 0, 0, G_OPTION_ARG_STRING, &title, "Replace the generated title", "TEXT"},
        {"top", 0, 0, G_OPTION_ARG_INT64, &top,
         "Breakdown of a sweep: the N best configurations by rank (default 12)", "N"},
        {"ranks", 0, 0, G_OPTION_ARG_STRING, &ranks,
         "Timeline: the ranks drawn (default the first 16 ranks the trace holds)", "A..B"},
        {"mode", 0, 0, G_OPTION_ARG_STRING, &mode,
         "Timeline: the mode of a trace that holds several (default the first)", "M"},
        {G_OPTION_REMAINING, 0, 0, G_OPTION_ARG_FILENAME_ARRAY, &args, NULL, "KIND INPUT"},
        G_OPTION_ENTRY_NULL,
    };
    g_autoptr(GOptionContext) ctx = g_option_context_new("- draw a simpar output");
    g_autofree char *kinds = simpar_plot_kinds_help();
    g_autofree char *summary = g_strconcat(plot_summary, kinds, NULL);
    g_option_context_set_summary(ctx, summary);
    g_option_context_add_main_entries(ctx, entries, NULL);
    SimparPlotOptions opt;
    simpar_plot_options_init(&opt);
    if (!simpar_cli_parse(ctx, "simpar plot", &argc, &argv, error))
        return FALSE;
    if (!plot_resolve(args, output, top, ranks, &opt, error)) {
        g_prefix_error(error, "simpar plot: ");
        return FALSE;
    }
    opt.title = title, opt.mode = mode;
    const SimparOutputName names[] = {{"-o", output, TRUE}, {args[0], args[1], FALSE}};
    if (!simpar_output_check("-o", output, "an image (.png or .svg)", error) ||
        !simpar_output_distinct(names, G_N_ELEMENTS(names), error)) {
        g_prefix_error(error, "simpar plot: ");
        return FALSE;
    }
    if (!simpar_plot_check_output(output, error)) {
        g_prefix_error(error, "simpar plot: -o ");
        return FALSE;
    }
    if (!simpar_plot_render(args[0], args[1], output, &opt, error)) {
        g_prefix_error(error, "simpar plot %s: ", args[0]);
        return FALSE;
    }
    return TRUE;
}
