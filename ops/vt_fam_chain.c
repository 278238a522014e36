/* vt_fam_chain.c - the elementwise chains: every output element is a short fixed formula of the same element
 * of its inputs (and per-row or per-column vectors), computed in FP64 by its formula in the kernels' shared
 * headers (kernels/vt_kernels_hd.h, vt_cnn_hd.h, vt_gpt_hd.h: the device items call the same), each
 * kind's host loop a part function run over the threads by vti_chain_run (vt_ops_int.h), and rounded
 * once with its bound (vt_round; a chain with bound 0 by vti_chain_round, which under exact rounding
 * converts each block as soon as it is formed): bias, ReLU, the optimisers, residual addition, batch
 * and layer normalisation's elementwise parts (their per-channel or per-row factors once per channel
 * or row), GELU, dropout, embeddings, clipping.
 * Each kind's check, exec and cost, named by its stem in the list (vt_kinds.h). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../common/vt_bytes.h"
#include "../kernels/vt_cnn.h"
#include "../kernels/vt_cnn_hd.h"
#include "../kernels/vt_gpt_hd.h"
#include "../kernels/vt_kernels_hd.h"
#include "../kernels/vt_math.h"
#include "vt_ops_int.h"
#include "vt_philox.h"
#include "vt_philox_hd.h"

/* the columns of input 0 (a row-wise chain's row length) */
static size_t cols0(const vt_opctx *c) { return T(c->prog, c->o->in[0])->shape[1]; }

/* a chain over input 0's rows, or over the output's elements, rounded into output 0 (bound 0) */
static vt_err chain_rows(vt_opctx *c, vti_chain_part part)
{
    const vt_tensor *x = T(c->prog, c->o->in[0]);
    return vti_chain_round(c, x->shape[0], x->shape[1], part, NULL, OUT(0));
}

static vt_err chain_elems(vt_opctx *c, vti_chain_part part, const void *arg)
{
    return vti_chain_round(c, NOUT(0), 1, part, arg, OUT(0));
}

vt_err vti_bias_add_check(const vt_program *p, const vt_opdesc *o)
{
    const vt_tensor *x = T(p, o->in[0]);
    VT_RETURN_ERROR_IF(x->rank != 2 || x->dtype != VT_DT_F32, VT_ERR_INTERNAL, "program: \"%s\": X is not [M, N] F32",
                       o->name);
    VT_FORWARD_IF_ERROR(want(p, o, o->in[1], VT_DT_F32, x->shape[1], "bias"));
    return want(p, o, o->out[0], VT_DT_F32, x->n, "output");
}

/* rows [r0, r1) of X [M, N] plus the bias */
static void bias_add_part(const vt_opctx *c, const void *arg, size_t r0, size_t r1)
{
    const size_t N = cols0(c);
    const float *x = IN(0), *b = IN(1);
    (void)arg;
    for (size_t i = r0; i < r1; i++)
        for (size_t j = 0; j < N; j++) c->s.x64[i * N + j] = vti_bias1(x[i * N + j], b[j]);
}

vt_err vti_bias_add_exec(vt_opctx *c) { return chain_rows(c, bias_add_part); }

/* ADD_POSITIONS: x [B*T, C], P (T*C values) -> y [B*T, C], y[r][j] = RN32(x[r][j] + P[(r mod T) C + j]) (an exact
 * FP64 sum rounded once, as bias_add's); a rank's rows are whole examples, so r mod T is the global row's */
vt_err vti_add_pos_check(const vt_program *p, const vt_opdesc *o)
{
    const vt_tensor *x = T(p, o->in[0]);
    const int64_t Tn = o->iarg[0];
    VT_RETURN_ERROR_IF(x->rank != 2 || x->dtype != VT_DT_F32 || Tn < 1 || x->shape[0] % (uint64_t)Tn, VT_ERR_INTERNAL,
                       "program: \"%s\": X is not [B*T, C] F32 of T = %lld rows per example", o->name, (long long)Tn);
    VT_FORWARD_IF_ERROR(want(p, o, o->in[1], VT_DT_F32, (size_t)Tn * x->shape[1], "positions"));
    return want(p, o, o->out[0], VT_DT_F32, x->n, "output");
}

static void add_pos_part(const vt_opctx *c, const void *arg, size_t r0, size_t r1)
{
    const size_t N = cols0(c), Tn = (size_t)c->o->iarg[0];
    const float *x = IN(0), *pe = IN(1);
    (void)arg;
    for (size_t i = r0; i < r1; i++)
        for (size_t j = 0; j < N; j++) c->s.x64[i * N + j] = vti_bias1(x[i * N + j], pe[i % Tn * N + j]);
}

vt_err vti_add_pos_exec(vt_opctx *c) { return chain_rows(c, add_pos_part); }

void vti_add_pos_cost(const vt_program *p, const vt_opdesc *o, vt_opcost *out) { cost_elementwise(p, o, 1, out); }

void vti_bias_add_cost(const vt_program *p, const vt_opdesc *o, vt_opcost *out) { cost_elementwise(p, o, 1, out); }

/* ReLU and its gradient: each output element selected on its own (exact, nothing to round) */
static void relu_part(const vt_opctx *c, const void *arg, size_t lo, size_t hi)
{
    const float *z = IN(0), *v = c->o->n_in > 1 ? IN(1) : z;
    float *out = OUT(0);
    (void)arg;
    for (size_t i = lo; i < hi; i++) out[i] = vti_relu1(z[i], v[i]);
}

vt_err vti_relu_exec(vt_opctx *c)
{
    vti_chain_run(c, NOUT(0), 1, relu_part, NULL);
    return VT_OK;
}

vt_err vti_relu_bwd_exec(vt_opctx *c) { return vti_relu_exec(c); }

static void relu_cost(const vt_program *p, const vt_opdesc *o, vt_opcost *out)
{
    cost_elementwise(p, o, 1, out);
    out->scratch = 0;
}

vt_err vti_relu_check(const vt_program *p, const vt_opdesc *o) { return vti_same_n_check(p, o); }
vt_err vti_relu_bwd_check(const vt_program *p, const vt_opdesc *o) { return vti_same_n_check(p, o); }
void vti_relu_cost(const vt_program *p, const vt_opdesc *o, vt_opcost *out) { relu_cost(p, o, out); }
void vti_relu_bwd_cost(const vt_program *p, const vt_opdesc *o, vt_opcost *out) { relu_cost(p, o, out); }

static void xent_bwd_part(const vt_opctx *c, const void *arg, size_t r0, size_t r1)
{
    const vt_tensor *x = T(c->prog, c->o->in[0]);
    const size_t C = x->shape[1];
    const double dn = (double)vti_rows_global(c, x->shape[0]);
    const float *pr = IN(0);
    const uint8_t *y = (const uint8_t *)IN(1);
    (void)arg;
    for (size_t i = r0; i < r1; i++)
        for (size_t k = 0; k < C; k++) c->s.x64[i * C + k] = vti_xent_bwd1(pr[i * C + k], k == y[i], dn);
}

vt_err vti_xent_bwd_exec(vt_opctx *c)
{
    const vt_tensor *x = T(c->prog, c->o->in[0]);
    const uint8_t *y = (const uint8_t *)IN(1);
    for (uint32_t i = 0; i < x->shape[0]; i++) /* the formula's precondition: labels < C */
        VT_RETURN_ERROR_IF(y[i] >= x->shape[1], VT_ERR_ARG, "label %u of example %u is not a class", y[i], i);
    return chain_rows(c, xent_bwd_part);
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

static void sgd_velocity_part(const vt_opctx *c, const void *arg, size_t lo, size_t hi)
{
    const float *w = IN(0), *g = IN(1), *v = IN(2);
    const double *f = c->o->farg;
    (void)arg;
    for (size_t i = lo; i < hi; i++) c->s.x64[i] = vti_sgd_velocity1(w[i], g[i], v[i], f[0], f[1]);
}

vt_err vti_sgd_velocity_exec(vt_opctx *c) { return chain_elems(c, sgd_velocity_part, NULL); }

static void sgd_apply_part(const vt_opctx *c, const void *arg, size_t lo, size_t hi)
{
    const float *w = IN(0), *v = IN(1);
    const double lr = *(const double *)arg;
    for (size_t i = lo; i < hi; i++) c->s.x64[i] = vti_sgd_apply1(w[i], v[i], lr);
}

vt_err vti_sgd_apply_exec(vt_opctx *c)
{
    const double lr = f64_in(c, 2);
    return chain_elems(c, sgd_apply_part, &lr);
}

/* both moments in one pass; their elements are numbered m then v (vt_ops.h); ADAM_SCALED's gradient
 * is scaled by the clipping factor (input 3) */
static void adam_moments_part(const vt_opctx *c, const void *arg, size_t lo, size_t hi)
{
    const size_t n = NOUT(0);
    const float *g = IN(0), *m = IN(1), *v = IN(2);
    const double b1 = c->o->farg[0], b2 = c->o->farg[1], c1 = 1.0 - b1, c2 = 1.0 - b2;
    double *mo = c->s.x64, *vo = c->s.x64 + n;
    (void)arg;
    if (c->o->kind == VT_OPK_ADAM_SCALED) {
        const float s = *IN(3);
        for (size_t i = lo; i < hi; i++) vti_adam_scaled1(g[i], m[i], v[i], s, b1, b2, c1, c2, &mo[i], &vo[i]);
    } else
        for (size_t i = lo; i < hi; i++) vti_adam_moments1(g[i], m[i], v[i], b1, b2, c1, c2, &mo[i], &vo[i]);
}

vt_err vti_adam_moments_exec(vt_opctx *c)
{
    size_t n = NOUT(0);
    vti_chain_run(c, n, 1, adam_moments_part, NULL);
    ROUND(c->s.x64, NULL, 1, 2 * n, c->s.f32s);
    memcpy(OUT(0), c->s.f32s, n * sizeof(float));
    memcpy(OUT(1), c->s.f32s + n, n * sizeof(float));
    return VT_OK;
}

/* Adam's and AdamW's update: lr, the bias corrections 1 - b^t (vti_powi) */
typedef struct {
    double lr, bc1, bc2;
} adam_k;

static vt_err adam_k_make(vt_opctx *c, const char *who, adam_k *k)
{
    double t = f64_in(c, 3);
    VT_RETURN_ERROR_IF(!(t >= 1 && t <= 0x1p53) || t != (double)(uint64_t)t, VT_ERR_ARG,
                       "%s's step count %g is not a step", who, t);
    k->lr = f64_in(c, 4);
    k->bc1 = 1.0 - vti_powi(c->o->farg[0], (uint64_t)t), k->bc2 = 1.0 - vti_powi(c->o->farg[1], (uint64_t)t);
    return VT_OK;
}

static void adam_apply_part(const vt_opctx *c, const void *arg, size_t lo, size_t hi)
{
    const adam_k *k = arg;
    const float *w = IN(0), *m = IN(1), *v = IN(2);
    const double *f = c->o->farg;
    if (c->o->kind == VT_OPK_ADAMW)
        for (size_t i = lo; i < hi; i++) c->s.x64[i] = vti_adamw1(w[i], m[i], v[i], k->lr, k->bc1, k->bc2, f[2], f[3]);
    else
        for (size_t i = lo; i < hi; i++) c->s.x64[i] = vti_adam_apply1(w[i], m[i], v[i], k->lr, k->bc1, k->bc2, f[2]);
}

vt_err vti_adam_apply_exec(vt_opctx *c)
{
    adam_k k;
    VT_FORWARD_IF_ERROR(adam_k_make(c, c->o->kind == VT_OPK_ADAMW ? "AdamW" : "Adam", &k));
    return chain_elems(c, adam_apply_part, &k);
}

vt_err vti_sgd_velocity_check(const vt_program *p, const vt_opdesc *o) { return vti_same_n_check(p, o); }
void vti_sgd_velocity_cost(const vt_program *p, const vt_opdesc *o, vt_opcost *out) { cost_elementwise(p, o, 4, out); }
void vti_sgd_apply_cost(const vt_program *p, const vt_opdesc *o, vt_opcost *out) { cost_elementwise(p, o, 4, out); }
void vti_adam_moments_cost(const vt_program *p, const vt_opdesc *o, vt_opcost *out) { cost_elementwise(p, o, 12, out); }
void vti_adam_apply_cost(const vt_program *p, const vt_opdesc *o, vt_opcost *out) { cost_elementwise(p, o, 12, out); }

/* ------------------------------------------------------------ ADD */

vt_err vti_add_check(const vt_program *p, const vt_opdesc *o) { return vti_same_n_check(p, o); }

static void add_part(const vt_opctx *c, const void *arg, size_t lo, size_t hi)
{
    const float *a = IN(0), *b = IN(1);
    if (arg) /* SUB */
        for (size_t i = lo; i < hi; i++) c->s.x64[i] = vti_sub1(a[i], b[i]);
    else
        for (size_t i = lo; i < hi; i++) c->s.x64[i] = vti_add1(a[i], b[i]);
}

vt_err vti_add_exec(vt_opctx *c) { return chain_elems(c, add_part, c->o->kind == VT_OPK_SUB ? c : NULL); }

void vti_add_cost(const vt_program *p, const vt_opdesc *o, vt_opcost *out) { cost_elementwise(p, o, 1, out); }

/* SUB: a, b -> a - b (vti_sub1; bound 0) */
vt_err vti_sub_check(const vt_program *p, const vt_opdesc *o) { return vti_same_n_check(p, o); }

vt_err vti_sub_exec(vt_opctx *c) { return vti_add_exec(c); }

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

static void bn_center_part(const vt_opctx *c, const void *arg, size_t r0, size_t r1)
{
    const vt_tensor *x = T(c->prog, c->o->in[0]);
    const size_t C = x->shape[1], cnt = vti_rows_global(c, x->shape[0]);
    const float *xs = IN(0), *s1 = IN(1);
    (void)arg;
    /* the channel's mean is one function of S1: computed once per channel and part, the same bits */
    for (size_t c0 = 0; c0 < C; c0 += 64) {
        double mean[64];
        const size_t nc = C - c0 < 64 ? C - c0 : 64;
        for (size_t k = 0; k < nc; k++) mean[k] = vti_bn_mean(s1[c0 + k], cnt);
        for (size_t i = r0; i < r1; i++) {
            const float *xi = xs + i * C + c0;
            double *yi = c->s.x64 + i * C + c0;
            for (size_t k = 0; k < nc; k++) yi[k] = vti_bn_center_of(xi[k], mean[k]);
        }
    }
}

vt_err vti_bn_center_exec(vt_opctx *c) { return chain_rows(c, bn_center_part); }

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

static void bn_apply_part(const vt_opctx *c, const void *arg, size_t r0, size_t r1)
{
    const vt_tensor *x = T(c->prog, c->o->in[0]);
    const size_t C = x->shape[1], cnt = vti_rows_global(c, x->shape[0]);
    const float *xc = IN(0), *s2 = IN(1), *gamma = IN(2), *beta = IN(3);
    (void)arg;
    /* the channel's r is one function of S2: computed once per channel and part, the same bits */
    for (size_t c0 = 0; c0 < C; c0 += 64) {
        double r[64];
        size_t nc = C - c0 < 64 ? C - c0 : 64;
        for (size_t k = 0; k < nc; k++) r[k] = vti_bn_rstd(s2[c0 + k], cnt, c->o->farg[0]);
        for (size_t i = r0; i < r1; i++)
            for (size_t k = 0; k < nc; k++) {
                size_t e = i * C + c0 + k;
                c->s.x64[e] = vti_bn_apply1(xc[e], r[k], gamma[c0 + k], beta[c0 + k]);
            }
    }
}

vt_err vti_bn_apply_exec(vt_opctx *c) { return chain_rows(c, bn_apply_part); }

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

/* both statistics in one pass; their elements are numbered mean then variance (vt_ops.h) */
static void bn_running_part(const vt_opctx *c, const void *arg, size_t lo, size_t hi)
{
    const size_t C = NOUT(0), M = vti_rows_global(c, (size_t)c->o->iarg[0]);
    const float *s1 = IN(0), *s2 = IN(1), *rm = IN(2), *rv = IN(3);
    const double mu = c->o->farg[0];
    (void)arg;
    for (size_t k = lo; k < hi; k++) {
        c->s.x64[k] = vti_bn_running_mean1(s1[k], rm[k], M, mu);
        c->s.x64[C + k] = vti_bn_running_var1(s2[k], rv[k], M, mu);
    }
}

vt_err vti_bn_running_exec(vt_opctx *c)
{
    size_t C = NOUT(0);
    vti_chain_run(c, C, 2, bn_running_part, NULL);
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

static void bn_gamma_grad_part(const vt_opctx *c, const void *arg, size_t lo, size_t hi)
{
    const size_t M = vti_rows_global(c, (size_t)c->o->iarg[0]);
    const float *g2 = IN(0), *s2 = IN(1);
    (void)arg;
    for (size_t k = lo; k < hi; k++) c->s.x64[k] = vti_bn_gamma_grad1(g2[k], s2[k], M, c->o->farg[0]);
}

vt_err vti_bn_gamma_grad_exec(vt_opctx *c)
{
    size_t C = NOUT(0);
    vti_chain_run(c, C, 1, bn_gamma_grad_part, NULL);
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

static void bn_backward_part(const vt_opctx *c, const void *arg, size_t r0, size_t r1)
{
    const vt_tensor *x = T(c->prog, c->o->in[0]);
    const size_t C = x->shape[1], cnt = vti_rows_global(c, x->shape[0]);
    const float *dy = IN(0), *xc = IN(1), *s2 = IN(2), *g1 = IN(3), *g2 = IN(4), *gamma = IN(5);
    (void)arg;
    /* the channel's factors are one function of its S2, G1, G2 and gamma: computed once per channel
     * and part (vti_bn_backward_k), the same bits as vti_bn_backward1 per element */
    for (size_t c0 = 0; c0 < C; c0 += 64) {
        double a[64], mg[64], q[64], k3[3];
        const size_t nc = C - c0 < 64 ? C - c0 : 64;
        for (size_t k = 0; k < nc; k++) {
            vti_bn_backward_k(s2[c0 + k], g1[c0 + k], g2[c0 + k], gamma[c0 + k], cnt, c->o->farg[0], k3);
            a[k] = k3[0], mg[k] = k3[1], q[k] = k3[2];
        }
        for (size_t i = r0; i < r1; i++) {
            const size_t e = i * C + c0;
            const float *dyi = dy + e, *xci = xc + e;
            double *yi = c->s.x64 + e;
            for (size_t k = 0; k < nc; k++) yi[k] = vti_bn_backward_of(dyi[k], xci[k], a[k], mg[k], q[k]);
        }
    }
}

vt_err vti_bn_backward_exec(vt_opctx *c) { return chain_rows(c, bn_backward_part); }

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

static void bn_eval_part(const vt_opctx *c, const void *arg, size_t r0, size_t r1)
{
    const size_t C = cols0(c);
    const float *x = IN(0), *rm = IN(1), *rv = IN(2), *gamma = IN(3), *beta = IN(4);
    (void)arg;
    for (size_t i = r0; i < r1; i++)
        for (size_t k = 0; k < C; k++)
            c->s.x64[i * C + k] = vti_bn_eval1(x[i * C + k], rm[k], rv[k], gamma[k], beta[k], c->o->farg[0]);
}

vt_err vti_bn_eval_exec(vt_opctx *c) { return chain_rows(c, bn_eval_part); }

void vti_bn_eval_cost(const vt_program *p, const vt_opdesc *o, vt_opcost *out) { cost_elementwise(p, o, 8, out); }

vt_err vti_avgpool_backward_check(const vt_program *p, const vt_opdesc *o)
{
    size_t B = 0, HW = 0, C = 0;
    VT_FORWARD_IF_ERROR(gap_args(p, o, o->out[0], &B, &HW, &C));
    return want(p, o, o->in[0], VT_DT_F32, B * C, "output gradient");
}

/* rows (b, t) of dx [B*HW, C]: dy[b] w */
static void avgpool_backward_part(const vt_opctx *c, const void *arg, size_t r0, size_t r1)
{
    const size_t HW = *(const size_t *)arg, C = T(c->prog, c->o->out[0])->shape[1];
    const float w = vt_avgpool_weight(HW), *dy = IN(0);
    for (size_t r = r0; r < r1; r++)
        for (size_t k = 0; k < C; k++) c->s.x64[r * C + k] = vti_avgpool_bwd1(dy[(r / HW) * C + k], w);
}

vt_err vti_avgpool_backward_exec(vt_opctx *c)
{
    size_t B = 0, HW = 0, C = 0;
    VT_FORWARD_IF_ERROR(gap_args(c->prog, c->o, c->o->out[0], &B, &HW, &C));
    vti_chain_run(c, B * HW, C, avgpool_backward_part, &HW);
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

/* rows r = b*T + t of x [B*T, C]: wte[tok[r]] + wpe[t] */
static void embed_part(const vt_opctx *c, const void *arg, size_t r0, size_t r1)
{
    const size_t Tn = T(c->prog, c->o->in[0])->shape[1], C = T(c->prog, c->o->in[1])->shape[1];
    const uint8_t *tok = (const uint8_t *)IN(0);
    const float *wte = IN(1), *wpe = IN(2);
    (void)arg;
    for (size_t r = r0; r < r1; r++)
        for (size_t k = 0; k < C; k++) c->s.x64[r * C + k] = vti_embed1(wte[tok[r] * C + k], wpe[(r % Tn) * C + k]);
}

vt_err vti_embed_exec(vt_opctx *c)
{
    const vt_tensor *tok = T(c->prog, c->o->in[0]), *wte = T(c->prog, c->o->in[1]);
    const uint8_t *t = (const uint8_t *)IN(0);
    for (size_t i = 0; i < tok->n; i++)
        VT_RETURN_ERROR_IF(t[i] >= wte->shape[0], VT_ERR_ARG, "token %u at %zu is not in the vocabulary", t[i], i);
    vti_chain_run(c, tok->n, wte->shape[1], embed_part, NULL);
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

static void ln_center_part(const vt_opctx *c, const void *arg, size_t r0, size_t r1)
{
    const size_t C = cols0(c);
    const float *x = IN(0), *s1 = IN(1);
    (void)arg;
    for (size_t i = r0; i < r1; i++) {
        const double mean = vti_ln_mean(s1[i], C); /* once per row: the same bits */
        for (size_t k = 0; k < C; k++) c->s.x64[i * C + k] = vti_bn_center_of(x[i * C + k], mean);
    }
}

vt_err vti_ln_center_exec(vt_opctx *c) { return chain_rows(c, ln_center_part); }

void vti_ln_center_cost(const vt_program *p, const vt_opdesc *o, vt_opcost *out) { cost_elementwise(p, o, 2, out); }

/* LN_NORM: xc [M, C], S2 [M] -> xhat; farg eps */
vt_err vti_ln_norm_check(const vt_program *p, const vt_opdesc *o)
{
    VT_FORWARD_IF_ERROR(eps_ok(o, 0));
    return vti_ln_center_check(p, o);
}

static void ln_norm_part(const vt_opctx *c, const void *arg, size_t r0, size_t r1)
{
    const size_t C = cols0(c);
    const float *xc = IN(0), *s2 = IN(1);
    (void)arg;
    for (size_t i = r0; i < r1; i++) {
        double r = vti_ln_rstd(s2[i], C, c->o->farg[0]);
        for (size_t k = 0; k < C; k++) c->s.x64[i * C + k] = vti_ln_norm1(xc[i * C + k], r);
    }
}

vt_err vti_ln_norm_exec(vt_opctx *c) { return chain_rows(c, ln_norm_part); }

void vti_ln_norm_cost(const vt_program *p, const vt_opdesc *o, vt_opcost *out) { cost_elementwise(p, o, 2, out); }

/* AFFINE: x [M, C], gamma [C] (, beta [C]) -> gamma x (+ beta) */
vt_err vti_affine_check(const vt_program *p, const vt_opdesc *o)
{
    const vt_tensor *x;
    VT_FORWARD_IF_ERROR(vti_op_rows(p, o, &x));
    for (uint32_t k = 1; k < o->n_in; k++) VT_FORWARD_IF_ERROR(colvec(p, o, o->in[k], x->shape[1]));
    return f32_shape(p, o, o->out[0], x->n, "output");
}

static void affine_part(const vt_opctx *c, const void *arg, size_t r0, size_t r1)
{
    const size_t C = cols0(c);
    const float *x = IN(0), *gamma = IN(1), *beta = c->o->n_in > 2 ? IN(2) : NULL;
    (void)arg;
    for (size_t i = r0; i < r1; i++)
        for (size_t k = 0; k < C; k++) c->s.x64[i * C + k] = vti_affine1(x[i * C + k], gamma[k], beta ? &beta[k] : NULL);
}

vt_err vti_affine_exec(vt_opctx *c) { return chain_rows(c, affine_part); }

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

static void ln_backward_part(const vt_opctx *c, const void *arg, size_t r0, size_t r1)
{
    const size_t C = cols0(c);
    const float *dyg = IN(0), *xhat = IN(1), *s2 = IN(2), *g1 = IN(3), *g2 = IN(4);
    (void)arg;
    for (size_t i = r0; i < r1; i++) {
        double k3[3]; /* the row's factors, once per row: the same bits as vti_ln_backward1 */
        vti_ln_backward_k(s2[i], g1[i], g2[i], C, c->o->farg[0], k3);
        for (size_t k = 0; k < C; k++)
            c->s.x64[i * C + k] = vti_ln_backward_of(dyg[i * C + k], xhat[i * C + k], k3[0], k3[1], k3[2]);
    }
}

vt_err vti_ln_backward_exec(vt_opctx *c) { return chain_rows(c, ln_backward_part); }

void vti_ln_backward_cost(const vt_program *p, const vt_opdesc *o, vt_opcost *out)
{
    cost_elementwise(p, o, 6, out);
}

/* ------------------------------------------------------------ GELU */

vt_err vti_gelu_check(const vt_program *p, const vt_opdesc *o) { return vti_same_n_check(p, o); }

/* vti_gelu1 (GELU) and vti_gelu_backward1 (GELU_BWD, input 1 dy) in stages, the tanh of a part at once
 * (vt_tanh_n: the same bits as the element-by-element chain) */
static void gelu_part(const vt_opctx *c, const void *arg, size_t lo, size_t hi)
{
    const float *x = IN(0), *dy = c->o->n_in > 1 ? IN(1) : NULL;
    double *out = c->s.x64;
    (void)arg;
    for (size_t i = lo; i < hi; i++) out[i] = vti_gelu_u(x[i]);
    vt_tanh_n(hi - lo, out + lo, out + lo);
    for (size_t i = lo; i < hi; i++) out[i] = dy ? vti_gelu_backward_from(x[i], dy[i], out[i]) : vti_gelu_from(x[i], out[i]);
}

vt_err vti_gelu_exec(vt_opctx *c) { return chain_elems(c, gelu_part, NULL); }

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

/* the mask drawn from Philox (seed, step, key, the element's global index), as the device draws it */
static void dropout_part(const vt_opctx *c, const void *arg, size_t lo, size_t hi)
{
    const size_t n = NOUT(0);
    const float *x = IN(0);
    const double p = c->o->farg[0];
    const uint64_t seed = (uint64_t)c->o->iarg[0];
    const uint32_t key = (uint32_t)c->o->iarg[1];
    (void)arg;
    for (size_t i = lo; i < hi; i++)
        c->s.x64[i] = vti_dropout1(x[i], vti_dropout_keep(seed, c->step, key, vti_elem_global(c, n, i), p), p);
}

vt_err vti_dropout_exec(vt_opctx *c) { return chain_elems(c, dropout_part, NULL); }

void vti_dropout_cost(const vt_program *p, const vt_opdesc *o, vt_opcost *out) { cost_elementwise(p, o, 20, out); }

vt_err vti_clip_factor_check(const vt_program *p, const vt_opdesc *o)
{
    ERR_IF(!(o->farg[0] > 0), "program: \"%s\": max_norm must be positive", o->name);
    VT_FORWARD_IF_ERROR(f32_shape(p, o, o->in[0], 1, "squared norm"));
    return f32_shape(p, o, o->out[0], 1, "factor");
}

vt_err vti_clip_factor_exec(vt_opctx *c)
{
    double f = vti_clip_factor1(*IN(0), c->o->farg[0]);
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

vt_err vti_adam_scaled_exec(vt_opctx *c) { return vti_adam_moments_exec(c); }

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

vt_err vti_adamw_exec(vt_opctx *c) { return vti_adam_apply_exec(c); }

void vti_adamw_cost(const vt_program *p, const vt_opdesc *o, vt_opcost *out) { cost_elementwise(p, o, 14, out); }

/* ------------------------------------------------------------ the plain forms (vt_plainctx) */

vt_err vti_bias_add_plain(vt_plainctx *c)
{
    VTI_PLAIN_BOTH(c, {
        size_t M = SHAPE(0, 0), N = SHAPE(0, 1);
        const real *x = PX(0), *b = PX(1);
        real *y = PY(0);
        for (size_t i = 0; i < M; i++)
            for (size_t j = 0; j < N; j++) y[i * N + j] = x[i * N + j] + b[j];
        return VT_OK;
    })
}

vt_err vti_add_pos_plain(vt_plainctx *c)
{
    VTI_PLAIN_BOTH(c, {
        size_t M = SHAPE(0, 0), N = SHAPE(0, 1), Tn = (size_t)c->o->iarg[0];
        const real *x = PX(0), *pe = PX(1);
        real *y = PY(0);
        for (size_t i = 0; i < M; i++)
            for (size_t j = 0; j < N; j++) y[i * N + j] = x[i * N + j] + pe[i % Tn * N + j];
        return VT_OK;
    })
}

vt_err vti_relu_plain(vt_plainctx *c)
{
    VTI_PLAIN_BOTH(c, {
        const real *z = PX(0);
        real *a = PY(0);
        for (size_t i = 0; i < NOUT(0); i++) a[i] = z[i] > 0 ? z[i] : (real)0;
        return VT_OK;
    })
}

vt_err vti_relu_bwd_plain(vt_plainctx *c)
{
    VTI_PLAIN_BOTH(c, {
        const real *z = PX(0), *da = PX(1);
        real *dz = PY(0);
        for (size_t i = 0; i < NOUT(0); i++) dz[i] = z[i] > 0 ? da[i] : (real)0;
        return VT_OK;
    })
}

vt_err vti_xent_bwd_plain(vt_plainctx *c)
{
    VTI_PLAIN_BOTH(c, {
        size_t N = SHAPE(0, 0), C = SHAPE(0, 1);
        const real *pr = PX(0);
        const uint8_t *y = PTP(c, c->o->in[1]);
        VT_FORWARD_IF_ERROR(vti_labels_ok(N, C, y));
        real *dz = PY(0);
        for (size_t i = 0; i < N; i++)
            for (size_t k = 0; k < C; k++) dz[i * C + k] = (pr[i * C + k] - (k == y[i] ? (real)1 : (real)0)) / (real)N;
        return VT_OK;
    })
}

vt_err vti_sgd_velocity_plain(vt_plainctx *c)
{
    VTI_PLAIN_BOTH(c, {
        const real *w = PX(0), *g = PX(1), mu = (real)c->o->farg[0], wd = (real)c->o->farg[1];
        real *v = PY(0);
        for (size_t i = 0; i < NOUT(0); i++) v[i] = mu * v[i] + (g[i] + wd * w[i]);
        return VT_OK;
    })
}

vt_err vti_sgd_apply_plain(vt_plainctx *c)
{
    VTI_PLAIN_BOTH(c, {
        const real *v = PX(1), lr = (real)vti_plain_f64(c, c->o->in[2]);
        real *w = PY(0);
        for (size_t i = 0; i < NOUT(0); i++) w[i] = w[i] - lr * v[i];
        return VT_OK;
    })
}

vt_err vti_adam_moments_plain(vt_plainctx *c)
{
    VTI_PLAIN_BOTH(c, {
        const double b1 = c->o->farg[0], b2 = c->o->farg[1];
        const real *g = PX(0), tb1 = (real)b1, tb2 = (real)b2, c1 = (real)(1.0 - b1), c2 = (real)(1.0 - b2);
        real *m1 = PY(0), *m2 = PY(1);
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
        const real *m1 = PX(1), *m2 = PX(2), lr = (real)vti_plain_f64(c, c->o->in[4]), eps = (real)c->o->farg[2];
        const real bc1 = (real)(1.0 - pow(b1, s)), bc2 = (real)(1.0 - pow(b2, s));
        real *w = PY(0);
        for (size_t i = 0; i < NOUT(0); i++) w[i] = w[i] - (lr * (m1[i] / bc1)) / (PSQRT(m2[i] / bc2) + eps);
        return VT_OK;
    })
}

vt_err vti_add_plain(vt_plainctx *c)
{
    VTI_PLAIN_BOTH(c, {
        const real *a = PX(0), *b = PX(1);
        real *y = PY(0);
        for (size_t i = 0; i < NOUT(0); i++) y[i] = a[i] + b[i];
        return VT_OK;
    })
}

vt_err vti_bn_center_plain(vt_plainctx *c)
{
    VTI_PLAIN_BOTH(c, {
        size_t M = SHAPE(0, 0), C = SHAPE(0, 1);
        const real *x = PX(0), *s1 = PX(1);
        real *y = PY(0);
        for (size_t i = 0; i < M; i++)
            for (size_t k = 0; k < C; k++) y[i * C + k] = x[i * C + k] - s1[k] / (real)M;
        return VT_OK;
    })
}

vt_err vti_bn_apply_plain(vt_plainctx *c)
{
    VTI_PLAIN_BOTH(c, {
        size_t M = SHAPE(0, 0), C = SHAPE(0, 1);
        const real *xc = PX(0), *s2 = PX(1), *g = PX(2), *b = PX(3);
        real *y = PY(0);
        for (size_t i = 0; i < M; i++)
            for (size_t k = 0; k < C; k++) y[i * C + k] = g[k] * (xc[i * C + k] * PRSTD(s2[k], M, c->o->farg[0])) + b[k];
        return VT_OK;
    })
}

vt_err vti_bn_running_plain(vt_plainctx *c)
{
    VTI_PLAIN_BOTH(c, {
        size_t C = NOUT(0), M = (size_t)c->o->iarg[0];
        const real *s1 = PX(0), *s2 = PX(1), mu = (real)c->o->farg[0];
        real *rm = PY(0), *rv = PY(1);
        for (size_t k = 0; k < C; k++) {
            rm[k] = ((real)1 - mu) * rm[k] + mu * (s1[k] / (real)M);
            rv[k] = ((real)1 - mu) * rv[k] + mu * (s2[k] / (real)(M - 1));
        }
        return VT_OK;
    })
}

vt_err vti_bn_gamma_grad_plain(vt_plainctx *c)
{
    VTI_PLAIN_BOTH(c, {
        size_t C = NOUT(0), M = (size_t)c->o->iarg[0];
        const real *g2 = PX(0), *s2 = PX(1);
        real *d = PY(0);
        for (size_t k = 0; k < C; k++) d[k] = g2[k] * PRSTD(s2[k], M, c->o->farg[0]);
        return VT_OK;
    })
}

vt_err vti_bn_backward_plain(vt_plainctx *c)
{
    VTI_PLAIN_BOTH(c, {
        size_t M = SHAPE(0, 0), C = SHAPE(0, 1);
        const real *dy = PX(0), *xc = PX(1), *s2 = PX(2), *g1 = PX(3), *g2 = PX(4), *g = PX(5);
        real *dx = PY(0);
        for (size_t i = 0; i < M; i++)
            for (size_t k = 0; k < C; k++) {
                real r = PRSTD(s2[k], M, c->o->farg[0]);
                dx[i * C + k] = (g[k] * r) * ((dy[i * C + k] - g1[k] / (real)M) - xc[i * C + k] * ((r * r) * g2[k] / (real)M));
            }
        return VT_OK;
    })
}

vt_err vti_bn_eval_plain(vt_plainctx *c)
{
    VTI_PLAIN_BOTH(c, {
        size_t M = SHAPE(0, 0), C = SHAPE(0, 1);
        const real *x = PX(0), *rm = PX(1), *rv = PX(2), *g = PX(3), *b = PX(4);
        real *y = PY(0);
        for (size_t i = 0; i < M; i++)
            for (size_t k = 0; k < C; k++)
                y[i * C + k] = g[k] * ((x[i * C + k] - rm[k]) / PSQRT(rv[k] + (real)c->o->farg[0])) + b[k];
        return VT_OK;
    })
}

vt_err vti_avgpool_backward_plain(vt_plainctx *c)
{
    VTI_PLAIN_BOTH(c, {
        size_t B = (size_t)c->o->iarg[0], HW = (size_t)c->o->iarg[1], C = SHAPE(0, 1);
        const real *dy = PX(0);
        real *dx = PY(0);
        for (size_t b = 0; b < B; b++)
            for (size_t t = 0; t < HW; t++)
                for (size_t k = 0; k < C; k++) dx[(b * HW + t) * C + k] = dy[b * C + k] / (real)HW;
        return VT_OK;
    })
}

vt_err vti_embed_plain(vt_plainctx *c)
{
    VTI_PLAIN_BOTH(c, {
        const vt_tensor *tk = &c->prog->t[c->o->in[0]], *wt = &c->prog->t[c->o->in[1]];
        const size_t Tn = tk->shape[1], C = wt->shape[1];
        const uint8_t *tok = PTP(c, c->o->in[0]);
        const real *wte = PX(1), *wpe = PX(2);
        real *y = PY(0);
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
        const real *x = PX(0), *s1 = PX(1);
        real *y = PY(0);
        for (size_t i = 0; i < M; i++)
            for (size_t k = 0; k < C; k++) y[i * C + k] = x[i * C + k] - s1[i] / (real)C;
        return VT_OK;
    })
}

vt_err vti_ln_norm_plain(vt_plainctx *c)
{
    VTI_PLAIN_BOTH(c, {
        const size_t M = SHAPE(0, 0), C = SHAPE(0, 1);
        const real *xc = PX(0), *s2 = PX(1);
        real *y = PY(0);
        for (size_t i = 0; i < M; i++) {
            real r = PRSTD(s2[i], C, c->o->farg[0]);
            for (size_t k = 0; k < C; k++) y[i * C + k] = xc[i * C + k] * r;
        }
        return VT_OK;
    })
}

vt_err vti_affine_plain(vt_plainctx *c)
{
    VTI_PLAIN_BOTH(c, {
        const size_t M = SHAPE(0, 0), C = SHAPE(0, 1);
        const real *x = PX(0), *g = PX(1), *b = c->o->n_in > 2 ? PX(2) : NULL;
        real *y = PY(0);
        for (size_t i = 0; i < M; i++)
            for (size_t k = 0; k < C; k++) y[i * C + k] = g[k] * x[i * C + k] + (b ? b[k] : (real)0);
        return VT_OK;
    })
}

vt_err vti_ln_backward_plain(vt_plainctx *c)
{
    VTI_PLAIN_BOTH(c, {
        const size_t M = SHAPE(0, 0), C = SHAPE(0, 1);
        const real *dyg = PX(0), *xh = PX(1), *s2 = PX(2), *g1 = PX(3), *g2 = PX(4);
        real *dx = PY(0);
        for (size_t i = 0; i < M; i++) {
            real r = PRSTD(s2[i], C, c->o->farg[0]);
            for (size_t k = 0; k < C; k++) dx[i * C + k] = r * ((dyg[i * C + k] - g1[i] / (real)C) - xh[i * C + k] * (g2[i] / (real)C));
        }
        return VT_OK;
    })
}

vt_err vti_gelu_plain(vt_plainctx *c)
{
    VTI_PLAIN_BOTH(c, {
        const real *x = PX(0), *dy = c->o->n_in > 1 ? PX(1) : NULL, k0 = (real)0.7978845608028654, a0 = (real)0.044715;
        real *y = PY(0);
        for (size_t i = 0; i < NOUT(0); i++) {
            real v = x[i], th = PTANH(k0 * (v + a0 * v * v * v));
            if (!dy) y[i] = (real)0.5 * v * ((real)1 + th);
            else y[i] = dy[i] * ((real)0.5 * ((real)1 + th) + (real)0.5 * v * ((real)1 - th * th) * k0 * ((real)1 + (real)3 * a0 * v * v));
        }
        return VT_OK;
    })
}

vt_err vti_dropout_plain(vt_plainctx *c)
{
    VTI_PLAIN_BOTH(c, {
        const real *x = PX(0), sc = (real)(1.0 / (1.0 - c->o->farg[0]));
        real *y = PY(0);
        for (size_t i = 0; i < NOUT(0); i++)
            y[i] = vt_dropout_keep((uint64_t)c->o->iarg[0], c->step, (uint32_t)c->o->iarg[1], i, c->o->farg[0]) ? x[i] * sc
                                                                                                            : (real)0;
        return VT_OK;
    })
}

vt_err vti_clip_factor_plain(vt_plainctx *c)
{
    VTI_PLAIN_BOTH(c, {
        real nrm = PSQRT(*PX(0)), mx = (real)c->o->farg[0];
        *PY(0) = nrm > mx ? mx / (nrm + (real)1e-6) : (real)1;
        return VT_OK;
    })
}

vt_err vti_adam_scaled_plain(vt_plainctx *c)
{
    VTI_PLAIN_BOTH(c, {
        const double b1 = c->o->farg[0], b2 = c->o->farg[1];
        const real *g = PX(0), f = *PX(3), tb1 = (real)b1, tb2 = (real)b2, c1 = (real)(1.0 - b1), c2 = (real)(1.0 - b2);
        real *m1 = PY(0), *m2 = PY(1);
        for (size_t i = 0; i < NOUT(0); i++) {
            real gi = g[i] * f;
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
        const real *m1 = PX(1), *m2 = PX(2), lr = (real)vti_plain_f64(c, c->o->in[4]), eps = (real)c->o->farg[2], wd = (real)c->o->farg[3];
        const real bc1 = (real)(1.0 - pow(b1, s)), bc2 = (real)(1.0 - pow(b2, s));
        real *w = PY(0);
        for (size_t i = 0; i < NOUT(0); i++) w[i] = w[i] - lr * ((m1[i] / bc1) / (PSQRT(m2[i] / bc2) + eps) + wd * w[i]);
        return VT_OK;
    })
}

vt_err vti_sub_plain(vt_plainctx *c)
{
    VTI_PLAIN_BOTH(c, {
        const real *a = PX(0), *b = PX(1);
        real *y = PY(0);
        for (size_t i = 0; i < NOUT(0); i++) y[i] = a[i] - b[i];
        return VT_OK;
    })
}

/* ------------------------------------------------------------ backward facets (vt_grad_fn) */

/* X, b -> Y = X + b: dX is dY; db the column sums of dY */
vt_grad_rule vti_bias_add_grad(vt_program *p, const vt_opdesc *o, uint32_t i, const uint32_t *dy, uint32_t dx,
                               const char *layer)
{
    (void)o;
    if (i == 0) return VT_GRAD_ALIAS;
    if (dx != VT_GRAD_QUERY)
        vt_prog_op(p, VT_OPK_COLSUM, dy, 1, &dx, 1, NULL, 0, NULL, 0, "%s bias gradient", layer);
    return VT_GRAD_OPS;
}

/* x + P per example: x's gradient is dY, P's the sum of dY over the examples (position_gradient) */
vt_grad_rule vti_add_pos_grad(vt_program *p, const vt_opdesc *o, uint32_t i, const uint32_t *dy, uint32_t dx,
                              const char *layer)
{
    if (i == 0) return VT_GRAD_ALIAS;
    if (dx != VT_GRAD_QUERY) {
        const int64_t Tn = o->iarg[0], R = (int64_t)p->t[o->in[0]].shape[0];
        vt_prog_op(p, VT_OPK_POS_GRAD, dy, 1, &dx, 1, (const int64_t[]){R / Tn, Tn}, 2, NULL, 0,
                   "%s position embedding gradient", layer);
    }
    return VT_GRAD_OPS;
}

/* a + b: both gradients are dY */
vt_grad_rule vti_add_grad(vt_program *p, const vt_opdesc *o, uint32_t i, const uint32_t *dy, uint32_t dx,
                          const char *layer)
{
    (void)p, (void)o, (void)i, (void)dy, (void)dx, (void)layer;
    return VT_GRAD_ALIAS;
}

vt_grad_rule vti_relu_grad(vt_program *p, const vt_opdesc *o, uint32_t i, const uint32_t *dy, uint32_t dx,
                           const char *layer)
{
    (void)i;
    return vti_grad_pair(p, VT_OPK_RELU_BWD, o, 0, dy, dx, layer);
}

vt_grad_rule vti_gelu_grad(vt_program *p, const vt_opdesc *o, uint32_t i, const uint32_t *dy, uint32_t dx,
                           const char *layer)
{
    (void)i;
    return vti_grad_pair(p, VT_OPK_GELU_BWD, o, 0, dy, dx, layer);
}

/* dropout's backward is dropout of dY with the same mask (the same seed, key and p) */
vt_grad_rule vti_dropout_grad(vt_program *p, const vt_opdesc *o, uint32_t i, const uint32_t *dy, uint32_t dx,
                              const char *layer)
{
    (void)i;
    if (dx != VT_GRAD_QUERY)
        vt_prog_op(p, VT_OPK_DROPOUT, dy, 1, &dx, 1, o->iarg, o->n_iarg, o->farg, o->n_farg, "%s backward", layer);
    return VT_GRAD_OPS;
}
