/* vt_backend.h - the kernel-level backend interface (docs/cuda.md): the table a backend fills.
 * Opening one by name is backend/cuda/vt_backend_open.h, beside the implementations.
 *
 * A backend supplies some kernels on other hardware; every kernel it leaves NULL runs on the CPU
 * (kernels/). The interpreter calls it through vt_model_set_backend (model/vt_model.h); the
 * results do not depend on the backend: exact rounding gives RN32 of the exact value everywhere,
 * and a log recorded on one backend is judged against the exact value by any other.
 *   "cpu"  - no accelerated kernel: the reference, always built;
 *   "cuda" - backend/cuda/vt_cuda.cu: rounded GEMMs (the matmul kind) on an NVIDIA GPU through cuBLAS DGEMM
 *            with the rounding epilogue on the device; the plain FP64/FP32 GEMMs of the benchmark
 *            baseline through cuBLAS. */
#ifndef VT_BACKEND_H
#define VT_BACKEND_H

#include <stddef.h>

#include "../common/vt_error.h"
#include "../rounding/vt_round.h"

struct vt_tc_arch_s;

typedef struct vt_backend {
    char name[16];   /* "cpu", "cuda" */
    char desc[256];  /* the device, driver and library versions, for reports */
    void *impl;
    /* out = the rounding under rctx (operation op_id) of op(A) op(B) (vt_gemm's conventions: row-major,
     * tA / tB as there); A, B and out are host memory. NULL: vt_gemm + vt_round on the CPU. */
    vt_err (*gemm_round)(void *impl, vt_rctx *rctx, uint32_t op_id, int tA, int tB, size_t M, size_t N, size_t K,
                         const float *A, const float *B, float *out);
    /* plain C = op(A) op(B) of FP64 operands (the baseline's DGEMM, host memory); NULL: CBLAS */
    vt_err (*gemm_plain64)(void *impl, int tA, int tB, size_t M, size_t N, size_t K, const double *A, const double *B,
                           double *C);
    /* plain FP32 (SGEMM, no TF32); NULL: CBLAS */
    vt_err (*gemm_plain32)(void *impl, int tA, int tB, size_t M, size_t N, size_t K, const float *A, const float *B,
                           float *C);
    /* the tensor-core mode (gemm_arith = tc-*; docs/tensorcore.md): G GEMMs C_g = op(A_g) op(B_g) of host
     * operands (the bmm kind's layout) in the model arch's arithmetic and order, bit for bit
     * vt_tc_gemm's; NULL: the backend has none (the mode then refuses it) */
    vt_err (*gemm_tc)(void *impl, const struct vt_tc_arch_s *arch, size_t G, int tA, int tB, size_t M, size_t N,
                      size_t K, const float *A, const float *B, float *C);
    /* Device-resident steps (optional: all five or none). When a whole step runs without hooks,
     * vt_model_run calls run_begin (the state to the device), then per operation run_op - or,
     * where that answers VT_ERR_UNSUPPORTED, op_to_host, the CPU kernel and op_to_device - and
     * finally run_end (failures reported in operation order; the state and the loss to the host).
     * Between steps the host's state is the reference. `model` is the interpreter's model
     * (model/vt_model.h), opaque at this layer: the table names no layer above it. */
    vt_err (*run_begin)(void *impl, void *model);
    vt_err (*run_op)(void *impl, void *model, vt_rctx *rctx, uint32_t op_id, uint64_t step);
    vt_err (*op_to_host)(void *impl, void *model, vt_rctx *rctx, uint32_t op_id);
    vt_err (*op_to_device)(void *impl, void *model, uint32_t op_id);
    vt_err (*run_end)(void *impl, void *model, vt_rctx *rctx);
    void (*close)(void *impl);
} vt_backend;

#endif
