/* vt_kernels.c - executors, evaluation orders, sums, elementwise kernels, softmax,
 * cross-entropy, optimisers and the exact dot product (GEMM is in vt_gemm.c).
 *
 * Determinism rules followed here (docs/rounding.md):
 *  - Every elementwise kernel is a chain of IEEE basic operations on FP64 values
 *    converted exactly from FP32, written in one fixed order, compiled with
 *    -ffp-contract=off and without fast-math: bit-identical on every IEEE-754
 *    machine, so its bound is 0 (VT_BOUNDS_ZERO; the kernels do not even take a
 *    bounds argument).
 *  - exp and log come from vt_math (portable, bit-identical).
 *  - Only reductions depend on the evaluation order; each one carries a bound
 *    valid for every order (vt_bound_coef).
 *  - Every reduction starts from +0, so a zero result is +0 in every order
 *    (IEEE RNE: x + (-x) = +0 and +0 + -0 = +0).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "vt_kernels.h"
#include "vt_kernels_hd.h"
#include "../common/vt_bytes.h"
#include "../common/vt_debug.h"
#include "vt_kernels_int.h"
#include "../rounding/vt_exact.h"
#include "vt_math.h"

/* ================================================================ orders */

static const char *const vt_order_names[VT_ORDER_COUNT] = {
    "blas", "forward", "reverse", "pairwise", "permuted", "sorted", "split",
};

const char *vt_order_name(vt_order o)
{
    if ((unsigned)o >= (unsigned)VT_ORDER_COUNT) return "unknown";
    return vt_order_names[o];
}

vt_err vt_order_parse(const char *s, vt_order *o)
{
    VT_RETURN_ERROR_IF(s == NULL || o == NULL, VT_ERR_ARG, "vt_order_parse: NULL argument");
    for (int i = 0; i < (int)VT_ORDER_COUNT; i++) {
        if (strcmp(s, vt_order_names[i]) == 0) {
            *o = (vt_order)i;
            return VT_OK;
        }
    }
    VT_RETURN_ERROR(VT_ERR_ARG, "unknown evaluation order '%.40s' (blas, forward, reverse, pairwise, "
                                "permuted, sorted, split)", s);
}

/* ============================================================== executor */

void vt_exec_init(vt_exec *e, vt_order order, vt_bound_cfg bound, uint64_t seed)
{
    if (e == NULL) return;
    memset(e, 0, sizeof *e);
    e->order = order;
    e->bound = bound;
    e->seed = seed;
}

void vt_exec_free(vt_exec *e)
{
    if (e == NULL) return;
    for (int i = 0; i < VT_WS_COUNT; i++) {
        free(e->ws.p[i]);
        e->ws.p[i] = NULL;
        e->ws.n[i] = 0;
    }
}

vt_err vti_mul_size(size_t n, size_t m, size_t *out)
{
    VT_RETURN_ERROR_IF(m != 0 && n > SIZE_MAX / m, VT_ERR_LIMIT, "size overflow (%zu x %zu)", n, m);
    *out = n * m;
    return VT_OK;
}

vt_err vti_ws_get(vt_ws *ws, int slot, size_t count, size_t elsize, void **out)
{
    size_t bytes = 0;
    VT_ASSERT(slot >= 0 && slot < VT_WS_COUNT);
    VT_FORWARD_IF_ERROR(vti_mul_size(count, elsize, &bytes));
    if (bytes == 0) bytes = 1;
    if (ws->n[slot] < bytes) {
        free(ws->p[slot]);
        ws->p[slot] = NULL;
        ws->n[slot] = 0;
        void *p = malloc(bytes);
        VT_RETURN_ERROR_IF(p == NULL, VT_ERR_NOMEM, "workspace: cannot allocate %zu bytes", bytes);
        ws->p[slot] = p;
        ws->n[slot] = bytes;
    }
    *out = ws->p[slot];
    return VT_OK;
}

vt_err vti_check_exec(const vt_exec *e)
{
    VT_RETURN_ERROR_IF(e == NULL, VT_ERR_ARG, "NULL executor");
    VT_RETURN_ERROR_IF((unsigned)e->order >= (unsigned)VT_ORDER_COUNT, VT_ERR_ARG,
                       "invalid evaluation order %d", (int)e->order);
    return VT_OK;
}

/* =================================================== orders of a reduction */

static uint64_t vti_splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

void vti_perm(uint64_t seed, size_t n, uint32_t *perm)
{
    for (size_t t = 0; t < n; t++) perm[t] = (uint32_t)t;
    uint64_t s = seed;
    for (size_t t = n; t-- > 1;) {
        /* j uniform-ish in [0, t]: (32 random bits * (t+1)) >> 32, t+1 <= 2^32 */
        uint64_t r = vti_splitmix64(&s) >> 32;
        size_t j = (size_t)((r * (uint64_t)(t + 1)) >> 32);
        VT_ASSERT(j <= t);
        uint32_t tmp = perm[t];
        perm[t] = perm[j];
        perm[j] = tmp;
    }
}

static int vti_cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

double vti_sum_sorted_keys(size_t n, uint64_t *keys)
{
    qsort(keys, n, sizeof *keys, vti_cmp_u64);
    double s = 0.0;
    for (size_t t = 0; t < n; t++) s += vti_key_value(keys[t]);
    return s;
}

/* PAIRWISE tree: leaves are the blocks [8q, 8q+8) summed ascending from +0; after
 * leaf number L (1-based) is formed, it is merged with the stack top once for each
 * trailing zero bit of L (older partial sum on the left); at the end the stack is
 * folded from the top (st[d-2] + st[d-1], then st[d-3] + that, ...).  vt_gemm's
 * row-vectorised PAIRWISE performs exactly these operations per element. */
static double vti_sum_pairwise(size_t n, const double *x)
{
    double st[72];
    int top = 0;
    size_t leaf = 0;
    for (size_t b = 0; b < n; b += VT_PAIRWISE_LEAF) {
        size_t end = n - b < VT_PAIRWISE_LEAF ? n : b + VT_PAIRWISE_LEAF;
        double s = 0.0;
        for (size_t t = b; t < end; t++) s += x[t];
        leaf++;
        for (size_t c = leaf; (c & 1) == 0; c >>= 1) s = st[--top] + s;
        VT_ASSERT(top >= 0 && top < 72 && (size_t)top + 1 == (size_t)__builtin_popcountll(leaf)); /* the stack */
        st[top++] = s;
    }
    if (top == 0) return 0.0;
    double r = st[--top];
    while (top > 0) r = st[--top] + r;
    return r;
}

double vti_sum(vt_order o, size_t n, const double *x, const uint32_t *perm, uint64_t *keys)
{
    double s = 0.0;
    switch (o) {
    case VT_ORDER_BLAS: {
        double a0 = 0.0, a1 = 0.0, a2 = 0.0, a3 = 0.0;
        size_t t = 0;
        for (; t + 4 <= n; t += 4) {
            a0 += x[t];
            a1 += x[t + 1];
            a2 += x[t + 2];
            a3 += x[t + 3];
        }
        if (t < n) a0 += x[t];
        if (t + 1 < n) a1 += x[t + 1];
        if (t + 2 < n) a2 += x[t + 2];
        return (a0 + a1) + (a2 + a3);
    }
    case VT_ORDER_FORWARD:
        for (size_t t = 0; t < n; t++) s += x[t];
        return s;
    case VT_ORDER_REVERSE:
        for (size_t t = n; t-- > 0;) s += x[t];
        return s;
    case VT_ORDER_PAIRWISE:
    case VT_ORDER_SPLIT:
        return vti_sum_pairwise(n, x);
    case VT_ORDER_PERMUTED:
        for (size_t t = 0; t < n; t++) s += x[perm[t]];
        return s;
    case VT_ORDER_SORTED:
        for (size_t t = 0; t < n; t++) keys[t] = vti_sort_key(x[t]);
        return vti_sum_sorted_keys(n, keys);
    default:
        return NAN; /* unreachable: orders are validated by the callers */
    }
}

void vti_perm_red(uint64_t seed, size_t n, int panelled, uint32_t *perm)
{
    if (!panelled) {
        vti_perm(seed, n, perm);
        return;
    }
    for (size_t p0 = 0; p0 < n; p0 += VT_PANEL) {
        size_t len = n - p0 < VT_PANEL ? n - p0 : VT_PANEL;
        vti_perm(seed + p0 / VT_PANEL, len, perm + p0);
        for (size_t t = 0; t < len; t++) perm[p0 + t] += (uint32_t)p0;
    }
}

size_t vti_ptree_depth(size_t P)
{
    size_t d = 1;
    while (d < 64 && ((size_t)1 << (d - 1)) <= P) d++;
    return d; /* floor(log2 P) + 2: the counter's stack (popcount <= floor(log2 P) + 1) and the slot written */
}

void vti_ptree_push(vti_ptree *t)
{
    t->top++;
    t->count++;
    for (size_t c = t->count; (c & 1) == 0; c >>= 1) {
        VT_ASSERT(t->top >= 2);
        double *l = t->st + (t->top - 2) * t->n;
        const double *r = l + t->n;
        for (size_t j = 0; j < t->n; j++) l[j] = l[j] + r[j];
        t->top--;
    }
    /* the binary counter: one partial result per set bit of the panels pushed */
    VT_ASSERT(t->top == (size_t)__builtin_popcountll((unsigned long long)t->count));
}

void vti_ptree_result(const vti_ptree *t, double *out)
{
    VT_ASSERT(t->top >= 1 && t->count >= 1); /* at least one panel pushed */
    const double *r = t->st + (t->top - 1) * t->n;
    for (size_t j = 0; j < t->n; j++) out[j] = r[j];
    for (size_t l = t->top - 1; l-- > 0;) {
        const double *q = t->st + l * t->n;
        for (size_t j = 0; j < t->n; j++) out[j] = q[j] + out[j];
    }
}

double vti_sum_red(vt_order o, int panelled, size_t n, const double *x, const uint32_t *perm, uint64_t *keys,
                   double *ps)
{
    if (!panelled || o == VT_ORDER_PAIRWISE || o == VT_ORDER_SPLIT) return vti_sum(o, n, x, perm, keys);
    const size_t P = (n + VT_PANEL - 1) / VT_PANEL;
    vti_ptree t;
    vti_ptree_init(&t, ps, 1);
    for (size_t q = 0; q < P; q++) {
        size_t p = o == VT_ORDER_REVERSE ? P - 1 - q : q, p0 = p * VT_PANEL;
        size_t len = n - p0 < VT_PANEL ? n - p0 : VT_PANEL;
        VT_ASSERT(p < P && len >= 1 && p0 + len <= n);
        *vti_ptree_next(&t) =
            o == VT_ORDER_PERMUTED ? vti_sum(o, len, x, perm + p0, NULL) : vti_sum(o, len, x + p0, NULL, keys);
        vti_ptree_push(&t);
    }
    double r;
    vti_ptree_result(&t, &r);
    return r;
}

/* Scratch needed by vti_sum_red for n terms in order o. */
static vt_err vti_sum_scratch(vt_exec *e, size_t n, uint32_t **perm, uint64_t **keys, double **ps)
{
    *perm = NULL;
    *keys = NULL;
    *ps = NULL;
    const int pan = vt_bound_panelled(&e->bound, n);
    if (e->order == VT_ORDER_PERMUTED) {
        void *p = NULL;
        VT_FORWARD_IF_ERROR(vti_ws_get(&e->ws, VT_WS_PERM, n, sizeof(uint32_t), &p));
        *perm = p;
        vti_perm_red(e->seed, n, pan, *perm);
    } else if (e->order == VT_ORDER_SORTED) {
        void *p = NULL;
        VT_FORWARD_IF_ERROR(vti_ws_get(&e->ws, VT_WS_AUX, n, sizeof(uint64_t), &p));
        *keys = p;
    }
    if (pan) {
        void *p = NULL;
        VT_FORWARD_IF_ERROR(vti_ws_get(&e->ws, VT_WS_PAN, vti_ptree_depth(n / VT_PANEL + 1), sizeof(double), &p));
        *ps = p;
    }
    return VT_OK;
}

static vt_err vti_coef(const vt_exec *e, size_t n, double *coef)
{
    VT_RETURN_ERROR_IF((uint64_t)n > VT_MAX_REDUCTION, VT_ERR_LIMIT,
                       "reduction length %zu exceeds VT_MAX_REDUCTION", n);
    double c = vt_bound_coef_red(&e->bound, (uint64_t)n, (uint64_t)n);
    VT_RETURN_ERROR_IF(!(c >= 0.0), VT_ERR_LIMIT, "no bound coefficient for reduction length %zu", n);
    *coef = c;
    return VT_OK;
}

/* ================================================================== sums */

/* An ARRAY bounds descriptor over b, every other field cleared (no exact evaluator). */
static void vti_bounds_array(vt_bounds *bounds, const double *b)
{
    memset(bounds, 0, sizeof *bounds);
    bounds->kind = VT_BOUNDS_ARRAY;
    bounds->b = b;
}

/* The products of the column reductions of a row-major a (rows == 1, a.sk == ld, a.sj == 1), cols
 * columns from a.p and b.p: P[j * n + t] = a(t, j) * b(t, j) in FP64 (exact), formed in blocks of 64 rows so that reads and
 * writes both stay in a few cache lines at a time; each column's products then lie contiguous, as
 * the per-column loop would have formed them. */
static void vti_col_products(vt_strided a, vt_strided b, size_t n, size_t cols, size_t ld, double *P)
{
    for (size_t t0 = 0; t0 < n; t0 += 64) {
        size_t t1 = n - t0 < 64 ? n : t0 + 64;
        for (size_t j = 0; j < cols; j++) {
            double *d = P + j * n;
            const float *pa = a.p + j, *pb = b.p + j * b.sj;
            if (b.sk == 0)
                for (size_t t = t0; t < t1; t++) d[t] = (double)pa[t * ld] * (double)pb[0];
            else
                for (size_t t = t0; t < t1; t++) d[t] = (double)pa[t * ld] * (double)pb[t * b.sk];
        }
    }
}

/* vt_reduce's outputs over the threads: every output element is its own reduction (its terms, their
 * order, its bound), so a part computes exactly what one thread would; each part has its own term
 * scratch (x, the sorted order's keys, the panel tree), the permutation and the column products P
 * are shared read-only. */
typedef struct {
    const vt_exec *e;
    size_t cols, n;
    vt_strided a, b;
    double *out, *bnd;
    const double *P;       /* the column products (or NULL) */
    const uint32_t *perm;  /* the permuted order's permutation (or NULL) */
    int pan;
    double *x0;            /* part 0's scratch (the executor's workspace) */
    uint64_t *keys0;
    double *ps0;
    int nomem[VT_PAR_MAX];
} reduce_job;

static void reduce_part(void *ctx, size_t lo, size_t hi, int part)
{
    reduce_job *j = ctx;
    const vt_exec *e = j->e;
    const size_t n = j->n, cols = j->cols;
    double *x = j->x0, *ps = j->ps0;
    uint64_t *keys = j->keys0;
    void *own = NULL;
    if (part > 0) { /* the other parts' scratch: the same sizes as vti_sum_scratch's */
        size_t nps = j->pan ? vti_ptree_depth(n / VT_PANEL + 1) : 0, nk = j->keys0 ? n : 0;
        own = malloc((j->P ? 0 : n) * sizeof(double) + nps * sizeof(double) + nk * sizeof(uint64_t) + 1);
        if (!own) {
            j->nomem[part] = 1;
            return;
        }
        double *d = own;
        x = d, d += j->P ? 0 : n;
        ps = j->pan ? d : NULL, d += nps;
        keys = nk ? (uint64_t *)(void *)d : NULL;
    }
    const vt_strided a = j->a, b = j->b;
    for (size_t ij = lo; ij < hi; ij++) {
        const size_t i = ij / cols, jj = ij % cols;
        size_t g = 0, r = i;
        if (a.rpb) g = i / a.rpb, r = i % a.rpb;
        const float *pa = a.p + g * a.sg + r * a.si + jj * a.sj, *pb = b.p + g * b.sg + r * b.si + jj * b.sj;
        const size_t sa = a.sk, sb = b.sk;
        /* products of two FP32 values are exact in FP64: the terms are exact (the contiguous
         * cases with constant strides, which the compiler vectorises) */
        const double *xs = x;
        if (j->P) xs = j->P + jj * n;
        else if (sa == 1 && sb == 0)
            for (size_t t = 0; t < n; t++) x[t] = (double)pa[t] * (double)pb[0];
        else if (sa == 1 && sb == 1)
            for (size_t t = 0; t < n; t++) x[t] = (double)pa[t] * (double)pb[t];
        else
            for (size_t t = 0; t < n; t++) x[t] = (double)pa[t * sa] * (double)pb[t * sb];
        j->out[ij] = vti_sum_red(e->order, j->pan, n, xs, j->perm, keys, ps);
        /* the rounding layer's bound of a reduction, with factors 1: gamma over the non-zero
         * terms only, and 0 when the sum is exact in every order (docs/rounding.md 2.1) */
        j->bnd[ij] = vt_bound_of_products(&e->bound, n, xs); /* = vt_bound_of_terms(pa, pb) */
    }
    free(own);
}

typedef struct {
    vt_strided a, b;
    size_t n, cols;
    double *P;
} colprod_job;

static void colprod_part(void *ctx, size_t lo, size_t hi, int part)
{
    const colprod_job *j = ctx;
    (void)part;
    vt_strided a = j->a, b = j->b;
    a.p += lo, b.p += lo * b.sj; /* columns lo .. hi-1: column j's operands start at p + j * sj */
    a.sk = j->cols;
    vti_col_products(a, b, j->n, hi - lo, j->cols, j->P + lo * j->n);
}

/* Column reductions of a row-major a in the BLAS order, in one pass over the rows (no products
 * formed): columns [j0, j0 + NB) side by side, each column's sum in its own registers. Every column
 * gets exactly the operations vti_sum_red and vt_bound_of_products perform on its products: per panel
 * (VT_PANEL rows when panelled, else all n) four lanes by the row's position mod 4 in the panel,
 * (l0 + l1) + (l2 + l3), the panels into the panel tree (vti_ptree over NB columns: the same additions
 * per column); the bound's |p| lanes by the row mod 4 over the whole blocks of 4, the tail into lane
 * 0, and the non-zero count. The exactness test (every |p| 2^-E an integer or at least 2^52, E from
 * the |p| sum: vt_bound_exact_scale) is decided from the lowest set bit of the products instead:
 * a non-zero p = a b is a multiple of 2^E exactly when lowbit(a) + lowbit(b) >= E (odd times odd is
 * odd), and a zero passes, so the pass keeps each column's least lowbit(a) + lowbit(b) over its
 * non-zero products - the same answer as the test. b is one value (sk = 0, sj = 0) or has a's layout. */
typedef struct {
    const vt_exec *e;
    const float *a, *b;
    size_t n, ld;
    int pan, bcol; /* b: 0 one value, 1 a's layout */
    double *out, *bnd;
} colred_job;

#define VTI_COLRED_NB 8
#define VTI_LOWBIT_NONE 0x3fffffff /* a zero's: above every sum of two lowbits */

/* the exponent of the lowest set bit of a finite FP32 value (subnormals included); VTI_LOWBIT_NONE for
 * a zero (vti_f32_lowbit8's, one value) */
static inline int32_t vti_f32_lowbit_1(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    const int32_t e = (int32_t)((u >> 23) & 0xffu);
    const uint32_t m = (u & 0x7fffffu) | (e ? 0x800000u : 0u);
    if (!m) return VTI_LOWBIT_NONE;
    return (e ? e - 150 : -149) + __builtin_ctz(m);
}

/* 8 columns in GCC's vector extensions (one AVX2 register of FP32 or int32, two of FP64 or int64;
 * SSE2 pairs in the baseline clone): every lane its column's own IEEE operations */
typedef float vti_v8f __attribute__((vector_size(32)));
typedef int32_t vti_v8i __attribute__((vector_size(32)));
typedef uint32_t vti_v8u __attribute__((vector_size(32)));
typedef double vti_v8d __attribute__((vector_size(64)));
typedef int64_t vti_v8l __attribute__((vector_size(64)));

/* the exponent of the lowest set bit of each of a vector's finite FP32 values (subnormals included),
 * VTI_LOWBIT_NONE for a zero: integer operations, the power of two m & -m converted to FP32 exactly for
 * its exponent; one body for the 8-lane (colred_block) and the 4-lane (rowred_part) vectors */
#define VTI_DEFINE_LOWBIT(name, VF, VI, VU)                                                                     \
    static inline __attribute__((always_inline)) void name(const VF *x, VI *out)                                \
    {                                                                                                           \
        VU u;                                                                                                   \
        memcpy(&u, x, sizeof u);                                                                                \
        const VI e = (VI)((u >> 23) & 0xffu), normal = e != 0; /* -1 where normal */                            \
        const VI m = (VI)(u & 0x7fffffu) | (normal & 0x800000), p2 = m & -m;                                    \
        const VF f = __builtin_convertvector(p2, VF);                                                           \
        VU fb;                                                                                                  \
        memcpy(&fb, &f, sizeof fb);                                                                             \
        const VI lb = e - 150 + (~normal & 1) + (VI)(fb >> 23) - 127, zero = m == 0;                            \
        *out = (lb & ~zero) | (zero & VTI_LOWBIT_NONE);                                                         \
    }
VTI_DEFINE_LOWBIT(vti_f32_lowbit8, vti_v8f, vti_v8i, vti_v8u)

/* row r's products v, |v| and lowbit sums lb of the 8 columns */
static inline __attribute__((always_inline)) void colred_row(const colred_job *j, const float *a, const float *bb,
                                                             const vti_v8d *bd, const vti_v8i *lb1, size_t r,
                                                             vti_v8d *v, vti_v8d *av, vti_v8i *lb)
{
    const vti_v8l absmask = {INT64_MAX, INT64_MAX, INT64_MAX, INT64_MAX, INT64_MAX, INT64_MAX, INT64_MAX, INT64_MAX};
    vti_v8f a8;
    memcpy(&a8, a + r * j->ld, sizeof a8);
    *v = __builtin_convertvector(a8, vti_v8d);
    vti_f32_lowbit8(&a8, lb);
    if (j->bcol) {
        vti_v8f b8;
        vti_v8i lbb;
        memcpy(&b8, bb + r * j->ld, sizeof b8);
        *v = *v * __builtin_convertvector(b8, vti_v8d);
        vti_f32_lowbit8(&b8, &lbb);
        *lb += lbb;
    } else {
        *v = *v * *bd;
        *lb += *lb1;
    }
    vti_v8l vb;
    memcpy(&vb, v, sizeof vb);
    vb &= absmask;
    memcpy(av, &vb, sizeof *av);
}

/* the count of non-zero products and the least lowbit sum of the non-zero ones (a zero product's lb
 * is at least VTI_LOWBIT_NONE - 298, above every other) */
#define VTI_COLRED_NOTE(v, lb)                                                                                         \
    do {                                                                                                               \
        cnt -= (vti_v8l)((v) != 0.0);                                                                                  \
        const vti_v8i less_ = (lb) < lo;                                                                               \
        lo = ((lb) & less_) | (lo & ~less_);                                                                           \
    } while (0)

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx512f", "avx2", "default")))
#endif
static void colred_block(const colred_job *j, size_t j0, double *sum, double *absl, uint64_t *nnz, int32_t *low,
                         double *st)
{
    const size_t n = j->n, L = j->pan ? VT_PANEL : n;
    const float *a = j->a + j0, *bb = j->bcol ? j->b + j0 : j->b;
    const vti_v8f b1 = {bb[0], bb[0], bb[0], bb[0], bb[0], bb[0], bb[0], bb[0]};
    const vti_v8d bd = __builtin_convertvector(b1, vti_v8d);
    vti_v8i lb1;
    vti_f32_lowbit8(&b1, &lb1);
    vti_v8d al0 = {0}, al1 = {0}, al2 = {0}, al3 = {0};
    vti_v8l cnt = {0};
    vti_v8i lo = {VTI_LOWBIT_NONE, VTI_LOWBIT_NONE, VTI_LOWBIT_NONE, VTI_LOWBIT_NONE,
                  VTI_LOWBIT_NONE, VTI_LOWBIT_NONE, VTI_LOWBIT_NONE, VTI_LOWBIT_NONE};
    vti_ptree t;
    vti_ptree_init(&t, st, VTI_COLRED_NB);
    for (size_t p0 = 0; p0 < n; p0 += L) {
        /* rows in groups of 4, each row's lane its position mod 4 (panels start at multiples of 4, so
         * the bound's lanes are the same); the rows after the last whole group of 4 (r >= n - n % 4:
         * the last panel's tail) into lane 0 of the bound */
        const size_t p1 = n - p0 < L ? n : p0 + L, g1 = p0 + ((p1 - p0) & ~(size_t)3);
        vti_v8d ac0 = {0}, ac1 = {0}, ac2 = {0}, ac3 = {0}, v, av;
        vti_v8i lb;
        size_t r = p0;
        for (; r < g1; r += 4) {
            colred_row(j, a, bb, &bd, &lb1, r, &v, &av, &lb);
            ac0 += v, al0 += av;
            VTI_COLRED_NOTE(v, lb);
            colred_row(j, a, bb, &bd, &lb1, r + 1, &v, &av, &lb);
            ac1 += v, al1 += av;
            VTI_COLRED_NOTE(v, lb);
            colred_row(j, a, bb, &bd, &lb1, r + 2, &v, &av, &lb);
            ac2 += v, al2 += av;
            VTI_COLRED_NOTE(v, lb);
            colred_row(j, a, bb, &bd, &lb1, r + 3, &v, &av, &lb);
            ac3 += v, al3 += av;
            VTI_COLRED_NOTE(v, lb);
        }
        for (size_t l = 0; r < p1; r++, l++) {
            colred_row(j, a, bb, &bd, &lb1, r, &v, &av, &lb);
            if (l == 0) ac0 += v;
            else if (l == 1) ac1 += v;
            else ac2 += v;
            al0 += av;
            VTI_COLRED_NOTE(v, lb);
        }
        const vti_v8d ps = (ac0 + ac1) + (ac2 + ac3);
        memcpy(vti_ptree_next(&t), &ps, sizeof ps);
        vti_ptree_push(&t);
    }
    if (j->pan) vti_ptree_result(&t, sum);
    else
        memcpy(sum, st, VTI_COLRED_NB * sizeof(double)); /* one panel: its sum as it is */
    const vti_v8d as = (al0 + al1) + (al2 + al3);
    memcpy(absl, &as, sizeof as);
    for (size_t c = 0; c < VTI_COLRED_NB; c++) nnz[c] = (uint64_t)cnt[c], low[c] = lo[c];
}

static void colred_part(void *ctx, size_t lo, size_t hi, int part)
{
    const colred_job *j = ctx;
    (void)part;
    double st[64 * VTI_COLRED_NB];
    for (size_t g = lo; g < hi; g++) {
        const size_t j0 = g * VTI_COLRED_NB;
        double sum[VTI_COLRED_NB], s[VTI_COLRED_NB];
        uint64_t nnz[VTI_COLRED_NB];
        int32_t low[VTI_COLRED_NB];
        colred_block(j, j0, sum, s, nnz, low, st);
        for (size_t c = 0; c < VTI_COLRED_NB; c++) {
            j->out[j0 + c] = sum[c];
            /* vt_bound_of_products: 0 for at most one non-zero term or an exact sum; the scale is
             * 2^-E, a normal power of two (0 when the test fails for the range) */
            const double scale = nnz[c] > 1 ? vt_bound_exact_scale(s[c]) : 0.0;
            const int exact = scale != 0.0 && low[c] >= -ilogb(scale);
            j->bnd[j0 + c] = nnz[c] <= 1 || exact ? 0.0 : vt_bound_coef_red(&j->e->bound, nnz[c], j->n) * s[c];
        }
    }
}

/* Row reductions of contiguous rows in the BLAS order (a row's terms a.p[i si + k], b one value or
 * contiguous alike), one pass per row: the four lanes of vti_sum's BLAS order are the four lanes of a
 * vector (position mod 4 in the panel), the bound's |p| lanes too (position mod 4 over the whole
 * blocks of 4, the last panel's tail into lane 0), the panels (rows longer than 2 VT_PANEL) into the
 * panel tree; the non-zero count and the least lowbit sum of the non-zero products decide the
 * exactness test as colred_block's do. The same operations per row as reduce_part's. */
typedef float vti_v4f __attribute__((vector_size(16)));
typedef int32_t vti_v4i __attribute__((vector_size(16)));
typedef uint32_t vti_v4u __attribute__((vector_size(16)));
typedef double vti_v4d __attribute__((vector_size(32)));
typedef int64_t vti_v4l __attribute__((vector_size(32)));

VTI_DEFINE_LOWBIT(vti_f32_lowbit4, vti_v4f, vti_v4i, vti_v4u)

typedef struct {
    const vt_exec *e;
    const float *a, *b;
    size_t n, sa, sb; /* row i's terms at a + i sa, b + i sb (sb = 0 with bone: one value) */
    int pan, bone;
    double *out, *bnd;
} rowred_job;

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx512f", "avx2", "default")))
#endif
static void rowred_part(void *ctx, size_t lo, size_t hi, int part)
{
    const rowred_job *j = ctx;
    (void)part;
    const size_t n = j->n, L = j->pan ? VT_PANEL : n;
    const vti_v4l absmask = {INT64_MAX, INT64_MAX, INT64_MAX, INT64_MAX};
    const float b0 = j->b[0];
    const vti_v4f b1 = {b0, b0, b0, b0};
    vti_v4i lb1;
    vti_f32_lowbit4(&b1, &lb1);
    const int32_t lbs = lb1[0];
    double st[64];
    for (size_t i = lo; i < hi; i++) {
        const float *a = j->a + i * j->sa, *b = j->bone ? j->b : j->b + i * j->sb;
        vti_v4d al = {0, 0, 0, 0};
        vti_v4l cnt = {0, 0, 0, 0};
        vti_v4i lov = {VTI_LOWBIT_NONE, VTI_LOWBIT_NONE, VTI_LOWBIT_NONE, VTI_LOWBIT_NONE};
        double alt[3]; /* the tail's |p| (at most 3), added to lane 0 after the blocks, in order */
        size_t na = 0;
        uint64_t nt = 0;
        int32_t lot = VTI_LOWBIT_NONE;
        vti_ptree t;
        vti_ptree_init(&t, st, 1);
        for (size_t p0 = 0; p0 < n; p0 += L) {
            const size_t p1 = n - p0 < L ? n : p0 + L, g1 = p0 + ((p1 - p0) & ~(size_t)3);
            vti_v4d ac = {0, 0, 0, 0};
            for (size_t k = p0; k < g1; k += 4) {
                vti_v4f a4, b4 = b1;
                vti_v4i lb, lbb = lb1;
                memcpy(&a4, a + k, sizeof a4);
                if (!j->bone) {
                    memcpy(&b4, b + k, sizeof b4);
                    vti_f32_lowbit4(&b4, &lbb);
                }
                const vti_v4d v = __builtin_convertvector(a4, vti_v4d) * __builtin_convertvector(b4, vti_v4d);
                vti_f32_lowbit4(&a4, &lb);
                lb += lbb;
                vti_v4l vb;
                memcpy(&vb, &v, sizeof vb);
                vb &= absmask;
                vti_v4d av;
                memcpy(&av, &vb, sizeof av);
                ac += v, al += av;
                cnt -= (vti_v4l)(v != 0.0);
                const vti_v4i less = lb < lov;
                lov = (lb & less) | (lov & ~less);
            }
            double acs[4] = {ac[0], ac[1], ac[2], ac[3]};
            for (size_t k = g1; k < p1; k++) { /* the tail: only in the last panel (panels are multiples of 4) */
                const double v = (double)a[k] * (double)(j->bone ? b0 : b[k]);
                acs[k - g1] += v;
                alt[na++] = fabs(v);
                nt += v != 0.0;
                const int32_t lb = vti_f32_lowbit_1(a[k]) + (j->bone ? lbs : vti_f32_lowbit_1(b[k]));
                lot = v != 0.0 && lb < lot ? lb : lot;
            }
            *vti_ptree_next(&t) = (acs[0] + acs[1]) + (acs[2] + acs[3]);
            vti_ptree_push(&t);
        }
        double sum = st[0];
        if (j->pan) vti_ptree_result(&t, &sum);
        double l0 = al[0];
        for (size_t k = 0; k < na; k++) l0 += alt[k]; /* the tail after the blocks, in lane 0 */
        const double s = (l0 + al[1]) + (al[2] + al[3]);
        const uint64_t nnz = (uint64_t)(cnt[0] + cnt[1] + cnt[2] + cnt[3]) + nt;
        int32_t low = lot;
        for (int l = 0; l < 4; l++) low = lov[l] < low ? lov[l] : low;
        const double scale = nnz > 1 ? vt_bound_exact_scale(s) : 0.0;
        const int exact = scale != 0.0 && low >= -ilogb(scale);
        j->out[i] = sum;
        j->bnd[i] = nnz <= 1 || exact ? 0.0 : vt_bound_coef_red(&j->e->bound, nnz, n) * s;
    }
}

/* vt_reduce's bounds descriptor: the array, and the operands for the exact evaluator */
static void reduce_bounds(vt_bounds *bounds, size_t n, vt_strided a, vt_strided b, const double *bnd)
{
    vti_bounds_array(bounds, bnd);
    bounds->xa = a.p, bounds->xa_si = a.si, bounds->xa_sj = a.sj, bounds->xa_sk = a.sk;
    bounds->xb = b.p, bounds->xb_si = b.si, bounds->xb_sj = b.sj, bounds->xb_sk = b.sk;
    bounds->xK = n;
    bounds->x_rpb = a.rpb, bounds->xa_sg = a.sg, bounds->xb_sg = b.sg;
}

vt_err vt_reduce(vt_exec *e, size_t rows, size_t cols, size_t n, vt_strided a, vt_strided b, double *out,
                 double *bnd, vt_bounds *bounds)
{
    VT_FORWARD_IF_ERROR(vti_check_exec(e));
    VT_RETURN_ERROR_IF(a.p == NULL || b.p == NULL || out == NULL || bnd == NULL || bounds == NULL, VT_ERR_ARG,
                       "vt_reduce: NULL argument");
    VT_RETURN_ERROR_IF(rows == 0 || cols == 0 || n == 0, VT_ERR_ARG, "vt_reduce: empty reduction (%zu x %zu, %zu terms)",
                       rows, cols, n);
    VT_RETURN_ERROR_IF(a.rpb != b.rpb, VT_ERR_ARG, "vt_reduce: the operands are batched differently");
    size_t RC = 0;
    VT_FORWARD_IF_ERROR(vti_mul_size(rows, cols, &RC));
    double coef = 0.0; /* checks that n has a bound coefficient */
    VT_FORWARD_IF_ERROR(vti_coef(e, n, &coef));
    /* Column reductions of a row-major matrix in the BLAS order, columns a multiple of 8: one pass
     * over the rows, 8 columns side by side (colred_block: the same operations per column as below) */
    const int pan = vt_bound_panelled(&e->bound, n);
    if (rows == 1 && cols % VTI_COLRED_NB == 0 && !a.rpb && a.sk == cols && a.sj == 1 && e->order == VT_ORDER_BLAS &&
        ((b.sk == 0 && b.sj == 0) || (b.sk == cols && b.sj == 1))) {
        colred_job cj = {e, a.p, b.p, n, cols, pan, b.sk != 0, out, bnd};
        (void)vt_par_for(cols / VTI_COLRED_NB, VTI_GRAIN / (n * VTI_COLRED_NB) + 1, colred_part, &cj);
        reduce_bounds(bounds, n, a, b, bnd);
        return VT_OK;
    }
    /* Row reductions of contiguous rows in the BLAS order: one pass per row (rowred_part) */
    if (cols == 1 && !a.rpb && a.sk == 1 && e->order == VT_ORDER_BLAS &&
        ((b.si == 0 && b.sj == 0 && b.sk == 0) || (b.sk == 1 && b.si == a.si))) {
        rowred_job rj = {e, a.p, b.p, n, a.si, b.si, pan, b.sk == 0, out, bnd};
        (void)vt_par_for(rows, VTI_GRAIN / n + 1, rowred_part, &rj);
        reduce_bounds(bounds, n, a, b, bnd);
        return VT_OK;
    }
    void *p = NULL;
    VT_FORWARD_IF_ERROR(vti_ws_get(&e->ws, VT_WS_A, n, sizeof(double), &p));
    reduce_job j;
    memset(&j, 0, sizeof j);
    j.e = e, j.cols = cols, j.n = n, j.a = a, j.b = b, j.out = out, j.bnd = bnd, j.x0 = p;
    uint32_t *perm;
    VT_FORWARD_IF_ERROR(vti_sum_scratch(e, n, &perm, &j.keys0, &j.ps0));
    j.perm = perm;
    j.pan = pan;
    /* Column reductions of a row-major matrix (a.sk = the row length, every column's terms far
     * apart): the products of all columns are formed first, column by column into contiguous
     * scratch (vti_col_products, columns over the threads), so that every reduction below reads
     * consecutive memory. The terms, their order and hence every result and bound are the same
     * either way. */
    if (rows == 1 && cols > 1 && !a.rpb && a.sk == cols && a.sj == 1 && n * cols <= ((size_t)1 << 27)) {
        void *q = NULL;
        VT_FORWARD_IF_ERROR(vti_ws_get(&e->ws, VT_WS_B, n * cols, sizeof(double), &q));
        (void)vt_par_for(cols, VTI_GRAIN / n + 1, colprod_part, &(colprod_job){a, b, n, cols, q});
        j.P = q;
    }
    /* parts of at least VTI_GRAIN terms in all */
    const int parts = vt_par_for(RC, VTI_GRAIN / n + 1, reduce_part, &j);
    for (int k = 0; k < parts; k++)
        VT_RETURN_ERROR_IF(j.nomem[k], VT_ERR_NOMEM, "out of memory (a reduction's scratch, %zu terms)", n);
    reduce_bounds(bounds, n, a, b, bnd);
    return VT_OK;
}

static const float vti_one = 1.0f;

/* sums as reductions with the factor 1 (the exact evaluator's b: a single 1.0f, zero strides); the
 * index of the output that is always 0 has the other's stride, so either view (1 x n or n x 1)
 * of the outputs names the same reductions */
vt_err vt_colsum(vt_exec *e, size_t M, size_t N, const float *X, double *out, double *b, vt_bounds *bounds)
{
    return vt_reduce(e, 1, N, M, (vt_strided){X, 1, 1, N, 0, 0}, (vt_strided){&vti_one, 0, 0, 0, 0, 0}, out, b, bounds);
}

vt_err vt_rowsum(vt_exec *e, size_t M, size_t N, const float *X, double *out, double *b, vt_bounds *bounds)
{
    return vt_reduce(e, M, 1, N, (vt_strided){X, N, N, 1, 0, 0}, (vt_strided){&vti_one, 0, 0, 0, 0, 0}, out, b, bounds);
}

vt_err vt_coldot(vt_exec *e, size_t M, size_t N, const float *A, const float *B, double *out, double *b,
                 vt_bounds *bounds)
{
    return vt_reduce(e, 1, N, M, (vt_strided){A, 1, 1, N, 0, 0}, (vt_strided){B, 1, 1, N, 0, 0}, out, b, bounds);
}

/* ================================================ softmax and cross-entropy */

/* Softmax as a correctly rounded reduction followed by a fixed IEEE chain (docs/rounding.md):
 * per row, m = max_c z_c (exact), e_c = vt_exp(z_c - m) (one FP64 subtraction of FP32 values and
 * the portable exp: the same bits everywhere), s = RN64(exact sum of the e_c) (vt_exact.h: the
 * same in every order) and p_c = e_c / s (one IEEE division). Nothing depends on the executor's
 * order, so the bound is 0 and nothing is ever logged. */
vt_err vt_softmax(vt_exec *e, size_t N, size_t C, const float *logits, double *probs, double *b,
                  vt_bounds *bounds)
{
    VT_FORWARD_IF_ERROR(vti_check_exec(e));
    VT_RETURN_ERROR_IF(logits == NULL || probs == NULL || b == NULL || bounds == NULL, VT_ERR_ARG,
                       "vt_softmax: NULL argument");
    VT_RETURN_ERROR_IF(N == 0 || C == 0, VT_ERR_ARG, "vt_softmax: empty input (%zu x %zu)", N, C);
    size_t NC = 0;
    VT_FORWARD_IF_ERROR(vti_mul_size(N, C, &NC));
    VT_RETURN_ERROR_IF(C > VT_MAX_REDUCTION, VT_ERR_LIMIT, "vt_softmax: %zu classes", C);
    for (size_t i = 0; i < N; i++) {
        const float *z = logits + i * C;
        double *p = probs + i * C;
        double *bi = b + i * C;
        /* the denominator is RN64 of the exact sum (the same in every order, in both rounding
         * modes), so q = e / s is a fixed IEEE chain with nothing left to bound or to log */
        vti_softmax_args(C, z, p); /* vti_softmax_row, the row's exponentials at once */
        vt_exp_n(C, p, p);
        vti_normalise_row(C, p);
        for (size_t c = 0; c < C; c++) bi[c] = 0.0;
    }
    vti_bounds_array(bounds, b);
    return VT_OK;
}

void vt_xent_terms(size_t N, size_t C, const float *P, const uint8_t *labels, double dn, double *l)
{
    for (size_t i = 0; i < N; i++) l[i] = vti_xent_arg(P[i * C + labels[i]]);
    vt_log_n(N, l, l); /* vti_xent_l1, the rows' logarithms at once */
    for (size_t i = 0; i < N; i++) l[i] = vti_xent_from_log(l[i], dn);
}

/* l_i = -vt_log(max(P[i][y_i], 2^-149)) / N: a fixed chain, deterministic.  The loss is RN32 of
 * the exact sum of the l_i (vt_exact.h), the same in every order: bound 0. */
vt_err vt_xent_loss(vt_exec *e, size_t N, size_t C, const float *P, const uint8_t *labels, double *loss,
                    double *b, vt_bounds *bounds)
{
    VT_FORWARD_IF_ERROR(vti_check_exec(e));
    VT_RETURN_ERROR_IF(P == NULL || labels == NULL || loss == NULL || b == NULL || bounds == NULL,
                       VT_ERR_ARG, "vt_xent_loss: NULL argument");
    VT_RETURN_ERROR_IF(N == 0 || C == 0, VT_ERR_ARG, "vt_xent_loss: empty input (%zu x %zu)", N, C);
    size_t NC = 0;
    VT_FORWARD_IF_ERROR(vti_mul_size(N, C, &NC));
    for (size_t i = 0; i < N; i++)
        VT_RETURN_ERROR_IF(labels[i] >= C, VT_ERR_ARG, "vt_xent_loss: label %u of row %zu not below %zu classes",
                           (unsigned)labels[i], i, C);
    VT_RETURN_ERROR_IF(N > VT_MAX_REDUCTION, VT_ERR_LIMIT, "vt_xent_loss: %zu rows", N);
    void *pv = NULL;
    VT_FORWARD_IF_ERROR(vti_ws_get(&e->ws, VT_WS_A, N, sizeof(double), &pv));
    double *l = pv;
    const double dn = (double)N;
    vt_xent_terms(N, C, P, labels, dn, l);
    /* RN32 of the exact sum (both rounding modes), which rounds to itself: bound 0 */
    *loss = (double)vt_sum_exact32(N, l, 1);
    *b = 0.0;
    vti_bounds_array(bounds, b);
    return VT_OK;
}
