/* vt_model.h - the training step: one program for trainer, auditor and arbiter.
 *
 * An MLP (ReLU hidden layers, softmax cross-entropy) whose tensors live in one
 * contiguous FP32 buffer with an offsets table, llm.c style:
 *
 *     state = [ params | opt moment 1 | opt moment 2 (Adam only) ]
 *     params = W_1 (d0 x d1), b_1 (d1), W_2 (d1 x d2), b_2, ...
 *
 * Gradients share the params layout in a separate buffer. A step is a fixed sequence
 * of operations with stable ids (vt_model_op_name gives each a name); every rounded
 * operation goes through the rounding context, whose mode alone distinguishes the
 * trainer (record) from the auditor and arbiter (replay).
 */
#ifndef VT_MODEL_H
#define VT_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "../common/vt_error.h"
#include "../common/vt_hash.h"
#include "../data/vt_data.h"
#include "../kernels/vt_kernels.h"
#include "../rounding_log/vt_rlog.h"
#include "vt_recipe.h"

#define VT_MAX_OPS 160
#define VT_MAX_OP_INPUTS 3
#define VT_MAX_TENSORS (6 * VT_MAX_LAYERS)

/* Operation kinds. Rounded operations go through the rounding context; the exact ones
 * (LOAD_BATCH, RELU, RELU_BWD) are operations of the sequence too, so that every input of
 * every operation is the output of an earlier operation or a tensor of the state. */
typedef enum {
    VT_OPK_LOAD_BATCH = 1, VT_OPK_FWD_GEMM, VT_OPK_BIAS, VT_OPK_RELU, VT_OPK_SOFTMAX, VT_OPK_LOSS,
    VT_OPK_DLOGITS, VT_OPK_DW, VT_OPK_DB, VT_OPK_DX, VT_OPK_RELU_BWD, VT_OPK_SGD_V, VT_OPK_SGD_W,
    VT_OPK_ADAM_M, VT_OPK_ADAM_V, VT_OPK_ADAM_W
} vt_op_kind;

/* Tensor slots (u32: kind << 8 | index). Index: layer l (1..L) for activations, tensor t
 * (0..2L-1: W1, b1, W2, b2, ...) for parameters, gradients and moments. */
enum {
    VT_SLOT_X = 1, VT_SLOT_Y, VT_SLOT_ZG, VT_SLOT_Z, VT_SLOT_A, VT_SLOT_P, VT_SLOT_LOSS, VT_SLOT_DZ,
    VT_SLOT_DA, VT_SLOT_G, VT_SLOT_W, VT_SLOT_M1, VT_SLOT_M2
};
#define VT_SLOT(kind, idx) ((uint32_t)(kind) << 8 | (uint32_t)(idx))

typedef struct {
    uint8_t kind;
    uint8_t layer;  /* 1..L where it applies */
    uint8_t tensor; /* parameter tensor index where it applies */
    uint8_t rounded; /* 1: goes through vt_round (has a log record) */
    uint32_t out;   /* output slot */
    uint32_t n_in;
    uint32_t in[VT_MAX_OP_INPUTS];
    char name[40];
} vt_op;

/* Deliberate deviations, to play a cheating trainer in tests (never set by a real run). */
typedef enum {
    VT_CHEAT_NONE = 0,
    VT_CHEAT_LR,        /* step s uses learning rate `value` */
    VT_CHEAT_POISON,    /* step s: add `value` to every weight gradient of layer 1 */
    VT_CHEAT_FLIP_W,    /* step s: flip the lowest bit of the first weight after its update */
    VT_CHEAT_FLIP_OUTPUT, /* step s: flip the lowest bit of the first output value of operation `value`
                             (a lying auditor's computation in tests) */
    VT_CHEAT_REORDER,   /* step s: the batch's first example replaced by another (a reordered data stream;
                           the order WITHIN a batch cannot matter: every reduction is order-independent) */
} vt_cheat_kind;

typedef struct {
    vt_cheat_kind kind;
    uint64_t step;
    double value;
} vt_cheat;

typedef struct {
    vt_recipe rc;
    uint32_t L;                      /* weight layers */
    size_t n_params;                 /* floats in params */
    size_t off_w[VT_MAX_LAYERS];     /* offset of W_l (l = 0..L-1) within params */
    size_t off_b[VT_MAX_LAYERS];
    size_t n_state;                  /* floats in state */
    float *state;                    /* params | m | v */
    float *grads;                    /* n_params */
    uint64_t step;                   /* steps completed (0 = initial state) */
    uint32_t n_tensors;              /* tensors of the state: 2L params, 2L moments (x2 for Adam) */

    /* activations (batch B), index l = 0..L */
    float *act[VT_MAX_LAYERS + 1];   /* act[0] = input batch, act[l] = relu(z[l]) */
    float *z[VT_MAX_LAYERS + 1];     /* z[l]: pre-activation (bias added) */
    float *zg[VT_MAX_LAYERS + 1];    /* GEMM output before the bias */
    float *dz[VT_MAX_LAYERS + 1];    /* gradient w.r.t. z[l] */
    float *da[VT_MAX_LAYERS + 1];    /* gradient w.r.t. act[l] */
    float *probs;
    float loss;
    uint8_t *labels;
    size_t *batch_idx;
    double *x64, *x64b, *b64, *rn, *cn;

    uint32_t *perm;                  /* current epoch's permutation */
    uint64_t perm_epoch;             /* epoch of perm + 1 (0 = none) */
    size_t n_examples;

    vt_exec exec;
    uint32_t n_ops;
    vt_op ops[VT_MAX_OPS];           /* ops[1..n_ops] */
    vt_cheat cheat;
} vt_model;

/* Called after each operation of a step (vt_model_run); a non-zero return stops the step. */
typedef vt_err (*vt_op_hook)(void *ctx, vt_model *m, uint64_t step, uint32_t op_id);

/* Allocates the model for recipe rc over a dataset of n_examples examples, evaluating
 * reductions in `order`, and initialises the state of step 0 (He-uniform weights from the
 * counter-based generator, zero biases and moments). */
vt_err vt_model_init(vt_model *m, const vt_recipe *rc, size_t n_examples, vt_order order) VT_WARN_UNUSED;
void vt_model_free(vt_model *m);

/* Runs step m->step + 1 on ds under the rounding context (whose step must already be begun
 * for that step), writing the loss. On failure the context's fault says where. */
vt_err vt_model_step(vt_model *m, const vt_dataset *ds, vt_rctx *rc, float *loss) VT_WARN_UNUSED;

/* Runs operations 1..upto of step m->step + 1 (upto = n_ops: the whole step, after which
 * m->step is incremented), calling hook after each (may be NULL). */
vt_err vt_model_run(vt_model *m, const vt_dataset *ds, vt_rctx *rc, uint32_t upto, vt_op_hook hook,
                    void *hook_ctx) VT_WARN_UNUSED;

/* Executes the single operation op_id of step `step` on the current contents of its input
 * slots (the arbiter's recomputation; ds is needed for LOAD_BATCH only). */
vt_err vt_model_exec_op(vt_model *m, const vt_dataset *ds, vt_rctx *rc, uint64_t step, uint32_t op_id) VT_WARN_UNUSED;

/* A slot's storage and its number of FP32 values (VT_SLOT_Y: labels, u8, returned through
 * *labels with n = batch). NULL for an unknown slot. */
float *vt_model_slot(vt_model *m, uint32_t slot, size_t *n, uint8_t **labels);
/* SHA-256 of an operation's output (FP32 little-endian bytes; LOAD_BATCH: inputs then labels). */
vt_err vt_model_output_hash(vt_model *m, uint32_t op_id, uint8_t out[VT_HASH_LEN]) VT_WARN_UNUSED;

/* State tensor t (0..n_tensors-1): parameters t < 2L, then first moments, then second moments;
 * its slot and its SHA-256. */
uint32_t vt_model_tensor_slot(const vt_model *m, uint32_t t);
vt_err vt_model_tensor_hashes(const vt_model *m, uint8_t (*out)[VT_HASH_LEN]) VT_WARN_UNUSED;
/* State hash from tensor hashes: SHA-256("VTST" || u32 version 2 || u64 step || u32 n ||
 * the n tensor hashes). A single tensor can thus be authenticated against a state hash. */
vt_err vt_state_hash_of(uint64_t step, uint32_t n, const uint8_t (*tensor_hashes)[VT_HASH_LEN],
                        uint8_t out[VT_HASH_LEN]) VT_WARN_UNUSED;
/* The state hash of the model's current state (vt_state_hash_of over vt_model_tensor_hashes). */
vt_err vt_model_state_hash(const vt_model *m, uint8_t out[VT_HASH_LEN]) VT_WARN_UNUSED;

/* Replace the state with the given step's (n floats must equal n_state). */
vt_err vt_model_set_state(vt_model *m, uint64_t step, const float *state, size_t n) VT_WARN_UNUSED;

/* Name of an operation id ("layer 1 forward GEMM", ...); "?" when unknown. */
const char *vt_model_op_name(const vt_model *m, uint32_t op_id);

/* Mean accuracy of the current parameters on ds (FP64 forward, for reports only). */
vt_err vt_model_accuracy(const vt_model *m, const vt_dataset *ds, size_t max_examples, double *acc) VT_WARN_UNUSED;

#endif
