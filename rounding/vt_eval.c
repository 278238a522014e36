/* vt_eval.c - the exact value of one output element of an operation (vt_eval.h): the operands of
 * its exact evaluator, the compensated stage, vt_xacc where that cannot decide, and the two
 * questions asked of it (RN32 of the exact value; the window around it). */
#include "vt_eval.h"

#include <math.h>

#include "../common/vt_bytes.h"
#include "vt_elem.h"
#include "vt_round_hd.h"
#include "vt_xacc_hd.h"

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
    if (b->xa_fill) {
        float buf[VT_XFILL_CHUNK];
        for (size_t k0 = 0; k0 < b->xK; k0 += VT_XFILL_CHUNK) {
            const size_t n = b->xK - k0 < VT_XFILL_CHUNK ? b->xK - k0 : VT_XFILL_CHUNK;
            b->xa_fill(b->xa_ctx, i, k0, n, buf);
            for (size_t u = 0; u < n; u++) vt_xacc_add_prod32(a, buf[u], pb[(k0 + u) * b->xb_sk]);
        }
    } else
        for (size_t k = 0; k < b->xK; k++) vt_xacc_add_prod32(a, pa[k * b->xa_sk], pb[k * b->xb_sk]);
}

/* the compensated stage over an operand read through xa_fill: the same sum, its first operand's
 * entries fetched VT_XFILL_CHUNK at a time (a multiple of the four lanes: term t is always in lane t % 4) */
static void comp_fill(const vt_bounds *b, size_t i, const float *fb, double *s, double *e)
{
    float buf[VT_XFILL_CHUNK];
    const size_t K = b->xK, sk = b->xb_sk;
#define VTI_FILLED(t)                                                                                                  \
    ((t) % VT_XFILL_CHUNK == 0                                                                                         \
         ? b->xa_fill(b->xa_ctx, i, (t), K - (t) < VT_XFILL_CHUNK ? K - (t) : VT_XFILL_CHUNK, buf)                     \
         : (void)0,                                                                                                    \
     (double)buf[(t) % VT_XFILL_CHUNK])
    VT_COMP_DOT(K, t, VTI_FILLED(t) * (double)fb[t * sk], s, e);
#undef VTI_FILLED
}

int vt_eval_element(const vt_bounds *b, vt_tight *t, size_t i, size_t j, vt_decide_fn decide, void *ctx, vt_xacc *a,
                    uint64_t *n_exact, uint64_t *n_kulisch)
{
    (*n_exact)++;
    int have = t && !t->failed && t->bt && t->row == i && t->have && t->have[j] && b->xa == b->ta && b->xK == t->K;
    const double *pa = have ? t->ar : NULL, *pb = have ? t->bt + j * t->K : NULL;
    const float *fa, *fb;
    x_operands(b, i, j, &fa, &fb);
    double s, e;
    if (have) vt_dot_comp64(t->K, pa, pb, &s, &e);
    else if (b->xa_fill) comp_fill(b, i, fb, &s, &e);
    else vt_dot_comp32(b->xK, fa, b->xa_sk, fb, b->xb_sk, &s, &e);
    if (isfinite(s) && isfinite(e) && decide(s, e, ctx)) return 1;
    (*n_kulisch)++;
    if (!have) {
        element_exact(b, i, j, a);
        return 0;
    }
    vt_xacc_init(a);
    for (size_t k = 0; k < t->K; k++) vt_xacc_add(a, pa[k] * pb[k]); /* exact products of FP32 values */
    return 0;
}

int vt_decide_rn32(double s, double e, void *ctx)
{
    uint32_t lo, hi;
    vt_round_ends(s, e, 1.0, &lo, &hi);
    if (lo != hi) return 0;
    *(uint32_t *)ctx = lo;
    return 1;
}

/* decide: the window RN32(X - B), RN32(X + B) and RN32(X) */
typedef struct {
    double B;
    uint32_t lo, hi, mid;
} window_q;
static int decide_window(double s, double e, void *ctx)
{
    window_q *q = ctx;
    return vti_window_decide(s, e, q->B, &q->lo, &q->hi, &q->mid); /* the device's, vt_round_hd.h */
}

void vt_xacc_window(const vt_xacc *X, double B, uint32_t *lo, uint32_t *hi, uint32_t *mid)
{
    vti_xacc_window(X, B, lo, hi, mid);
}

vt_err vt_eval_window(const vt_bounds *b, vt_tight *t, uint64_t *n_exact, uint64_t *n_kulisch, size_t i, size_t j,
                      double x, double B, uint32_t *lo, uint32_t *hi, uint32_t *mid, double *X64)
{
    vt_xacc a;
    if (B == 0 || b->kind == VT_BOUNDS_ZERO) {
        (*n_exact)++;
        vt_xacc_init(&a);
        vt_xacc_add(&a, x);
    } else {
        VT_RETURN_ERROR_IF(!b->xa, VT_ERR_UNSUPPORTED, "the operation has no exact evaluator to judge the log");
        window_q q = {.B = B};
        if (vt_eval_element(b, t, i, j, decide_window, &q, &a, n_exact, n_kulisch)) {
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
    vt_xacc_window(&a, B, lo, hi, mid);
    return VT_OK;
}
