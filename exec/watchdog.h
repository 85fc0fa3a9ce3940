/* watchdog.h - waits for something that may never finish: polls it until it is done, fails, or
 * goes `timeout_s` seconds without progress; then calls `abort` once and fails with a message
 * that says what hung, where, and what to do. No CUDA here: cuda.c polls NCCL through it, the
 * unit tests poll fakes under a clock of their own.
 *
 *   poll ─ PENDING ─ sleep ─ poll ─ PROGRESS (deadline restarts) ─ ... ─ DONE ───────> TRUE
 *                                                                  └─ FAILED ─ abort ─> FALSE
 *     ... no progress for timeout_s ─ stuck(where) ─ abort ─ SIMPAR_WATCH_ERROR_TIMEOUT ─> FALSE
 *
 * Between polls it sleeps 20 us, doubling up to 1 ms while nothing moves.
 *
 * Ownership: a SimparWatch and its strings are the caller's, borrowed for one wait.
 */
#ifndef SIMPAR_WATCHDOG_H
#define SIMPAR_WATCHDOG_H
#include <glib.h>
G_BEGIN_DECLS

#define SIMPAR_WATCH_ERROR (simpar_watch_error_quark())
GQuark simpar_watch_error_quark(void);

typedef enum {
    SIMPAR_WATCH_ERROR_TIMEOUT, /* no progress within the timeout; `abort` was called */
} SimparWatchError;

typedef enum {
    SIMPAR_WATCH_PENDING,  /* not finished, nothing moved */
    SIMPAR_WATCH_PROGRESS, /* not finished, but something moved: the deadline restarts */
    SIMPAR_WATCH_DONE,
    SIMPAR_WATCH_FAILED, /* the poll set its error */
} SimparWatchState;

typedef struct {
    const char *what;   /* "creating the NCCL communicator of all 8 ranks" */
    const char *advice; /* appended to a timeout's message, or NULL */
    double timeout_s;   /* > 0 */
    gpointer data;      /* for every callback */
    SimparWatchState (*poll)(gpointer data, GError **error);
    void (*abort)(gpointer data);                 /* once, on a timeout or a failure */
    void (*stuck)(gpointer data, GString *where); /* optional: appends where it hangs */
    gint64 (*now)(gpointer data);                 /* optional: microseconds, monotonic */
    void (*sleep)(gpointer data, gulong us);      /* optional */
} SimparWatch;

/* TRUE once `poll` says DONE. FALSE with the poll's error (FAILED) or a
 * SIMPAR_WATCH_ERROR_TIMEOUT "<what>: no progress for <t> s (<where>); <advice>", after one
 * call of `abort` in both cases. */
gboolean simpar_watch_wait(const SimparWatch *w, GError **error);

G_END_DECLS
#endif /* SIMPAR_WATCHDOG_H */
