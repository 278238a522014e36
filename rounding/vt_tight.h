/* vt_tight.h - the tight bound of a GEMM element and its cache (docs/rounding.md 2.1).
 *
 * B_ij = c(m) * sum_k |a_ik b_kj|, m the number of non-zero products (each product is exact in
 * FP64 and adding an exact zero is exact, so at most m-1 additions on any path of any summation
 * tree can round), and B_ij = 0 when m <= 1 or the sum is exact in every order. Evaluated only for
 * the elements the screening bound cannot clear, from FP64 copies of op(A)'s row and op(B)'s column
 * made contiguous on first use within one rounding call (op(B) transposed once, op(A) one row at a
 * time), so that the loop vectorises; the exact evaluation of an element (vt_eval.h) reads the
 * same copies. The bound is the function vt_bound_of_terms of the element's operands, bit for bit. */
#ifndef VT_TIGHT_H
#define VT_TIGHT_H

#include <stddef.h>
#include <stdint.h>

#include "vt_bound.h"

/* Short reductions (K at most this): non-zero masks are filled for a block of columns (rows) at
 * once; longer ones conflict in the caches. Exact rounding computes the tight bound before the
 * exact evaluation only for these. */
#define VT_MBLK_KMAX 256

typedef struct {
    const vt_bounds *b;
    size_t N, K;
    /* stage 1 (allocated on the first element that needs a tight bound): non-zero masks */
    uint64_t *mbt;   /* N x W bit masks of the non-zero entries of op(B)'s columns, W = ceil(K/64) */
    uint8_t *hmask;  /* hmask[j]: column j's mask filled */
    uint64_t *mar;   /* mrows x W: masks of the non-zero entries of op(A)'s rows mrow.. */
    uint64_t *mcur;  /* W: the mask of the current row (within mar) */
    size_t W, M;
    size_t mrow, mrows; /* rows whose masks are in mar (mrow = SIZE_MAX: none) */
    /* stage 2 (allocated on the first element with two or more non-zero products) */
    double *bt;      /* N x K: bt[j*K + k] = op(B)(k, j) */
    int16_t *lbt;    /* lowest-set-bit exponents of bt */
    double *ar;      /* K: op(A)(row, k) */
    int16_t *lar;
    uint8_t *have;   /* have[j]: column j of bt filled */
    size_t row;      /* row held in ar, or SIZE_MAX */
    float *fa;       /* op(A) read through b->xa_fill (ta NULL): row frow's K entries */
    size_t frow;     /* row held in fa, or SIZE_MAX */
    int failed;      /* allocation failed */
} vt_tight;

/* A cache for the elements of one operation's M x N output described by b (OUTER, with operands). */
void vt_tight_init(vt_tight *t, const vt_bounds *b, size_t M, size_t N);
void vt_tight_free(vt_tight *t);
/* The tight bound of element (i, j) by the specification (vt_bound_of_terms' value; computed
 * directly from the FP32 operands when memory is short). */
double vt_tight_bound(const vt_bound_cfg *cfg, vt_tight *t, size_t i, size_t j);
/* THE bound of element (i, j) of a rows x cols output described by b: the array's entry, the tight
 * bound (OUTER with operands), the outer product (OUTER without), or 0. */
double vt_bound_at(const vt_bound_cfg *cfg, vt_tight *t, const vt_bounds *b, size_t i, size_t j, size_t cols);

#endif
