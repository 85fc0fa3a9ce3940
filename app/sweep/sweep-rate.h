/* sweep-rate.h - the recent rate of a long run's progress, and the ETA it gives.
 *
 * The mean rate since the start misleads where configurations differ in cost: a sweep whose
 * last configurations are its largest said "ETA 16 s" at 97% and ran 90 s more. This rate
 * weighs each completion by e^(-age/tau) (an exponentially weighted count, the same whatever
 * the calls' frequency), corrected for the weight the window has not yet filled:
 *
 *   rate(t) = sum_i e^(-(t - t_i)/tau) / tau / (1 - e^(-(t - t0)/tau))
 *
 * A steady rate reads as itself, a slower tail within about tau, a stall (no completion) decays
 * the rate and lengthens the ETA. Times are the caller's (seconds on any clock: the tests give
 * a synthetic one).
 */
#ifndef SIMPAR_SWEEP_RATE_H
#define SIMPAR_SWEEP_RATE_H
#include <glib.h>
G_BEGIN_DECLS

/* The window's time constant, in seconds. */
#define SIMPAR_SWEEP_RATE_TAU_S 10.0

typedef struct {
    double tau_s, start_s, last_s;
    double weighted; /* sum of e^(-(last - t_i)/tau) over the completions so far */
    guint64 done;    /* completions counted */
} SimparSweepRate;

/* A rate from `start_s` on, with `done` completions then (not counted). */
void simpar_sweep_rate_init(SimparSweepRate *r, double tau_s, double start_s, guint64 done);
/* `done` completions by `now_s` (at least as many as before). */
void simpar_sweep_rate_update(SimparSweepRate *r, double now_s, guint64 done);
/* Completions per second, recently. */
double simpar_sweep_rate_get(const SimparSweepRate *r);
/* Seconds until `total` at the recent rate; a negative number when no rate is known yet. */
double simpar_sweep_rate_eta(const SimparSweepRate *r, guint64 total);

G_END_DECLS
#endif /* SIMPAR_SWEEP_RATE_H */
