/* vt_tc_hd.h - the tensor-core model's exactly specified pieces shared by the CPU emulator
 * (kernels/vt_tc.c, gcc) and the CUDA kernel of the mode (backend/cuda/vt_tc_mma.cu, nvcc): the input
 * types, FP32 -> BF16 / FP16 / E4M3 by round-to-nearest-even, the exact conversion back, the
 * decoding of an input into significand and unit exponent, and the FP32 packing of a rounded
 * magnitude. Integer arithmetic only, so the host and the device return the same bits (the GPU
 * kernel rounds its operands with this code, never with the CUDA intrinsics). The model:
 * docs/tensorcore.md. */
#ifndef VT_TC_HD_H
#define VT_TC_HD_H

#include <stdint.h>

#include "../common/vt_hd.h"

/* The input types of the products. */
typedef enum { VT_TC_BF16 = 0, VT_TC_FP16 = 1, VT_TC_E4M3 = 2 } vt_tc_type;

typedef struct {
    int mbits;   /* stored fraction bits */
    int ebits;   /* exponent field bits */
    int bias;
    int has_inf; /* IEEE-style infinities and NaNs at the top field; else (E4M3) only S.1111.111 is NaN */
} vti_tc_fmt;

VT_HDI vti_tc_fmt vti_tc_fmt_of(vt_tc_type t)
{
    vti_tc_fmt f;
    if (t == VT_TC_BF16) f.mbits = 7, f.ebits = 8, f.bias = 127, f.has_inf = 1;
    else if (t == VT_TC_FP16) f.mbits = 10, f.ebits = 5, f.bias = 15, f.has_inf = 1;
    else f.mbits = 3, f.ebits = 4, f.bias = 7, f.has_inf = 0;
    return f;
}

/* the number of significant bits of x (0 for 0) */
VT_HDI int vti_tc_bitlen64(uint64_t x)
{
#if defined(__CUDA_ARCH__)
    return 64 - __clzll((long long)x);
#else
    return x ? 64 - __builtin_clzll(x) : 0;
#endif
}

/* sign * mag * 2^lsb (mag > 0) rounded to a format with p significant bits (hidden bit included),
 * minimum normal exponent emin: the magnitude r and its last-bit exponent q, r * 2^q the rounded
 * value, r < 2^p, r >= 2^(p-1) unless q = emin - p + 1 (subnormal). rne: 1 round to nearest even,
 * 0 truncate. */
VT_HDI void vti_tc_round_mag(uint64_t mag, int lsb, int p, int emin, int rne, uint64_t *r_out, int *q_out)
{
    int L = vti_tc_bitlen64(mag) - 1 + lsb; /* the leading bit's exponent */
    int q = L - (p - 1);
    if (q < emin - p + 1) q = emin - p + 1;
    uint64_t r;
    if (q <= lsb) { /* exact */
        r = mag;
        q = lsb;
    } else {
        int d = q - lsb;
        if (d > 64) {
            r = 0;
        } else if (d == 64) {
            r = 0;
            if (rne && mag > (1ull << 63)) r = 1;
        } else {
            r = mag >> d;
            uint64_t rem = mag & ((1ull << d) - 1), half = 1ull << (d - 1);
            if (rne && (rem > half || (rem == half && (r & 1)))) r++;
        }
        if (r == (1ull << p)) r >>= 1, q++; /* the rounding carried into a new bit */
    }
    *r_out = r;
    *q_out = q;
}

/* FP32 bits from a rounded magnitude (r * 2^q, r < 2^24, r * 2^q a float or beyond FP32's range). */
VT_HDI uint32_t vti_tc_f32_pack(uint32_t sign, uint64_t r, int q, int inf_on_overflow)
{
    if (r == 0) return sign;
    int n = vti_tc_bitlen64(r);
    int L = n - 1 + q;
    if (L > 127) return sign | (inf_on_overflow ? 0x7F800000u : 0x7F7FFFFFu);
    if (L < -126) return sign | (uint32_t)(r << (q + 149)); /* subnormal: q >= -149 */
    uint64_t m = n <= 24 ? r << (24 - n) : r >> (n - 24); /* exact: r has at most 24 significant bits */
    return sign | (uint32_t)(L + 127) << 23 | ((uint32_t)m & 0x7FFFFFu);
}

/* FP32 (bits) -> the type's bits by round-to-nearest-even (kernels/vt_tc.h vt_tc_from_f32). */
VT_HDI uint16_t vt_tc_from_f32_hd(vt_tc_type type, uint32_t x)
{
    uint32_t s = x >> 31, e = (x >> 23) & 0xFF, m = x & 0x7FFFFFu;
    if (type == VT_TC_BF16) {
        if (e == 0xFF && m) return (uint16_t)(s << 15 | 0x7FC0u);
        return (uint16_t)((x + 0x7FFFu + ((x >> 16) & 1)) >> 16); /* a carry reaches the exponent, up to inf */
    }
    const vti_tc_fmt f = vti_tc_fmt_of(type);
    uint16_t sg = (uint16_t)(s << (f.ebits + f.mbits));
    int fmax = (1 << f.ebits) - 1;
    uint16_t maxfin = f.has_inf ? (uint16_t)((fmax - 1) << f.mbits | ((1 << f.mbits) - 1))
                                : (uint16_t)(fmax << f.mbits | ((1 << f.mbits) - 2));
    if (e == 0xFF) {
        if (m)
            return (uint16_t)(sg | (f.has_inf ? (fmax << f.mbits | 1 << (f.mbits - 1))
                                              : (fmax << f.mbits | ((1 << f.mbits) - 1))));
        return (uint16_t)(sg | (f.has_inf ? fmax << f.mbits : maxfin));
    }
    if (e == 0 && m == 0) return sg;
    uint64_t mag = e ? (m | 0x800000u) : m;
    int lsb = (e ? (int)e : 1) - 150;
    int emin = 1 - f.bias;
    uint64_t r;
    int q;
    vti_tc_round_mag(mag, lsb, f.mbits + 1, emin, 1, &r, &q);
    if (r == 0) return sg;
    int L = vti_tc_bitlen64(r) - 1 + q;
    uint32_t field, frac;
    if (L < emin) {
        field = 0;
        frac = (uint32_t)r; /* q = emin - mbits */
    } else {
        field = (uint32_t)(L + f.bias);
        frac = (uint32_t)(r & ((1u << f.mbits) - 1));
    }
    uint32_t v = field << f.mbits | frac;
    if (f.has_inf) {
        if (field >= (uint32_t)fmax) v = (uint32_t)fmax << f.mbits; /* overflow: inf */
    } else if (v > maxfin) {
        v = maxfin; /* E4M3: satfinite */
    }
    return (uint16_t)(sg | v);
}

/* The type's bits -> FP32 bits, exact (kernels/vt_tc.h vt_tc_to_f32). */
VT_HDI uint32_t vt_tc_to_f32_hd(vt_tc_type type, uint16_t b)
{
    if (type == VT_TC_BF16) return (uint32_t)b << 16;
    const vti_tc_fmt f = vti_tc_fmt_of(type);
    uint32_t s = (uint32_t)(b >> (f.ebits + f.mbits)) << 31;
    int fmax = (1 << f.ebits) - 1;
    int field = (b >> f.mbits) & fmax, frac = b & ((1 << f.mbits) - 1);
    if (f.has_inf && field == fmax) return s | 0x7F800000u | (uint32_t)frac << (23 - f.mbits) | (frac ? 0x400000u : 0);
    if (!f.has_inf && field == fmax && frac == (1 << f.mbits) - 1) return s | 0x7FC00000u;
    uint64_t mag = field ? (uint64_t)(frac | 1 << f.mbits) : (uint64_t)frac;
    int lsb = (field ? field : 1) - f.bias - f.mbits;
    return vti_tc_f32_pack(s, mag, lsb, 1); /* exact: every value of these types is an FP32 normal */
}

/* E4M3 bits -> the FP16 bits of the same value, exactly (every E4M3 value is an FP16 normal or zero;
 * NaN -> sign | 0x7E00): the inputs of a via_fp16 model (kernels/vt_tc.h), on the host and the GPU. */
VT_HDI uint16_t vt_tc_e4m3_to_fp16_hd(uint16_t b)
{
    return vt_tc_from_f32_hd(VT_TC_FP16, vt_tc_to_f32_hd(VT_TC_E4M3, b));
}

/* An input of the type: class 0 zero, 1 finite nonzero, 2 inf, 3 NaN; its sign (bit 31), its
 * significand (hidden bit included, subnormals without it) and the exponent of the significand's
 * unit bit (emin for subnormals: not normalised). */
VT_HDI int vti_tc_decode(vti_tc_fmt f, uint16_t b, uint32_t *sign, uint64_t *sig, int *eunit)
{
    int fmax = (1 << f.ebits) - 1;
    int field = (b >> f.mbits) & fmax, frac = b & ((1 << f.mbits) - 1);
    *sign = (uint32_t)(b >> (f.ebits + f.mbits)) << 31;
    if (f.has_inf && field == fmax) return frac ? 3 : 2;
    if (!f.has_inf && field == fmax && frac == (1 << f.mbits) - 1) return 3;
    *sig = field ? (uint64_t)(frac | 1 << f.mbits) : (uint64_t)frac;
    *eunit = (field ? field : 1) - f.bias;
    return *sig ? 1 : 0;
}

#endif
