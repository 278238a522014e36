/* vt_kinds.h - THE list of operation kinds: every kind once, with every facet the tables need
 * (docs/architecture.md "Adding an operation kind"). Everything else is generated from it:
 *   - the ids vt_opkind_id (below; their numbers are the program's wire ids: append, never reorder);
 *   - the interpreter's table KINDS (ops/vt_ops.c): name, rounded, counts, argument names, and
 *     the functions vti_<impl>_check, vti_<impl>_exec, vti_<impl>_cost and vti_<impl>_plain (the
 *     plain FP32/FP64 form of the benchmark baseline, model/vt_plain.c), declared in vt_ops_int.h
 *     and defined in the family's file ops/vt_fam_<family>.c;
 *   - the device's facts (vt_kind_rounded, vt_kind_device below; backend/cuda/vt_dev_ops.c).
 * A missing function is a compile error, a missing facet a failure of tests/unit/test_kinds.c.
 *
 * X(ID, name, family, rounded, n_in, n_out, n_iarg, n_farg, iargs, fargs, red, device, impl, grad):
 *   ID       the id is VT_OPK_<ID>
 *   name     the kind's name in `trainer recipe --program` and in messages
 *   family   VT_FAM_<family>: what computes it (vt_kind_family below)
 *   rounded  1: its output goes through vt_round (a log record in log rounding); 0: exact
 *   n_in..   counts of inputs (VT_VARIADIC: one or more), outputs, integer and real arguments
 *   iargs, fargs  the arguments' names, space-separated, in order ("" for none)
 *   red      VT_RED_<red>: the reduction axes of its outputs (vt_kind_red below)
 *   device   VT_DEV_<device>: how the CUDA backend's device-resident step runs it (vt_kind_dev)
 *   impl     the stem of its functions; kinds that share a stem share code that reads o->kind
 *   grad     the backward facet vti_<grad>_grad (vt_grad_fn, ops/vt_ops.h): how a gradient flows
 *            through the kind to each input - a rule in the family's file (matmul, bias_add, relu,
 *            ...); `fused`: differentiated only inside a pattern the builder documents (softmax with
 *            its cross-entropy, batch norm's and layer norm's parts; docs/models.md); `none`: never
 *            differentiated (loaders, backward kinds, optimisers)
 * Each line's comment gives its tensors: inputs -> outputs, shapes (activations are row-major
 * with the examples' rows first: [B*H*W, C], [B*T, C]; heads [B*H*T, D]).
 * The family, red and device tokens are always pasted (VT_FAM_##f ...), never expanded, so a
 * macro of the same name at the point of use does not matter. */
#ifndef VT_KINDS_H
#define VT_KINDS_H

/* clang-format off */
#define VT_KINDS(X)                                                                                                    \
    /* -> input [B, d] F32, labels [B] U8 */                                                                           \
    X(LOAD_BATCH, "load_batch", LOADER, 0, 0, 2, 1, 0, "B", "", NONE, CPU, load_batch, none)                           \
    /* -> t (F64 scalar: the step), lr (F64 scalar) */                                                                 \
    X(SCHEDULE, "schedule", LOADER, 0, 0, 2, 4, 3, "schedule warmup decay_every steps",                                \
      "lr decay_factor final_lr_factor", NONE, CPU, schedule, none)                                                    \
    /* A, B -> C [M, N] = op(A) op(B) */                                                                               \
    X(MATMUL, "matmul", GEMM, 1, 2, 1, 5, 0, "transA transB M N K", "", GEMM_K, GEMM, matmul, matmul)                  \
    /* X [M, N], b [N] -> Y */                                                                                         \
    X(BIAS_ADD, "bias_add", CHAIN, 1, 2, 1, 0, 0, "", "", NONE, ITEM, bias_add, bias_add)                              \
    /* z -> relu(z) */                                                                                                 \
    X(RELU, "relu", CHAIN, 0, 1, 1, 0, 0, "", "", NONE, ITEM, relu, relu)                                              \
    /* z, da -> dz */                                                                                                  \
    X(RELU_BWD, "relu_backward", CHAIN, 0, 2, 1, 0, 0, "", "", NONE, ITEM, relu_bwd, none)                             \
    /* z [N, C] -> p */                                                                                                \
    X(SOFTMAX, "softmax", ROWWISE, 1, 1, 1, 0, 0, "", "", EXAMPLE, ITEM, softmax, fused)                               \
    /* p [N, C], labels [N] -> loss (F32 scalar): the mean over the rows */                                            \
    X(XENT_LOSS, "cross_entropy", REDUCE, 1, 2, 1, 0, 0, "", "", BATCH, ITEM, xent, fused)                             \
    /* p, labels -> dz */                                                                                              \
    X(XENT_BWD, "cross_entropy_backward", CHAIN, 1, 2, 1, 0, 0, "", "", NONE, ITEM, xent_bwd, none)                    \
    /* X [M, N] -> s [N] */                                                                                            \
    X(COLSUM, "column_sum", REDUCE, 1, 1, 1, 0, 0, "", "", BATCH, ITEM, colsum, fused)                                 \
    /* w, g, v -> v */                                                                                                 \
    X(SGD_VELOCITY, "sgd_velocity", CHAIN, 1, 3, 1, 0, 2, "", "momentum weight_decay", NONE, ITEM, sgd_velocity, none) \
    /* w, v, lr -> w */                                                                                                \
    X(SGD_APPLY, "sgd_apply", CHAIN, 1, 3, 1, 0, 0, "", "", NONE, ITEM, sgd_apply, none)                               \
    /* g, m, v -> m, v */                                                                                              \
    X(ADAM_MOMENTS, "adam_moments", CHAIN, 1, 3, 2, 0, 2, "", "beta1 beta2", NONE, ITEM, adam_moments, none)           \
    /* w, m, v, t, lr -> w */                                                                                          \
    X(ADAM_APPLY, "adam_apply", CHAIN, 1, 5, 1, 0, 3, "", "beta1 beta2 eps", NONE, ITEM, adam_apply, none)             \
    /* x [B, C*H*W] -> x': random crop (pad) and horizontal flip per example, drawn from (seed, step, example slot) */ \
    X(AUGMENT, "augment", MOVE, 0, 1, 1, 6, 0, "C H W pad flip seed", "", NONE, ITEM, augment, fused)                  \
    /* ---- convolutional networks (ops/vt_fam_*.c) */                                                                 \
    /* x -> col [B*Ho*Wo, k*k*C] */                                                                                    \
    X(IM2COL, "im2col", MOVE, 0, 1, 1, 8, 0, "B H W C k stride pad chw", "", NONE, ITEM, im2col, fused)                \
    /* dY -> G [B*H*W, k*k*Co] (the input gradient's operand) */                                                       \
    X(CONV_DGATHER, "conv_grad_gather", MOVE, 0, 1, 1, 7, 0, "B H W Co k stride pad", "", NONE, ITEM, dgather, none)   \
    /* W [k*k*C, Co] -> W' [k*k*Co, C] */                                                                              \
    X(CONV_WPERM, "conv_weight_transpose", MOVE, 0, 1, 1, 3, 0, "k C Co", "", NONE, ITEM, wperm, none)                 \
    /* a, b -> a + b */                                                                                                \
    X(ADD, "add", CHAIN, 1, 2, 1, 0, 0, "", "", NONE, ITEM, add, add)                                                  \
    /* A, B [M, N] -> s [N], s_j = sum_i A_ij B_ij */                                                                  \
    X(COLDOT, "column_dot", REDUCE, 1, 2, 1, 0, 0, "", "", BATCH, ITEM, coldot, fused)                                 \
    /* x [M, C], S1 [C] -> xc = x - S1 / M */                                                                          \
    X(BN_CENTER, "batchnorm_center", CHAIN, 1, 2, 1, 0, 0, "", "", NONE, ITEM, bn_center, fused)                       \
    /* xc, S2, gamma, beta -> y */                                                                                     \
    X(BN_APPLY, "batchnorm_apply", CHAIN, 1, 4, 1, 0, 1, "", "eps", NONE, ITEM, bn_apply, fused)                       \
    /* S1, S2, rm, rv -> rm, rv */                                                                                     \
    X(BN_RUNNING, "batchnorm_running_stats", CHAIN, 1, 4, 2, 1, 1, "M", "momentum", NONE, ITEM, bn_running, fused)     \
    /* G2, S2 -> dgamma */                                                                                             \
    X(BN_GAMMA_GRAD, "batchnorm_gamma_grad", CHAIN, 1, 2, 1, 1, 1, "M", "eps", NONE, ITEM, bn_gamma_grad, none)        \
    /* dy, xc, S2, G1, G2, gamma -> dx */                                                                              \
    X(BN_BACKWARD, "batchnorm_backward", CHAIN, 1, 6, 1, 0, 1, "", "eps", NONE, ITEM, bn_backward, none)               \
    /* x, rm, rv, gamma, beta -> y (the evaluation pass) */                                                            \
    X(BN_EVAL, "batchnorm_eval", CHAIN, 1, 5, 1, 0, 1, "", "eps", NONE, CPU, bn_eval, fused)                           \
    /* x -> y (window = stride = k) */                                                                                 \
    X(MAXPOOL, "maxpool", MOVE, 0, 1, 1, 5, 0, "B H W C k", "", NONE, ITEM, maxpool, maxpool)                          \
    /* x, dy -> dx */                                                                                                  \
    X(MAXPOOL_BWD, "maxpool_backward", MOVE, 0, 2, 1, 5, 0, "B H W C k", "", NONE, ITEM, maxpool_backward, none)       \
    /* x [B*HW, C] -> y [B, C] (global average) */                                                                     \
    X(AVGPOOL, "global_avgpool", REDUCE, 1, 1, 1, 2, 0, "B HW", "", EXAMPLE, ITEM, avgpool, avgpool)                   \
    /* dy [B, C] -> dx [B*HW, C] */                                                                                    \
    X(AVGPOOL_BWD, "global_avgpool_backward", CHAIN, 1, 1, 1, 2, 0, "B HW", "", NONE, ITEM, avgpool_backward, none)    \
    /* ---- transformers (ops/vt_fam_*.c) */                                                                           \
    /* -> tokens [B, T] U8, targets [B*T] U8: random windows */                                                        \
    X(LOAD_WINDOWS, "load_windows", LOADER, 0, 0, 2, 4, 0, "B T seed V", "", NONE, CPU, windows, none)                 \
    /* tokens, wte [V, C], wpe [T, C] -> x [B*T, C] */                                                                 \
    X(EMBED, "embed", CHAIN, 1, 3, 1, 0, 0, "", "", NONE, ITEM, embed, fused)                                          \
    /* tokens -> [B*T, V] F32 */                                                                                       \
    X(ONEHOT, "one_hot", MOVE, 0, 1, 1, 1, 0, "V", "", NONE, ITEM, onehot, fused)                                      \
    /* dx [B*T, C] -> dwpe [T, C] (sum over the batch) */                                                              \
    X(POS_GRAD, "position_gradient", REDUCE, 1, 1, 1, 2, 0, "B T", "", BATCH, ITEM, pos_grad, none)                    \
    /* x [M, N] -> [M] */                                                                                              \
    X(ROW_SUM, "row_sum", REDUCE, 1, 1, 1, 0, 0, "", "", EXAMPLE, ITEM, row_sum, fused)                                \
    /* a, b [M, N] -> [M] */                                                                                           \
    X(ROW_DOT, "row_dot", REDUCE, 1, 2, 1, 0, 0, "", "", EXAMPLE, ITEM, row_sum, fused)                                \
    /* x [M, C], S1 [M] -> xc */                                                                                       \
    X(LN_CENTER, "layernorm_center", CHAIN, 1, 2, 1, 0, 0, "", "", NONE, ITEM, ln_center, fused)                       \
    /* xc, S2 [M] -> xhat */                                                                                           \
    X(LN_NORM, "layernorm_normalise", CHAIN, 1, 2, 1, 0, 1, "", "eps", NONE, ITEM, ln_norm, fused)                     \
    /* x [M, C], gamma, beta [C] -> gamma x + beta */                                                                  \
    X(AFFINE, "affine", CHAIN, 1, 3, 1, 0, 0, "", "", NONE, ITEM, affine, fused)                                       \
    /* x [M, C], gamma [C] -> gamma x */                                                                               \
    X(SCALE_COLS, "scale_columns", CHAIN, 1, 2, 1, 0, 0, "", "", NONE, ITEM, affine, fused)                            \
    /* dyg, xhat, S2, G1, G2 -> dx */                                                                                  \
    X(LN_BACKWARD, "layernorm_backward", CHAIN, 1, 5, 1, 0, 1, "", "eps", NONE, ITEM, ln_backward, none)               \
    /* x -> gelu(x) */                                                                                                 \
    X(GELU, "gelu", CHAIN, 1, 1, 1, 0, 0, "", "", NONE, ITEM, gelu, gelu)                                              \
    /* x, dy -> dx */                                                                                                  \
    X(GELU_BWD, "gelu_backward", CHAIN, 1, 2, 1, 0, 0, "", "", NONE, ITEM, gelu, none)                                 \
    /* qkv [B*T, 3C] -> q, k, v [B*H*T, D] */                                                                          \
    X(HEADS_SPLIT, "heads_split", MOVE, 0, 1, 3, 4, 0, "B T H D", "", NONE, ITEM, heads, fused)                        \
    /* o [B*H*T, D] -> y [B*T, C] */                                                                                   \
    X(HEADS_MERGE, "heads_merge", MOVE, 0, 1, 1, 4, 0, "B T H D", "", NONE, ITEM, heads, fused)                        \
    /* dq, dk, dv -> dqkv [B*T, 3C] */                                                                                 \
    X(HEADS_JOIN, "heads_join", MOVE, 0, 3, 1, 4, 0, "B T H D", "", NONE, ITEM, heads, none)                           \
    /* y [B*T, C] -> o [B*H*T, D] (the merge's inverse) */                                                             \
    X(HEADS_UNMERGE, "heads_unmerge", MOVE, 0, 1, 1, 4, 0, "B T H D", "", NONE, ITEM, heads, none)                     \
    /* A, B -> C [G*M, N] = op(A_g) op(B_g): G = B*H groups, each within one example */                                \
    X(BMM, "batched_matmul", GEMM, 1, 2, 1, 6, 0, "G M N K transA transB", "", EXAMPLE, GEMM, bmm, bmm)                \
    /* s [R, T] -> p (row i sees positions <= i mod T) */                                                              \
    X(SOFTMAX_CAUSAL, "causal_softmax", ROWWISE, 1, 1, 1, 1, 1, "T", "scale", EXAMPLE, ITEM, softmax_causal, fused)    \
    /* p, dp, S [R] -> dz */                                                                                           \
    X(SOFTMAX_BWD, "softmax_backward", CHAIN, 1, 3, 1, 1, 1, "T", "scale", NONE, ITEM, softmax_causal, none)           \
    /* x -> y (or dy -> dx with the same mask) */                                                                      \
    X(DROPOUT, "dropout", CHAIN, 1, 1, 1, 2, 1, "seed key", "p", NONE, ITEM, dropout, dropout)                         \
    /* g -> [1] = sum g^2 */                                                                                           \
    X(SUMSQ, "sum_of_squares", REDUCE, 1, 1, 1, 0, 0, "", "", WHOLE, ITEM, sumsq, none)                                \
    /* n scalars [1] -> their sum [1] */                                                                               \
    X(SUM_SCALARS, "sum_scalars", REDUCE, 1, VT_VARIADIC, 1, 0, 0, "", "", WHOLE, CPU, sum_scalars, none)              \
    /* S [1] -> the clipping factor [1] */                                                                             \
    X(CLIP_FACTOR, "clip_factor", CHAIN, 1, 1, 1, 0, 1, "", "max_norm", NONE, ITEM, clip_factor, none)                 \
    /* g, m, v, factor [1] -> m, v (moments of factor * g) */                                                          \
    X(ADAM_SCALED, "adam_moments_scaled", CHAIN, 1, 4, 2, 0, 2, "", "beta1 beta2", NONE, ITEM, adam_scaled, none)      \
    /* w, m, v, t, lr -> w */                                                                                          \
    X(ADAMW, "adamw_apply", CHAIN, 1, 5, 1, 0, 4, "", "beta1 beta2 eps weight_decay", NONE, ITEM, adamw, none)         \
    /* a, b -> a - b (same element count; no architecture uses it yet) */                                              \
    X(SUB, "sub", CHAIN, 1, 2, 1, 0, 0, "", "", NONE, CPU, sub, fused)                                                 \
    /* x [B*H*W, C] (chw: [B, C*H*W]), W [k*k*C, Co] -> Z [B*Ho*Wo, Co] = im2col(x) W, im2col never stored */          \
    X(CONV2D, "conv2d", GEMM, 1, 2, 1, 9, 0, "B H W C k stride pad chw Co", "", EXAMPLE, GEMM, conv2d, conv2d)         \
    /* x, dY [B*Ho*Wo, Co] -> dW [k*k*C, Co] = im2col(x)^T dY (the sum over the batch's pixels) */                     \
    X(CONV2D_WGRAD, "conv2d_weight_grad", GEMM, 1, 2, 1, 9, 0, "B H W C k stride pad chw Co", "", BATCH, GEMM,         \
      conv2d, none)                                                                                                    \
    /* dY [B*Ho*Wo, Co], W [k*k*C, Co] -> dX [B*H*W, C] = G(dY) W' (conv_grad_gather's G never stored; chw 0) */       \
    X(CONV2D_DGRAD, "conv2d_input_grad", GEMM, 1, 2, 1, 9, 0, "B H W C k stride pad chw Co", "", EXAMPLE, GEMM,        \
      conv2d, none)                                                                                                    \
    /* ---- regression and multi-label losses (ops/vt_fam_loss.c; their means over the global batch) */                \
    /* y [B, K], t [B, K] F32 -> loss (F32 scalar) = mean of (y - t)^2 over the B*K elements */                        \
    X(MSE_LOSS, "mse_loss", REDUCE, 1, 2, 1, 0, 0, "", "", BATCH, CPU, reg_loss, none)                                 \
    /* y, t [B, K] -> dy [B, K] = 2 (y - t) / (B K), each element RN32 of its real value */                            \
    X(MSE_BWD, "mse_backward", CHAIN, 1, 2, 1, 0, 0, "", "", NONE, CPU, reg_bwd, none)                                 \
    /* y [B, K], t [B, K] F32 -> loss (F32 scalar) = mean of |y - t| over the B*K elements */                          \
    X(L1_LOSS, "l1_loss", REDUCE, 1, 2, 1, 0, 0, "", "", BATCH, CPU, reg_loss, none)                                   \
    /* y, t [B, K] -> dy [B, K] = sign(y - t) / (B K), sign(0) = 0 */                                                  \
    X(L1_BWD, "l1_backward", CHAIN, 1, 2, 1, 0, 0, "", "", NONE, CPU, reg_bwd, none)                                   \
    /* x [B, K] logits, t [B, K] in [0, 1] -> loss (F32 scalar) = mean of max(x, 0) - x t + log(1 + exp(-|x|)) */      \
    X(BCE_LOSS, "bce_with_logits_loss", REDUCE, 1, 2, 1, 0, 0, "", "", BATCH, CPU, bce, none)                         \
    /* x, t [B, K] -> dx [B, K] = (sigmoid(x) - t) / (B K) */                                                          \
    X(BCE_BWD, "bce_with_logits_backward", CHAIN, 1, 2, 1, 0, 0, "", "", NONE, CPU, bce_bwd, none)                    \
    /* -> input [B, d] F32, targets [B, K] F32: LOAD_BATCH's examples with the data set's float targets */             \
    X(LOAD_BATCH_TARGETS, "load_batch_targets", LOADER, 0, 0, 2, 1, 0, "B", "", NONE, CPU, load_targets, none)    \
    /* ---- the activations of client models (ops/vt_fam_act.c; each element RN32 of its real value) */               \
    /* x -> y = 1 / (1 + exp(-x)) */                                                                                   \
    X(SIGMOID, "sigmoid", CHAIN, 1, 1, 1, 0, 0, "", "", NONE, CPU, sigmoid, sigmoid)                                   \
    /* y (sigmoid's output), dy -> dx = dy y (1 - y) */                                                                \
    X(SIGMOID_BWD, "sigmoid_backward", CHAIN, 1, 2, 1, 0, 0, "", "", NONE, CPU, sigmoid_bwd, none)                     \
    /* x -> y = tanh(x) */                                                                                             \
    X(TANH, "tanh", CHAIN, 1, 1, 1, 0, 0, "", "", NONE, CPU, tanh, tanh)                                               \
    /* y (tanh's output), dy -> dx = dy (1 - y^2) */                                                                   \
    X(TANH_BWD, "tanh_backward", CHAIN, 1, 2, 1, 0, 0, "", "", NONE, CPU, tanh_bwd, none)                              \
    /* x -> y = x >= 0 ? x : alpha x */                                                                                \
    X(LEAKY_RELU, "leaky_relu", CHAIN, 1, 1, 1, 0, 1, "", "alpha", NONE, CPU, leaky_relu, leaky_relu)                  \
    /* x, dy -> dx = x > 0 ? dy : alpha dy (PyTorch's: alpha dy at x = 0) */                                           \
    X(LEAKY_RELU_BWD, "leaky_relu_backward", CHAIN, 1, 2, 1, 0, 1, "", "alpha", NONE, CPU, leaky_relu_bwd, none) \
    /* ---- layouts of the client's models (ops/vt_fam_move.c; docs/models.md): exact moves, each the other's  */     \
    /* backward. x [B*HW, C] channels-last -> y [B, C*HW] channels-first: y[b][c*HW + t] = x[b*HW + t][c] */          \
    X(NHWC_TO_NCHW, "to_channels_first", MOVE, 0, 1, 1, 3, 0, "B HW C", "", NONE, CPU, layout, layout)                \
    /* x [B, C*HW] channels-first -> y [B*HW, C] channels-last: y[b*HW + t][c] = x[b][c*HW + t] */                     \
    X(NCHW_TO_NHWC, "to_channels_last", MOVE, 0, 1, 1, 3, 0, "B HW C", "", NONE, CPU, layout, layout)                  \
    /* ---- the transformers of client models (ops/vt_fam_rowwise.c) */                                                \
    /* s [R, T] -> p: the softmax of scale s over each whole row (causal_softmax without the mask) */                  \
    X(SOFTMAX_SCALED, "scaled_softmax", ROWWISE, 1, 1, 1, 1, 1, "T", "scale", EXAMPLE, CPU, softmax_causal, fused)     \
    /* ---- PyTorch's exact GELU (ops/vt_fam_act.c; each element RN32 of its real value; Phi, phi: the normal  */      \
    /* CDF and density). x -> y = x Phi(x) = x/2 (1 + erf(x / sqrt 2)) */                                              \
    X(GELU_ERF, "gelu_erf", CHAIN, 1, 1, 1, 0, 0, "", "", NONE, CPU, gelu_erf, gelu_erf)                               \
    /* x (gelu_erf's input), dy -> dx = dy (Phi(x) + x phi(x)) */                                                      \
    X(GELU_ERF_BWD, "gelu_erf_backward", CHAIN, 1, 2, 1, 0, 0, "", "", NONE, CPU, gelu_erf_bwd, none)                  \
    /* x [B*T, C], P (T*C values) -> y: P added to each example's T rows (a learned position embedding) */             \
    X(ADD_POSITIONS, "add_positions", CHAIN, 1, 2, 1, 1, 0, "T", "", NONE, CPU, add_pos, add_pos)
/* clang-format on */

#define VT_VARIADIC 255 /* n_in: one or more inputs */

typedef enum {
    VT_OPK_NONE = 0, /* no kind: ids start at 1 */
#define VTI_KIND_ENUM(ID, nm, fam, rd, ni, no, nia, nfa, ia, fa, red, dev, impl, grad) VT_OPK_##ID,
    VT_KINDS(VTI_KIND_ENUM)
#undef VTI_KIND_ENUM
    VT_OPK_COUNT
} vt_opkind_id;

/* What computes a kind; the families of docs/architecture.md "Adding an operation kind". */
typedef enum {
    VT_FAM_LOADER = 1, /* its outputs come from outside the tensors: the dataset, the step, the recipe */
    VT_FAM_CHAIN,      /* elementwise chains: each output element a fixed chain of IEEE operations on a
                        * few input elements (bound 0; exact kinds like ReLU included) */
    VT_FAM_REDUCE,     /* strided reductions: each output element a sum (vt_reduce, column sums, the
                        * loss), bounded, with its exact evaluator over strided operands */
    VT_FAM_ROWWISE,    /* row-wise: a row's normalisation (softmax), correctly rounded within the row */
    VT_FAM_MOVE,       /* gathers and moves: values moved or selected, never computed (exact) */
    VT_FAM_GEMM,       /* matrix products, through the GEMM with its panelled bound */
} vt_kind_family;

/* The reduction axes of a kind's outputs: which elements one output element sums over. The rule,
 * read from each kind's exec (the vt_bounds it hands to vt_round) and cost: */
typedef enum {
    VT_RED_NONE = 1, /* no output element is a sum of other elements (chains, moves, loaders); a chain
                      * may read a statistic another kind summed (batch norm's S1, S2) */
    VT_RED_EXAMPLE,  /* sums within one example: one row (softmax, row sums, layer norm's statistics),
                      * an example's rows (global average pooling over H*W), one (example, head) group
                      * of the batched GEMM */
    VT_RED_BATCH,    /* sums over the batch: every row of a batch-major input (column sums and dots:
                      * bias and batch-norm gradients and statistics; the loss's mean over rows; the
                      * position gradient over B) - the reductions a data-parallel split must combine */
    VT_RED_WHOLE,    /* sums over a tensor that is not batch-major (a gradient's sum of squares, scalars) */
    VT_RED_GEMM_K,   /* MATMUL: over K, which is the batch's rows exactly when transA = 1 (A stored
                      * [K, M]: the weight gradients X^T dY); within a row otherwise - per operation,
                      * vt_op_batch_reduction (ops/vt_ops.h) */
} vt_kind_red;

/* How the CUDA backend's device-resident step (backend/cuda/vt_cuda_model.cu) runs a kind. */
typedef enum {
    VT_DEV_ITEM = 1, /* device items: vt_dev_op_make and vti_dev_op_item (backend/cuda/vt_dev_ops_hd.h) */
    VT_DEV_GEMM,     /* the GEMM pipeline of backend/cuda/vt_cuda.cu (vt_cudap_run_op's MATMUL and BMM cases, and
                      * the convolution kinds as step program 1's GEMM of operands formed on the device) */
    VT_DEV_CPU,      /* CPU only: the host runs it, its tensors copied across */
} vt_kind_dev;

/* The list's facets of kind k, header-only (the device plugin and the CPU twin read them without
 * the interpreter's table); 0 for a kind that is not in the list. */
static inline int vt_kind_rounded(unsigned k)
{
    switch (k) {
#define VTI_KIND_ROUNDED(ID, nm, fam, rd, ni, no, nia, nfa, ia, fa, red, dev, impl, grad)                                     \
    case VT_OPK_##ID:                                                                                                  \
        return rd;
        VT_KINDS(VTI_KIND_ROUNDED)
#undef VTI_KIND_ROUNDED
    default:
        return 0;
    }
}

static inline vt_kind_dev vt_kind_device(unsigned k)
{
    switch (k) {
#define VTI_KIND_DEVICE(ID, nm, fam, rd, ni, no, nia, nfa, ia, fa, red, dev, impl, grad)                                      \
    case VT_OPK_##ID:                                                                                                  \
        return VT_DEV_##dev;
        VT_KINDS(VTI_KIND_DEVICE)
#undef VTI_KIND_DEVICE
    default:
        return (vt_kind_dev)0;
    }
}

static inline vt_kind_family vt_kind_family_of(unsigned k)
{
    switch (k) {
#define VTI_KIND_FAMILY(ID, nm, fam, rd, ni, no, nia, nfa, ia, fa, red, dev, impl, grad)                                      \
    case VT_OPK_##ID:                                                                                                  \
        return VT_FAM_##fam;
        VT_KINDS(VTI_KIND_FAMILY)
#undef VTI_KIND_FAMILY
    default:
        return (vt_kind_family)0;
    }
}

#endif
