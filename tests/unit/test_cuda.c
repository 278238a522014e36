/* The CUDA backend against the CPU reference: every GEMM case in both roundings (gemm_check.h) -
 * bit-identical FP32 outputs in exact rounding; in log rounding the GPU records and the CPU,
 * replaying the GPU's log from its own FP64 values, gets the GPU's outputs bit for bit - the
 * log-replay path of the backend itself (an auditor with --backend cuda of a log-rounding run)
 * on a log recorded by the CPU, and whole device-resident steps of an MLP, a residual CNN and a GPT
 * (resident_check.h: the same states and losses, logs the CPU accepts, failures alike). Skips
 * (exit 77) when the build has no CUDA or there is no GPU. */
#include <stdio.h>

#include "backend/cuda/vt_backend_open.h"
#include "backend/cuda/vt_cuda.h"
#include "gemm_check.h"
#include "resident_check.h"

static vt_err gpu(void *ctx, vt_rctx *rc, uint32_t op, int tA, int tB, size_t M, size_t N, size_t K, const float *A,
                  const float *B, const double *x_alt, float *out)
{
    (void)x_alt;
    return vt_cuda_gemm_round((vt_cuda *)ctx, rc, op, tA, tB, M, N, K, A, B, out);
}

/* The backend's replay path: the CPU records, the GPU replays that log. */
static void replay_on_gpu(vt_cuda *g, uint64_t seed)
{
    vt_rng r = {seed};
    size_t M = 24, N = 20, K = 700;
    float *A = malloc(M * K * sizeof *A), *B = malloc(K * N * sizeof *B), *o1 = malloc(M * N * 4), *o2 = malloc(M * N * 4);
    double *x = malloc(M * N * 8), *rn = malloc(M * 8), *cn = malloc(N * 8);
    if (!A || !B || !o1 || !o2 || !x || !rn || !cn) {
        CHECK(0, "out of memory");
        return;
    }
    gc_case c = {M, N, K, 1, 1, 0, 1.0};
    gc_fill(&r, &c, 0, 1, A, B);
    vt_bound_cfg cfg = {.mode = VT_BOUND_PROVABLE, .rounding = VT_ROUNDING_LOG};
    vt_exec e;
    vt_exec_init(&e, VT_ORDER_PAIRWISE, cfg, 0);
    vt_bounds bd;
    CHECK_OK(vt_gemm(&e, 0, 1, M, N, K, A, B, x, rn, cn, &bd));
    vt_steplog log;
    vt_steplog_init(&log, 7);
    vt_rctx rc;
    gc_begin(&rc, &log, VT_RMODE_RECORD, VT_ROUNDING_LOG);
    CHECK_OK(vt_round(&rc, 5, x, &bd, M, N, o1));
    gc_begin(&rc, &log, VT_RMODE_REPLAY, VT_ROUNDING_LOG);
    CHECK_OK(vt_cuda_gemm_round(g, &rc, 5, 0, 1, M, N, K, A, B, o2));
    CHECK(memcmp(o1, o2, M * N * 4) == 0, "the GPU's replay of the CPU's log gives the CPU's outputs");
    CHECK(log.n_ops == 1 && log.ops[0].n_entries > 0, "the CPU's log has entries (%llu)",
          log.n_ops ? (unsigned long long)log.ops[0].n_entries : 0ULL);
    /* a forged entry is caught by the GPU path's judge as by the CPU's */
    if (log.n_ops == 1 && log.ops[0].n_entries > 0) {
        vt_log_entry *en = &log.ops[0].e[0];
        en->is_value = 1;
        en->value_bits ^= 0x10u;
        gc_begin(&rc, &log, VT_RMODE_REPLAY, VT_ROUNDING_LOG);
        CHECK(vt_cuda_gemm_round(g, &rc, 5, 0, 1, M, N, K, A, B, o2) == VT_ERR_IMPLAUSIBLE,
              "a forged entry is implausible on the GPU path too");
    }
    vt_steplog_free(&log);
    vt_exec_free(&e);
    free(A), free(B), free(o1), free(o2), free(x), free(rn), free(cn);
}

/* The plain baseline GEMMs agree with the CPU's within FP32 / FP64 rounding of a dot product. */
static void plain(vt_cuda *g)
{
    size_t M = 5, N = 7, K = 300;
    double A[5 * 300], B[300 * 7], C[35];
    float As[5 * 300], Bs[300 * 7], Cs[35];
    for (size_t e = 0; e < M * K; e++) A[e] = As[e] = (float)((double)(e % 17) - 8.0);
    for (size_t e = 0; e < K * N; e++) B[e] = Bs[e] = (float)((double)(e % 13) - 6.0);
    CHECK_OK(vt_cuda_gemm_plain64(g, 0, 0, M, N, K, A, B, C));
    CHECK_OK(vt_cuda_gemm_plain32(g, 0, 0, M, N, K, As, Bs, Cs));
    int ok = 1;
    for (size_t i = 0; i < M; i++)
        for (size_t j = 0; j < N; j++) {
            double s = 0;
            for (size_t k = 0; k < K; k++) s += A[i * K + k] * B[k * N + j]; /* small integers: exact */
            ok &= C[i * N + j] == s && (double)Cs[i * N + j] == s;
        }
    CHECK(ok, "plain DGEMM and SGEMM (no TF32) are exact on small integers");
}

static int gpu_open(vt_model *m, rs_dev *d)
{
    (void)m;
    d->state = NULL;
    return vt_backend_open("cuda", &d->be) == VT_OK;
}

static void gpu_close(rs_dev *d, const vt_recipe *rc, const vt_model *m, const char *what)
{
    (void)rc, (void)m, (void)what;
    printf(" (GPU)\n");
    vt_backend_close(&d->be);
}

int main(void)
{
    vt_cuda *g = NULL;
    char desc[256] = "";
    vt_err e = vt_cuda_open(&g, desc, sizeof desc);
    if (e == VT_ERR_UNSUPPORTED) {
        printf("test_cuda: skipped: %s\n", vt_errmsg());
        return 77;
    }
    CHECK_OK(e);
    if (e) return vt_test_finish("test_cuda");
    printf("device: %s\n", desc);
    uint64_t seed = vt_test_seed(0xc0da5eed);
    gc_all(gpu, g, seed, 0);
    replay_on_gpu(g, seed);
    plain(g);
    vt_cuda_close(g);
    static const rs_device gpu_dev = {gpu_open, gpu_close};
    rs_all(&gpu_dev);
    return vt_test_finish("test_cuda");
}
