/* vt_cert_onnx.c - an ONNX file as a network the bounds read (docs/certify.md "ONNX and VNN-LIB"):
 * read through the C structures protoc-c generates from Debian's onnx.proto (arch/onnx.cmake's
 * vt_onnx_pb) and libprotobuf-c; no decoder of our own. Supported: one input, a chain of
 * Sub/Div by constants (the input's normalisation, before the first linear layer), Flatten/Reshape
 * (no-ops on a vector), Gemm (alpha = beta = 1, transA 0, transB 0/1) or MatMul with an optional
 * bias (Gemm's C or one Add of a constant), Relu between linear layers; Y is the graph's first
 * output (a linear layer's); a further output only as a Softmax of Y (the project's export writes
 * logits and probs). Float32 initializers (raw_data or float_data, lengths checked) or Constant
 * nodes. A file with any convolutional operator (Conv, BatchNormalization, a pool, an Add of two
 * values) is read instead into the layer graph of vt_cert_graph.h by its tensor names, channels-first
 * (vt_cert_onnx_read_any, walk_graph; docs/certify.md "Convolutional networks from ONNX"). Anything
 * else: VT_ERR_UNSUPPORTED naming the node and its operator; bytes that are not a model: VT_ERR_FORMAT. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../arch/vt_onnx_graph.h"
#include "../common/vt_bytes.h"
#include "../common/vt_hash.h"
#include "vt_cert.h"
#include "vt_cert_graph.h"
#include "vt_cert_int.h"

#ifndef VT_HAVE_ONNX

int vt_cert_onnx_supported(void) { return 0; }

vt_err vt_cert_onnx_read_any(const char *path, vt_cert_onnx *o, vt_cert_graph **g, uint8_t sha256[32])
{
    if (g) *g = NULL;
    return vt_cert_onnx_read(path, o, sha256);
}

vt_err vt_cert_onnx_read(const char *path, vt_cert_onnx *o, uint8_t sha256[32])
{
    (void)sha256;
    memset(o, 0, sizeof *o);
    return vt_set_error(VT_ERR_UNSUPPORTED, "%s: this auditor was built without ONNX support", path);
}

#else
#include "onnx.pb-c.h"

#define VT_CERT_ONNX_MAX_BYTES ((size_t)1 << 31)

int vt_cert_onnx_supported(void) { return 1; }

typedef struct {
    const Onnx__GraphProto *g;
    const Onnx__TensorProto **cst; /* Constant nodes' tensors, by node index */
    vt_cert_onnx *o;
} gctx;

static const char *nname(const Onnx__NodeProto *n) { return n->name && *n->name ? n->name : "(unnamed)"; }

/* The constant named name: an initializer or a Constant node's value; NULL if none. */
static const Onnx__TensorProto *constant(const gctx *c, const char *name)
{
    for (size_t i = 0; i < c->g->n_initializer; i++)
        if (c->g->initializer[i]->name && strcmp(c->g->initializer[i]->name, name) == 0) return c->g->initializer[i];
    for (size_t i = 0; i < c->g->n_node; i++)
        if (c->cst[i] && c->g->node[i]->n_output == 1 && strcmp(c->g->node[i]->output[0], name) == 0) return c->cst[i];
    return NULL;
}

/* A float32 constant's values into *out (malloc'd: the caller frees it, also on an error), decoded by
 * the ONNX front-end's vt_og_tensor_decode (arch/vt_onnx_graph.h: raw_data or float_data, lengths
 * checked against the dimensions); finite values only. */
static vt_err floats_tmp(const Onnx__TensorProto *t, const char *what, float **out, size_t *n)
{
    *out = NULL, *n = 0;
    VT_RETURN_ERROR_IF(t->has_data_location && t->data_location != ONNX__TENSOR_PROTO__DATA_LOCATION__DEFAULT,
                       VT_ERR_UNSUPPORTED, "ONNX: %s: external data is not supported", what);
    VT_RETURN_ERROR_IF(!t->has_data_type || t->data_type != ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, VT_ERR_UNSUPPORTED,
                       "ONNX: %s: data type %d (supported: float32, 1)", what, t->has_data_type ? (int)t->data_type : 0);
    vt_og_dtype dt;
    uint32_t rank;
    int64_t shape[VT_OG_MAX_RANK];
    void *v = NULL;
    vt_err e = vt_og_tensor_decode(t, what, &dt, &rank, shape, &v, n);
    if (e) return vt_error_prefix(e == VT_ERR_ARG ? VT_ERR_UNSUPPORTED : e, "ONNX");
    *out = v;
    for (size_t i = 0; i < *n; i++)
        VT_RETURN_ERROR_IF(!isfinite((*out)[i]), VT_ERR_FORMAT, "ONNX: %s: value %zu is not finite", what, i);
    return VT_OK;
}

/* A float32 constant's values (owned by o's store). */
static vt_err floats(gctx *c, const Onnx__TensorProto *t, const char *what, float **out, size_t *n)
{
    VT_RETURN_ERROR_IF(c->o->n_store >= VT_CERT_ONNX_MAX_STORE, VT_ERR_LIMIT, "ONNX: too many constants");
    vt_err e = floats_tmp(t, what, out, n);
    if (*out) c->o->store[c->o->n_store++] = *out;
    return e;
}

/* Every attribute of n is in the list allowed (NULL-terminated). */
static vt_err attrs_only(const Onnx__NodeProto *n, const char *const *allowed)
{
    for (size_t i = 0; i < n->n_attribute; i++) {
        const char *a = n->attribute[i]->name ? n->attribute[i]->name : "";
        int ok = 0;
        for (const char *const *p = allowed; *p; p++) ok |= strcmp(*p, a) == 0;
        VT_RETURN_ERROR_IF(!ok, VT_ERR_UNSUPPORTED, "ONNX node %s (%s): attribute \"%s\" is not supported", nname(n),
                           n->op_type, a);
    }
    return VT_OK;
}

static const Onnx__AttributeProto *attr(const Onnx__NodeProto *n, const char *name) { return vt_og_proto_attr(n, name); }

static vt_err attr_int(const Onnx__NodeProto *n, const char *name, int64_t dflt, int64_t *v)
{
    const Onnx__AttributeProto *a = attr(n, name);
    *v = dflt;
    if (!a) return VT_OK;
    VT_RETURN_ERROR_IF(a->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT, VT_ERR_FORMAT,
                       "ONNX node %s (%s): attribute %s is not an integer", nname(n), n->op_type, name);
    *v = a->i;
    return VT_OK;
}

static vt_err attr_float(const Onnx__NodeProto *n, const char *name, float *v)
{
    const Onnx__AttributeProto *a = attr(n, name);
    *v = 1;
    if (!a) return VT_OK;
    VT_RETURN_ERROR_IF(a->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT, VT_ERR_FORMAT,
                       "ONNX node %s (%s): attribute %s is not a float", nname(n), n->op_type, name);
    *v = a->f;
    return VT_OK;
}

/* The one graph input that is not an initializer: its dimensions after the batch (dims[0..nd-1], at
 * most 4) and their product d. */
static vt_err input_shape(const gctx *c, const Onnx__ValueInfoProto **inp, uint64_t *dims, size_t *nd, uint64_t *dp)
{
    const Onnx__GraphProto *g = c->g;
    const Onnx__ValueInfoProto *in = NULL;
    uint64_t d = 1;
    *nd = 0;
    for (size_t i = 0; i < g->n_input; i++) {
        if (g->input[i]->name && constant(c, g->input[i]->name)) continue;
        VT_RETURN_ERROR_IF(in, VT_ERR_UNSUPPORTED, "ONNX: more than one input (%s, %s)", in->name, g->input[i]->name);
        in = g->input[i];
    }
    VT_RETURN_ERROR_IF(!in || !in->name, VT_ERR_FORMAT, "ONNX: the graph has no input");
    const Onnx__TypeProto *ty = in->type;
    VT_RETURN_ERROR_IF(!ty || ty->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !ty->tensor_type ||
                           !ty->tensor_type->shape,
                       VT_ERR_UNSUPPORTED, "ONNX: input %s is not a tensor of a known shape", in->name);
    VT_RETURN_ERROR_IF(ty->tensor_type->elem_type != ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, VT_ERR_UNSUPPORTED,
                       "ONNX: input %s has data type %d (supported: float32, 1)", in->name, (int)ty->tensor_type->elem_type);
    const Onnx__TensorShapeProto *sh = ty->tensor_type->shape;
    for (size_t i = 0; i < sh->n_dim; i++) {
        const Onnx__TensorShapeProto__Dimension *dm = sh->dim[i];
        int known = dm->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE && dm->dim_value > 0;
        if (i == 0 && sh->n_dim >= 2 && (!known || dm->dim_value == 1)) continue; /* the batch: one example */
        VT_RETURN_ERROR_IF(!known, VT_ERR_UNSUPPORTED, "ONNX: input %s: dimension %zu is dynamic (supported: the batch only)",
                           in->name, i);
        VT_RETURN_ERROR_IF(i == 0 && sh->n_dim >= 2, VT_ERR_UNSUPPORTED, "ONNX: input %s: a batch of %lld", in->name,
                           (long long)dm->dim_value);
        d *= (uint64_t)dm->dim_value;
        VT_RETURN_ERROR_IF(d > VT_CERT_MAX_WIDTH || *nd >= 4, VT_ERR_UNSUPPORTED, "ONNX: input %s: more than %u elements or "
                           "4 dimensions", in->name, VT_CERT_MAX_WIDTH);
        dims[(*nd)++] = (uint64_t)dm->dim_value;
    }
    *inp = in, *dp = d;
    return VT_OK;
}

static vt_err flatten_attrs(const Onnx__NodeProto *n)
{
    int64_t ax;
    VT_FORWARD_IF_ERROR(attrs_only(n, (const char *const[]){"axis", NULL}));
    VT_FORWARD_IF_ERROR(attr_int(n, "axis", 1, &ax));
    VT_RETURN_ERROR_IF(ax != 0 && ax != 1, VT_ERR_UNSUPPORTED, "ONNX node %s (Flatten): axis %lld", nname(n), (long long)ax);
    return VT_OK;
}

/* Reshape(value, constant int64 shape) to a vector of width values */
static vt_err reshape_vec(const Onnx__NodeProto *n, const Onnx__TensorProto *k1, uint32_t width)
{
    int64_t az;
    VT_FORWARD_IF_ERROR(attrs_only(n, (const char *const[]){"allowzero", NULL}));
    VT_FORWARD_IF_ERROR(attr_int(n, "allowzero", 0, &az));
    VT_RETURN_ERROR_IF(n->n_input != 2 || !k1 || az || k1->data_type != ONNX__TENSOR_PROTO__DATA_TYPE__INT64,
                       VT_ERR_UNSUPPORTED, "ONNX node %s (Reshape): supported with a constant int64 shape", nname(n));
    size_t ne = k1->has_raw_data ? k1->raw_data.len / 8 : k1->n_int64_data;
    VT_RETURN_ERROR_IF(k1->has_raw_data && k1->raw_data.len % 8, VT_ERR_FORMAT, "ONNX node %s (Reshape): shape bytes",
                       nname(n));
    /* a row vector [1, ..., 1, width]: 1 (or the one -1) before the last entry, width (or -1) last; a 0
     * (copy the input's dimension) or width elsewhere would make a column or another shape, which the
     * nodes after it (a broadcast Add, a MatMul) would read as another network */
    int neg = 0, ok = ne >= 1;
    for (size_t q = 0; q < ne && ok; q++) {
        int64_t v = k1->has_raw_data ? (int64_t)vt_get_u64le(k1->raw_data.data + 8 * q) : k1->int64_data[q];
        neg += v == -1;
        ok = neg <= 1 && (v == -1 || (q + 1 < ne ? v == 1 : v == (int64_t)width));
    }
    VT_RETURN_ERROR_IF(!ok, VT_ERR_UNSUPPORTED,
                       "ONNX node %s (Reshape): to a shape other than a row vector [1, ..., %u] (-1 once)", nname(n),
                       width);
    return VT_OK;
}

static vt_err gemm_attrs(const Onnx__NodeProto *n, int64_t *tb)
{
    int64_t ta;
    float al, be;
    VT_FORWARD_IF_ERROR(attrs_only(n, (const char *const[]){"alpha", "beta", "transA", "transB", NULL}));
    VT_FORWARD_IF_ERROR(attr_int(n, "transA", 0, &ta));
    VT_FORWARD_IF_ERROR(attr_int(n, "transB", 0, tb));
    VT_FORWARD_IF_ERROR(attr_float(n, "alpha", &al));
    VT_FORWARD_IF_ERROR(attr_float(n, "beta", &be));
    VT_RETURN_ERROR_IF(ta != 0 || (*tb != 0 && *tb != 1) || al != 1 || be != 1, VT_ERR_UNSUPPORTED,
                       "ONNX node %s (Gemm): transA %lld, transB %lld, alpha %g, beta %g (supported: transA 0, "
                       "transB 0 or 1, alpha = beta = 1)", nname(n), (long long)ta, (long long)*tb, al, be);
    return VT_OK;
}

/* 1 when the constant t, broadcast (ONNX's numpy rule) against a value of dimensions vd[0..nv-1] (the
 * batch left out), leaves the value's shape, so that it is one value, one per element in the value's
 * own order or, with chan, one per channel [C, 1, 1] of an image: t's dimensions after its leading 1s are
 * all 1, the value's own after theirs, or [chan, 1, 1]. A constant of as many values in another shape
 * ([n, 1] against [1, n], [C, 1, 1, 1] against [1, C, H, W]) broadcasts to a larger tensor: another
 * network than the one read. */
static int same_shape(const Onnx__TensorProto *t, const uint64_t *vd, size_t nv, uint64_t chan)
{
    size_t a = 0, b = 0;
    while (a < t->n_dims && t->dims[a] == 1) a++;
    if (a == t->n_dims) return 1;
    while (b < nv && vd[b] == 1) b++;
    int eq = t->n_dims - a == nv - b;
    for (size_t i = 0; eq && i < nv - b; i++) eq = (uint64_t)t->dims[a + i] == vd[b + i];
    return eq || (chan && t->n_dims - a == 3 && (uint64_t)t->dims[a] == chan && t->dims[a + 1] == 1 && t->dims[a + 2] == 1);
}

/* A Sub / Div of the input by the constant k1: one value, one per element (width), or with HW > 0 one
 * per channel of a channels-first image (shape [C, 1, 1] or [1, C, 1, 1], C = width / HW), expanded. */
static vt_err norm_step(gctx *c, const Onnx__NodeProto *n, const Onnx__TensorProto *k1, uint32_t width, uint32_t HW,
                        const uint64_t *vd, size_t nv)
{
    vt_cert_onnx *o = c->o;
    const char *op = n->op_type;
    VT_RETURN_ERROR_IF(o->n_norm >= VT_CERT_ONNX_MAX_NORM, VT_ERR_UNSUPPORTED, "ONNX node %s (%s): more than %u "
                       "normalisation steps", nname(n), op, VT_CERT_ONNX_MAX_NORM);
    char what[300];
    snprintf(what, sizeof what, "node %s (%s) constant %s", nname(n), op, n->input[1]);
    float *v;
    size_t k;
    VT_FORWARD_IF_ERROR(floats(c, k1, what, &v, &k));
    int per_channel = HW > 1 && k == width / HW && k > 1 && k1->n_dims >= 3 && k1->n_dims <= 4 &&
                      k1->dims[k1->n_dims - 1] == 1 && k1->dims[k1->n_dims - 2] == 1;
    VT_RETURN_ERROR_IF((k != 1 && k != width && !per_channel) || !same_shape(k1, vd, nv, per_channel ? k : 0),
                       VT_ERR_UNSUPPORTED,
                       "ONNX %s: %zu values of %zu dimensions (supported: one, one per input element in the input's "
                       "shape, %u, or one per channel)", what, k, k1->n_dims, width);
    for (size_t q = 0; q < k && op[0] == 'D'; q++)
        VT_RETURN_ERROR_IF(v[q] == 0, VT_ERR_FORMAT, "ONNX %s: division by zero", what);
    if (per_channel) {
        VT_RETURN_ERROR_IF(o->n_store >= VT_CERT_ONNX_MAX_STORE, VT_ERR_LIMIT, "ONNX: too many constants");
        float *x = malloc((size_t)width * sizeof *x);
        VT_RETURN_ERROR_IF(!x, VT_ERR_NOMEM, "out of memory");
        o->store[o->n_store++] = x;
        for (uint32_t i = 0; i < width; i++) x[i] = v[i / HW];
        v = x, k = width;
    }
    o->norm_op[o->n_norm] = op[0], o->norm_c[o->n_norm] = v, o->norm_n[o->n_norm] = (uint32_t)k;
    o->n_norm++;
    return VT_OK;
}

enum { PH_NORM, PH_LIN, PH_BIASED, PH_RELU };

/* A linear layer: W [in, out] from B (transposed when transB), into layer L + 1. */
static vt_err linear(gctx *c, const Onnx__NodeProto *n, const Onnx__TensorProto *B, int transB, uint32_t width)
{
    vt_cert_onnx *o = c->o;
    char what[300];
    snprintf(what, sizeof what, "node %s (%s) weight %s", nname(n), n->op_type, B->name ? B->name : "?");
    VT_RETURN_ERROR_IF(B->n_dims != 2, VT_ERR_UNSUPPORTED, "ONNX %s: %zu dimensions (supported: a matrix)", what, B->n_dims);
    float *w;
    size_t k;
    VT_FORWARD_IF_ERROR(floats(c, B, what, &w, &k));
    size_t in = (size_t)B->dims[transB ? 1 : 0], out = (size_t)B->dims[transB ? 0 : 1];
    VT_RETURN_ERROR_IF(in != width, VT_ERR_UNSUPPORTED, "ONNX %s: %zu inputs for a vector of %u", what, in, width);
    VT_RETURN_ERROR_IF(o->net.L >= VT_CERT_MAX_LAYERS, VT_ERR_UNSUPPORTED, "ONNX %s: more than %u linear layers", what,
                       VT_CERT_MAX_LAYERS);
    VT_RETURN_ERROR_IF(out < 1 || out > VT_CERT_MAX_WIDTH, VT_ERR_UNSUPPORTED, "ONNX %s: %zu outputs", what, out);
    if (transB) { /* [out, in] -> [in, out], replacing the file's order (floats stored it last) */
        float *t = malloc(in * out * sizeof *t);
        VT_RETURN_ERROR_IF(!t, VT_ERR_NOMEM, "out of memory");
        for (size_t i = 0; i < in; i++)
            for (size_t j = 0; j < out; j++) t[i * out + j] = w[j * in + i];
        free(w);
        o->store[o->n_store - 1] = w = t;
    }
    uint32_t L = ++o->net.L;
    o->net.n[L] = (uint32_t)out, o->net.W[L] = w, o->net.b[L] = NULL;
    return VT_OK;
}

static vt_err bias(gctx *c, const Onnx__NodeProto *n, const Onnx__TensorProto *t)
{
    vt_cert_onnx *o = c->o;
    char what[300];
    snprintf(what, sizeof what, "node %s (%s) bias %s", nname(n), n->op_type, t->name ? t->name : "?");
    float *b;
    size_t k;
    VT_FORWARD_IF_ERROR(floats(c, t, what, &b, &k));
    uint64_t vd = o->net.n[o->net.L];
    VT_RETURN_ERROR_IF(k != vd || !same_shape(t, &vd, 1, 0), VT_ERR_UNSUPPORTED,
                       "ONNX %s: %zu values of %zu dimensions for a vector of %u outputs", what, k, t->n_dims,
                       o->net.n[o->net.L]);
    o->net.b[o->net.L] = b;
    return VT_OK;
}

static vt_err walk(gctx *c)
{
    const Onnx__GraphProto *g = c->g;
    vt_cert_onnx *o = c->o;
    const Onnx__ValueInfoProto *in = NULL;
    uint64_t d = 1, dims[4];
    size_t nd = 0;
    VT_FORWARD_IF_ERROR(input_shape(c, &in, dims, &nd, &d));
    o->net.n[0] = (uint32_t)d;
    VT_RETURN_ERROR_IF(g->n_output < 1 || !g->output[0]->name, VT_ERR_FORMAT, "ONNX: the graph has no output");
    const char *yname = g->output[0]->name, *cur = in->name;
    int phase = PH_NORM;
    uint32_t width = (uint32_t)d;
    size_t nvd = nd; /* the value's dimensions (the batch left out): the input's, then a vector's */
    for (size_t i = 0; i < g->n_node; i++) {
        const Onnx__NodeProto *n = g->node[i];
        const char *op = n->op_type ? n->op_type : "";
        VT_RETURN_ERROR_IF(n->domain && *n->domain && strcmp(n->domain, "ai.onnx") != 0, VT_ERR_UNSUPPORTED,
                           "ONNX node %s: operator %s of domain %s is not supported", nname(n), op, n->domain);
        if (strcmp(op, "Constant") == 0) continue; /* its tensor: constant() */
        if (strcmp(op, "Softmax") == 0 && n->n_input == 1 && strcmp(n->input[0], yname) == 0 && n->n_output == 1) {
            int is_out = 0; /* only as a further graph output (the project's probs) */
            for (size_t k = 1; k < g->n_output; k++) is_out |= g->output[k]->name && !strcmp(g->output[k]->name, n->output[0]);
            VT_RETURN_ERROR_IF(!is_out, VT_ERR_UNSUPPORTED, "ONNX node %s (Softmax): supported only as a further output",
                               nname(n));
            continue;
        }
        VT_RETURN_ERROR_IF(n->n_input < 1 || n->n_output != 1, VT_ERR_UNSUPPORTED,
                           "ONNX node %s (%s): %zu inputs, %zu outputs (supported: a chain of one-output nodes)", nname(n), op,
                           n->n_input, n->n_output);
        const char *a0 = n->input[0], *a1 = n->n_input > 1 ? n->input[1] : NULL;
        const Onnx__TensorProto *k0 = constant(c, a0), *k1 = a1 ? constant(c, a1) : NULL;
        int reads = strcmp(a0, cur) == 0 || (a1 && strcmp(a1, cur) == 0 && strcmp(op, "Add") == 0);
        VT_RETURN_ERROR_IF(!reads, VT_ERR_UNSUPPORTED,
                           "ONNX node %s (%s): does not read the chain's value %s (supported: a feed-forward chain)",
                           nname(n), op, cur);
        if (!strcmp(op, "Flatten")) {
            VT_FORWARD_IF_ERROR(flatten_attrs(n));
            dims[0] = width, nvd = 1;
        } else if (!strcmp(op, "Reshape")) {
            VT_FORWARD_IF_ERROR(reshape_vec(n, k1, width));
            dims[0] = width, nvd = 1;
        } else if (!strcmp(op, "Sub") || !strcmp(op, "Div")) {
            VT_FORWARD_IF_ERROR(attrs_only(n, (const char *const[]){NULL}));
            VT_RETURN_ERROR_IF(phase != PH_NORM || n->n_input != 2 || !k1 || strcmp(a0, cur) != 0, VT_ERR_UNSUPPORTED,
                               "ONNX node %s (%s): supported only as the input's normalisation by a constant, before the "
                               "first linear layer", nname(n), op);
            VT_FORWARD_IF_ERROR(norm_step(c, n, k1, width, 0, dims, nvd));
        } else if (!strcmp(op, "Gemm")) {
            int64_t tb;
            VT_FORWARD_IF_ERROR(gemm_attrs(n, &tb));
            VT_RETURN_ERROR_IF(phase != PH_NORM && phase != PH_RELU, VT_ERR_UNSUPPORTED,
                               "ONNX node %s (Gemm): two linear layers without a Relu between", nname(n));
            VT_RETURN_ERROR_IF(!k1 || n->n_input > 3 || strcmp(a0, cur) != 0, VT_ERR_UNSUPPORTED,
                               "ONNX node %s (Gemm): supported as Gemm(value, constant B[, constant C])", nname(n));
            VT_FORWARD_IF_ERROR(linear(c, n, k1, (int)tb, width));
            width = o->net.n[o->net.L], phase = PH_LIN;
            if (n->n_input == 3 && *n->input[2]) {
                const Onnx__TensorProto *k2 = constant(c, n->input[2]);
                VT_RETURN_ERROR_IF(!k2, VT_ERR_UNSUPPORTED, "ONNX node %s (Gemm): C is not a constant", nname(n));
                VT_FORWARD_IF_ERROR(bias(c, n, k2));
                phase = PH_BIASED;
            }
        } else if (!strcmp(op, "MatMul")) {
            VT_FORWARD_IF_ERROR(attrs_only(n, (const char *const[]){NULL}));
            VT_RETURN_ERROR_IF(phase != PH_NORM && phase != PH_RELU, VT_ERR_UNSUPPORTED,
                               "ONNX node %s (MatMul): two linear layers without a Relu between", nname(n));
            VT_RETURN_ERROR_IF(n->n_input != 2 || !k1 || strcmp(a0, cur) != 0, VT_ERR_UNSUPPORTED,
                               "ONNX node %s (MatMul): supported as MatMul(value, constant matrix)", nname(n));
            VT_FORWARD_IF_ERROR(linear(c, n, k1, 0, width));
            width = o->net.n[o->net.L], phase = PH_LIN;
        } else if (!strcmp(op, "Add")) {
            VT_FORWARD_IF_ERROR(attrs_only(n, (const char *const[]){NULL}));
            const Onnx__TensorProto *kb = strcmp(a0, cur) == 0 ? k1 : k0;
            VT_RETURN_ERROR_IF(phase != PH_LIN || n->n_input != 2 || !kb, VT_ERR_UNSUPPORTED,
                               "ONNX node %s (Add): supported only as the bias of a linear layer without one", nname(n));
            VT_FORWARD_IF_ERROR(bias(c, n, kb));
            phase = PH_BIASED;
        } else if (!strcmp(op, "Relu")) {
            VT_FORWARD_IF_ERROR(attrs_only(n, (const char *const[]){NULL}));
            VT_RETURN_ERROR_IF(phase != PH_LIN && phase != PH_BIASED, VT_ERR_UNSUPPORTED,
                               "ONNX node %s (Relu): supported only after a linear layer", nname(n));
            phase = PH_RELU;
        } else
            return vt_set_error(VT_ERR_UNSUPPORTED,
                                "ONNX node %s: operator %s is not supported (supported: Gemm, MatMul, Add, Relu, Flatten, "
                                "Reshape, Sub, Div, Constant)", nname(n), op);
        cur = n->output[0];
    }
    VT_RETURN_ERROR_IF(strcmp(cur, yname) != 0, VT_ERR_UNSUPPORTED, "ONNX: the output %s is not the end of the chain (%s)",
                       yname, cur);
    VT_RETURN_ERROR_IF(o->net.L < 1, VT_ERR_UNSUPPORTED, "ONNX: no linear layer");
    VT_RETURN_ERROR_IF(phase == PH_RELU, VT_ERR_UNSUPPORTED, "ONNX: the output %s is a Relu's (supported: a linear layer's)",
                       yname);
    for (size_t k = 1; k < g->n_output; k++) {
        int ok = 0;
        for (size_t i = 0; i < g->n_node; i++)
            ok |= !strcmp(g->node[i]->op_type ? g->node[i]->op_type : "", "Softmax") && g->node[i]->n_output == 1 &&
                  g->output[k]->name && !strcmp(g->node[i]->output[0], g->output[k]->name);
        VT_RETURN_ERROR_IF(!ok, VT_ERR_UNSUPPORTED, "ONNX: output %s (supported: one output, and a Softmax of it)",
                           g->output[k]->name ? g->output[k]->name : "?");
    }
    /* layers without a bias: zero (exact) */
    for (uint32_t k = 1; k <= o->net.L; k++)
        if (!o->net.b[k]) {
            VT_RETURN_ERROR_IF(o->n_store >= VT_CERT_ONNX_MAX_STORE, VT_ERR_LIMIT, "ONNX: too many constants");
            float *z = calloc(o->net.n[k], sizeof *z);
            VT_RETURN_ERROR_IF(!z, VT_ERR_NOMEM, "out of memory");
            o->store[o->n_store++] = z;
            o->net.b[k] = z;
        }
    return VT_OK;
}


/* ---------------------------------------------------------------- convolutional networks: the graph */

/* A value of the graph: its node and shape (an image C x H x W, channels-first, or a vector of C). */
typedef struct {
    const char *name;
    uint32_t node, C, H, W;
    int img;
    int raw; /* the input (or a no-op of it) before a normalisation step that followed: not the graph's node 0 */
} gval;

static int cnn_op(const gctx *c, const Onnx__NodeProto *n)
{
    const char *op = n->op_type ? n->op_type : "";
    if (!strcmp(op, "Conv") || !strcmp(op, "BatchNormalization") || !strcmp(op, "MaxPool") || !strcmp(op, "AveragePool") ||
        !strcmp(op, "GlobalAveragePool"))
        return 1;
    return !strcmp(op, "Add") && n->n_input == 2 && !constant(c, n->input[0]) && !constant(c, n->input[1]);
}

static const gval *gfind(const gval *v, uint32_t nv, const char *name)
{
    for (uint32_t i = nv; i-- > 0;)
        if (!strcmp(v[i].name, name)) return &v[i];
    return NULL;
}

static vt_err ints_attr(const Onnx__NodeProto *n, const char *name, size_t want, const int64_t *dflt, int64_t *v)
{
    const Onnx__AttributeProto *a = attr(n, name);
    for (size_t i = 0; i < want; i++) v[i] = dflt[i];
    if (!a) return VT_OK;
    VT_RETURN_ERROR_IF(a->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS || a->n_ints != want, VT_ERR_UNSUPPORTED,
                       "ONNX node %s (%s): attribute %s is not %zu integers (supported: 2-D)", nname(n), n->op_type, name,
                       want);
    for (size_t i = 0; i < want; i++) {
        VT_RETURN_ERROR_IF(a->ints[i] < 0 || a->ints[i] > 4096, VT_ERR_UNSUPPORTED, "ONNX node %s (%s): %s %lld", nname(n),
                           n->op_type, name, (long long)a->ints[i]);
        v[i] = a->ints[i];
    }
    return VT_OK;
}

static vt_err no_auto_pad(const Onnx__NodeProto *n)
{
    const Onnx__AttributeProto *a = attr(n, "auto_pad");
    VT_RETURN_ERROR_IF(a && (a->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING || a->s.len != 6 ||
                             memcmp(a->s.data, "NOTSET", 6) != 0),
                       VT_ERR_UNSUPPORTED, "ONNX node %s (%s): auto_pad (supported: NOTSET, explicit pads)", nname(n),
                       n->op_type);
    return VT_OK;
}

/* the constant input k of n as floats with exactly want values (tmp: freed by the caller) */
static vt_err const_in(const gctx *c, const Onnx__NodeProto *n, size_t k, size_t want, float **v)
{
    *v = NULL;
    const Onnx__TensorProto *t = k < n->n_input && *n->input[k] ? constant(c, n->input[k]) : NULL;
    VT_RETURN_ERROR_IF(!t, VT_ERR_UNSUPPORTED, "ONNX node %s (%s): input %zu is not a constant", nname(n), n->op_type, k);
    char what[300];
    snprintf(what, sizeof what, "node %s (%s) constant %s", nname(n), n->op_type, n->input[k]);
    size_t got;
    VT_FORWARD_IF_ERROR(floats_tmp(t, what, v, &got));
    VT_RETURN_ERROR_IF(got != want, VT_ERR_UNSUPPORTED, "ONNX %s: %zu values where the shapes need %zu", what, got, want);
    return VT_OK;
}

/* Conv(image, constant 4-D W[, constant B]): a convolution; r takes its output shape */
static vt_err gnode_conv(gctx *c, vt_cert_graph *gr, const Onnx__NodeProto *n, const gval *a, gval *r, uint32_t *id)
{
    float *w = NULL, *bias = NULL;
    vt_err e = VT_OK;
    int64_t ks[2] = {0, 0}, st[2] = {1, 1}, dl[2] = {1, 1}, pd[4] = {0, 0, 0, 0}, grp = 1;
    e = attrs_only(n, (const char *const[]){"kernel_shape", "strides", "pads", "dilations", "group", "auto_pad", NULL});
    if (!e) e = no_auto_pad(n);
    if (!e) e = attr_int(n, "group", 1, &grp);
    if (!e && grp != 1)
        e = vt_set_error(VT_ERR_UNSUPPORTED, "ONNX node %s (Conv): group %lld (supported: 1)", nname(n), (long long)grp);
    if (!e) e = ints_attr(n, "dilations", 2, (const int64_t[]){1, 1}, dl);
    if (!e && (dl[0] != 1 || dl[1] != 1))
        e = vt_set_error(VT_ERR_UNSUPPORTED, "ONNX node %s (Conv): dilations %lld, %lld (supported: 1)", nname(n),
                         (long long)dl[0], (long long)dl[1]);
    if (!e) e = ints_attr(n, "strides", 2, (const int64_t[]){1, 1}, st);
    if (!e) e = ints_attr(n, "pads", 4, (const int64_t[]){0, 0, 0, 0}, pd);
    const Onnx__TensorProto *W = n->n_input >= 2 ? constant(c, n->input[1]) : NULL;
    if (!e && (!a->img || !W || W->n_dims != 4 || n->n_input > 3))
        e = vt_set_error(VT_ERR_UNSUPPORTED, "ONNX node %s (Conv): supported as Conv(image, constant 4-D W[, constant B])",
                         nname(n));
    int64_t Co = e ? 0 : W->dims[0], kh = e ? 0 : W->dims[2], kw = e ? 0 : W->dims[3];
    if (!e && (W->dims[1] != a->C || Co < 1 || Co > 65536 || kh < 1 || kw < 1 || kh > a->H + pd[0] + pd[2] ||
               kw > a->W + pd[1] + pd[3] || st[0] < 1 || st[1] < 1))
        e = vt_set_error(VT_ERR_UNSUPPORTED, "ONNX node %s (Conv): weight [%lld, %lld, %lld, %lld] on an image %u x %u x %u",
                         nname(n), (long long)W->dims[0], (long long)W->dims[1], (long long)W->dims[2],
                         (long long)W->dims[3], a->C, a->H, a->W);
    if (!e) e = ints_attr(n, "kernel_shape", 2, (const int64_t[]){kh, kw}, ks);
    if (!e && (ks[0] != kh || ks[1] != kw))
        e = vt_set_error(VT_ERR_UNSUPPORTED, "ONNX node %s (Conv): kernel_shape disagrees with the weight", nname(n));
    if (!e) e = const_in(c, n, 1, (size_t)Co * a->C * kh * kw, &w);
    if (!e && n->n_input == 3 && *n->input[2]) e = const_in(c, n, 2, (size_t)Co, &bias);
    uint32_t pads[4] = {(uint32_t)pd[0], (uint32_t)pd[1], (uint32_t)pd[2], (uint32_t)pd[3]};
    if (!e)
        e = vt_cert_graph_conv2d(gr, a->node, a->C, a->H, a->W, (uint32_t)Co, (uint32_t)kh, (uint32_t)kw, (uint32_t)st[0],
                                 (uint32_t)st[1], pads, w, bias, id);
    if (!e)
        r->C = (uint32_t)Co, r->H = (a->H + pads[0] + pads[2] - (uint32_t)kh) / (uint32_t)st[0] + 1,
        r->W = (a->W + pads[1] + pads[3] - (uint32_t)kw) / (uint32_t)st[1] + 1;
    free(w), free(bias);
    return e;
}

/* BatchNormalization in inference form: an affine map per channel */
static vt_err gnode_bn(gctx *c, vt_cert_graph *gr, const Onnx__NodeProto *n, const gval *a, uint32_t *id)
{
    float *w = NULL, *bias = NULL, *t3 = NULL, *t4 = NULL;
    vt_err e = VT_OK;
    float eps = 1e-5f;
    int64_t tm = 0, sp = 1;
    e = attrs_only(n, (const char *const[]){"epsilon", "momentum", "training_mode", "spatial", NULL});
    if (!e && attr(n, "epsilon")) e = attr_float(n, "epsilon", &eps);
    if (!e) e = attr_int(n, "training_mode", 0, &tm);
    if (!e) e = attr_int(n, "spatial", 1, &sp);
    if (!e && (tm || sp != 1 || n->n_input != 5 || n->n_output != 1 || !(eps >= 0)))
        e = vt_set_error(VT_ERR_UNSUPPORTED, "ONNX node %s (BatchNormalization): supported in inference form (five "
                         "inputs, one output, training_mode 0, epsilon >= 0)", nname(n));
    /* X, scale, B, mean, var */
    if (!e) e = const_in(c, n, 1, a->C, &w);
    if (!e) e = const_in(c, n, 2, a->C, &bias);
    if (!e) e = const_in(c, n, 3, a->C, &t3);
    if (!e) e = const_in(c, n, 4, a->C, &t4);
    if (!e) e = vt_cert_graph_bn_chw(gr, a->node, a->C, a->img ? a->H * a->W : 1, t3, t4, w, bias, (double)eps, id);
    free(w), free(bias), free(t3), free(t4);
    return e;
}

/* Add of a constant: one value, one per element, or one per channel (a bias) */
static vt_err gnode_add_const(gctx *c, vt_cert_graph *gr, const Onnx__NodeProto *n, const gval *a, uint32_t *id)
{
    const uint32_t size = a->img ? a->C * a->H * a->W : a->C;
    float *bias = NULL, *t3 = NULL;
    vt_err e = VT_OK;
    e = attrs_only(n, (const char *const[]){NULL});
    const Onnx__TensorProto *k = constant(c, n->input[strcmp(n->input[0], a->name) == 0 ? 1 : 0]);
    size_t got = 0;
    char what[300];
    snprintf(what, sizeof what, "node %s (Add) constant %s", nname(n), k && k->name ? k->name : "?");
    if (!e && !k)
        e = vt_set_error(VT_ERR_UNSUPPORTED, "ONNX node %s (Add): reads %s, which is neither a value written before, "
                         "the input nor a constant", nname(n), n->input[strcmp(n->input[0], a->name) == 0 ? 1 : 0]);
    if (!e) e = floats_tmp(k, what, &t3, &got);
    uint64_t vd[3] = {a->C, a->H, a->W};
    if (!e && ((got != 1 && got != size && !(a->img && got == a->C && k->n_dims >= 3 && k->dims[k->n_dims - 1] == 1 &&
                                               k->dims[k->n_dims - 2] == 1)) ||
               !same_shape(k, vd, a->img ? 3 : 1, a->img ? a->C : 0)))
        e = vt_set_error(VT_ERR_UNSUPPORTED, "ONNX %s: %zu values for %u (supported: one, all, one per channel)", what,
                         got, size);
    if (!e && !(bias = malloc((size_t)size * sizeof *bias))) e = vt_set_error(VT_ERR_NOMEM, "out of memory");
    for (uint32_t j = 0; !e && j < size; j++) bias[j] = t3[got == 1 ? 0 : got == size ? j : j / (a->H * a->W)];
    if (!e) e = vt_cert_graph_bias(gr, a->node, bias, id);
    free(bias), free(t3);
    return e;
}

/* GlobalAveragePool, AveragePool, MaxPool over windows that tile the image; r takes the output shape */
static vt_err gnode_pool(vt_cert_graph *gr, const Onnx__NodeProto *n, const char *op, const gval *a, gval *r, uint32_t *id)
{
    vt_err e = VT_OK;
    int glob = op[0] == 'G', max = op[0] == 'M';
    int64_t ks[2] = {a->H, a->W}, st[2] = {1, 1}, pd[4] = {0, 0, 0, 0}, dl[2] = {1, 1}, cm = 0, cip = 0, so = 0;
    e = glob ? attrs_only(n, (const char *const[]){NULL})
             : attrs_only(n, (const char *const[]){"kernel_shape", "strides", "pads", "auto_pad", "ceil_mode",
                                                   "count_include_pad", "dilations", "storage_order", NULL});
    if (!e && !glob && !attr(n, "kernel_shape"))
        e = vt_set_error(VT_ERR_FORMAT, "ONNX node %s (%s): no kernel_shape", nname(n), op);
    if (!e) e = ints_attr(n, "kernel_shape", 2, ks, ks);
    if (!e) e = ints_attr(n, "strides", 2, (const int64_t[]){1, 1}, st);
    if (!e && glob) st[0] = ks[0], st[1] = ks[1];
    if (!e) e = ints_attr(n, "pads", 4, (const int64_t[]){0, 0, 0, 0}, pd);
    if (!e) e = ints_attr(n, "dilations", 2, (const int64_t[]){1, 1}, dl);
    if (!e) e = no_auto_pad(n);
    if (!e) e = attr_int(n, "ceil_mode", 0, &cm);
    if (!e) e = attr_int(n, "count_include_pad", 0, &cip);
    if (!e) e = attr_int(n, "storage_order", 0, &so);
    if (!e && !a->img) e = vt_set_error(VT_ERR_UNSUPPORTED, "ONNX node %s (%s): reads a vector", nname(n), op);
    if (!e && (ks[0] < 1 || ks[1] < 1 || st[0] != ks[0] || st[1] != ks[1] || pd[0] || pd[1] || pd[2] || pd[3] ||
               dl[0] != 1 || dl[1] != 1 || cm || so || a->H % ks[0] || a->W % ks[1]))
        e = vt_set_error(VT_ERR_UNSUPPORTED, "ONNX node %s (%s): kernel %lld x %lld, strides %lld x %lld on %u x %u "
                         "(supported: strides = kernel dividing the image, no pads, dilation 1, ceil_mode 0)",
                         nname(n), op, (long long)ks[0], (long long)ks[1], (long long)st[0], (long long)st[1], a->H,
                         a->W);
    if (!e) e = vt_cert_graph_pool_chw(gr, a->node, a->C, a->H, a->W, (uint32_t)ks[0], (uint32_t)ks[1], max, id);
    if (!e) r->H = a->H / (uint32_t)ks[0], r->W = a->W / (uint32_t)ks[1];
    return e;
}

/* Gemm(vector, constant matrix[, constant C]) or MatMul(vector, constant matrix): a linear layer */
static vt_err gnode_gemm(gctx *c, vt_cert_graph *gr, const Onnx__NodeProto *n, const gval *a, const char *op, gval *r, uint32_t *id)
{
    float *w = NULL, *bias = NULL, *t3 = NULL, *t4 = NULL;
    vt_err e = VT_OK;
    int64_t tb = 0;
    e = op[0] == 'G' ? gemm_attrs(n, &tb) : attrs_only(n, (const char *const[]){NULL});
    const Onnx__TensorProto *B = n->n_input >= 2 ? constant(c, n->input[1]) : NULL;
    if (!e && (a->img || !B || B->n_dims != 2 || n->n_input > (op[0] == 'G' ? 3u : 2u) || strcmp(n->input[0], a->name)))
        e = vt_set_error(VT_ERR_UNSUPPORTED, "ONNX node %s (%s): supported as %s(vector, constant matrix%s)", nname(n), op,
                         op, op[0] == 'G' ? "[, constant C]" : "");
    int64_t ni = e ? 0 : B->dims[tb ? 1 : 0], no = e ? 0 : B->dims[tb ? 0 : 1];
    if (!e && (ni != a->C || no < 1 || no > VT_CERT_MAX_WIDTH))
        e = vt_set_error(VT_ERR_UNSUPPORTED, "ONNX node %s (%s): a matrix of %lld inputs for a vector of %u", nname(n), op,
                         (long long)ni, a->C);
    if (!e) e = const_in(c, n, 1, (size_t)ni * no, &t3);
    if (!e && n->n_input == 3 && *n->input[2]) { /* C: one value per output, or one broadcast */
        const Onnx__TensorProto *k = constant(c, n->input[2]);
        size_t got = 0;
        if (!k) e = vt_set_error(VT_ERR_UNSUPPORTED, "ONNX node %s (Gemm): C is not a constant", nname(n));
        if (!e) e = floats_tmp(k, "Gemm C", &t4, &got);
        uint64_t vd = (uint64_t)no;
        if (!e && ((got != 1 && got != (size_t)no) || !same_shape(k, &vd, 1, 0)))
            e = vt_set_error(VT_ERR_UNSUPPORTED, "ONNX node %s (Gemm): C of %zu values for %lld outputs", nname(n), got,
                             (long long)no);
        if (!e && !(bias = malloc((size_t)no * sizeof *bias))) e = vt_set_error(VT_ERR_NOMEM, "out of memory");
        for (int64_t j = 0; !e && j < no; j++) bias[j] = t4[got == 1 ? 0 : j];
    }
    if (!e && !(w = malloc((size_t)ni * no * sizeof *w))) e = vt_set_error(VT_ERR_NOMEM, "out of memory");
    for (int64_t i = 0; !e && i < ni; i++)
        for (int64_t j = 0; j < no; j++) w[i * no + j] = tb ? t3[j * ni + i] : t3[i * no + j];
    if (!e) e = vt_cert_graph_linear(gr, a->node, (uint32_t)no, w, bias, id);
    if (!e) r->C = (uint32_t)no;
    free(w), free(bias), free(t3), free(t4);
    return e;
}

/* one node into the graph: *r receives the value it writes */
static vt_err gnode_of(gctx *c, vt_cert_graph *gr, const Onnx__NodeProto *n, const gval *a, const gval *b, gval *r)
{
    const char *op = n->op_type ? n->op_type : ""; /* a node without op_type: refused as an unknown operator */
    uint32_t id = 0, size = a->img ? a->C * a->H * a->W : a->C;
    *r = *a;
    vt_err e = VT_OK;
    if (!strcmp(op, "Conv")) {
        e = gnode_conv(c, gr, n, a, r, &id);
    } else if (!strcmp(op, "BatchNormalization")) {
        e = gnode_bn(c, gr, n, a, &id);
    } else if (!strcmp(op, "Relu")) {
        e = attrs_only(n, (const char *const[]){NULL});
        if (!e) e = vt_cert_graph_relu(gr, a->node, &id);
    } else if (!strcmp(op, "Add") && n->n_input != 2) {
        e = vt_set_error(VT_ERR_UNSUPPORTED, "ONNX node %s (Add): %zu inputs (supported: two)", nname(n), n->n_input);
    } else if (!strcmp(op, "Add") && b) {
        e = attrs_only(n, (const char *const[]){NULL});
        if (!e && (a->img != b->img || a->C != b->C || (a->img && (a->H != b->H || a->W != b->W))))
            e = vt_set_error(VT_ERR_UNSUPPORTED, "ONNX node %s (Add): operands of different shapes (supported: equal)",
                             nname(n));
        if (!e) e = vt_cert_graph_add(gr, a->node, b->node, &id);
    } else if (!strcmp(op, "Add")) {
        e = gnode_add_const(c, gr, n, a, &id);
    } else if (!strcmp(op, "GlobalAveragePool") || !strcmp(op, "AveragePool") || !strcmp(op, "MaxPool")) {
        e = gnode_pool(gr, n, op, a, r, &id);
    } else if (!strcmp(op, "Gemm") || !strcmp(op, "MatMul")) {
        e = gnode_gemm(c, gr, n, a, op, r, &id);
    } else if (!strcmp(op, "Flatten")) {
        e = flatten_attrs(n);
        id = a->node, r->C = size, r->img = 0, r->H = r->W = 1;
    } else if (!strcmp(op, "Reshape")) {
        e = reshape_vec(n, n->n_input == 2 ? constant(c, n->input[1]) : NULL, size);
        id = a->node, r->C = size, r->img = 0, r->H = r->W = 1;
    } else
        e = vt_set_error(VT_ERR_UNSUPPORTED,
                         "ONNX node %s: operator %s is not supported (supported: Conv, BatchNormalization, Relu, Add, "
                         "MaxPool, AveragePool, GlobalAveragePool, Flatten, Reshape, Gemm, MatMul, Sub, Div, Constant)",
                         nname(n), op);
    if (e == VT_ERR_ARG) e = vt_set_error(VT_ERR_UNSUPPORTED, "ONNX node %s (%s): %s", nname(n), op, vt_errmsg());
    r->node = id, r->name = n->output[0];
    return e;
}

static vt_err walk_graph(gctx *c, vt_cert_graph **out)
{
    const Onnx__GraphProto *g = c->g;
    vt_cert_onnx *o = c->o;
    const Onnx__ValueInfoProto *in = NULL;
    uint64_t d = 1, dims[4];
    size_t nd = 0;
    VT_FORWARD_IF_ERROR(input_shape(c, &in, dims, &nd, &d));
    VT_RETURN_ERROR_IF(nd != 3 && nd != 1, VT_ERR_UNSUPPORTED,
                       "ONNX: input %s: %zu dimensions after the batch (supported: an image C x H x W, or a vector)",
                       in->name, nd);
    VT_RETURN_ERROR_IF(g->n_output < 1 || !g->output[0]->name, VT_ERR_FORMAT, "ONNX: the graph has no output");
    o->net.n[0] = (uint32_t)d;
    gval *v = calloc(g->n_node + 1, sizeof *v);
    VT_RETURN_ERROR_IF(!v, VT_ERR_NOMEM, "out of memory");
    vt_cert_graph *gr = NULL;
    vt_err e = vt_cert_graph_new((uint32_t)d, &gr);
    if (!e) vt_cert_graph_set_sem(gr, VT_CERT_GRAPH_REAL);
    uint32_t nv = 1;
    v[0].name = in->name, v[0].node = 0, v[0].img = nd == 3;
    v[0].C = (uint32_t)dims[0], v[0].H = nd == 3 ? (uint32_t)dims[1] : 1, v[0].W = nd == 3 ? (uint32_t)dims[2] : 1;
    const char *yname = g->output[0]->name;
    int only_norm = 1; /* the nodes so far are the input's normalisation */
    for (size_t i = 0; i < g->n_node && !e; i++) {
        const Onnx__NodeProto *n = g->node[i];
        const char *op = n->op_type ? n->op_type : "";
        if (n->domain && *n->domain && strcmp(n->domain, "ai.onnx") != 0) {
            e = vt_set_error(VT_ERR_UNSUPPORTED, "ONNX node %s: operator %s of domain %s is not supported", nname(n), op,
                             n->domain);
            break;
        }
        if (!strcmp(op, "Constant")) continue;
        if (!strcmp(op, "Softmax") && n->n_input == 1 && !strcmp(n->input[0], yname) && n->n_output == 1) {
            int is_out = 0; /* only as a further graph output (the project's probs) */
            for (size_t k = 1; k < g->n_output; k++) is_out |= g->output[k]->name && !strcmp(g->output[k]->name, n->output[0]);
            if (!is_out) e = vt_set_error(VT_ERR_UNSUPPORTED, "ONNX node %s (Softmax): supported only as a further output", nname(n));
            continue;
        }
        if (n->n_input < 1 || n->n_output != 1) {
            e = vt_set_error(VT_ERR_UNSUPPORTED, "ONNX node %s (%s): %zu inputs, %zu outputs (supported: one output)",
                             nname(n), op, n->n_input, n->n_output);
            break;
        }
        const gval *a = gfind(v, nv, n->input[0]), *b = n->n_input > 1 ? gfind(v, nv, n->input[1]) : NULL;
        if (!a && b && !strcmp(op, "Add")) a = b, b = NULL; /* Add(constant, value) */
        if (!a) {
            e = vt_set_error(VT_ERR_UNSUPPORTED, "ONNX node %s (%s): reads %s, which is neither a value written before nor "
                             "the input", nname(n), op, n->input[0]);
            break;
        }
        if (a->raw || (b && b->raw)) { /* node 0 is the normalised input: the bounds know no other */
            e = vt_set_error(VT_ERR_UNSUPPORTED, "ONNX node %s (%s): reads %s, the input before its normalisation "
                             "(supported: a chain of Sub / Div whose result alone is read)", nname(n), op,
                             (a->raw ? a : b)->name);
            break;
        }
        if (!strcmp(op, "Sub") || !strcmp(op, "Div")) {
            const Onnx__TensorProto *k1 = n->n_input == 2 ? constant(c, n->input[1]) : NULL;
            e = attrs_only(n, (const char *const[]){NULL});
            if (!e && (!only_norm || a != &v[nv - 1] || a->node != 0 || !k1))
                e = vt_set_error(VT_ERR_UNSUPPORTED, "ONNX node %s (%s): supported only as the input's normalisation by a "
                                 "constant, before any other operator", nname(n), op);
            uint64_t vd[3] = {a->C, a->H, a->W};
            if (!e) e = norm_step(c, n, k1, (uint32_t)d, a->img ? a->H * a->W : 0, vd, a->img ? 3 : 1);
            for (uint32_t k = 0; !e && k < nv; k++) v[k].raw = 1; /* only the new value is the normalised input */
            if (!e) v[nv] = *a, v[nv].raw = 0, v[nv++].name = n->output[0];
            continue;
        }
        only_norm = 0;
        e = gnode_of(c, gr, n, a, b, &v[nv]);
        if (!e) nv++;
    }
    const gval *y = e ? NULL : gfind(v, nv, yname);
    if (!e && (!y || y->node != vt_cert_graph_n_nodes(gr) - 1 || y->node == 0))
        e = vt_set_error(VT_ERR_UNSUPPORTED, "ONNX: the output %s is not the last operator's value", yname);
    for (size_t k = 1; !e && k < g->n_output; k++) {
        int ok = 0;
        for (size_t i = 0; i < g->n_node; i++)
            ok |= !strcmp(g->node[i]->op_type ? g->node[i]->op_type : "", "Softmax") && g->node[i]->n_output == 1 &&
                  g->output[k]->name && !strcmp(g->node[i]->output[0], g->output[k]->name);
        if (!ok)
            e = vt_set_error(VT_ERR_UNSUPPORTED, "ONNX: output %s (supported: one output, and a Softmax of it)",
                             g->output[k]->name ? g->output[k]->name : "?");
    }
    free(v);
    if (e) vt_cert_graph_free(gr);
    else *out = gr;
    return e;
}

vt_err vt_cert_onnx_read_any(const char *path, vt_cert_onnx *o, vt_cert_graph **gr, uint8_t sha256[32])
{
    memset(o, 0, sizeof *o);
    if (gr) *gr = NULL;
    uint8_t *p = NULL;
    size_t n = 0;
    VT_FORWARD_IF_ERROR(vti_cert_read_file(path, VT_CERT_ONNX_MAX_BYTES, &p, &n));
    vt_err e = vt_sha256(p, n, sha256);
    Onnx__ModelProto *m = e ? NULL : onnx__model_proto__unpack(NULL, n, p);
    free(p);
    if (e) return e;
    VT_RETURN_ERROR_IF(!m, VT_ERR_FORMAT, "%s: not an ONNX model (the protobuf does not decode)", path);
    if (!m->graph) e = vt_set_error(VT_ERR_FORMAT, "%s: the model has no graph", path);
    gctx c = {m->graph, NULL, o};
    if (!e) {
        c.cst = calloc(m->graph->n_node ? m->graph->n_node : 1, sizeof *c.cst);
        if (!c.cst) e = vt_set_error(VT_ERR_NOMEM, "out of memory");
    }
    for (size_t i = 0; !e && i < m->graph->n_node; i++) {
        const Onnx__NodeProto *nd = m->graph->node[i];
        if (!nd->op_type || strcmp(nd->op_type, "Constant") != 0) continue;
        const Onnx__AttributeProto *a = attr(nd, "value");
        if (nd->n_attribute != 1 || !a || a->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR || !a->t ||
            nd->n_output != 1)
            e = vt_set_error(VT_ERR_UNSUPPORTED, "ONNX node %s (Constant): supported with one tensor attribute value",
                             nname(nd));
        else c.cst[i] = a->t;
    }
    int cnn = 0;
    for (size_t i = 0; !e && i < m->graph->n_node; i++) cnn |= cnn_op(&c, m->graph->node[i]);
    if (!e && cnn && !gr)
        e = vt_set_error(VT_ERR_UNSUPPORTED, "a convolutional network (read with vt_cert_onnx_read_any)");
    if (!e) e = cnn ? walk_graph(&c, gr) : walk(&c);
    free(c.cst);
    onnx__model_proto__free_unpacked(m, NULL);
    if (e) {
        vt_cert_onnx_free(o);
        return vt_error_prefix(e, "%s", path);
    }
    return VT_OK;
}

vt_err vt_cert_onnx_read(const char *path, vt_cert_onnx *o, uint8_t sha256[32])
{
    return vt_cert_onnx_read_any(path, o, NULL, sha256);
}

#endif

void vt_cert_onnx_drop_weights(vt_cert_onnx *o)
{
    for (uint32_t k = 1; k <= o->net.L && k <= VT_CERT_MAX_LAYERS; k++)
        for (uint32_t i = 0; i < o->n_store && o->net.W[k]; i++)
            if (o->store[i] == o->net.W[k]) free(o->store[i]), o->store[i] = NULL, o->net.W[k] = NULL;
}

void vt_cert_onnx_free(vt_cert_onnx *o)
{
    for (uint32_t i = 0; i < o->n_store; i++) free(o->store[i]);
    memset(o, 0, sizeof *o);
}
