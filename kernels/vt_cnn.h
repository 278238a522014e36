/* vt_cnn.h - the convolutional network's CPU kernels (docs/architecture.md, docs/rounding.md 4):
 *
 *   - data movement, exact (no value is computed): the convolution's im2col gather and the gather
 *     of its input gradient, the weight transpose of the input gradient, max pooling forward and
 *     backward (non-overlapping windows, so that every input receives at most one gradient value);
 *     written once for FP32 and FP64 (the plain baseline runs them on doubles); the gathers run over
 *     the threads in parts of image rows (values only moved: the same bits for any thread count);
 *   - the convolutions' GEMMs without a materialised im2col, and the strided input gradient by phase.
 * The batch normalisation's elementwise chains are formulas in vt_cnn_hd.h (run by their kinds,
 * ops/vt_fam_chain.c); its reductions are column sums and column dot products (vt_kernels.h).
 *
 * Layouts. An activation is channels-last: [B*H*W, C], row (b*H + y)*W + x. The network's input
 * may instead be channels-first (the dataset's CIFAR order, [B, C*H*W]). A convolution weight is
 * [k, k, C_in, C_out] (row (ky*k + kx)*C_in + c of a [k*k*C_in, C_out] matrix), so that the
 * forward pass is the GEMM im2col(X) [B*Ho*Wo, k*k*C_in] x W, the weight gradient
 * im2col(X)^T x dY, and the input gradient G(dY) [B*H*W, k*k*C_out] x W' with W' the weight
 * transposed per tap ([k*k*C_out, C_in]) and G the gather of dY described at vt_conv_dgather. For a
 * strided convolution most of G is structural zeros; vt_conv_dgrad_gemm computes that GEMM by output
 * phase without multiplying them (the same reductions, bounds and exact evaluator). Step program 2's
 * vt_conv2d, vt_conv2d_wgrad and vt_conv2d_dgrad compute the same GEMMs without materialising im2col or G.
 */
#ifndef VT_CNN_H
#define VT_CNN_H

#include <stddef.h>
#include <stdint.h>

#include "../common/vt_error.h"
#include "vt_kernels.h"

/* A convolution's geometry: input B x H x W x C (chw: stored channels-first), a k x k kernel,
 * stride s, zero padding p; output Ho x Wo. */
typedef struct {
    size_t B, H, W, C, k, s, p, Ho, Wo;
    int chw;
} vt_conv_geom;

/* Fills g from the arguments and checks them (k >= 1, s >= 1, p < k, an output of at least one
 * pixel, sizes that fit): VT_ERR_ARG otherwise. */
vt_err vt_conv_geom_make(vt_conv_geom *g, int64_t B, int64_t H, int64_t W, int64_t C, int64_t k, int64_t s,
                         int64_t p, int chw) VT_WARN_UNUSED;

/* col [B*Ho*Wo, k*k*C]: col[(b, oy, ox)][(ky, kx, c)] = X[b, oy*s + ky - p, ox*s + kx - p, c], or 0
 * outside the image. */
void vt_im2col_f32(const vt_conv_geom *g, const float *x, float *col);
void vt_im2col_f64(const vt_conv_geom *g, const double *x, double *col);

/* The input gradient's gather, for the convolution g with Co output channels: from dY
 * [B*Ho*Wo, Co], G [B*H*W, k*k*Co] with G[(b, iy, ix)][(ky, kx, co)] = dY[b, oy, ox, co] where
 * iy = oy*s + ky - p and ix = ox*s + kx - p for an output pixel (oy, ox) (at most one), else 0.
 * Then dX[(b, iy, ix)][c] = sum_(ky, kx, co) G[..][(ky, kx, co)] * W[(ky, kx, c)][co]: the
 * input gradient is a GEMM of G and the per-tap transpose of W (vt_conv_wperm). g->chw must be 0. */
void vt_conv_dgather_f32(const vt_conv_geom *g, size_t Co, const float *dy, float *G);
void vt_conv_dgather_f64(const vt_conv_geom *g, size_t Co, const double *dy, double *G);

/* The input-gradient GEMM C [B*H*W, C] = G x W' (G = vt_conv_dgather's gather of dY, W' = vt_conv_wperm's
 * transpose, K = k*k*Co) by output phase, for a strided convolution (s >= 2): the pixels whose
 * (iy + p) mod s, (ix + p) mod s are (cy, cx) receive gradient only through the taps ky = cy mod s,
 * kx = cx mod s, so each of the s*s classes is one GEMM of its pixels' blocks of G for those taps only
 * (copied into a compact matrix) by the matching rows of W' (vt_gemm_plain in e's order): no product by
 * an entry the gather sets to zero. Each element is still ONE reduction - the dense one's non-zero
 * terms - with the dense GEMM's bound: *bd is vt_gemm's descriptor for G x W' (OUTER, coefficient
 * vt_bound_coef_red(K, K), rn[i] the norm of G's row i, cn[j] of W''s column j; the exact evaluator
 * and the tight bound read G and W' whole). Where the dense reduction is panelled (K > 2 VT_PANEL) the
 * compact one is evaluated in panels too (or as two pieces of at most VT_PANEL terms when it is
 * shorter), so its error stays within c(m, K). *done = 0 (C, rn, cn undefined; the caller runs vt_gemm) for
 * s = 1, or when G has a non-zero where the gather puts a zero, or W' a non-finite entry: the result
 * is then not the compact product's. g is the convolution's geometry (g->C its input channels =
 * C's columns, g->chw = 0). */
vt_err vt_conv_dgrad_gemm(vt_exec *e, const vt_conv_geom *g, size_t Co, const float *G, const float *wp, double *C,
                          double *rn, double *cn, vt_bounds *bd, int *done) VT_WARN_UNUSED;

/* The plain (unverified, benchmark baseline) form of vt_conv_dgrad_gemm in T = float or double: the same
 * phase classes, each one CBLAS GEMM of its compact operands; G's skipped entries are taken to be the
 * gather's zeros (not checked). s >= 2. VT_ERR_NOMEM. */
vt_err vt_conv_dgrad_plain_f32(const vt_conv_geom *g, size_t Co, const float *G, const float *wp,
                               float *C) VT_WARN_UNUSED;
vt_err vt_conv_dgrad_plain_f64(const vt_conv_geom *g, size_t Co, const double *G, const double *wp,
                               double *C) VT_WARN_UNUSED;

/* Convolutions without a materialised im2col (the kinds conv2d and conv2d_weight_grad, step program 2):
 * the forward pass Z [B*Ho*Wo, Co] = im2col(X) W and the weight gradient dW [k*k*C, Co] = im2col(X)^T dY,
 * each output element ONE reduction - the same terms as vt_gemm's on the materialised im2col, hence the
 * same exact value and (exact rounding) the same FP32 result. The forward pass gathers tiles of about
 * 512 KiB of im2col's rows (vt_gemm of each tile by W); the weight gradient panels of VT_PANEL rows of
 * im2col (vt_gemm of each panel's slice^T by dY's panel, the panel results combined by the panel tree,
 * as vt_gemm evaluates a panelled reduction), the threads splitting the taps and channels. In the BLAS
 * order both run the direct kernels instead (vt_conv_impl below): the same panels and panel tree, each
 * panel one sequential FP64 sum per element. *bd is
 * OUTER with coefficient vt_bound_coef_red(K, K) (K the reduction's length), rn[i] the norm of op(A)'s
 * row i and cn[j] of op(B)'s column j, each summed in one fixed order (the same bound for every order,
 * tiling and thread count), and no tight bound; its exact evaluator reads op(A) through
 * vt_bounds.xa_fill (the entries vt_conv_patch gives, a chunk at a time; with *ref, which must outlive *bd). rn has M = B*Ho*Wo (forward) or
 * k*k*C (weight gradient) entries, cn Co; C is row-major. VT_ERR_ARG, VT_ERR_LIMIT, VT_ERR_NOMEM. */
typedef struct {
    vt_conv_geom g;
    const float *x; /* X (conv2d, conv2d_weight_grad); dY (vt_conv2d_dgrad) */
    size_t Co;      /* vt_conv2d_dgrad: the output channels */
} vt_conv_ref;
float vt_conv_patch(const vt_conv_geom *g, const float *x, size_t m, size_t t); /* im2col(X)[m][t], or 0 */
vt_err vt_conv2d(vt_exec *e, const vt_conv_geom *g, size_t Co, const float *x, const float *w, double *C, double *rn,
                 double *cn, vt_bounds *bd, vt_conv_ref *ref) VT_WARN_UNUSED;
vt_err vt_conv2d_wgrad(vt_exec *e, const vt_conv_geom *g, size_t Co, const float *x, const float *dy, double *C,
                       double *rn, double *cn, vt_bounds *bd, vt_conv_ref *ref) VT_WARN_UNUSED;

/* The input gradient without the gathered G (the kind conv2d_input_grad, step program 2): dX [B*H*W, C] =
 * G(dY) W' (vt_conv_dgather's G, W' = vt_conv_wperm(W), K = k*k*Co), each element ONE reduction - the
 * non-zero terms of program 1's (vt_conv_dgrad_gemm, or vt_gemm for s = 1), hence the same exact value. By
 * output phase class (s*s classes (iy + p) mod s, (ix + p) mod s; one class for s = 1): each class's rows
 * gathered from dY in tiles of about 512 KiB (the class's taps only, in row-major tap order: no product by
 * an entry the gather would set to zero), each tile one GEMM by the class's rows of W' (BLAS order: the
 * direct kernels, or with vt_conv_impl "gemm" FP64 tiles and cblas_dgemm; other orders vt_gemm_plain); where vt_gemm would panel the dense reduction
 * (vt_gemm_panel(K)) a class's reduction of more than VT_PANEL terms is evaluated in panels of VT_PANEL
 * combined by the panel tree, as vt_conv_dgrad_gemm does, so its error stays within c(m, K). The threads
 * split the tiles (each element computed by one part: bits independent of the thread count). In the BLAS
 * order the classes' tiles run the direct kernels instead (vt_conv_impl below), in the same panels. g is the
 * forward convolution's geometry (g->chw = 0), w its weight W [k*k*C, Co]; wp (k*k*Co*C floats, the
 * caller's) receives W' and must outlive *bd, as must *ref. *bd is OUTER with coefficient
 * vt_bound_coef_red(K, K), rn[i] the norm of G's row i (its four-lane sum, one fixed order), cn[j] of W''s
 * column j, and THE bound is the tight bound of program 1's G x W' bit for bit: op(A)'s rows read through
 * xa_fill (G's entries from dY, ta NULL), op(B) = wp; the exact evaluator the same. VT_ERR_ARG,
 * VT_ERR_LIMIT, VT_ERR_NOMEM. */
vt_err vt_conv2d_dgrad(vt_exec *e, const vt_conv_geom *g, size_t Co, const float *dy, const float *w, float *wp,
                       double *C, double *rn, double *cn, vt_bounds *bd, vt_conv_ref *ref) VT_WARN_UNUSED;
/* Its plain (unverified, benchmark baseline) form in T = float or double: the same phase classes, each
 * class's rows gathered from dY in tiles of about 256 KiB, one CBLAS GEMM per tile (g->chw = 0). VT_ERR_NOMEM. */
vt_err vt_conv2d_dgrad_plain_f32(const vt_conv_geom *g, size_t Co, const float *dy, const float *w,
                                 float *dx) VT_WARN_UNUSED;
vt_err vt_conv2d_dgrad_plain_f64(const vt_conv_geom *g, size_t Co, const double *dy, const double *w,
                                 double *dx) VT_WARN_UNUSED;
/* G(dY)[i][t] (vt_conv_dgather's entry), or 0 */
float vt_conv_dgrad_entry(const vt_conv_geom *g, size_t Co, const float *dy, size_t i, size_t t);

/* The BLAS order's convolution kernels (vt_conv2d, vt_conv2d_wgrad, vt_conv2d_dgrad with VT_ORDER_BLAS):
 * "avx512", "avx2" (register-blocked micro-kernels, where the processor runs them), "scalar" (the
 * portable reference: the same FP64 sums, bit for bit) or "gemm" (a BLAS GEMM per gathered tile, the
 * earlier path). Chosen once, at the first use: VT_CONV_IMPL's name where the processor runs it, else the
 * widest. vt_conv_impl_set switches (tests, benchmarks; not while a convolution runs): VT_ERR_ARG for an
 * unknown name, VT_ERR_UNSUPPORTED for one this processor cannot run. The orders' rounded results are
 * the same bits whichever runs (exactly rounded: RN32 of the exact value; vt_cnn.c gives the bound's
 * argument, docs/rounding.md 2.5). */
const char *vt_conv_impl(void);
vt_err vt_conv_impl_set(const char *name) VT_WARN_UNUSED;

/* W' [k*k*Co, C] from W [k*k*C, Co]: W'[(t, co)][c] = W[(t, c)][co] for each tap t. */
void vt_conv_wperm_f32(size_t k, size_t C, size_t Co, const float *w, float *wp);
void vt_conv_wperm_f64(size_t k, size_t C, size_t Co, const double *w, double *wp);

/* Max pooling over non-overlapping k x k windows (stride k, H and W multiples of k): y
 * [B*(H/k)*(W/k), C] is each window's maximum, the first of equal maxima in row-major window order;
 * the backward pass gives dy to that element and +0 to the others. NaN never wins a comparison. */
void vt_maxpool_f32(size_t B, size_t H, size_t W, size_t C, size_t k, const float *x, float *y);
void vt_maxpool_f64(size_t B, size_t H, size_t W, size_t C, size_t k, const double *x, double *y);
void vt_maxpool_backward_f32(size_t B, size_t H, size_t W, size_t C, size_t k, const float *x, const float *dy,
                             float *dx);
void vt_maxpool_backward_f64(size_t B, size_t H, size_t W, size_t C, size_t k, const double *x, const double *dy,
                             double *dx);

/* The FP32 weight of a global average pool over HW positions: RN32(1 / HW). */
float vt_avgpool_weight(size_t HW);

#endif
