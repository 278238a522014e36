/* test_cert.c - the certificate's bounds (cert/vt_cert.h) against exact evaluation (MPFR):
 * thousands of random and PGD-attacked inputs of random networks never leave the IBP, CROWN and
 * alpha-CROWN bounds, for the real-arithmetic network and for the deployed one (every rounded
 * operation RN32 of its exact value); a network built so that plain FP64 bound propagation claims a
 * false 'verified' (huge cancelling weights) is not verified here, and the attack with an exact
 * confirmation falsifies it; the outward rounding and the ball test. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../cert/vt_cert.h"
#include "../../cert/vt_vnnlib.h"
#include "cert_nets.h"
#include "vt_test.h"

#ifdef VT_HAVE_MPFR
#define PREC CERT_PREC

/* the margins at x against lb[m][j] of every method m; counts the points checked */
static long g_points, g_bad;
static void check_point(const vt_cert_net *n, const float *x, uint32_t label, double lb[3][16])
{
    mpfr_t m[16];
    uint32_t C = n->n[n->L];
    for (uint32_t j = 0; j < C; j++) mpfr_init2(m[j], PREC);
    for (int dep = 0; dep < 2; dep++) {
        (void)cert_exact_margins(n, x, label, dep, m);
        for (int meth = 0; meth < 3; meth++)
            for (uint32_t j = 0; j < C; j++)
                if (j != label && mpfr_cmp_d(m[j], lb[meth][j]) < 0) {
                    if (g_bad++ < 5)
                        fprintf(stderr, "FAIL: method %d margin %u: exact %.17g < bound %.17g (deployed %d)\n", meth,
                                j, mpfr_get_d(m[j], MPFR_RNDN), lb[meth][j], dep);
                }
    }
    for (uint32_t j = 0; j < C; j++) mpfr_clear(m[j]);
    g_points++;
}

/* a random network and its context (NULL on failure, counted) */
static vt_cert_ctx *random_ctx(vt_rng *r, vt_cert_net *n, float **store, uint32_t L, const uint32_t *w)
{
    cert_random_net(r, n, store, L, w, 2.0, 0);
    vt_cert_ctx *c = NULL;
    CHECK_OK(vt_cert_ctx_new(n, &c));
    return c;
}

static void test_sampled(void)
{
    vt_rng r = {vt_test_seed(20240601)};
    const uint32_t shapes[3][5] = {{6, 12, 4, 0, 0}, {5, 10, 10, 3, 0}, {4, 8, 8, 8, 5}};
    const uint32_t layers[3] = {2, 3, 4};
    for (int s = 0; s < 3; s++) {
        vt_cert_net n;
        float *store[12] = {0};
        vt_cert_ctx *c = random_ctx(&r, &n, store, layers[s], shapes[s]);
        if (!c) return;
        uint32_t d = n.n[0], C = n.n[n.L];
        for (int box = 0; box < 12; box++) {
            float x[8], p[8];
            double xl[8], xu[8], lb[3][16], eps = box % 3 == 0 ? 0.3 : box % 3 == 1 ? 0.05 : 0.01;
            for (uint32_t i = 0; i < d; i++) x[i] = (float)cert_uni(&r);
            uint32_t label = (uint32_t)(vt_rng_next(&r) % C);
            vt_cert_box(x, d, eps, xl, xu);
            for (int m = 0; m < 3; m++) {
                vt_cert_settings set;
                vt_cert_settings_default(&set, (vt_cert_method)m);
                CHECK_OK(vt_cert_bounds(c, xl, xu, label, &set, lb[m], NULL));
            }
            for (uint32_t j = 0; j < C; j++) /* alpha-CROWN keeps CROWN's start: never worse */
                CHECK(lb[2][j] >= lb[1][j], "alpha-CROWN %g below CROWN %g", lb[2][j], lb[1][j]);
            /* random points, the corners among them */
            for (int t = 0; t < 150; t++) {
                for (uint32_t i = 0; i < d; i++) {
                    double v = t < 20 ? ((vt_rng_next(&r) & 1) ? xu[i] : xl[i]) : xl[i] + cert_uni(&r) * (xu[i] - xl[i]);
                    p[i] = (float)v;
                    if (!vt_cert_in_ball(p[i], x[i], eps)) p[i] = x[i];
                }
                check_point(&n, p, label, lb);
            }
            /* PGD on each margin (sign of a central-difference gradient of the FP64 network) */
            for (uint32_t j = 0; j < C; j++) {
                if (j == label) continue;
                memcpy(p, x, d * sizeof *p);
                for (int it = 0; it < 25; it++) {
                    double g[8], xd[8], lg[16];
                    for (uint32_t i = 0; i < d; i++) xd[i] = p[i];
                    for (uint32_t i = 0; i < d; i++) {
                        double h = 1e-4, v0 = xd[i], m1, m2;
                        xd[i] = v0 + h;
                        vt_cert_forward64(c, xd, lg);
                        m1 = lg[label] - lg[j];
                        xd[i] = v0 - h;
                        vt_cert_forward64(c, xd, lg);
                        m2 = lg[label] - lg[j];
                        xd[i] = v0;
                        g[i] = m1 - m2;
                    }
                    for (uint32_t i = 0; i < d; i++) {
                        float q = (float)(p[i] - (g[i] > 0 ? 1 : g[i] < 0 ? -1 : 0) * eps / 8);
                        p[i] = vt_cert_in_ball(q, x[i], eps) ? q : p[i];
                    }
                    check_point(&n, p, label, lb);
                }
            }
        }
        vt_cert_ctx_free(c);
        for (int k = 0; k < 12; k++) free(store[k]);
    }
    CHECK(g_bad == 0, "%ld of %ld points outside a bound", g_bad, g_points);
    CHECK(g_points > 5000, "only %ld points", g_points);
    printf("sampled: %ld points (x2 semantics, x3 methods), none outside a bound\n", g_points);
}

/* The spec-matrix path (vt_cert_spec_bounds, VNN-LIB properties): random rows C_r with integer
 * coefficients summing to zero (so that C_r . y = -sum_j c_j (y_0 - y_j), the exact margins against
 * class 0), random boxes, corners and uniform points: the exact C_r . y of both semantics is never
 * below any method's bound; alpha-CROWN never below CROWN; a margin row gives the margin path's
 * CROWN bound or better. */
static void test_spec_sampled(void)
{
    vt_rng r = {vt_test_seed(20261202)};
    const uint32_t shapes[3][5] = {{5, 9, 3, 0, 0}, {4, 8, 8, 4, 0}, {6, 7, 7, 7, 5}};
    const uint32_t layers[3] = {2, 3, 4};
    long points = 0, bad = 0;
    for (int s = 0; s < 3; s++) {
        vt_cert_net n;
        float *store[12] = {0};
        vt_cert_ctx *c = random_ctx(&r, &n, store, layers[s], shapes[s]);
        if (!c) return;
        uint32_t d = n.n[0], C = n.n[n.L], M = 4;
        double rows[4 * 16];
        for (int box = 0; box < 8; box++) {
            float x[8], p[8];
            double xl[8], xu[8], lb[3][4], eps = box % 2 ? 0.2 : 0.03;
            for (uint32_t i = 0; i < d; i++) x[i] = (float)cert_uni(&r);
            vt_cert_box(x, d, eps, xl, xu);
            for (uint32_t q = 0; q < M; q++) {
                double sum = 0;
                for (uint32_t j = 1; j < C; j++) sum += rows[q * C + j] = (double)(int)(vt_rng_next(&r) % 5) - 2;
                rows[q * C] = -sum;
            }
            for (int m = 0; m < 3; m++) {
                vt_cert_settings set;
                vt_cert_settings_default(&set, (vt_cert_method)m);
                CHECK_OK(vt_cert_spec_bounds(c, xl, xu, rows, M, &set, lb[m], NULL));
            }
            for (uint32_t q = 0; q < M; q++) CHECK(lb[2][q] >= lb[1][q], "alpha-CROWN %g below CROWN %g", lb[2][q], lb[1][q]);
            mpfr_t mg[16], acc, t;
            for (uint32_t j = 0; j < C; j++) mpfr_init2(mg[j], PREC);
            mpfr_init2(acc, PREC), mpfr_init2(t, PREC);
            for (int k = 0; k < 120; k++) {
                for (uint32_t i = 0; i < d; i++) {
                    double v = k < 20 ? ((vt_rng_next(&r) & 1) ? xu[i] : xl[i]) : xl[i] + cert_uni(&r) * (xu[i] - xl[i]);
                    p[i] = (float)v;
                    if (!vt_cert_in_ball(p[i], x[i], eps)) p[i] = x[i];
                }
                for (int dep = 0; dep < 2; dep++) {
                    (void)cert_exact_margins(&n, p, 0, dep, mg); /* mg[j] = y_0 - y_j */
                    for (uint32_t q = 0; q < M; q++) {
                        mpfr_set_zero(acc, 1);
                        for (uint32_t j = 0; j < C; j++) {
                            mpfr_mul_d(t, mg[j], -rows[q * C + j], MPFR_RNDN);
                            mpfr_add(acc, acc, t, MPFR_RNDN);
                        }
                        for (int m = 0; m < 3; m++)
                            if (mpfr_cmp_d(acc, lb[m][q]) < 0 && bad++ < 5)
                                fprintf(stderr, "FAIL: spec row %u method %d: exact %.17g < bound %.17g\n", q, m,
                                        mpfr_get_d(acc, MPFR_RNDN), lb[m][q]);
                    }
                }
                points++;
            }
            for (uint32_t j = 0; j < C; j++) mpfr_clear(mg[j]);
            mpfr_clear(acc), mpfr_clear(t);
            /* a margin row: the spec path's bound is at least the margin path's CROWN term */
            double mrow[16] = {0}, ml[16], sl;
            mrow[0] = 1, mrow[1] = -1;
            vt_cert_settings cs;
            vt_cert_settings_default(&cs, VT_CERT_CROWN);
            CHECK_OK(vt_cert_bounds(c, xl, xu, 0, &cs, ml, NULL));
            CHECK_OK(vt_cert_spec_bounds(c, xl, xu, mrow, 1, &cs, &sl, NULL));
            CHECK(sl >= ml[1] - 1e-9 * (1 + fabs(ml[1])), "spec margin %g, margin path %g", sl, ml[1]);
        }
        vt_cert_ctx_free(c);
        for (int k = 0; k < 12; k++) free(store[k]);
    }
    CHECK(bad == 0, "%ld spec-row violations", bad);
    CHECK(points >= 2800, "only %ld points", points);
    printf("spec rows: %ld points (x2 semantics, x3 methods, x4 rows), none below a bound\n", points);
}

/* FP32 evaluation of the network in a random order per neuron: a random permutation of the terms,
 * each step a plain FP32 add or an fmaf, the bias first (inside the sum) or added last. */
static void fp32_forward(vt_rng *r, const vt_cert_net *n, const float *x, float *out)
{
    float h[2][64];
    memcpy(h[0], x, n->n[0] * sizeof *x);
    for (uint32_t k = 1; k <= n->L; k++) {
        uint32_t in = n->n[k - 1], o = n->n[k], perm[64];
        const float *hp = h[(k - 1) & 1];
        float *hn = k == n->L ? out : h[k & 1];
        for (uint32_t j = 0; j < o; j++) {
            for (uint32_t i = 0; i < in; i++) perm[i] = i;
            for (uint32_t i = in; i > 1; i--) {
                uint32_t q = (uint32_t)(vt_rng_next(r) % i), t = perm[i - 1];
                perm[i - 1] = perm[q], perm[q] = t;
            }
            int inside = (int)(vt_rng_next(r) & 1), fm = (int)(vt_rng_next(r) & 1);
            float acc = inside ? n->b[k][j] : 0.0f;
            for (uint32_t i = 0; i < in; i++) {
                float w = n->W[k][(size_t)perm[i] * o + j], v = hp[perm[i]];
                if (fm) acc = fmaf(w, v, acc);
                else {
                    volatile float p = w * v; /* a rounded product, then a rounded sum */
                    acc = acc + p;
                }
            }
            if (!inside) acc = acc + n->b[k][j];
            hn[j] = k < n->L && acc < 0 ? 0 : acc;
        }
    }
}

/* vt_cert_set_fp32_any: the bounds also hold for FP32 evaluations in random orders (with and
 * without FMA, the bias inside or after) at random points of random boxes. */
static void test_fp32_any(void)
{
    vt_rng r = {vt_test_seed(20261203)};
    const uint32_t shapes[2][5] = {{6, 16, 16, 4, 0}, {8, 32, 24, 16, 5}};
    const uint32_t layers[2] = {3, 4};
    long points = 0, bad = 0;
    for (int s = 0; s < 2; s++) {
        vt_cert_net n;
        float *store[12] = {0};
        vt_cert_ctx *c = random_ctx(&r, &n, store, layers[s], shapes[s]);
        if (!c) return;
        vt_cert_set_fp32_any(c, 1);
        uint32_t d = n.n[0], C = n.n[n.L];
        for (int box = 0; box < 10; box++) {
            float x[8], p[8], y[16];
            double xl[8], xu[8], lb[3][16], eps = box % 2 ? 0.25 : 0.02;
            for (uint32_t i = 0; i < d; i++) x[i] = (float)cert_uni(&r);
            vt_cert_box(x, d, eps, xl, xu);
            double rows[16 * 16];
            for (uint32_t q = 0; q < C; q++)
                for (uint32_t j = 0; j < C; j++) rows[q * C + j] = (double)(int)(vt_rng_next(&r) % 7) - 3;
            for (int m = 0; m < 3; m++) {
                vt_cert_settings set;
                vt_cert_settings_default(&set, (vt_cert_method)m);
                CHECK_OK(vt_cert_spec_bounds(c, xl, xu, rows, C, &set, lb[m], NULL));
            }
            for (int k = 0; k < 300; k++) {
                for (uint32_t i = 0; i < d; i++) {
                    double v = k < 30 ? ((vt_rng_next(&r) & 1) ? xu[i] : xl[i]) : xl[i] + cert_uni(&r) * (xu[i] - xl[i]);
                    p[i] = (float)v;
                    if (!vt_cert_in_ball(p[i], x[i], eps)) p[i] = x[i];
                }
                fp32_forward(&r, &n, p, y);
                mpfr_t acc, t;
                mpfr_init2(acc, PREC), mpfr_init2(t, PREC);
                for (uint32_t q = 0; q < C; q++) {
                    mpfr_set_zero(acc, 1); /* C_q . y exactly */
                    for (uint32_t j = 0; j < C; j++) {
                        mpfr_set_flt(t, y[j], MPFR_RNDN);
                        mpfr_mul_d(t, t, rows[q * C + j], MPFR_RNDN);
                        mpfr_add(acc, acc, t, MPFR_RNDN);
                    }
                    for (int m = 0; m < 3; m++)
                        if (mpfr_cmp_d(acc, lb[m][q]) < 0 && bad++ < 5)
                            fprintf(stderr, "FAIL: fp32 row %u method %d: %.17g < bound %.17g\n", q, m,
                                    mpfr_get_d(acc, MPFR_RNDN), lb[m][q]);
                }
                mpfr_clear(acc), mpfr_clear(t);
                points++;
            }
        }
        vt_cert_ctx_free(c);
        for (int k = 0; k < 12; k++) free(store[k]);
    }
    CHECK(bad == 0, "%ld FP32 evaluations below a bound", bad);
    printf("fp32_any: %ld points in random FP32 orders (x3 methods), none below a bound\n", points);
}

/* The crafted network: y0 = 2^60 h1 - h3 - 2^60 h2 + 1/4 with h1 = h2 = relu(x + 1), h3 = relu(x),
 * y1 = 0; on x in [0.49, 0.51] the exact margin y0 - y1 = 1/4 - x < 0 (deployed as well), but in
 * FP64 2^60 h1 - h3 rounds to 2^60 h1 and the bound of plain FP64 propagation is 1/4 > 0. */
static const float CW1[3] = {1, 1, 1}, CB1[3] = {1, 1, 0};
static const float CB2[2] = {0.25f, 0};

static vt_err exact_confirm(void *ctx, const float *x, uint32_t label, int *mis)
{
    const vt_cert_net *n = ctx;
    mpfr_t m[2];
    mpfr_init2(m[0], PREC), mpfr_init2(m[1], PREC);
    (void)cert_exact_margins(n, x, label, 1, m);
    *mis = mpfr_sgn(m[1 - label]) <= 0;
    mpfr_clear(m[0]), mpfr_clear(m[1]);
    return VT_OK;
}

static void test_crafted(void)
{
    vt_cert_net n = {.L = 2, .n = {1, 3, 2}};
    /* fc2.weight is [3, 2] row-major: rows h1, h2, h3 (the order FP64 sums them: h1, h2, h3 by the
     * W row layout; the plain computation below adds h1's and h3's terms first) */
    static const float W2[6] = {0x1p60f, 0, -0x1p60f, 0, -1, 0};
    n.W[1] = CW1, n.b[1] = CB1, n.W[2] = W2, n.b[2] = CB2;
    /* plain FP64 back-substitution, no error terms: coefficient of x and the constant */
    volatile double lam_h[3] = {0x1p60, -0x1p60, -1};
    double coef = lam_h[0] * 1 + lam_h[2] * 1 + lam_h[1] * 1; /* (2^60 - 1) + -2^60 = 0 in FP64 */
    double cst = lam_h[0] * 1 + lam_h[2] * 0 + lam_h[1] * 1 + 0.25;
    double naive = cst + (coef >= 0 ? coef * 0.49 : coef * 0.51);
    CHECK(naive > 0, "plain FP64 propagation claims verified: %g", naive);
    float x0 = 0.5f, xs = 0.49f;
    mpfr_t m[2];
    mpfr_init2(m[0], PREC), mpfr_init2(m[1], PREC);
    (void)cert_exact_margins(&n, &xs, 0, 0, m);
    CHECK(mpfr_sgn(m[1]) < 0, "the real margin at 0.49 is negative: %g", mpfr_get_d(m[1], MPFR_RNDN));
    (void)cert_exact_margins(&n, &xs, 0, 1, m);
    CHECK(mpfr_sgn(m[1]) < 0, "the deployed margin at 0.49 is negative: %g", mpfr_get_d(m[1], MPFR_RNDN));
    mpfr_clear(m[0]), mpfr_clear(m[1]);
    vt_cert_ctx *c = NULL;
    CHECK_OK(vt_cert_ctx_new(&n, &c));
    if (!c) return;
    double xl, xu, lb[2];
    vt_cert_box(&x0, 1, 0.01, &xl, &xu);
    for (int meth = 0; meth < 3; meth++) {
        vt_cert_settings set;
        vt_cert_settings_default(&set, (vt_cert_method)meth);
        CHECK_OK(vt_cert_bounds(c, &xl, &xu, 0, &set, lb, NULL));
        CHECK(!(lb[1] > 0), "%s claims verified (bound %g)", vt_cert_method_name((vt_cert_method)meth), lb[1]);
        float cex = -1;
        int found = 0;
        CHECK_OK(vt_cert_attack(c, &x0, 0.01, 0, 0, &set, exact_confirm, &n, &cex, &found));
        CHECK(found && vt_cert_in_ball(cex, x0, 0.01), "falsified, with a counterexample in the ball (%g)", cex);
    }
    vt_cert_ctx_free(c);
}

/* The outward rounding of the box and the exact ball test. */
static void test_box(void)
{
    float x[3] = {0.1f, 0.0f, 1.0f};
    double xl[3], xu[3];
    vt_cert_box(x, 3, 0.1, xl, xu);
    CHECK(xl[0] <= 0.1f - 0.1 && xu[0] >= 0.1f + 0.1 && xl[1] == 0 && xu[2] == 1, "the box");
    CHECK(vt_cert_in_ball(0.5f, 0.5f, 0) && !vt_cert_in_ball(nextafterf(0.5f, 1), 0.5f, 0), "eps 0");
    CHECK(!vt_cert_in_ball(-0.0f - 0x1p-149f, 0.0f, 1), "below 0");
    CHECK(vt_cert_in_ball(0.25f, 0.5f, 0.25) && !vt_cert_in_ball(nextafterf(0.25f, 0), 0.5f, 0.25), "the edge");
}
#endif

/* The VNN-LIB parser: the box, the rows, exact and inexact literals, and refusals with their kinds. */
static void test_vnnlib(void)
{
    const char *ok = "; a comment\n(declare-const X_0 Real)\n(declare-const X_1 Real)\n(declare-const Y_0 Real)\n"
                     "(declare-const Y_1 Real)\n(declare-const Y_2 Real)\n"
                     "(assert (>= X_0 0.25))\n(assert (<= X_0 0.5))\n(assert (and (<= 0.1 X_1) (<= X_1 1e0)))\n"
                     "(assert (<= Y_2 3))\n(assert (or (and (>= Y_1 Y_0)) (and (<= Y_0 -0.5) (< Y_1 Y_2))))\n";
    vt_vnnlib v;
    CHECK_OK(vt_vnnlib_parse(ok, strlen(ok), &v));
    CHECK(v.nx == 2 && v.ny == 3 && v.n_disj == 2 && v.n_rows == 5, "counts %u %u %u %u", v.nx, v.ny, v.n_disj, v.n_rows);
    if (v.n_rows == 5) {
        CHECK(v.xl[0] == 0.25 && v.xu[0] == 0.5 && v.ixl[0] == 0.25 && v.ixu[0] == 0.5, "exact literals kept");
        CHECK(v.xl[1] < 0.1 && v.ixl[1] > 0.1 && v.xu[1] == 1, "0.1 widened: %.17g %.17g", v.xl[1], v.ixl[1]);
        /* disjunct 0: Y_0 - Y_1 <= 0, then the common Y_2 - 3 <= 0 */
        CHECK(v.disj_start[0] == 0 && v.disj_start[1] == 2 && v.disj_start[2] == 5, "disjunct layout");
        CHECK(v.C[0] == 1 && v.C[1] == -1 && v.C[2] == 0 && v.d_lo[0] == 0, "row 0");
        CHECK(v.C[3 + 2] == 1 && v.d_lo[1] == -3 && v.d_hi[1] == -3, "row 1 (common)");
        CHECK(v.C[6] == 1 && v.d_lo[2] == 0.5 && v.strict[3] == 1 && v.C[9 + 1] == 1 && v.C[9 + 2] == -1, "rows 2, 3");
    }
    vt_vnnlib_free(&v);
    struct {
        const char *text;
        vt_err want;
    } badv[] = {
        {"(declare-const X_0 Real)(declare-const Y_0 Real)(assert (<= X_0 1))", VT_ERR_UNSUPPORTED}, /* no lower bound */
        {"(declare-const X_0 Real)(declare-const Y_0 Real)(assert (<= X_0 1)", VT_ERR_FORMAT},       /* not closed */
        {"(declare-const X_0 Real)(declare-const Y_0 Real))", VT_ERR_FORMAT},
        {"(declare-const X_1 Real)(declare-const Y_0 Real)", VT_ERR_FORMAT},                          /* X_0 missing */
        {"(declare-const X_0 Real)(declare-const X_0 Real)(declare-const Y_0 Real)", VT_ERR_FORMAT},
        {"(declare-const X_0 Real)(declare-const Y_0 Real)(check-sat)", VT_ERR_UNSUPPORTED},
        {"(declare-const X_0 Real)(declare-const Y_0 Real)(assert (<= X_0 Y_0))", VT_ERR_UNSUPPORTED},
        {"(declare-const X_0 Real)(declare-const Y_0 Real)(assert (<= Y_1 0))", VT_ERR_FORMAT},
        {"(declare-const X_0 Real)(declare-const Y_0 Real)(assert (<= Y_0 0x1p3))", VT_ERR_FORMAT},
        {"(declare-const X_0 Real)(declare-const Y_0 Real)(assert (<= (+ Y_0 Y_0) 0))", VT_ERR_UNSUPPORTED},
        {"(declare-const X_0 Real)(declare-const Y_0 Real)(assert (>= X_0 1))(assert (<= X_0 0))", VT_ERR_FORMAT},
        {"(declare-const X_0 Real)(declare-const Y_0 Real)(assert (or (<= X_0 0)))", VT_ERR_UNSUPPORTED},
        {"(declare-const X_0 Real)\x01", VT_ERR_FORMAT},
    };
    for (size_t i = 0; i < sizeof badv / sizeof *badv; i++) {
        vt_err e = vt_vnnlib_parse(badv[i].text, strlen(badv[i].text), &v);
        CHECK(e == badv[i].want, "vnnlib case %zu: error %d, wanted %d (%s)", i, (int)e, (int)badv[i].want,
              e ? vt_errmsg() : "accepted");
        CHECK(!e || strstr(vt_errmsg(), "vnnlib"), "vnnlib case %zu: message %s", i, vt_errmsg());
    }
    char deep[300];
    memset(deep, '(', 200);
    memcpy(deep + 200, "\n", 2);
    CHECK(vt_vnnlib_parse(deep, strlen(deep), &v) == VT_ERR_LIMIT, "nesting limit");
    double lo, hi;
    CHECK(vt_vnnlib_number("0.125", 5, &lo, &hi) == 0 && lo == 0.125 && hi == 0.125, "0.125 exact");
    CHECK(vt_vnnlib_number("-3e2", 4, &lo, &hi) == 0 && lo == -300 && hi == -300, "-3e2 exact");
    CHECK(vt_vnnlib_number("0.3", 3, &lo, &hi) == 0 && lo < 0.3 && hi > 0.3 && nextafter(lo, 1) == 0.3, "0.3 widened");
    CHECK(vt_vnnlib_number("1.", 2, &lo, &hi) == 0 && lo == 1, "1.");
    char fx[200]; /* an FP32 value printed exactly (as --cex does) is read back as that point */
    snprintf(fx, sizeof fx, "%.112g", (double)0.0105f);
    CHECK(vt_vnnlib_number(fx, strlen(fx), &lo, &hi) == 0 && lo == (double)0.0105f && hi == lo, "%s exact", fx);
    snprintf(fx, sizeof fx, "%.17g", 0.1);
    CHECK(vt_vnnlib_number(fx, strlen(fx), &lo, &hi) == 0 && lo < 0.1 && hi > 0.1, "%s widened", fx);
    CHECK(vt_vnnlib_number("1.5e-3", 6, &lo, &hi) == 0 && lo < 1.5e-3 && hi > 1.5e-3, "1.5e-3 widened");
    CHECK(vt_vnnlib_number("2.5e-1", 6, &lo, &hi) == 0 && lo == 0.25 && hi == 0.25, "2.5e-1 exact");
    CHECK(vt_vnnlib_number("1e999", 5, &lo, &hi) != 0 && vt_vnnlib_number("--1", 3, &lo, &hi) != 0, "refused numbers");
}

int main(void)
{
#ifndef VT_HAVE_MPFR
    printf("test_cert: built without MPFR: skipped\n");
    return 77;
#else
    test_box();
    test_crafted();
    test_sampled();
    test_spec_sampled();
    test_fp32_any();
    test_vnnlib();
    return vt_test_finish("test_cert");
#endif
}
