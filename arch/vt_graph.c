/* vt_graph.c - the forward graph and the one builder that derives its step program (vt_graph.h;
 * docs/models.md "The derivation"). The layers are lowered to operation kinds; the backward pass is
 * read off the kinds' backward facets (vt_grad_fn, ops/vt_ops.h), never written per network. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vt_arch.h"
#include "vt_graph.h"

#define ARR(...) ((const uint32_t[]){__VA_ARGS__})
#define IARG(...) ((const int64_t[]){__VA_ARGS__})
#define NONE UINT32_MAX
#define MAX_IN 8 /* inputs of a forward operation the derivation walks */
/* in vt_graph_build: fail with e set, freeing everything */
#define FAIL_IF(cond, code, ...)                                                                                       \
    do {                                                                                                               \
        if (cond) {                                                                                                    \
            e = vt_set_error((code), __VA_ARGS__);                                                                     \
            goto done;                                                                                                 \
        }                                                                                                              \
    } while (0)

void vt_graph_init(vt_graph *g) { memset(g, 0, sizeof *g); }

double vt_graph_f64(int64_t bits)
{
    double d;
    uint64_t u = (uint64_t)bits;
    memcpy(&d, &u, sizeof d);
    return d;
}

int64_t vt_graph_f64_bits(double d)
{
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    return (int64_t)u;
}

int vt_graph_alpha_ok(double alpha)
{
    const double a = alpha < 0 ? -alpha : alpha;
    return a == 0.0 || (a >= 0x1p-64 && a <= 0x1p64);
}

void vt_graph_free(vt_graph *g)
{
    free(g->param);
    free(g->layer);
    memset(g, 0, sizeof *g);
}

static int name_set(char *dst, const char *src)
{
    size_t n = strlen(src);
    if (n == 0 || n >= VT_GRAPH_NAME_MAX) return -1;
    memcpy(dst, src, n + 1);
    return 0;
}

uint32_t vt_graph_param(vt_graph *g, const char *name, uint32_t rank, const uint32_t *shape, vt_tinit init,
                        uint32_t fan_in, int *bad)
{
    vt_gparam *q = rank <= VT_MAX_RANK ? realloc(g->param, (g->n_param + 1) * sizeof *q) : NULL;
    if (!q) return *bad = 1, NONE;
    g->param = q;
    vt_gparam *w = &q[g->n_param];
    memset(w, 0, sizeof *w);
    if (name_set(w->name, name)) return *bad = 1, NONE;
    w->rank = rank, w->init = init, w->fan_in = fan_in;
    memcpy(w->shape, shape, rank * sizeof *shape);
    return g->n_param++;
}

uint32_t vt_graph_layer(vt_graph *g, vt_glayer_op op, const char *name, uint32_t n_in, const uint32_t *in,
                        uint32_t n_param, const uint32_t *param, const int64_t *attr, uint32_t cols, int *bad)
{
    vt_glayer *q = n_in <= 2 && n_param <= 4 ? realloc(g->layer, (g->n_layer + 1) * sizeof *q) : NULL;
    if (!q) return *bad = 1, NONE;
    g->layer = q;
    vt_glayer *l = &q[g->n_layer];
    memset(l, 0, sizeof *l);
    if (name_set(l->name, name)) return *bad = 1, NONE;
    l->op = op, l->n_in = n_in, l->n_param = n_param, l->cols = cols;
    memcpy(l->in, in, n_in * sizeof *in);
    if (n_param) memcpy(l->param, param, n_param * sizeof *param);
    if (attr) memcpy(l->attr, attr, sizeof l->attr);
    return ++g->n_layer; /* its output's value id */
}

/* ------------------------------------------------------------ the layers' attributes */

#define GEOM_DIM 4096    /* an image's side (the convolution kinds' limit) */
#define GEOM_CH 65536    /* channels */
#define GEOM_K 64        /* a window's side, a stride */
#define GEOM_ROWS (1 << 24) /* a sequence's rows per example, a row's width */
#define GEOM_SEQ 65536   /* an attention's positions */

vt_err vt_graph_layer_check(const vt_glayer *l, uint32_t *cols)
{
    const int64_t *a = l->attr;
    int used = 0; /* attributes the operation reads */
    uint64_t n = 0;
    switch (l->op) {
    case VT_GL_LINEAR:
        used = 2;
        VT_RETURN_ERROR_IF((a[0] != 0 && a[0] != 1) || a[1] < 0 || a[1] > GEOM_ROWS || (a[1] > 1 && l->cols % a[1]),
                           VT_ERR_FORMAT, "model graph: layer %s: transB %lld, %lld rows", l->name, (long long)a[0],
                           (long long)a[1]);
        n = l->cols;
        break;
    case VT_GL_RESHAPE:
        used = 1;
        VT_RETURN_ERROR_IF(a[0] < 0 || a[0] > GEOM_ROWS || (a[0] > 1 && l->cols % a[0]), VT_ERR_FORMAT,
                           "model graph: layer %s: %lld rows of a width %u", l->name, (long long)a[0], l->cols);
        n = l->cols;
        break;
    case VT_GL_DROPOUT: {
        const double pr = vt_graph_f64(a[0]);
        used = 2;
        VT_RETURN_ERROR_IF(!(pr > 0 && pr < 1) || a[1] < 0 || a[1] > ((int64_t)1 << 31), VT_ERR_FORMAT,
                           "model graph: layer %s: dropout of %g (supported: (0, 1)), key %lld (0 .. 2^31)", l->name,
                           pr, (long long)a[1]);
        n = l->cols;
        break;
    }
    case VT_GL_GELU:
        used = 1;
        VT_RETURN_ERROR_IF(a[0] != 0 && a[0] != 1, VT_ERR_FORMAT, "model graph: layer %s: GELU form %lld (0: tanh, 1: erf)",
                           l->name, (long long)a[0]);
        n = l->cols;
        break;
    case VT_GL_LAYERNORM: { /* eps, C, R */
        const double eps = vt_graph_f64(a[0]);
        used = 3;
        VT_RETURN_ERROR_IF(!(eps > 0 && eps < 1) || a[1] < 1 || a[1] > GEOM_ROWS || a[2] < 0 || a[2] > GEOM_ROWS,
                           VT_ERR_FORMAT, "model graph: layer %s: layer norm with eps %g (supported: (0, 1)) of %lld x %lld",
                           l->name, eps, (long long)a[2], (long long)a[1]);
        n = (uint64_t)a[1] * (uint64_t)(a[2] ? a[2] : 1);
        break;
    }
    case VT_GL_ATTENTION: { /* T, H, D, causal, scale */
        const double sc = vt_graph_f64(a[4]);
        used = 5;
        VT_RETURN_ERROR_IF(a[0] < 2 || a[0] > GEOM_SEQ || a[1] < 1 || a[1] > GEOM_CH || a[2] < 1 || a[2] > GEOM_CH ||
                               (a[3] != 0 && a[3] != 1) || !(sc > 0 && sc < 1e30),
                           VT_ERR_FORMAT,
                           "model graph: layer %s: attention over %lld positions, %lld heads of %lld, causal %lld, "
                           "scale %g",
                           l->name, (long long)a[0], (long long)a[1], (long long)a[2], (long long)a[3], sc);
        n = (uint64_t)a[0] * (uint64_t)a[1] * (uint64_t)a[2];
        break;
    }
    case VT_GL_POSITIONS: /* T, C */
        used = 2;
        VT_RETURN_ERROR_IF(a[0] < 2 || a[0] > GEOM_SEQ || a[1] < 1 || a[1] > GEOM_ROWS, VT_ERR_FORMAT,
                           "model graph: layer %s: positions of %lld x %lld", l->name, (long long)a[0], (long long)a[1]);
        n = (uint64_t)a[0] * (uint64_t)a[1];
        break;
    case VT_GL_EMBED: /* T, V, C */
        used = 3;
        VT_RETURN_ERROR_IF(a[0] < 2 || a[0] > GEOM_SEQ || a[1] < 2 || a[1] > 256 || a[2] < 1 || a[2] > GEOM_CH,
                           VT_ERR_FORMAT,
                           "model graph: layer %s: embeddings of %lld positions, a vocabulary of %lld (2..256: a text's "
                           "bytes) and width %lld",
                           l->name, (long long)a[0], (long long)a[1], (long long)a[2]);
        n = (uint64_t)a[0] * (uint64_t)a[2];
        break;
    case VT_GL_RELU:
    case VT_GL_ADD:
    case VT_GL_SIGMOID:
    case VT_GL_TANH: n = l->cols; break;
    case VT_GL_LEAKY_RELU: { /* attr[0]: alpha's FP64 bits */
        const double alpha = vt_graph_f64(a[0]);
        used = 1;
        VT_RETURN_ERROR_IF(!vt_graph_alpha_ok(alpha), VT_ERR_FORMAT,
                           "model graph: layer %s: alpha %g is not 0 or within [2^-64, 2^64] in magnitude", l->name,
                           alpha);
        n = l->cols;
        break;
    }
    case VT_GL_CONV:
        used = 8;
        VT_RETURN_ERROR_IF(a[0] < 1 || a[0] > GEOM_DIM || a[1] < 1 || a[1] > GEOM_DIM || a[2] < 1 || a[2] > GEOM_CH ||
                               a[3] < 1 || a[3] > GEOM_K || a[4] < 1 || a[4] > GEOM_K || a[5] < 0 || a[5] >= a[3] ||
                               a[0] + 2 * a[5] < a[3] || a[1] + 2 * a[5] < a[3] || (a[6] != 0 && a[6] != 1) ||
                               a[7] < 1 || a[7] > GEOM_CH,
                           VT_ERR_FORMAT,
                           "model graph: layer %s: a convolution of %lld x %lld x %lld, kernel %lld, stride %lld, pad "
                           "%lld, chw %lld, %lld channels out is not supported",
                           l->name, (long long)a[0], (long long)a[1], (long long)a[2], (long long)a[3], (long long)a[4],
                           (long long)a[5], (long long)a[6], (long long)a[7]);
        n = (uint64_t)((a[0] + 2 * a[5] - a[3]) / a[4] + 1) * (uint64_t)((a[1] + 2 * a[5] - a[3]) / a[4] + 1) *
            (uint64_t)a[7];
        break;
    case VT_GL_MAXPOOL:
        used = 4;
        VT_RETURN_ERROR_IF(a[0] < 1 || a[0] > GEOM_DIM || a[1] < 1 || a[1] > GEOM_DIM || a[2] < 1 || a[2] > GEOM_CH ||
                               a[3] < 1 || a[3] > GEOM_K || a[0] % a[3] || a[1] % a[3],
                           VT_ERR_FORMAT, "model graph: layer %s: bad max pooling (the window must divide the image)",
                           l->name);
        n = (uint64_t)(a[0] / a[3]) * (uint64_t)(a[1] / a[3]) * (uint64_t)a[2];
        break;
    case VT_GL_AVGPOOL:
        used = 3;
        VT_RETURN_ERROR_IF(a[0] < 1 || a[0] > GEOM_DIM || a[1] < 1 || a[1] > GEOM_DIM || a[2] < 1 || a[2] > GEOM_CH,
                           VT_ERR_FORMAT, "model graph: layer %s: bad average pooling", l->name);
        n = (uint64_t)a[2];
        break;
    case VT_GL_TO_NCHW:
    case VT_GL_TO_NHWC:
        used = 3;
        VT_RETURN_ERROR_IF(a[0] < 1 || a[0] > GEOM_DIM || a[1] < 1 || a[1] > GEOM_DIM || a[2] < 1 || a[2] > GEOM_CH,
                           VT_ERR_FORMAT, "model graph: layer %s: bad layout change", l->name);
        n = (uint64_t)a[0] * (uint64_t)a[1] * (uint64_t)a[2];
        break;
    case VT_GL_BATCHNORM: { /* eps, momentum (FP64 bits), C, H, W */
        const double eps = vt_graph_f64(a[0]), mom = vt_graph_f64(a[1]);
        used = 5;
        VT_RETURN_ERROR_IF(!(eps > 0 && eps < 1) || !(mom >= 0 && mom <= 1) || a[2] < 1 || a[2] > GEOM_CH ||
                               a[3] < 0 || a[3] > GEOM_DIM || a[4] < 0 || a[4] > GEOM_DIM || (a[3] == 0) != (a[4] == 0),
                           VT_ERR_FORMAT,
                           "model graph: layer %s: batch norm with eps %g (supported: (0, 1)), momentum %g ([0, 1]), "
                           "%lld channels of %lld x %lld",
                           l->name, eps, mom, (long long)a[2], (long long)a[3], (long long)a[4]);
        n = (uint64_t)a[2] * (uint64_t)(a[3] ? a[3] * a[4] : 1);
        break;
    }
    default: VT_RETURN_ERROR(VT_ERR_FORMAT, "model graph: layer %s: operation %d", l->name, (int)l->op);
    }
    for (int i = used; i < VT_GLAYER_ATTRS; i++)
        VT_RETURN_ERROR_IF(a[i] != 0, VT_ERR_FORMAT, "model graph: layer %s: attribute %d is %lld (unused: 0)", l->name,
                           i, (long long)a[i]);
    VT_RETURN_ERROR_IF(n == 0 || n > (1u << 30) || n != l->cols, VT_ERR_FORMAT,
                       "model graph: layer %s: width %u, its attributes give %llu", l->name, l->cols,
                       (unsigned long long)n);
    *cols = (uint32_t)n;
    return VT_OK;
}

/* ------------------------------------------------------------ the builder */

/* a value's layout: channels-last (an example is [h*w, c]), a sequence (h rows of c, ONNX's [N, h, c]:
 * seq, w 1) or flat (its elements in ONNX's order) */
typedef struct {
    uint8_t last, seq;
    uint32_t h, w, c;
} vlayout;

typedef struct {
    const vt_graph *g;
    const vt_recipe *rcp;
    vt_program *p;
    uint32_t B;
    uint32_t *pt;        /* parameter -> its state tensor */
    uint32_t *V, *Vcols; /* value -> its tensor, its width */
    vlayout *Vl;         /* value -> its layout */
    uint32_t *lop0, *lop1; /* layer -> its forward operations [lop0, lop1) */
    uint32_t *lay;       /* forward operation -> its layer */
    uint32_t nt;         /* tensors after the forward pass (the arrays below are indexed by them) */
    uint8_t *need, *is_param;
    uint32_t *G;         /* tensor -> its gradient tensor (NONE: none) */
    uint32_t *GP;        /* tensor -> its trainable parameter's gradient (NONE: not one) */
    uint32_t *readers, *met; /* tensor -> operations whose backward reaches it; met so far in the walk */
    uint32_t *first_c;   /* tensor -> its first contribution's index in cs */
    uint32_t *tgt;       /* (forward operation, input) -> where its gradient goes (NONE: nowhere) */
    uint32_t *cs, *cs_next, n_cs; /* contributions: tensor, and the next of the same tensor */
    uint32_t *sums;      /* tensor -> the first of its partial-sum tensors (n contributions - 2 of them) */
    uint32_t nfwd_end;   /* the layers' last forward operation */
    int next;            /* a language model: value 0 the tokens, read by embeddings only */
    uint32_t *px, *pdx;  /* pattern layer -> its backward's extra tensors (PX each), its input's gradient */
} bld;

static const char *tname(const bld *b, uint32_t t) { return b->p->t[t].name; }

/* a gradient tensor shaped as tensor t, named "<t's name><suffix>" */
static uint32_t grad_like(bld *b, uint32_t t, const char *fmt, uint32_t k)
{
    char nm[256], suf[64];
    snprintf(suf, sizeof suf, fmt, k);
    snprintf(nm, sizeof nm, "%s%s", tname(b, t), suf);
    const vt_tensor *x = &b->p->t[t];
    uint32_t shape[VT_MAX_RANK];
    memcpy(shape, x->shape, sizeof shape);
    return vt_prog_tensor(b->p, VT_TC_GRAD, (vt_dtype)x->dtype, x->rank, shape, "%s", nm);
}

/* value v is channels-last [h*w, c] (what the layer `ly` reads) */
static vt_err want_last(const bld *b, const vt_glayer *ly, uint32_t v, int64_t h, int64_t w, int64_t c)
{
    const vlayout *q = &b->Vl[v];
    VT_RETURN_ERROR_IF(!q->last || q->h != h || q->w != w || q->c != c, VT_ERR_ARG,
                       "graph: layer %s reads value %u as channels-last %lld x %lld x %lld; it is %s %u x %u x %u",
                       ly->name, v, (long long)h, (long long)w, (long long)c, q->last ? "channels-last" : "not",
                       q->h, q->w, q->c);
    return VT_OK;
}

static vt_err lower(bld *b)
{
    const vt_graph *g = b->g;
    vt_program *p = b->p;
    for (uint32_t l = 0; l < g->n_layer && !p->bad; l++) {
        const vt_glayer *ly = &g->layer[l];
        uint32_t width;
        VT_RETURN_ERROR_IF(ly->n_in < 1 || ly->n_in > 2 || ly->n_param > 4, VT_ERR_ARG,
                           "graph: layer %s reads %u values and %u parameters", ly->name, ly->n_in, ly->n_param);
        for (uint32_t i = 0; i < ly->n_in; i++)
            VT_RETURN_ERROR_IF(ly->in[i] > l || (b->next && ly->in[i] == 0 && ly->op != VT_GL_EMBED), VT_ERR_ARG,
                               "graph: layer %s reads value %u before it is computed (or a language model's tokens)",
                               ly->name, ly->in[i]);
        for (uint32_t i = 0; i < ly->n_param; i++)
            VT_RETURN_ERROR_IF(ly->param[i] >= g->n_param, VT_ERR_ARG, "graph: layer %s reads no parameter",
                               ly->name);
        if (vt_graph_layer_check(ly, &width)) {
            char msg[512];
            snprintf(msg, sizeof msg, "%s", vt_errmsg());
            return vt_set_error(VT_ERR_ARG, "graph: %s", msg);
        }
        const uint32_t x = b->V[ly->in[0]], K = b->Vcols[ly->in[0]], N = ly->cols;
        const int64_t *a = ly->attr;
        /* a channels-last tensor's rows, B * H * W, must fit the table's dimensions (the layer's
         * output's H and W exceed its input's by less than a window: pad < k <= 64) */
        const int64_t gh = ly->op == VT_GL_BATCHNORM ? a[3] : a[0], gw = ly->op == VT_GL_BATCHNORM ? a[4] : a[1];
        VT_RETURN_ERROR_IF(((ly->op >= VT_GL_CONV && ly->op <= VT_GL_TO_NHWC) || ly->op == VT_GL_BATCHNORM) &&
                               (uint64_t)b->B * (uint64_t)(gh + GEOM_K) * (uint64_t)(gw + GEOM_K) > ((uint64_t)1 << 31),
                           VT_ERR_ARG, "graph: layer %s: %u examples of %lld x %lld pixels are too many rows", ly->name,
                           b->B, (long long)gh, (long long)gw);
        const vlayout *xl = &b->Vl[ly->in[0]];
        vlayout yl = *xl; /* the output's layout: the input's unless the layer says otherwise */
        uint32_t y = x;
        b->lop0[l] = p->n_ops + 1;
        /* a sequence's rows, B * R (and an attention's scores, B * H * T * T), must fit the table's dimensions */
        const uint64_t R = ly->op == VT_GL_LINEAR ? (uint64_t)a[1] : ly->op == VT_GL_LAYERNORM ? (uint64_t)a[2] : 0,
                       SC = ly->op == VT_GL_ATTENTION ? (uint64_t)a[1] * (uint64_t)a[0] * (uint64_t)a[0] : 0;
        VT_RETURN_ERROR_IF((uint64_t)b->B * R > ((uint64_t)1 << 31) || (uint64_t)b->B * SC > ((uint64_t)1 << 34),
                           VT_ERR_ARG, "graph: layer %s: %u examples of its rows are too many", ly->name, b->B);
        /* a channels-last value of one pixel is also channels-first */
        VT_RETURN_ERROR_IF(xl->last && (uint64_t)xl->h * xl->w > 1 && ly->op != VT_GL_RELU && ly->op != VT_GL_ADD &&
                               ly->op != VT_GL_SIGMOID && ly->op != VT_GL_TANH && ly->op != VT_GL_LEAKY_RELU &&
                               ly->op != VT_GL_GELU && ly->op != VT_GL_DROPOUT &&
                               ly->op != VT_GL_CONV &&
                               ly->op != VT_GL_MAXPOOL && ly->op != VT_GL_AVGPOOL && ly->op != VT_GL_TO_NCHW &&
                               ly->op != VT_GL_BATCHNORM && !(ly->op == VT_GL_RESHAPE && a[0] > 1),
                           VT_ERR_ARG, "graph: layer %s reads a channels-last value (to_channels_first first)",
                           ly->name);
        switch (ly->op) {
        case VT_GL_LINEAR: { /* each of the example's R rows (a sequence's; 1: the example) times W */
            const int bias = ly->n_param == 2;
            const uint32_t W = b->pt[ly->param[0]], Rw = a[1] > 1 ? (uint32_t)a[1] : 1, Kr = K / Rw, Nr = N / Rw,
                           M = b->B * Rw;
            VT_RETURN_ERROR_IF(Rw > 1 ? !xl->seq || xl->h != Rw || K % Rw : xl->seq, VT_ERR_ARG,
                               "graph: layer %s: %u rows per example of a value of %u rows", ly->name, Rw,
                               xl->seq ? xl->h : 1);
            VT_RETURN_ERROR_IF(ly->n_param < 1 || p->t[W].n != (size_t)Kr * Nr ||
                                   (bias && p->t[b->pt[ly->param[1]]].n != Nr),
                               VT_ERR_ARG, "graph: layer %s: its parameters are not [%u, %u] and [%u]", ly->name, Kr,
                               Nr, Nr);
            uint32_t zg = vt_prog_tensor(p, VT_TC_ACT, VT_DT_F32, 2, ARR(M, Nr), "%s.%s", ly->name,
                                         bias ? "matmul" : "out");
            vt_prog_op(p, VT_OPK_MATMUL, ARR(x, W), 2, ARR(zg), 1, IARG(0, ly->attr[0] ? 1 : 0, M, Nr, Kr), 5, NULL,
                       0, "%s forward GEMM", ly->name);
            y = zg;
            if (Rw > 1) yl = (vlayout){.seq = 1, .h = Rw, .w = 1, .c = Nr};
            if (bias) {
                y = vt_prog_tensor(p, VT_TC_ACT, VT_DT_F32, 2, ARR(M, Nr), "%s.out", ly->name);
                vt_prog_op(p, VT_OPK_BIAS_ADD, ARR(zg, b->pt[ly->param[1]]), 2, ARR(y), 1, NULL, 0, NULL, 0,
                           "%s bias add", ly->name);
            }
            break;
        }
        case VT_GL_RELU:
        case VT_GL_ADD: /* the output has the input's shape and layout */
            VT_RETURN_ERROR_IF(N != K || (ly->op == VT_GL_ADD && (ly->n_in != 2 || b->Vcols[ly->in[1]] != K ||
                                                                    memcmp(&b->Vl[ly->in[1]], xl, sizeof *xl) != 0)),
                               VT_ERR_ARG, "graph: layer %s: its inputs and output differ in width or layout",
                               ly->name);
        {
            uint32_t shape[VT_MAX_RANK]; /* a copy: the table may move when the tensor is added */
            memcpy(shape, p->t[x].shape, sizeof shape);
            y = vt_prog_tensor(p, VT_TC_ACT, VT_DT_F32, p->t[x].rank, shape, "%s.out", ly->name);
        }
            if (ly->op == VT_GL_RELU) vt_prog_op(p, VT_OPK_RELU, ARR(x), 1, ARR(y), 1, NULL, 0, NULL, 0, "%s", ly->name);
            else vt_prog_op(p, VT_OPK_ADD, ARR(x, b->V[ly->in[1]]), 2, ARR(y), 1, NULL, 0, NULL, 0, "%s", ly->name);
            break;
        case VT_GL_SIGMOID:
        case VT_GL_TANH:
        case VT_GL_LEAKY_RELU: { /* the activations of client models: one elementwise kind each; the output has
                                  * the input's shape and layout */
            VT_RETURN_ERROR_IF(N != K, VT_ERR_ARG, "graph: layer %s: its input and output differ in width", ly->name);
            double alpha = vt_graph_f64(ly->attr[0]);
            VT_RETURN_ERROR_IF(ly->op == VT_GL_LEAKY_RELU && !vt_graph_alpha_ok(alpha), VT_ERR_ARG,
                               "graph: layer %s: alpha %g is not 0 or within [2^-64, 2^64] in magnitude", ly->name,
                               alpha);
            uint32_t shape[VT_MAX_RANK]; /* a copy: the table may move when the tensor is added */
            memcpy(shape, p->t[x].shape, sizeof shape);
            y = vt_prog_tensor(p, VT_TC_ACT, VT_DT_F32, p->t[x].rank, shape, "%s.out", ly->name);
            const uint16_t k = ly->op == VT_GL_SIGMOID ? VT_OPK_SIGMOID : ly->op == VT_GL_TANH ? VT_OPK_TANH
                                                                                                 : VT_OPK_LEAKY_RELU;
            vt_prog_op(p, k, ARR(x), 1, ARR(y), 1, NULL, 0, &alpha, k == VT_OPK_LEAKY_RELU, "%s", ly->name);
            break;
        }
        case VT_GL_RESHAPE: /* the same bytes: the value is its input's tensor */
            VT_RETURN_ERROR_IF(N != K, VT_ERR_ARG, "graph: layer %s changes the example's size (%u to %u values)",
                               ly->name, K, N);
            if (a[0] > 1) { /* a channels-last image (or a sequence) of R pixels as a sequence of R rows */
                VT_RETURN_ERROR_IF(!(xl->last || xl->seq) || (uint64_t)xl->h * xl->w != (uint64_t)a[0], VT_ERR_ARG,
                                   "graph: layer %s reads %s as a sequence of %lld rows", ly->name,
                                   xl->last || xl->seq ? "a value of another row count" : "a flat value",
                                   (long long)a[0]);
                yl = (vlayout){.seq = 1, .h = (uint32_t)a[0], .w = 1, .c = xl->c};
            } else if (xl->seq) yl = (vlayout){0}; /* a sequence flattened: the same bytes (an image is refused above) */
            break;
        case VT_GL_CONV: {
            /* the weight [Co, C, k, k] permuted to the GEMM's [k*k*C, Co] (exact moves), then conv2d, then
             * the bias per channel */
            const int64_t H = a[0], Wd = a[1], C = a[2], k = a[3], s = a[4], pad = a[5], chw = a[6], Co = a[7];
            const int bias = ly->n_param == 2;
            if (chw) VT_RETURN_ERROR_IF(xl->last || K != (uint64_t)H * Wd * C, VT_ERR_ARG,
                                        "graph: layer %s reads %u values as channels-first %lld x %lld x %lld",
                                        ly->name, K, (long long)C, (long long)H, (long long)Wd);
            else VT_FORWARD_IF_ERROR(want_last(b, ly, ly->in[0], H, Wd, C));
            const uint32_t W = b->pt[ly->param[0]];
            const uint32_t kkC = (uint32_t)(k * k * C), Ho = (uint32_t)((H + 2 * pad - k) / s + 1),
                           Wo = (uint32_t)((Wd + 2 * pad - k) / s + 1);
            const int kl = ly->kernel_layout; /* W [k, k, C, Co] (the kind's), else the module's [Co, C, k, k] */
            const uint32_t *ws = p->t[W].shape;
            VT_RETURN_ERROR_IF(ly->n_param < 1 || p->t[W].rank != 4 || ws[0] != (kl ? k : Co) ||
                                   ws[1] != (kl ? k : C) || ws[2] != (kl ? C : k) || ws[3] != (kl ? Co : k) ||
                                   (bias && p->t[b->pt[ly->param[1]]].n != (size_t)Co),
                               VT_ERR_ARG,
                               "graph: layer %s: its parameters are not [%lld, %lld, %lld, %lld] and [%lld]",
                               ly->name, (long long)(kl ? k : Co), (long long)(kl ? k : C), (long long)(kl ? C : k),
                               (long long)(kl ? Co : k), (long long)Co);
            uint32_t wg = W;
            if (!kl) {
                const uint32_t wt = vt_prog_tensor(p, VT_TC_ACT, VT_DT_F32, 2,
                                                   ARR((uint32_t)(Co * k * k), (uint32_t)C), "%s.weight.taps",
                                                   ly->name);
                vt_prog_op(p, VT_OPK_NCHW_TO_NHWC, ARR(W), 1, ARR(wt), 1, IARG(Co, k * k, C), 3, NULL, 0,
                           "%s weight to taps", ly->name);
                wg = vt_prog_tensor(p, VT_TC_ACT, VT_DT_F32, 2, ARR(kkC, (uint32_t)Co), "%s.weight.gemm", ly->name);
                vt_prog_op(p, VT_OPK_NHWC_TO_NCHW, ARR(wt), 1, ARR(wg), 1, IARG(1, Co, (int64_t)kkC), 3, NULL, 0,
                           "%s weight to GEMM layout", ly->name);
            }
            const uint32_t rows = b->B * Ho * Wo;
            const uint32_t z = vt_prog_tensor(p, VT_TC_ACT, VT_DT_F32, 2, ARR(rows, (uint32_t)Co), "%s.%s", ly->name,
                                              bias ? "conv" : "out");
            vt_prog_op(p, VT_OPK_CONV2D, ARR(x, wg), 2, ARR(z), 1, IARG(b->B, H, Wd, C, k, s, pad, chw, Co), 9, NULL,
                       0, "%s", ly->name);
            y = z;
            if (bias) {
                y = vt_prog_tensor(p, VT_TC_ACT, VT_DT_F32, 2, ARR(rows, (uint32_t)Co), "%s.out", ly->name);
                vt_prog_op(p, VT_OPK_BIAS_ADD, ARR(z, b->pt[ly->param[1]]), 2, ARR(y), 1, NULL, 0, NULL, 0,
                           "%s bias add", ly->name);
            }
            yl = (vlayout){.last = 1, .h = Ho, .w = Wo, .c = (uint32_t)Co};
            break;
        }
        case VT_GL_MAXPOOL: {
            VT_FORWARD_IF_ERROR(want_last(b, ly, ly->in[0], a[0], a[1], a[2]));
            const uint32_t Ho = (uint32_t)(a[0] / a[3]), Wo = (uint32_t)(a[1] / a[3]);
            y = vt_prog_tensor(p, VT_TC_ACT, VT_DT_F32, 2, ARR(b->B * Ho * Wo, (uint32_t)a[2]), "%s.out", ly->name);
            vt_prog_op(p, VT_OPK_MAXPOOL, ARR(x), 1, ARR(y), 1, IARG(b->B, a[0], a[1], a[2], a[3]), 5, NULL, 0, "%s",
                       ly->name);
            yl = (vlayout){.last = 1, .h = Ho, .w = Wo, .c = (uint32_t)a[2]};
            break;
        }
        case VT_GL_AVGPOOL: /* of a channels-last image, or of a sequence (the mean over its rows: H rows, W 1) */
            if (xl->seq)
                VT_RETURN_ERROR_IF((uint64_t)a[0] * a[1] != xl->h || a[2] != xl->c, VT_ERR_ARG,
                                   "graph: layer %s reads a sequence of %u x %u as %lld x %lld", ly->name, xl->h,
                                   xl->c, (long long)(a[0] * a[1]), (long long)a[2]);
            else VT_FORWARD_IF_ERROR(want_last(b, ly, ly->in[0], a[0], a[1], a[2]));
            y = vt_prog_tensor(p, VT_TC_ACT, VT_DT_F32, 2, ARR(b->B, (uint32_t)a[2]), "%s.out", ly->name);
            vt_prog_op(p, VT_OPK_AVGPOOL, ARR(x), 1, ARR(y), 1, IARG(b->B, a[0] * a[1]), 2, NULL, 0, "%s", ly->name);
            yl = (vlayout){0};
            break;
        case VT_GL_TO_NCHW:
            VT_FORWARD_IF_ERROR(want_last(b, ly, ly->in[0], a[0], a[1], a[2]));
            y = vt_prog_tensor(p, VT_TC_ACT, VT_DT_F32, 2, ARR(b->B, N), "%s.out", ly->name);
            vt_prog_op(p, VT_OPK_NHWC_TO_NCHW, ARR(x), 1, ARR(y), 1, IARG(b->B, a[0] * a[1], a[2]), 3, NULL, 0, "%s",
                       ly->name);
            yl = (vlayout){0};
            break;
        case VT_GL_TO_NHWC:
            VT_RETURN_ERROR_IF(K != N, VT_ERR_ARG, "graph: layer %s: its input has %u values, not %u", ly->name, K, N);
            y = vt_prog_tensor(p, VT_TC_ACT, VT_DT_F32, 2, ARR(b->B * (uint32_t)(a[0] * a[1]), (uint32_t)a[2]),
                               "%s.out", ly->name);
            vt_prog_op(p, VT_OPK_NCHW_TO_NHWC, ARR(x), 1, ARR(y), 1, IARG(b->B, a[0] * a[1], a[2]), 3, NULL, 0, "%s",
                       ly->name);
            yl = (vlayout){.last = 1, .h = (uint32_t)a[0], .w = (uint32_t)a[1], .c = (uint32_t)a[2]};
            break;
        case VT_GL_BATCHNORM: {
            /* training mode: s1 = column sum, xc = x - s1 / M, s2 = column dot (xc, xc), y = gamma xc /
             * sqrt(s2 / M + eps) + beta; the running statistics updated from s1 and s2 (the resnet's unit) */
            const uint32_t C = (uint32_t)a[2], M = b->B * (uint32_t)(a[3] ? a[3] * a[4] : 1);
            if (a[3]) VT_FORWARD_IF_ERROR(want_last(b, ly, ly->in[0], a[3], a[4], a[2]));
            else VT_RETURN_ERROR_IF(xl->last || K != C, VT_ERR_ARG,
                                    "graph: layer %s reads %u values as %u channels", ly->name, K, C);
            VT_RETURN_ERROR_IF(M < 2, VT_ERR_ARG, "graph: layer %s: batch norm over %u row (at least 2)", ly->name, M);
            VT_RETURN_ERROR_IF(ly->n_param != 4, VT_ERR_ARG, "graph: layer %s reads %u parameters (4)", ly->name,
                               ly->n_param);
            for (uint32_t i = 0; i < 4; i++)
                VT_RETURN_ERROR_IF(p->t[b->pt[ly->param[i]]].n != C || g->param[ly->param[i]].buffer != (i >= 2),
                                   VT_ERR_ARG,
                                   "graph: layer %s: its weight, bias, running mean and variance are not [%u] (the "
                                   "last two buffers)",
                                   ly->name, C);
            const uint32_t s1 = vt_prog_tensor(p, VT_TC_ACT, VT_DT_F32, 1, ARR(C), "%s.sum", ly->name);
            const uint32_t xc = vt_prog_tensor(p, VT_TC_ACT, VT_DT_F32, 2, ARR(M, C), "%s.centered", ly->name);
            const uint32_t s2 = vt_prog_tensor(p, VT_TC_ACT, VT_DT_F32, 1, ARR(C), "%s.sumsq", ly->name);
            uint32_t shape[VT_MAX_RANK]; /* a copy: the table may move when the tensor is added */
            memcpy(shape, p->t[x].shape, sizeof shape);
            y = vt_prog_tensor(p, VT_TC_ACT, VT_DT_F32, p->t[x].rank, shape, "%s.out", ly->name);
            const uint32_t gm = b->pt[ly->param[0]], bt = b->pt[ly->param[1]], rm = b->pt[ly->param[2]],
                           rv = b->pt[ly->param[3]];
            const double eps = vt_graph_f64(a[0]), mom = vt_graph_f64(a[1]);
            vt_prog_op(p, VT_OPK_COLSUM, ARR(x), 1, ARR(s1), 1, NULL, 0, NULL, 0, "%s sum", ly->name);
            vt_prog_op(p, VT_OPK_BN_CENTER, ARR(x, s1), 2, ARR(xc), 1, NULL, 0, NULL, 0, "%s centre", ly->name);
            vt_prog_op(p, VT_OPK_COLDOT, ARR(xc, xc), 2, ARR(s2), 1, NULL, 0, NULL, 0, "%s sum of squares", ly->name);
            vt_prog_op(p, VT_OPK_BN_APPLY, ARR(xc, s2, gm, bt), 4, ARR(y), 1, NULL, 0, &eps, 1, "%s apply", ly->name);
            vt_prog_op(p, VT_OPK_BN_RUNNING, ARR(s1, s2, rm, rv), 4, ARR(rm, rv), 2, IARG(M), 1, &mom, 1,
                       "%s running statistics", ly->name);
            break;
        }
        case VT_GL_GELU: /* elementwise, the output of the input's shape and layout */
        case VT_GL_DROPOUT: {
            VT_RETURN_ERROR_IF(N != K, VT_ERR_ARG, "graph: layer %s: its input and output differ in width", ly->name);
            uint32_t shape[VT_MAX_RANK]; /* a copy: the table may move when the tensor is added */
            memcpy(shape, p->t[x].shape, sizeof shape);
            y = vt_prog_tensor(p, VT_TC_ACT, VT_DT_F32, p->t[x].rank, shape, "%s.out", ly->name);
            if (ly->op == VT_GL_GELU)
                vt_prog_op(p, a[0] ? VT_OPK_GELU_ERF : VT_OPK_GELU, ARR(x), 1, ARR(y), 1, NULL, 0, NULL, 0, "%s", ly->name);
            else {
                const double pr = vt_graph_f64(a[0]);
                vt_prog_op(p, VT_OPK_DROPOUT, ARR(x), 1, ARR(y), 1, IARG((int64_t)b->rcp->seed, a[1] ? a[1] : (int64_t)l + 1), 2, &pr,
                           1, "%s", ly->name);
            }
            break;
        }
        case VT_GL_LAYERNORM: {
            /* each row: s1 = row sum, xc = x - s1 / C, s2 = row dot (xc, xc), xh = xc / sqrt(s2 / C + eps),
             * y = gamma xh + beta (the GPT's layer norm) */
            const uint32_t C = (uint32_t)a[1], Rw = a[2] > 1 ? (uint32_t)a[2] : 1, M = b->B * Rw;
            VT_RETURN_ERROR_IF((Rw > 1 ? !xl->seq || xl->h != Rw || xl->c != C : xl->seq || xl->last || K != C) ||
                                   p->t[x].rank != 2 || p->t[x].shape[0] != M || p->t[x].shape[1] != C,
                               VT_ERR_ARG, "graph: layer %s reads a value that is not %u rows of %u per example",
                               ly->name, Rw, C);
            VT_RETURN_ERROR_IF(ly->n_param != 2 || p->t[b->pt[ly->param[0]]].n != C || p->t[b->pt[ly->param[1]]].n != C,
                               VT_ERR_ARG, "graph: layer %s: its weight and bias are not [%u]", ly->name, C);
            const double eps = vt_graph_f64(a[0]);
            const uint32_t s1 = vt_prog_tensor(p, VT_TC_ACT, VT_DT_F32, 1, ARR(M), "%s.sum", ly->name);
            const uint32_t xc = vt_prog_tensor(p, VT_TC_ACT, VT_DT_F32, 2, ARR(M, C), "%s.centered", ly->name);
            const uint32_t s2 = vt_prog_tensor(p, VT_TC_ACT, VT_DT_F32, 1, ARR(M), "%s.sumsq", ly->name);
            const uint32_t xh = vt_prog_tensor(p, VT_TC_ACT, VT_DT_F32, 2, ARR(M, C), "%s.normalised", ly->name);
            y = vt_prog_tensor(p, VT_TC_ACT, VT_DT_F32, 2, ARR(M, C), "%s.out", ly->name);
            vt_prog_op(p, VT_OPK_ROW_SUM, ARR(x), 1, ARR(s1), 1, NULL, 0, NULL, 0, "%s sum", ly->name);
            vt_prog_op(p, VT_OPK_LN_CENTER, ARR(x, s1), 2, ARR(xc), 1, NULL, 0, NULL, 0, "%s centre", ly->name);
            vt_prog_op(p, VT_OPK_ROW_DOT, ARR(xc, xc), 2, ARR(s2), 1, NULL, 0, NULL, 0, "%s sum of squares", ly->name);
            vt_prog_op(p, VT_OPK_LN_NORM, ARR(xc, s2), 2, ARR(xh), 1, NULL, 0, &eps, 1, "%s normalise", ly->name);
            vt_prog_op(p, VT_OPK_AFFINE, ARR(xh, b->pt[ly->param[0]], b->pt[ly->param[1]]), 3, ARR(y), 1, NULL, 0, NULL,
                       0, "%s scale and shift", ly->name);
            break;
        }
        case VT_GL_ATTENTION: {
            /* the GPT's attention: heads_split of q|k|v, scores q k^T, the (causal) softmax of scale times them,
             * the weighted sum of v, heads merged */
            const uint32_t T = (uint32_t)a[0], H = (uint32_t)a[1], D = (uint32_t)a[2], C = H * D, G = b->B * H;
            const double sc = vt_graph_f64(a[4]);
            VT_RETURN_ERROR_IF(!xl->seq || xl->h != T || xl->c != 3 * C || p->t[x].rank != 2 ||
                                   p->t[x].shape[0] != b->B * T || p->t[x].shape[1] != 3 * C,
                               VT_ERR_ARG, "graph: layer %s reads a value that is not %u rows of q, k and v (%u each)",
                               ly->name, T, C);
            uint32_t t[7];
            static const char *const TN[7] = {"q", "k", "v", "scores", "probs", "weighted", "out"};
            for (int i = 0; i < 7; i++)
                t[i] = vt_prog_tensor(p, VT_TC_ACT, VT_DT_F32, 2,
                                      i == 6 ? ARR(b->B * T, C) : ARR(G * T, i == 3 || i == 4 ? T : D), "%s.%s",
                                      ly->name, TN[i]);
            vt_prog_op(p, VT_OPK_HEADS_SPLIT, ARR(x), 1, ARR(t[0], t[1], t[2]), 3, IARG(b->B, T, H, D), 4, NULL, 0,
                       "%s heads", ly->name);
            vt_prog_op(p, VT_OPK_BMM, ARR(t[0], t[1]), 2, ARR(t[3]), 1, IARG(G, T, T, D, 0, 1), 6, NULL, 0, "%s scores",
                       ly->name);
            vt_prog_op(p, a[3] ? VT_OPK_SOFTMAX_CAUSAL : VT_OPK_SOFTMAX_SCALED, ARR(t[3]), 1, ARR(t[4]), 1, IARG(T), 1,
                       &sc, 1, "%s %s", ly->name, a[3] ? "causal softmax" : "softmax");
            vt_prog_op(p, VT_OPK_BMM, ARR(t[4], t[2]), 2, ARR(t[5]), 1, IARG(G, T, D, T, 0, 0), 6, NULL, 0,
                       "%s weighted sum", ly->name);
            vt_prog_op(p, VT_OPK_HEADS_MERGE, ARR(t[5]), 1, ARR(t[6]), 1, IARG(b->B, T, H, D), 4, NULL, 0,
                       "%s merge heads", ly->name);
            y = t[6];
            yl = (vlayout){.seq = 1, .h = T, .w = 1, .c = C};
            break;
        }
        case VT_GL_POSITIONS: { /* P added to each example's rows */
            const uint32_t T = (uint32_t)a[0], C = (uint32_t)a[1];
            VT_RETURN_ERROR_IF(!xl->seq || xl->h != T || xl->c != C || p->t[x].rank != 2 || p->t[x].shape[1] != C ||
                                   ly->n_param != 1 || p->t[b->pt[ly->param[0]]].n != (size_t)T * C,
                               VT_ERR_ARG, "graph: layer %s: a position embedding of %u x %u on another value", ly->name,
                               T, C);
            uint32_t shape[VT_MAX_RANK]; /* a copy: the table may move when the tensor is added */
            memcpy(shape, p->t[x].shape, sizeof shape);
            y = vt_prog_tensor(p, VT_TC_ACT, VT_DT_F32, 2, shape, "%s.out", ly->name);
            vt_prog_op(p, VT_OPK_ADD_POSITIONS, ARR(x, b->pt[ly->param[0]]), 2, ARR(y), 1, IARG(T), 1, NULL, 0, "%s",
                       ly->name);
            break;
        }
        case VT_GL_EMBED: { /* the GPT's embed: wte[token] + wpe[t], a sequence of T rows of C */
            const uint32_t T = (uint32_t)a[0], Vv = (uint32_t)a[1], C = (uint32_t)a[2];
            VT_RETURN_ERROR_IF(!b->next || ly->in[0] != 0 || p->t[x].dtype != VT_DT_U8 || p->t[x].n != (size_t)b->B * T,
                               VT_ERR_ARG, "graph: layer %s: embeddings read the tokens of a language model's input",
                               ly->name);
            VT_RETURN_ERROR_IF(p->t[b->pt[ly->param[0]]].n != (size_t)Vv * C || p->t[b->pt[ly->param[1]]].n != (size_t)T * C,
                               VT_ERR_ARG, "graph: layer %s: its embeddings are not [%u, %u] and [%u, %u]", ly->name,
                               Vv, C, T, C);
            y = vt_prog_tensor(p, VT_TC_ACT, VT_DT_F32, 2, ARR(b->B * T, C), "%s.out", ly->name);
            vt_prog_op(p, VT_OPK_EMBED, ARR(x, b->pt[ly->param[0]], b->pt[ly->param[1]]), 3, ARR(y), 1, NULL, 0, NULL, 0,
                       "%s", ly->name);
            yl = (vlayout){.seq = 1, .h = T, .w = 1, .c = C};
            break;
        }
        default: VT_RETURN_ERROR(VT_ERR_ARG, "graph: layer %s has an unknown operation %d", ly->name, (int)ly->op);
        }
        (void)width;
        b->lop1[l] = p->n_ops + 1;
        b->V[l + 1] = y, b->Vcols[l + 1] = N, b->Vl[l + 1] = yl;
    }
    VT_RETURN_ERROR_IF(!p->bad && g->out >= 1 && g->out <= g->n_layer && b->Vl[g->out].last &&
                           (uint64_t)b->Vl[g->out].h * b->Vl[g->out].w > 1,
                       VT_ERR_ARG,
                       "graph: the output is a channels-last value (to_channels_first first)");
    return p->bad ? vt_set_error(VT_ERR_NOMEM, "graph: out of memory") : VT_OK;
}

/* t's contributions summed left to right into G[t] */
static void emit_sums(bld *b, uint32_t t)
{
    vt_program *p = b->p;
    uint32_t q = b->first_c[t], acc = b->cs[q], s = 2;
    char nm[256];
    snprintf(nm, sizeof nm, "%s", tname(b, t));
    for (q = b->cs_next[q]; q != NONE; q = b->cs_next[q], s++) {
        uint32_t dst = b->cs_next[q] == NONE ? b->G[t] : b->sums[t] + (s - 2);
        vt_prog_op(p, VT_OPK_ADD, ARR(acc, b->cs[q]), 2, ARR(dst), 1, NULL, 0, NULL, 0, "%s gradient sum %u", nm, s);
        acc = dst;
    }
}

/* the tensor that receives one more contribution to t's gradient (dy itself when the rule passes the
 * output's gradient through: alias); t's gradient and partial sums made at the walk's last one */
/* c appended to t's contributions (the n-th when n are already there) */
static void chain_push(bld *b, uint32_t t, uint32_t c, uint32_t n)
{
    const uint32_t k = b->n_cs++;
    b->cs[k] = c, b->cs_next[k] = NONE;
    if (n == 0) b->first_c[t] = k;
    else {
        uint32_t q = b->first_c[t];
        while (b->cs_next[q] != NONE) q = b->cs_next[q];
        b->cs_next[q] = k;
    }
}

static uint32_t contrib(bld *b, uint32_t t, int alias, uint32_t dy)
{
    if (b->readers[t] == 1) return b->G[t] = alias ? dy : grad_like(b, t, ".grad", 0);
    const uint32_t c = alias ? dy : grad_like(b, t, ".grad.%u", b->met[t] + 1);
    chain_push(b, t, c, b->met[t]);
    if (++b->met[t] == b->readers[t]) { /* the last one: the partial sums, then the sum */
        b->sums[t] = b->p->n_tensors;
        for (uint32_t s = 2; s < b->readers[t]; s++) grad_like(b, t, ".grad.sum%u", s);
        b->G[t] = grad_like(b, t, ".grad", 0);
    }
    return c;
}

/* a trainable parameter read by several operations (tied weights): one gradient per reader, "<p>.grad.K" in the
 * walk's order, then the partial sums, made after the parameters' gradients; their sum is GP[t] (and G[t]) */
static void param_contribs(bld *b, uint32_t t)
{
    for (uint32_t k = 0; k < b->readers[t]; k++) chain_push(b, t, grad_like(b, t, ".grad.%u", k + 1), k);
    b->sums[t] = b->p->n_tensors;
    for (uint32_t s = 2; s < b->readers[t]; s++) grad_like(b, t, ".grad.sum%u", s);
    b->G[t] = b->GP[t];
}

/* where the next gradient of trainable parameter t goes: GP[t], or its next contribution */
static uint32_t ptarget(const bld *b, uint32_t t)
{
    if (b->readers[t] <= 1) return b->GP[t];
    uint32_t q = b->first_c[t];
    for (uint32_t k = 0; k < b->met[t]; k++) q = b->cs_next[q];
    return b->cs[q];
}

/* after a gradient of t: the walk's last one sums them into GP[t] */
static void pdone(bld *b, uint32_t t)
{
    if (b->readers[t] > 1 && ++b->met[t] == b->readers[t]) emit_sums(b, t);
}

/* ---- the layers differentiated as one pattern (their kinds' facets say fused): batch norm, layer norm,
 * attention. Each reads its input x (its first operation's first input) and at most two trainable
 * parameters (gamma, beta), writes y (the layer's value); its backward's extra tensors are made where the
 * walk meets it (px), then its input's gradient (pdx). */
#define PX 8 /* extra tensors per pattern layer */

static int pat_op(vt_glayer_op op)
{
    return op == VT_GL_BATCHNORM || op == VT_GL_LAYERNORM || op == VT_GL_ATTENTION || op == VT_GL_EMBED;
}
static int is_pat(const bld *b, uint32_t j) { return pat_op(b->g->layer[b->lay[j]].op); }

static vt_err pat_analyse(bld *b, uint32_t l)
{
    const vt_glayer *ly = &b->g->layer[l];
    const uint32_t x = b->V[ly->in[0]];
    int any = b->need[x];
    for (uint32_t k = 0; k < ly->n_param && k < 2; k++) { /* gamma, beta */
        const uint32_t t = b->pt[ly->param[k]];
        if (!b->need[t]) continue;
        any = 1, b->readers[t]++;
    }
    if (b->need[x] && !b->is_param[x]) b->readers[x]++;
    if (any) b->need[b->V[l + 1]] = 1;
    return VT_OK;
}

/* a gradient tensor of the pattern layer l: extra k, [rows, cols] (cols 0: a vector [rows]) */
static void pat_tensor(bld *b, uint32_t l, uint32_t k, uint32_t rows, uint32_t cols, const char *what)
{
    b->px[l * PX + k] = vt_prog_tensor(b->p, VT_TC_GRAD, VT_DT_F32, cols ? 2 : 1, ARR(rows, cols), "%s.%s",
                                       b->g->layer[l].name, what);
}

static void pat_plan(bld *b, uint32_t l)
{
    const vt_glayer *ly = &b->g->layer[l];
    const int64_t *a = ly->attr;
    const uint32_t x = b->V[ly->in[0]], dx = b->need[x] && !b->is_param[x];
    if (b->G[b->V[l + 1]] == NONE) return;
    if (ly->op == VT_GL_BATCHNORM) { /* g2, and the bias's gradient when it takes none */
        pat_tensor(b, l, 0, (uint32_t)a[2], 0, "out_dot_centered");
        if (!b->need[b->pt[ly->param[1]]]) pat_tensor(b, l, 1, (uint32_t)a[2], 0, "out_sum");
    } else if (ly->op == VT_GL_LAYERNORM && dx) { /* dy gamma, its row sums and its row dots with xh */
        const uint32_t M = b->B * (a[2] > 1 ? (uint32_t)a[2] : 1);
        pat_tensor(b, l, 0, M, (uint32_t)a[1], "out.grad.scaled");
        pat_tensor(b, l, 1, M, 0, "grad.sum");
        pat_tensor(b, l, 2, M, 0, "grad.dot");
    } else if (ly->op == VT_GL_EMBED && b->need[b->pt[ly->param[0]]]) { /* the tokens one-hot */
        pat_tensor(b, l, 0, b->B * (uint32_t)a[0], (uint32_t)a[1], "onehot");
    } else if (ly->op == VT_GL_ATTENTION && dx) {
        const uint32_t GT = b->B * (uint32_t)a[1] * (uint32_t)a[0], T = (uint32_t)a[0], D = (uint32_t)a[2];
        static const char *const N[7] = {"weighted.grad", "probs.grad", "v.grad", "probs.grad.dot", "scores.grad",
                                         "q.grad", "k.grad"};
        for (uint32_t k = 0; k < 7; k++) pat_tensor(b, l, k, GT, k == 3 ? 0 : k == 1 || k == 4 ? T : D, N[k]);
    }
    if (dx) b->pdx[l] = contrib(b, x, 0, NONE);
}

static void pat_emit(bld *b, uint32_t l)
{
    vt_program *p = b->p;
    const vt_glayer *ly = &b->g->layer[l];
    const uint32_t j0 = b->lop0[l], x = b->V[ly->in[0]], dy = b->G[b->V[l + 1]], *e = b->px + l * PX;
    const char *nm = ly->name;
    const int dx = b->need[x] && !b->is_param[x];
    if (dy == NONE) return;
    if (ly->op == VT_GL_BATCHNORM) { /* the resnet's unit */
        const vt_opdesc ap = p->op[j0 + 3]; /* apply (xc, s2, gamma, beta); a copy: the table may move */
        const uint32_t M = (uint32_t)p->op[j0 + 4].iarg[0], xc = ap.in[0], s2 = ap.in[1], gm = ap.in[2], bt = ap.in[3];
        const uint32_t gb = b->GP[bt] != NONE ? ptarget(b, bt) : e[1];
        vt_prog_op(p, VT_OPK_COLSUM, ARR(dy), 1, ARR(gb), 1, NULL, 0, NULL, 0, "%s bias gradient", nm);
        if (b->GP[bt] != NONE) pdone(b, bt);
        vt_prog_op(p, VT_OPK_COLDOT, ARR(dy, xc), 2, ARR(e[0]), 1, NULL, 0, NULL, 0, "%s gradient dot centred", nm);
        if (b->GP[gm] != NONE) {
            vt_prog_op(p, VT_OPK_BN_GAMMA_GRAD, ARR(e[0], s2), 2, ARR(ptarget(b, gm)), 1, IARG(M), 1, ap.farg, 1,
                       "%s weight gradient", nm);
            pdone(b, gm);
        }
        if (dx)
            vt_prog_op(p, VT_OPK_BN_BACKWARD, ARR(dy, xc, s2, gb, e[0], gm), 6, ARR(b->pdx[l]), 1, NULL, 0, ap.farg, 1,
                       "%s backward", nm);
    } else if (ly->op == VT_GL_LAYERNORM) { /* the GPT's */
        const vt_opdesc af = p->op[j0 + 4]; /* affine (xh, gamma, beta) */
        const uint32_t s2 = p->op[j0 + 3].in[1], xh = af.in[0], gm = af.in[1], bt = af.in[2];
        const double eps = p->op[j0 + 3].farg[0];
        if (b->GP[bt] != NONE) {
            vt_prog_op(p, VT_OPK_COLSUM, ARR(dy), 1, ARR(ptarget(b, bt)), 1, NULL, 0, NULL, 0, "%s bias gradient", nm);
            pdone(b, bt);
        }
        if (b->GP[gm] != NONE) {
            vt_prog_op(p, VT_OPK_COLDOT, ARR(dy, xh), 2, ARR(ptarget(b, gm)), 1, NULL, 0, NULL, 0, "%s weight gradient",
                       nm);
            pdone(b, gm);
        }
        if (dx) {
            vt_prog_op(p, VT_OPK_SCALE_COLS, ARR(dy, gm), 2, ARR(e[0]), 1, NULL, 0, NULL, 0, "%s gradient times weight",
                       nm);
            vt_prog_op(p, VT_OPK_ROW_SUM, ARR(e[0]), 1, ARR(e[1]), 1, NULL, 0, NULL, 0, "%s gradient sum", nm);
            vt_prog_op(p, VT_OPK_ROW_DOT, ARR(e[0], xh), 2, ARR(e[2]), 1, NULL, 0, NULL, 0, "%s gradient dot normalised",
                       nm);
            vt_prog_op(p, VT_OPK_LN_BACKWARD, ARR(e[0], xh, s2, e[1], e[2]), 5, ARR(b->pdx[l]), 1, NULL, 0, &eps, 1,
                       "%s backward", nm);
        }
    } else if (ly->op == VT_GL_EMBED) { /* the GPT's: the positions' gradient, the tokens' by a one-hot GEMM */
        const int64_t T = ly->attr[0], Vv = ly->attr[1], C = ly->attr[2];
        const uint32_t wte = b->pt[ly->param[0]], wpe = b->pt[ly->param[1]];
        if (b->GP[wpe] != NONE) {
            vt_prog_op(p, VT_OPK_POS_GRAD, ARR(dy), 1, ARR(ptarget(b, wpe)), 1, IARG(b->B, T), 2, NULL, 0,
                       "%s position embedding gradient", nm);
            pdone(b, wpe);
        }
        if (b->GP[wte] != NONE) {
            vt_prog_op(p, VT_OPK_ONEHOT, ARR(x), 1, ARR(e[0]), 1, IARG(Vv), 1, NULL, 0, "%s tokens one-hot", nm);
            vt_prog_op(p, VT_OPK_MATMUL, ARR(e[0], dy), 2, ARR(ptarget(b, wte)), 1, IARG(1, 0, Vv, C, (int64_t)b->B * T),
                       5, NULL, 0, "%s token embedding weight-gradient GEMM", nm);
            pdone(b, wte);
        }
    } else if (dx) { /* attention, the GPT's: e = doh, dp, dv, sdot, ds, dq, dk */
        const int64_t *a = ly->attr;
        const int64_t T = a[0], H = a[1], D = a[2], G = (int64_t)b->B * H;
        const vt_opdesc hs = p->op[j0]; /* heads_split (qkv -> q, k, v) */
        const uint32_t q = hs.out[0], k = hs.out[1], v = hs.out[2], pr = p->op[j0 + 2].out[0];
        const double sc = vt_graph_f64(a[4]);
        vt_prog_op(p, VT_OPK_HEADS_UNMERGE, ARR(dy), 1, ARR(e[0]), 1, IARG(b->B, T, H, D), 4, NULL, 0,
                   "%s split the gradient into heads", nm);
        vt_prog_op(p, VT_OPK_BMM, ARR(e[0], v), 2, ARR(e[1]), 1, IARG(G, T, T, D, 0, 1), 6, NULL, 0,
                   "%s probabilities gradient", nm);
        vt_prog_op(p, VT_OPK_BMM, ARR(pr, e[0]), 2, ARR(e[2]), 1, IARG(G, T, D, T, 1, 0), 6, NULL, 0, "%s v gradient", nm);
        vt_prog_op(p, VT_OPK_ROW_DOT, ARR(pr, e[1]), 2, ARR(e[3]), 1, NULL, 0, NULL, 0, "%s probabilities dot gradient",
                   nm);
        vt_prog_op(p, VT_OPK_SOFTMAX_BWD, ARR(pr, e[1], e[3]), 3, ARR(e[4]), 1, IARG(T), 1, &sc, 1, "%s softmax backward",
                   nm);
        vt_prog_op(p, VT_OPK_BMM, ARR(e[4], k), 2, ARR(e[5]), 1, IARG(G, T, D, T, 0, 0), 6, NULL, 0, "%s q gradient", nm);
        vt_prog_op(p, VT_OPK_BMM, ARR(e[4], q), 2, ARR(e[6]), 1, IARG(G, T, D, T, 1, 0), 6, NULL, 0, "%s k gradient", nm);
        vt_prog_op(p, VT_OPK_HEADS_JOIN, ARR(e[5], e[6], e[2]), 3, ARR(b->pdx[l]), 1, IARG(b->B, T, H, D), 4, NULL, 0,
                   "%s join the heads' gradients", nm);
    }
    if (dx && b->readers[x] > 1 && ++b->met[x] == b->readers[x]) emit_sums(b, x);
}

/* the backward facet of operation j's input i, asked or applied */
static vt_grad_rule rule(bld *b, uint32_t j, uint32_t i, uint32_t dx)
{
    const vt_opdesc *o = &b->p->op[j];
    const vt_opkind *k = vt_opkind_get(o->kind);
    uint32_t dy[VT_MAX_OP_OUTPUTS];
    for (uint32_t q = 0; q < o->n_out; q++) dy[q] = o->out[q] < b->nt ? b->G[o->out[q]] : NONE;
    return k->grad(b->p, o, i, dy, dx, b->g->layer[b->lay[j]].name);
}

/* which tensors need a gradient (a trainable parameter, or computed from one through inputs that
 * take a gradient), how many operations' backward reaches each, and that every such kind has a rule */
static vt_err analyse(bld *b, uint32_t first, uint32_t last)
{
    vt_program *p = b->p;
    for (uint32_t j = first; j <= last; j++) {
        const vt_opdesc *o = &p->op[j];
        if (is_pat(b, j)) {
            if (j == b->lop0[b->lay[j]]) VT_FORWARD_IF_ERROR(pat_analyse(b, b->lay[j]));
            continue;
        }
        VT_RETURN_ERROR_IF(o->n_in > MAX_IN, VT_ERR_INTERNAL, "graph: operation %s has %u inputs", o->name, o->n_in);
        for (uint32_t i = 0; i < o->n_in; i++) {
            uint32_t t = o->in[i];
            if (!b->need[t]) continue;
            vt_grad_rule r = rule(b, j, i, VT_GRAD_QUERY);
            VT_RETURN_ERROR_IF(r == VT_GRAD_NOT || r == VT_GRAD_FUSED, VT_ERR_ARG,
                               "graph: layer %s: the gradient cannot flow through its %s operation to input %u "
                               "(%s): not supported here",
                               b->g->layer[b->lay[j]].name, vt_opkind_get(o->kind)->name, i, tname(b, t));
            if (r == VT_GRAD_NONE) continue;
            for (uint32_t q = 0; q < o->n_out; q++) b->need[o->out[q]] = 1;
            b->readers[t]++; /* a parameter's readers too: tied weights' gradients are summed */
        }
    }
    return VT_OK;
}

/* pass A: the activations' gradient tensors in the order the backward walk meets them */
static void plan(bld *b)
{
    vt_program *p = b->p;
    for (uint32_t l = b->g->n_layer; l-- > 0;)
        for (uint32_t j = b->lop1[l]; j-- > b->lop0[l];) {
            const vt_opdesc *o = &p->op[j];
            if (is_pat(b, j)) {
                if (j == b->lop0[l]) pat_plan(b, l);
                continue;
            }
            if (b->G[o->out[0]] == NONE) continue;
            for (uint32_t i = 0; i < o->n_in; i++) {
                uint32_t t = o->in[i];
                if (!b->need[t] || b->is_param[t]) continue;
                vt_grad_rule r = rule(b, j, i, VT_GRAD_QUERY);
                if (r == VT_GRAD_NONE) continue;
                const uint32_t c = contrib(b, t, r == VT_GRAD_ALIAS, b->G[o->out[0]]);
                b->tgt[j * MAX_IN + i] = r == VT_GRAD_ALIAS ? NONE : c;
            }
        }
}

/* operation j of layer l prepares a parameter: every input a parameter or such an operation's output
 * (a convolution's weight permuted to the GEMM's layout) */
static int prep_op(const bld *b, uint32_t l, uint32_t j)
{
    const vt_opdesc *o = &b->p->op[j];
    for (uint32_t i = 0; i < o->n_in; i++) {
        const uint32_t t = o->in[i];
        if (t < b->nt && b->is_param[t]) continue;
        uint32_t q = j;
        while (q-- > b->lop0[l] && b->p->op[q].out[0] != t) {}
        if (q + 1 <= b->lop0[l] || q >= j || !prep_op(b, l, q)) return 0;
    }
    return 1;
}

/* pass C: the backward operations */
static void emit(bld *b)
{
    vt_program *p = b->p;
    for (uint32_t l = b->g->n_layer; l-- > 0;) {
        if (pat_op(b->g->layer[l].op)) {
            pat_emit(b, l);
            continue;
        }
        for (uint32_t j = b->lop0[l]; j < b->lop1[l]; j++) /* the parameters' gradients, forward order */
            for (uint32_t i = 0; i < p->op[j].n_in && !prep_op(b, l, j); i++) {
                uint32_t t = p->op[j].in[i];
                if (b->G[p->op[j].out[0]] != NONE && b->GP[t] != NONE) rule(b, j, i, ptarget(b, t)), pdone(b, t);
            }
        for (uint32_t j = b->lop1[l]; j-- > b->lop0[l];) /* the other inputs', reverse order */
            for (uint32_t i = 0; i < p->op[j].n_in; i++) {
                uint32_t t = p->op[j].in[i];
                if (b->G[p->op[j].out[0]] == NONE || !b->need[t] || b->is_param[t]) continue;
                if (b->tgt[j * MAX_IN + i] != NONE) rule(b, j, i, b->tgt[j * MAX_IN + i]);
                if (b->readers[t] > 1 && ++b->met[t] == b->readers[t]) emit_sums(b, t); /* the walk's last reader */
            }
        for (uint32_t j = b->lop1[l]; j-- > b->lop0[l];) /* then the prepared parameters', reverse order */
            for (uint32_t i = 0; i < p->op[j].n_in && prep_op(b, l, j); i++) {
                uint32_t t = p->op[j].in[i];
                if (b->G[p->op[j].out[0]] != NONE && b->GP[t] != NONE) rule(b, j, i, ptarget(b, t)), pdone(b, t);
            }
    }
}

/* every layer's value is read by a later layer or is the output, every parameter is read by a layer: a dead
 * part would leave gradients no operation writes */
static vt_err live_check(const vt_graph *g)
{
    for (uint32_t l = 0; l < g->n_layer; l++) {
        int read = l + 1 == g->out;
        for (uint32_t k = l + 1; k < g->n_layer && !read; k++)
            for (uint32_t i = 0; i < g->layer[k].n_in && i < 2; i++) read |= g->layer[k].in[i] == l + 1;
        VT_RETURN_ERROR_IF(!read, VT_ERR_ARG,
                           "graph: layer %s: nothing reads its output (a dead branch of the model: remove it)",
                           g->layer[l].name);
    }
    for (uint32_t i = 0; i < g->n_param; i++) {
        int read = 0;
        for (uint32_t l = 0; l < g->n_layer && !read; l++)
            for (uint32_t k = 0; k < g->layer[l].n_param && k < 4; k++) read |= g->layer[l].param[k] == i;
        VT_RETURN_ERROR_IF(!read, VT_ERR_ARG, "graph: parameter %s is read by no layer", g->param[i].name);
    }
    return VT_OK;
}

/* every buffer is read by one layer, a batch norm, as its running mean or variance; a batch norm's weight
 * and bias are no buffers (the layer checks its own) */
static vt_err buffers_check(const vt_graph *g)
{
    for (uint32_t i = 0; i < g->n_param; i++) {
        uint32_t readers = 0, as_stat = 0;
        for (uint32_t l = 0; l < g->n_layer; l++)
            for (uint32_t k = 0; k < g->layer[l].n_param && k < 4; k++)
                if (g->layer[l].param[k] == i)
                    readers++, as_stat += g->layer[l].op == VT_GL_BATCHNORM && k >= 2;
        VT_RETURN_ERROR_IF(g->param[i].buffer ? readers != 1 || as_stat != 1 : as_stat != 0, VT_ERR_ARG,
                           "graph: %s: a buffer must be one batch norm's running statistic, and a running statistic "
                           "a buffer",
                           g->param[i].name);
    }
    return VT_OK;
}

/* the evaluation pass of a graph with batch norms or dropout: the forward operations first .. last again, each
 * batch norm's five as one batchnorm_eval on its running statistics (its output the step's tensor), each dropout
 * left out (its readers read its input); none for other graphs (evaluation runs the forward pass) */
static void eval_pass(bld *b, uint32_t first, uint32_t last)
{
    vt_program *p = b->p;
    uint32_t l = 0;
    while (l < b->g->n_layer && b->g->layer[l].op != VT_GL_BATCHNORM && b->g->layer[l].op != VT_GL_DROPOUT) l++;
    if (l == b->g->n_layer) return;
    uint32_t *alias = malloc(b->nt * sizeof *alias); /* a dropout's output -> what evaluation reads instead */
    if (!alias) {
        p->bad = 1;
        return;
    }
    for (uint32_t t = 0; t < b->nt; t++) alias[t] = t;
    vt_prog_eval_begin(p);
    for (uint32_t j = first; j <= last && !p->bad; j++) {
        const vt_opdesc *o = &p->op[j];
        const vt_glayer_op lop = j <= b->nfwd_end ? b->g->layer[b->lay[j]].op : (vt_glayer_op)0;
        const int bn = lop == VT_GL_BATCHNORM;
        if (lop == VT_GL_DROPOUT) { /* left out: its readers read its input */
            alias[o->out[0]] = alias[o->in[0]];
            continue;
        }
        uint32_t in[MAX_IN], out[VT_MAX_OP_OUTPUTS];
        int64_t ia[16];
        double fa[16];
        char nm[256];
        if (o->n_in > MAX_IN || o->n_out > VT_MAX_OP_OUTPUTS || o->n_iarg > 16 || o->n_farg > 16) {
            p->bad = 1;
            break;
        }
        /* copies: the tables may move while the operation is added */
        memcpy(in, o->in, o->n_in * sizeof *in), memcpy(out, o->out, o->n_out * sizeof *out);
        for (uint32_t i = 0; i < o->n_in; i++) in[i] = in[i] < b->nt ? alias[in[i]] : in[i];
        if (o->n_iarg) memcpy(ia, o->iarg, o->n_iarg * sizeof *ia);
        if (o->n_farg) memcpy(fa, o->farg, o->n_farg * sizeof *fa);
        snprintf(nm, sizeof nm, "%s", o->name);
        const uint16_t kind = o->kind;
        const uint32_t n_in = o->n_in, n_out = o->n_out, n_ia = o->n_iarg, n_fa = o->n_farg;
        if (bn && j == b->lop0[b->lay[j]] + 3) { /* apply (xc, s2, gamma, beta -> y); running (s1, s2, rm, rv) */
            const uint32_t x = p->op[j - 3].in[0], rm = p->op[j + 1].in[2], rv = p->op[j + 1].in[3];
            vt_prog_op(p, VT_OPK_BN_EVAL, ARR(x, rm, rv, in[2], in[3]), 5, out, 1, NULL, 0, fa, 1,
                       "%s (running statistics)", b->g->layer[b->lay[j]].name);
        } else if (!bn)
            vt_prog_op(p, kind, in, n_in, out, n_out, ia, n_ia, fa, n_fa, "%s", nm);
    }
    vt_prog_eval_end(p);
    free(alias);
}

vt_err vt_graph_build(const vt_graph *g, const vt_recipe *rcp, vt_program *p)
{
    VT_RETURN_ERROR_IF(g->n_layer == 0 || g->out > g->n_layer || g->loss < VT_GLOSS_XENT || g->loss > VT_GLOSS_NEXT,
                       VT_ERR_ARG,
                       "graph: no layers, no output or an unknown loss");
    bld b = {.g = g, .rcp = rcp, .p = p, .B = rcp->batch};
    vt_err e = VT_OK;
    const uint32_t nP = g->n_param, nL = g->n_layer;
    uint8_t *DEC = calloc(nP + 1, 1); /* trainable parameter -> AdamW decays it */
    uint32_t *GPl = NULL, *P = calloc(nP + 1, sizeof *P), *M1 = calloc(nP + 1, sizeof *M1), *M2 = calloc(nP + 1, sizeof *M2);
    b.pt = calloc(nP + 1, sizeof *b.pt);
    b.V = calloc(nL + 1, sizeof *b.V), b.Vcols = calloc(nL + 1, sizeof *b.Vcols), b.Vl = calloc(nL + 1, sizeof *b.Vl);
    b.lop0 = calloc(nL, sizeof *b.lop0), b.lop1 = calloc(nL, sizeof *b.lop1);
    FAIL_IF(!DEC || !P || !M1 || !M2 || !b.pt || !b.V || !b.Vcols || !b.Vl || !b.lop0 || !b.lop1, VT_ERR_NOMEM,
            "graph: out of memory");
    /* the state: the parameters, then the trainable ones' optimiser tensors, then the buffers */
    uint32_t nT = 0;
    if ((e = buffers_check(g)) || (e = live_check(g))) goto done;
    for (int buf = 0; buf < 2; buf++) {
        if (buf) vt_arch_opt_tensors(p, rcp, nT, P, M1, M2);
        for (uint32_t i = 0; i < nP; i++) {
            const vt_gparam *q = &g->param[i];
            if (q->buffer != buf) continue;
            b.pt[i] = vt_prog_tensor(p, buf ? VT_TC_BUFFER : VT_TC_PARAM, VT_DT_F32, q->rank, q->shape, "%s", q->name);
            if (q->init == VT_INIT_HE_UNIFORM) vt_prog_init_he(p, b.pt[i], q->fan_in);
            else if (q->init == VT_INIT_ONE) vt_prog_init_one(p, b.pt[i]);
            if (!q->frozen && !buf) DEC[nT] = !q->no_decay, P[nT++] = b.pt[i];
        }
    }
    if (p->bad) goto finish;
    uint32_t x, y, xa, tstep, lr;
    const int next = g->loss == VT_GLOSS_NEXT; /* a language model: windows of a text's tokens */
    const uint32_t T = g->in_cols;
    uint32_t d, V; /* the built-in GPT's graph: its recipe's context and vocabulary */
    vt_recipe_io_widths(rcp, &d, &V);
    FAIL_IF(g->in_cols != d, VT_ERR_ARG, "graph: the input has %u values, the data %u", g->in_cols, d);
    if (next) { /* the GPT's inputs: T tokens per example, the next token of each as its target */
        x = xa = vt_prog_tensor(p, VT_TC_INPUT, VT_DT_U8, 2, ARR(b.B, T), "tokens");
        y = vt_prog_tensor(p, VT_TC_INPUT, VT_DT_U8, 1, ARR(b.B * T), "targets");
        tstep = vt_prog_tensor(p, VT_TC_INPUT, VT_DT_F64, 0, NULL, "step");
        lr = vt_prog_tensor(p, VT_TC_INPUT, VT_DT_F64, 0, NULL, "lr");
        vt_prog_op(p, VT_OPK_LOAD_WINDOWS, NULL, 0, ARR(x, y), 2, IARG(b.B, T, (int64_t)rcp->seed, V), 4, NULL, 0,
                   "load windows");
        vt_arch_schedule_op(p, rcp, tstep, lr);
    } else {
        vt_arch_inputs(p, rcp, &x, &y, &xa, &tstep, &lr);
        vt_arch_input_ops(p, rcp, x, y, xa, tstep, lr);
    }
    b.V[0] = xa, b.Vcols[0] = g->in_cols, b.next = next;
    p->fwd_first = p->n_ops + 1;
    if ((e = lower(&b))) goto done;
    const uint32_t logits = b.V[g->out], C = next ? V : b.Vcols[g->out], R = next ? b.B * T : b.B;
    FAIL_IF(b.Vcols[g->out] != (next ? T * V : V) || (next && !b.Vl[g->out].seq), VT_ERR_ARG,
            "graph: the output has %u values per example, the recipe %u classes%s", b.Vcols[g->out], V,
            next ? " at each of its positions" : "");
    /* the loss: softmax cross-entropy (its softmax in the forward pass, "probs"), or a regression or
     * multi-label loss on the output itself */
    const int xent = g->loss == VT_GLOSS_XENT || next; /* the next token's cross-entropy at every position */
    const unsigned li = next ? 0 : (unsigned)g->loss - 1;
    static const uint16_t LOSS_K[] = {VT_OPK_XENT_LOSS, VT_OPK_MSE_LOSS, VT_OPK_L1_LOSS, VT_OPK_BCE_LOSS},
                          LOSS_G[] = {VT_OPK_XENT_BWD, VT_OPK_MSE_BWD, VT_OPK_L1_BWD, VT_OPK_BCE_BWD};
    static const char *const LOSS_N[] = {"cross-entropy loss", "mean squared error", "mean absolute error",
                                         "binary cross-entropy with logits"};
    uint32_t probs = xent ? vt_prog_tensor(p, VT_TC_ACT, VT_DT_F32, 2, ARR(R, C), "probs") : logits;
    uint32_t loss = vt_prog_tensor(p, VT_TC_ACT, VT_DT_F32, 0, NULL, "loss");
    const uint32_t fwd_end = b.nfwd_end = p->n_ops; /* the layers' last operation */
    if (xent) vt_prog_op(p, VT_OPK_SOFTMAX, ARR(logits), 1, ARR(probs), 1, NULL, 0, NULL, 0, "softmax");
    p->fwd_last = p->n_ops;
    if (p->bad) goto finish;

    /* the derivation's tables over the forward pass's tensors and operations */
    b.nt = p->n_tensors;
    const uint32_t nt = b.nt, nops = p->n_ops + 1;
    b.need = calloc(nt, 1), b.is_param = calloc(nt, 1);
    b.G = malloc(nt * sizeof *b.G), b.GP = malloc(nt * sizeof *b.GP), b.first_c = malloc(nt * sizeof *b.first_c);
    b.readers = calloc(nt, sizeof *b.readers), b.met = calloc(nt, sizeof *b.met), b.sums = calloc(nt, sizeof *b.sums);
    b.lay = calloc(nops, sizeof *b.lay), b.tgt = malloc((size_t)nops * MAX_IN * sizeof *b.tgt);
    b.px = malloc((size_t)nL * PX * sizeof *b.px), b.pdx = malloc(nL * sizeof *b.pdx);
    b.cs = malloc((size_t)nops * MAX_IN * sizeof *b.cs), b.cs_next = malloc((size_t)nops * MAX_IN * sizeof *b.cs_next);
    FAIL_IF(!b.need || !b.is_param || !b.G || !b.GP || !b.first_c || !b.readers || !b.met || !b.sums || !b.lay ||
                !b.tgt || !b.cs || !b.cs_next || !b.px || !b.pdx,
            VT_ERR_NOMEM, "graph: out of memory");
    for (uint32_t t = 0; t < nt; t++) b.G[t] = b.GP[t] = b.first_c[t] = NONE;
    for (uint32_t l = 0; l < nL; l++) b.pdx[l] = NONE;
    for (size_t q = 0; q < (size_t)nL * PX; q++) b.px[q] = NONE;
    for (size_t q = 0; q < (size_t)nops * MAX_IN; q++) b.tgt[q] = NONE;
    for (uint32_t l = 0; l < nL; l++)
        for (uint32_t j = b.lop0[l]; j < b.lop1[l]; j++) b.lay[j] = l;
    for (uint32_t i = 0; i < nP; i++) b.is_param[b.pt[i]] = 1, b.need[b.pt[i]] = !g->param[i].frozen && !g->param[i].buffer;
    if ((e = analyse(&b, p->fwd_first, fwd_end))) goto done;
    FAIL_IF(!b.need[logits], VT_ERR_ARG, "graph: the output does not depend on a trainable parameter");
    for (uint32_t j = p->fwd_first; j <= fwd_end; j++)
        for (uint32_t i = 0; i < p->op[j].n_in; i++)
            FAIL_IF(p->op[j].in[i] == logits && j != fwd_end + 1, VT_ERR_ARG,
                               "graph: the output %s is also read by a layer (not supported yet)", tname(&b, logits));

    /* the gradient tensors: the output's, the activations' in walk order, the parameters' */
    b.G[logits] = grad_like(&b, logits, ".grad", 0);
    plan(&b);
    GPl = calloc(nT + 1, sizeof *GPl);
    FAIL_IF(!GPl, VT_ERR_NOMEM, "graph: out of memory");
    for (uint32_t i = 0; i < nT; i++) GPl[i] = b.GP[P[i]] = grad_like(&b, P[i], ".grad", 0);
    for (uint32_t i = 0; i < nT; i++) /* tied weights: a gradient per reader, summed */
        if (b.readers[P[i]] > 1) param_contribs(&b, P[i]);
    if (p->bad) goto finish;
    /* the operations: loss, backward, updates */
    vt_prog_op(p, LOSS_K[li], ARR(probs, y), 2, ARR(loss), 1, NULL, 0, NULL, 0, "%s", LOSS_N[li]);
    vt_prog_op(p, LOSS_G[li], ARR(probs, y), 2, ARR(b.G[logits]), 1, NULL, 0, NULL, 0, "%s", xent ? "logits gradient" : "output gradient");
    memset(b.met, 0, nt * sizeof *b.met);
    emit(&b);
    vt_arch_update_ops(p, rcp, nT, P, GPl, M1, M2, DEC, tstep, lr);
    eval_pass(&b, p->fwd_first, p->fwd_last);
    p->loss = loss, p->input = xa, p->labels = y, p->probs = probs; /* evaluation fills xa: no augmentation */
finish:
    e = vt_program_finish(p);
done:
    free(DEC), free(GPl), free(P), free(M1), free(M2), free(b.pt), free(b.V), free(b.Vcols), free(b.Vl), free(b.lop0);
    free(b.lop1);
    free(b.need), free(b.is_param), free(b.G), free(b.GP), free(b.first_c), free(b.readers), free(b.met);
    free(b.sums), free(b.lay), free(b.tgt), free(b.cs), free(b.cs_next), free(b.px), free(b.pdx);
    return e;
}

/* ------------------------------------------------------------ the canonical form */

#define GRAPH_MAGIC "VTGR"
#define GRAPH_VERSION 3u /* 3: batch norm, its buffers (the flag byte's bit 1); 2: eight attributes per layer, the
                          * convolutional layers; 1: four */

/* the version a graph is written in: 1 (four attributes) when every layer is one version 1 knew */
static uint32_t graph_version(const vt_graph *g)
{
    if (g->loss == VT_GLOSS_NEXT) return 3;
    for (uint32_t i = 0; i < g->n_param; i++)
        if (g->param[i].buffer) return 3;
    for (uint32_t l = 0; l < g->n_layer; l++)
        if (g->layer[l].op > VT_GL_TO_NHWC || ((g->layer[l].op == VT_GL_LINEAR || g->layer[l].op == VT_GL_RESHAPE) &&
                                               g->layer[l].attr[g->layer[l].op == VT_GL_LINEAR])) return 3;
    for (uint32_t l = 0; l < g->n_layer; l++) {
        if (g->layer[l].op > VT_GL_LEAKY_RELU) return 2;
        for (int i = 4; i < VT_GLAYER_ATTRS; i++)
            if (g->layer[l].attr[i]) return 2;
    }
    return 1;
}

vt_err vt_graph_encode(const vt_graph *g, vt_buf *out)
{
    vt_buf_init(out);
    vt_err e = vt_buf_append(out, GRAPH_MAGIC, 4);
    const uint32_t ver = graph_version(g), n_attr = ver == 1 ? 4 : VT_GLAYER_ATTRS;
    const uint32_t head[] = {ver, g->n_param, g->n_layer, g->in_cols, g->out, (uint32_t)g->loss};
    for (size_t i = 0; !e && i < sizeof head / sizeof head[0]; i++) e = vt_buf_u32le(out, head[i]);
    for (uint32_t i = 0; !e && i < g->n_param; i++) {
        const vt_gparam *q = &g->param[i];
        size_t n = strlen(q->name);
        e = vt_buf_u16le(out, (uint16_t)n);
        if (!e) e = vt_buf_append(out, q->name, n);
        if (!e) e = vt_buf_u8(out, (uint8_t)q->rank);
        for (uint32_t d = 0; !e && d < q->rank; d++) e = vt_buf_u32le(out, q->shape[d]);
        if (!e) e = vt_buf_u8(out, (uint8_t)((q->frozen ? 1 : 0) | (q->buffer ? 2 : 0)));
        if (!e) e = vt_buf_u8(out, (uint8_t)q->init);
        if (!e) e = vt_buf_u32le(out, q->fan_in);
    }
    for (uint32_t l = 0; !e && l < g->n_layer; l++) {
        const vt_glayer *y = &g->layer[l];
        size_t n = strlen(y->name);
        e = vt_buf_u8(out, (uint8_t)y->op);
        if (!e) e = vt_buf_u16le(out, (uint16_t)n);
        if (!e) e = vt_buf_append(out, y->name, n);
        if (!e) e = vt_buf_u8(out, (uint8_t)y->n_in);
        for (uint32_t i = 0; !e && i < y->n_in; i++) e = vt_buf_u32le(out, y->in[i]);
        if (!e) e = vt_buf_u8(out, (uint8_t)y->n_param);
        for (uint32_t i = 0; !e && i < y->n_param; i++) e = vt_buf_u32le(out, y->param[i]);
        for (uint32_t i = 0; !e && i < n_attr; i++) e = vt_buf_u64le(out, (uint64_t)y->attr[i]);
        if (!e) e = vt_buf_u32le(out, y->cols);
    }
    if (e) vt_buf_free(out);
    return e;
}

/* a name of the canonical form: 1 .. VT_GRAPH_NAME_MAX - 1 printable bytes */
static vt_err read_name(vt_reader *r, char *dst, const char *what)
{
    uint16_t n;
    VT_FORWARD_IF_ERROR(vt_read_u16le(r, &n, what));
    VT_RETURN_ERROR_IF(n == 0 || n >= VT_GRAPH_NAME_MAX, VT_ERR_FORMAT, "model graph: %s of %u bytes (1..%d)", what,
                       n, VT_GRAPH_NAME_MAX - 1);
    VT_FORWARD_IF_ERROR(vt_read_bytes(r, dst, n, what));
    dst[n] = 0;
    for (uint16_t i = 0; i < n; i++)
        VT_RETURN_ERROR_IF((unsigned char)dst[i] < 0x20 || dst[i] == 0x7f, VT_ERR_FORMAT,
                           "model graph: %s holds a control byte", what);
    return VT_OK;
}

static vt_err decode(vt_reader *r, vt_graph *g)
{
    char magic[4];
    uint32_t head[6];
    VT_FORWARD_IF_ERROR(vt_read_bytes(r, magic, 4, "magic"));
    VT_RETURN_ERROR_IF(memcmp(magic, GRAPH_MAGIC, 4) != 0, VT_ERR_FORMAT, "model graph: not a graph (magic)");
    for (int i = 0; i < 6; i++) VT_FORWARD_IF_ERROR(vt_read_u32le(r, &head[i], "header"));
    VT_RETURN_ERROR_IF(head[0] < 1 || head[0] > GRAPH_VERSION, VT_ERR_FORMAT,
                       "model graph: version %u (this build reads 1 to %u)", head[0], GRAPH_VERSION);
    const uint32_t n_attr = head[0] == 1 ? 4 : VT_GLAYER_ATTRS;
    const uint8_t last_op = head[0] == 1 ? VT_GL_LEAKY_RELU : head[0] == 2 ? VT_GL_TO_NHWC : VT_GL_LAST;
    /* every parameter and layer takes at least 12 bytes: counts beyond the bytes left are refused first */
    VT_RETURN_ERROR_IF(head[1] > vt_reader_left(r) / 12 || head[2] > vt_reader_left(r) / 12 || head[2] == 0,
                       VT_ERR_FORMAT, "model graph: %u parameters and %u layers in %zu bytes", head[1], head[2],
                       vt_reader_left(r));
    g->param = calloc(head[1] + 1, sizeof *g->param), g->layer = calloc(head[2], sizeof *g->layer);
    VT_RETURN_ERROR_IF(!g->param || !g->layer, VT_ERR_NOMEM, "model graph: out of memory");
    g->in_cols = head[3], g->out = head[4], g->loss = (vt_gloss)head[5];
    for (uint32_t i = 0; i < head[1]; i++, g->n_param++) {
        vt_gparam *q = &g->param[i];
        uint8_t rank, fr, in;
        VT_FORWARD_IF_ERROR(read_name(r, q->name, "a parameter's name"));
        VT_FORWARD_IF_ERROR(vt_read_u8(r, &rank, "rank"));
        VT_RETURN_ERROR_IF(rank < 1 || rank > VT_MAX_RANK, VT_ERR_FORMAT, "model graph: %s has rank %u", q->name, rank);
        q->rank = rank;
        size_t n = 1;
        for (uint32_t d = 0; d < rank; d++) {
            VT_FORWARD_IF_ERROR(vt_read_u32le(r, &q->shape[d], "shape"));
            VT_RETURN_ERROR_IF(q->shape[d] == 0 || q->shape[d] > (1u << 30) || n > ((size_t)1 << 40) / q->shape[d],
                               VT_ERR_FORMAT, "model graph: %s has a bad shape", q->name);
            n *= q->shape[d];
        }
        VT_FORWARD_IF_ERROR(vt_read_u8(r, &fr, "frozen"));
        VT_FORWARD_IF_ERROR(vt_read_u8(r, &in, "init"));
        VT_FORWARD_IF_ERROR(vt_read_u32le(r, &q->fan_in, "fan_in"));
        VT_RETURN_ERROR_IF(fr > (head[0] >= 3 ? 2 : 1) || (in != VT_INIT_ZERO && in != VT_INIT_HE_UNIFORM && in != VT_INIT_ONE) ||
                               (in == VT_INIT_HE_UNIFORM && q->fan_in == 0),
                           VT_ERR_FORMAT, "model graph: %s has a bad flag or initialisation", q->name);
        q->frozen = fr & 1, q->buffer = fr >> 1, q->init = (vt_tinit)in;
        for (uint32_t j = 0; j < i; j++)
            VT_RETURN_ERROR_IF(strcmp(g->param[j].name, q->name) == 0, VT_ERR_FORMAT, "model graph: %s twice", q->name);
    }
    for (uint32_t l = 0; l < head[2]; l++, g->n_layer++) {
        vt_glayer *y = &g->layer[l];
        uint8_t op, n;
        VT_FORWARD_IF_ERROR(vt_read_u8(r, &op, "operation"));
        VT_FORWARD_IF_ERROR(read_name(r, y->name, "a layer's name"));
        VT_RETURN_ERROR_IF(op < VT_GL_LINEAR || op > last_op, VT_ERR_FORMAT, "model graph: layer %s: operation %u",
                           y->name, op);
        y->op = (vt_glayer_op)op;
        VT_FORWARD_IF_ERROR(vt_read_u8(r, &n, "inputs"));
        VT_RETURN_ERROR_IF(n < 1 || n > 2, VT_ERR_FORMAT, "model graph: layer %s reads %u values", y->name, n);
        y->n_in = n;
        for (uint32_t i = 0; i < n; i++) {
            VT_FORWARD_IF_ERROR(vt_read_u32le(r, &y->in[i], "input"));
            VT_RETURN_ERROR_IF(y->in[i] > l, VT_ERR_FORMAT, "model graph: layer %s reads a later value", y->name);
        }
        VT_FORWARD_IF_ERROR(vt_read_u8(r, &n, "parameters"));
        VT_RETURN_ERROR_IF(n > 4, VT_ERR_FORMAT, "model graph: layer %s reads %u parameters", y->name, n);
        y->n_param = n;
        for (uint32_t i = 0; i < n; i++) {
            VT_FORWARD_IF_ERROR(vt_read_u32le(r, &y->param[i], "parameter"));
            VT_RETURN_ERROR_IF(y->param[i] >= g->n_param, VT_ERR_FORMAT, "model graph: layer %s reads no parameter",
                               y->name);
        }
        for (uint32_t i = 0; i < n_attr; i++) {
            uint64_t a;
            VT_FORWARD_IF_ERROR(vt_read_u64le(r, &a, "attribute"));
            y->attr[i] = (int64_t)a;
        }
        if (y->op == VT_GL_SIGMOID || y->op == VT_GL_TANH || y->op == VT_GL_LEAKY_RELU) {
            const double alpha = vt_graph_f64(y->attr[0]);
            VT_RETURN_ERROR_IF(y->n_in != 1 || y->n_param != 0 || y->attr[1] || y->attr[2] || y->attr[3] ||
                                   (y->op != VT_GL_LEAKY_RELU ? y->attr[0] != 0 : !vt_graph_alpha_ok(alpha)),
                               VT_ERR_FORMAT, "model graph: layer %s: bad inputs or attributes for its operation",
                               y->name);
        }
        VT_FORWARD_IF_ERROR(vt_read_u32le(r, &y->cols, "width"));
        VT_RETURN_ERROR_IF(y->cols == 0 || y->cols > (1u << 30), VT_ERR_FORMAT, "model graph: layer %s has width %u",
                           y->name, y->cols);
        uint32_t cols;
        VT_FORWARD_IF_ERROR(vt_graph_layer_check(y, &cols)); /* every attribute, against the width */
        const int wb = y->op == VT_GL_LINEAR || y->op == VT_GL_CONV; /* a weight and an optional bias */
        const uint32_t np = y->op == VT_GL_BATCHNORM                                 ? 4u
                            : y->op == VT_GL_LAYERNORM || y->op == VT_GL_EMBED       ? 2u
                            : y->op == VT_GL_POSITIONS                               ? 1u
                                                                                     : 0u;
        VT_RETURN_ERROR_IF((wb ? y->n_param < 1 || y->n_param > 2 : y->n_param != np) ||
                               y->n_in != (y->op == VT_GL_ADD ? 2u : 1u),
                           VT_ERR_FORMAT, "model graph: layer %s reads %u values and %u parameters", y->name, y->n_in,
                           y->n_param);
    }
    VT_RETURN_ERROR_IF(graph_version(g) > head[0], VT_ERR_FORMAT, "model graph: version %u holds a later version's layer",
                       head[0]);
    VT_RETURN_ERROR_IF(vt_reader_left(r) != 0, VT_ERR_FORMAT, "model graph: %zu bytes after the last layer",
                       vt_reader_left(r));
    VT_RETURN_ERROR_IF(g->out < 1 || g->out > g->n_layer || g->loss < VT_GLOSS_XENT || g->loss > VT_GLOSS_NEXT ||
                           g->in_cols == 0,
                       VT_ERR_FORMAT, "model graph: bad output, loss or input width");
    return VT_OK;
}

vt_err vt_graph_decode(const uint8_t *bytes, size_t len, vt_graph *g)
{
    vt_graph_init(g);
    vt_reader r;
    vt_reader_init(&r, bytes, len);
    vt_err e = decode(&r, g);
    if (e) vt_graph_free(g);
    return e;
}

vt_err vt_recipe_set_graph(vt_recipe *r, vt_graph *g, const uint8_t sha256[32])
{
    VT_RETURN_ERROR_IF(g->out < 1 || g->out > g->n_layer, VT_ERR_ARG, "model: the graph has no output");
    g->loss = (vt_gloss)(r->loss + 1); /* vt_loss_kind's order */
    int embed = 0; /* a language model: its input is tokens */
    for (uint32_t l = 0; l < g->n_layer; l++) embed |= g->layer[l].op == VT_GL_EMBED;
    VT_RETURN_ERROR_IF(embed != (r->loss == VT_LOSS_NEXT), VT_ERR_ARG,
                       embed ? "model: a language model (its input tokens, embedded) trains with loss = next_token"
                             : "model: loss = next_token is a language model's: the network's input must be tokens "
                               "(an nn.Embedding of them)");
    VT_RETURN_ERROR_IF(g->out_logsoftmax && r->loss != VT_LOSS_XENT, VT_ERR_ARG,
                       "model: the network ends in LogSoftmax, which only loss = cross_entropy takes (the negative "
                       "log-likelihood of its output); export the raw outputs for another loss");
    if (r->trainable[0]) /* every parameter frozen but the listed ones */
        for (uint32_t k = 0; k < g->n_param; k++) g->param[k].frozen = !g->param[k].buffer;
    for (const char *s = r->trainable[0] ? r->trainable : r->frozen; *s;) {
        const char *e = strchr(s, '\n');
        size_t n = e ? (size_t)(e - s) : strlen(s);
        uint32_t k = 0;
        while (k < g->n_param && !(strlen(g->param[k].name) == n && !memcmp(g->param[k].name, s, n))) k++;
        VT_RETURN_ERROR_IF(k == g->n_param || g->param[k].buffer, VT_ERR_ARG,
                           "recipe key %s: the model has no parameter named %.*s%s",
                           r->trainable[0] ? "trainable" : "frozen", (int)n, s,
                           k < g->n_param ? " (a buffer: batch norm's running statistics are never trained)" : "");
        g->param[k].frozen = !r->trainable[0];
        s += n + (e != NULL);
    }
    vt_buf b;
    VT_FORWARD_IF_ERROR(vt_graph_encode(g, &b));
    if (b.len > VT_MODEL_GRAPH_MAX) {
        size_t n = b.len;
        vt_buf_free(&b);
        VT_RETURN_ERROR(VT_ERR_LIMIT, "model: the graph's canonical form has %zu bytes (at most %u)", n,
                        VT_MODEL_GRAPH_MAX);
    }
    memcpy(r->model_graph, b.data, b.len);
    r->model_graph_len = (uint32_t)b.len;
    vt_buf_free(&b);
    r->has_model = 1;
    memcpy(r->model_sha256, sha256, 32);
    r->n_layers = 1, r->widths[0] = g->in_cols; /* a language model: its context, and the logits of each position */
    r->widths[1] = g->layer[g->out - 1].cols / (embed ? g->in_cols : 1);
    return VT_OK;
}
