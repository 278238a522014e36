/* vt_ops.h - operation kinds of the step program (docs/architecture.md "Adding an operation").
 *
 * An operation kind is one line of the list in vt_kinds.h, which generates its entry of the table
 * here (ops/vt_ops.c) and of every other table; its functions live in its family's file
 * (ops/vt_fam_<family>.c); it declares:
 *   - its signature: how many inputs, outputs, integer and real arguments it takes, and a check
 *     of their classes, dtypes and shapes against its arguments (run once, when a program is
 *     built, so that the computation never has to re-derive or trust a shape);
 *   - its computation: FP64 from FP32 inputs through the kernels, with an a-priori error bound,
 *     turned into FP32 by the rounding layer (vt_round) - or an exact operation, which computes
 *     its FP32 output with no rounding at all;
 *   - its exact evaluator per output element: the vt_bounds the computation hands to vt_round
 *     names each output element's reduction (operands and strides), which exact rounding and the
 *     log's judge evaluate in the exact accumulator (vt_xacc); an operation whose elements are fixed
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
#include "../dist/vt_dist.h"
#include "../backend/vt_backend.h"
#include "../kernels/vt_cnn.h"
#include "../kernels/vt_kernels.h"
#include "../rounding/vt_round.h"
#include "vt_kinds.h"
#include "vt_program.h"

/* The kinds and their ids: the list in vt_kinds.h. */

/* The learning-rate schedule the SCHEDULE kind computes (its arguments; recipe keys of the same
 * names, docs/format.md): lr(s) for the 1-based step s, in FP64 (vt_cospi for the cosine). */
typedef enum { VT_SCHED_CONSTANT = 0, VT_SCHED_STEP = 1, VT_SCHED_LINEAR = 2, VT_SCHED_COSINE = 3 } vt_sched_kind;
typedef struct {
    vt_sched_kind kind;
    uint64_t warmup, decay_every, steps;
    double lr, decay_factor, final_lr_factor;
} vt_schedule;
double vt_schedule_lr(const vt_schedule *sc, uint64_t s);

/* The GEMMs' arithmetic (recipe key gemm_arith; docs/tensorcore.md): 0 "fp64", the exact rounding
 * of FP64 products and sums (the default), or a tensor-core model of kernels/vt_tc.h - the operands
 * rounded to BF16 / FP16 / FP8 E4M3, the products accumulated group by group in the documented order
 * (vt_tc_gemm) - whose FP32 results are stored as they are. vt_gemm_arith_names: the recipe's names,
 * NULL-terminated; vt_gemm_arith_model: the model of value v (NULL for 0 or out of range). */
extern const char *const vt_gemm_arith_names[];
struct vt_tc_arch_s;
const struct vt_tc_arch_s *vt_gemm_arith_model(uint32_t v);
/* A convolution kind (conv2d, conv2d_weight_grad, conv2d_input_grad) as step program 1's GEMM
 * C [M, N] = op(A) B of operands formed from its inputs: A the im2col columns [B*Ho*Wo, k*k*C] of its
 * input (conv2d: A W; the weight gradient, ta: A^T dY, K the batch's pixels) or the input gradient's
 * gather G [B*H*W, k*k*Co] of dY (dgrad: G W', W' [k*k*Co, C] the per-tap transpose of W). Formed so by
 * the tensor-core mode (ops/vt_fam_gemm.c conv2d_tc) and by the CUDA backend (vt_dev_conv). */
typedef struct {
    vt_conv_geom g;      /* the convolution's geometry (input C channels) */
    size_t Co;           /* output channels */
    int dgrad, ta;
    size_t M, N, K;
    size_t n_a, n_wp;    /* elements of A, and of W' (the input gradient; else 0) */
} vt_conv_gemm;
/* 1 and *cg for a convolution kind of a checked program; 0 for another kind or sizes that overflow. */
int vt_conv_as_gemm(const vt_opdesc *o, vt_conv_gemm *cg);
/* A convolution kind in a tensor-core mode (conv2d_tc): *flop, the flop of the GEMM it runs
 * (vt_conv_as_gemm's: the input gradient's dense G x W', s*s times its phase classes' for stride s), and
 * *floats, the FP32 operands it forms in memory of its own; both 0 for another kind. The game's clock
 * and memory estimate (game/vt_game_cost.c) and the memory plan (model/vt_model_mem.c) count them. */
void vt_op_tc_cost(const vt_opdesc *o, double *flop, double *floats);

/* The FP64 scratch an operation may use, sized by the interpreter from the operations' costs
 * (vt_opcost: scratch values per buffer, norms for the GEMM's row and column norms). */
typedef struct {
    double *x64, *x64b, *b64; /* cost.scratch values each */
    double *rn, *cn;          /* cost.norms values each */
    float *f32s;              /* cost.scratch FP32 values */
} vt_opscratch;

/* Data-parallel training (docs/distributed.md): the ranks of comm split each step's global batch of
 * `batch` examples into equal contiguous shares; this rank holds the examples (global slots)
 * first .. first + local - 1, and its program is built for a batch of `local`. The kinds key
 * everything drawn per example by the global slot (augmentation, dropout, text windows, the data
 * order), divide by the global batch's counts (the loss, its gradient, batch normalisation), and
 * round every sum over the batch across the ranks (vt_round_dist: RN32 of the exact global sum),
 * so every rounded value is the one-process value whatever the number of ranks. */
typedef struct {
    vt_comm *comm;
    uint32_t batch; /* the global batch B */
    uint32_t local; /* this rank's examples b = B / size */
    uint32_t first; /* its first global example slot: rank * b */
    uint64_t n_dist, n_dist_exact, bytes_sent; /* sums rounded across the ranks, of these settled
                                                * exactly, bytes this rank sent for them */
} vt_shard;

/* What an operation's computation is given: everything it reads or writes, and nothing of the
 * interpreter that runs it (model/vt_model.c builds it; so does any other runner of a kind). */
typedef struct {
    const vt_program *prog;
    uint8_t *const *arena;    /* the tensor arenas by class: tensor t is arena[t.cls] + t.off */
    const vt_opdesc *o;
    uint32_t op_id;
    uint64_t step;
    const vt_dataset *ds;     /* LOAD_BATCH only */
    const size_t *batch_idx;  /* LOAD_BATCH only: the step's example indices (the data order) */
    vt_rctx *rctx;
    vt_exec *exec;            /* evaluation order, bound configuration, GEMM settings */
    const vt_backend *be;     /* NULL or the backend whose kernels replace the CPU's */
    vt_opscratch s;
    vt_shard *shard;          /* NULL: this process holds the whole batch */
    uint32_t gemm_arith;      /* the GEMMs' arithmetic (vt_gemm_arith_names): 0 fp64 */
} vt_opctx;

/* What an operation's plain form is given (the unverified FP32/FP64 benchmark baseline,
 * model/vt_plain.h, runs the same program through these): F32 tensors are held as float, or as
 * double when f64 = 1; no bound, no rounding layer, results not reproducible. */
typedef struct {
    const vt_program *prog;
    uint8_t *const *arena;    /* by class: tensor t is arena[t.cls] + off[t] */
    const size_t *off;        /* the runner's own layout (elements of its precision) */
    int f64;                  /* 1: F32 tensors hold doubles */
    const vt_opdesc *o;
    uint64_t step;
    const vt_dataset *ds;     /* LOAD_BATCH, LOAD_WINDOWS */
    const size_t *batch_idx;  /* LOAD_BATCH: the step's example indices (the runner computes them) */
    const vt_backend *be;     /* NULL or a backend whose plain GEMMs replace the CBLAS calls */
} vt_plainctx;

/* Rows batch_idx[0 .. B) of c->ds into FP32 tensor t (B its first dimension) in the plain form's
 * precision (vt_data_batch, vt_data_batch_f64), and their labels into `labels` unless NULL. */
vt_err vt_plain_rows(const vt_plainctx *c, uint32_t t, uint8_t *labels) VT_WARN_UNUSED;

typedef struct {
    double flop;     /* floating-point operations */
    double bytes;    /* bytes read and written */
    double scratch;  /* FP64 values of scratch (per scratch buffer) */
    double norms;    /* FP64 values of norm scratch (GEMM row and column norms) */
} vt_opcost;

/* The backward facet of a kind (vt_kinds.h's `grad` column, vti_<grad>_grad): how the gradient
 * of a forward operation o reaches its input i, given the gradients dy[0 .. n_out - 1] of its
 * outputs (UINT32_MAX for an output with none). With dx = VT_GRAD_QUERY the rule only answers;
 * otherwise it appends to p the operations that write input i's gradient into tensor dx (a
 * VT_TC_GRAD tensor with input i's dtype and shape, made by the caller), their names starting
 * with `layer`. The derivation (arch/vt_graph.c, docs/models.md) calls it. */
typedef enum {
    VT_GRAD_NOT = 1, /* the kind is never differentiated: loaders, backward kinds, optimisers ("none") */
    VT_GRAD_FUSED,   /* differentiated only inside a pattern the builder documents: softmax with its
                      * cross-entropy, batch norm's and layer norm's parts, the attention's moves ("fused") */
    VT_GRAD_NONE,    /* no gradient reaches this input (labels, indices) */
    VT_GRAD_ALIAS,   /* input i's gradient is dy[0] itself: nothing is emitted */
    VT_GRAD_OPS,     /* operations compute it (appended unless querying) */
} vt_grad_rule;
#define VT_GRAD_QUERY UINT32_MAX
typedef vt_grad_rule (*vt_grad_fn)(vt_program *p, const vt_opdesc *o, uint32_t i, const uint32_t *dy, uint32_t dx,
                                   const char *layer);

typedef struct {
    const char *name;   /* "matmul", ... */
    uint8_t rounded;    /* 1: goes through vt_round (has a log record in log rounding) */
    uint8_t n_in, n_out, n_iarg, n_farg; /* n_in VT_VARIADIC: one or more inputs */
    uint8_t family;     /* vt_kind_family */
    uint8_t red;        /* vt_kind_red: the reduction axes of its outputs */
    uint8_t device;     /* vt_kind_dev */
    const char *iargs, *fargs; /* the arguments' names, space-separated */
    const char *impl;   /* the stem of its functions (vti_<impl>_check, _exec, _cost, _plain) */
    /* The signature check; a message names the first problem. */
    vt_err (*check)(const vt_program *p, const vt_opdesc *o);
    vt_err (*exec)(vt_opctx *c);
    void (*cost)(const vt_program *p, const vt_opdesc *o, vt_opcost *out);
    vt_err (*plain)(vt_plainctx *c); /* the plain form in FP32 or FP64 (c->f64) */
    const char *grad_stem;           /* the list's `grad` column: "none", "fused" or a rule's stem */
    vt_grad_fn grad;                 /* the backward facet (vti_<grad>_grad, vt_grad_fn above) */
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
/* 1 when an output element of o sums over the batch's rows: its kind's reduction axes are
 * VT_RED_BATCH, or VT_RED_GEMM_K with transA = 1 (vt_kinds.h). */
int vt_op_batch_reduction(const vt_opdesc *o);
/* Checks an operation against its kind (counts, then the kind's check). */
vt_err vt_op_check(const vt_program *p, const vt_opdesc *o) VT_WARN_UNUSED;

#endif
