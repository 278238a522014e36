/* vt_model_int.h - private to model/: the sharded optimiser state (vt_shard_state.c) as the
 * interpreter (vt_model.c) uses it (docs/distributed.md "Sharded optimiser state"), the operation
 * runner and output hash the known-answer probe (vt_probe.c) and evaluation (vt_model_eval.c) share
 * with the interpreter, and the memory plan (vt_model_mem.c). */
#ifndef VT_MODEL_INT_H
#define VT_MODEL_INT_H

#include "vt_model.h"

/* The plan of one rank: which values of the state it holds and updates. The parameters are the
 * state floats [0, n_param) (the state's first class); rank r updates the values
 * [plo[r], plo[r + 1]), plo[r] = floor(n_param r / size), of that flattened range: in each parameter
 * tensor the intersection, a contiguous range of its elements, and the same elements of every
 * tensor the optimiser's operations apply elementwise with it (its gradient, its optimiser state).
 * Of the optimiser state's tensors the rank holds only those elements. */
struct vt_sstate {
    vt_comm *comm;
    int rank, size;
    size_t n_param;      /* parameter values: state floats [0, n_param) */
    size_t *plo;         /* size + 1 boundaries */
    size_t *pbytes;      /* each rank's parameter bytes (the allgather's blocks) */
    uint32_t *owner;     /* per tensor: the parameter it follows in the optimiser's operations (UINT32_MAX: none) */
    size_t *lo, *hi;     /* per tensor: this rank's elements (0 .. n where owner is none) */
    vt_tensor *tt;       /* the optimiser operations' tensor table: the owned tensors cut to this rank's elements */
    vt_program sprog;    /* the program with that table (shallow: names, operations are the program's) */
    size_t opt_first, opt_end; /* the optimiser state: state floats [opt_first, opt_end) */
    size_t opt_own;      /* this rank's values of it */
    size_t opt_max;      /* the most values of it any rank holds */
    float *send;         /* this rank's parameter values for the allgather when the model's FP64 scratch
                          * (free between steps) cannot hold them; else NULL */
    float *state_map;    /* the state's mapping (mmap; the model's arena[VT_TC_PARAM]) */
    size_t map_bytes;
};

/* 1 for the optimiser's kinds (SGD, Adam, AdamW): elementwise over their first inputs (not the
 * scalars: step, learning rate, clipping factor) and every output. */
int vti_opt_kind(uint16_t kind);
/* The plan of rank `rank` of `size` over program p (comm may be NULL for a plan only). */
vt_err vti_sstate_plan(const vt_program *p, vt_comm *comm, int rank, int size, vt_sstate **out) VT_WARN_UNUSED;
void vti_sstate_free(vt_sstate *s);
/* Elements [*lo, *hi) of state tensor t that rank r holds (the whole tensor unless it is owned). */
void vti_sstate_range(const vt_sstate *s, const vt_program *p, uint32_t t, int r, size_t *lo, size_t *hi);
/* After a step: every rank's updated parameter values to every rank (bits copied). */
vt_err vti_sstate_allgather_params(vt_model *m) VT_WARN_UNUSED;
/* The state's mapping: map_bytes reserved, readable and writable, nothing resident yet. */
vt_err vti_sstate_map(vt_sstate *s, size_t state_bytes) VT_WARN_UNUSED;

/* Operation op_id of the step or of the evaluation pass (1 .. n_ops + n_eval) run as vt_model_run
 * runs it (then the model's tamper hook, when set), with no after-operation hook. */
vt_err vti_model_exec(vt_model *m, const vt_dataset *ds, vt_rctx *rctx, uint64_t step, uint32_t op_id) VT_WARN_UNUSED;
/* Operation op_id run by the interpreter, nothing else (no range check, no hook). */
vt_err vti_model_op(vt_model *m, const vt_dataset *ds, vt_rctx *rctx, uint64_t s, uint32_t op_id) VT_WARN_UNUSED;
/* The scratch sizes (FP64 elements, norms) vt_model_init allocates, and the whole need with them
 * (vt_model_mem.c; ss: a sharded optimiser state, or NULL). */
void vti_model_scratch_need(const vt_program *p, const vt_sstate *ss, double *scratch, double *norms);
void vti_model_need_of(const vt_program *p, uint32_t batch, size_t n_examples, const vt_sstate *ss, vt_model_mem *need);
/* vt_model_output_hash of any operation of the step or of the evaluation pass. */
vt_err vti_model_output_hash(vt_model *m, uint32_t op_id, uint8_t out[VT_HASH_LEN]) VT_WARN_UNUSED;

#endif
