/* main.c - the simpar command line: dispatch, and the only place that prints an error. */
#include "cli.h"
#include <errno.h>
#include <fcntl.h>
#include <locale.h>
#include <stdio.h>
#include <unistd.h>
#include <xbt/base.h> /* before simgrid/version.h, which needs its macros */

#include <simgrid/version.h>

/* `simpar --version`: simpar's version and the libraries it runs on. */
static gboolean
main_version(int argc, GError **error)
{
    if (argc > 2)
        return simpar_cli_usage(error, "simpar: --version takes no other argument");
    int major = 0, minor = 0, patch = 0;
    sg_version_get(&major, &minor, &patch);
    printf("simpar %s (SimGrid %d.%d.%d, GLib %u.%u.%u)\n", SIMPAR_VERSION, major, minor, patch,
           glib_major_version, glib_minor_version, glib_micro_version);
    return TRUE;
}

/* Descriptors 0-2 that were closed get /dev/null, read-only, before anything is opened: a file
 * simpar opens (a sweep's journal, a worker's reply) must never take their numbers and so
 * receive what is printed (a sweep with all three closed lost every row, silently), while a
 * write to a closed stdout still fails and is reported as lost output. */
static void
main_hold_std_fds(void)
{
    for (int fd = STDIN_FILENO; fd <= STDERR_FILENO; fd++)
        if (fcntl(fd, F_GETFD) < 0 && errno == EBADF) {
            int held = open("/dev/null", O_RDONLY | O_CLOEXEC);
            if (held >= 0 && held != fd) /* the lowest free number is fd's */
                close(held);
        }
}

int
main(int argc, char **argv)
{
    main_hold_std_fds();
    setlocale(LC_ALL, "C");
    g_autoptr(GError) error = NULL;
    gboolean ok = FALSE, found = FALSE;
    guint n_commands;
    const SimparCommand *commands = simpar_commands(&n_commands);
    if (argc > 1 && g_str_equal(argv[1], "--version")) {
        found = TRUE;
        ok = main_version(argc, &error);
    }
    for (guint i = 0; argc > 1 && !found && i < n_commands; i++) {
        if (g_str_equal(argv[1], commands[i].name)) {
            found = TRUE;
            argv[1] = argv[0]; /* the command sees "simpar" followed by its options */
            /* its usage line names it: GOption prints the program name */
            g_autofree char *name =
                g_strdup_printf(commands[i].run == simpar_cmd_predict ? "simpar [%s]" : "simpar %s",
                                commands[i].name);
            g_set_prgname(name);
            ok = commands[i].run(argc - 1, argv + 1, &error);
        }
    }
    if (!found && argc > 1 && argv[1][0] != '-') {
        g_autofree char *valid = simpar_cli_command_names();
        g_set_error(&error, SIMPAR_CLI_ERROR, SIMPAR_CLI_ERROR_USAGE,
                    "simpar: unknown command '%s' (valid: %s; or --topology FILE)", argv[1], valid);
    } else if (!found) {
        g_set_prgname("simpar [predict]");
        ok = simpar_cmd_predict(argc, argv, &error);
    }
    /* what was printed must have reached stdout: a full disk or a closed pipe is lost output */
    if (ok && (fflush(stdout) != 0 || ferror(stdout))) {
        int e = errno;
        g_set_error(&error, G_FILE_ERROR, g_file_error_from_errno(e),
                    "simpar: cannot write the output to stdout: %s", g_strerror(e));
        ok = FALSE;
    }
    if (!ok) {
        fprintf(stderr, "%s\n", error->message);
        return simpar_cli_exit_status(error);
    }
    return 0;
}
