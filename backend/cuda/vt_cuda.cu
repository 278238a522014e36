/* vt_cuda.cu - the CUDA backend: rounded GEMMs on an NVIDIA GPU (docs/cuda.md).
 *
 * One GEMM, C = op(A) op(B) of FP32 operands held by the host:
 *   1. the operands go to the device and are widened to FP64 (exact);
 *   2. cuBLAS DGEMM (CUBLAS_COMPUTE_64F_PEDANTIC, default math mode: no TF32, no FP64 emulation) computes
 *      the FP64 products - a reduction longer than 2 VT_PANEL terms in panels of VT_PANEL
 *      consecutive terms (one strided-batched DGEMM over the whole panels, one for the remainder),
 *      the panel results combined by a binary tree of depth ceil(log2 P) (k_tree), so that the
 *      panel bound of rounding_log/ holds for the GPU's value exactly as for the CPU's;
 *   3. the epilogue of rounding/vt_epilogue.h on the device: norms (k_norms), the screen
 *      (k_screen), the stable compaction of the flagged indices in increasing order
 *      (cub::DeviceSelect::Flagged: no atomics), the decision of every flagged element
 *      (k_flagged: tight bound, compensated sum, exact accumulator, record rule) - all from
 *      rounding/vt_round_hd.h and vt_xacc_hd.h, the code the CPU tests run;
 *   4. the FP32 results, the flagged indices and their decisions come back; vt_epi_finish applies
 *      them on the host (log record, counts, faults).
 * A log-rounding replay (an auditor of a log-rounding run) takes steps 1-2 on the device, copies
 * the FP64 values and norms back and judges the trainer's entries on the host with vt_round.
 * Every floating-point operation is an IEEE basic operation compiled with --fmad=false, without
 * fast math, with IEEE division and square root and without flush-to-zero. */
#include "vt_cuda_int.h"

extern "C" unsigned long long vt_cudap_abi(void) { return VT_CUDA_PLUGIN_LAYOUT(); }

vt_err vti_cuda_buf(vt_cuda *g, int k, size_t bytes, void **p)
{
    if (bytes == 0) bytes = 8;
    if (g->cap[k] < bytes) {
        /* the stream may still use the old buffer: let it finish first */
        CU(cudaStreamSynchronize(g->s));
        void *old = g->buf[k];
        g->buf[k] = NULL;
        g->cap[k] = 0;
        if (old) CU(cudaFree(old));
        CU(cudaMalloc(&g->buf[k], bytes));
        g->cap[k] = bytes;
    }
    *p = g->buf[k];
    return VT_OK;
}

extern "C" vt_err vt_cudap_open(vt_cuda **out, char *desc, size_t desc_len)
{
    *out = NULL;
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    VT_RETURN_ERROR_IF(e != cudaSuccess || n == 0, VT_ERR_UNSUPPORTED, "no CUDA GPU is usable here (%s)",
                       e != cudaSuccess ? cudaGetErrorString(e) : "no device");
    int dev = 0;
    const char *env = getenv("VT_CUDA_DEVICE");
    const char *local = getenv("OMPI_COMM_WORLD_LOCAL_RANK"); /* under mpirun: one device per rank */
    if (env && *env) dev = atoi(env);
    else if (local && *local) dev = atoi(local) % n;
    VT_RETURN_ERROR_IF(dev < 0 || dev >= n, VT_ERR_ARG, "VT_CUDA_DEVICE=%d: this machine has %d GPU(s)", dev, n);
    int major = 0, minor = 0;
    CU(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
    CU(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev));
    /* the build holds sm_90 code and its PTX: older GPUs cannot run it (asked before any context) */
    VT_RETURN_ERROR_IF(major < 9, VT_ERR_UNSUPPORTED,
                       "GPU %d has compute capability %d.%d; this build needs 9.0 or newer (sm_90)", dev, major, minor);
    CU(cudaSetDevice(dev));
    cudaDeviceProp prop;
    CU(cudaGetDeviceProperties(&prop, dev));
    vt_cuda *g = (vt_cuda *)calloc(1, sizeof *g);
    VT_RETURN_ERROR_IF(!g, VT_ERR_NOMEM, "out of memory");
    g->dev = dev;
    vt_err err = VT_OK;
    if (cudaStreamCreateWithFlags(&g->s, cudaStreamNonBlocking) != cudaSuccess) {
        free(g);
        VT_RETURN_ERROR(VT_ERR_IO, "CUDA: cannot create a stream");
    }
    if (cublasCreate(&g->h) != CUBLAS_STATUS_SUCCESS) {
        cudaStreamDestroy(g->s);
        free(g);
        VT_RETURN_ERROR(VT_ERR_IO, "cuBLAS: cannot create a handle");
    }
    /* the default math mode: no TF32 and no FP64 emulation (both opt-in modes); checked back */
    cublasMath_t mm;
    if (cublasSetStream(g->h, g->s) != CUBLAS_STATUS_SUCCESS ||
        cublasSetMathMode(g->h, CUBLAS_DEFAULT_MATH) != CUBLAS_STATUS_SUCCESS ||
        cublasGetMathMode(g->h, &mm) != CUBLAS_STATUS_SUCCESS || mm != CUBLAS_DEFAULT_MATH ||
        cublasSetPointerMode(g->h, CUBLAS_POINTER_MODE_HOST) != CUBLAS_STATUS_SUCCESS) {
        err = vt_set_error(VT_ERR_IO, "cuBLAS: cannot set the stream, pointer mode or default math mode");
        vt_cudap_close(g);
        return err;
    }
    if (desc && desc_len) {
        int drv = 0, rt = 0, cbv = 0;
        cudaDriverGetVersion(&drv);
        cudaRuntimeGetVersion(&rt);
        cublasGetVersion(g->h, &cbv);
        snprintf(desc, desc_len, "%s (sm_%d%d, %zu MiB), driver API %d.%d, runtime %d.%d, cuBLAS %d", prop.name,
                 prop.major, prop.minor, (size_t)(prop.totalGlobalMem >> 20), drv / 1000, (drv % 1000) / 10,
                 rt / 1000, (rt % 1000) / 10, cbv);
    }
    *out = g;
    return VT_OK;
}

extern "C" void vt_cudap_close(vt_cuda *g)
{
    if (!g) return;
    vti_cuda_model_free(g);
    for (int k = 0; k < B_COUNT; k++)
        if (g->buf[k]) cudaFree(g->buf[k]);
    if (g->h) cublasDestroy(g->h);
    if (g->s) cudaStreamDestroy(g->s);
    free(g->h_idx);
    free(g->h_res);
    free(g);
}

/* ------------------------------------------------------------------ kernels */


__global__ void k_widen(size_t n, const float *s, double *d)
{
    FOR_EACH(i, n) d[i] = (double)s[i];
}

__global__ void k_norms(size_t n, size_t K, const float *v, size_t si, size_t sk, double *out)
{
    FOR_EACH(i, n) out[i] = vti_norm32(K, v + i * si, sk);
}

/* one level of the panel tree: panel p += panel p + h for p = 0, 2h, 4h, ... */
__global__ void k_tree(size_t n, size_t P, size_t h, double *pan)
{
    size_t pairs = (P + 2 * h - 1) / (2 * h);
    FOR_EACH(t, pairs * n)
    {
        size_t q = t / n, e = t % n, p = q * 2 * h;
        if (p + h < P) pan[p * n + e] = pan[p * n + e] + pan[(p + h) * n + e];
    }
}

__global__ void k_screen(size_t M, size_t N, const double *C, const double *rn, const double *cn, double coef,
                         double k, float *out, uint8_t *flag)
{
    FOR_EACH(e, M * N)
    {
        size_t i = e / N, j = e % N;
        double x = C[e] + 0.0; /* a zero is +0 in every order */
        flag[e] = (uint8_t)!vti_gemm_screen(coef, rn[i], cn[j], x, k, &out[e]);
    }
}

__global__ void k_flagged(vt_gemm_epi d, size_t N, const double *C, const uint64_t *idx, size_t n, vt_epi_res *res)
{
    FOR_EACH(f, n)
    {
        uint64_t e = idx[f];
        vti_gemm_elem(&d, (size_t)(e / N), (size_t)(e % N), C[e] + 0.0, &res[f]);
    }
}

/* the flagged elements' results into the output */
__global__ void k_scatter(const uint64_t *idx, size_t n, const vt_epi_res *res, float *out)
{
    FOR_EACH(f, n) out[idx[f]] = vt_hd_f32(res[f].bits);
}

/* ---------------------------------------------------------------- the GEMM */

static vt_err check_sizes(size_t M, size_t N, size_t K)
{
    VT_RETURN_ERROR_IF(M == 0 || N == 0 || K == 0, VT_ERR_ARG, "GEMM sizes must be at least 1");
    VT_RETURN_ERROR_IF(M > INT32_MAX || N > INT32_MAX || K > VT_MAX_REDUCTION || M > (size_t)INT32_MAX / N ||
                           M * N > ((size_t)1 << 31) - 1 || (M > SIZE_MAX / K) || (N > SIZE_MAX / K),
                       VT_ERR_LIMIT, "GEMM %zu x %zu x %zu: beyond the CUDA backend's limits", M, N, K);
    return VT_OK;
}

static vt_err dgemm(vt_cuda *g, const vt_bound_cfg *cfg, int tA, int tB, size_t M, size_t N, size_t K,
                    const double *a, const double *b, double *C);

/* The FP32 operands on the device (the tight bound and the exact evaluation read them). */
static vt_err upload(vt_cuda *g, size_t M, size_t N, size_t K, const float *A, const float *B, float **a32,
                     float **b32)
{
    VT_FORWARD_IF_ERROR(dbuf(g, B_A32, M * K * sizeof(float), (void **)a32));
    VT_FORWARD_IF_ERROR(dbuf(g, B_B32, K * N * sizeof(float), (void **)b32));
    CU(cudaMemcpyAsync(*a32, A, M * K * sizeof(float), cudaMemcpyHostToDevice, g->s));
    CU(cudaMemcpyAsync(*b32, B, K * N * sizeof(float), cudaMemcpyHostToDevice, g->s));
    return VT_OK;
}

/* Their FP64 copies (exact) and the FP64 products C (row-major M x N) in the configuration's panels. */
static vt_err products(vt_cuda *g, const vt_bound_cfg *cfg, int tA, int tB, size_t M, size_t N, size_t K,
                       const float *a32, const float *b32, double **C)
{
    double *a64 = NULL, *b64 = NULL;
    VT_FORWARD_IF_ERROR(dbuf(g, B_A64, M * K * sizeof(double), (void **)&a64));
    VT_FORWARD_IF_ERROR(dbuf(g, B_B64, K * N * sizeof(double), (void **)&b64));
    VT_FORWARD_IF_ERROR(dbuf(g, B_C, M * N * sizeof(double), (void **)C));
    k_widen<<<GRID(M * K), 0, g->s>>>(M * K, a32, a64);
    k_widen<<<GRID(K * N), 0, g->s>>>(K * N, b32, b64);
    LAUNCH_CHECK();
    return dgemm(g, cfg, tA, tB, M, N, K, a64, b64, *C);
}

/* C (row-major M x N) = op(A) op(B) in FP64 on device operands: cuBLAS computes the column-major
 * C^T = op(B)^T op(A)^T. Panelled when the bound configuration panels K (see the top). */
static vt_err dgemm(vt_cuda *g, const vt_bound_cfg *cfg, int tA, int tB, size_t M, size_t N, size_t K,
                    const double *a, const double *b, double *C)
{
    const double one = 1.0, zero = 0.0;
    cublasOperation_t oA = tA ? CUBLAS_OP_T : CUBLAS_OP_N, oB = tB ? CUBLAS_OP_T : CUBLAS_OP_N;
    int lda = (int)(tA ? M : K), ldb = (int)(tB ? K : N);
    if (!vti_bound_panelled(cfg, K)) {
        CB(cublasGemmEx(g->h, oB, oA, (int)N, (int)M, (int)K, &one, b, CUDA_R_64F, ldb, a, CUDA_R_64F, lda, &zero, C,
                        CUDA_R_64F, (int)N, CUBLAS_COMPUTE_64F_PEDANTIC, CUBLAS_GEMM_DEFAULT));
        return VT_OK;
    }
    size_t P = (K + VT_PANEL - 1) / VT_PANEL, full = K / VT_PANEL, n = M * N;
    VT_RETURN_ERROR_IF(P > SIZE_MAX / 8 / n || P * n * 8 > ((size_t)16 << 30), VT_ERR_LIMIT,
                       "GEMM %zu x %zu x %zu: the panel results would exceed 16 GiB", M, N, K);
    double *pan = NULL;
    VT_FORWARD_IF_ERROR(dbuf(g, B_P, P * n * sizeof(double), (void **)&pan));
    /* panel p of op(A): columns p*VT_PANEL.. of the row-major M x K (tA = 0), rows of the K x M (tA = 1) */
    long long sA = tA ? (long long)VT_PANEL * (long long)M : VT_PANEL;
    long long sB = tB ? VT_PANEL : (long long)VT_PANEL * (long long)N;
    CB(cublasGemmStridedBatchedEx(g->h, oB, oA, (int)N, (int)M, VT_PANEL, &one, b, CUDA_R_64F, ldb, sB, a, CUDA_R_64F,
                                  lda, sA, &zero, pan, CUDA_R_64F, (int)N, (long long)n, (int)full, CUBLAS_COMPUTE_64F_PEDANTIC,
                                  CUBLAS_GEMM_DEFAULT));
    if (full < P) {
        int rest = (int)(K - full * VT_PANEL);
        CB(cublasGemmEx(g->h, oB, oA, (int)N, (int)M, rest, &one, b + full * sB, CUDA_R_64F, ldb, a + full * sA,
                        CUDA_R_64F, lda, &zero, pan + full * n, CUDA_R_64F, (int)N, CUBLAS_COMPUTE_64F_PEDANTIC,
                        CUBLAS_GEMM_DEFAULT));
    }
    for (size_t h = 1; h < P; h *= 2) {
        size_t pairs = (P + 2 * h - 1) / (2 * h);
        k_tree<<<GRID(pairs * n), 0, g->s>>>(n, P, h, pan);
    }
    LAUNCH_CHECK();
    CU(cudaMemcpyAsync(C, pan, n * sizeof(double), cudaMemcpyDeviceToDevice, g->s));
    return VT_OK;
}

static vt_gemm_epi epi_desc(const vt_rctx *rctx, int tA, int tB, size_t M, size_t N, size_t K, const float *a32,
                            const float *b32)
{
    vt_gemm_epi d;
    memset(&d, 0, sizeof d);
    d.A = a32;
    d.B = b32;
    d.a_si = tA ? 1 : K;
    d.a_sk = tA ? M : 1;
    d.b_sk = tB ? 1 : N;
    d.b_sj = tB ? K : 1;
    d.K = K;
    d.cfg = rctx->bound;
    d.record = rctx->bound.rounding == VT_ROUNDING_LOG;
    return d;
}

/* Steps 3 (device) of a GEMM whose FP64 values are in C: the FP32 results into *out_dev, the
 * flagged count into *n_flag, indices and decisions in the device buffers. */
/* the indices of the n flags set, in increasing order, into idx (count *h_num, on the host): a
 * stable selection by prefix sums, no atomics, the same list on every run */
static vt_err compact(vt_cuda *g, size_t n, const uint8_t *flag, uint64_t *idx, int *num, int *h_num)
{
    thrust::counting_iterator<uint64_t> first(0);
    size_t tmp_bytes = 0;
    CU(cub::DeviceSelect::Flagged(NULL, tmp_bytes, first, flag, idx, num, (int)n, g->s));
    void *tmp = NULL;
    VT_FORWARD_IF_ERROR(dbuf(g, B_TMP, tmp_bytes, &tmp));
    CU(cub::DeviceSelect::Flagged(tmp, tmp_bytes, first, flag, idx, num, (int)n, g->s));
    CU(cudaMemcpyAsync(h_num, num, sizeof *h_num, cudaMemcpyDeviceToHost, g->s));
    CU(cudaStreamSynchronize(g->s));
    VT_RETURN_ERROR_IF(*h_num < 0 || (size_t)*h_num > n, VT_ERR_INTERNAL, "CUDA: the compaction counted %d of %zu",
                       *h_num, n);
    return VT_OK;
}

static vt_err epilogue_device(vt_cuda *g, const vt_gemm_epi *d, size_t M, size_t N, double coef, const double *C,
                              float *out, uint64_t *n_flag)
{
    size_t n = M * N;
    double *rn = NULL, *cn = NULL;
    uint8_t *flag = NULL;
    uint64_t *idx = NULL;
    int *num = NULL;
    VT_FORWARD_IF_ERROR(dbuf(g, B_RN, M * sizeof(double), (void **)&rn));
    VT_FORWARD_IF_ERROR(dbuf(g, B_CN, N * sizeof(double), (void **)&cn));
    VT_FORWARD_IF_ERROR(dbuf(g, B_FLAG, n, (void **)&flag));
    VT_FORWARD_IF_ERROR(dbuf(g, B_IDX, n * sizeof(uint64_t), (void **)&idx));
    VT_FORWARD_IF_ERROR(dbuf(g, B_NUM, sizeof(int), (void **)&num));
    k_norms<<<GRID(M), 0, g->s>>>(M, d->K, d->A, d->a_si, d->a_sk, rn);
    k_norms<<<GRID(N), 0, g->s>>>(N, d->K, d->B, d->b_sj, d->b_sk, cn);
    k_screen<<<GRID(n), 0, g->s>>>(M, N, C, rn, cn, coef, d->record ? VT_UNSTABLE_K : 1.0, out, flag);
    LAUNCH_CHECK();
    int h_num = 0;
    VT_FORWARD_IF_ERROR(compact(g, n, flag, idx, num, &h_num));
    if (h_num > 0) {
        vt_epi_res *res = NULL;
        VT_FORWARD_IF_ERROR(dbuf(g, B_RES, (size_t)h_num * sizeof(vt_epi_res), (void **)&res));
        k_flagged<<<GRID((size_t)h_num), 0, g->s>>>(*d, N, C, idx, (size_t)h_num, res);
        k_scatter<<<GRID((size_t)h_num), 0, g->s>>>(idx, (size_t)h_num, res, out);
        LAUNCH_CHECK();
    }
    *n_flag = (uint64_t)h_num;
    return VT_OK;
}

vt_err host_staging(vt_cuda *g, size_t n)
{
    if (g->h_cap >= n) return VT_OK;
    uint64_t *i2 = (uint64_t *)realloc(g->h_idx, (n ? n : 1) * sizeof *i2);
    if (i2) g->h_idx = i2;
    vt_epi_res *r2 = (vt_epi_res *)realloc(g->h_res, (n ? n : 1) * sizeof *r2);
    if (r2) g->h_res = r2;
    VT_RETURN_ERROR_IF(!i2 || !r2, VT_ERR_NOMEM, "out of memory");
    g->h_cap = n;
    return VT_OK;
}

vt_err vti_cuda_gemm_dev(vt_cuda *g, vt_rctx *rctx, uint32_t op_id, int tA, int tB, size_t M, size_t N, size_t K,
                         const float *a32, const float *b32, float *out)
{
    VT_FORWARD_IF_ERROR(check_sizes(M, N, K));
    VT_RETURN_ERROR_IF(!vt_epi_supported(rctx), VT_ERR_INTERNAL, "the device epilogue does not replay a log");
    double coef = vt_epi_coef(rctx, K);
    VT_RETURN_ERROR_IF(!(coef >= 0), VT_ERR_LIMIT, "no bound coefficient for K=%zu", K);
    double *C = NULL;
    VT_FORWARD_IF_ERROR(products(g, &rctx->bound, tA, tB, M, N, K, a32, b32, &C));
    vt_gemm_epi d = epi_desc(rctx, tA, tB, M, N, K, a32, b32);
    uint64_t nf;
    VT_FORWARD_IF_ERROR(epilogue_device(g, &d, M, N, coef, C, out, &nf));
    VT_FORWARD_IF_ERROR(host_staging(g, (size_t)nf));
    if (nf) {
        CU(cudaMemcpyAsync(g->h_idx, g->buf[B_IDX], nf * sizeof(uint64_t), cudaMemcpyDeviceToHost, g->s));
        CU(cudaMemcpyAsync(g->h_res, g->buf[B_RES], nf * sizeof(vt_epi_res), cudaMemcpyDeviceToHost, g->s));
        CU(cudaStreamSynchronize(g->s));
    }
    return vt_epi_finish(rctx, op_id, M, N, nf, g->h_idx, g->h_res, NULL);
}

/* ---- the batched GEMM (batched_matmul): its own bound, THE bound of the kind ---- */

__global__ void k_bmm_norms(size_t G, size_t R, size_t K, const float *v, size_t sg, size_t si, size_t sk, double *out)
{
    FOR_EACH(e, G * R) out[e] = vti_norm32(K, v + (e / R) * sg + (e % R) * si, sk);
}

__global__ void k_bmm_screen(vt_bmm_epi d, size_t n, const double *C, double k, float *out, uint8_t *flag)
{
    FOR_EACH(e, n) flag[e] = (uint8_t)!vti_screen1(C[e] + 0.0, vti_bmm_bound(&d, e), k, VT_SLOP_RECORD, &out[e]);
}

__global__ void k_bmm_flagged(vt_bmm_epi d, const double *C, const uint64_t *idx, size_t n, vt_epi_res *res)
{
    FOR_EACH(f, n) vti_bmm_elem(&d, idx[f], C[idx[f]] + 0.0, &res[f]);
}

vt_err vti_cuda_bmm_dev(vt_cuda *g, vt_rctx *rctx, uint32_t op_id, size_t G, size_t M, size_t N, size_t K, int tA,
                        int tB, const float *a32, const float *b32, float *out)
{
    VT_FORWARD_IF_ERROR(check_sizes(M, N, K));
    VT_RETURN_ERROR_IF(!vt_epi_supported(rctx) || vti_bound_panelled(&rctx->bound, K), VT_ERR_INTERNAL,
                       "the device's batched GEMM records or rounds exactly, unpanelled");
    VT_RETURN_ERROR_IF(G == 0 || G > (size_t)INT32_MAX || M * N > (((size_t)1 << 31) - 1) / G, VT_ERR_LIMIT,
                       "batched GEMM %zu x %zu x %zu x %zu: beyond the CUDA backend's limits", G, M, N, K);
    vt_bmm_epi d;
    memset(&d, 0, sizeof d);
    d.A = a32, d.B = b32, d.M = M, d.N = N, d.K = K;
    d.a_si = tA ? 1 : K, d.a_sk = tA ? M : 1, d.b_sk = tB ? 1 : N, d.b_sj = tB ? K : 1;
    d.record = rctx->bound.rounding == VT_ROUNDING_LOG;
    d.legacy_log = rctx->bound.legacy_log;
    d.coef = vt_epi_coef(rctx, K);
    VT_RETURN_ERROR_IF(!(d.coef >= 0), VT_ERR_LIMIT, "no bound coefficient for K=%zu", K);
    size_t n = G * M * N;
    double *a64 = NULL, *b64 = NULL, *C = NULL, *rn = NULL, *cn = NULL;
    uint8_t *flag = NULL;
    uint64_t *idx = NULL;
    int *num = NULL;
    VT_FORWARD_IF_ERROR(dbuf(g, B_A64, G * M * K * sizeof(double), (void **)&a64));
    VT_FORWARD_IF_ERROR(dbuf(g, B_B64, G * K * N * sizeof(double), (void **)&b64));
    VT_FORWARD_IF_ERROR(dbuf(g, B_C, n * sizeof(double), (void **)&C));
    VT_FORWARD_IF_ERROR(dbuf(g, B_RN, G * M * sizeof(double), (void **)&rn));
    VT_FORWARD_IF_ERROR(dbuf(g, B_CN, G * N * sizeof(double), (void **)&cn));
    VT_FORWARD_IF_ERROR(dbuf(g, B_FLAG, n, (void **)&flag));
    VT_FORWARD_IF_ERROR(dbuf(g, B_IDX, n * sizeof(uint64_t), (void **)&idx));
    VT_FORWARD_IF_ERROR(dbuf(g, B_NUM, sizeof(int), (void **)&num));
    k_widen<<<GRID(G * M * K), 0, g->s>>>(G * M * K, a32, a64);
    k_widen<<<GRID(G * K * N), 0, g->s>>>(G * K * N, b32, b64);
    LAUNCH_CHECK();
    /* per batch one GEMM from +0 (K unpanelled: any order is covered by the bound) */
    const double one = 1.0, zero = 0.0;
    CB(cublasGemmStridedBatchedEx(g->h, tB ? CUBLAS_OP_T : CUBLAS_OP_N, tA ? CUBLAS_OP_T : CUBLAS_OP_N, (int)N, (int)M,
                                  (int)K, &one, b64, CUDA_R_64F, (int)(tB ? K : N), (long long)(K * N), a64, CUDA_R_64F,
                                  (int)(tA ? M : K), (long long)(M * K), &zero, C, CUDA_R_64F, (int)N,
                                  (long long)(M * N), (int)G, CUBLAS_COMPUTE_64F_PEDANTIC, CUBLAS_GEMM_DEFAULT));
    k_bmm_norms<<<GRID(G * M), 0, g->s>>>(G, M, K, a32, M * K, d.a_si, d.a_sk, rn);
    k_bmm_norms<<<GRID(G * N), 0, g->s>>>(G, N, K, b32, K * N, d.b_sj, d.b_sk, cn);
    d.rn = rn, d.cn = cn;
    k_bmm_screen<<<GRID(n), 0, g->s>>>(d, n, C, d.record ? VT_UNSTABLE_K : 1.0, out, flag);
    LAUNCH_CHECK();
    int h_num = 0;
    VT_FORWARD_IF_ERROR(compact(g, n, flag, idx, num, &h_num));
    uint64_t nf = (uint64_t)h_num;
    VT_FORWARD_IF_ERROR(host_staging(g, (size_t)nf));
    if (nf) {
        vt_epi_res *res = NULL;
        VT_FORWARD_IF_ERROR(dbuf(g, B_RES, (size_t)nf * sizeof(vt_epi_res), (void **)&res));
        k_bmm_flagged<<<GRID((size_t)nf), 0, g->s>>>(d, C, idx, (size_t)nf, res);
        k_scatter<<<GRID((size_t)nf), 0, g->s>>>(idx, (size_t)nf, res, out);
        LAUNCH_CHECK();
        CU(cudaMemcpyAsync(g->h_idx, idx, nf * sizeof(uint64_t), cudaMemcpyDeviceToHost, g->s));
        CU(cudaMemcpyAsync(g->h_res, res, nf * sizeof(vt_epi_res), cudaMemcpyDeviceToHost, g->s));
        CU(cudaStreamSynchronize(g->s));
    }
    return vt_epi_finish(rctx, op_id, G * M, N, nf, g->h_idx, g->h_res, NULL);
}

/* log replay: the FP64 values and norms to the host, the judgement there (vt_round) */
static vt_err replay_on_host(vt_cuda *g, vt_rctx *rctx, uint32_t op_id, int tA, int tB, size_t M, size_t N, size_t K,
                             const float *A, const float *B, const float *a32, const float *b32, float *out)
{
    double coef = vt_epi_coef(rctx, K);
    VT_RETURN_ERROR_IF(!(coef >= 0), VT_ERR_LIMIT, "no bound coefficient for K=%zu", K);
    double *C = NULL, *rn = NULL, *cn = NULL;
    size_t n = M * N;
    VT_FORWARD_IF_ERROR(products(g, &rctx->bound, tA, tB, M, N, K, a32, b32, &C));
    VT_FORWARD_IF_ERROR(dbuf(g, B_RN, M * sizeof(double), (void **)&rn));
    VT_FORWARD_IF_ERROR(dbuf(g, B_CN, N * sizeof(double), (void **)&cn));
    k_norms<<<GRID(M), 0, g->s>>>(M, K, a32, tA ? 1 : K, tA ? M : 1, rn);
    k_norms<<<GRID(N), 0, g->s>>>(N, K, b32, tB ? K : 1, tB ? 1 : N, cn);
    LAUNCH_CHECK();
    double *hx = (double *)malloc(n * sizeof *hx), *hr = (double *)malloc(M * sizeof *hr),
           *hc = (double *)malloc(N * sizeof *hc);
    vt_err err = VT_OK;
    cudaError_t ce = cudaSuccess;
    if (!hx || !hr || !hc) err = vt_set_error(VT_ERR_NOMEM, "out of memory");
    if (!err) ce = cudaMemcpyAsync(hx, C, n * sizeof *hx, cudaMemcpyDeviceToHost, g->s);
    if (!err && ce == cudaSuccess) ce = cudaMemcpyAsync(hr, rn, M * sizeof *hr, cudaMemcpyDeviceToHost, g->s);
    if (!err && ce == cudaSuccess) ce = cudaMemcpyAsync(hc, cn, N * sizeof *hc, cudaMemcpyDeviceToHost, g->s);
    if (!err && ce == cudaSuccess) ce = cudaStreamSynchronize(g->s);
    if (!err && ce != cudaSuccess) err = cu_fail(ce, "log replay: copy back");
    if (ce != cudaSuccess || err) (void)cudaStreamSynchronize(g->s); /* nothing queued may outlive the buffers */
    if (!err) {
        for (size_t e = 0; e < n; e++) hx[e] = hx[e] + 0.0;
        vt_bounds bd;
        vt_gemm_bounds(tA, tB, M, N, K, A, B, hr, hc, coef, &bd);
        err = vt_round(rctx, op_id, hx, &bd, M, N, out);
    }
    free(hx);
    free(hr);
    free(hc);
    return err;
}

extern "C" vt_err vt_cudap_gemm_round(vt_cuda *g, vt_rctx *rctx, uint32_t op_id, int tA, int tB, size_t M, size_t N,
                                     size_t K, const float *A, const float *B, float *out)
{
    (void)cudaGetLastError(); /* not an error of this call */
    VT_FORWARD_IF_ERROR(check_sizes(M, N, K));
    CU(cudaSetDevice(g->dev));
    float *a32 = NULL, *b32 = NULL, *o32 = NULL;
    VT_FORWARD_IF_ERROR(upload(g, M, N, K, A, B, &a32, &b32));
    if (!vt_epi_supported(rctx)) return replay_on_host(g, rctx, op_id, tA, tB, M, N, K, A, B, a32, b32, out);
    VT_FORWARD_IF_ERROR(dbuf(g, B_OUT, M * N * sizeof(float), (void **)&o32));
    vt_err err = vti_cuda_gemm_dev(g, rctx, op_id, tA, tB, M, N, K, a32, b32, o32);
    /* the results come back even on failure: vt_round leaves the elements before the failing one */
    CU(cudaMemcpyAsync(out, o32, M * N * sizeof(float), cudaMemcpyDeviceToHost, g->s));
    CU(cudaStreamSynchronize(g->s));
    return err;
}

/* the plain GEMMs' operands (elements of esz bytes) to buffers kA, kB, and the result buffer kC */
static vt_err put_operands(vt_cuda *g, int kA, int kB, int kC, size_t esz, size_t M, size_t N, size_t K, const void *A,
                           const void *B, void **a, void **b, void **c)
{
    VT_FORWARD_IF_ERROR(dbuf(g, kA, M * K * esz, a));
    VT_FORWARD_IF_ERROR(dbuf(g, kB, K * N * esz, b));
    VT_FORWARD_IF_ERROR(dbuf(g, kC, M * N * esz, c));
    CU(cudaMemcpyAsync(*a, A, M * K * esz, cudaMemcpyHostToDevice, g->s));
    CU(cudaMemcpyAsync(*b, B, K * N * esz, cudaMemcpyHostToDevice, g->s));
    return VT_OK;
}

extern "C" vt_err vt_cudap_gemm_plain64(vt_cuda *g, int tA, int tB, size_t M, size_t N, size_t K, const double *A,
                                       const double *B, double *C)
{
    (void)cudaGetLastError(); /* not an error of this call */
    VT_FORWARD_IF_ERROR(check_sizes(M, N, K));
    CU(cudaSetDevice(g->dev));
    double *a64 = NULL, *b64 = NULL, *dC = NULL;
    VT_FORWARD_IF_ERROR(put_operands(g, B_A64, B_B64, B_C, sizeof(double), M, N, K, A, B, (void **)&a64, (void **)&b64,
                                     (void **)&dC));
    vt_bound_cfg whole;
    memset(&whole, 0, sizeof whole);
    whole.whole_reduction = 1; /* one DGEMM: the plain baseline has no panels */
    VT_FORWARD_IF_ERROR(dgemm(g, &whole, tA, tB, M, N, K, a64, b64, dC));
    CU(cudaMemcpyAsync(C, dC, M * N * sizeof(double), cudaMemcpyDeviceToHost, g->s));
    CU(cudaStreamSynchronize(g->s));
    return VT_OK;
}

static vt_err sgemm_dev(vt_cuda *g, int tA, int tB, size_t M, size_t N, size_t K, const float *a, const float *b,
                        float *C)
{
    const float one = 1.0f, zero = 0.0f;
    cublasOperation_t oA = tA ? CUBLAS_OP_T : CUBLAS_OP_N, oB = tB ? CUBLAS_OP_T : CUBLAS_OP_N;
    CB(cublasGemmEx(g->h, oB, oA, (int)N, (int)M, (int)K, &one, b, CUDA_R_32F, (int)(tB ? K : N), a, CUDA_R_32F,
                    (int)(tA ? M : K), &zero, C, CUDA_R_32F, (int)N, CUBLAS_COMPUTE_32F_PEDANTIC, CUBLAS_GEMM_DEFAULT));
    return VT_OK;
}

extern "C" vt_err vt_cudap_gemm_plain32(vt_cuda *g, int tA, int tB, size_t M, size_t N, size_t K, const float *A,
                                       const float *B, float *C)
{
    (void)cudaGetLastError(); /* not an error of this call */
    VT_FORWARD_IF_ERROR(check_sizes(M, N, K));
    CU(cudaSetDevice(g->dev));
    float *a32 = NULL, *b32 = NULL, *c32 = NULL;
    VT_FORWARD_IF_ERROR(put_operands(g, B_A32, B_B32, B_C32, sizeof(float), M, N, K, A, B, (void **)&a32, (void **)&b32,
                                     (void **)&c32));
    VT_FORWARD_IF_ERROR(sgemm_dev(g, tA, tB, M, N, K, a32, b32, c32));
    CU(cudaMemcpyAsync(C, c32, M * N * sizeof(float), cudaMemcpyDeviceToHost, g->s));
    CU(cudaStreamSynchronize(g->s));
    return VT_OK;
}

static vt_err time_phases(vt_cuda *g, int tA, int tB, size_t M, size_t N, size_t K, int reps, const vt_bound_cfg *pcfg,
                          const vt_gemm_epi *pd, double coef, const float *a32, const float *b32, double *a64,
                          double *b64, double *C, float *c32, float *out_dev, cudaEvent_t *ev, double *t_verif,
                          double *t_dgemm, double *t_sgemm, uint64_t *n_flagged);

extern "C" vt_err vt_cudap_time_gemm(vt_cuda *g, int tA, int tB, size_t M, size_t N, size_t K, int reps,
                                    double *t_verif, double *t_dgemm, double *t_sgemm, uint64_t *n_flagged)
{
    *t_verif = *t_dgemm = *t_sgemm = 0;
    *n_flagged = 0;
    VT_FORWARD_IF_ERROR(check_sizes(M, N, K));
    VT_RETURN_ERROR_IF(reps < 1, VT_ERR_ARG, "reps must be at least 1");
    CU(cudaSetDevice(g->dev));
    float *A = (float *)malloc(M * K * sizeof(float)), *B = (float *)malloc(K * N * sizeof(float));
    if (!A || !B) {
        free(A);
        free(B);
        VT_RETURN_ERROR(VT_ERR_NOMEM, "out of memory");
    }
    uint64_t s = 0x9e3779b97f4a7c15ULL;
    for (size_t e = 0; e < M * K; e++) s = s * 6364136223846793005ULL + 1, A[e] = (float)((double)(s >> 11) * 0x1p-53 - 0.5);
    for (size_t e = 0; e < K * N; e++) s = s * 6364136223846793005ULL + 1, B[e] = (float)((double)(s >> 11) * 0x1p-53 - 0.5);
    float *a32 = NULL, *b32 = NULL, *c32 = NULL, *out_dev = NULL;
    double *a64 = NULL, *b64 = NULL, *C = NULL;
    vt_err err = upload(g, M, N, K, A, B, &a32, &b32);
    free(A);
    free(B);
    VT_FORWARD_IF_ERROR(err);
    vt_bound_cfg w0;
    memset(&w0, 0, sizeof w0);
    w0.whole_reduction = 1;
    VT_FORWARD_IF_ERROR(products(g, &w0, tA, tB, M, N, K, a32, b32, &C));
    a64 = (double *)g->buf[B_A64];
    b64 = (double *)g->buf[B_B64];
    VT_FORWARD_IF_ERROR(dbuf(g, B_C32, M * N * sizeof(float), (void **)&c32));
    VT_FORWARD_IF_ERROR(dbuf(g, B_OUT, M * N * sizeof(float), (void **)&out_dev));
    vt_rctx rctx;
    vt_bound_cfg cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.rounding = VT_ROUNDING_EXACT;
    vt_rctx_init(&rctx, VT_RMODE_RECORD, cfg);
    vt_gemm_epi d = epi_desc(&rctx, tA, tB, M, N, K, a32, b32);
    double coef = vt_epi_coef(&rctx, K);
    cudaEvent_t ev[2] = {NULL, NULL};
    err = VT_OK;
    for (int k = 0; k < 2 && !err; k++)
        if (cudaEventCreate(&ev[k]) != cudaSuccess) err = vt_set_error(VT_ERR_IO, "CUDA: cannot create an event");
    if (!err) err = time_phases(g, tA, tB, M, N, K, reps, &cfg, &d, coef, a32, b32, a64, b64, C, c32, out_dev, ev, t_verif,
                                t_dgemm, t_sgemm, n_flagged);
    for (int k = 0; k < 2; k++)
        if (ev[k]) cudaEventDestroy(ev[k]);
    return err;
}

static vt_err time_phases(vt_cuda *g, int tA, int tB, size_t M, size_t N, size_t K, int reps, const vt_bound_cfg *pcfg,
                          const vt_gemm_epi *pd, double coef, const float *a32, const float *b32, double *a64,
                          double *b64, double *C, float *c32, float *out_dev, cudaEvent_t *ev, double *t_verif,
                          double *t_dgemm, double *t_sgemm, uint64_t *n_flagged)
{
    cudaEvent_t e0 = ev[0], e1 = ev[1];
    const vt_bound_cfg cfg = *pcfg;
    const vt_gemm_epi d = *pd;
    vt_bound_cfg whole = cfg;
    whole.whole_reduction = 1;
    float ms;
    for (int phase = 0; phase < 3; phase++) {
        for (int r = -1; r < reps; r++) { /* r = -1: warm-up */
            if (r == 0) CU(cudaEventRecord(e0, g->s));
            if (phase == 0) {
                k_widen<<<GRID(M * K), 0, g->s>>>(M * K, a32, a64);
                k_widen<<<GRID(K * N), 0, g->s>>>(K * N, b32, b64);
                VT_FORWARD_IF_ERROR(dgemm(g, &cfg, tA, tB, M, N, K, a64, b64, C));
                VT_FORWARD_IF_ERROR(epilogue_device(g, &d, M, N, coef, C, out_dev, n_flagged));
            } else if (phase == 1) {
                VT_FORWARD_IF_ERROR(dgemm(g, &whole, tA, tB, M, N, K, a64, b64, C));
            } else {
                VT_FORWARD_IF_ERROR(sgemm_dev(g, tA, tB, M, N, K, a32, b32, c32));
            }
        }
        CU(cudaEventRecord(e1, g->s));
        CU(cudaEventSynchronize(e1));
        CU(cudaEventElapsedTime(&ms, e0, e1));
        double t = (double)ms * 1e-3 / reps;
        if (phase == 0) *t_verif = t;
        else if (phase == 1) *t_dgemm = t;
        else *t_sgemm = t;
    }
    return VT_OK;
}
