/* bench_verify_step.c - the yardstick of the dispute game's figures (docs/benchmarks.md "Dispute
 * game"): one whole verifiable training step of a run's model in the trainer's order (BLAS), timed
 * in-process as the arbiter's own computation is: the median of 5 steps after 2 warm-up steps, on
 * the wall clock. The model, its recipe and its dataset come from the run directory's manifest, as
 * the arbiter's game takes them (the arbiter's own dataset files under --data-root).
 *
 * Usage: bench_verify_step RUN_DIR [--data-root DIR]
 * Prints one line: STEP seconds */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BENCH_NAME "bench_verify_step"
#include "bench_util.h"
#include "data/vt_data.h"
#include "model/vt_model.h"
#include "rounding/vt_round.h"
#include "run/vt_train.h"
#include "store/vt_store.h"

int main(int argc, char **argv)
{
    const char *run_dir = NULL, *data_root = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--data-root") == 0 && i + 1 < argc) data_root = argv[++i];
        else if (!run_dir && argv[i][0] != '-') run_dir = argv[i];
        else run_dir = NULL, i = argc;
    }
    if (!run_dir) {
        fprintf(stderr, "usage: bench_verify_step RUN_DIR [--data-root DIR]\n");
        return 64;
    }
    vt_store *st;
    char *man;
    size_t man_len;
    uint8_t mh[32], dh[32];
    vt_recipe rcp;
    TRY(vt_store_open(run_dir, 1, &st));
    TRY(vt_store_manifest(st, &man, &man_len, mh));
    vt_store_close(st);
    TRY(vt_manifest_parse(man, man_len, &rcp, dh));
    free(man);
    char spec[VT_RECIPE_SPEC_MAX];
    vt_recipe_dataset_spec(&rcp, spec, sizeof spec);
    vt_dataset ds;
    TRY(vt_data_load(spec, data_root, &ds));
    vt_model sm;
    TRY(vt_model_init(&sm, &rcp, ds.n, VT_ORDER_BLAS)); /* a trainer's step (its default order) */
    double t[7];
    vt_steplog log;
    vt_steplog_init(&log, 0);
    for (int i = 0; i < 7; i++) {
        vt_rctx rctx;
        vt_rctx_init(&rctx, VT_RMODE_RECORD, rcp.bound);
        float loss;
        double t0 = vt_now();
        TRY(vt_rctx_begin_step(&rctx, sm.step + 1, &log));
        TRY(vt_model_step(&sm, &ds, &rctx, &loss));
        t[i] = vt_now() - t0;
    }
    for (int i = 2; i < 7; i++) /* insertion sort of the 5 timed after 2 warm-up steps */
        for (int k = i; k > 2 && t[k] < t[k - 1]; k--) {
            double x = t[k];
            t[k] = t[k - 1], t[k - 1] = x;
        }
    printf("STEP %.6f\n", t[4]);
    vt_steplog_free(&log);
    vt_model_free(&sm);
    vt_data_free(&ds);
    return 0;
}
