/* vt_dev_ops_hd.h - the device-resident kinds, written once for the GPU and its CPU twin.
 *
 * An operation the device runs is described by a vt_dev_op (vt_dev_op_make: sizes, the addresses
 * of its tensors in whichever memory the caller names, arguments, where failures go) and computed
 * item by item by vti_dev_op_item - one GPU thread per item in cuda/vt_cuda_model.cu, a plain loop
 * in the CPU twin (tests/test_resident.c), the same source either way. vt_dev_op_finish then does
 * the host's part: the rounded operation's log record and counts, and for column sums the
 * decisions that carry log entries. The GEMM (matmul) is not here: it is vt_cuda.cu's pipeline,
 * whose per-element code is rounding_log/vt_epilogue.h's. */
#ifndef VT_DEV_OPS_HD_H
#define VT_DEV_OPS_HD_H

#include <stddef.h>
#include <stdint.h>

#include "../common/vt_hd.h"
#include "../kernels/vt_cnn.h"
#include "../kernels/vt_cnn_hd.h"
#include "../kernels/vt_gpt_hd.h"
#include "../kernels/vt_kernels.h"
#include "../kernels/vt_kernels_hd.h"
#include "../model/vt_ops.h"
#include "../model/vt_philox_hd.h"
#include "../rounding_log/vt_round_hd.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    uint16_t kind;        /* VT_OPK_* */
    uint32_t op_id;
    size_t n_items;       /* items (threads) */
    size_t M, N;          /* rows, columns (or n, 0) */
    const float *in[6];
    const uint8_t *labels;
    const double *s0, *s1; /* F64 scalars (the step count, the learning rate) */
    float *out[3];
    double f[4];          /* real arguments */
    vt_bound_cfg cfg;
    int record;           /* log rounding, recording */
    double *scratch;      /* softmax: M x N FP64 values (scratch_n) */
    size_t scratch_n;
    vt_epi_res *res;      /* reductions: one decision per output element (res_n) */
    size_t res_n;
    /* reductions (column sums and dot products, global average pooling): output (i, j) of rows x
     * cols is sum_k a(i, j, k) b(i, j, k) over n terms (vt_reduce's operands); b.p NULL: the
     * constant wconst with zero strides */
    vt_strided ra, rb;
    size_t rcols, rn;
    float wconst;
    vt_conv_geom g;       /* im2col, the input gradient's gather */
    size_t hB, hT, hH, hD; /* the transformer's heads; hT also the causal softmax's T */
    uint64_t step, seed;  /* dropout: the step, the seed and the stream key of its mask */
    uint32_t key;
    size_t pB, pH, pW, pC, pk; /* pooling; the weight transpose's k, C, Co in pk, pC, pB */
    unsigned long long *err; /* the operation's failure word: (index << 8) | code, all ones when none */
    uint64_t rounded_n;   /* elements it rounds (0: an exact kind) */
} vt_dev_op;

struct vt_model;
/* Describes operation op_id of m for the device, its tensors' addresses given by ptr(ctx, t);
 * the caller sets d->scratch, d->res and d->err (sizes in scratch_n, res_n). 0 when the device
 * does not run it (then the CPU does, its tensors copied across): a kind the list (model/vt_kinds.h)
 * does not mark VT_DEV_ITEM, a size the items do not take, or a rounded kind in a log replay (the
 * judge of the trainer's entries runs on the host). Each VT_DEV_ITEM kind has its case here and in
 * vti_dev_op_item (tests/test_kinds.c, tests/test_resident.c). */
int vt_dev_op_make(const struct vt_model *m, const vt_rctx *rc, uint32_t op_id, uint64_t step,
                   void *(*ptr)(void *ctx, uint32_t t), void *ctx, vt_dev_op *d);
/* The host's part after the items ran: res holds the host copy of d->res (NULL when res_n = 0). */
vt_err vt_dev_op_finish(vt_rctx *rc, const vt_dev_op *d, const vt_epi_res *res) VT_WARN_UNUSED;
/* The failure word of operation op_id (all ones: none) reported as the CPU reports that failure:
 * a label that is no class and an Adam step count that is no step as VT_ERR_ARG with the CPU's
 * message (from the host's copy of the labels or the step count: the CPU produced them), a value
 * failure through vt_epi_fail (the error, its message, rc->fault). */
vt_err vt_dev_err_report(vt_rctx *rc, const struct vt_model *m, uint32_t op_id, unsigned long long word) VT_WARN_UNUSED;

#ifdef __cplusplus
}
#endif

/* ---- the items (host and device) ---- */

/* A failure word is (index << 8) | code, with bit 63 set for the value failures (NaN, beyond FP32
 * range, an invalid bound) and clear for the argument failures (a label that is no class, a step
 * count that is no step), which the CPU checks before it computes anything: the minimum is then
 * the failure the CPU reports first. */
#define VTI_DEV_VALUE_FAIL (1ULL << 63)
VT_HDI void vti_dev_err(unsigned long long *err, size_t e, int code)
{
    unsigned long long v = ((unsigned long long)e << 8) | (unsigned long long)code;
    if (code != VTI_EL_LABEL && code != VTI_EL_STEPS && code != VTI_EL_TOKEN) v |= VTI_DEV_VALUE_FAIL;
#if defined(__CUDA_ARCH__)
    atomicMin(err, v); /* an integer minimum: the same whatever the threads' order */
#else
    if (v < *err) *err = v;
#endif
}

/* RN32 of a fixed chain's FP64 value (bound 0), or the element's failure */
VT_HDI void vti_dev_put32(double v, float *out, unsigned long long *err, size_t e)
{
    float f = (float)v;
    *out = f;
    if (!vti_bits_finite(vt_hd_bits32(f))) vti_dev_err(err, e, vt_hd_isnan(v) ? VTI_EL_NAN : VTI_EL_RANGE);
}

/* one reduction output: the exact value, and the record rule on the party's value x = RN64(exact),
 * which lies within the bound of any evaluation (the bound is at least u |X| whenever two terms are
 * non-zero, and 0 only when the sum is exact) */
VT_HDI void vti_dev_reduce(const vt_dev_op *d, size_t e)
{
    size_t i = e / d->rcols, j = e % d->rcols;
    const float *pa = d->ra.p + i * d->ra.si + j * d->ra.sj;
    const float *pb = d->rb.p ? d->rb.p + i * d->rb.si + j * d->rb.sj : &d->wconst;
    size_t sa = d->ra.sk, sb = d->rb.p ? d->rb.sk : 0;
    vt_xacc acc;
    vti_xacc_dot32(&acc, d->rn, pa, sa, pb, sb);
    vt_epi_res r;
    r.B = vti_bound_of_terms(&d->cfg, d->rn, pa, sa, pb, sb);
    r.x = vti_xacc_round64(&acc);
    r.bits = vt_hd_bits32(vti_xacc_round32(&acc));
    r.code = VTI_EL_OK;
    r.entry = r.up = 0;
    r.eval = 2;
    if (!vti_bits_finite(r.bits)) {
        r.code = vt_hd_isnan(r.x) ? VTI_EL_NAN : VTI_EL_RANGE;
    } else if (d->record) {
        uint32_t rb = r.bits;
        float f;
        int logged, isv, up;
        int code = vti_record1(r.x, r.B, &f, &logged, &isv, &up);
        r.bits = vt_hd_bits32(f);
        if (!d->cfg.legacy_log && vti_record_needs_exact(r.x, r.B, code, logged)) { /* format 5: the exact window */
            uint32_t lo, hi, mid;
            vti_xacc_window(&acc, r.B, &lo, &hi, &mid);
            vti_record_window(lo, hi, mid, &r);
        } else {
            vti_record_tail(r.x, r.B, code, logged, vti_record_needs_exact(r.x, r.B, code, logged) ? rb : 0u, &r);
        }
        r.bits = rb; /* logged: RN32(exact); unlogged: RN32(x), which is RN32(exact) */
    }
    d->out[0][e] = vt_hd_f32(r.bits);
    d->res[e] = r;
}

/* the element of a head tensor [B*H*T, D] at index i, and its place in a sequence tensor
 * [B*T, width] at column offset h*D (plus `part` C for the k and v thirds of qkv) */
VT_HDI size_t vti_dev_head_seq(const vt_dev_op *d, size_t i, size_t width, size_t part)
{
    size_t D = d->hD, T = d->hT, H = d->hH, dd = i % D, r = i / D, t = r % T, h = (r / T) % H, b = r / (T * H);
    return (b * T + t) * width + part * H * D + h * D + dd;
}

/* the maximum of pooling window (b, oy, ox) in channel c (vt_cnn_hd.h, as the CPU's) */
VT_HDI size_t vti_dev_argmax(const vt_dev_op *d, const float *x, size_t b, size_t oy, size_t ox, size_t c)
{
    return vti_argmax_f32(d->pH, d->pW, d->pC, d->pk, x, b, oy, ox, c);
}

/* column e of im2col (vt_im2col): the source of element e of the columns, or 0 */
VT_HDI float vti_dev_im2col(const vt_conv_geom *g, const float *x, size_t e)
{
    size_t C = g->C, k = g->k, t = e / C, c = e % C;
    size_t kx = t % k, ky = (t / k) % k, r = t / (k * k);
    size_t ox = r % g->Wo, oy = (r / g->Wo) % g->Ho, b = r / (g->Wo * g->Ho);
    int64_t iy = (int64_t)(oy * g->s + ky) - (int64_t)g->p, ix = (int64_t)(ox * g->s + kx) - (int64_t)g->p;
    if (iy < 0 || ix < 0 || iy >= (int64_t)g->H || ix >= (int64_t)g->W) return 0.0f;
    if (g->chw) return x[b * C * g->H * g->W + c * g->H * g->W + (size_t)iy * g->W + (size_t)ix];
    return x[((b * g->H + (size_t)iy) * g->W + (size_t)ix) * C + c];
}

/* element e of the input gradient's operand (vt_conv_dgather; g->C is the output channels) */
VT_HDI float vti_dev_dgather(const vt_conv_geom *g, const float *dy, size_t e)
{
    size_t Co = g->C, k = g->k, s = g->s, t = e / Co, c = e % Co;
    size_t kx = t % k, ky = (t / k) % k, r = t / (k * k);
    size_t ix = r % g->W, iy = (r / g->W) % g->H, b = r / (g->W * g->H);
    int64_t ny = (int64_t)(iy + g->p) - (int64_t)ky, nx = (int64_t)(ix + g->p) - (int64_t)kx;
    if (ny < 0 || nx < 0 || ny % (int64_t)s || nx % (int64_t)s || ny / (int64_t)s >= (int64_t)g->Ho ||
        nx / (int64_t)s >= (int64_t)g->Wo)
        return 0.0f;
    size_t oy = (size_t)ny / s, ox = (size_t)nx / s;
    return dy[((b * g->Ho + oy) * g->Wo + ox) * Co + c];
}

VT_HDI void vti_dev_op_item(const vt_dev_op *d, size_t i)
{
    unsigned long long *err = d->err;
    const float *const *in = d->in;
    float *const *out = d->out;
    switch (d->kind) {
    case VT_OPK_BIAS_ADD:
        vti_dev_put32(vti_bias1(in[0][i], in[1][i % d->N]), &out[0][i], err, i);
        break;
    case VT_OPK_RELU: /* exact */
        out[0][i] = in[0][i] > 0.0f ? in[0][i] : 0.0f;
        break;
    case VT_OPK_RELU_BWD: /* exact */
        out[0][i] = in[0][i] > 0.0f ? in[1][i] : 0.0f;
        break;
    case VT_OPK_SOFTMAX: { /* row i */
        double *p = d->scratch + i * d->N;
        vti_softmax_row(d->N, in[0] + i * d->N, p);
        for (size_t c = 0; c < d->N; c++) vti_dev_put32(p[c], &out[0][i * d->N + c], err, i * d->N + c);
        break;
    }
    case VT_OPK_XENT_LOSS: { /* one item */
        vt_xacc acc;
        vti_xacc_init(&acc);
        const double dn = (double)d->M;
        for (size_t r = 0; r < d->M; r++) {
            if (d->labels[r] >= d->N) {
                vti_dev_err(err, 0, VTI_EL_LABEL);
                return;
            }
            vti_xacc_add(&acc, vti_xent_l1(in[0][r * d->N + d->labels[r]], dn));
        }
        vti_dev_put32((double)vti_xacc_round32(&acc), &out[0][0], err, 0);
        break;
    }
    case VT_OPK_XENT_BWD: {
        size_t r = i / d->N, c = i % d->N;
        if (d->labels[r] >= d->N) {
            vti_dev_err(err, i, VTI_EL_LABEL);
            break;
        }
        vti_dev_put32(vti_xent_bwd1(in[0][i], c == d->labels[r], (double)d->M), &out[0][i], err, i);
        break;
    }
    case VT_OPK_COLSUM: case VT_OPK_COLDOT: case VT_OPK_AVGPOOL: /* output element i */
        vti_dev_reduce(d, i);
        break;
    case VT_OPK_ADD:
        vti_dev_put32((double)in[0][i] + (double)in[1][i], &out[0][i], err, i);
        break;
    case VT_OPK_IM2COL: /* exact */
        out[0][i] = vti_dev_im2col(&d->g, in[0], i);
        break;
    case VT_OPK_CONV_DGATHER: /* exact */
        out[0][i] = vti_dev_dgather(&d->g, in[0], i);
        break;
    case VT_OPK_CONV_WPERM: { /* exact: W [k*k*C, Co] -> W' [k*k*Co, C]; pk = k, pC = C, pB = Co */
        size_t C = d->pC, Co = d->pB, c = i % C, co = (i / C) % Co, t = i / (C * Co);
        out[0][i] = in[0][(t * C + c) * Co + co];
        break;
    }
    case VT_OPK_MAXPOOL: { /* exact: output element i */
        size_t Ho = d->pH / d->pk, Wo = d->pW / d->pk, c = i % d->pC, r = i / d->pC;
        out[0][i] = in[0][vti_dev_argmax(d, in[0], r / (Wo * Ho), (r / Wo) % Ho, r % Wo, c)];
        break;
    }
    case VT_OPK_MAXPOOL_BWD: { /* exact: input element i gets the gradient of its window if it is the maximum */
        size_t Ho = d->pH / d->pk, Wo = d->pW / d->pk, c = i % d->pC, r = i / d->pC;
        size_t ix = r % d->pW, iy = (r / d->pW) % d->pH, b = r / (d->pW * d->pH), oy = iy / d->pk, ox = ix / d->pk;
        size_t w = ((b * Ho + oy) * Wo + ox) * d->pC + c;
        out[0][i] = vti_dev_argmax(d, in[0], b, oy, ox, c) == i ? in[1][w] : 0.0f;
        break;
    }
    case VT_OPK_AVGPOOL_BWD: /* dx[(b, t), c] = dy[b, c] w; pB = B, pk = HW, pC = C */
        vti_dev_put32((double)in[0][(i / (d->pk * d->pC)) * d->pC + i % d->pC] * (double)d->wconst, &out[0][i], err, i);
        break;
    case VT_OPK_BN_CENTER:
        vti_dev_put32(vti_bn_center1(in[0][i], in[1][i % d->N], d->M), &out[0][i], err, i);
        break;
    case VT_OPK_BN_APPLY: {
        size_t c = i % d->N;
        double r = vti_bn_rstd(in[1][c], d->M, d->f[0]);
        vti_dev_put32(vti_bn_apply1(in[0][i], r, in[2][c], in[3][c]), &out[0][i], err, i);
        break;
    }
    case VT_OPK_BN_GAMMA_GRAD: /* channel i; M in d->M */
        vti_dev_put32((double)in[0][i] * vti_bn_rstd(in[1][i], d->M, d->f[0]), &out[0][i], err, i);
        break;
    case VT_OPK_BN_BACKWARD: {
        size_t c = i % d->N;
        vti_dev_put32(vti_bn_backward1(in[0][i], in[1][i], in[2][c], in[3][c], in[4][c], in[5][c], d->M, d->f[0]),
                      &out[0][i], err, i);
        break;
    }
    case VT_OPK_BN_RUNNING: /* channel i of N; elements numbered mean then variance */
        vti_dev_put32(vti_bn_running_mean1(in[0][i], in[2][i], d->M, d->f[0]), &out[0][i], err, i);
        vti_dev_put32(vti_bn_running_var1(in[1][i], in[3][i], d->M, d->f[0]), &out[1][i], err, d->N + i);
        break;
    case VT_OPK_SGD_VELOCITY:
        vti_dev_put32(vti_sgd_velocity1(in[0][i], in[1][i], in[2][i], d->f[0], d->f[1]), &out[0][i], err, i);
        break;
    case VT_OPK_SGD_APPLY:
        vti_dev_put32(vti_sgd_apply1(in[0][i], in[1][i], *d->s0), &out[0][i], err, i);
        break;
    case VT_OPK_ADAM_MOMENTS: { /* elements numbered m then v */
        double a, b;
        vti_adam_moments1(in[0][i], in[1][i], in[2][i], d->f[0], d->f[1], 1.0 - d->f[0], 1.0 - d->f[1], &a, &b);
        vti_dev_put32(a, &out[0][i], err, i);
        vti_dev_put32(b, &out[1][i], err, d->N + i);
        break;
    }
    case VT_OPK_ADAM_APPLY: {
        double t = *d->s0;
        if (!(t >= 1 && t <= 0x1p53) || t != (double)(uint64_t)t) {
            vti_dev_err(err, 0, VTI_EL_STEPS);
            break;
        }
        const double bc1 = 1.0 - vti_powi(d->f[0], (uint64_t)t), bc2 = 1.0 - vti_powi(d->f[1], (uint64_t)t);
        vti_dev_put32(vti_adam_apply1(in[0][i], in[1][i], in[2][i], *d->s1, bc1, bc2, d->f[2]), &out[0][i], err, i);
        break;
    }
    /* ---- the transformer ---- */
    case VT_OPK_EMBED: { /* x[r, c] = wte[tok[r], c] + wpe[r mod T, c]; N = C, M = the vocabulary */
        size_t r = i / d->N, c = i % d->N;
        if (d->labels[r] >= d->M) {
            vti_dev_err(err, r, VTI_EL_TOKEN);
            break;
        }
        vti_dev_put32((double)in[1][d->labels[r] * d->N + c] + (double)in[2][(r % d->hT) * d->N + c], &out[0][i], err,
                      i);
        break;
    }
    case VT_OPK_ONEHOT: { /* exact; N = V */
        size_t r = i / d->N, c = i % d->N;
        out[0][i] = d->labels[r] < d->N && d->labels[r] == c ? 1.0f : 0.0f;
        break;
    }
    case VT_OPK_POS_GRAD: case VT_OPK_ROW_SUM: case VT_OPK_ROW_DOT: case VT_OPK_SUMSQ: /* reductions */
        vti_dev_reduce(d, i);
        break;
    case VT_OPK_LN_CENTER:
        vti_dev_put32(vti_ln_center1(in[0][i], in[1][i / d->N], d->N), &out[0][i], err, i);
        break;
    case VT_OPK_LN_NORM:
        vti_dev_put32((double)in[0][i] * vti_ln_rstd(in[1][i / d->N], d->N, d->f[0]), &out[0][i], err, i);
        break;
    case VT_OPK_AFFINE: case VT_OPK_SCALE_COLS:
        vti_dev_put32(vti_affine1(in[0][i], in[1][i % d->N], in[2] ? &in[2][i % d->N] : NULL), &out[0][i], err, i);
        break;
    case VT_OPK_LN_BACKWARD: {
        size_t r = i / d->N;
        vti_dev_put32(vti_ln_backward1(in[0][i], in[1][i], in[2][r], in[3][r], in[4][r], d->N, d->f[0]), &out[0][i],
                      err, i);
        break;
    }
    case VT_OPK_GELU:
        vti_dev_put32(vti_gelu1(in[0][i]), &out[0][i], err, i);
        break;
    case VT_OPK_GELU_BWD:
        vti_dev_put32(vti_gelu_backward1(in[0][i], in[1][i]), &out[0][i], err, i);
        break;
    case VT_OPK_HEADS_SPLIT: { /* exact: item i of q, k and v */
        size_t C = d->hH * d->hD;
        out[0][i] = in[0][vti_dev_head_seq(d, i, 3 * C, 0)];
        out[1][i] = in[0][vti_dev_head_seq(d, i, 3 * C, 1)];
        out[2][i] = in[0][vti_dev_head_seq(d, i, 3 * C, 2)];
        break;
    }
    case VT_OPK_HEADS_JOIN: {
        size_t C = d->hH * d->hD;
        out[0][vti_dev_head_seq(d, i, 3 * C, 0)] = in[0][i];
        out[0][vti_dev_head_seq(d, i, 3 * C, 1)] = in[1][i];
        out[0][vti_dev_head_seq(d, i, 3 * C, 2)] = in[2][i];
        break;
    }
    case VT_OPK_HEADS_MERGE: /* exact: head element i to its place in the sequence */
        out[0][vti_dev_head_seq(d, i, d->hH * d->hD, 0)] = in[0][i];
        break;
    case VT_OPK_HEADS_UNMERGE:
        out[0][i] = in[0][vti_dev_head_seq(d, i, d->hH * d->hD, 0)];
        break;
    case VT_OPK_SOFTMAX_CAUSAL: { /* row i of [R, T] */
        size_t T = d->hT;
        double *p = d->scratch + i * T;
        vti_causal_softmax_row(T, i % T, d->f[0], in[0] + i * T, p);
        for (size_t j = 0; j < T; j++) vti_dev_put32(p[j], &out[0][i * T + j], err, i * T + j);
        break;
    }
    case VT_OPK_SOFTMAX_BWD:
        vti_dev_put32(vti_softmax_backward1(in[0][i], in[1][i], in[2][i / d->hT], d->f[0]), &out[0][i], err, i);
        break;
    case VT_OPK_AUGMENT: { /* exact: element i of [B, C*H*W]; pB = C, pH, pW, pk = pad, key = flip */
        size_t dd = d->pB * d->pH * d->pW, b = i / dd, e = i % dd;
        uint32_t oy, ox;
        int fl;
        vti_augment_draw(d->seed, d->step, b, (uint32_t)d->pk, (int)d->key, &oy, &ox, &fl);
        int64_t src = vti_augment_source(d->pH, d->pW, (uint32_t)d->pk, oy, ox, fl, e);
        out[0][i] = src < 0 ? 0.0f : in[0][b * dd + (size_t)src];
        break;
    }
    case VT_OPK_DROPOUT: /* the mask from Philox (seed, 4, step, key << 32 | i), as the CPU draws it */
        vti_dev_put32(vti_dropout1(in[0][i], vti_dropout_keep(d->seed, d->step, d->key, i, d->f[0]), d->f[0]),
                      &out[0][i], err, i);
        break;
    case VT_OPK_CLIP_FACTOR: /* one item */
        vti_dev_put32(vti_clip_factor1(in[0][0], d->f[0]), &out[0][0], err, 0);
        break;
    case VT_OPK_ADAM_SCALED: { /* elements numbered m then v */
        double a, b;
        vti_adam_scaled1(in[0][i], in[1][i], in[2][i], in[3][0], d->f[0], d->f[1], 1.0 - d->f[0], 1.0 - d->f[1], &a,
                         &b);
        vti_dev_put32(a, &out[0][i], err, i);
        vti_dev_put32(b, &out[1][i], err, d->N + i);
        break;
    }
    case VT_OPK_ADAMW: {
        double t = *d->s0;
        if (!(t >= 1 && t <= 0x1p53) || t != (double)(uint64_t)t) {
            vti_dev_err(err, 0, VTI_EL_STEPS);
            break;
        }
        const double bc1 = 1.0 - vti_powi(d->f[0], (uint64_t)t), bc2 = 1.0 - vti_powi(d->f[1], (uint64_t)t);
        vti_dev_put32(vti_adamw1(in[0][i], in[1][i], in[2][i], *d->s1, bc1, bc2, d->f[2], d->f[3]), &out[0][i], err, i);
        break;
    }
    default: /* vt_dev_op_make accepted a kind this switch does not compute */
        vti_dev_err(err, 0, VTI_EL_INTERNAL);
        break;
    }
}

#endif
