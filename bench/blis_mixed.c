/* blis_mixed.c - issue 27 item 2's evaluation of BLIS's mixed-datatype gemm against what vt_gemm
 * does (docs/benchmarks.md "Fused passes"): C (FP64) = A (FP32) B (FP32), computed in double.
 *
 *   ours   the operands converted to FP64 with the Cauchy-Schwarz norms of the bound (vt_gemm's
 *          conversion: one pass per operand), then OpenBLAS cblas_dgemm
 *   conv   the conversion alone, no norms, then OpenBLAS cblas_dgemm
 *   blis   bli_gemm on FP32 objects A, B and an FP64 object C with computation precision double:
 *          BLIS converts while it packs (no FP64 copy of the operands, no norms)
 *   blisd  bli_gemm in double on the converted operands (BLIS's own dgemm kernel, for reference)
 *
 * Not part of the build (it needs Debian's libblis-dev beside OpenBLAS; cblas_dgemm resolves to
 * OpenBLAS, linked first, the bli_ calls to BLIS):
 *   gcc -O2 -ffp-contract=off -o blis_mixed bench/blis_mixed.c -I/usr/include/x86_64-linux-gnu \
 *       -L/usr/lib/x86_64-linux-gnu/openblas-pthread -lopenblas \
 *       /usr/lib/x86_64-linux-gnu/blis-pthread/libblis.so.4 -lm
 *   OPENBLAS_NUM_THREADS=1 BLIS_NUM_THREADS=1 ./blis_mixed
 * Per shape: thread CPU time per product (best of 7), GFLOP/s, and the largest |difference| between
 * BLIS's mixed result and ours relative to sum |a b| (FP64 summation differences are about 1e-16;
 * FP32 arithmetic would show about 1e-7). */
#include <blis.h>
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double clk(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void cvt(const float *s, size_t n, double *d, double *norm, size_t cols)
{
    if (norm)
        for (size_t c = 0; c < cols; c++) norm[c] = 0.0;
    for (size_t i = 0; i < n; i++) {
        double x = (double)s[i];
        d[i] = x;
        if (norm) norm[i % cols] += x * x;
    }
}

int main(void)
{
    /* shapes of the three models' GEMMs (M, N, K, row-major, no transposes) and a square one */
    static const struct { const char *name; int M, N, K; } S[] = {
        {"MLP layer 1 forward (64 x 128, K 784)", 64, 128, 784},
        {"CNN conv forward, stage 1 (16384 x 16, K 144)", 16384, 16, 144},
        {"CNN conv forward, stage 3 (1024 x 64, K 576)", 1024, 64, 576},
        {"GPT FFN (1024 x 512, K 128)", 1024, 512, 128},
        {"GPT FFN down (1024 x 128, K 512)", 1024, 128, 512},
        {"square 512^3", 512, 512, 512},
    };
    printf("| shape | ours: ms | GFLOP/s | conversion + dgemm: ms | BLIS mixed: ms | GFLOP/s | BLIS dgemm: ms | BLIS mixed / ours | max rel. diff |\n");
    printf("|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for (size_t s = 0; s < sizeof S / sizeof S[0]; s++) {
        const int M = S[s].M, N = S[s].N, K = S[s].K;
        float *A = malloc(sizeof(float) * M * K), *B = malloc(sizeof(float) * K * N);
        double *A64 = malloc(sizeof(double) * M * K), *B64 = malloc(sizeof(double) * K * N);
        double *C = malloc(sizeof(double) * M * N), *C2 = malloc(sizeof(double) * M * N);
        double *rn = malloc(sizeof(double) * M), *cn = malloc(sizeof(double) * N);
        unsigned r = 12345;
        for (int i = 0; i < M * K; i++) r = r * 1103515245u + 12345u, A[i] = (float)((double)(r >> 8) / 16777216.0 - 0.5);
        for (int i = 0; i < K * N; i++) r = r * 1103515245u + 12345u, B[i] = (float)((double)(r >> 8) / 16777216.0 - 0.5);
        double best[4] = {1e30, 1e30, 1e30, 1e30};
        obj_t a, b, c, ad, bd;
        bli_obj_create_with_attached_buffer(BLIS_FLOAT, M, K, A, K, 1, &a);
        bli_obj_create_with_attached_buffer(BLIS_FLOAT, K, N, B, N, 1, &b);
        bli_obj_create_with_attached_buffer(BLIS_DOUBLE, M, N, C2, N, 1, &c);
        bli_obj_create_with_attached_buffer(BLIS_DOUBLE, M, K, A64, K, 1, &ad);
        bli_obj_create_with_attached_buffer(BLIS_DOUBLE, K, N, B64, N, 1, &bd);
        for (int rep = 0; rep < 7; rep++) {
            double t0 = clk();
            for (int i = 0; i < M; i++) {
                double q = 0.0;
                for (int k = 0; k < K; k++) {
                    double x = (double)A[i * K + k];
                    A64[i * K + k] = x;
                    q += x * x;
                }
                rn[i] = sqrt(q);
            }
            cvt(B, (size_t)K * N, B64, cn, (size_t)N);
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N, K, 1.0, A64, K, B64, N, 0.0, C, N);
            double t1 = clk();
            cvt(A, (size_t)M * K, A64, NULL, 1);
            cvt(B, (size_t)K * N, B64, NULL, 1);
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N, K, 1.0, A64, K, B64, N, 0.0, C, N);
            double t2 = clk();
            bli_obj_set_comp_prec(BLIS_DOUBLE_PREC, &c);
            bli_gemm(&BLIS_ONE, &a, &b, &BLIS_ZERO, &c);
            double t3 = clk();
            bli_gemm(&BLIS_ONE, &ad, &bd, &BLIS_ZERO, &c);
            double t4 = clk();
            double t[4] = {t1 - t0, t2 - t1, t3 - t2, t4 - t3};
            for (int q = 0; q < 4; q++)
                if (t[q] < best[q]) best[q] = t[q];
        }
        /* the mixed result once more, against ours, relative to sum |a b| */
        bli_gemm(&BLIS_ONE, &a, &b, &BLIS_ZERO, &c);
        double worst = 0.0;
        for (int i = 0; i < M; i++)
            for (int j = 0; j < N; j++) {
                double sa = 0.0;
                for (int k = 0; k < K; k++) sa += fabs((double)A[i * K + k] * (double)B[k * N + j]);
                double d = fabs(C[i * N + j] - C2[i * N + j]) / (sa > 0 ? sa : 1);
                if (d > worst) worst = d;
            }
        double fl = 2.0 * M * N * (double)K;
        printf("| %s | %.3f | %.1f | %.3f | %.3f | %.1f | %.3f | %.2f | %.1e |\n", S[s].name, best[0] * 1e3,
               fl / best[0] * 1e-9, best[1] * 1e3, best[2] * 1e3, fl / best[2] * 1e-9, best[3] * 1e3,
               best[2] / best[0], worst);
        free(A), free(B), free(A64), free(B64), free(C), free(C2), free(rn), free(cn);
    }
    return 0;
}
