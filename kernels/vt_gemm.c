/* vt_gemm.c - C = op(A) * op(B) from FP32 inputs in FP64, in every evaluation order,
 * with the Cauchy-Schwarz (OUTER) error bound.
 *
 * Every product of two FP32 values is exact in FP64, so each C[i][j] is a sum of
 * K exact terms and the only order-dependent errors are those of the additions:
 * |C - exact| <= gamma_(K-1) sum_k |a_ik b_kj| <= coef(K) ||a_i||_2 ||b_j||_2.
 *
 * Orders (per element; the loop shape differs but each element's sum follows):
 *   BLAS      op(A), op(B) converted to FP64 (norms fused into the conversion),
 *             then cblas_dgemm (whatever order the BLAS library uses)
 *   FORWARD   k ascending        (i-k-j loop, vectorised over j)
 *   REVERSE   k descending       (i-k-j loop)
 *   PAIRWISE  blocks of 8 k's, then a binary tree (same tree as vti_sum)
 *   PERMUTED  k in the order of vti_perm(seed, K) (the same for every element)
 *   SORTED    the K products sorted by increasing |a b| (per element)
 * Every order except BLAS starts each sum from +0; the BLAS result is normalised
 * with + 0.0, so a zero result is +0 in every order.
 *
 * The BLAS order relies on the library computing each C[i][j] as some summation
 * of the K exact products (any blocking, threading, FMA or SIMD order is fine; a
 * Strassen/Winograd-type fast algorithm, which no common BLAS uses for dgemm by
 * default, would not be covered by the bound).  The conversion of op(A)/op(B) to
 * FP64 is a linear pass in the stored layout (the BLAS call does the transposing)
 * with the norms fused into it; measured on 512^3 it costs a few percent of the
 * single-threaded dgemm, the norms themselves about 1%.
 */
#include <cblas.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/vt_debug.h"
#include "vt_kernels.h"
#include "vt_kernels_int.h"

/* ------------------------------------------------------- conversion + norms */

/* d = src (n values, FP64); returns their sum of squares (four lanes; vt_kernels_int.h; an AVX2
 * clone where the processor has it, the same four sums) */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx2", "default")))
#endif
double vti_cvt_span(const float *restrict src, size_t n, double *restrict d)
{
    double a[4] = {0.0, 0.0, 0.0, 0.0}; /* lane l: the terms u = l mod 4 of the whole blocks; the tail in lane 0 */
    size_t u = 0;
    for (; u + 4 <= n; u += 4)
        for (size_t l = 0; l < 4; l++) {
            double x = (double)src[u + l];
            d[u + l] = x;
            a[l] += x * x;
        }
    for (; u < n; u++) {
        double x = (double)src[u];
        d[u] = x;
        a[0] += x * x;
    }
    return (a[0] + a[1]) + (a[2] + a[3]);
}

/* d = src (n values, FP64; d may be NULL) and acc[r] += src[r]^2 (acc may be NULL): one step of
 * column norms accumulated row by row, each acc[r] its own sequential sum whatever the lanes (an
 * AVX2 clone where the processor has it; both clones compute the same IEEE results) */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx2", "default")))
#endif
static void cvt_acc(const float *restrict src, size_t n, double *restrict d, double *restrict acc)
{
    if (d && acc)
        for (size_t r = 0; r < n; r++) {
            double x = (double)src[r];
            d[r] = x;
            acc[r] += x * x;
        }
    else if (d)
        for (size_t r = 0; r < n; r++) d[r] = (double)src[r];
    else if (acc)
        for (size_t r = 0; r < n; r++) {
            double x = (double)src[r];
            acc[r] += x * x;
        }
}

/* dst (rows x cols, may be NULL) = src; norm (rows, may be NULL) = row 2-norms. */
static void cvt_rows(const float *src, size_t rows, size_t cols, double *dst, double *norm)
{
    for (size_t r = 0; r < rows; r++) {
        const float *s = src + r * cols;
        double *d = dst ? dst + r * cols : NULL;
        if (norm == NULL) {
            if (d) cvt_acc(src, rows * cols, dst, NULL); /* the whole matrix, one contiguous pass */
            return;
        }
        if (d) {
            norm[r] = sqrt(vti_cvt_span(s, cols, d));
            continue;
        }
        double a0 = 0.0, a1 = 0.0, a2 = 0.0, a3 = 0.0;
        size_t c = 0;
        for (; c + 4 <= cols; c += 4) {
            double x0 = (double)s[c], x1 = (double)s[c + 1], x2 = (double)s[c + 2], x3 = (double)s[c + 3];
            a0 += x0 * x0;
            a1 += x1 * x1;
            a2 += x2 * x2;
            a3 += x3 * x3;
        }
        for (; c < cols; c++) {
            double x = (double)s[c];
            a0 += x * x;
        }
        norm[r] = sqrt((a0 + a1) + (a2 + a3));
    }
}

/* dst (rows x cols, may be NULL) = src; norm (cols, may be NULL) = column 2-norms. */
static void cvt_cols(const float *src, size_t rows, size_t cols, double *dst, double *norm)
{
    if (norm == NULL) {
        cvt_rows(src, rows, cols, dst, NULL);
        return;
    }
    for (size_t c = 0; c < cols; c++) norm[c] = 0.0;
    for (size_t r = 0; r < rows; r++) cvt_acc(src + r * cols, cols, dst ? dst + r * cols : NULL, norm);
    for (size_t c = 0; c < cols; c++) norm[c] = sqrt(norm[c]);
}

/* dst (cols x rows) = src^T (src rows x cols), converted to FP64; cache-blocked. */
static void cvt_transpose(const float *src, size_t rows, size_t cols, double *dst)
{
    const size_t T = 32;
    for (size_t r0 = 0; r0 < rows; r0 += T) {
        size_t r1 = rows - r0 < T ? rows : r0 + T;
        for (size_t c0 = 0; c0 < cols; c0 += T) {
            size_t c1 = cols - c0 < T ? cols : c0 + T;
            for (size_t r = r0; r < r1; r++)
                for (size_t c = c0; c < c1; c++) dst[c * rows + r] = (double)src[r * cols + c];
        }
    }
}

/* ------------------------------------------------------------------ checks */

static vt_err check_args(const vt_exec *e, int transA, int transB, size_t M, size_t N, size_t K, const float *A,
                         const float *B, const double *C, const char *name)
{
    VT_FORWARD_IF_ERROR(vti_check_exec(e));
    VT_RETURN_ERROR_IF(A == NULL || B == NULL || C == NULL, VT_ERR_ARG, "%s: NULL matrix", name);
    VT_RETURN_ERROR_IF((transA != 0 && transA != 1) || (transB != 0 && transB != 1), VT_ERR_ARG,
                       "%s: transA/transB must be 0 or 1 (got %d, %d)", name, transA, transB);
    VT_RETURN_ERROR_IF(M == 0 || N == 0 || K == 0, VT_ERR_ARG, "%s: empty dimension (M=%zu N=%zu K=%zu)", name, M,
                       N, K);
    VT_RETURN_ERROR_IF((uint64_t)K > VT_MAX_REDUCTION, VT_ERR_LIMIT,
                       "%s: reduction length K=%zu exceeds VT_MAX_REDUCTION", name, K);
    size_t t = 0;
    VT_FORWARD_IF_ERROR(vti_mul_size(M, K, &t));
    VT_FORWARD_IF_ERROR(vti_mul_size(t, sizeof(double), &t));
    VT_FORWARD_IF_ERROR(vti_mul_size(K, N, &t));
    VT_FORWARD_IF_ERROR(vti_mul_size(t, sizeof(double), &t));
    VT_FORWARD_IF_ERROR(vti_mul_size(M, N, &t));
    VT_FORWARD_IF_ERROR(vti_mul_size(t, sizeof(double), &t));
    return VT_OK;
}

/* --------------------------------------------------------------- the core */

/* Long reductions (vt_gemm_panel): the BLAS on panels of VT_PANEL terms, the panel results
 * combined by the panel tree (BLAS: panels first to last; SPLIT: last to first, a mirrored tree) -
 * an algorithm whose a-priori bound (vt_bound_coef_panel) stays tight as K grows
 * (docs/rounding.md 2.1). Each panel's slices of op(A) and op(B) are converted to FP64 just
 * before its dgemm (they stay in cache; no FP64 copy of the whole operands), the norms
 * accumulated on the way. Blocks of rows keep the tree's buffers small. */
static vt_err gemm_blas_panels(vt_exec *e, int tA, int tB, size_t M, size_t N, size_t K, const float *A,
                               const float *B, double *C, double *rn, double *cn)
{
    const size_t kc = VT_PANEL, P = (K + kc - 1) / kc, depth = vti_ptree_depth(P);
    size_t rb = M;
    if (M * N > ((size_t)1 << 18)) rb = ((size_t)1 << 18) / N ? ((size_t)1 << 18) / N : 1; /* 2 MB per tree level */
    void *pa = NULL, *pb = NULL, *pst = NULL;
    VT_FORWARD_IF_ERROR(vti_ws_get(&e->ws, VT_WS_A, rb * kc, sizeof(double), &pa));
    VT_FORWARD_IF_ERROR(vti_ws_get(&e->ws, VT_WS_B, kc * N, sizeof(double), &pb));
    VT_FORWARD_IF_ERROR(vti_ws_get(&e->ws, VT_WS_AUX, depth * rb * N, sizeof(double), &pst));
    double *A64 = pa, *B64 = pb;
    if (rn)
        for (size_t i = 0; i < M; i++) rn[i] = 0.0;
    if (cn)
        for (size_t j = 0; j < N; j++) cn[j] = 0.0;
    for (size_t i0 = 0; i0 < M; i0 += rb) {
        const size_t mr = M - i0 < rb ? M - i0 : rb;
        double *rni = rn ? rn + i0 : NULL, *cnj = i0 == 0 ? cn : NULL; /* each norm accumulated once */
        vti_ptree t;
        vti_ptree_init(&t, pst, mr * N);
        for (size_t q = 0; q < P; q++) {
            const size_t p = e->order == VT_ORDER_SPLIT ? P - 1 - q : q, k0 = p * kc, kl = K - k0 < kc ? K - k0 : kc;
            VT_ASSERT(p < P && kl >= 1 && kl <= kc && k0 + kl <= K && mr >= 1 && mr <= rb);
            /* op(A)(i0 + r, k0 + u): stored M x K (rows) or K x M (transposed), kept in that layout */
            if (!tA)
                for (size_t r = 0; r < mr; r++) {
                    double s2 = vti_cvt_span(A + (i0 + r) * K + k0, kl, A64 + r * kl);
                    if (rni) rni[r] += s2;
                }
            else
                for (size_t u = 0; u < kl; u++) cvt_acc(A + (k0 + u) * M + i0, mr, A64 + u * mr, rni);
            /* op(B)(k0 + u, j): stored K x N or N x K (transposed) */
            if (!tB)
                for (size_t u = 0; u < kl; u++) cvt_acc(B + (k0 + u) * N, N, B64 + u * N, cnj);
            else
                for (size_t j = 0; j < N; j++) {
                    double s2 = vti_cvt_span(B + j * K + k0, kl, B64 + j * kl);
                    if (cnj) cnj[j] += s2;
                }
            cblas_dgemm(CblasRowMajor, tA ? CblasTrans : CblasNoTrans, tB ? CblasTrans : CblasNoTrans, (int)mr, (int)N,
                        (int)kl, 1.0, A64, tA ? (int)mr : (int)kl, B64, tB ? (int)kl : (int)N, 0.0, vti_ptree_next(&t),
                        (int)N);
            vti_ptree_push(&t);
        }
        double *Ci = C + i0 * N;
        vti_ptree_result(&t, Ci);
        for (size_t i = 0; i < mr * N; i++) Ci[i] += 0.0; /* -0 -> +0, while the block is in cache */
    }
    if (rn)
        for (size_t i = 0; i < M; i++) rn[i] = sqrt(rn[i]);
    if (cn)
        for (size_t j = 0; j < N; j++) cn[j] = sqrt(cn[j]);
    return VT_OK;
}

static vt_err gemm_blas(vt_exec *e, int tA, int tB, size_t M, size_t N, size_t K, const float *A, const float *B,
                        double *C, double *rn, double *cn)
{
    VT_RETURN_ERROR_IF(M > INT_MAX || N > INT_MAX || K > INT_MAX, VT_ERR_LIMIT,
                       "vt_gemm: dimensions exceed the BLAS integer range");
    size_t MN = M * N;
    if (vt_gemm_panel(e, K)) return gemm_blas_panels(e, tA, tB, M, N, K, A, B, C, rn, cn);
    void *pa = NULL, *pb = NULL;
    VT_FORWARD_IF_ERROR(vti_ws_get(&e->ws, VT_WS_A, M * K, sizeof(double), &pa));
    VT_FORWARD_IF_ERROR(vti_ws_get(&e->ws, VT_WS_B, K * N, sizeof(double), &pb));
    double *A64 = pa, *B64 = pb;
    /* Convert in the stored layout (a linear pass); the BLAS call transposes. */
    if (!tA) cvt_rows(A, M, K, A64, rn);
    else cvt_cols(A, K, M, A64, rn);
    if (!tB) cvt_cols(B, K, N, B64, cn);
    else cvt_rows(B, N, K, B64, cn);
    const int lda = tA ? (int)M : (int)K, ldb = tB ? (int)K : (int)N;
    if (e->order == VT_ORDER_SPLIT && K >= 2) {
        /* C = op(A)[:, 0:h] op(B)[0:h, :] + op(A)[:, h:K] op(B)[h:K, :]: each half summed by the BLAS,
         * then one addition per element; every product still enters exactly once */
        size_t h = K / 2;
        VT_ASSERT(h >= 1 && h < K); /* both halves non-empty */
        void *pc = NULL;
        VT_FORWARD_IF_ERROR(vti_ws_get(&e->ws, VT_WS_AUX, MN, sizeof(double), &pc));
        double *C2 = pc;
        const double *A2 = tA ? A64 + h * M : A64 + h, *B2 = tB ? B64 + h : B64 + h * N;
        cblas_dgemm(CblasRowMajor, tA ? CblasTrans : CblasNoTrans, tB ? CblasTrans : CblasNoTrans, (int)M, (int)N,
                    (int)h, 1.0, A64, lda, B64, ldb, 0.0, C, (int)N);
        cblas_dgemm(CblasRowMajor, tA ? CblasTrans : CblasNoTrans, tB ? CblasTrans : CblasNoTrans, (int)M, (int)N,
                    (int)(K - h), 1.0, A2, lda, B2, ldb, 0.0, C2, (int)N);
        for (size_t i = 0; i < MN; i++) C[i] = C2[i] + C[i] + 0.0;
        return VT_OK;
    }
    cblas_dgemm(CblasRowMajor, tA ? CblasTrans : CblasNoTrans, tB ? CblasTrans : CblasNoTrans, (int)M, (int)N,
                (int)K, 1.0, A64, lda, B64, ldb, 0.0, C, (int)N);
    for (size_t i = 0; i < MN; i++) C[i] += 0.0; /* -0 -> +0 */
    return VT_OK;
}

static vt_err gemm_loops(vt_exec *e, int tA, int tB, size_t M, size_t N, size_t K, const float *A, const float *B,
                         double *C, double *rn, double *cn)
{
    void *pb = NULL;
    VT_FORWARD_IF_ERROR(vti_ws_get(&e->ws, VT_WS_B, K * N, sizeof(double), &pb));
    double *B64 = pb; /* op(B), K x N row-major */
    if (rn) {
        if (!tA) cvt_rows(A, M, K, NULL, rn);
        else cvt_cols(A, K, M, NULL, rn);
    }
    if (!tB) {
        cvt_cols(B, K, N, B64, cn);
    } else {
        if (cn) cvt_rows(B, N, K, NULL, cn);
        cvt_transpose(B, N, K, B64);
    }
    /* op(A)[i][k] = A[i*sa + k*sk] */
    const size_t sa = tA ? 1 : K, sk = tA ? M : 1;
    const vt_order o = e->order;

    const int pan = vt_gemm_panel(e, K);
    const size_t kc = pan ? VT_PANEL : K, P = (K + kc - 1) / kc;
    if (o == VT_ORDER_FORWARD || o == VT_ORDER_REVERSE || o == VT_ORDER_PERMUTED) {
        uint32_t *perm = NULL;
        if (o == VT_ORDER_PERMUTED) {
            void *pp = NULL;
            VT_FORWARD_IF_ERROR(vti_ws_get(&e->ws, VT_WS_PERM, K, sizeof(uint32_t), &pp));
            perm = pp;
            vti_perm_red(e->seed, K, pan, perm);
        }
        double *pst = NULL; /* the panel tree of row i (unpanelled: the row itself is the sum) */
        if (P > 1) {
            void *pp = NULL;
            VT_FORWARD_IF_ERROR(vti_ws_get(&e->ws, VT_WS_PAN, vti_ptree_depth(P) * N, sizeof(double), &pp));
            pst = pp;
        }
        for (size_t i = 0; i < M; i++) {
            double *c = C + i * N;
            vti_ptree t;
            vti_ptree_init(&t, pst, N);
            /* FORWARD and PERMUTED: panels first to last; REVERSE: last to first, each backwards */
            for (size_t q = 0; q < P; q++) {
                const size_t p = o == VT_ORDER_REVERSE ? P - 1 - q : q, k0 = p * kc,
                             len = K - k0 < kc ? K - k0 : kc;
                VT_ASSERT(p < P && len >= 1 && k0 + len <= K);
                double *s = P > 1 ? vti_ptree_next(&t) : c;
                for (size_t j = 0; j < N; j++) s[j] = 0.0;
                for (size_t u = 0; u < len; u++) {
                    size_t k = o == VT_ORDER_FORWARD ? k0 + u : o == VT_ORDER_REVERSE ? k0 + len - 1 - u : perm[k0 + u];
                    const double a = (double)A[i * sa + k * sk];
                    const double *b = B64 + k * N;
                    for (size_t j = 0; j < N; j++) s[j] += a * b[j];
                }
                if (P > 1) vti_ptree_push(&t);
            }
            if (P > 1) vti_ptree_result(&t, c);
        }
        return VT_OK;
    }

    if (o == VT_ORDER_PAIRWISE) {
        size_t leaves = (K + VT_PAIRWISE_LEAF - 1) / VT_PAIRWISE_LEAF;
        size_t depth = 2;
        while (((size_t)1 << (depth - 2)) <= leaves) depth++; /* > floor(log2(leaves)) + 2 */
        void *ps = NULL;
        VT_FORWARD_IF_ERROR(vti_ws_get(&e->ws, VT_WS_AUX, depth * N, sizeof(double), &ps));
        double *st = ps; /* stack of partial-sum rows */
        for (size_t i = 0; i < M; i++) {
            size_t top = 0, leaf = 0;
            for (size_t kb = 0; kb < K; kb += VT_PAIRWISE_LEAF) {
                size_t kend = K - kb < VT_PAIRWISE_LEAF ? K : kb + VT_PAIRWISE_LEAF;
                VT_ASSERT(top < depth); /* the stack of partial-sum rows holds depth rows */
                double *s = st + top * N;
                for (size_t j = 0; j < N; j++) s[j] = 0.0;
                for (size_t k = kb; k < kend; k++) {
                    const double a = (double)A[i * sa + k * sk];
                    const double *b = B64 + k * N;
                    for (size_t j = 0; j < N; j++) s[j] += a * b[j];
                }
                leaf++;
                for (size_t cnt = leaf; (cnt & 1) == 0; cnt >>= 1) {
                    double *l = st + (top - 1) * N; /* older partial sum on the left */
                    for (size_t j = 0; j < N; j++) l[j] = l[j] + s[j];
                    top--;
                    s = l;
                }
                top++;
            }
            double *c = C + i * N;
            VT_ASSERT(top >= 1 && leaf == (K + VT_PAIRWISE_LEAF - 1) / VT_PAIRWISE_LEAF);
            const double *r = st + (top - 1) * N;
            for (size_t j = 0; j < N; j++) c[j] = r[j];
            for (size_t l = top - 1; l-- > 0;) {
                const double *q = st + l * N;
                for (size_t j = 0; j < N; j++) c[j] = q[j] + c[j];
            }
        }
        return VT_OK;
    }

    /* SORTED: per element, the products sorted by magnitude (panelled: within each panel, then
     * the panel results sorted) */
    void *pk = NULL, *pq = NULL, *pp = NULL;
    VT_FORWARD_IF_ERROR(vti_ws_get(&e->ws, VT_WS_AUX, K, sizeof(uint64_t), &pk));
    VT_FORWARD_IF_ERROR(vti_ws_get(&e->ws, VT_WS_PROD, K, sizeof(double), &pq));
    VT_FORWARD_IF_ERROR(vti_ws_get(&e->ws, VT_WS_PAN, vti_ptree_depth(P), sizeof(double), &pp));
    uint64_t *keys = pk;
    double *prod = pq, *ps = pp;
    for (size_t i = 0; i < M; i++)
        for (size_t j = 0; j < N; j++) {
            for (size_t k = 0; k < K; k++) prod[k] = (double)A[i * sa + k * sk] * B64[k * N + j];
            C[i * N + j] = vti_sum_red(VT_ORDER_SORTED, pan, K, prod, NULL, keys, ps);
        }
    return VT_OK;
}

int vt_gemm_order_uses_blas(vt_order o) { return o == VT_ORDER_BLAS || o == VT_ORDER_SPLIT; }

int vt_gemm_panel(const vt_exec *e, size_t K) { return vt_bound_panelled(&e->bound, (uint64_t)K); }

static vt_err gemm_core1(vt_exec *e, int tA, int tB, size_t M, size_t N, size_t K, const float *A, const float *B,
                         double *C, double *rn, double *cn)
{
    if (vt_gemm_order_uses_blas(e->order)) return gemm_blas(e, tA, tB, M, N, K, A, B, C, rn, cn);
    return gemm_loops(e, tA, tB, M, N, K, A, B, C, rn, cn);
}

/* ---- rows over the threads (common/vt_par.h): op(A) stored by rows (tA = 0) is split into blocks of
 * rows, each computed by its own part with its own workspace (a vt_exec of the same order, bound
 * and seed); the row norms are each row's own and every part computes the same column norms (part 0
 * keeps them). Each output element is the same reduction in the executor's order whatever the
 * split, and exact rounding makes the stored bits independent of the FP64 partial sums a BLAS
 * forms: the same commitment for every thread count (tests/e2e/threads.sh). */
typedef struct {
    vt_exec *e;
    int tB;
    size_t N, K;
    const float *A, *B;
    double *C, *rn, *cn;
    vt_err err[VT_PAR_MAX];
    char msg[VT_PAR_MAX][200];
} rows_gemm;

static void rows_gemm_part(void *ctx, size_t lo, size_t hi, int part)
{
    rows_gemm *j = ctx;
    vt_exec sub;
    vt_exec_init(&sub, j->e->order, j->e->bound, j->e->seed);
    double *cn = NULL, *own = NULL;
    if (j->cn) cn = part == 0 ? j->cn : (own = malloc((j->N ? j->N : 1) * sizeof *own));
    j->err[part] = j->cn && !cn ? vt_set_error(VT_ERR_NOMEM, "out of memory (a GEMM part's norms)")
                                : gemm_core1(&sub, 0, j->tB, hi - lo, j->N, j->K, j->A + lo * j->K, j->B,
                                             j->C + lo * j->N, j->rn ? j->rn + lo : NULL, cn);
    if (j->err[part]) snprintf(j->msg[part], sizeof j->msg[part], "%s", vt_errmsg());
    free(own);
    vt_exec_free(&sub);
}

/* op(A) transposed (tA = 1, the weight gradients) and B stored by rows (tB = 0): blocks of C's columns,
 * each part copying its columns of B into a contiguous K x nb block (values moved only) and its
 * result block back into C's columns; the column norms are each column's own, every part computes
 * the same row norms (part 0 keeps them) */
typedef struct {
    vt_exec *e;
    size_t M, N, K;
    const float *A, *B;
    double *C, *rn, *cn;
    vt_err err[VT_PAR_MAX];
    char msg[VT_PAR_MAX][200];
} cols_gemm;

static void cols_gemm_part(void *ctx, size_t lo, size_t hi, int part)
{
    cols_gemm *j = ctx;
    const size_t nb = hi - lo, M = j->M, K = j->K, N = j->N;
    vt_exec sub;
    vt_exec_init(&sub, j->e->order, j->e->bound, j->e->seed);
    const size_t nbk = K * nb > 0 ? K * nb : 1, nbm = M * nb > 0 ? M * nb : 1;
    float *b = malloc(nbk * sizeof *b);
    double *c = malloc(nbm * sizeof *c), *rn = NULL, *own = NULL;
    if (j->rn) rn = part == 0 ? j->rn : (own = malloc((M ? M : 1) * sizeof *own));
    if (!b || !c || (j->rn && !rn)) {
        j->err[part] = vt_set_error(VT_ERR_NOMEM, "out of memory (a GEMM part's columns)");
    } else {
        for (size_t k = 0; k < K; k++) memcpy(b + k * nb, j->B + k * N + lo, nb * sizeof *b);
        j->err[part] = gemm_core1(&sub, 1, 0, M, nb, K, j->A, b, c, rn, j->cn ? j->cn + lo : NULL);
        if (!j->err[part])
            for (size_t i = 0; i < M; i++) memcpy(j->C + i * N + lo, c + i * nb, nb * sizeof *c);
    }
    if (j->err[part]) snprintf(j->msg[part], sizeof j->msg[part], "%s", vt_errmsg());
    free(b), free(c), free(own);
    vt_exec_free(&sub);
}

static vt_err gemm_core(vt_exec *e, int tA, int tB, size_t M, size_t N, size_t K, const float *A, const float *B,
                        double *C, double *rn, double *cn)
{
    const int big = vt_par_threads() > 1 && (double)M * (double)N * (double)K >= 4e6;
    if (big && tA && !tB && N >= 8) {
        cols_gemm *j = malloc(sizeof *j);
        if (!j) return gemm_core1(e, tA, tB, M, N, K, A, B, C, rn, cn);
        *j = (cols_gemm){.e = e, .M = M, .N = N, .K = K, .A = A, .B = B, .C = C, .rn = rn, .cn = cn};
        int parts = vt_par_for(N, 4, cols_gemm_part, j);
        vt_err ret = VT_OK;
        for (int p = 0; p < parts && !ret; p++)
            if (j->err[p]) ret = vt_set_error(j->err[p], "%s", j->msg[p]);
        free(j);
        return ret;
    }
    if (tA || !big || M < 128) return gemm_core1(e, tA, tB, M, N, K, A, B, C, rn, cn);
    rows_gemm *j = malloc(sizeof *j);
    if (!j) return gemm_core1(e, tA, tB, M, N, K, A, B, C, rn, cn);
    *j = (rows_gemm){.e = e, .tB = tB, .N = N, .K = K, .A = A, .B = B, .C = C, .rn = rn, .cn = cn};
    int parts = vt_par_for(M, 64, rows_gemm_part, j);
    vt_err ret = VT_OK;
    for (int p = 0; p < parts && !ret; p++)
        if (j->err[p]) ret = vt_set_error(j->err[p], "%s", j->msg[p]);
    free(j);
    return ret;
}

void vt_gemm_bounds(int tA, int tB, size_t M, size_t N, size_t K, const float *A, const float *B, const double *rn,
                    const double *cn, double coef, vt_bounds *bounds)
{
    memset(bounds, 0, sizeof *bounds);
    bounds->kind = VT_BOUNDS_OUTER;
    bounds->b = NULL;
    bounds->r = rn;
    bounds->c = cn;
    bounds->coef = coef;
    bounds->ta = A;
    bounds->ta_si = tA ? 1 : K;
    bounds->ta_sk = tA ? M : 1;
    bounds->tb = B;
    bounds->tb_sk = tB ? 1 : N;
    bounds->tb_sj = tB ? K : 1;
    bounds->K = K;
    /* exact evaluator: element (i, j) = sum_k op(A)(i, k) * op(B)(k, j) */
    bounds->xa = A;
    bounds->xa_si = bounds->ta_si;
    bounds->xa_sj = 0;
    bounds->xa_sk = bounds->ta_sk;
    bounds->xb = B;
    bounds->xb_si = 0;
    bounds->xb_sj = bounds->tb_sj;
    bounds->xb_sk = bounds->tb_sk;
    bounds->xK = K;
    bounds->x_rpb = bounds->xa_sg = bounds->xb_sg = 0; /* not batched */
}

vt_err vt_gemm(vt_exec *e, int transA, int transB, size_t M, size_t N, size_t K, const float *A, const float *B,
               double *C, double *rownorm, double *colnorm, vt_bounds *bounds)
{
    VT_FORWARD_IF_ERROR(check_args(e, transA, transB, M, N, K, A, B, C, "vt_gemm"));
    VT_RETURN_ERROR_IF(rownorm == NULL || colnorm == NULL || bounds == NULL, VT_ERR_ARG,
                       "vt_gemm: NULL norm or bounds argument");
    double coef = vt_bound_coef_red(&e->bound, (uint64_t)K, (uint64_t)K);
    VT_RETURN_ERROR_IF(!(coef >= 0.0), VT_ERR_LIMIT, "vt_gemm: no bound coefficient for K=%zu", K);
    VT_FORWARD_IF_ERROR(gemm_core(e, transA, transB, M, N, K, A, B, C, rownorm, colnorm));
    vt_gemm_bounds(transA, transB, M, N, K, A, B, rownorm, colnorm, coef, bounds);
    return VT_OK;
}

vt_err vt_gemm_plain(vt_exec *e, int transA, int transB, size_t M, size_t N, size_t K, const float *A,
                     const float *B, double *C)
{
    VT_FORWARD_IF_ERROR(check_args(e, transA, transB, M, N, K, A, B, C, "vt_gemm_plain"));
    return gemm_core(e, transA, transB, M, N, K, A, B, C, NULL, NULL);
}
