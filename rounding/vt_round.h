/* vt_round.h - the rounding layer's entry: the rounding context and vt_round in both rounding modes,
 * and the log rules of one element. It includes the bounds and the per-element rules (vt_bound.h,
 * vt_elem.h) and the step log (rounding_log/vt_rlog.h), so that the layers above include this one
 * header. See docs/rounding.md and docs/format.md.
 *
 * Every operation of a training step computes in FP64 from FP32 inputs and
 * produces, per output element, an a-priori error bound B valid for any order
 * of evaluation.  vt_round() turns those FP64 results into FP32:
 *   exact rounding (vt_round_exact.h): RN32 of the exact value X, every party; no log;
 *   log rounding (vt_round_log.c):
 *   record (trainer):  RN32 of the exact value X; log every element whose window
 *                      [X-B, X+B] contains a rounding boundary (found among those whose
 *                      [x-2B, x+2B] around the trainer's own x does);
 *   replay (auditor):  judge each entry, and each element without one, against the
 *                      exact value (docs/rounding.md 5), take the logged result, round the rest.
 */
#ifndef VT_ROUND_H
#define VT_ROUND_H

#include <stddef.h>
#include <stdint.h>

#include "../common/vt_error.h"
#include "../common/vt_hd.h"
#include "../rounding_log/vt_rlog.h" /* the step log: vt_log_entry, vt_steplog */
#include "vt_bound.h" /* the bounds: vt_bound_cfg, vt_bounds, the coefficients */
#include "vt_elem.h"  /* the per-element rules: vt_f32_key, the factors, vt_round_ends */

/* --------------------------------------------------------- rounding context */

typedef enum {
    VT_RMODE_RECORD = 0, /* trainer: round to nearest and log unstable elements */
    VT_RMODE_REPLAY = 1, /* auditor/arbiter: check and follow the trainer's log */
} vt_rmode;

/* What went wrong, for reports and dispute evidence. */
typedef struct {
    vt_err code;       /* VT_OK when nothing failed */
    uint64_t step;
    uint32_t op_id;
    uint64_t index;    /* element index within the operation (when known) */
    int has_entry;     /* 1 when a log entry was involved */
    vt_log_entry entry;
    double own_x;      /* this party's FP64 value */
    double own_bound;  /* this party's bound */
    char why[160];
} vt_fault;

typedef struct {
    uint64_t rounded;     /* elements rounded */
    uint64_t exact;       /* elements evaluated exactly (exact rounding; replay: judged) */
    uint64_t kulisch;     /* of those, the ones the compensated sum could not decide (vt_xacc) */
    uint64_t logged_dir;  /* record: direction entries written; replay: applied */
    uint64_t logged_val;  /* record: value entries written; replay: applied */
    uint64_t checked;     /* replay: plausibility checks passed */
} vt_rstats;

typedef struct {
    vt_rmode mode;
    vt_bound_cfg bound;
    uint64_t step;
    vt_steplog *log;   /* record: appended to; replay: read (not owned) */
    uint32_t cursor;   /* replay: next op record to consume */
    vt_rstats stats;
    vt_fault fault;
    /* replay only: on an implausible or missing entry, note the first such fault in `fault` and
     * carry on with this party's own rounding instead of failing (an auditor computing its
     * own version of a disputed run for the dispute game). */
    int lenient;
} vt_rctx;

void vt_rctx_init(vt_rctx *c, vt_rmode mode, vt_bound_cfg bound);
/* Start a step: record mode resets *log to the step; replay mode reads *log
 * (which must be that step's decoded log). */
vt_err vt_rctx_begin_step(vt_rctx *c, uint64_t step, vt_steplog *log) VT_WARN_UNUSED;
/* End a step: replay mode checks every op record was consumed. */
vt_err vt_rctx_end_step(vt_rctx *c) VT_WARN_UNUSED;

/* Round rows*cols FP64 results x (row-major) to FP32 out under the context's
 * rule. Operation ids within a step must be strictly increasing. On failure
 * the context's fault names step, operation, index and why.
 * Exact rounding (c->bound.rounding == VT_ROUNDING_EXACT), record and replay alike: an element
 * whose [x - B, x + B] holds no FP32 rounding boundary is RN32(x), which then equals RN32 of the
 * exact value; any other element is computed by the exact evaluator of *b (VT_ERR_UNSUPPORTED
 * when the operation has none). Nothing is logged or read from the log. */
vt_err vt_round(vt_rctx *c, uint32_t op_id, const double *x, const vt_bounds *b, size_t rows, size_t cols,
                float *out) VT_WARN_UNUSED;

/* Zero bounds rounded as they are formed (the elementwise chains: ops/vt_ops.c vti_chain_round):
 * after vt_round_convert (vt_elem.h) of every element, vt_round_converted does what
 * vt_round(c, op_id, x, NULL, rows, cols, out) does (the counts, the fault of the first element that
 * is not finite), without converting again when bad is 0 (every element's RN32 in out, finite) under
 * exact rounding; under log rounding it is vt_round (whose checks against the log come first, so a
 * caller converts early only under exact rounding). */
vt_err vt_round_converted(vt_rctx *c, uint32_t op_id, const double *x, size_t rows, size_t cols, float *out,
                          int bad) VT_WARN_UNUSED;

/* --- the per-element log rules, exposed for tests and the arbiter (rounding/vt_elem.h: the rest) --- */

/* Record rule for one element. Returns VT_OK, or VT_ERR_DIVERGED when x is NaN,
 * B is not a finite non-negative number, or x rounds beyond FP32 range.
 * *logged is set when an entry was produced in *entry (index left 0). */
vt_err vt_round_record1(double x, double B, float *out, int *logged, vt_log_entry *entry);
/* The record rule of manifest format 5 for one element with exact value X: *out = RN32(X), and an
 * entry exactly when lo = RN32(X - B) and hi = RN32(X + B) differ - a direction entry when they are
 * adjacent, a value entry otherwise. It is a function of X and B alone, so every honest trainer
 * writes the same log. (vt_round applies it only to the elements whose own [x - 2B, x + 2B] holds a
 * boundary, vt_round_record1's logged ones: every other element has lo = hi.) VT_ERR_DIVERGED as
 * vt_round_record1, and for an exact result beyond FP32 range. */
struct vt_xacc_s;
vt_err vt_round_record1_exact(const struct vt_xacc_s *X, double B, float *out, int *logged, vt_log_entry *entry);
/* Replay rule for one element, judged against its exact value X (any order, any party: the
 * same verdict) with B its bound: with lo = RN32(X - B) and hi = RN32(X + B),
 *   - a value entry is plausible when lo <= value <= hi (then *out = value);
 *   - a direction entry when hi is lo or lo's successor (*out = hi for up, lo for down; lo when
 *     lo = hi);
 *   - no entry (entry = NULL) when lo = hi (*out = lo); otherwise "missing log entry";
 *   - unless legacy (manifest formats 1-4): an entry when lo = hi (B = 0 included) is an unneeded
 *     entry, and a value entry when lo and hi are adjacent is one where the rule writes a direction.
 * VT_ERR_IMPLAUSIBLE otherwise; VT_ERR_DIVERGED for NaN or a result beyond FP32 range. */
vt_err vt_round_judge1(const struct vt_xacc_s *X, double B, int legacy, const vt_log_entry *entry, float *out);

#endif
