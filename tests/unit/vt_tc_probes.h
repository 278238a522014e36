/* vt_tc_probes.h - what the tensor-core tests share (tests/unit/test_tc.c on the CPU, tests/unit/test_tc_gpu.cu
 * on a GPU): the generator of the known-answer digests and random groups (splitmix64, gen_in, gen_c:
 * docs/tensorcore.md "Known answers"), the probe tiles with their hand-derived results (the
 * derivations in the comments), and the question probes (QPROBES: each variant's result, by hand, and
 * q_emulate, the emulator with the variant's explicit parameters). C and C++. */
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
    /* sm90-e4m3f16 (E4M3 converted exactly to FP16, groups of 16; E4M3: 2^k = (7 + k) << 3, 0x04 = 2^-7 a
     * subnormal, 0x01 = 2^-9): one group of its instruction (K = 16).
     * 1 + 16 * 2^-7 * 2^-7: 2^-7 is an FP16 normal (exponent -7), each product 2^-14 (alignment -14);
     * E = 0, bottom 2^-25: kept: 1 + 2^-10 = 0x3F802000 (sm90-e4m3 drops them: alignment -12, bottom 2^-13). */
    {"e4m3f16-window", &vt_tc_sm90_e4m3f16, 0, 0x3F800000, 16, {0x04}, {0x04}, 1, 0x3F802000, 0x3F802000},
    /* 1 + 16 * (1.125 * 2^-6) * 2^-6 (0x09, 0x08): each 2^-12 + 2^-15, exact: 1 + 2^-8 + 2^-11 = 0x3F809000 */
    {"e4m3f16-band", &vt_tc_sm90_e4m3f16, 0, 0x3F800000, 16, {0x09}, {0x08}, 1, 0x3F809000, 0x3F809000},
    /* 1 + 2^-9 * 2^-9 (the smallest subnormals, FP16 normals 2^-9): 2^-18 above the bottom 2^-25: kept,
     * and FP32 holds 1 + 2^-18 = 0x3F800020 */
    {"e4m3f16-subnormal", &vt_tc_sm90_e4m3f16, 0, 0x3F800000, 1, {0x01}, {0x01}, 0, 0x3F800020, 0x3F800020},
    /* 16 * 448 * 448 = 49 * 2^16 = 3211264 = 1.53125 * 2^21: exact, 0x4A440000 */
    {"e4m3f16-max", &vt_tc_sm90_e4m3f16, 0, 0, 16, {0x7E}, {0x7E}, 1, 0x4A440000, 0x4A440000},
};

/* ------------------------------------------------------------------ the questions (issue 41)
 *
 * What only hardware can answer (docs/tensorcore.md "The unknowns"): each question has variants, each
 * variant's result on a probe computed by the emulator with explicit parameters (q_emulate) and
 * derived by hand below (want[v]); tests/unit/test_tc.c checks the two agree, test_tc_gpu asks the GPU
 * which variant it follows. A probe is one group in element (0, 0) of a tile of its instruction: the
 * n products listed, then +0 * +0 up to the instruction's K (as the GPU sees them). */
enum { VT_Q_E4M3 = 0, VT_Q_ZERO_EXP, VT_Q_ZERO_SIGN, VT_Q_CARRY, VT_Q_COUNT };
#define VT_Q_MAXVAR 3
static const char *const Q_NAME[VT_Q_COUNT] = {"E4M3 mma.sync m16n8k32", "zero products in the maximum exponent",
                                               "the sign of an exact zero", "the maximum carry"};
static const int Q_NVAR[VT_Q_COUNT] = {3, 2, 2, 1};
static const char *const Q_VAR[VT_Q_COUNT][VT_Q_MAXVAR] = {
    {"wgmma's model (sm90-e4m3: one group of 32, w = 14)", "FP16 path (sm90-e4m3f16: k 0-15, then k 16-31)",
     "FP16 path, halves interleaved (k mod 4 < 2, then the rest)"},
    {"not counted", "counted (a zero's exponent from its fields)", ""},
    {"IEEE (-0 only from -0 terms)", "always +0", ""},
    {"the model", "", ""},
};
/* the same, short (the GPU check's probe lines) */
static const char *const Q_SHORT[VT_Q_COUNT][VT_Q_MAXVAR] = {
    {"wgmma", "f16", "f16-ilv"}, {"not-counted", "counted", ""}, {"ieee", "pos", ""}, {"model", "", ""}};
/* the variant every mode commits to (-1: no mode issues the instruction: information) */
static const int Q_MODE_VAR[VT_Q_COUNT] = {-1, VT_TC_ZERO_EXP_NONE, VT_TC_ZERO_IEEE, 0};

typedef struct {
    const char *name;
    int q;                  /* VT_Q_* */
    const vt_tc_arch *arch; /* whose instruction (K = its group; VT_Q_E4M3: the m16n8k32 E4M3 mma.sync) */
    uint32_t c;
    int n;
    uint16_t a[32], b[32];
    int rep;                      /* the first pair repeated n times */
    uint32_t want[VT_Q_MAXVAR];   /* each variant's FP32 bits, derived by hand */
} qprobe;

static const qprobe QPROBES[] = {
    /* E4M3 (0x38 = 1, 2^k = (7 + k) << 3; 0x04 = 2^-7 and 0x01 = 2^-9 subnormals; 0x7E = 448 = 1.75 * 2^8):
     * 1 + 32 * 2^-7 * 2^-7. wgmma's model: the subnormal's exponent is emin -6, each product's alignment
     * -12, E = 0, w = 14, bottom 2^-13: each 2^-14 is half a unit, dropped: 1.0. Through FP16: 2^-7 is a
     * normal, the products 2^-14 kept (bottom 2^-25): 1 + 2^-10 after 16, 1 + 2^-9 = 0x3F804000 after 32. */
    {"e4m3-window", VT_Q_E4M3, &vt_tc_sm90_e4m3, 0x3F800000, 32, {0x04}, {0x04}, 1,
     {0x3F800000, 0x3F804000, 0x3F804000}},
    /* 1 + 32 * (1.125 * 2^-6) * 2^-6 (0x09 * 0x08, normals): each 2^-12 + 2^-15. wgmma's model: alignment
     * -12, bottom 2^-13: 2^-15 is cut, 2^-12 kept: 1 + 2^-7 = 0x3F810000. Through FP16 (exact):
     * 1 + 2^-8 + 2^-11 after 16, 1 + 2^-7 + 2^-10 = 0x3F812000 after 32. */
    {"e4m3-band", VT_Q_E4M3, &vt_tc_sm90_e4m3, 0x3F800000, 32, {0x09}, {0x08}, 1,
     {0x3F810000, 0x3F812000, 0x3F812000}},
    /* the same with negative products: wgmma's model truncates each magnitude to 2^-12: 1 - 2^-7 =
     * 0x3F7E0000; through FP16: 1 - 2^-8 - 2^-11 (exact), then 1 - 2^-7 - 2^-10 = 1015/1024 = 0x3F7DC000 */
    {"e4m3-band-neg", VT_Q_E4M3, &vt_tc_sm90_e4m3, 0x3F800000, 32, {0x89}, {0x08}, 1,
     {0x3F7E0000, 0x3F7DC000, 0x3F7DC000}},
    /* the accumulator alone: c = 2 - 2^-23, every product +0 * +0. wgmma's model: E = 0, bottom 2^-13: c
     * cut to 2 - 2^-13 = 0x3FFFFC00 (13 fraction bits: the SageAttention2 observation, SageAttention issue
     * 287). Through FP16: bottom 2^-25, c kept: 0x3FFFFFFF */
    {"e4m3-c-only", VT_Q_E4M3, &vt_tc_sm90_e4m3, 0x3FFFFFFF, 0, {0}, {0}, 0, {0x3FFFFC00, 0x3FFFFFFF, 0x3FFFFFFF}},
    /* 448^2 - 448^2 + 2^-6 * 2^-6 at k = 0, 1, 2. wgmma's model: E = 16, bottom 2^3: 2^-12 cut, +0. FP16
     * path: k 0-15 hold all three, E = 16, bottom 2^-9: 2^-12 cut, +0; then 16 zero products: +0.
     * Interleaved halves: k 0, 1 first (0: +0), then k 2: 2^-12 = 0x39800000. */
    {"e4m3-split", VT_Q_E4M3, &vt_tc_sm90_e4m3, 0, 3, {0x7E, 0xFE, 0x08}, {0x7E, 0x7E, 0x08}, 0,
     {0x00000000, 0x00000000, 0x39800000}},
    /* zero products (BF16: 2^k = (127 + k) << 7; FP16: (15 + k) << 10): 0 * 2^127 beside 2^-15 * 2^-15.
     * Not counted: E = -30, 2^-30 exact = 0x30800000. Counted: the zero's exponent is emin -126, the
     * product's -126 + 127 = 1 = E, bottom 2^-24 (w 26; 2^-23 for w 25): 2^-30 cut, +0. */
    {"zero-huge-bf16", VT_Q_ZERO_EXP, &vt_tc_sm90_bf16, 0, 2, {0x0000, 0x3800}, {0x7F00, 0x3800}, 0,
     {0x30800000, 0x00000000}},
    /* FP16: 0 * 2^15 beside 2^-14 * 2^-14: not counted 2^-28 = 0x31800000; counted: -14 + 15 = 1 = E: +0.
     * Then the zero in B. */
    {"zero-huge-fp16", VT_Q_ZERO_EXP, &vt_tc_sm90_fp16, 0, 2, {0x0000, 0x0400}, {0x7800, 0x0400}, 0,
     {0x31800000, 0x00000000}},
    {"zero-huge-fp16-b", VT_Q_ZERO_EXP, &vt_tc_sm90_fp16, 0, 2, {0x7800, 0x0400}, {0x0000, 0x0400}, 0,
     {0x31800000, 0x00000000}},
    {"zero-huge-bf16-sm80", VT_Q_ZERO_EXP, &vt_tc_sm80_bf16, 0, 2, {0x0000, 0x3800}, {0x7F00, 0x3800}, 0,
     {0x30800000, 0x00000000}},
    {"zero-huge-fp16-sm80", VT_Q_ZERO_EXP, &vt_tc_sm80_fp16, 0, 2, {0x0000, 0x0400}, {0x7800, 0x0400}, 0,
     {0x31800000, 0x00000000}},
    /* signed zeros: c = -0 and every product -0 * 1 (the whole K): IEEE -0, else +0 */
    {"zsign-all-neg-bf16", VT_Q_ZERO_SIGN, &vt_tc_sm90_bf16, 0x80000000, 16, {0x8000}, {0x3F80}, 1,
     {0x80000000, 0x00000000}},
    {"zsign-all-neg-fp16", VT_Q_ZERO_SIGN, &vt_tc_sm90_fp16, 0x80000000, 16, {0x8000}, {0x3C00}, 1,
     {0x80000000, 0x00000000}},
    /* c = -0, 1 * 1 + (-1) * 1: an exact cancellation is +0 under both (IEEE: x - x = +0) */
    {"zsign-cancel-bf16", VT_Q_ZERO_SIGN, &vt_tc_sm90_bf16, 0x80000000, 2, {0x3F80, 0xBF80}, {0x3F80, 0x3F80}, 0,
     {0x00000000, 0x00000000}},
    {"zsign-cancel-fp16", VT_Q_ZERO_SIGN, &vt_tc_sm90_fp16, 0x80000000, 2, {0x3C00, 0xBC00}, {0x3C00, 0x3C00}, 0,
     {0x00000000, 0x00000000}},
    /* c = +0, every product -0: +0 under both */
    {"zsign-posc-bf16", VT_Q_ZERO_SIGN, &vt_tc_sm90_bf16, 0x00000000, 16, {0x8000}, {0x3F80}, 1,
     {0x00000000, 0x00000000}},
    {"zsign-all-neg-bf16-sm80", VT_Q_ZERO_SIGN, &vt_tc_sm80_bf16, 0x80000000, 8, {0x8000}, {0x3F80}, 1,
     {0x80000000, 0x00000000}},
    /* the maximum carry: c = 2 - 2^-23 (0x3FFFFFFF) + 16 * (2 - 2^-7)^2 (BF16 0x3FFF). E = 0, bottom 2^-25:
     * each product 65025 * 2^-14 = 133171200 units, c 67108860 units, S = 2197848060 (32 bits): its top
     * 26 bits 34341375 * 2^-19, FP32's 24: 8585343 * 2^-17 = 0x4283007F (RN32 of the sum: 0x42830080) */
    {"max-carry-bf16", VT_Q_CARRY, &vt_tc_sm90_bf16, 0x3FFFFFFF, 16, {0x3FFF}, {0x3FFF}, 1, {0x4283007F}},
    /* FP16 0x3FFF = 2 - 2^-10: each product 4190209 * 2^-20 = 134086688 units, S = 2212495868: top 26
     * bits 34570247 * 2^-19, FP32's 8642561 * 2^-17 = 0x4283E001 (RN32: 0x4283E002) */
    {"max-carry-fp16", VT_Q_CARRY, &vt_tc_sm90_fp16, 0x3FFFFFFF, 16, {0x3FFF}, {0x3FFF}, 1, {0x4283E001}},
};

/* the instruction's K of a question probe */
static inline int q_k(const qprobe *p) { return p->q == VT_Q_E4M3 ? 32 : p->arch->group; }

/* the probe's tile row: a, b [q_k] (the n products, then +0 * +0) */
static inline void q_row(const qprobe *p, uint16_t *a, uint16_t *b)
{
    for (int i = 0; i < q_k(p); i++) {
        a[i] = i >= p->n ? 0 : p->rep ? p->a[0] : p->a[i];
        b[i] = i >= p->n ? 0 : p->rep ? p->b[0] : p->b[i];
    }
}

/* variant v's result for the tile row a, b [q_k(p)] and accumulator c, by the emulator with explicit
 * parameters: VT_Q_E4M3 v 0 one sm90-e4m3 group of 32; v 1 two sm90-e4m3f16 groups (k 0-15, then
 * 16-31); v 2 two sm90-e4m3f16 groups (k mod 4 < 2, then the rest). VT_Q_ZERO_EXP: the probe's model
 * with zero_exp = v; VT_Q_ZERO_SIGN: with zero_sign = v; VT_Q_CARRY: the model. */
static inline uint32_t q_emulate(const qprobe *p, int v, uint32_t c, const uint16_t *a, const uint16_t *b)
{
    if (p->q == VT_Q_E4M3) {
        if (v == 0) return vt_tc_group(&vt_tc_sm90_e4m3, c, a, b, 32);
        uint16_t pa[32], pb[32];
        int m = 0;
        for (int half = 0; half < 2; half++)
            for (int k = 0; k < 32; k++)
                if ((v == 1 ? k < 16 : k % 4 < 2) == (half == 0)) pa[m] = a[k], pb[m] = b[k], m++;
        uint32_t acc = vt_tc_group(&vt_tc_sm90_e4m3f16, c, pa, pb, 16);
        return vt_tc_group(&vt_tc_sm90_e4m3f16, acc, pa + 16, pb + 16, 16);
    }
    vt_tc_arch A = *p->arch;
    if (p->q == VT_Q_ZERO_EXP) A.zero_exp = (vt_tc_zero_exp)v;
    if (p->q == VT_Q_ZERO_SIGN) A.zero_sign = (vt_tc_zero_sign)v;
    return vt_tc_group(&A, c, a, b, q_k(p));
}

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
