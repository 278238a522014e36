/* vt_graph_builtin.c - the built-in architectures as forward graphs (docs/models.md "The built-in
 * architectures as graphs"): the MLP of arch mlp (its step program, derived by vt_graph_build, is the
 * one every MLP run has had: tests/kat/programs/), and the GPT of arch gpt for step program 3 (the
 * hand-written builder arch/vt_arch_gpt.c keeps step program 1, which older manifests name; the two
 * programs compute the same values: tests/e2e/program_kat.sh compares their states step by step). */
#include <math.h>
#include <stdio.h>
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
    snprintf(nm, sizeof nm, "%s.%s", pre, what);
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
