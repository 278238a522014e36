/* test_math_vec - vt_exp_n, vt_log_n and vt_tanh_n (kernels/vt_math_vec.c) return the scalar vt_exp's,
 * vt_log's and vt_tanh's bits on every input, in every implementation this build has and this CPU
 * runs ("scalar", "vector", "avx2"):
 *  - the special values (NaN with payloads and signs, infinities, signed zeros, subnormals, the
 *    smallest and largest normals, 1 and its neighbours; exp's overflow and underflow thresholds and
 *    the scaling cases' edges k = -1021, -1022, 1023, 1024; log's reduction boundaries: mantissas
 *    around sqrt(2) and sqrt(2)/2, the |f| < 2^-20 path's edges, the [1.38, 1.42) path's edges, the
 *    powers of two; tanh's arguments where e = exp(-2|u|) underflows, rounds to 1 or is subnormal),
 *    with array lengths 0..9, a shifted output (the lanes and the scalar tail) and in place;
 *  - a stride over every FP32 bit pattern (2^32 / 257 of them, as doubles);
 *  - random FP64 inputs: bit patterns and values in the ranges the kinds use (differences of FP32
 *    logits, -2|u| and u of GELU, FP32 probabilities, values near 1): VT_MATH_RANDOM per function
 *    (default 2^21).
 * VT_MATH_EXHAUSTIVE=1 (or the argument --exhaustive) takes every FP32 bit pattern instead of the
 * stride (minutes of CPU; docs/benchmarks.md has the run). */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/vt_math.h"
#include "vt_test.h"

static const char *const FN_NAME[VT_MATH_NFN] = {"exp", "log", "tanh"};
static double (*const FN_REF[VT_MATH_NFN])(double) = {vt_exp, vt_log, vt_tanh};

enum { MAX_IMPL = 8, BLK = 1 << 16 };
static int g_nimpl;
static const char *g_name[MAX_IMPL];
static vt_math_fn_n g_fn[MAX_IMPL][VT_MATH_NFN];
static unsigned long long g_checked[MAX_IMPL][VT_MATH_NFN], g_bad[MAX_IMPL][VT_MATH_NFN];

static double bits(uint64_t b)
{
    double d;
    memcpy(&d, &b, 8);
    return d;
}

static void report_bad(int m, int f, const char *how, double x, double got, double want)
{
    if (g_bad[m][f]++ < 5)
        CHECK(0, "%s %s%s: f(%a) = %a, the scalar gives %a", g_name[m], FN_NAME[f], how, x, got, want);
    /* later ones are counted (the first has failed the test) */
}

/* every implementation of f on x[0..n) against the scalar: into a shifted output and in place */
static void check_small(int f, const double *x, size_t n)
{
    double y[72], z[72];
    if (n > 64) n = 64;
    for (int m = 0; m < g_nimpl; m++) {
        for (int shift = 0; shift < 2; shift++) {
            g_fn[m][f](n, x, y + shift);
            for (size_t i = 0; i < n; i++) {
                double want = FN_REF[f](x[i]);
                if (memcmp(&want, &y[i + shift], 8) != 0) report_bad(m, f, "", x[i], y[i + shift], want);
            }
        }
        memcpy(z, x, n * sizeof *z);
        g_fn[m][f](n, z, z);
        for (size_t i = 0; i < n; i++) {
            double want = FN_REF[f](x[i]);
            if (memcmp(&want, &z[i], 8) != 0) report_bad(m, f, " in place", x[i], z[i], want);
        }
        g_checked[m][f] += n;
    }
}

/* every implementation of f on a block, the scalar's results computed once */
static void check_bulk(int f, const double *x, size_t n, double *want, double *got)
{
    for (size_t i = 0; i < n; i++) want[i] = FN_REF[f](x[i]);
    for (int m = 0; m < g_nimpl; m++) {
        g_fn[m][f](n, x, got);
        if (memcmp(want, got, n * sizeof *got) != 0)
            for (size_t i = 0; i < n; i++)
                if (memcmp(&want[i], &got[i], 8) != 0) report_bad(m, f, "", x[i], got[i], want[i]);
        g_checked[m][f] += n;
    }
}

static void check_special(void)
{
    const double common[] = {0.0, -0.0, 1.0, -1.0, 0.3, -0.3, 0.5, -0.5, 2.0, -2.0, 1e-300, -1e-300, 0x1p-1074,
                             -0x1p-1074, 0x1.fffffffffffffp-1023, -0x1.fffffffffffffp-1023, 0x1p-1022, -0x1p-1022,
                             0x1.0000000000001p-1022, DBL_MAX, -DBL_MAX, INFINITY, -INFINITY, NAN, -NAN,
                             bits(0x7ff0000000000001ULL), bits(0xfff8000000000123ULL), bits(0x7ff4000000000000ULL),
                             nextafter(1.0, 0), nextafter(1.0, 2), 1e308, -1e308, 88.72, -103.97, 0x1p-149, 0x1p-126};
    const double exp_sp[] = {0x1.62e42fefa39efp+9, nextafter(0x1.62e42fefa39efp+9, INFINITY),
                             nextafter(0x1.62e42fefa39efp+9, 0), -0x1.74910d52d3051p+9,
                             nextafter(-0x1.74910d52d3051p+9, -INFINITY), nextafter(-0x1.74910d52d3051p+9, 0), 709.0,
                             709.7, -708.0, -708.5, -709.0, -709.5, -744.0, -745.0, 700.0, -700.0};
    const double tanh_sp[] = {372.0, 372.5, 373.0, -372.5, 354.0, 354.5, -355.0, 19.0, 19.06, 20.0, -20.0, 18.4,
                              0x1p-27, -0x1p-27, 0x1p-60, 0.549, 0.5493, -0.5493, 1e-8, 710.0, -746.0};
    double v[160];
    size_t n;
    for (int f = 0; f < VT_MATH_NFN; f++) {
        check_small(f, common, sizeof common / sizeof common[0]);
        for (size_t len = 0; len < 10; len++) check_small(f, common + 3, len); /* lengths 0..9 */
    }
    check_small(VT_MATH_EXP, exp_sp, sizeof exp_sp / sizeof exp_sp[0]);
    check_small(VT_MATH_TANH, tanh_sp, sizeof tanh_sp / sizeof tanh_sp[0]);
    check_small(VT_MATH_TANH, exp_sp, sizeof exp_sp / sizeof exp_sp[0]);
    /* exp: the scaling cases' edges, x near k ln2 for k around -1022 and 1024 */
    n = 0;
    for (int k = -1024; k <= -1019; k++)
        for (double d = -0.6; d <= 0.6; d += 0.3) v[n++] = (k + d) * 0x1.62e42fefa39efp-1;
    for (int k = 1021; k <= 1024; k++) v[n++] = (k - 0.4) * 0x1.62e42fefa39efp-1;
    check_small(VT_MATH_EXP, v, n);
    check_small(VT_MATH_TANH, v, n);
    /* log: mantissas at the reduction's boundaries (high words around sqrt(2)'s 0x6a09e, the fold
     * point 0x6a09c, the [1.38, 1.42) path's 0x6147a and 0x6b851, the |f| < 2^-20 path's 0xffffe and
     * 0x00001), each with low words 0, 1 and all ones, at exponents -1074 (subnormal), -1022, -1, 0, 1,
     * 1023 */
    const uint32_t his[] = {0x00000, 0x00001, 0x00002, 0xffffd, 0xffffe, 0xfffff, 0x6a09b, 0x6a09c, 0x6a09d,
                            0x6a09e, 0x6147a, 0x61479, 0x6b851, 0x6b852};
    const uint32_t los[] = {0, 1, 0xffffffffu};
    const int exps[] = {1, 1022, 1023, 1024, 2046};
    n = 0;
    for (size_t a = 0; a < sizeof his / sizeof his[0]; a++)
        for (size_t b = 0; b < sizeof los / sizeof los[0]; b++) {
            for (size_t c = 0; c < sizeof exps / sizeof exps[0]; c++)
                v[n++] = bits(((uint64_t)exps[c] << 52) | ((uint64_t)his[a] << 32) | los[b]);
            v[n++] = bits(((uint64_t)his[a] << 32) | los[b]);        /* subnormal with that mantissa */
            v[n++] = bits(((uint64_t)(his[a] >> 10) << 32) | los[b]); /* a small subnormal */
            if (n + 8 > sizeof v / sizeof v[0]) {
                check_small(VT_MATH_LOG, v, n);
                n = 0;
            }
        }
    check_small(VT_MATH_LOG, v, n);
    n = 0;
    for (int e = -1074; e <= 1023 && n < 150; e += 15) v[n++] = ldexp(1.0, e); /* powers of two */
    check_small(VT_MATH_LOG, v, n);
}

/* x[0..BLK) for random round `round` of f */
static void random_block(int f, vt_rng *rng, double *x)
{
    for (size_t i = 0; i < BLK; i++) {
        uint64_t r = vt_rng_next(rng);
        int c = (int)(i % 4);
        if (c == 0) {
            x[i] = bits(r); /* any bit pattern */
            continue;
        }
        if (f == VT_MATH_EXP) {
            if (c == 1) x[i] = -750.0 + 1460.0 * (double)(r >> 11) * 0x1p-53;
            else if (c == 2) { /* z_c - max z of FP32 logits */
                float a = (float)((double)(int32_t)(r >> 32) * 0x1p-24), m = (float)((double)(int32_t)r * 0x1p-26);
                x[i] = (double)a - (double)m;
            } else { /* -2|u| of GELU from an FP32 x */
                float v = (float)((double)(int32_t)(r >> 32) * 0x1p-27);
                double d = v, u = 0.7978845608028654 * (d + 0.044715 * (d * d * d));
                x[i] = -2.0 * (u < 0 ? -u : u);
            }
        } else if (f == VT_MATH_LOG) {
            if (c == 1) x[i] = bits(r & 0x7fffffffffffffffULL); /* every positive pattern */
            else if (c == 2) {                                  /* FP32 probabilities */
                uint32_t u = (uint32_t)(r >> 33) % 0x3f800001u;
                float p;
                memcpy(&p, &u, 4);
                x[i] = p;
            } else /* near 1: 1 + d, |d| < 2^-(r mod 64) */
                x[i] = 1.0 + ldexp((double)(int32_t)r * 0x1p-31, -(int)((r >> 32) % 64));
        } else {
            if (c == 1) x[i] = -20.0 + 40.0 * (double)(r >> 11) * 0x1p-53;
            else if (c == 2) { /* u of GELU from an FP32 x */
                float v = (float)((double)(int32_t)(r >> 32) * 0x1p-27);
                double d = v;
                x[i] = 0.7978845608028654 * (d + 0.044715 * (d * d * d));
            } else /* small and large magnitudes */
                x[i] = ldexp((double)(int32_t)r * 0x1p-31, (int)((r >> 32) % 80) - 60);
        }
    }
}

int main(int argc, char **argv)
{
    const char *ex = getenv("VT_MATH_EXHAUSTIVE"), *rnd = getenv("VT_MATH_RANDOM");
    int exhaustive = (argc > 1 && strcmp(argv[1], "--exhaustive") == 0) || (ex && strcmp(ex, "1") == 0);
    unsigned long long nrand = 1ULL << 21;
    if (rnd && *rnd) {
        char *end;
        nrand = strtoull(rnd, &end, 10);
        if (*end) {
            fprintf(stderr, "VT_MATH_RANDOM=%s: not a count\n", rnd);
            return 2;
        }
    }
    int n = vt_math_impl_count(), run = 0;
    for (int i = 0; i < n && g_nimpl < MAX_IMPL; i++) {
        const char *name = vt_math_impl_get(i, VT_MATH_EXP, NULL);
        if (!name) {
            printf("implementation %d: not run by this CPU\n", i);
            continue;
        }
        for (int f = 0; f < VT_MATH_NFN; f++)
            CHECK(vt_math_impl_get(i, f, &g_fn[g_nimpl][f]) != NULL, "%s has %s", name, FN_NAME[f]);
        g_name[g_nimpl++] = name;
        run++;
    }
    CHECK(run >= 2, "the scalar and at least one lane implementation ran (%d)", run);
    CHECK(vt_math_impl_get(0, VT_MATH_NFN, NULL) == NULL && vt_math_impl_get(n, 0, NULL) == NULL,
          "out-of-range queries");

    check_special();

    double *x = malloc(BLK * sizeof *x), *want = malloc(BLK * sizeof *want), *got = malloc(BLK * sizeof *got);
    if (!x || !want || !got) {
        free(x), free(want), free(got);
        CHECK(0, "memory");
        return vt_test_finish("test_math_vec");
    }
    /* every FP32 bit pattern with a stride (or all of them), through the three functions */
    uint64_t step = exhaustive ? 1 : 257, cnt = 0;
    size_t k = 0;
    for (uint64_t b = 0; b < (1ULL << 32); b += step) {
        uint32_t u = (uint32_t)b;
        float fl;
        memcpy(&fl, &u, 4);
        x[k++] = (double)fl;
        cnt++;
        if (k == BLK || b + step >= (1ULL << 32)) {
            for (int f = 0; f < VT_MATH_NFN; f++) check_bulk(f, x, k, want, got);
            k = 0;
        }
    }
    /* random FP64 inputs: nrand per function */
    for (int f = 0; f < VT_MATH_NFN; f++) {
        vt_rng rng = {20261202 + (uint64_t)f};
        for (unsigned long long done = 0; done < nrand; done += BLK) {
            random_block(f, &rng, x);
            size_t len = nrand - done < BLK ? (size_t)(nrand - done) : BLK;
            check_bulk(f, x, len, want, got);
            if (done == 0) check_small(f, x, 64); /* shifted and in place on random inputs too */
        }
    }
    free(x), free(want), free(got);
    printf("%llu FP32 patterns (stride %llu), %llu random FP64 inputs per function\n", (unsigned long long)cnt,
           (unsigned long long)step, nrand);
    for (int m = 0; m < g_nimpl; m++)
        for (int f = 0; f < VT_MATH_NFN; f++)
            printf("%s %s: %llu values checked, %llu mismatches\n", g_name[m], FN_NAME[f], g_checked[m][f],
                   g_bad[m][f]);

    /* the picked one through the public entries */
    CHECK(vt_math_impl() != NULL, "an implementation is picked");
    double v[6] = {0.1, -2.0, 700.0, -746.0, NAN, 0x1p-1070}, w[6];
    vt_exp_n(6, v, w);
    for (int i = 0; i < 6; i++)
        CHECK(memcmp(&w[i], &(double){vt_exp(v[i])}, 8) == 0, "vt_exp_n (%s) element %d", vt_math_impl(), i);
    vt_log_n(6, v, w);
    for (int i = 0; i < 6; i++)
        CHECK(memcmp(&w[i], &(double){vt_log(v[i])}, 8) == 0, "vt_log_n (%s) element %d", vt_math_impl(), i);
    vt_tanh_n(6, v, w);
    for (int i = 0; i < 6; i++)
        CHECK(memcmp(&w[i], &(double){vt_tanh(v[i])}, 8) == 0, "vt_tanh_n (%s) element %d", vt_math_impl(), i);
    /* the scalar tanh's sanity (accuracy is not what this test is about, but tanh is new here) */
    CHECK(vt_tanh(INFINITY) == 1.0 && vt_tanh(-INFINITY) == -1.0 && vt_tanh(0.0) == 0.0 && isnan(vt_tanh(NAN)),
          "tanh's special values");
    CHECK(fabs(vt_tanh(0.5) - tanh(0.5)) < 1e-15 && fabs(vt_tanh(-3.0) - tanh(-3.0)) < 1e-15, "tanh's values");
    printf("vt_exp_n, vt_log_n, vt_tanh_n use %s\n", vt_math_impl());
    return vt_test_finish("test_math_vec");
}
