/* cert_nets.h - the certificate tests' random networks and exact evaluation (test_cert.c,
 * test_cert_samples.c): random MLPs in the form of cert/vt_cert.h and, with MPFR (VT_HAVE_MPFR), the
 * exact margins of an MLP at an FP32 input in both semantics the bounds claim. Header-only: every
 * function static inline. */
#ifndef CERT_NETS_H
#define CERT_NETS_H

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../cert/vt_cert.h"
#include "vt_test.h"

static inline double cert_uni(vt_rng *r) { return (double)(vt_rng_next(r) >> 11) * 0x1p-53; }

/* A random MLP of L layers, widths w[0..L]: weights uniform in +-scale/sqrt(fan-in) (with mix_exp > 0
 * each weight also scaled by 2^e, e uniform in [-mix_exp, mix_exp]: huge and tiny weights in one
 * row), biases in +-0.3. store[2k], store[2k+1] receive layer k's allocations (free them). */
static inline void cert_random_net(vt_rng *r, vt_cert_net *n, float **store, uint32_t L, const uint32_t *w, double scale,
                                   int mix_exp)
{
    memset(n, 0, sizeof *n);
    n->L = L;
    for (uint32_t k = 0; k <= L; k++) n->n[k] = w[k];
    for (uint32_t k = 1; k <= L; k++) {
        float *W = malloc((size_t)w[k - 1] * w[k] * sizeof *W), *b = malloc(w[k] * sizeof *b);
        if (!W || !b) abort();
        for (size_t i = 0; i < (size_t)w[k - 1] * w[k]; i++) {
            double v = (2 * cert_uni(r) - 1) * scale / sqrt(w[k - 1]);
            if (mix_exp > 0) v = ldexp(v, (int)(vt_rng_next(r) % (uint64_t)(2 * mix_exp + 1)) - mix_exp);
            W[i] = (float)v;
        }
        for (uint32_t j = 0; j < w[k]; j++) b[j] = (float)((2 * cert_uni(r) - 1) * 0.3);
        n->W[k] = W, n->b[k] = b;
        store[2 * k] = W, store[2 * k + 1] = b;
    }
}

#ifdef VT_HAVE_MPFR
#include <mpfr.h>

#define CERT_PREC 2000 /* exact for these sizes: products of FP32 and sums of a few dozen terms */

/* The exact margins out[j] = a_L[label] - a_L[j] at x (FP32 inputs), real (deployed = 0) or deployed
 * (z rounded to FP32, then a = RN32(z + b)), and (sg not NULL) the sign of every hidden ReLU input:
 * sg[k][j] = 1 when a_k[j] >= 0 (hidden widths at most 32). Returns 0 when every MPFR operation was exact
 * (the caller's proof that CERT_PREC sufficed), 1 otherwise. */
static inline int cert_exact_signs(const vt_cert_net *n, const float *x, uint32_t label, int deployed, mpfr_t *out,
                                   int (*sg)[32])
{
    uint32_t maxw = 0;
    for (uint32_t k = 0; k <= n->L; k++) maxw = n->n[k] > maxw ? n->n[k] : maxw;
    mpfr_t *h = malloc(maxw * sizeof *h), *a = malloc(maxw * sizeof *a), t;
    if (!h || !a) abort();
    int inexact = 0;
    for (uint32_t i = 0; i < maxw; i++) mpfr_init2(h[i], CERT_PREC), mpfr_init2(a[i], CERT_PREC);
    mpfr_init2(t, CERT_PREC);
    for (uint32_t i = 0; i < n->n[0]; i++) mpfr_set_flt(h[i], x[i], MPFR_RNDN);
    for (uint32_t k = 1; k <= n->L; k++) {
        uint32_t in = n->n[k - 1], o = n->n[k];
        for (uint32_t j = 0; j < o; j++) {
            mpfr_set_zero(a[j], 1);
            for (uint32_t i = 0; i < in; i++) {
                inexact |= mpfr_mul_d(t, h[i], n->W[k][(size_t)i * o + j], MPFR_RNDN) != 0;
                inexact |= mpfr_add(a[j], a[j], t, MPFR_RNDN) != 0;
            }
            if (deployed) {
                float g = mpfr_get_flt(a[j], MPFR_RNDN);
                mpfr_set_flt(a[j], g + n->b[k][j], MPFR_RNDN); /* RN32(g + b): one FP32 addition */
            } else {
                inexact |= mpfr_add_d(a[j], a[j], n->b[k][j], MPFR_RNDN) != 0;
            }
        }
        for (uint32_t j = 0; j < o; j++) {
            if (sg && k < n->L) sg[k][j] = mpfr_sgn(a[j]) >= 0;
            if (k < n->L && mpfr_sgn(a[j]) < 0) mpfr_set_zero(h[j], 1);
            else mpfr_set(h[j], a[j], MPFR_RNDN);
        }
    }
    for (uint32_t j = 0; j < n->n[n->L]; j++) inexact |= mpfr_sub(out[j], h[label], h[j], MPFR_RNDN) != 0;
    for (uint32_t i = 0; i < maxw; i++) mpfr_clear(h[i]), mpfr_clear(a[i]);
    mpfr_clear(t);
    free(h), free(a);
    return inexact;
}

static inline int cert_exact_margins(const vt_cert_net *n, const float *x, uint32_t label, int deployed, mpfr_t *out)
{
    return cert_exact_signs(n, x, label, deployed, out, NULL);
}
#endif

#endif
