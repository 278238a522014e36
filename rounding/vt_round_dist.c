/* vt_round_dist.c - distributed exact rounding (vt_round_dist.h, docs/distributed.md): phase 1
 * splits the elements into one contiguous slice per rank; each rank receives every rank's FP64
 * partial and bound (the bound rounded upward to 32 bits) of its own slice only (alltoallv),
 * combines them in rank order with the combination's rounding inside the bound, screens, and the
 * FP32 results are allgathered (a reduce-scatter, then an allgather: about 16 (N-1)/N bytes sent per
 * element and rank, twice an FP32 ring all-reduce); phase 2 gathers the owners' undecided elements
 * and sums their normalised exact accumulators across ranks with an integer allreduce. */
#include "vt_round_dist.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../common/vt_bytes.h"
#include "../common/vt_cli.h"
#include "vt_round_hd.h"
#include "vt_xacc_hd.h"

/* Phase 2 sends, per undecided element, the 69 limbs, the three counts of non-finite terms and a
 * check word (the element's index + 1, whose sum must be N times it on every rank). */
#define VTI_XW (VT_XACC_LIMBS + 4)
/* Elements per phase-2 allreduce (VTI_XW * 8 * 256 = 149 KiB). */
#define VTI_XCHUNK 256
/* Elements per phase-1 round (the exchange's buffers: about 12 bytes an element sent and received,
 * 16 more for the owner's unpacked partials and bounds: 11 MiB at most). */
#define VTI_CHUNK VT_ROUND_DIST_ROUND

/* The combination of m elements: element k's partials and bounds at P[r stride + k], Bd[r stride +
 * k] in rank order, into x[k] and B[k]. For each element: S + sum(err) = sum_r p_r exactly (TwoSum,
 * as long as nothing overflows); C is the FP64 sum of the errors, M of their magnitudes:
 * vti_comp_finish gives x = RN(S + C) and e with |x - sum_r p_r| <= e (e = 0 when every err is 0),
 * for nr + 8 <= 2^31 terms. Bs + e: a sum of nr + 1 non-negative FP64 terms, below the true sum by
 * at most a relative gamma_nr (exact when subnormal); the inflation covers that and the rounding of
 * the product (nr u << 2^-20), the smallest subnormal an underflow of the product. Zero only when
 * every term is zero: then x is exact. The elements go in blocks, rank by rank, so that the same
 * IEEE operations of each element, in the same order, vectorise across the elements. */
static void combine_all(int N, const double *P, const double *Bd, size_t stride, size_t m, double *x, double *B)
{
    enum { W = 256 };
    double S[W], C[W], M[W], Bs[W];
    for (size_t k0 = 0; k0 < m; k0 += W) {
        size_t w = m - k0 < W ? m - k0 : W;
        for (size_t k = 0; k < w; k++) S[k] = P[k0 + k], C[k] = 0.0, M[k] = 0.0, Bs[k] = Bd[k0 + k];
        for (int r = 1; r < N; r++) {
            const double *pr = P + (size_t)r * stride + k0, *br = Bd + (size_t)r * stride + k0;
            for (size_t k = 0; k < w; k++) {
                double err;
                VT_TWOSUM(S[k], pr[k], err);
                C[k] += err;
                M[k] += fabs(err);
                Bs[k] += br[k];
            }
        }
        for (size_t k = 0; k < w; k++) {
            double xv, e;
            vti_comp_finish((size_t)N, S[k], C[k], M[k], &xv, &e);
            x[k0 + k] = xv + 0.0; /* an exact zero is +0, as vt_xacc rounds it */
            double Bt = Bs[k] + e;
            int bad = !isfinite(S[k]) || !isfinite(C[k]) || !isfinite(M[k]) || !isfinite(xv) || !isfinite(Bs[k]) ||
                      !(Bs[k] >= 0);
            B[k0 + k] = bad ? INFINITY : Bt == 0 ? 0.0 : Bt * (1.0 + 0x1p-20) + 0x1p-1074;
        }
    }
}

void vt_round_dist_combine(int nr, const double *p, const double *b, size_t stride, double *x, double *B)
{
    combine_all(nr, p, b, stride, 1, x, B);
}

/* The bound as sent: the high 32 bits of its FP64 pattern (sign, 11-bit exponent, 20 fraction
 * bits), rounded upward - the next pattern up when any low bit is set, which for a non-negative
 * value is the next larger value of that 32-bit format (0x7fefffff + 1 is +inf). So the decoded
 * bound is >= the bound (a bound may only grow: still rigorous), by less than a relative 2^-20,
 * with FP64's whole range (an FP32 would turn bounds below 2^-149 or above FLT_MAX into 2^-149 or
 * +inf, and decide fewer elements); 0 stays 0 (an exact partial), +inf stays +inf, a NaN stays a
 * NaN (decides nothing). Negative bounds were refused before. */
static inline uint32_t bound_enc(double b)
{
    if (isnan(b)) return 0x7ff80000u;
    if (!(b > 0)) return 0; /* +0 or -0: the combination treats them alike */
    uint64_t u = vt_f64_bits(b);
    return (uint32_t)(u >> 32) + ((uint32_t)u != 0);
}

static inline double bound_dec(uint32_t w) { return vt_bits_f64((uint64_t)w << 32); }

/* An undecided element: its index in the caller's numbering and its combined x and B. */
typedef struct {
    uint64_t i;
    double x, B;
} vti_und;

typedef struct {
    vti_und *v;
    size_t n, cap;
} vti_undecided;

static int und_push(vti_undecided *u, size_t i, double x, double B)
{
    if (u->n == u->cap) {
        size_t cap = u->cap ? 2 * u->cap : 256;
        vti_und *nv = realloc(u->v, cap * sizeof *nv);
        if (!nv) return -1;
        u->v = nv;
        u->cap = cap;
    }
    u->v[u->n++] = (vti_und){(uint64_t)i, x, B};
    return 0;
}

/* Room for `extra` more without reallocating (0, or -1: out of memory). */
static int und_reserve(vti_undecided *u, size_t extra)
{
    if (u->n + extra <= u->cap) return 0;
    size_t cap = u->n + extra;
    vti_und *nv = realloc(u->v, cap * sizeof *nv);
    if (!nv) return -1;
    u->v = nv;
    u->cap = cap;
    return 0;
}

static int und_cmp(const void *a, const void *b)
{
    uint64_t i = ((const vti_und *)a)->i, j = ((const vti_und *)b)->i;
    return (i > j) - (i < j);
}

/* Slice s of the m elements of a round: [m s / N, m (s + 1) / N). */
static inline size_t slice_lo(size_t m, int s, int N) { return m * (size_t)s / (size_t)N; }

/* The most refined elements of a round that go to every rank in one allgather (each rank then
 * combines them all) rather than to their owners: a few, so that the N - 1 messages of an exchange
 * and the results' allgather are spared (latency) while the bytes stay small; bounded so that N
 * times it stays within 2^17 values (the buffers below). */
static inline size_t gather_cap(int N)
{
    size_t g = ((size_t)1 << 17) / (size_t)N;
    return g < 1024 ? g : 1024;
}

/* The buffers of phase 1, for rounds of at most `chunk` elements. */
typedef struct {
    size_t chunk;
    unsigned char *sbuf, *rbuf; /* the exchange: 12 bytes an element */
    double *P, *Bd;             /* the owner's slice unpacked: N values an element */
    double *x, *B;
    float *res;
    unsigned char *gbuf;        /* the results gathered: 4 bytes an element and one word a rank */
    size_t *cnt;                /* 3 N byte counts */
} vti_p1;

static void p1_free(vti_p1 *b)
{
    free(b->sbuf), free(b->rbuf), free(b->P), free(b->Bd), free(b->x), free(b->B), free(b->res), free(b->gbuf);
    free(b->cnt);
    memset(b, 0, sizeof *b);
}

/* This thread's phase-1 buffers, kept from call to call (a step makes dozens of calls: allocating
 * megabytes each time costs page faults) and grown as needed: about 44 bytes an element of a round,
 * 11 MiB at most. */
static _Thread_local vti_p1 g_p1;
static _Thread_local int g_p1_N;

void vt_round_dist_release(void)
{
    p1_free(&g_p1);
    g_p1_N = 0;
}

/* The buffers for n elements on N ranks: &g_p1 with its chunk set, or NULL (out of memory). */
static vti_p1 *p1_get(size_t n, int N)
{
    vti_p1 *b = &g_p1;
    size_t c = n < VTI_CHUNK ? n : VTI_CHUNK;
    if (b->sbuf && g_p1_N == N && b->chunk >= c) return b; /* the largest slice of c <= that of chunk */
    size_t keep = b->sbuf && g_p1_N == N ? b->chunk : 0;
    p1_free(b);
    if (keep > c) c = keep;
    size_t mo = c / (size_t)N + 1; /* the largest slice */
    size_t g = gather_cap(N) < c ? gather_cap(N) : c;
    if (mo < g) mo = g; /* the refinement round gathered: every rank combines up to gather_cap elements */
    b->sbuf = malloc(12 * c + 4);
    b->rbuf = malloc(12 * mo * (size_t)N + 4 * (size_t)N);
    b->P = malloc(mo * (size_t)N * sizeof *b->P);
    b->Bd = malloc(mo * (size_t)N * sizeof *b->Bd);
    b->x = malloc(mo * sizeof *b->x);
    b->B = malloc(mo * sizeof *b->B);
    b->res = malloc(mo * sizeof *b->res);
    b->gbuf = malloc(4 * (c + (size_t)N));
    b->cnt = malloc(3 * (size_t)N * sizeof *b->cnt);
    if (!(b->sbuf && b->rbuf && b->P && b->Bd && b->x && b->B && b->res && b->gbuf && b->cnt)) {
        p1_free(b);
        return NULL;
    }
    b->chunk = c;
    g_p1_N = N;
    return b;
}

/* Phase 0, the first collective: every rank's n, whether its arguments are usable and its memory
 * allocated, whether its refinement replaces partials (resum: the refinement round's size), and its
 * first negative bound, so that any of these is the same error on every rank (no rank goes on into
 * collectives of other sizes). Sends 32 bytes to each other rank (status + 4 resum in one value). */
static vt_err check_args(vt_comm *comm, size_t n, int status, int resum, const double *bound, vt_round_dist_stats *st)
{
    int N = vt_dist_size(comm);
    double mine[4] = {(double)n, (double)(status + 4 * resum), -1.0, 0.0};
    if (status == 0)
        for (size_t i = 0; i < n; i++)
            if (bound[i] < 0) {
                mine[2] = (double)i, mine[3] = bound[i];
                break;
            }
    /* up to 64 ranks on the stack: no agreement on an allocation (one collective fewer a call) */
    double stack[4 * 64], *all = stack;
    vt_err e = VT_OK;
    if (N > 64) {
        all = malloc((size_t)N * 4 * sizeof *all);
        e = vt_dist_agree(comm, all ? VT_OK : vt_set_error(VT_ERR_NOMEM, "vt_round_dist: out of memory"), NULL);
        if (e) {
            free(all);
            return e;
        }
    }
    e = vt_dist_allgather_f64(comm, mine, 4, all);
    if (st) st->bytes_gather += sizeof mine * (uint64_t)(N - 1);
    for (int r = 0; r < N && !e; r++)
        if (fmod(all[4 * r + 1], 4.0) == 1.0)
            e = vt_set_error(VT_ERR_ARG, "vt_round_dist: rank %d of %d passed bad arguments", r, N);
    for (int r = 0; r < N && !e; r++)
        if (all[4 * r] != all[0])
            e = vt_set_error(VT_ERR_ARG, "vt_round_dist: rank %d of %d has %.0f elements, rank 0 has %.0f", r, N,
                             all[4 * r], all[0]);
    for (int r = 0; r < N && !e; r++)
        if ((all[4 * r + 1] >= 4.0) != (all[1] >= 4.0))
            e = vt_set_error(VT_ERR_ARG, "vt_round_dist: rank %d of %d %s new partials in the refinement round, rank 0 %s",
                             r, N, all[4 * r + 1] >= 4.0 ? "sends" : "does not send", all[1] >= 4.0 ? "does" : "does not");
    for (int r = 0; r < N && !e; r++)
        if (fmod(all[4 * r + 1], 4.0) == 2.0)
            e = vt_set_error(VT_ERR_NOMEM, "vt_round_dist: rank %d of %d: out of memory", r, N);
    for (int r = 0; r < N && !e; r++)
        if (all[4 * r + 2] >= 0)
            e = vt_set_error(VT_ERR_ARG, "vt_round_dist: element %.0f: rank %d of %d passed the bound %a", all[4 * r + 2],
                             r, N, all[4 * r + 3]);
    if (all != stack) free(all);
    return e;
}

/* An element the owner's screen leaves undecided is sent, in place of its FP32 result, as a mark: a
 * NaN pattern, which no decided result is (a decided result is finite). VTI_MARK_REFINE: the ranks'
 * refined bounds are wanted; VTI_MARK_EXACT: the exact phase's. */
#define VTI_MARK_EXACT 0xffffffffu
#define VTI_MARK_REFINE 0xfffffffeu

static inline float mark(uint32_t w) { return vt_bits_f32(w); }
static inline int is_mark(float v) { return vt_f32_bits(v) >= VTI_MARK_REFINE; }
static inline int is_refine(float v) { return vt_f32_bits(v) == VTI_MARK_REFINE; }

/* The screen of exact rounding over m combined elements (docs/rounding.md 5-6: the fast filter with
 * k = 1 and the slop of recording, then the ends of [x - B, x + B]): res[k] = RN32(X) where both ends
 * round to one finite FP32 value, else VTI_MARK_EXACT. Returns the count of marks. */
static size_t screen(const double *x, const double *B, float *res, size_t m)
{
    size_t n_und = 0;
    uint8_t cleared[VT_BLOCK];
    for (size_t k0 = 0; k0 < m; k0 += VT_BLOCK) {
        size_t nb = m - k0 < VT_BLOCK ? m - k0 : VT_BLOCK;
        if (vt_screen_block(x + k0, B + k0, res + k0, cleared, nb, 1.0, VT_SLOP_RECORD)) continue;
        for (size_t k = 0; k < nb; k++) {
            if (cleared[k]) continue;
            double xv = x[k0 + k], Bv = B[k0 + k];
            if (isfinite(xv) && isfinite(Bv)) {
                uint32_t l, h;
                vt_round_ends(xv, Bv, 1.0, &l, &h);
                if (l == h && vti_bits_finite(l)) {
                    res[k0 + k] = vt_bits_f32(l);
                    continue;
                }
            }
            res[k0 + k] = mark(VTI_MARK_EXACT);
            n_und++;
        }
    }
    return n_und;
}

/* The owners' results of a round, in rank order, to every rank: owner s sends its cnt[s] words
 * (b->res; refined = 0: the whole slice, refined = 1: its elements marked VTI_MARK_REFINE, in
 * order) and one count word (its elements newly left to the exact phase; UINT32_MAX: it ran out of
 * memory recording them); every rank writes them into out and adds the counts to und_of. */
static vt_err gather_results(vt_comm *comm, size_t m, size_t mine, size_t i0, vti_p1 *b, uint32_t cw, int refined,
                             float *out, uint64_t *und_of, uint64_t *bytes)
{
    int N = vt_dist_size(comm);
    size_t *gb = b->cnt + 2 * N;
    for (int s = 0; s < N; s++) {
        size_t a = slice_lo(m, s, N), ms = slice_lo(m, s + 1, N) - a, c = ms;
        if (refined) {
            c = 0;
            for (size_t k = 0; k < ms; k++) c += is_refine(out[i0 + a + k]);
        }
        gb[s] = 4 * (c + 1);
    }
    memcpy(b->sbuf, b->res, mine * sizeof(float));
    memcpy(b->sbuf + 4 * mine, &cw, 4);
    VT_FORWARD_IF_ERROR(vt_dist_allgatherv(comm, b->sbuf, gb, b->gbuf));
    if (bytes) *bytes += 4 * (uint64_t)(mine + 1) * (uint64_t)(N - 1);
    const unsigned char *gp = b->gbuf;
    for (int s = 0; s < N; s++) {
        size_t a = slice_lo(m, s, N), ms = slice_lo(m, s + 1, N) - a, c = gb[s] / 4 - 1;
        if (!refined) memcpy(out + i0 + a, gp, ms * sizeof(float));
        else
            for (size_t k = 0, j = 0; k < ms && j < c; k++)
                if (is_refine(out[i0 + a + k])) memcpy(out + i0 + a + k, gp + 4 * j++, 4);
        memcpy(&cw, gp + 4 * c, 4);
        gp += 4 * (c + 1);
        if (cw == UINT32_MAX || und_of[s] == UINT64_MAX) und_of[s] = UINT64_MAX;
        else und_of[s] += cw;
    }
    return VT_OK;
}

/* The refinement as passed: the callback (NULL on a rank without one), its argument, and whether
 * it may replace the partial (resum: the same on every rank, checked in phase 0). */
typedef struct {
    vt_round_dist_refine fn;
    void *arg;
    int resum;
} vti_refine;

/* This rank's refinement of marked element i: *p its partial to send, the bound returned for it. */
static double refine_one(const vti_refine *rf, size_t i, const double *partial, const double *bound, double *p)
{
    double pi = partial[i], bi = bound[i];
    *p = pi;
    double r = rf->fn ? rf->fn(rf->arg, i, p) : bi; /* a rank without one: its partial and bound */
    if (!rf->resum || !(r >= 0)) *p = pi; /* bound only, or no refinement (NaN, negative) */
    if (!(r >= 0)) return bi;
    /* the same partial: both bounds are rigorous, so the smaller is */
    if (vt_f64_bits(*p) == vt_f64_bits(pi) && bi >= 0 && bi < r) return bi;
    return r;
}

/* The refinement round of phase 1, for the round's elements marked VTI_MARK_REFINE (every rank
 * knows them from the gathered results, so every rank takes the same path; nothing when none is
 * marked). Each rank computes, for the marked elements, its refined bound and (resum) its partial.
 * Few marked (at most gather_cap(N), a count every rank knows): one allgather of every rank's
 * partials and bounds of them all (12 bytes an element), and every rank combines and screens them
 * all - the same operations on the same bits, so the same results on every rank; the owner of each
 * still undecided element records it for the exact phase. Many: each rank sends each owner its
 * refined bounds of that owner's marked elements (4 bytes an element; 12 with resum: the partials
 * too) in one exchange; the owner combines its marked elements again (the partials received, or
 * its own copies still in b->P, compacted in place) with the refined bounds, screens, records what
 * is still undecided, and the results go to every rank (one allgather). */
static vt_err refine_round(vt_comm *comm, size_t i0, size_t m, size_t lo, size_t mo, const double *partial,
                           const double *bound, const vti_refine *rf, float *out, vti_p1 *b, vti_undecided *u,
                           int *oom, uint64_t *und_of, vt_round_dist_stats *st)
{
    int N = vt_dist_size(comm), me = vt_dist_rank(comm);
    size_t *sb = b->cnt, *rb = b->cnt + N, total = 0, cu = 0;
    for (int s = 0; s < N; s++) {
        size_t a = slice_lo(m, s, N), ms = slice_lo(m, s + 1, N) - a, c = 0;
        for (size_t k = 0; k < ms; k++) c += is_refine(out[i0 + a + k]);
        sb[s] = c;
        total += c;
        if (s == me) cu = c;
    }
    if (!total) return VT_OK;
    if (st) st->n_refine += total;
    if (total <= gather_cap(N)) {
        /* gathered: [partials][bounds] of the marked elements in increasing index and a word (this
         * rank out of memory: no room to record its elements left to the exact phase), from every
         * rank */
        if (!*oom && und_reserve(u, cu)) *oom = 1;
        uint32_t ow = (uint32_t)*oom;
        memcpy(b->sbuf + 12 * total, &ow, 4);
        unsigned char *wp = b->sbuf, *wbnd = b->sbuf + 8 * total;
        for (size_t i = i0, j = 0; i < i0 + m; i++) {
            if (!is_refine(out[i])) continue;
            double p;
            uint32_t v = bound_enc(refine_one(rf, i, partial, bound, &p));
            memcpy(wp + 8 * j, &p, 8);
            memcpy(wbnd + 4 * j, &v, 4);
            j++;
        }
        for (int r = 0; r < N; r++) rb[r] = 12 * total + 4;
        VT_FORWARD_IF_ERROR(vt_dist_allgatherv(comm, b->sbuf, rb, b->rbuf));
        if (st) st->bytes_refine += (12 * (uint64_t)total + 4) * (uint64_t)(N - 1);
        for (int r = 0; r < N; r++) {
            const unsigned char *rp = b->rbuf + (size_t)r * (12 * total + 4), *rbnd = rp + 8 * total;
            memcpy(&ow, rbnd + 4 * total, 4);
            if (ow) und_of[r] = UINT64_MAX;
            memcpy(b->P + (size_t)r * total, rp, 8 * total);
            for (size_t j = 0; j < total; j++) {
                uint32_t v;
                memcpy(&v, rbnd + 4 * j, 4);
                b->Bd[(size_t)r * total + j] = bound_dec(v);
            }
        }
        combine_all(N, b->P, b->Bd, total, total, b->x, b->B);
        screen(b->x, b->B, b->res, total);
        /* every rank writes every result; the owner of an element still undecided records it */
        size_t j = 0;
        for (int s = 0; s < N; s++) {
            size_t a = slice_lo(m, s, N), ms = slice_lo(m, s + 1, N) - a;
            uint64_t n_und = 0;
            for (size_t k = 0; k < ms; k++) {
                size_t i = i0 + a + k;
                if (!is_refine(out[i])) continue;
                out[i] = b->res[j];
                if (is_mark(b->res[j])) {
                    if (s == me && !*oom) (void)und_push(u, i, b->x[j], b->B[j]); /* room reserved */
                    n_und++;
                }
                j++;
            }
            if (und_of[s] != UINT64_MAX) und_of[s] += n_und;
        }
        return VT_OK;
    }
    size_t wb = rf->resum ? 12 : 4;
    unsigned char *w = b->sbuf;
    for (int s = 0; s < N; s++) {
        size_t a = slice_lo(m, s, N), ms = slice_lo(m, s + 1, N) - a, c = sb[s];
        unsigned char *wp = w, *wbnd = wp + (rf->resum ? 8 * c : 0); /* the partials (resum), the bounds */
        for (size_t k = 0, j = 0; k < ms; k++) {
            size_t i = i0 + a + k;
            if (!is_refine(out[i])) continue;
            double p;
            uint32_t v = bound_enc(refine_one(rf, i, partial, bound, &p));
            if (rf->resum) memcpy(wp + 8 * j, &p, 8);
            memcpy(wbnd + 4 * j, &v, 4);
            j++;
        }
        w += wb * c;
        sb[s] = wb * c;
    }
    for (int r = 0; r < N; r++) rb[r] = wb * cu;
    VT_FORWARD_IF_ERROR(vt_dist_alltoallv(comm, b->sbuf, sb, b->rbuf, rb));
    if (st) st->bytes_refine += wb * (uint64_t)(total - cu);
    /* the marked elements' partials: received, or compacted in place (P[r cu + j] from P[r mo + k_j],
     * k_j >= j: every read is at or after the write); their refined bounds decoded */
    for (int r = 0; r < N; r++) {
        const unsigned char *rp = b->rbuf + (size_t)r * wb * cu, *rbnd = rp + (rf->resum ? 8 * cu : 0);
        for (size_t k = 0, j = 0; k < mo && j < cu; k++) {
            if (!is_refine(out[i0 + lo + k])) continue;
            uint32_t v;
            memcpy(&v, rbnd + 4 * j, 4);
            if (rf->resum) memcpy(&b->P[(size_t)r * cu + j], rp + 8 * j, 8);
            else b->P[(size_t)r * cu + j] = b->P[(size_t)r * mo + k];
            b->Bd[(size_t)r * cu + j] = bound_dec(v);
            j++;
        }
    }
    combine_all(N, b->P, b->Bd, cu, cu, b->x, b->B);
    uint32_t n_und = 0;
    if (screen(b->x, b->B, b->res, cu))
        for (size_t k = 0, j = 0; k < mo && j < cu; k++) {
            if (!is_refine(out[i0 + lo + k])) continue;
            if (is_mark(b->res[j])) {
                if (*oom || und_push(u, i0 + lo + k, b->x[j], b->B[j])) *oom = 1;
                n_und++;
            }
            j++;
        }
    return gather_results(comm, m, cu, i0, b, *oom ? UINT32_MAX : n_und, 1, out, und_of,
                          st ? &st->bytes_refine : NULL);
}

/* Phase 1 over elements [i0, i0 + m): every rank sends slice s of its partials and bounds to rank s;
 * this rank combines its own slice's N partials in rank order and screens (the undecided ones into
 * *u; a failure to record one sets *oom); the owners' results and counts of undecided elements are
 * gathered into out and und_of (UINT64_MAX: that owner ran out of memory). */
static vt_err phase1(vt_comm *comm, size_t i0, size_t m, const double *partial, const double *bound,
                     const vti_refine *rf, float *out, vti_p1 *b, vti_undecided *u, int *oom, uint64_t *und_of,
                     vt_round_dist_stats *st)
{
    int N = vt_dist_size(comm), me = vt_dist_rank(comm);
    size_t *sb = b->cnt, *rb = b->cnt + N;
    size_t lo = slice_lo(m, me, N), mo = slice_lo(m, me + 1, N) - lo;
    /* pack: slice s's partials, then its bounds as 32-bit words */
    unsigned char *w = b->sbuf;
    for (int s = 0; s < N; s++) {
        size_t a = slice_lo(m, s, N), ms = slice_lo(m, s + 1, N) - a;
        memcpy(w, partial + i0 + a, ms * sizeof(double));
        w += ms * sizeof(double);
        for (size_t k = 0; k < ms; k++, w += 4) {
            uint32_t v = bound_enc(bound[i0 + a + k]);
            memcpy(w, &v, 4);
        }
        sb[s] = 12 * ms;
        rb[s] = 12 * mo;
    }
    VT_FORWARD_IF_ERROR(vt_dist_alltoallv(comm, b->sbuf, sb, b->rbuf, rb));
    if (st) st->bytes_gather += 12 * (uint64_t)(m - mo);
    /* unpack rank r's block: P[r mo + k], Bd[r mo + k] */
    const unsigned char *rp = b->rbuf;
    for (int r = 0; r < N; r++) {
        memcpy(b->P + (size_t)r * mo, rp, mo * sizeof(double));
        rp += mo * sizeof(double);
        for (size_t k = 0; k < mo; k++, rp += 4) {
            uint32_t v;
            memcpy(&v, rp, 4);
            b->Bd[(size_t)r * mo + k] = bound_dec(v);
        }
    }
    combine_all(N, b->P, b->Bd, mo, mo, b->x, b->B);
    uint32_t n_und = 0;
    if (screen(b->x, b->B, b->res, mo))
        for (size_t k = 0; k < mo; k++) {
            if (!is_mark(b->res[k])) continue;
            /* a finite x: the ranks' refined bounds may decide it (B alone not finite: a bound was) */
            if (rf->fn && isfinite(b->x[k])) {
                b->res[k] = mark(VTI_MARK_REFINE);
                continue;
            }
            if (*oom || und_push(u, i0 + lo + k, b->x[k], b->B[k])) *oom = 1;
            n_und++;
        }
    /* the owners' results (or marks) and counts, in rank order */
    VT_FORWARD_IF_ERROR(
        gather_results(comm, m, mo, i0, b, *oom ? UINT32_MAX : n_und, 0, out, und_of, st ? &st->bytes_gather : NULL));
    return refine_round(comm, i0, m, lo, mo, partial, bound, rf, out, b, u, oom, und_of, st);
}

/* Every rank learns every owner's undecided elements (index, x, B), in increasing index: an
 * allgather of 24 bytes an element (counted as phase 2's bytes). */
static vt_err gather_undecided(vt_comm *comm, vti_undecided *u, const uint64_t *und_of, vt_round_dist_stats *st)
{
    int N = vt_dist_size(comm), me = vt_dist_rank(comm);
    if (N == 1) { /* already all of them; in increasing index but for the refined ones */
        qsort(u->v, u->n, sizeof *u->v, und_cmp);
        return VT_OK;
    }
    size_t total = 0;
    for (int s = 0; s < N; s++) total += (size_t)und_of[s];
    size_t *bytes = malloc((size_t)N * sizeof *bytes);
    vti_und *all = malloc(total * sizeof *all);
    vt_err e = bytes && all ? VT_OK : vt_set_error(VT_ERR_NOMEM, "vt_round_dist: out of memory");
    e = vt_dist_agree(comm, e, NULL);
    if (!e) {
        for (int s = 0; s < N; s++) bytes[s] = (size_t)und_of[s] * sizeof(vti_und);
        e = vt_dist_allgatherv(comm, u->v, bytes, all);
        if (st) st->bytes_reduce += bytes[me] * (uint64_t)(N - 1);
    }
    free(bytes);
    if (e) {
        free(all);
        return e;
    }
    /* each owner's list increases within a round; the rounds and slices interleave */
    qsort(all, total, sizeof *all, und_cmp);
    free(u->v);
    u->v = all;
    u->n = u->cap = total;
    return VT_OK;
}

/* The top limb of an undecided element's window: the smallest hi with |X| < M / 2, M = 2^(32 (hi + 1)
 * - 1088), from |X| <= |x| + B (the owner's combination): then X is the one value of its residue
 * modulo M in [-M/2, M/2), and the limbs above hi need not be sent. fl(|x| + B) < 2^(e+1) with e its
 * exponent, and the true sum is below 2^(e+1) too (rounding is monotone and 2^(e+1) is an FP64
 * value); hi leaves one bit more. VTI_XTOP (the whole accumulator, no modulus) when not finite. */
static int window_top(double x, double B)
{
    double a = fabs(x) + B;
    if (!isfinite(a)) return VTI_XTOP;
    int e = a > 0 ? ilogb(a) : -1075;
    int hi = (e + 1091 + 31) / 32 - 1; /* 32 (hi + 1) - 1089 >= e + 2 */
    return hi < VTI_XTOP ? hi : VTI_XTOP;
}

/* Phase 2 over the undecided elements u->v[j0 .. j0 + m): each rank's normalised exact accumulator
 * of each element into buf (VTI_XW words an element); one allreduce (minimum) of the lowest
 * non-zero limb over the ranks (-1: a rank failed: the failure is then agreed); then one integer
 * allreduce (sum) of each element's window of limbs lo .. hi, the counts of non-finite terms and the
 * check word, rounded once. */
static vt_err phase2(vt_comm *comm, const vti_undecided *u, size_t j0, size_t m, vt_round_dist_terms terms, void *arg,
                     int64_t *buf, int64_t *lo, int64_t *pk, float *out, vt_round_dist_stats *st)
{
    int N = vt_dist_size(comm);
    vt_err e = VT_OK;
    if (!terms) e = vt_set_error(VT_ERR_UNSUPPORTED, "vt_round_dist: element %zu needs the exact sum, but no terms "
                                                     "callback was given", (size_t)u->v[j0].i);
    for (size_t k = 0; k < m && !e; k++) {
        size_t i = (size_t)u->v[j0 + k].i;
        vt_xacc a;
        vti_xacc_init(&a);
        e = terms(arg, i, &a);
        if (e) break;
        vti_xacc_norm(&a);
        /* normalised: limbs 0..67 in [0, 2^32), the top limb the sign (0 or -1 below 2^62 additions) */
        if (a.L[VTI_XTOP] < -1 || a.L[VTI_XTOP] > 0) {
            e = vt_set_error(VT_ERR_INTERNAL, "vt_round_dist: element %zu: the exact accumulator is out of range", i);
            break;
        }
        int64_t *w = buf + k * VTI_XW;
        memcpy(w, a.L, sizeof a.L);
        w[VT_XACC_LIMBS] = a.n_pinf;
        w[VT_XACC_LIMBS + 1] = a.n_ninf;
        w[VT_XACC_LIMBS + 2] = a.n_nan;
        w[VT_XACC_LIMBS + 3] = (int64_t)(i & 0xffffffffu) + 1;
        int l = 0;
        while (l < VT_XACC_LIMBS && a.L[l] == 0) l++;
        lo[k] = l; /* VT_XACC_LIMBS: zero */
    }
    if (e)
        for (size_t k = 0; k < m; k++) lo[k] = -1;
    VT_FORWARD_IF_ERROR(vt_dist_allreduce_min_i64(comm, lo, m));
    if (st) st->bytes_reduce += 2 * (uint64_t)(m * sizeof(int64_t)) * (uint64_t)(N - 1) / (uint64_t)N;
    if (lo[0] < 0) { /* some rank failed: every rank learns which, and its message */
        VT_FORWARD_IF_ERROR(vt_dist_agree(comm, e, NULL));
        VT_RETURN_ERROR(VT_ERR_INTERNAL, "vt_round_dist: a rank failed in phase 2 but the agreement found none");
    }
    /* pack the windows: the lowest non-zero limb of any rank up to window_top (at least one limb) */
    size_t words = 0;
    for (size_t k = 0; k < m; k++) {
        int hi = window_top(u->v[j0 + k].x, u->v[j0 + k].B);
        int l0 = lo[k] > hi ? hi : (int)lo[k];
        lo[k] = l0;
        const int64_t *w = buf + k * VTI_XW;
        memcpy(pk + words, w + l0, (size_t)(hi - l0 + 1) * sizeof *pk);
        words += (size_t)(hi - l0 + 1);
        memcpy(pk + words, w + VT_XACC_LIMBS, 4 * sizeof *pk);
        words += 4;
    }
    VT_FORWARD_IF_ERROR(vt_dist_allreduce_i64(comm, pk, words));
    /* an allreduce sends 2 (N - 1) / N of the data per rank (a ring: reduce-scatter, allgather) */
    if (st) st->bytes_reduce += 2 * (uint64_t)(words * sizeof(int64_t)) * (uint64_t)(N - 1) / (uint64_t)N;
    size_t at = 0;
    for (size_t k = 0; k < m; k++) {
        size_t i = (size_t)u->v[j0 + k].i;
        int hi = window_top(u->v[j0 + k].x, u->v[j0 + k].B), l0 = (int)lo[k];
        const int64_t *w = pk + at, *c = pk + at + (hi - l0 + 1);
        at += (size_t)(hi - l0 + 1) + 4;
        VT_RETURN_ERROR_IF(c[3] != (int64_t)N * ((int64_t)(i & 0xffffffffu) + 1), VT_ERR_INTERNAL,
                           "vt_round_dist: the ranks disagree on which elements need the exact sum (element %zu)", i);
        /* the sum of N normalised accumulators' limbs lo .. hi: each below N 2^32 (the top limb, when
         * sent, in [-N, 0]), so no partial sum of any reduction order overflows (N < 2^31); the limbs'
         * weights are fixed. Every rank's limbs below lo are zero, so this is X modulo M (hi below the
         * top) or X itself (hi the top limb). Normalised, reduced modulo M into [-M/2, M/2), rounded. */
        vt_xacc g;
        vti_xacc_init(&g);
        memcpy(g.L + l0, w, (size_t)(hi - l0 + 1) * sizeof *w);
        g.lo = l0;
        g.hi = hi;
        g.n_pinf = c[0] > 0 ? 1u : 0u;
        g.n_ninf = c[1] > 0 ? 1u : 0u;
        g.n_nan = c[2] > 0 ? 1u : 0u;
        vti_xacc_norm(&g);
        if (hi < VTI_XTOP) {
            for (int l = hi + 1; l < VT_XACC_LIMBS; l++) g.L[l] = 0; /* modulo M: a value in [0, M) */
            g.hi = hi;
            if (g.L[hi] >= ((int64_t)1 << 31)) { /* >= M/2: X is this minus M */
                g.L[hi + 1] = -1;
                g.hi = hi + 1;
                vti_xacc_norm(&g);
            }
        }
        out[i] = vti_xacc_round32(&g);
    }
    return VT_OK;
}

vt_err vt_round_dist_quot32(vt_comm *comm, const vt_xacc *mine, uint64_t n, float *out)
{
    VT_RETURN_ERROR_IF(!comm || !mine || !out, VT_ERR_ARG, "vt_round_dist_quot32: NULL argument");
    vt_xacc a = *mine;
    vti_xacc_norm(&a);
    /* normalised: limbs 0..67 in [0, 2^32), the top limb the sign (0 or -1); N of them summed stay far
     * from int64's range (N < 2^31), and the sum's top limb carries the sign of X itself */
    VT_RETURN_ERROR_IF(a.L[VTI_XTOP] < -1 || a.L[VTI_XTOP] > 0, VT_ERR_INTERNAL,
                       "vt_round_dist_quot32: the exact accumulator is out of range");
    int64_t w[VT_XACC_LIMBS + 3];
    memcpy(w, a.L, sizeof a.L);
    w[VT_XACC_LIMBS] = a.n_pinf, w[VT_XACC_LIMBS + 1] = a.n_ninf, w[VT_XACC_LIMBS + 2] = a.n_nan;
    VT_FORWARD_IF_ERROR(vt_dist_allreduce_i64(comm, w, VT_XACC_LIMBS + 3));
    vt_xacc g;
    vti_xacc_init(&g);
    memcpy(g.L, w, sizeof g.L);
    g.lo = 0, g.hi = VTI_XTOP;
    g.n_pinf = w[VT_XACC_LIMBS] > 0 ? 1u : 0u;
    g.n_ninf = w[VT_XACC_LIMBS + 1] > 0 ? 1u : 0u;
    g.n_nan = w[VT_XACC_LIMBS + 2] > 0 ? 1u : 0u;
    vti_xacc_norm(&g);
    *out = vt_xacc_round32_quot(&g, n);
    return VT_OK;
}

static _Thread_local uint64_t g_calls;
static _Thread_local double g_seconds;

void vt_round_dist_clock(uint64_t *calls, double *seconds)
{
    if (calls) *calls = g_calls;
    if (seconds) *seconds = g_seconds;
}

static vt_err round_dist(vt_comm *comm, size_t n, const double *partial, const double *bound, const vti_refine *rf,
                         vt_round_dist_terms terms, void *arg, float *out, vt_round_dist_stats *stats,
                         vt_elem_fault *f);

vt_err vt_round_dist_refined(vt_comm *comm, size_t n, const double *partial, const double *bound,
                             vt_round_dist_refine refine, int resum, vt_round_dist_terms terms, void *arg, float *out,
                             vt_round_dist_stats *stats, vt_elem_fault *f)
{
    double t0 = vt_now();
    const vti_refine rf = {refine, arg, resum != 0};
    vt_err e = round_dist(comm, n, partial, bound, &rf, terms, arg, out, stats, f);
    g_calls++;
    g_seconds += vt_now() - t0;
    return e;
}

vt_err vt_round_dist(vt_comm *comm, size_t n, const double *partial, const double *bound, vt_round_dist_terms terms,
                     void *arg, float *out, vt_round_dist_stats *stats, vt_elem_fault *f)
{
    return vt_round_dist_refined(comm, n, partial, bound, NULL, 0, terms, arg, out, stats, f);
}

static vt_err round_dist(vt_comm *comm, size_t n, const double *partial, const double *bound, const vti_refine *rf,
                         vt_round_dist_terms terms, void *arg, float *out, vt_round_dist_stats *stats,
                         vt_elem_fault *f)
{
    VT_RETURN_ERROR_IF(!comm, VT_ERR_ARG, "vt_round_dist: no communicator");
    int N = vt_dist_size(comm);
    int ok = !n || (partial && bound && out);
    vti_p1 *b = ok && n ? p1_get(n, N) : NULL;
    int have = !(ok && n) || b;
    uint64_t *und_of = calloc((size_t)N, sizeof *und_of);
    vt_err e = check_args(comm, n, !ok ? 1 : !have || !und_of ? 2 : 0, rf->resum, bound, stats);
    vti_undecided u = {0};
    int64_t *buf = NULL;
    int oom = 0;
    /* rounds of VTI_CHUNK elements (the buffers may hold more: kept from a larger call) */
    for (size_t i0 = 0; i0 < n && !e; i0 += VTI_CHUNK) {
        size_t m = n - i0 < VTI_CHUNK ? n - i0 : VTI_CHUNK;
        e = phase1(comm, i0, m, partial, bound, rf, out, b, &u, &oom, und_of, stats);
    }
    size_t n_und = 0;
    for (int s = 0; s < N && !e; s++) {
        if (und_of[s] == UINT64_MAX) e = vt_set_error(VT_ERR_NOMEM, "vt_round_dist: rank %d of %d: out of memory", s, N);
        else n_und += (size_t)und_of[s];
    }
    if (!e && n_und) e = gather_undecided(comm, &u, und_of, stats);
    free(und_of);
    if (!e && u.n) {
        size_t xc = u.n < VTI_XCHUNK ? u.n : VTI_XCHUNK;
        buf = malloc(xc * (2 * VTI_XW + 1) * sizeof *buf); /* accumulators, windows, lowest limbs */
        e = vt_dist_agree(comm, buf ? VT_OK : vt_set_error(VT_ERR_NOMEM, "vt_round_dist: out of memory"), NULL);
        for (size_t j0 = 0; j0 < u.n && !e; j0 += xc) {
            size_t m = u.n - j0 < xc ? u.n - j0 : xc;
            e = phase2(comm, &u, j0, m, terms, arg, buf, buf + xc * VTI_XW, buf + xc * (VTI_XW + 1), out, stats);
        }
    }
    if (!e && stats) {
        stats->n += n;
        stats->n_exact += u.n;
    }
    for (size_t j = 0; j < u.n && !e; j++) {
        float r = out[u.v[j].i];
        if (isfinite(r)) continue;
        vt_set_error(VT_ERR_DIVERGED, "vt_round_dist: element %zu: %s", (size_t)u.v[j].i,
                     isnan(r) ? "result is NaN" : "result is beyond FP32 range");
        if (f) {
            f->index = u.v[j].i;
            f->x = u.v[j].x;
            f->B = u.v[j].B;
        }
        e = VT_ERR_DIVERGED;
    }
    free(buf);
    free(u.v);
    return e;
}
