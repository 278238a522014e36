/* vt_cert_bab.c - branch and bound on ReLU splits for a committed MLP run (`certify --method
 * beta-crown`, docs/certify.md "Branch and bound"): the search (breadth first, in creation order, a
 * BaBSR-like choice of the ReLU to split), the split tree a certificate records (version 5,
 * docs/format.md "Certificate") and its one-pass replay by check-certificate (no search: each leaf's
 * bound recomputed from its recorded slopes, rejected when it does not close, naming the node).
 * Every subdomain's bound is alpha-CROWN's sound bound (vt_cert_bound.c) with the splits' clamps and
 * beta-CROWN's multipliers. Over threads and ranks (docs/certify.md "Parallel search"): the search
 * bounds rounds of subdomains on the workers (the caller's context and copies of it; under mpirun
 * --shard none each rank a part of the round, the outcomes gathered) and merges their outcomes in
 * creation order, the replay checks nodes on them and reports the first failure in node order: the
 * tree, the bytes and the verdict do not depend on the number of threads or ranks. A property of few
 * inputs splits its input box instead of ReLUs (input splitting; versions 8, 9). */
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/vt_bytes.h"
#include "../common/vt_par.h"
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
    d->rdepth = parent < 0 ? 0 : t->v[parent].rdepth + (t->v[parent].split == 1);
    if (parent >= 0) t->v[parent].kid[side] = (int32_t)t->n;
    t->n++;
    return VT_OK;
}

/* The ReLU splits from the root to node q (root first; their number returned) and, with xl not NULL,
 * its box: pr's cut by the path's input splits (x_i <= at on the first side, >= at on the second). */
static uint32_t path_of(const vti_bab_tree *t, uint32_t q, vt_cert_split *sp, const vti_bab_prob *pr, double *xl,
                        double *xu)
{
    uint32_t n = t->v[q].rdepth;
    if (xl) memcpy(xl, pr->xl, pr->d * sizeof *xl), memcpy(xu, pr->xu, pr->d * sizeof *xu);
    for (int32_t x = (int32_t)q, k = (int32_t)n - 1; t->v[x].parent >= 0; x = t->v[x].parent) {
        const vti_bab_node *p = &t->v[t->v[x].parent];
        if (p->split == 2) {
            if (xl && p->index < pr->d && t->v[x].side == 0 && p->at < xu[p->index]) xu[p->index] = p->at;
            if (xl && p->index < pr->d && t->v[x].side == 1 && p->at > xl[p->index]) xl[p->index] = p->at;
            continue;
        }
        sp[k].layer = p->layer, sp[k].index = p->index, sp[k].active = t->v[x].side == 0;
        k--;
    }
    return n;
}

/* A leaf's number of multipliers: one per margin and ReLU split above it. */
static size_t n_beta(const vti_bab_tree *t, uint32_t q) { return (size_t)t->R * t->v[q].rdepth; }

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

void vti_bab_order(const double *key, uint32_t n, uint32_t *order)
{
    for (uint32_t i = 0; i < n; i++) { /* insertion: stable, n small */
        uint32_t q = i;
        while (q > 0 && key[order[q - 1]] > key[i]) order[q] = order[q - 1], q--;
        order[q] = i;
    }
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
} margins;

static vt_err margins_bound(vti_bab_prob *p, vt_cert_ctx *c, const double *xl, const double *xu, double *lb, double *alpha)
{
    margins *m = p->ctx;
    return vt_cert_bounds(c, xl, xu, m->label, m->s, lb, alpha);
}

static double margins_worst(vti_bab_prob *p, const double *lb, double *row, uint32_t *r, uint32_t *which)
{
    margins *m = p->ctx;
    uint32_t jmin;
    double mn = min_margin(lb, m->C, m->label, &jmin);
    *which = jmin;
    memset(row, 0, m->C * sizeof *row);
    row[m->label] = 1, row[jmin] = -1;
    *r = jmin - (jmin > m->label);
    return mn;
}

/* The subdomain's candidate: the point where the pass of its worst margin is smallest, in FP32 in the
 * ball; handed to confirm (the project's evaluation decides) when the FP64 network misclassifies it;
 * else the attack from that point on that margin's class (vti_cert_attack_from: attack_iters steps). */
static vt_err margins_candidate(vti_bab_prob *p, vt_cert_ctx *c, const double *pt, uint32_t jmin, int *found)
{
    margins *m = p->ctx;
    const vti_bab_attack *at = m->at;
    if (!at) return VT_OK;
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
    vt_cert_settings sa = *m->s; /* the search's short attack */
    if (sa.attack_iters > VTI_BAB_ATTACK_ITERS) sa.attack_iters = VTI_BAB_ATTACK_ITERS;
    return vti_cert_attack_from(c, at->x, at->eps, m->label, m->xf, jmin, &sa, at->confirm, at->cctx, at->cex, found);
}

/* The margins closest to failing in the parent first, each its own group (ties: the class order). */
static void margins_plan(vti_bab_prob *p, const double *plb, uint32_t *order, uint8_t *last, uint32_t *lbi, double *key)
{
    margins *m = p->ctx;
    for (uint32_t r = 0; r < p->R; r++) lbi[r] = r + (r >= m->label), last[r] = 1, key[r] = plb[lbi[r]];
    vti_bab_order(key, p->R, order);
}

static vt_err margins_open(vt_cert_ctx *c, margins *m, vti_bab_prob *p)
{
    uint32_t d = m->at ? m->at->d : 1, maxw = vt_cert_max_width(c);
    m->lg = malloc((maxw > m->C ? maxw : m->C) * sizeof *m->lg), m->xd = malloc(d * sizeof *m->xd);
    m->xf = malloc(d * sizeof *m->xf);
    memset(p, 0, sizeof *p);
    p->R = m->C - 1, p->nlb = m->C, p->what = "margin", p->ctx = m, p->progress = m->at && m->at->progress;
    p->xl = m->xl, p->xu = m->xu, p->d = vti_cert_in_width(c);
    p->bound = margins_bound, p->worst = margins_worst, p->candidate = margins_candidate, p->plan = margins_plan;
    return !m->lg || !m->xd || !m->xf ? vt_set_error(VT_ERR_NOMEM, "out of memory") : VT_OK;
}

static void margins_close(margins *m) { free(m->lg), free(m->xd), free(m->xf); }

vt_err vti_bab_search(vt_cert_ctx *c, const double *xl, const double *xu, uint32_t label, const vt_cert_settings *s,
                      uint32_t C, vti_bab_tree *t, int *closed, uint32_t *bounded, const vti_bab_attack *at, int *found)
{
    margins m = {xl, xu, label, C, s, at, NULL, NULL, NULL};
    vti_bab_prob p;
    vt_err e = margins_open(c, &m, &p);
    if (!e) e = vti_bab_search_p(c, &p, s, t, closed, bounded, found);
    else *closed = 0, *bounded = 0, *found = 0;
    margins_close(&m);
    return e;
}

/* ---------------------------------------------------------------- the workers */

/* The contexts subdomains are bounded on: the caller's (worker 0) and, with `--threads N` (N > 1)
 * and no sharding, N - 1 copies reading its weights (vti_cert_ctx_fork), each with its own splits,
 * multipliers and work, so that a subdomain's bound is the same bits on whichever worker. */
typedef struct {
    int n;
    vt_cert_ctx *c[VT_PAR_MAX];
    vt_cert_split *sp[VT_PAR_MAX];
    double *row[VT_PAR_MAX], *lb[VT_PAR_MAX], *alpha[VT_PAR_MAX], *beta[VT_PAR_MAX], *xl[VT_PAR_MAX], *xu[VT_PAR_MAX];
    /* the replay: the splits of the leaf a worker bounded last (psp, pn), whose layers its context holds */
    vt_cert_split *psp[VT_PAR_MAX];
    uint32_t pn[VT_PAR_MAX];
    /* the search: a child's row plan (vt_cert_set_row_plan; workers_plan) */
    uint32_t *order[VT_PAR_MAX], *lbi[VT_PAR_MAX];
    uint8_t *last[VT_PAR_MAX], *skip[VT_PAR_MAX];
    double *key[VT_PAR_MAX];
} workers;

static void workers_close(workers *w)
{
    for (int k = 0; k < w->n; k++) {
        if (k > 0) vt_cert_ctx_free(w->c[k]);
        free(w->sp[k]), free(w->row[k]), free(w->lb[k]), free(w->alpha[k]), free(w->beta[k]), free(w->xl[k]), free(w->xu[k]);
        free(w->psp[k]), free(w->order[k]), free(w->lbi[k]), free(w->last[k]), free(w->skip[k]), free(w->key[k]);
    }
    w->n = 0;
}

/* Each worker's row plan work for R rows. */
static vt_err workers_plan(workers *w, uint32_t R)
{
    size_t n = R ? R : 1;
    for (int k = 0; k < w->n; k++) {
        w->order[k] = malloc(n * sizeof *w->order[k]), w->lbi[k] = malloc(n * sizeof *w->lbi[k]);
        w->last[k] = malloc(n), w->skip[k] = malloc(n), w->key[k] = malloc(n * sizeof *w->key[k]);
        if (!w->order[k] || !w->lbi[k] || !w->last[k] || !w->skip[k] || !w->key[k])
            return vt_set_error(VT_ERR_NOMEM, "out of memory");
    }
    return VT_OK;
}

/* nlb, na: a subdomain's bounds and slopes (the replay's work; the search keeps them per subdomain). */
static vt_err workers_open(workers *w, vt_cert_ctx *c, uint32_t nlb, size_t na, uint32_t R)
{
    memset(w, 0, sizeof *w);
    vt_cert_shard mode;
    int n = vti_cert_shard_comm(&mode) ? 1 : vt_par_threads();
    n = n < 1 ? 1 : n > VT_PAR_MAX ? VT_PAR_MAX : n;
    uint32_t no = vt_cert_out_width(c);
    vt_err e = VT_OK;
    for (int k = 0; k < n && !e; k++) {
        w->c[k] = c;
        if (k > 0) e = vti_cert_ctx_fork(c, &w->c[k]);
        w->n = k + 1;
        w->sp[k] = malloc(VTI_BAB_MAX_DEPTH * sizeof *w->sp[k]), w->row[k] = malloc(no * sizeof *w->row[k]);
        w->psp[k] = malloc(VTI_BAB_MAX_DEPTH * sizeof *w->psp[k]), w->pn[k] = UINT32_MAX; /* no leaf yet */
        w->lb[k] = malloc((nlb ? nlb : 1) * sizeof *w->lb[k]), w->alpha[k] = malloc((na ? na : 1) * sizeof(double));
        w->beta[k] = malloc(((size_t)R * VTI_BAB_MAX_DEPTH + 1) * sizeof(double));
        w->xl[k] = malloc(vti_cert_in_width(c) * sizeof(double)), w->xu[k] = malloc(vti_cert_in_width(c) * sizeof(double));
        if (!e && (!w->sp[k] || !w->psp[k] || !w->row[k] || !w->lb[k] || !w->alpha[k] || !w->beta[k] || !w->xl[k] || !w->xu[k]))
            e = vt_set_error(VT_ERR_NOMEM, "out of memory");
    }
    if (e) workers_close(w);
    return e;
}

/* A round's subdomains handed out in increasing order to whichever worker is free: each part of
 * vt_par_for is one worker (its context: the part's index) taking the next one until none is left,
 * or (stop set) until one has failed. */
typedef struct {
    workers *w;
    atomic_uint next;
    atomic_int stop;
    uint32_t n;
    void (*one)(void *job, int worker, uint32_t i);
    void *job;
} pool_run;

static void pool_part(void *ctx, size_t lo, size_t hi, int part)
{
    (void)lo, (void)hi;
    pool_run *r = ctx;
    for (;;) {
        if (atomic_load(&r->stop)) break;
        unsigned i = atomic_fetch_add(&r->next, 1u);
        if (i >= r->n) break;
        r->one(r->job, part, i);
    }
}

static void pool_each(workers *w, uint32_t n, void (*one)(void *job, int worker, uint32_t i), void *job)
{
    pool_run r;
    r.w = w, r.n = n, r.one = one, r.job = job;
    atomic_init(&r.next, 0u);
    atomic_init(&r.stop, 0);
    if (w->n <= 1 || n <= 1) pool_part(&r, 0, 1, 0);
    else (void)vt_par_for((size_t)(w->n < (int)n ? w->n : (int)n), 1, pool_part, &r);
}

/* ---------------------------------------------------------------- the search */

static vt_comm *g_bab_comm; /* vt_cert_set_bab_comm */

void vt_cert_set_bab_comm(vt_comm *comm) { g_bab_comm = comm && vt_dist_size(comm) > 1 ? comm : NULL; }

/* One subdomain bounded by a worker: its bounds, slopes and multipliers, its worst measure, the split
 * the choice makes and the branching pass's point (when it does not close); merged in creation order. */
typedef struct {
    vt_err e;
    char msg[320];
    int timed, more, reused; /* reused: bounded here from the parent's saved layers */
    uint32_t skipped;        /* rows not bounded (the row plan), their parent's bounds taken */
    double mn, at;
    uint32_t r, which, layer, index;
    double *rec, *lb, *alpha, *beta, *pt; /* rec: the record ranks exchange (BAB_HDR values, then the rest) */
    double *pre; /* a split subdomain bounded here: its layers 1..layer's bounds (vt_cert_prefix_save), or NULL */
} bab_out;

/* Over ranks: a subdomain's outcome travels as its record, the scalars first (each exact in a double). */
#define BAB_HDR 9u
static void out_pack(bab_out *o)
{
    double *h = o->rec;
    h[0] = o->timed, h[1] = o->more, h[2] = o->mn, h[3] = o->r, h[4] = o->which, h[5] = o->layer, h[6] = o->index, h[7] = o->at;
    h[8] = o->skipped;
}

static void out_unpack(bab_out *o)
{
    const double *h = o->rec;
    o->e = VT_OK, o->timed = h[0] != 0, o->more = h[1] != 0, o->mn = h[2];
    o->r = (uint32_t)h[3], o->which = (uint32_t)h[4], o->layer = (uint32_t)h[5], o->index = (uint32_t)h[6], o->at = h[7];
    o->skipped = (uint32_t)h[8];
}

typedef struct {
    vti_bab_prob *p;
    const vt_cert_settings *s;
    const vti_bab_tree *t;
    workers *w;
    uint32_t q0, nar, d;
    bab_out *o;          /* from the round's first subdomain of this rank */
    double *const *pre;  /* per node below npre: its saved prefix (NULL: none; pre NULL: VT_CERT_BAB_REUSE=0) */
    uint32_t npre;
    int plan;            /* the children's row plan (VT_CERT_BAB_PLAN=0: none, every row bounded) */
} bab_round;

/* A leaf's bounds as check-certificate computes them: its slopes (NULL: none) and multipliers given,
 * one pass a row (the replay, and the search's second bound of a subdomain that closes). */
static vt_err bound_leaf(vti_bab_prob *p, vt_cert_ctx *c, const double *xl, const double *xu, const double *alpha_given,
                         const double *beta_given, double *lb, double *alpha, double *beta)
{
    vt_cert_set_given_slopes(c, alpha_given);
    vt_cert_set_split_beta(c, beta_given, beta);
    vt_err e = p->bound(p, c, xl, xu, lb, alpha);
    vt_cert_set_given_slopes(c, NULL);
    vt_cert_set_split_beta(c, NULL, NULL);
    return e;
}

static void bound_one(void *job, int k, uint32_t i)
{
    bab_round *b = job;
    bab_out *o = &b->o[i];
    vt_cert_ctx *c = b->w->c[k];
    double *xl = b->w->xl[k], *xu = b->w->xu[k];
    uint32_t q = b->q0 + i, nr = path_of(b->t, q, b->w->sp[k], b->p, xl, xu);
    int32_t par = b->t->v[q].parent;
    /* the parent's layers up to its split's, when this process bounded it and kept them */
    const double *pre = b->pre && par >= 0 && (uint32_t)par < b->npre && b->t->v[par].split == 1 ? b->pre[par] : NULL;
    vt_cert_set_splits(c, b->w->sp[k], nr);
    vt_cert_set_prefix(c, pre, pre ? b->t->v[par].layer : 0);
    o->reused = pre != NULL;
    vt_cert_set_bab_search(c, 1);
    /* input splitting overrides the ReLU choice: the scores alone, not fsb's passes, for the point */
    vt_cert_set_branching(c, b->p->input_split ? VT_CERT_BRANCH_BABSR : (vt_cert_branching)b->s->bab_branching);
    /* the parent's slopes and multipliers as the start; and its bounds: its rows closest to failing
     * first, the rest not bounded once one fails (the subdomain splits), the parent's bounds for them */
    const double *plb = par >= 0 && b->t->v[par].alpha ? b->t->v[par].lb : NULL;
    if (par >= 0 && b->t->v[par].alpha)
        vt_cert_set_warm(c, b->t->v[par].alpha, b->t->v[par].beta, b->t->v[par].rdepth);
    if (plb && b->p->plan && b->plan) {
        b->p->plan(b->p, plb, b->w->order[k], b->w->last[k], b->w->lbi[k], b->w->key[k]);
        vt_cert_set_row_plan(c, b->w->order[k], b->w->last[k], b->p->R, b->w->skip[k]);
    }
    vt_cert_set_split_beta(c, NULL, o->beta);
    o->e = b->p->bound(b->p, c, xl, xu, o->lb, o->alpha);
    vt_cert_set_split_beta(c, NULL, NULL);
    if (plb && b->p->plan && b->plan) {
        vt_cert_set_row_plan(c, NULL, NULL, 0, NULL);
        for (uint32_t r = 0; !o->e && r < b->p->R; r++)
            if (b->w->skip[k][r]) o->lb[b->w->lbi[k][r]] = plb[b->w->lbi[k][r]], o->skipped++;
    }
    o->more = 0, o->mn = -INFINITY;
    if (!o->e) o->mn = b->p->worst(b->p, o->lb, b->w->row[k], &o->r, &o->which);
    if (!o->e && o->mn > 0 && vti_cert_logits_deferred(c)) {
        /* A leaf, bounded with its logits' IBP bounds: bounded again as the check bounds it (its slopes
         * and multipliers given, one pass a row, the logits' CROWN bounds; its hidden layers kept), so
         * that it records the bounds check-certificate recomputes (docs/certify.md "Branch and bound") */
        size_t na = b->t->na, nb = (size_t)b->p->R * nr;
        double *ga = malloc((na + nb + 1) * sizeof *ga); /* the given slopes, then multipliers */
        if (!ga)
            o->e = vt_set_error(VT_ERR_NOMEM, "out of memory");
        else {
            memcpy(ga, o->alpha, na * sizeof *ga);
            memcpy(ga + na, o->beta, nb * sizeof *ga);
            vt_cert_set_bab_search(c, 0);
            vt_cert_set_keep(c, UINT32_MAX); /* every hidden layer as it is */
            o->e = bound_leaf(b->p, c, xl, xu, na ? ga : NULL, ga + na, o->lb, o->alpha, o->beta);
            vt_cert_set_bab_search(c, 1);
            free(ga);
        }
        o->mn = o->e ? -INFINITY : b->p->worst(b->p, o->lb, b->w->row[k], &o->r, &o->which);
    }
    if (!o->e) {
        if (!(o->mn > 0) && o->mn > -INFINITY) {
            const double *ar = b->s->method == VT_CERT_ALPHA_CROWN ? o->alpha + (size_t)o->r * b->nar : NULL;
            o->more = vt_cert_branch_pick(c, b->w->row[k], ar, &o->layer, &o->index);
            memcpy(o->pt, vt_cert_last_point(c), b->d * sizeof *o->pt);
            if (b->p->input_split) { /* the widest side of the box (the lowest input on ties), at its midpoint */
                uint32_t iw = 0;
                for (uint32_t q = 1; q < b->d; q++)
                    if (xu[q] - xl[q] > xu[iw] - xl[iw]) iw = q;
                double mid = xl[iw] + 0.5 * (xu[iw] - xl[iw]);
                o->more = xl[iw] < mid && mid < xu[iw], o->layer = 0, o->index = iw, o->at = mid;
            }
            /* its children recompute nothing up to the split's layer (layer 1's bounds are IBP's: cheap) */
            if (o->more && b->pre && !b->p->input_split && o->layer >= 2 && !vt_cert_timed_out(c)) {
                o->pre = malloc(vt_cert_prefix_len(c, o->layer) * sizeof *o->pre);
                if (o->pre) vt_cert_prefix_save(c, o->layer, o->pre);
            }
        }
    } else
        snprintf(o->msg, sizeof o->msg, "%s", vt_errmsg());
    vt_cert_set_prefix(c, NULL, 0);
    vt_cert_set_warm(c, NULL, NULL, 0);
    vt_cert_set_bab_search(c, 0);
    vt_cert_set_splits(c, NULL, 0);
    o->timed = vt_cert_timed_out(c);
}

/* Subdomains bounded per round and worker: the round's size does not change the tree (every
 * subdomain's outcome is its own, merged in creation order), only the work past a stop. */
#define BAB_ROUND_PER_WORKER 8u

vt_err vti_bab_search_p(vt_cert_ctx *c, vti_bab_prob *p, const vt_cert_settings *s, vti_bab_tree *t, int *closed,
                        uint32_t *bounded, int *found)
{
    *closed = 0, *bounded = 0, *found = 0;
    vti_bab_free(t);
    size_t na = vt_cert_n_alpha_row(c) * p->R, nar = vt_cert_n_alpha_row(c);
    uint32_t R = p->R, d = vti_cert_in_width(c);
    t->na = na, t->R = R, t->C = p->nlb;
    workers w;
    vt_err e = workers_open(&w, c, 0, 0, 0);
    if (e) return e;
    /* over ranks: every rank's workers counted (the round's size must be every rank's) */
    vt_comm *comm = g_bab_comm;
    int64_t nw = w.n;
    if (comm) e = vt_dist_allreduce_i64(comm, &nw, 1);
    uint32_t cap = BAB_ROUND_PER_WORKER * (uint32_t)(nw < 1 ? 1 : nw > 4096 ? 4096 : nw);
    bab_out *o = calloc(cap, sizeof *o);
    double *buf = NULL, *tmp = NULL;
    size_t *bytes = NULL, room = 0;
    if (!e && !o) e = vt_set_error(VT_ERR_NOMEM, "out of memory");
    if (!e && comm && !(bytes = calloc((size_t)vt_dist_size(comm), sizeof *bytes))) e = vt_set_error(VT_ERR_NOMEM, "out of memory");
    /* the children's row plan (docs/certify.md "Branch and bound"; it changes the tree, so every
     * rank's setting counts: VT_CERT_BAB_PLAN=0 on any rank turns it off) */
    const char *pl = getenv("VT_CERT_BAB_PLAN");
    int64_t pon = !(pl && strcmp(pl, "0") == 0);
    if (comm) { /* every rank joins the collective, whatever failed before it (the agreement follows) */
        vt_err pe = vt_dist_allreduce_i64(comm, &pon, 1);
        if (!e) e = pe;
    }
    int plan = pon == (comm ? vt_dist_size(comm) : 1);
    if (!e && plan) e = workers_plan(&w, R);
    if (comm) e = vt_dist_agree(comm, e, NULL);
    if (!e) e = add_node(t, -1, 0);
    /* the split subdomains' saved layers, per node, until both children are bounded (docs/certify.md
     * "What the search saves"; the same bits as without: VT_CERT_BAB_REUSE=0 keeps none) */
    const char *reuse = getenv("VT_CERT_BAB_REUSE");
    int keep = !(reuse && strcmp(reuse, "0") == 0);
    uint32_t pcap = keep ? 64 : 0;
    double **pre = keep ? calloc(pcap, sizeof *pre) : NULL;
    size_t pbytes = 0, wbytes = 0; /* saved layers (this process's), warm starts (the same on every rank) */
    if (keep && !pre) keep = 0, pcap = 0; /* only slower */
    int stopped = 0;
    for (uint32_t q0 = 0; !e && !stopped && q0 < t->n;) { /* breadth first: rounds of nodes in creation order */
        uint32_t left = s->bab_domains > *bounded ? s->bab_domains - *bounded : 1, nq = t->n - q0, mr = 0;
        nq = nq < cap ? nq : cap, nq = nq < left ? nq : left;
        for (uint32_t i = 0; i < nq; i++) mr = t->v[q0 + i].rdepth > mr ? t->v[q0 + i].rdepth : mr;
        /* a subdomain's record: the scalars, bounds, slopes, multipliers (R per ReLU split; the round's
         * deepest), point; the same size on every rank (the same tree) */
        size_t per = BAB_HDR + (size_t)p->nlb + na + (size_t)R * mr + d;
        if (nq * per > room) {
            double *nb = realloc(buf, nq * per * sizeof *nb), *nt = comm ? realloc(tmp, nq * per * sizeof *nt) : NULL;
            if (nb) buf = nb;
            if (nt) tmp = nt;
            vt_err me = !nb || (comm && !nt) ? vt_set_error(VT_ERR_NOMEM, "out of memory") : VT_OK;
            if (comm) me = vt_dist_agree(comm, me, NULL);
            if (me) {
                e = me;
                break;
            }
            room = nq * per;
        }
        for (uint32_t i = 0; i < nq; i++) {
            double *b = buf + i * per;
            o[i].rec = b, b += BAB_HDR;
            o[i].lb = b, o[i].alpha = b + p->nlb, o[i].beta = b + p->nlb + na, o[i].pt = b + p->nlb + na + (size_t)R * mr;
        }
        if (comm) { /* this rank's part of the round, then every part gathered (copied, in rank order) */
            int rk = vt_dist_rank(comm), sz = vt_dist_size(comm);
            uint32_t lo = (uint32_t)vti_cert_part_lo(nq, rk, sz), hi = (uint32_t)vti_cert_part_lo(nq, rk + 1, sz);
            bab_round br = {p, s, t, &w, q0 + lo, (uint32_t)nar, d, o + lo, pre, pcap, plan};
            pool_each(&w, hi - lo, bound_one, &br);
            vt_err mine = VT_OK;
            for (uint32_t i = lo; i < hi; i++) {
                if (o[i].e && !mine) mine = vt_set_error(o[i].e, "%s", o[i].msg);
                out_pack(&o[i]);
            }
            e = vt_dist_agree(comm, mine, NULL); /* the lowest failing rank's: its first failed subdomain */
            if (!e) e = vti_cert_share_rows(comm, buf, nq, per, tmp, bytes);
            for (uint32_t i = 0; !e && i < nq; i++) out_unpack(&o[i]);
        } else {
            bab_round br = {p, s, t, &w, q0, (uint32_t)nar, d, o, pre, pcap, plan};
            pool_each(&w, nq, bound_one, &br);
        }
        for (uint32_t i = 0; i < nq && !e; i++)
            if (o[i].timed) vti_cert_ctx_time_out(c);
        for (uint32_t i = 0; i < nq && !e && !stopped; i++) { /* merged in creation order */
            uint32_t q = q0 + i, depth = t->v[q].depth;
            const bab_out *r = &o[i];
            if (r->e) {
                e = vt_set_error(r->e, "%s", r->msg);
                break;
            }
            ++*bounded;
            t->reused += (uint32_t)r->reused, t->skipped += r->skipped;
            int32_t par = t->v[q].parent;
            if (par >= 0 && t->v[q].side == 1) { /* both children bounded: the parent's start and layers go */
                vti_bab_node *pd = &t->v[par];
                if (pd->alpha) wbytes -= (t->na + n_beta(t, (uint32_t)par) + t->C) * sizeof(double);
                free(pd->alpha), free(pd->beta), free(pd->lb), pd->alpha = pd->beta = pd->lb = NULL;
                if (keep && (uint32_t)par < pcap && pre[par]) { /* pre grows only as far as a node kept */
                    pbytes -= vt_cert_prefix_len(c, pd->layer) * sizeof(double);
                    free(pre[par]), pre[par] = NULL;
                }
            }
            if (p->progress && *bounded % 100 == 0)
                fprintf(stderr, "branch and bound: %u subdomains bounded, %u nodes, depth %u\n", *bounded, t->n, depth);
            if (r->mn > 0 && !r->timed) { /* a leaf (one cut short by the deadline is not: the search stops) */
                e = set_leaf(t, q, r->alpha, r->beta, r->lb);
                continue;
            }
            if (!(r->mn > -INFINITY) || vt_cert_timed_out(c) || *bounded >= s->bab_domains || depth + 1 >= VTI_BAB_MAX_DEPTH) {
                stopped = 1;
                break;
            }
            vti_cert_set_estimate(c, 1); /* the short attack steers by estimates; the confirmation is exact */
            e = p->candidate(p, c, r->pt, r->which, found); /* the pass's smallest point, confirmed */
            vti_cert_set_estimate(c, 0);
            if (e) break;
            if (*found || !r->more) { /* a counterexample, or nothing left to split (the relaxation is exact) */
                stopped = 1;
                break;
            }
            size_t wb = (t->na + n_beta(t, q) + t->C) * sizeof(double);
            if (wbytes + wb <= VTI_BAB_WARM_MAX_BYTES) { /* its children's warm start, until they are bounded */
                e = set_leaf(t, q, r->alpha, r->beta, r->lb);
                if (e) break;
                wbytes += wb;
            }
            t->v[q].layer = r->layer, t->v[q].index = r->index, t->v[q].split = p->input_split ? 2 : 1;
            t->v[q].at = p->input_split ? r->at : 0;
            t->inputs |= p->input_split;
            e = add_node(t, (int32_t)q, 0);
            if (!e) e = add_node(t, (int32_t)q, 1);
            size_t pb = r->pre ? vt_cert_prefix_len(c, r->layer) * sizeof(double) : 0;
            if (!e && keep && pb && pbytes + pb <= VTI_BAB_PREFIX_MAX_BYTES) { /* kept for its children */
                if (t->n > pcap) {
                    uint32_t nc = pcap;
                    while (nc < t->n) nc *= 2;
                    double **np = realloc(pre, nc * sizeof *np);
                    if (!np) continue; /* not kept: the children compute those layers */
                    memset(np + pcap, 0, (nc - pcap) * sizeof *np);
                    pre = np, pcap = nc;
                }
                pre[q] = o[i].pre, o[i].pre = NULL, pbytes += pb;
            }
        }
        for (uint32_t i = 0; i < nq; i++) free(o[i].pre), o[i].pre = NULL, o[i].reused = 0, o[i].skipped = 0;
        q0 += nq;
    }
    if (!e && !stopped) *closed = 1;
    for (uint32_t q = 0; q < pcap; q++) free(pre[q]);
    free(pre);
    workers_close(&w);
    free(o), free(buf), free(tmp), free(bytes);
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
        if (d->split == 2) { /* an input split: the input, where (versions 8, 9) */
            vti_put32(o, 2), vti_put32(o, d->index), vti_put64(o, vt_f64_bits(d->at));
            st[sn++] = (uint32_t)d->kid[1], st[sn++] = (uint32_t)d->kid[0];
        } else if (d->split) {
            vti_put32(o, 1), vti_put32(o, d->layer), vti_put32(o, d->index);
            st[sn++] = (uint32_t)d->kid[1], st[sn++] = (uint32_t)d->kid[0];
        } else if (!d->alpha || !d->lb || !d->beta) { /* a leaf never bounded (an incomplete search's): not a tree to write */
            o->bad = 1;
            break;
        } else {
            vti_put32(o, 0);
            for (size_t k = 0; k < t->na; k++) vti_put64(o, vt_f64_bits(d->alpha[k]));
            for (size_t k = 0; k < (size_t)t->R * d->rdepth; k++) vti_put64(o, vt_f64_bits(d->beta[k]));
            for (uint32_t j = 0; j < t->C; j++) vti_put64(o, vt_f64_bits(d->lb[j]));
        }
    }
    free(st);
}

vt_err vti_bab_scan(const uint8_t *p, size_t avail, size_t na, uint32_t C, const char *where, vti_bab_tree *t,
                    size_t *used)
{
    return vti_bab_scan_rows(p, avail, na, C - 1, C, 0, 0, where, t, used);
}

vt_err vti_bab_scan_rows(const uint8_t *p, size_t avail, size_t na, uint32_t R, uint32_t C, int inputs, uint32_t d,
                         const char *where, vti_bab_tree *t, size_t *used)
{
    VT_RETURN_ERROR_IF(avail < 4, VT_ERR_FORMAT, "certificate: %s: its split tree is truncated", where);
    uint32_t N = vt_get_u32le(p);
    VT_RETURN_ERROR_IF(N < 1 || N > VTI_BAB_MAX_NODES || (uint64_t)N * 4 > avail - 4, VT_ERR_FORMAT,
                       "certificate: %s: a split tree of %u nodes", where, N);
    size_t leaf = (na + C) * 8, off = 4;
    if (t) vti_bab_free(t), t->na = na, t->R = R, t->C = C;
    /* the internal nodes still waiting for a child: index, children seen */
    uint32_t *st = malloc((size_t)N * sizeof *st), sn = 0, *seen = calloc(N, sizeof *seen), *dep = calloc(N, sizeof *dep);
    uint32_t *lay = calloc(N, sizeof *lay), *idx = calloc(N, sizeof *idx), *rdep = calloc(N, sizeof *rdep);
    uint8_t *kd = calloc(N, 1);
    vt_err e = !st || !seen || !dep || !lay || !idx || !rdep || !kd ? vt_set_error(VT_ERR_NOMEM, "out of memory") : VT_OK;
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
        rdep[q] = q ? rdep[parent] + (kd[parent] == 1) : 0;
        size_t lsz = leaf + (size_t)R * rdep[q] * 8; /* a leaf: slopes, multipliers (per ReLU split), bounds */
        if (kind > (inputs ? 2u : 1u) || avail - off - 4 < (kind == 2 ? 12 : kind ? 8 : lsz) || dep[q] >= VTI_BAB_MAX_DEPTH) {
            e = vt_set_error(VT_ERR_FORMAT, "certificate: %s: split tree node %u is malformed or truncated", where, q);
            break;
        }
        uint32_t side = q ? seen[parent] : 0;
        if (t) e = add_node(t, q ? (int32_t)parent : -1, side); /* preorder: node q is t->v[q] */
        if (e) break;
        if (q && ++seen[parent] == 2) sn--;
        off += 4;
        kd[q] = (uint8_t)kind;
        if (kind == 2) { /* an input split: the input, where (finite) */
            idx[q] = vt_get_u32le(p + off);
            double at = vt_bits_f64(vt_get_u64le(p + off + 4));
            if (idx[q] >= d || !isfinite(at)) {
                e = vt_set_error(VT_ERR_FORMAT, "certificate: %s: split tree node %u splits input %u at %g (of %u inputs)",
                                 where, q, idx[q], at, d);
                break;
            }
            if (t) t->v[q].split = 2, t->v[q].index = idx[q], t->v[q].at = at, t->inputs = 1;
            st[sn++] = q;
            off += 12;
        } else if (kind) {
            lay[q] = vt_get_u32le(p + off), idx[q] = vt_get_u32le(p + off + 4);
            if (t) t->v[q].split = 1, t->v[q].layer = lay[q], t->v[q].index = idx[q];
            st[sn++] = q;
            off += 8;
        } else {
            if (t) {
                t->v[q].rec = p + off;
                size_t nb = (size_t)R * rdep[q];
                t->v[q].alpha = malloc((na ? na : 1) * sizeof(double)), t->v[q].lb = malloc(C * sizeof(double));
                t->v[q].beta = malloc((nb ? nb : 1) * sizeof(double));
                if (!t->v[q].alpha || !t->v[q].lb || !t->v[q].beta) e = vt_set_error(VT_ERR_NOMEM, "out of memory");
            }
            off += lsz;
        }
    }
    if (!e && sn && kd[st[sn - 1]] == 2) /* a missing branch: the leaves would not cover the parent */
        e = vt_set_error(VT_ERR_FORMAT, "certificate: %s: split tree node %u (input %u) lacks its %s child", where,
                         st[sn - 1], idx[st[sn - 1]], seen[st[sn - 1]] ? "upper" : "lower");
    else if (!e && sn)
        e = vt_set_error(VT_ERR_FORMAT, "certificate: %s: split tree node %u (layer %u neuron %u) lacks its %s child",
                         where, st[sn - 1], lay[st[sn - 1]], idx[st[sn - 1]], seen[st[sn - 1]] ? "inactive" : "active");
    free(st), free(seen), free(dep), free(lay), free(idx), free(rdep), free(kd);
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
    margins m = {xl, xu, label, t->C, s, NULL, NULL, NULL, NULL};
    vti_bab_prob p;
    vt_err e = margins_open(c, &m, &p);
    if (!e) e = vti_bab_replay_p(c, net, &p, t, cert_path, where, closed);
    margins_close(&m);
    return e;
}

/* One node of the replay (any worker): an internal node's split checked against its path, a leaf's
 * bound recomputed from its recorded slopes and multipliers and compared. */
typedef struct {
    const vt_cert_net *net;
    vti_bab_prob *p;
    vti_bab_tree *t;
    const char *cert_path, *where;
    workers *w;
    vt_err *e;
    char (*msg)[400];
    uint8_t *open; /* a leaf that does not close (a one-node tree's root) */
    atomic_int *failed;
    uint32_t lo; /* over ranks: this rank's first node */
} replay_job;

static vt_err replay_node(replay_job *j, int k, uint32_t q)
{
    vti_bab_tree *t = j->t;
    const vt_cert_net *net = j->net;
    const char *cert_path = j->cert_path, *where = j->where;
    vti_bab_prob *p = j->p;
    vt_cert_ctx *c = j->w->c[k];
    vt_cert_split *sp = j->w->sp[k];
    double *lb = j->w->lb[k], *alpha = j->w->alpha[k], *beta = j->w->beta[k], *xl = j->w->xl[k], *xu = j->w->xu[k];
    uint32_t C = t->C, R = t->R;
    vt_err e = VT_OK;
    vti_bab_node *d = &t->v[q];
    uint32_t nr = path_of(t, q, sp, p, xl, xu), depth = d->depth;
    if (d->split == 2) { /* an input split strictly inside its node's box: both sides non-empty, covering it */
        if (d->index >= p->d || !(xl[d->index] < d->at && d->at < xu[d->index]))
            return vt_set_error(VT_ERR_MISMATCH, "%s: %s: split tree node %u splits input %u at %.17g, not inside its box",
                                cert_path, where, q, d->index, d->at);
        return VT_OK;
    }
    if (d->split) { /* a split of a hidden ReLU, not one already split above it */
        if (d->layer < 1 || d->layer >= net->L || d->index >= net->n[d->layer])
            return vt_set_error(VT_ERR_MISMATCH, "%s: %s: split tree node %u splits layer %u neuron %u, not a hidden ReLU",
                                cert_path, where, q, d->layer, d->index);
        for (uint32_t k2 = 0; k2 < nr; k2++)
            if (sp[k2].layer == d->layer && sp[k2].index == d->index)
                return vt_set_error(VT_ERR_MISMATCH, "%s: %s: split tree node %u splits layer %u neuron %u again", cert_path,
                                    where, q, d->layer, d->index);
        return VT_OK;
    }
    char wn[160];
    snprintf(wn, sizeof wn, "%s, split tree node %u", where, q);
    if (t->na) e = vti_cert_slopes(cert_path, wn, d->rec, t->na, d->alpha);
    size_t nb = (size_t)R * nr;
    const uint8_t *rb = d->rec + t->na * 8; /* the multipliers: finite and >= 0 */
    for (size_t k2 = 0; k2 < nb && !e; k2++) {
        d->beta[k2] = vt_bits_f64(vt_get_u64le(rb + 8 * k2));
        if (!(d->beta[k2] >= 0 && d->beta[k2] < INFINITY))
            e = vt_set_error(VT_ERR_MISMATCH, "%s: %s: multiplier %zu is %g, not a finite beta >= 0", cert_path, wn, k2,
                             d->beta[k2]);
    }
    if (e) return e;
    if (!t->inputs) { /* below the lowest layer with a split that differs from the last leaf's, nothing changes */
        uint32_t cp = 0, m = j->w->pn[k] == UINT32_MAX ? 0 : net->L, pn = m ? j->w->pn[k] : 0;
        const vt_cert_split *ps = j->w->psp[k];
        while (cp < nr && cp < pn && sp[cp].layer == ps[cp].layer && sp[cp].index == ps[cp].index &&
               sp[cp].active == ps[cp].active)
            cp++;
        for (uint32_t k2 = cp; k2 < nr; k2++) m = sp[k2].layer < m ? sp[k2].layer : m;
        for (uint32_t k2 = cp; k2 < pn; k2++) m = ps[k2].layer < m ? ps[k2].layer : m;
        vt_cert_set_keep(c, m);
        memcpy(j->w->psp[k], sp, nr * sizeof *sp), j->w->pn[k] = nr;
    }
    vt_cert_set_splits(c, sp, nr);
    e = bound_leaf(p, c, xl, xu, t->na ? d->alpha : NULL, d->beta, lb, alpha, beta);
    vt_cert_set_splits(c, NULL, 0);
    if (e) return e;
    uint32_t r, which;
    double mn = p->worst(p, lb, j->w->row[k], &r, &which);
    if (t->n > 1 && !(mn > 0))
        return vt_set_error(VT_ERR_MISMATCH,
                            "%s: %s: split tree node %u (a leaf at depth %u) does not close: %s %u's bound %.17g "
                            "recomputed from its slopes does not refute it",
                            cert_path, where, q, depth, p->what, which, mn);
    if (!(mn > 0)) j->open[q] = 1;
    for (size_t k2 = 0; k2 < t->na && !e; k2++) /* a stable ReLU's slope is CROWN's (what certify writes) */
        if (vt_get_u64le(d->rec + 8 * k2) != vt_f64_bits(alpha[k2]))
            e = vt_set_error(VT_ERR_MISMATCH,
                             "%s: %s: split tree node %u (a leaf): slope %zu is %.17g, not the %.17g certify writes "
                             "(a stable ReLU's slope is CROWN's)",
                             cert_path, where, q, k2, d->alpha[k2], alpha[k2]);
    for (size_t k2 = 0; k2 < nb && !e; k2++) /* taken as given: returned unchanged */
        if (vt_f64_bits(beta[k2]) != vt_f64_bits(d->beta[k2]))
            e = vt_set_error(VT_ERR_MISMATCH, "%s: %s: multiplier %zu is not the one recomputed", cert_path, wn, k2);
    const uint8_t *rl = rb + nb * 8;
    for (uint32_t j2 = 0; j2 < C && !e; j2++)
        if (vt_get_u64le(rl + 8 * (size_t)j2) != vt_f64_bits(lb[j2]))
            e = vt_set_error(VT_ERR_MISMATCH,
                             "%s: %s: split tree node %u (a leaf): %s %u's recorded bound is not the one its "
                             "slopes give (%.17g; a changed slope or split?)",
                             cert_path, where, q, p->what, j2, lb[j2]);
    if (!e) {
        if (t->na) memcpy(d->alpha, alpha, t->na * sizeof *alpha);
        memcpy(d->lb, lb, C * sizeof *lb);
    }
    return e;
}

static void replay_one(void *job, int k, uint32_t q)
{
    replay_job *j = job;
    j->e[q] = replay_node(j, k, q);
    if (j->e[q]) {
        snprintf(j->msg[q], sizeof j->msg[q], "%s", vt_errmsg());
        atomic_store(j->failed, 1);
    }
}

/* The nodes are handed out in increasing order and a worker takes no new one once a node has failed:
 * every node before a failed one was taken and finished, so the first failure in node order (the one
 * reported) is the one-worker replay's, whatever the number of workers. */
static void replay_part(void *ctx, size_t lo, size_t hi, int part);

vt_err vti_bab_replay_p(vt_cert_ctx *c, const vt_cert_net *net, vti_bab_prob *p,
                        vti_bab_tree *t, const char *cert_path, const char *where, int *closed)
{
    *closed = 1;
    workers w;
    vt_err e = workers_open(&w, c, t->C, t->na, t->R);
    if (e) return t->n > 1 && g_bab_comm ? vt_dist_agree(g_bab_comm, e, NULL) : e; /* the others wait in it */
    vt_err *es = calloc(t->n, sizeof *es);
    char (*msg)[400] = malloc((size_t)t->n * sizeof *msg);
    uint8_t *open = calloc(t->n, 1);
    atomic_int failed;
    atomic_init(&failed, 0);
    if (!es || !msg || !open) e = vt_set_error(VT_ERR_NOMEM, "out of memory");
    /* over ranks (a tree of more than one node, whose every leaf must close): rank r checks the nodes
     * [part_lo(r), part_lo(r + 1)), the ranks agree on the first failure (the lowest failing rank's
     * first: the first in node order), and every rank takes the other nodes' slopes, multipliers and
     * bounds from the record, which their rank found equal to the recomputed ones */
    vt_comm *comm = t->n > 1 ? g_bab_comm : NULL;
    uint32_t lo = 0, hi = t->n;
    if (comm)
        lo = (uint32_t)vti_cert_part_lo(t->n, vt_dist_rank(comm), vt_dist_size(comm)),
        hi = (uint32_t)vti_cert_part_lo(t->n, vt_dist_rank(comm) + 1, vt_dist_size(comm));
    if (!e) {
        replay_job j = {net, p, t, cert_path, where, &w, es, msg, open, &failed, lo};
        pool_run r;
        r.w = &w, r.n = hi - lo, r.one = replay_one, r.job = &j;
        atomic_init(&r.next, 0u);
        atomic_init(&r.stop, 0);
        replay_part(&r, 0, 0, -1);
        for (uint32_t q = lo; q < hi && !e; q++) {
            if (es[q]) e = vt_set_error(es[q], "%s", msg[q]);
            else if (open[q]) *closed = 0;
        }
    }
    if (comm) e = vt_dist_agree(comm, e, NULL);
    for (uint32_t q = 0; comm && !e && q < t->n; q++) {
        vti_bab_node *d = &t->v[q];
        if (d->split || (q >= lo && q < hi)) continue;
        size_t nb = (size_t)t->R * d->rdepth;
        for (size_t k = 0; k < t->na; k++) d->alpha[k] = vt_bits_f64(vt_get_u64le(d->rec + 8 * k));
        for (size_t k = 0; k < nb; k++) d->beta[k] = vt_bits_f64(vt_get_u64le(d->rec + 8 * (t->na + k)));
        for (uint32_t k = 0; k < t->C; k++) d->lb[k] = vt_bits_f64(vt_get_u64le(d->rec + 8 * (t->na + nb + k)));
    }
    free(es), free(msg), free(open);
    workers_close(&w);
    return e;
}

/* part -1: the whole replay (runs the parts); else one worker taking nodes until none is left or one
 * failed (the failure flag in the job). */
static void replay_part(void *ctx, size_t lo, size_t hi, int part)
{
    pool_run *r = ctx;
    replay_job *j = r->job;
    if (part < 0) {
        if (r->w->n <= 1 || r->n <= 1) replay_part(r, 0, 1, 0);
        else (void)vt_par_for((size_t)(r->w->n < (int)r->n ? r->w->n : (int)r->n), 1, replay_part, r);
        return;
    }
    (void)lo, (void)hi;
    for (;;) {
        if (atomic_load(j->failed)) break;
        unsigned q = atomic_fetch_add(&r->next, 1u);
        if (q >= r->n) break;
        replay_one(j, part, j->lo + q);
    }
}
