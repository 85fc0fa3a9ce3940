/* cmd-plot.c - `simpar plot KIND INPUT -o OUT.png|OUT.svg`: re-renders any of simpar's plots from
 * its saved output (plot.c and plots/KIND.gp do the work).
 */
#include "cli-values.h"
#include "cli.h"
#include "plot.h"

static gint
plot_guint_cmp(gconstpointer a, gconstpointer b)
{
    guint x = *(const guint *) a, y = *(const guint *) b;
    return (x > y) - (x < y);
}

/* --ranks, a LIST of cli-values.h ("A..B", "A", "0,8..15"), into the options' ranks: their
 * range, and the list itself (ascending, once each, into `list`) where they leave gaps. */
static gboolean
plot_parse_ranks(const char *s, SimparPlotOptions *opt, GArray *list, GError **error)
{
    g_autoptr(GArray) given = g_array_new(FALSE, FALSE, sizeof(gint64));
    if (!simpar_cli_parse_list("--ranks", s, 0, G_MAXINT32, 1 << 20, SIMPAR_CLI_LIST_REPEATS_OK,
                               given, error))
        return FALSE;
    for (guint i = 0; i < given->len; i++) {
        guint v = (guint) g_array_index(given, gint64, i);
        g_array_append_val(list, v);
    }
    g_array_sort(list, plot_guint_cmp);
    guint first = g_array_index(list, guint, 0), last = g_array_index(list, guint, list->len - 1);
    opt->rank_first = first, opt->rank_last = last, opt->ranks_given = TRUE;
    if (last - first + 1 != list->len) /* gaps: drawn by the list */
        opt->ranks = list, opt->ranks_text = s;
    return TRUE;
}

static gboolean
plot_resolve(char **args, const char *output, gint64 top, const char *ranks, SimparPlotOptions *opt,
             GArray *list, GError **error)
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
    return ranks == NULL || plot_parse_ranks(ranks, opt, list, error);
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
         "Timeline: the ranks drawn, a list such as 0..15 or 0,8..15 (default the first 16 ranks "
         "the trace holds)",
         "LIST"},
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
    g_autoptr(GArray) list = g_array_new(FALSE, FALSE, sizeof(guint));
    if (!plot_resolve(args, output, top, ranks, &opt, list, error)) {
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
