/* test_graph.c - the forward graph's convolutional layers (arch/vt_graph.h; docs/models.md):
 *  A. the canonical form: a small convolutional graph (conv with chw 1, relu, max pool, conv, global
 *     average pool; conv, to_channels_first, linear) written in version 2 and read back field for
 *     field, the same bytes again; with batch norms (of an image and of a flat value; running
 *     statistics as buffers) in version 3, which version 2 does not read, and whose running statistics
 *     must be buffers; the known-answer probe's transformer (a sequence of patches, layer norm, attention,
 *     GELU, the mean over rows) and a language model (embeddings, causal attention, dropout, a head tied to
 *     the token embedding, next-token loss) in version 3; the built-in MLP's graph still written in version 1;
 *  B. hostile bytes: every byte of the form flipped three ways and every truncation decoded, and a
 *     graph that decodes is built into a program (refused or not, never a crash); attributes out of
 *     range, unused attributes set and a width that contradicts the attributes refused by name;
 *  C. the layout moves (to_channels_last, to_channels_first) move every value exactly, -0 and a
 *     subnormal included, and the one undoes the other bit for bit. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arch/vt_graph.h"
#include "model/vt_model.h"
#include "model/vt_probe.h"
#include "ops/vt_ops.h"
#include "vt_test.h"

#define A8(...) ((const int64_t[VT_GLAYER_ATTRS]){__VA_ARGS__})
#define U(...) ((const uint32_t[]){__VA_ARGS__})

static uint32_t bn_params(vt_graph *g, const char *nm, uint32_t C, int *bad)
{
    static const char *const W[4] = {"weight", "bias", "running_mean", "running_var"};
    uint32_t first = g->n_param;
    for (int i = 0; i < 4; i++) {
        char n[64];
        snprintf(n, sizeof n, "%s.%s", nm, W[i]);
        uint32_t k = vt_graph_param(g, n, 1, U(C), i == 0 || i == 3 ? VT_INIT_ONE : VT_INIT_ZERO, 0, bad);
        if (k != UINT32_MAX) g->param[k].buffer = i >= 2;
    }
    return first;
}

/* a language model: 8 tokens of a vocabulary of 12, embeddings of 8, a layer norm, causal attention of 2
 * heads, dropout, a head tied to the token embedding; next-token cross-entropy */
static void lm_graph(vt_graph *g)
{
    vt_graph_init(g);
    int bad = 0;
    const uint32_t te = vt_graph_param(g, "wte.weight", 2, U(12, 8), VT_INIT_HE_UNIFORM, 8, &bad),
                   pe = vt_graph_param(g, "wpe.weight", 2, U(8, 8), VT_INIT_HE_UNIFORM, 8, &bad);
    const uint32_t lw = vt_graph_param(g, "ln.weight", 1, U(8), VT_INIT_ONE, 0, &bad),
                   lb = vt_graph_param(g, "ln.bias", 1, U(8), VT_INIT_ZERO, 0, &bad),
                   qw = vt_graph_param(g, "qkv.weight", 2, U(24, 8), VT_INIT_HE_UNIFORM, 8, &bad);
    uint32_t v = 0, x;
    x = v = vt_graph_layer(g, VT_GL_EMBED, "emb", 1, &v, 2, U(te, pe), A8(8, 12, 8), 64, &bad);
    v = vt_graph_layer(g, VT_GL_LAYERNORM, "ln", 1, &v, 2, U(lw, lb), A8(vt_graph_f64_bits(1e-5), 8, 8), 64, &bad);
    v = vt_graph_layer(g, VT_GL_LINEAR, "qkv", 1, &v, 1, U(qw), A8(1, 8), 192, &bad);
    v = vt_graph_layer(g, VT_GL_ATTENTION, "attn", 1, &v, 0, NULL, A8(8, 2, 4, 1, vt_graph_f64_bits(0.5)), 64, &bad);
    v = vt_graph_layer(g, VT_GL_DROPOUT, "drop", 1, &v, 0, NULL, A8(vt_graph_f64_bits(0.1)), 64, &bad);
    v = vt_graph_layer(g, VT_GL_ADD, "res", 2, U(x, v), 0, NULL, NULL, 64, &bad);
    v = vt_graph_layer(g, VT_GL_LINEAR, "head", 1, &v, 1, U(te), A8(1, 8), 96, &bad); /* tied to wte */
    g->in_cols = 8, g->out = v, g->loss = VT_GLOSS_NEXT;
    CHECK(!bad && v != UINT32_MAX, "the language model's graph");
}

/* input 1 x 8 x 8 (channels-first); two branches of layers over it (gap 0, 1), the second with batch
 * norms (gap 2); the probe's transformer (3); a language model (4) */
static void conv_graph(vt_graph *g, int gap)
{
    if (gap == 3) { /* the known-answer probe's, from its recipe's canonical form */
        vt_recipe r;
        CHECK_OK(vt_probe_transformer_recipe(&r));
        CHECK_OK(vt_graph_decode(r.model_graph, r.model_graph_len, g));
        return;
    }
    if (gap == 4) {
        lm_graph(g);
        return;
    }
    vt_graph_init(g);
    int bad = 0;
    vt_graph_param(g, "c1.weight", 4, U(3, 1, 3, 3), VT_INIT_HE_UNIFORM, 9, &bad);
    vt_graph_param(g, "c1.bias", 1, U(3), VT_INIT_ZERO, 0, &bad);
    vt_graph_param(g, "c2.weight", 4, U(4, 3, 3, 3), VT_INIT_HE_UNIFORM, 27, &bad);
    uint32_t v = 0;
    v = vt_graph_layer(g, VT_GL_CONV, "c1", 1, &v, 2, U(0, 1), A8(8, 8, 1, 3, 1, 1, 1, 3), 8 * 8 * 3, &bad);
    if (gap == 2) {
        uint32_t q = bn_params(g, "bn", 3, &bad);
        v = vt_graph_layer(g, VT_GL_BATCHNORM, "bn", 1, &v, 4, U(q, q + 1, q + 2, q + 3),
                           A8(vt_graph_f64_bits(1e-5), vt_graph_f64_bits(0.1), 3, 8, 8), 8 * 8 * 3, &bad);
    }
    v = vt_graph_layer(g, VT_GL_RELU, "r1", 1, &v, 0, NULL, NULL, 8 * 8 * 3, &bad);
    v = vt_graph_layer(g, VT_GL_MAXPOOL, "p1", 1, &v, 0, NULL, A8(8, 8, 3, 2), 4 * 4 * 3, &bad);
    v = vt_graph_layer(g, VT_GL_CONV, "c2", 1, &v, 1, U(2), A8(4, 4, 3, 3, 2, 1, 0, 4), 2 * 2 * 4, &bad);
    if (gap) {
        v = vt_graph_layer(g, VT_GL_AVGPOOL, "gap", 1, &v, 0, NULL, A8(2, 2, 4), 4, &bad);
        if (gap == 2) {
            uint32_t q = bn_params(g, "bn1", 4, &bad);
            v = vt_graph_layer(g, VT_GL_BATCHNORM, "bn1", 1, &v, 4, U(q, q + 1, q + 2, q + 3),
                               A8(vt_graph_f64_bits(1e-3), vt_graph_f64_bits(0.2), 4), 4, &bad);
        }
        uint32_t w = vt_graph_param(g, "fc.weight", 2, U(10, 4), VT_INIT_HE_UNIFORM, 4, &bad);
        v = vt_graph_layer(g, VT_GL_LINEAR, "fc", 1, &v, 1, U(w), A8(1), 10, &bad);
    } else {
        v = vt_graph_layer(g, VT_GL_TO_NCHW, "flat", 1, &v, 0, NULL, A8(2, 2, 4), 16, &bad);
        vt_graph_param(g, "fc.weight", 2, U(10, 16), VT_INIT_HE_UNIFORM, 16, &bad);
        vt_graph_param(g, "fc.bias", 1, U(10), VT_INIT_ZERO, 0, &bad);
        v = vt_graph_layer(g, VT_GL_LINEAR, "fc", 1, &v, 2, U(3, 4), A8(1), 10, &bad);
    }
    g->in_cols = 64, g->out = v, g->loss = VT_GLOSS_XENT;
    CHECK(!bad && v != UINT32_MAX, "the convolutional graph");
}

/* g built for batches of 2 (a recipe of g's input and classes): its status, the program freed */
static vt_err build(const vt_graph *g)
{
    vt_recipe r;
    vt_recipe_default(&r);
    r.batch = 2, r.n_layers = 1, r.widths[0] = g->in_cols;
    r.widths[1] = g->out >= 1 && g->out <= g->n_layer ? g->layer[g->out - 1].cols : 10;
    if (g->loss == VT_GLOSS_NEXT && g->in_cols) r.widths[1] /= g->in_cols; /* a language model: V per position */
    vt_program p;
    vt_program_init(&p);
    vt_err e = vt_graph_build(g, &r, &p);
    vt_program_free(&p);
    return e;
}

static void canonical(void)
{
    for (int gap = 0; gap < 5; gap++) {
        vt_graph g, h;
        conv_graph(&g, gap);
        CHECK_OK(build(&g));
        vt_buf b, c;
        CHECK_OK(vt_graph_encode(&g, &b));
        uint32_t ver = b.len >= 8 ? (uint32_t)b.data[4] | (uint32_t)b.data[5] << 8 : 0;
        CHECK(ver == (gap >= 2 ? 3u : 2u), "graph %d is written in version %u (%u)", gap, gap >= 2 ? 3u : 2u, ver);
        CHECK_OK(vt_graph_decode(b.data, b.len, &h));
        CHECK(h.n_param == g.n_param && h.n_layer == g.n_layer && h.in_cols == g.in_cols && h.out == g.out,
              "the graph read back");
        for (uint32_t i = 0; i < g.n_param && i < h.n_param; i++)
            CHECK(h.param[i].buffer == g.param[i].buffer && h.param[i].frozen == g.param[i].frozen,
                  "parameter %u's flags read back", i);
        if (gap == 2) {
            vt_graph_free(&h);
            b.data[4] = 2; /* version 2 knows no batch norm */
            CHECK(vt_graph_decode(b.data, b.len, &h) == VT_ERR_FORMAT, "a batch norm in version 2 refused");
            b.data[4] = 3;
            CHECK_OK(vt_graph_decode(b.data, b.len, &h));
            for (uint32_t i = 0; i < h.n_param; i++) /* a running statistic that is no buffer */
                if (strstr(h.param[i].name, "running_var")) {
                    h.param[i].buffer = 0;
                    CHECK(build(&h) == VT_ERR_ARG && strstr(vt_errmsg(), "buffer"), "a running statistic must be a "
                          "buffer: %s", vt_errmsg());
                    h.param[i].buffer = 1;
                }
        }
        for (uint32_t l = 0; l < g.n_layer && l < h.n_layer; l++)
            CHECK(h.layer[l].op == g.layer[l].op && !memcmp(h.layer[l].attr, g.layer[l].attr, sizeof g.layer[l].attr) &&
                      h.layer[l].cols == g.layer[l].cols && !strcmp(h.layer[l].name, g.layer[l].name),
                  "layer %u read back", l);
        CHECK_OK(vt_graph_encode(&h, &c));
        CHECK(c.len == b.len && !memcmp(c.data, b.data, b.len), "the same bytes again");
        vt_buf_free(&c);
        vt_graph_free(&h);
        /* B: every byte flipped three ways, every truncation */
        static const uint8_t FLIP[3] = {0x01, 0x80, 0xff};
        unsigned decoded = 0;
        for (size_t i = 0; i < b.len; i++)
            for (int f = 0; f < 3; f++) {
                b.data[i] ^= FLIP[f];
                if (vt_graph_decode(b.data, b.len, &h) == VT_OK) {
                    decoded++;
                    (void)build(&h); /* refused or built: never a crash */
                    vt_graph_free(&h);
                }
                b.data[i] ^= FLIP[f];
            }
        for (size_t n = 0; n < b.len; n++) /* a refused decode frees what it read */
            CHECK(vt_graph_decode(b.data, n, &h) != VT_OK, "a truncation to %zu bytes refused", n);
        CHECK(decoded < 3 * b.len, "some flips are refused (%u of %zu decoded)", decoded, 3 * b.len);
        vt_buf_free(&b);
        vt_graph_free(&g);
    }
    /* the MLP of the recipe: version 1, four attributes per layer */
    vt_recipe r;
    vt_recipe_default(&r);
    vt_graph g;
    CHECK_OK(vt_graph_mlp(&r, &g));
    vt_buf b;
    CHECK_OK(vt_graph_encode(&g, &b));
    CHECK(b.len >= 8 && b.data[4] == 1 && b.data[5] == 0, "the MLP's graph is written in version 1");
    vt_buf_free(&b);
    vt_graph_free(&g);
}

/* layer l of the convolutional graph with attribute `attr` set to value (attr -1: none) and its width
 * set to cols (0: kept), encoded: decode refuses it naming `what`, and the builder refuses the graph */
static void refused(uint32_t l, int attr, int64_t value, uint32_t cols, const char *what)
{
    vt_graph g, h;
    conv_graph(&g, 0);
    if (attr >= 0) g.layer[l].attr[attr] = value;
    if (cols) g.layer[l].cols = cols;
    vt_buf b;
    CHECK_OK(vt_graph_encode(&g, &b));
    vt_err e = vt_graph_decode(b.data, b.len, &h);
    CHECK(e == VT_ERR_FORMAT && strstr(vt_errmsg(), what), "layer %u attribute %d = %lld, width %u: %s (%s)", l, attr,
          (long long)value, cols, e ? vt_errmsg() : "decoded", what);
    CHECK(build(&g) == VT_ERR_ARG, "the builder refuses it too: %s", vt_errmsg());
    vt_buf_free(&b);
    vt_graph_free(&g);
}

static void refusals(void)
{
    refused(0, 5, 3, 0, "convolution of 8 x 8 x 1, kernel 3, stride 1, pad 3");  /* pad >= k */
    refused(0, 6, 2, 0, "chw 2");                                                 /* chw 0 or 1 */
    refused(0, 3, 65, 0, "kernel 65");                                            /* k <= 64 */
    refused(2, 3, 3, 0, "the window must divide");                                /* 8 % 3 */
    refused(2, 5, 1, 0, "attribute 5 is 1");                                      /* unused */
    refused(4, 0, 3, 0, "width 16, its attributes give 24");                      /* to_channels_first */
    refused(0, -1, 0, 8 * 8 * 4, "width 256, its attributes give 192");           /* conv's width */
    refused(5, 0, 2, 0, "transB 2");                                              /* linear */
}

/* C: the layout moves on 2 examples of 6 pixels and 3 channels */
static void moves(void)
{
    vt_model *m = calloc(1, sizeof *m);
    CHECK(m != NULL, "memory");
    if (!m) return;
    vt_program *p = &m->prog;
    enum { B = 2, HW = 6, C = 3, N = B * HW * C };
    CHECK_OK(vt_probe_layouts_program(p, B, HW, C));
    uint8_t *arena[VT_TC_COUNT] = {0};
    for (int c = 0; c < VT_TC_COUNT; c++) arena[c] = calloc(p->arena_bytes[c] + 1, 1);
    float *x = (float *)(arena[p->t[p->op[1].in[0]].cls] + p->t[p->op[1].in[0]].off);
    float *y = (float *)(arena[p->t[p->op[1].out[0]].cls] + p->t[p->op[1].out[0]].off);
    float *z = (float *)(arena[p->t[p->op[2].out[0]].cls] + p->t[p->op[2].out[0]].off);
    for (int i = 0; i < N; i++) x[i] = (float)(i * 7 % 23) - 11.5f;
    x[1] = -0.0f, x[2] = 0x1p-149f;
    vt_rctx rctx;
    vt_steplog log;
    vt_steplog_init(&log, 1);
    vt_rctx_init(&rctx, VT_RMODE_RECORD, (vt_bound_cfg){.mode = VT_BOUND_PROVABLE, .rounding = VT_ROUNDING_EXACT});
    CHECK_OK(vt_rctx_begin_step(&rctx, 1, &log));
    double x64[N];
    for (uint32_t j = 1; j <= 2; j++) {
        vt_opctx c;
        memset(&c, 0, sizeof c);
        c.prog = p, c.arena = arena, c.o = &p->op[j], c.op_id = j, c.step = 1, c.rctx = &rctx, c.s.x64 = x64;
        CHECK_OK(vt_opkind_get(p->op[j].kind)->exec(&c));
    }
    for (int b = 0; b < B; b++)
        for (int t = 0; t < HW; t++)
            for (int ch = 0; ch < C; ch++)
                CHECK(!memcmp(&y[(b * HW + t) * C + ch], &x[(b * C + ch) * HW + t], 4),
                      "to_channels_last: example %d pixel %d channel %d", b, t, ch);
    CHECK(!memcmp(x, z, sizeof(float) * N), "to_channels_first undoes to_channels_last, bit for bit");
    vt_steplog_free(&log);
    for (int c = 0; c < VT_TC_COUNT; c++) free(arena[c]);
    vt_program_free(p);
    free(m);
}

int main(void)
{
    canonical();
    refusals();
    moves();
    return vt_test_finish("test_graph");
}
