/* vt_cuda.h - the CUDA backend (backend/cuda/vt_cuda.cu; backend/cuda/vt_cuda_stub.c when the build has no CUDA).
 * C interface; see backend/vt_backend.h for the conventions and docs/cuda.md for the pipeline. */
#ifndef VT_CUDA_H
#define VT_CUDA_H

#include <stddef.h>
#include <stdint.h>

#include "../../common/vt_error.h"
#include "../../rounding/vt_round.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct vt_cuda vt_cuda;

/* Opens device VT_CUDA_DEVICE (default 0): a cuBLAS handle on its own stream (its GEMMs in
 * CUBLAS_COMPUTE_64F_PEDANTIC: no TF32, no emulation). VT_ERR_UNSUPPORTED when there is no CUDA
 * build, no plugin file, no GPU or a GPU below sm_90; VT_ERR_IO when the plugin
 * (backend/cuda/vt_cuda_plugin.h) is there but does not load. desc
 * (may be NULL) receives "GPU name, compute capability, driver, runtime and cuBLAS versions". */
vt_err vt_cuda_open(vt_cuda **out, char *desc, size_t desc_len);
void vt_cuda_close(vt_cuda *g);

/* The rounded GEMM of backend/vt_backend.h (gemm_round). Exact rounding and log recording run the
 * epilogue on the device; a log replay computes the FP64 products and norms on the device and
 * judges the trainer's entries on the host with vt_round. */
vt_err vt_cuda_gemm_round(vt_cuda *g, vt_rctx *rctx, uint32_t op_id, int tA, int tB, size_t M, size_t N, size_t K,
                          const float *A, const float *B, float *out);
/* Plain GEMMs (the benchmark baseline, host operands): one DGEMM of FP64 operands, and SGEMM with
 * CUBLAS_COMPUTE_32F_PEDANTIC (no TF32). */
vt_err vt_cuda_gemm_plain64(vt_cuda *g, int tA, int tB, size_t M, size_t N, size_t K, const double *A,
                            const double *B, double *C);
vt_err vt_cuda_gemm_plain32(vt_cuda *g, int tA, int tB, size_t M, size_t N, size_t K, const float *A,
                            const float *B, float *C);

/* The tensor-core mode's GEMM (gemm_arith = tc-*; docs/tensorcore.md "The GPU kernel"): G GEMMs
 * C_g = op(A_g) op(B_g) of host operands (the bmm kind's layout; G = 1 for matmul) by the project's
 * mma.sync kernel in the model's order (backend/cuda/vt_tc_mma.h). VT_ERR_UNSUPPORTED, with a message, on a
 * GPU that is not of the model's generation. */
struct vt_tc_arch_s;
vt_err vt_cuda_tc_gemm(vt_cuda *g, const struct vt_tc_arch_s *arch, size_t G, int tA, int tB, size_t M, size_t N,
                       size_t K, const float *A, const float *B, float *C);

/* Device-resident steps (backend/cuda/vt_cuda_model.cu; backend/vt_backend.h says how vt_model_run uses
 * them): the model's arenas on the GPU; the kinds whose device column in ops/vt_kinds.h is ITEM or
 * GEMM run there, the CPU ones (and any the device refuses: VT_ERR_UNSUPPORTED) on the CPU. With
 * VT_CUDA_CHECK_OPS=1 each device operation is checked against the CPU's (docs/cuda.md). */
struct vt_model;
vt_err vt_cuda_run_begin(vt_cuda *g, struct vt_model *m);
/* VT_ERR_UNSUPPORTED, with no message: this operation runs on the CPU */
vt_err vt_cuda_run_op(vt_cuda *g, struct vt_model *m, vt_rctx *rctx, uint32_t op_id, uint64_t step);
vt_err vt_cuda_op_to_host(vt_cuda *g, struct vt_model *m, vt_rctx *rctx, uint32_t op_id);
vt_err vt_cuda_op_to_device(vt_cuda *g, struct vt_model *m, uint32_t op_id);
vt_err vt_cuda_run_end(vt_cuda *g, struct vt_model *m, vt_rctx *rctx);

/* Device-resident timing of one GEMM shape (bench/bench_cuda.c): mean seconds per call, over reps
 * calls after a warm-up, of the verifiable path on device-resident operands (conversion, panelled
 * DGEMM, norms, screen, compaction, flagged elements; exact rounding; the copy of the FP32 result
 * to the host excluded), of the DGEMM alone on the same FP64 operands, and of the SGEMM. */
vt_err vt_cuda_time_gemm(vt_cuda *g, int tA, int tB, size_t M, size_t N, size_t K, int reps, double *t_verif,
                         double *t_dgemm, double *t_sgemm, uint64_t *n_flagged);

#ifdef __cplusplus
}
#endif

#endif
