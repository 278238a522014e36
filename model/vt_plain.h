/* vt_plain.h - a plain (unverifiable) training step of the same MLP recipe: the benchmark
 * baseline ("plain FP64 step", "plain FP32 step").
 *
 * The same step program as vt_model (ops/vt_program.h: the recipe's builder, the same
 * operations in the same order, the same forward pass for training and evaluation), the same
 * initialisation (the FP32 He-uniform values) and data order, but each operation kind computed
 * directly in one precision by its plain implementation (the table in vt_plain.c):
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
#include "../backend/vt_backend.h"
#include "../ops/vt_program.h"
#include "../arch/vt_recipe.h"

typedef struct {
    vt_recipe rcp;
    int fp64;                        /* 1: double values and dgemm; 0: float and sgemm */
    size_t esz;                      /* sizeof(double) or sizeof(float): an F32 tensor's element here */
    vt_program prog;                 /* the recipe's step program, the one vt_model runs */
    uint8_t *arena[VT_TC_COUNT];     /* one per class, tensors at their own offsets (esz elements) */
    size_t *off;                     /* off[t]: tensor t's byte offset in its class's arena */
    uint64_t step;                   /* steps completed */
    size_t *batch_idx;
    uint32_t *perm;
    uint64_t perm_epoch;             /* epoch of perm + 1 (0 = none) */
    size_t n_examples;
    const vt_backend *be;            /* NULL or a backend whose plain GEMMs replace the CBLAS calls */
} vt_plain;

/* Allocates and initialises (step 0) a plain model of recipe rcp over a dataset of n_examples
 * examples in FP64 (fp64 = 1) or FP32 (fp64 = 0). */
vt_err vt_plain_init(vt_plain *p, const vt_recipe *rcp, size_t n_examples, int fp64) VT_WARN_UNUSED;
void vt_plain_free(vt_plain *p);

/* Runs step p->step + 1 on ds; *loss (may be NULL) receives the batch's mean cross-entropy.
 * VT_ERR_DIVERGED when the loss is not finite. */
vt_err vt_plain_step(vt_plain *p, const vt_dataset *ds, double *loss) VT_WARN_UNUSED;

/* For tests (the gradient checks, the comparison with the verified kinds): tensor t's storage
 * (doubles for an F32 tensor of an fp64 model, floats for fp32; other dtypes as they are), and
 * operations from .. to of step `step` run on the tensors' current contents. */
void *vt_plain_tensor(vt_plain *p, uint32_t t);
vt_err vt_plain_run(vt_plain *p, const vt_dataset *ds, uint64_t step, uint32_t from, uint32_t to) VT_WARN_UNUSED;

/* 1 when kind has a plain form in both precisions (the tables generated from ops/vt_kinds.h). */
int vt_plain_has_kind(uint16_t kind);

/* Accuracy of the current parameters on the first max_examples examples of ds (0 = all),
 * computed in the model's own precision. */
vt_err vt_plain_accuracy(vt_plain *p, const vt_dataset *ds, size_t max_examples, double *acc) VT_WARN_UNUSED;

#endif
