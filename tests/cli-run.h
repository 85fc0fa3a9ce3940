/* cli-run.h - run the simpar binary from a test (path from SIMPAR_BIN, set by
 * tests/meson.build) and keep its exit status, stdout and stderr. */
#ifndef SIMPAR_CLI_RUN_H
#define SIMPAR_CLI_RUN_H
#include <glib.h>
#include <sys/wait.h>

typedef struct {
    int status;
    char *out, *err;
} SimparCliRun;

static inline SimparCliRun
simpar_cli_run(const char *args)
{
    g_autofree char *cmd = g_strdup_printf("%s %s", g_getenv("SIMPAR_BIN"), args);
    g_auto(GStrv) argv = NULL;
    g_assert(g_shell_parse_argv(cmd, NULL, &argv, NULL));
    SimparCliRun r = {0};
    int wait = 0;
    g_assert(
        g_spawn_sync(NULL, argv, NULL, G_SPAWN_DEFAULT, NULL, NULL, &r.out, &r.err, &wait, NULL));
    r.status = g_spawn_check_wait_status(wait, NULL) ? 0 : WEXITSTATUS(wait);
    return r;
}

static inline void
simpar_cli_run_clear(SimparCliRun *r)
{
    g_clear_pointer(&r->out, g_free);
    g_clear_pointer(&r->err, g_free);
}

#endif /* SIMPAR_CLI_RUN_H */
