/* vt_dev_ops.c - describing an operation for the device and the host's part after it ran
 * (vt_dev_ops_hd.h). Plain C: the CUDA backend and its CPU twin both call it. */
#include "vt_dev_ops_hd.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../kernels/vt_cnn.h"
#include "../../model/vt_model.h"
#include "../../rounding/vt_epilogue.h"

/* what the family's describers read: the operation, its first input, its first output's size */
typedef struct {
    const vt_opdesc *o;
    const vt_tensor *t0;
    size_t n_out;
    uint64_t step;
} mk;

/* the operand (i, j, k) -> p[i si + j sj + k sk] of a reduction */
static vt_strided strided(const float *p, size_t si, size_t sj, size_t sk) { return (vt_strided){p, si, sj, sk, 0, 0}; }

static int make_chain(const vt_model *m, const mk *k, vt_dev_op *d)
{
    const vt_opdesc *o = k->o;
    const vt_tensor *t0 = k->t0;
    size_t n_out = k->n_out;
    switch (o->kind) {
    case VT_OPK_BIAS_ADD: case VT_OPK_LN_CENTER: case VT_OPK_LN_NORM: case VT_OPK_AFFINE: case VT_OPK_SCALE_COLS:
    case VT_OPK_LN_BACKWARD:
        d->a.rows = (vt_dev_rows){t0->shape[0], t0->shape[1]};
        d->n_items = d->rounded_n = t0->n;
        break;
    case VT_OPK_XENT_BWD:
        d->a.xent = (vt_dev_xent){t0->shape[0], t0->shape[1], (const uint8_t *)d->in[1]};
        d->n_items = d->rounded_n = t0->n;
        break;
    case VT_OPK_RELU: case VT_OPK_RELU_BWD: /* exact */
        d->n_items = n_out;
        break;
    case VT_OPK_ADD: case VT_OPK_SGD_VELOCITY: case VT_OPK_GELU: case VT_OPK_GELU_BWD:
        d->n_items = d->rounded_n = n_out;
        break;
    case VT_OPK_AVGPOOL_BWD: { /* iarg B, HW */
        size_t HW = (size_t)o->iarg[1];
        d->a.avgbwd = (vt_dev_avgbwd){HW, t0->shape[1], vt_avgpool_weight(HW)};
        d->n_items = d->rounded_n = n_out;
        break;
    }
    case VT_OPK_BN_CENTER: case VT_OPK_BN_APPLY: case VT_OPK_BN_BACKWARD:
        d->a.bn = (vt_dev_bn){t0->shape[0], t0->shape[1]};
        d->n_items = d->rounded_n = t0->n;
        break;
    case VT_OPK_BN_GAMMA_GRAD: /* iarg M */
        d->a.bn = (vt_dev_bn){(size_t)o->iarg[0], n_out};
        d->n_items = d->rounded_n = n_out;
        break;
    case VT_OPK_BN_RUNNING: /* iarg M; mean and variance */
        d->a.bn = (vt_dev_bn){(size_t)o->iarg[0], n_out};
        d->n_items = n_out, d->rounded_n = 2 * n_out;
        break;
    case VT_OPK_SGD_APPLY: /* w, v, lr */
        d->a.opt = (vt_dev_opt){NULL, (const double *)d->in[2]};
        d->n_items = d->rounded_n = n_out;
        break;
    case VT_OPK_ADAM_APPLY: case VT_OPK_ADAMW: /* w, m, v, t, lr */
        d->a.opt = (vt_dev_opt){(const double *)d->in[3], (const double *)d->in[4]};
        d->n_items = d->rounded_n = n_out;
        break;
    case VT_OPK_ADAM_MOMENTS: case VT_OPK_ADAM_SCALED: /* m and v */
        d->a.pair = (vt_dev_pair){n_out};
        d->n_items = n_out, d->rounded_n = 2 * n_out;
        break;
    case VT_OPK_EMBED: { /* tokens [B, T], wte [V, C], wpe */
        const vt_tensor *wte = &m->prog.t[o->in[1]];
        d->a.embed = (vt_dev_embed){wte->shape[0], wte->shape[1], t0->shape[1], (const uint8_t *)d->in[0]};
        d->n_items = d->rounded_n = n_out;
        break;
    }
    case VT_OPK_SOFTMAX_BWD: /* iarg T */
        d->a.causal = (vt_dev_causal){(size_t)o->iarg[0]};
        d->n_items = d->rounded_n = t0->n;
        break;
    case VT_OPK_DROPOUT: /* iarg seed, key */
        d->a.dropout = (vt_dev_dropout){(uint64_t)o->iarg[0], k->step, (uint32_t)o->iarg[1]};
        d->n_items = d->rounded_n = n_out;
        break;
    case VT_OPK_CLIP_FACTOR:
        d->n_items = d->rounded_n = 1;
        break;
    default:
        return 0;
    }
    return 1;
}

static int make_reduce(const mk *k, vt_dev_op *d)
{
    const vt_opdesc *o = k->o;
    const vt_tensor *t0 = k->t0;
    vt_dev_red *r = &d->a.red;
    const float *a = d->in[0], *b = d->in[1];
    switch (o->kind) {
    case VT_OPK_XENT_LOSS: /* one item */
        d->a.xent = (vt_dev_xent){t0->shape[0], t0->shape[1], (const uint8_t *)d->in[1]};
        d->n_items = d->rounded_n = 1;
        return 1;
    case VT_OPK_COLSUM: case VT_OPK_COLDOT: { /* s_j = sum_i A_ij (B_ij or 1) */
        size_t M = t0->shape[0], N = t0->shape[1];
        if (M > VT_MAX_REDUCTION) return 0;
        d->n_items = N;
        r->cols = N, r->n = M, r->wconst = 1.0f, r->a = strided(a, 1, 1, N);
        if (o->kind == VT_OPK_COLDOT) r->b = strided(b, 1, 1, N);
        break;
    }
    case VT_OPK_AVGPOOL: { /* y_bc = sum_t x_(b,t),c w over HW terms; iarg B, HW */
        size_t B = (size_t)o->iarg[0], HW = (size_t)o->iarg[1], C = t0->shape[1];
        d->n_items = B * C;
        r->cols = C, r->n = HW, r->wconst = vt_avgpool_weight(HW), r->a = strided(a, HW * C, 1, C);
        break;
    }
    case VT_OPK_POS_GRAD: { /* dwpe [T, C] = sum over the batch; iarg B, T */
        size_t B = (size_t)o->iarg[0], T = (size_t)o->iarg[1], C = t0->shape[1];
        d->n_items = T * C;
        r->cols = C, r->n = B, r->wconst = 1.0f, r->a = strided(a, C, 1, T * C);
        break;
    }
    case VT_OPK_ROW_SUM: case VT_OPK_ROW_DOT: { /* s_i = sum_j a_ij (b_ij or 1) */
        size_t M = t0->shape[0], N = t0->shape[1];
        if (N > VT_MAX_REDUCTION) return 0;
        d->n_items = M;
        r->cols = 1, r->n = N, r->wconst = 1.0f, r->a = strided(a, N, N, 1);
        if (o->kind == VT_OPK_ROW_DOT) r->b = strided(b, N, N, 1);
        break;
    }
    case VT_OPK_SUMSQ: /* sum g^2 */
        if (t0->n > VT_MAX_REDUCTION) return 0;
        d->n_items = 1;
        r->cols = 1, r->n = t0->n, r->a = strided(a, 0, 0, 1), r->b = strided(a, 0, 0, 1);
        break;
    default:
        return 0;
    }
    d->res_n = d->rounded_n = d->n_items; /* one decision per output element */
    return 1;
}

static int make_rowwise(const mk *k, vt_dev_op *d)
{
    const vt_tensor *t0 = k->t0;
    switch (k->o->kind) {
    case VT_OPK_SOFTMAX:
        d->a.rows = (vt_dev_rows){t0->shape[0], t0->shape[1]};
        break;
    case VT_OPK_SOFTMAX_CAUSAL: /* iarg T */
        d->a.causal = (vt_dev_causal){(size_t)k->o->iarg[0]};
        break;
    default:
        return 0;
    }
    d->n_items = t0->shape[0], d->rounded_n = d->scratch_n = t0->n; /* one row per item */
    return 1;
}

static int make_move(const mk *k, vt_dev_op *d)
{
    const vt_opdesc *o = k->o;
    const int64_t *a = o->iarg;
    d->n_items = k->n_out; /* output elements, but for the head moves */
    switch (o->kind) {
    case VT_OPK_AUGMENT: /* iarg C, H, W, pad, flip, seed */
        if (o->out[0] == o->in[0]) return 0; /* each item reads other items' inputs */
        d->a.augment = (vt_dev_augment){(size_t)a[0], (size_t)a[1], (size_t)a[2], (uint32_t)a[3], (int)a[4],
                                        (uint64_t)a[5], k->step};
        break;
    case VT_OPK_IM2COL: case VT_OPK_CONV_DGATHER: /* iarg B H W C k stride pad (chw) */
        if (vt_conv_geom_make(&d->a.conv, a[0], a[1], a[2], a[3], a[4], a[5], a[6],
                              o->kind == VT_OPK_IM2COL ? (int)a[7] : 0) != VT_OK)
            return 0;
        break;
    case VT_OPK_CONV_WPERM: /* iarg k, C, Co */
        d->a.wperm = (vt_dev_wperm){(size_t)a[0], (size_t)a[1], (size_t)a[2]};
        break;
    case VT_OPK_MAXPOOL: case VT_OPK_MAXPOOL_BWD: /* iarg B H W C k */
        d->a.maxpool = (vt_dev_maxpool){(size_t)a[0], (size_t)a[1], (size_t)a[2], (size_t)a[3], (size_t)a[4]};
        break;
    case VT_OPK_ONEHOT: /* iarg V */
        d->a.onehot = (vt_dev_onehot){(size_t)a[0], (const uint8_t *)d->in[0]};
        break;
    case VT_OPK_HEADS_SPLIT: case VT_OPK_HEADS_MERGE: case VT_OPK_HEADS_JOIN: case VT_OPK_HEADS_UNMERGE:
        d->a.heads = (vt_dev_heads){(size_t)a[0], (size_t)a[1], (size_t)a[2], (size_t)a[3]}; /* B T H D */
        d->n_items = d->a.heads.B * d->a.heads.T * d->a.heads.H * d->a.heads.D;
        break;
    default:
        return 0;
    }
    return 1; /* exact: nothing rounded */
}

int vt_dev_conv_make(const struct vt_model *m, const vt_rctx *rctx, uint32_t op_id, vt_dev_conv *d)
{
    const vt_opdesc *o = &m->prog.op[op_id];
    vt_conv_gemm cg;
    if (!vt_conv_as_gemm(o, &cg)) return 0;
    /* log rounding records by the kind's own bound: the input gradient's is program 1's GEMM's, the
     * forward pass's and the weight gradient's are not (no tight bound), so those two run on the host */
    if (rctx->bound.rounding != VT_ROUNDING_EXACT && !vt_gemm_arith_model((uint32_t)m->rcp.gemm_arith) && !cg.dgrad)
        return 0;
    memset(d, 0, sizeof *d);
    d->g = cg.g, d->dgrad = cg.dgrad, d->ta = cg.ta;
    d->M = cg.M, d->N = cg.N, d->K = cg.K, d->n_a = cg.n_a, d->n_wp = cg.n_wp;
    d->k = cg.g.k, d->C = cg.g.C, d->Co = cg.Co;
    if (d->dgrad) d->g.C = cg.Co, d->g.chw = 0; /* the gather of dY: conv_grad_gather's geometry (Ho, Wo as they are) */
    return 1;
}

int vt_dev_op_make(const struct vt_model *m, const vt_rctx *rctx, uint32_t op_id, uint64_t step,
                   void *(*ptr)(void *ctx, uint32_t t), void *ctx, vt_dev_op *d)
{
    const vt_opdesc *o = &m->prog.op[op_id];
    memset(d, 0, sizeof *d);
    d->kind = o->kind;
    d->family = (uint8_t)vt_kind_family_of(o->kind);
    d->op_id = op_id;
    d->cfg = rctx->bound;
    d->record = rctx->bound.rounding == VT_ROUNDING_LOG;
    /* the list (ops/vt_kinds.h) says which kinds have device items; the others run on the host */
    if (vt_kind_device(o->kind) != VT_DEV_ITEM) return 0;
    if (o->n_in == 0 || o->n_in == VT_VARIADIC || o->n_out == 0) return 0; /* none of the device kinds */
    /* the tensors' addresses and the real arguments first: the describers build on them */
    for (uint32_t k = 0; k < o->n_in && k < 6; k++) d->in[k] = ptr(ctx, o->in[k]);
    for (uint32_t k = 0; k < o->n_out && k < 3; k++) d->out[k] = ptr(ctx, o->out[k]);
    for (uint32_t k = 0; k < o->n_farg && k < 4; k++) d->f[k] = o->farg[k];
    mk desc = {o, &m->prog.t[o->in[0]], m->prog.t[o->out[0]].n, step};
    int ok = 0;
    switch (d->family) { /* first by the family, then by the kind within it */
    case VT_FAM_CHAIN: ok = make_chain(m, &desc, d); break;
    case VT_FAM_REDUCE: ok = make_reduce(&desc, d); break;
    case VT_FAM_ROWWISE: ok = make_rowwise(&desc, d); break;
    case VT_FAM_MOVE: ok = make_move(&desc, d); break;
    default: break; /* loaders and GEMMs have no items */
    }
    if (!ok) return 0;
    if (vt_kind_rounded(o->kind) && !vt_epi_supported(rctx)) return 0; /* a log replay: judged on the host */
    return 1;
}

vt_err vt_dev_op_finish(vt_rctx *rctx, const vt_dev_op *d, const vt_epi_res *res)
{
    if (!d->rounded_n) return VT_OK;
    if (!d->res_n) return vt_epi_finish(rctx, d->op_id, 1, (size_t)d->rounded_n, 0, NULL, NULL, NULL);
    /* reductions: the decisions with an entry or a failure; every output was evaluated exactly */
    vt_epi_res *h = malloc(d->res_n * sizeof *h);
    uint64_t *idx = malloc(d->res_n * sizeof *idx);
    if (!h || !idx) {
        free(h);
        free(idx);
        VT_RETURN_ERROR(VT_ERR_NOMEM, "out of memory");
    }
    uint64_t n = 0;
    for (size_t j = 0; j < d->res_n; j++)
        if (res[j].entry || res[j].code) h[n] = res[j], idx[n++] = j;
    vt_err e = vt_epi_finish(rctx, d->op_id, 1, d->res_n, n, idx, h, NULL);
    if (!e) rctx->stats.exact += d->res_n - n;
    free(h);
    free(idx);
    return e;
}

vt_err vt_dev_err_report(vt_rctx *rctx, const struct vt_model *m, uint32_t op_id, unsigned long long word)
{
    if (word == ~0ULL) return VT_OK;
    const vt_opdesc *o = &m->prog.op[op_id];
    int code = (int)(word & 0xff);
    uint64_t idx = (word & ~VTI_DEV_VALUE_FAIL) >> 8;
    if (code == VTI_EL_LABEL && o->n_in >= 2) {
        const vt_tensor *x = &m->prog.t[o->in[0]];
        const uint8_t *y = (const uint8_t *)vt_model_tensor((struct vt_model *)m, o->in[1], NULL);
        size_t N = x->shape[0], C = x->shape[1];
        for (size_t i = 0; i < N; i++)
            if (y[i] >= C) {
                if (o->kind == VT_OPK_XENT_LOSS)
                    VT_RETURN_ERROR(VT_ERR_ARG, "vt_xent_loss: label %u of row %zu not below %zu classes",
                                    (unsigned)y[i], i, C);
                VT_RETURN_ERROR(VT_ERR_ARG, "label %u of example %u is not a class", y[i], (unsigned)i);
            }
        VT_RETURN_ERROR(VT_ERR_INTERNAL, "operation %u: the device saw a label that is no class; the host none", op_id);
    }
    if (code == VTI_EL_STEPS && o->n_in >= 4) {
        double t;
        memcpy(&t, vt_model_tensor((struct vt_model *)m, o->in[3], NULL), 8);
        VT_RETURN_ERROR(VT_ERR_ARG, "%s's step count %g is not a step", o->kind == VT_OPK_ADAMW ? "AdamW" : "Adam", t);
    }
    if (code == VTI_EL_TOKEN && o->n_in >= 2) {
        const vt_tensor *tok = &m->prog.t[o->in[0]], *wte = &m->prog.t[o->in[1]];
        const uint8_t *t = (const uint8_t *)vt_model_tensor((struct vt_model *)m, o->in[0], NULL);
        for (size_t i = 0; i < tok->n; i++)
            if (t[i] >= wte->shape[0])
                VT_RETURN_ERROR(VT_ERR_ARG, "token %u at %zu is not in the vocabulary", t[i], i);
        VT_RETURN_ERROR(VT_ERR_INTERNAL, "operation %u: the device saw a token outside the vocabulary; the host none",
                        op_id);
    }
    vt_epi_res r;
    memset(&r, 0, sizeof r);
    r.code = (uint8_t)code;
    r.x = code == VTI_EL_RANGE ? (double)INFINITY : (double)NAN;
    return vt_epi_fail(rctx, op_id, idx, &r);
}

/* ---- the per-operation check (VT_CUDA_CHECK_OPS=1) ---- */

static uint32_t op_tensor(const vt_opdesc *o, uint32_t k) { return k < o->n_in ? o->in[k] : o->out[k - o->n_in]; }

vt_err vt_dev_check_compare(const struct vt_model *m, uint32_t op_id, uint32_t k, const void *dev, const void *cpu)
{
    const vt_opdesc *o = &m->prog.op[op_id];
    const vt_tensor *t = &m->prog.t[o->out[k]];
    size_t es = vt_dtype_size((vt_dtype)t->dtype);
    const uint8_t *a = (const uint8_t *)dev, *b = (const uint8_t *)cpu;
    VT_RETURN_ERROR_IF(es == 0 || es > 8, VT_ERR_INTERNAL, "check: tensor %s has no element size", t->name);
    for (size_t i = 0; i < t->n; i++) {
        if (memcmp(a + i * es, b + i * es, es) == 0) continue;
        uint64_t va = 0, vb = 0; /* the elements' bits (little-endian) */
        memcpy(&va, a + i * es, es);
        memcpy(&vb, b + i * es, es);
        char sa[40] = "", sb[40] = "";
        if (t->dtype == VT_DT_F32) {
            float x, y;
            memcpy(&x, a + i * es, 4);
            memcpy(&y, b + i * es, 4);
            snprintf(sa, sizeof sa, " (%.9g)", (double)x);
            snprintf(sb, sizeof sb, " (%.9g)", (double)y);
        } else if (t->dtype == VT_DT_F64) {
            double x, y;
            memcpy(&x, a + i * es, 8);
            memcpy(&y, b + i * es, 8);
            snprintf(sa, sizeof sa, " (%.17g)", x);
            snprintf(sb, sizeof sb, " (%.17g)", y);
        }
        VT_RETURN_ERROR(VT_ERR_INTERNAL,
                        "check: operation %u (%s), output %u (%s): element %zu of %zu differs: device 0x%0*llx%s, "
                        "CPU 0x%0*llx%s",
                        op_id, vt_opkind_get(o->kind)->name, k, t->name, i, t->n, (int)(2 * es),
                        (unsigned long long)va, sa, (int)(2 * es), (unsigned long long)vb, sb);
    }
    return VT_OK;
}

vt_err vt_dev_check_begin(struct vt_model *m, uint32_t op_id, vt_dev_fetch fetch, void *ctx, vt_dev_check *c)
{
    const vt_opdesc *o = &m->prog.op[op_id];
    uint32_t n = (uint32_t)o->n_in + o->n_out;
    size_t total = 0, bytes;
    memset(c, 0, sizeof *c);
    for (uint32_t k = 0; k < n; k++) {
        vt_model_tensor(m, op_tensor(o, k), &bytes);
        total += bytes;
    }
    c->saved = malloc(total ? total : 1);
    VT_RETURN_ERROR_IF(!c->saved, VT_ERR_NOMEM, "out of memory");
    uint8_t *p = c->saved;
    for (uint32_t k = 0; k < n; k++, p += bytes) {
        const void *h = vt_model_tensor(m, op_tensor(o, k), &bytes);
        memcpy(p, h, bytes);
    }
    for (uint32_t k = 0; k < n; k++) {
        void *h = vt_model_tensor(m, op_tensor(o, k), &bytes);
        VT_FORWARD_IF_ERROR(fetch(ctx, op_tensor(o, k), h, bytes));
    }
    return VT_OK;
}

vt_err vt_dev_check_end(struct vt_model *m, const vt_rctx *rctx, uint32_t op_id, uint64_t step, vt_dev_fetch fetch,
                        void *ctx)
{
    const vt_opdesc *o = &m->prog.op[op_id];
    size_t total = 0, bytes;
    for (uint32_t k = 0; k < o->n_out; k++) {
        vt_model_tensor(m, o->out[k], &bytes);
        total += bytes;
    }
    uint8_t *dev = malloc(total ? total : 1), *p = dev;
    VT_RETURN_ERROR_IF(!dev, VT_ERR_NOMEM, "out of memory");
    vt_err e = VT_OK;
    for (uint32_t k = 0; k < o->n_out && !e; k++, p += bytes) {
        vt_model_tensor(m, o->out[k], &bytes);
        e = fetch(ctx, o->out[k], p, bytes);
    }
    if (!e) { /* the CPU reference on the same inputs: its own rounding context (its log is dropped), no backend */
        vt_steplog log;
        vt_rctx cr;
        vt_steplog_init(&log, step);
        vt_rctx_init(&cr, VT_RMODE_RECORD, rctx->bound);
        e = vt_rctx_begin_step(&cr, step, &log);
        const vt_backend *be = m->be;
        m->be = NULL;
        if (!e) e = vt_model_exec_op(m, m->ds, &cr, step, op_id);
        m->be = be;
        vt_steplog_free(&log);
        if (e)
            e = vt_error_prefix(e, "check: operation %u (%s): the CPU reference fails where the device did not: ", op_id,
                                vt_opkind_get(o->kind)->name);
    }
    p = dev;
    for (uint32_t k = 0; k < o->n_out && !e; k++, p += bytes)
        e = vt_dev_check_compare(m, op_id, k, p, vt_model_tensor(m, o->out[k], &bytes));
    free(dev);
    return e;
}

void vt_dev_check_restore(struct vt_model *m, uint32_t op_id, vt_dev_check *c)
{
    const vt_opdesc *o = &m->prog.op[op_id];
    uint32_t n = (uint32_t)o->n_in + o->n_out;
    size_t bytes;
    if (c->saved) {
        const uint8_t *p = c->saved;
        for (uint32_t k = 0; k < n; k++, p += bytes) {
            void *h = vt_model_tensor(m, op_tensor(o, k), &bytes);
            memcpy(h, p, bytes);
        }
    }
    free(c->saved);
    c->saved = NULL;
}
