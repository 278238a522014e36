/* vt_rctx_int.h - private to rounding/: what the context's files share - the report of a
 * failing element as the context's fault, the opening of a recording party's operation record,
 * the rounding of elements whose bound is 0 (vt_round.c), and log rounding of one operation
 * (vt_round_log.c), which vt_round dispatches to. */
#ifndef VT_RCTX_INT_H
#define VT_RCTX_INT_H

#include "vt_round.h"

/* Records element `index` of operation op as the context's fault (code, entry: its log entry or NULL;
 * x and B: this party's value and bound), with vt_errmsg() as the reason; returns nothing. */
void vti_rctx_note(vt_rctx *c, vt_err code, uint32_t op, uint64_t index, const vt_log_entry *entry, double x,
                   double B);
/* Records the failure of element `index` of operation op (entry: its log entry, or NULL; x and B:
 * this party's value and bound) in c->fault, with the message vt_errmsg() holds, and returns code
 * with the message prefixed by the step, operation and index. */
vt_err vti_rctx_fail(vt_rctx *c, vt_err code, uint32_t op, uint64_t index, const vt_log_entry *entry, double x,
                     double B);
/* A recording party's new operation record for op_id (n elements): ids strictly increase. */
vt_err vti_rctx_record_op(vt_rctx *c, uint32_t op_id, uint64_t n, vt_oplog **o) VT_WARN_UNUSED;
/* fl32 of n elements whose bound is 0; a non-finite one is reported as the context's fault. */
vt_err vti_rctx_plain(vt_rctx *c, uint32_t op, const double *x, size_t n, float *out) VT_WARN_UNUSED;
/* vt_round in log rounding (record or replay), after vt_round's checks. */
vt_err vti_round_log(vt_rctx *c, uint32_t op_id, const double *x, const vt_bounds *b, size_t rows, size_t cols,
                     float *out) VT_WARN_UNUSED;

#endif
