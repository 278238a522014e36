/* vt_gpt_hd.h - the per-element formulas of the transformer's kinds, written once for their host
 * loops (ops/vt_fam_chain.c, vt_fam_rowwise.c) and the CUDA backend's device kinds (backend/cuda/vt_dev_ops_hd.h): fixed sequences
 * of IEEE operations (and the portable exp) evaluated as written, the same FP64 value on host and
 * device. A per-row factor is the same function of the row's inputs wherever it is computed. */
#ifndef VT_GPT_HD_H
#define VT_GPT_HD_H

#include <math.h>
#include <stddef.h>

#include "../common/vt_hd.h"
#include "../rounding/vt_xacc_hd.h"
#include "vt_kernels_hd.h" /* vti_normalise_row */
#include "vt_math_hd.h"

/* x - S1 / C, the mean S1 / C a per-row factor (vti_bn_center_of's form) */
VT_HDI double vti_ln_mean(float s1, size_t C) { return (double)s1 / (double)C; }
VT_HDI double vti_ln_center1(float x, float s1, size_t C) { return (double)x - vti_ln_mean(s1, C); }

/* 1 / sqrt(S2 / C + eps) */
VT_HDI double vti_ln_rstd(float s2, size_t C, double eps)
{
    double v = (double)s2 / (double)C;
    v = v + eps;
    return 1.0 / sqrt(v);
}

/* xhat = xc r with r = rstd(S2) */
VT_HDI double vti_ln_norm1(float xc, double r) { return (double)xc * r; }

/* gamma x (+ beta) */
VT_HDI double vti_affine1(float x, float gamma, const float *beta)
{
    double y = (double)gamma * (double)x;
    return beta ? y + (double)*beta : y;
}

/* r ((dyg - G1 / C) - xhat G2 / C) with r = rstd(S2); the per-row factors k = {r, G1 / C, G2 / C}
 * (the host loop computes them once per row) */
VT_HDI void vti_ln_backward_k(float s2, float g1, float g2, size_t C, double eps, double k[3])
{
    k[0] = vti_ln_rstd(s2, C, eps), k[1] = (double)g1 / (double)C, k[2] = (double)g2 / (double)C;
}
VT_HDI double vti_ln_backward_of(float dyg, float xhat, double r, double a, double b)
{
    return r * (((double)dyg - a) - (double)xhat * b);
}
VT_HDI double vti_ln_backward1(float dyg, float xhat, float s2, float g1, float g2, size_t C, double eps)
{
    double k[3];
    vti_ln_backward_k(s2, g1, g2, C, eps, k);
    return vti_ln_backward_of(dyg, xhat, k[0], k[1], k[2]);
}

#define VTI_GELU_K 0.7978845608028654 /* sqrt(2/pi) */
#define VTI_GELU_A 0.044715

/* GELU's tanh argument u(x) = k (x + a x^3) */
VT_HDI double vti_gelu_u(float x)
{
    double v = x;
    return VTI_GELU_K * (v + VTI_GELU_A * (v * v * v));
}
/* gelu(x) and dy gelu'(x) from x and th = tanh(u(x)) */
VT_HDI double vti_gelu_from(float x, double th) { return 0.5 * (double)x * (1.0 + th); }
VT_HDI double vti_gelu_backward_from(float x, float dy, double th)
{
    double v = x, du = VTI_GELU_K * (1.0 + 3.0 * VTI_GELU_A * (v * v));
    double g = 0.5 * (1.0 + th) + 0.5 * v * ((1.0 - th * th) * du);
    return (double)dy * g;
}

VT_HDI double vti_gelu1(float x) { return vti_gelu_from(x, vt_tanh_impl(vti_gelu_u(x))); }

VT_HDI double vti_gelu_backward1(float x, float dy)
{
    return vti_gelu_backward_from(x, dy, vt_tanh_impl(vti_gelu_u(x)));
}

/* row i of the causal softmax over T columns, t = i mod T the last visible one: p_j = e_j / s for
 * j <= t with e_j = exp(scale z_j - max), s = RN64 of the exact sum of the e_j; 0 beyond t */
VT_HDI void vti_causal_softmax_args(size_t t, double scale, const float *zi, double *p)
{
    double m = scale * (double)zi[0];
    for (size_t j = 1; j <= t; j++)
        if (scale * (double)zi[j] > m) m = scale * (double)zi[j];
    for (size_t j = 0; j <= t; j++) p[j] = scale * (double)zi[j] - m;
}

VT_HDI void vti_causal_softmax_row(size_t T, size_t t, double scale, const float *zi, double *p)
{
    vti_causal_softmax_args(t, scale, zi, p);
    for (size_t j = 0; j <= t; j++) p[j] = vt_exp_impl(p[j]);
    vti_normalise_row(t + 1, p);
    for (size_t j = t + 1; j < T; j++) p[j] = 0.0;
}

/* scale (p (dp - S)) */
VT_HDI double vti_softmax_backward1(float p, float dp, float s, double scale)
{
    return scale * ((double)p * ((double)dp - (double)s));
}

/* token and position embeddings: wte[tok] + wpe[t] (one IEEE addition) */
VT_HDI double vti_embed1(float wte, float wpe) { return (double)wte + (double)wpe; }

/* Adam's moments of s g: m' = b1 m + c1 (g s), v' = b2 v + (c2 (g s)) (g s) */
VT_HDI void vti_adam_scaled1(float g, float m, float v, float s, double b1, double b2, double c1, double c2,
                             double *m_out, double *v_out)
{
    double gi = (double)g * (double)s;
    *m_out = b1 * (double)m + c1 * gi;
    *v_out = b2 * (double)v + (c2 * gi) * gi;
}

/* AdamW: w - lr (m' / bc1 / (sqrt(v' / bc2) + eps) + wd w) */
VT_HDI double vti_adamw1(float w, float m_new, float v_new, double lr, double bc1, double bc2, double eps, double wd)
{
    double mh = (double)m_new / bc1, vh = (double)v_new / bc2;
    double u = mh / (sqrt(vh) + eps) + wd * (double)w;
    return (double)w - lr * u;
}

/* dropout: x / (1 - p) where kept, 0 elsewhere */
VT_HDI double vti_dropout1(float x, int keep, double p)
{
    double sc = 1.0 / (1.0 - p);
    return keep ? (double)x * sc : 0.0;
}

/* the clipping factor of a squared norm */
VT_HDI double vti_clip_factor1(float sqnorm, double max_norm)
{
    double nrm = sqrt((double)sqnorm);
    return nrm > max_norm ? max_norm / (nrm + 1e-6) : 1.0;
}

#endif
