/* vt_math.h - portable transcendentals built only from IEEE basic operations
 * (+ - * / sqrt, exact scaling by powers of two) in one fixed order, so that
 * every IEEE-754 machine (and the CUDA kernels, which include the same code)
 * returns the same bits.  Accuracy: below 2 ulp of FP64 (tests/unit/test_kernels.c checks
 * it against expl/logl over 6 million points; 0.88 ulp is the largest error seen);
 * correctness of the system does not depend on it, only determinism does.  The implementation is in vt_math_hd.h
 * (static inline VT_HD vt_exp_impl / vt_log_impl / vt_tanh_impl), which CUDA code includes; the array
 * forms vt_exp_n / vt_log_n / vt_tanh_n (vt_math_vec.c) give the same bits several lanes at a time. */
#ifndef VT_MATH_H
#define VT_MATH_H

#include <stddef.h>

#include "../common/vt_hd.h" /* VT_HD */

/* exp(x) for FP64 x; +inf above ~709.78, 0 below ~-745.13, NaN for NaN. */
VT_HD double vt_exp(double x);
/* log(x) for x > 0 (finite); -inf for 0, NaN for x < 0 or NaN, +inf for +inf. */
VT_HD double vt_log(double x);
/* tanh(u) = sign(u) (1 - e) / (1 + e) with e = vt_exp(-2|u|) (vt_math_hd.h vt_tanh_impl: the chain
 * GELU uses); +-1 for +-inf, NaN for NaN. Absolute error below 4e-16 against glibc's tanh on [-20, 20]
 * (3.3e-16 the largest seen, 8 million points); near 0 the relative error grows (1 - e cancels). */
VT_HD double vt_tanh(double u);
/* y[i] = vt_exp(x[i]), vt_log(x[i]), vt_tanh(x[i]) for i < n: the same bits as the scalar functions
 * on every input, several lanes at a time (vt_math_vec.c; x and y may be the same array). The
 * implementation is picked once, at the first call of any of them: "avx2" where the CPU runs it,
 * else "scalar" (always there), or the one VT_MATH_IMPL names ("scalar", "vector", "avx2"). */
void vt_exp_n(size_t n, const double *x, double *y);
void vt_log_n(size_t n, const double *x, double *y);
void vt_tanh_n(size_t n, const double *x, double *y);
/* The implementation the three use. */
const char *vt_math_impl(void);
/* For tests and benchmarks: the implementations this build has (the count), and implementation i's
 * name and its function for fn (VT_MATH_EXP, VT_MATH_LOG, VT_MATH_TANH) where this CPU runs it
 * (NULL otherwise). */
typedef void (*vt_math_fn_n)(size_t n, const double *x, double *y);
enum { VT_MATH_EXP, VT_MATH_LOG, VT_MATH_TANH, VT_MATH_NFN };
int vt_math_impl_count(void);
const char *vt_math_impl_get(int i, int fn, vt_math_fn_n *out);
/* cos(pi t) for t in [0, 1] (the cosine schedule), from basic operations only: the argument folded
 * to [0, 1/4] by symmetry, then the Taylor series of cos or sin to degree 18 / 17 (error below
 * 1e-16 on [0, pi/4]). Outside [0, 1] t is clamped. */
double vt_cospi(double t);

#endif
