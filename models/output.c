/* output.c - the one way simpar and simpar-exec write a file (output.h). */
#include "output.h"
#include <errno.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <sys/stat.h>
#include <unistd.h>

G_DEFINE_QUARK(simpar_output_error_quark, simpar_output_error)

struct _SimparOutput {
    char *flag, *path;
    char *tmp; /* the file being written, beside PATH */
    int fd;
};

/* Why `path` is no name to write, or NULL. */
static const char *
output_refusal(const char *path)
{
    GStatBuf st;
    gboolean there = path[0] != '\0' && g_lstat(path, &st) == 0;
    g_autofree char *dir = g_path_get_dirname(path);
    /* outputs are written beside and renamed over the path: a link would be replaced by a
     * file, a device node (/dev/null) too */
    return path[0] == '\0'                         ? "an empty name"
           : there && S_ISDIR(st.st_mode)          ? "a folder"
           : there && S_ISLNK(st.st_mode)          ? "a symbolic link (simpar writes regular "
                                                     "files only: give the path it points to)"
           : there && !S_ISREG(st.st_mode)         ? "not a regular file (a device, pipe or "
                                                     "socket)"
           : g_str_has_suffix(path, ".part")       ? "a sweep's journal's name (.part)"
           : !g_file_test(dir, G_FILE_TEST_IS_DIR) ? "its folder does not exist"
                                                   : NULL;
}

gboolean
simpar_output_check(const char *flag, const char *path, const char *what, GError **error)
{
    g_return_val_if_fail(flag != NULL && path != NULL, FALSE);
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    const char *why = output_refusal(path);
    if (why != NULL)
        g_set_error(error, SIMPAR_OUTPUT_ERROR, SIMPAR_OUTPUT_ERROR_REFUSED,
                    "%s '%s': %s (give the path of %s to write)", flag, path, why,
                    what != NULL ? what : "a regular file");
    return why == NULL;
}

/* Whether a and b name one file: the same canonical path, or the same inode. */
static gboolean
output_same(const char *a, const char *b)
{
    g_autofree char *ca = g_canonicalize_filename(a, NULL);
    g_autofree char *cb = g_canonicalize_filename(b, NULL);
    GStatBuf sa, sb;
    return g_str_equal(ca, cb) || (g_stat(a, &sa) == 0 && g_stat(b, &sb) == 0 &&
                                   sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino);
}

gboolean
simpar_output_distinct(const SimparOutputName *names, guint n, GError **error)
{
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    for (guint i = 0; i < n; i++)
        for (guint j = i + 1; j < n; j++) {
            const SimparOutputName *a = &names[i], *b = &names[j];
            if (a->path == NULL || b->path == NULL || (!a->output && !b->output) ||
                !output_same(a->path, b->path))
                continue;
            g_set_error(error, SIMPAR_OUTPUT_ERROR, SIMPAR_OUTPUT_ERROR_SAME,
                        "%s %s and %s %s name the same file: each output needs its own path, "
                        "apart from every input",
                        a->flag, a->path, b->flag, b->path);
            return FALSE;
        }
    return TRUE;
}

static gboolean
output_fail(SimparOutput *o, int e, const char *what, GError **error)
{
    g_set_error(error, G_FILE_ERROR, g_file_error_from_errno(e), "%s %s: %s: %s", o->flag, o->path,
                what, g_strerror(e));
    return FALSE;
}

SimparOutput *
simpar_output_open(const char *flag, const char *path, GError **error)
{
    if (!simpar_output_check(flag, path, NULL, error))
        return NULL;
    g_autofree char *dir = g_path_get_dirname(path);
    SimparOutput *o = g_new0(SimparOutput, 1);
    o->flag = g_strdup(flag), o->path = g_strdup(path);
    o->tmp = g_build_filename(dir, ".simpar-XXXXXX", NULL);
    /* O_CREAT | O_EXCL: a new file, never through a link; its mode 0666 less the umask */
    o->fd = g_mkstemp_full(o->tmp, O_WRONLY | O_CLOEXEC, 0666);
    if (o->fd < 0) {
        output_fail(o, errno, "cannot create a file in its folder", error);
        g_clear_pointer(&o->tmp, g_free);
        simpar_output_free(o);
        return NULL;
    }
    return o; /* (transfer full) */
}

gboolean
simpar_output_append(SimparOutput *o, const char *data, gsize len, GError **error)
{
    g_return_val_if_fail(o != NULL && o->fd >= 0, FALSE);
    while (len > 0) {
        ssize_t w = write(o->fd, data, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return output_fail(o, w < 0 ? errno : ENOSPC, "cannot write", error);
        data += w, len -= (gsize) w;
    }
    return TRUE;
}

gboolean
simpar_output_commit(SimparOutput *o, GError **error)
{
    g_return_val_if_fail(o != NULL, FALSE);
    int fd = o->fd;
    o->fd = -1;
    /* on disk before it takes the name: a crash after the rename leaves the whole file */
    gboolean ok = (fsync(fd) == 0 || errno == EINVAL || errno == EROFS ||
                   output_fail(o, errno, "cannot write", error));
    ok = (close(fd) == 0 || (ok && output_fail(o, errno, "cannot write", error))) && ok;
    /* checked again: a link or a device put there during the run is refused, not replaced */
    ok = ok && simpar_output_check(o->flag, o->path, NULL, error);
    if (ok && g_rename(o->tmp, o->path) != 0)
        ok = output_fail(o, errno, "cannot rename the written file into place", error);
    if (ok)
        g_clear_pointer(&o->tmp, g_free);
    simpar_output_free(o);
    return ok;
}

void
simpar_output_free(SimparOutput *o)
{
    if (o == NULL)
        return;
    if (o->fd >= 0)
        close(o->fd);
    if (o->tmp != NULL)
        g_unlink(o->tmp);
    g_free(o->tmp);
    g_free(o->flag);
    g_free(o->path);
    g_free(o);
}

gboolean
simpar_output_write(const char *flag, const char *path, const char *data, gsize len, GError **error)
{
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    SimparOutput *o = simpar_output_open(flag, path, error);
    if (o == NULL)
        return FALSE;
    if (!simpar_output_append(o, data, len, error)) {
        simpar_output_free(o);
        return FALSE;
    }
    return simpar_output_commit(o, error);
}
