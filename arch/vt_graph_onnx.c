/* vt_graph_onnx.c - a folded ONNX graph (vt_onnx_graph.h) mapped to a forward graph (vt_graph.h):
 * docs/models.md "From ONNX to the forward graph". What is mapped: the one graph input (the batch,
 * [N, ...]: an example is its N-th slice, row-major), Gemm (alpha = beta = 1, transA 0, transB 0 or
 * 1: PyTorch's Linear), MatMul by an initializer (with the Add of an initializer bias that follows it
 * fused in), Add of two activations, Relu, Sigmoid, Tanh, LeakyRelu (alpha, default 0.01), Flatten and
 * Reshape that keep the batch dimension (the
 * same bytes: no operation; of a channels-last image, to_channels_first), Dropout of ratio 0, Conv
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
    "LeakyRelu, Flatten and Reshape keeping the batch dimension, Dropout of ratio 0, Conv (2-D, square kernel, symmetric pads, equal "      \
    "strides, dilation 1, group 1), MaxPool (kernel = stride, no pads), GlobalAveragePool, AveragePool over the "    \
    "whole image, BatchNormalization in training mode (of [N, C] or an image)"

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
    if (m->last[v]) return *out = g, VT_OK;
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
                           "or a batch norm's weight shared: not supported)",
                           n->name, og->v[n->in[1 + k]].name);
        m->g->param[p[k]].buffer = k >= 2;
    }
    const double eps = module_real((float)(ea ? ea->f : 1e-5), 0), mom = module_real((float)(ma ? ma->f : 0.9), 1);
    const int64_t at[VT_GLAYER_ATTRS] = {vt_graph_f64_bits(eps), vt_graph_f64_bits(mom), x->shape[1],
                                         x->rank == 4 ? x->shape[2] : 0, x->rank == 4 ? x->shape[3] : 0};
    *out = vt_graph_layer(m->g, VT_GL_BATCHNORM, nm, 1, &xin, 4, p, at, cols, &m->bad);
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
    const vt_og_value *yv = &og->v[y];
    VT_RETURN_ERROR_IF(yv->rank < 1 || yv->shape[0] != og->v[og->inputs[0]].shape[0] || example_elems(yv) < 1 ||
                           example_elems(yv) > (1 << 30),
                       VT_ERR_ARG, "model: node %s (%s): its output %s does not keep the batch as its first dimension",
                       n->name, n->op, yv->name);
    const uint32_t cols = (uint32_t)example_elems(yv);
    uint32_t x, x1, out = NONE;
    if (!strcmp(n->op, "Flatten") || !strcmp(n->op, "Reshape") ||
        (!strcmp(n->op, "Dropout") && (n->n_in < 2 || n->in[1] == NONE || !og->v[n->in[1]].is_const ||
                                       *(const float *)og->v[n->in[1]].data == 0.0f))) {
        VT_FORWARD_IF_ERROR(act_of(m, n, n->in[0], &x));
        VT_RETURN_ERROR_IF(!strcmp(n->op, "Dropout") && n->n_in >= 2 && n->in[1] == NONE, VT_ERR_ARG,
                           "model: node %s (Dropout): its ratio is not given", n->name);
        VT_RETURN_ERROR_IF(cols != m->cols[n->in[0]], VT_ERR_ARG, "model: node %s (%s) changes the example's size",
                           n->name, n->op);
        const uint32_t *q = m->hwc[n->in[0]];
        const vt_og_value *xv = &og->v[n->in[0]];
        const int same_shape = n->op[0] == 'D' || (xv->rank == yv->rank &&
                                                  !memcmp(xv->shape, yv->shape, yv->rank * sizeof *yv->shape));
        if (m->last[n->in[0]] && !same_shape && (uint64_t)q[0] * q[1] > 1) {
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
        const vt_og_value *a = &og->v[n->in[0]], *w = &og->v[n->in[1]];
        VT_RETURN_ERROR_IF(a->rank != 2 || w->rank != 2, VT_ERR_ARG,
                           "model: node %s (%s): a product of a [N, K] activation by a [K, M] weight is supported, "
                           "not ranks %u and %u",
                           n->name, n->op, a->rank, w->rank);
        const int64_t tB = tb ? tb->i : 0, K = a->shape[1], N = tB ? w->shape[0] : w->shape[1];
        VT_RETURN_ERROR_IF((tB ? w->shape[1] : w->shape[0]) != K || N != (int64_t)cols, VT_ERR_ARG,
                           "model: node %s (%s): the weight %s does not fit the activation", n->name, n->op, w->name);
        uint32_t p[2], np = 1;
        VT_FORWARD_IF_ERROR(param_of(m, n, n->in[1], &p[0]));
        uint32_t bias = gemm && n->n_in > 2 ? n->in[2] : NONE, fused = NONE;
        if (!gemm) { /* MatMul + Add(bias): one Linear */
            uint32_t r = sole_reader(og, j, y);
            if (r != NONE && !strcmp(og->node[r].op, "Add") && og->node[r].n_in == 2) {
                for (uint32_t i = 0; i < 2; i++)
                    if (og->node[r].in[i] == y && is_bias(og, og->node[r].in[1 - i], cols))
                        bias = og->node[r].in[1 - i], fused = r;
            }
        }
        if (bias != NONE) {
            VT_RETURN_ERROR_IF(!is_bias(og, bias, cols), VT_ERR_ARG,
                               "model: node %s (%s): its bias is not a weight of %u values", n->name, n->op, cols);
            VT_FORWARD_IF_ERROR(param_of(m, n, bias, &p[1]));
            np = 2;
        }
        out = vt_graph_layer(m->g, VT_GL_LINEAR, nm, 1, &x, np, p, (const int64_t[VT_GLAYER_ATTRS]){tB ? 1 : 0}, cols,
                             &m->bad);
        if (fused != NONE) { /* the Add's output is this layer's */
            m->done[fused] = 1;
            m->val[og->node[fused].out[0]] = out, m->cols[og->node[fused].out[0]] = cols;
        }
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
    VT_RETURN_ERROR_IF(in->dtype != VT_OG_F32 || in->rank < 2 || example_elems(in) > (1 << 30), VT_ERR_ARG,
                       "model: the input %s is not float32 [N, ...]", in->name);
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
    VT_RETURN_ERROR_IF(m->val[o] == NONE || m->val[o] == 0 || og->v[o].rank != 2 || m->last[o], VT_ERR_ARG,
                       "model: the output %s is not the logits [N, classes] computed from the input", og->v[o].name);
    m->g->out = m->val[o], m->g->loss = VT_GLOSS_XENT;
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
