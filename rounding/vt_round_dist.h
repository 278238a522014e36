/* vt_round_dist.h - distributed exact rounding (docs/distributed.md): RN32 of the exact value of a
 * sum whose terms are spread over the ranks of a communicator (dist/vt_dist.h), the same bits on
 * every rank whatever the number of ranks and however the terms are split.
 *
 * Each rank holds, for each of n elements, its FP64 partial p_r (of its own terms) and a rigorous
 * bound b_r >= |p_r - X_r|, X_r the exact sum of its terms. Phase 1, a reduce-scatter then an
 * allgather: the elements are split into N contiguous slices, one per rank; rank s receives every
 * rank's p_r and b_r (the bound rounded upward to 32 bits: it may only grow) of slice s alone and
 * combines them in rank order (TwoSum, so the combination's own rounding is known and added to the
 * bound) into x and B with |x - X| <= B, X = sum_r X_r. The screen of exact rounding (vt_round_hd.h:
 * vti_screen1, then the ends of [x - B, x + B]) decides nearly every element: RN32(x) = RN32(X); the
 * owners' FP32 results are allgathered. Phase 2, for the undecided elements only (the owners' lists,
 * gathered: the same indices on every rank): each rank adds its own terms of the element into a
 * vt_xacc (the caller's callback), normalises it, and the accumulators' limbs are summed across
 * ranks by an integer allreduce (exact and order-free); the sum is the exact accumulator of X,
 * rounded once. */
#ifndef VT_ROUND_DIST_H
#define VT_ROUND_DIST_H

#include <stddef.h>
#include <stdint.h>

#include "../common/vt_error.h"
#include "../dist/vt_dist.h"
#include "vt_elem.h"
#include "vt_exact.h"

/* Adds this rank's terms of element i (0 <= i < n) into acc, exactly (vt_xacc_add and the like);
 * acc arrives empty. Called on every rank for the same elements in increasing i, a local
 * computation: no collective. A non-zero return is agreed among the ranks: vt_round_dist returns
 * the lowest failing rank's error on every rank. */
typedef vt_err (*vt_round_dist_terms)(void *arg, size_t i, vt_xacc *acc);

/* Elements per phase-1 round: each round is one exchange and one allgather (larger n: several). */
#define VT_ROUND_DIST_ROUND ((size_t)1 << 18)

/* Counters, added to (the caller zeroes them). Bytes this rank sends to the other ranks with a
 * bandwidth-optimal algorithm of each collective (docs/distributed.md, Cost): an exchange, what it
 * sends to the others; an allgather of its block, the block times N - 1 (in a ring each rank
 * forwards that much); an allreduce of k bytes, 2 k (N - 1) / N. One rank sends nothing. */
typedef struct {
    uint64_t n;            /* elements rounded */
    uint64_t n_exact;      /* of these, those the screen left undecided: summed exactly across ranks */
    uint64_t bytes_gather; /* phase 0 and 1: 32 (N - 1) once, then 12 per element of the other ranks'
                            * slices and 4 (N - 1) per element of its own (16 (N - 1) / N an element
                            * on average), plus 4 (N - 1) a round */
    uint64_t bytes_reduce; /* phase 2: 24 (N - 1) per undecided element it owns, 2 * 584 (N - 1) / N
                            * per undecided element */
    uint64_t n_refine;     /* elements the screen left undecided with the bounds passed that took the
                            * refinement round (vt_round_dist_refined); of these, those still undecided
                            * are in n_exact */
    uint64_t bytes_refine; /* the refinement round: 4 per refined element of the other ranks' slices
                            * (12 with resum), 4 (N - 1) per refined element of its own, plus 4 (N - 1)
                            * a round */
} vt_round_dist_stats;

/* out[i] = RN32(sum over the ranks of their terms of element i) for i < n, the same bits on every
 * rank. Collective: every rank passes the same n (checked: a difference is an error on every rank)
 * and its own partial[i], bound[i] (bound[i] >= 0, +inf allowed; NaN or infinite values decide
 * nothing and go to phase 2). terms may be NULL only when no element needs phase 2 (else
 * VT_ERR_UNSUPPORTED). Failures are the same on every rank: VT_ERR_ARG for bad arguments on any
 * rank or a negative bound, VT_ERR_DIVERGED when an element's result is NaN or beyond FP32 range
 * (*f, when not NULL, names the first such element with its combined x and B; out is complete),
 * the callback's error as agreed, or an MPI error. stats may be NULL. */
vt_err vt_round_dist(vt_comm *comm, size_t n, const double *partial, const double *bound, vt_round_dist_terms terms,
                     void *arg, float *out, vt_round_dist_stats *stats, vt_elem_fault *f) VT_WARN_UNUSED;

/* This rank's refinement of element i: a rigorous bound >= |*p - X_r|, computed only when the screen
 * leaves the element undecided with the bounds passed (the tight bound of a GEMM element where the
 * bound passed is the cheap one; a compensated sum of the rank's terms). *p arrives as partial[i];
 * with resum the callback may replace it by another FP64 value of the same terms (the bound
 * returned is then for that value). A local computation: no collective. A NaN or negative return is
 * ignored (partial[i] and bound[i] then); for the same partial the smaller of the two bounds is used. */
typedef double (*vt_round_dist_refine)(void *arg, size_t i, double *p);

/* vt_round_dist with a refinement round (docs/distributed.md): the elements the owners' screen
 * leaves undecided with the bounds passed, whose combined x is finite, are combined and screened
 * again with every rank's refinement (one exchange of 4 bytes an element to the owners, 12 with
 * resum, and one allgather of the owners' results); only those still undecided go to the exact
 * phase. refine NULL and resum 0 on every rank: vt_round_dist. A rank may pass NULL while others
 * pass a callback (its partials and bounds are then sent as they are), but every rank passes the
 * same resum (checked: VT_ERR_ARG on every rank). */
vt_err vt_round_dist_refined(vt_comm *comm, size_t n, const double *partial, const double *bound,
                             vt_round_dist_refine refine, int resum, vt_round_dist_terms terms, void *arg, float *out,
                             vt_round_dist_stats *stats, vt_elem_fault *f) VT_WARN_UNUSED;

/* RN32(X / n) (vt_xacc_round32_quot) of the exact sum X of every rank's accumulator `mine`: each rank's
 * accumulator normalised, the limbs and the counts of non-finite terms summed by one integer
 * allreduce (exact and order-free), the sum normalised and divided - the same bits on every rank.
 * A loss's mean over the global batch (docs/distributed.md). Collective: every rank passes the same n. */
vt_err vt_round_dist_quot32(vt_comm *comm, const vt_xacc *mine, uint64_t n, float *out) VT_WARN_UNUSED;

/* For benchmarks: the calls of vt_round_dist made by this thread so far and the wall seconds spent
 * in them (its collectives included: dist/vt_dist.h vt_dist_clock counts those apart). */
void vt_round_dist_clock(uint64_t *calls, double *seconds);

/* Frees this thread's phase-1 buffers, kept from call to call (up to 11 MiB): a thread that ends
 * calls it (the trainer's thread shares, run/vt_shares.c); the next call allocates them again. */
void vt_round_dist_release(void);

/* The combination of phase 1 for one element: nr >= 1 partials p[r*stride] and bounds b[r*stride]
 * in rank order into x and B with |x - sum_r X_r| <= B whenever |p_r - X_r| <= b_r for each r. B is
 * 0 only when every b_r is 0 and the partials' sum is exact in FP64 (then x is that sum; a zero is
 * +0). Not finite (B = +inf) when a partial or bound is not finite or the sum overflows. */
void vt_round_dist_combine(int nr, const double *p, const double *b, size_t stride, double *x, double *B);

#endif
