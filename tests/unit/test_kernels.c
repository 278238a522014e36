/* test_kernels.c - CPU kernels: every evaluation order and transpose form against
 * an exact reference (the bound must hold for every element), orders against each
 * other, sums, softmax, cross-entropy, portable exp/log against libm, elementwise
 * and optimiser kernels against straightforward references, argument errors. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/vt_kernels.h"
#include "kernels/vt_kernels_hd.h"
#include "rounding/vt_exact.h"
#include "kernels/vt_math.h"
#include "common/vt_par.h"
#include "vt_test.h"

static vt_rng R;

#define VT_MATH_DIGEST 0x3778970bc91489a7ULL

static const vt_bound_cfg PROVABLE = {.mode = VT_BOUND_PROVABLE};

static uint64_t rnd_below(uint64_t n) { return vt_rng_next(&R) % n; }

static uint64_t d2bits(double x)
{
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

static float bits2f(uint32_t u)
{
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

static int same_bits(double a, double b) { return d2bits(a) == d2bits(b); }

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "out of memory\n");
        exit(2);
    }
    return p;
}

/* ---------------------------------------------------------------- data */

enum { D_NORMAL, D_CANCEL, D_WIDE, D_SUBNORMAL, D_ZEROS, D_KINDS };
static const char *const kind_name[D_KINDS] = {"normal", "cancel", "wide", "subnormal", "zeros"};

static float rnd_sign(float x) { return (vt_rng_next(&R) & 1) ? -x : x; }

static float gen_value(int kind)
{
    switch (kind) {
    case D_NORMAL:
    case D_CANCEL:
        return (float)vt_rng_normal(&R);
    case D_WIDE: {
        int ex = (int)rnd_below(121) - 60; /* 2^-60 .. 2^60 */
        return rnd_sign(ldexpf((float)(1.0 + vt_rng_uniform(&R)), ex));
    }
    case D_SUBNORMAL: {
        uint64_t r = rnd_below(10);
        if (r < 4) return rnd_sign(bits2f((uint32_t)(1 + rnd_below(0x7fffff)))); /* subnormal */
        if (r < 6) return rnd_sign(0.0f);
        if (r < 8) return rnd_sign(ldexpf((float)(1.0 + vt_rng_uniform(&R)), -126 + (int)rnd_below(20)));
        return (float)vt_rng_normal(&R);
    }
    default: { /* D_ZEROS */
        uint64_t r = rnd_below(10);
        if (r < 7) return rnd_sign(0.0f);
        return (float)vt_rng_normal(&R);
    }
    }
}

/* opA (M x K) and opB (K x N), canonical row-major. */
static void gen_gemm(int kind, size_t M, size_t N, size_t K, float *opA, float *opB)
{
    for (size_t i = 0; i < M * K; i++) opA[i] = gen_value(kind);
    for (size_t i = 0; i < K * N; i++) opB[i] = gen_value(kind);
    if (kind == D_ZEROS) { /* a whole row of -0 and a whole column of +0 */
        for (size_t k = 0; k < K; k++) opA[k] = -0.0f;
        for (size_t k = 0; k < K; k++) opB[k * N + N - 1] = 0.0f;
    }
    if (kind == D_CANCEL && K >= 2) {
        /* the second half repeats the first with negated, slightly perturbed B:
         * products nearly cancel pairwise (exactly when the perturbation is 0) */
        size_t h = K / 2;
        int exact = rnd_below(3) == 0;
        for (size_t k = h; k < 2 * h; k++) {
            for (size_t i = 0; i < M; i++) opA[i * K + k] = opA[i * K + k - h];
            for (size_t j = 0; j < N; j++) {
                double eps = exact ? 0.0 : ldexp(vt_rng_normal(&R), -20);
                opB[k * N + j] = (float)(-(double)opB[(k - h) * N + j] * (1.0 + eps));
            }
        }
    }
}

static void transpose_f(const float *src, size_t rows, size_t cols, float *dst)
{
    for (size_t r = 0; r < rows; r++)
        for (size_t c = 0; c < cols; c++) dst[c * rows + r] = src[r * cols + c];
}

/* ------------------------------------------------------- exact residuals */

/* Writes p[0..2], q[0..2] (FP32) with sum p_t q_t = -x exactly; returns 0 when x
 * is not an integer multiple of 2^-298 or too large (not the case for sums of
 * products of FP32 values). */
static int split_neg(double x, float *p, float *q)
{
    for (int t = 0; t < 3; t++) p[t] = q[t] = 0.0f;
    if (x == 0.0) return 1;
    if (!isfinite(x)) return 0;
    uint64_t u = d2bits(x);
    int neg = (int)(u >> 63);
    int ex = (int)((u >> 52) & 0x7ff);
    uint64_t m = u & 0x000fffffffffffffULL;
    if (ex) m |= 0x0010000000000000ULL;
    else ex = 1;
    int E = ex - 1075;
    for (int t = 0; t < 3; t++) {
        uint64_t chunk = (m >> (24 * t)) & 0xffffff;
        int Et = E + 24 * t;
        if (chunk == 0) continue;
        while (!(chunk & 1)) {
            chunk >>= 1;
            Et++;
        }
        int a, b;
        if (Et < -149) {
            b = -149;
            a = Et + 149;
        } else if (Et > 104) {
            a = 104;
            b = Et - 104;
        } else {
            a = Et;
            b = 0;
        }
        if (a < -149 || b > 127) return 0;
        p[t] = ldexpf((float)chunk, a);
        q[t] = ldexpf(1.0f, b);
        if (!neg) p[t] = -p[t];
        if ((double)p[t] * (double)q[t] != (neg ? 1.0 : -1.0) * ldexp((double)chunk, Et)) return 0;
    }
    return 1;
}

/* Correctly rounded value of (sum_k a_k b_k) - x, exactly computed. */
static float *res_a, *res_b;
static size_t res_cap;
static double exact_residual(size_t K, const float *a, size_t inca, const float *b, size_t incb, double x, int *ok)
{
    if (res_cap < K + 3) {
        free(res_a);
        free(res_b);
        res_cap = K + 3;
        res_a = xmalloc(res_cap * sizeof(float));
        res_b = xmalloc(res_cap * sizeof(float));
    }
    for (size_t k = 0; k < K; k++) {
        res_a[k] = a[k * inca];
        res_b[k] = b[k * incb];
    }
    *ok = split_neg(x, res_a + K, res_b + K);
    return vt_dot_exact64(K + 3, res_a, 1, res_b, 1);
}

/* --------------------------------------------------------------- GEMM */

static const int forms[4][2] = {{0, 0}, {0, 1}, {1, 0}, {1, 1}};

static long n_gemm_elems, n_blas_form_diff;
static double worst_ratio_gemm, worst_ratio_sum; /* max |err| / bound seen */

/* Checks every element of out (M x N, from order o, form f; f = 4: vt_gemm_plain) against the
 * exact product: |x - exact| <= B = coef * rownorm * colnorm, and never -0. Returns the number
 * of failures (the first few are printed; `before` failures were seen already). */
static int check_gemm_exact(int kind, vt_order o, int f, size_t M, size_t N, size_t K, const float *opA,
                            const float *opB, const double *out, double coef0, const double *rn0, const double *cn0,
                            int before)
{
    int fails = 0;
    for (size_t i = 0; i < M; i++)
        for (size_t j = 0; j < N; j++) {
            double x = out[i * N + j];
            double B = coef0 * rn0[i] * cn0[j];
            int ok;
            double r = exact_residual(K, opA + i * K, 1, opB + j, N, x, &ok);
            n_gemm_elems++;
            if (B > 0 && fabs(r) / B > worst_ratio_gemm) worst_ratio_gemm = fabs(r) / B;
            if (!ok || !(fabs(r) <= B)) {
                fails++;
                if (before + fails < 10)
                    fprintf(stderr, "  gemm %s %s K=%zu M=%zu N=%zu (%zu,%zu) form %d: x=%a err=%a B=%a ok=%d\n",
                            kind_name[kind], vt_order_name(o), K, M, N, i, j, f, x, r, B, ok);
            }
            if (x == 0.0 && signbit(x)) {
                fails++;
                if (before + fails < 10) fprintf(stderr, "  gemm %s: -0 result\n", vt_order_name(o));
            }
        }
    return fails;
}

static void test_gemm_case(int kind, size_t M, size_t N, size_t K)
{
    float *opA = xmalloc(M * K * sizeof(float)), *opB = xmalloc(K * N * sizeof(float));
    float *At = xmalloc(M * K * sizeof(float)), *Bt = xmalloc(K * N * sizeof(float));
    gen_gemm(kind, M, N, K, opA, opB);
    transpose_f(opA, M, K, At); /* K x M */
    transpose_f(opB, K, N, Bt); /* N x K */
    double *C[VT_ORDER_COUNT], *Cf = xmalloc(M * N * sizeof(double));
    double *rn = xmalloc(M * sizeof(double)), *cn = xmalloc(N * sizeof(double));
    double *rn0 = xmalloc(M * sizeof(double)), *cn0 = xmalloc(N * sizeof(double));
    double coef0 = 0;
    const double ntol = (double)(K + 2) * 0x1p-53;
    int fails = 0;

    for (int o = 0; o < VT_ORDER_COUNT; o++) {
        C[o] = xmalloc(M * N * sizeof(double));
        vt_exec e;
        vt_exec_init(&e, (vt_order)o, PROVABLE, 0x5eed0000u + (uint64_t)K);
        for (int f = 0; f < 4; f++) {
            int tA = forms[f][0], tB = forms[f][1];
            double *out = f == 0 ? C[o] : Cf;
            vt_bounds bd;
            memset(&bd, 0, sizeof bd);
            vt_err rc = vt_gemm(&e, tA, tB, M, N, K, tA ? At : opA, tB ? Bt : opB, out, rn, cn, &bd);
            CHECK(rc == VT_OK, "vt_gemm %s: %s", vt_order_name((vt_order)o), vt_errmsg());
            if (rc != VT_OK) continue;
            CHECK(bd.kind == VT_BOUNDS_OUTER && bd.r == rn && bd.c == cn && bd.coef >= 0.0, "bounds descriptor");
            if (o == 0 && f == 0) {
                memcpy(rn0, rn, M * sizeof(double));
                memcpy(cn0, cn, N * sizeof(double));
                coef0 = bd.coef;
                /* norms: within (K+2)u relative of the exact 2-norms (an FP64 sum of K exact
                 * squares: gamma_(K-1); sqrt halves it and adds its own rounding u) */
                for (size_t i = 0; i < M; i++) {
                    double ex = sqrt(vt_dot_exact64(K, opA + i * K, 1, opA + i * K, 1));
                    CHECK(fabs(rn[i] - ex) <= ntol * ex, "rownorm %zu: %.17g vs %.17g", i, rn[i], ex);
                }
                for (size_t j = 0; j < N; j++) {
                    double ex = sqrt(vt_dot_exact64(K, opB + j, N, opB + j, N));
                    CHECK(fabs(cn[j] - ex) <= ntol * ex, "colnorm %zu: %.17g vs %.17g", j, cn[j], ex);
                }
            } else {
                for (size_t i = 0; i < M; i++)
                    if (!(fabs(rn[i] - rn0[i]) <= 2 * ntol * rn0[i])) fails++;
                for (size_t j = 0; j < N; j++)
                    if (!(fabs(cn[j] - cn0[j]) <= 2 * ntol * cn0[j])) fails++;
                CHECK(bd.coef == coef0, "coef differs between calls");
            }
            int need_exact = f == 0;
            if (f != 0) {
                int same = memcmp(out, C[o], M * N * sizeof(double)) == 0;
                if (vt_gemm_order_uses_blas((vt_order)o)) {
                    /* no BLAS promises that a transposed form sums like the explicit transpose
                     * (OpenBLAS and BLIS pick kernels per form and per CPU): a different result
                     * must still lie within the bound of the exact value */
                    if (!same) n_blas_form_diff++;
                    need_exact = !same;
                } else {
                    /* the project's own loops: one summation order for every form, by construction */
                    CHECK(same, "%s K=%zu form (%d,%d): transposed form differs from explicit transpose",
                          vt_order_name((vt_order)o), K, tA, tB);
                }
            }
            if (need_exact)
                fails += check_gemm_exact(kind, (vt_order)o, f, M, N, K, opA, opB, out, coef0, rn0, cn0, fails);
        }
        vt_exec_free(&e);
    }
    /* all orders pairwise within 2B */
    for (int o1 = 0; o1 < VT_ORDER_COUNT; o1++)
        for (int o2 = o1 + 1; o2 < VT_ORDER_COUNT; o2++)
            for (size_t i = 0; i < M; i++)
                for (size_t j = 0; j < N; j++) {
                    double B = coef0 * rn0[i] * cn0[j];
                    if (!(fabs(C[o1][i * N + j] - C[o2][i * N + j]) <= 2 * B)) fails++;
                }
    /* vt_gemm_plain computes what vt_gemm computes: the same bits in the project's own orders;
     * through the BLAS (which promises no bitwise repeatability across calls or thread
     * counts), a value within the bound of the exact one */
    for (int o = 0; o < VT_ORDER_COUNT; o++) {
        vt_exec e;
        vt_exec_init(&e, (vt_order)o, PROVABLE, 0x5eed0000u + (uint64_t)K);
        CHECK_OK(vt_gemm_plain(&e, 0, 0, M, N, K, opA, opB, Cf));
        if (memcmp(Cf, C[o], M * N * sizeof(double)) != 0) {
            if (vt_gemm_order_uses_blas((vt_order)o))
                fails += check_gemm_exact(kind, (vt_order)o, 4, M, N, K, opA, opB, Cf, coef0, rn0, cn0, fails);
            else
                fails++;
        }
        vt_exec_free(&e);
    }
    CHECK(fails == 0, "gemm %s M=%zu N=%zu K=%zu: %d failures", kind_name[kind], M, N, K, fails);
    for (int o = 0; o < VT_ORDER_COUNT; o++) free(C[o]);
    free(Cf);
    free(rn);
    free(cn);
    free(rn0);
    free(cn0);
    free(opA);
    free(opB);
    free(At);
    free(Bt);
}

/* Panel evaluation of long reductions (format 3, every order, both rounding modes): every
 * GEMM element and every column sum within the panel bound of its exact value, both the screening
 * form (coef r c) and the tight one (vt_bound_coef_red * sum|a b|, the sum taken exactly here);
 * with whole_reduction set (formats 1-2) nothing is panelled. */
static void test_gemm_panel(void)
{
    static const size_t Ks[] = {513, 1024, 4099, 65536};
    long checked = 0;
    for (int whole = 0; whole < 2; whole++)
        for (size_t t = 0; t < sizeof Ks / sizeof Ks[0]; t++)
            for (int kind = 0; kind < D_KINDS; kind++)
                for (int o = 0; o < VT_ORDER_COUNT; o++) {
                    size_t K = Ks[t], M = 1 + rnd_below(3), N = 1 + rnd_below(3);
                    if (whole && (t != 1 || kind != 0)) continue; /* the switch itself: one case */
                    if (o == VT_ORDER_SORTED && K > 4099) M = N = 1;
                    const vt_bound_cfg cfg = {.mode = VT_BOUND_PROVABLE,
                                              .rounding = (kind + o) % 2 ? VT_ROUNDING_EXACT : VT_ROUNDING_LOG,
                                              .whole_reduction = whole};
                    float *A = xmalloc(M * K * sizeof(float)), *B = xmalloc(K * N * sizeof(float));
                    float *aA = xmalloc(K * sizeof(float)), *aB = xmalloc(K * sizeof(float));
                    double *C = xmalloc(M * N * sizeof(double)), *rn = xmalloc(M * sizeof(double)),
                           *cn = xmalloc(N * sizeof(double));
                    gen_gemm(kind, M, N, K, A, B);
                    vt_exec e;
                    vt_exec_init(&e, (vt_order)o, cfg, 7);
                    vt_bounds bd;
                    CHECK_OK(vt_gemm(&e, 0, 0, M, N, K, A, B, C, rn, cn, &bd));
                    CHECK(vt_gemm_panel(&e, K) == (!whole && K > 2 * VT_PANEL), "panel evaluation for K=%zu", K);
                    CHECK(whole ? bd.coef == vt_bound_coef(&cfg, K) : bd.coef < vt_bound_coef(&cfg, K),
                          "panel coefficient below the generic one (whole=%d)", whole);
                    for (size_t i = 0; i < M; i++)
                        for (size_t j = 0; j < N; j++) {
                            uint64_t nnz = 0;
                            for (size_t k = 0; k < K; k++) {
                                aA[k] = fabsf(A[i * K + k]), aB[k] = fabsf(B[k * N + j]);
                                nnz += aA[k] * aB[k] != 0;
                            }
                            double sabs = vt_dot_exact64(K, aA, 1, aB, 1);
                            int ok;
                            double r = exact_residual(K, A + i * K, 1, B + j, N, C[i * N + j], &ok);
                            double Bt = vt_bound_coef_red(&cfg, nnz, K) * sabs;
                            CHECK(ok && fabs(r) <= Bt && fabs(r) <= bd.coef * rn[i] * cn[j],
                                  "%s K=%zu kind %d (%zu,%zu): error %a beyond the panel bound %a",
                                  vt_order_name((vt_order)o), K, kind, i, j, r, Bt);
                            checked++;
                        }
                    /* the column sums of B (K terms each) */
                    double *bs = xmalloc(N * sizeof(double));
                    CHECK_OK(vt_colsum(&e, K, N, B, C, bs, &bd));
                    for (size_t j = 0; j < N; j++) {
                        static const float one = 1.0f;
                        uint64_t nnz = 0;
                        for (size_t k = 0; k < K; k++) aB[k] = fabsf(B[k * N + j]), nnz += aB[k] != 0;
                        double sabs = vt_dot_exact64(K, aB, 1, &one, 0);
                        int ok;
                        double r = exact_residual(K, B + j, N, &one, 0, C[j], &ok);
                        CHECK(ok && fabs(r) <= vt_bound_coef_red(&cfg, nnz, K) * sabs && bs[j] >= fabs(r),
                              "colsum %s K=%zu kind %d col %zu: error %a beyond its bound %a", vt_order_name((vt_order)o),
                              K, kind, j, r, bs[j]);
                        checked++;
                    }
                    free(bs);
                    vt_exec_free(&e);
                    free(A), free(B), free(aA), free(aB), free(C), free(rn), free(cn);
                }
    /* a large output: the panelled BLAS orders work in blocks of rows (M * N > 2^18); sampled elements */
    {
        const size_t M = 700, N = 512, K = 300;
        const vt_bound_cfg cfg = {.mode = VT_BOUND_PROVABLE, .rounding = VT_ROUNDING_EXACT};
        float *A = xmalloc(M * K * sizeof(float)), *B = xmalloc(K * N * sizeof(float));
        double *C = xmalloc(M * N * sizeof(double)), *rn = xmalloc(M * sizeof(double)), *cn = xmalloc(N * sizeof(double));
        float *aA = xmalloc(K * sizeof(float)), *aB = xmalloc(K * sizeof(float));
        gen_gemm(1, M, N, K, A, B);
        for (int o = 0; o < VT_ORDER_COUNT; o++) {
            if (!vt_gemm_order_uses_blas((vt_order)o)) continue;
            vt_exec e;
            vt_exec_init(&e, (vt_order)o, cfg, 3);
            vt_bounds bd;
            CHECK_OK(vt_gemm(&e, 0, 0, M, N, K, A, B, C, rn, cn, &bd));
            for (int t = 0; t < 300; t++) {
                size_t i = rnd_below(M), j = rnd_below(N);
                uint64_t nnz = 0;
                for (size_t k = 0; k < K; k++) {
                    aA[k] = fabsf(A[i * K + k]), aB[k] = fabsf(B[k * N + j]);
                    nnz += aA[k] * aB[k] != 0;
                }
                int ok;
                double r = exact_residual(K, A + i * K, 1, B + j, N, C[i * N + j], &ok);
                double Bt = vt_bound_coef_red(&cfg, nnz, K) * vt_dot_exact64(K, aA, 1, aB, 1);
                CHECK(ok && fabs(r) <= Bt && fabs(r) <= bd.coef * rn[i] * cn[j],
                      "row blocks: %s (%zu,%zu): error %a beyond the panel bound %a", vt_order_name((vt_order)o), i, j, r,
                      Bt);
                checked++;
            }
            vt_exec_free(&e);
        }
        free(A), free(B), free(C), free(rn), free(cn), free(aA), free(aB);
    }
    printf("panelled reductions: %ld elements within the panel bound\n", checked);
}

static void test_gemm(void)
{
    static const size_t Ks[] = {1, 2, 3, 5, 8, 9, 16, 17, 31, 64, 100, 255, 1024, 4099, 65536};
    for (size_t t = 0; t < sizeof Ks / sizeof Ks[0]; t++) {
        size_t K = Ks[t];
        for (int kind = 0; kind < D_KINDS; kind++) {
            size_t mx = K >= 4096 ? 3 : 5;
            size_t M = 1 + rnd_below(mx), N = 1 + rnd_below(mx);
            test_gemm_case(kind, M, N, K);
        }
    }
    /* a few larger shapes (BLAS blocking, multi-threading, the PAIRWISE stack) */
    test_gemm_case(D_NORMAL, 37, 29, 300);
    test_gemm_case(D_WIDE, 64, 65, 129);
    test_gemm_case(D_CANCEL, 17, 70, 1000);
    printf("gemm: %ld element checks against the exact value, largest |err|/bound %.3g; BLAS-backed transposed "
           "forms that differ bitwise from the explicit transpose (allowed; each checked against the bound): %ld\n", n_gemm_elems, worst_ratio_gemm, n_blas_form_diff);
}

/* The project's own GEMM loops (PAIRWISE row-vectorised among them) follow exactly the sum
 * kernels' order: compare with vt_rowsum over the products (each product exact), element by
 * element. Wide-exponent terms make nearly every partial sum round, so a different tree shows.
 * The BLAS-backed orders sum as the library likes: they are checked against the bound. */
static long n_tree_rounded;
static void test_pairwise_tree(void)
{
    static const size_t Ks[] = {1, 7, 8, 9, 24, 40, 100, 1000, 4097};
    for (size_t t = 0; t < sizeof Ks / sizeof Ks[0]; t++) {
        size_t K = Ks[t];
        float *a = xmalloc(K * sizeof(float)), *b = xmalloc(K * sizeof(float));
        for (size_t k = 0; k < K; k++) {
            a[k] = (float)ldexp(vt_rng_normal(&R), (int)rnd_below(61) - 30);
            b[k] = 1.0f; /* products a_k * 1 = a_k: the row sum over the same terms */
        }
        for (int o = 0; o < VT_ORDER_COUNT; o++) {
            vt_exec e;
            vt_exec_init(&e, (vt_order)o, PROVABLE, 77);
            double c, rn, cn, out, bb;
            vt_bounds bd;
            CHECK_OK(vt_gemm(&e, 0, 0, 1, 1, K, a, b, &c, &rn, &cn, &bd));
            CHECK_OK(vt_rowsum(&e, 1, K, a, &out, &bb, &bd));
            if (!vt_gemm_order_uses_blas((vt_order)o)) {
                CHECK(same_bits(c, out), "%s K=%zu: gemm %a vs rowsum %a", vt_order_name((vt_order)o), K, c, out);
            } else {
                int ok;
                double r = exact_residual(K, a, 1, b, 1, c, &ok);
                double B = vt_bound_coef(&e.bound, K) * rn * cn;
                CHECK(ok && fabs(r) <= B, "%s K=%zu: gemm %a off the exact sum by %a > bound %a",
                      vt_order_name((vt_order)o), K, c, r, B);
            }
            if (K > 8) n_tree_rounded += !same_bits(c, vt_dot_exact64(K, a, 1, b, 1));
            vt_exec_free(&e);
        }
        free(a);
        free(b);
    }
    CHECK(n_tree_rounded > 0, "pairwise tree: no sum ever rounded, so a different tree would go unseen");
    printf("pairwise tree: %ld order sums differ from the correctly rounded sum (the tree is exercised)\n",
           n_tree_rounded);
}

/* ---------------------------------------------------------------- sums */

static void test_sums_case(int kind, size_t M, size_t N)
{
    float *X = xmalloc(M * N * sizeof(float));
    for (size_t i = 0; i < M * N; i++) X[i] = gen_value(kind);
    if (kind == D_CANCEL) /* rows nearly cancel in pairs (both directions) */
        for (size_t i = 1; i < M; i += 2)
            for (size_t j = 0; j < N; j++) X[i * N + j] = -X[(i - 1) * N + j] * (float)(1.0 + ldexp(vt_rng_normal(&R), -20));
    if (kind == D_ZEROS)
        for (size_t i = 0; i < M * N; i++) X[i] = rnd_sign(0.0f);
    float *one = xmalloc((M > N ? M : N) * sizeof(float));
    for (size_t i = 0; i < (M > N ? M : N); i++) one[i] = 1.0f;
    int fails = 0;
    double *cs[VT_ORDER_COUNT], *rs[VT_ORDER_COUNT];
    double *cb = xmalloc(N * sizeof(double)), *rb = xmalloc(M * sizeof(double));
    for (int o = 0; o < VT_ORDER_COUNT; o++) {
        vt_exec e;
        vt_exec_init(&e, (vt_order)o, PROVABLE, 99);
        cs[o] = xmalloc(N * sizeof(double));
        rs[o] = xmalloc(M * sizeof(double));
        vt_bounds bd;
        CHECK_OK(vt_colsum(&e, M, N, X, cs[o], cb, &bd));
        CHECK(bd.kind == VT_BOUNDS_ARRAY && bd.b == cb, "colsum bounds");
        CHECK_OK(vt_rowsum(&e, M, N, X, rs[o], rb, &bd));
        CHECK(bd.kind == VT_BOUNDS_ARRAY && bd.b == rb, "rowsum bounds");
        for (size_t j = 0; j < N; j++) {
            int ok;
            double r = exact_residual(M, X + j, N, one, 1, cs[o][j], &ok);
            if (cb[j] > 0 && fabs(r) / cb[j] > worst_ratio_sum) worst_ratio_sum = fabs(r) / cb[j];
            if (!ok || !(fabs(r) <= cb[j]) || (cs[o][j] == 0.0 && signbit(cs[o][j]))) {
                if (fails < 5)
                    fprintf(stderr, "  colsum %s %s M=%zu col %zu: x=%a err=%a b=%a\n", kind_name[kind],
                            vt_order_name((vt_order)o), M, j, cs[o][j], r, cb[j]);
                fails++;
            }
        }
        for (size_t i = 0; i < M; i++) {
            int ok;
            double r = exact_residual(N, X + i * N, 1, one, 1, rs[o][i], &ok);
            if (rb[i] > 0 && fabs(r) / rb[i] > worst_ratio_sum) worst_ratio_sum = fabs(r) / rb[i];
            if (!ok || !(fabs(r) <= rb[i]) || (rs[o][i] == 0.0 && signbit(rs[o][i]))) {
                if (fails < 5)
                    fprintf(stderr, "  rowsum %s %s N=%zu row %zu: x=%a err=%a b=%a\n", kind_name[kind],
                            vt_order_name((vt_order)o), N, i, rs[o][i], r, rb[i]);
                fails++;
            }
        }
        vt_exec_free(&e);
    }
    for (int o1 = 0; o1 < VT_ORDER_COUNT; o1++)
        for (int o2 = o1 + 1; o2 < VT_ORDER_COUNT; o2++) {
            for (size_t j = 0; j < N; j++)
                if (!(fabs(cs[o1][j] - cs[o2][j]) <= 2 * cb[j])) fails++;
            for (size_t i = 0; i < M; i++)
                if (!(fabs(rs[o1][i] - rs[o2][i]) <= 2 * rb[i])) fails++;
        }
    CHECK(fails == 0, "sums %s M=%zu N=%zu: %d failures", kind_name[kind], M, N, fails);
    for (int o = 0; o < VT_ORDER_COUNT; o++) {
        free(cs[o]);
        free(rs[o]);
    }
    free(cb);
    free(rb);
    free(one);
    free(X);
}

static void test_sums(void)
{
    static const size_t ns[] = {1, 2, 3, 4, 5, 8, 9, 33, 100, 1000, 65536};
    for (size_t t = 0; t < sizeof ns / sizeof ns[0]; t++)
        for (int kind = 0; kind < D_KINDS; kind++) {
            size_t other = 1 + rnd_below(ns[t] >= 1000 ? 3 : 6);
            test_sums_case(kind, ns[t], other); /* long columns */
            test_sums_case(kind, other, ns[t]); /* long rows */
        }
    printf("sums: largest |err|/bound %.3g\n", worst_ratio_sum);
}

/* vt_reduce over the threads (docs/architecture.md "Threads"): column sums (through the column
 * products), row sums, column dot products and a batched strided reduction give the same result and
 * bound bits with 1, 2 and 3 threads in every order; the first differing element is named. */
static void test_reduce_threads(void)
{
    static const size_t shapes[][2] = {{1, 7}, {3, 1}, {64, 96}, {1000, 5}, {5, 1000}, {4099, 33}, {33, 4099}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        const size_t M = shapes[s][0], N = shapes[s][1];
        float *X = xmalloc(M * N * sizeof(float)), *Y = xmalloc(M * N * sizeof(float));
        for (size_t i = 0; i < M * N; i++) X[i] = gen_value(i % 7 == 0 ? D_WIDE : D_NORMAL), Y[i] = gen_value(D_NORMAL);
        const size_t most = M > N ? M : N;
        double *o[3][4], *b[3][4];
        for (int o_ = 0; o_ < VT_ORDER_COUNT; o_++) {
            for (int t = 0; t < 3; t++) {
                vt_par_set_threads(t + 1);
                vt_exec e;
                vt_exec_init(&e, (vt_order)o_, PROVABLE, 7);
                for (int k = 0; k < 4; k++) o[t][k] = xmalloc(most * sizeof(double)), b[t][k] = xmalloc(most * sizeof(double));
                vt_bounds bd;
                CHECK_OK(vt_colsum(&e, M, N, X, o[t][0], b[t][0], &bd));
                CHECK_OK(vt_rowsum(&e, M, N, X, o[t][1], b[t][1], &bd));
                CHECK_OK(vt_coldot(&e, M, N, X, Y, o[t][2], b[t][2], &bd));
                /* rows of a batched operand: M rows in batches of 2 (row r of batch g at g*N*2 + r*N) */
                if (M % 2 == 0)
                    CHECK_OK(vt_reduce(&e, M, 1, N, (vt_strided){X, N, 0, 1, 2, 2 * N}, (vt_strided){Y, N, 0, 1, 2, 2 * N},
                                       o[t][3], b[t][3], &bd));
                vt_exec_free(&e);
            }
            const size_t len[4] = {N, M, N, M % 2 == 0 ? M : 0};
            for (int k = 0; k < 4; k++)
                for (int t = 1; t < 3; t++)
                    for (size_t i = 0; i < len[k]; i++)
                        if (memcmp(&o[t][k][i], &o[0][k][i], sizeof(double)) || memcmp(&b[t][k][i], &b[0][k][i], sizeof(double))) {
                            CHECK(0, "reduce %d (%zu x %zu, %s), %d threads: element %zu is %a (bound %a), one thread's %a (%a)", k,
                                  M, N, vt_order_name((vt_order)o_), t + 1, i, o[t][k][i], b[t][k][i], o[0][k][i], b[0][k][i]);
                            break;
                        }
            for (int t = 0; t < 3; t++)
                for (int k = 0; k < 4; k++) free(o[t][k]), free(b[t][k]);
        }
        free(X);
        free(Y);
    }
    vt_par_set_threads(1);
}

/* the reference path of one reduction of n terms (dot: 0 a sum, 1 a dot product with y, 2 a product
 * with the one value y[0]): the operands at stride 2 (a.sk = 2), which only the per-reduction loop over
 * its own products takes (reduce_part: vti_sum_red, vt_bound_of_products) */
static void reduce_ref(vt_exec *e, size_t n, const float *x, size_t sx, const float *y, size_t sy, int dot, double *r,
                       double *rb)
{
    float *x2 = xmalloc(2 * n * sizeof(float)), *y2 = xmalloc(2 * n * sizeof(float));
    for (size_t i = 0; i < n; i++)
        x2[2 * i] = x[i * sx], y2[2 * i] = dot == 0 ? 1.0f : dot == 1 ? y[i * sy] : y[0], x2[2 * i + 1] = y2[2 * i + 1] = NAN;
    vt_bounds bd;
    CHECK_OK(vt_reduce(e, 1, 1, n, (vt_strided){x2, 0, 0, 2, 0, 0}, (vt_strided){y2, 0, 0, 2, 0, 0}, r, rb, &bd));
    free(x2), free(y2);
}

/* the same bits, or both NaN (a NaN's payload is the compiler's choice of operand order) */
static int same_or_nan(double a, double b) { return same_bits(a, b) || (isnan(a) && isnan(b)); }

/* The BLAS order's fused reductions (vt_reduce): column reductions of a row-major matrix, columns a
 * multiple of 8, in one pass over the rows; row reductions of contiguous rows, one pass per row; no
 * products formed, the exactness test from the lowest set bits. Against the reference path (reduce_ref):
 * the same sum and bound bits for sums, dot products and products with one value (global average
 * pooling's 1/HW), panelled or not (lengths around 2 VT_PANEL), every data kind, small integers (exact
 * sums: bound 0), a NaN and an infinity among the terms, both bound modes, with 1 and 3 threads; the
 * first differing column or row is named. */
static void test_fused_reductions(void)
{
    static const size_t Ms[] = {1, 2, 3, 5, 127, 128, 129, 256, 257, 258, 300, 1000, 4099};
    static const size_t Ns[] = {8, 16, 24};
    const vt_bound_cfg cfgs[3] = {{.mode = VT_BOUND_PROVABLE},
                                  {.mode = VT_BOUND_PROVABLE, .whole_reduction = 1},
                                  {.mode = VT_BOUND_PROBABILISTIC}};
    enum { K_INT = D_KINDS, K_NONFINITE = D_KINDS + 1, K_ALL };
    long checked = 0;
    for (size_t mi = 0; mi < sizeof Ms / sizeof Ms[0]; mi++)
        for (size_t ni = 0; ni < sizeof Ns / sizeof Ns[0]; ni++)
            for (int kind = 0; kind < K_ALL; kind++)
                for (int c = 0; c < 3; c++) {
                    const size_t M = Ms[mi], N = Ns[ni];
                    float *X = xmalloc(M * N * sizeof(float)), *Y = xmalloc(M * N * sizeof(float));
                    for (size_t i = 0; i < M * N; i++) {
                        X[i] = kind == K_INT ? (float)((int)rnd_below(9) - 4) : gen_value(kind == K_NONFINITE ? D_NORMAL : kind);
                        Y[i] = kind == K_INT ? (float)((int)rnd_below(5) - 2) : gen_value(i % 5 ? D_NORMAL : D_SUBNORMAL);
                    }
                    if (kind == K_NONFINITE) X[rnd_below(M * N)] = NAN, X[rnd_below(M * N)] = -INFINITY;
                    const size_t most = M > N ? M : N;
                    double *o = xmalloc(most * sizeof(double)), *b = xmalloc(most * sizeof(double));
                    double *rc = xmalloc(3 * N * sizeof(double)), *rcb = xmalloc(3 * N * sizeof(double));
                    double *rr = xmalloc(3 * N * sizeof(double)), *rrb = xmalloc(3 * N * sizeof(double));
                    vt_exec e;
                    vt_exec_init(&e, VT_ORDER_BLAS, cfgs[c], 5);
                    vt_bounds bd;
                    for (int dot = 0; dot < 3; dot++)
                        for (size_t j = 0; j < N; j++) {
                            reduce_ref(&e, M, X + j, N, dot == 2 ? Y : Y + j, N, dot, &rc[dot * N + j], &rcb[dot * N + j]);
                            reduce_ref(&e, M, X + j * M, 1, dot == 2 ? Y : Y + j * M, 1, dot, &rr[dot * N + j],
                                       &rrb[dot * N + j]);
                        }
                    for (int threads = 1; threads <= 3; threads += 2) {
                        vt_par_set_threads(threads);
                        for (int dot = 0; dot < 3; dot++) {
                            /* columns of M terms (rows == 1), then the matrix read as N rows of M terms */
                            const vt_strided one = {Y, 0, 0, 0, 0, 0}, col = {Y, 1, 1, N, 0, 0}, row = {Y, M, M, 1, 0, 0};
                            static const float f1 = 1.0f;
                            const vt_strided unit = {&f1, 0, 0, 0, 0, 0};
                            for (int rows = 0; rows < 2; rows++) {
                                const double *r = rows ? rr : rc, *rb = rows ? rrb : rcb;
                                CHECK_OK(rows ? vt_reduce(&e, N, 1, M, (vt_strided){X, M, M, 1, 0, 0},
                                                          dot == 0 ? unit : dot == 1 ? row : one, o, b, &bd)
                                              : vt_reduce(&e, 1, N, M, (vt_strided){X, 1, 1, N, 0, 0},
                                                          dot == 0 ? unit : dot == 1 ? col : one, o, b, &bd));
                                size_t k = 0;
                                while (k < N && same_or_nan(o[k], r[dot * N + k]) && same_or_nan(b[k], rb[dot * N + k])) k++;
                                CHECK(k == N, "fused %s (form %d) of %zu terms, %zu of them, kind %d cfg %d, %d threads: %zu is %a (bound %a), the reference's %a (%a)",
                                      rows ? "rows" : "columns", dot, M, N, kind, c, threads, k, k < N ? o[k] : 0.0,
                                      k < N ? b[k] : 0.0, k < N ? r[dot * N + k] : 0.0, k < N ? rb[dot * N + k] : 0.0);
                                checked += (long)k;
                            }
                        }
                    }
                    vt_par_set_threads(1);
                    vt_exec_free(&e);
                    free(X), free(Y), free(o), free(b), free(rc), free(rcb), free(rr), free(rrb);
                }
    printf("fused reductions: %ld columns and rows the reference's bits\n", checked);
}

/* ------------------------------------------------------ softmax and loss */

static void test_softmax_case(size_t N, size_t C, double scale, int extremes)
{
    float *z = xmalloc(N * C * sizeof(float));
    for (size_t i = 0; i < N * C; i++) z[i] = (float)(scale * vt_rng_normal(&R));
    if (extremes) {
        for (size_t i = 0; i < N * C; i += 3) z[i] = -1e30f; /* exp underflows to 0 */
        if (C >= 2) z[1] = z[0] = 5.0f;                      /* a tie for the max */
    }
    double *p[VT_ORDER_COUNT], *b[VT_ORDER_COUNT];
    double *ev = xmalloc(C * sizeof(double));
    int fails = 0;
    for (int o = 0; o < VT_ORDER_COUNT; o++) {
        vt_exec e;
        vt_exec_init(&e, (vt_order)o, PROVABLE, 1234);
        p[o] = xmalloc(N * C * sizeof(double));
        b[o] = xmalloc(N * C * sizeof(double));
        vt_bounds bd;
        CHECK_OK(vt_softmax(&e, N, C, z, p[o], b[o], &bd));
        CHECK(bd.kind == VT_BOUNDS_ARRAY && bd.b == b[o], "softmax bounds");
        for (size_t i = 0; i < N; i++) {
            const float *zi = z + i * C;
            float m = zi[0];
            for (size_t c = 1; c < C; c++) m = zi[c] > m ? zi[c] : m;
            long double s = 0;
            for (size_t c = 0; c < C; c++) {
                ev[c] = vt_exp((double)zi[c] - (double)m);
                s += ev[c];
            }
            /* the definition, bit for bit: e_c / RN64(exact sum), in every order, bound 0; and
             * its accuracy against a long double reference: two FP64 roundings (the sum and the
             * division), so within 2u relative (+ half the smallest subnormal), plus the
             * reference's own error */
            double sd = vt_sum_exact64(C, ev, 1);
            long double total = 0;
            for (size_t c = 0; c < C; c++) {
                long double ref = (long double)ev[c] / s;
                double pc = p[o][i * C + c], bc = b[o][i * C + c];
                long double slack = ref * (long double)C * LDBL_EPSILON;
                if (!same_bits(pc, ev[c] / sd) || bc != 0.0 ||
                    !(fabsl((long double)pc - ref) <= ref * 0x1p-52L + 0x1p-1074L + slack)) {
                    if (fails < 5)
                        fprintf(stderr, "  softmax %s C=%zu (%zu,%zu): p=%a def=%a ref=%La b=%a\n",
                                vt_order_name((vt_order)o), C, i, c, pc, ev[c] / sd, ref, bc);
                    fails++;
                }
                total += pc;
            }
            if (!(fabsl(total - 1.0L) <= (long double)C * 0x1p-51L)) {
                if (fails < 5) fprintf(stderr, "  softmax row sum %.20Lg\n", total);
                fails++;
            }
        }
        vt_exec_free(&e);
    }
    for (int o = 1; o < VT_ORDER_COUNT; o++)
        if (memcmp(p[o], p[0], N * C * sizeof(double)) != 0) fails++; /* one value in every order */
    CHECK(fails == 0, "softmax N=%zu C=%zu scale=%g: %d failures", N, C, scale, fails);
    for (int o = 0; o < VT_ORDER_COUNT; o++) {
        free(p[o]);
        free(b[o]);
    }
    free(ev);
    free(z);
}

static void test_softmax(void)
{
    static const size_t Cs[] = {1, 2, 3, 10, 100, 1000, 4097};
    static const double scales[] = {1.0, 30.0, 1000.0};
    for (size_t t = 0; t < sizeof Cs / sizeof Cs[0]; t++)
        for (size_t s = 0; s < 3; s++) test_softmax_case(1 + rnd_below(6), Cs[t], scales[s], s == 1);
}

/* The MLP's elementwise formulas (kernels/vt_kernels_hd.h) over arrays, as the kinds' host loops in
 * ops/vt_fam_chain.c run them, checked below against the formulas written out. */

static void vt_bias_add(size_t M, size_t N, const float *X, const float *bias, double *Y)
{
    for (size_t i = 0; i < M; i++)
        for (size_t j = 0; j < N; j++) Y[i * N + j] = vti_bias1(X[i * N + j], bias[j]);
}

static void vt_relu(size_t n, const float *x, double *y)
{
    for (size_t i = 0; i < n; i++) y[i] = vti_relu1(x[i], x[i]);
}

static void vt_relu_backward(size_t n, const float *x, const float *dy, double *dx)
{
    for (size_t i = 0; i < n; i++) dx[i] = vti_relu1(x[i], dy[i]);
}

static void vt_xent_backward(size_t N, size_t C, size_t cnt, const float *P, const uint8_t *labels, double *dz)
{
    const double dn = (double)cnt;
    for (size_t i = 0; i < N; i++)
        for (size_t c = 0; c < C; c++) dz[i * C + c] = vti_xent_bwd1(P[i * C + c], c == labels[i], dn);
}

static void vt_sgd_velocity(size_t n, const float *w, const float *g, const float *v, double mu, double wd,
                     double *v_out)
{
    for (size_t i = 0; i < n; i++) v_out[i] = vti_sgd_velocity1(w[i], g[i], v[i], mu, wd);
}

static void vt_sgd_apply(size_t n, const float *w, const float *v_new, double lr, double *w_out)
{
    for (size_t i = 0; i < n; i++) w_out[i] = vti_sgd_apply1(w[i], v_new[i], lr);
}

static void vt_adam_moments(size_t n, const float *g, const float *m, const float *v, double b1, double b2,
                     double *m_out, double *v_out)
{
    const double c1 = 1.0 - b1, c2 = 1.0 - b2;
    for (size_t i = 0; i < n; i++) vti_adam_moments1(g[i], m[i], v[i], b1, b2, c1, c2, &m_out[i], &v_out[i]);
}

static void vt_adam_apply(size_t n, const float *w, const float *m_new, const float *v_new, double lr, double b1,
                   double b2, double eps, uint64_t t, double *w_out)
{
    const double bc1 = 1.0 - vti_powi(b1, t);
    const double bc2 = 1.0 - vti_powi(b2, t);
    for (size_t i = 0; i < n; i++) w_out[i] = vti_adam_apply1(w[i], m_new[i], v_new[i], lr, bc1, bc2, eps);
}

static void test_xent(void)
{
    static const size_t Ns[] = {1, 2, 7, 64, 1000};
    const size_t C = 10;
    for (size_t t = 0; t < sizeof Ns / sizeof Ns[0]; t++) {
        size_t N = Ns[t];
        float *P = xmalloc(N * C * sizeof(float));
        uint8_t *y = xmalloc(N);
        for (size_t i = 0; i < N; i++) {
            double s = 0, e[10];
            for (size_t c = 0; c < C; c++) s += e[c] = vt_exp(4.0 * vt_rng_normal(&R));
            for (size_t c = 0; c < C; c++) P[i * C + c] = (float)(e[c] / s);
            y[i] = (uint8_t)rnd_below(C);
            if (i % 5 == 1) P[i * C + y[i]] = 0.0f; /* clamped to 2^-149 */
            if (i % 7 == 2) P[i * C + y[i]] = 1.0f; /* l = 0 */
            if (i % 11 == 3) P[i * C + y[i]] = bits2f(3); /* subnormal */
        }
        /* reference terms, computed exactly as documented */
        float *pa = xmalloc((3 * N + 3) * sizeof(float)), *pb = xmalloc((3 * N + 3) * sizeof(float));
        int ok = 1;
        for (size_t i = 0; i < N; i++) {
            double q = (double)P[i * C + y[i]];
            if (q < 0x1p-149) q = 0x1p-149;
            double l = -vt_log(q) / (double)N;
            ok &= split_neg(-l, pa + 3 * i, pb + 3 * i);
        }
        double loss[VT_ORDER_COUNT], bnd[VT_ORDER_COUNT];
        int fails = 0;
        for (int o = 0; o < VT_ORDER_COUNT; o++) {
            vt_exec e;
            vt_exec_init(&e, (vt_order)o, PROVABLE, 5);
            vt_bounds bd;
            CHECK_OK(vt_xent_loss(&e, N, C, P, y, &loss[o], &bnd[o], &bd));
            CHECK(bd.kind == VT_BOUNDS_ARRAY && bd.b == &bnd[o], "xent bounds");
            ok &= split_neg(loss[o], pa + 3 * N, pb + 3 * N);
            double r = vt_dot_exact64(3 * N + 3, pa, 1, pb, 1);
            /* RN32 of the exact sum: an FP32 value within half an FP32 ulp of the exact sum,
             * bound 0 (ties are measure-zero here and would show as exactly half an ulp) */
            double half = loss[o] == 0 ? 0x1p-150 : ldexp(1.0, ilogb(loss[o]) - 24);
            if (!(fabs(r) <= half) || (double)(float)loss[o] != loss[o] || bnd[o] != 0.0) {
                fprintf(stderr, "  xent %s N=%zu: loss=%a err=%a b=%a\n", vt_order_name((vt_order)o), N, loss[o], r,
                        bnd[o]);
                fails++;
            }
            if (N == 1) CHECK(bnd[o] == 0.0, "xent N=1 bound %a", bnd[o]);
            vt_exec_free(&e);
        }
        CHECK(ok, "xent reference split");
        for (int o = 1; o < VT_ORDER_COUNT; o++)
            if (!same_bits(loss[o], loss[0])) fails++; /* one value in every order */
        CHECK(fails == 0, "xent N=%zu: %d failures", N, fails);
        CHECK(loss[0] > 0 && loss[0] < 110, "xent loss %g in range", loss[0]);

        /* backward */
        double *dz = xmalloc(N * C * sizeof(double));
        vt_xent_backward(N, C, N, P, y, dz);
        int bad = 0;
        for (size_t i = 0; i < N; i++)
            for (size_t c = 0; c < C; c++) {
                double want = ((double)P[i * C + c] - (c == y[i] ? 1.0 : 0.0)) / (double)N;
                if (!same_bits(dz[i * C + c], want)) bad++;
            }
        CHECK(bad == 0, "xent_backward: %d mismatches", bad);
        free(dz);
        free(pa);
        free(pb);
        free(P);
        free(y);
    }
}

/* Golden digest of vt_exp / vt_log bits over fixed points (independent of the test
 * seed): vt_math must return the same bits on every IEEE-754 machine and compiler,
 * so this constant may only change together with the algorithm (and the CUDA copy). */
static uint64_t math_digest(void)
{
    uint64_t h = 0xcbf29ce484222325ULL, s = 42;
    for (int i = 0; i < 200000; i++) {
        uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        z ^= z >> 31;
        double u = (double)(z >> 11) * 0x1p-53;
        double xe = -750.0 + u * 1460.0;
        double xl = ldexp(0.5 + u, (int)(z & 2047) - 1074);
        uint64_t r[2] = {d2bits(vt_exp(xe)), d2bits(vt_log(xl))};
        for (int k = 0; k < 2; k++) {
            h ^= r[k];
            h *= 0x100000001b3ULL;
        }
    }
    return h;
}

/* ------------------------------------------------------------ exp / log */

/* Error of v in units in the last place of the double nearest ref, against a reference in
 * long double (x87 extended on x86-64: 11 more bits than double). C does not promise that
 * exp/log are correctly rounded, in any precision, so the reference is expl/logl, whose own error
 * (about 2^-63 relative) is negligible at the scale measured here; where long double is no wider
 * than double the sweeps are only printed (ref_ok = 0). */
static const int ref_ok = LDBL_MANT_DIG >= 64;
#define MATH_MAX_ULP 2.0 /* vt_math.h: below 2 ulp */
static double ulp_err(double v, long double ref)
{
    if (isnan(v) || isnanl(ref)) return isnan(v) && isnanl(ref) ? 0.0 : INFINITY;
    if (isinf(v) || isinfl(ref)) return v == (double)ref ? 0.0 : INFINITY;
    double r = (double)ref;
    double ulp = fabs(r) < DBL_MIN ? 0x1p-1074 : ldexp(1.0, ilogb(r) - 52);
    return (double)(fabsl((long double)v - ref) / (long double)ulp);
}

static void test_math(void)
{
    double worst_exp = 0, worst_log = 0;
    double at_exp = 0, at_log = 0;
    long n_exp = 0, n_log = 0;
    const long NPTS = 1000000;
    for (long t = 0; t < 3 * NPTS; t++) {
        double x;
        if (t < NPTS) x = -745.2 + vt_rng_uniform(&R) * (709.8 + 745.2);  /* whole range */
        else if (t < 2 * NPTS) x = -40.0 + vt_rng_uniform(&R) * 41.0;     /* softmax range */
        else x = ldexp(vt_rng_uniform(&R) - 0.5, -(int)rnd_below(60));     /* near zero */
        double d = ulp_err(vt_exp(x), expl((long double)x));
        n_exp++;
        if (d > worst_exp) {
            worst_exp = d;
            at_exp = x;
        }
    }
    for (long t = 0; t < 3 * NPTS; t++) {
        double x;
        if (t < NPTS) x = vt_rng_uniform(&R) * 0.6 + 0.7;                                 /* near 1 */
        else if (t < 2 * NPTS) x = fabs((double)bits2f((uint32_t)(vt_rng_next(&R) >> 33))); /* FP32 (0, inf) */
        else x = fabs(ldexp(vt_rng_uniform(&R) + 0.5, (int)rnd_below(2098) - 1074));        /* all doubles */
        if (!(x > 0) || isinf(x)) continue;
        double d = ulp_err(vt_log(x), logl((long double)x));
        n_log++;
        if (d > worst_log) {
            worst_log = d;
            at_log = x;
        }
    }
    /* a dense sweep around 1 for log (tiny |f| branch) and exact powers of two */
    for (int i = -2000; i <= 2000; i++) {
        double x = 1.0 + i * 0x1p-40;
        double d = ulp_err(vt_log(x), logl((long double)x));
        if (d > worst_log) worst_log = d, at_log = x;
        n_log++;
    }
    for (int ex = -1074; ex <= 1023; ex++) {
        double x = ldexp(1.0, ex);
        double d = ulp_err(vt_log(x), logl((long double)x));
        if (d > worst_log) worst_log = d, at_log = x;
        n_log++;
    }
    printf("vt_exp: max error %.3f ulp over %ld points (at %a), against expl%s\n", worst_exp, n_exp, at_exp,
           ref_ok ? "" : " (long double is not wider than double here: not checked)");
    printf("vt_log: max error %.3f ulp over %ld points (at %a), against logl%s\n", worst_log, n_log, at_log,
           ref_ok ? "" : " (not checked)");
    /* vt_math.h's accuracy (a quality matter: every party computes the same bits whatever it is) */
    if (ref_ok) {
        CHECK(worst_exp < MATH_MAX_ULP, "vt_exp max error %.3f ulp", worst_exp);
        CHECK(worst_log < MATH_MAX_ULP, "vt_log max error %.3f ulp", worst_log);
    }

    /* the bits themselves: the project's own code, the same on every IEEE-754 machine */
    uint64_t dg = math_digest();
    CHECK(dg == VT_MATH_DIGEST, "vt_exp/vt_log golden digest 0x%016llx", (unsigned long long)dg);

    /* special values; references are correctly rounded constants (M_E, M_LN2) or expl/logl */
    CHECK(isnan(vt_exp(NAN)), "exp(nan)");
    CHECK(vt_exp(INFINITY) == INFINITY, "exp(inf)");
    CHECK(same_bits(vt_exp(-INFINITY), 0.0), "exp(-inf)");
    CHECK(vt_exp(0.0) == 1.0 && vt_exp(-0.0) == 1.0, "exp(0)");
    CHECK(vt_exp(1e-300) == 1.0 && vt_exp(-1e-300) == 1.0, "exp(tiny)");
    CHECK(vt_exp(709.78) < INFINITY && vt_exp(nextafter(0x1.62e42fefa39efp+9, INFINITY)) == INFINITY && vt_exp(710.0) == INFINITY, "exp overflow");
    CHECK(vt_exp(-745.2) == 0.0 && vt_exp(-1000.0) == 0.0, "exp underflow");
    CHECK(vt_exp(-745.1) == 0x1p-1074, "exp(-745.1) = %a", vt_exp(-745.1));
    CHECK(ulp_err(vt_exp(1.0), 0x1.5bf0a8b145769p+1L) < MATH_MAX_ULP, "exp(1) = %a", vt_exp(1.0));
    if (ref_ok) {
        CHECK(ulp_err(vt_exp(0x1.62e42fefa39efp+9), expl(0x1.62e42fefa39efp+9L)) < MATH_MAX_ULP, "exp at the overflow threshold");
        CHECK(ulp_err(vt_exp(-708.5), expl(-708.5L)) < MATH_MAX_ULP && ulp_err(vt_exp(-730.0), expl(-730.0L)) < MATH_MAX_ULP,
              "exp subnormal");
    }
    CHECK(isnan(vt_log(NAN)), "log(nan)");
    CHECK(isnan(vt_log(-1.0)) && isnan(vt_log(-INFINITY)) && isnan(vt_log(-0x1p-1074)), "log(<0)");
    CHECK(vt_log(0.0) == -INFINITY && vt_log(-0.0) == -INFINITY, "log(0)");
    CHECK(vt_log(INFINITY) == INFINITY, "log(inf)");
    CHECK(same_bits(vt_log(1.0), 0.0), "log(1) = +0");
    /* log(2^e) = e ln 2: ln 2 = 0x1.62e42fefa39ef35793c7673007e5p-1 (correctly rounded to 113 bits) */
    const long double ln2 = 0x1.62e42fefa39ef35793c7673007e5p-1L;
    CHECK(ulp_err(vt_log(0x1p-1074), -1074.0L * ln2) < MATH_MAX_ULP, "log(min subnormal)");
    CHECK(ulp_err(vt_log(0x1p-149), -149.0L * ln2) < MATH_MAX_ULP, "log(2^-149)");
    if (ref_ok) CHECK(ulp_err(vt_log(DBL_MAX), logl((long double)DBL_MAX)) < MATH_MAX_ULP, "log(DBL_MAX)");
    CHECK(vt_log(2.0) == 0x1.62e42fefa39efp-1, "log(2) = %a, not ln 2 correctly rounded", vt_log(2.0));
}

/* ------------------------------------------------------------ exact dot */

static void test_dot_exact(void)
{
    float a[8], b[8];
    for (int i = 0; i < 8; i++) b[i] = 1.0f;
    a[0] = 1e30f, a[1] = 1.0f, a[2] = -1e30f;
    CHECK(vt_dot_exact64(3, a, 1, b, 1) == 1.0, "cancellation");
    a[0] = 1.0f, a[1] = 0x1p-53f;
    CHECK(vt_dot_exact64(2, a, 1, b, 1) == 1.0, "tie to even (down)");
    a[0] = 1.0f + 0x1p-23f, a[1] = 0x1p-53f;
    CHECK(vt_dot_exact64(2, a, 1, b, 1) == 1.0 + 0x1p-23 , "exact sum representable");
    a[0] = 1.0f, a[1] = 0x1p-52f, a[2] = 0x1p-53f;
    CHECK(vt_dot_exact64(3, a, 1, b, 1) == 1.0 + 0x1p-51, "tie to even (up)");
    a[0] = 1.0f, a[1] = 0x1p-53f, a[2] = 0x1p-120f;
    CHECK(vt_dot_exact64(3, a, 1, b, 1) == 1.0 + 0x1p-52, "above the tie via sticky bits");
    a[0] = -1.0f, a[1] = -0x1p-53f, a[2] = -0x1p-120f;
    CHECK(vt_dot_exact64(3, a, 1, b, 1) == -(1.0 + 0x1p-52), "negative");
    a[0] = 0x1p-149f, b[0] = 0x1p-149f;
    CHECK(vt_dot_exact64(1, a, 1, b, 1) == 0x1p-298, "smallest product");
    a[0] = FLT_MAX, b[0] = FLT_MAX, a[1] = FLT_MAX, b[1] = FLT_MAX;
    CHECK(vt_dot_exact64(2, a, 1, b, 1) == 2.0 * (double)FLT_MAX * (double)FLT_MAX, "largest products");
    a[0] = INFINITY, b[0] = 1.0f;
    CHECK(vt_dot_exact64(1, a, 1, b, 1) == INFINITY, "inf");
    CHECK(vt_dot_exact64(0, a, 1, b, 1) == 0.0, "empty");
    b[0] = 1.0f;
    /* [x, -x shuffled, t] sums to t exactly; any permutation gives the same bits */
    for (int rep = 0; rep < 20; rep++) {
        size_t n = 1 + rnd_below(5000);
        float *x = xmalloc((2 * n + 1) * sizeof(float)), *y = xmalloc((2 * n + 1) * sizeof(float));
        for (size_t i = 0; i < n; i++) {
            x[i] = gen_value((int)(rep % D_KINDS));
            y[i] = gen_value(D_WIDE);
            x[n + i] = -x[i];
            y[n + i] = y[i];
        }
        for (size_t i = 2 * n; i-- > 1;) {
            size_t j = rnd_below(i + 1);
            float t1 = x[i], t2 = y[i];
            x[i] = x[j], y[i] = y[j], x[j] = t1, y[j] = t2;
        }
        x[2 * n] = (float)vt_rng_normal(&R), y[2 * n] = 0x1p-100f;
        double want = (double)x[2 * n] * 0x1p-100;
        CHECK(vt_dot_exact64(2 * n + 1, x, 1, y, 1) == want, "exact cancellation n=%zu", n);
        CHECK(vt_dot_exact64(2 * n, x, 1, y, 1) == 0.0 && !signbit(vt_dot_exact64(2 * n, x, 1, y, 1)), "zero");
        free(x);
        free(y);
    }
    /* against long double where long double is exact: small integer products */
    long double acc = 0;
    float *x = xmalloc(1600 * sizeof(float)), *y = xmalloc(1600 * sizeof(float));
    for (int i = 0; i < 1000; i++) {
        x[i] = (float)((int)rnd_below(1 << 20) - (1 << 19));
        y[i] = (float)((int)rnd_below(1 << 20) - (1 << 19));
        acc += (long double)x[i] * y[i];
    }
    CHECK(vt_dot_exact64(1000, x, 1, y, 1) == (double)acc, "integer dot");
    for (int i = 1000; i < 1600; i++) x[i] = y[i] = 1.0f;
    /* strides */
    {
        float xs[500], ys[500];
        acc = 0;
        for (int i = 0; i < 500; i++) {
            xs[i] = x[2 * i], ys[i] = y[3 * i + 1];
            acc += (long double)xs[i] * ys[i];
        }
        CHECK(vt_dot_exact64(500, x, 2, y + 1, 3) == (double)acc && vt_dot_exact64(500, xs, 1, ys, 1) == (double)acc,
              "strided");
    }
    free(x);
    free(y);
}

/* ------------------------------------------------- elementwise, optimisers */

static void test_elementwise(void)
{
    const size_t M = 13, N = 17, n = M * N;
    float *X = xmalloc(n * sizeof(float)), *bias = xmalloc(N * sizeof(float)), *dy = xmalloc(n * sizeof(float));
    double *Y = xmalloc(n * sizeof(double));
    for (size_t i = 0; i < n; i++) {
        X[i] = gen_value(i % 3 == 0 ? D_ZEROS : D_WIDE);
        dy[i] = gen_value(D_NORMAL);
    }
    X[0] = -0.0f;
    X[1] = NAN;
    X[2] = 0x1p-149f;
    for (size_t j = 0; j < N; j++) bias[j] = gen_value(D_NORMAL);
    bias[0] = -0.0f;
    int bad = 0;
    vt_bias_add(M, N, X, bias, Y);
    for (size_t i = 0; i < M; i++)
        for (size_t j = 0; j < N; j++)
            if (!same_bits(Y[i * N + j], (double)X[i * N + j] + (double)bias[j])) bad++;
    CHECK(bad == 0, "bias_add");
    vt_relu(n, X, Y);
    bad = 0;
    for (size_t i = 0; i < n; i++)
        if (!same_bits(Y[i], X[i] > 0 ? (double)X[i] : 0.0) || (Y[i] == 0 && signbit(Y[i]))) bad++;
    CHECK(bad == 0, "relu");
    CHECK(same_bits(Y[0], 0.0) && same_bits(Y[1], 0.0) && Y[2] == 0x1p-149, "relu(-0, nan, tiny)");
    vt_relu_backward(n, X, dy, Y);
    bad = 0;
    for (size_t i = 0; i < n; i++)
        if (!same_bits(Y[i], X[i] > 0 ? (double)dy[i] : 0.0)) bad++;
    CHECK(bad == 0, "relu_backward");

    /* optimisers against the formulas written out */
    float *w = xmalloc(n * sizeof(float)), *g = xmalloc(n * sizeof(float)), *v = xmalloc(n * sizeof(float));
    float *m = xmalloc(n * sizeof(float));
    double *o1 = xmalloc(n * sizeof(double)), *o2 = xmalloc(n * sizeof(double));
    for (size_t i = 0; i < n; i++) {
        w[i] = (float)vt_rng_normal(&R);
        g[i] = (float)(0.01 * vt_rng_normal(&R));
        v[i] = (float)(0.001 * vt_rng_uniform(&R));
        m[i] = (float)(0.01 * vt_rng_normal(&R));
    }
    const double mu = 0.9, wd = 5e-4, lr = 0.01, b1 = 0.9, b2 = 0.999, eps = 1e-8;
    vt_sgd_velocity(n, w, g, m, mu, wd, o1);
    bad = 0;
    for (size_t i = 0; i < n; i++)
        if (!same_bits(o1[i], mu * (double)m[i] + ((double)g[i] + wd * (double)w[i]))) bad++;
    CHECK(bad == 0, "sgd_velocity");
    vt_sgd_apply(n, w, m, lr, o1);
    bad = 0;
    for (size_t i = 0; i < n; i++)
        if (!same_bits(o1[i], (double)w[i] - lr * (double)m[i])) bad++;
    CHECK(bad == 0, "sgd_apply");
    vt_adam_moments(n, g, m, v, b1, b2, o1, o2);
    bad = 0;
    for (size_t i = 0; i < n; i++) {
        if (!same_bits(o1[i], b1 * (double)m[i] + (1 - b1) * (double)g[i])) bad++;
        if (!same_bits(o2[i], b2 * (double)v[i] + (1 - b2) * (double)g[i] * (double)g[i])) bad++;
    }
    CHECK(bad == 0, "adam_moments");
    static const uint64_t ts[] = {1, 2, 3, 10, 1000, 123457};
    for (size_t k = 0; k < sizeof ts / sizeof ts[0]; k++) {
        uint64_t t = ts[k];
        /* b^t by square-and-multiply, low bit first */
        double p1 = 1, x1 = b1, p2 = 1, x2 = b2;
        for (uint64_t e = t; e; e >>= 1) {
            if (e & 1) p1 *= x1, p2 *= x2;
            if (e >> 1) x1 *= x1, x2 *= x2;
        }
        CHECK(fabs(p1 - pow(b1, (double)t)) <= 1e-12 * pow(b1, (double)t) + 1e-300, "b1^t");
        vt_adam_apply(n, w, m, v, lr, b1, b2, eps, t, o1);
        bad = 0;
        for (size_t i = 0; i < n; i++) {
            double want = (double)w[i] - lr * ((double)m[i] / (1 - p1)) / (sqrt((double)v[i] / (1 - p2)) + eps);
            if (!same_bits(o1[i], want)) bad++;
        }
        CHECK(bad == 0, "adam_apply t=%llu", (unsigned long long)t);
    }
    free(w), free(g), free(v), free(m), free(o1), free(o2);
    free(X), free(bias), free(dy), free(Y);
}

/* ------------------------------------------------------ argument errors */

static void test_errors(void)
{
    vt_exec e;
    vt_exec_init(&e, VT_ORDER_FORWARD, PROVABLE, 1);
    float a[4] = {1, 2, 3, 4}, b[4] = {1, 2, 3, 4};
    double c[4], rn[2], cn[2], bb[4], loss;
    vt_bounds bd;
    CHECK(vt_gemm(&e, 0, 0, 2, 2, 2, NULL, b, c, rn, cn, &bd) == VT_ERR_ARG, "gemm NULL A");
    CHECK(vt_gemm(&e, 0, 0, 2, 2, 2, a, b, c, NULL, cn, &bd) == VT_ERR_ARG, "gemm NULL norms");
    CHECK(vt_gemm(&e, 0, 0, 2, 2, 2, a, b, c, rn, cn, NULL) == VT_ERR_ARG, "gemm NULL bounds");
    CHECK(vt_gemm(&e, 2, 0, 2, 2, 2, a, b, c, rn, cn, &bd) == VT_ERR_ARG, "gemm transA=2");
    CHECK(vt_gemm(&e, 0, -1, 2, 2, 2, a, b, c, rn, cn, &bd) == VT_ERR_ARG, "gemm transB=-1");
    CHECK(vt_gemm(&e, 0, 0, 0, 2, 2, a, b, c, rn, cn, &bd) == VT_ERR_ARG, "gemm M=0");
    CHECK(vt_gemm(&e, 0, 0, 2, 2, 0, a, b, c, rn, cn, &bd) == VT_ERR_ARG, "gemm K=0");
    CHECK(vt_gemm(&e, 0, 0, 1, 1, (size_t)VT_MAX_REDUCTION + 1, a, b, c, rn, cn, &bd) == VT_ERR_LIMIT, "gemm K limit");
    CHECK(vt_gemm_plain(&e, 0, 0, 1, 1, (size_t)VT_MAX_REDUCTION + 1, a, b, c) == VT_ERR_LIMIT, "plain K limit");
    CHECK(vt_gemm(&e, 0, 0, SIZE_MAX / 2, SIZE_MAX / 2, 2, a, b, c, rn, cn, &bd) == VT_ERR_LIMIT, "gemm overflow");
    CHECK(vt_gemm_plain(&e, 0, 0, 2, 2, 2, a, b, NULL) == VT_ERR_ARG, "plain NULL C");
    CHECK(vt_colsum(&e, 0, 2, a, c, bb, &bd) == VT_ERR_ARG, "colsum M=0");
    CHECK(vt_rowsum(&e, 2, 2, NULL, c, bb, &bd) == VT_ERR_ARG, "rowsum NULL");
    CHECK(vt_colsum(&e, (size_t)VT_MAX_REDUCTION + 1, 1, a, c, bb, &bd) == VT_ERR_LIMIT, "colsum limit");
    CHECK(vt_rowsum(&e, 1, (size_t)VT_MAX_REDUCTION + 1, a, c, bb, &bd) == VT_ERR_LIMIT, "rowsum limit");
    CHECK(vt_softmax(&e, 0, 2, a, c, bb, &bd) == VT_ERR_ARG, "softmax N=0");
    CHECK(vt_softmax(&e, 2, 2, a, c, NULL, &bd) == VT_ERR_ARG, "softmax NULL b");
    uint8_t y[2] = {0, 2};
    float P[4] = {0.5f, 0.5f, 0.25f, 0.75f};
    CHECK(vt_xent_loss(&e, 2, 2, P, y, &loss, bb, &bd) == VT_ERR_ARG, "xent label >= C");
    y[1] = 1;
    CHECK_OK(vt_xent_loss(&e, 2, 2, P, y, &loss, bb, &bd));
    CHECK(vt_xent_loss(&e, 2, 2, P, NULL, &loss, bb, &bd) == VT_ERR_ARG, "xent NULL labels");
    CHECK(vt_gemm(NULL, 0, 0, 2, 2, 2, a, b, c, rn, cn, &bd) == VT_ERR_ARG, "NULL executor");
    e.order = (vt_order)99;
    CHECK(vt_gemm(&e, 0, 0, 2, 2, 2, a, b, c, rn, cn, &bd) == VT_ERR_ARG, "bad order");
    CHECK(vt_colsum(&e, 2, 2, a, c, bb, &bd) == VT_ERR_ARG, "bad order (sum)");
    vt_exec_free(&e);
    vt_exec_free(&e); /* idempotent */

    for (int o = 0; o < VT_ORDER_COUNT; o++) {
        vt_order p;
        CHECK(vt_order_parse(vt_order_name((vt_order)o), &p) == VT_OK && p == (vt_order)o, "order name round trip");
    }
    vt_order p;
    CHECK(vt_order_parse("bogus", &p) == VT_ERR_ARG, "unknown order");
    CHECK(vt_order_parse(NULL, &p) == VT_ERR_ARG, "NULL order name");
    CHECK(strcmp(vt_order_name((vt_order)42), "unknown") == 0, "name of an invalid order");

    /* the probabilistic mode runs (its bound is smaller than the provable one of the whole
     * reduction; the panelled provable bound is smaller still at this K) */
    vt_bound_cfg prob = {.mode = VT_BOUND_PROBABILISTIC, .lambda = 0.0};
    vt_exec e2, e3;
    vt_exec_init(&e2, VT_ORDER_BLAS, prob, 1);
    const vt_bound_cfg whole = {.mode = VT_BOUND_PROVABLE, .whole_reduction = 1};
    vt_exec_init(&e3, VT_ORDER_BLAS, whole, 1);
    float A[2 * 4096], B[4096 * 2];
    for (int i = 0; i < 2 * 4096; i++) A[i] = (float)vt_rng_normal(&R), B[i] = (float)vt_rng_normal(&R);
    double C2[4], r2[2], c2[2];
    vt_bounds b2, b3;
    CHECK_OK(vt_gemm(&e2, 0, 0, 2, 2, 4096, A, B, C2, r2, c2, &b2));
    CHECK_OK(vt_gemm(&e3, 0, 0, 2, 2, 4096, A, B, C2, r2, c2, &b3));
    CHECK(b2.coef > 0 && b2.coef < b3.coef, "probabilistic coef %g < provable %g", b2.coef, b3.coef);
    vt_exec_free(&e2);
    vt_exec_free(&e3);
}

int main(void)
{
    R.s = vt_test_seed(20240611);
    test_math();
    test_dot_exact();
    test_elementwise();
    test_errors();
    test_pairwise_tree();
    test_sums();
    test_reduce_threads();
    test_fused_reductions();
    test_softmax();
    test_xent();
    test_gemm();
    test_gemm_panel();
    free(res_a);
    free(res_b);
    return vt_test_finish("test_kernels");
}
