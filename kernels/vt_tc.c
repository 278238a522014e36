/* vt_tc.c - the tensor-core emulator (vt_tc.h; the model: docs/tensorcore.md). Integer arithmetic
 * only: a value is a sign, an integer magnitude and the exponent of its last bit. */
#include "vt_tc.h"

#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ the models */

/* Hopper (sm90) BF16/FP16: groups of 16 products (one mma K of 16), a 26-bit window (issue 28). */
const vt_tc_arch vt_tc_sm90_bf16 = {"sm90-bf16", VT_TC_BF16, 16, 16, 26, 0, -126, VT_TC_ALIGN_RZ, VT_TC_OUT_RZ,
                                    0x7FFFFFFFu, 1};
const vt_tc_arch vt_tc_sm90_fp16 = {"sm90-fp16", VT_TC_FP16, 16, 16, 26, 0, -126, VT_TC_ALIGN_RZ, VT_TC_OUT_RZ,
                                    0x7FFFFFFFu, 1};
/* Ampere (sm80): groups of 8 products (an mma.m16n8k16's K of 16 is two groups), a 25-bit window. */
const vt_tc_arch vt_tc_sm80_bf16 = {"sm80-bf16", VT_TC_BF16, 8, 16, 25, 0, -126, VT_TC_ALIGN_RZ, VT_TC_OUT_RZ,
                                    0x7FFFFFFFu, 1};
const vt_tc_arch vt_tc_sm80_fp16 = {"sm80-fp16", VT_TC_FP16, 8, 16, 25, 0, -126, VT_TC_ALIGN_RZ, VT_TC_OUT_RZ,
                                    0x7FFFFFFFu, 1};
/* Hopper FP8 E4M3: groups of 32 products (an mma K of 32), a 14-bit adder. */
const vt_tc_arch vt_tc_sm90_e4m3 = {"sm90-e4m3", VT_TC_E4M3, 32, 32, 14, 0, -126, VT_TC_ALIGN_RZ, VT_TC_OUT_RZ,
                                    0x7FFFFFFFu, 1};

const vt_tc_arch *vt_tc_arch_by_name(const char *name)
{
    static const vt_tc_arch *const all[] = {&vt_tc_sm90_bf16, &vt_tc_sm90_fp16, &vt_tc_sm80_bf16, &vt_tc_sm80_fp16,
                                            &vt_tc_sm90_e4m3};
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
    return VT_OK;
}

/* ------------------------------------------------------------------ formats */

typedef struct {
    int mbits;     /* stored fraction bits */
    int ebits;     /* exponent field bits */
    int bias;
    int has_inf;   /* IEEE-style infinities and NaNs at the top field; else (E4M3) only S.1111.111 is NaN */
} fmt;

static const fmt FMT[3] = {{7, 8, 127, 1}, {10, 5, 15, 1}, {3, 4, 7, 0}};

static int bitlen64(uint64_t x)
{
    int n = 0;
    while (x) x >>= 1, n++;
    return n;
}

/* sign * mag * 2^lsb (mag > 0) rounded to a format with p significant bits (hidden bit included),
 * minimum normal exponent emin: returns the magnitude r and its last-bit exponent q, r * 2^q the
 * rounded value, r < 2^p, r >= 2^(p-1) unless q = emin - p + 1 (subnormal). rne: 1 round to
 * nearest even, 0 truncate. */
static void round_mag(uint64_t mag, int lsb, int p, int emin, int rne, uint64_t *r_out, int *q_out)
{
    int L = bitlen64(mag) - 1 + lsb; /* the leading bit's exponent */
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
static uint32_t f32_pack(uint32_t sign, uint64_t r, int q, int inf_on_overflow)
{
    if (r == 0) return sign;
    int L = bitlen64(r) - 1 + q;
    if (L > 127) return sign | (inf_on_overflow ? 0x7F800000u : 0x7F7FFFFFu);
    if (L < -126) return sign | (uint32_t)(r << (q + 149)); /* subnormal: q >= -149 */
    int n = bitlen64(r);
    uint64_t m = n <= 24 ? r << (24 - n) : r >> (n - 24); /* exact: r has at most 24 significant bits */
    return sign | (uint32_t)(L + 127) << 23 | ((uint32_t)m & 0x7FFFFFu);
}

uint16_t vt_tc_from_f32(vt_tc_type type, uint32_t x)
{
    uint32_t s = x >> 31, e = (x >> 23) & 0xFF, m = x & 0x7FFFFFu;
    if (type == VT_TC_BF16) {
        if (e == 0xFF && m) return (uint16_t)(s << 15 | 0x7FC0u);
        return (uint16_t)((x + 0x7FFFu + ((x >> 16) & 1)) >> 16); /* a carry reaches the exponent, up to inf */
    }
    const fmt *f = &FMT[type];
    uint16_t sg = (uint16_t)(s << (f->ebits + f->mbits));
    int fmax = (1 << f->ebits) - 1;
    uint16_t maxfin = f->has_inf ? (uint16_t)((fmax - 1) << f->mbits | ((1 << f->mbits) - 1))
                                 : (uint16_t)(fmax << f->mbits | ((1 << f->mbits) - 2));
    if (e == 0xFF) {
        if (m) return (uint16_t)(sg | (f->has_inf ? (fmax << f->mbits | 1 << (f->mbits - 1)) : (fmax << f->mbits | ((1 << f->mbits) - 1))));
        return (uint16_t)(sg | (f->has_inf ? fmax << f->mbits : maxfin));
    }
    if (e == 0 && m == 0) return sg;
    uint64_t mag = e ? (m | 0x800000u) : m;
    int lsb = (e ? (int)e : 1) - 150;
    int emin = 1 - f->bias;
    uint64_t r;
    int q;
    round_mag(mag, lsb, f->mbits + 1, emin, 1, &r, &q);
    if (r == 0) return sg;
    int L = bitlen64(r) - 1 + q;
    uint32_t field, frac;
    if (L < emin) {
        field = 0;
        frac = (uint32_t)r; /* q = emin - mbits */
    } else {
        field = (uint32_t)(L + f->bias);
        frac = (uint32_t)(r & ((1u << f->mbits) - 1));
    }
    uint32_t v = field << f->mbits | frac;
    if (f->has_inf) {
        if (field >= (uint32_t)fmax) v = (uint32_t)fmax << f->mbits; /* overflow: inf */
    } else if (v > maxfin) {
        v = maxfin; /* E4M3: satfinite */
    }
    return (uint16_t)(sg | v);
}

uint32_t vt_tc_to_f32(vt_tc_type type, uint16_t b)
{
    if (type == VT_TC_BF16) return (uint32_t)b << 16;
    const fmt *f = &FMT[type];
    uint32_t s = (uint32_t)(b >> (f->ebits + f->mbits)) << 31;
    int fmax = (1 << f->ebits) - 1;
    int field = (b >> f->mbits) & fmax, frac = b & ((1 << f->mbits) - 1);
    if (f->has_inf && field == fmax)
        return s | 0x7F800000u | (uint32_t)frac << (23 - f->mbits) | (frac ? 0x400000u : 0);
    if (!f->has_inf && field == fmax && frac == (1 << f->mbits) - 1) return s | 0x7FC00000u;
    uint64_t mag = field ? (uint64_t)(frac | 1 << f->mbits) : (uint64_t)frac;
    int lsb = (field ? field : 1) - f->bias - f->mbits;
    return f32_pack(s, mag, lsb, 1); /* exact: every value of these types is an FP32 normal */
}

/* ------------------------------------------------------------------ the group */

typedef struct {
    uint32_t sign;  /* 0 or 0x80000000 */
    uint64_t mag;   /* exact magnitude: value = mag * 2^lsb */
    int lsb;
    int ealign;     /* the alignment exponent (from the exponent fields: subnormals unnormalised) */
} term;

/* An input of the type: class 0 zero, 1 finite nonzero, 2 inf, 3 NaN; its significand (hidden bit
 * included, subnormals without it), the exponent of the significand's unit bit (emin for subnormals). */
static int decode(const fmt *f, uint16_t b, uint32_t *sign, uint64_t *sig, int *eunit)
{
    int fmax = (1 << f->ebits) - 1;
    int field = (b >> f->mbits) & fmax, frac = b & ((1 << f->mbits) - 1);
    *sign = (uint32_t)(b >> (f->ebits + f->mbits)) << 31;
    if (f->has_inf && field == fmax) return frac ? 3 : 2;
    if (!f->has_inf && field == fmax && frac == (1 << f->mbits) - 1) return 3;
    *sig = field ? (uint64_t)(frac | 1 << f->mbits) : (uint64_t)frac;
    *eunit = (field ? field : 1) - f->bias;
    return *sig ? 1 : 0;
}

uint32_t vt_tc_group(const vt_tc_arch *A, uint32_t c, const uint16_t *a, const uint16_t *b, int n)
{
    const fmt *f = &FMT[A->type];
    term t[65];
    int nt = 0;
    int any_nan = 0, pos_inf = 0, neg_inf = 0;
    uint32_t zero_sign = 0x80000000u; /* -0 only when every term is -0 */

    /* the accumulator */
    uint32_t ce = (c >> 23) & 0xFF, cm = c & 0x7FFFFFu;
    if (ce == 0xFF) {
        if (cm) any_nan = 1;
        else if (c >> 31) neg_inf = 1;
        else pos_inf = 1;
    } else if (ce == 0 && cm == 0) {
        zero_sign &= c;
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
        int ka = decode(f, a[i], &sa, &ma, &ea), kb = decode(f, b[i], &sb, &mb, &eb);
        uint32_t sp = sa ^ sb;
        if (ka == 3 || kb == 3) {
            any_nan = 1;
        } else if (ka == 2 || kb == 2) {
            if (ka == 0 || kb == 0) any_nan = 1; /* inf * 0 */
            else if (sp) neg_inf = 1;
            else pos_inf = 1;
        } else if (ka == 0 || kb == 0) {
            zero_sign &= sp;
        } else {
            t[nt].sign = sp;
            t[nt].mag = ma * mb;
            t[nt].lsb = ea + eb - 2 * f->mbits;
            t[nt].ealign = ea + eb + A->prod_eoff;
            nt++;
            zero_sign = 0;
        }
    }
    if (any_nan || (pos_inf && neg_inf)) return A->nan_bits;
    if (pos_inf) return 0x7F800000u;
    if (neg_inf) return 0xFF800000u;
    if (nt == 0) return zero_sign;

    /* the window: E = the largest alignment exponent (at least e_floor), bits of weight >= 2^B kept */
    int E = A->e_floor;
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
    if (S == 0) return 0; /* an exact or truncated zero: +0 */
    uint32_t sign = S < 0 ? 0x80000000u : 0;
    uint64_t mag = S < 0 ? (uint64_t)(-S) : (uint64_t)S;
    /* normalisation: truncate the magnitude to w significant bits */
    int nb = bitlen64(mag);
    if (nb > A->width) {
        mag >>= nb - A->width;
        B += nb - A->width;
    }
    /* to FP32 */
    uint64_t r;
    int q;
    round_mag(mag, B, 24, -126, A->out == VT_TC_OUT_RNE, &r, &q);
    return f32_pack(sign, r, q, A->inf_on_overflow);
}

/* ------------------------------------------------------------------ the GEMM */

vt_err vt_tc_gemm(const vt_tc_arch *arch, size_t M, size_t N, size_t K, const float *A, const float *B, float *C)
{
    vt_err e = vt_tc_arch_check(arch);
    if (e) return e;
    VT_RETURN_ERROR_IF((M && N && K && (!A || !B)) || (M && N && !C), VT_ERR_ARG, "vt_tc_gemm: NULL matrix");
    VT_RETURN_ERROR_IF(M && K > SIZE_MAX / M / 2, VT_ERR_ARG, "vt_tc_gemm: A too large");
    VT_RETURN_ERROR_IF(N && K > SIZE_MAX / N / 2, VT_ERR_ARG, "vt_tc_gemm: B too large");
    if (M == 0 || N == 0) return VT_OK;
    size_t g = (size_t)arch->group;
    size_t nk = K ? K : 1;
    uint16_t *a = malloc(M * nk * sizeof *a), *bt = malloc(N * nk * sizeof *bt);
    if (!a || !bt) {
        free(a), free(bt);
        VT_RETURN_ERROR(VT_ERR_NOMEM, "vt_tc_gemm: %zu x %zu x %zu", M, N, K);
    }
    for (size_t i = 0; i < M * K; i++) {
        uint32_t x;
        memcpy(&x, &A[i], 4);
        a[i] = vt_tc_from_f32(arch->type, x);
    }
    for (size_t k = 0; k < K; k++) /* B transposed: each column's k contiguous */
        for (size_t j = 0; j < N; j++) {
            uint32_t x;
            memcpy(&x, &B[k * N + j], 4);
            bt[j * K + k] = vt_tc_from_f32(arch->type, x);
        }
    for (size_t i = 0; i < M; i++)
        for (size_t j = 0; j < N; j++) {
            uint32_t acc = 0; /* +0 */
            for (size_t k0 = 0; k0 < K; k0 += g) {
                size_t len = K - k0 < g ? K - k0 : g;
                acc = vt_tc_group(arch, acc, &a[i * K + k0], &bt[j * K + k0], (int)len);
            }
            memcpy(&C[i * N + j], &acc, 4);
        }
    free(a), free(bt);
    return VT_OK;
}
