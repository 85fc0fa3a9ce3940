/* sweep-rate.c - the recent rate of a run's progress (sweep-rate.h). */
#include "sweep-rate.h"
#include <math.h>

void
simpar_sweep_rate_init(SimparSweepRate *r, double tau_s, double start_s, guint64 done)
{
    g_return_if_fail(r != NULL && tau_s > 0);
    *r = (SimparSweepRate){tau_s, start_s, start_s, 0, done};
}

void
simpar_sweep_rate_update(SimparSweepRate *r, double now_s, guint64 done)
{
    g_return_if_fail(r != NULL);
    double dt = MAX(now_s - r->last_s, 0);
    r->weighted *= exp(-dt / r->tau_s);
    /* the completions since the last call, counted at its end: young, full weight */
    r->weighted += done > r->done ? (double) (done - r->done) : 0;
    r->done = MAX(r->done, done);
    r->last_s = MAX(r->last_s, now_s);
}

double
simpar_sweep_rate_get(const SimparSweepRate *r)
{
    g_return_val_if_fail(r != NULL, 0);
    double filled = 1 - exp(-(r->last_s - r->start_s) / r->tau_s);
    return filled > 1e-9 ? r->weighted / r->tau_s / filled : 0;
}

double
simpar_sweep_rate_eta(const SimparSweepRate *r, guint64 total)
{
    double rate = simpar_sweep_rate_get(r);
    if (!(rate > 0))
        return -1;
    return total > r->done ? (double) (total - r->done) / rate : 0;
}
