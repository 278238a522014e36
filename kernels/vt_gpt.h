/* vt_gpt.h - the transformer's CPU kernels (docs/gpt.md): fixed FP64 chains on FP32 inputs (bound
 * 0, the same bits on every IEEE machine), and exact data movement written once for FP32 and FP64.
 * The reductions (layer-norm statistics, attention GEMMs, softmax-backward dot products, embedding
 * gradients, the gradient norm) are vt_reduce / vt_gemm instances (vt_kernels.h).
 *
 * Layouts: a sequence batch is [B*T, C] (row b*T + t); per-head tensors are [B*H*T, D] (row
 * (b*H + h)*T + t); attention scores and probabilities [B*H*T, T]. */
#ifndef VT_GPT_H
#define VT_GPT_H

#include <stddef.h>
#include <stdint.h>

/* Layer normalisation over each row of [M, C] with S1 = RN32(sum x), S2 = RN32(sum xc^2):
 *   xc = RN32(x - S1 / C)                          vt_ln_center
 *   xhat = RN32(xc * r), r = 1 / sqrt(S2 / C + eps) vt_ln_norm
 *   y = gamma * xhat + beta                         vt_affine (per column; beta may be NULL)
 * backward, with dyg = RN32(dy * gamma) (vt_affine without beta), G1 = RN32(sum dyg),
 * G2 = RN32(sum dyg * xhat):  dx = r * ((dyg - G1 / C) - xhat * (G2 / C))   vt_ln_backward. */
void vt_ln_center(size_t M, size_t C, const float *x, const float *s1, double *out);
void vt_ln_norm(size_t M, size_t C, const float *xc, const float *s2, double eps, double *out);
void vt_affine(size_t M, size_t C, const float *x, const float *gamma, const float *beta, double *out);
void vt_ln_backward(size_t M, size_t C, const float *dyg, const float *xhat, const float *s2, const float *g1,
                    const float *g2, double eps, double *out);

/* GELU, tanh form: y = 0.5 x (1 + tanh(k (x + 0.044715 x^3))), k = sqrt(2/pi) (an FP64 constant),
 * tanh(u) = sign(u) (1 - e) / (1 + e) with e = vt_exp(-2|u|); and its derivative times dy. */
void vt_gelu(size_t n, const float *x, double *out);
void vt_gelu_backward(size_t n, const float *x, const float *dy, double *out);

/* Causal softmax of scaled scores: row i of [R, T] (position t = i mod T) has p_j = e_j / s for
 * j <= t with e_j = vt_exp(scale z_j - scale m), m the row's maximum over j <= t, s = RN64 of the
 * exact sum of the e_j; p_j = 0 for j > t. Backward: dz_j = scale * (p_j * (dp_j - S)) with
 * S = RN32(sum_j p_j dp_j) (a row reduction). */
void vt_causal_softmax(size_t R, size_t T, double scale, const float *z, double *out);
void vt_softmax_backward(size_t R, size_t T, double scale, const float *p, const float *dp, const float *s,
                         double *out);

/* Dropout with the mask keep[] (drawn by the operation: ops/vt_fam_chain.c): y = x * (1 / (1 - p))
 * where kept, +0 elsewhere; the backward pass applies the same mask and scale to dy. */
void vt_dropout(size_t n, const float *x, const uint8_t *keep, double p, double *out);

/* Token and position embeddings: x[b*T + t] = wte[tok[b*T + t]] + wpe[t] (one IEEE addition). */
void vt_embed(size_t B, size_t T, size_t C, const uint8_t *tok, const float *wte, const float *wpe, double *out);

/* AdamW (decoupled weight decay) and Adam's moments of a gradient scaled by the clipping factor:
 *   m' = b1 m + (1 - b1) (g s),  v' = b2 v + ((1 - b2) (g s)) (g s)   (g s: an exact product)
 *   w' = w - lr * ((m'/(1 - b1^t)) / (sqrt(v'/(1 - b2^t)) + eps) + wd * w)
 * and the clipping factor from the squared global norm S: c = M / (sqrt(S) + 1e-6) when
 * sqrt(S) > M, else 1 (max_norm M > 0). */
void vt_adam_moments_scaled(size_t n, const float *g, const float *m, const float *v, float s, double b1, double b2,
                            double *m_out, double *v_out);
void vt_adamw_apply(size_t n, const float *w, const float *m_new, const float *v_new, double lr, double b1, double b2,
                    double eps, double wd, uint64_t t, double *w_out);
double vt_clip_factor(float sqnorm, double max_norm);

/* data movement, exact, for FP32 and FP64 */
/* qkv [B*T, 3C] -> q, k, v [B*H*T, D] (C = H*D; q is columns 0..C, k C..2C, v 2C..3C) */
void vt_heads_split_f32(size_t B, size_t T, size_t H, size_t D, const float *qkv, float *q, float *k, float *v);
void vt_heads_split_f64(size_t B, size_t T, size_t H, size_t D, const double *qkv, double *q, double *k, double *v);
/* o [B*H*T, D] -> y [B*T, C] (column h*D + d) */
void vt_heads_merge_f32(size_t B, size_t T, size_t H, size_t D, const float *o, float *y);
void vt_heads_merge_f64(size_t B, size_t T, size_t H, size_t D, const double *o, double *y);
/* the merge's inverse: y [B*T, C] -> o [B*H*T, D] */
void vt_heads_unmerge_f32(size_t B, size_t T, size_t H, size_t D, const float *y, float *o);
void vt_heads_unmerge_f64(size_t B, size_t T, size_t H, size_t D, const double *y, double *o);
/* the inverse of the split: dq, dk, dv -> dqkv */
void vt_heads_join_f32(size_t B, size_t T, size_t H, size_t D, const float *q, const float *k, const float *v,
                       float *qkv);
void vt_heads_join_f64(size_t B, size_t T, size_t H, size_t D, const double *q, const double *k, const double *v,
                       double *qkv);
/* one-hot rows: out[i][tok[i]] = 1, else 0 ([n, V]) */
void vt_onehot_f32(size_t n, size_t V, const uint8_t *tok, float *out);
void vt_onehot_f64(size_t n, size_t V, const uint8_t *tok, double *out);

#endif
