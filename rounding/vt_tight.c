/* vt_tight.c - the tight-bound cache of vt_tight.h: non-zero masks of op(A)'s rows and op(B)'s
 * columns (an element with at most one non-zero product has B = 0), FP64 copies with the
 * lowest-set-bit exponents of their entries (the exactness test), and the bound of an element. */
#include "vt_tight.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../common/vt_bytes.h"

void vt_tight_init(vt_tight *t, const vt_bounds *b, size_t M, size_t N)
{
    memset(t, 0, sizeof *t);
    t->b = b;
    t->M = M;
    t->N = N;
    t->K = b->K;
    t->row = SIZE_MAX;
    t->mrow = SIZE_MAX;
    t->frow = SIZE_MAX;
}

void vt_tight_free(vt_tight *t)
{
    free(t->bt);
    free(t->lbt);
    free(t->ar);
    free(t->lar);
    free(t->have);
    free(t->mbt);
    free(t->hmask);
    free(t->mar);
    free(t->fa);
}

/* op(A)'s row i (stride *sk): stored, or filled through b->xa_fill into t->fa (NULL when memory is short) */
static const float *tight_arow(vt_tight *t, size_t i, size_t *sk)
{
    const vt_bounds *b = t->b;
    if (b->ta) {
        *sk = b->ta_sk;
        return b->ta + i * b->ta_si;
    }
    *sk = 1;
    if (!t->fa && !(t->fa = malloc((t->K ? t->K : 1) * sizeof *t->fa))) return NULL;
    if (t->frow != i) {
        for (size_t k0 = 0; k0 < t->K; k0 += VT_XFILL_CHUNK)
            b->xa_fill(b->xa_ctx, i, k0, t->K - k0 < VT_XFILL_CHUNK ? t->K - k0 : VT_XFILL_CHUNK, t->fa + k0);
        t->frow = i;
    }
    return t->fa;
}

static inline int16_t lsb_of_f32(float f) { return f == 0.0f ? 0 : (int16_t)vt_f32_lsb_exp(vt_f32_bits(f)); }

/* Non-zero masks (op(B)(k, j) != 0, op(A)(i, k) != 0 for each k). Where the other index is
 * the contiguous one, a block of VT_MBLK columns (rows) is filled at once: the same cache lines
 * are read as for one, so the strided walk over k is not repeated for each column (row). */
#define VT_MBLK 16
static int tight_column_full(vt_tight *t, size_t j);
static int tight_column_mask(vt_tight *t, size_t j)
{
    if (t->hmask[j]) return 0;
    const vt_bounds *b = t->b;
    const size_t sk = b->tb_sk, W = t->W;
    size_t j0 = j, j1 = j + 1;
    /* a long strided column: one pass that fills the mask and the FP64 copy together */
    if (b->tb_sj != 1 || t->K > VT_MBLK_KMAX) return tight_column_full(t, j);
    {
        j0 = j - j % VT_MBLK;
        j1 = t->N - j0 < VT_MBLK ? t->N : j0 + VT_MBLK;
    }
    memset(t->mbt + j0 * W, 0, (j1 - j0) * W * sizeof(uint64_t));
    for (size_t k = 0; k < t->K; k++) {
        const float *r = b->tb + k * sk;
        uint64_t *m = t->mbt + k / 64;
        for (size_t jj = j0; jj < j1; jj++)
            m[jj * W] |= (uint64_t)(r[jj * b->tb_sj] != 0.0f) << (k % 64);
    }
    memset(t->hmask + j0, 1, j1 - j0);
    return 0;
}

static int tight_row_mask(vt_tight *t, size_t i)
{
    if (t->mrow != SIZE_MAX && i >= t->mrow && i < t->mrow + t->mrows) {
        t->mcur = t->mar + (i - t->mrow) * t->W;
        return 0;
    }
    const vt_bounds *b = t->b;
    const size_t W = t->W;
    size_t i0 = i, i1 = i + 1;
    if (!b->ta) { /* a filled row */
        size_t one;
        const float *r = tight_arow(t, i, &one);
        if (!r) return t->failed = 1, -1;
        memset(t->mar, 0, W * sizeof(uint64_t));
        for (size_t k = 0; k < t->K; k++) t->mar[k / 64] |= (uint64_t)(r[k] != 0.0f) << (k % 64);
        t->mrow = i, t->mrows = 1, t->mcur = t->mar;
        return 0;
    }
    const size_t sk = b->ta_sk;
    if (b->ta_si == 1 && t->K <= VT_MBLK_KMAX) {
        i0 = i - i % VT_MBLK;
        i1 = t->M - i0 < VT_MBLK ? t->M : i0 + VT_MBLK;
    }
    memset(t->mar, 0, (i1 - i0) * W * sizeof(uint64_t));
    for (size_t k = 0; k < t->K; k++) {
        const float *r = b->ta + k * sk;
        uint64_t *m = t->mar + k / 64;
        for (size_t ii = i0; ii < i1; ii++)
            m[(ii - i0) * W] |= (uint64_t)(r[ii * b->ta_si] != 0.0f) << (k % 64);
    }
    t->mrow = i0;
    t->mrows = i1 - i0;
    t->mcur = t->mar + (i - i0) * W;
    return 0;
}

/* stage 1: the masks of row i and column j; -1 when memory is short */
static int tight_prepare_masks(vt_tight *t, size_t i, size_t j)
{
    if (!t->mbt) {
        size_t K = t->K;
        if (t->failed || K == 0) return t->failed = 1, -1;
        t->W = (K + 63) / 64;
        if (t->N > SIZE_MAX / sizeof(uint64_t) / t->W) return t->failed = 1, -1;
        t->mbt = malloc(t->N * t->W * sizeof(uint64_t));
        t->hmask = calloc(t->N ? t->N : 1, 1);
        t->mar = malloc(VT_MBLK * t->W * sizeof(uint64_t));
        if (!t->mbt || !t->hmask || !t->mar) return t->failed = 1, -1;
    }
    if (tight_row_mask(t, i)) return -1;
    return tight_column_mask(t, j);
}

static void tight_column(vt_tight *t, size_t j)
{
    if (t->have[j]) return;
    const vt_bounds *b = t->b;
    double *d = t->bt + j * t->K;
    int16_t *l = t->lbt + j * t->K;
    uint64_t *m = t->hmask[j] ? NULL : t->mbt + j * t->W;
    if (m) memset(m, 0, t->W * sizeof(uint64_t));
    for (size_t k = 0; k < t->K; k++) {
        float f = b->tb[k * b->tb_sk + j * b->tb_sj];
        d[k] = (double)f;
        l[k] = lsb_of_f32(f);
        if (m) m[k / 64] |= (uint64_t)(f != 0.0f) << (k % 64);
    }
    t->hmask[j] = 1;
    t->have[j] = 1;
}

static int tight_alloc_full(vt_tight *t);
/* column j's FP64 copy and mask in one pass; -1 when memory is short */
static int tight_column_full(vt_tight *t, size_t j)
{
    if (tight_alloc_full(t)) return -1;
    tight_column(t, j);
    return 0;
}

static int tight_alloc_full(vt_tight *t)
{
    size_t K = t->K;
    if (!t->bt) {
        if (t->failed || K == 0 || t->N > SIZE_MAX / sizeof(double) / K) return t->failed = 1, -1;
        t->bt = malloc(t->N * K * sizeof(double));
        t->lbt = malloc(t->N * K * sizeof(int16_t));
        t->ar = malloc(K * sizeof(double));
        t->lar = malloc(K * sizeof(int16_t));
        t->have = calloc(t->N ? t->N : 1, 1);
        if (!t->bt || !t->lbt || !t->ar || !t->lar || !t->have) return t->failed = 1, -1;
    }
    return 0;
}

/* stage 2: FP64 copies of row i (and, through tight_column, the columns); -1 when memory is short */
static int tight_prepare(vt_tight *t, size_t i)
{
    size_t K = t->K;
    if (tight_alloc_full(t)) return -1;
    if (t->row != i) {
        size_t sk;
        const float *a = tight_arow(t, i, &sk);
        if (!a) return t->failed = 1, -1;
        for (size_t k = 0; k < K; k++) {
            float f = a[k * sk];
            t->ar[k] = (double)f;
            t->lar[k] = lsb_of_f32(f);
        }
        t->row = i;
    }
    return 0;
}

/* Direct evaluation from the FP32 operands (fallback when memory is short). */
static double tight_direct(const vt_bound_cfg *cfg, vt_tight *t, size_t i, size_t j)
{
    const vt_bounds *b = t->b;
    size_t sk;
    const float *a = tight_arow(t, i, &sk);
    if (!a) return INFINITY; /* no memory for a filled row: "error bound is not finite" */
    return vt_bound_of_terms(cfg, b->K, a, sk, b->tb + j * b->tb_sj, b->tb_sk);
}

/* Stage 1: s = sum |a b| and the number of non-zero products (vectorisable). */
static void tight_sum(vt_tight *t, size_t j, double *s_out, uint64_t *nnz_out)
{
    const double *a = t->ar, *bj = t->bt + j * t->K;
    double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    uint64_t n0 = 0, n1 = 0, n2 = 0, n3 = 0;
    size_t k = 0, K = t->K;
    for (; k + 4 <= K; k += 4) {
        double p0 = fabs(a[k] * bj[k]), p1 = fabs(a[k + 1] * bj[k + 1]), p2 = fabs(a[k + 2] * bj[k + 2]),
               p3 = fabs(a[k + 3] * bj[k + 3]);
        s0 += p0, s1 += p1, s2 += p2, s3 += p3;
        n0 += p0 != 0.0, n1 += p1 != 0.0, n2 += p2 != 0.0, n3 += p3 != 0.0;
    }
    for (; k < K; k++) {
        double p = fabs(a[k] * bj[k]);
        s0 += p;
        n0 += p != 0.0;
    }
    *s_out = (s0 + s1) + (s2 + s3);
    *nnz_out = n0 + n1 + n2 + n3;
}

/* Stage 2: the exactness test (lowest set bit of the non-zero products). */
static int tight_exact(vt_tight *t, size_t j, double s)
{
    const double *a = t->ar, *bj = t->bt + j * t->K;
    const int16_t *la = t->lar, *lb = t->lbt + j * t->K;
    int emin = 1 << 20;
    for (size_t k = 0; k < t->K; k++) {
        int e = (a[k] != 0.0 && bj[k] != 0.0) ? la[k] + lb[k] : (1 << 20);
        emin = e < emin ? e : emin;
    }
    return vt_sum_is_exact(s, emin);
}

/* The tight bound of element (i, j) by the specification. */
double vt_tight_bound(const vt_bound_cfg *cfg, vt_tight *t, size_t i, size_t j)
{
    if (t->failed || tight_prepare_masks(t, i, j)) return tight_direct(cfg, t, i, j);
    /* the number of non-zero products from the masks first: at most one means B = 0
     * (each word adds 0 for no bit, 1 for one bit, 2 for two or more) */
    const uint64_t *mb = t->mbt + j * t->W;
    uint64_t cnt = 0;
    for (size_t w = 0; w < t->W && cnt <= 1; w++) {
        uint64_t v = t->mcur[w] & mb[w];
        cnt += (uint64_t)(v != 0) + (uint64_t)((v & (v - 1)) != 0);
    }
    if (cnt <= 1) return 0.0;
    if (tight_prepare(t, i)) return tight_direct(cfg, t, i, j);
    tight_column(t, j);
    double s;
    uint64_t nnz;
    tight_sum(t, j, &s, &nnz);
    if (nnz <= 1 || tight_exact(t, j, s)) return 0.0;
    return vt_bound_coef_red(cfg, nnz, t->K) * s;
}

/* The bound of element (i, j) by the specification. */
double vt_bound_at(const vt_bound_cfg *cfg, vt_tight *t, const vt_bounds *b, size_t i, size_t j, size_t cols)
{
    switch (b->kind) {
    case VT_BOUNDS_ARRAY: return b->b[i * cols + j];
    case VT_BOUNDS_OUTER: return vt_bounds_tight(b) ? vt_tight_bound(cfg, t, i, j) : b->coef * b->r[i] * b->c[j];
    default: return 0.0;
    }
}
