/* vt_xacc_hd.h - the one implementation of vt_xacc (the exact accumulator of vt_exact.h) and of the
 * compensated dot product, for the CPU library (rounding/vt_exact.c wraps these)
 * and the CUDA kernels (backend/cuda/vt_cuda.cu includes this file): the same source, so the CPU tests
 * exercise what the GPU runs. Integer arithmetic only, apart from reading a double's bits, the
 * TwoSum additions of the compensated stage and building the rounded result from an integer and
 * a power of two (exact). */
#ifndef VT_XACC_HD_H
#define VT_XACC_HD_H

#include <float.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "../common/vt_hd.h"
#include "vt_exact.h"

#define VTI_XTOP (VT_XACC_LIMBS - 1)
#define VTI_XFLUSH (1u << 29) /* 2^29 additions of |c| < 2^33 stay below 2^62 per limb */

VT_HDI void vti_xacc_init(vt_xacc *a)
{
    memset(a, 0, sizeof *a);
    a->lo = VT_XACC_LIMBS;
    a->hi = -1;
}

/* Carry propagation: afterwards limbs 0..TOP-1 are in [0, 2^32) and the top limb holds the sign
 * (the value is negative exactly when the top limb is). */
VT_HDI void vti_xacc_norm(vt_xacc *a)
{
    a->pending = 0;
    if (a->lo > a->hi) return;
    int64_t carry = 0;
    int l = a->lo;
    for (; l < VTI_XTOP; l++) {
        if (l > a->hi && carry == 0) break;
        int64_t v = a->L[l] + carry;
        int64_t low = (int64_t)((uint64_t)v & 0xffffffffULL);
        carry = (v - low) / 4294967296LL; /* exact: v - low is a multiple of 2^32 */
        a->L[l] = low;
    }
    if (l == VTI_XTOP) a->L[VTI_XTOP] += carry;
    if (l > a->hi) a->hi = l == VTI_XTOP ? VTI_XTOP : l - 1;
}

VT_HDI void vti_xacc_add(vt_xacc *a, double x)
{
    if (x == 0.0) return;
    if (!vt_hd_isfinite(x)) {
        if (vt_hd_isnan(x)) a->n_nan++;
        else if (x > 0) a->n_pinf++;
        else a->n_ninf++;
        return;
    }
    uint64_t u = vt_hd_bits64(x);
    int neg = (int)(u >> 63);
    int ex = (int)((u >> 52) & 0x7ff);
    uint64_t m = u & 0x000fffffffffffffULL;
    if (ex != 0) m |= 0x0010000000000000ULL;
    else ex = 1;
    int sh = ex - 1075 - VT_XACC_LOW; /* position of m's least significant bit: 14 .. 2059 */
    int li = sh / 32, o = sh % 32;
    uint64_t lo_part = (m & 0xffffffffULL) << o; /* < 2^63 */
    uint64_t hi_part = (m >> 32) << o;           /* < 2^52 */
    int64_t c0 = (int64_t)(lo_part & 0xffffffffULL);
    int64_t c1 = (int64_t)(lo_part >> 32) + (int64_t)(hi_part & 0xffffffffULL);
    int64_t c2 = (int64_t)(hi_part >> 32);
    if (neg) {
        c0 = -c0;
        c1 = -c1;
        c2 = -c2;
    }
    a->L[li] += c0;
    a->L[li + 1] += c1;
    a->L[li + 2] += c2; /* li + 2 <= 66 < TOP */
    if (li < a->lo) a->lo = li;
    if (li + 2 > a->hi) a->hi = li + 2;
    if (++a->pending == VTI_XFLUSH) vti_xacc_norm(a);
}

/* |value| as 32-bit digits D[0..TOP] (a sum of fewer than 2^62 finite doubles is below 2^1086,
 * bit 2174 of the accumulator, so it fits below the top limb); returns the sign (-1, 0, 1). */
VT_HDI int vti_xacc_magnitude(const vt_xacc *a, uint32_t *D)
{
    vt_xacc t = *a;
    vti_xacc_norm(&t);
    int neg = t.L[VTI_XTOP] < 0;
    if (neg) {
        for (int l = 0; l <= VTI_XTOP; l++) t.L[l] = -t.L[l];
        t.lo = 0;
        t.hi = VTI_XTOP;
        vti_xacc_norm(&t);
    }
    int any = 0;
    for (int l = 0; l <= VTI_XTOP; l++) {
        D[l] = (uint32_t)t.L[l];
        any |= D[l] != 0;
    }
    return any ? (neg ? -1 : 1) : 0;
}

/* NaN or an infinity when a non-finite term was added (1), else 0 */
VT_HDI int vti_xacc_special(const vt_xacc *a, double *r)
{
    if (a->n_nan || (a->n_pinf && a->n_ninf)) {
        *r = vt_hd_f64(0x7ff8000000000000ULL);
        return 1;
    }
    if (a->n_pinf || a->n_ninf) {
        *r = a->n_pinf ? (double)INFINITY : -(double)INFINITY;
        return 1;
    }
    return 0;
}

/* Bits pos .. pos+n-1 of D (n <= 64), as an integer. */
VT_HDI uint64_t vti_xacc_get_bits(const uint32_t *D, int pos, int n)
{
    uint64_t r = 0;
    int got = 0;
    while (got < n) {
        int p = pos + got, li = p >> 5, off = p & 31;
        int take = 32 - off;
        if (take > n - got) take = n - got;
        uint64_t chunk = ((uint64_t)D[li] >> off) & (take == 32 ? 0xffffffffULL : ((1ULL << take) - 1));
        r |= chunk << got;
        got += take;
    }
    return r;
}

VT_HDI int vti_xacc_any_below(const uint32_t *D, int pos)
{
    int li = pos >> 5, off = pos & 31;
    if (off && (D[li] & ((1u << off) - 1))) return 1;
    for (int l = li - 1; l >= 0; l--)
        if (D[l]) return 1;
    return 0;
}

/* RN of the exact value to p significant bits with the lowest representable bit 2^emin
 * (subnormals), ties to even; the result is exact in double (p <= 53, emin >= -1074). */
VT_HDI double vti_xacc_round_to(const vt_xacc *a, int p, int emin)
{
    double sp;
    if (vti_xacc_special(a, &sp)) return sp;
    uint32_t D[VT_XACC_LIMBS];
    int sign = vti_xacc_magnitude(a, D);
    if (sign == 0) return 0.0;
    int h = VTI_XTOP;
    while (D[h] == 0) h--;
    int P = 32 * h + 31 - vt_hd_clz32(D[h]); /* position of the leading bit */
    int q = P - (p - 1);                     /* position of the result's last bit */
    if (q < emin - VT_XACC_LOW) q = emin - VT_XACC_LOW;
    uint64_t mant = P >= q ? vti_xacc_get_bits(D, q, P - q + 1) : 0;
    int guard = (D[(q - 1) >> 5] >> ((q - 1) & 31)) & 1;
    int sticky = vti_xacc_any_below(D, q - 1);
    if (guard && (sticky || (mant & 1))) mant++; /* mant <= 2^p: exact in double */
    double r = ldexp((double)mant, q + VT_XACC_LOW); /* inf when beyond FP64 */
    return sign < 0 ? -r : r;
}

VT_HDI double vti_xacc_round64(const vt_xacc *a) { return vti_xacc_round_to(a, 53, -1074); }

VT_HDI float vti_xacc_round32(const vt_xacc *a)
{
    double r = vti_xacc_round_to(a, 24, -149);
    if (r > (double)FLT_MAX) return (float)INFINITY; /* RN overflows at 2^128 - 2^103 and above */
    if (r < -(double)FLT_MAX) return -(float)INFINITY;
    return (float)r; /* exact: at most 24 bits on the FP32 grid (NaN passes) */
}

/* exact sum_k a[k*inca] * b[k*incb] of FP32 vectors into a fresh accumulator */
VT_HDI void vti_xacc_dot32(vt_xacc *acc, size_t K, const float *a, size_t inca, const float *b, size_t incb)
{
    vti_xacc_init(acc);
    for (size_t k = 0; k < K; k++) vti_xacc_add(acc, (double)a[k * inca] * (double)b[k * incb]);
}

/* ---- the compensated dot product (vt_dot_comp32 / vt_dot_comp64) ---- */

/* TwoSum (Knuth): t + err == s + p exactly, for any finite s, p whose sum does not overflow
 * (also under gradual underflow, where an addition with a subnormal result is exact) */
#define VT_TWOSUM(s, p, err)                                                                                           \
    do {                                                                                                               \
        double t_ = (s) + (p), z_ = t_ - (s);                                                                          \
        (err) = ((s) - (t_ - z_)) + ((p) - z_);                                                                        \
        (s) = t_;                                                                                                      \
    } while (0)

/* X = S + (every err) exactly. C is a sum of at most n + 8 errors in FP64:
 * |C - sum err| <= gamma_(n+8) sum|err|, and M, summed alike, gives sum|err| <= M / (1 - gamma_(n+8));
 * with (n + 8) u <= 2^-22 both factors are inside 1.01. r = RN(S + C) adds u |r| (1 + u); the final
 * inflation covers the rounding of this expression, DBL_MIN an underflow in it. M = 0: every error
 * is zero, C = 0 and r = S = X exactly. */
VT_HDI void vti_comp_finish(size_t n, double S, double C, double M, double *s_out, double *e_out)
{
    double r = S + C;
    *s_out = r;
    *e_out = M == 0 ? 0.0
                    : (vt_hd_fabs(r) * 0x1p-53 + (double)(n + 8) * 0x1p-53 * 1.01 * M) * (1.0 + 0x1p-20) + DBL_MIN;
}

/* The compensated sum of the n exact products PROD(k): four TwoSum lanes, the lanes joined by
 * TwoSum, the errors summed alongside (C) and their magnitudes (M). */
#define VT_COMP_DOT(n, t, PROD, s_out, e_out)                                                                          \
    do {                                                                                                               \
        double s_[4] = {0, 0, 0, 0}, c_[4] = {0, 0, 0, 0}, m_[4] = {0, 0, 0, 0}, err_;                                 \
        size_t k_ = 0;                                                                                                 \
        for (; k_ + 4 <= (n); k_ += 4)                                                                                 \
            for (int l_ = 0; l_ < 4; l_++) {                                                                           \
                const size_t t = k_ + (size_t)l_;                                                                      \
                double p_ = (PROD);                                                                                    \
                VT_TWOSUM(s_[l_], p_, err_);                                                                           \
                c_[l_] += err_;                                                                                        \
                m_[l_] += vt_hd_fabs(err_);                                                                            \
            }                                                                                                          \
        for (; k_ < (n); k_++) {                                                                                       \
            const size_t t = k_;                                                                                       \
            double p_ = (PROD);                                                                                        \
            VT_TWOSUM(s_[0], p_, err_);                                                                                \
            c_[0] += err_;                                                                                             \
            m_[0] += vt_hd_fabs(err_);                                                                                 \
        }                                                                                                              \
        double S_ = s_[0], C_ = (c_[0] + c_[1]) + (c_[2] + c_[3]), M_ = (m_[0] + m_[1]) + (m_[2] + m_[3]);             \
        for (int l_ = 1; l_ < 4; l_++) {                                                                               \
            VT_TWOSUM(S_, s_[l_], err_);                                                                               \
            C_ += err_;                                                                                                \
            M_ += vt_hd_fabs(err_);                                                                                    \
        }                                                                                                              \
        vti_comp_finish((n), S_, C_, M_, (s_out), (e_out));                                                            \
    } while (0)

VT_HDI void vti_dot_comp32(size_t n, const float *a, size_t inca, const float *b, size_t incb, double *s_out,
                           double *e_out)
{
    VT_COMP_DOT(n, t, (double)a[t * inca] * (double)b[t * incb], s_out, e_out);
}

#endif
