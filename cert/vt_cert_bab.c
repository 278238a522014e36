/* vt_cert_bab.c - branch and bound on ReLU splits for a committed MLP run (`certify --method
 * beta-crown`, docs/certify.md "Branch and bound"): the search (breadth first, in creation order, a
 * BaBSR-like choice of the ReLU to split), the split tree a certificate records (version 5,
 * docs/format.md "Certificate") and its one-pass replay by check-certificate (no search: each leaf's
 * bound recomputed from its recorded slopes, rejected when it does not close, naming the node).
 * Every subdomain's bound is alpha-CROWN's sound bound (vt_cert_bound.c) with the splits' clamps and
 * beta-CROWN's multipliers. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/vt_bytes.h"
#include "vt_cert.h"
#include "vt_cert_int.h"

void vti_bab_free(vti_bab_tree *t)
{
    if (!t) return;
    for (uint32_t q = 0; q < t->n; q++) free(t->v[q].alpha), free(t->v[q].beta), free(t->v[q].lb);
    free(t->v);
    memset(t, 0, sizeof *t);
}

/* A new node (a leaf until split) under parent (-1: the root) on side (0 active, 1 inactive). */
static vt_err add_node(vti_bab_tree *t, int32_t parent, uint32_t side)
{
    if (t->n == t->cap) {
        uint32_t cap = t->cap ? 2 * t->cap : 64;
        VT_RETURN_ERROR_IF(cap > VTI_BAB_MAX_NODES, VT_ERR_LIMIT, "beta-crown: more than %u tree nodes", VTI_BAB_MAX_NODES);
        vti_bab_node *v = realloc(t->v, cap * sizeof *v);
        VT_RETURN_ERROR_IF(!v, VT_ERR_NOMEM, "out of memory");
        t->v = v, t->cap = cap;
    }
    vti_bab_node *d = &t->v[t->n];
    memset(d, 0, sizeof *d);
    d->parent = parent, d->side = side, d->kid[0] = d->kid[1] = -1;
    d->depth = parent < 0 ? 0 : t->v[parent].depth + 1;
    if (parent >= 0) t->v[parent].kid[side] = (int32_t)t->n;
    t->n++;
    return VT_OK;
}

/* The splits from the root to node q (root first). */
static uint32_t path_of(const vti_bab_tree *t, uint32_t q, vt_cert_split *sp)
{
    uint32_t n = t->v[q].depth;
    for (int32_t x = (int32_t)q, k = (int32_t)n - 1; t->v[x].parent >= 0; x = t->v[x].parent, k--) {
        const vti_bab_node *p = &t->v[t->v[x].parent];
        sp[k].layer = p->layer, sp[k].index = p->index, sp[k].active = t->v[x].side == 0;
    }
    return n;
}

/* A leaf's number of multipliers: one per margin and split above it. */
static size_t n_beta(const vti_bab_tree *t, uint32_t q) { return (size_t)t->R * t->v[q].depth; }

static vt_err set_leaf(vti_bab_tree *t, uint32_t q, const double *alpha, const double *beta, const double *lb)
{
    vti_bab_node *d = &t->v[q];
    size_t nb = n_beta(t, q);
    d->alpha = malloc((t->na ? t->na : 1) * sizeof *d->alpha), d->lb = malloc(t->C * sizeof *d->lb);
    d->beta = malloc((nb ? nb : 1) * sizeof *d->beta);
    VT_RETURN_ERROR_IF(!d->alpha || !d->lb || !d->beta, VT_ERR_NOMEM, "out of memory");
    if (t->na) memcpy(d->alpha, alpha, t->na * sizeof *alpha);
    if (nb) memcpy(d->beta, beta, nb * sizeof *beta);
    memcpy(d->lb, lb, t->C * sizeof *lb);
    return VT_OK;
}

vt_err vti_bab_root_rows(vti_bab_tree *t, size_t na, uint32_t R, uint32_t nlb, const double *alpha, const double *lb)
{
    vti_bab_free(t);
    t->na = na, t->R = R, t->C = nlb;
    VT_FORWARD_IF_ERROR(add_node(t, -1, 0));
    return set_leaf(t, 0, alpha, NULL, lb);
}

vt_err vti_bab_root(vti_bab_tree *t, size_t na, uint32_t C, const double *alpha, const double *lb)
{
    return vti_bab_root_rows(t, na, C - 1, C, alpha, lb);
}

static double min_margin(const double *lb, uint32_t C, uint32_t label, uint32_t *jmin)
{
    double mn = INFINITY;
    *jmin = label == 0 ? 1 : 0;
    for (uint32_t j = 0; j < C; j++)
        if (j != label && (lb[j] < mn || lb[j] != lb[j])) mn = lb[j] == lb[j] ? lb[j] : -INFINITY, *jmin = j;
    return mn;
}

/* The FP32 value nearest v in the exact ball of x (x itself when a few steps do not reach it). */
static float ball_f32(double v, float x, double eps)
{
    float f = (float)v;
    for (int k = 0; k < 8 && !vt_cert_in_ball(f, x, eps); k++) f = nextafterf(f, x);
    return vt_cert_in_ball(f, x, eps) ? f : x;
}

/* ---------------------------------------------------------------- a committed run's example: its margins */

typedef struct {
    const double *xl, *xu;
    uint32_t label, C;
    const vt_cert_settings *s;
    const vti_bab_attack *at;
    double *lg, *xd;
    float *xf;
    uint32_t jmin; /* the branching margin's class (margins_worst) */
} margins;

static vt_err margins_bound(vti_bab_prob *p, vt_cert_ctx *c, double *lb, double *alpha)
{
    margins *m = p->ctx;
    return vt_cert_bounds(c, m->xl, m->xu, m->label, m->s, lb, alpha);
}

static double margins_worst(vti_bab_prob *p, const double *lb, double *row, uint32_t *r, uint32_t *which)
{
    margins *m = p->ctx;
    uint32_t jmin;
    double mn = min_margin(lb, m->C, m->label, &jmin);
    *which = m->jmin = jmin;
    memset(row, 0, m->C * sizeof *row);
    row[m->label] = 1, row[jmin] = -1;
    *r = jmin - (jmin > m->label);
    return mn;
}

/* The subdomain's candidate: the point where the pass of its worst margin is smallest, in FP32 in the
 * ball; handed to confirm (the project's evaluation decides) when the FP64 network misclassifies it;
 * else the attack from that point on that margin's class (vti_cert_attack_from: attack_iters steps). */
static vt_err margins_candidate(vti_bab_prob *p, vt_cert_ctx *c, int *found)
{
    margins *m = p->ctx;
    const vti_bab_attack *at = m->at;
    if (!at) return VT_OK;
    const double *pt = vt_cert_last_point(c);
    uint32_t d = at->d;
    for (uint32_t i = 0; i < d; i++) m->xf[i] = ball_f32(pt[i], at->x[i], at->eps), m->xd[i] = m->xf[i];
    vt_cert_forward64(c, m->xd, m->lg);
    int cand = 0;
    for (uint32_t j = 0; j < m->C; j++)
        if (j != m->label && m->lg[j] >= m->lg[m->label]) cand = 1;
    int mis = 0;
    if (cand) VT_FORWARD_IF_ERROR(at->confirm(at->cctx, m->xf, m->label, &mis));
    if (mis) {
        memcpy(at->cex, m->xf, d * sizeof *m->xf);
        *found = 1;
        return VT_OK;
    }
    return vti_cert_attack_from(c, at->x, at->eps, m->label, m->xf, m->jmin, m->s, at->confirm, at->cctx, at->cex, found);
}

static vt_err margins_open(vt_cert_ctx *c, margins *m, vti_bab_prob *p)
{
    uint32_t d = m->at ? m->at->d : 1, maxw = vt_cert_max_width(c);
    m->lg = malloc((maxw > m->C ? maxw : m->C) * sizeof *m->lg), m->xd = malloc(d * sizeof *m->xd);
    m->xf = malloc(d * sizeof *m->xf);
    p->R = m->C - 1, p->nlb = m->C, p->what = "margin", p->ctx = m, p->progress = m->at && m->at->progress;
    p->bound = margins_bound, p->worst = margins_worst, p->candidate = margins_candidate;
    return !m->lg || !m->xd || !m->xf ? vt_set_error(VT_ERR_NOMEM, "out of memory") : VT_OK;
}

static void margins_close(margins *m) { free(m->lg), free(m->xd), free(m->xf); }

vt_err vti_bab_search(vt_cert_ctx *c, const double *xl, const double *xu, uint32_t label, const vt_cert_settings *s,
                      uint32_t C, vti_bab_tree *t, int *closed, uint32_t *bounded, const vti_bab_attack *at, int *found)
{
    margins m = {xl, xu, label, C, s, at, NULL, NULL, NULL, 0};
    vti_bab_prob p;
    vt_err e = margins_open(c, &m, &p);
    if (!e) e = vti_bab_search_p(c, &p, s, t, closed, bounded, found);
    else *closed = 0, *bounded = 0, *found = 0;
    margins_close(&m);
    return e;
}

/* ---------------------------------------------------------------- the search */

vt_err vti_bab_search_p(vt_cert_ctx *c, vti_bab_prob *p, const vt_cert_settings *s, vti_bab_tree *t, int *closed,
                        uint32_t *bounded, int *found)
{
    *closed = 0, *bounded = 0, *found = 0;
    vti_bab_free(t);
    size_t na = vt_cert_n_alpha_row(c) * p->R, nar = vt_cert_n_alpha_row(c);
    uint32_t no = vt_cert_out_width(c), R = p->R;
    t->na = na, t->R = R, t->C = p->nlb;
    double *lb = malloc(p->nlb * sizeof *lb), *alpha = malloc((na ? na : 1) * sizeof *alpha), *row = malloc(no * sizeof *row);
    double *beta = malloc(((size_t)R * VTI_BAB_MAX_DEPTH + 1) * sizeof *beta);
    vt_cert_split *sp = malloc(VTI_BAB_MAX_DEPTH * sizeof *sp);
    vt_err e = !lb || !alpha || !row || !sp || !beta ? vt_set_error(VT_ERR_NOMEM, "out of memory") : VT_OK;
    vt_cert_set_split_beta(c, NULL, beta);
    if (!e) e = add_node(t, -1, 0);
    int stopped = 0;
    for (uint32_t q = 0; !e && !stopped && q < t->n; q++) { /* breadth first: the nodes in creation order */
        uint32_t depth = path_of(t, q, sp);
        vt_cert_set_splits(c, sp, depth);
        e = p->bound(p, c, lb, alpha);
        if (e) break;
        ++*bounded;
        if (p->progress && *bounded % 100 == 0)
            fprintf(stderr, "branch and bound: %u subdomains bounded, %u nodes, depth %u\n", *bounded, t->n, depth);
        uint32_t r, which;
        double mn = p->worst(p, lb, row, &r, &which);
        if (mn > 0) {
            e = set_leaf(t, q, alpha, beta, lb);
            continue;
        }
        if (!(mn > -INFINITY) || vt_cert_timed_out(c) || *bounded >= s->bab_domains || depth + 1 >= VTI_BAB_MAX_DEPTH) {
            stopped = 1;
            break;
        }
        uint32_t layer, index;
        int more = vt_cert_branch_pick(c, row, s->method == VT_CERT_ALPHA_CROWN ? alpha + (size_t)r * nar : NULL, &layer, &index);
        e = p->candidate(p, c, found); /* the pass's smallest point, confirmed */
        if (e) break;
        if (*found || !more) { /* a counterexample, or nothing left to split (the relaxation is exact) */
            stopped = 1;
            break;
        }
        t->v[q].layer = layer, t->v[q].index = index, t->v[q].split = 1;
        e = add_node(t, (int32_t)q, 0);
        if (!e) e = add_node(t, (int32_t)q, 1);
    }
    vt_cert_set_splits(c, NULL, 0);
    vt_cert_set_split_beta(c, NULL, NULL);
    if (!e && !stopped) *closed = 1;
    free(lb), free(alpha), free(row), free(sp), free(beta);
    return e;
}

void vti_bab_min_lb(const vti_bab_tree *t, double *lb)
{
    for (uint32_t j = 0; j < t->C; j++) lb[j] = INFINITY;
    for (uint32_t q = 0; q < t->n; q++)
        if (!t->v[q].split)
            for (uint32_t j = 0; j < t->C; j++)
                if (t->v[q].lb[j] < lb[j]) lb[j] = t->v[q].lb[j];
}

void vti_bab_put(vti_buf *o, const vti_bab_tree *t)
{
    vti_put32(o, t->n);
    uint32_t *st = malloc((t->n + 1) * sizeof *st), sn = 0;
    if (!st) {
        o->bad = 1;
        return;
    }
    st[sn++] = 0;
    while (sn) { /* preorder: a node, its active subtree, its inactive subtree */
        const vti_bab_node *d = &t->v[st[--sn]];
        if (d->split) {
            vti_put32(o, 1), vti_put32(o, d->layer), vti_put32(o, d->index);
            st[sn++] = (uint32_t)d->kid[1], st[sn++] = (uint32_t)d->kid[0];
        } else if (!d->alpha || !d->lb || !d->beta) { /* a leaf never bounded (an incomplete search's): not a tree to write */
            o->bad = 1;
            break;
        } else {
            vti_put32(o, 0);
            for (size_t k = 0; k < t->na; k++) vti_put64(o, vt_f64_bits(d->alpha[k]));
            for (size_t k = 0; k < (size_t)t->R * d->depth; k++) vti_put64(o, vt_f64_bits(d->beta[k]));
            for (uint32_t j = 0; j < t->C; j++) vti_put64(o, vt_f64_bits(d->lb[j]));
        }
    }
    free(st);
}

vt_err vti_bab_scan(const uint8_t *p, size_t avail, size_t na, uint32_t C, const char *where, vti_bab_tree *t,
                    size_t *used)
{
    return vti_bab_scan_rows(p, avail, na, C - 1, C, where, t, used);
}

vt_err vti_bab_scan_rows(const uint8_t *p, size_t avail, size_t na, uint32_t R, uint32_t C, const char *where,
                         vti_bab_tree *t, size_t *used)
{
    VT_RETURN_ERROR_IF(avail < 4, VT_ERR_FORMAT, "certificate: %s: its split tree is truncated", where);
    uint32_t N = vt_get_u32le(p);
    VT_RETURN_ERROR_IF(N < 1 || N > VTI_BAB_MAX_NODES || (uint64_t)N * 4 > avail - 4, VT_ERR_FORMAT,
                       "certificate: %s: a split tree of %u nodes", where, N);
    size_t leaf = (na + C) * 8, off = 4;
    if (t) vti_bab_free(t), t->na = na, t->R = R, t->C = C;
    /* the internal nodes still waiting for a child: index, children seen */
    uint32_t *st = malloc((size_t)N * sizeof *st), sn = 0, *seen = calloc(N, sizeof *seen), *dep = calloc(N, sizeof *dep);
    uint32_t *lay = calloc(N, sizeof *lay), *idx = calloc(N, sizeof *idx);
    vt_err e = !st || !seen || !dep || !lay || !idx ? vt_set_error(VT_ERR_NOMEM, "out of memory") : VT_OK;
    for (uint32_t q = 0; q < N && !e; q++) {
        if (q > 0 && sn == 0) {
            e = vt_set_error(VT_ERR_FORMAT, "certificate: %s: split tree node %u comes after the tree is complete", where, q);
            break;
        }
        if (avail - off < 4) {
            e = vt_set_error(VT_ERR_FORMAT, "certificate: %s: split tree node %u is truncated", where, q);
            break;
        }
        uint32_t kind = vt_get_u32le(p + off), parent = sn ? st[sn - 1] : 0;
        dep[q] = q ? dep[parent] + 1 : 0;
        size_t lsz = leaf + (size_t)R * dep[q] * 8; /* a leaf: slopes, multipliers, bounds */
        if (kind > 1 || avail - off - 4 < (kind ? 8 : lsz) || dep[q] >= VTI_BAB_MAX_DEPTH) {
            e = vt_set_error(VT_ERR_FORMAT, "certificate: %s: split tree node %u is malformed or truncated", where, q);
            break;
        }
        uint32_t side = q ? seen[parent] : 0;
        if (t) e = add_node(t, q ? (int32_t)parent : -1, side); /* preorder: node q is t->v[q] */
        if (e) break;
        if (q && ++seen[parent] == 2) sn--;
        off += 4;
        if (kind) {
            lay[q] = vt_get_u32le(p + off), idx[q] = vt_get_u32le(p + off + 4);
            if (t) t->v[q].split = 1, t->v[q].layer = lay[q], t->v[q].index = idx[q];
            st[sn++] = q;
            off += 8;
        } else {
            if (t) {
                t->v[q].rec = p + off;
                size_t nb = (size_t)R * dep[q];
                t->v[q].alpha = malloc((na ? na : 1) * sizeof(double)), t->v[q].lb = malloc(C * sizeof(double));
                t->v[q].beta = malloc((nb ? nb : 1) * sizeof(double));
                if (!t->v[q].alpha || !t->v[q].lb || !t->v[q].beta) e = vt_set_error(VT_ERR_NOMEM, "out of memory");
            }
            off += lsz;
        }
    }
    if (!e && sn) /* a missing branch: the leaves would not cover the parent */
        e = vt_set_error(VT_ERR_FORMAT, "certificate: %s: split tree node %u (layer %u neuron %u) lacks its %s child",
                         where, st[sn - 1], lay[st[sn - 1]], idx[st[sn - 1]], seen[st[sn - 1]] ? "inactive" : "active");
    free(st), free(seen), free(dep), free(lay), free(idx);
    if (e) {
        if (t) vti_bab_free(t);
        return e;
    }
    *used = off;
    return VT_OK;
}

vt_err vti_bab_replay(vt_cert_ctx *c, const vt_cert_net *net, const double *xl, const double *xu, uint32_t label,
                      const vt_cert_settings *s, vti_bab_tree *t, const char *cert_path, const char *where, int *closed)
{
    margins m = {xl, xu, label, t->C, s, NULL, NULL, NULL, NULL, 0};
    vti_bab_prob p;
    vt_err e = margins_open(c, &m, &p);
    if (!e) e = vti_bab_replay_p(c, net, &p, t, cert_path, where, closed);
    margins_close(&m);
    return e;
}

vt_err vti_bab_replay_p(vt_cert_ctx *c, const vt_cert_net *net, vti_bab_prob *p,
                        vti_bab_tree *t, const char *cert_path, const char *where, int *closed)
{
    *closed = 1;
    uint32_t C = t->C, R = t->R, no = net->n[net->L];
    double *lb = malloc(C * sizeof *lb), *alpha = malloc((t->na ? t->na : 1) * sizeof *alpha);
    double *beta = malloc(((size_t)R * VTI_BAB_MAX_DEPTH + 1) * sizeof *beta), *row = malloc(no * sizeof *row);
    vt_cert_split *sp = malloc(VTI_BAB_MAX_DEPTH * sizeof *sp);
    vt_err e = !lb || !alpha || !sp || !beta || !row ? vt_set_error(VT_ERR_NOMEM, "out of memory") : VT_OK;
    for (uint32_t q = 0; q < t->n && !e; q++) {
        vti_bab_node *d = &t->v[q];
        uint32_t depth = path_of(t, q, sp);
        if (d->split) { /* a split of a hidden ReLU, not one already split above it */
            if (d->layer < 1 || d->layer >= net->L || d->index >= net->n[d->layer])
                e = vt_set_error(VT_ERR_MISMATCH, "%s: %s: split tree node %u splits layer %u neuron %u, not a hidden ReLU",
                                 cert_path, where, q, d->layer, d->index);
            for (uint32_t k = 0; k < depth && !e; k++)
                if (sp[k].layer == d->layer && sp[k].index == d->index)
                    e = vt_set_error(VT_ERR_MISMATCH, "%s: %s: split tree node %u splits layer %u neuron %u again", cert_path,
                                     where, q, d->layer, d->index);
            continue;
        }
        char wn[160];
        snprintf(wn, sizeof wn, "%s, split tree node %u", where, q);
        if (t->na) e = vti_cert_slopes(cert_path, wn, d->rec, t->na, d->alpha);
        size_t nb = (size_t)R * depth;
        const uint8_t *rb = d->rec + t->na * 8; /* the multipliers: finite and >= 0 */
        for (size_t k = 0; k < nb && !e; k++) {
            d->beta[k] = vt_bits_f64(vt_get_u64le(rb + 8 * k));
            if (!(d->beta[k] >= 0 && d->beta[k] < INFINITY))
                e = vt_set_error(VT_ERR_MISMATCH, "%s: %s: multiplier %zu is %g, not a finite beta >= 0", cert_path, wn, k,
                                 d->beta[k]);
        }
        if (e) break;
        vt_cert_set_splits(c, sp, depth);
        vt_cert_set_given_slopes(c, t->na ? d->alpha : NULL);
        vt_cert_set_split_beta(c, d->beta, beta);
        e = p->bound(p, c, lb, alpha);
        vt_cert_set_given_slopes(c, NULL);
        vt_cert_set_split_beta(c, NULL, NULL);
        if (e) break;
        uint32_t r, which;
        double mn = p->worst(p, lb, row, &r, &which);
        if (t->n > 1 && !(mn > 0)) {
            e = vt_set_error(VT_ERR_MISMATCH,
                             "%s: %s: split tree node %u (a leaf at depth %u) does not close: %s %u's bound %.17g "
                             "recomputed from its slopes does not refute it",
                             cert_path, where, q, depth, p->what, which, mn);
            break;
        }
        if (!(mn > 0)) *closed = 0;
        for (size_t k = 0; k < t->na && !e; k++) /* a stable ReLU's slope is CROWN's (what certify writes) */
            if (vt_get_u64le(d->rec + 8 * k) != vt_f64_bits(alpha[k]))
                e = vt_set_error(VT_ERR_MISMATCH,
                                 "%s: %s: split tree node %u (a leaf): slope %zu is %.17g, not the %.17g certify writes "
                                 "(a stable ReLU's slope is CROWN's)",
                                 cert_path, where, q, k, d->alpha[k], alpha[k]);
        for (size_t k = 0; k < nb && !e; k++) /* taken as given: returned unchanged */
            if (vt_f64_bits(beta[k]) != vt_f64_bits(d->beta[k]))
                e = vt_set_error(VT_ERR_MISMATCH, "%s: %s: multiplier %zu is not the one recomputed", cert_path, wn, k);
        const uint8_t *rl = rb + nb * 8;
        for (uint32_t j = 0; j < C && !e; j++)
            if (vt_get_u64le(rl + 8 * (size_t)j) != vt_f64_bits(lb[j]))
                e = vt_set_error(VT_ERR_MISMATCH,
                                 "%s: %s: split tree node %u (a leaf): %s %u's recorded bound is not the one its "
                                 "slopes give (%.17g; a changed slope or split?)",
                                 cert_path, where, q, p->what, j, lb[j]);
        if (!e) {
            if (t->na) memcpy(d->alpha, alpha, t->na * sizeof *alpha);
            memcpy(d->lb, lb, C * sizeof *lb);
        }
    }
    vt_cert_set_splits(c, NULL, 0);
    free(lb), free(alpha), free(sp), free(beta), free(row);
    return e;
}
