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

#define VT_MAX_OPS 128

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

    /* activations (batch B): act[0] = input, act[l] = relu(z[l]) for hidden layers */
    float *act[VT_MAX_LAYERS + 1];
    float *z[VT_MAX_LAYERS + 1];     /* z[l], l = 1..L: pre-activation (bias added) */
    float *tmp;                      /* GEMM output before the bias */
    float *probs;
    float *dz[2];
    float *da;
    uint8_t *labels;
    size_t *batch_idx;
    double *x64, *x64b, *b64, *rn, *cn;

    uint32_t *perm;                  /* current epoch's permutation */
    uint64_t perm_epoch;             /* epoch of perm + 1 (0 = none) */
    size_t n_examples;

    vt_exec exec;
    uint32_t n_ops;
    char op_names[VT_MAX_OPS][40];
} vt_model;

/* Allocates the model for recipe rc over a dataset of n_examples examples, evaluating
 * reductions in `order`, and initialises the state of step 0 (He-uniform weights from the
 * counter-based generator, zero biases and moments). */
vt_err vt_model_init(vt_model *m, const vt_recipe *rc, size_t n_examples, vt_order order) VT_WARN_UNUSED;
void vt_model_free(vt_model *m);

/* Runs step m->step + 1 on ds under the rounding context (whose step must already be begun
 * for that step), writing the loss. On failure the context's fault says where. */
vt_err vt_model_step(vt_model *m, const vt_dataset *ds, vt_rctx *rc, float *loss) VT_WARN_UNUSED;

/* SHA-256 over the canonical state bytes: "VTST", u32 version 1, u64 step, u64 n_state,
 * then n_state FP32 values little-endian. */
vt_err vt_model_state_hash(const vt_model *m, uint8_t out[VT_HASH_LEN]) VT_WARN_UNUSED;

/* Replace the state with the given step's (n floats must equal n_state). */
vt_err vt_model_set_state(vt_model *m, uint64_t step, const float *state, size_t n) VT_WARN_UNUSED;

/* Name of an operation id ("layer 1 forward GEMM", ...); "?" when unknown. */
const char *vt_model_op_name(const vt_model *m, uint32_t op_id);

/* Mean accuracy of the current parameters on ds (FP64 forward, for reports only). */
vt_err vt_model_accuracy(const vt_model *m, const vt_dataset *ds, size_t max_examples, double *acc) VT_WARN_UNUSED;

#endif
