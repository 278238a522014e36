/* vt_tc.c - the tensor-core emulator (vt_tc.h; the model: docs/tensorcore.md). The group in integer
 * arithmetic (a value is a sign, an integer magnitude and the exponent of its last bit); the GEMM's
 * finite groups in FP64 operations that are all exact (below "the GEMM"). */
#include "vt_tc.h"

#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "../common/vt_par.h"

/* ------------------------------------------------------------------ the models */

/* Every built-in model: zero terms take no part in E, an exact zero is IEEE's (docs/tensorcore.md "The
 * unknowns": a mode's name fixes these). */
/* Hopper (sm90) BF16/FP16: groups of 16 products (one mma K of 16), a 26-bit window (issue 28). */
const vt_tc_arch vt_tc_sm90_bf16 = {"sm90-bf16", VT_TC_BF16, 16, 16, 26, 0, -126, VT_TC_ALIGN_RZ, VT_TC_OUT_RZ,
                                    0x7FFFFFFFu, 1, 0, VT_TC_ZERO_EXP_NONE, VT_TC_ZERO_IEEE};
const vt_tc_arch vt_tc_sm90_fp16 = {"sm90-fp16", VT_TC_FP16, 16, 16, 26, 0, -126, VT_TC_ALIGN_RZ, VT_TC_OUT_RZ,
                                    0x7FFFFFFFu, 1, 0, VT_TC_ZERO_EXP_NONE, VT_TC_ZERO_IEEE};
/* Ampere (sm80): groups of 8 products (an mma.m16n8k16's K of 16 is two groups), a 25-bit window. */
const vt_tc_arch vt_tc_sm80_bf16 = {"sm80-bf16", VT_TC_BF16, 8, 16, 25, 0, -126, VT_TC_ALIGN_RZ, VT_TC_OUT_RZ,
                                    0x7FFFFFFFu, 1, 0, VT_TC_ZERO_EXP_NONE, VT_TC_ZERO_IEEE};
const vt_tc_arch vt_tc_sm80_fp16 = {"sm80-fp16", VT_TC_FP16, 8, 16, 25, 0, -126, VT_TC_ALIGN_RZ, VT_TC_OUT_RZ,
                                    0x7FFFFFFFu, 1, 0, VT_TC_ZERO_EXP_NONE, VT_TC_ZERO_IEEE};
/* Hopper FP8 E4M3 as its wgmma computes it: groups of 32 products (a K of 32), a 14-bit adder. */
const vt_tc_arch vt_tc_sm90_e4m3 = {"sm90-e4m3", VT_TC_E4M3, 32, 32, 14, 0, -126, VT_TC_ALIGN_RZ, VT_TC_OUT_RZ,
                                    0x7FFFFFFFu, 1, 0, VT_TC_ZERO_EXP_NONE, VT_TC_ZERO_IEEE};
/* Hopper E4M3 through FP16 (mma.sync's E4M3 on Hopper: cutlass issue 1986): the inputs rounded to E4M3,
 * converted exactly to FP16, then sm90-fp16's groups of 16 (one FP16 mma.sync m16n8k16 each). */
const vt_tc_arch vt_tc_sm90_e4m3f16 = {"sm90-e4m3f16", VT_TC_E4M3, 16, 16, 26, 0, -126, VT_TC_ALIGN_RZ, VT_TC_OUT_RZ,
                                       0x7FFFFFFFu, 1, 1, VT_TC_ZERO_EXP_NONE, VT_TC_ZERO_IEEE};

const vt_tc_arch *vt_tc_arch_by_name(const char *name)
{
    static const vt_tc_arch *const all[] = {&vt_tc_sm90_bf16, &vt_tc_sm90_fp16, &vt_tc_sm80_bf16, &vt_tc_sm80_fp16,
                                            &vt_tc_sm90_e4m3, &vt_tc_sm90_e4m3f16};
    for (size_t i = 0; name && i < sizeof all / sizeof all[0]; i++)
        if (strcmp(all[i]->name, name) == 0) return all[i];
    return NULL;
}

vt_err vt_tc_arch_check(const vt_tc_arch *a)
{
    VT_RETURN_ERROR_IF(!a, VT_ERR_ARG, "tensor-core model: none given");
    VT_RETURN_ERROR_IF(a->type != VT_TC_BF16 && a->type != VT_TC_FP16 && a->type != VT_TC_E4M3, VT_ERR_ARG,
                       "tensor-core model %s: unknown input type %d", a->name ? a->name : "?", (int)a->type);
    VT_RETURN_ERROR_IF(a->group < 1 || a->group > 64, VT_ERR_ARG, "tensor-core model %s: group %d outside [1, 64]",
                       a->name ? a->name : "?", a->group);
    VT_RETURN_ERROR_IF(a->mma_k < a->group || a->mma_k % a->group != 0, VT_ERR_ARG,
                       "tensor-core model %s: mma K %d is not a multiple of the group %d", a->name ? a->name : "?",
                       a->mma_k, a->group);
    /* w <= 40 keeps every aligned term below 2^(w+2) and a group's sum below 2^(w+9): int64 */
    VT_RETURN_ERROR_IF(a->width < 2 || a->width > 40, VT_ERR_ARG, "tensor-core model %s: width %d outside [2, 40]",
                       a->name ? a->name : "?", a->width);
    VT_RETURN_ERROR_IF(a->prod_eoff != 0 && a->prod_eoff != 1, VT_ERR_ARG,
                       "tensor-core model %s: prod_eoff %d is neither 0 nor 1", a->name ? a->name : "?", a->prod_eoff);
    VT_RETURN_ERROR_IF(a->e_floor < -300 || a->e_floor > 0, VT_ERR_ARG,
                       "tensor-core model %s: e_floor %d outside [-300, 0]", a->name ? a->name : "?", a->e_floor);
    VT_RETURN_ERROR_IF(a->align != VT_TC_ALIGN_RZ && a->align != VT_TC_ALIGN_FLOOR, VT_ERR_ARG,
                       "tensor-core model %s: unknown alignment %d", a->name ? a->name : "?", (int)a->align);
    VT_RETURN_ERROR_IF(a->out != VT_TC_OUT_RZ && a->out != VT_TC_OUT_RNE, VT_ERR_ARG,
                       "tensor-core model %s: unknown output rounding %d", a->name ? a->name : "?", (int)a->out);
    VT_RETURN_ERROR_IF((a->nan_bits & 0x7F800000u) != 0x7F800000u || (a->nan_bits & 0x7FFFFFu) == 0, VT_ERR_ARG,
                       "tensor-core model %s: nan_bits 0x%08X is not a NaN", a->name ? a->name : "?",
                       (unsigned)a->nan_bits);
    VT_RETURN_ERROR_IF(a->via_fp16 != 0 && (a->via_fp16 != 1 || a->type != VT_TC_E4M3), VT_ERR_ARG,
                       "tensor-core model %s: via_fp16 %d (1 only for E4M3 inputs)", a->name ? a->name : "?",
                       a->via_fp16);
    VT_RETURN_ERROR_IF(a->zero_exp != VT_TC_ZERO_EXP_NONE && a->zero_exp != VT_TC_ZERO_EXP_FIELDS, VT_ERR_ARG,
                       "tensor-core model %s: unknown zero_exp %d", a->name ? a->name : "?", (int)a->zero_exp);
    VT_RETURN_ERROR_IF(a->zero_sign != VT_TC_ZERO_IEEE && a->zero_sign != VT_TC_ZERO_POS, VT_ERR_ARG,
                       "tensor-core model %s: unknown zero_sign %d", a->name ? a->name : "?", (int)a->zero_sign);
    return VT_OK;
}

/* the format the group computes in, and an input's bits in it (via_fp16: E4M3 -> FP16, exact) */
static inline vt_tc_type calc_type(const vt_tc_arch *A) { return A->via_fp16 ? VT_TC_FP16 : A->type; }
static inline uint16_t calc_bits(const vt_tc_arch *A, uint16_t b)
{
    return A->via_fp16 ? vt_tc_e4m3_to_fp16_hd(b) : b;
}

/* ------------------------------------------------------------------ formats (vt_tc_hd.h) */

uint16_t vt_tc_from_f32(vt_tc_type type, uint32_t x) { return vt_tc_from_f32_hd(type, x); }
uint32_t vt_tc_to_f32(vt_tc_type type, uint16_t b) { return vt_tc_to_f32_hd(type, b); }

/* ------------------------------------------------------------------ the group */

typedef struct {
    uint32_t sign;  /* 0 or 0x80000000 */
    uint64_t mag;   /* exact magnitude: value = mag * 2^lsb */
    int lsb;
    int ealign;     /* the alignment exponent (from the exponent fields: subnormals unnormalised) */
} term;

/* Steps 6 and 7 (docs/tensorcore.md "The group"): the exact sum S of the terms aligned to 2^B,
 * normalised by truncation to w significant bits, then converted to FP32. */
static uint32_t group_finish(const vt_tc_arch *A, int64_t S, int B)
{
    if (S == 0) return 0; /* an exact or truncated zero: +0 */
    uint32_t sign = S < 0 ? 0x80000000u : 0;
    uint64_t mag = S < 0 ? (uint64_t)(-S) : (uint64_t)S;
    int nb = vti_tc_bitlen64(mag);
    if (nb > A->width) {
        mag >>= nb - A->width;
        B += nb - A->width;
    }
    uint64_t r;
    int q;
    vti_tc_round_mag(mag, B, 24, -126, A->out == VT_TC_OUT_RNE, &r, &q);
    return vti_tc_f32_pack(sign, r, q, A->inf_on_overflow);
}

uint32_t vt_tc_group(const vt_tc_arch *A, uint32_t c, const uint16_t *a, const uint16_t *b, int n)
{
    const vti_tc_fmt f = vti_tc_fmt_of(calc_type(A));
    term t[65];
    int nt = 0;
    int any_nan = 0, pos_inf = 0, neg_inf = 0;
    uint32_t zero_sign = 0x80000000u; /* -0 only when every term is -0 */
    const int zcount = A->zero_exp == VT_TC_ZERO_EXP_FIELDS;
    int ezero = A->e_floor; /* zcount: the largest zero term's alignment exponent (at least e_floor) */

    /* the accumulator */
    uint32_t ce = (c >> 23) & 0xFF, cm = c & 0x7FFFFFu;
    if (ce == 0xFF) {
        if (cm) any_nan = 1;
        else if (c >> 31) neg_inf = 1;
        else pos_inf = 1;
    } else if (ce == 0 && cm == 0) {
        zero_sign &= c;
        if (zcount && -126 > ezero) ezero = -126; /* FP32's field 0: the unit exponent -126 */
    } else {
        t[nt].sign = c & 0x80000000u;
        t[nt].mag = ce ? (cm | 0x800000u) : cm;
        t[nt].lsb = (ce ? (int)ce : 1) - 150;
        t[nt].ealign = (ce ? (int)ce : 1) - 127;
        nt++;
        zero_sign = 0;
    }
    /* the products, exact */
    for (int i = 0; i < n && i < A->group; i++) {
        uint32_t sa = 0, sb = 0;
        uint64_t ma = 0, mb = 0;
        int ea = 0, eb = 0;
        int ka = vti_tc_decode(f, calc_bits(A, a[i]), &sa, &ma, &ea), kb = vti_tc_decode(f, calc_bits(A, b[i]), &sb, &mb, &eb);
        uint32_t sp = sa ^ sb;
        if (ka == 3 || kb == 3) {
            any_nan = 1;
        } else if (ka == 2 || kb == 2) {
            if (ka == 0 || kb == 0) any_nan = 1; /* inf * 0 */
            else if (sp) neg_inf = 1;
            else pos_inf = 1;
        } else if (ka == 0 || kb == 0) {
            zero_sign &= sp;
            /* a zero's unit exponent is emin (its field is 0): vti_tc_decode sets it */
            if (zcount && ea + eb + A->prod_eoff > ezero) ezero = ea + eb + A->prod_eoff;
        } else {
            t[nt].sign = sp;
            t[nt].mag = ma * mb;
            t[nt].lsb = ea + eb - 2 * f.mbits;
            t[nt].ealign = ea + eb + A->prod_eoff;
            nt++;
            zero_sign = 0;
        }
    }
    if (any_nan || (pos_inf && neg_inf)) return A->nan_bits;
    if (pos_inf) return 0x7F800000u;
    if (neg_inf) return 0xFF800000u;
    if (nt == 0) return A->zero_sign == VT_TC_ZERO_POS ? 0 : zero_sign;
    if (zcount && n < A->group && 2 * (1 - f.bias) + A->prod_eoff > ezero) /* the missing products: +0 * +0 */
        ezero = 2 * (1 - f.bias) + A->prod_eoff;

    /* the window: E = the largest alignment exponent (at least e_floor; zcount: the zeros' too), bits of
     * weight >= 2^B kept */
    int E = ezero;
    for (int i = 0; i < nt; i++)
        if (t[i].ealign > E) E = t[i].ealign;
    int B = E - (A->width - 1);
    int64_t S = 0;
    for (int i = 0; i < nt; i++) {
        int s = t[i].lsb - B;
        uint64_t v;
        if (s >= 0) {
            v = t[i].mag << s; /* s <= w + 1 - 2 mbits (products), <= w - 24 (c): below 2^(w+2) */
        } else if (-s >= 64) {
            v = (A->align == VT_TC_ALIGN_FLOOR && t[i].sign) ? 1 : 0; /* floor of a tiny negative: -1 */
        } else {
            v = t[i].mag >> -s;
            if (A->align == VT_TC_ALIGN_FLOOR && t[i].sign && (t[i].mag & ((1ull << -s) - 1))) v++;
        }
        S += t[i].sign ? -(int64_t)v : (int64_t)v;
    }
    return group_finish(A, S, B);
}

/* ------------------------------------------------------------------ the GEMM */

/* vt_tc_gemm runs every group whose inputs are all finite in FP64 arithmetic in which every operation
 * is exact, so it returns vt_tc_group's bits (docs/tensorcore.md "How the GEMM runs"; test_tc checks
 * every implementation against the fold of vt_tc_group):
 *  - an input is held as a double (its significand times a power of two: exact) and its alignment
 *    exponent (the unit exponent, emin for a subnormal, A's plus prod_eoff; VTI_TC_NOEXP for a zero,
 *    which never wins a max); a product of two inputs is exact in FP64 (at most 11 x 11 = 22
 *    significant bits, magnitudes in [2^-266, 2^256));
 *  - E = max(e_floor, the accumulator's FP32 unit exponent, max_k(ea_k + eb_k)) by integer max;
 *  - a term cut to a multiple of 2^B (B = E - w + 1) is rnd(x 2^-B), rnd = trunc (align RZ) or floor
 *    (FLOOR): 2^-B is a power of two in [2^-255, 2^339] and x 2^-B lies in [2^-521, 2^(w+2)) for a
 *    nonzero x, so the scaling is exact and stays normal, and rnd is exact;
 *  - the terms' sum is exact in any order: at most 65 integers below 2^(w+2) <= 2^42; it starts at
 *    +0, so an exact zero is +0;
 *  - V = S 2^B (exact), L its exponent. Output RZ: normalisation to w bits then FP32 truncation are
 *    nested truncations toward zero, i.e. one, to a multiple of 2^max(L - min(w, 24) + 1, -149);
 *    output RNE: truncation to w bits, then round to nearest even to a multiple of
 *    2^max(L - 23, -149) (FP32's grid; a carry gives 2^(L+1), exact). A magnitude >= 2^128 is +-inf
 *    or +-FLT_MAX (inf_on_overflow). The FP32 result is held as a double (exact);
 *  - an infinite accumulator stays as it is (the products are finite: vt_tc_group returns it);
 *  - a group with no nonzero term gives the IEEE sum of its zeros: -0 only when all are -0
 *    (vt_tc_group's zero sign), which needs an accumulator of -0 (a negative FP32 underflow).
 * A row of A or a column of B holding an infinity or a NaN takes vt_tc_group on the bits for each of
 * its elements. The groups of one element run in increasing k: the fold. */

#define VTI_TC_NOEXP (-(1 << 20)) /* the alignment exponent of a zero: no max over real ones picks it */
#define VTI_TC_LANES 8            /* the columns of one block (the vector implementations' lanes) */

typedef struct gemm_ctx_s gemm_ctx;
/* a vector implementation: the groups of k in [k0, k1) (whole groups) of C[i][j0 .. j0 + 8) on the
 * finite fast path, from and to the accumulators c (the FP32 values as doubles) and their alignment
 * exponents ec (the state between chunks of k) */
typedef void (*block_fn)(const gemm_ctx *x, size_t i, size_t j0, size_t k0, size_t k1, double *c, int64_t *ec);

struct gemm_ctx_s {
    const vt_tc_arch *arch;
    size_t M, N, K, Np;    /* Np: N rounded up to a whole block of lanes */
    const uint16_t *a, *b; /* the type's bits: A [M][K], B [K][N] (what vt_tc_group is given) */
    const double *ad, *bd; /* the values: A [M][K], B [K][Np] (padding and non-finite elements 0) */
    const int32_t *ea, *eb; /* alignment exponents, same layouts (A's with prod_eoff) */
    const uint8_t *fa, *fb; /* 1: the row of A / the column of B is all finite */
    float *C;
    block_fn block;         /* NULL: the scalar loop */
    double *cst;            /* [M][Np]: the accumulators between chunks of k (NULL: one chunk) */
    int64_t *ecst;
    int g, wm1, p, floor_align, rne, inf_ovf, e_floor; /* the model: group, w - 1, min(w, 24), ... */
};

static double p2(int n) /* 2^n, -1022 <= n <= 1023 */
{
    uint64_t b = (uint64_t)(n + 1023) << 52;
    double d;
    memcpy(&d, &b, sizeof d);
    return d;
}

static int expo(double v) /* the exponent of a normal double (-1023 for 0) */
{
    uint64_t b;
    memcpy(&b, &v, sizeof b);
    return (int)((b >> 52) & 0x7FF) - 1023;
}

static double rne_int(double y) /* round to the nearest integer, ties to even, whatever the FPU's mode (|y| < 2^52) */
{
    double t = trunc(y), d = fabs(y - t); /* both exact */
    if (d > 0.5 || (d == 0.5 && fmod(t, 2.0) != 0)) t += y < 0 ? -1.0 : 1.0;
    return t;
}

/* steps 6 and 7 on V = S 2^B (S an integer below 2^49, never -0): the FP32 result as a double */
static double finish_d(const gemm_ctx *x, double S, int B)
{
    double V = S * p2(B), r;
    int L = expo(V);
    if (!x->rne) {
        int q = L - x->p + 1 < -149 ? -149 : L - x->p + 1;
        r = trunc(V * p2(-q)) * p2(q);
    } else {
        int q1 = L - x->wm1 < -400 ? -400 : L - x->wm1, q = L - 23 < -149 ? -149 : L - 23;
        r = rne_int(trunc(V * p2(-q1)) * p2(q1) * p2(-q)) * p2(q);
    }
    if (fabs(r) >= 0x1p128) r = copysign(x->inf_ovf ? (double)INFINITY : (double)FLT_MAX, V);
    return r;
}

/* the next group's accumulator exponent: FP32's unit exponent of r (-126 for a subnormal), none for 0 */
static int acc_exp(double r)
{
    int e = expo(r);
    return r == 0 ? VTI_TC_NOEXP : e < -126 ? -126 : e;
}

/* C[i][j] by the fold of vt_tc_group on the bits (any element; the rows and columns with specials) */
static float elem_groups(const gemm_ctx *x, size_t i, size_t j)
{
    const size_t K = x->K, N = x->N, g = (size_t)x->g;
    uint16_t b[64];
    uint32_t acc = 0; /* +0 */
    for (size_t k0 = 0; k0 < K; k0 += g) {
        size_t len = K - k0 < g ? K - k0 : g;
        for (size_t t = 0; t < len; t++) b[t] = x->b[(k0 + t) * N + j];
        acc = vt_tc_group(x->arch, acc, &x->a[i * K + k0], b, (int)len);
    }
    float f;
    memcpy(&f, &acc, sizeof f);
    return f;
}

/* the sum of a group's zeros: the accumulator's sign unless a product is +0 (IEEE: -0 only if all are -0) */
static double zeros_sum(const gemm_ctx *x, double c, size_t i, size_t j, size_t k0, size_t k1)
{
    for (size_t k = k0; k < k1; k++) c += x->ad[i * x->K + k] * x->bd[k * x->Np + j];
    return c;
}

/* C[i][j] of a finite row and column, one element at a time (the portable implementation) */
static float elem_scalar(const gemm_ctx *x, size_t i, size_t j)
{
    const size_t K = x->K, Np = x->Np, g = (size_t)x->g;
    const double *ad = x->ad + i * K, *bd = x->bd + j;
    const int32_t *ea = x->ea + i * K, *eb = x->eb + j;
    double c = 0;
    int ec = VTI_TC_NOEXP;
    for (size_t k0 = 0; k0 < K && !isinf(c); k0 += g) {
        size_t k1 = K - k0 < g ? K : k0 + g;
        int E = 2 * VTI_TC_NOEXP;
        for (size_t k = k0; k < k1; k++) E = ea[k] + eb[k * Np] > E ? ea[k] + eb[k * Np] : E;
        if (E < VTI_TC_NOEXP / 2 && ec == VTI_TC_NOEXP) { /* no nonzero term */
            c = zeros_sum(x, c, i, j, k0, k1);
            continue;
        }
        E = ec > E ? ec : E;
        E = x->e_floor > E ? x->e_floor : E;
        const int B = E - x->wm1;
        const double sc = p2(-B);
        double S = 0;
        if (x->floor_align) {
            S += floor(c * sc);
            for (size_t k = k0; k < k1; k++) S += floor(ad[k] * bd[k * Np] * sc);
        } else {
            S += trunc(c * sc);
            for (size_t k = k0; k < k1; k++) S += trunc(ad[k] * bd[k * Np] * sc);
        }
        c = finish_d(x, S, B);
        ec = acc_exp(c);
    }
    return (float)c;
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define VTI_TC_HAVE_AVX2 1
#define VTI_AVX2 __attribute__((target("avx2"))) static inline __attribute__((always_inline))

VTI_AVX2 __m256d v_p2(__m256i n) /* 2^n in 64-bit lanes (n in [-1022, 1023]; other lanes unused) */
{
    return _mm256_castsi256_pd(_mm256_slli_epi64(_mm256_add_epi64(n, _mm256_set1_epi64x(1023)), 52));
}

VTI_AVX2 __m256i v_max64(__m256i a, __m256i b) { return _mm256_blendv_epi8(b, a, _mm256_cmpgt_epi64(a, b)); }

VTI_AVX2 __m256i v_expo(__m256d v)
{
    __m256i f = _mm256_and_si256(_mm256_srli_epi64(_mm256_castpd_si256(v), 52), _mm256_set1_epi64x(0x7FF));
    return _mm256_sub_epi64(f, _mm256_set1_epi64x(1023));
}

VTI_AVX2 __m256d v_rnd(__m256d v, const int fl)
{
    return fl ? _mm256_round_pd(v, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC)
              : _mm256_round_pd(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
}

/* finish_d on four lanes */
VTI_AVX2 __m256d v_finish(const gemm_ctx *x, __m256d S, __m256i B)
{
    const __m256d V = _mm256_mul_pd(S, v_p2(B));
    const __m256i L = v_expo(V), zero = _mm256_setzero_si256();
    __m256d r;
    if (!x->rne) {
        __m256i q = v_max64(_mm256_sub_epi64(L, _mm256_set1_epi64x(x->p - 1)), _mm256_set1_epi64x(-149));
        r = _mm256_mul_pd(v_rnd(_mm256_mul_pd(V, v_p2(_mm256_sub_epi64(zero, q))), 0), v_p2(q));
    } else {
        __m256i q1 = v_max64(_mm256_sub_epi64(L, _mm256_set1_epi64x(x->wm1)), _mm256_set1_epi64x(-400));
        __m256i q = v_max64(_mm256_sub_epi64(L, _mm256_set1_epi64x(23)), _mm256_set1_epi64x(-149));
        __m256d r1 = _mm256_mul_pd(v_rnd(_mm256_mul_pd(V, v_p2(_mm256_sub_epi64(zero, q1))), 0), v_p2(q1));
        r = _mm256_mul_pd(_mm256_round_pd(_mm256_mul_pd(r1, v_p2(_mm256_sub_epi64(zero, q))),
                                          _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC),
                          v_p2(q));
    }
    const __m256d sign = _mm256_set1_pd(-0.0);
    const __m256d ovf = _mm256_cmp_pd(_mm256_andnot_pd(sign, r), _mm256_set1_pd(0x1p128), _CMP_GE_OQ);
    const __m256d big = _mm256_set1_pd(x->inf_ovf ? (double)INFINITY : (double)FLT_MAX);
    return _mm256_blendv_pd(r, _mm256_or_pd(_mm256_and_pd(V, sign), big), ovf);
}

/* eight columns of row i, fast path (fl: floor alignment) */
VTI_AVX2 void block_avx2_impl(const gemm_ctx *x, size_t i, size_t j0, size_t kb, size_t ke, double *cs,
                              int64_t *ecs, const int fl)
{
    const size_t K = x->K, Np = x->Np, g = (size_t)x->g;
    const double *ad = x->ad + i * K, *bd = x->bd + j0;
    const int32_t *ea = x->ea + i * K, *eb = x->eb + j0;
    const __m256d absm = _mm256_castsi256_pd(_mm256_set1_epi64x(0x7FFFFFFFFFFFFFFFLL));
    const __m256d inf = _mm256_set1_pd((double)INFINITY), zd = _mm256_setzero_pd();
    const __m256i noexp = _mm256_set1_epi64x(VTI_TC_NOEXP), efl = _mm256_set1_epi64x(x->e_floor),
                  wm1 = _mm256_set1_epi64x(x->wm1), negz = _mm256_set1_epi64x(INT64_MIN);
    __m256d c[2] = {_mm256_loadu_pd(cs), _mm256_loadu_pd(cs + 4)};
    __m256i ec[2] = {_mm256_loadu_si256((const __m256i *)ecs), _mm256_loadu_si256((const __m256i *)(ecs + 4))};
    for (size_t k0 = kb; k0 < ke; k0 += g) {
        const size_t k1 = ke - k0 < g ? ke : k0 + g;
        __m256i em = _mm256_set1_epi32(2 * VTI_TC_NOEXP);
        for (size_t k = k0; k < k1; k++)
            em = _mm256_max_epi32(em, _mm256_add_epi32(_mm256_set1_epi32(ea[k]),
                                                       _mm256_loadu_si256((const __m256i *)(eb + k * Np))));
        __m256i B[2];
        __m256d sc[2], S[2], T[2];
        for (int h = 0; h < 2; h++) {
            __m256i e = _mm256_cvtepi32_epi64(h ? _mm256_extracti128_si256(em, 1) : _mm256_castsi256_si128(em));
            B[h] = _mm256_sub_epi64(v_max64(v_max64(e, ec[h]), efl), wm1);
            sc[h] = v_p2(_mm256_sub_epi64(_mm256_setzero_si256(), B[h]));
            S[h] = _mm256_add_pd(zd, v_rnd(_mm256_mul_pd(c[h], sc[h]), fl));
            T[h] = zd;
        }
        size_t k = k0;
        for (; k + 2 <= k1; k += 2) { /* two chains of exact sums: the order does not matter */
            const __m256d a0 = _mm256_set1_pd(ad[k]), a1 = _mm256_set1_pd(ad[k + 1]);
            const double *b0 = bd + k * Np, *b1 = b0 + Np;
            S[0] = _mm256_add_pd(S[0], v_rnd(_mm256_mul_pd(_mm256_mul_pd(a0, _mm256_loadu_pd(b0)), sc[0]), fl));
            S[1] = _mm256_add_pd(S[1], v_rnd(_mm256_mul_pd(_mm256_mul_pd(a0, _mm256_loadu_pd(b0 + 4)), sc[1]), fl));
            T[0] = _mm256_add_pd(T[0], v_rnd(_mm256_mul_pd(_mm256_mul_pd(a1, _mm256_loadu_pd(b1)), sc[0]), fl));
            T[1] = _mm256_add_pd(T[1], v_rnd(_mm256_mul_pd(_mm256_mul_pd(a1, _mm256_loadu_pd(b1 + 4)), sc[1]), fl));
        }
        for (; k < k1; k++) {
            const __m256d a0 = _mm256_set1_pd(ad[k]);
            const double *b0 = bd + k * Np;
            S[0] = _mm256_add_pd(S[0], v_rnd(_mm256_mul_pd(_mm256_mul_pd(a0, _mm256_loadu_pd(b0)), sc[0]), fl));
            S[1] = _mm256_add_pd(S[1], v_rnd(_mm256_mul_pd(_mm256_mul_pd(a0, _mm256_loadu_pd(b0 + 4)), sc[1]), fl));
        }
        for (int h = 0; h < 2; h++) {
            /* S + T: both +0 at an exact zero, so the sum is +0 */
            __m256d r = v_finish(x, _mm256_add_pd(S[h], T[h]), B[h]);
            r = _mm256_blendv_pd(r, c[h], _mm256_cmp_pd(_mm256_and_pd(c[h], absm), inf, _CMP_EQ_OQ));
            int nz = _mm256_movemask_pd(_mm256_castsi256_pd(_mm256_cmpeq_epi64(_mm256_castpd_si256(c[h]), negz)));
            if (nz) { /* an accumulator of -0 (rare): a group with no nonzero term sums its zeros */
                double rv[4], cv[4];
                int32_t ev[8];
                _mm256_storeu_pd(rv, r);
                _mm256_storeu_pd(cv, c[h]);
                _mm256_storeu_si256((__m256i *)ev, em);
                for (int l = 0; l < 4; l++)
                    if ((nz >> l & 1) && ev[4 * h + l] < VTI_TC_NOEXP / 2)
                        rv[l] = zeros_sum(x, cv[l], i, j0 + (size_t)(4 * h + l), k0, k1);
                r = _mm256_loadu_pd(rv);
            }
            c[h] = r;
            __m256i e = v_max64(v_expo(r), _mm256_set1_epi64x(-126));
            ec[h] = _mm256_blendv_epi8(e, noexp, _mm256_castpd_si256(_mm256_cmp_pd(r, zd, _CMP_EQ_OQ)));
        }
    }
    _mm256_storeu_pd(cs, c[0]);
    _mm256_storeu_pd(cs + 4, c[1]);
    _mm256_storeu_si256((__m256i *)ecs, ec[0]);
    _mm256_storeu_si256((__m256i *)(ecs + 4), ec[1]);
    (void)K;
}

__attribute__((target("avx2"))) static void block_avx2_rz(const gemm_ctx *x, size_t i, size_t j0, size_t k0, size_t k1,
                                                         double *c, int64_t *ec)
{
    block_avx2_impl(x, i, j0, k0, k1, c, ec, 0);
}

__attribute__((target("avx2"))) static void block_avx2_floor(const gemm_ctx *x, size_t i, size_t j0, size_t k0,
                                                            size_t k1, double *c, int64_t *ec)
{
    block_avx2_impl(x, i, j0, k0, k1, c, ec, 1);
}

/* vt_tc_from_f32 to BF16 and pack1 on eight floats; returns the lanes holding an inf or NaN (a mask) */
__attribute__((target("avx2"))) static int pack8_bf16_avx2(const float *src, int eoff, uint16_t *bits, double *val,
                                                          int32_t *e)
{
    const __m256i x = _mm256_loadu_si256((const __m256i *)src);
    const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(x, _mm256_set1_epi32(0x7FFFFFFF)),
                                           _mm256_set1_epi32(0x7F800000));
    __m256i h = _mm256_srli_epi32(
        _mm256_add_epi32(_mm256_add_epi32(x, _mm256_set1_epi32(0x7FFF)),
                         _mm256_and_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(1))),
        16);
    h = _mm256_blendv_epi8(h, _mm256_or_si256(_mm256_slli_epi32(_mm256_srli_epi32(x, 31), 15), _mm256_set1_epi32(0x7FC0)),
                           nan);
    const __m256i p = _mm256_permute4x64_epi64(_mm256_packus_epi32(h, h), 0x08);
    _mm_storeu_si128((__m128i *)bits, _mm256_castsi256_si128(p));
    const __m256i field = _mm256_and_si256(_mm256_srli_epi32(h, 7), _mm256_set1_epi32(0xFF));
    const __m256i special = _mm256_cmpeq_epi32(field, _mm256_set1_epi32(0xFF));
    const __m256i fz = _mm256_cmpeq_epi32(field, _mm256_setzero_si256());
    const __m256i sig = _mm256_or_si256(_mm256_and_si256(h, _mm256_set1_epi32(0x7F)),
                                        _mm256_andnot_si256(fz, _mm256_set1_epi32(0x80)));
    const __m256i eu = _mm256_sub_epi32(_mm256_max_epi32(field, _mm256_set1_epi32(1)), _mm256_set1_epi32(127));
    const __m256i none = _mm256_or_si256(special, _mm256_cmpeq_epi32(sig, _mm256_setzero_si256()));
    _mm256_storeu_si256((__m256i *)e, _mm256_blendv_epi8(_mm256_add_epi32(eu, _mm256_set1_epi32(eoff)),
                                                         _mm256_set1_epi32(VTI_TC_NOEXP), none));
    const __m256i sgn = _mm256_and_si256(h, _mm256_set1_epi32(0x8000));
    for (int half = 0; half < 2; half++) {
        __m128i s4 = half ? _mm256_extracti128_si256(sig, 1) : _mm256_castsi256_si128(sig);
        __m128i e4 = half ? _mm256_extracti128_si256(eu, 1) : _mm256_castsi256_si128(eu);
        __m128i g4 = half ? _mm256_extracti128_si256(sgn, 1) : _mm256_castsi256_si128(sgn);
        __m128i x4 = half ? _mm256_extracti128_si256(special, 1) : _mm256_castsi256_si128(special);
        __m256d d = _mm256_mul_pd(_mm256_cvtepi32_pd(s4), /* exact: sig < 2^8, eu - 7 >= -133 */
                                  v_p2(_mm256_cvtepi32_epi64(_mm_sub_epi32(e4, _mm_set1_epi32(7)))));
        d = _mm256_or_pd(d, _mm256_castsi256_pd(_mm256_slli_epi64(_mm256_cvtepu32_epi64(g4), 48))); /* the sign, -0 too */
        d = _mm256_andnot_pd(_mm256_castsi256_pd(_mm256_cvtepi32_epi64(x4)), d);                       /* inf, NaN: 0 */
        _mm256_storeu_pd(val + 4 * half, d);
    }
    return _mm256_movemask_ps(_mm256_castsi256_ps(special));
}
#else
#define VTI_TC_HAVE_AVX2 0
#endif

/* the implementations: the scalar loop (always) and the vector ones, picked once (pthread_once) like
 * kernels/vt_math_vec.c: the last one this CPU runs, or the one VT_TC_IMPL names */
typedef struct {
    const char *name;
    block_fn rz, floor; /* NULL: the scalar loop */
    int (*pack8_bf16)(const float *src, int eoff, uint16_t *bits, double *val, int32_t *e); /* NULL: pack1 */
} tc_impl;

static const tc_impl IMPLS[] = {
    {"scalar", NULL, NULL, NULL},
#if VTI_TC_HAVE_AVX2
    {"avx2", block_avx2_rz, block_avx2_floor, pack8_bf16_avx2},
#endif
};
#define N_IMPLS ((int)(sizeof IMPLS / sizeof IMPLS[0]))

static int impl_usable(int i)
{
#if VTI_TC_HAVE_AVX2
    if (strcmp(IMPLS[i].name, "avx2") == 0) {
        __builtin_cpu_init();
        return __builtin_cpu_supports("avx2");
    }
#endif
    return i >= 0 && i < N_IMPLS;
}

static int g_impl;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void pick(void)
{
    const char *want = getenv("VT_TC_IMPL");
    for (int i = 0; i < N_IMPLS; i++)
        if (impl_usable(i) && (!want || !*want || strcmp(want, IMPLS[i].name) == 0)) g_impl = i;
}

const char *vt_tc_impl(void)
{
    pthread_once(&g_once, pick);
    return IMPLS[g_impl].name;
}

const char *vt_tc_impl_name(int i) { return i >= 0 && i < N_IMPLS && impl_usable(i) ? IMPLS[i].name : NULL; }

#define VTI_TC_KC 1024 /* k per chunk (rounded down to whole groups) when the accumulators are kept between chunks */

static void gemm_rows(void *vctx, size_t lo, size_t hi, int part)
{
    (void)part;
    const gemm_ctx *x = vctx;
    const size_t N = x->N, K = x->K, Np = x->Np, g = (size_t)x->g;
    if (!x->block) {
        for (size_t i = lo; i < hi; i++)
            for (size_t j = 0; j < N; j++)
                x->C[i * N + j] = x->fa[i] && x->fb[j] ? elem_scalar(x, i, j) : elem_groups(x, i, j);
        return;
    }
    /* the accumulators of every row of the part between chunks of k (one chunk: K fits, or the state
     * would be large); a chunk of B (kc x Np) read once per row when it fits the cache, else a block
     * of columns over the rows */
    size_t kc = K > VTI_TC_KC && x->cst ? VTI_TC_KC / g * g : (K ? K : 1);
    double c1[VTI_TC_LANES];
    int64_t e1[VTI_TC_LANES];
    const int rows_outer = kc * Np * 12 <= 256 * 1024;
    for (size_t k0 = 0; k0 < K || k0 == 0; k0 += kc) {
        size_t k1 = K - k0 < kc ? K : k0 + kc;
        size_t ni = rows_outer ? hi - lo : 1, nj = rows_outer ? 1 : (N + VTI_TC_LANES - 1) / VTI_TC_LANES;
        for (size_t o = 0; o < ni * nj; o++) {
            size_t i0 = rows_outer ? lo + o : lo, i1 = rows_outer ? i0 + 1 : hi;
            size_t jb0 = rows_outer ? 0 : o * VTI_TC_LANES, jb1 = rows_outer ? N : jb0 + 1;
            for (size_t i = i0; i < i1; i++) {
                if (!x->fa[i]) continue;
                for (size_t j0 = jb0; j0 < jb1; j0 += VTI_TC_LANES) {
                    double *c = kc < K ? x->cst + i * Np + j0 : c1;
                    int64_t *ec = kc < K ? x->ecst + i * Np + j0 : e1;
                    if (k0 == 0)
                        for (int l = 0; l < VTI_TC_LANES; l++) c[l] = 0, ec[l] = VTI_TC_NOEXP;
                    x->block(x, i, j0, k0, k1, c, ec);
                    if (k1 < K) continue;
                    float *ci = x->C + i * N;
                    size_t nl = N - j0 < VTI_TC_LANES ? N - j0 : VTI_TC_LANES;
                    for (size_t l = 0; l < nl; l++) ci[j0 + l] = x->fb[j0 + l] ? (float)c[l] : elem_groups(x, i, j0 + l);
                }
            }
        }
        if (K == 0) break;
    }
    for (size_t i = lo; i < hi; i++)
        if (!x->fa[i])
            for (size_t j = 0; j < N; j++) x->C[i * N + j] = elem_groups(x, i, j);
}

/* one input: its bits, value (0 for inf / NaN), alignment exponent (vti_tc_decode's fields, without
 * branches on the data); 0 when it is inf or NaN */
static inline int pack1(vt_tc_type type, int via_fp16, vti_tc_fmt f, float v, int eoff, uint16_t *bits, double *val,
                        int32_t *e)
{
    uint32_t x;
    memcpy(&x, &v, sizeof x);
    *bits = vt_tc_from_f32(type, x);
    const uint16_t h = via_fp16 ? vt_tc_e4m3_to_fp16_hd(*bits) : *bits; /* f: the format of h */
    const unsigned fmax = (1u << f.ebits) - 1, fmask = (1u << f.mbits) - 1;
    const unsigned field = (h >> f.mbits) & fmax, frac = h & fmask;
    const int special = f.has_inf ? field == fmax : field == fmax && frac == fmask;
    const unsigned sig = frac | (field ? 1u << f.mbits : 0);
    const int eu = (field ? (int)field : 1) - f.bias;
    double d = (double)sig * p2(eu - f.mbits); /* exact: sig < 2^11, eu - mbits >= -133 */
    *val = special ? 0.0 : h >> (f.ebits + f.mbits) ? -d : d; /* a zero keeps its sign */
    *e = sig && !special ? eu + eoff : VTI_TC_NOEXP;
    return !special;
}

/* dst [C][R] = the transpose of src [R][C], in tiles (both sides stay in the cache) */
static void transpose(const float *src, size_t R, size_t C, float *dst)
{
    for (size_t r0 = 0; r0 < R; r0 += 32)
        for (size_t c0 = 0; c0 < C; c0 += 32)
            for (size_t r = r0; r < R && r < r0 + 32; r++)
                for (size_t c = c0; c < C && c < c0 + 32; c++) dst[c * R + r] = src[r * C + c];
}

/* n contiguous inputs packed (bits, values, exponents); bad[t] |= 1 for an inf or NaN (bad NULL:
 * returns 1 when there is one) */
static int pack_row(const gemm_ctx *x, const tc_impl *im, const float *src, size_t n, int eoff, uint16_t *bits,
                    double *val, int32_t *e, uint8_t *bad)
{
    const vti_tc_fmt f = vti_tc_fmt_of(calc_type(x->arch));
    int any = 0;
    size_t t = 0;
    if (im->pack8_bf16 && x->arch->type == VT_TC_BF16)
        for (; t + 8 <= n; t += 8) {
            int m = im->pack8_bf16(src + t, eoff, bits + t, val + t, e + t);
            any |= m != 0;
            for (int l = 0; m && bad && l < 8; l++) bad[t + (size_t)l] |= (uint8_t)(m >> l & 1);
        }
    for (; t < n; t++) {
        int fin = pack1(x->arch->type, x->arch->via_fp16, f, src[t], eoff, &bits[t], &val[t], &e[t]);
        any |= !fin;
        if (bad) bad[t] |= (uint8_t)!fin;
    }
    return any;
}

vt_err vt_tc_gemm_ex(const vt_tc_arch *arch, int impl, int ta, int tb, size_t M, size_t N, size_t K, const float *A,
                     const float *B, float *C)
{
    vt_err e = vt_tc_arch_check(arch);
    if (e) return e;
    VT_RETURN_ERROR_IF(impl >= 0 && !vt_tc_impl_name(impl), VT_ERR_ARG, "vt_tc_gemm: no implementation %d here", impl);
    VT_RETURN_ERROR_IF((M && N && K && (!A || !B)) || (M && N && !C), VT_ERR_ARG, "vt_tc_gemm: NULL matrix");
    VT_RETURN_ERROR_IF(N > SIZE_MAX / 2 - VTI_TC_LANES, VT_ERR_ARG, "vt_tc_gemm: B too large");
    const size_t Np = (N + VTI_TC_LANES - 1) / VTI_TC_LANES * VTI_TC_LANES;
    VT_RETURN_ERROR_IF(M && K > SIZE_MAX / M / 32, VT_ERR_ARG, "vt_tc_gemm: A too large");
    VT_RETURN_ERROR_IF(Np && K > SIZE_MAX / Np / 32, VT_ERR_ARG, "vt_tc_gemm: B too large");
    VT_RETURN_ERROR_IF(M && Np > SIZE_MAX / M / 32, VT_ERR_ARG, "vt_tc_gemm: C too large");
    if (M == 0 || N == 0) return VT_OK;
    if (impl < 0) {
        vt_tc_impl();
        impl = g_impl;
    }
    const tc_impl *im = &IMPLS[impl];
    /* the accumulators between chunks of k: for a long K when they are small */
    const int chunked = im->rz && K > VTI_TC_KC && M * Np * 16 <= ((size_t)64 << 20);
    /* one allocation: values, exponents, bits of A and B, the accumulators, a transposed operand, the flags */
    const size_t na = M * K, nb = K * Np, ns = chunked ? M * Np : 0, nt = (ta ? na : 0) + (tb ? K * N : 0);
    uint8_t *mem = malloc((na + nb) * (sizeof(double) + sizeof(int32_t) + sizeof(uint16_t)) + ns * 16 + nt * 4 + M + N + 1);
    VT_RETURN_ERROR_IF(!mem, VT_ERR_NOMEM, "vt_tc_gemm: %zu x %zu x %zu", M, N, K);
    double *ad = (double *)mem, *bd = ad + na, *cst = bd + nb;
    int64_t *ecst = (int64_t *)(cst + ns);
    float *tmp = (float *)(ecst + ns);
    int32_t *ea = (int32_t *)(tmp + nt), *eb = ea + na;
    uint16_t *a = (uint16_t *)(eb + nb), *b = a + na;
    uint8_t *fa = (uint8_t *)(b + nb), *fb = fa + M;
    gemm_ctx x = {arch, M, N, K, Np, a, b, ad, bd, ea, eb, fa, fb, C, NULL, chunked ? cst : NULL, chunked ? ecst : NULL,
                  arch->group, arch->width - 1, arch->width < 24 ? arch->width : 24, arch->align == VT_TC_ALIGN_FLOOR,
                  arch->out == VT_TC_OUT_RNE, arch->inf_on_overflow, arch->e_floor};
    x.block = arch->align == VT_TC_ALIGN_FLOOR ? im->floor : im->rz;
    if (ta) transpose(A, K, M, tmp), A = tmp; /* A stored [K][M] -> [M][K] */
    if (tb) transpose(B, N, K, tmp + (ta ? na : 0)), B = tmp + (ta ? na : 0); /* B stored [N][K] -> [K][N] */
    for (size_t i = 0; i < M; i++)
        fa[i] = (uint8_t)!pack_row(&x, im, A + i * K, K, arch->prod_eoff, &a[i * K], &ad[i * K], &ea[i * K], NULL);
    memset(fb, 0, N);
    for (size_t k = 0; k < K; k++) { /* padded to Np with zeros */
        pack_row(&x, im, B + k * N, N, 0, &b[k * N], &bd[k * Np], &eb[k * Np], fb);
        for (size_t j = N; j < Np; j++) bd[k * Np + j] = 0, eb[k * Np + j] = VTI_TC_NOEXP;
    }
    for (size_t j = 0; j < N; j++) fb[j] = !fb[j];
    /* the variants of the zeros (no mode's): every element the fold of vt_tc_group on the bits */
    if (arch->zero_exp != VT_TC_ZERO_EXP_NONE || arch->zero_sign != VT_TC_ZERO_IEEE) memset(fa, 0, M);
    size_t per_row = N * (K ? K : 1);
    vt_par_for(M, per_row >= 65536 ? 1 : 65536 / per_row, gemm_rows, &x);
    free(mem);
    return VT_OK;
}

vt_err vt_tc_gemm(const vt_tc_arch *arch, size_t M, size_t N, size_t K, const float *A, const float *B, float *C)
{
    return vt_tc_gemm_ex(arch, -1, 0, 0, M, N, K, A, B, C);
}
