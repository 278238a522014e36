/* vt_cnn_hd.h - the per-element formulas of the CNN's kinds, written once for their host loops
 * (ops/vt_fam_chain.c; max pooling kernels/vt_cnn.c) and the CUDA backend's device kinds (backend/cuda/vt_dev_ops_hd.h): fixed sequences of IEEE
 * operations evaluated as written, so host and device give the same FP64 value. A per-channel
 * factor is the same function of the channel's inputs wherever and however often it is computed. */
#ifndef VT_CNN_HD_H
#define VT_CNN_HD_H

#include <math.h>
#include <stddef.h>

#include "../common/vt_hd.h"

/* 1 / sqrt(S2 / M + eps): sqrt and division are correctly rounded IEEE operations */
VT_HDI double vti_bn_rstd(double S2, size_t M, double eps)
{
    double v = S2 / (double)M;
    v = v + eps;
    return 1.0 / sqrt(v);
}

/* x - S1 / M, the mean S1 / M a per-channel factor (the host loop computes it once per channel) */
VT_HDI double vti_bn_mean(float s1, size_t M) { return (double)s1 / (double)M; }
VT_HDI double vti_bn_center_of(float x, double mean) { return (double)x - mean; }
VT_HDI double vti_bn_center1(float x, float s1, size_t M) { return vti_bn_center_of(x, vti_bn_mean(s1, M)); }

/* dgamma = G2 rstd(S2) */
VT_HDI double vti_bn_gamma_grad1(float g2, float s2, size_t M, double eps) { return (double)g2 * vti_bn_rstd(s2, M, eps); }

/* gamma (xc r) + beta with r = rstd(S2) */
VT_HDI double vti_bn_apply1(float xc, double r, float gamma, float beta)
{
    return (double)gamma * ((double)xc * r) + (double)beta;
}

/* the input gradient: a (dy - mg - xc q) with a = gamma r, mg = G1 / M, q = r^2 G2 / M; the three
 * per-channel factors k = {a, mg, q} (the host loop computes them once per channel) */
VT_HDI void vti_bn_backward_k(float s2, float g1, float g2, float gamma, size_t M, double eps, double k[3])
{
    double r = vti_bn_rstd(s2, M, eps);
    k[0] = (double)gamma * r, k[1] = (double)g1 / (double)M;
    k[2] = (r * r) * (double)g2 / (double)M;
}
VT_HDI double vti_bn_backward_of(float dy, float xc, double a, double mg, double q)
{
    return a * (((double)dy - mg) - (double)xc * q);
}
VT_HDI double vti_bn_backward1(float dy, float xc, float s2, float g1, float g2, float gamma, size_t M, double eps)
{
    double k[3];
    vti_bn_backward_k(s2, g1, g2, gamma, M, eps, k);
    return vti_bn_backward_of(dy, xc, k[0], k[1], k[2]);
}

/* the running statistics: (1 - mu) rm + mu (S1 / M) and (1 - mu) rv + mu (S2 / (M - 1)) */
VT_HDI double vti_bn_running_mean1(float s1, float rm, size_t M, double mu)
{
    return (1.0 - mu) * (double)rm + mu * ((double)s1 / (double)M);
}
VT_HDI double vti_bn_running_var1(float s2, float rv, size_t M, double mu)
{
    return (1.0 - mu) * (double)rv + mu * ((double)s2 / (double)(M - 1));
}

/* the evaluation pass: gamma ((x - rm) / sqrt(rv + eps)) + beta */
VT_HDI double vti_bn_eval1(float x, float rm, float rv, float gamma, float beta, double eps)
{
    double d = sqrt((double)rv + eps);
    return (double)gamma * (((double)x - (double)rm) / d) + (double)beta;
}

/* the global average pool's backward: dx = dy w (w the FP32 weight 1/HW: one exact product) */
VT_HDI double vti_avgpool_bwd1(float dy, float w) { return (double)dy * (double)w; }

/* the row-major index of the maximum of pooling window (b, oy, ox) in channel c of x [B*H*W, C]
 * (k x k windows, stride k): the first maximum in row-major order, comparisons only (exact) */
#define VTI_DEFINE_ARGMAX(name, T)                                                                                     \
    VT_HDI size_t name(size_t H, size_t W, size_t C, size_t k, const T *x, size_t b, size_t oy, size_t ox, size_t c) \
    {                                                                                                                  \
        size_t best = ((b * H + oy * k) * W + ox * k) * C + c;                                                         \
        for (size_t dy = 0; dy < k; dy++)                                                                              \
            for (size_t dx = 0; dx < k; dx++) {                                                                        \
                size_t i = ((b * H + oy * k + dy) * W + ox * k + dx) * C + c;                                          \
                if (x[i] > x[best]) best = i;                                                                          \
            }                                                                                                          \
        return best;                                                                                                   \
    }
VTI_DEFINE_ARGMAX(vti_argmax_f32, float)
VTI_DEFINE_ARGMAX(vti_argmax_f64, double)

#endif
