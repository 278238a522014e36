/* vt_tc_mma.cu - the tensor-core mode's GEMM on the GPU (vt_tc_mma.h; docs/tensorcore.md "The GPU
 * kernel"). Two kernels: the operands to the type (kernels/vt_tc_hd.h's RNE conversion, the
 * emulator's own code; zero padding to whole tiles), then one warp per 16 rows x 32 columns of C
 * issuing, for each k-tile of the instruction's K in increasing k, one mma.sync per 16 x 8 block
 * with the accumulator carried in registers from +0. The operands' padding is zeros: A's padding of K
 * is -0 and B's +0, so that a padded product is -0, which changes no IEEE sum (x + -0 = x, -0 + -0 =
 * -0: the model's partial group, whose missing products take no part, also in the sign of a zero
 * result); the padded rows and columns of C are not written. sm90-e4m3f16: the operands rounded to
 * E4M3 and converted exactly to FP16 (kernels/vt_tc_hd.h), then the FP16 instruction: the model's
 * groups of 16 by construction.
 *
 * Fragment layouts (PTX ISA, "Matrix fragments for mma.m16n8k16 / m16n8k8 / m16n8k32"): lane l,
 * g = l / 4, t = l % 4; the A registers hold row g or g + 8 and the B registers column g, each 32-bit
 * register the consecutive k of bytes [4t, 4t + 4) or [4t + 16, 4t + 20) of the k-tile's row
 * (16-bit types: k = 2t, 2t + 1 and 2t + 8, 2t + 9; E4M3: k = 4t .. 4t + 3 and 4t + 16 .. 4t + 19);
 * the accumulator c0, c1 at row g, columns 2t, 2t + 1, c2, c3 at row g + 8. Within one instruction
 * the model's group is the whole K, so only the rows, the columns and the pairing of A's and B's k
 * matter (the products' order inside a group does not: tests/unit/test_tc.c); test_tc_gpu checks the
 * layout with exactly representable integers before anything else. */
#include <cuda_runtime.h>

#include "vt_tc_mma.h"

#if defined(__CUDACC__) && defined(__FAST_MATH__)
#error "fast math is forbidden in this project"
#endif

#define TC_WARPS 4 /* warps per block, each its own 16-row tile */
#define TC_NT 4    /* 8-column blocks per warp */

static vt_err tc_cu(cudaError_t e, const char *what)
{
    return vt_set_error(e == cudaErrorMemoryAllocation ? VT_ERR_NOMEM : VT_ERR_IO, "CUDA (tensor-core GEMM): %s: %s",
                        what, cudaGetErrorString(e));
}
#define TCU(call)                                                                                                      \
    do {                                                                                                               \
        cudaError_t e_ = (call);                                                                                       \
        if (e_ != cudaSuccess) return tc_cu(e_, #call);                                                                \
    } while (0)

/* the instruction's K and the operands' bytes per element (E4M3F16: FP16 in the kernel) */
__host__ __device__ static inline int kind_k(int kind)
{
    return kind == VTI_TC_MMA_E4M3_K32 ? 32 : kind == VTI_TC_MMA_BF16_K8 || kind == VTI_TC_MMA_F16_K8 ? 8 : 16;
}
__host__ __device__ static inline int kind_es(int kind) { return kind == VTI_TC_MMA_E4M3_K32 ? 1 : 2; }

extern "C" int vti_tc_mma_kind_k(int kind) { return kind_k(kind); }
extern "C" int vti_tc_mma_kind_ok(int kind, int cc)
{
    return kind >= VTI_TC_MMA_BF16_K16 && kind <= VTI_TC_MMA_E4M3F16_K16 && cc >= (kind == VTI_TC_MMA_E4M3_K32 ? 89 : 80);
}

extern "C" int vti_tc_mma_kind(const vt_tc_arch *a, int cc, const char **why)
{
    const char *w = NULL;
    int k = -1;
    if (!a) w = "no tensor-core model";
    else if (a->zero_exp != VT_TC_ZERO_EXP_NONE || a->zero_sign != VT_TC_ZERO_IEEE)
        w = "a variant of the zeros (zero_exp, zero_sign) is a question for the GPU check, not a mode: no kernel";
    else if (a->type == VT_TC_BF16 && a->group == 16) k = VTI_TC_MMA_BF16_K16;
    else if (a->type == VT_TC_FP16 && a->group == 16) k = VTI_TC_MMA_F16_K16;
    else if (a->type == VT_TC_BF16 && a->group == 8) k = VTI_TC_MMA_BF16_K8;
    else if (a->type == VT_TC_FP16 && a->group == 8) k = VTI_TC_MMA_F16_K8;
    else if (a->type == VT_TC_E4M3 && a->via_fp16 && a->group == 16) k = VTI_TC_MMA_E4M3F16_K16;
    else if (a->type == VT_TC_E4M3 && !a->via_fp16 && a->group == 32)
        w = "the model is Hopper's FP8 wgmma (groups of 32 products, a 14-bit window), which no kernel of this "
            "build issues: mma.sync's E4M3 runs on Hopper through FP16 (cutlass issue 1986), another arithmetic - "
            "the mode tc-e4m3f16-sm90 - so the GPU kernel is refused rather than run a model it does not compute "
            "(--backend cpu emulates tc-e4m3-sm90)";
    else w = "no mma.sync instruction adds one group of this model (BF16/FP16 groups of 8 or 16, E4M3 through FP16 of 16)";
    if (k >= 0 && !vti_tc_mma_kind_ok(k, cc)) w = "mma.sync with BF16/FP16 operands needs compute capability 8.0", k = -1;
    if (why) *why = w;
    return k;
}

extern "C" int vti_tc_mma_model_sm(const vt_tc_arch *a)
{
    if (!a || !a->name) return 0;
    if (strncmp(a->name, "sm90-", 5) == 0) return 90;
    if (strncmp(a->name, "sm80-", 5) == 0) return 80;
    return 0;
}

static size_t round_up(size_t x, size_t m) { return (x + m - 1) / m * m; }

extern "C" size_t vti_tc_mma_work_bytes(const vt_tc_arch *a, size_t G, size_t M, size_t N, size_t K)
{
    int kind = vti_tc_mma_kind(a, 90, NULL);
    if (kind < 0) return 0;
    size_t Kp = round_up(K ? K : 1, (size_t)kind_k(kind));
    return G * (round_up(M, 16) + round_up(N, 8)) * Kp * (size_t)kind_es(kind);
}

/* ------------------------------------------------------------------ device code */

__device__ static inline uint32_t ld32(const uint8_t *p) { return *(const uint32_t *)p; }

/* one instruction: acc (FP32 bits as floats, moved, never computed) += A (16 x K) B (K x 8); a
 * points at row 0 of the k-tile, rows lda bytes apart; b at column 0, columns ldb bytes apart */
template <int KIND>
__device__ static inline void mma_step(float acc[4], const uint8_t *a, size_t lda, const uint8_t *b, size_t ldb,
                                       int lane)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    const int g = lane >> 2, t = lane & 3;
    const uint8_t *lo = a + (size_t)g * lda + 4 * t, *hi = a + (size_t)(g + 8) * lda + 4 * t;
    const uint8_t *col = b + (size_t)g * ldb + 4 * t;
    if (KIND == VTI_TC_MMA_BF16_K8 || KIND == VTI_TC_MMA_F16_K8) {
        uint32_t a0 = ld32(lo), a1 = ld32(hi), b0 = ld32(col);
        if (KIND == VTI_TC_MMA_BF16_K8)
            asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5}, {%6}, "
                         "{%0,%1,%2,%3};\n"
                         : "+f"(acc[0]), "+f"(acc[1]), "+f"(acc[2]), "+f"(acc[3])
                         : "r"(a0), "r"(a1), "r"(b0));
        else
            asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5}, {%6}, "
                         "{%0,%1,%2,%3};\n"
                         : "+f"(acc[0]), "+f"(acc[1]), "+f"(acc[2]), "+f"(acc[3])
                         : "r"(a0), "r"(a1), "r"(b0));
        return;
    }
    uint32_t a0 = ld32(lo), a1 = ld32(hi), a2 = ld32(lo + 16), a3 = ld32(hi + 16), b0 = ld32(col),
             b1 = ld32(col + 16);
    if (KIND == VTI_TC_MMA_BF16_K16)
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                     "{%0,%1,%2,%3};\n"
                     : "+f"(acc[0]), "+f"(acc[1]), "+f"(acc[2]), "+f"(acc[3])
                     : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
    else if (KIND == VTI_TC_MMA_F16_K16)
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                     "{%0,%1,%2,%3};\n"
                     : "+f"(acc[0]), "+f"(acc[1]), "+f"(acc[2]), "+f"(acc[3])
                     : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
    else {
#if __CUDA_ARCH__ >= 890
        asm volatile("mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                     "{%0,%1,%2,%3};\n"
                     : "+f"(acc[0]), "+f"(acc[1]), "+f"(acc[2]), "+f"(acc[3])
                     : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
#else
        __trap();
#endif
    }
#else
    (void)acc, (void)a, (void)lda, (void)b, (void)ldb, (void)lane;
    __trap();
#endif
}

/* the operands to the type (f16: then E4M3 -> FP16, exact), padded with zeros (A's K with -0, whose
 * products change no sum): Ah [G][Mp][Kp], Bh [G][Np][Kp] (B transposed) */
__global__ static void k_tc_convert(vt_tc_type type, int f16, int es, size_t G, int tA, int tB, size_t M, size_t N,
                                    size_t K, size_t Mp, size_t Np, size_t Kp, const float *A, const float *B,
                                    uint8_t *Ah, uint8_t *Bh)
{
    const size_t na = G * Mp * Kp, n = na + G * Np * Kp;
    const uint16_t neg0 = es == 1 ? 0x80 : 0x8000; /* the stored type's -0 */
    for (size_t x = blockIdx.x * (size_t)blockDim.x + threadIdx.x; x < n; x += (size_t)gridDim.x * blockDim.x) {
        uint16_t v = 0;
        if (x < na) {
            size_t g = x / (Mp * Kp), i = x / Kp % Mp, k = x % Kp;
            if (i < M && k < K) {
                const float *Ag = A + g * M * K;
                v = vt_tc_from_f32_hd(type, __float_as_uint(tA ? Ag[k * M + i] : Ag[i * K + k]));
                if (f16) v = vt_tc_e4m3_to_fp16_hd(v);
            } else if (k >= K) {
                v = neg0;
            }
            if (es == 2) ((uint16_t *)Ah)[x] = v;
            else Ah[x] = (uint8_t)v;
        } else {
            size_t y = x - na, g = y / (Np * Kp), j = y / Kp % Np, k = y % Kp;
            if (j < N && k < K) {
                const float *Bg = B + g * K * N;
                v = vt_tc_from_f32_hd(type, __float_as_uint(tB ? Bg[j * K + k] : Bg[k * N + j]));
                if (f16) v = vt_tc_e4m3_to_fp16_hd(v);
            }
            if (es == 2) ((uint16_t *)Bh)[y] = v;
            else Bh[y] = (uint8_t)v;
        }
    }
}

/* block (x: 32-column strip, y: TC_WARPS 16-row tiles, z: batch); each warp its 16 x 32 of C */
template <int KIND>
__global__ static void k_tc_gemm(size_t M, size_t N, size_t Mp, size_t Np, size_t Kp, const uint8_t *Ah,
                                 const uint8_t *Bh, float *C, size_t g0)
{
    const int ES = KIND == VTI_TC_MMA_E4M3_K32 ? 1 : 2;
    const int KI = KIND == VTI_TC_MMA_E4M3_K32 ? 32 : (KIND == VTI_TC_MMA_BF16_K8 || KIND == VTI_TC_MMA_F16_K8) ? 8 : 16;
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    const size_t g = g0 + blockIdx.z;
    const size_t r0 = ((size_t)blockIdx.y * TC_WARPS + w) * 16, c0 = (size_t)blockIdx.x * TC_NT * 8;
    if (r0 >= Mp) return; /* the whole warp: mma.sync needs every lane */
    const size_t ld = Kp * ES;
    const uint8_t *a = Ah + (g * Mp + r0) * ld, *b = Bh + (g * Np + c0) * ld;
    float acc[TC_NT][4];
    for (int nt = 0; nt < TC_NT; nt++)
        for (int r = 0; r < 4; r++) acc[nt][r] = __uint_as_float(0u); /* +0 */
    for (size_t k0 = 0; k0 < Kp; k0 += KI) /* the groups in increasing k; the accumulator stays in registers */
        for (int nt = 0; nt < TC_NT; nt++)
            if (c0 + (size_t)nt * 8 < Np) mma_step<KIND>(acc[nt], a + k0 * ES, ld, b + ((size_t)nt * 8 * Kp + k0) * ES, ld, lane);
    const int gi = lane >> 2, t = lane & 3;
    float *Cg = C + g * M * N;
    for (int nt = 0; nt < TC_NT; nt++)
        for (int r = 0; r < 4; r++) {
            size_t i = r0 + (size_t)gi + (r >= 2 ? 8 : 0), j = c0 + (size_t)nt * 8 + 2 * (size_t)t + (r & 1);
            if (i < M && j < N) Cg[i * N + j] = acc[nt][r];
        }
}

/* the check's tiles: one warp per tile (KIND E4M3F16_K16: the E4M3 bits converted to FP16, then the
 * FP16 instruction) */
template <int KIND>
__global__ static void k_tc_tiles(size_t n, const uint16_t *A, const uint16_t *B, const uint32_t *C, uint32_t *D)
{
    const int KI = KIND == VTI_TC_MMA_E4M3_K32 ? 32 : (KIND == VTI_TC_MMA_BF16_K8 || KIND == VTI_TC_MMA_F16_K8) ? 8 : 16;
    const int ES = KIND == VTI_TC_MMA_E4M3_K32 ? 1 : 2;
    const int F16 = KIND == VTI_TC_MMA_E4M3F16_K16;
    const int MK = F16 ? (int)VTI_TC_MMA_F16_K16 : KIND; /* the instruction issued */
    const int lane = threadIdx.x & 31;
    const size_t tile = blockIdx.x * (size_t)(blockDim.x / 32) + (threadIdx.x >> 5);
    if (tile >= n) return;
    __shared__ __align__(16) uint8_t sm[8][(16 + 8) * 32 * 2]; /* per warp: A then B in the type's bytes */
    uint8_t *sa = sm[threadIdx.x >> 5], *sb = sa + 16 * KI * ES;
    for (int x = lane; x < 16 * KI; x += 32) {
        uint16_t v = A[tile * 16 * KI + x];
        if (F16) v = vt_tc_e4m3_to_fp16_hd(v);
        if (ES == 2) ((uint16_t *)sa)[x] = v;
        else sa[x] = (uint8_t)v;
    }
    for (int x = lane; x < 8 * KI; x += 32) {
        uint16_t v = B[tile * 8 * KI + x];
        if (F16) v = vt_tc_e4m3_to_fp16_hd(v);
        if (ES == 2) ((uint16_t *)sb)[x] = v;
        else sb[x] = (uint8_t)v;
    }
    __syncwarp();
    const int g = lane >> 2, t = lane & 3;
    float acc[4];
    for (int r = 0; r < 4; r++) acc[r] = __uint_as_float(C[tile * 128 + (size_t)(g + (r >= 2 ? 8 : 0)) * 8 + 2 * t + (r & 1)]);
    mma_step<MK>(acc, sa, (size_t)KI * ES, sb, (size_t)KI * ES, lane);
    for (int r = 0; r < 4; r++) D[tile * 128 + (size_t)(g + (r >= 2 ? 8 : 0)) * 8 + 2 * t + (r & 1)] = __float_as_uint(acc[r]);
}

/* ------------------------------------------------------------------ host */

extern "C" vt_err vti_tc_mma_gemm(const vt_tc_arch *arch, int cc, size_t G, int tA, int tB, size_t M, size_t N,
                                  size_t K, const float *A, const float *B, float *C, void *work, void *stream)
{
    const char *why = NULL;
    int kind = vti_tc_mma_kind(arch, cc, &why);
    VT_RETURN_ERROR_IF(kind < 0, VT_ERR_UNSUPPORTED, "tensor-core GEMM (%s): %s", arch && arch->name ? arch->name : "?",
                       why);
    if (G == 0 || M == 0 || N == 0) return VT_OK;
    cudaStream_t s = (cudaStream_t)stream;
    const size_t KI = (size_t)kind_k(kind), es = (size_t)kind_es(kind);
    const size_t Mp = round_up(M, 16), Np = round_up(N, 8), Kp = round_up(K ? K : 1, KI);
    VT_RETURN_ERROR_IF(Mp / 16 > 65535u * TC_WARPS || Np > ((size_t)1 << 40) || Kp > ((size_t)1 << 30), VT_ERR_LIMIT,
                       "tensor-core GEMM: %zu x %zu x %zu is too large for the kernel's grid", M, N, K);
    uint8_t *Ah = (uint8_t *)work, *Bh = Ah + G * Mp * Kp * es;
    size_t n = G * (Mp + Np) * Kp;
    unsigned blocks = (unsigned)((n + 255) / 256 < 65535 ? (n + 255) / 256 : 65535);
    k_tc_convert<<<blocks, 256, 0, s>>>(arch->type, kind == VTI_TC_MMA_E4M3F16_K16, (int)es, G, tA, tB, M, N, K, Mp, Np,
                                        Kp, A, B, Ah, Bh);
    TCU(cudaGetLastError());
    for (size_t g0 = 0; g0 < G; g0 += 65535) {
        size_t gz = G - g0 < 65535 ? G - g0 : 65535;
        dim3 grid((unsigned)((Np / 8 + TC_NT - 1) / TC_NT), (unsigned)((Mp / 16 + TC_WARPS - 1) / TC_WARPS), (unsigned)gz);
        switch (kind) {
        case VTI_TC_MMA_BF16_K16: k_tc_gemm<VTI_TC_MMA_BF16_K16><<<grid, 32 * TC_WARPS, 0, s>>>(M, N, Mp, Np, Kp, Ah, Bh, C, g0); break;
        case VTI_TC_MMA_F16_K16: /* E4M3F16: the operands are FP16 by now */
        case VTI_TC_MMA_E4M3F16_K16: k_tc_gemm<VTI_TC_MMA_F16_K16><<<grid, 32 * TC_WARPS, 0, s>>>(M, N, Mp, Np, Kp, Ah, Bh, C, g0); break;
        case VTI_TC_MMA_BF16_K8: k_tc_gemm<VTI_TC_MMA_BF16_K8><<<grid, 32 * TC_WARPS, 0, s>>>(M, N, Mp, Np, Kp, Ah, Bh, C, g0); break;
        case VTI_TC_MMA_F16_K8: k_tc_gemm<VTI_TC_MMA_F16_K8><<<grid, 32 * TC_WARPS, 0, s>>>(M, N, Mp, Np, Kp, Ah, Bh, C, g0); break;
        default: /* E4M3_K32: no mode issues it (vti_tc_mma_kind) */
            return vt_set_error(VT_ERR_INTERNAL, "tensor-core GEMM: instruction %d is no mode's", kind);
        }
        TCU(cudaGetLastError());
    }
    return VT_OK;
}

extern "C" vt_err vti_tc_mma_tiles(const vt_tc_arch *arch, int cc, size_t n, const uint16_t *A, const uint16_t *B,
                                   const uint32_t *C, uint32_t *D, void *stream)
{
    const char *why = NULL;
    int kind = vti_tc_mma_kind(arch, cc, &why);
    VT_RETURN_ERROR_IF(kind < 0, VT_ERR_UNSUPPORTED, "tensor-core tiles (%s): %s", arch && arch->name ? arch->name : "?",
                       why);
    return vti_tc_mma_tiles_kind(kind, cc, n, A, B, C, D, stream);
}

extern "C" vt_err vti_tc_mma_tiles_kind(int kind, int cc, size_t n, const uint16_t *A, const uint16_t *B,
                                        const uint32_t *C, uint32_t *D, void *stream)
{
    VT_RETURN_ERROR_IF(!vti_tc_mma_kind_ok(kind, cc), VT_ERR_UNSUPPORTED,
                       "tensor-core tiles: instruction %d is not available on compute capability %d", kind, cc);
    if (n == 0) return VT_OK;
    VT_RETURN_ERROR_IF(n > (size_t)65535 * 8, VT_ERR_LIMIT, "tensor-core tiles: %zu tiles in one call", n);
    cudaStream_t s = (cudaStream_t)stream;
    unsigned blocks = (unsigned)((n + 7) / 8);
    switch (kind) {
    case VTI_TC_MMA_BF16_K16: k_tc_tiles<VTI_TC_MMA_BF16_K16><<<blocks, 256, 0, s>>>(n, A, B, C, D); break;
    case VTI_TC_MMA_F16_K16: k_tc_tiles<VTI_TC_MMA_F16_K16><<<blocks, 256, 0, s>>>(n, A, B, C, D); break;
    case VTI_TC_MMA_BF16_K8: k_tc_tiles<VTI_TC_MMA_BF16_K8><<<blocks, 256, 0, s>>>(n, A, B, C, D); break;
    case VTI_TC_MMA_F16_K8: k_tc_tiles<VTI_TC_MMA_F16_K8><<<blocks, 256, 0, s>>>(n, A, B, C, D); break;
    case VTI_TC_MMA_E4M3F16_K16: k_tc_tiles<VTI_TC_MMA_E4M3F16_K16><<<blocks, 256, 0, s>>>(n, A, B, C, D); break;
    default: k_tc_tiles<VTI_TC_MMA_E4M3_K32><<<blocks, 256, 0, s>>>(n, A, B, C, D); break;
    }
    TCU(cudaGetLastError());
    return VT_OK;
}
