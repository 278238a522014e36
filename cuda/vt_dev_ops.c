/* vt_dev_ops.c - describing an operation for the device and the host's part after it ran
 * (vt_dev_ops_hd.h). Plain C: the CUDA backend and its CPU twin both call it. */
#include "vt_dev_ops_hd.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../kernels/vt_cnn.h"
#include "../model/vt_model.h"
#include "../rounding_log/vt_epilogue.h"

int vt_dev_op_make(const struct vt_model *m, const vt_rctx *rc, uint32_t op_id, uint64_t step,
                   void *(*ptr)(void *ctx, uint32_t t), void *ctx, vt_dev_op *d)
{
    const vt_opdesc *o = &m->prog.op[op_id];
    memset(d, 0, sizeof *d);
    d->kind = o->kind;
    d->op_id = op_id;
    d->cfg = rc->bound;
    d->record = rc->bound.rounding == VT_ROUNDING_LOG;
    /* the list (model/vt_kinds.h) says which kinds have device items; the others run on the host */
    if (vt_kind_device(o->kind) != VT_DEV_ITEM) return 0;
    if (o->n_in == 0 || o->n_in == VT_VARIADIC || o->n_out == 0) return 0; /* none of the device kinds */
    const vt_tensor *t0 = &m->prog.t[o->in[0]];
    size_t n_out = m->prog.t[o->out[0]].n;
    int exact_kind = !vt_kind_rounded(o->kind);
    switch (o->kind) {
    case VT_OPK_BIAS_ADD: case VT_OPK_XENT_BWD:
        d->M = t0->shape[0], d->N = t0->shape[1], d->n_items = t0->n, d->rounded_n = t0->n;
        break;
    case VT_OPK_RELU: case VT_OPK_RELU_BWD:
        d->M = n_out, d->n_items = n_out;
        break;
    case VT_OPK_SOFTMAX:
        d->M = t0->shape[0], d->N = t0->shape[1], d->n_items = d->M, d->rounded_n = t0->n, d->scratch_n = t0->n;
        break;
    case VT_OPK_XENT_LOSS:
        d->M = t0->shape[0], d->N = t0->shape[1], d->n_items = 1, d->rounded_n = 1;
        break;
    case VT_OPK_COLSUM: case VT_OPK_COLDOT: /* s_j = sum_i A_ij (B_ij or 1) */
        if (t0->shape[0] > VT_MAX_REDUCTION) return 0;
        d->M = t0->shape[0], d->N = t0->shape[1], d->n_items = d->N, d->rounded_n = d->N, d->res_n = d->N;
        d->rcols = d->N, d->rn = d->M, d->wconst = 1.0f;
        break;
    case VT_OPK_AVGPOOL: { /* y_bc = sum_t x_(b,t),c w over HW terms */
        size_t B = (size_t)o->iarg[0], HW = (size_t)o->iarg[1], C = t0->shape[1];
        d->pB = B, d->pk = HW, d->pC = C, d->n_items = d->res_n = d->rounded_n = B * C;
        d->rcols = C, d->rn = HW, d->wconst = vt_avgpool_weight(HW);
        break;
    }
    case VT_OPK_AVGPOOL_BWD: {
        size_t B = (size_t)o->iarg[0], HW = (size_t)o->iarg[1], C = t0->shape[1];
        d->pB = B, d->pk = HW, d->pC = C, d->n_items = d->rounded_n = n_out, d->wconst = vt_avgpool_weight(HW);
        break;
    }
    case VT_OPK_ADD:
        d->n_items = d->rounded_n = n_out;
        break;
    case VT_OPK_IM2COL: case VT_OPK_CONV_DGATHER: {
        const int64_t *a = o->iarg;
        if (vt_conv_geom_make(&d->g, a[0], a[1], a[2], a[3], a[4], a[5], a[6],
                              o->kind == VT_OPK_IM2COL ? (int)a[7] : 0) != VT_OK)
            return 0;
        d->n_items = n_out;
        break;
    }
    case VT_OPK_CONV_WPERM:
        d->pk = (size_t)o->iarg[0], d->pC = (size_t)o->iarg[1], d->pB = (size_t)o->iarg[2], d->n_items = n_out;
        break;
    case VT_OPK_MAXPOOL: case VT_OPK_MAXPOOL_BWD:
        d->pB = (size_t)o->iarg[0], d->pH = (size_t)o->iarg[1], d->pW = (size_t)o->iarg[2];
        d->pC = (size_t)o->iarg[3], d->pk = (size_t)o->iarg[4], d->n_items = n_out;
        break;
    case VT_OPK_BN_CENTER: case VT_OPK_BN_APPLY: case VT_OPK_BN_BACKWARD:
        d->M = t0->shape[0], d->N = t0->shape[1], d->n_items = d->rounded_n = t0->n;
        break;
    case VT_OPK_BN_GAMMA_GRAD:
        d->M = (size_t)o->iarg[0], d->N = n_out, d->n_items = d->rounded_n = n_out;
        break;
    case VT_OPK_BN_RUNNING:
        d->M = (size_t)o->iarg[0], d->N = n_out, d->n_items = n_out, d->rounded_n = 2 * n_out;
        break;
    /* the transformer */
    case VT_OPK_EMBED: {
        const vt_tensor *wte = &m->prog.t[o->in[1]];
        d->M = wte->shape[0], d->N = wte->shape[1], d->hT = t0->shape[1], d->n_items = d->rounded_n = n_out;
        break;
    }
    case VT_OPK_ONEHOT:
        d->N = (size_t)o->iarg[0], d->n_items = n_out;
        break;
    case VT_OPK_POS_GRAD: {
        size_t B = (size_t)o->iarg[0], Tn = (size_t)o->iarg[1], C = t0->shape[1];
        d->n_items = d->res_n = d->rounded_n = Tn * C, d->rcols = C, d->rn = B, d->wconst = 1.0f;
        d->hT = Tn, d->N = C;
        break;
    }
    case VT_OPK_ROW_SUM: case VT_OPK_ROW_DOT:
        if (t0->shape[1] > VT_MAX_REDUCTION) return 0;
        d->M = t0->shape[0], d->N = t0->shape[1], d->n_items = d->res_n = d->rounded_n = d->M;
        d->rcols = 1, d->rn = d->N, d->wconst = 1.0f;
        break;
    case VT_OPK_SUMSQ:
        if (t0->n > VT_MAX_REDUCTION) return 0;
        d->n_items = d->res_n = d->rounded_n = 1, d->rcols = 1, d->rn = t0->n;
        break;
    case VT_OPK_LN_CENTER: case VT_OPK_LN_NORM: case VT_OPK_AFFINE: case VT_OPK_SCALE_COLS: case VT_OPK_LN_BACKWARD:
        d->M = t0->shape[0], d->N = t0->shape[1], d->n_items = d->rounded_n = t0->n;
        break;
    case VT_OPK_GELU: case VT_OPK_GELU_BWD:
        d->n_items = d->rounded_n = n_out;
        break;
    case VT_OPK_AUGMENT: /* iarg C, H, W, pad, flip, seed */
        d->pB = (size_t)o->iarg[0], d->pH = (size_t)o->iarg[1], d->pW = (size_t)o->iarg[2], d->pk = (size_t)o->iarg[3];
        d->key = (uint32_t)o->iarg[4], d->seed = (uint64_t)o->iarg[5], d->step = step, d->n_items = n_out;
        if (o->out[0] == o->in[0]) return 0; /* each item reads other items' inputs */
        break;
    case VT_OPK_DROPOUT:
        d->n_items = d->rounded_n = n_out, d->step = step, d->seed = (uint64_t)o->iarg[0], d->key = (uint32_t)o->iarg[1];
        break;
    case VT_OPK_HEADS_SPLIT: case VT_OPK_HEADS_MERGE: case VT_OPK_HEADS_JOIN: case VT_OPK_HEADS_UNMERGE:
        d->hB = (size_t)o->iarg[0], d->hT = (size_t)o->iarg[1], d->hH = (size_t)o->iarg[2], d->hD = (size_t)o->iarg[3];
        d->n_items = d->hB * d->hT * d->hH * d->hD;
        break;
    case VT_OPK_SOFTMAX_CAUSAL:
        d->hT = (size_t)o->iarg[0], d->n_items = t0->shape[0], d->rounded_n = d->scratch_n = t0->n;
        break;
    case VT_OPK_SOFTMAX_BWD:
        d->hT = (size_t)o->iarg[0], d->n_items = d->rounded_n = t0->n;
        break;
    case VT_OPK_CLIP_FACTOR:
        d->n_items = d->rounded_n = 1;
        break;
    case VT_OPK_ADAM_SCALED:
        d->N = n_out, d->n_items = n_out, d->rounded_n = 2 * n_out;
        break;
    case VT_OPK_ADAMW:
        d->n_items = d->rounded_n = n_out;
        break;
    case VT_OPK_SGD_VELOCITY: case VT_OPK_SGD_APPLY: case VT_OPK_ADAM_APPLY:
        d->M = n_out, d->n_items = n_out, d->rounded_n = n_out;
        break;
    case VT_OPK_ADAM_MOMENTS:
        d->M = d->N = n_out, d->n_items = n_out, d->rounded_n = 2 * n_out;
        break;
    default:
        return 0;
    }
    if (!exact_kind && !vt_epi_supported(rc)) return 0; /* a log replay: judged on the host */
    for (uint32_t k = 0; k < o->n_in && k < 6; k++) d->in[k] = ptr(ctx, o->in[k]);
    for (uint32_t k = 0; k < o->n_out && k < 3; k++) d->out[k] = ptr(ctx, o->out[k]);
    for (uint32_t k = 0; k < o->n_farg && k < 4; k++) d->f[k] = o->farg[k];
    if (o->kind == VT_OPK_EMBED || o->kind == VT_OPK_ONEHOT) d->labels = ptr(ctx, o->in[0]);
    if (o->kind == VT_OPK_ADAMW) d->s0 = ptr(ctx, o->in[3]), d->s1 = ptr(ctx, o->in[4]);
    if (o->kind == VT_OPK_POS_GRAD) d->ra = (vt_strided){d->in[0], d->N, 1, d->hT * d->N, 0, 0};
    if (o->kind == VT_OPK_ROW_SUM) d->ra = (vt_strided){d->in[0], d->N, d->N, 1, 0, 0};
    if (o->kind == VT_OPK_ROW_DOT)
        d->ra = (vt_strided){d->in[0], d->N, d->N, 1, 0, 0}, d->rb = (vt_strided){d->in[1], d->N, d->N, 1, 0, 0};
    if (o->kind == VT_OPK_SUMSQ)
        d->ra = (vt_strided){d->in[0], 0, 0, 1, 0, 0}, d->rb = (vt_strided){d->in[0], 0, 0, 1, 0, 0};
    if (o->kind == VT_OPK_XENT_LOSS || o->kind == VT_OPK_XENT_BWD) d->labels = ptr(ctx, o->in[1]);
    if (o->kind == VT_OPK_SGD_APPLY) d->s0 = ptr(ctx, o->in[2]);
    if (o->kind == VT_OPK_ADAM_APPLY) d->s0 = ptr(ctx, o->in[3]), d->s1 = ptr(ctx, o->in[4]);
    if (o->kind == VT_OPK_COLSUM) d->ra = (vt_strided){d->in[0], 1, 1, d->N, 0, 0};
    if (o->kind == VT_OPK_COLDOT)
        d->ra = (vt_strided){d->in[0], 1, 1, d->N, 0, 0}, d->rb = (vt_strided){d->in[1], 1, 1, d->N, 0, 0};
    if (o->kind == VT_OPK_AVGPOOL) d->ra = (vt_strided){d->in[0], d->pk * d->pC, 1, d->pC, 0, 0};
    return 1;
}

vt_err vt_dev_op_finish(vt_rctx *rc, const vt_dev_op *d, const vt_epi_res *res)
{
    if (!d->rounded_n) return VT_OK;
    if (!d->res_n) return vt_epi_finish(rc, d->op_id, 1, (size_t)d->rounded_n, 0, NULL, NULL, NULL);
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
    vt_err e = vt_epi_finish(rc, d->op_id, 1, d->res_n, n, idx, h, NULL);
    if (!e) rc->stats.exact += d->res_n - n;
    free(h);
    free(idx);
    return e;
}

vt_err vt_dev_err_report(vt_rctx *rc, const struct vt_model *m, uint32_t op_id, unsigned long long word)
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
    return vt_epi_fail(rc, op_id, idx, &r);
}
