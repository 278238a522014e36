/* vt_cuda_int.h - what the CUDA backend's two files share (backend/cuda/vt_cuda.cu: the GEMMs;
 * backend/cuda/vt_cuda_model.cu: device-resident execution of a model's step). Internal. */
#ifndef VT_CUDA_INT_H
#define VT_CUDA_INT_H

#include <float.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cub/device/device_select.cuh>
#include <thrust/iterator/counting_iterator.h>

extern "C" {
#include "../../common/vt_error.h"
#include "../../kernels/vt_kernels.h"
#include "../../rounding/vt_epilogue.h"
#include "../../rounding/vt_round.h"
}
#include "vt_cuda.h"
#include "vt_cuda_plugin.h"

#if defined(__CUDACC__) && defined(__FAST_MATH__)
#error "fast math is forbidden in this project"
#endif

enum { B_A32, B_B32, B_A64, B_B64, B_C, B_P, B_RN, B_CN, B_OUT, B_FLAG, B_IDX, B_NUM, B_RES, B_TMP, B_C32, B_X, B_TCW,
       B_CONVA, B_CONVW, B_COUNT }; /* B_TCW: the tensor-core GEMM's operands (vt_tc_cuda.cu); B_CONVA, B_CONVW: a
                                    * convolution kind's formed operands A and W' (vt_cuda_model.cu, vt_dev_conv) */

struct vt_cuda {
    int dev;
    cudaStream_t s;
    cublasHandle_t h;
    void *buf[B_COUNT];
    size_t cap[B_COUNT];
    /* host staging of the flagged indices and decisions */
    uint64_t *h_idx;
    vt_epi_res *h_res;
    size_t h_cap;
    /* device-resident execution (vt_cuda_model.cu): the model's arenas on the device */
    const void *model;              /* the vt_model they mirror (NULL: none yet) */
    uint8_t *dar[8];                /* per tensor class; the state classes share one */
    size_t dar_bytes[8];
    unsigned long long *derr;       /* per operation: (first failing index << 8) | code, or all ones */
    uint32_t derr_n;
    unsigned long long *h_err;
    int check_ops;                  /* VT_CUDA_CHECK_OPS=1 (read at each step's start): each device operation
                                     * against the CPU exec of the same operation (vt_dev_check_*) */
};

static vt_err cu_fail(cudaError_t e, const char *what)
{
    return vt_set_error(e == cudaErrorMemoryAllocation ? VT_ERR_NOMEM : VT_ERR_IO, "CUDA: %s: %s", what,
                        cudaGetErrorString(e));
}
#define CU(call)                                                                                                       \
    do {                                                                                                               \
        cudaError_t e_ = (call);                                                                                       \
        if (e_ != cudaSuccess) return cu_fail(e_, #call);                                                              \
    } while (0)
#define CB(call)                                                                                                       \
    do {                                                                                                               \
        cublasStatus_t s_ = (call);                                                                                    \
        if (s_ != CUBLAS_STATUS_SUCCESS)                                                                               \
            return vt_set_error(VT_ERR_IO, "cuBLAS: %s: %s", #call, cublasGetStatusString(s_));                        \
    } while (0)
#define LAUNCH_CHECK() CU(cudaGetLastError())
/* a grid-stride loop over n elements, launched with GRID(n) blocks of 256 threads */
#define GRID(n) ((unsigned)(((n) + 255) / 256 < 65535 ? ((n) + 255) / 256 : 65535)), 256
#define FOR_EACH(i, n) for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < (n); i += (size_t)gridDim.x * blockDim.x)

/* grow-only device buffer k of at least `bytes` (vt_cuda.cu) */
vt_err vti_cuda_buf(vt_cuda *g, int k, size_t bytes, void **p);
#define dbuf vti_cuda_buf

/* The rounded GEMM on device operands (FP32 a32, b32) into the device FP32 out: panelled DGEMM,
 * the epilogue on the device (flagged results written into out there), vt_epi_finish with no host
 * output. Exact rounding or log recording only (vt_epi_supported). */
vt_err vti_cuda_gemm_dev(vt_cuda *g, vt_rctx *rctx, uint32_t op_id, int tA, int tB, size_t M, size_t N, size_t K,
                         const float *a32, const float *b32, float *out);

/* the host staging buffers of flagged indices and decisions, for at least n (vt_cuda.cu) */
vt_err host_staging(vt_cuda *g, size_t n);

/* The batched GEMM (batched_matmul) on device operands into the device FP32 out: one strided-batched
 * DGEMM, norms, screen with the kind's Cauchy-Schwarz bound, compaction, flagged elements
 * (rounding/vt_round_hd.h vti_bmm_elem). Exact rounding or recording, K unpanelled. */
vt_err vti_cuda_bmm_dev(vt_cuda *g, vt_rctx *rctx, uint32_t op_id, size_t G, size_t M, size_t N, size_t K, int tA,
                        int tB, const float *a32, const float *b32, float *out);

/* The tensor-core mode's GEMM (gemm_arith = tc-*; backend/cuda/vt_tc_cuda.cu): G GEMMs C_g = op(A_g) op(B_g) of device
 * operands by the project's mma.sync kernel (vt_tc_mma.h) into the device's C; VT_ERR_UNSUPPORTED with a
 * message when this GPU is not of the model's generation. VT_CUDA_CHECK_TC=1: each against vt_tc_gemm. */
vt_err vti_cuda_tc_gemm_dev(vt_cuda *g, const struct vt_tc_arch_s *arch, uint32_t op_id, size_t G, int tA, int tB,
                            size_t M, size_t N, size_t K, const float *dA, const float *dB, float *dC);

/* the device-resident model's state (vt_cuda_model.cu); freed by vt_cuda_close */
void vti_cuda_model_free(vt_cuda *g);

#endif

