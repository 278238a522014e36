/* vt_math.c - exported portable transcendentals (implementation in vt_math_hd.h,
 * shared with the CUDA kernels). */
#include "vt_math.h"

#include "vt_math_hd.h"

double vt_exp(double x) { return vt_exp_impl(x); }

double vt_log(double x) { return vt_log_impl(x); }

double vt_tanh(double u) { return vt_tanh_impl(u); }

static double cos_series(double x) /* |x| <= pi/4 */
{
    double x2 = x * x, term = 1.0, sum = 1.0;
    for (int k = 1; k <= 9; k++) {
        term = -term * x2 / (double)((2 * k - 1) * (2 * k));
        sum = sum + term;
    }
    return sum;
}

static double sin_series(double x) /* |x| <= pi/4 */
{
    double x2 = x * x, term = x, sum = x;
    for (int k = 1; k <= 8; k++) {
        term = -term * x2 / (double)((2 * k) * (2 * k + 1));
        sum = sum + term;
    }
    return sum;
}

double vt_cospi(double t)
{
    const double pi = 3.141592653589793;
    if (!(t > 0.0)) return 1.0;
    if (t >= 1.0) return -1.0;
    double sign = 1.0;
    if (t > 0.5) t = 1.0 - t, sign = -1.0; /* cos(pi t) = -cos(pi (1 - t)) */
    if (t <= 0.25) return sign * cos_series(pi * t);
    return sign * sin_series(pi * (0.5 - t)); /* cos(pi t) = sin(pi (1/2 - t)) */
}
