/* vt_backend.c - opening a backend by name (vt_backend.h). */
#include "vt_backend_open.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vt_cuda.h"

static vt_err cuda_round(void *impl, vt_rctx *rctx, uint32_t op_id, int tA, int tB, size_t M, size_t N, size_t K,
                         const float *A, const float *B, float *out)
{
    return vt_cuda_gemm_round(impl, rctx, op_id, tA, tB, M, N, K, A, B, out);
}
static vt_err cuda_plain64(void *impl, int tA, int tB, size_t M, size_t N, size_t K, const double *A,
                           const double *B, double *C)
{
    return vt_cuda_gemm_plain64(impl, tA, tB, M, N, K, A, B, C);
}
static vt_err cuda_plain32(void *impl, int tA, int tB, size_t M, size_t N, size_t K, const float *A, const float *B,
                           float *C)
{
    return vt_cuda_gemm_plain32(impl, tA, tB, M, N, K, A, B, C);
}
static vt_err cuda_tc(void *impl, const struct vt_tc_arch_s *arch, size_t G, int tA, int tB, size_t M, size_t N,
                      size_t K, const float *A, const float *B, float *C)
{
    return vt_cuda_tc_gemm(impl, arch, G, tA, tB, M, N, K, A, B, C);
}
static void cuda_close(void *impl) { vt_cuda_close(impl); }
static vt_err cuda_run_begin(void *impl, void *model) { return vt_cuda_run_begin(impl, (struct vt_model *)model); }
static vt_err cuda_run_op(void *impl, void *model, vt_rctx *rctx, uint32_t op_id, uint64_t step)
{
    return vt_cuda_run_op(impl, (struct vt_model *)model, rctx, op_id, step);
}
static vt_err cuda_to_host(void *impl, void *model, vt_rctx *rctx, uint32_t op_id)
{
    return vt_cuda_op_to_host(impl, (struct vt_model *)model, rctx, op_id);
}
static vt_err cuda_to_device(void *impl, void *model, uint32_t op_id)
{
    return vt_cuda_op_to_device(impl, (struct vt_model *)model, op_id);
}
static vt_err cuda_run_end(void *impl, void *model, vt_rctx *rctx) { return vt_cuda_run_end(impl, (struct vt_model *)model, rctx); }

vt_err vt_backend_open(const char *name, vt_backend *out)
{
    memset(out, 0, sizeof *out);
    if (!name || strcmp(name, "cpu") == 0) {
        snprintf(out->name, sizeof out->name, "cpu");
        snprintf(out->desc, sizeof out->desc, "CPU kernels");
        return VT_OK;
    }
    VT_RETURN_ERROR_IF(strcmp(name, "cuda") != 0, VT_ERR_ARG, "unknown backend \"%s\" (cpu or cuda)", name);
    vt_cuda *g = NULL;
    VT_FORWARD_IF_ERROR(vt_cuda_open(&g, out->desc, sizeof out->desc));
    snprintf(out->name, sizeof out->name, "cuda");
    out->impl = g;
    out->gemm_round = cuda_round;
    out->gemm_plain64 = cuda_plain64;
    out->gemm_plain32 = cuda_plain32;
    out->gemm_tc = cuda_tc;
    /* VT_CUDA_RESIDENT=0: GEMMs only, every other operation on the CPU with host operands */
    const char *res = getenv("VT_CUDA_RESIDENT");
    if (!res || strcmp(res, "0") != 0) {
        out->run_begin = cuda_run_begin;
        out->run_op = cuda_run_op;
        out->op_to_host = cuda_to_host;
        out->op_to_device = cuda_to_device;
        out->run_end = cuda_run_end;
    }
    out->close = cuda_close;
    return VT_OK;
}

void vt_backend_close(vt_backend *b)
{
    if (b->close && b->impl) b->close(b->impl);
    char name[sizeof b->name];
    memcpy(name, b->name, sizeof name);
    memset(b, 0, sizeof *b); /* no entry point left to call */
    memcpy(b->name, name, sizeof name);
}
