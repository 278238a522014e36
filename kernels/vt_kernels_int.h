/* vt_kernels_int.h - helpers shared by the CPU kernel files (not a public API). */
#ifndef VT_KERNELS_INT_H
#define VT_KERNELS_INT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "vt_kernels.h"

/* Workspace slots of vt_exec.ws. */
enum {
    VT_WS_A = 0,    /* FP64 copy of op(A) / gathered vectors */
    VT_WS_B = 1,    /* FP64 copy of op(B) */
    VT_WS_PERM = 2, /* PERMUTED: the permutation (uint32_t) */
    VT_WS_AUX = 3,  /* SORTED keys, PAIRWISE stack rows */
};

/* Grow-only scratch: *out points to at least count*elsize bytes of slot.
 * VT_ERR_LIMIT on size overflow, VT_ERR_NOMEM on allocation failure. */
vt_err vt__ws_get(vt_ws *ws, int slot, size_t count, size_t elsize, void **out) VT_WARN_UNUSED;

/* Checks e (non-NULL, valid order). */
vt_err vt__check_exec(const vt_exec *e) VT_WARN_UNUSED;

/* n*m without overflow, else VT_ERR_LIMIT. */
vt_err vt__mul_size(size_t n, size_t m, size_t *out) VT_WARN_UNUSED;

/* The PERMUTED order's permutation of 0..n-1 (n <= 2^32): Fisher-Yates driven by
 * splitmix64 seeded with seed.  Depends only on (seed, n). */
void vt__perm(uint64_t seed, size_t n, uint32_t *perm);

/* Sort key of a double: orders by |x| (bit pattern), then +x before -x.
 * The key determines x, so equal keys are equal values. */
static inline uint64_t vt__sort_key(double x)
{
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    return ((u & 0x7fffffffffffffffULL) << 1) | (u >> 63);
}

static inline double vt__key_value(uint64_t k)
{
    uint64_t u = (k >> 1) | (k << 63);
    double x;
    memcpy(&x, &u, sizeof x);
    return x;
}

/* Sorts n keys ascending and sums their values in that order (from +0). */
double vt__sum_sorted_keys(size_t n, uint64_t *keys);

/* Sum of x[0..n-1] in the order o (from +0, so never -0):
 *   BLAS      four interleaved accumulators (t mod 4), combined (a0+a1)+(a2+a3)
 *   FORWARD   t ascending;  REVERSE  t descending
 *   PAIRWISE  leaves of 8 consecutive terms summed ascending, leaves combined
 *             by a binary counter (vt__pairwise tree, see vt_kernels.c)
 *   PERMUTED  t = perm[0], perm[1], ...  (perm from vt__perm, n entries)
 *   SORTED    increasing |x| (keys: n entries of scratch)
 * perm / keys may be NULL for the orders that do not use them. */
double vt__sum(vt_order o, size_t n, const double *x, const uint32_t *perm, uint64_t *keys);

/* Leaves of the PAIRWISE tree. */
#define VT_PAIRWISE_LEAF 8

#endif
