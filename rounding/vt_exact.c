/* vt_exact.c - the CPU entry points of vt_xacc (vt_exact.h). Integer arithmetic only, apart
 * from reading a double's bits and building the rounded result from an integer and a power of
 * two (both exact). */
#include "vt_exact.h"

#include <float.h>
#include <math.h>
#include <string.h>

#include "vt_xacc_hd.h"

/* The accumulator and the compensated dot product are written once, in vt_xacc_hd.h, for this
 * library and the CUDA kernels alike; these are their CPU entry points. */
void vt_xacc_init(vt_xacc *a) { vti_xacc_init(a); }
void vt_xacc_add(vt_xacc *a, double x) { vti_xacc_add(a, x); }

void vt_xacc_add_acc(vt_xacc *a, const vt_xacc *b)
{
    vt_xacc t = *b;
    vti_xacc_norm(&t);
    vti_xacc_norm(a);
    for (int l = t.lo; l <= t.hi; l++) a->L[l] += t.L[l];
    if (t.lo < a->lo) a->lo = t.lo;
    if (t.hi > a->hi) a->hi = t.hi;
    a->pending = 1;
    a->n_pinf += t.n_pinf;
    a->n_ninf += t.n_ninf;
    a->n_nan += t.n_nan;
    vti_xacc_norm(a);
}

int vt_xacc_sign(const vt_xacc *a)
{
    double r;
    if (vti_xacc_special(a, &r)) return isnan(r) ? 0 : (r > 0 ? 1 : -1);
    uint32_t D[VT_XACC_LIMBS];
    return vti_xacc_magnitude(a, D);
}

double vt_xacc_round64(const vt_xacc *a) { return vti_xacc_round64(a); }
float vt_xacc_round32(const vt_xacc *a) { return vti_xacc_round32(a); }

double vt_dot_exact64(size_t K, const float *a, size_t inca, const float *b, size_t incb)
{
    vt_xacc acc;
    vti_xacc_dot32(&acc, K, a, inca, b, incb);
    return vti_xacc_round64(&acc);
}

float vt_dot_exact32(size_t K, const float *a, size_t inca, const float *b, size_t incb)
{
    vt_xacc acc;
    vti_xacc_dot32(&acc, K, a, inca, b, incb);
    return vti_xacc_round32(&acc);
}

static void sum_acc(vt_xacc *a, size_t n, const double *x, size_t inc)
{
    vti_xacc_init(a);
    for (size_t k = 0; k < n; k++) vti_xacc_add(a, x[k * inc]);
}

double vt_sum_exact64(size_t n, const double *x, size_t inc)
{
    vt_xacc acc;
    sum_acc(&acc, n, x, inc);
    return vti_xacc_round64(&acc);
}

float vt_sum_exact32(size_t n, const double *x, size_t inc)
{
    vt_xacc acc;
    sum_acc(&acc, n, x, inc);
    return vti_xacc_round32(&acc);
}

void vt_dot_comp64(size_t n, const double *a, const double *b, double *s_out, double *e_out)
{
    VT_COMP_DOT(n, t, a[t] * b[t], s_out, e_out);
}

void vt_dot_comp32(size_t n, const float *a, size_t inca, const float *b, size_t incb, double *s_out, double *e_out)
{
    vti_dot_comp32(n, a, inca, b, incb, s_out, e_out);
}
