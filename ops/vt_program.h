/* vt_program.h - the training step as a program (docs/architecture.md, docs/format.md
 * "Step program"): a table of tensors and a list of operations over them.
 *
 * One builder per architecture (arch/vt_arch_*.c; recipe key `arch`) turns a recipe into the
 * program; one interpreter (model/vt_model.h) runs it for the trainer, the auditor and the
 * arbiter. Nothing else in the project knows a model's internals: a party names a tensor by its
 * id (its index in the table; the id that goes on the wire) and an operation by its id (1-based
 * position in the list; the id of its log record and of its chain position).
 *
 * Tensors live in one contiguous arena per class, at the offset the table gives. The three state
 * classes (parameters, optimiser state, buffers) come first in the table, in that order, and
 * their arenas are adjacent: the state is one FP32 buffer (a checkpoint) and the state hash is
 * computed over the state tensors in table order (their ids 0 .. n_state - 1). */
#ifndef VT_PROGRAM_H
#define VT_PROGRAM_H

#include <stddef.h>
#include <stdint.h>

#include "../common/vt_error.h"

typedef enum {
    VT_TC_PARAM = 0, /* trained parameters (state) */
    VT_TC_OPT = 1,   /* optimiser state: momenta, moments (state) */
    VT_TC_BUFFER = 2, /* other state carried from step to step (running statistics) */
    VT_TC_INPUT = 3, /* per-step inputs: the batch, its labels or tokens, the schedule's scalars */
    VT_TC_ACT = 4,   /* activations and other intermediate values of the step */
    VT_TC_GRAD = 5,  /* gradients */
    VT_TC_COUNT
} vt_tclass;

typedef enum { VT_DT_F32 = 0, VT_DT_F64 = 1, VT_DT_U8 = 2, VT_DT_I32 = 3, VT_DT_COUNT } vt_dtype;

#define VT_MAX_RANK 4
#define VT_MAX_OP_OUTPUTS 8 /* outputs of one operation (its output hash combines them) */

typedef struct {
    char *name;     /* unique; "fc1.weight", "fc1.weight.exp_avg", "input", ... */
    uint8_t cls;    /* vt_tclass */
    uint8_t dtype;  /* vt_dtype; state tensors are F32 */
    uint8_t rank;   /* 0 (scalar) .. VT_MAX_RANK */
    uint32_t shape[VT_MAX_RANK];
    size_t n;       /* elements: the product of the shape (1 for a scalar) */
    size_t off;     /* byte offset of the tensor in its class's arena */
    uint8_t init;   /* state tensors: the value of step 0 (vt_tinit) */
    uint32_t fan_in; /* VT_INIT_HE_UNIFORM */
} vt_tensor;

/* Initial values of state tensors: zero, He-uniform U(-a, a) with a = sqrt(6 / fan_in) from
 * the counter-based generator keyed by (seed, init stream, tensor id, element), or one (a batch
 * norm's scale and running variance). */
typedef enum { VT_INIT_ZERO = 0, VT_INIT_HE_UNIFORM = 1, VT_INIT_ONE = 2 } vt_tinit;

typedef struct {
    uint16_t kind;     /* vt_opkind id (ops/vt_ops.h) */
    uint32_t n_in, n_out, n_iarg, n_farg;
    uint32_t *in;      /* tensor ids read */
    uint32_t *out;     /* tensor ids written (an operation may read and write the same tensor) */
    int64_t *iarg;     /* integer arguments: dimensions, flags */
    double *farg;      /* real arguments: hyper-parameters from the recipe */
    char *name;        /* "fc1 forward GEMM", ... */
} vt_opdesc;

typedef struct {
    uint32_t n_tensors, cap_tensors;
    vt_tensor *t;
    uint32_t n_ops, cap_ops;
    vt_opdesc *op;          /* op[1 .. n_ops]; op[0] unused */
    uint32_t n_state;       /* tensors 0 .. n_state - 1 form the state */
    size_t arena_bytes[VT_TC_COUNT];
    size_t state_floats;    /* FP32 values in the state (params | opt | buffers) */
    uint32_t loss;          /* id of the scalar loss tensor */
    uint32_t input, labels, probs; /* ids the evaluation reads and writes (the forward pass) */
    uint32_t fwd_first, fwd_last;  /* the forward pass: operations fwd_first .. fwd_last */
    /* The evaluation pass, when it differs from the step's forward pass (batch normalisation uses
     * its running statistics there): n_eval operations stored after the step's, op[n_ops + 1 ..
     * n_ops + n_eval]; they are not part of the step (no id in it, never logged or disputed).
     * 0: evaluation runs fwd_first .. fwd_last. */
    uint32_t n_eval, eval_first;
    uint32_t gemm_arith;    /* the recipe's GEMM arithmetic (vt_gemm_arith_names): a tensor-core mode's
                             * convolution kinds form their operands in memory of their own (vt_op_tc_cost),
                             * which the memory plan counts */
    int bad;                /* the builder ran out of memory or was given a bad tensor */
} vt_program;

size_t vt_dtype_size(vt_dtype d);
const char *vt_dtype_name(vt_dtype d);   /* "F32", "F64", "U8", "I32" (safetensors names) */
const char *vt_tclass_name(vt_tclass c); /* "param", "opt", "buffer", "input", "act", "grad" */

void vt_program_init(vt_program *p);
void vt_program_free(vt_program *p);

/* Builder: adds a tensor (rank = number of dims given, at most VT_MAX_RANK) and returns its id.
 * The name is printf-formatted. On failure p->bad is set and UINT32_MAX returned. */
uint32_t vt_prog_tensor(vt_program *p, vt_tclass cls, vt_dtype dt, uint32_t rank, const uint32_t *shape,
                        const char *fmt, ...) __attribute__((format(printf, 6, 7)));
/* Sets tensor t's initial value (state tensors). */
void vt_prog_init_he(vt_program *p, uint32_t t, uint32_t fan_in);
void vt_prog_init_one(vt_program *p, uint32_t t);
/* Adds an operation and returns its id (1-based). */
uint32_t vt_prog_op(vt_program *p, uint16_t kind, const uint32_t *in, uint32_t n_in, const uint32_t *out,
                    uint32_t n_out, const int64_t *iarg, uint32_t n_iarg, const double *farg, uint32_t n_farg,
                    const char *fmt, ...) __attribute__((format(printf, 11, 12)));
/* Ends building: lays out the arenas, checks that the state tensors come first and are FP32,
 * that every id is in range, names are unique and that every operation passes its kind's check
 * (ops/vt_ops.h). */
vt_err vt_program_finish(vt_program *p) VT_WARN_UNUSED;

/* Builder: the operations added between these two calls form the evaluation pass (n_eval). */
void vt_prog_eval_begin(vt_program *p);
void vt_prog_eval_end(vt_program *p);
/* The operations evaluation runs: op[*first .. *last] (the eval pass, or the forward pass). */
void vt_program_eval_range(const vt_program *p, uint32_t *first, uint32_t *last);

/* The id of the tensor named `name`; UINT32_MAX when there is none. */
uint32_t vt_program_find(const vt_program *p, const char *name);
/* The operation whose output operation j reads as tensor t: q in 1 .. j-1 of the same step
 * (*prev = 0); or, when none before j writes t, the last operation of the program that writes
 * it, which ran in the previous step (*prev = 1); or 0 when no operation writes t (a state tensor
 * the step only reads). vt_program_finish checks that a non-state tensor is always written in the
 * step before it is read, and that no operation between q and j overwrites any output of q (so
 * q's output hash authenticates what j reads). */
uint32_t vt_program_producer(const vt_program *p, uint32_t j, uint32_t t, int *prev);
/* 1 when operation j writes tensor t. */
int vt_op_writes(const vt_opdesc *o, uint32_t t);

#endif
