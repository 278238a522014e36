/* vt_fam_reduce.c - the strided reductions: each output element is one sum of many products (vt_reduce and
 * the kernels' sums), with a rigorous bound and an exact evaluator: column sums and dot products,
 * the loss, pooling averages, sums of squares, the position gradient. Their reduction axes
 * (vt_kinds.h red column) say which sums run over the batch.
 * Each kind's check, exec and cost, named by its stem in the list (vt_kinds.h). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../common/vt_bytes.h"
#include "../kernels/vt_cnn.h"
#include "../kernels/vt_gpt.h"
#include "../kernels/vt_kernels.h"
#include "../kernels/vt_kernels_hd.h"
#include "vt_ops_int.h"
#include "vt_philox.h"
#include "vt_philox_hd.h"

vt_err vti_xent_check(const vt_program *p, const vt_opdesc *o)
{
    const vt_tensor *x;
    VT_FORWARD_IF_ERROR(vti_op_rows(p, o, &x));
    VT_FORWARD_IF_ERROR(want(p, o, o->in[1], VT_DT_U8, x->shape[0], "labels"));
    VT_RETURN_ERROR_IF(x->shape[1] > 256, VT_ERR_INTERNAL, "program: \"%s\": more than 256 classes", o->name);
    return want(p, o, o->out[0], VT_DT_F32, o->kind == VT_OPK_XENT_LOSS ? 1 : x->n, "output");
}

/* this rank's terms of the loss: its rows' l_i */
typedef struct {
    const double *l;
    size_t N;
} xent_arg;
static vt_err xent_terms(void *arg, size_t i, vt_xacc *acc)
{
    const xent_arg *a = arg;
    (void)i;
    for (size_t r = 0; r < a->N; r++) vt_xacc_add(acc, a->l[r]);
    return VT_OK;
}

vt_err vti_xent_exec(vt_opctx *c)
{
    const vt_tensor *x = T(c->prog, c->o->in[0]);
    if (c->shard) { /* the l_i of this rank's rows over the global row count, summed across the ranks */
        const size_t N = x->shape[0], C = x->shape[1];
        const float *P = IN(0);
        const uint8_t *y = (const uint8_t *)IN(1);
        const double dn = (double)vti_rows_global(c, N);
        double *l = c->s.x64, s = 0, sa = 0;
        for (size_t i = 0; i < N; i++)
            VT_RETURN_ERROR_IF(y[i] >= C, VT_ERR_ARG, "label %u of example %zu is not a class", y[i], i);
        vt_xent_terms(N, C, P, y, dn, l);
        for (size_t i = 0; i < N; i++) s += l[i], sa += fabs(l[i]);
        const vt_bound_cfg prov = {.mode = VT_BOUND_PROVABLE};
        double bound = vt_bound_coef(&prov, N) * sa;
        xent_arg arg = {l, N};
        return vti_round_batch_terms(c, &s, &bound, 1, xent_terms, &arg, OUT(0));
    }
    double lx, lb;
    vt_bounds bd;
    VT_FORWARD_IF_ERROR(
        vt_xent_loss(c->exec, x->shape[0], x->shape[1], IN(0), (const uint8_t *)IN(1), &lx, &lb, &bd));
    ROUND(&lx, &bd, 1, 1, OUT(0));
    return VT_OK;
}

void vti_xent_cost(const vt_program *p, const vt_opdesc *o, vt_opcost *out)
{
    cost_elementwise(p, o, 30, out);
    out->scratch = (double)T(p, o->in[0])->n;
}

vt_err vti_colsum_check(const vt_program *p, const vt_opdesc *o)
{
    const vt_tensor *x;
    VT_FORWARD_IF_ERROR(vti_op_rows(p, o, &x));
    return want(p, o, o->out[0], VT_DT_F32, x->shape[1], "output");
}

vt_err vti_colsum_exec(vt_opctx *c)
{
    const vt_tensor *x = T(c->prog, c->o->in[0]);
    vt_bounds bd;
    VT_FORWARD_IF_ERROR(vt_colsum(c->exec, x->shape[0], x->shape[1], IN(0), c->s.x64, c->s.b64, &bd));
    ROUND_BATCH(c->s.x64, &bd, 1, x->shape[1], OUT(0));
    return VT_OK;
}

void vti_colsum_cost(const vt_program *p, const vt_opdesc *o, vt_opcost *out)
{
    const vt_tensor *x = T(p, o->in[0]);
    out->flop = 2.0 * (double)x->n;
    out->bytes = 4.0 * ((double)x->n + x->shape[1]);
    out->scratch = x->shape[1];
    out->norms = 0;
}

/* ------------------------------------------------------------ COLDOT */
/* A, B [M, N] -> s [N]: s_j = sum_i A_ij B_ij */

vt_err vti_coldot_check(const vt_program *p, const vt_opdesc *o)
{
    const vt_tensor *x;
    VT_FORWARD_IF_ERROR(vti_op_rows(p, o, &x));
    VT_FORWARD_IF_ERROR(want(p, o, o->in[1], VT_DT_F32, x->n, "second factor"));
    return want(p, o, o->out[0], VT_DT_F32, x->shape[1], "output");
}

vt_err vti_coldot_exec(vt_opctx *c)
{
    const vt_tensor *x = T(c->prog, c->o->in[0]);
    vt_bounds bd;
    VT_FORWARD_IF_ERROR(vt_coldot(c->exec, x->shape[0], x->shape[1], IN(0), IN(1), c->s.x64, c->s.b64, &bd));
    ROUND_BATCH(c->s.x64, &bd, 1, x->shape[1], OUT(0));
    return VT_OK;
}

void vti_coldot_cost(const vt_program *p, const vt_opdesc *o, vt_opcost *out)
{
    const vt_tensor *x = T(p, o->in[0]);
    out->flop = 4.0 * (double)x->n; /* products and |products| of the bound */
    out->bytes = 8.0 * (double)x->n + 4.0 * x->shape[1];
    out->scratch = x->shape[1];
    out->norms = 0;
}

vt_err vti_avgpool_check(const vt_program *p, const vt_opdesc *o)
{
    size_t B = 0, HW = 0, C = 0;
    VT_FORWARD_IF_ERROR(gap_args(p, o, o->in[0], &B, &HW, &C));
    return want(p, o, o->out[0], VT_DT_F32, B * C, "output");
}

vt_err vti_avgpool_exec(vt_opctx *c)
{
    size_t B = 0, HW = 0, C = 0;
    VT_FORWARD_IF_ERROR(gap_args(c->prog, c->o, c->o->in[0], &B, &HW, &C));
    const float w = vt_avgpool_weight(HW); /* the reduction's second factor: lives until rounded */
    vt_bounds bd;
    VT_FORWARD_IF_ERROR(vt_reduce(c->exec, B, C, HW, (vt_strided){IN(0), HW * C, 1, C, 0, 0},
                                  (vt_strided){&w, 0, 0, 0, 0, 0}, c->s.x64, c->s.b64, &bd));
    ROUND(c->s.x64, &bd, B, C, OUT(0));
    return VT_OK;
}

void vti_avgpool_cost(const vt_program *p, const vt_opdesc *o, vt_opcost *out)
{
    const vt_tensor *x = T(p, o->in[0]);
    out->flop = 4.0 * (double)x->n;
    out->bytes = 4.0 * ((double)x->n + (double)T(p, o->out[0])->n);
    out->scratch = (double)T(p, o->out[0])->n;
    out->norms = 0;
}

/* POS_GRAD: dx [B*T, C] -> dwpe [T, C] = sum over b; iarg B, T */
vt_err vti_pos_grad_check(const vt_program *p, const vt_opdesc *o)
{
    const vt_tensor *x;
    VT_FORWARD_IF_ERROR(vti_op_rows(p, o, &x));
    ERR_IF(o->iarg[0] < 1 || o->iarg[1] < 1 || x->shape[0] != (uint64_t)(o->iarg[0] * o->iarg[1]),
           "program: \"%s\": bad position-gradient arguments", o->name);
    return f32_shape(p, o, o->out[0], (size_t)o->iarg[1] * x->shape[1], "output");
}

vt_err vti_pos_grad_exec(vt_opctx *c)
{
    const vt_tensor *x = T(c->prog, c->o->in[0]);
    const size_t B = (size_t)c->o->iarg[0], Tn = (size_t)c->o->iarg[1], C = x->shape[1];
    static const float one = 1.0f;
    vt_bounds bd;
    VT_FORWARD_IF_ERROR(vt_reduce(c->exec, Tn, C, B, (vt_strided){IN(0), C, 1, Tn * C, 0, 0},
                                  (vt_strided){&one, 0, 0, 0, 0, 0}, c->s.x64, c->s.b64, &bd));
    ROUND_BATCH(c->s.x64, &bd, Tn, C, OUT(0));
    return VT_OK;
}

void vti_pos_grad_cost(const vt_program *p, const vt_opdesc *o, vt_opcost *out)
{
    out->flop = 4.0 * (double)T(p, o->in[0])->n;
    out->bytes = 4.0 * ((double)T(p, o->in[0])->n + (double)T(p, o->out[0])->n);
    out->scratch = (double)T(p, o->out[0])->n;
    out->norms = 0;
}

/* ------------------------------------------------------------ row reductions */
/* ROW_SUM: x [M, N] -> [M]; ROW_DOT: a, b [M, N] -> [M] */

vt_err vti_row_sum_check(const vt_program *p, const vt_opdesc *o)
{
    const vt_tensor *x;
    VT_FORWARD_IF_ERROR(vti_op_rows(p, o, &x));
    for (uint32_t k = 1; k < o->n_in; k++) VT_FORWARD_IF_ERROR(f32_shape(p, o, o->in[k], x->n, "second factor"));
    return f32_shape(p, o, o->out[0], x->shape[0], "output");
}

vt_err vti_row_sum_exec(vt_opctx *c)
{
    const vt_tensor *x = T(c->prog, c->o->in[0]);
    const size_t M = x->shape[0], N = x->shape[1];
    static const float one = 1.0f;
    vt_strided b = c->o->n_in > 1 ? (vt_strided){IN(1), N, N, 1, 0, 0} : (vt_strided){&one, 0, 0, 0, 0, 0};
    vt_bounds bd;
    VT_FORWARD_IF_ERROR(
        vt_reduce(c->exec, M, 1, N, (vt_strided){IN(0), N, N, 1, 0, 0}, b, c->s.x64, c->s.b64, &bd));
    ROUND(c->s.x64, &bd, M, 1, OUT(0));
    return VT_OK;
}

void vti_row_sum_cost(const vt_program *p, const vt_opdesc *o, vt_opcost *out)
{
    out->flop = 4.0 * (double)T(p, o->in[0])->n;
    out->bytes = 4.0 * (double)o->n_in * (double)T(p, o->in[0])->n;
    out->scratch = (double)T(p, o->out[0])->n;
    out->norms = 0;
}

/* ------------------------------------------------------------ gradient norm and clipping */
/* SUMSQ: g -> [1] = sum g^2. SUM_SCALARS: n scalars [1] -> their sum [1]. CLIP_FACTOR: S [1] ->
 * factor [1]; farg max_norm. */

vt_err vti_sumsq_check(const vt_program *p, const vt_opdesc *o)
{
    ERR_IF(T(p, o->in[0])->dtype != VT_DT_F32, "program: \"%s\": not F32", o->name);
    return f32_shape(p, o, o->out[0], 1, "output");
}

vt_err vti_sumsq_exec(vt_opctx *c)
{
    size_t n = T(c->prog, c->o->in[0])->n;
    const float *g = IN(0);
    vt_bounds bd;
    VT_FORWARD_IF_ERROR(vt_reduce(c->exec, 1, 1, n, (vt_strided){g, 0, 0, 1, 0, 0}, (vt_strided){g, 0, 0, 1, 0, 0},
                                  c->s.x64, c->s.b64, &bd));
    ROUND(c->s.x64, &bd, 1, 1, OUT(0));
    return VT_OK;
}

void vti_sumsq_cost(const vt_program *p, const vt_opdesc *o, vt_opcost *out)
{
    out->flop = 4.0 * (double)T(p, o->in[0])->n;
    out->bytes = 4.0 * (double)T(p, o->in[0])->n;
    out->scratch = 1;
    out->norms = 0;
}

vt_err vti_sum_scalars_check(const vt_program *p, const vt_opdesc *o)
{
    ERR_IF(o->n_in < 1 || o->n_in > 4096, "program: \"%s\": 1..4096 scalars", o->name);
    for (uint32_t k = 0; k < o->n_in; k++) VT_FORWARD_IF_ERROR(f32_shape(p, o, o->in[k], 1, "scalar"));
    return f32_shape(p, o, o->out[0], 1, "output");
}

vt_err vti_sum_scalars_exec(vt_opctx *c)
{
    /* the scalars side by side (the reduction's first operand: lives until rounded) */
    float *v = c->s.f32s;
    for (uint32_t k = 0; k < c->o->n_in; k++) v[k] = *IN(k);
    static const float one = 1.0f;
    vt_bounds bd;
    VT_FORWARD_IF_ERROR(vt_reduce(c->exec, 1, 1, c->o->n_in, (vt_strided){v, 0, 0, 1, 0, 0},
                                  (vt_strided){&one, 0, 0, 0, 0, 0}, c->s.x64, c->s.b64, &bd));
    ROUND(c->s.x64, &bd, 1, 1, OUT(0));
    return VT_OK;
}

void vti_sum_scalars_cost(const vt_program *p, const vt_opdesc *o, vt_opcost *out)
{
    (void)p;
    memset(out, 0, sizeof *out);
    out->flop = 4.0 * o->n_in, out->bytes = 4.0 * o->n_in, out->scratch = o->n_in;
}

/* ------------------------------------------------------------ the plain forms (vt_plainctx) */

vt_err vti_xent_plain(vt_plainctx *c)
{
    VTI_PLAIN_BOTH(c, {
        size_t N = SHAPE(0, 0), C = SHAPE(0, 1);
        const real *pr = PX(0);
        const uint8_t *y = PTP(c, c->o->in[1]);
        VT_FORWARD_IF_ERROR(vti_labels_ok(N, C, y));
        real lsum = 0;
        for (size_t i = 0; i < N; i++) {
            real q = pr[i * C + y[i]];
            lsum += -PLOG(q < PTMIN ? PTMIN : q) / (real)N;
        }
        *PY(0) = lsum;
        return VT_OK;
    })
}

vt_err vti_colsum_plain(vt_plainctx *c)
{
    VTI_PLAIN_BOTH(c, {
        size_t M = SHAPE(0, 0), N = SHAPE(0, 1);
        const real *x = PX(0);
        real *s = PY(0);
        for (size_t j = 0; j < N; j++) s[j] = 0;
        for (size_t i = 0; i < M; i++)
            for (size_t j = 0; j < N; j++) s[j] += x[i * N + j];
        return VT_OK;
    })
}

vt_err vti_coldot_plain(vt_plainctx *c)
{
    VTI_PLAIN_BOTH(c, {
        size_t M = SHAPE(0, 0), N = SHAPE(0, 1);
        const real *a = PX(0), *b = PX(1);
        real *s = PY(0);
        for (size_t j = 0; j < N; j++) s[j] = 0;
        for (size_t i = 0; i < M; i++)
            for (size_t j = 0; j < N; j++) s[j] += a[i * N + j] * b[i * N + j];
        return VT_OK;
    })
}

vt_err vti_avgpool_plain(vt_plainctx *c)
{
    VTI_PLAIN_BOTH(c, {
        size_t B = (size_t)c->o->iarg[0], HW = (size_t)c->o->iarg[1], C = SHAPE(0, 1);
        const real *x = PX(0);
        real *y = PY(0);
        for (size_t b = 0; b < B; b++)
            for (size_t k = 0; k < C; k++) {
                real s = 0;
                for (size_t t = 0; t < HW; t++) s += x[(b * HW + t) * C + k];
                y[b * C + k] = s / (real)HW;
            }
        return VT_OK;
    })
}

vt_err vti_pos_grad_plain(vt_plainctx *c)
{
    VTI_PLAIN_BOTH(c, {
        const size_t B = (size_t)c->o->iarg[0], Tn = (size_t)c->o->iarg[1], C = SHAPE(0, 1);
        const real *dx = PX(0);
        real *d = PY(0);
        for (size_t i = 0; i < Tn * C; i++) d[i] = 0;
        for (size_t b = 0; b < B; b++)
            for (size_t i = 0; i < Tn * C; i++) d[i] += dx[b * Tn * C + i];
        return VT_OK;
    })
}

vt_err vti_row_sum_plain(vt_plainctx *c)
{
    VTI_PLAIN_BOTH(c, {
        const size_t M = SHAPE(0, 0), N = SHAPE(0, 1);
        const real *a = PX(0), *b = c->o->n_in > 1 ? PX(1) : NULL;
        real *s = PY(0);
        for (size_t i = 0; i < M; i++) {
            real acc = 0;
            for (size_t j = 0; j < N; j++) acc += b ? a[i * N + j] * b[i * N + j] : a[i * N + j];
            s[i] = acc;
        }
        return VT_OK;
    })
}

vt_err vti_sumsq_plain(vt_plainctx *c)
{
    VTI_PLAIN_BOTH(c, {
        const real *g = PX(0);
        real s = 0;
        for (size_t i = 0; i < c->prog->t[c->o->in[0]].n; i++) s += g[i] * g[i];
        *PY(0) = s;
        return VT_OK;
    })
}

vt_err vti_sum_scalars_plain(vt_plainctx *c)
{
    VTI_PLAIN_BOTH(c, {
        real s = 0;
        for (uint32_t k = 0; k < c->o->n_in; k++) s += *PX(k);
        *PY(0) = s;
        return VT_OK;
    })
}

/* global average pooling's backward: global_avgpool_backward(dY), the same B and HW */
vt_grad_rule vti_avgpool_grad(vt_program *p, const vt_opdesc *o, uint32_t i, const uint32_t *dy, uint32_t dx,
                              const char *layer)
{
    (void)i;
    if (dx != VT_GRAD_QUERY)
        vt_prog_op(p, VT_OPK_AVGPOOL_BWD, dy, 1, &dx, 1, o->iarg, o->n_iarg, NULL, 0, "%s backward", layer);
    return VT_GRAD_OPS;
}
