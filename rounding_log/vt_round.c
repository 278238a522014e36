/* vt_round.c - the record and replay rounding rules (docs/rounding.md).
 *
 * Specification (docs/rounding.md 4-5), per element with FP64 value x and bound B >= 0, and the
 * working bound Bw = B + |x| * 2^-50 (B > 0; Bw = 0 when B = 0) which dominates FP64 rounding slop:
 *   ends_k(x,B) = ( fl32(down(x - k*Bw)), fl32(up(x + k*Bw)) ), where down/up move the FP64
 *   result one step outward (so the computed interval contains the exact one) and
 *   B = 0 gives the degenerate interval [x, x].
 *   window: lo = RN32(X - B), hi = RN32(X + B) of the exact value X (the same for every party).
 *   record: an element whose ends_2 agree is stable (no entry, RN32(x) = RN32(X)); any other is
 *           RN32(X), with an entry exactly when lo != hi (manifest format 5): a direction entry
 *           when they are adjacent, else a value entry. (Formats 1-4: an entry whenever ends_2
 *           differ, a direction when ends_2 are adjacent.)
 *   replay: every entry, and every element without one that the replayer's own ends_2 do not
 *           clear, is judged against the window: a direction entry needs hi <= lo + 1, a value
 *           entry lo <= v <= hi, no entry lo = hi; from format 5 an entry with lo = hi, or a value
 *           entry with hi = lo + 1, is refused (unneeded / not the rule's).
 * The fast path below is a conservative filter: an element it calls stable is stable
 * by the specification (proof in docs/rounding.md, "fast path").
 */
#include "vt_rlog.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/vt_bytes.h"
#include "vt_exact.h"
#include "vt_epilogue.h"
#include "vt_round_hd.h"

/* Every bound and rule here assumes that double arithmetic is evaluated in double (no x87
 * excess precision), as on x86-64 SSE2, AArch64 and CUDA: refuse to build otherwise. */
_Static_assert(FLT_EVAL_METHOD == 0, "FP64 operations must be evaluated in FP64 (FLT_EVAL_METHOD 0)");
_Static_assert(DBL_MANT_DIG == 53 && FLT_MANT_DIG == 24, "IEEE-754 binary64 and binary32 are required");

#define VT_U VTI_U

/* The coefficients are written once, in vt_round_hd.h (shared with the CUDA epilogue). */
double vt_bound_coef(const vt_bound_cfg *cfg, uint64_t n) { return vti_bound_coef(cfg, n); }
double vt_bound_coef_panel(uint64_t n, uint64_t kc) { return vti_bound_coef_panel(n, kc); }
int vt_bound_panelled(const vt_bound_cfg *cfg, uint64_t K) { return vti_bound_panelled(cfg, K); }
double vt_bound_coef_red(const vt_bound_cfg *cfg, uint64_t nnz, uint64_t K) { return vti_bound_coef_red(cfg, nnz, K); }

double vt_bound_failure_prob(const vt_bound_cfg *cfg, uint64_t n)
{
    if (!cfg || cfg->mode != VT_BOUND_PROBABILISTIC || n <= 1) return 0.0;
    double lambda = cfg->lambda > 0 ? cfg->lambda : VT_DEFAULT_LAMBDA;
    double q = (1.0 - VT_U) * lambda;
    double p = 2.0 * (double)n * exp(-0.5 * q * q);
    return p > 1.0 ? 1.0 : p;
}

/* ------------------------------------------------------------ per element */

#define f32_of vti_f32_of
#define bits_finite vti_bits_finite

void vt_round_ends(double x, double B, double k, uint32_t *lo_bits, uint32_t *hi_bits)
{
    vti_round_ends(x, B, k, lo_bits, hi_bits);
}

static vt_err check_inputs(double x, double B)
{
    VT_RETURN_ERROR_IF(isnan(x), VT_ERR_DIVERGED, "result is NaN");
    VT_RETURN_ERROR_IF(!(B >= 0) || isinf(B), VT_ERR_DIVERGED, "error bound is not finite (%g)", B);
    return VT_OK;
}

vt_err vt_round_record1(double x, double B, float *out, int *logged, vt_log_entry *entry)
{
    int isv, up;
    int code = vti_record1(x, B, out, logged, &isv, &up);
    VT_FORWARD_IF_ERROR(check_inputs(x, B));
    VT_RETURN_ERROR_IF(code == VTI_EL_RANGE, VT_ERR_DIVERGED, "result %.17g is beyond FP32 range", x);
    VT_RETURN_ERROR_IF(code == VTI_EL_INTERNAL, VT_ERR_INTERNAL, "rounded value outside its own interval");
    if (!*logged) return VT_OK;
    memset(entry, 0, sizeof *entry);
    entry->is_value = (uint8_t)isv;
    entry->up = (uint8_t)up;
    if (isv) entry->value_bits = vt_f32_bits(*out);
    return VT_OK;
}

/* ---- judgement against the exact value (log rounding, replay) ----
 * With X the exact value of an element and B its bound (the same function of the inputs for
 * every party), every honest trainer's FP64 value lies in [X - B, X + B], so its FP32 result is
 * one of RN32(X - B) .. RN32(X + B) (RN32 is monotone): lo .. hi below. An entry is plausible
 * only when it yields a value in that range; an element without an entry only when lo = hi.
 * Nothing here depends on the judging party's own value or order (docs/rounding.md, 3). */
static void exact_window(const vt_xacc *X, double B, uint32_t *lo, uint32_t *hi, uint32_t *mid)
{
    vti_xacc_window(X, B, lo, hi, mid);
}

/* The judgement of one element (entry, or NULL) on its exact window lo, hi. legacy: the rule of
 * manifest formats 1-4, which accepted an entry whose result is forced. */
static vt_err judge_window(uint32_t lo, uint32_t hi, int legacy, const vt_log_entry *entry, float *out)
{
    uint32_t klo = vt_f32_key(lo), khi = vt_f32_key(hi), v;
    if (!entry) {
        VT_RETURN_ERROR_IF(lo != hi, VT_ERR_IMPLAUSIBLE,
                           "missing log entry: a rounding boundary lies within the bound of the exact value, so "
                           "every honest trainer's rule logs this element");
        VT_RETURN_ERROR_IF(!bits_finite(lo), VT_ERR_DIVERGED, "the exact result is beyond FP32 range");
        *out = vt_bits_f32(lo);
        return VT_OK;
    }
    /* one state, one log (format 5): an entry only where the window holds a boundary, and a
     * direction entry wherever one boundary does */
    VT_RETURN_ERROR_IF(!legacy && khi == klo, VT_ERR_IMPLAUSIBLE,
                       "unneeded log entry: no rounding boundary lies within the bound of the exact value (the "
                       "result is forced), so the rule writes no entry here");
    VT_RETURN_ERROR_IF(!legacy && entry->is_value && khi - klo == 1, VT_ERR_IMPLAUSIBLE,
                       "value entry where one rounding boundary lies within the bound of the exact value: the rule "
                       "writes a direction entry here");
    if (!entry->is_value) {
        VT_RETURN_ERROR_IF(khi - klo > 1, VT_ERR_IMPLAUSIBLE,
                           "direction entry, but two or more rounding boundaries lie within the bound of the exact "
                           "value (an honest trainer writes a value entry there)");
        v = khi == klo ? lo : (entry->up ? hi : lo); /* lo = hi: the result is forced, the direction moot */
        VT_RETURN_ERROR_IF(!bits_finite(v), VT_ERR_IMPLAUSIBLE, "direction entry leads beyond FP32 range");
    } else {
        v = entry->value_bits;
        VT_RETURN_ERROR_IF(!bits_finite(v), VT_ERR_IMPLAUSIBLE, "value entry is not a finite FP32 value");
        uint32_t kv = vt_f32_key(v);
        VT_RETURN_ERROR_IF(kv < klo || kv > khi, VT_ERR_IMPLAUSIBLE,
                           "value entry lies outside [RN32(X - B), RN32(X + B)] of the exact value X: no honest "
                           "trainer's result");
    }
    *out = vt_bits_f32(v);
    return VT_OK;
}

vt_err vt_round_judge1(const struct vt_xacc_s *X, double B, int legacy, const vt_log_entry *entry, float *out)
{
    VT_RETURN_ERROR_IF(!(B >= 0) || isinf(B), VT_ERR_DIVERGED, "error bound is not finite (%g)", B);
    VT_RETURN_ERROR_IF(isnan(vt_xacc_round64(X)), VT_ERR_DIVERGED, "result is NaN");
    uint32_t lo, hi, mid;
    exact_window(X, B, &lo, &hi, &mid);
    return judge_window(lo, hi, legacy, entry, out);
}

/* The format-5 record decision on an element's window (vti_record_window) as an entry. */
static vt_err record_window(uint32_t lo, uint32_t hi, uint32_t mid, float *out, int *logged, vt_log_entry *entry)
{
    vt_epi_res r;
    memset(&r, 0, sizeof r);
    vti_record_window(lo, hi, mid, &r);
    *logged = 0;
    VT_RETURN_ERROR_IF(r.code == VTI_EL_NAN, VT_ERR_DIVERGED, "result is NaN");
    VT_RETURN_ERROR_IF(r.code != VTI_EL_OK, VT_ERR_DIVERGED, "result is beyond FP32 range");
    *out = vt_bits_f32(r.bits);
    if (!r.entry) return VT_OK;
    *logged = 1;
    memset(entry, 0, sizeof *entry);
    entry->is_value = (uint8_t)(r.entry == 2);
    entry->up = r.up;
    if (entry->is_value) entry->value_bits = r.bits;
    return VT_OK;
}

vt_err vt_round_record1_exact(const struct vt_xacc_s *X, double B, float *out, int *logged, vt_log_entry *entry)
{
    *logged = 0;
    VT_RETURN_ERROR_IF(!(B >= 0) || isinf(B), VT_ERR_DIVERGED, "error bound is not finite (%g)", B);
    VT_RETURN_ERROR_IF(isnan(vt_xacc_round64(X)), VT_ERR_DIVERGED, "result is NaN");
    uint32_t lo, hi, mid;
    exact_window(X, B, &lo, &hi, &mid);
    return record_window(lo, hi, mid, out, logged, entry);
}

static inline int fast_stable_k(double x, double B, double k, double slop, float *out)
{
    return vti_screen1(x, B, k, slop, out);
}
static inline int fast_stable_record(double x, double B, float *out)
{
    return vti_screen1(x, B, VT_UNSTABLE_K, VT_SLOP_RECORD, out);
}
static inline int fast_stable_screen(double x, double B, float *out)
{
    return vti_screen1(x, B, VT_SCREEN_K, VT_SLOP_RECORD, out);
}

/* The same filter over a block (vti_screen1 inlined, so that the compiler vectorises it; the
 * x86-64 baseline lacks the conversions it needs, so an AVX2 clone is selected at run time where
 * the processor has it; both clones compute the same IEEE results). Returns 1 when every element
 * of the block is cleared. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx2", "default")))
#endif
static int fast_block(const double *x, const double *B, float *out, uint8_t *cleared, size_t n, double k,
                      double slop)
{
    int ok = 1;
    for (size_t i = 0; i < n; i++) {
        int c = vti_screen1(x[i], B[i], k, slop, &out[i]);
        cleared[i] = (uint8_t)c;
        ok &= c;
    }
    return ok;
}

/* --------------------------------------------------------------- context */

void vt_rctx_init(vt_rctx *c, vt_rmode mode, vt_bound_cfg bound)
{
    memset(c, 0, sizeof *c);
    c->mode = mode;
    c->bound = bound;
}

vt_err vt_rctx_begin_step(vt_rctx *c, uint64_t step, vt_steplog *log)
{
    VT_RETURN_ERROR_IF(!log, VT_ERR_ARG, "no step log given");
    c->step = step;
    c->log = log;
    c->cursor = 0;
    memset(&c->fault, 0, sizeof c->fault);
    if (c->mode == VT_RMODE_RECORD) {
        vt_steplog_reset(log, step);
    } else if (log->step != step) {
        c->fault.code = VT_ERR_MISMATCH;
        c->fault.step = step;
        snprintf(c->fault.why, sizeof c->fault.why, "log is for step %llu", (unsigned long long)log->step);
        VT_RETURN_ERROR(VT_ERR_MISMATCH, "step %llu: the log given is for step %llu", (unsigned long long)step,
                        (unsigned long long)log->step);
    }
    return VT_OK;
}

vt_err vt_rctx_end_step(vt_rctx *c)
{
    if (c->mode == VT_RMODE_REPLAY && c->cursor != c->log->n_ops) {
        c->fault.code = VT_ERR_MISMATCH;
        c->fault.step = c->step;
        c->fault.op_id = c->log->ops[c->cursor].op_id;
        snprintf(c->fault.why, sizeof c->fault.why, "log holds a record for op %u that the step never ran",
                 c->log->ops[c->cursor].op_id);
        VT_RETURN_ERROR(VT_ERR_MISMATCH, "step %llu: %s", (unsigned long long)c->step, c->fault.why);
    }
    return VT_OK;
}

static vt_err fail(vt_rctx *c, vt_err code, uint32_t op, uint64_t index, const vt_log_entry *entry, double x,
                   double B)
{
    char why[160];
    snprintf(why, sizeof why, "%s", vt_errmsg());
    c->fault.code = code;
    c->fault.step = c->step;
    c->fault.op_id = op;
    c->fault.index = index;
    c->fault.has_entry = entry != NULL;
    if (entry) c->fault.entry = *entry;
    c->fault.own_x = x;
    c->fault.own_bound = B;
    memcpy(c->fault.why, why, sizeof why);
    if (entry) {
        char tv[64];
        if (entry->is_value)
            snprintf(tv, sizeof tv, "value %.9g", (double)vt_bits_f32(entry->value_bits));
        else
            snprintf(tv, sizeof tv, "direction %s", entry->up ? "up" : "down");
        return vt_set_error(code, "step %llu, operation %u, index %llu: %s (trainer: %s; own value %.17g, bound %.3g)",
                            (unsigned long long)c->step, op, (unsigned long long)index, why, tv, x, B);
    }
    if (code == VT_ERR_DIVERGED)
        return vt_set_error(code, "training diverged at step %llu, operation %u, index %llu: %s",
                            (unsigned long long)c->step, op, (unsigned long long)index, why);
    return vt_set_error(code, "step %llu, operation %u, index %llu: %s (own value %.17g, bound %.3g)",
                        (unsigned long long)c->step, op, (unsigned long long)index, why, x, B);
}

/* ---- the tight GEMM bound ----
 * B_ij = c(m) * sum_k |a_ik b_kj|, m the number of non-zero products (each product is exact in
 * FP64 and adding an exact zero is exact, so at most m-1 additions on any path of any summation
 * tree can round), and B_ij = 0 when m <= 1 or the sum is exact in every order (docs/rounding.md,
 * section 2.1). Evaluated only for the elements the screening bound cannot clear, from FP64
 * copies of op(A)'s row and op(B)'s column made contiguous on first use within one vt_round
 * call (op(B) transposed once, op(A) one row at a time), so that the loop vectorises. */
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
    int failed;      /* allocation failed */
} tight_cache;

static void tight_init(tight_cache *t, const vt_bounds *b, size_t M, size_t N)
{
    memset(t, 0, sizeof *t);
    t->b = b;
    t->M = M;
    t->N = N;
    t->K = b->K;
    t->row = SIZE_MAX;
    t->mrow = SIZE_MAX;
}

static void tight_free(tight_cache *t)
{
    free(t->bt);
    free(t->lbt);
    free(t->ar);
    free(t->lar);
    free(t->have);
    free(t->mbt);
    free(t->hmask);
    free(t->mar);
}

static inline int16_t lsb_of_f32(float f) { return f == 0.0f ? 0 : (int16_t)vt_f32_lsb_exp(vt_f32_bits(f)); }

/* Non-zero masks (op(B)(k, j) != 0, op(A)(i, k) != 0 for each k). Where the other index is
 * the contiguous one, a block of VT_MBLK columns (rows) is filled at once: the same cache lines
 * are read as for one, so the strided walk over k is not repeated for each column (row). */
#define VT_MBLK 16
#define VT_MBLK_KMAX 256 /* blocks only for short columns (rows); longer ones conflict in the caches */
static int tight_column_full(tight_cache *t, size_t j);
static int tight_column_mask(tight_cache *t, size_t j)
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

static void tight_row_mask(tight_cache *t, size_t i)
{
    if (t->mrow != SIZE_MAX && i >= t->mrow && i < t->mrow + t->mrows) {
        t->mcur = t->mar + (i - t->mrow) * t->W;
        return;
    }
    const vt_bounds *b = t->b;
    const size_t sk = b->ta_sk, W = t->W;
    size_t i0 = i, i1 = i + 1;
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
}

/* stage 1: the masks of row i and column j; -1 when memory is short */
static int tight_prepare_masks(tight_cache *t, size_t i, size_t j)
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
    tight_row_mask(t, i);
    return tight_column_mask(t, j);
}

static void tight_column(tight_cache *t, size_t j)
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

static int tight_alloc_full(tight_cache *t);
/* column j's FP64 copy and mask in one pass; -1 when memory is short */
static int tight_column_full(tight_cache *t, size_t j)
{
    if (tight_alloc_full(t)) return -1;
    tight_column(t, j);
    return 0;
}

static int tight_alloc_full(tight_cache *t)
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
static int tight_prepare(tight_cache *t, size_t i)
{
    const vt_bounds *b = t->b;
    size_t K = t->K;
    if (tight_alloc_full(t)) return -1;
    if (t->row != i) {
        const float *a = b->ta + i * b->ta_si;
        for (size_t k = 0; k < K; k++) {
            float f = a[k * b->ta_sk];
            t->ar[k] = (double)f;
            t->lar[k] = lsb_of_f32(f);
        }
        t->row = i;
    }
    return 0;
}

/* The tight bound of one reduction: vti_bound_of_terms (vt_round_hd.h, shared with the GPU). */
#define bound_of_terms vti_bound_of_terms

double vt_bound_of_terms(const vt_bound_cfg *cfg, size_t K, const float *a, size_t inca, const float *b,
                         size_t incb)
{
    /* the contiguous cases with constant strides, so that the compiler can vectorise them */
    if (inca == 1 && incb == 1) return bound_of_terms(cfg, K, a, 1, b, 1);
    if (inca == 1 && incb == 0) return bound_of_terms(cfg, K, a, 1, b, 0);
    return bound_of_terms(cfg, K, a, inca, b, incb);
}

/* Direct evaluation from the FP32 operands (fallback when memory is short). */
static double tight_direct(const vt_bound_cfg *cfg, const vt_bounds *b, size_t i, size_t j)
{
    return vt_bound_of_terms(cfg, b->K, b->ta + i * b->ta_si, b->ta_sk, b->tb + j * b->tb_sj, b->tb_sk);
}

/* Stage 1: s = sum |a b| and the number of non-zero products (vectorisable). */
static void tight_sum(tight_cache *t, size_t j, double *s_out, uint64_t *nnz_out)
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
static int tight_exact(tight_cache *t, size_t j, double s)
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
static double tight_bound(const vt_bound_cfg *cfg, tight_cache *t, size_t i, size_t j)
{
    if (t->failed || tight_prepare_masks(t, i, j)) return tight_direct(cfg, t->b, i, j);
    /* the number of non-zero products from the masks first: at most one means B = 0
     * (each word adds 0 for no bit, 1 for one bit, 2 for two or more) */
    const uint64_t *mb = t->mbt + j * t->W;
    uint64_t cnt = 0;
    for (size_t w = 0; w < t->W && cnt <= 1; w++) {
        uint64_t v = t->mcur[w] & mb[w];
        cnt += (uint64_t)(v != 0) + (uint64_t)((v & (v - 1)) != 0);
    }
    if (cnt <= 1) return 0.0;
    if (tight_prepare(t, i)) return tight_direct(cfg, t->b, i, j);
    tight_column(t, j);
    double s;
    uint64_t nnz;
    tight_sum(t, j, &s, &nnz);
    if (nnz <= 1 || tight_exact(t, j, s)) return 0.0;
    return vt_bound_coef_red(cfg, nnz, t->K) * s;
}

/* The bound of element (i, j) by the specification. */
static inline double bound_at(const vt_bound_cfg *cfg, tight_cache *t, const vt_bounds *b, size_t i, size_t j,
                              size_t cols)
{
    switch (b->kind) {
    case VT_BOUNDS_ARRAY: return b->b[i * cols + j];
    case VT_BOUNDS_OUTER: return b->ta ? tight_bound(cfg, t, i, j) : b->coef * b->r[i] * b->c[j];
    default: return 0.0;
    }
}

/* Lenient replay: note the first implausible or missing entry and go on with RN32 of our own
 * value (x: for a judged element, RN32 of the exact value). */
static vt_err lenient_own(vt_rctx *c, uint32_t op, uint64_t idx, const vt_log_entry *e, double x, double B, float *out)
{
    if (c->fault.code == VT_OK) {
        char why[160];
        snprintf(why, sizeof why, "%s", vt_errmsg());
        c->fault.code = VT_ERR_IMPLAUSIBLE;
        c->fault.step = c->step;
        c->fault.op_id = op;
        c->fault.index = idx;
        c->fault.has_entry = e != NULL;
        if (e) c->fault.entry = *e;
        c->fault.own_x = x;
        c->fault.own_bound = B;
        memcpy(c->fault.why, why, sizeof why);
    }
    float r = (float)x;
    VT_RETURN_ERROR_IF(!isfinite(r), VT_ERR_DIVERGED, "training diverged at step %llu, operation %u, index %llu",
                       (unsigned long long)c->step, op, (unsigned long long)idx);
    *out = r;
    return VT_OK;
}

/* Rounding without any possible entry (B = 0). */
static vt_err round_plain(vt_rctx *c, uint32_t op, const double *x, size_t n, float *out)
{
    int bad = 0;
    for (size_t k = 0; k < n; k++) {
        float r = (float)x[k];
        out[k] = r;
        bad |= !isfinite(r);
    }
    if (!bad) return VT_OK;
    for (size_t k = 0; k < n; k++)
        if (!isfinite(out[k])) {
            vt_set_error(VT_ERR_DIVERGED, isnan(x[k]) ? "result is NaN" : "result is beyond FP32 range");
            return fail(c, VT_ERR_DIVERGED, op, k, NULL, x[k], 0.0);
        }
    return VT_OK;
}

/* The first operands of element (i, j)'s reduction in the exact evaluator (batched or not). */
static inline void x_operands(const vt_bounds *b, size_t i, size_t j, const float **pa, const float **pb)
{
    size_t g = 0, r = i;
    if (b->x_rpb) g = i / b->x_rpb, r = i % b->x_rpb;
    *pa = b->xa + g * b->xa_sg + r * b->xa_si + j * b->xa_sj;
    *pb = b->xb + g * b->xb_sg + r * b->xb_si + j * b->xb_sj;
}

/* The exact value of element (i, j), from the operation's exact evaluator (b->xa, b->xb). */
static void element_exact(const vt_bounds *b, size_t i, size_t j, vt_xacc *a)
{
    vt_xacc_init(a);
    const float *pa, *pb;
    x_operands(b, i, j, &pa, &pb);
    for (size_t k = 0; k < b->xK; k++) vt_xacc_add_prod32(a, pa[k * b->xa_sk], pb[k * b->xb_sk]);
}

/* The exact evaluation of element (i, j) in two stages: a compensated sum with a rigorous bound
 * (vt_dot_comp64: *s, *e with |*s - X| <= *e), from the FP64 operands that the tight cache holds
 * contiguously for a GEMM element whose tight bound it computed; where that cannot decide, the
 * exact accumulator. `decide(s, e, ctx)` says whether [s - e, s + e] decides the caller's
 * question; 1 when it did (no accumulator), 0 when *a holds the exact value instead. */
typedef int (*decide_fn)(double s, double e, void *ctx);
static int element_eval(const vt_bounds *b, tight_cache *t, size_t i, size_t j, decide_fn decide, void *ctx,
                        vt_xacc *a, vt_rstats *st)
{
    st->exact++;
    int have = t && !t->failed && t->bt && t->row == i && t->have && t->have[j] && b->xa == b->ta && b->xK == t->K;
    const double *pa = have ? t->ar : NULL, *pb = have ? t->bt + j * t->K : NULL;
    const float *fa, *fb;
    x_operands(b, i, j, &fa, &fb);
    double s, e;
    if (have) vt_dot_comp64(t->K, pa, pb, &s, &e);
    else vt_dot_comp32(b->xK, fa, b->xa_sk, fb, b->xb_sk, &s, &e);
    if (isfinite(s) && isfinite(e) && decide(s, e, ctx)) return 1;
    st->kulisch++;
    if (!have) {
        element_exact(b, i, j, a);
        return 0;
    }
    vt_xacc_init(a);
    for (size_t k = 0; k < t->K; k++) vt_xacc_add(a, pa[k] * pb[k]); /* exact products of FP32 values */
    return 0;
}

/* decide: RN32(X) for exact rounding */
static int decide_rn32(double s, double e, void *ctx)
{
    uint32_t lo, hi;
    vt_round_ends(s, e, 1.0, &lo, &hi);
    if (lo != hi) return 0;
    *(uint32_t *)ctx = lo;
    return 1;
}

/* decide: the window RN32(X - B), RN32(X + B) and RN32(X) for the judgement */
typedef struct {
    double B;
    uint32_t lo, hi, mid;
} window_q;
static int decide_window(double s, double e, void *ctx)
{
    window_q *q = ctx;
    return vti_window_decide(s, e, q->B, &q->lo, &q->hi, &q->mid); /* the device's, vt_round_hd.h */
}

/* The exact window of element (i, j): lo = RN32(X - B), hi = RN32(X + B) and *mid = RN32(X) for
 * the exact value X (X = x when B = 0: the FP64 result is then exact). *X64 gets a value near X
 * (RN32(X) or RN64(X)) for reports and the lenient replay. VT_ERR_UNSUPPORTED when the operation
 * has no exact evaluator. */
static vt_err element_window(const vt_bounds *b, tight_cache *t, vt_rstats *st, size_t i, size_t j, double x,
                             double B, uint32_t *lo, uint32_t *hi, uint32_t *mid, double *X64)
{
    vt_xacc a;
    if (B == 0 || b->kind == VT_BOUNDS_ZERO) {
        st->exact++;
        vt_xacc_init(&a);
        vt_xacc_add(&a, x);
    } else {
        VT_RETURN_ERROR_IF(!b->xa, VT_ERR_UNSUPPORTED, "the operation has no exact evaluator to judge the log");
        window_q q = {.B = B};
        if (element_eval(b, t, i, j, decide_window, &q, &a, st)) {
            *lo = q.lo;
            *hi = q.hi;
            *mid = q.mid;
            *X64 = (double)vt_bits_f32(q.mid);
            VT_RETURN_ERROR_IF(isnan(*X64), VT_ERR_DIVERGED, "result is NaN");
            return VT_OK;
        }
    }
    *X64 = vt_xacc_round64(&a);
    VT_RETURN_ERROR_IF(isnan(*X64), VT_ERR_DIVERGED, "result is NaN");
    exact_window(&a, B, lo, hi, mid);
    return VT_OK;
}

/* Record: the trainer's rule on its own value (may produce an entry). */
static vt_err slow_element(vt_rctx *c, vt_oplog *o, const vt_bounds *b, tight_cache *tc, size_t i, size_t j,
                           double x, double B, uint64_t idx, float *out)
{
    int logged;
    vt_log_entry e;
    vt_err err = vt_round_record1(x, B, out, &logged, &e);
    /* An element near a boundary (logged), or whose own value lies beyond FP32 range but within B
     * of the overflow threshold, gets RN32 of its exact value, logged with that result: what is
     * stored never depends on this trainer's order (and whether the run goes on near the
     * threshold neither; docs/rounding.md 5: the threshold is one boundary). */
    int near_max = err == VT_ERR_DIVERGED && isfinite(x) && B > 0 && !isinf(B);
    if (b->xa && ((!err && logged) || near_max) && !c->bound.legacy_log) {
        /* format 5: the entry from the exact window, the same for every trainer (vti_record_window) */
        uint32_t lo, hi, mid;
        vt_round_ends(x, B, 1.0, &lo, &hi);
        if (bits_finite(lo)) {
            double X64;
            err = element_window(b, tc, &c->stats, i, j, x, B, &lo, &hi, &mid, &X64);
            if (!err) err = record_window(lo, hi, mid, out, &logged, &e);
        } else if (!err) {
            vt_set_error(VT_ERR_DIVERGED, "result is beyond FP32 range");
            err = VT_ERR_DIVERGED;
        }
    } else if (b->xa && ((!err && logged) || near_max)) {
        uint32_t lo, hi, r = 0;
        vt_round_ends(x, B, 1.0, &lo, &hi);
        if (bits_finite(lo)) {
            vt_xacc a;
            uint32_t rb;
            r = element_eval(b, tc, i, j, decide_rn32, &rb, &a, &c->stats) ? rb : vt_f32_bits(vt_xacc_round32(&a));
        }
        if (bits_finite(lo) && bits_finite(r)) {
            *out = vt_bits_f32(r);
            memset(&e, 0, sizeof e);
            vt_round_ends(x, B, VT_DIRECTION_K, &lo, &hi);
            if (vt_f32_key(hi) - vt_f32_key(lo) == 1 && (r == lo || r == hi)) {
                e.up = (uint8_t)(r == hi);
            } else {
                e.is_value = 1;
                e.value_bits = r;
            }
            logged = 1;
            err = VT_OK;
        } else if (!err) {
            vt_set_error(VT_ERR_DIVERGED, "result is beyond FP32 range");
            err = VT_ERR_DIVERGED;
        }
    }
    if (err) return fail(c, err, o->op_id, idx, NULL, x, B);
    if (!logged) return VT_OK;
    e.index = idx;
    VT_FORWARD_IF_ERROR(vt_oplog_push(o, e));
    if (e.is_value)
        c->stats.logged_val++;
    else
        c->stats.logged_dir++;
    return VT_OK;
}

/* Replay: judge element (i, j) - with its entry e, or without one (e = NULL) - against the exact
 * value; count it, or (lenient) note the fault and carry on. */
static vt_err judge_element(vt_rctx *c, uint32_t op, const vt_bounds *b, tight_cache *tc, size_t i, size_t j,
                            size_t cols, double x, double B, const vt_log_entry *e, float *out)
{
    uint64_t idx = (uint64_t)i * cols + j;
    uint32_t lo, hi, mid;
    double X64 = x;
    vt_err err = element_window(b, tc, &c->stats, i, j, x, B, &lo, &hi, &mid, &X64);
    if (!err) err = judge_window(lo, hi, c->bound.legacy_log, e, out);
    if (err == VT_ERR_IMPLAUSIBLE && c->lenient) return lenient_own(c, op, idx, e, X64, B, out);
    if (err) return fail(c, err, op, idx, e, x, B);
    if (e) {
        c->stats.checked++;
        if (e->is_value)
            c->stats.logged_val++;
        else
            c->stats.logged_dir++;
    }
    return VT_OK;
}

#define VT_BLOCK 64

/* The screening bounds of elements j0 .. j0+nb-1 of row i: the outer product (inflated, when the
 * operands are given, to stay above the computed tight bound despite both being rounded), or the
 * operation's array of bounds. */
static void screen_block(const vt_bounds *b, size_t i, size_t j0, size_t nb, size_t cols, double *Bb)
{
    if (b->kind == VT_BOUNDS_OUTER) {
        double ri = b->coef * b->r[i] * (b->ta ? 1.0 + 0x1p-20 : 1.0);
        for (size_t k = 0; k < nb; k++) Bb[k] = ri * b->c[j0 + k];
    } else {
        memcpy(Bb, b->b + i * cols + j0, nb * sizeof(double));
    }
}

/* One row of an operation with bounds: the fast filter clears blocks; the rest go through the
 * tight bound (GEMM) and the exact rule. In replay, entries (cursor *ek into o) are applied. */
static vt_err round_row(vt_rctx *c, vt_oplog *o, uint64_t *ek, tight_cache *tc, const double *x,
                        const vt_bounds *b, size_t i, size_t cols, float *out)
{
    const int rec = c->mode == VT_RMODE_RECORD;
    double Bb[VT_BLOCK];
    uint8_t cleared[VT_BLOCK];
    const uint64_t row0 = (uint64_t)i * cols;
    for (size_t j0 = 0; j0 < cols; j0 += VT_BLOCK) {
        size_t nb = cols - j0 < VT_BLOCK ? cols - j0 : VT_BLOCK;
        screen_block(b, i, j0, nb, cols, Bb);
        /* entries of this block (replay) */
        uint64_t blk_end = row0 + j0 + nb;
        int has_entry = !rec && *ek < o->n_entries && o->e[*ek].index < blk_end;
        /* record: the trainer's rule (boundaries within 3B of its value); replay: an unlogged
         * element our own value clears by 2B' (B' >= |x' - X|, B <= B') has no boundary within B
         * of the exact value, and is RN32(x') = RN32(X) */
        int ok = rec ? fast_block(x + j0, Bb, out + j0, cleared, nb, VT_UNSTABLE_K, VT_SLOP_RECORD)
                     : fast_block(x + j0, Bb, out + j0, cleared, nb, VT_SCREEN_K, VT_SLOP_RECORD);
        if (ok && !has_entry) continue;
        for (size_t k = 0; k < nb; k++) {
            uint64_t idx = row0 + j0 + k;
            if (!rec && *ek < o->n_entries && o->e[*ek].index == idx) {
                const vt_log_entry *e = &o->e[(*ek)++];
                double B = bound_at(&c->bound, tc, b, i, j0 + k, cols);
                VT_FORWARD_IF_ERROR(judge_element(c, o->op_id, b, tc, i, j0 + k, cols, x[j0 + k], B, e, &out[j0 + k]));
                continue;
            }
            if (cleared[k]) continue;
            int st;
            if (b->kind == VT_BOUNDS_OUTER && b->ta) { /* screening failed: use the tight bound */
                Bb[k] = tight_bound(&c->bound, tc, i, j0 + k);
                st = rec ? fast_stable_record(x[j0 + k], Bb[k], &out[j0 + k])
                         : fast_stable_screen(x[j0 + k], Bb[k], &out[j0 + k]);
                if (st) continue;
            }
            if (rec)
                VT_FORWARD_IF_ERROR(slow_element(c, o, b, tc, i, j0 + k, x[j0 + k], Bb[k], idx, &out[j0 + k]));
            else
                VT_FORWARD_IF_ERROR(
                    judge_element(c, o->op_id, b, tc, i, j0 + k, cols, x[j0 + k], Bb[k], NULL, &out[j0 + k]));
        }
    }
    return VT_OK;
}

/* ---- exact rounding ---- */

/* Every element becomes RN32(exact): cleared by this party's own bound where [x - B, x + B] holds
 * no rounding boundary (then RN32(x) = RN32(exact), RN32 being monotone), computed exactly
 * otherwise. The log is neither written nor read. */
static vt_err round_exact(vt_rctx *c, uint32_t op, const double *x, const vt_bounds *b, size_t rows, size_t cols,
                          float *out)
{
    uint64_t n = (uint64_t)rows * cols;
    c->stats.rounded += n;
    if (b->kind == VT_BOUNDS_ZERO) return round_plain(c, op, x, (size_t)n, out);
    double Bb[VT_BLOCK];
    uint8_t cleared[VT_BLOCK];
    tight_cache tc;
    tight_init(&tc, b, rows, cols);
    vt_err ret = VT_OK;
    for (size_t i = 0; i < rows && !ret; i++) {
        const double *xi = x + i * cols;
        float *oi = out + i * cols;
        for (size_t j0 = 0; j0 < cols && !ret; j0 += VT_BLOCK) {
            size_t nb = cols - j0 < VT_BLOCK ? cols - j0 : VT_BLOCK;
            screen_block(b, i, j0, nb, cols, Bb);
            if (fast_block(xi + j0, Bb, oi + j0, cleared, nb, 1.0, VT_SLOP_RECORD)) continue;
            for (size_t k = 0; k < nb && !ret; k++) {
                if (cleared[k]) continue;
                uint64_t idx = (uint64_t)i * cols + j0 + k;
                double xv = xi[j0 + k], B = Bb[k];
                /* not cleared by the screen. Short GEMM reductions: the tight bound first (its blocked
                 * non-zero masks settle sparse elements cheaply, e.g. exact zeros of ReLU gradients);
                 * then the exact evaluation, whose compensated stage costs about what the tight bound
                 * would on long reductions and decides nearly always */
                if (b->kind == VT_BOUNDS_OUTER && b->ta && b->K <= VT_MBLK_KMAX) {
                    B = tight_bound(&c->bound, &tc, i, j0 + k);
                    if (fast_stable_k(xv, B, 1.0, VT_SLOP_RECORD, &oi[j0 + k])) continue;
                }
                vt_err err = check_inputs(xv, B);
                if (err) {
                    ret = fail(c, err, op, idx, NULL, xv, B);
                    break;
                }
                uint32_t lo, hi;
                vt_round_ends(xv, B, 1.0, &lo, &hi);
                float r;
                if (lo == hi && bits_finite(lo)) {
                    r = vt_bits_f32(lo);
                } else if (b->xa) {
                    vt_xacc a;
                    uint32_t rb;
                    r = element_eval(b, &tc, i, j0 + k, decide_rn32, &rb, &a, &c->stats) ? vt_bits_f32(rb)
                                                                                          : vt_xacc_round32(&a);
                } else {
                    vt_set_error(VT_ERR_UNSUPPORTED, "exact rounding: the operation has no exact evaluator");
                    ret = fail(c, VT_ERR_UNSUPPORTED, op, idx, NULL, xv, B);
                    break;
                }
                if (!isfinite(r)) {
                    vt_set_error(VT_ERR_DIVERGED, isnan(r) ? "result is NaN" : "result is beyond FP32 range");
                    ret = fail(c, VT_ERR_DIVERGED, op, idx, NULL, xv, B);
                    break;
                }
                oi[j0 + k] = r;
            }
        }
    }
    tight_free(&tc);
    return ret;
}

/* A recording party's new operation record for op_id (n elements): ids strictly increase. */
static vt_err record_op(vt_rctx *c, uint32_t op_id, uint64_t n, vt_oplog **o)
{
    VT_RETURN_ERROR_IF(c->log->n_ops && c->log->ops[c->log->n_ops - 1].op_id >= op_id, VT_ERR_ARG,
                       "operation ids must increase within a step (%u after %u)", op_id,
                       c->log->ops[c->log->n_ops - 1].op_id);
    return vt_steplog_add_op(c->log, op_id, n, o);
}

vt_err vt_round(vt_rctx *c, uint32_t op_id, const double *x, const vt_bounds *b, size_t rows, size_t cols,
                float *out)
{
    static const vt_bounds zero = {.kind = VT_BOUNDS_ZERO};
    if (!b) b = &zero;
    VT_RETURN_ERROR_IF(!c->log, VT_ERR_ARG, "rounding context has no step (call vt_rctx_begin_step)");
    VT_RETURN_ERROR_IF(cols && rows > SIZE_MAX / cols, VT_ERR_LIMIT, "operation %u: element count overflows",
                       op_id);
    VT_RETURN_ERROR_IF(b->kind == VT_BOUNDS_OUTER && (!b->r || !b->c), VT_ERR_ARG, "outer bounds need r and c");
    VT_RETURN_ERROR_IF(b->kind == VT_BOUNDS_ARRAY && !b->b, VT_ERR_ARG, "array bounds need b");
    uint64_t n = (uint64_t)rows * cols;
    if (c->bound.rounding == VT_ROUNDING_EXACT) return round_exact(c, op_id, x, b, rows, cols, out);

    vt_oplog *o;
    if (c->mode == VT_RMODE_RECORD) {
        VT_FORWARD_IF_ERROR(record_op(c, op_id, n, &o));
    } else {
        if (c->cursor >= c->log->n_ops) {
            vt_set_error(VT_ERR_MISMATCH, "the log has no record for this operation");
            return fail(c, VT_ERR_MISMATCH, op_id, 0, NULL, 0.0, 0.0);
        }
        o = &c->log->ops[c->cursor];
        if (o->op_id != op_id || o->n_elems != n) {
            vt_set_error(VT_ERR_MISMATCH, "the log's next record is for operation %u with %llu elements, not %llu",
                         o->op_id, (unsigned long long)o->n_elems, (unsigned long long)n);
            return fail(c, VT_ERR_MISMATCH, op_id, 0, NULL, 0.0, 0.0);
        }
        c->cursor++;
        for (uint64_t k = 0; k < o->n_entries; k++)
            if (o->e[k].index >= n || (k && o->e[k].index <= o->e[k - 1].index)) {
                vt_set_error(VT_ERR_MISMATCH, "log entries out of order or out of range");
                return fail(c, VT_ERR_MISMATCH, op_id, o->e[k].index, &o->e[k], 0.0, 0.0);
            }
    }
    c->stats.rounded += n;
    if (b->kind == VT_BOUNDS_ZERO && (c->mode == VT_RMODE_RECORD || o->n_entries == 0))
        return round_plain(c, op_id, x, (size_t)n, out);
    uint64_t ek = 0;
    if (b->kind == VT_BOUNDS_ZERO) {
        /* replay of an exact operation that carries entries: only a value entry equal to our
         * own result is plausible (harmless); anything else is rejected by the replay rule */
        VT_FORWARD_IF_ERROR(round_plain(c, op_id, x, (size_t)n, out));
        for (uint64_t k = 0; k < o->n_entries; k++) {
            const vt_log_entry *e = &o->e[k];
            VT_FORWARD_IF_ERROR(judge_element(c, op_id, b, NULL, (size_t)(e->index / cols), (size_t)(e->index % cols),
                                              cols, x[e->index], 0.0, e, &out[e->index]));
        }
        return VT_OK;
    }
    tight_cache tc;
    tight_init(&tc, b, rows, cols);
    vt_err err = VT_OK;
    for (size_t i = 0; i < rows && !err; i++) err = round_row(c, o, &ek, &tc, x + i * cols, b, i, cols, out + i * cols);
    tight_free(&tc);
    return err;
}

/* ---- the accelerator's GEMM epilogue: applying its decisions (vt_epilogue.h) ---- */

static vt_err epi_fail(vt_rctx *c, uint32_t op, uint64_t idx, const vt_epi_res *r)
{
    vt_err code = VT_ERR_DIVERGED;
    switch (r->code) {
    case VTI_EL_NAN: vt_set_error(code, "result is NaN"); break;
    case VTI_EL_BAD_BOUND: vt_set_error(code, "error bound is not finite (%g)", r->B); break;
    case VTI_EL_RANGE:
        if (c->bound.rounding == VT_ROUNDING_LOG && vt_hd_isfinite(r->x))
            vt_set_error(code, "result %.17g is beyond FP32 range", r->x); /* vt_round_record1's message */
        else
            vt_set_error(code, "result is beyond FP32 range");
        break;
    case VTI_EL_LABEL: code = VT_ERR_ARG; vt_set_error(code, "a label is not a class"); break;
    case VTI_EL_STEPS: code = VT_ERR_ARG; vt_set_error(code, "Adam's step count is not a step"); break;
    default:
        code = VT_ERR_INTERNAL;
        vt_set_error(code, "the epilogue's decision for this element is invalid (code %u, entry %u)", r->code,
                     r->entry);
    }
    return fail(c, code, op, idx, NULL, r->x, r->B);
}

vt_err vt_epi_fail(vt_rctx *c, uint32_t op_id, uint64_t index, const vt_epi_res *r)
{
    return epi_fail(c, op_id, index, r);
}

vt_err vt_epi_finish(vt_rctx *c, uint32_t op_id, size_t M, size_t N, uint64_t n, const uint64_t *idx,
                     const vt_epi_res *res, float *out)
{
    VT_RETURN_ERROR_IF(!c->log, VT_ERR_ARG, "rounding context has no step (call vt_rctx_begin_step)");
    VT_RETURN_ERROR_IF(N && M > SIZE_MAX / N, VT_ERR_LIMIT, "operation %u: element count overflows", op_id);
    VT_RETURN_ERROR_IF(c->bound.rounding != VT_ROUNDING_EXACT && c->mode != VT_RMODE_RECORD, VT_ERR_ARG,
                       "operation %u: the GEMM epilogue does not replay a log", op_id);
    uint64_t total = (uint64_t)M * N;
    int rec = c->bound.rounding == VT_ROUNDING_LOG;
    vt_oplog *o = NULL;
    if (rec) VT_FORWARD_IF_ERROR(record_op(c, op_id, total, &o));
    c->stats.rounded += total;
    for (uint64_t f = 0; f < n; f++) {
        const vt_epi_res *r = &res[f];
        VT_RETURN_ERROR_IF(idx[f] >= total || (f && idx[f] <= idx[f - 1]), VT_ERR_INTERNAL,
                           "operation %u: the epilogue's flagged indices are out of order", op_id);
        if (r->eval) c->stats.exact++;
        if (r->eval == 2) c->stats.kulisch++;
        if (r->code != VTI_EL_OK || r->entry > 2 || (!rec && r->entry) || !vti_bits_finite(r->bits))
            return epi_fail(c, op_id, idx[f], r);
        if (out) out[idx[f]] = vt_bits_f32(r->bits);
        if (!r->entry) continue;
        vt_log_entry e = {.index = idx[f], .is_value = (uint8_t)(r->entry == 2), .up = r->up};
        if (e.is_value) {
            e.value_bits = r->bits;
            c->stats.logged_val++;
        } else {
            e.up = r->up;
            c->stats.logged_dir++;
        }
        VT_FORWARD_IF_ERROR(vt_oplog_push(o, e));
    }
    return VT_OK;
}
