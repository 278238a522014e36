/* vt_gpt.c - the transformer's CPU kernels (vt_gpt.h). The movement kernels are written once for
 * a type T: this file includes itself for float and double. */
#ifndef VT_GPT_T /* ================================================================ outer part */

#include "vt_gpt.h"

#include <math.h>
#include <string.h>

#include "../rounding_log/vt_exact.h"
#include "vt_math.h"

void vt_ln_center(size_t M, size_t C, const float *x, const float *s1, double *out)
{
    for (size_t i = 0; i < M; i++) {
        double mean = (double)s1[i] / (double)C;
        for (size_t c = 0; c < C; c++) out[i * C + c] = (double)x[i * C + c] - mean;
    }
}

static double ln_rstd(float s2, size_t C, double eps)
{
    double v = (double)s2 / (double)C;
    v = v + eps;
    return 1.0 / sqrt(v);
}

void vt_ln_norm(size_t M, size_t C, const float *xc, const float *s2, double eps, double *out)
{
    for (size_t i = 0; i < M; i++) {
        double r = ln_rstd(s2[i], C, eps);
        for (size_t c = 0; c < C; c++) out[i * C + c] = (double)xc[i * C + c] * r;
    }
}

void vt_affine(size_t M, size_t C, const float *x, const float *gamma, const float *beta, double *out)
{
    for (size_t i = 0; i < M; i++)
        for (size_t c = 0; c < C; c++) {
            double y = (double)gamma[c] * (double)x[i * C + c];
            out[i * C + c] = beta ? y + (double)beta[c] : y;
        }
}

void vt_ln_backward(size_t M, size_t C, const float *dyg, const float *xhat, const float *s2, const float *g1,
                    const float *g2, double eps, double *out)
{
    for (size_t i = 0; i < M; i++) {
        double r = ln_rstd(s2[i], C, eps), a = (double)g1[i] / (double)C, b = (double)g2[i] / (double)C;
        for (size_t c = 0; c < C; c++)
            out[i * C + c] = r * (((double)dyg[i * C + c] - a) - (double)xhat[i * C + c] * b);
    }
}

#define GELU_K 0.7978845608028654 /* sqrt(2/pi) */
#define GELU_A 0.044715

static double tanh_portable(double u)
{
    double a = u < 0 ? -u : u, e = vt_exp(-2.0 * a), t = (1.0 - e) / (1.0 + e);
    return u < 0 ? -t : t;
}

void vt_gelu(size_t n, const float *x, double *out)
{
    for (size_t i = 0; i < n; i++) {
        double v = x[i], u = GELU_K * (v + GELU_A * (v * v * v));
        out[i] = 0.5 * v * (1.0 + tanh_portable(u));
    }
}

void vt_gelu_backward(size_t n, const float *x, const float *dy, double *out)
{
    for (size_t i = 0; i < n; i++) {
        double v = x[i], u = GELU_K * (v + GELU_A * (v * v * v)), th = tanh_portable(u);
        double du = GELU_K * (1.0 + 3.0 * GELU_A * (v * v));
        double g = 0.5 * (1.0 + th) + 0.5 * v * ((1.0 - th * th) * du);
        out[i] = (double)dy[i] * g;
    }
}

void vt_causal_softmax(size_t R, size_t T, double scale, const float *z, double *out)
{
    for (size_t i = 0; i < R; i++) {
        size_t t = i % T;
        const float *zi = z + i * T;
        double *p = out + i * T;
        double m = scale * (double)zi[0];
        for (size_t j = 1; j <= t; j++)
            if (scale * (double)zi[j] > m) m = scale * (double)zi[j];
        for (size_t j = 0; j <= t; j++) p[j] = vt_exp(scale * (double)zi[j] - m);
        double s = vt_sum_exact64(t + 1, p, 1); /* RN64 of the exact sum: the same in every order */
        for (size_t j = 0; j <= t; j++) p[j] = p[j] / s;
        for (size_t j = t + 1; j < T; j++) p[j] = 0.0;
    }
}

void vt_softmax_backward(size_t R, size_t T, double scale, const float *p, const float *dp, const float *s,
                         double *out)
{
    for (size_t i = 0; i < R; i++)
        for (size_t j = 0; j < T; j++)
            out[i * T + j] = scale * ((double)p[i * T + j] * ((double)dp[i * T + j] - (double)s[i]));
}

void vt_dropout(size_t n, const float *x, const uint8_t *keep, double p, double *out)
{
    double sc = 1.0 / (1.0 - p);
    for (size_t i = 0; i < n; i++) out[i] = keep[i] ? (double)x[i] * sc : 0.0;
}

void vt_embed(size_t B, size_t T, size_t C, const uint8_t *tok, const float *wte, const float *wpe, double *out)
{
    for (size_t r = 0; r < B * T; r++)
        for (size_t c = 0; c < C; c++) out[r * C + c] = (double)wte[tok[r] * C + c] + (double)wpe[(r % T) * C + c];
}

static double powi(double b, uint64_t t)
{
    double r = 1.0;
    while (t) {
        if (t & 1) r *= b;
        b *= b;
        t >>= 1;
    }
    return r;
}

void vt_adam_moments_scaled(size_t n, const float *g, const float *m, const float *v, float s, double b1, double b2,
                            double *m_out, double *v_out)
{
    const double c1 = 1.0 - b1, c2 = 1.0 - b2;
    for (size_t i = 0; i < n; i++) {
        double gi = (double)g[i] * (double)s;
        m_out[i] = b1 * (double)m[i] + c1 * gi;
        v_out[i] = b2 * (double)v[i] + (c2 * gi) * gi;
    }
}

void vt_adamw_apply(size_t n, const float *w, const float *m_new, const float *v_new, double lr, double b1, double b2,
                    double eps, double wd, uint64_t t, double *w_out)
{
    const double bc1 = 1.0 - powi(b1, t), bc2 = 1.0 - powi(b2, t);
    for (size_t i = 0; i < n; i++) {
        double mh = (double)m_new[i] / bc1, vh = (double)v_new[i] / bc2;
        double u = mh / (sqrt(vh) + eps) + wd * (double)w[i];
        w_out[i] = (double)w[i] - lr * u;
    }
}

double vt_clip_factor(float sqnorm, double max_norm)
{
    double nrm = sqrt((double)sqnorm);
    return nrm > max_norm ? max_norm / (nrm + 1e-6) : 1.0;
}

#define VT_GPT_T float
#define SFX(n) n##_f32
#include "vt_gpt.c"
#undef VT_GPT_T
#undef SFX
#define VT_GPT_T double
#define SFX(n) n##_f64
#include "vt_gpt.c"
#undef VT_GPT_T
#undef SFX

#else /* ================================================= the movement kernels for one T */

#define T_ VT_GPT_T

void SFX(vt_heads_split)(size_t B, size_t T, size_t H, size_t D, const T_ *qkv, T_ *q, T_ *k, T_ *v)
{
    const size_t C = H * D;
    for (size_t b = 0; b < B; b++)
        for (size_t h = 0; h < H; h++)
            for (size_t t = 0; t < T; t++) {
                const T_ *src = qkv + (b * T + t) * 3 * C + h * D;
                size_t o = ((b * H + h) * T + t) * D;
                memcpy(q + o, src, D * sizeof(T_));
                memcpy(k + o, src + C, D * sizeof(T_));
                memcpy(v + o, src + 2 * C, D * sizeof(T_));
            }
}

void SFX(vt_heads_merge)(size_t B, size_t T, size_t H, size_t D, const T_ *o, T_ *y)
{
    for (size_t b = 0; b < B; b++)
        for (size_t h = 0; h < H; h++)
            for (size_t t = 0; t < T; t++)
                memcpy(y + (b * T + t) * H * D + h * D, o + ((b * H + h) * T + t) * D, D * sizeof(T_));
}

void SFX(vt_heads_unmerge)(size_t B, size_t T, size_t H, size_t D, const T_ *y, T_ *o)
{
    for (size_t b = 0; b < B; b++)
        for (size_t h = 0; h < H; h++)
            for (size_t t = 0; t < T; t++)
                memcpy(o + ((b * H + h) * T + t) * D, y + (b * T + t) * H * D + h * D, D * sizeof(T_));
}

void SFX(vt_heads_join)(size_t B, size_t T, size_t H, size_t D, const T_ *q, const T_ *k, const T_ *v, T_ *qkv)
{
    const size_t C = H * D;
    for (size_t b = 0; b < B; b++)
        for (size_t h = 0; h < H; h++)
            for (size_t t = 0; t < T; t++) {
                T_ *dst = qkv + (b * T + t) * 3 * C + h * D;
                size_t o = ((b * H + h) * T + t) * D;
                memcpy(dst, q + o, D * sizeof(T_));
                memcpy(dst + C, k + o, D * sizeof(T_));
                memcpy(dst + 2 * C, v + o, D * sizeof(T_));
            }
}

void SFX(vt_onehot)(size_t n, size_t V, const uint8_t *tok, T_ *out)
{
    for (size_t i = 0; i < n * V; i++) out[i] = 0;
    for (size_t i = 0; i < n; i++)
        if (tok[i] < V) out[i * V + tok[i]] = 1;
}

#undef T_

#endif
