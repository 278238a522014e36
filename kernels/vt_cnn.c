/* vt_cnn.c - the convolutional network's CPU kernels (vt_cnn.h). The data-movement kernels are
 * written once for a type T and compiled for float and double: this file includes itself. */
#ifndef VT_CNN_T /* ========================================================= outer part */

#include "vt_cnn.h"

#include <cblas.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "vt_cnn_hd.h"
/* the 4-lane vector type of the direct kernels' conversions stays inside inlined code (see vti_v4d) */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wpsabi"
#endif
#include "vt_kernels_int.h"
#include <string.h>

vt_err vt_conv_geom_make(vt_conv_geom *g, int64_t B, int64_t H, int64_t W, int64_t C, int64_t k, int64_t s,
                         int64_t p, int chw)
{
    const int64_t lim = (int64_t)1 << 20;
    VT_RETURN_ERROR_IF(B < 1 || H < 1 || W < 1 || C < 1 || k < 1 || s < 1 || p < 0 || B > lim || H > 4096 ||
                           W > 4096 || C > 65536 || k > 64 || s > 64 || p >= k || H + 2 * p < k || W + 2 * p < k,
                       VT_ERR_ARG, "convolution: bad geometry (B %lld, %lld x %lld x %lld, kernel %lld, stride %lld, pad %lld)",
                       (long long)B, (long long)H, (long long)W, (long long)C, (long long)k, (long long)s,
                       (long long)p);
    g->B = (size_t)B, g->H = (size_t)H, g->W = (size_t)W, g->C = (size_t)C;
    g->k = (size_t)k, g->s = (size_t)s, g->p = (size_t)p, g->chw = chw != 0;
    g->Ho = (size_t)((H + 2 * p - k) / s + 1), g->Wo = (size_t)((W + 2 * p - k) / s + 1);
    return VT_OK;
}

float vt_avgpool_weight(size_t HW) { return (float)(1.0 / (double)HW); }

/* ------------------------------------------------- the input gradient by output phase (vt_cnn.h) */

/* Pixel iy of the input receives a gradient through tap ky exactly when iy + p - ky is a multiple of
 * s: its phase class cy = (iy + p) mod s sees the taps ky = cy, cy + s, ... < k only. */
static size_t phase_taps(size_t k, size_t s, size_t c) { return c < k ? (k - c + s - 1) / s : 0; }

/* the first pixel of phase class c (iy + p = c mod s) and the count of such pixels in [0, n) */
static size_t phase_first(size_t p, size_t s, size_t c) { return (c + s - p % s) % s; }
static size_t phase_count(size_t n, size_t p, size_t s, size_t c)
{
    size_t f = phase_first(p, s, c);
    return f < n ? (n - f + s - 1) / s : 0;
}

/* One pass over the rows of G of phase class (cy, cx): row r of a [n, Kc] is pixel (b, fy + u s, fx + v s)
 * (row-major) with the blocks of the class's taps in row-major tap order, rn[i] the norm of G's row i
 * (its non-zero entries are all in those blocks), bad[r] = 1 when an entry of a skipped block is not +0
 * or -0 (the gather's structure does not hold: the compact product would not be the dense one's).
 * Over the threads in parts of rows (values moved, each norm one row's: the same bits for any split). */
typedef struct {
    const vt_conv_geom *g;
    size_t Co, cy, cx;
    const float *G;
    float *a;
    double *rn;
    unsigned char *bad;
} dgrad_gather_a;

static void dgrad_gather_r(const void *p, size_t r0, size_t r1)
{
    const dgrad_gather_a *A = p;
    const vt_conv_geom *g = A->g;
    const size_t Co = A->Co, cy = A->cy, cx = A->cx, k = g->k, s = g->s, K = k * k * Co;
    const size_t fy = phase_first(g->p, s, cy), fx = phase_first(g->p, s, cx);
    const size_t ny = phase_count(g->H, g->p, s, cy), nx = phase_count(g->W, g->p, s, cx);
    const size_t Kc = phase_taps(k, s, cy) * phase_taps(k, s, cx) * Co;
    for (size_t r = r0; r < r1; r++) {
        const size_t b = r / (ny * nx), u = r / nx % ny, v = r % nx;
        const size_t i = (b * g->H + fy + u * s) * g->W + fx + v * s;
        const float *row = A->G + i * K;
        float *a = A->a + r * Kc;
        uint64_t z = 0; /* the skipped entries' bits but their signs */
        double s0 = 0.0, s1 = 0.0;
        for (size_t ky = 0; ky < k; ky++)
            for (size_t kx = 0; kx < k; kx++) {
                const float *blk = row + (ky * k + kx) * Co;
                if (ky % s != cy || kx % s != cx) { /* a skipped block: zeros only */
                    size_t c = 0;
                    for (; c + 8 <= Co; c += 8) {
                        uint64_t w[4];
                        memcpy(w, blk + c, sizeof w);
                        z |= (w[0] | w[1] | w[2] | w[3]) & 0x7fffffff7fffffffu;
                    }
                    for (; c < Co; c++) {
                        uint32_t w;
                        memcpy(&w, blk + c, sizeof w);
                        z |= w & 0x7fffffffu;
                    }
                    continue;
                }
                memcpy(a, blk, Co * sizeof *a);
                a += Co;
                size_t c = 0;
                for (; c + 2 <= Co; c += 2) {
                    s0 += (double)blk[c] * (double)blk[c];
                    s1 += (double)blk[c + 1] * (double)blk[c + 1];
                }
                for (; c < Co; c++) s0 += (double)blk[c] * (double)blk[c];
            }
        A->bad[r] = z != 0;
        A->rn[i] = sqrt(s0 + s1);
    }
}

static int dgrad_gather(const vt_conv_geom *g, size_t Co, const float *G, size_t cy, size_t cx, float *a, double *rn,
                        unsigned char *bad)
{
    const size_t n = g->B * phase_count(g->H, g->p, g->s, cy) * phase_count(g->W, g->p, g->s, cx), cols = g->k * g->k * Co;
    vt_par_range(n, VTI_ROWS_GRAIN(cols), dgrad_gather_r, &(dgrad_gather_a){g, Co, cy, cx, G, a, rn, bad});
    for (size_t r = 0; r < n; r++)
        if (bad[r]) return 0;
    return 1;
}

vt_err vt_conv_dgrad_gemm(vt_exec *e, const vt_conv_geom *g, size_t Co, const float *G, const float *wp, double *C,
                          double *rn, double *cn, vt_bounds *bd, int *done)
{
    *done = 0;
    VT_RETURN_ERROR_IF(g->chw || Co < 1 || !G || !wp || !C || !rn || !cn || !bd, VT_ERR_ARG,
                       "vt_conv_dgrad_gemm: bad arguments");
    const size_t k = g->k, s = g->s, N = g->C, K = k * k * Co;
    const double coef = vt_bound_coef_red(&e->bound, (uint64_t)K, (uint64_t)K);
    VT_RETURN_ERROR_IF(!(coef >= 0.0), VT_ERR_LIMIT, "vt_conv_dgrad_gemm: no bound coefficient for K=%zu", K);
    if (s < 2) return VT_OK; /* no structural zeros: the caller's dense GEMM */
    for (size_t i = 0; i < K * N; i++)
        if (!(wp[i] - wp[i] == 0.0f)) return VT_OK; /* inf or NaN: 0 * W' would not vanish */
    /* the largest class's compact operands (class 0 has the most taps; a class at most ceil(H/s) ceil(W/s)
     * pixels an image) */
    const size_t t0 = phase_taps(k, s, 0), n0 = g->B * ((g->H + s - 1) / s) * ((g->W + s - 1) / s), K0 = t0 * t0 * Co;
    float *a = malloc(n0 * K0 * sizeof *a), *a2 = malloc(n0 * (K0 > VT_PANEL ? K0 - VT_PANEL : 1) * sizeof *a2),
          *wb = malloc(K0 * N * sizeof *wb);
    double *c64 = malloc(n0 * N * sizeof *c64), *c2 = malloc(n0 * N * sizeof *c2);
    unsigned char *bad = malloc(n0);
    vt_err err = VT_OK;
    int holds = 1;
    if (!a || !a2 || !wb || !c64 || !c2 || !bad)
        err = vt_set_error(VT_ERR_NOMEM, "out of memory (the input gradient's phase operands)");
    /* the column norms of the whole W' (every tap), as vt_gemm's: above each class's own */
    for (size_t j = 0; !err && j < N; j++) cn[j] = 0.0;
    for (size_t r = 0; !err && r < K; r++)
        for (size_t j = 0; j < N; j++) cn[j] += (double)wp[r * N + j] * (double)wp[r * N + j];
    for (size_t j = 0; !err && j < N; j++) cn[j] = sqrt(cn[j]);
    for (size_t cy = 0; !err && holds && cy < s; cy++)
        for (size_t cx = 0; !err && holds && cx < s; cx++) {
            const size_t Kc = phase_taps(k, s, cy) * phase_taps(k, s, cx) * Co;
            const size_t fy = phase_first(g->p, s, cy), fx = phase_first(g->p, s, cx);
            const size_t ny = phase_count(g->H, g->p, s, cy), nx = phase_count(g->W, g->p, s, cx), n = g->B * ny * nx;
            if (n == 0) continue;
            if (!(holds = dgrad_gather(g, Co, G, cy, cx, a, rn, bad))) break;
            if (Kc > 0) {
                /* the compact W': the class's taps in row-major tap order, Co rows each */
                size_t q = 0;
                for (size_t ky = cy; ky < k; ky += s)
                    for (size_t kx = cx; kx < k; kx += s, q++)
                        memcpy(wb + q * Co * N, wp + (ky * k + kx) * Co * N, Co * N * sizeof *wb);
                /* one GEMM; or, where the dense reduction is evaluated in panels (vt_gemm_panel(K)) and
                 * the compact one would not be (VT_PANEL < Kc <= 2 VT_PANEL), two of VT_PANEL and Kc -
                 * VT_PANEL terms added like two panels, so that the error stays within c(m, K)
                 * (docs/rounding.md 2.1) */
                if (vt_gemm_panel(e, K) && !vt_gemm_panel(e, Kc) && Kc > VT_PANEL) {
                    const size_t k2 = Kc - VT_PANEL;
                    for (size_t r = 0; r < n; r++) { /* rows of a: [VT_PANEL | k2] -> a [n, VT_PANEL], a2 [n, k2] */
                        memcpy(a2 + r * k2, a + r * Kc + VT_PANEL, k2 * sizeof *a2);
                        memmove(a + r * VT_PANEL, a + r * Kc, VT_PANEL * sizeof *a);
                    }
                    err = vt_gemm_plain(e, 0, 0, n, N, VT_PANEL, a, wb, c64);
                    if (!err) err = vt_gemm_plain(e, 0, 0, n, N, k2, a2, wb + VT_PANEL * N, c2);
                    for (size_t i = 0; !err && i < n * N; i++) c64[i] = c64[i] + c2[i] + 0.0;
                } else {
                    err = vt_gemm_plain(e, 0, 0, n, N, Kc, a, wb, c64);
                }
            } else {
                for (size_t i = 0; i < n * N; i++) c64[i] = 0.0; /* no tap reaches these pixels: +0 */
            }
            /* the class's rows into C */
            for (size_t r = 0, b = 0; !err && b < g->B; b++)
                for (size_t u = 0; u < ny; u++)
                    for (size_t v = 0; v < nx; v++, r++)
                        memcpy(C + ((b * g->H + fy + u * s) * g->W + fx + v * s) * N, c64 + r * N, N * sizeof *C);
        }
    free(a), free(a2), free(wb), free(c64), free(c2), free(bad);
    if (err || !holds) return err; /* !holds: the caller's dense GEMM */
    vt_gemm_bounds(0, 0, g->B * g->H * g->W, N, K, G, wp, rn, cn, coef, bd);
    *done = 1;
    return VT_OK;
}


/* ------------------------------------------------ convolutions without im2col (vt_conv2d, vt_conv2d_wgrad) */

/* the exact evaluators' operands (vt_bounds.xa_fill): entries t0 .. t0+n-1 of im2col's row m (the
 * forward pass), and entries m0 .. m0+n-1 of im2col's column t (the weight gradient's row t of
 * im2col^T); the pixel or the tap decoded once, then stepped */
static void fill_fwd(const void *ctx, size_t m, size_t t0, size_t n, float *dst)
{
    const vt_conv_ref *r = ctx;
    const vt_conv_geom *g = &r->g;
    const size_t C = g->C, k = g->k, HW = g->H * g->W;
    const size_t ox = m % g->Wo, oy = (m / g->Wo) % g->Ho, b = m / (g->Wo * g->Ho);
    size_t c = t0 % C, kx = (t0 / C) % k, ky = t0 / (C * k);
    for (size_t u = 0; u < n; u++) {
        const size_t iy = oy * g->s + ky, ix = ox * g->s + kx;
        if (iy < g->p || ix < g->p || iy - g->p >= g->H || ix - g->p >= g->W) dst[u] = 0.0f;
        else if (g->chw) dst[u] = r->x[(b * C + c) * HW + (iy - g->p) * g->W + ix - g->p];
        else dst[u] = r->x[((b * g->H + iy - g->p) * g->W + ix - g->p) * C + c];
        if (++c < C) continue;
        c = 0;
        if (++kx == k) kx = 0, ky++;
    }
}

static void fill_wgrad(const void *ctx, size_t t, size_t m0, size_t n, float *dst)
{
    const vt_conv_ref *r = ctx;
    const vt_conv_geom *g = &r->g;
    const size_t C = g->C, k = g->k, HW = g->H * g->W, c = t % C, kx = (t / C) % k, ky = t / (C * k);
    size_t ox = m0 % g->Wo, oy = (m0 / g->Wo) % g->Ho, b = m0 / (g->Wo * g->Ho);
    for (size_t u = 0; u < n; u++) {
        const size_t iy = oy * g->s + ky, ix = ox * g->s + kx;
        if (iy < g->p || ix < g->p || iy - g->p >= g->H || ix - g->p >= g->W) dst[u] = 0.0f;
        else if (g->chw) dst[u] = r->x[(b * C + c) * HW + (iy - g->p) * g->W + ix - g->p];
        else dst[u] = r->x[((b * g->H + iy - g->p) * g->W + ix - g->p) * C + c];
        if (++ox < g->Wo) continue;
        ox = 0;
        if (++oy == g->Ho) oy = 0, b++;
    }
}

float vt_conv_patch(const vt_conv_geom *g, const float *x, size_t m, size_t t)
{
    const vt_conv_ref r = {*g, x, 0};
    float v;
    fill_fwd(&r, m, t, 1, &v);
    return v;
}

/* row m of im2col(X) (k*k*C values; vt_im2col's), tap by tap */
static void patch_row(const vt_conv_geom *g, const float *x, size_t m, float *row)
{
    const size_t C = g->C, k = g->k, HW = g->H * g->W;
    const size_t ox = m % g->Wo, oy = (m / g->Wo) % g->Ho, b = m / (g->Wo * g->Ho);
    for (size_t ky = 0; ky < k; ky++)
        for (size_t kx = 0; kx < k; kx++, row += C) {
            const size_t iy = oy * g->s + ky, ix = ox * g->s + kx;
            if (iy < g->p || ix < g->p || iy - g->p >= g->H || ix - g->p >= g->W) {
                memset(row, 0, C * sizeof *row);
            } else if (g->chw) {
                const float *src = x + b * C * HW + (iy - g->p) * g->W + (ix - g->p);
                for (size_t c = 0; c < C; c++) row[c] = src[c * HW];
            } else {
                memcpy(row, x + ((b * g->H + iy - g->p) * g->W + ix - g->p) * C, C * sizeof *row);
            }
        }
}

/* the rows of op(A) per tile of the forward pass: about 512 KiB of FP32 patches */
static size_t conv_tile_rows(size_t K, size_t M)
{
    size_t r = ((size_t)1 << 17) / K;
    r = r < 16 ? 16 : r;
    return r < M ? r : M;
}

/* ------------------------------------------------ the direct kernels (the BLAS order, issue 42)
 *
 * The BLAS order's convolutions (vt_conv2d, vt_conv2d_wgrad, vt_conv2d_dgrad with e->order =
 * VT_ORDER_BLAS) are evaluated by the project's own register-blocked kernels instead of a BLAS GEMM
 * per tile, in the BLIS manner: the small operand packed once in FP64 (the forward pass's W and the
 * input gradient's compact W', column blocks of nr; the weight gradient's panel of the im2col rows,
 * column blocks of nr over the taps and channels), the rows of the other operand read in place: for
 * channels-last inputs with C (Co) a multiple of 4 dividing VT_PANEL where the reduction is panelled,
 * the forward pass's patch rows and the input gradient's compact rows of G are the micro-kernel's
 * segments - one pointer per tap into the input converted to FP64 once per call (the executor's
 * scratch), a zero row for padding - with the row norms summed over those segments (seg_sumsq4), and
 * the weight gradient's rows of im2col (C a multiple of nr) are B's rows by pointers into X's FP64 copy,
 * their norms summed along m (seg_norms_seq); otherwise the rows are converted from the FP32 tensor into
 * an L1-sized block with their norms in the same pass (vti_cvt_span's four lanes). The weight
 * gradient's panel of dY is transposed into FP64 rows. Every norm is the
 * same four-lane (or sequential) sum as the GEMM path's, bit for bit. A micro-kernel per instruction
 * set keeps an mr x nr output tile in registers over the panel.
 *
 * The evaluation (all implementations alike). Every output element is ONE reduction, summed as
 * before in panels: the panels of the BLAS path (the forward pass: panels of VT_PANEL terms where
 * vt_gemm_panel(K), else the whole K; the input gradient: panels of VT_PANEL of a class's compact
 * terms where the dense reduction is panelled and the class has more than VT_PANEL terms, else the
 * whole class; the weight gradient: panels of VT_PANEL rows of im2col), the panel results combined by
 * the panel tree (vti_ptree). Inside a panel each element is ONE sequential FP64 sum from +0, terms in
 * increasing k: s = RN(s + a_k b_k). The micro-kernels compute it with a fused multiply-add,
 * RN(a_k b_k + s); the operands are FP32 values, so a_k b_k is exact in FP64 (24 + 24 significant bits,
 * exponents within FP64's range) and RN(a_k b_k + s) = RN(RN(a_k b_k) + s): the FMA and the separate
 * multiply and add give the same bits, and the scalar reference (separate operations, -ffp-contract=off)
 * computes the very same FP64 sums as every vector form (tests/unit/test_conv2d.c checks the bits).
 * The bound. A panel of at most VT_PANEL terms summed sequentially errs by at most gamma_(kc-1) times
 * its sum of |a b| (the classical recursive-summation bound, which holds for any order), and the panel
 * tree of depth <= ceil(log2 P) adds at most gamma_d times the panels' |results|: the panel coefficient
 * of docs/rounding.md 2.1; with the whole reduction in one sequential sum (unpanelled: K <= 2 VT_PANEL,
 * or a manifest recorded with whole reductions) gamma_(m-1) holds directly, m the non-zero terms. Zero terms (padding, the structural zeros skipped by phase) are exact
 * additions, and padding rows and columns of a tile (zeros) are never stored. So vt_bound_coef_red(K, K)
 * - the descriptors' coefficient, unchanged - bounds every element these kernels compute, and as the
 * exactly rounded result is RN32 of the exact value, the outputs are the same bits as the GEMM path's.
 *
 * The implementation is chosen once, at the first convolution: VT_CONV_IMPL names one ("scalar",
 * "avx2", "avx512" where the processor has it, or "gemm": the earlier path, a BLAS GEMM per tile);
 * else the widest the processor runs. vt_conv_impl_set changes it (tests, benchmarks). */

#define MKS_MR 4
#define MKS_NR 8
/* A micro-kernel: c[r*ldc + n] (r < mr, n < nr) = the sum over segments q < ns and i < len of
 * p[q*mr + r][i] * b[(q*len + i)*nr + n], one sequential FP64 sum from +0 per element in that order; the
 * rows of A as segments (one segment: a row-major block; a row of im2col read in place, tap by tap, from
 * the FP64 input, a zero row for padding), b: packed rows of nr FP64 */
typedef void (*conv_mks_fn)(size_t ns, size_t len, const double *const *restrict p, const double *restrict b,
                            double *restrict c, size_t ldc);

static void mks_scalar(size_t ns, size_t len, const double *const *restrict p, const double *restrict b,
                       double *restrict c, size_t ldc)
{
    double acc[MKS_MR][MKS_NR];
    for (size_t r = 0; r < MKS_MR; r++)
        for (size_t n = 0; n < MKS_NR; n++) acc[r][n] = 0.0;
    for (size_t q = 0; q < ns; q++, p += MKS_MR)
        for (size_t i = 0; i < len; i++, b += MKS_NR)
            for (size_t r = 0; r < MKS_MR; r++) {
                const double x = p[r][i];
                for (size_t n = 0; n < MKS_NR; n++) acc[r][n] += x * b[n];
            }
    for (size_t r = 0; r < MKS_MR; r++)
        for (size_t n = 0; n < MKS_NR; n++) c[r * ldc + n] = acc[r][n];
}

/* The same sums with B's rows given by pointers (the weight gradient's rows of im2col read in place):
 * c[r*ldc + n] = the sum over k < kc of a[r*lda + k] * pb[k][n], one sequential sum from +0 per element */
typedef void (*conv_mkb_fn)(size_t kc, const double *restrict a, size_t lda, const double *const *restrict pb,
                            double *restrict c, size_t ldc);

static void mkb_scalar(size_t kc, const double *restrict a, size_t lda, const double *const *restrict pb,
                       double *restrict c, size_t ldc)
{
    double acc[MKS_MR][MKS_NR];
    for (size_t r = 0; r < MKS_MR; r++)
        for (size_t n = 0; n < MKS_NR; n++) acc[r][n] = 0.0;
    for (size_t k = 0; k < kc; k++) {
        const double *b = pb[k];
        for (size_t r = 0; r < MKS_MR; r++) {
            const double x = a[r * lda + k];
            for (size_t n = 0; n < MKS_NR; n++) acc[r][n] += x * b[n];
        }
    }
    for (size_t r = 0; r < MKS_MR; r++)
        for (size_t n = 0; n < MKS_NR; n++) c[r * ldc + n] = acc[r][n];
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define VTI_CONV_X86 1
/* avx2: 6 x 8, twelve 4-lane accumulators; avx512: 8 x 16, sixteen 8-lane accumulators */
/* The accumulators, one step k (B's row at bk, A's rows a0.. at k) and the stores of the tiles, shared by
 * the two forms of each ISA */
#define VTI_X2_DECL                                                                                            \
    __m256d c0_0 = _mm256_setzero_pd(), c0_1 = c0_0, c1_0 = c0_0, c1_1 = c0_0, c2_0 = c0_0, c2_1 = c0_0,      \
            c3_0 = c0_0, c3_1 = c0_0, c4_0 = c0_0, c4_1 = c0_0, c5_0 = c0_0, c5_1 = c0_0
#define VTI_X2_ROW(r)                                                                                          \
    x = _mm256_broadcast_sd(a##r + k);                                                                         \
    c##r##_0 = _mm256_fmadd_pd(x, b0, c##r##_0);                                                               \
    c##r##_1 = _mm256_fmadd_pd(x, b1, c##r##_1);
#define VTI_X2_STEP(bk)                                                                                        \
    do {                                                                                                       \
        const __m256d b0 = _mm256_loadu_pd(bk), b1 = _mm256_loadu_pd((bk) + 4);                               \
        __m256d x;                                                                                             \
        VTI_X2_ROW(0) VTI_X2_ROW(1) VTI_X2_ROW(2) VTI_X2_ROW(3) VTI_X2_ROW(4) VTI_X2_ROW(5)                    \
    } while (0)
#define VTI_X2_ST(r) _mm256_storeu_pd(c + r * ldc, c##r##_0), _mm256_storeu_pd(c + r * ldc + 4, c##r##_1);
#define VTI_X2_STORE VTI_X2_ST(0) VTI_X2_ST(1) VTI_X2_ST(2) VTI_X2_ST(3) VTI_X2_ST(4) VTI_X2_ST(5)

#define VTI_X5_DECL                                                                                            \
    __m512d c0_0 = _mm512_setzero_pd(), c0_1 = c0_0, c1_0 = c0_0, c1_1 = c0_0, c2_0 = c0_0, c2_1 = c0_0,      \
            c3_0 = c0_0, c3_1 = c0_0, c4_0 = c0_0, c4_1 = c0_0, c5_0 = c0_0, c5_1 = c0_0, c6_0 = c0_0,         \
            c6_1 = c0_0, c7_0 = c0_0, c7_1 = c0_0
#define VTI_X5_ROW(r)                                                                                          \
    x = _mm512_set1_pd(a##r[k]);                                                                               \
    c##r##_0 = _mm512_fmadd_pd(x, b0, c##r##_0);                                                               \
    c##r##_1 = _mm512_fmadd_pd(x, b1, c##r##_1);
#define VTI_X5_STEP(bk)                                                                                        \
    do {                                                                                                       \
        const __m512d b0 = _mm512_loadu_pd(bk), b1 = _mm512_loadu_pd((bk) + 8);                               \
        __m512d x;                                                                                             \
        VTI_X5_ROW(0) VTI_X5_ROW(1) VTI_X5_ROW(2) VTI_X5_ROW(3) VTI_X5_ROW(4) VTI_X5_ROW(5) VTI_X5_ROW(6)      \
        VTI_X5_ROW(7)                                                                                          \
    } while (0)
#define VTI_X5_ST(r) _mm512_storeu_pd(c + r * ldc, c##r##_0), _mm512_storeu_pd(c + r * ldc + 8, c##r##_1);
#define VTI_X5_STORE                                                                                           \
    VTI_X5_ST(0) VTI_X5_ST(1) VTI_X5_ST(2) VTI_X5_ST(3) VTI_X5_ST(4) VTI_X5_ST(5) VTI_X5_ST(6) VTI_X5_ST(7)

__attribute__((target("avx2,fma"))) static void mks_avx2(size_t ns, size_t len, const double *const *restrict p,
                                                         const double *restrict b, double *restrict c, size_t ldc)
{
    VTI_X2_DECL;
    for (size_t q = 0; q < ns; q++, p += 6) {
        const double *a0 = p[0], *a1 = p[1], *a2 = p[2], *a3 = p[3], *a4 = p[4], *a5 = p[5];
        for (size_t k = 0; k < len; k++, b += 8) VTI_X2_STEP(b);
    }
    VTI_X2_STORE
}

__attribute__((target("avx2,fma"))) static void mkb_avx2(size_t kc, const double *restrict a, size_t lda,
                                                         const double *const *restrict pb, double *restrict c,
                                                         size_t ldc)
{
    VTI_X2_DECL;
    const double *a0 = a, *a1 = a + lda, *a2 = a + 2 * lda, *a3 = a + 3 * lda, *a4 = a + 4 * lda, *a5 = a + 5 * lda;
    for (size_t k = 0; k < kc; k++) VTI_X2_STEP(pb[k]);
    VTI_X2_STORE
}

__attribute__((target("avx512f"))) static void mks_avx512(size_t ns, size_t len, const double *const *restrict p,
                                                          const double *restrict b, double *restrict c, size_t ldc)
{
    VTI_X5_DECL;
    for (size_t q = 0; q < ns; q++, p += 8) {
        const double *a0 = p[0], *a1 = p[1], *a2 = p[2], *a3 = p[3], *a4 = p[4], *a5 = p[5], *a6 = p[6], *a7 = p[7];
        for (size_t k = 0; k < len; k++, b += 16) VTI_X5_STEP(b);
    }
    VTI_X5_STORE
}

__attribute__((target("avx512f"))) static void mkb_avx512(size_t kc, const double *restrict a, size_t lda,
                                                          const double *const *restrict pb, double *restrict c,
                                                          size_t ldc)
{
    VTI_X5_DECL;
    const double *a0 = a, *a1 = a + lda, *a2 = a + 2 * lda, *a3 = a + 3 * lda, *a4 = a + 4 * lda, *a5 = a + 5 * lda,
                 *a6 = a + 6 * lda, *a7 = a + 7 * lda;
    for (size_t k = 0; k < kc; k++) VTI_X5_STEP(pb[k]);
    VTI_X5_STORE
}
#else
#define VTI_CONV_X86 0
#endif

typedef struct {
    const char *name;
    size_t mr, nr; /* the micro-kernel's tile; mks NULL: the GEMM path */
    conv_mks_fn mks;
    conv_mkb_fn mkb; /* the form with B's rows by pointers */
} conv_impl;

static const conv_impl CONV_IMPLS[] = {
    {"gemm", 0, 0, NULL, NULL},
    {"scalar", MKS_MR, MKS_NR, mks_scalar, mkb_scalar},
#if VTI_CONV_X86
    {"avx2", 6, 8, mks_avx2, mkb_avx2},
    {"avx512", 8, 16, mks_avx512, mkb_avx512},
#endif
};

/* the micro-kernel on mr rows of a row-major FP64 block (lda apart): one segment of kc terms */
static void conv_mk(const conv_impl *im, size_t kc, const double *a, size_t lda, const double *b, double *c,
                    size_t ldc)
{
    const double *p[16];
    for (size_t r = 0; r < im->mr; r++) p[r] = a + r * lda;
    im->mks(1, kc, p, b, c, ldc);
}
#define N_CONV_IMPLS (sizeof CONV_IMPLS / sizeof CONV_IMPLS[0])

static _Atomic(const conv_impl *) g_conv_impl;
static pthread_once_t g_conv_once = PTHREAD_ONCE_INIT;

static int conv_impl_usable(const conv_impl *m)
{
#if VTI_CONV_X86
    __builtin_cpu_init();
    if (!strcmp(m->name, "avx2")) return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    if (!strcmp(m->name, "avx512")) return __builtin_cpu_supports("avx512f");
#endif
    (void)m;
    return 1;
}

static void conv_pick(void)
{
    const char *want = getenv("VT_CONV_IMPL");
    const conv_impl *best = &CONV_IMPLS[1];
    for (size_t i = 0; i < N_CONV_IMPLS; i++) {
        if (!conv_impl_usable(&CONV_IMPLS[i])) continue;
        if (want && *want ? !strcmp(want, CONV_IMPLS[i].name) : i > 0) best = &CONV_IMPLS[i]; /* the last: widest */
    }
    atomic_store(&g_conv_impl, best);
}

static const conv_impl *conv_impl_get(void)
{
    pthread_once(&g_conv_once, conv_pick);
    return atomic_load(&g_conv_impl);
}

const char *vt_conv_impl(void) { return conv_impl_get()->name; }

vt_err vt_conv_impl_set(const char *name)
{
    pthread_once(&g_conv_once, conv_pick);
    for (size_t i = 0; name && i < N_CONV_IMPLS; i++)
        if (!strcmp(name, CONV_IMPLS[i].name)) {
            VT_RETURN_ERROR_IF(!conv_impl_usable(&CONV_IMPLS[i]), VT_ERR_UNSUPPORTED,
                               "vt_conv_impl_set: this processor cannot run \"%s\"", name);
            atomic_store(&g_conv_impl, &CONV_IMPLS[i]);
            return VT_OK;
        }
    return vt_set_error(VT_ERR_ARG, "vt_conv_impl_set: no convolution implementation \"%s\"", name ? name : "(null)");
}

/* B [K, N] FP32 (row stride N) packed for the micro-kernel: column block q (nr columns, zeros past N) at
 * bp + q*K*nr, its row k at + k*nr */
static void conv_pack_b(size_t K, size_t N, size_t nr, const float *b, double *bp)
{
    const size_t nb = (N + nr - 1) / nr;
    for (size_t q = 0; q < nb; q++)
        for (size_t k = 0; k < K; k++) {
            double *d = bp + (q * K + k) * nr;
            for (size_t n = 0; n < nr; n++) d[n] = q * nr + n < N ? (double)b[k * N + q * nr + n] : 0.0;
        }
}

/* One tile: c [n, ldc] = a [n, K] (row stride lda, FP64; n a multiple of mr) x bp (conv_pack_b of B [K, N]),
 * ldc = nb nr columns; the reduction in panels of VT_PANEL combined by the panel tree when pan (st:
 * vti_ptree_depth(P) * n * ldc doubles), else one sequential sum. The loops of BLIS: a column block's
 * panel of bp stays in L1 while the tile's row blocks pass it. */
static void conv_tile_mk(const conv_impl *im, int pan, size_t n, size_t K, size_t nb, const double *a, size_t lda,
                         const double *bp, double *st, double *c)
{
    const size_t nr = im->nr, mr = im->mr, ldc = nb * nr, kmax = pan ? VT_PANEL : K;
    vti_ptree t;
    if (pan) vti_ptree_init(&t, st, n * ldc);
    for (size_t k0 = 0; k0 < K; k0 += kmax) {
        const size_t kc = K - k0 < kmax ? K - k0 : kmax;
        double *dst = pan ? vti_ptree_next(&t) : c;
        for (size_t q = 0; q < nb; q++)
            for (size_t r0 = 0; r0 < n; r0 += mr)
                conv_mk(im, kc, a + r0 * lda + k0, lda, bp + (q * K + k0) * nr, dst + r0 * ldc + q * nr, ldc);
        if (pan) vti_ptree_push(&t);
    }
    if (pan) vti_ptree_result(&t, c);
}

/* conv_tile_mk with the rows given as segments (the micro-kernels' segment form): row block b (mr rows)
 * is ns segments of len terms, the pointers at ptr + b ns mr ([segment][row]); the panels of VT_PANEL
 * terms are whole segments (len divides VT_PANEL where pan) */
static void conv_tile_mks(const conv_impl *im, int pan, size_t n, size_t ns, size_t len, size_t nb,
                          const double *const *ptr, const double *bp, double *st, double *c)
{
    const size_t nr = im->nr, mr = im->mr, ldc = nb * nr, K = ns * len, sp = pan ? VT_PANEL / len : ns;
    vti_ptree t;
    if (pan) vti_ptree_init(&t, st, n * ldc);
    for (size_t q0 = 0; q0 < ns; q0 += sp) {
        const size_t nsp = ns - q0 < sp ? ns - q0 : sp;
        double *dst = pan ? vti_ptree_next(&t) : c;
        for (size_t q = 0; q < nb; q++)
            for (size_t r0 = 0; r0 < n; r0 += mr)
                im->mks(nsp, len, ptr + (r0 / mr * ns + q0) * mr, bp + (q * K + q0 * len) * nr, dst + r0 * ldc + q * nr,
                        ldc);
        if (pan) vti_ptree_push(&t);
    }
    if (pan) vti_ptree_result(&t, c);
}

/* the rows of a direct tile: about 256 KiB of FP64 operand, a multiple of mr */
static size_t conv_mk_rows(const conv_impl *im, size_t K, size_t M)
{
    size_t r = ((size_t)1 << 15) / K / im->mr * im->mr;
    r = r < im->mr ? im->mr : r;
    const size_t Mp = (M + im->mr - 1) / im->mr * im->mr;
    return r < Mp ? r : Mp;
}

typedef struct {
    vt_exec *e;
    const vt_conv_geom *g;
    size_t N, K, M, mr, span; /* span: the weight gradient's rows of op(A) (all of them) */
    const float *x, *w;       /* w: W (forward) or dY (weight gradient) */
    const double *w64;        /* the BLAS order's W in FP64 (forward; NULL: another order) */
    int blas;                 /* the BLAS order: the fused forms below */
    const conv_impl *im;      /* the BLAS order's direct kernels (NULL: the GEMM path) */
    const double *bp;         /* the forward pass's W packed (conv_pack_b) */
    size_t nb;                /* its column blocks */
    int chw_t;                /* the channels-first stem computed transposed (fwd_chw_part; bp: W^T) */
    const double *x64, *zero; /* fwd_tap_part: X in FP64 (channels-last) and C zeros; NULL: not used */
    double *C, *rn;
    vt_err err[VT_PAR_MAX];
    char msg[VT_PAR_MAX][200];
} conv_job;

static void conv_part_end(conv_job *j, int part, vt_err err)
{
    j->err[part] = err;
    if (err) snprintf(j->msg[part], sizeof j->msg[part], "%s", vt_errmsg());
}

static vt_err conv_join(conv_job *j, int parts)
{
    for (int p = 0; p < parts; p++)
        if (j->err[p]) return vt_set_error(j->err[p], "%s", j->msg[p]);
    return VT_OK;
}

/* C [n, N] = A64 [n, K] W64 [K, N] by cblas_dgemm as vt_gemm's BLAS order evaluates it: where K is
 * panelled (panel: vt_gemm_panel(K), or the input gradient's rule), panels of VT_PANEL terms first to last combined by the panel tree (st:
 * vti_ptree_depth(P) * n * N doubles); -0 results made +0 */
static void dgemm_panels(int panel, size_t n, size_t N, size_t K, const double *A64, const double *W64, double *st,
                         double *C)
{
    if (!panel) {
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)n, (int)N, (int)K, 1.0, A64, (int)K, W64, (int)N,
                    0.0, C, (int)N);
    } else {
        vti_ptree t;
        vti_ptree_init(&t, st, n * N);
        for (size_t k0 = 0; k0 < K; k0 += VT_PANEL) {
            const size_t kl = K - k0 < VT_PANEL ? K - k0 : VT_PANEL;
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)n, (int)N, (int)kl, 1.0, A64 + k0, (int)K,
                        W64 + k0 * N, (int)N, 0.0, vti_ptree_next(&t), (int)N);
            vti_ptree_push(&t);
        }
        vti_ptree_result(&t, C);
    }
    for (size_t i = 0; i < n * N; i++) C[i] += 0.0;
}

/* Four lanes of FP64 (generic vector code: each clone below compiles it for its ISA, the same IEEE
 * operations lane by lane; never passed to or returned from a function that is not inlined) */
typedef float vti_v4f __attribute__((vector_size(16)));
typedef double vti_v4d __attribute__((vector_size(32)));

/* d[0..n) = src (n a multiple of 4) in FP64, acc (lane l) += the squares of the entries l mod 4, in order */
static inline __attribute__((always_inline)) void cvt4_acc(const float *restrict src, size_t n, double *restrict d,
                                                          vti_v4d *restrict acc)
{
    for (size_t c = 0; c < n; c += 4) {
        vti_v4f f;
        memcpy(&f, src + c, sizeof f);
        const vti_v4d v = __builtin_convertvector(f, vti_v4d);
        memcpy(d + c, &v, sizeof v);
        *acc += v * v;
    }
}

/* an output pixel (b, oy, ox) of the convolution g, stepped along m = (b Ho + oy) Wo + ox without divisions */
typedef struct {
    size_t b, oy, ox;
} conv_px;
static inline conv_px conv_px_of(const vt_conv_geom *g, size_t m)
{
    return (conv_px){m / (g->Wo * g->Ho), (m / g->Wo) % g->Ho, m % g->Wo};
}
static inline void conv_px_next(const vt_conv_geom *g, conv_px *q)
{
    if (++q->ox < g->Wo) return;
    q->ox = 0;
    if (++q->oy == g->Ho) q->oy = 0, q->b++;
}

/* Row m of im2col (X channels-last, C a multiple of 4) straight into FP64: d = the row, returned its
 * sum of squares in vti_cvt_span's four lanes (lane t mod 4 sequential in t; padding taps add nothing,
 * as adding +0 is exact): the same bits as patch_row then vti_cvt_span, one pass (clones per ISA, the
 * same IEEE operations) */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx512f", "avx2", "default")))
#endif
static double patch_row_cvt4(const vt_conv_geom *g, const float *restrict x, conv_px px, double *restrict d)
{
    const size_t C = g->C, k = g->k, ox = px.ox, oy = px.oy, b = px.b;
    vti_v4d acc = {0.0, 0.0, 0.0, 0.0};
    for (size_t ky = 0; ky < k; ky++)
        for (size_t kx = 0; kx < k; kx++, d += C) {
            const size_t iy = oy * g->s + ky, ix = ox * g->s + kx;
            if (iy < g->p || ix < g->p || iy - g->p >= g->H || ix - g->p >= g->W) {
                for (size_t c = 0; c < C; c++) d[c] = 0.0;
                continue;
            }
            cvt4_acc(x + ((b * g->H + iy - g->p) * g->W + ix - g->p) * C, C, d, &acc);
        }
    return (acc[0] + acc[1]) + (acc[2] + acc[3]);
}

/* The channels-first stem's forward pass (X [B, C*H*W], Wo a multiple of nr) is computed transposed,
 * Z^T [Co, M] = W^T im2col(X)^T, so that the patch entries of nr pixels of an output row, which lie
 * s apart in one row of one channel plane, are the micro-kernel's packed B: for the pixels m0 .. m0+nr-1
 * (one output row), d [K, nr] = their patch rows transposed (zeros outside the image) and rn[m] their
 * norms in vti_cvt_span's four lanes (lane t mod 4, the tail in lane 0, each lane sequential in t: the
 * bits of patch_row then vti_cvt_span) */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx512f", "avx2", "default")))
#endif
static void chw_pack(const vt_conv_geom *g, const float *restrict x, size_t m0, size_t K, size_t nr, double *restrict d,
                     double *restrict lanes, double *restrict rn)
{
    const size_t C = g->C, k = g->k, HW = g->H * g->W, K4 = K / 4 * 4;
    const size_t ox0 = m0 % g->Wo, oy = (m0 / g->Wo) % g->Ho, b = m0 / (g->Wo * g->Ho);
    for (size_t i = 0; i < 4 * nr; i++) lanes[i] = 0.0;
    size_t t = 0;
    for (size_t ky = 0; ky < k; ky++)
        for (size_t kx = 0; kx < k; kx++)
            for (size_t c = 0; c < C; c++, t++, d += nr) {
                const size_t iy = oy * g->s + ky;
                if (iy < g->p || iy - g->p >= g->H) {
                    for (size_t n = 0; n < nr; n++) d[n] = 0.0;
                    continue;
                }
                const float *restrict row = x + b * C * HW + c * HW + (iy - g->p) * g->W;
                const int64_t off = (int64_t)(ox0 * g->s + kx) - (int64_t)g->p; /* ix - p of the first pixel */
                double *restrict a = lanes + (t < K4 ? t % 4 : 0) * nr;
                if (g->s == 1 && off >= 0 && off + (int64_t)nr <= (int64_t)g->W) {
                    for (size_t n = 0; n < nr; n += 4) { /* nr a multiple of 4 */
                        vti_v4f f;
                        vti_v4d acc;
                        memcpy(&f, row + off + (int64_t)n, sizeof f);
                        memcpy(&acc, a + n, sizeof acc);
                        const vti_v4d v = __builtin_convertvector(f, vti_v4d);
                        memcpy(d + n, &v, sizeof v);
                        acc += v * v;
                        memcpy(a + n, &acc, sizeof acc);
                    }
                    continue;
                }
                for (size_t n = 0; n < nr; n++) {
                    const int64_t ix = off + (int64_t)(n * g->s);
                    const double v = ix < 0 || ix >= (int64_t)g->W ? 0.0 : (double)row[ix];
                    d[n] = v;
                    a[n] += v * v;
                }
            }
    for (size_t n = 0; n < nr; n++) rn[m0 + n] = sqrt((lanes[n] + lanes[nr + n]) + (lanes[2 * nr + n] + lanes[3 * nr + n]));
}

/* the stem's output rows lo..hi (each Wo pixels): the pixels' patches packed (chw_pack), then
 * conv_tile_mk of W^T (j->bp: [Np, K] FP64, zero rows past Co) by them, the tile [Np, Wo] written
 * transposed into C - each element the same sequential sums and panel tree as the row-wise form */
static void fwd_chw_part(conv_job *j, size_t lo, size_t hi, int part)
{
    const conv_impl *im = j->im;
    const size_t K = j->K, N = j->N, Wo = j->g->Wo, nr = im->nr, nb = Wo / nr, Np = (N + im->mr - 1) / im->mr * im->mr;
    const size_t P = (K + VT_PANEL - 1) / VT_PANEL;
    const int pan = vt_gemm_panel(j->e, K);
    double *bp = malloc(nb * K * nr * sizeof *bp), *lanes = malloc(4 * nr * sizeof *lanes),
           *c = malloc(Np * Wo * sizeof *c), *st = pan ? malloc(vti_ptree_depth(P) * Np * Wo * sizeof *st) : NULL;
    vt_err err = bp && lanes && c && (st || !pan) ? VT_OK : vt_set_error(VT_ERR_NOMEM, "out of memory (a convolution's tile)");
    for (size_t ir = lo; ir < hi && !err; ir++) {
        const size_t m0 = ir * Wo;
        for (size_t q = 0; q < nb; q++) chw_pack(j->g, j->x, m0 + q * nr, K, nr, bp + q * K * nr, lanes, j->rn);
        conv_tile_mk(im, pan, Np, K, nb, j->bp, K, bp, st, c);
        for (size_t n = 0; n < Wo; n++)
            for (size_t q = 0; q < N; q++) j->C[(m0 + n) * N + q] = c[q * Wo + n] + 0.0; /* -0 -> +0 */
    }
    conv_part_end(j, part, err);
    free(bp), free(lanes), free(c), free(st);
}

/* d = src in FP64 (n values; clones per ISA, the same conversions) */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx512f", "avx2", "default")))
#endif
static void cvt_f64(const float *restrict src, size_t n, double *restrict d)
{
    for (size_t i = 0; i < n; i++) d[i] = (double)src[i];
}

/* the sum of squares of ns segments of len values (len a multiple of 4; segment q at p[q * stride]) in
 * vti_cvt_span's four lanes over their concatenation (lane t mod 4, each lane sequential in t) */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx512f", "avx2", "default")))
#endif
static double seg_sumsq4(const double *const *p, size_t stride, size_t ns, size_t len)
{
    vti_v4d acc = {0.0, 0.0, 0.0, 0.0};
    for (size_t q = 0; q < ns; q++) {
        const double *restrict x = p[q * stride];
        for (size_t i = 0; i < len; i += 4) {
            vti_v4d v;
            memcpy(&v, x + i, sizeof v);
            acc += v * v;
        }
    }
    return (acc[0] + acc[1]) + (acc[2] + acc[3]);
}

/* The forward pass read in place (X channels-last, C a multiple of 4 dividing VT_PANEL where K is
 * panelled): row blocks lo..hi of mr rows, each row of im2col given to the segment micro-kernel as its
 * k*k taps' pointers into X's FP64 copy (j->x64; j->zero for a tap outside the image) - no row gathered
 * or converted per use - its norm the four-lane sum of squares over those segments (the bits of
 * vti_cvt_span on the gathered row), the panels of VT_PANEL terms whole taps */
static void fwd_tap_part(conv_job *j, size_t lo, size_t hi, int part)
{
    const conv_impl *im = j->im;
    const vt_conv_geom *g = j->g;
    const size_t K = j->K, N = j->N, C = g->C, k = g->k, nt = k * k, mr = im->mr, nr = im->nr, ldc = j->nb * nr;
    const int pan = vt_gemm_panel(j->e, K);
    const size_t P = (K + VT_PANEL - 1) / VT_PANEL;
    const double **ptr = malloc(nt * mr * sizeof *ptr);
    double *c = malloc(mr * ldc * sizeof *c), *st = pan ? malloc(vti_ptree_depth(P) * mr * ldc * sizeof *st) : NULL;
    vt_err err = ptr && c && (st || !pan) ? VT_OK : vt_set_error(VT_ERR_NOMEM, "out of memory (a convolution's tile)");
    for (size_t blk = lo; blk < hi && !err; blk++) {
        const size_t m0 = blk * mr, n = j->M - m0 < mr ? j->M - m0 : mr;
        conv_px px = conv_px_of(g, m0);
        for (size_t r = 0; r < mr; r++) {
            for (size_t ky = 0; ky < k; ky++)
                for (size_t kx = 0; kx < k; kx++) {
                    const size_t iy = px.oy * g->s + ky, ix = px.ox * g->s + kx;
                    const int in = r < n && iy >= g->p && ix >= g->p && iy - g->p < g->H && ix - g->p < g->W;
                    ptr[(ky * k + kx) * mr + r] = in ? j->x64 + ((px.b * g->H + iy - g->p) * g->W + ix - g->p) * C : j->zero;
                }
            if (r >= n) continue;
            j->rn[m0 + r] = sqrt(seg_sumsq4(ptr + r, mr, nt, C));
            conv_px_next(g, &px);
        }
        conv_tile_mks(im, pan, mr, nt, C, j->nb, ptr, j->bp, st, c);
        for (size_t r = 0; r < n; r++)
            for (size_t q = 0; q < N; q++) j->C[(m0 + r) * N + q] = c[r * ldc + q] + 0.0; /* -0 -> +0 */
    }
    conv_part_end(j, part, err);
    free(ptr), free(c), free(st);
}

/* the direct forward tiles lo..hi (j->mr rows each, a multiple of the micro-kernel's): each row of
 * im2col gathered from X and converted into the FP64 tile with its norm (vti_cvt_span, as the GEMM
 * path), the rows past M zero, then conv_tile_mk by the packed W */
static void fwd_direct_part(conv_job *j, size_t lo, size_t hi, int part)
{
    const conv_impl *im = j->im;
    const size_t K = j->K, N = j->N, mr = j->mr, ldc = j->nb * im->nr, P = (K + VT_PANEL - 1) / VT_PANEL;
    const int pan = vt_gemm_panel(j->e, K);
    float *row = malloc(K * sizeof *row);
    double *a = malloc(mr * K * sizeof *a), *c = malloc(mr * ldc * sizeof *c),
           *st = pan ? malloc(vti_ptree_depth(P) * mr * ldc * sizeof *st) : NULL;
    vt_err err = row && a && c && (st || !pan) ? VT_OK : vt_set_error(VT_ERR_NOMEM, "out of memory (a convolution's tile)");
    for (size_t tl = lo; tl < hi && !err; tl++) {
        const size_t m0 = tl * mr, n = j->M - m0 < mr ? j->M - m0 : mr, np = (n + im->mr - 1) / im->mr * im->mr;
        const int fused = !j->g->chw && j->g->C % 4 == 0;
        conv_px px = conv_px_of(j->g, m0);
        for (size_t r = 0; r < n; r++, conv_px_next(j->g, &px)) {
            if (fused) {
                j->rn[m0 + r] = sqrt(patch_row_cvt4(j->g, j->x, px, a + r * K));
                continue;
            }
            patch_row(j->g, j->x, m0 + r, row);
            j->rn[m0 + r] = sqrt(vti_cvt_span(row, K, a + r * K));
        }
        for (size_t i = n * K; i < np * K; i++) a[i] = 0.0;
        conv_tile_mk(im, pan, np, K, j->nb, a, K, j->bp, st, c);
        for (size_t r = 0; r < n; r++)
            for (size_t q = 0; q < N; q++) j->C[(m0 + r) * N + q] = c[r * ldc + q] + 0.0; /* -0 -> +0 */
    }
    conv_part_end(j, part, err);
    free(row), free(a), free(c), free(st);
}

/* the forward tiles lo..hi: each tile's rows of im2col gathered (each row's norm its four-lane sum of
 * squares, whatever the order), then one GEMM of the tile by W: every element ONE reduction of K terms,
 * as vt_gemm's of the materialised im2col. The BLAS order gathers the tile into FP64 (the conversion and
 * the norms fused) and multiplies it by the FP64 W converted once; another order hands the FP32 tile to
 * vt_gemm_plain in its own way */
static void fwd_part(void *ctx, size_t lo, size_t hi, int part)
{
    conv_job *j = ctx;
    if (j->im && j->x64) {
        fwd_tap_part(j, lo, hi, part);
        return;
    }
    if (j->im && j->chw_t) {
        fwd_chw_part(j, lo, hi, part);
        return;
    }
    if (j->im) {
        fwd_direct_part(j, lo, hi, part);
        return;
    }
    const size_t K = j->K, N = j->N, mr = j->mr, P = (K + VT_PANEL - 1) / VT_PANEL;
    vt_exec sub;
    vt_exec_init(&sub, j->e->order, j->e->bound, j->e->seed);
    float *a = malloc((j->blas ? K : mr * K) * sizeof *a);
    double *a64 = malloc((j->blas ? mr * K : K) * sizeof *a64), *st = j->blas ? malloc(vti_ptree_depth(P) * mr * N * sizeof *st) : NULL;
    vt_err err = a && a64 && (st || !j->blas) ? VT_OK : vt_set_error(VT_ERR_NOMEM, "out of memory (a convolution's tile)");
    for (size_t tl = lo; tl < hi && !err; tl++) {
        const size_t m0 = tl * mr, n = j->M - m0 < mr ? j->M - m0 : mr;
        for (size_t r = 0; r < n; r++) {
            float *row = j->blas ? a : a + r * K;
            patch_row(j->g, j->x, m0 + r, row);
            j->rn[m0 + r] = sqrt(vti_cvt_span(row, K, j->blas ? a64 + r * K : a64));
        }
        if (j->blas) dgemm_panels(vt_gemm_panel(&sub, K), n, N, K, a64, j->w64, st, j->C + m0 * N);
        else err = vt_gemm_plain(&sub, 0, 0, n, N, K, a, j->w, j->C + m0 * N);
    }
    conv_part_end(j, part, err);
    free(a), free(a64), free(st);
    vt_exec_free(&sub);
}

/* sqrt of the sums of squares of the columns of A [rows, cols], rows in order */
static void col_norms(const float *A, size_t rows, size_t cols, double *cn)
{
    for (size_t c = 0; c < cols; c++) cn[c] = 0.0;
    for (size_t r = 0; r < rows; r++)
        for (size_t c = 0; c < cols; c++) cn[c] += (double)A[r * cols + c] * (double)A[r * cols + c];
    for (size_t c = 0; c < cols; c++) cn[c] = sqrt(cn[c]);
}

static void conv_bounds(int wgrad, const vt_conv_geom *g, const float *x, const float *b, size_t M, size_t N,
                        size_t K, const double *rn, const double *cn, double coef, vt_conv_ref *ref, vt_bounds *bd)
{
    vt_gemm_bounds(wgrad, 0, M, N, K, x, b, rn, cn, coef, bd);
    ref->g = *g, ref->x = x;
    bd->ta = bd->tb = NULL; /* no stored op(A) for the tight bound: coef |row| |column| is THE bound */
    bd->ta_si = bd->ta_sk = bd->xa_si = bd->xa_sk = 0;
    bd->xa_fill = wgrad ? fill_wgrad : fill_fwd;
    bd->xa_ctx = ref;
}

static vt_err conv_args(const vt_exec *e, const vt_conv_geom *g, size_t Co, const void *x, const void *w,
                        const void *C, const void *rn, const void *cn, const void *bd, const void *ref, size_t *K,
                        size_t *M, const char *name)
{
    VT_RETURN_ERROR_IF(!e || !g || Co < 1 || !x || !w || !C || !rn || !cn || !bd || !ref, VT_ERR_ARG,
                       "%s: bad arguments", name);
    *K = g->k * g->k * g->C, *M = g->B * g->Ho * g->Wo;
    VT_RETURN_ERROR_IF(*K > INT_MAX || *M > INT_MAX || Co > INT_MAX, VT_ERR_LIMIT, "%s: the convolution is too large",
                       name);
    return VT_OK;
}

vt_err vt_conv2d(vt_exec *e, const vt_conv_geom *g, size_t Co, const float *x, const float *w, double *C, double *rn,
                 double *cn, vt_bounds *bd, vt_conv_ref *ref)
{
    size_t K = 0, M = 0;
    VT_FORWARD_IF_ERROR(conv_args(e, g, Co, x, w, C, rn, cn, bd, ref, &K, &M, "vt_conv2d"));
    const double coef = vt_bound_coef_red(&e->bound, (uint64_t)K, (uint64_t)K);
    VT_RETURN_ERROR_IF(!(coef >= 0.0), VT_ERR_LIMIT, "vt_conv2d: no bound coefficient for K=%zu", K);
    col_norms(w, K, Co, cn);
    conv_job *j = malloc(sizeof *j);
    VT_RETURN_ERROR_IF(!j, VT_ERR_NOMEM, "out of memory (a convolution)");
    *j = (conv_job){.e = e, .g = g, .N = Co, .K = K, .M = M, .mr = conv_tile_rows(K, M), .x = x, .w = w, .C = C,
                    .rn = rn, .blas = e->order == VT_ORDER_BLAS};
    const conv_impl *im = j->blas ? conv_impl_get() : NULL;
    size_t tiles = (M + j->mr - 1) / j->mr;
    double *wb = NULL; /* W in FP64: packed for the direct kernels (W^T for the stem), or the BLAS order's copy */
    vt_err err = VT_OK;
    if (im && im->mks) {
        j->im = im, j->nb = (Co + im->nr - 1) / im->nr, j->mr = conv_mk_rows(im, K, M);
        j->chw_t = g->chw && g->Wo % im->nr == 0;
        const size_t Np = (Co + im->mr - 1) / im->mr * im->mr;
        wb = malloc((j->chw_t ? Np * K : j->nb * im->nr * K) * sizeof *wb);
        tiles = j->chw_t ? g->B * g->Ho : (M + j->mr - 1) / j->mr; /* the stem: parts of whole output rows */
        if (wb && j->chw_t) /* W^T [Np, K], rows past Co zero */
            for (size_t r = 0; r < Np; r++)
                for (size_t t = 0; t < K; t++) wb[r * K + t] = r < Co ? (double)w[t * Co + r] : 0.0;
        else if (wb)
            conv_pack_b(K, Co, im->nr, w, wb);
        j->bp = wb;
        const size_t C = g->C, nx = g->B * g->H * g->W * C;
        double *x64 = NULL; /* read in place: X converted once (the executor's scratch), C zeros first */
        if (wb && !g->chw && C % 4 == 0 && (!vt_gemm_panel(e, K) || VT_PANEL % C == 0) &&
            vti_ws_get(&e->ws, VT_WS_A, nx + C, sizeof *x64, (void **)&x64) == VT_OK) {
            for (size_t i = 0; i < C; i++) x64[i] = 0.0;
            cvt_f64(x, nx, x64 + C);
            j->zero = x64, j->x64 = x64 + C, tiles = (M + im->mr - 1) / im->mr;
        }
    } else if (j->blas) {
        wb = malloc(K * Co * sizeof *wb);
        for (size_t i = 0; wb && i < K * Co; i++) wb[i] = (double)w[i];
        j->w64 = wb;
    }
    if (j->blas && !wb) err = vt_set_error(VT_ERR_NOMEM, "out of memory (a convolution's weights)");
    else err = conv_join(j, vt_par_for(tiles, 1, fwd_part, j));
    free(wb);
    free(j);
    VT_FORWARD_IF_ERROR(err);
    conv_bounds(0, g, x, w, M, Co, K, rn, cn, coef, ref, bd);
    return VT_OK;
}

/* A direct weight gradient part's buffers: a (na doubles, zero), bp (nbp), the panel tree over rows x ldc
 * results (st) and its result c; the norms of t0 .. t1-1 zeroed */
typedef struct {
    double *a, *bp, *st, *c;
    vti_ptree tr;
} wg_bufs;

static vt_err wg_begin(conv_job *j, size_t na, size_t nbp, size_t rows, size_t ldc, size_t t0, size_t t1, wg_bufs *w)
{
    const size_t P = (j->M + VT_PANEL - 1) / VT_PANEL;
    w->a = calloc(na, sizeof *w->a), w->bp = malloc(nbp * sizeof *w->bp);
    w->st = malloc(vti_ptree_depth(P) * rows * ldc * sizeof *w->st), w->c = malloc(rows * ldc * sizeof *w->c);
    for (size_t t = t0; t < t1; t++) j->rn[t] = 0.0;
    VT_RETURN_ERROR_IF(!w->a || !w->bp || !w->st || !w->c, VT_ERR_NOMEM, "out of memory (a weight gradient's panels)");
    vti_ptree_init(&w->tr, w->st, rows * ldc);
    return VT_OK;
}

static void wg_free(wg_bufs *w) { free(w->a), free(w->bp), free(w->st), free(w->c); }

/* The weight gradient's row m of im2col read in place (X channels-last in FP64, C a multiple of nr,
 * t0 a multiple of nr): the pointer of column block q (t = t0 + q nr ...) at pb[q * stride], zero
 * where the tap lies outside the image */
static void patch_ptrs_wg(const vt_conv_geom *g, const double *x64, const double *zero, conv_px px, size_t t0,
                          size_t nq, size_t nr, const double **pb, size_t stride)
{
    const size_t C = g->C, k = g->k;
    size_t c0 = t0 % C, kx = (t0 / C) % k, ky = t0 / C / k;
    const double *src = NULL; /* the tap's pixel (NULL: outside the image) */
    int known = 0;            /* src decoded for this tap */
    for (size_t q = 0; q < nq; q++, pb += stride) {
        if (!known) {
            const size_t iy = px.oy * g->s + ky, ix = px.ox * g->s + kx;
            src = iy < g->p || ix < g->p || iy - g->p >= g->H || ix - g->p >= g->W
                      ? NULL
                      : x64 + ((px.b * g->H + iy - g->p) * g->W + ix - g->p) * C;
            known = 1;
        }
        *pb = src ? src + c0 : zero;
        if ((c0 += nr) == C) {
            c0 = 0, known = 0;
            if (++kx == k) kx = 0, ky++;
        }
    }
}

/* rn[n] (n < nr, a multiple of 4) += the squares of pb[u][n] for u < kl, u in order: each its own
 * sequential sum (clones per ISA, the same operations) */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx512f", "avx2", "default")))
#endif
static void seg_norms_seq(const double *const *pb, size_t kl, size_t nr, double *rn)
{
    for (size_t n = 0; n < nr; n += 4) {
        vti_v4d acc;
        memcpy(&acc, rn + n, sizeof acc);
        for (size_t u = 0; u < kl; u++) {
            vti_v4d v;
            memcpy(&v, pb[u] + n, sizeof v);
            acc += v * v;
        }
        memcpy(rn + n, &acc, sizeof acc);
    }
}

/* The end of a direct weight gradient's part: the panel tree's result c (rows t - t0, or transposed:
 * columns t - t0) into dW's rows t0 .. t1-1, the norms' square roots */
static void wgrad_end(conv_job *j, const vti_ptree *tr, double *c, size_t t0, size_t t1, size_t ldc, int transposed,
                      vt_err err, int part)
{
    const size_t N = j->N;
    if (!err) {
        vti_ptree_result(tr, c);
        for (size_t t = t0; t < t1; t++)
            for (size_t co = 0; co < N; co++) /* -0 -> +0 */
                j->C[t * N + co] = (transposed ? c[co * ldc + (t - t0)] : c[(t - t0) * ldc + co]) + 0.0;
    }
    for (size_t t = t0; t < t1; t++) j->rn[t] = sqrt(j->rn[t]);
    conv_part_end(j, part, err);
}

/* The direct weight gradient's column blocks lo..hi of nr taps and channels (t = lo nr .. min(hi nr, K)),
 * as its transpose dW^T [Co, K] = dY^T im2col(X): for each panel of VT_PANEL rows m of im2col (first to
 * last), the panel's rows gathered from X and packed as the micro-kernel's B (column blocks of nr, FP64,
 * zeros past K) with the norms of the part's columns accumulated (m in order: the GEMM path's bits), dY's
 * panel transposed into the FP64 rows of A (Co rows, padded with zero rows to a multiple of mr), one
 * sequential sum per element over the panel's rows, the panel results combined by the panel tree - the
 * evaluation of the GEMM path (a product is the same IEEE product either way round). */
static void wgrad_direct_part(conv_job *j, size_t lo, size_t hi, int part)
{
    const conv_impl *im = j->im;
    const size_t K = j->K, N = j->N, M = j->M, mr = im->mr, nr = im->nr, kc = VT_PANEL, P = (M + kc - 1) / kc;
    const size_t t0 = lo * nr, t1 = hi * nr < K ? hi * nr : K, nq = hi - lo, ldc = nq * nr, Np = (N + mr - 1) / mr * mr;
    float *row = calloc(K + nr, sizeof *row); /* the entries past K stay zero */
    const double **pb = j->x64 ? malloc(nq * kc * sizeof *pb) : NULL; /* read in place: [block][row m] */
    wg_bufs w;
    vt_err err = wg_begin(j, Np * kc, nq * kc * nr, Np, ldc, t0, t1, &w);
    if (!err && (!row || (j->x64 && !pb))) err = vt_set_error(VT_ERR_NOMEM, "out of memory (a weight gradient's panels)");
    double *restrict rn2 = j->rn, *a = w.a, *bp = w.bp;
    for (size_t p = 0; p < P && !err; p++) {
        const size_t m0 = p * kc, kl = M - m0 < kc ? M - m0 : kc;
        conv_px px = conv_px_of(j->g, m0);
        if (pb) {
            for (size_t u = 0; u < kl; u++, conv_px_next(j->g, &px)) {
                const float *restrict dyr = j->w + (m0 + u) * N;
                for (size_t co = 0; co < N; co++) a[co * kc + u] = (double)dyr[co];
                patch_ptrs_wg(j->g, j->x64, j->zero, px, t0, nq, nr, pb + u, kc);
            }
            for (size_t q = 0; q < nq; q++) seg_norms_seq(pb + q * kc, kl, nr, rn2 + t0 + q * nr);
            double *nx = vti_ptree_next(&w.tr);
            for (size_t q = 0; q < nq; q++)
                for (size_t r0 = 0; r0 < Np; r0 += mr) im->mkb(kl, a + r0 * kc, kc, pb + q * kc, nx + r0 * ldc + q * nr, ldc);
            vti_ptree_push(&w.tr);
            continue;
        }
        for (size_t u = 0; u < kl; u++, conv_px_next(j->g, &px)) {
            const float *restrict dyr = j->w + (m0 + u) * N;
            for (size_t co = 0; co < N; co++) a[co * kc + u] = (double)dyr[co];
            patch_row(j->g, j->x, m0 + u, row);
            for (size_t t = t0; t < t1; t++) rn2[t] += (double)row[t] * (double)row[t];
            for (size_t q = 0; q < nq; q++) {
                const float *restrict src = row + t0 + q * nr;
                double *restrict d = bp + (q * kl + u) * nr;
                for (size_t n = 0; n < nr; n++) d[n] = (double)src[n];
            }
        }
        conv_tile_mk(im, 0, Np, kl, nq, a, kc, bp, NULL, vti_ptree_next(&w.tr));
        vti_ptree_push(&w.tr);
    }
    wgrad_end(j, &w.tr, w.c, t0, t1, ldc, 1, err, part);
    free(row), free(pb), wg_free(&w);
}

/* The channels-first stem's weight gradient: column t of im2col (tap and channel t) for the rows
 * m0 .. m0+kl-1 into d[0..kl) in FP64 (0 outside the image): along an output row the entries lie s apart in
 * one row of one channel plane (contiguous for s = 1: converted four at a time) */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx512f", "avx2", "default")))
#endif
static void chw_col(const vt_conv_geom *g, const float *restrict x, size_t t, size_t m0, size_t kl, double *restrict d)
{
    const size_t C = g->C, k = g->k, HW = g->H * g->W, c = t % C, kx = t / C % k, ky = t / C / k;
    conv_px px = conv_px_of(g, m0);
    for (size_t u = 0; u < kl;) {
        const size_t seg = kl - u < g->Wo - px.ox ? kl - u : g->Wo - px.ox; /* the rest of this output row */
        const size_t iy = px.oy * g->s + ky;
        if (iy < g->p || iy - g->p >= g->H) {
            for (size_t i = 0; i < seg; i++) d[u + i] = 0.0;
        } else {
            const float *restrict row = x + px.b * C * HW + c * HW + (iy - g->p) * g->W;
            size_t i = 0;
            for (; i < seg; i++) { /* ix = (ox + i) s + kx - p */
                const int64_t ix = (int64_t)((px.ox + i) * g->s + kx) - (int64_t)g->p;
                if (g->s == 1 && ix >= 0 && ix + 4 <= (int64_t)g->W && i + 4 <= seg) break;
                d[u + i] = ix < 0 || ix >= (int64_t)g->W ? 0.0 : (double)row[ix];
            }
            if (i < seg) { /* s = 1, inside the image from here: four at a time, then the edge */
                const int64_t ix0 = (int64_t)(px.ox + kx) - (int64_t)g->p;
                for (; i + 4 <= seg && ix0 + (int64_t)i + 4 <= (int64_t)g->W; i += 4) {
                    vti_v4f f;
                    memcpy(&f, row + ix0 + (int64_t)i, sizeof f);
                    const vti_v4d v = __builtin_convertvector(f, vti_v4d);
                    memcpy(d + u + i, &v, sizeof v);
                }
                for (; i < seg; i++) {
                    const int64_t ix = ix0 + (int64_t)i;
                    d[u + i] = ix < 0 || ix >= (int64_t)g->W ? 0.0 : (double)row[ix];
                }
            }
        }
        u += seg, px.ox += seg;
        if (px.ox == g->Wo && (px.ox = 0, ++px.oy == g->Ho)) px.oy = 0, px.b++;
    }
}

/* The stem's weight gradient (X channels-first) by row blocks lo..hi of mr taps and channels t, the
 * orientation of the GEMM path (dW = im2col^T dY): per panel of VT_PANEL rows m, the rows t of A the
 * panel's columns of im2col (chw_col, contiguous in X), their squares added to rn2[t] in m order (the GEMM
 * path's bits), dY's panel packed as B (conv_pack_b), one sequential sum per element over the panel, the
 * panel results combined by the panel tree */
static void wgrad_chw_part(conv_job *j, size_t lo, size_t hi, int part)
{
    const conv_impl *im = j->im;
    const size_t K = j->K, N = j->N, M = j->M, mr = im->mr, nr = im->nr, kc = VT_PANEL, P = (M + kc - 1) / kc;
    const size_t t0 = lo * mr, t1 = hi * mr < K ? hi * mr : K, nt = (hi - lo) * mr, nb = (N + nr - 1) / nr,
                 ldc = nb * nr;
    wg_bufs w;
    vt_err err = wg_begin(j, nt * kc, nb * kc * nr, nt, ldc, t0, t1, &w);
    double *restrict rn2 = j->rn, *a = w.a, *bp = w.bp;
    for (size_t p = 0; p < P && !err; p++) {
        const size_t m0 = p * kc, kl = M - m0 < kc ? M - m0 : kc;
        for (size_t t = t0; t < t1; t++) chw_col(j->g, j->x, t, m0, kl, a + (t - t0) * kc);
        for (size_t u = 0; u < kl; u++)
            for (size_t t = t0; t < t1; t++) rn2[t] += a[(t - t0) * kc + u] * a[(t - t0) * kc + u];
        conv_pack_b(kl, N, nr, j->w + m0 * N, bp);
        conv_tile_mk(im, 0, nt, kl, nb, a, kc, bp, NULL, vti_ptree_next(&w.tr));
        vti_ptree_push(&w.tr);
    }
    wgrad_end(j, &w.tr, w.c, t0, t1, ldc, 0, err, part);
    wg_free(&w);
}

/* the weight gradient's rows lo..hi of im2col^T (taps and channels): for each panel of VT_PANEL
 * consecutive rows m of im2col, the panel's slice of those rows gathered (the norms accumulated, m in
 * order), one GEMM of the slice^T by the panel of dY in the executor's order, the panel results
 * combined by the panel tree - the evaluation vt_gemm gives a panelled reduction (docs/rounding.md
 * 2.1), so vt_bound_coef_red(M, M) covers it; unpanelled, c(M) covers any order */
static void wgrad_part(void *ctx, size_t lo, size_t hi, int part)
{
    conv_job *j = ctx;
    if (j->im) {
        if (j->chw_t) wgrad_chw_part(j, lo, hi, part);
        else wgrad_direct_part(j, lo, hi, part);
        return;
    }
    const size_t K = j->K, N = j->N, M = j->M, nr = hi - lo, kc = VT_PANEL, P = (M + kc - 1) / kc;
    const size_t depth = vti_ptree_depth(P);
    vt_exec sub;
    vt_exec_init(&sub, j->e->order, j->e->bound, j->e->seed);
    float *row = malloc(K * sizeof *row), *a = j->blas ? NULL : malloc(kc * nr * sizeof *a);
    double *st = malloc(depth * nr * N * sizeof *st), *a64 = j->blas ? malloc(kc * nr * sizeof *a64) : NULL,
           *d64 = j->blas ? malloc(kc * N * sizeof *d64) : NULL;
    vt_err err = row && (a || a64) && st && (d64 || !j->blas)
                     ? VT_OK
                     : vt_set_error(VT_ERR_NOMEM, "out of memory (a weight gradient's panels)");
    vti_ptree t;
    if (!err) vti_ptree_init(&t, st, nr * N);
    for (size_t i = lo; i < hi; i++) j->rn[i] = 0.0;
    for (size_t q = 0; q < P && !err; q++) {
        const size_t m0 = q * kc, kl = M - m0 < kc ? M - m0 : kc;
        for (size_t u = 0; u < kl; u++) { /* a [kl, nr]: op(A) = a^T, stored transposed (BLAS order: FP64) */
            patch_row(j->g, j->x, m0 + u, row);
            const float *restrict src = row + lo;
            double *restrict rn2 = j->rn + lo;
            if (a64) {
                double *restrict d = a64 + u * nr;
                for (size_t r = 0; r < nr; r++) {
                    const double v = (double)src[r];
                    d[r] = v;
                    rn2[r] += v * v;
                }
            } else {
                float *restrict d = a + u * nr;
                for (size_t r = 0; r < nr; r++) {
                    d[r] = src[r];
                    rn2[r] += (double)src[r] * (double)src[r];
                }
            }
        }
        if (j->blas) { /* this panel of dY in FP64, one BLAS GEMM */
            for (size_t i = 0; i < kl * N; i++) d64[i] = (double)j->w[m0 * N + i];
            cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)nr, (int)N, (int)kl, 1.0, a64, (int)nr, d64, (int)N,
                        0.0, vti_ptree_next(&t), (int)N);
        } else {
            err = vt_gemm_plain(&sub, 1, 0, nr, N, kl, a, j->w + m0 * N, vti_ptree_next(&t));
        }
        if (!err) vti_ptree_push(&t);
    }
    if (!err) vti_ptree_result(&t, j->C + lo * N);
    for (size_t i = 0; !err && i < nr * N; i++) j->C[lo * N + i] += 0.0; /* -0 -> +0 */
    for (size_t i = lo; i < hi; i++) j->rn[i] = sqrt(j->rn[i]);
    conv_part_end(j, part, err);
    free(row), free(a), free(st), free(a64), free(d64);
    vt_exec_free(&sub);
}

vt_err vt_conv2d_wgrad(vt_exec *e, const vt_conv_geom *g, size_t Co, const float *x, const float *dy, double *C,
                       double *rn, double *cn, vt_bounds *bd, vt_conv_ref *ref)
{
    size_t K = 0, M = 0;
    VT_FORWARD_IF_ERROR(conv_args(e, g, Co, x, dy, C, rn, cn, bd, ref, &K, &M, "vt_conv2d_wgrad"));
    VT_RETURN_ERROR_IF((uint64_t)M > VT_MAX_REDUCTION, VT_ERR_LIMIT,
                       "vt_conv2d_wgrad: reduction length %zu exceeds VT_MAX_REDUCTION", M);
    const double coef = vt_bound_coef_red(&e->bound, (uint64_t)M, (uint64_t)M);
    VT_RETURN_ERROR_IF(!(coef >= 0.0), VT_ERR_LIMIT, "vt_conv2d_wgrad: no bound coefficient for M=%zu", M);
    col_norms(dy, M, Co, cn);
    conv_job *j = malloc(sizeof *j);
    VT_RETURN_ERROR_IF(!j, VT_ERR_NOMEM, "out of memory (a weight gradient)");
    *j = (conv_job){.e = e, .g = g, .N = Co, .K = K, .M = M, .x = x, .w = dy, .C = C, .rn = rn,
                    .blas = e->order == VT_ORDER_BLAS};
    size_t grain = K / 2 > 8 ? K / 2 : 8; /* at most two parts: each gathers every row of im2col */
    const conv_impl *im = j->blas ? conv_impl_get() : NULL;
    size_t units = K;
    if (im && im->mks) { /* the direct kernels: parts of whole blocks of nr (mr for the stem) taps and channels */
        j->im = im, j->chw_t = g->chw;
        const size_t nx = g->B * g->H * g->W * g->C;
        double *x64 = NULL; /* read in place: X converted once (the executor's scratch), C zeros first */
        if (!g->chw && g->C % im->nr == 0 &&
            vti_ws_get(&e->ws, VT_WS_A, nx + g->C, sizeof *x64, (void **)&x64) == VT_OK) {
            for (size_t i = 0; i < g->C; i++) x64[i] = 0.0;
            cvt_f64(x, nx, x64 + g->C);
            j->zero = x64, j->x64 = x64 + g->C;
        }
        units = (K + (g->chw ? im->mr : im->nr) - 1) / (g->chw ? im->mr : im->nr);
        grain = units / 2 > 1 ? units / 2 : 1;
    }
    vt_err err = conv_join(j, vt_par_for(units, grain, wgrad_part, j));
    free(j);
    VT_FORWARD_IF_ERROR(err);
    conv_bounds(1, g, x, dy, K, Co, M, rn, cn, coef, ref, bd);
    return VT_OK;
}

/* ------------------------------------------------ the input gradient without G (vt_conv2d_dgrad) */

/* G(dY)'s entries k0 .. k0+n-1 of row i (pixel (b, iy, ix)): entry (ky, kx, co) is dY[b, oy, ox, co] where
 * oy s = iy + p - ky, ox s = ix + p - kx for an output pixel, else 0 (vt_conv_dgather's); the exact
 * evaluator's and the tight bound's operand (vt_bounds.xa_fill) */
static void fill_dgrad(const void *ctx, size_t i, size_t k0, size_t n, float *dst)
{
    const vt_conv_ref *r = ctx;
    const vt_conv_geom *g = &r->g;
    const size_t Co = r->Co, k = g->k, s = g->s;
    const size_t ix = i % g->W, iy = (i / g->W) % g->H, b = i / (g->W * g->H);
    size_t co = k0 % Co, kx = (k0 / Co) % k, ky = k0 / (Co * k);
    for (size_t u = 0; u < n;) {
        const size_t ny = iy + g->p, nx = ix + g->p; /* oy s + ky, ox s + kx */
        const float *src = NULL;
        if (ny >= ky && nx >= kx && (ny - ky) % s == 0 && (nx - kx) % s == 0 && (ny - ky) / s < g->Ho &&
            (nx - kx) / s < g->Wo)
            src = r->x + ((b * g->Ho + (ny - ky) / s) * g->Wo + (nx - kx) / s) * Co;
        const size_t m = Co - co < n - u ? Co - co : n - u; /* the rest of this tap's block */
        if (src) memcpy(dst + u, src + co, m * sizeof *dst);
        else memset(dst + u, 0, m * sizeof *dst);
        u += m, co += m;
        if (co == Co) {
            co = 0;
            if (++kx == k) kx = 0, ky++;
        }
    }
}

float vt_conv_dgrad_entry(const vt_conv_geom *g, size_t Co, const float *dy, size_t i, size_t t)
{
    const vt_conv_ref r = {*g, dy, Co};
    float v;
    fill_dgrad(&r, i, t, 1, &v);
    return v;
}

typedef struct {
    size_t cy, cx, fy, fx, ny, nx, n, Kc; /* a phase class: first pixels, counts, rows n = B ny nx, terms */
    size_t wofs;                          /* its compact W' [Kc, N] at wc + wofs */
} dg_class;

typedef struct {
    vt_exec *e;
    const vt_conv_geom *g;
    size_t Co, N, K, mr, tiles_per[64 * 64 + 1]; /* tiles_per: prefix counts of the classes' tiles */
    const dg_class *cl;
    size_t ncl;
    const float *dy, *wc;
    const double *wc64; /* the BLAS order's compact W' in FP64 */
    int blas, panel;    /* panel: the dense reduction is panelled (vt_gemm_panel(K)) */
    const conv_impl *im; /* the BLAS order's direct kernels (NULL: the GEMM path) */
    const double *wcp;   /* their packed compact W' (conv_pack_b of each class's, at (wofs / N) nb nr) */
    const double *dy64, *zero; /* read in place (dg_row_ptrs): dY in FP64 and Co zeros; NULL: not used */
    size_t nb;           /* its column blocks */
    double *C, *rn;
    vt_err err[VT_PAR_MAX];
    char msg[VT_PAR_MAX][200];
} dg_job;

/* row r of class cl gathered (its taps' blocks of G in row-major tap order); returns G's row index */
static size_t dg_row(const dg_job *j, const dg_class *cl, size_t r, float *row)
{
    const vt_conv_geom *g = j->g;
    const size_t Co = j->Co, s = g->s, k = g->k;
    const size_t b = r / (cl->ny * cl->nx), iy = cl->fy + (r / cl->nx % cl->ny) * s, ix = cl->fx + (r % cl->nx) * s;
    const size_t py = iy + g->p, px = ix + g->p;
    for (size_t ky = cl->cy; ky < k; ky += s)
        for (size_t kx = cl->cx; kx < k; kx += s, row += Co) {
            /* (py - ky) and (px - kx) are multiples of s by the class */
            if (py < ky || px < kx || (py - ky) / s >= g->Ho || (px - kx) / s >= g->Wo)
                memset(row, 0, Co * sizeof *row);
            else
                memcpy(row, j->dy + ((b * g->Ho + (py - ky) / s) * g->Wo + (px - kx) / s) * Co, Co * sizeof *row);
        }
    return (b * g->H + iy) * g->W + ix;
}

/* dg_row straight into FP64 for Co a multiple of 4 (the direct kernels): d = the row, *ss its sum of
 * squares in vti_cvt_span's four lanes (position mod 4 in the compact row; zero blocks add nothing):
 * the bits of dg_row then vti_cvt_span, one pass */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx512f", "avx2", "default")))
#endif
static size_t dg_row_cvt4(const dg_job *j, const dg_class *cl, conv_px q, double *restrict d, double *ss)
{
    const vt_conv_geom *g = j->g;
    const size_t Co = j->Co, s = g->s, k = g->k, b = q.b, iy = cl->fy + q.oy * s, ix = cl->fx + q.ox * s;
    /* tap ky = cy + i s reaches output row (py - cy) / s - i (py - ky is a multiple of s by the class) */
    const int64_t oy0 = (int64_t)((iy + g->p - cl->cy) / s), ox0 = (int64_t)((ix + g->p - cl->cx) / s);
    vti_v4d acc = {0.0, 0.0, 0.0, 0.0};
    int64_t oy = oy0;
    for (size_t ky = cl->cy; ky < k; ky += s, oy--) {
        int64_t ox = ox0;
        for (size_t kx = cl->cx; kx < k; kx += s, ox--, d += Co) {
            if (oy < 0 || ox < 0 || oy >= (int64_t)g->Ho || ox >= (int64_t)g->Wo)
                for (size_t c = 0; c < Co; c++) d[c] = 0.0;
            else
                cvt4_acc(j->dy + ((b * g->Ho + (size_t)oy) * g->Wo + (size_t)ox) * Co, Co, d, &acc);
        }
    }
    *ss = (acc[0] + acc[1]) + (acc[2] + acc[3]);
    return (b * g->H + iy) * g->W + ix;
}

/* dg_row's blocks as the segment micro-kernel's pointers (into j->dy64, j->zero where no output pixel
 * is reached): p[i * stride] for the class's tap i; returns G's row index */
static size_t dg_row_ptrs(const dg_job *j, const dg_class *cl, conv_px q, const double **p, size_t stride)
{
    const vt_conv_geom *g = j->g;
    const size_t Co = j->Co, s = g->s, k = g->k, b = q.b, iy = cl->fy + q.oy * s, ix = cl->fx + q.ox * s;
    const int64_t oy0 = (int64_t)((iy + g->p - cl->cy) / s), ox0 = (int64_t)((ix + g->p - cl->cx) / s);
    int64_t oy = oy0;
    for (size_t ky = cl->cy; ky < k; ky += s, oy--) {
        int64_t ox = ox0;
        for (size_t kx = cl->cx; kx < k; kx += s, ox--, p += stride)
            *p = oy < 0 || ox < 0 || oy >= (int64_t)g->Ho || ox >= (int64_t)g->Wo
                     ? j->zero
                     : j->dy64 + ((b * g->Ho + (size_t)oy) * g->Wo + (size_t)ox) * Co;
    }
    return (b * g->H + iy) * g->W + ix;
}

/* tiles lo..hi (over all classes): each tile's rows gathered (norms: the four-lane sums of squares of
 * their entries, zeros adding nothing, whatever the order), one GEMM by the class's compact W' - in
 * panels of VT_PANEL combined by the panel tree where j->panel and Kc > VT_PANEL - the rows scattered
 * into C */
static void dg_part(void *ctx, size_t lo, size_t hi, int part)
{
    dg_job *j = ctx;
    const size_t K = j->K, N = j->N, mr = j->mr, P = (K + VT_PANEL - 1) / VT_PANEL;
    const size_t ldc = j->im ? j->nb * j->im->nr : N; /* ct's row stride */
    vt_exec sub;
    vt_exec_init(&sub, j->e->order, j->e->bound, j->e->seed);
    float *a = malloc(mr * K * sizeof *a), *ap = j->blas ? NULL : malloc(mr * VT_PANEL * sizeof *ap);
    double *a64 = malloc((j->blas ? mr * K : K) * sizeof *a64), *ct = malloc(mr * ldc * sizeof *ct),
           *st = malloc(vti_ptree_depth(P) * mr * ldc * sizeof *st);
    size_t *rows = malloc(mr * sizeof *rows);
    const double **ptr = j->dy64 ? malloc(mr * K / j->Co * sizeof *ptr) : NULL; /* [block][tap][row] */
    if (j->dy64 && !ptr) free(rows), rows = NULL;
    vt_err err = a && (ap || j->blas) && a64 && ct && st && rows
                     ? VT_OK
                     : vt_set_error(VT_ERR_NOMEM, "out of memory (an input gradient's tile)");
    size_t c = 0;
    for (size_t tl = lo; tl < hi && !err; tl++) {
        while (j->tiles_per[c + 1] <= tl) c++;
        const dg_class *cl = &j->cl[c];
        const size_t Kc = cl->Kc, m0 = (tl - j->tiles_per[c]) * mr, n = cl->n - m0 < mr ? cl->n - m0 : mr;
        const int pan = j->panel && Kc > VT_PANEL;
        /* the class's row m0 + r: pixel (b, fy + u s, fx + v s), stepped as (b, u, v) */
        conv_px q = {(m0) / (cl->ny * cl->nx), (m0) / cl->nx % cl->ny, (m0) % cl->nx};
        if (j->dy64) { /* read in place: the rows as pointers, padded to the micro-kernel's with zero rows */
            const size_t imr = j->im->mr, nt = Kc / j->Co, np = (n + imr - 1) / imr * imr;
            for (size_t r = 0; r < np; r++) {
                const double **p = ptr + (r / imr * nt) * imr + r % imr;
                if (r >= n) {
                    for (size_t i = 0; i < nt; i++) p[i * imr] = j->zero;
                    continue;
                }
                rows[r] = dg_row_ptrs(j, cl, q, p, imr);
                if (++q.ox == cl->nx && (q.ox = 0, ++q.oy == cl->ny)) q.oy = 0, q.b++;
                j->rn[rows[r]] = sqrt(seg_sumsq4(p, imr, nt, j->Co));
            }
            conv_tile_mks(j->im, pan, np, nt, j->Co, j->nb, ptr, j->wcp + cl->wofs / N * j->nb * j->im->nr, st, ct);
            for (size_t r = 0; r < n; r++)
                for (size_t qq = 0; qq < N; qq++) j->C[rows[r] * N + qq] = ct[r * ldc + qq] + 0.0; /* -0 -> +0 */
            continue;
        }
        for (size_t r = 0; r < n; r++) {
            if (j->im && j->Co % 4 == 0) {
                double ss;
                rows[r] = dg_row_cvt4(j, cl, q, a64 + r * Kc, &ss);
                if (++q.ox == cl->nx && (q.ox = 0, ++q.oy == cl->ny)) q.oy = 0, q.b++;
                j->rn[rows[r]] = sqrt(ss);
                continue;
            }
            float *row = a + r * Kc;
            rows[r] = dg_row(j, cl, m0 + r, row);
            j->rn[rows[r]] = sqrt(vti_cvt_span(row, Kc, j->blas ? a64 + r * Kc : a64));
        }
        if (j->im) { /* the direct kernels: rows padded to the micro-kernel's with zeros */
            const size_t np = (n + j->im->mr - 1) / j->im->mr * j->im->mr;
            for (size_t i = n * Kc; i < np * Kc; i++) a64[i] = 0.0;
            conv_tile_mk(j->im, pan, np, Kc, j->nb, a64, Kc, j->wcp + cl->wofs / N * j->nb * j->im->nr, st, ct);
        } else if (j->blas) {
            dgemm_panels(pan, n, N, Kc, a64, j->wc64 + cl->wofs, st, ct);
        } else if (!pan) {
            err = vt_gemm_plain(&sub, 0, 0, n, N, Kc, a, j->wc + cl->wofs, ct);
        } else {
            vti_ptree t;
            vti_ptree_init(&t, st, n * N);
            for (size_t k0 = 0; k0 < Kc && !err; k0 += VT_PANEL) {
                const size_t kl = Kc - k0 < VT_PANEL ? Kc - k0 : VT_PANEL;
                for (size_t r = 0; r < n; r++) memcpy(ap + r * kl, a + r * Kc + k0, kl * sizeof *ap);
                err = vt_gemm_plain(&sub, 0, 0, n, N, kl, ap, j->wc + cl->wofs + k0 * N, vti_ptree_next(&t));
                if (!err) vti_ptree_push(&t);
            }
            if (!err) vti_ptree_result(&t, ct);
        }
        for (size_t r = 0; !err && r < n; r++)
            for (size_t q = 0; q < N; q++) j->C[rows[r] * N + q] = ct[r * ldc + q] + 0.0; /* -0 -> +0 */
    }
    j->err[part] = err;
    if (err) snprintf(j->msg[part], sizeof j->msg[part], "%s", vt_errmsg());
    free(a), free(ap), free(a64), free(ct), free(st), free(rows), free(ptr);
    vt_exec_free(&sub);
}

vt_err vt_conv2d_dgrad(vt_exec *e, const vt_conv_geom *g, size_t Co, const float *dy, const float *w, float *wp,
                       double *C, double *rn, double *cn, vt_bounds *bd, vt_conv_ref *ref)
{
    VT_RETURN_ERROR_IF(!e || !g || g->chw || Co < 1 || !dy || !w || !wp || !C || !rn || !cn || !bd || !ref, VT_ERR_ARG,
                       "vt_conv2d_dgrad: bad arguments");
    const size_t k = g->k, s = g->s, N = g->C, K = k * k * Co, Min = g->B * g->H * g->W;
    VT_RETURN_ERROR_IF(K > INT_MAX || Min > INT_MAX || N > INT_MAX || s > 64, VT_ERR_LIMIT,
                       "vt_conv2d_dgrad: the convolution is too large");
    const double coef = vt_bound_coef_red(&e->bound, (uint64_t)K, (uint64_t)K);
    VT_RETURN_ERROR_IF(!(coef >= 0.0), VT_ERR_LIMIT, "vt_conv2d_dgrad: no bound coefficient for K=%zu", K);
    vt_conv_wperm_f32(k, N, Co, w, wp);
    for (size_t q = 0; q < N; q++) cn[q] = 0.0; /* W''s column norms, rows in order (vt_conv_dgrad_gemm's) */
    for (size_t r = 0; r < K; r++)
        for (size_t q = 0; q < N; q++) cn[q] += (double)wp[r * N + q] * (double)wp[r * N + q];
    for (size_t q = 0; q < N; q++) cn[q] = sqrt(cn[q]);
    dg_job *j = calloc(1, sizeof *j);
    dg_class *cl = calloc(s * s, sizeof *cl);
    float *wc = malloc(K * N * sizeof *wc);
    const conv_impl *im = e->order == VT_ORDER_BLAS ? conv_impl_get() : NULL;
    im = im && im->mks ? im : NULL;
    const size_t nb = im ? (N + im->nr - 1) / im->nr : 0;
    double *wc64 = e->order == VT_ORDER_BLAS ? malloc((im ? K * nb * im->nr : K * N) * sizeof *wc64) : NULL;
    vt_err err = VT_OK;
    if (!j || !cl || !wc || (e->order == VT_ORDER_BLAS && !wc64)) {
        err = vt_set_error(VT_ERR_NOMEM, "out of memory (an input gradient)");
        goto out;
    }
    *j = (dg_job){.e = e, .g = g, .Co = Co, .N = N, .K = K, .dy = dy, .wc = wc, .wc64 = wc64, .C = C, .rn = rn,
                  .blas = e->order == VT_ORDER_BLAS, .panel = vt_gemm_panel(e, K), .im = im, .wcp = im ? wc64 : NULL,
                  .nb = nb};
    /* the classes: their compact W' (the class's taps in row-major tap order, Co rows each; the classes'
     * taps partition the k*k taps, so K*N floats in all); rows no tap reaches are +0 with norm 0 */
    size_t ncl = 0, wofs = 0, maxn = 1;
    for (size_t cy = 0; cy < s; cy++)
        for (size_t cx = 0; cx < s; cx++) {
            dg_class c = {.cy = cy, .cx = cx, .fy = phase_first(g->p, s, cy), .fx = phase_first(g->p, s, cx),
                          .ny = phase_count(g->H, g->p, s, cy), .nx = phase_count(g->W, g->p, s, cx),
                          .Kc = phase_taps(k, s, cy) * phase_taps(k, s, cx) * Co, .wofs = wofs};
            c.n = g->B * c.ny * c.nx;
            if (c.n == 0) continue;
            if (c.Kc == 0) {
                for (size_t b = 0; b < g->B; b++)
                    for (size_t u = 0; u < c.ny; u++)
                        for (size_t v = 0; v < c.nx; v++) {
                            const size_t i = (b * g->H + c.fy + u * s) * g->W + c.fx + v * s;
                            rn[i] = 0.0;
                            for (size_t q = 0; q < N; q++) C[i * N + q] = 0.0;
                        }
                continue;
            }
            size_t q = 0;
            for (size_t ky = cy; ky < k; ky += s)
                for (size_t kx = cx; kx < k; kx += s, q++)
                    memcpy(wc + wofs + q * Co * N, wp + (ky * k + kx) * Co * N, Co * N * sizeof *wc);
            wofs += c.Kc * N;
            maxn = c.n > maxn ? c.n : maxn;
            cl[ncl++] = c;
        }
    for (size_t c = 0; im && c < ncl; c++) /* each class's compact W' packed for the micro-kernel */
        conv_pack_b(cl[c].Kc, N, im->nr, wc + cl[c].wofs, wc64 + cl[c].wofs / N * nb * im->nr);
    for (size_t i = 0; wc64 && !im && i < wofs; i++) wc64[i] = (double)wc[i];
    j->mr = im ? conv_mk_rows(im, K, maxn) : conv_tile_rows(K, maxn);
    const size_t ndy = g->B * g->Ho * g->Wo * Co;
    double *dy64 = NULL; /* read in place: dY converted once (the executor's scratch), Co zeros first */
    if (im && Co % 4 == 0 && (!j->panel || VT_PANEL % Co == 0) &&
        vti_ws_get(&e->ws, VT_WS_A, ndy + Co, sizeof *dy64, (void **)&dy64) == VT_OK) {
        for (size_t i = 0; i < Co; i++) dy64[i] = 0.0;
        cvt_f64(dy, ndy, dy64 + Co);
        j->zero = dy64, j->dy64 = dy64 + Co;
    }
    j->cl = cl, j->ncl = ncl;
    for (size_t c = 0; c < ncl; c++) j->tiles_per[c + 1] = j->tiles_per[c] + (cl[c].n + j->mr - 1) / j->mr;
    const int parts = vt_par_for(j->tiles_per[ncl], 1, dg_part, j);
    for (int p = 0; p < parts && !err; p++)
        if (j->err[p]) err = vt_set_error(j->err[p], "%s", j->msg[p]);
    if (!err) {
        vt_gemm_bounds(0, 0, Min, N, K, NULL, wp, rn, cn, coef, bd);
        ref->g = *g, ref->x = dy, ref->Co = Co;
        bd->ta = NULL, bd->ta_si = bd->ta_sk = 0; /* THE bound: the tight one, op(A)'s rows through xa_fill */
        bd->xa = dy, bd->xa_si = bd->xa_sk = 0;
        bd->xa_fill = fill_dgrad;
        bd->xa_ctx = ref;
    }
out:
    free(j), free(cl), free(wc), free(wc64);
    return err;
}

#define VT_CNN_T float
#define SFX(n) n##_f32
#include "vt_cnn.c"
#undef VT_CNN_T
#undef SFX
#define VT_CNN_T double
#define SFX(n) n##_f64
#include "vt_cnn.c"
#undef VT_CNN_T
#undef SFX

#else /* ================================================= the movement kernels for one T */

#define T VT_CNN_T

/* The gathers run over the threads in parts of image rows (vt_par_range): values are only moved, each
 * to its own place, so the bits do not depend on the split. */
typedef struct {
    const vt_conv_geom *g;
    size_t Co;
    const T *src;
    T *dst;
} SFX(vti_gather_a);

/* rows r = b*Ho + oy of col */
static void SFX(im2col_r)(const void *p, size_t r0, size_t r1)
{
    const SFX(vti_gather_a) *a = p;
    const vt_conv_geom *g = a->g;
    const size_t C = g->C, k = g->k, H = g->H, W = g->W, row = k * k * C;
    for (size_t r = r0; r < r1; r++) {
        const size_t b = r / g->Ho, oy = r % g->Ho;
        for (size_t ox = 0; ox < g->Wo; ox++) {
            T *dst = a->dst + (r * g->Wo + ox) * row;
            for (size_t ky = 0; ky < k; ky++)
                for (size_t kx = 0; kx < k; kx++, dst += C) {
                    int64_t iy = (int64_t)(oy * g->s + ky) - (int64_t)g->p;
                    int64_t ix = (int64_t)(ox * g->s + kx) - (int64_t)g->p;
                    if (iy < 0 || ix < 0 || iy >= (int64_t)H || ix >= (int64_t)W) {
                        for (size_t c = 0; c < C; c++) dst[c] = 0;
                    } else if (g->chw) {
                        const T *src = a->src + b * C * H * W + (size_t)iy * W + (size_t)ix;
                        for (size_t c = 0; c < C; c++) dst[c] = src[c * H * W];
                    } else {
                        memcpy(dst, a->src + ((b * H + (size_t)iy) * W + (size_t)ix) * C, C * sizeof(T));
                    }
                }
        }
    }
}

void SFX(vt_im2col)(const vt_conv_geom *g, const T *x, T *col)
{
    const size_t cols = g->Wo * g->k * g->k * g->C; /* values per row r */
    vt_par_range(g->B * g->Ho, VTI_ROWS_GRAIN(cols), SFX(im2col_r),
                  &(SFX(vti_gather_a)){g, g->C, x, col});
}

/* rows r = b*H + iy of G */
static void SFX(dgather_r)(const void *p, size_t r0, size_t r1)
{
    const SFX(vti_gather_a) *a = p;
    const vt_conv_geom *g = a->g;
    const size_t k = g->k, s = g->s, Co = a->Co, row = k * k * Co;
    for (size_t r = r0; r < r1; r++) {
        const size_t b = r / g->H, iy = r % g->H;
        for (size_t ix = 0; ix < g->W; ix++) {
            T *dst = a->dst + (r * g->W + ix) * row;
            for (size_t ky = 0; ky < k; ky++)
                for (size_t kx = 0; kx < k; kx++, dst += Co) {
                    /* oy * s = iy + p - ky */
                    int64_t ny = (int64_t)(iy + g->p) - (int64_t)ky, nx = (int64_t)(ix + g->p) - (int64_t)kx;
                    if (ny < 0 || nx < 0 || ny % (int64_t)s || nx % (int64_t)s || ny / (int64_t)s >= (int64_t)g->Ho ||
                        nx / (int64_t)s >= (int64_t)g->Wo) {
                        for (size_t c = 0; c < Co; c++) dst[c] = 0;
                    } else {
                        size_t oy = (size_t)ny / s, ox = (size_t)nx / s;
                        memcpy(dst, a->src + ((b * g->Ho + oy) * g->Wo + ox) * Co, Co * sizeof(T));
                    }
                }
        }
    }
}

void SFX(vt_conv_dgather)(const vt_conv_geom *g, size_t Co, const T *dy, T *G)
{
    const size_t cols = g->W * g->k * g->k * Co; /* values per row r */
    vt_par_range(g->B * g->H, VTI_ROWS_GRAIN(cols), SFX(dgather_r),
                  &(SFX(vti_gather_a)){g, Co, dy, G});
}

void SFX(vt_conv_wperm)(size_t k, size_t C, size_t Co, const T *w, T *wp)
{
    for (size_t t = 0; t < k * k; t++)
        for (size_t c = 0; c < C; c++)
            for (size_t co = 0; co < Co; co++) wp[(t * Co + co) * C + c] = w[(t * C + c) * Co + co];
}

vt_err SFX(vt_conv_dgrad_plain)(const vt_conv_geom *g, size_t Co, const T *G, const T *wp, T *C)
{
    const size_t k = g->k, s = g->s, N = g->C, K = k * k * Co, t0 = phase_taps(k, s, 0), K0 = t0 * t0 * Co;
    const size_t n0 = g->B * ((g->H + s - 1) / s) * ((g->W + s - 1) / s); /* the largest class's pixels */
    T *a = malloc((n0 * K0 + 1) * sizeof *a), *wb = malloc((K0 * N + 1) * sizeof *wb), *c = malloc((n0 * N + 1) * sizeof *c);
    vt_err err = VT_OK;
    if (!a || !wb || !c || n0 > INT_MAX || K0 > INT_MAX || N > INT_MAX)
        err = vt_set_error(VT_ERR_NOMEM, "out of memory (the input gradient's phase operands)");
    for (size_t cy = 0; !err && cy < s; cy++)
        for (size_t cx = 0; cx < s; cx++) {
            const size_t Kc = phase_taps(k, s, cy) * phase_taps(k, s, cx) * Co;
            const size_t fy = phase_first(g->p, s, cy), fx = phase_first(g->p, s, cx);
            const size_t ny = phase_count(g->H, g->p, s, cy), nx = phase_count(g->W, g->p, s, cx), n = g->B * ny * nx;
            if (n == 0) continue;
            T *dst = a;
            size_t q = 0;
            for (size_t b = 0; b < g->B; b++)
                for (size_t u = 0; u < ny; u++)
                    for (size_t v = 0; v < nx; v++) {
                        const T *row = G + ((b * g->H + fy + u * s) * g->W + fx + v * s) * K;
                        for (size_t ky = cy; ky < k; ky += s)
                            for (size_t kx = cx; kx < k; kx += s, dst += Co)
                                memcpy(dst, row + (ky * k + kx) * Co, Co * sizeof *dst);
                    }
            for (size_t ky = cy; ky < k; ky += s)
                for (size_t kx = cx; kx < k; kx += s, q++)
                    memcpy(wb + q * Co * N, wp + (ky * k + kx) * Co * N, Co * N * sizeof *wb);
            if (Kc)
                _Generic((T)0, float: cblas_sgemm, default: cblas_dgemm)(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)n,
                                                                        (int)N, (int)Kc, (T)1, a, (int)Kc, wb, (int)N,
                                                                        (T)0, c, (int)N);
            else
                for (size_t i = 0; i < n * N; i++) c[i] = 0;
            for (size_t r = 0, b = 0; b < g->B; b++)
                for (size_t u = 0; u < ny; u++)
                    for (size_t v = 0; v < nx; v++, r++)
                        memcpy(C + ((b * g->H + fy + u * s) * g->W + fx + v * s) * N, c + r * N, N * sizeof *C);
        }
    free(a), free(wb), free(c);
    return err;
}

/* The plain form of vt_conv2d_dgrad (the kind conv2d_input_grad's plain baseline): the same phase classes,
 * each class's rows gathered from dY in tiles (no G), one CBLAS GEMM per tile by the class's rows of W'. */
vt_err SFX(vt_conv2d_dgrad_plain)(const vt_conv_geom *g, size_t Co, const T *dy, const T *w, T *dx)
{
    const size_t k = g->k, s = g->s, N = g->C, K = k * k * Co;
    size_t mr = ((size_t)1 << 18) / (K * sizeof(T));
    mr = mr < 64 ? 64 : mr;
    T *wp = malloc(K * N * sizeof *wp), *wb = malloc(K * N * sizeof *wb), *a = malloc(mr * K * sizeof *a),
      *c = malloc(mr * N * sizeof *c);
    size_t *rows = malloc(mr * sizeof *rows);
    vt_err err = VT_OK;
    if (!wp || !wb || !a || !c || !rows || K > INT_MAX || N > INT_MAX)
        err = vt_set_error(VT_ERR_NOMEM, "out of memory (an input gradient's tiles)");
    if (!err) SFX(vt_conv_wperm)(k, N, Co, w, wp);
    for (size_t cy = 0; !err && cy < s; cy++)
        for (size_t cx = 0; cx < s; cx++) {
            const size_t Kc = phase_taps(k, s, cy) * phase_taps(k, s, cx) * Co;
            const size_t fy = phase_first(g->p, s, cy), fx = phase_first(g->p, s, cx);
            const size_t ny = phase_count(g->H, g->p, s, cy), nx = phase_count(g->W, g->p, s, cx), n = g->B * ny * nx;
            size_t q = 0;
            for (size_t ky = cy; ky < k; ky += s)
                for (size_t kx = cx; kx < k; kx += s, q++)
                    memcpy(wb + q * Co * N, wp + (ky * k + kx) * Co * N, Co * N * sizeof *wb);
            for (size_t m0 = 0; m0 < n; m0 += mr) {
                const size_t nn = n - m0 < mr ? n - m0 : mr;
                T *dst = a;
                for (size_t r = 0; r < nn; r++) {
                    const size_t m = m0 + r, b = m / (ny * nx), iy = fy + (m / nx % ny) * s, ix = fx + (m % nx) * s;
                    rows[r] = (b * g->H + iy) * g->W + ix;
                    for (size_t ky = cy; ky < k; ky += s)
                        for (size_t kx = cx; kx < k; kx += s, dst += Co) {
                            const size_t py = iy + g->p, px = ix + g->p;
                            if (py < ky || px < kx || (py - ky) / s >= g->Ho || (px - kx) / s >= g->Wo)
                                memset(dst, 0, Co * sizeof *dst);
                            else
                                memcpy(dst, dy + ((b * g->Ho + (py - ky) / s) * g->Wo + (px - kx) / s) * Co,
                                       Co * sizeof *dst);
                        }
                }
                if (Kc)
                    _Generic((T)0, float: cblas_sgemm, default: cblas_dgemm)(CblasRowMajor, CblasNoTrans, CblasNoTrans,
                                                                            (int)nn, (int)N, (int)Kc, (T)1, a, (int)Kc,
                                                                            wb, (int)N, (T)0, c, (int)N);
                else
                    for (size_t i = 0; i < nn * N; i++) c[i] = 0;
                for (size_t r = 0; r < nn; r++) memcpy(dx + rows[r] * N, c + r * N, N * sizeof *dx);
            }
        }
    free(wp), free(wb), free(a), free(c), free(rows);
    return err;
}

/* the maximum of a window: vt_cnn_hd.h (shared with the CUDA backend) */
#define argmax_T SFX(vti_argmax)

void SFX(vt_maxpool)(size_t B, size_t H, size_t W, size_t C, size_t k, const T *x, T *y)
{
    const size_t Ho = H / k, Wo = W / k;
    for (size_t b = 0; b < B; b++)
        for (size_t oy = 0; oy < Ho; oy++)
            for (size_t ox = 0; ox < Wo; ox++)
                for (size_t c = 0; c < C; c++)
                    y[((b * Ho + oy) * Wo + ox) * C + c] = x[argmax_T(H, W, C, k, x, b, oy, ox, c)];
}

void SFX(vt_maxpool_backward)(size_t B, size_t H, size_t W, size_t C, size_t k, const T *x, const T *dy, T *dx)
{
    const size_t Ho = H / k, Wo = W / k;
    for (size_t i = 0; i < B * H * W * C; i++) dx[i] = 0;
    for (size_t b = 0; b < B; b++)
        for (size_t oy = 0; oy < Ho; oy++)
            for (size_t ox = 0; ox < Wo; ox++)
                for (size_t c = 0; c < C; c++)
                    dx[argmax_T(H, W, C, k, x, b, oy, ox, c)] = dy[((b * Ho + oy) * Wo + ox) * C + c];
}

#undef argmax_T
#undef T

#endif
