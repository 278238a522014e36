/* vt_graph_builtin.c - the built-in architectures as forward graphs (docs/models.md "The built-in
 * architectures as graphs"): the MLP of arch mlp (its step program, derived by vt_graph_build, is the
 * one every MLP run has had: tests/kat/programs/), and the GPT and the residual CNN for step program 3 (the
 * hand-written builders arch/vt_arch_gpt.c and vt_arch_resnet.c keep programs 1 and 2, the defaults and
 * what older manifests name; program 3 computes the same values: tests/e2e/e2e_gpt.sh and conv_v2.sh
 * compare the Merkle roots). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vt_graph.h"

#define ARR(...) ((const uint32_t[]){__VA_ARGS__})
#define IARG(...) ((const int64_t[]){__VA_ARGS__})

vt_err vt_graph_mlp(const vt_recipe *rcp, vt_graph *g)
{
    vt_graph_init(g);
    const uint32_t L = rcp->n_layers, *w = rcp->widths;
    int bad = 0;
    char nm[VT_GRAPH_NAME_MAX];
    uint32_t v = 0; /* the input */
    for (uint32_t l = 1; l <= L; l++) {
        snprintf(nm, sizeof nm, "fc%u.weight", l);
        vt_graph_param(g, nm, 2, ARR(w[l - 1], w[l]), VT_INIT_HE_UNIFORM, w[l - 1], &bad); /* parameter 2(l - 1) */
        snprintf(nm, sizeof nm, "fc%u.bias", l);
        vt_graph_param(g, nm, 1, ARR(w[l]), VT_INIT_ZERO, 0, &bad); /* parameter 2(l - 1) + 1 */
    }
    for (uint32_t l = 1; l <= L && !bad; l++) {
        snprintf(nm, sizeof nm, "fc%u", l);
        v = vt_graph_layer(g, VT_GL_LINEAR, nm, 1, &v, 2, ARR(2 * (l - 1), 2 * (l - 1) + 1), NULL, w[l],
                           &bad);
        if (l < L && !bad) {
            snprintf(nm, sizeof nm, "relu%u", l);
            v = vt_graph_layer(g, VT_GL_RELU, nm, 1, &v, 0, NULL, NULL, w[l], &bad);
        }
    }
    g->in_cols = w[0], g->out = v, g->loss = VT_GLOSS_XENT;
    if (bad) {
        vt_graph_free(g);
        VT_RETURN_ERROR(VT_ERR_NOMEM, "graph: out of memory building the MLP");
    }
    return VT_OK;
}

/* a parameter named "<pre>.<what>" */
static uint32_t gparam(vt_graph *g, const char *pre, const char *what, uint32_t rank, const uint32_t *shape,
                       vt_tinit init, uint32_t fan_in, int *bad)
{
    char nm[2 * VT_GRAPH_NAME_MAX]; /* a longer name is refused by vt_graph_param */
    snprintf(nm, sizeof nm, "%.*s.%.*s", VT_GRAPH_NAME_MAX - 1, pre, VT_GRAPH_NAME_MAX - 1, what);
    uint32_t i = vt_graph_param(g, nm, rank, shape, init, fan_in, bad);
    if (!*bad) g->param[i].no_decay = rank < 2; /* AdamW decays the matrices and embeddings only */
    return i;
}

/* U(-a, a) with a = sqrt(6 / 5000) = 0.0346: a standard deviation of 0.02, GPT-2's (the hand-written builder's) */
#define GPT_INIT_FAN 5000

/* the layer "<name>" (a printf format of one unsigned) */
static uint32_t glayer(vt_graph *g, vt_glayer_op op, const char *fmt, uint32_t l, uint32_t n_in, const uint32_t *in,
                       uint32_t n_param, const uint32_t *param, const int64_t *attr, uint32_t cols, int *bad)
{
    char nm[VT_GRAPH_NAME_MAX];
    snprintf(nm, sizeof nm, fmt, l);
    return vt_graph_layer(g, op, nm, n_in, in, n_param, param, attr, cols, bad);
}

/* a LINEAR layer over the T rows of each example: parameters w (its weight, then its bias), N outputs a row */
static uint32_t rows_linear(vt_graph *g, const char *fmt, uint32_t l, uint32_t x, uint32_t w, uint32_t T, uint32_t N,
                            int *bad)
{
    return glayer(g, VT_GL_LINEAR, fmt, l, 1, &x, 2, ARR(w, w + 1), IARG(0, T, 0, 0, 0, 0, 0, 0), T * N, bad);
}

/* x + dropout(h) (pdrop: the probability's FP64 bits; 0: no dropout layer), dropout stream key `key` */
static uint32_t residual(vt_graph *g, const char *dfmt, const char *afmt, uint32_t l, uint32_t x, uint32_t h,
                         int64_t pdrop, int64_t key, uint32_t cols, int *bad)
{
    if (pdrop) h = glayer(g, VT_GL_DROPOUT, dfmt, l, 1, &h, 0, NULL, IARG(pdrop, key, 0, 0, 0, 0, 0, 0), cols, bad);
    return glayer(g, VT_GL_ADD, afmt, l, 2, ARR(x, h), 0, NULL, NULL, cols, bad);
}

vt_err vt_graph_gpt(const vt_recipe *rcp, vt_graph *g)
{
    vt_graph_init(g);
    const uint32_t T = rcp->gpt_context, C = rcp->gpt_width, V = rcp->gpt_vocab, H = rcp->gpt_heads, D = C / H,
                   L = rcp->gpt_layers;
    const int drop = rcp->dropout > 0;
    const int64_t eps = vt_graph_f64_bits(rcp->ln_eps), pdrop = vt_graph_f64_bits(rcp->dropout),
                  scale = vt_graph_f64_bits(1.0 / sqrt((double)D));
    int bad = 0;
    char pre[VT_GRAPH_NAME_MAX];
    /* the parameters in PyTorch's order (the hand-written builder's) */
    const uint32_t wte = gparam(g, "wte", "weight", 2, ARR(V, C), VT_INIT_HE_UNIFORM, GPT_INIT_FAN, &bad);
    const uint32_t wpe = gparam(g, "wpe", "weight", 2, ARR(T, C), VT_INIT_HE_UNIFORM, GPT_INIT_FAN, &bad);
    const uint32_t first = g->n_param; /* block l's 12 parameters start at first + 12 l */
    static const char *const PN[6] = {"ln_1", "attn.c_attn", "attn.c_proj", "ln_2", "mlp.c_fc", "mlp.c_proj"};
    for (uint32_t l = 0; l < L && !bad; l++)
        for (int k = 0; k < 6; k++) {
            const uint32_t out = k == 1 ? 3 * C : k == 4 ? 4 * C : C, in = k == 5 ? 4 * C : C;
            snprintf(pre, sizeof pre, "h%u.%s", l, PN[k]);
            if (k == 0 || k == 3) gparam(g, pre, "weight", 1, ARR(C), VT_INIT_ONE, 0, &bad);
            else gparam(g, pre, "weight", 2, ARR(in, out), VT_INIT_HE_UNIFORM, GPT_INIT_FAN, &bad);
            gparam(g, pre, "bias", 1, ARR(out), VT_INIT_ZERO, 0, &bad);
        }
    const uint32_t lnf = gparam(g, "ln_f", "weight", 1, ARR(C), VT_INIT_ONE, 0, &bad);
    gparam(g, "ln_f", "bias", 1, ARR(C), VT_INIT_ZERO, 0, &bad);
    const uint32_t wlm =
        rcp->gpt_tie ? wte : gparam(g, "lm_head", "weight", 2, ARR(C, V), VT_INIT_HE_UNIFORM, GPT_INIT_FAN, &bad);
    /* the layers: embeddings (and their dropout, stream key 1), the blocks (their dropouts keys 2 + 2l and
     * 3 + 2l, as the hand-written builder draws them), the final layer norm, the head */
    const int64_t ln[VT_GLAYER_ATTRS] = {eps, C, T};
    uint32_t x = glayer(g, VT_GL_EMBED, "embedding", 0, 1, ARR(0), 2, ARR(wte, wpe), IARG(T, V, C, 0, 0, 0, 0, 0),
                        T * C, &bad);
    if (drop) x = glayer(g, VT_GL_DROPOUT, "embedding dropout", 0, 1, &x, 0, NULL, IARG(pdrop, 1, 0, 0, 0, 0, 0, 0),
                         T * C, &bad);
    for (uint32_t l = 0; l < L && !bad; l++) {
        const uint32_t q = first + 12 * l; /* ln_1 w b, c_attn w b, c_proj w b, ln_2 w b, c_fc w b, c_proj w b */
        uint32_t h = glayer(g, VT_GL_LAYERNORM, "h%u.ln_1", l, 1, &x, 2, ARR(q, q + 1), ln, T * C, &bad);
        h = rows_linear(g, "h%u.attn.c_attn", l, h, q + 2, T, 3 * C, &bad);
        h = glayer(g, VT_GL_ATTENTION, "h%u.attn", l, 1, &h, 0, NULL, IARG(T, H, D, 1, scale, 0, 0, 0), T * C, &bad);
        h = rows_linear(g, "h%u.attn.c_proj", l, h, q + 4, T, C, &bad);
        x = residual(g, "h%u.attn dropout", "h%u attention residual", l, x, h, drop ? pdrop : 0, 2 + 2 * (int64_t)l,
                     T * C, &bad);
        h = glayer(g, VT_GL_LAYERNORM, "h%u.ln_2", l, 1, &x, 2, ARR(q + 6, q + 7), ln, T * C, &bad);
        h = rows_linear(g, "h%u.mlp.c_fc", l, h, q + 8, T, 4 * C, &bad);
        h = glayer(g, VT_GL_GELU, "h%u.mlp gelu", l, 1, &h, 0, NULL, NULL, T * 4 * C, &bad);
        h = rows_linear(g, "h%u.mlp.c_proj", l, h, q + 10, T, C, &bad);
        x = residual(g, "h%u.mlp dropout", "h%u mlp residual", l, x, h, drop ? pdrop : 0, 3 + 2 * (int64_t)l, T * C,
                     &bad);
    }
    x = glayer(g, VT_GL_LAYERNORM, "ln_f", 0, 1, &x, 2, ARR(lnf, lnf + 1), ln, T * C, &bad);
    x = glayer(g, VT_GL_LINEAR, "lm_head", 0, 1, &x, 1, &wlm, IARG(rcp->gpt_tie ? 1 : 0, T, 0, 0, 0, 0, 0, 0), T * V,
               &bad);
    g->in_cols = T, g->out = x, g->loss = VT_GLOSS_NEXT;
    if (bad) {
        vt_graph_free(g);
        VT_RETURN_ERROR(VT_ERR_NOMEM, "graph: out of memory building the GPT");
    }
    return VT_OK;
}

/* ---- the residual CNN */

/* a convolution (no bias; its weight parameter w in the kernel's layout) and its batch norm (parameters w + 1,
 * w + 2, buffers rm, rm + 1) on the channels-last (chw 0) or channels-first (chw 1) image x of H x W x C */
static uint32_t conv_bn(vt_graph *g, const char *conv, const char *bn, uint32_t x, uint32_t w, uint32_t rm,
                        const vt_recipe *rcp, uint32_t H, uint32_t W, uint32_t C, uint32_t k, uint32_t s, uint32_t chw,
                        uint32_t Co, int *bad)
{
    const uint32_t pad = k / 2, Ho = (H + 2 * pad - k) / s + 1, Wo = (W + 2 * pad - k) / s + 1;
    uint32_t y = vt_graph_layer(g, VT_GL_CONV, conv, 1, &x, 1, &w, IARG(H, W, C, k, s, pad, chw, Co), Ho * Wo * Co, bad);
    if (!*bad) g->layer[g->n_layer - 1].kernel_layout = 1;
    return vt_graph_layer(g, VT_GL_BATCHNORM, bn, 1, &y, 4, ARR(w + 1, w + 2, rm, rm + 1),
                          IARG(vt_graph_f64_bits(rcp->bn_eps), vt_graph_f64_bits(rcp->bn_momentum), Co, Ho, Wo, 0, 0, 0),
                          Ho * Wo * Co, bad);
}

/* unit u's parameters (conv weight, bn weight, bn bias: 3 u ..) and its buffers' names */
static void unit_params(vt_graph *g, const char *conv, const char *bn, uint32_t k, uint32_t C, uint32_t Co, int *bad)
{
    gparam(g, conv, "weight", 4, ARR(k, k, C, Co), VT_INIT_HE_UNIFORM, k * k * C, bad);
    gparam(g, bn, "weight", 1, ARR(Co), VT_INIT_ONE, 0, bad);
    gparam(g, bn, "bias", 1, ARR(Co), VT_INIT_ZERO, 0, bad);
}

#define RESNET_UNITS (1 + 6 * 16 * 3)

vt_err vt_graph_resnet(const vt_recipe *rcp, vt_graph *g)
{
    vt_graph_init(g);
    int bad = 0;
    /* the units in the hand-written builder's order (stem, then per block conv1, conv2, the shortcut), their
     * parameters first, then fc's, then the units' buffers (running mean and variance each) */
    struct {
        char conv[64], bn[64];
        uint32_t C, Co, k, s, H, W, block;
    } u[RESNET_UNITS];
    uint32_t nu = 0, H = rcp->image_height, W = rcp->image_width, Cin = rcp->resnet_width;
#define UNIT(c, b, C_, Co_, k_, s_, H_, W_, blk)                                                                      \
    do {                                                                                                               \
        snprintf(u[nu].conv, sizeof u[nu].conv, "%s", c), snprintf(u[nu].bn, sizeof u[nu].bn, "%s", b);             \
        u[nu].C = C_, u[nu].Co = Co_, u[nu].k = k_, u[nu].s = s_, u[nu].H = H_, u[nu].W = W_, u[nu].block = blk;     \
        nu++;                                                                                                          \
    } while (0)
    UNIT("stem.conv", "stem.bn", rcp->image_channels, Cin, 3, 1, H, W, 0);
    if (rcp->resnet_pool) H /= 2, W /= 2;
    uint32_t nblock = 0;
    for (uint32_t st = 0; st < rcp->resnet_stages; st++)
        for (uint32_t j = 0; j < rcp->resnet_blocks; j++, nblock++) {
            const uint32_t Co = rcp->resnet_width << st, s = st > 0 && j == 0 ? 2 : 1, Ho = (H - 1) / s + 1,
                           Wo = (W - 1) / s + 1;
            char c[64], b[64];
            snprintf(c, sizeof c, "layer%u.%u.conv1", st + 1, j), snprintf(b, sizeof b, "layer%u.%u.bn1", st + 1, j);
            UNIT(c, b, Cin, Co, 3, s, H, W, nblock + 1);
            snprintf(c, sizeof c, "layer%u.%u.conv2", st + 1, j), snprintf(b, sizeof b, "layer%u.%u.bn2", st + 1, j);
            UNIT(c, b, Co, Co, 3, 1, Ho, Wo, nblock + 1);
            if (s != 1 || Cin != Co) {
                snprintf(c, sizeof c, "layer%u.%u.shortcut.conv", st + 1, j);
                snprintf(b, sizeof b, "layer%u.%u.shortcut.bn", st + 1, j);
                UNIT(c, b, Cin, Co, 1, s, H, W, nblock + 1);
            }
            H = Ho, W = Wo, Cin = Co;
        }
#undef UNIT
    for (uint32_t i = 0; i < nu; i++) unit_params(g, u[i].conv, u[i].bn, u[i].k, u[i].C, u[i].Co, &bad);
    const uint32_t classes = rcp->widths[1], fc = g->n_param;
    gparam(g, "fc", "weight", 2, ARR(Cin, classes), VT_INIT_HE_UNIFORM, Cin, &bad);
    gparam(g, "fc", "bias", 1, ARR(classes), VT_INIT_ZERO, 0, &bad);
    const uint32_t buf = g->n_param; /* unit i's running mean buf + 2 i, running variance buf + 2 i + 1 */
    for (uint32_t i = 0; i < nu && !bad; i++) {
        gparam(g, u[i].bn, "running_mean", 1, ARR(u[i].Co), VT_INIT_ZERO, 0, &bad);
        gparam(g, u[i].bn, "running_var", 1, ARR(u[i].Co), VT_INIT_ONE, 0, &bad);
        if (!bad) g->param[g->n_param - 2].buffer = g->param[g->n_param - 1].buffer = 1;
    }
    /* the layers: the stem (its image channels-first), the blocks, pooling, fc */
    uint32_t x = conv_bn(g, u[0].conv, u[0].bn, 0, 0, buf, rcp, u[0].H, u[0].W, u[0].C, 3, 1, 1, u[0].Co, &bad);
    x = vt_graph_layer(g, VT_GL_RELU, "stem.relu", 1, &x, 0, NULL, NULL, u[0].H * u[0].W * u[0].Co, &bad);
    if (rcp->resnet_pool)
        x = vt_graph_layer(g, VT_GL_MAXPOOL, "stem.pool", 1, &x, 0, NULL, IARG(u[0].H, u[0].W, u[0].Co, 2, 0, 0, 0, 0),
                           (u[0].H / 2) * (u[0].W / 2) * u[0].Co, &bad);
    for (uint32_t i = 1; i < nu && !bad;) {
        const uint32_t c1 = i, c2 = i + 1, sc = i + 2 < nu && u[i + 2].block == u[i].block ? i + 2 : 0;
        char pre[64], nm[96];
        snprintf(pre, sizeof pre, "%.*s", (int)(strlen(u[c1].conv) - 6), u[c1].conv); /* "layer1.0" */
        const uint32_t Ho = u[c2].H, Wo = u[c2].W, Co = u[c2].Co, n = Ho * Wo * Co;
        uint32_t h = conv_bn(g, u[c1].conv, u[c1].bn, x, 3 * c1, buf + 2 * c1, rcp, u[c1].H, u[c1].W, u[c1].C, 3,
                             u[c1].s, 0, Co, &bad);
        snprintf(nm, sizeof nm, "%s.relu1", pre);
        h = vt_graph_layer(g, VT_GL_RELU, nm, 1, &h, 0, NULL, NULL, n, &bad);
        h = conv_bn(g, u[c2].conv, u[c2].bn, h, 3 * c2, buf + 2 * c2, rcp, Ho, Wo, Co, 3, 1, 0, Co, &bad);
        uint32_t s = x;
        if (sc)
            s = conv_bn(g, u[sc].conv, u[sc].bn, x, 3 * sc, buf + 2 * sc, rcp, u[sc].H, u[sc].W, u[sc].C, 1, u[sc].s, 0,
                        Co, &bad);
        snprintf(nm, sizeof nm, "%s.add", pre);
        h = vt_graph_layer(g, VT_GL_ADD, nm, 2, ARR(h, s), 0, NULL, NULL, n, &bad);
        snprintf(nm, sizeof nm, "%s.relu2", pre);
        x = vt_graph_layer(g, VT_GL_RELU, nm, 1, &h, 0, NULL, NULL, n, &bad);
        i += sc ? 3 : 2;
    }
    x = vt_graph_layer(g, VT_GL_AVGPOOL, "pool", 1, &x, 0, NULL, IARG(H, W, Cin, 0, 0, 0, 0, 0), Cin, &bad);
    x = vt_graph_layer(g, VT_GL_LINEAR, "fc", 1, &x, 2, ARR(fc, fc + 1), NULL, classes, &bad);
    g->in_cols = rcp->widths[0], g->out = x, g->loss = VT_GLOSS_XENT;
    if (bad) {
        vt_graph_free(g);
        VT_RETURN_ERROR(VT_ERR_NOMEM, "graph: out of memory building the residual CNN");
    }
    return VT_OK;
}
