/* vt_math_vec.c - vt_exp, vt_log and vt_tanh over arrays (vt_math.h vt_exp_n, vt_log_n, vt_tanh_n):
 * the SAME bits as the scalar vt_exp_impl, vt_log_impl and vt_tanh_impl (vt_math_hd.h) on every
 * input, several lanes at a time.
 *
 * The lane forms below perform, per lane, exactly the scalar functions' IEEE operations in the
 * same order (the same constants, the same polynomials, the same scaling by exact powers of two),
 * and select the scalar functions' special results and branches by masks instead of branches: every
 * branch's chain is evaluated in every lane and the lane keeps the one the scalar code takes.
 * exp: rint(t) is (t + 1.5 2^52) - 1.5 2^52 with the sign of a zero result taken from t, which is
 * rint in round-to-nearest-even for |t| < 2^51 (here |t| < 1076). log: the scalar code's integer
 * steps on the bit pattern (the subnormal scaling by 2^54, the exponent k, the high word hx, the
 * mantissa's fold into [sqrt(2)/2, sqrt(2))) on 64-bit integer lanes holding the same 32-bit
 * values, and (double)k as (bits of 1.5 2^52 + k) - 1.5 2^52, exact for |k| < 2^51 (+0 for k = 0,
 * as the conversion gives). tanh: the argument -2|u|, the exp lanes, then (1 - e) / (1 + e) and the
 * sign, as vti_tanh_from. Compiled without contraction (-ffp-contract=off, no FMA), so every lane
 * rounds as the scalar code does.
 *
 * Implementations, chosen once at the first call (pthread_once), the way libsodium picks its
 * implementations: "avx2" (four lanes in 256-bit registers, where the CPU has AVX2: the same source
 * compiled for it by a target attribute; docs/benchmarks.md has the ns per element) or else the
 * scalar loops, always present; "vector" (the same lanes in the baseline ISA, slower than the
 * scalar loops) only when VT_MATH_IMPL names it, as it can name any other. tests/unit/test_math_vec.c
 * checks the bits against the scalar functions on every implementation. */
/* the lane helpers are always inlined: no 256-bit value crosses a call, whatever the ISA */
#if defined(__clang__)
#pragma clang diagnostic ignored "-Wpsabi"
#elif defined(__GNUC__)
#pragma GCC diagnostic ignored "-Wpsabi"
#endif
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../common/vt_env.h"
#include "vt_math.h"
#include "vt_math_hd.h"

typedef double v4d __attribute__((vector_size(32)));
typedef int64_t v4l __attribute__((vector_size(32)));

static inline __attribute__((always_inline)) v4d vsel(v4l m, v4d a, v4d b) /* m ? a : b, lane by lane */
{
    v4l ai, bi;
    memcpy(&ai, &a, sizeof ai);
    memcpy(&bi, &b, sizeof bi);
    v4l r = (ai & m) | (bi & ~m);
    v4d d;
    memcpy(&d, &r, sizeof d);
    return d;
}

static inline __attribute__((always_inline)) v4d vbits(v4l b)
{
    v4d d;
    memcpy(&d, &b, sizeof d);
    return d;
}

static inline __attribute__((always_inline)) v4l vint(v4d d)
{
    v4l b;
    memcpy(&b, &d, sizeof b);
    return b;
}

/* 2^n for -1022 <= n <= 1023 from the bit pattern (vti_pow2i); n is clamped into that range first,
 * lanes whose n was outside are not used by the caller */
static inline __attribute__((always_inline)) v4d vpow2i(v4l n)
{
    v4l lo = n < -1022, hi = n > 1023;
    n = (n & ~lo) | (-1022 & lo);
    n = (n & ~hi) | (1023 & hi);
    return vbits((n + 1023) << 52);
}

/* four lanes of vt_exp_impl */
static inline __attribute__((always_inline)) v4d vexp4(v4d x)
{
    const double ln2_hi = 0x1.62e42feep-1, ln2_lo = 0x1.a39ef35793c76p-33, inv_ln2 = 0x1.71547652b82fep+0;
    const double o_thr = 0x1.62e42fefa39efp+9, u_thr = -0x1.74910d52d3051p+9;
    const double P1 = 0x1.555555555553ep-3, P2 = -0x1.6c16c16bebd93p-9, P3 = 0x1.1566aaf25de2cp-14,
                 P4 = -0x1.bbd41c5d26bf1p-20, P5 = 0x1.6376972bea4dp-25;
    const v4d zero = {0, 0, 0, 0};
    v4l isnan = x != x, over = x > o_thr, under = x < u_thr;
    v4l special = isnan | over | under;
    v4d xs = vsel(special, zero, x); /* the main path on a harmless value where the result is special */

    v4d t = xs * inv_ln2;
    const v4d magic = {0x1.8p52, 0x1.8p52, 0x1.8p52, 0x1.8p52};
    v4d kd = (t + magic) - magic;
    v4l sign = vint(t) & (v4l){INT64_MIN, INT64_MIN, INT64_MIN, INT64_MIN};
    kd = vsel(kd == zero, vbits(sign), kd); /* rint keeps the sign of a zero: -0.3 -> -0 */
    v4d hi = xs - kd * ln2_hi;
    v4d lo = kd * ln2_lo;
    v4d r = hi - lo;
    v4d tt = r * r;
    v4d c = r - tt * (P1 + tt * (P2 + tt * (P3 + tt * (P4 + tt * P5))));
    v4d y = 1.0 - ((lo - (r * c) / (2.0 - c)) - hi);

    /* vti_scale(y, k): the three cases, each with its own exact powers of two */
    v4l k = __builtin_convertvector(kd, v4l); /* |kd| <= 1076: exact */
    v4d big = (y * 2.0) * vpow2i(k - 1);
    v4d tiny = (y * vpow2i(k + 54)) * 0x1p-54;
    v4d mid = y * vpow2i(k);
    v4d res = vsel(k > 1023, big, vsel(k < -1021, tiny, mid));

    const v4d inf = vbits((v4l){0x7ff0000000000000LL, 0x7ff0000000000000LL, 0x7ff0000000000000LL,
                                0x7ff0000000000000LL});
    res = vsel(under, zero, res);
    res = vsel(over, inf, res);
    res = vsel(isnan, x + x, res);
    return res;
}

/* four lanes of vt_log_impl: every branch's chain in every lane, the lane keeping the scalar's */
static inline __attribute__((always_inline)) v4d vlog4(v4d x)
{
    const double ln2_hi = 0x1.62e42feep-1, ln2_lo = 0x1.a39ef35793c76p-33;
    const double Lg1 = 0x1.5555555555593p-1, Lg2 = 0x1.999999997fa04p-2, Lg3 = 0x1.2492494229359p-2,
                 Lg4 = 0x1.c71c51d8e78afp-3, Lg5 = 0x1.7466496cb03dep-3, Lg6 = 0x1.39a09d078c69fp-3,
                 Lg7 = 0x1.2f112df3e5244p-3;
    const v4d zero = {0, 0, 0, 0};
    const v4l one = {1, 1, 1, 1};
    v4l ix = vint(x);
    /* the specials, in the scalar code's order of precedence (applied last to first below) */
    v4l isnan = x != x, neg = x < zero, iszero = x == zero;
    v4l isinf = ix >= 0x7ff0000000000000LL * one; /* x > 0 here: the signed compare is the unsigned one */

    /* subnormal: scale up exactly, k = -54 (for x > 0 the signed compare is the unsigned one) */
    v4l sub = ix < 0x0010000000000000LL * one;
    v4d xs = vsel(sub, x * 0x1p54, x);
    ix = vint(xs);
    v4l k = sub & (-54 * one);
    v4l hx = (ix >> 32) & 0xffffffffLL; /* the uint32 high word */
    k += (hx >> 20) - 1023;
    hx &= 0x000fffff;
    v4l i = (hx + 0x95f64) & 0x100000;
    v4d m = vbits(((hx | (i ^ 0x3ff00000)) << 32) | (ix & 0xffffffffLL));
    k += i >> 20;
    v4d f = m - 1.0; /* exact */
    const v4d magic = {0x1.8p52, 0x1.8p52, 0x1.8p52, 0x1.8p52};
    v4d dk = vbits(vint(magic) + k) - magic; /* (double)k, exact */
    v4l k0 = k == 0;

    /* |f| < 2^-20 */
    v4l small = ((2 + hx) & 0x000fffff) < 3;
    v4d fz_res = vsel(k0, zero, dk * ln2_hi + dk * ln2_lo);
    v4d Rs = f * f * (0.5 - 0x1.5555555555555p-2 * f);
    v4d small_res = vsel(k0, f - Rs, dk * ln2_hi - ((Rs - dk * ln2_lo) - f));
    small_res = vsel(f == zero, fz_res, small_res);

    v4d s = f / (2.0 + f);
    v4d z = s * s;
    v4d w = z * z;
    v4d t1 = w * (Lg2 + w * (Lg4 + w * Lg6));
    v4d t2 = z * (Lg1 + w * (Lg3 + w * (Lg5 + w * Lg7)));
    v4d R = t2 + t1;
    v4l big = (hx >= 0x6147a) & (hx <= 0x6b851);
    v4d hfsq = 0.5 * f * f;
    v4d big_res = vsel(k0, f - (hfsq - s * (hfsq + R)), dk * ln2_hi - ((hfsq - (s * (hfsq + R) + dk * ln2_lo)) - f));
    v4d main_res = vsel(k0, f - s * (f - R), dk * ln2_hi - ((s * (f - R) - dk * ln2_lo) - f));
    v4d res = vsel(small, small_res, vsel(big, big_res, main_res));

    const v4d ninf = vbits(-0x0010000000000000LL * one), qnan = vbits(0x7ff8000000000000LL * one);
    res = vsel(isinf, x, res);
    res = vsel(iszero, ninf, res);
    res = vsel(neg, qnan, res);
    res = vsel(isnan, x + x, res);
    return res;
}

/* four lanes of vt_tanh_impl: vti_tanh_arg, the exp lanes, vti_tanh_from */
static inline __attribute__((always_inline)) v4d vtanh4(v4d u)
{
    const v4d zero = {0, 0, 0, 0};
    v4l negu = u < zero;
    v4d e = vexp4(-2.0 * vsel(negu, -u, u));
    v4d t = (1.0 - e) / (1.0 + e);
    return vsel(negu, -t, t);
}

/* y[i] = F(x[i]) four lanes at a time, the scalar function on the tail; fn is a constant at every
 * call, so the switches fold away */
static inline __attribute__((always_inline)) void lanes(int fn, size_t n, const double *x, double *y)
{
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        v4d v;
        memcpy(&v, x + i, sizeof v);
        v = fn == VT_MATH_EXP ? vexp4(v) : fn == VT_MATH_LOG ? vlog4(v) : vtanh4(v);
        memcpy(y + i, &v, sizeof v);
    }
    for (; i < n; i++)
        y[i] = fn == VT_MATH_EXP ? vt_exp_impl(x[i]) : fn == VT_MATH_LOG ? vt_log_impl(x[i]) : vt_tanh_impl(x[i]);
}

static void exp_scalar(size_t n, const double *x, double *y)
{
    for (size_t i = 0; i < n; i++) y[i] = vt_exp_impl(x[i]);
}
static void log_scalar(size_t n, const double *x, double *y)
{
    for (size_t i = 0; i < n; i++) y[i] = vt_log_impl(x[i]);
}
static void tanh_scalar(size_t n, const double *x, double *y)
{
    for (size_t i = 0; i < n; i++) y[i] = vt_tanh_impl(x[i]);
}

static void exp_vector(size_t n, const double *x, double *y) { lanes(VT_MATH_EXP, n, x, y); }
static void log_vector(size_t n, const double *x, double *y) { lanes(VT_MATH_LOG, n, x, y); }
static void tanh_vector(size_t n, const double *x, double *y) { lanes(VT_MATH_TANH, n, x, y); }

#if defined(__x86_64__) && defined(__GNUC__)
#define VTI_AVX2 __attribute__((target("avx2")))
VTI_AVX2 static void exp_avx2(size_t n, const double *x, double *y) { lanes(VT_MATH_EXP, n, x, y); }
VTI_AVX2 static void log_avx2(size_t n, const double *x, double *y) { lanes(VT_MATH_LOG, n, x, y); }
VTI_AVX2 static void tanh_avx2(size_t n, const double *x, double *y) { lanes(VT_MATH_TANH, n, x, y); }
#define VTI_HAVE_AVX2 1
#else
#define VTI_HAVE_AVX2 0
#endif

typedef struct {
    const char *name;
    vt_math_fn_n fn[VT_MATH_NFN]; /* exp, log, tanh */
} math_impl;

static const math_impl IMPLS[] = {
    {"scalar", {exp_scalar, log_scalar, tanh_scalar}},
    {"vector", {exp_vector, log_vector, tanh_vector}},
#if VTI_HAVE_AVX2
    {"avx2", {exp_avx2, log_avx2, tanh_avx2}},
#endif
};
#define N_IMPLS (sizeof IMPLS / sizeof IMPLS[0])

static const math_impl *g_impl = &IMPLS[0];
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

/* VT_MATH_IMPL's choice when this CPU runs it; else "avx2" where it runs, else the scalar loop (the
 * baseline "vector" form is slower than the scalar code without AVX2's 64-bit integer lanes: it is
 * there to be tested and chosen by name) */
static void pick(void)
{
    g_impl = &IMPLS[vt_impl_pick("VT_MATH_IMPL", IMPLS, N_IMPLS, sizeof IMPLS[0])];
}

void vt_exp_n(size_t n, const double *x, double *y)
{
    pthread_once(&g_once, pick);
    g_impl->fn[VT_MATH_EXP](n, x, y);
}

void vt_log_n(size_t n, const double *x, double *y)
{
    pthread_once(&g_once, pick);
    g_impl->fn[VT_MATH_LOG](n, x, y);
}

void vt_tanh_n(size_t n, const double *x, double *y)
{
    pthread_once(&g_once, pick);
    g_impl->fn[VT_MATH_TANH](n, x, y);
}

const char *vt_math_impl(void)
{
    pthread_once(&g_once, pick);
    return g_impl->name;
}

int vt_math_impl_count(void) { return (int)N_IMPLS; }

const char *vt_math_impl_get(int i, int fn, vt_math_fn_n *out)
{
    if (i < 0 || (size_t)i >= N_IMPLS || fn < 0 || fn >= VT_MATH_NFN ||
        (!strcmp(IMPLS[i].name, "avx2") && !vt_cpu_avx2()))
        return NULL;
    if (out) *out = IMPLS[i].fn[fn];
    return IMPLS[i].name;
}
