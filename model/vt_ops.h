/* vt_ops.h - operation kinds of the step program (docs/architecture.md "Adding an operation").
 *
 * An operation kind declares, in one entry of one table (model/vt_ops.c):
 *   - its signature: how many inputs, outputs, integer and real arguments it takes, and a check
 *     of their classes, dtypes and shapes against its arguments (run once, when a program is
 *     built, so that the computation never has to re-derive or trust a shape);
 *   - its computation: FP64 from FP32 inputs through the kernels, with an a-priori error bound,
 *     turned into FP32 by the rounding layer (vt_round) - or an exact operation, which computes
 *     its FP32 output with no rounding at all;
 *   - its exact evaluator per output element: the vt_bounds the computation hands to vt_round
 *     names each output element's reduction (operands and strides), which exact rounding and the
 *     log's judge evaluate in the Kulisch accumulator; an operation whose elements are fixed
 *     chains of IEEE operations has bound 0 and needs none;
 *   - its cost: floating-point operations, bytes touched and FP64 scratch, from which the
 *     interpreter sizes its scratch and the arbiter its limits.
 * Every value an operation reads is one of its inputs; its arguments come from the recipe and
 * are part of the program every party builds from the same manifest.
 *
 * An operation with several outputs numbers its output elements through its outputs in order:
 * its log record (if it is rounded) and its output hash cover the concatenation. */
#ifndef VT_OPS_H
#define VT_OPS_H

#include <stdint.h>

#include "../common/vt_error.h"
#include "../data/vt_data.h"
#include "../rounding_log/vt_rlog.h"
#include "vt_program.h"

typedef enum {
    VT_OPK_LOAD_BATCH = 1, /* -> input [B, d] F32, labels [B] U8; iarg B. Exact. */
    VT_OPK_SCHEDULE,       /* -> t (F64 scalar: the step), lr (F64 scalar); farg: the schedule. Exact. */
    VT_OPK_MATMUL,         /* A, B -> C [M, N] = op(A) op(B); iarg transA, transB, M, N, K. */
    VT_OPK_BIAS_ADD,       /* X [M, N], b [N] -> Y */
    VT_OPK_RELU,           /* z -> relu(z). Exact. */
    VT_OPK_RELU_BWD,       /* z, da -> dz. Exact. */
    VT_OPK_SOFTMAX,        /* z [N, C] -> p */
    VT_OPK_XENT_LOSS,      /* p [N, C], labels [N] -> loss (F32 scalar) */
    VT_OPK_XENT_BWD,       /* p, labels -> dz */
    VT_OPK_COLSUM,         /* X [M, N] -> s [N] */
    VT_OPK_SGD_VELOCITY,   /* w, g, v -> v; farg momentum, weight decay */
    VT_OPK_SGD_APPLY,      /* w, v, lr -> w */
    VT_OPK_ADAM_MOMENTS,   /* g, m, v -> m, v; farg beta1, beta2 */
    VT_OPK_ADAM_APPLY,     /* w, m, v, t, lr -> w; farg beta1, beta2, eps */
    VT_OPK_AUGMENT,        /* x [B, C*H*W] -> x' : random crop (pad) and horizontal flip per example, drawn
                            * from (seed, step, example slot); iarg C, H, W, pad, flip, seed. Exact. */
    /* convolutional networks (model/vt_ops_cnn.c; activations channels-last [B*H*W, C]) */
    VT_OPK_IM2COL,         /* x -> col [B*Ho*Wo, k*k*C]; iarg B, H, W, C, k, stride, pad, chw. Exact. */
    VT_OPK_CONV_DGATHER,   /* dY -> G [B*H*W, k*k*Co] (the input gradient's operand); iarg B, H, W, Co, k,
                            * stride, pad. Exact. */
    VT_OPK_CONV_WPERM,     /* W [k*k*C, Co] -> W' [k*k*Co, C]; iarg k, C, Co. Exact. */
    VT_OPK_ADD,            /* a, b -> a + b */
    VT_OPK_COLDOT,         /* A, B [M, N] -> s [N], s_j = sum_i A_ij B_ij */
    VT_OPK_BN_CENTER,      /* x [M, C], S1 [C] -> xc = x - S1 / M */
    VT_OPK_BN_APPLY,       /* xc, S2, gamma, beta -> y; farg eps */
    VT_OPK_BN_RUNNING,     /* S1, S2, rm, rv -> rm, rv; iarg M; farg momentum */
    VT_OPK_BN_GAMMA_GRAD,  /* G2, S2 -> dgamma; iarg M; farg eps */
    VT_OPK_BN_BACKWARD,    /* dy, xc, S2, G1, G2, gamma -> dx; farg eps */
    VT_OPK_BN_EVAL,        /* x, rm, rv, gamma, beta -> y (evaluation); farg eps */
    VT_OPK_MAXPOOL,        /* x -> y; iarg B, H, W, C, k (window = stride = k). Exact. */
    VT_OPK_MAXPOOL_BWD,    /* x, dy -> dx; iarg as MAXPOOL. Exact. */
    VT_OPK_AVGPOOL,        /* x [B*HW, C] -> y [B, C] (global average); iarg B, HW */
    VT_OPK_AVGPOOL_BWD,    /* dy [B, C] -> dx [B*HW, C]; iarg B, HW */
    /* transformers (model/vt_ops_gpt.c; sequences [B*T, C], heads [B*H*T, D]) */
    VT_OPK_LOAD_WINDOWS,   /* -> tokens [B, T] U8, targets [B*T] U8: random windows; iarg B, T, seed, V. Exact. */
    VT_OPK_EMBED,          /* tokens, wte [V, C], wpe [T, C] -> x [B*T, C] */
    VT_OPK_ONEHOT,         /* tokens -> [B*T, V] F32; iarg V. Exact. */
    VT_OPK_POS_GRAD,       /* dx [B*T, C] -> dwpe [T, C] (sum over the batch); iarg B, T */
    VT_OPK_ROW_SUM,        /* x [M, N] -> [M] */
    VT_OPK_ROW_DOT,        /* a, b [M, N] -> [M] */
    VT_OPK_LN_CENTER,      /* x [M, C], S1 [M] -> xc */
    VT_OPK_LN_NORM,        /* xc, S2 [M] -> xhat; farg eps */
    VT_OPK_AFFINE,         /* x [M, C], gamma, beta [C] -> gamma x + beta */
    VT_OPK_SCALE_COLS,     /* x [M, C], gamma [C] -> gamma x */
    VT_OPK_LN_BACKWARD,    /* dyg, xhat, S2, G1, G2 -> dx; farg eps */
    VT_OPK_GELU,           /* x -> gelu(x) */
    VT_OPK_GELU_BWD,       /* x, dy -> dx */
    VT_OPK_HEADS_SPLIT,    /* qkv [B*T, 3C] -> q, k, v [B*H*T, D]; iarg B, T, H, D. Exact. */
    VT_OPK_HEADS_MERGE,    /* o [B*H*T, D] -> y [B*T, C]; iarg B, T, H, D. Exact. */
    VT_OPK_HEADS_JOIN,     /* dq, dk, dv -> dqkv [B*T, 3C]; iarg B, T, H, D. Exact. */
    VT_OPK_HEADS_UNMERGE,  /* y [B*T, C] -> o [B*H*T, D] (the merge's inverse); iarg B, T, H, D. Exact. */
    VT_OPK_BMM,            /* A, B -> C [G*M, N] = op(A_g) op(B_g); iarg G, M, N, K, transA, transB */
    VT_OPK_SOFTMAX_CAUSAL, /* s [R, T] -> p (row i sees positions <= i mod T); iarg T; farg scale */
    VT_OPK_SOFTMAX_BWD,    /* p, dp, S [R] -> dz; iarg T; farg scale */
    VT_OPK_DROPOUT,        /* x -> y (or dy -> dx with the same mask); iarg seed, key; farg p */
    VT_OPK_SUMSQ,          /* g -> [1] = sum g^2 */
    VT_OPK_SUM_SCALARS,    /* n scalars [1] (variadic) -> their sum [1] */
    VT_OPK_CLIP_FACTOR,    /* S [1] -> the clipping factor [1]; farg max_norm */
    VT_OPK_ADAM_SCALED,    /* g, m, v, factor [1] -> m, v (moments of factor * g); farg beta1, beta2 */
    VT_OPK_ADAMW,          /* w, m, v, t, lr -> w; farg beta1, beta2, eps, weight decay */
    VT_OPK_COUNT
} vt_opkind_id;

#define VT_VARIADIC 255

struct vt_model;

/* What an operation's computation is given. */
typedef struct {
    struct vt_model *m;
    const vt_opdesc *o;
    uint32_t op_id;
    uint64_t step;
    const vt_dataset *ds; /* LOAD_BATCH only */
    vt_rctx *rc;
} vt_opctx;

typedef struct {
    double flop;     /* floating-point operations */
    double bytes;    /* bytes read and written */
    double scratch;  /* FP64 values of scratch (per scratch buffer) */
    double norms;    /* FP64 values of norm scratch (GEMM row and column norms) */
} vt_opcost;

typedef struct {
    const char *name;   /* "matmul", ... */
    uint8_t rounded;    /* 1: goes through vt_round (has a log record in log rounding) */
    uint8_t n_in, n_out, n_iarg, n_farg; /* n_in VT_VARIADIC: one or more inputs */
    /* The signature check; a message names the first problem. */
    vt_err (*check)(const vt_program *p, const vt_opdesc *o);
    vt_err (*exec)(vt_opctx *c);
    void (*cost)(const vt_program *p, const vt_opdesc *o, vt_opcost *out);
} vt_opkind;

/* The augmentation's draws for example slot b of step `step` (VT_RNG_AUGMENT): the crop offsets oy,
 * ox in [0, 2 pad] into the zero-padded image and the flip (0 when flip is off). */
void vt_augment_draw(uint64_t seed, uint64_t step, uint64_t b, uint32_t pad, int flip, uint32_t *oy, uint32_t *ox,
                     int *fl);

/* Element e of an augmented C x H x W image: the index of its source element, or -1 (padding). */
int64_t vt_augment_source(size_t H, size_t W, uint32_t pad, uint32_t oy, uint32_t ox, int fl, size_t e);

/* The start of text window b of step `step` over n tokens (windows of T + 1 tokens): uniform in
 * [0, n - T - 1] from two Philox words (seed, purpose 5, step, 2b and 2b + 1). */
uint64_t vt_window_start(uint64_t seed, uint64_t step, uint64_t b, uint64_t n, uint64_t T);
/* Dropout's mask: element e of stream `key` at step `step` is kept when the Philox word (seed,
 * purpose 4, step, key << 32 | e) is at least floor(p 2^32). */
int vt_dropout_keep(uint64_t seed, uint64_t step, uint32_t key, uint64_t e, double p);

/* The kind's entry; NULL for an unknown kind. */
const vt_opkind *vt_opkind_get(uint16_t kind);
/* Checks an operation against its kind (counts, then the kind's check). */
vt_err vt_op_check(const vt_program *p, const vt_opdesc *o) VT_WARN_UNUSED;

#endif
