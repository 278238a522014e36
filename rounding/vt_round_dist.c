/* vt_round_dist.c - distributed exact rounding (vt_round_dist.h, docs/distributed.md): phase 1
 * allgathers every rank's FP64 partial and bound and combines them in rank order with the
 * combination's rounding inside the bound, then screens; phase 2 sums the undecided elements'
 * normalised exact accumulators across ranks with an integer allreduce. */
#include "vt_round_dist.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../common/vt_bytes.h"
#include "vt_round_hd.h"
#include "vt_xacc_hd.h"

/* Phase 2 sends, per undecided element, the 69 limbs, the three counts of non-finite terms and a
 * check word (the element's index + 1, whose sum must be N times it on every rank). */
#define VTI_XW (VT_XACC_LIMBS + 4)
/* Elements per phase-2 allreduce (VTI_XW * 8 * 256 = 149 KiB). */
#define VTI_XCHUNK 256

void vt_round_dist_combine(int nr, const double *p, const double *b, size_t stride, double *x, double *B)
{
    /* S + sum(err) = sum_r p_r exactly (TwoSum, as long as nothing overflows); C is the FP64 sum of
     * the errors, M of their magnitudes: vti_comp_finish gives x = RN(S + C) and e with
     * |x - sum_r p_r| <= e (e = 0 when every err is 0), for nr + 8 <= 2^31 terms. */
    double S = p[0], C = 0.0, M = 0.0, Bs = b[0], err;
    for (int r = 1; r < nr; r++) {
        VT_TWOSUM(S, p[(size_t)r * stride], err);
        C += err;
        M += fabs(err);
        Bs += b[(size_t)r * stride];
    }
    double xv, e;
    vti_comp_finish((size_t)nr, S, C, M, &xv, &e);
    *x = xv + 0.0; /* an exact zero is +0, as vt_xacc rounds it */
    if (!isfinite(S) || !isfinite(C) || !isfinite(M) || !isfinite(xv) || !isfinite(Bs) || !(Bs >= 0)) {
        *B = INFINITY;
        return;
    }
    /* Bs + e: a sum of nr + 1 non-negative FP64 terms, below the true sum by at most a relative
     * gamma_nr (exact when subnormal); the inflation covers that and the rounding of the product
     * (nr u << 2^-20), the smallest subnormal an underflow of the product. Zero only when every
     * term is zero: then x is exact. */
    double Bt = Bs + e;
    *B = Bt == 0 ? 0.0 : Bt * (1.0 + 0x1p-20) + 0x1p-1074;
}

typedef struct {
    size_t *idx;
    double *x, *B;
    size_t n, cap;
} vti_undecided;

static int und_push(vti_undecided *u, size_t i, double x, double B)
{
    if (u->n == u->cap) {
        size_t cap = u->cap ? 2 * u->cap : 256;
        size_t *ni = realloc(u->idx, cap * sizeof *ni);
        if (!ni) return -1;
        u->idx = ni;
        double *nx = realloc(u->x, cap * sizeof *nx);
        if (!nx) return -1;
        u->x = nx;
        double *nB = realloc(u->B, cap * sizeof *nB);
        if (!nB) return -1;
        u->B = nB;
        u->cap = cap;
    }
    u->idx[u->n] = i;
    u->x[u->n] = x;
    u->B[u->n] = B;
    u->n++;
    return 0;
}

/* Phase 1's first collective: every rank's n and whether its arguments are usable, so that a
 * difference is the same error on every rank (no rank goes on into collectives of other sizes). */
static vt_err check_args(vt_comm *comm, size_t n, int ok, vt_round_dist_stats *st)
{
    int N = vt_dist_size(comm);
    double mine[2] = {(double)n, ok ? 1.0 : 0.0};
    double *all = malloc((size_t)N * 2 * sizeof *all);
    vt_err e = all ? VT_OK : vt_set_error(VT_ERR_NOMEM, "vt_round_dist: out of memory");
    e = vt_dist_agree(comm, e, NULL);
    if (e) {
        free(all);
        return e;
    }
    e = vt_dist_allgather_f64(comm, mine, 2, all);
    if (st) st->bytes_gather += sizeof mine;
    for (int r = 0; r < N && !e; r++) {
        if (all[2 * r + 1] != 1.0)
            e = vt_set_error(VT_ERR_ARG, "vt_round_dist: rank %d of %d passed bad arguments", r, N);
        else if (all[2 * r] != all[0])
            e = vt_set_error(VT_ERR_ARG, "vt_round_dist: rank %d of %d has %.0f elements, rank 0 has %.0f", r, N,
                             all[2 * r], all[0]);
    }
    free(all);
    return e;
}

/* Phase 1 over elements [i0, i0 + m): gather, combine, screen; the undecided ones into *u. */
static vt_err phase1(vt_comm *comm, size_t i0, size_t m, const double *partial, const double *bound, float *out,
                     double *send, double *all, double *x, double *B, uint8_t *cleared, vti_undecided *u,
                     vt_round_dist_stats *st)
{
    int N = vt_dist_size(comm);
    memcpy(send, partial + i0, m * sizeof *send);
    memcpy(send + m, bound + i0, m * sizeof *send);
    VT_FORWARD_IF_ERROR(vt_dist_allgather_f64(comm, send, 2 * m, all));
    if (st) st->bytes_gather += 2 * m * sizeof(double);
    for (int r = 0; r < N; r++) {
        const double *br = all + (size_t)r * 2 * m + m;
        for (size_t k = 0; k < m; k++)
            VT_RETURN_ERROR_IF(br[k] < 0, VT_ERR_ARG, "vt_round_dist: element %zu: rank %d of %d passed the bound %a",
                               i0 + k, r, N, br[k]);
    }
    for (size_t k = 0; k < m; k++) vt_round_dist_combine(N, all + k, all + m + k, 2 * m, &x[k], &B[k]);
    for (size_t k0 = 0; k0 < m; k0 += VT_BLOCK) {
        size_t nb = m - k0 < VT_BLOCK ? m - k0 : VT_BLOCK;
        if (vt_screen_block(x + k0, B + k0, out + i0 + k0, cleared, nb, 1.0, VT_SLOP_RECORD)) continue;
        for (size_t k = 0; k < nb; k++) {
            if (cleared[k]) continue;
            double xv = x[k0 + k], Bv = B[k0 + k];
            if (isfinite(xv) && isfinite(Bv)) {
                uint32_t lo, hi;
                vt_round_ends(xv, Bv, 1.0, &lo, &hi);
                if (lo == hi && vti_bits_finite(lo)) {
                    out[i0 + k0 + k] = vt_bits_f32(lo);
                    continue;
                }
            }
            VT_RETURN_ERROR_IF(und_push(u, i0 + k0 + k, xv, Bv), VT_ERR_NOMEM, "vt_round_dist: out of memory");
        }
    }
    return VT_OK;
}

/* Phase 2 over the undecided elements u->idx[j0 .. j0 + m). */
static vt_err phase2(vt_comm *comm, const vti_undecided *u, size_t j0, size_t m, vt_round_dist_terms terms, void *arg,
                     int64_t *buf, float *out, vt_round_dist_stats *st)
{
    int N = vt_dist_size(comm);
    vt_err e = VT_OK;
    if (!terms) e = vt_set_error(VT_ERR_UNSUPPORTED, "vt_round_dist: element %zu needs the exact sum, but no terms "
                                                     "callback was given", u->idx[j0]);
    for (size_t k = 0; k < m && !e; k++) {
        size_t i = u->idx[j0 + k];
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
    }
    VT_FORWARD_IF_ERROR(vt_dist_agree(comm, e, NULL));
    VT_FORWARD_IF_ERROR(vt_dist_allreduce_i64(comm, buf, m * VTI_XW));
    if (st) st->bytes_reduce += m * VTI_XW * sizeof(int64_t);
    for (size_t k = 0; k < m; k++) {
        size_t i = u->idx[j0 + k];
        const int64_t *w = buf + k * VTI_XW;
        VT_RETURN_ERROR_IF(w[VT_XACC_LIMBS + 3] != (int64_t)N * ((int64_t)(i & 0xffffffffu) + 1), VT_ERR_INTERNAL,
                           "vt_round_dist: the ranks disagree on which elements need the exact sum (element %zu)", i);
        /* the sum of N normalised accumulators: each limb below N 2^32, the top limb in [-N, 0], so no
         * partial sum of any reduction order overflows (N < 2^31); the limbs' weights are fixed, so
         * this is the exact accumulator of the global sum. Normalised again before rounding. */
        vt_xacc g;
        vti_xacc_init(&g);
        memcpy(g.L, w, sizeof g.L);
        g.lo = 0;
        g.hi = VTI_XTOP;
        g.n_pinf = w[VT_XACC_LIMBS] > 0 ? 1u : 0u;
        g.n_ninf = w[VT_XACC_LIMBS + 1] > 0 ? 1u : 0u;
        g.n_nan = w[VT_XACC_LIMBS + 2] > 0 ? 1u : 0u;
        vti_xacc_norm(&g);
        out[i] = vti_xacc_round32(&g);
    }
    return VT_OK;
}

vt_err vt_round_dist(vt_comm *comm, size_t n, const double *partial, const double *bound, vt_round_dist_terms terms,
                     void *arg, float *out, vt_round_dist_stats *stats, vt_elem_fault *f)
{
    VT_RETURN_ERROR_IF(!comm, VT_ERR_ARG, "vt_round_dist: no communicator");
    int ok = !n || (partial && bound && out);
    VT_FORWARD_IF_ERROR(check_args(comm, n, ok, stats));
    if (n == 0) return VT_OK;
    int N = vt_dist_size(comm);
    /* phase 1 in chunks: the gathered buffer holds N * 2m doubles, about 32 MiB at most */
    size_t chunk = ((size_t)1 << 21) / (size_t)N;
    if (chunk > ((size_t)1 << 18)) chunk = (size_t)1 << 18;
    if (chunk < 1024) chunk = 1024;
    if (chunk > n) chunk = n;
    double *send = malloc(2 * chunk * sizeof *send);
    double *all = malloc((size_t)N * 2 * chunk * sizeof *all);
    double *x = malloc(chunk * sizeof *x), *B = malloc(chunk * sizeof *B);
    uint8_t cleared[VT_BLOCK];
    vti_undecided u = {0};
    int64_t *buf = NULL;
    vt_err e = send && all && x && B ? VT_OK : vt_set_error(VT_ERR_NOMEM, "vt_round_dist: out of memory");
    e = vt_dist_agree(comm, e, NULL);
    for (size_t i0 = 0; i0 < n && !e; i0 += chunk) {
        size_t m = n - i0 < chunk ? n - i0 : chunk;
        e = phase1(comm, i0, m, partial, bound, out, send, all, x, B, cleared, &u, stats);
    }
    free(send);
    free(all);
    free(x);
    free(B);
    if (!e && u.n) {
        size_t xc = u.n < VTI_XCHUNK ? u.n : VTI_XCHUNK;
        buf = malloc(xc * VTI_XW * sizeof *buf);
        e = vt_dist_agree(comm, buf ? VT_OK : vt_set_error(VT_ERR_NOMEM, "vt_round_dist: out of memory"), NULL);
        for (size_t j0 = 0; j0 < u.n && !e; j0 += xc) {
            size_t m = u.n - j0 < xc ? u.n - j0 : xc;
            e = phase2(comm, &u, j0, m, terms, arg, buf, out, stats);
        }
    }
    if (!e && stats) {
        stats->n += n;
        stats->n_exact += u.n;
    }
    for (size_t j = 0; j < u.n && !e; j++) {
        float r = out[u.idx[j]];
        if (isfinite(r)) continue;
        vt_set_error(VT_ERR_DIVERGED, "vt_round_dist: element %zu: %s", u.idx[j],
                     isnan(r) ? "result is NaN" : "result is beyond FP32 range");
        if (f) {
            f->index = u.idx[j];
            f->x = u.x[j];
            f->B = u.B[j];
        }
        e = VT_ERR_DIVERGED;
    }
    free(buf);
    free(u.idx);
    free(u.x);
    free(u.B);
    return e;
}
