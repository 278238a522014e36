/* vt_ops_int.h - helpers shared by the files that implement operation kinds (vt_ops.c and
 * the family files vt_fam_*.c), and every kind's entry points for the table in vt_ops.c, declared
 * from the list (vt_kinds.h). Not a public API. */
#ifndef VT_OPS_INT_H
#define VT_OPS_INT_H

#include <float.h>
#include <math.h>
#include <string.h>

#include "../rounding/vt_round_dist.h"
#include "vt_ops.h"

static inline const vt_tensor *T(const vt_program *p, uint32_t id) { return &p->t[id]; }

/* tensor id has dtype dt and n elements */
vt_err vti_op_want(const vt_program *p, const vt_opdesc *o, uint32_t id, vt_dtype dt, size_t n, const char *what);
#define want vti_op_want
/* input 0 is a rank-2 [N, C] FP32 tensor */
vt_err vti_op_rows(const vt_program *p, const vt_opdesc *o, vt_tensor const **x);
/* the cost of an elementwise operation: flop_per per output element, every tensor touched once */
void vti_cost_elementwise(const vt_program *p, const vt_opdesc *o, double flop_per, vt_opcost *out);
#define cost_elementwise vti_cost_elementwise
/* every input and the output are F32 with the output's element count */
vt_err vti_same_n_check(const vt_program *p, const vt_opdesc *o);

#define ERR_IF(cond, ...) VT_RETURN_ERROR_IF(cond, VT_ERR_INTERNAL, __VA_ARGS__)

/* tensor id is FP32 with n elements (a vector of a row's or a column's length, an output) */
static inline vt_err f32_shape(const vt_program *p, const vt_opdesc *o, uint32_t id, size_t n, const char *what)
{
    return want(p, o, id, VT_DT_F32, n, what);
}
static inline vt_err rowvec(const vt_program *p, const vt_opdesc *o, uint32_t id, size_t M)
{
    return f32_shape(p, o, id, M, "row vector");
}

/* global average pooling's arguments (iarg B, HW: x [B*HW, C] -> y [B, C]), for the pooling sum
 * and its backward chain */
static inline vt_err gap_args(const vt_program *p, const vt_opdesc *o, uint32_t big, size_t *B, size_t *HW, size_t *C)
{
    const vt_tensor *x = T(p, big);
    ERR_IF(o->iarg[0] < 1 || o->iarg[1] < 1 || o->iarg[0] > (1 << 20) || o->iarg[1] > ((int64_t)1 << 24) ||
               x->rank != 2 || x->dtype != VT_DT_F32 || x->shape[0] != (uint64_t)(o->iarg[0] * o->iarg[1]),
           "program: \"%s\": bad pooling arguments or input", o->name);
    *B = (size_t)o->iarg[0], *HW = (size_t)o->iarg[1], *C = x->shape[1];
    return VT_OK;
}

static inline float *vti_op_f(const vt_opctx *c, const uint32_t *ids, uint32_t k)
{
    const vt_tensor *t = &c->prog->t[ids[k]];
    return (float *)(void *)(c->arena[t->cls] + t->off);
}
#define IN(k) vti_op_f(c, c->o->in, (k))
#define OUT(k) vti_op_f(c, c->o->out, (k))
#define NOUT(k) (c->prog->t[c->o->out[k]].n)
#define ROUND(xs, bnd, rows, cols, out) VT_FORWARD_IF_ERROR(vt_round(c->rctx, c->op_id, (xs), (bnd), (rows), (cols), (out)))

/* ---- a chain's host loop (the elementwise chains, the row-wise kinds): part(c, arg, lo, hi) writes
 * the values of items [lo, hi) of [0, n) (elements, or rows of `cols` elements: 1 for elements) through
 * the kind's formula in the kernels' shared _hd.h header; vti_chain_run splits [0, n) over the threads
 * (common/vt_par.h) in parts of about VTI_CHAIN_GRAIN elements. Every item is its own fixed chain, so
 * the bits do not depend on the split (docs/architecture.md "Threads"). */
typedef void (*vti_chain_part)(const vt_opctx *c, const void *arg, size_t lo, size_t hi);
void vti_chain_run(const vt_opctx *c, size_t n, size_t cols, vti_chain_part part, const void *arg);
/* vti_chain_run and the rounding of its values (bound 0) into out: under exact rounding each block
 * converted as soon as it is formed (vt_round_convert), then vt_round_converted; under log rounding
 * (whose checks against the log come before out is written) the values first, then vt_round. What
 * ROUND(x64, NULL, n, cols, out) after vti_chain_run gives, bit for bit, fault and log alike */
vt_err vti_chain_round(vt_opctx *c, size_t n, size_t cols, vti_chain_part part, const void *arg, float *out)
    VT_WARN_UNUSED;
#define VTI_CHAIN_GRAIN 16384

/* ---- data parallelism (vt_shard): the global batch's count of rows of which this rank holds
 * `rows` (a batch-major tensor: rows = b * rows per example), the global slot of local example
 * b, the global index of element e of a batch-major tensor of n elements */
static inline size_t vti_rows_global(const vt_opctx *c, size_t rows)
{
    return c->shard ? rows / c->shard->local * c->shard->batch : rows;
}
static inline uint64_t vti_slot(const vt_opctx *c, uint64_t b) { return c->shard ? c->shard->first + b : b; }
static inline uint64_t vti_elem_global(const vt_opctx *c, size_t n, uint64_t e)
{
    return c->shard ? (uint64_t)c->shard->first * (n / c->shard->local) + e : e;
}
/* A sum over the batch's rows rounded: by vt_round in one process; across the ranks when the batch
 * is split (this rank's FP64 partials x and their bounds b, with b's exact evaluator for the
 * elements the screen leaves undecided; exact rounding only) */
vt_err vti_round_batch(vt_opctx *c, const double *x, const vt_bounds *b, size_t rows, size_t cols, float *out);
#define ROUND_BATCH(xs, bnd, rows, cols, out) VT_FORWARD_IF_ERROR(vti_round_batch(c, (xs), (bnd), (rows), (cols), (out)))
/* the same for n elements with partials x, bounds bound[i] and this rank's terms of element i
 * added exactly by terms(arg, i, acc) */
vt_err vti_round_batch_terms(vt_opctx *c, const double *x, const double *bound, size_t n, vt_round_dist_terms terms,
                             void *arg, float *out);

/* ---- the plain forms (vt_plainctx): written once per kind for a scalar type `real` (not T, which
 * names the tensor lookup above), which VTI_PLAIN_BOTH instantiates as double and as float (one
 * branch each, chosen by c->f64);
 * PX/PY are input/output k as real *, PTP any tensor's bytes; the P-prefixed maths are libm's of real
 * (expf or exp, ...); PTG(name) is a kernel's name_f32 or name_f64; PGEMM the CBLAS GEMM of real. */
#define VTI_PLAIN_BOTH(c, ...)                                                                                         \
    if ((c)->f64) {                                                                                                    \
        typedef double real; (void)sizeof(real); /* a body need not name real */                                       \
        __VA_ARGS__                                                                                                    \
    } else {                                                                                                           \
        typedef float real; (void)sizeof(real);                                                                        \
        __VA_ARGS__                                                                                                    \
    }
static inline void *vti_plain_ptr(const vt_plainctx *c, uint32_t t) { return c->arena[c->prog->t[t].cls] + c->off[t]; }
#define PTP(c, t) vti_plain_ptr((c), (t))
#define PX(k) ((real *)PTP(c, c->o->in[k]))
#define PY(k) ((real *)PTP(c, c->o->out[k]))
#define SHAPE(k, d) (c->prog->t[c->o->in[k]].shape[d])
#define PTG(name) _Generic((real)0, float: name##_f32, default: name##_f64)
#define PEXP(x) _Generic((real)0, float: expf, default: exp)(x)
#define PLOG(x) _Generic((real)0, float: logf, default: log)(x)
#define PSQRT(x) _Generic((real)0, float: sqrtf, default: sqrt)(x)
#define PTANH(x) _Generic((real)0, float: tanhf, default: tanh)(x)
#define PERF(x) _Generic((real)0, float: erff, default: erf)(x)
#define PTMIN _Generic((real)0, float: FLT_TRUE_MIN, default: DBL_TRUE_MIN)
#define PGEMM _Generic((real)0, float: cblas_sgemm, default: cblas_dgemm)
/* 1 / sqrt(s2 / M + eps) in real: the normalisations' reciprocal standard deviation */
#define PRSTD(s2, M, eps) ((real)1 / PSQRT((s2) / (real)(M) + (real)(eps)))
/* an FP64 scalar tensor's value */
static inline double vti_plain_f64(const vt_plainctx *c, uint32_t t)
{
    double v;
    memcpy(&v, PTP(c, t), 8);
    return v;
}
/* LOAD_BATCH's input (output 0 [B, d] F32, iarg B): its check, and the batch's examples loaded into it
 * (the step's indices c->batch_idx; vt_fam_loader.c), shared with LOAD_BATCH_TARGETS */
vt_err vti_load_batch_input_check(const vt_program *p, const vt_opdesc *o);
vt_err vti_load_batch_input(vt_opctx *c);
/* every label is a class */
vt_err vti_labels_ok(size_t N, size_t C, const uint8_t *y);

/* The backward facet of a kind whose backward kind bk reads (x, dY) -> dX, x the forward operation o's
 * first input (from_output 0) or its output (1), with o's own arguments: bk appended (unless querying:
 * then o is not read), named "<layer> backward"; VT_GRAD_OPS. Shared by the elementwise kinds' and max
 * pooling's rules. */
vt_grad_rule vti_grad_pair(vt_program *p, uint16_t bk, const vt_opdesc *o, int from_output, const uint32_t *dy,
                           uint32_t dx, const char *layer);

/* every kind's check, exec, cost and plain form, named by its stem in the list (vt_kinds.h); a stem shared by
 * several kinds is declared once per kind, which C allows */
#define VTI_KIND_DECL(ID, nm, fam, rd, ni, no, nia, nfa, ia, fa, red, dev, impl, grad)                                       \
    vt_err vti_##impl##_check(const vt_program *p, const vt_opdesc *o);                                                \
    vt_err vti_##impl##_exec(vt_opctx *c);                                                                             \
    void vti_##impl##_cost(const vt_program *p, const vt_opdesc *o, vt_opcost *out);                                   \
    vt_err vti_##impl##_plain(vt_plainctx *c);                                                                         \
    vt_grad_rule vti_##grad##_grad(vt_program *p, const vt_opdesc *o, uint32_t i, const uint32_t *dy, uint32_t dx,     \
                                   const char *layer);
VT_KINDS(VTI_KIND_DECL)
#undef VTI_KIND_DECL

#endif
