/* vt_round_exact.h - exact rounding (rounding=exact) of one operation's output (docs/rounding.md
 * 4): every element becomes RN32 of its exact value, whoever computes it. Nothing is logged or
 * read from a log; the rounding context (rounding_log/vt_rlog.h: vt_round) calls this and reports
 * a failing element as its fault. */
#ifndef VT_ROUND_EXACT_H
#define VT_ROUND_EXACT_H

#include <stddef.h>
#include <stdint.h>

#include "../common/vt_error.h"
#include "vt_bound.h"
#include "vt_elem.h"

/* Round rows*cols FP64 results x (row-major) to FP32 out: an element whose [x - B, x + B] holds no
 * FP32 rounding boundary (B its screening bound, or its tight bound for a short GEMM reduction) is
 * RN32(x), which then equals RN32 of the exact value; any other element is computed by the exact
 * evaluator of *b (vt_eval.h). n_exact and n_kulisch count the exact evaluations (vt_eval.h). On
 * failure (NaN, a non-finite bound or result, VT_ERR_UNSUPPORTED when the operation has no exact
 * evaluator) the error is set and *f names the element. */
vt_err vt_round_exact_op(const vt_bound_cfg *cfg, const double *x, const vt_bounds *b, size_t rows, size_t cols,
                         float *out, uint64_t *n_exact, uint64_t *n_kulisch, vt_elem_fault *f) VT_WARN_UNUSED;

#endif
