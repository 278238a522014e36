/* vt_math_hd.h - the one implementation of vt_exp and vt_log, shared by the
 * CPU library (kernels/vt_math.c) and the CUDA kernels (which include this file).
 *
 * Only IEEE-754 basic operations (+ - * /) on FP64, rint (round to integer in
 * the default round-to-nearest-even mode: an exact operation), integer
 * operations on the bit patterns (exact scaling by powers of two) and
 * comparisons are used, in one fixed order.  Compiled without contraction
 * (-ffp-contract=off, nvcc --fmad=false) and without fast-math, every
 * IEEE-754 machine therefore returns the same bits.
 *
 * Algorithms (classical, e.g. Tang / Cody-Waite / the fdlibm family):
 *   exp(x): k = rint(x / ln2), r = (x - k*LN2_HI) - k*LN2_LO with LN2_HI
 *           having 32 significant bits, so k*LN2_HI is exact for |k| < 2^21
 *           and x - k*LN2_HI is exact (Sterbenz); |r| <= ln2/2 (+tiny).
 *           exp(r) = 1 + 2r/(2 - R(r)) with the degree-5 Remez polynomial
 *           c(r) = r - r^2 (P1 + r^2 (P2 + ... + r^2 P5)) (error < 2^-59),
 *           evaluated as 1 - ((lo - r c / (2 - c)) - hi).  Result * 2^k by
 *           multiplication with exact powers of two (a subnormal result is
 *           rounded exactly once).
 *   log(x): x = 2^k (1+f), 1+f in [sqrt(2)/2, sqrt(2)); s = f / (2+f);
 *           log(1+f) = f - hfsq + s (hfsq + R(s^2)), hfsq = f^2/2, R a
 *           degree-7 (in s^2) Remez polynomial (error < 2^-58.45);
 *           plus k*LN2_HI + k*LN2_LO, summed small-to-large.
 *   tanh(u): sign(u) (1 - e) / (1 + e) with e = exp(-2|u|) (the exp above).
 * Measured accuracy against glibc: see tests/unit/test_kernels.c (max 1 ulp).
 */
#ifndef VT_MATH_HD_H
#define VT_MATH_HD_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "vt_math.h"


/* 2^n as a double for -1022 <= n <= 1023 (exact, built from the bit pattern). */
static inline VT_HD double vti_pow2i(int n)
{
    return vt_hd_f64((uint64_t)(n + 1023) << 52);
}

/* y * 2^k for y in [0.5, 2), -1080 <= k <= 1024: exact unless the result is
 * subnormal (then rounded once) or overflows. */
static inline VT_HD double vti_scale(double y, int k)
{
    if (k > 1023) return (y * 2.0) * vti_pow2i(k - 1);
    if (k < -1021) return (y * vti_pow2i(k + 54)) * 0x1p-54;
    return y * vti_pow2i(k);
}

static inline VT_HD double vt_exp_impl(double x)
{
    const double ln2_hi = 0x1.62e42feep-1;          /* 32 significant bits */
    const double ln2_lo = 0x1.a39ef35793c76p-33;    /* ln2 - ln2_hi */
    const double inv_ln2 = 0x1.71547652b82fep+0;
    const double o_thr = 0x1.62e42fefa39efp+9;      /* 709.782712893384: largest x with finite exp */
    const double u_thr = -0x1.74910d52d3051p+9;     /* -745.133219101941: below, exp rounds to 0 */
    const double P1 = 0x1.555555555553ep-3;
    const double P2 = -0x1.6c16c16bebd93p-9;
    const double P3 = 0x1.1566aaf25de2cp-14;
    const double P4 = -0x1.bbd41c5d26bf1p-20;
    const double P5 = 0x1.6376972bea4dp-25;

    if (x != x) return x + x;                          /* NaN */
    if (x > o_thr) return vt_hd_f64(0x7ff0000000000000ULL); /* +inf (also for x = +inf) */
    if (x < u_thr) return 0.0;                         /* also for x = -inf */

    double kd = rint(x * inv_ln2);                     /* |kd| <= 1075 */
    double hi = x - kd * ln2_hi;                       /* exact */
    double lo = kd * ln2_lo;
    double r = hi - lo;
    double t = r * r;
    double c = r - t * (P1 + t * (P2 + t * (P3 + t * (P4 + t * P5))));
    double y = 1.0 - ((lo - (r * c) / (2.0 - c)) - hi);
    return vti_scale(y, (int)kd);
}

static inline VT_HD double vt_log_impl(double x)
{
    const double ln2_hi = 0x1.62e42feep-1;
    const double ln2_lo = 0x1.a39ef35793c76p-33;
    const double Lg1 = 0x1.5555555555593p-1;
    const double Lg2 = 0x1.999999997fa04p-2;
    const double Lg3 = 0x1.2492494229359p-2;
    const double Lg4 = 0x1.c71c51d8e78afp-3;
    const double Lg5 = 0x1.7466496cb03dep-3;
    const double Lg6 = 0x1.39a09d078c69fp-3;
    const double Lg7 = 0x1.2f112df3e5244p-3;

    if (x != x) return x + x;                                   /* NaN */
    if (x < 0.0) return vt_hd_f64(0x7ff8000000000000ULL);        /* NaN */
    if (x == 0.0) return vt_hd_f64(0xfff0000000000000ULL);       /* -inf for +-0 */
    uint64_t ix = vt_hd_bits64(x);
    if (ix >= 0x7ff0000000000000ULL) return x;                  /* +inf */

    int k = 0;
    if (ix < 0x0010000000000000ULL) { /* subnormal: scale up exactly */
        x = x * 0x1p54;
        k = -54;
        ix = vt_hd_bits64(x);
    }
    uint32_t hx = (uint32_t)(ix >> 32);
    k += (int)(hx >> 20) - 1023;
    hx &= 0x000fffffu;
    /* i = 0x100000 when the mantissa is >= sqrt(2) (then use 2^(k+1) * m/2). */
    uint32_t i = (hx + 0x95f64u) & 0x100000u;
    double m = vt_hd_f64(((uint64_t)(hx | (i ^ 0x3ff00000u)) << 32) | (ix & 0xffffffffULL));
    k += (int)(i >> 20);
    double f = m - 1.0; /* exact */
    double dk = (double)k;

    if ((0x000fffffu & (2u + hx)) < 3u) { /* |f| < 2^-20 */
        if (f == 0.0) {
            if (k == 0) return 0.0;
            return dk * ln2_hi + dk * ln2_lo;
        }
        double R = f * f * (0.5 - 0x1.5555555555555p-2 * f);
        if (k == 0) return f - R;
        return dk * ln2_hi - ((R - dk * ln2_lo) - f);
    }
    double s = f / (2.0 + f);
    double z = s * s;
    double w = z * z;
    double t1 = w * (Lg2 + w * (Lg4 + w * Lg6));
    double t2 = z * (Lg1 + w * (Lg3 + w * (Lg5 + w * Lg7)));
    double R = t2 + t1;
    /* Mantissa in [1.38, 1.42) (|f| largest): the more accurate hfsq form. */
    int big = hx >= 0x6147au && hx <= 0x6b851u;
    if (big) {
        double hfsq = 0.5 * f * f;
        if (k == 0) return f - (hfsq - s * (hfsq + R));
        return dk * ln2_hi - ((hfsq - (s * (hfsq + R) + dk * ln2_lo)) - f);
    }
    if (k == 0) return f - s * (f - R);
    return dk * ln2_hi - ((s * (f - R) - dk * ln2_lo) - f);
}

/* tanh(u) = sign(u) (1 - e) / (1 + e) with e = exp(-2|u|): the argument, then tanh from e (so that
 * the CPU can take the exponentials of many elements at once: vt_exp_n, the same bits) */
static inline VT_HD double vti_tanh_arg(double u) { return -2.0 * (u < 0 ? -u : u); }
static inline VT_HD double vti_tanh_from(double u, double e)
{
    double t = (1.0 - e) / (1.0 + e);
    return u < 0 ? -t : t;
}
static inline VT_HD double vt_tanh_impl(double u) { return vti_tanh_from(u, vt_exp_impl(vti_tanh_arg(u))); }

#endif
