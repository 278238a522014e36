/* bench_cuda.c - what verifiable training costs on the GPU (docs/benchmarks.md "The CUDA backend"),
 * measured in one run on one GPU, wall clock:
 *
 *   per recipe (the default MLP, and each --recipe FILE):
 *     verifiable   vt_model_run in record mode with the CUDA backend (the GEMMs and their rounding
 *                  on the GPU), rounding=exact and rounding=log, plus the stored log and the state
 *                  hash every H steps (what the trainer commits, minus SQLite)
 *     plain FP64   model/vt_plain.h, double, its GEMMs through cuBLAS DGEMM on the same GPU
 *     plain FP32   the same in float, its GEMMs through cuBLAS SGEMM (CUBLAS_COMPUTE_32F_PEDANTIC:
 *                  no TF32)
 *     overhead     verifiable / plain FP64 (target <= 1.15)
 *   per GEMM shape of the recipe's program (device-resident operands, vt_cuda_time_gemm): the
 *     verifiable GEMM path (widening, panelled DGEMM, norms, screen, compaction, flagged elements)
 *     against the DGEMM alone and the SGEMM; the rate ratio DGEMM / verifiable (target >= 0.70)
 *
 * Skips (exit 77) without a usable GPU. Usage: bench_cuda [--steps N] [--recipe FILE]... [--data-dir DIR] */
#include <math.h>
#include <stdint.h>
#include <string.h>

#define BENCH_NAME "bench_cuda"
#include "bench/bench_util.h"
#include "backend/cuda/vt_cuda.h"
#include "data/vt_data.h"
#include "backend/cuda/vt_backend_open.h"
#include "model/vt_model.h"
#include "model/vt_plain.h"
#include "rounding/vt_round.h"
#include "run/vt_train.h"

static double verif_steps(const vt_recipe *rc0, const vt_dataset *ds, const vt_backend *be, vt_rounding mode, int n,
                          uint64_t *log_bytes)
{
    vt_recipe r = *rc0;
    r.bound.rounding = mode;
    vt_model m;
    TRY(vt_model_init(&m, &r, ds->n, VT_ORDER_BLAS));
    vt_model_set_backend(&m, be);
    vt_rctx rctx;
    vt_rctx_init(&rctx, VT_RMODE_RECORD, r.bound);
    vt_steplog log;
    vt_steplog_init(&log, 0);
    double t0 = 0;
    *log_bytes = 0;
    for (int s = 0; s <= n; s++) { /* step 1: warm-up */
        if (s == 1) t0 = vt_now();
        uint64_t st = m.step + 1;
        TRY(vt_rctx_begin_step(&rctx, st, &log));
        TRY(vt_model_run(&m, ds, &rctx, m.n_ops, NULL, NULL));
        TRY(vt_rctx_end_step(&rctx));
        uint8_t *blob = NULL, h[32];
        size_t len = 0;
        TRY(vt_steplog_encode_stored(&log, m.rcp.zstd_level, &blob, &len, h));
        free(blob);
        if (s >= 1) *log_bytes += len;
        if (vt_recipe_has_state(&m.rcp, st)) TRY(vt_model_state_hash(&m, h));
    }
    double t = (vt_now() - t0) / n;
    vt_steplog_free(&log);
    vt_model_free(&m);
    return t;
}

static double plain_steps(const vt_recipe *rcp, const vt_dataset *ds, const vt_backend *be, int fp64, int n)
{
    vt_plain p;
    TRY(vt_plain_init(&p, rcp, ds->n, fp64));
    p.be = be;
    double loss, t0 = 0;
    for (int s = 0; s <= n; s++) {
        if (s == 1) t0 = vt_now();
        TRY(vt_plain_step(&p, ds, &loss));
    }
    double t = (vt_now() - t0) / n;
    vt_plain_free(&p);
    return t;
}

static void bench_recipe(const char *name, const vt_recipe *rcp, const char *root, const vt_backend *be, int n)
{
    char spec[96];
    vt_recipe_dataset_spec(rcp, spec, sizeof spec);
    vt_dataset ds;
    TRY(vt_data_load(spec, root, &ds));
    uint64_t be_bytes = 0, bl_bytes = 0;
    double te = verif_steps(rcp, &ds, be, VT_ROUNDING_EXACT, n, &be_bytes);
    double tl = verif_steps(rcp, &ds, be, VT_ROUNDING_LOG, n, &bl_bytes);
    double t64 = plain_steps(rcp, &ds, be, 1, n), t32 = plain_steps(rcp, &ds, be, 0, n);
    printf("\n## %s (%d steps each, after one warm-up step)\n\n", name, n);
    printf("| configuration | ms/step | / plain FP64 |\n|---|---|---|\n");
    printf("| verifiable, exact rounding | %.3f | %.3f |\n", te * 1e3, te / t64);
    printf("| verifiable, log rounding (log %.0f B/step) | %.3f | %.3f |\n", (double)bl_bytes / n, tl * 1e3, tl / t64);
    printf("| plain FP64 (cuBLAS DGEMM) | %.3f | 1 |\n", t64 * 1e3);
    printf("| plain FP32 (cuBLAS SGEMM, no TF32) | %.3f | %.3f |\n", t32 * 1e3, t32 / t64);
    /* the GEMM shapes of the program */
    vt_model m;
    TRY(vt_model_init(&m, rcp, ds.n, VT_ORDER_BLAS));
    printf("\n| GEMM (op) | M x N x K | verifiable ms | DGEMM ms | SGEMM ms | DGEMM/verifiable rate | flagged |\n");
    printf("|---|---|---|---|---|---|---|\n");
    for (uint32_t j = 1; j <= m.prog.n_ops; j++) {
        const vt_opdesc *o = &m.prog.op[j];
        if (o->kind != VT_OPK_MATMUL) continue;
        const int64_t *a = o->iarg;
        double tv, td, ts;
        uint64_t nf;
        TRY(vt_cuda_time_gemm((vt_cuda *)be->impl, (int)a[0], (int)a[1], (size_t)a[2], (size_t)a[3], (size_t)a[4], 20,
                              &tv, &td, &ts, &nf));
        printf("| %s | %lld x %lld x %lld | %.4f | %.4f | %.4f | %.2f | %llu |\n", o->name, (long long)a[2],
               (long long)a[3], (long long)a[4], tv * 1e3, td * 1e3, ts * 1e3, td / tv, (unsigned long long)nf);
    }
    vt_model_free(&m);
    vt_data_free(&ds);
}

int main(int argc, char **argv)
{
    int n = 20;
    const char *root = NULL, *recipes[8];
    int nr = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--steps") && i + 1 < argc) n = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--recipe") && i + 1 < argc && nr < 8) recipes[nr++] = argv[++i];
        else if (!strcmp(argv[i], "--data-dir") && i + 1 < argc) root = argv[++i];
        else {
            fprintf(stderr, "usage: bench_cuda [--steps N] [--recipe FILE]... [--data-dir DIR]\n");
            return 64;
        }
    }
    if (n < 1) n = 1;
    vt_backend be;
    vt_err e = vt_backend_open("cuda", &be);
    if (e == VT_ERR_UNSUPPORTED) {
        printf("bench_cuda: skipped: %s\n", vt_errmsg());
        return 77;
    }
    TRY(e);
    printf("# bench_cuda\n\ndevice: %s\n", be.desc);
    vt_recipe rcp;
    vt_recipe_default(&rcp);
    bench_recipe("the default MLP (built-in recipe)", &rcp, root, &be, n);
    for (int r = 0; r < nr; r++) {
        vt_recipe_default(&rcp);
        TRY(vt_recipe_load_file(&rcp, recipes[r]));
        bench_recipe(recipes[r], &rcp, root, &be, n);
    }
    vt_backend_close(&be);
    return 0;
}
