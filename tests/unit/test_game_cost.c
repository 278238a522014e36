/* test_game_cost - the work grant weighs a GEMM by its arithmetic (game/vt_game.h vt_game_cost,
 * vt_game_arith; docs/dispute.md "Clocks").
 *
 *  1. vt_game_cost of a recipe in a tc-* mode is the same recipe's fp64 cost with its GEMMs' flop
 *     (matmul and batched_matmul, computed here from the operations' arguments: 2 M N K, 2 G M N K)
 *     multiplied by the mode's weight; the fp64 recipe's cost ignores the weights; no weight (NULL
 *     limits or 0) is weight 1; the memory and the largest operation are not weighed. MLP, CNN
 *     (convolutions as GEMMs) and GPT (attention's batched GEMMs).
 *  2. --tc-factor's parser: MODE=X with X >= 1 in whole thousandths (rounded up); fp64, unknown modes,
 *     X < 1, junk refused.
 *  3. The weights round-trip through their transcript note exactly; --no-calibrate's defaults are >= 1;
 *     a calibration gives every tc-* mode a weight > 1 (the portable emulator costs more per flop
 *     than the FP64 GEMM path). No time is asserted. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../game/vt_game.h"
#include "../../model/vt_model.h"
#include "../../ops/vt_ops.h"
#include "vt_test.h"

/* The GEMMs' flop of the recipe's program, from the operations' arguments; in a tensor-core mode the
 * input gradient of step programs 2 and 3 is the dense GEMM G x W' (conv2d_tc), and *dense_max the
 * largest such, *tc_floats the largest FP32 operands a convolution forms there (else 0). */
static double gemm_flop(const vt_recipe *rc, double *dense_max, double *tc_floats)
{
    vt_program p;
    *dense_max = *tc_floats = 0;
    if (vt_program_build(rc, &p) != VT_OK) return -1;
    double g = 0;
    for (uint32_t j = 1; j <= p.n_ops; j++) {
        const int64_t *a = p.op[j].iarg;
        const uint16_t kd = p.op[j].kind;
        if (kd == VT_OPK_MATMUL) g += 2.0 * (double)a[2] * (double)a[3] * (double)a[4];
        if (kd == VT_OPK_BMM) g += 2.0 * (double)a[0] * (double)a[1] * (double)a[2] * (double)a[3];
        if (kd == VT_OPK_CONV2D || kd == VT_OPK_CONV2D_WGRAD || kd == VT_OPK_CONV2D_DGRAD) {
            /* B H W C k stride pad chw Co: 2 M K Co, M the output pixels and K = k k C (the input gradient:
             * the same products, B H W rows of k k Co; in the mode the dense G x W', every pixel) */
            double Ho = (double)((a[1] + 2 * a[6] - a[4]) / a[5] + 1), Wo = (double)((a[2] + 2 * a[6] - a[4]) / a[5] + 1);
            double M = (double)a[0] * Ho * Wo, P = (double)a[0] * (double)a[1] * (double)a[2], kk = (double)(a[4] * a[4]);
            double f = 2.0 * M * kk * (double)a[3] * (double)a[8], fl = M * kk * (double)a[3];
            if (kd == VT_OPK_CONV2D_DGRAD && rc->gemm_arith) {
                f = 2.0 * P * kk * (double)a[8] * (double)a[3];
                fl = P * kk * (double)a[8] + kk * (double)a[8] * (double)a[3];
                if (f > *dense_max) *dense_max = f;
            }
            g += f;
            if (rc->gemm_arith && fl > *tc_floats) *tc_floats = fl;
        }
    }
    vt_program_free(&p);
    return g;
}

static void check_recipe(const char *name, const vt_recipe *fp)
{
    const double factors[] = {1.0, 1.5, 37.125, 1000.0};
    vt_game_needs f0, f1;
    vt_game_cost(fp, 0, NULL, &f0);
    double dense, floats;
    double G = gemm_flop(fp, &dense, &floats);
    CHECK(G > 0 && G < f0.step_flop, "%s: GEMM flop %g of %g", name, G, f0.step_flop);
    for (int v = 1; vt_gemm_arith_names[v]; v++) {
        vt_recipe tc = *fp;
        char set[64];
        snprintf(set, sizeof set, "gemm_arith=%s", vt_gemm_arith_names[v]);
        CHECK_OK(vt_recipe_set(&tc, set));
        /* the mode's GEMMs: program 1's (and the GPT's) the same; programs 2 and 3 of the CNN form their
         * convolutions' operands, the input gradient's GEMM dense */
        const double Gt = gemm_flop(&tc, &dense, &floats);
        CHECK(Gt >= G && (Gt == G) == (dense == 0), "%s %s: GEMM flop %g, fp64 %g", name, vt_gemm_arith_names[v], Gt, G);
        const uint64_t want_bytes = f0.bytes + (uint64_t)(4.0 * floats);
        const uint64_t want_op = dense > (double)f0.op_flop ? (uint64_t)dense : f0.op_flop;
        for (size_t i = 0; i < sizeof factors / sizeof factors[0]; i++) {
            vt_game_limits lim;
            memset(&lim, 0, sizeof lim);
            for (int u = 0; u < VT_GAME_ARITH_MAX; u++) lim.arith_factor[u] = u == v ? factors[i] : 1e3 + u;
            vt_game_needs t;
            vt_game_cost(&tc, 0, &lim, &t);
            double want = f0.step_flop - G + factors[i] * Gt;
            CHECK(fabs(t.step_flop - want) <= 1e-12 * want, "%s %s x %g: step flop %.17g, want %.17g", name,
                  vt_gemm_arith_names[v], factors[i], t.step_flop, want);
            CHECK(t.gemm_flop == Gt && t.arith_factor == factors[i], "%s %s: gemm_flop %g factor %g", name,
                  vt_gemm_arith_names[v], t.gemm_flop, t.arith_factor);
            CHECK(t.bytes == want_bytes && t.op_flop == want_op,
                  "%s %s: memory %llu (want %llu) or the largest operation %llu (want %llu)", name,
                  vt_gemm_arith_names[v], (unsigned long long)t.bytes, (unsigned long long)want_bytes,
                  (unsigned long long)t.op_flop, (unsigned long long)want_op);
            vt_game_cost(fp, 0, &lim, &f1); /* fp64: the weights do not apply */
            CHECK(f1.step_flop == f0.step_flop && f1.arith_factor == 1.0, "%s fp64 weighed: %.17g vs %.17g", name,
                  f1.step_flop, f0.step_flop);
        }
        vt_game_limits zero;
        memset(&zero, 0, sizeof zero);
        vt_game_needs a, b;
        vt_game_cost(&tc, 0, &zero, &a);
        vt_game_cost(&tc, 0, NULL, &b);
        const double w1 = f0.step_flop - G + Gt; /* weight 1: the mode's GEMMs at fp64's price */
        CHECK(fabs(a.step_flop - w1) <= 1e-12 * w1 && a.step_flop == b.step_flop, "%s %s: no weight is not weight 1",
              name, vt_gemm_arith_names[v]);
    }
}

static void check_parse(void)
{
    double f[VT_GAME_ARITH_MAX] = {0};
    CHECK_OK(vt_game_arith_parse("tc-fp16-sm80=40", f));
    CHECK(f[4] == 40.0, "tc-fp16-sm80=40: %g", f[4]);
    CHECK_OK(vt_game_arith_parse("tc-bf16-sm90=1.0001", f));
    CHECK(f[1] == 1.001, "rounded up to thousandths: %.17g", f[1]);
    CHECK_OK(vt_game_arith_parse("tc-e4m3-sm90=1", f));
    CHECK(f[5] == 1.0, "1 accepted: %g", f[5]);
    const char *bad[] = {"tc-fp16-sm80=0.999", "tc-fp16-sm80=0", "tc-fp16-sm80=-3", "fp64=2", "tc-fp16-sm70=2",
                         "tc-fp16-sm80", "tc-fp16-sm80=", "tc-fp16-sm80=4x", "tc-fp16-sm80=nan", "=3",
                         "tc-fp16-sm80=1e7"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        double g[VT_GAME_ARITH_MAX] = {0};
        CHECK(vt_game_arith_parse(bad[i], g) == VT_ERR_ARG, "--tc-factor %s accepted", bad[i]);
        for (int u = 0; u < VT_GAME_ARITH_MAX; u++) CHECK(g[u] == 0, "--tc-factor %s set a weight", bad[i]);
    }
}

static void check_notes(void)
{
    double over[VT_GAME_ARITH_MAX] = {0, 2.5, 1.0, 77.777, 1234.5, 3.001, 40.5};
    vt_game_arith a;
    CHECK_OK(vt_game_arith_setup(over, 0, &a));
    CHECK(a.fp64_s == 0, "every mode overridden: no calibration");
    vt_game_limits lim;
    memset(&lim, 0, sizeof lim);
    for (int v = 1; v < a.n_modes; v++) {
        vt_msg_note nt;
        vt_game_arith_note(&a, v, &nt);
        CHECK(nt.kind == VT_NOTE_ARITH && nt.code == v && nt.n == VT_ARITH_OVERRIDE, "note of %d", v);
        CHECK_OK(vt_game_arith_from_note(&nt, &lim));
        CHECK(lim.arith_factor[v] == a.factor[v] && a.factor[v] == over[v], "mode %d: %.17g %.17g %.17g", v,
              lim.arith_factor[v], a.factor[v], over[v]);
        nt.v[0] = 999;
        CHECK(vt_game_arith_from_note(&nt, &lim) == VT_ERR_FORMAT, "a recorded weight below 1 accepted");
        nt.v[0] = 2000, nt.code = 0;
        CHECK(vt_game_arith_from_note(&nt, &lim) == VT_ERR_FORMAT, "a recorded weight of fp64 accepted");
    }
    over[2] = 0.5;
    CHECK(vt_game_arith_setup(over, 0, &a) == VT_ERR_ARG, "an override below 1 accepted");
    CHECK_OK(vt_game_arith_setup(NULL, 1, &a));
    const double documented[] = {1, 40, 40, 50, 50, 40, 40}; /* docs/dispute.md "Clocks", arbiter --help */
    CHECK(a.n_modes == 7, "%d modes: the documented defaults need updating", a.n_modes);
    for (int v = 1; v < a.n_modes && v < 7; v++)
        CHECK(vt_arith_default_factor[v] == documented[v], "the default of %s is %g, documented %g",
              vt_gemm_arith_names[v], vt_arith_default_factor[v], documented[v]);
    for (int v = 1; v < a.n_modes; v++)
        CHECK(a.factor[v] >= 1 && a.factor[v] == vt_arith_default_factor[v] && a.how[v] == VT_ARITH_DEFAULT,
              "default of %d: %g", v, a.factor[v]);
    /* a calibration: every tc-* mode weighs more than an FP64 flop, recorded and read back exactly */
    double one[VT_GAME_ARITH_MAX] = {0, 0, 0, 0, 0, 7.0};
    CHECK_OK(vt_game_arith_setup(one, 0, &a));
    CHECK(a.fp64_s > 0 && a.how[5] == VT_ARITH_OVERRIDE && a.factor[5] == 7.0, "the override beside the calibration");
    for (int v = 1; v < 5; v++) {
        CHECK(a.how[v] == VT_ARITH_CALIBRATED && a.factor[v] > 1 && a.tc_s[v] > 0, "calibrated %s: %g",
              vt_gemm_arith_names[v], a.factor[v]);
        vt_msg_note nt;
        vt_game_arith_note(&a, v, &nt);
        memset(&lim, 0, sizeof lim);
        CHECK_OK(vt_game_arith_from_note(&nt, &lim));
        CHECK(lim.arith_factor[v] == a.factor[v], "%s: recorded %.17g, used %.17g", vt_gemm_arith_names[v],
              lim.arith_factor[v], a.factor[v]);
        printf("%s\n", nt.text);
    }
}

int main(void)
{
    vt_recipe mlp, cnn, gpt;
    vt_recipe_default(&mlp);
    CHECK_OK(vt_recipe_set(&mlp, "layers=[784,256,128,10]"));
    check_recipe("mlp", &mlp);
    vt_recipe_default(&cnn);
    CHECK_OK(vt_recipe_load_file(&cnn, "recipes/resnet-cifar10.json"));
    check_recipe("cnn", &cnn);
    vt_recipe cnn3 = cnn; /* step program 3: the conv2d kinds are its GEMMs (issue 42) */
    CHECK_OK(vt_recipe_set(&cnn3, "program_version=3"));
    check_recipe("cnn program 3", &cnn3);
    vt_recipe_default(&gpt);
    CHECK_OK(vt_recipe_load_file(&gpt, "recipes/gpt-shakespeare.json"));
    check_recipe("gpt", &gpt);
    check_parse();
    check_notes();
    return vt_test_finish("test_game_cost");
}
