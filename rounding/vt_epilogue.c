/* vt_epilogue.c - the host twin of the GPU's GEMM epilogue (vt_epilogue.h). */
#include "vt_epilogue.h"

#include <stdlib.h>

int vt_epi_supported(const vt_rctx *c)
{
    return c->bound.rounding == VT_ROUNDING_EXACT || c->mode == VT_RMODE_RECORD;
}

double vt_epi_coef(const vt_rctx *c, size_t K) { return vti_bound_coef_red(&c->bound, (uint64_t)K, (uint64_t)K); }

/* Stages 3 and 4 of both twins: the decision of each of the n flagged elements idx[] (elem(d, e, x,
 * r) for element e with value x) and vt_epi_finish over the rows x cols output. */
typedef void (*elem_fn)(const void *d, uint64_t e, double x, vt_epi_res *r);
static vt_err decide_finish(vt_rctx *c, uint32_t op_id, size_t rows, size_t cols, uint64_t n, const uint64_t *idx,
                            elem_fn elem, const void *d, const double *x, float *out)
{
    vt_epi_res *res = malloc((n ? n : 1) * sizeof *res);
    VT_RETURN_ERROR_IF(!res, VT_ERR_NOMEM, "the GEMM epilogue's twin: out of memory");
    for (uint64_t f = 0; f < n; f++) elem(d, idx[f], x[idx[f]] + 0.0, &res[f]);
    vt_err err = vt_epi_finish(c, op_id, rows, cols, n, idx, res, out);
    free(res);
    return err;
}

typedef struct {
    const vt_gemm_epi *d;
    size_t N;
} gemm_at;
static void gemm_elem_at(const void *p, uint64_t e, double x, vt_epi_res *r)
{
    const gemm_at *g = p;
    vti_gemm_elem(g->d, (size_t)(e / g->N), (size_t)(e % g->N), x, r);
}
static void bmm_elem_at(const void *p, uint64_t e, double x, vt_epi_res *r) { vti_bmm_elem(p, (size_t)e, x, r); }

vt_err vt_epi_host(vt_rctx *c, uint32_t op_id, vt_gemm_epi d, const double *x, size_t M, size_t N, float *out)
{
    VT_RETURN_ERROR_IF(!vt_epi_supported(c), VT_ERR_ARG, "the GEMM epilogue does not replay a log");
    VT_RETURN_ERROR_IF(M == 0 || N == 0 || d.K == 0 || (N && M > SIZE_MAX / 16 / N), VT_ERR_ARG,
                       "vt_epi_host: bad sizes");
    d.cfg = c->bound;
    d.record = c->bound.rounding == VT_ROUNDING_LOG;
    double coef = vt_epi_coef(c, d.K);
    VT_RETURN_ERROR_IF(!(coef >= 0), VT_ERR_LIMIT, "vt_epi_host: no bound coefficient for K=%zu", d.K);
    double *rn = malloc(M * sizeof *rn), *cn = malloc(N * sizeof *cn);
    uint64_t *idx = malloc(M * N * sizeof *idx);
    vt_err err = VT_OK;
    if (!rn || !cn || !idx) {
        err = vt_set_error(VT_ERR_NOMEM, "vt_epi_host: out of memory");
        goto done;
    }
    /* stage 1: norms and the screen */
    for (size_t i = 0; i < M; i++) rn[i] = vti_norm32(d.K, d.A + i * d.a_si, d.a_sk);
    for (size_t j = 0; j < N; j++) cn[j] = vti_norm32(d.K, d.B + j * d.b_sj, d.b_sk);
    double k = d.record ? VT_UNSTABLE_K : 1.0;
    uint64_t n = 0;
    for (size_t e = 0; e < M * N; e++) {
        size_t i = e / N, j = e % N;
        /* stage 2: the flagged indices, in increasing order */
        if (!vti_gemm_screen(coef, rn[i], cn[j], x[e] + 0.0, k, &out[e])) idx[n++] = e;
    }
    gemm_at at = {&d, N};
    err = decide_finish(c, op_id, M, N, n, idx, gemm_elem_at, &at, x, out); /* stages 3 and 4 */
done:
    free(rn);
    free(cn);
    free(idx);
    return err;
}

vt_err vt_epi_host_bmm(vt_rctx *c, uint32_t op_id, vt_bmm_epi d, size_t G, const double *x, float *out)
{
    VT_RETURN_ERROR_IF(!vt_epi_supported(c), VT_ERR_ARG, "the batched GEMM epilogue does not replay a log");
    size_t M = d.M, N = d.N, K = d.K;
    VT_RETURN_ERROR_IF(!G || !M || !N || !K || G > SIZE_MAX / 16 / M / N, VT_ERR_ARG, "vt_epi_host_bmm: bad sizes");
    d.record = c->bound.rounding == VT_ROUNDING_LOG;
    d.legacy_log = c->bound.legacy_log;
    d.coef = vt_epi_coef(c, K);
    VT_RETURN_ERROR_IF(!(d.coef >= 0), VT_ERR_LIMIT, "vt_epi_host_bmm: no bound coefficient for K=%zu", K);
    size_t n = G * M * N;
    double *rn = malloc(G * M * sizeof *rn), *cn = malloc(G * N * sizeof *cn);
    uint64_t *idx = malloc(n * sizeof *idx);
    vt_err err = VT_OK;
    if (!rn || !cn || !idx) {
        err = vt_set_error(VT_ERR_NOMEM, "vt_epi_host_bmm: out of memory");
        goto done;
    }
    for (size_t g = 0; g < G; g++) {
        for (size_t i = 0; i < M; i++) rn[g * M + i] = vti_norm32(K, d.A + g * M * K + i * d.a_si, d.a_sk);
        for (size_t j = 0; j < N; j++) cn[g * N + j] = vti_norm32(K, d.B + g * K * N + j * d.b_sj, d.b_sk);
    }
    d.rn = rn, d.cn = cn;
    double k = d.record ? VT_UNSTABLE_K : 1.0;
    uint64_t nf = 0;
    for (size_t e = 0; e < n; e++)
        if (!vti_screen1(x[e] + 0.0, vti_bmm_bound(&d, e), k, VT_SLOP_RECORD, &out[e])) idx[nf++] = e;
    err = decide_finish(c, op_id, G * M, N, nf, idx, bmm_elem_at, &d, x, out);
done:
    free(rn);
    free(cn);
    free(idx);
    return err;
}
