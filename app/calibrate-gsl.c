/* calibrate-gsl.c - the one-dimensional and simplex searches of the calibrations, by GSL
 * (calibrate-private.h): gsl_min_fminimizer_goldensection and
 * gsl_multimin_fminimizer_nmsimplex2. GSL's own error handler (abort) is turned off: a failed
 * search is a FALSE here, the caller keeping what it had. */
#include "calibrate-private.h"
#include <gsl/gsl_errno.h>
#include <gsl/gsl_min.h>
#include <gsl/gsl_multimin.h>
#include <math.h>

/* The minimiser set on [lo, hi] around a point it accepts (f there below both ends): `x`, else
 * the interval's golden points; FALSE when none is below both. */
static gboolean
calibrate_golden_set(gsl_min_fminimizer *m, gsl_function *fn, double lo, double *x, double hi)
{
    const double phi = (sqrt(5.0) - 1) / 2;
    double f_lo = fn->function(lo, fn->params), f_hi = fn->function(hi, fn->params);
    double tries[] = {*x, hi - phi * (hi - lo), lo + phi * (hi - lo)};
    for (guint i = 0; i < G_N_ELEMENTS(tries); i++) {
        if (!(tries[i] > lo && tries[i] < hi))
            continue;
        double f = fn->function(tries[i], fn->params);
        if (f < f_lo && f < f_hi &&
            gsl_min_fminimizer_set_with_values(m, fn, tries[i], f, lo, f_lo, hi, f_hi) ==
                GSL_SUCCESS) {
            *x = tries[i];
            return TRUE;
        }
    }
    return FALSE;
}

gboolean
simpar_calibrate_golden(double (*f)(double x, void *data), gpointer data, double *lo, double *x,
                        double *hi, double tol, guint max_iter)
{
    gsl_set_error_handler_off();
    gsl_function fn = {f, data};
    gsl_min_fminimizer *m = gsl_min_fminimizer_alloc(gsl_min_fminimizer_goldensection);
    gboolean ok = calibrate_golden_set(m, &fn, *lo, x, *hi);
    for (guint i = 0; ok && i < max_iter; i++) {
        if (gsl_min_fminimizer_iterate(m) != GSL_SUCCESS)
            break;
        *lo = gsl_min_fminimizer_x_lower(m), *hi = gsl_min_fminimizer_x_upper(m);
        *x = gsl_min_fminimizer_x_minimum(m);
        if (gsl_min_test_interval(*lo, *hi, tol, 0) == GSL_SUCCESS)
            break;
    }
    gsl_min_fminimizer_free(m);
    return ok;
}

typedef struct {
    double (*f)(const double *x, guint k, void *data);
    gpointer data;
} CalibrateSimplex;

static double
calibrate_simplex_f(const gsl_vector *v, void *params)
{
    const CalibrateSimplex *s = params;
    return s->f(gsl_vector_const_ptr(v, 0), (guint) v->size, s->data);
}

double
simpar_calibrate_simplex(double (*f)(const double *x, guint k, void *data), gpointer data, guint k,
                         double *x, double step, double size_tol, guint max_iter)
{
    gsl_set_error_handler_off();
    CalibrateSimplex s = {f, data};
    gsl_multimin_function fn = {calibrate_simplex_f, k, &s};
    gsl_vector *start = gsl_vector_alloc(k), *steps = gsl_vector_alloc(k);
    for (guint i = 0; i < k; i++)
        gsl_vector_set(start, i, x[i]), gsl_vector_set(steps, i, step);
    gsl_multimin_fminimizer *m =
        gsl_multimin_fminimizer_alloc(gsl_multimin_fminimizer_nmsimplex2, k);
    double cost = f(x, k, data);
    if (gsl_multimin_fminimizer_set(m, &fn, start, steps) == GSL_SUCCESS) {
        for (guint i = 0; i < max_iter; i++)
            if (gsl_multimin_fminimizer_iterate(m) != GSL_SUCCESS ||
                gsl_multimin_test_size(gsl_multimin_fminimizer_size(m), size_tol) == GSL_SUCCESS)
                break;
        if (gsl_multimin_fminimizer_minimum(m) < cost) {
            cost = gsl_multimin_fminimizer_minimum(m);
            for (guint i = 0; i < k; i++)
                x[i] = gsl_vector_get(gsl_multimin_fminimizer_x(m), i);
        }
    }
    gsl_multimin_fminimizer_free(m);
    gsl_vector_free(steps), gsl_vector_free(start);
    return cost;
}
