/* vt_eval.h - the exact value of one output element of an operation (docs/rounding.md 4), from
 * the exact evaluator its vt_bounds names (operands xa, xb and their strides): in two stages, a
 * compensated sum with a rigorous error bound (vt_dot_comp32/64), then, where that cannot decide,
 * vt_xacc (vt_exact.h). What is decided: RN32 of the exact value X (exact rounding, the
 * record rule of formats 1-4), or the element's window lo = RN32(X - B), hi = RN32(X + B) and
 * mid = RN32(X) (the record rule of format 5 and the judgement of log rounding). The counts n_exact
 * (elements evaluated) and n_kulisch (of those, the ones vt_xacc decided) are the rounding
 * context's vt_rstats.exact and .kulisch. */
#ifndef VT_EVAL_H
#define VT_EVAL_H

#include <stddef.h>
#include <stdint.h>

#include "../common/vt_error.h"
#include "vt_bound.h"
#include "vt_exact.h"
#include "vt_tight.h"

/* decide(s, e, ctx): whether [s - e, s + e], which holds the exact value, decides the caller's
 * question (the answer then in ctx). */
typedef int (*vt_decide_fn)(double s, double e, void *ctx);

/* The exact evaluation of element (i, j) of b: the compensated sum - from the FP64 operands that
 * the tight cache t (may be NULL) holds contiguously for a GEMM element whose tight bound it
 * computed, else from the FP32 operands - and decide; where that cannot decide, vt_xacc. Returns 1
 * when decide did (no vt_xacc), 0 when *a holds the exact value instead. */
int vt_eval_element(const vt_bounds *b, vt_tight *t, size_t i, size_t j, vt_decide_fn decide, void *ctx, vt_xacc *a,
                    uint64_t *n_exact, uint64_t *n_kulisch);

/* decide: RN32 of the exact value (ctx: its uint32_t bits). */
int vt_decide_rn32(double s, double e, void *ctx);

/* The window of the exact value X held in X (left unchanged): lo = RN32(X - B), hi = RN32(X + B),
 * mid = RN32(X). */
void vt_xacc_window(const vt_xacc *X, double B, uint32_t *lo, uint32_t *hi, uint32_t *mid);

/* The exact window of element (i, j) with FP64 value x and bound B: lo = RN32(X - B),
 * hi = RN32(X + B) and *mid = RN32(X) for the exact value X (X = x when B = 0: the FP64 result is
 * then exact). *X64 gets a value near X (RN32(X) or RN64(X)) for reports and the lenient replay.
 * VT_ERR_UNSUPPORTED when the operation has no exact evaluator; VT_ERR_DIVERGED when X is NaN. */
vt_err vt_eval_window(const vt_bounds *b, vt_tight *t, uint64_t *n_exact, uint64_t *n_kulisch, size_t i, size_t j,
                      double x, double B, uint32_t *lo, uint32_t *hi, uint32_t *mid, double *X64) VT_WARN_UNUSED;

#endif
