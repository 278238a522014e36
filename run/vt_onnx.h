/* vt_onnx.h - the inference graph of a model as ONNX (`trainer export --format onnx`): the
 * program's evaluation pass translated operation by operation into standard ONNX operators, with
 * the state's parameters and buffers as initializers (docs/format.md "Export (ONNX)").
 *
 * The ONNX schema is Debian's libonnx-dev (onnx.proto), compiled by protoc-c at build time and
 * serialised by libprotobuf-c (arch/onnx.cmake); a build without them has vt_onnx_available() = 0
 * and vt_onnx_write refuses with VT_ERR_UNSUPPORTED. */
#ifndef VT_ONNX_H
#define VT_ONNX_H

#include <stddef.h>

#include "../common/vt_error.h"
#include "../model/vt_model.h"

/* 1 when this build can write ONNX (libprotobuf-c and the ONNX schema were found). */
int vt_onnx_available(void);

/* 1 when the evaluation pass of p reads its input [B, C*H*W] as a channels-first image (a
 * convolution gathers it so: the built-in CNN's stem, a client graph whose first convolution reads
 * the batch), with chw = {C, H, W}: the ONNX graph's input is then [N, C, H, W]; 0 when it reads it
 * as a matrix; -1 when a convolution gathers it otherwise (no ONNX form). */
int vt_onnx_input_image(const vt_program *p, uint32_t chw[3]);

/* Writes m's inference graph (opset 13, IR version 7) to path, atomically (a temporary, fsynced,
 * renamed). The graph is the program's evaluation pass (vt_program_eval_range), translated kind by
 * kind:
 *   im2col + matmul (the convolution)  -> Conv (weight [k,k,Cin,Cout] permuted to [Cout,Cin,k,k])
 *   conv2d (+ bias_add)                -> Conv (B the bias): a client graph's convolution, its weight
 *                                         the module's [Cout,Cin,k,k] as stored (the program's two
 *                                         moves of it to the GEMM's layout have no node)
 *   to_channels_first of an image      -> Flatten (axis 1: ONNX's (c, h, w) order)
 *   to_channels_last of a matrix       -> Reshape to [N, C, H, W] (of an NCHW image: Identity)
 *   sigmoid, tanh, leaky_relu          -> Sigmoid, Tanh, LeakyRelu
 *   matmul (+ bias_add)                -> Gemm transB=1 (weight [in,out] transposed to [out,in])
 *   batchnorm_eval                     -> BatchNormalization (scale, bias, running mean, variance)
 *   relu, add, bias_add                -> Relu, Add, Add
 *   maxpool                            -> MaxPool (window = stride = k)
 *   global_avgpool                     -> GlobalAveragePool, Flatten
 *   softmax                            -> Softmax (axis 1)
 * and the GPT's (its kernels' chains, one operator per IEEE operation):
 *   embed                              -> Gather (wte at the ids), Add wpe, Reshape to [N*T, C]
 *   row_sum, row_dot                   -> ReduceSum (keepdims: [N*T, 1]), Mul first for the dot
 *   layernorm_center, _normalise       -> Div, Sub; Div, Add eps, Sqrt, Div (1 / .), Mul
 *   affine                             -> Mul, Add
 *   heads_split, heads_merge           -> Reshape, Transpose, Gather (q, k, v); Transpose, Reshape
 *   batched_matmul                     -> MatMul on [N, H, ., .] (Transpose for a transposed operand)
 *   causal_softmax                     -> Mul scale, Where (constant mask, -inf), Softmax (axis -1)
 *   gelu (tanh form)                   -> Mul, Mul, Mul, Add, Mul, Tanh, Add, Mul, Mul
 *   matmul transB (the tied head)      -> Gemm transB=1 (wte as stored)
 * Graph input "input": float32 [N, d], or [N, C, H, W] when the program reads it as a
 * channels-first image, or int64 token ids [N, T] (a text model); outputs "logits" (the softmax's
 * input) and "probs" [N, classes] (a text model: [N*T, V], a row per position).
 * meta_kv: 2 * n_meta strings (key, value, ...), the model's metadata_props; doc: the model's
 * doc_string (may be NULL). m must hold the state to export.
 * Errors: VT_ERR_UNSUPPORTED (a build without ONNX; an operation kind with no ONNX form, naming
 * it), VT_ERR_INTERNAL (the program is not of the shape the translation expects), VT_ERR_NOMEM,
 * VT_ERR_IO. */
vt_err vt_onnx_write(const char *path, vt_model *m, const char *const *meta_kv, size_t n_meta, const char *doc)
    VT_WARN_UNUSED;

#endif
