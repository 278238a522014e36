/* vt_cert_spec.c - `auditor certify --onnx FILE --vnnlib FILE` and its certificate (docs/certify.md
 * "ONNX and VNN-LIB", docs/format.md "Certificate" version 2): the network read from ONNX, the
 * property from VNN-LIB, the spec matrix's bounds (vt_cert_spec_bounds) over the box after the
 * input's normalisation (rounded outward), the VNN-COMP answer (unsat / sat / unknown / timeout),
 * a counterexample only when the exact evaluation of the deployed network at that input (a
 * convolutional file: a rigorous interval evaluation at the point) satisfies every constraint of one
 * disjunct; --method beta-crown: branch and bound over the rows (certificate versions 6 and 7). A
 * convolutional ONNX file is bounded as a layer graph (vt_cert_graph_spec_bounds, its FP32 widening; docs/certify.md "Convolutional networks
 * from ONNX"). A committed run (`certify RUN_DIR --vnnlib`, version 3): an MLP as its network, a
 * residual CNN as its evaluation pass's graph (vt_cert_graph_from_program), either with the run's two
 * semantics (the exact-rounding evaluation and the real network). */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/vt_bytes.h"
#include "../common/vt_cli.h"
#include "../common/vt_hash.h"
#include "../rounding/vt_exact.h"
#include "vt_cert.h"
#include "vt_cert_graph.h"
#include "vt_cert_int.h"
#include "vt_vnnlib.h"

#define CERT_MAGIC "VTCERT01"
#define CERT_SPEC_VERSION 2u
#define CERT_RUN_SPEC_VERSION 3u /* the same with a committed run in place of the ONNX file */
#define CERT_RUN_TAIL 104u       /* version 3: step, Merkle root, manifest hash, trainer key */
#define CERT_SPEC_BAB_VERSION 6u     /* version 2 with the split tree in place of the slopes (beta-crown) */
#define CERT_RUN_SPEC_BAB_VERSION 7u /* version 3 likewise */
#define CERT_SPEC_BABI_VERSION 8u     /* version 6 whose tree splits inputs too (input splitting) */
#define CERT_RUN_SPEC_BABI_VERSION 9u /* version 7 likewise */
#define CERT_SPEC_HEADER 140u

const char *vt_cert_spec_answer_name(vt_cert_spec_answer a)
{
    return a == VT_CERT_UNSAT ? "unsat" : a == VT_CERT_SAT ? "sat" : a == VT_CERT_TIMEOUT ? "timeout" : "unknown";
}

static double dn(double x) { return nextafter(x, -INFINITY); }
static double up(double x) { return nextafter(x, INFINITY); }

/* The box [yl, yu] of the normalised input over [xl, xu], rounded outward step by step, each step's
 * result widened by its FP32 rounding (|fl32(v) - v| <= 2^-24 |v| + 2^-126, subnormals flushed or
 * not): it holds the real-arithmetic normalisation and every FP32 evaluation of it that stays finite.
 * Returns 0 when a step's result may pass FLT_MAX: an FP32 evaluation may then give an infinity, which
 * no such box holds (the caller claims nothing: every row's bound -inf, no counterexample). */
static int norm_box(const vt_cert_onnx *o, const double *xl, const double *xu, double *yl, double *yu)
{
    uint32_t d = o->net.n[0];
    int ok = 1;
    memcpy(yl, xl, d * sizeof *yl), memcpy(yu, xu, d * sizeof *yu);
    for (uint32_t s = 0; s < o->n_norm; s++)
        for (uint32_t i = 0; i < d; i++) {
            double c = o->norm_c[s][o->norm_n[s] == 1 ? 0 : i], l = yl[i], u = yu[i];
            if (o->norm_op[s] == 'S') l = dn(l - c), u = up(u - c);
            else if (c > 0) l = dn(l / c), u = up(u / c);
            else {
                double t = dn(u / c);
                u = up(l / c), l = t;
            }
            double w = up(up(fmax(fabs(l), fabs(u)) * 0x1p-24) + 0x1p-126);
            yl[i] = dn(l - w), yu[i] = up(u + w);
            if (!(fmax(fabs(yl[i]), fabs(yu[i])) <= FLT_MAX)) ok = 0;
        }
    return ok;
}

/* FP64 normalisation (attacks only) and the sign it gives each element's gradient. */
static void norm64(const vt_cert_onnx *o, const float *x, double *y, double *sign)
{
    uint32_t d = o->net.n[0];
    for (uint32_t i = 0; i < d; i++) y[i] = x[i], sign[i] = 1;
    for (uint32_t s = 0; s < o->n_norm; s++)
        for (uint32_t i = 0; i < d; i++) {
            double c = o->norm_c[s][o->norm_n[s] == 1 ? 0 : i];
            if (o->norm_op[s] == 'S') y[i] -= c;
            else y[i] /= c, sign[i] *= c < 0 ? -1 : 1;
        }
}

/* The FP32 value nearest v in [lo, hi]; 0 when the interval holds none. */
static int to_box(double v, double lo, double hi, float *out)
{
    float f = (float)(v < lo ? lo : v > hi ? hi : v);
    for (int k = 0; k < 4 && (double)f < lo; k++) f = nextafterf(f, INFINITY);
    for (int k = 0; k < 4 && (double)f > hi; k++) f = nextafterf(f, -INFINITY);
    *out = f;
    return (double)f >= lo && (double)f <= hi;
}

typedef struct {
    const vt_cert_onnx *on;
    const vt_vnnlib *vn;
    vt_cert_ctx *c;
    vt_cert_graph *gr; /* a convolutional ONNX network (instead of c) */
    vti_cert_run *run; /* a committed run (RUN_DIR --vnnlib): its evaluation pass confirms a residual CNN's */
    double deadline;
    /* work */
    double *pl, *pu, *ol, *ou, *y, *g, *g2, *xn, *sg, *work;
    float *x, *x32, *y32;
} spec;

/* 1 when every constraint of disjunct k holds everywhere in the box [pl, pu] of the network's input
 * by CROWN's sound upper bounds of its rows (each row negated: CROWN's lower bound of -C_r y), rounded
 * outward, its constant's upper end added */
static int crown_holds(spec *s, uint32_t k)
{
    const vt_vnnlib *v = s->vn;
    uint32_t r0 = v->disj_start[k], m = v->disj_start[k + 1] - r0, ny = v->ny;
    double *C = malloc((size_t)m * ny * sizeof *C), *lb = malloc(m * sizeof *lb);
    int all = C && lb;
    for (size_t i = 0; all && i < (size_t)m * ny; i++) C[i] = -v->C[(size_t)r0 * ny + i];
    if (all) {
        int timed = 0;
        vt_cert_settings cr;
        vt_cert_settings_default(&cr, VT_CERT_CROWN);
        vt_err e = s->gr ? vt_cert_graph_spec_bounds(s->gr, s->pl, s->pu, C, m, VT_CERT_CROWN, 0, lb, &timed)
                         : vt_cert_spec_bounds(s->c, s->pl, s->pu, C, m, &cr, lb, NULL);
        all = !e && !timed;
    }
    for (uint32_t r = 0; all && r < m; r++) {
        double hi = lb[r] > -INFINITY ? up(-lb[r] + v->d_hi[r0 + r]) : INFINITY;
        all = v->strict[r0 + r] ? hi < 0 : hi <= 0;
    }
    free(C), free(lb);
    return all;
}

/* The sign of the exact value of row . y + d (row: doubles, y: FP32 values as doubles): each product
 * by TwoProduct (p + fma(r, y, -p), exact: a spec row's coefficients are small integers), the sum in
 * the exact accumulator. */
static int row_sign_exact(const double *row, const double *y, uint32_t n, double d)
{
    vt_xacc acc;
    vt_xacc_init(&acc);
    for (uint32_t j = 0; j < n; j++)
        if (row[j] != 0) {
            double p = row[j] * y[j];
            vt_xacc_add(&acc, p), vt_xacc_add(&acc, fma(row[j], y[j], -p));
        }
    vt_xacc_add(&acc, d);
    return vt_xacc_sign(&acc);
}

/* A feed-forward network's candidate, or a committed run's, confirmed by the exact evaluation of the
 * deployed network at the FP32 point x alone (docs/certify.md "ONNX and VNN-LIB"): each normalisation
 * step RN32 of its exact value, then vt_cert_eval_deployed (each layer RN32 of its exact dot product,
 * RN32 of the bias add), or a residual CNN run's own evaluation pass (vti_cert_run_eval, exact
 * rounding); a disjunct is reached when every row's exact value with its constant's upper end,
 * C_r . y + d_hi, is <= 0 (< 0 strict). The outputs into ol = ou. Returns the first disjunct reached,
 * or -1. */
static int confirm_exact(spec *s, const float *x)
{
    const vt_vnnlib *v = s->vn;
    const vt_cert_onnx *o = s->on;
    uint32_t d = v->nx, ny = v->ny;
    float *xn = s->x32, *y = s->y32;
    int finite = 1;
    if (s->gr) { /* a residual CNN run (no normalisation: the run's inputs) */
        const float *lg = NULL;
        if (vti_cert_run_eval(s->run, x, &lg) != VT_OK) return -1;
        memcpy(y, lg, ny * sizeof *y);
        for (uint32_t j = 0; j < ny; j++) finite &= isfinite(y[j]) != 0;
    } else {
        memcpy(xn, x, d * sizeof *xn);
        for (uint32_t st = 0; st < o->n_norm; st++)
            for (uint32_t i = 0; i < d; i++) {
                double c = o->norm_c[st][o->norm_n[st] == 1 ? 0 : i]; /* RN32 through FP64: correctly rounded */
                xn[i] = (float)(o->norm_op[st] == 'S' ? (double)xn[i] - c : (double)xn[i] / c);
            }
        if (vt_cert_eval_deployed(s->c, xn, y, &finite) != VT_OK) return -1;
    }
    if (!finite) return -1;
    for (uint32_t j = 0; j < ny; j++) s->ol[j] = s->ou[j] = y[j];
    for (uint32_t k = 0; k < v->n_disj; k++) {
        int all = 1;
        for (uint32_t r = v->disj_start[k]; r < v->disj_start[k + 1] && all; r++) {
            int sg = row_sign_exact(v->C + (size_t)r * ny, s->ol, ny, v->d_hi[r]);
            all = v->strict[r] ? sg < 0 : sg <= 0;
        }
        if (all) return k;
    }
    return -1;
}

/* A candidate counterexample confirmed at its FP32 input x alone (never over a ball). A feed-forward
 * network or a committed run: confirm_exact. A convolutional ONNX file (the layer graph, no deployed
 * evaluation of its own): the rigorous interval of the real network's outputs on the
 * point's box (IBP: every dot product with its error bound, rounded outward; the box is the
 * normalisation's rounding of the point); where that interval confirms no disjunct, CROWN on the same
 * box, whose linear bounds do not widen through the layers as intervals do. Returns the first
 * disjunct all of whose constraints hold, or -1. */
static int confirm(spec *s, const float *x)
{
    if (!s->gr || s->run) return confirm_exact(s, x);
    const vt_vnnlib *v = s->vn;
    uint32_t d = v->nx;
    for (uint32_t i = 0; i < d; i++) s->pl[i] = s->pu[i] = x[i];
    if (!norm_box(s->on, s->pl, s->pu, s->pl, s->pu)) return -1;
    {
        const double *l, *u;
        if (vt_cert_graph_ibp(s->gr, s->pl, s->pu) != VT_OK) return -1;
        vt_cert_graph_interval(s->gr, vt_cert_graph_n_nodes(s->gr) - 1, &l, &u);
        memcpy(s->ol, l, v->ny * sizeof *l), memcpy(s->ou, u, v->ny * sizeof *u);
    }
    for (uint32_t k = 0; k < v->n_disj; k++) {
        int all = 1;
        for (uint32_t r = v->disj_start[k]; r < v->disj_start[k + 1] && all; r++) {
            double hi = up(vt_cert_row_hi(v->C + (size_t)r * v->ny, s->ol, s->ou, v->ny, s->work) + v->d_hi[r]);
            all = v->strict[r] ? hi < 0 : hi <= 0;
        }
        if (all) return k;
    }
    for (uint32_t k = 0; k < v->n_disj; k++) { /* CROWN where the interval does not already rule it out */
        int possible = 1;
        for (uint32_t r = v->disj_start[k]; r < v->disj_start[k + 1] && possible; r++) {
            double lo = vt_cert_row_lo(v->C + (size_t)r * v->ny, s->ol, s->ou, v->ny, s->work) + v->d_lo[r];
            possible = v->strict[r] ? lo < 0 : lo <= 0;
        }
        if (possible && crown_holds(s, k)) return k;
    }
    return -1;
}

/* PGD with restarts in the inner box, aimed at every open disjunct in turn (a robustness property's
 * disjuncts are its wrong classes: a margin loss per row), each run of attack_iters sign-gradient
 * steps decreasing the disjunct's binding constraint (FP64 objective); the centre of the box first, then
 * per restart every open disjunct from the same random start. A point the FP64 evaluation puts in a
 * disjunct is confirmed by confirm() (at the point alone). *which: the disjunct confirmed, or -1.
 * start (branch and bound's subdomains; NULL: the above): one run from that FP32 point, aimed at the
 * open disjunct only (refuted: every other disjunct's flag set). */
static void attack(spec *s, const uint8_t *refuted, const vt_cert_settings *st, const float *start, int *which)
{
    const vt_vnnlib *v = s->vn;
    uint32_t d = v->nx, ny = v->ny;
    *which = -1;
    for (uint32_t i = 0; i < d; i++)
        if (!(v->ixl[i] <= v->ixu[i])) return; /* no input is surely inside: nothing to try */
    float *x0 = malloc(d * sizeof *x0);
    if (!x0) return;
    uint64_t seed = st->attack_seed;
    for (uint32_t r = 0; r < (start ? 1 : st->attack_restarts) && *which < 0; r++) {
        int ok = 1;
        for (uint32_t i = 0; i < d && ok; i++) {
            double u = r == 0 ? 0.5 : (double)(vt_cert_rand(&seed) >> 11) * 0x1p-53;
            ok = start ? (x0[i] = start[i], 1) : to_box(v->ixl[i] + u * (v->ixu[i] - v->ixl[i]), v->ixl[i], v->ixu[i], &x0[i]);
        }
        if (!ok) break;
        memcpy(s->x, x0, d * sizeof *x0); /* s->x: the counterexample the caller records */
        if (r == 0 && !start && (*which = confirm(s, s->x)) >= 0) break;
        for (uint32_t k = 0; k < v->n_disj && *which < 0; k++) {
            if (refuted[k]) continue;
            memcpy(s->x, x0, d * sizeof *x0);
            for (uint32_t it = 0; it <= st->attack_iters && *which < 0; it++) {
                if (s->deadline > 0 && vt_now() >= s->deadline) goto out;
                norm64(s->on, s->x, s->xn, s->sg);
                if (s->gr) vt_cert_graph_forward64(s->gr, s->xn, s->y);
                else vt_cert_forward64(s->c, s->xn, s->y);
                double worst = -INFINITY;
                uint32_t wrow = v->disj_start[k];
                for (uint32_t q = v->disj_start[k]; q < v->disj_start[k + 1]; q++) {
                    const double *C = v->C + (size_t)q * ny;
                    double t = 0.5 * (v->d_lo[q] + v->d_hi[q]);
                    for (uint32_t j = 0; j < ny; j++) t += C[j] * s->y[j];
                    if (t > worst) worst = t, wrow = q;
                }
                if (worst <= 0 && (*which = confirm(s, s->x)) >= 0) break;
                if (it == st->attack_iters) break;
                /* one sign-gradient step decreasing the binding constraint */
                if (s->gr) vt_cert_graph_grad64(s->gr, v->C + (size_t)wrow * ny, s->g);
                else {
                    memcpy(s->g, v->C + (size_t)wrow * ny, ny * sizeof *s->g);
                    vt_cert_backprop64(s->c, s->g, s->g2);
                }
                for (uint32_t i = 0; i < d; i++) {
                    double gi = s->g[i] * s->sg[i],
                           step = 1.25 * (v->ixu[i] - v->ixl[i]) / (st->attack_iters ? st->attack_iters : 1);
                    float f;
                    if (to_box((double)s->x[i] - (gi > 0 ? step : gi < 0 ? -step : 0), v->ixl[i], v->ixu[i], &f))
                        s->x[i] = f;
                }
            }
        }
    }
out:
    free(x0);
}

/* Each row's bound with its constant's lower end, rounded downward (-inf stays). */
static void rows_const(const vt_vnnlib *v, double *lb)
{
    for (uint32_t r = 0; r < v->n_rows; r++) lb[r] = lb[r] > -INFINITY ? dn(lb[r] + v->d_lo[r]) : -INFINITY;
}

/* ---------------------------------------------------------------- branch and bound over the rows */

typedef struct {
    spec *s;
    const double *xl, *xu; /* the normalised box */
    int finite;            /* the box is finite (norm_box) */
    const vt_cert_settings *st;
    int which;             /* the disjunct a candidate reached */
    float *xf;             /* work: d */
    uint8_t *only;         /* work: n_disj flags, every disjunct but the branching one's set */
} rows_bab;

/* Whether row r refutes its disjunct with the bound lb before its constant: rows_bound's then
 * rows_worst's test on it (the search's early stop, vt_cert_set_row_closes). */
static int row_closes(const void *ctx, uint32_t r, double lb)
{
    const rows_bab *b = ctx;
    const vt_vnnlib *v = b->s->vn;
    if (!b->finite || r >= v->n_rows || !(lb > -INFINITY)) return 0;
    double d = dn(lb + v->d_lo[r]);
    return v->strict[r] ? d >= 0 : d > 0;
}

static vt_err rows_bound(vti_bab_prob *p, vt_cert_ctx *c, const double *xl, const double *xu, double *lb, double *alpha)
{
    rows_bab *b = p->ctx;
    const vt_vnnlib *v = b->s->vn;
    vt_cert_set_row_closes(c, row_closes, b);
    vt_err e = vt_cert_spec_bounds(c, xl, xu, v->C, v->n_rows, b->st, lb, alpha);
    vt_cert_set_row_closes(c, NULL, NULL);
    VT_FORWARD_IF_ERROR(e);
    for (uint32_t r = 0; r < v->n_rows && !b->finite; r++) lb[r] = -INFINITY;
    rows_const(v, lb);
    return VT_OK;
}

/* Closes (1) when every disjunct has a row refuting it (> 0, >= 0 strict); else the open disjunct whose
 * best row bound is smallest, branching on that row. */
static double rows_worst(vti_bab_prob *p, const double *lb, double *row, uint32_t *r, uint32_t *which)
{
    rows_bab *b = p->ctx;
    const vt_vnnlib *v = b->s->vn;
    double worst = INFINITY;
    uint32_t wr = 0;
    for (uint32_t k = 0; k < v->n_disj; k++) {
        double best = -INFINITY;
        uint32_t br = v->disj_start[k];
        int ref = 0;
        for (uint32_t q = v->disj_start[k]; q < v->disj_start[k + 1]; q++) {
            ref |= v->strict[q] ? lb[q] >= 0 : lb[q] > 0;
            if (lb[q] > best) best = lb[q], br = q;
        }
        if (!ref && best < worst) worst = best, wr = br;
        if (!ref && !(best > -INFINITY)) worst = -INFINITY, wr = br;
    }
    *r = *which = wr;
    if (wr < v->n_rows) memcpy(row, v->C + (size_t)wr * v->ny, v->ny * sizeof *row);
    else memset(row, 0, v->ny * sizeof *row); /* a disjunct without rows: never refuted (-inf: stop) */
    return worst == INFINITY ? 1 : worst > 0 ? 0 : worst;
}

/* The branching pass's smallest point, back through the normalisation (FP64, only a candidate), in
 * FP32 in the inner box; when the FP64 network puts it in a disjunct, the exact evaluation decides;
 * else the attack from that point, aimed at the branching row's disjunct (attack_iters steps). */
static vt_err rows_candidate(vti_bab_prob *p, vt_cert_ctx *c, const double *pt, uint32_t brow, int *found)
{
    rows_bab *b = p->ctx;
    spec *s = b->s;
    const vt_vnnlib *v = s->vn;
    const vt_cert_onnx *o = s->on;
    uint32_t d = v->nx;
    for (uint32_t i = 0; i < d; i++) {
        double y = pt[i];
        for (uint32_t st = o->n_norm; st-- > 0;) {
            double cst = o->norm_c[st][o->norm_n[st] == 1 ? 0 : i];
            y = o->norm_op[st] == 'S' ? y + cst : y * cst;
        }
        if (!to_box(y, v->ixl[i], v->ixu[i], &b->xf[i])) return VT_OK;
    }
    norm64(o, b->xf, s->xn, s->sg);
    vt_cert_forward64(c, s->xn, s->y);
    int reach = 0;
    for (uint32_t k = 0; k < v->n_disj && !reach; k++) {
        int all = 1;
        for (uint32_t q = v->disj_start[k]; q < v->disj_start[k + 1] && all; q++) {
            double t = 0.5 * (v->d_lo[q] + v->d_hi[q]);
            for (uint32_t j = 0; j < v->ny; j++) t += v->C[(size_t)q * v->ny + j] * s->y[j];
            all = t <= 0;
        }
        reach = all;
    }
    int k = reach ? confirm(s, b->xf) : -1;
    if (k >= 0) memcpy(s->x, b->xf, d * sizeof *s->x);
    else { /* the attack on the subdomain, from its point */
        uint32_t kd = 0;
        while (kd + 1 < v->n_disj && v->disj_start[kd + 1] <= brow) kd++;
        for (uint32_t q = 0; q < v->n_disj; q++) b->only[q] = q != kd;
        vt_cert_settings sa = *b->st; /* the search's short attack */
        if (sa.attack_iters > VTI_BAB_ATTACK_ITERS) sa.attack_iters = VTI_BAB_ATTACK_ITERS;
        attack(s, b->only, &sa, b->xf, &k);
    }
    if (k >= 0) b->which = k, *found = 1;
    return VT_OK;
}

/* The disjuncts closest to failing in the parent first (by their best row's bound, as rows_worst
 * measures them; ties: the disjuncts' order), each a group of its rows in order. */
static void rows_plan(vti_bab_prob *p, const double *plb, uint32_t *order, uint8_t *last, uint32_t *lbi, double *key)
{
    rows_bab *b = p->ctx;
    const vt_vnnlib *v = b->s->vn;
    for (uint32_t r = 0; r < p->R; r++) key[r] = -INFINITY, lbi[r] = UINT32_MAX - r; /* a row of no disjunct */
    for (uint32_t k = 0; k < v->n_disj; k++) {
        double best = -INFINITY;
        for (uint32_t q = v->disj_start[k]; q < v->disj_start[k + 1]; q++) best = plb[q] > best ? plb[q] : best;
        for (uint32_t q = v->disj_start[k]; q < v->disj_start[k + 1]; q++) key[q] = best, lbi[q] = k;
    }
    vti_bab_order(key, p->R, order); /* a disjunct's rows stay together, in order (stable, ranges) */
    for (uint32_t i = 0; i < p->R; i++) last[i] = i + 1 == p->R || lbi[order[i + 1]] != lbi[order[i]];
    for (uint32_t r = 0; r < p->R; r++) lbi[r] = r;
}

static void rows_prob(rows_bab *b, vti_bab_prob *p)
{
    memset(p, 0, sizeof *p);
    p->R = p->nlb = b->s->vn->n_rows, p->what = "row", p->ctx = b;
    p->xl = b->xl, p->xu = b->xu, p->d = b->s->vn->nx;
    p->input_split = b->s->vn->nx <= VTI_BAB_INPUT_SPLIT_MAX; /* a few inputs: split them, not the ReLUs */
    p->bound = rows_bound, p->worst = rows_worst, p->candidate = rows_candidate, p->plan = rows_plan;
}

/* VNN-COMP's result file (line, then for sat the assignment) or counterexample file (line NULL): the
 * assignment ((X_0 v) ... (Y_0 v) ...), the X values the FP32 inputs printed exactly (a reader gets the
 * very point back), the Y values the deployed network's outputs there (confirm_exact; a layer graph:
 * their intervals' midpoints). */
static vt_err write_answer(const char *path, const char *opt, const char *line, const spec *s)
{
    uint32_t d = s->vn->nx, ny = s->vn->ny;
    FILE *f = fopen(path, "w");
    VT_RETURN_ERROR_IF(!f, VT_ERR_IO, "%s %s: cannot create it", opt, path);
    if (line) fprintf(f, "%s\n", line);
    if (!line || !strcmp(line, "sat")) {
        fprintf(f, "(");
        for (uint32_t i = 0; i < d; i++) fprintf(f, "%s(X_%u %.112g)\n", i ? " " : "", i, (double)s->x[i]); /* exact */
        for (uint32_t j = 0; j < ny; j++)
            fprintf(f, " (Y_%u %.17g)%s", j, 0.5 * s->ol[j] + 0.5 * s->ou[j], j + 1 < ny ? "\n" : ")\n");
    }
    VT_RETURN_ERROR_IF(ferror(f) | (fclose(f) != 0), VT_ERR_IO, "%s %s: cannot write it", opt, path);
    return VT_OK;
}

typedef struct {
    vt_cert_onnx on;       /* a committed run's network too (no normalisation, nothing owned) */
    vt_vnnlib vn;
    uint8_t onnx_sha[32], vnnlib_sha[32]; /* a run: its committed state hash in onnx_sha */
    vti_cert_run *run;     /* certify RUN_DIR --vnnlib */
    vt_cert_graph *gr;     /* a convolutional ONNX network (vt_cert_onnx_read_any), or a residual CNN run's
                              evaluation pass (owned by run); on.net holds the widths only */
    vti_cert_model_id id;
} spec_in;

static const char *model_name(const vt_cert_spec_opts *o) { return o->run_dir ? o->run_dir : o->onnx_path; }

static vt_err load(const vt_cert_spec_opts *o, spec_in *in)
{
    memset(in, 0, sizeof *in);
    if (o->run_dir) {
        const vt_cert_net *net = NULL;
        VT_FORWARD_IF_ERROR(vti_cert_run_open(o->run_dir, o->pubkey_path, o->order, &in->run, &net, &in->id));
        in->on.net = *net;
        in->gr = vti_cert_run_graph(in->run);
        memcpy(in->onnx_sha, in->id.state_hash, 32);
    } else VT_FORWARD_IF_ERROR(vt_cert_onnx_read_any(o->onnx_path, &in->on, &in->gr, in->onnx_sha));
    VT_FORWARD_IF_ERROR(vt_vnnlib_read(o->vnnlib_path, &in->vn, in->vnnlib_sha));
    const vt_cert_net *n = &in->on.net;
    uint32_t ny = in->gr ? vt_cert_graph_size(in->gr, vt_cert_graph_n_nodes(in->gr) - 1) : n->n[n->L];
    VT_RETURN_ERROR_IF(in->vn.nx != n->n[0] || in->vn.ny != ny, VT_ERR_ARG,
                       "%s declares %u inputs and %u outputs; %s has %u and %u", o->vnnlib_path, in->vn.nx, in->vn.ny,
                       model_name(o), n->n[0], ny);
    return VT_OK;
}

static void load_free(spec_in *in)
{
    vt_cert_onnx_free(&in->on);
    vt_vnnlib_free(&in->vn);
    if (!in->run) vt_cert_graph_free(in->gr); /* a run's graph is the run's */
    vti_cert_run_close(in->run);
    in->run = NULL, in->gr = NULL;
}

/* The answer and the certificate's body into out; the per-disjunct table (stderr), the report and
 * the counterexample when asked. cert (check-certificate, parsed by vti_cert_parse_spec(); NULL: certify): the
 * one-pass check: alpha-CROWN's bounds from the recorded slopes (each in [0, 1]; one backward pass a
 * row, no search), a recorded counterexample (inside the inner box) confirmed by confirm() instead of
 * the attack; the answer re-derived (unsat iff every disjunct has a recomputed row bound refuting it,
 * sat iff the counterexample confirms, else unknown); the caller compares the bytes. */
static vt_err compute(const vt_cert_spec_opts *o, spec_in *in, double deadline, vti_buf *out, vt_cert_spec_answer *ans,
                      FILE *rep, const uint8_t *cert, const char *cert_path)
{
    const vt_vnnlib *v = &in->vn;
    const vt_cert_settings *st = &o->set;
    spec s;
    memset(&s, 0, sizeof s);
    s.on = &in->on, s.vn = v, s.deadline = deadline, s.gr = in->gr, s.run = in->run;
    vt_err e = s.gr ? VT_OK : vt_cert_ctx_new(&in->on.net, &s.c);
    if (e) return e == VT_ERR_ARG ? vt_set_error(VT_ERR_UNSUPPORTED, "%s: %s", model_name(o), vt_errmsg()) : e;
    if (!s.gr && !in->run) vt_cert_onnx_drop_weights(&in->on); /* the context holds its part of them */
    if (s.gr) {
        /* a run: its own two semantics (the exact-rounding evaluation pass, the real network), as
         * certify RUN_DIR; an ONNX file: the real network and any FP32 evaluation */
        vt_cert_graph_set_sem(s.gr, in->run ? VT_CERT_GRAPH_PROJECT : VT_CERT_GRAPH_FP32_ANY);
        vt_cert_graph_set_alpha(s.gr, st), vt_cert_graph_set_intermediate(s.gr, st->inter);
    } else {
        vt_cert_set_deadline(s.c, deadline);
        vt_cert_set_fp32_any(s.c, !in->run); /* a run: its own two semantics, as certify RUN_DIR */
    }
    uint32_t d = v->nx, ny = v->ny, m = v->n_rows, W = s.gr ? 0 : vt_cert_max_width(s.c);
    W = W > d ? W : d, W = W > ny ? W : ny;
    size_t na = st->method == VT_CERT_ALPHA_CROWN && !s.gr ? vt_cert_n_alpha_row(s.c) : 0;
    double *xl = malloc(d * sizeof *xl), *xu = malloc(d * sizeof *xu), *lb = malloc((m ? m : 1) * sizeof *lb),
           *alpha = malloc((na && m ? na * m : 1) * sizeof *alpha);
    uint8_t *refuted = calloc(v->n_disj, 1);
    s.pl = malloc(d * sizeof(double)), s.pu = malloc(d * sizeof(double)), s.xn = malloc(d * sizeof(double));
    s.sg = malloc(d * sizeof(double)), s.ol = malloc(ny * sizeof(double)), s.ou = malloc(ny * sizeof(double));
    s.y = malloc(ny * sizeof(double)), s.g = malloc(W * sizeof(double)), s.g2 = malloc(W * sizeof(double));
    s.work = malloc(ny * sizeof(double)), s.x = malloc(d * sizeof(float));
    s.x32 = malloc(d * sizeof(float)), s.y32 = malloc(ny * sizeof(float));
    if (!xl || !xu || !lb || !alpha || !refuted || !s.pl || !s.pu || !s.xn || !s.sg || !s.ol || !s.ou || !s.y || !s.g ||
        !s.g2 || !s.work || !s.x || !s.x32 || !s.y32)
        e = vt_set_error(VT_ERR_NOMEM, "out of memory");
    if (!e && (uint64_t)na * m > UINT32_MAX) e = vt_set_error(VT_ERR_LIMIT, "certify: too many slopes");
    /* check: the recorded slopes (an MLP's na a row; a graph's U a row: the box's unstable values) */
    uint32_t rans = cert ? vt_get_u32le(cert + 136) : 0, rna = cert ? vt_get_u32le(cert + 32) : 0;
    uint32_t rver = cert ? vt_get_u32le(cert + 8) : 0;
    size_t soff = CERT_SPEC_HEADER + (size_t)m * 8 + (rans == VT_CERT_SAT ? 4 + (size_t)d * 4 : 0);
    double *given = NULL;
    if (!e && cert && (vt_get_u32le(cert + 16) != d || vt_get_u32le(cert + 20) != ny || vt_get_u32le(cert + 28) != m ||
                       (!s.gr && rna != na)))
        e = vt_set_error(VT_ERR_MISMATCH, "%s: its inputs, outputs, rows or slopes are not the property's and network's", cert_path);
    int bab = st->bab_domains > 0; /* beta-crown: the split tree in place of the slopes (versions 6, 7) */
    vti_bab_tree tree;
    memset(&tree, 0, sizeof tree);
    uint32_t bounded = 1, reused = 0;
    uint64_t skipped = 0;
    if (!e && bab && (s.gr || st->method != VT_CERT_ALPHA_CROWN))
        e = vt_set_error(VT_ERR_UNSUPPORTED, "certify: beta-crown: a feed-forward ReLU network (an MLP ONNX file or run), "
                                             "not a layer graph");
    if (!e && cert && bab) /* the recorded tree (vti_cert_parse_spec checked its structure) */
        e = vti_bab_scan_rows(cert + soff, SIZE_MAX, na * m, m, m, rver >= CERT_SPEC_BABI_VERSION, d, "the property", &tree,
                              &(size_t){0});
    else if (!e && cert && st->method == VT_CERT_ALPHA_CROWN) { /* no search, even for none recorded */
        given = malloc(((size_t)rna * m != 0 ? (size_t)rna * m : 1) * sizeof *given);
        e = given ? vti_cert_slopes(cert_path, "the property", cert + soff, (size_t)rna * m, given)
                  : vt_set_error(VT_ERR_NOMEM, "out of memory");
        if (!e && s.gr) vt_cert_graph_given_slopes(s.gr, given, rna);
        else if (!e) vt_cert_set_given_slopes(s.c, given);
    }
    int gtimed = 0, finite = 0, closed = 0;
    rows_bab rb = {&s, xl, xu, 0, st, -1, malloc(d * sizeof(float)), malloc(v->n_disj)};
    if (!e && (!rb.xf || !rb.only)) e = vt_set_error(VT_ERR_NOMEM, "out of memory");
    vti_bab_prob prob;
    rows_prob(&rb, &prob);
    prob.progress = !o->quiet;
    if (!e && cert && bab) { /* the one pass: every leaf's bound from its slopes and multipliers */
        rb.finite = norm_box(&in->on, v->xl, v->xu, xl, xu);
        e = vti_bab_replay_p(s.c, &in->on.net, &prob, &tree, cert_path, "the property", &closed);
        if (!e) vti_bab_min_lb(&tree, lb);
    } else if (!e) {
        finite = rb.finite = norm_box(&in->on, v->xl, v->xu, xl, xu);
        e = s.gr ? vt_cert_graph_spec_bounds(s.gr, xl, xu, v->C, m, st->method, deadline, lb, &gtimed)
                 : vt_cert_spec_bounds(s.c, xl, xu, v->C, m, st, lb, na ? alpha : NULL);
        if (e && cert) e = vt_error_prefix(e, "%s", cert_path);
        for (uint32_t r = 0; r < m && !e && !finite; r++) lb[r] = -INFINITY;
        if (!e) rows_const(v, lb);
        if (!e && bab) e = vti_bab_root_rows(&tree, na * m, m, m, alpha, lb);
    }
    const double *aw = alpha; /* the slopes written: the graph's unstable ReLU values per row */
    if (!e && s.gr && st->method == VT_CERT_ALPHA_CROWN) na = vt_cert_graph_n_alpha(s.gr), aw = vt_cert_graph_alpha(s.gr);
    if (!e && (uint64_t)na * m > UINT32_MAX) e = vt_set_error(VT_ERR_LIMIT, "certify: too many slopes");
    int n_ref = 0, timed = 0, which = -1;
    for (uint32_t k = 0; k < v->n_disj && !e; k++) {
        for (uint32_t r = v->disj_start[k]; r < v->disj_start[k + 1]; r++)
            if (v->strict[r] ? lb[r] >= 0 : lb[r] > 0) refuted[k] = 1;
        n_ref += refuted[k];
    }
    timed = !e && (s.gr ? gtimed : vt_cert_timed_out(s.c));
    if (!e && cert && (uint32_t)n_ref < v->n_disj && rans == VT_CERT_SAT) { /* the recorded counterexample */
        int inside = 1;
        for (uint32_t i = 0; i < d; i++) {
            s.x[i] = vt_bits_f32(vt_get_u32le(cert + CERT_SPEC_HEADER + (size_t)m * 8 + 4 + 4 * (size_t)i));
            inside &= (double)s.x[i] >= v->ixl[i] && (double)s.x[i] <= v->ixu[i];
        }
        which = inside ? confirm(&s, s.x) : -1;
    } else if (!e && !timed && (uint32_t)n_ref < v->n_disj) {
        attack(&s, refuted, st, NULL, &which);
        timed = which < 0 && deadline > 0 && vt_now() >= deadline;
        if (!e && bab && !timed && which < 0) { /* branch and bound: the tree replaces the root when it closes */
            vti_bab_tree t2;
            memset(&t2, 0, sizeof t2);
            int found = 0;
            e = vti_bab_search_p(s.c, &prob, st, &t2, &closed, &bounded, &found);
            reused = t2.reused, skipped = t2.skipped;
            if (!e && found) which = rb.which; /* confirmed by the exact evaluation; s.x holds it */
            if (!e && closed) {
                vti_bab_free(&tree);
                tree = t2;
                vti_bab_min_lb(&tree, lb);
            } else
                vti_bab_free(&t2);
            timed = !e && which < 0 && !closed && vt_cert_timed_out(s.c);
        }
    }
    if (!e && bab && closed && tree.n > 1) /* every leaf refutes every disjunct: unsat */
        for (uint32_t k = 0; k < v->n_disj; k++) n_ref += !refuted[k], refuted[k] = 1;
    *ans = timed ? VT_CERT_TIMEOUT : (uint32_t)n_ref == v->n_disj ? VT_CERT_UNSAT : which >= 0 ? VT_CERT_SAT
                                                                                                 : VT_CERT_SPEC_UNKNOWN;
    if (!e && cert && rans != (uint32_t)*ans)
        e = vt_set_error(VT_ERR_MISMATCH, "%s: the property is recorded %s; the one-pass check gives %s%s", cert_path,
                         vt_cert_spec_answer_name((vt_cert_spec_answer)rans), vt_cert_spec_answer_name(*ans),
                         *ans == VT_CERT_UNSAT ? "" : rans == VT_CERT_UNSAT
                             ? " (a recorded row bound does not refute its disjunct when recomputed)"
                             : " (the recorded counterexample is outside the box or reaches no disjunct)");
    if (!e) { /* the certificate's body */
        vti_put(out, CERT_MAGIC, 8);
        uint32_t ver = bab && tree.inputs ? (in->run ? CERT_RUN_SPEC_BABI_VERSION : CERT_SPEC_BABI_VERSION)
                       : bab ? (in->run ? CERT_RUN_SPEC_BAB_VERSION : CERT_SPEC_BAB_VERSION)
                           : in->run ? CERT_RUN_SPEC_VERSION : CERT_SPEC_VERSION;
        vti_put32(out, ver), vti_put32(out, vti_cert_method_word(st, s.gr != NULL)), vti_put32(out, d), vti_put32(out, ny);
        vti_put32(out, v->n_disj), vti_put32(out, m), vti_put32(out, (uint32_t)na);
        vti_put32(out, st->alpha_iters), vti_put64(out, vt_f64_bits(st->alpha_step));
        vti_put64(out, vt_f64_bits(st->alpha_decay)), vti_put32(out, st->attack_restarts);
        vti_put32(out, st->attack_iters), vti_put64(out, st->attack_seed);
        vti_put(out, in->onnx_sha, 32), vti_put(out, in->vnnlib_sha, 32);
        vti_put32(out, (uint32_t)*ans);
        for (uint32_t r = 0; r < m; r++) vti_put64(out, vt_f64_bits(lb[r]));
        if (*ans == VT_CERT_SAT) {
            vti_put32(out, (uint32_t)which);
            for (uint32_t i = 0; i < d; i++) vti_put32(out, vt_f32_bits(s.x[i]));
        }
        if (bab) vti_bab_put(out, &tree);
        else
            for (size_t q = 0; q < na * m; q++) vti_put64(out, vt_f64_bits(aw[q]));
        if (in->run) {
            vti_put64(out, in->id.step), vti_put(out, in->id.root, 32), vti_put(out, in->id.manifest_hash, 32);
            vti_put(out, in->id.public_key, 32);
        }
        if (out->bad) e = vt_set_error(VT_ERR_NOMEM, "out of memory");
    }
    if (!e && !o->quiet) { /* the per-disjunct table */
        fprintf(stderr, "%-9s %-6s %-24s %s\n", "disjunct", "rows", "best lower bound", "status");
        for (uint32_t k = 0; k < v->n_disj; k++) {
            double b = -INFINITY;
            for (uint32_t r = v->disj_start[k]; r < v->disj_start[k + 1]; r++) b = lb[r] > b ? lb[r] : b;
            fprintf(stderr, "%-9u %-6u %-24.10g %s\n", k, v->disj_start[k + 1] - v->disj_start[k], b,
                    refuted[k] ? "refuted" : (int)k == which ? "reached (counterexample)" : timed ? "timeout" : "open");
        }
    }
    if (!e && rep) {
        char h1[65], h2[65];
        vt_hex(in->onnx_sha, 32, h1), vt_hex(in->vnnlib_sha, 32, h2);
        fprintf(rep, "{\n  \"%s\": \"%s\",\n  \"vnnlib_sha256\": \"%s\",\n  \"method\": \"%s\",\n",
                in->run ? "state_hash" : "onnx_sha256", h1, h2, bab ? "beta-crown" : vt_cert_method_name(st->method));
        vti_cert_settings_json(rep, st, in->gr != NULL);
        fprintf(rep, "  \"result\": \"%s\",\n", vt_cert_spec_answer_name(*ans));
        if (bab) /* branch and bound: the subdomains bounded, the recorded tree's nodes */
            fprintf(rep, "  \"subdomains\": %u,\n  \"subdomains_reused\": %u,\n  \"rows_skipped\": %llu,\n  \"tree_nodes\": %u,\n",
                    bounded, reused, (unsigned long long)skipped, tree.n);
        fprintf(rep, "  \"disjuncts\": [");
        for (uint32_t k = 0; k < v->n_disj; k++) {
            double b = -INFINITY;
            for (uint32_t r = v->disj_start[k]; r < v->disj_start[k + 1]; r++) b = lb[r] > b ? lb[r] : b;
            fprintf(rep, "%s\n    {\"index\": %u, \"rows\": %u, \"status\": \"%s\", \"best_lower_bound\": ", k ? "," : "", k,
                    v->disj_start[k + 1] - v->disj_start[k],
                    refuted[k] ? "refuted" : (int)k == which ? "reached" : timed ? "timeout" : "open");
            if (isfinite(b)) fprintf(rep, "%.17g}", b);
            else fprintf(rep, "null}");
        }
        fprintf(rep, "\n  ]\n}\n");
    }
    if (!e && *ans == VT_CERT_SAT && (o->cex_path || o->result_path))
        (void)confirm(&s, s.x); /* the outputs at the counterexample (a graph's: their intervals) */
    if (!e && *ans == VT_CERT_SAT && o->cex_path) e = write_answer(o->cex_path, "--cex", NULL, &s);
    if (!e && o->result_path) e = write_answer(o->result_path, "--result", vt_cert_spec_answer_name(*ans), &s);
    free(xl), free(xu), free(lb), free(alpha), free(refuted), free(s.pl), free(s.pu), free(s.xn), free(s.sg);
    free(s.ol), free(s.ou), free(s.y), free(s.g), free(s.g2), free(s.work), free(s.x), free(given);
    free(s.x32), free(s.y32), free(rb.xf), free(rb.only);
    vti_bab_free(&tree);
    vt_cert_ctx_free(s.c);
    return e;
}

vt_err vt_cert_spec_run(const vt_cert_spec_opts *o, vt_cert_spec_answer *ans)
{
    double deadline = o->timeout > 0 ? vt_now() + o->timeout : 0;
    *ans = VT_CERT_SPEC_UNKNOWN;
    vt_keypair kp;
    memset(&kp, 0, sizeof kp);
    if (o->out_path) {
        VT_RETURN_ERROR_IF(!o->key_path, VT_ERR_ARG, "certify: --out needs --key KEYFILE (the auditor's key)");
        VT_FORWARD_IF_ERROR(vt_sign_read_secret_key(o->key_path, &kp));
    }
    spec_in in;
    vti_buf out = {0};
    FILE *rep = NULL;
    vt_err e = load(o, &in);
    if (!e) e = vti_cert_inter_check(&o->set, in.gr != NULL);
    if (!e && o->report_path) {
        rep = strcmp(o->report_path, "-") == 0 ? stdout : fopen(o->report_path, "w");
        if (!rep) e = vt_set_error(VT_ERR_IO, "--report %s: cannot create it", o->report_path);
    }
    if (!e) e = compute(o, &in, deadline, &out, ans, rep, NULL, NULL);
    if (rep) {
        int bad = ferror(rep);
        if (rep != stdout) bad |= fclose(rep) != 0;
        else fflush(stdout);
        if (!e && bad) e = vt_set_error(VT_ERR_IO, "--report %s: cannot write it", o->report_path);
    }
    /* a timeout depends on the clock: no certificate (check-certificate could not recompute it) */
    if (!e && o->out_path && *ans != VT_CERT_TIMEOUT) e = vti_cert_sign_write(&out, &kp, o->out_path);
    vt_keypair_wipe(&kp);
    free(out.b);
    load_free(&in);
    return e;
}

/* Parses a version-2 certificate (version 3 with run set): every length checked; fills the settings
 * it binds (vt_cert_int.h). */
vt_err vti_cert_parse_spec(const uint8_t *p, size_t n, int run, vt_cert_settings *s, size_t *body_len)
{
    VT_RETURN_ERROR_IF(n < 12 || memcmp(p, CERT_MAGIC, 8) != 0, VT_ERR_FORMAT, "not a certificate (magic)");
    uint32_t ver = vt_get_u32le(p + 8);
    VT_RETURN_ERROR_IF(ver == 1 || ver == 4 || ver == 5, VT_ERR_FORMAT,
                       "a certificate of a committed run (version %u): check it with RUN_DIR, not --onnx / --vnnlib", ver);
    VT_RETURN_ERROR_IF((ver == CERT_SPEC_VERSION || ver == CERT_SPEC_BAB_VERSION || ver == CERT_SPEC_BABI_VERSION) && run,
                       VT_ERR_FORMAT,
                       "an ONNX / VNN-LIB certificate (version %u): check it with --onnx FILE --vnnlib FILE", ver);
    VT_RETURN_ERROR_IF((ver == CERT_RUN_SPEC_VERSION || ver == CERT_RUN_SPEC_BAB_VERSION || ver == CERT_RUN_SPEC_BABI_VERSION) &&
                           !run,
                       VT_ERR_FORMAT,
                       "a VNN-LIB certificate of a committed run (version %u): check it with RUN_DIR --vnnlib FILE", ver);
    VT_RETURN_ERROR_IF(ver != CERT_SPEC_VERSION && ver != CERT_RUN_SPEC_VERSION && ver != CERT_SPEC_BAB_VERSION &&
                           ver != CERT_RUN_SPEC_BAB_VERSION && ver != CERT_SPEC_BABI_VERSION && ver != CERT_RUN_SPEC_BABI_VERSION,
                       VT_ERR_FORMAT, "certificate version %u (this auditor: 1 to 9)", ver);
    int inputs = ver == CERT_SPEC_BABI_VERSION || ver == CERT_RUN_SPEC_BABI_VERSION;
    int bab = inputs || ver == CERT_SPEC_BAB_VERSION || ver == CERT_RUN_SPEC_BAB_VERSION;
    VT_RETURN_ERROR_IF(n < CERT_SPEC_HEADER + 96, VT_ERR_FORMAT, "certificate: shorter than its header");
    uint32_t meth = vt_get_u32le(p + 12), d = vt_get_u32le(p + 16), ny = vt_get_u32le(p + 20), nd = vt_get_u32le(p + 24),
             m = vt_get_u32le(p + 28), na = vt_get_u32le(p + 32), ans = vt_get_u32le(p + 136);
    VT_FORWARD_IF_ERROR(vti_cert_method_read(meth, 0, s));
    meth &= 0xffu;
    VT_RETURN_ERROR_IF(d < 1 || d > VT_CERT_MAX_WIDTH || ny < 1 || ny > VT_CERT_MAX_WIDTH ||
                           nd < 1 || m > VT_VNNLIB_MAX_ROWS || ans > VT_CERT_SPEC_UNKNOWN ||
                           (na && meth != VT_CERT_ALPHA_CROWN) || (bab && (meth != VT_CERT_ALPHA_CROWN || m < 1)),
                       VT_ERR_FORMAT, "certificate: a header field is out of range");
    s->alpha_iters = vt_get_u32le(p + 36), s->alpha_step = vt_bits_f64(vt_get_u64le(p + 40));
    s->alpha_decay = vt_bits_f64(vt_get_u64le(p + 48)), s->attack_restarts = vt_get_u32le(p + 56);
    s->attack_iters = vt_get_u32le(p + 60), s->attack_seed = vt_get_u64le(p + 64);
    VT_RETURN_ERROR_IF(s->alpha_iters > 100000 || s->attack_restarts > 100000 || s->attack_iters > 100000, VT_ERR_FORMAT,
                       "certificate: search settings out of range");
    s->bab_domains = bab ? 1 : 0; /* beta-crown (the limit is not recorded: the check does not search) */
    uint64_t head = CERT_SPEC_HEADER + (uint64_t)m * 8 + (ans == VT_CERT_SAT ? 4 + (uint64_t)d * 4 : 0), tail = 0;
    VT_RETURN_ERROR_IF(head > n, VT_ERR_FORMAT, "certificate: %zu bytes where its header gives more", n);
    if (bab) { /* the split tree: its structure and lengths */
        size_t used = 0;
        VT_RETURN_ERROR_IF((uint64_t)na * m > UINT32_MAX, VT_ERR_FORMAT, "certificate: too many slopes");
        VT_FORWARD_IF_ERROR(vti_bab_scan_rows(p + head, n - head, (size_t)na * m, m, m, inputs, d, "the property", NULL, &used));
        tail = used;
    } else
        tail = (uint64_t)na * m * 8;
    uint64_t need = head + tail + (run ? CERT_RUN_TAIL : 0) + 96;
    VT_RETURN_ERROR_IF(need != n, VT_ERR_FORMAT, "certificate: %zu bytes where its header gives %llu", n,
                       (unsigned long long)need);
    *body_len = n - 96;
    return VT_OK;
}

vt_err vt_cert_spec_check(const char *cert_path, const vt_cert_spec_opts *in, const char *signer_pub_path)
{
    uint8_t *p = NULL;
    size_t n = 0, body = 0;
    VT_FORWARD_IF_ERROR(vti_cert_read_file(cert_path, (size_t)1 << 34, &p, &n));
    vt_cert_spec_opts o = *in;
    o.timeout = 0, o.out_path = NULL, o.report_path = NULL, o.cex_path = NULL, o.result_path = NULL, o.quiet = 1;
    vt_err e = vti_cert_parse_spec(p, n, o.run_dir != NULL, &o.set, &body);
    if (!e) e = vti_cert_verify(cert_path, p, body, signer_pub_path);
    spec_in si;
    int loaded = 0;
    vti_buf out = {0};
    if (!e) {
        e = load(&o, &si);
        loaded = 1;
    }
    if (!e && memcmp(p + 72, si.onnx_sha, 32) != 0)
        e = o.run_dir ? vt_set_error(VT_ERR_MISMATCH, "%s: certifies another model than the final state of %s", cert_path,
                                     o.run_dir)
                      : vt_set_error(VT_ERR_MISMATCH, "%s: certifies another ONNX file than %s", cert_path, o.onnx_path);
    if (!e && memcmp(p + 104, si.vnnlib_sha, 32) != 0)
        e = vt_set_error(VT_ERR_MISMATCH, "%s: certifies another VNN-LIB file than %s", cert_path, o.vnnlib_path);
    vt_cert_spec_answer ans;
    if (!e) e = compute(&o, &si, 0, &out, &ans, NULL, p, cert_path);
    if (!e) e = vti_cert_compare(cert_path, &out, p, body);
    free(out.b);
    if (loaded) load_free(&si);
    free(p);
    return e;
}

/* ---------------------------------------------------------------- a benchmark's instances */

/* f relative to the folder of the file csv_path, unless absolute */
static void join(char *out, size_t cap, const char *csv_path, const char *f)
{
    const char *slash = strrchr(csv_path, '/');
    if (f[0] == '/' || !slash) snprintf(out, cap, "%s", f);
    else snprintf(out, cap, "%.*s/%s", (int)(slash - csv_path), csv_path, f);
}

vt_err vt_cert_spec_instances(const char *csv_path, const vt_cert_spec_opts *o, vt_cert_spec_summary *sum)
{
    memset(sum, 0, sizeof *sum);
    uint8_t *p = NULL;
    size_t n = 0;
    VT_FORWARD_IF_ERROR(vti_cert_read_file(csv_path, (size_t)1 << 24, &p, &n));
    vt_err e = VT_OK;
    uint32_t line = 0;
    printf("%-5s %-9s %8s  %s\n", "#", "result", "seconds", "instance");
    for (size_t off = 0; off < n && !e;) {
        size_t end = off;
        while (end < n && p[end] != '\n') end++;
        line++;
        char buf[4096], *f[3] = {0};
        size_t len = end - off;
        if (len && p[off + len - 1] == '\r') len--;
        if (len >= sizeof buf) {
            e = vt_set_error(VT_ERR_LIMIT, "%s line %u: longer than %zu bytes", csv_path, line, sizeof buf - 1);
            break;
        }
        memcpy(buf, p + off, len);
        buf[len] = 0;
        off = end + 1;
        if (len == 0) continue;
        int k = 0;
        for (char *s = buf; k < 3; k++) {
            f[k] = s;
            char *c = strchr(s, ',');
            if (!c) break;
            *c = 0, s = c + 1;
        }
        char *tend = NULL;
        double to = f[2] ? strtod(f[2], &tend) : -1;
        if (k != 2 || !*f[0] || !*f[1] || !tend || tend == f[2] || (*tend && *tend != ' ') || !(to > 0 && to < 1e9) ||
            strchr(f[2], ',')) {
            e = vt_set_error(VT_ERR_FORMAT, "%s line %u: expected ONNX,VNNLIB,TIMEOUT (a positive number of seconds)",
                             csv_path, line);
            break;
        }
        char onnx[4200], prop[4200];
        join(onnx, sizeof onnx, csv_path, f[0]), join(prop, sizeof prop, csv_path, f[1]);
        vt_cert_spec_opts io = *o;
        io.onnx_path = onnx, io.vnnlib_path = prop, io.run_dir = NULL, io.out_path = NULL, io.report_path = NULL, io.cex_path = NULL;
        io.result_path = NULL;
        io.quiet = 1;
        if (!(o->timeout > 0)) io.timeout = to;
        double t0 = vt_now();
        vt_cert_spec_answer a;
        e = vt_cert_spec_run(&io, &a);
        if (e) {
            e = vt_error_prefix(e, "%s line %u", csv_path, line);
            break;
        }
        double dt = vt_now() - t0;
        sum->n++, sum->count[a]++, sum->seconds += dt;
        printf("%-5u %-9s %8.3f  %s %s\n", sum->n, vt_cert_spec_answer_name(a), dt, f[0], f[1]);
        fflush(stdout);
    }
    free(p);
    return e;
}
