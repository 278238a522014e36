/* vt_fam_chain.c - the elementwise chains: every output element is a short fixed formula of the same element
 * of its inputs (and per-row or per-column vectors), computed in FP64 by the kernels' chain
 * headers (kernels/vt_kernels_hd.h, vt_cnn_hd.h, vt_gpt_hd.h, shared with the device items) and
 * rounded once by vt_round with its bound: bias, ReLU, the optimisers, residual addition, batch
 * and layer normalisation's elementwise parts, GELU, dropout, embeddings, clipping.
 * Each kind's check, exec and cost, named by its stem in the list (vt_kinds.h). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../common/vt_bytes.h"
#include "../common/vt_par.h"
#include "../kernels/vt_cnn.h"
#include "../kernels/vt_gpt.h"
#include "../kernels/vt_kernels.h"
#include "../kernels/vt_kernels_hd.h"
#include "vt_ops_int.h"
#include "vt_philox.h"
#include "vt_philox_hd.h"

vt_err vti_bias_add_check(const vt_program *p, const vt_opdesc *o)
{
    const vt_tensor *x = T(p, o->in[0]);
    VT_RETURN_ERROR_IF(x->rank != 2 || x->dtype != VT_DT_F32, VT_ERR_INTERNAL, "program: \"%s\": X is not [M, N] F32",
                       o->name);
    VT_FORWARD_IF_ERROR(want(p, o, o->in[1], VT_DT_F32, x->shape[1], "bias"));
    return want(p, o, o->out[0], VT_DT_F32, x->n, "output");
}

vt_err vti_bias_add_exec(vt_opctx *c)
{
    const vt_tensor *x = T(c->prog, c->o->in[0]);
    vt_bias_add(x->shape[0], x->shape[1], IN(0), IN(1), c->s.x64);
    ROUND(c->s.x64, NULL, x->shape[0], x->shape[1], OUT(0));
    return VT_OK;
}

void vti_bias_add_cost(const vt_program *p, const vt_opdesc *o, vt_opcost *out) { cost_elementwise(p, o, 1, out); }

/* ReLU and its gradient over the threads (common/vt_par.h): each output element is selected on its
 * own, so the bits are the same for every thread count */
typedef struct {
    const float *z, *da;
    float *out;
} relu_job;

static void relu_part(void *ctx, size_t lo, size_t hi, int part)
{
    const relu_job *j = ctx;
    (void)part;
    if (j->da)
        for (size_t i = lo; i < hi; i++) j->out[i] = j->z[i] > 0.0f ? j->da[i] : 0.0f;
    else
        for (size_t i = lo; i < hi; i++) j->out[i] = j->z[i] > 0.0f ? j->z[i] : 0.0f;
}

vt_err vti_relu_exec(vt_opctx *c) /* exact, nothing to round */
{
    (void)vt_par_for(NOUT(0), 32768, relu_part, &(relu_job){IN(0), NULL, OUT(0)});
    return VT_OK;
}

vt_err vti_relu_bwd_exec(vt_opctx *c) /* exact */
{
    (void)vt_par_for(NOUT(0), 32768, relu_part, &(relu_job){IN(0), IN(1), OUT(0)});
    return VT_OK;
}

static void relu_cost(const vt_program *p, const vt_opdesc *o, vt_opcost *out)
{
    cost_elementwise(p, o, 1, out);
    out->scratch = 0;
}

vt_err vti_relu_check(const vt_program *p, const vt_opdesc *o) { return vti_same_n_check(p, o); }
vt_err vti_relu_bwd_check(const vt_program *p, const vt_opdesc *o) { return vti_same_n_check(p, o); }
void vti_relu_cost(const vt_program *p, const vt_opdesc *o, vt_opcost *out) { relu_cost(p, o, out); }
void vti_relu_bwd_cost(const vt_program *p, const vt_opdesc *o, vt_opcost *out) { relu_cost(p, o, out); }

vt_err vti_xent_bwd_exec(vt_opctx *c)
{
    const vt_tensor *x = T(c->prog, c->o->in[0]);
    const uint8_t *y = (const uint8_t *)IN(1);
    for (uint32_t i = 0; i < x->shape[0]; i++) /* the kernel's precondition: labels < C */
        VT_RETURN_ERROR_IF(y[i] >= x->shape[1], VT_ERR_ARG, "label %u of example %u is not a class", y[i], i);
    vt_xent_backward(x->shape[0], x->shape[1], vti_rows_global(c, x->shape[0]), IN(0), y, c->s.x64);
    ROUND(c->s.x64, NULL, x->shape[0], x->shape[1], OUT(0));
    return VT_OK;
}

vt_err vti_xent_bwd_check(const vt_program *p, const vt_opdesc *o) { return vti_xent_check(p, o); }
void vti_xent_bwd_cost(const vt_program *p, const vt_opdesc *o, vt_opcost *out) { vti_xent_cost(p, o, out); }

/* ------------------------------------------------------------ optimisers */

static vt_err scalar_f64(const vt_program *p, const vt_opdesc *o, uint32_t k)
{
    return want(p, o, o->in[k], VT_DT_F64, 1, "scalar");
}

vt_err vti_sgd_apply_check(const vt_program *p, const vt_opdesc *o)
{
    size_t n = T(p, o->out[0])->n;
    VT_FORWARD_IF_ERROR(want(p, o, o->in[0], VT_DT_F32, n, "weights"));
    VT_FORWARD_IF_ERROR(want(p, o, o->in[1], VT_DT_F32, n, "velocity"));
    VT_FORWARD_IF_ERROR(want(p, o, o->out[0], VT_DT_F32, n, "output")); /* written as n FP32 values */
    return scalar_f64(p, o, 2);
}

vt_err vti_adam_moments_check(const vt_program *p, const vt_opdesc *o)
{
    size_t n = T(p, o->in[0])->n;
    for (uint32_t k = 0; k < 3; k++) VT_FORWARD_IF_ERROR(want(p, o, o->in[k], VT_DT_F32, n, "input"));
    for (uint32_t k = 0; k < 2; k++) VT_FORWARD_IF_ERROR(want(p, o, o->out[k], VT_DT_F32, n, "output"));
    return VT_OK;
}

vt_err vti_adam_apply_check(const vt_program *p, const vt_opdesc *o)
{
    size_t n = T(p, o->out[0])->n;
    for (uint32_t k = 0; k < 3; k++) VT_FORWARD_IF_ERROR(want(p, o, o->in[k], VT_DT_F32, n, "input"));
    VT_FORWARD_IF_ERROR(want(p, o, o->out[0], VT_DT_F32, n, "output")); /* written as n FP32 values */
    VT_FORWARD_IF_ERROR(scalar_f64(p, o, 3));
    return scalar_f64(p, o, 4);
}

static double f64_in(vt_opctx *c, uint32_t k)
{
    double v;
    memcpy(&v, IN(k), 8);
    return v;
}

vt_err vti_sgd_velocity_exec(vt_opctx *c)
{
    size_t n = NOUT(0);
    vt_sgd_velocity(n, IN(0), IN(1), IN(2), c->o->farg[0], c->o->farg[1], c->s.x64);
    ROUND(c->s.x64, NULL, 1, n, OUT(0));
    return VT_OK;
}

vt_err vti_sgd_apply_exec(vt_opctx *c)
{
    size_t n = NOUT(0);
    vt_sgd_apply(n, IN(0), IN(1), f64_in(c, 2), c->s.x64);
    ROUND(c->s.x64, NULL, 1, n, OUT(0));
    return VT_OK;
}

vt_err vti_adam_moments_exec(vt_opctx *c)
{
    /* both moments in one pass; their elements are numbered m then v (vt_ops.h) */
    size_t n = NOUT(0);
    vt_adam_moments(n, IN(0), IN(1), IN(2), c->o->farg[0], c->o->farg[1], c->s.x64, c->s.x64 + n);
    ROUND(c->s.x64, NULL, 1, 2 * n, c->s.f32s);
    memcpy(OUT(0), c->s.f32s, n * sizeof(float));
    memcpy(OUT(1), c->s.f32s + n, n * sizeof(float));
    return VT_OK;
}

vt_err vti_adam_apply_exec(vt_opctx *c)
{
    size_t n = NOUT(0);
    double t = f64_in(c, 3);
    VT_RETURN_ERROR_IF(!(t >= 1 && t <= 0x1p53) || t != (double)(uint64_t)t, VT_ERR_ARG,
                       "Adam's step count %g is not a step", t);
    vt_adam_apply(n, IN(0), IN(1), IN(2), f64_in(c, 4), c->o->farg[0], c->o->farg[1], c->o->farg[2], (uint64_t)t,
                  c->s.x64);
    ROUND(c->s.x64, NULL, 1, n, OUT(0));
    return VT_OK;
}

vt_err vti_sgd_velocity_check(const vt_program *p, const vt_opdesc *o) { return vti_same_n_check(p, o); }
void vti_sgd_velocity_cost(const vt_program *p, const vt_opdesc *o, vt_opcost *out) { cost_elementwise(p, o, 4, out); }
void vti_sgd_apply_cost(const vt_program *p, const vt_opdesc *o, vt_opcost *out) { cost_elementwise(p, o, 4, out); }
void vti_adam_moments_cost(const vt_program *p, const vt_opdesc *o, vt_opcost *out) { cost_elementwise(p, o, 12, out); }
void vti_adam_apply_cost(const vt_program *p, const vt_opdesc *o, vt_opcost *out) { cost_elementwise(p, o, 12, out); }

/* ------------------------------------------------------------ ADD */

vt_err vti_add_check(const vt_program *p, const vt_opdesc *o) { return vti_same_n_check(p, o); }

vt_err vti_add_exec(vt_opctx *c)
{
    size_t n = NOUT(0);
    vt_add(n, IN(0), IN(1), c->s.x64);
    ROUND(c->s.x64, NULL, 1, n, OUT(0));
    return VT_OK;
}

void vti_add_cost(const vt_program *p, const vt_opdesc *o, vt_opcost *out) { cost_elementwise(p, o, 1, out); }

/* SUB: a, b -> a - b (vti_sub1; bound 0) */
vt_err vti_sub_check(const vt_program *p, const vt_opdesc *o) { return vti_same_n_check(p, o); }

vt_err vti_sub_exec(vt_opctx *c)
{
    size_t n = NOUT(0);
    const float *a = IN(0), *b = IN(1);
    for (size_t i = 0; i < n; i++) c->s.x64[i] = vti_sub1(a[i], b[i]);
    ROUND(c->s.x64, NULL, 1, n, OUT(0));
    return VT_OK;
}

void vti_sub_cost(const vt_program *p, const vt_opdesc *o, vt_opcost *out) { cost_elementwise(p, o, 1, out); }

static vt_err eps_ok(const vt_opdesc *o, uint32_t k)
{
    ERR_IF(!(o->farg[k] > 0 && o->farg[k] < 1), "program: \"%s\": eps must be in (0, 1)", o->name);
    return VT_OK;
}

/* x [M, C], s1 [C] -> xc [M, C] */
vt_err vti_bn_center_check(const vt_program *p, const vt_opdesc *o)
{
    const vt_tensor *x;
    VT_FORWARD_IF_ERROR(vti_op_rows(p, o, &x));
    VT_FORWARD_IF_ERROR(f32_shape(p, o, o->in[1], x->shape[1], "column sum"));
    return want(p, o, o->out[0], VT_DT_F32, x->n, "output");
}

vt_err vti_bn_center_exec(vt_opctx *c)
{
    const vt_tensor *x = T(c->prog, c->o->in[0]);
    vt_bn_center(x->shape[0], x->shape[1], vti_rows_global(c, x->shape[0]), IN(0), IN(1), c->s.x64);
    ROUND(c->s.x64, NULL, x->shape[0], x->shape[1], OUT(0));
    return VT_OK;
}

void vti_bn_center_cost(const vt_program *p, const vt_opdesc *o, vt_opcost *out) { cost_elementwise(p, o, 2, out); }

/* xc [M, C], s2, gamma, beta [C] -> y; farg eps */
vt_err vti_bn_apply_check(const vt_program *p, const vt_opdesc *o)
{
    const vt_tensor *x;
    VT_FORWARD_IF_ERROR(vti_op_rows(p, o, &x));
    VT_FORWARD_IF_ERROR(eps_ok(o, 0));
    for (uint32_t k = 1; k < 4; k++) VT_FORWARD_IF_ERROR(f32_shape(p, o, o->in[k], x->shape[1], "channel vector"));
    return want(p, o, o->out[0], VT_DT_F32, x->n, "output");
}

vt_err vti_bn_apply_exec(vt_opctx *c)
{
    const vt_tensor *x = T(c->prog, c->o->in[0]);
    vt_bn_apply(x->shape[0], x->shape[1], vti_rows_global(c, x->shape[0]), IN(0), IN(1), IN(2), IN(3), c->o->farg[0],
                c->s.x64);
    ROUND(c->s.x64, NULL, x->shape[0], x->shape[1], OUT(0));
    return VT_OK;
}

void vti_bn_apply_cost(const vt_program *p, const vt_opdesc *o, vt_opcost *out) { cost_elementwise(p, o, 8, out); }

/* s1, s2, rm, rv [C] -> rm, rv; iarg M (rows of the statistics); farg momentum */
vt_err vti_bn_running_check(const vt_program *p, const vt_opdesc *o)
{
    size_t C = T(p, o->in[0])->n;
    ERR_IF(o->iarg[0] < 2 || o->iarg[0] > ((int64_t)1 << 40) || !(o->farg[0] >= 0 && o->farg[0] <= 1),
           "program: \"%s\": the running statistics need M >= 2 rows and a momentum in [0, 1]", o->name);
    for (uint32_t k = 0; k < 4; k++) VT_FORWARD_IF_ERROR(f32_shape(p, o, o->in[k], C, "channel vector"));
    for (uint32_t k = 0; k < 2; k++) VT_FORWARD_IF_ERROR(f32_shape(p, o, o->out[k], C, "running statistic"));
    return VT_OK;
}

vt_err vti_bn_running_exec(vt_opctx *c)
{
    /* both statistics in one pass; their elements are numbered mean then variance (vt_ops.h) */
    size_t C = NOUT(0);
    vt_bn_running(vti_rows_global(c, (size_t)c->o->iarg[0]), C, IN(0), IN(1), IN(2), IN(3), c->o->farg[0], c->s.x64);
    ROUND(c->s.x64, NULL, 1, 2 * C, c->s.f32s);
    memcpy(OUT(0), c->s.f32s, C * sizeof(float));
    memcpy(OUT(1), c->s.f32s + C, C * sizeof(float));
    return VT_OK;
}

void vti_bn_running_cost(const vt_program *p, const vt_opdesc *o, vt_opcost *out)
{
    cost_elementwise(p, o, 8, out);
}

/* g2, s2 [C] -> dgamma [C]; iarg M; farg eps */
vt_err vti_bn_gamma_grad_check(const vt_program *p, const vt_opdesc *o)
{
    size_t C = T(p, o->in[0])->n;
    ERR_IF(o->iarg[0] < 1 || o->iarg[0] > ((int64_t)1 << 40), "program: \"%s\": bad row count", o->name);
    VT_FORWARD_IF_ERROR(eps_ok(o, 0));
    VT_FORWARD_IF_ERROR(f32_shape(p, o, o->in[0], C, "channel vector"));
    VT_FORWARD_IF_ERROR(f32_shape(p, o, o->in[1], C, "channel vector"));
    return f32_shape(p, o, o->out[0], C, "output");
}

vt_err vti_bn_gamma_grad_exec(vt_opctx *c)
{
    size_t C = NOUT(0);
    vt_bn_gamma_grad(vti_rows_global(c, (size_t)c->o->iarg[0]), C, IN(0), IN(1), c->o->farg[0], c->s.x64);
    ROUND(c->s.x64, NULL, 1, C, OUT(0));
    return VT_OK;
}

void vti_bn_gamma_grad_cost(const vt_program *p, const vt_opdesc *o, vt_opcost *out)
{
    cost_elementwise(p, o, 4, out);
}

/* dy, xc [M, C], s2, g1, g2, gamma [C] -> dx; farg eps */
vt_err vti_bn_backward_check(const vt_program *p, const vt_opdesc *o)
{
    const vt_tensor *x;
    VT_FORWARD_IF_ERROR(vti_op_rows(p, o, &x));
    VT_FORWARD_IF_ERROR(eps_ok(o, 0));
    VT_FORWARD_IF_ERROR(want(p, o, o->in[1], VT_DT_F32, x->n, "centred input"));
    for (uint32_t k = 2; k < 6; k++) VT_FORWARD_IF_ERROR(f32_shape(p, o, o->in[k], x->shape[1], "channel vector"));
    return want(p, o, o->out[0], VT_DT_F32, x->n, "output");
}

vt_err vti_bn_backward_exec(vt_opctx *c)
{
    const vt_tensor *x = T(c->prog, c->o->in[0]);
    vt_bn_backward(x->shape[0], x->shape[1], vti_rows_global(c, x->shape[0]), IN(0), IN(1), IN(2), IN(3), IN(4), IN(5),
                   c->o->farg[0], c->s.x64);
    ROUND(c->s.x64, NULL, x->shape[0], x->shape[1], OUT(0));
    return VT_OK;
}

void vti_bn_backward_cost(const vt_program *p, const vt_opdesc *o, vt_opcost *out) { cost_elementwise(p, o, 14, out); }

/* x [M, C], rm, rv, gamma, beta [C] -> y; farg eps (evaluation) */
vt_err vti_bn_eval_check(const vt_program *p, const vt_opdesc *o)
{
    const vt_tensor *x;
    VT_FORWARD_IF_ERROR(vti_op_rows(p, o, &x));
    VT_FORWARD_IF_ERROR(eps_ok(o, 0));
    for (uint32_t k = 1; k < 5; k++) VT_FORWARD_IF_ERROR(f32_shape(p, o, o->in[k], x->shape[1], "channel vector"));
    return want(p, o, o->out[0], VT_DT_F32, x->n, "output");
}

vt_err vti_bn_eval_exec(vt_opctx *c)
{
    const vt_tensor *x = T(c->prog, c->o->in[0]);
    vt_bn_eval(x->shape[0], x->shape[1], IN(0), IN(1), IN(2), IN(3), IN(4), c->o->farg[0], c->s.x64);
    ROUND(c->s.x64, NULL, x->shape[0], x->shape[1], OUT(0));
    return VT_OK;
}

void vti_bn_eval_cost(const vt_program *p, const vt_opdesc *o, vt_opcost *out) { cost_elementwise(p, o, 8, out); }

vt_err vti_avgpool_backward_check(const vt_program *p, const vt_opdesc *o)
{
    size_t B = 0, HW = 0, C = 0;
    VT_FORWARD_IF_ERROR(gap_args(p, o, o->out[0], &B, &HW, &C));
    return want(p, o, o->in[0], VT_DT_F32, B * C, "output gradient");
}

vt_err vti_avgpool_backward_exec(vt_opctx *c)
{
    size_t B = 0, HW = 0, C = 0;
    VT_FORWARD_IF_ERROR(gap_args(c->prog, c->o, c->o->out[0], &B, &HW, &C));
    vt_avgpool_backward(B, HW, C, IN(0), vt_avgpool_weight(HW), c->s.x64);
    ROUND(c->s.x64, NULL, B * HW, C, OUT(0));
    return VT_OK;
}

void vti_avgpool_backward_cost(const vt_program *p, const vt_opdesc *o, vt_opcost *out)
{
    cost_elementwise(p, o, 1, out);
}

/* ------------------------------------------------------------ embeddings */
/* EMBED: tokens [B, T] U8, wte [V, C], wpe [T, C] -> x [B*T, C] */

vt_err vti_embed_check(const vt_program *p, const vt_opdesc *o)
{
    const vt_tensor *tok = T(p, o->in[0]), *wte = T(p, o->in[1]), *wpe = T(p, o->in[2]);
    ERR_IF(tok->rank != 2 || tok->dtype != VT_DT_U8 || wte->rank != 2 || wpe->rank != 2 || wte->dtype != VT_DT_F32 ||
               wpe->dtype != VT_DT_F32 || wpe->shape[0] != tok->shape[1] || wpe->shape[1] != wte->shape[1],
           "program: \"%s\": bad embedding shapes", o->name);
    return f32_shape(p, o, o->out[0], tok->n * wte->shape[1], "output");
}

vt_err vti_embed_exec(vt_opctx *c)
{
    const vt_tensor *tok = T(c->prog, c->o->in[0]), *wte = T(c->prog, c->o->in[1]);
    const uint8_t *t = (const uint8_t *)IN(0);
    for (size_t i = 0; i < tok->n; i++)
        VT_RETURN_ERROR_IF(t[i] >= wte->shape[0], VT_ERR_ARG, "token %u at %zu is not in the vocabulary", t[i], i);
    vt_embed(tok->shape[0], tok->shape[1], wte->shape[1], t, IN(1), IN(2), c->s.x64);
    ROUND(c->s.x64, NULL, tok->n, wte->shape[1], OUT(0));
    return VT_OK;
}

void vti_embed_cost(const vt_program *p, const vt_opdesc *o, vt_opcost *out) { cost_elementwise(p, o, 1, out); }

static vt_err colvec(const vt_program *p, const vt_opdesc *o, uint32_t id, size_t C)
{
    return f32_shape(p, o, id, C, "column vector");
}

/* LN_CENTER: x [M, C], S1 [M] -> xc */
vt_err vti_ln_center_check(const vt_program *p, const vt_opdesc *o)
{
    const vt_tensor *x;
    VT_FORWARD_IF_ERROR(vti_op_rows(p, o, &x));
    VT_FORWARD_IF_ERROR(rowvec(p, o, o->in[1], x->shape[0]));
    return f32_shape(p, o, o->out[0], x->n, "output");
}

vt_err vti_ln_center_exec(vt_opctx *c)
{
    const vt_tensor *x = T(c->prog, c->o->in[0]);
    vt_ln_center(x->shape[0], x->shape[1], IN(0), IN(1), c->s.x64);
    ROUND(c->s.x64, NULL, x->shape[0], x->shape[1], OUT(0));
    return VT_OK;
}

void vti_ln_center_cost(const vt_program *p, const vt_opdesc *o, vt_opcost *out) { cost_elementwise(p, o, 2, out); }

/* LN_NORM: xc [M, C], S2 [M] -> xhat; farg eps */
vt_err vti_ln_norm_check(const vt_program *p, const vt_opdesc *o)
{
    VT_FORWARD_IF_ERROR(eps_ok(o, 0));
    return vti_ln_center_check(p, o);
}

vt_err vti_ln_norm_exec(vt_opctx *c)
{
    const vt_tensor *x = T(c->prog, c->o->in[0]);
    vt_ln_norm(x->shape[0], x->shape[1], IN(0), IN(1), c->o->farg[0], c->s.x64);
    ROUND(c->s.x64, NULL, x->shape[0], x->shape[1], OUT(0));
    return VT_OK;
}

void vti_ln_norm_cost(const vt_program *p, const vt_opdesc *o, vt_opcost *out) { cost_elementwise(p, o, 2, out); }

/* AFFINE: x [M, C], gamma [C] (, beta [C]) -> gamma x (+ beta) */
vt_err vti_affine_check(const vt_program *p, const vt_opdesc *o)
{
    const vt_tensor *x;
    VT_FORWARD_IF_ERROR(vti_op_rows(p, o, &x));
    for (uint32_t k = 1; k < o->n_in; k++) VT_FORWARD_IF_ERROR(colvec(p, o, o->in[k], x->shape[1]));
    return f32_shape(p, o, o->out[0], x->n, "output");
}

vt_err vti_affine_exec(vt_opctx *c)
{
    const vt_tensor *x = T(c->prog, c->o->in[0]);
    vt_affine(x->shape[0], x->shape[1], IN(0), IN(1), c->o->n_in > 2 ? IN(2) : NULL, c->s.x64);
    ROUND(c->s.x64, NULL, x->shape[0], x->shape[1], OUT(0));
    return VT_OK;
}

void vti_affine_cost(const vt_program *p, const vt_opdesc *o, vt_opcost *out) { cost_elementwise(p, o, 2, out); }

/* LN_BWD: dyg, xhat [M, C], S2, G1, G2 [M] -> dx; farg eps */
vt_err vti_ln_backward_check(const vt_program *p, const vt_opdesc *o)
{
    const vt_tensor *x;
    VT_FORWARD_IF_ERROR(vti_op_rows(p, o, &x));
    VT_FORWARD_IF_ERROR(eps_ok(o, 0));
    VT_FORWARD_IF_ERROR(f32_shape(p, o, o->in[1], x->n, "normalised input"));
    for (uint32_t k = 2; k < 5; k++) VT_FORWARD_IF_ERROR(rowvec(p, o, o->in[k], x->shape[0]));
    return f32_shape(p, o, o->out[0], x->n, "output");
}

vt_err vti_ln_backward_exec(vt_opctx *c)
{
    const vt_tensor *x = T(c->prog, c->o->in[0]);
    vt_ln_backward(x->shape[0], x->shape[1], IN(0), IN(1), IN(2), IN(3), IN(4), c->o->farg[0], c->s.x64);
    ROUND(c->s.x64, NULL, x->shape[0], x->shape[1], OUT(0));
    return VT_OK;
}

void vti_ln_backward_cost(const vt_program *p, const vt_opdesc *o, vt_opcost *out)
{
    cost_elementwise(p, o, 6, out);
}

/* ------------------------------------------------------------ GELU */

vt_err vti_gelu_check(const vt_program *p, const vt_opdesc *o) { return vti_same_n_check(p, o); }

vt_err vti_gelu_exec(vt_opctx *c)
{
    size_t n = NOUT(0);
    if (c->o->n_in == 1) vt_gelu(n, IN(0), c->s.x64);
    else vt_gelu_backward(n, IN(0), IN(1), c->s.x64);
    ROUND(c->s.x64, NULL, 1, n, OUT(0));
    return VT_OK;
}

void vti_gelu_cost(const vt_program *p, const vt_opdesc *o, vt_opcost *out) { cost_elementwise(p, o, 40, out); }

/* ------------------------------------------------------------ dropout */
/* x -> y (forward) or dy -> dx (backward, the forward's mask); iarg seed, key; farg p in [0, 1) */

vt_err vti_dropout_check(const vt_program *p, const vt_opdesc *o)
{
    ERR_IF(!(o->farg[0] >= 0 && o->farg[0] < 1) || o->iarg[1] < 0 || o->iarg[1] > UINT32_MAX ||
               T(p, o->out[0])->n >= ((size_t)1 << 32),
           "program: \"%s\": bad dropout arguments (or 2^32 elements or more)", o->name);
    return vti_same_n_check(p, o);
}

int vt_dropout_keep(uint64_t seed, uint64_t step, uint32_t key, uint64_t e, double p)
{
    return vti_dropout_keep(seed, step, key, e, p);
}

vt_err vti_dropout_exec(vt_opctx *c)
{
    size_t n = NOUT(0);
    uint8_t *keep = (uint8_t *)c->s.f32s; /* n bytes of the FP32 scratch (n floats) */
    for (size_t i = 0; i < n; i++)
        keep[i] = (uint8_t)vt_dropout_keep((uint64_t)c->o->iarg[0], c->step, (uint32_t)c->o->iarg[1],
                                           vti_elem_global(c, n, i), c->o->farg[0]);
    vt_dropout(n, IN(0), keep, c->o->farg[0], c->s.x64);
    ROUND(c->s.x64, NULL, 1, n, OUT(0));
    return VT_OK;
}

void vti_dropout_cost(const vt_program *p, const vt_opdesc *o, vt_opcost *out) { cost_elementwise(p, o, 20, out); }

vt_err vti_clip_factor_check(const vt_program *p, const vt_opdesc *o)
{
    ERR_IF(!(o->farg[0] > 0), "program: \"%s\": max_norm must be positive", o->name);
    VT_FORWARD_IF_ERROR(f32_shape(p, o, o->in[0], 1, "squared norm"));
    return f32_shape(p, o, o->out[0], 1, "factor");
}

vt_err vti_clip_factor_exec(vt_opctx *c)
{
    double f = vt_clip_factor(*IN(0), c->o->farg[0]);
    ROUND(&f, NULL, 1, 1, OUT(0));
    return VT_OK;
}

void vti_clip_factor_cost(const vt_program *p, const vt_opdesc *o, vt_opcost *out)
{
    (void)p, (void)o;
    memset(out, 0, sizeof *out);
    out->flop = 4, out->bytes = 8, out->scratch = 1;
}

/* ------------------------------------------------------------ Adam(W) */
/* ADAM_MOMENTS_SCALED: g, m, v, s [1] -> m, v; farg b1, b2. ADAMW_APPLY: w, m, v, t, lr -> w;
 * farg b1, b2, eps, wd. */

vt_err vti_adam_scaled_check(const vt_program *p, const vt_opdesc *o)
{
    size_t n = T(p, o->in[0])->n;
    for (uint32_t k = 0; k < 3; k++) VT_FORWARD_IF_ERROR(f32_shape(p, o, o->in[k], n, "input"));
    VT_FORWARD_IF_ERROR(f32_shape(p, o, o->in[3], 1, "clipping factor"));
    for (uint32_t k = 0; k < 2; k++) VT_FORWARD_IF_ERROR(f32_shape(p, o, o->out[k], n, "output"));
    return VT_OK;
}

vt_err vti_adam_scaled_exec(vt_opctx *c)
{
    size_t n = NOUT(0);
    vt_adam_moments_scaled(n, IN(0), IN(1), IN(2), *IN(3), c->o->farg[0], c->o->farg[1], c->s.x64, c->s.x64 + n);
    ROUND(c->s.x64, NULL, 1, 2 * n, c->s.f32s);
    memcpy(OUT(0), c->s.f32s, n * sizeof(float));
    memcpy(OUT(1), c->s.f32s + n, n * sizeof(float));
    return VT_OK;
}

void vti_adam_scaled_cost(const vt_program *p, const vt_opdesc *o, vt_opcost *out) { cost_elementwise(p, o, 12, out); }

vt_err vti_adamw_check(const vt_program *p, const vt_opdesc *o)
{
    size_t n = T(p, o->out[0])->n;
    for (uint32_t k = 0; k < 3; k++) VT_FORWARD_IF_ERROR(f32_shape(p, o, o->in[k], n, "input"));
    VT_FORWARD_IF_ERROR(f32_shape(p, o, o->out[0], n, "output"));
    VT_FORWARD_IF_ERROR(want(p, o, o->in[3], VT_DT_F64, 1, "step count"));
    ERR_IF(!(o->farg[3] >= 0), "program: \"%s\": weight decay must be >= 0", o->name);
    return want(p, o, o->in[4], VT_DT_F64, 1, "learning rate");
}

vt_err vti_adamw_exec(vt_opctx *c)
{
    size_t n = NOUT(0);
    double t, lr;
    memcpy(&t, IN(3), 8);
    memcpy(&lr, IN(4), 8);
    VT_RETURN_ERROR_IF(!(t >= 1 && t <= 0x1p53) || t != (double)(uint64_t)t, VT_ERR_ARG,
                       "AdamW's step count %g is not a step", t);
    const double *f = c->o->farg;
    vt_adamw_apply(n, IN(0), IN(1), IN(2), lr, f[0], f[1], f[2], f[3], (uint64_t)t, c->s.x64);
    ROUND(c->s.x64, NULL, 1, n, OUT(0));
    return VT_OK;
}

void vti_adamw_cost(const vt_program *p, const vt_opdesc *o, vt_opcost *out) { cost_elementwise(p, o, 14, out); }

/* ------------------------------------------------------------ the plain forms (vt_plainctx) */

vt_err vti_bias_add_plain(vt_plainctx *c)
{
    VTI_PLAIN_BOTH(c, {
        size_t M = SHAPE(0, 0), N = SHAPE(0, 1);
        const T *x = PX(0), *b = PX(1);
        T *y = PY(0);
        for (size_t i = 0; i < M; i++)
            for (size_t j = 0; j < N; j++) y[i * N + j] = x[i * N + j] + b[j];
        return VT_OK;
    })
}

vt_err vti_relu_plain(vt_plainctx *c)
{
    VTI_PLAIN_BOTH(c, {
        const T *z = PX(0);
        T *a = PY(0);
        for (size_t i = 0; i < NOUT(0); i++) a[i] = z[i] > 0 ? z[i] : (T)0;
        return VT_OK;
    })
}

vt_err vti_relu_bwd_plain(vt_plainctx *c)
{
    VTI_PLAIN_BOTH(c, {
        const T *z = PX(0), *da = PX(1);
        T *dz = PY(0);
        for (size_t i = 0; i < NOUT(0); i++) dz[i] = z[i] > 0 ? da[i] : (T)0;
        return VT_OK;
    })
}

vt_err vti_xent_bwd_plain(vt_plainctx *c)
{
    VTI_PLAIN_BOTH(c, {
        size_t N = SHAPE(0, 0), C = SHAPE(0, 1);
        const T *pr = PX(0);
        const uint8_t *y = PTP(c, c->o->in[1]);
        VT_FORWARD_IF_ERROR(vti_labels_ok(N, C, y));
        T *dz = PY(0);
        for (size_t i = 0; i < N; i++)
            for (size_t k = 0; k < C; k++) dz[i * C + k] = (pr[i * C + k] - (k == y[i] ? (T)1 : (T)0)) / (T)N;
        return VT_OK;
    })
}

vt_err vti_sgd_velocity_plain(vt_plainctx *c)
{
    VTI_PLAIN_BOTH(c, {
        const T *w = PX(0), *g = PX(1), mu = (T)c->o->farg[0], wd = (T)c->o->farg[1];
        T *v = PY(0);
        for (size_t i = 0; i < NOUT(0); i++) v[i] = mu * v[i] + (g[i] + wd * w[i]);
        return VT_OK;
    })
}

vt_err vti_sgd_apply_plain(vt_plainctx *c)
{
    VTI_PLAIN_BOTH(c, {
        const T *v = PX(1), lr = (T)vti_plain_f64(c, c->o->in[2]);
        T *w = PY(0);
        for (size_t i = 0; i < NOUT(0); i++) w[i] = w[i] - lr * v[i];
        return VT_OK;
    })
}

vt_err vti_adam_moments_plain(vt_plainctx *c)
{
    VTI_PLAIN_BOTH(c, {
        const double b1 = c->o->farg[0], b2 = c->o->farg[1];
        const T *g = PX(0), tb1 = (T)b1, tb2 = (T)b2, c1 = (T)(1.0 - b1), c2 = (T)(1.0 - b2);
        T *m1 = PY(0), *m2 = PY(1);
        for (size_t i = 0; i < NOUT(0); i++) {
            m1[i] = tb1 * m1[i] + c1 * g[i];
            m2[i] = tb2 * m2[i] + (c2 * g[i]) * g[i];
        }
        return VT_OK;
    })
}

vt_err vti_adam_apply_plain(vt_plainctx *c)
{
    VTI_PLAIN_BOTH(c, {
        const double b1 = c->o->farg[0], b2 = c->o->farg[1], s = vti_plain_f64(c, c->o->in[3]);
        const T *m1 = PX(1), *m2 = PX(2), lr = (T)vti_plain_f64(c, c->o->in[4]), eps = (T)c->o->farg[2];
        const T bc1 = (T)(1.0 - pow(b1, s)), bc2 = (T)(1.0 - pow(b2, s));
        T *w = PY(0);
        for (size_t i = 0; i < NOUT(0); i++) w[i] = w[i] - (lr * (m1[i] / bc1)) / (PSQRT(m2[i] / bc2) + eps);
        return VT_OK;
    })
}

vt_err vti_add_plain(vt_plainctx *c)
{
    VTI_PLAIN_BOTH(c, {
        const T *a = PX(0), *b = PX(1);
        T *y = PY(0);
        for (size_t i = 0; i < NOUT(0); i++) y[i] = a[i] + b[i];
        return VT_OK;
    })
}

vt_err vti_bn_center_plain(vt_plainctx *c)
{
    VTI_PLAIN_BOTH(c, {
        size_t M = SHAPE(0, 0), C = SHAPE(0, 1);
        const T *x = PX(0), *s1 = PX(1);
        T *y = PY(0);
        for (size_t i = 0; i < M; i++)
            for (size_t k = 0; k < C; k++) y[i * C + k] = x[i * C + k] - s1[k] / (T)M;
        return VT_OK;
    })
}

vt_err vti_bn_apply_plain(vt_plainctx *c)
{
    VTI_PLAIN_BOTH(c, {
        size_t M = SHAPE(0, 0), C = SHAPE(0, 1);
        const T *xc = PX(0), *s2 = PX(1), *g = PX(2), *b = PX(3);
        T *y = PY(0);
        for (size_t i = 0; i < M; i++)
            for (size_t k = 0; k < C; k++) y[i * C + k] = g[k] * (xc[i * C + k] * PRSTD(s2[k], M, c->o->farg[0])) + b[k];
        return VT_OK;
    })
}

vt_err vti_bn_running_plain(vt_plainctx *c)
{
    VTI_PLAIN_BOTH(c, {
        size_t C = NOUT(0), M = (size_t)c->o->iarg[0];
        const T *s1 = PX(0), *s2 = PX(1), mu = (T)c->o->farg[0];
        T *rm = PY(0), *rv = PY(1);
        for (size_t k = 0; k < C; k++) {
            rm[k] = ((T)1 - mu) * rm[k] + mu * (s1[k] / (T)M);
            rv[k] = ((T)1 - mu) * rv[k] + mu * (s2[k] / (T)(M - 1));
        }
        return VT_OK;
    })
}

vt_err vti_bn_gamma_grad_plain(vt_plainctx *c)
{
    VTI_PLAIN_BOTH(c, {
        size_t C = NOUT(0), M = (size_t)c->o->iarg[0];
        const T *g2 = PX(0), *s2 = PX(1);
        T *d = PY(0);
        for (size_t k = 0; k < C; k++) d[k] = g2[k] * PRSTD(s2[k], M, c->o->farg[0]);
        return VT_OK;
    })
}

vt_err vti_bn_backward_plain(vt_plainctx *c)
{
    VTI_PLAIN_BOTH(c, {
        size_t M = SHAPE(0, 0), C = SHAPE(0, 1);
        const T *dy = PX(0), *xc = PX(1), *s2 = PX(2), *g1 = PX(3), *g2 = PX(4), *g = PX(5);
        T *dx = PY(0);
        for (size_t i = 0; i < M; i++)
            for (size_t k = 0; k < C; k++) {
                T r = PRSTD(s2[k], M, c->o->farg[0]);
                dx[i * C + k] = (g[k] * r) * ((dy[i * C + k] - g1[k] / (T)M) - xc[i * C + k] * ((r * r) * g2[k] / (T)M));
            }
        return VT_OK;
    })
}

vt_err vti_bn_eval_plain(vt_plainctx *c)
{
    VTI_PLAIN_BOTH(c, {
        size_t M = SHAPE(0, 0), C = SHAPE(0, 1);
        const T *x = PX(0), *rm = PX(1), *rv = PX(2), *g = PX(3), *b = PX(4);
        T *y = PY(0);
        for (size_t i = 0; i < M; i++)
            for (size_t k = 0; k < C; k++)
                y[i * C + k] = g[k] * ((x[i * C + k] - rm[k]) / PSQRT(rv[k] + (T)c->o->farg[0])) + b[k];
        return VT_OK;
    })
}

vt_err vti_avgpool_backward_plain(vt_plainctx *c)
{
    VTI_PLAIN_BOTH(c, {
        size_t B = (size_t)c->o->iarg[0], HW = (size_t)c->o->iarg[1], C = SHAPE(0, 1);
        const T *dy = PX(0);
        T *dx = PY(0);
        for (size_t b = 0; b < B; b++)
            for (size_t t = 0; t < HW; t++)
                for (size_t k = 0; k < C; k++) dx[(b * HW + t) * C + k] = dy[b * C + k] / (T)HW;
        return VT_OK;
    })
}

vt_err vti_embed_plain(vt_plainctx *c)
{
    VTI_PLAIN_BOTH(c, {
        const vt_tensor *tk = &c->prog->t[c->o->in[0]], *wt = &c->prog->t[c->o->in[1]];
        const size_t Tn = tk->shape[1], C = wt->shape[1];
        const uint8_t *tok = PTP(c, c->o->in[0]);
        const T *wte = PX(1), *wpe = PX(2);
        T *y = PY(0);
        for (size_t r = 0; r < tk->n; r++)
            VT_RETURN_ERROR_IF(tok[r] >= wt->shape[0], VT_ERR_ARG, "token %u is not in the vocabulary", tok[r]);
        for (size_t r = 0; r < tk->n; r++)
            for (size_t k = 0; k < C; k++) y[r * C + k] = wte[tok[r] * C + k] + wpe[(r % Tn) * C + k];
        return VT_OK;
    })
}

vt_err vti_ln_center_plain(vt_plainctx *c)
{
    VTI_PLAIN_BOTH(c, {
        const size_t M = SHAPE(0, 0), C = SHAPE(0, 1);
        const T *x = PX(0), *s1 = PX(1);
        T *y = PY(0);
        for (size_t i = 0; i < M; i++)
            for (size_t k = 0; k < C; k++) y[i * C + k] = x[i * C + k] - s1[i] / (T)C;
        return VT_OK;
    })
}

vt_err vti_ln_norm_plain(vt_plainctx *c)
{
    VTI_PLAIN_BOTH(c, {
        const size_t M = SHAPE(0, 0), C = SHAPE(0, 1);
        const T *xc = PX(0), *s2 = PX(1);
        T *y = PY(0);
        for (size_t i = 0; i < M; i++) {
            T r = PRSTD(s2[i], C, c->o->farg[0]);
            for (size_t k = 0; k < C; k++) y[i * C + k] = xc[i * C + k] * r;
        }
        return VT_OK;
    })
}

vt_err vti_affine_plain(vt_plainctx *c)
{
    VTI_PLAIN_BOTH(c, {
        const size_t M = SHAPE(0, 0), C = SHAPE(0, 1);
        const T *x = PX(0), *g = PX(1), *b = c->o->n_in > 2 ? PX(2) : NULL;
        T *y = PY(0);
        for (size_t i = 0; i < M; i++)
            for (size_t k = 0; k < C; k++) y[i * C + k] = g[k] * x[i * C + k] + (b ? b[k] : (T)0);
        return VT_OK;
    })
}

vt_err vti_ln_backward_plain(vt_plainctx *c)
{
    VTI_PLAIN_BOTH(c, {
        const size_t M = SHAPE(0, 0), C = SHAPE(0, 1);
        const T *dyg = PX(0), *xh = PX(1), *s2 = PX(2), *g1 = PX(3), *g2 = PX(4);
        T *dx = PY(0);
        for (size_t i = 0; i < M; i++) {
            T r = PRSTD(s2[i], C, c->o->farg[0]);
            for (size_t k = 0; k < C; k++) dx[i * C + k] = r * ((dyg[i * C + k] - g1[i] / (T)C) - xh[i * C + k] * (g2[i] / (T)C));
        }
        return VT_OK;
    })
}

vt_err vti_gelu_plain(vt_plainctx *c)
{
    VTI_PLAIN_BOTH(c, {
        const T *x = PX(0), *dy = c->o->n_in > 1 ? PX(1) : NULL, k0 = (T)0.7978845608028654, a0 = (T)0.044715;
        T *y = PY(0);
        for (size_t i = 0; i < NOUT(0); i++) {
            T v = x[i], th = PTANH(k0 * (v + a0 * v * v * v));
            if (!dy) y[i] = (T)0.5 * v * ((T)1 + th);
            else y[i] = dy[i] * ((T)0.5 * ((T)1 + th) + (T)0.5 * v * ((T)1 - th * th) * k0 * ((T)1 + (T)3 * a0 * v * v));
        }
        return VT_OK;
    })
}

vt_err vti_dropout_plain(vt_plainctx *c)
{
    VTI_PLAIN_BOTH(c, {
        const T *x = PX(0), sc = (T)(1.0 / (1.0 - c->o->farg[0]));
        T *y = PY(0);
        for (size_t i = 0; i < NOUT(0); i++)
            y[i] = vt_dropout_keep((uint64_t)c->o->iarg[0], c->step, (uint32_t)c->o->iarg[1], i, c->o->farg[0]) ? x[i] * sc
                                                                                                            : (T)0;
        return VT_OK;
    })
}

vt_err vti_clip_factor_plain(vt_plainctx *c)
{
    VTI_PLAIN_BOTH(c, {
        T nrm = PSQRT(*PX(0)), mx = (T)c->o->farg[0];
        *PY(0) = nrm > mx ? mx / (nrm + (T)1e-6) : (T)1;
        return VT_OK;
    })
}

vt_err vti_adam_scaled_plain(vt_plainctx *c)
{
    VTI_PLAIN_BOTH(c, {
        const double b1 = c->o->farg[0], b2 = c->o->farg[1];
        const T *g = PX(0), f = *PX(3), tb1 = (T)b1, tb2 = (T)b2, c1 = (T)(1.0 - b1), c2 = (T)(1.0 - b2);
        T *m1 = PY(0), *m2 = PY(1);
        for (size_t i = 0; i < NOUT(0); i++) {
            T gi = g[i] * f;
            m1[i] = tb1 * m1[i] + c1 * gi;
            m2[i] = tb2 * m2[i] + (c2 * gi) * gi;
        }
        return VT_OK;
    })
}

vt_err vti_adamw_plain(vt_plainctx *c)
{
    VTI_PLAIN_BOTH(c, {
        const double b1 = c->o->farg[0], b2 = c->o->farg[1], s = vti_plain_f64(c, c->o->in[3]);
        const T *m1 = PX(1), *m2 = PX(2), lr = (T)vti_plain_f64(c, c->o->in[4]), eps = (T)c->o->farg[2], wd = (T)c->o->farg[3];
        const T bc1 = (T)(1.0 - pow(b1, s)), bc2 = (T)(1.0 - pow(b2, s));
        T *w = PY(0);
        for (size_t i = 0; i < NOUT(0); i++) w[i] = w[i] - lr * ((m1[i] / bc1) / (PSQRT(m2[i] / bc2) + eps) + wd * w[i]);
        return VT_OK;
    })
}

vt_err vti_sub_plain(vt_plainctx *c)
{
    VTI_PLAIN_BOTH(c, {
        const T *a = PX(0), *b = PX(1);
        T *y = PY(0);
        for (size_t i = 0; i < NOUT(0); i++) y[i] = a[i] - b[i];
        return VT_OK;
    })
}
