/* vt_tc_probes.h - what the tensor-core tests share (tests/test_tc.c on the CPU, tests/test_tc_gpu.cu
 * on a GPU): the generator of the known-answer digests and random groups (splitmix64, gen_in, gen_c:
 * docs/tensorcore.md "Known answers") and the probe tiles with their hand-derived results (the
 * derivations in the comments). C and C++. */
#ifndef VT_TC_PROBES_H
#define VT_TC_PROBES_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif
#include "kernels/vt_tc.h"
#ifdef __cplusplus
}
#endif

/* splitmix64, as documented for the KAT digest (docs/tensorcore.md) */
static inline uint64_t sm64(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* one input of the type: mode 0 any bit pattern, 1 a narrow exponent band around 1 (cancellation,
 * carries), 2 tiny (subnormals and the bottom of the range), 3 huge */
static inline uint16_t gen_in(int type, uint64_t *s, int mode)
{
    const vti_tc_fmt F = vti_tc_fmt_of((vt_tc_type)type), *f = &F;
    uint64_t u = sm64(s);
    unsigned sign = (unsigned)(u & 1) << (f->ebits + f->mbits);
    unsigned frac = (unsigned)(u >> 8) & ((1u << f->mbits) - 1);
    int fmax = (1 << f->ebits) - 1, field;
    if (mode == 0) return (uint16_t)((u >> 16) & ((1u << (f->ebits + f->mbits + 1)) - 1));
    if (mode == 1) field = f->bias - 3 + (int)((u >> 32) % 7);
    else if (mode == 2) field = (int)((u >> 32) % 3);
    else field = fmax - 1 - (int)((u >> 32) % 3) + (f->has_inf ? 0 : 1);
    unsigned v = (unsigned)field << f->mbits | frac;
    if (!f->has_inf && v >= (unsigned)(fmax << f->mbits | ((1 << f->mbits) - 1))) v--; /* not the E4M3 NaN */
    return (uint16_t)(sign | v);
}

/* an FP32 accumulator for the mode */
static inline uint32_t gen_c(uint64_t *s, int mode)
{
    uint64_t u = sm64(s);
    uint32_t sign = (uint32_t)(u & 1) << 31, frac = (uint32_t)(u >> 8) & 0x7FFFFF;
    switch (mode) {
    case 0: return (uint32_t)(u >> 16);
    case 1: return sign | (uint32_t)(124 + (u >> 40) % 7) << 23 | frac;
    case 2: return sign | (uint32_t)((u >> 40) % 3) << 23 | frac;
    default: return sign | (uint32_t)(252 + (u >> 40) % 3) << 23 | frac;
    }
}

typedef struct {
    const char *name;
    const vt_tc_arch *arch;
    int variant; /* 0 as built; 1 align FLOOR; 2 out RNE; 3 e_floor -300; 4 inf_on_overflow 0 */
    uint32_t c;
    int n;
    uint16_t a[32], b[32]; /* products beyond the listed ones: repeats of the last pair when rep */
    int rep;               /* the first pair repeated n times */
    uint32_t want;         /* expected FP32 bits, derived by hand below */
    uint32_t rn;           /* RN32 of the exact sum (0 when not stated) */
} probe;

/* BF16: 2^k = (127 + k) << 7; FP16: 2^k = (15 + k) << 10; FP32 1.0 = 0x3F800000. */
static const probe PROBES[] = {
    /* 1*1 + 2*0.5 = 2: exact */
    {"exact", &vt_tc_sm90_bf16, 0, 0, 2, {0x3F80, 0x4000}, {0x3F80, 0x3F00}, 0, 0x40000000, 0x40000000},
    /* 1 + 1.5*2^-24: E = 0, window bottom 2^-25, the product is 3 units, kept; the sum 1 + 3*2^-25
     * has 26 bits, FP32 truncation keeps 1.0. RN32 gives 1 + 2^-23 (0.75 ulp rounds up). */
    {"rz-not-rn", &vt_tc_sm90_bf16, 0, 0x3F800000, 1, {0x3FC0}, {0x3380}, 0, 0x3F800000, 0x3F800001},
    /* 1 + 16 * 2^-26: each product (2^-13 * 2^-13) is half a unit of 2^-25: truncated to 0 before
     * the sum; result 1.0. RN32(1 + 2^-22) = 0x3F800002. */
    {"tiny-dropped", &vt_tc_sm90_bf16, 0, 0x3F800000, 16, {0x3900}, {0x3900}, 1, 0x3F800000, 0x3F800002},
    /* 1 + 8 * 2^-25 (2^-12 * 2^-13): on sm90 (w = 26, bottom 2^-25) each is one unit: 1 + 2^-22;
     * on sm80 (w = 25, bottom 2^-24) each is half a unit: 1.0 */
    {"width-26", &vt_tc_sm90_bf16, 0, 0x3F800000, 8, {0x3980}, {0x3900}, 1, 0x3F800002, 0x3F800002},
    {"width-25", &vt_tc_sm80_bf16, 0, 0x3F800000, 8, {0x3980}, {0x3900}, 1, 0x3F800000, 0x3F800002},
    /* 1024 - 1024*1 + 2^-10*2^-10: E = 10, bottom 2^-15; 2^-20 truncated; +0. Exact: 2^-20 */
    {"cancellation", &vt_tc_sm90_bf16, 0, 0x44800000, 2, {0xC480, 0x3A80}, {0x3F80, 0x3A80}, 0, 0x00000000,
     0x35800000},
    /* BF16 subnormal 2^-133 (0x0001) * 2^100 = 2^-33, its alignment exponent -126 + 100 = -26 (kept
     * unnormalised); (2^-52 + 2^-59) * 1: alignment -52. E = -26, bottom 2^-51: the second product is
     * 0.5 + 2^-8 units: 0. Result 2^-33 = 0x2F000000 (normalised, E would be -33 and 2^-52 kept). */
    {"subnormal-unnormalised", &vt_tc_sm90_bf16, 0, 0, 2, {0x0001, 0x2581}, {0x7180, 0x3F80}, 0, 0x2F000000, 0},
    /* 8 * 2^-76 * 2^-76 = 8 * 2^-152: the exponent floor makes E = -126, bottom 2^-151: each is half a
     * unit: +0. Without the floor (variant 3: e_floor -300) E = -152, the sum 2^-149 = 0x00000001. */
    {"exp-floor", &vt_tc_sm90_bf16, 0, 0, 8, {0x1980}, {0x1980}, 1, 0x00000000, 0x00000001},
    {"exp-floor-off", &vt_tc_sm90_bf16, 3, 0, 8, {0x1980}, {0x1980}, 1, 0x00000001, 0x00000001},
    /* FLT_MAX + 2^104: E = 127, bottom 2^102: (2^24-1)*4 + 4 = 2^26 units: 27 bits, normalised to
     * 2^128: overflow: +inf (variant 4: FLT_MAX) */
    {"overflow", &vt_tc_sm90_bf16, 0, 0x7F7FFFFF, 1, {0x7380}, {0x3F80}, 0, 0x7F800000, 0x7F800000},
    {"overflow-sat", &vt_tc_sm90_bf16, 4, 0x7F7FFFFF, 1, {0x7380}, {0x3F80}, 0, 0x7F7FFFFF, 0x7F800000},
    /* FLT_MAX + 2^103 (half its ulp): 2^26 - 2 units, truncated to FLT_MAX; RN32 ties to even: inf */
    {"max-half-ulp", &vt_tc_sm90_bf16, 0, 0x7F7FFFFF, 1, {0x7300}, {0x3F80}, 0, 0x7F7FFFFF, 0x7F800000},
    /* (1 + 2^-23) + 16 * 1: 17 + 2^-23 has 28 bits: normalisation keeps 26, FP32 17.0 */
    {"carry", &vt_tc_sm90_bf16, 0, 0x3F800001, 16, {0x3F80}, {0x3F80}, 1, 0x41880000, 0x41880000},
    /* ties at the FP32 boundary: 1 + 2^-24 (kept: 2 units): RZ 1.0; RNE ties to even 1.0;
     * (1 + 2^-23) + 2^-24: RZ 1 + 2^-23, RNE ties to even 1 + 2^-22 */
    {"tie-rz", &vt_tc_sm90_bf16, 0, 0x3F800000, 1, {0x3980}, {0x3980}, 0, 0x3F800000, 0x3F800000},
    {"tie-rne-down", &vt_tc_sm90_bf16, 2, 0x3F800000, 1, {0x3980}, {0x3980}, 0, 0x3F800000, 0x3F800000},
    {"tie-rne-up", &vt_tc_sm90_bf16, 2, 0x3F800001, 1, {0x3980}, {0x3980}, 0, 0x3F800002, 0x3F800002},
    /* 1 - 2^-26: the magnitude's truncation drops the term (1.0); the two's-complement shift
     * (variant 1) makes it -1 unit: 1 - 2^-25, truncated to FP32 1 - 2^-24 = 0x3F7FFFFF */
    {"neg-rz", &vt_tc_sm90_bf16, 0, 0x3F800000, 1, {0xB900}, {0x3900}, 0, 0x3F800000, 0x3F800000},
    {"neg-floor", &vt_tc_sm90_bf16, 1, 0x3F800000, 1, {0xB900}, {0x3900}, 0, 0x3F7FFFFF, 0x3F800000},
    /* specials: inf * 0 -> NaN (nan_bits); inf + (-inf) -> NaN; -inf accumulator -> -inf; NaN input
     * -> NaN; -0 + (-0 * 1) = -0; -0 + (+0 * 1) = +0 */
    {"inf-times-0", &vt_tc_sm90_bf16, 0, 0, 1, {0x7F80}, {0x0000}, 0, 0x7FFFFFFF, 0},
    {"inf-minus-inf", &vt_tc_sm90_bf16, 0, 0x3F800000, 2, {0x7F80, 0xFF80}, {0x3F80, 0x3F80}, 0, 0x7FFFFFFF, 0},
    {"c-neg-inf", &vt_tc_sm90_bf16, 0, 0xFF800000, 1, {0x3F80}, {0x3F80}, 0, 0xFF800000, 0xFF800000},
    {"nan-input", &vt_tc_sm90_bf16, 0, 0x3F800000, 1, {0x7FC1}, {0x3F80}, 0, 0x7FFFFFFF, 0},
    {"neg-zero", &vt_tc_sm90_bf16, 0, 0x80000000, 1, {0x8000}, {0x3F80}, 0, 0x80000000, 0x80000000},
    {"pos-zero", &vt_tc_sm90_bf16, 0, 0x80000000, 1, {0x0000}, {0x3F80}, 0, 0x00000000, 0x00000000},
    /* FP16: 65504 * 65504 = 2047^2 * 2^10, 22 bits: exact in FP32 = 0x4F7FC004 */
    {"fp16-max", &vt_tc_sm90_fp16, 0, 0, 1, {0x7BFF}, {0x7BFF}, 0, 0x4F7FC004, 0x4F7FC004},
    /* FP16 subnormal 2^-24 (0x0001) * 1 + 1: alignment exponent -14, 2 units of 2^-25 kept: 1 + 2^-24,
     * FP32 truncation 1.0 */
    {"fp16-subnormal", &vt_tc_sm90_fp16, 0, 0x3F800000, 1, {0x0001}, {0x3C00}, 0, 0x3F800000, 0x3F800000},
    /* FP16 on sm80: 1 + 8 * 2^-25 (2^-12 * 2^-13): 1.0 (w = 25), as width-25 */
    {"fp16-sm80", &vt_tc_sm80_fp16, 0, 0x3F800000, 8, {0x0C00}, {0x0800}, 1, 0x3F800000, 0x3F800002},
    /* E4M3: 32 * 448 * 448 = 49 * 2^17 = 6422528 exact; 1 + 32 * 2^-7 * 2^-7 (subnormals 0x04,
     * alignment exponent -12, bottom 2^-13: each 2^-14 half a unit): 1.0; RN32 1 + 2^-9 */
    {"e4m3-max", &vt_tc_sm90_e4m3, 0, 0, 32, {0x7E}, {0x7E}, 1, 0x4AC40000, 0x4AC40000},
    {"e4m3-window", &vt_tc_sm90_e4m3, 0, 0x3F800000, 32, {0x04}, {0x04}, 1, 0x3F800000, 0x3F804000},
};

static inline vt_tc_arch probe_arch(const probe *p)
{
    vt_tc_arch A = *p->arch;
    if (p->variant == 1) A.align = VT_TC_ALIGN_FLOOR;
    if (p->variant == 2) A.out = VT_TC_OUT_RNE;
    if (p->variant == 3) A.e_floor = -300;
    if (p->variant == 4) A.inf_on_overflow = 0;
    return A;
}

#endif
