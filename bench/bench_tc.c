/* bench_tc - the tensor-core emulator's rate on the CPU (issue 28 item 5; docs/benchmarks.md "Tensor-core
 * mode"): vt_tc_gemm of each model on one thread, in GMAC/s (multiply-adds per second), against the
 * plain FP64 GEMM (cblas_dgemm, one BLAS thread) of the same shape and operands. The clock is the
 * thread's CPU time (bench_util.h; --wall for the wall clock): the machine may be shared. Each figure
 * is the median of --reps runs. Prints a Markdown table.
 * Usage: bench_tc [--reps N] [--wall] [--shape MxNxK]... (default: the MLP's, the CNN's and the GPT's
 * GEMM shapes) */
#define BENCH_NAME "bench_tc"
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench_util.h"
#include "common/vt_par.h"
#include "kernels/vt_tc.h"

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    int reps = 5, ns = 0;
    size_t shapes[16][3];
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc) reps = atoi(argv[++i]);
        else if (strcmp(argv[i], "--wall") == 0) g_cpu_clock = 0;
        else if (strcmp(argv[i], "--shape") == 0 && i + 1 < argc && ns < 16) {
            if (sscanf(argv[++i], "%zux%zux%zu", &shapes[ns][0], &shapes[ns][1], &shapes[ns][2]) != 3) {
                fprintf(stderr, "bench_tc: --shape MxNxK\n");
                return 64;
            }
            ns++;
        } else {
            fprintf(stderr, "usage: bench_tc [--reps N] [--wall] [--shape MxNxK]...\n");
            return 64;
        }
    }
    if (reps < 1 || reps > 1000) reps = 5;
    if (ns == 0) { /* the MLP's first layer (batch 32), a CNN convolution as GEMM, a GPT projection */
        static const size_t def[3][3] = {{32, 128, 784}, {1024, 16, 144}, {128, 192, 64}};
        memcpy(shapes, def, sizeof def);
        ns = 3;
    }
    vt_par_set_threads(1);
    blas_threads(1);
    const vt_tc_arch *models[] = {&vt_tc_sm90_bf16, &vt_tc_sm90_fp16, &vt_tc_sm80_bf16, &vt_tc_sm80_fp16, &vt_tc_sm90_e4m3};
    printf("| shape M x N x K | FP64 dgemm GMAC/s |");
    for (int m = 0; m < 5; m++) printf(" %s GMAC/s |", models[m]->name);
    printf(" emulator / dgemm (bf16 sm90) |\n|---|---|");
    for (int m = 0; m < 6; m++) printf("---|");
    printf("\n");
    for (int s = 0; s < ns; s++) {
        size_t M = shapes[s][0], N = shapes[s][1], K = shapes[s][2];
        float *A = malloc(M * K * 4), *B = malloc(K * N * 4), *C = malloc(M * N * 4);
        double *A64 = malloc(M * K * 8), *B64 = malloc(K * N * 8), *C64 = malloc(M * N * 8), t[1000];
        if (!A || !B || !C || !A64 || !B64 || !C64) return 2;
        uint64_t x = 28;
        for (size_t i = 0; i < M * K + K * N; i++) {
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            float v = (float)((double)(x >> 11) / 9007199254740992.0 - 0.5);
            if (i < M * K) A[i] = v, A64[i] = v;
            else B[i - M * K] = v, B64[i - M * K] = v;
        }
        double macs = (double)M * (double)N * (double)K;
        for (int r = 0; r < reps; r++) {
            double t0 = clk();
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)M, (int)N, (int)K, 1.0, A64, (int)K, B64, (int)N,
                        0.0, C64, (int)N);
            t[r] = clk() - t0;
        }
        qsort(t, (size_t)reps, sizeof t[0], cmp_d);
        double dg = macs / t[reps / 2] / 1e9;
        printf("| %zu x %zu x %zu | %.2f |", M, N, K, dg);
        double bf = 0;
        for (int m = 0; m < 5; m++) {
            for (int r = 0; r < reps; r++) {
                double t0 = clk();
                TRY(vt_tc_gemm(models[m], M, N, K, A, B, C));
                t[r] = clk() - t0;
            }
            qsort(t, (size_t)reps, sizeof t[0], cmp_d);
            double g = macs / t[reps / 2] / 1e9;
            if (m == 0) bf = g;
            printf(" %.3f |", g);
        }
        printf(" %.3f |\n", bf / dg);
        free(A), free(B), free(C), free(A64), free(B64), free(C64);
    }
    return 0;
}
