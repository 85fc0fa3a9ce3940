/* platform.c - load a SimGrid platform after checking it is well-formed XML. */
#include "platform.h"
#include <errno.h>
#include <simgrid/engine.h>
#include <simgrid/host.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <xbt/log.h>

G_DEFINE_QUARK(simpar_platform_error_quark, simpar_platform_error)

static void
platform_start_element(GMarkupParseContext *ctx, const char *element, const char **names,
                       const char **values, gpointer data, GError **error)
{
    (void) names, (void) values, (void) error;
    gboolean *seen_root = data;
    if (g_markup_parse_context_get_element_stack(ctx)->next == NULL) /* the root element */
        *seen_root = g_str_equal(element, "platform");
}

static gboolean
platform_check_xml(const char *path, GError **error)
{
    g_autofree char *text = NULL;
    gsize len;
    if (!g_file_get_contents(path, &text, &len, error)) {
        g_prefix_error(error, "--topology: ");
        return FALSE;
    }
    gboolean root = FALSE;
    GMarkupParser parser = {platform_start_element, NULL, NULL, NULL, NULL};
    g_autoptr(GMarkupParseContext) ctx =
        g_markup_parse_context_new(&parser, G_MARKUP_IGNORE_QUALIFIED, &root, NULL);
    if (!g_markup_parse_context_parse(ctx, text, (gssize) len, error) ||
        !g_markup_parse_context_end_parse(ctx, error)) {
        g_prefix_error(error, "--topology %s: not well-formed XML: ", path);
        return FALSE;
    }
    if (!root) {
        g_set_error(error, SIMPAR_PLATFORM_ERROR, SIMPAR_PLATFORM_ERROR_INVALID,
                    "--topology %s: the root element must be <platform> (a SimGrid platform, "
                    "DTD 4.1)",
                    path);
        return FALSE;
    }
    return TRUE;
}

static guint
platform_gpus(void)
{
    sg_host_t *hosts = sg_host_list();
    guint n = 0;
    for (size_t i = 0; i < sg_host_count(); i++) {
        unsigned node, gpu;
        char tail;
        if (sscanf(sg_host_get_name(hosts[i]), "node%u-gpu%u%c", &node, &gpu, &tail) == 2)
            n++;
    }
    free(hosts);
    return n;
}

/* SimGrid's complaint, from its log lines on stderr ("... [xbt_exception/ERROR] Parse error ...").
 */
static char *
platform_simgrid_message(const char *log)
{
    g_auto(GStrv) lines = g_strsplit(log, "\n", -1);
    for (guint i = 0; lines[i] != NULL; i++) {
        const char *tag = strstr(lines[i], "ERROR] ");
        if (tag != NULL && strstr(tag, "Exiting now") == NULL)
            return g_strdup(tag + strlen("ERROR] "));
    }
    return g_strdup(log[0] != '\0' ? log : "it ended without a message");
}

static void
platform_child(const char *path, int out, int err)
{
    dup2(err, STDERR_FILENO);
    int argc = 1;
    char *argv[] = {(char *) "simpar", NULL};
    xbt_log_control_set("xbt_cfg.thres:warning");
    simgrid_init(&argc, argv);
    simgrid_load_platform(path);
    guint n = platform_gpus();
    _exit(write(out, &n, sizeof n) == sizeof n ? 0 : 1);
}

/* SimGrid ends the process on input it cannot use, so the platform is loaded in a child. */
static gboolean
platform_load_isolated(const char *path, guint *n_gpus, GError **error)
{
    int out[2], err[2];
    if (pipe(out) != 0 || pipe(err) != 0)
        g_error("pipe: %s", g_strerror(errno));
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0)
        g_error("fork: %s", g_strerror(errno));
    if (pid == 0)
        platform_child(path, out[1], err[1]);
    close(out[1]);
    close(err[1]);
    g_autoptr(GString) log = g_string_new(NULL);
    char buf[4096];
    ssize_t r;
    while ((r = read(err[0], buf, sizeof buf)) > 0)
        g_string_append_len(log, buf, r);
    gboolean got = read(out[0], n_gpus, sizeof *n_gpus) == sizeof *n_gpus;
    close(out[0]);
    close(err[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    if (got && WIFEXITED(status) && WEXITSTATUS(status) == 0)
        return TRUE;
    g_autofree char *msg = platform_simgrid_message(log->str);
    g_set_error(error, SIMPAR_PLATFORM_ERROR, SIMPAR_PLATFORM_ERROR_INVALID,
                "--topology %s: SimGrid cannot load this platform: %s", path, g_strstrip(msg));
    return FALSE;
}

gboolean
simpar_platform_count_gpus(const char *path, guint *n_gpus, GError **error)
{
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    if (!platform_check_xml(path, error) || !platform_load_isolated(path, n_gpus, error))
        return FALSE;
    if (*n_gpus == 0) {
        g_set_error(error, SIMPAR_PLATFORM_ERROR, SIMPAR_PLATFORM_ERROR_INVALID,
                    "--topology %s: no host is named node<N>-gpu<G>, so no GPU was found", path);
        return FALSE;
    }
    return TRUE;
}
