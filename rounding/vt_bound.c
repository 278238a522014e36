/* vt_bound.c - the error bounds' CPU entry points (vt_bound.h): the coefficients (written once, in
 * vt_round_hd.h, shared with the CUDA epilogue), the failure probability of the probabilistic
 * bound and the tight bound of one reduction. */
#include "vt_bound.h"

#include <math.h>

#include "vt_round_hd.h"

double vt_bound_coef(const vt_bound_cfg *cfg, uint64_t n) { return vti_bound_coef(cfg, n); }
double vt_bound_coef_panel(uint64_t n, uint64_t kc) { return vti_bound_coef_panel(n, kc); }
int vt_bound_panelled(const vt_bound_cfg *cfg, uint64_t K) { return vti_bound_panelled(cfg, K); }
double vt_bound_exact_scale(double s) { return vti_exact_scale(s); }
double vt_bound_coef_red(const vt_bound_cfg *cfg, uint64_t nnz, uint64_t K) { return vti_bound_coef_red(cfg, nnz, K); }

double vt_bound_failure_prob(const vt_bound_cfg *cfg, uint64_t n)
{
    if (!cfg || cfg->mode != VT_BOUND_PROBABILISTIC || n <= 1) return 0.0;
    double lambda = cfg->lambda > 0 ? cfg->lambda : VT_DEFAULT_LAMBDA;
    double q = (1.0 - VTI_U) * lambda;
    double p = 2.0 * (double)n * exp(-0.5 * q * q);
    return p > 1.0 ? 1.0 : p;
}

/* The tight bound of one reduction: vti_bound_of_terms (vt_round_hd.h, shared with the GPU). */
double vt_bound_of_terms(const vt_bound_cfg *cfg, size_t K, const float *a, size_t inca, const float *b,
                         size_t incb)
{
    /* the contiguous cases with constant strides, so that the compiler can vectorise them */
    if (inca == 1 && incb == 1) return vti_bound_of_terms(cfg, K, a, 1, b, 1);
    if (inca == 1 && incb == 0) return vti_bound_of_terms(cfg, K, a, 1, b, 0);
    return vti_bound_of_terms(cfg, K, a, inca, b, incb);
}

/* vti_bound_of_terms over the products themselves (|x_k| = |a_k b_k| exactly, so the same lanes
 * add the same values and the exactness test sees the same u): contiguous doubles, which the
 * compiler vectorises (an AVX2 clone where the processor has it; both clones compute the same IEEE
 * results, lane by lane). */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx2", "default")))
#endif
double vt_bound_of_products(const vt_bound_cfg *cfg, size_t K, const double *x)
{
    double sl[4] = {0, 0, 0, 0};
    uint64_t nz[4] = {0, 0, 0, 0};
    size_t whole = K - K % 4, k = 0;
    for (; k < whole; k += 4)
        for (size_t l = 0; l < 4; l++) {
            double p = fabs(x[k + l]);
            sl[l] += p;
            nz[l] += p != 0.0;
        }
    for (; k < K; k++) {
        double p = fabs(x[k]);
        sl[0] += p;
        nz[0] += p != 0.0;
    }
    const double s = (sl[0] + sl[1]) + (sl[2] + sl[3]);
    const uint64_t nnz = (nz[0] + nz[1]) + (nz[2] + nz[3]);
    if (nnz <= 1) return 0.0;
    const double scale = vti_exact_scale(s);
    if (scale != 0.0) {
        /* in blocks, stopping after the first block with a product that fails the test: the same
         * answer as the whole pass, which usually fails within the first terms */
        int ok = 1;
        for (k = 0; k < K && ok; k += 64) {
            const size_t k1 = K - k < 64 ? K : k + 64;
            for (size_t t = k; t < k1; t++) {
                double u = fabs(x[t]) * scale;
                ok &= (u >= 0x1p52) | (((u + 0x1p52) - 0x1p52) == u);
            }
        }
        if (ok) return 0.0;
    }
    return vti_bound_coef_red(cfg, nnz, K) * s;
}
