/* vt_tc_cuda.cu - the tensor-core mode in the CUDA plugin (docs/tensorcore.md "The GPU kernel",
 * docs/cuda.md): the matmul and bmm kinds of a gemm_arith=tc-* run computed by the project's mma.sync
 * GEMM (vt_tc_mma.cu) on device operands (device-resident steps: vt_cuda_model.cu's run_op) or on
 * host operands (the backend's gemm_tc entry: VT_CUDA_RESIDENT=0, single operations). Only a GPU of
 * the generation the model describes runs it (an sm90 model on compute capability 9.x, an sm80 one
 * on 8.x): elsewhere the mma's arithmetic is not the model's, and the run stops with a message; so
 * does tc-e4m3-sm90 everywhere (Hopper's FP8 wgmma model: no kernel issues wgmma yet, and mma.sync's
 * E4M3 is another arithmetic on Hopper - vti_tc_mma_kind says why).
 *
 * VT_CUDA_CHECK_TC=1: every device GEMM of the mode is compared, element by element, with the CPU
 * emulator (kernels/vt_tc.h vt_tc_gemm) on the same operands; the first differing element stops the
 * run, named with its batch, row and column, both values' bits and the count of differing elements. */
#include "vt_cuda_int.h"
#include "vt_tc_mma.h"

/* the device's compute capability (10 major + minor) */
static vt_err device_cc(vt_cuda *g, int *cc)
{
    int major = 0, minor = 0;
    CU(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, g->dev));
    CU(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, g->dev));
    *cc = 10 * major + minor;
    return VT_OK;
}

/* VT_OK when this GPU runs arch's arithmetic (the model's generation, an instruction for its group) */
static vt_err tc_supported(vt_cuda *g, const vt_tc_arch *arch, int *cc)
{
    VT_FORWARD_IF_ERROR(device_cc(g, cc));
    const char *why = NULL;
    VT_RETURN_ERROR_IF(vti_tc_mma_kind(arch, *cc, &why) < 0, VT_ERR_UNSUPPORTED, "the tensor-core mode %s on GPU sm_%d: %s",
                       arch->name, *cc, why);
    int sm = vti_tc_mma_model_sm(arch);
    VT_RETURN_ERROR_IF(sm / 10 != *cc / 10, VT_ERR_UNSUPPORTED,
                       "the tensor-core mode %s models the tensor cores of sm_%d GPUs; this GPU is sm_%d, whose mma "
                       "arithmetic is not that model's (train with a mode of this GPU's generation, or emulate it "
                       "with --backend cpu)",
                       arch->name, sm, *cc);
    return VT_OK;
}

/* the FP32 bits of an element, as text */
static void f32_text(float x, char *buf, size_t n)
{
    uint32_t u;
    memcpy(&u, &x, 4);
    snprintf(buf, n, "0x%08X (%.9g)", (unsigned)u, (double)x);
}

/* VT_CUDA_CHECK_TC=1: the device's C against vt_tc_gemm on the same (device) operands */
static vt_err tc_check(vt_cuda *g, const vt_tc_arch *arch, uint32_t op_id, size_t G, int tA, int tB, size_t M,
                       size_t N, size_t K, const float *dA, const float *dB, const float *dC)
{
    size_t na = G * M * K, nb = G * K * N, nc = G * M * N;
    float *h = (float *)malloc((na + nb + 2 * nc + M * K + K * N + 1) * sizeof(float));
    VT_RETURN_ERROR_IF(!h, VT_ERR_NOMEM, "out of memory (the tensor-core check)");
    float *hA = h, *hB = hA + na, *hC = hB + nb, *ref = hC + nc, *a = ref + nc, *b = a + M * K;
    cudaError_t ce = cudaSuccess;
    if (na) ce = cudaMemcpyAsync(hA, dA, na * sizeof(float), cudaMemcpyDeviceToHost, g->s);
    if (ce == cudaSuccess && nb) ce = cudaMemcpyAsync(hB, dB, nb * sizeof(float), cudaMemcpyDeviceToHost, g->s);
    if (ce == cudaSuccess) ce = cudaMemcpyAsync(hC, dC, nc * sizeof(float), cudaMemcpyDeviceToHost, g->s);
    if (ce == cudaSuccess) ce = cudaStreamSynchronize(g->s);
    if (ce != cudaSuccess) {
        free(h);
        return cu_fail(ce, "the tensor-core check's copies");
    }
    vt_err e = VT_OK;
    for (size_t q = 0; q < G && !e; q++) { /* op(A_q), op(B_q) row-major, as the CPU's tc path */
        const float *Aq = hA + q * M * K, *Bq = hB + q * K * N;
        for (size_t i = 0; i < M; i++)
            for (size_t k = 0; k < K; k++) a[i * K + k] = tA ? Aq[k * M + i] : Aq[i * K + k];
        for (size_t k = 0; k < K; k++)
            for (size_t j = 0; j < N; j++) b[k * N + j] = tB ? Bq[j * K + k] : Bq[k * N + j];
        e = vt_tc_gemm(arch, M, N, K, a, b, ref + q * M * N);
    }
    if (e) {
        free(h);
        return vt_error_prefix(e, "the tensor-core check (VT_CUDA_CHECK_TC) of operation %u: ", op_id);
    }
    size_t first = nc, bad = 0;
    for (size_t x = 0; x < nc; x++)
        if (memcmp(&hC[x], &ref[x], 4) != 0) {
            if (first == nc) first = x;
            bad++;
        }
    if (bad) {
        char sd[48], se[48];
        f32_text(hC[first], sd, sizeof sd);
        f32_text(ref[first], se, sizeof se);
        size_t q = first / (M * N), i = first / N % M, j = first % N;
        e = vt_set_error(VT_ERR_INTERNAL,
                         "the tensor-core check (VT_CUDA_CHECK_TC) of operation %u (%s, %zu x %zu x %zu x %zu): "
                         "C[%zu][%zu][%zu] differs: device %s, emulator %s; %zu of %zu elements differ",
                         op_id, arch->name, G, M, N, K, q, i, j, sd, se, bad, nc);
    }
    free(h);
    return e;
}

/* The mode's GEMM on device operands into the device's C (vt_cuda_int.h). */
vt_err vti_cuda_tc_gemm_dev(vt_cuda *g, const vt_tc_arch *arch, uint32_t op_id, size_t G, int tA, int tB, size_t M,
                            size_t N, size_t K, const float *dA, const float *dB, float *dC)
{
    int cc = 0;
    VT_FORWARD_IF_ERROR(tc_supported(g, arch, &cc));
    void *work = NULL;
    VT_FORWARD_IF_ERROR(dbuf(g, B_TCW, vti_tc_mma_work_bytes(arch, G, M, N, K), &work));
    VT_FORWARD_IF_ERROR(vti_tc_mma_gemm(arch, cc, G, tA, tB, M, N, K, dA, dB, dC, work, g->s));
    const char *chk = getenv("VT_CUDA_CHECK_TC");
    if (chk && strcmp(chk, "1") == 0) return tc_check(g, arch, op_id, G, tA, tB, M, N, K, dA, dB, dC);
    return VT_OK;
}

/* The mode's GEMM on host operands (backend/cuda/vt_cuda_plugin.h). */
extern "C" vt_err vt_cudap_tc_gemm(vt_cuda *g, const vt_tc_arch *arch, size_t G, int tA, int tB, size_t M, size_t N,
                                   size_t K, const float *A, const float *B, float *C)
{
    CU(cudaSetDevice(g->dev));
    size_t na = G * M * K, nb = G * K * N, nc = G * M * N;
    void *dA = NULL, *dB = NULL, *dC = NULL;
    VT_FORWARD_IF_ERROR(dbuf(g, B_A32, na * sizeof(float), &dA));
    VT_FORWARD_IF_ERROR(dbuf(g, B_B32, nb * sizeof(float), &dB));
    VT_FORWARD_IF_ERROR(dbuf(g, B_C32, nc * sizeof(float), &dC));
    if (na) CU(cudaMemcpyAsync(dA, A, na * sizeof(float), cudaMemcpyHostToDevice, g->s));
    if (nb) CU(cudaMemcpyAsync(dB, B, nb * sizeof(float), cudaMemcpyHostToDevice, g->s));
    VT_FORWARD_IF_ERROR(vti_cuda_tc_gemm_dev(g, arch, 0, G, tA, tB, M, N, K, (const float *)dA, (const float *)dB,
                                             (float *)dC));
    if (nc) CU(cudaMemcpyAsync(C, dC, nc * sizeof(float), cudaMemcpyDeviceToHost, g->s));
    CU(cudaStreamSynchronize(g->s));
    return VT_OK;
}
