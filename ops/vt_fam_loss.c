/* vt_fam_loss.c - the losses of regression and multi-label models and their gradients (vt_kinds.h:
 * MSE_LOSS, MSE_BWD, L1_LOSS, L1_BWD, BCE_LOSS, BCE_BWD) and the loader of float targets
 * (LOAD_BATCH_TARGETS). Every output is RN32 of its exact mean (docs/rounding.md 2.6): a loss is the
 * exact sum of its elements' FP64 pieces in vt_xacc divided by the global batch's element count
 * B K by the rounding layer (vt_xacc_round32_quot; summed across the ranks when the batch is split,
 * vt_round_dist_quot32); a gradient element is RN32 of a short exact sum over B K
 * (vt_round_quot_sum32). The FP32 results then pass vt_round with bound 0 (nothing to log).
 * Each kind's check, exec, cost and plain form, named by its stem in the list. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../kernels/vt_kernels_hd.h"
#include "vt_ops_int.h"

/* ------------------------------------------------------------ shapes and counts */

/* y (or x) [B, K] F32 and t of its shape; the output a scalar (a loss) or y's shape (a gradient) */
static vt_err pair_check(const vt_program *p, const vt_opdesc *o, int scalar)
{
    const vt_tensor *y;
    VT_FORWARD_IF_ERROR(vti_op_rows(p, o, &y));
    ERR_IF(y->n == 0, "program: \"%s\": no elements", o->name);
    const vt_tensor *t = T(p, o->in[1]);
    ERR_IF(t->rank != 2 || t->shape[0] != y->shape[0] || t->shape[1] != y->shape[1],
           "program: \"%s\": the targets are not [%u, %u]", o->name, y->shape[0], y->shape[1]);
    VT_FORWARD_IF_ERROR(want(p, o, o->in[1], VT_DT_F32, y->n, "targets"));
    return want(p, o, o->out[0], VT_DT_F32, scalar ? 1 : y->n, "output");
}

/* the mean's count: the global batch's elements B K (this rank's rows over the global row count) */
static uint64_t mean_count(const vt_opctx *c)
{
    const vt_tensor *y = T(c->prog, c->o->in[0]);
    return (uint64_t)vti_rows_global(c, y->shape[0]) * y->shape[1];
}

/* the loss from its exact sum S (this rank's, when the batch is split): RN32(S / (B K)) of the global S,
 * written through vt_round with bound 0 in one process (a NaN or an overflow is its fault there) */
static vt_err loss_out(vt_opctx *c, const vt_xacc *S)
{
    const uint64_t n = mean_count(c);
    float f;
    if (c->shard) {
        VT_RETURN_ERROR_IF(c->rctx->bound.rounding != VT_ROUNDING_EXACT, VT_ERR_UNSUPPORTED,
                           "a batch split over ranks is rounded exactly: rounding=log needs one rank");
        VT_FORWARD_IF_ERROR(vt_round_dist_quot32(c->shard->comm, S, n, &f));
        c->rctx->stats.rounded++, c->rctx->stats.exact++;
        c->shard->n_dist++, c->shard->n_dist_exact++;
        VT_RETURN_ERROR_IF(!isfinite(f), VT_ERR_DIVERGED, "step %llu, operation %u (%s): the loss is %s",
                           (unsigned long long)c->step, c->op_id, c->o->name, isnan(f) ? "NaN" : "beyond FP32 range");
        *OUT(0) = f;
        return VT_OK;
    }
    f = vt_xacc_round32_quot(S, n);
    double x = (double)f;
    ROUND(&x, NULL, 1, 1, OUT(0));
    return VT_OK;
}

/* ------------------------------------------------------------ MSE_LOSS, L1_LOSS */

vt_err vti_reg_loss_check(const vt_program *p, const vt_opdesc *o) { return pair_check(p, o, 1); }

/* MSE: (y - t)^2 = y^2 + t^2 - 2 y t, three exact FP64 products of FP32 values; L1: |y - t| = |y + (-t)|,
 * the two FP32 values themselves with the sign of their exact difference (y - t in FP64 has it) */
vt_err vti_reg_loss_exec(vt_opctx *c)
{
    const size_t n = T(c->prog, c->o->in[0])->n;
    const float *y = IN(0), *t = IN(1);
    const int l1 = c->o->kind == VT_OPK_L1_LOSS;
    vt_xacc S;
    vt_xacc_init(&S);
    for (size_t i = 0; i < n; i++) {
        const double a = (double)y[i], b = (double)t[i];
        if (l1) {
            const double s = a - b < 0 ? -1.0 : 1.0; /* NaN: 1, and the NaN terms make S NaN */
            vt_xacc_add(&S, s * a);
            vt_xacc_add(&S, -s * b);
        } else {
            vt_xacc_add(&S, a * a);
            vt_xacc_add(&S, b * b);
            vt_xacc_add(&S, -2.0 * (a * b));
        }
    }
    return loss_out(c, &S);
}

void vti_reg_loss_cost(const vt_program *p, const vt_opdesc *o, vt_opcost *out)
{
    cost_elementwise(p, o, 12, out);
    out->flop = 12.0 * (double)T(p, o->in[0])->n;
    out->scratch = 1;
}

vt_err vti_reg_loss_plain(vt_plainctx *c)
{
    VTI_PLAIN_BOTH(c, {
        const size_t n = c->prog->t[c->o->in[0]].n;
        const real *y = PX(0), *t = PX(1);
        const int l1 = c->o->kind == VT_OPK_L1_LOSS;
        real s = 0;
        for (size_t i = 0; i < n; i++) {
            real d = y[i] - t[i];
            s += l1 ? (d < 0 ? -d : d) : d * d;
        }
        *PY(0) = s / (real)n;
        return VT_OK;
    })
}

/* ------------------------------------------------------------ MSE_BWD, L1_BWD */

vt_err vti_reg_bwd_check(const vt_program *p, const vt_opdesc *o) { return pair_check(p, o, 0); }

typedef struct {
    uint64_t n; /* B K of the global batch */
    float q;    /* L1: RN32(1 / n) */
} reg_bwd_arg;

/* MSE: RN32((2y - 2t) / n) (2y, 2t exact); L1: +-RN32(1 / n) by the sign of y - t, +0 where y = t */
static void reg_bwd_part(const vt_opctx *c, const void *arg, size_t lo, size_t hi)
{
    const reg_bwd_arg *a = arg;
    const float *y = IN(0), *t = IN(1);
    double *x = c->s.x64;
    if (c->o->kind == VT_OPK_L1_BWD) {
        for (size_t i = lo; i < hi; i++)
            x[i] = y[i] > t[i] ? (double)a->q : y[i] < t[i] ? -(double)a->q : y[i] == t[i] ? 0.0 : (double)NAN;
    } else {
        for (size_t i = lo; i < hi; i++) {
            const double v[2] = {2.0 * (double)y[i], -2.0 * (double)t[i]};
            x[i] = (double)vt_round_quot_sum32(v, 2, a->n);
        }
    }
}

/* a gradient: its elements' correctly rounded values by part over the threads, through vt_round (bound 0) */
static vt_err grad_run(vt_opctx *c, vti_chain_part part)
{
    const size_t n = NOUT(0);
    reg_bwd_arg a = {mean_count(c), 0.0f};
    const double one = 1.0;
    a.q = vt_round_quot_sum32(&one, 1, a.n);
    vti_chain_run(c, n, 1, part, &a);
    ROUND(c->s.x64, NULL, 1, n, OUT(0));
    return VT_OK;
}

vt_err vti_reg_bwd_exec(vt_opctx *c) { return grad_run(c, reg_bwd_part); }

void vti_reg_bwd_cost(const vt_program *p, const vt_opdesc *o, vt_opcost *out) { cost_elementwise(p, o, 12, out); }

vt_err vti_reg_bwd_plain(vt_plainctx *c)
{
    VTI_PLAIN_BOTH(c, {
        const size_t n = c->prog->t[c->o->in[0]].n;
        const real *y = PX(0), *t = PX(1);
        real *d = PY(0);
        const int l1 = c->o->kind == VT_OPK_L1_BWD;
        for (size_t i = 0; i < n; i++) {
            real v = y[i] - t[i];
            d[i] = l1 ? (real)((v > 0) - (v < 0)) / (real)n : 2 * v / (real)n;
        }
        return VT_OK;
    })
}

/* ------------------------------------------------------------ BCE_LOSS, BCE_BWD */

vt_err vti_bce_check(const vt_program *p, const vt_opdesc *o) { return pair_check(p, o, 1); }
vt_err vti_bce_bwd_check(const vt_program *p, const vt_opdesc *o) { return pair_check(p, o, 0); }

/* each element's max(x, 0) and -x t exactly (an FP32 value, an exact product), and the FP64 softplus
 * log(1 + exp(-|x|)) of the portable exp and log (vti_bce_softplus1: the same bits everywhere) */
vt_err vti_bce_exec(vt_opctx *c)
{
    const size_t n = T(c->prog, c->o->in[0])->n;
    const float *x = IN(0), *t = IN(1);
    vt_xacc S;
    vt_xacc_init(&S);
    for (size_t i = 0; i < n; i++) {
        vt_xacc_add(&S, x[i] > 0.0f ? (double)x[i] : 0.0);
        vt_xacc_add(&S, -((double)x[i] * (double)t[i]));
        vt_xacc_add(&S, vti_bce_softplus1(x[i]));
    }
    return loss_out(c, &S);
}

void vti_bce_cost(const vt_program *p, const vt_opdesc *o, vt_opcost *out)
{
    vti_reg_loss_cost(p, o, out);
    out->flop = 60.0 * (double)T(p, o->in[0])->n;
}

/* RN32((sigmoid(x) - t) / n) of the FP64 terms of the portable exp (vti_bce_bwd_terms) */
static void bce_bwd_part(const vt_opctx *c, const void *arg, size_t lo, size_t hi)
{
    const reg_bwd_arg *a = arg;
    const float *x = IN(0), *t = IN(1);
    for (size_t i = lo; i < hi; i++) {
        double v[3];
        const int k = vti_bce_bwd_terms(x[i], t[i], v);
        c->s.x64[i] = (double)vt_round_quot_sum32(v, (size_t)k, a->n);
    }
}

vt_err vti_bce_bwd_exec(vt_opctx *c) { return grad_run(c, bce_bwd_part); }

void vti_bce_bwd_cost(const vt_program *p, const vt_opdesc *o, vt_opcost *out) { cost_elementwise(p, o, 40, out); }

vt_err vti_bce_plain(vt_plainctx *c)
{
    VTI_PLAIN_BOTH(c, {
        const size_t n = c->prog->t[c->o->in[0]].n;
        const real *x = PX(0), *t = PX(1);
        real s = 0;
        for (size_t i = 0; i < n; i++) {
            real ax = x[i] < 0 ? -x[i] : x[i];
            s += (x[i] > 0 ? x[i] : 0) - x[i] * t[i] + PLOG(1 + PEXP(-ax));
        }
        *PY(0) = s / (real)n;
        return VT_OK;
    })
}

vt_err vti_bce_bwd_plain(vt_plainctx *c)
{
    VTI_PLAIN_BOTH(c, {
        const size_t n = c->prog->t[c->o->in[0]].n;
        const real *x = PX(0), *t = PX(1);
        real *d = PY(0);
        for (size_t i = 0; i < n; i++) d[i] = ((real)1 / (1 + PEXP(-x[i])) - t[i]) / (real)n;
        return VT_OK;
    })
}

/* ------------------------------------------------------------ LOAD_BATCH_TARGETS */
/* -> input [B, d] F32, targets [B, K] F32: LOAD_BATCH's examples (the same indices) and their targets */

vt_err vti_load_targets_check(const vt_program *p, const vt_opdesc *o)
{
    VT_FORWARD_IF_ERROR(vti_load_batch_input_check(p, o));
    const vt_tensor *t = T(p, o->out[1]);
    ERR_IF(t->rank != 2 || t->shape[0] != (uint64_t)o->iarg[0] || t->dtype != VT_DT_F32,
           "program: \"%s\": the targets are not [B, K] F32", o->name);
    return VT_OK;
}

vt_err vti_load_targets_exec(vt_opctx *c)
{
    VT_FORWARD_IF_ERROR(vti_load_batch_input(c));
    const vt_tensor *t = T(c->prog, c->o->out[1]);
    VT_RETURN_ERROR_IF(!c->ds->yt || c->ds->k_targets != t->shape[1], VT_ERR_ARG,
                       "the data set has %u float targets per example, the program %u", c->ds->k_targets, t->shape[1]);
    return vt_data_batch_targets(c->ds, c->batch_idx, (size_t)c->o->iarg[0], OUT(1));
}

void vti_load_targets_cost(const vt_program *p, const vt_opdesc *o, vt_opcost *out)
{
    memset(out, 0, sizeof *out);
    out->bytes = 4.0 * ((double)T(p, o->out[0])->n + (double)T(p, o->out[1])->n);
}

vt_err vti_load_targets_plain(vt_plainctx *c)
{
    VT_FORWARD_IF_ERROR(vt_plain_rows(c, c->o->out[0], NULL));
    const vt_tensor *t = T(c->prog, c->o->out[1]);
    const size_t B = (size_t)c->o->iarg[0], K = t->shape[1];
    VT_RETURN_ERROR_IF(!c->ds || !c->ds->yt || c->ds->k_targets != K, VT_ERR_ARG,
                       "the data set has no float targets of %zu per example", K);
    float *tf = PTP(c, c->o->out[1]);
    if (!c->f64) return vt_data_batch_targets(c->ds, c->batch_idx, B, tf);
    double *td = PTP(c, c->o->out[1]);
    for (size_t j = 0; j < B; j++)
        for (size_t k = 0; k < K; k++) {
            VT_RETURN_ERROR_IF(c->batch_idx[j] >= c->ds->n, VT_ERR_ARG, "batch entry %zu: no example %zu", j,
                               c->batch_idx[j]);
            td[j * K + k] = (double)c->ds->yt[c->batch_idx[j] * K + k];
        }
    return VT_OK;
}
