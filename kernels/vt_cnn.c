/* vt_cnn.c - the convolutional network's CPU kernels (vt_cnn.h). The data-movement kernels are
 * written once for a type T and compiled for float and double: this file includes itself. */
#ifndef VT_CNN_T /* ========================================================= outer part */

#include "vt_cnn.h"

#include <cblas.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>

#include "vt_cnn_hd.h"
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

typedef struct {
    vt_exec *e;
    const vt_conv_geom *g;
    size_t N, K, M, mr, span; /* span: the weight gradient's rows of op(A) (all of them) */
    const float *x, *w;       /* w: W (forward) or dY (weight gradient) */
    const double *w64;        /* the BLAS order's W in FP64 (forward; NULL: another order) */
    int blas;                 /* the BLAS order: the fused forms below */
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

/* the forward tiles lo..hi: each tile's rows of im2col gathered (each row's norm its four-lane sum of
 * squares, whatever the order), then one GEMM of the tile by W: every element ONE reduction of K terms,
 * as vt_gemm's of the materialised im2col. The BLAS order gathers the tile into FP64 (the conversion and
 * the norms fused) and multiplies it by the FP64 W converted once; another order hands the FP32 tile to
 * vt_gemm_plain in its own way */
static void fwd_part(void *ctx, size_t lo, size_t hi, int part)
{
    conv_job *j = ctx;
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
    double *w64 = j->blas ? malloc(K * Co * sizeof *w64) : NULL;
    vt_err err = VT_OK;
    if (j->blas && !w64) {
        err = vt_set_error(VT_ERR_NOMEM, "out of memory (a convolution's weights)");
    } else {
        for (size_t i = 0; w64 && i < K * Co; i++) w64[i] = (double)w[i];
        j->w64 = w64;
        err = conv_join(j, vt_par_for((M + j->mr - 1) / j->mr, 1, fwd_part, j));
    }
    free(w64);
    free(j);
    VT_FORWARD_IF_ERROR(err);
    conv_bounds(0, g, x, w, M, Co, K, rn, cn, coef, ref, bd);
    return VT_OK;
}

/* the weight gradient's rows lo..hi of im2col^T (taps and channels): for each panel of VT_PANEL
 * consecutive rows m of im2col, the panel's slice of those rows gathered (the norms accumulated, m in
 * order), one GEMM of the slice^T by the panel of dY in the executor's order, the panel results
 * combined by the panel tree - the evaluation vt_gemm gives a panelled reduction (docs/rounding.md
 * 2.1), so vt_bound_coef_red(M, M) covers it; unpanelled, c(M) covers any order */
static void wgrad_part(void *ctx, size_t lo, size_t hi, int part)
{
    conv_job *j = ctx;
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
    vt_err err = conv_join(j, vt_par_for(K, grain, wgrad_part, j));
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

/* tiles lo..hi (over all classes): each tile's rows gathered (norms: the four-lane sums of squares of
 * their entries, zeros adding nothing, whatever the order), one GEMM by the class's compact W' - in
 * panels of VT_PANEL combined by the panel tree where j->panel and Kc > VT_PANEL - the rows scattered
 * into C */
static void dg_part(void *ctx, size_t lo, size_t hi, int part)
{
    dg_job *j = ctx;
    const size_t K = j->K, N = j->N, mr = j->mr, P = (K + VT_PANEL - 1) / VT_PANEL;
    vt_exec sub;
    vt_exec_init(&sub, j->e->order, j->e->bound, j->e->seed);
    float *a = malloc(mr * K * sizeof *a), *ap = j->blas ? NULL : malloc(mr * VT_PANEL * sizeof *ap);
    double *a64 = malloc((j->blas ? mr * K : K) * sizeof *a64), *ct = malloc(mr * N * sizeof *ct),
           *st = malloc(vti_ptree_depth(P) * mr * N * sizeof *st);
    size_t *rows = malloc(mr * sizeof *rows);
    vt_err err = a && (ap || j->blas) && a64 && ct && st && rows
                     ? VT_OK
                     : vt_set_error(VT_ERR_NOMEM, "out of memory (an input gradient's tile)");
    size_t c = 0;
    for (size_t tl = lo; tl < hi && !err; tl++) {
        while (j->tiles_per[c + 1] <= tl) c++;
        const dg_class *cl = &j->cl[c];
        const size_t Kc = cl->Kc, m0 = (tl - j->tiles_per[c]) * mr, n = cl->n - m0 < mr ? cl->n - m0 : mr;
        const int pan = j->panel && Kc > VT_PANEL;
        for (size_t r = 0; r < n; r++) {
            float *row = a + r * Kc;
            rows[r] = dg_row(j, cl, m0 + r, row);
            j->rn[rows[r]] = sqrt(vti_cvt_span(row, Kc, j->blas ? a64 + r * Kc : a64));
        }
        if (j->blas) {
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
            for (size_t q = 0; q < N; q++) j->C[rows[r] * N + q] = ct[r * N + q] + 0.0; /* -0 -> +0 */
    }
    j->err[part] = err;
    if (err) snprintf(j->msg[part], sizeof j->msg[part], "%s", vt_errmsg());
    free(a), free(ap), free(a64), free(ct), free(st), free(rows);
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
    double *wc64 = e->order == VT_ORDER_BLAS ? malloc(K * N * sizeof *wc64) : NULL;
    vt_err err = VT_OK;
    if (!j || !cl || !wc || (e->order == VT_ORDER_BLAS && !wc64)) {
        err = vt_set_error(VT_ERR_NOMEM, "out of memory (an input gradient)");
        goto out;
    }
    *j = (dg_job){.e = e, .g = g, .Co = Co, .N = N, .K = K, .dy = dy, .wc = wc, .wc64 = wc64, .C = C, .rn = rn,
                  .blas = e->order == VT_ORDER_BLAS, .panel = vt_gemm_panel(e, K)};
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
    for (size_t i = 0; wc64 && i < wofs; i++) wc64[i] = (double)wc[i];
    j->mr = conv_tile_rows(K, maxn);
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
