/* vt_kernels.h - CPU operations of an MLP training step.
 *
 * Every kernel reads FP32 inputs, computes in FP64 and writes FP64 results plus
 * the per-element error bound description (vt_bounds) that the rounding layer
 * (rounding_log/vt_rlog.h) needs; the caller then rounds with vt_round().
 * Reductions follow the evaluation order chosen in vt_exec, so the same
 * operation can be evaluated in several orders and the FP32 outputs compared.
 * Elementwise kernels are chains of IEEE basic operations in one fixed order:
 * bit-identical everywhere, bound 0.  Transcendentals come from vt_math.h
 * (portable, built only from basic operations).
 *
 * Conventions of every reduction (GEMM, sums, softmax denominator, loss):
 *   - sizes must be >= 1 (VT_ERR_ARG otherwise); a reduction longer than
 *     VT_MAX_REDUCTION, or sizes whose byte counts overflow, give VT_ERR_LIMIT;
 *   - every order starts from +0 (the BLAS GEMM result is normalised by + 0.0),
 *     so a zero result is +0 in every order, never -0;
 *   - NaN/inf inputs are not rejected: they propagate into the result or the
 *     bound, and vt_round() then reports VT_ERR_DIVERGED.
 */
#ifndef VT_KERNELS_H
#define VT_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "../common/vt_error.h"
#include "../rounding/vt_round.h"

typedef enum {
    VT_ORDER_BLAS = 0,     /* cblas_dgemm / sums: four interleaved accumulators (k mod 4),
                              combined as (a0+a1)+(a2+a3) */
    VT_ORDER_FORWARD = 1,  /* plain loop, k ascending */
    VT_ORDER_REVERSE = 2,  /* plain loop, k descending */
    VT_ORDER_PAIRWISE = 3, /* blocks of 8 consecutive terms summed ascending, blocks combined
                              by a binary tree (binary-counter merging) */
    VT_ORDER_PERMUTED = 4, /* adversarial: a Fisher-Yates permutation of k drawn from seed
                              (splitmix64); the same permutation for every element */
    VT_ORDER_SORTED = 5,   /* adversarial: terms sorted by increasing magnitude (per element) */
    VT_ORDER_SPLIT = 6,    /* GEMM: the BLAS on each half of k, then the halves added (fast, and another
                              order than the BLAS alone: the auditor's default); sums: pairwise */
    VT_ORDER_COUNT
} vt_order;

/* 1 when vt_gemm's FP64 result in order o comes from the CBLAS library (blas, split): its bits
 * then depend on the library, its version, its thread count and the CPU it dispatched to, and
 * only the bound is promised; every other order is the project's own loop, bit for bit. */
int vt_gemm_order_uses_blas(vt_order o);


/* "blas", "forward", "reverse", "pairwise", "permuted", "sorted", "split"; "unknown" otherwise. */
const char *vt_order_name(vt_order o);
/* Parses "blas", "forward", ...; returns VT_ERR_ARG on an unknown name. */
vt_err vt_order_parse(const char *s, vt_order *o) VT_WARN_UNUSED;

/* Grow-only scratch memory owned by an executor (one executor per thread). */
typedef struct {
    void *p[6];
    size_t n[6];
} vt_ws;

typedef struct {
    vt_order order;
    uint64_t seed;      /* VT_ORDER_PERMUTED */
    vt_bound_cfg bound; /* bound mode used for every bound this executor computes */
    vt_ws ws;
} vt_exec;

void vt_exec_init(vt_exec *e, vt_order order, vt_bound_cfg bound, uint64_t seed);
/* Every order evaluates a reduction longer than 2 * VT_PANEL terms in panels of VT_PANEL
 * consecutive terms (vt_bound_panelled: provable bounds, manifest format 3): each panel from +0
 * in the order's own way, then the panel results in the order's own way, so that the bound of
 * the reduction is the panel bound (vt_bound_coef_red), about K / (2 VT_PANEL) times tighter than
 * the bound of the whole reduction. 1 when vt_gemm and the sums do so for this executor and K. */
int vt_gemm_panel(const vt_exec *e, size_t K);
/* Frees the workspace; the executor stays usable (idempotent). */
void vt_exec_free(vt_exec *e);

/* ---------------------------------------------------------------- GEMM
 * C[M x N] = op(A) * op(B), op(A) M x K, op(B) K x N, all row-major:
 *   transA = 0: A is M x K;  transA = 1: A is stored K x M.
 *   transB = 0: B is K x N;  transB = 1: B is stored N x K.
 * The three training forms for weights W (in x out):
 *   forward        Y  = X  * W      (transA=0, transB=0)
 *   input grad     dX = dY * W^T    (transA=0, transB=1)
 *   weight grad    dW = X^T * dY    (transA=1, transB=0)
 * Bound: OUTER with rownorm[i] = ||row i of op(A)||_2, colnorm[j] = ||col j of op(B)||_2
 * and coef = vt_bound_coef_red(K, K) (Cauchy-Schwarz: sum_k |a_ik b_kj| <= ||a_i|| ||b_j||).
 * rownorm (M) and colnorm (N) are caller-provided arrays that *bounds points to.
 * The norms are FP64 sums of exact squares followed by sqrt (rounding: a relative
 * (1 - gamma_(K-1))^(1/2) (1 - u) each, inside vt_bound_coef's inflation).
 * transA = transB = 1 works as well.  M, N, K >= 1 (VT_ERR_ARG), K <= VT_MAX_REDUCTION
 * (VT_ERR_LIMIT); the BLAS order also needs M, N, K <= INT_MAX (VT_ERR_LIMIT).
 * For a non-BLAS order a transposed form gives exactly the bits of the
 * non-transposed call on explicitly transposed inputs. */
vt_err vt_gemm(vt_exec *e, int transA, int transB, size_t M, size_t N, size_t K, const float *A,
               const float *B, double *C, double *rownorm, double *colnorm, vt_bounds *bounds) VT_WARN_UNUSED;

/* The bound descriptor vt_gemm returns, for op(A) op(B) with row norms rn, column norms cn and the
 * coefficient coef (an accelerator's GEMM, whose norms were computed on the device, hands the
 * same descriptor to vt_round). */
void vt_gemm_bounds(int tA, int tB, size_t M, size_t N, size_t K, const float *A, const float *B, const double *rn,
                    const double *cn, double coef, vt_bounds *bounds);

/* Same computation in plain FP64 without bounds (baseline for benchmarks): the same
 * bits as vt_gemm in the project's own orders; in the BLAS-backed orders (blas, split)
 * the same library calls, whose bits no BLAS promises to repeat. */
vt_err vt_gemm_plain(vt_exec *e, int transA, int transB, size_t M, size_t N, size_t K, const float *A,
                     const float *B, double *C) VT_WARN_UNUSED;

/* ------------------------------------------------------------ sums
 * Column sums of X (M x N): out[j] = sum_i X[i][j]  (bias gradient);
 * row sums: out[i] = sum_j X[i][j].  Bound ARRAY: b[j] = coef(n) * sum|x| with n the
 * number of terms (M for colsum, N for rowsum) and sum|x| an FP64 sum. */
vt_err vt_colsum(vt_exec *e, size_t M, size_t N, const float *X, double *out, double *b,
                 vt_bounds *bounds) VT_WARN_UNUSED;
vt_err vt_rowsum(vt_exec *e, size_t M, size_t N, const float *X, double *out, double *b,
                 vt_bounds *bounds) VT_WARN_UNUSED;
/* Column dot products of A and B (M x N): out[j] = sum_i A[i][j] * B[i][j] (batch-norm statistics
 * and gradients); bound and exact evaluator as vt_reduce. */
vt_err vt_coldot(vt_exec *e, size_t M, size_t N, const float *A, const float *B, double *out, double *b,
                 vt_bounds *bounds) VT_WARN_UNUSED;

/* A strided FP32 operand of vt_reduce: element (i, j, k) is p[i*si + j*sj + k*sk]; with rpb > 0
 * (batched operands, e.g. one attention head after another) the row index splits into a batch
 * g = i / rpb and a row r = i % rpb: p[g*sg + r*si + j*sj + k*sk]. Both operands of one reduction
 * must use the same rpb. */
typedef struct {
    const float *p;
    size_t si, sj, sk;
    size_t rpb, sg;
} vt_strided;
/* The general reduction: out[i*cols + j] = sum_{k < n} a(i, j, k) * b(i, j, k) for a rows x cols
 * output, each product exact in FP64, summed in the executor's order (panelled like every
 * reduction). Bound ARRAY in bnd (rows*cols): vt_bound_of_terms of the element's operands; the
 * exact evaluator is the same reduction (the vt_bounds x* fields). Sums, column dot products and
 * the global average pool (b: the FP32 weight 1/HW, zero strides) are its instances. */
vt_err vt_reduce(vt_exec *e, size_t rows, size_t cols, size_t n, vt_strided a, vt_strided b, double *out,
                 double *bnd, vt_bounds *bounds) VT_WARN_UNUSED;

/* ------------------------------------------------ softmax and cross-entropy
 * probs[i][c] = e_ic / s_i with e_ic = vt_exp(z_ic - max_c z) (portable) and s_i = RN64 of the
 * exact sum of the e_ic (rounding/vt_exact.h): a correctly rounded reduction followed by one
 * IEEE division, the same bits in every order. Bound ARRAY in b (N*C), all zero. */
vt_err vt_softmax(vt_exec *e, size_t N, size_t C, const float *logits, double *probs, double *b,
                  vt_bounds *bounds) VT_WARN_UNUSED;
/* Mean cross-entropy from rounded probabilities: loss = RN32 of the exact sum of
 * l_i = -vt_log(max(P[i][y_i], 2^-149)) / N (each l_i one fixed FP64 chain), in every order;
 * *b = 0 (bounds->kind ARRAY with one element). A label >= C gives VT_ERR_ARG. */
vt_err vt_xent_loss(vt_exec *e, size_t N, size_t C, const float *P, const uint8_t *labels, double *loss,
                    double *b, vt_bounds *bounds) VT_WARN_UNUSED;
/* l[i] = -vt_log(max(P[i][labels[i]], 2^-149)) / dn for i < N (labels already checked < C): the
 * logarithms of the rows at once (vt_log_n), the bits of vti_xent_l1 */
void vt_xent_terms(size_t N, size_t C, const float *P, const uint8_t *labels, double dn, double *l);
/* Exact reductions (dot products, sums) are in rounding/vt_exact.h. */

#endif
