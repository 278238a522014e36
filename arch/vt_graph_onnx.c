/* vt_graph_onnx.c - a folded ONNX graph (vt_onnx_graph.h) mapped to a forward graph (vt_graph.h):
 * docs/models.md "From ONNX to the forward graph". What is mapped: the one graph input (the batch,
 * [N, ...]: an example is its N-th slice, row-major), Gemm (alpha = beta = 1, transA 0, transB 0 or
 * 1: PyTorch's Linear), MatMul by an initializer (with the Add of an initializer bias that follows it
 * fused in), Add of two activations, Relu, Sigmoid, Tanh, LeakyRelu (alpha, default 0.01), Flatten and
 * Reshape that keep the batch dimension (the
 * same bytes: no operation; of a channels-last image, to_channels_first), Dropout (ratio 0 or in inference mode:
 * none; in training mode: the project's dropout), Conv
 * (square kernel, symmetric pads, equal strides, dilation 1, group 1), MaxPool (window = stride, no
 * pads), GlobalAveragePool and AveragePool over the whole image. Each value's layout is tracked: the
 * convolutional layers read and write channels-last values (docs/models.md "Layouts"), the first
 * convolution may read the channels-first batch itself; the initializers the layers read are the parameters,
 * by their own names, in the order the nodes first read them, their values the step-0 state. Any
 * other node is refused naming it, its operator and what is supported. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vt_graph.h"
#include "vt_onnx_graph.h"

#define NONE UINT32_MAX
#define SUPPORTED                                                                                                      \
    "Gemm (PyTorch's Linear), MatMul by a weight (with its bias Add), Add of two activations, Relu, Sigmoid, Tanh, "  \
    "LeakyRelu, Flatten and Reshape keeping the batch dimension, Dropout, Conv (2-D, square kernel, symmetric pads, equal "      \
    "strides, dilation 1, group 1), MaxPool (kernel = stride, no pads), GlobalAveragePool, AveragePool over the "    \
    "whole image, BatchNormalization in training mode (of [N, C] or an image); and these patterns (docs/models.md: "    \
    "a node that starts none of them exactly is refused here): LayerNormalization or its ReduceMean/Sub/Pow/"         \
    "ReduceMean/Add/Sqrt/Div/Mul/Add decomposition over the last axis, GELU's exact (Div/Erf/Add/Mul/Mul) and tanh "  \
    "forms, multi-head attention from a Split of q|k|v (Reshape, Transpose, MatMul, scale, an optional causal mask, " \
    "Softmax, MatMul, Transpose, Reshape), token and position embeddings (Gather, Gather, Add), a sequence plus a "   \
    "position parameter, the mean over a sequence's positions"

typedef struct {
    const vt_og_graph *og;
    vt_graph *g;
    uint32_t *val;   /* ONNX value -> the graph's value (NONE: not an activation) */
    uint32_t *cols;  /* ONNX value -> its width (the elements of one example) */
    uint32_t *par;   /* ONNX value -> the graph's parameter (NONE: not yet one) */
    uint8_t *done;   /* node -> consumed by an earlier node's mapping (a fused bias Add) */
    uint8_t *last;   /* ONNX value -> its graph value is channels-last (an example [h*w, c]), with hwc */
    uint32_t (*hwc)[3];
    float **vals;    /* parameter -> its values */
    int bad;
} mapper;

static int64_t example_elems(const vt_og_value *v)
{
    int64_t n = 1;
    for (uint32_t d = 1; d < v->rank; d++) n *= v->shape[d];
    return n;
}

/* the node's name as a layer name: "/fc1/Gemm" -> "fc1.Gemm" (a control byte -> '_': the canonical
 * form's names hold none) */
static void layer_name(const vt_og_node *n, char *out)
{
    const char *s = n->name;
    while (*s == '/') s++;
    snprintf(out, VT_GRAPH_NAME_MAX, "%s", *s ? s : n->op);
    for (char *c = out; *c; c++)
        if (*c == '/' || *c == ' ') *c = '.';
        else if ((unsigned char)*c < 0x20 || *c == 0x7f) *c = '_';
}

/* the parameter of initializer v (made at its first use, its values copied) */
static vt_err param_of(mapper *m, const vt_og_node *n, uint32_t v, uint32_t *out)
{
    const vt_og_value *x = &m->og->v[v];
    VT_RETURN_ERROR_IF(!x->is_init || x->dtype != VT_OG_F32, VT_ERR_ARG,
                       "model: node %s (%s): input %s is not a float32 initializer (a weight)", n->name, n->op, x->name);
    if (m->par[v] != NONE) return *out = m->par[v], VT_OK;
    for (const char *c = x->name; *c; c++)
        VT_RETURN_ERROR_IF((unsigned char)*c < 0x20 || *c == 0x7f, VT_ERR_ARG,
                           "model: weight name %s holds a control byte", x->name);
    VT_RETURN_ERROR_IF(x->rank < 1 || x->rank > VT_MAX_RANK, VT_ERR_ARG, "model: weight %s has rank %u (1..%d)",
                       x->name, x->rank, VT_MAX_RANK);
    uint32_t shape[VT_MAX_RANK];
    for (uint32_t d = 0; d < x->rank; d++) shape[d] = (uint32_t)x->shape[d];
    uint32_t k = vt_graph_param(m->g, x->name, x->rank, shape, VT_INIT_ZERO, 0, &m->bad);
    VT_RETURN_ERROR_IF(k == NONE, VT_ERR_ARG, "model: weight name %s is empty or longer than %d bytes", x->name,
                       VT_GRAPH_NAME_MAX - 1);
    float **q = realloc(m->vals, (k + 1) * sizeof *q);
    VT_RETURN_ERROR_IF(!q, VT_ERR_NOMEM, "model: out of memory");
    m->vals = q;
    q[k] = malloc(x->nbytes ? x->nbytes : 1);
    VT_RETURN_ERROR_IF(!q[k], VT_ERR_NOMEM, "model: out of memory");
    memcpy(q[k], x->data, x->nbytes);
    return *out = m->par[v] = k, VT_OK;
}

/* value v as an activation [N, cols] */
static vt_err act_of(mapper *m, const vt_og_node *n, uint32_t v, uint32_t *out)
{
    VT_RETURN_ERROR_IF(v == NONE || m->val[v] == NONE, VT_ERR_ARG,
                       "model: node %s (%s): input %s is not computed from the batch (a constant or a weight where "
                       "an activation is expected)",
                       n->name, n->op, v == NONE ? "(omitted)" : m->og->v[v].name);
    *out = m->val[v];
    return VT_OK;
}

/* the only later node reading value v, or NONE */
static uint32_t sole_reader(const vt_og_graph *og, uint32_t after, uint32_t v)
{
    uint32_t r = NONE;
    for (uint32_t j = after + 1; j < og->n_nodes; j++)
        for (uint32_t i = 0; i < og->node[j].n_in; i++)
            if (og->node[j].in[i] == v) {
                if (r != NONE && r != j) return NONE;
                r = j;
            }
    for (uint32_t i = 0; i < og->n_outputs; i++)
        if (og->outputs[i] == v) return NONE;
    return r;
}

/* a bias for width N: an initializer of N elements ([N] or [1, N]) */
static int is_bias(const vt_og_graph *og, uint32_t v, uint32_t N)
{
    const vt_og_value *x = &og->v[v];
    return x->is_init && x->dtype == VT_OG_F32 && x->nbytes == (size_t)N * sizeof(float) &&
           (x->rank == 1 || (x->rank == 2 && x->shape[0] == 1));
}

/* value v read by a node or a graph output */
static int value_used(const vt_og_graph *og, uint32_t v)
{
    for (uint32_t j = 0; j < og->n_nodes; j++)
        for (uint32_t i = 0; i < og->node[j].n_in; i++)
            if (og->node[j].in[i] == v) return 1;
    for (uint32_t i = 0; i < og->n_outputs; i++)
        if (og->outputs[i] == v) return 1;
    return 0;
}

/* a node's ints attribute `name` of n values, all equal to one another: its value in *out (dflt when
 * absent); -1 when not so */
static int equal_ints(const vt_og_node *n, const char *name, size_t cnt, int64_t dflt, int64_t *out)
{
    const vt_og_attr *a = vt_og_attr_get(n, name);
    *out = dflt;
    if (!a) return 0;
    if (a->type != VT_OGA_INTS || a->n != cnt) return -1;
    for (size_t i = 0; i < cnt; i++)
        if (a->ints[i] != a->ints[0]) return -1;
    *out = a->ints[0];
    return 0;
}

/* ONNX value v (an image [N, C, H, W]) as a channels-last graph value in *out: itself when it is one,
 * else a to_channels_last layer "NAME.to_channels_last" */
static vt_err last_of(mapper *m, const vt_og_node *n, const char *nm, uint32_t v, uint32_t *out)
{
    const vt_og_value *x = &m->og->v[v];
    uint32_t g;
    VT_FORWARD_IF_ERROR(act_of(m, n, v, &g));
    VT_RETURN_ERROR_IF(x->rank != 4, VT_ERR_ARG, "model: node %s (%s): its input %s is not an image [N, C, H, W]",
                       n->name, n->op, x->name);
    if (m->last[v] == 1) return *out = g, VT_OK;
    char nm2[VT_GRAPH_NAME_MAX + 32];
    snprintf(nm2, sizeof nm2, "%s.to_channels_last", nm);
    const int64_t at[VT_GLAYER_ATTRS] = {x->shape[2], x->shape[3], x->shape[1]};
    *out = vt_graph_layer(m->g, VT_GL_TO_NHWC, nm2, 1, &g, 0, NULL, at, m->cols[v], &m->bad);
    VT_RETURN_ERROR_IF(*out == NONE, VT_ERR_NOMEM, "model: out of memory (or a node name too long: %s)", n->name);
    return VT_OK;
}

/* Conv, MaxPool, GlobalAveragePool, AveragePool: channels-last layers (docs/models.md "Layouts") */
static vt_err map_window(mapper *m, const vt_og_node *n, const char *nm, uint32_t cols, uint32_t *out, int *is_last)
{
    const vt_og_graph *og = m->og;
    const vt_og_value *x = &og->v[n->in[0]], *yv = &og->v[n->out[0]];
    VT_RETURN_ERROR_IF(x->rank != 4 || yv->rank != 4, VT_ERR_ARG,
                       "model: node %s (%s): 2-D images [N, C, H, W] are supported, not rank %u", n->name, n->op,
                       x->rank);
    const int64_t C = x->shape[1], H = x->shape[2], W = x->shape[3];
    int64_t k = 0, s = 1, pad = 0, dil = 1, grp = 1, cm = 0;
    const vt_og_attr *ka = vt_og_attr_get(n, "kernel_shape");
    uint32_t xin;
    *is_last = 1;
    if (!strcmp(n->op, "Conv")) {
        const vt_og_value *w = &og->v[n->in[1]];
        const vt_og_attr *ga = vt_og_attr_get(n, "group");
        if (ga) grp = ga->i;
        VT_RETURN_ERROR_IF(w->rank != 4 || w->shape[2] != w->shape[3] ||
                               (ka && (ka->n != 2 || ka->ints[0] != ka->ints[1])),
                           VT_ERR_ARG, "model: node %s (Conv): the kernel is not square (supported: k x k)", n->name);
        k = w->shape[2];
        VT_RETURN_ERROR_IF(equal_ints(n, "strides", 2, 1, &s), VT_ERR_ARG,
                           "model: node %s (Conv): strides differ (supported: equal strides)", n->name);
        VT_RETURN_ERROR_IF(equal_ints(n, "pads", 4, 0, &pad), VT_ERR_ARG,
                           "model: node %s (Conv): pads differ (supported: symmetric pads, the same on every side)",
                           n->name);
        VT_RETURN_ERROR_IF(equal_ints(n, "dilations", 2, 1, &dil) || dil != 1, VT_ERR_ARG,
                           "model: node %s (Conv): dilation other than 1 (supported: 1)", n->name);
        VT_RETURN_ERROR_IF(grp != 1, VT_ERR_ARG, "model: node %s (Conv): group %lld (supported: 1)", n->name,
                           (long long)grp);
        VT_RETURN_ERROR_IF(k > 64 || s > 64 || pad >= k || H > 4096 || W > 4096 || C > 65536 || w->shape[0] > 65536 ||
                               w->shape[1] != C,
                           VT_ERR_ARG,
                           "model: node %s (Conv): kernel %lld, stride %lld, pad %lld over %lld x %lld x %lld is not "
                           "supported (kernel and stride at most 64, pad below the kernel, images up to 4096)",
                           n->name, (long long)k, (long long)s, (long long)pad, (long long)C, (long long)H,
                           (long long)W);
        uint32_t p[2], np = 1;
        VT_FORWARD_IF_ERROR(param_of(m, n, n->in[1], &p[0]));
        if (n->n_in > 2 && n->in[2] != NONE) {
            VT_RETURN_ERROR_IF(!is_bias(og, n->in[2], (uint32_t)w->shape[0]), VT_ERR_ARG,
                               "model: node %s (Conv): its bias is not a weight of %lld values", n->name,
                               (long long)w->shape[0]);
            VT_FORWARD_IF_ERROR(param_of(m, n, n->in[2], &p[1]));
            np = 2;
        }
        const int chw = m->val[n->in[0]] == 0 && !m->last[n->in[0]]; /* the batch itself: read channels-first */
        if (chw) VT_FORWARD_IF_ERROR(act_of(m, n, n->in[0], &xin));
        else VT_FORWARD_IF_ERROR(last_of(m, n, nm, n->in[0], &xin));
        const int64_t at[VT_GLAYER_ATTRS] = {H, W, C, k, s, pad, chw, w->shape[0]};
        *out = vt_graph_layer(m->g, VT_GL_CONV, nm, 1, &xin, np, p, at, cols, &m->bad);
        return VT_OK;
    }
    VT_RETURN_ERROR_IF(n->n_out > 1 && n->out[1] != NONE && value_used(og, n->out[1]), VT_ERR_ARG,
                       "model: node %s (%s): its Indices output is read (not supported)", n->name, n->op);
    if (!strcmp(n->op, "GlobalAveragePool") ||
        (!strcmp(n->op, "AveragePool") && ka && ka->n == 2 && ka->ints[0] == H && ka->ints[1] == W &&
         !equal_ints(n, "pads", 4, 0, &pad) && pad == 0)) { /* one window: the whole image */
        VT_RETURN_ERROR_IF(H > 4096 || W > 4096 || C > 65536, VT_ERR_ARG, "model: node %s (%s): an image too large",
                           n->name, n->op);
        VT_FORWARD_IF_ERROR(last_of(m, n, nm, n->in[0], &xin));
        const int64_t at[VT_GLAYER_ATTRS] = {H, W, C};
        *out = vt_graph_layer(m->g, VT_GL_AVGPOOL, nm, 1, &xin, 0, NULL, at, cols, &m->bad);
        *is_last = 0;
        return VT_OK;
    }
    VT_RETURN_ERROR_IF(!strcmp(n->op, "AveragePool"), VT_ERR_ARG,
                       "model: node %s (AveragePool): only a window over the whole image without pads maps exactly "
                       "(global average pooling); use nn.AdaptiveAvgPool2d(1)",
                       n->name);
    /* MaxPool: k x k windows with stride k, no pads, dilation 1, the window dividing the image */
    const vt_og_attr *ca = vt_og_attr_get(n, "ceil_mode");
    if (ca) cm = ca->i;
    VT_RETURN_ERROR_IF(!ka || ka->n != 2 || ka->ints[0] != ka->ints[1] || equal_ints(n, "strides", 2, 1, &s) ||
                           s != ka->ints[0] || equal_ints(n, "pads", 4, 0, &pad) || pad != 0 ||
                           equal_ints(n, "dilations", 2, 1, &dil) || dil != 1,
                       VT_ERR_ARG,
                       "model: node %s (MaxPool): supported: a square window of stride its size, no pads, dilation 1",
                       n->name);
    k = ka->ints[0];
    VT_RETURN_ERROR_IF(k < 1 || k > 64 || H % k || W % k || H > 4096 || W > 4096 || C > 65536, VT_ERR_ARG,
                       "model: node %s (MaxPool): a window of %lld does not divide the %lld x %lld image", n->name,
                       (long long)k, (long long)H, (long long)W);
    (void)cm; /* the window divides the image: ceil_mode changes nothing */
    VT_FORWARD_IF_ERROR(last_of(m, n, nm, n->in[0], &xin));
    const int64_t at[VT_GLAYER_ATTRS] = {H, W, C, k};
    *out = vt_graph_layer(m->g, VT_GL_MAXPOOL, nm, 1, &xin, 0, NULL, at, cols, &m->bad);
    return VT_OK;
}

/* the decimal of fewest significant digits whose float (complement: the float of 1 - it) is f: the
 * module's own hyper-parameter, which the exporter wrote as a float (eps 1e-5 as 9.99999975e-06;
 * PyTorch's momentum 0.1 as ONNX's 0.9f) */
static double module_real(float f, int complement)
{
    const double a = complement ? 1.0 - (double)f : (double)f;
    for (int dg = 1; dg <= 17; dg++) {
        char buf[48];
        snprintf(buf, sizeof buf, "%.*g", dg, a);
        const double d = strtod(buf, NULL);
        if ((float)(complement ? 1.0 - d : d) == f) return d;
    }
    return a;
}

/* BatchNormalization in training mode (opset 13: its further outputs written; 14 on: training_mode 1) of
 * [N, C] or an image [N, C, H, W] (channels-last): gamma, beta, then the running mean and variance as
 * buffers */
static vt_err map_batchnorm(mapper *m, const vt_og_node *n, const char *nm, uint32_t cols, uint32_t *out)
{
    const vt_og_graph *og = m->og;
    const vt_og_attr *tm = vt_og_attr_get(n, "training_mode"), *ea = vt_og_attr_get(n, "epsilon"),
                     *ma = vt_og_attr_get(n, "momentum");
    const int training = tm ? tm->i == 1 : og->opset < 14 && n->n_out > 1 && n->out[1] != NONE;
    VT_RETURN_ERROR_IF(!training, VT_ERR_ARG,
                       "model: node %s (BatchNormalization) is in inference mode (its running statistics as "
                       "constants): export the module in training mode (training=torch.onnx.TrainingMode.TRAINING)",
                       n->name);
    for (uint32_t k = 1; k < n->n_out; k++)
        VT_RETURN_ERROR_IF(n->out[k] != NONE && value_used(og, n->out[k]), VT_ERR_ARG,
                           "model: node %s (BatchNormalization): its output %u (a batch statistic) is read (not "
                           "supported)",
                           n->name, k);
    const vt_og_value *x = &og->v[n->in[0]];
    VT_RETURN_ERROR_IF(x->rank != 2 && x->rank != 4, VT_ERR_ARG,
                       "model: node %s (BatchNormalization): of [N, C] or [N, C, H, W] (BatchNorm1d, BatchNorm2d), "
                       "not rank %u",
                       n->name, x->rank);
    uint32_t xin, p[4];
    if (x->rank == 4) VT_FORWARD_IF_ERROR(last_of(m, n, nm, n->in[0], &xin));
    else VT_FORWARD_IF_ERROR(act_of(m, n, n->in[0], &xin));
    for (uint32_t k = 0; k < 4; k++) {
        const int seen = m->par[n->in[1 + k]] != NONE; /* read by an earlier node */
        VT_FORWARD_IF_ERROR(param_of(m, n, n->in[1 + k], &p[k]));
        VT_RETURN_ERROR_IF(seen && (k >= 2 || m->g->param[p[k]].buffer), VT_ERR_ARG,
                           "model: node %s (BatchNormalization): %s is read by another node too (a running statistic "
                           "shared: not supported)",
                           n->name, og->v[n->in[1 + k]].name);
        m->g->param[p[k]].buffer = k >= 2;
    }
    const double eps = module_real((float)(ea ? ea->f : 1e-5), 0), mom = module_real((float)(ma ? ma->f : 0.9), 1);
    const int64_t at[VT_GLAYER_ATTRS] = {vt_graph_f64_bits(eps), vt_graph_f64_bits(mom), x->shape[1],
                                         x->rank == 4 ? x->shape[2] : 0, x->rank == 4 ? x->shape[3] : 0};
    *out = vt_graph_layer(m->g, VT_GL_BATCHNORM, nm, 1, &xin, 4, p, at, cols, &m->bad);
    return VT_OK;
}

/* ---------------------------------------------------------------- transformers (docs/models.md) */

#define SEQ 2 /* m->last[v]: a sequence [N, T, C], rows T of C (hwc = T, 1, C), the bytes in ONNX's order */

static int is_op(const vt_og_graph *og, uint32_t j, const char *op) { return j != NONE && !strcmp(og->node[j].op, op); }

/* the node writing value v (NONE: an input, an initializer or a constant) */
static uint32_t producer(const vt_og_graph *og, uint32_t v)
{
    for (uint32_t j = 0; j < og->n_nodes; j++)
        for (uint32_t i = 0; i < og->node[j].n_out; i++)
            if (og->node[j].out[i] == v) return j;
    return NONE;
}

/* node j's input other than v (a binary node's), NONE when it reads v twice or not at all */
static uint32_t other_in(const vt_og_node *n, uint32_t v)
{
    if (n->n_in != 2 || (n->in[0] == v) == (n->in[1] == v)) return NONE;
    return n->in[0] == v ? n->in[1] : n->in[0];
}

/* value v a float constant of one element: its value */
static int const1(const vt_og_graph *og, uint32_t v, double *out)
{
    const vt_og_value *c = v == NONE ? NULL : &og->v[v];
    if (!c || !c->is_const || c->nbytes != (c->dtype == VT_OG_F32 ? 4u : c->dtype == VT_OG_F64 ? 8u : 0u)) return 0;
    *out = c->dtype == VT_OG_F32 ? (double)*(const float *)c->data : *(const double *)c->data;
    return 1;
}

/* v a float constant of one element equal to the float of x (the exporter's constants are float32) */
static int const_is(const vt_og_graph *og, uint32_t v, double x)
{
    double c;
    return const1(og, v, &c) && (float)c == (float)x;
}

/* node j is Transpose with permutation p (k entries) */
static int perm_is(const vt_og_graph *og, uint32_t j, const int64_t *p, size_t k)
{
    const vt_og_attr *a = is_op(og, j, "Transpose") ? vt_og_attr_get(&og->node[j], "perm") : NULL;
    return a && a->n == k && !memcmp(a->ints, p, k * sizeof *p);
}

/* the next node of a chain: the sole reader of node j's first output, when it is operator op */
static uint32_t next_op(const vt_og_graph *og, uint32_t j, const char *op)
{
    const uint32_t r = j == NONE ? NONE : sole_reader(og, j, og->node[j].out[0]);
    return is_op(og, r, op) ? r : NONE;
}

/* a Transpose (perm 1, 0) of a weight that MatMul reads: no layer of its own (the MatMul's transB) */
static int weight_transpose(const vt_og_graph *og, uint32_t j)
{
    static const int64_t P10[2] = {1, 0};
    const vt_og_node *n = &og->node[j];
    if (!perm_is(og, j, P10, 2) || !og->v[n->in[0]].is_init) return 0;
    const uint32_t r = sole_reader(og, j, n->out[0]);
    return is_op(og, r, "MatMul") && og->node[r].in[1] == n->out[0];
}

/* the elements of each row of value v: its last dimension (a sequence's C), or the example's */
static uint32_t row_width(const mapper *m, uint32_t v)
{
    return m->last[v] == SEQ ? m->hwc[v][2] : m->cols[v];
}

/* LayerNormalization (opset 17), or its decomposition at opset 13 starting at ReduceMean node j:
 * ReduceMean(x, -1), Sub(x, mean), Pow(d, 2), ReduceMean(-1), Add(eps), Sqrt, Div(d, .), Mul(., weight),
 * Add(., bias), each node the only reader of the one before (d: of the Pow and the Div) */
static vt_err map_layernorm(mapper *m, uint32_t j, const char *nm, uint32_t *y_out, uint32_t *out)
{
    const vt_og_graph *og = m->og;
    const vt_og_node *n = &og->node[j];
    const uint32_t x = n->in[0];
    uint32_t wv = NONE, bv = NONE, last = j;
    double eps = 1e-5;
    if (!strcmp(n->op, "LayerNormalization")) {
        const vt_og_attr *ax = vt_og_attr_get(n, "axis"), *ep = vt_og_attr_get(n, "epsilon");
        VT_RETURN_ERROR_IF(ax && ax->i != -1 && ax->i != (int64_t)og->v[x].rank - 1, VT_ERR_ARG,
                           "model: node %s (LayerNormalization): over axis %lld (supported: the last)", n->name,
                           (long long)ax->i);
        for (uint32_t k = 1; k < n->n_out; k++)
            VT_RETURN_ERROR_IF(n->out[k] != NONE && value_used(og, n->out[k]), VT_ERR_ARG,
                               "model: node %s (LayerNormalization): its mean or inverse deviation is read", n->name);
        VT_RETURN_ERROR_IF(n->n_in < 3 || n->in[2] == NONE, VT_ERR_ARG,
                           "model: node %s (LayerNormalization) has no bias (supported: elementwise_affine)", n->name);
        wv = n->in[1], bv = n->in[2];
        if (ep) eps = ep->f;
    } else { /* the opset-13 decomposition */
        const vt_og_attr *ax = vt_og_attr_get(n, "axes"), *kd = vt_og_attr_get(n, "keepdims");
        const int last_axis = ax && ax->n == 1 && (ax->ints[0] == -1 || ax->ints[0] == (int64_t)og->v[x].rank - 1);
        const uint32_t sub = sole_reader(og, j, n->out[0]);
        uint32_t pw = NONE, dv = NONE, rm2, ad, sq, mu, ab;
        double e2;
        if (!last_axis || (kd && kd->i != 1) || !is_op(og, sub, "Sub") || og->node[sub].in[0] != x ||
            og->node[sub].in[1] != n->out[0])
            return *out = NONE, VT_OK;
        const uint32_t d = og->node[sub].out[0];
        for (uint32_t q = sub + 1; q < og->n_nodes; q++) /* d's two readers */
            for (uint32_t i = 0; i < og->node[q].n_in; i++)
                if (og->node[q].in[i] == d) {
                    if (is_op(og, q, "Pow") && pw == NONE && i == 0) pw = q;
                    else if (is_op(og, q, "Div") && dv == NONE && i == 0) dv = q;
                    else return *out = NONE, VT_OK;
                }
        if (pw == NONE || dv == NONE || !const_is(og, og->node[pw].in[1], 2.0) ||
            (rm2 = next_op(og, pw, "ReduceMean")) == NONE || (ad = next_op(og, rm2, "Add")) == NONE ||
            !const1(og, other_in(&og->node[ad], og->node[rm2].out[0]), &e2) || (sq = next_op(og, ad, "Sqrt")) == NONE ||
            sole_reader(og, sq, og->node[sq].out[0]) != dv || og->node[dv].in[1] != og->node[sq].out[0] ||
            (mu = next_op(og, dv, "Mul")) == NONE || (ab = next_op(og, mu, "Add")) == NONE)
            return *out = NONE, VT_OK;
        const vt_og_attr *a2 = vt_og_attr_get(&og->node[rm2], "axes"), *k2 = vt_og_attr_get(&og->node[rm2], "keepdims");
        if (!a2 || a2->n != 1 || a2->ints[0] != ax->ints[0] || (k2 && k2->i != 1)) return *out = NONE, VT_OK;
        wv = other_in(&og->node[mu], og->node[dv].out[0]), bv = other_in(&og->node[ab], og->node[mu].out[0]);
        eps = e2;
        const uint32_t done[] = {sub, pw, rm2, ad, sq, dv, mu, ab};
        for (size_t k = 0; k < sizeof done / sizeof done[0]; k++) m->done[done[k]] = 1;
        last = ab;
    }
    const uint32_t C = row_width(m, x);
    VT_RETURN_ERROR_IF(m->last[x] == 1 || (m->last[x] != SEQ && og->v[x].rank != 2), VT_ERR_ARG,
                       "model: node %s (%s): a layer norm of [N, C] or a sequence [N, T, C] is supported", n->name,
                       n->op);
    VT_RETURN_ERROR_IF(wv == NONE || bv == NONE || !is_bias(og, wv, C) || !is_bias(og, bv, C), VT_ERR_ARG,
                       "model: node %s (%s): its weight and bias are not weights of %u values", n->name, n->op, C);
    uint32_t xin, p[2];
    VT_FORWARD_IF_ERROR(act_of(m, n, x, &xin));
    VT_FORWARD_IF_ERROR(param_of(m, n, wv, &p[0]));
    VT_FORWARD_IF_ERROR(param_of(m, n, bv, &p[1]));
    const int64_t at[VT_GLAYER_ATTRS] = {vt_graph_f64_bits(module_real((float)eps, 0)), C,
                                         m->last[x] == SEQ ? m->hwc[x][0] : 0};
    *y_out = og->node[last].out[0];
    *out = vt_graph_layer(m->g, VT_GL_LAYERNORM, nm, 1, &xin, 2, p, at, m->cols[x], &m->bad);
    return VT_OK;
}

/* GELU's exact form from node j, a Div of x by sqrt(2) (torch's nn.GELU()): Erf, Add(1), Mul(x, .), Mul(0.5),
 * each node the only reader of the one before */
static vt_err map_gelu_erf(mapper *m, uint32_t j, const char *nm, uint32_t *y_out, uint32_t *out)
{
    const vt_og_graph *og = m->og;
    const vt_og_node *n = &og->node[j];
    const uint32_t x = n->in[0];
    uint32_t ef, a1, mx, h;
    *out = NONE;
    if (n->n_in != 2 || !const_is(og, n->in[1], 1.4142135623730951) || (ef = next_op(og, j, "Erf")) == NONE ||
        (a1 = next_op(og, ef, "Add")) == NONE || !const_is(og, other_in(&og->node[a1], og->node[ef].out[0]), 1.0) ||
        (mx = next_op(og, a1, "Mul")) == NONE || other_in(&og->node[mx], og->node[a1].out[0]) != x ||
        (h = next_op(og, mx, "Mul")) == NONE || !const_is(og, other_in(&og->node[h], og->node[mx].out[0]), 0.5))
        return VT_OK;
    uint32_t xin;
    VT_FORWARD_IF_ERROR(act_of(m, n, x, &xin));
    m->done[ef] = m->done[a1] = m->done[mx] = m->done[h] = 1;
    *y_out = og->node[h].out[0];
    *out = vt_graph_layer(m->g, VT_GL_GELU, nm, 1, &xin, 0, NULL, (const int64_t[VT_GLAYER_ATTRS]){1}, m->cols[x],
                          &m->bad);
    return VT_OK;
}

/* GELU's decompositions from node j (a Mul of x by itself: the tanh form, 0.5 x (1 + tanh(sqrt(2/pi) (x +
 * 0.044715 x^3))), as torch exports approximate='tanh'): each node the only reader of the one before */
static vt_err map_gelu(mapper *m, uint32_t j, const char *nm, uint32_t *y_out, uint32_t *out)
{
    const vt_og_graph *og = m->og;
    const vt_og_node *n = &og->node[j];
    const uint32_t x = n->in[0];
    uint32_t c3, k3, ax, k1, th, a1, mx, h;
    *out = NONE;
    if (n->n_in != 2 || n->in[1] != x || (c3 = next_op(og, j, "Mul")) == NONE ||
        other_in(&og->node[c3], n->out[0]) != x || (k3 = next_op(og, c3, "Mul")) == NONE ||
        !const_is(og, other_in(&og->node[k3], og->node[c3].out[0]), 0.044715) || (ax = next_op(og, k3, "Add")) == NONE ||
        other_in(&og->node[ax], og->node[k3].out[0]) != x || (k1 = next_op(og, ax, "Mul")) == NONE ||
        !const_is(og, other_in(&og->node[k1], og->node[ax].out[0]), 0.7978845608028654) ||
        (th = next_op(og, k1, "Tanh")) == NONE || (a1 = next_op(og, th, "Add")) == NONE ||
        !const_is(og, other_in(&og->node[a1], og->node[th].out[0]), 1.0) || (mx = next_op(og, a1, "Mul")) == NONE ||
        other_in(&og->node[mx], og->node[a1].out[0]) != x || (h = next_op(og, mx, "Mul")) == NONE ||
        !const_is(og, other_in(&og->node[h], og->node[mx].out[0]), 0.5))
        return VT_OK;
    uint32_t xin;
    VT_FORWARD_IF_ERROR(act_of(m, n, x, &xin));
    const uint32_t done[] = {c3, k3, ax, k1, th, a1, mx, h};
    for (size_t k = 0; k < sizeof done / sizeof done[0]; k++) m->done[done[k]] = 1;
    *y_out = og->node[h].out[0];
    *out = vt_graph_layer(m->g, VT_GL_GELU, nm, 1, &xin, 0, NULL, NULL, m->cols[x], &m->bad);
    return VT_OK;
}

/* the head layout of one of a Split's outputs: Reshape to [N, T, H, D], then Transposes whose composition
 * is perm (q, v: 0 2 1 3; k: 0 2 3 1, either at once or as 0 2 1 3 then 0 1 3 2); the last node's output,
 * the nodes in done[] (*nd), NONE when not so */
static uint32_t heads_of(const vt_og_graph *og, uint32_t s, uint32_t v, int64_t T, int64_t H, int64_t D,
                         const int64_t *perm, uint32_t *done, uint32_t *nd)
{
    static const int64_t P0213[4] = {0, 2, 1, 3}, P0132[4] = {0, 1, 3, 2};
    const uint32_t r = sole_reader(og, s, v);
    if (!is_op(og, r, "Reshape")) return NONE;
    const vt_og_value *rv = &og->v[og->node[r].out[0]];
    if (rv->rank != 4 || rv->shape[1] != T || rv->shape[2] != H || rv->shape[3] != D) return NONE;
    done[(*nd)++] = r;
    uint32_t t = sole_reader(og, r, og->node[r].out[0]);
    if (perm_is(og, t, perm, 4)) return done[(*nd)++] = t, og->node[t].out[0];
    if (!perm_is(og, t, P0213, 4)) return NONE;
    done[(*nd)++] = t;
    if (perm[2] == 1) return og->node[t].out[0]; /* q, v */
    const uint32_t t2 = sole_reader(og, t, og->node[t].out[0]);
    if (!perm_is(og, t2, P0132, 4)) return NONE;
    return done[(*nd)++] = t2, og->node[t2].out[0];
}

/* a constant mask [T, T] (any leading dimensions of 1) that is causal: where true (Where's condition), or
 * where -inf (an added mask), exactly the positions j > i */
static int causal_mask(const vt_og_graph *og, uint32_t v, int64_t T, int added)
{
    const vt_og_value *c = v == NONE ? NULL : &og->v[v];
    if (!c || !c->is_const || c->rank < 2 || c->shape[c->rank - 1] != T || c->shape[c->rank - 2] != T) return 0;
    for (uint32_t d = 0; d + 2 < c->rank; d++)
        if (c->shape[d] != 1) return 0;
    if (added ? c->dtype != VT_OG_F32 : c->dtype != VT_OG_BOOL) return 0;
    for (int64_t i = 0; i < T; i++)
        for (int64_t k = 0; k < T; k++) {
            const int masked = added ? isinf(((const float *)c->data)[i * T + k]) && ((const float *)c->data)[i * T + k] < 0
                                     : ((const uint8_t *)c->data)[i * T + k] != 0;
            const float zero = added ? ((const float *)c->data)[i * T + k] : 0.0f;
            if (masked != (k > i) || (!masked && zero != 0.0f)) return 0;
        }
    return 1;
}

/* multi-head self-attention from a Split (node j) of a sequence q|k|v [N, T, 3C] into three [N, T, C]
 * (torch's qkv.split(C, dim=2)): each to heads [N, H, T, D], scores q k^T, scaled by a constant (Mul or
 * Div), a causal mask (Where(mask, -inf, s) or Add of a constant mask) or none, Softmax over the last axis,
 * Dropout of ratio 0 or none, MatMul by v, Transpose (0 2 1 3), Reshape to [N, T, C] */
static vt_err map_attention(mapper *m, uint32_t j, const char *nm, uint32_t *y_out, uint32_t *out)
{
    static const int64_t PQ[4] = {0, 2, 1, 3}, PK[4] = {0, 2, 3, 1};
    const vt_og_graph *og = m->og;
    const vt_og_node *n = &og->node[j];
    const uint32_t x = n->in[0];
    const vt_og_attr *ax = vt_og_attr_get(n, "axis");
    uint32_t done[24], nd = 0;
    *out = NONE;
    if (m->last[x] != SEQ || n->n_out != 3 || !ax || (ax->i != 2 && ax->i != -1) || m->hwc[x][2] % 3) return VT_OK;
    const int64_t T = m->hwc[x][0], C = m->hwc[x][2] / 3;
    for (uint32_t i = 0; i < 3; i++)
        if (n->out[i] == NONE || og->v[n->out[i]].rank != 3 || og->v[n->out[i]].shape[2] != C) return VT_OK;
    const uint32_t rq = sole_reader(og, j, n->out[0]);
    if (!is_op(og, rq, "Reshape") || og->v[og->node[rq].out[0]].rank != 4) return VT_OK;
    const int64_t H = og->v[og->node[rq].out[0]].shape[2], D = og->v[og->node[rq].out[0]].shape[3];
    if (H < 1 || H * D != C) return VT_OK;
    const uint32_t q = heads_of(og, j, n->out[0], T, H, D, PQ, done, &nd),
                   k = heads_of(og, j, n->out[1], T, H, D, PK, done, &nd),
                   v = heads_of(og, j, n->out[2], T, H, D, PQ, done, &nd);
    if (q == NONE || k == NONE || v == NONE) return VT_OK;
    uint32_t s = sole_reader(og, producer(og, q), q), w;
    double scale = 1.0, c;
    int causal = 0;
    if (!is_op(og, s, "MatMul") || og->node[s].in[0] != q || og->node[s].in[1] != k ||
        sole_reader(og, producer(og, k), k) != s)
        return VT_OK;
    done[nd++] = s;
    w = next_op(og, s, "Mul");
    if (w == NONE) w = next_op(og, s, "Div");
    if (w != NONE) { /* the scale */
        const uint32_t o = other_in(&og->node[w], og->node[s].out[0]);
        if (!const1(og, o, &c) || !(c > 0) || (og->node[w].op[0] == 'D' && og->node[w].in[1] != o)) return VT_OK;
        scale = og->node[w].op[0] == 'D' ? 1.0 / c : c;
        done[nd++] = s = w;
    }
    if ((w = next_op(og, s, "Where")) != NONE) { /* masked_fill(mask, -inf) */
        const vt_og_node *wn = &og->node[w];
        double fill;
        if (wn->in[2] != og->node[s].out[0] || !causal_mask(og, wn->in[0], T, 0) || !const1(og, wn->in[1], &fill) ||
            !(isinf(fill) && fill < 0))
            return VT_OK;
        causal = 1, done[nd++] = s = w;
    } else if ((w = next_op(og, s, "Add")) != NONE) { /* an added mask */
        if (!causal_mask(og, other_in(&og->node[w], og->node[s].out[0]), T, 1)) return VT_OK;
        causal = 1, done[nd++] = s = w;
    }
    const uint32_t sm = next_op(og, s, "Softmax");
    const vt_og_attr *sa = sm == NONE ? NULL : vt_og_attr_get(&og->node[sm], "axis");
    if (sm == NONE || (sa && sa->i != -1 && sa->i != 3)) return VT_OK;
    done[nd++] = s = sm;
    if ((w = next_op(og, s, "Dropout")) != NONE) { /* the identity only: ratio 0 (ONNX's default 0.5) or inference */
        const vt_og_node *dn = &og->node[w];
        const vt_og_value *tm = dn->n_in >= 3 && dn->in[2] != NONE ? &og->v[dn->in[2]] : NULL;
        double ratio = 0.5;
        if ((dn->n_in >= 2 && dn->in[1] != NONE && !const1(og, dn->in[1], &ratio)) ||
            (tm && (!tm->is_const || tm->dtype != VT_OG_BOOL || tm->nbytes != 1)) ||
            (tm && *(const uint8_t *)tm->data && ratio != 0) || (dn->n_out > 1 && dn->out[1] != NONE && value_used(og, dn->out[1])))
            return VT_OK;
        done[nd++] = s = w;
    }
    const uint32_t pv = next_op(og, s, "MatMul");
    if (pv == NONE || og->node[pv].in[0] != og->node[s].out[0] || og->node[pv].in[1] != v ||
        sole_reader(og, producer(og, v), v) != pv)
        return VT_OK;
    done[nd++] = pv;
    const uint32_t tr = next_op(og, pv, "Transpose"), rs = next_op(og, tr, "Reshape");
    if (!perm_is(og, tr, PQ, 4) || rs == NONE || og->v[og->node[rs].out[0]].rank != 3 ||
        og->v[og->node[rs].out[0]].shape[1] != T || og->v[og->node[rs].out[0]].shape[2] != C)
        return VT_OK;
    done[nd++] = tr, done[nd++] = rs;
    uint32_t xin;
    VT_FORWARD_IF_ERROR(act_of(m, n, x, &xin));
    for (uint32_t i = 0; i < nd; i++) m->done[done[i]] = 1;
    const int64_t at[VT_GLAYER_ATTRS] = {T, H, D, causal, vt_graph_f64_bits(scale)};
    *y_out = og->node[rs].out[0];
    *out = vt_graph_layer(m->g, VT_GL_ATTENTION, nm, 1, &xin, 0, NULL, at, (uint32_t)(T * C), &m->bad);
    return VT_OK;
}

/* a language model's embeddings from Gather node j of a token embedding (an initializer [V, C]) by the graph's
 * input tokens [N, T]: its only reader an Add with the Gather of a position embedding [T, C] by the constant
 * positions 0 .. T-1 (nn.Embedding(T, C) of torch.arange(T)) */
static vt_err map_embed(mapper *m, uint32_t j, const char *nm, uint32_t *y_out, uint32_t *out)
{
    const vt_og_graph *og = m->og;
    const vt_og_node *n = &og->node[j];
    const vt_og_attr *ax = vt_og_attr_get(n, "axis");
    *out = NONE;
    if (n->n_in != 2 || !og->v[n->in[0]].is_init || m->val[n->in[1]] != 0 || (ax && ax->i != 0)) return VT_OK;
    const vt_og_value *wte = &og->v[n->in[0]], *tok = &og->v[n->in[1]];
    const uint32_t ad = next_op(og, j, "Add"), pg = ad == NONE ? NONE : producer(og, other_in(&og->node[ad], n->out[0]));
    VT_RETURN_ERROR_IF(tok->rank != 2 || wte->rank != 2 || !is_op(og, pg, "Gather") || !og->v[og->node[pg].in[0]].is_init,
                       VT_ERR_ARG,
                       "model: node %s (Gather): a token embedding of the input [N, T] added to a position embedding "
                       "(nn.Embedding of torch.arange(T)) is supported",
                       n->name);
    const int64_t T = tok->shape[1], V = wte->shape[0], C = wte->shape[1];
    const vt_og_value *wpe = &og->v[og->node[pg].in[0]], *pos = &og->v[og->node[pg].in[1]];
    int ok = wpe->rank == 2 && wpe->shape[1] == C && pos->is_const && pos->rank == 1 && pos->shape[0] == T &&
             (pos->dtype == VT_OG_I64 || pos->dtype == VT_OG_I32) && sole_reader(og, pg, og->node[pg].out[0]) == ad;
    for (int64_t t = 0; ok && t < T; t++)
        ok = (pos->dtype == VT_OG_I64 ? ((const int64_t *)pos->data)[t] : ((const int32_t *)pos->data)[t]) == t;
    VT_RETURN_ERROR_IF(!ok, VT_ERR_ARG,
                       "model: node %s (Gather): the position embedding is not [%lld, %lld] read at positions 0 .. "
                       "%lld",
                       og->node[pg].name, (long long)T, (long long)C, (long long)T - 1);
    VT_RETURN_ERROR_IF(wpe->shape[0] != T, VT_ERR_ARG,
                       "model: node %s (Gather): the position embedding %s has %lld positions, the input %lld: export "
                       "the model with an input of its whole context",
                       og->node[pg].name, wpe->name, (long long)wpe->shape[0], (long long)T);
    uint32_t p[2];
    VT_FORWARD_IF_ERROR(param_of(m, n, n->in[0], &p[0]));
    VT_FORWARD_IF_ERROR(param_of(m, n, og->node[pg].in[0], &p[1]));
    m->done[pg] = m->done[ad] = 1;
    const int64_t at[VT_GLAYER_ATTRS] = {T, V, C};
    *y_out = og->node[ad].out[0];
    *out = vt_graph_layer(m->g, VT_GL_EMBED, nm, 1, (const uint32_t[]){0}, 2, p, at, (uint32_t)(T * C), &m->bad);
    return VT_OK;
}

/* node j is the Gather of a position embedding (an initializer by constant indices) that an Add joins to the
 * Gather of a token embedding by the graph's input: map_embed maps both, whichever comes first in the file */
static int position_gather(const mapper *m, uint32_t j)
{
    const vt_og_graph *og = m->og;
    const vt_og_node *n = &og->node[j];
    if (n->n_in != 2 || !og->v[n->in[0]].is_init || !og->v[n->in[1]].is_const) return 0;
    const uint32_t ad = next_op(og, j, "Add"), tg = ad == NONE ? NONE : producer(og, other_in(&og->node[ad], n->out[0]));
    return is_op(og, tg, "Gather") && og->v[og->node[tg].in[0]].is_init && m->val[og->node[tg].in[1]] == 0;
}

/* a pattern from node j (LayerNormalization or the decomposition's ReduceMean, GELU's Mul, attention's
 * Split): its layer in *out, its value the ONNX value *y (a sequence when its input is); *out NONE: no match */
static vt_err map_pattern(mapper *m, uint32_t j, const char *nm, uint32_t *y, uint32_t *out)
{
    const vt_og_node *n = &m->og->node[j];
    *out = NONE;
    if (!strcmp(n->op, "LayerNormalization") || !strcmp(n->op, "ReduceMean"))
        VT_FORWARD_IF_ERROR(map_layernorm(m, j, nm, y, out));
    else if (!strcmp(n->op, "Mul")) VT_FORWARD_IF_ERROR(map_gelu(m, j, nm, y, out));
    else if (!strcmp(n->op, "Div")) VT_FORWARD_IF_ERROR(map_gelu_erf(m, j, nm, y, out));
    else if (!strcmp(n->op, "Split")) VT_FORWARD_IF_ERROR(map_attention(m, j, nm, y, out));
    else if (!strcmp(n->op, "Gather")) VT_FORWARD_IF_ERROR(map_embed(m, j, nm, y, out));
    if (*out == NONE) return VT_OK;
    VT_RETURN_ERROR_IF(*out == NONE || m->bad, VT_ERR_NOMEM, "model: out of memory (or a node name too long: %s)",
                       n->name);
    const uint32_t x = n->in[0];
    m->val[*y] = *out, m->cols[*y] = (uint32_t)example_elems(&m->og->v[*y]);
    m->last[*y] = m->last[x] == SEQ || !strcmp(n->op, "Gather") ? SEQ : 0;
    if (m->g->layer[*out - 1].op == VT_GL_GELU) { /* elementwise: its input's layout (a channels-last image's too) */
        m->last[*y] = m->last[x];
        memcpy(m->hwc[*y], m->hwc[x], sizeof m->hwc[*y]);
    } else if (m->last[*y] == SEQ)
        m->hwc[*y][0] = (uint32_t)m->og->v[*y].shape[1], m->hwc[*y][1] = 1,
        m->hwc[*y][2] = (uint32_t)m->og->v[*y].shape[2];
    return VT_OK;
}

static vt_err map_node(mapper *m, uint32_t j)
{
    const vt_og_graph *og = m->og;
    const vt_og_node *n = &og->node[j];
    char nm[VT_GRAPH_NAME_MAX];
    layer_name(n, nm);
    const uint32_t y = n->n_out ? n->out[0] : NONE;
    VT_RETURN_ERROR_IF(y == NONE, VT_ERR_ARG, "model: node %s (%s) has no output", n->name, n->op);
    if (!strcmp(n->op, "Transpose") && weight_transpose(og, j)) return VT_OK; /* the MatMul's transB */
    if (!strcmp(n->op, "Gather") && position_gather(m, j)) return VT_OK; /* the token embedding's node maps it */
    const vt_og_value *yv = &og->v[y];
    VT_RETURN_ERROR_IF(yv->rank < 1 || yv->shape[0] != og->v[og->inputs[0]].shape[0] || example_elems(yv) < 1 ||
                           example_elems(yv) > (1 << 30),
                       VT_ERR_ARG, "model: node %s (%s): its output %s does not keep the batch as its first dimension",
                       n->name, n->op, yv->name);
    const uint32_t cols = (uint32_t)example_elems(yv);
    uint32_t x, x1, out = NONE, py;
    VT_FORWARD_IF_ERROR(map_pattern(m, j, nm, &py, &out)); /* a layer norm, GELU, attention */
    if (out != NONE) return VT_OK;
    if (!strcmp(n->op, "ReduceMean") && m->last[n->in[0]] == SEQ) { /* the mean over a sequence's rows */
        const vt_og_attr *ax = vt_og_attr_get(n, "axes");
        VT_RETURN_ERROR_IF(!ax || ax->n != 1 || ax->ints[0] != 1, VT_ERR_ARG,
                           "model: node %s (ReduceMean) of a sequence: over axis 1 (the positions) is supported",
                           n->name);
        VT_FORWARD_IF_ERROR(act_of(m, n, n->in[0], &x));
        const uint32_t *q = m->hwc[n->in[0]];
        const int64_t at[VT_GLAYER_ATTRS] = {q[0], 1, q[2]};
        out = vt_graph_layer(m->g, VT_GL_AVGPOOL, nm, 1, &x, 0, NULL, at, cols, &m->bad);
        VT_RETURN_ERROR_IF(out == NONE, VT_ERR_NOMEM, "model: out of memory (or a node name too long: %s)", n->name);
        m->val[y] = out, m->cols[y] = cols; /* flat */
        return VT_OK;
    }
    if (!strcmp(n->op, "Dropout")) {
        /* in training mode (training_mode a constant true) with a ratio p > 0 (ONNX's default 0.5): the project's
         * dropout (Philox masks, not PyTorch's); otherwise the identity */
        const vt_og_value *tm = n->n_in >= 3 && n->in[2] != NONE ? &og->v[n->in[2]] : NULL;
        double pr = 0.5;
        VT_RETURN_ERROR_IF((n->n_in >= 2 && n->in[1] != NONE && !const1(og, n->in[1], &pr)) ||
                               (tm && (!tm->is_const || tm->dtype != VT_OG_BOOL || tm->nbytes != 1)),
                           VT_ERR_ARG, "model: node %s (Dropout): its ratio and training_mode are not constants",
                           n->name);
        VT_RETURN_ERROR_IF(n->n_out > 1 && n->out[1] != NONE && value_used(og, n->out[1]), VT_ERR_ARG,
                           "model: node %s (Dropout): its mask is read (not supported)", n->name);
        VT_RETURN_ERROR_IF(!(pr >= 0 && pr < 1), VT_ERR_ARG, "model: node %s (Dropout): ratio %g (supported: [0, 1))",
                           n->name, pr);
        VT_FORWARD_IF_ERROR(act_of(m, n, n->in[0], &x));
        out = x; /* the identity: the same value */
        if (tm && *(const uint8_t *)tm->data && pr > 0) {
            const int64_t at[VT_GLAYER_ATTRS] = {vt_graph_f64_bits(module_real((float)pr, 0))};
            out = vt_graph_layer(m->g, VT_GL_DROPOUT, nm, 1, &x, 0, NULL, at, cols, &m->bad);
            VT_RETURN_ERROR_IF(out == NONE, VT_ERR_NOMEM, "model: out of memory (or a node name too long: %s)", n->name);
        }
        m->val[y] = out, m->cols[y] = cols, m->last[y] = m->last[n->in[0]];
        memcpy(m->hwc[y], m->hwc[n->in[0]], sizeof m->hwc[y]);
        return VT_OK;
    }
    if (!strcmp(n->op, "Flatten") || !strcmp(n->op, "Reshape")) {
        VT_FORWARD_IF_ERROR(act_of(m, n, n->in[0], &x));
        VT_RETURN_ERROR_IF(cols != m->cols[n->in[0]], VT_ERR_ARG, "model: node %s (%s) changes the example's size",
                           n->name, n->op);
        const uint32_t *q = m->hwc[n->in[0]];
        const vt_og_value *xv = &og->v[n->in[0]];
        const int same_shape = (xv->rank == yv->rank &&
                                                  !memcmp(xv->shape, yv->shape, yv->rank * sizeof *yv->shape));
        static const int64_t P021[3] = {0, 2, 1};
        const uint32_t tp = sole_reader(og, j, y);
        if (m->last[n->in[0]] == 1 && yv->rank == 3 && yv->shape[1] == q[2] && yv->shape[2] == (int64_t)q[0] * q[1] &&
            perm_is(og, tp, P021, 3)) {
            /* an image [N, C, H, W] as [N, C, H*W], transposed to [N, H*W, C]: its channels-last bytes read as a
             * sequence of H*W rows (the patch embedding's flatten(2).transpose(1, 2)) */
            const uint32_t ty = og->node[tp].out[0];
            const int64_t at[VT_GLAYER_ATTRS] = {(int64_t)q[0] * q[1]};
            out = vt_graph_layer(m->g, VT_GL_RESHAPE, nm, 1, &x, 0, NULL, at, cols, &m->bad);
            VT_RETURN_ERROR_IF(out == NONE, VT_ERR_NOMEM, "model: out of memory (or a node name too long: %s)",
                               n->name);
            m->done[tp] = 1;
            m->val[ty] = out, m->cols[ty] = cols, m->last[ty] = SEQ;
            m->hwc[ty][0] = q[0] * q[1], m->hwc[ty][1] = 1, m->hwc[ty][2] = q[2];
            return VT_OK;
        }
        if (m->last[n->in[0]] == SEQ && !same_shape) { /* a sequence flattened: the same bytes */
            out = vt_graph_layer(m->g, VT_GL_RESHAPE, nm, 1, &x, 0, NULL, NULL, cols, &m->bad);
            VT_RETURN_ERROR_IF(out == NONE, VT_ERR_NOMEM, "model: out of memory (or a node name too long: %s)",
                               n->name);
            m->val[y] = out, m->cols[y] = cols;
            return VT_OK;
        }
        if (m->last[n->in[0]] == 1 && !same_shape && (uint64_t)q[0] * q[1] > 1) {
            /* a channels-last image flattened: ONNX's order is (c, h, w): to_channels_first */
            const int64_t at[VT_GLAYER_ATTRS] = {q[0], q[1], q[2]};
            out = vt_graph_layer(m->g, VT_GL_TO_NCHW, nm, 1, &x, 0, NULL, at, cols, &m->bad);
            VT_RETURN_ERROR_IF(out == NONE, VT_ERR_NOMEM, "model: out of memory (or a node name too long: %s)",
                               n->name);
            m->val[y] = out, m->cols[y] = cols;
            return VT_OK;
        }
        m->val[y] = x, m->cols[y] = cols; /* the same bytes */
        if (same_shape) { /* the layout kept */
            m->last[y] = m->last[n->in[0]];
            memcpy(m->hwc[y], q, sizeof m->hwc[y]);
        }
        return VT_OK;
    }
    if (!strcmp(n->op, "Conv") || !strcmp(n->op, "MaxPool") || !strcmp(n->op, "GlobalAveragePool") ||
        !strcmp(n->op, "AveragePool")) {
        int is_last = 0;
        VT_FORWARD_IF_ERROR(map_window(m, n, nm, cols, &out, &is_last));
        VT_RETURN_ERROR_IF(out == NONE, VT_ERR_NOMEM, "model: out of memory (or a node name too long: %s)", n->name);
        m->val[y] = out, m->cols[y] = cols, m->last[y] = (uint8_t)is_last;
        if (is_last) {
            m->hwc[y][0] = (uint32_t)yv->shape[2], m->hwc[y][1] = (uint32_t)yv->shape[3];
            m->hwc[y][2] = (uint32_t)yv->shape[1];
        }
        return VT_OK;
    }
    if (!strcmp(n->op, "Relu")) {
        VT_FORWARD_IF_ERROR(act_of(m, n, n->in[0], &x));
        out = vt_graph_layer(m->g, VT_GL_RELU, nm, 1, &x, 0, NULL, NULL, cols, &m->bad);
        m->last[y] = m->last[n->in[0]], memcpy(m->hwc[y], m->hwc[n->in[0]], sizeof m->hwc[y]);
    } else if (!strcmp(n->op, "Sigmoid") || !strcmp(n->op, "Tanh") || !strcmp(n->op, "LeakyRelu")) {
        /* the activations: elementwise, LeakyRelu's alpha (default 0.01) carried as its FP64 bits */
        VT_FORWARD_IF_ERROR(act_of(m, n, n->in[0], &x));
        VT_RETURN_ERROR_IF(cols != m->cols[n->in[0]], VT_ERR_ARG, "model: node %s (%s) changes the example's size",
                           n->name, n->op);
        const vt_glayer_op op = n->op[0] == 'S' ? VT_GL_SIGMOID : n->op[0] == 'T' ? VT_GL_TANH : VT_GL_LEAKY_RELU;
        int64_t attr[VT_GLAYER_ATTRS] = {0};
        if (op == VT_GL_LEAKY_RELU) {
            const vt_og_attr *al = vt_og_attr_get(n, "alpha");
            const double alpha = al ? al->f : 0.01;
            VT_RETURN_ERROR_IF(!vt_graph_alpha_ok(alpha), VT_ERR_ARG,
                               "model: node %s (LeakyRelu): alpha %g is not 0 or within [2^-64, 2^64] in magnitude",
                               n->name, alpha);
            attr[0] = vt_graph_f64_bits(alpha);
        }
        out = vt_graph_layer(m->g, op, nm, 1, &x, 0, NULL, attr, cols, &m->bad);
        m->last[y] = m->last[n->in[0]], memcpy(m->hwc[y], m->hwc[n->in[0]], sizeof m->hwc[y]);
    } else if (!strcmp(n->op, "Add") && n->n_in == 2 &&
               ((m->last[n->in[0]] == SEQ && og->v[n->in[1]].is_init) ||
                (m->last[n->in[1]] == SEQ && og->v[n->in[0]].is_init))) {
        /* a sequence plus a learned position embedding (nn.Parameter [1, T, C]), in either order */
        const uint32_t si = m->last[n->in[0]] == SEQ ? 0 : 1;
        const vt_og_value *pv = &og->v[n->in[1 - si]];
        const uint32_t *q = m->hwc[n->in[si]];
        uint32_t pp;
        VT_RETURN_ERROR_IF(pv->dtype != VT_OG_F32 || pv->nbytes != (size_t)q[0] * q[2] * sizeof(float) ||
                               pv->shape[pv->rank - 1] != q[2] || (pv->rank == 3 && pv->shape[0] != 1) || pv->rank < 2 ||
                               pv->rank > 3,
                           VT_ERR_ARG,
                           "model: node %s (Add): a sequence of %u x %u plus %s: a position embedding [1, %u, %u] is "
                           "supported",
                           n->name, q[0], q[2], pv->name, q[0], q[2]);
        VT_FORWARD_IF_ERROR(act_of(m, n, n->in[si], &x));
        VT_FORWARD_IF_ERROR(param_of(m, n, n->in[1 - si], &pp));
        const int64_t at[VT_GLAYER_ATTRS] = {q[0], q[2]};
        out = vt_graph_layer(m->g, VT_GL_POSITIONS, nm, 1, &x, 1, &pp, at, cols, &m->bad);
        m->last[y] = SEQ, memcpy(m->hwc[y], q, sizeof m->hwc[y]);
    } else if (!strcmp(n->op, "Add")) {
        VT_FORWARD_IF_ERROR(act_of(m, n, n->in[0], &x));
        VT_FORWARD_IF_ERROR(act_of(m, n, n->in[1], &x1));
        VT_RETURN_ERROR_IF(m->cols[n->in[0]] != cols || m->cols[n->in[1]] != cols, VT_ERR_ARG,
                           "model: node %s (Add): its inputs are broadcast (supported: two activations of one shape, or "
                           "a weight's bias after MatMul)",
                           n->name);
        VT_RETURN_ERROR_IF(m->last[n->in[0]] != m->last[n->in[1]] ||
                               memcmp(m->hwc[n->in[0]], m->hwc[n->in[1]], sizeof m->hwc[0]) != 0,
                           VT_ERR_ARG,
                           "model: node %s (Add): one input is a convolution's (channels-last) output, the other not "
                           "(not supported)",
                           n->name);
        out = vt_graph_layer(m->g, VT_GL_ADD, nm, 2, (const uint32_t[]){x, x1}, 0, NULL, NULL, cols, &m->bad);
        m->last[y] = m->last[n->in[0]], memcpy(m->hwc[y], m->hwc[n->in[0]], sizeof m->hwc[y]);
    } else if (!strcmp(n->op, "BatchNormalization")) {
        VT_FORWARD_IF_ERROR(map_batchnorm(m, n, nm, cols, &out));
        const vt_og_value *xv = &og->v[n->in[0]];
        m->last[y] = xv->rank == 4;
        if (xv->rank == 4) /* channels-last out */
            m->hwc[y][0] = (uint32_t)xv->shape[2], m->hwc[y][1] = (uint32_t)xv->shape[3], m->hwc[y][2] = (uint32_t)xv->shape[1];
    } else if (!strcmp(n->op, "Gemm") || !strcmp(n->op, "MatMul")) {
        const int gemm = n->op[0] == 'G';
        const vt_og_attr *ta = vt_og_attr_get(n, "transA"), *tb = vt_og_attr_get(n, "transB"),
                         *al = vt_og_attr_get(n, "alpha"), *be = vt_og_attr_get(n, "beta");
        VT_RETURN_ERROR_IF((ta && ta->i) || (al && al->f != 1.0) || (be && be->f != 1.0), VT_ERR_ARG,
                           "model: node %s (Gemm): transA, alpha or beta other than 0, 1, 1", n->name);
        VT_FORWARD_IF_ERROR(act_of(m, n, n->in[0], &x));
        /* the weight: an initializer, or (MatMul) the Transpose of one: PyTorch's Linear on a sequence */
        const uint32_t wp = producer(og, n->in[1]), wi = !gemm && wp != NONE && weight_transpose(og, wp)
                                                             ? og->node[wp].in[0]
                                                             : n->in[1];
        const vt_og_value *a = &og->v[n->in[0]], *w = &og->v[wi];
        const int seq = m->last[n->in[0]] == SEQ; /* each of the sequence's rows times the weight */
        VT_RETURN_ERROR_IF((a->rank != 2 && !(seq && a->rank == 3)) || w->rank != 2, VT_ERR_ARG,
                           "model: node %s (%s): a product of a [N, K] activation or a sequence [N, T, K] by a [K, M] "
                           "weight is supported, not ranks %u and %u",
                           n->name, n->op, a->rank, w->rank);
        const int64_t tB = wi != n->in[1] ? 1 : tb ? tb->i : 0, K = a->shape[a->rank - 1],
                      N = tB ? w->shape[0] : w->shape[1], R = seq ? a->shape[1] : 1;
        VT_RETURN_ERROR_IF((tB ? w->shape[1] : w->shape[0]) != K || N * R != (int64_t)cols, VT_ERR_ARG,
                           "model: node %s (%s): the weight %s does not fit the activation", n->name, n->op, w->name);
        const uint32_t Nr = (uint32_t)N;
        uint32_t p[2], np = 1;
        VT_FORWARD_IF_ERROR(param_of(m, n, wi, &p[0]));
        uint32_t bias = gemm && n->n_in > 2 ? n->in[2] : NONE, fused = NONE;
        if (!gemm) { /* MatMul + Add(bias): one Linear */
            uint32_t r = sole_reader(og, j, y);
            if (r != NONE && !strcmp(og->node[r].op, "Add") && og->node[r].n_in == 2) {
                for (uint32_t i = 0; i < 2; i++)
                    if (og->node[r].in[i] == y && is_bias(og, og->node[r].in[1 - i], Nr))
                        bias = og->node[r].in[1 - i], fused = r;
            }
        }
        if (bias != NONE) {
            VT_RETURN_ERROR_IF(!is_bias(og, bias, Nr), VT_ERR_ARG,
                               "model: node %s (%s): its bias is not a weight of %u values", n->name, n->op, Nr);
            VT_FORWARD_IF_ERROR(param_of(m, n, bias, &p[1]));
            np = 2;
        }
        out = vt_graph_layer(m->g, VT_GL_LINEAR, nm, 1, &x, np, p,
                             (const int64_t[VT_GLAYER_ATTRS]){tB ? 1 : 0, seq ? R : 0}, cols, &m->bad);
        const uint32_t yo = fused != NONE ? og->node[fused].out[0] : y; /* a fused Add's output is this layer's */
        if (fused != NONE) m->done[fused] = 1, m->val[yo] = out, m->cols[yo] = cols;
        if (seq) m->last[yo] = SEQ, m->hwc[yo][0] = (uint32_t)R, m->hwc[yo][1] = 1, m->hwc[yo][2] = Nr;
    } else {
        VT_RETURN_ERROR(VT_ERR_ARG, "model: node %s (%s) is not supported by the step program (supported: %s)%s",
                        n->name, n->op, SUPPORTED,
                        !strcmp(n->op, "Softmax") || !strcmp(n->op, "LogSoftmax")
                            ? "; export the logits: the loss applies the softmax"
                            : "");
    }
    VT_RETURN_ERROR_IF(out == NONE, VT_ERR_NOMEM, "model: out of memory (or a node name too long: %s)", n->name);
    m->val[y] = out, m->cols[y] = cols;
    return VT_OK;
}

static vt_err map_graph(mapper *m)
{
    const vt_og_graph *og = m->og;
    VT_RETURN_ERROR_IF(og->n_inputs != 1 || og->n_outputs != 1, VT_ERR_ARG,
                       "model: the graph has %u inputs and %u outputs (one of each is supported: the batch in, the "
                       "logits out)",
                       og->n_inputs, og->n_outputs);
    const vt_og_value *in = &og->v[og->inputs[0]];
    const int tokens = (in->dtype == VT_OG_I64 || in->dtype == VT_OG_I32) && in->rank == 2; /* a language model's */
    VT_RETURN_ERROR_IF((in->dtype != VT_OG_F32 && !tokens) || in->rank < 2 || example_elems(in) > (1 << 30), VT_ERR_ARG,
                       "model: the input %s is not float32 [N, ...] (or a language model's tokens [N, T])", in->name);
    m->val[og->inputs[0]] = 0, m->cols[og->inputs[0]] = (uint32_t)example_elems(in);
    m->g->in_cols = (uint32_t)example_elems(in);
    /* a LogSoftmax over the classes at the output (PyTorch's log_softmax then nll_loss): its input is the
     * logits the cross-entropy reads - NLL(log_softmax(z)) is the cross-entropy of z (the documented
     * fusion, cross-entropy only: vt_recipe_set_graph) */
    uint32_t o = og->outputs[0];
    for (uint32_t j = 0; j < og->n_nodes; j++) {
        const vt_og_node *n = &og->node[j];
        if (n->n_out < 1 || n->out[0] != o || strcmp(n->op, "LogSoftmax") != 0 || n->n_in < 1 || n->in[0] == NONE)
            continue;
        const vt_og_attr *ax = vt_og_attr_get(n, "axis");
        const int64_t axis = ax ? ax->i : -1;
        VT_RETURN_ERROR_IF(og->v[o].rank != 2 || (axis != -1 && axis != 1), VT_ERR_ARG,
                           "model: node %s (LogSoftmax) at the output is not over the classes of [N, classes]",
                           n->name);
        m->done[j] = 1, o = n->in[0], m->g->out_logsoftmax = 1;
    }
    for (uint32_t j = 0; j < og->n_nodes; j++)
        if (!m->done[j]) VT_FORWARD_IF_ERROR(map_node(m, j));
    VT_RETURN_ERROR_IF(m->val[o] == NONE || m->val[o] == 0 ||
                           (tokens ? og->v[o].rank != 3 || m->last[o] != SEQ : og->v[o].rank != 2 || m->last[o]),
                       VT_ERR_ARG, "model: the output %s is not the logits [N, classes]%s computed from the input",
                       og->v[o].name, tokens ? " of each position, [N, T, V]," : "");
    m->g->out = m->val[o], m->g->loss = VT_GLOSS_XENT;
    for (uint32_t l = 0; l < m->g->n_layer; l++) { /* sizes the kinds take: the user's model (64), not a bad file */
        uint32_t w;
        if (vt_graph_layer_check(&m->g->layer[l], &w)) {
            char msg[512];
            snprintf(msg, sizeof msg, "%s", vt_errmsg());
            return vt_set_error(VT_ERR_ARG, "model: %s (not supported)", msg);
        }
    }
    return VT_OK;
}

vt_err vt_graph_from_onnx(const vt_og_graph *og, vt_graph *g, float ***vals)
{
    vt_graph_init(g);
    *vals = NULL;
    mapper m = {.og = og, .g = g};
    m.val = malloc((og->n_values + 1) * sizeof *m.val), m.cols = calloc(og->n_values + 1, sizeof *m.cols);
    m.par = malloc((og->n_values + 1) * sizeof *m.par), m.done = calloc(og->n_nodes + 1, 1);
    m.last = calloc(og->n_values + 1, 1), m.hwc = calloc(og->n_values + 1, sizeof *m.hwc);
    vt_err e = !m.val || !m.cols || !m.par || !m.done || !m.last || !m.hwc
                   ? vt_set_error(VT_ERR_NOMEM, "model: out of memory")
                   : VT_OK;
    for (uint32_t i = 0; !e && i < og->n_values; i++) m.val[i] = m.par[i] = NONE;
    if (!e) e = map_graph(&m);
    if (!e && m.bad) e = vt_set_error(VT_ERR_NOMEM, "model: out of memory");
    free(m.val), free(m.cols), free(m.par), free(m.done), free(m.last), free(m.hwc);
    if (e) {
        vt_graph_values_free(m.vals, g->n_param);
        vt_graph_free(g);
        return e;
    }
    *vals = m.vals;
    return VT_OK;
}

vt_err vt_graph_import_onnx(const char *path, uint32_t batch, vt_graph *g, float ***vals, uint8_t sha256[32])
{
    vt_og_graph og;
    vt_graph_init(g);
    *vals = NULL;
    VT_FORWARD_IF_ERROR(vt_og_read_file(path, batch, &og));
    memcpy(sha256, og.file_sha256, 32);
    vt_err e = vt_graph_from_onnx(&og, g, vals);
    vt_og_free(&og);
    return e ? vt_error_prefix(e, "%s", path) : VT_OK;
}

void vt_graph_values_free(float **vals, uint32_t n)
{
    for (uint32_t k = 0; vals && k < n; k++) free(vals[k]);
    free(vals);
}

vt_err vt_recipe_import_graph(vt_recipe *r, vt_graph *g, float ***vals)
{
    uint8_t sha[32];
    VT_FORWARD_IF_ERROR(vt_graph_import_onnx(r->model, r->batch, g, vals, sha));
    vt_err e = vt_recipe_set_graph(r, g, sha);
    if (e) {
        vt_graph_values_free(*vals, g->n_param);
        *vals = NULL;
        vt_graph_free(g);
    }
    return e;
}

vt_err vt_recipe_import_model(vt_recipe *r)
{
    vt_graph g;
    float **vals;
    VT_FORWARD_IF_ERROR(vt_recipe_import_graph(r, &g, &vals));
    vt_graph_values_free(vals, g.n_param);
    vt_graph_free(&g);
    return VT_OK;
}
