/* vt_onnx.c - the inference graph as ONNX (vt_onnx.h; docs/format.md "Export (ONNX)").
 *
 * The evaluation pass of the program is walked operation by operation; each program tensor it
 * writes becomes an ONNX value (named after the tensor), each state tensor it reads an initializer
 * in ONNX's layout. The program's activations are matrices: an image activation is channels-last
 * [B*H*W, C]; the ONNX values of images are NCHW, so every value carries its layout (a matrix
 * [N, F] or an image C x H x W; for the GPT token ids [N, T] and attention heads [N, H, T, D])
 * and an operation is translated only when its operands' layouts are what ONNX needs. A client
 * graph's layout moves (docs/models.md "ONNX out") leave no trace of the program's layouts: the
 * convolution weight's two moves none (the Conv reads the module's own [Co, C, k, k] parameter), an
 * activation's a Flatten or a Reshape between ONNX's matrices and NCHW images. A client's
 * transformer keeps a sequence as the program does, its rows [N*T, C] (ONNX's [N, T, C] order): the
 * patch embedding's image read as rows is a Reshape, Transpose, Reshape (image_rows), the mean over
 * the rows a ReduceMean, and the rest the GPT's translations. The messages are the protobuf-c structures generated from Debian's onnx.proto (arch/onnx.cmake);
 * nothing here encodes protobuf by hand. */
#include "vt_onnx.h"

#ifndef VT_HAVE_ONNX

int vt_onnx_available(void) { return 0; }

vt_err vt_onnx_write(const char *path, vt_model *m, const char *const *meta_kv, size_t n_meta, const char *doc)
{
    (void)path, (void)m, (void)meta_kv, (void)n_meta, (void)doc;
    VT_RETURN_ERROR(VT_ERR_UNSUPPORTED, "this trainer was built without ONNX support (it needs libonnx-dev, "
                                        "protobuf-c-compiler and libprotobuf-c-dev at build time: "
                                        "scripts/install-deps.sh, then reconfigure)");
}

#else

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/vt_bytes.h"
#include "../kernels/vt_gpt_hd.h" /* GELU's constants */
#include "../ops/vt_ops.h"
#include "onnx.pb-c.h"

int vt_onnx_available(void) { return 1; }

#define OPSET 13
#define IR_VERSION 7 /* the IR of opset 13 (ONNX 1.8) */

/* every allocation of one export, freed together */
typedef struct {
    void **p;
    size_t n, cap;
    int oom;
} pool;

static void *palloc(pool *a, size_t n)
{
    if (a->oom) return NULL;
    if (a->n == a->cap) {
        size_t cap = a->cap ? 2 * a->cap : 256;
        void **q = realloc(a->p, cap * sizeof *q);
        if (!q) return a->oom = 1, NULL;
        a->p = q, a->cap = cap;
    }
    void *x = calloc(1, n ? n : 1);
    if (!x) return a->oom = 1, NULL;
    return a->p[a->n++] = x;
}

static char *pstr(pool *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static char *pstr(pool *a, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *s = n < 0 ? NULL : palloc(a, (size_t)n + 1);
    if (!s) return NULL;
    va_start(ap, fmt);
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return s;
}

static void pool_free(pool *a)
{
    for (size_t i = 0; i < a->n; i++) free(a->p[i]);
    free(a->p);
}

/* a growing array of pointers in the pool (the repeated fields) */
typedef struct {
    void **v;
    size_t n, cap;
} plist;

static void plist_push(pool *a, plist *l, void *x)
{
    if (!x) {
        a->oom = 1;
        return;
    }
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 16;
        void **q = palloc(a, cap * sizeof *q);
        if (!q) return;
        if (l->n) memcpy(q, l->v, l->n * sizeof *q);
        l->v = q, l->cap = cap;
    }
    l->v[l->n++] = x;
}

/* The layout of an ONNX value: a matrix [N, F] (c = F), an image [N, C, H, W], token ids [N, T]
 * (int64, w = T) or a tensor of attention heads [N, H, R, F] (h = H, w = R rows per head, c = F):
 * the program's [B*H*R, F] with its rows grouped per (example, head). */
enum { L_NONE = 0, L_MAT, L_IMG, L_TOK, L_HEADS };

typedef struct {
    char *name;   /* the ONNX value's name (NULL: not written yet) */
    int layout;
    uint32_t c, h, w;
} value;

/* a gathered convolution operand: col = im2col(src) */
typedef struct {
    int is_col;
    uint32_t src, H, W, C, k, s, pad;
} colinfo;

/* A client graph's convolution weight on its way from the module's [Co, C, k, k] to the GEMM's
 * [k*k*C, Co] (two exact moves, docs/models.md "Layouts"): stage 1 the taps [Co*k*k, C], stage 2 the
 * GEMM's layout. No ONNX value of its own: the Conv reads the parameter as the module stores it. */
typedef struct {
    uint32_t param;
    uint8_t stage; /* 0: not a moved weight */
} wmove;

typedef struct {
    pool a;
    vt_model *m;
    const vt_program *p;
    value *v;      /* per program tensor */
    value *rows;   /* per program tensor: a channels-last image's pixels read as a sequence's rows [N*HW, C] */
    colinfo *col;  /* per program tensor */
    wmove *wm;     /* per program tensor */
    uint8_t *init; /* per program tensor: 0, or 1 + the perm of its initializer */
    plist nodes, inits, names;
    uint32_t logits; /* the softmax's input, UINT32_MAX if none */
    const char *mask; /* the causal mask [mask_T, mask_T], written once for every layer (NULL: not yet) */
    size_t mask_T;
} tr;

/* A fresh value name for program tensor t: "input", "logits", "probs" or the tensor's name, made
 * unique with ":2", ":3" ... should a tensor be written twice. */
static char *unique_name(tr *x, const char *base)
{
    char *s = pstr(&x->a, "%s", base);
    for (unsigned k = 2; s; k++) {
        size_t i = 0;
        while (i < x->names.n && strcmp(x->names.v[i], s) != 0) i++;
        if (i == x->names.n) break;
        s = pstr(&x->a, "%s:%u", base, k);
    }
    plist_push(&x->a, &x->names, s);
    return s;
}

static char *value_name(tr *x, uint32_t t)
{
    const char *base = t == x->p->input    ? "input"
                       : t == x->logits    ? "logits"
                       : t == x->p->probs  ? "probs"
                                           : x->p->t[t].name;
    return unique_name(x, base);
}

/* the name of a step inside the translation of one operation: "<tensor>.<what>" (unique) */
static char *step_name(tr *x, uint32_t t, const char *what)
{
    char *b = pstr(&x->a, "%s.%s", x->p->t[t].name, what);
    return b ? unique_name(x, b) : NULL;
}

static Onnx__AttributeProto *attr_int(tr *x, const char *name, int64_t i)
{
    Onnx__AttributeProto *at = palloc(&x->a, sizeof *at);
    if (!at) return NULL;
    onnx__attribute_proto__init(at);
    at->name = pstr(&x->a, "%s", name);
    at->has_type = 1, at->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
    at->has_i = 1, at->i = i;
    return at;
}

static Onnx__AttributeProto *attr_float(tr *x, const char *name, float f)
{
    Onnx__AttributeProto *at = palloc(&x->a, sizeof *at);
    if (!at) return NULL;
    onnx__attribute_proto__init(at);
    at->name = pstr(&x->a, "%s", name);
    at->has_type = 1, at->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT;
    at->has_f = 1, at->f = f;
    return at;
}

static Onnx__AttributeProto *attr_ints(tr *x, const char *name, size_t n, const int64_t *v)
{
    Onnx__AttributeProto *at = palloc(&x->a, sizeof *at);
    int64_t *c = palloc(&x->a, n * sizeof *c);
    if (!at || !c) return NULL;
    onnx__attribute_proto__init(at);
    at->name = pstr(&x->a, "%s", name);
    at->has_type = 1, at->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
    memcpy(c, v, n * sizeof *c);
    at->n_ints = n, at->ints = c;
    return at;
}

/* a node op_type(inputs...) -> output, attributes given as a NULL-terminated list */
static void node(tr *x, const char *op_type, const char *out, size_t n_in, const char *const *in, ...)
{
    Onnx__NodeProto *nd = palloc(&x->a, sizeof *nd);
    char **ins = palloc(&x->a, n_in * sizeof *ins), **outs = palloc(&x->a, sizeof *outs);
    if (!nd || !ins || !outs || !out) {
        x->a.oom = 1;
        return;
    }
    onnx__node_proto__init(nd);
    for (size_t i = 0; i < n_in; i++) ins[i] = pstr(&x->a, "%s", in[i]);
    outs[0] = (char *)out;
    nd->n_input = n_in, nd->input = ins;
    nd->n_output = 1, nd->output = outs;
    nd->op_type = pstr(&x->a, "%s", op_type);
    nd->name = pstr(&x->a, "%s", out);
    plist atl = {0};
    va_list ap;
    va_start(ap, in);
    for (Onnx__AttributeProto *at; (at = va_arg(ap, Onnx__AttributeProto *)) != NULL;) plist_push(&x->a, &atl, at);
    va_end(ap);
    nd->n_attribute = atl.n, nd->attribute = (Onnx__AttributeProto **)atl.v;
    plist_push(&x->a, &x->nodes, nd);
}

/* a node's inputs */
#define IN2(a, b) ((const char *const[]){(a), (b)})
#define IN3(a, b, c) ((const char *const[]){(a), (b), (c)})

/* The initializer of state tensor t: float32 with ONNX dims (rank r), its values little-endian.
 * perm: how to read it - 0 as stored; 1 a matrix [in, out] transposed to [out, in]; 2 a
 * convolution weight [k, k, Cin, Cout] permuted to [Cout, Cin, k, k]. Returns its name. */
static const char *initializer(tr *x, uint32_t t, int perm)
{
    const vt_tensor *d = &x->p->t[t];
    if (x->init[t]) {
        if (x->init[t] != perm + 1) x->a.oom = 2; /* read in two layouts: one initializer cannot be both */
        return d->name;
    }
    if (t >= x->p->n_state || d->dtype != VT_DT_F32) {
        x->a.oom = 2; /* not a state tensor: the program is not of the expected shape */
        return d->name;
    }
    const float *src = vt_model_tensor(x->m, t, NULL);
    Onnx__TensorProto *tp = palloc(&x->a, sizeof *tp);
    int64_t *dims = palloc(&x->a, 4 * sizeof *dims);
    uint8_t *raw = palloc(&x->a, d->n * 4);
    if (!tp || !dims || !raw) return d->name;
    onnx__tensor_proto__init(tp);
    size_t r = d->rank;
    if (perm == 1 && d->rank == 2) {
        const size_t I = d->shape[0], O = d->shape[1];
        dims[0] = (int64_t)O, dims[1] = (int64_t)I;
        for (size_t o = 0; o < O; o++)
            for (size_t i = 0; i < I; i++) {
                uint32_t u;
                memcpy(&u, &src[i * O + o], 4);
                vt_put_u32le(raw + 4 * (o * I + i), u);
            }
    } else if (perm == 2 && d->rank == 4) {
        const size_t K0 = d->shape[0], K1 = d->shape[1], Ci = d->shape[2], Co = d->shape[3];
        dims[0] = (int64_t)Co, dims[1] = (int64_t)Ci, dims[2] = (int64_t)K0, dims[3] = (int64_t)K1;
        for (size_t ky = 0; ky < K0; ky++)
            for (size_t kx = 0; kx < K1; kx++)
                for (size_t c = 0; c < Ci; c++)
                    for (size_t o = 0; o < Co; o++) {
                        uint32_t u;
                        memcpy(&u, &src[((ky * K1 + kx) * Ci + c) * Co + o], 4);
                        vt_put_u32le(raw + 4 * (((o * Ci + c) * K0 + ky) * K1 + kx), u);
                    }
    } else if (perm == 0) {
        for (size_t k = 0; k < r; k++) dims[k] = d->shape[k];
        for (size_t i = 0; i < d->n; i++) {
            uint32_t u;
            memcpy(&u, &src[i], 4);
            vt_put_u32le(raw + 4 * i, u);
        }
    } else {
        x->a.oom = 2;
        return d->name;
    }
    tp->n_dims = r, tp->dims = dims;
    tp->has_data_type = 1, tp->data_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
    tp->name = d->name;
    tp->has_raw_data = 1, tp->raw_data.len = d->n * 4, tp->raw_data.data = raw;
    plist_push(&x->a, &x->inits, tp);
    x->init[t] = (uint8_t)(perm + 1);
    return d->name;
}

/* A constant initializer of the translation (a scalar, a shape, a mask), named after the value it
 * serves: elem float (FLOAT), int64 (INT64) or uint8 read as bool (BOOL); n elements, rank r. */
enum { K_FLOAT = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, K_INT64 = ONNX__TENSOR_PROTO__DATA_TYPE__INT64,
       K_BOOL = ONNX__TENSOR_PROTO__DATA_TYPE__BOOL };

static const char *konst(tr *x, char *name, int type, size_t r, const int64_t *dims, size_t n, const void *v)
{
    const size_t es = type == K_FLOAT ? 4 : type == K_INT64 ? 8 : 1;
    Onnx__TensorProto *tp = palloc(&x->a, sizeof *tp);
    int64_t *dm = palloc(&x->a, (r ? r : 1) * sizeof *dm);
    uint8_t *raw = palloc(&x->a, n * es);
    if (!tp || !dm || !raw || !name) {
        x->a.oom = 1;
        return "";
    }
    onnx__tensor_proto__init(tp);
    if (r) memcpy(dm, dims, r * sizeof *dm);
    for (size_t i = 0; i < n; i++) {
        if (type == K_FLOAT) vt_put_u32le(raw + 4 * i, vt_f32_bits(((const float *)v)[i]));
        else if (type == K_INT64) vt_put_u64le(raw + 8 * i, (uint64_t)((const int64_t *)v)[i]);
        else raw[i] = ((const uint8_t *)v)[i] != 0;
    }
    tp->n_dims = r, tp->dims = dm;
    tp->has_data_type = 1, tp->data_type = type;
    tp->name = name;
    tp->has_raw_data = 1, tp->raw_data.len = n * es, tp->raw_data.data = raw;
    plist_push(&x->a, &x->inits, tp);
    return name;
}

/* a float scalar "<tensor t>.<what>" */
static const char *kfloat(tr *x, uint32_t t, const char *what, float f)
{
    return konst(x, step_name(x, t, what), K_FLOAT, 0, NULL, 1, &f);
}

/* an int64 vector "<tensor t>.<what>" (a shape, axes; rank 0 when scalar) */
static const char *kints(tr *x, uint32_t t, const char *what, int scalar, size_t n, const int64_t *v)
{
    const int64_t d = (int64_t)n;
    return konst(x, step_name(x, t, what), K_INT64, scalar ? 0 : 1, &d, n, v);
}

static Onnx__ValueInfoProto *value_info(tr *x, const char *name, int elem, size_t rank, const int64_t *dims)
{
    Onnx__ValueInfoProto *vi = palloc(&x->a, sizeof *vi);
    Onnx__TypeProto *ty = palloc(&x->a, sizeof *ty);
    Onnx__TypeProto__Tensor *tt = palloc(&x->a, sizeof *tt);
    Onnx__TensorShapeProto *sh = palloc(&x->a, sizeof *sh);
    Onnx__TensorShapeProto__Dimension **dv = palloc(&x->a, rank * sizeof *dv);
    if (!vi || !ty || !tt || !sh || !dv) return NULL;
    onnx__value_info_proto__init(vi);
    onnx__type_proto__init(ty);
    onnx__type_proto__tensor__init(tt);
    onnx__tensor_shape_proto__init(sh);
    for (size_t k = 0; k < rank; k++) {
        Onnx__TensorShapeProto__Dimension *dm = palloc(&x->a, sizeof *dm);
        if (!dm) return NULL;
        onnx__tensor_shape_proto__dimension__init(dm);
        if (dims[k] < 0) /* the batch */
            dm->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM, dm->dim_param = pstr(&x->a, "N");
        else
            dm->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE, dm->dim_value = dims[k];
        dv[k] = dm;
    }
    sh->n_dim = rank, sh->dim = dv;
    tt->has_elem_type = 1, tt->elem_type = elem, tt->shape = sh;
    ty->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE, ty->tensor_type = tt;
    vi->name = pstr(&x->a, "%s", name);
    vi->type = ty;
    return vi;
}

#define FAIL(...) return vt_set_error(VT_ERR_INTERNAL, "ONNX export: " __VA_ARGS__)
/* a graph the translator does not know (not a bug of the program): VT_ERR_UNSUPPORTED */
#define UNSUP(...) return vt_set_error(VT_ERR_UNSUPPORTED, "ONNX export: " __VA_ARGS__)

static const char *layout_name(int layout)
{
    return layout == L_IMG     ? "an image"
           : layout == L_TOK   ? "token ids"
           : layout == L_HEADS ? "attention heads"
                               : "a matrix";
}

/* The pixels of image value t (ONNX [N, C, H, W]; the program's channels-last [B*H*W, C]) read as a
 * sequence's rows, [N*H*W, C] in the program's (example, pixel) order: Reshape to [N, C, H*W],
 * Transpose (0, 2, 1) to [N, H*W, C] (the patch embedding's flatten(2).transpose(1, 2)), Reshape to
 * [N*H*W, C]; written once, for every reader. */
static vt_err image_rows(tr *x, const vt_opdesc *o, uint32_t t, const value **out)
{
    const value *v = &x->v[t];
    value *r = &x->rows[t];
    const vt_tensor *d = &x->p->t[t];
    const uint64_t HW = (uint64_t)v->h * v->w;
    if (d->rank != 2 || d->shape[1] != v->c || HW == 0 || HW > INT64_MAX || d->shape[0] % HW != 0)
        UNSUP("\"%s\" reads %s (a %u x %u x %u image) as a matrix of another shape: no ONNX form", o->name, d->name,
              v->c, v->h, v->w);
    if (!r->name) {
        const int64_t C = v->c, seq[3] = {-1, C, (int64_t)HW}, rows[2] = {-1, C}, perm[3] = {0, 2, 1};
        char *sq = step_name(x, t, "sequence"), *pf = step_name(x, t, "positions_first");
        node(x, "Reshape", sq, 2, IN2(v->name, kints(x, t, "sequence_shape", 0, 3, seq)), NULL);
        node(x, "Transpose", pf, 1, IN2(sq, NULL), attr_ints(x, "perm", 3, perm), NULL);
        r->name = step_name(x, t, "rows"), r->layout = L_MAT, r->c = v->c;
        node(x, "Reshape", r->name, 2, IN2(pf, kints(x, t, "rows_shape", 0, 2, rows)), NULL);
    }
    *out = r;
    return VT_OK;
}

/* the value an operation reads: written before, in the layout wanted (L_NONE: any); an image read as
 * a matrix is a sequence of its pixels (image_rows) */
static vt_err operand(tr *x, const vt_opdesc *o, uint32_t k, int layout, const value **out)
{
    const value *v = &x->v[o->in[k]];
    if (!v->name) FAIL("\"%s\" reads %s, which the evaluation pass has not written", o->name, x->p->t[o->in[k]].name);
    if (layout == L_MAT && v->layout == L_IMG) return image_rows(x, o, o->in[k], out);
    if (layout != L_NONE && v->layout != layout)
        UNSUP("\"%s\" reads %s (%s) as %s: no ONNX form", o->name, x->p->t[o->in[k]].name, layout_name(v->layout),
              layout_name(layout));
    *out = v;
    return VT_OK;
}

/* the value an operation writes */
static value *result(tr *x, uint32_t t, int layout, uint32_t c, uint32_t h, uint32_t w)
{
    value *v = &x->v[t];
    v->name = value_name(x, t), v->layout = layout, v->c = c, v->h = h, v->w = w;
    return v;
}

/* The ONNX Conv of operation o: the convolution c of weight wt, with bias (a state tensor [Co]; NO_BIAS:
 * none) as Conv's B, written as program tensor out. The weight is a state tensor [k, k, Cin, Cout]
 * (the built-in CNN's; permuted to ONNX's [Cout, Cin, k, k]) or a client graph's weight moved to the
 * GEMM's layout, whose parameter is already the module's [Cout, Cin, k, k] (its own initializer). */
#define NO_BIAS UINT32_MAX
static vt_err conv_node(tr *x, const vt_opdesc *o, const colinfo *c, uint32_t wt, uint32_t bias, uint32_t out)
{
    const vt_tensor *wd = &x->p->t[x->wm[wt].stage == 2 ? x->wm[wt].param : wt];
    uint32_t Co;
    const char *wname;
    if (x->wm[wt].stage == 2) {
        if (wd->rank != 4 || wd->shape[1] != c->C || wd->shape[2] != c->k || wd->shape[3] != c->k)
            FAIL("\"%s\": weight %s is not [Cout, %u, %u, %u]", o->name, wd->name, c->C, c->k, c->k);
        Co = wd->shape[0], wname = initializer(x, x->wm[wt].param, 0);
    } else {
        if (wd->rank != 4 || wd->shape[0] != c->k || wd->shape[1] != c->k || wd->shape[2] != c->C)
            FAIL("\"%s\": weight %s is not [%u, %u, %u, Cout]", o->name, wd->name, c->k, c->k, c->C);
        Co = wd->shape[3], wname = initializer(x, wt, 2);
    }
    if (bias != NO_BIAS && (x->p->t[bias].rank != 1 || x->p->t[bias].shape[0] != Co))
        FAIL("\"%s\": bias %s is not [%u]", o->name, x->p->t[bias].name, Co);
    const uint32_t Ho = (c->H + 2 * c->pad - c->k) / c->s + 1, Wo = (c->W + 2 * c->pad - c->k) / c->s + 1;
    const char *in[3] = {x->v[c->src].name, wname, bias != NO_BIAS ? initializer(x, bias, 0) : NULL};
    const int64_t ks[2] = {c->k, c->k}, st[2] = {c->s, c->s}, pd[4] = {c->pad, c->pad, c->pad, c->pad};
    value *r = result(x, out, L_IMG, Co, Ho, Wo);
    node(x, "Conv", r->name, bias != NO_BIAS ? 3 : 2, in, attr_ints(x, "kernel_shape", 2, ks),
         attr_ints(x, "strides", 2, st), attr_ints(x, "pads", 4, pd), attr_ints(x, "dilations", 2, (const int64_t[]){1, 1}),
         attr_int(x, "group", 1), NULL);
    return VT_OK;
}

/* the convolution of operation *j, a bias add right after it joined as Conv's B (*j moved past it) */
static vt_err conv_at(tr *x, uint32_t *j, uint32_t last, const colinfo *c, uint32_t wt)
{
    const vt_opdesc *o = &x->p->op[*j], *nx = *j < last ? &x->p->op[*j + 1] : NULL;
    if (nx && nx->kind == VT_OPK_BIAS_ADD && nx->in[0] == o->out[0] && nx->in[1] < x->p->n_state) {
        ++*j;
        return conv_node(x, o, c, wt, nx->in[1], nx->out[0]);
    }
    return conv_node(x, o, c, wt, NO_BIAS, o->out[0]);
}

/* The H x W of program tensor t, an image of HW pixels, from the first window (a convolution or max
 * pooling) that reads it or a value of its shape (through the elementwise kinds); HW x 1 when no
 * window reads it (then no operation depends on its split). */
static void image_dims(const vt_program *p, uint32_t j, uint32_t last, uint32_t t, uint32_t HW, uint32_t *H, uint32_t *W)
{
    uint32_t same[32] = {t}, n = 1;
    *H = HW, *W = 1;
    for (uint32_t q = j + 1; q <= last; q++) {
        const vt_opdesc *o = &p->op[q];
        int reads = 0;
        for (uint32_t i = 0; i < o->n_in; i++)
            for (uint32_t k = 0; k < n; k++) reads |= o->in[i] == same[k] && (i == 0 || o->kind == VT_OPK_ADD);
        if (!reads) continue;
        switch (o->kind) {
        case VT_OPK_CONV2D:
        case VT_OPK_IM2COL:
        case VT_OPK_MAXPOOL:
            if (o->iarg[1] > 0 && o->iarg[2] > 0 && (uint64_t)o->iarg[1] * (uint64_t)o->iarg[2] == HW) {
                *H = (uint32_t)o->iarg[1], *W = (uint32_t)o->iarg[2];
                return;
            }
            break;
        case VT_OPK_RELU:
        case VT_OPK_SIGMOID:
        case VT_OPK_TANH:
        case VT_OPK_LEAKY_RELU:
        case VT_OPK_ADD:
        case VT_OPK_BIAS_ADD:
        case VT_OPK_BN_EVAL:
            if (n < sizeof same / sizeof same[0]) same[n++] = o->out[0];
            break;
        default:
            break;
        }
    }
}

/* The layout moves of a client graph (to_channels_last, to_channels_first; iarg B HW C). Of a
 * parameter: the convolution weight's two moves to the GEMM's layout, recorded (the Conv reads the
 * module's own weight). Of an activation: ONNX's images are NCHW, so to_channels_first of an image
 * is its Flatten (ONNX's (c, h, w) order) and to_channels_last of a matrix [N, C*H*W] its Reshape to
 * [N, C, H, W] (of an image already NCHW, an Identity). */
static vt_err layout_move(tr *x, uint32_t j, uint32_t last)
{
    const vt_program *p = x->p;
    const vt_opdesc *o = &p->op[j];
    const int64_t *ia = o->iarg;
    const uint32_t in = o->in[0], t = o->out[0];
    const int to_first = o->kind == VT_OPK_NHWC_TO_NCHW;
    if (ia[0] < 1 || ia[1] < 1 || ia[2] < 1 || ia[1] > UINT32_MAX || ia[2] > UINT32_MAX ||
        (uint64_t)ia[1] * (uint64_t)ia[2] > UINT32_MAX)
        FAIL("\"%s\": bad layout arguments", o->name);
    const uint32_t HW = (uint32_t)ia[1], C = (uint32_t)ia[2];
    const vt_tensor *d = &p->t[in];
    if (in < p->n_state) { /* the module's weight [Co, C, k, k] to its taps [Co*k*k, C] */
        if (to_first || d->rank != 4 || d->shape[2] != d->shape[3] || ia[0] != d->shape[0] ||
            ia[1] != (int64_t)d->shape[2] * d->shape[3] || ia[2] != d->shape[1])
            FAIL("\"%s\" moves parameter %s other than a convolution weight [Co, C, k, k] to its taps", o->name,
                 d->name);
        x->wm[t] = (wmove){in, 1};
        return VT_OK;
    }
    if (x->wm[in].stage == 1) { /* the taps to the GEMM's [k*k*C, Co] */
        const vt_tensor *w = &p->t[x->wm[in].param];
        if (!to_first || ia[0] != 1 || ia[1] != w->shape[0] || ia[2] != (int64_t)w->shape[1] * w->shape[2] * w->shape[3])
            FAIL("\"%s\" moves the taps of %s other than to the GEMM's layout", o->name, w->name);
        x->wm[t] = (wmove){x->wm[in].param, 2};
        return VT_OK;
    }
    const value *a = NULL;
    if (to_first) { /* an image [N, C, H, W] flattened: ONNX's (c, h, w) order is the move's */
        VT_FORWARD_IF_ERROR(operand(x, o, 0, L_IMG, &a));
        if (a->c != C || (uint64_t)a->h * a->w != HW) FAIL("\"%s\": %u x %u x %u image moved as %u x %u", o->name, a->c, a->h, a->w, C, HW);
        const char *src = a->name;
        node(x, "Flatten", result(x, t, L_MAT, C * HW, 0, 0)->name, 1, IN2(src, NULL), attr_int(x, "axis", 1), NULL);
        return VT_OK;
    }
    VT_FORWARD_IF_ERROR(operand(x, o, 0, L_NONE, &a));
    const char *src = a->name;
    if (a->layout == L_IMG && a->c == C && (uint64_t)a->h * a->w == HW) { /* already an NCHW image */
        const uint32_t h = a->h, w = a->w;
        node(x, "Identity", result(x, t, L_IMG, C, h, w)->name, 1, IN2(src, NULL), NULL);
        return VT_OK;
    }
    if (a->layout != L_MAT || a->c != C * HW) FAIL("\"%s\": %s is not [N, %u]", o->name, d->name, C * HW);
    uint32_t H, W;
    image_dims(p, j, last, t, HW, &H, &W);
    const char *shape = kints(x, t, "shape", 0, 4, (const int64_t[]){-1, C, H, W});
    node(x, "Reshape", result(x, t, L_IMG, C, H, W)->name, 2, IN2(src, shape), NULL);
    return VT_OK;
}

/* ---- the transformer's kinds (arch gpt, and a client's transformer; docs/format.md "Export (ONNX)") */

/* ReduceSum over the columns of a matrix, kept as [N, 1] (the program's [M] row statistic) */
static void row_sum(tr *x, uint32_t t, const char *in, const char *out)
{
    node(x, "ReduceSum", out, 2, IN2(in, kints(x, t, "axes", 0, 1, (const int64_t[]){1})), attr_int(x, "keepdims", 1),
         NULL);
}

/* The row-wise kinds on [B*T, C] matrices: the embedding, layer norm's steps, the affine map, GELU.
 * Each is the chain of its kernel (kernels/vt_gpt_hd.h), one ONNX operator per IEEE operation. */
static vt_err gpt_rows(tr *x, const vt_opdesc *o)
{
    const vt_program *p = x->p;
    const uint32_t t = o->out[0];
    const value *a = NULL, *b = NULL;
    switch (o->kind) {
    case VT_OPK_EMBED: { /* wte[tok] + wpe[t]: Gather, Add (broadcast over N), back to [N*T, C] */
        VT_FORWARD_IF_ERROR(operand(x, o, 0, L_TOK, &a));
        const vt_tensor *te = &p->t[o->in[1]], *pe = &p->t[o->in[2]];
        if (te->rank != 2 || pe->rank != 2 || pe->shape[0] != a->w || pe->shape[1] != te->shape[1])
            FAIL("\"%s\": embeddings %s, %s do not fit windows of %u tokens", o->name, te->name, pe->name, a->w);
        const uint32_t C = te->shape[1];
        char *g = step_name(x, t, "tokens"), *s = step_name(x, t, "positions");
        node(x, "Gather", g, 2, IN2(initializer(x, o->in[1], 0), a->name), attr_int(x, "axis", 0), NULL);
        node(x, "Add", s, 2, IN2(g, initializer(x, o->in[2], 0)), NULL);
        const char *shape = kints(x, t, "shape", 0, 2, (const int64_t[]){-1, C});
        value *r = result(x, t, L_MAT, C, 0, 0);
        node(x, "Reshape", r->name, 2, IN2(s, shape), NULL);
        return VT_OK;
    }
    case VT_OPK_ADD_POSITIONS: { /* x [N*T, C] + P: Reshape to [N, T, C], Add P (the module's [1, T, C]), back */
        VT_FORWARD_IF_ERROR(operand(x, o, 0, L_MAT, &a));
        const int64_t Tn = o->iarg[0], C = a->c;
        char *s3 = step_name(x, t, "sequence"), *sp = step_name(x, t, "positioned");
        node(x, "Reshape", s3, 2, IN2(a->name, kints(x, t, "shape3", 0, 3, (const int64_t[]){-1, Tn, C})), NULL);
        node(x, "Add", sp, 2, IN2(s3, initializer(x, o->in[1], 0)), NULL);
        node(x, "Reshape", result(x, t, L_MAT, a->c, 0, 0)->name, 2,
             IN2(sp, kints(x, t, "shape", 0, 2, (const int64_t[]){-1, C})), NULL);
        return VT_OK;
    }
    case VT_OPK_GELU_ERF: { /* x/2 (1 + erf(x / sqrt 2)): torch's nn.GELU() */
        VT_FORWARD_IF_ERROR(operand(x, o, 0, L_NONE, &a));
        const char *v = a->name;
        char *dv = step_name(x, t, "scaled"), *ef = step_name(x, t, "erf"), *op = step_name(x, t, "one_plus_erf"),
             *xm = step_name(x, t, "x_times");
        node(x, "Div", dv, 2, IN2(v, kfloat(x, t, "sqrt2", (float)1.4142135623730951)), NULL);
        node(x, "Erf", ef, 1, IN2(dv, NULL), NULL);
        node(x, "Add", op, 2, IN2(ef, kfloat(x, t, "one", 1.0f)), NULL);
        node(x, "Mul", xm, 2, IN2(v, op), NULL);
        node(x, "Mul", result(x, t, a->layout, a->c, a->h, a->w)->name, 2, IN2(xm, kfloat(x, t, "half", 0.5f)), NULL);
        return VT_OK;
    }
    case VT_OPK_ROW_SUM: { /* S1 = sum_j x_j */
        VT_FORWARD_IF_ERROR(operand(x, o, 0, L_MAT, &a));
        const char *in = a->name;
        row_sum(x, t, in, result(x, t, L_MAT, 1, 0, 0)->name);
        return VT_OK;
    }
    case VT_OPK_ROW_DOT: { /* S2 = sum_j a_j b_j */
        VT_FORWARD_IF_ERROR(operand(x, o, 0, L_MAT, &a));
        VT_FORWARD_IF_ERROR(operand(x, o, 1, L_MAT, &b));
        if (a->c != b->c) FAIL("\"%s\": operands of different shapes", o->name);
        char *pr = step_name(x, t, "products");
        node(x, "Mul", pr, 2, IN2(a->name, b->name), NULL);
        row_sum(x, t, pr, result(x, t, L_MAT, 1, 0, 0)->name);
        return VT_OK;
    }
    case VT_OPK_LN_CENTER: /* xc = x - S1 / C */
    case VT_OPK_LN_NORM: { /* xhat = xc (1 / sqrt(S2 / C + eps)) */
        VT_FORWARD_IF_ERROR(operand(x, o, 0, L_MAT, &a));
        VT_FORWARD_IF_ERROR(operand(x, o, 1, L_MAT, &b));
        if (b->c != 1) FAIL("\"%s\": %s is not a row statistic", o->name, b->name);
        const int centre = o->kind == VT_OPK_LN_CENTER;
        char *q = step_name(x, t, centre ? "mean" : "variance");
        node(x, "Div", q, 2, IN2(b->name, kfloat(x, t, "columns", (float)a->c)), NULL);
        if (centre) {
            node(x, "Sub", result(x, t, L_MAT, a->c, 0, 0)->name, 2, IN2(a->name, q), NULL);
            return VT_OK;
        }
        char *ve = step_name(x, t, "variance_eps"), *sd = step_name(x, t, "std"), *rs = step_name(x, t, "rstd");
        node(x, "Add", ve, 2, IN2(q, kfloat(x, t, "eps", (float)o->farg[0])), NULL);
        node(x, "Sqrt", sd, 1, IN2(ve, NULL), NULL);
        node(x, "Div", rs, 2, IN2(kfloat(x, t, "one", 1.0f), sd), NULL);
        node(x, "Mul", result(x, t, L_MAT, a->c, 0, 0)->name, 2, IN2(a->name, rs), NULL);
        return VT_OK;
    }
    case VT_OPK_AFFINE: /* gamma x + beta */
    case VT_OPK_SCALE_COLS: { /* gamma x */
        VT_FORWARD_IF_ERROR(operand(x, o, 0, L_MAT, &a));
        const vt_tensor *gd = &p->t[o->in[1]];
        if (gd->rank != 1 || gd->shape[0] != a->c) FAIL("\"%s\": %s does not fit", o->name, gd->name);
        const int shift = o->kind == VT_OPK_AFFINE;
        char *sc = shift ? step_name(x, t, "scaled") : NULL;
        const char *gm = initializer(x, o->in[1], 0);
        value *r = result(x, t, L_MAT, a->c, 0, 0);
        node(x, "Mul", shift ? sc : r->name, 2, IN2(a->name, gm), NULL);
        if (shift) node(x, "Add", r->name, 2, IN2(sc, initializer(x, o->in[2], 0)), NULL);
        return VT_OK;
    }
    case VT_OPK_GELU: { /* (0.5 x) (1 + tanh(k (x + a ((x x) x)))), kernels/vt_gpt_hd.h vti_gelu1 */
        VT_FORWARD_IF_ERROR(operand(x, o, 0, L_MAT, &a));
        const char *v = a->name;
        char *sq = step_name(x, t, "square"), *cu = step_name(x, t, "cube"), *ac = step_name(x, t, "cube_scaled"),
             *su = step_name(x, t, "sum"), *u = step_name(x, t, "tanh_arg"), *th = step_name(x, t, "tanh"),
             *op = step_name(x, t, "one_plus_tanh"), *hx = step_name(x, t, "half_x");
        node(x, "Mul", sq, 2, IN2(v, v), NULL);
        node(x, "Mul", cu, 2, IN2(sq, v), NULL);
        node(x, "Mul", ac, 2, IN2(kfloat(x, t, "a", (float)VTI_GELU_A), cu), NULL);
        node(x, "Add", su, 2, IN2(v, ac), NULL);
        node(x, "Mul", u, 2, IN2(kfloat(x, t, "k", (float)VTI_GELU_K), su), NULL);
        node(x, "Tanh", th, 1, IN2(u, NULL), NULL);
        node(x, "Add", op, 2, IN2(kfloat(x, t, "one", 1.0f), th), NULL);
        node(x, "Mul", hx, 2, IN2(kfloat(x, t, "half", 0.5f), v), NULL);
        node(x, "Mul", result(x, t, L_MAT, a->c, 0, 0)->name, 2, IN2(hx, op), NULL);
        return VT_OK;
    }
    default:
        FAIL("\"%s\": not a row-wise kind", o->name);
    }
}

/* the last two axes of a heads tensor swapped: Transpose(perm 0, 1, 3, 2) */
static const char *swap_last(tr *x, uint32_t t, const char *what, const char *in)
{
    char *s = step_name(x, t, what);
    node(x, "Transpose", s, 1, IN2(in, NULL), attr_ints(x, "perm", 4, (const int64_t[]){0, 1, 3, 2}), NULL);
    return s;
}

/* The attention's kinds on heads [N, H, T, D]: split, batched GEMM, causal softmax, merge. */
static vt_err gpt_heads(tr *x, const vt_opdesc *o)
{
    const int64_t *ia = o->iarg;
    const uint32_t t = o->out[0];
    const value *a = NULL, *b = NULL;
    switch (o->kind) {
    case VT_OPK_HEADS_SPLIT: /* B T H D: qkv [N*T, 3C] -> [N, T, 3, H, D] -> [3, N, H, T, D] -> q, k, v */
    case VT_OPK_HEADS_MERGE: { /* B T H D: o [N, H, T, D] -> [N, T, H, D] -> [N*T, C] */
        if (ia[1] < 1 || ia[2] < 1 || ia[3] < 1 || ia[1] > UINT32_MAX || ia[2] * ia[3] > UINT32_MAX / 3)
            FAIL("\"%s\": bad head arguments", o->name);
        const uint32_t T = (uint32_t)ia[1], H = (uint32_t)ia[2], D = (uint32_t)ia[3];
        if (o->kind == VT_OPK_HEADS_MERGE) {
            VT_FORWARD_IF_ERROR(operand(x, o, 0, L_HEADS, &a));
            if (a->h != H || a->w != T || a->c != D) FAIL("\"%s\": heads of another shape", o->name);
            char *tp = step_name(x, t, "positions_first");
            node(x, "Transpose", tp, 1, IN2(a->name, NULL), attr_ints(x, "perm", 4, (const int64_t[]){0, 2, 1, 3}),
                 NULL);
            const char *shape = kints(x, t, "shape", 0, 2, (const int64_t[]){-1, (int64_t)H * D});
            node(x, "Reshape", result(x, t, L_MAT, H * D, 0, 0)->name, 2, IN2(tp, shape), NULL);
            return VT_OK;
        }
        VT_FORWARD_IF_ERROR(operand(x, o, 0, L_MAT, &a));
        if (a->c != 3 * H * D) FAIL("\"%s\": %u columns, not 3 x %u x %u", o->name, a->c, H, D);
        const uint32_t qkv = o->in[0];
        char *hs = step_name(x, qkv, "heads"), *hf = step_name(x, qkv, "heads_first");
        const char *shape = kints(x, qkv, "heads_shape", 0, 5, (const int64_t[]){-1, T, 3, H, D});
        node(x, "Reshape", hs, 2, IN2(a->name, shape), NULL);
        node(x, "Transpose", hf, 1, IN2(hs, NULL), attr_ints(x, "perm", 5, (const int64_t[]){2, 0, 3, 1, 4}), NULL);
        for (uint32_t k = 0; k < 3; k++) {
            const int64_t idx = k;
            const char *ix = kints(x, o->out[k], "index", 1, 1, &idx);
            node(x, "Gather", result(x, o->out[k], L_HEADS, D, H, T)->name, 2, IN2(hf, ix), attr_int(x, "axis", 0),
                 NULL);
        }
        return VT_OK;
    }
    case VT_OPK_BMM: { /* G M N K transA transB: per (example, head) op(A) [M, K] op(B) [K, N] */
        VT_FORWARD_IF_ERROR(operand(x, o, 0, L_HEADS, &a));
        VT_FORWARD_IF_ERROR(operand(x, o, 1, L_HEADS, &b));
        const int64_t M = ia[1], N = ia[2], K = ia[3];
        const int ta = ia[4] != 0, tb = ia[5] != 0;
        if (a->h != b->h || (ta ? a->w : a->c) != K || (ta ? a->c : a->w) != M || (tb ? b->c : b->w) != K ||
            (tb ? b->w : b->c) != N)
            FAIL("\"%s\": operands of other shapes than the GEMM's", o->name);
        const char *l = ta ? swap_last(x, t, "lhs_transposed", a->name) : a->name;
        const char *r = tb ? swap_last(x, t, "rhs_transposed", b->name) : b->name;
        node(x, "MatMul", result(x, t, L_HEADS, (uint32_t)N, a->h, (uint32_t)M)->name, 2, IN2(l, r), NULL);
        return VT_OK;
    }
    case VT_OPK_SOFTMAX_SCALED: /* T; scale: softmax of scale s_ij over each whole row (no mask) */
    case VT_OPK_SOFTMAX_CAUSAL: { /* T; scale: softmax over the visible positions j <= i of scale s_ij */
        VT_FORWARD_IF_ERROR(operand(x, o, 0, L_HEADS, &a));
        if (ia[0] != a->w || a->w != a->c) FAIL("\"%s\": scores of another shape than [T, T] per head", o->name);
        if (o->kind == VT_OPK_SOFTMAX_SCALED) {
            char *sc = step_name(x, t, "scaled");
            node(x, "Mul", sc, 2, IN2(a->name, kfloat(x, t, "scale", (float)o->farg[0])), NULL);
            node(x, "Softmax", result(x, t, L_HEADS, a->c, a->h, a->w)->name, 1, IN2(sc, NULL), attr_int(x, "axis", -1),
                 NULL);
            return VT_OK;
        }
        const size_t T = a->w;
        if (!x->mask || x->mask_T != T) { /* the first causal softmax's, which every layer shares */
            uint8_t *mask = palloc(&x->a, T * T);
            if (!mask) return vt_set_error(VT_ERR_NOMEM, "out of memory");
            for (size_t i = 0; i < T; i++)
                for (size_t j = 0; j <= i; j++) mask[i * T + j] = 1;
            const int64_t md[2] = {(int64_t)T, (int64_t)T};
            x->mask = konst(x, step_name(x, t, "visible"), K_BOOL, 2, md, T * T, mask), x->mask_T = T;
        }
        const char *mk = x->mask;
        char *sc = step_name(x, t, "scaled"), *ms = step_name(x, t, "masked");
        node(x, "Mul", sc, 2, IN2(a->name, kfloat(x, t, "scale", (float)o->farg[0])), NULL);
        node(x, "Where", ms, 3, IN3(mk, sc, kfloat(x, t, "hidden", -INFINITY)), NULL);
        node(x, "Softmax", result(x, t, L_HEADS, a->c, a->h, a->w)->name, 1, IN2(ms, NULL), attr_int(x, "axis", -1),
             NULL);
        return VT_OK;
    }
    default:
        FAIL("\"%s\": not an attention kind", o->name);
    }
}

static vt_err translate(tr *x, uint32_t first, uint32_t last)
{
    const vt_program *p = x->p;
    for (uint32_t j = first; j <= last && !x->a.oom; j++) {
        const vt_opdesc *o = &p->op[j];
        const int64_t *ia = o->iarg;
        const value *a = NULL, *b = NULL;
        switch (o->kind) {
        case VT_OPK_CONV2D: /* step program 2's convolution: im2col's arguments and Co, the gather inside */
        case VT_OPK_IM2COL: { /* B, H, W, C, k, stride, pad, chw: the operand of the next GEMM */
            VT_FORWARD_IF_ERROR(operand(x, o, 0, L_IMG, &a));
            if (a->h != ia[1] || a->w != ia[2] || a->c != ia[3] || ia[4] < 1 || ia[5] < 1 || ia[6] < 0)
                FAIL("\"%s\": %ux%ux%u image read as %lldx%lldx%lld", o->name, a->c, a->h, a->w, (long long)ia[3],
                     (long long)ia[1], (long long)ia[2]);
            colinfo c = {1, o->in[0], (uint32_t)ia[1], (uint32_t)ia[2], (uint32_t)ia[3], (uint32_t)ia[4], (uint32_t)ia[5],
                         (uint32_t)ia[6]};
            if (o->kind == VT_OPK_CONV2D) {
                VT_FORWARD_IF_ERROR(conv_at(x, &j, last, &c, o->in[1]));
                break;
            }
            x->col[o->out[0]] = c;
            x->v[o->out[0]].name = NULL; /* a gathered operand, no ONNX value of its own */
            break;
        }
        case VT_OPK_MATMUL: { /* transA, transB, M, N, K */
            if (ia[0] || (ia[1] && x->col[o->in[0]].is_col))
                FAIL("\"%s\": a transposed GEMM in the evaluation pass", o->name);
            const uint32_t wt = o->in[1];
            if (x->col[o->in[0]].is_col) { /* the convolution */
                VT_FORWARD_IF_ERROR(conv_at(x, &j, last, &x->col[o->in[0]], wt));
                break;
            }
            VT_FORWARD_IF_ERROR(operand(x, o, 0, L_MAT, &a));
            /* the weight [in, out] read transposed (perm 1) to Gemm's [out, in]; one stored [out, in]
             * and read transposed by the program (transB: the GPT's head tied to wte) as it is */
            const vt_tensor *wd = &p->t[wt];
            const int tb = ia[1] != 0;
            if (wd->rank != 2 || wd->shape[tb] != a->c) FAIL("\"%s\": weight %s does not fit", o->name, wd->name);
            const uint32_t nout = wd->shape[!tb];
            /* a bias add of the product right after it joins it: Gemm(A, W^T, b) */
            const vt_opdesc *nx = j < last ? &p->op[j + 1] : NULL;
            if (nx && nx->kind == VT_OPK_BIAS_ADD && nx->in[0] == o->out[0]) {
                const char *in[3] = {a->name, initializer(x, wt, !tb), initializer(x, nx->in[1], 0)};
                value *r = result(x, nx->out[0], L_MAT, nout, 0, 0);
                node(x, "Gemm", r->name, 3, in, attr_int(x, "transB", 1), NULL);
                j++;
            } else {
                const char *in[2] = {a->name, initializer(x, wt, !tb)};
                value *r = result(x, o->out[0], L_MAT, nout, 0, 0);
                node(x, "Gemm", r->name, 2, in, attr_int(x, "transB", 1), NULL);
            }
            break;
        }
        case VT_OPK_BIAS_ADD: {
            VT_FORWARD_IF_ERROR(operand(x, o, 0, L_MAT, &a));
            const char *in[2] = {a->name, initializer(x, o->in[1], 0)};
            value *r = result(x, o->out[0], L_MAT, a->c, 0, 0);
            node(x, "Add", r->name, 2, in, NULL);
            break;
        }
        case VT_OPK_RELU: {
            VT_FORWARD_IF_ERROR(operand(x, o, 0, L_NONE, &a));
            const char *in[1] = {a->name};
            value *r = result(x, o->out[0], a->layout, a->c, a->h, a->w);
            node(x, "Relu", r->name, 1, in, NULL);
            break;
        }
        case VT_OPK_SIGMOID: /* the activations of client models: one elementwise node each */
        case VT_OPK_TANH:
        case VT_OPK_LEAKY_RELU: { /* alpha as ONNX's float attribute (an imported model's alpha is one) */
            VT_FORWARD_IF_ERROR(operand(x, o, 0, L_NONE, &a));
            const char *in[1] = {a->name};
            value *r = result(x, o->out[0], a->layout, a->c, a->h, a->w);
            if (o->kind == VT_OPK_LEAKY_RELU)
                node(x, "LeakyRelu", r->name, 1, in, attr_float(x, "alpha", (float)o->farg[0]), NULL);
            else node(x, o->kind == VT_OPK_SIGMOID ? "Sigmoid" : "Tanh", r->name, 1, in, NULL);
            break;
        }
        case VT_OPK_ADD: { /* an image and a sequence (a ViT's residual of the patch embedding): both rows */
            const int la = x->v[o->in[0]].layout, lb = x->v[o->in[1]].layout;
            const int lay = la != lb && (la == L_IMG || lb == L_IMG) ? L_MAT : la;
            VT_FORWARD_IF_ERROR(operand(x, o, 0, lay, &a));
            VT_FORWARD_IF_ERROR(operand(x, o, 1, lay, &b));
            if (a->c != b->c || a->h != b->h || a->w != b->w) FAIL("\"%s\": operands of different shapes", o->name);
            const char *in[2] = {a->name, b->name};
            value *r = result(x, o->out[0], a->layout, a->c, a->h, a->w);
            node(x, "Add", r->name, 2, in, NULL);
            break;
        }
        case VT_OPK_BN_EVAL: { /* x, rm, rv, gamma, beta; farg eps */
            VT_FORWARD_IF_ERROR(operand(x, o, 0, L_NONE, &a));
            const char *in[5] = {a->name, initializer(x, o->in[3], 0), initializer(x, o->in[4], 0),
                                 initializer(x, o->in[1], 0), initializer(x, o->in[2], 0)};
            value *r = result(x, o->out[0], a->layout, a->c, a->h, a->w);
            node(x, "BatchNormalization", r->name, 5, in, attr_float(x, "epsilon", (float)o->farg[0]), NULL);
            break;
        }
        case VT_OPK_MAXPOOL: { /* B, H, W, C, k */
            VT_FORWARD_IF_ERROR(operand(x, o, 0, L_IMG, &a));
            if (a->h != ia[1] || a->w != ia[2] || a->c != ia[3] || ia[4] < 1) FAIL("\"%s\": shapes", o->name);
            const int64_t k = ia[4], ks[2] = {k, k};
            const char *in[1] = {a->name};
            value *r = result(x, o->out[0], L_IMG, a->c, (uint32_t)(a->h / k), (uint32_t)(a->w / k));
            node(x, "MaxPool", r->name, 1, in, attr_ints(x, "kernel_shape", 2, ks), attr_ints(x, "strides", 2, ks),
                 NULL);
            break;
        }
        case VT_OPK_AVGPOOL: { /* B, HW */
            if (x->v[o->in[0]].layout == L_MAT) { /* the mean over a sequence's HW rows: ReduceMean over axis 1 */
                VT_FORWARD_IF_ERROR(operand(x, o, 0, L_MAT, &a));
                const vt_tensor *d = &p->t[o->in[0]];
                if (ia[1] < 1 || d->rank != 2 || d->shape[1] != a->c || d->shape[0] % (uint64_t)ia[1] != 0)
                    UNSUP("\"%s\": the mean over %lld rows of %s, which is not a sequence of them", o->name,
                          (long long)ia[1], d->name);
                const int64_t seq[3] = {-1, ia[1], a->c};
                char *sq = step_name(x, o->out[0], "sequence");
                node(x, "Reshape", sq, 2, IN2(a->name, kints(x, o->out[0], "sequence_shape", 0, 3, seq)), NULL);
                value *r = result(x, o->out[0], L_MAT, a->c, 0, 0);
                node(x, "ReduceMean", r->name, 1, IN2(sq, NULL), attr_ints(x, "axes", 1, (const int64_t[]){1}),
                     attr_int(x, "keepdims", 0), NULL);
                break;
            }
            VT_FORWARD_IF_ERROR(operand(x, o, 0, L_IMG, &a));
            if ((uint64_t)a->h * a->w != (uint64_t)ia[1]) FAIL("\"%s\": shapes", o->name);
            const char *in[1] = {a->name};
            char *g = pstr(&x->a, "%s.pooled", p->t[o->out[0]].name);
            plist_push(&x->a, &x->names, g);
            node(x, "GlobalAveragePool", g, 1, in, NULL);
            const char *in2[1] = {g};
            value *r = result(x, o->out[0], L_MAT, a->c, 0, 0);
            node(x, "Flatten", r->name, 1, in2, attr_int(x, "axis", 1), NULL);
            break;
        }
        case VT_OPK_SOFTMAX: {
            VT_FORWARD_IF_ERROR(operand(x, o, 0, L_MAT, &a));
            const char *in[1] = {a->name};
            value *r = result(x, o->out[0], L_MAT, a->c, 0, 0);
            node(x, "Softmax", r->name, 1, in, attr_int(x, "axis", 1), NULL);
            break;
        }
        case VT_OPK_NCHW_TO_NHWC:
        case VT_OPK_NHWC_TO_NCHW:
            VT_FORWARD_IF_ERROR(layout_move(x, j, last));
            break;
        case VT_OPK_EMBED:
        case VT_OPK_ROW_SUM:
        case VT_OPK_ROW_DOT:
        case VT_OPK_LN_CENTER:
        case VT_OPK_LN_NORM:
        case VT_OPK_AFFINE:
        case VT_OPK_SCALE_COLS:
        case VT_OPK_GELU:
        case VT_OPK_GELU_ERF:
        case VT_OPK_ADD_POSITIONS:
            VT_FORWARD_IF_ERROR(gpt_rows(x, o));
            break;
        case VT_OPK_HEADS_SPLIT:
        case VT_OPK_HEADS_MERGE:
        case VT_OPK_BMM:
        case VT_OPK_SOFTMAX_CAUSAL:
        case VT_OPK_SOFTMAX_SCALED:
            VT_FORWARD_IF_ERROR(gpt_heads(x, o));
            break;
        default: {
            const vt_opkind *k = vt_opkind_get(o->kind);
            return vt_set_error(VT_ERR_UNSUPPORTED, "ONNX export: operation \"%s\" (kind %s) has no ONNX form yet",
                                o->name, k ? k->name : "?");
        }
        }
    }
    if (x->a.oom == 2) FAIL("an operation reads a parameter that is not a state tensor, or of another rank, or in two layouts");
    return x->a.oom ? vt_set_error(VT_ERR_NOMEM, "out of memory") : VT_OK;
}

/* path written atomically: path.tmp, fsynced, renamed over path, the directory fsynced */
static vt_err write_file(const char *path, const uint8_t *buf, size_t len)
{
    size_t pl = strlen(path);
    char *tmp = malloc(pl + 5);
    VT_RETURN_ERROR_IF(!tmp, VT_ERR_NOMEM, "out of memory");
    memcpy(tmp, path, pl), memcpy(tmp + pl, ".tmp", 5);
    vt_err e = VT_OK;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        e = vt_set_error(VT_ERR_IO, "%s: %s", tmp, strerror(errno));
        free(tmp);
        return e;
    }
    for (size_t off = 0; off < len && !e;) {
        ssize_t w = write(fd, buf + off, len - off);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) e = vt_set_error(VT_ERR_IO, "%s: %s", tmp, w < 0 ? strerror(errno) : "short write");
        else off += (size_t)w;
    }
    if (!e && fsync(fd) != 0) e = vt_set_error(VT_ERR_IO, "%s: fsync: %s", tmp, strerror(errno));
    if (close(fd) != 0 && !e) e = vt_set_error(VT_ERR_IO, "%s: close: %s", tmp, strerror(errno));
    if (!e && rename(tmp, path) != 0) e = vt_set_error(VT_ERR_IO, "%s: rename: %s", path, strerror(errno));
    if (e) {
        unlink(tmp);
        free(tmp);
        return e;
    }
    free(tmp);
    /* the rename made durable: fsync the directory (a file system that cannot is not an error) */
    char *dir = strdup(path);
    VT_RETURN_ERROR_IF(!dir, VT_ERR_NOMEM, "out of memory");
    char *sl = strrchr(dir, '/');
    if (!sl) strcpy(dir, ".");
    else if (sl == dir) sl[1] = 0;
    else *sl = 0;
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        if (fsync(dfd) != 0 && errno != EINVAL && errno != EROFS) e = vt_set_error(VT_ERR_IO, "%s: fsync: %s", dir, strerror(errno));
        close(dfd);
    }
    free(dir);
    return e;
}

static vt_err build_and_write(tr *x, const char *path, const char *const *meta_kv, size_t n_meta, const char *doc)
{
    const vt_program *p = x->p;
    uint32_t first, last;
    vt_program_eval_range(p, &first, &last);
    VT_RETURN_ERROR_IF(first < 1 || last < first, VT_ERR_INTERNAL, "ONNX export: the program has no forward pass");
    /* the softmax's input is the logits */
    x->logits = UINT32_MAX;
    for (uint32_t j = first; j <= last; j++)
        if (p->op[j].kind == VT_OPK_SOFTMAX && p->op[j].out[0] == p->probs) x->logits = p->op[j].in[0];
    VT_RETURN_ERROR_IF(x->logits == UINT32_MAX, VT_ERR_INTERNAL, "ONNX export: the evaluation pass ends in no softmax");
    /* the input: a channels-first image when a convolution gathers it so, else a matrix */
    const vt_tensor *in = &p->t[p->input];
    VT_RETURN_ERROR_IF(in->rank != 2 || (in->dtype != VT_DT_F32 && in->dtype != VT_DT_U8), VT_ERR_INTERNAL,
                       "ONNX export: the input is not [B, d]");
    /* token ids (a text model's U8 windows [B, T]) are ONNX int64 [N, T], Gather's indices */
    const int tokens = in->dtype == VT_DT_U8;
    value *iv = result(x, p->input, tokens ? L_TOK : L_MAT, tokens ? 0 : in->shape[1], 0, tokens ? in->shape[1] : 0);
    uint32_t chw[3];
    const int img = vt_onnx_input_image(p, chw);
    VT_RETURN_ERROR_IF(img < 0, VT_ERR_INTERNAL, "ONNX export: the input is gathered other than as a channels-first image");
    if (img) iv->layout = L_IMG, iv->c = chw[0], iv->h = chw[1], iv->w = chw[2];
    /* channels-last activations are read channels-first only by the stem: no other gather reads the input */
    VT_FORWARD_IF_ERROR(translate(x, first, last));
    const value *lg = &x->v[x->logits], *pr = &x->v[p->probs];
    VT_RETURN_ERROR_IF(!lg->name || !pr->name || lg->layout != L_MAT, VT_ERR_INTERNAL,
                       "ONNX export: the logits and probabilities are not written as matrices");

    Onnx__GraphProto *g = palloc(&x->a, sizeof *g);
    Onnx__ModelProto *mp = palloc(&x->a, sizeof *mp);
    Onnx__OperatorSetIdProto *os = palloc(&x->a, sizeof *os);
    Onnx__ValueInfoProto **gin = palloc(&x->a, sizeof *gin), **gout = palloc(&x->a, 2 * sizeof *gout);
    Onnx__OperatorSetIdProto **osl = palloc(&x->a, sizeof *osl);
    Onnx__StringStringEntryProto **props = palloc(&x->a, (n_meta ? n_meta : 1) * sizeof *props);
    if (!g || !mp || !os || !gin || !gout || !osl || !props) return vt_set_error(VT_ERR_NOMEM, "out of memory");
    onnx__graph_proto__init(g);
    onnx__model_proto__init(mp);
    onnx__operator_set_id_proto__init(os);
    int64_t dims[4] = {-1, iv->c, iv->h, iv->w}, tdims[2] = {-1, iv->w};
    if (tokens) gin[0] = value_info(x, "input", ONNX__TENSOR_PROTO__DATA_TYPE__INT64, 2, tdims);
    else gin[0] = value_info(x, "input", K_FLOAT, iv->layout == L_IMG ? 4 : 2, dims);
    int64_t od[2] = {-1, lg->c};
    gout[0] = value_info(x, lg->name, K_FLOAT, 2, od);
    gout[1] = value_info(x, pr->name, K_FLOAT, 2, od);
    for (size_t i = 0; i < n_meta; i++) {
        Onnx__StringStringEntryProto *kv = palloc(&x->a, sizeof *kv);
        if (!kv) break;
        onnx__string_string_entry_proto__init(kv);
        kv->key = (char *)meta_kv[2 * i], kv->value = (char *)meta_kv[2 * i + 1];
        props[i] = kv;
    }
    if (x->a.oom || !gin[0] || !gout[0] || !gout[1]) return vt_set_error(VT_ERR_NOMEM, "out of memory");
    g->name = pstr(&x->a, "vt_inference");
    g->doc_string = pstr(&x->a, tokens ? "the evaluation pass of the verified program (no dropout)"
                                       : "the evaluation pass of the verified program (batch norm with its running statistics)");
    g->n_node = x->nodes.n, g->node = (Onnx__NodeProto **)x->nodes.v;
    g->n_initializer = x->inits.n, g->initializer = (Onnx__TensorProto **)x->inits.v;
    g->n_input = 1, g->input = gin;
    g->n_output = 2, g->output = gout;
    os->domain = pstr(&x->a, "%s", ""), os->has_version = 1, os->version = OPSET;
    osl[0] = os;
    mp->has_ir_version = 1, mp->ir_version = IR_VERSION;
    mp->n_opset_import = 1, mp->opset_import = osl;
    mp->producer_name = pstr(&x->a, "verifiable-training trainer");
    mp->producer_version = pstr(&x->a, "%s", VT_CODE_VERSION);
    mp->domain = pstr(&x->a, "verifiable-training");
    mp->has_model_version = 1, mp->model_version = 1;
    mp->doc_string = doc ? (char *)doc : NULL;
    mp->graph = g;
    mp->n_metadata_props = n_meta, mp->metadata_props = props;
    if (x->a.oom) return vt_set_error(VT_ERR_NOMEM, "out of memory");
    size_t len = onnx__model_proto__get_packed_size(mp);
    uint8_t *buf = malloc(len ? len : 1);
    VT_RETURN_ERROR_IF(!buf, VT_ERR_NOMEM, "out of memory (%zu bytes)", len);
    size_t got = onnx__model_proto__pack(mp, buf);
    vt_err e = got == len ? write_file(path, buf, len)
                          : vt_set_error(VT_ERR_INTERNAL, "ONNX export: packed %zu bytes of %zu", got, len);
    free(buf);
    return e;
}

vt_err vt_onnx_write(const char *path, vt_model *m, const char *const *meta_kv, size_t n_meta, const char *doc)
{
    VT_RETURN_ERROR_IF(!path || !m || (n_meta && !meta_kv), VT_ERR_ARG, "vt_onnx_write: NULL argument");
    tr x;
    memset(&x, 0, sizeof x);
    x.m = m, x.p = &m->prog;
    const uint32_t nt = x.p->n_tensors;
    x.v = palloc(&x.a, nt * sizeof *x.v);
    x.rows = palloc(&x.a, nt * sizeof *x.rows);
    x.col = palloc(&x.a, nt * sizeof *x.col);
    x.init = palloc(&x.a, nt);
    x.wm = palloc(&x.a, nt * sizeof *x.wm);
    vt_err e = x.a.oom ? vt_set_error(VT_ERR_NOMEM, "out of memory") : build_and_write(&x, path, meta_kv, n_meta, doc);
    pool_free(&x.a);
    return e;
}

#endif

int vt_onnx_input_image(const vt_program *p, uint32_t chw[3])
{
    uint32_t first, last;
    vt_program_eval_range(p, &first, &last);
    for (uint32_t j = first; j <= last && j >= 1 && j <= p->n_ops + p->n_eval; j++) {
        const vt_opdesc *o = &p->op[j];
        if ((o->kind != VT_OPK_IM2COL && o->kind != VT_OPK_CONV2D) || o->in[0] != p->input) continue;
        const int64_t *ia = o->iarg;
        if (ia[7] != 1 || ia[1] < 1 || ia[2] < 1 || ia[3] < 1 || p->t[p->input].rank != 2 ||
            (uint64_t)ia[1] * (uint64_t)ia[2] * (uint64_t)ia[3] != p->t[p->input].shape[1])
            return -1;
        chw[0] = (uint32_t)ia[3], chw[1] = (uint32_t)ia[1], chw[2] = (uint32_t)ia[2];
        return 1;
    }
    return 0;
}
