/* vt_act.c - the elementwise activations of client models, correctly rounded to FP32 (vt_act.h;
 * docs/rounding.md 2.7 states the argument). IEEE basic operations only, compiled without contraction:
 * the double-double arithmetic below relies on every operation being rounded on its own. */
#include "vt_act.h"

#include <float.h>
#include <math.h>
#include <string.h>

#include "../rounding/vt_exact.h"
#include "vt_math.h"

/* ------------------------------------------------------------ double-double arithmetic */

typedef struct {
    double hi, lo;
} dd;

static dd two_sum(double a, double b) /* a + b = s + e exactly */
{
    double s = a + b, bb = s - a;
    return (dd){s, (a - (s - bb)) + (b - bb)};
}

static dd quick_two_sum(double a, double b) /* |a| >= |b| (or a = 0) */
{
    double s = a + b;
    return (dd){s, b - (s - a)};
}

static void split(double a, double *h, double *l) /* Veltkamp: a = h + l, 26 bits each */
{
    double t = 134217729.0 * a;
    *h = t - (t - a);
    *l = a - *h;
}

static dd two_prod(double a, double b) /* Dekker: a b = p + e exactly (no underflow, no overflow) */
{
    double p = a * b, ah, al, bh, bl;
    split(a, &ah, &al);
    split(b, &bh, &bl);
    return (dd){p, ((ah * bh - p) + ah * bl + al * bh) + al * bl};
}

static dd dd_add(dd a, dd b)
{
    dd s = two_sum(a.hi, b.hi), t = two_sum(a.lo, b.lo);
    s.lo += t.hi;
    s = quick_two_sum(s.hi, s.lo);
    s.lo += t.lo;
    return quick_two_sum(s.hi, s.lo);
}

static dd dd_neg(dd a) { return (dd){-a.hi, -a.lo}; }

static dd dd_mul(dd a, dd b)
{
    dd p = two_prod(a.hi, b.hi);
    p.lo += a.hi * b.lo + a.lo * b.hi;
    return quick_two_sum(p.hi, p.lo);
}

static dd dd_mul_d(dd a, double b)
{
    dd p = two_prod(a.hi, b);
    p.lo += a.lo * b;
    return quick_two_sum(p.hi, p.lo);
}

static dd dd_div(dd a, dd b) /* three quotient digits */
{
    double q1 = a.hi / b.hi;
    dd r = dd_add(a, dd_neg(dd_mul_d(b, q1)));
    double q2 = r.hi / b.hi;
    r = dd_add(r, dd_neg(dd_mul_d(b, q2)));
    double q3 = r.hi / b.hi;
    return dd_add(quick_two_sum(q1, q2), (dd){q3, 0.0});
}

/* ln 2 = L1 + L2 + L3 + O(2^-122): L1 and L2 of 32 bits (k L1 and k L2 exact for |k| < 2^21) */
#define LN2_1 0x1.62e42ffp-1
#define LN2_2 -0x1.718432a2p-35
#define LN2_3 0x1.3c7673007e5edp-69

/* exp(a) for -210 < a <= 0, a of at most 25 significant bits (an FP32 value or twice one) or minus half
 * an FP32 value's square, to a relative error below 2^-96: a = k ln2 + r with |r| <= 0.35 (a - k L1
 * exact: both are multiples of 2^-32 below 2^8, or, for -x^2/2 with k != 0 (|x| > 0.83, x a multiple of
 * 2^-24), of 2^-49 with a difference below 2^-1; k L2 exact; k L3 by two_prod), exp(r) by its Taylor
 * series to r^24 / 24! (the rest < 2^-120) in Horner's form 1 + r (1 + r/2 (1 + r/3 (...))), then 2^k
 * exactly */
static dd dd_exp(double a)
{
    double kf = a * 0x1.71547652b82fep0; /* a / ln 2 */
    int k = (int)(kf - 0.5);             /* rounded to nearest (kf <= 0) */
    double t = a - (double)k * LN2_1;
    dd r = two_sum(t, -(double)k * LN2_2);
    r = dd_add(r, dd_neg(two_prod((double)k, LN2_3)));
    dd s = {1.0, 0.0};
    for (int j = 24; j >= 1; j--) s = dd_add((dd){1.0, 0.0}, dd_div(dd_mul(r, s), (dd){(double)j, 0.0}));
    return (dd){ldexp(s.hi, k), ldexp(s.lo, k)};
}

/* ------------------------------------------------------------ the decision */

static uint32_t f2u(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static float u2f(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* 1 when every real within d of hi + lo rounds to the FP32 value r (r = RN32(hi) or a neighbour) */
static int decide_at(double hi, double lo, double d, float r)
{
    const uint32_t u = f2u(r);
    const double up = (double)u2f(u + 1), dn = u ? (double)u2f(u - 1) : 0.0;
    /* the midpoints with the neighbours (exact: two FP32 values' sum fits in FP64, halving is exact);
     * hi - m is exact too: both are multiples of the finer of their FP64 ulps and |hi - m| is below 2^53
     * of them */
    const double mhi = ((double)r + up) * 0.5, mlo = ((double)r + dn) * 0.5;
    const double dl = (hi - mlo) + lo, du = (mhi - hi) - lo; /* each within 2^-52 of its own value */
    return dl > 2.0 * d && du > 2.0 * d;
}

int vt_act_decide(double hi, double lo, double d, float *out)
{
    const float r = (float)hi; /* RN32(hi): the candidate */
    if (decide_at(hi, lo, d, r)) return *out = r, 1;
    return 0;
}

/* ------------------------------------------------------------ sigmoid */

/* stage 1: e = vt_exp(-|x|) within 2^-49 relative (the portable exp is within 1 ulp, 2^-52; 8 ulps are
 * assumed), then 1 / (1 + e) or e / (1 + e): two more roundings, a relative error below 2^-48 */
double vt_sigmoid_stage1(float x)
{
    const double ax = x < 0 ? -(double)x : (double)x, e = vt_exp(-ax);
    return x < 0 ? e / (1.0 + e) : 1.0 / (1.0 + e);
}

void vt_sigmoid_stage2(float x, double *hi, double *lo)
{
    const double ax = x < 0 ? -(double)x : (double)x;
    const dd e = dd_exp(-ax), d = dd_add((dd){1.0, 0.0}, e);
    const dd s = dd_div(x < 0 ? e : (dd){1.0, 0.0}, d);
    *hi = s.hi, *lo = s.lo;
}

float vt_sigmoid32(float x, int *hard)
{
    if (x != x) return x;
    if (x >= 40.0f) return 1.0f;   /* 1 - sigmoid(x) < exp(-40) < 2^-57: above 1's lower midpoint 1 - 2^-25 */
    if (x <= -104.0f) return 0.0f; /* sigmoid(x) < exp(-104) < 2^-150, the midpoint of 0 and 2^-149 */
    float out;
    const double y = vt_sigmoid_stage1(x);
    if (vt_act_decide(y, 0.0, y * VT_ACT_BOUND1_SIGMOID, &out)) return out;
    double hi, lo;
    vt_sigmoid_stage2(x, &hi, &lo);
    if (vt_act_decide(hi, lo, hi * VT_ACT_BOUND2, &out)) return out;
    if (hard) *hard = 1;
    return (float)hi;
}

/* ------------------------------------------------------------ tanh */

/* stage 1 for 2^-12 < a < 20: e = vt_exp(-2a) (2^-49 relative), n = 1 - e, whose relative error is
 * that of e times e / (1 - e) < 2^11.01 (1 - e > 2^-11 (1 - 2^-12)) plus one rounding, d = 1 + e, n / d:
 * below 2^-37.9 */
double vt_tanh_stage1(float ax)
{
    const double e = vt_exp(-2.0 * (double)ax);
    return (1.0 - e) / (1.0 + e);
}

/* stage 2: 1 - E loses at most 11.01 bits of E's 2^-96: below 2^-84.5 with the division */
void vt_tanh_stage2(float ax, double *hi, double *lo)
{
    const dd e = dd_exp(-2.0 * (double)ax);
    const dd t = dd_div(dd_add((dd){1.0, 0.0}, dd_neg(e)), dd_add((dd){1.0, 0.0}, e));
    *hi = t.hi, *lo = t.lo;
}

float vt_tanh32(float x, int *hard)
{
    if (x != x) return x;
    const float ax = u2f(f2u(x) & 0x7fffffffu);
    /* a - a^3/3 < tanh(a) < a, and a^3/3 < a 2^-25 (a^2 < 3 2^-25) is below half the spacing under a:
     * RN32(tanh x) = x, the zeros included */
    if (ax <= 0x1p-12f) return x;
    if (ax >= 20.0f) return x < 0 ? -1.0f : 1.0f; /* 1 - tanh(20) < 2 exp(-40) < 2^-56 */
    float out;
    const double y = vt_tanh_stage1(ax);
    int ok = vt_act_decide(y, 0.0, y * VT_ACT_BOUND1_TANH, &out);
    if (!ok) {
        double hi, lo;
        vt_tanh_stage2(ax, &hi, &lo);
        ok = vt_act_decide(hi, lo, hi * VT_ACT_BOUND2, &out);
        if (!ok) {
            if (hard) *hard = 1;
            out = (float)hi;
        }
    }
    return x < 0 ? -out : out;
}

/* ------------------------------------------------------------ the backward formulas and leaky ReLU */

/* a zero result with the sign IEEE arithmetic gives the formula's product (p: the product in FP64, whose
 * sign is the exact value's: its factors' signs are exact), as PyTorch's; any other result as it is */
static float signed_zero(float r, double p) { return r == 0.0f ? (signbit(p) ? -0.0f : 0.0f) : r; }

/* dy y (1 - y) = dy y - dy y^2: dy y exact (two FP32 values), y^2 exact (48 bits, above 2^-300), dy y^2 =
 * p + e exactly (Dekker; above 2^-450: no underflow), the three terms' exact sum rounded once */
float vt_sigmoid_bwd32(float y, float dy)
{
    const double y2 = (double)y * (double)y;
    const dd q = two_prod((double)dy, y2);
    const double v[3] = {(double)dy * (double)y, -q.hi, -q.lo};
    if (!isfinite(v[0]) || !isfinite(q.hi) || !isfinite(q.lo)) return (float)(v[0] - q.hi);
    return signed_zero(vt_round_quot_sum32(v, 3, 1), (double)dy * (double)y * (1.0 - (double)y));
}

/* dy (1 - y^2) = dy - dy y^2, the same pieces */
float vt_tanh_bwd32(float y, float dy)
{
    const double y2 = (double)y * (double)y;
    const dd q = two_prod((double)dy, y2);
    const double v[3] = {(double)dy, -q.hi, -q.lo};
    if (!isfinite(v[0]) || !isfinite(q.hi) || !isfinite(q.lo)) return (float)(v[0] - q.hi);
    return signed_zero(vt_round_quot_sum32(v, 3, 1), (double)dy * (1.0 - y2));
}

/* alpha v = p + e exactly (Dekker; the kinds' check keeps alpha 0 or within [2^-64, 2^64] in
 * magnitude: no underflow of e, no overflow), rounded once */
static float scaled(double alpha, float v)
{
    const dd q = two_prod(alpha, (double)v);
    if (!isfinite(q.hi) || !isfinite(q.lo)) return (float)q.hi;
    const double t[2] = {q.hi, q.lo};
    return signed_zero(vt_round_quot_sum32(t, 2, 1), q.hi);
}

float vt_leaky_relu32(float x, double alpha) { return x >= 0.0f ? x : scaled(alpha, x); }

float vt_leaky_relu_bwd32(float x, float dy, double alpha) { return x > 0.0f ? dy : scaled(alpha, dy); }

/* ------------------------------------------------------------ GELU (erf form) */

/* With phi(x) = exp(-x^2/2) / sqrt(2 pi) and Phi the normal CDF (docs/rounding.md 2.7):
 *   gelu(x) = x Phi(x) = x/2 (1 + erf(x / sqrt 2)),   g(x) = Phi(x) + x phi(x) (the derivative);
 *   Phi(x) = 1/2 + phi(x) S(x), S(x) = x + x^3/3 + x^5/(3 5) + ... (every term of x's sign; Marsaglia's
 *   series), used for -3 <= x < 6.5;
 *   Phi(-a) = phi(a) R(a) for a > 3, R Laplace's continued fraction of the Mills ratio
 *   1/(a + 1/(a + 2/(a + 3/(a + ...)))): its approximants alternate about R, so two consecutive ones
 *   bracket it and their difference bounds the truncation.
 * The double-double operations below (dd_add of same-signed values, dd_mul, dd_mul_d, dd_div) are each
 * within 2^-100 relative (their known bounds are below 2^-103); dd_exp within 2^-96. */

/* 1 / sqrt(2 pi) as a double-double (to 2^-107 relative) */
#define RSQRT2PI_HI 0x1.9884533d43651p-2
#define RSQRT2PI_LO -0x1.cbc0d30ebfd15p-56

static dd dd_phi(double x2) /* phi(x) from x^2 (exact, 48 bits): within 2^-95 relative */
{
    return dd_mul(dd_exp(-0.5 * x2), (dd){RSQRT2PI_HI, RSQRT2PI_LO});
}

/* S(a) for 0 < a < 6.5: t_n = t_{n-1} a^2 / (2n + 1), summed until t_n <= 2^-110 s and a^2 / (2n + 3) <=
 * 1/2 (the rest below t_n). At most 2 n operations on t_n, n additions of positive terms: with n <= 200
 * (a^2 < 42.3 needs fewer) the relative error is below 600 2^-100 + 2^-110 < 2^-90.7 */
static dd dd_series(double a)
{
    const double a2 = a * a;
    dd t = {a, 0.0}, s = t;
    for (int n = 1; n <= 200; n++) {
        t = dd_div(dd_mul_d(t, a2), (dd){(double)(2 * n + 1), 0.0});
        s = dd_add(s, t);
        if (t.hi <= 0x1p-110 * s.hi && a2 <= 0.5 * (double)(2 * n + 3)) break;
    }
    return s;
}

/* R's approximant of depth n at a > 3: t = a, t = a + k / t for k = n .. 1, 1 / t; each step two
 * operations on positive values: within (2 n + 1) 2^-100 relative */
static dd dd_mills(double a, int n)
{
    dd t = {a, 0.0};
    for (int k = n; k >= 1; k--) t = dd_add((dd){a, 0.0}, dd_div((dd){(double)k, 0.0}, t));
    return dd_div((dd){1.0, 0.0}, t);
}

/* R(a) for 3 < a < 20 and a relative bound of its error: depth n = 20 + 1800 / a^2 (<= 220; the
 * truncation below 2^-110 on [3, 20], measured), within (2 n + 3) 2^-100 < 2^-91.2 of the exact
 * approximants, R between the two exact ones: |r - R| <= 3 2^-91 R + |r - r1| */
static dd dd_mills_bounded(double a, double *rel)
{
    const int n = 20 + (int)(1800.0 / (a * a));
    const dd r = dd_mills(a, n), r1 = dd_mills(a, n + 1);
    const dd diff = dd_add(r, dd_neg(r1));
    *rel = 3 * 0x1p-91 + fabs(diff.hi) / r.hi * (1 + 0x1p-40); /* r's, r1's and the difference's errors */
    return r;
}

/* the value v = s (hi + lo) with s = +-1, hi > 0, within d of the real value: RN32, or 0 when undecided.
 * Magnitudes rounding to FLT_MAX or above compare with the overflow threshold 2^128 - 2^103 and FLT_MAX's
 * lower midpoint themselves (vt_act_decide's upper neighbour would be infinite) */
static int decide_signed(double hi, double lo, double d, float *out)
{
    const double s = hi < 0 ? -1.0 : 1.0;
    hi *= s, lo *= s;
    float r = (float)hi;
    if (r < FLT_MAX) {
        /* RN32(hi), or its neighbour on lo's side when hi is an FP32 midpoint (dy/2 of a subnormal dy) */
        if (!decide_at(hi, lo, d, r)) {
            r = nextafterf(r, lo > 0 ? INFINITY : -INFINITY);
            if (lo == 0.0 || r == FLT_MAX || !decide_at(hi, lo, d, r)) return 0;
        }
    } else {
        const double top = 0x1p128 - 0x1p103, below = 0x1p128 - 0x1p104 - 0x1p103;
        if ((hi - top) + lo > 2.0 * d) r = INFINITY;
        else if ((top - hi) - lo > 2.0 * d && (hi - below) + lo > 2.0 * d) r = FLT_MAX;
        else return 0;
    }
    *out = s < 0 ? -r : r;
    return 1;
}

/* RN32 of h + e (h exact in FP64, e an infinitesimal of sign dir, below a quarter of any FP32 spacing
 * near h): h itself when it is an FP32 value, else h is a midpoint of two (tiny values halved) and the
 * neighbour on e's side; dir 0: RN32(h), ties to even */
static float tie_break(double h, int dir)
{
    float r = (float)h;
    if ((double)r == h || dir == 0) return r;
    if (dir > 0 && (double)r < h) r = nextafterf(r, INFINITY);
    if (dir < 0 && (double)r > h) r = nextafterf(r, -INFINITY);
    return r;
}

/* the first stage for -3 <= x < 6.5, in FP64: S(a) with t_n = t_{n-1} a^2 / (2n + 1) summed until t_n <=
 * 2^-60 s and a^2 / (2n + 3) <= 1/2 (n <= 80, 73 at 6.5): two roundings a term, n additions of positive
 * terms, below 3 n 2^-53 + 2^-60 < 2^-45; phi = vt_exp(-a^2/2) (2^-49 assumed, as sigmoid's) times
 * 1/sqrt(2 pi) (2^-56 and a rounding): below 2^-48.5; P = phi S below 2^-44.8. *g = 1/2 +- phi (S + a)
 * (< 0.75): within 2^-45 absolute; the return x (1/2 +- P): for x < 0 P's error (below 2^-45.8 absolute)
 * grows by 1/Phi(-3) < 2^9.6: below 2^-36.1 with the roundings */
static double stage1(float x, double *g)
{
    const double v = (double)x, a = fabs(v), a2 = a * a;
    double t = a, sum = a;
    for (int n = 1; n <= 100; n++) {
        t = t * a2 / (double)(2 * n + 1);
        sum += t;
        if (t <= 0x1p-60 * sum && a2 <= 0.5 * (double)(2 * n + 3)) break;
    }
    const double phi = vt_exp(-0.5 * a2) * RSQRT2PI_HI, p = phi * sum, q = phi * (sum + a);
    *g = v < 0 ? 0.5 - q : 0.5 + q;
    return v * (v < 0 ? 0.5 - p : 0.5 + p);
}

double vt_gelu_erf_stage1(float x)
{
    double g;
    return stage1(x, &g);
}

double vt_gelu_erf_grad_stage1(float x)
{
    double g;
    (void)stage1(x, &g);
    return g;
}

void vt_gelu_erf_eval(float x, double *hi, double *lo, double *rel)
{
    const double v = (double)x;
    dd y;
    if (v < -3.0) { /* -a phi(a) R(a) */
        const double a = -v;
        const dd r = dd_mills_bounded(a, rel);
        y = dd_mul_d(dd_mul(dd_phi(a * a), r), v);
        *rel += 3 * 0x1p-96; /* phi, the two products */
    } else {             /* x (1/2 + phi S): for x < 0, 1/2 - phi(a) S(a) >= Phi(-3) > 2^-9.6 */
        const double a = fabs(v);
        dd p = dd_mul(dd_phi(v * v), dd_series(a)); /* within 2^-90.5 */
        p = dd_add((dd){0.5, 0.0}, v < 0 ? dd_neg(p) : p);
        y = dd_mul_d(p, v);
        *rel = VT_ACT_BOUND_GELU;
    }
    *hi = y.hi, *lo = y.lo;
}

void vt_gelu_erf_grad_eval(float x, double *hi, double *lo, double *abs_err, double *rel)
{
    const double v = (double)x;
    dd g;
    if (v < -3.0) { /* phi(a) (R(a) - a): R < 1/a, so |R - a| >= a - 1/a > 2.6 holds R's error 8 times less */
        const double a = -v;
        const dd r = dd_mills_bounded(a, rel);
        g = dd_mul(dd_phi(a * a), dd_add(r, (dd){-a, 0.0}));
        *rel = *rel / 8 + 3 * 0x1p-96, *abs_err = 0.0;
    } else { /* 1/2 + phi (S + x): phi(a) (S(a) + a) = Phi(a) - 1/2 + a phi(a) < 0.75 */
        const double a = fabs(v);
        dd p = dd_mul(dd_phi(v * v), dd_add(dd_series(a), (dd){a, 0.0}));
        g = dd_add((dd){0.5, 0.0}, v < 0 ? dd_neg(p) : p);
        *rel = 0.0, *abs_err = VT_ACT_BOUND_GELU_GRAD;
    }
    *hi = g.hi, *lo = g.lo;
}

float vt_gelu_erf32(float x, int *hard)
{
    if (x != x) return x;
    if (x >= 6.0f) return x; /* x - gelu(x) = x Phi(-x) < x 2^-29 < half the spacing under x; +inf too */
    if (x <= -14.5f) return -0.0f; /* |gelu(x)| < phi(x) < 2^-152.9; -inf: the limit */
    if (fabsf(x) < 0x1p-60f) return tie_break(0.5 * (double)x, x != 0.0f); /* gelu - x/2 in (0, x^2) */
    float out;
    if (x >= -3.0f) {
        const double y = vt_gelu_erf_stage1(x);
        if (decide_signed(y, 0.0, fabs(y) * VT_ACT_BOUND1_GELU, &out)) return out;
    }
    double hi, lo, rel;
    vt_gelu_erf_eval(x, &hi, &lo, &rel);
    if (decide_signed(hi, lo, fabs(hi) * rel, &out)) return out;
    if (hard) *hard = 1;
    return (float)hi;
}

float vt_gelu_erf_bwd32(float x, float dy, int *hard)
{
    if (x != x) return x;
    if (dy != dy) return dy;
    if (x >= 6.5f) return dy; /* 0 < g - 1 < x phi(x) < 2^-29: under half of dy's spacing, dy's side */
    if (x <= -20.0f) /* -2^-285 < g < 0: |dy g| < 2^-157, a zero of its sign; -inf: dy 0 (NaN for dy infinite) */
        return isinf(dy) && isfinite(x) ? -dy : (float)((double)dy * -0.0);
    if (fabsf(x) < 0x1p-60f) /* g = 1/2 + 2 phi(0) x + O(x^3): dy/2 and a push of sign dy x */
        return tie_break(0.5 * (double)dy, x == 0.0f ? 0 : ((x > 0) == (dy > 0) ? 1 : -1));
    float out;
    if (x >= -3.0f && isfinite(dy) && dy != 0.0f) { /* dy g1 exactly, g1 within 2^-43 of g */
        const dd q1 = two_prod((double)dy, vt_gelu_erf_grad_stage1(x));
        const double d1 = fabs((double)dy) * VT_ACT_BOUND1_GELU_GRAD;
        /* a zero takes g1's sign, known only when |g1| exceeds its bound */
        if (decide_signed(q1.hi, q1.lo, d1, &out) && (out != 0.0f || fabs(q1.hi) > 2.0 * d1))
            return out == 0.0f ? (float)(q1.hi * 0.0) : out;
    }
    double ghi, glo, ea, er;
    vt_gelu_erf_grad_eval(x, &ghi, &glo, &ea, &er);
    if (ea > 0.0 && fabs(ghi) <= 2.0 * ea && hard) *hard = 1; /* g's sign unknown (never: |g| > 2^-28, test_act) */
    if (dy == 0.0f || isinf(dy)) return (float)((double)dy * ghi); /* g's sign */
    const dd q = two_prod((double)dy, ghi);
    const dd v = quick_two_sum(q.hi, q.lo + (double)dy * glo);
    const double d = fabs((double)dy) * ea + fabs(v.hi) * (er + 0x1p-100);
    if (decide_signed(v.hi, v.lo, d, &out)) return out == 0.0f ? (float)(v.hi * 0.0) : out;
    if (hard) *hard = 1;
    return (float)v.hi;
}
