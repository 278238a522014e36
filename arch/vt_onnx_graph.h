/* vt_onnx_graph.h - the front-end of the client's own model (docs/models.md "The client's own
 * model"): an ONNX forward graph, as torch.onnx.export (opsets 13..17, training mode, no constant
 * folding) writes it, read into a plain C graph with static shapes, every shape-arithmetic node
 * folded away. Read through the C structures protoc-c generates from Debian's onnx.proto
 * (arch/onnx.cmake's vt_onnx_pb) and libprotobuf-c; a build without them answers VT_ERR_UNSUPPORTED
 * "built without ONNX support".
 *
 * What is read: the default domain's opset (13..17), the graph's inputs (the first dimension set to
 * the batch), its initializers (float32: parameter candidates, is_init; int64: constant shapes,
 * is_const; any other type refused), its nodes in file order (a node reading a value no earlier node,
 * initializer or input writes is refused: the graph is not topologically sorted, or has a cycle, or
 * misses an input) and its outputs.
 *
 * Operators: the compute operators Gemm, MatMul, Add, Sub, Mul, Div, Pow, Sqrt, Reciprocal, Erf, Tanh, Sigmoid,
 * Relu, LeakyRelu, Softmax, LogSoftmax, LayerNormalization, BatchNormalization (outputs Y and the
 * running mean and variance; opset 13's further outputs are [C] too), ReduceMean (axes attribute),
 * Conv, MaxPool, AveragePool, GlobalAveragePool, Flatten, Reshape, Transpose, Concat, Split, Slice,
 * Gather, Dropout, Where, Identity, Cast, Not, Equal, Expand, Unsqueeze, Squeeze, Shape, Constant,
 * ConstantOfShape, Range; and three that are accepted only when they fold (their inputs constant):
 * Trilu, Greater, Less (a causal mask from torch.triu at opset 14 on, or from two ranges compared at
 * opset 13). Conv, MaxPool and AveragePool: auto_pad NOTSET only, any pads, strides and group;
 * dilations other than 1 are accepted and carried in the node's attributes (the mapping may refuse
 * them); MaxPool's storage_order 0 only. Every attribute an operator does not define is refused.
 *
 * Folding: a node is evaluated at import (its outputs is_const, the node dropped) when it is Shape
 * (of any value: shapes are static), Constant, or one of Gather, Slice, Concat, Unsqueeze, Squeeze,
 * Cast, Add, Sub, Mul, Div, Pow, Sqrt, Reciprocal, Equal, Greater, Less, Where, Not, Range, ConstantOfShape,
 * Expand, Reshape, Flatten, Transpose, Split, Trilu, Identity with every input constant. Identity is
 * dropped always: its output is its input's value, and keeps that value's name (a graph output
 * written by an Identity is found through outputs[], not by its ONNX name). Integer arithmetic is int64 (an overflow, or a
 * division by zero, refused); integer Div truncates toward zero. Float folding is done in double and
 * rounded once to the value's type: float32 Add, Sub, Mul, Div, Sqrt and Reciprocal are then the correctly rounded
 * IEEE single results (double holds more than twice float's precision); Pow uses the C library's
 * pow in double, then rounds. Float to integer Cast truncates (a NaN or an out-of-range value refused).
 * Initializers are parameters, never constants: nothing that reads one folds.
 *
 * Refusals: VT_ERR_ARG naming the node, its op_type and the supported operators (an operator outside
 * the list, a non-default domain, an attribute or value the front-end cannot honour, an opset outside
 * 13..17, an initializer neither float32 nor int64, a shape input not known at import, a fixed first
 * input dimension other than the batch); hostile bytes (a protobuf that does not decode, tensor data
 * of the wrong length, dimensions, elements or nodes beyond the caps below, an unknown or duplicate
 * value name, a shape mismatch): VT_ERR_FORMAT or VT_ERR_LIMIT, never a crash. */
#ifndef VT_ONNX_GRAPH_H
#define VT_ONNX_GRAPH_H

#include <stddef.h>
#include <stdint.h>

#include "../common/vt_error.h"

#define VT_OG_MAX_RANK 6
#define VT_OG_MAX_BYTES ((size_t)1 << 31)   /* the file */
#define VT_OG_MAX_NODES 100000u             /* nodes in the file */
#define VT_OG_MAX_DIM ((int64_t)1 << 31)    /* one dimension */
#define VT_OG_MAX_ELEMS ((int64_t)1 << 40)  /* elements of one value */
#define VT_OG_MAX_CONST_ELEMS ((int64_t)1 << 28) /* elements of one tensor of the file (initializer, Constant) */
#define VT_OG_MAX_CONST_BYTES ((size_t)1 << 31)  /* every initializer and Constant together */
#define VT_OG_MAX_FOLD_ELEMS ((int64_t)1 << 24)  /* elements of one folded value */
#define VT_OG_MAX_FOLD_BYTES ((size_t)1 << 30)   /* every folded value together */

typedef enum { VT_OG_F32 = 1, VT_OG_I64, VT_OG_BOOL, VT_OG_F64, VT_OG_I32 } vt_og_dtype; /* ONNX elem types we accept */
typedef struct {
    char *name;            /* the ONNX value name */
    vt_og_dtype dtype;
    uint32_t rank; int64_t shape[VT_OG_MAX_RANK];   /* static, resolved for the given batch */
    int is_input;          /* a graph input that is not an initializer */
    int is_init;           /* an initializer (a parameter candidate: its values in data) */
    int is_const;          /* a value known at import (Constant node, or folded): values in data */
    void *data; size_t nbytes;  /* is_init/is_const: values as host float / int64_t / uint8_t(bool) / double / int32 */
} vt_og_value;
typedef enum { VT_OGA_INT = 1, VT_OGA_FLOAT, VT_OGA_INTS, VT_OGA_FLOATS, VT_OGA_STRING } vt_og_atype;
typedef struct { char *name; vt_og_atype type; int64_t i; double f; int64_t *ints; double *floats; size_t n; char *s; } vt_og_attr;
typedef struct {
    char *name;            /* the node's name, or "<op_type>_<index>" when the file gives none */
    char *op;              /* op_type, e.g. "Gemm" */
    uint32_t n_in, n_out, n_attr;
    uint32_t *in, *out;    /* value ids; UINT32_MAX for an omitted optional input or output */
    vt_og_attr *attr;      /* in the file's order */
} vt_og_node;
typedef struct {
    uint32_t n_values, n_nodes;
    vt_og_value *v; vt_og_node *node;     /* node[]: the compute nodes left after folding, topologically sorted, in file order where free */
    uint32_t n_inputs, n_outputs; uint32_t *inputs, *outputs;  /* value ids of the graph inputs (non-initializer) and outputs */
    int64_t opset;          /* the default domain's opset version */
    char *producer;
    uint8_t file_sha256[32];
    uint8_t canon_sha256[32];  /* SHA-256 of vt_og_canonical's bytes */
} vt_og_graph;

/* v[] holds the graph inputs, every initializer, and the values the compute nodes and the outputs
 * read or write (constants no compute node reads are dropped), numbered in that order of first use. */

/* Reads an ONNX ModelProto from bytes; `batch` > 0 sets every symbolic or fixed first dimension of the graph inputs (a fixed one that differs -> VT_ERR_ARG naming the input, its dim and the batch); returns the folded graph. */
vt_err vt_og_read(const uint8_t *bytes, size_t n, int64_t batch, vt_og_graph *g) VT_WARN_UNUSED;
vt_err vt_og_read_file(const char *path, int64_t batch, vt_og_graph *g) VT_WARN_UNUSED;
void vt_og_free(vt_og_graph *g);
uint32_t vt_og_find(const vt_og_graph *g, const char *value_name);      /* UINT32_MAX if none */
const vt_og_attr *vt_og_attr_get(const vt_og_node *n, const char *name); /* NULL if absent */
/* The canonical form: a byte string that depends only on the folded graph's computation - nodes in order with op, attributes (sorted by name), input/output value positions, every value's dtype and shape, constants' bytes, initializers' names/shapes (NOT their values) - magic "VTOG", version 1, little-endian lengths. Writes into *buf (malloc'd) and *len.
 * The bytes (docs/models.md "The canonical form"): "VTOG", u32 1, i64 opset; u32 n_values and per
 * value u8 kind (0 computed, 1 input, 2 initializer, 3 constant), u8 dtype, u8 rank, i64 dims, then
 * for an input or an initializer its name (u32 length, bytes), for a constant u64 nbytes and its
 * bytes (little-endian elements); u32 n_nodes and per node its op (u32 length, bytes), u32 n_attr and
 * per attribute, sorted by name, the name, u8 type and the value (i64; f64 bits; u32 count and i64s
 * or f64 bits; u32 length and bytes), u32 n_in and the input ids (UINT32_MAX omitted), u32 n_out and
 * the output ids; u32 n_inputs and ids; u32 n_outputs and ids. */
vt_err vt_og_canonical(const vt_og_graph *g, uint8_t **buf, size_t *len) VT_WARN_UNUSED;
/* the size of one element of dtype (0 for an unknown one); the short name ("f32", "i64", "bool",
 * "f64", "i32") */
size_t vt_og_dtype_size(vt_og_dtype t);
const char *vt_og_dtype_name(vt_og_dtype t);

#ifdef VT_HAVE_ONNX
#include "onnx.pb-c.h"
/* One TensorProto's values decoded (raw_data or the typed field, lengths checked against the
 * dimensions, the caps above): *dtype, *rank, shape and *data (malloc'd, the caller frees it; host
 * layout as in vt_og_value), *n elements. An element type outside vt_og_dtype: VT_ERR_ARG; external
 * data, bad lengths: VT_ERR_FORMAT; beyond the caps: VT_ERR_LIMIT. what names it in messages. The
 * certifier's reader (cert/vt_cert_onnx.c) shares it. */
vt_err vt_og_tensor_decode(const Onnx__TensorProto *t, const char *what, vt_og_dtype *dtype, uint32_t *rank,
                           int64_t shape[VT_OG_MAX_RANK], void **data, size_t *n) VT_WARN_UNUSED;
/* the node's attribute called name, NULL if none (shared with cert/vt_cert_onnx.c too) */
const Onnx__AttributeProto *vt_og_proto_attr(const Onnx__NodeProto *n, const char *name);
#endif

#endif
