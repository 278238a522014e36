/* vt_cuda_stub.c - the CUDA backend's entry points in a build without CUDA (no nvcc or no cuBLAS
 * at configure time, or -DVT_CUDA=OFF): each says so. */
#include "vt_cuda.h"

#define VT_NO_CUDA VT_RETURN_ERROR(VT_ERR_UNSUPPORTED, "this build has no CUDA backend (configure with nvcc and cuBLAS present, -DVT_CUDA=ON)")

vt_err vt_cuda_open(vt_cuda **out, char *desc, size_t desc_len)
{
    (void)desc;
    (void)desc_len;
    *out = NULL;
    VT_NO_CUDA;
}

void vt_cuda_close(vt_cuda *g) { (void)g; }

vt_err vt_cuda_gemm_round(vt_cuda *g, vt_rctx *rctx, uint32_t op_id, int tA, int tB, size_t M, size_t N, size_t K,
                          const float *A, const float *B, float *out)
{
    (void)g, (void)rctx, (void)op_id, (void)tA, (void)tB, (void)M, (void)N, (void)K, (void)A, (void)B, (void)out;
    VT_NO_CUDA;
}

vt_err vt_cuda_gemm_plain64(vt_cuda *g, int tA, int tB, size_t M, size_t N, size_t K, const double *A,
                            const double *B, double *C)
{
    (void)g, (void)tA, (void)tB, (void)M, (void)N, (void)K, (void)A, (void)B, (void)C;
    VT_NO_CUDA;
}

vt_err vt_cuda_gemm_plain32(vt_cuda *g, int tA, int tB, size_t M, size_t N, size_t K, const float *A,
                            const float *B, float *C)
{
    (void)g, (void)tA, (void)tB, (void)M, (void)N, (void)K, (void)A, (void)B, (void)C;
    VT_NO_CUDA;
}

vt_err vt_cuda_tc_gemm(vt_cuda *g, const struct vt_tc_arch_s *arch, size_t G, int tA, int tB, size_t M, size_t N,
                       size_t K, const float *A, const float *B, float *C)
{
    (void)g, (void)arch, (void)G, (void)tA, (void)tB, (void)M, (void)N, (void)K, (void)A, (void)B, (void)C;
    VT_NO_CUDA;
}

vt_err vt_cuda_time_gemm(vt_cuda *g, int tA, int tB, size_t M, size_t N, size_t K, int reps, double *t_verif,
                         double *t_dgemm, double *t_sgemm, uint64_t *n_flagged)
{
    (void)g, (void)tA, (void)tB, (void)M, (void)N, (void)K, (void)reps;
    *t_verif = *t_dgemm = *t_sgemm = 0;
    *n_flagged = 0;
    VT_NO_CUDA;
}

vt_err vt_cuda_run_begin(vt_cuda *g, struct vt_model *m)
{
    (void)g, (void)m;
    VT_NO_CUDA;
}
vt_err vt_cuda_run_op(vt_cuda *g, struct vt_model *m, vt_rctx *rctx, uint32_t op_id, uint64_t step)
{
    (void)g, (void)m, (void)rctx, (void)op_id, (void)step;
    VT_NO_CUDA;
}
vt_err vt_cuda_op_to_host(vt_cuda *g, struct vt_model *m, vt_rctx *rctx, uint32_t op_id)
{
    (void)g, (void)m, (void)rctx, (void)op_id;
    VT_NO_CUDA;
}
vt_err vt_cuda_op_to_device(vt_cuda *g, struct vt_model *m, uint32_t op_id)
{
    (void)g, (void)m, (void)op_id;
    VT_NO_CUDA;
}
vt_err vt_cuda_run_end(vt_cuda *g, struct vt_model *m, vt_rctx *rctx)
{
    (void)g, (void)m, (void)rctx;
    VT_NO_CUDA;
}
