/* The invariant, shown on one machine: an operation rounded by the trainer with one
 * evaluation order and replayed with every other order (including adversarial ones:
 * a random permutation and sorted-by-magnitude) yields bit-identical FP32 outputs.
 * Every trainer order's output must moreover equal RN32 of the exact value, computed here
 * independently of the rounding layer (vt_dot_exact32 and friends): in log rounding too (with
 * provable bounds), whose trainer stores RN32(exact) for the elements it logs.
 * VT_ROUNDING=exact: exact rounding (no log).
 * VT_BOUND_MODE=probabilistic: the probabilistic bound, on the unstructured generators only (it
 * carries no guarantee on structured data: docs/rounding.md).
 * Seeded (VT_TEST_SEED) so any failure can be reproduced. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/vt_bytes.h"
#include "kernels/vt_kernels.h"
#include "kernels/vt_math.h"
#include "rounding/vt_exact.h"
#include "rounding/vt_round.h"
#include "vt_test.h"

static long g_cases, g_dir, g_val, g_elems;

enum { GEN_GAUSS, GEN_CANCEL, GEN_WIDE, GEN_SUBNORMAL, GEN_STAGNATION, GEN_IDENTICAL, GEN_HUGE, GEN_TIES, GEN_COUNT };
static const char *gen_name[GEN_COUNT] = {"gaussian",  "cancellation", "wide-range", "subnormal",
                                          "stagnation", "identical",    "near-max",   "ties"};
#define GEN_UNSTRUCTURED 4 /* generators below this one are random data */
static int g_exact, g_ngen = GEN_COUNT;
static long g_exact_checked, g_exact_computed;

static float draw(vt_rng *g, int gen)
{
    double v;
    switch (gen) {
    case GEN_WIDE: v = ldexp(1.0 + vt_rng_uniform(g), (int)(vt_rng_next(g) % 121) - 60); break;
    case GEN_SUBNORMAL:
        v = (vt_rng_next(g) % 3 == 0) ? ldexp(vt_rng_uniform(g), -126 - (int)(vt_rng_next(g) % 23))
                                      : vt_rng_normal(g);
        break;
    case GEN_IDENTICAL: return 0.1f;
    case GEN_HUGE: v = ldexp(1.0 + vt_rng_uniform(g), 54); break; /* products near 2^110: sums up to 2^127 */
    case GEN_TIES: { /* multiples of 2^-24 near 1: exact sums land on FP32 ties */
        static const double t[] = {1.0, 0x1p-24, -0x1p-24, 0x1p-23, 3 * 0x1p-24};
        v = t[vt_rng_next(g) % 5];
        break;
    }
    default: v = vt_rng_normal(g); break;
    }
    if (vt_rng_next(g) % 64 == 0) v = 0.0;
    if (vt_rng_next(g) & 1) v = -v;
    return (float)v;
}

/* Fill a K-long reduction vector pair so that terms cancel: second half mirrors the first
 * half negated, with a small perturbation. Used along the reduction dimension. */
static void fill(vt_rng *g, int gen, float *p, size_t n)
{
    for (size_t i = 0; i < n; i++) p[i] = draw(g, gen);
}

static vt_exec g_exec[VT_ORDER_COUNT];

/* Record with order t, replay with every order r; compare. x[o] holds the FP64 results of
 * order o, b[o] its bounds. */
static void cross_check(const char *what, double *const *x, const vt_bounds *b, size_t rows, size_t cols,
                        uint64_t seed, const float *exact_ref)
{
    size_t n = rows * cols;
    float *ref = malloc(n * sizeof(float)), *out = malloc(n * sizeof(float));
    vt_steplog log;
    vt_steplog_init(&log, 0);
    for (int t = 0; t < VT_ORDER_COUNT; t++) {
        vt_rctx rc;
        vt_rctx_init(&rc, VT_RMODE_RECORD, g_exec[t].bound);
        CHECK_OK(vt_rctx_begin_step(&rc, 1, &log));
        vt_err err = vt_round(&rc, 1, x[t], &b[t], rows, cols, ref);
        CHECK(err == VT_OK, "%s: record with %s: %s (seed %llu)", what, vt_order_name((vt_order)t), vt_errmsg(),
              (unsigned long long)seed);
        if (err) continue;
        g_dir += (long)rc.stats.logged_dir;
        g_val += (long)rc.stats.logged_val;
        g_elems += (long)n;
        for (int r = 0; r < VT_ORDER_COUNT; r++) {
            vt_rctx pc;
            vt_rctx_init(&pc, VT_RMODE_REPLAY, g_exec[r].bound);
            CHECK_OK(vt_rctx_begin_step(&pc, 1, &log));
            err = vt_round(&pc, 1, x[r], &b[r], rows, cols, out);
            CHECK(err == VT_OK, "%s: trainer %s, replayer %s: %s (seed %llu)", what, vt_order_name((vt_order)t),
                  vt_order_name((vt_order)r), vt_errmsg(), (unsigned long long)seed);
            if (err) continue;
            CHECK_OK(vt_rctx_end_step(&pc));
            size_t diff = 0;
            for (size_t i = 0; i < n; i++) diff += vt_f32_bits(ref[i]) != vt_f32_bits(out[i]);
            CHECK(diff == 0, "%s: trainer %s, replayer %s: %zu of %zu outputs differ (seed %llu)", what,
                  vt_order_name((vt_order)t), vt_order_name((vt_order)r), diff, n, (unsigned long long)seed);
            if (g_exact) g_exact_computed += (long)pc.stats.exact;
        }
        if (g_exact) {
            CHECK(log.n_ops == 0, "%s: exact rounding wrote a log", what);
            g_exact_computed += (long)rc.stats.exact;
        }
        if (exact_ref && g_exec[t].bound.mode == VT_BOUND_PROVABLE) {
            size_t diff = 0, first = n;
            for (size_t i = 0; i < n; i++)
                if (vt_f32_bits(ref[i]) != vt_f32_bits(exact_ref[i])) diff++, first = first < n ? first : i;
            CHECK(diff == 0, "%s: order %s: %zu of %zu outputs are not RN32 of the exact value (first %zu: %a, exact "
                  "%a; seed %llu)", what, vt_order_name((vt_order)t), diff, n, first,
                  first < n ? (double)ref[first] : 0.0, first < n ? (double)exact_ref[first] : 0.0,
                  (unsigned long long)seed);
            g_exact_checked += (long)n;
        }
    }
    g_cases++;
    vt_steplog_free(&log);
    free(ref);
    free(out);
}

static void gemm_case(vt_rng *g, size_t M, size_t N, size_t K, int gen, int form, uint64_t seed)
{
    int ta = form == 2, tb = form == 1;
    float *A = malloc(M * K * sizeof(float)), *B = malloc(K * N * sizeof(float));
    fill(g, gen, A, M * K);
    fill(g, gen, B, K * N);
    if (gen == GEN_CANCEL && K >= 2) {
        /* op(A) row i: second half = -(first half); op(B) col j: second half = first half
         * perturbed, so sum_k a_ik b_kj nearly cancels. */
        size_t h = K / 2;
        for (size_t i = 0; i < M; i++)
            for (size_t k = 0; k < h; k++) {
                float *dst = ta ? &A[(k + h) * M + i] : &A[i * K + k + h];
                *dst = -(ta ? A[k * M + i] : A[i * K + k]);
            }
        for (size_t j = 0; j < N; j++)
            for (size_t k = 0; k < h; k++) {
                float src = tb ? B[j * K + k] : B[k * N + j];
                float *dst = tb ? &B[j * K + k + h] : &B[(k + h) * N + j];
                *dst = src * (1.0f + (float)ldexp(vt_rng_uniform(g) - 0.5, -18));
            }
    }
    if (gen == GEN_STAGNATION) {
        /* op(A) row: 1, a small term, then terms just under half an FP64 ulp of 1; op(B) = 1 */
        for (size_t i = 0; i < M; i++)
            for (size_t k = 0; k < K; k++)
                A[ta ? k * M + i : i * K + k] = k == 0 ? 1.0f : k == 1 ? 0x1p-30f : 0x1.fffffep-54f;
        for (size_t k = 0; k < K * N; k++) B[k] = 1.0f;
    }
    if (gen == GEN_IDENTICAL)
        for (size_t k = 0; k < K * N; k++) B[k] = 0.3f;
    if (gen == GEN_TIES)
        for (size_t k = 0; k < K * N; k++) B[k] = 1.0f;
    double *x[VT_ORDER_COUNT];
    double *rn[VT_ORDER_COUNT], *cn[VT_ORDER_COUNT];
    vt_bounds b[VT_ORDER_COUNT];
    for (int o = 0; o < VT_ORDER_COUNT; o++) {
        x[o] = malloc(M * N * sizeof(double));
        rn[o] = malloc(M * sizeof(double));
        cn[o] = malloc(N * sizeof(double));
        CHECK_OK(vt_gemm(&g_exec[o], ta, tb, M, N, K, A, B, x[o], rn[o], cn[o], &b[o]));
    }
    float *ex = NULL;
    { /* RN32 of the exact products, from the operands directly (both modes: log rounding stores
       * RN32(exact) for the elements it logs, its own value only where no boundary is near) */
        ex = malloc(M * N * sizeof(float));
        for (size_t i = 0; i < M; i++)
            for (size_t j = 0; j < N; j++)
                ex[i * N + j] = vt_dot_exact32(K, ta ? A + i : A + i * K, ta ? M : 1, tb ? B + j * K : B + j,
                                               tb ? 1 : N);
    }
    char what[128];
    snprintf(what, sizeof what, "gemm form %d %zux%zux%zu %s", form, M, N, K, gen_name[gen]);
    cross_check(what, x, b, M, N, seed, ex);
    for (int o = 0; o < VT_ORDER_COUNT; o++) free(x[o]), free(rn[o]), free(cn[o]);
    free(ex);
    free(A);
    free(B);
}

static void sum_case(vt_rng *g, size_t M, size_t N, int gen, int cols, uint64_t seed)
{
    float *X = malloc(M * N * sizeof(float));
    fill(g, gen, X, M * N);
    size_t nout = cols ? N : M;
    double *x[VT_ORDER_COUNT], *bb[VT_ORDER_COUNT];
    vt_bounds b[VT_ORDER_COUNT];
    for (int o = 0; o < VT_ORDER_COUNT; o++) {
        x[o] = malloc(nout * sizeof(double));
        bb[o] = malloc(nout * sizeof(double));
        if (cols)
            CHECK_OK(vt_colsum(&g_exec[o], M, N, X, x[o], bb[o], &b[o]));
        else
            CHECK_OK(vt_rowsum(&g_exec[o], M, N, X, x[o], bb[o], &b[o]));
    }
    float *ex = NULL;
    {
        static const float one = 1.0f;
        ex = malloc(nout * sizeof(float));
        for (size_t o = 0; o < nout; o++)
            ex[o] = cols ? vt_dot_exact32(M, X + o, N, &one, 0) : vt_dot_exact32(N, X + o * N, 1, &one, 0);
    }
    char what[128];
    snprintf(what, sizeof what, "%s %zux%zu %s", cols ? "colsum" : "rowsum", M, N, gen_name[gen]);
    cross_check(what, x, b, 1, nout, seed, ex);
    for (int o = 0; o < VT_ORDER_COUNT; o++) free(x[o]), free(bb[o]);
    free(ex);
    free(X);
}

static void softmax_case(vt_rng *g, size_t N, size_t C, uint64_t seed)
{
    float *Z = malloc(N * C * sizeof(float));
    uint8_t *y = malloc(N);
    for (size_t i = 0; i < N * C; i++) Z[i] = (float)(vt_rng_normal(g) * 4.0);
    for (size_t i = 0; i < N; i++) y[i] = (uint8_t)(vt_rng_next(g) % (C < 256 ? C : 256));
    double *x[VT_ORDER_COUNT], *bb[VT_ORDER_COUNT];
    vt_bounds b[VT_ORDER_COUNT];
    for (int o = 0; o < VT_ORDER_COUNT; o++) {
        x[o] = malloc(N * C * sizeof(double));
        bb[o] = malloc(N * C * sizeof(double));
        CHECK_OK(vt_softmax(&g_exec[o], N, C, Z, x[o], bb[o], &b[o]));
    }
    float *ex = NULL;
    { /* the definition: e_c = vt_exp(z_c - max z), q_c = e_c / RN64(exact sum of e), RN32(q_c) */
        ex = malloc(N * C * sizeof(float));
        double *e = malloc(C * sizeof(double));
        for (size_t i = 0; i < N; i++) {
            float m = Z[i * C];
            for (size_t c = 1; c < C; c++) m = Z[i * C + c] > m ? Z[i * C + c] : m;
            for (size_t c = 0; c < C; c++) e[c] = vt_exp((double)Z[i * C + c] - (double)m);
            double sd = vt_sum_exact64(C, e, 1);
            for (size_t c = 0; c < C; c++) ex[i * C + c] = (float)(e[c] / sd);
        }
        free(e);
    }
    char what[128];
    snprintf(what, sizeof what, "softmax %zux%zu", N, C);
    cross_check(what, x, b, N, C, seed, ex);
    free(ex);
    /* the loss from the (identical) rounded probabilities */
    float *P = malloc(N * C * sizeof(float));
    for (size_t i = 0; i < N * C; i++) P[i] = (float)x[0][i];
    double lx[VT_ORDER_COUNT], lb[VT_ORDER_COUNT];
    double *lxp[VT_ORDER_COUNT];
    vt_bounds lbs[VT_ORDER_COUNT];
    for (int o = 0; o < VT_ORDER_COUNT; o++) {
        CHECK_OK(vt_xent_loss(&g_exec[o], N, C, P, y, &lx[o], &lb[o], &lbs[o]));
        lxp[o] = &lx[o];
    }
    float lex = 0;
    { /* RN32 of the exact sum of l_i = -vt_log(max(P_iy, 2^-149)) / N */
        double *l = malloc(N * sizeof(double));
        for (size_t i = 0; i < N; i++) {
            double q = (double)P[i * C + y[i]];
            l[i] = -vt_log(q < 0x1p-149 ? 0x1p-149 : q) / (double)N;
        }
        lex = vt_sum_exact32(N, l, 1);
        free(l);
    }
    snprintf(what, sizeof what, "xent loss %zux%zu", N, C);
    cross_check(what, lxp, lbs, 1, 1, seed, &lex);
    for (int o = 0; o < VT_ORDER_COUNT; o++) free(x[o]), free(bb[o]);
    free(P);
    free(Z);
    free(y);
}

int main(void)
{
    uint64_t seed = vt_test_seed(20261130);
    vt_rng g = {seed};
    /* smaller budget under sanitizers, and in the BLAS matrix (VT_QUICK: scripts/blas-matrix.sh) */
    int asan = getenv("VT_ASAN") != NULL || getenv("VT_QUICK") != NULL;
    const char *pm = getenv("VT_BOUND_MODE");
    vt_bound_cfg bound = {.mode = VT_BOUND_PROVABLE};
    if (pm && strcmp(pm, "probabilistic") == 0) bound.mode = VT_BOUND_PROBABILISTIC, g_ngen = GEN_UNSTRUCTURED;
    const char *rm = getenv("VT_ROUNDING");
    if (rm && strcmp(rm, "exact") == 0) bound.rounding = VT_ROUNDING_EXACT, g_exact = 1;
    printf("rounding %s, bounds %s\n", g_exact ? "exact" : "log",
           bound.mode == VT_BOUND_PROBABILISTIC ? "probabilistic" : "provable");
    for (int o = 0; o < VT_ORDER_COUNT; o++) vt_exec_init(&g_exec[o], (vt_order)o, bound, seed + 17 * (uint64_t)o);

    static const size_t Ks[] = {1, 2, 3, 7, 16, 64, 100, 256, 1000, 1024, 4096, 16384, 65536, 1u << 20};
    const size_t budget = asan ? ((size_t)1 << 17) : ((size_t)1 << 20); /* M*N*K per case */
    for (size_t ki = 0; ki < sizeof Ks / sizeof Ks[0]; ki++) {
        size_t K = Ks[ki];
        if (asan && K > 65536) continue;
        for (int gen = 0; gen < g_ngen; gen++) {
            size_t mn = budget / K;
            if (mn > 4096) mn = 4096;
            if (mn < 1) mn = 1;
            size_t M = 1 + vt_rng_next(&g) % (mn < 64 ? mn : 64);
            size_t N = mn / M ? mn / M : 1;
            if (N > 512) N = 512;
            gemm_case(&g, M, N, K, gen, (int)(vt_rng_next(&g) % 3), seed);
        }
    }
    for (int rep = 0; rep < (asan ? 3 : 8); rep++) {
        size_t M = 1 + vt_rng_next(&g) % (asan ? 4096 : 65536), N = 1 + vt_rng_next(&g) % 16;
        int gen = (int)(vt_rng_next(&g) % (uint64_t)g_ngen);
        sum_case(&g, M, N, gen, 1, seed);
        sum_case(&g, N, M, gen, 0, seed);
    }
    static const size_t Cs[] = {2, 10, 100, 1000};
    for (size_t ci = 0; ci < 4; ci++) softmax_case(&g, asan ? 16 : 64, Cs[ci], seed);

    printf("%ld cases, %ld elements rounded per order, %ld direction and %ld value entries logged\n", g_cases,
           g_elems / VT_ORDER_COUNT, g_dir / VT_ORDER_COUNT, g_val / VT_ORDER_COUNT);
    if (g_exact) {
        printf("exact rounding: %ld outputs checked against RN32 of the exact value; %ld element evaluations by "
               "the exact accumulator (all orders, trainer and replayer)\n", g_exact_checked, g_exact_computed);
        CHECK(g_exact_checked > 100000, "exact rounding: too few outputs checked (%ld)", g_exact_checked);
        CHECK(g_exact_computed > 50, "exact rounding: the exact accumulator was never needed (%ld)", g_exact_computed);
    } else {
        CHECK(g_dir > 50, "the property test must exercise direction entries (%ld)", g_dir);
        CHECK(g_val > 5, "the property test must exercise value entries (%ld)", g_val);
    }
    for (int o = 0; o < VT_ORDER_COUNT; o++) vt_exec_free(&g_exec[o]);
    return vt_test_finish("test_invariant");
}
