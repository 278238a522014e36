/* vt_gpt.c - the transformer's CPU kernels (vt_gpt.h). The movement kernels are written once for
 * a type T: this file includes itself for float and double. */
#ifndef VT_GPT_T /* ================================================================ outer part */

#include "vt_gpt.h"

#include <math.h>
#include <string.h>

#include "../rounding/vt_exact.h"
#include "vt_gpt_hd.h"
#include "vt_kernels_hd.h"
#include "vt_math.h"

void vt_ln_center(size_t M, size_t C, const float *x, const float *s1, double *out)
{
    for (size_t i = 0; i < M; i++)
        for (size_t c = 0; c < C; c++) out[i * C + c] = vti_ln_center1(x[i * C + c], s1[i], C);
}

#define ln_rstd vti_ln_rstd

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
            out[i * C + c] = vti_affine1(x[i * C + c], gamma[c], beta ? &beta[c] : NULL);
        }
}

void vt_ln_backward(size_t M, size_t C, const float *dyg, const float *xhat, const float *s2, const float *g1,
                    const float *g2, double eps, double *out)
{
    for (size_t i = 0; i < M; i++)
        for (size_t c = 0; c < C; c++)
            out[i * C + c] = vti_ln_backward1(dyg[i * C + c], xhat[i * C + c], s2[i], g1[i], g2[i], C, eps);
}

/* vti_gelu1 and vti_gelu_backward1 in stages, the exponentials of the whole array at once
 * (vt_exp_n: the same bits as the element-by-element chain) */
void vt_gelu(size_t n, const float *x, double *out)
{
    for (size_t i = 0; i < n; i++) out[i] = vti_tanh_arg(vti_gelu_u(x[i]));
    vt_exp_n(n, out, out);
    for (size_t i = 0; i < n; i++) out[i] = vti_gelu_from(x[i], vti_tanh_from(vti_gelu_u(x[i]), out[i]));
}

void vt_gelu_backward(size_t n, const float *x, const float *dy, double *out)
{
    for (size_t i = 0; i < n; i++) out[i] = vti_tanh_arg(vti_gelu_u(x[i]));
    vt_exp_n(n, out, out);
    for (size_t i = 0; i < n; i++)
        out[i] = vti_gelu_backward_from(x[i], dy[i], vti_tanh_from(vti_gelu_u(x[i]), out[i]));
}

void vt_causal_softmax(size_t R, size_t T, double scale, const float *z, double *out)
{
    for (size_t i = 0; i < R; i++) { /* vti_causal_softmax_row, the row's exponentials at once */
        size_t t = i % T;
        double *p = out + i * T;
        vti_causal_softmax_args(t, scale, z + i * T, p);
        vt_exp_n(t + 1, p, p);
        vti_normalise_row(t + 1, p);
        for (size_t j = t + 1; j < T; j++) p[j] = 0.0;
    }
}

void vt_softmax_backward(size_t R, size_t T, double scale, const float *p, const float *dp, const float *s,
                         double *out)
{
    for (size_t i = 0; i < R; i++)
        for (size_t j = 0; j < T; j++)
            out[i * T + j] = vti_softmax_backward1(p[i * T + j], dp[i * T + j], s[i], scale);
}

void vt_dropout(size_t n, const float *x, const uint8_t *keep, double p, double *out)
{
    for (size_t i = 0; i < n; i++) out[i] = vti_dropout1(x[i], keep[i], p);
}

void vt_embed(size_t B, size_t T, size_t C, const uint8_t *tok, const float *wte, const float *wpe, double *out)
{
    for (size_t r = 0; r < B * T; r++)
        for (size_t c = 0; c < C; c++) out[r * C + c] = (double)wte[tok[r] * C + c] + (double)wpe[(r % T) * C + c];
}

void vt_adam_moments_scaled(size_t n, const float *g, const float *m, const float *v, float s, double b1, double b2,
                            double *m_out, double *v_out)
{
    const double c1 = 1.0 - b1, c2 = 1.0 - b2;
    for (size_t i = 0; i < n; i++) vti_adam_scaled1(g[i], m[i], v[i], s, b1, b2, c1, c2, &m_out[i], &v_out[i]);
}

void vt_adamw_apply(size_t n, const float *w, const float *m_new, const float *v_new, double lr, double b1, double b2,
                    double eps, double wd, uint64_t t, double *w_out)
{
    /* b^t: the same multiplications as square-and-multiply with a last unused squaring */
    const double bc1 = 1.0 - vti_powi(b1, t), bc2 = 1.0 - vti_powi(b2, t);
    for (size_t i = 0; i < n; i++) w_out[i] = vti_adamw1(w[i], m_new[i], v_new[i], lr, bc1, bc2, eps, wd);
}

double vt_clip_factor(float sqnorm, double max_norm) { return vti_clip_factor1(sqnorm, max_norm); }

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
