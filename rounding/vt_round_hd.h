/* vt_round_hd.h - the per-element rules of the rounding layer, written once for the CPU library
 * (rounding/: vt_bound.c, vt_elem.c, vt_eval.c, vt_round_exact.c; rounding/vt_round_log.c) and
 * the CUDA epilogue (backend/cuda/vt_cuda.cu, backend/cuda/vt_dev_ops_hd.h): the bound coefficients, the
 * screening filter, the ends of an element's interval, the tight bound of a reduction, the
 * record rule and the exact rounding of one GEMM element. Everything here is a fixed sequence of
 * IEEE basic operations and integer operations, compiled without contraction by gcc
 * (-ffp-contract=off) and nvcc (--fmad=false): host and device give the same bits.
 * See docs/rounding.md (the rules) and docs/cuda.md (the GPU pipeline). */
#ifndef VT_ROUND_HD_H
#define VT_ROUND_HD_H

#include <float.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "../common/vt_hd.h"
#include "vt_bound.h"
#include "vt_elem.h"
#include "vt_xacc_hd.h"

#define VTI_U 0x1p-53
#define VTI_INFLATE (1.0 + 0x1p-20)
/* record: ends_2 (2|x|2^-50 + slop < |x| 2^-48); the replayer's own screen of an unlogged element
 * (ends_2 of its own value) and exact rounding use the same slop */
#define VT_SLOP_RECORD 0x1p-48

/* ------------------------------------------------------------ coefficients */

VT_HDI double vti_bound_coef(const vt_bound_cfg *cfg, uint64_t n)
{
    if (n > VT_MAX_REDUCTION) return -1.0;
    if (n <= 1) return 0.0;
    double m = (double)(n - 1); /* exact: n <= 2^30 */
    double g = m * VTI_U;
    double provable = g / (1.0 - g) * VTI_INFLATE;
    if (!cfg || cfg->mode != VT_BOUND_PROBABILISTIC) return provable;
    double lambda = cfg->lambda > 0 ? cfg->lambda : VT_DEFAULT_LAMBDA;
    /* gamma~(lambda) = exp(t) - 1 with t = lambda*sqrt(m)*u + m*u^2/(1-u); exp(t)-1 <= t + t^2 for t <= 1 */
    double t = lambda * sqrt(m) * VTI_U + m * VTI_U * VTI_U / (1.0 - VTI_U);
    double prob = (t + t * t) * VTI_INFLATE;
    return prob < provable ? prob : provable;
}

VT_HDI double vti_bound_coef_panel(uint64_t n, uint64_t kc)
{
    if (n > VT_MAX_REDUCTION) return -1.0;
    if (n <= 1) return 0.0;
    if (kc < 2 || kc >= n) return vti_bound_coef(NULL, n);
    uint64_t P = (n + kc - 1) / kc, d = 0;
    while (((uint64_t)1 << d) < P) d++; /* d = ceil(log2 P), the depth of the panel tree */
    double g1 = (double)(kc - 1) * VTI_U, g2 = (double)d * VTI_U; /* exact: both below 2^30 */
    g1 = g1 / (1.0 - g1);
    g2 = g2 / (1.0 - g2);
    /* the same inflation as vt_bound_coef: it covers the rounding of these few operations and of
     * the computed sum|t| (docs/rounding.md 2.1) */
    return (g1 + g2 * (1.0 + g1)) * VTI_INFLATE;
}

VT_HDI int vti_bound_panelled(const vt_bound_cfg *cfg, uint64_t K)
{
    return cfg && cfg->mode == VT_BOUND_PROVABLE && !cfg->whole_reduction && K > 2 * (uint64_t)VT_PANEL;
}

VT_HDI double vti_bound_coef_red(const vt_bound_cfg *cfg, uint64_t nnz, uint64_t K)
{
    double c = vti_bound_coef(cfg, nnz);
    if (K > VT_MAX_REDUCTION) return -1.0;
    if (c > 0 && vti_bound_panelled(cfg, K)) {
        double p = vti_bound_coef_panel(K, VT_PANEL);
        if (p < c) c = p;
    }
    return c;
}

/* ------------------------------------------------------------ per element */

VT_HDI uint32_t vti_f32_of(double x) { return vt_hd_bits32((float)x); } /* IEEE conversion, RN even */
VT_HDI int vti_bits_finite(uint32_t b) { return (b & 0x7f800000u) != 0x7f800000u; }
VT_HDI double vti_working_bound(double x, double B) { return B == 0 ? 0.0 : B + vt_hd_fabs(x) * 0x1p-50; }

/* vt_round_ends (vt_elem.h) */
VT_HDI void vti_round_ends(double x, double B, double k, uint32_t *lo_bits, uint32_t *hi_bits)
{
    if (B == 0) {
        *lo_bits = *hi_bits = vti_f32_of(x);
        return;
    }
    double t = k * vti_working_bound(x, B);
    double lo = vt_hd_next_down(x - t);
    double hi = vt_hd_next_up(x + t);
    if (lo == 0) lo = -0.0; /* -0 is the lowest zero: the interval may only widen */
    if (hi == 0) hi = 0.0;
    *lo_bits = vti_f32_of(lo);
    *hi_bits = vti_f32_of(hi);
}

/* The conservative fast stability filter, branch-free so that it vectorises: 1 when ends_k(x, B)
 * certainly round alike (then *out = fl32(x)). slop: |x| * slop dominates k |x| 2^-50 (the working
 * bound's extra) plus the rounding and outward step of the interval ends (docs/rounding.md 5). */
VT_HDFI int vti_screen1(double x, double B, double k, double slop, float *out)
{
    float r = (float)x;
    double d = (double)r;
    double e = vt_hd_fabs(x - d); /* exact: the residual of rounding to FP32 */
    uint64_t db = vt_hd_bits64(d);
    /* h = half an FP32 ulp of r: 2^(exponent(d) - 24); a quarter when r is a power of two (the
     * spacing below it is half). Valid only for FP32-normal, finite r (masked below). */
    uint64_t hb = (db & 0x7ff0000000000000ULL) - (24ULL << 52);
    hb -= (uint64_t)((db & 0x000fffffffffffffULL) == 0) << 52;
    double h = vt_hd_f64(hb);
    double ad = vt_hd_fabs(d);
    double lhs = (e + k * B + vt_hd_fabs(x) * slop) * (1.0 + 0x1p-40);
    *out = r;
    int fin = ad <= (double)FLT_MAX;
    /* B = 0: the interval is the point x itself, stable whatever x (zero included), unless the
     * result is not finite (the exact path reports that) */
    return ((lhs < h) & (ad >= 0x1p-126) & fin & (B >= 0)) | ((B == 0) & fin);
}

/* vti_exact_scale(s) = 2^-E (0 when s is out of range), and whether every product a_k b_k is a
 * multiple of 2^E, where 2^(E+53) > s (1 + 2^-20) >= sum|a b|:
 * then the reduction is exact in every order (docs/rounding.md 2.1; E = ilogb(L) - 52 of
 * L = s (1 + 2^-20), the range guards never bind for products of two FP32 values). u = |a_k b_k| 2^-E
 * is exact and below 2^53, and for u < 2^52, (u + 2^52) - 2^52 is u rounded to an integer: equal
 * to u exactly when u is one. Branch-free; s must be finite and positive. */
VT_HDFI double vti_exact_scale(double s)
{
    double L = s * (1.0 + 0x1p-20);
    if (!(L > 0.0 && L <= 0x1p1000)) return 0.0; /* 0: the test fails */
    uint64_t bits = vt_hd_bits64(L);
    int E = (int)((bits >> 52) & 0x7ff) - 1023 - 52; /* L is normal: it is at least 2^-298 */
    double scale = 1.0; /* 2^-E by repeated scaling: exact */
    for (int k = E; k > 0; k--) scale *= 0.5;
    for (int k = E; k < 0; k++) scale *= 2.0;
    return scale;
}

VT_HDFI int vti_products_multiple_of(double s, size_t K, const float *a, size_t inca, const float *b, size_t incb)
{
    double scale = vti_exact_scale(s);
    if (scale == 0.0) return 0;
    int ok = 1;
    for (size_t k = 0; k < K; k++) {
        double u = vt_hd_fabs((double)a[k * inca] * (double)b[k * incb]) * scale;
        ok &= (u >= 0x1p52) | (((u + 0x1p52) - 0x1p52) == u);
    }
    return ok;
}

/* The tight bound of one reduction (vt_bound_of_terms): sum |a b| in one fixed order (four lanes
 * k mod 4 over the whole blocks, the tail into lane 0, then (s0 + s1) + (s2 + s3)), so that the
 * bound of an element is one function of its operands whoever computes it: log entries are judged
 * alike by all. A zero product adds +0 to a lane, which leaves it as it is. */
VT_HDFI double vti_bound_of_terms(const vt_bound_cfg *cfg, size_t K, const float *a, size_t inca, const float *b,
                                 size_t incb)
{
    double sl[4] = {0, 0, 0, 0};
    uint64_t nnz = 0;
    size_t whole = K - K % 4, k = 0;
    for (; k < whole; k += 4)
        for (size_t l = 0; l < 4; l++) {
            double p = vt_hd_fabs((double)a[(k + l) * inca] * (double)b[(k + l) * incb]);
            sl[l] += p;
            nnz += p != 0.0;
        }
    for (; k < K; k++) {
        double p = vt_hd_fabs((double)a[k * inca] * (double)b[k * incb]);
        sl[0] += p;
        nnz += p != 0.0;
    }
    double s = (sl[0] + sl[1]) + (sl[2] + sl[3]);
    if (nnz <= 1 || vti_products_multiple_of(s, K, a, inca, b, incb)) return 0.0;
    return vti_bound_coef_red(cfg, nnz, K) * s;
}

/* Result codes of the element rules below */
enum {
    VTI_EL_OK = 0,
    VTI_EL_NAN = 1,        /* the result is NaN */
    VTI_EL_BAD_BOUND = 2,  /* the bound is not a finite non-negative number */
    VTI_EL_RANGE = 3,      /* the result is beyond FP32 range */
    VTI_EL_INTERNAL = 4,   /* an invariant failed */
    VTI_EL_LABEL = 5,      /* a label is not a class (device-resident cross-entropy) */
    VTI_EL_STEPS = 6,      /* Adam's step count is not a step (device-resident Adam) */
    VTI_EL_TOKEN = 7,      /* a token is not in the vocabulary (device-resident embedding) */
};

/* The record rule on this trainer's own value (vt_round_record1): *out = RN32(x); logged when the
 * ends_2 of [x - 2B, x + 2B] differ, as a direction entry (*up) when they are adjacent, else a
 * value entry (*is_value). */
VT_HDI int vti_record1(double x, double B, float *out, int *logged, int *is_value, int *up)
{
    *logged = *is_value = *up = 0;
    if (vt_hd_isnan(x)) return VTI_EL_NAN;
    if (!(B >= 0) || !vt_hd_isfinite(B)) return VTI_EL_BAD_BOUND;
    uint32_t r = vti_f32_of(x);
    if (!vti_bits_finite(r)) return VTI_EL_RANGE;
    *out = vt_hd_f32(r);
    uint32_t lo, hi;
    vti_round_ends(x, B, VT_UNSTABLE_K, &lo, &hi);
    if (lo == hi) return VTI_EL_OK; /* stable */
    vti_round_ends(x, B, VT_DIRECTION_K, &lo, &hi);
    *logged = 1;
    if (vt_f32_key(hi) - vt_f32_key(lo) == 1) {
        if (r != lo && r != hi) return VTI_EL_INTERNAL;
        *up = r == hi;
    } else {
        *is_value = 1;
    }
    return VTI_EL_OK;
}

/* RN32 of the exact value of a reduction sum_k a[k*inca] b[k*incb] of FP32 values: the
 * compensated sum where its rigorous error interval decides RN32, vt_xacc otherwise
 * (*kulisch = 1). */
VT_HDI uint32_t vti_dot_rn32(size_t K, const float *a, size_t inca, const float *b, size_t incb, int *kulisch)
{
    double s, e;
    vti_dot_comp32(K, a, inca, b, incb, &s, &e);
    if (vt_hd_isfinite(s) && vt_hd_isfinite(e)) {
        uint32_t lo, hi;
        vti_round_ends(s, e, 1.0, &lo, &hi);
        if (lo == hi) {
            *kulisch = 0;
            return lo;
        }
    }
    *kulisch = 1;
    vt_xacc acc;
    vti_xacc_dot32(&acc, K, a, inca, b, incb);
    return vt_hd_bits32(vti_xacc_round32(&acc));
}

/* ---- the exact window of an element (log rounding, docs/rounding.md 5) ----
 * lo = RN32(X - B), hi = RN32(X + B) and mid = RN32(X) of an element's exact value X and bound B:
 * what the replay judges every entry by and, from manifest format 5 on, what the trainer decides
 * its entries by. Any correct evaluation gives the same three values, so the CPU's and the
 * device's agree whichever stage decided. */

/* From a compensated sum s with |s - X| <= e: 1 when [s - e, s + e] decides all three (y = s -+ B
 * is rounded in FP64: vti_round_ends widens by |y| 2^-50, which covers it - with e = 0 too, where
 * the interval is widened by DBL_MIN so that the rounding of y is never taken for exact). */
VT_HDI int vti_window_decide(double s, double e, double B, uint32_t *lo, uint32_t *hi, uint32_t *mid)
{
    double w = e > 0 ? e : DBL_MIN;
    double y[3] = {s - B, s + B, s};
    uint32_t v[3];
    for (int k = 0; k < 3; k++) {
        uint32_t l, h;
        vti_round_ends(y[k], k == 2 ? e : w, 1.0, &l, &h); /* s itself: exact when e = 0 */
        if (l != h) return 0;
        v[k] = l;
    }
    *lo = v[0], *hi = v[1], *mid = v[2];
    return 1;
}

/* From vt_xacc holding X (left unchanged). */
VT_HDI void vti_xacc_window(const vt_xacc *X, double B, uint32_t *lo, uint32_t *hi, uint32_t *mid)
{
    vt_xacc a = *X;
    vti_xacc_add(&a, -B);
    *lo = vt_hd_bits32(vti_xacc_round32(&a));
    a = *X;
    vti_xacc_add(&a, B);
    *hi = vt_hd_bits32(vti_xacc_round32(&a));
    *mid = vt_hd_bits32(vti_xacc_round32(X));
}

/* Of the reduction sum_k a[k*inca] b[k*incb]: the compensated sum where it decides, the exact
 * vt_xacc otherwise. Returns 1 (compensated sum) or 2 (vt_xacc): vt_epi_res.eval. */
VT_HDI int vti_dot_window(size_t K, const float *a, size_t inca, const float *b, size_t incb, double B, uint32_t *lo,
                          uint32_t *hi, uint32_t *mid)
{
    double s, e;
    vti_dot_comp32(K, a, inca, b, incb, &s, &e);
    if (vt_hd_isfinite(s) && vt_hd_isfinite(e) && vti_window_decide(s, e, B, lo, hi, mid)) return 1;
    vt_xacc acc;
    vti_xacc_dot32(&acc, K, a, inca, b, incb);
    vti_xacc_window(&acc, B, lo, hi, mid);
    return 2;
}

/* ---- one element of a rounded GEMM, as the GPU epilogue decides it ----
 * C = op(A) op(B) of FP32 operands, element (i, j) the reduction over k of
 * A[i*a_si + k*a_sk] * B[k*b_sk + j*b_sj]; x the party's FP64 value with |x - X| <= the screening
 * bound coef r_i c_j (the element failed that screen). */
typedef struct {
    const float *A, *B;
    size_t a_si, a_sk, b_sk, b_sj, K;
    vt_bound_cfg cfg;
    int record; /* 1: log rounding, record (the trainer; cfg.legacy_log: the rule of formats 1-4); 0: exact rounding */
} vt_gemm_epi;

/* What the epilogue decided for one element that the screen did not clear. */
typedef struct {
    double x;        /* the party's FP64 value */
    double B;        /* its tight bound */
    uint32_t bits;   /* the FP32 result */
    uint8_t code;    /* VTI_EL_* */
    uint8_t entry;   /* record: 0 none, 1 direction, 2 value */
    uint8_t up;      /* direction entries */
    uint8_t eval;    /* 0: no exact evaluation, 1: compensated sum, 2: vt_xacc */
} vt_epi_res;

/* The record rule's second half (vt_round's slow_element): an element that the rule logs, or whose
 * own value lies beyond FP32 range but within B of the overflow threshold, is stored as RN32 of its
 * exact value rb (computed when vti_record_needs_exact says so), logged as a direction entry when
 * the ends of its 2B interval are adjacent and rb is one of them, else as a value entry. code and
 * logged come from vti_record1 on (x, B); r->bits holds RN32(x) on entry. */
VT_HDI int vti_record_needs_exact(double x, double B, int code, int logged)
{
    int near_max = code == VTI_EL_RANGE && vt_hd_isfinite(x) && B > 0 && vt_hd_isfinite(B);
    if (!((code == VTI_EL_OK && logged) || near_max)) return 0;
    uint32_t lo, hi;
    vti_round_ends(x, B, 1.0, &lo, &hi);
    return vti_bits_finite(lo);
}

VT_HDI void vti_record_tail(double x, double B, int code, int logged, uint32_t rb, vt_epi_res *r)
{
    int near_max = code == VTI_EL_RANGE && vt_hd_isfinite(x) && B > 0 && vt_hd_isfinite(B);
    if ((code == VTI_EL_OK && logged) || near_max) {
        uint32_t lo, hi;
        vti_round_ends(x, B, 1.0, &lo, &hi);
        if (vti_bits_finite(lo) && vti_bits_finite(rb)) {
            r->bits = rb;
            vti_round_ends(x, B, VT_DIRECTION_K, &lo, &hi);
            if (vt_f32_key(hi) - vt_f32_key(lo) == 1 && (rb == lo || rb == hi)) {
                r->entry = 1;
                r->up = rb == hi;
            } else {
                r->entry = 2;
            }
            code = VTI_EL_OK;
        } else if (code == VTI_EL_OK) {
            code = VTI_EL_RANGE;
        }
    }
    r->code = (uint8_t)code;
}

/* The record rule of manifest format 5 on an element's exact window (vt_round_record1_exact):
 * the result mid = RN32(X); an entry only when lo != hi - a direction entry when they are adjacent
 * (mid is one of them), a value entry holding mid otherwise. */
VT_HDI void vti_record_window(uint32_t lo, uint32_t hi, uint32_t mid, vt_epi_res *r)
{
    r->entry = r->up = 0;
    if (!vti_bits_finite(mid)) {
        r->code = vt_hd_isnan(vt_hd_f32(mid)) ? VTI_EL_NAN : VTI_EL_RANGE;
        return;
    }
    r->code = VTI_EL_OK;
    r->bits = mid;
    uint32_t kl = vt_f32_key(lo), kh = vt_f32_key(hi);
    if (kl == kh) return;
    if (kh - kl == 1) {
        r->entry = 1;
        r->up = mid == hi;
    } else {
        r->entry = 2;
    }
}

/* Exact rounding: RN32 of the exact value (what vt_round's exact path computes); record: the
 * trainer's rule with the tight bound, and RN32 of the exact value for a logged element (what
 * vt_round's record path stores). record: 0 exact rounding, 1 the record rule of manifest formats
 * 1-4 (legacy_log), 2 that of format 5 (the entry from the exact window). */
/* The decision for one element whose screen failed: x the party's value, B THE bound of the
 * element, the reduction sum_k a[k*sa] b[k*sb] its exact evaluator (K terms). */
VT_HDI void vti_elem_decide(const float *a, size_t sa, const float *b, size_t sb, size_t K, int record, double x,
                            double B, vt_epi_res *r)
{
    float f;
    int kul = 0;
    r->x = x;
    r->B = B;
    r->code = VTI_EL_OK;
    r->entry = r->up = r->eval = 0;
    if (!record) {
        if (vti_screen1(x, B, 1.0, VT_SLOP_RECORD, &f)) {
            r->bits = vt_hd_bits32(f);
            return;
        }
        if (vt_hd_isnan(x)) {
            r->code = VTI_EL_NAN;
            return;
        }
        if (!(B >= 0) || !vt_hd_isfinite(B)) {
            r->code = VTI_EL_BAD_BOUND;
            return;
        }
        uint32_t lo, hi;
        vti_round_ends(x, B, 1.0, &lo, &hi);
        if (lo == hi && vti_bits_finite(lo)) {
            r->bits = lo;
            return;
        }
        r->bits = vti_dot_rn32(K, a, sa, b, sb, &kul);
        r->eval = (uint8_t)(1 + kul);
        if (!vti_bits_finite(r->bits)) r->code = vt_hd_isnan(vt_hd_f32(r->bits)) ? VTI_EL_NAN : VTI_EL_RANGE;
        return;
    }
    if (vti_screen1(x, B, VT_UNSTABLE_K, VT_SLOP_RECORD, &f)) {
        r->bits = vt_hd_bits32(f);
        return;
    }
    int logged, isv, up;
    int code = vti_record1(x, B, &f, &logged, &isv, &up);
    r->bits = vt_hd_bits32(f);
    uint32_t rb = 0;
    if (record == 2 && vti_record_needs_exact(x, B, code, logged)) {
        uint32_t lo, hi, mid;
        r->eval = (uint8_t)vti_dot_window(K, a, sa, b, sb, B, &lo, &hi, &mid);
        vti_record_window(lo, hi, mid, r);
        return;
    }
    if (vti_record_needs_exact(x, B, code, logged)) {
        rb = vti_dot_rn32(K, a, sa, b, sb, &kul);
        r->eval = (uint8_t)(1 + kul);
    }
    vti_record_tail(x, B, code, logged, rb, r);
}

VT_HDI void vti_gemm_elem(const vt_gemm_epi *d, size_t i, size_t j, double x, vt_epi_res *r)
{
    const float *a = d->A + i * d->a_si, *b = d->B + j * d->b_sj;
    double B = vti_bound_of_terms(&d->cfg, d->K, a, d->a_sk, b, d->b_sk);
    vti_elem_decide(a, d->a_sk, b, d->b_sk, d->K, d->record ? (d->cfg.legacy_log ? 1 : 2) : 0, x, B, r);
}

/* ---- one element of a rounded batched GEMM (the attention's batched_matmul) ----
 * Element e of the [G*M, N] output: batch g = e / (M N), row i, column j of op(A_g) op(B_g), with
 * A_g = A + g M K and B_g = B + g K N. Its bound is THE bound of the kind: the batch's
 * Cauchy-Schwarz bound (coef rn[g M + i]) cn[g N + j] from operand norms summed in index order
 * (vti_norm32), as ops/vt_fam_chain.c computes it: there is no tight fallback. */
typedef struct {
    const float *A, *B;
    size_t a_si, a_sk, b_sk, b_sj; /* within one batch, as vt_gemm_epi */
    size_t M, N, K;
    const double *rn, *cn;          /* G*M row norms, G*N column norms */
    double coef;
    int record;
    int legacy_log; /* record: the rule of manifest formats 1-4 (vt_bound_cfg.legacy_log) */
} vt_bmm_epi;

VT_HDI double vti_bmm_bound(const vt_bmm_epi *d, size_t e)
{
    size_t g = e / (d->M * d->N), i = (e / d->N) % d->M, j = e % d->N;
    return d->coef * d->rn[g * d->M + i] * d->cn[g * d->N + j];
}

VT_HDI void vti_bmm_elem(const vt_bmm_epi *d, size_t e, double x, vt_epi_res *r)
{
    size_t g = e / (d->M * d->N), i = (e / d->N) % d->M, j = e % d->N;
    const float *a = d->A + g * d->M * d->K + i * d->a_si, *b = d->B + g * d->K * d->N + j * d->b_sj;
    vti_elem_decide(a, d->a_sk, b, d->b_sk, d->K, d->record ? (d->legacy_log ? 1 : 2) : 0, x, vti_bmm_bound(d, e), r);
}

/* The screen of GEMM element (i, j) with row norm ri and column norm cj: the outer bound
 * coef ri cj, inflated like vt_round's (the tight bound is computed for the elements it does not
 * clear); k = 1 (exact rounding) or VT_UNSTABLE_K (record). x is the party's FP64 value, already
 * normalised (x + 0.0: a zero is +0 in every order). 1 and *out = RN32(x) when cleared. */
VT_HDI int vti_gemm_screen(double coef, double ri, double cj, double x, double k, float *out)
{
    double B = (coef * ri * (1.0 + 0x1p-20)) * cj;
    return vti_screen1(x, B, k, VT_SLOP_RECORD, out);
}

/* ||v||_2 of the FP32 vector v[k*inc], k < K, as vt_gemm's norms: an FP64 sum of exact squares in
 * index order, then sqrt (any order is covered by the bound; this is the one both twins use). */
VT_HDI double vti_norm32(size_t K, const float *v, size_t inc)
{
    double s = 0.0;
    for (size_t k = 0; k < K; k++) {
        double t = (double)v[k * inc];
        s += t * t;
    }
    return sqrt(s);
}

#endif
