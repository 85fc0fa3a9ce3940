/* main.c - the simpar command line: dispatch, and the only place that prints an error. */
#include "cli.h"
#include <locale.h>
#include <stdio.h>

static const struct {
    const char *name;
    gboolean (*run)(int argc, char **argv, GError **error);
} commands[] = {
    {"schedule", simpar_cmd_schedule},
    {"predict", simpar_cmd_predict},
    {"collective", simpar_cmd_collective},
    {"topology", simpar_cmd_topology},
    {"sweep", simpar_cmd_sweep},
    /* against what simpar-exec measured */
    {"validate", simpar_cmd_validate},
    {"calibrate", simpar_cmd_calibrate},
    {"plot", simpar_cmd_plot},
};

int
main(int argc, char **argv)
{
    setlocale(LC_ALL, "C");
    g_autoptr(GError) error = NULL;
    gboolean ok = FALSE, found = FALSE;
    for (guint i = 0; argc > 1 && i < G_N_ELEMENTS(commands); i++) {
        if (g_str_equal(argv[1], commands[i].name)) {
            found = TRUE;
            argv[1] = argv[0]; /* the command sees "simpar" followed by its options */
            ok = commands[i].run(argc - 1, argv + 1, &error);
        }
    }
    if (!found && argc > 1 && argv[1][0] != '-') {
        g_autoptr(GString) valid = g_string_new(NULL);
        for (guint i = 0; i < G_N_ELEMENTS(commands); i++)
            g_string_append_printf(valid, "%s%s", i > 0 ? ", " : "", commands[i].name);
        g_set_error(&error, SIMPAR_CLI_ERROR, SIMPAR_CLI_ERROR_USAGE,
                    "simpar: unknown command '%s' (valid: %s; or --topology FILE)", argv[1],
                    valid->str);
    } else if (!found) {
        ok = simpar_cmd_predict(argc, argv, &error);
    }
    if (!ok) {
        fprintf(stderr, "%s\n", error->message);
        return simpar_cli_exit_status(error);
    }
    return 0;
}
