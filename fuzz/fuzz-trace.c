/* fuzz-trace.c - the Chrome-trace reader of `simpar plot timeline` (simpar_plot_timeline_data,
 * app/plot/plot-timeline.c), with every rank and with ranks 1..3. What it hands to gnuplot is
 * checked to be data only:
 *
 *   .dat   each line a comment, blank, or numbers followed by at most one label between double
 *          quotes with no quote or control character inside;
 *   vars   name=value; pairs whose values are numbers or string expressions built only of
 *          'runs without a quote or newline', "'" and "\n" joined by '.'.
 *
 * A string from the trace that escaped either form could reach gnuplot's parser as code. */
#include "fuzz.h"
#include "plot-private.h"
#include <string.h>

/* A line of the .dat text: numbers, then at most one "label". */
static void
fuzz_check_data_line(const char *line)
{
    if (line[0] == '#' || line[0] == '\0')
        return;
    const char *q = strchr(line, '"');
    for (const char *p = line; q != NULL ? p < q : *p != '\0'; p++)
        g_assert(g_ascii_isdigit(*p) || strchr(" .-+eEinfaINFA", *p) != NULL);
    if (q == NULL)
        return;
    const char *end = strchr(q + 1, '"');
    g_assert(end != NULL && end[1] == '\0');
    for (const char *p = q + 1; p < end; p++)
        g_assert(!g_ascii_iscntrl(*p));
}

/* One string expression at `p`; returns the character after it. */
static const char *
fuzz_check_string(const char *p)
{
    for (;;) {
        if (g_str_has_prefix(p, "\"'\"") || g_str_has_prefix(p, "\"\\n\"")) {
            p += p[1] == '\'' ? 3 : 4;
        } else {
            g_assert(*p == '\'');
            const char *end = strchr(p + 1, '\'');
            g_assert(end != NULL);
            for (const char *c = p + 1; c < end; c++)
                g_assert(*c != '\n' && *c != '\r');
            p = end + 1;
        }
        if (*p != '.')
            return p;
        p++;
    }
}

static void
fuzz_check_vars(const char *vars)
{
    for (const char *p = vars; *p != '\0';) {
        const char *eq = strchr(p, '=');
        g_assert(eq != NULL);
        for (const char *c = p; c < eq; c++)
            g_assert(g_ascii_isalnum(*c) || *c == '_');
        p = eq + 1;
        if (*p == '\'' || *p == '"')
            p = fuzz_check_string(p);
        else
            while (*p != ';' && *p != '\0') {
                g_assert(g_ascii_isdigit(*p) || strchr(".-+e", *p) != NULL);
                p++;
            }
        g_assert(g_str_has_prefix(p, "; "));
        p += 2;
    }
}

static void
fuzz_timeline(const char *path, guint first, guint last)
{
    SimparPlotOptions opt;
    simpar_plot_options_init(&opt);
    opt.rank_first = first, opt.rank_last = last;
    SimparPlotOut out = {g_string_new(NULL), g_string_new(NULL), NULL};
    g_autoptr(GError) error = NULL;
    if (simpar_plot_timeline_data(path, &opt, &out, &error)) {
        g_assert(error == NULL && out.title != NULL);
        simpar_plot_var_string(&out, "title_text", out.title);
        g_auto(GStrv) lines = g_strsplit(out.data->str, "\n", -1);
        for (guint i = 0; lines[i] != NULL; i++)
            fuzz_check_data_line(lines[i]);
        fuzz_check_vars(out.vars->str);
    } else {
        g_assert(error != NULL);
    }
    simpar_plot_out_clear(&out);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_file(data, size);
    fuzz_timeline(path, 0, G_MAXUINT);
    fuzz_timeline(path, 1, 3);
    return 0;
}
