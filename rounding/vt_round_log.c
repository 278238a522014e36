/* vt_round_log.c - log rounding (rounding=log; docs/rounding.md 5): the trainer's record rule and
 * the replay that judges every entry against the exact value.
 *
 * Per element with FP64 value x and bound B >= 0, and the working bound W = B + |x| * 2^-50
 * (B > 0; W = 0 when B = 0), which dominates FP64 rounding slop:
 *   ends_k(x, B) = ( fl32(down(x - k*W)), fl32(up(x + k*W)) ), where down/up move the FP64 result
 *   one step outward (so the computed interval contains the exact one); B = 0 gives [x, x].
 *   window: lo = RN32(X - B), hi = RN32(X + B) of the exact value X (the same for every party).
 *   record: an element whose ends_2 agree is stable (no entry, RN32(x) = RN32(X)); any other is
 *           RN32(X), with an entry exactly when lo != hi (manifest format 5): a direction entry
 *           when they are adjacent, else a value entry. (Formats 1-4: an entry whenever ends_2
 *           differ, a direction entry when ends_2 are adjacent.)
 *   replay: every entry, and every element without one that the replayer's own ends_2 do not
 *           clear, is judged against the window: a direction entry needs hi <= lo + 1, a value
 *           entry lo <= v <= hi, no entry lo = hi; from format 5 an entry with lo = hi, or a value
 *           entry with hi = lo + 1, is refused (unneeded / not the rule's).
 * The screening filter (vt_screen_block) is conservative: an element it calls stable is stable by
 * the specification (proof in docs/rounding.md 6). The exact value comes from rounding/vt_eval.h;
 * the context, its fault reports and the dispatch from vt_round.c. */
#include "vt_round.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../common/vt_bytes.h"
#include "vt_eval.h"
#include "vt_round_hd.h"
#include "vt_tight.h"
#include "vt_rctx_int.h"

/* ---- the record rule on the trainer's own value ---- */

vt_err vt_round_record1(double x, double B, float *out, int *logged, vt_log_entry *entry)
{
    int isv, up;
    int code = vti_record1(x, B, out, logged, &isv, &up);
    VT_FORWARD_IF_ERROR(vt_elem_check(x, B));
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
 * Nothing here depends on the judging party's own value or order (docs/rounding.md 5). */
/* The judgement of one element (entry, or NULL) on its exact window lo, hi. legacy: the rule of
 * manifest formats 1-4, which accepted an entry whose result is forced. */
static vt_err judge_window(uint32_t lo, uint32_t hi, int legacy, const vt_log_entry *entry, float *out)
{
    uint32_t klo = vt_f32_key(lo), khi = vt_f32_key(hi), v;
    if (!entry) {
        VT_RETURN_ERROR_IF(lo != hi, VT_ERR_IMPLAUSIBLE,
                           "missing log entry: a rounding boundary lies within the bound of the exact value, so "
                           "every honest trainer's rule logs this element");
        VT_RETURN_ERROR_IF(!vti_bits_finite(lo), VT_ERR_DIVERGED, "the exact result is beyond FP32 range");
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
        VT_RETURN_ERROR_IF(!vti_bits_finite(v), VT_ERR_IMPLAUSIBLE, "direction entry leads beyond FP32 range");
    } else {
        v = entry->value_bits;
        VT_RETURN_ERROR_IF(!vti_bits_finite(v), VT_ERR_IMPLAUSIBLE, "value entry is not a finite FP32 value");
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
    vt_xacc_window(X, B, &lo, &hi, &mid);
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
    vt_xacc_window(X, B, &lo, &hi, &mid);
    return record_window(lo, hi, mid, out, logged, entry);
}

/* ---- log rounding of an operation ---- */

/* Lenient replay: note the first implausible or missing entry and go on with RN32 of our own
 * value (x: for a judged element, RN32 of the exact value). */
static vt_err lenient_own(vt_rctx *c, uint32_t op, uint64_t idx, const vt_log_entry *e, double x, double B, float *out)
{
    if (c->fault.code == VT_OK) vti_rctx_note(c, VT_ERR_IMPLAUSIBLE, op, idx, e, x, B);
    float r = (float)x;
    VT_RETURN_ERROR_IF(!isfinite(r), VT_ERR_DIVERGED, "training diverged at step %llu, operation %u, index %llu",
                       (unsigned long long)c->step, op, (unsigned long long)idx);
    *out = r;
    return VT_OK;
}

/* Record: the trainer's rule on its own value (may produce an entry). */
static vt_err slow_element(vt_rctx *c, vt_oplog *o, const vt_bounds *b, vt_tight *tc, size_t i, size_t j,
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
        if (vti_bits_finite(lo)) {
            double X64;
            err = vt_eval_window(b, tc, &c->stats.exact, &c->stats.kulisch, i, j, x, B, &lo, &hi, &mid, &X64);
            if (!err) err = record_window(lo, hi, mid, out, &logged, &e);
        } else if (!err) {
            vt_set_error(VT_ERR_DIVERGED, "result is beyond FP32 range");
            err = VT_ERR_DIVERGED;
        }
    } else if (b->xa && ((!err && logged) || near_max)) {
        uint32_t lo, hi, r = 0;
        vt_round_ends(x, B, 1.0, &lo, &hi);
        if (vti_bits_finite(lo)) {
            vt_xacc a;
            uint32_t rb;
            r = vt_eval_element(b, tc, i, j, vt_decide_rn32, &rb, &a, &c->stats.exact, &c->stats.kulisch)
                    ? rb
                    : vt_f32_bits(vt_xacc_round32(&a));
        }
        if (vti_bits_finite(lo) && vti_bits_finite(r)) {
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
    if (err) return vti_rctx_fail(c, err, o->op_id, idx, NULL, x, B);
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
static vt_err judge_element(vt_rctx *c, uint32_t op, const vt_bounds *b, vt_tight *tc, size_t i, size_t j,
                            size_t cols, double x, double B, const vt_log_entry *e, float *out)
{
    uint64_t idx = (uint64_t)i * cols + j;
    uint32_t lo, hi, mid;
    double X64 = x;
    vt_err err = vt_eval_window(b, tc, &c->stats.exact, &c->stats.kulisch, i, j, x, B, &lo, &hi, &mid, &X64);
    if (!err) err = judge_window(lo, hi, c->bound.legacy_log, e, out);
    if (err == VT_ERR_IMPLAUSIBLE && c->lenient) return lenient_own(c, op, idx, e, X64, B, out);
    if (err) return vti_rctx_fail(c, err, op, idx, e, x, B);
    if (e) {
        c->stats.checked++;
        if (e->is_value)
            c->stats.logged_val++;
        else
            c->stats.logged_dir++;
    }
    return VT_OK;
}

/* One row of an operation with bounds: the fast filter clears blocks; the rest go through the
 * tight bound (GEMM) and the exact rule. In replay, entries (cursor *ek into o) are applied. */
static vt_err round_row(vt_rctx *c, vt_oplog *o, uint64_t *ek, vt_tight *tc, const double *x,
                        const vt_bounds *b, size_t i, size_t cols, float *out)
{
    const int rec = c->mode == VT_RMODE_RECORD;
    double Bb[VT_BLOCK];
    uint8_t cleared[VT_BLOCK];
    const uint64_t row0 = (uint64_t)i * cols;
    for (size_t j0 = 0; j0 < cols; j0 += VT_BLOCK) {
        size_t nb = cols - j0 < VT_BLOCK ? cols - j0 : VT_BLOCK;
        vt_screen_bounds(b, i, j0, nb, cols, Bb);
        /* entries of this block (replay) */
        uint64_t blk_end = row0 + j0 + nb;
        int has_entry = !rec && *ek < o->n_entries && o->e[*ek].index < blk_end;
        /* record: the trainer's rule clears an element whose ends_2 agree (no boundary within
         * 2W = 2B + 2|x| 2^-50 of its own value: then no boundary lies within B of the exact value
         * either, Lemma A); replay: an unlogged element whose own ends_2 agree (B' >= |x' - X|,
         * B <= B') has no boundary within B of the exact value, and is RN32(x') = RN32(X) */
        int ok = rec ? vt_screen_block(x + j0, Bb, out + j0, cleared, nb, VT_UNSTABLE_K, VT_SLOP_RECORD)
                     : vt_screen_block(x + j0, Bb, out + j0, cleared, nb, VT_SCREEN_K, VT_SLOP_RECORD);
        if (ok && !has_entry) continue;
        for (size_t k = 0; k < nb; k++) {
            uint64_t idx = row0 + j0 + k;
            if (!rec && *ek < o->n_entries && o->e[*ek].index == idx) {
                const vt_log_entry *e = &o->e[(*ek)++];
                double B = vt_bound_at(&c->bound, tc, b, i, j0 + k, cols);
                VT_FORWARD_IF_ERROR(judge_element(c, o->op_id, b, tc, i, j0 + k, cols, x[j0 + k], B, e, &out[j0 + k]));
                continue;
            }
            if (cleared[k]) continue;
            int st;
            if (vt_bounds_tight(b)) { /* screening failed: use the tight bound */
                Bb[k] = vt_tight_bound(&c->bound, tc, i, j0 + k);
                st = rec ? vti_screen1(x[j0 + k], Bb[k], VT_UNSTABLE_K, VT_SLOP_RECORD, &out[j0 + k])
                         : vti_screen1(x[j0 + k], Bb[k], VT_SCREEN_K, VT_SLOP_RECORD, &out[j0 + k]);
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

/* vt_round in log rounding (vt_rctx_int.h): the operation's log record - opened (record) or
 * checked and consumed (replay) - and its rows. */
vt_err vti_round_log(vt_rctx *c, uint32_t op_id, const double *x, const vt_bounds *b, size_t rows, size_t cols,
                     float *out)
{
    uint64_t n = (uint64_t)rows * cols;
    vt_oplog *o;
    if (c->mode == VT_RMODE_RECORD) {
        VT_FORWARD_IF_ERROR(vti_rctx_record_op(c, op_id, n, &o));
    } else {
        if (c->cursor >= c->log->n_ops) {
            vt_set_error(VT_ERR_MISMATCH, "the log has no record for this operation");
            return vti_rctx_fail(c, VT_ERR_MISMATCH, op_id, 0, NULL, 0.0, 0.0);
        }
        o = &c->log->ops[c->cursor];
        if (o->op_id != op_id || o->n_elems != n) {
            vt_set_error(VT_ERR_MISMATCH, "the log's next record is for operation %u with %llu elements, not %llu",
                         o->op_id, (unsigned long long)o->n_elems, (unsigned long long)n);
            return vti_rctx_fail(c, VT_ERR_MISMATCH, op_id, 0, NULL, 0.0, 0.0);
        }
        c->cursor++;
        for (uint64_t k = 0; k < o->n_entries; k++)
            if (o->e[k].index >= n || (k && o->e[k].index <= o->e[k - 1].index)) {
                vt_set_error(VT_ERR_MISMATCH, "log entries out of order or out of range");
                return vti_rctx_fail(c, VT_ERR_MISMATCH, op_id, o->e[k].index, &o->e[k], 0.0, 0.0);
            }
    }
    c->stats.rounded += n;
    if (b->kind == VT_BOUNDS_ZERO && (c->mode == VT_RMODE_RECORD || o->n_entries == 0))
        return vti_rctx_plain(c, op_id, x, (size_t)n, out);
    uint64_t ek = 0;
    if (b->kind == VT_BOUNDS_ZERO) {
        /* replay of an exact operation that carries entries: only a value entry equal to our
         * own result is plausible (harmless); anything else is rejected by the replay rule */
        VT_FORWARD_IF_ERROR(vti_rctx_plain(c, op_id, x, (size_t)n, out));
        for (uint64_t k = 0; k < o->n_entries; k++) {
            const vt_log_entry *e = &o->e[k];
            VT_FORWARD_IF_ERROR(judge_element(c, op_id, b, NULL, (size_t)(e->index / cols), (size_t)(e->index % cols),
                                              cols, x[e->index], 0.0, e, &out[e->index]));
        }
        return VT_OK;
    }
    vt_tight tc;
    vt_tight_init(&tc, b, rows, cols);
    vt_err err = VT_OK;
    for (size_t i = 0; i < rows && !err; i++) err = round_row(c, o, &ek, &tc, x + i * cols, b, i, cols, out + i * cols);
    vt_tight_free(&tc);
    return err;
}
