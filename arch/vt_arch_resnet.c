/* vt_arch_resnet.c - the builder of arch "resnet": a ResNet-style network for small images
 * (docs/architecture.md "The residual CNN").
 *
 *   stem      3x3 convolution (channels-first input) -> batch norm -> ReLU [-> 2x2 max pool]
 *   stage s   resnet_blocks basic blocks of width resnet_width * 2^s; the first block of every
 *             stage after the first has stride 2 and a 1x1 strided projection shortcut:
 *             out = relu(bn2(conv2(relu(bn1(conv1(x))))) + shortcut(x))
 *   head      global average pool -> fully connected -> softmax cross-entropy
 *   update    SGD with momentum and weight decay (or Adam) for every parameter
 *
 * Convolutions have no bias (batch norm follows each). A convolution is an im2col gather and a
 * GEMM; its input gradient a gather of the output gradient and a GEMM with the per-tap transposed
 * weight; its weight gradient the GEMM im2col^T x dY (kernels/vt_cnn.h). Batch norm in training
 * mode is a column sum, a centring, a column dot product and an elementwise application, and
 * updates its running statistics (state buffers) in the step; the evaluation pass uses them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vt_arch.h"

#define ARR(...) ((const uint32_t[]){__VA_ARGS__})
#define IARG(...) ((const int64_t[]){__VA_ARGS__})
#define FARG(...) ((const double[]){__VA_ARGS__})

/* one convolution followed by its batch norm */
typedef struct {
    char conv[64], bn[64];   /* name prefixes: "layer1.0.conv1", "layer1.0.bn1" */
    uint32_t cin, cout, k, s, pad, H, W, Ho, Wo, chw;
    uint32_t w, gamma, beta, rm, rv; /* state tensors */
    /* step tensors */
    uint32_t col, z, s1, xc, s2, y; /* col: step program 1 only */
    uint32_t x;                      /* the input of the step's forward pass */
} unit;

typedef struct {
    uint32_t c1, c2, sc; /* unit indices; sc = UINT32_MAX: identity shortcut */
    uint32_t a1, sum, out;
} block;

#define MAX_UNITS (1 + 6 * 16 * 3)
#define MAX_BLOCKS (6 * 16)

typedef struct {
    vt_program *p;
    const vt_recipe *rcp;
    uint32_t B;
    unit u[MAX_UNITS];
    uint32_t nu;
    block b[MAX_BLOCKS];
    uint32_t nb;
    uint32_t params[4 * MAX_UNITS], grads[4 * MAX_UNITS], np;
    /* the builder's steps share: the last stage's channels and positions, the classes, fc's parameters,
     * the step's inputs, the stem's and the head's tensors */
    uint32_t C, HW, classes, fcw, fcb, x, y, xa, tstep, lr, sy, sa, stem_out, last, gp, zg, z, probs, loss;
} net;

static uint32_t add_unit(net *n, const char *conv, const char *bn, uint32_t cin, uint32_t cout, uint32_t k,
                         uint32_t s, uint32_t H, uint32_t W, uint32_t chw)
{
    unit *u = &n->u[n->nu];
    memset(u, 0, sizeof *u);
    snprintf(u->conv, sizeof u->conv, "%s", conv);
    snprintf(u->bn, sizeof u->bn, "%s", bn);
    u->cin = cin, u->cout = cout, u->k = k, u->s = s, u->pad = k / 2, u->H = H, u->W = W, u->chw = chw;
    u->Ho = (H + 2 * u->pad - k) / s + 1, u->Wo = (W + 2 * u->pad - k) / s + 1;
    return n->nu++;
}

/* the units and blocks of the recipe's network, before any tensor exists */
static void layout(net *n, uint32_t *C_last, uint32_t *HW_last)
{
    const vt_recipe *rcp = n->rcp;
    uint32_t H = rcp->image_height, W = rcp->image_width, w = rcp->resnet_width;
    add_unit(n, "stem.conv", "stem.bn", rcp->image_channels, w, 3, 1, H, W, 1);
    if (rcp->resnet_pool) H /= 2, W /= 2;
    uint32_t cin = w;
    for (uint32_t s = 0; s < rcp->resnet_stages; s++) {
        uint32_t cout = w << s;
        for (uint32_t j = 0; j < rcp->resnet_blocks; j++) {
            uint32_t stride = s > 0 && j == 0 ? 2 : 1;
            char c1[64], b1[64], c2[64], b2[64];
            snprintf(c1, sizeof c1, "layer%u.%u.conv1", s + 1, j);
            snprintf(b1, sizeof b1, "layer%u.%u.bn1", s + 1, j);
            snprintf(c2, sizeof c2, "layer%u.%u.conv2", s + 1, j);
            snprintf(b2, sizeof b2, "layer%u.%u.bn2", s + 1, j);
            block *b = &n->b[n->nb++];
            b->c1 = add_unit(n, c1, b1, cin, cout, 3, stride, H, W, 0);
            uint32_t Ho = n->u[b->c1].Ho, Wo = n->u[b->c1].Wo;
            b->c2 = add_unit(n, c2, b2, cout, cout, 3, 1, Ho, Wo, 0);
            b->sc = UINT32_MAX;
            if (stride != 1 || cin != cout) {
                snprintf(c1, sizeof c1, "layer%u.%u.shortcut.conv", s + 1, j);
                snprintf(b1, sizeof b1, "layer%u.%u.shortcut.bn", s + 1, j);
                b->sc = add_unit(n, c1, b1, cin, cout, 1, stride, H, W, 0);
            }
            H = Ho, W = Wo, cin = cout;
        }
    }
    *C_last = cin, *HW_last = H * W;
}

static uint32_t act(net *n, vt_tclass cls, uint32_t rows, uint32_t cols, const char *pre, const char *what)
{
    return vt_prog_tensor(n->p, cls, VT_DT_F32, 2, ARR(rows, cols), "%s.%s", pre, what);
}

/* the forward pass of unit u on x (training: batch statistics, running statistics updated) */
/* the convolution of unit u on x into u->z: step program 2's conv2d, or program 1's im2col and GEMM */
static void conv_fwd(net *n, const unit *u, uint32_t x)
{
    vt_program *p = n->p;
    const uint32_t M = n->B * u->Ho * u->Wo, kk = u->k * u->k * u->cin;
    if (n->rcp->program_version >= 2) {
        vt_prog_op(p, VT_OPK_CONV2D, ARR(x, u->w), 2, ARR(u->z), 1,
                   IARG(n->B, u->H, u->W, u->cin, u->k, u->s, u->pad, u->chw, u->cout), 9, NULL, 0, "%s forward",
                   u->conv);
        return;
    }
    vt_prog_op(p, VT_OPK_IM2COL, ARR(x), 1, ARR(u->col), 1, IARG(n->B, u->H, u->W, u->cin, u->k, u->s, u->pad, u->chw),
               8, NULL, 0, "%s im2col", u->conv);
    vt_prog_op(p, VT_OPK_MATMUL, ARR(u->col, u->w), 2, ARR(u->z), 1, IARG(0, 0, M, u->cout, kk), 5, NULL, 0,
               "%s forward GEMM", u->conv);
}

static uint32_t unit_fwd(net *n, unit *u, uint32_t x)
{
    vt_program *p = n->p;
    const uint32_t M = n->B * u->Ho * u->Wo, kk = u->k * u->k * u->cin;
    u->x = x;
    if (n->rcp->program_version < 2) u->col = act(n, VT_TC_ACT, M, kk, u->conv, "columns");
    u->z = act(n, VT_TC_ACT, M, u->cout, u->conv, "out");
    u->s1 = vt_prog_tensor(p, VT_TC_ACT, VT_DT_F32, 1, ARR(u->cout), "%s.sum", u->bn);
    u->xc = act(n, VT_TC_ACT, M, u->cout, u->bn, "centered");
    u->s2 = vt_prog_tensor(p, VT_TC_ACT, VT_DT_F32, 1, ARR(u->cout), "%s.sumsq", u->bn);
    u->y = act(n, VT_TC_ACT, M, u->cout, u->bn, "out");
    if (p->bad) return UINT32_MAX;
    conv_fwd(n, u, x);
    vt_prog_op(p, VT_OPK_COLSUM, ARR(u->z), 1, ARR(u->s1), 1, NULL, 0, NULL, 0, "%s sum", u->bn);
    vt_prog_op(p, VT_OPK_BN_CENTER, ARR(u->z, u->s1), 2, ARR(u->xc), 1, NULL, 0, NULL, 0, "%s centre", u->bn);
    vt_prog_op(p, VT_OPK_COLDOT, ARR(u->xc, u->xc), 2, ARR(u->s2), 1, NULL, 0, NULL, 0, "%s sum of squares", u->bn);
    vt_prog_op(p, VT_OPK_BN_APPLY, ARR(u->xc, u->s2, u->gamma, u->beta), 4, ARR(u->y), 1, NULL, 0,
               FARG(n->rcp->bn_eps), 1, "%s apply", u->bn);
    vt_prog_op(p, VT_OPK_BN_RUNNING, ARR(u->s1, u->s2, u->rm, u->rv), 4, ARR(u->rm, u->rv), 2, IARG(M), 1,
               FARG(n->rcp->bn_momentum), 1, "%s running statistics", u->bn);
    return u->y;
}

/* the evaluation pass of unit u (running statistics; the step's tensors reused) */
static void unit_eval(net *n, const unit *u, uint32_t x)
{
    vt_program *p = n->p;
    conv_fwd(n, u, x);
    vt_prog_op(p, VT_OPK_BN_EVAL, ARR(u->z, u->rm, u->rv, u->gamma, u->beta), 5, ARR(u->y), 1, NULL, 0,
               FARG(n->rcp->bn_eps), 1, "%s (running statistics)", u->bn);
}

/* the backward pass of unit u from dy (the gradient of its batch norm's output); returns the
 * gradient of its input (need_dx) or UINT32_MAX */
static uint32_t unit_bwd(net *n, const unit *u, uint32_t dy, int need_dx, uint32_t *gw, uint32_t *gg, uint32_t *gb)
{
    vt_program *p = n->p;
    const uint32_t M = n->B * u->Ho * u->Wo, kk = u->k * u->k * u->cin, Min = n->B * u->H * u->W;
    char nm[80];
    snprintf(nm, sizeof nm, "%s.bias", u->bn);
    *gb = vt_prog_tensor(p, VT_TC_GRAD, VT_DT_F32, 1, ARR(u->cout), "%s.grad", nm);
    uint32_t g2 = vt_prog_tensor(p, VT_TC_GRAD, VT_DT_F32, 1, ARR(u->cout), "%s.out_dot_centered", u->bn);
    *gg = vt_prog_tensor(p, VT_TC_GRAD, VT_DT_F32, 1, ARR(u->cout), "%s.weight.grad", u->bn);
    uint32_t dz = act(n, VT_TC_GRAD, M, u->cout, u->conv, "out.grad");
    uint32_t wshape[4] = {u->k, u->k, u->cin, u->cout};
    *gw = vt_prog_tensor(p, VT_TC_GRAD, VT_DT_F32, 4, wshape, "%s.weight.grad", u->conv);
    uint32_t G = 0, wp = 0, dx = UINT32_MAX;
    const int v2 = n->rcp->program_version >= 2; /* step program 2: conv2d_input_grad, no G or W' tensor */
    if (need_dx) {
        if (!v2) {
            G = act(n, VT_TC_GRAD, Min, u->k * u->k * u->cout, u->conv, "out.grad.gathered");
            wp = act(n, VT_TC_ACT, u->k * u->k * u->cout, u->cin, u->conv, "weight.transposed");
        }
        dx = act(n, VT_TC_GRAD, Min, u->cin, u->conv, "in.grad");
    }
    if (p->bad) return UINT32_MAX;
    vt_prog_op(p, VT_OPK_COLSUM, ARR(dy), 1, ARR(*gb), 1, NULL, 0, NULL, 0, "%s bias gradient", u->bn);
    vt_prog_op(p, VT_OPK_COLDOT, ARR(dy, u->xc), 2, ARR(g2), 1, NULL, 0, NULL, 0, "%s gradient dot centred", u->bn);
    vt_prog_op(p, VT_OPK_BN_GAMMA_GRAD, ARR(g2, u->s2), 2, ARR(*gg), 1, IARG(M), 1, FARG(n->rcp->bn_eps), 1,
               "%s weight gradient", u->bn);
    vt_prog_op(p, VT_OPK_BN_BACKWARD, ARR(dy, u->xc, u->s2, *gb, g2, u->gamma), 6, ARR(dz), 1, NULL, 0,
               FARG(n->rcp->bn_eps), 1, "%s backward", u->bn);
    if (v2)
        vt_prog_op(p, VT_OPK_CONV2D_WGRAD, ARR(u->x, dz), 2, ARR(*gw), 1,
                   IARG(n->B, u->H, u->W, u->cin, u->k, u->s, u->pad, u->chw, u->cout), 9, NULL, 0,
                   "%s weight gradient", u->conv);
    else
        vt_prog_op(p, VT_OPK_MATMUL, ARR(u->col, dz), 2, ARR(*gw), 1, IARG(1, 0, kk, u->cout, M), 5, NULL, 0,
                   "%s weight-gradient GEMM", u->conv);
    if (need_dx && v2) {
        vt_prog_op(p, VT_OPK_CONV2D_DGRAD, ARR(dz, u->w), 2, ARR(dx), 1,
                   IARG(n->B, u->H, u->W, u->cin, u->k, u->s, u->pad, 0, u->cout), 9, NULL, 0, "%s input gradient",
                   u->conv);
    } else if (need_dx) {
        vt_prog_op(p, VT_OPK_CONV_DGATHER, ARR(dz), 1, ARR(G), 1, IARG(n->B, u->H, u->W, u->cout, u->k, u->s, u->pad), 7,
                   NULL, 0, "%s input-gradient gather", u->conv);
        vt_prog_op(p, VT_OPK_CONV_WPERM, ARR(u->w), 1, ARR(wp), 1, IARG(u->k, u->cin, u->cout), 3, NULL, 0,
                   "%s weight transpose", u->conv);
        vt_prog_op(p, VT_OPK_MATMUL, ARR(G, wp), 2, ARR(dx), 1, IARG(0, 0, Min, u->cin, u->k * u->k * u->cout), 5, NULL,
                   0, "%s input-gradient GEMM", u->conv);
    }
    return dx;
}

static void push_grads(net *n, uint32_t gw, uint32_t gg, uint32_t gb, uint32_t ui)
{
    /* the parameters were pushed conv weight, bn weight, bn bias per unit, unit by unit */
    n->grads[3 * ui] = gw, n->grads[3 * ui + 1] = gg, n->grads[3 * ui + 2] = gb;
}

/* ---- the builder's steps, in the order their tensors and operations are numbered */

/* the parameters: per unit conv weight, bn weight, bn bias; then fc */
static void resnet_params(net *n)
{
    vt_program *p = n->p;
    const vt_recipe *rcp = n->rcp;
    const uint32_t B = n->B, C = n->C, HW = n->HW, classes = n->classes;
    (void)rcp, (void)B, (void)C, (void)HW, (void)classes;
    for (uint32_t i = 0; i < n->nu; i++) {
        unit *u = &n->u[i];
        uint32_t wshape[4] = {u->k, u->k, u->cin, u->cout};
        u->w = vt_prog_tensor(p, VT_TC_PARAM, VT_DT_F32, 4, wshape, "%s.weight", u->conv);
        vt_prog_init_he(p, u->w, u->k * u->k * u->cin);
        u->gamma = vt_prog_tensor(p, VT_TC_PARAM, VT_DT_F32, 1, ARR(u->cout), "%s.weight", u->bn);
        vt_prog_init_one(p, u->gamma);
        u->beta = vt_prog_tensor(p, VT_TC_PARAM, VT_DT_F32, 1, ARR(u->cout), "%s.bias", u->bn);
        n->params[n->np++] = u->w, n->params[n->np++] = u->gamma, n->params[n->np++] = u->beta;
    }
    uint32_t fcw = vt_prog_tensor(p, VT_TC_PARAM, VT_DT_F32, 2, ARR(C, classes), "fc.weight");
    vt_prog_init_he(p, fcw, C);
    uint32_t fcb = vt_prog_tensor(p, VT_TC_PARAM, VT_DT_F32, 1, ARR(classes), "fc.bias");
    n->params[n->np++] = fcw, n->params[n->np++] = fcb;
    n->fcw = fcw, n->fcb = fcb;
}

/* the buffers: per unit running mean, running variance */
static void resnet_buffers(net *n)
{
    vt_program *p = n->p;
    for (uint32_t i = 0; i < n->nu; i++) {
        unit *u = &n->u[i];
        u->rm = vt_prog_tensor(p, VT_TC_BUFFER, VT_DT_F32, 1, ARR(u->cout), "%s.running_mean", u->bn);
        u->rv = vt_prog_tensor(p, VT_TC_BUFFER, VT_DT_F32, 1, ARR(u->cout), "%s.running_var", u->bn);
        vt_prog_init_one(p, u->rv);
    }
}

/* the forward pass: stem, blocks, pooling, fc, softmax (the step's forward range) */
static void resnet_forward(net *n)
{
    vt_program *p = n->p;
    const vt_recipe *rcp = n->rcp;
    const uint32_t B = n->B, C = n->C, HW = n->HW, classes = n->classes;
    (void)rcp, (void)B, (void)C, (void)HW, (void)classes;
    const uint32_t xa = n->xa, fcw = n->fcw, fcb = n->fcb;
    p->fwd_first = p->n_ops + 1;
    unit *st = &n->u[0];
    uint32_t sy = unit_fwd(n, st, xa);
    uint32_t sa = act(n, VT_TC_ACT, B * st->Ho * st->Wo, st->cout, "stem", "relu.out");
    vt_prog_op(p, VT_OPK_RELU, ARR(sy), 1, ARR(sa), 1, NULL, 0, NULL, 0, "stem relu");
    uint32_t h = sa;
    if (rcp->resnet_pool) {
        h = act(n, VT_TC_ACT, B * (st->Ho / 2) * (st->Wo / 2), st->cout, "stem", "pool.out");
        vt_prog_op(p, VT_OPK_MAXPOOL, ARR(sa), 1, ARR(h), 1, IARG(B, st->Ho, st->Wo, st->cout, 2), 5, NULL, 0,
                   "stem max pool");
    }
    const uint32_t stem_out = h;
    for (uint32_t j = 0; j < n->nb; j++) {
        block *b = &n->b[j];
        unit *u1 = &n->u[b->c1], *u2 = &n->u[b->c2];
        char pre[64];
        snprintf(pre, sizeof pre, "%.*s", (int)(strlen(u1->conv) - 6), u1->conv); /* "layer1.0" */
        const uint32_t M = B * u2->Ho * u2->Wo;
        uint32_t y1 = unit_fwd(n, u1, h);
        b->a1 = act(n, VT_TC_ACT, M, u1->cout, pre, "relu1.out");
        vt_prog_op(p, VT_OPK_RELU, ARR(y1), 1, ARR(b->a1), 1, NULL, 0, NULL, 0, "%s relu1", pre);
        uint32_t y2 = unit_fwd(n, u2, b->a1);
        uint32_t ys = b->sc == UINT32_MAX ? h : unit_fwd(n, &n->u[b->sc], h);
        b->sum = act(n, VT_TC_ACT, M, u2->cout, pre, "add.out");
        b->out = act(n, VT_TC_ACT, M, u2->cout, pre, "out");
        vt_prog_op(p, VT_OPK_ADD, ARR(y2, ys), 2, ARR(b->sum), 1, NULL, 0, NULL, 0, "%s residual add", pre);
        vt_prog_op(p, VT_OPK_RELU, ARR(b->sum), 1, ARR(b->out), 1, NULL, 0, NULL, 0, "%s relu2", pre);
        h = b->out;
    }
    uint32_t gp = vt_prog_tensor(p, VT_TC_ACT, VT_DT_F32, 2, ARR(B, C), "pool.out");
    uint32_t zg = vt_prog_tensor(p, VT_TC_ACT, VT_DT_F32, 2, ARR(B, classes), "fc.matmul");
    uint32_t z = vt_prog_tensor(p, VT_TC_ACT, VT_DT_F32, 2, ARR(B, classes), "fc.out");
    uint32_t probs = vt_prog_tensor(p, VT_TC_ACT, VT_DT_F32, 2, ARR(B, classes), "probs");
    uint32_t loss = vt_prog_tensor(p, VT_TC_ACT, VT_DT_F32, 0, NULL, "loss");
    const uint32_t last = h;
    vt_prog_op(p, VT_OPK_AVGPOOL, ARR(last), 1, ARR(gp), 1, IARG(B, HW), 2, NULL, 0, "global average pool");
    vt_prog_op(p, VT_OPK_MATMUL, ARR(gp, fcw), 2, ARR(zg), 1, IARG(0, 0, B, classes, C), 5, NULL, 0, "fc forward GEMM");
    vt_prog_op(p, VT_OPK_BIAS_ADD, ARR(zg, fcb), 2, ARR(z), 1, NULL, 0, NULL, 0, "fc bias add");
    vt_prog_op(p, VT_OPK_SOFTMAX, ARR(z), 1, ARR(probs), 1, NULL, 0, NULL, 0, "softmax");
    p->fwd_last = p->n_ops;
    n->sy = sy, n->sa = sa, n->stem_out = stem_out, n->last = last;
    n->gp = gp, n->zg = zg, n->z = z, n->probs = probs, n->loss = loss;
}

/* the backward pass: fc, the blocks last to first, the stem; each unit's gradients pushed */
static void resnet_backward(net *n)
{
    vt_program *p = n->p;
    const vt_recipe *rcp = n->rcp;
    const uint32_t B = n->B, C = n->C, HW = n->HW, classes = n->classes;
    (void)rcp, (void)B, (void)C, (void)HW, (void)classes;
    const uint32_t y = n->y, fcw = n->fcw, gp = n->gp, probs = n->probs, last = n->last, sy = n->sy, sa = n->sa;
    unit *st = &n->u[0];
    uint32_t dz = vt_prog_tensor(p, VT_TC_GRAD, VT_DT_F32, 2, ARR(B, classes), "fc.out.grad");
    uint32_t gfw = vt_prog_tensor(p, VT_TC_GRAD, VT_DT_F32, 2, ARR(C, classes), "fc.weight.grad");
    uint32_t gfb = vt_prog_tensor(p, VT_TC_GRAD, VT_DT_F32, 1, ARR(classes), "fc.bias.grad");
    uint32_t dgp = vt_prog_tensor(p, VT_TC_GRAD, VT_DT_F32, 2, ARR(B, C), "pool.out.grad");
    uint32_t dh = vt_prog_tensor(p, VT_TC_GRAD, VT_DT_F32, 2, ARR(B * HW, C), "%s.grad", p->bad ? "?" : p->t[last].name);
    vt_prog_op(p, VT_OPK_XENT_BWD, ARR(probs, y), 2, ARR(dz), 1, NULL, 0, NULL, 0, "logits gradient");
    vt_prog_op(p, VT_OPK_MATMUL, ARR(gp, dz), 2, ARR(gfw), 1, IARG(1, 0, C, classes, B), 5, NULL, 0,
               "fc weight-gradient GEMM");
    vt_prog_op(p, VT_OPK_COLSUM, ARR(dz), 1, ARR(gfb), 1, NULL, 0, NULL, 0, "fc bias gradient");
    vt_prog_op(p, VT_OPK_MATMUL, ARR(dz, fcw), 2, ARR(dgp), 1, IARG(0, 1, B, C, classes), 5, NULL, 0,
               "fc input-gradient GEMM");
    vt_prog_op(p, VT_OPK_AVGPOOL_BWD, ARR(dgp), 1, ARR(dh), 1, IARG(B, HW), 2, NULL, 0, "global average pool backward");
    n->grads[n->np - 2] = gfw, n->grads[n->np - 1] = gfb;
    for (uint32_t j = n->nb; j-- > 0 && !p->bad;) {
        block *b = &n->b[j];
        const unit *u1 = &n->u[b->c1], *u2 = &n->u[b->c2];
        char pre[64];
        snprintf(pre, sizeof pre, "%.*s", (int)(strlen(u1->conv) - 6), u1->conv);
        const uint32_t M = B * u2->Ho * u2->Wo, Min = B * u1->H * u1->W;
        uint32_t dsum = act(n, VT_TC_GRAD, M, u2->cout, pre, "add.out.grad");
        uint32_t dy1 = act(n, VT_TC_GRAD, M, u1->cout, pre, "bn1.out.grad");
        uint32_t dx = act(n, VT_TC_GRAD, Min, u1->cin, pre, "in.grad");
        vt_prog_op(p, VT_OPK_RELU_BWD, ARR(b->sum, dh), 2, ARR(dsum), 1, NULL, 0, NULL, 0, "%s relu2 backward", pre);
        uint32_t gw, gg, gb;
        uint32_t da1 = unit_bwd(n, u2, dsum, 1, &gw, &gg, &gb);
        push_grads(n, gw, gg, gb, b->c2);
        vt_prog_op(p, VT_OPK_RELU_BWD, ARR(u1->y, da1), 2, ARR(dy1), 1, NULL, 0, NULL, 0, "%s relu1 backward", pre);
        uint32_t dx1 = unit_bwd(n, u1, dy1, 1, &gw, &gg, &gb);
        push_grads(n, gw, gg, gb, b->c1);
        uint32_t dxs = dsum;
        if (b->sc != UINT32_MAX) {
            dxs = unit_bwd(n, &n->u[b->sc], dsum, 1, &gw, &gg, &gb);
            push_grads(n, gw, gg, gb, b->sc);
        }
        vt_prog_op(p, VT_OPK_ADD, ARR(dx1, dxs), 2, ARR(dx), 1, NULL, 0, NULL, 0, "%s input gradient", pre);
        dh = dx;
    }
    /* the stem: dh is the gradient of stem_out */
    uint32_t dsa = dh;
    if (rcp->resnet_pool) {
        dsa = act(n, VT_TC_GRAD, B * st->Ho * st->Wo, st->cout, "stem", "relu.out.grad");
        vt_prog_op(p, VT_OPK_MAXPOOL_BWD, ARR(sa, dh), 2, ARR(dsa), 1, IARG(B, st->Ho, st->Wo, st->cout, 2), 5, NULL, 0,
                   "stem max pool backward");
    }
    uint32_t dsy = act(n, VT_TC_GRAD, B * st->Ho * st->Wo, st->cout, "stem", "bn.out.grad");
    vt_prog_op(p, VT_OPK_RELU_BWD, ARR(sy, dsa), 2, ARR(dsy), 1, NULL, 0, NULL, 0, "stem relu backward");
    {
        uint32_t gw, gg, gb;
        (void)unit_bwd(n, st, dsy, 0, &gw, &gg, &gb);
        push_grads(n, gw, gg, gb, 0);
    }
}

/* the evaluation pass: the same forward with the running statistics */
static void resnet_eval(net *n)
{
    vt_program *p = n->p;
    const vt_recipe *rcp = n->rcp;
    const uint32_t B = n->B, C = n->C, HW = n->HW, classes = n->classes;
    (void)rcp, (void)B, (void)C, (void)HW, (void)classes;
    const uint32_t xa = n->xa, fcw = n->fcw, fcb = n->fcb, sy = n->sy, sa = n->sa, stem_out = n->stem_out;
    const uint32_t last = n->last, gp = n->gp, zg = n->zg, z = n->z, probs = n->probs;
    unit *st = &n->u[0];
    uint32_t h;
    vt_prog_eval_begin(p);
    unit_eval(n, st, xa);
    vt_prog_op(p, VT_OPK_RELU, ARR(sy), 1, ARR(sa), 1, NULL, 0, NULL, 0, "stem relu");
    if (rcp->resnet_pool)
        vt_prog_op(p, VT_OPK_MAXPOOL, ARR(sa), 1, ARR(stem_out), 1, IARG(B, st->Ho, st->Wo, st->cout, 2), 5, NULL, 0,
                   "stem max pool");
    h = stem_out;
    for (uint32_t j = 0; j < n->nb && !p->bad; j++) {
        const block *b = &n->b[j];
        const unit *u1 = &n->u[b->c1], *u2 = &n->u[b->c2];
        unit_eval(n, u1, h);
        vt_prog_op(p, VT_OPK_RELU, ARR(u1->y), 1, ARR(b->a1), 1, NULL, 0, NULL, 0, "relu1");
        unit_eval(n, u2, b->a1);
        uint32_t ys = h;
        if (b->sc != UINT32_MAX) unit_eval(n, &n->u[b->sc], h), ys = n->u[b->sc].y;
        vt_prog_op(p, VT_OPK_ADD, ARR(u2->y, ys), 2, ARR(b->sum), 1, NULL, 0, NULL, 0, "residual add");
        vt_prog_op(p, VT_OPK_RELU, ARR(b->sum), 1, ARR(b->out), 1, NULL, 0, NULL, 0, "relu2");
        h = b->out;
    }
    vt_prog_op(p, VT_OPK_AVGPOOL, ARR(last), 1, ARR(gp), 1, IARG(B, HW), 2, NULL, 0, "global average pool");
    vt_prog_op(p, VT_OPK_MATMUL, ARR(gp, fcw), 2, ARR(zg), 1, IARG(0, 0, B, classes, C), 5, NULL, 0, "fc forward GEMM");
    vt_prog_op(p, VT_OPK_BIAS_ADD, ARR(zg, fcb), 2, ARR(z), 1, NULL, 0, NULL, 0, "fc bias add");
    vt_prog_op(p, VT_OPK_SOFTMAX, ARR(z), 1, ARR(probs), 1, NULL, 0, NULL, 0, "softmax");
    vt_prog_eval_end(p);
}

vt_err vt_arch_resnet_build(const vt_recipe *rcp, vt_program *p)
{
    net *n = calloc(1, sizeof *n);
    VT_RETURN_ERROR_IF(!n, VT_ERR_NOMEM, "out of memory");
    n->p = p, n->rcp = rcp, n->B = rcp->batch;
    n->classes = rcp->widths[1];
    layout(n, &n->C, &n->HW);

    /* the state: parameters, the optimiser's tensors, then the buffers */
    resnet_params(n);
    uint32_t *m1 = calloc(2 * (size_t)n->np, sizeof *m1), *m2 = m1 ? m1 + n->np : NULL;
    if (!m1) {
        free(n);
        VT_RETURN_ERROR(VT_ERR_NOMEM, "out of memory");
    }
    vt_arch_opt_tensors(p, rcp, n->np, n->params, m1, m2);
    resnet_buffers(n);

    /* the step: inputs, forward, loss, backward, update */
    vt_arch_inputs(p, rcp, &n->x, &n->y, &n->xa, &n->tstep, &n->lr);
    vt_arch_input_ops(p, rcp, n->x, n->y, n->xa, n->tstep, n->lr);
    resnet_forward(n);
    vt_prog_op(p, VT_OPK_XENT_LOSS, ARR(n->probs, n->y), 2, ARR(n->loss), 1, NULL, 0, NULL, 0, "cross-entropy loss");
    resnet_backward(n);
    vt_arch_update_ops(p, rcp, n->np, n->params, n->grads, m1, m2, NULL, n->tstep, n->lr);
    resnet_eval(n);

    p->loss = n->loss, p->input = n->xa, p->labels = n->y, p->probs = n->probs; /* evaluation fills xa: no augmentation */
    free(m1);
    free(n);
    return vt_program_finish(p);
}
