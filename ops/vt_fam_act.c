/* vt_fam_act.c - the elementwise activations of client models (vt_kinds.h: SIGMOID, SIGMOID_BWD, TANH,
 * TANH_BWD, LEAKY_RELU, LEAKY_RELU_BWD, GELU_ERF, GELU_ERF_BWD): each output element RN32 of the exact
 * real value of its definition (kernels/vt_act.h; docs/rounding.md 2.7), then vt_round with bound 0
 * (nothing to log). Sigmoid's and tanh's backward kinds read the forward OUTPUT y (their rules below
 * pass o->out[0]); leaky ReLU's reads the forward input x and the same alpha, GELU (erf form)'s the
 * forward input x. Each kind's check, exec, cost, plain
 * form and backward facet, named by its stem in the list. */
#include <math.h>

#include "../kernels/vt_act.h"
#include "vt_ops_int.h"

/* alpha: 0, or a finite magnitude within [2^-64, 2^64] (alpha v is then two FP64 values exactly) */
static vt_err alpha_check(const vt_opdesc *o)
{
    const double a = fabs(o->farg[0]);
    ERR_IF(!(a == 0.0 || (a >= 0x1p-64 && a <= 0x1p64)), "program: \"%s\": alpha %g is not 0 or within [2^-64, 2^64]",
           o->name, o->farg[0]);
    return VT_OK;
}

vt_err vti_sigmoid_check(const vt_program *p, const vt_opdesc *o) { return vti_same_n_check(p, o); }
vt_err vti_sigmoid_bwd_check(const vt_program *p, const vt_opdesc *o) { return vti_same_n_check(p, o); }
vt_err vti_tanh_check(const vt_program *p, const vt_opdesc *o) { return vti_same_n_check(p, o); }
vt_err vti_tanh_bwd_check(const vt_program *p, const vt_opdesc *o) { return vti_same_n_check(p, o); }
vt_err vti_leaky_relu_check(const vt_program *p, const vt_opdesc *o)
{
    VT_FORWARD_IF_ERROR(alpha_check(o));
    return vti_same_n_check(p, o);
}
vt_err vti_leaky_relu_bwd_check(const vt_program *p, const vt_opdesc *o) { return vti_leaky_relu_check(p, o); }
vt_err vti_gelu_erf_check(const vt_program *p, const vt_opdesc *o) { return vti_same_n_check(p, o); }
vt_err vti_gelu_erf_bwd_check(const vt_program *p, const vt_opdesc *o) { return vti_same_n_check(p, o); }

/* every element's correctly rounded FP32 value (as FP64, exactly) by part over the threads */
static void act_part(const vt_opctx *c, const void *arg, size_t lo, size_t hi)
{
    const float *x = IN(0), *d = c->o->n_in > 1 ? IN(1) : NULL;
    double *out = c->s.x64;
    (void)arg;
    switch (c->o->kind) {
    case VT_OPK_SIGMOID:
        for (size_t i = lo; i < hi; i++) out[i] = (double)vt_sigmoid32(x[i], NULL);
        break;
    case VT_OPK_SIGMOID_BWD:
        for (size_t i = lo; i < hi; i++) out[i] = (double)vt_sigmoid_bwd32(x[i], d[i]);
        break;
    case VT_OPK_TANH:
        for (size_t i = lo; i < hi; i++) out[i] = (double)vt_tanh32(x[i], NULL);
        break;
    case VT_OPK_TANH_BWD:
        for (size_t i = lo; i < hi; i++) out[i] = (double)vt_tanh_bwd32(x[i], d[i]);
        break;
    case VT_OPK_LEAKY_RELU:
        for (size_t i = lo; i < hi; i++) out[i] = (double)vt_leaky_relu32(x[i], c->o->farg[0]);
        break;
    case VT_OPK_LEAKY_RELU_BWD:
        for (size_t i = lo; i < hi; i++) out[i] = (double)vt_leaky_relu_bwd32(x[i], d[i], c->o->farg[0]);
        break;
    case VT_OPK_GELU_ERF:
        for (size_t i = lo; i < hi; i++) out[i] = (double)vt_gelu_erf32(x[i], NULL);
        break;
    default: /* VT_OPK_GELU_ERF_BWD */
        for (size_t i = lo; i < hi; i++) out[i] = (double)vt_gelu_erf_bwd32(x[i], d[i], NULL);
        break;
    }
}

static vt_err act_exec(vt_opctx *c)
{
    return vti_chain_round(c, NOUT(0), 1, act_part, NULL, OUT(0));
}

vt_err vti_sigmoid_exec(vt_opctx *c) { return act_exec(c); }
vt_err vti_sigmoid_bwd_exec(vt_opctx *c) { return act_exec(c); }
vt_err vti_tanh_exec(vt_opctx *c) { return act_exec(c); }
vt_err vti_tanh_bwd_exec(vt_opctx *c) { return act_exec(c); }
vt_err vti_leaky_relu_exec(vt_opctx *c) { return act_exec(c); }
vt_err vti_leaky_relu_bwd_exec(vt_opctx *c) { return act_exec(c); }
vt_err vti_gelu_erf_exec(vt_opctx *c) { return act_exec(c); }
vt_err vti_gelu_erf_bwd_exec(vt_opctx *c) { return act_exec(c); }

void vti_sigmoid_cost(const vt_program *p, const vt_opdesc *o, vt_opcost *out) { cost_elementwise(p, o, 30, out); }
void vti_sigmoid_bwd_cost(const vt_program *p, const vt_opdesc *o, vt_opcost *out) { cost_elementwise(p, o, 20, out); }
void vti_tanh_cost(const vt_program *p, const vt_opdesc *o, vt_opcost *out) { cost_elementwise(p, o, 30, out); }
void vti_tanh_bwd_cost(const vt_program *p, const vt_opdesc *o, vt_opcost *out) { cost_elementwise(p, o, 20, out); }
void vti_leaky_relu_cost(const vt_program *p, const vt_opdesc *o, vt_opcost *out) { cost_elementwise(p, o, 8, out); }
void vti_leaky_relu_bwd_cost(const vt_program *p, const vt_opdesc *o, vt_opcost *out)
{
    cost_elementwise(p, o, 8, out);
}
/* a double-double series of some 100 terms: far above the others */
void vti_gelu_erf_cost(const vt_program *p, const vt_opdesc *o, vt_opcost *out) { cost_elementwise(p, o, 2000, out); }
void vti_gelu_erf_bwd_cost(const vt_program *p, const vt_opdesc *o, vt_opcost *out)
{
    cost_elementwise(p, o, 2000, out);
}

/* the plain forms: the formulas in FP32 or FP64 with the C library's exp, tanh and erf (PyTorch's
 * x/2 (1 + erf(x / sqrt 2)) and dy (Phi(x) + x phi(x))) */
static vt_err act_plain(vt_plainctx *c)
{
    VTI_PLAIN_BOTH(c, {
        const real *x = PX(0), *d = c->o->n_in > 1 ? PX(1) : NULL, a = (real)(c->o->n_farg ? c->o->farg[0] : 0.0);
        real *y = PY(0);
        const uint16_t k = c->o->kind;
        for (size_t i = 0; i < NOUT(0); i++) {
            const real v = x[i];
            if (k == VT_OPK_SIGMOID) y[i] = (real)1 / ((real)1 + PEXP(-v));
            else if (k == VT_OPK_SIGMOID_BWD) y[i] = d[i] * v * ((real)1 - v);
            else if (k == VT_OPK_TANH) y[i] = PTANH(v);
            else if (k == VT_OPK_TANH_BWD) y[i] = d[i] * ((real)1 - v * v);
            else if (k == VT_OPK_LEAKY_RELU) y[i] = v >= 0 ? v : a * v;
            else if (k == VT_OPK_LEAKY_RELU_BWD) y[i] = v > 0 ? d[i] : a * d[i];
            else if (k == VT_OPK_GELU_ERF) y[i] = v / (real)2 * ((real)1 + PERF(v * (real)M_SQRT1_2));
            else
                y[i] = d[i] * ((real)0.5 * ((real)1 + PERF(v * (real)M_SQRT1_2)) +
                               v * PEXP(-(real)0.5 * v * v) * (real)0.398942280401432677939946059934);
        }
        return VT_OK;
    })
}

vt_err vti_sigmoid_plain(vt_plainctx *c) { return act_plain(c); }
vt_err vti_sigmoid_bwd_plain(vt_plainctx *c) { return act_plain(c); }
vt_err vti_tanh_plain(vt_plainctx *c) { return act_plain(c); }
vt_err vti_tanh_bwd_plain(vt_plainctx *c) { return act_plain(c); }
vt_err vti_leaky_relu_plain(vt_plainctx *c) { return act_plain(c); }
vt_err vti_leaky_relu_bwd_plain(vt_plainctx *c) { return act_plain(c); }
vt_err vti_gelu_erf_plain(vt_plainctx *c) { return act_plain(c); }
vt_err vti_gelu_erf_bwd_plain(vt_plainctx *c) { return act_plain(c); }

/* the backward facets: sigmoid and tanh differentiate from their output y (dy y (1 - y), dy (1 - y^2)),
 * leaky ReLU from its input x with the same alpha, GELU (erf form) from its input x (dy (Phi + x phi)) */
vt_grad_rule vti_sigmoid_grad(vt_program *p, const vt_opdesc *o, uint32_t i, const uint32_t *dy, uint32_t dx,
                              const char *layer)
{
    (void)i;
    return vti_grad_pair(p, VT_OPK_SIGMOID_BWD, o, 1, dy, dx, layer);
}

vt_grad_rule vti_tanh_grad(vt_program *p, const vt_opdesc *o, uint32_t i, const uint32_t *dy, uint32_t dx,
                           const char *layer)
{
    (void)i;
    return vti_grad_pair(p, VT_OPK_TANH_BWD, o, 1, dy, dx, layer);
}

vt_grad_rule vti_leaky_relu_grad(vt_program *p, const vt_opdesc *o, uint32_t i, const uint32_t *dy, uint32_t dx,
                                 const char *layer)
{
    (void)i;
    return vti_grad_pair(p, VT_OPK_LEAKY_RELU_BWD, o, 0, dy, dx, layer);
}

vt_grad_rule vti_gelu_erf_grad(vt_program *p, const vt_opdesc *o, uint32_t i, const uint32_t *dy, uint32_t dx,
                               const char *layer)
{
    (void)i;
    return vti_grad_pair(p, VT_OPK_GELU_ERF_BWD, o, 0, dy, dx, layer);
}
