/* output.h - every file simpar and simpar-exec write, named by an option or derived from one
 * (a plot's -memory.png, a report's trace.json): one way to check it and one way to write it.
 *
 *   simpar_output_check(flag, path)   before the work: the name can be written
 *   simpar_output_open(flag, path)    PATH's folder/.simpar-XXXXXX, made with O_EXCL
 *     simpar_output_append(...)       the bytes, as many times as needed
 *   simpar_output_commit(o)           checked again, renamed over PATH; free() drops it unwritten
 *   simpar_output_write(flag, path, data, len)   the three at once
 *
 * A path is refused when it is empty, a folder, a symbolic link, a device, FIFO or socket, a
 * sweep journal's name (.part), or in a folder that does not exist: a rename would replace a
 * link or a device node (as root, /dev/null), and a write through it would land elsewhere.
 * simpar_output_distinct() refuses two names of one run that are the same file (an output over
 * an input or another output), by canonical path and, for files that exist, device and inode.
 *
 * Errors: a refused name is SIMPAR_OUTPUT_ERROR (the command line is at fault: exit 2); a write
 * that fails is G_FILE_ERROR; each names the flag and the path.
 */
#ifndef SIMPAR_OUTPUT_H
#define SIMPAR_OUTPUT_H
#include <glib.h>
G_BEGIN_DECLS

#define SIMPAR_OUTPUT_ERROR (simpar_output_error_quark())
GQuark simpar_output_error_quark(void);

typedef enum {
    SIMPAR_OUTPUT_ERROR_REFUSED, /* not a name simpar writes: a link, a device, a folder, ... */
    SIMPAR_OUTPUT_ERROR_SAME,    /* two names of one run are one file */
} SimparOutputError;

/* One file a run reads or writes, for simpar_output_distinct(); path NULL: not given. */
typedef struct {
    const char *flag;
    const char *path;
    gboolean output;
} SimparOutputName;

typedef struct _SimparOutput SimparOutput;

/* The output `path` of option `flag` can be written; else an error naming the flag and `what`
 * to give ("the CSV file"; NULL: "a regular file"). */
gboolean simpar_output_check(const char *flag, const char *path, const char *what, GError **error);
/* No output among the n names is the same file as another name (input or output). */
gboolean simpar_output_distinct(const SimparOutputName *names, guint n, GError **error);
SimparOutput *simpar_output_open(const char *flag, const char *path,
                                 GError **error); /* (transfer full) */
gboolean simpar_output_append(SimparOutput *o, const char *data, gsize len, GError **error);
/* Puts the file in place and frees `o`, written or not. */
gboolean simpar_output_commit(SimparOutput *o, GError **error);
/* Frees `o`; an uncommitted file is removed, PATH keeps what it held. */
void simpar_output_free(SimparOutput *o);
gboolean simpar_output_write(const char *flag, const char *path, const char *data, gsize len,
                             GError **error);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(SimparOutput, simpar_output_free)
G_END_DECLS
#endif /* SIMPAR_OUTPUT_H */
