/* vt_epi_finish.c - stage 4 of the GEMM epilogue (vt_epilogue.h): applying the decisions that the
 * accelerator (or its CPU twin, vt_epilogue.c) made for the elements its screen did not clear - the
 * results, the operation's log record, the counts and the first failure, as vt_round reports them.
 * Linked into the programs, not into the CUDA plugin, which calls the programs' copy. */
#include "vt_epilogue.h"

#include "../common/vt_bytes.h"
#include "vt_rctx_int.h"

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
    return vti_rctx_fail(c, code, op, idx, NULL, r->x, r->B);
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
    if (rec) VT_FORWARD_IF_ERROR(vti_rctx_record_op(c, op_id, total, &o));
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
