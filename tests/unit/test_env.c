/* test_env - the floating-point environment is checked, not assumed (common/vt_env.h).
 *
 * The probe passes in the normal environment; with flush-to-zero or denormals-are-zero set in
 * MXCSR (what GCC's crtfastmath does at load time for a library built with -ffast-math; x86 only)
 * and with each directed rounding mode (fesetround, and MXCSR's rounding control behind
 * fegetround's back) it fails with VT_ERR_ENV and a message naming the cause; restored, it passes
 * again. The step driver refuses a step under FTZ (before the step, and when the environment
 * changes during it: no verdict, no unusable-log redo) and the arbiter's judgement of an operation
 * gives no verdict. VT_ERR_ENV is exit status 2 (cannot check). The programs' start-up check with
 * a real -ffast-math CBLAS is tests/e2e/env_fastmath.sh. */
#include <fenv.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/vt_cli.h"
#include "../../common/vt_env.h"
#include "../../data/vt_data.h"
#include "../../game/vt_game.h"
#include "../../model/vt_model.h"
#include "../../run/vt_step.h"
#include "vt_test.h"

#if defined(__x86_64__) || (defined(__i386__) && defined(__SSE__))
#include <xmmintrin.h>
#define HAVE_MXCSR 1
#endif

/* vt_env_check fails with VT_ERR_ENV and a message holding each of the (up to two) words */
static void expect_refused(const char *what, const char *w1, const char *w2)
{
    vt_err e = vt_env_check();
    const char *msg = vt_errmsg();
    CHECK(e == VT_ERR_ENV, "%s: vt_env_check returned %d (%s)", what, (int)e, msg);
    CHECK(strstr(msg, w1) != NULL, "%s: the message does not name \"%s\": %s", what, w1, msg);
    CHECK(!w2 || strstr(msg, w2) != NULL, "%s: the message does not name \"%s\": %s", what, w2, msg);
    CHECK(strstr(msg, "refusing to compute") != NULL, "%s: %s", what, msg);
    printf("%s: %s\n", what, msg);
}

static void expect_ok(const char *what)
{
    vt_clear_error();
    vt_err e = vt_env_check();
    CHECK(e == VT_OK, "%s: vt_env_check: %s", what, vt_errmsg());
}

static void rounding_modes(void)
{
    static const struct {
        int mode;
        const char *name;
    } modes[] = {{FE_UPWARD, "upward"}, {FE_DOWNWARD, "downward"}, {FE_TOWARDZERO, "toward zero"}};
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) {
        CHECK(fesetround(modes[i].mode) == 0, "fesetround %s", modes[i].name);
        char what[64];
        snprintf(what, sizeof what, "fesetround(%s)", modes[i].name);
        expect_refused(what, "rounding mode is not round-to-nearest-even", modes[i].name);
        CHECK(vt_env_cli_check("test_env") == VT_EXIT_CANNOT, "%s: the programs' start-up check exits 2", what);
        fesetround(FE_TONEAREST);
        expect_ok("FE_TONEAREST restored");
    }
}

#ifdef HAVE_MXCSR
static void mxcsr_modes(void)
{
    const unsigned csr = _mm_getcsr();
    CHECK((csr & 0xe040u) == 0, "MXCSR starts IEEE: %#x", csr);
    _mm_setcsr(csr | 0x8000u);
    expect_refused("FTZ", "flushes subnormals to zero (FTZ set in MXCSR", "-ffast-math");
    _mm_setcsr(csr);
    expect_ok("FTZ cleared");
    _mm_setcsr(csr | 0x0040u);
    expect_refused("DAZ", "flushes subnormals to zero (DAZ set in MXCSR", NULL);
    _mm_setcsr(csr);
    _mm_setcsr(csr | 0x8040u); /* what crtfastmath sets */
    expect_refused("FTZ+DAZ", "FTZ and DAZ set in MXCSR", NULL);
    CHECK(vt_env_cli_check("test_env") == VT_EXIT_CANNOT, "FTZ+DAZ: the programs' start-up check exits 2");
    _mm_setcsr(csr);
    expect_ok("FTZ+DAZ cleared");
    /* rounding control changed in MXCSR only: fegetround (the x87 control word on x86-64) still says
     * to nearest; the computed ties catch it */
    _mm_setcsr((csr & ~0x6000u) | 0x4000u);
    expect_refused("MXCSR rounding upward", "MXCSR rounding control upward", "ties and halfway sums");
    _mm_setcsr(csr);
    expect_ok("MXCSR restored");
}

typedef struct {
    uint32_t at;
    unsigned csr;
} ftz_hook_ctx;

/* sets FTZ+DAZ after operation `at`: a library that changes the environment during a step */
static vt_err ftz_hook(void *ctx, vt_model *m, uint64_t step, uint32_t op)
{
    (void)m, (void)step;
    const ftz_hook_ctx *h = ctx;
    if (op == h->at) _mm_setcsr(h->csr | 0x8040u);
    return VT_OK;
}

/* The step driver and the judgement of an operation refuse to compute under FTZ. */
static void drivers(void)
{
    vt_dataset ds;
    memset(&ds, 0, sizeof ds);
    vt_err e = vt_data_load("digits", NULL, &ds);
    CHECK(e == VT_OK, "load digits: %s", vt_errmsg());
    if (e) return;
    vt_recipe rc;
    vt_recipe_default(&rc);
    snprintf(rc.dataset, sizeof rc.dataset, "digits");
    CHECK_OK(vt_recipe_set(&rc, "layers=[64,16,10]"));
    CHECK_OK(vt_recipe_set(&rc, "batch=8"));
    CHECK_OK(vt_recipe_set(&rc, "optimizer=adam"));
    CHECK_OK(vt_recipe_validate(&rc));
    vt_model m;
    CHECK_OK(vt_model_init(&m, &rc, ds.n, VT_ORDER_BLAS));
    if (!m.state) {
        vt_data_free(&ds);
        return;
    }
    const unsigned csr = _mm_getcsr();
    vt_steplog log;
    vt_steplog_init(&log, 0);
    vt_step_args a;
    memset(&a, 0, sizeof a);
    a.party = VT_PARTY_TRAINER, a.log = &log;
    /* FTZ set before the step: refused at once, nothing computed */
    _mm_setcsr(csr | 0x8040u);
    e = vt_step_run(&m, &ds, &a);
    _mm_setcsr(csr);
    CHECK(e == VT_ERR_ENV && strstr(vt_errmsg(), "FTZ") != NULL, "step under FTZ: %d %s", (int)e, vt_errmsg());
    CHECK(m.step == 0, "no step was taken (step %llu)", (unsigned long long)m.step);
    /* FTZ set during the step, for each party: refused (the auditor does not redo the step as an
     * unusable log, nor call it a fault) */
    static const vt_party parties[] = {VT_PARTY_TRAINER, VT_PARTY_AUDITOR};
    for (int pi = 0; pi < 2; pi++) {
        vt_model m2;
        CHECK_OK(vt_model_init(&m2, &rc, ds.n, VT_ORDER_BLAS));
        if (!m2.state) break;
        vt_steplog_reset(&log, 1);
        if (parties[pi] == VT_PARTY_AUDITOR) { /* the auditor replays the trainer's log of step 1 */
            vt_step_args t;
            memset(&t, 0, sizeof t);
            t.party = VT_PARTY_TRAINER, t.log = &log;
            vt_model m3;
            CHECK_OK(vt_model_init(&m3, &rc, ds.n, VT_ORDER_BLAS));
            if (m3.state) CHECK_OK(vt_step_run(&m3, &ds, &t));
            vt_model_free(&m3);
        }
        ftz_hook_ctx h = {3, csr};
        vt_fault fault;
        int disputed = -1, unusable = -1;
        vt_step_args b;
        memset(&b, 0, sizeof b);
        b.party = parties[pi], b.log = &log, b.hook = ftz_hook, b.hook_ctx = &h, b.fault = &fault;
        b.disputed = &disputed, b.unusable = &unusable;
        e = vt_step_run(&m2, &ds, &b);
        _mm_setcsr(csr);
        CHECK(e == VT_ERR_ENV && strstr(vt_errmsg(), "FTZ") != NULL, "party %d, FTZ set during the step: %d %s",
              (int)parties[pi], (int)e, vt_errmsg());
        CHECK(unusable == 0, "party %d: an environment failure is not an unusable log", (int)parties[pi]);
        vt_model_free(&m2);
    }
    /* the judgement of an operation: ops 1..j of step 1 run, then operation j judged; with the
     * trainer's true output hash the auditor loses - under FTZ, nobody does (cannot judge) */
    uint32_t j = 0;
    for (uint32_t k = 1; k <= m.n_ops && !j; k++)
        if (vt_opkind_get(m.prog.op[k].kind)->rounded) j = k;
    CHECK(j > 0, "a rounded operation");
    vt_steplog_reset(&log, 1);
    a.upto = j;
    CHECK_OK(vt_step_run(&m, &ds, &a));
    uint8_t ht[32], ha[32];
    memset(ha, 0xa5, sizeof ha);
    CHECK_OK(vt_model_output_hash(&m, j, ht));
    vt_judgement jd;
    vt_game_judge_op(&m, &ds, 1, j, NULL, ht, ha, &jd);
    CHECK(jd.loser == VT_LOSER_AUDITOR, "normal environment: loser %d (%s)", jd.loser, jd.why);
    _mm_setcsr(csr | 0x8040u);
    vt_game_judge_op(&m, &ds, 1, j, NULL, ht, ha, &jd);
    _mm_setcsr(csr);
    CHECK(jd.loser == VT_LOSER_NONE && jd.reason == VT_REASON_CANNOT_JUDGE && strstr(jd.why, "FTZ") != NULL,
          "judgement under FTZ: loser %d reason %d: %s", jd.loser, jd.reason, jd.why);
    printf("judgement under FTZ: %s\n", jd.why);
    vt_steplog_free(&log);
    vt_model_free(&m);
    vt_data_free(&ds);
}
#endif

int main(void)
{
    expect_ok("normal environment");
    CHECK(vt_env_cli_check("test_env") == 0, "the programs' start-up check passes");
    CHECK(vt_cli_exit_for(VT_ERR_ENV) == VT_EXIT_CANNOT, "VT_ERR_ENV is exit status 2 (cannot check)");
    CHECK(strcmp(vt_err_name(VT_ERR_ENV), "unknown") != 0, "VT_ERR_ENV has a name");
    rounding_modes();
#ifdef HAVE_MXCSR
    mxcsr_modes();
    drivers();
#else
    printf("no MXCSR on this architecture: FTZ/DAZ parts skipped\n");
    if (vt_test_failed == 0) {
        vt_test_finish("test_env");
        return 77;
    }
#endif
    expect_ok("at the end");
    return vt_test_finish("test_env");
}
