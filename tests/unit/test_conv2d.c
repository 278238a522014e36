/* test_conv2d - convolutions without a materialised im2col (kernels/vt_cnn.h vt_conv2d, vt_conv2d_wgrad;
 * the kinds conv2d and conv2d_weight_grad of step program 2) against the im2col + vt_gemm reference,
 * element by element (the first differing element named), on odd shapes: stride 2 with padding, 1x1
 * stride 2, the channels-first 3-channel stem, reductions below, at and above the panel sizes, batch x
 * pixels not a multiple of the panel. For every evaluation order and 1 or 3 threads: the exactly
 * rounded FP32 outputs equal the reference's bit for bit; each FP64 result is within the descriptor's
 * bound coef |row| |column| of the exact value; the norms are the reference's (to 2^-40); the exact
 * evaluator through vt_bounds.xa_fill gives the exact value in both of its stages. All of it once per
 * implementation of the BLAS order's kernels (vt_conv_impl_set: gemm, scalar, avx2, avx512 where the
 * processor runs them); and the direct implementations compute the same FP64 sums, norms and bounds
 * bit for bit (impls_agree: the portable scalar reference against each vector form). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/vt_bytes.h"
#include "../../common/vt_par.h"
#include "../../kernels/vt_cnn.h"
#include "../../kernels/vt_kernels.h"
#include "../../rounding/vt_eval.h"
#include "../../rounding/vt_exact.h"
#include "../../rounding/vt_round_exact.h"
#include "../../rounding/vt_tight.h"
#include "vt_test.h"

static const vt_bound_cfg PROVABLE = {.mode = VT_BOUND_PROVABLE};
static vt_rng R;

static float rnd_val(void)
{
    double m = vt_rng_uniform(&R) + 0.5;
    int e = (int)(vt_rng_next(&R) % 25) - 12;
    return (float)((vt_rng_next(&R) & 1 ? -m : m) * ldexp(1.0, e));
}

static int never(double s, double e, void *ctx)
{
    (void)s, (void)e, (void)ctx;
    return 0;
}

/* out (rows x cols) against ref: 0, or 1 after naming the first differing element */
static int same_bits(const char *what, const float *out, const float *ref, size_t rows, size_t cols)
{
    for (size_t i = 0; i < rows * cols; i++)
        if (vt_f32_bits(out[i]) != vt_f32_bits(ref[i])) {
            CHECK(0, "%s: element (%zu, %zu) is %a (0x%08x), the im2col GEMM's %a (0x%08x)", what, i / cols, i % cols,
                  (double)out[i], vt_f32_bits(out[i]), (double)ref[i], vt_f32_bits(ref[i]));
            return 1;
        }
    return 0;
}

/* the kernel's results x with descriptor bd against the reference: the bound, the norms, the exact
 * evaluator, the exactly rounded bits */
static void compare(const char *what, const vt_bounds *bd, const double *x, const double *rn, const double *rnref,
                    size_t rows, size_t cols, size_t K, const float *A, size_t a_si, size_t a_sk, const float *Bm,
                    const float *ref32)
{
    long bad_bound = 0, bad_norm = 0, bad_eval = 0;
    for (size_t i = 0; i < rows; i++) {
        if (!(fabs(rn[i] - rnref[i]) <= rnref[i] * 0x1p-40)) bad_norm++;
        for (size_t j = 0; j < cols; j++) {
            const double X = vt_dot_exact64(K, A + i * a_si, a_sk, Bm + j, cols);
            if (!(fabs(x[i * cols + j] - X) <= bd->coef * rn[i] * bd->c[j] * (1 + 0x1p-30) + fabs(X) * 0x1p-52 + 0x1p-1074))
                bad_bound++;
            vt_xacc a;
            uint64_t ne = 0, nk = 0;
            uint32_t rb = 0;
            (void)vt_eval_element(bd, NULL, i, j, never, NULL, &a, &ne, &nk);
            float r32 = vt_xacc_round32(&a);
            float c32 = vt_eval_element(bd, NULL, i, j, vt_decide_rn32, &rb, &a, &ne, &nk) ? vt_bits_f32(rb)
                                                                                          : vt_xacc_round32(&a);
            if (vt_f32_bits(r32) != vt_f32_bits(ref32[i * cols + j]) || vt_f32_bits(c32) != vt_f32_bits(r32)) bad_eval++;
        }
    }
    CHECK(bad_bound == 0, "%s: %ld elements outside the descriptor's bound", what, bad_bound);
    CHECK(bad_norm == 0, "%s: %ld row norms differ from the materialised rows'", what, bad_norm);
    CHECK(bad_eval == 0, "%s: %ld elements' exact evaluation (xa_fill) is not RN32 of the exact value", what, bad_eval);
}

static void one_geometry(size_t B, size_t H, size_t W, size_t C, size_t Co, size_t k, size_t s, size_t p, int chw)
{
    vt_conv_geom g;
    CHECK_OK(vt_conv_geom_make(&g, (int64_t)B, (int64_t)H, (int64_t)W, (int64_t)C, (int64_t)k, (int64_t)s,
                               (int64_t)p, chw));
    const size_t M = B * g.Ho * g.Wo, K = k * k * C, nx = B * H * W * C, big = (M > K ? M : K) * Co;
    float *xin = malloc(nx * sizeof *xin), *w = malloc(K * Co * sizeof *w), *dy = malloc(M * Co * sizeof *dy),
          *col = malloc(M * K * sizeof *col), *ref32 = malloc(big * sizeof *ref32), *out32 = malloc(big * sizeof *out32);
    double *xr = malloc(big * sizeof *xr), *x = malloc(big * sizeof *x), *rn = malloc((M + K) * sizeof *rn),
           *rnr = malloc((M + K) * sizeof *rnr), *cn = malloc(Co * sizeof *cn), *cnr = malloc(Co * sizeof *cnr);
    for (size_t i = 0; i < nx; i++) xin[i] = vt_rng_next(&R) % 5 ? rnd_val() : 0.0f;
    for (size_t i = 0; i < K * Co; i++) w[i] = rnd_val();
    for (size_t i = 0; i < M * Co; i++) dy[i] = vt_rng_next(&R) % 3 ? rnd_val() : 0.0f;
    vt_im2col_f32(&g, xin, col);
    for (size_t m = 0; m < M; m++)
        for (size_t t = 0; t < K; t++)
            if (vt_f32_bits(vt_conv_patch(&g, xin, m, t)) != vt_f32_bits(col[m * K + t])) {
                CHECK(0, "vt_conv_patch (%zu, %zu) differs from im2col", m, t);
                m = M;
                break;
            }
    char what[200];
    uint64_t ne = 0, nk = 0;
    vt_elem_fault f;
    for (int threads = 1; threads <= 3; threads += 2) {
        vt_par_set_threads(threads);
        for (int o = 0; o < VT_ORDER_COUNT; o++) {
            vt_exec e;
            vt_exec_init(&e, (vt_order)o, PROVABLE, 11);
            vt_bounds bd, bdr;
            vt_conv_ref ref;
            /* forward: im2col(X) W */
            snprintf(what, sizeof what, "forward B%zu %zux%zux%zu Co %zu k %zu s %zu p %zu chw %d, order %d, %d threads", B,
                     H, W, C, Co, k, s, p, chw, o, threads);
            CHECK_OK(vt_gemm(&e, 0, 0, M, Co, K, col, w, xr, rnr, cnr, &bdr));
            CHECK_OK(vt_round_exact_op(&PROVABLE, xr, &bdr, M, Co, ref32, &ne, &nk, &f));
            CHECK_OK(vt_conv2d(&e, &g, Co, xin, w, x, rn, cn, &bd, &ref));
            CHECK_OK(vt_round_exact_op(&PROVABLE, x, &bd, M, Co, out32, &ne, &nk, &f));
            CHECK(bd.coef == bdr.coef && bd.xK == K && bd.xb == w && bd.xa_fill, "%s: descriptor", what);
            if (same_bits(what, out32, ref32, M, Co)) o = VT_ORDER_COUNT;
            if (o == 0) compare(what, &bd, x, rn, rnr, M, Co, K, col, K, 1, w, ref32);
            /* weight gradient: im2col(X)^T dY */
            snprintf(what, sizeof what, "weight gradient B%zu %zux%zux%zu Co %zu k %zu s %zu p %zu chw %d, order %d, %d threads",
                     B, H, W, C, Co, k, s, p, chw, o, threads);
            CHECK_OK(vt_gemm(&e, 1, 0, K, Co, M, col, dy, xr, rnr, cnr, &bdr));
            CHECK_OK(vt_round_exact_op(&PROVABLE, xr, &bdr, K, Co, ref32, &ne, &nk, &f));
            CHECK_OK(vt_conv2d_wgrad(&e, &g, Co, xin, dy, x, rn, cn, &bd, &ref));
            CHECK_OK(vt_round_exact_op(&PROVABLE, x, &bd, K, Co, out32, &ne, &nk, &f));
            CHECK(bd.coef == bdr.coef && bd.xK == M && bd.xb == dy && bd.xa_fill, "%s: descriptor", what);
            if (same_bits(what, out32, ref32, K, Co)) o = VT_ORDER_COUNT;
            if (o == 0) compare(what, &bd, x, rn, rnr, K, Co, M, col, 1, K, dy, ref32);
            vt_exec_free(&e);
        }
    }
    vt_par_set_threads(1);
    free(xin), free(w), free(dy), free(col), free(ref32), free(out32), free(xr), free(x), free(rn), free(rnr), free(cn),
        free(cnr);
}

/* the input gradient without G (vt_conv2d_dgrad, the kind conv2d_input_grad) against program 1's path:
 * the gather G, W' and vt_conv_dgrad_gemm (s >= 2) or vt_gemm (s = 1, or where the phase form declines).
 * For every order and 1, 2 and 3 threads: the exactly rounded bits equal (the first differing element
 * named); THE bound of every element (the tight bound, vt_bound_at) equal bit for bit, hence, with the
 * same exact value, the same log-rounding window (lo, hi, RN32) - checked through vt_eval_window - and
 * the same log; each FP64 result within that bound and the descriptor's screen; xa_fill gives G's
 * entries; the row norms G's (to 2^-40) and the column norms vt_conv_dgrad_gemm's. */
static void one_dgrad(size_t B, size_t H, size_t W, size_t C, size_t Co, size_t k, size_t s, size_t p)
{
    vt_conv_geom g;
    CHECK_OK(vt_conv_geom_make(&g, (int64_t)B, (int64_t)H, (int64_t)W, (int64_t)C, (int64_t)k, (int64_t)s,
                               (int64_t)p, 0));
    const size_t M = B * H * W, K = k * k * Co, N = C, nd = B * g.Ho * g.Wo * Co;
    float *dy = malloc(nd * sizeof *dy), *w = malloc(K * N * sizeof *w), *G = malloc(M * K * sizeof *G),
          *wpr = malloc(K * N * sizeof *wpr), *wp = malloc(K * N * sizeof *wp), *ref32 = malloc(M * N * sizeof *ref32),
          *out32 = malloc(M * N * sizeof *out32);
    double *xr = malloc(M * N * sizeof *xr), *x = malloc(M * N * sizeof *x), *rn = malloc(M * sizeof *rn),
           *rnr = malloc(M * sizeof *rnr), *cn = malloc(N * sizeof *cn), *cnr = malloc(N * sizeof *cnr);
    for (size_t i = 0; i < nd; i++) dy[i] = vt_rng_next(&R) % 4 ? rnd_val() : 0.0f;
    for (size_t i = 0; i < K * N; i++) w[i] = rnd_val();
    /* a few tiny values, so that some elements need the tight bound and the exact evaluator */
    for (size_t i = 0; i < nd; i += 7) dy[i] = (float)ldexp(dy[i], -20);
    vt_conv_dgather_f32(&g, Co, dy, G);
    vt_conv_wperm_f32(k, C, Co, w, wpr);
    for (size_t i = 0; i < M; i++)
        for (size_t t = 0; t < K; t++)
            if (vt_f32_bits(vt_conv_dgrad_entry(&g, Co, dy, i, t)) != vt_f32_bits(G[i * K + t])) {
                CHECK(0, "vt_conv_dgrad_entry (%zu, %zu) differs from the gather", i, t);
                i = M;
                break;
            }
    char what[200];
    uint64_t ne = 0, nk = 0;
    vt_elem_fault f;
    for (int threads = 1; threads <= 3; threads++) {
        vt_par_set_threads(threads);
        for (int o = 0; o < VT_ORDER_COUNT; o++) {
            vt_exec e;
            vt_exec_init(&e, (vt_order)o, PROVABLE, 11);
            vt_bounds bd, bdr;
            vt_conv_ref ref;
            int done = 0;
            snprintf(what, sizeof what, "input gradient B%zu %zux%zux%zu Co %zu k %zu s %zu p %zu, order %d, %d threads", B,
                     H, W, C, Co, k, s, p, o, threads);
            CHECK_OK(vt_conv_dgrad_gemm(&e, &g, Co, G, wpr, xr, rnr, cnr, &bdr, &done));
            if (!done) CHECK_OK(vt_gemm(&e, 0, 0, M, N, K, G, wpr, xr, rnr, cnr, &bdr));
            CHECK_OK(vt_round_exact_op(&PROVABLE, xr, &bdr, M, N, ref32, &ne, &nk, &f));
            CHECK_OK(vt_conv2d_dgrad(&e, &g, Co, dy, w, wp, x, rn, cn, &bd, &ref));
            CHECK_OK(vt_round_exact_op(&PROVABLE, x, &bd, M, N, out32, &ne, &nk, &f));
            CHECK(bd.coef == bdr.coef && bd.K == K && bd.xK == K && bd.xa_fill && !bd.ta && bd.tb == wp &&
                      vt_bounds_tight(&bd) && memcmp(wp, wpr, K * N * sizeof *wp) == 0,
                  "%s: descriptor", what);
            if (same_bits(what, out32, ref32, M, N)) o = VT_ORDER_COUNT;
            long bad_bound = 0, bad_norm = 0, bad_win = 0, tight_used = 0;
            vt_tight t, tr;
            vt_tight_init(&t, &bd, M, N);
            vt_tight_init(&tr, &bdr, M, N);
            for (size_t i = 0; i < M; i++) {
                if (!(fabs(rn[i] - rnr[i]) <= rnr[i] * 0x1p-40)) bad_norm++;
                for (size_t j = 0; j < N && i == 0; j++)
                    if (!(fabs(cn[j] - cnr[j]) <= cnr[j] * 0x1p-40)) bad_norm++;
                for (size_t j = 0; j < N; j++) {
                    const double Bm = vt_bound_at(&PROVABLE, &t, &bd, i, j, N), Br = vt_bound_at(&PROVABLE, &tr, &bdr, i, j, N);
                    if (vt_f64_bits(Bm) != vt_f64_bits(Br)) bad_bound++;
                    const double X = vt_dot_exact64(K, G + i * K, 1, wpr + j, N), err = fabs(x[i * N + j] - X);
                    if (!(err <= Bm * (1 + 0x1p-30) + fabs(X) * 0x1p-52 + 0x1p-1074) ||
                        !(Bm <= bd.coef * rn[i] * cn[j] * (1 + 0x1p-19)))
                        bad_bound++;
                    /* the log-rounding window of the elements the screen does not clear at once */
                    if (o != 0 || (i * N + j) % 3) continue;
                    tight_used++;
                    uint32_t lo, hi, mid, lor, hir, midr;
                    double X64, X64r;
                    CHECK_OK(vt_eval_window(&bd, &t, &ne, &nk, i, j, x[i * N + j], Bm, &lo, &hi, &mid, &X64));
                    CHECK_OK(vt_eval_window(&bdr, &tr, &ne, &nk, i, j, xr[i * N + j], Br, &lor, &hir, &midr, &X64r));
                    if (lo != lor || hi != hir || mid != midr || mid != vt_f32_bits(ref32[i * N + j])) bad_win++;
                }
            }
            vt_tight_free(&t);
            vt_tight_free(&tr);
            CHECK(bad_bound == 0, "%s: %ld elements' bound differs from program 1's or does not hold", what, bad_bound);
            CHECK(bad_norm == 0, "%s: %ld norms differ from program 1's", what, bad_norm);
            CHECK(bad_win == 0, "%s: %ld of %ld log windows differ from program 1's", what, bad_win, tight_used);
            vt_exec_free(&e);
        }
    }
    vt_par_set_threads(1);
    /* the plain forms (the benchmark baseline): the same products in FP64 and FP32, near the exact value */
    double *dy64 = malloc(nd * sizeof *dy64), *w64 = malloc(K * N * sizeof *w64), *y64 = malloc(M * N * sizeof *y64);
    for (size_t i = 0; i < nd; i++) dy64[i] = dy[i];
    for (size_t i = 0; i < K * N; i++) w64[i] = w[i];
    CHECK_OK(vt_conv2d_dgrad_plain_f64(&g, Co, dy64, w64, y64));
    CHECK_OK(vt_conv2d_dgrad_plain_f32(&g, Co, dy, w, out32));
    long bad_plain = 0;
    for (size_t i = 0; i < M; i++)
        for (size_t j = 0; j < N; j++) {
            double S = 0.0;
            for (size_t q = 0; q < K; q++) S += fabs((double)G[i * K + q] * (double)wpr[q * N + j]);
            const double X = vt_dot_exact64(K, G + i * K, 1, wpr + j, N);
            if (!(fabs(y64[i * N + j] - X) <= S * 0x1p-40 + 0x1p-1074) ||
                !(fabs(out32[i * N + j] - X) <= S * 0x1p-12 + 0x1p-140))
                bad_plain++;
        }
    CHECK(bad_plain == 0, "input gradient B%zu k %zu s %zu p %zu: %ld plain elements far from the exact value", B, k, s, p,
          bad_plain);
    free(dy64), free(w64), free(y64);
    free(dy), free(w), free(G), free(wpr), free(wp), free(ref32), free(out32), free(xr), free(x), free(rn), free(rnr),
        free(cn), free(cnr);
}

/* the direct implementations against the scalar reference, bit for bit: the FP64 results, the row and
 * column norms and the descriptor's coefficient, for the three kinds (the input gradient for
 * channels-last inputs), with 1 and 3 threads; the GEMM path's norms and coefficient too (its sums are
 * evaluated in another order) */
static void impls_agree(size_t B, size_t H, size_t W, size_t C, size_t Co, size_t k, size_t s, size_t p, int chw)
{
    vt_conv_geom g;
    CHECK_OK(vt_conv_geom_make(&g, (int64_t)B, (int64_t)H, (int64_t)W, (int64_t)C, (int64_t)k, (int64_t)s,
                               (int64_t)p, chw));
    const size_t M = B * g.Ho * g.Wo, K = k * k * C, Min = B * H * W, nx = Min * C;
    const size_t big = (M > Min ? M : Min) * (Co > C ? Co : C) + K * Co, nrn = M + K + Min;
    float *xin = malloc(nx * sizeof *xin), *w = malloc(K * Co * sizeof *w), *dy = malloc(M * Co * sizeof *dy),
          *wp = malloc(K * Co * sizeof *wp);
    double *x0 = malloc(big * sizeof *x0), *x1 = malloc(big * sizeof *x1), *rn0 = malloc(nrn * sizeof *rn0),
           *rn1 = malloc(nrn * sizeof *rn1), *cn0 = malloc((Co + C) * sizeof *cn0), *cn1 = malloc((Co + C) * sizeof *cn1);
    for (size_t i = 0; i < nx; i++) xin[i] = vt_rng_next(&R) % 5 ? rnd_val() : 0.0f;
    for (size_t i = 0; i < K * Co; i++) w[i] = rnd_val();
    for (size_t i = 0; i < M * Co; i++) dy[i] = vt_rng_next(&R) % 3 ? rnd_val() : 0.0f;
    static const char *vec[] = {"avx2", "avx512", "gemm"};
    for (int kind = 0; kind < 3; kind++) {
        if (kind == 2 && chw) continue;
        const size_t rows = kind == 0 ? M : kind == 1 ? K : Min, cols = kind == 2 ? C : Co;
        for (int threads = 1; threads <= 3; threads += 2) {
            vt_par_set_threads(threads);
            double coef0 = 0.0;
            for (int v = -1; v < 3; v++) {
                if (vt_conv_impl_set(v < 0 ? "scalar" : vec[v]) != VT_OK) continue;
                vt_exec e;
                vt_exec_init(&e, VT_ORDER_BLAS, PROVABLE, 11);
                vt_bounds bd;
                vt_conv_ref ref;
                double *x = v < 0 ? x0 : x1, *rn = v < 0 ? rn0 : rn1, *cn = v < 0 ? cn0 : cn1;
                if (kind == 0) CHECK_OK(vt_conv2d(&e, &g, Co, xin, w, x, rn, cn, &bd, &ref));
                else if (kind == 1) CHECK_OK(vt_conv2d_wgrad(&e, &g, Co, xin, dy, x, rn, cn, &bd, &ref));
                else CHECK_OK(vt_conv2d_dgrad(&e, &g, Co, dy, w, wp, x, rn, cn, &bd, &ref));
                vt_exec_free(&e);
                if (v < 0) {
                    coef0 = bd.coef;
                    continue;
                }
                CHECK((v == 2 || memcmp(x0, x1, rows * cols * sizeof *x0) == 0) && memcmp(rn0, rn1, rows * sizeof *rn0) == 0 &&
                          memcmp(cn0, cn1, cols * sizeof *cn0) == 0 && bd.coef == coef0,
                      "kind %d B%zu %zux%zux%zu Co %zu k %zu s %zu p %zu chw %d, %d threads: %s differs from scalar", kind,
                      B, H, W, C, Co, k, s, p, chw, threads, vec[v]);
            }
        }
    }
    vt_par_set_threads(1);
    free(xin), free(w), free(dy), free(wp), free(x0), free(x1), free(rn0), free(rn1), free(cn0), free(cn1);
}

int main(void)
{
    R.s = vt_test_seed(27);
    static const char *impls[] = {"gemm", "scalar", "avx2", "avx512"};
    for (int i = 0; i < 4; i++) {
        if (vt_conv_impl_set(impls[i]) != VT_OK) {
            printf("the processor does not run the \"%s\" convolutions: skipped\n", impls[i]);
            continue;
        }
        CHECK(strcmp(vt_conv_impl(), impls[i]) == 0, "vt_conv_impl after vt_conv_impl_set(\"%s\")", impls[i]);
        one_geometry(2, 8, 8, 3, 16, 3, 1, 1, 1);  /* the stem: channels-first, K 27, M 128 (one panel) */
        one_geometry(3, 7, 9, 5, 6, 3, 2, 1, 0);   /* stride 2, padding, odd sizes: M 60, K 45 */
        one_geometry(3, 8, 8, 4, 7, 1, 2, 0, 0);   /* 1x1 stride 2 (the shortcut) */
        one_geometry(2, 9, 11, 32, 9, 3, 1, 1, 0); /* K 288 panelled, M 198: a partial panel */
        one_geometry(5, 10, 9, 2, 4, 3, 1, 1, 0);  /* M 450: weight gradient panelled over 4 panels */
        one_dgrad(2, 8, 8, 5, 6, 3, 1, 1);    /* stride 1, padding 1: one class, K 54 */
        one_dgrad(3, 7, 9, 5, 6, 3, 2, 1);    /* stride 2, padding, odd sizes: four classes of 4, 2, 2, 1 taps */
        one_dgrad(3, 8, 7, 4, 7, 1, 2, 0);    /* 1x1 stride 2 (the shortcut): three classes no tap reaches */
        one_dgrad(2, 7, 7, 3, 5, 3, 2, 0);    /* stride 2, no padding */
        one_dgrad(2, 5, 6, 3, 4, 1, 1, 0);    /* 1x1 stride 1 */
        one_dgrad(2, 9, 7, 4, 40, 3, 1, 1);   /* K 360 panelled, stride 1: three panels */
        one_dgrad(2, 9, 11, 3, 40, 3, 2, 1);  /* K 360 panelled, stride 2: classes of 160 (two panels), 80, 80, 40 */
        one_dgrad(1, 6, 5, 2, 70, 3, 2, 1);   /* K 630: a class of 280 terms (three panels) */
        one_geometry(2, 16, 16, 3, 5, 3, 1, 1, 1);  /* the stem, Wo 16: computed transposed by every direct form */
        one_geometry(1, 32, 32, 3, 9, 3, 2, 1, 1);  /* the stem with stride 2 (transposed, the scalar gather) */
        one_geometry(1, 16, 16, 32, 4, 3, 1, 1, 1); /* channels-first, K 288 panelled, transposed */
        one_dgrad(2, 8, 8, 16, 16, 3, 1, 1);  /* Co 16: G's rows read in place, whole column blocks */
        one_dgrad(2, 9, 8, 3, 32, 3, 2, 1);   /* Co 32, stride 2, K 288 panelled: classes of 128 terms or fewer */
        one_dgrad(1, 7, 6, 3, 64, 3, 2, 1);   /* Co 64, stride 2: a class of 256 terms in two panels of two taps */
    }
    CHECK(vt_conv_impl_set("no-such") == VT_ERR_ARG, "vt_conv_impl_set of an unknown name");
    impls_agree(2, 8, 8, 3, 16, 3, 1, 1, 1);
    impls_agree(2, 16, 16, 3, 5, 3, 1, 1, 1);
    impls_agree(1, 32, 32, 3, 9, 3, 2, 1, 1);
    impls_agree(3, 7, 9, 5, 6, 3, 2, 1, 0);
    impls_agree(2, 9, 11, 32, 9, 3, 1, 1, 0);
    impls_agree(3, 9, 7, 16, 40, 3, 2, 1, 0);
    impls_agree(2, 8, 8, 64, 64, 3, 1, 1, 0);
    impls_agree(3, 8, 8, 4, 7, 1, 2, 0, 0);
    return vt_test_finish("test_conv2d");
}
