/* vt_cert_graph.c - sound IBP and CROWN bounds of a layer graph (docs/certify.md "The residual
 * CNN"). Every linear node is a sparse operator y_j = sum_k A_jk x_(i_k) + c_j + e_j (doubles A, c:
 * exact numbers) with |e_j| <= E_j, a bound computed per box from the interval magnitudes that covers
 * both the real network's deviation from the stored coefficients (batch norm's scale) and the
 * deployed network's RN32 of each rounded operation. Dot products carry the error term of
 * docs/certify.md "Soundness" item 2; every scalar is rounded outward. */
#include "vt_cert_graph.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../common/vt_cli.h"
#include "vt_cert.h"
#include "vt_cert_int.h"

enum { N_INPUT, N_LIN, N_ADD, N_RELU, N_MAXPOOL };

typedef struct {
    int kind;
    uint32_t a, b, n;
    /* N_LIN: rows = outputs (rp, ci, v), the transpose (trp, tci, tv); N_MAXPOOL: the windows (rp, ci).
     * Held: the rows [rlo, rhi) and the transposed rows (inputs) [tlo, thi), rp and trp rebased to
     * them (rp[j - rlo]); under TP this rank's parts, otherwise (and for max pooling) all of them */
    uint32_t *rp, *ci, *trp, *tci;
    uint32_t rlo, rhi, tlo, thi;
    double *v, *tv, *c;
    double *ea, *eb; /* batch norm: E_j += ea_j max|x_j| + eb_j */
    double *bk;      /* batch norm: K1_j, K0_j (2 a value): every intermediate of its FP32 chains is at most
                        K1_j max|x_j| + K0_j (the FP32 widening's overflow check) */
    double rel, abs_; /* E_j += rel max|y_j| + abs_ (the project's semantics) */
    double coef_rel;  /* E_j += coef_rel max|y_j| in every semantics: a coefficient not exactly 1/k (ONNX average pools) */
    int bn;           /* batch norm (ea, eb): the FP32 chain's terms when the semantics is VT_CERT_GRAPH_FP32_ANY */
    double *l, *u, *E, *x64, *g64, *lam, *errx;
    double *al; /* N_RELU: the lower slopes of the current backward pass (alpha-CROWN; CROWN's 0 / 1) */
    /* a sparse backward pass (CROWN's intermediate bounds in one process): the values whose
     * coefficient or error term a pass touched (tl, nt of them; tm marks them) */
    uint32_t *tl, nt;
    uint8_t *tm;
    /* FSDP (N_LIN): this rank's part of the rows' bytes (v then ci: 12 bytes an entry; t = 0) and of
     * the transpose's (tv then tci; t = 1); v, ci (tv, tci) point into the graph's gathered buffer
     * while the node holds it, else NULL */
    uint8_t *part[2];
} gnode;

struct vt_cert_graph {
    uint32_t n_nodes;
    int sem; /* vt_cert_graph_sem */
    uint32_t n_relu; /* the ReLU values of all ReLU nodes */
    /* alpha-CROWN: its settings, the unstable ReLU values (node, index) of the last bounds' box, the
     * slopes searched (cur, best, grad: n_unst each) and the best slopes of every row (out) */
    vt_cert_settings as;
    uint32_t n_unst, *un_node, *un_idx;
    double *acur, *abest, *agrad, *aout, *row;
    size_t aout_cap;
    const double *given; /* vt_cert_graph_given_slopes: the next bounds' slopes (no search), or NULL */
    uint32_t given_u;    /* their number per row */
    double *work; /* the output's values (spec rows' IBP bound) */
    double *cib;  /* CROWN-IBP's bound of each row (CROWN's intermediate bounds: the bound keeps the larger) */
    size_t cib_cap;
    int inter_ibp; /* vt_cert_graph_set_intermediate: 1 the intermediate bounds by IBP alone (CROWN-IBP) */
    double deadline; /* vt_cert_graph_set_deadline: vt_cert_graph_bounds' and the attack's (0: none) */
    int timed_out;   /* the deadline passed (sticky until it is set again) */
    int sparse;    /* the backward pass visits the touched values only (tl), rows by their inputs (smark) */
    uint32_t *cand, *smark, stamp, smark_n; /* a sparse linear node's inputs to sum (smark[i] == stamp: listed) */
    double *bw;   /* a backward pass's sums and error terms of one node's inputs (2 a value) */
    /* sharded over ranks (docs/certify.md "Sharded over ranks"), TP: each linear node's rows and
     * transposed rows held and computed in contiguous parts, the results gathered unchanged */
    vt_comm *comm;         /* NULL: one process */
    int rank, size;
    size_t *gbytes;        /* size entries */
    double *gtmp;          /* this rank's part before a gather */
    size_t gtmp_cap;
    int joined;            /* the ranks have agreed once (vti_cert_shard_join) */
    int tp;                /* TP: rows split; otherwise (FSDP) every rank computes every row */
    int fsdp;              /* FSDP: each linear node's entries held 1/N, gathered into fbuf before use */
    uint8_t *fbuf;         /* FSDP: the gathered entries of one node (the largest's size) */
    uint32_t held, held_t; /* FSDP: fbuf holds node held's orientation held_t (0: none) */
    vt_err err;            /* the first failed collective (sticky) */
    gnode nd[VT_CERT_GRAPH_MAX_NODES];
};

static const double U53 = 0x1p-53;

static double UP(double v) { return nextafter(v, INFINITY); }
static double DN(double v) { return nextafter(v, -INFINITY); }
static double amax(double a, double b) { return fabs(a) > fabs(b) ? fabs(a) : fabs(b); }

/* the error bound of a dot product of n terms whose computed absolute sum is A (docs/certify.md item 2) */
static double dot_err(uint32_t n, double A)
{
    double C = UP(UP((double)n + 2) * U53 * (1 + 0x1p-20));
    return UP(UP(C * A) + (double)(n + 1) * 0x1p-1074);
}

/* ---------------------------------------------------------------- building */

vt_err vt_cert_graph_new(uint32_t d, vt_cert_graph **out)
{
    VT_RETURN_ERROR_IF(d < 1 || d > VT_CERT_MAX_WIDTH * 4u, VT_ERR_LIMIT, "certify: input of %u values", d);
    vt_cert_shard mode;
    vt_comm *comm = vti_cert_shard_comm(&mode);
    vt_cert_graph *g = calloc(1, sizeof *g);
    VT_RETURN_ERROR_IF(!g, VT_ERR_NOMEM, "out of memory");
    g->size = 1;
    if (comm) {
        g->comm = comm, g->rank = vt_dist_rank(comm), g->size = vt_dist_size(comm);
        g->tp = mode == VT_CERT_SHARD_TP, g->fsdp = mode == VT_CERT_SHARD_FSDP;
        if (!(g->gbytes = calloc((size_t)g->size, sizeof *g->gbytes))) {
            free(g);
            return vt_set_error(VT_ERR_NOMEM, "out of memory");
        }
    }
    g->n_nodes = 1;
    g->nd[0].kind = N_INPUT, g->nd[0].n = d, g->nd[0].rhi = d;
    vt_cert_settings_default(&g->as, VT_CERT_ALPHA_CROWN);
    *out = g;
    return VT_OK;
}

static void node_free(gnode *q)
{
    free(q->part[0]), free(q->part[1]);
    free(q->rp), free(q->ci), free(q->trp), free(q->tci), free(q->v), free(q->tv), free(q->c), free(q->ea), free(q->eb), free(q->bk);
    free(q->l), free(q->u), free(q->E), free(q->x64), free(q->g64), free(q->lam), free(q->errx), free(q->al);
    free(q->tl), free(q->tm);
}

void vt_cert_graph_free(vt_cert_graph *g)
{
    if (!g) return;
    if (g->held) { /* its rows point into fbuf */
        gnode *h = &g->nd[g->held];
        h->v = h->tv = NULL, h->ci = h->tci = NULL;
    }
    for (uint32_t i = 0; i < g->n_nodes; i++) node_free(&g->nd[i]);
    if (g->n_nodes < VT_CERT_GRAPH_MAX_NODES) node_free(&g->nd[g->n_nodes]); /* one that failed to build */
    free(g->fbuf);
    free(g->un_node), free(g->un_idx), free(g->acur), free(g->abest), free(g->agrad), free(g->aout), free(g->row);
    free(g->work), free(g->bw), free(g->gbytes), free(g->gtmp), free(g->cib), free(g->cand), free(g->smark);
    free(g);
}

uint32_t vt_cert_graph_n_nodes(const vt_cert_graph *g) { return g->n_nodes; }
uint32_t vt_cert_graph_size(const vt_cert_graph *g, uint32_t node) { return g->nd[node].n; }

/* a new node of n values reading a (and b); its work arrays */
static vt_err node_add(vt_cert_graph *g, int kind, uint32_t a, uint32_t b, uint32_t n, gnode **q)
{
    VT_RETURN_ERROR_IF(g->n_nodes >= VT_CERT_GRAPH_MAX_NODES, VT_ERR_LIMIT, "certify: more than %u nodes",
                       VT_CERT_GRAPH_MAX_NODES);
    VT_RETURN_ERROR_IF(a >= g->n_nodes || b >= g->n_nodes, VT_ERR_ARG, "certify: a node reads a later node");
    VT_RETURN_ERROR_IF(n < 1 || n > (1u << 26), VT_ERR_LIMIT, "certify: a node of %u values", n);
    gnode *r = &g->nd[g->n_nodes];
    memset(r, 0, sizeof *r);
    r->kind = kind, r->a = a, r->b = b, r->n = n, r->rhi = n;
    *q = r;
    return VT_OK;
}

static vt_err node_alloc(gnode *q)
{
    size_t n = q->n;
    q->l = malloc(n * sizeof *q->l), q->u = malloc(n * sizeof *q->u), q->E = calloc(n, sizeof *q->E);
    q->x64 = malloc(n * sizeof *q->x64), q->g64 = malloc(n * sizeof *q->g64), q->lam = malloc(n * sizeof *q->lam);
    q->errx = malloc(n * sizeof *q->errx);
    VT_RETURN_ERROR_IF(!q->l || !q->u || !q->E || !q->x64 || !q->g64 || !q->lam || !q->errx, VT_ERR_NOMEM,
                       "out of memory");
    return VT_OK;
}

/* The rows [*lo, *hi) of n this rank computes: its part under TP, all of them otherwise. */
static void rows_of(const vt_cert_graph *g, size_t n, uint32_t *lo, uint32_t *hi)
{
    *lo = g->tp ? (uint32_t)vti_cert_part_lo(n, g->rank, g->size) : 0;
    *hi = g->tp ? (uint32_t)vti_cert_part_lo(n, g->rank + 1, g->size) : (uint32_t)n;
}

/* the rows of a linear node: nnz entries at most */
static vt_err rows_alloc(gnode *q, size_t nnz, int vals)
{
    VT_RETURN_ERROR_IF(nnz >= (1u << 31), VT_ERR_LIMIT, "certify: a layer of %zu weights", nnz);
    q->rp = calloc((size_t)q->n + 1, sizeof *q->rp), q->ci = malloc((nnz ? nnz : 1) * sizeof *q->ci);
    if (vals) q->v = malloc((nnz ? nnz : 1) * sizeof *q->v);
    VT_RETURN_ERROR_IF(!q->rp || !q->ci || (vals && !q->v), VT_ERR_NOMEM, "out of memory");
    return VT_OK;
}

/* FSDP: the bytes of node q's entries (12 a value; FSDP holds every row) */
static size_t fsdp_bytes(const gnode *q) { return (size_t)q->rp[q->rhi - q->rlo] * (sizeof(double) + sizeof(uint32_t)); }

/* FSDP: keep this rank's part of both orientations' bytes; free the whole arrays */
static vt_err fsdp_split(vt_cert_graph *g, gnode *q)
{
    size_t nnz = q->rp[q->rhi - q->rlo], tot = fsdp_bytes(q), lo = vti_cert_part_lo(tot, g->rank, g->size),
           hi = vti_cert_part_lo(tot, g->rank + 1, g->size);
    uint8_t *whole = malloc(tot ? tot : 1);
    VT_RETURN_ERROR_IF(!whole, VT_ERR_NOMEM, "out of memory");
    for (int t = 0; t < 2; t++) {
        memcpy(whole, t ? q->tv : q->v, nnz * sizeof(double));
        memcpy(whole + nnz * sizeof(double), t ? q->tci : q->ci, nnz * sizeof(uint32_t));
        q->part[t] = malloc(hi > lo ? hi - lo : 1);
        if (q->part[t]) memcpy(q->part[t], whole + lo, hi - lo);
    }
    free(whole);
    VT_RETURN_ERROR_IF(!q->part[0] || !q->part[1], VT_ERR_NOMEM, "out of memory");
    free(q->v), free(q->ci), free(q->tv), free(q->tci);
    q->v = q->tv = NULL, q->ci = q->tci = NULL;
    return VT_OK;
}

/* FSDP: node id's rows (t = 0: v, ci) or transpose (t = 1: tv, tci) gathered whole into fbuf from
 * every rank's part, the node before it released (one node's entries held at a time); a no-op
 * otherwise or when fbuf holds them already. A failed gather is sticky (g->err). */
static void hold(vt_cert_graph *g, uint32_t id, uint32_t t)
{
    gnode *q = &g->nd[id];
    if (!g->fsdp || q->kind != N_LIN || (g->held == id && g->held_t == t) || g->err) return;
    if (g->held) {
        gnode *h = &g->nd[g->held];
        h->v = h->tv = NULL, h->ci = h->tci = NULL;
    }
    g->held = 0;
    size_t nnz = q->rp[q->rhi - q->rlo], tot = fsdp_bytes(q);
    for (int r = 0; r < g->size; r++)
        g->gbytes[r] = vti_cert_part_lo(tot, r + 1, g->size) - vti_cert_part_lo(tot, r, g->size);
    vt_err e = vt_dist_allgatherv(g->comm, q->part[t], g->gbytes, g->fbuf);
    if (e) {
        g->err = e;
        return;
    }
    double *v = (double *)(void *)g->fbuf;
    uint32_t *ci = (uint32_t *)(void *)(g->fbuf + nnz * sizeof(double));
    if (t) q->tv = v, q->tci = ci;
    else q->v = v, q->ci = ci;
    g->held = id, g->held_t = t;
}

/* A convolution: input Cin x H x W (channels-first when in_chw, else H x W x Cin), kernel kh x kw,
 * strides sh, sw, zero pads top, left, bottom, right; weight element (co, c, ky, kx) at
 * w[((ky kw + kx) Cin + c) Cout + co] (HWIO, the program's) or, when oihw, w[((co Cin + c) kh + ky) kw + kx]
 * (ONNX); the output channels-first when out_chw, else channels-last; bias (Cout values) or NULL.
 * Each row's terms in the order (ky, kx, c). */
typedef struct {
    uint32_t Cin, H, W, kh, kw, sh, sw, pt, pl, pb, pr, Cout;
    int in_chw, out_chw, oihw;
} conv_geom;

/* Where a linear node's rows come from, one row at a time: a convolution (cv, its output Ho x Wo, the
 * weights w), a dense layer (w [ni, n_out] row-major, cv NULL), or whole arrays (rp, ci, v: the small
 * nodes). A row is generated again for each part that needs it, so no rank ever holds the whole node. */
typedef struct {
    const conv_geom *cv;
    uint32_t Ho, Wo, ni, n_out;
    const float *w;
    const uint32_t *rp, *ci;
    const double *v;
} rowsrc;

/* row j's entries (input index, coefficient), in the row's order, into ci and v; their count in *cnt */
static vt_err row_get(const rowsrc *s, uint32_t j, uint32_t *ci, double *v, uint32_t *cnt)
{
    uint32_t t = 0;
    if (s->cv) {
        const conv_geom *c = s->cv;
        uint32_t co = c->out_chw ? j / (s->Ho * s->Wo) : j % c->Cout, pix = c->out_chw ? j % (s->Ho * s->Wo) : j / c->Cout;
        uint32_t oy = pix / s->Wo, ox = pix % s->Wo;
        for (uint32_t ky = 0; ky < c->kh; ky++)
            for (uint32_t kx = 0; kx < c->kw; kx++) {
                int64_t iy = (int64_t)oy * c->sh + ky - c->pt, ix = (int64_t)ox * c->sw + kx - c->pl;
                if (iy < 0 || ix < 0 || iy >= c->H || ix >= c->W) continue;
                for (uint32_t ch = 0; ch < c->Cin; ch++) {
                    float wv = c->oihw ? s->w[(((size_t)co * c->Cin + ch) * c->kh + ky) * c->kw + kx]
                                       : s->w[((size_t)(ky * c->kw + kx) * c->Cin + ch) * c->Cout + co];
                    if (wv == 0) continue;
                    VT_RETURN_ERROR_IF(!isfinite(wv), VT_ERR_UNSUPPORTED, "certify: a weight is not finite");
                    ci[t] = c->in_chw ? (ch * c->H + (uint32_t)iy) * c->W + (uint32_t)ix
                                      : ((uint32_t)iy * c->W + (uint32_t)ix) * c->Cin + ch;
                    v[t++] = wv;
                }
            }
    } else if (s->w) {
        for (uint32_t i = 0; i < s->ni; i++) {
            float wv = s->w[(size_t)i * s->n_out + j];
            VT_RETURN_ERROR_IF(!isfinite(wv), VT_ERR_UNSUPPORTED, "certify: a weight is not finite");
            if (wv != 0) ci[t] = i, v[t++] = wv;
        }
    } else
        for (uint32_t k = s->rp[j]; k < s->rp[j + 1]; k++) ci[t] = s->ci[k], v[t++] = s->v[k];
    *cnt = t;
    return VT_OK;
}

/* The node's rows [rlo, rhi) and transposed rows [tlo, thi) from s (rows of at most maxrow entries):
 * under TP this rank's parts, otherwise all of them. The transpose lists each input's entries in
 * increasing output order (every row is generated, only this rank's inputs kept). */
static vt_err store(vt_cert_graph *g, gnode *q, const rowsrc *s, uint32_t maxrow)
{
    uint32_t n_in = g->nd[q->a].n, cnt = 0, nr, nt;
    rows_of(g, q->n, &q->rlo, &q->rhi), rows_of(g, n_in, &q->tlo, &q->thi);
    nr = q->rhi - q->rlo, nt = q->thi - q->tlo;
    uint32_t *rci = malloc((maxrow ? maxrow : 1) * sizeof *rci), *pos = NULL;
    double *rv = malloc((maxrow ? maxrow : 1) * sizeof *rv);
    vt_err e = !rci || !rv ? vt_set_error(VT_ERR_NOMEM, "out of memory") : VT_OK;
    size_t nnz = 0, tnnz = 0;
    for (uint32_t j = q->rlo; j < q->rhi && !e; j++) /* the rows: count, then fill */
        if (!(e = row_get(s, j, rci, rv, &cnt))) nnz += cnt;
    if (!e && nnz >= (1u << 31)) e = vt_set_error(VT_ERR_LIMIT, "certify: a layer of %zu weights", nnz);
    if (!e) {
        q->rp = calloc((size_t)nr + 1, sizeof *q->rp), q->ci = malloc((nnz ? nnz : 1) * sizeof *q->ci);
        q->v = malloc((nnz ? nnz : 1) * sizeof *q->v);
        q->trp = calloc((size_t)nt + 1, sizeof *q->trp);
        if (!q->rp || !q->ci || !q->v || !q->trp) e = vt_set_error(VT_ERR_NOMEM, "out of memory");
    }
    for (uint32_t j = q->rlo; j < q->rhi && !e; j++)
        if (!(e = row_get(s, j, q->ci + q->rp[j - q->rlo], q->v + q->rp[j - q->rlo], &cnt)))
            q->rp[j - q->rlo + 1] = q->rp[j - q->rlo] + cnt;
    for (uint32_t j = 0; j < q->n && !e; j++) /* the transpose: count, then fill */
        if (!(e = row_get(s, j, rci, rv, &cnt)))
            for (uint32_t k = 0; k < cnt; k++)
                if (rci[k] >= q->tlo && rci[k] < q->thi) q->trp[rci[k] - q->tlo + 1]++, tnnz++;
    if (!e) {
        for (uint32_t i = 0; i < nt; i++) q->trp[i + 1] += q->trp[i];
        q->tci = malloc((tnnz ? tnnz : 1) * sizeof *q->tci), q->tv = malloc((tnnz ? tnnz : 1) * sizeof *q->tv);
        pos = malloc(((size_t)nt + 1) * sizeof *pos);
        if (!q->tci || !q->tv || !pos) e = vt_set_error(VT_ERR_NOMEM, "out of memory");
        else memcpy(pos, q->trp, ((size_t)nt + 1) * sizeof *pos);
    }
    for (uint32_t j = 0; j < q->n && !e; j++)
        if (!(e = row_get(s, j, rci, rv, &cnt)))
            for (uint32_t k = 0; k < cnt; k++)
                if (rci[k] >= q->tlo && rci[k] < q->thi) {
                    uint32_t t = pos[rci[k] - q->tlo]++;
                    q->tci[t] = j, q->tv[t] = rv[k];
                }
    free(rci), free(rv), free(pos);
    return e;
}

/* A linear node's rows from s stored (this rank's parts), its work arrays; the node appended. */
static vt_err finish_src(vt_cert_graph *g, gnode *q, const rowsrc *s, uint32_t maxrow, int rounded, uint32_t *id)
{
    q->rel = rounded ? 0x1p-24 : 0, q->abs_ = rounded ? 0x1p-149 : 0;
    VT_FORWARD_IF_ERROR(store(g, q, s, maxrow));
    if (g->fsdp) VT_FORWARD_IF_ERROR(fsdp_split(g, q));
    VT_FORWARD_IF_ERROR(node_alloc(q));
    *id = g->n_nodes++;
    return VT_OK;
}

/* As finish_src from the whole rows the builder wrote into q (rp, ci, v), which it frees. */
static vt_err finish_lin(vt_cert_graph *g, gnode *q, int rounded, uint32_t *id)
{
    rowsrc s = {.rp = q->rp, .ci = q->ci, .v = q->v};
    uint32_t mx = 0;
    for (uint32_t j = 0; j < q->n; j++)
        if (q->rp[j + 1] - q->rp[j] > mx) mx = q->rp[j + 1] - q->rp[j];
    q->rp = NULL, q->ci = NULL, q->v = NULL;
    vt_err e = finish_src(g, q, &s, mx, rounded, id);
    free((void *)s.rp), free((void *)s.ci), free((void *)s.v);
    return e;
}

static vt_err conv_build(vt_cert_graph *g, uint32_t in, const conv_geom *c, const float *w, const float *bias, int rounded,
                         uint32_t *id)
{
    VT_RETURN_ERROR_IF(c->kh < 1 || c->kw < 1 || c->sh < 1 || c->sw < 1 || c->pt >= c->kh || c->pb >= c->kh ||
                           c->pl >= c->kw || c->pr >= c->kw || c->H + c->pt + c->pb < c->kh ||
                           c->W + c->pl + c->pr < c->kw || c->Cin < 1 || c->Cout < 1 || c->H > 4096 || c->W > 4096 ||
                           c->Cin > 65536 || c->Cout > 65536,
                       VT_ERR_ARG, "certify: bad convolution geometry");
    VT_RETURN_ERROR_IF(in >= g->n_nodes || (uint64_t)g->nd[in].n != (uint64_t)c->H * c->W * c->Cin, VT_ERR_ARG,
                       "certify: a convolution's input size");
    uint32_t Ho = (c->H + c->pt + c->pb - c->kh) / c->sh + 1, Wo = (c->W + c->pl + c->pr - c->kw) / c->sw + 1;
    VT_RETURN_ERROR_IF((uint64_t)Ho * Wo * c->Cout > (1u << 26), VT_ERR_LIMIT, "certify: a convolution of %llu outputs",
                       (unsigned long long)Ho * Wo * c->Cout);
    VT_RETURN_ERROR_IF((uint64_t)c->kh * c->kw * c->Cin >= (1u << 31), VT_ERR_LIMIT, "certify: a convolution's rows");
    gnode *q = NULL; /* set by node_add (gcc -O2 cannot see it through the error path) */
    VT_FORWARD_IF_ERROR(node_add(g, N_LIN, in, in, Ho * Wo * c->Cout, &q));
    if (bias) {
        q->c = malloc((size_t)q->n * sizeof *q->c);
        VT_RETURN_ERROR_IF(!q->c, VT_ERR_NOMEM, "out of memory");
        for (uint32_t j = 0; j < q->n; j++) {
            uint32_t co = c->out_chw ? j / (Ho * Wo) : j % c->Cout;
            VT_RETURN_ERROR_IF(!isfinite(bias[co]), VT_ERR_UNSUPPORTED, "certify: a bias is not finite");
            q->c[j] = bias[co];
        }
    }
    rowsrc s = {.cv = c, .Ho = Ho, .Wo = Wo, .w = w};
    return finish_src(g, q, &s, c->kh * c->kw * c->Cin, rounded, id);
}

vt_err vt_cert_graph_conv(vt_cert_graph *g, uint32_t in, uint32_t H, uint32_t W, uint32_t Cin, uint32_t k, uint32_t s,
                          uint32_t p, int chw, uint32_t Cout, const float *w, int rounded, uint32_t *id)
{
    conv_geom c = {Cin, H, W, k, k, s, s, p, p, p, p, Cout, chw, 0, 0};
    return conv_build(g, in, &c, w, NULL, rounded, id);
}

vt_err vt_cert_graph_conv2d(vt_cert_graph *g, uint32_t in, uint32_t Cin, uint32_t H, uint32_t W, uint32_t Cout, uint32_t kh,
                            uint32_t kw, uint32_t sh, uint32_t sw, const uint32_t pads[4], const float *w, const float *bias,
                            uint32_t *id)
{
    conv_geom c = {Cin, H, W, kh, kw, sh, sw, pads[0], pads[1], pads[2], pads[3], Cout, 1, 1, 1};
    return conv_build(g, in, &c, w, bias, 0, id);
}

static vt_err dense_build(vt_cert_graph *g, uint32_t in, uint32_t n_out, const float *w, const float *bias, int rounded,
                          uint32_t *id)
{
    VT_RETURN_ERROR_IF(in >= g->n_nodes, VT_ERR_ARG, "certify: a dense layer's input");
    uint32_t ni = g->nd[in].n;
    gnode *q = NULL; /* set by node_add (gcc -O2 cannot see it through the error path) */
    VT_FORWARD_IF_ERROR(node_add(g, N_LIN, in, in, n_out, &q));
    VT_RETURN_ERROR_IF((uint64_t)ni * n_out >= (1u << 31), VT_ERR_LIMIT, "certify: a layer of %llu weights",
                       (unsigned long long)ni * n_out);
    if (bias) {
        q->c = malloc((size_t)n_out * sizeof *q->c);
        VT_RETURN_ERROR_IF(!q->c, VT_ERR_NOMEM, "out of memory");
        for (uint32_t j = 0; j < n_out; j++) {
            VT_RETURN_ERROR_IF(!isfinite(bias[j]), VT_ERR_UNSUPPORTED, "certify: a bias is not finite");
            q->c[j] = bias[j];
        }
    }
    rowsrc s = {.ni = ni, .n_out = n_out, .w = w};
    return finish_src(g, q, &s, ni, rounded, id);
}

vt_err vt_cert_graph_dense(vt_cert_graph *g, uint32_t in, uint32_t n_out, const float *w, int rounded, uint32_t *id)
{
    return dense_build(g, in, n_out, w, NULL, rounded, id);
}

vt_err vt_cert_graph_linear(vt_cert_graph *g, uint32_t in, uint32_t n_out, const float *w, const float *bias, uint32_t *id)
{
    return dense_build(g, in, n_out, w, bias, 0, id);
}

/* a diagonal node y_j = v_j x_j + c_j (c allocated, filled by the caller) */
static vt_err diag_node(vt_cert_graph *g, uint32_t in, gnode **out)
{
    VT_RETURN_ERROR_IF(in >= g->n_nodes, VT_ERR_ARG, "certify: a node's input");
    gnode *q = NULL; /* set by node_add (gcc -O2 cannot see it through the error path) */
    VT_FORWARD_IF_ERROR(node_add(g, N_LIN, in, in, g->nd[in].n, &q));
    VT_FORWARD_IF_ERROR(rows_alloc(q, q->n, 1));
    q->c = malloc((size_t)q->n * sizeof *q->c);
    VT_RETURN_ERROR_IF(!q->c, VT_ERR_NOMEM, "out of memory");
    for (uint32_t j = 0; j < q->n; j++) q->ci[j] = j, q->v[j] = 1, q->rp[j + 1] = j + 1;
    *out = q;
    return VT_OK;
}

vt_err vt_cert_graph_bias(vt_cert_graph *g, uint32_t in, const float *b, uint32_t *id)
{
    gnode *q = NULL; /* set by node_add (gcc -O2 cannot see it through the error path) */
    VT_FORWARD_IF_ERROR(diag_node(g, in, &q));
    for (uint32_t j = 0; j < q->n; j++) {
        VT_RETURN_ERROR_IF(!isfinite(b[j]), VT_ERR_UNSUPPORTED, "certify: a bias is not finite");
        q->c[j] = b[j];
    }
    return finish_lin(g, q, 1, id);
}

/* Batch norm: s0 = fl(gamma / fl(sqrt(fl(rv + eps)))), c0 = fl(beta - fl(s0 rm)), within a relative
 * 4u of s = gamma / sqrt(rv + eps) and of beta - s0 rm; the real y = s x + beta - s rm differs from
 * s0 x + c0 by at most 2^-48 (|s0| (|x| + |rm|) + |c0| + |beta|) (generously); the deployed value is
 * RN32 of the FP64 chain gamma ((x - rm) / d) + beta (six correctly rounded FP64 operations, each
 * within u of its exact result, no FP64 underflow above 2^-1022 but one absolute 2^-1060 allowed):
 * within 2^-50 (|s0| (|x| + |rm|) + |y|) + 2^-1060 of the real value, then 2^-24 |y| + 2^-149. */
static vt_err bn_build(vt_cert_graph *g, uint32_t in, uint32_t C, uint32_t HW, const float *rm, const float *rv,
                       const float *gamma, const float *beta, double eps, uint32_t *id)
{
    VT_RETURN_ERROR_IF(C < 1 || in >= g->n_nodes || g->nd[in].n % C || (HW && g->nd[in].n != C * HW), VT_ERR_ARG,
                       "certify: batch norm of %u channels", C);
    gnode *q = NULL; /* set by node_add (gcc -O2 cannot see it through the error path) */
    VT_FORWARD_IF_ERROR(diag_node(g, in, &q));
    q->ea = malloc((size_t)q->n * sizeof *q->ea), q->eb = malloc((size_t)q->n * sizeof *q->eb);
    q->bk = malloc(2 * (size_t)q->n * sizeof *q->bk);
    VT_RETURN_ERROR_IF(!q->ea || !q->eb || !q->bk, VT_ERR_NOMEM, "out of memory");
    for (uint32_t j = 0; j < q->n; j++) {
        uint32_t c = HW ? j / HW : j % C;
        double v = (double)rv[c] + eps;
        VT_RETURN_ERROR_IF(!(v > 0x1p-900) || !isfinite(v) || !isfinite(rm[c]) || !isfinite(gamma[c]) ||
                               !isfinite(beta[c]),
                           VT_ERR_UNSUPPORTED, "certify: a batch norm statistic is not finite or its variance not positive");
        double s0 = (double)gamma[c] / sqrt(v), c0 = (double)beta[c] - s0 * (double)rm[c];
        VT_RETURN_ERROR_IF(!isfinite(s0) || !isfinite(c0), VT_ERR_UNSUPPORTED, "certify: a batch norm scale is not finite");
        q->v[j] = s0, q->c[j] = c0;
        q->ea[j] = UP(0x1p-48 * fabs(s0) + 0x1p-50 * fabs(s0));
        q->eb[j] = UP(UP(UP(0x1p-47 * fabs(s0) * fabs((double)rm[c])) + 0x1p-48 * (fabs(c0) + fabs((double)beta[c]))) +
                      0x1p-1059);
        /* an FP32 chain's sqrt(rv + eps) is at least sqrt of rv + eps less 2^-22 of it and a flushed 2^-126
         * (0 or less: an infinity possible), so (x - rm) / sqrt, its product by gamma, gamma / sqrt, x s',
         * rm s' and beta - rm s' are at most K1 (max|x| + |rm|) + |beta|, K1 = (1 + |gamma|) / sqrt 2^20 / (2^20 - 1) */
        double vf = DN(DN(v * (1 - 0x1p-22)) - 0x1p-126);
        double isq = vf > 0 ? UP(1 / DN(DN(sqrt(vf)) * (1 - 0x1p-22))) : INFINITY;
        double K1 = UP(UP(1 + fabs((double)gamma[c])) * UP(isq * (1 + 0x1p-20)));
        q->bk[2 * (size_t)j] = K1, q->bk[2 * (size_t)j + 1] = UP(UP(UP(fabs((double)rm[c]) + 1) * K1) + fabs((double)beta[c]));
    }
    q->bn = 1;
    VT_FORWARD_IF_ERROR(finish_lin(g, q, 1, id));
    q->rel = 0x1p-24 + 0x1p-49;
    return VT_OK;
}

vt_err vt_cert_graph_bn(vt_cert_graph *g, uint32_t in, uint32_t C, const float *rm, const float *rv,
                        const float *gamma, const float *beta, double eps, uint32_t *id)
{
    return bn_build(g, in, C, 0, rm, rv, gamma, beta, eps, id);
}

vt_err vt_cert_graph_bn_chw(vt_cert_graph *g, uint32_t in, uint32_t C, uint32_t HW, const float *rm, const float *rv,
                            const float *gamma, const float *beta, double eps, uint32_t *id)
{
    VT_RETURN_ERROR_IF(HW < 1, VT_ERR_ARG, "certify: batch norm of an empty image");
    return bn_build(g, in, C, HW, rm, rv, gamma, beta, eps, id);
}

vt_err vt_cert_graph_avgpool(vt_cert_graph *g, uint32_t in, uint32_t HW, uint32_t C, float w, uint32_t *id)
{
    VT_RETURN_ERROR_IF(HW < 1 || C < 1 || in >= g->n_nodes || g->nd[in].n != HW * C || !isfinite(w), VT_ERR_ARG,
                       "certify: average pooling of %u x %u", HW, C);
    gnode *q = NULL; /* set by node_add (gcc -O2 cannot see it through the error path) */
    VT_FORWARD_IF_ERROR(node_add(g, N_LIN, in, in, C, &q));
    VT_FORWARD_IF_ERROR(rows_alloc(q, (size_t)HW * C, 1));
    uint32_t t = 0;
    for (uint32_t c = 0; c < C; c++) {
        for (uint32_t p = 0; p < HW; p++) q->ci[t] = p * C + c, q->v[t++] = w;
        q->rp[c + 1] = t;
    }
    return finish_lin(g, q, 1, id);
}

/* the windows kh x kw, strides kh, kw, of C x H x W (channels-first when chw, else H x W x C) into q's
 * rows (the output in the input's layout), row-major window order: the first maximum wins */
static void windows(gnode *q, uint32_t C, uint32_t H, uint32_t W, uint32_t kh, uint32_t kw, int chw)
{
    uint32_t t = 0, Wo = W / kw, Ho = H / kh;
    for (uint32_t j = 0; j < q->n; j++) {
        uint32_t c = chw ? j / (Ho * Wo) : j % C, pix = chw ? j % (Ho * Wo) : j / C, ox = pix % Wo, oy = pix / Wo;
        for (uint32_t dy = 0; dy < kh; dy++)
            for (uint32_t dx = 0; dx < kw; dx++) {
                uint32_t iy = oy * kh + dy, ix = ox * kw + dx;
                q->ci[t] = chw ? (c * H + iy) * W + ix : (iy * W + ix) * C + c;
                if (q->v) q->v[t] = 1.0 / ((double)kh * kw);
                t++;
            }
        q->rp[j + 1] = t;
    }
}

static vt_err pool_build(vt_cert_graph *g, uint32_t in, uint32_t C, uint32_t H, uint32_t W, uint32_t kh, uint32_t kw,
                         int chw, int max, uint32_t *id)
{
    VT_RETURN_ERROR_IF(kh < 1 || kw < 1 || H % kh || W % kw || C < 1 || in >= g->n_nodes ||
                           (uint64_t)g->nd[in].n != (uint64_t)H * W * C,
                       VT_ERR_ARG, "certify: bad pooling arguments");
    gnode *q = NULL; /* set by node_add (gcc -O2 cannot see it through the error path) */
    VT_FORWARD_IF_ERROR(node_add(g, max ? N_MAXPOOL : N_LIN, in, in, (H / kh) * (W / kw) * C, &q));
    VT_FORWARD_IF_ERROR(rows_alloc(q, (size_t)q->n * kh * kw, !max));
    windows(q, C, H, W, kh, kw, chw);
    if (!max) { /* 1/(kh kw) in FP64: exact for a power of two, else within 2^-53 relative */
        int ex;
        q->coef_rel = frexp((double)kh * kw, &ex) == 0.5 ? 0 : 0x1p-52;
        return finish_lin(g, q, 0, id);
    }
    VT_FORWARD_IF_ERROR(node_alloc(q));
    *id = g->n_nodes++;
    return VT_OK;
}

vt_err vt_cert_graph_maxpool(vt_cert_graph *g, uint32_t in, uint32_t H, uint32_t W, uint32_t C, uint32_t k, uint32_t *id)
{
    return pool_build(g, in, C, H, W, k, k, 0, 1, id);
}

vt_err vt_cert_graph_pool_chw(vt_cert_graph *g, uint32_t in, uint32_t C, uint32_t H, uint32_t W, uint32_t kh, uint32_t kw,
                              int max, uint32_t *id)
{
    return pool_build(g, in, C, H, W, kh, kw, 1, max, id);
}

void vt_cert_graph_set_sem(vt_cert_graph *g, vt_cert_graph_sem sem) { g->sem = (int)sem; }

vt_err vt_cert_graph_relu(vt_cert_graph *g, uint32_t in, uint32_t *id)
{
    VT_RETURN_ERROR_IF(in >= g->n_nodes, VT_ERR_ARG, "certify: a ReLU's input");
    gnode *q = NULL; /* set by node_add (gcc -O2 cannot see it through the error path) */
    VT_FORWARD_IF_ERROR(node_add(g, N_RELU, in, in, g->nd[in].n, &q));
    VT_FORWARD_IF_ERROR(node_alloc(q));
    VT_RETURN_ERROR_IF(!(q->al = calloc(q->n, sizeof *q->al)), VT_ERR_NOMEM, "out of memory");
    VT_RETURN_ERROR_IF(g->n_relu > UINT32_MAX - q->n, VT_ERR_LIMIT, "certify: too many ReLU values");
    g->n_relu += q->n;
    *id = g->n_nodes++;
    return VT_OK;
}

vt_err vt_cert_graph_add(vt_cert_graph *g, uint32_t a, uint32_t b, uint32_t *id)
{
    VT_RETURN_ERROR_IF(a >= g->n_nodes || b >= g->n_nodes || g->nd[a].n != g->nd[b].n, VT_ERR_ARG,
                       "certify: a residual add of different sizes");
    gnode *q = NULL; /* set by node_add (gcc -O2 cannot see it through the error path) */
    VT_FORWARD_IF_ERROR(node_add(g, N_ADD, a, b, g->nd[a].n, &q));
    VT_FORWARD_IF_ERROR(node_alloc(q));
    q->rel = 0x1p-24, q->abs_ = 0x1p-149;
    *id = g->n_nodes++;
    return VT_OK;
}

/* ---------------------------------------------------------------- IBP */

/* E_j for a value whose error-free interval is [fl, fu]: E0 + rel |y| with |y| <= max(|fl|, |fu|) + E;
 * rel and abs_ the node's own (the project's semantics), none (the real network), or one FP32
 * rounding of the result (2^-24 |y|, 2^-125: a subnormal result flushed or rounded) for any FP32
 * evaluation; coef_rel in every semantics */
static double err_of(const vt_cert_graph *g, const gnode *q, double E0, double fl, double fu)
{
    double M = amax(fl, fu);
    double rel = g->sem == VT_CERT_GRAPH_PROJECT ? q->rel : g->sem == VT_CERT_GRAPH_FP32_ANY ? 0x1p-24 : 0;
    double ab = g->sem == VT_CERT_GRAPH_PROJECT ? q->abs_ : g->sem == VT_CERT_GRAPH_FP32_ANY ? 0x1p-125 : 0;
    rel = UP(rel + q->coef_rel);
    return UP(UP(E0 + UP(rel * M) + ab) * (1 + 4 * rel));
}

/* gamma_m = m 2^-24 / (1 - m 2^-24), rounded upward (FP32's accumulated rounding of m operations) */
static double gamma32(uint32_t m)
{
    double mu = (double)m * 0x1p-24;
    return UP(mu / DN(1 - mu));
}

/* Any FP32 evaluation of a linear node's output j (docs/certify.md "Convolutional networks from ONNX"),
 * beyond the final rounding (err_of): a dot product of n terms and the constant c_j, in any order,
 * with or without FMA, the constant inside the sum: |t - (z + c)| <= gamma_(n+1) (S + |c|) + (n + 2) 2^-125
 * with S >= sum |A_jk| max|x| (sa the FP64 sum of the products' largest magnitudes, rounded upward
 * by the dot-product lemma); batch norm as any of its FP32 chains ((x - m) / sqrt(v + eps) * gamma + beta,
 * or x s' + b' with s', b' computed in FP32): 2^-20 (|s| (|x| + |m|) + |beta|) + 2^-122 (1 + |s|), |x| <= mx
 * (at most about 5 FP32 roundings of those magnitudes, 16 allowed). k0: the row's first entry. */
static double fp32_any_err(const gnode *q, uint32_t j, uint32_t k0, uint32_t n, double sa, double mx)
{
    if (q->bn) {
        /* eb 2^48 >= 2 |s0 m| + |c0| + |beta| >= |s| |m| + |beta|; a flushed intermediate 2^-126 (1 + |s|) each */
        double s0 = fabs(q->v[k0]);
        if (!(UP(UP(mx * q->bk[2 * (size_t)j]) + q->bk[2 * (size_t)j + 1]) <= FLT_MAX)) return INFINITY; /* may overflow */
        return UP(UP(0x1p-20 * UP(UP(s0 * mx) + UP(q->eb[j] * 0x1p48))) + UP(0x1p-122 * UP(1 + s0)));
    }
    double S = UP(sa + dot_err(n, sa));
    if (q->c) S = UP(S + fabs(q->c[j]));
    double e = UP(UP(gamma32(n + 1) * S) + (double)(n + 2) * 0x1p-125);
    /* every partial sum and product of any order lies within S + e: beyond FLT_MAX one may be an infinity */
    return UP(S + e) <= FLT_MAX ? e : INFINITY;
}

/* the node's rows [rlo, rhi) (a linear node's held rows; every value of the others); keep: intersected
 * with the node's present interval (both sound), E_j the new one's (sound: from sound magnitudes) */
static void ibp_node(vt_cert_graph *g, gnode *q, int keep)
{
    const gnode *A = &g->nd[q->a], *B = &g->nd[q->b];
    for (uint32_t j = q->rlo; j < q->rhi; j++) {
        double lo, hi, E = 0;
        uint32_t k0 = q->rp ? q->rp[j - q->rlo] : 0, k1 = q->rp ? q->rp[j - q->rlo + 1] : 0;
        if (q->kind == N_LIN) {
            double sl = 0, al = 0, su = 0, au = 0, sa = 0;
            for (uint32_t k = k0; k < k1; k++) {
                double w = q->v[k], tl = w * (w > 0 ? A->l[q->ci[k]] : A->u[q->ci[k]]),
                       tu = w * (w > 0 ? A->u[q->ci[k]] : A->l[q->ci[k]]);
                sl += tl, al += fabs(tl), su += tu, au += fabs(tu);
                if (g->sem == VT_CERT_GRAPH_FP32_ANY) sa += fabs(tl) > fabs(tu) ? fabs(tl) : fabs(tu);
            }
            uint32_t n = k1 - k0;
            lo = n == 1 && q->v[k0] == 1 ? sl : DN(sl - dot_err(n, al)); /* one product by 1: exact */
            hi = n == 1 && q->v[k0] == 1 ? su : UP(su + dot_err(n, au));
            if (q->c) lo = DN(lo + q->c[j]), hi = UP(hi + q->c[j]);
            double E0 = 0;
            if (q->ea) {
                uint32_t i = q->ci[k0];
                E0 = UP(UP(q->ea[j] * amax(A->l[i], A->u[i])) + q->eb[j]);
            }
            if (g->sem == VT_CERT_GRAPH_FP32_ANY) {
                double mx = q->bn ? amax(A->l[q->ci[k0]], A->u[q->ci[k0]]) : 0;
                E0 = UP(E0 + fp32_any_err(q, j, k0, n, sa, mx));
            }
            E = err_of(g, q, E0, lo, hi);
        } else if (q->kind == N_ADD) {
            lo = DN(A->l[j] + B->l[j]), hi = UP(A->u[j] + B->u[j]);
            E = err_of(g, q, 0, lo, hi);
        } else if (q->kind == N_RELU) {
            lo = A->l[j] > 0 ? A->l[j] : 0, hi = A->u[j] > 0 ? A->u[j] : 0;
        } else { /* max pooling: monotone, exact */
            lo = -INFINITY, hi = -INFINITY;
            for (uint32_t k = k0; k < k1; k++) {
                if (A->l[q->ci[k]] > lo) lo = A->l[q->ci[k]];
                if (A->u[q->ci[k]] > hi) hi = A->u[q->ci[k]];
            }
        }
        q->E[j] = E;
        double nl = E ? DN(lo - E) : lo, nu = E ? UP(hi + E) : hi;
        if (!(nl >= -DBL_MAX) || !(nu <= DBL_MAX)) nl = -INFINITY, nu = INFINITY;
        /* the deployed network (its RN32s) and any FP32 evaluation: a value past FLT_MAX may be an
         * infinity, which no relative error term bounds (and so may every value after it) */
        if (g->sem != VT_CERT_GRAPH_REAL && !(nl >= -FLT_MAX && nu <= FLT_MAX))
            nl = -INFINITY, nu = INFINITY, q->E[j] = INFINITY; /* E too: a backward pass charging it gives -inf */
        if (keep && q->l[j] > nl) nl = q->l[j];
        if (keep && q->u[j] < nu) nu = q->u[j];
        q->l[j] = nl, q->u[j] = nu;
    }
}

/* TP: v[0 .. n w) := every rank's rows of n (w values each), copied unchanged; nothing in one process */
static void share(vt_cert_graph *g, double *v, size_t n, size_t w)
{
    if (!g->tp || g->err) return;
    vt_err e = vti_cert_share_rows(g->comm, v, n, w, g->gtmp, g->gbytes);
    if (e) g->err = e;
}

/* Every buffer the bounds of `rows` backward rows need (the input's work arrays, alpha-CROWN's,
 * the gather's), allocated before the first collective; sharded, the ranks agree on the outcome
 * whenever one allocated (the sizes are the same on every rank, so all of them do): a rank out of
 * memory stops every rank with its error. */
static vt_err prepare(vt_cert_graph *g, uint32_t rows, uint32_t nrows)
{
    gnode *in = &g->nd[0], *o = &g->nd[g->n_nodes - 1];
    int grew = 0, bad = 0;
    if (!in->l) {
        grew = 1;
        in->l = malloc(in->n * sizeof *in->l), in->u = malloc(in->n * sizeof *in->u);
        in->x64 = malloc(in->n * sizeof *in->x64), in->g64 = malloc(in->n * sizeof *in->g64);
        in->lam = malloc(in->n * sizeof *in->lam), in->errx = malloc(in->n * sizeof *in->errx);
        size_t cap = g->n_relu ? g->n_relu : 1;
        g->un_node = malloc(cap * sizeof *g->un_node), g->un_idx = malloc(cap * sizeof *g->un_idx);
        g->acur = malloc(cap * sizeof(double)), g->abest = malloc(cap * sizeof(double));
        g->agrad = malloc(cap * sizeof(double));
        g->row = malloc(o->n * sizeof(double)), g->work = malloc(o->n * sizeof(double));
        size_t mn = 1;
        for (uint32_t i = 0; i < g->n_nodes; i++) mn = g->nd[i].n > mn ? g->nd[i].n : mn;
        g->bw = malloc(2 * mn * sizeof(double));
        bad = !in->l || !in->u || !in->x64 || !in->g64 || !in->lam || !in->errx || !g->un_node || !g->un_idx ||
              !g->acur || !g->abest || !g->agrad || !g->row || !g->work || !g->bw;
        if (!bad && !g->comm) { /* the sparse passes of CROWN's intermediate bounds (one process) */
            g->cand = malloc(mn * sizeof *g->cand), g->smark = calloc(mn, sizeof *g->smark), g->smark_n = (uint32_t)mn;
            bad = !g->cand || !g->smark;
            for (uint32_t i = 0; i < g->n_nodes && !bad; i++) {
                gnode *q = &g->nd[i];
                q->tl = malloc(q->n * sizeof *q->tl), q->tm = calloc(q->n, 1);
                bad = !q->tl || !q->tm;
            }
        }
    }
    if (!bad && nrows > g->cib_cap) {
        grew = 1;
        double *p = realloc(g->cib, (size_t)nrows * sizeof *p);
        if (p) g->cib = p, g->cib_cap = nrows;
        else bad = 1;
    }
    size_t need = (size_t)rows * g->n_relu; /* the slopes of every row, at most */
    if (!bad && need > g->aout_cap) {
        grew = 1;
        double *p = realloc(g->aout, need * sizeof *p);
        if (p) g->aout = p, g->aout_cap = need;
        else bad = 1;
    }
    if (!bad && g->fsdp && !g->fbuf) { /* the largest linear node's entries */
        grew = 1;
        size_t mx = 1;
        for (uint32_t i = 0; i < g->n_nodes; i++)
            if (g->nd[i].kind == N_LIN && fsdp_bytes(&g->nd[i]) > mx) mx = fsdp_bytes(&g->nd[i]);
        if (!(g->fbuf = malloc(mx))) bad = 1;
    }
    if (!bad && g->tp) { /* TP's part of a node's values (2 a value: a backward pass's sums and terms) */
        size_t mx = 1;
        for (uint32_t i = 0; i < g->n_nodes; i++)
            if (2 * (g->nd[i].n / (size_t)g->size + 1) > mx) mx = 2 * (g->nd[i].n / (size_t)g->size + 1);
        if (mx > g->gtmp_cap) {
            grew = 1;
            double *p = realloc(g->gtmp, mx * sizeof *p);
            if (p) g->gtmp = p, g->gtmp_cap = mx;
            else bad = 1;
        }
    }
    vt_err e = bad ? vt_set_error(VT_ERR_NOMEM, "out of memory") : VT_OK;
    if (g->comm && (grew || !g->joined)) {
        if (!g->joined) e = vti_cert_shard_join(e), g->joined = 1;
        else {
            vt_err a = vt_dist_agree(g->comm, e, NULL);
            if (a && !e) e = a;
        }
    }
    return e;
}

/* IBP after prepare: the nodes from start on (keep: each intersected with its present interval);
 * under TP each rank computes the linear node's rows it holds (each by the same loop as in one
 * process) and gathers its intervals and error bounds. */
static vt_err ibp_from(vt_cert_graph *g, uint32_t start, int keep)
{
    for (uint32_t i = start; i < g->n_nodes && !g->err; i++) {
        gnode *q = &g->nd[i];
        hold(g, i, 0);
        if (g->err) break;
        ibp_node(g, q, keep);
        if (q->kind == N_LIN) share(g, q->l, q->n, 1), share(g, q->u, q->n, 1), share(g, q->E, q->n, 1);
    }
    return g->err;
}

/* IBP after prepare: every node */
static vt_err ibp_all(vt_cert_graph *g, const double *xl, const double *xu)
{
    gnode *in = &g->nd[0];
    memcpy(in->l, xl, in->n * sizeof *xl), memcpy(in->u, xu, in->n * sizeof *xu);
    return ibp_from(g, 1, 0);
}

vt_err vt_cert_graph_ibp(vt_cert_graph *g, const double *xl, const double *xu)
{
    VT_FORWARD_IF_ERROR(prepare(g, 0, 0));
    return ibp_all(g, xl, xu);
}

void vt_cert_graph_interval(const vt_cert_graph *g, uint32_t node, const double **l, const double **u)
{
    *l = g->nd[node].l, *u = g->nd[node].u;
}

/* ---------------------------------------------------------------- CROWN (the backward pass) */

/* lam_x[i] += v; the rounding of the sum (|err| <= u |result|: additions do not underflow) into errx;
 * a sparse pass lists the value (tl) the first time */
static void acc(vt_cert_graph *g, gnode *x, uint32_t i, double v, double extra)
{
    if (g->sparse && !x->tm[i]) x->tm[i] = 1, x->tl[x->nt++] = i;
    double old = x->lam[i], s = old + v;
    x->lam[i] = s;
    double e = extra;
    if (old != 0 && v != 0) e = UP(e + UP(U53 * fabs(s)));
    if (e) x->errx[i] = UP(x->errx[i] + e);
}

/* A max pool's window j: the input with the largest lower bound (returned), the largest upper bound
 * (top) and the largest upper bound of the others (other) */
static uint32_t pool_pick(const gnode *q, const gnode *A, uint32_t j, double *top, double *other)
{
    uint32_t best = q->ci[q->rp[j]];
    *top = -INFINITY, *other = -INFINITY;
    for (uint32_t k = q->rp[j]; k < q->rp[j + 1]; k++)
        if (A->l[q->ci[k]] > A->l[best]) best = q->ci[k];
    for (uint32_t k = q->rp[j]; k < q->rp[j + 1]; k++) {
        if (A->u[q->ci[k]] > *top) *top = A->u[q->ci[k]];
        if (q->ci[k] != best && A->u[q->ci[k]] > *other) *other = A->u[q->ci[k]];
    }
    return best;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* One input i's sum over a linear node's transposed row (held rows; TP: this rank's) into bw[2i],
 * its error term into bw[2i + 1] (-1: no term) */
static void tsum(const gnode *q, uint32_t i, double *bw)
{
    double s = 0, a = 0;
    uint32_t k0 = q->trp[i - q->tlo], k1 = q->trp[i - q->tlo + 1];
    for (uint32_t k = k0; k < k1; k++) {
        double t = q->tv[k] * q->lam[q->tci[k]];
        s += t, a += fabs(t);
    }
    bw[2 * (size_t)i] = s, bw[2 * (size_t)i + 1] = a == 0 ? -1 : k1 - k0 == 1 && q->tv[k0] == 1 ? 0 : dot_err(k1 - k0, a);
}

/* The lower bound of lam . (node start) + K over the graph, backward from the coefficients lam of
 * node start (the output for a margin's or spec row's pass; a ReLU's input node for CROWN's
 * intermediate bounds). Sparse (g->sparse: one process), each node visits only the values a pass
 * touched, in increasing index order (sorted), and a linear node sums only the inputs of the rows
 * with a coefficient, each by its whole transposed row: every sum, term and error bound is the
 * dense pass's, the same bits (the untouched values add exact zeros). */
static double backward(vt_cert_graph *g, uint32_t start)
{
    double K = 0;
    for (uint32_t id = start + 1; id-- > 0;) {
        gnode *q = &g->nd[id];
        const uint32_t *ix = NULL; /* the values visited: ix[0 .. cnt) (sparse), else 0 .. n */
        uint32_t cnt = q->n;
        if (g->sparse) { /* the touched values in increasing order: sorted, or by a scan when many */
            if ((uint64_t)q->nt * 16 < q->n) qsort(q->tl, q->nt, sizeof *q->tl, cmp_u32);
            else
                for (uint32_t i = 0, k = 0; i < q->n; i++)
                    if (q->tm[i]) q->tl[k++] = i;
            ix = q->tl, cnt = q->nt;
        }
#define IX(t) (ix ? ix[t] : (t))
        /* the coefficients' accumulated rounding, times the node's magnitudes */
        double er = 0;
        for (uint32_t t = 0; t < cnt; t++) {
            uint32_t i = IX(t);
            if (q->errx[i]) er = UP(er + UP(q->errx[i] * amax(q->l[i], q->u[i])));
        }
        K = DN(K - er);
        if (q->kind == N_INPUT) {
            double s = 0, a = 0;
            for (uint32_t t = 0; t < cnt; t++) {
                uint32_t i = IX(t);
                double v = q->lam[i] * (q->lam[i] > 0 ? q->l[i] : q->u[i]);
                s += v, a += fabs(v);
            }
            K = DN(K + DN(s - dot_err(q->n, a)));
            break;
        }
        gnode *A = &g->nd[q->a];
        double eE = 0;
        for (uint32_t t = 0; t < cnt; t++) {
            uint32_t j = IX(t);
            if (q->lam[j] != 0 && q->E[j] != 0) eE = UP(eE + UP(fabs(q->lam[j]) * q->E[j]));
        }
        K = DN(K - eE);
        if (q->kind == N_LIN) {
            hold(g, id, 1);
            if (g->err) return -INFINITY;
            if (q->c) {
                double s = 0, a = 0;
                for (uint32_t t = 0; t < cnt; t++) {
                    uint32_t j = IX(t);
                    double v = q->lam[j] * q->c[j];
                    s += v, a += fabs(v);
                }
                K = DN(K + DN(s - dot_err(q->n, a)));
            }
            /* each input's sum and its error term (-1: no term), the transposed rows held (TP: this
             * rank's, then gathered), then accumulated in input order on every rank */
            double *bw = g->bw;
            if (g->sparse && (uint64_t)cnt * 16 < q->n) { /* the inputs of the rows with a coefficient (all held) */
                uint32_t nc = 0;
                if (++g->stamp == 0) memset(g->smark, 0, g->smark_n * sizeof *g->smark), g->stamp = 1;
                for (uint32_t t = 0; t < cnt; t++) {
                    uint32_t j = ix[t];
                    if (q->lam[j] == 0) continue;
                    for (uint32_t k = q->rp[j]; k < q->rp[j + 1]; k++)
                        if (g->smark[q->ci[k]] != g->stamp) g->smark[q->ci[k]] = g->stamp, g->cand[nc++] = q->ci[k];
                }
                for (uint32_t t = 0; t < nc; t++) {
                    uint32_t i = g->cand[t];
                    tsum(q, i, bw);
                    if (bw[2 * (size_t)i + 1] >= 0) acc(g, A, i, bw[2 * (size_t)i], bw[2 * (size_t)i + 1]);
                }
            } else if (g->sparse) { /* many rows: every input, as the dense pass */
                for (uint32_t i = 0; i < A->n; i++) {
                    tsum(q, i, bw);
                    if (bw[2 * (size_t)i + 1] >= 0) acc(g, A, i, bw[2 * (size_t)i], bw[2 * (size_t)i + 1]);
                }
            } else {
                for (uint32_t i = q->tlo; i < q->thi; i++) tsum(q, i, bw);
                share(g, bw, A->n, 2);
                if (g->err) return -INFINITY;
                for (uint32_t i = 0; i < A->n; i++)
                    if (bw[2 * (size_t)i + 1] >= 0) acc(g, A, i, bw[2 * (size_t)i], bw[2 * (size_t)i + 1]);
            }
        } else if (q->kind == N_ADD) {
            gnode *B = &g->nd[q->b];
            for (uint32_t t = 0; t < cnt; t++) {
                uint32_t j = IX(t);
                if (q->lam[j] != 0) acc(g, A, j, q->lam[j], 0), acc(g, B, j, q->lam[j], 0);
            }
        } else if (q->kind == N_RELU) {
            for (uint32_t t = 0; t < cnt; t++) {
                uint32_t j = IX(t);
                double lm = q->lam[j], l = A->l[j], u = A->u[j];
                if (lm == 0 || u <= 0) continue;
                if (l >= 0) {
                    acc(g, A, j, lm, 0);
                } else if (lm > 0) { /* lower line alpha x, alpha in [0, 1] (CROWN's: 0 or 1 by u >= -l) */
                    double a = q->al[j];
                    if (a == 1) acc(g, A, j, lm, 0);
                    else if (a != 0) {
                        double cf = lm * a;
                        acc(g, A, j, cf, UP(U53 * fabs(cf) + 0x1p-1074));
                    }
                } else { /* upper line s (x - l), s >= u / (u - l) */
                    double s = UP(u / DN(u - l));
                    if (!isfinite(s)) return -INFINITY;
                    double cf = lm * s;
                    acc(g, A, j, cf, UP(U53 * fabs(cf) + 0x1p-1074));
                    K = DN(K - UP(UP(fabs(lm) * s) * -l));
                }
            }
        } else { /* max pooling */
            for (uint32_t t = 0; t < cnt; t++) {
                uint32_t j = IX(t);
                double lm = q->lam[j];
                if (lm == 0) continue;
                double top, other;
                uint32_t best = pool_pick(q, A, j, &top, &other);
                if (lm > 0 || A->l[best] >= other) acc(g, A, best, lm, 0); /* y >= x_best; y = x_best when it dominates */
                else K = DN(K + DN(lm * top));                              /* y <= max u */
            }
        }
#undef IX
        if (!isfinite(K)) return -INFINITY;
    }
    return isfinite(K) ? K : -INFINITY;
}

/* ---------------------------------------------------------------- alpha-CROWN */

void vt_cert_graph_set_deadline(vt_cert_graph *g, double deadline)
{
    g->deadline = deadline;
    g->timed_out = 0;
}

int vt_cert_graph_timed_out(const vt_cert_graph *g) { return g->timed_out; }

void vt_cert_graph_set_alpha(vt_cert_graph *g, const vt_cert_settings *s)
{
    g->as.alpha_iters = s->alpha_iters, g->as.alpha_step = s->alpha_step, g->as.alpha_decay = s->alpha_decay;
}

uint32_t vt_cert_graph_n_relu(const vt_cert_graph *g) { return g->n_relu; }
uint32_t vt_cert_graph_n_alpha(const vt_cert_graph *g) { return g->n_unst; }
const double *vt_cert_graph_alpha(const vt_cert_graph *g) { return g->aout; }

/* After the intermediate bounds: the unstable ReLU values (l < 0 < u of the ReLU's input), in node order then index order;
 * CROWN's slopes (1 when u >= -l, else 0) into every ReLU node; room for rows x n_unst slopes. */
static void unstable(vt_cert_graph *g, uint32_t rows)
{
    g->n_unst = 0;
    for (uint32_t id = 1; id < g->n_nodes; id++) {
        gnode *q = &g->nd[id];
        if (q->kind != N_RELU) continue;
        const gnode *A = &g->nd[q->a];
        for (uint32_t j = 0; j < q->n; j++) {
            double l = A->l[j], u = A->u[j];
            q->al[j] = u >= -l ? 1.0 : 0.0;
            if (l < 0 && u > 0) g->un_node[g->n_unst] = id, g->un_idx[g->n_unst++] = j;
        }
    }
    size_t need = (size_t)rows * g->n_unst; /* within prepare's aout_cap */
    if (need) memset(g->aout, 0, need * sizeof *g->aout);
}

static void set_slopes(vt_cert_graph *g, const double *a)
{
    for (uint32_t k = 0; k < g->n_unst; k++) g->nd[g->un_node[k]].al[g->un_idx[k]] = a[k];
}

/* The sound lower bound of row . out with the ReLU nodes' current slopes (one backward pass) */
static double pass(vt_cert_graph *g, const double *row)
{
    for (uint32_t i = 0; i < g->n_nodes; i++) {
        memset(g->nd[i].lam, 0, g->nd[i].n * sizeof(double));
        memset(g->nd[i].errx, 0, g->nd[i].n * sizeof(double));
    }
    gnode *o = &g->nd[g->n_nodes - 1];
    memcpy(o->lam, row, o->n * sizeof *row);
    return backward(g, g->n_nodes - 1);
}

/* ---------------------------------------------------------------- CROWN's intermediate bounds */

void vt_cert_graph_set_intermediate(vt_cert_graph *g, vt_cert_inter in) { g->inter_ibp = in == VT_CERT_INTER_IBP; }

/* test hooks (vt_cert_int.h): each refined intermediate bound moved inward by this fraction of its
 * width; the intermediate passes dense in one process too */
double vti_cert_graph_inward;
int vti_cert_graph_dense;

/* The sound lower bound of sgn y_j (y node id's values, sgn +1 or -1): one backward pass from node id
 * with the ReLUs' present slopes. Sparse in one process (the values it touched cleared after);
 * otherwise dense, every rank running every pass with the nodes split as in a margin's pass. */
static double ipass(vt_cert_graph *g, uint32_t id, uint32_t j, double sgn)
{
    gnode *P = &g->nd[id];
    if (!g->sparse) {
        for (uint32_t i = 0; i <= id; i++) {
            memset(g->nd[i].lam, 0, g->nd[i].n * sizeof(double));
            memset(g->nd[i].errx, 0, g->nd[i].n * sizeof(double));
        }
        P->lam[j] = sgn;
        return backward(g, id);
    }
    P->tm[j] = 1, P->tl[P->nt++] = j, P->lam[j] = sgn;
    double v = backward(g, id);
    for (uint32_t i = 0; i <= id; i++) {
        gnode *q = &g->nd[i];
        for (uint32_t t = 0; t < q->nt; t++) q->lam[q->tl[t]] = 0, q->errx[q->tl[t]] = 0, q->tm[q->tl[t]] = 0;
        q->nt = 0;
    }
    return v;
}

/* CROWN's intermediate bounds, after IBP (docs/certify.md "The residual CNN"): for each ReLU node in
 * graph order, each unstable value of its input node (l < 0 < u; the input node itself is the box)
 * bounded below by a backward pass from e_j and above by one from -e_j, through the earlier ReLUs'
 * relaxations (their CROWN slopes from their refined bounds), intersected with its interval (both
 * sound); the ReLU's CROWN slopes from the result; then IBP again from the ReLU on, each node
 * intersected with its interval (the later intervals and error bounds E_j from the tighter ones).
 * deadline (vt_now() seconds, 0: none) is checked between values: *timed_out 1 when it passed. */
static void crown_inter(vt_cert_graph *g, double deadline, int *timed_out)
{
    g->sparse = !g->comm && !vti_cert_graph_dense;
    for (uint32_t i = 0; i < g->n_nodes; i++) {
        gnode *q = &g->nd[i];
        memset(q->lam, 0, q->n * sizeof(double)), memset(q->errx, 0, q->n * sizeof(double));
        if (g->sparse) memset(q->tm, 0, q->n), q->nt = 0;
    }
    for (uint32_t r = 1; r < g->n_nodes && !g->err && !*timed_out; r++) {
        gnode *R = &g->nd[r];
        if (R->kind != N_RELU) continue;
        gnode *P = &g->nd[R->a];
        for (uint32_t j = 0; j < P->n && R->a != 0 && !g->err; j++) {
            if (!(P->l[j] < 0 && P->u[j] > 0)) continue;
            if (deadline > 0 && vt_now() >= deadline) {
                *timed_out = 1;
                break;
            }
            double lo = ipass(g, R->a, j, 1);
            if (lo > P->l[j]) P->l[j] = lo;
            if (P->l[j] < 0) { /* still unstable: the upper bound too */
                double hi = -ipass(g, R->a, j, -1);
                if (hi < P->u[j]) P->u[j] = hi;
            }
            if (vti_cert_graph_inward > 0 && P->l[j] < P->u[j]) { /* the test hook: unsound on purpose */
                double w = (P->u[j] - P->l[j]) * vti_cert_graph_inward;
                P->l[j] += w, P->u[j] -= w;
            }
        }
        for (uint32_t j = 0; j < R->n; j++) R->al[j] = P->u[j] >= -P->l[j] ? 1.0 : 0.0;
        if (ibp_from(g, r, 1)) break;
    }
    g->sparse = 0;
}

/* a linear node's outputs (x64) at the input values a, in FP64 (not a bound): the rows held (TP:
 * this rank's, then gathered); zeros after a failed collective */
static void lin64(vt_cert_graph *g, gnode *q, const double *a)
{
    for (uint32_t j = q->rlo; j < q->rhi && !g->err; j++) {
        double y = 0;
        for (uint32_t k = q->rp[j - q->rlo]; k < q->rp[j - q->rlo + 1]; k++) y += q->v[k] * a[q->ci[k]];
        q->x64[j] = q->c ? y + q->c[j] : y;
    }
    share(g, q->x64, q->n, 1);
    if (g->err) memset(q->x64, 0, q->n * sizeof *q->x64);
}

/* The gradient of the bound with respect to the unstable slopes, after a pass (its coefficients lam
 * left in every node): the relaxed network evaluated forward at the input the pass concretised at
 * (each ReLU by the line its coefficient's sign chose, max pooling by its relaxation); the slope of
 * value j moves the bound by lam_j times its input's relaxed value. An approximation is harmless: the
 * bound of every slope tried is computed soundly. FP64 in x64, fixed order. */
static void alpha_grad(vt_cert_graph *g, double *grad)
{
    gnode *in = &g->nd[0];
    for (uint32_t i = 0; i < in->n; i++) in->x64[i] = in->lam[i] > 0 ? in->l[i] : in->u[i];
    for (uint32_t id = 1; id < g->n_nodes; id++) {
        gnode *q = &g->nd[id];
        const gnode *A = &g->nd[q->a];
        const double *a = A->x64, *b = g->nd[q->b].x64;
        hold(g, id, 0);
        if (q->kind == N_LIN) {
            lin64(g, q, a);
            continue;
        }
        for (uint32_t j = 0; j < q->n; j++) {
            double y = 0;
            if (q->kind == N_ADD) y = a[j] + b[j];
            else if (q->kind == N_RELU) {
                double l = A->l[j], u = A->u[j];
                y = u <= 0 ? 0 : l >= 0 ? a[j] : q->lam[j] >= 0 ? q->al[j] * a[j] : u / (u - l) * (a[j] - l);
            } else {
                double top, other;
                uint32_t best = pool_pick(q, A, j, &top, &other);
                y = q->lam[j] >= 0 || A->l[best] >= other ? a[best] : top;
            }
            q->x64[j] = y;
        }
    }
    for (uint32_t k = 0; k < g->n_unst; k++) {
        const gnode *q = &g->nd[g->un_node[k]];
        uint32_t j = g->un_idx[k];
        double lm = q->lam[j];
        grad[k] = lm > 0 ? lm * g->nd[q->a].x64[j] : 0;
    }
}

/* CROWN's (VT_CERT_CROWN) or alpha-CROWN's sound lower bound of row . out after IBP and unstable():
 * CROWN's slopes, then alpha-CROWN's projected sign-gradient search (the MLP's: g->as's iterations,
 * step and decay; the best slopes by their sound bound kept, so never below CROWN's); the best slopes
 * into out (n_unst). -infinity with *timed_out 1 when the deadline passes between iterations. */
static double row_bound(vt_cert_graph *g, const double *row, vt_cert_method m, double deadline, double *out,
                        int *timed_out)
{
    uint32_t n = g->n_unst;
    for (uint32_t k = 0; k < n; k++) { /* CROWN's slopes */
        const gnode *A = &g->nd[g->nd[g->un_node[k]].a];
        g->acur[k] = A->u[g->un_idx[k]] >= -A->l[g->un_idx[k]] ? 1.0 : 0.0;
    }
    set_slopes(g, g->acur);
    double best = pass(g, row);
    if (m != VT_CERT_ALPHA_CROWN || n == 0) return best;
    memcpy(g->abest, g->acur, n * sizeof(double));
    double step = g->as.alpha_step;
    for (uint32_t it = 0; it < g->as.alpha_iters; it++) {
        if (deadline > 0 && vt_now() >= deadline) {
            *timed_out = 1;
            return -INFINITY;
        }
        alpha_grad(g, g->agrad);
        for (uint32_t k = 0; k < n; k++) {
            double a = g->acur[k] + (g->agrad[k] > 0 ? step : g->agrad[k] < 0 ? -step : 0);
            g->acur[k] = a < 0 ? 0 : a > 1 ? 1 : a;
        }
        step *= g->as.alpha_decay;
        set_slopes(g, g->acur);
        double v = pass(g, row);
        if (v > best) {
            best = v;
            memcpy(g->abest, g->acur, n * sizeof(double));
        } else { /* the gradient is taken at the best slopes found */
            memcpy(g->acur, g->abest, n * sizeof(double));
            set_slopes(g, g->acur);
            (void)pass(g, row);
        }
    }
    if (n) memcpy(out, g->abest, n * sizeof(double));
    return best;
}

/* check-certificate's one pass: the sound lower bound of row . out with the given slopes of the
 * unstable values (one backward pass, no search), the slopes copied to out. */
static double row_given(vt_cert_graph *g, const double *row, const double *given, double *out)
{
    set_slopes(g, given);
    if (g->n_unst) memcpy(out, given, g->n_unst * sizeof *given); /* none: out may be NULL (no ReLU) */
    return pass(g, row);
}

void vt_cert_graph_given_slopes(vt_cert_graph *g, const double *a, uint32_t U) { g->given = a, g->given_u = U; }

/* After unstable(): the given slopes must be one per unstable value of the box (then used once). */
static vt_err given_check(vt_cert_graph *g, vt_cert_method m)
{
    if (!g->given) return VT_OK;
    VT_RETURN_ERROR_IF(m != VT_CERT_ALPHA_CROWN || g->given_u != g->n_unst, VT_ERR_MISMATCH,
                       "%u slopes a row recorded, the box has %u unstable ReLU values", g->given_u, g->n_unst);
    return VT_OK;
}

/* One row's CROWN / alpha-CROWN bound: from the given slopes (row r of them) or by row_bound. */
static double row_any(vt_cert_graph *g, const double *row, uint32_t r, vt_cert_method m, double deadline, int *timed_out)
{
    double *out = m == VT_CERT_ALPHA_CROWN ? g->aout + (size_t)r * g->n_unst : NULL;
    if (g->given) return row_given(g, row, g->given + (size_t)r * g->n_unst, out);
    return row_bound(g, row, m, deadline, out, timed_out);
}

/* the margin's row e_label - e_j (g->row) */
static const double *margin_row(vt_cert_graph *g, uint32_t label, uint32_t j)
{
    memset(g->row, 0, g->nd[g->n_nodes - 1].n * sizeof *g->row);
    g->row[label] = 1, g->row[j] = -1;
    return g->row;
}

vt_err vt_cert_graph_bounds(vt_cert_graph *g, const double *xl, const double *xu, uint32_t label, vt_cert_method m,
                            double *lb)
{
    gnode *o = &g->nd[g->n_nodes - 1];
    VT_RETURN_ERROR_IF(label >= o->n, VT_ERR_ARG, "certify: label %u of %u classes", label, o->n);
    uint32_t nm = o->n - 1; /* the margins j != label, r = 0 .. nm in increasing j */
    VT_FORWARD_IF_ERROR(prepare(g, m == VT_CERT_ALPHA_CROWN ? nm : 0, nm));
    VT_FORWARD_IF_ERROR(ibp_all(g, xl, xu));
    int timed = 0, full = m != VT_CERT_IBP && !g->inter_ibp;
    if (full) { /* CROWN-IBP's bound of each margin (IBP's intermediate bounds), then CROWN's */
        unstable(g, 0);
        for (uint32_t j = 0, r = 0; j < o->n && !g->err; j++)
            if (j != label) g->cib[r++] = pass(g, margin_row(g, label, j));
        crown_inter(g, g->deadline, &timed);
    }
    unstable(g, m == VT_CERT_ALPHA_CROWN ? nm : 0);
    vt_err ge = given_check(g, m);
    if (ge) {
        g->given = NULL;
        return ge;
    }
    for (uint32_t j = 0, r = 0; j < o->n && !g->err; j++) { /* TP: every pass on every rank, its nodes split */
        if (j == label) continue;
        double b = DN(o->l[label] - o->u[j]);
        if (!isfinite(b)) b = -INFINITY;
        if (m != VT_CERT_IBP) {
            double c = row_any(g, margin_row(g, label, j), r, m, g->deadline, &timed);
            if (c > b) b = c;
            if (full && g->cib[r] > b) b = g->cib[r];
        }
        g->work[r++] = b;
    }
    g->given = NULL;
    g->timed_out |= timed;
    for (uint32_t j = 0, r = 0; j < o->n && !g->err; j++) lb[j] = j == label ? 0 : g->work[r++];
    return g->err;
}

vt_err vt_cert_graph_spec_bounds(vt_cert_graph *g, const double *xl, const double *xu, const double *C, uint32_t m,
                                 vt_cert_method meth, double deadline, double *lb, int *timed_out)
{
    *timed_out = 0;
    VT_FORWARD_IF_ERROR(prepare(g, meth == VT_CERT_ALPHA_CROWN ? m : 0, m));
    VT_FORWARD_IF_ERROR(ibp_all(g, xl, xu));
    gnode *o = &g->nd[g->n_nodes - 1];
    int full = meth != VT_CERT_IBP && !g->inter_ibp;
    if (full) { /* CROWN-IBP's bound of each row (IBP's intermediate bounds), then CROWN's */
        unstable(g, 0);
        for (uint32_t r = 0; r < m && !g->err; r++) g->cib[r] = pass(g, C + (size_t)r * o->n);
        crown_inter(g, deadline, timed_out);
    }
    unstable(g, meth == VT_CERT_ALPHA_CROWN ? m : 0);
    vt_err ge = given_check(g, meth);
    if (ge) {
        g->given = NULL;
        return ge;
    }
    double *work = g->work;
    for (uint32_t r = 0; r < m && !g->err; r++) { /* TP: every row on every rank (no deadline under --shard) */
        if (deadline > 0 && vt_now() >= deadline) *timed_out = 1;
        if (*timed_out) {
            lb[r] = -INFINITY;
            continue;
        }
        const double *row = C + (size_t)r * o->n;
        double b = vt_cert_row_lo(row, o->l, o->u, o->n, work);
        if (!(b >= -DBL_MAX)) b = -INFINITY;
        if (meth != VT_CERT_IBP) {
            double c = row_any(g, row, r, meth, deadline, timed_out);
            if (c > b) b = c;
            if (full && g->cib[r] > b) b = g->cib[r];
        }
        lb[r] = *timed_out ? -INFINITY : b;
    }
    g->given = NULL;
    return g->err;
}

/* ---------------------------------------------------------------- FP64 forward, backward, attack */

void vt_cert_graph_forward64(vt_cert_graph *g, const double *x, double *out)
{
    memcpy(g->nd[0].x64, x, g->nd[0].n * sizeof *x);
    for (uint32_t id = 1; id < g->n_nodes; id++) {
        gnode *q = &g->nd[id];
        const double *a = g->nd[q->a].x64, *b = g->nd[q->b].x64;
        hold(g, id, 0); /* FSDP (TP: lin64): a collective (every rank runs the same attack) */
        if (q->kind == N_LIN) {
            lin64(g, q, a);
            continue;
        }
        for (uint32_t j = 0; j < q->n; j++) {
            double y = 0;
            if (q->kind == N_ADD) y = a[j] + b[j];
            else if (q->kind == N_RELU) y = a[j] > 0 ? a[j] : 0;
            else {
                y = a[q->ci[q->rp[j]]];
                for (uint32_t k = q->rp[j]; k < q->rp[j + 1]; k++)
                    if (a[q->ci[k]] > y) y = a[q->ci[k]];
            }
            q->x64[j] = y;
        }
    }
    gnode *o = &g->nd[g->n_nodes - 1];
    memcpy(out, o->x64, o->n * sizeof *out);
}

/* after forward64: the gradient of out . gout with respect to the input, into the input's g64 */
static void backprop64(vt_cert_graph *g, const double *gout)
{
    for (uint32_t i = 0; i < g->n_nodes; i++) memset(g->nd[i].g64, 0, g->nd[i].n * sizeof(double));
    gnode *o = &g->nd[g->n_nodes - 1];
    memcpy(o->g64, gout, o->n * sizeof *gout);
    for (uint32_t id = g->n_nodes - 1; id > 0; id--) {
        gnode *q = &g->nd[id], *A = &g->nd[q->a];
        if (q->kind == N_LIN) { /* by the transposed rows held (TP: gathered): the same sums in the same order */
            hold(g, id, 1);
            for (uint32_t i = q->tlo; i < q->thi && !g->err; i++) {
                double s = A->g64[i];
                for (uint32_t k = q->trp[i - q->tlo]; k < q->trp[i - q->tlo + 1]; k++) {
                    double d = q->g64[q->tci[k]];
                    if (d != 0) s += q->tv[k] * d;
                }
                A->g64[i] = s;
            }
            share(g, A->g64, A->n, 1);
            continue;
        }
        for (uint32_t j = 0; j < q->n; j++) {
            double d = q->g64[j];
            if (d == 0) continue;
            if (q->kind == N_ADD) A->g64[j] += d, g->nd[q->b].g64[j] += d;
            else if (q->kind == N_RELU) A->g64[j] += A->x64[j] > 0 ? d : 0;
            else {
                uint32_t best = q->ci[q->rp[j]];
                for (uint32_t k = q->rp[j]; k < q->rp[j + 1]; k++)
                    if (A->x64[q->ci[k]] > A->x64[best]) best = q->ci[k];
                A->g64[best] += d;
            }
        }
    }
}

void vt_cert_graph_grad64(vt_cert_graph *g, const double *gout, double *gin)
{
    backprop64(g, gout);
    memcpy(gin, g->nd[0].g64, g->nd[0].n * sizeof *gin);
}

static void graph_forward(void *net, const double *x, double *out) { vt_cert_graph_forward64(net, x, out); }
static void graph_grad(void *net, const double *gout, double *gin) { vt_cert_graph_grad64(net, gout, gin); }

vt_err vt_cert_graph_attack(vt_cert_graph *g, const float *x, double eps, uint32_t label, uint64_t index,
                            const vt_cert_settings *s, vt_cert_confirm_fn confirm, void *cctx, float *cex, int *found)
{
    vti_cert_pgd_net net = {graph_forward, graph_grad, g, g->nd[0].n, g->nd[g->n_nodes - 1].n, 0, g->deadline, 0, NULL, 0};
    vt_err e = vti_cert_pgd(&net, x, eps, label, index, s, confirm, cctx, cex, found);
    g->timed_out |= net.timed_out;
    return e ? e : g->err;
}
