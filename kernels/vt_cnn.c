/* vt_cnn.c - the convolutional network's CPU kernels (vt_cnn.h). The data-movement kernels are
 * written once for a type T and compiled for float and double: this file includes itself. */
#ifndef VT_CNN_T /* ========================================================= outer part */

#include "vt_cnn.h"

#include <math.h>

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

double vt_bn_rstd(double S2, size_t M, double eps) { return vti_bn_rstd(S2, M, eps); }

/* The row-wise chains below run over the threads in parts of rows (vti_par_range): each output
 * element is its own chain, the bits the same for every split. */
typedef struct {
    size_t C, cnt;
    const float *x, *s1;
    double *out;
} bn_center_a;

static void bn_center_r(const void *p, size_t r0, size_t r1)
{
    const bn_center_a *a = p;
    for (size_t i = r0; i < r1; i++)
        for (size_t c = 0; c < a->C; c++) a->out[i * a->C + c] = vti_bn_center1(a->x[i * a->C + c], a->s1[c], a->cnt);
}

void vt_bn_center(size_t M, size_t C, size_t cnt, const float *x, const float *s1, double *out)
{
    vti_par_range(M, VTI_ROWS_GRAIN(C), bn_center_r, &(bn_center_a){C, cnt, x, s1, out});
}

typedef struct {
    size_t C, cnt;
    const float *xc, *s2, *gamma, *beta;
    double eps, *out;
} bn_apply_a;

static void bn_apply_r(const void *p, size_t r0, size_t r1)
{
    const bn_apply_a *a = p;
    const size_t C = a->C;
    /* the channel's r is one function of S2: computed once per channel and part, the same bits */
    for (size_t c0 = 0; c0 < C; c0 += 64) {
        double r[64];
        size_t nc = C - c0 < 64 ? C - c0 : 64;
        for (size_t c = 0; c < nc; c++) r[c] = vt_bn_rstd(a->s2[c0 + c], a->cnt, a->eps);
        for (size_t i = r0; i < r1; i++)
            for (size_t c = 0; c < nc; c++) {
                size_t k = i * C + c0 + c;
                a->out[k] = vti_bn_apply1(a->xc[k], r[c], a->gamma[c0 + c], a->beta[c0 + c]);
            }
    }
}

void vt_bn_apply(size_t M, size_t C, size_t cnt, const float *xc, const float *s2, const float *gamma,
                 const float *beta, double eps, double *out)
{
    vti_par_range(M, VTI_ROWS_GRAIN(C), bn_apply_r, &(bn_apply_a){C, cnt, xc, s2, gamma, beta, eps, out});
}

void vt_bn_gamma_grad(size_t M, size_t C, const float *g2, const float *s2, double eps, double *out)
{
    for (size_t c = 0; c < C; c++) out[c] = (double)g2[c] * vti_bn_rstd(s2[c], M, eps);
}

typedef struct {
    size_t C, cnt;
    const float *dy, *xc, *s2, *g1, *g2, *gamma;
    double eps, *out;
} bn_backward_a;

static void bn_backward_r(const void *p, size_t r0, size_t r1)
{
    const bn_backward_a *a = p;
    for (size_t i = r0; i < r1; i++)
        for (size_t c = 0; c < a->C; c++) {
            size_t k = i * a->C + c;
            a->out[k] = vti_bn_backward1(a->dy[k], a->xc[k], a->s2[c], a->g1[c], a->g2[c], a->gamma[c], a->cnt, a->eps);
        }
}

void vt_bn_backward(size_t M, size_t C, size_t cnt, const float *dy, const float *xc, const float *s2,
                    const float *g1, const float *g2, const float *gamma, double eps, double *out)
{
    vti_par_range(M, VTI_ROWS_GRAIN(C), bn_backward_r, &(bn_backward_a){C, cnt, dy, xc, s2, g1, g2, gamma, eps, out});
}

void vt_bn_running(size_t M, size_t C, const float *s1, const float *s2, const float *rm, const float *rv, double mu,
                   double *out)
{
    for (size_t c = 0; c < C; c++) {
        out[c] = vti_bn_running_mean1(s1[c], rm[c], M, mu);
        out[C + c] = vti_bn_running_var1(s2[c], rv[c], M, mu);
    }
}

void vt_bn_eval(size_t M, size_t C, const float *x, const float *rm, const float *rv, const float *gamma,
                const float *beta, double eps, double *out)
{
    for (size_t i = 0; i < M; i++)
        for (size_t c = 0; c < C; c++) out[i * C + c] = vti_bn_eval1(x[i * C + c], rm[c], rv[c], gamma[c], beta[c], eps);
}

void vt_add(size_t n, const float *a, const float *b, double *out)
{
    for (size_t i = 0; i < n; i++) out[i] = (double)a[i] + (double)b[i];
}

float vt_avgpool_weight(size_t HW) { return (float)(1.0 / (double)HW); }

void vt_avgpool_backward(size_t B, size_t HW, size_t C, const float *dy, float w, double *dx)
{
    for (size_t b = 0; b < B; b++)
        for (size_t t = 0; t < HW; t++)
            for (size_t c = 0; c < C; c++) dx[(b * HW + t) * C + c] = (double)dy[b * C + c] * (double)w;
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

void SFX(vt_im2col)(const vt_conv_geom *g, const T *x, T *col)
{
    const size_t C = g->C, k = g->k, H = g->H, W = g->W, row = k * k * C;
    for (size_t b = 0; b < g->B; b++)
        for (size_t oy = 0; oy < g->Ho; oy++)
            for (size_t ox = 0; ox < g->Wo; ox++) {
                T *dst = col + ((b * g->Ho + oy) * g->Wo + ox) * row;
                for (size_t ky = 0; ky < k; ky++)
                    for (size_t kx = 0; kx < k; kx++, dst += C) {
                        int64_t iy = (int64_t)(oy * g->s + ky) - (int64_t)g->p;
                        int64_t ix = (int64_t)(ox * g->s + kx) - (int64_t)g->p;
                        if (iy < 0 || ix < 0 || iy >= (int64_t)H || ix >= (int64_t)W) {
                            for (size_t c = 0; c < C; c++) dst[c] = 0;
                        } else if (g->chw) {
                            const T *src = x + b * C * H * W + (size_t)iy * W + (size_t)ix;
                            for (size_t c = 0; c < C; c++) dst[c] = src[c * H * W];
                        } else {
                            memcpy(dst, x + ((b * H + (size_t)iy) * W + (size_t)ix) * C, C * sizeof(T));
                        }
                    }
            }
}

void SFX(vt_conv_dgather)(const vt_conv_geom *g, size_t Co, const T *dy, T *G)
{
    const size_t k = g->k, s = g->s, row = k * k * Co;
    for (size_t b = 0; b < g->B; b++)
        for (size_t iy = 0; iy < g->H; iy++)
            for (size_t ix = 0; ix < g->W; ix++) {
                T *dst = G + ((b * g->H + iy) * g->W + ix) * row;
                for (size_t ky = 0; ky < k; ky++)
                    for (size_t kx = 0; kx < k; kx++, dst += Co) {
                        /* oy * s = iy + p - ky */
                        int64_t ny = (int64_t)(iy + g->p) - (int64_t)ky, nx = (int64_t)(ix + g->p) - (int64_t)kx;
                        if (ny < 0 || nx < 0 || ny % (int64_t)s || nx % (int64_t)s ||
                            ny / (int64_t)s >= (int64_t)g->Ho || nx / (int64_t)s >= (int64_t)g->Wo) {
                            for (size_t c = 0; c < Co; c++) dst[c] = 0;
                        } else {
                            size_t oy = (size_t)ny / s, ox = (size_t)nx / s;
                            memcpy(dst, dy + ((b * g->Ho + oy) * g->Wo + ox) * Co, Co * sizeof(T));
                        }
                    }
            }
}

void SFX(vt_conv_wperm)(size_t k, size_t C, size_t Co, const T *w, T *wp)
{
    for (size_t t = 0; t < k * k; t++)
        for (size_t c = 0; c < C; c++)
            for (size_t co = 0; co < Co; co++) wp[(t * Co + co) * C + c] = w[(t * C + c) * Co + co];
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
