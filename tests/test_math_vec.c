/* test_math_vec - vt_exp_n (kernels/vt_math_vec.c) returns the scalar vt_exp's bits on every input,
 * in every implementation this build has and this CPU runs ("scalar", "vector", "avx2"): the special
 * values (NaN with payloads, infinities, signed zeros, subnormals, the overflow and underflow
 * thresholds and their neighbours, the scaling cases' edges k = -1021, -1022, 1023, 1024), the
 * arguments the kinds pass (differences of FP32 values, -2|u| of GELU), a stride over every FP32
 * bit pattern (2^32 / 257 of them, as doubles), and random FP64 bit patterns and random values in
 * [-750, 710]; array lengths 0..9 and unaligned starts (the lanes and the scalar tail), and in place.
 * `--exhaustive` instead takes every FP32 bit pattern (minutes; docs/benchmarks.md). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/vt_math.h"
#include "vt_test.h"

typedef void (*exp_fn)(size_t, const double *, double *);

static unsigned long long g_checked;

/* fn on x[0..n) (also shifted by one element and in place) against the scalar vt_exp */
static int check_block(const char *name, exp_fn fn, const double *x, size_t n)
{
    double *y = malloc((n + 1) * sizeof *y), *z = malloc((n + 1) * sizeof *z);
    if (!y || !z) {
        free(y), free(z);
        CHECK(0, "memory");
        return 0;
    }
    int bad = 0;
    for (int shift = 0; shift < 2 && !bad; shift++) {
        fn(n, x, y + shift);
        for (size_t i = 0; i < n && !bad; i++) {
            double want = vt_exp(x[i]);
            if (memcmp(&want, &y[i + shift], 8) != 0) {
                CHECK(0, "%s: exp(%a) = %a, the scalar gives %a (element %zu of %zu)", name, x[i], y[i + shift], want, i,
                      n);
                bad = 1;
            }
        }
    }
    memcpy(z, x, n * sizeof *z); /* in place */
    fn(n, z, z);
    for (size_t i = 0; i < n && !bad; i++) {
        double want = vt_exp(x[i]);
        if (memcmp(&want, &z[i], 8) != 0) {
            CHECK(0, "%s in place: exp(%a) = %a, the scalar gives %a", name, x[i], z[i], want);
            bad = 1;
        }
    }
    g_checked += n;
    free(y), free(z);
    return !bad;
}

static double bits(uint64_t b)
{
    double d;
    memcpy(&d, &b, 8);
    return d;
}

static void check_impl(const char *name, exp_fn fn, int exhaustive)
{
    /* special values and edges */
    double sp[] = {0.0, -0.0, 1.0, -1.0, 0.3, -0.3, 0.5, -0.5, 1e-300, -1e-300, 0x1p-1074, -0x1p-1074, 0x1p-1022,
                   INFINITY, -INFINITY, NAN, -NAN, bits(0x7ff0000000000001ULL), bits(0xfff8000000000123ULL),
                   0x1.62e42fefa39efp+9, nextafter(0x1.62e42fefa39efp+9, INFINITY),
                   nextafter(0x1.62e42fefa39efp+9, 0), -0x1.74910d52d3051p+9,
                   nextafter(-0x1.74910d52d3051p+9, -INFINITY), nextafter(-0x1.74910d52d3051p+9, 0), 709.0, 709.7,
                   -708.0, -708.5, -709.0, -709.5, -744.0, -745.0, 700.0, -700.0, 1e308, -1e308, 88.72, -103.97};
    size_t ns = sizeof sp / sizeof sp[0];
    check_block(name, fn, sp, ns);
    /* the scaling cases' edges: x near k ln2 for k around -1022 and 1024 */
    double edge[64];
    size_t ne = 0;
    for (int k = -1024; k <= -1019 && ne < 60; k++)
        for (double d = -0.6; d <= 0.6 && ne < 60; d += 0.3) edge[ne++] = (k + d) * 0x1.62e42fefa39efp-1;
    for (int k = 1021; k <= 1024 && ne < 64; k++) edge[ne++] = (k - 0.4) * 0x1.62e42fefa39efp-1;
    check_block(name, fn, edge, ne);
    /* lengths 0..9 */
    for (size_t n = 0; n < 10; n++) check_block(name, fn, sp + 3, n);
    /* every FP32 bit pattern with a stride (or all of them) */
    enum { BLK = 1 << 16 };
    double *x = malloc(BLK * sizeof *x);
    if (!x) {
        CHECK(0, "memory");
        return;
    }
    uint64_t step = exhaustive ? 1 : 257, cnt = 0;
    size_t k = 0;
    for (uint64_t b = 0; b < (1ULL << 32); b += step) {
        uint32_t u = (uint32_t)b;
        float f;
        memcpy(&f, &u, 4);
        x[k++] = (double)f;
        if (k == BLK) {
            if (!check_block(name, fn, x, k)) break;
            k = 0;
        }
        cnt++;
    }
    if (k) check_block(name, fn, x, k);
    /* random FP64 bit patterns, random values in the finite range, and the kinds' arguments */
    vt_rng rng = {20261202};
    for (int round = 0; round < 16; round++) {
        for (size_t i = 0; i < BLK; i++) {
            uint64_t r = vt_rng_next(&rng);
            switch (i % 4) {
            case 0: x[i] = bits(r); break;
            case 1: x[i] = -750.0 + 1460.0 * (double)(r >> 11) * 0x1p-53; break;
            case 2: { /* z_c - max z of FP32 logits */
                float a = (float)((double)(int32_t)(r >> 32) * 0x1p-24), m = (float)((double)(int32_t)r * 0x1p-26);
                x[i] = (double)a - (double)m;
                break;
            }
            default: { /* -2|u| of GELU from an FP32 x */
                float v = (float)((double)(int32_t)(r >> 32) * 0x1p-27);
                double d = v, u = 0.7978845608028654 * (d + 0.044715 * (d * d * d));
                x[i] = -2.0 * (u < 0 ? -u : u);
            }
            }
        }
        if (!check_block(name, fn, x, BLK)) break;
    }
    free(x);
    printf("%s: %llu FP32 patterns (stride %llu) and the other inputs: the scalar's bits\n", name,
           (unsigned long long)cnt, (unsigned long long)step);
}

int main(int argc, char **argv)
{
    int exhaustive = argc > 1 && strcmp(argv[1], "--exhaustive") == 0;
    int n = vt_math_impl_count(), run = 0;
    for (int i = 0; i < n; i++) {
        exp_fn fn = NULL;
        const char *name = vt_math_impl_exp_n(i, &fn);
        if (!name) {
            printf("implementation %d: not run by this CPU\n", i);
            continue;
        }
        check_impl(name, fn, exhaustive);
        run++;
    }
    CHECK(run >= 2, "the scalar and at least one lane implementation ran (%d)", run);
    CHECK(vt_math_impl() != NULL, "an implementation is picked");
    /* the picked one through the public entry */
    double v[5] = {0.1, -2.0, 700.0, -746.0, NAN}, w[5];
    vt_exp_n(5, v, w);
    for (int i = 0; i < 5; i++) CHECK(memcmp(&w[i], &(double){vt_exp(v[i])}, 8) == 0, "vt_exp_n (%s) element %d",
                                      vt_math_impl(), i);
    printf("vt_exp_n uses %s; %llu values checked\n", vt_math_impl(), g_checked);
    return vt_test_finish("test_math_vec");
}
