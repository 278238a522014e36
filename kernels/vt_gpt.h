/* vt_gpt.h - the transformer's exact data movement (docs/gpt.md), written once for FP32 and FP64. Its
 * elementwise and row-wise chains are formulas in vt_gpt_hd.h, run by their kinds (ops/vt_fam_chain.c, vt_fam_rowwise.c); its
 * reductions (layer-norm statistics, attention GEMMs, softmax-backward dot products, embedding
 * gradients, the gradient norm) are vt_reduce / vt_gemm instances (vt_kernels.h).
 *
 * Layouts: a sequence batch is [B*T, C] (row b*T + t); per-head tensors are [B*H*T, D] (row
 * (b*H + h)*T + t); attention scores and probabilities [B*H*T, T]. */
#ifndef VT_GPT_H
#define VT_GPT_H

#include <stddef.h>
#include <stdint.h>

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
