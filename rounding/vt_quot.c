/* vt_quot.c - correctly rounded quotients of exact sums by a count (vt_exact.h): the means of the
 * losses (RN32 of the exact mean), their gradients' elements (RN32 of a difference over a count).
 * docs/rounding.md 2.6 gives the argument. */
#include <float.h>
#include <math.h>
#include <string.h>

#include "vt_elem.h"
#include "vt_exact.h"

/* the sign of |X| - n m for the accumulator a of sign sg (+-1) and a midpoint m > 0 of 25 bits at
 * most: X - sg n m accumulated exactly, n split into 28-bit parts (m n_k is exact in FP64: 25 + 28
 * bits, and scaling by 2^28 or 2^56 is exact within FP64's range, m n <= 2^128 2^64) */
static int cmp_scaled(const vt_xacc *a, int sg, uint64_t n, double m)
{
    vt_xacc d = *a;
    const double part[3] = {(double)(n & 0xfffffffu), (double)((n >> 28) & 0xfffffffu), (double)(n >> 56)};
    const double scale[3] = {1.0, 0x1p28, 0x1p56};
    for (int k = 0; k < 3; k++)
        if (part[k] != 0) vt_xacc_add(&d, -(double)sg * ((m * part[k]) * scale[k]));
    return sg * vt_xacc_sign(&d);
}

static int f32_odd(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return (int)(u & 1u);
}

float vt_xacc_round32_quot(const vt_xacc *a, uint64_t n)
{
    if (n == 0) return NAN;
    if (n == 1) return vt_xacc_round32(a);
    double s = vt_xacc_round64(a);
    if (isnan(s)) return NAN;
    int sg = vt_xacc_sign(a);
    if (sg == 0) return 0.0f;
    /* |X| >= 2^1024 (or an infinite term): |X| / n > 2^1024 / 2^64, beyond FP32 */
    if (isinf(s)) return sg < 0 ? -INFINITY : INFINITY;
    /* the guess: RN32 of an FP64 value within a few units of 2^-53 of |X| / n, so RN32(|X| / n) is it
     * or a neighbour; the loop walks until both midpoints around f enclose |X| / n */
    double q = fabs(s) / (double)n;
    float f = q >= (double)FLT_MAX ? FLT_MAX : (float)q;
    for (;;) {
        /* above: the midpoint to the successor (2^128 - 2^103 past FLT_MAX: the overflow threshold,
         * a tie going to infinity as to an even significand) */
        double up = f == FLT_MAX ? 0x1p128 - 0x1p103 : 0.5 * ((double)f + (double)nextafterf(f, INFINITY));
        int c = cmp_scaled(a, sg, n, up);
        if (c > 0 || (c == 0 && f32_odd(f))) {
            if (f == FLT_MAX) return sg < 0 ? -INFINITY : INFINITY;
            f = nextafterf(f, INFINITY);
            continue;
        }
        if (f > 0.0f) { /* below: the midpoint to the predecessor (to 0 from the least subnormal) */
            double down = 0.5 * ((double)f + (double)nextafterf(f, 0.0f));
            c = cmp_scaled(a, sg, n, down);
            if (c < 0 || (c == 0 && f32_odd(f))) {
                f = nextafterf(f, 0.0f);
                continue;
            }
        }
        return sg < 0 ? -f : f;
    }
}

float vt_round_quot_sum32(const double *v, size_t k, uint64_t n)
{
    if (k >= 1 && k <= 4 && n >= 1 && n <= ((uint64_t)1 << 53)) {
        /* s: the terms added in order, within (k - 1) 2^-53 (1 + 2^-50) sum|v| of their exact sum (the
         * classical bound gamma_(k-1), k <= 4); the quotient by n (exact as a double) adds 2^-53 |x|
         * for a normal quotient, 2^-1075 for a subnormal one; the bound's own roundings (a few units
         * of 2^-53) inside the factor 1 + 2^-20 */
        double s = v[0], sa = fabs(v[0]);
        for (size_t i = 1; i < k; i++) s += v[i], sa += fabs(v[i]);
        const double dn = (double)n, x = s / dn;
        double B = (fabs(x) * 0x1p-52 + (double)(k - 1) * 0x1p-52 * sa / dn) * (1.0 + 0x1p-20) + 0x1p-1070;
        uint32_t lb, hb;
        if (isfinite(x) && isfinite(B)) {
            vt_round_ends(x, B, 1.0, &lb, &hb);
            float r;
            memcpy(&r, &lb, 4);
            if (lb == hb && isfinite(r)) return r;
        }
    }
    vt_xacc acc;
    vt_xacc_init(&acc);
    for (size_t i = 0; i < k; i++) vt_xacc_add(&acc, v[i]);
    return vt_xacc_round32_quot(&acc, n);
}
