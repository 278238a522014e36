/* vt_math.c - exported portable transcendentals (implementation in vt_math_impl.h,
 * shared with the CUDA kernels). */
#include "vt_math.h"

#include "vt_math_impl.h"

double vt_exp(double x) { return vt_exp_impl(x); }

double vt_log(double x) { return vt_log_impl(x); }
