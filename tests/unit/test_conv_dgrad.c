/* test_conv_dgrad - the strided convolution's input gradient by output phase (kernels/vt_cnn.h
 * vt_conv_dgrad_gemm): for several geometries (1x1, 2x2, 3x3 and 5x5 kernels, strides 2 and 3, reductions
 * below, at and above the panel sizes) and every evaluation order, each element is within the
 * canonical bound c(m, K) * sum|a b| of the dense reduction over G (the gather) and W' (m its non-zero
 * products) and within the descriptor's Cauchy-Schwarz bound; the descriptor is vt_gemm's (the same
 * K, coefficient and exact-evaluator operands: G and W' whole); and the kernel declines (done = 0)
 * for stride 1, for a non-zero where the gather puts a structural zero, and for a non-finite W'; the
 * plain FP64 and FP32 forms (vt_conv_dgrad_plain) are near the exact value. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../kernels/vt_cnn.h"
#include "../../kernels/vt_kernels.h"
#include "../../rounding/vt_exact.h"
#include "vt_test.h"

static const vt_bound_cfg PROVABLE = {.mode = VT_BOUND_PROVABLE};
static vt_rng R;

/* a value of random sign and magnitude 2^-12 .. 2^12 (cancellation in the sums) */
static float rnd_val(void)
{
    double m = vt_rng_uniform(&R) + 0.5;
    int e = (int)(vt_rng_next(&R) % 25) - 12;
    return (float)((vt_rng_next(&R) & 1 ? -m : m) * ldexp(1.0, e));
}

static void one_geometry(size_t B, size_t H, size_t W, size_t C, size_t Co, size_t k, size_t s, size_t p)
{
    vt_conv_geom g;
    CHECK_OK(vt_conv_geom_make(&g, (int64_t)B, (int64_t)H, (int64_t)W, (int64_t)C, (int64_t)k, (int64_t)s,
                               (int64_t)p, 0));
    const size_t M = B * H * W, K = k * k * Co, N = C, nd = B * g.Ho * g.Wo * Co;
    float *dy = malloc(nd * sizeof *dy), *G = malloc(M * K * sizeof *G), *wp = malloc(K * N * sizeof *wp);
    double *x = malloc(M * N * sizeof *x), *xd = malloc(M * N * sizeof *xd), *rn = malloc(M * sizeof *rn),
           *cn = malloc(N * sizeof *cn), *rnd = malloc(M * sizeof *rnd), *cnd = malloc(N * sizeof *cnd);
    for (size_t i = 0; i < nd; i++) dy[i] = vt_rng_next(&R) % 7 ? rnd_val() : 0.0f;
    for (size_t i = 0; i < K * N; i++) wp[i] = rnd_val();
    vt_conv_dgather_f32(&g, Co, dy, G);
    long bad_canon = 0, bad_outer = 0, bad_desc = 0;
    for (int o = 0; o < VT_ORDER_COUNT; o++) {
        vt_exec e;
        vt_exec_init(&e, (vt_order)o, PROVABLE, 11);
        vt_bounds bd, bdd;
        int done = 0;
        CHECK_OK(vt_conv_dgrad_gemm(&e, &g, Co, G, wp, x, rn, cn, &bd, &done));
        CHECK(done == 1, "k %zu s %zu p %zu Co %zu order %d: the phase form declined", k, s, p, Co, o);
        CHECK_OK(vt_gemm(&e, 0, 0, M, N, K, G, wp, xd, rnd, cnd, &bdd));
        if (bd.kind != bdd.kind || bd.K != bdd.K || bd.coef != bdd.coef || bd.xa != G || bd.xb != wp ||
            bd.xK != K || bd.xa_si != bdd.xa_si || bd.xb_sj != bdd.xb_sj || bd.xb_sk != bdd.xb_sk)
            bad_desc++;
        for (size_t i = 0; i < M; i++)
            for (size_t j = 0; j < N; j++) {
                const float *a = G + i * K;
                double S = 0.0;
                uint64_t m = 0;
                for (size_t q = 0; q < K; q++) {
                    double t = (double)a[q] * (double)wp[q * N + j];
                    S += fabs(t);
                    m += t != 0.0;
                }
                const double X = vt_dot_exact64(K, a, 1, wp + j, N), err = fabs(x[i * N + j] - X);
                const double slack = fabs(X) * 0x1p-52 + 0x1p-1074;
                const double c = vt_bound_coef_red(&PROVABLE, m, K);
                if (!(err <= c * S * (1 + 0x1p-40) + slack)) bad_canon++;
                if (!(err <= bd.coef * rn[i] * cn[j] * (1 + 0x1p-30) + slack)) bad_outer++;
                if (!(fabs(rn[i] - rnd[i]) <= rnd[i] * 0x1p-40)) bad_outer++;
            }
        vt_exec_free(&e);
    }
    CHECK(bad_canon == 0, "k %zu s %zu p %zu Co %zu: %ld elements outside c(m, K) sum|ab|", k, s, p, Co, bad_canon);
    CHECK(bad_outer == 0, "k %zu s %zu p %zu Co %zu: %ld outside the descriptor's bound / norms", k, s, p, Co,
          bad_outer);
    CHECK(bad_desc == 0, "k %zu s %zu p %zu Co %zu: %ld descriptors differ from vt_gemm's", k, s, p, Co, bad_desc);

    /* the plain forms (the benchmark baseline): the same products in FP64 and FP32 */
    double *G64 = malloc(M * K * sizeof *G64), *w64 = malloc(K * N * sizeof *w64), *y64 = malloc(M * N * sizeof *y64);
    float *y32 = malloc(M * N * sizeof *y32);
    for (size_t i = 0; i < M * K; i++) G64[i] = G[i];
    for (size_t i = 0; i < K * N; i++) w64[i] = wp[i];
    CHECK_OK(vt_conv_dgrad_plain_f64(&g, Co, G64, w64, y64));
    CHECK_OK(vt_conv_dgrad_plain_f32(&g, Co, G, wp, y32));
    long bad_plain = 0;
    for (size_t i = 0; i < M; i++)
        for (size_t j = 0; j < N; j++) {
            double S = 0.0;
            for (size_t q = 0; q < K; q++) S += fabs((double)G[i * K + q] * (double)wp[q * N + j]);
            const double X = vt_dot_exact64(K, G + i * K, 1, wp + j, N);
            if (!(fabs(y64[i * N + j] - X) <= S * 0x1p-40 + 0x1p-1074) || !(fabs(y32[i * N + j] - X) <= S * 0x1p-12 + 0x1p-140))
                bad_plain++;
        }
    CHECK(bad_plain == 0, "k %zu s %zu p %zu Co %zu: %ld plain elements far from the exact value", k, s, p, Co, bad_plain);
    free(G64), free(w64), free(y64), free(y32);

    /* the kernel declines what is not the gather's structure */
    vt_exec e;
    vt_exec_init(&e, VT_ORDER_BLAS, PROVABLE, 0);
    vt_bounds bd;
    int done = 1;
    size_t zi = SIZE_MAX; /* a structural zero: pixel (0, 0, 0)'s tap not in its class */
    for (size_t t = 0; t < k * k && zi == SIZE_MAX; t++)
        if ((t / k) % s != p % s || (t % k) % s != p % s) zi = t * Co;
    if (zi != SIZE_MAX) {
        G[zi] = 1.0f;
        CHECK_OK(vt_conv_dgrad_gemm(&e, &g, Co, G, wp, x, rn, cn, &bd, &done));
        CHECK(done == 0, "k %zu s %zu: a non-zero structural zero was not noticed", k, s);
        G[zi] = -0.0f; /* a negative zero is a zero */
        CHECK_OK(vt_conv_dgrad_gemm(&e, &g, Co, G, wp, x, rn, cn, &bd, &done));
        CHECK(done == 1, "k %zu s %zu: -0 in a structural zero refused", k, s);
        G[zi] = 0.0f;
    }
    float w0 = wp[0];
    wp[0] = INFINITY;
    CHECK_OK(vt_conv_dgrad_gemm(&e, &g, Co, G, wp, x, rn, cn, &bd, &done));
    CHECK(done == 0, "k %zu s %zu: an infinite weight was not noticed", k, s);
    wp[0] = w0;
    vt_exec_free(&e);
    free(dy), free(G), free(wp), free(x), free(xd), free(rn), free(cn), free(rnd), free(cnd);
}

int main(void)
{
    R.s = vt_test_seed(27);
    one_geometry(2, 7, 6, 5, 64, 3, 2, 1);   /* K 576 panelled; classes of 64, 128, 128, 256 terms */
    one_geometry(2, 8, 8, 3, 100, 3, 2, 1);  /* K 900; the 400-term class panelled itself */
    one_geometry(3, 8, 8, 4, 16, 1, 2, 0);   /* 1x1: three classes receive no tap (+0) */
    one_geometry(2, 9, 7, 3, 20, 5, 3, 2);   /* 5x5, stride 3: nine classes of 1..4 taps */
    one_geometry(2, 6, 6, 3, 8, 3, 2, 0);    /* no padding */
    one_geometry(1, 5, 5, 2, 70, 2, 2, 1);   /* 2x2: one tap per class, K 280 panelled, classes of 70 */

    /* stride 1: nothing to skip, the caller's dense GEMM */
    vt_conv_geom g;
    CHECK_OK(vt_conv_geom_make(&g, 1, 4, 4, 2, 3, 1, 1, 0));
    float G[16 * 27] = {0}, wp[27 * 2] = {0};
    double x[32], rn[16], cn[2];
    vt_bounds bd;
    vt_exec e;
    vt_exec_init(&e, VT_ORDER_BLAS, PROVABLE, 0);
    int done = 1;
    CHECK_OK(vt_conv_dgrad_gemm(&e, &g, 3, G, wp, x, rn, cn, &bd, &done));
    CHECK(done == 0, "stride 1 was not left to the dense GEMM");
    vt_exec_free(&e);
    return vt_test_finish("test_conv_dgrad");
}
