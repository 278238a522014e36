/* test_cert_samples.c - millions of sampled inputs against the MLP certificate's bounds (issue 26
 * item 3, docs/certify.md "Soundness under floating point"): random MLPs (2 to 4 layers, small
 * widths; ordinary weights, weights of mixed magnitudes 2^-20 .. 2^20 in one row, layers scaled by
 * 2^30 and 2^-30, and the crafted 2^60 cancellation), many boxes, IBP, CROWN and alpha-CROWN, both
 * semantics the bounds claim (the real-arithmetic network and the deployed one, a = RN32(RN32(z) +
 * b)). Every sample (uniform, corners, PGD-attacked points per margin) is evaluated in FP64 interval
 * arithmetic with rigorous error terms (docs/certify.md item 2's bound of a dot product, outward
 * rounding by nextafter); a margin whose whole interval is at or above a bound passes, one wholly
 * below fails; one that straddles falls back to exact evaluation: the deployed network with the
 * exact accumulator vt_xacc (RN32 of each exact dot product), the real one with MPFR (every
 * operation checked exact). The test fails only on a true violation, and reports samples,
 * fallbacks and the minimum slack. VT_CERT_SAMPLES sets the number of samples (default 2,000,000;
 * 200,000 under AddressSanitizer). */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../rounding/vt_exact.h"
#include "cert_nets.h"
#include "vt_test.h"

#if defined(__SANITIZE_ADDRESS__)
#define DEFAULT_SAMPLES 200000L
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define DEFAULT_SAMPLES 200000L
#endif
#endif
#ifndef DEFAULT_SAMPLES
#define DEFAULT_SAMPLES 2000000L
#endif

#ifdef VT_HAVE_MPFR
#define MAXW 32
#define MAXC 16

static double up(double x) { return nextafter(x, INFINITY); }
static double dn(double x) { return nextafter(x, -INFINITY); }

/* An upper bound of the rounding error of a loop sum of n terms whose |terms| sum to A (computed):
 * (n + 4) 2^-52 A + (n + 2) 2^-1074 >= C(n) A + U(n) of docs/certify.md item 2, rounded up. */
static double dot_err(double A, uint32_t n) { return up(up(A * ((double)(n + 4) * 0x1p-52)) + (double)(n + 2) * 0x1p-1074); }

/* Rigorous interval [*lo, *hi] of sum_i W[i][j] h_i (+ bias when with_b) for h_i in [hl_i, hu_i]. */
static void idot(const float *W, uint32_t in, uint32_t o, uint32_t j, const double *hl, const double *hu, float b,
                 int with_b, double *lo, double *hi)
{
    double su = 0, sl = 0, au = 0, al = 0;
    for (uint32_t i = 0; i < in; i++) {
        double w = W[(size_t)i * o + j], pu = w * (w >= 0 ? hu[i] : hl[i]), pl = w * (w >= 0 ? hl[i] : hu[i]);
        su += pu, au += fabs(pu), sl += pl, al += fabs(pl);
    }
    if (with_b) su += b, au += fabs((double)b), sl += b, al += fabs((double)b);
    *hi = up(su + dot_err(au, in + 1));
    *lo = dn(sl - dot_err(al, in + 1));
}

/* The logits' rigorous intervals at the FP32 input x: real (dep 0: a = z + b) or deployed
 * (a = RN32(RN32(z) + b), RN32 monotone: the ends rounded). */
static void interval_logits(const vt_cert_net *n, const float *x, int dep, double *yl, double *yu)
{
    double hl[2][MAXW], hu[2][MAXW];
    for (uint32_t i = 0; i < n->n[0]; i++) hl[0][i] = hu[0][i] = x[i];
    for (uint32_t k = 1; k <= n->L; k++) {
        uint32_t in = n->n[k - 1], o = n->n[k];
        const double *pl = hl[(k - 1) & 1], *pu = hu[(k - 1) & 1];
        double *ql = k == n->L ? yl : hl[k & 1], *qu = k == n->L ? yu : hu[k & 1];
        for (uint32_t j = 0; j < o; j++) {
            double lo, hi;
            idot(n->W[k], in, o, j, pl, pu, n->b[k][j], !dep, &lo, &hi);
            if (dep) lo = (float)lo + n->b[k][j], hi = (float)hi + n->b[k][j]; /* FP32 additions */
            if (k < n->L) lo = lo > 0 ? lo : 0, hi = hi > 0 ? hi : 0;
            ql[j] = lo, qu[j] = hi;
        }
    }
}

/* The deployed logits exactly: RN32 of each exact dot product (vt_xacc), then RN32(g + b). */
static void deployed_logits(const vt_cert_net *n, const float *x, float *y)
{
    float h[2][MAXW];
    memcpy(h[0], x, n->n[0] * sizeof *x);
    for (uint32_t k = 1; k <= n->L; k++) {
        uint32_t in = n->n[k - 1], o = n->n[k];
        const float *p = h[(k - 1) & 1];
        float *q = k == n->L ? y : h[k & 1];
        for (uint32_t j = 0; j < o; j++) {
            float a = vt_dot_exact32(in, n->W[k] + j, o, p, 1) + n->b[k][j];
            q[j] = k < n->L && !(a > 0) ? 0 : a;
        }
    }
}

typedef struct {
    long samples, checks, fallbacks[2], violations, inexact, inf_bounds;
    double min_slack;
} stats;

/* Checks the sample p (in the box) against lb[m][j] (3 methods) in both semantics. */
static void check_sample(const vt_cert_net *n, const float *p, uint32_t label, double lb[3][MAXC], stats *st)
{
    uint32_t C = n->n[n->L];
    double yl[MAXC], yu[MAXC];
    st->samples++;
    for (int dep = 0; dep < 2; dep++) {
        interval_logits(n, p, dep, yl, yu);
        int have_exact = 0;
        float yd[MAXC];
        mpfr_t mg[MAXC];
        for (uint32_t j = 0; j < C; j++) {
            if (j == label) continue;
            double ml = dn(yl[label] - yu[j]), mu = up(yu[label] - yl[j]);
            for (int m = 0; m < 3; m++) {
                double b = lb[m][j];
                st->checks++;
                if (b == -INFINITY) {
                    st->inf_bounds++;
                    continue;
                }
                if (ml >= b) { /* NaN compares false: to the fallback */
                    if (ml - b < st->min_slack) st->min_slack = ml - b;
                    continue;
                }
                int bad;
                double slack;
                if (mu < b) {
                    bad = 1, slack = mu - b;
                } else {
                    st->fallbacks[dep]++;
                    if (!have_exact) {
                        have_exact = 1;
                        if (dep) deployed_logits(n, p, yd);
                        else {
                            for (uint32_t q = 0; q < C; q++) mpfr_init2(mg[q], CERT_PREC);
                            if (cert_exact_margins(n, p, label, 0, mg)) st->inexact++;
                        }
                    }
                    if (dep) {
                        vt_xacc a;
                        vt_xacc_init(&a);
                        vt_xacc_add(&a, yd[label]), vt_xacc_add(&a, -(double)yd[j]), vt_xacc_add(&a, -b);
                        bad = vt_xacc_sign(&a) < 0, slack = vt_xacc_round64(&a);
                    } else {
                        bad = mpfr_cmp_d(mg[j], b) < 0, slack = mpfr_get_d(mg[j], MPFR_RNDD) - b;
                    }
                }
                if (slack < st->min_slack) st->min_slack = slack;
                if (bad && st->violations++ < 5)
                    fprintf(stderr, "FAIL: %s method %d margin %u: the value is below the bound %.17g (by %.3g)\n",
                            dep ? "deployed" : "real", m, j, b, slack);
            }
        }
        if (have_exact && !dep)
            for (uint32_t q = 0; q < C; q++) mpfr_clear(mg[q]);
    }
}

/* A point of the exact ball of x: the FP32 nearest v, moved toward x until inside. */
static float into_ball(double v, float x, double eps)
{
    float f = (float)v;
    for (int t = 0; t < 4 && !vt_cert_in_ball(f, x, eps); t++) f = nextafterf(f, x);
    return vt_cert_in_ball(f, x, eps) ? f : x;
}

typedef struct {
    uint32_t L, w[5];
    double scale;
    int mix_exp;   /* weights 2^-mix .. 2^mix in one row */
    int layer_exp; /* layer k scaled by 2^(+-layer_exp), alternating */
} shape;

/* per box: uniform and corner samples, then PGD on each margin, together about per_box samples */
static void run_box(vt_cert_ctx *c, const vt_cert_net *n, const float *x, double eps, uint32_t label, long per_box,
                    stats *st, vt_rng *r)
{
    uint32_t d = n->n[0], C = n->n[n->L];
    double xl[MAXW], xu[MAXW], lb[3][MAXC];
    vt_cert_box(x, d, eps, xl, xu);
    for (int m = 0; m < 3; m++) {
        vt_cert_settings set;
        vt_cert_settings_default(&set, (vt_cert_method)m);
        CHECK_OK(vt_cert_bounds(c, xl, xu, label, &set, lb[m], NULL));
    }
    long pgd_iters = 20, restarts = per_box / 4 / ((long)(C - 1) * pgd_iters);
    long plain = per_box - restarts * (long)(C - 1) * pgd_iters;
    float p[MAXW];
    for (long t = 0; t < plain; t++) {
        for (uint32_t i = 0; i < d; i++)
            p[i] = into_ball(t % 10 == 0 ? ((vt_rng_next(r) & 1) ? xu[i] : xl[i]) : xl[i] + cert_uni(r) * (xu[i] - xl[i]),
                             x[i], eps);
        check_sample(n, p, label, lb, st);
    }
    /* PGD: sign-gradient descent on the FP64 margin a[label] - a[j], from x or a random point */
    double xd[MAXW], g[MAXW], g2[MAXW], lg[MAXC];
    for (uint32_t j = 0; j < C; j++) {
        if (j == label) continue;
        for (long rs = 0; rs < restarts; rs++) {
            for (uint32_t i = 0; i < d; i++) p[i] = rs ? into_ball(xl[i] + cert_uni(r) * (xu[i] - xl[i]), x[i], eps) : x[i];
            for (long it = 0; it < pgd_iters; it++) {
                for (uint32_t i = 0; i < d; i++) xd[i] = p[i];
                vt_cert_forward64(c, xd, lg);
                for (uint32_t q = 0; q < C; q++) g[q] = q == label ? 1 : q == j ? -1 : 0;
                vt_cert_backprop64(c, g, g2);
                double step = eps / 8 * (1 + (double)(it < pgd_iters / 2));
                for (uint32_t i = 0; i < d; i++) p[i] = into_ball(p[i] - (g[i] > 0 ? step : g[i] < 0 ? -step : 0), x[i], eps);
                check_sample(n, p, label, lb, st);
            }
        }
    }
}

static void test_mlps(long total)
{
    static const shape shapes[] = {
        {2, {6, 12, 4}, 2.0, 0, 0},       {3, {5, 10, 10, 3}, 2.0, 0, 0},   {4, {4, 8, 8, 8, 5}, 2.0, 0, 0},
        {3, {8, 16, 16, 6}, 1.0, 0, 0},   {2, {10, 24, 10}, 3.0, 0, 0},     {3, {6, 12, 12, 4}, 2.0, 20, 0},
        {4, {5, 8, 8, 8, 4}, 2.0, 10, 0}, {3, {6, 10, 10, 4}, 2.0, 0, 30}, {2, {4, 16, 3}, 2.0, 0, 60},
    };
    const int n_shapes = (int)(sizeof shapes / sizeof *shapes), boxes = 24;
    const double epss[6] = {0.3, 0.1, 0.03, 0.01, 0.001, 0};
    vt_rng r = {vt_test_seed(20261202)};
    stats st = {.min_slack = INFINITY};
    long per_box = total / ((n_shapes + 1) * boxes) + 1;
    for (int s = 0; s < n_shapes; s++) {
        const shape *sh = &shapes[s];
        vt_cert_net n;
        float *store[2 * VT_CERT_MAX_LAYERS + 2] = {0};
        cert_random_net(&r, &n, store, sh->L, sh->w, sh->scale, sh->mix_exp);
        if (sh->layer_exp) /* exact power-of-two scalings: huge, then tiny */
            for (uint32_t k = 1; k <= sh->L; k++) {
                float *W = store[2 * k];
                for (size_t i = 0; i < (size_t)sh->w[k - 1] * sh->w[k]; i++)
                    W[i] = ldexpf(W[i], k % 2 ? sh->layer_exp : -sh->layer_exp);
            }
        vt_cert_ctx *c = NULL;
        CHECK_OK(vt_cert_ctx_new(&n, &c));
        if (!c) return;
        for (int box = 0; box < boxes; box++) {
            float x[MAXW];
            for (uint32_t i = 0; i < n.n[0]; i++) x[i] = (float)cert_uni(&r);
            run_box(c, &n, x, epss[box % 6], (uint32_t)(vt_rng_next(&r) % n.n[n.L]), per_box, &st, &r);
        }
        vt_cert_ctx_free(c);
        for (int k = 0; k < 2 * VT_CERT_MAX_LAYERS + 2; k++) free(store[k]);
    }
    /* the crafted network of test_cert.c: 2^60 h1 - h3 - 2^60 h2 + 1/4 on x in [0.49, 0.51] */
    {
        static const float W1[3] = {1, 1, 1}, B1[3] = {1, 1, 0}, W2[6] = {0x1p60f, 0, -0x1p60f, 0, -1, 0};
        static const float B2[2] = {0.25f, 0};
        vt_cert_net n = {.L = 2, .n = {1, 3, 2}};
        n.W[1] = W1, n.b[1] = B1, n.W[2] = W2, n.b[2] = B2;
        vt_cert_ctx *c = NULL;
        CHECK_OK(vt_cert_ctx_new(&n, &c));
        if (!c) return;
        for (int box = 0; box < boxes; box++) {
            float x = (float)(0.4 + 0.2 * cert_uni(&r));
            run_box(c, &n, &x, 0.01 * (1 + box % 3), (uint32_t)(box & 1), per_box, &st, &r);
        }
        vt_cert_ctx_free(c);
    }
    printf("test_cert_samples: MLPs: %ld samples (%d networks x %d boxes; uniform, corners, PGD on every margin), "
           "%ld margin-bound checks per semantics (IBP, CROWN, alpha-CROWN; %ld bounds -inf), fallbacks to exact "
           "evaluation: real %ld, deployed %ld; violations %ld; minimum slack %.3g\n",
           st.samples, n_shapes + 1, boxes, st.checks / 2, st.inf_bounds / 2, st.fallbacks[0], st.fallbacks[1],
           st.violations, st.min_slack);
    CHECK(st.violations == 0, "%ld sampled margins below a bound", st.violations);
    CHECK(st.inexact == 0, "%ld MPFR evaluations inexact at %d bits", st.inexact, CERT_PREC);
    CHECK(st.samples >= total, "only %ld samples of %ld", st.samples, total);
}
#endif

int main(void)
{
#ifndef VT_HAVE_MPFR
    printf("test_cert_samples: built without MPFR: skipped\n");
    return 77;
#else
    long total = DEFAULT_SAMPLES;
    const char *e = getenv("VT_CERT_SAMPLES");
    if (e && *e) {
        char *end;
        long v = strtol(e, &end, 10);
        if (*end || v < 1) {
            fprintf(stderr, "test_cert_samples: VT_CERT_SAMPLES=%s is not a positive count\n", e);
            return 1;
        }
        total = v;
    }
    test_mlps(total);
    return vt_test_finish("test_cert_samples");
#endif
}
