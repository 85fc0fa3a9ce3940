/* watchdog.c - the poll loop with a deadline that restarts on progress (see watchdog.h). */
#include "watchdog.h"

G_DEFINE_QUARK(simpar_watch_error_quark, simpar_watch_error)

#define WATCH_SLEEP_MIN_US 20
#define WATCH_SLEEP_MAX_US 1000

static gint64
watch_now(const SimparWatch *w)
{
    return w->now != NULL ? w->now(w->data) : g_get_monotonic_time();
}

static void
watch_sleep(const SimparWatch *w, gulong us)
{
    if (w->sleep != NULL)
        w->sleep(w->data, us);
    else
        g_usleep(us);
}

static void
watch_timeout(const SimparWatch *w, GError **error)
{
    g_autoptr(GString) where = g_string_new(NULL);
    if (w->stuck != NULL)
        w->stuck(w->data, where);
    w->abort(w->data);
    g_set_error(error, SIMPAR_WATCH_ERROR, SIMPAR_WATCH_ERROR_TIMEOUT,
                "%s: no progress for %g s%s%s%s%s%s", w->what, w->timeout_s,
                where->len > 0 ? " (" : "", where->str, where->len > 0 ? ")" : "",
                w->advice != NULL ? "; " : "", w->advice != NULL ? w->advice : "");
}

gboolean
simpar_watch_wait(const SimparWatch *w, GError **error)
{
    g_return_val_if_fail(w != NULL && w->what != NULL && w->poll != NULL && w->abort != NULL,
                         FALSE);
    g_return_val_if_fail(w->timeout_s > 0, FALSE);
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    gint64 span = (gint64) (w->timeout_s * G_USEC_PER_SEC);
    gint64 deadline = watch_now(w) + MAX(span, 1);
    gulong nap = WATCH_SLEEP_MIN_US;
    for (;;) {
        GError *local = NULL;
        SimparWatchState state = w->poll(w->data, &local);
        g_assert((state == SIMPAR_WATCH_FAILED) == (local != NULL));
        if (state == SIMPAR_WATCH_DONE)
            return TRUE;
        if (state == SIMPAR_WATCH_FAILED) {
            w->abort(w->data);
            g_propagate_error(error, local);
            return FALSE;
        }
        gint64 now = watch_now(w);
        if (state == SIMPAR_WATCH_PROGRESS) {
            deadline = now + MAX(span, 1);
            nap = WATCH_SLEEP_MIN_US;
        } else if (now >= deadline) {
            watch_timeout(w, error);
            return FALSE;
        }
        watch_sleep(w, (gulong) MIN((gint64) nap, MAX(deadline - now, 1)));
        nap = MIN(nap * 2, WATCH_SLEEP_MAX_US);
    }
}
