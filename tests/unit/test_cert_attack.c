/* test_cert_attack.c - the attack of `auditor certify` (docs/certify.md "Methods", Attack) and the
 * exact evaluation that confirms its candidates (vt_cert_eval_deployed):
 *  - a hand-built MLP whose class 1 is the closest to winning everywhere except in a small corner of
 *    the ball where class 2 wins: an attack that only follows the row closest to failing (the attack
 *    before issue 40, re-enacted here) never leaves the region where row 1 binds and finds nothing;
 *    the per-row attack (vt_cert_attack) finds a counterexample, confirmed by the exact evaluation,
 *    inside the exact ball, and the same bytes on a second run (deterministic); the attack inside branch
 *    and bound (one run from a given point at one class) finds the corner aimed at class 2, not at 1;
 *  - vt_cert_eval_deployed against MPFR (with VT_HAVE_MPFR): on random networks (ordinary and mixed
 *    magnitude weights) and random FP32 points, every logit is the exact deployed value
 *    (a_k = RN32(RN32(z_k) + b_k)); an overflowing network is reported not finite. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../cert/vt_cert.h"
#include "../../cert/vt_cert_int.h"
#include "cert_nets.h"
#include "vt_test.h"

/* The network: 4 inputs in [0, 1], s = x0 + x1 + x2 + x3; hidden h0 = relu(s - 3.9), h1 = relu(s) = s;
 * logits y0 = 0, y1 = -(0.3 + 0.025 s), y2 = -(1 - 0.1 s - 20 h0). Margins m1 = y0 - y1 in [0.3, 0.4]
 * (never violated), m2 = 1 - 0.1 s - 20 relu(s - 3.9): below m1 only for s > 3.91, violated for
 * s > 3.925 (at the corner s = 4: m2 = -1.4). Label 0 at x = 0.5 (m1 0.35, m2 0.8), eps 0.5. */
static const float CW1[8] = {1, 1, 1, 1, 1, 1, 1, 1}; /* [4, 2] */
static const float CB1[2] = {-3.9f, 0};
static const float CW2[6] = {0, 0, 20, 0, -0.025f, 0.1f}; /* [2, 3]: h0 -> y0 y1 y2, then h1 */
static const float CB2[3] = {0, -0.3f, -1.0f};

static void corner_net(vt_cert_net *n)
{
    memset(n, 0, sizeof *n);
    n->L = 2, n->n[0] = 4, n->n[1] = 2, n->n[2] = 3;
    n->W[1] = CW1, n->b[1] = CB1, n->W[2] = CW2, n->b[2] = CB2;
}

typedef struct {
    vt_cert_ctx *c;
    uint32_t calls;
} exact_confirm;

/* the candidate's exact deployed logits: misclassified when another class's logit is >= the label's */
static vt_err confirm_exact(void *ctx, const float *x, uint32_t label, int *mis)
{
    exact_confirm *ec = ctx;
    float y[16];
    int finite = 0;
    ec->calls++;
    VT_FORWARD_IF_ERROR(vt_cert_eval_deployed(ec->c, x, y, &finite));
    uint32_t C = 3;
    *mis = 0;
    for (uint32_t j = 0; j < C && finite; j++)
        if (j != label && !(y[label] > y[j])) *mis = 1;
    return VT_OK;
}

/* The attack before issue 40, re-enacted: each step follows the gradient of the one row closest to
 * failing at the current point (restarts as vt_cert_attack's). 1 when an iterate is misclassified. */
static int closest_row_attack(vt_cert_ctx *c, const float *x, double eps, uint32_t label, const vt_cert_settings *s,
                              exact_confirm *ec)
{
    double xc[4], lg[3], g[8], g2[8];
    float xf[4];
    uint64_t seed = s->attack_seed;
    double step = 2.5 * eps / s->attack_iters;
    for (uint32_t r = 0; r < s->attack_restarts; r++) {
        for (int i = 0; i < 4; i++) {
            double u = r == 0 ? 0.5 : (double)(vt_cert_rand(&seed) >> 11) * 0x1p-53;
            double v = x[i] + (2 * u - 1) * eps;
            xf[i] = (float)(v < 0 ? 0 : v > 1 ? 1 : v);
        }
        for (uint32_t it = 0; it <= s->attack_iters; it++) {
            for (int i = 0; i < 4; i++) xc[i] = xf[i];
            vt_cert_forward64(c, xc, lg);
            uint32_t jb = label == 0 ? 1 : 0;
            for (uint32_t j = 0; j < 3; j++)
                if (j != label && lg[j] > lg[jb]) jb = j;
            int mis = 0;
            if (lg[jb] >= lg[label] && confirm_exact(ec, xf, label, &mis) == VT_OK && mis) return 1;
            for (uint32_t j = 0; j < 3; j++) g[j] = (j == jb) - (j == label);
            vt_cert_backprop64(c, g, g2);
            for (int i = 0; i < 4; i++) {
                double v = xf[i] + (g[i] > 0 ? step : g[i] < 0 ? -step : 0);
                xf[i] = (float)(v < 0 ? 0 : v > 1 ? 1 : v);
            }
        }
    }
    return 0;
}

static void test_per_row(void)
{
    vt_cert_net n;
    corner_net(&n);
    vt_cert_ctx *c = NULL;
    CHECK_OK(vt_cert_ctx_new(&n, &c));
    if (!c) return;
    const float x[4] = {0.5f, 0.5f, 0.5f, 0.5f};
    const double eps = 0.5;
    vt_cert_settings s;
    vt_cert_settings_default(&s, VT_CERT_CROWN);
    /* the construction: at the example row 1 is the closest to failing, row 2 fails at the corner */
    double lg[3], corner[4] = {1, 1, 1, 1}, xd[4] = {0.5, 0.5, 0.5, 0.5};
    vt_cert_forward64(c, xd, lg);
    CHECK(lg[0] > lg[1] && lg[1] > lg[2], "at the example: y0 %g > y1 %g > y2 %g", lg[0], lg[1], lg[2]);
    vt_cert_forward64(c, corner, lg);
    CHECK(lg[2] > lg[0] + 1, "at the corner class 2 wins: y0 %g, y2 %g", lg[0], lg[2]);
    exact_confirm ec = {c, 0};
    CHECK(!closest_row_attack(c, x, eps, 0, &s, &ec), "the closest-row attack finds the corner (the test is moot)");
    uint32_t old_calls = ec.calls;
    float cex[4] = {0}, cex2[4] = {0};
    int found = 0, found2 = 0;
    ec.calls = 0;
    CHECK_OK(vt_cert_attack(c, x, eps, 0, 0, &s, confirm_exact, &ec, cex, &found));
    CHECK(found, "the per-row attack misses the corner (%u confirmations; the closest-row one made %u)", ec.calls,
          old_calls);
    if (found) {
        int inside = 1, mis = 0;
        for (int i = 0; i < 4; i++) inside &= vt_cert_in_ball(cex[i], x[i], eps);
        CHECK(inside, "the counterexample lies in the exact ball");
        CHECK_OK(confirm_exact(&ec, cex, 0, &mis));
        CHECK(mis, "the counterexample is misclassified by the exact evaluation");
        float y[3];
        int fin = 0;
        CHECK_OK(vt_cert_eval_deployed(c, cex, y, &fin));
        CHECK(fin && y[2] >= y[0] && y[1] < y[0], "class 2 wins there (y0 %g, y1 %g, y2 %g)", y[0], y[1], y[2]);
    }
    CHECK_OK(vt_cert_attack(c, x, eps, 0, 0, &s, confirm_exact, &ec, cex2, &found2));
    CHECK(found2 == found && memcmp(cex, cex2, sizeof cex) == 0, "a second attack gives the same counterexample");
    /* the attack inside branch and bound (vti_cert_attack_from): one run from a subdomain's point, aimed
     * at one class alone: class 2 reaches the corner, class 1 alone cannot (its margin is never <= 0) */
    const float start[4] = {0.25f, 0.5f, 0.75f, 0.5f};
    ec.calls = 0;
    CHECK_OK(vti_cert_attack_from(c, x, eps, 0, start, 2, &s, confirm_exact, &ec, cex2, &found2));
    int mis2 = 0;
    if (found2) CHECK_OK(confirm_exact(&ec, cex2, 0, &mis2));
    CHECK(found2 && mis2, "from a subdomain's point, class 2: no confirmed counterexample");
    CHECK_OK(vti_cert_attack_from(c, x, eps, 0, start, 1, &s, confirm_exact, &ec, cex2, &found2));
    CHECK(!found2, "class 1 alone: a counterexample confirmed");
    /* a ball that does not reach the corner: nothing confirmed */
    CHECK_OK(vt_cert_attack(c, x, 0.4, 0, 0, &s, confirm_exact, &ec, cex, &found));
    CHECK(!found, "eps 0.4 (s <= 3.6): no counterexample can exist, one was confirmed");
    vt_cert_ctx_free(c);
}

#ifdef VT_HAVE_MPFR
/* vt_cert_eval_deployed against MPFR's exact deployed margins (cert_nets.h) */
static void test_eval_deployed(void)
{
    vt_rng r = {vt_test_seed(0xa77ac4)};
    long checked = 0, bad = 0;
    for (int t = 0; t < 12; t++) {
        const uint32_t w[4] = {6, 9, 7, 5};
        uint32_t L = 2 + (uint32_t)(t % 2);
        uint32_t ww[4] = {w[0], w[1], L == 2 ? w[3] : w[2], w[3]};
        vt_cert_net n;
        float *store[8] = {0};
        cert_random_net(&r, &n, store, L, ww, 1.5, t >= 6 ? 20 : 0);
        vt_cert_ctx *c = NULL;
        CHECK_OK(vt_cert_ctx_new(&n, &c));
        for (int p = 0; c && p < 50; p++) {
            float x[8], y[8];
            for (uint32_t i = 0; i < n.n[0]; i++) x[i] = (float)cert_uni(&r);
            int fin = 0;
            CHECK_OK(vt_cert_eval_deployed(c, x, y, &fin));
            uint32_t C = n.n[L];
            mpfr_t mg[8], t2;
            for (uint32_t j = 0; j < C; j++) mpfr_init2(mg[j], CERT_PREC);
            mpfr_init2(t2, CERT_PREC);
            int inexact = cert_exact_margins(&n, x, 0, 1, mg);
            CHECK(!inexact && fin, "network %d point %d: exact reference, finite", t, p);
            for (uint32_t j = 0; j < C; j++) { /* y0 - yj exactly (FP32 values: exact in MPFR) */
                mpfr_set_flt(t2, y[0], MPFR_RNDN);
                mpfr_sub_d(t2, t2, (double)y[j], MPFR_RNDN);
                bad += mpfr_cmp(t2, mg[j]) != 0;
                checked++;
                mpfr_clear(mg[j]);
            }
            mpfr_clear(t2);
        }
        vt_cert_ctx_free(c);
        for (int k = 0; k < 8; k++) free(store[k]);
    }
    CHECK(bad == 0, "%ld of %ld deployed margins differ from the exact ones", bad, checked);
    printf("eval_deployed: %ld margins against MPFR, %ld differ\n", checked, bad);
    /* an overflow: 2^100 * 2^100 in FP32 */
    static const float W1[1] = {0x1p100f}, B1[1] = {0}, W2[2] = {0x1p100f, -0x1p100f}, B2[2] = {0, 0};
    vt_cert_net n = {.L = 2, .n = {1, 1, 2}, .W = {NULL, W1, W2}, .b = {NULL, B1, B2}};
    vt_cert_ctx *c = NULL;
    CHECK_OK(vt_cert_ctx_new(&n, &c));
    if (c) {
        float x[1] = {1}, y[2];
        int fin = 1;
        CHECK_OK(vt_cert_eval_deployed(c, x, y, &fin));
        CHECK(!fin, "an overflowing evaluation reported finite");
        vt_cert_ctx_free(c);
    }
}
#endif

int main(void)
{
    test_per_row();
#ifdef VT_HAVE_MPFR
    test_eval_deployed();
#endif
    return vt_test_finish("test_cert_attack");
}
