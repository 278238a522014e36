/* vt_math_vec.c - vt_exp over arrays (vt_math.h vt_exp_n): the SAME bits as the scalar vt_exp_impl
 * (vt_math_hd.h) on every input, several lanes at a time.
 *
 * The lane form below performs, per lane, exactly the scalar function's IEEE operations in the
 * same order (the same constants, the same polynomial, the same scaling by exact powers of two),
 * and selects the scalar function's special results (NaN, overflow, underflow) by masks instead of
 * branches; rint(t) is (t + 1.5 2^52) - 1.5 2^52 with the sign of a zero result taken from t, which
 * is rint in round-to-nearest-even for |t| < 2^51 (here |t| < 1076). Compiled without contraction
 * (-ffp-contract=off, no FMA), so every lane rounds as the scalar code does.
 *
 * Implementations, chosen once at the first call (pthread_once), the way libsodium picks its
 * implementations: "avx2" (four lanes in 256-bit registers, where the CPU has AVX2: the same source
 * compiled for it by a target attribute; 3.9 ns an element against the scalar loop's 7.1 on this
 * project's machine) or else the scalar loop, always present; "vector" (the same lanes in the
 * baseline ISA, slower than the scalar loop) only when VT_MATH_IMPL names it, as it can name any
 * other. tests/test_math_vec.c checks the bits against the scalar function on every implementation. */
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

static inline __attribute__((always_inline)) void exp_lanes(size_t n, const double *x, double *y)
{
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        v4d v;
        memcpy(&v, x + i, sizeof v);
        v = vexp4(v);
        memcpy(y + i, &v, sizeof v);
    }
    for (; i < n; i++) y[i] = vt_exp_impl(x[i]);
}

static void exp_scalar(size_t n, const double *x, double *y)
{
    for (size_t i = 0; i < n; i++) y[i] = vt_exp_impl(x[i]);
}

static void exp_vector(size_t n, const double *x, double *y) { exp_lanes(n, x, y); }

#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx2"))) static void exp_avx2(size_t n, const double *x, double *y) { exp_lanes(n, x, y); }
#define VTI_HAVE_AVX2 1
#else
#define VTI_HAVE_AVX2 0
#endif

typedef struct {
    const char *name;
    void (*exp_n)(size_t n, const double *x, double *y);
} math_impl;

static const math_impl IMPLS[] = {
    {"scalar", exp_scalar},
    {"vector", exp_vector},
#if VTI_HAVE_AVX2
    {"avx2", exp_avx2},
#endif
};
#define N_IMPLS (sizeof IMPLS / sizeof IMPLS[0])

static const math_impl *g_impl = &IMPLS[0];
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static int impl_usable(const math_impl *m)
{
#if VTI_HAVE_AVX2
    if (strcmp(m->name, "avx2") == 0) {
        __builtin_cpu_init();
        return __builtin_cpu_supports("avx2");
    }
#endif
    (void)m;
    return 1;
}

/* VT_MATH_IMPL's choice when this CPU runs it; else "avx2" where it runs, else the scalar loop (the
 * baseline "vector" form is slower than the scalar code without AVX2's 64-bit integer lanes: it is
 * there to be tested and chosen by name) */
static void pick(void)
{
    const char *want = getenv("VT_MATH_IMPL");
    const math_impl *best = &IMPLS[0];
    for (size_t i = 0; i < N_IMPLS; i++) {
        if (!impl_usable(&IMPLS[i])) continue;
        if (want && *want ? strcmp(want, IMPLS[i].name) == 0 : strcmp(IMPLS[i].name, "avx2") == 0) best = &IMPLS[i];
    }
    g_impl = best;
}

void vt_exp_n(size_t n, const double *x, double *y)
{
    pthread_once(&g_once, pick);
    g_impl->exp_n(n, x, y);
}

const char *vt_math_impl(void)
{
    pthread_once(&g_once, pick);
    return g_impl->name;
}

int vt_math_impl_count(void) { return (int)N_IMPLS; }

const char *vt_math_impl_exp_n(int i, void (**fn)(size_t, const double *, double *))
{
    if (i < 0 || (size_t)i >= N_IMPLS || !impl_usable(&IMPLS[i])) return NULL;
    if (fn) *fn = IMPLS[i].exp_n;
    return IMPLS[i].name;
}
