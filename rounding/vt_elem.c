/* vt_elem.c - the per-element rules' CPU entry points (vt_elem.h): the interval ends, the input
 * check, the screening filter over a block and its bounds, the rounding of elements whose bound
 * is 0. The rules are those of vt_round_hd.h. */
#include "vt_elem.h"

#include <float.h>
#include <math.h>
#include <string.h>

#include "vt_round_hd.h"
#include "../common/vt_par.h"

/* Every bound and rule here assumes that double arithmetic is evaluated in double (no x87
 * excess precision), as on x86-64 SSE2, AArch64 and CUDA: refuse to build otherwise. */
_Static_assert(FLT_EVAL_METHOD == 0, "FP64 operations must be evaluated in FP64 (FLT_EVAL_METHOD 0)");
_Static_assert(DBL_MANT_DIG == 53 && FLT_MANT_DIG == 24, "IEEE-754 binary64 and binary32 are required");

void vt_round_ends(double x, double B, double k, uint32_t *lo_bits, uint32_t *hi_bits)
{
    vti_round_ends(x, B, k, lo_bits, hi_bits);
}

vt_err vt_elem_check(double x, double B)
{
    VT_RETURN_ERROR_IF(isnan(x), VT_ERR_DIVERGED, "result is NaN");
    VT_RETURN_ERROR_IF(!(B >= 0) || isinf(B), VT_ERR_DIVERGED, "error bound is not finite (%g)", B);
    return VT_OK;
}

void vt_screen_bounds(const vt_bounds *b, size_t i, size_t j0, size_t nb, size_t cols, double *Bb)
{
    if (b->kind == VT_BOUNDS_OUTER) {
        double ri = b->coef * b->r[i] * (vt_bounds_tight(b) ? 1.0 + 0x1p-20 : 1.0);
        for (size_t k = 0; k < nb; k++) Bb[k] = ri * b->c[j0 + k];
    } else {
        memcpy(Bb, b->b + i * cols + j0, nb * sizeof(double));
    }
}

/* vti_screen1 inlined, so that the compiler vectorises it; the x86-64 baseline lacks the
 * conversions it needs, so an AVX2 clone is selected at run time where the processor has it; both
 * clones compute the same IEEE results. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx2", "default")))
#endif
int vt_screen_block(const double *x, const double *B, float *out, uint8_t *cleared, size_t n, double k, double slop)
{
    int ok = 1;
    for (size_t i = 0; i < n; i++) {
        int c = vti_screen1(x[i], B[i], k, slop, &out[i]);
        cleared[i] = (uint8_t)c;
        ok &= c;
    }
    return ok;
}

/* vt_round_plain's conversion over the threads (each element its own, the bits the same for every
 * thread count); a part notes whether it met a value that is not finite. */
typedef struct {
    const double *x;
    float *out;
    int bad[VT_PAR_MAX];
} plain_job;

/* in blocks of 8, which the compiler vectorises (an AVX2 clone where the processor has it: the same
 * IEEE conversions); not finite: NaN or beyond FP32's largest value */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx2", "default")))
#endif
int vt_round_convert(const double *x, size_t n, float *out)
{
    int bad = 0;
    size_t k = 0;
    for (; k + 8 <= n; k += 8) {
        int b8 = 0;
        for (size_t l = 0; l < 8; l++) {
            const float r = (float)x[k + l];
            out[k + l] = r;
            b8 |= !(fabsf(r) <= FLT_MAX);
        }
        bad |= b8;
    }
    for (; k < n; k++) {
        const float r = (float)x[k];
        out[k] = r;
        bad |= !(fabsf(r) <= FLT_MAX);
    }
    return bad;
}

static int plain_range(const double *x, size_t lo, size_t hi, float *out)
{
    return vt_round_convert(x + lo, hi - lo, out + lo);
}

static void plain_part(void *ctx, size_t lo, size_t hi, int part)
{
    plain_job *j = ctx;
    j->bad[part] = plain_range(j->x, lo, hi, j->out);
}

vt_err vt_round_plain(const double *x, size_t n, float *out, vt_elem_fault *f)
{
    int bad = 0;
    if (n >= 65536 && vt_par_threads() > 1) {
        plain_job j = {.x = x, .out = out};
        const int parts = vt_par_for(n, 32768, plain_part, &j);
        for (int p = 0; p < parts; p++) bad |= j.bad[p];
    } else
        bad = plain_range(x, 0, n, out);
    if (!bad) return VT_OK; /* else the first element in index order that is not finite */
    for (size_t k = 0; k < n; k++)
        if (!isfinite(out[k])) {
            vt_set_error(VT_ERR_DIVERGED, isnan(x[k]) ? "result is NaN" : "result is beyond FP32 range");
            f->index = k;
            f->x = x[k];
            f->B = 0.0;
            return VT_ERR_DIVERGED;
        }
    return VT_OK;
}
