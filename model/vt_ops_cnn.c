/* vt_ops_cnn.c - the operation kinds of convolutional networks (vt_ops.h): the convolution's
 * gathers and weight transpose (exact), residual addition, batch normalisation in training and
 * evaluation mode, max pooling (exact) and global average pooling. Activations are channels-last
 * [B*H*W, C] (kernels/vt_cnn.h). A convolution is a gather followed by a matmul operation, so that
 * its reductions are GEMMs of materialised FP32 operands, whose exact evaluator the rounding
 * layer already has. */
#include <stdio.h>
#include <string.h>

#include "../kernels/vt_cnn.h"
#include "vt_ops_int.h"

#define ERR_IF(cond, ...) VT_RETURN_ERROR_IF(cond, VT_ERR_INTERNAL, __VA_ARGS__)

/* a * b * c * d * e without overflow (0 on overflow: no tensor has 0 elements) */
static size_t prod5(size_t a, size_t b, size_t c, size_t d, size_t e)
{
    size_t r;
    if (__builtin_mul_overflow(a, b, &r) || __builtin_mul_overflow(r, c, &r) || __builtin_mul_overflow(r, d, &r) ||
        __builtin_mul_overflow(r, e, &r))
        return 0;
    return r;
}

static vt_err geom(const vt_opdesc *o, vt_conv_geom *g, int chw)
{
    const int64_t *a = o->iarg;
    if (vt_conv_geom_make(g, a[0], a[1], a[2], a[3], a[4], a[5], a[6], chw) == VT_OK) return VT_OK;
    char why[160];
    snprintf(why, sizeof why, "%s", vt_errmsg());
    VT_RETURN_ERROR(VT_ERR_INTERNAL, "program: \"%s\": %s", o->name, why);
}

/* ------------------------------------------------------------ IM2COL */
/* iarg B, H, W, C, k, stride, pad, chw: x [B*H*W, C] (chw: [B, C*H*W]) -> col [B*Ho*Wo, k*k*C] */

vt_err vti_im2col_check(const vt_program *p, const vt_opdesc *o)
{
    vt_conv_geom g;
    ERR_IF(o->iarg[7] != 0 && o->iarg[7] != 1, "program: \"%s\": bad layout flag", o->name);
    VT_FORWARD_IF_ERROR(geom(o, &g, (int)o->iarg[7]));
    size_t nin = prod5(g.B, g.H, g.W, g.C, 1), ncol = prod5(g.B * g.Ho, g.Wo, g.k, g.k, g.C);
    ERR_IF(!nin || !ncol || g.B * g.Ho / g.B != g.Ho, "program: \"%s\": the convolution is too large", o->name);
    VT_FORWARD_IF_ERROR(want(p, o, o->in[0], VT_DT_F32, nin, "input"));
    return want(p, o, o->out[0], VT_DT_F32, ncol, "columns");
}

vt_err vti_im2col_exec(vt_opctx *c) /* exact: values are moved */
{
    vt_conv_geom g;
    VT_FORWARD_IF_ERROR(geom(c->o, &g, (int)c->o->iarg[7]));
    vt_im2col_f32(&g, IN(0), OUT(0));
    return VT_OK;
}

static void move_cost(const vt_program *p, const vt_opdesc *o, vt_opcost *out)
{
    memset(out, 0, sizeof *out);
    out->bytes = 4.0 * ((double)T(p, o->in[0])->n + (double)T(p, o->out[0])->n);
}

void vti_im2col_cost(const vt_program *p, const vt_opdesc *o, vt_opcost *out) { move_cost(p, o, out); }

/* ------------------------------------------------------------ DGATHER */
/* iarg B, H, W, Co, k, stride, pad (the convolution's input size, its OUTPUT channels):
 * dY [B*Ho*Wo, Co] -> G [B*H*W, k*k*Co] (vt_conv_dgather) */

vt_err vti_dgather_check(const vt_program *p, const vt_opdesc *o)
{
    vt_conv_geom g;
    VT_FORWARD_IF_ERROR(geom(o, &g, 0));
    size_t nout = prod5(g.B, g.Ho, g.Wo, g.C, 1), ng = prod5(g.B * g.H, g.W, g.k, g.k, g.C);
    ERR_IF(!nout || !ng || g.B * g.H / g.B != g.H, "program: \"%s\": the convolution is too large", o->name);
    VT_FORWARD_IF_ERROR(want(p, o, o->in[0], VT_DT_F32, nout, "output gradient"));
    return want(p, o, o->out[0], VT_DT_F32, ng, "gathered gradient");
}

vt_err vti_dgather_exec(vt_opctx *c) /* exact */
{
    vt_conv_geom g;
    VT_FORWARD_IF_ERROR(geom(c->o, &g, 0));
    vt_conv_dgather_f32(&g, g.C, IN(0), OUT(0));
    return VT_OK;
}

void vti_dgather_cost(const vt_program *p, const vt_opdesc *o, vt_opcost *out) { move_cost(p, o, out); }

/* ------------------------------------------------------------ WPERM */
/* iarg k, C, Co: W [k*k*C, Co] -> W' [k*k*Co, C] */

vt_err vti_wperm_check(const vt_program *p, const vt_opdesc *o)
{
    const int64_t *a = o->iarg;
    ERR_IF(a[0] < 1 || a[1] < 1 || a[2] < 1 || a[0] > 64 || a[1] > 65536 || a[2] > 65536,
           "program: \"%s\": bad weight shape", o->name);
    size_t n = (size_t)(a[0] * a[0] * a[1] * a[2]);
    VT_FORWARD_IF_ERROR(want(p, o, o->in[0], VT_DT_F32, n, "weight"));
    return want(p, o, o->out[0], VT_DT_F32, n, "transposed weight");
}

vt_err vti_wperm_exec(vt_opctx *c) /* exact */
{
    const int64_t *a = c->o->iarg;
    vt_conv_wperm_f32((size_t)a[0], (size_t)a[1], (size_t)a[2], IN(0), OUT(0));
    return VT_OK;
}

void vti_wperm_cost(const vt_program *p, const vt_opdesc *o, vt_opcost *out) { move_cost(p, o, out); }

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
    ROUND(c->s.x64, &bd, 1, x->shape[1], OUT(0));
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

/* ------------------------------------------------------------ batch normalisation */

/* tensor k of o is F32 [C] */
static vt_err vec(const vt_program *p, const vt_opdesc *o, uint32_t id, size_t C, const char *what)
{
    return want(p, o, id, VT_DT_F32, C, what);
}

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
    VT_FORWARD_IF_ERROR(vec(p, o, o->in[1], x->shape[1], "column sum"));
    return want(p, o, o->out[0], VT_DT_F32, x->n, "output");
}

vt_err vti_bn_center_exec(vt_opctx *c)
{
    const vt_tensor *x = T(c->prog, c->o->in[0]);
    vt_bn_center(x->shape[0], x->shape[1], IN(0), IN(1), c->s.x64);
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
    for (uint32_t k = 1; k < 4; k++) VT_FORWARD_IF_ERROR(vec(p, o, o->in[k], x->shape[1], "channel vector"));
    return want(p, o, o->out[0], VT_DT_F32, x->n, "output");
}

vt_err vti_bn_apply_exec(vt_opctx *c)
{
    const vt_tensor *x = T(c->prog, c->o->in[0]);
    vt_bn_apply(x->shape[0], x->shape[1], IN(0), IN(1), IN(2), IN(3), c->o->farg[0], c->s.x64);
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
    for (uint32_t k = 0; k < 4; k++) VT_FORWARD_IF_ERROR(vec(p, o, o->in[k], C, "channel vector"));
    for (uint32_t k = 0; k < 2; k++) VT_FORWARD_IF_ERROR(vec(p, o, o->out[k], C, "running statistic"));
    return VT_OK;
}

vt_err vti_bn_running_exec(vt_opctx *c)
{
    /* both statistics in one pass; their elements are numbered mean then variance (vt_ops.h) */
    size_t C = NOUT(0);
    vt_bn_running((size_t)c->o->iarg[0], C, IN(0), IN(1), IN(2), IN(3), c->o->farg[0], c->s.x64);
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
    VT_FORWARD_IF_ERROR(vec(p, o, o->in[0], C, "channel vector"));
    VT_FORWARD_IF_ERROR(vec(p, o, o->in[1], C, "channel vector"));
    return vec(p, o, o->out[0], C, "output");
}

vt_err vti_bn_gamma_grad_exec(vt_opctx *c)
{
    size_t C = NOUT(0);
    vt_bn_gamma_grad((size_t)c->o->iarg[0], C, IN(0), IN(1), c->o->farg[0], c->s.x64);
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
    for (uint32_t k = 2; k < 6; k++) VT_FORWARD_IF_ERROR(vec(p, o, o->in[k], x->shape[1], "channel vector"));
    return want(p, o, o->out[0], VT_DT_F32, x->n, "output");
}

vt_err vti_bn_backward_exec(vt_opctx *c)
{
    const vt_tensor *x = T(c->prog, c->o->in[0]);
    vt_bn_backward(x->shape[0], x->shape[1], IN(0), IN(1), IN(2), IN(3), IN(4), IN(5), c->o->farg[0], c->s.x64);
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
    for (uint32_t k = 1; k < 5; k++) VT_FORWARD_IF_ERROR(vec(p, o, o->in[k], x->shape[1], "channel vector"));
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

/* ------------------------------------------------------------ max pooling */
/* iarg B, H, W, C, k: x [B*H*W, C] -> y [B*(H/k)*(W/k), C]; backward x, dy -> dx. Exact. */

static vt_err pool_args(const vt_opdesc *o, size_t *B, size_t *H, size_t *W, size_t *C, size_t *k)
{
    const int64_t *a = o->iarg;
    ERR_IF(a[0] < 1 || a[1] < 1 || a[2] < 1 || a[3] < 1 || a[4] < 1 || a[0] > (1 << 20) || a[1] > 4096 ||
               a[2] > 4096 || a[3] > 65536 || a[1] % a[4] || a[2] % a[4],
           "program: \"%s\": bad pooling arguments (the window must divide the image)", o->name);
    *B = (size_t)a[0], *H = (size_t)a[1], *W = (size_t)a[2], *C = (size_t)a[3], *k = (size_t)a[4];
    return VT_OK;
}

vt_err vti_maxpool_check(const vt_program *p, const vt_opdesc *o)
{
    size_t B = 0, H = 0, W = 0, C = 0, k = 1;
    VT_FORWARD_IF_ERROR(pool_args(o, &B, &H, &W, &C, &k));
    VT_FORWARD_IF_ERROR(want(p, o, o->in[0], VT_DT_F32, B * H * W * C, "input"));
    return want(p, o, o->out[0], VT_DT_F32, B * (H / k) * (W / k) * C, "output");
}

vt_err vti_maxpool_exec(vt_opctx *c)
{
    size_t B = 0, H = 0, W = 0, C = 0, k = 1;
    VT_FORWARD_IF_ERROR(pool_args(c->o, &B, &H, &W, &C, &k));
    vt_maxpool_f32(B, H, W, C, k, IN(0), OUT(0));
    return VT_OK;
}

void vti_maxpool_cost(const vt_program *p, const vt_opdesc *o, vt_opcost *out) { move_cost(p, o, out); }

vt_err vti_maxpool_backward_check(const vt_program *p, const vt_opdesc *o)
{
    size_t B = 0, H = 0, W = 0, C = 0, k = 1;
    VT_FORWARD_IF_ERROR(pool_args(o, &B, &H, &W, &C, &k));
    VT_FORWARD_IF_ERROR(want(p, o, o->in[0], VT_DT_F32, B * H * W * C, "input"));
    VT_FORWARD_IF_ERROR(want(p, o, o->in[1], VT_DT_F32, B * (H / k) * (W / k) * C, "output gradient"));
    return want(p, o, o->out[0], VT_DT_F32, B * H * W * C, "input gradient");
}

vt_err vti_maxpool_backward_exec(vt_opctx *c)
{
    size_t B = 0, H = 0, W = 0, C = 0, k = 1;
    VT_FORWARD_IF_ERROR(pool_args(c->o, &B, &H, &W, &C, &k));
    vt_maxpool_backward_f32(B, H, W, C, k, IN(0), IN(1), OUT(0));
    return VT_OK;
}

void vti_maxpool_backward_cost(const vt_program *p, const vt_opdesc *o, vt_opcost *out) { move_cost(p, o, out); }

/* ------------------------------------------------------------ global average pooling */
/* iarg B, HW: x [B*HW, C] -> y [B, C], y_bc = sum_t x_(b,t),c * w with w = RN32(1/HW): a reduction
 * of exact products (vt_reduce); backward dy [B, C] -> dx [B*HW, C] = dy * w. */

static vt_err gap_args(const vt_program *p, const vt_opdesc *o, uint32_t big, size_t *B, size_t *HW, size_t *C)
{
    const vt_tensor *x = T(p, big);
    ERR_IF(o->iarg[0] < 1 || o->iarg[1] < 1 || o->iarg[0] > (1 << 20) || o->iarg[1] > ((int64_t)1 << 24) ||
               x->rank != 2 || x->dtype != VT_DT_F32 || x->shape[0] != (uint64_t)(o->iarg[0] * o->iarg[1]),
           "program: \"%s\": bad pooling arguments or input", o->name);
    *B = (size_t)o->iarg[0], *HW = (size_t)o->iarg[1], *C = x->shape[1];
    return VT_OK;
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
