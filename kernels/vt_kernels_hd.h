/* vt_kernels_hd.h - the per-element formulas of the MLP's kinds (and ADD, SUB), written once for the
 * kinds' host loops (ops/vt_fam_chain.c, vt_fam_rowwise.c; vt_softmax and the loss in vt_kernels.c)
 * and the CUDA backend's device items (backend/cuda/vt_dev_ops_hd.h): each is a fixed sequence of IEEE basic operations, evaluated as written
 * (no contraction on either compiler), so host and device give the same FP64 value. */
#ifndef VT_KERNELS_HD_H
#define VT_KERNELS_HD_H

#include <stddef.h>
#include <stdint.h>

#include "../common/vt_hd.h"
#include "../rounding/vt_xacc_hd.h"
#include "vt_math_hd.h"

VT_HDI double vti_bias1(float x, float b) { return (double)x + (double)b; }
/* SUB: a - b in FP64; RN32 of it is RN32 of the exact difference (53 >= 2 * 24 + 2: the double
 * rounding is innocuous for a sum of two floats), so its bound is 0 */
VT_HDI double vti_sub1(float a, float b) { return (double)a - (double)b; }
/* ADD: a + b (the residual connection, and the sum of a tensor's two gradients) */
VT_HDI double vti_add1(float a, float b) { return (double)a + (double)b; }
/* ReLU (v = z) and its gradient (v = da): v where z > 0, else +0; exact (NaN -> +0) */
VT_HDI float vti_relu1(float z, float v) { return z > 0.0f ? v : 0.0f; }

/* (P - [c = y]) / N */
VT_HDI double vti_xent_bwd1(float p, int is_label, double dn)
{
    double t = (double)p;
    if (is_label) t = t - 1.0;
    return t / dn;
}

/* l = -log(max(q, 2^-149)) / N (NaN stays NaN), in stages so that the CPU can take the logarithms of
 * many rows at once (vt_log_n, the same bits): the argument, then l from its log */
VT_HDI double vti_xent_arg(float p)
{
    double q = (double)p;
    if (q < 0x1p-149) q = 0x1p-149;
    return q;
}
VT_HDI double vti_xent_from_log(double lg, double dn) { return -lg / dn; }
VT_HDI double vti_xent_l1(float p, double dn) { return vti_xent_from_log(vt_log_impl(vti_xent_arg(p)), dn); }

/* The losses of regression and multi-label models (ops/vt_fam_loss.c; docs/rounding.md 2.6). Their means
 * are taken by the rounding layer (vt_xacc_round32_quot): here only the FP64 pieces of one element.
 * log(1 + e) for e in [0, 1]: u = 1 + e rounded, then log(u) e / (u - 1) (the rounding of u cancels to
 * first order: a few units of 2^-53 relative, with the portable log), e itself where u rounds to 1 */
VT_HDI double vti_log1p01(double e)
{
    double u = 1.0 + e;
    if (u == 1.0) return e;
    return vt_log_impl(u) * (e / (u - 1.0));
}
/* BCE with logits' softplus part: log(1 + exp(-|x|)) (the rest, max(x, 0) - x t, is exact) */
VT_HDI double vti_bce_softplus1(float x) { return vti_log1p01(vt_exp_impl(-vt_hd_fabs((double)x))); }
/* BCE with logits' gradient numerator sigmoid(x) - t as k FP64 terms (the return) whose exact sum it is
 * up to the portable exp: with e = exp(-|x|), q = e / (1 + e) (no overflow), 1 - t - q for x >= 0 and
 * q - t below - never a rounded 1 - q, so the small differences near t = sigmoid(x) keep their bits */
VT_HDI int vti_bce_bwd_terms(float x, float t, double *v)
{
    const double e = vt_exp_impl(-vt_hd_fabs((double)x)), q = e / (1.0 + e);
    if (x >= 0.0f) {
        v[0] = 1.0, v[1] = -(double)t, v[2] = -q;
        return 3;
    }
    v[0] = q, v[1] = -(double)t; /* NaN x: q is NaN */
    return 2;
}

/* one softmax row: p_c = e_c / s with e_c = exp(z_c - max z), s = RN64 of the exact sum of the e_c.
 * In stages, so that the CPU can take the exponentials of a whole row at once (vt_exp_n, the same
 * bits): the arguments, then exp of each, then the normalisation (vti_normalise_row: the e_c added
 * in order into vt_xacc, rounded once, each divided by it) */
VT_HDI void vti_softmax_args(size_t C, const float *z, double *p)
{
    float m = z[0];
    for (size_t c = 1; c < C; c++)
        if (z[c] > m) m = z[c];
    for (size_t c = 0; c < C; c++) p[c] = (double)z[c] - (double)m;
}

VT_HDI void vti_normalise_row(size_t C, double *p)
{
    vt_xacc acc;
    vti_xacc_init(&acc);
    for (size_t c = 0; c < C; c++) vti_xacc_add(&acc, p[c]);
    double s = vti_xacc_round64(&acc);
    for (size_t c = 0; c < C; c++) p[c] = p[c] / s;
}

VT_HDI void vti_softmax_row(size_t C, const float *z, double *p)
{
    vti_softmax_args(C, z, p);
    for (size_t c = 0; c < C; c++) p[c] = vt_exp_impl(p[c]);
    vti_normalise_row(C, p);
}

/* SGD with momentum: v' = mu v + (g + wd w); w' = w - lr v' */
VT_HDI double vti_sgd_velocity1(float w, float g, float v, double mu, double wd)
{
    double t = (double)g + wd * (double)w;
    return mu * (double)v + t;
}
VT_HDI double vti_sgd_apply1(float w, float v_new, double lr) { return (double)w - lr * (double)v_new; }

/* Adam: m' = b1 m + c1 g, v' = b2 v + (c2 g) g with c1 = 1 - b1, c2 = 1 - b2 */
VT_HDI void vti_adam_moments1(float g, float m, float v, double b1, double b2, double c1, double c2, double *m_out,
                              double *v_out)
{
    double gi = (double)g;
    *m_out = b1 * (double)m + c1 * gi;
    *v_out = b2 * (double)v + (c2 * gi) * gi;
}

/* b^t by binary exponentiation (square-and-multiply, low bit first): a fixed sequence of FP64
 * multiplications determined by t alone */
VT_HDI double vti_powi(double b, uint64_t t)
{
    double r = 1.0, x = b;
    while (t != 0) {
        if (t & 1) r = r * x;
        t >>= 1;
        if (t != 0) x = x * x;
    }
    return r;
}

/* w' = w - (lr (m' / bc1)) / (sqrt(v' / bc2) + eps), bc = 1 - b^t */
VT_HDI double vti_adam_apply1(float w, float m_new, float v_new, double lr, double bc1, double bc2, double eps)
{
    double mh = (double)m_new / bc1;
    double vh = (double)v_new / bc2;
    double step = (lr * mh) / (sqrt(vh) + eps);
    return (double)w - step;
}

#endif
