/* vt_act.h - the elementwise activations of client models, correctly rounded to FP32
 * (docs/rounding.md 2.7; the kinds SIGMOID, TANH, LEAKY_RELU, GELU_ERF and their backward kinds, ops/vt_fam_act.c).
 *
 * Every function returns RN32 of the exact real value of its definition on its FP32 (and FP64 alpha)
 * arguments: the same bits on every IEEE-754 machine, whatever libm it has. Sigmoid and tanh are
 * evaluated in two stages, both plain IEEE basic operations (no libm): an FP64 value with a rigorous
 * relative error bound (the portable exp, kernels/vt_math_hd.h), decided when no FP32 rounding
 * boundary lies within the bound; otherwise a double-double evaluation (about 2^-100) with its own
 * bound. GELU (erf form) and its derivative: an FP64 stage above -3, then a double-double one (Marsaglia's
 * series of Phi, Laplace's continued fraction of the Mills ratio below -3), each with a rigorous bound. The other backward formulas are short exact sums of exact FP64 products, rounded once
 * (vt_round_quot_sum32). */
#ifndef VT_ACT_H
#define VT_ACT_H

#include <stdint.h>

/* RN32(1 / (1 + exp(-x))); NaN for NaN. *hard (when not NULL) is set to 1 when neither stage decides
 * the rounding (the result is then the double-double value's RN32; no input is known to do this). */
float vt_sigmoid32(float x, int *hard);
/* RN32(tanh(x)); NaN for NaN; *hard as vt_sigmoid32 */
float vt_tanh32(float x, int *hard);
/* RN32(dy y (1 - y)) (SIGMOID_BWD from the FP32 output y) */
float vt_sigmoid_bwd32(float y, float dy);
/* RN32(dy (1 - y^2)) (TANH_BWD from the FP32 output y) */
float vt_tanh_bwd32(float y, float dy);
/* x >= 0 ? x : RN32(alpha x) (LEAKY_RELU) */
float vt_leaky_relu32(float x, double alpha);
/* x > 0 ? dy : RN32(alpha dy) (LEAKY_RELU_BWD; PyTorch's convention: alpha dy at x = 0) */
float vt_leaky_relu_bwd32(float x, float dy, double alpha);

/* RN32(x Phi(x)) = RN32(x/2 (1 + erf(x / sqrt 2))), PyTorch's exact GELU (GELU_ERF); NaN for NaN, x for
 * x >= 6 (+inf), -0 for x <= -14.5 (-inf: the limit); *hard as vt_sigmoid32. For -3 <= x an FP64 first
 * stage (vt_gelu_erf_stage1), then a double-double value with a rigorous relative bound
 * (vt_gelu_erf_eval); the tiny |x| < 2^-60 decided exactly. */
float vt_gelu_erf32(float x, int *hard);
/* RN32(dy g(x)), g(x) = Phi(x) + x phi(x) (GELU_ERF_BWD from the forward input x): NaN for a NaN;
 * dy for x >= 6.5 (+inf); a zero of dy g's sign for x <= -20 (-inf: NaN where dy is infinite) */
float vt_gelu_erf_bwd32(float x, float dy, int *hard);

/* the stages, for the tests: the first stage's FP64 value (sigmoid of x, or tanh of |x| for 2^-12 < |x|
 * < 20) and its relative bound; the second stage's double-double value and its relative bound */
#define VT_ACT_BOUND1_SIGMOID 0x1p-47
#define VT_ACT_BOUND1_TANH 0x1p-37
#define VT_ACT_BOUND2 0x1p-84
double vt_sigmoid_stage1(float x);
double vt_tanh_stage1(float ax);
void vt_sigmoid_stage2(float x, double *hi, double *lo);
void vt_tanh_stage2(float ax, double *hi, double *lo);
/* GELU_ERF's evaluation (finite x, 2^-60 <= |x| < 20): gelu(x) as hi + lo within *rel relative
 * (VT_ACT_BOUND_GELU for x >= -3; the continued fraction's own bound below); its derivative g(x) as
 * hi + lo within *abs_err absolute (VT_ACT_BOUND_GELU_GRAD, x >= -3) or *rel relative (x < -3) */
#define VT_ACT_BOUND_GELU 0x1p-80
/* the FP64 first stage for -3 <= x < 6.5: gelu(x) within VT_ACT_BOUND1_GELU relative, g(x) within
 * VT_ACT_BOUND1_GELU_GRAD absolute */
#define VT_ACT_BOUND1_GELU 0x1p-34
#define VT_ACT_BOUND1_GELU_GRAD 0x1p-43
double vt_gelu_erf_stage1(float x);
double vt_gelu_erf_grad_stage1(float x);
#define VT_ACT_BOUND_GELU_GRAD 0x1p-88
void vt_gelu_erf_eval(float x, double *hi, double *lo, double *rel);
void vt_gelu_erf_grad_eval(float x, double *hi, double *lo, double *abs_err, double *rel);
/* 1 and *out = RN32(v) when every real v within d of hi + lo (hi > 0, |lo| <= 2^-52 hi, d >= 0) rounds
 * to one FP32 value; 0 when a rounding boundary (a midpoint between FP32 neighbours) may lie there */
int vt_act_decide(double hi, double lo, double d, float *out);

#endif
