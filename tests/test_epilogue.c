/* The host twin of the GPU's GEMM epilogue (rounding_log/vt_epilogue.h: the same per-element code
 * the CUDA kernels run, in the same four stages) against the CPU's vt_round: the same FP32 outputs
 * in exact rounding, the same log in log rounding, accepted by the CPU's replay (gemm_check.h). */
#include "gemm_check.h"
#include "rounding_log/vt_epilogue.h"

static vt_err twin(void *ctx, vt_rctx *rc, uint32_t op, int tA, int tB, size_t M, size_t N, size_t K, const float *A,
                   const float *B, const double *x_alt, float *out)
{
    (void)ctx;
    vt_gemm_epi d = {.A = A, .B = B, .a_si = tA ? 1 : K, .a_sk = tA ? M : 1, .b_sk = tB ? 1 : N, .b_sj = tB ? K : 1,
                     .K = K};
    return vt_epi_host(rc, op, d, x_alt, M, N, out);
}

int main(void)
{
    uint64_t seed = vt_test_seed(0x5eed0e91);
    gc_all(twin, NULL, seed, 1); /* the twin on the reverse order's values */
    gc_same_x = 1;
    gc_all(twin, NULL, seed, 1); /* on the CPU's own: the same log, counts, faults */
    return vt_test_finish("test_epilogue");
}
