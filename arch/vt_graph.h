/* vt_graph.h - a forward graph of layers and the one builder that derives its step program
 * (docs/models.md "The derivation").
 *
 * A graph is what a client's network computes on one batch: parameters (their names, shapes and
 * step-0 values), layers in topological order, the input and the output the loss reads. The
 * builder (vt_graph_build) lowers each layer to operation kinds (ops/vt_kinds.h), appends the loss
 * and then DERIVES the backward pass by reverse-mode differentiation over the kinds' backward
 * facets (vt_grad_fn, ops/vt_ops.h) and the optimiser over the trainable parameters. The built-in
 * MLP is such a graph (vt_graph_mlp); a client's ONNX file becomes one (vt_graph_onnx). */
#ifndef VT_GRAPH_H
#define VT_GRAPH_H

#include <stdint.h>

#include "../common/vt_bytes.h"
#include "../common/vt_error.h"
#include "../ops/vt_program.h"
#include "vt_onnx_graph.h"
#include "vt_recipe.h"

#define VT_GRAPH_NAME_MAX 96

/* A layer's operation (what it lowers to): */
typedef enum {
    VT_GL_LINEAR = 1, /* y = op(x) op(W) [+ b]: matmul (transB attr[0]) then bias_add when a bias is
                       * given; x [B, in], W [in, out] (transB 0) or [out, in] (transB 1), b [out]; attr[1] R
                       * (version 3; 0 as 1): each example R rows of a sequence, x [B*R, in] */
    VT_GL_RELU,       /* y = max(x, 0) */
    VT_GL_ADD,        /* y = x0 + x1 (same shape) */
    VT_GL_RESHAPE,    /* y is x with another shape, the same bytes (Flatten, Reshape): no operation; attr[0] R
                       * (version 3; 0: a flat value): a channels-last image of R = H*W pixels read as a
                       * sequence of R rows (the patch embedding's flatten(2).transpose(1, 2)) */
    /* the activations of client models (elementwise, y of x's shape) */
    VT_GL_SIGMOID,      /* y = 1 / (1 + exp(-x)) */
    VT_GL_TANH,         /* y = tanh(x) */
    VT_GL_LEAKY_RELU,   /* y = x >= 0 ? x : alpha x; attr[0] holds alpha's FP64 bits (finite, 0 or within
                         * [2^-64, 2^64] in magnitude) */
    /* the convolutional layers (graph version 2; docs/models.md "Layouts"). An example of a
     * channels-last value is [H*W, C] (rows (y, x)), of any other value its elements in ONNX's order
     * (NCHW for an image). attr: */
    VT_GL_CONV,       /* y = conv(x, W) [+ b], channels-last out: H W C k stride pad chw Co (chw 1: x is
                       * channels-first; 0: channels-last); W the module's [Co, C, k, k], b [Co] */
    VT_GL_MAXPOOL,    /* k x k windows, stride k, channels-last in and out: H W C k */
    VT_GL_AVGPOOL,    /* the mean over the H*W pixels, channels-last in, [C] out: H W C */
    VT_GL_TO_NCHW,    /* channels-last [H*W, C] to channels-first [C, H*W]: H W C */
    VT_GL_TO_NHWC,    /* channels-first [C, H*W] to channels-last [H*W, C]: H W C */
    /* graph version 3 */
    VT_GL_BATCHNORM,  /* batch normalisation in training mode over the rows of each channel (batch statistics,
                       * the running statistics updated): params gamma, beta [C] and the buffers running_mean,
                       * running_var [C]; attr: eps's FP64 bits, momentum's FP64 bits (PyTorch's: running = (1 -
                       * momentum) running + momentum batch, the variance unbiased), C, H, W (H = W = 0: a flat
                       * [B, C] value; else a channels-last image, rows B*H*W). The evaluation pass uses the running
                       * statistics */
    /* the transformers' layers (version 3): a sequence value is R rows of C per example, [B*R, C], in
     * ONNX's own order [N, R, C] */
    VT_GL_LAYERNORM,  /* layer normalisation over each row: attr eps's FP64 bits, C, R (0 as 1); params gamma,
                       * beta [C] */
    VT_GL_GELU,       /* y = gelu(x), attr[0] 0: the tanh form (PyTorch's approximate='tanh'), 1: the exact (erf) form */
    VT_GL_ATTENTION,  /* multi-head self-attention of a fused q|k|v value [B*T, 3C] (q, k, v each C = H*D
                       * columns, head h columns h*D ..): softmax(scale q k^T) v per head, heads merged to
                       * [B*T, C]; attr T, H, D, causal (1: position t sees 0..t), scale's FP64 bits */
    VT_GL_DROPOUT,    /* dropout of probability p (attr[0]: its FP64 bits, in (0, 1)): the GPT's kind, the mask
                       * drawn from (the recipe's seed, the step, key, the element), key attr[1] (0: the layer's
                       * index + 1; the built-in GPT's graph gives its own, 1 .. 2^31); the evaluation pass
                       * leaves it out */
    VT_GL_POSITIONS,  /* a learned position embedding added to a sequence: y = x + P per example (add_positions);
                       * attr T, C; param P of T*C values ([1, T, C] as a module holds it) */
    VT_GL_EMBED,      /* the token and position embeddings of the input's tokens, wte[token] + wpe[t] (the GPT's
                       * embed): attr T, V, C; params wte [V, C], wpe [T, C]; a sequence of T rows of C out */
} vt_glayer_op;
#define VT_GL_LAST VT_GL_EMBED
#define VT_GLAYER_ATTRS 8

/* the loss the output feeds (recipe key `loss`): softmax cross-entropy over the output's classes; the
 * mean squared or absolute error, or binary cross-entropy with logits, against float targets; next-token
 * cross-entropy (a language model: the input T tokens of a text's window, value 0 read by an EMBED layer only, the
 * output a sequence of T rows of the vocabulary's logits, each row's target the next token; version 3) */
typedef enum { VT_GLOSS_XENT = 1, VT_GLOSS_MSE, VT_GLOSS_L1, VT_GLOSS_BCE, VT_GLOSS_NEXT } vt_gloss;

typedef struct {
    char name[VT_GRAPH_NAME_MAX]; /* the state tensor's name: the module's own ("fc1.weight") */
    uint32_t rank, shape[VT_MAX_RANK];
    int frozen;                   /* 1: no gradient, no optimiser state, never updated */
    int buffer;                   /* 1: a running statistic (a batch norm's), VT_TC_BUFFER: no gradient, updated by
                                   * the layer that reads it (graph version 3) */
    int no_decay;                 /* 1: AdamW does not decay it (the built-in GPT's vectors; not in the canonical
                                   * form: a client's model decays every parameter, as torch.optim.AdamW) */
    vt_tinit init;                /* step-0 value: VT_INIT_HE_UNIFORM (fan_in), VT_INIT_ONE or VT_INIT_ZERO */
    uint32_t fan_in;
} vt_gparam;

/* Values: 0 is the graph's input (the batch, [B, d]); value k >= 1 is layer k - 1's output. */
typedef struct {
    vt_glayer_op op;
    char name[VT_GRAPH_NAME_MAX]; /* the layer's name: its operations' and tensors' names start with it */
    uint32_t n_in, in[2];         /* values read */
    uint32_t n_param, param[4];   /* parameters read (LINEAR, CONV: W, then b when n_param = 2; BATCHNORM: gamma,
                                   * beta, running_mean, running_var) */
    int64_t attr[VT_GLAYER_ATTRS]; /* LINEAR: transB; LEAKY_RELU: alpha's FP64 bits; the convolutional layers'
                                   * above; unused ones 0 */
    uint32_t cols;                /* the output's width: the output is [B, cols] */
    int kernel_layout;            /* CONV: W is stored [k, k, C, Co], the convolution kind's own layout (the built-in
                                   * residual CNN's: no weight moves); not in the canonical form (a client's W is the
                                   * module's [Co, C, k, k]) */
} vt_glayer;

typedef struct {
    uint32_t n_param, n_layer;
    vt_gparam *param;
    vt_glayer *layer;
    uint32_t in_cols; /* the input's width d: the input is [B, d] */
    uint32_t out;     /* the value the loss reads */
    vt_gloss loss;
    uint8_t out_logsoftmax; /* not in the canonical form: the ONNX graph ended in LogSoftmax over out, fused
                             * into the cross-entropy (vt_graph_from_onnx); any other loss is refused */
} vt_graph;

void vt_graph_init(vt_graph *g);
/* a real attribute from its FP64 bits (attr) and back */
double vt_graph_f64(int64_t bits);
int64_t vt_graph_f64_bits(double d);
/* LEAKY_RELU's alpha is one the kind accepts: 0, or a finite magnitude within [2^-64, 2^64] */
int vt_graph_alpha_ok(double alpha);
void vt_graph_free(vt_graph *g);
/* Appends a parameter or a layer and returns its index (a parameter's) or its output's value id (a
 * layer's); UINT32_MAX when out of memory or a name is too long (*bad set). A layer's attr: NULL (all 0)
 * or VT_GLAYER_ATTRS values. */
uint32_t vt_graph_param(vt_graph *g, const char *name, uint32_t rank, const uint32_t *shape, vt_tinit init,
                        uint32_t fan_in, int *bad);
uint32_t vt_graph_layer(vt_graph *g, vt_glayer_op op, const char *name, uint32_t n_in, const uint32_t *in,
                        uint32_t n_param, const uint32_t *param, const int64_t *attr, uint32_t cols, int *bad);

/* The built-in architectures as graphs (arch/vt_graph_builtin.c). The MLP of the recipe (arch mlp): layers
 * fc1..fcL (LINEAR, W [in, out] He-uniform, b zero) with relu1..relu(L-1) between them, softmax
 * cross-entropy. The GPT of the recipe (arch gpt, step program 3; docs/gpt.md): the hand-written builder's
 * parameters (names, shapes, order, step-0 values; the vectors not decayed) and forward pass as layers -
 * EMBED, its DROPOUT, per block LAYERNORM, LINEAR c_attn, ATTENTION (causal), LINEAR c_proj, DROPOUT, ADD,
 * LAYERNORM, LINEAR c_fc, GELU (tanh), LINEAR c_proj, DROPOUT, ADD; LAYERNORM ln_f and the head (LINEAR by
 * wte transposed when tied) - with next-token cross-entropy. */
vt_err vt_graph_mlp(const vt_recipe *rcp, vt_graph *g) VT_WARN_UNUSED;
vt_err vt_graph_gpt(const vt_recipe *rcp, vt_graph *g) VT_WARN_UNUSED;
/* The residual CNN of the recipe (arch resnet, step program 3; docs/cnn.md): the hand-written builder's
 * parameters and buffers (names, shapes in its kernel layout, order, step-0 values) and forward pass as layers -
 * the stem's CONV, BATCHNORM, RELU [, MAXPOOL], per block CONV, BATCHNORM, RELU, CONV, BATCHNORM [, the projection
 * shortcut's CONV, BATCHNORM], ADD, RELU; AVGPOOL, LINEAR fc - with softmax cross-entropy. */
vt_err vt_graph_resnet(const vt_recipe *rcp, vt_graph *g) VT_WARN_UNUSED;

/* The one builder: g's step program for the recipe's batch, loss, optimiser and schedule (p is
 * initialised by the caller, finished here). The order of everything it adds is the contract that
 * keeps programs (and commitments) stable; docs/models.md "The derivation" states it:
 *   state: the parameters in g's order, then the optimiser's tensors of the trainable ones;
 *   inputs: vt_arch_inputs; operations: the input operations, the layers' forward operations, the
 *   loss, the backward pass, the updates;
 *   backward: layers in reverse order; within a layer, first the gradients of its parameters (its
 *   operations in forward order), then those of its other inputs (its operations in reverse order);
 *   a value read by several operations gets one gradient per reader, in that walk order, summed
 *   left to right ((g1 + g2) + g3 ...) into "<value>.grad" before its producer's backward;
 *   tensors: the activations' gradients in the order the walk meets them, then the trainable
 *   parameters' gradients in parameter order.
 * VT_ERR_ARG when a layer's kind cannot be differentiated here. */
vt_err vt_graph_build(const vt_graph *g, const vt_recipe *rcp, vt_program *p) VT_WARN_UNUSED;

/* A folded ONNX graph (vt_onnx_graph.h) as a forward graph (arch/vt_graph_onnx.c, docs/models.md "From
 * ONNX to the forward graph"): *vals[k] (malloc'd, the caller frees each and the array) holds parameter
 * k's step-0 values, the initializer's, row-major in its shape. VT_ERR_ARG naming the node, its
 * operator and what is supported when a node cannot be mapped. */
vt_err vt_graph_from_onnx(const vt_og_graph *og, vt_graph *g, float ***vals) VT_WARN_UNUSED;
/* Reads the ONNX file at path for batches of `batch` examples and maps it (the two calls above), the
 * file's SHA-256 in sha256. */
vt_err vt_graph_import_onnx(const char *path, uint32_t batch, vt_graph *g, float ***vals,
                            uint8_t sha256[32]) VT_WARN_UNUSED;
/* Layer l's attributes checked against its operation (every one a layout and sizes the kinds take,
 * the unused ones 0) and the width of its output, one example's values, in *cols. VT_ERR_FORMAT. */
vt_err vt_graph_layer_check(const vt_glayer *l, uint32_t *cols) VT_WARN_UNUSED;
/* Makes r train g: r's loss and frozen parameters set in g (VT_ERR_ARG naming a frozen name that is no
 * parameter), then g's canonical form and the file's hash in r (has_model, model_graph, model_sha256),
 * layers = [the input's width, the output's width]. VT_ERR_LIMIT when the canonical form exceeds
 * VT_MODEL_GRAPH_MAX. */
vt_err vt_recipe_set_graph(vt_recipe *r, vt_graph *g, const uint8_t sha256[32]) VT_WARN_UNUSED;
/* r->model (a path) imported into r: vt_graph_import_onnx for r->batch, then vt_recipe_set_graph;
 * vt_recipe_import_graph also hands back the graph and its parameters' values (the caller frees them:
 * vt_graph_free, vt_graph_values_free; on failure nothing is left to free). */
vt_err vt_recipe_import_model(vt_recipe *r) VT_WARN_UNUSED;
vt_err vt_recipe_import_graph(vt_recipe *r, vt_graph *g, float ***vals) VT_WARN_UNUSED;
/* Frees the n parameters' values of vt_graph_from_onnx (vals may be NULL). */
void vt_graph_values_free(float **vals, uint32_t n);

/* The canonical form (docs/models.md "The canonical form of a forward graph"): "VTGR", version 1 (four
 * attributes per layer: a graph of LINEAR, RELU, ADD, RESHAPE, SIGMOID, TANH and LEAKY_RELU layers only) or 2
 * (eight), then every
 * field of the graph in order, little-endian. The manifest carries it (recipe field model_graph), so every party
 * derives the same program from the same bytes. vt_graph_decode checks every byte (VT_ERR_FORMAT). */
vt_err vt_graph_encode(const vt_graph *g, vt_buf *out) VT_WARN_UNUSED;
vt_err vt_graph_decode(const uint8_t *bytes, size_t len, vt_graph *g) VT_WARN_UNUSED;

#endif
