/* vt_kernels_int.h - helpers shared by the CPU kernel files (not a public API). */
#ifndef VT_KERNELS_INT_H
#define VT_KERNELS_INT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "../common/vt_par.h"
#include "vt_kernels.h"

/* d[0..n) = src converted to FP64; returns their sum of squares, four lanes in a fixed order (vt_gemm.c) */
double vti_cvt_span(const float *src, size_t n, double *d);
/* Kernel loops over threads (the convolution's gathers) run through vt_par_range (common/vt_par.h;
 * the kinds' chains through ops/' vti_chain_run): every output element is its own, so the bits do not
 * depend on the split. VTI_GRAIN: about the elements worth a part. */
#define VTI_GRAIN 16384
/* the grain in rows of `cols` elements */
#define VTI_ROWS_GRAIN(cols) (VTI_GRAIN / ((cols) ? (cols) : 1) + 1)

/* Workspace slots of vt_exec.ws. */
enum {
    VT_WS_A = 0,    /* FP64 copy of op(A) / gathered vectors */
    VT_WS_B = 1,    /* FP64 copy of op(B) */
    VT_WS_PERM = 2, /* PERMUTED: the permutation (uint32_t) */
    VT_WS_AUX = 3,  /* SORTED keys, PAIRWISE stack rows */
    VT_WS_PAN = 4,  /* panel partial sums (a row of them, or one per panel) */
    VT_WS_PROD = 5, /* SORTED: one element's products */
    VT_WS_COUNT = 6
};

/* Grow-only scratch: *out points to at least count*elsize bytes of slot.
 * VT_ERR_LIMIT on size overflow, VT_ERR_NOMEM on allocation failure. */
vt_err vti_ws_get(vt_ws *ws, int slot, size_t count, size_t elsize, void **out) VT_WARN_UNUSED;

/* Checks e (non-NULL, valid order). */
vt_err vti_check_exec(const vt_exec *e) VT_WARN_UNUSED;

/* n*m without overflow, else VT_ERR_LIMIT. */
vt_err vti_mul_size(size_t n, size_t m, size_t *out) VT_WARN_UNUSED;

/* The PERMUTED order's permutation of 0..n-1 (n <= 2^32): Fisher-Yates driven by
 * splitmix64 seeded with seed.  Depends only on (seed, n). */
void vti_perm(uint64_t seed, size_t n, uint32_t *perm);

/* Sort key of a double: orders by |x| (bit pattern), then +x before -x.
 * The key determines x, so equal keys are equal values. */
static inline uint64_t vti_sort_key(double x)
{
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    return ((u & 0x7fffffffffffffffULL) << 1) | (u >> 63);
}

static inline double vti_key_value(uint64_t k)
{
    uint64_t u = (k >> 1) | (k << 63);
    double x;
    memcpy(&x, &u, sizeof x);
    return x;
}

/* Sorts n keys ascending and sums their values in that order (from +0). */
double vti_sum_sorted_keys(size_t n, uint64_t *keys);

/* Sum of x[0..n-1] in the order o (from +0, so never -0):
 *   BLAS      four interleaved accumulators (t mod 4), combined (a0+a1)+(a2+a3)
 *   FORWARD   t ascending;  REVERSE  t descending
 *   PAIRWISE  leaves of 8 consecutive terms summed ascending, leaves combined
 *             by a binary counter (vti_pairwise tree, see vt_kernels.c)
 *   PERMUTED  t = perm[0], perm[1], ...  (perm from vti_perm, n entries)
 *   SORTED    increasing |x| (keys: n entries of scratch)
 * perm / keys may be NULL for the orders that do not use them. */
double vti_sum(vt_order o, size_t n, const double *x, const uint32_t *perm, uint64_t *keys);

/* The panel tree (docs/rounding.md 2.1): the results of a reduction's P panels, each a vector of
 * n values, combined by a binary counter: after the q-th panel result (1-based) is pushed it is
 * merged with the older partial result below it once for each trailing zero bit of q
 * (older + newer); at the end the stack is folded from the top (st[l] + r). Its depth is at most
 * ceil(log2 P), whichever way the panels are visited (visiting them last to first mirrors the
 * tree). st holds vti_ptree_depth(P) * n doubles. */
typedef struct {
    double *st;
    size_t n, top, count;
} vti_ptree;
size_t vti_ptree_depth(size_t P);
static inline void vti_ptree_init(vti_ptree *t, double *st, size_t n)
{
    t->st = st, t->n = n, t->top = 0, t->count = 0;
}
/* where the next panel result is to be written (n values) */
static inline double *vti_ptree_next(vti_ptree *t) { return t->st + t->top * t->n; }
/* the values at vti_ptree_next are the next panel result */
void vti_ptree_push(vti_ptree *t);
/* out (n values, not inside st) = the combined result; at least one panel was pushed */
void vti_ptree_result(const vti_ptree *t, double *out);

/* The permutation of the PERMUTED order for n terms: vti_perm(seed, n), or, when panelled
 * (vt_bound_panelled), panel p's VT_PANEL terms permuted among themselves by
 * vti_perm(seed + p, len) - every index stays in its panel. */
void vti_perm_red(uint64_t seed, size_t n, int panelled, uint32_t *perm);

/* vti_sum of the project's reductions: when panelled, each panel of VT_PANEL consecutive terms
 * summed by vti_sum in order o (PERMUTED: along perm from vti_perm_red), the panel results
 * combined by the panel tree (ps: vti_ptree_depth(ceil(n / VT_PANEL)) entries of scratch;
 * REVERSE visits the panels last to first); PAIRWISE and SPLIT keep their tree, which is the
 * panel tree over panels summed pairwise. Unpanelled it is vti_sum itself. */
double vti_sum_red(vt_order o, int panelled, size_t n, const double *x, const uint32_t *perm, uint64_t *keys,
                   double *ps);

/* Leaves of the PAIRWISE tree. */
#define VT_PAIRWISE_LEAF 8

#endif
