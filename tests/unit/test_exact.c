/* test_exact - the exact accumulator (rounding/vt_exact.h) against an independent exact
 * implementation, MPFR (test-only dependency): every sum is formed in MPFR at 2400 bits, where
 * each addition of FP64 values is exact, and rounded by mpfr_get_flt / mpfr_get_d (RNDN). The
 * data are this project's adversarial cases: cancellation to near zero, stagnation (terms under
 * half an ulp), many identical products, wide dynamic range, subnormals, near FLT_MAX and
 * overflow, exact ties (in the normal and the subnormal range), K up to 2^20 (2^29 + 3 outside
 * the sanitizer build, to cross the accumulator's carry-propagation period). */
#include <float.h>
#include <math.h>
#include <mpfr.h>
#include <stdlib.h>
#include <string.h>

#include "rounding/vt_exact.h"
#include "vt_test.h"

#define PREC 2400

static vt_rng R;
static long n_cases, n_ties, n_comp;

static int same32(float a, float b) { return memcmp(&a, &b, sizeof a) == 0 || (isnan(a) && isnan(b)); }
static int same64(double a, double b) { return memcmp(&a, &b, sizeof a) == 0 || (isnan(a) && isnan(b)); }

/* MPFR reference of sum_k a_k b_k (FP32 products are exact in FP64, hence in MPFR). */
static void ref_dot(mpfr_t s, size_t K, const float *a, const float *b)
{
    mpfr_set_zero(s, 1);
    for (size_t k = 0; k < K; k++) {
        double p = (double)a[k] * (double)b[k];
        int inex = mpfr_add_d(s, s, p, MPFR_RNDN);
        if (inex != 0 && isfinite(p)) vt_test_failed++, fprintf(stderr, "MPFR addition inexact\n");
    }
}

static int is_tie32(mpfr_t s)
{
    /* a tie: s is exactly the midpoint of two FP32 neighbours (checked exactly in MPFR) */
    if (!mpfr_number_p(s) || mpfr_zero_p(s)) return 0;
    float lo = mpfr_get_flt(s, MPFR_RNDD), hi = mpfr_get_flt(s, MPFR_RNDU);
    if (lo == hi || isinf(lo) || isinf(hi)) return 0;
    mpfr_t m;
    mpfr_init2(m, PREC);
    mpfr_set_flt(m, lo, MPFR_RNDN);
    mpfr_add_d(m, m, (double)hi, MPFR_RNDN);
    mpfr_div_2ui(m, m, 1, MPFR_RNDN);
    int tie = mpfr_equal_p(m, s);
    mpfr_clear(m);
    return tie;
}

static void check_dot(const char *what, size_t K, const float *a, const float *b)
{
    mpfr_t s;
    mpfr_init2(s, PREC);
    ref_dot(s, K, a, b);
    float want32 = mpfr_get_flt(s, MPFR_RNDN);
    double want64 = mpfr_get_d(s, MPFR_RNDN);
    if (mpfr_zero_p(s)) want32 = 0.0f, want64 = 0.0; /* an exact zero is +0 */
    float got32 = vt_dot_exact32(K, a, 1, b, 1);
    double got64 = vt_dot_exact64(K, a, 1, b, 1);
    CHECK(same32(got32, want32), "%s K=%zu: RN32 %a, MPFR %a", what, K, (double)got32, (double)want32);
    CHECK(same64(got64, want64), "%s K=%zu: RN64 %a, MPFR %a", what, K, got64, want64);
    /* the sign, exactly */
    vt_xacc acc;
    vt_xacc_init(&acc);
    for (size_t k = 0; k < K; k++) vt_xacc_add_prod32(&acc, a[k], b[k]);
    int sg = mpfr_nan_p(s) ? 0 : mpfr_sgn(s) > 0 ? 1 : mpfr_sgn(s) < 0 ? -1 : 0;
    CHECK(vt_xacc_sign(&acc) == sg, "%s K=%zu: sign %d, MPFR %d", what, K, vt_xacc_sign(&acc), sg);
    /* the compensated sum: |s - X| <= e, checked exactly (2400 bits hold X - s) */
    double *a64 = malloc((K ? K : 1) * sizeof(double)), *b64 = malloc((K ? K : 1) * sizeof(double));
    for (size_t k = 0; k < K; k++) a64[k] = (double)a[k], b64[k] = (double)b[k];
    double cs, ce;
    vt_dot_comp64(K, a64, b64, &cs, &ce);
    mpfr_t d;
    mpfr_init2(d, PREC);
    mpfr_sub_d(d, s, cs, MPFR_RNDN);
    mpfr_abs(d, d, MPFR_RNDN);
    CHECK(isfinite(cs) && mpfr_cmp_d(d, ce) <= 0, "%s K=%zu: compensated sum %a off by more than its bound %a", what, K,
          cs, ce);
    /* and the bound is tight: within a few ulps of |s| plus the cancelled part */
    double sabs = 0;
    for (size_t k = 0; k < K; k++) sabs += fabs(a64[k] * b64[k]);
    CHECK(ce <= 0x1p-52 * fabs(cs) + 0x1p-106 * sabs * (double)(K + 8) * (double)(K + 8) + 0x1p-1000 || sabs > 0x1p900,
          "%s K=%zu: compensated bound %a too loose (|s| %a, sum|ab| %a)", what, K, ce, cs, sabs);
    n_comp++;
    mpfr_clear(d);
    free(a64);
    free(b64);
    n_ties += is_tie32(s);
    n_cases++;
    mpfr_clear(s);
}

static float f32_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static float rnd_f32_wide(void)
{
    /* any finite FP32 value: random sign, exponent (subnormals included) and mantissa */
    for (;;) {
        float f = f32_bits((uint32_t)(vt_rng_next(&R) >> 32));
        if (isfinite(f)) return f;
    }
}

static void gen(int kind, size_t K, float *a, float *b)
{
    for (size_t k = 0; k < K; k++) {
        switch (kind) {
        case 0: /* cancellation to near zero: pairs x*y and -x*y, plus tiny perturbations */
            if (k % 2 == 0) {
                a[k] = (float)vt_rng_normal(&R);
                b[k] = (float)vt_rng_normal(&R);
            } else {
                a[k] = -a[k - 1];
                b[k] = b[k - 1] * ((vt_rng_next(&R) & 15) == 0 ? (1.0f + 0x1p-23f) : 1.0f);
            }
            break;
        case 1: /* stagnation: 1, a small term, then terms just under half an FP64 ulp of 1 */
            a[k] = k == 0 ? 1.0f : k == 1 ? 0x1p-30f : 0x1.fffffep-54f;
            b[k] = 1.0f;
            break;
        case 2: /* many identical products */
            a[k] = 0.1f;
            b[k] = 0.3f;
            break;
        case 3: /* wide dynamic range, subnormals included */
            a[k] = rnd_f32_wide();
            b[k] = (float)ldexp(vt_rng_uniform(&R) + 0.5, (int)(vt_rng_next(&R) % 120) - 60);
            break;
        case 4: /* subnormal products (FP32 subnormal inputs times small values) */
            a[k] = f32_bits((uint32_t)(vt_rng_next(&R) % 0x800000u) | (uint32_t)(vt_rng_next(&R) & 0x80000000u));
            b[k] = (float)ldexp(vt_rng_uniform(&R), -(int)(vt_rng_next(&R) % 30));
            break;
        case 5: /* near FLT_MAX: sums around the overflow threshold, some beyond */
            a[k] = FLT_MAX * (float)(0.25 + 0.25 * vt_rng_uniform(&R));
            b[k] = (k % 3 == 2) ? -1.0f : 1.0f;
            break;
        default: /* Gaussian */
            a[k] = (float)vt_rng_normal(&R);
            b[k] = (float)vt_rng_normal(&R);
            break;
        }
    }
}

static void test_adversarial(int asan)
{
    static const size_t Ks[] = {1, 2, 3, 7, 64, 1000, 4099, 65536, 1u << 20};
    static const char *const names[] = {"cancel", "stagnation", "identical", "wide", "subnormal", "near-max",
                                        "gaussian"};
    for (size_t t = 0; t < sizeof Ks / sizeof Ks[0]; t++) {
        size_t K = Ks[t];
        if (asan && K > 65536) continue;
        float *a = malloc(K * sizeof(float)), *b = malloc(K * sizeof(float));
        for (int kind = 0; kind < 7; kind++) {
            int reps = K <= 64 ? 50 : K <= 4099 ? 4 : 1;
            for (int r = 0; r < reps; r++) {
                gen(kind, K, a, b);
                check_dot(names[kind], K, a, b);
            }
        }
        free(a);
        free(b);
    }
}

/* Exact ties: the exact value is the midpoint of two FP32 neighbours, so RN32 must pick the
 * even one, in the normal and the subnormal range; also ties that FP64 rounding of the sum would
 * hide (1 + 2^-24 + 2^-80: just above the tie, so up). */
static void test_ties(void)
{
    struct {
        float a[4];
        int n;
        float want;
    } c[] = {
        {{1.0f, 0x1p-24f}, 2, 1.0f},                                   /* tie -> even (down) */
        {{1.0f + 0x1p-23f, 0x1p-24f}, 2, 1.0f + 0x1p-22f},             /* tie -> even (up) */
        {{-1.0f, -0x1p-24f}, 2, -1.0f},                                /* negative tie */
        {{1.0f, 0x1p-24f, 0x1p-80f}, 3, 1.0f + 0x1p-23f},              /* just above the tie */
        {{1.0f, 0x1p-24f, -0x1p-80f}, 3, 1.0f},                        /* just below the tie */
        {{0x1p-149f, 0x1p-149f, -0x1p-149f}, 3, 0x1p-149f},            /* subnormal, exact */
        {{0x1p-126f, -0x1p-149f}, 2, 0x1p-126f - 0x1p-149f},           /* largest subnormal */
        {{FLT_MAX, 0x1p103f}, 2, INFINITY},                            /* 2^128 - 2^103: tie -> overflow */
        {{FLT_MAX, 0x1p102f}, 2, FLT_MAX},                             /* below the tie */
        {{1.0f, -1.0f}, 2, 0.0f},                                      /* exact zero is +0 */
    };
    float one[4] = {1.0f, 1.0f, 1.0f, 1.0f};
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        float got = vt_dot_exact32((size_t)c[i].n, c[i].a, 1, one, 1);
        CHECK(same32(got, c[i].want), "tie case %zu: %a, want %a", i, (double)got, (double)c[i].want);
        check_dot("tie", (size_t)c[i].n, c[i].a, one);
    }
    /* subnormal ties via products: 2^-150 = 2^-75 * 2^-75 is half the smallest subnormal */
    float h[3] = {0x1p-75f, 0x1p-75f, 0x1p-75f}, g[3] = {0x1p-75f, 0x1p-75f, 0x1p-75f};
    CHECK(same32(vt_dot_exact32(1, h, 1, g, 1), 0.0f), "2^-150 ties to +0");
    CHECK(same32(vt_dot_exact32(3, h, 1, g, 1), 0x1p-148f), "3 * 2^-150 ties to 2^-148 (even)");
    float nh = -0x1p-75f;
    CHECK(same32(vt_dot_exact32(1, &nh, 1, g, 1), -0.0f), "-2^-150 ties to -0");
    check_dot("subnormal tie", 3, h, g);
}

/* FP64 terms over the whole range (vt_sum_exact*), against MPFR; the non-finite rules. */
static void test_sum64(void)
{
    enum { N = 300 };
    double x[N];
    mpfr_t s;
    mpfr_init2(s, PREC);
    for (int rep = 0; rep < 300; rep++) {
        size_t n = 1 + vt_rng_next(&R) % N;
        for (size_t k = 0; k < n; k++) {
            uint64_t u = vt_rng_next(&R);
            double v;
            memcpy(&v, &u, 8);
            if (!isfinite(v)) v = 0x1p1023 * (double)((int)(u % 5) - 2);
            if (rep % 3 == 1 && k % 2 == 1) v = -x[k - 1] * (1.0 + 0x1p-52); /* cancellation */
            x[k] = v;
        }
        mpfr_set_zero(s, 1);
        for (size_t k = 0; k < n; k++) mpfr_add_d(s, s, x[k], MPFR_RNDN);
        double want = mpfr_zero_p(s) ? 0.0 : mpfr_get_d(s, MPFR_RNDN);
        float want32 = mpfr_zero_p(s) ? 0.0f : mpfr_get_flt(s, MPFR_RNDN);
        CHECK(same64(vt_sum_exact64(n, x, 1), want), "sum64 rep %d: %a, MPFR %a", rep, vt_sum_exact64(n, x, 1),
              want);
        CHECK(same32(vt_sum_exact32(n, x, 1), want32), "sum64->32 rep %d: %a, MPFR %a", rep,
              (double)vt_sum_exact32(n, x, 1), (double)want32);
        /* order independence: reversed */
        double y[N];
        for (size_t k = 0; k < n; k++) y[k] = x[n - 1 - k];
        CHECK(same64(vt_sum_exact64(n, y, 1), want), "sum64 rep %d reversed", rep);
    }
    mpfr_clear(s);
    double sp[3] = {INFINITY, 1.0, -INFINITY};
    CHECK(isnan(vt_sum_exact64(3, sp, 1)), "inf + -inf = NaN");
    CHECK(vt_sum_exact64(2, sp, 1) == INFINITY, "inf + 1 = inf");
    CHECK(vt_sum_exact64(2, sp + 1, 1) == -INFINITY, "1 + -inf = -inf");
    double nn[2] = {NAN, 1.0};
    CHECK(isnan(vt_sum_exact64(2, nn, 1)) && isnan(vt_sum_exact32(2, nn, 1)), "NaN propagates");
    double dm[2] = {DBL_MAX, DBL_MAX};
    CHECK(vt_sum_exact64(2, dm, 1) == INFINITY, "DBL_MAX + DBL_MAX = inf");
    CHECK(same64(vt_sum_exact64(0, dm, 1), 0.0), "empty sum is +0");
    /* accumulators add exactly */
    vt_xacc p, q;
    vt_xacc_init(&p);
    vt_xacc_init(&q);
    vt_xacc_add(&p, 1.0);
    vt_xacc_add(&q, -1.0);
    vt_xacc_add(&q, 0x1p-1074);
    vt_xacc_add_acc(&p, &q);
    CHECK(same64(vt_xacc_round64(&p), 0x1p-1074), "accumulator sum: %a", vt_xacc_round64(&p));
}

/* More additions than the carry-propagation period (2^29): K identical products, reference K*p. */
static void test_long(void)
{
    const size_t K = (1u << 29) + 3;
    const float a = 0.1f, b = -3.0f;
    vt_xacc acc;
    vt_xacc_init(&acc);
    for (size_t k = 0; k < K; k++) vt_xacc_add_prod32(&acc, a, b);
    mpfr_t s;
    mpfr_init2(s, PREC);
    mpfr_set_d(s, (double)a * (double)b, MPFR_RNDN);
    mpfr_mul_ui(s, s, (unsigned long)K, MPFR_RNDN);
    CHECK(same64(vt_xacc_round64(&acc), mpfr_get_d(s, MPFR_RNDN)), "K = 2^29 + 3: %a vs %a", vt_xacc_round64(&acc),
          mpfr_get_d(s, MPFR_RNDN));
    CHECK(same32(vt_xacc_round32(&acc), mpfr_get_flt(s, MPFR_RNDN)), "K = 2^29 + 3 (RN32)");
    mpfr_clear(s);
}

int main(void)
{
    R.s = vt_test_seed(0xe7ac7);
    int asan = getenv("VT_ASAN") != NULL;
    test_ties();
    test_adversarial(asan);
    test_sum64();
    if (!asan) test_long();
    printf("exact: %ld dot products against MPFR (%ld exact FP32 ties among them); %ld compensated sums within their "
           "bound\n", n_cases, n_ties, n_comp);
    CHECK(n_ties > 0, "no exact tie was exercised");
    mpfr_free_cache();
    return vt_test_finish("test_exact");
}
