/* vt_round.c - the rounding context and its dispatch (vt_rlog.h): a party's context over the steps
 * (vt_rctx_init, vt_rctx_begin_step, vt_rctx_end_step), the report of a failing element as the
 * context's fault, the opening of a recording party's operation record, and vt_round, which sends an
 * operation to exact rounding (rounding/vt_round_exact.h) or to log rounding (vt_round_log.c).
 * docs/rounding.md states the rules. */
#include "vt_round.h"

#include <stdio.h>
#include <string.h>

#include "../common/vt_bytes.h"
#include "vt_round_exact.h"
#include "vt_rctx_int.h"

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

void vti_rctx_note(vt_rctx *c, vt_err code, uint32_t op, uint64_t index, const vt_log_entry *entry, double x,
                   double B)
{
    c->fault.code = code;
    c->fault.step = c->step;
    c->fault.op_id = op;
    c->fault.index = index;
    c->fault.has_entry = entry != NULL;
    if (entry) c->fault.entry = *entry;
    c->fault.own_x = x;
    c->fault.own_bound = B;
    snprintf(c->fault.why, sizeof c->fault.why, "%s", vt_errmsg());
}

vt_err vti_rctx_fail(vt_rctx *c, vt_err code, uint32_t op, uint64_t index, const vt_log_entry *entry, double x,
                     double B)
{
    vti_rctx_note(c, code, op, index, entry, x, B);
    const char *why = c->fault.why; /* not vt_errmsg(): the buffer vt_set_error writes */
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

/* Rounding without any possible entry (B = 0), failures reported as the context's fault. */
vt_err vti_rctx_plain(vt_rctx *c, uint32_t op, const double *x, size_t n, float *out)
{
    vt_elem_fault f;
    vt_err err = vt_round_plain(x, n, out, &f);
    return err ? vti_rctx_fail(c, err, op, f.index, NULL, f.x, f.B) : VT_OK;
}

/* A recording party's new operation record for op_id (n elements): ids strictly increase. */
vt_err vti_rctx_record_op(vt_rctx *c, uint32_t op_id, uint64_t n, vt_oplog **o)
{
    VT_RETURN_ERROR_IF(c->log->n_ops && c->log->ops[c->log->n_ops - 1].op_id >= op_id, VT_ERR_ARG,
                       "operation ids must increase within a step (%u after %u)", op_id,
                       c->log->ops[c->log->n_ops - 1].op_id);
    return vt_steplog_add_op(c->log, op_id, n, o);
}

/* ------------------------------------------------------------- dispatch */

static vt_err round_op(vt_rctx *c, uint32_t op_id, const double *x, const vt_bounds *b, size_t rows, size_t cols,
                       float *out, int pre)
{
    static const vt_bounds zero = {.kind = VT_BOUNDS_ZERO};
    if (!b) b = &zero;
    VT_RETURN_ERROR_IF(!c->log, VT_ERR_ARG, "rounding context has no step (call vt_rctx_begin_step)");
    VT_RETURN_ERROR_IF(cols && rows > SIZE_MAX / cols, VT_ERR_LIMIT, "operation %u: element count overflows",
                       op_id);
    VT_RETURN_ERROR_IF(b->kind == VT_BOUNDS_OUTER && (!b->r || !b->c), VT_ERR_ARG, "outer bounds need r and c");
    VT_RETURN_ERROR_IF(b->kind == VT_BOUNDS_ARRAY && !b->b, VT_ERR_ARG, "array bounds need b");
    uint64_t n = (uint64_t)rows * cols;
    if (c->bound.rounding == VT_ROUNDING_EXACT) { /* rounding/vt_round_exact.h */
        c->stats.rounded += n;
        if (pre) return VT_OK; /* zero bounds: out is RN32(x), every element finite */
        vt_elem_fault f;
        vt_err err = vt_round_exact_op(&c->bound, x, b, rows, cols, out, &c->stats.exact, &c->stats.kulisch, &f);
        return err ? vti_rctx_fail(c, err, op_id, f.index, NULL, f.x, f.B) : VT_OK;
    }
    return vti_round_log(c, op_id, x, b, rows, cols, out); /* vt_round_log.c (converts again) */
}

vt_err vt_round(vt_rctx *c, uint32_t op_id, const double *x, const vt_bounds *b, size_t rows, size_t cols,
                float *out)
{
    return round_op(c, op_id, x, b, rows, cols, out, 0);
}

vt_err vt_round_converted(vt_rctx *c, uint32_t op_id, const double *x, size_t rows, size_t cols, float *out, int bad)
{
    return round_op(c, op_id, x, NULL, rows, cols, out, !bad);
}
