/* vt_round_exact.c - exact rounding of an operation (vt_round_exact.h): the screen by this party's
 * own bound, the tight bound for short GEMM reductions, and RN32 of the exact value (vt_eval.h)
 * for every element the screen cannot clear. */
#include "vt_round_exact.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "../common/vt_bytes.h"
#include "../common/vt_par.h"
#include "vt_eval.h"
#include "vt_round_hd.h"
#include "vt_tight.h"

static vt_err elem_fail(vt_elem_fault *f, vt_err code, uint64_t idx, double x, double B)
{
    f->index = idx;
    f->x = x;
    f->B = B;
    return code;
}

/* Every element becomes RN32(exact): cleared by this party's own bound where [x - B, x + B] holds
 * no rounding boundary (then RN32(x) = RN32(exact), RN32 being monotone), computed exactly
 * otherwise. */
static vt_err round_rows(const vt_bound_cfg *cfg, const double *x, const vt_bounds *b, size_t rows, size_t cols,
                         size_t r0, size_t r1, float *out, uint64_t *n_exact, uint64_t *n_kulisch, vt_elem_fault *f)
{
    double Bb[VT_BLOCK];
    uint8_t cleared[VT_BLOCK];
    vt_tight tc;
    vt_tight_init(&tc, b, rows, cols);
    vt_err ret = VT_OK;
    for (size_t i = r0; i < r1 && !ret; i++) {
        const double *xi = x + i * cols;
        float *oi = out + i * cols;
        for (size_t j0 = 0; j0 < cols && !ret; j0 += VT_BLOCK) {
            size_t nb = cols - j0 < VT_BLOCK ? cols - j0 : VT_BLOCK;
            vt_screen_bounds(b, i, j0, nb, cols, Bb);
            if (vt_screen_block(xi + j0, Bb, oi + j0, cleared, nb, 1.0, VT_SLOP_RECORD)) continue;
            for (size_t k = 0; k < nb && !ret; k++) {
                if (cleared[k]) continue;
                uint64_t idx = (uint64_t)i * cols + j0 + k;
                double xv = xi[j0 + k], B = Bb[k];
                /* not cleared by the screen. Short GEMM reductions: the tight bound first (its blocked
                 * non-zero masks settle sparse elements cheaply, e.g. exact zeros of ReLU gradients);
                 * then the exact evaluation, whose compensated stage costs about what the tight bound
                 * would on long reductions and decides nearly always */
                if (vt_bounds_tight(b) && b->K <= VT_MBLK_KMAX) {
                    B = vt_tight_bound(cfg, &tc, i, j0 + k);
                    if (vti_screen1(xv, B, 1.0, VT_SLOP_RECORD, &oi[j0 + k])) continue;
                }
                vt_err err = vt_elem_check(xv, B);
                if (err) {
                    ret = elem_fail(f, err, idx, xv, B);
                    break;
                }
                uint32_t lo, hi;
                vt_round_ends(xv, B, 1.0, &lo, &hi);
                float r;
                if (lo == hi && vti_bits_finite(lo)) {
                    r = vt_bits_f32(lo);
                } else if (b->xa) {
                    vt_xacc a;
                    uint32_t rb;
                    r = vt_eval_element(b, &tc, i, j0 + k, vt_decide_rn32, &rb, &a, n_exact, n_kulisch)
                            ? vt_bits_f32(rb)
                            : vt_xacc_round32(&a);
                } else {
                    vt_set_error(VT_ERR_UNSUPPORTED, "exact rounding: the operation has no exact evaluator");
                    ret = elem_fail(f, VT_ERR_UNSUPPORTED, idx, xv, B);
                    break;
                }
                if (!isfinite(r)) {
                    vt_set_error(VT_ERR_DIVERGED, isnan(r) ? "result is NaN" : "result is beyond FP32 range");
                    ret = elem_fail(f, VT_ERR_DIVERGED, idx, xv, B);
                    break;
                }
                oi[j0 + k] = r;
            }
        }
    }
    vt_tight_free(&tc);
    return ret;
}

/* ------------------------------------------------------------ rows over threads (vt_par.h) */

typedef struct {
    const vt_bound_cfg *cfg;
    const double *x;
    const vt_bounds *b;
    size_t rows, cols;
    float *out;
    uint64_t ne[VT_PAR_MAX], nk[VT_PAR_MAX];
    vt_err err[VT_PAR_MAX];
    vt_elem_fault f[VT_PAR_MAX];
    char msg[VT_PAR_MAX][240];
} rows_job;

static void rows_part(void *ctx, size_t lo, size_t hi, int part)
{
    rows_job *j = ctx;
    j->ne[part] = j->nk[part] = 0;
    j->err[part] = round_rows(j->cfg, j->x, j->b, j->rows, j->cols, lo, hi, j->out, &j->ne[part], &j->nk[part],
                              &j->f[part]);
    if (j->err[part]) snprintf(j->msg[part], sizeof j->msg[part], "%s", vt_errmsg()); /* this thread's message */
}

/* Rows split over the threads: each element's result is its own, so the bits are the thread
 * count's whatever it is; the failure reported is the first element's in row-major order (the
 * parts are contiguous and each stops at its first), its message carried to the caller's thread. */
vt_err vt_round_exact_op(const vt_bound_cfg *cfg, const double *x, const vt_bounds *b, size_t rows, size_t cols,
                         float *out, uint64_t *n_exact, uint64_t *n_kulisch, vt_elem_fault *f)
{
    uint64_t n = (uint64_t)rows * cols;
    if (b->kind == VT_BOUNDS_ZERO) return vt_round_plain(x, (size_t)n, out, f);
    if (vt_par_threads() <= 1 || n < 65536)
        return round_rows(cfg, x, b, rows, cols, 0, rows, out, n_exact, n_kulisch, f);
    rows_job *j = malloc(sizeof *j);
    if (!j) return round_rows(cfg, x, b, rows, cols, 0, rows, out, n_exact, n_kulisch, f);
    j->cfg = cfg, j->x = x, j->b = b, j->rows = rows, j->cols = cols, j->out = out;
    int parts = vt_par_for(rows, 32768 / cols + 1, rows_part, j);
    vt_err ret = VT_OK;
    for (int p = 0; p < parts; p++) {
        *n_exact += j->ne[p], *n_kulisch += j->nk[p];
        if (!ret && j->err[p]) {
            ret = j->err[p];
            *f = j->f[p];
            vt_set_error(ret, "%s", j->msg[p]);
        }
    }
    free(j);
    return ret;
}
