/* vt_exact.h - exact reductions: the exact accumulator vt_xacc, a Kulisch accumulator (long fixed
 * point; the rounding layer calls it vt_xacc throughout), and the compensated dot product.
 *
 * Every finite FP64 value is an integer multiple of 2^-1074 below 2^1024, so the exact sum of any
 * number of them is a fixed-point number. The accumulator holds it in 69 limbs of 32 bits
 * (limb l weighs 2^(32 l - 1088)), each in an int64_t so that 2^29 signed additions fit between
 * carry propagations; the top limb carries the sign. Adding is integer-only and exact, so the
 * result does not depend on the order of the additions, the machine or the compiler.
 * Products of two FP32 values (and squares) are exact in FP64, so dot products of FP32 vectors,
 * sums of FP32 or FP64 terms and sums of squares of FP32 values are all exact here.
 *
 * Rounding reads the exact value once: vt_xacc_round32 gives RN32(exact) directly (no double
 * rounding through FP64), vt_xacc_round64 gives RN64(exact); ties go to even, as IEEE-754's
 * roundTiesToEven; an exact zero is +0 (a non-zero value too small for the format rounds to a
 * zero of its own sign, as IEEE-754 does); subnormal results are rounded on the subnormal grid;
 * beyond the format's range the result is +-inf. Non-finite terms: any NaN, or both +inf and
 * -inf, give NaN; otherwise an infinite term gives that infinity.
 * See docs/rounding.md, "Exact reductions". */
#ifndef VT_EXACT_H
#define VT_EXACT_H

#include <stddef.h>
#include <stdint.h>

#define VT_XACC_LIMBS 69
#define VT_XACC_LOW (-1088) /* weight of bit 0 of limb 0 */

typedef struct vt_xacc_s {
    int64_t L[VT_XACC_LIMBS];
    int lo, hi;        /* limbs that may be non-zero: lo..hi (lo > hi: none) */
    uint32_t pending;  /* additions since the last carry propagation */
    uint32_t n_pinf, n_ninf, n_nan;
} vt_xacc;

void vt_xacc_init(vt_xacc *a);
/* a += x, exactly (any double, non-finite ones counted as above). */
void vt_xacc_add(vt_xacc *a, double x);
/* a += x * y for FP32 x, y: the product is exact in FP64. */
static inline void vt_xacc_add_prod32(vt_xacc *a, float x, float y) { vt_xacc_add(a, (double)x * (double)y); }
/* Adds the accumulator b to a (exactly). */
void vt_xacc_add_acc(vt_xacc *a, const vt_xacc *b);

/* Sign of the exact value: -1, 0 or 1 (a NaN result gives 0; an infinity its sign). */
int vt_xacc_sign(const vt_xacc *a);
/* RN64 / RN32 of the exact value (see above). The accumulator is left unchanged. */
double vt_xacc_round64(const vt_xacc *a);
float vt_xacc_round32(const vt_xacc *a);

/* sum_k a[k*inca] * b[k*incb] for FP32 vectors, exactly, rounded once (RN64 / RN32). */
double vt_dot_exact64(size_t K, const float *a, size_t inca, const float *b, size_t incb);
float vt_dot_exact32(size_t K, const float *a, size_t inca, const float *b, size_t incb);
/* Compensated dot product of FP64 vectors whose products a[k] * b[k] are exact in FP64 (FP32
 * values converted, as the rounding layer uses it): four lanes of error-free TwoSum additions,
 * their errors summed alongside, then *s = RN64(sum + errors) and *e a rigorous bound with
 * |*s - sum_k a[k] b[k]| <= *e, about 2^-53 |*s| + n 2^-53 sum|errors| (docs/rounding.md 4).
 * Finite inputs with sum_k |a[k] b[k]| < 2^1000 are assumed (the rounding layer's products of
 * FP32 values are below 2^256 each); otherwise *e is +inf or NaN, which decides nothing. */
void vt_dot_comp64(size_t n, const double *a, const double *b, double *s, double *e);
/* The same from strided FP32 vectors (the products are exact in FP64); the same s and e. */
void vt_dot_comp32(size_t n, const float *a, size_t inca, const float *b, size_t incb, double *s, double *e);

/* Quotients by a count (rounding/vt_quot.c; docs/rounding.md 2.6, the means of the losses):
 * RN32(X / n) of the exact value X of the accumulator, for an integer n >= 1, correctly rounded (ties
 * to even, a non-zero value too small for FP32 to a zero of its own sign, +0 for X = 0, +-inf beyond
 * FP32 range, NaN for a NaN accumulator or n = 0): a first guess from RN64(X) / n, then each
 * neighbouring midpoint m decided exactly by the sign of X - n m in a copy of the accumulator (n m
 * added as three exact FP64 products of m, whose 25 bits fit beside 28 of n). */
float vt_xacc_round32_quot(const vt_xacc *a, uint64_t n);
/* RN32((v[0] + ... + v[k-1]) / n), the exact sum of k FP64 terms over n >= 1, correctly rounded as
 * vt_xacc_round32_quot: a screen - the terms summed in FP64 and divided, with a rigorous bound, decided
 * when the ends of its interval round alike (vt_round_ends; k <= 4, n <= 2^53) - and the exact quotient
 * otherwise (cancellation, a value near a rounding boundary, ties). */
float vt_round_quot_sum32(const double *v, size_t k, uint64_t n);

/* sum_k x[k*inc] for FP64 terms, exactly, rounded once. */
double vt_sum_exact64(size_t n, const double *x, size_t inc);
float vt_sum_exact32(size_t n, const double *x, size_t inc);

#endif
