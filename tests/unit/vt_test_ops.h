/* vt_test_ops.h - what the tests of single operation kinds against MPFR share (test_losses, test_act):
 * random FP32 values of every exponent, one operation run in exact rounding or in log rounding (recorded,
 * then replayed from its log), and whether an MPFR reference lies too near an FP32 rounding boundary to
 * decide RN32. Header-only (static functions): include it once, after <mpfr.h> when VT_TEST_MPFR is
 * defined. */
#ifndef VT_TEST_OPS_H
#define VT_TEST_OPS_H

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/vt_ops.h"
#include "rounding/vt_round.h"
#include "vt_test.h"

/* a normal FP32 value of exponent in [lo_exp, hi_exp] (below -126: a subnormal), either sign */
static inline float vt_test_rand_float(vt_rng *r, int lo_exp, int hi_exp)
{
    int e = lo_exp + (int)(vt_rng_next(r) % (uint64_t)(hi_exp - lo_exp + 1));
    float f = ldexpf((float)(0x800000u | (uint32_t)(vt_rng_next(r) & 0x7fffffu)) * 0x1p-23f, e);
    return (vt_rng_next(r) & 1) ? -f : f;
}

/* operation 1 of p on arena (its output 0, nout FP32 values, in class VT_TC_GRAD: arena[VT_TC_GRAD] is
 * set here) into out: exact rounding (mode 0), or log rounding recorded then replayed from the log (mode
 * 1: both passes must give out's bits); shard: a split batch, or NULL */
static inline vt_err vt_test_run_op(const vt_program *p, uint8_t **arena, vt_shard *shard, int mode, float *out,
                                    size_t nout)
{
    const size_t n = p->t[p->op[1].in[0]].n > nout ? p->t[p->op[1].in[0]].n : nout;
    double *x64 = malloc(n * sizeof *x64);
    float *again = malloc(nout * sizeof *again);
    if (!x64 || !again) {
        free(x64), free(again);
        return VT_ERR_NOMEM;
    }
    vt_steplog log;
    vt_steplog_init(&log, 1);
    vt_err e = VT_OK;
    for (int pass = 0; pass < (mode ? 2 : 1) && !e; pass++) {
        vt_rctx rctx;
        vt_rctx_init(&rctx, pass ? VT_RMODE_REPLAY : VT_RMODE_RECORD,
                     (vt_bound_cfg){.mode = VT_BOUND_PROVABLE, .rounding = mode ? VT_ROUNDING_LOG : VT_ROUNDING_EXACT});
        e = vt_rctx_begin_step(&rctx, 1, &log);
        arena[VT_TC_GRAD] = (uint8_t *)(pass ? again : out);
        vt_opctx c;
        memset(&c, 0, sizeof c);
        c.prog = p, c.arena = arena, c.o = &p->op[1], c.op_id = 1, c.step = 1, c.rctx = &rctx, c.s.x64 = x64;
        c.shard = shard;
        if (!e) e = vt_opkind_get(c.o->kind)->exec(&c);
        if (!e) e = vt_rctx_end_step(&rctx);
    }
    if (!e && mode && memcmp(out, again, nout * sizeof *out) != 0)
        e = vt_set_error(VT_ERR_MISMATCH, "the replay of the log gives other bits");
    vt_steplog_free(&log);
    free(x64), free(again);
    return e;
}

#ifdef VT_TEST_MPFR
/* 1 when v (a real value computed at prec bits from transcendental functions) lies within 2^-bits of its
 * size from an FP32 rounding boundary: its RN32 is then not decided by this reference */
static inline int vt_test_near_boundary(mpfr_t v, unsigned bits, mpfr_prec_t prec)
{
    if (!mpfr_number_p(v) || mpfr_zero_p(v)) return 0;
    float lo = mpfr_get_flt(v, MPFR_RNDD), hi = mpfr_get_flt(v, MPFR_RNDU);
    if (lo == hi || !isfinite(lo) || !isfinite(hi)) return 0;
    mpfr_t m, d;
    mpfr_inits2(prec, m, d, (mpfr_ptr)0);
    mpfr_set_flt(m, lo, MPFR_RNDN);
    mpfr_add_d(m, m, (double)hi, MPFR_RNDN);
    mpfr_div_2ui(m, m, 1, MPFR_RNDN);
    mpfr_sub(d, v, m, MPFR_RNDN);
    mpfr_abs(d, d, MPFR_RNDN);
    mpfr_abs(m, v, MPFR_RNDN);
    mpfr_div_2ui(m, m, bits, MPFR_RNDN);
    int near = mpfr_cmp(d, m) < 0;
    mpfr_clears(m, d, (mpfr_ptr)0);
    return near;
}
#endif

#endif
