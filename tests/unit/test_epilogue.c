/* The host twin of the GPU's GEMM epilogue (rounding/vt_epilogue.h: the same per-element code
 * the CUDA kernels run, in the same four stages) against the CPU's vt_round: the same FP32 outputs
 * in exact rounding, the same log in log rounding, accepted by the CPU's replay (gemm_check.h). */
#include "gemm_check.h"
#include "rounding/vt_epilogue.h"

static vt_err twin(void *ctx, vt_rctx *rc, uint32_t op, int tA, int tB, size_t M, size_t N, size_t K, const float *A,
                   const float *B, const double *x_alt, float *out)
{
    (void)ctx;
    vt_gemm_epi d = {.A = A, .B = B, .a_si = tA ? 1 : K, .a_sk = tA ? M : 1, .b_sk = tB ? 1 : N, .b_sj = tB ? K : 1,
                     .K = K};
    return vt_epi_host(rc, op, d, x_alt, M, N, out);
}

/* The batched GEMM: vt_epi_host_bmm against vt_round with the bounds ops/vt_fam_gemm.c builds
 * (per batch the Cauchy-Schwarz bound from index-order norms, the batched exact evaluator), on the
 * same FP64 values: the same outputs in exact rounding, the same log in log rounding. Each batch's
 * first rows and columns are crafted near-ties that need the exact evaluation. */
static void bmm_check(uint64_t seed)
{
    static const size_t shapes[][3] = {{3, 6, 5}, {2, 8, 40}, {4, 7, 200}};
    vt_rng rng = {seed ^ 0xb33};
    for (size_t sh = 0; sh < 3; sh++)
        for (int t = 0; t < 4; t++) {
            const size_t G = 3, M = shapes[sh][0] + 4, N = shapes[sh][1], K = shapes[sh][2];
            const int tA = t & 1, tB = t >> 1;
            gc_case c = {M, N, K, sh == 1, 1, 0, 1.0};
            float *A = malloc(G * M * K * sizeof *A), *B = malloc(G * K * N * sizeof *B);
            float *o1 = malloc(G * M * N * sizeof *o1), *o2 = malloc(G * M * N * sizeof *o2);
            double *x = malloc(G * M * N * sizeof *x), *bb = malloc(G * M * N * sizeof *bb);
            double *rn = malloc(M * sizeof *rn), *cn = malloc(N * sizeof *cn);
            if (!A || !B || !o1 || !o2 || !x || !bb || !rn || !cn) {
                CHECK(0, "out of memory");
                return;
            }
            for (size_t g = 0; g < G; g++) {
                gc_fill(&rng, &c, tA, tB, A + g * M * K, B + g * K * N);
                /* batch g's crafted columns scaled by 2^(8g) (the batches' norms differ), and row 5 a
                 * near-tie 2^-44 (relative) from the midpoint: within 2B of it for K = 200, so the
                 * record rule logs it only with this batch's own norms */
                for (size_t j = 0; j < 2; j++)
                    for (size_t k = 0; k < 3; k++) *gc_b(B + g * K * N, tB, N, K, k, j) = (float)ldexp(1.0, 8 * (int)g);
                *gc_a(A + g * M * K, tA, M, K, 5, 2) = 0x1p-44f;
            }
            vt_bound_cfg cfg = {.mode = VT_BOUND_PROVABLE};
            vt_exec e;
            vt_exec_init(&e, VT_ORDER_PAIRWISE, cfg, 0);
            const double coef = vt_bound_coef_red(&cfg, K, K);
            for (size_t g = 0; g < G; g++) { /* as vti_bmm_exec */
                const float *Ag = A + g * M * K, *Bg = B + g * K * N;
                CHECK_OK(vt_gemm_plain(&e, tA, tB, M, N, K, Ag, Bg, x + g * M * N));
                for (size_t i = 0; i < M; i++) {
                    double s = 0;
                    for (size_t k = 0; k < K; k++) {
                        double v = tA ? Ag[k * M + i] : Ag[i * K + k];
                        s += v * v;
                    }
                    rn[i] = sqrt(s);
                }
                for (size_t j = 0; j < N; j++) {
                    double s = 0;
                    for (size_t k = 0; k < K; k++) {
                        double v = tB ? Bg[j * K + k] : Bg[k * N + j];
                        s += v * v;
                    }
                    cn[j] = sqrt(s);
                }
                for (size_t i = 0; i < M; i++)
                    for (size_t j = 0; j < N; j++) bb[g * M * N + i * N + j] = coef * rn[i] * cn[j];
            }
            vt_bounds bd;
            memset(&bd, 0, sizeof bd);
            bd.kind = VT_BOUNDS_ARRAY;
            bd.b = bb;
            bd.xa = A, bd.xa_si = tA ? 1 : K, bd.xa_sj = 0, bd.xa_sk = tA ? M : 1, bd.xa_sg = M * K;
            bd.xb = B, bd.xb_si = 0, bd.xb_sj = tB ? K : 1, bd.xb_sk = tB ? 1 : N, bd.xb_sg = K * N;
            bd.xK = K, bd.x_rpb = M;
            for (int mode = 0; mode < 2; mode++) {
                vt_steplog l1, l2;
                vt_steplog_init(&l1, 7);
                vt_steplog_init(&l2, 7);
                vt_rctx r1, r2;
                gc_begin(&r1, &l1, VT_RMODE_RECORD, mode ? VT_ROUNDING_LOG : VT_ROUNDING_EXACT);
                gc_begin(&r2, &l2, VT_RMODE_RECORD, mode ? VT_ROUNDING_LOG : VT_ROUNDING_EXACT);
                vt_bmm_epi d = {.A = A, .B = B, .a_si = tA ? 1 : K, .a_sk = tA ? M : 1, .b_sk = tB ? 1 : N,
                                .b_sj = tB ? K : 1, .M = M, .N = N, .K = K};
                vt_err e1 = vt_round(&r1, 3, x, &bd, G * M, N, o1);
                vt_err e2 = vt_epi_host_bmm(&r2, 3, d, G, x, o2);
                CHECK(e1 == VT_OK && e2 == VT_OK, "bmm %zu x %zu x %zu tA=%d tB=%d mode %d: %d %d: %s", M, N, K, tA, tB,
                      mode, e1, e2, vt_errmsg());
                CHECK(memcmp(o1, o2, G * M * N * sizeof *o1) == 0, "bmm %zu x %zu x %zu tA=%d tB=%d mode %d: outputs", M,
                      N, K, tA, tB, mode);
                if (mode == 0)
                    CHECK(r2.stats.exact >= 4, "bmm: the crafted near-ties were evaluated exactly (%llu)",
                          (unsigned long long)r2.stats.exact);
                if (mode == 1 && l1.n_ops == 1 && l2.n_ops == 1)
                    CHECK(gc_logs_equal(&l1.ops[0], &l2.ops[0]) && l2.ops[0].n_entries >= 4,
                          "bmm %zu x %zu x %zu tA=%d tB=%d: the same log (%llu entries)", M, N, K, tA, tB,
                          (unsigned long long)l2.ops[0].n_entries);
                vt_steplog_free(&l1);
                vt_steplog_free(&l2);
            }
            vt_exec_free(&e);
            free(A), free(B), free(o1), free(o2), free(x), free(bb), free(rn), free(cn);
        }
}

int main(void)
{
    uint64_t seed = vt_test_seed(0x5eed0e91);
    gc_all(twin, NULL, seed, 1); /* the twin on the reverse order's values */
    gc_same_x = 1;
    gc_all(twin, NULL, seed, 1); /* on the CPU's own: the same log, counts, faults */
    bmm_check(seed);
    return vt_test_finish("test_epilogue");
}
