/* vt_cuda_plugin.h - the entry points of the CUDA plugin (libvt_cuda.so: backend/cuda/vt_cuda.cu,
 * vt_cuda_model.cu, vt_dev_ops.c, rounding/vt_epilogue.c), which backend/cuda/vt_cuda_load.c opens
 * with dlopen on the first `--backend cuda` and maps onto vt_cuda.h's functions. Programs that
 * never ask for the GPU never load cuBLAS (about 200 MB mapped and 80 ms at start otherwise). The
 * plugin takes the rest of the project - errors, the rounding layer, the model - from the program
 * that loads it (the programs export their symbols: CMAKE_ENABLE_EXPORTS), so an error it sets is
 * the program's. VT_CUDA_PLUGIN_ABI changes whenever a signature here or a structure they pass
 * changes; the loader refuses a plugin of another ABI. */
#ifndef VT_CUDA_PLUGIN_H
#define VT_CUDA_PLUGIN_H

#include <stddef.h>

#include "vt_cuda.h"
#ifdef __cplusplus
extern "C" {
#endif
#include "../../model/vt_model.h"
#include "../../rounding/vt_round_hd.h"
#ifdef __cplusplus
}
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define VT_CUDA_PLUGIN_ABI 4

/* What the plugin and the program must agree on beyond the signatures: the layouts of the
 * structures the plugin reads from the program. Both compute this from their own headers; the
 * loader refuses a plugin whose value differs. */
#define VTI_ABI_MIX(h, v) ((h) * 1099511628211ULL ^ (unsigned long long)(v))
#define VT_CUDA_PLUGIN_LAYOUT()                                                                                        \
    VTI_ABI_MIX(VTI_ABI_MIX(VTI_ABI_MIX(VTI_ABI_MIX(VTI_ABI_MIX(VTI_ABI_MIX(VTI_ABI_MIX(VTI_ABI_MIX(VTI_ABI_MIX(        \
    VTI_ABI_MIX(VTI_ABI_MIX(                                                                                           \
        14695981039346656037ULL, VT_CUDA_PLUGIN_ABI), sizeof(struct vt_model)), offsetof(struct vt_model, arena)),     \
        offsetof(struct vt_model, prog)), sizeof(vt_program)), sizeof(vt_tensor)), sizeof(vt_opdesc)),                \
        sizeof(vt_rctx)), sizeof(vt_epi_res)), offsetof(struct vt_model, be)), offsetof(struct vt_model, ds))

#if defined(__GNUC__)
#define VT_CUDAP_EXPORT __attribute__((visibility("default")))
#else
#define VT_CUDAP_EXPORT
#endif

/* VT_CUDA_PLUGIN_LAYOUT() of the plugin */
VT_CUDAP_EXPORT unsigned long long vt_cudap_abi(void);
VT_CUDAP_EXPORT vt_err vt_cudap_open(vt_cuda **out, char *desc, size_t desc_len);
VT_CUDAP_EXPORT void vt_cudap_close(vt_cuda *g);
VT_CUDAP_EXPORT vt_err vt_cudap_gemm_round(vt_cuda *g, vt_rctx *rctx, uint32_t op_id, int tA, int tB, size_t M, size_t N, size_t K,
                           const float *A, const float *B, float *out);
VT_CUDAP_EXPORT vt_err vt_cudap_gemm_plain64(vt_cuda *g, int tA, int tB, size_t M, size_t N, size_t K, const double *A,
                             const double *B, double *C);
VT_CUDAP_EXPORT vt_err vt_cudap_gemm_plain32(vt_cuda *g, int tA, int tB, size_t M, size_t N, size_t K, const float *A,
                             const float *B, float *C);
VT_CUDAP_EXPORT vt_err vt_cudap_time_gemm(vt_cuda *g, int tA, int tB, size_t M, size_t N, size_t K, int reps, double *t_verif,
                          double *t_dgemm, double *t_sgemm, uint64_t *n_flagged);
VT_CUDAP_EXPORT vt_err vt_cudap_run_begin(vt_cuda *g, struct vt_model *m);
VT_CUDAP_EXPORT vt_err vt_cudap_run_op(vt_cuda *g, struct vt_model *m, vt_rctx *rctx, uint32_t op_id, uint64_t step);
VT_CUDAP_EXPORT vt_err vt_cudap_op_to_host(vt_cuda *g, struct vt_model *m, vt_rctx *rctx, uint32_t op_id);
VT_CUDAP_EXPORT vt_err vt_cudap_op_to_device(vt_cuda *g, struct vt_model *m, uint32_t op_id);
VT_CUDAP_EXPORT vt_err vt_cudap_run_end(vt_cuda *g, struct vt_model *m, vt_rctx *rctx);
/* the tensor-core mode's GEMM on host operands (backend/cuda/vt_tc_cuda.cu; backend/vt_backend.h gemm_tc) */
struct vt_tc_arch_s;
VT_CUDAP_EXPORT vt_err vt_cudap_tc_gemm(vt_cuda *g, const struct vt_tc_arch_s *arch, size_t G, int tA, int tB, size_t M,
                                        size_t N, size_t K, const float *A, const float *B, float *C);

/* The loader's lookup of an optional entry point outside the table above (backend/cuda/vt_cuda_load.c;
 * e.g. vt_cudap_nccl_attach, backend/cuda/vt_nccl.h): its address in the loaded plugin, or NULL (no plugin,
 * or a plugin built without it). */
void *vti_cuda_plugin_sym(const char *name);

#ifdef __cplusplus
}
#endif

#endif
