/* vt_tc_mma.h - the GPU kernel of the tensor-core mode (issue 28 item 3; docs/tensorcore.md "The GPU
 * kernel"): the project's own GEMM on the tensor cores through PTX mma.sync, no cuBLAS, in the
 * emulator's documented order (kernels/vt_tc.h vt_tc_gemm): operands rounded to the type by the
 * shared code of kernels/vt_tc_hd.h, one mma instruction per group of the model (K of the
 * instruction = the model's group: m16n8k16 for the Hopper BF16/FP16 models, m16n8k8 for the
 * Ampere ones; sm90-e4m3f16: the operands rounded to E4M3, converted exactly to FP16 by the same shared
 * code, then FP16 m16n8k16 - its model by construction), the groups in increasing k, the FP32 accumulator kept in registers
 * from instruction to instruction starting at +0, no split-K, C written once. The result is the
 * emulator's bit for bit exactly when the GPU's mma follows the model (the GPU check: tests/
 * test_tc_gpu.cu). Compiled into the CUDA plugin (backend/cuda/vt_tc_cuda.cu) and into test_tc_gpu; callable
 * from C and C++. Device pointers; `stream` is a cudaStream_t (NULL: the default stream). */
#ifndef VT_TC_MMA_H
#define VT_TC_MMA_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif
#include "../../common/vt_error.h"
#include "../../kernels/vt_tc.h"
#ifdef __cplusplus
}
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* The instructions (VTI_TC_MMA_*): mma.sync m16n8k16 / m16n8k8 with BF16 or FP16 operands; E4M3_K32
 * the E4M3 m16n8k32 (compute capability 8.9+; on Hopper it runs through FP16: cutlass issue 1986),
 * which no mode issues (the GPU check asks which model it follows: vti_tc_mma_tiles_kind);
 * E4M3F16_K16 the FP16 m16n8k16 on E4M3 operands converted exactly to FP16 by the kernel. */
enum {
    VTI_TC_MMA_BF16_K16 = 0,
    VTI_TC_MMA_F16_K16,
    VTI_TC_MMA_BF16_K8,
    VTI_TC_MMA_F16_K8,
    VTI_TC_MMA_E4M3_K32,
    VTI_TC_MMA_E4M3F16_K16
};
/* The instruction the mode's kernel issues for one group of arch, or -1 with *why set when none
 * computes the model: sm90-e4m3 (Hopper's FP8 wgmma, groups of 32) has no kernel yet (mma.sync's E4M3
 * is not that arithmetic on Hopper; tc-e4m3f16-sm90 is the mode of what it computes), and the models
 * with a variant of the zeros (zero_exp, zero_sign: no mode's) are the GPU check's questions, not a
 * kernel's. Compute capability 8.0 and above (cc = 10 * major + minor). */
int vti_tc_mma_kind(const vt_tc_arch *arch, int cc, const char **why);
/* The K of instruction `kind` and whether this GPU (cc) has it (E4M3_K32: 8.9, the others 8.0). */
int vti_tc_mma_kind_k(int kind);
int vti_tc_mma_kind_ok(int kind, int cc);
/* The GPU generation a built-in model describes (80 for "sm80-...", 90 for "sm90-..."; 0 unknown). */
int vti_tc_mma_model_sm(const vt_tc_arch *arch);

/* Device workspace of vti_tc_mma_gemm, in bytes: both operands in the type, padded. */
size_t vti_tc_mma_work_bytes(const vt_tc_arch *arch, size_t G, size_t M, size_t N, size_t K);

/* G independent GEMMs C_g [M, N] = op(A_g) op(B_g) (the matmul and bmm kinds' layouts: row-major,
 * A_g [M, K] at A + g M K, or [K, M] when tA; B_g [K, N] at B + g K N, or [N, K] when tB; C_g at
 * C + g M N), each element the fold of the model's groups in increasing k from +0. work: at least
 * vti_tc_mma_work_bytes. Asynchronous on the stream; VT_ERR_ARG / VT_ERR_UNSUPPORTED / VT_ERR_IO. */
vt_err vti_tc_mma_gemm(const vt_tc_arch *arch, int cc, size_t G, int tA, int tB, size_t M, size_t N, size_t K,
                       const float *A, const float *B, float *C, void *work, void *stream);

/* n single instructions (the GPU check's tiles): tile t is A_t [16][KI] (row-major), B_t [8][KI]
 * (column j's k contiguous), both the type's bits one per uint16_t (E4M3 in the low byte), KI the
 * instruction's K; C_t [16][8] the accumulator's FP32 bits; D_t [16][8] the result's, of
 * D[i][j] = the group (C[i][j]; A row i, B column j). Asynchronous on the stream. */
vt_err vti_tc_mma_tiles(const vt_tc_arch *arch, int cc, size_t n, const uint16_t *A, const uint16_t *B,
                        const uint32_t *C, uint32_t *D, void *stream);
/* The same for an explicit instruction (VTI_TC_MMA_*; E4M3F16_K16's tiles hold E4M3 bits, which the
 * kernel converts): the GPU check's questions. VT_ERR_UNSUPPORTED when this GPU lacks it. */
vt_err vti_tc_mma_tiles_kind(int kind, int cc, size_t n, const uint16_t *A, const uint16_t *B, const uint32_t *C,
                             uint32_t *D, void *stream);

#ifdef __cplusplus
}
#endif

#endif
