/* vt_fam_move.c - gathers and moves: outputs are input values moved, never computed (exact; no
 * rounding): augmentation (crop and flip), the convolution's gathers and weight transpose, max
 * pooling and its backward scatter, one-hot, the attention's head split and merge, the client models'
 * layout changes (to_channels_first, to_channels_last).
 * Each kind's check, exec and cost, named by its stem in the list (vt_kinds.h). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../common/vt_bytes.h"
#include "../kernels/vt_cnn.h"
#include "../kernels/vt_gpt.h"
#include "../kernels/vt_kernels.h"
#include "vt_ops_int.h"
#include "vt_philox.h"
#include "vt_philox_hd.h"

/* ------------------------------------------------------------ AUGMENT */

vt_err vti_augment_check(const vt_program *p, const vt_opdesc *o)
{
    const int64_t *a = o->iarg;
    const vt_tensor *x = T(p, o->in[0]);
    VT_RETURN_ERROR_IF(a[0] < 1 || a[1] < 1 || a[2] < 1 || a[0] > 4096 || a[1] > 4096 || a[2] > 4096 || a[3] < 0 ||
                           a[3] > a[1] || a[3] > a[2] || (a[4] != 0 && a[4] != 1) || x->rank != 2 ||
                           x->dtype != VT_DT_F32 || (int64_t)x->shape[1] != a[0] * a[1] * a[2],
                       VT_ERR_INTERNAL, "program: \"%s\": bad augmentation arguments or input", o->name);
    return want(p, o, o->out[0], VT_DT_F32, x->n, "output");
}

void vt_augment_draw(uint64_t seed, uint64_t step, uint64_t b, uint32_t pad, int flip, uint32_t *oy, uint32_t *ox,
                     int *fl)
{
    vti_augment_draw(seed, step, b, pad, flip, oy, ox, fl); /* model/vt_philox_hd.h (shared with the GPU) */
}

int64_t vt_augment_source(size_t H, size_t W, uint32_t pad, uint32_t oy, uint32_t ox, int fl, size_t e)
{
    return vti_augment_source(H, W, pad, oy, ox, fl, e);
}

vt_err vti_augment_exec(vt_opctx *c) /* exact: values are moved, never computed */
{
    const int64_t *a = c->o->iarg;
    const size_t C = (size_t)a[0], H = (size_t)a[1], W = (size_t)a[2], d = C * H * W;
    const uint32_t pad = (uint32_t)a[3];
    const vt_tensor *x = T(c->prog, c->o->in[0]);
    const float *in = IN(0);
    float *out = OUT(0);
    for (size_t b = 0; b < x->shape[0]; b++) {
        uint32_t oy, ox;
        int fl;
        vt_augment_draw((uint64_t)a[5], c->step, vti_slot(c, b), pad, (int)a[4], &oy, &ox, &fl);
        for (size_t e = 0; e < d; e++) {
            int64_t src = vt_augment_source(H, W, pad, oy, ox, fl, e);
            out[b * d + e] = src < 0 ? 0.0f : in[b * d + (size_t)src];
        }
    }
    return VT_OK;
}

void vti_augment_cost(const vt_program *p, const vt_opdesc *o, vt_opcost *out)
{
    memset(out, 0, sizeof *out);
    out->bytes = 8.0 * (double)T(p, o->in[0])->n;
}

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

/* ONEHOT: tokens [n] U8 -> [n, V] F32 (exact); iarg V */
vt_err vti_onehot_check(const vt_program *p, const vt_opdesc *o)
{
    const vt_tensor *tok = T(p, o->in[0]);
    ERR_IF(tok->dtype != VT_DT_U8 || o->iarg[0] < 1 || o->iarg[0] > 256, "program: \"%s\": bad one-hot", o->name);
    return f32_shape(p, o, o->out[0], tok->n * (size_t)o->iarg[0], "output");
}

vt_err vti_onehot_exec(vt_opctx *c)
{
    vt_onehot_f32(T(c->prog, c->o->in[0])->n, (size_t)c->o->iarg[0], (const uint8_t *)IN(0), OUT(0));
    return VT_OK;
}

void vti_onehot_cost(const vt_program *p, const vt_opdesc *o, vt_opcost *out)
{
    memset(out, 0, sizeof *out);
    out->bytes = 4.0 * (double)T(p, o->out[0])->n;
}

/* ------------------------------------------------------------ heads */
/* iarg B, T, H, D. SPLIT: qkv [B*T, 3C] -> q, k, v [B*H*T, D]; MERGE: o -> y [B*T, C];
 * JOIN: dq, dk, dv -> dqkv [B*T, 3C]. Exact. */

static vt_err heads_args(const vt_opdesc *o, size_t *B, size_t *Tn, size_t *H, size_t *D)
{
    const int64_t *a = o->iarg;
    ERR_IF(a[0] < 1 || a[1] < 1 || a[2] < 1 || a[3] < 1 || a[0] > 65536 || a[1] > 65536 || a[2] > 1024 || a[3] > 4096,
           "program: \"%s\": bad head arguments", o->name);
    *B = (size_t)a[0], *Tn = (size_t)a[1], *H = (size_t)a[2], *D = (size_t)a[3];
    return VT_OK;
}

vt_err vti_heads_check(const vt_program *p, const vt_opdesc *o)
{
    size_t B = 0, Tn = 0, H = 0, D = 0;
    VT_FORWARD_IF_ERROR(heads_args(o, &B, &Tn, &H, &D));
    size_t n = B * Tn * H * D;
    if (o->kind == VT_OPK_HEADS_SPLIT) {
        VT_FORWARD_IF_ERROR(f32_shape(p, o, o->in[0], 3 * n, "qkv"));
        for (uint32_t k = 0; k < 3; k++) VT_FORWARD_IF_ERROR(f32_shape(p, o, o->out[k], n, "head tensor"));
        return VT_OK;
    }
    if (o->kind == VT_OPK_HEADS_JOIN) {
        for (uint32_t k = 0; k < 3; k++) VT_FORWARD_IF_ERROR(f32_shape(p, o, o->in[k], n, "head tensor"));
        return f32_shape(p, o, o->out[0], 3 * n, "qkv");
    }
    VT_FORWARD_IF_ERROR(f32_shape(p, o, o->in[0], n, "head tensor"));
    return f32_shape(p, o, o->out[0], n, "output");
}

vt_err vti_heads_exec(vt_opctx *c)
{
    size_t B = 0, Tn = 0, H = 0, D = 0;
    VT_FORWARD_IF_ERROR(heads_args(c->o, &B, &Tn, &H, &D));
    if (c->o->kind == VT_OPK_HEADS_SPLIT) vt_heads_split_f32(B, Tn, H, D, IN(0), OUT(0), OUT(1), OUT(2));
    else if (c->o->kind == VT_OPK_HEADS_JOIN) vt_heads_join_f32(B, Tn, H, D, IN(0), IN(1), IN(2), OUT(0));
    else if (c->o->kind == VT_OPK_HEADS_UNMERGE) vt_heads_unmerge_f32(B, Tn, H, D, IN(0), OUT(0));
    else vt_heads_merge_f32(B, Tn, H, D, IN(0), OUT(0));
    return VT_OK;
}

void vti_heads_cost(const vt_program *p, const vt_opdesc *o, vt_opcost *out)
{
    memset(out, 0, sizeof *out);
    for (uint32_t k = 0; k < o->n_in; k++) out->bytes += 8.0 * (double)T(p, o->in[k])->n;
}

/* ------------------------------------------------------------ layouts */
/* iarg B, HW, C. to_channels_first (NHWC_TO_NCHW): x [B*HW, C] -> y [B, C*HW]; to_channels_last
 * (NCHW_TO_NHWC): the inverse. Exact: every value moved once, none computed. The tensors' shapes may
 * be any with B*HW*C elements (the client's weights are permuted by the same kinds). */

static vt_err layout_args(const vt_program *p, const vt_opdesc *o, size_t *B, size_t *HW, size_t *C)
{
    const int64_t *a = o->iarg;
    ERR_IF(a[0] < 1 || a[1] < 1 || a[2] < 1 || a[0] > (1 << 30) || a[1] > (1 << 30) || a[2] > (1 << 30) ||
               (uint64_t)a[0] * (uint64_t)a[1] > ((uint64_t)1 << 40) / (uint64_t)a[2],
           "program: \"%s\": bad layout arguments", o->name);
    (void)p;
    *B = (size_t)a[0], *HW = (size_t)a[1], *C = (size_t)a[2];
    return VT_OK;
}

vt_err vti_layout_check(const vt_program *p, const vt_opdesc *o)
{
    size_t B = 0, HW = 0, C = 0;
    VT_FORWARD_IF_ERROR(layout_args(p, o, &B, &HW, &C));
    VT_FORWARD_IF_ERROR(f32_shape(p, o, o->in[0], B * HW * C, "input"));
    return f32_shape(p, o, o->out[0], B * HW * C, "output");
}

/* the one loop of both directions and both precisions */
#define LAYOUT_MOVE(to_first, B, HW, C, x, y)                                                                          \
    for (size_t b_ = 0; b_ < (B); b_++)                                                                                \
        for (size_t t_ = 0; t_ < (HW); t_++)                                                                           \
            for (size_t c_ = 0; c_ < (C); c_++) {                                                                      \
                const size_t last_ = (b_ * (HW) + t_) * (C) + c_, first_ = (b_ * (C) + c_) * (HW) + t_;                \
                if (to_first) (y)[first_] = (x)[last_];                                                                \
                else (y)[last_] = (x)[first_];                                                                         \
            }

vt_err vti_layout_exec(vt_opctx *c) /* exact: values are moved */
{
    size_t B = 0, HW = 0, C = 0;
    VT_FORWARD_IF_ERROR(layout_args(c->prog, c->o, &B, &HW, &C));
    const float *x = IN(0);
    float *y = OUT(0);
    LAYOUT_MOVE(c->o->kind == VT_OPK_NHWC_TO_NCHW, B, HW, C, x, y);
    return VT_OK;
}

void vti_layout_cost(const vt_program *p, const vt_opdesc *o, vt_opcost *out) { move_cost(p, o, out); }

/* each direction's backward is the other, with the same arguments, named "<the forward operation's
 * name> backward" (a layer may hold two: a convolution's weight moves) */
vt_grad_rule vti_layout_grad(vt_program *p, const vt_opdesc *o, uint32_t i, const uint32_t *dy, uint32_t dx,
                             const char *layer)
{
    (void)i, (void)layer;
    if (dx != VT_GRAD_QUERY)
        vt_prog_op(p, o->kind == VT_OPK_NHWC_TO_NCHW ? VT_OPK_NCHW_TO_NHWC : VT_OPK_NHWC_TO_NCHW, dy, 1, &dx, 1,
                   o->iarg, o->n_iarg, NULL, 0, "%s backward", o->name);
    return VT_GRAD_OPS;
}

/* ------------------------------------------------------------ the plain forms (vt_plainctx) */

/* the convolution's geometry (the program was checked: it is valid) */
static vt_conv_geom plain_geom(const vt_plainctx *c, int chw)
{
    const int64_t *a = c->o->iarg;
    vt_conv_geom g;
    memset(&g, 0, sizeof g);
    if (vt_conv_geom_make(&g, a[0], a[1], a[2], a[3], a[4], a[5], a[6], chw)) memset(&g, 0, sizeof g);
    return g;
}

vt_err vti_augment_plain(vt_plainctx *c)
{
    VTI_PLAIN_BOTH(c, {
        const int64_t *a = c->o->iarg;
        const size_t C = (size_t)a[0], H = (size_t)a[1], W = (size_t)a[2], d = C * H * W, B = SHAPE(0, 0);
        const uint32_t pad = (uint32_t)a[3];
        const real *in = PX(0);
        real *out = PY(0);
        for (size_t b = 0; b < B; b++) {
            uint32_t oy, ox;
            int fl;
            vt_augment_draw((uint64_t)a[5], c->step, b, pad, (int)a[4], &oy, &ox, &fl);
            for (size_t e = 0; e < d; e++) {
                int64_t src = vt_augment_source(H, W, pad, oy, ox, fl, e);
                out[b * d + e] = src < 0 ? (real)0 : in[b * d + (size_t)src];
            }
        }
        return VT_OK;
    })
}

vt_err vti_im2col_plain(vt_plainctx *c)
{
    VTI_PLAIN_BOTH(c, {
        vt_conv_geom g = plain_geom(c, (int)c->o->iarg[7]);
        PTG(vt_im2col)(&g, PX(0), PY(0));
        return VT_OK;
    })
}

vt_err vti_dgather_plain(vt_plainctx *c)
{
    VTI_PLAIN_BOTH(c, {
        vt_conv_geom g = plain_geom(c, 0);
        PTG(vt_conv_dgather)(&g, g.C, PX(0), PY(0));
        return VT_OK;
    })
}

vt_err vti_wperm_plain(vt_plainctx *c)
{
    VTI_PLAIN_BOTH(c, {
        const int64_t *a = c->o->iarg;
        PTG(vt_conv_wperm)((size_t)a[0], (size_t)a[1], (size_t)a[2], PX(0), PY(0));
        return VT_OK;
    })
}

vt_err vti_maxpool_plain(vt_plainctx *c)
{
    VTI_PLAIN_BOTH(c, {
        const int64_t *a = c->o->iarg;
        PTG(vt_maxpool)((size_t)a[0], (size_t)a[1], (size_t)a[2], (size_t)a[3], (size_t)a[4], PX(0), PY(0));
        return VT_OK;
    })
}

vt_err vti_maxpool_backward_plain(vt_plainctx *c)
{
    VTI_PLAIN_BOTH(c, {
        const int64_t *a = c->o->iarg;
        PTG(vt_maxpool_backward)((size_t)a[0], (size_t)a[1], (size_t)a[2], (size_t)a[3], (size_t)a[4], PX(0), PX(1), PY(0));
        return VT_OK;
    })
}

vt_err vti_onehot_plain(vt_plainctx *c)
{
    VTI_PLAIN_BOTH(c, {
        PTG(vt_onehot)(c->prog->t[c->o->in[0]].n, (size_t)c->o->iarg[0], PTP(c, c->o->in[0]), PY(0));
        return VT_OK;
    })
}

vt_err vti_heads_plain(vt_plainctx *c)
{
    VTI_PLAIN_BOTH(c, {
        const int64_t *a = c->o->iarg;
        size_t B = (size_t)a[0], Tn = (size_t)a[1], H = (size_t)a[2], D = (size_t)a[3];
        if (c->o->kind == VT_OPK_HEADS_SPLIT) PTG(vt_heads_split)(B, Tn, H, D, PX(0), PY(0), PY(1), PY(2));
        else if (c->o->kind == VT_OPK_HEADS_JOIN) PTG(vt_heads_join)(B, Tn, H, D, PX(0), PX(1), PX(2), PY(0));
        else if (c->o->kind == VT_OPK_HEADS_UNMERGE) PTG(vt_heads_unmerge)(B, Tn, H, D, PX(0), PY(0));
        else PTG(vt_heads_merge)(B, Tn, H, D, PX(0), PY(0));
        return VT_OK;
    })
}

/* max pooling's backward: maxpool_backward(x, dY), the same window */
vt_grad_rule vti_maxpool_grad(vt_program *p, const vt_opdesc *o, uint32_t i, const uint32_t *dy, uint32_t dx,
                              const char *layer)
{
    (void)i;
    return vti_grad_pair(p, VT_OPK_MAXPOOL_BWD, o, 0, dy, dx, layer);
}

vt_err vti_layout_plain(vt_plainctx *c)
{
    VTI_PLAIN_BOTH(c, {
        const int64_t *a = c->o->iarg;
        const size_t B = (size_t)a[0], HW = (size_t)a[1], C = (size_t)a[2];
        const real *x = PX(0);
        real *y = PY(0);
        LAYOUT_MOVE(c->o->kind == VT_OPK_NHWC_TO_NCHW, B, HW, C, x, y);
        return VT_OK;
    })
}
