/* trace.h - a Chrome trace (the Trace Event Format Perfetto and chrome://tracing read) written
 * to its file as it is made, in bounded memory.
 *
 *   {"traceEvents":[
 *   {"ph":"M","name":"process_name","pid":3,"tid":0,"args":{"name":"1d rank 3 (GPU 3)"}},
 *   {"ph":"X","name":"fwd.qkv.gemm","cat":"gemm","pid":3,"tid":100,"ts":12.5,"dur":80.25,
 *    "args":{"layer":0}},
 *   {"ph":"X","name":"fwd.attn.all-reduce","cat":"collective","pid":3,"tid":101,...,
 *    "args":{"layer":0,"kind":"all-reduce","axis":"tp","bytes":8388608}},
 *   ...],"displayTimeUnit":"ms"}
 *
 * Events go into a buffer flushed to the file every MiB; the file is written in place of PATH
 * only when simpar_trace_close() succeeds (output.h: a temporary file renamed over it), so a
 * failed run leaves what was there. Times are given in seconds and written in microseconds with
 * nanosecond digits. Strings are escaped as JSON wants.
 *
 * Ownership: a SimparTrace owns its stream and buffer; the strings it is given are copied out.
 */
#ifndef SIMPAR_TRACE_H
#define SIMPAR_TRACE_H
#include <glib.h>
G_BEGIN_DECLS

typedef struct _SimparTrace SimparTrace;

/* What an event's "args" hold: the layer index always; the rest when set (NULL, < 0). */
typedef struct {
    gint64 layer;
    const char *kind;         /* a collective's kind */
    const char *axis;         /* the group axis of a collective or transfer */
    double bytes;             /* a collective's (nccl-tests S) or a transfer's bytes */
    gint64 peer;              /* a transfer's other end (its job rank) */
    const char *algo, *proto; /* a collective's algorithm and protocol */
    const char *wait_for;     /* a wait's: what it waited for */
} SimparTraceArgs;

SimparTrace *simpar_trace_new(const char *path, GError **error); /* (transfer full) */
/* A metadata event: what "process_name" or "thread_name", for (pid, tid). */
void simpar_trace_meta(SimparTrace *t, const char *what, gint64 pid, gint64 tid, const char *name);
/* A complete event from start_s to end_s. */
void simpar_trace_event(SimparTrace *t, const char *name, const char *cat, gint64 pid, gint64 tid,
                        double start_s, double end_s, const SimparTraceArgs *args);
/* One end of a flow arrow joining two events (Perfetto draws it): the start (`start` TRUE) on
 * the event at (pid, tid, at_s) it leaves, the end on the one it reaches; both ends give the same
 * `id` and `cat` ("transfer": a send to its recv; "collective": a member of a collective to the
 * next one). */
void simpar_trace_flow(SimparTrace *t, gboolean start, const char *cat, const char *id, gint64 pid,
                       gint64 tid, double at_s);
/* A counter track's value `value` from at_s on (Perfetto draws it as a track of the process):
 * one per `name` and pid. */
void simpar_trace_counter(SimparTrace *t, const char *name, gint64 pid, double at_s,
                          const char *key, double value);
/* A key of the run's metadata ("otherData": simpar's version, the command, platform, model),
 * written when the trace closes; a key given again keeps its first value. */
void simpar_trace_set_meta(SimparTrace *t, const char *key, const char *value);
/* Ends the trace and puts the file in place; FALSE naming the path when a write failed. */
gboolean simpar_trace_close(SimparTrace *t, GError **error);
/* Frees it; an unclosed trace's file is not written. */
void simpar_trace_free(SimparTrace *t);
/* Events written so far. */
guint64 simpar_trace_n_events(const SimparTrace *t);
/* Adds `bytes` to the size the trace is expected to reach (each configuration's estimate,
 * before its events are made); returns the new total. */
double simpar_trace_expect(SimparTrace *t, double bytes);
/* Whether the trace is written gzip'ed (its path ends in .gz). */
gboolean simpar_trace_is_gzip(const SimparTrace *t);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(SimparTrace, simpar_trace_free)
G_END_DECLS
#endif /* SIMPAR_TRACE_H */
