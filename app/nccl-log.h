/* nccl-log.h - the plain output of an nccl-tests run, as simpar calibrate --nccl-tests reads it
 * (calibrate-nccl.c): the test, its ranks and hosts, and the out-of-place time of each size.
 *
 * Ownership: a SimparNcclLog is caller-owned (simpar_nccl_log_clear).
 */
#ifndef SIMPAR_NCCL_LOG_H
#define SIMPAR_NCCL_LOG_H
#include <glib.h>
G_BEGIN_DECLS

#define SIMPAR_NCCL_SENDRECV G_MAXUINT /* the kind of sendrecv_perf: no collective */

typedef struct {
    double bytes, time_s, busbw; /* size S, out-of-place time, busbw (GB/s) as printed */
} SimparNcclRow;

typedef struct {
    char *path;
    const char *test;   /* "all_reduce_perf", ... (static) */
    guint kind;         /* SimparCollKind, or SIMPAR_NCCL_SENDRECV */
    guint ranks, nodes; /* the "#  Rank" lines, and their distinct hosts */
    GArray *rows;       /* SimparNcclRow, in the log's order */
} SimparNcclLog;

/* Reads `path`; on success at least two ranks and one row, every size > 0 and every time > 0.
 * One error naming the file (and line) otherwise; `log` must be cleared either way. */
gboolean simpar_nccl_log_read(const char *path, SimparNcclLog *log, GError **error);
void simpar_nccl_log_clear(SimparNcclLog *log);

G_END_DECLS
#endif /* SIMPAR_NCCL_LOG_H */
