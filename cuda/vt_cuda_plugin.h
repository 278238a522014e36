/* vt_cuda_plugin.h - the entry points of the CUDA plugin (libvt_cuda.so: cuda/vt_cuda.cu,
 * vt_cuda_model.cu, vt_dev_ops.c, rounding_log/vt_epilogue.c), which cuda/vt_cuda_load.c opens
 * with dlopen on the first `--backend cuda` and maps onto vt_cuda.h's functions. Programs that
 * never ask for the GPU never load cuBLAS (about 200 MB mapped and 80 ms at start otherwise). The
 * plugin takes the rest of the project - errors, the rounding layer, the model - from the program
 * that loads it (the programs export their symbols: CMAKE_ENABLE_EXPORTS), so an error it sets is
 * the program's. VT_CUDA_PLUGIN_ABI changes whenever a signature here or a structure they pass
 * changes; the loader refuses a plugin of another ABI. */
#ifndef VT_CUDA_PLUGIN_H
#define VT_CUDA_PLUGIN_H

#include "vt_cuda.h"

#ifdef __cplusplus
extern "C" {
#endif

#define VT_CUDA_PLUGIN_ABI 1

int vt_cudap_abi(void);
vt_err vt_cudap_open(vt_cuda **out, char *desc, size_t desc_len);
void vt_cudap_close(vt_cuda *g);
vt_err vt_cudap_gemm_round(vt_cuda *g, vt_rctx *rc, uint32_t op_id, int tA, int tB, size_t M, size_t N, size_t K,
                           const float *A, const float *B, float *out);
vt_err vt_cudap_gemm_plain64(vt_cuda *g, int tA, int tB, size_t M, size_t N, size_t K, const double *A,
                             const double *B, double *C);
vt_err vt_cudap_gemm_plain32(vt_cuda *g, int tA, int tB, size_t M, size_t N, size_t K, const float *A,
                             const float *B, float *C);
vt_err vt_cudap_time_gemm(vt_cuda *g, int tA, int tB, size_t M, size_t N, size_t K, int reps, double *t_verif,
                          double *t_dgemm, double *t_sgemm, uint64_t *n_flagged);
vt_err vt_cudap_run_begin(vt_cuda *g, struct vt_model *m);
vt_err vt_cudap_run_op(vt_cuda *g, struct vt_model *m, vt_rctx *rc, uint32_t op_id, uint64_t step);
vt_err vt_cudap_op_to_host(vt_cuda *g, struct vt_model *m, vt_rctx *rc, uint32_t op_id);
vt_err vt_cudap_op_to_device(vt_cuda *g, struct vt_model *m, uint32_t op_id);
vt_err vt_cudap_run_end(vt_cuda *g, struct vt_model *m, vt_rctx *rc);

#ifdef __cplusplus
}
#endif

#endif
