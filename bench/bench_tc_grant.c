/* bench_tc_grant.c - what the arbiter grants one step of a recipe in each GEMM arithmetic (docs/dispute.md
 * "Clocks", docs/benchmarks.md "Work grants by arithmetic"): the weights calibrated here as `arbiter
 * serve` calibrates them at start-up (vt_game_arith_setup), the step's flop (vt_game_cost, the GEMMs
 * weighed), and the seconds granted at the rate floor. bench/tc_grant.sh sets these against the
 * measured seconds a step.
 *
 * Usage: bench_tc_grant [--recipe FILE] [--set key=value]... [--min-mflops N] [--no-calibrate]
 * Prints one line per mode: GRANT mode weight how step_flop gemm_flop granted_s_per_step */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BENCH_NAME "bench_tc_grant"
#include "bench_util.h"
#include "cli/vt_cli_opts.h"
#include "game/vt_game.h"
#include "ops/vt_ops.h"

int main(int argc, char **argv)
{
    const char *bad = NULL; /* as the programs start: --threads, and a one-thread BLAS (cli/vt_cli_opts.h) */
    if (vt_cli_take_threads(&argc, argv, &bad)) return 64;
    vt_recipe rcp;
    vt_recipe_default(&rcp);
    double mflops = VT_GAME_MIN_RATE / 1e6;
    int no_cal = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--recipe") == 0 && i + 1 < argc) TRY(vt_recipe_load_file(&rcp, argv[++i]));
        else if (strcmp(argv[i], "--set") == 0 && i + 1 < argc) TRY(vt_recipe_set(&rcp, argv[++i]));
        else if (strcmp(argv[i], "--min-mflops") == 0 && i + 1 < argc) mflops = atof(argv[++i]);
        else if (strcmp(argv[i], "--no-calibrate") == 0) no_cal = 1;
        else {
            fprintf(stderr, "usage: bench_tc_grant [--recipe FILE] [--set key=value]... [--min-mflops N] "
                            "[--no-calibrate]\n");
            return 64;
        }
    }
    vt_game_arith a;
    TRY(vt_game_arith_setup(NULL, no_cal, &a));
    vt_game_limits lim;
    memset(&lim, 0, sizeof lim);
    for (int v = 0; v < a.n_modes; v++) lim.arith_factor[v] = a.factor[v];
    if (a.fp64_s > 0) printf("calibration: the FP64 path's fastest GEMM of %d x %d x %d %.3f ms (CPU time)\n",
                             VT_ARITH_CAL_M, VT_ARITH_CAL_N, VT_ARITH_CAL_K, a.fp64_s * 1e3);
    for (int v = 0; v < a.n_modes; v++) {
        vt_recipe r = rcp;
        r.gemm_arith = v;
        vt_game_needs n;
        vt_game_cost(&r, 0, &lim, &n);
        printf("GRANT %s %.3f %s %.6g %.6g %.4f\n", vt_gemm_arith_names[v], v ? a.factor[v] : 1.0,
               v == 0 ? "unit" : a.how[v] == VT_ARITH_CALIBRATED ? "calibrated" : "default", n.step_flop, n.gemm_flop,
               n.step_flop / (mflops * 1e6));
    }
    return 0;
}
