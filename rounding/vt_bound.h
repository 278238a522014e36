/* vt_bound.h - the error bounds of the rounding layer (docs/rounding.md 2): the bound
 * configuration of a run (vt_bound_cfg: provable or probabilistic, the rounding mode, the panel and
 * log rules of older manifest formats), the coefficients c(n) of a reduction (whole, panelled, THE
 * coefficient vt_bound_coef_red), the exactness test of a reduction, the descriptor by which an
 * operation hands its bounds and its exact evaluator to the rounding (vt_bounds) and the tight bound
 * of one reduction (vt_bound_of_terms). Nothing here knows about the step log. */
#ifndef VT_BOUND_H
#define VT_BOUND_H

#include <stddef.h>
#include <stdint.h>

typedef enum {
    VT_BOUND_PROVABLE = 0,      /* worst case, any order, any IEEE machine (default) */
    VT_BOUND_PROBABILISTIC = 1, /* Higham-Mary probabilistic bound with parameter lambda */
} vt_bound_mode;

/* How an operation's FP64 results become FP32 (docs/rounding.md):
 *   LOG   - the trainer rounds its own value and logs the elements near a boundary; a replayer
 *           follows the log (the published method's shape);
 *   EXACT - every party produces RN32 of the exact value of the reduction: its own FP64 result
 *           where its own bound clears every boundary, vt_xacc (vt_exact.h)
 *           otherwise; composite operations are correctly rounded reductions followed by fixed
 *           chains of IEEE operations. No log; nothing depends on any party's order. */
typedef enum {
    VT_ROUNDING_LOG = 0,
    VT_ROUNDING_EXACT = 1,
} vt_rounding;

typedef struct {
    vt_bound_mode mode;
    double lambda;        /* probabilistic mode only; VT_DEFAULT_LAMBDA when 0 */
    vt_rounding rounding; /* the recipe's `rounding` */
    /* 0 (manifest format 3 on, and the default): every reduction longer than 2 * VT_PANEL terms
     * is evaluated in panels of VT_PANEL consecutive terms, by every order, and its bound is the
     * panel bound (vt_bound_coef_red); 1: formats 1 and 2, the bound of the whole reduction and
     * no panels (how those runs were recorded). Provable bounds only. */
    int whole_reduction;
    /* Log rounding. 0 (manifest format 5 on, and the default): one state has one log - an element
     * carries an entry exactly when [X - B, X + B] around its exact value X holds a rounding
     * boundary (a direction entry when it holds one, a value entry when more), and the replay
     * rejects any other entry as unneeded (docs/rounding.md 5); 1: formats 1-4, whose trainer logged
     * by its own value (boundaries within 2B of it) and whose replay accepts an entry on any element
     * whose window is one value (moot). */
    int legacy_log;
} vt_bound_cfg;

/* The panel length of the project's reductions (terms k in [p*VT_PANEL, (p+1)*VT_PANEL) form
 * panel p; docs/rounding.md 2.1). */
#define VT_PANEL 128

#define VT_DEFAULT_LAMBDA 10.0
/* Largest reduction length the bound formulas are proved for. */
#define VT_MAX_REDUCTION ((uint64_t)1 << 30)

/* Coefficient c(n) such that a sum of n terms t_1..t_n, evaluated in FP64 in any
 * order (with or without FMA), differs from the exact sum by at most
 * c(n) * S for any upper bound S >= sum |t_i| that was itself computed in FP64 by
 * a sum of n non-negative terms (c(n) already absorbs the rounding of S, of the
 * final products and of c itself: see docs/rounding.md).  c(1) = 0.  Returns a
 * negative value when n > VT_MAX_REDUCTION. */
double vt_bound_coef(const vt_bound_cfg *cfg, uint64_t n);

/* The coefficient of a reduction of n terms evaluated in panels of at most kc consecutive terms,
 * each panel summed in any order, the P = ceil(n/kc) panel results then combined by any binary
 * tree of depth at most d = ceil(log2 P) (the panel tree of kernels/):
 * error <= [g(kc) + h(d)(1 + g(kc))] * sum|t| with g(j) = gamma_(j-1), h(d) = gamma_d,
 * inflated like vt_bound_coef (provable bounds only; kc >= 2). For n = 65536 and kc = 128 it
 * is about 480 times smaller than vt_bound_coef(n). Negative when n > VT_MAX_REDUCTION. */
double vt_bound_coef_panel(uint64_t n, uint64_t kc);

/* 1 when a reduction of K terms is evaluated in panels under cfg (provable bounds, format 3,
 * K > 2 * VT_PANEL): every order then sums each panel from +0 in its own way and adds the panel
 * results in its own way. */
int vt_bound_panelled(const vt_bound_cfg *cfg, uint64_t K);

/* THE coefficient of a reduction of K terms, nnz of them non-zero, under cfg: vt_bound_coef(nnz)
 * and, where the reduction is panelled, the smaller of that and vt_bound_coef_panel(K, VT_PANEL)
 * (both hold for a panelled evaluation: additions of a zero term are exact). Every party's own
 * bound and the canonical bound that log entries are judged by. Negative when K or nnz exceeds
 * VT_MAX_REDUCTION. */
double vt_bound_coef_red(const vt_bound_cfg *cfg, uint64_t nnz, uint64_t K);

/* Per-failure probability of the probabilistic bound for n terms (an upper bound);
 * 0 for the provable mode. */
double vt_bound_failure_prob(const vt_bound_cfg *cfg, uint64_t n);

/* Exponent of the lowest set bit of a non-zero finite FP32 value (v = odd * 2^result). */
static inline int vt_f32_lsb_exp(uint32_t bits)
{
    uint32_t e = (bits >> 23) & 0xffu, m = bits & 0x7fffffu;
    if (e == 0) return -149 + __builtin_ctz(m);
    return (int)e - 150 + __builtin_ctz(m | 0x800000u);
}

/* Exactness test of a reduction (docs/rounding.md, section 2.1): when every term is a multiple
 * of 2^emin and sum|t| < 2^(emin+53), every partial sum of every summation tree is a multiple of
 * 2^emin below 2^(emin+53), hence representable: no addition rounds, the bound is 0.
 * sabs is the computed sum of |t| (inflated here to cover its own rounding). */
static inline int vt_sum_is_exact(double sabs, int emin)
{
    if (emin > 900 || emin < -1074) return 0;
    double lim = 1.0;
    int k = emin + 53; /* 2^k by repeated scaling: exact, no libm */
    for (; k > 0; k--) lim *= 2.0;
    for (; k < 0; k++) lim *= 0.5;
    return sabs * (1.0 + 0x1p-20) < lim;
}

#define VT_XFILL_CHUNK 256 /* vt_bounds.xa_fill's entries per call (a multiple of 4) */

/* How an operation describes the bounds of its rows x cols outputs (row-major). */
typedef enum {
    VT_BOUNDS_ZERO = 0,  /* B = 0: exact or deterministic elementwise result */
    VT_BOUNDS_ARRAY = 1, /* B[i] per element */
    VT_BOUNDS_OUTER = 2, /* B[i][j] = coef * r[i] * c[j] (GEMM via Cauchy-Schwarz) */
} vt_bounds_kind;

typedef struct {
    vt_bounds_kind kind;
    const double *b;  /* ARRAY */
    const double *r;  /* OUTER: rows entries */
    const double *c;  /* OUTER: cols entries */
    double coef;      /* OUTER */
    /* OUTER, optional (ta != NULL): the GEMM operands, so that the rounding layer can use the
     * tight bound  B[i][j] = coef * sum_k |A(i,k) * B(k,j)|  (<= coef * r[i] * c[j]) for the
     * few elements the screening bound cannot clear. A(i,k) = ta[i*ta_si + k*ta_sk],
     * B(k,j) = tb[k*tb_sk + j*tb_sj]. When given, the tight bound is THE bound of the element
     * (docs/rounding.md, section 2.1); the outer product only screens. */
    const float *ta, *tb;
    size_t ta_si, ta_sk, tb_sk, tb_sj, K;
    /* Exact evaluator (exact rounding; optional: xa != NULL). Element e = (i, j), i = e / cols,
     * j = e % cols, is the reduction  sum_{k < xK} xa[i*xa_si + j*xa_sj + k*xa_sk] *
     * xb[i*xb_si + j*xb_sj + k*xb_sk]  of FP32 values (a GEMM element: op(A) row times op(B)
     * column; a column sum: xb a single 1.0f with zero strides). */
    const float *xa, *xb;
    size_t xa_si, xa_sj, xa_sk, xb_si, xb_sj, xb_sk, xK;
    /* batched operands (optional: x_rpb > 0): row i is row i % x_rpb of batch g = i / x_rpb, and
     * the operands' addresses gain g*xa_sg and g*xb_sg (i % x_rpb replaces i above) */
    size_t x_rpb, xa_sg, xb_sg;
    /* an operand no array holds (optional: xa_fill != NULL; a convolution's patch matrix, never
     * materialised): xa_fill(xa_ctx, i, k0, n, dst) writes op(A)'s entries k0 .. k0+n-1 of element
     * row i to dst[0 .. n), in place of xa[i*xa_si + k*xa_sk] (xa, still set, is the stored tensor
     * the entries come from; not batched). The evaluator asks for VT_XFILL_CHUNK entries at a time. */
    void (*xa_fill)(const void *ctx, size_t i, size_t k0, size_t n, float *dst);
    const void *xa_ctx;
} vt_bounds;

/* 1 when the element's bound is the tight bound (OUTER with operands; the outer product only screens):
 * op(A) stored (ta), or read through xa_fill (ta NULL, tb and K set: the rows xa_fill gives are op(A)'s
 * K entries of the tight bound too; a convolution's input gradient, whose gathered operand no array
 * holds). */
static inline int vt_bounds_tight(const vt_bounds *b)
{
    return b->kind == VT_BOUNDS_OUTER && (b->ta || (b->tb && b->xa_fill));
}

/* The tight bound of one reduction sum_k a[k*inca] * b[k*incb] (docs/rounding.md 2.1):
 * c(m) * sum |a b| over the m non-zero products, 0 when m <= 1 or the sum is exact in every
 * order. The same function gives a GEMM element's bound and (b = 1) a sum's. */
double vt_bound_of_terms(const vt_bound_cfg *cfg, size_t K, const float *a, size_t inca, const float *b,
                         size_t incb);

/* The same bound from the products themselves, x[k] = a[k*inca] * b[k*incb] computed in FP64
 * (exact): vt_bound_of_terms' value bit for bit, in one vectorised pass over contiguous doubles
 * (the reductions of vt_reduce, which form the products anyway). */
double vt_bound_of_products(const vt_bound_cfg *cfg, size_t K, const double *x);

/* The exactness test's scale of a reduction whose |terms| sum to s (vti_exact_scale, vt_round_hd.h):
 * 2^-E, or 0 when s is out of range; the reduction is exact in every order when every |term| * scale
 * is an integer or at least 2^52. For kernels that form the terms themselves (the fused column
 * reductions of kernels/vt_kernels.c). */
double vt_bound_exact_scale(double s);

#endif
