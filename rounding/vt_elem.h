/* vt_elem.h - the per-element rounding rules on the CPU (docs/rounding.md 5-6): the ordered key of
 * FP32 values, the interval factors of the rules, the ends of an element's interval
 * (vt_round_ends), the screening filter over a block of elements and the rounding of elements
 * whose bound is 0. The rules themselves are written once, for the CPU and the device, in
 * vt_round_hd.h; this header is their CPU face, which the rounding context (rounding_log/) and
 * exact rounding (vt_round_exact.h) call. Nothing here knows about the step log. */
#ifndef VT_ELEM_H
#define VT_ELEM_H

#include <stddef.h>
#include <stdint.h>

#include "../common/vt_error.h"
#include "../common/vt_hd.h"
#include "vt_bound.h"

/* Ordered key: monotone map of FP32 bit patterns (-inf < ... < -0 < +0 < ... < +inf)
 * to consecutive unsigned integers; -0 and +0 are adjacent. */
VT_HDI uint32_t vt_f32_key(uint32_t bits)
{
    return (bits & 0x80000000u) ? ~bits : (bits | 0x80000000u);
}

/* Interval factors of the rules (docs/rounding.md 5). */
/* Judged against the exact value, the trainer's rule needs only 2W (docs/rounding.md 5, Lemmas
 * A and B: [X - B, X + B] lies inside [x - 2B, x + 2B]); until the exact judgement it was 3 and 9. */
#define VT_UNSTABLE_K 2.0   /* record: unstable (logged) when ends_2 differ */
#define VT_DIRECTION_K 2.0  /* record: direction entry when ends_2 are adjacent */
#define VT_SCREEN_K 2.0     /* replay: an unlogged element whose own ends_2 agree needs no judgement */

/* FP32 results of the two ends of [x - k*Bw, x + k*Bw] with the working bound
 * Bw = B + |x|*2^-50 (0 when B = 0), each end first moved one FP64 step outward
 * so the interval can only widen. */
void vt_round_ends(double x, double B, double k, uint32_t *lo_bits, uint32_t *hi_bits);

/* VT_ERR_DIVERGED with its message when x is NaN or B is not a finite non-negative number. */
vt_err vt_elem_check(double x, double B) VT_WARN_UNUSED;

/* The element that failed, for the caller's report (the rounding context's vt_fault): its index
 * within the operation, its FP64 value and its bound. The error and its message are set. */
typedef struct {
    uint64_t index;
    double x, B;
} vt_elem_fault;

/* Elements are screened in blocks of VT_BLOCK within a row. */
#define VT_BLOCK 64

/* The screening bounds Bb[0..nb) of elements j0 .. j0+nb-1 of row i: the outer product (inflated,
 * when the operands are given, to stay above the computed tight bound despite both being rounded),
 * or the operation's array of bounds. */
void vt_screen_bounds(const vt_bounds *b, size_t i, size_t j0, size_t nb, size_t cols, double *Bb);

/* The fast filter (vti_screen1, docs/rounding.md 6) over n elements with factor k: out[i] =
 * fl32(x[i]) and cleared[i] = 1 for each element whose ends_k certainly agree. Returns 1 when every
 * element is cleared. */
int vt_screen_block(const double *x, const double *B, float *out, uint8_t *cleared, size_t n, double k,
                    double slop);

/* Rounding of n elements whose bound is 0: out[k] = fl32(x[k]); VT_ERR_DIVERGED, the first
 * element that is not finite in *f, when one is NaN or beyond FP32 range. */
vt_err vt_round_plain(const double *x, size_t n, float *out, vt_elem_fault *f) VT_WARN_UNUSED;
/* RN32 of x[0..n) into out (vt_round_plain's conversion, one thread); 1 when one of them is not finite */
int vt_round_convert(const double *x, size_t n, float *out);

#endif
