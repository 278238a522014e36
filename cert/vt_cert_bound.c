/* vt_cert_bound.c - sound bounds under floating point (docs/certify.md "Soundness"): IBP, CROWN
 * and alpha-CROWN on the network of vt_cert.h, every loop in one fixed order, every rounding of the
 * bound computation itself accounted for:
 *   - scalar results that enter a bound are rounded outward by one step (dn/up: the neighbour of
 *     the round-to-nearest result, never below/above the exact value; the FPU stays in RN);
 *   - each FP64 dot product's error is bounded by the lemma  |s^ - s| <= C(n) A^ + U(n)  with A^ the
 *     computed sum of |a_i b_i| in the same loop (dotk);
 *   - a rounded coefficient's error e_i multiplies a variable bounded by |v_i| <= M_i: its effect
 *     is subtracted as sum e_i M_i, rounded upward;
 *   - the model's own rounding: a_k = RN32(RN32(z_k) + b_k) = z_k + b_k + e_k with
 *     |e_k| <= 2^-24 max|z_k| + 2^-24 max|a_k| + 2^-149 (half an FP32 ulp at each rounded operation),
 *     and interval bounds by the monotonicity of RN32. */
#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "../common/vt_bytes.h"
#include "../common/vt_cli.h"
#include "../common/vt_env.h"
#include "../dist/vt_dist.h"
#include "../rounding/vt_exact.h"
#include "vt_cert.h"
#include "vt_cert_int.h"

/* ---------------------------------------------------------------- outward rounding */

/* The largest double below x (x finite or +inf; -inf and NaN unchanged). */
static double next_dn(double x)
{
    if (x != x || x == -INFINITY) return x;
    if (x == 0) return -vt_bits_f64(1); /* -2^-1074, for +0 and -0 */
    uint64_t u = vt_f64_bits(x);
    return vt_bits_f64(x > 0 ? u - 1 : u + 1);
}

static double next_up(double x) { return -next_dn(-x); }

/* For r the round-to-nearest result of an exact value v: dn(r) <= v <= up(r) (also when r
 * overflowed to an infinity or underflowed to zero). */
#define DN(expr) next_dn(expr)
#define UP(expr) next_up(expr)

/* C(n) = (n + 2) 2^-53 (1 + 2^-20), upward; U(n) = (n + 1) 2^-1074 (exact). docs/certify.md. */
static double coef_c(size_t n) { return UP((double)(n + 2) * 0x1p-53 * (1 + 0x1p-20)); }
static double coef_u(size_t n) { return (double)(n + 1) * 0x1p-1074; }

/* s^ = fl(sum a_i b_i) and an upper bound err of |s^ - sum a_i b_i| (exact real sum), the loop in
 * index order; b with stride sb. */
static void dotk(const double *a, const double *b, size_t sb, size_t n, double *s, double *err)
{
    double acc = 0, abs = 0;
    for (size_t i = 0; i < n; i++) {
        double p = a[i] * b[i * sb];
        acc += p;
        abs += fabs(p);
    }
    *s = acc;
    *err = UP(UP(coef_c(n) * abs) + coef_u(n));
}

/* dotk of rows rows of w (ld apart) with b (stride 1): s[r], err[r]. Four rows at a time, each row's
 * sums in index order in its own accumulators (the same bits as dotk row by row; the four chains
 * hide the additions' latency). */
static void dotk_rows(const double *w, size_t ld, size_t rows, const double *b, size_t n, double *s, double *err)
{
    size_t r = 0;
    const double C = coef_c(n), U = coef_u(n);
    for (; r + 4 <= rows; r += 4) {
        const double *a0 = w + r * ld, *a1 = a0 + ld, *a2 = a1 + ld, *a3 = a2 + ld;
        double s0 = 0, s1 = 0, s2 = 0, s3 = 0, t0 = 0, t1 = 0, t2 = 0, t3 = 0;
        for (size_t i = 0; i < n; i++) {
            const double bi = b[i], p0 = a0[i] * bi, p1 = a1[i] * bi, p2 = a2[i] * bi, p3 = a3[i] * bi;
            s0 += p0, s1 += p1, s2 += p2, s3 += p3;
            t0 += fabs(p0), t1 += fabs(p1), t2 += fabs(p2), t3 += fabs(p3);
        }
        s[r] = s0, s[r + 1] = s1, s[r + 2] = s2, s[r + 3] = s3;
        err[r] = UP(UP(C * t0) + U), err[r + 1] = UP(UP(C * t1) + U);
        err[r + 2] = UP(UP(C * t2) + U), err[r + 3] = UP(UP(C * t3) + U);
    }
    for (; r < rows; r++) dotk(w + r * ld, b, 1, n, &s[r], &err[r]);
}

/* The lanes (docs/certify.md): the matrix-vector products of an MLP held whole, sixteen dot products
 * at a time, one per vector lane, each summed in its own index order, so every implementation gives
 * the bits of one dot product at a time. Implementations, chosen once at the first call (pthread_once),
 * as kernels/vt_math_vec.c picks its own (libsodium's way): "avx2" (the lanes in 256-bit registers,
 * the same source compiled for it by a target attribute) where the CPU has AVX2, else "scalar" (one
 * dot product at a time, the reference); "vector" (the lanes in the baseline ISA's registers, slower
 * than the scalar loops on x86-64) only when VT_CERT_IMPL names it, as it can name any other.
 * tests/e2e/cert.sh compares certificates of every implementation this CPU runs. Lane helpers always
 * inlined: no 256-bit value crosses a call. */
#if defined(__clang__)
#pragma clang diagnostic ignored "-Wpsabi"
#elif defined(__GNUC__)
#pragma GCC diagnostic ignored "-Wpsabi"
#endif
typedef double vt_v4d __attribute__((vector_size(32)));
typedef long long vt_v4i __attribute__((vector_size(32)));
#define VTI_INLINE static inline __attribute__((always_inline))

/* v := four doubles from p (any alignment) */
#define LD4(v, p) memcpy(&(v), (p), sizeof(vt_v4d))

/* dotk of the n rows of a matrix W (n x m, w) with b: s[r], err[r]; wt is W's transpose (m x n); nz: m
 * indices of work. The lanes skip the terms whose b[j] is zero: the same bits, as each sum starts at +0
 * and the weights are finite (such a term is a signed zero; adding one to a sum that is never -0 - a
 * sum from +0 only reaches 0 as +0 - changes nothing, nor does adding +0 to the sum of |terms|). */
typedef void (*dotk_cols_fn)(const double *w, const double *wt, size_t n, size_t m, const double *b, double *s,
                             double *err, uint32_t *nz);
/* y[j] = init[j] + sum_i w[i m + j] x[i] for the m columns of w (n x m; init NULL: 0; wt its transpose),
 * each sum from init[j] in index order */
typedef void (*matvec_cols_fn)(const double *w, const double *wt, size_t n, size_t m, const double *x,
                               const double *init, double *y);

/* the reference: one dot product at a time, in index order, on the rows of w (for dotk) and of wt */
static void dotk_cols_scalar(const double *w, const double *wt, size_t n, size_t m, const double *b, double *s,
                             double *err, uint32_t *nz)
{
    (void)wt, (void)nz;
    for (size_t r = 0; r < n; r++) dotk(w + r * m, b, 1, m, &s[r], &err[r]);
}

static void matvec_cols_scalar(const double *w, const double *wt, size_t n, size_t m, const double *x,
                               const double *init, double *y)
{
    (void)w;
    for (size_t j = 0; j < m; j++) {
        double a = init ? init[j] : 0;
        for (size_t i = 0; i < n; i++) a += wt[j * n + i] * x[i];
        y[j] = a;
    }
}

/* sixteen rows a step, their terms read contiguously from wt; the rest one at a time */
VTI_INLINE void dotk_cols_lanes(const double *wt, size_t n, size_t m, const double *b, double *s, double *err,
                                uint32_t *nz)
{
    const double C = coef_c(m), U = coef_u(m);
    const vt_v4i mask = {INT64_MAX, INT64_MAX, INT64_MAX, INT64_MAX}; /* |x|: the sign bit cleared */
    size_t r = 0, k = 0;
    for (size_t j = 0; j < m; j++) /* the terms that are not zero, in index order */
        if (b[j] != 0) nz[k++] = (uint32_t)j;
    for (; r + 16 <= n; r += 16) {
        vt_v4d s0 = {0, 0, 0, 0}, s1 = s0, s2 = s0, s3 = s0, t0 = s0, t1 = s0, t2 = s0, t3 = s0;
        for (size_t q = 0; q < k; q++) {
            const size_t j = nz[q];
            const vt_v4d bj = {b[j], b[j], b[j], b[j]};
            const double *w = wt + j * n + r;
            vt_v4d p0, p1, p2, p3;
            LD4(p0, w), LD4(p1, w + 4), LD4(p2, w + 8), LD4(p3, w + 12);
            p0 *= bj, p1 *= bj, p2 *= bj, p3 *= bj;
            s0 += p0, s1 += p1, s2 += p2, s3 += p3;
            t0 += (vt_v4d)((vt_v4i)p0 & mask), t1 += (vt_v4d)((vt_v4i)p1 & mask);
            t2 += (vt_v4d)((vt_v4i)p2 & mask), t3 += (vt_v4d)((vt_v4i)p3 & mask);
        }
        const vt_v4d sv[4] = {s0, s1, s2, s3}, tv[4] = {t0, t1, t2, t3};
        for (int q = 0; q < 16; q++) s[r + q] = sv[q / 4][q % 4], err[r + q] = UP(UP(C * tv[q / 4][q % 4]) + U);
    }
    if (r < n) { /* the last rows: the reference's loop on the columns r.. of wt */
        for (size_t q = r; q < n; q++) {
            double acc = 0, abs = 0;
            for (size_t i = 0; i < k; i++) {
                const size_t j = nz[i];
                const double p = wt[j * n + q] * b[j];
                acc += p, abs += fabs(p);
            }
            s[q] = acc, err[q] = UP(UP(C * abs) + U);
        }
    }
}

/* sixteen columns a step; the rest one at a time */
VTI_INLINE void matvec_cols_lanes(const double *w, size_t n, size_t m, const double *x, const double *init, double *y)
{
    size_t j = 0;
    for (; j + 16 <= m; j += 16) {
        vt_v4d a0 = {0, 0, 0, 0}, a1 = a0, a2 = a0, a3 = a0;
        if (init) LD4(a0, init + j), LD4(a1, init + j + 4), LD4(a2, init + j + 8), LD4(a3, init + j + 12);
        for (size_t i = 0; i < n; i++) {
            const vt_v4d xi = {x[i], x[i], x[i], x[i]};
            const double *wi = w + i * m + j;
            vt_v4d w0, w1, w2, w3;
            LD4(w0, wi), LD4(w1, wi + 4), LD4(w2, wi + 8), LD4(w3, wi + 12);
            a0 += w0 * xi, a1 += w1 * xi, a2 += w2 * xi, a3 += w3 * xi;
        }
        memcpy(y + j, &a0, sizeof a0), memcpy(y + j + 4, &a1, sizeof a1);
        memcpy(y + j + 8, &a2, sizeof a2), memcpy(y + j + 12, &a3, sizeof a3);
    }
    for (; j < m; j++) {
        double a = init ? init[j] : 0;
        for (size_t i = 0; i < n; i++) a += w[i * m + j] * x[i];
        y[j] = a;
    }
}

static void dotk_cols_vector(const double *w, const double *wt, size_t n, size_t m, const double *b, double *s,
                             double *err, uint32_t *nz)
{
    (void)w;
    dotk_cols_lanes(wt, n, m, b, s, err, nz);
}

static void matvec_cols_vector(const double *w, const double *wt, size_t n, size_t m, const double *x,
                               const double *init, double *y)
{
    (void)wt;
    matvec_cols_lanes(w, n, m, x, init, y);
}

#if defined(__x86_64__) && defined(__GNUC__)
#define VTI_AVX2 __attribute__((target("avx2")))
VTI_AVX2 static void dotk_cols_avx2(const double *w, const double *wt, size_t n, size_t m, const double *b, double *s,
                                    double *err, uint32_t *nz)
{
    (void)w;
    dotk_cols_lanes(wt, n, m, b, s, err, nz);
}

VTI_AVX2 static void matvec_cols_avx2(const double *w, const double *wt, size_t n, size_t m, const double *x,
                                      const double *init, double *y)
{
    (void)wt;
    matvec_cols_lanes(w, n, m, x, init, y);
}
#define VTI_HAVE_AVX2 1
#else
#define VTI_HAVE_AVX2 0
#endif

/* The search's estimate (no bound): s[r] = sum_j wt[j n + r] b[j] over the n rows of W (n x m; wtf its
 * transpose in FP32, m x n), in FP32, each sum from +0 over the j with b[j] != 0 in index order (nz,
 * bf: m of work); the same bits in every implementation (one order, no contraction). */
typedef void (*dotf_cols_fn)(const float *wtf, size_t n, size_t m, const double *b, double *s, uint32_t *nz, float *bf);

static size_t dotf_terms(size_t m, const double *b, uint32_t *nz, float *bf)
{
    size_t k = 0;
    for (size_t j = 0; j < m; j++)
        if (b[j] != 0) nz[k] = (uint32_t)j, bf[k++] = (float)b[j];
    return k;
}

/* rows r0..n-1 one at a time (the reference, and the lanes' last rows) over the k terms */
static void dotf_rows(const float *wtf, size_t n, size_t r0, size_t k, const uint32_t *nz, const float *bf, double *s)
{
    for (size_t r = r0; r < n; r++) {
        float a = 0;
        for (size_t q = 0; q < k; q++) a += wtf[(size_t)nz[q] * n + r] * bf[q];
        s[r] = a;
    }
}

static void dotf_cols_scalar(const float *wtf, size_t n, size_t m, const double *b, double *s, uint32_t *nz, float *bf)
{
    dotf_rows(wtf, n, 0, dotf_terms(m, b, nz, bf), nz, bf, s);
}

typedef float vt_v8f __attribute__((vector_size(32)));

/* thirty-two rows a step, their terms read contiguously from wtf; the rest as the reference */
VTI_INLINE void dotf_cols_lanes(const float *wtf, size_t n, size_t m, const double *b, double *s, uint32_t *nz, float *bf)
{
    size_t k = dotf_terms(m, b, nz, bf), r = 0;
    for (; r + 32 <= n; r += 32) {
        vt_v8f s0 = {0, 0, 0, 0, 0, 0, 0, 0}, s1 = s0, s2 = s0, s3 = s0;
        for (size_t q = 0; q < k; q++) {
            const float f = bf[q];
            const vt_v8f bj = {f, f, f, f, f, f, f, f};
            const float *w = wtf + (size_t)nz[q] * n + r;
            vt_v8f p0, p1, p2, p3;
            memcpy(&p0, w, sizeof p0), memcpy(&p1, w + 8, sizeof p1), memcpy(&p2, w + 16, sizeof p2);
            memcpy(&p3, w + 24, sizeof p3);
            s0 += p0 * bj, s1 += p1 * bj, s2 += p2 * bj, s3 += p3 * bj;
        }
        const vt_v8f sv[4] = {s0, s1, s2, s3};
        for (int q = 0; q < 32; q++) s[r + q] = sv[q / 8][q % 8];
    }
    dotf_rows(wtf, n, r, k, nz, bf, s);
}

static void dotf_cols_vector(const float *wtf, size_t n, size_t m, const double *b, double *s, uint32_t *nz, float *bf)
{
    dotf_cols_lanes(wtf, n, m, b, s, nz, bf);
}

#if VTI_HAVE_AVX2
VTI_AVX2 static void dotf_cols_avx2(const float *wtf, size_t n, size_t m, const double *b, double *s, uint32_t *nz,
                                    float *bf)
{
    dotf_cols_lanes(wtf, n, m, b, s, nz, bf);
}
#endif

typedef struct {
    const char *name;
    dotk_cols_fn dotk;
    matvec_cols_fn matvec;
    dotf_cols_fn dotf;
} lanes_impl;

static const lanes_impl LANES[] = {
    {"scalar", dotk_cols_scalar, matvec_cols_scalar, dotf_cols_scalar},
    {"vector", dotk_cols_vector, matvec_cols_vector, dotf_cols_vector},
#if VTI_HAVE_AVX2
    {"avx2", dotk_cols_avx2, matvec_cols_avx2, dotf_cols_avx2},
#endif
};
#define N_LANES (sizeof LANES / sizeof LANES[0])

static const lanes_impl *g_lanes = &LANES[0];
static pthread_once_t g_lanes_once = PTHREAD_ONCE_INIT;

/* VT_CERT_IMPL's choice when this CPU runs it; else "avx2" where it runs, else the scalar loops (the
 * lanes in the baseline ISA's registers are slower than them on x86-64: measured 12.1 s against
 * 9.4 s of CPU, docs/benchmarks.md; there to be tested and chosen by name) */
static void lanes_pick(void)
{
    g_lanes = &LANES[vt_impl_pick("VT_CERT_IMPL", LANES, N_LANES, sizeof LANES[0])];
}

static const lanes_impl *lanes(void)
{
    pthread_once(&g_lanes_once, lanes_pick);
    return g_lanes;
}

static void dotk_cols(const double *w, const double *wt, size_t n, size_t m, const double *b, double *s, double *err,
                      uint32_t *nz)
{
    lanes()->dotk(w, wt, n, m, b, s, err, nz);
}

static void matvec_cols(const double *w, const double *wt, size_t n, size_t m, const double *x, const double *init,
                        double *y)
{
    lanes()->matvec(w, wt, n, m, x, init, y);
}

static void dotf_cols(const float *wtf, size_t n, size_t m, const double *b, double *s, uint32_t *nz, float *bf)
{
    lanes()->dotf(wtf, n, m, b, s, nz, bf);
}

static double dot_lo(const double *a, const double *b, size_t n)
{
    double s, e;
    dotk(a, b, 1, n, &s, &e);
    return DN(s - e);
}

static double dot_hi(const double *a, const double *b, size_t n)
{
    double s, e;
    dotk(a, b, 1, n, &s, &e);
    return UP(s + e);
}

/* ---------------------------------------------------------------- the network in FP64 */

struct vt_cert_ctx {
    uint32_t L, n[VT_CERT_MAX_LAYERS + 1], maxw;
    double *W[VT_CERT_MAX_LAYERS + 1];  /* n[k-1] x n[k] */
    double *WT[VT_CERT_MAX_LAYERS + 1]; /* n[k] x n[k-1] */
    float *WTf[VT_CERT_MAX_LAYERS + 1];  /* WT in FP32 (the weights' own values), unsharded: the search's estimates */
    float *Wf[VT_CERT_MAX_LAYERS + 1];   /* W likewise (the estimates' forward passes) */
    float *bf;                           /* maxw: dotf_cols' work */
    int estimate; /* backward_lb estimates (the search's steps, fsb's passes): FP32 weight passes, no error terms */
    double *b[VT_CERT_MAX_LAYERS + 1];
    /* bounds of the current box: z, a (deployed and real), h = relu(a); delta = bound of |e| */
    double *zl[VT_CERT_MAX_LAYERS + 1], *zu[VT_CERT_MAX_LAYERS + 1], *al[VT_CERT_MAX_LAYERS + 1],
        *au[VT_CERT_MAX_LAYERS + 1], *am[VT_CERT_MAX_LAYERS + 1], *hl[VT_CERT_MAX_LAYERS + 1],
        *hu[VT_CERT_MAX_LAYERS + 1], *hm[VT_CERT_MAX_LAYERS + 1], *dl[VT_CERT_MAX_LAYERS + 1],
        *slope[VT_CERT_MAX_LAYERS + 1];
    /* work: two coefficient vectors, error vectors, the mu of every layer (alpha-CROWN) */
    double *v0, *v1, *v2, *v3, *xs, *mu[VT_CERT_MAX_LAYERS + 1], *fa[VT_CERT_MAX_LAYERS + 1];
    double *alpha_cur, *alpha_best, *grad, *alpha0; /* alpha0, beta0: the search's start */
    double *pass_best; /* the best slopes' pass: its concretising input xs and every mu (save_pass) */
    double *a1c, *x1c; /* alpha_grad's layer-1 values a1c = W_1 x1c + b_1 of its last input x1c (a1c_ok) */
    int a1c_ok;        /* a1c is valid: cleared at each row's search (crown_row) */
    uint32_t *nz;      /* maxw: dotk_cols' work */
    size_t n_alpha_row;
    const double *given; /* vt_cert_set_given_slopes: the slopes of every row (no search), or NULL */
    double deadline; /* vt_now() seconds; 0: none */
    int timed_out;
    int fp32_any; /* the bounds cover any FP32 evaluation order too (ONNX networks) */
    /* sharded over ranks (docs/certify.md "Sharded over ranks"; vt_cert_set_shard). TP: W[k] holds
     * the rows part(n[k-1]) (inputs i), WT[k] the rows part(n[k]) (neurons j) of this rank. FSDP:
     * W[k] / WT[k] hold this rank's part of each chunk of the flat array; the full orientation
     * of one layer is gathered into gbuf (tagged gk, gt) when a loop needs it. */
    vt_comm *comm;
    vt_cert_shard shard;
    int rank, size;
    size_t *gbytes;          /* size entries: allgatherv's counts */
    double *gtmp;            /* TP: this rank's part, copied out before a gather (maxw) */
    double *gbuf;            /* FSDP: the gathered layer (the largest layer's size) */
    uint32_t gk, gt;         /* FSDP: gbuf holds layer gk, WT (gt = 1) or W (gt = 2); 0: nothing */
    vt_err err;              /* the first failed collective (sticky) */
    /* branch and bound (vt_cert_set_splits): the subdomain's ReLU splits (borrowed), and whether the
     * last layer_bounds found the subdomain empty */
    const vt_cert_split *splits;
    uint32_t n_splits;
    int infeasible;
    /* beta-CROWN's multipliers of the splits (n_splits each): the current ones of the final passes
     * (NULL: none), the search's, the best, their gradient; vt_cert_set_split_beta's given / output
     * rows (n_spec_rows x n_splits), and the row being bounded */
    const double *beta;
    double *beta_cur, *beta_best, *beta_grad, *beta0;
    uint32_t beta_cap;
    const double *beta_given;
    double *beta_out;
    uint32_t beta_r;
    /* branch and bound's search (vt_cert_set_bab_search): a row stops its slope and multiplier steps
     * once it closes (row_closed: the larger of its bound and row_floor, its IBP bound, by row_closes or
     * > 0); and the prefix: layers 1..prefix_upto's bounds taken from a parent subdomain's saved state
     * (vt_cert_prefix_save) */
    int close_early;
    /* the search's logits: their bounds are IBP's (layer_bounds skipped CROWN's passes of the output
     * layer; vti_cert_logits_deferred) */
    int logits_ibp;
    int fsb; /* vt_cert_branch_pick: filtered smart branching */
    double row_floor;
    vt_cert_row_closes_fn row_closes; /* vt_cert_set_row_closes: NULL, a bound > 0 closes the row */
    const void *row_closes_ctx;
    const double *prefix;
    uint32_t prefix_upto;
    /* and the warm start (vt_cert_set_warm): the parent subdomain's slopes (every row's) and
     * multipliers (warm_ns per row: its splits, the first of this subdomain's), or NULL */
    const double *warm_alpha, *warm_beta;
    uint32_t warm_ns;
    /* and the row plan (vt_cert_set_row_plan): the order, the groups' ends, the skipped rows (out) */
    const uint32_t *plan;
    const uint8_t *plan_last;
    uint8_t *plan_skip;
    uint32_t plan_n;
    /* vt_cert_set_keep: layers 1..keep_upto left as the last complete bounds (complete) wrote them */
    uint32_t keep_upto;
    int complete;
    vt_cert_method complete_meth;
    double *unclamped;                            /* every hidden layer's bounds before its clamps */
    uint8_t unclamped_ok[VT_CERT_MAX_LAYERS + 1]; /* layer k's are this box's (computed, not a prefix) */
    int borrowed; /* a worker (vti_cert_ctx_fork): W, WT and b are its parent's */
};

/* 1 once the deadline has passed (checked between neurons, rows and iterations; sticky). */
static int expired(vt_cert_ctx *c)
{
    if (c->deadline > 0 && !c->timed_out && vt_now() >= c->deadline) c->timed_out = 1;
    return c->timed_out;
}

static void *xcalloc(size_t n, size_t sz, int *bad)
{
    void *p = calloc(n ? n : 1, sz);
    if (!p) *bad = 1;
    return p;
}

/* ---------------------------------------------------------------- sharding over ranks */

/* The process's setting (vt_cert_set_shard) and whether this rank has taken part in the first
 * context's agreement (vt_cert_shard_fail). */
static struct {
    vt_comm *comm;
    vt_cert_shard mode;
    int agreed;
} g_shard;

void vt_cert_set_shard(vt_comm *comm, vt_cert_shard mode)
{
    g_shard.comm = mode == VT_CERT_SHARD_NONE ? NULL : comm;
    g_shard.mode = g_shard.comm ? mode : VT_CERT_SHARD_NONE;
    g_shard.agreed = 0;
}

int vt_cert_shard_active(void) { return g_shard.comm != NULL; }

const char *vt_cert_shard_name(vt_cert_shard m)
{
    return m == VT_CERT_SHARD_TP ? "tp" : m == VT_CERT_SHARD_FSDP ? "fsdp" : "none";
}

vt_err vti_cert_shard_join(vt_err mine)
{
    if (!g_shard.comm || g_shard.agreed) return mine;
    g_shard.agreed = 1;
    vt_err e = vt_dist_agree(g_shard.comm, mine, NULL);
    return e ? e : mine;
}

vt_err vt_cert_shard_fail(vt_err mine) { return mine == VT_OK ? mine : vti_cert_shard_join(mine); }

vt_comm *vti_cert_shard_comm(vt_cert_shard *mode)
{
    *mode = g_shard.mode;
    return g_shard.comm;
}

size_t vti_cert_part_lo(size_t n, int r, int size) { return (size_t)((uint64_t)n * (uint64_t)r / (uint64_t)size); }

vt_err vti_cert_share_rows(vt_comm *comm, double *v, size_t n, size_t w, double *tmp, size_t *bytes)
{
    int rank = vt_dist_rank(comm), size = vt_dist_size(comm);
    size_t lo = vti_cert_part_lo(n, rank, size), hi = vti_cert_part_lo(n, rank + 1, size);
    memcpy(tmp, v + lo * w, (hi - lo) * w * sizeof *v);
    for (int r = 0; r < size; r++)
        bytes[r] = (vti_cert_part_lo(n, r + 1, size) - vti_cert_part_lo(n, r, size)) * w * sizeof *v;
    return vt_dist_allgatherv(comm, tmp, bytes, v);
}

/* The start of rank r's part of n items: the parts [part_lo(r), part_lo(r + 1)) in rank order. */
static size_t part_lo(const vt_cert_ctx *c, size_t n, int r) { return vti_cert_part_lo(n, r, c->size); }

/* The rows [lo, hi) of n that this rank computes: its part with TP, all of them otherwise. */
static void rows_of(const vt_cert_ctx *c, size_t n, size_t *lo, size_t *hi)
{
    int tp = c->shard == VT_CERT_SHARD_TP;
    *lo = tp ? part_lo(c, n, c->rank) : 0;
    *hi = tp ? part_lo(c, n, c->rank + 1) : n;
}

/* FSDP: the flat arrays are cut in chunks of at most FSDP_CHUNK values (one allgatherv each, within
 * its INT_MAX bytes); rank r holds its part of every chunk, in chunk order. */
#define FSDP_CHUNK ((size_t)1 << 26)

static size_t fsdp_len(const vt_cert_ctx *c, size_t total)
{
    size_t n = 0;
    for (size_t off = 0; off < total; off += FSDP_CHUNK) {
        size_t len = total - off < FSDP_CHUNK ? total - off : FSDP_CHUNK;
        n += part_lo(c, len, c->rank + 1) - part_lo(c, len, c->rank);
    }
    return n;
}

/* FSDP: the whole of layer k's WT (t = 1) or W (t = 2) into gbuf, from every rank's parts. */
static void fsdp_gather(vt_cert_ctx *c, uint32_t k, uint32_t t)
{
    size_t total = (size_t)c->n[k - 1] * c->n[k];
    const double *mine = t == 1 ? c->WT[k] : c->W[k];
    c->gk = 0;
    for (size_t off = 0; off < total && !c->err; off += FSDP_CHUNK) {
        size_t len = total - off < FSDP_CHUNK ? total - off : FSDP_CHUNK;
        for (int r = 0; r < c->size; r++) c->gbytes[r] = (part_lo(c, len, r + 1) - part_lo(c, len, r)) * sizeof(double);
        vt_err e = vt_dist_allgatherv(c->comm, mine, c->gbytes, c->gbuf + off);
        if (e) c->err = e;
        mine += part_lo(c, len, c->rank + 1) - part_lo(c, len, c->rank);
    }
    if (!c->err) c->gk = k, c->gt = t;
}

/* The rows [lo, hi) this rank computes of layer k's WT (t = 1: neuron j, n[k-1] values a row) or
 * W (t = 2: input i, n[k] values a row), and the address of row lo: the same values in the same
 * layout as the unsharded context's rows. FSDP gathers the layer first (unless gbuf holds it). */
static const double *layer_rows(vt_cert_ctx *c, uint32_t k, uint32_t t, size_t *lo, size_t *hi)
{
    rows_of(c, t == 1 ? c->n[k] : c->n[k - 1], lo, hi);
    if (c->shard != VT_CERT_SHARD_FSDP) return t == 1 ? c->WT[k] : c->W[k];
    if (c->gk != k || c->gt != t) fsdp_gather(c, k, t);
    return c->gbuf;
}

/* Every layer's W and WT held whole (one process, or --shard none) */
static int weights_whole(const vt_cert_ctx *c) { return c->shard != VT_CERT_SHARD_TP && c->shard != VT_CERT_SHARD_FSDP; }

/* TP: v[0..n) := every rank's part of it, each rank having computed the values of its rows_of(n)
 * (copied unchanged: no value is combined across ranks). Otherwise every rank computed all. */
static void share(vt_cert_ctx *c, double *v, size_t n)
{
    if (c->shard != VT_CERT_SHARD_TP || c->err) return;
    vt_err e = vti_cert_share_rows(c->comm, v, n, 1, c->gtmp, c->gbytes);
    if (e) c->err = e;
}

/* Layer k's work arrays (n[k] set): the bounds' vectors of every layer, and past the input the pre-activation
 * bounds, relaxations and slopes (the weights are not work: the caller's). */
static void alloc_layer_work(vt_cert_ctx *c, uint32_t k, int *bad)
{
    size_t m = c->n[k];
    c->hl[k] = xcalloc(m, sizeof(double), bad), c->hu[k] = xcalloc(m, sizeof(double), bad);
    c->hm[k] = xcalloc(m, sizeof(double), bad);
    c->mu[k] = xcalloc(m, sizeof(double), bad), c->fa[k] = xcalloc(m, sizeof(double), bad);
    if (k == 0) return;
    c->zl[k] = xcalloc(m, sizeof(double), bad), c->zu[k] = xcalloc(m, sizeof(double), bad);
    c->al[k] = xcalloc(m, sizeof(double), bad), c->au[k] = xcalloc(m, sizeof(double), bad);
    c->am[k] = xcalloc(m, sizeof(double), bad), c->dl[k] = xcalloc(m, sizeof(double), bad);
    c->slope[k] = xcalloc(m, sizeof(double), bad);
}

/* A context's work vectors and alpha-CROWN's / beta-CROWN's search state (maxw, n_alpha_row set). */
static void alloc_work(vt_cert_ctx *c, int *badp)
{
    int bad = 0;
    c->v0 = xcalloc(c->maxw, sizeof(double), &bad), c->v1 = xcalloc(c->maxw, sizeof(double), &bad);
    c->v2 = xcalloc(c->maxw, sizeof(double), &bad), c->v3 = xcalloc(c->maxw, sizeof(double), &bad);
    c->xs = xcalloc(c->maxw, sizeof(double), &bad);
    c->alpha_cur = xcalloc(c->n_alpha_row, sizeof(double), &bad);
    c->alpha_best = xcalloc(c->n_alpha_row, sizeof(double), &bad);
    c->alpha0 = xcalloc(c->n_alpha_row, sizeof(double), &bad);
    c->beta0 = xcalloc(VT_CERT_MAX_SPLITS, sizeof(double), &bad);
    c->grad = xcalloc(c->n_alpha_row, sizeof(double), &bad);
    c->pass_best = xcalloc(2 * (size_t)c->n[0] + c->n_alpha_row, sizeof(double), &bad);
    c->a1c = xcalloc(c->maxw, sizeof(double), &bad), c->x1c = xcalloc(c->maxw, sizeof(double), &bad);
    c->fsb = 1; /* vt_cert_branch_pick's default (vt_cert_set_branching) */
    c->nz = xcalloc(c->maxw, sizeof *c->nz, &bad), c->bf = xcalloc(c->maxw, sizeof *c->bf, &bad);
    c->unclamped = xcalloc(VT_CERT_PREFIX_ARRAYS * c->n_alpha_row, sizeof(double), &bad);
    c->beta_cur = xcalloc(VT_CERT_MAX_SPLITS, sizeof(double), &bad);
    c->beta_best = xcalloc(VT_CERT_MAX_SPLITS, sizeof(double), &bad);
    c->beta_grad = xcalloc(VT_CERT_MAX_SPLITS, sizeof(double), &bad);
    if (bad) *badp = 1;
}

vt_err vt_cert_ctx_new(const vt_cert_net *net, vt_cert_ctx **out)
{
    *out = NULL;
    VT_RETURN_ERROR_IF(net->L < 1 || net->L > VT_CERT_MAX_LAYERS, VT_ERR_ARG, "certify: %u layers (1..%u)", net->L,
                       VT_CERT_MAX_LAYERS);
    for (uint32_t k = 0; k <= net->L; k++)
        VT_RETURN_ERROR_IF(net->n[k] < 1 || net->n[k] > VT_CERT_MAX_WIDTH, VT_ERR_ARG, "certify: layer width %u",
                           net->n[k]);
    VT_RETURN_ERROR_IF(net->n[net->L] < 2, VT_ERR_ARG, "certify: the network has %u output", net->n[net->L]);
    vt_cert_ctx *c = calloc(1, sizeof *c);
    VT_RETURN_ERROR_IF(!c, VT_ERR_NOMEM, "out of memory");
    int bad = 0;
    c->L = net->L;
    c->comm = g_shard.comm, c->shard = g_shard.mode, c->size = 1;
    if (c->comm) c->rank = vt_dist_rank(c->comm), c->size = vt_dist_size(c->comm);
    size_t gmax = 0;
    for (uint32_t k = 0; k <= c->L; k++) {
        c->n[k] = net->n[k];
        if (c->n[k] > c->maxw) c->maxw = c->n[k];
    }
    for (uint32_t k = 0; k <= c->L; k++) {
        size_t m = c->n[k];
        alloc_layer_work(c, k, &bad);
        if (k == 0) continue;
        size_t in = c->n[k - 1], ilo, ihi, jlo, jhi, fl = fsdp_len(c, in * m);
        rows_of(c, in, &ilo, &ihi), rows_of(c, m, &jlo, &jhi);
        if (in * m > gmax) gmax = in * m;
        if (c->shard == VT_CERT_SHARD_FSDP)
            c->W[k] = xcalloc(fl, sizeof(double), &bad), c->WT[k] = xcalloc(fl, sizeof(double), &bad);
        else
            c->W[k] = xcalloc((ihi - ilo) * m, sizeof(double), &bad),
            c->WT[k] = xcalloc((jhi - jlo) * in, sizeof(double), &bad);
        c->b[k] = xcalloc(m, sizeof(double), &bad);
        if (bad) break;
        for (size_t q = 0; q < in * m; q++) /* every rank checks the whole layer: the same outcome */
            if (!isfinite(net->W[k][q])) bad = 2;
        if (c->shard == VT_CERT_SHARD_FSDP) { /* this rank's part of each chunk of both flat arrays */
            size_t p = 0;
            for (size_t off = 0; off < in * m; off += FSDP_CHUNK) {
                size_t len = in * m - off < FSDP_CHUNK ? in * m - off : FSDP_CHUNK;
                for (size_t q = off + part_lo(c, len, c->rank); q < off + part_lo(c, len, c->rank + 1); q++, p++)
                    c->W[k][p] = net->W[k][q], c->WT[k][p] = net->W[k][(q % in) * m + q / in];
            }
        } else
            for (size_t i = 0; i < in; i++)
                for (size_t j = 0; j < m; j++) {
                    double w = net->W[k][i * m + j];
                    if (i >= ilo && i < ihi) c->W[k][(i - ilo) * m + j] = w;
                    if (j >= jlo && j < jhi) c->WT[k][(j - jlo) * in + i] = w;
                }
        for (size_t j = 0; j < m; j++)
            if (!isfinite(c->b[k][j] = net->b[k][j])) bad = 2;
        if (!c->comm && !bad) { /* the estimates' copy (the FP32 weights: exact) */
            c->WTf[k] = xcalloc(in * m, sizeof(float), &bad), c->Wf[k] = xcalloc(in * m, sizeof(float), &bad);
            for (size_t q = 0; c->WTf[k] && c->Wf[k] && q < in * m; q++)
                c->WTf[k][q] = (float)c->WT[k][q], c->Wf[k][q] = (float)c->W[k][q];
        }
    }
    for (uint32_t k = 1; k < c->L; k++) c->n_alpha_row += c->n[k];
    alloc_work(c, &bad);
    if (c->comm) {
        c->gbytes = xcalloc((size_t)c->size, sizeof(size_t), &bad);
        if (c->shard == VT_CERT_SHARD_TP) c->gtmp = xcalloc(c->maxw, sizeof(double), &bad);
        if (c->shard == VT_CERT_SHARD_FSDP) c->gbuf = xcalloc(gmax, sizeof(double), &bad);
    }
    vt_err e = VT_OK;
    if (bad == 2) e = vt_set_error(VT_ERR_ARG, "certify: the network holds a weight that is not finite");
    else if (bad) e = vt_set_error(VT_ERR_NOMEM, "out of memory");
    if (c->comm && !g_shard.agreed) { /* every rank stops here with the lowest failing rank's error */
        g_shard.agreed = 1;
        e = vt_dist_agree(c->comm, e, NULL);
    }
    if (e) {
        vt_cert_ctx_free(c);
        return e;
    }
    *out = c;
    return VT_OK;
}

vt_err vti_cert_ctx_fork(const vt_cert_ctx *c, vt_cert_ctx **out)
{
    *out = NULL;
    VT_RETURN_ERROR_IF(c->comm, VT_ERR_UNSUPPORTED, "certify: a sharded context has no worker copies");
    vt_cert_ctx *f = calloc(1, sizeof *f);
    VT_RETURN_ERROR_IF(!f, VT_ERR_NOMEM, "out of memory");
    int bad = 0;
    f->L = c->L, f->maxw = c->maxw, f->n_alpha_row = c->n_alpha_row, f->size = 1, f->borrowed = 1;
    f->deadline = c->deadline, f->timed_out = c->timed_out, f->fp32_any = c->fp32_any;
    for (uint32_t k = 0; k <= c->L; k++) {
        f->n[k] = c->n[k];
        alloc_layer_work(f, k, &bad);
        if (k) /* read only: shared */
            f->W[k] = c->W[k], f->WT[k] = c->WT[k], f->WTf[k] = c->WTf[k], f->Wf[k] = c->Wf[k], f->b[k] = c->b[k];
    }
    alloc_work(f, &bad);
    if (bad) {
        vt_cert_ctx_free(f);
        return vt_set_error(VT_ERR_NOMEM, "out of memory");
    }
    *out = f;
    return VT_OK;
}

void vti_cert_ctx_time_out(vt_cert_ctx *c) { c->timed_out = 1; }

uint32_t vti_cert_in_width(const vt_cert_ctx *c) { return c->n[0]; }

void vt_cert_ctx_free(vt_cert_ctx *c)
{
    if (!c) return;
    for (uint32_t k = 0; k <= c->L; k++) {
        if (!c->borrowed) free(c->W[k]), free(c->WT[k]), free(c->WTf[k]), free(c->Wf[k]), free(c->b[k]);
        free(c->zl[k]), free(c->zu[k]), free(c->al[k]);
        free(c->au[k]), free(c->am[k]), free(c->hl[k]), free(c->hu[k]), free(c->hm[k]), free(c->dl[k]);
        free(c->slope[k]), free(c->mu[k]), free(c->fa[k]);
    }
    free(c->v0), free(c->v1), free(c->v2), free(c->v3), free(c->xs);
    free(c->alpha_cur), free(c->alpha_best), free(c->alpha0), free(c->beta0), free(c->grad), free(c->pass_best);
    free(c->unclamped), free(c->nz);
    free(c->a1c), free(c->x1c), free(c->bf);
    free(c->beta_cur), free(c->beta_best), free(c->beta_grad);
    free(c->gbytes), free(c->gtmp), free(c->gbuf);
    free(c);
}

size_t vt_cert_n_alpha(const vt_cert_ctx *c) { return (size_t)(c->n[c->L] - 1) * c->n_alpha_row; }

void vt_cert_settings_default(vt_cert_settings *s, vt_cert_method m)
{
    memset(s, 0, sizeof *s);
    s->method = m;
    s->alpha_iters = m == VT_CERT_ALPHA_CROWN ? 20 : 0;
    s->alpha_step = m == VT_CERT_ALPHA_CROWN ? 0.25 : 0;
    s->alpha_decay = m == VT_CERT_ALPHA_CROWN ? 0.85 : 0;
    s->attack_restarts = 5;
    s->attack_iters = 50;
    s->attack_seed = 1;
}

const char *vt_cert_method_name(vt_cert_method m)
{
    return m == VT_CERT_IBP ? "ibp" : m == VT_CERT_CROWN ? "crown" : m == VT_CERT_ALPHA_CROWN ? "alpha-crown" : "?";
}

const char *vt_cert_answer_name(vt_cert_answer a)
{
    return a == VT_CERT_VERIFIED ? "verified" : a == VT_CERT_FALSIFIED ? "falsified" : a == VT_CERT_TIMED_OUT ? "timeout"
                                                                                                           : "unknown";
}

void vt_cert_box(const float *x, uint32_t d, double eps, double *xl, double *xu)
{
    for (uint32_t i = 0; i < d; i++) {
        double lo = DN((double)x[i] - eps), hi = UP((double)x[i] + eps);
        xl[i] = lo > 0 ? lo : 0;
        xu[i] = hi < 1 ? hi : 1;
    }
}

/* ---------------------------------------------------------------- the rounding of the model */

static double rn32(double v) { return (double)(float)v; }

/* With fp32_any (ONNX networks): a bound e of |a - (z + b)| for a = the layer's output neuron j as
 * any FP32 evaluation gives it (docs/certify.md "ONNX and VNN-LIB"): the dot product of n = n[k-1]
 * terms in any order, with or without FMA, the bias accumulated inside (n + 1 terms) or added after,
 * subnormals kept or flushed. With S >= sum_i |w_i| max|h_i| (rounded upward by the dot product lemma
 * on non-negative terms) and Sb = S + |b|: |t - (z + b)| <= gamma_(n+1) Sb + (n + 2) 2^-125 =: e1
 * (Higham's gamma_m = m u / (1 - m u), u = 2^-24; a product or sum that underflows or is flushed
 * errs by at most 2^-126), then a separate rounded add errs by at most 2^-24 (Sb + e1) + 2^-125. */
static double fp32_any_err(const vt_cert_ctx *c, uint32_t k, uint32_t j, const double *w)
{
    size_t in = c->n[k - 1];
    const double *hm = c->hm[k - 1];
    double s = 0;
    for (size_t i = 0; i < in; i++) s += fabs(w[i]) * hm[i];
    double S = UP(s + UP(UP(coef_c(in) * s) + coef_u(in)));
    double Sb = UP(S + fabs(c->b[k][j])), n1 = (double)(in + 1);
    double g = UP(UP(n1 * 0x1p-24) / DN(1 - n1 * 0x1p-24));
    double e1 = UP(UP(g * Sb) + UP((n1 + 1) * 0x1p-125));
    /* every partial sum and product of any order lies within Sb + e1: at most FLT_MAX, no FP32 evaluation
     * overflows; beyond it one may give an infinity that no real-number error term bounds (unknown) */
    if (!(UP(Sb + e1) <= FLT_MAX)) return INFINITY;
    return UP(e1 + UP(UP(UP(Sb + e1) * 0x1p-24) + 0x1p-125));
}

/* From the bounds [zl, zu] of z_k: the bounds of a_k over both networks (deployed: RN32(RN32(z) +
 * b), monotone in z; real: z + b), |a|'s bound, the bound of |e| = |a_dep - (z + b)| and h = relu(a).
 * Returns 0 when a bound is not finite. */
static int finish_layer(vt_cert_ctx *c, uint32_t k)
{
    int ok = 1;
    double *fe = c->v1; /* fp32_any: each neuron's e, from its row of WT */
    if (c->fp32_any) {
        size_t lo, hi, in = c->n[k - 1];
        const double *w = layer_rows(c, k, 1, &lo, &hi);
        for (size_t j = lo; j < hi; j++) fe[j] = fp32_any_err(c, k, (uint32_t)j, w + (j - lo) * in);
        share(c, fe, c->n[k]);
    }
    for (uint32_t j = 0; j < c->n[k]; j++) {
        double zl = c->zl[k][j], zu = c->zu[k][j], b = c->b[k][j];
        double dl = rn32(rn32(zl) + b), du = rn32(rn32(zu) + b); /* double rounding innocuous: 53 >= 2*24+2 */
        double rl = DN(zl + b), ru = UP(zu + b);
        double al = dl < rl ? dl : rl, au = du > ru ? du : ru;
        double e = c->fp32_any ? fe[j] : 0;
        if (c->fp32_any) al = fmin(al, DN(DN(zl + b) - e)), au = fmax(au, UP(UP(zu + b) + e));
        double mz = fmax(fabs(zl), fabs(zu)), ma = fmax(fabs(al), fabs(au));
        c->al[k][j] = al, c->au[k][j] = au, c->am[k][j] = ma;
        c->dl[k][j] = UP(UP(UP(mz * 0x1p-24) + UP(ma * 0x1p-24)) + 0x1p-149);
        if (e > c->dl[k][j]) c->dl[k][j] = e;
        if (!isfinite(al) || !isfinite(au) || !isfinite(c->dl[k][j]) || !(al <= au)) ok = 0;
        if (k < c->L) {
            double hl = al > 0 ? al : 0, hu = au > 0 ? au : 0;
            c->hl[k][j] = hl, c->hu[k][j] = hu, c->hm[k][j] = hu;
            /* the upper line's slope u / (u - l) rounded upward (unstable neurons) */
            c->slope[k][j] = al < 0 && au > 0 ? UP(au / DN(au - al)) : 0;
        }
    }
    return ok;
}

/* IBP of z_k from the bounds of h_(k-1), intersected with what [zl, zu] already holds when keep. */
static void ibp_z(vt_cert_ctx *c, uint32_t k, int keep)
{
    size_t in = c->n[k - 1];
    double *lo = c->v2, *hi = c->v3;
    size_t j0, j1;
    const double *wk = layer_rows(c, k, 1, &j0, &j1);
    for (size_t j = j0; j < j1; j++) {
        const double *w = wk + (j - j0) * in;
        for (size_t i = 0; i < in; i++) {
            lo[i] = w[i] >= 0 ? c->hl[k - 1][i] : c->hu[k - 1][i];
            hi[i] = w[i] >= 0 ? c->hu[k - 1][i] : c->hl[k - 1][i];
        }
        double l = dot_lo(w, lo, in), u = dot_hi(w, hi, in);
        if (!keep || l > c->zl[k][j]) c->zl[k][j] = l;
        if (!keep || u < c->zu[k][j]) c->zu[k][j] = u;
    }
    share(c, c->zl[k], c->n[k]), share(c, c->zu[k], c->n[k]);
}

/* ---------------------------------------------------------------- CROWN's backward pass */

/* A sound lower bound of sum_j c_j q_j over the box, q = a_k (from_a) or z_k. alpha: the lower
 * slopes of layers 1..k-1 (n_alpha_row layout) or NULL for CROWN's adaptive 0/1. With keep_mu, the
 * coefficient of h_m (m < k) is left in c->mu[m] and the concretising input in c->xs. */
static double backward_lb(vt_cert_ctx *c, uint32_t k, int from_a, const double *cvec, const double *alpha)
{
    double K = 0, *lam = c->v0, *nu = c->v1, *errv = c->v2;
    memcpy(lam, cvec, c->n[k] * sizeof *lam);
    size_t aoff = 0;
    for (uint32_t m = 1; m < k; m++) aoff += c->n[m];
    for (uint32_t m = k; m >= 1; m--) {
        size_t out = c->n[m], in = c->n[m - 1];
        if (c->beta && from_a && k == c->L && m < k) /* beta-CROWN: the objective minus sum beta s a_m[i] */
            for (uint32_t q = 0; q < c->n_splits; q++)
                if (c->splits[q].layer == m && c->splits[q].index < out)
                    lam[c->splits[q].index] -= c->splits[q].active ? c->beta[q] : -c->beta[q];
        if (from_a || m < k) { /* a_m = z_m + b_m + e_m */
            K = DN(K + dot_lo(lam, c->b[m], out));
            for (size_t j = 0; j < out; j++) errv[j] = fabs(lam[j]);
            K = DN(K - dot_hi(errv, c->dl[m], out));
        }
        /* lam . z_m = (W_m lam) . h_(m-1): nu = fl(W_m lam), its error times max|h| */
        size_t i0, i1;
        const double *wm = layer_rows(c, m, 2, &i0, &i1);
        if (c->estimate && c->WTf[m]) /* an estimate: FP32, no error term */
            dotf_cols(c->WTf[m], in, out, lam, nu, c->nz, c->bf), memset(errv, 0, in * sizeof *errv);
        else if (weights_whole(c)) /* W_m whole: by its transpose */
            dotk_cols(c->W[m], c->WT[m], in, out, lam, nu, errv, c->nz);
        else
            dotk_rows(wm, out, i1 - i0, lam, out, nu + i0, errv + i0);
        share(c, nu, in), share(c, errv, in);
        K = DN(K - dot_hi(errv, c->hm[m - 1], in));
        if (m == 1) { /* concretise over the box */
            for (size_t i = 0; i < in; i++) c->xs[i] = nu[i] >= 0 ? c->hl[0][i] : c->hu[0][i];
            K = DN(K + dot_lo(nu, c->xs, in));
            memcpy(c->mu[0], nu, in * sizeof *nu);
            break;
        }
        /* h_(m-1) = relu(a_(m-1)) relaxed */
        uint32_t p = m - 1;
        aoff -= in;
        double icpt = 0; /* sum of the upper lines' intercept terms, upward */
        memcpy(c->mu[p], nu, in * sizeof *nu);
        for (size_t i = 0; i < in; i++) {
            double l = c->al[p][i], u = c->au[p][i], v = nu[i], t;
            errv[i] = 0;
            if (u <= 0) lam[i] = 0;
            else if (l >= 0) lam[i] = v;
            else if (v >= 0) {
                double a = alpha ? alpha[aoff + i] : (u >= -l ? 1.0 : 0.0);
                lam[i] = t = v * a;
                if (a != 0 && a != 1) errv[i] = UP(UP(fabs(t) * 0x1p-53) + 0x1p-1074);
            } else { /* v h >= v s (a - l) */
                double s = c->slope[p][i];
                lam[i] = t = v * s;
                errv[i] = UP(UP(fabs(t) * 0x1p-53) + 0x1p-1074);
                icpt = UP(icpt + UP(UP(-v * s) * -l));
            }
        }
        K = DN(K - icpt);
        K = DN(K - dot_hi(errv, c->am[p], in));
    }
    return K == K ? K : -INFINITY;
}

/* Branch and bound's subdomain (docs/certify.md "Branch and bound"): after layer k's bounds, each
 * split of layer k clamps its ReLU's input a (both networks' interval): active (a >= 0): l :=
 * max(l, 0), the ReLU the identity; inactive (a <= 0): u := min(u, 0), the ReLU zero. Sound over the
 * subdomain {x in the box, a(x) on the split's side} (for each network), and the two sides of a split
 * cover its parent. A side the bounds exclude (active with u < 0, inactive with l > 0) is empty:
 * infeasible is set and 0 returned (every bound of an empty set holds). */
/* ReLU (k, j) clamped to one side of its split: its interval, its output's bounds, no relaxation. */
static void clamp_relu(vt_cert_ctx *c, uint32_t k, uint32_t j, int active)
{
    double al = c->al[k][j], au = c->au[k][j];
    if (active) al = al > 0 ? al : 0;
    else au = au < 0 ? au : 0;
    c->al[k][j] = al, c->au[k][j] = au;
    c->hl[k][j] = al > 0 ? al : 0, c->hu[k][j] = c->hm[k][j] = au > 0 ? au : 0;
    c->slope[k][j] = 0; /* stable now */
}

static int apply_splits(vt_cert_ctx *c, uint32_t k)
{
    for (uint32_t q = 0; q < c->n_splits; q++) {
        const vt_cert_split *sp = &c->splits[q];
        if (sp->layer != k || k >= c->L || sp->index >= c->n[k]) continue;
        uint32_t j = sp->index;
        double al = c->al[k][j], au = c->au[k][j];
        if (sp->active ? au < 0 : al > 0) {
            c->infeasible = 1;
            return 0;
        }
        clamp_relu(c, k, j, sp->active);
    }
    return 1;
}

void vt_cert_set_splits(vt_cert_ctx *c, const vt_cert_split *s, uint32_t n)
{
    if (n > VT_CERT_MAX_SPLITS) n = VT_CERT_MAX_SPLITS;
    c->splits = n ? s : NULL;
    c->n_splits = n;
}

void vt_cert_set_split_beta(vt_cert_ctx *c, const double *given, double *out)
{
    c->beta_given = given;
    c->beta_out = out;
}

int vt_cert_infeasible(const vt_cert_ctx *c) { return c->infeasible; }

/* Layer k's bounds and relaxation (the arrays layer_bounds writes) copied to buf (save) or from it;
 * returns buf past them. */
static double *prefix_io(vt_cert_ctx *c, uint32_t k, double *buf, int save)
{
    double *a[] = {c->zl[k], c->zu[k], c->al[k], c->au[k], c->am[k], c->dl[k], c->hl[k], c->hu[k], c->hm[k], c->slope[k]};
    size_t m = c->n[k];
    for (size_t q = 0; q < sizeof a / sizeof *a; q++, buf += m)
        if (save) memcpy(buf, a[q], m * sizeof *buf);
        else memcpy(a[q], buf, m * sizeof *buf);
    return buf;
}

size_t vt_cert_prefix_len(const vt_cert_ctx *c, uint32_t upto)
{
    size_t n = 0;
    for (uint32_t k = 1; k <= upto && k < c->L; k++) n += VT_CERT_PREFIX_ARRAYS * (size_t)c->n[k];
    return n;
}

void vt_cert_prefix_save(vt_cert_ctx *c, uint32_t upto, double *buf)
{
    for (uint32_t k = 1; k <= upto && k < c->L; k++) buf = prefix_io(c, k, buf, 1);
}

void vt_cert_set_prefix(vt_cert_ctx *c, const double *buf, uint32_t upto)
{
    c->prefix = buf, c->prefix_upto = buf ? upto : 0;
}

void vt_cert_set_bab_search(vt_cert_ctx *c, int on) { c->close_early = on != 0; }

int vti_cert_logits_deferred(const vt_cert_ctx *c) { return c->logits_ibp; }

void vt_cert_set_branching(vt_cert_ctx *c, vt_cert_branching b) { c->fsb = b == VT_CERT_BRANCH_FSB; }

void vt_cert_set_row_closes(vt_cert_ctx *c, vt_cert_row_closes_fn fn, const void *ctx)
{
    c->row_closes = fn, c->row_closes_ctx = fn ? ctx : NULL;
}

/* Whether the row being bounded closes with best, as the caller then takes it (the larger of best and
 * its IBP bound, row_floor): a margin when > 0, a property's row by its own test. */
static int row_closed(const vt_cert_ctx *c, double best)
{
    double v = best > c->row_floor ? best : c->row_floor;
    return c->row_closes ? c->row_closes(c->row_closes_ctx, c->beta_r, v) : v > 0;
}

void vt_cert_set_keep(vt_cert_ctx *c, uint32_t upto) { c->keep_upto = c->complete ? upto : 0; }

void vt_cert_set_warm(vt_cert_ctx *c, const double *alpha, const double *beta, uint32_t ns)
{
    c->warm_alpha = alpha, c->warm_beta = alpha ? beta : NULL, c->warm_ns = alpha ? ns : 0;
}

void vt_cert_set_row_plan(vt_cert_ctx *c, const uint32_t *order, const uint8_t *last, uint32_t n, uint8_t *skip)
{
    c->plan = order && last && skip ? order : NULL, c->plan_last = last, c->plan_skip = skip, c->plan_n = n;
}

/* At the bounds' start: whether the plan applies (n rows), its skipped flags cleared. */
static int plan_start(vt_cert_ctx *c, uint32_t n, const vt_cert_settings *s)
{
    if (c->plan_skip) memset(c->plan_skip, 0, c->plan_n);
    return c->plan && c->plan_n == n && c->close_early && s->method == VT_CERT_ALPHA_CROWN;
}

/* After position i's row (closed: it closed): when it ends its group and no row of the group closed,
 * the rows at positions i+1.. are marked skipped, with the warm start's slopes and multipliers (alpha
 * and beta_out, cleared before: CROWN's slopes are not needed, nothing reads a skipped row's stable
 * values); returns 1 then (the caller sets their bounds to -inf and stops). */
static int plan_skip_rest(vt_cert_ctx *c, uint32_t i, uint32_t n, int *group_closed, int closed, double *alpha)
{
    c->plan_skip[c->plan[i]] = 0;
    *group_closed |= closed;
    if (!c->plan_last[i]) return 0;
    if (*group_closed) {
        *group_closed = 0;
        return 0;
    }
    size_t na = c->n_alpha_row;
    for (uint32_t q = i + 1; q < n; q++) {
        uint32_t r = c->plan[q];
        c->plan_skip[r] = 1;
        if (alpha && c->warm_alpha) memcpy(alpha + (size_t)r * na, c->warm_alpha + (size_t)r * na, na * sizeof *alpha);
        if (c->beta_out && c->warm_beta)
            for (uint32_t k = 0; k < c->warm_ns && k < c->n_splits; k++)
                c->beta_out[(size_t)r * c->n_splits + k] = c->warm_beta[(size_t)r * c->warm_ns + k];
    }
    return 1;
}

/* CROWN's bounds of z_k (k >= 2), a backward pass per neuron and sign, intersected with [zl, zu]
 * (IBP's); unit: n[k] doubles of work. 0 when the deadline passed. */
static int crown_z(vt_cert_ctx *c, uint32_t k, double *unit)
{
    for (uint32_t j = 0; j < c->n[k]; j++) {
        if (expired(c)) return 0;
        memset(unit, 0, c->n[k] * sizeof *unit);
        unit[j] = 1;
        double lo = backward_lb(c, k, 0, unit, NULL);
        memset(unit, 0, c->n[k] * sizeof *unit);
        unit[j] = -1;
        double hi = -backward_lb(c, k, 0, unit, NULL);
        if (lo > c->zl[k][j]) c->zl[k][j] = lo;
        if (hi < c->zu[k][j]) c->zu[k][j] = hi;
    }
    return 1;
}

/* The intermediate bounds of the box: IBP for IBP, else CROWN intersected with IBP (the output
 * layer's IBP alone in branch and bound's search, when finite). Returns 0 when a bound is not finite
 * (the answer is then unknown). */
static int layer_bounds(vt_cert_ctx *c, const double *xl, const double *xu, vt_cert_method meth)
{
    c->infeasible = 0, c->logits_ibp = 0;
    uint32_t keep = c->complete && c->complete_meth == meth ? c->keep_upto : 0;
    for (uint32_t i = 0; i < c->n[0] && keep; i++) /* kept only for the same box */
        if (c->hl[0][i] != xl[i] || c->hu[0][i] != xu[i]) keep = 0;
    c->complete = 0, c->keep_upto = 0; /* once */
    for (uint32_t i = 0; i < c->n[0]; i++) {
        c->hl[0][i] = xl[i], c->hu[0][i] = xu[i];
        c->hm[0][i] = fmax(fabs(xl[i]), fabs(xu[i]));
    }
    double *e = c->v3; /* the unit objective lives beside the work vectors v0..v2 */
    const double *pre = c->prefix;
    double *unc = c->unclamped; /* layer k's bounds before its clamps (unclamped_ok[k]), for the keep */
    for (uint32_t k = 1; k <= c->L; unc += k < c->L ? VT_CERT_PREFIX_ARRAYS * (size_t)c->n[k] : 0, k++) {
        if (k < keep && k < c->L) continue; /* as the last bounds left it: the same box and splits there */
        if (k == keep && k < c->L && c->unclamped_ok[k]) { /* its unclamped bounds (the layers below are the
                                                            * same), this subdomain's clamps */
            prefix_io(c, k, unc, 0);
            if (!apply_splits(c, k)) return 0;
            continue;
        }
        if (pre && k <= c->prefix_upto && k < c->L) { /* the parent's layer k, then this subdomain's clamps */
            pre = prefix_io(c, k, (double *)pre, 0);
            c->unclamped_ok[k] = 0; /* the parent's clamps are in it */
            if (!apply_splits(c, k)) return 0;
            continue;
        }
        ibp_z(c, k, 0);
        /* In branch and bound's search the output layer keeps IBP's bounds when they are finite: they
         * serve only the rows' IBP floors and the logits' rounding terms, and a subdomain that closes
         * is bounded again with CROWN's before it is recorded (bound_one in vt_cert_bab.c) */
        if (k == c->L && c->close_early && meth != VT_CERT_IBP && k > 1 && finish_layer(c, k))
            c->logits_ibp = 1;
        else {
            if (meth != VT_CERT_IBP && k > 1 && !crown_z(c, k, e)) return 0;
            if (k < c->L) c->unclamped_ok[k] = 0;
            if (!finish_layer(c, k)) return 0;
        }
        if (k < c->L) prefix_io(c, k, unc, 1), c->unclamped_ok[k] = 1;
        if (!apply_splits(c, k)) return 0;
    }
    c->complete = 1, c->complete_meth = meth;
    return 1;
}

vt_err vt_cert_logit_bounds(vt_cert_ctx *c, const double *xl, const double *xu, const vt_cert_settings *s,
                            double *ol, double *ou)
{
    uint32_t L = c->L;
    if (!layer_bounds(c, xl, xu, s->method)) {
        for (uint32_t j = 0; j < c->n[L]; j++) ol[j] = -INFINITY, ou[j] = INFINITY;
        return c->err;
    }
    memcpy(ol, c->al[L], c->n[L] * sizeof *ol);
    memcpy(ou, c->au[L], c->n[L] * sizeof *ou);
    return c->err;
}

/* alpha-CROWN's gradient of the row's bound with respect to its slopes (after a backward pass that
 * left mu and xs): the relaxed network evaluated forward at xs. An approximation is harmless: the
 * bound of every slope tried is computed soundly. */
/* alpha_grad's layer 1: v1 = W_1 x + b_1 for its input x = fa[0], a corner of the box. Within one row's
 * search (crown_row clears a1c_ok) consecutive inputs differ in a few coordinates (about 14 of 784 on
 * the mnist_fc networks): the last values are updated by those columns of W_1, in index order, instead
 * of recomputed; when more than an eighth differ, or on the search's first gradient, they are computed
 * (matvec_cols). A direction for the search, not a bound: the bounds are backward_lb's. The same
 * arithmetic on every implementation and in every context (each row's search starts afresh), so the
 * search's choices do not depend on the worker or the rank. */
static void layer1_values(vt_cert_ctx *c)
{
    const size_t in = c->n[0], out = c->n[1];
    const double *x = c->fa[0];
    size_t changed = 0;
    for (size_t i = 0; c->a1c_ok && i < in; i++) changed += x[i] != c->x1c[i];
    if (c->a1c_ok && changed * 8 <= in) {
        for (size_t i = 0; i < in; i++) {
            if (x[i] == c->x1c[i]) continue;
            const double d = x[i] - c->x1c[i], *w = c->W[1] + i * out;
            for (size_t j = 0; j < out; j++) c->a1c[j] += w[j] * d;
            c->x1c[i] = x[i];
        }
    } else {
        matvec_cols(c->W[1], c->WT[1], in, out, x, c->b[1], c->a1c);
        memcpy(c->x1c, x, in * sizeof *x);
        c->a1c_ok = 1;
    }
    memcpy(c->v1, c->a1c, out * sizeof *c->v1);
}

static void alpha_grad(vt_cert_ctx *c, const double *alpha, double *g)
{
    memcpy(c->fa[0], c->xs, c->n[0] * sizeof(double));
    size_t off = 0;
    for (uint32_t m = 1; m < c->L; m++) {
        size_t in = c->n[m - 1], j0, j1;
        const double *wm = layer_rows(c, m, 1, &j0, &j1);
        const int whole = weights_whole(c);
        if (whole && m == 1) layer1_values(c);
        else if (whole) matvec_cols(c->W[m], c->WT[m], in, c->n[m], c->fa[m - 1], c->b[m], c->v1); /* by W's columns */
        for (size_t j = j0; j < j1; j++) {
            const double *w = wm + (j - j0) * in;
            double a = c->b[m][j];
            if (whole) a = c->v1[j];
            else
                for (size_t i = 0; i < in; i++) a += w[i] * c->fa[m - 1][i];
            double l = c->al[m][j], u = c->au[m][j], h;
            g[off + j] = 0;
            if (c->beta)
                for (uint32_t q = 0; q < c->n_splits; q++)
                    if (c->splits[q].layer == m && c->splits[q].index == j) c->beta_grad[q] = c->splits[q].active ? -a : a;
            if (u <= 0) h = 0;
            else if (l >= 0) h = a;
            else if (c->mu[m][j] >= 0) {
                h = alpha[off + j] * a;
                g[off + j] = c->mu[m][j] * a;
            } else h = c->slope[m][j] * (a - l);
            c->fa[m][j] = h;
        }
        share(c, c->fa[m], c->n[m]), share(c, g + off, c->n[m]);
        off += c->n[m];
    }
}

/* What alpha_grad reads of the last backward pass (xs, mu of layers 0..L-1) kept (save) or put back:
 * the pass of the best slopes, instead of computing it again (the same values: a pass is a function of
 * the slopes, multipliers and bounds). */
static void save_pass(vt_cert_ctx *c, int save)
{
    double *b = c->pass_best;
    for (uint32_t m = 0; m < c->L; m++) {
        size_t n = c->n[m];
        if (save) memcpy(b, c->mu[m], n * sizeof *b);
        else memcpy(c->mu[m], b, n * sizeof *b);
        b += n;
    }
    if (save) memcpy(b, c->xs, c->n[0] * sizeof *b);
    else memcpy(c->xs, b, c->n[0] * sizeof *b);
}

/* CROWN's (or alpha-CROWN's) sound lower bound of row . a_L, the row in c->v3, after layer_bounds:
 * CROWN's adaptive slopes, then alpha-CROWN's search (in branch and bound's search its steps compared by
 * estimates, the best slopes' bound a sound pass, the start's kept where that is lower); the best slopes
 * found go to alpha (NULL: not
 * kept). given (alpha-CROWN, NULL: search): the row's slopes, bounded by one backward pass without a
 * search (check-certificate); those of the stable values, which no pass reads, are returned as CROWN's,
 * the search's (so a certificate's bytes recompute only from the slopes certify writes). Returns -inf
 * at the deadline. */
static double crown_row(vt_cert_ctx *c, const double *row, const vt_cert_settings *s, const double *given, double *alpha)
{
    uint32_t L = c->L;
    size_t na = c->n_alpha_row;
    /* CROWN's adaptive slopes as the start; the given ones (or the warm start's) for the unstable values */
    const double *warm = !given && c->warm_alpha && s->method == VT_CERT_ALPHA_CROWN ? c->warm_alpha + (size_t)c->beta_r * na : NULL;
    const double *from = given ? given : warm;
    size_t off = 0;
    for (uint32_t m = 1; m < L; m++) {
        for (uint32_t i = 0; i < c->n[m]; i++) {
            double l = c->al[m][i], u = c->au[m][i];
            c->alpha_cur[off + i] = from && l < 0 && u > 0 ? from[off + i] : u >= -l ? 1.0 : 0.0;
        }
        off += c->n[m];
    }
    /* beta-CROWN (branch and bound's subdomains, alpha-CROWN): the splits' multipliers, 0 or the given
     * ones to start, searched with the slopes; any beta >= 0 gives a sound bound */
    uint32_t ns = s->method == VT_CERT_ALPHA_CROWN ? c->n_splits : 0;
    const double *bgiven = ns && c->beta_given ? c->beta_given + (size_t)c->beta_r * ns : NULL;
    const double *bwarm = warm && c->warm_beta && c->warm_ns ? c->warm_beta + (size_t)c->beta_r * c->warm_ns : NULL;
    for (uint32_t q = 0; q < ns; q++) c->beta_cur[q] = bgiven ? bgiven[q] : bwarm && q < c->warm_ns ? bwarm[q] : 0;
    c->beta = ns ? c->beta_cur : NULL;
    c->a1c_ok = 0; /* alpha_grad's layer-1 values start afresh with each row */
    double best = backward_lb(c, L, 1, row, c->alpha_cur);
    memcpy(c->alpha_best, c->alpha_cur, na * sizeof(double));
    memcpy(c->beta_best, c->beta_cur, ns * sizeof(double));
    if (s->method == VT_CERT_ALPHA_CROWN && !given && s->alpha_iters) save_pass(c, 1);
    if (s->method == VT_CERT_ALPHA_CROWN) {
        /* in branch and bound's search (close_early) the steps compare estimates (est: the best slopes';
         * FP32 passes without error terms), the best slopes' sound bound computed when the estimate
         * closes the row and at the end (best is sound while sound_best); elsewhere (alpha-CROWN's own
         * certificates, whose bytes every --shard mode repeats) every step's pass is sound */
        double step = s->alpha_step, est = best, best0 = best;
        int sound_best = 1;
        memcpy(c->alpha0, c->alpha_cur, na * sizeof(double));
        memcpy(c->beta0, c->beta_cur, ns * sizeof(double));
        for (uint32_t it = 0; !given && it < s->alpha_iters; it++) {
            if (c->close_early && !sound_best && row_closed(c, est)) { /* the cur slopes are the best */
                best = backward_lb(c, L, 1, row, c->alpha_cur), sound_best = 1;
                save_pass(c, 1);
            }
            if (c->close_early && sound_best && row_closed(c, best)) break; /* the row closes: enough */
            if (expired(c)) {
                c->beta = NULL;
                return -INFINITY;
            }
            for (uint32_t q = 0; q < ns; q++) c->beta_grad[q] = 0;
            alpha_grad(c, c->alpha_cur, c->grad);
            for (size_t q = 0; q < na; q++) {
                double a = c->alpha_cur[q] + (c->grad[q] > 0 ? step : c->grad[q] < 0 ? -step : 0);
                c->alpha_cur[q] = a < 0 ? 0 : a > 1 ? 1 : a;
            }
            for (uint32_t q = 0; q < ns; q++) {
                double b = c->beta_cur[q] + (c->beta_grad[q] > 0 ? step : c->beta_grad[q] < 0 ? -step : 0);
                c->beta_cur[q] = b > 0 ? b : 0;
            }
            step *= s->alpha_decay;
            c->estimate = c->close_early; /* estimates in branch and bound's search only */
            double v = backward_lb(c, L, 1, row, c->alpha_cur);
            c->estimate = 0;
            if (v > est) { /* outside the search v is the sound bound itself */
                est = v;
                if (c->close_early) sound_best = 0;
                else best = v;
                memcpy(c->alpha_best, c->alpha_cur, na * sizeof(double));
                memcpy(c->beta_best, c->beta_cur, ns * sizeof(double));
                save_pass(c, 1);
            } else {
                /* the gradient is taken at the best slopes found: their pass, kept */
                memcpy(c->alpha_cur, c->alpha_best, na * sizeof(double));
                memcpy(c->beta_cur, c->beta_best, ns * sizeof(double));
                save_pass(c, 0);
            }
        }
        if (!sound_best) { /* the cur slopes and multipliers are the best */
            if (expired(c)) {
                c->beta = NULL;
                return -INFINITY;
            }
            best = backward_lb(c, L, 1, row, c->alpha_cur);
        }
        if (best < best0) { /* the estimates misled: the start's slopes and multipliers, never below them */
            best = best0;
            memcpy(c->alpha_best, c->alpha0, na * sizeof(double));
            memcpy(c->beta_best, c->beta0, ns * sizeof(double));
        }
        if (alpha) memcpy(alpha, c->alpha_best, na * sizeof(double));
        if (ns && c->beta_out) memcpy(c->beta_out + (size_t)c->beta_r * ns, c->beta_best, ns * sizeof(double));
    }
    c->beta = NULL;
    return best;
}

vt_err vt_cert_bounds(vt_cert_ctx *c, const double *xl, const double *xu, uint32_t label, const vt_cert_settings *s,
                      double *lb, double *alpha)
{
    uint32_t L = c->L, no = c->n[L];
    VT_RETURN_ERROR_IF(label >= no, VT_ERR_ARG, "certify: label %u of %u classes", label, no);
    size_t na = c->n_alpha_row;
    const int plan = plan_start(c, no - 1, s);
    if (alpha) memset(alpha, 0, vt_cert_n_alpha(c) * sizeof *alpha);
    if (c->beta_out) memset(c->beta_out, 0, (size_t)(no - 1) * c->n_splits * sizeof *c->beta_out);
    if (!layer_bounds(c, xl, xu, s->method)) { /* an empty subdomain: every bound holds */
        for (uint32_t j = 0; j < no; j++) lb[j] = j == label ? 0 : c->infeasible && !c->timed_out ? INFINITY : -INFINITY;
        return c->err;
    }
    lb[label] = 0;
    int group_closed = 0;
    for (uint32_t i = 0; i + 1 < no; i++) { /* the margins' rows r: classes j != label, in order */
        uint32_t r = plan ? c->plan[i] : i, j = r + (r >= label);
        double ibp = DN(c->al[L][label] - c->au[L][j]);
        if (s->method == VT_CERT_IBP) {
            lb[j] = ibp;
            continue;
        }
        double *row = c->v3;
        memset(row, 0, no * sizeof *row);
        row[label] = 1, row[j] = -1;
        const double *gv = c->given && s->method == VT_CERT_ALPHA_CROWN ? c->given + (size_t)r * na : NULL;
        c->beta_r = r, c->row_floor = ibp;
        double best = crown_row(c, row, s, gv, alpha ? alpha + (size_t)r * na : NULL);
        lb[j] = best > ibp ? best : ibp; /* both sound */
        if (plan && plan_skip_rest(c, i, no - 1, &group_closed, row_closed(c, best), alpha)) {
            for (uint32_t q = i + 1; q + 1 < no; q++) lb[c->plan[q] + (c->plan[q] >= label)] = -INFINITY;
            break;
        }
    }
    return c->err;
}

const double *vt_cert_last_point(const vt_cert_ctx *c) { return c->xs; }

/* The filtered candidates of vt_cert_branch_pick: at most this many by each of the two scores. */
#define VTI_FSB_TOP 4u

/* Candidate (m, i) into the score-sorted list top[0..*n) (at most VTI_FSB_TOP; the higher score first,
 * the earlier (layer, index) on ties: the loop visits them in that order and a tie does not displace). */
static void fsb_keep(double sc, uint32_t m, uint32_t i, double *ts, uint32_t (*top)[2], uint32_t *n)
{
    if (!(sc > 0)) return;
    uint32_t p = *n < VTI_FSB_TOP ? (*n)++ : VTI_FSB_TOP;
    if (p == VTI_FSB_TOP && !(sc > ts[VTI_FSB_TOP - 1])) return;
    if (p == VTI_FSB_TOP) p--;
    while (p > 0 && sc > ts[p - 1]) ts[p] = ts[p - 1], top[p][0] = top[p - 1][0], top[p][1] = top[p - 1][1], p--;
    ts[p] = sc, top[p][0] = m, top[p][1] = i;
}

/* Row's bound (the branching pass's, alpha_row's slopes, no multipliers, the later layers' bounds
 * unchanged) with the unstable ReLU (m, i) split to one side: the candidate's estimate. */
static double fsb_side(vt_cert_ctx *c, const double *row, const double *alpha_row, uint32_t m, uint32_t i, int active)
{
    double *arr[] = {&c->al[m][i], &c->au[m][i], &c->hl[m][i], &c->hu[m][i], &c->hm[m][i], &c->slope[m][i]};
    double keep[6];
    for (int q = 0; q < 6; q++) keep[q] = *arr[q];
    clamp_relu(c, m, i, active);
    c->estimate = 1;
    double v = backward_lb(c, c->L, 1, row, alpha_row);
    c->estimate = 0;
    for (int q = 0; q < 6; q++) *arr[q] = keep[q];
    return v;
}

int vt_cert_branch_pick(vt_cert_ctx *c, const double *row, const double *alpha_row, uint32_t *layer, uint32_t *index)
{
    uint32_t L = c->L;
    if (L < 2) return 0;
    c->estimate = 1; /* a choice, no bound: the estimate */
    (void)backward_lb(c, L, 1, row, alpha_row); /* leaves each h_m's coefficient in mu[m] */
    c->estimate = 0;
    double best = -1, best2 = -1, ts1[VTI_FSB_TOP], ts2[VTI_FSB_TOP];
    uint32_t bl = 0, bi = 0, bl2 = 0, bi2 = 0, top1[VTI_FSB_TOP][2], top2[VTI_FSB_TOP][2], n1 = 0, n2 = 0;
    for (uint32_t m = 1; m < L; m++)
        for (uint32_t i = 0; i < c->n[m]; i++) {
            double l = c->al[m][i], u = c->au[m][i], v = c->mu[m][i];
            if (!(l < 0 && u > 0)) continue;
            double w = u * -l / (u - l); /* the upper line's intercept at a = 0 */
            double s1 = v < 0 ? -v * w : 0, s2 = fabs(v) * w + w * 0x1p-60;
            if (s1 > best) best = s1, bl = m, bi = i;
            if (s2 > best2) best2 = s2, bl2 = m, bi2 = i;
            if (c->fsb) fsb_keep(s1, m, i, ts1, top1, &n1), fsb_keep(s2, m, i, ts2, top2, &n2);
        }
    if (best2 < 0) return 0; /* no unstable ReLU left */
    if (best > 0) *layer = bl, *index = bi;
    else *layer = bl2, *index = bi2;
    if (!c->fsb || n1 + n2 < 2) return 1;
    /* filtered smart branching: each candidate's two children estimated by one pass each; the
     * candidate whose children's estimates sum highest wins (the list's order on ties: the first
     * score's best first) */
    double *xs = c->pass_best; /* the branching pass's point, which the caller reads after */
    memcpy(xs, c->xs, c->n[0] * sizeof *xs);
    uint32_t cand[2 * VTI_FSB_TOP][2], nc = 0; /* the two lists, the first score's first, without repeats */
    for (uint32_t q = 0; q < n1 + n2; q++) {
        const uint32_t *t = q < n1 ? top1[q] : top2[q - n1];
        uint32_t r = 0;
        while (r < nc && !(cand[r][0] == t[0] && cand[r][1] == t[1])) r++;
        if (r == nc) cand[nc][0] = t[0], cand[nc][1] = t[1], nc++;
    }
    double bestv = -INFINITY;
    for (uint32_t q = 0; q < nc; q++) {
        const uint32_t m = cand[q][0], i = cand[q][1];
        double v = fsb_side(c, row, alpha_row, m, i, 1) + fsb_side(c, row, alpha_row, m, i, 0);
        if (v > bestv || q == 0) bestv = v, *layer = m, *index = i;
    }
    memcpy(c->xs, xs, c->n[0] * sizeof *xs);
    return 1;
}

double vt_cert_row_lo(const double *row, const double *ol, const double *ou, uint32_t n, double *work)
{
    for (uint32_t j = 0; j < n; j++) work[j] = row[j] >= 0 ? ol[j] : ou[j];
    return dot_lo(row, work, n);
}

double vt_cert_row_hi(const double *row, const double *ol, const double *ou, uint32_t n, double *work)
{
    for (uint32_t j = 0; j < n; j++) work[j] = row[j] >= 0 ? ou[j] : ol[j];
    return dot_hi(row, work, n);
}

vt_err vt_cert_spec_bounds(vt_cert_ctx *c, const double *xl, const double *xu, const double *C, uint32_t m,
                           const vt_cert_settings *s, double *lb, double *alpha)
{
    uint32_t L = c->L, no = c->n[L];
    size_t na = c->n_alpha_row;
    const int plan = plan_start(c, m, s);
    if (alpha && s->method == VT_CERT_ALPHA_CROWN) memset(alpha, 0, (size_t)m * na * sizeof *alpha);
    for (uint32_t r = 0; r < m; r++) lb[r] = -INFINITY;
    if (c->beta_out) memset(c->beta_out, 0, (size_t)m * c->n_splits * sizeof *c->beta_out);
    if (!layer_bounds(c, xl, xu, s->method)) { /* an empty subdomain (branch and bound): every bound holds */
        for (uint32_t r = 0; r < m && c->infeasible && !c->timed_out; r++) lb[r] = INFINITY;
        return c->err;
    }
    double *work = c->xs; /* maxw doubles; free until a backward pass */
    int group_closed = 0;
    for (uint32_t i = 0; i < m; i++) {
        uint32_t r = plan ? c->plan[i] : i;
        if (expired(c)) return c->err;
        const double *cr = C + (size_t)r * no;
        double ibp = vt_cert_row_lo(cr, c->al[L], c->au[L], no, work);
        if (ibp != ibp) ibp = -INFINITY;
        if (s->method == VT_CERT_IBP) {
            lb[r] = ibp;
            continue;
        }
        double *row = c->v3;
        memcpy(row, cr, no * sizeof *row);
        const double *gv = c->given && s->method == VT_CERT_ALPHA_CROWN ? c->given + (size_t)r * na : NULL;
        c->beta_r = r, c->row_floor = ibp; /* branch and bound's multipliers of this row */
        double best = crown_row(c, row, s, gv, alpha && s->method == VT_CERT_ALPHA_CROWN ? alpha + (size_t)r * na : NULL);
        lb[r] = best > ibp ? best : ibp;
        if (plan && plan_skip_rest(c, i, m, &group_closed, row_closed(c, best), alpha)) {
            for (uint32_t q = i + 1; q < m; q++) lb[c->plan[q]] = -INFINITY;
            break;
        }
    }
    return c->err;
}

size_t vt_cert_n_alpha_row(const vt_cert_ctx *c) { return c->n_alpha_row; }

void vt_cert_set_given_slopes(vt_cert_ctx *c, const double *alpha) { c->given = alpha; }

void vt_cert_set_deadline(vt_cert_ctx *c, double deadline)
{
    c->deadline = deadline;
    c->timed_out = 0;
}

int vt_cert_timed_out(const vt_cert_ctx *c) { return c->timed_out; }

void vti_cert_set_estimate(vt_cert_ctx *c, int on) { c->estimate = on != 0; }

void vt_cert_set_fp32_any(vt_cert_ctx *c, int on) { c->fp32_any = on != 0; }

/* ---------------------------------------------------------------- the attack */

void vt_cert_forward64(vt_cert_ctx *c, const double *x, double *logits)
{
    const double *h = x;
    for (uint32_t k = 1; k <= c->L; k++) {
        size_t in = c->n[k - 1], j0, j1;
        double *o = k == c->L ? logits : c->fa[k];
        const double *wk = layer_rows(c, k, 1, &j0, &j1);
        const int whole = weights_whole(c);
        if (whole && c->estimate && c->Wf[k]) dotf_cols(c->Wf[k], c->n[k], in, h, o, c->nz, c->bf); /* FP32 */
        else if (whole) matvec_cols(c->W[k], c->WT[k], in, c->n[k], h, NULL, o); /* by W's columns, into o (not h) */
        for (size_t j = j0; j < j1; j++) {
            const double *w = wk + (j - j0) * in;
            double a = 0;
            if (whole) a = o[j];
            else
                for (size_t i = 0; i < in; i++) a += w[i] * h[i];
            a += c->b[k][j];
            o[j] = k < c->L && a < 0 ? 0 : a;
        }
        share(c, o, c->n[k]);
        h = o;
    }
}

vt_err vt_cert_eval_deployed(vt_cert_ctx *c, const float *x, float *y, int *finite)
{
    *finite = 0;
    double *h = malloc(c->maxw * sizeof *h), *o = malloc(c->maxw * sizeof *o);
    if (!h || !o) {
        free(h), free(o);
        return vt_set_error(VT_ERR_NOMEM, "out of memory");
    }
    int ok = 1;
    for (uint32_t i = 0; i < c->n[0]; i++) h[i] = x[i], ok &= isfinite(x[i]) != 0;
    for (uint32_t k = 1; k <= c->L; k++) {
        size_t in = c->n[k - 1], j0, j1;
        const double *wk = layer_rows(c, k, 1, &j0, &j1);
        for (size_t j = j0; j < j1; j++) {
            const double *w = wk + (j - j0) * in;
            vt_xacc acc;
            vt_xacc_init(&acc);
            for (size_t i = 0; i < in; i++) vt_xacc_add(&acc, w[i] * h[i]); /* FP32 x FP32: exact in FP64 */
            /* RN32(g + b) through FP64 is RN32 of the exact sum (53 >= 2 x 24 + 2) */
            o[j] = (float)((double)vt_xacc_round32(&acc) + c->b[k][j]);
        }
        share(c, o, c->n[k]);
        for (uint32_t j = 0; j < c->n[k]; j++) {
            ok &= isfinite(o[j]) != 0; /* before the ReLU, which would hide a -inf */
            h[j] = k < c->L && o[j] < 0 ? 0 : o[j];
        }
    }
    for (uint32_t j = 0; j < c->n[c->L]; j++) y[j] = (float)h[j];
    *finite = ok;
    free(h), free(o);
    return c->err;
}

void vt_cert_backprop64(vt_cert_ctx *c, double *g, double *g2)
{
    for (uint32_t k = c->L; k >= 1; k--) {
        size_t in = c->n[k - 1], out = c->n[k], i0, i1;
        const double *wk = layer_rows(c, k, 2, &i0, &i1);
        const int whole = weights_whole(c);
        if (whole && c->estimate && c->WTf[k]) dotf_cols(c->WTf[k], in, out, g, g2, c->nz, c->bf); /* FP32 */
        else if (whole) matvec_cols(c->WT[k], c->W[k], out, in, g, NULL, g2); /* by WT's columns, into g2 (not g) */
        for (size_t i = i0; i < i1; i++) {
            double a = 0;
            if (whole) a = g2[i];
            else
                for (size_t j = 0; j < out; j++) a += wk[(i - i0) * out + j] * g[j];
            g2[i] = k > 1 && c->fa[k - 1][i] <= 0 ? 0 : a;
        }
        share(c, g2, in);
        memcpy(g, g2, in * sizeof *g);
    }
}

int vt_cert_in_ball(float f, float x, double eps)
{
    if (!(f >= 0 && f <= 1)) return 0;
    /* |x - f| <= eps exactly: d = fl(x - f) with its TwoSum error t (x - f = d + t exactly) */
    double a = x, b = -(double)f, d = a + b, bb = d - a, t = (a - (d - bb)) + (b - bb);
    double ad = fabs(d), at = d >= 0 ? t : -t; /* |x - f| = ad + at */
    return ad < eps || (ad == eps && at <= 0);
}

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* The FP32 value nearest v inside the exact ball of x (x itself is inside). */
static float to_ball(double v, float x, double eps)
{
    double lo = (double)x - eps, hi = (double)x + eps;
    float f = (float)(v < lo ? lo : v > hi ? hi : v); /* then a few FP32 steps at most */
    if (!(f >= 0)) f = 0;
    if (f > 1) f = 1;
    while (!vt_cert_in_ball(f, x, eps)) { /* step towards x, one FP32 value at a time (f, x >= 0) */
        uint32_t u = vt_f32_bits(f);
        f = f > x ? vt_bits_f32(u - 1) : vt_bits_f32(u + 1);
    }
    return f;
}

/* PGD aimed at every wrong class in turn (docs/certify.md "Methods", Attack): the example itself is
 * handed to confirm first; then per restart (the first from the example, the others uniform in the
 * ball from splitmix64 of the seed and the example's index), for every class j != label in
 * increasing order, from that same start, attack_iters sign-gradient steps of 2.5 eps / iters
 * increasing a_j - a_label on the FP64 network, each iterate the nearest FP32 value in the exact ball;
 * an iterate on which the FP64 network puts any other class at or above the label's is handed to
 * confirm, which alone decides. The network is net's forward (x -> the C outputs) and grad (after
 * forward: the gradient of gout . out with respect to the input, d values). A deadline (net->deadline
 * > 0, vt_now() seconds) stops it before a step: net->timed_out = 1. */
vt_err vti_cert_pgd(vti_cert_pgd_net *net, const float *x, double eps, uint32_t label, uint64_t index,
                    const vt_cert_settings *s, vt_cert_confirm_fn confirm, void *cctx, float *cex, int *found)
{
    *found = 0;
    uint32_t d = net->d, no = net->C, w = net->work > d ? net->work : d;
    w = w > no ? w : no;
    double *xc = malloc(d * sizeof *xc), *g = malloc(w * sizeof *g), *lg = malloc(no * sizeof *lg);
    float *xf = malloc(d * sizeof *xf), *x0 = malloc(d * sizeof *x0);
    vt_err e = VT_OK;
    if (!xc || !g || !lg || !xf || !x0) {
        e = vt_set_error(VT_ERR_NOMEM, "out of memory");
        goto done;
    }
    int mis = 0;
    if (!net->start) e = confirm(cctx, x, label, &mis); /* the example itself, whatever FP64 says */
    if (!e && mis) memcpy(cex, x, d * sizeof *cex), *found = 1;
    uint64_t seed = s->attack_seed ^ (index * 0xd1342543de82ef95ull);
    double step = 2.5 * eps / (s->attack_iters ? s->attack_iters : 1);
    for (uint32_t r = 0; r < (net->start ? 1 : s->attack_restarts) && !*found && !e; r++) {
        for (uint32_t i = 0; i < d; i++) {
            double u = r == 0 ? 0.5 : (double)(splitmix(&seed) >> 11) * 0x1p-53;
            x0[i] = net->start ? net->start[i] : to_ball((double)x[i] + (2 * u - 1) * eps * (r != 0), x[i], eps);
        }
        for (uint32_t jt = 0; jt < no && !*found && !e; jt++) {
            if (jt == label || (net->start && jt != net->only_class)) continue;
            memcpy(xf, x0, d * sizeof *xf);
            for (uint32_t it = 0; it <= s->attack_iters && !*found && !e; it++) {
                if (net->deadline > 0 && vt_now() >= net->deadline) {
                    net->timed_out = 1;
                    goto done;
                }
                for (uint32_t i = 0; i < d; i++) xc[i] = xf[i];
                net->forward(net->net, xc, lg);
                int cand = 0;
                for (uint32_t j = 0; j < no; j++) cand |= j != label && !(lg[label] > lg[j]);
                if (cand && (r > 0 || it > 0)) { /* a candidate (the example, a start: tried before) */
                    e = confirm(cctx, xf, label, &mis);
                    if (!e && mis) memcpy(cex, xf, d * sizeof *cex), *found = 1;
                }
                if (it == s->attack_iters || *found || e) break;
                for (uint32_t j = 0; j < no; j++) lg[j] = (j == jt) - (j == label); /* a_jt - a_label */
                net->grad(net->net, lg, g);
                for (uint32_t i = 0; i < d; i++)
                    xf[i] = to_ball((double)xf[i] + (g[i] > 0 ? step : g[i] < 0 ? -step : 0), x[i], eps);
            }
        }
    }
done:
    free(xc), free(g), free(lg), free(xf), free(x0);
    return e;
}

typedef struct {
    vt_cert_ctx *c;
    double *g2; /* backprop's work (the widest layer) */
} mlp_pgd;

static void mlp_forward(void *net, const double *x, double *out) { vt_cert_forward64(((mlp_pgd *)net)->c, x, out); }

static void mlp_grad(void *net, const double *gout, double *gin)
{
    mlp_pgd *m = net;
    memcpy(gin, gout, m->c->n[m->c->L] * sizeof *gin);
    vt_cert_backprop64(m->c, gin, m->g2);
}

static vt_err mlp_attack(vt_cert_ctx *c, const float *x, double eps, uint32_t label, uint64_t index, const float *start,
                         uint32_t cls, const vt_cert_settings *s, vt_cert_confirm_fn confirm, void *cctx, float *cex,
                         int *found)
{
    *found = 0;
    mlp_pgd m = {c, malloc(c->maxw * sizeof(double))};
    if (!m.g2) return vt_set_error(VT_ERR_NOMEM, "out of memory");
    vti_cert_pgd_net net = {mlp_forward, mlp_grad, &m, c->n[0], c->n[c->L], c->maxw, c->deadline, 0, start, cls};
    vt_err e = vti_cert_pgd(&net, x, eps, label, index, s, confirm, cctx, cex, found);
    if (net.timed_out) c->timed_out = 1;
    free(m.g2);
    return e ? e : c->err;
}

vt_err vt_cert_attack(vt_cert_ctx *c, const float *x, double eps, uint32_t label, uint64_t index,
                      const vt_cert_settings *s, vt_cert_confirm_fn confirm, void *cctx, float *cex, int *found)
{
    return mlp_attack(c, x, eps, label, index, NULL, 0, s, confirm, cctx, cex, found);
}

vt_err vti_cert_attack_from(vt_cert_ctx *c, const float *x, double eps, uint32_t label, const float *start, uint32_t cls,
                            const vt_cert_settings *s, vt_cert_confirm_fn confirm, void *cctx, float *cex, int *found)
{
    return mlp_attack(c, x, eps, label, 0, start, cls, s, confirm, cctx, cex, found);
}

uint32_t vt_cert_max_width(const vt_cert_ctx *c) { return c->maxw; }

uint32_t vt_cert_out_width(const vt_cert_ctx *c) { return c->n[c->L]; }

uint64_t vt_cert_rand(uint64_t *state) { return splitmix(state); }
