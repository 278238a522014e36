/* test_learns.c - the verifiable step actually trains: a short run of the default MLP recipe
 * (784-128-10, SGD with momentum, batch 64) on mnist-train, in memory (record-mode rounding
 * context, no run store), must reach an accuracy on mnist-test (first 2000 images) far above
 * chance (0.10). The plain FP64 and FP32 baselines (model/vt_plain.h) must learn as well.
 * Under the sanitizer build (VT_ASAN=1) fewer steps and a lower threshold. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/vt_cli.h"
#include "../../data/vt_data.h"
#include "../../model/vt_model.h"
#include "../../model/vt_plain.h"
#include "../../rounding/vt_round.h"
#include "vt_test.h"

#define TEST_EXAMPLES 2000

static int run_verifiable(const vt_recipe *rc, const vt_dataset *train, const vt_dataset *test, double *acc,
                          float *first_loss, float *last_loss, uint64_t *logged)
{
    vt_model m;
    vt_steplog log;
    vt_rctx ctx;
    int ok = 0;
    vt_steplog_init(&log, 0);
    CHECK_OK(vt_model_init(&m, rc, train->n, VT_ORDER_BLAS));
    if (m.state == NULL) goto out;
    vt_rctx_init(&ctx, VT_RMODE_RECORD, rc->bound);
    for (uint64_t s = 1; s <= rc->steps; s++) {
        float loss = 0;
        vt_err e = vt_rctx_begin_step(&ctx, s, &log);
        if (!e) e = vt_model_step(&m, train, &ctx, &loss);
        if (!e) e = vt_rctx_end_step(&ctx);
        if (e) {
            CHECK(0, "verifiable step %llu failed: %s", (unsigned long long)s, vt_errmsg());
            goto out;
        }
        if (s == 1) *first_loss = loss;
        *last_loss = loss;
    }
    *logged = ctx.stats.logged_dir + ctx.stats.logged_val;
    CHECK_OK(vt_model_accuracy(&m, test, TEST_EXAMPLES, acc));
    ok = 1;
out:
    vt_model_free(&m);
    vt_steplog_free(&log);
    return ok;
}

static int run_plain(const vt_recipe *rc, int fp64, const vt_dataset *train, const vt_dataset *test, double *acc,
                     double *first_loss, double *last_loss)
{
    vt_plain p;
    int ok = 0;
    CHECK_OK(vt_plain_init(&p, rc, train->n, fp64));
    if (p.arena[0] == NULL) return 0;
    for (uint64_t s = 1; s <= rc->steps; s++) {
        double loss = 0;
        vt_err e = vt_plain_step(&p, train, &loss);
        if (e) {
            CHECK(0, "plain %s step %llu failed: %s", fp64 ? "FP64" : "FP32", (unsigned long long)s, vt_errmsg());
            goto out;
        }
        if (s == 1) *first_loss = loss;
        *last_loss = loss;
    }
    CHECK_OK(vt_plain_accuracy(&p, test, TEST_EXAMPLES, acc));
    ok = 1;
out:
    vt_plain_free(&p);
    return ok;
}

int main(void)
{
    const char *asan = getenv("VT_ASAN");
    const int sanitized = asan && *asan && strcmp(asan, "0") != 0;
    const uint64_t steps = sanitized ? 100 : 300;
    const double threshold = sanitized ? 0.60 : 0.85;

    vt_dataset train, test;
    memset(&train, 0, sizeof train);
    memset(&test, 0, sizeof test);
    vt_err e1 = vt_data_load("mnist-train", NULL, &train);
    CHECK(e1 == VT_OK, "load mnist-train: %s", vt_errmsg());
    vt_err e2 = e1 ? e1 : vt_data_load("mnist-test", NULL, &test);
    CHECK(e2 == VT_OK, "load mnist-test: %s", vt_errmsg());
    if (e1 || e2) goto done;

    vt_recipe rc;
    vt_recipe_default(&rc); /* 784-128-10, SGD momentum 0.9, lr 0.05, batch 64 */
    rc.steps = steps;
    CHECK_OK(vt_recipe_validate(&rc));
    printf("recipe: %u-%u-%u, batch %u, SGD momentum %.2f, lr %.3f, %llu steps%s\n", rc.widths[0], rc.widths[1],
           rc.widths[2], rc.batch, rc.momentum, rc.lr, (unsigned long long)steps, sanitized ? " (sanitizer build)" : "");

    double acc = 0, t0 = vt_now();
    float fl = 0, ll = 0;
    uint64_t logged = 0;
    if (run_verifiable(&rc, &train, &test, &acc, &fl, &ll, &logged)) {
        printf("verifiable (record mode): loss %.4f -> %.4f, %llu log entries, accuracy %.4f on %d test images "
               "(%.1f s)\n",
               (double)fl, (double)ll, (unsigned long long)logged, acc, TEST_EXAMPLES, vt_now() - t0);
        CHECK(acc >= threshold, "verifiable model accuracy %.4f below %.2f (chance 0.10)", acc, threshold);
        CHECK(ll < fl, "verifiable loss did not decrease: %.4f -> %.4f", (double)fl, (double)ll);
    }
    for (int fp64 = 1; fp64 >= 0; fp64--) {
        double pacc = 0, pf = 0, pl = 0;
        t0 = vt_now();
        if (!run_plain(&rc, fp64, &train, &test, &pacc, &pf, &pl)) continue;
        printf("plain %s: loss %.4f -> %.4f, accuracy %.4f on %d test images (%.1f s)\n", fp64 ? "FP64" : "FP32", pf,
               pl, pacc, TEST_EXAMPLES, vt_now() - t0);
        CHECK(pacc >= threshold, "plain %s accuracy %.4f below %.2f (chance 0.10)", fp64 ? "FP64" : "FP32", pacc,
              threshold);
        CHECK(pl < pf, "plain %s loss did not decrease: %.4f -> %.4f", fp64 ? "FP64" : "FP32", pf, pl);
        /* same recipe, same data order, same initial parameters: the same first-step loss up
         * to the working precision, and an accuracy close to the verifiable model's */
        CHECK(pf > 0.9 * (double)fl && pf < 1.1 * (double)fl, "plain first loss %.4f far from verifiable %.4f", pf,
              (double)fl);
        CHECK(pacc > acc - 0.05 && pacc < acc + 0.05, "plain %s accuracy %.4f not close to verifiable %.4f",
              fp64 ? "FP64" : "FP32", pacc, acc);
    }
done:
    vt_data_free(&train);
    vt_data_free(&test);
    return vt_test_finish("test_learns");
}
