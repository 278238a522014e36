/* vt_tc.c - the tensor-core emulator (vt_tc.h; the model: docs/tensorcore.md). Integer arithmetic
 * only: a value is a sign, an integer magnitude and the exponent of its last bit. */
#include "vt_tc.h"

#include <stdlib.h>
#include <string.h>

#include "../common/vt_par.h"

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
    const vti_tc_fmt f = vti_tc_fmt_of(A->type);
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
        int ka = vti_tc_decode(f, a[i], &sa, &ma, &ea), kb = vti_tc_decode(f, b[i], &sb, &mb, &eb);
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
            t[nt].lsb = ea + eb - 2 * f.mbits;
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
    return group_finish(A, S, B);
}

/* ------------------------------------------------------------------ the GEMM */

/* An operand decoded once: per element its signed significand (0 for a zero) and unit exponent;
 * per row of A / column of B whether every element is finite (else those elements' groups take
 * vt_tc_group on the bits). */
typedef struct {
    const vt_tc_arch *arch;
    size_t M, N, K;
    const uint16_t *a, *bt;   /* the type's bits: A [M][K], B transposed [N][K] */
    const int32_t *sa, *sb;   /* signed significands, same layouts */
    const int16_t *ea, *eb;   /* unit exponents */
    const uint8_t *fa, *fb;   /* 1: the row / column is all finite */
    float *C;
} gemm_ctx;

static void decode_all(vti_tc_fmt f, const uint16_t *x, size_t n, int32_t *sig, int16_t *e)
{
    for (size_t i = 0; i < n; i++) {
        uint32_t s = 0;
        uint64_t m = 0;
        int u = 0;
        int k = vti_tc_decode(f, x[i], &s, &m, &u);
        sig[i] = k == 1 ? (s ? -(int32_t)m : (int32_t)m) : 0;
        e[i] = (int16_t)(k == 1 ? u : 0);
    }
}

/* One group on decoded finite products and a finite accumulator c: vt_tc_group's steps 3-7 with
 * the products' terms computed lane by lane (the same integers: the products' magnitudes and their
 * truncating shifts; the sum is exact). Returns 0 with *out set, or 1 when every term is zero (the
 * sign of a zero result needs vt_tc_group). */
#if defined(__GNUC__)
#define VTI_TC_INLINE static inline __attribute__((always_inline))
#else
#define VTI_TC_INLINE static inline
#endif
VTI_TC_INLINE int group_lanes(const vt_tc_arch *A, int mb2, uint32_t c, const int32_t *sa, const int16_t *ea,
                              const int32_t *sb, const int16_t *eb, int n, uint32_t *out)
{
    int64_t pv[64];
    int ev[64];
    int E = A->e_floor, any = 0;
    for (int i = 0; i < n; i++) {
        pv[i] = (int64_t)sa[i] * sb[i];
        ev[i] = pv[i] ? ea[i] + eb[i] : -100000; /* a zero product takes no part in E */
    }
    for (int i = 0; i < n; i++) {
        int x = ev[i] + A->prod_eoff;
        E = x > E ? x : E;
        any |= pv[i] != 0;
    }
    uint32_t ce = (c >> 23) & 0xFF, cm = c & 0x7FFFFFu;
    int cnz = ce || cm;
    if (cnz) {
        int x = (ce ? (int)ce : 1) - 127;
        E = x > E ? x : E;
    }
    if (!any && !cnz) return 1;
    const int B = E - (A->width - 1);
    int64_t S = 0;
    for (int i = 0; i < n; i++) { /* the products: lsb = ea + eb - 2 mbits, cut at 2^B toward zero */
        int sh = ev[i] - mb2 - B;
        uint64_t mag = (uint64_t)(pv[i] < 0 ? -pv[i] : pv[i]);
        int l = sh > 0 ? sh : 0, r = sh < 0 ? (-sh < 63 ? -sh : 63) : 0;
        int64_t v = (int64_t)((mag << l) >> r);
        S += pv[i] < 0 ? -v : v;
    }
    if (cnz) {
        uint64_t mag = ce ? (cm | 0x800000u) : cm;
        int sh = (ce ? (int)ce : 1) - 150 - B;
        uint64_t v = sh >= 0 ? mag << sh : (-sh < 64 ? mag >> -sh : 0);
        S += (c >> 31) ? -(int64_t)v : (int64_t)v;
    }
    *out = group_finish(A, S, B);
    return 0;
}

/* group_lanes with the group's length a constant for the full groups of the built-in models (the
 * compiler unrolls and vectorises the lanes) */
static int group_fast(const vt_tc_arch *A, int mb2, uint32_t c, const int32_t *sa, const int16_t *ea,
                      const int32_t *sb, const int16_t *eb, int n, uint32_t *out)
{
    if (n == 16) return group_lanes(A, mb2, c, sa, ea, sb, eb, 16, out);
    if (n == 8) return group_lanes(A, mb2, c, sa, ea, sb, eb, 8, out);
    if (n == 32) return group_lanes(A, mb2, c, sa, ea, sb, eb, 32, out);
    return group_lanes(A, mb2, c, sa, ea, sb, eb, n, out);
}

static void gemm_rows(void *vctx, size_t lo, size_t hi, int part)
{
    (void)part;
    const gemm_ctx *x = vctx;
    const vt_tc_arch *A = x->arch;
    const size_t K = x->K, N = x->N, g = (size_t)A->group;
    const int fast = A->align == VT_TC_ALIGN_RZ;
    const int mb2 = 2 * vti_tc_fmt_of(A->type).mbits;
    for (size_t i = lo; i < hi; i++)
        for (size_t j = 0; j < N; j++) {
            uint32_t acc = 0; /* +0 */
            const int fin = fast && x->fa[i] && x->fb[j];
            for (size_t k0 = 0; k0 < K; k0 += g) {
                size_t len = K - k0 < g ? K - k0 : g;
                /* the fast path needs a finite accumulator (an inf or NaN one stays with vt_tc_group) */
                if (!fin || ((acc >> 23) & 0xFF) == 0xFF ||
                    group_fast(A, mb2, acc, &x->sa[i * K + k0], &x->ea[i * K + k0], &x->sb[j * K + k0],
                               &x->eb[j * K + k0], (int)len, &acc))
                    acc = vt_tc_group(A, acc, &x->a[i * K + k0], &x->bt[j * K + k0], (int)len);
            }
            memcpy(&x->C[i * N + j], &acc, 4);
        }
}

static void all_finite(vti_tc_fmt f, const uint16_t *x, size_t rows, size_t K, uint8_t *out)
{
    for (size_t r = 0; r < rows; r++) {
        uint8_t ok = 1;
        for (size_t k = 0; k < K; k++) {
            uint32_t s;
            uint64_t m;
            int u;
            ok &= vti_tc_decode(f, x[r * K + k], &s, &m, &u) <= 1;
        }
        out[r] = ok;
    }
}

vt_err vt_tc_gemm(const vt_tc_arch *arch, size_t M, size_t N, size_t K, const float *A, const float *B, float *C)
{
    vt_err e = vt_tc_arch_check(arch);
    if (e) return e;
    VT_RETURN_ERROR_IF((M && N && K && (!A || !B)) || (M && N && !C), VT_ERR_ARG, "vt_tc_gemm: NULL matrix");
    VT_RETURN_ERROR_IF(M && K > SIZE_MAX / M / 8, VT_ERR_ARG, "vt_tc_gemm: A too large");
    VT_RETURN_ERROR_IF(N && K > SIZE_MAX / N / 8, VT_ERR_ARG, "vt_tc_gemm: B too large");
    if (M == 0 || N == 0) return VT_OK;
    size_t nk = K ? K : 1;
    /* one allocation: bits, significands, exponents of A and B, the finite flags */
    size_t na = M * nk, nb = N * nk;
    size_t bytes = (na + nb) * (sizeof(uint16_t) + sizeof(int32_t) + sizeof(int16_t)) + M + N;
    uint8_t *mem = malloc(bytes);
    VT_RETURN_ERROR_IF(!mem, VT_ERR_NOMEM, "vt_tc_gemm: %zu x %zu x %zu", M, N, K);
    int32_t *sa = (int32_t *)mem, *sb = sa + na;
    uint16_t *a = (uint16_t *)(sb + nb), *bt = a + na;
    int16_t *ea = (int16_t *)(bt + nb), *eb = ea + na;
    uint8_t *fa = (uint8_t *)(eb + nb), *fb = fa + M;
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
    const vti_tc_fmt f = vti_tc_fmt_of(arch->type);
    decode_all(f, a, M * K, sa, ea);
    decode_all(f, bt, N * K, sb, eb);
    all_finite(f, a, M, K, fa);
    all_finite(f, bt, N, K, fb);
    gemm_ctx x = {arch, M, N, K, a, bt, sa, sb, ea, eb, fa, fb, C};
    size_t per_row = N * (K ? K : 1);
    vt_par_for(M, per_row >= 65536 ? 1 : 65536 / per_row, gemm_rows, &x);
    free(mem);
    return VT_OK;
}
