/* vt_dev_ops_hd.h - the device-resident kinds, written once for the GPU and its CPU twin.
 *
 * An operation the device runs is described by a vt_dev_op (vt_dev_op_make: sizes, the addresses
 * of its tensors in whichever memory the caller names, arguments, where failures go) and computed
 * item by item by vti_dev_op_item - one GPU thread per item in backend/cuda/vt_cuda_model.cu, a plain loop
 * in the CPU twin (tests/unit/test_resident.c), the same source either way. vt_dev_op_finish then does
 * the host's part: the rounded operation's log record and counts, and for column sums the
 * decisions that carry log entries. The GEMM (matmul) is not here: it is vt_cuda.cu's pipeline,
 * whose per-element code is rounding/vt_epilogue.h's. */
#ifndef VT_DEV_OPS_HD_H
#define VT_DEV_OPS_HD_H

#include <stddef.h>
#include <stdint.h>

#include "../../common/vt_hd.h"
#include "../../kernels/vt_cnn.h"
#include "../../kernels/vt_cnn_hd.h"
#include "../../kernels/vt_gpt_hd.h"
#include "../../kernels/vt_kernels.h"
#include "../../kernels/vt_kernels_hd.h"
#include "../../ops/vt_ops.h"
#include "../../ops/vt_philox_hd.h"
#include "../../rounding/vt_round_hd.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The arguments of a device operation: one struct per group of kinds, named for what it holds, in
 * the union vt_dev_op.a (the member its kind reads; vt_dev_op_make sets it). No field means two
 * things: the kinds that share a struct read every field alike. */
typedef struct {
    size_t rows, cols;    /* a row-major [rows, cols] input (bias, layer norm, affine, softmax) */
} vt_dev_rows;
typedef struct {
    size_t rows, classes; /* the probabilities [rows, classes] */
    const uint8_t *labels; /* [rows] */
} vt_dev_xent;
typedef struct {
    size_t count;         /* the rows the statistics S1, S2 sum over (the mean's divisor) */
    size_t channels;      /* C: channel of element i is i mod C; running stats number variance from C */
} vt_dev_bn;
typedef struct {
    size_t n;             /* elements per output: the second output's elements are numbered from n */
} vt_dev_pair;
typedef struct {
    const double *t;      /* the F64 step count (Adam, AdamW; NULL for SGD) */
    const double *lr;     /* the F64 learning rate */
} vt_dev_opt;
typedef struct {
    size_t HW, C;         /* dx [B*HW, C] from dy [B, C] */
    float w;              /* the FP32 weight 1/HW (vt_avgpool_weight) */
} vt_dev_avgbwd;
typedef struct {
    size_t V, C, T;       /* vocabulary, width, context */
    const uint8_t *tokens; /* [B*T] */
} vt_dev_embed;
typedef struct {
    size_t V;             /* classes */
    const uint8_t *tokens;
} vt_dev_onehot;
typedef struct {
    size_t T;             /* the row length of [R, T]; row i sees positions <= i mod T */
} vt_dev_causal;
typedef struct {
    uint64_t seed, step;  /* Philox (seed, 4, step, key << 32 | i) */
    uint32_t key;         /* the mask's stream */
} vt_dev_dropout;
typedef struct {
    /* output (i, j) of [rows, cols] is sum_k a(i, j, k) b(i, j, k) over n terms (vt_reduce's
     * operands); b.p NULL: the constant wconst with zero strides */
    vt_strided a, b;
    size_t cols, n;
    float wconst;
} vt_dev_red;
typedef struct {
    size_t C, H, W;       /* an example [C*H*W] */
    uint32_t pad;         /* the crop's padding */
    int flip;             /* horizontal flips drawn */
    uint64_t seed, step;  /* the draws' Philox key and counter */
} vt_dev_augment;
typedef struct {
    size_t k, C, Co;      /* W [k*k*C, Co] -> W' [k*k*Co, C] */
} vt_dev_wperm;
typedef struct {
    size_t B, H, W, C, k; /* input [B*H*W, C], window = stride = k */
} vt_dev_maxpool;
typedef struct {
    size_t B, T, H, D;    /* heads [B*H*T, D], sequence [B*T, H*D] */
} vt_dev_heads;

typedef struct {
    uint16_t kind;        /* VT_OPK_* */
    uint8_t family;       /* vt_kind_family_of(kind), the items' first dispatch (set by vt_dev_op_make:
                           * the list's functions are host code) */
    uint32_t op_id;
    size_t n_items;       /* items (threads) */
    const float *in[6];   /* every input's address in the list's order (a U8 or F64 one is read
                           * through its typed pointer in a) */
    float *out[3];
    double f[4];          /* the real arguments, in the list's order (ops/vt_kinds.h names them) */
    vt_bound_cfg cfg;
    int record;           /* log rounding, recording */
    double *scratch;      /* row-wise kinds: their FP64 rows (scratch_n) */
    size_t scratch_n;
    vt_epi_res *res;      /* reductions: one decision per output element (res_n) */
    size_t res_n;
    unsigned long long *err; /* the operation's failure word: (index << 8) | code, all ones when none */
    uint64_t rounded_n;   /* elements it rounds (0: an exact kind) */
    union {               /* the kind's arguments: the member named in its case of vti_dev_op_item */
        vt_dev_rows rows;       /* bias_add, layer norm's kinds, affine, scale_columns, softmax */
        vt_dev_xent xent;       /* cross_entropy, its backward */
        vt_dev_bn bn;           /* batch norm's training kinds */
        vt_dev_pair pair;       /* adam_moments, adam_moments_scaled */
        vt_dev_opt opt;         /* sgd_apply, adam_apply, adamw_apply */
        vt_dev_avgbwd avgbwd;   /* global_avgpool_backward */
        vt_dev_embed embed;
        vt_dev_onehot onehot;
        vt_dev_causal causal;   /* causal_softmax, softmax_backward */
        vt_dev_dropout dropout;
        vt_dev_red red;         /* the strided reductions */
        vt_dev_augment augment;
        vt_conv_geom conv;      /* im2col, conv_grad_gather */
        vt_dev_wperm wperm;
        vt_dev_maxpool maxpool; /* maxpool, its backward */
        vt_dev_heads heads;     /* the four head moves */
    } a;
} vt_dev_op;

/* A convolution kind of step programs 2 and 3 (conv2d, conv2d_weight_grad, conv2d_input_grad) as the
 * device runs it: step program 1's GEMM C = op(A) B of the same operands, which the device forms in
 * scratch memory - A the im2col columns [B*Ho*Wo, k*k*C] of the input (conv2d: columns x W; the weight
 * gradient: columns^T x dY, K the batch's pixels) or the input gradient's gather G [B*H*W, k*k*Co] of dY
 * (G x W', W' [k*k*Co, C] the per-tap transpose of W) - then the GEMM pipeline (vt_cuda.cu) or, in a
 * tensor-core mode, the model's kernel. Exactly rounded, the GEMM of the formed operands gives the
 * kind's bits (docs/cnn.md "Step program 2"); in a tensor-core mode, program 1's (ops/vt_fam_gemm.c);
 * in log rounding only the input gradient runs so, its bound being the GEMM's (vt_dev_conv_make). */
typedef struct {
    vt_conv_geom g;       /* the gather's geometry: im2col's, or the input gradient's (g.C = Co, chw 0) */
    int dgrad;            /* A is the gather G of dY (vti_dev_dgather), else im2col's (vti_dev_im2col) */
    int ta;               /* the weight gradient: op(A) = A^T */
    size_t M, N, K;       /* the GEMM */
    size_t n_a, n_wp;     /* elements of A, and of W' (the input gradient; else 0) */
    size_t k, C, Co;      /* W's taps and channels: W [k*k*C, Co] */
} vt_dev_conv;

struct vt_model;
/* 1 and *d when operation op_id of m is a convolution kind the device forms as a GEMM (vt_dev_conv), 0
 * otherwise: another kind, a size the items do not take, or in log rounding conv2d and
 * conv2d_weight_grad, whose bound (the kind's own, docs/cnn.md "Step program 2") is not the GEMM
 * pipeline's, so that the log's record rule would differ: those run on the host. */
int vt_dev_conv_make(const struct vt_model *m, const vt_rctx *rctx, uint32_t op_id, vt_dev_conv *d);

/* Describes operation op_id of m for the device, its tensors' addresses given by ptr(ctx, t);
 * the caller sets d->scratch, d->res and d->err (sizes in scratch_n, res_n). 0 when the device
 * does not run it (then the CPU does, its tensors copied across): a kind the list (ops/vt_kinds.h)
 * does not mark VT_DEV_ITEM, a size the items do not take, or a rounded kind in a log replay (the
 * judge of the trainer's entries runs on the host). Each VT_DEV_ITEM kind has its case here and in
 * vti_dev_op_item (tests/unit/test_kinds.c, tests/unit/test_resident.c). */
int vt_dev_op_make(const struct vt_model *m, const vt_rctx *rctx, uint32_t op_id, uint64_t step,
                   void *(*ptr)(void *ctx, uint32_t t), void *ctx, vt_dev_op *d);
/* The host's part after the items ran: res holds the host copy of d->res (NULL when res_n = 0). */
vt_err vt_dev_op_finish(vt_rctx *rctx, const vt_dev_op *d, const vt_epi_res *res) VT_WARN_UNUSED;
/* The failure word of operation op_id (all ones: none) reported as the CPU reports that failure:
 * a label that is no class and an Adam step count that is no step as VT_ERR_ARG with the CPU's
 * message (from the host's copy of the labels or the step count: the CPU produced them), a value
 * failure through vt_epi_fail (the error, its message, rctx->fault). */
vt_err vt_dev_err_report(vt_rctx *rctx, const struct vt_model *m, uint32_t op_id, unsigned long long word) VT_WARN_UNUSED;

/* ---- the per-operation check (VT_CUDA_CHECK_OPS=1; docs/cuda.md "Operation by operation") ----
 * After each device operation its outputs come back and the CPU exec of the same operation runs on
 * the same inputs (the CPU reference, always present); the first difference stops the step:
 *   begin (before the device runs it): saves the host's copies of its inputs and outputs and puts
 *     the device's bytes there (fetch: a device tensor's bytes to the host);
 *   end (after it ran and its own failures were reported): fetches its outputs, runs the CPU exec
 *     (vt_model_exec_op, its own rounding context, no backend) and compares every output;
 *   restore (always): puts the host's copies back, so the check changes nothing. */
typedef vt_err (*vt_dev_fetch)(void *ctx, uint32_t t, void *host, size_t bytes);
typedef struct {
    uint8_t *saved; /* the host's copies of the operation's inputs and outputs, in order */
} vt_dev_check;
/* Output k of operation op_id as the device computed it (dev) against the CPU's (cpu), bit for bit:
 * VT_OK when alike, else VT_ERR_INTERNAL naming the first differing element, e.g.
 * "check: operation 4 (bias_add), output 0 (fc1.out): element 12 of 4096 differs:
 *  device 0x3f800001 (1.00000012), CPU 0x3f800000 (1)" */
vt_err vt_dev_check_compare(const struct vt_model *m, uint32_t op_id, uint32_t k, const void *dev,
                            const void *cpu) VT_WARN_UNUSED;
vt_err vt_dev_check_begin(struct vt_model *m, uint32_t op_id, vt_dev_fetch fetch, void *ctx,
                          vt_dev_check *c) VT_WARN_UNUSED;
vt_err vt_dev_check_end(struct vt_model *m, const vt_rctx *rctx, uint32_t op_id, uint64_t step, vt_dev_fetch fetch,
                        void *ctx) VT_WARN_UNUSED;
void vt_dev_check_restore(struct vt_model *m, uint32_t op_id, vt_dev_check *c);

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
    const vt_dev_red *R = &d->a.red;
    size_t i = e / R->cols, j = e % R->cols;
    const float *pa = R->a.p + i * R->a.si + j * R->a.sj;
    const float *pb = R->b.p ? R->b.p + i * R->b.si + j * R->b.sj : &R->wconst;
    size_t sa = R->a.sk, sb = R->b.p ? R->b.sk : 0;
    vt_xacc acc;
    vti_xacc_dot32(&acc, R->n, pa, sa, pb, sb);
    vt_epi_res r;
    r.B = vti_bound_of_terms(&d->cfg, R->n, pa, sa, pb, sb);
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
VT_HDI size_t vti_dev_head_seq(const vt_dev_heads *a, size_t i, size_t width, size_t part)
{
    size_t D = a->D, T = a->T, H = a->H, dd = i % D, r = i / D, t = r % T, h = (r / T) % H, b = r / (T * H);
    return (b * T + t) * width + part * H * D + h * D + dd;
}

/* the maximum of pooling window (b, oy, ox) in channel c (vt_cnn_hd.h, as the CPU's) */
VT_HDI size_t vti_dev_argmax(const vt_dev_maxpool *a, const float *x, size_t b, size_t oy, size_t ox, size_t c)
{
    return vti_argmax_f32(a->H, a->W, a->C, a->k, x, b, oy, ox, c);
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

/* element i of W' [k*k*Co, C] from W [k*k*C, Co] (vt_conv_wperm): W'[(t, co)][c] = W[(t, c)][co] */
VT_HDI float vti_dev_wperm(size_t C, size_t Co, const float *w, size_t i)
{
    size_t c = i % C, co = (i / C) % Co, t = i / (C * Co);
    return w[(t * C + c) * Co + co];
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

/* element e of a convolution kind's formed GEMM operand A (vt_dev_conv), from its first input */
VT_HDI float vti_dev_conv_a(const vt_dev_conv *d, const float *in0, size_t e)
{
    return d->dgrad ? vti_dev_dgather(&d->g, in0, e) : vti_dev_im2col(&d->g, in0, e);
}

/* Adam's and AdamW's step count: 0 when it is no step (then the operation's failure) */
VT_HDI int vti_dev_steps(const vt_dev_op *d, uint64_t *t)
{
    double v = *d->a.opt.t;
    if (!(v >= 1 && v <= 0x1p53) || v != (double)(uint64_t)v) {
        vti_dev_err(d->err, 0, VTI_EL_STEPS);
        return 0;
    }
    *t = (uint64_t)v;
    return 1;
}

/* ---- per family: item i of one kind, through its formula in the kernels' _hd.h headers ---- */

/* elementwise chains (VT_FAM_CHAIN): output element i (both outputs' element i for the pairs) */
VT_HDI void vti_dev_chain_item(const vt_dev_op *d, size_t i)
{
    unsigned long long *err = d->err;
    const float *const *in = d->in;
    float *const *out = d->out;
    const double *f = d->f;
    switch (d->kind) {
    case VT_OPK_BIAS_ADD:
        vti_dev_put32(vti_bias1(in[0][i], in[1][i % d->a.rows.cols]), &out[0][i], err, i);
        break;
    case VT_OPK_RELU: /* exact */
        out[0][i] = vti_relu1(in[0][i], in[0][i]);
        break;
    case VT_OPK_RELU_BWD: /* exact */
        out[0][i] = vti_relu1(in[0][i], in[1][i]);
        break;
    case VT_OPK_XENT_BWD: {
        const vt_dev_xent *a = &d->a.xent;
        size_t r = i / a->classes, c = i % a->classes;
        if (a->labels[r] >= a->classes) {
            vti_dev_err(err, i, VTI_EL_LABEL);
            break;
        }
        vti_dev_put32(vti_xent_bwd1(in[0][i], c == a->labels[r], (double)a->rows), &out[0][i], err, i);
        break;
    }
    case VT_OPK_ADD:
        vti_dev_put32(vti_add1(in[0][i], in[1][i]), &out[0][i], err, i);
        break;
    case VT_OPK_AVGPOOL_BWD: { /* dx[(b, t), c] = dy[b, c] w */
        const vt_dev_avgbwd *a = &d->a.avgbwd;
        vti_dev_put32(vti_avgpool_bwd1(in[0][(i / (a->HW * a->C)) * a->C + i % a->C], a->w), &out[0][i], err, i);
        break;
    }
    case VT_OPK_BN_CENTER:
        vti_dev_put32(vti_bn_center1(in[0][i], in[1][i % d->a.bn.channels], d->a.bn.count), &out[0][i], err, i);
        break;
    case VT_OPK_BN_APPLY: {
        size_t c = i % d->a.bn.channels;
        double r = vti_bn_rstd(in[1][c], d->a.bn.count, f[0]);
        vti_dev_put32(vti_bn_apply1(in[0][i], r, in[2][c], in[3][c]), &out[0][i], err, i);
        break;
    }
    case VT_OPK_BN_GAMMA_GRAD: /* channel i */
        vti_dev_put32(vti_bn_gamma_grad1(in[0][i], in[1][i], d->a.bn.count, f[0]), &out[0][i], err, i);
        break;
    case VT_OPK_BN_BACKWARD: {
        size_t c = i % d->a.bn.channels;
        vti_dev_put32(vti_bn_backward1(in[0][i], in[1][i], in[2][c], in[3][c], in[4][c], in[5][c], d->a.bn.count, f[0]),
                      &out[0][i], err, i);
        break;
    }
    case VT_OPK_BN_RUNNING: /* channel i; elements numbered mean then variance */
        vti_dev_put32(vti_bn_running_mean1(in[0][i], in[2][i], d->a.bn.count, f[0]), &out[0][i], err, i);
        vti_dev_put32(vti_bn_running_var1(in[1][i], in[3][i], d->a.bn.count, f[0]), &out[1][i], err,
                      d->a.bn.channels + i);
        break;
    case VT_OPK_SGD_VELOCITY:
        vti_dev_put32(vti_sgd_velocity1(in[0][i], in[1][i], in[2][i], f[0], f[1]), &out[0][i], err, i);
        break;
    case VT_OPK_SGD_APPLY:
        vti_dev_put32(vti_sgd_apply1(in[0][i], in[1][i], *d->a.opt.lr), &out[0][i], err, i);
        break;
    case VT_OPK_ADAM_MOMENTS: { /* elements numbered m then v */
        double m, v;
        vti_adam_moments1(in[0][i], in[1][i], in[2][i], f[0], f[1], 1.0 - f[0], 1.0 - f[1], &m, &v);
        vti_dev_put32(m, &out[0][i], err, i);
        vti_dev_put32(v, &out[1][i], err, d->a.pair.n + i);
        break;
    }
    case VT_OPK_ADAM_APPLY: {
        uint64_t t;
        if (!vti_dev_steps(d, &t)) break;
        const double bc1 = 1.0 - vti_powi(f[0], t), bc2 = 1.0 - vti_powi(f[1], t);
        vti_dev_put32(vti_adam_apply1(in[0][i], in[1][i], in[2][i], *d->a.opt.lr, bc1, bc2, f[2]), &out[0][i], err, i);
        break;
    }
    case VT_OPK_EMBED: { /* x[r, c] = wte[tok[r], c] + wpe[r mod T, c] */
        const vt_dev_embed *a = &d->a.embed;
        size_t r = i / a->C, c = i % a->C;
        if (a->tokens[r] >= a->V) {
            vti_dev_err(err, r, VTI_EL_TOKEN);
            break;
        }
        vti_dev_put32(vti_embed1(in[1][a->tokens[r] * a->C + c], in[2][(r % a->T) * a->C + c]), &out[0][i], err, i);
        break;
    }
    case VT_OPK_LN_CENTER:
        vti_dev_put32(vti_ln_center1(in[0][i], in[1][i / d->a.rows.cols], d->a.rows.cols), &out[0][i], err, i);
        break;
    case VT_OPK_LN_NORM:
        vti_dev_put32(vti_ln_norm1(in[0][i], vti_ln_rstd(in[1][i / d->a.rows.cols], d->a.rows.cols, f[0])), &out[0][i],
                      err, i);
        break;
    case VT_OPK_AFFINE: case VT_OPK_SCALE_COLS: {
        size_t c = i % d->a.rows.cols;
        vti_dev_put32(vti_affine1(in[0][i], in[1][c], in[2] ? &in[2][c] : NULL), &out[0][i], err, i);
        break;
    }
    case VT_OPK_LN_BACKWARD: {
        size_t r = i / d->a.rows.cols;
        vti_dev_put32(vti_ln_backward1(in[0][i], in[1][i], in[2][r], in[3][r], in[4][r], d->a.rows.cols, f[0]),
                      &out[0][i], err, i);
        break;
    }
    case VT_OPK_GELU:
        vti_dev_put32(vti_gelu1(in[0][i]), &out[0][i], err, i);
        break;
    case VT_OPK_GELU_BWD:
        vti_dev_put32(vti_gelu_backward1(in[0][i], in[1][i]), &out[0][i], err, i);
        break;
    case VT_OPK_SOFTMAX_BWD:
        vti_dev_put32(vti_softmax_backward1(in[0][i], in[1][i], in[2][i / d->a.causal.T], f[0]), &out[0][i], err, i);
        break;
    case VT_OPK_DROPOUT: { /* the mask from Philox (seed, 4, step, key << 32 | i), as the CPU draws it */
        const vt_dev_dropout *a = &d->a.dropout;
        vti_dev_put32(vti_dropout1(in[0][i], vti_dropout_keep(a->seed, a->step, a->key, i, f[0]), f[0]), &out[0][i],
                      err, i);
        break;
    }
    case VT_OPK_CLIP_FACTOR: /* one item */
        vti_dev_put32(vti_clip_factor1(in[0][0], f[0]), &out[0][0], err, 0);
        break;
    case VT_OPK_ADAM_SCALED: { /* elements numbered m then v */
        double m, v;
        vti_adam_scaled1(in[0][i], in[1][i], in[2][i], in[3][0], f[0], f[1], 1.0 - f[0], 1.0 - f[1], &m, &v);
        vti_dev_put32(m, &out[0][i], err, i);
        vti_dev_put32(v, &out[1][i], err, d->a.pair.n + i);
        break;
    }
    case VT_OPK_ADAMW: {
        uint64_t t;
        if (!vti_dev_steps(d, &t)) break;
        const double bc1 = 1.0 - vti_powi(f[0], t), bc2 = 1.0 - vti_powi(f[1], t);
        vti_dev_put32(vti_adamw1(in[0][i], in[1][i], in[2][i], *d->a.opt.lr, bc1, bc2, f[2], f[3]), &out[0][i], err,
                      i);
        break;
    }
    default: /* vt_dev_op_make accepted a kind this switch does not compute */
        vti_dev_err(err, 0, VTI_EL_INTERNAL);
        break;
    }
}

/* strided reductions (VT_FAM_REDUCE): output element i; the loss is one item */
VT_HDI void vti_dev_reduce_item(const vt_dev_op *d, size_t i)
{
    switch (d->kind) {
    case VT_OPK_COLSUM: case VT_OPK_COLDOT: case VT_OPK_AVGPOOL: case VT_OPK_POS_GRAD: case VT_OPK_ROW_SUM:
    case VT_OPK_ROW_DOT: case VT_OPK_SUMSQ:
        vti_dev_reduce(d, i);
        break;
    case VT_OPK_XENT_LOSS: { /* one item: the mean of the rows' terms, exactly */
        const vt_dev_xent *a = &d->a.xent;
        vt_xacc acc;
        vti_xacc_init(&acc);
        const double dn = (double)a->rows;
        for (size_t r = 0; r < a->rows; r++) {
            if (a->labels[r] >= a->classes) {
                vti_dev_err(d->err, 0, VTI_EL_LABEL);
                return;
            }
            vti_xacc_add(&acc, vti_xent_l1(d->in[0][r * a->classes + a->labels[r]], dn));
        }
        vti_dev_put32((double)vti_xacc_round32(&acc), &d->out[0][0], d->err, 0);
        break;
    }
    default:
        vti_dev_err(d->err, 0, VTI_EL_INTERNAL);
        break;
    }
}

/* row-wise kinds (VT_FAM_ROWWISE): row i, its FP64 values in the scratch */
VT_HDI void vti_dev_rowwise_item(const vt_dev_op *d, size_t i)
{
    switch (d->kind) {
    case VT_OPK_SOFTMAX: {
        size_t N = d->a.rows.cols;
        double *p = d->scratch + i * N;
        vti_softmax_row(N, d->in[0] + i * N, p);
        for (size_t c = 0; c < N; c++) vti_dev_put32(p[c], &d->out[0][i * N + c], d->err, i * N + c);
        break;
    }
    case VT_OPK_SOFTMAX_CAUSAL: { /* row i of [R, T] */
        size_t T = d->a.causal.T;
        double *p = d->scratch + i * T;
        vti_causal_softmax_row(T, i % T, d->f[0], d->in[0] + i * T, p);
        for (size_t j = 0; j < T; j++) vti_dev_put32(p[j], &d->out[0][i * T + j], d->err, i * T + j);
        break;
    }
    default:
        vti_dev_err(d->err, 0, VTI_EL_INTERNAL);
        break;
    }
}

/* gathers and moves (VT_FAM_MOVE, exact): output element i (for the head join: input element i) */
VT_HDI void vti_dev_move_item(const vt_dev_op *d, size_t i)
{
    const float *const *in = d->in;
    float *const *out = d->out;
    switch (d->kind) {
    case VT_OPK_AUGMENT: { /* element i of [B, C*H*W] */
        const vt_dev_augment *a = &d->a.augment;
        size_t dd = a->C * a->H * a->W, b = i / dd, e = i % dd;
        uint32_t oy, ox;
        int fl;
        vti_augment_draw(a->seed, a->step, b, a->pad, a->flip, &oy, &ox, &fl);
        int64_t src = vti_augment_source(a->H, a->W, a->pad, oy, ox, fl, e);
        out[0][i] = src < 0 ? 0.0f : in[0][b * dd + (size_t)src];
        break;
    }
    case VT_OPK_IM2COL:
        out[0][i] = vti_dev_im2col(&d->a.conv, in[0], i);
        break;
    case VT_OPK_CONV_DGATHER:
        out[0][i] = vti_dev_dgather(&d->a.conv, in[0], i);
        break;
    case VT_OPK_CONV_WPERM: /* W [k*k*C, Co] -> W' [k*k*Co, C] */
        out[0][i] = vti_dev_wperm(d->a.wperm.C, d->a.wperm.Co, in[0], i);
        break;
    case VT_OPK_MAXPOOL: {
        const vt_dev_maxpool *a = &d->a.maxpool;
        size_t Ho = a->H / a->k, Wo = a->W / a->k, c = i % a->C, r = i / a->C;
        out[0][i] = in[0][vti_dev_argmax(a, in[0], r / (Wo * Ho), (r / Wo) % Ho, r % Wo, c)];
        break;
    }
    case VT_OPK_MAXPOOL_BWD: { /* input element i gets the gradient of its window if it is the maximum */
        const vt_dev_maxpool *a = &d->a.maxpool;
        size_t Ho = a->H / a->k, Wo = a->W / a->k, c = i % a->C, r = i / a->C;
        size_t ix = r % a->W, iy = (r / a->W) % a->H, b = r / (a->W * a->H), oy = iy / a->k, ox = ix / a->k;
        size_t w = ((b * Ho + oy) * Wo + ox) * a->C + c;
        out[0][i] = vti_dev_argmax(a, in[0], b, oy, ox, c) == i ? in[1][w] : 0.0f;
        break;
    }
    case VT_OPK_ONEHOT: {
        const vt_dev_onehot *a = &d->a.onehot;
        size_t r = i / a->V, c = i % a->V;
        out[0][i] = a->tokens[r] < a->V && a->tokens[r] == c ? 1.0f : 0.0f;
        break;
    }
    case VT_OPK_HEADS_SPLIT: { /* item i of q, k and v */
        const vt_dev_heads *a = &d->a.heads;
        size_t C = a->H * a->D;
        out[0][i] = in[0][vti_dev_head_seq(a, i, 3 * C, 0)];
        out[1][i] = in[0][vti_dev_head_seq(a, i, 3 * C, 1)];
        out[2][i] = in[0][vti_dev_head_seq(a, i, 3 * C, 2)];
        break;
    }
    case VT_OPK_HEADS_JOIN: {
        const vt_dev_heads *a = &d->a.heads;
        size_t C = a->H * a->D;
        out[0][vti_dev_head_seq(a, i, 3 * C, 0)] = in[0][i];
        out[0][vti_dev_head_seq(a, i, 3 * C, 1)] = in[1][i];
        out[0][vti_dev_head_seq(a, i, 3 * C, 2)] = in[2][i];
        break;
    }
    case VT_OPK_HEADS_MERGE: /* head element i to its place in the sequence */
        out[0][vti_dev_head_seq(&d->a.heads, i, d->a.heads.H * d->a.heads.D, 0)] = in[0][i];
        break;
    case VT_OPK_HEADS_UNMERGE:
        out[0][i] = in[0][vti_dev_head_seq(&d->a.heads, i, d->a.heads.H * d->a.heads.D, 0)];
        break;
    default:
        vti_dev_err(d->err, 0, VTI_EL_INTERNAL);
        break;
    }
}

/* One item of a device operation: first by the kind's family, then by the kind within it. */
VT_HDI void vti_dev_op_item(const vt_dev_op *d, size_t i)
{
    switch (d->family) {
    case VT_FAM_CHAIN:
        vti_dev_chain_item(d, i);
        break;
    case VT_FAM_REDUCE:
        vti_dev_reduce_item(d, i);
        break;
    case VT_FAM_ROWWISE:
        vti_dev_rowwise_item(d, i);
        break;
    case VT_FAM_MOVE:
        vti_dev_move_item(d, i);
        break;
    default: /* loaders and GEMMs have no items */
        vti_dev_err(d->err, 0, VTI_EL_INTERNAL);
        break;
    }
}

#endif
