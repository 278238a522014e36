/* test_dist - the communicator (dist/vt_dist.h) and distributed exact rounding
 * (rounding/vt_round_dist.h), run by ctest as one process and under `mpirun -np N` for N = 1..4
 * (tests/cmake/dist.cmake: --ranks N; exit 77 when the build has no MPI and N > 1).
 *
 * Every rank makes the same data from the same seed and takes its share of each element's terms
 * by one of several splits (contiguous blocks, round-robin, random, all on one rank, skewed); its
 * partial and bound come from a plain FP64 sum with the provable coefficient bound, or from the
 * compensated sum, or the plain sum with an inflated bound and the rigorous one as the refinement
 * (vt_round_dist_refined: the refinement round decides some, the rest take the exact phase, the
 * same elements as with the rigorous bounds alone; the random sums refine more elements than one
 * allgather takes, so they go to their owners, the adversarial ones fewer, gathered). Every rank's
 * result must equal, bit for bit, RN32 of the exact global sum
 * computed here in one process by vt_xacc over all the terms (and by MPFR where the build has it).
 * Adversarial elements sit on FP32 rounding boundaries and ties (normal, subnormal, near FLT_MAX)
 * behind huge cancellations, so the exact phase must run for them (asserted); +-0, empty elements
 * and tiny values of either sign are there too. Also: the collectives, the agreement on failure
 * (every rank gets the lowest failing rank's error, named), mismatched arguments across ranks and
 * a failing callback on one rank (the same error everywhere, no hang), an overflowing result, and
 * more elements than one gathered chunk; the losses' quotients of an exact sum over the ranks
 * (vt_round_dist_quot32, test_quot). */
#include <float.h>
#include <pthread.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef VT_TEST_MPFR
#include <mpfr.h>
#endif

#include "common/vt_bytes.h"
#include "dist/vt_dist.h"
#include "rounding/vt_bound.h"
#include "rounding/vt_exact.h"
#include "rounding/vt_round_dist.h"
#include "vt_test.h"

static _Thread_local int RANK, SIZE; /* per thread: the thread shares run the tests too */

/* ---------------------------------------------------------------- data */

typedef struct {
    size_t n;
    size_t *off; /* element e's terms: t[off[e] .. off[e+1]) */
    double *t;
    size_t cap;
    int *tie;    /* 1: the exact value is an FP32 tie or boundary with terms that cannot all be exact */
} elems;

static void el_begin(elems *E)
{
    if (E->n % 1024 == 0) {
        E->off = realloc(E->off, (E->n + 1025) * sizeof *E->off);
        E->tie = realloc(E->tie, (E->n + 1025) * sizeof *E->tie);
        if (!E->off || !E->tie) abort();
        if (E->n == 0) E->off[0] = 0;
    }
    E->tie[E->n] = 0;
    E->off[E->n + 1] = E->off[E->n];
    E->n++;
}

static void el_add(elems *E, double v)
{
    size_t k = E->off[E->n];
    if (k == E->cap) {
        E->cap = E->cap ? 2 * E->cap : 4096;
        E->t = realloc(E->t, E->cap * sizeof *E->t);
        if (!E->t) abort();
    }
    E->t[k] = v;
    E->off[E->n]++;
}

static void el_free(elems *E)
{
    free(E->off);
    free(E->t);
    free(E->tie);
    memset(E, 0, sizeof *E);
}

/* Shuffles element e's terms (seeded, the same on every rank). */
static void el_shuffle(elems *E, size_t e, vt_rng *r)
{
    double *t = E->t + E->off[e];
    size_t K = E->off[e + 1] - E->off[e];
    for (size_t k = K; k > 1; k--) {
        size_t j = (size_t)(vt_rng_next(r) % k);
        double s = t[k - 1];
        t[k - 1] = t[j];
        t[j] = s;
    }
}

/* v and -v for huge and tiny v: they cancel exactly, leaving FP64 partials and bounds far off. */
static void add_cancelling(elems *E, vt_rng *r, int pairs, int lo, int hi)
{
    for (int p = 0; p < pairs; p++) {
        int ex = lo + (int)(vt_rng_next(r) % (uint64_t)(hi - lo + 1));
        double v = ldexp(1.0 + vt_rng_uniform(r), ex);
        el_add(E, v);
        el_add(E, -v);
    }
}

/* Realistic elements: sums of K products of FP32 values of mixed scale and sign (some behind a
 * cancellation). */
static void make_random(elems *E, size_t n, vt_rng *r)
{
    for (size_t e = 0; e < n; e++) {
        el_begin(E);
        size_t K = (size_t)(vt_rng_next(r) % 65);
        int scale = (int)(vt_rng_next(r) % 41) - 20;
        for (size_t k = 0; k < K; k++) {
            float a = (float)ldexp(vt_rng_normal(r), scale), b = (float)vt_rng_normal(r);
            if (vt_rng_next(r) % 8 == 0) b = 0.0f; /* dead units */
            el_add(E, (double)a * (double)b);
        }
        if (e % 8 == 0) { /* one in eight behind a cancellation: some of these need the exact phase */
            add_cancelling(E, r, 1, scale + 20, scale + 60);
            el_shuffle(E, E->n - 1, r);
        }
    }
}

/* One element whose exact value is f + d + d2 (each term a double), behind cancelling pairs. */
static void adv_elem(elems *E, vt_rng *r, double f, double d, double d2, int tie, int lo, int hi)
{
    el_begin(E);
    el_add(E, f);
    if (d != 0) el_add(E, d);
    if (d2 != 0) el_add(E, d2);
    add_cancelling(E, r, 1 + (int)(vt_rng_next(r) % 4), lo, hi);
    E->tie[E->n - 1] = tie;
    el_shuffle(E, E->n - 1, r);
}

static void make_adversarial(elems *E, vt_rng *r)
{
    for (int i = 0; i < 60; i++) {
        /* a normal FP32 value, its successor, the tie between them */
        float f = (float)ldexp(1.0 + vt_rng_uniform(r), (int)(vt_rng_next(r) % 200) - 100);
        if (i % 2) f = -f;
        double u = (double)nextafterf(f, f > 0 ? INFINITY : -INFINITY) - (double)f; /* one ulp, signed */
        if (i % 10 == 7) f = (float)ldexp(1.0, (int)(vt_rng_next(r) % 60) - 30); /* a power of two: below it the */
        if (i % 10 == 7) u = -(double)f * 0x1p-24;                                /* spacing is half */
        int ef;
        frexp((double)f, &ef);
        adv_elem(E, r, (double)f, u / 2, 0, 1, ef + 10, ef + 80);                 /* the tie itself */
        adv_elem(E, r, (double)f, u / 2, u * 0x1p-80, 0, ef + 10, ef + 80);       /* just beyond it */
        adv_elem(E, r, (double)f, u / 2, -u * 0x1p-80, 0, ef + 10, ef + 80);      /* just before it */
        adv_elem(E, r, (double)f, u * 0x1p-70, 0, 0, ef + 10, ef + 80);           /* just off a float */
        adv_elem(E, r, (double)f, 0.0, 0, 0, ef + 30, ef + 200);                  /* a float exactly */
    }
    /* subnormal FP32 results: ties on the 2^-149 grid (to even), with FP64 subnormal terms */
    for (int i = 0; i < 20; i++) {
        double f = ldexp((double)(vt_rng_next(r) % 64), -149);
        if (i % 2) f = -f;
        adv_elem(E, r, f, 0x1p-150, 0, 1, -1074, -160);
        adv_elem(E, r, f, 0x1p-150, -0x1p-1074, 0, -1074, -120);
        adv_elem(E, r, f, -0x1p-150, 0, 1, -140, 10);
    }
    /* near FLT_MAX: just below the tie that would round to 2^128 */
    adv_elem(E, r, (double)FLT_MAX, 0x1p103, -0x1p40, 0, 100, 120);
    /* +-0 and tiny values: an element with no terms, +0, -0, -0 twice, v - v, values that round to
     * a zero of their own sign, a negative tie at -2^-150 (to even: -0) and just beyond it */
    el_begin(E);
    el_begin(E), el_add(E, 0.0);
    el_begin(E), el_add(E, -0.0);
    el_begin(E), el_add(E, -0.0), el_add(E, -0.0);
    el_begin(E), add_cancelling(E, r, 3, -50, 50);
    el_begin(E), el_add(E, -0x1p-1074);
    el_begin(E), el_add(E, 0x1p-1074);
    el_begin(E), el_add(E, -0x1p-150), el_add(E, 0x1p40), el_add(E, -0x1p40);
    E->tie[E->n - 1] = 1;
    el_begin(E), el_add(E, -0x1p-150), el_add(E, -0x1p-1074), el_add(E, 0x1p40), el_add(E, -0x1p40);
    /* a huge cancellation down to an ordinary value */
    for (int i = 0; i < 20; i++) adv_elem(E, r, vt_rng_normal(r), 0, 0, 0, 150, 300);
}

/* ---------------------------------------------------------------- splits */

enum { SPLIT_BLOCKS, SPLIT_ROUND_ROBIN, SPLIT_RANDOM, SPLIT_LAST, SPLIT_SKEWED, SPLIT_COUNT };
static const char *const split_name[] = {"blocks", "round-robin", "random", "last rank", "skewed"};

static int owner(int split, uint64_t seed, size_t e, size_t k, size_t K, int N)
{
    switch (split) {
    case SPLIT_BLOCKS: return (int)(k * (size_t)N / K);
    case SPLIT_ROUND_ROBIN: return (int)((k + e) % (size_t)N);
    case SPLIT_RANDOM: {
        vt_rng r = {seed ^ (e * 0x9e3779b97f4a7c15ULL) ^ (k * 0xc2b2ae3d27d4eb4fULL)};
        return (int)(vt_rng_next(&r) % (uint64_t)N);
    }
    case SPLIT_LAST: return N - 1;
    default: return N == 1 || k < K / 2 ? 0 : 1 + (int)(k % (size_t)(N - 1));
    }
}

typedef struct {
    const elems *E;
    int split;
    uint64_t seed;
    int fail_rank;     /* the callback fails on this rank (-1: never) */
    long calls;
    const double *fine; /* the refinement: this rank's bound of element e is fine[e] */
    const double *fine_p; /* with resum: its partial fine_p[e] */
    long refines;       /* refinement callbacks made */
    int garbage;        /* the refinement returns NaN or a negative value for some elements */
} share;

static vt_err my_terms(void *arg, size_t e, vt_xacc *acc)
{
    share *s = arg;
    s->calls++;
    if (s->fail_rank == RANK) return vt_set_error(VT_ERR_IO, "terms of element %zu unreadable", e);
    size_t K = s->E->off[e + 1] - s->E->off[e];
    const double *t = s->E->t + s->E->off[e];
    for (size_t k = 0; k < K; k++)
        if (owner(s->split, s->seed, e, k, K, SIZE) == RANK) vt_xacc_add(acc, t[k]);
    return VT_OK;
}

/* This rank's refinement of element e (vt_round_dist_refined): fine[e], the rigorous bound of its
 * partial, or with resum (fine_p set) the partial fine_p[e] with the bound fine[e]; with garbage,
 * NaN for one element in seven and -1 for another (to be ignored: the partial and bound passed are
 * used). */
static double my_refine(void *arg, size_t e, double *p)
{
    share *s = arg;
    s->refines++;
    if (s->garbage && e % 7 == 3) return NAN;
    if (s->garbage && e % 7 == 5) return -1.0;
    if (s->fine_p) *p = s->fine_p[e];
    return s->fine[e];
}

/* This rank's partial and bound of every element: comp = 0, a plain FP64 sum from +0 with the
 * provable bound vt_bound_coef(count) * sum|t|; comp = 1, the compensated sum (vt_dot_comp64). */
static void partials(const share *s, int comp, double *p, double *b)
{
    const elems *E = s->E;
    double *mine = malloc((E->cap + 1) * sizeof *mine), *ones = malloc((E->cap + 1) * sizeof *ones);
    if (!mine || !ones) abort();
    for (size_t e = 0; e < E->n; e++) {
        size_t K = E->off[e + 1] - E->off[e], m = 0;
        const double *t = E->t + E->off[e];
        for (size_t k = 0; k < K; k++)
            if (owner(s->split, s->seed, e, k, K, SIZE) == RANK) mine[m] = t[k], ones[m] = 1.0, m++;
        if (comp) {
            vt_dot_comp64(m, mine, ones, &p[e], &b[e]);
        } else {
            double sum = 0.0, abs = 0.0;
            for (size_t k = 0; k < m; k++) sum += mine[k], abs += fabs(mine[k]);
            p[e] = sum;
            b[e] = vt_bound_coef(NULL, m) * abs;
        }
    }
    free(mine);
    free(ones);
}

/* The most terms one rank holds of element e. */
static size_t max_share(const share *s, size_t e)
{
    size_t K = s->E->off[e + 1] - s->E->off[e], cnt[64] = {0}, mx = 0;
    for (size_t k = 0; k < K; k++) {
        int o = owner(s->split, s->seed, e, k, K, SIZE);
        if (o < 64 && ++cnt[o] > mx) mx = cnt[o];
    }
    return mx;
}

/* ---------------------------------------------------------------- references */

static float ref_xacc(const elems *E, size_t e)
{
    vt_xacc a;
    vt_xacc_init(&a);
    for (size_t k = E->off[e]; k < E->off[e + 1]; k++) vt_xacc_add(&a, E->t[k]);
    return vt_xacc_round32(&a);
}

#ifdef VT_TEST_MPFR
static float ref_mpfr(const elems *E, size_t e)
{
    mpfr_t s;
    mpfr_init2(s, 2400); /* every addition of FP64 values exact */
    mpfr_set_zero(s, 1);
    for (size_t k = E->off[e]; k < E->off[e + 1]; k++) mpfr_add_d(s, s, E->t[k], MPFR_RNDN);
    float f = mpfr_zero_p(s) ? 0.0f : mpfr_get_flt(s, MPFR_RNDN); /* an exact zero is +0 */
    mpfr_clear(s);
    return f;
}
#endif

static int same32(float a, float b) { return memcmp(&a, &b, sizeof a) == 0; }

/* The references of every element, checked against each other. */
static float *references(const elems *E)
{
    float *ref = malloc(E->n * sizeof *ref);
    if (!ref) abort();
    for (size_t e = 0; e < E->n; e++) {
        ref[e] = ref_xacc(E, e);
#ifdef VT_TEST_MPFR
        float m = ref_mpfr(E, e);
        CHECK(same32(m, ref[e]), "element %zu: vt_xacc %a, MPFR %a", e, (double)ref[e], (double)m);
#endif
    }
    return ref;
}

/* ---------------------------------------------------------------- tests */

static void test_collectives(vt_comm *c)
{
    int64_t v[4] = {RANK, 1, (int64_t)RANK << 40, -(int64_t)RANK * 3};
    CHECK_OK(vt_dist_allreduce_i64(c, v, 4));
    int64_t tri = (int64_t)SIZE * (SIZE - 1) / 2;
    CHECK(v[0] == tri && v[1] == SIZE && v[2] == (tri << 40) && v[3] == -3 * tri, "allreduce: %lld %lld %lld %lld",
          (long long)v[0], (long long)v[1], (long long)v[2], (long long)v[3]);
    CHECK_OK(vt_dist_allreduce_i64(c, NULL, 0));
    int64_t mn[3] = {RANK, -((int64_t)RANK << 40), RANK == SIZE - 1 ? -1 : 7};
    CHECK_OK(vt_dist_allreduce_min_i64(c, mn, 3));
    CHECK(mn[0] == 0 && mn[1] == -((int64_t)(SIZE - 1) << 40) && mn[2] == -1, "allreduce min: %lld %lld %lld",
          (long long)mn[0], (long long)mn[1], (long long)mn[2]);

    double mine[3] = {RANK + 0.5, -0.0, vt_hd_f64(0x7ff8000000000000ULL | (uint64_t)RANK)};
    double *all = malloc((size_t)SIZE * 3 * sizeof *all);
    CHECK_OK(vt_dist_allgather_f64(c, mine, 3, all));
    for (int r = 0; r < SIZE; r++) {
        CHECK(all[3 * r] == r + 0.5, "allgather: rank %d's value %g", r, all[3 * r]);
        CHECK(vt_f64_bits(all[3 * r + 1]) == vt_f64_bits(-0.0), "allgather: -0 of rank %d", r);
        CHECK(vt_f64_bits(all[3 * r + 2]) == (0x7ff8000000000000ULL | (uint64_t)r), "allgather: NaN payload of rank %d", r);
    }
    free(all);

    /* allgatherv: rank r's block is r + 1 bytes except rank 1's, empty */
    size_t bytes[64], rbytes[64], tot = 0;
    for (int r = 0; r < SIZE; r++) tot += bytes[r] = r == 1 ? 0 : (size_t)r + 1;
    unsigned char blk[65], gat[64 * 65];
    memset(blk, RANK + 1, sizeof blk);
    memset(gat, 0xee, sizeof gat);
    CHECK_OK(vt_dist_allgatherv(c, RANK == 1 ? NULL : blk, bytes, gat));
    size_t at = 0;
    for (int r = 0; r < SIZE; r++)
        for (size_t k = 0; k < bytes[r]; k++, at++) CHECK(gat[at] == r + 1, "allgatherv: byte %zu of rank %d", k, r);
    CHECK(at == tot && gat[tot] == 0xee, "allgatherv: %zu bytes", tot);
    /* allgather_blocks: the same blocks, each rank passing only its own length */
    uint8_t *ga = NULL;
    size_t *gl = NULL;
    CHECK_OK(vt_dist_allgather_blocks(c, RANK == 1 ? NULL : blk, bytes[RANK], &ga, &gl));
    at = 0;
    for (int r = 0; r < SIZE && gl; r++) {
        CHECK(gl[r] == bytes[r], "allgather_blocks: rank %d's length %zu", r, gl[r]);
        for (size_t k = 0; k < gl[r] && ga; k++, at++) CHECK(ga[at] == r + 1, "allgather_blocks: byte %zu of rank %d", k, r);
    }
    CHECK(at == tot, "allgather_blocks: %zu bytes", at);
    free(ga);
    free(gl);
    /* alltoallv: rank r sends r + 2 s + 1 bytes (value 16 r + s) to rank s */
    unsigned char snd[64 * 200], rcv[64 * 200];
    at = 0;
    for (int s = 0; s < SIZE; s++) {
        bytes[s] = (size_t)(RANK + 2 * s + 1);
        memset(snd + at, 16 * RANK + s, bytes[s]);
        at += bytes[s];
        rbytes[s] = (size_t)(s + 2 * RANK + 1);
    }
    CHECK_OK(vt_dist_alltoallv(c, snd, bytes, rcv, rbytes));
    at = 0;
    for (int r = 0; r < SIZE; r++)
        for (size_t k = 0; k < rbytes[r]; k++, at++)
            CHECK(rcv[at] == (unsigned char)(16 * r + RANK), "alltoallv: byte %zu from rank %d: %d", k, r, rcv[at]);

    char msg[32];
    snprintf(msg, sizeof msg, "from rank %d", RANK);
    CHECK_OK(vt_dist_bcast(c, msg, sizeof msg, SIZE - 1));
    char want[32];
    snprintf(want, sizeof want, "from rank %d", SIZE - 1);
    CHECK(strcmp(msg, want) == 0, "bcast: \"%s\"", msg);
    CHECK(vt_dist_bcast(c, msg, sizeof msg, SIZE) == VT_ERR_ARG && strstr(vt_errmsg(), "rank"), "bcast from rank %d: %s",
          SIZE, vt_errmsg());
    CHECK_OK(vt_dist_barrier(c));
}

static void test_agree(vt_comm *c)
{
    int fr = 7;
    CHECK(vt_dist_agree(c, VT_OK, &fr) == VT_OK && fr == -1, "agree, all fine: rank %d", fr);
    /* the last rank fails */
    vt_err mine = RANK == SIZE - 1 ? vt_set_error(VT_ERR_IO, "disk full on this rank") : VT_OK;
    vt_err e = vt_dist_agree(c, mine, &fr);
    char want[160];
    if (SIZE == 1)
        snprintf(want, sizeof want, "disk full on this rank");
    else
        snprintf(want, sizeof want, "rank %d of %d: disk full on this rank", SIZE - 1, SIZE);
    CHECK(e == VT_ERR_IO && fr == SIZE - 1 && strcmp(vt_errmsg(), want) == 0, "agree: %d, rank %d, \"%s\"", (int)e, fr,
          vt_errmsg());
    /* every rank but 0 fails: rank 1 is named, the others counted */
    if (SIZE >= 3) {
        mine = RANK ? vt_set_error(VT_ERR_DIVERGED, "NaN at step %d", RANK) : VT_OK;
        e = vt_dist_agree(c, mine, &fr);
        snprintf(want, sizeof want, "rank 1 of %d: NaN at step 1 (and %d other rank%s)", SIZE, SIZE - 2,
                 SIZE == 3 ? "" : "s");
        CHECK(e == VT_ERR_DIVERGED && fr == 1 && strcmp(vt_errmsg(), want) == 0, "agree: %d, rank %d, \"%s\"", (int)e,
              fr, vt_errmsg());
    }
    CHECK(vt_dist_agree(c, VT_OK, &fr) == VT_OK && fr == -1, "agree afterwards: rank %d", fr);
}

/* The combination alone: |x - sum p| <= B against the exact sum; B = 0 exactly when exact. */
static void test_combine(vt_rng *r)
{
    for (int it = 0; it < 2000; it++) {
        int nr = 1 + (int)(vt_rng_next(r) % 9);
        double p[9], b[9];
        int integers = it % 3 == 0;
        for (int k = 0; k < nr; k++) {
            p[k] = integers ? (double)((int64_t)(vt_rng_next(r) % 2001) - 1000)
                            : ldexp(vt_rng_normal(r), (int)(vt_rng_next(r) % 120) - 60);
            if (it % 7 == 1) p[k] = ldexp(vt_rng_normal(r), -1060); /* FP64 subnormals */
            b[k] = 0.0;
        }
        double x, B;
        vt_round_dist_combine(nr, p, b, 1, &x, &B);
        vt_xacc lo, hi;
        vt_xacc_init(&lo);
        vt_xacc_add(&lo, x);
        for (int k = 0; k < nr; k++) vt_xacc_add(&lo, -p[k]);
        hi = lo;
        vt_xacc_add(&lo, -B); /* x - X - B <= 0 <= x - X + B */
        vt_xacc_add(&hi, B);
        CHECK(vt_xacc_sign(&lo) <= 0 && vt_xacc_sign(&hi) >= 0, "combine: %d partials, x %a B %a", nr, x, B);
        if (integers || it % 7 == 1) CHECK(B == 0.0, "combine: an exact sum has the bound %a", B);
    }
    double p[3] = {-0.0, -0.0, -0.0}, b[3] = {0, 0, 0}, x, B;
    vt_round_dist_combine(3, p, b, 1, &x, &B);
    CHECK(vt_f64_bits(x) == 0 && B == 0, "combine of -0s: %a, %a", x, B);
    p[0] = INFINITY;
    vt_round_dist_combine(3, p, b, 1, &x, &B);
    CHECK(isinf(B), "combine with inf: the bound %a", B);
}

/* One set of elements, every split and both bounds: every rank's out equals the reference, and
 * rank 0's bytes (broadcast) equal this rank's. Returns the elements that took the exact phase. */
static uint64_t round_all(vt_comm *c, const elems *E, const float *ref, uint64_t seed, const char *what,
                          int require_ties)
{
    double *p = malloc(E->n * sizeof *p), *b = malloc(E->n * sizeof *b);
    float *out = malloc(E->n * sizeof *out), *out0 = malloc(E->n * sizeof *out0);
    if (!p || !b || !out || !out0) abort();
    double *fine = malloc(E->n * sizeof *fine), *fine_p = malloc(E->n * sizeof *fine_p);
    if (!fine || !fine_p) abort();
    static const char *const mode_name[] = {"plain", "compensated", "refined", "refined, some refinements ignored",
                                            "refined with new partials"};
    uint64_t total_exact = 0, plain_exact = 0, comp_exact = 0;
    for (int split = 0; split < SPLIT_COUNT; split++)
        for (int comp = 0; comp < 5; comp++) {
            int resum = comp == 4;
            share s = {E, split, seed + (uint64_t)split, -1, 0, fine, resum ? fine_p : NULL, 0, comp == 3};
            if (resum) partials(&s, 1, fine_p, fine); /* the refinement: the compensated sums */
            partials(&s, comp == 1, p, b);
            /* refined: the bounds passed are 2^24 times the rigorous ones (most elements undecided
             * with them), the refinement gives the rigorous one (or, resum, the compensated sum and
             * its bound); in the skewed split the last rank passes no refinement (its partials and
             * bounds as passed) */
            int refine = comp >= 2, one_none = refine && split == SPLIT_SKEWED && SIZE > 1;
            int none_here = one_none && RANK == SIZE - 1;
            for (size_t i = 0; i < E->n && refine; i++) {
                if (!resum) fine[i] = b[i];
                b[i] *= 0x1p24;
            }
            vt_round_dist_stats st = {0};
            vt_elem_fault f = {0};
            memset(out, 0xff, E->n * sizeof *out);
            vt_err e = refine ? vt_round_dist_refined(c, E->n, p, b, none_here ? NULL : my_refine, resum, my_terms, &s,
                                                      out, &st, &f)
                              : vt_round_dist(c, E->n, p, b, my_terms, &s, out, &st, &f);
            CHECK(e == VT_OK, "%s, %s split, %s: %s", what, split_name[split], mode_name[comp], vt_errmsg());
            long bad = 0;
            for (size_t i = 0; i < E->n; i++)
                if (!same32(out[i], ref[i]) && bad++ < 5)
                    CHECK(0, "%s, %s split, %s: element %zu: %a, the exact RN32 is %a", what, split_name[split],
                          mode_name[comp], i, (double)out[i], (double)ref[i]);
            CHECK(bad == 0, "%s, %s split: %ld elements differ", what, split_name[split], bad);
            memcpy(out0, out, E->n * sizeof *out);
            CHECK_OK(vt_dist_bcast(c, out0, E->n * sizeof *out0, 0));
            CHECK(memcmp(out0, out, E->n * sizeof *out) == 0, "%s, %s split: rank %d differs from rank 0", what,
                  split_name[split], RANK);
            CHECK(st.n == E->n && st.n_exact <= E->n && (long)st.n_exact == s.calls, "%s: stats %llu %llu, calls %ld",
                  what, (unsigned long long)st.n, (unsigned long long)st.n_exact, s.calls);
            /* the refinement round: every rank refines every element the owners' screen left
             * undecided with a finite x (none without a callback); some are then decided (the
             * cheap bound failed, the refined one decides), the rest take the exact phase */
            CHECK(refine ? st.n_refine > 0 && st.n_refine <= E->n && s.refines == (none_here ? 0 : (long)st.n_refine)
                         : st.n_refine == 0 && st.bytes_refine == 0 && s.refines == 0,
                  "%s, %s split, %s: %llu refined, %ld refinements made", what, split_name[split], mode_name[comp],
                  (unsigned long long)st.n_refine, s.refines);
            if (comp == 0) plain_exact = st.n_exact;
            if (comp == 1) comp_exact = st.n_exact;
            /* after the round, the same partials and bounds as the plain run (the compensated run,
             * resum): the same elements left to the exact phase */
            if ((comp == 2 || comp == 4) && !one_none)
                CHECK(st.n_exact < st.n_refine && st.n_exact == (resum ? comp_exact : plain_exact),
                      "%s, %s split, %s: the refinement decided %llu of %llu, %llu exact (the rigorous bounds alone: "
                      "%llu)", what, split_name[split], mode_name[comp], (unsigned long long)(st.n_refine - st.n_exact),
                      (unsigned long long)st.n_refine, (unsigned long long)st.n_exact,
                      (unsigned long long)(resum ? comp_exact : plain_exact));
            if (require_ties && comp != 1 && comp != 4) {
                /* a tie with a non-zero bound (some rank holds two or more non-zero terms: its
                 * coefficient bound is positive) cannot be decided by any FP64 value */
                uint64_t forced = 0;
                for (size_t i = 0; i < E->n; i++) forced += E->tie[i] && max_share(&s, i) >= 2;
                CHECK(forced > 0 && st.n_exact >= forced, "%s, %s split: %llu elements took the exact phase, %llu ties "
                      "must", what, split_name[split], (unsigned long long)st.n_exact, (unsigned long long)forced);
            }
            if (RANK == 0)
                printf("%s, %s split, %s partials: %llu refined, %llu of %llu elements exact (%llu + %llu + %llu "
                       "bytes sent per rank)\n",
                       what, split_name[split], mode_name[comp], (unsigned long long)st.n_refine,
                       (unsigned long long)st.n_exact, (unsigned long long)st.n, (unsigned long long)st.bytes_gather,
                       (unsigned long long)st.bytes_refine, (unsigned long long)st.bytes_reduce);
            total_exact += st.n_exact;
        }
    free(p);
    free(b);
    free(fine);
    free(fine_p);
    free(out);
    free(out0);
    return total_exact;
}

/* More elements than one phase-1 chunk (2^18 at most): two terms each, one in 500 behind a
 * cancellation (these go to phase 2 where a rank's own sum loses the small terms: not with one term
 * a rank, whose errors the combination's TwoSum keeps); checked against the reference and the
 * bytes counted. */
static void test_chunks(vt_comm *c, vt_rng *r)
{
    elems E = {0};
    const size_t n = ((size_t)1 << 18) + 4321;
    for (size_t e = 0; e < n; e++) {
        el_begin(&E);
        el_add(&E, (double)(float)vt_rng_normal(r));
        el_add(&E, (double)(float)vt_rng_normal(r) * 0x1p-30);
        if (e % 500 == 0) add_cancelling(&E, r, 1, 40, 60);
    }
    float *ref = malloc(n * sizeof *ref), *out = malloc(n * sizeof *out);
    double *p = malloc(n * sizeof *p), *b = malloc(n * sizeof *b);
    if (!ref || !out || !p || !b) abort();
    for (size_t e = 0; e < n; e++) ref[e] = ref_xacc(&E, e);
    share s = {&E, SPLIT_ROUND_ROBIN, 7, -1, 0, NULL, NULL, 0, 0};
    partials(&s, 0, p, b);
    vt_round_dist_stats st = {0};
    CHECK_OK(vt_round_dist(c, n, p, b, my_terms, &s, out, &st, NULL));
    long bad = 0;
    for (size_t e = 0; e < n; e++) bad += !same32(out[e], ref[e]);
    CHECK(bad == 0, "%zu elements in chunks: %ld differ from the exact RN32", n, bad);
    /* the bytes sent: 32 (N - 1) in phase 0, then per round of m elements 12 per element of the
     * other ranks' slices and 4 (N - 1) per element of its own, plus a word per rank */
    uint64_t want = 32 * (uint64_t)(SIZE - 1), N = (uint64_t)SIZE;
    for (size_t i0 = 0; i0 < n; i0 += VT_ROUND_DIST_ROUND) {
        uint64_t m = n - i0 < VT_ROUND_DIST_ROUND ? n - i0 : VT_ROUND_DIST_ROUND;
        uint64_t mo = m * (uint64_t)(RANK + 1) / N - m * (uint64_t)RANK / N;
        want += 12 * (m - mo) + 4 * (mo + 1) * (N - 1);
    }
    CHECK(n > VT_ROUND_DIST_ROUND && st.n == n && st.n_exact < n / 100 && st.bytes_gather == want,
          "chunks: %llu of %llu exact, %llu bytes gathered, %llu expected", (unsigned long long)st.n_exact,
          (unsigned long long)st.n, (unsigned long long)st.bytes_gather, (unsigned long long)want);
    /* against a plain FP32 ring all-reduce, 8 (N - 1) / N bytes an element: at most 2.1 times */
    double ring = 8.0 * (double)(SIZE - 1) / SIZE * (double)n;
    CHECK(SIZE == 1 ? st.bytes_gather == 0 && st.bytes_reduce == 0 : (double)st.bytes_gather <= 2.1 * ring,
          "chunks: %llu bytes sent, an FP32 ring all-reduce %.0f", (unsigned long long)st.bytes_gather, ring);
    if (RANK == 0)
        printf("%zu elements in chunks: %llu exact, %llu + %llu bytes sent by rank 0 (%.3f x an FP32 ring all-reduce)\n",
               n, (unsigned long long)st.n_exact, (unsigned long long)st.bytes_gather,
               (unsigned long long)st.bytes_reduce, SIZE > 1 ? (double)(st.bytes_gather + st.bytes_reduce) / ring : 0.0);
    free(ref);
    free(out);
    free(p);
    free(b);
    el_free(&E);
}

/* The bounds as sent (rounded upward to the high 32 bits of their FP64 patterns): bounds far below
 * FP32's range still decide (an FP32 bound would be 2^-149 and straddle the subnormal grid's
 * midpoints), and huge, infinite and NaN bounds decide nothing; the last rank holds the terms,
 * every other rank passes an exact zero. */
typedef struct {
    const double *a, *d;
} bound_arg;

static vt_err bound_terms(void *arg, size_t i, vt_xacc *acc)
{
    const bound_arg *t = arg;
    if (RANK == SIZE - 1) {
        vt_xacc_add(acc, t->a[i]);
        vt_xacc_add(acc, t->d[i]);
    }
    return VT_OK;
}

static void test_bounds_sent(vt_comm *c, vt_rng *r)
{
    enum { NT = 600, NH = 4 };
    double a[NT + NH], d[NT + NH], p[NT + NH], b[NT + NH];
    float out[NT + NH];
    for (int i = 0; i < NT + NH; i++) {
        /* a float on the subnormal grid or just above, and a term 2^-60 .. 2^-90 of its size */
        double k = (double)(1 + vt_rng_next(r) % 5000);
        a[i] = ldexp(k, -149 + (int)(vt_rng_next(r) % 30)) * (vt_rng_next(r) % 2 ? 1 : -1);
        d[i] = ldexp(1.0 + vt_rng_uniform(r), -210 + (int)(vt_rng_next(r) % 30));
        double bi = ldexp(1.0 + vt_rng_uniform(r), -175 + (int)(vt_rng_next(r) % 5)); /* the same draws on every rank */
        p[i] = RANK == SIZE - 1 ? a[i] + d[i] : 0.0;
        b[i] = RANK == SIZE - 1 ? bi : 0.0;
    }
    /* the last NH: a bound of DBL_MAX, +inf, NaN, and one with every low bit set (sent as 2^-29) */
    if (RANK == SIZE - 1) b[NT] = DBL_MAX, b[NT + 1] = INFINITY, b[NT + 2] = NAN, b[NT + 3] = 0x1.fffffffffffffp-30;
    bound_arg t = {a, d};
    vt_round_dist_stats st = {0};
    CHECK_OK(vt_round_dist(c, NT + NH, p, b, bound_terms, &t, out, &st, NULL));
    for (int i = 0; i < NT + NH; i++) {
        vt_xacc x;
        vt_xacc_init(&x);
        vt_xacc_add(&x, a[i]);
        vt_xacc_add(&x, d[i]);
        float w = vt_xacc_round32(&x);
        CHECK(same32(out[i], w), "bounds sent: element %d: %a, the exact RN32 is %a", i, (double)out[i], (double)w);
    }
    CHECK(st.n_exact == NH, "bounds sent: %llu elements exact, %d expected (tiny bounds decide, huge ones do not)",
          (unsigned long long)st.n_exact, NH);
}

/* Failures: the same error on every rank, naming the rank, and no rank left waiting. */
static void test_failures(vt_comm *c, vt_rng *r)
{
    elems E = {0};
    make_adversarial(&E, r);
    double *p = malloc(E.n * sizeof *p), *b = malloc(E.n * sizeof *b);
    float *out = malloc(E.n * sizeof *out);
    share s = {&E, SPLIT_RANDOM, 99, SIZE - 1, 0, NULL, NULL, 0, 0};
    partials(&s, 0, p, b);
    char want[160];
    /* the callback fails on the last rank */
    vt_err e = vt_round_dist(c, E.n, p, b, my_terms, &s, out, NULL, NULL);
    CHECK(e == VT_ERR_IO && strstr(vt_errmsg(), "terms of element"), "failing callback: %d \"%s\"", (int)e,
          vt_errmsg());
    if (SIZE > 1) {
        snprintf(want, sizeof want, "rank %d of %d: terms of element", SIZE - 1, SIZE);
        CHECK(strstr(vt_errmsg(), want) != NULL, "failing callback: \"%s\"", vt_errmsg());
    }
    /* no callback although one is needed */
    e = vt_round_dist(c, E.n, p, b, NULL, NULL, out, NULL, NULL);
    CHECK(e == VT_ERR_UNSUPPORTED, "no callback: %d \"%s\"", (int)e, vt_errmsg());
    /* a negative bound on the last rank */
    s.fail_rank = -1;
    b[3] = RANK == SIZE - 1 ? -1.0 : b[3];
    e = vt_round_dist(c, E.n, p, b, my_terms, &s, out, NULL, NULL);
    snprintf(want, sizeof want, "element 3: rank %d of %d passed the bound", SIZE - 1, SIZE);
    CHECK(e == VT_ERR_ARG && strstr(vt_errmsg(), want), "negative bound: %d \"%s\"", (int)e, vt_errmsg());
    partials(&s, 0, p, b);
    /* rank 0 has one element more than the others */
    if (SIZE > 1) {
        e = vt_round_dist(c, RANK == 0 ? E.n : E.n - 1, p, b, my_terms, &s, out, NULL, NULL);
        snprintf(want, sizeof want, "rank 1 of %d has %zu elements, rank 0 has %zu", SIZE, E.n - 1, E.n);
        CHECK(e == VT_ERR_ARG && strstr(vt_errmsg(), want), "different n: %d \"%s\"", (int)e, vt_errmsg());
        /* the last rank's refinement replaces partials, the others' does not: the round's sizes differ */
        e = vt_round_dist_refined(c, E.n, p, b, my_refine, RANK == SIZE - 1, my_terms, &s, out, NULL, NULL);
        snprintf(want, sizeof want, "rank %d of %d sends new partials in the refinement round, rank 0 does not",
                 SIZE - 1, SIZE);
        CHECK(e == VT_ERR_ARG && strstr(vt_errmsg(), want), "different resum: %d \"%s\"", (int)e, vt_errmsg());
    }
    /* a result beyond FP32 range: element 5 rounds to 2^128 (the tie above FLT_MAX, to even) */
    elems O = {0};
    for (int i = 0; i < 8; i++) {
        el_begin(&O);
        el_add(&O, i == 5 ? (double)FLT_MAX : 1.0);
        el_add(&O, i == 5 ? 0x1p103 : 2.0);
        add_cancelling(&O, r, 2, 110, 140);
        el_shuffle(&O, O.n - 1, r);
    }
    share so = {&O, SPLIT_ROUND_ROBIN, 5, -1, 0, NULL, NULL, 0, 0};
    double po[8], bo[8];
    float oo[8];
    partials(&so, 0, po, bo);
    vt_elem_fault f = {0};
    e = vt_round_dist(c, O.n, po, bo, my_terms, &so, oo, NULL, &f);
    CHECK(e == VT_ERR_DIVERGED && f.index == 5 && strstr(vt_errmsg(), "element 5: result is beyond FP32 range"),
          "overflow: %d, element %llu, \"%s\"", (int)e, (unsigned long long)f.index, vt_errmsg());
    CHECK(isinf(oo[5]) && oo[4] == 3.0f, "overflow: out %a %a", (double)oo[5], (double)oo[4]);
    /* n = 0 is a no-op */
    CHECK_OK(vt_round_dist(c, 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL));
    el_free(&O);
    el_free(&E);
    free(p);
    free(b);
    free(out);
}

/* vt_round_dist_quot32 (the losses' means over a split batch): each rank's accumulator of its share of
 * the terms (round-robin, and all on rank 0) summed across the ranks and divided by n, against
 * vt_xacc_round32_quot of all of them in one process (checked against MPFR in tests/unit/test_losses.c):
 * random sums, exact ties n m behind a cancellation, negative values, tiny quotients, a NaN term on one
 * rank only (NaN everywhere), an overflow (+inf) */
static void test_quot(vt_comm *c, vt_rng *r)
{
    size_t bad = 0, cases = 0;
    for (int it = 0; it < 300; it++) {
        double t[64];
        size_t k = 2 + vt_rng_next(r) % 60;
        const uint64_t n = 1 + vt_rng_next(r) % (it % 2 ? 7 : 100000);
        for (size_t i = 0; i < k; i++) t[i] = (double)(float)vt_rng_normal(r) * ldexp(1.0, (int)(vt_rng_next(r) % 40) - 20);
        if (it % 3 == 0) { /* n m for a midpoint m of FP32, behind +-2^60 */
            float f = (float)fabs(vt_rng_normal(r));
            const double m = 0.5 * ((double)f + (double)nextafterf(f, INFINITY));
            t[0] = 0x1p60, t[1] = -0x1p60, t[2] = m * (double)(n & 0xfffffff), t[3] = m * (double)(n >> 28) * 0x1p28;
            k = it % 9 == 0 ? 5 : 4;
            if (k == 5) t[4] = it % 2 ? 0x1p-1074 : -0x1p-1074;
        }
        if (it % 5 == 1) t[0] = -fabs(t[0]) * 0x1p20;
        if (it % 7 == 2) t[0] = 0x1p-149, t[1] = -0x1p-149 * 0.5, k = 2;
        if (it == 4) t[1] = NAN;
        if (it == 8) t[0] = 0x1p1023, t[1] = 0x1p1023, k = 2;
        vt_xacc all;
        vt_xacc_init(&all);
        for (size_t i = 0; i < k; i++) vt_xacc_add(&all, t[i]);
        const float want = vt_xacc_round32_quot(&all, n);
        for (int split = 0; split < 2; split++) {
            vt_xacc mine;
            vt_xacc_init(&mine);
            for (size_t i = 0; i < k; i++)
                if (split ? RANK == 0 : (int)(i % (size_t)SIZE) == RANK) vt_xacc_add(&mine, t[i]);
            float got = 0;
            CHECK_OK(vt_round_dist_quot32(c, &mine, n, &got));
            cases++;
            if (!(same32(got, want) || (isnan(got) && isnan(want))) && bad++ < 3)
                CHECK(0, "quotient %d split %d (n = %llu): %a on rank %d, one process %a", it, split,
                      (unsigned long long)n, (double)got, RANK, (double)want);
        }
    }
    CHECK(bad == 0, "%zu of %zu quotients across the ranks differ", bad, cases);
}

/* every test, on this rank of c */
static void body(vt_comm *c)
{
    RANK = vt_dist_rank(c);
    SIZE = vt_dist_size(c);
    uint64_t seed = vt_test_seed(20240924);
    vt_rng r = {seed};
    test_collectives(c);
    test_agree(c);
    test_combine(&r);
    elems E = {0};
    make_random(&E, 3000, &r);
    float *ref = references(&E);
    round_all(c, &E, ref, seed, "random sums", 0);
    free(ref);
    el_free(&E);
    make_adversarial(&E, &r);
    ref = references(&E);
    uint64_t ex = round_all(c, &E, ref, seed, "adversarial", 1);
    CHECK(ex > 0, "the exact phase never ran");
    free(ref);
    el_free(&E);
    test_chunks(c, &r);
    test_bounds_sent(c, &r);
    test_failures(c, &r);
    test_quot(c, &r);
}

typedef struct {
    vt_comm *c;
} thr_arg;

static void *thr_main(void *a)
{
    body(((thr_arg *)a)->c);
    vt_round_dist_release(); /* the thread ends: its kept buffers freed */
    return NULL;
}

/* The tests over n thread shares of this process (vt_dist_threads_open), then a share that stops
 * alone: the other's waiting barrier fails, naming it, instead of waiting forever. */
static void thread_shares(int n)
{
    vt_comm *cs[8];
    CHECK_OK(vt_dist_threads_open(n, cs));
    CHECK(strcmp(vt_dist_engine_name(cs[0]), "threads") == 0 && !vt_dist_is_mpi(cs[0]) && vt_dist_size(cs[n - 1]) == n &&
              vt_dist_rank(cs[n - 1]) == n - 1,
          "thread shares: %s, size %d", vt_dist_engine_name(cs[0]), vt_dist_size(cs[0]));
    CHECK(vt_dist_set_engine(cs[0], NULL) == VT_ERR_UNSUPPORTED, "set_engine on thread shares");
    printf("test_dist: %d thread shares\n", n);
    pthread_t th[8];
    thr_arg args[8];
    for (int i = 1; i < n; i++) {
        args[i].c = cs[i];
        CHECK(pthread_create(&th[i], NULL, thr_main, &args[i]) == 0, "pthread_create");
    }
    body(cs[0]);
    for (int i = 1; i < n; i++) pthread_join(th[i], NULL);
    vt_dist_threads_stop(cs[n - 1], "a test's stop");
    vt_err e = vt_dist_barrier(cs[0]);
    CHECK(e == VT_ERR_INTERNAL && strstr(vt_errmsg(), "abandoned: thread share") && strstr(vt_errmsg(), "a test's stop"),
          "stopped shares: %d \"%s\"", (int)e, vt_errmsg());
    for (int i = 0; i < n; i++) CHECK_OK(vt_dist_finalize(&cs[i]));
    RANK = 0, SIZE = 1;
}

int main(int argc, char **argv)
{
    int want_ranks = 0, st = vt_test_ranks_arg(argc, argv, "test_dist", &want_ranks);
    if (st >= 0) return st;
    if (!vt_dist_built_with_mpi() && !getenv("OMPI_COMM_WORLD_SIZE") && !getenv("PMIX_RANK")) {
        /* a build without MPI launched as one of several ranks says so */
        setenv("OMPI_COMM_WORLD_SIZE", "3", 1);
        setenv("OMPI_COMM_WORLD_RANK", "1", 1);
        vt_comm *bad = NULL;
        vt_err e = vt_dist_init(&bad);
        CHECK(e == VT_ERR_UNSUPPORTED && bad == NULL && strstr(vt_errmsg(), "no MPI") && strstr(vt_errmsg(), "rank 1 of 3"),
              "no MPI, 3 ranks: %d \"%s\"", (int)e, vt_errmsg());
        unsetenv("OMPI_COMM_WORLD_SIZE");
        unsetenv("OMPI_COMM_WORLD_RANK");
    }
    vt_comm *c = NULL;
    vt_err e = vt_dist_init(&c);
    if (e) {
        fprintf(stderr, "test_dist: %s\n", vt_errmsg());
        return 1;
    }
    RANK = vt_dist_rank(c);
    SIZE = vt_dist_size(c);
    int launched = getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMIX_RANK");
    CHECK(vt_dist_is_mpi(c) == (launched && vt_dist_built_with_mpi()), "is_mpi %d, launched %d", vt_dist_is_mpi(c),
          launched);
    if (want_ranks) CHECK(SIZE == want_ranks, "%d ranks, %d expected", SIZE, want_ranks);
    CHECK(RANK >= 0 && RANK < SIZE && SIZE <= 64, "rank %d of %d", RANK, SIZE);
    if (RANK == 0) printf("test_dist: %d rank%s%s\n", SIZE, SIZE == 1 ? "" : "s", vt_dist_is_mpi(c) ? " (MPI)" : "");
    body(c);
    /* every rank's own failures, agreed: a rank that failed a check fails the test on all */
    e = vt_dist_agree(c, vt_test_failed ? vt_set_error(VT_ERR_INTERNAL, "%ld checks failed", vt_test_failed) : VT_OK,
                      NULL);
    if (e && !vt_test_failed) fprintf(stderr, "test_dist: %s\n", vt_errmsg());
    CHECK_OK(vt_dist_finalize(&c));
    if (SIZE == 1 && !launched) /* one process: the same tests over 2 and 3 thread shares */
        for (int n = 2; n <= 3; n++) thread_shares(n);
    char name[64];
    snprintf(name, sizeof name, "test_dist (rank %d of %d)", RANK, SIZE);
    return vt_test_finish(name) ? 1 : (e ? 1 : 0);
}
