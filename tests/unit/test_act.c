/* test_act - the elementwise activations of client models (kernels/vt_act.c, ops/vt_fam_act.c: sigmoid,
 * sigmoid_backward, tanh, tanh_backward, leaky_relu, leaky_relu_backward, gelu_erf, gelu_erf_backward)
 * against MPFR (docs/rounding.md 2.7):
 *   - every element function equals RN32 of the real value bit for bit on random inputs of every
 *     exponent and on adversarial ones: zeros, subnormals, 2^-12 and its neighbours (tanh's shortcut),
 *     tiny x where sigmoid is a hair under a midpoint, the saturations (sigmoid near 17.3, 40, -88, -104;
 *     tanh near 9 and 20), huge values and infinities, and runs of consecutive FP32 values; sigmoid's and
 *     tanh's inputs that the first stage leaves undecided (found by sweeping) are counted and checked
 *     like the others; each stage's error against MPFR stays 16 times under the bound it claims;
 *   - GELU (erf form) and its backward formula dy (Phi(x) + x phi(x)) the same way: every exponent,
 *     runs across the series' and the continued fraction's junction (-3), the shortcuts (6, 6.5, -14.5,
 *     -20, 2^-60), every FP32 value near the derivative's root (-0.7518), subnormal x and dy whose halves
 *     are FP32 midpoints, overflowing dy g, infinities and NaN; the evaluation's error against MPFR
 *     16 times under its claimed bound;
 *   - every kind run through the interpreter in exact rounding and in log rounding (recorded, then
 *     replayed from its log) gives those bits; the backward kinds' formulas are exact sums, checked on
 *     random y (in [0, 1] and beyond), dy of every exponent;
 *   - the plain forms close to the real values; the checks refuse a bad alpha or wrong sizes;
 *   - the graph's canonical form carries the three layers and LeakyRelu's alpha, and decode refuses
 *     a bad alpha and attributes on sigmoid.
 * Without MPFR (a test-only dependency) it is skipped (77). */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arch/vt_graph.h"
#include "kernels/vt_act.h"
#include "ops/vt_ops.h"
#include "ops/vt_program.h"
#include "rounding/vt_round.h"
#include "vt_test.h"

#ifndef VT_HAVE_MPFR
int main(void)
{
    printf("test_act: MPFR not available, skipped\n");
    return 77;
}
#else
#include <mpfr.h>
#define VT_TEST_MPFR
#include "vt_test_ops.h"

#define PREC 320 /* the transcendental references (a value within 2^-250 of a boundary is reported) */
#define XPREC 600 /* the backward formulas and alpha x: exact at this precision */

static int same32(float a, float b) { return memcmp(&a, &b, 4) == 0; }

enum { SIG, TANH, SIG_BWD, TANH_BWD, LEAKY, LEAKY_BWD, GELU, GELU_BWD };
static const char *const FN[] = {"sigmoid",    "tanh",          "sigmoid_backward", "tanh_backward",
                                 "leaky_relu", "leaky_relu_backward", "gelu_erf", "gelu_erf_backward"};

/* the transcendental functions (their references rounded at PREC) */
static int transc(int f) { return f <= TANH || f >= GELU; }

/* Phi(x) = erfc(-x / sqrt 2) / 2 into v (no cancellation for negative x) */
static void mp_Phi(mpfr_t v, const mpfr_t x)
{
    mpfr_t r2;
    mpfr_init2(r2, mpfr_get_prec(v) + 64);
    mpfr_sqrt_ui(r2, 2, MPFR_RNDN);
    mpfr_div(v, x, r2, MPFR_RNDN);
    mpfr_neg(v, v, MPFR_RNDN);
    mpfr_erfc(v, v, MPFR_RNDN);
    mpfr_div_2ui(v, v, 1, MPFR_RNDN);
    mpfr_clear(r2);
}

/* the real value of function f at (x, d) into v (exact for the backward formulas and leaky ReLU) */
static void real_value(int f, float x, float d, double alpha, mpfr_t v)
{
    mpfr_t a, b;
    mpfr_inits2(XPREC, a, b, (mpfr_ptr)0);
    mpfr_set_flt(a, x, MPFR_RNDN);
    mpfr_set_flt(b, d, MPFR_RNDN);
    switch (f) {
    case SIG: /* 1 / (1 + exp(-x)) */
        mpfr_neg(a, a, MPFR_RNDN);
        mpfr_exp(a, a, MPFR_RNDN);
        mpfr_add_ui(a, a, 1, MPFR_RNDN);
        mpfr_ui_div(v, 1, a, MPFR_RNDN);
        break;
    case TANH:
        mpfr_tanh(v, a, MPFR_RNDN);
        break;
    case SIG_BWD: /* d x (1 - x) */
        mpfr_ui_sub(v, 1, a, MPFR_RNDN);
        mpfr_mul(v, v, a, MPFR_RNDN);
        mpfr_mul(v, v, b, MPFR_RNDN);
        break;
    case TANH_BWD: /* d (1 - x^2) */
        mpfr_sqr(v, a, MPFR_RNDN);
        mpfr_ui_sub(v, 1, v, MPFR_RNDN);
        mpfr_mul(v, v, b, MPFR_RNDN);
        break;
    case LEAKY:
        if (x >= 0.0f) mpfr_set(v, a, MPFR_RNDN);
        else mpfr_mul_d(v, a, alpha, MPFR_RNDN);
        break;
    case LEAKY_BWD:
        if (x > 0.0f) mpfr_set(v, b, MPFR_RNDN);
        else mpfr_mul_d(v, b, alpha, MPFR_RNDN);
        break;
    case GELU: /* x Phi(x) */
        mp_Phi(v, a);
        mpfr_mul(v, v, a, MPFR_RNDN);
        break;
    default: { /* GELU_BWD: d (Phi(x) + x exp(-x^2/2) / sqrt(2 pi)) */
        mpfr_t p, q;
        mpfr_inits2(XPREC, p, q, (mpfr_ptr)0);
        mp_Phi(p, a);
        mpfr_sqr(q, a, MPFR_RNDN);
        mpfr_div_2ui(q, q, 1, MPFR_RNDN);
        mpfr_neg(q, q, MPFR_RNDN);
        mpfr_exp(q, q, MPFR_RNDN);
        mpfr_mul(q, q, a, MPFR_RNDN);
        mpfr_const_pi(v, MPFR_RNDN);
        mpfr_mul_2ui(v, v, 1, MPFR_RNDN);
        mpfr_sqrt(v, v, MPFR_RNDN);
        mpfr_div(q, q, v, MPFR_RNDN);
        mpfr_add(p, p, q, MPFR_RNDN);
        mpfr_mul(v, p, b, MPFR_RNDN);
        mpfr_clears(p, q, (mpfr_ptr)0);
        break;
    }
    }
    mpfr_clears(a, b, (mpfr_ptr)0);
}

/* within 2^-250 of its size from an FP32 rounding boundary (the transcendental references only) */
static int near_boundary(mpfr_t v) { return vt_test_near_boundary(v, 250, XPREC); }

static float fn(int f, float x, float d, double alpha, int *hard)
{
    switch (f) {
    case SIG:
        return vt_sigmoid32(x, hard);
    case TANH:
        return vt_tanh32(x, hard);
    case SIG_BWD:
        return vt_sigmoid_bwd32(x, d);
    case TANH_BWD:
        return vt_tanh_bwd32(x, d);
    case LEAKY:
        return vt_leaky_relu32(x, alpha);
    case LEAKY_BWD:
        return vt_leaky_relu_bwd32(x, d, alpha);
    case GELU:
        return vt_gelu_erf32(x, hard);
    default:
        return vt_gelu_erf_bwd32(x, d, hard);
    }
}

static size_t g_checked[8], g_stage2[2], g_near;
static double g_err1[2], g_err2[2]; /* the stages' largest relative errors seen, over their bounds */
static double g_gerr[2];            /* GELU's evaluation and its derivative's: the largest over the bound */
static float g_gerr_x[2];
static double g_gerr1[2]; /* their FP64 first stage's */
static size_t g_gstage2[2];

/* |approx - v| / |v| into the running maximum (relative to the bound) */
static void stage_err(double hi, double lo, mpfr_t v, double bound, double *worst)
{
    mpfr_t a;
    mpfr_init2(a, XPREC);
    mpfr_set_d(a, hi, MPFR_RNDN);
    mpfr_add_d(a, a, lo, MPFR_RNDN);
    mpfr_sub(a, a, v, MPFR_RNDN);
    mpfr_div(a, a, v, MPFR_RNDN);
    double r = fabs(mpfr_get_d(a, MPFR_RNDU)) / bound;
    if (r > *worst) *worst = r;
    mpfr_clear(a);
}

/* one input of f: the function against RN32 of the real value; for sigmoid and tanh the stages' errors */
static void check1(int f, float x, float d, double alpha)
{
    mpfr_t v;
    mpfr_init2(v, transc(f) ? PREC : XPREC);
    real_value(f, x, d, alpha, v);
    float want = mpfr_get_flt(v, MPFR_RNDN);
    if (f == GELU_BWD && !isnan(d) && x == INFINITY) want = d; /* the limits, where MPFR gives inf 0 */
    if (f == GELU && x == -INFINITY) want = -0.0f;
    if (f == GELU_BWD && !isnan(d) && x <= -20.0f) /* MPFR's phi(x) underflows to 0 */
        want = isinf(d) ? (x == -INFINITY ? NAN : -d) : copysignf(0.0f, -d);
    int hard = 0;
    const float got = fn(f, x, d, alpha, &hard);
    CHECK(!hard, "%s(%a, %a): neither stage decides", FN[f], (double)x, (double)d);
    if (transc(f) && !mpfr_zero_p(v) && !(f == GELU_BWD && x == 0.0f) && near_boundary(v)) { /* x 0: dy/2 */
        g_near++; /* the reference itself undecided: reported, never seen */
        CHECK(0, "%s(%a): the real value is within 2^-250 of a rounding boundary", FN[f], (double)x);
    } else if (isnan(x) || (f >= SIG_BWD && f != GELU && isnan(d)) || (f == GELU_BWD && isinf(d) && x == -INFINITY)) {
        CHECK(isnan(got), "%s(%a, %a): %a, expected NaN", FN[f], (double)x, (double)d, (double)got);
    } else {
        CHECK(same32(got, want), "%s(%a, %a): %a, RN32 of the real value %a", FN[f], (double)x, (double)d, (double)got,
              (double)want);
    }
    g_checked[f]++;
    if (f >= GELU && isfinite(x) && fabsf(x) >= 0x1p-60f && x > -20.0f && x < 6.5f) { /* the evaluation */
        mpfr_t gv;
        mpfr_init2(gv, PREC);
        real_value(f, x, 1.0f, 0, gv);
        double hi, lo, rel = 0, ab = 0;
        if (f == GELU) vt_gelu_erf_eval(x, &hi, &lo, &rel);
        else vt_gelu_erf_grad_eval(x, &hi, &lo, &ab, &rel);
        mpfr_t e;
        mpfr_init2(e, XPREC);
        mpfr_set_d(e, hi, MPFR_RNDN);
        mpfr_add_d(e, e, lo, MPFR_RNDN);
        mpfr_sub(e, e, gv, MPFR_RNDN);
        const double err = fabs(mpfr_get_d(e, MPFR_RNDU)), mag = fabs(mpfr_get_d(gv, MPFR_RNDN));
        const double r = err / (ab + rel * mag);
        if (r > g_gerr[f - GELU]) g_gerr[f - GELU] = r, g_gerr_x[f - GELU] = x;
        if (x >= -3.0f) { /* the first stage: relative (gelu) or absolute (g) */
            const double y1 = f == GELU ? vt_gelu_erf_stage1(x) : vt_gelu_erf_grad_stage1(x);
            mpfr_set_d(e, y1, MPFR_RNDN);
            mpfr_sub(e, e, gv, MPFR_RNDN);
            const double e1 = fabs(mpfr_get_d(e, MPFR_RNDU));
            const double r1 = f == GELU ? e1 / (mag * VT_ACT_BOUND1_GELU) : e1 / VT_ACT_BOUND1_GELU_GRAD;
            if (r1 > g_gerr1[f - GELU]) g_gerr1[f - GELU] = r1;
            float o;
            const double d1 = f == GELU ? fabs(y1) * VT_ACT_BOUND1_GELU : VT_ACT_BOUND1_GELU_GRAD;
            if (!vt_act_decide(fabs(y1), 0.0, d1, &o)) g_gstage2[f - GELU]++;
        }
        mpfr_clears(gv, e, (mpfr_ptr)0);
    }
    if (f <= TANH && isfinite(x)) { /* the stages where they apply */
        const float ax = fabsf(x);
        const int s = f == SIG;
        if (s ? (x > -104.0f && x < 40.0f) : (ax > 0x1p-12f && ax < 20.0f)) {
            mpfr_t av;
            mpfr_init2(av, PREC);
            real_value(f, s ? x : ax, 0, 0, av);
            const double y1 = s ? vt_sigmoid_stage1(x) : vt_tanh_stage1(ax);
            const double b1 = s ? VT_ACT_BOUND1_SIGMOID : VT_ACT_BOUND1_TANH;
            stage_err(y1, 0.0, av, b1, &g_err1[f]);
            float o;
            if (!vt_act_decide(y1, 0.0, y1 * b1, &o)) g_stage2[f]++;
            double hi, lo;
            if (s) vt_sigmoid_stage2(x, &hi, &lo);
            else vt_tanh_stage2(ax, &hi, &lo);
            stage_err(hi, lo, av, VT_ACT_BOUND2, &g_err2[f]);
            mpfr_clear(av);
        }
    }
    mpfr_clear(v);
}

/* n consecutive FP32 values from x upwards (toward +inf) */
static void run_of(int f, float x, int n)
{
    for (int i = 0; i < n; i++, x = nextafterf(x, INFINITY)) check1(f, x, 1.0f, 0.0);
}

/* the first stage's undecided inputs among n consecutive FP32 values from x, each checked */
static size_t sweep_undecided(int f, float x, uint32_t n)
{
    size_t found = 0;
    for (uint32_t i = 0; i < n; i++, x = nextafterf(x, INFINITY)) {
        const double y = f == SIG ? vt_sigmoid_stage1(x) : vt_tanh_stage1(x);
        float o;
        if (!vt_act_decide(y, 0.0, y * (f == SIG ? VT_ACT_BOUND1_SIGMOID : VT_ACT_BOUND1_TANH), &o)) {
            check1(f, x, 1.0f, 0.0);
            found++;
        }
    }
    return found;
}

/* GELU (erf form) and its backward formula */
static void check_gelu(vt_rng *r)
{
    static const float SPECIAL[] = {0.0f,      -0.0f,     0x1p-149f, -0x1p-149f, 0x3p-149f,  -0x3p-149f, 0x1p-126f,
                                    -0x1p-126f, 0x1p-60f, -0x1p-60f, 0x1.fffffep-61f, -0x1.fffffep-61f, 0x1p-30f,
                                    1.0f,      -1.0f,     0.5f,      -0.75f,     -0.7518f,   1.4142135f, -1.4142135f,
                                    -3.0f,     -2.9999998f, -3.0000002f, 5.99f,  6.0f,       6.49f,      6.5f,
                                    -14.49f,   -14.5f,    -19.99f,   -20.0f,     -25.0f,     100.0f,     -100.0f,
                                    FLT_MAX,   -FLT_MAX,  INFINITY,  -INFINITY,  NAN};
    static const float DY[] = {1.0f, -1.0f, 0.0f, -0.0f, 0x1p-149f, -0x3p-149f, 0x1.000002p-126f, FLT_MAX, -FLT_MAX,
                               INFINITY, -INFINITY, NAN, 0.37f};
    const size_t NS = sizeof SPECIAL / sizeof SPECIAL[0], ND = sizeof DY / sizeof DY[0];
    for (size_t i = 0; i < NS; i++) {
        check1(GELU, SPECIAL[i], 1.0f, 0.0);
        for (size_t j = 0; j < ND; j++) check1(GELU_BWD, SPECIAL[i], DY[j], 0.0);
    }
    for (int i = 0; i < 6000; i++) {
        const float x = i % 3 ? vt_test_rand_float(r, -30, 4) : vt_test_rand_float(r, -149, 127);
        const float dy = i % 4 ? vt_test_rand_float(r, -40, 40) : vt_test_rand_float(r, -149, 127);
        check1(GELU, x, 1.0f, 0.0);
        check1(GELU_BWD, x, dy, 0.0);
    }
    /* runs: the junction at -3, the shortcuts, the tiny values' midpoints, the derivative's root */
    static const float FROM[] = {-3.0001f, 5.999f, 6.499f, -14.501f, -19.99f, 0x1.fffff0p-61f, -0x1.00001p-60f,
                                 0x1p-149f, -0x1p-140f, 1.0f};
    for (size_t k = 0; k < sizeof FROM / sizeof FROM[0]; k++) {
        float x = FROM[k];
        for (int i = 0; i < 400; i++, x = nextafterf(x, INFINITY)) {
            check1(GELU, x, 1.0f, 0.0);
            check1(GELU_BWD, x, i % 2 ? 1.0f : (float)(0x3p-149 * (1 + i % 5)), 0.0);
        }
    }
    /* every FP32 value within 2^-12 of the derivative's root near -0.7518, with dy = 1 and a subnormal dy */
    size_t n_root = 0;
    double gmin = 1.0;
    for (float x = -0.7518f - 0x1p-12f; x < -0.7518f + 0x1p-12f; x = nextafterf(x, INFINITY), n_root++) {
        int hard = 0;
        double ghi, glo, ea, er;
        vt_gelu_erf_grad_eval(x, &ghi, &glo, &ea, &er);
        if (fabs(ghi) < gmin) gmin = fabs(ghi);
        (void)vt_gelu_erf_bwd32(x, 1.0f, &hard);
        CHECK(!hard, "gelu_erf_backward(%a, 1): undecided", (double)x);
        if (n_root % 64 == 0) check1(GELU_BWD, x, n_root % 128 ? 1.0f : 0x1.8p-140f, 0.0);
    }
    printf("test_act: gelu_erf_backward decided at the %zu FP32 values about its root (the smallest |g| %a)\n", n_root,
           gmin);
    CHECK(gmin > 0x1p-60, "g's smallest magnitude at an FP32 value %a", gmin);
}

static void check_functions(vt_rng *r)
{
    static const float SPECIAL[] = {0.0f,     -0.0f,    0x1p-149f, -0x1p-149f, 0x1p-126f, -0x1p-126f, 0x1p-23f,
                                    0x1p-24f, -0x1p-23f, 0x1p-12f, -0x1p-12f,  0x1p-11f,  1.0f,      -1.0f,
                                    0.5f,     2.0f,     9.0f,      9.01f,      17.328f,   17.33f,    -17.33f,
                                    39.99f,   40.0f,    -87.3f,    -88.73f,    -103.97f,  -103.98f,  -104.0f,
                                    19.99f,   20.0f,    1e30f,     -1e30f,     FLT_MAX,   -FLT_MAX,  INFINITY,
                                    -INFINITY, NAN};
    const size_t NS = sizeof SPECIAL / sizeof SPECIAL[0];
    for (int f = SIG; f <= TANH; f++) {
        for (size_t i = 0; i < NS; i++) check1(f, SPECIAL[i], 1.0f, 0.0);
        for (int i = 0; i < 20000; i++) check1(f, vt_test_rand_float(r, -30, 8), 1.0f, 0.0); /* every working range */
        for (int i = 0; i < 4000; i++) check1(f, vt_test_rand_float(r, -149, 127), 1.0f, 0.0);
        /* runs: around tanh's shortcut, sigmoid's tiny-x midpoints, the saturations */
        run_of(f, nextafterf(0x1p-12f, 0.0f) - 64 * 0x1p-36f, 256);
        run_of(f, 0x1p-23f, 64);
        run_of(f, -0x1p-23f, 64);
        run_of(f, 0.5f, 2000);
        run_of(f, f == SIG ? 17.3f : 8.9f, 3000);
        run_of(f, f == SIG ? -104.01f : 19.99f, 2000);
        run_of(f, f == SIG ? -87.35f : -9.01f, 2000);
    }
    /* the first stage's undecided inputs: sweeps of consecutive values where the bound is widest */
    size_t u = sweep_undecided(SIG, 0.25f, 1u << 22) + sweep_undecided(SIG, -3.0f, 1u << 21);
    u += sweep_undecided(TANH, 0x1p-12f, 1u << 21) + sweep_undecided(TANH, 0.01f, 1u << 21);
    printf("test_act: %zu inputs the first stage leaves to the second found by the sweeps\n", u);
    CHECK(u > 0, "the sweeps find no input for the second stage");
    /* the backward formulas and leaky ReLU: exact references */
    for (int i = 0; i < 40000; i++) {
        const float y01 = (float)vt_rng_uniform(r), t = (float)vt_rng_uniform(r) * 2.0f - 1.0f;
        const float y = i % 5 == 0   ? vt_test_rand_float(r, -149, 20)
                        : i % 5 == 1 ? 1.0f - ldexpf(1.0f, -(i % 25))
                                     : y01;
        const float dy = vt_test_rand_float(r, -140, 40);
        check1(SIG_BWD, y, dy, 0);
        check1(TANH_BWD, i % 2 ? t : y, dy, 0);
        const double alphas[] = {0.01, 0.2, (double)0.2f, -1.5, 0.0, 0x1p-64, 3.0};
        const double a = alphas[i % 7];
        const float x = vt_test_rand_float(r, -149, 100);
        check1(LEAKY, x, dy, a);
        check1(LEAKY_BWD, x, dy, a);
        check1(LEAKY_BWD, 0.0f, dy, a);
        check1(LEAKY_BWD, -0.0f, dy, a);
    }
    check_gelu(r);
    printf("test_act: checked %zu %zu %zu %zu %zu %zu %zu %zu; the second stage %zu (sigmoid) %zu (tanh) times; the largest "
           "errors over their bounds: stage 1 %.3g %.3g, stage 2 %.3g %.3g\n",
           g_checked[0], g_checked[1], g_checked[2], g_checked[3], g_checked[4], g_checked[5], g_checked[6],
           g_checked[7], g_stage2[0], g_stage2[1], g_err1[0], g_err1[1], g_err2[0], g_err2[1]);
    printf("test_act: GELU (erf form): the largest errors over their bounds %.3g (gelu, x %a) %.3g (its derivative, "
           "x %a); the FP64 stage's %.3g %.3g, undecided by it %zu %zu times (dy 1)\n",
           g_gerr[0], (double)g_gerr_x[0], g_gerr[1], (double)g_gerr_x[1], g_gerr1[0], g_gerr1[1], g_gstage2[0],
           g_gstage2[1]);
    CHECK(g_gerr[0] < 1.0 / 16 && g_gerr[1] < 1.0 / 16, "GELU's evaluation is not 16 times under its bound");
    CHECK(g_gerr1[0] < 1.0 / 16 && g_gerr1[1] < 1.0 / 16, "GELU's FP64 stage is not 16 times under its bound");
    CHECK(g_err1[0] < 1.0 / 16 && g_err1[1] < 1.0 / 16 && g_err2[0] < 1.0 / 16 && g_err2[1] < 1.0 / 16,
          "a stage's error is not 16 times under its bound");
    CHECK(g_near == 0, "%zu references undecided", g_near);
}

/* ------------------------------------------------------------ the kinds */

static const uint16_t KINDS[] = {VT_OPK_SIGMOID,    VT_OPK_TANH,           VT_OPK_SIGMOID_BWD,
                                 VT_OPK_TANH_BWD,   VT_OPK_LEAKY_RELU,     VT_OPK_LEAKY_RELU_BWD,
                                 VT_OPK_GELU_ERF,   VT_OPK_GELU_ERF_BWD};

/* a program of one operation of kind k over x [B, K] (INPUT) (and d, ACT) -> out (GRAD) */
static vt_err build1(vt_program *p, uint16_t kind, uint32_t B, uint32_t K, double alpha, uint32_t outn)
{
    vt_program_init(p);
    const uint32_t shape[2] = {B, K}, oshape[1] = {outn};
    const uint32_t in[2] = {vt_prog_tensor(p, VT_TC_INPUT, VT_DT_F32, 2, shape, "x"),
                            vt_prog_tensor(p, VT_TC_ACT, VT_DT_F32, 2, shape, "d")};
    const uint32_t out = vt_prog_tensor(p, VT_TC_GRAD, VT_DT_F32, 1, oshape, "out");
    const vt_opkind *k = vt_opkind_get(kind);
    vt_prog_op(p, kind, in, k->n_in, &out, 1, NULL, 0, &alpha, k->n_farg, "the activation");
    if (p->bad) return VT_ERR_NOMEM;
    return vt_op_check(p, &p->op[1]);
}

/* exact rounding (mode 0), or log rounding recorded then replayed from the log (mode 1) */
static vt_err run1(vt_program *p, const float *x, const float *d, size_t n, int mode, float *out)
{
    uint8_t *arena[VT_TC_COUNT] = {0};
    arena[VT_TC_INPUT] = (uint8_t *)(uintptr_t)x, arena[VT_TC_ACT] = (uint8_t *)(uintptr_t)d;
    return vt_test_run_op(p, arena, NULL, mode, out, n);
}

/* the plain form in FP64 */
static vt_err plain1(vt_program *p, const float *x, const float *d, size_t n, double *outd)
{
    double *a = malloc(n * 8), *b = malloc(n * 8), *o = malloc(n * 8);
    vt_err e = a && b && o ? VT_OK : VT_ERR_NOMEM;
    for (size_t i = 0; i < n && !e; i++) a[i] = x[i], b[i] = d[i];
    uint8_t *arena[VT_TC_COUNT] = {0};
    arena[VT_TC_INPUT] = (uint8_t *)a, arena[VT_TC_ACT] = (uint8_t *)b, arena[VT_TC_GRAD] = (uint8_t *)o;
    const size_t off[3] = {0, 0, 0};
    vt_plainctx pc = {p, arena, off, 1, &p->op[1], 1, NULL, NULL, NULL};
    if (!e) e = vt_opkind_get(p->op[1].kind)->plain(&pc);
    for (size_t i = 0; i < n && !e; i++) outd[i] = o[i];
    free(a), free(b), free(o);
    return e;
}

static void check_kinds(vt_rng *r)
{
    const uint32_t B = 16, K = 37;
    const size_t n = (size_t)B * K;
    float *x = malloc(n * 4), *d = malloc(n * 4), *out = malloc(n * 4), *want = malloc(n * 4);
    double *pl = malloc(n * 8);
    if (!x || !d || !out || !want || !pl) {
        CHECK(0, "memory");
        goto done;
    }
    for (size_t k = 0; k < sizeof KINDS / sizeof KINDS[0]; k++) {
        const uint16_t kind = KINDS[k];
        const int f = (int)k;
        const double alpha = 0.2;
        for (size_t i = 0; i < n; i++) {
            x[i] = i % 7 == 0 ? vt_test_rand_float(r, -149, 6) : (float)(vt_rng_normal(r) * 4.0);
            if (f == SIG_BWD) x[i] = vt_sigmoid32(x[i], NULL);
            if (f == TANH_BWD) x[i] = vt_tanh32(x[i], NULL);
            d[i] = vt_test_rand_float(r, -60, 4);
        }
        x[0] = 0.0f, x[1] = 40.0f, x[2] = -200.0f, x[3] = 0x1p-23f;
        for (size_t i = 0; i < n; i++) {
            mpfr_t v;
            mpfr_init2(v, XPREC);
            real_value(f, x[i], d[i], alpha, v);
            want[i] = mpfr_get_flt(v, MPFR_RNDN);
            mpfr_clear(v);
        }
        vt_program p;
        vt_err e = build1(&p, kind, B, K, alpha, (uint32_t)n);
        CHECK(e == VT_OK, "%s: %s", FN[f], vt_errmsg());
        for (int mode = 0; mode < 2 && !e; mode++) {
            vt_err re = run1(&p, x, d, n, mode, out);
            CHECK(re == VT_OK, "%s mode %d: %s", FN[f], mode, vt_errmsg());
            size_t bad = 0;
            for (size_t i = 0; i < n && !re; i++)
                if (!same32(out[i], want[i]) && bad++ < 3)
                    CHECK(0, "%s mode %d element %zu: %a, RN32 of the real value %a", FN[f], mode, i, (double)out[i],
                          (double)want[i]);
            CHECK(bad == 0, "%s mode %d: %zu elements differ", FN[f], mode, bad);
        }
        if (!e) {
            CHECK_OK(plain1(&p, x, d, n, pl));
            for (size_t i = 0; i < n; i++)
                if (fabs(pl[i] - (double)want[i]) > 1e-6 * fabs((double)want[i]) + (f >= GELU ? 1e-14 : 1e-44)) {
                    CHECK(0, "%s plain FP64 element %zu (x %a): %g, exact %g", FN[f], i, (double)x[i], pl[i],
                          (double)want[i]);
                    break;
                }
        }
        vt_program_free(&p);
        /* refusals: a wrong output size; leaky ReLU's bad alphas */
        e = build1(&p, kind, B, K, alpha, (uint32_t)n - 1);
        CHECK(e != VT_OK, "%s: an output of the wrong size accepted", FN[f]);
        vt_program_free(&p);
        if (kind == VT_OPK_LEAKY_RELU || kind == VT_OPK_LEAKY_RELU_BWD) {
            const double bad[] = {NAN, INFINITY, 1e300, 1e-300};
            for (size_t i = 0; i < 4; i++) {
                e = build1(&p, kind, B, K, bad[i], (uint32_t)n);
                CHECK(e != VT_OK, "%s: alpha %g accepted", FN[f], bad[i]);
                vt_program_free(&p);
            }
        }
    }
done:
    free(x), free(d), free(out), free(want), free(pl);
}

/* ------------------------------------------------------------ the graph's canonical form */

static void check_graph(void)
{
    vt_graph g;
    vt_graph_init(&g);
    int bad = 0;
    const double alpha = (double)0.2f;
    uint64_t bits;
    memcpy(&bits, &alpha, 8);
    uint32_t W = vt_graph_param(&g, "w", 2, (const uint32_t[]){4, 3}, VT_INIT_HE_UNIFORM, 4, &bad);
    uint32_t v = 0;
    v = vt_graph_layer(&g, VT_GL_LINEAR, "fc", 1, &v, 1, &W, (const int64_t[VT_GLAYER_ATTRS]){0}, 3, &bad);
    v = vt_graph_layer(&g, VT_GL_TANH, "t", 1, &v, 0, NULL, NULL, 3, &bad);
    v = vt_graph_layer(&g, VT_GL_LEAKY_RELU, "l", 1, &v, 0, NULL, (const int64_t[VT_GLAYER_ATTRS]){(int64_t)bits}, 3, &bad);
    v = vt_graph_layer(&g, VT_GL_SIGMOID, "s", 1, &v, 0, NULL, NULL, 3, &bad);
    g.in_cols = 4, g.out = v, g.loss = VT_GLOSS_XENT;
    CHECK(!bad, "the graph");
    vt_buf b;
    CHECK_OK(vt_graph_encode(&g, &b));
    vt_graph h;
    CHECK_OK(vt_graph_decode(b.data, b.len, &h));
    CHECK(h.n_layer == 4 && h.layer[1].op == VT_GL_TANH && h.layer[2].op == VT_GL_LEAKY_RELU &&
              h.layer[2].attr[0] == (int64_t)bits && h.layer[3].op == VT_GL_SIGMOID,
          "the decoded graph differs");
    vt_graph_free(&h);
    /* the leaky layer's alpha bits (its 8 attribute bytes come 4 + 8 * 3 + 4 bytes before its end: the
     * width and attributes 1..3) replaced by a NaN's, then a sigmoid with an attribute */
    size_t at = 0;
    for (size_t i = 0; i + 1 < b.len; i++)
        if (b.data[i] == VT_GL_LEAKY_RELU && b.data[i + 1] == 1 && b.data[i + 3] == 'l') at = i;
    CHECK(at > 0, "the leaky layer in the canonical form");
    if (at > 0) {
        const size_t a0 = at + 1 + 2 + 1 + 1 + 4 + 1; /* op, name length, name, n_in, input, n_param */
        uint8_t keep[8];
        memcpy(keep, b.data + a0, 8);
        const uint64_t nan_bits = 0x7ff8000000000000ull;
        for (int i = 0; i < 8; i++) b.data[a0 + i] = (uint8_t)(nan_bits >> (8 * i));
        CHECK(vt_graph_decode(b.data, b.len, &h) == VT_ERR_FORMAT, "a NaN alpha decoded");
        memcpy(b.data + a0, keep, 8);
        CHECK_OK(vt_graph_decode(b.data, b.len, &h));
        vt_graph_free(&h);
        b.data[at] = VT_GL_SIGMOID; /* a sigmoid carrying alpha's bits */
        CHECK(vt_graph_decode(b.data, b.len, &h) == VT_ERR_FORMAT, "a sigmoid with an attribute decoded");
    }
    vt_buf_free(&b);
    vt_graph_free(&g);
}

int main(void)
{
    vt_rng r = {vt_test_seed(20261207)};
    check_functions(&r);
    check_kinds(&r);
    check_graph();
    mpfr_free_cache();
    return vt_test_finish("test_act");
}
#endif
