/* vt_dev_ops.h - the device-resident kinds, written once for the GPU and its CPU twin.
 *
 * An operation the device runs is described by a vt_dev_op (vt_dev_op_make: sizes, the addresses
 * of its tensors in whichever memory the caller names, arguments, where failures go) and computed
 * item by item by vt__dev_op_item - one GPU thread per item in cuda/vt_cuda_model.cu, a plain loop
 * in the CPU twin (tests/test_resident.c), the same source either way. vt_dev_op_finish then does
 * the host's part: the rounded operation's log record and counts, and for column sums the
 * decisions that carry log entries. The GEMM (matmul) is not here: it is vt_cuda.cu's pipeline,
 * whose per-element code is rounding_log/vt_epilogue.h's. */
#ifndef VT_DEV_OPS_H
#define VT_DEV_OPS_H

#include <stddef.h>
#include <stdint.h>

#include "../common/vt_hd.h"
#include "../kernels/vt_kernels_impl.h"
#include "../model/vt_ops.h"
#include "../rounding_log/vt_round_impl.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    uint16_t kind;        /* VT_OPK_* */
    uint32_t op_id;
    size_t n_items;       /* items (threads) */
    size_t M, N;          /* rows, columns (or n, 0) */
    const float *in[3];
    const uint8_t *labels;
    const double *s0, *s1; /* F64 scalars (the step count, the learning rate) */
    float *out[2];
    double f[3];          /* real arguments */
    vt_bound_cfg cfg;
    int record;           /* log rounding, recording */
    double *scratch;      /* softmax: M x N FP64 values (scratch_n) */
    size_t scratch_n;
    vt_epi_res *res;      /* column sums: one decision per column (res_n) */
    size_t res_n;
    unsigned long long *err; /* the operation's failure word: (index << 8) | code, all ones when none */
    uint64_t rounded_n;   /* elements it rounds (0: an exact kind) */
} vt_dev_op;

struct vt_model;
/* Describes operation op_id of m for the device, its tensors' addresses given by ptr(ctx, t);
 * the caller sets d->scratch, d->res and d->err (sizes in scratch_n, res_n). 0 when the device
 * does not run it (then the CPU does, its tensors copied across): a kind without a device form, or
 * a rounded kind in a log replay (the judge of the trainer's entries runs on the host). */
int vt_dev_op_make(const struct vt_model *m, const vt_rctx *rc, uint32_t op_id, void *(*ptr)(void *ctx, uint32_t t),
                   void *ctx, vt_dev_op *d);
/* The host's part after the items ran: res holds the host copy of d->res (NULL when res_n = 0). */
vt_err vt_dev_op_finish(vt_rctx *rc, const vt_dev_op *d, const vt_epi_res *res) VT_WARN_UNUSED;

#ifdef __cplusplus
}
#endif

/* ---- the items (host and device) ---- */

VT_HDI void vt__dev_err(unsigned long long *err, size_t e, int code)
{
    unsigned long long v = ((unsigned long long)e << 8) | (unsigned long long)code;
#if defined(__CUDA_ARCH__)
    atomicMin(err, v); /* an integer minimum: the same whatever the threads' order */
#else
    if (v < *err) *err = v;
#endif
}

/* RN32 of a fixed chain's FP64 value (bound 0), or the element's failure */
VT_HDI void vt__dev_put32(double v, float *out, unsigned long long *err, size_t e)
{
    float f = (float)v;
    *out = f;
    if (!vt__bits_finite(vt_hd_bits32(f))) vt__dev_err(err, e, vt_hd_isnan(v) ? VT__EL_NAN : VT__EL_RANGE);
}

/* a column sum: the exact value, and the record rule on the party's value x = RN64(exact), which
 * lies within the bound of any evaluation */
VT_HDI void vt__dev_colsum(const vt_dev_op *d, size_t j)
{
    size_t M = d->M, N = d->N;
    const float *X = d->in[0];
    vt_xacc acc;
    vt__xacc_init(&acc);
    for (size_t i = 0; i < M; i++) vt__xacc_add(&acc, (double)X[i * N + j]);
    const float one = 1.0f;
    vt_epi_res r;
    r.B = vt__bound_of_terms(&d->cfg, M, X + j, N, &one, 0);
    r.x = vt__xacc_round64(&acc);
    r.bits = vt_hd_bits32(vt__xacc_round32(&acc));
    r.code = VT__EL_OK;
    r.entry = r.up = 0;
    r.eval = 2;
    if (!vt__bits_finite(r.bits)) {
        r.code = vt_hd_isnan(r.x) ? VT__EL_NAN : VT__EL_RANGE;
    } else if (d->record) {
        uint32_t rb = r.bits;
        float f;
        int logged, isv, up;
        int code = vt__record1(r.x, r.B, &f, &logged, &isv, &up);
        r.bits = vt_hd_bits32(f);
        vt__record_tail(r.x, r.B, code, logged, vt__record_needs_exact(r.x, r.B, code, logged) ? rb : 0u, &r);
        r.bits = rb; /* logged: RN32(exact); unlogged: RN32(x), which is RN32(exact) */
    }
    d->out[0][j] = vt_hd_f32(r.bits);
    d->res[j] = r;
}

VT_HDI void vt__dev_op_item(const vt_dev_op *d, size_t i)
{
    unsigned long long *err = d->err;
    const float *const *in = d->in;
    float *const *out = d->out;
    switch (d->kind) {
    case VT_OPK_BIAS_ADD:
        vt__dev_put32(vt__bias1(in[0][i], in[1][i % d->N]), &out[0][i], err, i);
        break;
    case VT_OPK_RELU: /* exact */
        out[0][i] = in[0][i] > 0.0f ? in[0][i] : 0.0f;
        break;
    case VT_OPK_RELU_BWD: /* exact */
        out[0][i] = in[0][i] > 0.0f ? in[1][i] : 0.0f;
        break;
    case VT_OPK_SOFTMAX: { /* row i */
        double *p = d->scratch + i * d->N;
        vt__softmax_row(d->N, in[0] + i * d->N, p);
        for (size_t c = 0; c < d->N; c++) vt__dev_put32(p[c], &out[0][i * d->N + c], err, i * d->N + c);
        break;
    }
    case VT_OPK_XENT_LOSS: { /* one item */
        vt_xacc acc;
        vt__xacc_init(&acc);
        const double dn = (double)d->M;
        for (size_t r = 0; r < d->M; r++) {
            if (d->labels[r] >= d->N) {
                vt__dev_err(err, 0, VT__EL_LABEL);
                return;
            }
            vt__xacc_add(&acc, vt__xent_l1(in[0][r * d->N + d->labels[r]], dn));
        }
        vt__dev_put32((double)vt__xacc_round32(&acc), &out[0][0], err, 0);
        break;
    }
    case VT_OPK_XENT_BWD: {
        size_t r = i / d->N, c = i % d->N;
        if (d->labels[r] >= d->N) {
            vt__dev_err(err, i, VT__EL_LABEL);
            break;
        }
        vt__dev_put32(vt__xent_bwd1(in[0][i], c == d->labels[r], (double)d->M), &out[0][i], err, i);
        break;
    }
    case VT_OPK_COLSUM: /* column i */
        vt__dev_colsum(d, i);
        break;
    case VT_OPK_SGD_VELOCITY:
        vt__dev_put32(vt__sgd_velocity1(in[0][i], in[1][i], in[2][i], d->f[0], d->f[1]), &out[0][i], err, i);
        break;
    case VT_OPK_SGD_APPLY:
        vt__dev_put32(vt__sgd_apply1(in[0][i], in[1][i], *d->s0), &out[0][i], err, i);
        break;
    case VT_OPK_ADAM_MOMENTS: { /* elements numbered m then v */
        double a, b;
        vt__adam_moments1(in[0][i], in[1][i], in[2][i], d->f[0], d->f[1], 1.0 - d->f[0], 1.0 - d->f[1], &a, &b);
        vt__dev_put32(a, &out[0][i], err, i);
        vt__dev_put32(b, &out[1][i], err, d->N + i);
        break;
    }
    case VT_OPK_ADAM_APPLY: {
        double t = *d->s0;
        if (!(t >= 1 && t <= 0x1p53) || t != (double)(uint64_t)t) {
            vt__dev_err(err, 0, VT__EL_STEPS);
            break;
        }
        const double bc1 = 1.0 - vt__powi(d->f[0], (uint64_t)t), bc2 = 1.0 - vt__powi(d->f[1], (uint64_t)t);
        vt__dev_put32(vt__adam_apply1(in[0][i], in[1][i], in[2][i], *d->s1, bc1, bc2, d->f[2]), &out[0][i], err, i);
        break;
    }
    default:
        break;
    }
}

#endif
