/* test_losses - the losses of regression and multi-label models and their gradients (ops/vt_fam_loss.c:
 * mse_loss, mse_backward, l1_loss, l1_backward, bce_with_logits_loss, bce_with_logits_backward) and the
 * loader of float targets (load_batch_targets), against MPFR (docs/rounding.md 2.6):
 *   - the rounding layer's quotients (vt_xacc_round32_quot, vt_round_quot_sum32) on exact ties n m, on
 *     values a hair off a tie, subnormal and overflowing quotients, counts up to 2^40;
 *   - every kind in exact rounding and in log rounding (recorded, then replayed from its log) on random
 *     and adversarial inputs (ties, huge and tiny values, t = y, |x| large for BCE): MSE and L1, loss and
 *     gradient, equal RN32 of the exact real value bit for bit; BCE equals RN32 of its definition (the
 *     exact sum of the FP64 pieces of the portable exp and log, over B K) bit for bit, and RN32 of the
 *     real value wherever that value is not within 2^-40 (relative) of a rounding boundary (a zero's
 *     sign aside: where exp(-|x|) underflows FP64, the definition's exact 0 is +0);
 *   - the shard path (a batch split over ranks: each rank's accumulator summed by vt_round_dist_quot32,
 *     the gradients divided by the global count) gives the one-process bits: on the one-rank
 *     communicator here, and on 2 and 3 ranks under mpirun (tests/cmake/losses.cmake, --ranks N: then
 *     only this check; the quotient across ranks is tests/unit/test_dist.c's too);
 *   - the plain forms in FP32 and FP64 close to the exact values;
 *   - the checks refuse wrong shapes; a NaN or an overflowing loss is the rounding fault (diverged);
 *   - load_batch_targets loads the examples of the indices and their targets; load_batch refuses a data
 *     set of float targets and load_batch_targets one of class labels.
 * Without MPFR (a test-only dependency) it is skipped (77). */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/vt_data.h"
#include "dist/vt_dist.h"
#include "kernels/vt_kernels_hd.h"
#include "ops/vt_ops.h"
#include "ops/vt_program.h"
#include "rounding/vt_exact.h"
#include "rounding/vt_round.h"
#include "rounding/vt_round_dist.h"
#include "vt_test.h"

#ifndef VT_HAVE_MPFR
int main(void)
{
    printf("test_losses: MPFR not available, skipped\n");
    return 77;
}
#else
#include <mpfr.h>
#define VT_TEST_MPFR
#include "vt_test_ops.h"

#define PREC 2400 /* every sum of the tests' FP64 values exact (as tests/unit/test_exact.c) */

static int is_loss(uint16_t k) { return k == VT_OPK_MSE_LOSS || k == VT_OPK_L1_LOSS || k == VT_OPK_BCE_LOSS; }

static int same32(float a, float b) { return memcmp(&a, &b, 4) == 0; }

/* ------------------------------------------------------------ references */

/* v / n rounded to FP32 (v exact at PREC; n < 2^64: the quotient is a midpoint exactly when it is one,
 * and otherwise at least 2^-(PREC/2) away from any, so the division at PREC bits rounds right) */
static float quot32(mpfr_t v, uint64_t n)
{
    mpfr_t q;
    mpfr_init2(q, PREC);
    mpfr_div_ui(q, v, (unsigned long)n, MPFR_RNDN);
    float f = mpfr_get_flt(q, MPFR_RNDN);
    mpfr_clear(q);
    return f;
}

/* the exact value of one element of kind k (y, t FP32) added into s (the loss's terms; a gradient
 * element's numerator, s set) - the real value for MSE and L1, BCE's definition (def = 1: the FP64
 * pieces) or its real value (def = 0: MPFR's exp and log1p at PREC bits) */
static void ref_elem(uint16_t k, float y, float t, int def, mpfr_t s)
{
    mpfr_t a, b;
    mpfr_inits2(PREC, a, b, (mpfr_ptr)0);
    mpfr_set_flt(a, y, MPFR_RNDN);
    mpfr_set_flt(b, t, MPFR_RNDN);
    switch (k) {
    case VT_OPK_MSE_LOSS:
        mpfr_sub(a, a, b, MPFR_RNDN);
        mpfr_sqr(a, a, MPFR_RNDN);
        mpfr_add(s, s, a, MPFR_RNDN);
        break;
    case VT_OPK_L1_LOSS:
        mpfr_sub(a, a, b, MPFR_RNDN);
        mpfr_abs(a, a, MPFR_RNDN);
        mpfr_add(s, s, a, MPFR_RNDN);
        break;
    case VT_OPK_MSE_BWD:
        mpfr_sub(a, a, b, MPFR_RNDN);
        mpfr_mul_2ui(s, a, 1, MPFR_RNDN);
        break;
    case VT_OPK_L1_BWD:
        mpfr_set_si(s, y > t ? 1 : y < t ? -1 : 0, MPFR_RNDN);
        break;
    case VT_OPK_BCE_LOSS:
        if (y > 0) mpfr_add(s, s, a, MPFR_RNDN);
        mpfr_mul(b, a, b, MPFR_RNDN); /* x t */
        mpfr_sub(s, s, b, MPFR_RNDN);
        if (def) {
            mpfr_add_d(s, s, vti_bce_softplus1(y), MPFR_RNDN);
        } else {
            mpfr_abs(a, a, MPFR_RNDN);
            mpfr_neg(a, a, MPFR_RNDN);
            mpfr_exp(a, a, MPFR_RNDN);
            mpfr_log1p(a, a, MPFR_RNDN);
            mpfr_add(s, s, a, MPFR_RNDN);
        }
        break;
    case VT_OPK_BCE_BWD:
        if (def) {
            double v[3];
            int m = vti_bce_bwd_terms(y, t, v);
            mpfr_set_zero(s, 1);
            for (int i = 0; i < m; i++) mpfr_add_d(s, s, v[i], MPFR_RNDN);
        } else { /* 1 / (1 + exp(-x)) - t */
            mpfr_neg(a, a, MPFR_RNDN);
            mpfr_exp(a, a, MPFR_RNDN);
            mpfr_add_ui(a, a, 1, MPFR_RNDN);
            mpfr_ui_div(a, 1, a, MPFR_RNDN);
            mpfr_sub(s, a, b, MPFR_RNDN);
        }
        break;
    default:
        break;
    }
    mpfr_clears(a, b, (mpfr_ptr)0);
}

/* within 2^-40 of its size from an FP32 rounding boundary: not decided by the PREC-bit reference */
static int near_boundary(mpfr_t v) { return vt_test_near_boundary(v, 40, PREC); }

/* ------------------------------------------------------------ the quotients of the rounding layer */

/* S = n m + e exactly into acc (m of 25 bits at most: n split as vt_quot.c does) and s */
static void add_nm(vt_xacc *acc, mpfr_t s, uint64_t n, double m)
{
    const double part[3] = {(double)(n & 0xfffffffu), (double)((n >> 28) & 0xfffffffu), (double)(n >> 56)};
    const double scale[3] = {1.0, 0x1p28, 0x1p56};
    for (int k = 0; k < 3; k++) {
        double v = (m * part[k]) * scale[k];
        vt_xacc_add(acc, v);
        mpfr_add_d(s, s, v, MPFR_RNDN);
    }
}


static void check_quotients(vt_rng *r)
{
    mpfr_t s;
    mpfr_init2(s, PREC);
    size_t n_ties = 0, n_checked = 0;
    for (int it = 0; it < 20000; it++) {
        /* a midpoint m between f and its successor, times n, then nudged by 0, +-2^-1000 or +-ulp */
        float f = fabsf(vt_test_rand_float(r, -149, 127));
        if (it % 7 == 0) f = ldexpf((float)(vt_rng_next(r) & 0x7fffffu), -149); /* a subnormal */
        if (it % 11 == 0) f = FLT_MAX;
        double m = 0.5 * ((double)f + (double)nextafterf(f, INFINITY));
        if (isinf(nextafterf(f, INFINITY))) m = 0x1p128 - 0x1p103;
        uint64_t n = 1 + (vt_rng_next(r) >> (24 + vt_rng_next(r) % 40));
        vt_xacc acc;
        vt_xacc_init(&acc);
        mpfr_set_zero(s, 1);
        add_nm(&acc, s, n, m);
        const int nudge = it % 5;
        const double e = nudge == 1 ? 0x1p-1000 : nudge == 2 ? -0x1p-1000 : nudge == 3 ? 0x1p-1074 : 0.0;
        vt_xacc_add(&acc, e);
        mpfr_add_d(s, s, e, MPFR_RNDN);
        if (vt_rng_next(r) & 1) { /* the negative of it */
            vt_xacc neg;
            vt_xacc_init(&neg);
            mpfr_neg(s, s, MPFR_RNDN);
            /* rebuild negated: the same parts with the other sign */
            const double part[3] = {(double)(n & 0xfffffffu), (double)((n >> 28) & 0xfffffffu), (double)(n >> 56)};
            const double scale[3] = {1.0, 0x1p28, 0x1p56};
            for (int k = 0; k < 3; k++) vt_xacc_add(&neg, -((m * part[k]) * scale[k]));
            vt_xacc_add(&neg, -e);
            acc = neg;
        }
        n_ties += nudge == 0 || nudge == 4;
        float want = quot32(s, n), got = vt_xacc_round32_quot(&acc, n);
        n_checked++;
        CHECK(same32(want, got), "quotient %d: (n m %+a) / n, n = %llu, m = %a: %a, expected %a", it, e,
              (unsigned long long)n, m, (double)got, (double)want);
        if (!same32(want, got)) break;
    }
    /* short sums over counts: random terms of wide range, and the same with cancellation */
    for (int it = 0; it < 20000; it++) {
        double v[4];
        size_t k = 1 + vt_rng_next(r) % 4;
        for (size_t i = 0; i < k; i++) v[i] = (double)vt_test_rand_float(r, -149, 127) * (i == 0 ? 2.0 : 1.0);
        if (it % 3 == 0 && k >= 2) v[1] = -v[0] + (double)vt_test_rand_float(r, -149, -100);
        uint64_t n = 1 + vt_rng_next(r) % ((it % 2) ? 1000 : ((uint64_t)1 << 40));
        mpfr_set_zero(s, 1);
        for (size_t i = 0; i < k; i++) mpfr_add_d(s, s, v[i], MPFR_RNDN);
        float want = quot32(s, n), got = vt_round_quot_sum32(v, k, n);
        CHECK(same32(want, got), "sum quotient %d (%zu terms, n = %llu): %a, expected %a", it, k, (unsigned long long)n,
              (double)got, (double)want);
        if (!same32(want, got)) break;
    }
    /* +0 of an exact zero, n = 0 NaN */
    const double z[2] = {1.5, -1.5};
    CHECK(same32(vt_round_quot_sum32(z, 2, 7), 0.0f), "an exact zero is +0");
    vt_xacc a;
    vt_xacc_init(&a);
    vt_xacc_add(&a, 1.0);
    CHECK(isnan(vt_xacc_round32_quot(&a, 0)), "n = 0 is NaN");
    printf("quotients: %zu exact quotients (%zu of them ties), 20000 short sums\n", n_checked, n_ties);
    mpfr_clear(s);
}

/* ------------------------------------------------------------ the kinds */

typedef struct {
    vt_program p;
    uint32_t B, K;
} prog1;

/* a program of one operation of kind k over y [B, K] (INPUT), t (ACT) -> out (GRAD), each tensor alone
 * in its class's arena */
static vt_err build1(prog1 *g, uint16_t kind, uint32_t B, uint32_t K, uint32_t tB, uint32_t tK)
{
    vt_program_init(&g->p);
    g->B = B, g->K = K;
    const uint32_t shape[2] = {B, K}, tshape[2] = {tB, tK}, one[1] = {1};
    const uint32_t in[2] = {vt_prog_tensor(&g->p, VT_TC_INPUT, VT_DT_F32, 2, shape, "y"),
                            vt_prog_tensor(&g->p, VT_TC_ACT, VT_DT_F32, 2, tshape, "t")};
    const uint32_t out = vt_prog_tensor(&g->p, VT_TC_GRAD, VT_DT_F32, is_loss(kind) ? 1 : 2, is_loss(kind) ? one : shape,
                                        "out");
    vt_prog_op(&g->p, kind, in, 2, &out, 1, NULL, 0, NULL, 0, "the loss");
    if (g->p.bad) return VT_ERR_NOMEM;
    return vt_op_check(&g->p, &g->p.op[1]);
}

/* runs the operation: exact rounding (mode 0), or log rounding recorded then replayed from the log
 * (mode 1: both must give out's bits); shard: the one-rank split of the batch, or NULL */
static vt_err run1(prog1 *g, const float *y, const float *t, int mode, vt_shard *shard, float *out)
{
    uint8_t *arena[VT_TC_COUNT] = {0};
    arena[VT_TC_INPUT] = (uint8_t *)(uintptr_t)y, arena[VT_TC_ACT] = (uint8_t *)(uintptr_t)t;
    return vt_test_run_op(&g->p, arena, shard, mode, out, is_loss(g->p.op[1].kind) ? 1 : (size_t)g->B * g->K);
}

/* the plain form in FP32 (f64 = 0) or FP64 into outd (as double) */
static vt_err plain1(prog1 *g, const float *y, const float *t, int f64, double *outd)
{
    const size_t n = (size_t)g->B * g->K, nout = is_loss(g->p.op[1].kind) ? 1 : n, es = f64 ? 8 : 4;
    uint8_t *a = malloc(n * es), *b = malloc(n * es), *o = malloc(nout * es);
    if (!a || !b || !o) {
        free(a), free(b), free(o);
        return VT_ERR_NOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        if (f64) {
            ((double *)a)[i] = y[i], ((double *)b)[i] = t[i];
        } else {
            ((float *)a)[i] = y[i], ((float *)b)[i] = t[i];
        }
    }
    uint8_t *arena[VT_TC_COUNT] = {0};
    arena[VT_TC_INPUT] = a, arena[VT_TC_ACT] = b, arena[VT_TC_GRAD] = o;
    const size_t off[3] = {0, 0, 0};
    vt_plainctx pc = {&g->p, arena, off, f64, &g->p.op[1], 1, NULL, NULL, NULL};
    vt_err e = vt_opkind_get(g->p.op[1].kind)->plain(&pc);
    for (size_t i = 0; i < nout && !e; i++) outd[i] = f64 ? ((double *)o)[i] : (double)((float *)o)[i];
    free(a), free(b), free(o);
    return e;
}

/* the references of kind k's outputs: RN32 of the exact values (def = 1: BCE's definition) */
static void refs(uint16_t kind, const float *y, const float *t, size_t n, int def, float *want, int *undecided,
                 double *approx)
{
    mpfr_t s;
    mpfr_init2(s, PREC);
    mpfr_set_zero(s, 1);
    for (size_t i = 0; i < n; i++) {
        ref_elem(kind, y[i], t[i], def, s);
        if (!is_loss(kind)) {
            mpfr_t q;
            mpfr_init2(q, PREC);
            mpfr_div_ui(q, s, (unsigned long)n, MPFR_RNDN);
            want[i] = mpfr_get_flt(q, MPFR_RNDN);
            if (undecided) undecided[i] = near_boundary(q);
            if (approx) approx[i] = mpfr_get_d(q, MPFR_RNDN);
            mpfr_clear(q);
        }
    }
    if (is_loss(kind)) {
        mpfr_t q;
        mpfr_init2(q, PREC);
        mpfr_div_ui(q, s, (unsigned long)n, MPFR_RNDN);
        want[0] = quot32(s, n);
        if (undecided) undecided[0] = near_boundary(q);
        if (approx) approx[0] = mpfr_get_d(q, MPFR_RNDN);
        mpfr_clear(q);
    }
    mpfr_clear(s);
}

typedef struct {
    uint32_t B, K;
    float *y, *t;
    const char *what;
    int plain; /* compare the plain forms (values of ordinary size: FP32 sums neither overflow nor underflow) */
} loss_case;

static const uint16_t KINDS[] = {VT_OPK_MSE_LOSS, VT_OPK_MSE_BWD, VT_OPK_L1_LOSS,
                                 VT_OPK_L1_BWD,   VT_OPK_BCE_LOSS, VT_OPK_BCE_BWD};
#define N_KINDS (sizeof KINDS / sizeof KINDS[0])

static size_t g_real_checked, g_real_skipped, g_elems;

/* every kind on one case: both rounding modes, the one-rank shard, the references, the plain forms */
static void check_case(const loss_case *lc, vt_comm *comm)
{
    const size_t n = (size_t)lc->B * lc->K;
    float *out = malloc(n * 4), *out2 = malloc(n * 4), *want = malloc(n * 4), *wreal = malloc(n * 4);
    int *und = malloc(n * sizeof *und);
    double *approx = malloc(n * 8), *pl = malloc(n * 8);
    if (!out || !out2 || !want || !wreal || !und || !approx || !pl) {
        CHECK(0, "memory");
        goto done;
    }
    for (size_t k = 0; k < N_KINDS; k++) {
        const uint16_t kind = KINDS[k];
        const char *name = vt_opkind_get(kind)->name;
        const size_t nout = is_loss(kind) ? 1 : n;
        const int bce = kind == VT_OPK_BCE_LOSS || kind == VT_OPK_BCE_BWD;
        prog1 g;
        vt_err e = build1(&g, kind, lc->B, lc->K, lc->B, lc->K);
        CHECK(e == VT_OK, "%s: %s", name, vt_errmsg());
        refs(kind, lc->y, lc->t, n, 1, want, NULL, NULL);
        if (bce) refs(kind, lc->y, lc->t, n, 0, wreal, und, approx);
        else refs(kind, lc->y, lc->t, n, 1, wreal, und, approx);
        int finite = 1;
        for (size_t i = 0; i < nout; i++) finite &= isfinite(want[i]) != 0;
        for (int mode = 0; mode < 2 && !e; mode++) {
            vt_err r = run1(&g, lc->y, lc->t, mode, NULL, out);
            if (!finite) { /* an overflowing or NaN result: the rounding layer's fault */
                CHECK(r == VT_ERR_DIVERGED, "%s %s mode %d: a result beyond FP32 or NaN gives %d (%s)", lc->what, name,
                      mode, r, vt_errmsg());
                continue;
            }
            CHECK(r == VT_OK, "%s %s mode %d: %s", lc->what, name, mode, vt_errmsg());
            if (r) continue;
            size_t bad = 0;
            for (size_t i = 0; i < nout; i++) {
                g_elems++;
                if (!same32(out[i], want[i]) && bad++ < 3)
                    CHECK(0, "%s %s mode %d element %zu of %zu: %a, expected %a", lc->what, name, mode, i, nout,
                          (double)out[i], (double)want[i]);
                if (!und[i]) {
                    g_real_checked++;
                    /* a zero's sign aside: where exp(-|x|) underflows FP64 (|x| > 745) BCE's definition
                     * has an exact 0 (+0) for a real value that rounds to -0 */
                    const int zeros = out[i] == 0.0f && wreal[i] == 0.0f && bce;
                    if (!same32(out[i], wreal[i]) && !zeros && bad++ < 3)
                        CHECK(0, "%s %s mode %d element %zu: %a, RN32 of the real value %a", lc->what, name, mode, i,
                              (double)out[i], (double)wreal[i]);
                } else {
                    g_real_skipped++;
                }
            }
            CHECK(bad == 0, "%s %s mode %d: %zu elements differ", lc->what, name, mode, bad);
        }
        if (!e && finite) { /* the batch split over one rank: the same bits */
            vt_shard sh = {comm, lc->B, lc->B, 0, 0, 0, 0};
            vt_err r = run1(&g, lc->y, lc->t, 0, &sh, out2);
            CHECK(r == VT_OK && !memcmp(out, out2, nout * 4), "%s %s: the one-rank shard gives other bits (%s)", lc->what,
                  name, r ? vt_errmsg() : "");
        }
        for (int f64 = 0; f64 < 2 && !e && finite && lc->plain; f64++) { /* the plain forms: close to the exact values */
            CHECK_OK(plain1(&g, lc->y, lc->t, f64, pl));
            double scale = 0;
            for (size_t i = 0; i < n; i++) scale += fabs((double)lc->y[i]) + fabs((double)lc->t[i]);
            scale /= (double)n;
            const double tol = f64 ? 1e-9 : 1e-3;
            for (size_t i = 0; i < nout; i++) {
                double ref = approx[i], sc = is_loss(kind) ? fabs(ref) + 1e-30 : scale / (double)n;
                if (kind == VT_OPK_MSE_LOSS) sc = fabs(ref) + scale * scale * 1e-6;
                if (!isfinite(pl[i]) && !isfinite(ref)) continue;
                if (fabs(pl[i] - ref) > tol * (sc + fabs(ref)) + (f64 ? 1e-300 : 1e-6 * (1.0 + scale))) {
                    CHECK(0, "%s %s plain FP%d element %zu: %g, exact %g", lc->what, name, f64 ? 64 : 32, i, pl[i], ref);
                    break;
                }
            }
        }
        vt_program_free(&g.p);
    }
done:
    free(out), free(out2), free(want), free(wreal), free(und), free(approx), free(pl);
}

static void fill_case(vt_rng *r, loss_case *lc, int kind_of_data)
{
    const size_t n = (size_t)lc->B * lc->K;
    for (size_t i = 0; i < n; i++) {
        float a = 0, b = 0;
        switch (kind_of_data) {
        case 0: /* ordinary regression values */
            a = (float)vt_rng_normal(r), b = (float)vt_rng_normal(r);
            break;
        case 1: /* wide range: every exponent, subnormals included */
            a = vt_test_rand_float(r, -149, 60), b = vt_test_rand_float(r, -149, 60);
            break;
        case 2: /* targets a hair from the predictions, some equal */
            a = (float)vt_rng_normal(r);
            b = (i % 3 == 0) ? a : nextafterf(a, (i & 1) ? INFINITY : -INFINITY);
            break;
        case 3: /* logits of every size with targets in [0, 1] (BCE) */
            a = (float)(vt_rng_normal(r) * ldexp(1.0, (int)(vt_rng_next(r) % 12)));
            b = (i % 4 == 0) ? 1.0f : (i % 4 == 1) ? 0.0f : (float)vt_rng_uniform(r);
            break;
        default: /* tiny values: subnormal differences and quotients */
            a = ldexpf((float)(vt_rng_next(r) % 64), -149), b = ldexpf((float)(vt_rng_next(r) % 64), -149);
            break;
        }
        lc->y[i] = a, lc->t[i] = b;
    }
}

static void check_kinds(vt_rng *r, vt_comm *comm)
{
    static const uint32_t SIZES[][2] = {{1, 1}, {1, 3}, {3, 5}, {7, 3}, {16, 16}, {64, 33}};
    float y[64 * 33], t[64 * 33];
    for (size_t s = 0; s < sizeof SIZES / sizeof SIZES[0]; s++)
        for (int d = 0; d < 5; d++) {
            loss_case lc = {SIZES[s][0], SIZES[s][1], y, t, "", d == 0 || d == 2 || d == 3};
            char what[64];
            snprintf(what, sizeof what, "[%u, %u] data %d", lc.B, lc.K, d);
            lc.what = what;
            fill_case(r, &lc, d);
            check_case(&lc, comm);
        }
    /* adversarial cases, one element each (B = 1, K = 3: the count 3 keeps quotients off the grid) */
    static const float ADV[][2] = {
        {1.5f + 0x1p-23f, 0x1p-25f}, /* MSE gradient 2 (y - t) / 3 = 1 + 2^-24: a tie, to even (1) */
        {0x1p-149f, 0.0f},           /* 2^-148 / 3: a subnormal quotient */
        {-0x1p-149f, 0.0f},          /* its negative */
        {FLT_MAX, -FLT_MAX},         /* the MSE loss overflows (diverged); the gradient does not */
        {3.0f, 3.0f},                /* t = y: +0 */
        {40.0f, 1.0f},               /* BCE: log(1 + e^-40), far below 1 */
        {-100.0f, 0.0f},             /* BCE: e^-100, an FP32 subnormal */
        {1e4f, 0.5f},                /* BCE: exp underflows */
        {-3e38f, 1.0f},              /* BCE: huge logits */
        {88.0f, 1.0f},
        {-0.0f, 0.5f},
    };
    for (size_t a = 0; a < sizeof ADV / sizeof ADV[0]; a++) {
        float yy[3] = {ADV[a][0], 0.5f, -0.25f}, tt[3] = {ADV[a][1], 0.5f, 0.75f};
        char what[64];
        snprintf(what, sizeof what, "adversarial %zu (%a, %a)", a, (double)ADV[a][0], (double)ADV[a][1]);
        loss_case lc = {1, 3, yy, tt, what, 0};
        check_case(&lc, comm);
        loss_case one = {1, 1, yy, tt, what, 0};
        check_case(&one, comm);
    }
    /* a NaN is the rounding layer's fault (diverged) in every kind */
    float yn[2] = {NAN, 1.0f}, tn[2] = {0.5f, 0.5f};
    for (size_t k = 0; k < N_KINDS; k++) {
        prog1 g;
        CHECK_OK(build1(&g, KINDS[k], 1, 2, 1, 2));
        float o[2];
        CHECK(run1(&g, yn, tn, 0, NULL, o) == VT_ERR_DIVERGED, "%s of a NaN: %s", vt_opkind_get(KINDS[k])->name,
              vt_errmsg());
        vt_program_free(&g.p);
    }
    /* the checks: targets of another shape */
    for (size_t k = 0; k < N_KINDS; k++) {
        prog1 g;
        CHECK(build1(&g, KINDS[k], 2, 3, 3, 2) != VT_OK, "%s: targets [3, 2] for y [2, 3] accepted",
              vt_opkind_get(KINDS[k])->name);
        vt_program_free(&g.p);
    }
    printf("kinds: %zu output elements equal RN32 of their exact values; %zu of them equal RN32 of the real value, %zu "
           "within 2^-40 of a boundary (the exact kinds' ties among them) not compared with it\n",
           g_elems, g_real_checked, g_real_skipped);
}

/* ------------------------------------------------------------ the loader of float targets */

static void check_loader(void)
{
    float xf[5 * 2], yt[5 * 3];
    uint8_t y[5] = {0};
    for (int i = 0; i < 10; i++) xf[i] = (float)i * 0.5f;
    for (int i = 0; i < 15; i++) yt[i] = (float)i * -0.25f;
    vt_dataset ds;
    memset(&ds, 0, sizeof ds);
    snprintf(ds.name, sizeof ds.name, "targets");
    ds.n = 5, ds.d = 2, ds.channels = ds.rows = 1, ds.cols = 2, ds.n_classes = 1, ds.xf = xf, ds.y = y;
    ds.yt = yt, ds.k_targets = 3, ds.hash_version = 3;
    uint8_t h[32], h2[32];
    CHECK_OK(vt_data_hash(&ds, h));
    yt[14] = 1.0f; /* every target is hashed */
    CHECK_OK(vt_data_hash(&ds, h2));
    CHECK(memcmp(h, h2, 32) != 0, "the dataset hash covers the targets");
    vt_program p;
    vt_program_init(&p);
    const uint32_t xs[2] = {2, 2}, ts[2] = {2, 3}, ls[1] = {2};
    const uint32_t out[2] = {vt_prog_tensor(&p, VT_TC_INPUT, VT_DT_F32, 2, xs, "x"),
                             vt_prog_tensor(&p, VT_TC_ACT, VT_DT_F32, 2, ts, "t")};
    const uint32_t out2[2] = {out[0], vt_prog_tensor(&p, VT_TC_GRAD, VT_DT_U8, 1, ls, "labels")};
    const int64_t B = 2;
    vt_prog_op(&p, VT_OPK_LOAD_BATCH_TARGETS, NULL, 0, out, 2, &B, 1, NULL, 0, "load");
    vt_prog_op(&p, VT_OPK_LOAD_BATCH, NULL, 0, out2, 2, &B, 1, NULL, 0, "load labels");
    CHECK_OK(vt_op_check(&p, &p.op[1]));
    CHECK_OK(vt_op_check(&p, &p.op[2]));
    float x[4], t[6];
    uint8_t lab[2];
    uint8_t *arena[VT_TC_COUNT] = {0};
    arena[VT_TC_INPUT] = (uint8_t *)x, arena[VT_TC_ACT] = (uint8_t *)t, arena[VT_TC_GRAD] = lab;
    const size_t idx[2] = {4, 1};
    vt_opctx c;
    memset(&c, 0, sizeof c);
    c.prog = &p, c.arena = arena, c.o = &p.op[1], c.op_id = 1, c.step = 1, c.ds = &ds, c.batch_idx = idx;
    CHECK_OK(vt_opkind_get(VT_OPK_LOAD_BATCH_TARGETS)->exec(&c));
    CHECK(x[0] == 4.0f && x[1] == 4.5f && x[2] == 1.0f && x[3] == 1.5f, "the examples of the indices");
    CHECK(t[0] == 1.0f * -3.0f && t[2] == 1.0f && t[3] == -0.75f && t[5] == -1.25f, "their targets");
    c.o = &p.op[2];
    CHECK(vt_opkind_get(VT_OPK_LOAD_BATCH)->exec(&c) == VT_ERR_ARG && strstr(vt_errmsg(), "float targets"),
          "load_batch refuses a data set of float targets: %s", vt_errmsg());
    ds.yt = NULL, ds.k_targets = 0;
    c.o = &p.op[1];
    CHECK(vt_opkind_get(VT_OPK_LOAD_BATCH_TARGETS)->exec(&c) == VT_ERR_ARG, "load_batch_targets refuses class labels");
    vt_program_free(&p);
}

/* the batch split over the ranks of comm: each rank runs every kind on its rows (B / size of them, its
 * shard) and must get the one-process loss of the whole batch and the one-process gradient rows of its
 * own, bit for bit (every rank computes the one-process values itself from the same data) */
static void check_shards(vt_rng *r, vt_comm *comm)
{
    const int rank = vt_dist_rank(comm), size = vt_dist_size(comm);
    const uint32_t K = 7, local = 5, B = local * (uint32_t)size;
    const size_t n = (size_t)B * K, first = (size_t)rank * local;
    float *y = malloc(n * 4), *t = malloc(n * 4), *whole = malloc(n * 4), *mine = malloc(n * 4);
    if (!y || !t || !whole || !mine) abort();
    for (int d = 0; d < 5; d++) {
        loss_case lc = {B, K, y, t, "shards", 0};
        fill_case(r, &lc, d);
        for (size_t k = 0; k < N_KINDS; k++) {
            prog1 g1, gs;
            CHECK_OK(build1(&g1, KINDS[k], B, K, B, K));
            CHECK_OK(build1(&gs, KINDS[k], local, K, local, K));
            vt_shard sh = {comm, B, local, (uint32_t)first, 0, 0, 0};
            vt_err e1 = run1(&g1, y, t, 0, NULL, whole);
            vt_err es = run1(&gs, y + first * K, t + first * K, 0, &sh, mine);
            CHECK(e1 == es, "%s data %d rank %d of %d: %d, one process %d (%s)", vt_opkind_get(KINDS[k])->name, d, rank,
                  size, es, e1, vt_errmsg());
            if (!e1 && !es) {
                const int loss = is_loss(KINDS[k]);
                CHECK(!memcmp(loss ? whole : whole + first * K, mine, (loss ? 1 : (size_t)local * K) * 4),
                      "%s data %d rank %d of %d: the shard's outputs differ from one process's",
                      vt_opkind_get(KINDS[k])->name, d, rank, size);
                if (loss) CHECK(sh.n_dist == 1, "the loss is rounded across the ranks");
            }
            vt_program_free(&g1.p);
            vt_program_free(&gs.p);
        }
    }
    free(y), free(t), free(whole), free(mine);
}

int main(int argc, char **argv)
{
    int want_ranks = 0, st = vt_test_ranks_arg(argc, argv, "test_losses", &want_ranks);
    if (st >= 0) return st;
    vt_rng r = {vt_test_seed(20261206)};
    vt_comm *comm = NULL;
    CHECK_OK(vt_dist_init(&comm));
    if (!comm) return vt_test_finish("test_losses");
    if (want_ranks) CHECK(vt_dist_size(comm) == want_ranks, "%d ranks, %d expected", vt_dist_size(comm), want_ranks);
    if (vt_dist_size(comm) == 1) { /* the one-process checks; under mpirun the split batch alone */
        check_quotients(&r);
        check_kinds(&r, comm);
        check_loader();
    }
    check_shards(&r, comm);
    vt_err e = vt_dist_agree(comm, vt_test_failed ? vt_set_error(VT_ERR_INTERNAL, "%ld checks failed", vt_test_failed)
                                                  : VT_OK, NULL);
    CHECK_OK(vt_dist_finalize(&comm));
    mpfr_free_cache();
    char name[64];
    snprintf(name, sizeof name, "test_losses (%d rank%s)", want_ranks ? want_ranks : 1, want_ranks > 1 ? "s" : "");
    return vt_test_finish(name) ? 1 : (e ? 1 : 0);
}
#endif
