/* vt_cert_onnx.c - an ONNX file as a network the bounds read (docs/certify.md "ONNX and VNN-LIB"):
 * read through the C structures protoc-c generates from Debian's onnx.proto (run/onnx.cmake's
 * vt_onnx_pb) and libprotobuf-c; no decoder of our own. Supported: one input, a chain of
 * Sub/Div by constants (the input's normalisation, before the first linear layer), Flatten/Reshape
 * (no-ops on a vector), Gemm (alpha = beta = 1, transA 0, transB 0/1) or MatMul with an optional
 * bias (Gemm's C or one Add of a constant), Relu between linear layers; Y is the graph's first
 * output (a linear layer's); a further output only as a Softmax of Y (the project's export writes
 * logits and probs). Float32 initializers (raw_data or float_data, lengths checked) or Constant
 * nodes. Anything else: VT_ERR_UNSUPPORTED naming the node and its operator; bytes that are not a
 * model: VT_ERR_FORMAT. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/vt_bytes.h"
#include "../common/vt_hash.h"
#include "vt_cert.h"
#include "vt_cert_int.h"

#ifndef VT_HAVE_ONNX

int vt_cert_onnx_supported(void) { return 0; }

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

static vt_err numel(const Onnx__TensorProto *t, const char *what, size_t *n)
{
    size_t k = 1;
    for (size_t i = 0; i < t->n_dims; i++) {
        VT_RETURN_ERROR_IF(t->dims[i] < 0 || t->dims[i] > (1 << 30) || (t->dims[i] && k > ((size_t)1 << 31) / (size_t)t->dims[i]),
                           VT_ERR_FORMAT, "ONNX: %s: dimension %lld", what, (long long)t->dims[i]);
        k *= (size_t)t->dims[i];
    }
    *n = k;
    return VT_OK;
}

/* A float32 constant's values (owned by o's store). */
static vt_err floats(gctx *c, const Onnx__TensorProto *t, const char *what, float **out, size_t *n)
{
    VT_FORWARD_IF_ERROR(numel(t, what, n));
    VT_RETURN_ERROR_IF(t->has_data_location && t->data_location != ONNX__TENSOR_PROTO__DATA_LOCATION__DEFAULT,
                       VT_ERR_UNSUPPORTED, "ONNX: %s: external data is not supported", what);
    VT_RETURN_ERROR_IF(!t->has_data_type || t->data_type != ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, VT_ERR_UNSUPPORTED,
                       "ONNX: %s: data type %d (supported: float32, 1)", what, t->has_data_type ? (int)t->data_type : 0);
    VT_RETURN_ERROR_IF(c->o->n_store >= VT_CERT_ONNX_MAX_STORE, VT_ERR_LIMIT, "ONNX: too many constants");
    float *v = malloc((*n ? *n : 1) * sizeof *v);
    VT_RETURN_ERROR_IF(!v, VT_ERR_NOMEM, "out of memory");
    c->o->store[c->o->n_store++] = v;
    if (t->has_raw_data && t->raw_data.len) {
        VT_RETURN_ERROR_IF(t->raw_data.len != *n * 4 || t->n_float_data, VT_ERR_FORMAT,
                           "ONNX: %s: raw_data holds %zu bytes for %zu float32 values", what, t->raw_data.len, *n);
        for (size_t i = 0; i < *n; i++) v[i] = vt_bits_f32(vt_get_u32le(t->raw_data.data + 4 * i));
    } else {
        VT_RETURN_ERROR_IF(t->n_float_data != *n, VT_ERR_FORMAT, "ONNX: %s: %zu float_data values for %zu elements", what,
                           t->n_float_data, *n);
        for (size_t i = 0; i < *n; i++) v[i] = t->float_data[i];
    }
    for (size_t i = 0; i < *n; i++)
        VT_RETURN_ERROR_IF(!isfinite(v[i]), VT_ERR_FORMAT, "ONNX: %s: value %zu is not finite", what, i);
    *out = v;
    return VT_OK;
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

static const Onnx__AttributeProto *attr(const Onnx__NodeProto *n, const char *name)
{
    for (size_t i = 0; i < n->n_attribute; i++)
        if (n->attribute[i]->name && strcmp(n->attribute[i]->name, name) == 0) return n->attribute[i];
    return NULL;
}

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
    if (transB) { /* [out, in] -> [in, out] */
        VT_RETURN_ERROR_IF(o->n_store >= VT_CERT_ONNX_MAX_STORE, VT_ERR_LIMIT, "ONNX: too many constants");
        float *t = malloc(in * out * sizeof *t);
        VT_RETURN_ERROR_IF(!t, VT_ERR_NOMEM, "out of memory");
        o->store[o->n_store++] = t;
        for (size_t i = 0; i < in; i++)
            for (size_t j = 0; j < out; j++) t[i * out + j] = w[j * in + i];
        w = t;
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
    VT_RETURN_ERROR_IF(k != o->net.n[o->net.L], VT_ERR_UNSUPPORTED, "ONNX %s: %zu values for %u outputs", what, k,
                       o->net.n[o->net.L]);
    o->net.b[o->net.L] = b;
    return VT_OK;
}

static vt_err walk(gctx *c)
{
    const Onnx__GraphProto *g = c->g;
    vt_cert_onnx *o = c->o;
    /* the input: the one graph input that is not an initializer */
    const Onnx__ValueInfoProto *in = NULL;
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
    uint64_t d = 1;
    for (size_t i = 0; i < sh->n_dim; i++) {
        const Onnx__TensorShapeProto__Dimension *dm = sh->dim[i];
        int known = dm->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE && dm->dim_value > 0;
        if (i == 0 && sh->n_dim >= 2 && (!known || dm->dim_value == 1)) continue; /* the batch: one example */
        VT_RETURN_ERROR_IF(!known, VT_ERR_UNSUPPORTED, "ONNX: input %s: dimension %zu is dynamic (supported: the batch only)",
                           in->name, i);
        VT_RETURN_ERROR_IF(i == 0 && sh->n_dim >= 2, VT_ERR_UNSUPPORTED, "ONNX: input %s: a batch of %lld", in->name,
                           (long long)dm->dim_value);
        d *= (uint64_t)dm->dim_value;
        VT_RETURN_ERROR_IF(d > VT_CERT_MAX_WIDTH, VT_ERR_UNSUPPORTED, "ONNX: input %s: more than %u elements", in->name,
                           VT_CERT_MAX_WIDTH);
    }
    o->net.n[0] = (uint32_t)d;
    VT_RETURN_ERROR_IF(g->n_output < 1 || !g->output[0]->name, VT_ERR_FORMAT, "ONNX: the graph has no output");
    const char *yname = g->output[0]->name, *cur = in->name;
    int phase = PH_NORM;
    uint32_t width = (uint32_t)d;
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
            int64_t ax;
            VT_FORWARD_IF_ERROR(attrs_only(n, (const char *const[]){"axis", NULL}));
            VT_FORWARD_IF_ERROR(attr_int(n, "axis", 1, &ax));
            VT_RETURN_ERROR_IF(ax != 0 && ax != 1, VT_ERR_UNSUPPORTED, "ONNX node %s (Flatten): axis %lld", nname(n),
                               (long long)ax);
        } else if (!strcmp(op, "Reshape")) {
            int64_t az;
            VT_FORWARD_IF_ERROR(attrs_only(n, (const char *const[]){"allowzero", NULL}));
            VT_FORWARD_IF_ERROR(attr_int(n, "allowzero", 0, &az));
            VT_RETURN_ERROR_IF(n->n_input != 2 || !k1 || az || k1->data_type != ONNX__TENSOR_PROTO__DATA_TYPE__INT64,
                               VT_ERR_UNSUPPORTED, "ONNX node %s (Reshape): supported with a constant int64 shape", nname(n));
            size_t ne = k1->has_raw_data ? k1->raw_data.len / 8 : k1->n_int64_data;
            VT_RETURN_ERROR_IF(k1->has_raw_data && k1->raw_data.len % 8, VT_ERR_FORMAT, "ONNX node %s (Reshape): shape bytes",
                               nname(n));
            int big = 0;
            for (size_t q = 0; q < ne; q++) {
                int64_t v = k1->has_raw_data ? (int64_t)vt_get_u64le(k1->raw_data.data + 8 * q) : k1->int64_data[q];
                if (v != 1 && v != -1 && v != 0) {
                    VT_RETURN_ERROR_IF(big || v != (int64_t)width, VT_ERR_UNSUPPORTED,
                                       "ONNX node %s (Reshape): to a shape other than a vector of %u", nname(n), width);
                    big = 1;
                }
            }
        } else if (!strcmp(op, "Sub") || !strcmp(op, "Div")) {
            VT_FORWARD_IF_ERROR(attrs_only(n, (const char *const[]){NULL}));
            VT_RETURN_ERROR_IF(phase != PH_NORM || n->n_input != 2 || !k1 || strcmp(a0, cur) != 0, VT_ERR_UNSUPPORTED,
                               "ONNX node %s (%s): supported only as the input's normalisation by a constant, before the "
                               "first linear layer", nname(n), op);
            VT_RETURN_ERROR_IF(o->n_norm >= VT_CERT_ONNX_MAX_NORM, VT_ERR_UNSUPPORTED, "ONNX node %s (%s): more than %u "
                               "normalisation steps", nname(n), op, VT_CERT_ONNX_MAX_NORM);
            char what[300];
            snprintf(what, sizeof what, "node %s (%s) constant %s", nname(n), op, a1);
            float *v;
            size_t k;
            VT_FORWARD_IF_ERROR(floats(c, k1, what, &v, &k));
            VT_RETURN_ERROR_IF(k != 1 && k != width, VT_ERR_UNSUPPORTED,
                               "ONNX %s: %zu values (supported: one, or one per input element, %u)", what, k, width);
            for (size_t q = 0; q < k && op[0] == 'D'; q++)
                VT_RETURN_ERROR_IF(v[q] == 0, VT_ERR_FORMAT, "ONNX %s: division by zero", what);
            o->norm_op[o->n_norm] = op[0], o->norm_c[o->n_norm] = v, o->norm_n[o->n_norm] = (uint32_t)k;
            o->n_norm++;
        } else if (!strcmp(op, "Gemm")) {
            int64_t ta, tb;
            float al, be;
            VT_FORWARD_IF_ERROR(attrs_only(n, (const char *const[]){"alpha", "beta", "transA", "transB", NULL}));
            VT_FORWARD_IF_ERROR(attr_int(n, "transA", 0, &ta));
            VT_FORWARD_IF_ERROR(attr_int(n, "transB", 0, &tb));
            VT_FORWARD_IF_ERROR(attr_float(n, "alpha", &al));
            VT_FORWARD_IF_ERROR(attr_float(n, "beta", &be));
            VT_RETURN_ERROR_IF(ta != 0 || (tb != 0 && tb != 1) || al != 1 || be != 1, VT_ERR_UNSUPPORTED,
                               "ONNX node %s (Gemm): transA %lld, transB %lld, alpha %g, beta %g (supported: transA 0, "
                               "transB 0 or 1, alpha = beta = 1)", nname(n), (long long)ta, (long long)tb, al, be);
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

vt_err vt_cert_onnx_read(const char *path, vt_cert_onnx *o, uint8_t sha256[32])
{
    memset(o, 0, sizeof *o);
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
    if (!e) e = walk(&c);
    free(c.cst);
    onnx__model_proto__free_unpacked(m, NULL);
    if (e) {
        vt_cert_onnx_free(o);
        return vt_error_prefix(e, "%s", path);
    }
    return VT_OK;
}

#endif

void vt_cert_onnx_free(vt_cert_onnx *o)
{
    for (uint32_t i = 0; i < o->n_store; i++) free(o->store[i]);
    memset(o, 0, sizeof *o);
}
