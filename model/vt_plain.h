/* vt_plain.h - a plain (unverifiable) training step of the same MLP recipe: the benchmark
 * baseline ("plain FP64 step", "plain FP32 step").
 *
 * Same recipe, architecture, initialisation (the FP32 He-uniform values of vt_model), data
 * order (the Philox Fisher-Yates permutation per epoch), loss and optimiser formulas as
 * vt_model, but computed directly in one precision:
 *
 *   fp64 = 0   every buffer float, cblas_sgemm, float elementwise math (expf/logf/sqrtf)
 *   fp64 = 1   every buffer double, cblas_dgemm on the double arrays, double math (exp/log/sqrt)
 *
 * No rounding layer, no log, no hashing, no bounds: the results depend on the BLAS library
 * and the machine and are NOT reproducible bit for bit. Never use this for a committed run;
 * it exists only so that benchmarks can state what verification costs over plain training
 * (and what FP64 costs over FP32).
 */
#ifndef VT_PLAIN_H
#define VT_PLAIN_H

#include <stddef.h>
#include <stdint.h>

#include "../common/vt_error.h"
#include "../data/vt_data.h"
#include "vt_recipe.h"

typedef struct {
    vt_recipe rc;
    int fp64;                        /* 1: double buffers and dgemm; 0: float and sgemm */
    size_t esz;                      /* sizeof(double) or sizeof(float) */
    uint32_t L;
    size_t n_params;
    size_t off_w[VT_MAX_LAYERS];     /* same layout as vt_model: W_l (d_l x d_l+1), b_l, ... */
    size_t off_b[VT_MAX_LAYERS];
    size_t n_state;                  /* params | m | v (Adam) */
    void *state;                     /* n_state elements of the chosen precision */
    void *grads;                     /* n_params */
    uint64_t step;                   /* steps completed */

    void *act[VT_MAX_LAYERS + 1];    /* act[0] = batch input, act[l] = relu(z[l]) */
    void *z[VT_MAX_LAYERS + 1];
    void *probs;
    void *dz[2];
    void *da;
    uint8_t *labels;
    size_t *batch_idx;
    uint32_t *perm;
    uint64_t perm_epoch;             /* epoch of perm + 1 (0 = none) */
    size_t n_examples;
} vt_plain;

/* Allocates and initialises (step 0) a plain model of recipe rc over a dataset of n_examples
 * examples in FP64 (fp64 = 1) or FP32 (fp64 = 0). */
vt_err vt_plain_init(vt_plain *p, const vt_recipe *rc, size_t n_examples, int fp64) VT_WARN_UNUSED;
void vt_plain_free(vt_plain *p);

/* Runs step p->step + 1 on ds; *loss (may be NULL) receives the batch's mean cross-entropy.
 * VT_ERR_DIVERGED when the loss is not finite. */
vt_err vt_plain_step(vt_plain *p, const vt_dataset *ds, double *loss) VT_WARN_UNUSED;

/* Accuracy of the current parameters on the first max_examples examples of ds (0 = all),
 * computed in the model's own precision. */
vt_err vt_plain_accuracy(const vt_plain *p, const vt_dataset *ds, size_t max_examples, double *acc) VT_WARN_UNUSED;

#endif
