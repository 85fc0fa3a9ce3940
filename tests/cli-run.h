/* cli-run.h - run the simpar binary from a test (path from SIMPAR_BIN, set by
 * tests/meson.build) and keep its exit status, stdout and stderr; a suite's temporary folder. */
#ifndef SIMPAR_CLI_RUN_H
#define SIMPAR_CLI_RUN_H
#include <glib.h>
#include <glib/gstdio.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

typedef struct {
    int status;
    char *out, *err;
} SimparCliRun;

/* `args` run by the binary named by the environment variable `bin`. */
static inline SimparCliRun
simpar_cli_run_bin(const char *bin, const char *args)
{
    g_autofree char *cmd = g_strdup_printf("%s %s", g_getenv(bin), args);
    g_auto(GStrv) argv = NULL;
    g_assert(g_shell_parse_argv(cmd, NULL, &argv, NULL));
    SimparCliRun r = {0};
    int wait = 0;
    g_assert(
        g_spawn_sync(NULL, argv, NULL, G_SPAWN_DEFAULT, NULL, NULL, &r.out, &r.err, &wait, NULL));
    r.status = g_spawn_check_wait_status(wait, NULL) ? 0 : WEXITSTATUS(wait);
    return r;
}

static inline SimparCliRun
simpar_cli_run(const char *args)
{
    return simpar_cli_run_bin("SIMPAR_BIN", args);
}

static inline void
simpar_cli_run_clear(SimparCliRun *r)
{
    g_clear_pointer(&r->out, g_free);
    g_clear_pointer(&r->err, g_free);
}

/* TRUE when simpar `args` exits with `status`, prints nothing on stdout and one stderr line
 * containing `want`; otherwise prints what it got. */
static inline gboolean
simpar_cli_refused(const char *args, int status, const char *want)
{
    SimparCliRun r = simpar_cli_run(args);
    gboolean ok = r.status == status && strstr(r.err, want) != NULL && r.out[0] == '\0' &&
                  strchr(r.err, '\n') == r.err + strlen(r.err) - 1;
    if (!ok)
        printf("\n    simpar %s -> status %d (want %d), stderr: %s", args, r.status, status, r.err);
    simpar_cli_run_clear(&r);
    return ok;
}

/* Removes a suite's temporary folder (g_dir_make_tmp) and the files in it; frees `dir`. */
static inline void
simpar_test_tmpdir_remove(char *dir)
{
    g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
    const char *name;
    while (d != NULL && (name = g_dir_read_name(d)) != NULL) {
        g_autofree char *p = g_build_filename(dir, name, NULL);
        g_remove(p);
    }
    g_rmdir(dir);
    g_free(dir);
}

/* A suite's temporary folder: `tmpdir`, made by suite_init (from the g_dir_make_tmp template
 * `templ`) and removed with its files by suite_clean, and tmp_path(name), a file in it. */
#define SIMPAR_TEST_SUITE_TMPDIR(templ)                                                            \
    static char *tmpdir;                                                                           \
    static int suite_init(void)                                                                    \
    {                                                                                              \
        tmpdir = g_dir_make_tmp(templ, NULL);                                                      \
        return tmpdir == NULL;                                                                     \
    }                                                                                              \
    static int suite_clean(void)                                                                   \
    {                                                                                              \
        simpar_test_tmpdir_remove(tmpdir);                                                         \
        return 0;                                                                                  \
    }                                                                                              \
    static char *tmp_path(const char *name)                                                        \
    {                                                                                              \
        return g_build_filename(tmpdir, name, NULL); /* (transfer full) */                         \
    }

#endif /* SIMPAR_CLI_RUN_H */
