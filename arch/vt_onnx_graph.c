/* vt_onnx_graph.c - the front-end of the client's own model: ONNX bytes to a folded graph with
 * static shapes (vt_onnx_graph.h says what is read, folded and refused; docs/models.md "The client's
 * own model"). Decoded by libprotobuf-c through the structures protoc-c generates from Debian's
 * onnx.proto (arch/onnx.cmake); nothing here decodes protobuf by hand.
 *
 * One pass over the nodes in file order: each node's inputs are looked up by name (a hash table of
 * the names written so far), its operator's handler checks the attributes and the input shapes and
 * makes the outputs' dtypes and shapes; when the node folds (vt_onnx_graph.h "Folding") the same
 * handler computes the outputs' values, else the node is kept as a compute node. At the end the
 * values no compute node, input or output uses are dropped and the rest renumbered. Everything
 * allocated hangs off the graph, so that one vt_og_free releases a half-read graph too. */
#include "vt_onnx_graph.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/vt_bytes.h"
#include "../common/vt_hash.h"

size_t vt_og_dtype_size(vt_og_dtype t)
{
    switch (t) {
    case VT_OG_F32: case VT_OG_I32: return 4;
    case VT_OG_I64: case VT_OG_F64: return 8;
    case VT_OG_BOOL: return 1;
    }
    return 0;
}

const char *vt_og_dtype_name(vt_og_dtype t)
{
    switch (t) {
    case VT_OG_F32: return "f32";
    case VT_OG_I64: return "i64";
    case VT_OG_BOOL: return "bool";
    case VT_OG_F64: return "f64";
    case VT_OG_I32: return "i32";
    }
    return "?";
}

static void attr_free(vt_og_attr *a)
{
    free(a->name), free(a->ints), free(a->floats), free(a->s);
}

void vt_og_free(vt_og_graph *g)
{
    if (!g) return;
    for (uint32_t i = 0; g->v && i < g->n_values; i++) free(g->v[i].name), free(g->v[i].data);
    for (uint32_t i = 0; g->node && i < g->n_nodes; i++) {
        vt_og_node *n = &g->node[i];
        for (uint32_t k = 0; n->attr && k < n->n_attr; k++) attr_free(&n->attr[k]);
        free(n->name), free(n->op), free(n->in), free(n->out), free(n->attr);
    }
    free(g->v), free(g->node), free(g->inputs), free(g->outputs), free(g->producer);
    memset(g, 0, sizeof *g);
}

uint32_t vt_og_find(const vt_og_graph *g, const char *value_name)
{
    for (uint32_t i = 0; value_name && i < g->n_values; i++)
        if (g->v[i].name && strcmp(g->v[i].name, value_name) == 0) return i;
    return UINT32_MAX;
}

const vt_og_attr *vt_og_attr_get(const vt_og_node *n, const char *name)
{
    for (uint32_t i = 0; name && i < n->n_attr; i++)
        if (strcmp(n->attr[i].name, name) == 0) return &n->attr[i];
    return NULL;
}

/* ---------------------------------------------------------------- canonical form */

static vt_err put_str(vt_buf *b, const char *s)
{
    size_t n = s ? strlen(s) : 0;
    VT_RETURN_ERROR_IF(n > UINT32_MAX, VT_ERR_LIMIT, "canonical form: a string of %zu bytes", n);
    VT_FORWARD_IF_ERROR(vt_buf_u32le(b, (uint32_t)n));
    return vt_buf_append(b, s, n);
}

static vt_err put_ids(vt_buf *b, uint32_t n, const uint32_t *ids)
{
    VT_FORWARD_IF_ERROR(vt_buf_u32le(b, n));
    for (uint32_t i = 0; i < n; i++) VT_FORWARD_IF_ERROR(vt_buf_u32le(b, ids[i]));
    return VT_OK;
}

static vt_err put_attr(vt_buf *b, const vt_og_attr *a)
{
    VT_FORWARD_IF_ERROR(put_str(b, a->name));
    VT_FORWARD_IF_ERROR(vt_buf_u8(b, (uint8_t)a->type));
    switch (a->type) {
    case VT_OGA_INT: return vt_buf_u64le(b, (uint64_t)a->i);
    case VT_OGA_FLOAT: return vt_buf_u64le(b, vt_f64_bits(a->f));
    case VT_OGA_INTS: case VT_OGA_FLOATS:
        VT_RETURN_ERROR_IF(a->n > UINT32_MAX, VT_ERR_LIMIT, "canonical form: %zu attribute values", a->n);
        VT_FORWARD_IF_ERROR(vt_buf_u32le(b, (uint32_t)a->n));
        for (size_t k = 0; k < a->n; k++)
            VT_FORWARD_IF_ERROR(vt_buf_u64le(b, a->type == VT_OGA_INTS ? (uint64_t)a->ints[k] : vt_f64_bits(a->floats[k])));
        return VT_OK;
    case VT_OGA_STRING: return put_str(b, a->s);
    }
    VT_RETURN_ERROR(VT_ERR_INTERNAL, "canonical form: attribute %s of type %d", a->name, (int)a->type);
}

/* the constant's elements, each little-endian */
static vt_err put_data(vt_buf *b, const vt_og_value *v)
{
    size_t es = vt_og_dtype_size(v->dtype);
    VT_FORWARD_IF_ERROR(vt_buf_u64le(b, v->nbytes));
    const uint8_t *p = v->data;
    if (es == 1) return vt_buf_append(b, p, v->nbytes);
    for (size_t i = 0; i < v->nbytes / es; i++) {
        uint32_t x4;
        uint64_t x8;
        if (es == 4) memcpy(&x4, p + 4 * i, 4);
        else memcpy(&x8, p + 8 * i, 8);
        VT_FORWARD_IF_ERROR(es == 4 ? vt_buf_u32le(b, x4) : vt_buf_u64le(b, x8));
    }
    return VT_OK;
}

static vt_err canonical(const vt_og_graph *g, vt_buf *b)
{
    VT_FORWARD_IF_ERROR(vt_buf_append(b, "VTOG", 4));
    VT_FORWARD_IF_ERROR(vt_buf_u32le(b, 1));
    VT_FORWARD_IF_ERROR(vt_buf_u64le(b, (uint64_t)g->opset));
    VT_FORWARD_IF_ERROR(vt_buf_u32le(b, g->n_values));
    for (uint32_t i = 0; i < g->n_values; i++) {
        const vt_og_value *v = &g->v[i];
        uint8_t kind = v->is_input ? 1 : v->is_init ? 2 : v->is_const ? 3 : 0;
        VT_FORWARD_IF_ERROR(vt_buf_u8(b, kind));
        VT_FORWARD_IF_ERROR(vt_buf_u8(b, (uint8_t)v->dtype));
        VT_FORWARD_IF_ERROR(vt_buf_u8(b, (uint8_t)v->rank));
        for (uint32_t d = 0; d < v->rank; d++) VT_FORWARD_IF_ERROR(vt_buf_u64le(b, (uint64_t)v->shape[d]));
        if (kind == 1 || kind == 2) VT_FORWARD_IF_ERROR(put_str(b, v->name));
        if (kind == 3) VT_FORWARD_IF_ERROR(put_data(b, v));
    }
    VT_FORWARD_IF_ERROR(vt_buf_u32le(b, g->n_nodes));
    for (uint32_t i = 0; i < g->n_nodes; i++) {
        const vt_og_node *n = &g->node[i];
        VT_FORWARD_IF_ERROR(put_str(b, n->op));
        VT_FORWARD_IF_ERROR(vt_buf_u32le(b, n->n_attr));
        uint8_t done[64] = {0}; /* attributes by name: the smallest not yet written, n_attr times */
        VT_RETURN_ERROR_IF(n->n_attr > 64, VT_ERR_LIMIT, "canonical form: node %s has %u attributes", n->name, n->n_attr);
        for (uint32_t k = 0; k < n->n_attr; k++) {
            uint32_t best = UINT32_MAX;
            for (uint32_t j = 0; j < n->n_attr; j++)
                if (!done[j] && (best == UINT32_MAX || strcmp(n->attr[j].name, n->attr[best].name) < 0)) best = j;
            done[best] = 1;
            VT_FORWARD_IF_ERROR(put_attr(b, &n->attr[best]));
        }
        VT_FORWARD_IF_ERROR(put_ids(b, n->n_in, n->in));
        VT_FORWARD_IF_ERROR(put_ids(b, n->n_out, n->out));
    }
    VT_FORWARD_IF_ERROR(put_ids(b, g->n_inputs, g->inputs));
    return put_ids(b, g->n_outputs, g->outputs);
}

vt_err vt_og_canonical(const vt_og_graph *g, uint8_t **buf, size_t *len)
{
    vt_buf b;
    vt_buf_init(&b);
    *buf = NULL, *len = 0;
    vt_err e = canonical(g, &b);
    if (e) {
        vt_buf_free(&b);
        return e;
    }
    *buf = b.data, *len = b.len;
    return VT_OK;
}

static vt_err read_whole(const char *path, uint8_t **out, size_t *len)
{
    *out = NULL, *len = 0;
    FILE *f = fopen(path, "rb");
    VT_RETURN_ERROR_IF(!f, VT_ERR_IO, "%s: cannot open it", path);
    uint8_t *p = NULL;
    size_t n = 0, cap = 0;
    vt_err e = VT_OK;
    while (!e) {
        if (n == cap && cap >= VT_OG_MAX_BYTES) e = vt_set_error(VT_ERR_LIMIT, "%s: larger than %zu bytes", path, VT_OG_MAX_BYTES);
        if (!e && n == cap) {
            uint8_t *q = realloc(p, cap ? 2 * cap : 1 << 16);
            if (!q) e = vt_set_error(VT_ERR_NOMEM, "out of memory");
            else p = q, cap = cap ? 2 * cap : 1 << 16;
        }
        size_t got = e ? 0 : fread(p + n, 1, cap - n, f);
        n += got;
        if (!e && got == 0) {
            if (ferror(f)) e = vt_set_error(VT_ERR_IO, "%s: cannot read it", path);
            break;
        }
    }
    fclose(f);
    if (e) free(p);
    else *out = p, *len = n;
    return e;
}

#ifndef VT_HAVE_ONNX

vt_err vt_og_read(const uint8_t *bytes, size_t n, int64_t batch, vt_og_graph *g)
{
    (void)bytes, (void)n, (void)batch;
    memset(g, 0, sizeof *g);
    return vt_set_error(VT_ERR_UNSUPPORTED, "this program was built without ONNX support");
}

#else
#define VTI_NONE UINT32_MAX

/* the reader's state: the graph being built, the names written so far (open addressing: the name's
 * pointer into the decoded model and its value id), the node being read */
typedef struct {
    vt_og_graph *g;
    uint32_t cap_v, cap_n;
    const char **hname;
    uint32_t *hid, hcap, hcount;
    size_t const_bytes, fold_bytes;
    int fold;                   /* the node being read folds: its handler computes the outputs' values */
    int alias;                  /* the node is an Identity: its output is its input's value */
    const Onnx__NodeProto *n;   /* the node being read */
    int64_t opset;
} vti_og;

static uint64_t name_hash(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) h = (h ^ (uint8_t)*s) * 1099511628211ull;
    return h;
}

/* the slot of name: its entry, or the empty slot where it would go */
static uint32_t slot(const vti_og *c, const char *name)
{
    uint32_t m = c->hcap - 1, i = (uint32_t)name_hash(name) & m;
    while (c->hname[i] && strcmp(c->hname[i], name) != 0) i = (i + 1) & m;
    return i;
}

static uint32_t lookup(const vti_og *c, const char *name)
{
    uint32_t i = slot(c, name);
    return c->hname[i] ? c->hid[i] : VTI_NONE;
}

static vt_err bind(vti_og *c, const char *name, uint32_t id)
{
    uint32_t i = slot(c, name);
    VT_RETURN_ERROR_IF(c->hname[i], VT_ERR_FORMAT, "the value %s is written twice", name);
    VT_RETURN_ERROR_IF(c->hcount + 1 >= c->hcap / 2, VT_ERR_INTERNAL, "the name table is full");
    c->hname[i] = name, c->hid[i] = id, c->hcount++;
    return VT_OK;
}

static vt_og_value *V(const vti_og *c, uint32_t id) { return &c->g->v[id]; }

static int is_int(vt_og_dtype t) { return t == VT_OG_I64 || t == VT_OG_I32 || t == VT_OG_BOOL; }

static vt_err numel(uint32_t rank, const int64_t *shape, int64_t *n)
{
    int64_t k = 1;
    for (uint32_t d = 0; d < rank; d++) {
        VT_RETURN_ERROR_IF(shape[d] < 0 || shape[d] > VT_OG_MAX_DIM, VT_ERR_LIMIT,
                           "dimension %u is %lld (at most %lld)", d, (long long)shape[d], (long long)VT_OG_MAX_DIM);
        VT_RETURN_ERROR_IF(__builtin_mul_overflow(k, shape[d], &k) || k > VT_OG_MAX_ELEMS, VT_ERR_LIMIT,
                           "more than %lld elements", (long long)VT_OG_MAX_ELEMS);
    }
    *n = k;
    return VT_OK;
}

static int64_t nel(const vt_og_value *v)
{
    int64_t k = 1;
    for (uint32_t d = 0; d < v->rank; d++) k *= v->shape[d]; /* checked when the value was made */
    return k;
}

/* a new value (name not bound: the caller binds it); data zeroed when with_data */
static vt_err new_value(vti_og *c, const char *name, vt_og_dtype t, uint32_t rank, const int64_t *shape, int with_data,
                        uint32_t *id)
{
    int64_t n = 0;
    VT_RETURN_ERROR_IF(rank > VT_OG_MAX_RANK, VT_ERR_LIMIT, "value %s: rank %u (at most %d)", name, rank, VT_OG_MAX_RANK);
    vt_err e = numel(rank, shape, &n);
    if (e) return vt_error_prefix(e, "value %s", name);
    vt_og_graph *g = c->g;
    if (g->n_values == c->cap_v) {
        VT_RETURN_ERROR_IF(c->cap_v >= (1u << 24), VT_ERR_LIMIT, "more than %u values", 1u << 24);
        uint32_t nc = c->cap_v ? 2 * c->cap_v : 256;
        vt_og_value *nv = realloc(g->v, (size_t)nc * sizeof *nv);
        VT_RETURN_ERROR_IF(!nv, VT_ERR_NOMEM, "out of memory");
        g->v = nv, c->cap_v = nc;
    }
    vt_og_value *v = &g->v[g->n_values];
    memset(v, 0, sizeof *v);
    v->dtype = t, v->rank = rank;
    for (uint32_t d = 0; d < rank; d++) v->shape[d] = shape[d];
    v->name = strdup(name);
    VT_RETURN_ERROR_IF(!v->name, VT_ERR_NOMEM, "out of memory");
    g->n_values++; /* owned by the graph from here */
    if (with_data) {
        size_t es = vt_og_dtype_size(t);
        VT_RETURN_ERROR_IF(n > VT_OG_MAX_FOLD_ELEMS, VT_ERR_LIMIT, "value %s: a folded constant of %lld elements (at most %lld)",
                           name, (long long)n, (long long)VT_OG_MAX_FOLD_ELEMS);
        VT_RETURN_ERROR_IF(c->fold_bytes + (size_t)n * es > VT_OG_MAX_FOLD_BYTES, VT_ERR_LIMIT,
                           "value %s: the folded constants pass %zu bytes", name, VT_OG_MAX_FOLD_BYTES);
        v->data = calloc(n ? (size_t)n : 1, es);
        VT_RETURN_ERROR_IF(!v->data, VT_ERR_NOMEM, "out of memory");
        v->nbytes = (size_t)n * es, v->is_const = 1;
        c->fold_bytes += v->nbytes;
    }
    *id = g->n_values - 1;
    return VT_OK;
}

/* ---------------------------------------------------------------- elements */

static double getf(const vt_og_value *v, int64_t i)
{
    switch (v->dtype) {
    case VT_OG_F32: return ((const float *)v->data)[i];
    case VT_OG_F64: return ((const double *)v->data)[i];
    case VT_OG_I64: return (double)((const int64_t *)v->data)[i];
    case VT_OG_I32: return ((const int32_t *)v->data)[i];
    case VT_OG_BOOL: return ((const uint8_t *)v->data)[i];
    }
    return 0;
}

static int64_t geti(const vt_og_value *v, int64_t i)
{
    switch (v->dtype) {
    case VT_OG_I64: return ((const int64_t *)v->data)[i];
    case VT_OG_I32: return ((const int32_t *)v->data)[i];
    case VT_OG_BOOL: return ((const uint8_t *)v->data)[i];
    default: return 0; /* floats: the callers convert them through getf */
    }
}

/* x rounded once to v's type (float32: RN of the double) */
static void setf(vt_og_value *v, int64_t i, double x)
{
    if (v->dtype == VT_OG_F32) ((float *)v->data)[i] = (float)x;
    else ((double *)v->data)[i] = x;
}

/* x into an integer value; VT_ERR_FORMAT when an int32 cannot hold it */
static vt_err seti(vt_og_value *v, int64_t i, int64_t x)
{
    switch (v->dtype) {
    case VT_OG_I64: ((int64_t *)v->data)[i] = x; return VT_OK;
    case VT_OG_I32:
        VT_RETURN_ERROR_IF(x < INT32_MIN || x > INT32_MAX, VT_ERR_FORMAT, "%lld does not fit an int32", (long long)x);
        ((int32_t *)v->data)[i] = (int32_t)x;
        return VT_OK;
    case VT_OG_BOOL: ((uint8_t *)v->data)[i] = x != 0; return VT_OK;
    default: setf(v, i, (double)x); return VT_OK;
    }
}

static void copy_el(vt_og_value *o, int64_t j, const vt_og_value *a, int64_t i)
{
    size_t es = vt_og_dtype_size(o->dtype);
    memcpy((uint8_t *)o->data + (size_t)j * es, (const uint8_t *)a->data + (size_t)i * es, es);
}

/* the multi-index of element i of shape[0..rank) */
static void unravel(int64_t i, uint32_t rank, const int64_t *shape, int64_t *idx)
{
    for (uint32_t d = rank; d-- > 0;) {
        idx[d] = shape[d] ? i % shape[d] : 0;
        i = shape[d] ? i / shape[d] : 0;
    }
}

/* the element of a read for the output's multi-index idx (rank r), a broadcast to it (numpy rules) */
static int64_t bcast_at(const vt_og_value *a, uint32_t r, const int64_t *idx)
{
    int64_t off = 0;
    for (uint32_t d = 0; d < a->rank; d++) {
        int64_t k = a->shape[d] == 1 ? 0 : idx[r - a->rank + d];
        off = off * a->shape[d] + k;
    }
    return off;
}

/* numpy broadcasting of the shapes of values ids[0..k) into rank, shape */
static vt_err bcast(const vti_og *c, const uint32_t *ids, uint32_t k, uint32_t *rank, int64_t *shape)
{
    uint32_t r = 0;
    for (uint32_t j = 0; j < k; j++) r = V(c, ids[j])->rank > r ? V(c, ids[j])->rank : r;
    for (uint32_t d = 0; d < r; d++) shape[d] = 1;
    for (uint32_t j = 0; j < k; j++) {
        const vt_og_value *a = V(c, ids[j]);
        for (uint32_t d = 0; d < a->rank; d++) {
            int64_t *o = &shape[r - a->rank + d], x = a->shape[d];
            VT_RETURN_ERROR_IF(*o != 1 && x != 1 && *o != x, VT_ERR_FORMAT,
                               "input %u (%s): dimension %lld does not broadcast against %lld", j, a->name,
                               (long long)x, (long long)*o);
            if (x != 1) *o = x;
        }
    }
    *rank = r;
    return VT_OK;
}

/* ---------------------------------------------------------------- attributes */

const Onnx__AttributeProto *vt_og_proto_attr(const Onnx__NodeProto *n, const char *name)
{
    for (size_t i = 0; i < n->n_attribute; i++)
        if (n->attribute[i]->name && strcmp(n->attribute[i]->name, name) == 0) return n->attribute[i];
    return NULL;
}

static const Onnx__AttributeProto *pattr(const Onnx__NodeProto *n, const char *name) { return vt_og_proto_attr(n, name); }

/* the node's attribute name when it is of type t (what names the type), NULL when absent */
static vt_err a_get(const vti_og *c, const char *name, Onnx__AttributeProto__AttributeType t, const char *what,
                    const Onnx__AttributeProto **a)
{
    *a = pattr(c->n, name);
    VT_RETURN_ERROR_IF(*a && (*a)->type != t, VT_ERR_FORMAT, "attribute %s is not %s", name, what);
    return VT_OK;
}

static vt_err a_int(const vti_og *c, const char *name, int64_t dflt, int64_t *v)
{
    const Onnx__AttributeProto *a;
    VT_FORWARD_IF_ERROR(a_get(c, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT, "an integer", &a));
    *v = a ? a->i : dflt;
    return VT_OK;
}

static vt_err a_float(const vti_og *c, const char *name, double dflt, double *v)
{
    const Onnx__AttributeProto *a;
    VT_FORWARD_IF_ERROR(a_get(c, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT, "a float", &a));
    *v = a ? a->f : dflt;
    return VT_OK;
}

/* an ints attribute of at most max values into v[], *k of them (dflt_k copies of dflt when absent) */
static vt_err a_ints(const vti_og *c, const char *name, size_t max, int64_t dflt, size_t dflt_k, int64_t *v, size_t *k)
{
    const Onnx__AttributeProto *a;
    VT_FORWARD_IF_ERROR(a_get(c, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS, "a list of integers", &a));
    if (!a) {
        for (size_t i = 0; i < dflt_k; i++) v[i] = dflt;
        *k = dflt_k;
        return VT_OK;
    }
    VT_RETURN_ERROR_IF(a->n_ints > max, VT_ERR_FORMAT, "attribute %s has %zu values (at most %zu)", name, a->n_ints, max);
    for (size_t i = 0; i < a->n_ints; i++) v[i] = a->ints[i];
    *k = a->n_ints;
    return VT_OK;
}

/* the attribute's string is s (or absent) */
static vt_err a_str_is(const vti_og *c, const char *name, const char *want)
{
    const Onnx__AttributeProto *a;
    VT_FORWARD_IF_ERROR(a_get(c, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING, "a string", &a));
    if (!a) return VT_OK;
    VT_RETURN_ERROR_IF(a->s.len != strlen(want) || (a->s.len && memcmp(a->s.data, want, a->s.len) != 0), VT_ERR_ARG,
                       "attribute %s = \"%.*s\" (supported: %s)", name, (int)(a->s.len > 64 ? 64 : a->s.len),
                       a->s.data ? (const char *)a->s.data : "", want);
    return VT_OK;
}

/* an axis in [-r, r) (or [-r, r] with extra = 1) made non-negative */
static vt_err axis_of(int64_t ax, uint32_t r, int extra, const char *what, int64_t *out)
{
    int64_t lim = (int64_t)r + extra;
    VT_RETURN_ERROR_IF(ax < -lim || ax >= lim, VT_ERR_FORMAT, "%s %lld out of range for rank %u", what, (long long)ax, r);
    *out = ax < 0 ? ax + lim : ax;
    return VT_OK;
}

/* ---------------------------------------------------------------- handlers' helpers */

/* input k is present (k < nin, not omitted) */
static int has(const uint32_t *in, uint32_t nin, uint32_t k) { return k < nin && in[k] != VTI_NONE; }

static vt_err need(const uint32_t *in, uint32_t nin, uint32_t k)
{
    VT_RETURN_ERROR_IF(!has(in, nin, k), VT_ERR_FORMAT, "input %u is missing", k);
    return VT_OK;
}

/* input k must be known at import (a constant) */
static vt_err need_const(const vti_og *c, const uint32_t *in, uint32_t nin, uint32_t k, const char *what)
{
    VT_FORWARD_IF_ERROR(need(in, nin, k));
    VT_RETURN_ERROR_IF(!V(c, in[k])->is_const, VT_ERR_ARG,
                       "input %u (%s, %s) is not known at import (the front-end needs static shapes)", k, what,
                       V(c, in[k])->name);
    return VT_OK;
}

/* the integers of a constant int64/int32 vector (or scalar) input: at most max of them */
static vt_err const_ints(const vti_og *c, uint32_t id, const char *what, size_t max, int64_t *v, size_t *k)
{
    const vt_og_value *a = V(c, id);
    VT_RETURN_ERROR_IF(a->dtype != VT_OG_I64 && a->dtype != VT_OG_I32, VT_ERR_FORMAT, "%s (%s) is %s, not integers", what,
                       a->name, vt_og_dtype_name(a->dtype));
    VT_RETURN_ERROR_IF(a->rank > 1, VT_ERR_FORMAT, "%s (%s) has rank %u (a vector)", what, a->name, a->rank);
    int64_t n = nel(a);
    VT_RETURN_ERROR_IF(n > (int64_t)max, VT_ERR_FORMAT, "%s (%s) has %lld values (at most %zu)", what, a->name,
                       (long long)n, max);
    for (int64_t i = 0; i < n; i++) v[i] = geti(a, i);
    *k = (size_t)n;
    return VT_OK;
}

/* output k of the node: a new value of dtype t and shape (values when the node folds), or VTI_NONE
 * when the node leaves it out */
static vt_err out_val(vti_og *c, uint32_t k, vt_og_dtype t, uint32_t rank, const int64_t *shape, uint32_t *out)
{
    out[k] = VTI_NONE;
    if (k >= c->n->n_output || !*c->n->output[k]) return VT_OK;
    return new_value(c, c->n->output[k], t, rank, shape, c->fold, &out[k]);
}

/* the one output like value a (its dtype t, its shape) */
static vt_err out_like(vti_og *c, uint32_t k, vt_og_dtype t, uint32_t a, uint32_t *out)
{
    int64_t sh[VT_OG_MAX_RANK];
    uint32_t r = V(c, a)->rank;
    memcpy(sh, V(c, a)->shape, sizeof sh);
    return out_val(c, k, t, r, sh, out);
}

static vt_err want_float(const vti_og *c, uint32_t id)
{
    vt_og_dtype t = V(c, id)->dtype;
    VT_RETURN_ERROR_IF(t != VT_OG_F32 && t != VT_OG_F64, VT_ERR_ARG, "%s is %s (supported: f32, f64)", V(c, id)->name,
                       vt_og_dtype_name(t));
    return VT_OK;
}

static vt_err same_dtype(const vti_og *c, uint32_t a, uint32_t b)
{
    VT_RETURN_ERROR_IF(V(c, a)->dtype != V(c, b)->dtype, VT_ERR_FORMAT, "%s is %s, %s is %s", V(c, a)->name,
                       vt_og_dtype_name(V(c, a)->dtype), V(c, b)->name, vt_og_dtype_name(V(c, b)->dtype));
    return VT_OK;
}

/* a plain copy of a's elements (Reshape, Flatten, Squeeze, Unsqueeze, Identity folded) */
static void fold_copy(vti_og *c, uint32_t o, uint32_t a)
{
    if (o != VTI_NONE && V(c, o)->nbytes) memcpy(V(c, o)->data, V(c, a)->data, V(c, o)->nbytes);
}

/* ONNX element type -> ours */
static vt_err dtype_of(int64_t et, const char *what, vt_og_dtype *t)
{
    switch (et) {
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT: *t = VT_OG_F32; return VT_OK;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT64: *t = VT_OG_I64; return VT_OK;
    case ONNX__TENSOR_PROTO__DATA_TYPE__BOOL: *t = VT_OG_BOOL; return VT_OK;
    case ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE: *t = VT_OG_F64; return VT_OK;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT32: *t = VT_OG_I32; return VT_OK;
    }
    VT_RETURN_ERROR(VT_ERR_ARG, "%s: element type %lld (supported: float 1, int64 7, bool 9, double 11, int32 6)", what,
                    (long long)et);
}

vt_err vt_og_tensor_decode(const Onnx__TensorProto *t, const char *what, vt_og_dtype *dtype, uint32_t *rank,
                           int64_t shape[VT_OG_MAX_RANK], void **data, size_t *n)
{
    *data = NULL, *n = 0, *rank = 0;
    VT_RETURN_ERROR_IF(t->has_data_location && t->data_location != ONNX__TENSOR_PROTO__DATA_LOCATION__DEFAULT,
                       VT_ERR_FORMAT, "%s: external data is not supported", what);
    VT_RETURN_ERROR_IF(t->segment, VT_ERR_FORMAT, "%s: a segmented tensor is not supported", what);
    VT_FORWARD_IF_ERROR(dtype_of(t->has_data_type ? t->data_type : 0, what, dtype));
    VT_RETURN_ERROR_IF(t->n_dims > VT_OG_MAX_RANK, VT_ERR_LIMIT, "%s: rank %zu (at most %d)", what, t->n_dims,
                       VT_OG_MAX_RANK);
    int64_t k = 0;
    vt_err e = numel((uint32_t)t->n_dims, t->dims, &k);
    if (e) return vt_error_prefix(e, "%s", what);
    VT_RETURN_ERROR_IF(k > VT_OG_MAX_CONST_ELEMS, VT_ERR_LIMIT, "%s: %lld elements (at most %lld)", what, (long long)k,
                       (long long)VT_OG_MAX_CONST_ELEMS);
    *rank = (uint32_t)t->n_dims;
    for (size_t d = 0; d < t->n_dims; d++) shape[d] = t->dims[d];
    size_t es = vt_og_dtype_size(*dtype), cnt = (size_t)k;
    size_t typed = *dtype == VT_OG_F32 ? t->n_float_data : *dtype == VT_OG_F64 ? t->n_double_data
                   : *dtype == VT_OG_I64 ? t->n_int64_data : t->n_int32_data;
    int raw = t->has_raw_data && (t->raw_data.len || !typed);
    VT_RETURN_ERROR_IF(raw && typed, VT_ERR_FORMAT, "%s: both raw_data and typed data", what);
    VT_RETURN_ERROR_IF(raw && t->raw_data.len != cnt * es, VT_ERR_FORMAT,
                       "%s: raw_data holds %zu bytes for %zu elements of %zu bytes", what, t->raw_data.len, cnt, es);
    VT_RETURN_ERROR_IF(!raw && typed != cnt, VT_ERR_FORMAT, "%s: %zu typed values for %zu elements", what, typed, cnt);
    uint8_t *p = calloc(cnt ? cnt : 1, es);
    VT_RETURN_ERROR_IF(!p, VT_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < cnt; i++) {
        const uint8_t *r = raw ? t->raw_data.data + i * es : NULL;
        switch (*dtype) {
        case VT_OG_F32: {
            float f = r ? vt_bits_f32(vt_get_u32le(r)) : t->float_data[i];
            memcpy(p + 4 * i, &f, 4);
        } break;
        case VT_OG_F64: {
            double f = r ? vt_bits_f64(vt_get_u64le(r)) : t->double_data[i];
            memcpy(p + 8 * i, &f, 8);
        } break;
        case VT_OG_I64: {
            int64_t x = r ? (int64_t)vt_get_u64le(r) : t->int64_data[i];
            memcpy(p + 8 * i, &x, 8);
        } break;
        case VT_OG_I32: {
            int32_t x = r ? (int32_t)vt_get_u32le(r) : t->int32_data[i];
            memcpy(p + 4 * i, &x, 4);
        } break;
        case VT_OG_BOOL: p[i] = (r ? r[0] : t->int32_data[i]) != 0; break;
        }
    }
    *data = p, *n = cnt;
    return VT_OK;
}

/* a decoded TensorProto as a new constant (or initializer) value named name */
static vt_err tensor_value(vti_og *c, const Onnx__TensorProto *t, const char *name, uint32_t *id)
{
    vt_og_dtype dt = VT_OG_F32;
    uint32_t r = 0;
    int64_t sh[VT_OG_MAX_RANK] = {0};
    void *d = NULL;
    size_t k = 0;
    VT_FORWARD_IF_ERROR(vt_og_tensor_decode(t, name, &dt, &r, sh, &d, &k));
    vt_err e = new_value(c, name, dt, r, sh, 0, id);
    size_t nb = k * vt_og_dtype_size(dt);
    if (!e && c->const_bytes + nb > VT_OG_MAX_CONST_BYTES)
        e = vt_set_error(VT_ERR_LIMIT, "%s: the constants pass %zu bytes", name, VT_OG_MAX_CONST_BYTES);
    if (e) {
        free(d);
        return e;
    }
    vt_og_value *v = V(c, *id);
    v->data = d, v->nbytes = nb, v->is_const = 1;
    c->const_bytes += nb;
    return VT_OK;
}

/* ---------------------------------------------------------------- operators */

typedef vt_err (*vti_og_fn)(vti_og *c, const uint32_t *in, uint32_t nin, uint32_t *out);

/* one scalar operation of the elementwise family, integers in int64 (overflow refused) */
static vt_err ew_int(const char *op, int64_t a, int64_t b, int64_t *r)
{
    int ov = 0;
    *r = 0;
    switch (op[0]) {
    case 'A': ov = __builtin_add_overflow(a, b, r); break;
    case 'S': ov = __builtin_sub_overflow(a, b, r); break;
    case 'M': ov = __builtin_mul_overflow(a, b, r); break;
    case 'D':
        VT_RETURN_ERROR_IF(b == 0, VT_ERR_FORMAT, "integer division by zero");
        ov = a == INT64_MIN && b == -1;
        if (!ov) *r = a / b;
        break;
    case 'P': /* Pow */
        VT_RETURN_ERROR_IF(b < 0 || b > 64, VT_ERR_ARG, "integer power %lld (supported: 0..64)", (long long)b);
        *r = 1;
        for (int64_t k = 0; k < b && !ov; k++) ov = __builtin_mul_overflow(*r, a, r);
        break;
    }
    VT_RETURN_ERROR_IF(ov, VT_ERR_FORMAT, "integer overflow in %s(%lld, %lld)", op, (long long)a, (long long)b);
    return VT_OK;
}

static double ew_flt(const char *op, double a, double b)
{
    switch (op[0]) {
    case 'A': return a + b;
    case 'S': return op[1] == 'u' ? a - b : sqrt(a); /* Sub, Sqrt */
    case 'M': return a * b;
    case 'D': return a / b;
    default: return pow(a, b);
    }
}

/* Add, Sub, Mul, Div, Pow (numpy broadcasting) */
static vt_err h_arith(vti_og *c, const uint32_t *in, uint32_t nin, uint32_t *out)
{
    const char *op = c->n->op_type;
    VT_FORWARD_IF_ERROR(need(in, nin, 0));
    VT_FORWARD_IF_ERROR(need(in, nin, 1));
    if (op[0] != 'P') VT_FORWARD_IF_ERROR(same_dtype(c, in[0], in[1]));
    vt_og_dtype t = V(c, in[0])->dtype;
    VT_RETURN_ERROR_IF(t == VT_OG_BOOL || V(c, in[1])->dtype == VT_OG_BOOL, VT_ERR_FORMAT, "arithmetic on booleans");
    uint32_t r = 0;
    int64_t sh[VT_OG_MAX_RANK];
    VT_FORWARD_IF_ERROR(bcast(c, in, 2, &r, sh));
    VT_FORWARD_IF_ERROR(out_val(c, 0, t, r, sh, out));
    if (!c->fold || out[0] == VTI_NONE) return VT_OK;
    vt_og_value *o = V(c, out[0]);
    const vt_og_value *a = V(c, in[0]), *b = V(c, in[1]);
    int64_t idx[VT_OG_MAX_RANK];
    for (int64_t i = 0; i < nel(o); i++) {
        unravel(i, r, sh, idx);
        int64_t ia = bcast_at(a, r, idx), ib = bcast_at(b, r, idx), x = 0;
        if (is_int(t) && is_int(b->dtype)) {
            VT_FORWARD_IF_ERROR(ew_int(op, geti(a, ia), geti(b, ib), &x));
            VT_FORWARD_IF_ERROR(seti(o, i, x));
        } else if (is_int(t)) {
            VT_RETURN_ERROR(VT_ERR_ARG, "an integer to a float power");
        } else
            setf(o, i, ew_flt(op, getf(a, ia), getf(b, ib)));
    }
    return VT_OK;
}

/* Equal, Greater, Less: booleans */
static vt_err h_compare(vti_og *c, const uint32_t *in, uint32_t nin, uint32_t *out)
{
    VT_FORWARD_IF_ERROR(need(in, nin, 0));
    VT_FORWARD_IF_ERROR(need(in, nin, 1));
    VT_FORWARD_IF_ERROR(same_dtype(c, in[0], in[1]));
    uint32_t r = 0;
    int64_t sh[VT_OG_MAX_RANK], idx[VT_OG_MAX_RANK];
    VT_FORWARD_IF_ERROR(bcast(c, in, 2, &r, sh));
    VT_FORWARD_IF_ERROR(out_val(c, 0, VT_OG_BOOL, r, sh, out));
    if (!c->fold || out[0] == VTI_NONE) return VT_OK;
    vt_og_value *o = V(c, out[0]);
    const vt_og_value *a = V(c, in[0]), *b = V(c, in[1]);
    char k = c->n->op_type[0];
    for (int64_t i = 0; i < nel(o); i++) {
        unravel(i, r, sh, idx);
        int64_t ia = bcast_at(a, r, idx), ib = bcast_at(b, r, idx);
        int cmp;
        if (is_int(a->dtype)) cmp = geti(a, ia) < geti(b, ib) ? -1 : geti(a, ia) > geti(b, ib);
        else cmp = getf(a, ia) < getf(b, ib) ? -1 : getf(a, ia) > getf(b, ib) ? 1 : getf(a, ia) == getf(b, ib) ? 0 : 2;
        ((uint8_t *)o->data)[i] = k == 'E' ? cmp == 0 : k == 'G' ? cmp == 1 : cmp == -1;
    }
    return VT_OK;
}

static vt_err h_where(vti_og *c, const uint32_t *in, uint32_t nin, uint32_t *out)
{
    for (uint32_t k = 0; k < 3; k++) VT_FORWARD_IF_ERROR(need(in, nin, k));
    VT_RETURN_ERROR_IF(V(c, in[0])->dtype != VT_OG_BOOL, VT_ERR_FORMAT, "the condition is not boolean");
    VT_FORWARD_IF_ERROR(same_dtype(c, in[1], in[2]));
    uint32_t r = 0;
    int64_t sh[VT_OG_MAX_RANK], idx[VT_OG_MAX_RANK];
    VT_FORWARD_IF_ERROR(bcast(c, in, 3, &r, sh));
    VT_FORWARD_IF_ERROR(out_val(c, 0, V(c, in[1])->dtype, r, sh, out));
    if (!c->fold || out[0] == VTI_NONE) return VT_OK;
    vt_og_value *o = V(c, out[0]);
    for (int64_t i = 0; i < nel(o); i++) {
        unravel(i, r, sh, idx);
        int pick = ((const uint8_t *)V(c, in[0])->data)[bcast_at(V(c, in[0]), r, idx)] ? 1 : 2;
        copy_el(o, i, V(c, in[pick]), bcast_at(V(c, in[pick]), r, idx));
    }
    return VT_OK;
}

/* Not, and the unary float operators (Sqrt and Reciprocal fold; Erf, Tanh, Sigmoid, Relu, LeakyRelu never) */
static vt_err h_unary(vti_og *c, const uint32_t *in, uint32_t nin, uint32_t *out)
{
    const char *op = c->n->op_type;
    VT_FORWARD_IF_ERROR(need(in, nin, 0));
    if (!strcmp(op, "Not")) VT_RETURN_ERROR_IF(V(c, in[0])->dtype != VT_OG_BOOL, VT_ERR_FORMAT, "Not of a non-boolean");
    else VT_FORWARD_IF_ERROR(want_float(c, in[0]));
    if (!strcmp(op, "LeakyRelu")) {
        double al;
        VT_FORWARD_IF_ERROR(a_float(c, "alpha", 0.01, &al));
    }
    VT_FORWARD_IF_ERROR(out_like(c, 0, V(c, in[0])->dtype, in[0], out));
    if (!c->fold || out[0] == VTI_NONE) return VT_OK;
    vt_og_value *o = V(c, out[0]);
    for (int64_t i = 0; i < nel(o); i++) {
        if (op[0] == 'N') ((uint8_t *)o->data)[i] = !((const uint8_t *)V(c, in[0])->data)[i];
        else if (op[0] == 'R') setf(o, i, 1.0 / getf(V(c, in[0]), i));
        else setf(o, i, sqrt(getf(V(c, in[0]), i)));
    }
    return VT_OK;
}

static vt_err h_softmax(vti_og *c, const uint32_t *in, uint32_t nin, uint32_t *out)
{
    int64_t ax;
    VT_FORWARD_IF_ERROR(need(in, nin, 0));
    VT_FORWARD_IF_ERROR(want_float(c, in[0]));
    VT_FORWARD_IF_ERROR(a_int(c, "axis", -1, &ax));
    VT_FORWARD_IF_ERROR(axis_of(ax, V(c, in[0])->rank, 0, "axis", &ax));
    return out_like(c, 0, V(c, in[0])->dtype, in[0], out);
}

static vt_err h_cast(vti_og *c, const uint32_t *in, uint32_t nin, uint32_t *out)
{
    int64_t to;
    vt_og_dtype t = VT_OG_F32;
    VT_FORWARD_IF_ERROR(need(in, nin, 0));
    VT_RETURN_ERROR_IF(!pattr(c->n, "to"), VT_ERR_FORMAT, "no attribute to");
    VT_FORWARD_IF_ERROR(a_int(c, "to", 0, &to));
    VT_FORWARD_IF_ERROR(dtype_of(to, "to", &t));
    VT_FORWARD_IF_ERROR(out_like(c, 0, t, in[0], out));
    if (!c->fold || out[0] == VTI_NONE) return VT_OK;
    vt_og_value *o = V(c, out[0]);
    const vt_og_value *a = V(c, in[0]);
    for (int64_t i = 0; i < nel(o); i++) {
        if (!is_int(t)) setf(o, i, getf(a, i));
        else if (is_int(a->dtype) || t == VT_OG_BOOL) VT_FORWARD_IF_ERROR(seti(o, i, is_int(a->dtype) ? geti(a, i) : getf(a, i) != 0));
        else {
            double x = getf(a, i);
            VT_RETURN_ERROR_IF(!(x > -9.2e18 && x < 9.2e18), VT_ERR_FORMAT, "Cast of %g to an integer", x);
            VT_FORWARD_IF_ERROR(seti(o, i, (int64_t)x));
        }
    }
    return VT_OK;
}

static vt_err h_gemm(vti_og *c, const uint32_t *in, uint32_t nin, uint32_t *out)
{
    int64_t ta, tb;
    double al, be;
    VT_FORWARD_IF_ERROR(need(in, nin, 0));
    VT_FORWARD_IF_ERROR(need(in, nin, 1));
    VT_FORWARD_IF_ERROR(a_int(c, "transA", 0, &ta));
    VT_FORWARD_IF_ERROR(a_int(c, "transB", 0, &tb));
    VT_FORWARD_IF_ERROR(a_float(c, "alpha", 1, &al));
    VT_FORWARD_IF_ERROR(a_float(c, "beta", 1, &be));
    VT_RETURN_ERROR_IF((ta != 0 && ta != 1) || (tb != 0 && tb != 1), VT_ERR_FORMAT, "transA %lld, transB %lld",
                       (long long)ta, (long long)tb);
    const vt_og_value *a = V(c, in[0]), *b = V(c, in[1]);
    VT_FORWARD_IF_ERROR(want_float(c, in[0]));
    VT_FORWARD_IF_ERROR(same_dtype(c, in[0], in[1]));
    VT_RETURN_ERROR_IF(a->rank != 2 || b->rank != 2, VT_ERR_FORMAT, "A of rank %u, B of rank %u (matrices)", a->rank,
                       b->rank);
    int64_t sh[2] = {a->shape[ta ? 1 : 0], b->shape[tb ? 0 : 1]};
    VT_RETURN_ERROR_IF(a->shape[ta ? 0 : 1] != b->shape[tb ? 1 : 0], VT_ERR_FORMAT, "A's K %lld, B's K %lld",
                       (long long)a->shape[ta ? 0 : 1], (long long)b->shape[tb ? 1 : 0]);
    if (has(in, nin, 2)) { /* C broadcasts to [M, N] one way */
        const vt_og_value *cc = V(c, in[2]);
        VT_FORWARD_IF_ERROR(same_dtype(c, in[0], in[2]));
        VT_RETURN_ERROR_IF(cc->rank > 2, VT_ERR_FORMAT, "C of rank %u", cc->rank);
        for (uint32_t d = 0; d < cc->rank; d++)
            VT_RETURN_ERROR_IF(cc->shape[d] != 1 && cc->shape[d] != sh[2 - cc->rank + d], VT_ERR_FORMAT,
                               "C's dimension %u is %lld for %lld", d, (long long)cc->shape[d],
                               (long long)sh[2 - cc->rank + d]);
    }
    return out_val(c, 0, a->dtype, 2, sh, out);
}

static vt_err h_matmul(vti_og *c, const uint32_t *in, uint32_t nin, uint32_t *out)
{
    VT_FORWARD_IF_ERROR(need(in, nin, 0));
    VT_FORWARD_IF_ERROR(need(in, nin, 1));
    VT_FORWARD_IF_ERROR(want_float(c, in[0]));
    VT_FORWARD_IF_ERROR(same_dtype(c, in[0], in[1]));
    const vt_og_value *a = V(c, in[0]), *b = V(c, in[1]);
    VT_RETURN_ERROR_IF(a->rank < 1 || b->rank < 1, VT_ERR_FORMAT, "a scalar operand");
    /* the operands as matrices: a vector A is [1, K], a vector B [K, 1]; the batch dimensions broadcast */
    int64_t M = a->rank == 1 ? 1 : a->shape[a->rank - 2], K = a->shape[a->rank - 1];
    int64_t K2 = b->rank == 1 ? b->shape[0] : b->shape[b->rank - 2], N = b->rank == 1 ? 1 : b->shape[b->rank - 1];
    VT_RETURN_ERROR_IF(K != K2, VT_ERR_FORMAT, "A's K %lld, B's K %lld", (long long)K, (long long)K2);
    uint32_t ra = a->rank > 2 ? a->rank - 2 : 0, rb = b->rank > 2 ? b->rank - 2 : 0, r = ra > rb ? ra : rb;
    int64_t sh[VT_OG_MAX_RANK + 2];
    for (uint32_t d = 0; d < r; d++) {
        int64_t x = d + ra >= r ? a->shape[d + ra - r] : 1, y = d + rb >= r ? b->shape[d + rb - r] : 1;
        VT_RETURN_ERROR_IF(x != y && x != 1 && y != 1, VT_ERR_FORMAT, "batch dimensions %lld and %lld", (long long)x,
                           (long long)y);
        sh[d] = x == 1 ? y : x;
    }
    if (a->rank > 1) sh[r++] = M;
    if (b->rank > 1) sh[r++] = N;
    VT_RETURN_ERROR_IF(r > VT_OG_MAX_RANK, VT_ERR_LIMIT, "rank %u", r);
    return out_val(c, 0, a->dtype, r, sh, out);
}

static vt_err h_layernorm(vti_og *c, const uint32_t *in, uint32_t nin, uint32_t *out)
{
    int64_t ax, st;
    double eps;
    VT_RETURN_ERROR_IF(c->opset < 17, VT_ERR_ARG, "LayerNormalization is an operator of opset 17 (the file's: %lld)",
                       (long long)c->opset);
    VT_FORWARD_IF_ERROR(need(in, nin, 0));
    VT_FORWARD_IF_ERROR(need(in, nin, 1));
    VT_FORWARD_IF_ERROR(want_float(c, in[0]));
    VT_FORWARD_IF_ERROR(a_int(c, "axis", -1, &ax));
    VT_FORWARD_IF_ERROR(a_float(c, "epsilon", 1e-5, &eps));
    VT_FORWARD_IF_ERROR(a_int(c, "stash_type", 1, &st));
    VT_RETURN_ERROR_IF(st != 1, VT_ERR_ARG, "stash_type %lld (supported: 1, float32)", (long long)st);
    const vt_og_value *x = V(c, in[0]);
    VT_FORWARD_IF_ERROR(axis_of(ax, x->rank, 0, "axis", &ax));
    for (uint32_t k = 1; k < 3; k++) { /* Scale and B: broadcast to the normalised dimensions */
        if (!has(in, nin, k)) continue;
        const vt_og_value *s = V(c, in[k]);
        VT_FORWARD_IF_ERROR(same_dtype(c, in[0], in[k]));
        VT_RETURN_ERROR_IF(s->rank > x->rank - (uint32_t)ax, VT_ERR_FORMAT, "%s of rank %u", s->name, s->rank);
        for (uint32_t d = 0; d < s->rank; d++)
            VT_RETURN_ERROR_IF(s->shape[d] != 1 && s->shape[d] != x->shape[x->rank - s->rank + d], VT_ERR_FORMAT,
                               "%s's dimension %u is %lld", s->name, d, (long long)s->shape[d]);
    }
    int64_t sh[VT_OG_MAX_RANK];
    for (uint32_t d = 0; d < x->rank; d++) sh[d] = d < ax ? x->shape[d] : 1;
    uint32_t r = x->rank;
    vt_og_dtype t = x->dtype;
    VT_FORWARD_IF_ERROR(out_like(c, 0, t, in[0], out));
    VT_FORWARD_IF_ERROR(out_val(c, 1, t, r, sh, out));
    return out_val(c, 2, t, r, sh, out);
}

static vt_err h_batchnorm(vti_og *c, const uint32_t *in, uint32_t nin, uint32_t *out)
{
    double eps, mom;
    int64_t tm;
    for (uint32_t k = 0; k < 5; k++) VT_FORWARD_IF_ERROR(need(in, nin, k));
    VT_FORWARD_IF_ERROR(want_float(c, in[0]));
    VT_FORWARD_IF_ERROR(a_float(c, "epsilon", 1e-5, &eps));
    VT_FORWARD_IF_ERROR(a_float(c, "momentum", 0.9, &mom));
    VT_FORWARD_IF_ERROR(a_int(c, "training_mode", 0, &tm));
    VT_RETURN_ERROR_IF(tm != 0 && tm != 1, VT_ERR_FORMAT, "training_mode %lld", (long long)tm);
    const vt_og_value *x = V(c, in[0]);
    VT_RETURN_ERROR_IF(x->rank < 2, VT_ERR_FORMAT, "X of rank %u", x->rank);
    int64_t C = x->shape[1];
    for (uint32_t k = 1; k < 5; k++) {
        const vt_og_value *s = V(c, in[k]);
        VT_FORWARD_IF_ERROR(same_dtype(c, in[0], in[k]));
        VT_RETURN_ERROR_IF(s->rank != 1 || s->shape[0] != C, VT_ERR_FORMAT, "%s is not [%lld]", s->name, (long long)C);
    }
    vt_og_dtype t = x->dtype;
    VT_FORWARD_IF_ERROR(out_like(c, 0, t, in[0], out));
    for (uint32_t k = 1; k < c->n->n_output; k++) VT_FORWARD_IF_ERROR(out_val(c, k, t, 1, &C, out));
    return VT_OK;
}

static vt_err h_reducemean(vti_og *c, const uint32_t *in, uint32_t nin, uint32_t *out)
{
    int64_t axes[VT_OG_MAX_RANK], kd, sh[VT_OG_MAX_RANK];
    size_t na;
    VT_FORWARD_IF_ERROR(need(in, nin, 0));
    VT_FORWARD_IF_ERROR(want_float(c, in[0]));
    VT_RETURN_ERROR_IF(nin > 1, VT_ERR_ARG, "axes as an input (supported: the axes attribute of opsets 13..17)");
    VT_FORWARD_IF_ERROR(a_ints(c, "axes", VT_OG_MAX_RANK, 0, 0, axes, &na));
    VT_FORWARD_IF_ERROR(a_int(c, "keepdims", 1, &kd));
    const vt_og_value *x = V(c, in[0]);
    int red[VT_OG_MAX_RANK] = {0};
    for (size_t k = 0; k < na; k++) {
        VT_FORWARD_IF_ERROR(axis_of(axes[k], x->rank, 0, "axis", &axes[k]));
        VT_RETURN_ERROR_IF(red[axes[k]], VT_ERR_FORMAT, "axis %lld twice", (long long)axes[k]);
        red[axes[k]] = 1;
    }
    uint32_t r = 0;
    for (uint32_t d = 0; d < x->rank; d++) {
        int rd = na == 0 || red[d];
        if (!rd) sh[r++] = x->shape[d];
        else if (kd) sh[r++] = 1;
    }
    return out_val(c, 0, x->dtype, r, sh, out);
}

/* the spatial output size of a window: floor or ceil of (in + pads - dil * (k - 1) - 1) / s, + 1 */
static vt_err window(int64_t in, int64_t k, int64_t s, int64_t d, int64_t pb, int64_t pe, int ceil_mode, int64_t *o)
{
    VT_RETURN_ERROR_IF(k < 1 || s < 1 || d < 1 || pb < 0 || pe < 0 || k > VT_OG_MAX_DIM || s > VT_OG_MAX_DIM ||
                           d > VT_OG_MAX_DIM || pb > VT_OG_MAX_DIM || pe > VT_OG_MAX_DIM,
                       VT_ERR_FORMAT, "kernel %lld, stride %lld, dilation %lld, pads %lld %lld", (long long)k,
                       (long long)s, (long long)d, (long long)pb, (long long)pe);
    int64_t span = d * (k - 1) + 1, room = in + pb + pe - span;
    VT_RETURN_ERROR_IF(room < 0, VT_ERR_FORMAT, "a window of %lld over %lld (padded %lld)", (long long)span, (long long)in,
                       (long long)(in + pb + pe));
    *o = (ceil_mode ? (room + s - 1) / s : room / s) + 1;
    if (ceil_mode && (*o - 1) * s >= in + pb) (*o)--; /* the last window starts in the padding */
    return VT_OK;
}

/* Conv, MaxPool, AveragePool */
static vt_err h_window(vti_og *c, const uint32_t *in, uint32_t nin, uint32_t *out)
{
    const char *op = c->n->op_type;
    int conv = op[0] == 'C';
    int64_t ks[4], st[4], dl[4], pd[8], grp = 1, cm = 0, so = 0, cip = 0, sh[VT_OG_MAX_RANK];
    size_t nk, ns, nd, np;
    VT_FORWARD_IF_ERROR(need(in, nin, 0));
    VT_FORWARD_IF_ERROR(want_float(c, in[0]));
    const vt_og_value *x = V(c, in[0]);
    VT_RETURN_ERROR_IF(x->rank < 3 || x->rank > 5, VT_ERR_FORMAT, "X of rank %u (supported: 3..5)", x->rank);
    uint32_t sp = x->rank - 2;
    VT_FORWARD_IF_ERROR(a_str_is(c, "auto_pad", "NOTSET"));
    VT_FORWARD_IF_ERROR(a_ints(c, "kernel_shape", sp, 0, 0, ks, &nk));
    VT_FORWARD_IF_ERROR(a_ints(c, "strides", sp, 1, sp, st, &ns));
    VT_FORWARD_IF_ERROR(a_ints(c, "dilations", sp, 1, sp, dl, &nd));
    VT_FORWARD_IF_ERROR(a_ints(c, "pads", 2 * sp, 0, 2 * sp, pd, &np));
    VT_RETURN_ERROR_IF(ns != sp || nd != sp || np != 2 * sp, VT_ERR_FORMAT,
                       "%zu strides, %zu dilations, %zu pads for %u spatial dimensions", ns, nd, np, sp);
    int64_t M = x->shape[1];
    if (conv) {
        VT_FORWARD_IF_ERROR(need(in, nin, 1));
        VT_FORWARD_IF_ERROR(same_dtype(c, in[0], in[1]));
        VT_FORWARD_IF_ERROR(a_int(c, "group", 1, &grp));
        const vt_og_value *w = V(c, in[1]);
        VT_RETURN_ERROR_IF(w->rank != x->rank, VT_ERR_FORMAT, "W of rank %u for X of rank %u", w->rank, x->rank);
        M = w->shape[0];
        VT_RETURN_ERROR_IF(nk && nk != sp, VT_ERR_FORMAT, "kernel_shape has %zu values for %u spatial dimensions", nk, sp);
        VT_RETURN_ERROR_IF(grp < 1 || x->shape[1] % grp || M % grp || w->shape[1] * grp != x->shape[1], VT_ERR_FORMAT,
                           "group %lld: X has %lld channels, W is [%lld, %lld, ...]", (long long)grp,
                           (long long)x->shape[1], (long long)M, (long long)w->shape[1]);
        for (uint32_t d = 0; d < sp; d++) {
            VT_RETURN_ERROR_IF(nk && ks[d] != w->shape[2 + d], VT_ERR_FORMAT, "kernel_shape %lld, W's %lld",
                               (long long)ks[d], (long long)w->shape[2 + d]);
            ks[d] = w->shape[2 + d];
        }
        if (has(in, nin, 2)) {
            VT_FORWARD_IF_ERROR(same_dtype(c, in[0], in[2]));
            VT_RETURN_ERROR_IF(V(c, in[2])->rank != 1 || V(c, in[2])->shape[0] != M, VT_ERR_FORMAT,
                               "B is not [%lld]", (long long)M);
        }
    } else {
        VT_RETURN_ERROR_IF(nk != sp, VT_ERR_FORMAT, "kernel_shape has %zu values for %u spatial dimensions", nk, sp);
        VT_FORWARD_IF_ERROR(a_int(c, "ceil_mode", 0, &cm));
        VT_FORWARD_IF_ERROR(a_int(c, "storage_order", 0, &so));
        VT_FORWARD_IF_ERROR(a_int(c, "count_include_pad", 0, &cip));
        VT_RETURN_ERROR_IF(so != 0, VT_ERR_ARG, "storage_order %lld (supported: 0)", (long long)so);
        VT_RETURN_ERROR_IF((cm != 0 && cm != 1) || (cip != 0 && cip != 1), VT_ERR_FORMAT, "ceil_mode %lld, "
                           "count_include_pad %lld", (long long)cm, (long long)cip);
    }
    sh[0] = x->shape[0], sh[1] = M;
    for (uint32_t d = 0; d < sp; d++)
        VT_FORWARD_IF_ERROR(window(x->shape[2 + d], ks[d], st[d], dl[d], pd[d], pd[sp + d], (int)cm, &sh[2 + d]));
    uint32_t r = x->rank; /* x moves when a value is added */
    VT_FORWARD_IF_ERROR(out_val(c, 0, x->dtype, r, sh, out));
    return op[0] == 'M' ? out_val(c, 1, VT_OG_I64, r, sh, out) : VT_OK;
}

static vt_err h_gap(vti_og *c, const uint32_t *in, uint32_t nin, uint32_t *out)
{
    VT_FORWARD_IF_ERROR(need(in, nin, 0));
    VT_FORWARD_IF_ERROR(want_float(c, in[0]));
    const vt_og_value *x = V(c, in[0]);
    VT_RETURN_ERROR_IF(x->rank < 3, VT_ERR_FORMAT, "X of rank %u", x->rank);
    int64_t sh[VT_OG_MAX_RANK];
    for (uint32_t d = 0; d < x->rank; d++) sh[d] = d < 2 ? x->shape[d] : 1;
    return out_val(c, 0, x->dtype, x->rank, sh, out);
}

static vt_err h_dropout(vti_og *c, const uint32_t *in, uint32_t nin, uint32_t *out)
{
    int64_t seed;
    VT_FORWARD_IF_ERROR(need(in, nin, 0));
    VT_FORWARD_IF_ERROR(want_float(c, in[0]));
    VT_FORWARD_IF_ERROR(a_int(c, "seed", 0, &seed));
    if (has(in, nin, 1)) {
        VT_FORWARD_IF_ERROR(need_const(c, in, nin, 1, "ratio"));
        VT_RETURN_ERROR_IF(nel(V(c, in[1])) != 1 || is_int(V(c, in[1])->dtype), VT_ERR_FORMAT, "ratio is not one float");
        double p = getf(V(c, in[1]), 0);
        VT_RETURN_ERROR_IF(!(p >= 0 && p < 1), VT_ERR_FORMAT, "ratio %g (supported: 0 <= ratio < 1)", p);
    }
    if (has(in, nin, 2)) {
        VT_FORWARD_IF_ERROR(need_const(c, in, nin, 2, "training_mode"));
        VT_RETURN_ERROR_IF(nel(V(c, in[2])) != 1 || V(c, in[2])->dtype != VT_OG_BOOL, VT_ERR_FORMAT,
                           "training_mode is not one boolean");
    }
    VT_FORWARD_IF_ERROR(out_like(c, 0, V(c, in[0])->dtype, in[0], out));
    return out_like(c, 1, VT_OG_BOOL, in[0], out);
}

/* ---------------------------------------------------------------- shapes and moves */

/* an output of a's elements in a new shape (Flatten, Reshape, Squeeze, Unsqueeze) */
static vt_err reshaped(vti_og *c, uint32_t a, uint32_t r, const int64_t *sh, uint32_t *out)
{
    int64_t n = 0;
    VT_FORWARD_IF_ERROR(numel(r, sh, &n));
    VT_RETURN_ERROR_IF(n != nel(V(c, a)), VT_ERR_FORMAT, "%lld elements into a shape of %lld", (long long)nel(V(c, a)),
                       (long long)n);
    VT_FORWARD_IF_ERROR(out_val(c, 0, V(c, a)->dtype, r, sh, out));
    if (c->fold) fold_copy(c, out[0], a);
    return VT_OK;
}

static vt_err h_flatten(vti_og *c, const uint32_t *in, uint32_t nin, uint32_t *out)
{
    int64_t ax, sh[2] = {1, 1};
    VT_FORWARD_IF_ERROR(need(in, nin, 0));
    VT_FORWARD_IF_ERROR(a_int(c, "axis", 1, &ax));
    const vt_og_value *x = V(c, in[0]);
    VT_FORWARD_IF_ERROR(axis_of(ax, x->rank, 1, "axis", &ax));
    for (uint32_t d = 0; d < x->rank; d++) sh[d >= ax] *= x->shape[d];
    return reshaped(c, in[0], 2, sh, out);
}

static vt_err h_reshape(vti_og *c, const uint32_t *in, uint32_t nin, uint32_t *out)
{
    int64_t az, sh[VT_OG_MAX_RANK];
    size_t r;
    VT_FORWARD_IF_ERROR(need(in, nin, 0));
    VT_FORWARD_IF_ERROR(need_const(c, in, nin, 1, "shape"));
    VT_FORWARD_IF_ERROR(a_int(c, "allowzero", 0, &az));
    VT_FORWARD_IF_ERROR(const_ints(c, in[1], "shape", VT_OG_MAX_RANK, sh, &r));
    const vt_og_value *x = V(c, in[0]);
    int64_t known = 1, neg = -1;
    for (size_t d = 0; d < r; d++) {
        if (sh[d] == 0 && !az) {
            VT_RETURN_ERROR_IF(d >= x->rank, VT_ERR_FORMAT, "shape[%zu] = 0 copies a dimension the input lacks", d);
            sh[d] = x->shape[d];
        }
        if (sh[d] == -1) {
            VT_RETURN_ERROR_IF(neg >= 0, VT_ERR_FORMAT, "two -1 in the shape");
            neg = (int64_t)d;
            continue;
        }
        VT_RETURN_ERROR_IF(sh[d] < 0 || sh[d] > VT_OG_MAX_DIM, VT_ERR_FORMAT, "shape[%zu] = %lld", d, (long long)sh[d]);
        VT_RETURN_ERROR_IF(__builtin_mul_overflow(known, sh[d], &known), VT_ERR_LIMIT, "the shape overflows");
    }
    if (neg >= 0) {
        VT_RETURN_ERROR_IF(known == 0 || nel(x) % known, VT_ERR_FORMAT, "%lld elements into a shape of %lld x -1",
                           (long long)nel(x), (long long)known);
        sh[neg] = nel(x) / known;
    }
    return reshaped(c, in[0], (uint32_t)r, sh, out);
}

static vt_err h_unsqueeze(vti_og *c, const uint32_t *in, uint32_t nin, uint32_t *out)
{
    int64_t ax[VT_OG_MAX_RANK], sh[VT_OG_MAX_RANK];
    size_t na;
    VT_FORWARD_IF_ERROR(need(in, nin, 0));
    VT_FORWARD_IF_ERROR(need_const(c, in, nin, 1, "axes"));
    VT_FORWARD_IF_ERROR(const_ints(c, in[1], "axes", VT_OG_MAX_RANK, ax, &na));
    const vt_og_value *x = V(c, in[0]);
    uint32_t r = x->rank + (uint32_t)na;
    VT_RETURN_ERROR_IF(r > VT_OG_MAX_RANK, VT_ERR_LIMIT, "rank %u (at most %d)", r, VT_OG_MAX_RANK);
    int ins[VT_OG_MAX_RANK] = {0};
    for (size_t k = 0; k < na; k++) {
        VT_FORWARD_IF_ERROR(axis_of(ax[k], r, 0, "axis", &ax[k]));
        VT_RETURN_ERROR_IF(ins[ax[k]], VT_ERR_FORMAT, "axis %lld twice", (long long)ax[k]);
        ins[ax[k]] = 1;
    }
    for (uint32_t d = 0, j = 0; d < r; d++) sh[d] = ins[d] ? 1 : x->shape[j++];
    return reshaped(c, in[0], r, sh, out);
}

static vt_err h_squeeze(vti_og *c, const uint32_t *in, uint32_t nin, uint32_t *out)
{
    int64_t ax[VT_OG_MAX_RANK], sh[VT_OG_MAX_RANK];
    size_t na = 0;
    VT_FORWARD_IF_ERROR(need(in, nin, 0));
    const vt_og_value *x = V(c, in[0]);
    int drop[VT_OG_MAX_RANK] = {0};
    if (has(in, nin, 1)) {
        VT_FORWARD_IF_ERROR(need_const(c, in, nin, 1, "axes"));
        VT_FORWARD_IF_ERROR(const_ints(c, in[1], "axes", VT_OG_MAX_RANK, ax, &na));
        for (size_t k = 0; k < na; k++) {
            VT_FORWARD_IF_ERROR(axis_of(ax[k], x->rank, 0, "axis", &ax[k]));
            VT_RETURN_ERROR_IF(x->shape[ax[k]] != 1, VT_ERR_FORMAT, "axis %lld has %lld elements, not 1", (long long)ax[k],
                               (long long)x->shape[ax[k]]);
            drop[ax[k]] = 1;
        }
    } else
        for (uint32_t d = 0; d < x->rank; d++) drop[d] = x->shape[d] == 1;
    uint32_t r = 0;
    for (uint32_t d = 0; d < x->rank; d++)
        if (!drop[d]) sh[r++] = x->shape[d];
    return reshaped(c, in[0], r, sh, out);
}

static vt_err h_transpose(vti_og *c, const uint32_t *in, uint32_t nin, uint32_t *out)
{
    int64_t perm[VT_OG_MAX_RANK], sh[VT_OG_MAX_RANK], idx[VT_OG_MAX_RANK], src[VT_OG_MAX_RANK];
    size_t np;
    VT_FORWARD_IF_ERROR(need(in, nin, 0));
    const vt_og_value *x = V(c, in[0]);
    uint32_t r = x->rank;
    VT_FORWARD_IF_ERROR(a_ints(c, "perm", VT_OG_MAX_RANK, 0, 0, perm, &np));
    if (!pattr(c->n, "perm"))
        for (uint32_t d = 0; d < r; d++) perm[d] = r - 1 - d;
    else
        VT_RETURN_ERROR_IF(np != r, VT_ERR_FORMAT, "perm has %zu values for rank %u", np, r);
    int seen[VT_OG_MAX_RANK] = {0};
    for (uint32_t d = 0; d < r; d++) {
        VT_RETURN_ERROR_IF(perm[d] < 0 || perm[d] >= r || seen[perm[d]], VT_ERR_FORMAT, "perm is not a permutation");
        seen[perm[d]] = 1, sh[d] = x->shape[perm[d]];
    }
    VT_FORWARD_IF_ERROR(out_val(c, 0, x->dtype, r, sh, out));
    if (!c->fold || out[0] == VTI_NONE) return VT_OK;
    vt_og_value *o = V(c, out[0]);
    for (int64_t i = 0; i < nel(o); i++) {
        unravel(i, r, sh, idx);
        for (uint32_t d = 0; d < r; d++) src[perm[d]] = idx[d];
        int64_t off = 0;
        for (uint32_t d = 0; d < r; d++) off = off * V(c, in[0])->shape[d] + src[d];
        copy_el(o, i, V(c, in[0]), off);
    }
    return VT_OK;
}

static vt_err h_concat(vti_og *c, const uint32_t *in, uint32_t nin, uint32_t *out)
{
    int64_t ax, sh[VT_OG_MAX_RANK], idx[VT_OG_MAX_RANK];
    VT_RETURN_ERROR_IF(!pattr(c->n, "axis"), VT_ERR_FORMAT, "no attribute axis");
    VT_FORWARD_IF_ERROR(a_int(c, "axis", 0, &ax));
    for (uint32_t k = 0; k < nin; k++) VT_FORWARD_IF_ERROR(need(in, nin, k));
    VT_FORWARD_IF_ERROR(need(in, nin, 0));
    const vt_og_value *x = V(c, in[0]);
    uint32_t r = x->rank;
    VT_FORWARD_IF_ERROR(axis_of(ax, r, 0, "axis", &ax));
    memcpy(sh, x->shape, sizeof sh);
    sh[ax] = 0;
    for (uint32_t k = 0; k < nin; k++) {
        const vt_og_value *y = V(c, in[k]);
        VT_FORWARD_IF_ERROR(same_dtype(c, in[0], in[k]));
        VT_RETURN_ERROR_IF(y->rank != r, VT_ERR_FORMAT, "input %u has rank %u, input 0 %u", k, y->rank, r);
        for (uint32_t d = 0; d < r; d++)
            VT_RETURN_ERROR_IF(d != ax && y->shape[d] != x->shape[d], VT_ERR_FORMAT, "input %u: dimension %u is %lld, not %lld",
                               k, d, (long long)y->shape[d], (long long)x->shape[d]);
        sh[ax] += y->shape[ax]; /* each at most VT_OG_MAX_DIM, at most 2^16 inputs: no overflow */
    }
    VT_FORWARD_IF_ERROR(out_val(c, 0, x->dtype, r, sh, out));
    if (!c->fold || out[0] == VTI_NONE) return VT_OK;
    vt_og_value *o = V(c, out[0]);
    for (int64_t i = 0; i < nel(o); i++) {
        unravel(i, r, sh, idx);
        uint32_t k = 0;
        while (idx[ax] >= V(c, in[k])->shape[ax]) idx[ax] -= V(c, in[k++])->shape[ax];
        const vt_og_value *y = V(c, in[k]);
        int64_t off = 0;
        for (uint32_t d = 0; d < r; d++) off = off * y->shape[d] + idx[d];
        copy_el(o, i, y, off);
    }
    return VT_OK;
}

/* the elements of a in the box start[d] + step[d] * idx[d] of the output out (Slice, Split) */
static void fold_box(vti_og *c, uint32_t out, uint32_t a, const int64_t *start, const int64_t *step)
{
    if (!c->fold || out == VTI_NONE) return;
    vt_og_value *o = V(c, out);
    const vt_og_value *x = V(c, a);
    int64_t idx[VT_OG_MAX_RANK];
    for (int64_t i = 0; i < nel(o); i++) {
        unravel(i, o->rank, o->shape, idx);
        int64_t off = 0;
        for (uint32_t d = 0; d < x->rank; d++) off = off * x->shape[d] + start[d] + step[d] * idx[d];
        copy_el(o, i, x, off);
    }
}

static vt_err h_split(vti_og *c, const uint32_t *in, uint32_t nin, uint32_t *out)
{
    int64_t ax, parts[64], start[VT_OG_MAX_RANK] = {0}, step[VT_OG_MAX_RANK], sh[VT_OG_MAX_RANK];
    size_t np = c->n->n_output;
    VT_FORWARD_IF_ERROR(need(in, nin, 0));
    VT_FORWARD_IF_ERROR(a_int(c, "axis", 0, &ax));
    const vt_og_value *x = V(c, in[0]);
    VT_FORWARD_IF_ERROR(axis_of(ax, x->rank, 0, "axis", &ax));
    VT_RETURN_ERROR_IF(np < 1 || np > 64, VT_ERR_FORMAT, "%zu outputs (1..64)", np);
    if (has(in, nin, 1)) {
        size_t k;
        VT_FORWARD_IF_ERROR(need_const(c, in, nin, 1, "split"));
        VT_FORWARD_IF_ERROR(const_ints(c, in[1], "split", 64, parts, &k));
        VT_RETURN_ERROR_IF(k != np, VT_ERR_FORMAT, "split has %zu values for %zu outputs", k, np);
    } else {
        VT_RETURN_ERROR_IF(x->shape[ax] % (int64_t)np, VT_ERR_FORMAT, "%lld elements in %zu equal parts",
                           (long long)x->shape[ax], np);
        for (size_t k = 0; k < np; k++) parts[k] = x->shape[ax] / (int64_t)np;
    }
    int64_t sum = 0;
    for (size_t k = 0; k < np; k++) {
        VT_RETURN_ERROR_IF(parts[k] < 0 || parts[k] > x->shape[ax], VT_ERR_FORMAT, "split[%zu] = %lld", k, (long long)parts[k]);
        sum += parts[k];
    }
    VT_RETURN_ERROR_IF(sum != x->shape[ax], VT_ERR_FORMAT, "split sums to %lld, the axis has %lld", (long long)sum,
                       (long long)x->shape[ax]);
    for (uint32_t d = 0; d < VT_OG_MAX_RANK; d++) step[d] = 1;
    for (size_t k = 0; k < np; k++) {
        memcpy(sh, V(c, in[0])->shape, sizeof sh);
        sh[ax] = parts[k];
        VT_FORWARD_IF_ERROR(out_val(c, (uint32_t)k, V(c, in[0])->dtype, V(c, in[0])->rank, sh, out));
        fold_box(c, out[k], in[0], start, step);
        start[ax] += parts[k];
    }
    return VT_OK;
}

static vt_err h_slice(vti_og *c, const uint32_t *in, uint32_t nin, uint32_t *out)
{
    int64_t st[VT_OG_MAX_RANK], en[VT_OG_MAX_RANK], ax[VT_OG_MAX_RANK], sp[VT_OG_MAX_RANK];
    int64_t start[VT_OG_MAX_RANK] = {0}, step[VT_OG_MAX_RANK], sh[VT_OG_MAX_RANK];
    size_t ns, ne, na, nsp;
    VT_FORWARD_IF_ERROR(need(in, nin, 0));
    VT_FORWARD_IF_ERROR(need_const(c, in, nin, 1, "starts"));
    VT_FORWARD_IF_ERROR(need_const(c, in, nin, 2, "ends"));
    VT_FORWARD_IF_ERROR(const_ints(c, in[1], "starts", VT_OG_MAX_RANK, st, &ns));
    VT_FORWARD_IF_ERROR(const_ints(c, in[2], "ends", VT_OG_MAX_RANK, en, &ne));
    VT_RETURN_ERROR_IF(ns != ne, VT_ERR_FORMAT, "%zu starts, %zu ends", ns, ne);
    const vt_og_value *x = V(c, in[0]);
    na = ns, nsp = ns;
    for (size_t k = 0; k < ns; k++) ax[k] = (int64_t)k, sp[k] = 1;
    if (has(in, nin, 3)) {
        VT_FORWARD_IF_ERROR(need_const(c, in, nin, 3, "axes"));
        VT_FORWARD_IF_ERROR(const_ints(c, in[3], "axes", VT_OG_MAX_RANK, ax, &na));
    }
    if (has(in, nin, 4)) {
        VT_FORWARD_IF_ERROR(need_const(c, in, nin, 4, "steps"));
        VT_FORWARD_IF_ERROR(const_ints(c, in[4], "steps", VT_OG_MAX_RANK, sp, &nsp));
    }
    VT_RETURN_ERROR_IF(na != ns || nsp != ns, VT_ERR_FORMAT, "%zu starts, %zu axes, %zu steps", ns, na, nsp);
    memcpy(sh, x->shape, sizeof sh);
    for (uint32_t d = 0; d < VT_OG_MAX_RANK; d++) step[d] = 1;
    int seen[VT_OG_MAX_RANK] = {0};
    for (size_t k = 0; k < ns; k++) {
        int64_t a = 0;
        VT_FORWARD_IF_ERROR(axis_of(ax[k], x->rank, 0, "axis", &a));
        VT_RETURN_ERROR_IF(seen[a], VT_ERR_FORMAT, "axis %lld twice", (long long)a);
        VT_RETURN_ERROR_IF(sp[k] == 0 || sp[k] < -VT_OG_MAX_DIM || sp[k] > VT_OG_MAX_DIM, VT_ERR_FORMAT, "step %lld",
                           (long long)sp[k]);
        seen[a] = 1;
        int64_t n = x->shape[a], s = st[k], e = en[k];
        /* ONNX's clamping: negative from the end; [0, n] for a positive step, [-1, n - 1] for a negative one */
        if (s < 0) s = s < -n ? -n : s, s += n;
        if (e < 0) e = e < -n - 1 ? -n - 1 : e, e += n;
        if (sp[k] > 0) s = s > n ? n : s, e = e > n ? n : e;
        else s = s > n - 1 ? n - 1 : s, e = e > n - 1 ? n - 1 : e < -1 ? -1 : e;
        int64_t cnt = sp[k] > 0 ? (e > s ? (e - s + sp[k] - 1) / sp[k] : 0) : (s > e ? (s - e - sp[k] - 1) / -sp[k] : 0);
        start[a] = s, step[a] = sp[k], sh[a] = cnt;
    }
    VT_FORWARD_IF_ERROR(out_val(c, 0, x->dtype, x->rank, sh, out));
    fold_box(c, out[0], in[0], start, step);
    return VT_OK;
}

static vt_err h_gather(vti_og *c, const uint32_t *in, uint32_t nin, uint32_t *out)
{
    int64_t ax, sh[VT_OG_MAX_RANK], idx[VT_OG_MAX_RANK];
    VT_FORWARD_IF_ERROR(need(in, nin, 0));
    VT_FORWARD_IF_ERROR(need(in, nin, 1));
    VT_FORWARD_IF_ERROR(a_int(c, "axis", 0, &ax));
    const vt_og_value *x = V(c, in[0]), *ix = V(c, in[1]);
    VT_RETURN_ERROR_IF(ix->dtype != VT_OG_I64 && ix->dtype != VT_OG_I32, VT_ERR_FORMAT, "indices are %s",
                       vt_og_dtype_name(ix->dtype));
    VT_FORWARD_IF_ERROR(axis_of(ax, x->rank, 0, "axis", &ax));
    uint32_t r = x->rank - 1 + ix->rank;
    VT_RETURN_ERROR_IF(r > VT_OG_MAX_RANK, VT_ERR_LIMIT, "rank %u (at most %d)", r, VT_OG_MAX_RANK);
    for (uint32_t d = 0, j = 0; d < x->rank; d++) {
        if (d != ax) sh[j++] = x->shape[d];
        else
            for (uint32_t q = 0; q < ix->rank; q++) sh[j++] = ix->shape[q];
    }
    if (ix->is_const) /* indices known: each in range */
        for (int64_t i = 0; i < nel(ix); i++) {
            int64_t k = geti(ix, i);
            VT_RETURN_ERROR_IF(k < -x->shape[ax] || k >= x->shape[ax], VT_ERR_FORMAT, "index %lld out of range for %lld",
                               (long long)k, (long long)x->shape[ax]);
        }
    VT_FORWARD_IF_ERROR(out_val(c, 0, x->dtype, r, sh, out));
    if (!c->fold || out[0] == VTI_NONE) return VT_OK;
    vt_og_value *o = V(c, out[0]);
    x = V(c, in[0]), ix = V(c, in[1]);
    for (int64_t i = 0; i < nel(o); i++) {
        unravel(i, r, sh, idx);
        int64_t ii = 0, off = 0;
        for (uint32_t q = 0; q < ix->rank; q++) ii = ii * ix->shape[q] + idx[ax + q];
        int64_t k = geti(ix, ii);
        k += k < 0 ? x->shape[ax] : 0;
        for (uint32_t d = 0; d < x->rank; d++)
            off = off * x->shape[d] + (d < ax ? idx[d] : d == ax ? k : idx[d + ix->rank - 1]);
        copy_el(o, i, x, off);
    }
    return VT_OK;
}

static vt_err h_expand(vti_og *c, const uint32_t *in, uint32_t nin, uint32_t *out)
{
    int64_t want[VT_OG_MAX_RANK], sh[VT_OG_MAX_RANK], idx[VT_OG_MAX_RANK];
    size_t nw;
    VT_FORWARD_IF_ERROR(need(in, nin, 0));
    VT_FORWARD_IF_ERROR(need_const(c, in, nin, 1, "shape"));
    VT_FORWARD_IF_ERROR(const_ints(c, in[1], "shape", VT_OG_MAX_RANK, want, &nw));
    const vt_og_value *x = V(c, in[0]);
    uint32_t r = x->rank > nw ? x->rank : (uint32_t)nw;
    for (uint32_t d = 0; d < r; d++) { /* the two shapes broadcast both ways */
        int64_t a = d + x->rank >= r ? x->shape[d + x->rank - r] : 1, b = d + nw >= r ? want[d + nw - r] : 1;
        VT_RETURN_ERROR_IF(b < 0 || (a != b && a != 1 && b != 1), VT_ERR_FORMAT, "dimension %lld to %lld", (long long)a,
                           (long long)b);
        sh[d] = a == 1 ? b : a;
    }
    VT_FORWARD_IF_ERROR(out_val(c, 0, x->dtype, r, sh, out));
    if (!c->fold || out[0] == VTI_NONE) return VT_OK;
    vt_og_value *o = V(c, out[0]);
    for (int64_t i = 0; i < nel(o); i++) {
        unravel(i, r, sh, idx);
        copy_el(o, i, V(c, in[0]), bcast_at(V(c, in[0]), r, idx));
    }
    return VT_OK;
}

static vt_err h_shape(vti_og *c, const uint32_t *in, uint32_t nin, uint32_t *out)
{
    int64_t s, e;
    VT_FORWARD_IF_ERROR(need(in, nin, 0));
    const vt_og_value *x = V(c, in[0]);
    VT_FORWARD_IF_ERROR(a_int(c, "start", 0, &s));
    VT_FORWARD_IF_ERROR(a_int(c, "end", x->rank, &e));
    int64_t r = x->rank;
    s = s < 0 ? s + r : s, e = e < 0 ? e + r : e;
    s = s < 0 ? 0 : s > r ? r : s, e = e < 0 ? 0 : e > r ? r : e;
    int64_t n = e > s ? e - s : 0;
    VT_FORWARD_IF_ERROR(out_val(c, 0, VT_OG_I64, 1, &n, out));
    for (int64_t k = 0; out[0] != VTI_NONE && k < n; k++) ((int64_t *)V(c, out[0])->data)[k] = V(c, in[0])->shape[s + k];
    return VT_OK;
}

static vt_err h_constant(vti_og *c, const uint32_t *in, uint32_t nin, uint32_t *out)
{
    (void)in, (void)nin;
    const Onnx__NodeProto *n = c->n;
    VT_RETURN_ERROR_IF(n->n_attribute != 1 || n->n_output != 1 || !*n->output[0], VT_ERR_FORMAT,
                       "%zu attributes, %zu outputs (one each)", n->n_attribute, n->n_output);
    const Onnx__AttributeProto *a = n->attribute[0];
    const char *an = a->name ? a->name : "";
    if (!strcmp(an, "value")) {
        VT_RETURN_ERROR_IF(a->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR || !a->t, VT_ERR_FORMAT,
                           "value is not a tensor");
        return tensor_value(c, a->t, n->output[0], &out[0]);
    }
    int64_t one = 1, k = 0;
    int ints = !strcmp(an, "value_int") || !strcmp(an, "value_ints"), many = !strcmp(an, "value_ints") || !strcmp(an, "value_floats");
    VT_RETURN_ERROR_IF(!ints && strcmp(an, "value_float") && strcmp(an, "value_floats"), VT_ERR_ARG,
                       "attribute %s (supported: value, value_float(s), value_int(s))", an);
    Onnx__AttributeProto__AttributeType want = ints ? (many ? ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS
                                                            : ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT)
                                                    : (many ? ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS
                                                            : ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
    VT_RETURN_ERROR_IF(a->type != want, VT_ERR_FORMAT, "%s of type %d", an, (int)a->type);
    if (many) {
        size_t m = ints ? a->n_ints : a->n_floats;
        VT_RETURN_ERROR_IF(m > (size_t)VT_OG_MAX_FOLD_ELEMS, VT_ERR_LIMIT, "%s of %zu values", an, m);
        k = (int64_t)m;
    }
    VT_FORWARD_IF_ERROR(out_val(c, 0, ints ? VT_OG_I64 : VT_OG_F32, many ? 1 : 0, many ? &k : &one, out));
    vt_og_value *o = V(c, out[0]);
    for (int64_t i = 0; i < (many ? k : 1); i++) {
        if (ints) ((int64_t *)o->data)[i] = many ? a->ints[i] : a->i;
        else ((float *)o->data)[i] = many ? a->floats[i] : a->f;
    }
    return VT_OK;
}

static vt_err h_constantofshape(vti_og *c, const uint32_t *in, uint32_t nin, uint32_t *out)
{
    int64_t sh[VT_OG_MAX_RANK];
    size_t r;
    VT_FORWARD_IF_ERROR(need_const(c, in, nin, 0, "shape"));
    VT_FORWARD_IF_ERROR(const_ints(c, in[0], "shape", VT_OG_MAX_RANK, sh, &r));
    vt_og_dtype t = VT_OG_F32;
    void *fill = NULL;
    const Onnx__AttributeProto *a = pattr(c->n, "value");
    if (a) {
        uint32_t rr;
        int64_t s2[VT_OG_MAX_RANK];
        size_t k;
        VT_RETURN_ERROR_IF(a->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR || !a->t, VT_ERR_FORMAT,
                           "value is not a tensor");
        VT_FORWARD_IF_ERROR(vt_og_tensor_decode(a->t, "value", &t, &rr, s2, &fill, &k));
        if (k != 1) {
            free(fill);
            VT_RETURN_ERROR(VT_ERR_FORMAT, "value has %zu elements (one)", k);
        }
    }
    vt_err e = out_val(c, 0, t, (uint32_t)r, sh, out);
    if (!e && fill && out[0] != VTI_NONE) {
        vt_og_value *o = V(c, out[0]);
        size_t es = vt_og_dtype_size(t);
        for (int64_t i = 0; i < nel(o); i++) memcpy((uint8_t *)o->data + (size_t)i * es, fill, es);
    }
    free(fill);
    return e;
}

static vt_err h_range(vti_og *c, const uint32_t *in, uint32_t nin, uint32_t *out)
{
    for (uint32_t k = 0; k < 3; k++) {
        VT_FORWARD_IF_ERROR(need_const(c, in, nin, k, k == 0 ? "start" : k == 1 ? "limit" : "delta"));
        VT_FORWARD_IF_ERROR(same_dtype(c, in[0], in[k]));
        VT_RETURN_ERROR_IF(nel(V(c, in[k])) != 1, VT_ERR_FORMAT, "input %u is not a scalar", k);
    }
    const vt_og_value *s = V(c, in[0]), *l = V(c, in[1]), *d = V(c, in[2]);
    vt_og_dtype t = s->dtype;
    VT_RETURN_ERROR_IF(t == VT_OG_BOOL, VT_ERR_FORMAT, "a range of booleans");
    int64_t n;
    if (is_int(t)) {
        int64_t a = geti(s, 0), b = geti(l, 0), st = geti(d, 0);
        VT_RETURN_ERROR_IF(st == 0, VT_ERR_FORMAT, "delta 0");
        /* the count in 128 bits: (b - a) may not fit 64 */
        __int128 num = (__int128)b - a, q = st > 0 ? (num + st - 1) / st : (num + st + 1) / st;
        VT_RETURN_ERROR_IF(q > VT_OG_MAX_FOLD_ELEMS, VT_ERR_LIMIT, "a range of more than %lld elements",
                           (long long)VT_OG_MAX_FOLD_ELEMS);
        n = q > 0 ? (int64_t)q : 0;
    } else {
        double a = getf(s, 0), b = getf(l, 0), st = getf(d, 0), q = ceil((b - a) / st);
        VT_RETURN_ERROR_IF(!(q <= (double)VT_OG_MAX_FOLD_ELEMS), VT_ERR_LIMIT, "a range of %g elements", q);
        n = q > 0 ? (int64_t)q : 0;
    }
    VT_FORWARD_IF_ERROR(out_val(c, 0, t, 1, &n, out));
    if (out[0] == VTI_NONE) return VT_OK;
    vt_og_value *o = V(c, out[0]);
    s = V(c, in[0]), d = V(c, in[2]);
    for (int64_t i = 0; i < n; i++) {
        if (is_int(t)) { /* start + i * delta lies in [start, limit): in 128 bits, it fits 64 */
            __int128 x = (__int128)geti(s, 0) + (__int128)i * geti(d, 0);
            VT_FORWARD_IF_ERROR(seti(o, i, (int64_t)x));
        }
        else setf(o, i, getf(s, 0) + (double)i * getf(d, 0));
    }
    return VT_OK;
}

static vt_err h_trilu(vti_og *c, const uint32_t *in, uint32_t nin, uint32_t *out)
{
    int64_t up, k = 0, idx[VT_OG_MAX_RANK];
    VT_RETURN_ERROR_IF(c->opset < 14, VT_ERR_ARG, "Trilu is an operator of opset 14 on (the file's: %lld)",
                       (long long)c->opset);
    VT_FORWARD_IF_ERROR(need(in, nin, 0));
    VT_FORWARD_IF_ERROR(a_int(c, "upper", 1, &up));
    if (has(in, nin, 1)) {
        VT_RETURN_ERROR_IF(nel(V(c, in[1])) != 1 || V(c, in[1])->dtype != VT_OG_I64, VT_ERR_FORMAT, "k is not one int64");
        k = geti(V(c, in[1]), 0);
    }
    const vt_og_value *x = V(c, in[0]);
    VT_RETURN_ERROR_IF(x->rank < 2, VT_ERR_FORMAT, "rank %u (at least 2)", x->rank);
    VT_FORWARD_IF_ERROR(out_like(c, 0, x->dtype, in[0], out));
    if (out[0] == VTI_NONE) return VT_OK;
    vt_og_value *o = V(c, out[0]);
    for (int64_t i = 0; i < nel(o); i++) {
        unravel(i, o->rank, o->shape, idx);
        int64_t row = idx[o->rank - 2], col = idx[o->rank - 1]; /* |col - row| < 2^31: no overflow */
        int keep = up ? col - row >= k : col - row <= k;
        if (keep) copy_el(o, i, V(c, in[0]), i); /* else the zero new_value left */
    }
    return VT_OK;
}

/* ---------------------------------------------------------------- the operator table */

enum { F_NEVER, F_CONST, F_ALWAYS, F_ONLY, F_ALIAS };

typedef struct {
    const char *op;
    vti_og_fn fn;
    uint8_t fold;            /* F_NEVER: a compute node; F_CONST: folds when every input is a constant;
                              * F_ALWAYS: folds (its handler needs constant inputs); F_ONLY: accepted
                              * only when every input is a constant; F_ALIAS: Identity */
    uint8_t min_in, max_in, max_out;
    const char *attrs;       /* the attributes it defines, each followed by a space */
} vti_og_op;

static vt_err h_identity(vti_og *c, const uint32_t *in, uint32_t nin, uint32_t *out)
{
    VT_FORWARD_IF_ERROR(need(in, nin, 0));
    (void)c;
    out[0] = in[0];
    return VT_OK;
}

static const vti_og_op OPS[] = {
    {"Gemm", h_gemm, F_NEVER, 2, 3, 1, "alpha beta transA transB "},
    {"MatMul", h_matmul, F_NEVER, 2, 2, 1, ""},
    {"Add", h_arith, F_CONST, 2, 2, 1, ""},
    {"Sub", h_arith, F_CONST, 2, 2, 1, ""},
    {"Mul", h_arith, F_CONST, 2, 2, 1, ""},
    {"Div", h_arith, F_CONST, 2, 2, 1, ""},
    {"Pow", h_arith, F_CONST, 2, 2, 1, ""},
    {"Sqrt", h_unary, F_CONST, 1, 1, 1, ""},
    {"Reciprocal", h_unary, F_CONST, 1, 1, 1, ""},
    {"Erf", h_unary, F_NEVER, 1, 1, 1, ""},
    {"Tanh", h_unary, F_NEVER, 1, 1, 1, ""},
    {"Sigmoid", h_unary, F_NEVER, 1, 1, 1, ""},
    {"Relu", h_unary, F_NEVER, 1, 1, 1, ""},
    {"LeakyRelu", h_unary, F_NEVER, 1, 1, 1, "alpha "},
    {"Softmax", h_softmax, F_NEVER, 1, 1, 1, "axis "},
    {"LogSoftmax", h_softmax, F_NEVER, 1, 1, 1, "axis "},
    {"LayerNormalization", h_layernorm, F_NEVER, 2, 3, 3, "axis epsilon stash_type "},
    {"BatchNormalization", h_batchnorm, F_NEVER, 5, 5, 5, "epsilon momentum training_mode "},
    {"ReduceMean", h_reducemean, F_NEVER, 1, 2, 1, "axes keepdims "},
    {"Conv", h_window, F_NEVER, 2, 3, 1, "auto_pad dilations group kernel_shape pads strides "},
    {"MaxPool", h_window, F_NEVER, 1, 1, 2, "auto_pad ceil_mode dilations kernel_shape pads storage_order strides "},
    {"AveragePool", h_window, F_NEVER, 1, 1, 1, "auto_pad ceil_mode count_include_pad kernel_shape pads strides "},
    {"GlobalAveragePool", h_gap, F_NEVER, 1, 1, 1, ""},
    {"Flatten", h_flatten, F_CONST, 1, 1, 1, "axis "},
    {"Reshape", h_reshape, F_CONST, 2, 2, 1, "allowzero "},
    {"Transpose", h_transpose, F_CONST, 1, 1, 1, "perm "},
    {"Concat", h_concat, F_CONST, 1, 255, 1, "axis "},
    {"Split", h_split, F_CONST, 1, 2, 64, "axis "},
    {"Slice", h_slice, F_CONST, 3, 5, 1, ""},
    {"Gather", h_gather, F_CONST, 2, 2, 1, "axis "},
    {"Dropout", h_dropout, F_NEVER, 1, 3, 2, "seed "},
    {"Where", h_where, F_CONST, 3, 3, 1, ""},
    {"Identity", h_identity, F_ALIAS, 1, 1, 1, ""},
    {"Cast", h_cast, F_CONST, 1, 1, 1, "to "},
    {"Not", h_unary, F_CONST, 1, 1, 1, ""},
    {"Equal", h_compare, F_CONST, 2, 2, 1, ""},
    {"Expand", h_expand, F_CONST, 2, 2, 1, ""},
    {"Unsqueeze", h_unsqueeze, F_CONST, 2, 2, 1, ""},
    {"Squeeze", h_squeeze, F_CONST, 1, 2, 1, ""},
    {"Shape", h_shape, F_ALWAYS, 1, 1, 1, "end start "},
    {"Constant", h_constant, F_ALWAYS, 0, 0, 1, "value value_float value_floats value_int value_ints "},
    {"ConstantOfShape", h_constantofshape, F_ALWAYS, 1, 1, 1, "value "},
    {"Range", h_range, F_ALWAYS, 3, 3, 1, ""},
    {"Trilu", h_trilu, F_ONLY, 1, 2, 1, "upper "},
    {"Greater", h_compare, F_ONLY, 2, 2, 1, ""},
    {"Less", h_compare, F_ONLY, 2, 2, 1, ""},
};
#define VTI_N_OPS (sizeof OPS / sizeof OPS[0])

#define VTI_SUPPORTED                                                                                                  \
    "supported: Gemm, MatMul, Add, Sub, Mul, Div, Pow, Sqrt, Reciprocal, Erf, Tanh, Sigmoid, Relu, LeakyRelu, Softmax, "           \
    "LogSoftmax, LayerNormalization, BatchNormalization, ReduceMean, Conv, MaxPool, AveragePool, GlobalAveragePool, "  \
    "Flatten, Reshape, Transpose, Concat, Split, Slice, Gather, Dropout, Where, Identity, Cast, Not, Equal, Expand, "   \
    "Unsqueeze, Squeeze, Shape, Constant, ConstantOfShape, Range; on constants only: Trilu, Greater, Less"

/* the attributes of node n: each one its operator defines, of a type we keep */
static vt_err check_attrs(const vti_og_op *op, const Onnx__NodeProto *n)
{
    for (size_t i = 0; i < n->n_attribute; i++) {
        const Onnx__AttributeProto *a = n->attribute[i];
        const char *an = a->name ? a->name : "";
        size_t L = strlen(an);
        const char *p = op->attrs;
        int ok = 0;
        while (!ok && L && (p = strstr(p, an)) != NULL) {
            ok = (p == op->attrs || p[-1] == ' ') && p[L] == ' ';
            p += L;
        }
        VT_RETURN_ERROR_IF(!ok, VT_ERR_ARG, "attribute \"%s\" is not supported (%s defines: %s)", an, op->op,
                           *op->attrs ? op->attrs : "none");
        VT_RETURN_ERROR_IF(a->ref_attr_name && *a->ref_attr_name, VT_ERR_ARG, "attribute %s refers to a function's", an);
        for (size_t j = 0; j < i; j++)
            VT_RETURN_ERROR_IF(n->attribute[j]->name && !strcmp(n->attribute[j]->name, an), VT_ERR_FORMAT,
                               "attribute %s twice", an);
    }
    return VT_OK;
}

/* the attributes of a compute node, as ours */
static vt_err keep_attrs(const Onnx__NodeProto *n, vt_og_node *o)
{
    o->attr = calloc(n->n_attribute ? n->n_attribute : 1, sizeof *o->attr);
    VT_RETURN_ERROR_IF(!o->attr, VT_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < n->n_attribute; i++) {
        const Onnx__AttributeProto *a = n->attribute[i];
        vt_og_attr *t = &o->attr[o->n_attr++];
        t->name = strdup(a->name);
        VT_RETURN_ERROR_IF(!t->name, VT_ERR_NOMEM, "out of memory");
        switch (a->type) {
        case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT: t->type = VT_OGA_INT, t->i = a->i; break;
        case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT: t->type = VT_OGA_FLOAT, t->f = a->f; break;
        case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS:
            t->type = VT_OGA_INTS, t->n = a->n_ints;
            t->ints = malloc((a->n_ints ? a->n_ints : 1) * sizeof *t->ints);
            VT_RETURN_ERROR_IF(!t->ints, VT_ERR_NOMEM, "out of memory");
            if (a->n_ints) memcpy(t->ints, a->ints, a->n_ints * sizeof *t->ints);
            break;
        case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS:
            t->type = VT_OGA_FLOATS, t->n = a->n_floats;
            t->floats = malloc((a->n_floats ? a->n_floats : 1) * sizeof *t->floats);
            VT_RETURN_ERROR_IF(!t->floats, VT_ERR_NOMEM, "out of memory");
            for (size_t k = 0; k < a->n_floats; k++) t->floats[k] = a->floats[k];
            break;
        case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING:
            t->type = VT_OGA_STRING, t->n = a->s.len;
            VT_RETURN_ERROR_IF(a->s.len && memchr(a->s.data, 0, a->s.len), VT_ERR_FORMAT, "attribute %s: a string with a NUL",
                               a->name);
            t->s = malloc(a->s.len + 1);
            VT_RETURN_ERROR_IF(!t->s, VT_ERR_NOMEM, "out of memory");
            if (a->s.len) memcpy(t->s, a->s.data, a->s.len);
            t->s[a->s.len] = 0;
            break;
        default: VT_RETURN_ERROR(VT_ERR_ARG, "attribute %s of type %d (supported: int, float, ints, floats, string)",
                                 a->name, (int)a->type);
        }
    }
    return VT_OK;
}

static vt_err add_node(vti_og *c, const char *name, const char *op, const uint32_t *in, uint32_t nin, const uint32_t *out,
                       uint32_t nout)
{
    vt_og_graph *g = c->g;
    if (g->n_nodes == c->cap_n) {
        uint32_t nc = c->cap_n ? 2 * c->cap_n : 64;
        vt_og_node *nn = realloc(g->node, (size_t)nc * sizeof *nn);
        VT_RETURN_ERROR_IF(!nn, VT_ERR_NOMEM, "out of memory");
        g->node = nn, c->cap_n = nc;
    }
    vt_og_node *o = &g->node[g->n_nodes++];
    memset(o, 0, sizeof *o);
    o->name = strdup(name), o->op = strdup(op);
    o->in = malloc((nin ? nin : 1) * sizeof *o->in), o->out = malloc((nout ? nout : 1) * sizeof *o->out);
    VT_RETURN_ERROR_IF(!o->name || !o->op || !o->in || !o->out, VT_ERR_NOMEM, "out of memory");
    memcpy(o->in, in, nin * sizeof *in), memcpy(o->out, out, nout * sizeof *out);
    o->n_in = nin, o->n_out = nout;
    return keep_attrs(c->n, o);
}

/* node i of the file: checked, folded or kept; its outputs bound to their names */
static vt_err one_node(vti_og *c, size_t i, uint32_t *in, uint32_t *out)
{
    const Onnx__NodeProto *n = c->n;
    const char *op = n->op_type ? n->op_type : "";
    VT_RETURN_ERROR_IF(n->domain && *n->domain && strcmp(n->domain, "ai.onnx") != 0, VT_ERR_ARG,
                       "operator %s of domain %s is not supported (the default domain only; " VTI_SUPPORTED ")", op,
                       n->domain);
    const vti_og_op *d = NULL;
    for (size_t k = 0; k < VTI_N_OPS && !d; k++)
        if (!strcmp(OPS[k].op, op)) d = &OPS[k];
    VT_RETURN_ERROR_IF(!d, VT_ERR_ARG, "operator %s is not supported (" VTI_SUPPORTED ")", op);
    uint32_t nin = (uint32_t)n->n_input, nout = (uint32_t)n->n_output;
    VT_RETURN_ERROR_IF(nin < d->min_in || nin > d->max_in || nout < 1 || nout > d->max_out, VT_ERR_FORMAT,
                       "%u inputs, %u outputs (%s: %u..%u inputs, 1..%u outputs)", nin, nout, op, d->min_in, d->max_in,
                       d->max_out);
    VT_FORWARD_IF_ERROR(check_attrs(d, n));
    int all_const = 1;
    for (uint32_t k = 0; k < nin; k++) {
        in[k] = VTI_NONE;
        if (!*n->input[k]) continue; /* an omitted optional input */
        in[k] = lookup(c, n->input[k]);
        VT_RETURN_ERROR_IF(in[k] == VTI_NONE, VT_ERR_FORMAT,
                           "reads %s, which no earlier node, initializer or graph input writes (a missing input, "
                           "a cycle, or nodes out of topological order)", n->input[k]);
        all_const &= V(c, in[k])->is_const;
    }
    for (uint32_t k = 0; k < nout; k++) {
        VT_RETURN_ERROR_IF(*n->output[k] && lookup(c, n->output[k]) != VTI_NONE, VT_ERR_FORMAT, "writes %s, written before",
                           n->output[k]);
        for (uint32_t j = 0; j < k; j++)
            VT_RETURN_ERROR_IF(*n->output[k] && !strcmp(n->output[j], n->output[k]), VT_ERR_FORMAT, "writes %s twice",
                               n->output[k]);
    }
    VT_RETURN_ERROR_IF(d->fold == F_ONLY && !all_const, VT_ERR_ARG,
                       "%s is accepted only on constants (it folds at import); an input is computed", op);
    c->fold = d->fold == F_ALWAYS || d->fold == F_ONLY || (d->fold == F_CONST && all_const);
    for (uint32_t k = 0; k < nout; k++) out[k] = VTI_NONE;
    VT_FORWARD_IF_ERROR(d->fn(c, in, nin, out));
    for (uint32_t k = 0; k < nout; k++)
        if (out[k] != VTI_NONE) VT_FORWARD_IF_ERROR(bind(c, n->output[k], out[k]));
    if (c->fold || d->fold == F_ALIAS) return VT_OK;
    char nm[96];
    snprintf(nm, sizeof nm, "%s_%zu", op, i);
    return add_node(c, n->name && *n->name ? n->name : nm, op, in, nin, out, nout);
}

/* a graph input: dtype and static shape, the first dimension the batch */
static vt_err graph_input(vti_og *c, const Onnx__ValueInfoProto *vi, int64_t batch, uint32_t *id)
{
    const char *nm = vi->name;
    const Onnx__TypeProto *ty = vi->type;
    VT_RETURN_ERROR_IF(!ty || ty->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !ty->tensor_type ||
                           !ty->tensor_type->shape,
                       VT_ERR_ARG, "input %s is not a tensor of a known rank", nm);
    vt_og_dtype t = VT_OG_F32;
    VT_FORWARD_IF_ERROR(dtype_of(ty->tensor_type->elem_type, nm, &t));
    const Onnx__TensorShapeProto *sh = ty->tensor_type->shape;
    VT_RETURN_ERROR_IF(sh->n_dim > VT_OG_MAX_RANK, VT_ERR_LIMIT, "input %s: rank %zu (at most %d)", nm, sh->n_dim,
                       VT_OG_MAX_RANK);
    int64_t d[VT_OG_MAX_RANK];
    for (size_t k = 0; k < sh->n_dim; k++) {
        const Onnx__TensorShapeProto__Dimension *dm = sh->dim[k];
        int fixed = dm->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
        if (k == 0 && batch > 0) {
            VT_RETURN_ERROR_IF(fixed && dm->dim_value != batch, VT_ERR_ARG,
                               "input %s: dimension 0 is %lld, the batch %lld", nm, (long long)dm->dim_value,
                               (long long)batch);
            d[k] = batch;
            continue;
        }
        VT_RETURN_ERROR_IF(!fixed, VT_ERR_ARG, "input %s: dimension %zu is symbolic (%s)%s", nm, k,
                           dm->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM && dm->dim_param
                               ? dm->dim_param : "unknown",
                           k == 0 ? ": give the batch" : " (only the first, the batch, may be)");
        VT_RETURN_ERROR_IF(dm->dim_value < 1, VT_ERR_FORMAT, "input %s: dimension %zu is %lld", nm, k,
                           (long long)dm->dim_value);
        d[k] = dm->dim_value;
    }
    VT_FORWARD_IF_ERROR(new_value(c, nm, t, (uint32_t)sh->n_dim, d, 0, id));
    V(c, *id)->is_input = 1;
    return VT_OK;
}

/* the values used (inputs, initializers, compute nodes' operands, outputs) kept, renumbered in that
 * order of first use; the rest freed */
static vt_err compact(vt_og_graph *g)
{
    uint32_t *map = malloc((g->n_values ? g->n_values : 1) * sizeof *map);
    VT_RETURN_ERROR_IF(!map, VT_ERR_NOMEM, "out of memory");
    uint32_t nv = 0;
    for (uint32_t i = 0; i < g->n_values; i++) map[i] = VTI_NONE;
#define VTI_USE(id)                                          \
    do {                                                     \
        if ((id) != VTI_NONE && map[id] == VTI_NONE) map[id] = nv++; \
    } while (0)
    for (uint32_t i = 0; i < g->n_inputs; i++) VTI_USE(g->inputs[i]);
    for (uint32_t i = 0; i < g->n_values; i++)
        if (g->v[i].is_init) VTI_USE(i);
    for (uint32_t i = 0; i < g->n_nodes; i++) {
        for (uint32_t k = 0; k < g->node[i].n_in; k++) VTI_USE(g->node[i].in[k]);
        for (uint32_t k = 0; k < g->node[i].n_out; k++) VTI_USE(g->node[i].out[k]);
    }
    for (uint32_t i = 0; i < g->n_outputs; i++) VTI_USE(g->outputs[i]);
#undef VTI_USE
    vt_og_value *v = malloc((nv ? nv : 1) * sizeof *v);
    if (!v) {
        free(map);
        VT_RETURN_ERROR(VT_ERR_NOMEM, "out of memory");
    }
    for (uint32_t i = 0; i < g->n_values; i++) {
        if (map[i] != VTI_NONE) v[map[i]] = g->v[i];
        else free(g->v[i].name), free(g->v[i].data);
    }
    free(g->v);
    g->v = v, g->n_values = nv;
#define VTI_MAP(id) ((id) = (id) == VTI_NONE ? VTI_NONE : map[id])
    for (uint32_t i = 0; i < g->n_inputs; i++) VTI_MAP(g->inputs[i]);
    for (uint32_t i = 0; i < g->n_outputs; i++) VTI_MAP(g->outputs[i]);
    for (uint32_t i = 0; i < g->n_nodes; i++) {
        for (uint32_t k = 0; k < g->node[i].n_in; k++) VTI_MAP(g->node[i].in[k]);
        for (uint32_t k = 0; k < g->node[i].n_out; k++) VTI_MAP(g->node[i].out[k]);
    }
#undef VTI_MAP
    free(map);
    return VT_OK;
}

static vt_err read_model(const Onnx__ModelProto *m, int64_t batch, vti_og *c)
{
    vt_og_graph *g = c->g;
    c->opset = -1;
    for (size_t i = 0; i < m->n_opset_import; i++) {
        const Onnx__OperatorSetIdProto *o = m->opset_import[i];
        if (!o->domain || !*o->domain || !strcmp(o->domain, "ai.onnx")) c->opset = o->has_version ? o->version : -1;
    }
    g->opset = c->opset;
    VT_RETURN_ERROR_IF(c->opset < 13 || c->opset > 17, VT_ERR_ARG, "opset %lld of the default domain (supported: 13..17)",
                       (long long)c->opset);
    g->producer = strdup(m->producer_name ? m->producer_name : "");
    VT_RETURN_ERROR_IF(!g->producer, VT_ERR_NOMEM, "out of memory");
    const Onnx__GraphProto *gp = m->graph;
    VT_RETURN_ERROR_IF(!gp, VT_ERR_FORMAT, "the model has no graph");
    VT_RETURN_ERROR_IF(gp->n_node > VT_OG_MAX_NODES, VT_ERR_LIMIT, "%zu nodes (at most %u)", gp->n_node, VT_OG_MAX_NODES);
    VT_RETURN_ERROR_IF(gp->n_sparse_initializer, VT_ERR_ARG, "sparse initializers are not supported");
    VT_RETURN_ERROR_IF(gp->n_initializer > VT_OG_MAX_NODES || gp->n_input > VT_OG_MAX_NODES ||
                           gp->n_output > VT_OG_MAX_NODES,
                       VT_ERR_LIMIT, "%zu initializers, %zu inputs, %zu outputs (at most %u each)", gp->n_initializer,
                       gp->n_input, gp->n_output, VT_OG_MAX_NODES);
    size_t names = gp->n_initializer + gp->n_input;
    for (size_t i = 0; i < gp->n_node; i++) names += gp->node[i]->n_output;
    VT_RETURN_ERROR_IF(names > ((size_t)1 << 22), VT_ERR_LIMIT, "%zu value names (at most %u)", names, 1u << 22);
    c->hcap = 16;
    while (c->hcap < 2 * names + 2) c->hcap *= 2;
    c->hname = calloc(c->hcap, sizeof *c->hname), c->hid = calloc(c->hcap, sizeof *c->hid);
    VT_RETURN_ERROR_IF(!c->hname || !c->hid, VT_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < gp->n_initializer; i++) { /* parameters (float32) and constant shapes (int64) */
        const Onnx__TensorProto *t = gp->initializer[i];
        VT_RETURN_ERROR_IF(!t->name || !*t->name, VT_ERR_FORMAT, "initializer %zu has no name", i);
        int dt = t->has_data_type ? t->data_type : 0;
        VT_RETURN_ERROR_IF(dt != ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT && dt != ONNX__TENSOR_PROTO__DATA_TYPE__INT64,
                           VT_ERR_ARG, "initializer %s has element type %d (supported: float32 parameters, int64 shapes)",
                           t->name, dt);
        uint32_t id;
        VT_FORWARD_IF_ERROR(tensor_value(c, t, t->name, &id));
        if (dt == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT) V(c, id)->is_init = 1, V(c, id)->is_const = 0;
        VT_FORWARD_IF_ERROR(bind(c, t->name, id));
    }
    g->inputs = malloc((gp->n_input ? gp->n_input : 1) * sizeof *g->inputs);
    g->outputs = malloc((gp->n_output ? gp->n_output : 1) * sizeof *g->outputs);
    VT_RETURN_ERROR_IF(!g->inputs || !g->outputs, VT_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < gp->n_input; i++) {
        const Onnx__ValueInfoProto *vi = gp->input[i];
        VT_RETURN_ERROR_IF(!vi->name || !*vi->name, VT_ERR_FORMAT, "input %zu has no name", i);
        if (lookup(c, vi->name) != VTI_NONE) continue; /* an initializer listed as an input too */
        uint32_t id;
        VT_FORWARD_IF_ERROR(graph_input(c, vi, batch, &id));
        VT_FORWARD_IF_ERROR(bind(c, vi->name, id));
        g->inputs[g->n_inputs++] = id;
    }
    size_t most = 1;
    for (size_t i = 0; i < gp->n_node; i++) {
        size_t k = gp->node[i]->n_input > gp->node[i]->n_output ? gp->node[i]->n_input : gp->node[i]->n_output;
        most = k > most ? k : most;
    }
    uint32_t *in = malloc(most * sizeof *in), *out = malloc(most * sizeof *out);
    vt_err e = in && out ? VT_OK : vt_set_error(VT_ERR_NOMEM, "out of memory");
    for (size_t i = 0; !e && i < gp->n_node; i++) {
        c->n = gp->node[i];
        e = one_node(c, i, in, out);
        if (e) {
            char nm[96];
            snprintf(nm, sizeof nm, "%s_%zu", c->n->op_type ? c->n->op_type : "?", i);
            e = vt_error_prefix(e, "ONNX node %s (%s)", c->n->name && *c->n->name ? c->n->name : nm,
                                c->n->op_type ? c->n->op_type : "no op_type");
        }
    }
    free(in), free(out);
    VT_FORWARD_IF_ERROR(e);
    for (size_t i = 0; i < gp->n_output; i++) {
        const char *nm = gp->output[i]->name;
        uint32_t id = nm ? lookup(c, nm) : VTI_NONE;
        VT_RETURN_ERROR_IF(id == VTI_NONE, VT_ERR_FORMAT, "the graph's output %s is written by no node", nm ? nm : "?");
        g->outputs[g->n_outputs++] = id;
    }
    VT_RETURN_ERROR_IF(!g->n_outputs, VT_ERR_FORMAT, "the graph has no output");
    VT_FORWARD_IF_ERROR(compact(g));
    uint8_t *buf;
    size_t len;
    VT_FORWARD_IF_ERROR(vt_og_canonical(g, &buf, &len));
    e = vt_sha256(buf, len, g->canon_sha256);
    free(buf);
    return e;
}

vt_err vt_og_read(const uint8_t *bytes, size_t n, int64_t batch, vt_og_graph *g)
{
    memset(g, 0, sizeof *g);
    VT_RETURN_ERROR_IF(n > VT_OG_MAX_BYTES, VT_ERR_LIMIT, "%zu bytes (at most %zu)", n, VT_OG_MAX_BYTES);
    VT_RETURN_ERROR_IF(batch < 0 || batch > VT_OG_MAX_DIM, VT_ERR_ARG, "batch %lld", (long long)batch);
    VT_FORWARD_IF_ERROR(vt_sha256(bytes, n, g->file_sha256));
    Onnx__ModelProto *m = onnx__model_proto__unpack(NULL, n, bytes);
    VT_RETURN_ERROR_IF(!m, VT_ERR_FORMAT, "not an ONNX model (the protobuf does not decode)");
    vti_og c;
    memset(&c, 0, sizeof c);
    c.g = g;
    vt_err e = read_model(m, batch, &c);
    free(c.hname), free(c.hid);
    onnx__model_proto__free_unpacked(m, NULL);
    if (e) {
        uint8_t keep[32];
        memcpy(keep, g->file_sha256, 32);
        vt_og_free(g);
        memcpy(g->file_sha256, keep, 32);
    }
    return e;
}
#endif

vt_err vt_og_read_file(const char *path, int64_t batch, vt_og_graph *g)
{
    memset(g, 0, sizeof *g);
    uint8_t *p;
    size_t n;
    VT_FORWARD_IF_ERROR(read_whole(path, &p, &n));
    vt_err e = vt_og_read(p, n, batch, g);
    free(p);
    return e ? vt_error_prefix(e, "%s", path) : VT_OK;
}
